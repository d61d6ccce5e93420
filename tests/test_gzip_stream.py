"""capture/stream.py ``GzipStream``: gzip data (RFC 1952) inflated by zlib-ng, read as Python's ``gzip`` and gzip(1)
read it. Expected bytes come from the standard library's zlib (``zlib.decompressobj(31)``, ``gzip.decompress``),
another implementation than the one under test.

The kinds: every place a stream can be cut (all bytes inflated before the cut are returned, then ``cut``), several
members (``cat a.gz b.gz``), zero padding after a member, other bytes after a member (not gzip), corrupt deflate
data and a trailer that does not match (CRC-32, ISIZE), and reads of every size.
"""

from __future__ import annotations

import gzip
import io
import random
import zlib

import pytest
from conftest import FIX_SAMPLE, VXLAN4_SAMPLE

from gro_replay.capture.reader import open_capture
from gro_replay.capture.stream import READ_ERRORS, CaptureError, GzipStream

DATA = FIX_SAMPLE.read_bytes()
GZ = gzip.compress(DATA, mtime=0)


def _inflate(blob: bytes, size: int = 1 << 16) -> tuple[bytes, bool]:
    """Every byte ``GzipStream`` returns for ``blob`` read ``size`` bytes at a time, and whether it was cut."""
    g = GzipStream(io.BufferedReader(io.BytesIO(blob)), piece=97)  # a small piece: many reads of the input
    out = bytearray()
    buf = bytearray(size)
    while n := g.readinto(buf):
        out += buf[:n]
    return bytes(out), g.cut


def test_whole_stream_at_every_read_size():
    for size in (1, 7, 4096, 1 << 20):
        assert _inflate(GZ, size) == (DATA, False)


def test_every_cut_returns_all_bytes_inflated_before_it():
    """A stream cut after any number of bytes: what the standard library's zlib inflates from those bytes, all of
    it, then ``cut`` (gzip's own reader and zlib-ng's ``gzip_ng`` hold back up to ~32 KB inflated before a
    cut). From 2 bytes on: a capture is read as gzip when it starts with the magic (reader.py ``capture_of``)."""
    for k in range(2, len(GZ)):
        want = zlib.decompressobj(31).decompress(GZ[:k])
        assert _inflate(GZ[:k]) == (want, True), k


def test_several_members_and_zero_padding():
    """``cat a.gz b.gz`` is one gzip stream of two members; zero bytes after a member are padding (tar's blocks)."""
    two = gzip.compress(b"second member", mtime=0)
    assert _inflate(GZ + two) == (gzip.decompress(GZ + two), False) == (DATA + b"second member", False)
    assert _inflate(GZ + bytes(512)) == (DATA, False)
    assert _inflate(GZ + bytes(3) + two + bytes(1)) == (DATA + b"second member", False)


def test_large_members_at_every_read_size():
    """Members larger than a read (the input after a member's end was fed twice when a read ended with the member:
    zlib keeps it as ``unconsumed_tail`` and as ``unused_data``; newcomer32's finding: a capture split into two
    members read 3 frames too many, or was called corrupt)."""
    rnd = random.Random(7)
    parts = [rnd.randbytes(150_000), bytes(300_000), rnd.randbytes(70_000)]
    blob = b"".join(gzip.compress(x, mtime=0) for x in parts)
    for size in (1000, 4096, 65536, 150_000, 1 << 20):
        assert _inflate(blob, size) == (b"".join(parts), False), size


def test_capture_split_into_members_reads_each_record_once(tmp_path):
    """The 400-record sample split into two gzip members at a record boundary, and at a byte inside a record:
    400 records, as the plain file (``gzip.decompress`` gives the file's bytes)."""
    data = VXLAN4_SAMPLE.read_bytes()
    rec = 24 + 16 + 1514  # the file header, then records of 1514 bytes (16-byte headers)
    for cut in (24 + 200 * (16 + 1514), rec + 7, len(data) - 3):
        p = tmp_path / "m.pcap.gz"
        p.write_bytes(gzip.compress(data[:cut], mtime=0) + gzip.compress(data[cut:], mtime=0))
        assert gzip.decompress(p.read_bytes()) == data
        with open_capture(p) as cap:
            assert (sum(1 for _ in cap), cap.stream_cut) == (400, False), cut


@pytest.mark.parametrize("after", [b"x", b"xy", b"\x1f\x00", b"garbage after the member"])
def test_other_bytes_after_a_member_are_not_gzip(after):
    """As Python's gzip: "Not a gzipped file (b'..')" naming the first two bytes found where a member starts."""
    with pytest.raises(
        gzip.BadGzipFile, match=r"Not a gzipped file \(" + repr(after[:2]).replace("\\", "\\\\")
    ):
        _inflate(GZ + after)


