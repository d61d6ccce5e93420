"""Fast path: a shortcut of the GRO offload chain for the common frame shapes, with identical results.

The kernel reads headers through ``skb_gro_header_fast`` when they sit in ``frag0`` and falls back to
``skb_gro_header_slow`` otherwise; the result is the same either way. This module plays that role for the
simulation: ``gro_receive_fast`` is a labelled shortcut of ``ptype->callbacks.gro_receive`` as called by
``dev_gro_receive`` (gro.py), that is of the chain

* on the physical device: ``inet_gro_receive`` / ``ipv6_gro_receive`` → ``udp4_gro_receive`` /
  ``udp6_gro_receive`` → ``udp_gro_receive`` → ``vxlan_gro_receive`` / ``geneve_gro_receive`` →
  ``eth_gro_receive`` → ``inet_gro_receive`` / ``ipv6_gro_receive`` → ``tcp4_gro_receive`` /
  ``tcp6_gro_receive`` → ``tcp_gro_receive`` (→ ``skb_gro_receive``);
* on a tunnel device (gro_cells): the inner ``inet_gro_receive`` / ``ipv6_gro_receive`` → TCP part of it.

Every statement of those functions is kept, in their order, with four changes that do not alter any result:
(1) the header fields of each frame are read once per frame into a ``FrameHeaders`` record shared by every
kernel model and both stages, instead of once per layer per kernel; (2) the held packets' fields are read from
their own records; (3) the helper calls (``skb_gro_header_ok``, ``skb_gro_pull``, pseudo-header sums,
``skb_gro_postpull_rcsum``, ``__skb_gro_checksum_validate`` and its helpers) are written inline; (4) the
consecutive ``same_flow`` sweeps of ``udp_gro_receive``, the tunnel header and ``eth_gro_receive`` run as one
loop (between them only the skb's own offsets and checksum change, and a sweep only clears ``same_flow``). The shortcut applies only when both readings are certainly the
same: the frame has the plain shape (IPv4 without options and not a fragment with a good header checksum, or
IPv6 without extension headers; VXLAN or a version-0, non-OAM Geneve carrying Ethernet; TCP with a valid data
offset), the skb still holds the frame's original bytes, is not a GSO skb and was not flushed by
``dev_gro_receive``, the kernel's offload tables are the standard ones, and every held packet of the bucket
that is still ``same_flow`` after ``gro_list_prepare`` holds its original bytes and has the same header layout.
Otherwise ``gro_receive_fast`` returns ``NOT_HANDLED`` before changing anything and the reference chain runs.
``ReplayConfig(fast_path=False)`` runs the reference chain only; tests/test_fastpath.py runs both on seeded
random scenarios and requires identical per-skb output.

Kernel: the functions named above (see their modules for versions and commits).
"""

from __future__ import annotations

import functools
import struct

from ..packet.csum import csum_partial
from . import reasons as R
from .af_inet import IP_DF, IP_MF, IP_OFFSET, inet_gro_receive
from .eth import eth_gro_receive
from .geneve import geneve_gro_receive
from .gro import NOT_HANDLED, skb_gro_receive
from .ip6_offload import ipv6_gro_receive
from .skbuff import (
    CHECKSUM_NONE,
    CHECKSUM_PARTIAL,
    CHECKSUM_UNNECESSARY,
    ETH_P_IP,
    ETH_P_IPV6,
    ETH_P_TEB,
    SKB_MAX_CSUM_LEVEL,
    SkBuff,
)
from .tcp_offload import (
    _FLAGS_MUST_MATCH,
    _FLAGS_MUST_MATCH_PRE_ACCECN,
    TCP_FLAG_CWR,
    TCP_FLAG_FIN,
    TCP_FLAG_PSH,
    TCP_FLAG_RST,
    TCP_FLAG_SYN,
    TCP_FLAG_URG,
    _network_flush,
    tcp4_gro_receive,
    tcp6_gro_receive,
)
from .udp_offload import udp4_gro_receive, udp6_gro_receive
from .vxlan_core import vxlan_gro_receive

_VXLAN, _GENEVE = 0, 1


