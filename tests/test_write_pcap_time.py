"""``--write-pcap DIR``: a delivery time the output format cannot hold is one line naming ``--write-pcap DIR`` and
the time, exit 2, and no file (a file lacking that frame and every later one is not a success).

Limits (the record headers): classic pcap ``ts_sec`` is a u32, 0 .. 2^32 s (2106-02-07 06:28:16 UTC); pcapng at
if_tsresol 9 ``ts_high:ts_low`` is a u64, 0 .. 2^64 ns (2554-07-21 23:34:33 UTC).
"""

from __future__ import annotations

import re

from click.testing import CliRunner
from conftest import FIX_SAMPLE
from test_reader import epb, idb, shb  # the pcapng block builders of the reader's tests

from gro_replay.capture.reader import open_capture
from gro_replay.cli import main

PCAP_END_NS = (1 << 32) * 1_000_000_000  # the first nanosecond classic pcap cannot hold


def _pcapng_from(path, start_ns: int) -> str:
    """FIX_SAMPLE's 17 frames, their spacing kept, the first at ``start_ns`` (if_tsresol 9: exact ns)."""
    with open_capture(str(FIX_SAMPLE)) as cap:
        recs = [(ts, buf) for ts, buf, _o, _lt in cap]
    t0 = recs[0][0]
    data = shb() + idb(1, tsresol=9)
    for ts, buf in recs:
        data += epb(0, start_ns + ts - t0, buf)
    path.write_bytes(data)
    return str(path)


def _run(*args):
    return CliRunner().invoke(main, [*args, "-q", "--no-hist"])


def test_classic_pcap_output_after_2106_is_one_line_exit_2(tmp_path):
    cap = _pcapng_from(tmp_path / "far.pcapng", 1 << 62)  # 4611686018.427387904 s: 2116-02-20
    out = tmp_path / "out"
    r = _run(cap, "--write-pcap", str(out), "--pcap-format", "pcap")
    assert r.exit_code == 2, r.output
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith(f"Error: --write-pcap {out}: pre-fix eth0 delivered a frame at 4611686018.")
    # the first delivery: at or after the first frame (2^62 ns), within the capture's 25 µs
    sec, ns = re.search(r"at (\d+)\.(\d{9}) s ", line).groups()
    assert 1 << 62 <= int(sec) * 10**9 + int(ns) <= (1 << 62) + 25_000
    assert "(2116-02-20 23:53:38 UTC)" in line and "--pcap-format pcap cannot hold" in line
    assert line.endswith("; no file written")
    assert not out.exists() and r.stdout == ""  # the directory this run made is gone again, no report
    # pcapng holds the same times: the same capture runs, both kernels' files written
    r = _run(cap, "--write-pcap", str(out))
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in out.iterdir()) == ["post-fix.pcapng", "pre-fix.pcapng"]


def test_classic_pcap_output_stops_at_the_first_frame_past_2106_and_keeps_no_half_file(tmp_path):
    # the first 3 frames (FIX_SAMPLE: 0, 1000 ns... apart) before 2^32 s, the rest after: written, then removed
    with open_capture(str(FIX_SAMPLE)) as c:
        ts = [t for t, *_ in c]
    start = PCAP_END_NS - (ts[3] - ts[0])  # frame 3 lands on exactly 2^32 s
    cap = _pcapng_from(tmp_path / "edge.pcapng", start)
    out = tmp_path / "existing"
    out.mkdir()
    (out / "mine.txt").write_text("kept")
    r = _run(cap, "--write-pcap", str(out), "--pcap-format", "pcap")
    assert r.exit_code == 2
    assert " delivered a frame at 4294967296." in r.stderr  # at or after 2^32 s, never before
    assert sorted(p.name for p in out.iterdir()) == ["mine.txt"]  # its own files removed, the user's kept


def test_pcapng_output_past_2554_is_one_line_exit_2(tmp_path):
    # a deferred flush (napi_defer_hard_irqs + gro_flush_timeout, kernel napi_complete_done) 2^64-1 ns after a
    # frame near the reader's limit (2^63-1 ns) delivers past 2^64 ns: beyond pcapng's u64
    cap = _pcapng_from(tmp_path / "late.pcapng", (1 << 63) - 1 - 10**6)
    out = tmp_path / "out"
    r = _run(
        cap,
        "--write-pcap",
        str(out),
        "--gro-flush-timeout",
        str((1 << 64) - 1),
        "--napi-defer-hard-irqs",
        "5",
    )
    assert r.exit_code == 2, r.output
    (line,) = r.stderr.strip().splitlines()
    assert f"Error: --write-pcap {out}: " in line and "--pcap-format pcapng cannot hold" in line
    assert "pcapng holds 0 .. 2^64 ns" in line and not out.exists()
