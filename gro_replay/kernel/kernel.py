"""One simulated kernel: its offload tables, UDP tunnel sockets, devices, and the stack between the two GRO stages.

The tables are filled by explicit init calls in the kernel's order (``eth_offload_init``, ``ipv4_offload_init``,
``ipv6_offload_init``, then the tunnel sockets), never at import time, so kernels of different models coexist in
one process. Kernel: net/ethernet/eth.c ``eth_offload_init``; net/ipv4/af_inet.c ``ipv4_offload_init``;
net/ipv6/ip6_offload.c ``ipv6_offload_init``; net/8021q/vlan_core.c ``vlan_offload_init``; drivers/net/vxlan ``vxlan_sock_add``; drivers/net/geneve.c
``geneve_sock_add``; net/ipv4/udp_tunnel_core.c ``setup_udp_tunnel_sock``. Decapsulation is ip_tunnel_core.py.
"""

from __future__ import annotations

from typing import Any

from ..packet.csum import csum_partial
from . import drop_reasons as D
from .af_inet import inet_gro_complete, inet_gro_receive, ipip_gro_complete, ipip_gro_receive
from .eth import eth_gro_complete, eth_gro_receive
from .geneve import geneve_gro_complete, geneve_gro_receive, geneve_udp_encap_recv
from .gre_offload import gre_gro_complete, gre_gro_receive
from .gro_cells import GroCells
from .ip6_offload import (
    ip4ip6_gro_complete,
    ip4ip6_gro_receive,
    ip6ip6_gro_complete,
    ipv6_gro_complete,
    ipv6_gro_receive,
    sit_gro_complete,
    sit_ip6ip6_gro_receive,
)
from .model import KernelModel
from .napi import Napi
from .netdevice import NetDevice, PacketOffload
from .skbuff import ETH_P_8021AD, ETH_P_8021Q, ETH_P_IP, ETH_P_IPV6, ETH_P_TEB, SkBuff
from .tcp_offload import tcp4_gro_complete, tcp4_gro_receive, tcp6_gro_complete, tcp6_gro_receive
from .udp import ip_rcv, udp_rcv
from .udp_offload import udp4_gro_complete, udp4_gro_receive, udp6_gro_complete, udp6_gro_receive
from .udp_tunnel import UdpTunnelSock
from .vlan_core import vlan_gro_complete, vlan_gro_receive, vlan_tags_name_a_vid
from .vxlan_core import vxlan_gro_complete, vxlan_gro_receive, vxlan_rcv


def tunnel_devices(
    vxlan_dev: str, vxlan_ports: tuple[int, ...], geneve_dev: str, geneve_ports: tuple[int, ...]
) -> list[tuple[str, str, int]]:
    """``(device name, kind, UDP port)`` of every tunnel device a ``Kernel`` makes, in the order it makes them:
    the VXLAN ports, then the Geneve ports. Each port's socket has its own device (as ``ip link add … dstport
    PORT`` makes one per port); the first port of a kind takes the kind's name, a further port, or a first Geneve
    port whose name the VXLAN devices took (one ``--tunnel-dev`` for both kinds), the name ``NAME-PORT``
    (``vxlan0-8472``; ``NAME`` cut to keep the name within 15 bytes). The one place the simulator names its tunnel
    devices."""
    out: list[tuple[str, str, int]] = []
    for kind, base, ports in (("vxlan", vxlan_dev, vxlan_ports), ("geneve", geneve_dev, geneve_ports)):
        for i, port in enumerate(ports):
            name = base if i == 0 and all(base != n for n, _k, _p in out) else _with_port(base, port)
            out.append((name, kind, port))
    return out


