"""A capture not in time order (capture/time_order.py): records timestamped before one read before them are counted
where each record is read, the same on every reader and path, and said in a note (newcomer's finding: two copies
of the fix sample joined with mergecap -a replayed without a word).

The fix sample's 17 frames are at 0–9 µs (1 µs apart), then 19–25 µs (synth --gap-us 1 --pause-every 10
--pause-us 10, Makefile ``samples``); the same frames again after them: all but the last of the second copy (25 µs,
equal to the latest) are behind, the first by 25 µs.
"""

from __future__ import annotations

import gzip
import json
import random
import subprocess
from dataclasses import replace

import dpkt
import numpy as np
import pytest
from conftest import CLI, FIX_SAMPLE, cli_env

from gro_replay.capture.time_order import TimeOrder
from gro_replay.capture.writer import PcapngWriter, PcapWriter
from gro_replay.sim import ReplayConfig, replay_capture

NOTE = (
    "16 records are timestamped before a record read before them (by up to 25.000 µs): the capture is not in time "
    "order (captures joined with mergecap -a, a clock step, several interfaces' clocks); the replay takes a frame "
    "that goes back in time as arriving at the latest time seen, so no poll goes back"
)


@pytest.mark.parametrize(
    ("ns", "words"),
    [
        (25_000, "25.000 µs"),
        (3_200_000, "3.200 ms"),
        (12_500_000_000, "12.500 s"),
        (999_999_500, "1.000 s"),  # second breaker's finding: "1,000.000 ms"
        (3_600 * 10**9, "1.0 h"),  # not "3,600.000 s"
        (90 * 60 * 10**9, "1.5 h"),
        (3 * 86_400 * 10**9, "3.0 days"),
        # newcomer's finding: two captures taken 51 years apart read "1,614,373,367,000,025.000 µs"
        (1_614_373_367_000_025_000, "51.2 years"),
    ],
)
def test_the_step_back_is_said_in_the_unit_that_reads(ns, words):
    from gro_replay.sim.notes import step_words

    assert step_words(ns) == words


def _records() -> list[tuple[int, bytes]]:
    with open(FIX_SAMPLE, "rb") as f:
        r = dpkt.pcap.Reader(f)
        return [(int(ts * 10**9), bytes(buf)) for ts, buf in r]  # nanosecond pcap: Decimal seconds


@pytest.fixture(scope="module")
def joined(tmp_path_factory):
    """The fix sample twice, one copy after the other (as mergecap -a joins them), as pcap, pcap.gz and pcapng."""
    d = tmp_path_factory.mktemp("joined")
    recs = _records() * 2
    pcap = d / "j.pcap"
    with PcapWriter(pcap) as w:
        for ts, buf in recs:
            w.write(ts, buf)
    (d / "j.pcap.gz").write_bytes(gzip.compress(pcap.read_bytes()))
    with PcapngWriter(d / "j.pcapng", [("eth0", "")]) as w:
        for ts, buf in recs:
            w.write(ts, buf)
    return d


@pytest.mark.parametrize("name", ["j.pcap", "j.pcap.gz", "j.pcapng"])
@pytest.mark.parametrize("fast", [True, False], ids=["batch", "reference"])
def test_every_reader_and_path_counts_the_same(joined, name, fast):
    r = replay_capture(str(joined / name), replace(ReplayConfig(), fast_path=fast))
    assert NOTE in r.input.notes


def test_a_pipe_says_it_too(joined):
    out = subprocess.run(
        [*CLI, "-", "--format", "json", "-q"],
        input=(joined / "j.pcap").read_bytes(),
        capture_output=True,
        env=cli_env(),
        check=True,
    ).stdout
    assert NOTE in json.loads(out)["input"]["notes"]


def test_a_capture_in_time_order_has_no_such_note():
    r = replay_capture(str(FIX_SAMPLE), ReplayConfig())
    assert not any("timestamped before" in n for n in r.input.notes)


def test_one_record_at_a_time_and_a_block_count_alike():
    rng = random.Random(7)
    for _ in range(200):
        ts = [rng.choice([0, 5, 10, 10, 20]) + rng.randrange(3) for _ in range(rng.randrange(1, 40))]
        one, block = TimeOrder(), TimeOrder()
        for t in ts:
            one.add(t)
        cut = rng.randrange(len(ts) + 1)  # the records in two blocks, as a reader hands them
        block.add_records(np.array(ts[:cut], np.int64))
        block.add_records(np.array(ts[cut:], np.int64))
        latest, behind, worst = None, 0, 0
        for t in ts:  # by the definition: before the latest timestamp read before it
            if latest is not None and t < latest:
                behind, worst = behind + 1, max(worst, latest - t)
            latest = t if latest is None else max(latest, t)
        assert (
            (one.behind, one.largest_step_back_ns)
            == (block.behind, block.largest_step_back_ns)
            == (behind, worst)
        )
