"""Outer UDP GRO and the tunnel gate that 89e5c58fc1e2 changed.

Kernel: net/ipv4/udp_offload.c ``udp4_gro_receive``, ``udp_gro_receive``, ``udp4_gro_complete``,
``udp_gro_complete``; net/ipv6/udp_offload.c ``udp6_gro_receive``, ``udp6_gro_complete``. Versions: v5.10.13 text
(pre-fix gate, gro-spec §4.3–4.4); 89e5c58fc1e2 (v5.12-rc2, switch ``udp_tunnel_gate_checks_uh_check``) adds
``uh->check`` to the gate's checksum clause (§4.5); 18f25dc39990 (v5.13) reshapes the branches without changing
the outcome for tunnel sockets (§4.6).
Left out: plain UDP GRO (UDP_GRO sockets, fraglist GRO, NETIF_F_GRO_UDP_FWD: all off by default, so a UDP
datagram without a tunnel socket is flushed), remote checksum offload.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from ..packet.csum import pseudo4, pseudo6
from . import reasons as R
from .af_inet import inet_gro_network_pseudo
from .gro import call_gro_receive_sk, skb_gro_header_ok, skb_gro_pull
from .gro_csum import __skb_gro_checksum_validate, skb_gro_checksum_try_convert, skb_gro_postpull_rcsum
from .ip6_offload import ip6_gro_network_pseudo
from .netdevice import TunnelSockGro
from .skbuff import CHECKSUM_PARTIAL, SKB_GSO_UDP_TUNNEL, SKB_GSO_UDP_TUNNEL_CSUM, SkBuff

_UDPH = struct.Struct("!HHHH")


def _udp_gro_receive_family(
    head: list[SkBuff], skb: SkBuff, pseudo: Callable[[SkBuff, int], int]
) -> SkBuff | None:
    cb = skb.cb
    off = cb.data_offset
    if not skb_gro_header_ok(skb, off + 8):
        R.skb_flush_reason(cb, R.TRUNCATED)
        cb.flush = 1
        return None
    sport, dport, _ulen, check = _UDPH.unpack_from(skb.buf, skb.data + off)
    sk = skb.dev.kernel.udp_tunnel_sockets.get(dport)
    # Don't bother verifying checksum if we're going to flush anyway.
    if not cb.flush:
        if __skb_gro_checksum_validate(skb, 17, True, check, pseudo):
            cb.why = R.at_header(R.UDP_CSUM, cb.encap_mark)
            cb.flush = 1
            return None
        if check:
            skb_gro_checksum_try_convert(skb, 17, pseudo)
    elif check == 0 and sk is not None and not cb.encap_mark:
        # observation only: the gate below reads csum_cnt as the NIC left it, where validating the zero checksum
        # would have consumed one CHECKSUM_UNNECESSARY level (skb_gro_incr_csum_unnecessary)
        cb.gate_unvalidated = True
    if check == 0 and sk is not None and not cb.encap_mark:
        cb.gate_reached = True  # observation only: the gate below reads this skb
    return udp_gro_receive(head, skb, sport, dport, check, sk)


def udp4_gro_receive(head: list[SkBuff], skb: SkBuff) -> SkBuff | None:
    """IPv4 UDP: validate the checksum (zero allowed), try-convert, find the tunnel socket, continue.

    Kernel: net/ipv4/udp_offload.c ``udp4_gro_receive``. Returns ``pp`` or None.
    """
    skb.cb.is_ipv6 = 0
    return _udp_gro_receive_family(head, skb, inet_gro_network_pseudo)


def udp6_gro_receive(head: list[SkBuff], skb: SkBuff) -> SkBuff | None:
    """IPv6 UDP. Kernel: net/ipv6/udp_offload.c ``udp6_gro_receive`` (same steps, IPv6 pseudo header)."""
    skb.cb.is_ipv6 = 1
    return _udp_gro_receive_family(head, skb, ip6_gro_network_pseudo)


def udp_gro_receive(
    head: list[SkBuff], skb: SkBuff, sport: int, dport: int, check: int, sk: TunnelSockGro | None
) -> SkBuff | None:
    """The tunnel gate, the outer-port/zero-checksum flow match, then the tunnel's gro_receive.

    Kernel: net/ipv4/udp_offload.c ``udp_gro_receive`` (v5.10: gro-spec §4.4; 89e5c58fc1e2: §4.5). The gate
    refuses when there is no tunnel socket, when already inside a tunnel (``encap_mark``), or when the packet is
    not CHECKSUM_PARTIAL and GRO has neither an UNNECESSARY level left (``csum_cnt == 0``) nor a
    checksum-complete value (``csum_valid == 0``) — post-fix only if ``uh->check != 0``.
    """
    cb = skb.cb
    pp = None
    flush = 1
    if sk is None:
        # the inner UDP header when encapsulated
        R.skb_flush_reason(cb, R.at_header(R.UDP_NO_TUNNEL_SOCKET, cb.encap_mark))
    elif cb.encap_mark:
        R.skb_flush_reason(cb, R.UDP_ENCAP_MARK)
    else:
        gate = skb.ip_summed != CHECKSUM_PARTIAL and cb.csum_cnt == 0 and not cb.csum_valid
        if skb.dev.kernel.model.udp_tunnel_gate_checks_uh_check:
            gate = gate and check != 0
        if gate:
            # named even after an earlier flush (an outer padding, a GSO skb before v6.1): the gate refused the
            # skb all the same, and the verdict counts its refusals by this reason (reasons.skb_flush_reason)
            cb.why = R.UDP_GATE if check else R.UDP_GATE_ZERO_CSUM
        else:
            # mark that this skb passed once through the tunnel gro layer
            cb.encap_mark = 1
            flush = 0
            off = cb.data_offset
            for p in head:
                if not p.cb.same_flow:
                    continue
                b2 = p.data + off
                pbuf = p.buf
                ports2 = (pbuf[b2] << 24) | (pbuf[b2 + 1] << 16) | (pbuf[b2 + 2] << 8) | pbuf[b2 + 3]
                check2 = (pbuf[b2 + 6] << 8) | pbuf[b2 + 7]
                if ports2 != (sport << 16 | dport) or (check == 0) != (check2 == 0):
                    p.cb.same_flow = 0
                    if p.flow == skb.flow:
                        skb.cb.split = R.SPLIT_UDP  # observation only
            start = skb.data + off
            skb_gro_pull(skb, 8)
            skb_gro_postpull_rcsum(skb, start, 8)
            pp = call_gro_receive_sk(sk.gro_receive, sk, head, skb)
    cb.flush |= flush
    return pp


def udp_gro_complete(skb: SkBuff, nhoff: int, pseudo_of: Callable[[SkBuff, int], int]) -> int:
    """Rewrite the outer UDP length (and re-seed a non-zero checksum), mark the tunnel GSO type, complete inner.

    Kernel: net/ipv4/udp_offload.c ``udp4_gro_complete`` + ``udp_gro_complete``: ``uh->check`` non-zero is
    reset to the pseudo-header sum; gso_type becomes SKB_GSO_UDP_TUNNEL(_CSUM); ``skb->encapsulation`` := 1.
    """
    buf = skb.buf
    if not isinstance(buf, bytearray):
        skb.buf = buf = bytearray(buf)
    start = skb.data + nhoff
    newlen = skb.len - nhoff
    dport = (buf[start + 2] << 8) | buf[start + 3]
    check = (buf[start + 6] << 8) | buf[start + 7]
    if check:
        buf[start + 6 : start + 8] = pseudo_of(skb, newlen).to_bytes(2, "big")
    buf[start + 4 : start + 6] = (newlen & 0xFFFF).to_bytes(2, "big")  # htons() keeps 16 bits
    sk = skb.dev.kernel.udp_tunnel_sockets.get(dport)
    if sk is None:
        return -2
    skb.gso_type = SKB_GSO_UDP_TUNNEL_CSUM if check else SKB_GSO_UDP_TUNNEL
    skb.cb.encap_mark = 0
    skb.encapsulation = 1
    return sk.gro_complete(sk, skb, nhoff + 8)


def _outer_pseudo4(skb: SkBuff, length: int) -> int:
    nh = skb.data + skb.cb.network_offsets[0]
    return pseudo4(skb.buf[nh + 12 : nh + 16], skb.buf[nh + 16 : nh + 20], length, 17)


def _outer_pseudo6(skb: SkBuff, length: int) -> int:
    nh = skb.data + skb.cb.network_offsets[0]
    return pseudo6(skb.buf[nh + 8 : nh + 24], skb.buf[nh + 24 : nh + 40], length, 17)


def udp4_gro_complete(skb: SkBuff, nhoff: int) -> int:
    """Kernel: net/ipv4/udp_offload.c ``udp4_gro_complete``."""
    return udp_gro_complete(skb, nhoff, _outer_pseudo4)


def udp6_gro_complete(skb: SkBuff, nhoff: int) -> int:
    """Kernel: net/ipv6/udp_offload.c ``udp6_gro_complete``."""
    return udp_gro_complete(skb, nhoff, _outer_pseudo6)
