"""Records longer than the snaplen their capture declares (pcap file header, pcapng interface description block):
counted by the record readers (capture/snaplen.py), reported in ``input.caplen_over_snaplen`` and one note
(sim/notes.py ``over_snaplen_text``), alike for pcap and pcapng, both replay paths, files, gzip and pipes. And
records cut short (captured < original length, skipped as ``snaplen_cut``): a note and the verdict say what is
known and how to get whole frames, in words true whether the capture or a copy cut them (``WHOLE_FRAMES_HINT``).

draft-ietf-opsawg-pcap (File Header: SnapLen) and draft-ietf-opsawg-pcapng (Interface Description Block: SnapLen, 0
meaning no limit) declare the most bytes kept of a packet; a file whose records hold more is readable and is replayed
as captured, but libpcap does not take it whole (tcpdump -r cuts a pcap record to the snaplen, refuses a pcapng one),
so a copy of the shared triage captures through ``tcpdump -r`` has its frames skipped as ``snaplen_cut``. The
captures are the fix sample's 17 records (16 of 1,514 bytes, one of 788) written whole by the project's writers,
their declared snaplens then set below them.
"""

from __future__ import annotations

import gzip
import json
import shutil
import struct
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import CLI, FIX_SAMPLE, ROOT, cli_env, without_engine

from gro_replay.capture.chunks import PcapChunks
from gro_replay.capture.reader import open_capture
from gro_replay.capture.writer import PcapngWriter, PcapWriter
from gro_replay.cli import main
from gro_replay.report.document import document
from gro_replay.sim import ReplayConfig, replay_capture
from gro_replay.sim.notes import over_snaplen_text

#: the fix sample's records: 16 × 1,514 bytes (indexes 0–15), then one of 788
LONG, SHORT = 1514, 788
#: a pcapng interface description block's snaplen: offset in the block (after type, length, link type, reserved)
_IDB_SNAPLEN = 12


def _records() -> list[tuple[int, bytes]]:
    with open_capture(str(FIX_SAMPLE), digest=None) as cap:
        return [(ts, buf) for ts, buf, _orig, _lt in cap]


def _declaring(data: bytes, snaplens: list[int]) -> bytes:
    """``data`` (a little-endian capture written whole by capture/writer.py) with its declared snaplens set to
    ``snaplens``: a pcap file header's (one), or each pcapng interface description block's in order."""
    out = bytearray(data)
    if out[:4] != b"\x0a\x0d\x0d\x0a":
        struct.pack_into("<I", out, 16, snaplens[0])
        return bytes(out)
    off, ifaces = 0, iter(snaplens)
    while off < len(out):
        kind, size = struct.unpack_from("<II", out, off)
        if kind == 1:  # interface description block
            struct.pack_into("<I", out, off + _IDB_SNAPLEN, next(ifaces))
        off += size
    return bytes(out)


def _pcap(path: Path, snaplen: int) -> Path:
    with PcapWriter(path) as w:
        for ts, buf in _records():
            w.write(ts, buf)
    path.write_bytes(_declaring(path.read_bytes(), [snaplen]))
    return path


def _pcapng(path: Path, snaplens: list[int], iface_of=lambda i: 0) -> Path:
    """One pcapng interface per entry of ``snaplens``; record ``i`` on interface ``iface_of(i)``."""
    with PcapngWriter(path, [(f"eth{i}", "") for i in range(len(snaplens))]) as w:
        for i, (ts, buf) in enumerate(_records()):
            w.write(ts, buf, iface_of(i))
    path.write_bytes(_declaring(path.read_bytes(), snaplens))
    return path


def _docs(path: Path, **cfg) -> tuple[dict, dict]:
    """The replay documents of ``path`` from the batch path and from the frame-by-frame path."""
    batch = replay_capture(str(path), ReplayConfig(**cfg))
    ref = replay_capture(str(path), ReplayConfig(fast_path=False, **cfg))
    assert batch.batch is not None and ref.batch is None  # which path ran (pollcache.py or frame by frame)
    return document(batch), document(ref)