class FrameHeaders:
    """The header fields of one frame of the plain tunnelled-TCP shape, read once (``frame_headers``).

    Offsets are absolute byte offsets into ``buf``; ``o_*`` is the outer L3 header (at 14), ``u_*`` the outer UDP
    header, ``t_*`` the tunnel header (``t_hdr``: its bytes, for VXLAN as one integer; ``t_a``/``t_b``: VXLAN flags
    and VNI words, or the Geneve VNI and option bytes), ``e_*`` the inner Ethernet header, ``i_*`` the inner L3
    header, ``th_*`` the TCP header (``th_flags``: the word with data offset, flags and window). IPv4 headers use
    ``*_tos``/``*_len`` (total length)/``*_id``/``*_frag``/``*_ttl``, IPv6 ones ``*_vtc`` (first word)/``*_len``
    (payload length)/``*_ttl`` (hop limit). ``*_addrs`` are the source and destination address bytes together, ``*_addr`` their value as
    an integer (pseudo-header sums), ``*_sum`` the ones'-complement sum of a header's bytes
    (``skb_gro_postpull_rcsum``). ``layout``/``ilayout``: what must be equal for two frames' headers to sit at the
    same offsets from the physical / the tunnel device's data start.
    """

    __slots__ = (
        "buf",
        "o_fam",
        "o_hlen",
        "o_vtc",
        "o_tos",
        "o_len",
        "o_id",
        "o_frag",
        "o_ttl",
        "o_proto",
        "o_addrs",
        "o_addr",
        "o_sum",
        "u_off",
        "u_sport",
        "u_dport",
        "u_ports",
        "u_check",
        "u_len",
        "u_sum",
        "t_kind",
        "t_off",
        "t_hlen",
        "t_hdr",
        "t_sum",
        "t_a",
        "t_b",
        "e_off",
        "e_hdr",
        "e_type",
        "e_sum",
        "i_off",
        "i_fam",
        "i_hlen",
        "i_vtc",
        "i_tos",
        "i_len",
        "i_id",
        "i_frag",
        "i_ttl",
        "i_proto",
        "i_addrs",
        "i_addr",
        "i_sum",
        "th",
        "thlen",
        "th_ports",
        "th_seq",
        "th_ack",
        "th_flags",
        "th_opts",
        "layout",
        "ilayout",
        "o_etype",
        "hend",
    )


@functools.cache
def _interned(*layout: int) -> tuple[int, ...]:
    """The one tuple object for a layout, so that equal layouts compare by identity."""
    return layout


@functools.cache
def _layout_struct(
    o_fam: int, t_kind: int, t_hlen: int, i_fam: int
) -> tuple[struct.Struct, int, int, int, int]:
    """One ``struct.Struct`` for every header of a layout, from the outer L3 header to the TCP flag word, and the
    indexes of the UDP, tunnel, inner Ethernet, inner L3 and TCP fields in its tuple."""
    l3 = {4: ("BBHHHBBH8s", 9), 6: ("IHBB32s", 5)}
    fmt = (
        "!"
        + l3[o_fam][0]
        + "HHHH"
        + ("II" if t_kind == _VXLAN else f"{t_hlen}s")
        + "14s"
        + l3[i_fam][0]
        + "IIII"
    )
    ui = l3[o_fam][1]
    ti = ui + 4
    ei = ti + (2 if t_kind == _VXLAN else 1)
    ii = ei + 1
    tci = ii + l3[i_fam][1]
    return struct.Struct(fmt), ui, ti, ii, tci


