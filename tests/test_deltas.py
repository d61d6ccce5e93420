"""sim/deltas.py: a recorded poll's counter delta holds every counter the poll changed.

The batch engine adds a recorded delta for each later poll with the same key (pollcache.py); a counter that
``counters`` does not snapshot would be counted for the recording poll only, and the batch path would differ from
the reference path wherever that counter moves. ``test_pollcache.py`` compares whole documents, but only for the
counters the documents show; here every number reachable from each kernel's stats (stages, stack, flows, NAPIs,
tunnel cells) is read before and after each poll of the reference path, and each one that moved must be in the
delta with its increment; ``undo`` (every second poll, which then runs again) puts every one back.

It catches a counter left out of ``counters`` where these captures move it (a breaker left out ``full_polls``,
``stack_frames``, ``devices`` and the NAPI ``counts`` one at a time: each failed here). Counters no poll of them
moves are not tested by it: a stage's ``complete_errors`` (summed from the NAPIs' after the replay) and a flow's
``frames`` (not incremented by a poll), ``hist_over`` (skbs of more than 64 segments: NAPI weights are at most 64),
a tunnel cell's ``dropped`` (more than 1,000 queued skbs; a cell gets one poll's) and a NAPI's
``complete_errors`` (a failing gro_complete, which none of these frames has).
"""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from test_scenarios import random_scenario

from gro_replay.capture.writer import PcapWriter
from gro_replay.report import stats as stats_mod
from gro_replay.report.document import document
from gro_replay.sim import ReplayConfig, replay_capture
from gro_replay.sim.deltas import counters, delta, undo
from gro_replay.sim.replayer import Replayer

SAMPLES = sorted((Path(__file__).resolve().parent.parent / "sample_pcaps").glob("*.pcap"))
#: ``KernelStats`` attributes that are not counters a poll changes (the flows are walked one by one)
_NOT_POLL_COUNTERS = {"flows", "on_deliver"}


def _numbers(o: Any, out: dict, seen: set[int]) -> None:
    """Every number reachable from ``o`` through dicts, lists and the stats classes' attributes, as
    ``{(id(container), key or attribute name): value}``."""
    if id(o) in seen:
        return
    seen.add(id(o))
    if isinstance(o, dict):
        items = list(o.items())
    elif isinstance(o, list):
        items = list(enumerate(o))
    else:
        names = list(getattr(o, "__dict__", {})) + [
            n for c in type(o).__mro__ for n in getattr(c, "__slots__", ()) if hasattr(o, n)
        ]
        items = [(n, getattr(o, n)) for n in names]
    for key, v in items:
        if isinstance(v, bool) or v is None:
            continue
        if isinstance(v, int):
            out[(id(o), key)] = v
        elif isinstance(v, (dict, list)) or type(v).__module__ == stats_mod.__name__:
            _numbers(v, out, seen)


def _all_numbers(k: Any, st: Any, fids: set[int]) -> dict:
    out: dict = {}
    seen: set[int] = set()
    for name in [*vars(st)]:
        if name not in _NOT_POLL_COUNTERS and not name.startswith("_"):
            v = getattr(st, name)
            if isinstance(v, (dict, list)) or type(v).__module__ == stats_mod.__name__:
                _numbers(v, out, seen)
    for fid in fids:
        if fid in st.flows:
            _numbers(st.flows[fid], out, seen)
    for n in [k.phys_napi] + [c.napi for c in k.tunnel_cells]:
        _numbers(n.stats, out, seen)
    for c in k.tunnel_cells:
        out[(id(c), "dropped")] = c.dropped
    return out


def _check(path: Path, cfg: ReplayConfig, monkeypatch) -> dict[str, int]:
    """Replay ``path`` on the reference path with every poll's delta checked (module docstring), and every second
    poll put back and run again; the document must equal an unchecked replay's. Returns what was checked."""
    run_poll = Replayer.run_poll
    checked = {"polls": 0, "moved": 0, "undone": 0}

    def checked_poll(self, batch, poll_time):
        fids = {f.flow_id for f in batch}
        before = [counters(k, self.stats[i], fids) for i, k in enumerate(self.kernels)]
        numbers = [_all_numbers(k, self.stats[i], fids) for i, k in enumerate(self.kernels)]
        numbers_flows = [set(st.flows) for st in self.stats]
        undone: list[int] = []
        run_poll(self, batch, poll_time)
        for i, k in enumerate(self.kernels):
            after = counters(k, self.stats[i], fids)
            attr_ops, item_ops = delta(before[i], after)
            ops = {(id(o), key): inc for o, key, inc in attr_ops + item_ops}
            now = _all_numbers(k, self.stats[i], fids)
            moved = {key: v - numbers[i].get(key, 0) for key, v in now.items() if v != numbers[i].get(key, 0)}
            assert moved == ops, (path.name, checked["polls"])
            checked["moved"] += len(moved)
            if checked["polls"] % 2:  # every second poll put back (as sim/run_probe.py does) and replayed
                new_flows = [fid for fid in fids if fid not in numbers_flows[i]]
                undo(before[i], after)
                for fid in new_flows:
                    self.stats[i].flows.pop(fid, None)
                back = _all_numbers(k, self.stats[i], fids)
                assert back == {key: v for key, v in numbers[i].items() if key in back}, path.name
                assert set(numbers[i]) <= set(back), path.name
                undone.append(i)
        if undone:
            checked["undone"] += 1
            self.polls_run -= 1  # run again, counted once
            run_poll(self, batch, poll_time)
        checked["polls"] += 1

    want = json.dumps(document(replay_capture(str(path), cfg)), default=str)
    monkeypatch.setattr(Replayer, "run_poll", checked_poll)
    got = json.dumps(document(replay_capture(str(path), cfg)), default=str)
    assert (
        got == want
    )  # the polls put back and run again left the same counters (and dicts in the same order)
    monkeypatch.undo()
    return checked


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_every_counter_a_poll_changes_is_in_its_delta(path, monkeypatch):
    checked = _check(path, ReplayConfig(fast_path=False), monkeypatch)
    assert checked["polls"] >= 2 and checked["moved"] > 100, checked


@pytest.mark.parametrize("seed", range(8))
def test_every_counter_a_poll_changes_is_in_its_delta_on_seeded_scenarios(seed, tmp_path, monkeypatch):
    rng = random.Random(1000 + seed)
    frames, cfg = random_scenario(rng)
    cfg = replace(cfg, hz=250, gro_flush_timeout_ns=0, napi_defer_hard_irqs=0, rx_queues=1, fast_path=False)
    path = tmp_path / "s.pcap"
    span = frames[-1][0] - frames[0][0] + 1_000_000
    with PcapWriter(path) as w:  # three copies, each 1 ms after the previous one ends (test_pollcache.py)
        for r in range(3):
            for ts, f in frames:
                w.write(ts + r * span, f)
    checked = _check(path, cfg, monkeypatch)
    assert checked["polls"] >= 2 and checked["undone"] >= 1, checked
