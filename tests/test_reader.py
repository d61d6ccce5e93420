"""Capture reader: formats, integer-ns timestamps, link types, truncation and one-line errors.

Inputs are built in tmp_path with dpkt's writers and block classes, or byte by byte with struct where dpkt
writes only the host's byte order.
"""

from __future__ import annotations

import gzip
import io
import os
import random
import struct
from pathlib import Path

import dpkt
import dpkt.pcap
import dpkt.pcapng
import pytest

from gro_replay.capture.reader import (
    DLT_EN10MB,
    DLT_LINUX_SLL,
    DLT_LINUX_SLL2,
    DLT_RAW,
    LINKTYPE_IPV4,
    LINKTYPE_IPV6,
    MAX_CAPLEN,
    CaptureError,
    l2_normalize,
    open_capture,
)

TS_NS = 1614373368123456789  # 2021-02-26T21:02:48.123456789Z
TS_US_NS = 1614373368123456000  # the same, at microsecond resolution

ETH_FRAME = bytes.fromhex("020000000002") + bytes.fromhex("020000000001") + b"\x08\x00" + bytes(range(46))


def frame(i: int, n: int = 60) -> bytes:
    """Distinct frame bytes for record ``i``."""
    return bytes([i]) * n


def pcap_bytes(records, *, order="<", nano=False, linktype=DLT_EN10MB, snaplen=262144) -> bytes:
    """A pcap file: records are (sec, frac, caplen, orig_len, data) with frac in us or ns."""
    magic = 0xA1B23C4D if nano else 0xA1B2C3D4
    out = [struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype)]
    for sec, frac, caplen, orig_len, data in records:
        out.append(struct.pack(order + "IIII", sec, frac, caplen, orig_len) + data)
    return b"".join(out)


def write(tmp_path: Path, name: str, data: bytes, gz: bool = False) -> Path:
    p = tmp_path / (name + (".gz" if gz else ""))
    p.write_bytes(gzip.compress(data, mtime=0) if gz else data)
    return p


def read_all(path) -> tuple[list[tuple[int, bytes, int, int]], object]:
    with open_capture(path) as cap:
        frames = list(cap)
    return frames, cap


# --- pcap formats and timestamps ---


@pytest.mark.parametrize("gz", [False, True])
def test_pcap_little_endian_us_written_by_dpkt(tmp_path, gz):
    bio = io.BytesIO()
    w = dpkt.pcap.Writer(bio, snaplen=65535)  # host order: little-endian on every CI host
    for i in range(3):
        w.writepkt(frame(i), ts=1614373368.123456 + i)
    frames, cap = read_all(write(tmp_path, "le.pcap", bio.getvalue(), gz))
    assert cap.format == "pcap" and cap.compressed is gz and cap.linktype == DLT_EN10MB
    assert frames == [(TS_US_NS + i * 1_000_000_000, frame(i), 60, DLT_EN10MB) for i in range(3)]
    assert cap.truncated_records == 0


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("order", ["<", ">"])
def test_pcap_us_both_byte_orders(tmp_path, order, gz):
    data = pcap_bytes(
        [(1614373368, 123456, 60, 60, frame(1)), (1614373369, 999999, 60, 60, frame(2))], order=order
    )
    frames, _ = read_all(write(tmp_path, "us.pcap", data, gz))
    assert frames == [
        (1614373368_123456000, frame(1), 60, DLT_EN10MB),
        (1614373369_999999000, frame(2), 60, DLT_EN10MB),
    ]


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("order", ["<", ">"])
def test_pcap_nanosecond_timestamp_round_trips_exactly(tmp_path, order, gz):
    data = pcap_bytes([(1614373368, 123456789, 60, 60, frame(1))], order=order, nano=True)
    frames, _ = read_all(write(tmp_path, "ns.pcap", data, gz))
    assert frames == [(TS_NS, frame(1), 60, DLT_EN10MB)]


def test_pcap_modified_format_record_header_of_24_bytes(tmp_path):
    # Kuznetzov's modified pcap (dpkt MODPCAP_MAGIC): 8 more bytes per record header
    data = struct.pack("<IHHiIII", 0xA1B2CD34, 2, 4, 0, 0, 65535, 1)
    data += struct.pack("<IIIIIHBB", 1, 5, 60, 60, 2, 0x0800, 0, 0) + frame(1)
    frames, _ = read_all(write(tmp_path, "mod.pcap", data))
    assert frames == [(1_000_005_000, frame(1), 60, DLT_EN10MB)]