def test_a_member_header_cut_is_a_cut():
    """The next member's header cut anywhere, its first byte alone included (gzip(1): "unexpected end of file";
    breaker36's finding: one byte was "Not a gzipped file"): the stream ends cut."""
    for k in (1, 2, 3, 9):
        assert _inflate(GZ + GZ[:k]) == (DATA, True), k


def test_corrupt_data_and_trailer_raise_read_errors():
    """Corrupt deflate data, and a CRC-32 or ISIZE that does not match the data, raise an error the readers turn
    into a one-line "corrupt gzip data" (``READ_ERRORS``)."""
    bad_crc = GZ[:-8] + bytes(4) + GZ[-4:]
    bad_size = GZ[:-4] + (len(DATA) + 1).to_bytes(4, "little")
    corrupt = GZ[:20] + bytes(40) + GZ[60:]
    for blob in (bad_crc, bad_size, corrupt):
        with pytest.raises(READ_ERRORS):
            _inflate(blob)


def test_capture_reader_reads_members_and_names_corrupt_gzip(tmp_path):
    """Through ``open_capture``: a capture compressed as two members (split inside its second record) is read
    whole, its 17 records; a bad trailer is "corrupt gzip data" (one line)."""
    p = tmp_path / "c.pcap.gz"
    p.write_bytes(gzip.compress(DATA[:100], mtime=0) + gzip.compress(DATA[100:], mtime=0))
    with open_capture(p) as cap:
        assert sum(1 for _ in cap) == 17 and not cap.stream_cut
    p.write_bytes(GZ[:-8] + bytes(4) + GZ[-4:])
    with pytest.raises(CaptureError, match="c.pcap.gz: corrupt gzip data"), open_capture(p) as cap:
        for _ in cap:
            pass


def _first_error(path) -> str:
    with pytest.raises(CaptureError) as ei, open_capture(path) as cap:
        for _ in cap:
            pass
    return str(ei.value)


def test_corrupt_gzip_error_says_where_the_gzip_data_failed(tmp_path):
    """The kind: a gzip error after records were read. The error names the compressed byte where a member should
    have started (other bytes after a member) or the member the error is in (corrupt deflate data, a trailer that
    does not match: zlib does not say where inside it), and the bytes inflated before it. breaker38's finding: it
    named the first record of the reader's block ("near offset 24 of the decompressed data") when the junk stood
    after all 400 records. Offsets are those of the files built here."""
    data = VXLAN4_SAMPLE.read_bytes()
    gz = gzip.compress(data, mtime=0)
    p = tmp_path / "j.pcap.gz"
    p.write_bytes(gz + b"junk")
    assert _first_error(p) == (
        f"{p}: corrupt gzip data at compressed byte {len(gz)}, after {len(data)} bytes inflated: "
        "Not a gzipped file (b'ju')"
    )
    # a CRC-32 that does not match is found at the member's end, whatever byte was corrupt: the member is named,
    # no place in it (breaker39: "past the first M bytes inflated" named bytes after a corrupt one)
    cut = 24 + 200 * (16 + 1514)
    first, second = gzip.compress(data[:cut], mtime=0), gzip.compress(data[cut:], mtime=0)
    p.write_bytes(first + second[:-8] + bytes(4) + second[-4:])
    assert _first_error(p) == (
        f"{p}: corrupt gzip data in the member that starts at compressed byte {len(first)}: Error -3 while "
        "decompressing data: incorrect data check"
    )
    p.write_bytes(gz[:-8] + bytes(4) + gz[-4:])
    assert _first_error(p).startswith(
        f"{p}: corrupt gzip data in the member that starts at compressed byte 0: "
    )
    # other bytes after a member that held only 10 bytes of the file header: said as the header is read
    p.write_bytes(gzip.compress(data[:10], mtime=0) + b"junk")
    assert _first_error(p) == (
        f"{p}: corrupt gzip data at compressed byte {len(gzip.compress(data[:10], mtime=0))}, after 10 bytes "
        "inflated: Not a gzipped file (b'ju')"
    )


def test_gzip_cut_in_the_capture_header_says_how_far_it_got(tmp_path):
    """Gzip data cut before its end inside the 24-byte pcap file header: "inside the capture header" with the
    bytes inflated (breaker38: 10 bytes were said to be cut "before" it); none inflated: "before". A stored
    (level 0) deflate block: its 10-byte gzip header and 5-byte block header precede the data, byte for byte."""
    c = zlib.compressobj(0, zlib.DEFLATED, 31)
    blob = c.compress(VXLAN4_SAMPLE.read_bytes()) + c.flush()
    p = tmp_path / "h.pcap.gz"
    for keep, where in (
        (15, "before the capture header"),
        (16, "inside the capture header (after 1 byte inflated)"),
        (25, "inside the capture header (after 10 bytes inflated)"),
    ):
        p.write_bytes(blob[:keep])
        assert _first_error(p) == f"{p}: gzip data cut short {where}"
