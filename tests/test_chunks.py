"""capture/chunks.py against the record-at-a-time reader (reader.py ``Capture``), which is the reference.

Both must give the same records (timestamp ns, bytes, wire length), the same truncated-record count and the same
one-line error for a corrupt record, whatever the block size (blocks smaller than one record included).
"""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest

from gro_replay.capture.chunks import PcapChunks, RecordBlocks
from gro_replay.capture.reader import CaptureError, open_capture
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
    anywhere (a cut gzip stream loses the record being read and counts one truncated record in both readers)."""
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
            assert want[1] == 1
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
    """``_chunked`` through ``RecordBlocks`` over the capture's record iterator (and each record's link type)."""
    out = []
    with open_capture(path) as cap:
        r = RecordBlocks(cap, block)
        keep = None
        while (ch := r.next(keep)) is not None:
            n = len(ch)
            take = n - n // 3 if keep_some and not ch.eof and n > 2 else n
            for i in range(take):
                o = int(ch.data[i])
                rec = (int(ch.ts_ns[i]), bytes(ch.buf[o : o + int(ch.caplen[i])]), int(ch.origlen[i]))
                out.append((*rec, int(ch.linktype[i])))
            keep = ch.record_start(take)
        return out, cap.truncated_records


def _reference_lt(path):
    with open_capture(path) as cap:
        return [(ts, bytes(buf), ol, lt) for ts, buf, ol, lt in cap], cap.truncated_records


@pytest.mark.parametrize("block", [64, 5000, 1 << 20])
def test_record_blocks_give_the_reference_readers_records(block, tmp_path):
    """pcapng (and anything else the record reader reads) in blocks: the reference reader's records, link types
    and truncation count, also when the caller hands records back; sections, interfaces of other link types and
    resolutions, and other blocks in between are the reader's to parse (test_reader.py pins those)."""
    from test_reader import epb, idb, shb

    mixed = tmp_path / "mixed.pcap"
    _mixed(mixed)
    paths = []
    for src in [*SAMPLES, mixed]:
        ng = tmp_path / (src.stem + ".pcapng")
        _pcapng_of(src, ng)
        paths.append(ng)
    two = tmp_path / "two.pcapng"
    sll = struct.pack("!HHH8sH", 0, 1, 6, bytes.fromhex("020000000001") + bytes(2), 0x0800) + bytes(20)
    two.write_bytes(
        paths[-1].read_bytes()
        + shb(">")
        + idb(1, order=">", tsresol=9)
        + idb(113, order=">")
        + b"".join(
            epb(1, 1_700_000_000_000_000 + i, sll, order=">")
            if i % 2
            else epb(0, 1_700_000_000_000_000_000 + i, bytes(60 + i), order=">")
            for i in range(40)
        )
    )
    cut = tmp_path / "cut.pcapng"
    cut.write_bytes(paths[-1].read_bytes()[:-5])
    for p in [*paths, two, cut, mixed]:
        want = _reference_lt(p)
        assert _blocks(p, block) == want, p
        assert _blocks(p, block, keep_some=True) == want, p
    assert _reference_lt(cut)[1] == 1


def test_record_blocks_grow_when_the_caller_keeps_every_record(tmp_path):
    """An unfinished poll may span a whole block: handing every record back must give a larger block (as
    ``PcapChunks`` grows its buffer), never the same one again."""
    mixed = tmp_path / "mixed.pcap"
    _mixed(mixed)
    with open_capture(mixed) as cap:
        r = RecordBlocks(cap, 5000)
        first = r.next()
        again = r.next(first.record_start(0))
        assert len(again) > len(first) and not first.eof
        assert bytes(again.buf[: first.end]) == bytes(first.buf[: first.end])
