"""VXLAN: GRO of the VXLAN header and the receive path that decapsulates into the vxlan device.

Kernel: drivers/net/vxlan.c (≤v5.17) → drivers/net/vxlan/vxlan_core.c (v5.18+): ``vxlan_gro_receive``,
``vxlan_gro_complete``, ``vxlan_rcv``, ``vxlan_set_mac``, ``vxlan_ecn_decapsulate``; net/ipv4/ip_tunnel_core.c
``__iptunnel_pull_header``. gro-spec §5.1, §6.2.
The Group Based Policy extension (VXLAN_F_GBP, ``ip link add … type vxlan gbp``) is modelled: ``vxlan_parse_gbp_hdr``
(same text in every modelled release, 4.19 … 6.18: the function dates from v4.6; the 6.10 tunnel-flag bitmap
conversion only renamed TUNNEL_VXLAN_OPT to IP_TUNNEL_VXLAN_OPT_BIT) puts the policy ID and the D and A bits in the
metadata dst's options. Without GBP on the device a G-flagged frame is dropped, as the kernel does. The header check
was restructured by Petr Machata's reserved-bits series (netdev, Nov 2024; v6.14 [D from its date]): ``vxlan_rcv``
tests the header against ``vxlan->cfg.reserved_bits`` before parsing, and ``vxlan_nl2conf`` defaults them to the
complement of the enabled extensions' used bits (VXLAN_GBP_USED_BITS with ``gbp``), which accepts and drops exactly
the frames the earlier "unparsed bits left" test did — no switch; ``IFLA_VXLAN_RESERVED_BITS`` (user-set reserved
bits) is not modelled.
Left out: remote checksum offload (RCO) and GPE (their flag bits make ``vxlan_rcv`` drop the frame, as with those
features off), FDB learning, the source-MAC loop check (the device MAC is not modelled).
"""

from __future__ import annotations

import struct

from . import drop_reasons as D
from . import reasons as R
from .dst_metadata import TUNNEL_KEY, TUNNEL_VXLAN_OPT
from .eth import eth_gro_complete, eth_gro_receive
from .gro import call_gro_receive, skb_gro_header_ok, skb_gro_pull
from .gro_csum import skb_gro_postpull_rcsum
from .ip_tunnel_core import udp_tunnel_decap
from .skbuff import ETH_HLEN, ETH_P_TEB, SkBuff
from .udp_tunnel import UdpTunnelSock

VXLAN_HLEN = 16  #: UDP + VXLAN header, bytes
_VXLANHDR = struct.Struct("!II")  # struct vxlanhdr: vx_flags, vx_vni (host order)
VXLAN_HF_VNI = 0x08000000
#: include/net/vxlan.h, as host-order values of the first header word: the G flag, every bit the GBP parser consumes
#: (``VXLAN_GBP_USED_BITS``: G and the low 24 bits), and the ``struct vxlan_metadata`` ``gbp`` bits (D, A, policy ID)
VXLAN_HF_GBP = 0x80000000
VXLAN_GBP_USED_BITS = VXLAN_HF_GBP | 0xFFFFFF
VXLAN_GBP_DONT_LEARN = 1 << 22
VXLAN_GBP_POLICY_APPLIED = 1 << 19
VXLAN_GBP_ID_MASK = 0xFFFF


def vxlan_gro_receive(sk: UdpTunnelSock, head: list[SkBuff], skb: SkBuff) -> SkBuff | None:
    """Pull the 8-byte VXLAN header; held packets with a different flags or VNI word are another flow.

    Kernel: ``vxlan_gro_receive`` (gro-spec §5.1). No flag validation here: ``vxlan_rcv`` drops bad flags later.
    """
    cb = skb.cb
    off_vx = cb.data_offset
    if not skb_gro_header_ok(skb, off_vx + 8):
        R.skb_flush_reason(cb, R.TRUNCATED)
        cb.flush |= 1
        return None
    start = skb.data + off_vx
    vh = skb.buf[start : start + 8]
    skb_gro_postpull_rcsum(skb, start, 8)
    skb_gro_pull(skb, 8)
    for p in head:
        if not p.cb.same_flow:
            continue
        s2 = p.data + off_vx
        if p.buf[s2 : s2 + 8] != vh:
            p.cb.same_flow = 0
            if p.flow == skb.flow:
                cb.split = R.SPLIT_VXLAN  # observation only
    pp = call_gro_receive(eth_gro_receive, head, skb)
    return pp


