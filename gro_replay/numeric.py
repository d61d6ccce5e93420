"""numpy helpers shared by the capture, packet and sim layers (no kernel rule lives here)."""

from __future__ import annotations

import numpy as np


def distinct(a: np.ndarray) -> np.ndarray:
    """The distinct values of the 1-d array ``a``, ascending (``np.unique(a)``'s answer). A sort: numpy 2's
    ``np.unique`` without ``return_*`` asks ``np.ma.is_masked`` first, which imports ``numpy.ma`` on the first
    call (10-15 ms of CPU a run)."""
    s = np.sort(a)
    new = np.ones(len(s), bool)
    new[1:] = s[1:] != s[:-1]
    return s[new]


def member(x: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Whether each element of ``x`` is one of ``values`` (bool, ``x``'s shape; ``np.isin(x, values)``'s answer)
    by a binary search in the sorted ``values``: ``np.isin``'s sort method (taken when the values' range is too
    wide for its table) calls ``np.unique`` (see ``distinct``)."""
    s = np.sort(values.reshape(-1))
    if not len(s):
        return np.zeros(x.shape, bool)
    at = np.minimum(np.searchsorted(s, x), len(s) - 1)
    return s[at] == x
