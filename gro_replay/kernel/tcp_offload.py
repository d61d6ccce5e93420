"""TCP GRO: the merge decision. Kernel: net/ipv4/tcp_offload.c ``tcp4_gro_receive``, ``tcp_gro_receive``,
``tcp4_gro_complete``, ``tcp_gro_complete``; net/ipv6/tcpv6_offload.c ``tcp6_gro_receive``,
``tcp6_gro_complete``.

Versions: v5.10.13 text for K-pre/K-fix (gro-spec §5.5); v6.1 5eddb24901ee (GSO skbs: equal gso_size, final check
``len != count * gso_size``; switch ``gro_accepts_gso``); v6.10 4b0ebbca3e16 (IP checks through
``gro_receive_network_flush`` instead of ``p->flush``/``flush_id``; switch ``l3_flush_in_tcp``); v6.15 4e4f7cefb130
(CWR compared with the other flags, switch ``tcp_gro_compares_cwr``); v6.18 21f7484220ac (two ``ip_fixedid`` bits
at completion); ab4c8b6f7fcb (2026, switch ``tcp_gro_cwr_no_flush``). The v6.18 text read: tcp_gro_lookup,
tcp_gro_pull_header and tcp_gro_receive in torvalds/linux net/ipv4/tcp_offload.c (stored 2025 version).
Left out: TCP fraglist GRO (NETIF_F_GRO_FRAGLIST off by default), TLS device offload (``decrypted``).
"""

from __future__ import annotations

import struct

from ..packet.csum import pseudo4, pseudo6
from . import reasons as R
from . import skbuff as _skbuff
from .af_inet import inet_gro_flush, inet_gro_network_pseudo
from .gro import skb_gro_header_ok, skb_gro_pull, skb_gro_receive
from .gro_csum import __skb_gro_checksum_validate
from .ip6_offload import ip6_gro_network_pseudo, ipv6_gro_flush
from .skbuff import (
    CHECKSUM_PARTIAL,
    SKB_GSO_TCP_ACCECN,
    SKB_GSO_TCP_ECN,
    SKB_GSO_TCP_FIXEDID,
    SKB_GSO_TCP_FIXEDID_INNER,
    SKB_GSO_TCPV4,
    SKB_GSO_TCPV6,
    SkBuff,
)

TCP_FLAG_CWR = 0x00800000
TCP_FLAG_ECE = 0x00400000
TCP_FLAG_URG = 0x00200000
TCP_FLAG_ACK = 0x00100000
TCP_FLAG_PSH = 0x00080000
TCP_FLAG_RST = 0x00040000
TCP_FLAG_SYN = 0x00020000
TCP_FLAG_FIN = 0x00010000
_FLAGS_MUST_MATCH = ~(TCP_FLAG_FIN | TCP_FLAG_PSH) & 0xFFFFFFFF
_FLAGS_MUST_MATCH_PRE_ACCECN = ~(TCP_FLAG_CWR | TCP_FLAG_FIN | TCP_FLAG_PSH) & 0xFFFFFFFF
_TCPH = struct.Struct("!HHIIIHH")  # source dest seq ack_seq flag_word(doff|flags|window) check urg_ptr
_PORTS = struct.Struct("!I")  # source and dest as one word


def _network_flush(skb: SkBuff, p: SkBuff) -> int:
    """``gro_receive_network_flush`` (v6.10+): outer header (if encapsulated) and innermost header verdicts.

    Returns 0 (no flush) or the ``reasons.L3_*`` bits of the conditions that flush (outer header ``<< 0``, inner
    ``<< L3_INNER_SHIFT``); the kernel's verdict is whether it is non-zero.
    """
    pcb = p.cb
    flush = 0
    for inner in (0, 1) if pcb.encap_mark else (0,):
        nh = skb.data + pcb.network_offsets[inner]
        nh2 = p.data + pcb.network_offsets[inner]
        if skb.buf[nh] >> 4 == 6:
            f = ipv6_gro_flush(nh, nh2, skb.buf, p.buf)
        else:
            f = inet_gro_flush(nh, nh2, skb, p, inner == 1)
        flush |= f << (R.L3_INNER_SHIFT * inner)  # the kernel ORs the verdicts; the bits name them
    return flush