def test_pcap_snaplen_cut_record_keeps_orig_len(tmp_path):
    data = pcap_bytes([(1, 0, 100, 1514, frame(1, 100))], snaplen=100)
    frames, cap = read_all(write(tmp_path, "snap.pcap", data))
    assert frames == [(1_000_000_000, frame(1, 100), 1514, DLT_EN10MB)]
    assert cap.truncated_records == 0


def test_pcap_fcs_bits_in_linktype_field_are_ignored(tmp_path):
    # LINKTYPE_EN10MB with the F bit (26) and FCS length 2 (16-bit words) in bits 28-31
    data = pcap_bytes([(1, 0, 60, 60, frame(1))], linktype=(2 << 28) | (1 << 26) | DLT_EN10MB)
    frames, cap = read_all(write(tmp_path, "fcs.pcap", data))
    assert cap.linktype == DLT_EN10MB and len(frames) == 1


# --- truncation at end of file ---

THREE = [(1, i, 60, 60, frame(i)) for i in range(3)]


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize(
    "cut",
    [5, 60 + 6, 60],  # data short by 5 bytes; record header cut at 10 of 16 bytes; header only
    ids=["data_short_by_5", "header_cut_at_10", "header_without_data"],
)
def test_pcap_truncated_final_record_stops_iteration_and_is_counted(tmp_path, cut, gz):
    data = pcap_bytes(THREE)[:-cut]
    frames, cap = read_all(write(tmp_path, "cut.pcap", data, gz))
    assert frames == [(1_000_000_000 + i * 1000, frame(i), 60, DLT_EN10MB) for i in range(2)]
    assert cap.truncated_records == 1


def test_pcap_file_ending_at_a_record_boundary_is_not_truncated(tmp_path):
    frames, cap = read_all(write(tmp_path, "ok.pcap", pcap_bytes(THREE)))
    assert len(frames) == 3 and cap.truncated_records == 0


def test_pcap_header_only_file_has_no_frames(tmp_path):
    frames, cap = read_all(write(tmp_path, "hdr.pcap", pcap_bytes([])))
    assert frames == [] and cap.truncated_records == 0


