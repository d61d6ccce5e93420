"""Polls whose flow runs are all known, answered a block at a time (sim/run_serve.py), against the reference path.

Every comparison expects "identical": the JSON document of the batch path equals the frame-by-frame reference
path's (``ReplayConfig(fast_path=False)``), dict order included. The overlay-node mix (synth_mix.py) is where
nearly every poll is new as a whole and made of known runs; it is read in small blocks (many block boundaries, marks
made afresh), with the poll models that cut polls differently, with flows retired between polls (their counters
settled first: ``FlowTracking._flow_changed``), and with the outer UDP checksums checked in software (every run then
keyed by its exact lengths: ``udp_rcv`` adds bytes that are not an skb's length).
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from conftest import batch_and_reference, new_runs_capture

from gro_replay import pollcache
from gro_replay.capture.writer import PcapWriter
from gro_replay.sim import PollModel, ReplayConfig
from gro_replay.sim.runs import LengthOps
from gro_replay.synth_mix import OverlayMix, mix_frames


def _mix(tmp_path, frames: int = 4000, seed: int = 11):
    path = tmp_path / "mix.pcap"
    with PcapWriter(path) as w:
        for ts, f in mix_frames(OverlayMix(frames=frames, seed=seed)):
            w.write(ts, f)
    return path


@pytest.mark.parametrize("poll", ["budget", "gap:3", "rx-usecs:16"])
@pytest.mark.parametrize("block", [30_000, 400_000])
def test_served_polls_equal_the_reference_on_the_mix(poll, block, tmp_path, monkeypatch):
    monkeypatch.setattr(pollcache, "BLOCK", block)
    got, want, counts = batch_and_reference(_mix(tmp_path), ReplayConfig(poll=PollModel.parse(poll)))
    assert got == want
    # not vacuous: polls were served (the mix's runs recur, its polls do not; a full poll's runs more often hold
    # more packets together than a bucket keeps, or fill a cell's poll: those are composed one by one)
    assert counts["polls_served"] > (20 if poll == "budget" else 150), counts


def test_served_polls_with_flows_retired_between_them(tmp_path, monkeypatch):
    # a 100 µs idle timeout retires the mix's connections between their bursts (idle gaps: 4 µs mean, exponential,
    # per connection 48 times longer), in the middle of blocks: the served runs' counters are added before
    monkeypatch.setattr(pollcache, "BLOCK", 60_000)
    got, want, counts = batch_and_reference(
        _mix(tmp_path, seed=12), ReplayConfig(flow_idle_timeout_ns=100_000)
    )
    assert got == want
    assert json.loads(want)["kernels"][0]["flows_summary"]["retired"] > 48
    assert counts["polls_served"] > 100, counts


def test_served_polls_keyed_by_exact_lengths(tmp_path, monkeypatch):
    # rx-csum none: the stack checks the computed outer UDP checksums in software (udp_rcv: bytes that are not an
    # skb's length), so those runs are keyed by their exact lengths
    monkeypatch.setattr(pollcache, "BLOCK", 60_000)
    got, want, counts = batch_and_reference(_mix(tmp_path, seed=13), ReplayConfig(rx_csum="none"))
    assert got == want
    assert counts["polls_served"] > 100, counts


def test_length_counters_of_runs_added_together():
    # a recorded run of two frames whose skb counted both payloads (skb_gro_receive appends them: the counter moves
    # by one byte per payload byte, sim/runs.py); three runs with the same key: as recorded, the second frame 200
    # bytes shorter, the first 398 bytes shorter
    class Stage:
        bytes = 10_000

    st = Stage()
    ops = LengthOps([(st, "bytes", np.array([1, 1], np.int64))], np.array([1398, 700], np.int64))
    assert ops.add_runs(np.array([[1398, 700]], np.int64)) is False  # as recorded: nothing to add
    assert ops.add_runs(np.array([[1398, 500], [1000, 700]], np.int64)) is True
    assert ops.add(np.array([1398, 690], np.int64).tobytes()) is False  # noted already: settled with the rest
    ops.settle()
    assert st.bytes == 10_000 - 200 - 398 - 10
    ops.settle()
    assert st.bytes == 9_392


def test_each_poll_is_marked_again_in_its_turn_only(tmp_path, monkeypatch):
    # 500 polls (gap:3: each triple is one poll), each with a known run (flow a: one PSH frame) and a run never seen
    # before (flow b: a random TCP window on its second frame): every poll records a run. Each poll's runs are
    # looked up when the block is first marked and at most once more in its turn (breaker's finding: every poll
    # left with an unknown run was marked again after each recording, quadratic in the block's polls)

    from gro_replay.sim import run_serve

    path = new_runs_capture(tmp_path / "new-runs.pcap")
    looked = []
    look_up = run_serve.RunServe._look_up

    def counted(self, runs, lists, js, full, m):
        looked.append(len(js))
        return look_up(self, runs, lists, js, full, m)

    monkeypatch.setattr(run_serve.RunServe, "_look_up", counted)
    got, want, counts = batch_and_reference(path, ReplayConfig())
    assert got == want
    assert counts["polls_composed"] == 500, counts
    assert sum(looked) <= 2 * 2 * 500  # two runs a poll, looked up at most twice


def test_a_key_made_length_exact_marks_again_only_the_polls_with_its_runs(tmp_path, monkeypatch):
    # 600 polls (10 µs apart) of one PSH frame of flow b, its payload length new to each poll (its run key holds the
    # length's rank, the whole-poll key the length: every poll is composed of its run), and from poll 300 on every
    # 50th poll also a two-frame run of flow a, whose key is made length-exact when it is recorded (forced here:
    # looking a run up by its exact lengths is always right, sim/runs.py). A run's lookup reads whether its own key
    # is length-exact (sim/run_lookup.py ``_lookup``), so after that recording only the polls with a run of a's key
    # are marked again (sim/run_serve.py ``_unmark``); b's polls keep their marks and are served
    import random

    from gro_replay.packet.build import ACK, PSH, FrameSpec, build_frame
    from gro_replay.sim import compose, run_serve

    rng = random.Random(2)
    a = FrameSpec(sport=40001, inner_src="192.168.1.11", payload=100)
    b = FrameSpec(sport=40002, inner_src="192.168.1.12", payload=1, seq=7_000_000)
    path, t = tmp_path / "exact.pcap", 1_000_000_000
    with PcapWriter(path) as w:
        for i in range(600):
            n = rng.randrange(1, 1000)
            w.write(t, build_frame(replace(b, flags=ACK | PSH, ip_id=i, payload=n)))
            b = replace(b, seq=b.seq + n)
            if i >= 300 and i % 50 == 0:
                w.write(t + 100, build_frame(replace(a, flags=ACK, ip_id=i)))
                w.write(t + 200, build_frame(replace(a, flags=ACK | PSH, ip_id=i + 1, seq=a.seq + 100)))
                a = replace(a, seq=a.seq + 200)
            t += 10_000
    record_run = compose.RunComposer._record_run

    def exact_a(self, key, ctx, batch, *args):
        if len(batch) == 2:  # flow a's run
            self._exact_runs.add(key)
        return record_run(self, key, ctx, batch, *args)

    marked_again = []  # per poll marked again after a's key was made length-exact: it has a run of a's key
    servable = run_serve.RunServe._servable

    def noted(self, m, polls):
        polls = list(polls)
        if len(polls) == 1 and self._exact_runs:
            q = polls[0]
            marked_again.append(
                any(k in self._exact_runs for k in m.runs.keys[m.run_at[q] : m.run_at[q + 1]])
            )
        return servable(self, m, polls)

    monkeypatch.setattr(pollcache, "BLOCK", 60_000)
    monkeypatch.setattr(compose.RunComposer, "_record_run", exact_a)
    monkeypatch.setattr(run_serve.RunServe, "_servable", noted)
    got, want, counts = batch_and_reference(path, ReplayConfig())
    assert got == want
    assert counts["runs_recorded"] == 2, counts  # b's run and a's
    assert marked_again == [True] * len(marked_again) and 1 <= len(marked_again) <= 5, marked_again
    assert counts["polls_served"] >= 590, counts