def frame_headers(buf: bytes, tunnel_kinds: dict[int, str]) -> FrameHeaders | None:
    """The ``FrameHeaders`` of an Ethernet frame (no VLAN tag) of the plain shape, or None.

    ``tunnel_kinds`` maps UDP destination ports to ``"vxlan"``/``"geneve"`` (the configured tunnel sockets).
    None when any header is of another shape or cut short (the reference chain then handles the frame): the
    shape is IPv4 (version/IHL 0x45, not a fragment, header checksum good) or IPv6 (no extension header) with
    UDP inside, a VXLAN header or a version-0 non-OAM Geneve header carrying Ethernet, IPv4 or IPv6 likewise with
    TCP inside, and a TCP header whose data offset is at least 20 bytes and present.
    """
    n = len(buf)
    if n < 104:  # the shortest such frame: 14 + 20 + 8 + 8 + 14 + 20 + 20
        return None
    etype = (buf[12] << 8) | buf[13]
    if etype == ETH_P_IP:
        o_fam, u = 4, 34
    elif etype == ETH_P_IPV6:
        o_fam, u = 6, 54
    else:
        return None
    kind = tunnel_kinds.get((buf[u + 2] << 8) | buf[u + 3])
    t = u + 8
    if kind == "vxlan":
        t_kind, t_hlen = _VXLAN, 8
    elif kind == "geneve":
        b0 = buf[t]
        if b0 >> 6 or buf[t + 1] & 0x80 or ((buf[t + 2] << 8) | buf[t + 3]) != ETH_P_TEB:
            return None
        t_kind, t_hlen = _GENEVE, 8 + (b0 & 0x3F) * 4
    else:
        return None
    e = t + t_hlen
    i = e + 14
    if i + 20 > n:
        return None
    e_type = (buf[e + 12] << 8) | buf[e + 13]
    if e_type == ETH_P_IP:
        i_fam, th = 4, i + 20
    elif e_type == ETH_P_IPV6:
        i_fam, th = 6, i + 40
    else:
        return None
    if th + 20 > n:
        return None
    st, ui, ti, ii, tci = _layout_struct(o_fam, t_kind, t_hlen, i_fam)
    v = st.unpack_from(buf, 14)
    h = FrameHeaders()
    h.buf = buf
    if o_fam == 4:
        vihl, h.o_tos, h.o_len, h.o_id, frag, h.o_ttl, proto, _check, addrs = v[:9]
        if vihl != 0x45 or frag & (IP_MF | IP_OFFSET) or proto != 17:
            return None
        hv = int.from_bytes(buf[14:34], "big")
        if not hv or hv % 0xFFFF:  # ip_fast_csum != 0
            return None
        h.o_vtc = 0
        h.o_frag = frag
    else:
        vtc, h.o_len, proto, h.o_ttl, addrs = v[:5]
        if vtc >> 28 != 6 or proto != 17:
            return None
        h.o_vtc = vtc
        h.o_tos = h.o_id = h.o_frag = 0
    h.o_fam, h.o_proto, h.o_addrs = o_fam, proto, addrs
    h.o_addr = int.from_bytes(addrs, "big")
    if i_fam == 4:
        vihl, h.i_tos, h.i_len, h.i_id, frag, h.i_ttl, proto, _check, addrs = v[ii : ii + 9]
        if vihl != 0x45 or frag & (IP_MF | IP_OFFSET) or proto != 6:
            return None
        hv = int.from_bytes(buf[i : i + 20], "big")
        if not hv or hv % 0xFFFF:  # ip_fast_csum != 0
            return None
        h.i_vtc = 0
        h.i_frag = frag
    else:
        vtc, h.i_len, proto, h.i_ttl, addrs = v[ii : ii + 5]
        if vtc >> 28 != 6 or proto != 6:
            return None
        h.i_vtc = vtc
        h.i_tos = h.i_id = h.i_frag = 0
    h.i_fam, h.i_proto, h.i_addrs = i_fam, proto, addrs
    h.i_addr = int.from_bytes(addrs, "big")
    ports, seq, ack, flags = v[tci : tci + 4]
    thlen = (flags >> 28) * 4
    if thlen < 20 or th + thlen > n:
        return None
    sport, dport, h.u_len, check = v[ui : ui + 4]
    h.u_off, h.u_sport, h.u_dport, h.u_ports, h.u_check = u, sport, dport, (sport << 16) | dport, check
    h.t_kind, h.t_off, h.t_hlen = t_kind, t, t_hlen
    if t_kind == _VXLAN:
        h.t_a, h.t_b = v[ti], v[ti + 1]  # flags word, VNI word
        h.t_hdr = (v[ti] << 32) | v[ti + 1]  # the 8 header bytes, compared as one integer
    else:
        gh = v[ti]
        h.t_hdr = gh
        h.t_a, h.t_b = int.from_bytes(gh[4:7], "big"), gh[8:]  # VNI, options
    h.e_off, h.e_type, h.e_hdr = e, e_type, v[ii - 1]
    h.o_sum = None
    h.i_off = i
    h.th, h.thlen, h.th_ports, h.th_seq, h.th_ack, h.th_flags = th, thlen, ports, seq, ack, flags
    h.th_opts = buf[th + 20 : th + thlen]
    h.ilayout = _interned(i_fam, thlen)
    h.layout = _interned(o_fam, t_kind, t_hlen, i_fam, thlen)
    h.o_etype = etype
    h.hend = th + thlen
    return h


