"""Why a kernel without 89e5c58fc1e2 refuses no tunnelled frame for a zero checksum: the sentence names the RX
checksum state the frames had (gate_words.zero_csum_states_text, counted flow by flow in _Tally.zero_states), not only
the --nic / --rx-csum option (it said "with --nic mlx5 (tunnel port off) and these outer UDP checksums,
udp_gro_receive refuses no tunnelled frame for a zero checksum." and stopped).

Kernel rules: udp_gro_receive before 89e5c58fc1e2 (net/ipv4/udp_offload.c) refuses tunnel GRO when the skb is not
CHECKSUM_PARTIAL and NAPI_GRO_CB's csum_cnt and csum_valid are both 0. dev_gro_receive sets csum_valid 1 for
CHECKSUM_COMPLETE and csum_cnt = csum_level + 1 for CHECKSUM_UNNECESSARY; udp4_gro_receive's
skb_gro_checksum_validate_zero_check consumes one level for the outer UDP header (gro-spec §4.7 rows 3, 5, 7, 9).
The drivers' states (gro-spec §7, kernel/nic.py): mlx5e_handle_csum and gve hand up CHECKSUM_COMPLETE; ice/i40e
(a tunnel packet type when the port is programmed), ixgbe (X550 VXLAN parser) and vmxnet3 with the tunnel port
on give CHECKSUM_UNNECESSARY level 1. The sample's 17 frames are one VXLAN flow with outer UDP checksum 0.
"""

from __future__ import annotations

import json

import pytest
from conftest import FIX_SAMPLE

from gro_replay.cli import main

GATE = (
    "and before the fix udp_gro_receive refuses only frames not CHECKSUM_PARTIAL whose csum_cnt and csum_valid are "
    "both 0"
)
COMPLETE = "CHECKSUM_COMPLETE (GRO starts them with csum_valid 1, the NIC's sum of the packet)"
LEVEL1 = "CHECKSUM_UNNECESSARY level 1 (csum_cnt starts at 2 and the outer UDP header consumes 1, leaving csum_cnt 1)"

#: options → (how the sentence names them, the state the 17 frames had)
PASSED = {
    ("--nic", "mlx5"): ("--nic mlx5 (tunnel port off)", COMPLETE),
    ("--nic", "mlx5", "--nic-tunnel-port", "on"): ("--nic mlx5 (tunnel port on)", COMPLETE),
    ("--nic", "gve"): ("--nic gve (no tunnel port offload)", COMPLETE),
    ("--nic", "ice", "--nic-tunnel-port", "on"): ("--nic ice (tunnel port on)", LEVEL1),
    ("--nic", "i40e", "--nic-tunnel-port", "on"): ("--nic i40e (tunnel port on)", LEVEL1),
    ("--nic", "ixgbe", "--nic-tunnel-port", "on"): ("--nic ixgbe (tunnel port on)", LEVEL1),
    ("--nic", "vmxnet3", "--nic-tunnel-port", "on"): ("--nic vmxnet3 (tunnel port on)", LEVEL1),
    ("--rx-csum", "complete"): ("--rx-csum complete", COMPLETE),
    ("--rx-csum", "unnecessary-tunnel"): ("--rx-csum unnecessary-tunnel", LEVEL1),
    ("--rx-csum", "partial"): ("--rx-csum partial", "CHECKSUM_PARTIAL"),
    ("--nic", "ice", "--rx-csum", "complete"): ("--rx-csum complete (--nic ice)", COMPLETE),
}

#: options under which the sample's frames are refused before the fix (gro-spec §4.7 rows 1 and 3: CHECKSUM_NONE or
#: CHECKSUM_UNNECESSARY level 0 with a zero outer checksum): the sentence does not appear
REFUSED = [
    ("--nic", "ice"),
    ("--nic", "i40e"),
    ("--nic", "ixgbe"),
    ("--nic", "bnxt"),
    ("--nic", "bnxt", "--nic-tunnel-port", "on"),
    ("--nic", "virtio-net"),
    ("--nic", "vmxnet3"),
    ("--nic", "ena"),
    ("--rx-csum", "none"),
    ("--rx-csum", "unnecessary"),
]


def _text(runner, args: list[str]) -> tuple[str, dict]:
    r = runner.invoke(main, [str(FIX_SAMPLE), *args, "-q"])
    assert r.exit_code == 0, r.output
    j = runner.invoke(main, [str(FIX_SAMPLE), *args, "--format", "json", "-q"])
    return r.stdout, json.loads(j.stdout)


@pytest.mark.parametrize("opts", list(PASSED), ids=[" ".join(o) for o in PASSED])
def test_compare_mode_names_the_state_the_gate_passed(runner, opts):
    words, state = PASSED[opts]
    out, doc = _text(runner, list(opts))
    said = (
        f"No flow loses phys-device aggregation before the fix: with {words} and these outer UDP checksums, "
        "udp_gro_receive refuses no tunnelled frame for a zero checksum: the 17 tunnelled frames with a zero outer "
        f"UDP checksum were marked {state}, {GATE}."
    )
    assert said in out, out
    assert said in doc["verdict"]["text"]  # the same computation feeds the JSON
    assert "affected_flows=0" in out