def _with_port(base: str, port: int) -> str:
    """``BASE-PORT``, the base cut so that the name stays a valid device name (IFNAMSIZ 16: at most 15 bytes,
    net/core/dev.c ``dev_valid_name``): ``cilium_vxlan-8472`` becomes ``cilium_vxl-8472``."""
    suffix = f"-{port}"
    room = 15 - len(suffix)
    cut = base.encode("utf-8", "surrogateescape")[:room].decode("utf-8", "ignore")
    return cut + suffix


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
    phys_dev / vxlan_dev / geneve_dev: device names (tunnel devices on further ports: ``tunnel_devices``);
    tunnel_metadata: collect-metadata ("external") tunnel devices that attach a metadata dst per skb;
    udp6_zero_csum_rx: tunnel sockets accept a zero UDPv6 checksum (``udp6zerocsumrx``; kernel default off);
    vxlan_gbp: the vxlan devices are made with ``gbp`` (VXLAN_F_GBP, the Group Based Policy extension);
    vlan_offload: the kernel has the VLAN GRO offloads (CONFIG_VLAN_8021Q y or m: ``vlan_offload_init``), so an
    802.1Q/802.1ad tag in the inner frame is GRO'd through (kernel/vlan_core.py), and an outer tag reaches the VLAN
    device the replay assumes; False for a kernel without them (no VLAN device can exist: ``netif_receive_skb_core``);
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
        vlan_offload: bool = True,
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
        self.vlan_offload = vlan_offload
        self.sink = sink or Sink()
        self.offload_base: dict[int, PacketOffload] = {}
        self.inet_offloads: dict[int, PacketOffload] = {}
        self.inet6_offloads: dict[int, PacketOffload] = {}
        self.udp_tunnel_sockets: dict[int, UdpTunnelSock] = {}
        eth_offload_init(self)
        ipv4_offload_init(self)
        ipv6_offload_init(self)
        if vlan_offload:
            vlan_offload_init(self)
        sizes: dict[str, Any] = {"gro_max_size": gro_max_size, "gro_ipv4_max_size": gro_ipv4_max_size}
        self.phys = NetDevice(phys_dev, self, **sizes)
        self.phys_napi = Napi(self, self.phys, self._phys_deliver)
        self.tunnel_cells: list[GroCells] = []
        for name, kind, port in tunnel_devices(vxlan_dev, vxlan_ports, geneve_dev, geneve_ports):
            self._add_tunnel(kind, port, name, sizes)

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
        sink = self.sink
        phys = self.phys
        now_ns = self.phys_napi.now_ns
        for skb in batch:
            sink.netif_receive_skb("phys", phys, skb, now_ns)
            outcome, sw = self.netif_receive_skb_core(skb)
            sink.stack_outcome(skb, outcome, sw)

    def _tunnel_deliver(self, dev: NetDevice, batch: list[SkBuff]) -> None:
        sink = self.sink
        now_ns = dev.napi.now_ns
        for skb in batch:
            sink.netif_receive_skb("tunnel", dev, skb, now_ns)

    def netif_receive_skb_core(self, skb: SkBuff) -> tuple[str, int]:
        """IP → UDP → tunnel ``encap_rcv`` for an skb the phys device delivered.

        Returns ("queued", software-summed bytes) when the skb reached a gro_cells queue, else (drop reason, bytes).
        An skb whose outer VLAN tags (``vlan_tci``: the driver took them off) name a VLAN the replay assumes a device
        for; on a kernel without CONFIG_VLAN_8021Q (``vlan_offload`` False) ``vlan_do_receive`` is a stub that finds
        none, so ``__netif_receive_skb_core`` marks a tag of VID ≠ 0 PACKET_OTHERHOST (net/core/dev.c
        ``check_vlan_id``; a priority tag of VID 0 is cleared, and the one under it checked alike) and IP input
        drops it (``ip_rcv_core`` / ``ip6_rcv_core``: SKB_DROP_REASON_OTHERHOST).
        """
        if (
            not self.vlan_offload and skb.vlan_tci is not None
        ):  # a kernel without them only: no cost otherwise
            tags = skb.vlan_tci
            if vlan_tags_name_a_vid(tags if isinstance(tags, tuple) else (tags,)):
                return D.VLAN_OTHERHOST, 0
        r = ip_rcv(skb)
        if isinstance(r, str):
            return r, 0
        proto, family = r
        if proto != 17:
            return D.NOT_UDP, 0
        sk, sw = udp_rcv(skb, family, self.udp_tunnel_sockets)
        if isinstance(sk, str):
            return sk, sw
        res = sk.encap_rcv(sk, skb)
        return (res or "queued"), sw