def header_sums(h: FrameHeaders) -> FrameHeaders:
    """Fill in ``h``'s header sums (``csum_partial`` of the outer IPv6, UDP, tunnel, inner Ethernet and inner
    IPv6 headers: what ``skb_gro_postpull_rcsum`` and ``skb_postpull_rcsum`` subtract), needed only while a
    checksum-complete value is carried. Returns ``h``."""
    buf = h.buf
    o, u, t, e, i = 14, h.u_off, h.t_off, h.e_off, h.i_off
    h.o_sum = csum_partial(buf, o, o + 40) if h.o_fam == 6 else 0xFFFF
    h.u_sum = csum_partial(buf, u, u + 8)
    h.t_sum = csum_partial(buf, t, t + h.t_hlen)
    h.e_sum = csum_partial(buf, e, e + 14)
    h.i_sum = csum_partial(buf, i, i + 40) if h.i_fam == 6 else 0xFFFF
    return h


def kernel_has_standard_offloads(k) -> bool:
    """True when ``k``'s offload tables hold the handlers ``ipv4_offload_init``/``ipv6_offload_init``/
    ``eth_offload_init`` register (the shortcut calls their bodies directly)."""
    ob, i4, i6 = k.offload_base, k.inet_offloads, k.inet6_offloads
    try:
        return (
            ob[ETH_P_IP].gro_receive is inet_gro_receive
            and ob[ETH_P_IPV6].gro_receive is ipv6_gro_receive
            and ob[ETH_P_TEB].gro_receive is eth_gro_receive
            and i4[17].gro_receive is udp4_gro_receive
            and i6[17].gro_receive is udp6_gro_receive
            and i4[6].gro_receive is tcp4_gro_receive
            and i6[6].gro_receive is tcp6_gro_receive
        )
    except KeyError:
        return False


def gro_receive_fast(k, head: list[SkBuff], skb: SkBuff, h: FrameHeaders):
    """Shortcut of ``ptype->callbacks.gro_receive(head, skb)`` in ``dev_gro_receive`` (see the module docstring).

    Returns ``pp`` (a held packet to complete, or None) as the reference chain would, or ``NOT_HANDLED`` without
    having changed anything.
    """
    cb = skb.cb
    if skb.buf is not h.buf or cb.flush or skb.gso_size or cb.data_offset or skb.tail < h.hend:
        return NOT_HANDLED
    data = skb.data
    if data == 14:
        if skb.protocol != h.o_etype:
            return NOT_HANDLED
        layout = h.layout
        for p in head:
            if p.cb.same_flow:
                pd = p.hdr
                if (
                    pd is None
                    or p.buf is not pd.buf
                    or p.data != 14
                    or pd.layout is not layout
                    or p.transport_header != pd.th
                ):
                    return NOT_HANDLED
        sk = k.udp_tunnel_sockets.get(h.u_dport)
        if sk is None or sk.gro_receive is not (
            vxlan_gro_receive if h.t_kind == _VXLAN else geneve_gro_receive
        ):
            return NOT_HANDLED
        return _outer_gro_receive(k, head, skb, h, cb, sk)
    if data == h.i_off:
        if skb.protocol != h.e_type:
            return NOT_HANDLED
        ilayout = h.ilayout
        for p in head:
            if p.cb.same_flow:
                pd = p.hdr
                if (
                    pd is None
                    or p.buf is not pd.buf
                    or p.data != pd.i_off
                    or pd.ilayout is not ilayout
                    or p.transport_header != pd.th
                ):
                    return NOT_HANDLED
        return _inner_gro_receive(k, head, skb, h, cb)
    return NOT_HANDLED