def _id_step(skb: SkBuff, p: SkBuff, inner: bool) -> tuple[str, int, int] | None:
    """Observation for the report (no decision reads it): the IPv4 ID step of ``skb`` over the held packet ``p``
    and the segments ``p`` holds, for the header an ID reason names: ``(header, step, segments held)``."""
    pcb = p.cb
    i = 1 if inner and pcb.encap_mark else 0
    nh = skb.data + pcb.network_offsets[i]
    nh2 = p.data + pcb.network_offsets[i]
    if skb.buf[nh] >> 4 != 4 or p.buf[nh2] >> 4 != 4:
        return None
    step = (((skb.buf[nh + 4] << 8) | skb.buf[nh + 5]) - ((p.buf[nh2 + 4] << 8) | p.buf[nh2 + 5])) & 0xFFFF
    if _skbuff.id_tally is not None:  # observation only (sim/runs.py): the step itself is reported
        _skbuff.tally_id(skb, nh + 4, p, nh2 + 4, -1)
    hdr = ("inner" if i else "outer") if pcb.encap_mark else "ip"
    return hdr, step, pcb.count


def tcp_gro_receive(head: list[SkBuff], skb: SkBuff) -> SkBuff | None:  # noqa: C901, PLR0915 - net/ipv4/tcp_offload.c tcp_gro_receive is one C function, kept in its order
    """Find the held packet of this TCP flow and merge into it, or decide which packet to complete.

    Kernel: net/ipv4/tcp_offload.c ``tcp_gro_receive`` (gro-spec §5.5). Returns ``pp`` (the held packet to
    complete: on a mismatch, or when this segment ends the aggregate) or None.
    """
    cb = skb.cb
    k = skb.dev.kernel
    model = k.model
    off = cb.data_offset
    if not skb_gro_header_ok(skb, off + 20):
        R.skb_flush_reason(cb, R.TRUNCATED)
        cb.flush |= 1
        return None
    th = skb.data + off
    buf = skb.buf
    sport, dport, seq, ack, flag_word, _check, _urg = _TCPH.unpack_from(buf, th)
    thlen = (flag_word >> 28) * 4
    if thlen < 20 or not skb_gro_header_ok(skb, off + thlen):
        R.skb_flush_reason(cb, R.TCP_HDR if thlen < 20 else R.TRUNCATED)
        cb.flush |= 1
        return None
    skb_gro_pull(skb, thlen)
    length = skb.len - cb.data_offset
    flags = flag_word  # tcp_flag_word(th): doff | flags | window
    mss = 1
    flush = 1
    pp = None
    ports = (sport << 16) | dport
    p_why = None  # observation only: why the held packet ends, when not the arriving segment's own reason

    p = None
    for q in head:
        if not q.cb.same_flow:
            continue
        if _PORTS.unpack_from(q.buf, q.transport_header)[0] != ports:  # *(u32 *)&th2->source
            q.cb.same_flow = 0
            continue
        p = q
        break

    if p is not None:
        pcb = p.cb
        t2 = p.transport_header
        pbuf = p.buf
        _s, _d, seq2, ack2, flags2, _c, _u = _TCPH.unpack_from(pbuf, t2)
        why = None
        flush = 0
        if not model.l3_flush_in_tcp and pcb.flush:
            flush = 1
            why = R.p_flush_reason(pcb, cb.encap_mark)
        if not model.tcp_gro_cwr_no_flush and flags & TCP_FLAG_CWR:
            flush = 1
            why = why or R.TCP_CWR
        # CWR is compared with the other flags from 4e4f7cefb130 (AccECN: part of the ACE counter)
        same_mask = _FLAGS_MUST_MATCH if model.tcp_gro_compares_cwr else _FLAGS_MUST_MATCH_PRE_ACCECN
        if (flags ^ flags2) & same_mask:
            flush = 1
            why = why or R.TCP_FLAGS_DIFFER
        if ack != ack2:
            flush = 1
            why = why or R.TCP_ACK
        if thlen > 20 and buf[th + 20 : th + thlen] != pbuf[t2 + 20 : t2 + thlen]:
            flush = 1
            why = why or R.TCP_OPTIONS
        if model.l3_flush_in_tcp:
            l3 = _network_flush(skb, p)
            if l3:
                flush = 1
                why = why or R.l3_reason(l3, pcb.encap_mark)
        else:
            # When we receive our second frame we can made a decision on if we continue this flow as an
            # atomic flow with a fixed ID or if we use an incrementing ID.
            if pcb.flush_id != 1 or pcb.count != 1 or not pcb.is_atomic:
                if pcb.flush_id:
                    flush = 1
                    why = why or R.l3_reason(pcb.l3_why & R.L3_ID_BITS, cb.encap_mark, R.IP_ID)
            else:
                pcb.is_atomic = 0
        mss = p.gso_size
        if (
            _skbuff.length_tally is not None
            and len(skb.frames) > 1
            and not (model.gro_accepts_gso and skb.gso_size)
        ):
            # observation only (sim/runs.py): an aggregate's length, a sum of its segments', meets mss below
            _skbuff.length_tally.append((None, "len", None))
        if model.gro_accepts_gso and skb.gso_size:
            if mss != skb.gso_size:
                flush = 1
                why = why or R.TCP_GSO_SIZE
        elif ((length - 1) & 0xFFFFFFFF) >= mss:
            flush = 1
            # the held packet's reason (p takes the arriving segment's below); the segment's own, when it carries
            # no payload, is out_check_final's (len < mss): TCP_PURE_ACK
            why = why or (R.TCP_NEXT_PURE_ACK if length == 0 else R.TCP_LEN_GT_MSS)
        held_end = (seq2 + (p.len - pcb.data_offset)) & 0xFFFFFFFF
        if held_end != seq:
            flush = 1
            # observation only: p ends here (flush), at this gap, for skb's arrival
            pcb.ended_by = (skb.frames[0], held_end, seq)
            # a sequence gap explains the ID step it implies (reasons.py): name the gap
            why = R.TCP_SEQ if why is None or R.id_step_only(why) else why
        arrived_flushing = cb.flush  # NAPI_GRO_CB(skb)->flush set before this layer: skb_gro_receive refuses
        if flush or skb_gro_receive(p, skb):
            mss = 1
            if flush:
                assert why is not None  # every flush above names its reason
                R.skb_flush_reason(cb, why)  # a flush set before this layer stays the skb's reason
                p_why = why
                if why.endswith("ip_id"):
                    pcb.id_step = _id_step(skb, p, "inner_ip_id" in why and "outer_ip_id" not in why)
            elif arrived_flushing:
                # p is ended by an skb that was flushing on its own (GSO before v6.1, bytes past its IP datagram):
                # named as such, not by that skb's own reason (which would read as p's)
                p_why = R.TCP_NEXT_FLUSHING
        elif flags & (TCP_FLAG_FIN | TCP_FLAG_PSH):
            if not isinstance(pbuf, bytearray):
                p.buf = pbuf = bytearray(pbuf)
            pbuf[t2 + 13] |= (flags >> 16) & 0x09

    # out_check_final: force a flush if the last segment is smaller than mss.
    if model.gro_accepts_gso and skb.gso_size:
        final = 1 if length != cb.count * skb.gso_size else 0
    else:
        final = 1 if length < mss else 0
    special = flags & (TCP_FLAG_URG | TCP_FLAG_PSH | TCP_FLAG_RST | TCP_FLAG_SYN | TCP_FLAG_FIN)
    if special or final:
        if special & (TCP_FLAG_URG | TCP_FLAG_RST | TCP_FLAG_SYN):
            tag = R.TCP_FLAGS_URG_RST_SYN
        elif special:
            tag = R.TCP_FLAGS_PSH_FIN
        else:
            tag = R.TCP_PURE_ACK if length == 0 else R.TCP_SHORT
        final = 1
    if p is not None:
        if cb.same_flow:
            if final:
                p.cb.why = tag
                pp = p
        else:
            p.cb.why = p_why or cb.why
            pp = p
            if final:
                R.skb_flush_reason(cb, tag)
    elif final:
        R.skb_flush_reason(cb, tag)
    cb.flush |= final
    return pp


