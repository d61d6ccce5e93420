"""Decapsulation of a UDP tunnel frame into its tunnel device: pull the outer headers, attach the metadata dst,
``eth_type_trans`` on the tunnel device, ECN, and queue on the device's gro_cells.

Kernel: net/ipv4/ip_tunnel_core.c ``__iptunnel_pull_header``; include/net/dst_metadata.h ``udp_tun_rx_dst``
(dst_metadata.py); drivers/net/vxlan/vxlan_core.c ``vxlan_set_mac`` / drivers/net/geneve.c ``geneve_rx``
(net/ethernet/eth.c ``eth_type_trans``); include/net/inet_ecn.h ``INET_ECN_decapsulate``; net/core/gro_cells.c
``gro_cells_receive``.
Left out: the inner-protocol change for non-Ethernet payloads (only ETH_P_TEB is decapsulated), the device's rx
statistics.
"""

from __future__ import annotations

from ..packet.csum import csum_add, csum_partial, csum_sub
from . import drop_reasons as D
from .dst_metadata import TUNNEL_KEY, udp_tun_rx_dst
from .skbuff import (
    CHECKSUM_COMPLETE,
    ETH_HLEN,
    ETH_P_IP,
    ETH_P_IPV6,
    SKB_GSO_UDP_TUNNEL,
    SKB_GSO_UDP_TUNNEL_CSUM,
    SkBuff,
    skb_postpull_rcsum,
    skb_pull_rcsum,
)
from .udp_tunnel import UdpTunnelSock

INET_ECN_NOT_ECT = 0
INET_ECN_ECT_1 = 1
INET_ECN_ECT_0 = 2
INET_ECN_CE = 3
INET_ECN_MASK = 3


