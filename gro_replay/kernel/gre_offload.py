"""GRE GRO. Kernel: net/ipv4/gre_offload.c ``gre_gro_receive`` / ``gre_gro_complete``, registered for IP protocol
47 in both ``inet_offloads`` and ``inet6_offloads`` by ``gre_offload_init``.

The same receive text from v4.19 (``call_gro_receive``, ``skb_gro_flush_final``) to v6.18 (``skb_gro_header``, the
``list_for_each_entry`` walk; read in both): ``NAPI_GRO_CB(skb)->encap_mark`` already set (GRE inside a UDP tunnel
on the phys device, or after an IP-in-IP header) flushes; else the function sets it, accepts version 0 with no flag
but K (key) and C (checksum) — S (sequence) and routing are refused, as GSO could not split them again —, looks up
the packet offload of the GRE protocol type (IPv4, IPv6, or ETH_P_TEB for Ethernet), validates a GRE checksum
unless the skb is already flushing, and calls that offload past the 4-byte base header and its key and checksum
words. Held packets whose GRE flags or protocol differ, or, with K set, whose first word after the base header
differs (the checksum word when C is set too: the kernel compares that word, not the key), are another flow.
Left out: FOU/GUE (``NAPI_GRO_CB(skb)->is_fou`` is never set here).
"""

from __future__ import annotations

import struct

from . import reasons as R
from .gro import call_gro_receive, skb_gro_header_ok, skb_gro_pull
from .gro_csum import __skb_gro_checksum_validate, skb_gro_checksum_try_convert, skb_gro_postpull_rcsum
from .handler_miss import missed_type
from .skbuff import SKB_GSO_GRE, SkBuff

IPPROTO_GRE = 47
GRE_CSUM = 0x8000  #: include/net/gre.h (host order of the flags word)
GRE_KEY = 0x2000
GRE_HEADER_SECTION = 4  #: bytes of the base header, and of each optional word
_GRE_BASE = struct.Struct("!HH")  # struct gre_base_hdr: flags (and version), protocol


def gre_flags_ok(flags: int) -> bool:
    """Whether ``gre_gro_receive`` accepts a GRE header of flags word ``flags``: version 0 and no flag but K and C
    (``(greh->flags & ~(GRE_KEY|GRE_CSUM)) != 0`` → out)."""
    return not flags & ~(GRE_KEY | GRE_CSUM)


def gre_hlen(flags: int) -> int:
    """Bytes of a GRE header of flags word ``flags`` as GRO reads it: the 4-byte base header, a key word (K) and a
    checksum word (C), ``grehlen`` in ``gre_gro_receive``/``gre_gro_complete`` (only these flags are accepted)."""
    return GRE_HEADER_SECTION * (1 + bool(flags & GRE_KEY) + bool(flags & GRE_CSUM))


def _null_compute_pseudo(skb: SkBuff, proto: int) -> int:
    """``null_compute_pseudo``: GRE's checksum covers no pseudo header (include/net/gro.h)."""
    del skb, proto
    return 0


def gre_gro_receive(head: list[SkBuff], skb: SkBuff) -> SkBuff | None:
    """GRE (IP protocol 47): flush a second encapsulation; else check the header, validate its checksum, split
    held packets of another GRE header, pull it and call the protocol's gro_receive.

    Kernel: net/ipv4/gre_offload.c ``gre_gro_receive`` (module docstring). Returns ``pp`` or None.
    """
    cb = skb.cb
    if cb.encap_mark:
        R.skb_flush_reason(cb, R.GRE_ENCAP_MARK)
        cb.flush |= 1
        return None
    cb.encap_mark = 1
    off = cb.data_offset
    if not skb_gro_header_ok(skb, off + GRE_HEADER_SECTION):
        R.skb_flush_reason(cb, R.TRUNCATED)
        cb.flush |= 1
        return None
    start = skb.data + off
    flags, gtype = _GRE_BASE.unpack_from(skb.buf, start)
    if not gre_flags_ok(flags):
        R.skb_flush_reason(cb, R.GRE_FLAGS)
        cb.flush |= 1
        return None
    ptype = skb.dev.kernel.offload_base.get(gtype)
    if ptype is None:
        R.skb_flush_reason(cb, missed_type(R.GRE_NO_OFFLOAD, gtype))
        cb.flush |= 1
        return None
    grehlen = gre_hlen(flags)
    if not skb_gro_header_ok(skb, off + grehlen):
        R.skb_flush_reason(cb, R.TRUNCATED)
        cb.flush |= 1
        return None
    # Don't bother verifying checksum if we're going to flush anyway.
    if flags & GRE_CSUM and not cb.flush:
        if __skb_gro_checksum_validate(skb, IPPROTO_GRE, False, 0, _null_compute_pseudo):
            R.skb_flush_reason(cb, R.GRE_CSUM)
            cb.flush |= 1
            return None
        skb_gro_checksum_try_convert(skb, IPPROTO_GRE, _null_compute_pseudo)
    word = skb.buf[start + 4 : start + 8] if flags & GRE_KEY else b""
    for p in head:
        if not p.cb.same_flow:
            continue
        s2 = p.data + off
        other = _GRE_BASE.unpack_from(p.buf, s2) != (flags, gtype)
        if other or (word and p.buf[s2 + 4 : s2 + 8] != word):
            p.cb.same_flow = 0
            if p.flow == skb.flow:  # observation only: with C set too, the word compared is the checksum's
                cb.split = R.SPLIT_GRE if other or not flags & GRE_CSUM else R.SPLIT_GRE_CSUM_WORD
    skb_gro_pull(skb, grehlen)
    skb_gro_postpull_rcsum(skb, start, grehlen)
    return call_gro_receive(ptype.gro_receive, head, skb)


def gre_gro_complete(skb: SkBuff, nhoff: int) -> int:
    """Mark the aggregate encapsulated (``SKB_GSO_GRE``, set, not added), then complete the protocol's header past
    the GRE header at ``nhoff``. Kernel: net/ipv4/gre_offload.c ``gre_gro_complete``. Returns 0 or -ENOENT (-2)
    when the protocol has no packet offload."""
    skb.encapsulation = 1
    skb.gso_type = SKB_GSO_GRE
    flags, gtype = _GRE_BASE.unpack_from(skb.buf, skb.data + nhoff)
    grehlen = gre_hlen(flags)
    ptype = skb.dev.kernel.offload_base.get(gtype)
    if ptype is None:
        return -2
    return ptype.gro_complete(skb, nhoff + grehlen)