def vxlan_gro_complete(sk: UdpTunnelSock, skb: SkBuff, nhoff: int) -> int:
    """Kernel: ``vxlan_gro_complete``: complete the inner Ethernet header after the 8-byte VXLAN header."""
    return eth_gro_complete(skb, nhoff + 8)


def vxlan_parse_gbp_hdr(flags: int) -> tuple[int, bytes, int]:
    """The Group Based Policy part of ``vxlan_rcv`` on a GBP device (VXLAN_F_GBP).

    Args: ``flags`` the first VXLAN header word (host order) with the I flag already consumed.
    Returns (flags still unparsed, metadata options, extra ``tun_flags``): with the G flag set, the options are
    ``struct vxlan_metadata`` (4 bytes: ``gbp`` = policy ID | VXLAN_GBP_DONT_LEARN | VXLAN_GBP_POLICY_APPLIED)
    and TUNNEL_VXLAN_OPT is set (``options_len`` = 4); without it nothing is stored. Either way every bit of
    VXLAN_GBP_USED_BITS counts as parsed (a G-less frame's policy bits are ignored, not a reason to drop).
    Kernel: drivers/net/vxlan/vxlan_core.c ``vxlan_parse_gbp_hdr`` (the metadata dst is already attached in
    collect-metadata mode; the mark is set instead without it, which GRO does not compare).
    """
    rest = flags & ~VXLAN_GBP_USED_BITS
    if not flags & VXLAN_HF_GBP:
        return rest, b"", 0
    gbp = flags & (VXLAN_GBP_ID_MASK | VXLAN_GBP_DONT_LEARN | VXLAN_GBP_POLICY_APPLIED)
    return rest, gbp.to_bytes(4, "little"), TUNNEL_VXLAN_OPT  # a host-order u32 (x86): only equality matters


def vxlan_rcv(sk: UdpTunnelSock, skb: SkBuff) -> str | None:
    """Decapsulate one VXLAN datagram (``skb->data`` at the UDP header) and queue it to the device's gro_cells.

    Kernel: ``vxlan_rcv`` with ``__iptunnel_pull_header``, ``udp_tun_rx_dst`` (collect-metadata mode),
    ``vxlan_parse_gbp_hdr`` (GBP devices, ``sk.gbp``), ``vxlan_set_mac`` (``eth_type_trans``) and
    ``vxlan_ecn_decapsulate``. Returns None when queued, or the drop reason (a string).
    """
    buf = skb.buf
    u = skb.data
    if skb.headlen() < VXLAN_HLEN + ETH_HLEN:
        return D.VXLAN_SHORT
    flags, vni_word = _VXLANHDR.unpack_from(buf, u + 8)
    if not flags & VXLAN_HF_VNI:
        return D.VXLAN_NO_VNI_FLAG
    unparsed = flags & ~VXLAN_HF_VNI
    opts, tun_flags = b"", TUNNEL_KEY
    if sk.gbp:
        unparsed, opts, opt_flag = vxlan_parse_gbp_hdr(unparsed)
        tun_flags |= opt_flag
    if unparsed or vni_word & 0xFF:
        # any unprocessed flag or reserved bit is a malformed packet (GPE/RCO not configured)
        return D.VXLAN_RESERVED_BITS
    return udp_tunnel_decap(sk, skb, VXLAN_HLEN, ETH_P_TEB, vni_word >> 8, opts, tun_flags)
