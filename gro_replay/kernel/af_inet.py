"""IPv4 GRO. Kernel: net/ipv4/af_inet.c ``inet_gro_receive`` / ``inet_gro_complete``.

Versions: v5.10.13 text for K-pre/K-fix (per-held-packet TTL/TOS/DF checks and the ``flush_id`` verdict,
gro-spec §3.1); from v6.10 (4b0ebbca3e16, switch ``l3_flush_in_tcp``) those checks move to ``tcp_gro_receive``
through ``gro_receive_network_flush`` (include/net/gro.h ``inet_gro_flush``, the net-next v10 2/3 text as applied
on 2024-05-14, unchanged through v6.17: one ``ip_fixedid`` bit for both headers), gro-spec §3.3; v6.18 adds the outer
ID check (21f7484220ac, ``inet_gro_checks_outer_id``) and fixed IDs without DF (f095a358faf2,
``inet_gro_fixedid_without_df``), read in the v7 patch mails of Richard Gobert's series (2025-09-22).
IPv4 in IPv4 (protocol 4): ``ipip_gro_receive`` / ``ipip_gro_complete`` (the ``ipip_offload`` that
``ipv4_offload_init`` registers), the same text from v4.19 (d4546c2509b1, list_head GRO) on: a second
encapsulation flushes (``NAPI_GRO_CB(skb)->encap_mark``), else the inner IPv4 header is parsed by
``inet_gro_receive`` called directly. IPv6 in IPv4 (41) is ip6_offload.py ``sit_ip6ip6_gro_receive``, GRE (47)
gre_offload.py. Left out: IPv4 protocols other than TCP, UDP, IPIP, IPv6 and GRE (their frames flush).
"""

from __future__ import annotations

import struct

from ..packet.csum import csum_add, csum_fold, csum_sub, ip_fast_csum, pseudo_at
from . import reasons as R
from . import skbuff as _skbuff
from .gro import call_gro_receive, skb_gro_header_ok, skb_gro_pull
from .handler_miss import missed_proto
from .skbuff import ETH_P_IP, SKB_GSO_IPXIP4, SkBuff

IP_DF = 0x4000
IP_MF = 0x2000
IP_OFFSET = 0x1FFF
_IPH = struct.Struct("!BBHHHBBH8s")  # ver_ihl tos tot_len id frag_off ttl protocol check saddr+daddr


