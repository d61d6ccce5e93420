"""capture/chunks.py against the reference: classic pcap against the record-at-a-time reader (reader.py
``Capture``), pcapng against the values the test files were built with (and the classic pcap they were converted
from).

Both must give the same records (timestamp ns, bytes, wire length), the same truncated-record count and the same
one-line error for a corrupt record, whatever the block size (blocks smaller than one record included).
"""

from __future__ import annotations

import errno
import gzip
import io
import random
import struct
from pathlib import Path

import pytest
from conftest import VXLAN4_SAMPLE

from gro_replay.capture.chunks import PcapChunks
from gro_replay.capture.pcapng_chunks import PcapngChunks
from gro_replay.capture.reader import CaptureError, capture_of, open_capture
from gro_replay.capture.writer import PcapWriter

SAMPLES = sorted((Path(__file__).resolve().parent.parent / "sample_pcaps").glob("*.pcap"))


def _reference(path):
    with open_capture(path) as cap:
        return [(ts, bytes(buf), ol) for ts, buf, ol, _lt in cap], cap.truncated_records


def _chunked(path, block, keep_some=False):
    out = []
    with open_capture(path) as cap:
        r = PcapChunks(cap, block)
        keep = None
        while (ch := r.next(keep)) is not None:
            n = len(ch)
            # optionally hand the last third of the records back (read again with the next block)
            take = n - n // 3 if keep_some and not ch.eof and n > 2 else n
            for i in range(take):
                o = int(ch.data[i])
                out.append((int(ch.ts_ns[i]), bytes(ch.buf[o : o + int(ch.caplen[i])]), int(ch.origlen[i])))
            keep = ch.record_start(take)
        return out, cap.truncated_records


