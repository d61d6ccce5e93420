"""The GRO checksum helpers: what each header's gro_receive uses to validate or carry its checksum.

Kernel: include/net/gro.h (v5.17+; include/linux/netdevice.h before 4721031c3559) and net/core/gro.c
(``__skb_gro_checksum_complete``, net/core/dev.c before v5.17). gro-spec §4.1. Split from gro.py (the engine).
"""

from __future__ import annotations

from collections.abc import Callable

from ..packet.csum import csum_add, csum_fold, csum_partial, csum_sub
from . import skbuff as _skbuff
from .skbuff import CHECKSUM_PARTIAL, SkBuff, __skb_incr_checksum_unnecessary


def skb_gro_postpull_rcsum(skb: SkBuff, start: int, length: int) -> None:
    """``skb_gro_postpull_rcsum``: remove ``length`` header bytes at absolute ``start`` from ``cb.csum``."""
    cb = skb.cb
    if cb.csum_valid:
        cb.csum = csum_sub(cb.csum, csum_partial(skb.buf, start, start + length))


def __skb_gro_checksum_complete(skb: SkBuff) -> int:
    """Software checksum of the bytes from the GRO offset to the end; returns the verdict (0 = good).

    Kernel: net/core/dev.c (5.10) / net/core/gro.c ``__skb_gro_checksum_complete``: ``cb.csum`` := the byte sum,
    ``cb.csum_valid`` := 1 even on failure. The bytes summed are counted in the NAPI's statistics.
    """
    cb = skb.cb
    start = skb.data + cb.data_offset
    wsum = skb.checksum(start)
    verdict = csum_fold(csum_add(cb.csum, wsum))
    skb.dev.napi.stats.sw_csum_bytes += skb.len - cb.data_offset
    if _skbuff.length_tally is not None:
        _skbuff.length_tally.append((skb.dev.napi.stats, "sw_csum_bytes", tuple(skb.frames)))
    cb.csum = wsum
    cb.csum_valid = 1
    return verdict


def skb_gro_incr_csum_unnecessary(skb: SkBuff) -> None:
    """Consume one ``csum_cnt`` level, or promote the skb itself when none is left.

    Kernel: include/net/gro.h ``skb_gro_incr_csum_unnecessary``.
    """
    cb = skb.cb
    if cb.csum_cnt > 0:
        cb.csum_cnt -= 1
    else:
        __skb_incr_checksum_unnecessary(skb)


def __skb_gro_checksum_validate(
    skb: SkBuff, proto: int, zero_okay: bool, check: int, compute_pseudo: Callable[[SkBuff, int], int]
) -> int:
    """VALIDATE of gro-spec §4.1; returns 0 when the checksum is good or need not be checked.

    Kernel: include/net/gro.h ``__skb_gro_checksum_validate`` with ``__skb_gro_checksum_validate_needed`` and
    ``__skb_gro_checksum_validate_complete``. ``compute_pseudo(skb, proto)`` gives the pseudo-header sum
    (``inet_gro_compute_pseudo``), computed only when the checksum is checked, as the kernel's macro does.
    """
    cb = skb.cb
    ret = 0
    needed = (
        (skb.ip_summed != CHECKSUM_PARTIAL or skb.csum_start - skb.data < cb.data_offset)
        and cb.csum_cnt == 0
        and (not zero_okay or check != 0)
    )
    if needed:
        psum = compute_pseudo(skb, proto)
        if cb.csum_valid and csum_fold(csum_add(psum, cb.csum)) == 0:
            ret = 0
        else:
            cb.csum = psum
            ret = __skb_gro_checksum_complete(skb)
    if ret == 0:
        skb_gro_incr_csum_unnecessary(skb)
    return ret


def skb_gro_checksum_try_convert(
    skb: SkBuff, proto: int, compute_pseudo: Callable[[SkBuff, int], int]
) -> None:
    """Derive a checksum-complete value from a vouched-for L4 checksum (2abb7cdc0dc8).

    Kernel: include/net/gro.h ``skb_gro_checksum_try_convert``: when ``csum_cnt == 0`` and not ``csum_valid``,
    ``cb.csum := ~compute_pseudo(skb, proto)`` and ``csum_valid := 1``.
    """
    cb = skb.cb
    if cb.csum_cnt == 0 and not cb.csum_valid:
        cb.csum = ~compute_pseudo(skb, proto) & 0xFFFF
        cb.csum_valid = 1