def _outer_gro_receive(k, head: list[SkBuff], skb: SkBuff, h: FrameHeaders, cb, sk) -> SkBuff | None:
    """inet/ipv6_gro_receive (outer) → udp4/6_gro_receive → udp_gro_receive → vxlan/geneve_gro_receive →
    eth_gro_receive, then the inner chain. The reference functions' statements, in order."""
    model = k.model
    off = 0
    base = skb.data
    # -- inet_gro_receive / ipv6_gro_receive (outer) -------------------------------------------------------------
    if h.o_fam == 4:
        proto = 17
        cb.proto = proto
        frag_off = h.o_frag
        flush = int((h.o_len != skb.len - off) or (frag_off & ~IP_DF & 0xFFFF) != 0)
        if flush:
            cb.why = R.INET_TOT_LEN
        addrs = h.o_addrs
        if model.l3_flush_in_tcp:
            for p in head:
                if not p.cb.same_flow:
                    continue
                pd = p.hdr
                if pd.o_proto != proto or pd.o_addrs != addrs:
                    p.cb.same_flow = 0
            cb.flush |= flush
        else:
            df = frag_off & IP_DF
            ttl = h.o_ttl
            tos = h.o_tos
            ip_id = h.o_id
            for p in head:
                pcb = p.cb
                if not pcb.same_flow:
                    continue
                pd = p.hdr
                if pd.o_proto != proto or pd.o_addrs != addrs:
                    pcb.same_flow = 0
                    continue
                # All fields must match except length and checksum.
                if pd.o_ttl != ttl or pd.o_tos != tos or (pd.o_frag & IP_DF) != df:
                    pcb.flush |= 1
                    pcb.why = R.IP_TTL_TOS_DF
                pcb.flush |= flush
                flush_id = (ip_id - pd.o_id) & 0xFFFF
                if not pcb.is_atomic or not df:
                    flush_id ^= pcb.count
                    flush_id = 0xFFFF if flush_id else 0
                # If the previous IP ID value was based on an atomic datagram we can overwrite it and ignore it.
                if cb.is_atomic:
                    pcb.flush_id = flush_id
                else:
                    pcb.flush_id |= flush_id
            cb.is_atomic = 1 if df else 0
            cb.flush |= flush
        cb.network_offsets[cb.encap_mark] = off
        skb.network_header = base
        off += 20
        cb.data_offset = off
        skb.transport_header = base + off
        # udp4_gro_receive
        cb.is_ipv6 = 0
    else:
        flush = 1
        cb.network_offsets[cb.encap_mark] = off
        skb.network_header = base
        own = int(h.o_len != skb.len - off - 40)
        flush += own
        proto = 17
        off += 40
        cb.data_offset = off
        skb.transport_header = base + off
        cb.proto = proto
        flush -= 1
        if own:
            cb.why = R.IPV6_PAYLOAD_LEN
        w1 = h.o_vtc
        addrs = h.o_addrs
        hop_limit = h.o_ttl
        hop_splits = not (model.ipv6_hop_limit_flushes or model.l3_flush_in_tcp)
        for p in head:
            pcb = p.cb
            if not pcb.same_flow:
                continue
            pd = p.hdr
            first_word = w1 ^ pd.o_vtc
            nh_differs = pd.o_proto != proto or (hop_splits and pd.o_ttl != hop_limit)
            if first_word & 0xF00FFFFF or pd.o_addrs != addrs or nh_differs:
                pcb.same_flow = 0
                continue
            if not model.l3_flush_in_tcp:
                tc_flush = first_word & 0x0FF00000
                if model.ipv6_hop_limit_flushes:
                    tc_flush |= pd.o_ttl ^ hop_limit
                if tc_flush:
                    pcb.flush |= 1
                    pcb.why = R.IPV6_TCLASS_HOPLIMIT
                pcb.flush |= flush
                if cb.is_atomic:
                    pcb.flush_id = 0
        cb.is_atomic = 1
        cb.flush |= flush
        if cb.csum_valid:  # skb_gro_postpull_rcsum
            hs = h if h.o_sum is not None else header_sums(h)
            c = cb.csum + (~hs.o_sum & 0xFFFF)
            cb.csum = (c & 0xFFFF) + (c >> 16)
        # udp6_gro_receive
        cb.is_ipv6 = 1
    # -- _udp_gro_receive_family ---------------------------------------------------------------------------------
    check = h.u_check
    if not cb.flush:
        s = h.o_addr + (skb.len - off) + 17
        psum = s % 0xFFFF or (0xFFFF if s else 0)
        # __skb_gro_checksum_validate(skb, zero_okay=True, check, psum)
        ret = 0
        if (
            (skb.ip_summed != CHECKSUM_PARTIAL or skb.csum_start - skb.data < off)
            and cb.csum_cnt == 0
            and check != 0
        ):
            if cb.csum_valid and _csum_verifies(psum, cb.csum):
                ret = 0
            else:
                cb.csum = psum
                ret = _gro_checksum_complete(skb, cb)
        if ret == 0:
            # skb_gro_incr_csum_unnecessary, __skb_incr_checksum_unnecessary
            if cb.csum_cnt > 0:
                cb.csum_cnt -= 1
            elif skb.ip_summed == CHECKSUM_UNNECESSARY:
                if skb.csum_level < SKB_MAX_CSUM_LEVEL:
                    skb.csum_level += 1
            elif skb.ip_summed == CHECKSUM_NONE:
                skb.ip_summed = CHECKSUM_UNNECESSARY
                skb.csum_level = 0
        if ret:
            cb.why = R.UDP_CSUM
            cb.flush = 1
            return None
        if check and cb.csum_cnt == 0 and not cb.csum_valid:  # skb_gro_checksum_try_convert
            cb.csum = ~psum & 0xFFFF
            cb.csum_valid = 1
    # -- udp_gro_receive ---------------------------------------------------------------------------------------
    pp = None
    flush = 1
    if cb.encap_mark:
        cb.why = R.UDP_ENCAP_MARK
    else:
        gate = skb.ip_summed != CHECKSUM_PARTIAL and cb.csum_cnt == 0 and not cb.csum_valid
        if model.udp_tunnel_gate_checks_uh_check:
            gate = gate and check != 0
        if gate:
            cb.why = R.UDP_GATE if check else R.UDP_GATE_ZERO_CSUM
        else:
            # mark that this skb passed once through the tunnel gro layer
            cb.encap_mark = 1
            flush = 0
            # The same_flow sweeps of udp_gro_receive (ports, zero checksum), vxlan_gro_receive /
            # geneve_gro_receive (the whole tunnel header) and eth_gro_receive (the inner Ethernet header), in one
            # pass: between them only the skb's own offsets and checksum change.
            ports = h.u_ports
            zero = check == 0
            t_hdr = h.t_hdr
            eh = h.e_hdr
            for p in head:
                pcb = p.cb
                if not pcb.same_flow:
                    continue
                pd = p.hdr
                if pd.u_ports != ports or zero != (pd.u_check == 0) or pd.t_hdr != t_hdr or pd.e_hdr != eh:
                    pcb.same_flow = 0
            # udp_gro_receive: skb_gro_pull(skb, 8), skb_gro_postpull_rcsum
            # vxlan_gro_receive: skb_gro_postpull_rcsum, skb_gro_pull(skb, 8); geneve_gro_receive (version 0, no
            # OAM, Ethernet inside: the FrameHeaders shape): skb_gro_pull(skb, gh_len), skb_gro_postpull_rcsum
            # eth_gro_receive: skb_gro_pull(skb, ETH_HLEN), skb_gro_postpull_rcsum
            off += 8 + h.t_hlen + 14
            cb.data_offset = off
            if cb.csum_valid:
                hs = h if h.o_sum is not None else header_sums(h)
                c = cb.csum + (~hs.u_sum & 0xFFFF)
                c = (c & 0xFFFF) + (c >> 16)
                c += ~hs.t_sum & 0xFFFF
                c = (c & 0xFFFF) + (c >> 16)
                c += ~hs.e_sum & 0xFFFF
                cb.csum = (c & 0xFFFF) + (c >> 16)
            pp = _inner_gro_receive(k, head, skb, h, cb)
            # geneve_gro_receive and eth_gro_receive end with cb.flush |= 0 here (they continued)
    cb.flush |= flush
    return pp


