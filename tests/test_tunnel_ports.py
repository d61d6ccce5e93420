"""Tunnels on ports without a tunnel socket (issue 10 item 2).

A kernel decapsulates VXLAN/Geneve only on the UDP ports of its tunnel sockets (net/ipv4/udp.c ``udp_rcv`` →
``udp_queue_rcv_skb`` → the socket's ``encap_rcv``; ``udp_gro_receive`` looks the socket up by destination port):
traffic to any other port is plain UDP, replayed as ``not_tunnel``. The report counts, per port, the frames whose
UDP payload parses as VXLAN (RFC 7348: the I flag, optionally the GBP extension's G flag and policy bits, reserved
bits zero, an inner Ethernet frame with a sane L3 header) or Geneve (RFC 8926: version 0, options that fit, protocol
0x6558), names the option that decodes them,
and ``--vxlan-port auto`` / ``--geneve-port auto`` / ``--detect-tunnels`` give the kernels a socket there.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace

import pytest
from conftest import CLI, cli_env, without_engine

from gro_replay import pollcache
from gro_replay.capture.writer import PcapWriter
from gro_replay.cli import main
from gro_replay.packet.build import FrameSpec, build_flow, build_frame
from gro_replay.packet.decode import sniff_tunnel
from gro_replay.packet.vxlan import VXLAN_HF_VNI, gbp_flags
from gro_replay.report.document import document
from gro_replay.sim import PollModel, ReplayConfig, replay_capture
from gro_replay.synth import Scenario, synth_frames, write_scenario

N = 20  # frames of the synth flow (default scenario: 1398-byte segments, outer checksum 0, 1 µs apart)
VXLAN_OUTER = 14 + 20 + 8 + 8  # Ethernet + IPv4 + UDP + VXLAN before the inner Ethernet frame


def _write(tmp_path, name, **kw):
    path = tmp_path / name
    write_scenario(path, Scenario(frames=N, **kw))
    return path


def _json(runner, *args) -> dict:
    r = runner.invoke(main, [*map(str, args), "--format", "json", "-q"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _stages(doc) -> list:
    """Per kernel: every stage counter and the stack outcomes (device names aside: a detected port's tunnel
    device is ``vxlan0-PORT`` when vxlan0 already serves 4789)."""
    return [
        (
            k["name"],
            {s: {x: v for x, v in st.items() if x != "devices"} for s, st in k["stages"].items()},
            k["stack"],
        )
        for k in doc["kernels"]
    ]


def test_vxlan_on_port_4790_is_counted_and_the_option_named(runner, tmp_path):
    path = _write(tmp_path, "p4790.pcap", port=4790)
    doc = _json(runner, path)
    inp = doc["input"]
    assert inp["classes"] == {"not_tunnel": N}  # no socket on 4790: plain UDP, as in the kernel
    assert inp["tunnel_ports_not_configured"] == {"vxlan": {"4790": N}}
    assert inp["tunnel_ports_detected"] == {}
    (note,) = [n for n in inp["notes"] if "4790" in n]
    assert f"{N} frames to UDP port 4790 parse as VXLAN" in note and "--vxlan-port 4790" in note
    r = runner.invoke(main, [str(path), "-q", "--no-hist"])
    # one Geneve port: "UDP port 6081", singular
    assert (
        f"none of the {N} frames replayed is VXLAN (UDP ports 4789, 8472) or Geneve (UDP port 6081), so the fix "
        "has nothing to change here"
    ) in " ".join(r.stdout.split())
    # the same words for a file and a pipe (their documents are equal): auto reads a pipe too, through a copy
    # (capture/spool.py; tests/test_pipe_spool.py)
    assert (
        "pass --vxlan-port 4790 to decode them (or --vxlan-port auto, which finds such ports in a first read of "
        "the capture)" in " ".join(r.stdout.split())
    )
    piped = subprocess.run(
        [*CLI, "-", "--format", "json", "-q"],
        input=path.read_bytes(),
        capture_output=True,
        env=cli_env(),
        timeout=120,
    )
    assert piped.returncode == 0, piped.stderr.decode()
    assert [n for n in json.loads(piped.stdout)["input"]["notes"] if "4790" in n] == [note]
    assert "(or --vxlan-port auto, which finds such ports in a first read of the capture)" in note
    r = runner.invoke(main, [str(path), "-q", "--format", "markdown"])
    assert "pass --vxlan-port 4790" in r.stdout


@pytest.mark.parametrize("option", [["--vxlan-port", "4790"], ["--vxlan-port", "auto"], ["--detect-tunnels"]])
def test_with_the_port_the_flow_is_affected_as_on_4789(runner, tmp_path, option):
    # Pre-fix the gate refuses all 20 frames (outer checksum 0, CHECKSUM_UNNECESSARY level 0: 20 phys skbs);
    # post-fix one phys aggregate (one burst of 1 µs gaps): 19 traversals saved — the same numbers as on 4789.
    on_4789 = _json(runner, _write(tmp_path, "p4789.pcap"))
    doc = _json(runner, _write(tmp_path, "p4790.pcap", port=4790), *option)
    assert doc["input"]["classes"] == {"tunnel_tcp": N}
    assert doc["input"]["tunnel_ports_not_configured"] == {}
    (flow,) = doc["comparison"]["affected_flows"]
    (ref,) = on_4789["comparison"]["affected_flows"]
    assert flow["stack_traversals_saved"] == ref["stack_traversals_saved"] == N - 1
    assert (flow["phys_skbs_pre"], flow["phys_skbs_post"]) == (N, 1)
    assert _stages(doc) == _stages(on_4789)
    if "4790" not in option:
        assert doc["input"]["tunnel_ports_detected"] == {"vxlan": {"4790": N}}
        assert 4790 in doc["config"]["vxlan_ports"] and doc["config"]["detect_tunnels"][0] == "vxlan"
        # the note names both options that find ports (it named --vxlan-port auto after --detect-tunnels)
        assert (
            f"VXLAN found on UDP port 4790 ({N} frames) by a first read of the capture (--vxlan-port auto or "
            "--detect-tunnels); decoded there"
        ) in doc["input"]["notes"]


def test_geneve_on_an_unconfigured_port(runner, tmp_path):
    path = _write(tmp_path, "g.pcap", encap="geneve", port=6082, geneve_opt_bytes=8)
    doc = _json(runner, path)
    assert doc["input"]["tunnel_ports_not_configured"] == {"geneve": {"6082": N}}
    assert any("--geneve-port 6082" in n for n in doc["input"]["notes"])
    auto = _json(runner, path, "--geneve-port", "auto")
    ref = _json(runner, path, "--geneve-port", "6082")
    assert auto["input"]["tunnel_ports_detected"] == {"geneve": {"6082": N}}
    assert _stages(auto) == _stages(ref) and auto["input"]["classes"] == {"tunnel_tcp": N}


def test_capture_without_tunnel_traffic_says_so(runner, tmp_path):
    # the inner Ethernet frames of the synth flow, sent as they are: plain TCP, no UDP at all
    path = tmp_path / "plain.pcap"
    with PcapWriter(path) as w:
        for ts, f in synth_frames(Scenario(frames=N)):
            w.write(ts, f[VXLAN_OUTER:])
    doc = _json(runner, path)
    assert doc["input"]["notes"] == [
        "no VXLAN or Geneve traffic: no frame goes to a configured tunnel port (VXLAN 4789, 8472; Geneve 6081) and none "
        "parses as VXLAN or Geneve on another UDP port"
    ]
    # a capture with tunnel traffic has no such note
    assert not _json(runner, _write(tmp_path, "v.pcap"))["input"]["notes"]


def test_sniffing_needs_the_header_rules_and_a_plausible_inner_frame():
    frame = next(synth_frames(Scenario(frames=1)))[1]
    t, end = 14 + 20 + 8, len(frame)
    assert sniff_tunnel(frame, t, end) == "vxlan"
    bad_flags = frame[:t] + b"\x0c" + frame[t + 1 :]  # a reserved flag bit set
    assert sniff_tunnel(bad_flags, t, end) is None
    bad_reserved = frame[: t + 7] + b"\x01" + frame[t + 8 :]  # the reserved byte after the VNI
    assert sniff_tunnel(bad_reserved, t, end) is None
    e = t + 8 + 12  # inner ethertype
    assert sniff_tunnel(frame[:e] + b"\x88\xcc" + frame[e + 2 :], t, end) is None  # LLDP: not an IP/ARP frame
    ip = t + 8 + 14
    assert sniff_tunnel(frame[:ip] + b"\x65" + frame[ip + 1 :], t, end) is None  # inner "IPv4" of version 6
    assert sniff_tunnel(frame, t, t + 8 + 14 + 10) is None  # inner IPv4 header cut by the datagram's end
    assert sniff_tunnel(b"\x00" * 64, 0, 64) is None  # zeros (e.g. padding, NTP-like payloads)


def test_auto_on_an_empty_pipe_is_the_readers_one_line_error(runner):
    # a pipe is copied for auto (capture/spool.py) and the copy read through it: an empty one is refused as the
    # reader refuses any empty input (CliRunner's input is no file)
    r = runner.invoke(main, ["-", "--vxlan-port", "auto"], input=b"")
    assert r.exit_code == 2
    assert r.stderr == "Error: standard input: empty input\n"


@pytest.mark.parametrize("poll", ["gap:3", "budget"])
def test_batch_path_equals_reference_with_unconfigured_and_detected_ports(tmp_path, monkeypatch, poll):
    # tunnel traffic on 4789 and on 4790 interleaved in blocks: the 4790 frames are decoded one by one (their
    # layout is not the batch path's common one) and counted; with auto they are decoded as VXLAN everywhere
    path = tmp_path / "mix.pcap"
    a = list(synth_frames(Scenario(frames=300, flows=2, interleave=7)))
    b = list(synth_frames(Scenario(frames=300, flows=2, interleave=7, port=4790)))
    with PcapWriter(path) as w:
        for (ta, fa), (_tb, fb) in zip(a, b, strict=True):
            w.write(ta, fa)
            w.write(ta + 1, fb)
    monkeypatch.setattr(pollcache, "BLOCK", 9000)
    for detect in ((), ("vxlan",)):
        cfg = ReplayConfig(poll=PollModel.parse(poll), detect_tunnels=detect)
        got = replay_capture(str(path), cfg)
        assert got.batch is not None
        want = replay_capture(str(path), replace(cfg, fast_path=False))
        assert json.dumps(without_engine(document(got)), sort_keys=True) == json.dumps(
            without_engine(document(want)), sort_keys=True
        )
        counted = got.input.tunnel_ports_not_configured
        assert counted == ({} if detect else {"vxlan": {4790: 600}})


# --- what sniffing accepts: the header shapes the kernel's receive functions accept (issue: GBP frames missed) ---

GBP_PORT = 4790


def _vx(flags: int, *, dport: int = GBP_PORT, **kw) -> bytes:
    return build_frame(FrameSpec(udp_dport=dport, vxlan_flags=flags, **kw))


def _sniff(frame: bytes) -> str | None:
    return sniff_tunnel(frame, 14 + 20 + 8, len(frame))


@pytest.mark.parametrize(
    "flags",
    [
        VXLAN_HF_VNI,  # RFC 7348: I only, what every vxlan device accepts
        gbp_flags(
            0x1234
        ),  # I + G + policy ID: vxlan_parse_gbp_hdr consumes G and the policy ID (--vxlan-gbp)
        gbp_flags(0xFFFF, dont_learn=True, policy_applied=True),  # + D and A: VXLAN_GBP_USED_BITS
    ],
)
def test_sniff_takes_every_vxlan_header_a_modelled_device_accepts(flags):
    assert _sniff(_vx(flags)) == "vxlan"


@pytest.mark.parametrize(
    "flags, why",
    [
        (0x80000000 | 0x1234, "G and a policy but no I flag: vxlan_rcv drops it (VNI flag always required)"),
        (VXLAN_HF_VNI | 1 << 26, "GPE's next-protocol bit (VXLAN_HF_NP): not parsed without gpe, dropped"),
        (VXLAN_HF_VNI | 1 << 24, "GPE's OAM bit (VXLAN_HF_OAM): not parsed, dropped"),
        (VXLAN_HF_VNI | 1 << 28, "a GPE version bit (VXLAN_HF_VER): not parsed, dropped"),
    ],
)
def test_sniff_rejects_vxlan_headers_no_modelled_device_accepts(flags, why):
    assert _sniff(_vx(flags)) is None, why


def test_sniff_rejects_the_reserved_byte_after_the_vni():
    # vxlan_rcv: unparsed.vx_vni &= ~VXLAN_VNI_MASK leaves the low byte, and any bit left there drops the frame
    frame = bytearray(_vx(gbp_flags(7)))
    frame[14 + 20 + 8 + 7] = 1
    assert _sniff(bytes(frame)) is None


def _gbp_capture(tmp_path, n=N):
    path = tmp_path / "gbp.pcap"
    spec = FrameSpec(udp_dport=GBP_PORT, vxlan_flags=gbp_flags(0x0101, policy_applied=True))
    with PcapWriter(path) as w:
        for k, f in enumerate(build_flow(spec, [1398] * n)):
            w.write(1_000_000_000 + k * 1000, f)  # 1 µs apart: one poll under gap:3
    return path


def test_auto_detects_a_gbp_port_and_decodes_it_as_the_named_port(runner, tmp_path):
    path = _gbp_capture(tmp_path)
    doc = _json(runner, path)
    assert doc["input"]["tunnel_ports_not_configured"] == {"vxlan": {str(GBP_PORT): N}}
    auto = _json(runner, path, "--vxlan-port", "auto", "--vxlan-gbp")
    named = _json(runner, path, "--vxlan-port", str(GBP_PORT), "--vxlan-gbp")
    assert auto["input"]["tunnel_ports_detected"] == {"vxlan": {str(GBP_PORT): N}}
    assert auto["input"]["classes"] == {"tunnel_tcp": N}
    assert _stages(auto) == _stages(named)
    # one flow, one poll, one policy: one phys aggregate post-fix, N pre-fix (outer checksum 0, level 0 gate)
    assert [k["stages"]["phys"]["skbs_delivered"] for k in auto["kernels"]] == [N, 1]


def test_gbp_frames_without_vxlan_gbp_are_lost_and_the_knob_named(runner, tmp_path):
    # a device without gbp: vxlan_rcv leaves G and the policy bits unparsed and drops the frame
    # (drivers/net/vxlan/vxlan_core.c: "If there are any unprocessed flags remaining treat this as a malformed packet")
    r = runner.invoke(main, [str(_gbp_capture(tmp_path)), "--vxlan-port", "auto", "-q", "--no-hist"])
    assert r.exit_code == 0, r.output
    # vxlan_rcv drops skbs: the 20 frames are 20 skbs pre-fix (the level-0 gate refuses each) and 1 aggregate
    # post-fix, which its error counters count once
    assert (
        "vxlan_rcv drops them: reserved VXLAN bits set; the stack drops, and counts, skbs: pre-fix 20, post-fix 1; "
        "knob: --vxlan-gbp"
    ) in " ".join(r.stdout.split())


def _geneve(**kw) -> bytearray:
    return bytearray(build_frame(FrameSpec(encap="geneve", udp_dport=6082, **kw)))


G0 = 14 + 20 + 8  # the Geneve header


def test_sniff_takes_geneve_with_reserved_bits_and_flags_set():
    # geneve_udp_encap_recv checks the version and (without collect_md) the protocol type only: reserved bits
    # and the O/C flags do not drop the frame
    f = _geneve(geneve_options=bytes(8))
    f[G0 + 1] |= 0x3F  # Rsvd1
    f[G0 + 7] = 0xFF  # Rsvd2
    assert _sniff(bytes(f)) == "geneve"
    assert _sniff(bytes(_geneve(geneve_oam=True, geneve_critical=True))) == "geneve"


def test_sniff_rejects_geneve_the_kernel_drops_or_cannot_parse():
    f = _geneve(geneve_options=bytes(8))
    v1 = bytearray(f)
    v1[G0] |= 0x40  # version 1: geneve_udp_encap_recv drops (ver != GENEVE_VER)
    assert _sniff(bytes(v1)) is None
    ip = bytearray(f)
    ip[G0 + 2 : G0 + 4] = b"\x08\x00"  # protocol IPv4: not ETH_P_TEB (inner_proto_inherit is not modelled)
    assert _sniff(bytes(ip)) is None
    short = bytearray(f)
    short[G0] = (
        short[G0] & 0xC0
    ) | 1  # opt_len 1 (4 bytes) where 8 bytes follow: the inner frame is misplaced
    assert _sniff(bytes(short)) is None
    long = bytearray(f)
    long[G0] |= 0x3F  # opt_len 63: 252 bytes of options, beyond this datagram's inner frame
    assert _sniff(bytes(long)) is None


def _written(path, frames):
    """``path`` with ``frames`` written 100 ns apart."""
    with PcapWriter(str(path)) as w:
        for i, f in enumerate(frames):
            w.write(1000 + 100 * i, f)
    return path


def _refusal(runner, path, *options) -> str:
    """The last line of a replay of ``path`` with ``options`` that must exit 2."""
    r = runner.invoke(main, [str(path), "-q", *options])
    assert r.exit_code == 2, r.output
    return r.output.strip().splitlines()[-1]


@pytest.mark.parametrize(
    "options", [("--detect-tunnels",), ("--vxlan-port", "auto", "--geneve-port", "auto")]
)
def test_a_port_carrying_both_kinds_is_the_users_to_name(runner, tmp_path, options):
    """UDP port 7000 carries 2 VXLAN frames and 3 Geneve frames: a receiver binds a port to one tunnel kind (one
    socket, vxlan_sock_add or geneve_sock_add), so detecting both is a one-line error naming the port and both
    options (exit 2; breaker's finding: an internal error, exit 70). Detecting one kind takes the port as it."""
    frames = build_flow(FrameSpec(udp_dport=7000, sport=1), [1398, 1398])
    frames += build_flow(FrameSpec(udp_dport=7000, encap="geneve", sport=2, udp_sport=5000), [1398] * 3)
    path = _written(tmp_path / "both.pcap", frames)
    assert _refusal(runner, path, *options) == (
        f"Error: {path}: --vxlan-port/--geneve-port auto: UDP port 7000 carries both VXLAN (2 frames) and "
        "Geneve (3 frames), and a receiver takes a port as one of them: give it as --vxlan-port 7000 or "
        "--geneve-port 7000 (a port given replaces the default ports, VXLAN 4789, 8472 and Geneve 6081: give those "
        "the capture uses too)"
    )
    doc = _json(runner, path, "--vxlan-port", "auto")
    assert doc["input"]["frames_replayed"] == 5
    assert doc["input"]["tunnel_ports_detected"] == {"vxlan": {"7000": 2}}


def test_every_port_carrying_both_kinds_is_named(runner, tmp_path):
    """Ports 7000 (1 VXLAN frame, 2 Geneve) and 7001 (3 VXLAN, 1 Geneve) both carry both kinds: the one error names
    each with its counts (it named the first alone, so a user learnt of the next one run after run); port 7002,
    VXLAN alone, is not named."""
    frames = build_flow(FrameSpec(udp_dport=7000, sport=1), [1398])
    frames += build_flow(FrameSpec(udp_dport=7000, encap="geneve", sport=2, udp_sport=5000), [1398] * 2)
    frames += build_flow(FrameSpec(udp_dport=7001, sport=3), [1398] * 3)
    frames += build_flow(FrameSpec(udp_dport=7001, encap="geneve", sport=4, udp_sport=5001), [1398])
    frames += build_flow(FrameSpec(udp_dport=7002, sport=5), [1398])
    path = _written(tmp_path / "both2.pcap", frames)
    assert _refusal(runner, path, "--detect-tunnels") == (
        f"Error: {path}: --vxlan-port/--geneve-port auto: UDP ports 7000 (VXLAN 1 frame, Geneve 2 frames) and 7001 "
        "(VXLAN 3 frames, Geneve 1 frame) each carry both VXLAN and Geneve, and a receiver takes a port as one of "
        "them: give each as --vxlan-port PORT or --geneve-port PORT (a port given replaces the default ports, VXLAN "
        "4789, 8472 and Geneve 6081: give those the capture uses too)"
    )
    # with VXLAN's ports given, only Geneve's defaults are said to go (breaker's finding: following the advice
    # dropped 4789 and 6081, and the next run found them carrying both kinds)
    assert _refusal(runner, path, "--vxlan-port", "4789", "--detect-tunnels").endswith(
        "(a port given replaces the default ports, Geneve 6081: give those the capture uses too)"
    )
