"""include/linux/skbuff.h checksum-state helpers, as the kernel defines them:

- ``__skb_incr_checksum_unnecessary``: CHECKSUM_NONE becomes CHECKSUM_UNNECESSARY at level 0; CHECKSUM_UNNECESSARY
  goes one level up, at most to SKB_MAX_CSUM_LEVEL (3); other states are left alone.
- ``__skb_decr_checksum_unnecessary``: CHECKSUM_UNNECESSARY at level 0 becomes CHECKSUM_NONE, above it goes one
  level down; other states are left alone.
- ``skb_csum_unnecessary``: CHECKSUM_UNNECESSARY, or ``csum_valid``, or CHECKSUM_PARTIAL whose checksum start is
  not before the data (``skb_checksum_start_offset >= 0``).
- ``__skb_postpull_rcsum``: CHECKSUM_COMPLETE subtracts the pulled bytes' sum; CHECKSUM_PARTIAL whose start is now
  before the data falls back to CHECKSUM_NONE.
"""

from __future__ import annotations

import pytest

from gro_replay.kernel.skbuff import (
    CHECKSUM_COMPLETE,
    CHECKSUM_NONE,
    CHECKSUM_PARTIAL,
    CHECKSUM_UNNECESSARY,
    SkBuff,
    __skb_decr_checksum_unnecessary,
    __skb_incr_checksum_unnecessary,
    skb_csum_unnecessary,
    skb_pull_rcsum,
)
from gro_replay.packet.csum import csum_partial


def _skb(ip_summed: int, level: int = 0, **kw) -> SkBuff:
    skb = SkBuff(bytes(range(64)), 0, 0, 0, 0, data=14, ip_summed=ip_summed, csum_level=level, **kw)
    skb.len = 50
    return skb


@pytest.mark.parametrize(
    ("state", "want"),
    [
        ((CHECKSUM_NONE, 0), (CHECKSUM_UNNECESSARY, 0)),
        ((CHECKSUM_UNNECESSARY, 0), (CHECKSUM_UNNECESSARY, 1)),
        ((CHECKSUM_UNNECESSARY, 2), (CHECKSUM_UNNECESSARY, 3)),
        ((CHECKSUM_UNNECESSARY, 3), (CHECKSUM_UNNECESSARY, 3)),  # SKB_MAX_CSUM_LEVEL
        ((CHECKSUM_COMPLETE, 0), (CHECKSUM_COMPLETE, 0)),
        ((CHECKSUM_PARTIAL, 0), (CHECKSUM_PARTIAL, 0)),
    ],
)
def test_incr_checksum_unnecessary(state, want):
    skb = _skb(*state)
    __skb_incr_checksum_unnecessary(skb)
    assert (skb.ip_summed, skb.csum_level) == want


@pytest.mark.parametrize(
    ("state", "want"),
    [
        ((CHECKSUM_UNNECESSARY, 0), (CHECKSUM_NONE, 0)),
        ((CHECKSUM_UNNECESSARY, 1), (CHECKSUM_UNNECESSARY, 0)),
        ((CHECKSUM_UNNECESSARY, 3), (CHECKSUM_UNNECESSARY, 2)),
        ((CHECKSUM_NONE, 0), (CHECKSUM_NONE, 0)),
        ((CHECKSUM_COMPLETE, 0), (CHECKSUM_COMPLETE, 0)),
    ],
)
def test_decr_checksum_unnecessary(state, want):
    skb = _skb(*state)
    __skb_decr_checksum_unnecessary(skb)
    assert (skb.ip_summed, skb.csum_level) == want


@pytest.mark.parametrize(
    ("ip_summed", "csum_valid", "csum_start", "want"),
    [
        (CHECKSUM_UNNECESSARY, 0, 0, True),
        (CHECKSUM_NONE, 0, 0, False),
        (CHECKSUM_NONE, 1, 0, True),
        (CHECKSUM_COMPLETE, 0, 0, False),
        (CHECKSUM_COMPLETE, 1, 0, True),
        (CHECKSUM_PARTIAL, 0, 14, True),  # starts at the data
        (CHECKSUM_PARTIAL, 0, 20, True),
        (CHECKSUM_PARTIAL, 0, 13, False),  # starts before the data
    ],
)
def test_skb_csum_unnecessary(ip_summed, csum_valid, csum_start, want):
    skb = _skb(ip_summed, csum_start=csum_start)
    skb.csum_valid = csum_valid
    assert skb_csum_unnecessary(skb) is want


def test_pull_rcsum_complete_subtracts_the_pulled_bytes():
    skb = _skb(CHECKSUM_COMPLETE, csum=csum_partial(bytes(range(64)), 14))
    skb_pull_rcsum(skb, 8)
    # what remains is the sum of the bytes from the new data offset on
    assert skb.data == 22 and skb.len == 42
    assert skb.csum == csum_partial(bytes(range(64)), 22)


@pytest.mark.parametrize(("csum_start", "want"), [(22, CHECKSUM_PARTIAL), (20, CHECKSUM_NONE)])
def test_pull_rcsum_partial_starting_before_the_data_falls_back_to_none(csum_start, want):
    skb = _skb(CHECKSUM_PARTIAL, csum_start=csum_start)
    skb_pull_rcsum(skb, 8)
    assert skb.ip_summed == want
