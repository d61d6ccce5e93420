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

from click.testing import CliRunner
from conftest import batch_and_reference

from gro_replay.cli import main
from gro_replay.sim import ReplayConfig
from gro_replay.sim.notes import both_ways


def test_each_pair_once_the_busier_destination_first():
    flows = {
        ("10.0.0.1", "10.0.0.2"): 3,  # 3 flows to .2
        ("10.0.0.2", "10.0.0.1"): 5,  # 5 to .1
        ("10.0.0.3", "10.0.0.1"): 2,  # one way only: no pair
        ("10.0.0.9", "10.0.0.4"): 1,
        ("10.0.0.4", "10.0.0.9"): 1,  # a tie: text order
    }
    assert both_ways(flows) == [
        {"hosts": ["10.0.0.1", "10.0.0.2"], "flows": [5, 3]},
        {"hosts": ["10.0.0.4", "10.0.0.9"], "flows": [1, 1]},
    ]
    assert both_ways({("a", "b"): 4}) == []


def _mix(tmp_path) -> str:
    """The overlay-node mix (synth --mix overlay-node): 48 connections between outer 10.0.0.1 and 10.0.0.2, data
    from the client side and ACKs back; 4,000 frames hold flows both ways."""
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
    assert pair["hosts"] == ["10.0.0.1", "10.0.0.2"]
    assert pair["flows"] == [48, 48]
    (note,) = [n for n in doc["input"]["notes"] if "both ways" in n]
    assert note.startswith(
        "tunnel traffic runs both ways between outer 10.0.0.1 and 10.0.0.2 (48 flows to 10.0.0.1, 48 to 10.0.0.2)"
    )
    assert note.endswith(
        "-f 'dst host 10.0.0.1' replays what 10.0.0.1 received (JSON input.tunnel_both_ways)"
    )
    batch, ref, _ = batch_and_reference(path, ReplayConfig())
    assert batch == ref
    text = CliRunner().invoke(main, [path])
    assert f"note: {note}" in text.stdout


def test_one_way_says_nothing(tmp_path):
    path = _mix(tmp_path)
    doc = _doc(path, "-f", "dst host 10.0.0.1")
    assert doc["input"]["tunnel_both_ways"] == []
    assert not [n for n in doc["input"]["notes"] if "both ways" in n]
    assert doc["input"]["frames_replayed"] > 0


def test_flows_chosen_with_flow_are_the_users_choice(tmp_path):
    doc = _doc(_mix(tmp_path), "--flow", "10.0.0.2")
    assert doc["input"]["tunnel_both_ways"] == []
    assert not [n for n in doc["input"]["notes"] if "both ways" in n]
