"""Siblings of the fuzzer's finds (``make fuzz``): text that ``str.isdigit`` accepts but ``int`` refuses ('²', other
scripts' digits) in every place the tool reads a number from a string, and timestamps beyond the int64 ns range.

Right behaviour (issue 13): a one-line error and exit 2, or the value ignored where it is only a hint
(``COLUMNS``), never exit 70.
"""

from __future__ import annotations

import struct
import subprocess
import sys

import pytest
from conftest import ROOT, VXLAN4_SAMPLE

from gro_replay.cli import main


def test_synth_interleave_rejects_non_ascii_digits(runner, tmp_path):
    r = runner.invoke(main, ["synth", str(tmp_path / "o.pcap"), "--interleave", "²"])
    assert r.exit_code == 2 and "--interleave" in r.stderr


def test_interface_selector_with_non_ascii_digits_is_a_name(runner):
    r = runner.invoke(main, [str(VXLAN4_SAMPLE), "--interface", "²", "-q"])
    assert r.exit_code == 2 and "--interface ²" in r.stderr


LONG = (
    "1" * 5000
)  # beyond Python's 4,300-digit limit for int(): a ValueError where the text is not checked first


@pytest.mark.parametrize("selector", [LONG, f"ifindex={LONG}", f"index={LONG}"])
def test_interface_numbers_of_any_length_are_one_line(runner, selector):
    # second breaker's finding: ifindex=<5,000 digits> ended in an internal error (exit 70); the line is cut
    r = runner.invoke(main, [str(VXLAN4_SAMPLE), "--interface", selector, "-q"])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and len(r.stderr) < 300, r.stderr
    assert f"--interface {selector[:39]}…:" in r.stderr


@pytest.mark.parametrize("value", ["²", LONG])
def test_columns_that_are_not_a_number_are_ignored(value):
    env = {"COLUMNS": value, "LINES": value, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    r = subprocess.run(
        [sys.executable, "-m", "gro_replay", str(VXLAN4_SAMPLE), "-q"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    assert "SUMMARY " in r.stdout


def _pcapng_with_ts(path, ts_units: int) -> None:
    """A pcapng with one Ethernet interface (µs resolution, the default) and one EPB at ``ts_units``."""
    shb_body = struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)
    shb = (
        struct.pack("<II", 0x0A0D0D0A, 12 + len(shb_body)) + shb_body + struct.pack("<I", 12 + len(shb_body))
    )
    idb_body = struct.pack("<HHI", 1, 0, 65535)
    idb = struct.pack("<II", 1, 12 + len(idb_body)) + idb_body + struct.pack("<I", 12 + len(idb_body))
    frame = bytes(60)
    epb_body = struct.pack("<IIIII", 0, ts_units >> 32, ts_units & 0xFFFFFFFF, len(frame), len(frame)) + frame
    epb = struct.pack("<II", 6, 12 + len(epb_body)) + epb_body + struct.pack("<I", 12 + len(epb_body))
    path.write_bytes(shb + idb + epb)


def test_pcapng_timestamp_beyond_int64_ns_is_a_corrupt_record(runner, tmp_path):
    # 2**56 µs is 7.2e19 ns, past 2**63-1 ns (year 2262): the JSON document's integers are int64
    bad = tmp_path / "far.pcapng"
    _pcapng_with_ts(bad, 1 << 56)
    r = runner.invoke(main, [str(bad), "--format", "json", "-q"])
    assert r.exit_code == 2 and "outside 1970..2262" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    ok = tmp_path / "near.pcapng"
    _pcapng_with_ts(ok, 1_614_373_368_000_000)  # 2021-02-26 in µs
    r = runner.invoke(main, [str(ok), "--format", "json", "-q"])
    assert r.exit_code == 0, r.stderr
