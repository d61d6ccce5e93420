"""A capture cut short (``head -c``, a capture still being written): one rule for every reader — pcap and pcapng,
gzip-compressed or not, a file or standard input. The records before the cut are read and replayed, the record the
cut falls in is counted as read and skipped (``truncated_record``), and the report says the capture is truncated
and what was read; a statement about the whole capture (no VXLAN or Geneve traffic) is limited to what was read.

The capture is the fix sample (sample_pcaps/vxlan-zero-csum-fix-89e5c58fc1e2.pcap): 17 VXLAN frames of one flow,
outer UDP checksum 0.
"""

from __future__ import annotations

import json
import subprocess
import zlib

import pytest
from conftest import CLI, FIX_SAMPLE, cli_env

from gro_replay.capture.reader import open_capture
from gro_replay.capture.writer import PcapngWriter
from gro_replay.cli import main


def _records() -> list[tuple[int, bytes]]:
    with open_capture(FIX_SAMPLE, digest=None) as cap:
        return [(ts, buf) for ts, buf, _orig, _lt in cap]


def _pcapng(path) -> list[int]:
    """The fix sample as pcapng at ``path``; returns the file offset of each enhanced packet block."""
    offs = []
    with open(path, "wb") as f:
        w = PcapngWriter(f, [("eth0", "")])
        for ts, buf in _records():
            offs.append(f.tell())
            w.write(ts, buf)
    return offs


def _pcap_offsets() -> list[int]:
    """The file offset of each record of the fix sample (24-byte file header, 16-byte record headers)."""
    offs, off = [], 24
    for _ts, buf in _records():
        offs.append(off)
        off += 16 + len(buf)
    return offs


def _gzip_cut(data: bytes) -> bytes:
    """``data`` as a gzip stream cut before its end: the deflate data is flushed (every byte of ``data`` can be
    decompressed) but the last block and the CRC32/ISIZE trailer (RFC 1952 §2.3) never come."""
    z = zlib.compressobj(6, zlib.DEFLATED, 31)
    return z.compress(data) + z.flush(zlib.Z_SYNC_FLUSH)


def _cut(tmp_path, fmt: str, record: int) -> bytes:
    """The fix sample in ``fmt`` (pcap, pcapng, pcap.gz, pcapng.gz) cut 100 bytes into record ``record`` (0-based)."""
    if fmt.startswith("pcapng"):
        offs = _pcapng(tmp_path / "s.pcapng")
        data = (tmp_path / "s.pcapng").read_bytes()
    else:
        offs = _pcap_offsets()
        data = FIX_SAMPLE.read_bytes()
    data = data[: offs[record] + 100]
    return _gzip_cut(data) if fmt.endswith(".gz") else data


def _doc(tmp_path, data: bytes, stdin: bool, *extra: str) -> tuple[dict, str]:
    """The JSON document and the table text of a replay of ``data`` (a file, or standard input of a child)."""
    if stdin:
        out = []
        for fmt in ("json", "table"):
            p = subprocess.run(
                [*CLI, "-", "--format", fmt, "--no-hist", *extra],
                input=data,
                capture_output=True,
                env={**cli_env(), "COLUMNS": "250"},
                timeout=300,
            )
            assert p.returncode == 0, p.stderr.decode()
            out.append(p.stdout.decode())
        return json.loads(out[0]), out[1]
    from click.testing import CliRunner

    path = tmp_path / "cut"
    path.write_bytes(data)
    runner = CliRunner()
    j = runner.invoke(main, [str(path), "--format", "json", *extra])
    t = runner.invoke(main, [str(path), "--no-hist", *extra], env={"COLUMNS": "250"})
    assert j.exit_code == 0 and t.exit_code == 0, j.output + t.output
    return json.loads(j.stdout), t.stdout


READERS = [(fmt, stdin) for fmt in ("pcap", "pcap.gz", "pcapng", "pcapng.gz") for stdin in (False, True)]