PCAP_NOTE = (
    "16 records are longer than the snaplen the pcap file header declares (1,000 bytes; the longest record "
    "1,514 bytes): gro-replay reads them as captured; tcpdump -r cuts such records to that snaplen as it "
    "reads them, so a copy through it (tcpdump -r IN -w OUT) holds them cut, and a replay of the copy skips them "
    "(snaplen_cut) (JSON input.caplen_over_snaplen)"
)
PCAPNG_NOTE = (
    "16 records are longer than the snaplen their pcapng interface declares (1,000 bytes; the longest record "
    "1,514 bytes): gro-replay reads them as captured; tcpdump -r does not copy such records whole: it refuses an "
    "enhanced packet block longer than its interface's snaplen (invalid packet capture length, bigger than "
    "snaplen), which ends its reading, and cuts a simple packet block to it (JSON input.caplen_over_snaplen)"
)
WRITE = {"pcap": lambda p, s: _pcap(p, s), "pcapng": lambda p, s: _pcapng(p, [s])}
NOTE = {"pcap": PCAP_NOTE, "pcapng": PCAPNG_NOTE}


@pytest.mark.parametrize("fmt", sorted(WRITE))
def test_counted_noted_and_replayed_as_captured_on_both_paths(tmp_path, fmt) -> None:
    over = WRITE[fmt](tmp_path / f"over.{fmt}", 1000)
    whole = WRITE[fmt](tmp_path / f"whole.{fmt}", 262144)
    got, ref = _docs(over)
    assert without_engine(got) == without_engine(ref)
    inp = got["input"]
    assert inp["caplen_over_snaplen"] == [{"snaplen": 1000, "records": 16, "longest": LONG}]
    assert inp["notes"] == [NOTE[fmt]]
    # every byte replayed: the same replay as the file that declares a snaplen above its records
    clean, _ = _docs(whole)
    assert clean["input"]["caplen_over_snaplen"] == [] and clean["input"]["notes"] == []
    assert (inp["frames_read"], inp["frames_replayed"], inp["skipped"]) == (17, 17, {})
    assert got["kernels"] == clean["kernels"] and got["verdict"] == clean["verdict"]


@pytest.mark.parametrize("fmt", sorted(WRITE))
def test_snaplen_zero_declares_no_limit(tmp_path, fmt) -> None:
    """pcapng: "a value of zero indicates no limit"; a pcap header's 0 (the draft forbids it) is taken alike."""
    got, ref = _docs(WRITE[fmt](tmp_path / f"zero.{fmt}", 0))
    assert got["input"]["caplen_over_snaplen"] == ref["input"]["caplen_over_snaplen"] == []
    assert got["input"]["notes"] == []


def test_each_pcapng_interface_its_own_snaplen(tmp_path) -> None:
    """Three interfaces declaring 1,000 bytes, no limit (0) and 700 bytes: records 0, 2, … 14 (1,514 bytes) on the
    first, the odd ones on the second, the last (788 bytes) on the third. Every record of the capture counts,
    those of the interfaces not replayed too (they are skipped as other_interface): the batch path reads such a
    capture in selected blocks (capture/interface_chunks.py), the frame-by-frame path through Selection.filter."""
    path = _pcapng(tmp_path / "three.pcapng", [1000, 0, 700], lambda i: 2 if i == 16 else i % 2)
    got, ref = _docs(path)
    assert without_engine(got) == without_engine(ref)
    inp = got["input"]
    assert inp["caplen_over_snaplen"] == [
        {"snaplen": 700, "records": 1, "longest": SHORT},
        {"snaplen": 1000, "records": 8, "longest": LONG},
    ]
    assert inp["skipped"] == {"other_interface": 9}
    assert (
        "9 records are longer than the snaplen their pcapng interfaces declare (700 bytes: 1 record, the longest "
        "788 bytes; 1,000 bytes: 8 records, the longest 1,514 bytes): gro-replay reads them as captured; tcpdump -r "
        "refuses this file before its first record (its interfaces declare different snaplens)"
        in " ".join(inp["notes"])
    )  # tcpdump 4.99.3: "an interface has a snapshot length … different from the snapshot length of the first"


