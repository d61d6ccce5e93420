"""Fast path: a shortcut of the receive path between the two GRO stages for the common frame shape.

``netif_receive_skb_core_fast`` is a labelled shortcut of ``Kernel.netif_receive_skb_core`` (kernel.py): ``ip_rcv``
→ ``udp_rcv`` → ``vxlan_rcv`` / ``geneve_udp_encap_recv`` → ``Kernel.udp_tunnel_decap`` → ``gro_cells_receive``
(udp.py, vxlan_core.py, geneve.py, kernel.py, gro_cells.py), for a single-segment skb of a frame whose
``gro_fast.FrameHeaders`` hold (outer IPv4 without options, not a fragment, with a good header checksum, or
IPv6 without extension headers; UDP to a VXLAN or Geneve socket). Every statement of those functions is kept in
their order; the header fields come from the frame's ``FrameHeaders`` and the helper calls (``skb_headlen``,
``__skb_pull``, ``pskb_trim_rcsum`` when nothing is trimmed, ``skb_csum_unnecessary``,
``__skb_checksum_validate``, ``__skb_decr_checksum_unnecessary``, ``skb_postpull_rcsum``) are written inline.
Checks that the frame's shape already answers (IPv4 version, IHL and header checksum, fragment bits, the next
protocol) are noted, not repeated. When the skb is not of that shape (an aggregate, a changed buffer, another
encapsulation socket), the function returns ``NOT_HANDLED`` before changing anything and the reference path runs.
tests/test_fastpath.py runs both paths on seeded random scenarios and requires identical output.

Kernel: net/ipv4/ip_input.c ``ip_rcv_core``; net/ipv6/ip6_input.c ``ipv6_rcv``; net/ipv4/udp.c ``__udp4_lib_rcv``;
drivers/net/vxlan ``vxlan_rcv``; drivers/net/geneve.c ``geneve_udp_encap_recv``; net/core/gro_cells.c
``gro_cells_receive`` (versions as in those modules).
"""

from __future__ import annotations

from ..packet.csum import csum_add, csum_fold, csum_partial
from .dst_metadata import TUNNEL_KEY, udp_tun_rx_dst
from .geneve import geneve_tun_flags, geneve_udp_encap_recv
from .gro import NOT_HANDLED
from .gro_fast import _VXLAN, FrameHeaders, header_sums
from .skbuff import (
    CHECKSUM_BREAK,
    CHECKSUM_COMPLETE,
    CHECKSUM_NONE,
    CHECKSUM_PARTIAL,
    CHECKSUM_UNNECESSARY,
    ETH_HLEN,
    ETH_P_IP,
    ETH_P_IPV6,
    SKB_GSO_UDP_TUNNEL,
    SKB_GSO_UDP_TUNNEL_CSUM,
    SkBuff,
    __skb_checksum_complete,
)
from .udp import pskb_trim_rcsum
from .vxlan_core import VXLAN_HF_VNI, VXLAN_HLEN, vxlan_rcv

INET_ECN_MASK = 3
INET_ECN_CE = 3
#: the encap_rcv of a tunnel socket of each ``FrameHeaders.t_kind`` (VXLAN, Geneve)
_ENCAP_RCV = (vxlan_rcv, geneve_udp_encap_recv)


