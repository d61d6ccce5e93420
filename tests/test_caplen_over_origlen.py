"""A record whose captured length exceeds the original (wire) length it states: counted and reported, on both
formats, both paths, file and pipe (sim/notes.py ``capture_notes``; JSON ``input.caplen_over_orig_len``).

pcap (draft-ietf-opsawg-pcap, Packet Record) and pcapng (draft-ietf-opsawg-pcapng, Enhanced Packet Block) define
the original length as the packet's length on the wire and the captured length as at most that (less when the
snapshot length cut it); the drafts let readers read files that break it. Before, such a record was replayed
silently by both formats. Now it is still replayed as captured (its bytes are all there; Wireshark too shows them
and flags the record), counted once per record and named in a note. The expectations are built here: the same
frames written with correct lengths give the same replay, and the count is the number of records written with
``orig_len = caplen - 4``.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from dataclasses import replace

import pytest
from conftest import FIX_SAMPLE, ROOT, without_engine

from gro_replay.capture.reader import open_capture
from gro_replay.cli import main
from gro_replay.report.document import document
from gro_replay.sim import ReplayConfig, replay_capture

#: records (0-based) written with an original length 4 bytes below the captured length
BAD = (0, 3, 4, 10, 16)


def _records() -> list[tuple[int, bytes]]:
    with open_capture(str(FIX_SAMPLE), digest=None) as cap:
        return [(ts, buf) for ts, buf, _orig, _lt in cap]


def _pcap(path, bad: tuple[int, ...]) -> None:
    """A nanosecond classic pcap, Ethernet (written here: PcapWriter refuses such a record)."""
    out = bytearray(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, 1))
    for i, (ts, buf) in enumerate(_records()):
        orig = len(buf) - 4 if i in bad else len(buf)
        out += struct.pack("<IIII", ts // 10**9, ts % 10**9, len(buf), orig) + buf
    path.write_bytes(bytes(out))


def _pcapng(path, bad: tuple[int, ...]) -> None:
    """One section, one Ethernet interface (nanosecond if_tsresol), one EPB per record (draft-ietf-opsawg-pcapng)."""
    out = bytearray(struct.pack("<IIIHHqI", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1, 28))
    opts = struct.pack("<HHB3x", 9, 1, 9) + struct.pack("<HH", 0, 0)  # if_tsresol 10^-9, opt_endofopt
    out += struct.pack("<IIHHI", 1, 20 + len(opts), 1, 0, 0) + opts + struct.pack("<I", 20 + len(opts))
    for i, (ts, buf) in enumerate(_records()):
        pad = b"\0" * (-len(buf) % 4)
        n = 32 + len(buf) + len(pad)
        orig = len(buf) - 4 if i in bad else len(buf)
        out += struct.pack("<IIIIIII", 6, n, 0, ts >> 32, ts & 0xFFFFFFFF, len(buf), orig) + buf + pad
        out += struct.pack("<I", n)
    path.write_bytes(bytes(out))


WRITERS = {"pcap": _pcap, "pcapng": _pcapng}


def _doc(path, **cfg) -> tuple[dict, object]:
    r = replay_capture(str(path), ReplayConfig(**cfg))
    return document(r), r.batch


@pytest.mark.parametrize("retire", [True, False], ids=["retiring", "keeping-flows"])
@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_counted_noted_and_replayed_as_captured_on_both_paths(tmp_path, fmt, retire) -> None:
    bad, good = tmp_path / f"bad.{fmt}", tmp_path / f"good.{fmt}"
    WRITERS[fmt](bad, BAD)
    WRITERS[fmt](good, ())
    keep = {} if retire else {"flow_idle_timeout_ns": 0}  # 0: no flow is retired (sim/config.py)
    got, batch = _doc(bad, **keep)
    assert batch is not None  # the batch path ran (pollcache.py)
    ref, ref_batch = _doc(bad, fast_path=False, **keep)
    assert ref_batch is None  # the frame-by-frame path ran
    assert without_engine(got) == without_engine(ref)  # but for the statement of which path ran
    inp = got["input"]
    assert inp["caplen_over_orig_len"] == len(BAD)
    assert inp["frames_read"] == inp["frames_replayed"] == 17 and inp["skipped"] == {}
    notes = [n for n in inp["notes"] if "original (wire) length smaller than the bytes captured" in n]
    assert len(notes) == 1 and notes[0].startswith(f"{len(BAD)} records state ")
    # the same frames with correct lengths: the same replay, without the count and the note
    clean, _ = _doc(good, **keep)
    assert clean["input"]["caplen_over_orig_len"] == 0
    assert [n for n in clean["input"]["notes"] if "original (wire) length" in n] == []
    assert got["kernels"] == clean["kernels"] and got["verdict"] == clean["verdict"]


def _from_pipe(data: bytes, *args: str) -> str:
    """The console entry reading ``-`` from a pipe that carries ``data``; its standard output."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run(
        [sys.executable, "-c", "from gro_replay.cli import entry; entry()", "-", "-q", *args],
        input=data,
        capture_output=True,
        env=env,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout.decode()


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_pipe_gives_the_files_document(runner, tmp_path, fmt) -> None:
    bad = tmp_path / f"bad.{fmt}"
    WRITERS[fmt](bad, BAD)
    from_file = runner.invoke(main, [str(bad), "--format", "json", "-q"])
    assert from_file.exit_code == 0, from_file.stderr
    a, b = json.loads(from_file.stdout), json.loads(_from_pipe(bad.read_bytes(), "--format", "json"))
    assert a["input"].pop("path") == str(bad) and b["input"].pop("path") == "-"
    assert a == b
    assert b["input"]["caplen_over_orig_len"] == len(BAD)
    table = " ".join(_from_pipe(bad.read_bytes()).split())
    assert f"{len(BAD)} records state an original (wire) length smaller than the bytes captured" in table


def test_kernel_backend_input_counts_them_too(tmp_path) -> None:
    """The kernel backend reads the capture through the same decoding (validate.load_capture)."""
    from gro_replay.validate import load_capture

    bad = tmp_path / "bad.pcapng"
    _pcapng(bad, BAD)
    loaded = load_capture(str(bad), replace(ReplayConfig(), rx_csum="none"))
    assert loaded.replayer.input.caplen_over_orig_len == len(BAD)
    assert len(loaded.frames) == 17
