"""The socket buffer and its checksum state, as far as GRO and the tunnel receive path look at them.

Kernel: include/linux/skbuff.h (struct sk_buff, CHECKSUM_*, csum_level, __skb_incr/decr_checksum_unnecessary,
skb_csum_unnecessary, __skb_checksum_validate_needed, skb_checksum_try_convert, skb_postpull_rcsum);
net/core/skbuff.c (__skb_checksum_complete). Versions: v5.10.13 text, unchanged in later kernels for the parts
modelled here (gro-spec §0.3, §4.2).

Left out: reference counts, truesize, page frags and frag0, shared info beyond the GSO fields, destructors.
An skb here is a view into one captured frame (``buf``) plus the payload slices merged into it (``frags``).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import IntEnum
from typing import TYPE_CHECKING, Any

from ..packet.csum import PollSums, csum_add, csum_fold, csum_partial, csum_sub

SKB_MAX_CSUM_LEVEL = 3  #: include/linux/skbuff.h
#: include/linux/skbuff.h: 65536/PAGE_SIZE + 1 with 4 KiB pages; CONFIG_MAX_SKB_FRAGS (default 17) from 3948b05950fd
#: (net-next 2023-03: v6.4 [D]): 17 in every profile
MAX_SKB_FRAGS = 17
if TYPE_CHECKING:
    from .netdevice import NetDevice

CHECKSUM_BREAK = 76  #: include/linux/skbuff.h: full checksum at once for packets this short

ETH_P_IP = 0x0800
ETH_P_IPV6 = 0x86DD
ETH_P_8021Q = 0x8100
ETH_P_8021AD = 0x88A8
ETH_P_TEB = 0x6558
ETH_HLEN = 14
#: include/uapi/linux/if_ether.h: the most bytes of a frame of a 1500-byte MTU (no FCS, no VLAN tag)
ETH_FRAME_LEN = 1514
#: include/uapi/linux/if_ether.h: the bytes of an Ethernet frame's FCS, and of the shortest frame without it
#: (a sender pads shorter ones to it)
ETH_FCS_LEN = 4
ETH_ZLEN = 60

# skb_shinfo(skb)->gso_type bits (include/linux/skbuff.h, v5.10 layout). Only DODGY and TCPV4/TCPV6 steer a
# decision here (dev_gro_receive); the others record what gro_complete set. 3271f19bf7b9 (v6.18) moved
# SKB_GSO_TCP_FIXEDID to bit 30 and added SKB_GSO_TCP_FIXEDID_INNER at bit 31; the v5.10 FIXEDID bit is kept.
SKB_GSO_TCPV4 = 1 << 0
SKB_GSO_DODGY = 1 << 1
SKB_GSO_TCP_ECN = 1 << 2
SKB_GSO_TCP_FIXEDID = 1 << 3
SKB_GSO_TCPV6 = 1 << 4
SKB_GSO_GRE = 1 << 6  #: a GRE aggregate (gre_gro_complete)
SKB_GSO_IPXIP4 = 1 << 8  #: an IPv4-outer IP-in-IP aggregate (ipip_gro_complete, sit_gro_complete)
SKB_GSO_IPXIP6 = 1 << 9  #: an IPv6-outer IP-in-IP aggregate (ip6ip6_gro_complete, ip4ip6_gro_complete)
SKB_GSO_UDP_TUNNEL = 1 << 10
SKB_GSO_UDP_TUNNEL_CSUM = 1 << 11
SKB_GSO_TCP_ACCECN = 1 << 19  #: 4e4f7cefb130 era (v6.15)
SKB_GSO_TCP_FIXEDID_INNER = 1 << 31  #: 21f7484220ac / 3271f19bf7b9 (v6.18)


class IpSummed(IntEnum):
    """``skb->ip_summed``. Kernel: include/linux/skbuff.h."""

    CHECKSUM_NONE = 0
    CHECKSUM_UNNECESSARY = 1
    CHECKSUM_COMPLETE = 2
    CHECKSUM_PARTIAL = 3


CHECKSUM_NONE = IpSummed.CHECKSUM_NONE
CHECKSUM_UNNECESSARY = IpSummed.CHECKSUM_UNNECESSARY
CHECKSUM_COMPLETE = IpSummed.CHECKSUM_COMPLETE
CHECKSUM_PARTIAL = IpSummed.CHECKSUM_PARTIAL


#: While the batch engine records a run of frames (pollcache.py ``BatchReplay._record_run``), every counter that
#: adds an skb's length notes where those bytes came from: ``(counter's container, attribute name, capture indices
#: of the skb's wire frames)``, or ``(container, attribute, None)`` when the bytes added are not the skb's length
#: from a fixed offset or when a decision compares a sum of lengths (tcp_gro_receive: an aggregate's length with
#: mss), which a run key holding lengths by rank does not fix. None otherwise (the reference path notes nothing).
length_tally: list | None = None

#: While the batch engine records a run (sim/compose.py ``RunComposer._record_run``), every IPv4 ID difference
#: whose value reaches a decision or the report notes ``(capture index of the skb's first frame, byte offset of its ID, capture index of the held
#: packet's first frame, byte offset of its ID, the difference (skb's ID - held packet's, modulo 2**16), the
#: segment count it is compared with, or -1 when the difference itself is kept)``. A run key leaves the IDs out;
#: a later run is served from the recording only when every noted difference compares alike (sim/runs.py
#: ``ids_agree``). None otherwise (the reference path notes nothing).
id_tally: list | None = None


def tally_id(skb: SkBuff, id_at: int, p: SkBuff, pid_at: int, count: int) -> None:
    """Note one IPv4 ID difference read (``id_tally``): ``id_at``/``pid_at`` are the absolute offsets of the
    two IDs (bytes) in ``skb.buf``/``p.buf``; ``count`` the segment count compared with (-1: the value is kept)."""
    assert id_tally is not None
    diff = (
        ((skb.buf[id_at] << 8) | skb.buf[id_at + 1]) - ((p.buf[pid_at] << 8) | p.buf[pid_at + 1])
    ) & 0xFFFF
    id_tally.append((skb.frames[0], id_at, p.frames[0], pid_at, diff, count))


def untally_outer_id(skb: SkBuff, p: SkBuff) -> None:
    """Forget the ID difference of ``skb``'s outer IPv4 header against ``p``'s noted by this GRO pass
    (``id_tally``; called at the inner header, ``NAPI_GRO_CB(skb)->encap_mark`` 1): the outer ``flush_id`` that
    an atomic outer datagram lets the inner header overwrite is never read (inet_gro_receive up to v6.9).
    This pass noted it last for these two headers; earlier passes (the other stage, other kernels) keep theirs."""
    assert id_tally is not None
    e = (
        skb.frames[0],
        skb.data + skb.cb.network_offsets[0] + 4,
        p.frames[0],
        p.data + p.cb.network_offsets[0] + 4,
    )
    for i in range(len(id_tally) - 1, -1, -1):
        if id_tally[i][:4] == e:
            del id_tally[i]
            return


#: While the batch engine records a flow run with an observer of deliveries (sim/compose.py ``RunComposer``), a
#: callable told ``(napi, skb, True)`` when ``napi_gro_receive`` takes an skb and ``(napi, skb, False)`` when
#: ``gro_normal_one`` queues one for the stack: what places each delivery in the kernels' order (the frame whose
#: processing queued it, or the poll's final flush). Observation only; None otherwise.
queue_tap: Callable[[Any, Any, bool], None] | None = None


class NapiGroCb:
    """``struct napi_gro_cb``: per-packet GRO state, alive while the skb is inside GRO.

        Kernel: include/linux/netdevice.h (v5.10/5.11), include/net/gro.h (v5.17+). Field names are the kernel's;
        ``ip_fixedid`` is the v6.10+ name of the ID verdict bit(s), ``network_offsets`` the v6.10+ L3 offsets
        (index 0 outer, 1 inner). ``why`` is not a kernel field: it records, for reporting only, the condition that
        last set ``flush`` on this skb or completed it as a held packet; ``l3_why`` (not a kernel field either) which IP
    header and field broke the flow against this held packet (``reasons.L3_*``).
    """

    __slots__ = (
        "data_offset",
        "flush",
        "flush_id",
        "count",
        "proto",
        "same_flow",
        "encap_mark",
        "csum_valid",
        "csum_cnt",
        "free",
        "is_ipv6",
        "is_atomic",
        "ip_fixedid",
        "is_flist",
        "recursion_counter",
        "csum",
        "age",
        "last",
        "network_offsets",
        "why",
        "l3_why",
        "id_step",
        "split",
        "ended_by",
        "no_payload",
        "gate_unvalidated",
        "gate_reached",
    )

    def __init__(self) -> None:
        self.data_offset = 0
        self.flush = 0
        self.flush_id = 0
        self.count = 1
        self.proto = 0
        self.same_flow = 0
        self.encap_mark = 0
        self.csum_valid = 0
        self.csum_cnt = 0
        self.free = 0
        self.is_ipv6 = 0
        self.is_atomic = 1
        self.ip_fixedid = 0
        self.is_flist = 0
        self.recursion_counter = 0
        self.csum = 0
        self.age = 0
        #: the last skb merged into this held packet; dev_gro_receive sets it before any skb_gro_receive reads it
        self.last: SkBuff = None  # type: ignore[assignment]
        self.network_offsets = [0, 0]
        self.why: str | None = None
        #: reasons.L3_* bits: which IP header broke the flow against this held packet (observation only)
        self.l3_why = 0
        #: (header, IPv4 ID step, segments held) when an IP ID condition completed this held packet (observation)
        self.id_step: tuple[str, int, int] | None = None
        #: reasons.SPLIT_*: the comparison that kept this skb apart from a held packet of its reported flow
        self.split: str | None = None
        #: (capture index of the first frame of the skb whose arrival completed this held packet, TCP sequence
        #: number just past the held payload, sequence number of that skb) — the two numbers only when
        #: tcp_gro_receive found a sequence gap, else None; None when no arrival completed it (end of poll, or an
        #: skb that went up without being held). Set where the held packet is completed (gro.py dev_gro_receive,
        #: gro_flush_oldest's caller; tcp_offload.py at the gap), never read by a decision (observation only)
        self.ended_by: tuple[int, int | None, int | None] | None = None
        #: the skb carries no TCP payload (``SkBuff.no_payload``: an ACK, or SYN, FIN or RST without data, by the
        #: lengths its IP headers declare), which tcp_gro_receive never merges ((len - 1) >= mss), and GRO runs on
        #: this device (dev_gro_receive copies it past netif_elide_gro; a gro_cells netif_rx skb: False) —
        #: observation only, for the report: whatever stops GRO before tcp_gro_receive
        self.no_payload = False
        #: this skb reached udp_gro_receive's gate with a UDP checksum of 0 (a tunnel socket's port, not inside a
        #: tunnel already) but unvalidated: already flushing, udp4/6_gro_receive skipped validation, which would have
        #: consumed a CHECKSUM_UNNECESSARY level, so the gate read csum_cnt as the NIC left it (observation only)
        self.gate_unvalidated = False
        #: this skb reached udp_gro_receive's gate with a UDP checksum of 0, validated or not (observation only):
        #: what ``gate_unvalidated`` is a part of; a frame that did not was ended before udp_gro_receive
        self.gate_reached = False


class SkBuff:
    """One socket buffer: a captured frame as the receive path sees it.

    Offsets (``data``, ``tail``, ``mac_header``, ``network_header``, ``transport_header``, ``csum_start`` and the
    ``inner_*`` ones) are byte offsets into ``buf``; ``len`` is ``skb->len`` in bytes (linear part + merged
    payload). ``frags`` holds ``(buf, start, end)`` slices of payload merged by ``skb_gro_receive``.
    ``frames`` lists the capture indices of the wire frames this skb carries, in order; ``flow`` is the flow of the
    first, and ``mixed`` (None unless ``skb_gro_receive`` merged frames of another flow into it: the same inner flow
    under another outer key at a tunnel device without tunnel metadata) counts the frames of each other flow.
    Memory layout, only as far as ``skb_has_frag_list`` depends on it: ``head_frag`` (the driver built the skb
    around a page fragment, ``build_skb``; False for a kmalloc'd linear head such as veth carries from AF_PACKET),
    ``data_len`` (``skb->data_len`` of the skb's own frame: the bytes of ``buf[data:tail]`` held in page frags, as
    AF_PACKET's paged skbs on veth have them; payload merged into the skb not counted), ``nr_frags`` (page
    fragments in ``skb_shinfo``) and ``frag_list`` (segments chained on the frag_list).
    ``csum`` is a folded 16-bit ones'-complement sum (see packet/csum.py).
    Kernel: struct sk_buff, include/linux/skbuff.h.
    """

    __slots__ = (
        "buf",
        "data",
        "tail",
        "len",
        "mac_header",
        "network_header",
        "transport_header",
        "inner_mac_header",
        "inner_network_header",
        "inner_transport_header",
        "protocol",
        "ip_summed",
        "csum_level",
        "csum",
        "csum_valid",
        "csum_complete_sw",
        "csum_start",
        "hash",
        "l4_hash",
        "vlan_tci",
        "dev",
        "md_dst",
        "slow_gro",
        "gso_size",
        "gso_segs",
        "gso_type",
        "encapsulation",
        "cb",
        "frags",
        "head_frag",
        "data_len",
        "nr_frags",
        "frag_list",
        "frames",
        "flow",
        "mixed",
        "ts_ns",
        "addr",
        "psums",
        "pidx",
        "no_payload",
        "ect1_csum_wrong",
    )

    def __init__(
        self,
        buf: bytes | bytearray,
        mac_header: int,
        ts_ns: int,
        frame: int,
        flow: int,
        data: int | None = None,
        protocol: int = 0,
        dev: NetDevice | None = None,
        hash: int = 0,
        l4_hash: bool = False,
        vlan_tci: int | tuple[int, ...] | None = None,
        ip_summed: int = CHECKSUM_NONE,
        csum_level: int = 0,
        csum: int = 0,
        csum_start: int = 0,
        addr: int = 0,
        psums: PollSums | None = None,
        pidx: int = 0,
        no_payload: bool = False,
    ) -> None:
        """The arguments after ``flow`` are what a driver fills in (``data``: after ``eth_type_trans``, default
        ``mac_header``), by name or, on the driver's per-frame path (sim/driver.py), in this order.
        ``psums``/``pidx``: the frame's poll batch of checksums and its index there (None/0: sums computed from
        ``buf``). ``no_payload``: the frame's innermost TCP segment carries no payload (observation only, set by
        the driver step from the frame: sim/driver.py, ``packet.headers.tcp_payload_len``)."""
        if data is None:
            data = mac_header
        self.buf = buf
        self.mac_header = mac_header
        self.data = data
        self.tail = tail = len(buf)
        self.len = tail - data
        self.network_header = 0
        self.transport_header = 0
        self.inner_mac_header = 0
        self.inner_network_header = 0
        self.inner_transport_header = 0
        self.protocol = protocol
        self.ip_summed = ip_summed
        self.csum_level = csum_level
        self.csum = csum
        self.csum_valid = 0
        self.csum_complete_sw = 0
        self.csum_start = csum_start
        self.hash = hash
        self.l4_hash = l4_hash
        self.vlan_tci: int | tuple[int, ...] | None = vlan_tci
        #: None only until the driver step sets it (eth_type_trans): the receive path always finds a device
        self.dev: NetDevice = dev  # type: ignore[assignment]
        self.md_dst: tuple | None = None
        self.slow_gro = 0
        self.gso_size = 0
        self.gso_segs = 0
        self.gso_type = 0
        self.encapsulation = 0
        self.cb = NapiGroCb()
        self.frags: list[tuple[bytes | bytearray, int, int]] = []
        self.head_frag = False
        self.data_len = 0
        self.nr_frags = 0
        self.frag_list = False
        self.frames = [frame]
        self.flow = flow
        #: observation only: {other flow: frames} merged into this skb (see the class docstring)
        self.mixed: dict[int, int] | None = None
        #: observation only: IP_ECN_set_ect1 wrote the inner IPv4 header checksum wrong (kernel/ip_tunnel_core.py)
        self.ect1_csum_wrong = False
        self.ts_ns = ts_ns
        self.addr = addr
        self.psums = psums
        self.pidx = pidx
        #: observation only, not a kernel field: the frame's innermost TCP segment carries no payload
        #: (``packet.headers.tcp_payload_len`` 0, set by the driver step); dev_gro_receive copies it into
        #: ``cb.no_payload`` where GRO runs. Such a segment is never held nor merged into (len 0: ``len < mss`` at
        #: out_check_final; bytes past the datagram: inet_gro_receive/ipv6_gro_receive flush it for its length),
        #: so an skb that carries more than one frame carries payload and keeps its first frame's False
        self.no_payload = no_payload

    # -- geometry ---------------------------------------------------------------------------------------------
    def headlen(self) -> int:
        """Bytes of the skb's own frame from ``data`` to ``tail``: what ``pskb_may_pull`` can bring into the
        linear part, which the receive path's header checks read. The kernel's ``skb_headlen`` (the linear part
        alone) is this less ``data_len``: ``skb_gro_receive`` and ``gro_pull_from_frag0`` read it (kernel/gro.py)."""
        return self.tail - self.data

    def pull(self, n: int) -> None:
        """``__skb_pull``: advance ``data`` by n bytes. No checksum adjustment."""
        self.data += n
        self.len -= n

    def is_gso(self) -> bool:
        """``skb_is_gso``: non-zero ``gso_size``."""
        return self.gso_size != 0

    def checksum(self, start: int) -> int:
        """Byte sum of the packet from absolute offset ``start`` in ``buf`` to the end, merged payload included.

        Kernel: ``skb_checksum`` (net/core/skbuff.c). Returns a folded 16-bit sum. Merged payload slices start at
        even packet offsets only when the preceding length is even; odd lengths are handled by byte-swapping
        the slice sum, as ``csum_block_add`` does.
        """
        buf = self.buf
        ps = self.psums
        if ps is not None and not self.frags and self.tail == len(buf) and buf is ps.bufs[self.pidx]:
            # fast path, shortcut of csum_partial(buf, start, tail) below: derived from the poll's batch sum
            if start >= 14 and not (start - 14) & 1:
                total = ps.suffix(self.pidx, start)
                if total:
                    return total
        total = csum_partial(buf, start, self.tail)
        pos = self.tail - start
        for fbuf, fs, fe in self.frags:
            s = csum_partial(fbuf, fs, fe)
            if pos & 1:
                s = ((s << 8) | (s >> 8)) & 0xFFFF
            total = csum_add(total, s)
            pos += fe - fs
        return total


# -- checksum-level helpers (include/linux/skbuff.h) ----------------------------------------------------------
def __skb_incr_checksum_unnecessary(skb: SkBuff) -> None:
    """Promote the skb after a checksum was verified in software: NONE → UNNECESSARY/0, UNNECESSARY → level+1.

    Kernel: include/linux/skbuff.h ``__skb_incr_checksum_unnecessary`` (v5.10). COMPLETE/PARTIAL unchanged.
    """
    if skb.ip_summed == CHECKSUM_UNNECESSARY:
        if skb.csum_level < SKB_MAX_CSUM_LEVEL:
            skb.csum_level += 1
    elif skb.ip_summed == CHECKSUM_NONE:
        skb.ip_summed = CHECKSUM_UNNECESSARY
        skb.csum_level = 0


def __skb_decr_checksum_unnecessary(skb: SkBuff) -> None:
    """Consume one UNNECESSARY level on the normal path: level 0 → NONE, else level−1.

    Kernel: include/linux/skbuff.h ``__skb_decr_checksum_unnecessary``.
    """
    if skb.ip_summed == CHECKSUM_UNNECESSARY:
        if skb.csum_level == 0:
            skb.ip_summed = CHECKSUM_NONE
        else:
            skb.csum_level -= 1


def skb_csum_unnecessary(skb: SkBuff) -> bool:
    """``skb_csum_unnecessary``: UNNECESSARY, or ``csum_valid``, or PARTIAL starting inside the data."""
    return (
        skb.ip_summed == CHECKSUM_UNNECESSARY
        or bool(skb.csum_valid)
        or (skb.ip_summed == CHECKSUM_PARTIAL and skb.csum_start >= skb.data)
    )


def skb_postpull_rcsum(skb: SkBuff, start: int, length: int) -> None:
    """Adjust the checksum state after ``length`` bytes at absolute offset ``start`` were pulled.

    Kernel: include/linux/skbuff.h ``__skb_postpull_rcsum``: COMPLETE subtracts the pulled bytes; PARTIAL whose
    checksum start now lies before the data falls back to NONE.
    """
    if skb.ip_summed == CHECKSUM_COMPLETE:
        skb.csum = csum_sub(skb.csum, csum_partial(skb.buf, start, start + length))
    elif skb.ip_summed == CHECKSUM_PARTIAL and skb.csum_start < skb.data:
        skb.ip_summed = CHECKSUM_NONE


def skb_pull_rcsum(skb: SkBuff, length: int) -> None:
    """``skb_pull_rcsum``: pull ``length`` bytes and adjust the checksum state."""
    start = skb.data
    skb.pull(length)
    skb_postpull_rcsum(skb, start, length)


def __skb_checksum_complete(skb: SkBuff, start: int) -> int:
    """Full software checksum from absolute offset ``start`` to the end; returns the folded verdict (0 good).

    Kernel: net/core/skbuff.c ``__skb_checksum_complete`` (5.x): stores the byte sum in ``skb->csum``, marks the
    skb COMPLETE (software-computed) and sets ``csum_valid`` to the verdict. ``skb.csum`` holds the pseudo
    header sum on entry.
    """
    data_sum = skb.checksum(start)
    verdict = csum_fold(csum_add(skb.csum, data_sum))
    skb.csum = data_sum
    skb.ip_summed = CHECKSUM_COMPLETE
    skb.csum_complete_sw = 1
    skb.csum_valid = int(verdict == 0)
    return verdict