def netif_receive_skb_core_fast(k, skb: SkBuff, h: FrameHeaders):
    """Shortcut of ``Kernel.netif_receive_skb_core(skb)`` (see the module docstring).

    Returns ``(outcome, software-summed bytes)`` as the reference does, or ``NOT_HANDLED`` having changed nothing.
    """
    buf = skb.buf
    if buf is not h.buf or skb.data != 14 or skb.frags or skb.tail != len(buf):
        return NOT_HANDLED
    if skb.protocol != (ETH_P_IP if h.o_fam == 4 else ETH_P_IPV6):
        return NOT_HANDLED
    sk = k.udp_tunnel_sockets.get(h.u_dport)
    if sk is not None and sk.encap_rcv is not _ENCAP_RCV[h.t_kind]:
        return NOT_HANDLED
    # -- ip_rcv ------------------------------------------------------------------------------------------------
    nh = 14
    skb.network_header = nh
    if h.o_fam == 4:
        # headlen >= 20, version 4, ihl 5, ip_fast_csum: the FrameHeaders shape
        tot_len = h.o_len
        if skb.len < tot_len or tot_len < 20:
            return "ip_rcv:bad_length", 0
        if skb.len > tot_len:
            pskb_trim_rcsum(skb, tot_len)
        # not a fragment: the FrameHeaders shape
        skb.data += 20  # __skb_pull: a valid IPv4 header sums to zero: no checksum adjustment
        skb.len -= 20
        skb.transport_header = skb.data
        family = 4
    else:
        # headlen >= 40, version 6: the FrameHeaders shape
        plen = h.o_len
        if plen + 40 > skb.len:
            return "ipv6_rcv:bad_length", 0
        if skb.len > plen + 40:
            pskb_trim_rcsum(skb, plen + 40)
        # no extension headers: the FrameHeaders shape
        skb.data += 40
        skb.len -= 40
        if skb.ip_summed == CHECKSUM_COMPLETE:
            hs = h if h.o_sum is not None else header_sums(h)
            skb.csum = csum_add(skb.csum, ~hs.o_sum & 0xFFFF)
        skb.transport_header = skb.data
        family = 6
    # ip_local_deliver: protocol 17, the FrameHeaders shape
    # -- udp_rcv ------------------------------------------------------------------------------------------------
    u = skb.data
    if skb.tail - u < 8:
        return "udp_rcv:short", 0
    ulen = h.u_len
    check = h.u_check
    if ulen > skb.len or ulen < 8:
        return "udp_rcv:short_packet", 0
    if skb.len > ulen:
        pskb_trim_rcsum(skb, ulen)
    s = h.o_addr + skb.len + 17
    psum = s % 0xFFFF or (0xFFFF if s else 0)
    sw = 0
    # udp4_csum_init: skb_checksum_init_zero_check
    before = skb.csum_complete_sw
    # __skb_checksum_validate(skb, complete=False, zero_okay=True, check, psum)
    skb.csum_valid = 0
    ip_summed = skb.ip_summed
    if (
        ip_summed == CHECKSUM_UNNECESSARY
        or (ip_summed == CHECKSUM_PARTIAL and skb.csum_start >= skb.data)
        or not check
    ):
        skb.csum_valid = 1
        if ip_summed == CHECKSUM_UNNECESSARY:  # __skb_decr_checksum_unnecessary
            if skb.csum_level == 0:
                skb.ip_summed = CHECKSUM_NONE
            else:
                skb.csum_level -= 1
        verdict = 0
    elif ip_summed == CHECKSUM_COMPLETE and csum_fold(csum_add(psum, skb.csum)) == 0:
        skb.csum_valid = 1
        verdict = 0
    else:
        skb.csum = psum
        verdict = __skb_checksum_complete(skb, skb.data) if skb.len <= CHECKSUM_BREAK else 0
    if skb.csum_complete_sw and not before:
        sw += skb.len
    if verdict:
        return "udp_rcv:csum_error", sw
    if skb.ip_summed == CHECKSUM_COMPLETE and not skb.csum_valid:
        if skb.csum_complete_sw:
            return "udp_rcv:csum_error", sw
        skb.ip_summed = CHECKSUM_NONE  # skb_checksum_complete_unset: hardware said bad, check in software
    if sk is None:
        return "udp_rcv:no_socket", sw
    if family == 6 and not check and not sk.no_check6_rx:
        # __udp6_lib_rcv: a zero UDPv6 checksum only for sockets with no_check6_rx (udp6zerocsumrx), RFC 6936
        return "udp6_csum_zero_error", sw
    # udp_unicast_rcv_skb: every UDP tunnel socket has convert_csum (setup_udp_tunnel_sock)
    if check and skb.ip_summed == CHECKSUM_NONE and skb.csum_valid:
        skb.csum = ~psum & 0xFFFF
        skb.ip_summed = CHECKSUM_COMPLETE
    # udp_queue_rcv_one_skb: verify checksum before giving to encap
    ip_summed = skb.ip_summed
    if not (
        ip_summed == CHECKSUM_UNNECESSARY
        or skb.csum_valid
        or (ip_summed == CHECKSUM_PARTIAL and skb.csum_start >= skb.data)
    ):
        verdict = __skb_checksum_complete(skb, skb.data)
        sw += skb.len
        if verdict:
            return "udp_rcv:csum_error", sw
    # -- vxlan_rcv / geneve_udp_encap_recv ----------------------------------------------------------------------
    headlen = skb.tail - u
    if h.t_kind == _VXLAN:
        if headlen < VXLAN_HLEN + ETH_HLEN:
            return "vxlan_rcv:short", sw
        flags = h.t_a
        vni_word = h.t_b
        if not flags & VXLAN_HF_VNI:
            return "vxlan_rcv:no_vni_flag", sw
        if flags & ~VXLAN_HF_VNI or vni_word & 0xFF:
            # any unprocessed flag or reserved bit is a malformed packet (no GBP/GPE/RCO configured)
            return "vxlan_rcv:reserved_bits", sw
        hdr_len = VXLAN_HLEN
        vni = vni_word >> 8
        opts = b""
        tun_flags = TUNNEL_KEY
    else:
        if headlen < 8 + 8:
            return "geneve_rx:short", sw
        # version 0 and Ethernet inside: the FrameHeaders shape
        hdr_len = 8 + h.t_hlen
        if headlen < hdr_len + ETH_HLEN:
            return "geneve_rx:short", sw
        vni = h.t_a
        opts = h.t_b
        tun_flags = geneve_tun_flags(buf[u + 9])
    # -- Kernel.udp_tunnel_decap -------------------------------------------------------------------------------
    outer_tos = h.o_tos if family == 4 else (h.o_vtc >> 20) & 0xFF
    md = (
        udp_tun_rx_dst(k.model, buf, skb.network_header, u, tun_flags, vni, opts)
        if k.tunnel_metadata
        else None
    )
    # skb_pull_rcsum(skb, hdr_len)
    start = skb.data
    skb.data += hdr_len
    skb.len -= hdr_len
    ip_summed = skb.ip_summed
    if ip_summed == CHECKSUM_COMPLETE:
        skb.csum = csum_add(skb.csum, ~csum_partial(buf, start, start + hdr_len) & 0xFFFF)
    elif ip_summed == CHECKSUM_PARTIAL and skb.csum_start < skb.data:
        skb.ip_summed = CHECKSUM_NONE
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
    e = skb.data
    skb.mac_header = e
    skb.protocol = h.e_type
    skb.data = e + ETH_HLEN
    skb.len -= ETH_HLEN
    ip_summed = skb.ip_summed
    if ip_summed == CHECKSUM_COMPLETE:
        hs = h if h.o_sum is not None else header_sums(h)
        skb.csum = csum_add(skb.csum, ~hs.e_sum & 0xFFFF)
    elif ip_summed == CHECKSUM_PARTIAL and skb.csum_start < skb.data:
        skb.ip_summed = CHECKSUM_NONE
    if outer_tos & INET_ECN_MASK == INET_ECN_CE:  # INET_ECN_decapsulate only acts on a CE outer header
        reason = k._ecn_decapsulate(skb, outer_tos)
        if reason:
            return reason, sw
    if not sk.cells.gro_cells_receive(skb):
        return "gro_cells_receive:backlog_full", sw
    return "queued", sw
