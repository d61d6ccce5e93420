"""Bytes captured past a frame's outer IP datagram (sim/skipped.py ``rx_fcs_strip``; sim/size_notes.py
``trailer_notes``).

A capture taken at a tap, a mirror port or on a host with ``ethtool -K DEV rx-fcs on`` holds each frame's Ethernet
FCS: 4 bytes past its IP datagram. They used to be replayed, so GRO merged none of those frames at the phys device
("IPv6 payload length differs from the bytes present" on every frame) while the receiving NIC, with rx-fcs off
(NETIF_F_RXFCS clear, every driver's default), strips them before the stack sees the frame. Now a frame whose last 4
bytes are its FCS is replayed without them, and said so; other bytes past the datagram (a trailer) are replayed as
captured, counted by their length, and said so.

Rules the expected values come from: the FCS is the CRC-32 of the frame before it, least significant byte first
(IEEE 802.3 §3.2.9), so the CRC-32 of a frame with its FCS is the constant residue 0x2144DF1C; a sender pads a frame
to ETH_ZLEN, 60 bytes (include/uapi/linux/if_ether.h), and padding is no trailer; GRO flushes a frame whose IP
length differs from its bytes (inet_gro_receive: ``tot_len`` against ``skb_gro_len``; ipv6_gro_receive:
``payload_len``), so a frame with a trailer is delivered alone at the phys device; ``ip_rcv_core`` trims the bytes
after, so the tunnel device merges the decapsulated frames. The kernel-backend test measures that last pair on the
running kernel.
"""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import replace

import pytest
from click.testing import CliRunner
from conftest import batch_and_reference, needs_kernel_backend

from gro_replay.capture.writer import PcapWriter
from gro_replay.cli import main
from gro_replay.packet.build import ACK, FrameSpec, build_frame
from gro_replay.packet.headers import data_end, ends_with_fcs
from gro_replay.sim import ReplayConfig

#: the CRC-32 of any frame followed by its FCS (IEEE 802.3: the receiver's check value, 0xDEBB20E3 before the
#: final inversion)
CRC32_RESIDUE = 0x2144DF1C
T0 = 1_700_000_000_000_000_000


def fcs(frame: bytes) -> bytes:
    """The frame's FCS as it is sent: the CRC-32 of its bytes, least significant byte first."""
    return struct.pack("<I", zlib.crc32(frame))


def segments(n: int = 8, outer_ipv6: bool = False) -> list[bytes]:
    """``n`` in-order full-sized segments (1514 bytes) of one tunnelled TCP flow over VXLAN: outer IPv4 with a
    UDP checksum of 0, or outer IPv6 with a computed one (RFC 8200 requires it; 20 bytes less TCP payload)."""
    payload = 1378 if outer_ipv6 else 1398
    spec = FrameSpec(
        seq=1_000_000,
        flags=ACK,
        payload=payload,
        outer_ipv6=outer_ipv6,
        outer_csum="computed" if outer_ipv6 else "zero",
    )
    out = []
    for i in range(n):
        out.append(build_frame(replace(spec, seq=spec.seq + i * payload, ip_id=spec.ip_id + i)))
    return out


def write(path, frames: list[bytes]) -> str:
    with PcapWriter(str(path)) as w:
        for i, f in enumerate(frames):
            w.write(T0 + 1000 * i, f)
    return str(path)


