"""The simulator against the running kernel (issue 4): ``validate`` must agree skb for skb.

Every case builds literal frames, writes them to a pcap, replays them through the kernel backend (veth + vxlan in
private namespaces, kernel-oracle.md) and through the simulator with the running kernel's profile, budget polls
and ``--rss none``, then compares the delivered ``skb->len`` sequences per device. The expected value of every
comparison is "identical": the kernel is the reference. Runs as root (CI does); skips only where a capability is
really absent (the reason from ``check_environment``).
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import replace

import pytest
from blake3 import blake3
from click.testing import CliRunner
from conftest import needs_kernel_backend

from gro_replay.capture.writer import PcapWriter
from gro_replay.cli import main
from gro_replay.oracle import (
    kernel_hz,
    kernel_release,
    kernel_vlan_offload,
    run_kernel,
)
from gro_replay.oracle.tracefs import trace_instances
from gro_replay.packet.build import ACK, FIN, PSH, FrameSpec, build_flow, build_frame, flow_specs
from gro_replay.sim import PollModel, ReplayConfig
from gro_replay.validate import ORACLE_RX_CSUM, compare, load_capture, profile_for_release

pytestmark = needs_kernel_backend

BASE = FrameSpec(timestamps=False, payload=1400, outer_csum="zero")  # inner IPv4/TCP, no options, 1400 B


def _netns() -> set[str]:
    import subprocess

    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def _ours() -> tuple[set[str], set[str]]:
    # names carry the creating process id (groreplay-<pid>-…): other processes' live runs are not ours
    mine = f"groreplay-{os.getpid()}-"
    return {n for n in _netns() if n.startswith(mine)}, {n for n in trace_instances() if n.startswith(mine)}


@pytest.fixture(scope="module", autouse=True)
def leaves_nothing_behind():
    """After every kernel run of this module, no namespace or tracefs instance of this process is left."""
    yield
    assert _ours() == (set(), set())


def _write(tmp_path, frames, name="c.pcap") -> str:
    path = tmp_path / name
    with PcapWriter(str(path)) as w:
        for i, f in enumerate(frames):
            w.write(1_614_373_368_000_000_000 + i * 1000, f)
    return str(path)


def _validate(path: str, rx_csum: str, defer: bool = False):
    """Library form of ``gro-replay validate``: (per-device agreements, oracle result)."""
    cfg = ReplayConfig(rx_csum=rx_csum, poll=PollModel("budget"), rss="none", vxlan_ports=(4789,))
    loaded = load_capture(path, cfg)
    mode, level = ORACLE_RX_CSUM[rx_csum]
    oracle = run_kernel([f[1] for f in loaded.frames], rx_csum=mode, csum_level=level, defer_to_tunnel=defer)
    sim_cfg = replace(
        cfg,
        kernels=(profile_for_release(kernel_release()),),
        hz=kernel_hz(),
        phys_xdp_generic=defer,
        vlan_offload=kernel_vlan_offload(),  # as gro-replay validate: the running kernel's CONFIG_VLAN_8021Q
    )
    return compare(loaded, oracle, sim_cfg), oracle


def _assert_agree(devices):
    for d in devices:
        assert d.agrees, (d.stage, d.first_divergence(), d.kernel[:20], d.sim[:20])


RX = ["none", "unnecessary", "unnecessary-tunnel"]


@pytest.mark.parametrize("outer_csum", ["zero", "computed"])
@pytest.mark.parametrize("rx", RX)
def test_validate_one_flow_1000_frames(tmp_path, rx, outer_csum):
    # kernel-oracle.md observed: (64490, 25290) × 15, then 56090 on the phys device; the tunnel the same − 50
    frames = build_flow(replace(BASE, outer_csum=outer_csum), [1400] * 1000)
    devices, oracle = _validate(_write(tmp_path, frames), rx)
    _assert_agree(devices)
    phys = devices[0].kernel
    assert phys == [64490, 25290] * 15 + [56090]
    assert devices[1].kernel == [x - 50 for x in phys]


@pytest.mark.parametrize("nflows", [2, 8])
def test_validate_interleaved_flows(tmp_path, nflows):
    """``nflows`` bulk flows and a flow of 60 pure ACKs (another connection of the same hosts, whose data flows the
    other way), one frame of each in turn: the kernel and the simulator agree skb for skb, and each ACK goes up
    alone at both devices (tcp_gro_receive merges no segment without payload, net/ipv4/tcp_offload.c: len 0 <
    mss 1 at out_check_final). Without timestamps a frame's outer L3 length is 90 bytes plus its payload."""
    flows = [
        build_flow(replace(BASE, sport=40000 + i, udp_sport=50000 + i, seq=1000 + 7919 * i), [1400] * 60)
        for i in range(nflows)
    ]
    flows.append(build_flow(replace(BASE, sport=39999, udp_sport=49999, seq=5000), [0] * 60))
    frames = [f for group in zip(*flows, strict=True) for f in group]
    for rx in ("none", "unnecessary"):
        devices, _ = _validate(_write(tmp_path, frames, f"f{rx}.pcap"), rx)
        _assert_agree(devices)
        assert devices[0].kernel.count(90) == 60 and devices[1].kernel.count(40) == 60


