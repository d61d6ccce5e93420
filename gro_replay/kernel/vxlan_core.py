"""VXLAN: GRO of the VXLAN header and the receive path that decapsulates into the vxlan device.

Kernel: drivers/net/vxlan.c (≤v5.17) → drivers/net/vxlan/vxlan_core.c (v5.18+): ``vxlan_gro_receive``,
``vxlan_gro_complete``, ``vxlan_rcv``, ``vxlan_set_mac``, ``vxlan_ecn_decapsulate``; net/ipv4/ip_tunnel_core.c
``__iptunnel_pull_header``. gro-spec §5.1, §6.2.
Left out: remote checksum offload (RCO), GBP and GPE extensions (their flag bits make ``vxlan_rcv`` drop the
frame, as with those features off), FDB learning, the source-MAC loop check (the device MAC is not modelled).
"""

from __future__ import annotations

from . import reasons as R
from .eth import eth_gro_complete, eth_gro_receive
from .gro import skb_gro_header_ok, skb_gro_postpull_rcsum, skb_gro_pull
from .skbuff import ETH_HLEN, ETH_P_TEB, SkBuff

VXLAN_HLEN = 16  #: UDP + VXLAN header, bytes
VXLAN_HF_VNI = 0x08000000


def vxlan_gro_receive(sk, head: list[SkBuff], skb: SkBuff) -> SkBuff | None:
    """Pull the 8-byte VXLAN header; held packets with a different flags or VNI word are another flow.

    Kernel: ``vxlan_gro_receive`` (gro-spec §5.1). No flag validation here: ``vxlan_rcv`` drops bad flags later.
    """
    cb = skb.cb
    off_vx = cb.data_offset
    if not skb_gro_header_ok(skb, off_vx + 8):
        cb.why = R.TRUNCATED
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
    pp = eth_gro_receive(head, skb)
    return pp


def vxlan_gro_complete(sk, skb: SkBuff, nhoff: int) -> int:
    """Kernel: ``vxlan_gro_complete``: complete the inner Ethernet header after the 8-byte VXLAN header."""
    return eth_gro_complete(skb, nhoff + 8)


def vxlan_rcv(sk, skb: SkBuff) -> str | None:
    """Decapsulate one VXLAN datagram (``skb->data`` at the UDP header) and queue it to the device's gro_cells.

    Kernel: ``vxlan_rcv`` with ``__iptunnel_pull_header``, ``udp_tun_rx_dst`` (collect-metadata mode),
    ``vxlan_set_mac`` (``eth_type_trans``) and ``vxlan_ecn_decapsulate``. Returns None when queued, or the drop
    reason (a string).
    """
    buf = skb.buf
    u = skb.data
    if skb.headlen() < VXLAN_HLEN + ETH_HLEN:
        return "vxlan_rcv:short"
    flags = int.from_bytes(buf[u + 8 : u + 12], "big")
    vni_word = int.from_bytes(buf[u + 12 : u + 16], "big")
    if not flags & VXLAN_HF_VNI:
        return "vxlan_rcv:no_vni_flag"
    if flags & ~VXLAN_HF_VNI or vni_word & 0xFF:
        # any unprocessed flag or reserved bit is a malformed packet (no GBP/GPE/RCO configured)
        return "vxlan_rcv:reserved_bits"
    dev = sk.dev
    return dev.kernel.udp_tunnel_decap(sk, skb, VXLAN_HLEN, ETH_P_TEB, vni_word >> 8, b"")