def inet_gro_receive(head: list[SkBuff], skb: SkBuff) -> SkBuff | None:  # noqa: C901, PLR0915 - net/ipv4/af_inet.c inet_gro_receive is one C function, kept in its order
    """Parse the IPv4 header at the GRO offset, sweep held packets, then call the protocol's gro_receive.

    Kernel: net/ipv4/af_inet.c ``inet_gro_receive`` (v5.10 / v6.10+ per ``KernelModel.l3_flush_in_tcp``).
    Returns ``pp`` or None. A flush caused by this header alone (options, fragment, bad header checksum) sets
    ``flush`` on the skb only: the held packet of the flow is not completed (gro-spec §3.1 notes).
    """
    cb = skb.cb
    k = skb.dev.kernel
    off = cb.data_offset
    pp = None
    flush = 1
    if not skb_gro_header_ok(skb, off + 20):
        R.skb_flush_reason(cb, R.TRUNCATED)
        cb.flush |= flush
        return None
    base = skb.data + off
    buf = skb.buf
    ver_ihl, tos, tot_len, ip_id, frag_off, ttl, proto, _check, addrs = _IPH.unpack_from(buf, base)
    ops = k.inet_offloads.get(proto)
    if ops is None:
        R.skb_flush_reason(cb, missed_proto(R.at_header(R.INET_NO_OFFLOAD, cb.encap_mark), proto))
    elif ver_ihl != 0x45:
        R.skb_flush_reason(cb, R.at_header(R.INET_HDR, cb.encap_mark))
    elif frag_off & (IP_MF | IP_OFFSET):
        R.skb_flush_reason(cb, R.at_header(R.INET_FRAGMENT, cb.encap_mark))
    elif ip_fast_csum(buf, base, 5):
        R.skb_flush_reason(
            cb, R.INET_CSUM_ECT1_MARK if skb.ect1_csum_wrong else R.at_header(R.INET_CSUM, cb.encap_mark)
        )
    else:
        cb.proto = proto
        flush = 1 if tot_len != skb.len - off or frag_off & ~IP_DF & 0xFFFF else 0
        if flush:
            R.skb_flush_reason(cb, R.at_header(R.INET_TOT_LEN, cb.encap_mark))
        if k.model.l3_flush_in_tcp:
            for p in head:
                if not p.cb.same_flow:
                    continue
                b2 = p.data + off
                if p.buf[b2 + 9] != proto or p.buf[b2 + 12 : b2 + 20] != addrs:
                    p.cb.same_flow = 0
            cb.flush |= flush
        else:
            df = frag_off & IP_DF
            for p in head:
                pcb = p.cb
                if not pcb.same_flow:
                    continue
                b2 = p.data + off  # iph2
                _v2, tos2, _l2, id2, frag_off2, ttl2, proto2, _c2, addrs2 = _IPH.unpack_from(p.buf, b2)
                if proto2 != proto or addrs2 != addrs:
                    pcb.same_flow = 0
                    continue
                # All fields must match except length and checksum.
                if ttl2 != ttl or tos2 != tos or (frag_off2 & IP_DF) != df:
                    pcb.flush |= 1
                    pcb.why = R.IP_TTL_TOS_DF
                    pcb.l3_why |= R.L3_FIELDS << (R.L3_INNER_SHIFT * cb.encap_mark)  # observation only
                if flush and not pcb.flush:
                    pcb.why = R.TCP_NEXT_FLUSHING  # observation only: skb's own flush, folded into p's
                pcb.flush |= flush
                flush_id = (ip_id - id2) & 0xFFFF
                tally = _skbuff.id_tally is not None  # observation only (sim/runs.py)
                if not pcb.is_atomic or not df:
                    flush_id ^= pcb.count
                    flush_id = 0xFFFF if flush_id else 0
                # If the previous IP ID value was based on an atomic datagram we can overwrite it and ignore it.
                if cb.is_atomic:
                    if tally and cb.encap_mark:
                        _skbuff.untally_outer_id(skb, p)
                    pcb.flush_id = flush_id
                    pcb.l3_why &= ~R.L3_ID_BITS  # observation only, as flush_id
                else:
                    pcb.flush_id |= flush_id
                if tally:
                    _skbuff.tally_id(skb, base + 4, p, b2 + 4, pcb.count)
                # observation only: a step of 1 over a held atomic packet of one segment is the switch to an
                # incrementing ID that tcp_gro_receive accepts (flush_id 1, count 1, is_atomic): no ID condition of
                # this header, whatever another header's flush_id adds to it (newcomer31)
                if flush_id and not (flush_id == 1 and pcb.count == 1 and pcb.is_atomic and df):
                    pcb.l3_why |= R.L3_ID << (R.L3_INNER_SHIFT * cb.encap_mark)
            cb.is_atomic = 1 if df else 0
            cb.flush |= flush
        cb.network_offsets[cb.encap_mark] = off
        skb.network_header = base
        skb_gro_pull(skb, 20)
        skb.transport_header = skb.data + cb.data_offset
        pp = call_gro_receive(ops.gro_receive, head, skb)
        return pp
    cb.flush |= flush
    return pp


def inet_gro_network_pseudo(skb: SkBuff, proto: int) -> int:
    """``inet_gro_compute_pseudo``: pseudo-header sum over the GRO network header and ``skb_gro_len``."""
    return pseudo_at(skb.buf, skb.network_header + 12, 8, skb.len - skb.cb.data_offset, proto)


