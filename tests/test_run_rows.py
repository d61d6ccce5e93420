"""The vectorised numberings and key bytes of the flow runs (sim/run_rows.py), against plain Python.

``first_seen`` takes a shortcut when its values do not decrease (equal values then stand next to each other);
``run_keys_of`` numbers the runs by a hash of their rows and checks every row, falling back to one bytes object
a run when two keys share a hash. Both must answer exactly as the plain definitions do, shortcut or not.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from conftest import batch_and_reference

from gro_replay import pollcache
from gro_replay.capture.writer import PcapWriter
from gro_replay.sim import ReplayConfig, run_rows
from gro_replay.synth_mix import OverlayMix, mix_frames


def _runs(rng: random.Random, nrun: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(bounds, counts, each entry's run)`` of ``nrun`` runs of 1 to 5 entries."""
    counts = np.array([rng.randint(1, 5) for _ in range(nrun)], np.int64)
    bounds = np.zeros(nrun + 1, np.int64)
    np.cumsum(counts, out=bounds[1:])
    return bounds, counts, np.repeat(np.arange(nrun), counts)


def _first_seen_plain(v: np.ndarray, start: np.ndarray) -> list[int]:
    out = []
    for i, x in enumerate(v.tolist()):
        s = int(start[i])
        out.append(v[s : i + 1].tolist().index(x))
    return out


@pytest.mark.parametrize("seed", range(12))
def test_first_seen_equals_the_plain_definition(seed):
    rng = random.Random(seed)
    bounds, counts, r = _runs(rng, 40)
    start = np.repeat(bounds[:-1], counts)
    rhi = r.astype(np.uint64) << np.uint64(32)
    if seed % 3 == 0:  # in order within each run (the shortcut)
        low = np.concatenate(
            [np.sort(np.array([rng.randint(0, 6) for _ in range(c)])) for c in counts.tolist()]
        )
    elif seed % 3 == 1:  # any order (the sort)
        low = np.array([rng.randint(0, 6) for _ in range(len(r))])
    else:  # every value its run's first
        low = np.zeros(len(r), np.int64)
    v = rhi | low.astype(np.uint64)
    assert run_rows.first_seen(v, start).tolist() == _first_seen_plain(v, start)


@pytest.mark.parametrize("collide", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_run_keys_of_equals_the_rows_bytes(seed, collide, monkeypatch):
    # runs drawn from a few row patterns: many equal keys, some runs of equal length with other rows. With the
    # hash's multipliers made 0 (every row's words summed alike: keys collide) the keys are still each run's bytes
    rng = random.Random(seed)
    bounds, counts, r = _runs(rng, 60)
    cols = 26
    patterns = [
        np.array([[rng.randint(0, 3) for _ in range(cols)] for _ in range(5)], np.uint32) for _ in range(4)
    ]
    ext = np.concatenate([patterns[rng.randrange(4)][:c] for c in counts.tolist()])
    if collide:
        monkeypatch.setattr(run_rows, "_GOLDEN", np.uint64(0))
        monkeypatch.setattr(run_rows, "_MIX", np.uint64(0))
        # two runs of one row whose words sum alike (1 in the first word, 1 in the second): one hash, two keys
        counts[0] = counts[1] = 1
        np.cumsum(counts, out=bounds[1:])
        r = np.repeat(np.arange(len(counts)), counts)
        ext = np.concatenate([patterns[rng.randrange(4)][:c] for c in counts.tolist()])
        ext[0], ext[1] = 0, 0
        ext[0, 0] = ext[1, 2] = 1
    ext = np.ascontiguousarray(ext)
    keys, kid = run_rows.run_keys_of(ext, bounds, counts, r)
    w = cols * 4
    flat = ext.tobytes()
    assert keys == [
        flat[a * w : b * w] for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)
    ]
    assert (kid is None) == collide
    if kid is not None:
        for i in range(len(keys)):
            for j in range(len(keys)):
                assert (kid[i] == kid[j]) == (keys[i] == keys[j])
                assert (keys[i] is keys[j]) == (keys[i] == keys[j])


def test_colliding_run_keys_leave_the_mix_unchanged(tmp_path, monkeypatch):
    # every run's hash made its rows' plain word sum: runs of different keys collide, their keys are then each
    # run's own bytes (and numbered by the marks), and the replay equals the reference path's
    path = tmp_path / "mix.pcap"
    with PcapWriter(path) as w:
        for ts, f in mix_frames(OverlayMix(frames=3000, seed=3)):
            w.write(ts, f)
    monkeypatch.setattr(run_rows, "_GOLDEN", np.uint64(0))
    monkeypatch.setattr(run_rows, "_MIX", np.uint64(0))
    monkeypatch.setattr(pollcache, "BLOCK", 100_000)
    got, want, counts = batch_and_reference(path, ReplayConfig())
    assert got == want
    assert counts["polls_served"] > 50, counts