@pytest.mark.parametrize(("fmt", "stdin"), READERS)
def test_a_cut_in_the_fourth_record(tmp_path, fmt, stdin):
    """Cut 100 bytes into the fourth record: three records read in full and replayed, the fourth counted as read
    and skipped, and a note that says so."""
    doc, text = _doc(tmp_path, _cut(tmp_path, fmt, 3), stdin)
    inp = doc["input"]
    assert (inp["frames_read"], inp["frames_replayed"], inp["skipped"]) == (4, 3, {"truncated_record": 1})
    how = "its gzip data ends before the end-of-stream marker" if fmt.endswith(".gz") else "it ends"
    note = (
        f"the capture is truncated (cut short, or still being written): {how} inside record 4; the 3 complete "
        "records before the cut were read, the cut one is skipped (truncated_record)"
    )
    assert inp["notes"] == [note]
    assert f"note: {note}" in text
    assert "no VXLAN or Geneve traffic" not in text


@pytest.mark.parametrize(("fmt", "stdin"), READERS)
def test_a_cut_in_the_first_record_says_nothing_of_tunnel_traffic(tmp_path, fmt, stdin):
    """Cut 100 bytes into the first record: no complete frame was read, so the report does not claim the capture
    holds no VXLAN or Geneve traffic (its first record is a VXLAN frame); it says the capture is truncated."""
    doc, text = _doc(tmp_path, _cut(tmp_path, fmt, 0), stdin)
    inp = doc["input"]
    assert (inp["frames_read"], inp["frames_replayed"], inp["skipped"]) == (1, 0, {"truncated_record": 1})
    how = "its gzip data ends before the end-of-stream marker" if fmt.endswith(".gz") else "it ends"
    assert inp["notes"] == [
        f"the capture is truncated (cut short, or still being written): {how} inside record 1, so no complete "
        "record was read; the cut one is skipped (truncated_record)",
        "no VXLAN or Geneve traffic replayed: the capture is truncated before its first complete frame",
    ]
    assert "no frame goes to a configured tunnel port" not in text
    assert "note: the capture is truncated" in text


def test_no_tunnel_traffic_is_said_of_the_frames_read(tmp_path):
    """A capture of plain UDP frames (the fix sample sent to UDP port 53, its VXLAN header zeroed: no tunnel port,
    nothing that parses as VXLAN or Geneve) cut in its third record: the no-tunnel-traffic note covers the two
    frames read, not the capture."""
    from gro_replay.capture.writer import PcapWriter

    path = tmp_path / "udp.pcap"
    with PcapWriter(path) as w:
        for ts, buf in _records():
            b = bytearray(buf)
            b[14 + 20 + 2 : 14 + 20 + 4] = (53).to_bytes(2, "big")  # UDP destination port
            b[14 + 20 + 8 : 14 + 20 + 16] = bytes(8)  # the VXLAN header
            w.write(ts, bytes(b))
    data = path.read_bytes()
    doc, _text = _doc(tmp_path, data[: _pcap_offsets()[2] + 100], False)
    notes = doc["input"]["notes"]
    assert notes[0] == (
        "the capture is truncated (cut short, or still being written): it ends inside record 3; the 2 complete "
        "records before the cut were read, the cut one is skipped (truncated_record)"
    )
    assert notes[1].startswith(
        "no VXLAN or Geneve traffic in the 2 complete frames read before the capture's cut: "
    )


def test_a_gzip_stream_cut_after_its_last_record(tmp_path):
    """gzip data cut after every record was decompressed (only its trailer missing): 17 read, none skipped, and
    the note says the capture is truncated after 17 complete records."""
    doc, _text = _doc(tmp_path, _gzip_cut(FIX_SAMPLE.read_bytes()), False)
    inp = doc["input"]
    assert (inp["frames_read"], inp["frames_replayed"], inp["skipped"]) == (17, 17, {})
    assert inp["notes"] == [
        "the capture is truncated (cut short, or still being written): its gzip data ends before the "
        "end-of-stream marker, after 17 complete records: every record before the cut was read in full"
    ]
