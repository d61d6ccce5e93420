"""GRE GRO, as far as gro-replay models it. Kernel: net/ipv4/gre_offload.c ``gre_gro_receive`` /
``gre_gro_complete``, registered for IP protocol 47 in both ``inet_offloads`` and ``inet6_offloads`` by
``gre_offload_init``.

Modelled: the first test, the same from v4.19 on: ``NAPI_GRO_CB(skb)->encap_mark`` already set (GRE inside a UDP
tunnel on the phys device) flushes the skb (``goto out`` with ``flush = 1``).
Left out: everything after it. With ``encap_mark`` clear (the tunnel device, after decapsulation) the kernel sets
``encap_mark``, parses the GRE header (version 0 and only the K and C flags, the key and checksum words, the
protocol's packet offload, the checksum), compares it with the held packets' and calls the inner protocol's
gro_receive, so those packets may merge. gro-replay flushes them instead and says so (``reasons.GRE_NOT_MODELLED``):
its tunnel-stage counts for GRE inside the tunnel may be too high (too few merges).
"""

from __future__ import annotations

from . import reasons as R
from .skbuff import SkBuff


def gre_gro_receive(head: list[SkBuff], skb: SkBuff) -> SkBuff | None:
    """GRE (IP protocol 47): flush a second encapsulation (modelled); flush any other GRE packet too, which the kernel
    would parse and may merge (not modelled: ``reasons.GRE_NOT_MODELLED`` names it).

    Kernel: net/ipv4/gre_offload.c ``gre_gro_receive``. Returns None (no held packet is completed).
    """
    cb = skb.cb
    if cb.encap_mark:
        R.skb_flush_reason(cb, R.GRE_ENCAP_MARK)
    else:
        R.skb_flush_reason(cb, R.GRE_NOT_MODELLED)
    cb.flush |= 1
    return None


def gre_gro_complete(skb: SkBuff, nhoff: int) -> int:
    """Kernel: net/ipv4/gre_offload.c ``gre_gro_complete``, not modelled: ``gre_gro_receive`` here never lets a GRE
    packet be held, so no GRE aggregate reaches it. Returns -ENOSYS (-38) if it is called all the same."""
    del skb, nhoff
    return -38
