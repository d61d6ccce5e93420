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
from gro_replay.packet.headers import datagram_end, ends_with_fcs
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
    assert datagram_end(whole) == len(frame)


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
        "8 frames ended with their Ethernet FCS (the last 4 bytes are the CRC-32 of the frame: captured at a tap, a "
        "mirror port or on a host with rx-fcs on): replayed without it, as a NIC with rx-fcs off (every driver's "
        "default) hands frames to the stack; on a host with rx-fcs on the stack gets it and GRO merges none of them "
        "(the IP length differs from the bytes present: inet_gro_receive, ipv6_gro_receive) "
        "(JSON input.frames_fcs_stripped)"
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
    assert note.startswith(
        "8 frames replayed carry bytes past the outer IP datagram and Ethernet padding that are not their FCS by "
        f"its CRC-32 ({len(trailer)} bytes ×8; a Linux cooked frame holds no Ethernet header to check one): "
        "replayed as captured, so GRO merges none of them"
    )
    batch, ref, _ = batch_and_reference(path, ReplayConfig())
    assert batch == ref


def test_padding_is_no_trailer_and_an_fcs_after_it_is_stripped(tmp_path):
    """A pure ACK of a plain TCP flow is 54 bytes, padded to ETH_ZLEN (60): padding is no trailer. With its FCS
    after the padding (64 bytes, the shortest frame on the wire) the FCS is stripped and the 60 bytes replayed; a
    trailer after the padding counts its own bytes only."""
    from gro_replay.packet.build import build_inner_frame

    ack = build_inner_frame(FrameSpec(flags=ACK, payload=0, timestamps=False))
    assert len(ack) == 54  # Ethernet 14, IPv4 20, TCP 20
    padded = ack + bytes(6)
    path = write(
        tmp_path / "acks.pcap",
        [padded, padded + fcs(padded), padded + b"\x01\x02", ack + fcs(ack)],
    )
    got = doc_of(path)
    assert got["input"]["frames_fcs_stripped"] == 2
    assert got["input"]["frames_past_datagram"] == {"2": 1}


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
