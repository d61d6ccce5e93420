"""``input.duration_ns``: the span of the records' timestamps, latest − earliest, never negative, equal on the
batch path (pollcache.py) and the reference path (``ReplayConfig(fast_path=False)``), however the times run."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import FIX_SAMPLE
from test_reader import epb, idb, shb  # the pcapng block builders of the reader's tests

from gro_replay import pollcache
from gro_replay.capture.reader import open_capture
from gro_replay.capture.writer import PcapWriter
from gro_replay.cli import main
from gro_replay.report.document import document
from gro_replay.sim import ReplayConfig, replay_capture

S = 1_000_000_000


def _frames() -> list[bytes]:
    with open_capture(str(FIX_SAMPLE)) as cap:
        return [buf for _ts, buf, _o, _lt in cap]


def _pcap(path, times) -> str:
    frames = _frames()
    with PcapWriter(path) as w:
        for i, ts in enumerate(times):
            w.write(ts, frames[i % len(frames)])
    return str(path)


def _durations(path) -> tuple[int, int, dict | None]:
    """duration_ns of the batch path's document, of the reference path's, and the batch path's counts."""
    fast = replay_capture(path, ReplayConfig())
    ref = replay_capture(path, ReplayConfig(fast_path=False))
    assert ref.batch is None
    return document(fast)["input"]["duration_ns"], document(ref)["input"]["duration_ns"], fast.batch


def test_times_running_backwards_span_earliest_to_latest(tmp_path):
    # 5 s, 5.000001 s, 5.000002 s, then 1 s: the span is 5.000002 − 1 = 4.000002 s (last − first was −4 s)
    path = _pcap(tmp_path / "back.pcap", [5 * S, 5 * S + 1000, 5 * S + 2000, 1 * S])
    fast, ref, batch = _durations(path)
    assert batch is not None  # the batch path ran
    assert fast == ref == 4 * S + 2000


@pytest.mark.parametrize("block", [2, 3, 65536])
def test_batch_path_span_across_blocks(tmp_path, monkeypatch, block):
    # the earliest record in the middle of a block and the latest in an earlier block
    times = [10 * S, 12 * S, 11 * S, 3 * S, 4 * S, 9 * S, 6 * S]
    monkeypatch.setattr(pollcache, "BLOCK", block)
    fast, ref, _batch = _durations(_pcap(tmp_path / "mix.pcap", times))
    assert fast == ref == 12 * S - 3 * S


def test_ordered_times_span_is_last_minus_first(tmp_path):
    fast, ref, _ = _durations(_pcap(tmp_path / "ok.pcap", [7 * S, 7 * S + 500, 8 * S]))
    assert fast == ref == S


def test_pcapng_interfaces_of_different_resolution(tmp_path):
    # interface 0 at µs (the default if_tsresol 6), interface 1 at ns (if_tsresol 9): 2 s, 1 s, 3 s, 1.5 s
    frames = _frames()
    data = shb() + idb(1) + idb(1, tsresol=9)
    data += epb(0, 2_000_000, frames[0]) + epb(1, 1 * S, frames[1])
    data += epb(0, 3_000_000, frames[2]) + epb(1, S + S // 2, frames[3])
    path = tmp_path / "two.pcapng"
    path.write_bytes(data)
    r = CliRunner().invoke(main, [str(path), "--format", "json", "-q"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["input"]["duration_ns"] == 3 * S - 1 * S
    fast, ref, _ = _durations(str(path))
    assert fast == ref == 2 * S


def test_filtered_records_count_in_the_span(tmp_path):
    pytest.importorskip("pcapy", reason="the bpf extra (pcapy-ng) is part of the test extra")
    # both records rejected by -f (counted in input.filtered.bpf): they were read, their times count
    path = _pcap(tmp_path / "two.pcap", [5 * S, 2 * S])
    r = CliRunner().invoke(main, [path, "--format", "json", "-q", "-f", "tcp"])
    assert r.exit_code == 0, r.output
    inp = json.loads(r.stdout)["input"]
    assert inp["filtered"] == {"bpf": 2} and inp["duration_ns"] == 3 * S
