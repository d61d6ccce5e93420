"""One simulated kernel: its offload tables, UDP tunnel sockets, devices, and the stack between the two GRO stages.

The tables are filled by explicit init calls in the kernel's order (``eth_offload_init``, ``ipv4_offload_init``,
``ipv6_offload_init``, then the tunnel sockets), never at import time, so kernels of different models coexist in
one process. Kernel: net/ethernet/eth.c ``eth_offload_init``; net/ipv4/af_inet.c ``ipv4_offload_init``;
net/ipv6/ip6_offload.c ``ipv6_offload_init``; drivers/net/vxlan ``vxlan_sock_add``; drivers/net/geneve.c
``geneve_sock_add``; net/ipv4/udp_tunnel_core.c ``setup_udp_tunnel_sock``; net/ipv4/ip_tunnel_core.c
``__iptunnel_pull_header``; net/ethernet/eth.c ``eth_type_trans``; include/net/inet_ecn.h
``INET_ECN_decapsulate``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..packet.csum import csum_partial, ipv4_header_checksum
from .af_inet import inet_gro_complete, inet_gro_receive
from .dst_metadata import TUNNEL_KEY, udp_tun_rx_dst
from .eth import eth_gro_complete, eth_gro_receive
from .geneve import geneve_gro_complete, geneve_gro_receive, geneve_udp_encap_recv
from .gro_cells import GroCells
from .ip6_offload import ipv6_gro_complete, ipv6_gro_receive
from .model import KernelModel
from .napi import Napi, NetDevice
from .skbuff import (
    ETH_HLEN,
    ETH_P_IP,
    ETH_P_IPV6,
    ETH_P_TEB,
    SKB_GSO_UDP_TUNNEL,
    SKB_GSO_UDP_TUNNEL_CSUM,
    SkBuff,
    skb_postpull_rcsum,
    skb_pull_rcsum,
)
from .tcp_offload import tcp4_gro_complete, tcp4_gro_receive, tcp6_gro_complete, tcp6_gro_receive
from .udp import ip_rcv, udp_rcv
from .udp_offload import udp4_gro_complete, udp4_gro_receive, udp6_gro_complete, udp6_gro_receive
from .vxlan_core import vxlan_gro_complete, vxlan_gro_receive, vxlan_rcv

INET_ECN_MASK = 3
INET_ECN_CE = 3


@dataclass(frozen=True, slots=True)
class PacketOffload:
    """``struct packet_offload`` / ``struct net_offload`` callbacks."""

    gro_receive: Callable
    gro_complete: Callable


@dataclass(slots=True)
class UdpTunnelSock:
    """A UDP tunnel socket (``struct udp_sock`` with ``encap_rcv``/``gro_receive``/``gro_complete`` set)."""

    kind: str
    port: int
    dev: NetDevice
    cells: GroCells
    gro_receive: Callable
    gro_complete: Callable
    encap_rcv: Callable
    #: accept a zero UDPv6 checksum (vxlan/geneve ``udp6zerocsumrx``; off by default, RFC 6936)
    no_check6_rx: bool = False
    #: VXLAN_F_GBP in ``vs->flags`` (``ip link add … type vxlan gbp``): vxlan_rcv parses the Group Based Policy bits
    gbp: bool = False


class Sink:
    """Observer of a kernel: every ``netif_receive_skb`` and every drop on the path between the stages.

    Subclasses override the hooks; the simulation never reads anything back from a sink.
    """

    def netif_receive_skb(self, stage: str, dev: NetDevice, skb: SkBuff, now_ns: int) -> None:
        """Called when ``dev`` hands ``skb`` to the stack (``stage`` is ``"phys"`` or ``"tunnel"``)."""

    def stack_outcome(self, skb: SkBuff, outcome: str, sw_bytes: int) -> None:
        """Called after the phys stage's stack handled ``skb``: ``outcome`` is ``"queued"`` or a drop reason."""