def tcp4_gro_receive(head: list[SkBuff], skb: SkBuff) -> SkBuff | None:
    """Validate the TCP checksum over IPv4 (unless already flushing), then ``tcp_gro_receive``.

    Kernel: net/ipv4/tcp_offload.c ``tcp4_gro_receive``.
    """
    cb = skb.cb
    # Don't bother verifying checksum if we're going to flush anyway.
    if not cb.flush and __skb_gro_checksum_validate(skb, 6, False, 0, inet_gro_network_pseudo):
        cb.why = R.TCP_CSUM
        cb.flush = 1
        return None
    return tcp_gro_receive(head, skb)


def tcp6_gro_receive(head: list[SkBuff], skb: SkBuff) -> SkBuff | None:
    """IPv6 variant. Kernel: net/ipv6/tcpv6_offload.c ``tcp6_gro_receive``."""
    cb = skb.cb
    if not cb.flush and __skb_gro_checksum_validate(skb, 6, False, 0, ip6_gro_network_pseudo):
        cb.why = R.TCP_CSUM
        cb.flush = 1
        return None
    return tcp_gro_receive(head, skb)


def tcp_gro_complete(skb: SkBuff) -> None:
    """Mark the aggregate CHECKSUM_PARTIAL at the TCP header, set gso_segs and the CWR-derived GSO flag.

    Kernel: net/ipv4/tcp_offload.c ``tcp_gro_complete``: a CWR head marks SKB_GSO_TCP_ECN, SKB_GSO_TCP_ACCECN
    from 4e4f7cefb130 (v6.15).
    """
    th = skb.transport_header
    if skb.encapsulation:
        skb.inner_transport_header = th
    skb.csum_start = th
    skb.ip_summed = CHECKSUM_PARTIAL
    skb.gso_segs = skb.cb.count
    if skb.buf[th + 13] & 0x80:
        skb.gso_type |= SKB_GSO_TCP_ACCECN if skb.dev.kernel.model.tcp_gro_compares_cwr else SKB_GSO_TCP_ECN


