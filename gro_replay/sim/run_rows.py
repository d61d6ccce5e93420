"""The vectorised parts of sim/runs.py ``run_keys``: per-run numberings of a block's run entries (numpy, no Python
loop per entry or run), and each run's key bytes, equal keys sharing one object.

Every function takes the entries grouped by run (``Runs.order``'s order: a run's entries next to each other, runs in
order) and is exact: equal answers exactly where the values compared are equal.
"""

from __future__ import annotations

import numpy as np

#: odd multipliers of ``run_keys_of``'s hash of a run's rows (a row's words, then its position in the run)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX = np.uint64(0xC2B2AE3D27D4EB4F)


def first_seen(v: np.ndarray, start: np.ndarray) -> np.ndarray:
    """For each element of ``v`` (values tagged with their run in the high bits), the position of the first
    element of its run with the same value, relative to the run's ``start``."""
    if (v == v[start]).all():  # every element equals its run's first (one flow, one ack)
        return np.zeros(len(v), np.int64)
    if (v[1:] >= v[:-1]).all():
        # non-decreasing (the run tags rise from run to run; in order sequence points within a run): equal values
        # are next to each other, so a value's first is where its stretch of equal values starts
        new = np.ones(len(v), bool)
        new[1:] = v[1:] != v[:-1]
        return np.maximum.accumulate(np.where(new, np.arange(len(v)), 0)) - start
    _u, first, inv = np.unique(v, return_index=True, return_inverse=True)
    return first[inv.reshape(-1)] - start


def length_ranks(r: np.ndarray, pay: np.ndarray, nrun: int) -> np.ndarray:
    """Each payload length's rank among the distinct lengths of its run ``r`` (1, 2, ... from the shortest
    non-zero one; 0 stays 0)."""
    rhi = r.astype(np.uint64) << np.uint64(32)
    u, inv = np.unique(rhi | pay.astype(np.uint64), return_inverse=True)
    run_first = np.searchsorted(u, np.arange(nrun, dtype=np.uint64) << np.uint64(32))
    has_zero = (u[np.minimum(run_first, len(u) - 1)] & np.uint64(0xFFFFFFFF)) == 0
    rank = inv.reshape(-1) - run_first[r] + np.where(has_zero[r], 0, 1)
    return np.where(pay == 0, 0, rank)


def distinct_rows(r: np.ndarray, cls: np.ndarray, nrun: int) -> np.ndarray:
    """Distinct ``cls`` values (kv classes: header rows) of each run ``r`` (int64 per run): the distinct (run,
    class) pairs counted by run."""
    k = int(cls.max()) + 1 if len(cls) else 1
    # a sort, not np.unique: numpy 2's hash-based unique costs ~14 ms on its first call
    v = np.sort(r * k + cls)
    distinct = np.ones(len(v), bool)
    distinct[1:] = v[1:] != v[:-1]
    return np.bincount(v[distinct] // k, minlength=nrun)


def run_keys_of(
    ext: np.ndarray, bounds: np.ndarray, counts: np.ndarray, r: np.ndarray
) -> tuple[list[bytes], np.ndarray | None]:
    """Each run's key, the bytes of its rows ``ext`` (uint32 (entries, columns), C-contiguous, grouped by run:
    ``bounds``, ``counts``; ``r``: each entry's run), runs with equal keys sharing one bytes object (hashed once,
    compared by identity in the dicts that look them up), and the runs numbered by key (``Runs.kid``). A run's rows
    are hashed into one number (weighted by position, with its frame count), the runs numbered by hash, and every
    row checked against the row at its place in the first run with its number: equal rows, equal keys (exact); on
    a mismatch (two keys with one hash) each run's key is its own bytes and the numbers None."""
    flat = ext.tobytes()
    w = ext.shape[1] * 4
    nrun = len(counts)
    m = len(ext)
    if m and ext.shape[1] % 2 == 0:
        words = ext.view(np.uint64)  # C-contiguous: two uint32 columns a word
        mult = (np.arange(1, words.shape[1] + 1, dtype=np.uint64) * _GOLDEN) | np.uint64(1)
        start = bounds[:-1]
        pos = np.arange(m, dtype=np.int64) - np.repeat(start, counts)
        h = (words @ mult) * ((pos.astype(np.uint64) + np.uint64(1)) * _MIX | np.uint64(1))
        hr = np.add.reduceat(h, start) ^ counts.astype(np.uint64)
        _u, lead, inv = np.unique(hr, return_index=True, return_inverse=True)
        kid = inv.reshape(-1)
        rep = lead[kid]  # each run's first run with its number
        if (counts[rep] == counts).all() and (ext[bounds[rep][r] + pos] == ext).all():
            b = (bounds * w).tolist()
            shared = [flat[b[j] : b[j + 1]] for j in lead.tolist()]
            return list(map(shared.__getitem__, kid.tolist())), kid
    b = (bounds * w).tolist()
    return [flat[x:y] for x, y in zip(b[:-1], b[1:], strict=True)], None if nrun else np.zeros(0, np.int64)