class Kernel:
    """A kernel model instance with one physical device (one NAPI) and its UDP tunnel devices (gro_cells).

    Args: model: behaviour switches; hz: CONFIG_HZ (jiffies per second); gro_normal_batch: sysctl
    ``net.core.gro_normal_batch``; vxlan_ports/geneve_ports: UDP destination ports of tunnel sockets;
    phys_dev / vxlan_dev / geneve_dev: device names (tunnel devices on further ports get a numeric suffix);
    tunnel_metadata: collect-metadata ("external") tunnel devices that attach a metadata dst per skb;
    udp6_zero_csum_rx: tunnel sockets accept a zero UDPv6 checksum (``udp6zerocsumrx``; kernel default off);
    vxlan_gbp: the vxlan devices are made with ``gbp`` (VXLAN_F_GBP, the Group Based Policy extension);
    gro_max_size / gro_ipv4_max_size: every device's limits in bytes (``ip link set … gro_max_size``; the IPv4
    one follows gro_max_size up to 65536 unless given, as ``netif_set_gro_max_size`` does);
    sink: observer of deliveries.
    """

    def __init__(
        self,
        model: KernelModel,
        *,
        hz: int = 250,
        gro_normal_batch: int = 8,
        vxlan_ports: tuple[int, ...] = (4789, 8472),
        geneve_ports: tuple[int, ...] = (6081,),
        phys_dev: str = "eth0",
        vxlan_dev: str = "vxlan0",
        geneve_dev: str = "geneve0",
        tunnel_metadata: bool = True,
        udp6_zero_csum_rx: bool = False,
        vxlan_gbp: bool = False,
        gro_max_size: int = 65536,
        gro_ipv4_max_size: int | None = None,
        sink: Sink | None = None,
    ) -> None:
        self.model = model
        self.hz = hz
        self.gro_normal_batch = gro_normal_batch
        self.tunnel_metadata = tunnel_metadata
        self.udp6_zero_csum_rx = udp6_zero_csum_rx
        self.vxlan_gbp = vxlan_gbp
        self.sink = sink or Sink()
        self.offload_base: dict[int, PacketOffload] = {}
        self.inet_offloads: dict[int, PacketOffload] = {}
        self.inet6_offloads: dict[int, PacketOffload] = {}
        self.udp_tunnel_sockets: dict[int, UdpTunnelSock] = {}
        eth_offload_init(self)
        ipv4_offload_init(self)
        ipv6_offload_init(self)
        sizes: dict[str, Any] = {"gro_max_size": gro_max_size, "gro_ipv4_max_size": gro_ipv4_max_size}
        self.phys = NetDevice(phys_dev, self, **sizes)
        self.phys_napi = Napi(self, self.phys, self._phys_deliver)
        self.tunnel_cells: list[GroCells] = []
        for i, port in enumerate(vxlan_ports):
            self._add_tunnel("vxlan", port, vxlan_dev if i == 0 else f"{vxlan_dev}-{port}", sizes)
        for i, port in enumerate(geneve_ports):
            self._add_tunnel("geneve", port, geneve_dev if i == 0 else f"{geneve_dev}-{port}", sizes)

    def _add_tunnel(self, kind: str, port: int, name: str, sizes: dict) -> None:
        if port in self.udp_tunnel_sockets:
            raise ValueError(f"UDP port {port} is configured for two tunnels")
        dev = NetDevice(name, self, **sizes)
        cells = GroCells(dev, None)  # type: ignore[arg-type]
        cells.napi = Napi(self, dev, lambda batch, d=dev: self._tunnel_deliver(d, batch))  # type: ignore[misc]  # lambda default d=dev
        self.tunnel_cells.append(cells)
        if kind == "vxlan":
            sk = UdpTunnelSock(kind, port, dev, cells, vxlan_gro_receive, vxlan_gro_complete, vxlan_rcv)
            sk.gbp = self.vxlan_gbp
        else:
            sk = UdpTunnelSock(
                kind, port, dev, cells, geneve_gro_receive, geneve_gro_complete, geneve_udp_encap_recv
            )
        sk.no_check6_rx = self.udp6_zero_csum_rx
        self.udp_tunnel_sockets[port] = sk

    # -- one softirq round ---------------------------------------------------------------------------------------
    def net_rx_action(self, skbs: list[SkBuff], now_ns: int) -> int:
        """One phys-device poll of ``skbs`` at ``now_ns``, then the tunnel devices' cell polls until empty.

        Kernel: net/core/dev.c ``net_rx_action``; a cell scheduled during the phys poll runs before the next phys
        poll (gro-spec §6.4), at most 64 skbs per cell poll. Returns the phys NAPI's gro_flush_timeout (ns).
        """
        timeout = self.phys_napi.poll(skbs, now_ns)
        self.run_gro_cells(now_ns)
        return timeout

    def run_gro_cells(self, now_ns: int) -> None:
        """Poll every tunnel device's cell until its queue is empty and its last poll took less than the weight.

        Kernel: net/core/gro_cells.c ``gro_cell_poll`` calls ``napi_complete_done`` only when it took fewer skbs
        than the budget; a poll that took exactly the weight leaves the NAPI scheduled (net/core/dev.c
        ``napi_poll`` puts it on the repoll list), so it is polled again even when its queue is now empty, and
        that poll (``napi_complete_done(0)``) flushes what the full poll kept (with HZ ≥ 1000 ``napi_poll``'s
        ``napi_gro_flush(n, true)`` keeps the packets younger than a jiffy).
        """
        pending = True
        while pending:
            pending = False
            for cells in self.tunnel_cells:
                if cells.backlog:
                    cells.process_backlog(now_ns)
                if cells.napi_skbs or cells.repoll:
                    cells.repoll = cells.gro_cell_poll(now_ns) == cells.napi.weight
                    pending = pending or cells.repoll

    def flush_timer(self, now_ns: int) -> int:
        """The gro_flush_timeout hrtimer fired: an empty poll (``napi_complete_done(0)``), then the cells.

        Kernel: net/core/dev.c ``napi_watchdog`` → ``napi_schedule`` → a poll with no work. Returns the timeout
        to re-arm in ns: non-zero while ``napi_defer_hard_irqs`` still counts down (gro-spec §1.3), else 0.
        """
        self.phys_napi.set_time(now_ns)
        timeout = self.phys_napi.napi_complete_done(0)
        self.run_gro_cells(now_ns)
        return timeout

    # -- stack between the stages -------------------------------------------------------------------------------
    def _phys_deliver(self, batch: list[SkBuff]) -> None:
        napi = self.phys_napi
        for skb in batch:
            self.sink.netif_receive_skb("phys", self.phys, skb, napi.now_ns)
            outcome, sw = self.netif_receive_skb_core(skb)
            self.sink.stack_outcome(skb, outcome, sw)

    def _tunnel_deliver(self, dev: NetDevice, batch: list[SkBuff]) -> None:
        for skb in batch:
            self.sink.netif_receive_skb("tunnel", dev, skb, dev.napi.now_ns)

    def netif_receive_skb_core(self, skb: SkBuff) -> tuple[str, int]:
        """IP → UDP → tunnel ``encap_rcv`` for an skb the phys device delivered.

        Returns ("queued", software-summed bytes) when the skb reached a gro_cells queue, else (drop reason, bytes).
        """
        r = ip_rcv(skb)
        if isinstance(r, str):
            return r, 0
        proto, saddr, daddr, family = r
        if proto != 17:
            return "ip_local_deliver:not_udp", 0
        sk, sw = udp_rcv(skb, saddr, daddr, family, self.udp_tunnel_sockets)
        if isinstance(sk, str):
            return sk, sw
        res = sk.encap_rcv(sk, skb)
        return (res or "queued"), sw

    def udp_tunnel_decap(
        self,
        sk: UdpTunnelSock,
        skb: SkBuff,
        hdr_len: int,
        inner_proto: int,
        vni: int,
        opts: bytes,
        tun_flags: int = TUNNEL_KEY,
    ) -> str | None:
        """Pull UDP + tunnel header, attach the metadata dst, ``eth_type_trans`` on the tunnel device, ECN, queue.

        Kernel: ``__iptunnel_pull_header``, ``udp_tun_rx_dst`` (dst_metadata.py), ``vxlan_set_mac``/``geneve_rx``,
        ``INET_ECN_decapsulate``, ``gro_cells_receive``. ``tun_flags``: the tunnel driver's metadata flags.
        Returns None when queued, else a drop reason.
        """
        buf = skb.buf
        nh = skb.network_header
        u = skb.data
        if buf[nh] >> 4 == 4:
            outer_tos = buf[nh + 1]
        else:
            outer_tos = (((buf[nh] << 8) | buf[nh + 1]) >> 4) & 0xFF
        md = udp_tun_rx_dst(self.model, buf, nh, u, tun_flags, vni, opts) if self.tunnel_metadata else None
        skb_pull_rcsum(skb, hdr_len)
        if not skb.l4_hash:
            skb.hash = 0  # skb_clear_hash_if_not_l4
        skb.vlan_tci = None
        if skb.gso_size:
            skb.gso_type &= ~(SKB_GSO_UDP_TUNNEL | SKB_GSO_UDP_TUNNEL_CSUM)
        skb.encapsulation = 0
        skb.md_dst = md
        skb.slow_gro = 0 if md is None else 1
        # eth_type_trans on the tunnel device
        skb.dev = sk.dev
        skb.mac_header = skb.data
        e = skb.data
        skb.protocol = (buf[e + 12] << 8) | buf[e + 13]
        skb.pull(ETH_HLEN)
        skb_postpull_rcsum(skb, e, ETH_HLEN)
        reason = self._ecn_decapsulate(skb, outer_tos)
        if reason:
            return reason
        if not sk.cells.gro_cells_receive(skb):
            return "gro_cells_receive:backlog_full"
        return None

    def _ecn_decapsulate(self, skb: SkBuff, outer_tos: int) -> str | None:
        """``INET_ECN_decapsulate``: CE on a not-ECT inner packet drops it; CE on ECT marks the inner header CE."""
        buf = skb.buf
        i = skb.data
        if skb.protocol == ETH_P_IP and skb.headlen() >= 20:
            inner = buf[i + 1] & INET_ECN_MASK
        elif skb.protocol == ETH_P_IPV6 and skb.headlen() >= 40:
            inner = (((buf[i] << 8) | buf[i + 1]) >> 4) & INET_ECN_MASK
        else:
            return None
        if outer_tos & INET_ECN_MASK != INET_ECN_CE:
            return None
        if inner == 0:
            return "vxlan_ecn_decapsulate:ce_on_not_ect"
        if inner != INET_ECN_CE:
            b = bytearray(buf)
            if skb.protocol == ETH_P_IP:
                b[i + 1] |= INET_ECN_CE
                b[i + 10 : i + 12] = b"\0\0"
                b[i + 10 : i + 12] = ipv4_header_checksum(bytes(b[i : i + 20])).to_bytes(2, "big")
            else:
                b[i + 1] |= INET_ECN_CE << 4
            skb.buf = b
        return None