def _complete(skb: SkBuff, thoff: int, pseudo_sum: int, gso_type: int) -> int:
    th = skb.data + thoff
    skb.transport_header = th
    buf = skb.buf
    if not isinstance(buf, bytearray):
        skb.buf = buf = bytearray(buf)
    buf[th + 16 : th + 18] = pseudo_sum.to_bytes(2, "big")
    skb.gso_type |= gso_type
    tcp_gro_complete(skb)
    return 0


def tcp4_gro_complete(skb: SkBuff, thoff: int) -> int:
    """Seed the TCP checksum with the pseudo header (``~tcp_v4_check``), mark TCPV4 (+FIXEDID when atomic).

    Kernel: net/ipv4/tcp_offload.c ``tcp4_gro_complete``.
    """
    nh = skb.data + thoff - 20
    buf = skb.buf
    psum = pseudo4(bytes(buf[nh + 12 : nh + 16]), bytes(buf[nh + 16 : nh + 20]), skb.len - thoff, 6)
    cb = skb.cb
    model = skb.dev.kernel.model
    gso_type = SKB_GSO_TCPV4
    if model.inet_gro_checks_outer_id:
        # ip_fixedid bit 0 → outer (or only) header, bit 1 → inner header (3271f19bf7b9)
        if cb.ip_fixedid & 1:
            gso_type |= SKB_GSO_TCP_FIXEDID
        if cb.ip_fixedid & 2:
            gso_type |= SKB_GSO_TCP_FIXEDID_INNER
    elif cb.ip_fixedid if model.l3_flush_in_tcp else cb.is_atomic:
        gso_type |= SKB_GSO_TCP_FIXEDID
    return _complete(skb, thoff, psum, gso_type)


def tcp6_gro_complete(skb: SkBuff, thoff: int) -> int:
    """Kernel: net/ipv6/tcpv6_offload.c ``tcp6_gro_complete``."""
    nh = skb.data + skb.cb.network_offsets[1 if skb.encapsulation else 0]
    buf = skb.buf
    psum = pseudo6(bytes(buf[nh + 8 : nh + 24]), bytes(buf[nh + 24 : nh + 40]), skb.len - thoff, 6)
    return _complete(skb, thoff, psum, SKB_GSO_TCPV6)
