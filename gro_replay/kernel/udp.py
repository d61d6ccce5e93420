"""The normal (non-GRO) receive path from the physical device up to a UDP tunnel socket.

Kernel: net/ipv4/ip_input.c ``ip_rcv_core`` / ``ip_local_deliver_finish``; net/ipv6/ip6_input.c ``ipv6_rcv``;
net/ipv4/udp.c ``__udp4_lib_rcv``, ``udp4_csum_init``, ``udp_unicast_rcv_skb``, ``udp_queue_rcv_one_skb``;
include/linux/skbuff.h ``__skb_checksum_validate`` family. gro-spec §4.2, §6.1.
Left out: routing, netfilter, IP fragment reassembly (fragments are counted and dropped), socket lookup beyond
the tunnel port table, UDP-Lite, ICMP errors.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from ..packet.csum import csum_add, csum_fold, csum_partial, csum_sub, ip_fast_csum, pseudo_at
from . import drop_reasons as D
from .ip6_offload import NEXTHDR_HOP, ipv6_gso_pull_exthdrs
from .reassembly import FRAG_HDR_LEN, NEXTHDR_FRAGMENT, ipv6_frag_atomic
from .skbuff import (
    CHECKSUM_BREAK,
    CHECKSUM_COMPLETE,
    CHECKSUM_NONE,
    ETH_P_IP,
    ETH_P_IPV6,
    SkBuff,
    __skb_checksum_complete,
    __skb_decr_checksum_unnecessary,
    skb_csum_unnecessary,
)
from .udp_tunnel import UdpTunnelSock

_IPH = struct.Struct("!BBHHHBB")  # struct iphdr up to protocol: ver_ihl tos tot_len id frag_off ttl protocol
_UDPH = struct.Struct("!HHHH")  # struct udphdr: source dest len check


def pskb_trim_rcsum(skb: SkBuff, length: int) -> None:
    """Trim the skb to ``length`` bytes, keeping a COMPLETE checksum right. Kernel: ``pskb_trim_rcsum``."""
    delta = skb.len - length
    if delta <= 0:
        return
    if skb.frags:
        return  # aggregates carry no padding: their IP length was rewritten by the gro_complete chain
    if skb.ip_summed == CHECKSUM_COMPLETE:
        skb.csum = csum_sub(skb.csum, _sum_at(skb, skb.data + length, skb.tail))
    skb.tail = skb.data + length
    skb.len = length


def _sum_at(skb: SkBuff, start: int, end: int) -> int:
    s = csum_partial(skb.buf, start, end)
    if (start - skb.data) & 1:
        s = ((s << 8) | (s >> 8)) & 0xFFFF
    return s


def _hop_not_first(buf: bytes | bytearray, pos: int, proto: int, first: bool) -> bool:
    """Whether the IPv6 extension headers from ``buf[pos]`` (next header ``proto``; ``first``: right after the IPv6
    header) hold a hop-by-hop header anywhere but first: ``ipv6_rcv`` parses one there only, and
    ``ip6_input_finish`` finds no handler for NEXTHDR_HOP elsewhere (ICMP parameter problem, drop). Walked as
    ``ipv6_gso_pull_exthdrs`` walks them (the caller checked them whole)."""
    while proto == NEXTHDR_HOP or proto in (43, 60):
        if proto == NEXTHDR_HOP and not first:
            return True
        first = False
        proto, pos = buf[pos], pos + (buf[pos + 1] + 1) * 8
    return False


def _ipv6_exthdrs(skb: SkBuff, nh: int) -> tuple[int, int] | str:
    """``(upper-layer protocol, its absolute offset)`` past the extension headers of the IPv6 header at
    ``skb.buf[nh]``, as ``ip6_input_finish`` steps through them, or a drop reason: a header that cannot be walked, a
    hop-by-hop header anywhere but first (``_hop_not_first``), a fragment (reassembly is not modelled) or a
    second fragment header. One fragment header that fragments nothing is stepped past (kernel/reassembly.py
    ``ipv6_frag_atomic``: ``ipv6_frag_rcv`` sets IP6SKB_FRAGMENTED, and a second fragment header fails)."""
    buf = skb.buf
    proto, l4 = ipv6_gso_pull_exthdrs(skb, nh + 40, buf[nh + 6])
    if proto >= 0 and _hop_not_first(buf, nh + 40, buf[nh + 6], True):
        return D.IP6_BAD_EXTHDR
    if proto == NEXTHDR_FRAGMENT and l4 + FRAG_HDR_LEN <= skb.tail and ipv6_frag_atomic(buf, l4):
        nxt, after = buf[l4], l4 + FRAG_HDR_LEN
        proto, l4 = ipv6_gso_pull_exthdrs(skb, after, nxt)
        if proto == NEXTHDR_FRAGMENT or (proto >= 0 and _hop_not_first(buf, after, nxt, False)):
            return D.IP6_BAD_EXTHDR
    if proto == NEXTHDR_FRAGMENT:
        return D.IP6_FRAGMENT
    if proto < 0:
        return D.IP6_BAD_EXTHDR
    return proto, l4


def ip_rcv(skb: SkBuff) -> tuple[int, int] | str:
    """IPv4/IPv6 input up to local delivery: header checks, trim, pull to the transport header.

    Kernel: ``ip_rcv_core`` + ``ip_local_deliver_finish`` / ``ipv6_rcv`` + ``ip6_input_finish``.
    Returns ``(protocol, family)`` with ``skb->data`` at the L4 header and ``skb->network_header`` at the IP
    header, or a drop reason string.
    """
    buf = skb.buf
    nh = skb.data
    skb.network_header = nh
    if skb.protocol == ETH_P_IP:
        if skb.headlen() < 20:
            return D.IP_RCV_SHORT
        ver_ihl, _tos, tot_len, _id, frag_off, _ttl, protocol = _IPH.unpack_from(buf, nh)
        ihl = (ver_ihl & 0x0F) * 4
        if ver_ihl >> 4 != 4 or ihl < 20 or skb.headlen() < ihl:
            return D.IP_RCV_BAD_HEADER
        if ip_fast_csum(buf, nh, ihl >> 2):
            return D.IP_RCV_CSUM_ERROR
        if skb.len < tot_len or tot_len < ihl:
            return D.IP_RCV_BAD_LENGTH
        pskb_trim_rcsum(skb, tot_len)
        if frag_off & 0x3FFF:  # ip_is_fragment: MF or a fragment offset
            return D.IP_FRAGMENT
        skb.pull(ihl)  # a valid IPv4 header sums to zero: no checksum adjustment
        skb.transport_header = skb.data
        return protocol, 4
    if skb.protocol == ETH_P_IPV6:
        if skb.headlen() < 40 or buf[nh] >> 4 != 6:
            return D.IPV6_RCV_BAD_HEADER
        plen = (buf[nh + 4] << 8) | buf[nh + 5]
        if plen + 40 > skb.len:
            return D.IPV6_RCV_BAD_LENGTH
        pskb_trim_rcsum(skb, plen + 40)
        walked = _ipv6_exthdrs(skb, nh)
        if isinstance(walked, str):
            return walked
        proto, l4 = walked
        start = skb.data
        skb.pull(l4 - nh)
        if skb.ip_summed == CHECKSUM_COMPLETE:
            skb.csum = csum_sub(skb.csum, csum_partial(buf, start, l4))
        skb.transport_header = skb.data
        return proto, 6
    return D.NOT_IP


def inet_compute_pseudo(skb: SkBuff, proto: int) -> int:
    """Pseudo-header sum over the IPv4 header's addresses, ``skb->len`` and ``proto`` (not complemented).

    Kernel: include/net/ip.h ``inet_compute_pseudo`` (``csum_tcpudp_nofold`` of ``ip_hdr(skb)``'s addresses).
    """
    return pseudo_at(skb.buf, skb.network_header + 12, 8, skb.len, proto)


def ip6_compute_pseudo(skb: SkBuff, proto: int) -> int:
    """IPv6 variant. Kernel: include/net/ip6_checksum.h ``ip6_compute_pseudo`` (``csum_ipv6_magic``)."""
    return pseudo_at(skb.buf, skb.network_header + 8, 32, skb.len, proto)


def __skb_checksum_validate(
    skb: SkBuff,
    proto: int,
    complete: bool,
    zero_okay: bool,
    check: int,
    compute_pseudo: Callable[[SkBuff, int], int],
) -> int:
    """Normal-path checksum init/validate; returns 0 when good or deferred.

    Kernel: include/linux/skbuff.h ``__skb_checksum_validate`` (+ ``_needed``, ``_complete``): clears
    ``csum_valid``; UNNECESSARY (or a zero checksum when allowed) is "not needed" and consumes one level;
    COMPLETE is checked against ``skb->csum``; otherwise ``csum`` := pseudo and the sum is done now only when
    ``complete`` or the packet is at most CHECKSUM_BREAK (76) bytes. ``compute_pseudo(skb, proto)`` is called
    only when the checksum is checked, as the kernel's macro does.
    """
    skb.csum_valid = 0
    if skb_csum_unnecessary(skb) or (zero_okay and not check):
        skb.csum_valid = 1
        __skb_decr_checksum_unnecessary(skb)
        return 0
    psum = compute_pseudo(skb, proto)
    if skb.ip_summed == CHECKSUM_COMPLETE and csum_fold(csum_add(psum, skb.csum)) == 0:
        skb.csum_valid = 1
        return 0
    skb.csum = psum
    if complete or skb.len <= CHECKSUM_BREAK:
        verdict = __skb_checksum_complete(skb, skb.data)
        return verdict
    return 0


def udp_rcv(skb: SkBuff, family: int, sockets: dict[int, UdpTunnelSock]) -> tuple[UdpTunnelSock | str, int]:
    """UDP input: length checks, trim, ``udp4_csum_init``, socket lookup, convert, encap checksum check.

    Kernel: net/ipv4/udp.c ``__udp4_lib_rcv`` → ``udp_unicast_rcv_skb`` → ``udp_queue_rcv_one_skb`` (same steps
    in net/ipv6/udp.c); ``family`` (4 or 6) is the IP header's at ``skb->network_header``. Returns ``(tunnel
    socket, software-summed bytes)`` with ``skb->data`` at the UDP header, or ``(drop reason string,
    software-summed bytes)`` ("udp_rcv:no_socket" for non-tunnel datagrams): bytes summed before a checksum drop
    count as work done.
    """
    buf = skb.buf
    u = skb.data
    if skb.headlen() < 8:
        return D.UDP_SHORT, 0
    _source, dest, ulen, check = _UDPH.unpack_from(buf, u)
    if family == 6 and ulen == 0:
        ulen = skb.len  # __udp6_lib_rcv: a length of 0 is a jumbo payload's, the datagram's own length stands
    if ulen > skb.len or ulen < 8:
        return D.UDP_SHORT_PACKET, 0
    pskb_trim_rcsum(skb, ulen)
    compute_pseudo = inet_compute_pseudo if family == 4 else ip6_compute_pseudo
    sw = 0
    # udp4_csum_init: skb_checksum_init_zero_check
    before = skb.csum_complete_sw
    verdict = __skb_checksum_validate(skb, 17, False, True, check, compute_pseudo)
    if skb.csum_complete_sw and not before:
        sw += skb.len
    if verdict:
        return D.UDP_CSUM_ERROR, sw
    if skb.ip_summed == CHECKSUM_COMPLETE and not skb.csum_valid:
        if skb.csum_complete_sw:
            return D.UDP_CSUM_ERROR, sw
        skb.ip_summed = CHECKSUM_NONE  # skb_checksum_complete_unset: hardware said bad, check in software
    sk = sockets.get(dest)
    if sk is None:
        return D.UDP_NO_SOCKET, sw
    if family == 6 and not check and not sk.no_check6_rx:
        # __udp6_lib_rcv: a zero UDPv6 checksum only for sockets with no_check6_rx (udp6zerocsumrx), RFC 6936
        return D.UDP6_CSUM_ZERO, sw
    # udp_unicast_rcv_skb: every UDP tunnel socket has convert_csum (setup_udp_tunnel_sock);
    # skb_checksum_try_convert
    if check and skb.ip_summed == CHECKSUM_NONE and skb.csum_valid:
        skb.csum = ~compute_pseudo(skb, 17) & 0xFFFF
        skb.ip_summed = CHECKSUM_COMPLETE
    # udp_queue_rcv_one_skb: verify checksum before giving to encap
    if not skb_csum_unnecessary(skb):
        verdict = __skb_checksum_complete(skb, skb.data)
        sw += skb.len
        if verdict:
            return D.UDP_CSUM_ERROR, sw
    return sk, sw


__all__ = ["ETH_P_IP", "ETH_P_IPV6", "ip_rcv", "udp_rcv", "pskb_trim_rcsum"]