def eth_offload_init(k: Kernel) -> None:
    """Register ETH_P_TEB → Ethernet GRO. Kernel: net/ethernet/eth.c ``eth_offload_init``."""
    k.offload_base[ETH_P_TEB] = PacketOffload(eth_gro_receive, eth_gro_complete)


def ipv4_offload_init(k: Kernel) -> None:
    """Register IPv4 and its TCP/UDP handlers. Kernel: net/ipv4/af_inet.c ``ipv4_offload_init``."""
    k.inet_offloads[6] = PacketOffload(tcp4_gro_receive, tcp4_gro_complete)
    k.inet_offloads[17] = PacketOffload(udp4_gro_receive, udp4_gro_complete)
    k.offload_base[ETH_P_IP] = PacketOffload(inet_gro_receive, inet_gro_complete)


def ipv6_offload_init(k: Kernel) -> None:
    """Register IPv6 and its TCP/UDP handlers. Kernel: net/ipv6/ip6_offload.c ``ipv6_offload_init``."""
    k.inet6_offloads[6] = PacketOffload(tcp6_gro_receive, tcp6_gro_complete)
    k.inet6_offloads[17] = PacketOffload(udp6_gro_receive, udp6_gro_complete)
    k.offload_base[ETH_P_IPV6] = PacketOffload(ipv6_gro_receive, ipv6_gro_complete)


__all__ = ["Kernel", "Sink", "PacketOffload", "UdpTunnelSock", "csum_partial"]