@pytest.mark.parametrize("block", [64, 5000, 12000, 1 << 20])
def test_batch_reader_counts_each_record_once(tmp_path, block) -> None:
    """chunks.py ``PcapChunks`` walks again the records a caller keeps (``next(keep)``; here the later half of
    each block's): each is counted once, as the record-at-a-time reader counts them."""
    path = _pcap(tmp_path / "over.pcap", 1000)
    with open_capture(path) as cap:
        r = PcapChunks(cap, block)
        keep = None
        while (ch := r.next(keep)) is not None:
            keep = ch.record_start(max(1, len(ch) // 2))
        assert cap.caplen_over_snaplen.as_list() == [{"snaplen": 1000, "records": 16, "longest": LONG}]
    with open_capture(path) as cap:
        assert len(list(cap)) == 17
        assert cap.caplen_over_snaplen.as_list() == [{"snaplen": 1000, "records": 16, "longest": LONG}]


def _cli(data: bytes, *args: str) -> str:
    """The console entry reading ``-`` from a pipe that carries ``data``; its standard output."""
    r = subprocess.run([*CLI, "-", "-q", *args], input=data, capture_output=True, env=cli_env(), timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.decode()


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("fmt", sorted(WRITE))
def test_pipe_and_gzip_give_the_files_document(runner, tmp_path, fmt, gz) -> None:
    path = plain = WRITE[fmt](tmp_path / f"over.{fmt}", 1000)
    if gz:
        path = tmp_path / f"over.{fmt}.gz"
        path.write_bytes(gzip.compress(plain.read_bytes(), mtime=0))
    r = runner.invoke(main, [str(path), "--format", "json", "-q"])
    assert r.exit_code == 0, r.stderr
    from_file, piped = json.loads(r.stdout), json.loads(_cli(path.read_bytes(), "--format", "json"))
    assert from_file["input"].pop("path") == str(path) and piped["input"].pop("path") == "-"
    assert from_file == piped
    assert piped["input"]["caplen_over_snaplen"] == [{"snaplen": 1000, "records": 16, "longest": LONG}]
    # the text report: the note as one sentence (folded to the width of the report)
    assert f"note: {NOTE[fmt]}" in " ".join(_cli(path.read_bytes()).split())


def test_kernel_backend_input_counts_them_too(tmp_path) -> None:
    """The kernel backend reads the capture through the same reader and accounting (validate.load_capture)."""
    from gro_replay.validate import load_capture

    loaded = load_capture(
        str(_pcapng(tmp_path / "over.pcapng", [1000])), replace(ReplayConfig(), rx_csum="none")
    )
    assert loaded.replayer.input.caplen_over_snaplen == [{"snaplen": 1000, "records": 16, "longest": LONG}]
    assert loaded.replayer.input.notes == [PCAPNG_NOTE]


TRIAGE = ROOT.parent / "shared" / "triage" / "bad-inner-csum-3frames.pcap"


def test_a_copy_through_tcpdump_cuts_what_the_note_counts() -> None:
    """The shared triage capture declares 1,500 bytes and holds 3 records of 1,514: the note counts them; its copy
    through ``tcpdump -r - -w -`` holds them cut to 1,500 bytes, and its replay skips the 3 as snaplen_cut."""
    tcpdump = shutil.which("tcpdump")
    if not TRIAGE.is_file() or tcpdump is None:
        pytest.skip("needs ../shared/triage and tcpdump")
    data = TRIAGE.read_bytes()
    doc = json.loads(_cli(data, "--format", "json"))
    assert doc["input"]["caplen_over_snaplen"] == [{"snaplen": 1500, "records": 3, "longest": LONG}]
    copy = subprocess.run([tcpdump, "-r", "-", "-w", "-"], input=data, capture_output=True, timeout=60)
    assert copy.returncode == 0, copy.stderr
    cut = json.loads(_cli(copy.stdout, "--format", "json"))
    assert cut["input"]["skipped"] == {"snaplen_cut": 3} and cut["input"]["caplen_over_snaplen"] == []
    # the hint names the copy as a cause, not only a capture's snap length
    assert "a copy through tcpdump -r cuts records at the file's declared snaplen" in cut["verdict"]["text"]


def _cut(path: Path, snaplen: int, fmt: str, frames: list[tuple[int, bytes]] | None = None) -> Path:
    """``frames`` (default the fix sample's) as a capture taken with snap length ``snaplen`` (tcpdump -s): each
    record cut to it, its original length kept (capture/writer.py)."""
    writer = (
        PcapWriter(path, snaplen=snaplen)
        if fmt == "pcap"
        else PcapngWriter(path, [("eth0", "")], snaplen=snaplen)
    )
    with writer as w:
        for ts, buf in _records() if frames is None else frames:
            w.write(ts, buf)
    return path


#: what the words say of records cut short: what the file shows, and how to get whole frames, whatever cut them
CUT_HINT = (
    "capture or copy whole frames: tcpdump -s 0 when capturing; a copy through tcpdump -r cuts records at the "
    "file's declared snaplen"
)


@pytest.mark.parametrize("fmt", sorted(WRITE))
def test_every_frame_cut_short_is_said_so(tmp_path, fmt) -> None:
    """Snap length 700: all 17 records cut. The notes say none was decoded (not that the capture holds no tunnel
    traffic: its frames are VXLAN) and what a cut record shows; the verdict's hint is true for a capture taken
    with a small snap length and for a copy that cut it. Nothing longer than the declared snaplen."""
    got, ref = _docs(_cut(tmp_path / f"cut.{fmt}", 700, fmt))
    assert without_engine(got) == without_engine(ref)
    inp = got["input"]
    assert inp["skipped"] == {"snaplen_cut": 17} and inp["caplen_over_snaplen"] == []
    # their headers are whole: each goes to VXLAN port 4789
    assert inp["skipped_to_tunnel_ports"] == {"snaplen_cut": {"vxlan": 17}} and inp["skipped_unread"] == {}
    assert inp["notes"] == [
        # how to get whole frames: once, in the snaplen note (and in the verdict)
        "no VXLAN or Geneve traffic replayed: 17 frames to a VXLAN port were cut short (snaplen_cut) and not replayed",
        "17 records hold fewer bytes than their frames on the wire (captured length < original length): skipped "
        f"(snaplen_cut), a frame cut short cannot be checksummed; {CUT_HINT}",
    ]
    assert got["verdict"]["outcome"] == "nothing_replayed"
    assert got["verdict"]["text"] == (
        "Nothing to compare: none of the 17 frames read was replayed (skipped snaplen_cut 17): 17 frames to a VXLAN "
        f"port were cut short (snaplen_cut) and not replayed: {CUT_HINT}."
    )


def test_frames_cut_short_are_not_said_to_carry_no_tunnel_traffic(tmp_path) -> None:
    """The fix sample sent to UDP port 53 with its VXLAN header zeroed (no VXLAN or Geneve traffic), snap length 1,000: the
    788-byte frame is decoded, the 16 others cut. The no-tunnel-traffic note covers the frame decoded."""
    frames = []
    for ts, buf in _records():
        b = bytearray(buf)
        b[14 + 20 + 2 : 14 + 20 + 4] = (53).to_bytes(2, "big")  # UDP destination port
        b[14 + 20 + 8 : 14 + 20 + 16] = bytes(8)  # the VXLAN header
        frames.append((ts, bytes(b)))
    got, ref = _docs(_cut(tmp_path / "udp.pcap", 1000, "pcap", frames))
    assert without_engine(got) == without_engine(ref)
    assert got["input"]["skipped_to_tunnel_ports"] == {} and got["input"]["skipped_unread"] == {}
    assert got["input"]["notes"] == [
        "no VXLAN or Geneve traffic: no frame goes to a configured tunnel port (VXLAN 4789, 8472; Geneve 6081; the 16 cut "
        "short by their headers: snaplen_cut) and none decoded parses as VXLAN or Geneve on another UDP port",
        "16 records hold fewer bytes than their frames on the wire (captured length < original length): skipped "
        f"(snaplen_cut), a frame cut short cannot be checksummed; {CUT_HINT}",
    ]


def test_one_record_is_said_in_the_singular() -> None:
    assert over_snaplen_text([{"snaplen": 100, "records": 1, "longest": LONG}], "pcapng").startswith(
        "1 record is longer than the snaplen its pcapng interface declares (100 bytes; the record 1,514 bytes): "
        "gro-replay reads them as captured; tcpdump -r does not copy such records whole"
    )


def test_the_note_claims_no_replay_and_counts_a_byte_as_one():
    """The note counts every record of the capture, whatever --interface, -f or --flow keep and whether a record is
    also cut short, so it says the tool reads them as captured, not that they were replayed; a snaplen of 1 is one
    byte (breaker's findings)."""
    from gro_replay.sim.notes import over_snaplen_text

    text = over_snaplen_text([{"snaplen": 1, "records": 2, "longest": 60}], "pcap")
    assert text.startswith(
        "2 records are longer than the snaplen the pcap file header declares (1 byte; the longest record 60 bytes): "
        "gro-replay reads them as captured; "
    )
    assert "replayed" not in text.split("; ")[1]