def _csum_verifies(psum: int, csum: int) -> bool:
    """``csum_fold(csum_add(psum, csum)) == 0``."""
    s = psum + csum
    return (s & 0xFFFF) + (s >> 16) == 0xFFFF


def _gro_checksum_complete(skb: SkBuff, cb) -> int:
    """``__skb_gro_checksum_complete`` (gro.py) with ``SkBuff.checksum``'s poll-batch shortcut written inline."""
    off = cb.data_offset
    start = skb.data + off
    buf = skb.buf
    ps = skb.psums
    wsum = 0
    if ps is not None and not skb.frags and skb.tail == len(buf) and start >= 14 and not (start - 14) & 1:
        j = skb.pidx
        if buf is ps.bufs[j]:
            sums = ps.sums
            if sums is None:
                sums = ps.fill()
            wsum = (sums[j] - int.from_bytes(buf[14:start], "big")) % 0xFFFF
    if not wsum:
        wsum = skb.checksum(start)
    s = cb.csum + wsum
    verdict = ~((s & 0xFFFF) + (s >> 16)) & 0xFFFF
    skb.dev.napi.stats.sw_csum_bytes += skb.len - off
    cb.csum = wsum
    cb.csum_valid = 1
    return verdict


def _inner_gro_receive(k, head: list[SkBuff], skb: SkBuff, h: FrameHeaders, cb) -> SkBuff | None:
    """inet_gro_receive / ipv6_gro_receive of the inner header → tcp4/6_gro_receive → tcp_gro_receive."""
    model = k.model
    off = cb.data_offset
    base = skb.data + off
    if h.i_fam == 4:
        proto = 6
        cb.proto = proto
        frag_off = h.i_frag
        flush = int((h.i_len != skb.len - off) or (frag_off & ~IP_DF & 0xFFFF) != 0)
        if flush:
            cb.why = R.INET_TOT_LEN
        addrs = h.i_addrs
        if model.l3_flush_in_tcp:
            for p in head:
                if not p.cb.same_flow:
                    continue
                pd = p.hdr
                if pd.i_proto != proto or pd.i_addrs != addrs:
                    p.cb.same_flow = 0
            cb.flush |= flush
        else:
            df = frag_off & IP_DF
            ttl = h.i_ttl
            tos = h.i_tos
            ip_id = h.i_id
            for p in head:
                pcb = p.cb
                if not pcb.same_flow:
                    continue
                pd = p.hdr
                if pd.i_proto != proto or pd.i_addrs != addrs:
                    pcb.same_flow = 0
                    continue
                # All fields must match except length and checksum.
                if pd.i_ttl != ttl or pd.i_tos != tos or (pd.i_frag & IP_DF) != df:
                    pcb.flush |= 1
                    pcb.why = R.IP_TTL_TOS_DF
                pcb.flush |= flush
                flush_id = (ip_id - pd.i_id) & 0xFFFF
                if not pcb.is_atomic or not df:
                    flush_id ^= pcb.count
                    flush_id = 0xFFFF if flush_id else 0
                # If the previous IP ID value was based on an atomic datagram we can overwrite it and ignore it.
                if cb.is_atomic:
                    pcb.flush_id = flush_id
                else:
                    pcb.flush_id |= flush_id
            cb.is_atomic = 1 if df else 0
            cb.flush |= flush
        cb.network_offsets[cb.encap_mark] = off
        skb.network_header = base
        off += 20
        cb.data_offset = off
        skb.transport_header = skb.data + off
        # tcp4_gro_receive: pseudo header over the IPv4 addresses
        pseudo_addr = h.i_addr
    else:
        flush = 1
        cb.network_offsets[cb.encap_mark] = off
        skb.network_header = base
        own = int(h.i_len != skb.len - off - 40)
        flush += own
        proto = 6
        off += 40
        cb.data_offset = off
        skb.transport_header = base + 40
        cb.proto = proto
        flush -= 1
        if own:
            cb.why = R.IPV6_PAYLOAD_LEN
        w1 = h.i_vtc
        addrs = h.i_addrs
        hop_limit = h.i_ttl
        hop_splits = not (model.ipv6_hop_limit_flushes or model.l3_flush_in_tcp)
        for p in head:
            pcb = p.cb
            if not pcb.same_flow:
                continue
            pd = p.hdr
            first_word = w1 ^ pd.i_vtc
            nh_differs = pd.i_proto != proto or (hop_splits and pd.i_ttl != hop_limit)
            if first_word & 0xF00FFFFF or pd.i_addrs != addrs or nh_differs:
                pcb.same_flow = 0
                continue
            if not model.l3_flush_in_tcp:
                tc_flush = first_word & 0x0FF00000
                if model.ipv6_hop_limit_flushes:
                    tc_flush |= pd.i_ttl ^ hop_limit
                if tc_flush:
                    pcb.flush |= 1
                    pcb.why = R.IPV6_TCLASS_HOPLIMIT
                pcb.flush |= flush
                if cb.is_atomic:
                    pcb.flush_id = 0
        cb.is_atomic = 1
        cb.flush |= flush
        if cb.csum_valid:  # skb_gro_postpull_rcsum
            hs = h if h.o_sum is not None else header_sums(h)
            c = cb.csum + (~hs.i_sum & 0xFFFF)
            cb.csum = (c & 0xFFFF) + (c >> 16)
        # tcp6_gro_receive: pseudo header over the IPv6 addresses
        pseudo_addr = h.i_addr
    # -- tcp4_gro_receive / tcp6_gro_receive ---------------------------------------------------------------------
    # Don't bother verifying checksum if we're going to flush anyway.
    if not cb.flush:
        s = pseudo_addr + (skb.len - off) + 6
        psum = s % 0xFFFF or (0xFFFF if s else 0)
        # __skb_gro_checksum_validate(skb, zero_okay=False, 0, psum)
        ret = 0
        if (skb.ip_summed != CHECKSUM_PARTIAL or skb.csum_start - skb.data < off) and cb.csum_cnt == 0:
            if cb.csum_valid and _csum_verifies(psum, cb.csum):
                ret = 0
            else:
                cb.csum = psum
                ret = _gro_checksum_complete(skb, cb)
        if ret == 0:
            # skb_gro_incr_csum_unnecessary, __skb_incr_checksum_unnecessary
            if cb.csum_cnt > 0:
                cb.csum_cnt -= 1
            elif skb.ip_summed == CHECKSUM_UNNECESSARY:
                if skb.csum_level < SKB_MAX_CSUM_LEVEL:
                    skb.csum_level += 1
            elif skb.ip_summed == CHECKSUM_NONE:
                skb.ip_summed = CHECKSUM_UNNECESSARY
                skb.csum_level = 0
        if ret:
            cb.why = R.TCP_CSUM
            cb.flush = 1
            return None
    # -- tcp_gro_receive, with the segment's and the held packets' TCP fields from their FrameHeaders ------------
    thlen = h.thlen
    off += thlen
    cb.data_offset = off
    length = skb.len - off
    flags = h.th_flags  # tcp_flag_word(th): doff | flags | window
    seq = h.th_seq
    mss = 1
    flush = 1
    pp = None
    ports = h.th_ports

    p = None
    for q in head:
        if not q.cb.same_flow:
            continue
        if q.hdr.th_ports != ports:
            q.cb.same_flow = 0
            continue
        p = q
        break

    if p is not None:
        pcb = p.cb
        pd = p.hdr
        why = None
        flush = 0
        if not model.l3_flush_in_tcp and pcb.flush:
            flush = 1
            why = pcb.why if pcb.why and pcb.why.startswith(("inet", "ipv6")) else R.IP_FLUSH
        if not model.tcp_gro_cwr_no_flush and flags & TCP_FLAG_CWR:
            flush = 1
            why = why or R.TCP_CWR
        # CWR is compared with the other flags from 4e4f7cefb130 (AccECN: part of the ACE counter)
        same_mask = _FLAGS_MUST_MATCH if model.tcp_gro_compares_cwr else _FLAGS_MUST_MATCH_PRE_ACCECN
        if (flags ^ pd.th_flags) & same_mask:
            flush = 1
            why = why or R.TCP_FLAGS_DIFFER
        if h.th_ack != pd.th_ack:
            flush = 1
            why = why or R.TCP_ACK
        if thlen > 20 and h.th_opts != pd.th_opts:
            flush = 1
            why = why or R.TCP_OPTIONS
        if model.l3_flush_in_tcp:
            if _network_flush(skb, p):
                flush = 1
                why = why or R.IP_FLUSH
        else:
            # When we receive our second frame we can made a decision on if we continue this flow as an
            # atomic flow with a fixed ID or if we use an incrementing ID.
            if pcb.flush_id != 1 or pcb.count != 1 or not pcb.is_atomic:
                if pcb.flush_id:
                    flush = 1
                    why = why or R.IP_ID
            else:
                pcb.is_atomic = 0
        mss = p.gso_size
        if ((length - 1) & 0xFFFFFFFF) >= mss:
            flush = 1
            why = why or (R.TCP_PURE_ACK if length == 0 else R.TCP_LEN_GT_MSS)
        if (pd.th_seq + (p.len - pcb.data_offset)) & 0xFFFFFFFF != seq:
            flush = 1
            why = why or R.TCP_SEQ
        if flush or skb_gro_receive(p, skb):
            mss = 1
            if flush:
                cb.why = why
        elif flags & (TCP_FLAG_FIN | TCP_FLAG_PSH):
            pbuf = p.buf
            if not isinstance(pbuf, bytearray):
                p.buf = pbuf = bytearray(pbuf)
            pbuf[p.transport_header + 13] |= (flags >> 16) & 0x09

    # out_check_final: force a flush if the last segment is smaller than mss.
    final = int(length < mss)
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
            p.cb.why = cb.why
            pp = p
            if final:
                cb.why = tag
    elif final:
        cb.why = tag
    cb.flush |= final
    return pp
