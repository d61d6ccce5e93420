"""Captures joined byte for byte with ``cat`` (capture/joined.py): the second one's header, where a record is
expected, is named in a one-line error (exit 2) on every reader path, not taken for a record (newcomer's finding:
``(cat S; cat S) | gro-replay -`` said ``corrupt record at offset 25324 (caplen 1614373368 > 262144)``, 16 bytes
after the second pcap file header at 25308, which the reader had read as a record of caplen 0: its thiszone).

The pcap files are written here field by field (libpcap pcap/pcap.h ``struct pcap_file_header``: magic, version
2.4, thiszone, sigfigs, snaplen, linktype; then per record tv_sec, tv_usec or tv_nsec, caplen, len, data) from the
fix sample's 17 records, in either byte order and resolution, so the second header's offset is the first file's
size; the pcapng ones are the same records through ``PcapngWriter``.
"""

from __future__ import annotations

import gzip
import io
import json
import struct
import subprocess

import dpkt
import pytest
from conftest import CLI, FIX_SAMPLE, cli_env

from gro_replay.capture.writer import PcapngWriter

MAGIC = {("<", False): 0xA1B2C3D4, ("<", True): 0xA1B23C4D, (">", False): 0xA1B2C3D4, (">", True): 0xA1B23C4D}


def _records() -> list[tuple[int, bytes]]:
    with open(FIX_SAMPLE, "rb") as f:
        return [(int(ts * 10**9), bytes(buf)) for ts, buf in dpkt.pcap.Reader(f)]


def pcap(order: str = "<", nano: bool = False, thiszone: int = 0, recs: list | None = None) -> bytes:
    """A classic pcap of ``recs`` (default the fix sample's) in byte order ``order``, µs or ns timestamps."""
    out = [struct.pack(order + "IHHiIII", MAGIC[order, nano], 2, 4, thiszone, 0, 262144, 1)]
    for ts, buf in _records() if recs is None else recs:
        frac = ts % 10**9 if nano else ts % 10**9 // 1000
        out.append(struct.pack(order + "IIII", ts // 10**9, frac, len(buf), len(buf)) + buf)
    return b"".join(out)


def pcapng() -> bytes:
    out = io.BytesIO()
    w = PcapngWriter(out, [("eth0", "")])
    for ts, buf in _records():
        w.write(ts, buf)
    return out.getvalue()


SECOND = "a second pcap file header at offset {} (captures joined with cat?): join pcaps with mergecap"
#: name: (first file, second file, the error after "PATH: " with the second file's offset)
JOINED = {
    "le-le": (pcap(), pcap(), SECOND),
    "le-be-nano": (pcap(), pcap(">", True), SECOND),
    "be-le": (pcap(">"), pcap("<", True), SECOND),
    # thiszone -3600 read as caplen 4294963696: the header itself is a corrupt record's, named as the header
    "thiszone": (pcap(), pcap(thiszone=-3600), SECOND),
    "the-sample-twice": (FIX_SAMPLE.read_bytes(), FIX_SAMPLE.read_bytes(), SECOND),
    "pcap-pcapng": (
        pcap(),
        pcapng(),
        "a pcapng section header at offset {} (captures joined with cat?): join captures with mergecap",
    ),
    "pcapng-pcap": (
        pcapng(),
        pcap(),
        "a pcap file header at offset {} (captures joined with cat?): join captures with mergecap",
    ),
}
PATHS = {"batch": [], "frame-by-frame": ["--rx-queues", "2"]}


def _run(args: list[str], stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args, "-q"], input=stdin, capture_output=True, env=cli_env())


@pytest.mark.parametrize("name", list(JOINED))
@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("how", ["file", "gzip", "gzip-members", "stdin"])
def test_a_second_header_is_named(tmp_path, name, path, how):
    first, second, error = JOINED[name]
    data = first + second
    if how == "gzip":
        data = gzip.compress(data)
    elif how == "gzip-members":  # cat a.gz b.gz: two gzip members, one decompressed stream
        data = gzip.compress(first) + gzip.compress(second)
    f = tmp_path / "joined"
    f.write_bytes(data)
    shown = "-" if how == "stdin" else str(f)
    r = _run([shown, *PATHS[path]], data if how == "stdin" else None)
    named = "standard input" if how == "stdin" else shown  # as the report's input line names a pipe
    # the offset is the second header's in the bytes the readers parse: a gzip capture's decompressed data
    where = f"{len(first)} of the decompressed data" if how.startswith("gzip") else len(first)
    assert (r.returncode, r.stderr.decode()) == (2, f"Error: {named}: {error.format(where)}\n")


@pytest.mark.parametrize("path", list(PATHS))
def test_a_record_of_a_magic_second_is_a_record(tmp_path, path):
    """A record whose tv_sec is a magic number's bytes (0xD4C3B2A1 read little-endian: a1 b2 c3 d4, in 2083) and
    whose tv_usec is no version 2 (5: the bytes 05 00 00 00, version 1280 read big-endian as that magic says) is
    a record: read and replayed with the others."""
    recs = _records()
    late = (0xD4C3B2A1 * 10**9 + 5_000, recs[-1][1])
    f = tmp_path / "late.pcap"
    f.write_bytes(pcap(recs=[*recs, late]))
    r = _run([str(f), "--format", "json", *PATHS[path]])
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["input"]["frames_read"] == len(recs) + 1


#: tv_sec 1295823521 (2011-01-23 22:58:41 UTC) is a1 b2 3c 4d little-endian: the nanosecond magic read big-endian;
#: tv_usec 512 (00 02 00 00) then reads as version 2. In a big-endian nanosecond pcap the same second is 4d 3c b2 a1
#: (the little-endian nanosecond magic) and tv_nsec 33,554,432 (02 00 00 00) version 2. 885895841 (1998-01-27
#: 10:10:41 UTC) is 0xA1B2CD34 little-endian, the modified-pcap magic.
SPELLED = {
    "le-2011": ("<", False, 1295823521 * 10**9 + 500_000),  # the 13th record at .000512
    "be-2011-ns": (">", True, 1295823521 * 10**9 + 33_554_432),
    "le-1998": ("<", False, 885895841 * 10**9 + 500_000),
}


@pytest.mark.parametrize("name", list(SPELLED))
@pytest.mark.parametrize("path", list(PATHS))
def test_good_records_whose_times_spell_a_header_are_records(tmp_path, name, path):
    """Records 1 µs apart whose tv_sec and tv_usec/tv_nsec spell a pcap magic and version 2 are good records, read
    by tcpdump (breaker's finding: refused as 'a second pcap file header at offset …', one at offset 24). A header
    is named only where a record is corrupt (joined.py)."""
    order, nano, t0 = SPELLED[name]
    recs = [(t0 + 1000 * i, b) for i, (_ts, b) in enumerate(_records())]
    f = tmp_path / f"{name}.pcap"
    f.write_bytes(pcap(order, nano, recs=recs))
    r = _run([str(f), "--format", "json", *PATHS[path]])
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["input"]["frames_read"] == len(recs)