def _mixed(path: Path, n: int = 600, seed: int = 1) -> None:
    """Runs of equal lengths and single odd lengths, snaplen-cut frames, µs timestamps."""
    rng = random.Random(seed)
    with PcapWriter(path, snaplen=1000, nano=False) as w:
        t = 1_600_000_000_000_000_000
        while n > 0:
            size = rng.choice([60, 1514, 1514, 777, rng.randint(14, 3000)])
            for _ in range(rng.choice([1, 1, 3, 40])):
                w.write(t, bytes(rng.randrange(256) for _ in range(8)) * (size // 8) + bytes(size % 8))
                t += rng.randint(1, 5000) * 1000
                n -= 1


@pytest.mark.parametrize("block", [64, 1000, 5000, 1 << 20])
def test_same_records_as_the_reference_reader(block, tmp_path):
    mixed = tmp_path / "mixed.pcap"
    _mixed(mixed)
    for p in [*SAMPLES, mixed]:
        want = _reference(p)
        assert _chunked(p, block) == want, p
        assert _chunked(p, block, keep_some=True) == want, p


def test_a_record_cut_short_at_the_end_is_counted_once(tmp_path):
    p = tmp_path / "cut.pcap"
    _mixed(p, 50)
    data = p.read_bytes()
    p.write_bytes(data[:-7])
    want, truncated = _reference(p)
    assert truncated == 1
    assert _chunked(p, 4096) == (want, 1)


def test_a_corrupt_caplen_is_the_reference_readers_error(tmp_path):
    p = tmp_path / "bad.pcap"
    _mixed(p, 5)
    data = bytearray(p.read_bytes())
    # caplen of the second record := 2**20 (> MAX_CAPLEN)
    first_caplen = struct.unpack_from("<I", data, 24 + 8)[0]
    struct.pack_into("<I", data, 24 + 16 + first_caplen + 8, 1 << 20)
    p.write_bytes(bytes(data))
    with pytest.raises(CaptureError) as ref:
        _reference(p)
    with pytest.raises(CaptureError) as got:
        _chunked(p, 1 << 16)
    assert str(got.value) == str(ref.value)


def test_big_endian_pcap(tmp_path):
    p = tmp_path / "be.pcap"
    frames = [bytes([i]) * (100 + i) for i in range(30)] + [bytes(1514)] * 20
    out = bytearray(struct.pack(">IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    for i, f in enumerate(frames):
        out += struct.pack(">IIII", 1_600_000_000 + i, 250 * i, len(f), len(f)) + f
    p.write_bytes(bytes(out))
    want = _reference(p)
    assert len(want[0]) == 50
    assert _chunked(p, 3000) == want


def test_gzip_classic_pcap_is_read_in_blocks_with_the_same_records(tmp_path):
    """gzip-compressed classic pcap: the same records and truncation count as the reference reader, whole or cut
    anywhere (a cut gzip stream loses the record being read and counts one truncated record in both readers; a cut
    in the 8-byte gzip trailer, RFC 1952 §2.3, loses no record and counts none)."""
    import gzip

    mixed = tmp_path / "mixed.pcap"
    _mixed(mixed, n=300)
    for src in [*SAMPLES, mixed]:
        gz = tmp_path / (src.name + ".gz")
        data = gzip.compress(src.read_bytes())
        gz.write_bytes(data)
        with open_capture(gz) as cap:
            assert PcapChunks.supported(cap)
        want = _reference(gz)
        assert want == _reference(src)
        for block in (64, 5000, 1 << 20):
            assert _chunked(gz, block) == want, (src.name, block)
        rng = random.Random(len(data))
        for cut in sorted({len(data) - 1, len(data) - 9, *(rng.randrange(40, len(data)) for _ in range(6))}):
            gz.write_bytes(data[:cut])
            want = _reference(gz)
            # a cut in the trailer loses nothing; in the deflate data it loses the record being read, if any (a cut
            # that only drops the end-of-block code can end at a record boundary)
            assert want[1] == 0 if cut >= len(data) - 8 else want[1] in (0, 1), (src.name, cut)
            for block in (1000, 1 << 20):
                assert _chunked(gz, block) == want, (src.name, cut, block)


def test_pcapng_is_not_read_in_blocks(tmp_path):
    import dpkt

    ng = tmp_path / "s.pcapng"
    with open(SAMPLES[0], "rb") as f, open(ng, "wb") as g:
        w = dpkt.pcapng.Writer(g, snaplen=65535, linktype=1)
        for ts, buf in dpkt.pcap.Reader(f):
            w.writepkt(buf, ts=float(ts))
    with open_capture(ng) as cap:
        assert not PcapChunks.supported(cap)


def _pcapng_of(src: Path, dst: Path) -> None:
    import dpkt

    with open(src, "rb") as f, open(dst, "wb") as g:
        w = dpkt.pcapng.Writer(g, snaplen=65535, linktype=1)
        for ts, buf in dpkt.pcap.Reader(f):
            w.writepkt(buf, ts=float(ts))


def _blocks(path, block, keep_some=False):
    """``_chunked`` through ``PcapngChunks`` (each record with its link type and interface)."""
    out = []
    with open_capture(path) as cap:
        r = PcapngChunks(cap, block)
        keep = None
        while (ch := r.next(keep)) is not None:
            n = len(ch)
            take = n - n // 3 if keep_some and not ch.eof and n > 2 else n
            for i in range(take):
                o = int(ch.data[i])
                rec = (int(ch.ts_ns[i]), bytes(ch.buf[o : o + int(ch.caplen[i])]), int(ch.origlen[i]))
                out.append((*rec, int(ch.linktype[i]), int(ch.iface[i])))
            keep = ch.record_start(take)
        return out, cap.truncated_records


def _iterated(path):
    """Through ``Capture`` iteration (the walker's records one at a time), with ``interface_key``'s index."""
    with open_capture(path) as cap:
        return [
            (ts, bytes(b), ol, lt, cap.iface_base + cap.last_iface) for ts, b, ol, lt in cap
        ], cap.truncated_records


def _block(t: int, body: bytes, order: str = "<") -> bytes:
    """A pcapng block of type ``t`` around ``body`` (padded to 4 bytes)."""
    body += bytes(-len(body) % 4)
    n = len(body) + 12
    return struct.pack(order + "II", t, n) + body + struct.pack(order + "I", n)


def _built(tmp_path):
    """A pcapng file and the records it was built with: ``(ts_ns, bytes, orig_len, linktype, interface)``.

    Section 1 (little-endian): interface 0 EN10MB in µs, interface 1 LINUX_SLL in ns (if_tsresol 9); enhanced
    packet blocks singly and in a run of 40 of one size, snaplen-cut ones, an obsolete packet block (type 2), a
    simple packet block (interface 0, the previous packet's time), name resolution, statistics, decryption secrets
    and custom blocks, one of 100 kB (larger than the small block sizes). Section 2 (big-endian): interface 2
    EN10MB in 2^-20 s with if_tsoffset 1.6e9 s, interface 3 RAW in ms. The last block is cut 5 bytes short."""
    from test_reader import epb, idb, shb

    recs = []
    out = [shb("<"), idb(1), idb(113, tsresol=9)]
    sll = struct.pack("!HHH8sH", 0, 1, 6, bytes.fromhex("020000000001") + bytes(2), 0x0800) + bytes(20)
    for i in range(12):
        if i % 3 == 2:
            out.append(epb(1, 1_700_000_000_000_000_000 + i, sll))
            recs.append((1_700_000_000_000_000_000 + i, sll, len(sll), 113, 1))
        else:
            data = bytes([i]) * (60 + 7 * i)
            out.append(epb(0, 1_700_000_000_000_000 + i, data, orig_len=len(data) + 100 * (i % 2)))
            recs.append((1_700_000_000_000_000_000 + 1000 * i, data, len(data) + 100 * (i % 2), 1, 0))
    out.append(_block(4, bytes(8)))  # name resolution block, no records
    out.append(_block(5, struct.pack("<III", 0, 0, 0)))  # interface statistics
    for i in range(40):
        data = bytes([i % 7]) * 1514
        out.append(epb(0, 1_700_000_001_000_000 + 10 * i, data))
        recs.append((1_700_000_001_000_000_000 + 10_000 * i, data, 1514, 1, 0))
    pb = bytes(range(70))
    ts_pb = 1_700_000_002_000_000_123
    out.append(_block(2, struct.pack("<HHIIII", 1, 0, ts_pb >> 32, ts_pb & 0xFFFFFFFF, 70, 90) + pb))
    recs.append((ts_pb, pb, 90, 113, 1))
    spb = bytes(range(64))
    out.append(_block(3, struct.pack("<I", 64) + spb))  # simple packet block: interface 0, the previous time
    recs.append((ts_pb, spb, 64, 1, 0))
    out.append(_block(0x0000000A, bytes(100)))  # decryption secrets
    out.append(_block(0x00000BAD, bytes(100_000)))  # custom block, larger than a small buffer
    out += [
        shb(">"),
        idb(1, order=">", tsresol=0x80 | 20, tsoffset=1_600_000_000),
        idb(101, order=">", tsresol=3),
    ]
    for i in range(30):
        data = bytes([0x45]) + bytes([i]) * (40 + i % 2)
        if i % 5 == 4:
            out.append(epb(1, 1_700_000_003_000 + i, data, order=">"))
            recs.append(((1_700_000_003_000 + i) * 1_000_000, data, len(data), 101, 3))
        else:
            out.append(epb(0, (1 << 40) + i, data, order=">"))
            recs.append((((1 << 40) + i) * 10**9 // (1 << 20) + 1_600_000_000 * 10**9, data, len(data), 1, 2))
    out.append(_block(3, struct.pack(">I", 80) + bytes(80), ">"))
    recs.append((recs[-1][0], bytes(80), 80, 1, 2))
    out.append(epb(0, 1, bytes(60), order=">")[:-5])  # cut short
    p = tmp_path / "built.pcapng"
    p.write_bytes(b"".join(out))
    return p, recs


@pytest.mark.parametrize("block", [64, 5000, 1 << 20])
def test_pcapng_blocks_give_the_records_the_file_was_built_with(block, tmp_path):
    """The block walker (whatever its block size, also when the caller hands records back) and ``Capture``
    iteration give exactly the records written: bytes, timestamps in ns per interface (if_tsresol 10^-n and 2^-n,
    if_tsoffset), link types, interfaces numbered over the sections, both byte orders, obsolete and simple packet
    blocks, other blocks skipped, the block cut short at the end counted once."""
    import gzip

    p, recs = _built(tmp_path)
    assert _iterated(p) == (recs, 1)
    assert _blocks(p, block) == (recs, 1)
    assert _blocks(p, block, keep_some=True) == (recs, 1)
    gz = tmp_path / "built.pcapng.gz"
    gz.write_bytes(gzip.compress(p.read_bytes()))
    assert _blocks(gz, block, keep_some=True) == (recs, 1)


def test_pcapng_blocks_from_dpkt_writer_equal_the_pcap_records(tmp_path):
    """Sample captures and a mix of sizes converted by dpkt's pcapng writer (µs): the classic pcap's records (the
    wire length is the captured length: dpkt's writer sets the EPB's packet length to the data's)."""
    mixed = tmp_path / "mixed.pcap"
    _mixed(mixed)
    for src in [*SAMPLES, mixed]:
        ng = tmp_path / (src.stem + ".pcapng")
        _pcapng_of(src, ng)
        want = [(ts, b, len(b), 1, 0) for ts, b, _ol in _reference(src)[0]]
        for block in (64, 5000, 1 << 20):
            assert _blocks(ng, block, keep_some=True) == (want, 0), (src.name, block)


@pytest.mark.parametrize(
    ("patch", "detail"),
    [
        (lambda b, at: struct.pack_into("<I", b, at + len_at(b, at) - 4, 0), "block lengths differ"),
        (lambda b, at: struct.pack_into("<I", b, at + 8, 7), "interface 7 not described"),
        (lambda b, at: struct.pack_into("<I", b, at + 20, 1 << 20), "caplen 1048576, block length 1548"),
        (lambda b, at: struct.pack_into("<I", b, at + 4, 30), "block length 30"),
    ],
)
def test_a_corrupt_enhanced_packet_block_is_named_at_its_offset(patch, detail, tmp_path):
    """The 25th block of the run of 40 corrupted: the records before it come first, then the one-line error
    naming the block's file offset, at every block size and through iteration."""
    p, recs = _built(tmp_path)
    data = bytearray(p.read_bytes())
    at = _nth_block(data, 2 + 1 + 12 + 2 + 24)
    patch(data, at)
    p.write_bytes(bytes(data))
    want = f"{p}: corrupt record at offset {at} ({detail})"
    for block in (64, 5000, 1 << 20):
        got = []
        with open_capture(p) as cap, pytest.raises(CaptureError) as err:
            r = PcapngChunks(cap, block)
            while (ch := r.next()) is not None:
                got.extend(int(t) for t in ch.ts_ns)
        assert str(err.value) == want
        assert got == [r[0] for r in recs[: 12 + 24]]
    with open_capture(p) as cap, pytest.raises(CaptureError) as err:
        assert len(list(cap)) == 12 + 24
    assert str(err.value) == want


def len_at(b, at: int) -> int:
    return struct.unpack_from("<I", b, at + 4)[0]


def _nth_block(b, n: int) -> int:
    """File offset of block ``n`` (0: the section header) of a little-endian section."""
    at = 0
    for _ in range(n):
        at += len_at(b, at)
    return at


def test_pcapng_blocks_grow_when_the_caller_keeps_every_record(tmp_path):
    """An unfinished poll may span a whole block: handing every record back must give a larger block (as
    ``PcapChunks`` grows its buffer), never the same one again."""
    p, recs = _built(tmp_path)
    with open_capture(p) as cap:
        r = PcapngChunks(cap, 5000)
        first = r.next()
        again = r.next(first.record_start(0))
        assert len(again) > len(first) and not first.eof
        assert bytes(again.buf[: first.end]) == bytes(first.buf[: first.end])


@pytest.mark.parametrize("block", [40_000, 1 << 20])
def test_a_run_of_enhanced_packet_blocks_ends_at_a_block_of_their_length_and_another_type(block, tmp_path):
    """A run of equal-length enhanced packet blocks is taken with one vectorised check (chunks.py ``SizeWalk``,
    after ``_MIN_RUN`` in a row): it ends at a block of the same length but another type (here an interface
    statistics block, then an interface description block: pcapng spec §4.6, §4.2), and the walk goes on after
    it: the records are the 60 built (the last 10 on the interface described mid-run), the statistics block
    skipped."""
    from test_reader import epb, idb, shb

    data = [bytes([i % 251]) * 1000 for i in range(60)]
    blocks = [epb(int(i >= 50), 1_700_000_000_000_000 + i, d) for i, d in enumerate(data)]
    size = len(blocks[0])
    isb = _block(5, struct.pack("<III", 0, 0, 0) + bytes(size - 24))
    second = idb(1)
    second = _block(1, second[8:-4] + bytes(size - len(second)))
    assert len(isb) == len(second) == size  # the same length as every enhanced packet block around them
    runs = [b"".join(blocks[:25]), isb, b"".join(blocks[25:50]), second, b"".join(blocks[50:])]
    out = shb() + idb(1) + b"".join(runs)
    p = tmp_path / "runs.pcapng"
    p.write_bytes(out)
    recs = [(1_700_000_000_000_000_000 + 1000 * i, d, 1000, 1, int(i >= 50)) for i, d in enumerate(data)]
    assert _blocks(p, block) == (recs, 0)
    assert _blocks(p, block, keep_some=True) == (recs, 0)
    assert _iterated(p) == (recs, 0)


class _FailingRaw(io.RawIOBase):
    """A stream of ``data`` whose reads fail with EIO once ``at`` bytes were returned (a disk or network file
    system error part-way)."""

    def __init__(self, data: bytes, at: int) -> None:
        super().__init__()
        self._data, self._at, self._pos = data, at, 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        if self._pos >= self._at:
            raise OSError(errno.EIO, "Input/output error")
        n = min(len(b), self._at - self._pos)
        b[:n] = self._data[self._pos : self._pos + n]
        self._pos += n
        return n


def _error_of(data: bytes, at: int, how: str) -> str:
    with pytest.raises(CaptureError) as ei, capture_of(_FailingRaw(data, at), "f") as cap:
        if how == "records":
            for _ in cap:
                pass
        else:
            r = PcapngChunks(cap, 1 << 20) if how == "pcapng" else PcapChunks(cap, 1 << 20)
            while r.next(None) is not None:
                pass
    return str(ei.value)


@pytest.mark.parametrize("how", ["records", "chunks", "pcapng"])
def test_a_read_error_is_named_after_the_bytes_the_file_gave(how, tmp_path):
    """The kind: a read that fails part-way (EIO), in every reader. The error names how many bytes the file gave
    before it failed, compressed bytes for a gzip capture (the block readers named the first record of their
    block, up to a block before; a gzip capture's decompressed offset is not the file's). Offsets: of the streams
    built here, failing after 300,000 bytes; the gzip copy is of random frames, so that it is that large."""
    data = VXLAN4_SAMPLE.read_bytes()
    if how == "pcapng":
        _pcapng_of(VXLAN4_SAMPLE, tmp_path / "v.pcapng")
        data = (tmp_path / "v.pcapng").read_bytes()
    assert _error_of(data, 300_000, how) == "f: read error after 300000 bytes read (Input/output error)"
    rnd = random.Random(5)
    p = tmp_path / "r.pcap"
    with PcapWriter(p) as w:
        for i in range(400):
            w.write(i * 1000, rnd.randbytes(1514))
    gz = gzip.compress(p.read_bytes(), mtime=0)
    assert len(gz) > 500_000
    assert _error_of(gz, 300_000, "records" if how == "records" else "chunks") == (
        "f: read error after 300000 compressed bytes read (Input/output error)"
    )


def test_a_read_error_before_the_records_and_in_a_streams_copy_says_how_far_it_got(tmp_path):
    """The kind's other paths (breaker39): a read that fails inside the capture header (the file gave 10 bytes),
    and the copy of a stream that ``--detect-tunnels`` spools (capture/spool.py ``spooled``: 300,000 bytes read,
    and 100, where the header's reading took them all)."""
    from gro_replay.capture import spool

    data = VXLAN4_SAMPLE.read_bytes()
    with pytest.raises(CaptureError) as ei:
        capture_of(_FailingRaw(data, 10), "f")
    assert str(ei.value) == "f: read error after 10 bytes read (Input/output error)"
    # through spooled: the bytes the header's reading took count too (breaker40: "after 0 bytes read"), and a
    # failure inside the header is counted (breaker41: no count), compressed bytes for gzip data
    gz = gzip.compress(data, mtime=0)
    for blob, at, kind in ((data, 300_000, ""), (data, 100, ""), (data, 10, ""), (gz, 5000, "compressed ")):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(spool, "open_stream", lambda path, blob=blob, at=at: _FailingRaw(blob, at))
            with pytest.raises(CaptureError) as ei, spool.spooled("-", "--detect-tunnels"):
                pass
        assert str(ei.value).endswith(f": read error after {at} {kind}bytes read (Input/output error)"), (
            ei.value
        )