@pytest.mark.parametrize("rx", RX)
def test_validate_bad_inner_tcp_checksum(tmp_path, rx):
    specs = flow_specs(BASE, [1400] * 20)
    specs[10] = replace(specs[10], tcp_csum="bad")
    devices, _ = _validate(_write(tmp_path, [build_frame(s) for s in specs]), rx)
    _assert_agree(devices)
    if rx == "unnecessary-tunnel":
        # the NIC vouches for the inner checksum (level 1): everything merges (kernel-oracle.md)
        assert devices[0].kernel == [28090]
    else:
        # the bad frame goes up alone and first; frames 1–10 follow when frame 12 reaches TCP (seq gap)
        assert devices[0].kernel == [1490, 14090, 12690]


def test_validate_psh_and_short_segments(tmp_path):
    specs = flow_specs(BASE, [1400] * 10 + [700] + [1400] * 10 + [300] + [1400] * 5)
    specs[4] = replace(specs[4], flags=ACK | PSH)
    specs[-1] = replace(specs[-1], flags=ACK | PSH | FIN)
    path = _write(tmp_path, [build_frame(s) for s in specs])
    for rx in RX:
        devices, _ = _validate(path, rx)
        _assert_agree(devices)


def test_validate_wrong_outer_checksum(tmp_path):
    # kernel-oracle.md: a wrong non-zero outer UDP checksum at NONE is refused and dropped by UDP (128 × 1490,
    # nothing at the tunnel); at UNNECESSARY level 0 the NIC vouches for it and it merges
    frames = build_flow(replace(BASE, outer_csum="bad"), [1400] * 128)
    path = _write(tmp_path, frames)
    devices, _ = _validate(path, "none")
    _assert_agree(devices)
    assert devices[0].kernel == [1490] * 128 and devices[1].kernel == []
    devices, _ = _validate(path, "unnecessary")
    _assert_agree(devices)


@pytest.mark.parametrize(("mtu", "phys"), [(1102, [32102]), (9000, [4102] * 8)])
def test_validate_resegmented_super_frames_ip_ids(tmp_path, mtu, phys):
    """8 frames of 4000 payload bytes split into 1000-byte wire segments (resegment.py, as ``--resegment 1000``):
    super-frames of a Linux sender at MTU 1102 (synth: ids 0, 4, 8, …, ip_select_ident_segs / iptunnel_xmit) give
    segments with ids 0…31 and the kernel merges all 32 (the poll ends the skb); jumbo wire frames (--mtu 9000: ids
    0, 1, 2, …) split the same way overlap their neighbours' ids and the kernel ends an skb at every frame
    boundary (4 segments, 4102 bytes from the outer IP header), as the simulator's tcp_gro_receive ip_id rule
    says. Both run in one 64-frame poll (budget polls); every --rx-csum state agrees."""
    from gro_replay.resegment import Resegmenter
    from gro_replay.synth import Scenario, synth_frames

    split = Resegmenter(1500, 1000, (4789,), ())
    frames = [
        s for _, f in synth_frames(Scenario(frames=8, mss=4000, mtu=mtu)) for s in split.split(f) or [f]
    ]
    assert len(frames) == 32
    path = _write(tmp_path, frames)
    for rx in RX:
        devices, _ = _validate(path, rx)
        _assert_agree(devices)
        assert devices[0].kernel == phys, rx


