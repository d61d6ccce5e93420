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
import struct
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


# --- the replayed interface's records only (newcomer's finding: `cat b.pcapng s.pcapng` of the 4-flows sample and the
# fix sample said "17 records are timestamped before a record read before them (by up to 399.000 µs)": the fix
# sample's 17 records, at 0–25 µs after the 4-flows sample's 400 at 0–399 µs, are the other interface's, skipped) ---

BULK_SAMPLE = FIX_SAMPLE.parent / "vxlan-4flows-computed-csum.pcap"


def _bulk() -> list[tuple[int, bytes]]:
    with open(BULK_SAMPLE, "rb") as f:
        return [(int(ts * 10**9), bytes(buf)) for ts, buf in dpkt.pcap.Reader(f)]


def _pcapng_bytes(ifaces: list[str], recs: list[tuple[int, int, bytes]]) -> bytes:
    """One pcapng section of the interfaces named ``ifaces`` and records ``(iface, ts_ns, frame)`` in that order."""
    import io

    out = io.BytesIO()
    w = PcapngWriter(out, [(name, "") for name in ifaces])
    for i, ts, buf in recs:
        w.write(ts, buf, i)
    return out.getvalue()


def _sll2(ifindex: int, frame: bytes) -> bytes:
    """Ethernet ``frame`` as a Linux cooked v2 record of ``ifindex`` (libpcap pcap/sll.h ``sll2_header``: protocol,
    reserved, ifindex, ARPHRD_ETHER 1, PACKET_HOST 0, address length 6, address padded to 8 bytes)."""
    head = struct.pack("!HHIHBB8s", int.from_bytes(frame[12:14], "big"), 0, ifindex, 1, 0, 6, frame[6:12])
    return head + frame[14:]


@pytest.fixture(scope="module")
def several(tmp_path_factory):
    """Captures of several interfaces, each built so that the replayed interface's order differs from the file's.

    The samples' own order: the 4-flows sample's 400 records and the fix sample's 17 are each in time order, both
    from the same second (0–399 µs and 0–25 µs; checked below).
    - ``bs.pcapng``: the two samples as two one-interface sections (``cat b.pcapng s.pcapng``, the newcomer's
      file): interface 0 (section 1) is replayed (its first record is the first tunnel frame); the fix sample's 17
      records are all timestamped before the 4-flows sample's last (399 µs), but interface 1's own are in order.
    - ``two.pcapng``: one section; eth0 holds the fix sample twice (16 behind by up to 25 µs: the module
      docstring), eth1 the 4-flows sample after them (its first 26 records, 0–25 µs, are before the fix sample's
      latest, 25 µs, in file order; in its own order none). eth0 is replayed (the first record is its tunnel frame).
    - ``names.pcapng``: two sections, eth0 in each holding one copy of the fix sample (one device: the interfaces
      of one if_name), section 2 also eth1 with the 4-flows sample; eth0's records over both sections are the fix
      sample twice: 16 behind by up to 25 µs, none of which either section's eth0 shows alone.
    - ``sll2.pcap``: Linux cooked v2 (tcpdump -i any): ifindex 2 the fix sample twice, ifindex 5 the 4-flows sample
      after them, as in ``two.pcapng``.
    """
    fix, bulk = _records(), _bulk()
    for recs in (fix, bulk):
        assert [t for t, _ in recs] == sorted(t for t, _ in recs)
    assert fix[0][0] == bulk[0][0] and bulk[-1][0] - bulk[0][0] == 399_000
    d = tmp_path_factory.mktemp("several")
    one = {
        name: _pcapng_bytes([""], [(0, t, b) for t, b in recs]) for name, recs in (("b", bulk), ("s", fix))
    }
    (d / "bs.pcapng").write_bytes(one["b"] + one["s"])
    (d / "two.pcapng").write_bytes(
        _pcapng_bytes(["eth0", "eth1"], [(0, t, b) for t, b in fix * 2] + [(1, t, b) for t, b in bulk])
    )
    (d / "names.pcapng").write_bytes(
        _pcapng_bytes(["eth0"], [(0, t, b) for t, b in fix])
        + _pcapng_bytes(["eth0", "eth1"], [(0, t, b) for t, b in fix] + [(1, t, b) for t, b in bulk])
    )
    with PcapWriter(d / "sll2.pcap", linktype=276) as w:
        for ifindex, recs in ((2, fix * 2), (5, bulk)):
            for t, b in recs:
                w.write(t, _sll2(ifindex, b))
    for name in ("bs.pcapng", "two.pcapng", "names.pcapng", "sll2.pcap"):
        (d / (name + ".gz")).write_bytes(gzip.compress((d / name).read_bytes()))
    return d


def _behind(replayed: str, n: int, step: str, several: bool = False) -> str:
    one = not several
    return (
        f"{n} records of {replayed}, the {'interface' if one else 'interfaces'} replayed, are timestamped before one "
        f"of {'its' if one else 'their'} records read before them (by up to {step}): {'its' if one else 'their'} "
        "frames are not in time order (captures joined with mergecap -a, a clock step"
        f"{'' if one else ', several interfaces' + chr(39) + ' clocks'}); the replay takes a frame that goes back in "
        "time as arriving at the latest time seen, so no poll goes back"
    )


#: capture, --interface, the replayed records' note (None: they are in time order), frames replayed
SEVERAL = [
    ("bs.pcapng", None, None, 400),
    ("bs.pcapng", "1", None, 17),
    ("two.pcapng", None, _behind("interface 0 (eth0)", 16, "25.000 µs"), 34),
    ("two.pcapng", "eth1", None, 400),
    (
        "names.pcapng",
        None,
        _behind("interface 0 (eth0, section 1) and interface 1 (eth0, section 2)", 16, "25.000 µs", True),
        34,
    ),
    ("names.pcapng", "eth1", None, 400),
    ("sll2.pcap", None, _behind("ifindex 2", 16, "25.000 µs"), 34),
    ("sll2.pcap", "5", None, 400),
]
PATHS = {"batch": [], "frame-by-frame": ["--rx-queues", "2"]}


def _notes(args: list[str], stdin: bytes | None = None) -> tuple[list[str], int]:
    out = subprocess.run(
        [*CLI, *args, "--format", "json", "-q"], input=stdin, capture_output=True, env=cli_env(), check=True
    ).stdout
    inp = json.loads(out)["input"]
    return [n for n in inp["notes"] if "timestamped before" in n], inp["frames_replayed"]


@pytest.mark.parametrize(("name", "want", "note", "replayed"), SEVERAL)
@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("how", ["file", "gzip", "stdin"])
def test_the_count_is_of_the_replayed_interfaces_records(several, name, want, note, replayed, path, how):
    """Every reader path (pcap and pcapng; batch and frame-by-frame; a file, gzip, standard input) and
    ``--interface``: the note counts the records of the interface replayed, never the others'."""
    f = several / (name + (".gz" if how == "gzip" else ""))
    args = ["-" if how == "stdin" else str(f), *PATHS[path], *(["--interface", want] if want else [])]
    got = _notes(args, f.read_bytes() if how == "stdin" else None)
    assert got == ([note] if note else [], replayed)


def test_a_capture_of_one_interface_still_counts_every_record(joined):
    """Nothing left out: the note is the capture's (as ``NOTE``), also where a selection hands the records on (a
    pcapng pipe) and where every interface is replayed."""
    assert _notes(["-"], (joined / "j.pcapng").read_bytes())[0] == [NOTE]