def udp_tunnel_decap(
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
    ``INET_ECN_decapsulate``, ``gro_cells_receive``. ``skb->data`` is at the UDP header; ``hdr_len``: bytes of
    UDP + tunnel header; ``tun_flags``: the tunnel driver's metadata flags.
    Returns None when queued, else a drop reason.
    """
    k = sk.dev.kernel
    buf = skb.buf
    nh = skb.network_header
    u = skb.data
    if buf[nh] >> 4 == 4:
        outer_tos = buf[nh + 1]
    else:
        outer_tos = (((buf[nh] << 8) | buf[nh + 1]) >> 4) & 0xFF
    md = udp_tun_rx_dst(k.model, buf, nh, u, tun_flags, vni, opts) if k.tunnel_metadata else None
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
    if INET_ECN_decapsulate(skb, outer_tos) > 1:  # err > 1: vxlan_ecn_decapsulate / geneve_rx drop the skb
        return D.GENEVE_ECN_DROP if sk.kind == "geneve" else D.VXLAN_ECN_DROP
    if not sk.cells.gro_cells_receive(skb):
        return D.GRO_CELLS_BACKLOG_FULL
    return None


def INET_ECN_decapsulate(skb: SkBuff, outer_tos: int) -> int:  # noqa: N802 - the kernel's name
    """ECN on decapsulation (RFC 6040 §4.2): CE outside a not-ECT inner packet is an error; CE outside an ECT one
    marks the inner header CE; from b723748750ec (``inet_ecn_decap_sets_ect1``) ECT(1) outside ECT(0) marks the
    inner header ECT(1).

    Kernel: include/net/inet_ecn.h ``INET_ECN_decapsulate`` / ``__INET_ECN_decapsulate``, called by
    ``vxlan_ecn_decapsulate`` and by ``geneve_rx`` (``IP_ECN_decapsulate`` / ``IP6_ECN_decapsulate``); the marks
    by ``IP_ECN_set_ce`` / ``IP_ECN_set_ect1`` (the IPv4 header checksum follows: the header's sum, and so
    ``skb->csum``, does not change) and ``IP6_ECN_set_ce`` / ``IP6_ECN_set_ect1`` (CHECKSUM_COMPLETE: ``skb->csum``
    follows the changed word). ``skb->data`` is at the inner network header. Returns the kernel's ``err``: 2 for CE
    outside a not-ECT inner packet (both callers drop the skb, rx_frame_errors and rx_errors), 1 for ECT outside
    not-ECT (only logged), else 0.
    The IPv4 ECT(1) mark is ``IP_ECN_set_ect1``'s incremental checksum update, wrong before 2867e1eac610.
    """
    buf = skb.buf
    i = skb.data
    if skb.protocol == ETH_P_IP and skb.headlen() >= 20:
        inner = buf[i + 1] & INET_ECN_MASK
    elif skb.protocol == ETH_P_IPV6 and skb.headlen() >= 40:
        inner = (((buf[i] << 8) | buf[i + 1]) >> 4) & INET_ECN_MASK
    else:
        return 0
    outer = outer_tos & INET_ECN_MASK
    if inner == INET_ECN_NOT_ECT:
        return 2 if outer == INET_ECN_CE else int(outer != INET_ECN_NOT_ECT)
    if outer == INET_ECN_CE:  # INET_ECN_set_ce (nothing changes on a CE inner header)
        if skb.protocol == ETH_P_IP:
            IP_ECN_set_ce(skb)
        else:
            _ip6_set_ecn(skb, INET_ECN_CE)
    elif (
        outer == INET_ECN_ECT_1 and inner == INET_ECN_ECT_0 and skb.dev.kernel.model.inet_ecn_decap_sets_ect1
    ):
        if skb.protocol == ETH_P_IP:  # INET_ECN_set_ect1
            IP_ECN_set_ect1(skb)
        else:
            _ip6_set_ecn(skb, INET_ECN_ECT_1)
    return 0


def IP_ECN_set_ce(skb: SkBuff) -> None:  # noqa: N802 - the kernel's name
    """Mark the inner IPv4 header at ``skb->data`` (ECT(0) or ECT(1); CE stays as it is) CE, updating its header
    checksum incrementally (``ip_ecn_check_add``) by ``htons(0xFFFB) + htons(ecn)`` (``ecn``: the TOS byte plus 1,
    its ECN bits: 3 for ECT(0), 2 for ECT(1)): 0xFFFE or 0xFFFD in network order, minus the 1 or 2 the TOS byte
    gains; then set both ECN bits. The header's other bytes are not read: a checksum that did not verify still
    does not, and one over IP options stays right.
    Kernel: include/net/inet_ecn.h ``IP_ECN_set_ce``."""
    i = skb.data
    b = bytearray(skb.buf)
    ecn = (b[i + 1] + 1) & INET_ECN_MASK  # NOT_ECT → 1, ECT(1) → 2, ECT(0) → 3, CE → 0
    if not ecn & 2:
        return
    ip_ecn_check_add(skb, b, i, 0xFBFF + (ecn << 8))  # htons(0xFFFB) + htons(ecn), in memory order
    b[i + 1] |= INET_ECN_CE
    skb.buf = b


def IP_ECN_set_ect1(skb: SkBuff) -> None:  # noqa: N802 - the kernel's name
    """Mark the inner IPv4 header at ``skb->data`` (ECT(0)) ECT(1), updating its header checksum incrementally
    (``ip_ecn_check_add``) by ``htons(0x1)``, then flip both ECN bits. Before 2867e1eac610
    (``ip_ecn_set_ect1_right_csum`` off: v5.7 to v5.10-rc6, 5.4.41 to 5.4.81) it added ``htons(0x100)``, 0x100 in
    network order where the TOS byte's change needs 1, so the header no longer verifies: the tunnel device's
    ``inet_gro_receive`` flushes the packet (``ip_fast_csum``) and ``ip_rcv`` would drop it.
    Kernel: include/net/inet_ecn.h ``IP_ECN_set_ect1`` (b723748750ec, v5.7; 2867e1eac610, v5.10-rc7)."""
    i = skb.data
    b = bytearray(skb.buf)
    right = skb.dev.kernel.model.ip_ecn_set_ect1_right_csum
    ip_ecn_check_add(skb, b, i, 0x0100 if right else 0x0001)  # htons(0x1) : htons(0x100), in memory order
    skb.ect1_csum_wrong = not right  # observation only: names the flush (reasons.INET_CSUM_ECT1_MARK)
    b[i + 1] ^= INET_ECN_MASK
    skb.buf = b


def ip_ecn_check_add(skb: SkBuff, b: bytearray, i: int, addend: int) -> None:
    """Add ``addend`` (a 16-bit value in memory order) to the IPv4 header checksum of ``b[i:]`` as the kernel's
    ECN marks do on x86 (little-endian: the checksum read as a 16-bit word in memory order), the carry folded
    back in. From 0780b4145634 (``ip_ecn_csum16_add``) with ``csum16_add``: the 16-bit sum, plus 1 where it
    wrapped, so a sum of 0xFFFF stays 0xFFFF; before it ``check + (check >= 0xFFFF)`` on the 32-bit sum,
    truncated, which writes a sum of exactly 0xFFFF as 0x0000 (both verify).
    Kernel: include/net/inet_ecn.h ``IP_ECN_set_ce``, ``IP_ECN_set_ect1``; include/net/checksum.h
    ``csum16_add``."""
    check = int.from_bytes(b[i + 10 : i + 12], "little")
    if skb.dev.kernel.model.ip_ecn_csum16_add:
        res = (check + addend) & 0xFFFF
        check = res + (res < addend)
    else:
        check += addend
        check = (check + (check >= 0xFFFF)) & 0xFFFF
    b[i + 10 : i + 12] = check.to_bytes(2, "little")


def _ip6_set_ecn(skb: SkBuff, ecn: int) -> None:
    """Write ``ecn`` into the ECN bits of the inner IPv6 header at ``skb->data`` (when they differ), ``skb->csum``
    following the header's first word under CHECKSUM_COMPLETE.
    Kernel: include/net/inet_ecn.h ``IP6_ECN_set_ce``, ``IP6_ECN_set_ect1``."""
    i = skb.data
    old = skb.buf
    b = bytearray(old)
    b[i + 1] = (b[i + 1] & ~(INET_ECN_MASK << 4)) | (ecn << 4)
    if b[i + 1] == old[i + 1]:
        return
    if skb.ip_summed == CHECKSUM_COMPLETE:
        skb.csum = csum_add(csum_sub(skb.csum, csum_partial(old, i, i + 4)), csum_partial(b, i, i + 4))
    skb.buf = b