def inet_gro_flush(iph: int, iph2: int, skb: SkBuff, p: SkBuff, inner: bool) -> int:
    """IPv4 flush verdict against the held packet, evaluated from TCP (v6.10+); non-zero means flush.

    Kernel: include/net/gro.h ``inet_gro_flush``. TTL, TOS and DF must match; a difference returns at once, before
    any ID is read. 4b0ebbca3e16 (v6.10, unchanged to v6.17): the outer header of an encapsulated packet with DF set
    then returns too (its ID ignored); otherwise the second segment of a header with DF and the same ID sets
    ``ip_fixedid``, one bit shared by the outer and the inner header, and while it is set every header's ID must be
    fixed (whatever its DF), else it must step by the segment count. 21f7484220ac (v6.18): outer IDs are checked
    too, ``ip_fixedid`` keeps bit 0 for the outer (or only) header and bit 1 for the inner one; f095a358faf2
    (v6.18): a fixed ID no longer needs DF. ``iph``/``iph2`` are absolute offsets into ``skb.buf`` and ``p.buf``;
    ``inner`` is True for the inner header of an encapsulated packet.
    Returns 0 (no flush) or which condition flushes, as ``reasons.L3_FIELDS`` (TTL/TOS/DF) or ``reasons.L3_ID``
    (the kernel's non-zero flush; the bits only name it for the report).
    """
    model = p.dev.kernel.model
    skb_buf = skb.buf
    pbuf = p.buf
    df = skb_buf[iph + 6] & 0x40
    # All fields must match except length and checksum.
    if (
        skb_buf[iph + 8] != pbuf[iph2 + 8]
        or skb_buf[iph + 1] != pbuf[iph2 + 1]
        or df != (pbuf[iph2 + 6] & 0x40)
    ):
        return R.L3_FIELDS
    pcb = p.cb
    count = pcb.count
    if not model.inet_gro_checks_outer_id:
        bit = 1  # 4b0ebbca3e16: one bit for both headers
        if not inner and pcb.encap_mark and df:
            return 0
    else:
        bit = 2 if inner else 1
    if _skbuff.id_tally is not None:  # observation only (sim/runs.py): where the ID difference is used
        _skbuff.tally_id(skb, iph + 4, p, iph2 + 4, count)
    ipid_offset = (
        ((skb_buf[iph + 4] << 8) | skb_buf[iph + 5]) - ((pbuf[iph2 + 4] << 8) | pbuf[iph2 + 5])
    ) & 0xFFFF
    # When we receive our second frame we can make a decision on if we continue this flow as an atomic flow
    # with a fixed ID or if we use an incrementing ID.
    if count == 1 and not ipid_offset and (df or model.inet_gro_fixedid_without_df):
        pcb.ip_fixedid |= bit
    if pcb.ip_fixedid & bit:
        return R.L3_ID if ipid_offset != 0 else 0
    return R.L3_ID if ipid_offset != count & 0xFFFF else 0


def inet_gro_complete(skb: SkBuff, nhoff: int) -> int:
    """Rewrite the IPv4 total length (and patch its checksum) for the aggregate, then complete the L4 header.

    Kernel: net/ipv4/af_inet.c ``inet_gro_complete``. Returns 0 or a negative errno.
    """
    k = skb.dev.kernel
    base = skb.data + nhoff
    if not isinstance(skb.buf, bytearray):
        skb.buf = bytearray(skb.buf)
    buf = skb.buf
    # iph_set_totlen (b1a78b9b9886, v6.3): an IPv4 BIG TCP aggregate beyond IP_MAX_MTU carries tot_len 0
    newlen = skb.len - nhoff
    if newlen > 0xFFFF:
        newlen = 0
    if skb.encapsulation:
        skb.inner_network_header = base
    old = (buf[base + 2] << 8) | buf[base + 3]
    check = (buf[base + 10] << 8) | buf[base + 11]
    # csum_replace2: check' = ~(~check + ~old + new)
    new_check = csum_fold(csum_add(csum_sub(~check & 0xFFFF, old), newlen))
    buf[base + 2 : base + 4] = newlen.to_bytes(2, "big")
    buf[base + 10 : base + 12] = new_check.to_bytes(2, "big")
    ops = k.inet_offloads.get(buf[base + 9])
    if ops is None:
        return -2
    return ops.gro_complete(skb, nhoff + 20)


def ipip_gro_receive(head: list[SkBuff], skb: SkBuff) -> SkBuff | None:
    """IPv4 in IPv4 (IP protocol 4): flush a second encapsulation, else mark the skb encapsulated and parse the inner
    IPv4 header.

    Kernel: net/ipv4/af_inet.c ``ipip_gro_receive``: ``NAPI_GRO_CB(skb)->encap_mark`` already set (the outer UDP
    tunnel's udp_gro_receive set it on the phys device, or an IPIP header before this one) sets ``flush = 1`` and
    returns NULL; else it sets ``encap_mark`` and returns ``inet_gro_receive(head, skb)``, called directly (not
    through ``call_gro_receive``: no recursion count). Returns ``pp`` or None.
    """
    cb = skb.cb
    if cb.encap_mark:
        R.skb_flush_reason(cb, R.IPIP_ENCAP_MARK)
        cb.flush = 1
        return None
    cb.encap_mark = 1
    return inet_gro_receive(head, skb)


def ipip_gro_complete(skb: SkBuff, nhoff: int) -> int:
    """Mark the aggregate encapsulated (``SKB_GSO_IPXIP4``), then complete the inner IPv4 header at ``nhoff``.

    Kernel: net/ipv4/af_inet.c ``ipip_gro_complete``. Returns 0 or a negative errno.
    """
    skb.encapsulation = 1
    skb.gso_type |= SKB_GSO_IPXIP4
    return inet_gro_complete(skb, nhoff)


__all__ = [
    "ETH_P_IP",
    "inet_gro_receive",
    "inet_gro_complete",
    "ipip_gro_receive",
    "ipip_gro_complete",
    "inet_gro_flush",
    "inet_gro_network_pseudo",
]
