"""Harness for the kernel-core tests: literal frames → SkBuffs → a ``Kernel``'s polls, and a recording Sink.

Not a test module by itself (it holds no tests); kernel/test_<module>.py, test_selftest_cases.py and
test_kernel_observed.py import it. The skb a driver hands to GRO is built the way ``sim.driver.DriverRx.skbs`` builds it
(data at the outer IP header, ``protocol`` from the ethertype, RX checksum state from the NIC profile); the
payload a delivered skb carries is read back from its own headers, independently of the code under test (as the
kernel selftest's receiver does: packet size minus every header).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from gro_replay.kernel.gro import napi_gro_receive
from gro_replay.kernel.kernel import Kernel, Sink
from gro_replay.kernel.model import KernelModel
from gro_replay.kernel.nic_skb import packet_alloc_skb_layout
from gro_replay.kernel.skbuff import (
    CHECKSUM_COMPLETE,
    CHECKSUM_NONE,
    CHECKSUM_PARTIAL,
    CHECKSUM_UNNECESSARY,
    SkBuff,
)
from gro_replay.packet.csum import csum_partial

VXLAN_PORTS = (4789, 8472)
GENEVE_PORTS = (6081,)

#: NIC RX checksum modes (gro-spec §7.6): (ip_summed, csum_level)
NIC = {
    "none": (CHECKSUM_NONE, 0),
    "unnecessary": (CHECKSUM_UNNECESSARY, 0),
    "unnecessary-tunnel": (CHECKSUM_UNNECESSARY, 1),
    "complete": (CHECKSUM_COMPLETE, 0),
    "partial": (CHECKSUM_PARTIAL, 0),
}

TCP_FIN = 0x01
TCP_PSH = 0x08


@dataclass
class Delivery:
    """One ``netif_receive_skb`` seen by the recorder, with the skb's state at that moment."""

    stage: str
    dev: str
    len: int
    frames: tuple[int, ...]
    why: str | None
    ip_summed: int
    csum_level: int
    gso_size: int
    gso_segs: int
    gso_type: int
    frag_list: bool
    head: bytes  #: the first bytes from skb->data (headers), copied at delivery
    now_ns: int

    @property
    def segs(self) -> int:
        return len(self.frames)

    def tcp(self) -> tuple[int, int]:
        """``(tcp payload bytes, tcp flag byte)`` read from the delivered headers (stage-dependent start)."""
        return tcp_payload(self.head, self.len, tunnelled=self.stage == "phys")


def _ip_hdr_len(buf: bytes, off: int) -> tuple[int, int]:
    """(header bytes incl. IPv6 extension headers, L4 protocol) of the IP header at ``off``."""
    if buf[off] >> 4 == 4:
        return (buf[off] & 0x0F) * 4, buf[off + 9]
    proto = buf[off + 6]
    hlen = 40
    while proto in (0, 43, 44, 60):
        nxt = buf[off + hlen]
        hlen += 8 if proto == 44 else (buf[off + hlen + 1] + 1) * 8
        proto = nxt
    return hlen, proto


def tcp_payload(head: bytes, length: int, *, tunnelled: bool) -> tuple[int, int]:
    """TCP payload length and flags of a packet whose bytes start at its (outer) IP header.

    ``tunnelled``: outer IP + UDP + VXLAN (ports 4789/8472) or Geneve (6081, with options) + Ethernet come first.
    """
    off = 0
    if tunnelled:
        hlen, _ = _ip_hdr_len(head, 0)
        off = hlen
        dport = struct.unpack_from("!H", head, off + 2)[0]
        off += 8
        off += 8 + (head[off] & 0x3F) * 4 if dport in GENEVE_PORTS else 8
        off += 14
    hlen, proto = _ip_hdr_len(head, off)
    assert proto == 6, proto
    off += hlen
    doff = (head[off + 12] >> 4) * 4
    return length - off - doff, head[off + 13]


class Recorder(Sink):
    """Records every delivery, every stack outcome (with the bytes the normal path summed) and GRO_NORMAL batches."""

    def __init__(self) -> None:
        self.deliveries: list[Delivery] = []
        self.stack: list[str] = []
        self.stack_sw_bytes = 0

    def netif_receive_skb(self, stage, dev, skb: SkBuff, now_ns: int) -> None:
        self.deliveries.append(
            Delivery(
                stage,
                dev.name,
                skb.len,
                tuple(skb.frames),
                skb.cb.why,
                int(skb.ip_summed),
                skb.csum_level,
                skb.gso_size,
                skb.gso_segs,
                skb.gso_type,
                skb.frag_list,
                bytes(skb.buf[skb.data : skb.data + min(skb.len, 512)]),
                now_ns,
            )
        )

    def stack_outcome(self, skb, outcome: str, sw_bytes: int) -> None:
        self.stack.append(outcome)
        self.stack_sw_bytes += sw_bytes

    def at(self, stage: str) -> list[Delivery]:
        return [d for d in self.deliveries if d.stage == stage]

    def lens(self, stage: str) -> list[int]:
        return [d.len for d in self.deliveries if d.stage == stage]

    def payloads(self, stage: str, *, stop_at_fin: bool = True) -> list[int]:
        """TCP payload per delivered skb, in order, stopping at the first FIN (as the selftest receiver does)."""
        out = []
        for d in self.at(stage):
            n, flags = d.tcp()
            if stop_at_fin and flags & TCP_FIN:
                break
            out.append(n)
        return out


