"""Frames longer than a 1500-byte MTU's full-sized frame under a ``--nic`` preset's skb layout (sim/size_notes.py
``long_frames_text``; a reviewer's item: with jumbo frames the report did not say that a preset's layout is its
driver's for a full-sized frame of a 1500-byte MTU).

Rules the expected values come from: ``ETH_FRAME_LEN`` is 1514 (include/uapi/linux/if_ether.h: the bytes of a
frame of a 1500-byte MTU without FCS); a VLAN tag is not part of it (the driver puts the tag in ``vlan_tci``,
``__vlan_hwaccel_put_tag``). The build here: ``build_frame`` of an IPv4 VXLAN frame with TCP timestamps is 116
bytes of headers plus the payload (14 + 20 + 8 + 8 + 14 + 20 + 32), so a payload of 1398 makes 1514 bytes, 1399
makes 1515. veth's AF_PACKET layout (no --nic, ``--nic veth``) is modelled for every length (kernel/nic_skb.py): no
note there.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from conftest import batch_and_reference

from gro_replay.capture.writer import PcapWriter
from gro_replay.cli import main
from gro_replay.packet.build import ACK, FrameSpec, build_frame
from gro_replay.sim import ReplayConfig

HEADERS = 116  # outer eth + IPv4 + UDP + VXLAN + inner eth + IPv4 + TCP with timestamps (bytes)


def _capture(path) -> str:
    """Frames of one inner flow, 1 µs apart: 2 of 1514 bytes, 1 of 1514 bytes plus an 802.1Q tag (1518 on the
    wire), 3 of 1515 and 2 of 9014 — 5 longer than ETH_FRAME_LEN without their tags."""
    spec = FrameSpec(seq=1_000_000, flags=ACK)
    t = 1_700_000_000_000_000_000
    with PcapWriter(str(path)) as w:
        for wire, vlan in [(1514, None)] * 2 + [(1514, 100)] + [(1515, None)] * 3 + [(9014, None)] * 2:
            spec = replace(spec, payload=wire - HEADERS, outer_vlan=vlan)
            frame = build_frame(spec)
            assert len(frame) == wire + (4 if vlan else 0)
            w.write(t, frame)
            spec = replace(spec, seq=spec.seq + spec.payload, ip_id=spec.ip_id + 1)
            t += 1000
    return str(path)


def _json(runner, *args) -> dict:
    r = runner.invoke(main, [*args, "--format", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_frames_over_eth_frame_len_are_counted_alike_on_both_engines(tmp_path):
    """The count is a fact of the input: the batch engine (untagged common frames, by captured length) and the
    reference path (each decoded frame, its tag aside) give the same document, with 5."""
    path = _capture(tmp_path / "long.pcap")
    batch, ref, _counts = batch_and_reference(path, ReplayConfig(resegment="off"))
    assert batch == ref
    assert json.loads(batch)["input"]["frames_over_eth_frame_len"] == 5


@pytest.mark.parametrize("nic", ["ice", "mlx5", "bnxt"])
def test_a_driver_preset_says_its_layout_is_a_1500_mtu_frame(runner, tmp_path, nic):
    """A driver's layout (head_frag around one RX buffer) with frames longer than 1514 bytes: one note, the count
    and the preset named, also in the text report."""
    path = _capture(tmp_path / "long.pcap")
    doc = _json(runner, path, "--nic", nic, "--resegment", "off")
    notes = [n for n in doc["input"]["notes"] if "ETH_FRAME_LEN" in n]
    assert len(notes) == 1
    assert notes[0].startswith("5 frames replayed are longer than 1,514 bytes (ETH_FRAME_LEN")
    assert (
        f"--nic {nic} lays out their skbs as that driver does a full-sized frame of a 1500-byte MTU"
        in notes[0]
    )
    assert "MAX_SKB_FRAGS (17)" in notes[0]
    r = runner.invoke(main, [path, "--nic", nic, "--resegment", "off"])
    assert r.exit_code == 0 and f"note: {notes[0]}" in r.stdout


def test_a_captured_trailer_is_no_part_of_the_length(tmp_path):
    """A frame captured with 4 bytes after its IP packet (an FCS, padding) is as long as its headers say: 1514 + 4
    bytes is not longer than ETH_FRAME_LEN, 1515 + 4 is (breaker's finding: trailers counted), on both engines."""
    spec = FrameSpec(seq=1_000_000, flags=ACK)
    path = tmp_path / "trailer.pcap"
    with PcapWriter(str(path)) as w:
        for i, wire in enumerate([1514, 1514, 1515]):
            spec = replace(spec, payload=wire - HEADERS, seq=spec.seq + spec.payload, ip_id=spec.ip_id + 1)
            w.write(1_700_000_000_000_000_000 + 1000 * i, build_frame(spec) + b"\xde\xad\xbe\xef")
    batch, ref, _counts = batch_and_reference(str(path), ReplayConfig(resegment="off"))
    assert batch == ref
    assert json.loads(batch)["input"]["frames_over_eth_frame_len"] == 1


@pytest.mark.parametrize("args", [[], ["--nic", "veth"]])
def test_veth_af_packet_layout_needs_no_note(runner, tmp_path, args):
    """veth's skbs from AF_PACKET are modelled at every length (paged from 4,080 bytes): the count, no note."""
    doc = _json(runner, _capture(tmp_path / "long.pcap"), *args, "--resegment", "off")
    assert doc["input"]["frames_over_eth_frame_len"] == 5
    assert not [n for n in doc["input"]["notes"] if "ETH_FRAME_LEN" in n]


def test_frames_split_to_wire_size_are_not_long(runner, tmp_path):
    """Resegmented at --mtu 1500 (the default), every frame whose outer IP packet is above 1500 bytes is split to
    segments of at most 1514 bytes: the 1515-byte frames (1501) and the 9014-byte ones (9000), 5 super-frames. None
    replayed is longer than ETH_FRAME_LEN, and the ice preset needs no note."""
    doc = _json(runner, _capture(tmp_path / "long.pcap"), "--nic", "ice")
    assert doc["input"]["resegmented_frames"] == 5
    assert doc["input"]["frames_over_eth_frame_len"] == 0
    assert not [n for n in doc["input"]["notes"] if "ETH_FRAME_LEN" in n]