def test_gzip_stream_cut_short_counts_one_truncated_record(tmp_path):
    records = [(1, i, 1000, 1000, random.Random(i).randbytes(1000)) for i in range(20)]
    data = gzip.compress(pcap_bytes(records), mtime=0)
    p = write(tmp_path, "cut.pcap.gz", data[: len(data) // 2])
    frames, cap = read_all(p)
    assert 0 < len(frames) < 20
    assert [f[1] for f in frames] == [r[4] for r in records[: len(frames)]]
    assert cap.truncated_records == 1


def test_gzip_cut_in_its_trailer_loses_no_record_and_says_so(tmp_path):
    # RFC 1952 §2.3: a member ends with CRC32 and ISIZE (8 bytes) after the deflate data; cut there, every record was
    # decompressed: 20 frames read, none truncated, and the report notes the missing end-of-stream marker
    from gro_replay.sim import ReplayConfig, replay_capture

    records = [(1, i, 1000, 1000, random.Random(i).randbytes(1000)) for i in range(20)]
    data = gzip.compress(pcap_bytes(records), mtime=0)
    for k in range(1, 9):
        p = write(tmp_path, f"cut{k}.pcap.gz", data[:-k])
        frames, cap = read_all(p)
        assert len(frames) == 20 and cap.truncated_records == 0 and cap.stream_cut, k
        inp = replay_capture(str(p), ReplayConfig()).input
        assert inp.frames_read == 20 and "truncated_record" not in inp.skipped, k
        assert any("end-of-stream marker" in n and "every record" in n for n in inp.notes), inp.notes
    frames, cap = read_all(write(tmp_path, "whole.pcap.gz", data))
    assert len(frames) == 20 and not cap.stream_cut


def test_pcap_record_claiming_caplen_over_256k_is_corrupt(tmp_path):
    data = pcap_bytes([(1, 0, 60, 60, frame(1)), (1, 1, MAX_CAPLEN + 1, MAX_CAPLEN + 1, b"")])
    with open_capture(write(tmp_path, "big.pcap", data)) as cap:
        it = iter(cap)
        assert next(it)[1] == frame(1)
        with pytest.raises(CaptureError, match=r"big\.pcap: corrupt record at offset 100 \(caplen 262145"):
            next(it)


def test_pcap_record_of_exactly_256k_is_accepted(tmp_path):
    data = pcap_bytes([(1, 0, MAX_CAPLEN, MAX_CAPLEN, bytes(MAX_CAPLEN))])
    frames, _ = read_all(write(tmp_path, "max.pcap", data))
    assert len(frames[0][1]) == MAX_CAPLEN


# --- pcapng ---


def idb(linktype: int, *, order="<", tsresol: int | None = None, tsoffset: int | None = None) -> bytes:
    le = order == "<"
    cls = dpkt.pcapng.InterfaceDescriptionBlockLE if le else dpkt.pcapng.InterfaceDescriptionBlock
    opt = dpkt.pcapng.PcapngOptionLE if le else dpkt.pcapng.PcapngOption
    opts = []
    if tsresol is not None:
        opts.append(opt(code=dpkt.pcapng.PCAPNG_OPT_IF_TSRESOL, data=bytes([tsresol])))
    if tsoffset is not None:
        opts.append(opt(code=dpkt.pcapng.PCAPNG_OPT_IF_TSOFFSET, data=struct.pack(order + "q", tsoffset)))
    if opts:
        opts.append(opt(code=dpkt.pcapng.PCAPNG_OPT_ENDOFOPT))
    return bytes(cls(linktype=linktype, snaplen=262144, opts=opts))


def epb(iface_id: int, ts_units: int, data: bytes, *, order="<", orig_len: int | None = None) -> bytes:
    cls = dpkt.pcapng.EnhancedPacketBlockLE if order == "<" else dpkt.pcapng.EnhancedPacketBlock
    blk = bytes(cls(iface_id=iface_id, ts_high=ts_units >> 32, ts_low=ts_units & 0xFFFFFFFF, pkt_data=data))
    if orig_len is not None:  # dpkt sets pkt_len = caplen; patch the wire length
        blk = blk[:24] + struct.pack(order + "I", orig_len) + blk[28:]
    return blk


def shb(order="<") -> bytes:
    cls = dpkt.pcapng.SectionHeaderBlockLE if order == "<" else dpkt.pcapng.SectionHeaderBlock
    return bytes(cls())


def dpkt_pcapng(n: int) -> bytes:
    """n EN10MB frames one second apart, written by dpkt.pcapng.Writer (microsecond interface)."""
    bio = io.BytesIO()
    w = dpkt.pcapng.Writer(bio, snaplen=262144)
    for i in range(n):
        w.writepkt(frame(i), ts=1614373368.123456 + i)
    return bio.getvalue()


@pytest.mark.parametrize("gz", [False, True])
def test_pcapng_written_by_dpkt(tmp_path, gz):
    frames, cap = read_all(write(tmp_path, "a.pcapng", dpkt_pcapng(3), gz))
    assert cap.format == "pcapng" and cap.linktype == DLT_EN10MB
    assert frames == [(TS_US_NS + i * 1_000_000_000, frame(i), 60, DLT_EN10MB) for i in range(3)]


@pytest.mark.parametrize("gz", [False, True])
def test_pcapng_second_interface_has_its_own_linktype_and_resolution(tmp_path, gz):
    sll = struct.pack("!HHH8sH", 0, 1, 6, bytes.fromhex("020000000001") + bytes(2), 0x0800) + bytes(20)
    data = (
        dpkt_pcapng(1)
        + idb(DLT_LINUX_SLL, tsresol=9)
        + epb(1, TS_NS, sll)
        + epb(0, 1614373368_654321, frame(7), orig_len=1514)
    )
    frames, cap = read_all(write(tmp_path, "two.pcapng", data, gz))
    assert cap.linktype == DLT_EN10MB
    assert frames == [
        (TS_US_NS, frame(0), 60, DLT_EN10MB),
        (TS_NS, sll, len(sll), DLT_LINUX_SLL),
        (1614373368_654321000, frame(7), 1514, DLT_EN10MB),
    ]


@pytest.mark.parametrize(
    ("tsresol", "tsoffset", "units", "ts_ns"),
    [
        (3, None, 1_500, 1_500_000_000),  # milliseconds
        (12, None, 1_000_000_000_001_999, 1_000_000_000_001),  # picoseconds floor to ns
        (0x80 | 10, None, 5 * 1024 + 512, 5_500_000_000),  # 2^-10 s
        (0x80 | 30, None, 3 << 30, 3_000_000_000),  # 2^-30 s
        (6, 1_600_000_000, 250, 1_600_000_000_000_250_000),  # if_tsoffset seconds are added
    ],
)
def test_pcapng_if_tsresol_and_if_tsoffset_in_integer_ns(tmp_path, tsresol, tsoffset, units, ts_ns):
    data = shb() + idb(DLT_EN10MB, tsresol=tsresol, tsoffset=tsoffset) + epb(0, units, frame(1))
    frames, _ = read_all(write(tmp_path, "res.pcapng", data))
    assert frames[0][0] == ts_ns


def test_pcapng_big_endian_section_then_little_endian_section(tmp_path):
    data = (
        shb(">")
        + idb(DLT_RAW, order=">", tsresol=9)
        + epb(0, TS_NS, b"\x45" + bytes(19), order=">")
        + shb("<")
        + idb(DLT_EN10MB)
        + epb(0, 2_000_000, frame(2))
    )
    frames, cap = read_all(write(tmp_path, "sections.pcapng", data))
    assert cap.linktype == DLT_RAW
    assert frames == [(TS_NS, b"\x45" + bytes(19), 20, DLT_RAW), (2_000_000_000, frame(2), 60, DLT_EN10MB)]


def test_pcapng_skips_unknown_blocks_and_reads_simple_packet_block(tmp_path):
    isb = struct.pack("<II", 5, 24) + bytes(12) + struct.pack("<I", 24)  # interface statistics block
    spb = struct.pack("<III", 3, 16 + 64, 60) + frame(9) + bytes(4) + struct.pack("<I", 16 + 64)
    data = dpkt_pcapng(1) + isb + spb
    frames, _ = read_all(write(tmp_path, "spb.pcapng", data))
    # a simple packet block has no timestamp: it takes the previous packet's
    assert frames == [(TS_US_NS, frame(0), 60, DLT_EN10MB), (TS_US_NS, frame(9), 60, DLT_EN10MB)]


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("cut", [5, 92 - 4, 92 - 24], ids=["block_short_by_5", "header_cut", "fields_cut"])
def test_pcapng_truncated_final_block_stops_iteration_and_is_counted(tmp_path, cut, gz):
    data = dpkt_pcapng(3)  # EPB of a 60-byte frame is 92 bytes
    frames, cap = read_all(write(tmp_path, "cut.pcapng", data[:-cut], gz))
    assert [f[1] for f in frames] == [frame(0), frame(1)]
    assert cap.truncated_records == 1


def test_pcapng_packet_for_undescribed_interface_is_corrupt(tmp_path):
    data = dpkt_pcapng(1) + epb(3, 0, frame(1))
    with pytest.raises(CaptureError, match=r"corrupt record at offset \d+ \(interface 3 not described\)"):
        read_all(write(tmp_path, "iface.pcapng", data))


def test_pcapng_without_interface_is_rejected(tmp_path):
    with pytest.raises(CaptureError, match="no interface description block"):
        open_capture(write(tmp_path, "noidb.pcapng", shb()))


# --- link types ---


def test_pcap_unsupported_linktype_105_rejected_at_open(tmp_path):
    p = write(tmp_path, "wifi.pcap", pcap_bytes([(1, 0, 60, 60, frame(1))], linktype=105))
    with pytest.raises(CaptureError) as e:
        open_capture(p)
    assert str(e.value) == (
        f"{p}: unsupported link type 105 (IEEE802_11); supported: EN10MB, LINUX_SLL, LINUX_SLL2, RAW"
    )


def test_pcapng_unsupported_first_interface_is_yielded_with_its_link_type(tmp_path):
    # issue 10 item 6: an interface of an unsupported link type does not reject the file; its frames come with
    # their link type and the replay counts them as skipped (unsupported_link_layer, tests/test_interfaces.py)
    p = write(tmp_path, "wifi.pcapng", shb() + idb(105) + epb(0, 0, frame(1)))
    with open_capture(p) as cap:
        assert [(r[1], r[3]) for r in cap] == [(frame(1), 105)]
        assert cap.interfaces == [(105, None)] and cap.last_iface == 0


def test_pcapng_unsupported_later_interface_is_yielded_with_its_link_type(tmp_path):
    p = write(tmp_path, "later.pcapng", dpkt_pcapng(2) + idb(105) + epb(1, 0, frame(1)))
    with open_capture(p) as cap:
        assert [(r[1], r[3]) for r in cap] == [
            (frame(0), DLT_EN10MB),
            (frame(1), DLT_EN10MB),
            (frame(1), 105),
        ]


@pytest.mark.parametrize(
    "linktype", [DLT_RAW, 12, 14, LINKTYPE_IPV4, LINKTYPE_IPV6, DLT_LINUX_SLL, DLT_LINUX_SLL2]
)
def test_supported_linktypes_are_read_and_yielded_per_frame(tmp_path, linktype):
    frames, cap = read_all(
        write(tmp_path, "lt.pcap", pcap_bytes([(1, 0, 60, 60, frame(1))], linktype=linktype))
    )
    assert cap.linktype == linktype and frames[0][3] == linktype


def test_l2_normalize_en10mb_is_identity():
    assert l2_normalize(ETH_FRAME, DLT_EN10MB) is ETH_FRAME
    assert l2_normalize(ETH_FRAME[:13], DLT_EN10MB) is None


IP4 = b"\x45\x00\x00\x14" + bytes(16)
IP6 = b"\x60" + bytes(39)


def test_l2_normalize_linux_sll_uses_6_byte_address_as_source():
    # pkttype 0 (host), ARPHRD_ETHER, halen 6, addr 02:00:00:00:00:01 + 2 pad bytes, ETH_P_IP
    sll = struct.pack("!HHH8sH", 0, 1, 6, bytes.fromhex("0200000000010000"), 0x0800)
    assert (
        l2_normalize(sll + IP4, DLT_LINUX_SLL) == bytes(6) + bytes.fromhex("020000000001") + b"\x08\x00" + IP4
    )


def test_l2_normalize_linux_sll_other_address_length_gives_zero_source():
    sll = struct.pack("!HHH8sH", 4, 0xFFFE, 0, bytes(8), 0x86DD)  # ARPHRD_NONE (tun), no address
    assert l2_normalize(sll + IP6, DLT_LINUX_SLL) == bytes(12) + b"\x86\xdd" + IP6


@pytest.mark.parametrize("protocol", [0x0001, 0x0003, 0x0004, 0x000C], ids=["802_3", "ALL", "802_2", "CAN"])
def test_l2_normalize_linux_sll_meta_protocol_is_none(protocol):
    sll = struct.pack("!HHH8sH", 0, 1, 6, bytes(8), protocol)
    assert l2_normalize(sll + IP4, DLT_LINUX_SLL) is None


def test_l2_normalize_linux_sll_netlink_is_none():
    sll = struct.pack("!HHH8sH", 4, 824, 0, bytes(8), 0x0800)  # ARPHRD_NETLINK: protocol is a family
    assert l2_normalize(sll + IP4, DLT_LINUX_SLL) is None


def test_l2_normalize_linux_sll_short_header_is_none():
    assert l2_normalize(bytes(15), DLT_LINUX_SLL) is None


def test_l2_normalize_linux_sll2():
    # protocol ETH_P_IPV6, reserved, ifindex 3, ARPHRD_ETHER, pkttype 0, halen 6, addr
    sll2 = struct.pack("!HHIHBB8s", 0x86DD, 0, 3, 1, 0, 6, bytes.fromhex("0200000000020000"))
    assert (
        l2_normalize(sll2 + IP6, DLT_LINUX_SLL2)
        == bytes(6) + bytes.fromhex("020000000002") + b"\x86\xdd" + IP6
    )
    assert l2_normalize(sll2[:19], DLT_LINUX_SLL2) is None
    meta = struct.pack("!HHIHBB8s", 0x0003, 0, 3, 1, 0, 6, bytes(8))
    assert l2_normalize(meta + IP6, DLT_LINUX_SLL2) is None


def test_l2_normalize_linux_sll_vlan_tag_becomes_8021q_frame():
    # libpcap re-inserts the tag: protocol 0x8100, payload TCI + inner ethertype
    sll = struct.pack("!HHH8sH", 0, 1, 6, bytes(8), 0x8100)
    payload = b"\x00\x05\x08\x00" + IP4
    assert l2_normalize(sll + payload, DLT_LINUX_SLL) == bytes(12) + b"\x81\x00" + payload


@pytest.mark.parametrize("linktype", [DLT_RAW, 12, 14, LINKTYPE_IPV4, LINKTYPE_IPV6])
def test_l2_normalize_raw_ip_ethertype_from_version_nibble(linktype):
    assert l2_normalize(IP4, linktype) == bytes(12) + b"\x08\x00" + IP4
    assert l2_normalize(IP6, linktype) == bytes(12) + b"\x86\xdd" + IP6
    assert l2_normalize(b"\x50" + bytes(19), linktype) is None
    assert l2_normalize(b"", linktype) is None


def test_l2_normalize_unsupported_linktype_is_none():
    assert l2_normalize(ETH_FRAME, 105) is None


def test_sll_capture_end_to_end(tmp_path):
    sll = struct.pack("!HHH8sH", 0, 1, 6, bytes.fromhex("0200000000010000"), 0x0800)
    p = write(tmp_path, "sll.pcap", pcap_bytes([(1, 0, 36, 36, sll + IP4)], linktype=DLT_LINUX_SLL))
    frames, _ = read_all(p)
    ts_ns, buf, orig_len, linktype = frames[0]
    assert l2_normalize(buf, linktype)[12:] == b"\x08\x00" + IP4


# --- open errors: one line, starting with the path ---


def assert_open_error(path, message: str) -> None:
    with pytest.raises(CaptureError) as e:
        open_capture(path)
    assert str(e.value) == message
    assert "\n" not in str(e.value)


def test_open_missing_file(tmp_path):
    assert_open_error(tmp_path / "nope.pcap", f"{tmp_path / 'nope.pcap'}: no such file")


def test_open_directory(tmp_path):
    assert_open_error(tmp_path, f"{tmp_path}: is a directory")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads any file")
def test_open_permission_denied(tmp_path):
    p = write(tmp_path, "secret.pcap", pcap_bytes([]))
    p.chmod(0)
    assert_open_error(p, f"{p}: permission denied")


def test_open_empty_file(tmp_path):
    assert_open_error(write(tmp_path, "empty.pcap", b""), f"{tmp_path / 'empty.pcap'}: empty file")


def test_open_gzip_of_empty_file(tmp_path):
    p = write(tmp_path, "empty.pcap", b"", gz=True)
    assert_open_error(p, f"{p}: empty file (after gzip decompression)")


def test_open_garbage(tmp_path):
    p = write(tmp_path, "capture.pcap", b"GARBAGE, not a capture")
    assert_open_error(p, f"{p}: not a pcap or pcapng file (magic 0x47415242)")


def _zip(data: bytes) -> bytes:
    import io
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("capture.pcap", data)
    return out.getvalue()


@pytest.mark.parametrize(
    ("pack", "what", "todo"),
    [
        # xz and bzip2 from the standard library; zstd (RFC 8878 magic 0xFD2FB528) and the LZ4 frame format (magic
        # 0x184D2204) are little-endian magic numbers at the start of a frame; a zip local file header starts "PK\3\4";
        # a snoop file (RFC 1761) with "snoop\0\0\0"
        (
            lambda d: __import__("lzma").compress(d),
            "xz-compressed",
            "decompress it first (xz -dc FILE | gro-replay -)",
        ),
        (lambda d: __import__("bz2").compress(d), "bzip2-compressed", "decompress it first (bzip2 -dc FILE"),
        (lambda d: b"\x28\xb5\x2f\xfd" + d, "zstd-compressed", "decompress it first (zstd -dc FILE"),
        (lambda d: b"\x04\x22\x4d\x18" + d, "lz4-compressed", "decompress it first (lz4 -dc FILE"),
        (_zip, "a zip archive", "extract the capture first (unzip -p ARCHIVE NAME | gro-replay -)"),
        (lambda d: b"snoop\0\0\0" + d, "a snoop capture", "convert it first (editcap -F pcap FILE out.pcap)"),
    ],
    ids=["xz", "bzip2", "zstd", "lz4", "zip", "snoop"],
)
def test_open_another_compression_or_format_says_what_it_is(tmp_path, pack, what, todo):
    p = write(tmp_path, "capture.pcap", pack(b"\xd4\xc3\xb2\xa1" + bytes(200)))
    with pytest.raises(CaptureError) as e:
        open_capture(p)
    msg = str(e.value)
    assert msg.startswith(f"{p}: {what}, not a pcap or pcapng file: {todo}")
    assert "\n" not in msg


def test_open_gzip_inside_gzip_says_so(tmp_path):
    """A capture gzipped twice (RFC 1952 magic 1f 8b after the first decompression): one gzip is read, so the data
    inside is named, not "not a pcap or pcapng file (magic 0x1f8b0808)" (newcomer's finding)."""
    import gzip

    p = write(tmp_path, "twice.pcap.gz", gzip.compress(gzip.compress(pcap_bytes([]))))
    assert_open_error(
        p,
        f"{p}: gzip-compressed more than once, not a pcap or pcapng file inside the gzip: decompress the outer "
        "gzip first (gzip -dc FILE | gro-replay -; again for each further one)",
    )


def test_open_two_byte_file(tmp_path):
    p = write(tmp_path, "tiny.pcap", b"\xd4\xc3")
    assert_open_error(p, f"{p}: not a pcap or pcapng file (only 2 bytes)")


@pytest.mark.parametrize("gz", [False, True])
def test_open_pcap_file_header_cut_at_10_bytes(tmp_path, gz):
    p = write(tmp_path, "short.pcap", pcap_bytes([])[:10], gz)
    assert_open_error(p, f"{p}: pcap file header cut short (10 of 24 bytes)")


def test_open_pcapng_section_header_cut(tmp_path):
    p = write(tmp_path, "short.pcapng", dpkt_pcapng(1)[:20])
    assert_open_error(p, f"{p}: pcapng file header cut short")


def test_open_corrupt_gzip_header(tmp_path):
    p = write(tmp_path, "bad.pcap.gz", b"\x1f\x8b\x07\x00" + bytes(20))  # compression method 7
    with pytest.raises(CaptureError, match=r"bad\.pcap\.gz: corrupt gzip data"):
        open_capture(p)


def test_corrupt_gzip_deflate_data_raises_capture_error(tmp_path):
    data = bytearray(gzip.compress(pcap_bytes(THREE * 50), mtime=0))
    data[40:60] = b"\xff" * 20
    with pytest.raises(CaptureError, match="corrupt"):
        read_all(write(tmp_path, "bad.pcap.gz", bytes(data)))


def test_gzip_crc_mismatch_raises_capture_error(tmp_path):
    data = bytearray(gzip.compress(pcap_bytes(THREE), mtime=0))
    data[-8] ^= 0xFF  # CRC32 in the trailer
    with pytest.raises(CaptureError, match="corrupt gzip data"):
        read_all(write(tmp_path, "crc.pcap.gz", bytes(data)))


@pytest.mark.parametrize("kind", ["pcap", "pcapng"])
def test_no_exception_but_capture_error_escapes_on_damaged_input(tmp_path, kind):
    if kind == "pcap":
        good = pcap_bytes([(1, i, 60 + i, 60 + i, frame(i, 60 + i)) for i in range(4)])
    else:
        good = dpkt_pcapng(2) + idb(DLT_LINUX_SLL2, tsresol=9) + epb(1, TS_NS, frame(5, 61))
    rng = random.Random(1)
    variants = [good[:n] for n in range(len(good))]
    for _ in range(300):
        damaged = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        variants.append(bytes(damaged))
    p = tmp_path / "fuzz"
    for v in variants:
        for gz in (False, True):
            p.write_bytes(gzip.compress(v, mtime=0) if gz else v)
            try:
                read_all(p)
            except CaptureError as e:
                assert "\n" not in str(e) and str(e).startswith(str(p))


# --- public captures in ../shared/captures ---

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "captures"
SHARED_COUNTS = {
    "tcpdump/vxlan.pcap": 10,
    "tcpdump/vxlan_port_8472.pcap": 10,
    "tcpdump/geneve.pcap": 39,
    "ndpi/vxlan.pcap": 127,
    "tcpdump/gso-ipv4-vxlan-ipv4.pcap": 1,
    "tcpdump/gso-ipv4-geneve-ipv4.pcap": 1,
    "tcpdump/bigtcp-ipv4-vxlan-ipv4.pcap": 1,
}


def test_shared_captures_frame_counts():
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} absent")
    found = {p.relative_to(SHARED).as_posix(): p for p in sorted(SHARED.rglob("*.pcap"))}
    assert found, f"no *.pcap under {SHARED}"
    for rel, p in found.items():
        frames, cap = read_all(p)
        assert cap.truncated_records == 0, rel
        assert all(lt == DLT_EN10MB and len(buf) <= orig_len for _, buf, orig_len, lt in frames), rel
        assert [ts for ts, *_ in frames] == sorted(ts for ts, *_ in frames), rel
        if rel in SHARED_COUNTS:
            assert len(frames) == SHARED_COUNTS[rel], rel
    assert set(SHARED_COUNTS) <= set(found)


def test_shared_bigtcp_frame_is_80116_bytes():
    p = SHARED / "tcpdump" / "bigtcp-ipv4-vxlan-ipv4.pcap"
    if not p.is_file():
        pytest.skip(f"{p} absent")
    frames, _ = read_all(p)
    assert (len(frames[0][1]), frames[0][2]) == (80116, 80116)


# --- the format values the reader writes out instead of importing dpkt (a classic pcap is read without it) ---


def test_pcap_magics_and_header_layouts_are_dpkts():
    from gro_replay.capture import reader

    assert {
        magic: (cls.__hdr_fmt__[0], cls.__hdr_len__) for magic, cls in dpkt.pcap.MAGIC_TO_PKT_HDR.items()
    } == reader._PCAP_MAGICS
    assert reader._PCAP_NANO_MAGICS == {dpkt.pcap.TCPDUMP_MAGIC_NANO, dpkt.pcap.PMUDPCT_MAGIC_NANO}
    assert reader._PCAP_FILE_HDR["<"].format == dpkt.pcap.LEFileHdr.__hdr_fmt__
    assert reader._PCAP_FILE_HDR[">"].format == dpkt.pcap.FileHdr.__hdr_fmt__
    assert reader._PCAP_FILE_HDR["<"].size == dpkt.pcap.FileHdr.__hdr_len__ == 24
    assert dpkt.pcap.FileHdr.__hdr_fields__[-2:] == ["snaplen", "linktype"]
    assert reader._PCAP_REC["<"].format == dpkt.pcap.LEPktHdr.__hdr_fmt__
    assert reader._PCAP_REC[">"].format == dpkt.pcap.PktHdr.__hdr_fmt__
    for cls in (dpkt.pcap.PktModHdr, dpkt.pcap.LEPktModHdr):  # its first four fields are PktHdr's
        assert cls.__hdr_fields__[:4] == dpkt.pcap.PktHdr.__hdr_fields__


def test_pcapng_block_types_and_packet_block_layout_are_dpkts():
    from gro_replay.capture import pcapng

    ng = dpkt.pcapng
    assert (
        pcapng._PCAPNG_SHB,
        pcapng._PCAPNG_IDB,
        pcapng._PCAPNG_EPB,
        pcapng._PCAPNG_PB,
        pcapng._PCAPNG_SPB,
    ) == (
        ng.PCAPNG_BT_SHB,
        ng.PCAPNG_BT_IDB,
        ng.PCAPNG_BT_EPB,
        ng.PCAPNG_BT_PB,
        ng.PCAPNG_BT_SPB,
    )
    for order, cls in (("<", ng.PacketBlockLE), (">", ng.PacketBlock)):
        # the fields after type and length, the trailing length left out
        assert pcapng._NG_PB[order].format == cls.__hdr_fmt__[0] + cls.__hdr_fmt__[3:-1]


def test_dlt_names_are_dpkts_with_the_linktype_names():
    from gro_replay.capture.linktypes import DLT_NAMES

    assert DLT_NAMES[DLT_EN10MB] == "EN10MB"
    assert DLT_NAMES[105] == "IEEE802_11"
    assert (
        DLT_NAMES.get(DLT_RAW) == "RAW"
        and DLT_NAMES[LINKTYPE_IPV4] == "IPV4"
        and DLT_NAMES[LINKTYPE_IPV6] == "IPV6"
    )
    assert DLT_NAMES.get(0xFFFF) is None and 0xFFFF not in DLT_NAMES
    dlts = {v for k, v in vars(dpkt.pcap).items() if k.startswith("DLT_") and isinstance(v, int)}
    assert set(DLT_NAMES) == dlts | {DLT_RAW, LINKTYPE_IPV4, LINKTYPE_IPV6}


@pytest.mark.parametrize("first", [True, False], ids=["in-the-file-header", "after-a-record"])
def test_an_interface_block_dpkt_cannot_parse_is_a_corrupt_record(tmp_path, first):
    # dpkt parses interface description blocks; one of 12 bytes (no fields) makes it raise NeedData, an
    # UnpackError, which is a corrupt record: read while opening the file (pcapng.py _open_pcapng) and by the block
    # walker (pcapng_chunks.py), though stream.py's READ_ERRORS does not name dpkt's error (pcapng.py with_dpkt_errors)
    bad = struct.pack("<III", dpkt.pcapng.PCAPNG_BT_IDB, 12, 12)
    head = shb() + (b"" if first else idb(DLT_EN10MB) + epb(0, 0, frame(0)))
    p = write(tmp_path, "short-idb.pcapng", head + bad + idb(DLT_EN10MB) + epb(0, 1, frame(1)))
    with pytest.raises(CaptureError) as e:
        read_all(p)
    assert str(e.value) == f"{p}: corrupt record at offset {len(head)} (NeedData: got 12, 20 needed at least)"


@pytest.mark.parametrize("linktype", [DLT_RAW, 12, 14, LINKTYPE_IPV4, LINKTYPE_IPV6])
def test_a_raw_ip_record_of_no_byte_or_no_ip_version_is_malformed(tmp_path, linktype):
    """A raw IP record of no byte has no link header (``malformed:link_header``); one whose first byte is of IP
    version neither 4 nor 6 is a malformed IP header (``malformed:outer_ip``), not a link layer left unread
    (breaker61: ``unsupported_link_layer``); a whole IPv4 header beside them is read. Both replay paths."""
    from gro_replay.report.document import document
    from gro_replay.sim import ReplayConfig, replay_capture

    records = [
        (1, 0, 0, 0, b""),
        (1, 10, 31, 31, b"\x15" + bytes(30)),
        (1, 20, 1, 1, b"\x00"),
        (1, 30, 20, 20, IP4),
    ]
    path = write(tmp_path, "raw.pcap", pcap_bytes(records, linktype=linktype))
    docs = [document(replay_capture(path, ReplayConfig(fast_path=f)))["input"] for f in (True, False)]
    assert docs[0]["skipped"] == docs[1]["skipped"]
    assert docs[0]["skipped"] == {"malformed:link_header": 1, "malformed:outer_ip": 2}
    assert docs[0]["frames_replayed"] == 1
