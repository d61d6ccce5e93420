"""gro_replay/numeric.py: ``distinct`` and ``member`` answer as ``np.unique`` and ``np.isin`` do (the functions they
stand in for, so that a replay does not import ``numpy.ma``), on arrays hypothesis draws and on the edge cases."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from gro_replay.numeric import distinct, member

_INTS = arrays(np.int64, st.integers(0, 40), elements=st.integers(-(2**63), 2**63 - 1))
_SMALL = arrays(np.int64, st.integers(0, 40), elements=st.integers(-3, 6))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.one_of(_INTS, _SMALL))
def test_distinct_is_unique(a: np.ndarray) -> None:
    assert distinct(a).tolist() == np.unique(a).tolist()


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.one_of(_INTS, _SMALL), st.one_of(_INTS, _SMALL))
def test_member_is_isin(x: np.ndarray, values: np.ndarray) -> None:
    assert member(x, values).tolist() == np.isin(x, values).tolist()


def test_edges() -> None:
    assert distinct(np.zeros(0, np.int64)).tolist() == []
    assert distinct(np.array([5, 5, -1, 5])).tolist() == [-1, 5]
    assert member(np.array([1, 2, 3]), np.zeros(0, np.int64)).tolist() == [False, False, False]
    # values of any shape
    assert member(np.array([9, 0]), np.array([[0, 4], [9, 9]])).tolist() == [True, True]