def test_kernel_defer_to_tunnel_matches_prefix_simulator(tmp_path):
    """The fix's sample with GRO elided on the phys device (generic XDP) is what the pre-fix kernel does there."""
    from gro_replay.kernel.model import K_5_11
    from gro_replay.sim import replay_capture

    path = "sample_pcaps/vxlan-zero-csum-fix-89e5c58fc1e2.pcap"
    devices, oracle = _validate(path, "unnecessary", defer=True)
    _assert_agree(devices)
    assert devices[0].kernel == [1500] * 16 + [774]  # every frame single on the phys device
    # all 17 frames share one budget poll: one tunnel aggregate of 1450 + 15 × 1398 + 672 bytes
    assert devices[1].kernel == [1450 + 15 * 1398 + 672]
    seq = {"phys": [], "tunnel": []}
    cfg = ReplayConfig(
        kernels=(K_5_11,), rx_csum="unnecessary", rss="none", hz=kernel_hz(), poll=PollModel("budget")
    )
    replay_capture(path, cfg, lambda k, stage, dev, skb, now: seq[stage].append(skb.len))
    assert seq["phys"] == devices[0].kernel and seq["tunnel"] == devices[1].kernel


def test_cli_validate_and_kernel(tmp_path):
    path = _write(tmp_path, build_flow(BASE, [1400] * 100))
    r = CliRunner().invoke(main, ["validate", path, "--rx-csum", "unnecessary"])
    assert r.exit_code == 0, r.output
    # budget polls of 64: poll 1 gives 64490 (46 segments fill 64 KiB) and 25290 (18), poll 2 gives 50490 (36)
    assert "SUMMARY validate agrees=yes phys=3/3 tunnel=3/3" in r.output
    r = CliRunner().invoke(main, ["kernel", path, "--format", "json"])
    assert r.exit_code == 0, r.output
    import json

    doc = json.loads(r.output)
    assert doc["backend"] == "kernel" and doc["kernel"]["hz"] == kernel_hz()
    phys = doc["kernels"][0]["stages"]["phys"]
    assert phys["skbs_delivered"] == 3 and phys["segments_delivered"] == 100
    assert phys["segs_per_skb_hist"] == {"18": 1, "36": 1, "46": 1}
    # the tunnel device receives the 3 decapsulated phys skbs carrying the 100 segments (gro_cells_receive
    # queues each skb as it is)
    tunnel = doc["kernels"][0]["stages"]["tunnel"]
    assert (tunnel["skbs_in"], tunnel["frames_in"]) == (3, 100)


def _random_scenario(rng: random.Random) -> tuple[list[bytes], str]:
    """A mix of flows, flags, gaps, checksum errors, sizes and option changes (seeded)."""
    nflows = rng.choice([1, 1, 2, 3, 5, 8])
    outer = rng.choice(["zero", "computed"])
    ts = rng.random() < 0.5
    per_flow = []
    for i in range(nflows):
        n = rng.randint(5, 90)
        sizes = [rng.choice([1400, 1400, 1400, 1400, rng.randint(1, 1400)]) for _ in range(n)]
        base = replace(
            BASE,
            outer_csum=outer,
            timestamps=ts,
            payload=1400,
            sport=41000 + i,
            udp_sport=51000 + i,
            seq=rng.randrange(1 << 32),
            ip_id=rng.randrange(1 << 16),
        )
        specs = flow_specs(base, sizes, ts_step=rng.choice([0, 0, 1]))
        for k in range(n):
            r = rng.random()
            if r < 0.04:
                specs[k] = replace(specs[k], flags=ACK | PSH)
            elif r < 0.06:
                specs[k] = replace(specs[k], tcp_csum="bad")
            elif r < 0.08 and outer == "computed":
                specs[k] = replace(specs[k], outer_csum="bad")
            elif r < 0.10:
                specs[k] = replace(specs[k], seq=(specs[k].seq + 1400) & 0xFFFFFFFF)  # sequence gap
            elif r < 0.12:
                specs[k] = replace(specs[k], window=specs[k].window + 1)
            elif r < 0.13:
                specs[k] = replace(specs[k], tos=4)
        per_flow.append([build_frame(s) for s in specs])
    frames = []
    block = rng.choice([1, 1, 4, 16])
    while any(per_flow):
        for fl in per_flow:
            frames.extend(fl[:block])
            del fl[:block]
    return frames, rng.choice(RX)