def doc_of(path: str, *args: str) -> dict:
    r = CliRunner().invoke(main, [path, *args, "--format", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def counts(doc: dict) -> list[tuple[int, int]]:
    """(phys skbs, tunnel skbs) of each kernel of a document, summed over its flows."""
    return [
        (sum(f["phys"]["skbs"] for f in k["flows"]), sum(f["tunnel"]["skbs"] for f in k["flows"]))
        for k in doc["kernels"]
    ]


def test_the_fcs_check_is_ieee_802_3s():
    frame = segments(1)[0]
    whole = frame + fcs(frame)
    assert zlib.crc32(whole) == CRC32_RESIDUE  # the residue: the 4 bytes are an FCS by the standard's check
    assert ends_with_fcs(whole)
    assert not ends_with_fcs(frame + b"\xde\xad\xbe\xef")
    assert not ends_with_fcs(frame[:-4] + fcs(frame[:-4])[::-1])  # the wrong byte order is no FCS
    assert data_end(whole) == len(frame)


@pytest.mark.parametrize("outer_ipv6, expected", [(False, [(8, 1), (1, 1)]), (True, [(1, 1), (1, 1)])])
def test_a_captured_fcs_is_stripped_as_the_nic_does(tmp_path, outer_ipv6, expected):
    """8 segments of one flow, 1 µs apart (one poll): without FCS, GRO makes one skb of 8 at each device, except
    pre-fix at the phys device for outer IPv4's zero UDP checksum (8 skbs: udp_gro_receive before 89e5c58fc1e2);
    with their FCS kept every kernel would make 8 at the phys device. Stripped, the document is the plain
    capture's, on both engines, with the 8 frames counted and one note."""
    frames = segments(outer_ipv6=outer_ipv6)
    plain = doc_of(write(tmp_path / "plain.pcap", frames))
    path = write(tmp_path / "fcs.pcap", [f + fcs(f) for f in frames])
    got = doc_of(path)
    assert counts(plain) == counts(got) == expected
    assert got["input"]["frames_fcs_stripped"] == 8
    assert got["input"]["frames_past_datagram"] == {}
    notes = [n for n in got["input"]["notes"] if "FCS" in n]
    assert notes == [
        "8 frames of the capture ended with their Ethernet FCS (the last 4 bytes are the CRC-32 of the frame: "
        "captured at a tap, a mirror port or on a host with rx-fcs on): read without it, as a NIC with rx-fcs off "
        "(every driver's default) hands frames to the stack; on a host with rx-fcs on the stack gets it and GRO "
        "merges none of them (the IP length differs from the bytes present: inet_gro_receive, ipv6_gro_receive) "
        "(JSON input.frames_fcs_stripped, input.frames_fcs_cut)"
    ]
    assert plain["kernels"] == got["kernels"]
    batch, ref, _ = batch_and_reference(path, ReplayConfig())
    assert batch == ref


@pytest.mark.parametrize("trailer", [b"\xde\xad\xbe\xef", bytes(12)])
def test_a_trailer_is_replayed_and_flushes_each_frame(tmp_path, trailer):
    """The same 8 segments with a trailer that is no FCS: GRO flushes each at the phys device (8 skbs), and the
    tunnel device, after ip_rcv_core trimmed the trailers, merges them (1 skb); counted by the trailer's bytes."""
    path = write(tmp_path / "t.pcap", [f + trailer for f in segments()])
    got = doc_of(path)
    assert counts(got) == [(8, 1), (8, 1)]
    assert got["input"]["frames_fcs_stripped"] == 0
    assert got["input"]["frames_past_datagram"] == {str(len(trailer)): 8}
    (note,) = [n for n in got["input"]["notes"] if "past the outer IP datagram" in n]
    n = len(trailer)
    assert note == (
        "8 frames replayed carry bytes past the outer IP datagram and Ethernet padding that the capture does not "
        f"show to be an FCS ({n} bytes ×8): replayed as captured, so GRO merges none of them (the IP length differs "
        "from the bytes present: inet_gro_receive, ipv6_gro_receive) at the phys device, and ip_rcv_core trims them "
        "after; if the capture added them (a packet broker's timestamp or port trailer), the receiving NIC never "
        f"saw them: editcap -L -C -{n} IN OUT removes them (JSON input.frames_past_datagram)"
    )
    batch, ref, _ = batch_and_reference(path, ReplayConfig())
    assert batch == ref


def test_padding_is_no_trailer_and_an_fcs_after_it_is_stripped(tmp_path):
    """A pure ACK of a plain TCP flow is 54 bytes, padded to ETH_ZLEN (60): padding is no trailer. With its FCS
    after the padding (64 bytes, the shortest frame on the wire) the FCS is stripped and the 60 bytes replayed; a
    trailer after the padding counts its own bytes only; 54 bytes and an FCS (58) is no frame a wire carries (the
    shortest is 64): neither an FCS nor a trailer (its 4 bytes are within the padding's 60). An 802.1Q tag
    inserted after the padding makes 64 bytes of frame: no trailer either, and its FCS after them is one."""
    from gro_replay.packet.build import build_inner_frame

    ack = build_inner_frame(FrameSpec(flags=ACK, payload=0, timestamps=False))
    assert len(ack) == 54  # Ethernet 14, IPv4 20, TCP 20
    padded = ack + bytes(6)
    tagged = padded[:12] + b"\x81\x00\x00\x64" + padded[12:]  # VLAN 100 after the padding: 64 bytes
    early = (ack[:12] + b"\x81\x00\x00\x64" + ack[12:]) + bytes(
        2
    )  # tagged, then padded to 60 (a VLAN device)
    path = write(
        tmp_path / "acks.pcap",
        [padded, padded + fcs(padded), padded + b"\x01\x02", ack + fcs(ack), tagged, tagged + fcs(tagged)]
        + [early, early + fcs(early)],
    )
    got = doc_of(path)
    assert got["input"]["frames_fcs_stripped"] == 3
    assert got["input"]["frames_past_datagram"] == {"2": 1}
    assert got["input"]["frames_replayed"] == 8


def test_a_record_longer_than_its_wire_length_is_replayed_as_captured(tmp_path):
    """A record that holds more than its original length states (a writer's fault, replayed as captured) is no
    FCS case: the same on both engines (breaker28b: the frame reader took it for an FCS cut, the block reader for an
    FCS), its bytes past the datagram a trailer."""
    frames = segments(4)
    frames[2] += fcs(frames[2])
    path = tmp_path / "over.pcap"
    write(path, frames)
    # the writer refuses such a record: its original length (the record header's last field) is patched in
    data = bytearray(path.read_bytes())
    at = 24 + sum(16 + len(f) for f in frames[:2]) + 12
    struct.pack_into("<I", data, at, len(frames[2]) - 1)
    path.write_bytes(bytes(data))
    got = doc_of(str(path))
    assert got["input"]["caplen_over_orig_len"] == 1
    assert (got["input"]["frames_fcs_stripped"], got["input"]["frames_fcs_cut"]) == (0, 0)
    assert got["input"]["frames_past_datagram"] == {"4": 1}
    batch, ref, _ = batch_and_reference(str(path), ReplayConfig())
    assert batch == ref


@pytest.mark.parametrize("captured", [0, 2])
def test_an_fcs_the_snaplen_cut_is_no_cut_frame(tmp_path, captured):
    """``tcpdump -s 1514`` of a tap's 1518-byte frames: every byte before the FCS captured, the wire length 4 past
    them; and with 2 of the FCS's bytes captured. A NIC with rx-fcs off hands up those 1514 bytes: the frames are
    replayed whole (the plain capture's counts), not skipped as cut short, and counted."""
    frames = segments()
    path = tmp_path / "cut.pcap"
    with PcapWriter(str(path)) as w:
        for i, f in enumerate(frames):
            w.write(T0 + 1000 * i, (f + fcs(f))[: len(f) + captured], orig_len=len(f) + 4)
    got = doc_of(str(path))
    assert got["input"]["skipped"] == {}
    assert got["input"]["frames_fcs_cut"] == 8
    assert got["input"]["frames_fcs_stripped"] == 0
    assert counts(got) == counts(doc_of(write(tmp_path / "plain.pcap", frames))) == [(8, 1), (1, 1)]
    batch, ref, _ = batch_and_reference(str(path), ReplayConfig())
    assert batch == ref
    # 5 bytes past the data on the wire is no FCS alone: cut short
    with PcapWriter(str(path)) as w:
        for i, f in enumerate(frames):
            w.write(T0 + 1000 * i, f, orig_len=len(f) + 5)
    assert doc_of(str(path))["input"]["skipped"] == {"snaplen_cut": 8}


def test_a_trailer_of_a_frame_not_replayed_is_not_counted(tmp_path):
    """Frames the decoder refuses (an inner IPv4 header of version 5) are skipped: their trailers are no replayed
    frame's."""
    bad = []
    for f in segments(4):
        b = bytearray(f)
        b[14 + 20 + 8 + 8 + 14] = 0x55  # inner IPv4 header: version 5
        bad.append(bytes(b) + b"\xde\xad\xbe\xef")
    got = doc_of(write(tmp_path / "bad.pcap", bad + [f + b"\xde\xad\xbe\xef" for f in segments(2)]))
    assert got["input"]["frames_replayed"] == 2
    assert got["input"]["frames_past_datagram"] == {"4": 2}


def test_a_linux_cooked_frame_keeps_its_trailer(tmp_path):
    """A Linux cooked capture holds no Ethernet header for an FCS to cover: the bytes past the datagram are a
    trailer, whatever they are."""
    from gro_replay.capture.linktypes import DLT_LINUX_SLL

    frames = segments(2)
    sll = [struct.pack(">HHH8sH", 0, 1, 6, f[6:12] + bytes(2), 0x0800) + f[14:] + fcs(f) for f in frames]
    path = tmp_path / "sll.pcap"
    with PcapWriter(str(path), linktype=DLT_LINUX_SLL) as w:
        for i, f in enumerate(sll):
            w.write(T0 + 1000 * i, f)
    got = doc_of(str(path))
    assert got["input"]["frames_fcs_stripped"] == 0
    assert got["input"]["frames_past_datagram"] == {"4": 2}


@needs_kernel_backend
def test_the_running_kernel_flushes_a_trailer_and_merges_without_one(tmp_path):
    """Measured on the running kernel (6.18.44, the kernel backend: frames injected into a veth as captured):
    the 8 segments with a 4-byte trailer that is no FCS come up as 8 phys skbs and, decapsulated and trimmed, 1
    tunnel skb; with their FCS, which the replay strips as the NIC does, as 1 and 1, as without any."""
    runner = CliRunner()
    frames = segments()
    out = {}
    for name, tail in (("trailer", lambda f: b"\xde\xad\xbe\xef"), ("fcs", fcs), ("plain", lambda f: b"")):
        path = write(tmp_path / f"{name}.pcap", [f + tail(f) for f in frames])
        r = runner.invoke(main, ["kernel", path, "--format", "json"])
        assert r.exit_code == 0, r.output
        doc = json.loads(r.stdout)
        out[name] = counts(doc)
        if name == "fcs":
            assert doc["input"]["frames_fcs_stripped"] == 8
    assert out == {"trailer": [(8, 1)], "fcs": [(1, 1)], "plain": [(1, 1)]}


def _layouts(seed: int = 7) -> list[bytes]:
    """Frames of every layout the readers meet, each as it is, with its FCS, with a wrong one, with a trailer, and
    padded then with its FCS: outer IPv4/IPv6, untagged, 802.1Q, 802.1ad and QinQ-tagged (the vectorised reading
    covers one tag), a plain TCP frame, an ARP frame, an IPv4 header of version 6, a total length of 0 (BIG TCP),
    a length beyond the frame, and short frames."""
    import random

    from gro_replay.packet.build import build_inner_frame

    rng = random.Random(seed)
    base = []
    for v6 in (False, True):
        for vlan in (None, 100, (0x88A8, 5), ((0x88A8, 5), (0x8100, 7))):
            spec = FrameSpec(outer_ipv6=v6, payload=rng.choice([0, 1, 10, 100, 1378]))
            try:
                base.append(build_frame(replace(spec, outer_vlan=vlan)))  # type: ignore[arg-type]
            except (TypeError, ValueError):
                base.append(build_frame(spec))
    base.append(build_inner_frame(FrameSpec(payload=0, timestamps=False)))
    base.append(bytes(12) + b"\x08\x06" + bytes(28))  # ARP
    f = bytearray(segments(1)[0])
    f[14] = 0x65  # IPv4 EtherType, version 6
    base.append(bytes(f))
    f = bytearray(segments(1)[0])
    f[16:18] = b"\x00\x00"  # total length 0
    base.append(bytes(f))
    f = bytearray(segments(1)[0])
    f[16:18] = b"\xff\xff"  # longer than the frame
    base.append(bytes(f))
    out = []
    for b in base:
        padded = b + bytes(max(0, 60 - len(b)))
        out += [
            b,
            b + fcs(b),
            b + b"\x00\x01\x02\x03",
            padded + fcs(padded),
            b + fcs(b)[::-1],
            b[:40] + fcs(b[:40]),
        ]
    return out


@pytest.mark.parametrize("seed", [7, 8])
def test_the_block_readers_find_what_the_rules_find_record_by_record(seed):
    """capture/fcs.py ``strip_fcs`` (the block readers') reads the data's end as columns: on every layout, whole or
    cut short by 1 to 100 bytes, its answers are ``fcs_at_end``'s and ``fcs_cut_end``'s, record by record, and so
    are the lengths it leaves."""
    import numpy as np

    from gro_replay.capture.fcs import fcs_at_end, fcs_cut_end, strip_fcs

    cuts = [0, 1, 2, 4, 5, 100]  # bytes on the wire past those captured
    frames = [f for f in _layouts(seed) for _ in cuts]
    buf = bytearray()
    data = []
    for f in frames:
        data.append(len(buf) + 3)
        buf += bytes(3) + f  # not aligned
    data_a = np.array(data, np.int64)
    caplen = np.array([len(f) for f in frames], np.int64)
    origlen = caplen + cuts * (len(frames) // len(cuts))
    ol = origlen.tolist()
    whole = [i for i, f in enumerate(frames) if ol[i] == len(f) and fcs_at_end(f)]
    cut = {i: n for i, f in enumerate(frames) if ol[i] > len(f) and (n := fcs_cut_end(f, ol[i])) is not None}
    assert len(whole) >= 5 and len(cut) >= 5
    got = strip_fcs(buf, data_a, caplen, origlen)
    assert [g.tolist() for g in got] == [whole, sorted(cut)]
    want = [
        (cut[i], cut[i]) if i in cut else (len(f) - 4, len(f) - 4) if i in whole else (len(f), ol[i])
        for i, f in enumerate(frames)
    ]
    assert list(zip(caplen.tolist(), origlen.tolist(), strict=True)) == want
    ethernet = np.zeros(len(frames), bool)
    ethernet[1::2] = True
    c2, o2 = np.array([len(f) for f in frames], np.int64), np.array([len(f) for f in frames], np.int64)
    got = strip_fcs(buf, data_a, c2, o2, ethernet)
    assert got[0].tolist() == [i for i, f in enumerate(frames) if i % 2 and fcs_at_end(f)]


def _read_every_way(path: str, block: int) -> list[tuple]:
    """(records as (caplen, origlen, bytes), frames_fcs_stripped) by Capture iteration and by the block reader of
    the format, the block reader handing back the last third of each block (read again with the next)."""
    from gro_replay.capture.chunks import PcapChunks
    from gro_replay.capture.pcapng_chunks import PcapngChunks
    from gro_replay.capture.reader import open_capture

    out = []
    with open_capture(path) as cap:
        out.append(([(len(b), ol, b) for _ts, b, ol, _lt in cap], cap.fcs_stripped))
    with open_capture(path) as cap:
        r = PcapngChunks(cap, block) if cap.format == "pcapng" else PcapChunks(cap, block)
        recs: list = []
        keep = None
        while (ch := r.next(keep)) is not None:
            n = len(ch)
            take = n - n // 3 if not ch.eof and n > 2 else n
            for i in range(take):
                o, c = int(ch.data[i]), int(ch.caplen[i])
                recs.append((c, int(ch.origlen[i]), bytes(ch.buf[o : o + c])))
            keep = ch.record_start(take)
        out.append((recs, cap.fcs_stripped))
    return out


@pytest.mark.parametrize("block", [200, 3000, 1 << 20])
def test_every_reader_removes_each_fcs_once(tmp_path, block):
    """pcap and pcapng, record by record and in blocks of any size (records handed back and read again): the same
    records, each FCS removed, each counted once."""
    from gro_replay.capture.fcs import fcs_at_end
    from gro_replay.capture.writer import PcapngWriter

    frames = _layouts(3)
    want = [(len(f) - 4, len(f) - 4, f[:-4]) if fcs_at_end(f) else (len(f), len(f), f) for f in frames]
    stripped = sum(fcs_at_end(f) for f in frames)
    # by IEEE 802.3's check: 64 bytes or more, 4 past the datagram, and the CRC-32 of it all the residue
    ends = [data_end(f) for f in frames]
    by_residue = [
        len(f) >= 64 and e is not None and e + 4 <= len(f) and zlib.crc32(f) == CRC32_RESIDUE
        for f, e in zip(frames, ends, strict=True)
    ]
    assert stripped == sum(by_residue) > 10
    pcap = write(tmp_path / "a.pcap", frames)
    ng = tmp_path / "a.pcapng"
    with PcapngWriter(str(ng), [("eth0", "")]) as w:
        for i, f in enumerate(frames):
            w.write(T0 + i, f)
    for path in (pcap, str(ng)):
        for recs, n in _read_every_way(path, block):
            assert (recs, n) == (want, stripped)


@needs_kernel_backend
def test_the_kernel_backend_counts_the_trailers_of_the_frames_it_sent(tmp_path):
    """The kernel backend sends frames to the first outer destination only (outer_destination_differs): 4 frames to
    10.0.0.2 and 4 to 10.0.0.9, each with a 4-byte trailer: the 4 sent are counted."""
    frames = segments(4) + [
        build_frame(FrameSpec(payload=1398, seq=1_000_000 + i * 1398, outer_dst="10.0.0.9")) for i in range(4)
    ]
    r = CliRunner().invoke(
        main,
        [
            "kernel",
            write(tmp_path / "two.pcap", [f + b"\xde\xad\xbe\xef" for f in frames]),
            "--format",
            "json",
        ],
    )
    assert r.exit_code == 0, r.output
    inp = json.loads(r.stdout)["input"]
    assert inp["skipped"] == {"kernel_backend:outer_destination_differs": 4}
    assert inp["frames_past_datagram"] == {"4": 4}
