"""PcapWriter: exact integer-ns timestamps, dpkt-compatible bytes, deterministic output."""

from __future__ import annotations

import io
import struct
from decimal import Decimal

import dpkt
import dpkt.pcap
import pytest

from gro_replay.capture.reader import DLT_EN10MB, DLT_RAW, open_capture
from gro_replay.capture.writer import PcapWriter

TS_NS = 1614373368123456789


def test_dpkt_writer_float_timestamp_loses_nanoseconds():
    # why PcapWriter packs its own record headers: a float near 1.6e9 s resolves ~240 ns
    bio = io.BytesIO()
    dpkt.pcap.Writer(bio, nano=True).writepkt(b"x", ts=TS_NS / 1e9)
    _sec, nsec, _caplen, _len = struct.unpack_from("<IIII", bio.getvalue(), 24)
    assert nsec != 123456789


def test_pcap_writer_nanosecond_file_bytes(tmp_path):
    p = tmp_path / "out.pcap"
    with PcapWriter(p) as w:
        w.write(TS_NS, b"\xaa" * 60)
    data = p.read_bytes()
    # LE nanosecond magic, v2.4, thiszone 0, sigfigs 0, snaplen 262144, EN10MB
    assert data[:24] == struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, 1)
    assert data[24:40] == struct.pack("<IIII", 1614373368, 123456789, 60, 60)
    assert data[40:] == b"\xaa" * 60


@pytest.mark.parametrize(
    "ts_ns", [TS_NS, 0, 1, 999_999_999, 1_000_000_000, (2**32 - 1) * 10**9 + 999_999_999]
)
def test_pcap_writer_round_trips_exact_ns_through_reader(tmp_path, ts_ns):
    p = tmp_path / "rt.pcap"
    with PcapWriter(p) as w:
        w.write(ts_ns, b"\x01" * 20)
    with open_capture(p) as cap:
        assert list(cap) == [(ts_ns, b"\x01" * 20, 20, DLT_EN10MB)]


def test_dpkt_reader_reads_exact_decimal_ns(tmp_path):
    p = tmp_path / "dpkt.pcap"
    with PcapWriter(p) as w:
        w.write(TS_NS, b"\x01" * 20)
    with open(p, "rb") as f:
        [(ts, buf)] = list(dpkt.pcap.Reader(f))
    assert ts == Decimal("1614373368.123456789") and buf == b"\x01" * 20


def test_pcap_writer_microsecond_mode_matches_dpkt_writer_bytes():
    ours, theirs = io.BytesIO(), io.BytesIO()
    w = PcapWriter(ours, nano=False, snaplen=65535, linktype=DLT_RAW)
    d = dpkt.pcap.Writer(theirs, snaplen=65535, linktype=DLT_RAW)
    for i in range(3):
        w.write(1614373368_123456000 + i * 1000 + 999, bytes([i]) * 40)  # sub-us part truncated
        d.writepkt(bytes([i]) * 40, ts=1614373368.123456 + i * 1e-6)
    assert ours.getvalue() == theirs.getvalue()


def test_pcap_writer_output_is_deterministic():
    def run() -> bytes:
        bio = io.BytesIO()
        with PcapWriter(bio) as w:
            for i in range(5):
                w.write(TS_NS + i, bytes([i]) * (60 + i))
        return bio.getvalue()

    assert run() == run()


def test_pcap_writer_cuts_to_snaplen_and_keeps_orig_len(tmp_path):
    p = tmp_path / "snap.pcap"
    with PcapWriter(p, snaplen=100) as w:
        w.write(5, b"\x02" * 1514)
        w.write(6, b"\x03" * 100, orig_len=1514)
    with open_capture(p) as cap:
        assert list(cap) == [(5, b"\x02" * 100, 1514, DLT_EN10MB), (6, b"\x03" * 100, 1514, DLT_EN10MB)]


@pytest.mark.parametrize(("ts_ns", "orig_len"), [(-1, None), (2**32 * 10**9, None), (0, 10)])
def test_pcap_writer_rejects_unrepresentable_record(ts_ns, orig_len):
    w = PcapWriter(io.BytesIO())
    with pytest.raises(ValueError):
        w.write(ts_ns, b"\x00" * 20, orig_len=orig_len)


def test_pcap_writer_leaves_caller_file_open():
    bio = io.BytesIO()
    with PcapWriter(bio) as w:
        w.write(0, b"\x00" * 14)
    assert not bio.closed and len(bio.getvalue()) == 24 + 16 + 14


def test_record_header_layout_is_dpkts():
    # written out in capture/writer.py so that importing it does not import dpkt
    from gro_replay.capture import writer

    assert writer._REC.format == dpkt.pcap.LEPktHdr.__hdr_fmt__