def test_validate_randomized_differential(tmp_path):
    """200 seeded scenarios; every one must agree 100% (a divergence becomes a named regression test)."""
    rng = random.Random(20210226)
    failures = []
    for n in range(200):
        frames, rx = _random_scenario(rng)
        devices, _ = _validate(_write(tmp_path, frames, f"r{n}.pcap"), rx)
        for d in devices:
            if not d.agrees:
                failures.append((n, rx, d.stage, d.first_divergence()))
    assert not failures, failures[:5]


def _selftest_frames(case, outer_csum: str) -> list[bytes]:
    from test_selftest_cases import Pkt, base, hdr_len

    spec = replace(base("vxlan", False), outer_csum=outer_csum)
    bursts = case.bursts(Pkt(spec), hdr_len("vxlan", False, "phys"))
    return [build_frame(s) for b in bursts for s in b]


@pytest.mark.parametrize(
    ("rx", "outer_csum"),
    [("none", "zero"), ("unnecessary", "zero"), ("unnecessary-tunnel", "zero"), ("none", "computed")],
)
def test_validate_gro_selftest_cases_vxlan_ipv4(tmp_path, rx, outer_csum):
    """Every case of the kernel's GRO selftest (lib/gro.c) in its VXLAN/IPv4 form agrees with the kernel."""
    from test_selftest_cases import CASES

    failures = []
    for case in CASES:
        if case.family == "v6":
            continue
        frames = _selftest_frames(case, outer_csum)
        devices, _ = _validate(_write(tmp_path, frames, f"{case.name}.pcap"), rx)
        failures += [(case.name, d.stage, d.first_divergence()) for d in devices if not d.agrees]
    assert not failures, failures


def test_validate_refuses_an_empty_comparison(tmp_path):
    # this kernel has no geneve driver (kernel-oracle.md): no frame of a Geneve capture can be replayed, and a
    # comparison of nothing must not pass (exit 3, one line naming the reason)
    from gro_replay.synth import Scenario, write_scenario

    path = tmp_path / "g.pcap"
    write_scenario(str(path), Scenario(encap="geneve", frames=10))
    r = CliRunner().invoke(main, ["validate", str(path)])
    assert r.exit_code == 3
    assert "nothing to validate" in r.output and "geneve_not_built_in 10" in r.output


