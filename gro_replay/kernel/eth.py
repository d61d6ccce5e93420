"""Ethernet GRO: the inner Ethernet header of a VXLAN/Geneve frame.

Kernel: net/ethernet/eth.c ``eth_gro_receive`` / ``eth_gro_complete`` (v5.x text; v6.x adds the network offset
bookkeeping, mirrored here). gro-spec §5.3.
"""

from __future__ import annotations

from . import reasons as R
from .gro import call_gro_receive, skb_gro_header_ok, skb_gro_pull
from .gro_csum import skb_gro_postpull_rcsum
from .handler_miss import missed_type
from .skbuff import ETH_HLEN, SkBuff


def eth_gro_receive(head: list[SkBuff], skb: SkBuff) -> SkBuff | None:
    """Match held packets on the 14-byte inner Ethernet header, then hand over to the ethertype's handler.

    Kernel: net/ethernet/eth.c ``eth_gro_receive``. Returns ``pp`` (a held packet to complete) or None.
    """
    cb = skb.cb
    flush = 1
    pp = None
    off_eth = cb.data_offset
    hlen = off_eth + ETH_HLEN
    if not skb_gro_header_ok(skb, hlen):
        R.skb_flush_reason(cb, R.TRUNCATED)
        cb.flush |= flush
        return None
    start = skb.data + off_eth
    eh = skb.buf[start : start + ETH_HLEN]
    for p in head:
        if not p.cb.same_flow:
            continue
        s2 = p.data + off_eth
        if p.buf[s2 : s2 + ETH_HLEN] != eh:
            p.cb.same_flow = 0
            if p.flow == skb.flow:
                cb.split = R.SPLIT_INNER_ETH  # observation only
    ptype = skb.dev.kernel.offload_base.get((eh[12] << 8) | eh[13])
    if ptype is None:
        R.skb_flush_reason(cb, missed_type(R.ETH_NO_OFFLOAD, (eh[12] << 8) | eh[13]))
    else:
        flush = 0
        skb_gro_pull(skb, ETH_HLEN)
        skb_gro_postpull_rcsum(skb, start, ETH_HLEN)
        pp = call_gro_receive(ptype.gro_receive, head, skb)
    cb.flush |= flush
    return pp


def eth_gro_complete(skb: SkBuff, nhoff: int) -> int:
    """Record the inner MAC header and complete the inner network layer. Kernel: ``eth_gro_complete``.

    Returns 0 or a negative errno (no handler).
    """
    start = skb.data + nhoff
    if skb.encapsulation:
        skb.inner_mac_header = start
    ptype = skb.dev.kernel.offload_base.get((skb.buf[start + 12] << 8) | skb.buf[start + 13])
    if ptype is None:
        return -2
    return ptype.gro_complete(skb, nhoff + ETH_HLEN)
