"""Polls whose unknown flow runs could fill a tunnel cell's poll (sim/run_probe.py) against the reference path.

Before the fix (89e5c58fc1e2), zero-checksum VXLAN frames reach the tunnel cell one skb each, so a full poll of
them fills the cell's poll (``gro_cell_poll`` takes its weight, ``napi_poll`` flushes with the budget used up and
polls it again: ``budget_exhausted`` at the tunnel stage), while frames with an outer checksum merge on the
physical device and put fewer skbs there. A poll whose known runs and unknown runs could together reach the
cell's weight has its unknown runs recorded first (``RunProbe._probe``): when the cell's poll does not fill, the
poll is composed with them as they ran; when it fills, their counters are put back and the poll runs whole (and
is recorded in the poll cache, which answers the same poll later). Every comparison expects "identical" (the JSON document, and with
observers the ``--trace`` text and explain's output, of the frame-by-frame reference path); each case checks that
both outcomes of the probe happened and that the reference filled the cell's poll, so that it is not vacuous.
"""

from __future__ import annotations

import random
from collections import Counter

from test_runs import MSS, _Conn, _reasons, _replayed, _write
from test_runs_observed import _compared

from gro_replay.kernel import reasons as R
from gro_replay.sim import ReplayConfig
from gro_replay.sim.run_probe import RunProbe


def _polls(seed: int, n: int) -> list[list[bytes]]:
    """Full polls (64 frames) and a fifth cut short, of writes of 1–12 segments (the last one full or of random
    length) of zero-checksum connections, or of five of them and three with an outer checksum (merged on the
    physical device): runs of new shapes keep coming."""
    rng = random.Random(seed)
    zero = [_Conn(i) for i in range(8)]
    summed = [_Conn(8 + i, "computed") for i in range(3)]
    polls = []
    for _ in range(n):
        conns = rng.choice([zero, zero[:5] + summed])
        burst: list[bytes] = []
        while len(burst) < 64:
            c = rng.choice(conns)
            k = min(rng.randint(1, 12), 64 - len(burst))
            burst += [
                c.segment(MSS if j < k - 1 else rng.choice([MSS, rng.randint(1, MSS)]), False)
                for j in range(k)
            ]
        polls.append(burst if rng.random() < 0.8 else burst[: rng.randint(10, 63)])
    return polls


def _outcomes(monkeypatch) -> Counter:
    """Count ``_probe``'s outcomes: ``kept`` (composed with the recorded runs) and ``put back`` (the cell's poll
    fills, or a guard refuses: the poll runs whole)."""
    seen: Counter = Counter()
    probe = RunProbe._probe

    def counted(self, *a, **k):
        got = probe(self, *a, **k)
        seen["put back" if got is None else "kept"] += 1
        return got

    monkeypatch.setattr(RunProbe, "_probe", counted)
    return seen


def test_unknown_runs_recorded_before_the_poll_is_decided(tmp_path, monkeypatch):
    seen = _outcomes(monkeypatch)
    want, counts = _replayed(tmp_path, _polls(1, 100), ReplayConfig())
    assert seen["kept"] > 0 and seen["put back"] > 0, seen
    assert counts["polls_composed"] > 40, counts
    assert _reasons(want, "tunnel").get(R.BUDGET_EXHAUSTED, 0) > 0


def test_unknown_runs_recorded_before_the_poll_is_decided_observed(tmp_path, monkeypatch):
    seen = _outcomes(monkeypatch)
    path = tmp_path / "c.pcap"
    _write(path, _polls(2, 100))
    want, counts, _trace = _compared(path, ReplayConfig())
    assert seen["kept"] > 0 and seen["put back"] > 0, seen
    assert counts["polls_composed"] > 40, counts
    assert _reasons(want, "tunnel").get(R.BUDGET_EXHAUSTED, 0) > 0


def test_a_poll_that_fills_the_cell_is_recorded_whole(tmp_path, monkeypatch):
    """The 89e5c58fc1e2 bulk flow: every full poll of one zero-checksum connection puts 64 skbs into the cell
    before the fix (no GRO on the physical device) and fills its poll. The first is probed, put back and run whole;
    every later poll (the same whole key: sequence numbers and IDs relative to the poll) is answered from the poll
    cache, none composed."""
    seen = _outcomes(monkeypatch)
    conn = _Conn(0)
    polls = [[conn.segment(MSS, False) for _ in range(64)] for _ in range(30)]
    want, counts = _replayed(tmp_path, polls, ReplayConfig())
    assert seen == Counter({"put back": 1}), seen
    assert counts["polls_composed"] == 0 and counts["polls_cached"] >= 29, counts
    assert _reasons(want, "tunnel").get(R.BUDGET_EXHAUSTED, 0) == 30


def test_a_probe_put_back_when_one_kernel_saw_nothing_of_a_flow(monkeypatch):
    """A fuzzing reproducer (tests/data/probe-flow-unseen-by-one-kernel.pcap, 64 frames made with
    gro_replay.packet.build, reduced by delta debugging): 5.4, 5.11 and 6.6 on budget polls, --resegment 700,
    gro_max_size 20000, no tunnel metadata, flows retired after 40 µs. A probed poll that runs whole put its
    recordings' counters back and removed the flows they created in every kernel's stats, one of which had none
    of that flow: KeyError on the batch path. Both paths must give the same document, and the probe must have
    run whole (so that the put-back is what is compared)."""
    from pathlib import Path

    from test_runs import _docs, _same

    from gro_replay.kernel.release import resolve_kernel
    from gro_replay.sim import PollModel

    put_back = []
    probe = RunProbe._probe

    def watched(self, *a, **k):
        out = probe(self, *a, **k)
        put_back.append(out is None)
        return out

    monkeypatch.setattr(RunProbe, "_probe", watched)
    path = Path(__file__).parent / "data" / "probe-flow-unseen-by-one-kernel.pcap"
    cfg = ReplayConfig(
        # found with 5.4, 5.10 and 6.6; 5.4 and 5.10 are one kernel model (equal switches), which ReplayConfig
        # refuses: 5.11 (8dc1c444df19 on, still without the fix) takes 5.10's place
        kernels=tuple(resolve_kernel(r) for r in ("5.4", "5.11", "6.6")),
        poll=PollModel.parse("budget"),
        vxlan_ports=(4789,),
        tunnel_metadata=False,
        gro_max_size=20000,
        resegment=700,
        flow_idle_timeout_ns=40_000,
        flow_close_timeout_ns=1_000_000,
    )
    got, want, _counts = _docs(path, cfg)
    _same(got, want)
    assert any(put_back)
    assert [k["flows_summary"]["flows"] for k in want["kernels"]] == [
        k["flows_summary"]["flows"] for k in got["kernels"]
    ]