def test_kernel_json_names_its_input_and_leaves_unmeasured_values_null(tmp_path):
    import json

    path = _write(tmp_path, build_flow(BASE, [1400] * 10))
    r = CliRunner().invoke(main, ["kernel", path, "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["input"]["blake3"] == blake3(open(path, "rb").read()).hexdigest()
    # the trace gives lengths only: no software-checksum count, no end reasons
    assert doc["kernels"][0]["stages"]["phys"]["sw_csum_bytes"] is None
    assert doc["kernels"][0]["stages"]["phys"]["end_reasons"] == {}
    assert doc["config"]["constants"] == {"hz": kernel_hz()}


def test_kernel_backend_verdict_says_end_reasons_are_not_observable(tmp_path):
    """``gro-replay kernel`` on 20 contiguous segments, every fifth to port 4790 (two vxlan devices), the last ten
    G-flagged (``--vxlan-gbp``): the two 4790 flows (frames 5 and 10, 15 and 20) do not continue each other's
    sequence, so the running kernel's phys device merges neither (tcp_gro_receive's sequence check). The backend's
    trace cannot say why an skb ended: the sentence says so instead of an empty reason list."""
    from gro_replay.packet.vxlan import VXLAN_HF_VNI, gbp_flags
    from gro_replay.report.verdict import REASONS_NOT_OBSERVED

    specs = flow_specs(replace(BASE, payload=1000, udp_dport=4789), [1000] * 20)
    frames = [
        build_frame(
            replace(
                s,
                udp_dport=4790 if i % 5 == 4 else 4789,
                vxlan_flags=gbp_flags(7) if i >= 10 else VXLAN_HF_VNI,
            )
        )
        for i, s in enumerate(specs)
    ]
    path = _write(tmp_path, frames, "two-ports.pcap")
    r = CliRunner().invoke(
        main,
        ["kernel", path, "--vxlan-port", "4789", "--vxlan-port", "4790", "--vxlan-gbp", "--no-hist"],
        env={"COLUMNS": "2000"},
    )
    assert r.exit_code == 0, r.output
    text = " ".join(r.stdout.split())
    assert (
        f"does not merge 2 tunnelled TCP flows at the phys device; why their skbs ended: {REASONS_NOT_OBSERVED}."
        in text
    )
    assert "phys device: ." not in text


@pytest.mark.parametrize("rx", RX)
def test_validate_flows_without_payload(tmp_path, rx):
    """``own_acks_capture`` (a bulk flow, the pure ACKs of another connection and a gapped one, all from one host
    to another): the running kernel delivers what its rules say (test_kernel_no_payload.GRO_ON: each ACK alone at
    both devices; the two skbs of the poll's end flush in the order of their GRO hash buckets), and the simulator
    agrees skb for skb."""
    from test_kernel_no_payload import GRO_ON, own_acks_capture

    devices, _ = _validate(str(own_acks_capture(tmp_path / "acks.pcap")), rx)
    _assert_agree(devices)
    assert sorted(devices[0].kernel) == sorted(GRO_ON["phys"])
    assert sorted(devices[1].kernel) == sorted(GRO_ON["tunnel"])


def test_kernel_backend_says_flows_without_payload_apart(tmp_path):
    """``gro-replay kernel`` on ``own_acks_capture``: of its 3 tunnelled TCP flows the running kernel's phys device
    merges the bulk flow only. The verdict counts 1 flow that it does not merge (the gapped one: why is not
    observable) and says the ACK flow apart, as the simulator's verdict does: tcp_gro_receive merges no segment
    without payload, in any kernel (net/ipv4/tcp_offload.c; the backend knows the skbs carried none from the
    lengths of their frames). The table, the JSON document and the SUMMARY line come from that one verdict. Outer
    checksums computed: CHECKSUM_NONE with a non-zero outer checksum passes udp_gro_receive's gate with or without
    89e5c58fc1e2 (gro-spec §4.7 row 2), so the sentences hold on any running kernel."""
    import json

    from test_kernel_no_payload import NEVER, NO_PAYLOAD, ONE_CARRIES, SIM_ACK_REASONS, own_acks_capture

    from gro_replay.report.verdict import REASONS_NOT_OBSERVED

    path = str(own_acks_capture(tmp_path / "acks.pcap", outer_csum="computed"))
    r = CliRunner().invoke(main, ["kernel", path, "--no-hist"], env={"COLUMNS": "2000"})
    assert r.exit_code == 0, r.output
    text = " ".join(r.stdout.split())
    unmerged = (
        f"does not merge 1 tunnelled TCP flow at the phys device; why its skbs ended: {REASONS_NOT_OBSERVED}."
    )
    note = f" {ONE_CARRIES} {NO_PAYLOAD}{REASONS_NOT_OBSERVED}{NEVER}"
    assert unmerged in text and note in text
    assert "affected_flows=0" in text.split("SUMMARY ")[1]
    r = CliRunner().invoke(main, ["kernel", path, "--format", "json"])
    assert r.exit_code == 0, r.output
    verdict = json.loads(r.output)["verdict"]
    assert unmerged in verdict["text"] and verdict["text"].endswith(note)
    assert (verdict["affected_flows"], verdict["tunnel_flows"]) == (0, 3)
    # the simulator with the running kernel's profile and the backend's polls says the same, with its reasons
    release = kernel_release()
    r = CliRunner().invoke(
        main,
        [path, "--kernel", release, "--rx-csum", "none", "--poll", "budget", "--rss", "none", "--no-hist"],
        env={"COLUMNS": "2000"},
    )
    assert r.exit_code == 0, r.output
    sim = " ".join(r.stdout.split())
    # the gapped flow: G1 completed by G2 (seq_gap), G2 held to the poll's end (every skb's reason)
    # (equal counts in the order the kernel tests them: kernel/reasons.py CHECK_ORDER)
    assert (
        "does not merge 1 tunnelled TCP flow at the phys device; why its skbs ended: TCP sequence does not continue"
        in sim
    )
    assert (
        "[tcp_gro_receive:seq_gap] ×1; poll ended below budget: napi_complete_done flushed GRO [napi_complete_done:flush] ×1"
        in sim
    )
    assert f" {ONE_CARRIES} {NO_PAYLOAD}{SIM_ACK_REASONS}{NEVER}" in sim


@pytest.mark.parametrize("case", ["inner IPv4 options", "bad inner IPv4 checksum"])
def test_an_ack_flow_stopped_before_tcp_gro_receive_reads_alike_in_both_backends(tmp_path, case):
    """``own_acks_capture`` with the ACKs' inner IPv4 header carrying options (inet_gro_receive: ``*(u8 *)iph !=
    0x45`` → out) or a bad checksum (``ip_fast_csum`` → out): GRO stops them before tcp_gro_receive. The running
    kernel delivers each ACK alone at both devices (test_kernel_no_payload.GRO_ON, the ACKs 4 bytes longer with
    options), the simulator agrees skb for skb, and both verdicts say the ACK flow apart as carrying no payload
    (tests/test_no_payload_from_the_frame.py: before, the replay counted it among the flows the kernel "does not
    merge"). Outer checksums computed: the gate passes them with or without 89e5c58fc1e2 (gro-spec §4.7 row 2)."""
    from test_kernel_no_payload import GRO_ON, NEVER, NO_PAYLOAD, ONE_CARRIES
    from test_no_payload_from_the_frame import CASES, _acks_longer, _capture

    from gro_replay.report.verdict import REASONS_NOT_OBSERVED
    from gro_replay.report.verdict.core import verdict_of
    from gro_replay.validate import kernel_result

    ack_kw, _post, extra, _reason = CASES[case]
    path = str(_capture(tmp_path / "c.pcap", ack_kw, outer_csum="computed"))
    cfg = ReplayConfig(rx_csum="none", poll=PollModel("budget"), rss="none", vxlan_ports=(4789,))
    loaded = load_capture(path, cfg)
    oracle = run_kernel([f[1] for f in loaded.frames], rx_csum="none", csum_level=0)
    sim_cfg = replace(cfg, kernels=(profile_for_release(kernel_release()),), hz=kernel_hz())
    devices = compare(loaded, oracle, sim_cfg)
    _assert_agree(devices)
    expected = _acks_longer(GRO_ON, extra)
    assert sorted(devices[0].kernel) == sorted(expected["phys"])
    assert sorted(devices[1].kernel) == sorted(expected["tunnel"])
    kern = verdict_of(kernel_result(load_capture(path, cfg), oracle, cfg)).text
    assert kern.endswith(f" {ONE_CARRIES} {NO_PAYLOAD}{REASONS_NOT_OBSERVED}{NEVER}"), kern
    assert (
        f"does not merge 1 tunnelled TCP flow at the phys device; why its skbs ended: {REASONS_NOT_OBSERVED}."
        in kern
    )
    r = CliRunner().invoke(
        main,
        [
            path,
            "--kernel",
            kernel_release(),
            "--rx-csum",
            "none",
            "--poll",
            "budget",
            "--rss",
            "none",
            "--no-hist",
        ],
        env={"COLUMNS": "2000"},
    )
    assert r.exit_code == 0, r.output
    sim = " ".join(r.stdout.split())
    assert f" {ONE_CARRIES} {NO_PAYLOAD}" in sim and NEVER in sim
    assert "does not merge 1 tunnelled TCP flow at the phys device" in sim


def test_kernel_trace_file_is_written_whole(tmp_path):
    """``kernel --trace FILE``: written beside FILE and renamed into place when the report is made
    (gro_replay/outputs.py), one line per skb the running kernel delivered on either device."""
    import json

    path = _write(tmp_path, build_flow(BASE, [1400] * 10))
    out = tmp_path / "out"
    out.mkdir()
    r = CliRunner().invoke(main, ["kernel", path, "--trace", str(out / "t.txt"), "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    skbs = sum(doc["kernels"][0]["stages"][s]["skbs_delivered"] for s in ("phys", "tunnel"))
    assert os.listdir(out) == ["t.txt"]
    assert len((out / "t.txt").read_text().splitlines()) == skbs > 0


def test_validate_inner_vlan_tags(tmp_path):
    """Three flows with one inner 5-tuple: inner 802.1Q VID 10, VID 20, untagged, 30 segments each, round-robin (90
    frames: budget polls of 64 and 26). With the VLAN GRO offloads (CONFIG_VLAN_8021Q y/m: net/8021q/vlan_core.c
    ``vlan_gro_receive``) compare_vlan_header keeps the VIDs apart and each flow merges within each poll: 3 + 3 phys
    skbs; without them (eth_gro_receive finds no handler for 0x8100) only the untagged flow merges: 2 phys skbs
    and 60 single ones. Either way the simulator, given the running kernel's config, must agree skb for skb."""
    flows = [
        build_flow(replace(BASE, inner_vlan=vid, seq=1000 + 7919 * i), [1400] * 30)
        for i, vid in enumerate((10, 20, None))
    ]
    frames = [f for trio in zip(*flows, strict=True) for f in trio]
    devices, _oracle = _validate(_write(tmp_path, frames), "none")
    _assert_agree(devices)
    phys = devices[0].kernel
    tagged, plain = 1400 + 94, 1400 + 90  # one segment at the phys device: headers, inner tag or not
    # poll 1: frames 0-63 = 22 of VID 10, 21 of VID 20, 21 untagged; poll 2: 8, 9, 9
    untagged = [plain + 20 * 1400, plain + 8 * 1400]
    if kernel_vlan_offload():
        want = [tagged + 21 * 1400, tagged + 20 * 1400, untagged[0], tagged + 7 * 1400, tagged + 8 * 1400]
        assert sorted(phys) == sorted([*want, untagged[1]])
    else:
        assert sorted(phys) == sorted([tagged] * 60 + untagged)


@pytest.mark.parametrize("command", ["kernel", "validate"])
def test_outer_vlan_tagged_frames_are_counted_not_sent(tmp_path, command):
    """The reader takes outer VLAN tags off (the driver's ``vlan_tci``); the kernel backend builds no VLAN device, so
    a frame that had one is not sent (``outer_vlan_unsupported``, oracle/replay.py ``plan_frames``), counted by
    reason: 10 of a flow behind outer VID 10 beside 10 untagged ones. Before, they were sent untagged and merged
    with the other flow as one (breaker62: 20/20 skbs where the replay, keeping them apart, said 2/2)."""
    flows = [
        build_flow(replace(BASE, outer_vlan=vid, seq=1000 + 7919 * i), [1400] * 10)
        for i, vid in enumerate((10, None))
    ]
    path = _write(tmp_path, [f for pair in zip(*flows, strict=True) for f in pair])
    r = CliRunner().invoke(main, [command, path, "--format", "json", "-q"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    inp = doc["input"]
    assert (inp["frames_read"], inp["frames_replayed"]) == (20, 10)
    assert inp["skipped"] == {"kernel_backend:outer_vlan_unsupported": 10}


def test_a_kernel_run_that_sends_nothing_still_names_the_kernels_vlan_offloads(tmp_path):
    # every frame tagged: none sent, and the running kernel's CONFIG_VLAN_8021Q is still the JSON config's
    # (breaker62: the early return left the dataclass default, true, on this kernel without them)
    frames = build_flow(replace(BASE, outer_vlan=10), [1400] * 4)
    r = CliRunner().invoke(main, ["kernel", _write(tmp_path, frames), "--format", "json", "-q"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["kernel"]["frames_sent"] == 0
    assert doc["config"]["vlan_offload"] is kernel_vlan_offload()


def test_validate_says_its_simulator_ran_without_the_vlan_offloads(tmp_path):
    """On a running kernel without the VLAN GRO offloads, ``validate``'s simulator runs without them too, and its
    report says so as the kernel backend's does (fidelity30: validate said nothing, while the plain replay merges
    the same flow); with them, no note."""
    frames = build_flow(replace(BASE, inner_vlan=5), [1400] * 8)
    r = CliRunner().invoke(main, ["validate", _write(tmp_path, frames)])
    assert r.exit_code == 0, r.output
    said = [line for line in r.output.splitlines() if "no VLAN GRO offloads" in line]
    if kernel_vlan_offload():
        assert said == []
    else:
        assert said == [
            "note: the running kernel has no VLAN GRO offloads (built without CONFIG_VLAN_8021Q: no "
            "vlan_gro_receive), so its GRO merges none of the 8 frames whose inner frame carries a VLAN tag; a "
            "replay models a kernel that has them unless given --no-vlan-offload (validate runs the simulator "
            "without them)"
        ]


@pytest.mark.parametrize("name", ["ipip", "sit", "ip6ip6", "ip4ip6"])
def test_ip_in_ip_inside_vxlan_merges_at_the_tunnel_device(tmp_path, name):
    """IP in IP inside VXLAN (tests/test_ip_in_ip.py's captures: 5 contiguous 1000-byte segments, outer UDP checksum
    0). Measured on the running kernel: the phys device hands up all 5 alone (ipip/sit/ip6ip6/ip4ip6_gro_receive
    flush a second encapsulation), the tunnel device merges them into 1 skb (the IP-in-IP receive sets encap_mark and
    parses the header inside); the simulator agrees skb for skb. Before ipip_offload & co. were registered, the
    model flushed them at the tunnel device too (5 skbs: "without GRO handler")."""
    from test_ip_in_ip import CASES, _capture

    devices, _ = _validate(_capture(tmp_path, CASES[name][0]), "unnecessary")
    _assert_agree(devices)
    by_stage = {d.stage: d for d in devices}
    assert (len(by_stage["phys"].kernel), len(by_stage["tunnel"].kernel)) == (5, 1)


def test_validate_json_document(tmp_path):
    """``validate --format json`` is a published document (schema ``validate``: schema_version, tool, kind, the
    input counted over the frames sent), and its summary is the text report's SUMMARY line: one computation
    (report/validation.py). 17 frames of one flow, merged whole at each device (one skb of 23,890 bytes at the
    phys device, 23,840 at the vxlan device: 1/1 each, as test_cli_validate_and_kernel's budget polls), and one frame to another outer destination, which the backend
    cannot send (oracle/replay.py plan_frames: outer_destination_differs)."""
    import json

    from gro_replay.report.schema import check

    frames = [build_frame(s) for s in flow_specs(BASE, [1400] * 17)]
    frames.append(build_frame(replace(BASE, outer_dst="10.0.0.9")))
    path = _write(tmp_path, frames)
    r = CliRunner().invoke(main, ["validate", path, "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    check(doc, "validate")
    assert (doc["schema_version"], doc["kind"], doc["tool"]["name"]) == (1, "validate", "gro-replay")
    inp = doc["input"]
    assert (inp["frames_read"], inp["frames_replayed"]) == (18, 17)
    assert inp["skipped"] == {"kernel_backend:outer_destination_differs": 1}
    assert (doc["frames_sent"], doc["rx_csum"], doc["agrees"]) == (17, "none", True)
    assert [(d["stage"], d["matching"], d["total"]) for d in doc["devices"]] == [
        ("phys", 1, 1),
        ("tunnel", 1, 1),
    ]
    text = CliRunner().invoke(main, ["validate", path]).stdout.splitlines()
    assert doc["summary"] == text[-1] == "SUMMARY validate agrees=yes phys=1/1 tunnel=1/1"


def test_validate_text_says_what_was_split(tmp_path):
    """Two 9014-byte frames (outer IP 9000 bytes) under the default --mtu 1500 are split into 7 segments each (inner
    MSS 1500 - 102 bytes of headers = 1398; 8898 payload bytes → 6 × 1398 + 510): validate's text says 2 frames were
    read and 14 sent, and gives the replay's note (JSON ``input.notes``, the same words): before, it said "14
    frames" alone, so an agreement on jumbo frames read as one on what was sent (newcomer's finding)."""
    path = tmp_path / "jumbo.pcap"
    with PcapWriter(str(path)) as w:
        for i, f in enumerate(build_flow(FrameSpec(), [8898, 8898])):
            w.write(1000 * (i + 1), f)
    r = CliRunner().invoke(main, ["validate", str(path)])
    lines = r.output.splitlines()
    assert lines[0].endswith("; 2 frames read, 14 sent, --rx-csum none"), r.output
    assert lines[1].startswith(
        "note: 2 frames larger than --mtu 1500 (the largest outer IP packet 9,000 bytes) were split into 14 wire "
        "segments"
    )
    doc = json.loads(CliRunner().invoke(main, ["validate", str(path), "--format", "json"]).output)
    assert [f"note: {n}" for n in doc["input"]["notes"]] == [ln for ln in lines if ln.startswith("note: ")]


def test_validate_with_every_frame_cut_short_says_so(tmp_path):
    """Three records cut to 200 of their 1514 bytes (a snaplen): the replay skips them (snaplen_cut), so nothing
    reaches the kernel backend; the refusal (exit 3) names that skip, as it names what the backend cannot send (it
    said "no replayable frame": breaker's finding)."""
    path = tmp_path / "cut.pcap"
    with PcapWriter(str(path)) as w:
        for i, f in enumerate(build_flow(FrameSpec(), [1398] * 3)):
            w.write(1000 * (i + 1), f[:200], orig_len=len(f))
    r = CliRunner().invoke(main, ["validate", str(path), "-q"])
    assert r.exit_code == 3, r.output
    assert r.output.strip().splitlines()[-1] == (
        f"Error: nothing to validate: no frame of {path} can be replayed here (skipped: snaplen_cut 3)"
    )