@pytest.mark.parametrize("opts", list(PASSED), ids=[" ".join(o) for o in PASSED])
def test_one_kernel_without_the_fix_names_the_state_too(runner, opts):
    words, state = PASSED[opts]
    out, _doc = _text(runner, ["--kernel", "5.10", *opts])
    said = (
        "5.10 (v5.10) lacks 89e5c58fc1e2 (linux-5.10.y carries it since 5.10.24, as 09af4362ba47), but is not "
        f"affected here: with {words} and these outer UDP checksums, udp_gro_receive never refuses a tunnelled "
        f"frame for a zero checksum: the 17 tunnelled frames with a zero outer UDP checksum were marked {state}, "
        f"{GATE}."
    )
    assert said in out, out


@pytest.mark.parametrize("opts", REFUSED, ids=[" ".join(o) for o in REFUSED])
def test_where_the_gate_refuses_the_frames_the_sentence_is_not_said(runner, opts):
    out, _doc = _text(runner, list(opts))
    assert "refuses no tunnelled frame" not in out and "affected_flows=1" in out, out


def test_no_zero_checksum_says_so(runner):
    """vxlan-4flows-computed-csum.pcap: every outer UDP checksum is computed, so the state does not matter."""
    cap = FIX_SAMPLE.parent / "vxlan-4flows-computed-csum.pcap"
    r = runner.invoke(main, [str(cap), "-q"])
    assert r.exit_code == 0, r.output
    assert (
        "udp_gro_receive refuses no tunnelled frame for a zero checksum: none of the tunnelled frames has a zero "
        "outer UDP checksum."
    ) in r.stdout


def test_frames_of_two_states_are_counted_apart():
    from collections import Counter

    from gro_replay.report.verdict.gate_words import zero_csum_states_text

    assert zero_csum_states_text(Counter({"unnecessary-tunnel": 3, "complete": 10})) == (
        "the 13 tunnelled frames with a zero outer UDP checksum were marked CHECKSUM_COMPLETE (10 frames; GRO starts "
        "them with csum_valid 1, the NIC's sum of the packet) and CHECKSUM_UNNECESSARY level 1 (3 frames; csum_cnt "
        f"starts at 2 and the outer UDP header consumes 1, leaving csum_cnt 1), {GATE}"
    )


def test_frames_of_a_state_the_gate_refuses_that_never_reached_it_say_so(runner, tmp_path):
    """17 frames of one VXLAN flow with outer UDP checksum 0 and 4 bytes of options in their outer IPv4 header (IHL
    6): inet_gro_receive ends them (not_0x45: ``iph->version != 4 || iph->ihl != 5``, net/ipv4/af_inet.c) before
    udp_gro_receive, so their CHECKSUM_UNNECESSARY level 0 — which the gate refuses — is never tested. The sentence
    said they were marked level 0 and that the gate refuses only csum_cnt 0 and csum_valid 0, contradicting itself
    (breaker's finding)."""
    import struct

    from gro_replay.capture.writer import PcapWriter
    from gro_replay.packet.build import ACK, FrameSpec, build_frame
    from gro_replay.packet.csum import ip_fast_csum

    path = tmp_path / "outer-ip-options.pcap"
    with PcapWriter(path) as w:
        for i in range(17):
            buf = build_frame(FrameSpec(seq=1000 + 1000 * i, payload=1000, flags=ACK, outer_csum="zero"))
            ip = bytearray(buf[14:34]) + b"\x01\x01\x01\x00"  # three NOPs and an end of options
            ip[0] = 0x46
            struct.pack_into("!H", ip, 2, struct.unpack_from("!H", ip, 2)[0] + 4)
            struct.pack_into("!H", ip, 10, 0)
            struct.pack_into("!H", ip, 10, ip_fast_csum(bytes(ip), 0, 6))
            assert ip_fast_csum(bytes(ip), 0, 6) == 0  # a valid header checksum: only the options differ
            w.write(1_000_000_000 + 1000 * i, buf[:14] + bytes(ip) + buf[34:])
    for args in ([], ["--kernel", "5.10"]):
        r = runner.invoke(main, [str(path), *args, "-q"])
        assert r.exit_code == 0, r.output
        assert "[inet_gro_receive:not_0x45] ×17" in r.stdout, r.stdout
        assert (
            "the 17 tunnelled frames with a zero outer UDP checksum were marked CHECKSUM_UNNECESSARY level 0 (a state "
            "the gate refuses, but GRO ended them before udp_gro_receive, at the header their phys skbs' end reasons "
            f"name), {GATE}." in r.stdout.replace("\n", " ")
        ), r.stdout