IPPROTO_IPIP = 4  #: include/uapi/linux/in.h
IPPROTO_IPV6 = 41
IPPROTO_GRE = 47


def eth_offload_init(k: Kernel) -> None:
    """Register ETH_P_TEB → Ethernet GRO. Kernel: net/ethernet/eth.c ``eth_offload_init``."""
    k.offload_base[ETH_P_TEB] = PacketOffload(eth_gro_receive, eth_gro_complete)


def ipv4_offload_init(k: Kernel) -> None:
    """Register IPv4 and its TCP, UDP and IPIP handlers, then GRE in both tables. Kernel: net/ipv4/af_inet.c
    ``ipv4_offload_init`` (``tcpv4_offload_init``, ``udpv4_offload_init``, ``dev_add_offload(&ip_packet_offload)``,
    ``inet_add_offload(&ipip_offload, IPPROTO_IPIP)``); net/ipv4/gre_offload.c ``gre_offload_init`` (a
    ``device_initcall``, IPPROTO_GRE in ``inet_offloads`` and ``inet6_offloads``)."""
    k.inet_offloads[6] = PacketOffload(tcp4_gro_receive, tcp4_gro_complete)
    k.inet_offloads[17] = PacketOffload(udp4_gro_receive, udp4_gro_complete)
    k.offload_base[ETH_P_IP] = PacketOffload(inet_gro_receive, inet_gro_complete)
    k.inet_offloads[IPPROTO_IPIP] = PacketOffload(ipip_gro_receive, ipip_gro_complete)
    gre = PacketOffload(gre_gro_receive, gre_gro_complete)
    k.inet_offloads[IPPROTO_GRE] = gre
    k.inet6_offloads[IPPROTO_GRE] = gre


def vlan_offload_init(k: Kernel) -> None:
    """Register ETH_P_8021Q and ETH_P_8021AD → VLAN GRO (``vlan_packet_offloads``). Kernel: net/8021q/vlan_core.c
    ``vlan_offload_init`` (an ``fs_initcall``, at boot)."""
    k.offload_base[ETH_P_8021Q] = PacketOffload(vlan_gro_receive, vlan_gro_complete)
    k.offload_base[ETH_P_8021AD] = PacketOffload(vlan_gro_receive, vlan_gro_complete)


def ipv6_offload_init(k: Kernel) -> None:
    """Register IPv6, its TCP/UDP handlers and the IP-in-IP ones. Kernel: net/ipv6/ip6_offload.c
    ``ipv6_offload_init``: ``sit_offload`` in ``inet_offloads`` (IPPROTO_IPV6), ``ip6ip6_offload`` (IPPROTO_IPV6)
    and ``ip4ip6_offload`` (IPPROTO_IPIP) in ``inet6_offloads``."""
    k.inet6_offloads[6] = PacketOffload(tcp6_gro_receive, tcp6_gro_complete)
    k.inet6_offloads[17] = PacketOffload(udp6_gro_receive, udp6_gro_complete)
    k.offload_base[ETH_P_IPV6] = PacketOffload(ipv6_gro_receive, ipv6_gro_complete)
    k.inet_offloads[IPPROTO_IPV6] = PacketOffload(sit_ip6ip6_gro_receive, sit_gro_complete)
    k.inet6_offloads[IPPROTO_IPV6] = PacketOffload(sit_ip6ip6_gro_receive, ip6ip6_gro_complete)
    k.inet6_offloads[IPPROTO_IPIP] = PacketOffload(ip4ip6_gro_receive, ip4ip6_gro_complete)


__all__ = ["Kernel", "Sink", "PacketOffload", "UdpTunnelSock", "csum_partial"]
