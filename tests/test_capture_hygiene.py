"""Capture hygiene notes (issue 10 item 6): outer checksums that do not verify, and frames above ``--mtu``.

An outer UDP checksum that does not verify (RFC 768/1071) is what a capture taken on the sending host before TX
checksum offload holds (the stack leaves the pseudo-header sum for the NIC: ``udp_set_csum``/``CHECKSUM_PARTIAL``,
net/ipv4/udp.c); a receiving NIC would not have marked such a frame verified. The report counts them once and names
``--rx-csum none``. Frames above ``--mtu`` are split by ``--resegment auto`` (resegment.py); the report says how
many, the largest outer IP packet, why, and what to pass for a jumbo underlay.
"""

from __future__ import annotations

import json

import pytest

from gro_replay.cli import main
from gro_replay.synth import Scenario, write_scenario


def _input(runner, *args) -> dict:
    r = runner.invoke(main, [*map(str, args), "--format", "json", "-q"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)["input"]


def test_bad_outer_checksums_get_one_note_with_count_and_advice(runner, tmp_path):
    # synth --outer-csum bad writes a wrong outer UDP checksum into every frame (synth.py), computed a right one
    bad, good = tmp_path / "bad.pcap", tmp_path / "good.pcap"
    write_scenario(bad, Scenario(frames=20, outer_csum="bad"))
    write_scenario(good, Scenario(frames=20, outer_csum="computed"))
    for poll in ("gap:3", "budget"):  # the batch path (checksum columns) and the same count on every path
        inp = _input(runner, bad, "--poll", poll)
        assert inp["outer_udp_csum_bad"] == 20
        (note,) = [n for n in inp["notes"] if "checksum" in n]
        assert note.startswith("20 tunnel frames carry an outer UDP checksum that does not verify")
        assert "--rx-csum none" in note
        assert _input(runner, good, "--poll", poll)["outer_udp_csum_bad"] == 0
    r = runner.invoke(main, [str(bad), "-q", "--no-hist"])
    assert "note: 20 tunnel frames carry an outer UDP checksum that does not verify" in r.stdout


def test_bad_outer_checksum_counted_the_same_on_the_frame_by_frame_path(runner, tmp_path):
    bad = tmp_path / "bad.pcap"
    write_scenario(bad, Scenario(frames=20, outer_csum="bad"))
    # --trace takes the frame-by-frame path (every skb observed)
    r = runner.invoke(main, [str(bad), "--format", "json", "-q", "--trace", str(tmp_path / "t.txt")])
    assert json.loads(r.stdout)["input"]["outer_udp_csum_bad"] == 20


def test_frames_above_the_mtu_say_what_was_split_and_why(runner, tmp_path):
    # 9000-byte outer IP packets (a jumbo underlay): with the default --mtu 1500 each is split, and the note names
    # the largest packet and --mtu 9000; with --mtu 9000 nothing is split and there is no note
    jumbo = tmp_path / "jumbo.pcap"
    write_scenario(jumbo, Scenario(frames=10, mtu=9000))
    inp = _input(runner, jumbo)
    assert inp["resegmented_frames"] == 10
    (note,) = [n for n in inp["notes"] if "--mtu" in n]
    assert note.startswith(
        "10 frames larger than --mtu 1500 (the largest outer IP packet 9,000 bytes) were split"
    )
    assert "pass --mtu 9000 or --resegment off" in note
    inp = _input(runner, jumbo, "--mtu", "9000")
    assert inp["resegmented_frames"] == 0 and not [n for n in inp["notes"] if "--mtu" in n]


def test_gso_capture_from_the_sending_host(runner, shared_captures):
    # tcpdump gso-ipv4-vxlan-ipv4.pcap: one TX-side GSO super-frame (outer IP 7092 bytes), outer checksum non-zero
    # but not final (captures/README.md): the sender's partial sum (CHECKSUM_PARTIAL: udp_set_csum leaves the
    # pseudo-header sum for TX offload, net/ipv4/udp.c), not a bad checksum — each of the 5 segments gets a computed
    # one (resegment.py, as __skb_udp_tunnel_segment / TX offload would), so none is counted as not verifying and
    # --rx-csum none drops nothing (the product's rule: every sentence the tool prints is true)
    cap = shared_captures / "tcpdump" / "gso-ipv4-vxlan-ipv4.pcap"
    for rx in ("unnecessary", "none"):
        r = runner.invoke(main, [str(cap), "--rx-csum", rx, "--format", "json", "-q"])
        doc = json.loads(r.stdout)
        inp = doc["input"]
        assert inp["outer_udp_csum_bad"] == 0
        assert not [n for n in inp["notes"] if "does not verify" in n]
        (note,) = [n for n in inp["notes"] if "--mtu" in n]
        assert note.startswith(
            "1 frame larger than --mtu 1500 (the largest outer IP packet 7,092 bytes) was split into 5 wire segments"
        )
        assert (
            "5 wire segments, taken for TSO/GSO or GRO super-frames of the capturing host; it carries the sender's partial outer UDP checksum (CHECKSUM_PARTIAL"
            in note
        )  # the frame, not one segment
        assert "Lost on the way" not in doc["verdict"]["text"]
        assert [k["lost_frames"] for k in doc["verdict"]["kernels"]] == [0, 0]


def test_bad_checksum_note_names_each_option_once(runner, tmp_path):
    # with --rx-csum none the note says what that state does (udp_rcv drops them), not "--rx-csum none replays them
    # ..., --rx-csum none has the kernels check ..."; 20 frames with a wrong outer UDP checksum (synth --outer-csum bad)
    bad = tmp_path / "bad.pcap"
    write_scenario(bad, Scenario(frames=20, outer_csum="bad"))
    (note,) = [n for n in _input(runner, bad, "--rx-csum", "none")["notes"] if "does not verify" in n]
    assert note.count("--rx-csum") == 1
    assert note.endswith(
        "--rx-csum none has the kernels check them in software and drop them (udp_rcv, UdpInCsumErrors)"
    )
    (note,) = [n for n in _input(runner, bad)["notes"] if "does not verify" in n]
    assert "--rx-csum unnecessary replays them as that checksum state says; --rx-csum none has" in note


@pytest.mark.parametrize("nic", ["ice", "mlx5", "virtio-net", "bnxt"])
def test_bad_checksum_note_with_a_nic_preset_says_the_frames_are_dropped(runner, tmp_path, nic):
    """With a --nic preset the driver hands a frame whose outer UDP checksum is wrong as CHECKSUM_NONE (its hardware
    checked it) or COMPLETE with the sum (mlx5): udp_rcv verifies it in software and drops it either way
    (net/ipv4/udp.c, UdpInCsumErrors). The note says so, as the verdict's losses count them (newcomer's finding: it
    read 'replays them as that checksum state says')."""
    bad = tmp_path / "bad.pcap"
    write_scenario(bad, Scenario(frames=20, outer_csum="bad"))
    r = runner.invoke(main, [str(bad), "--nic", nic, "--format", "json", "-q"])
    doc = json.loads(r.stdout)
    (note,) = [n for n in doc["input"]["notes"] if "does not verify" in n]
    # virtio-net has no tunnel port offload (nic.NicPreset.tunnel_port_offload): none to call off
    port = "no tunnel port offload" if nic == "virtio-net" else "tunnel port off"
    assert f"--nic {nic} ({port}) hands them up as that driver does, so the kernels check them in " in note
    assert all(k["lost_frames"] == 20 for k in doc["verdict"]["kernels"])


def test_the_jumbo_advice_names_the_inner_checksums(runner, shared_captures):
    # a TX-side GSO super-frame replayed whole (--mtu 7092) has the sender's partial inner TCP checksum too: with
    # CHECKSUM_UNNECESSARY level 0 tcp4_gro_receive checks it in software and finds it wrong; level 1 (a NIC that
    # verified the inner checksum) merges: the advice says which (newcomer's finding)
    cap = shared_captures / "tcpdump" / "gso-ipv4-vxlan-ipv4.pcap"
    (note,) = [n for n in _input(runner, cap)["notes"] if "--mtu" in n]
    assert (
        "pass --mtu 7092 or --resegment off (with --rx-csum unnecessary-tunnel when their inner TCP" in note
    )
    r = runner.invoke(
        main, [str(cap), "--mtu", "7092", "--rx-csum", "unnecessary-tunnel", "--format", "json", "-q"]
    )
    phys = json.loads(r.stdout)["kernels"][1]["stages"]["phys"]
    assert phys["end_reasons"] == {"tcp_gro_receive:psh_or_fin": 1}
