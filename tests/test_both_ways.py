"""Tunnel traffic both ways between two outer hosts (sim/notes.py ``both_ways``, ``both_ways_text``; JSON
``input.tunnel_both_ways``).

``tcpdump -i eth0`` on an overlay node holds the VXLAN frames the node sent as well as those it received; an
Ethernet capture says no direction (a Linux cooked one does: its sent frames are skipped as ``outgoing``). Such a
capture used to be replayed as received by one NIC with nothing said (the overlay-node mix, 48 connections with
data one way and ACKs the other, is one). A host's NIC receives the frames to it: those from it left through
TSO/GSO and never met its GRO. So no host's NIC sees both ways, and the report now says which pairs of hosts the
tunnel traffic runs both ways between and how to replay one way. The expected values come from the captures'
construction (the outer addresses each connection's frames carry).
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import batch_and_reference

from gro_replay.cli import main
from gro_replay.sim import ReplayConfig
from gro_replay.sim.notes import both_ways


def test_each_pair_once_the_busier_destination_first():
    from gro_replay.packet.decode import Decoder

    d = Decoder((4789,), ())
    ways = {  # (src, dst): frames replayed
        ("10.0.0.1", "10.0.0.2"): 900,  # to .2
        ("10.0.0.2", "10.0.0.1"): 100,  # to .1
        ("10.0.0.3", "10.0.0.1"): 50,  # one way only: no pair
        ("10.0.0.9", "10.0.0.4"): 10,
        ("10.0.0.4", "10.0.0.9"): 10,  # a tie: text order
    }
    for i, (pair, frames) in enumerate(ways.items(), 1):
        d.outer_pairs[pair] = i
        d.pair_frames.append(frames)
    assert both_ways(d) == [
        {"hosts": ["10.0.0.2", "10.0.0.1"], "frames": [900, 100]},
        {"hosts": ["10.0.0.4", "10.0.0.9"], "frames": [10, 10]},
    ]


def _mix(tmp_path) -> str:
    """The overlay-node mix (synth --mix overlay-node): 48 connections between outer 10.0.0.1 and 10.0.0.2, data
    to 10.0.0.2 and ACKs back to 10.0.0.1; 4,000 frames hold flows both ways."""
    path = str(tmp_path / "mix.pcap")
    r = CliRunner().invoke(main, ["synth", "--mix", "overlay-node", "--frames", "4000", path])
    assert r.exit_code == 0, r.output
    return path


def _doc(*args: str) -> dict:
    r = CliRunner().invoke(main, [*args, "--format", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_a_capture_of_both_ways_is_named_with_how_to_replay_one(tmp_path):
    path = _mix(tmp_path)
    doc = _doc(path)
    (pair,) = doc["input"]["tunnel_both_ways"]
    # the frames each way, counted from the capture by their outer destination address
    to = _frames_to(path)
    assert to["10.0.0.2"] > to["10.0.0.1"] and sum(to.values()) == 4000
    assert pair == {"hosts": ["10.0.0.2", "10.0.0.1"], "frames": [to["10.0.0.2"], to["10.0.0.1"]]}
    # a count of frames: the same when flows are retired and seen again (newcomer28: flow ids were counted)
    assert _doc(path, "--flow-timeout", "off")["input"]["tunnel_both_ways"] == [pair]
    (note,) = [n for n in doc["input"]["notes"] if "both ways" in n]
    assert note.startswith(
        f"tunnel traffic runs both ways between outer 10.0.0.2 and 10.0.0.1 ({to['10.0.0.2']:,} frames to "
        f"10.0.0.2, {to['10.0.0.1']:,} to 10.0.0.1)"
    )
    assert note.endswith(
        "-f 'dst host 10.0.0.2' replays what 10.0.0.2 received (the bpf extra: pip install 'gro-replay[bpf]'; JSON "
        "input.tunnel_both_ways)"
    )
    batch, ref, _ = batch_and_reference(path, ReplayConfig())
    assert batch == ref
    text = CliRunner().invoke(main, [path])
    assert f"note: {note}" in text.stdout


def _frames_to(path: str) -> dict[str, int]:
    """Frames by outer IPv4 destination address, read with dpkt."""
    import socket
    from collections import Counter

    import dpkt

    with open(path, "rb") as f:
        return dict(
            Counter(
                socket.inet_ntoa(dpkt.ethernet.Ethernet(buf).data.dst) for _ts, buf in dpkt.pcap.Reader(f)
            )
        )


def test_one_way_says_nothing(tmp_path):
    path = _mix(tmp_path)
    doc = _doc(path, "-f", "dst host 10.0.0.2")
    assert doc["input"]["tunnel_both_ways"] == []
    assert not [n for n in doc["input"]["notes"] if "both ways" in n]
    assert doc["input"]["frames_replayed"] > 0


def test_flow_replays_every_frame_all_the_same(tmp_path):
    """--flow reports the flows it names, and replays every frame (they share polls and GRO lists): the pair is
    named as without it (newcomer28: a selector that kept both ways gave no note)."""
    path = _mix(tmp_path)
    want = _doc(path)["input"]["tunnel_both_ways"]
    assert want and _doc(path, "--flow", "10.0.0.2")["input"]["tunnel_both_ways"] == want


def test_a_linux_cooked_capture_says_which_frames_the_host_received(tmp_path):
    """The same frames as a Linux cooked capture whose packet types all say received (0, PACKET_HOST): the host
    received both ways (a gateway between the two), which the note would deny; a cooked capture's sent frames are
    skipped as outgoing already. No pair, no note."""
    import struct

    import dpkt

    from gro_replay.capture.linktypes import DLT_LINUX_SLL
    from gro_replay.capture.writer import PcapWriter

    src = _mix(tmp_path)
    path = tmp_path / "sll.pcap"
    with open(src, "rb") as f, PcapWriter(str(path), linktype=DLT_LINUX_SLL) as w:
        for ts, buf in dpkt.pcap.Reader(f):
            w.write(
                int(ts * 1_000_000_000),
                struct.pack(">HHH8sH", 0, 1, 6, buf[6:12] + bytes(2), 0x0800) + buf[14:],
            )
    doc = _doc(str(path))
    assert doc["input"]["frames_replayed"] == 4000
    assert doc["input"]["tunnel_both_ways"] == []
    assert not [n for n in doc["input"]["notes"] if "both ways" in n]


@pytest.mark.parametrize("tags", [10, (100, 200)])
def test_the_advice_reaches_past_an_outer_vlan_tag(tmp_path, tags):
    """Frames tagged on the underlay, once or twice (QinQ): libpcap reads their IP header only after as many ``vlan``,
    so the advice nests one alternative per tag (breaker28b, breaker28c: 'dst host A' filtered every tagged frame
    out, and one ``vlan`` every double-tagged one); followed, it replays the 11 frames to 10.0.0.2, the 10 tagged
    and the untagged one."""
    from gro_replay.capture.writer import PcapWriter
    from gro_replay.packet.build import FrameSpec, build_frame

    frames = []
    for i in range(10):
        frames.append(build_frame(FrameSpec(seq=1000 + i * 1398, outer_vlan=tags)))
        frames.append(
            build_frame(
                FrameSpec(
                    seq=5000 + i * 1398,
                    outer_vlan=tags,
                    outer_src="10.0.0.2",
                    outer_dst="10.0.0.1",
                    sport=5201,
                    dport=40000,
                )
            )
        )
    frames.append(build_frame(FrameSpec(seq=1)))
    path = str(tmp_path / "tagged.pcap")
    with PcapWriter(path) as w:
        for i, f in enumerate(frames):
            w.write(1_700_000_000_000_000_000 + i * 1000, f)
    (note,) = [n for n in _doc(path)["input"]["notes"] if "both ways" in n]
    advice = (
        "dst host 10.0.0.2 or (vlan and dst host 10.0.0.2)"
        if tags == 10
        else "dst host 10.0.0.2 or (vlan and (dst host 10.0.0.2 or (vlan and dst host 10.0.0.2)))"
    )
    assert f"-f '{advice}' replays what 10.0.0.2 received" in note
    assert _doc(path, "-f", advice)["input"]["frames_replayed"] == 11