@dataclass
class Rig:
    """A kernel, its recorder, and the NIC model that turns frames into skbs for its phys NAPI."""

    kernel: Kernel
    rec: Recorder
    nic: str = "none"
    hash: int = 0
    #: the driver builds skbs around page fragments (build_skb, e.g. ice, mlx5); False: veth's skbs from AF_PACKET
    #: (kernel-oracle.md): kmalloc'd linear heads, paged from 4080 bytes (kernel/nic_skb.py)
    head_frag: bool = False
    index: int = 0
    batches: list[list[int]] = field(default_factory=list)

    def skb(self, frame: bytes, *, ts_ns: int = 0, hash: int | None = None, l4: int | None = None) -> SkBuff:
        """The skb a driver builds for ``frame`` (Ethernet, no VLAN tag): ``sim.driver.DriverRx.skbs``'s shape."""
        k = self.kernel
        skb = SkBuff(frame, 0, ts_ns, self.index, 0)
        self.index += 1
        skb.data = 14
        skb.len = len(frame) - 14
        skb.protocol = (frame[12] << 8) | frame[13]
        skb.dev = k.phys
        skb.hash = self.hash if hash is None else hash
        skb.head_frag = self.head_frag
        if not self.head_frag:
            packet_alloc_skb_layout(skb, k.model)
        ip_summed, level = NIC[self.nic]
        if ip_summed == CHECKSUM_COMPLETE:
            skb.ip_summed = CHECKSUM_COMPLETE
            skb.csum = csum_partial(frame, 14)  # what mlx5 reports: the sum from the L3 header to the end
        elif ip_summed == CHECKSUM_PARTIAL:
            skb.ip_summed = CHECKSUM_PARTIAL
            skb.csum_start = l4 if l4 is not None else innermost_l4(frame)
        else:
            skb.ip_summed = ip_summed
            skb.csum_level = level
        return skb

    def poll(self, frames: list[bytes], now_ns: int = 0) -> None:
        """``net_rx_action`` over ``frames`` at ``now_ns``: driver polls of at most 64, each followed by the cells."""
        for i in range(0, len(frames), 64):
            skbs = [self.skb(f, ts_ns=now_ns) for f in frames[i : i + 64]]
            self.kernel.net_rx_action(skbs, now_ns)

    def bursts(self, bursts: list[list[bytes]], gap_ns: int = 100_000_000) -> None:
        """Each burst is one poll; bursts are ``gap_ns`` apart (the selftest's sleeps between sends)."""
        for n, burst in enumerate(bursts):
            self.poll(burst, now_ns=(n + 1) * gap_ns)

    def gro(self, frame: bytes, now_ns: int = 0, **kw) -> SkBuff:
        """One ``napi_gro_receive`` on the phys NAPI, outside any poll (the poll end is not run)."""
        napi = self.kernel.phys_napi
        napi.set_time(now_ns)
        skb = self.skb(frame, ts_ns=now_ns, **kw)
        napi_gro_receive(napi, skb)
        return skb

    def end(self, work: int, now_ns: int = 0) -> None:
        """End the phys poll below budget (``napi_complete_done(work)``), then run the tunnel cells."""
        self.kernel.phys_napi.set_time(now_ns)
        self.kernel.phys_napi.napi_complete_done(work)
        self.kernel.run_gro_cells(now_ns)

    def held(self, bucket: int = 0) -> list[tuple[int, ...]]:
        """Phys NAPI bucket ``bucket``, newest first: the ``frames`` of every held packet."""
        return [tuple(p.frames) for p in self.kernel.phys_napi.gro_hash[bucket]]

    def queued(self) -> list[tuple[int, ...]]:
        """Frames of the skbs waiting on the phys NAPI's GRO_NORMAL list (``rx_list``)."""
        return [tuple(s.frames) for s in self.kernel.phys_napi.rx_list]

    def record_batches(self) -> None:
        """Record the size of every list handed to ``netif_receive_skb_list`` by the phys NAPI."""
        napi = self.kernel.phys_napi
        inner = napi.netif_receive_skb_list

        def deliver(batch):
            self.batches.append([len(s.frames) for s in batch])
            inner(batch)

        napi.netif_receive_skb_list = deliver


def rig(model: KernelModel, nic: str = "none", head_frag: bool = False, **kernel_kw) -> Rig:
    """A kernel of ``model`` with VXLAN on 4789/8472 and Geneve on 6081, recorded."""
    rec = Recorder()
    kernel_kw.setdefault("vxlan_ports", VXLAN_PORTS)
    kernel_kw.setdefault("geneve_ports", GENEVE_PORTS)
    k = Kernel(model, sink=rec, **kernel_kw)
    return Rig(k, rec, nic, head_frag=head_frag)


def innermost_l4(frame: bytes) -> int:
    """Absolute offset of the innermost L4 header of a tunnelled Ethernet frame without outer VLAN tags (inner ones
    are skipped)."""
    off = 14
    hlen, _ = _ip_hdr_len(frame, off)
    off += hlen
    dport = struct.unpack_from("!H", frame, off + 2)[0]
    off += 8
    off += 8 + (frame[off] & 0x3F) * 4 if dport in GENEVE_PORTS else 8
    off += 14
    while struct.unpack_from("!H", frame, off - 2)[0] in (0x8100, 0x88A8):  # inner VLAN tags
        off += 4
    hlen, _ = _ip_hdr_len(frame, off)
    return off + hlen
