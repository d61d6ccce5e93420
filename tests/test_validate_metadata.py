"""The tunnel metadata, GRO per device and outer IPv6 against the running kernel (issue 11 items 1, 4, 5).

Kernel backend (kernel-oracle.md: veth + ``vxlan external`` in private namespaces, budget polls of 64, hash 0);
the simulator runs the running kernel's profile on the same frames; every comparison must be identical per
device. The random differential varies every field of the rx tunnel metadata dst the backend can vary (outer
TOS with ECN bits, TTL/hop limit, IPv4 DF, IPv6 flow label, UDP source and destination port, zero or computed UDP
checksum, VNI, outer source address, VXLAN GBP policy ID and D/A bits) frame by frame inside inner flows, over 500
seeded scenarios: 400 over outer IPv4, 100 over outer IPv6 (with and without ``udp6zerocsumrx``), half of the runs
on vxlan devices made with ``gbp``. To keep the suite fast, 50 scenarios share one kernel run (their inner flows
use distinct ports, so they interact only as flows sharing polls and GRO buckets do).

The UDP destination port: the metadata dst carries it (``udp_tun_rx_dst`` sets ``tp_dst``), but every vxlan device
binds one port (drivers/net/vxlan/vxlan_core.c ``vxlan_sock_add``; ``vxlan_rcv`` finds the device through the
socket the frame reached), so one device's gro_cells never compare two destination ports. What matters is that a
frame reaches the device of its port: both backends get one vxlan device per port (4789 and 4790), and each device
is compared on its own.

GBP: on a ``gbp`` device (VXLAN_F_GBP) ``vxlan_parse_gbp_hdr`` stores the policy ID and the D and A bits in the
metadata options (TUNNEL_VXLAN_OPT, ``options_len`` 4) for G-flagged frames; without ``gbp`` such frames are dropped
(the non-GBP runs send some to check that).

Not covered here: Geneve options and O/C bits — this machine's kernel has no Geneve (``CONFIG_GENEVE`` not set),
the backend counts such frames as ``geneve_not_built_in``; tests/kernel/test_dst_metadata.py pins them from
geneve.c.
Runs as root (CI does); skips where a capability is really absent (no root, no namespaces, tracefs or vxlan).
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from conftest import FIX_SAMPLE, ROOT, needs_kernel_backend

from gro_replay.capture.writer import PcapWriter
from gro_replay.oracle import kernel_hz, kernel_release, run_kernel
from gro_replay.packet.build import FrameSpec, build_frame, flow_specs
from gro_replay.packet.vxlan import VXLAN_HF_VNI, gbp_flags
from gro_replay.sim import PollModel, ReplayConfig
from gro_replay.validate import ORACLE_RX_CSUM, compare, load_capture, profile_for_release

pytestmark = needs_kernel_backend

DF_PCAP = ROOT.parent / "shared" / "triage" / "outer-df-tunnel-metadata.pcap"


def _ours() -> tuple[set[str], set[str]]:
    """This process's namespaces and trace instances (names carry the creating pid: ``groreplay-<pid>-…``);
    other processes' live runs are not looked at."""
    import os

    from gro_replay.oracle.tracefs import trace_instances

    mine = f"groreplay-{os.getpid()}-"
    netns = (
        {n for n in os.listdir("/run/netns") if n.startswith(mine)} if os.path.isdir("/run/netns") else set()
    )
    return netns, {n for n in trace_instances() if n.startswith(mine)}


@pytest.fixture(scope="module", autouse=True)
def leaves_nothing_behind():
    """After this module's kernel runs (several vxlan devices, gbp or not), none of its namespaces (with their
    devices) or trace instances is left."""
    yield
    assert _ours() == (set(), set())


def _write(tmp_path, frames, name) -> str:
    path = tmp_path / name
    with PcapWriter(str(path)) as w:
        for i, f in enumerate(frames):
            w.write(1_700_000_000_000_000_000 + i * 1000, f)
    return str(path)


def _validate(path, rx="none", *, udp6zero=False, gro=None, gbp=False, ports=(4789,)):
    """(per-device agreements, oracle result) of the simulator vs the kernel backend on ``path``: one vxlan device
    per port in ``ports`` in both backends, made with ``gbp`` when asked."""
    gro = gro or {"phys": True, "tunnel": True}
    cfg = ReplayConfig(
        rx_csum=rx,
        poll=PollModel("budget"),
        rss="none",
        vxlan_ports=ports,
        udp6_zero_csum_rx=udp6zero,
        vxlan_gbp=gbp,
        gro=gro,
        resegment="off",
    )
    loaded = load_capture(path, cfg)
    mode, level = ORACLE_RX_CSUM[rx]
    oracle = run_kernel(
        [f[1] for f in loaded.frames],
        rx_csum=mode,
        csum_level=level,
        defer_to_tunnel=not gro["phys"],  # generic XDP: netif_elide_gro on the phys veth, as GRO off
        vxlan_port=ports,
        udp6_zero_csum_rx=udp6zero,
        tunnel_gro=gro["tunnel"],
        vxlan_gbp=gbp,
    )
    sim_cfg = replace(cfg, kernels=(profile_for_release(kernel_release()),), hz=kernel_hz())
    return compare(loaded, oracle, sim_cfg), oracle


def _assert_agree(devices):
    for d in devices:
        assert d.agrees, (d.stage, d.first_divergence(), d.kernel[:20], d.sim[:20])


# -- the DF case and GRO per device on the fix's sample --------------------------------------------------------------
def test_validate_outer_df_triage_capture():
    """../shared/triage Fidelity row, on this kernel: phys 1090, 1090; tunnel 1040, 1040."""
    if not DF_PCAP.exists():
        pytest.skip(f"{DF_PCAP} not present")
    for rx in ("none", "unnecessary"):
        devices, _ = _validate(str(DF_PCAP), rx)
        _assert_agree(devices)
        assert devices[0].kernel == [1090, 1090] and devices[1].kernel == [1040, 1040]


@pytest.mark.parametrize(
    ("gro", "phys", "tunnel"),
    [
        # GRO off on the vxlan device: gro_cells_receive → netif_rx, nothing merged there
        ({"phys": False, "tunnel": False}, [1500] * 16 + [774], [1450] * 16 + [724]),
        # GRO elided on the phys veth only: the vxlan gro_cells merge all 17 frames (one budget poll)
        ({"phys": False, "tunnel": True}, [1500] * 16 + [774], [1450 + 15 * 1398 + 672]),
    ],
    ids=["both-off", "phys-off"],
)
def test_validate_gro_per_device(gro, phys, tunnel):
    devices, _ = _validate(str(FIX_SAMPLE), "none", gro=gro)
    _assert_agree(devices)
    assert devices[0].kernel == phys and devices[1].kernel == tunnel


# -- outer IPv6 --------------------------------------------------------------------------------------------------------
V6 = FrameSpec(outer_ipv6=True, timestamps=False, payload=1380, udp_dport=4789)


@pytest.mark.parametrize("rx", ["none", "unnecessary", "unnecessary-tunnel"])
@pytest.mark.parametrize(("csum", "udp6zero"), [("computed", False), ("zero", True), ("zero", False)])
def test_validate_outer_ipv6(tmp_path, rx, csum, udp6zero):
    frames = [build_frame(s) for s in flow_specs(replace(V6, outer_csum=csum), [1380] * 100)]
    devices, oracle = _validate(_write(tmp_path, frames, "v6.pcap"), rx, udp6zero=udp6zero)
    assert oracle.frames_sent == 100
    _assert_agree(devices)
    if csum == "zero" and not udp6zero:
        # __udp6_lib_rcv drops a zero UDPv6 checksum without udp6zerocsumrx: nothing reaches the vxlan device
        assert devices[1].kernel == []
    else:
        assert devices[1].total > 0


# -- the random metadata differential ----------------------------------------------------------------------------------
#: VXLAN header flag words of a gbp run: no G flag, G with policy IDs 0/5/0xFFFF and the D and A bits, policy bits
#: without G (ignored), a reserved bit of the GBP byte (consumed, not stored)
GBP_FLAGS = [
    VXLAN_HF_VNI,
    VXLAN_HF_VNI,
    gbp_flags(0),
    gbp_flags(5),
    gbp_flags(5),
    gbp_flags(5, dont_learn=True),
    gbp_flags(5, policy_applied=True),
    gbp_flags(0xFFFF, dont_learn=True, policy_applied=True),
    gbp_flags(9, g=False),
    gbp_flags(5) | 1 << 16,
]
#: of a run without gbp: mostly plain, now and then a G-flagged frame (dropped by vxlan_rcv)
PLAIN_FLAGS = [VXLAN_HF_VNI] * 6 + [gbp_flags(5)]


def _choices(v6: bool, gbp: bool) -> dict:
    """Values of each metadata field the backend can vary (outer destination and MACs stay fixed per run)."""
    c = {
        "outer_tos": [0, 0, 0x10, 0xB8, 0x01, 0x02, 0x03],  # 0x03: CE on a not-ECT inner packet, dropped
        "udp_sport": [49152, 49153, 60000],
        "udp_dport": [4789, 4789, 4790],  # two vxlan devices
        "outer_csum": ["zero", "computed"],
        "vni": [100, 101, 0xFFFFFF],
        "vxlan_flags": GBP_FLAGS if gbp else PLAIN_FLAGS,
    }
    if v6:
        c |= {
            "outer_hop_limit": [64, 63, 255],
            "outer_flow_label": [0, 0x12345, 0xFFFFF],
            "outer_src": ["fd00::1", "fd00::9"],
        }
    else:
        c |= {"outer_ttl": [64, 63, 255], "outer_df": [True, False], "outer_src": ["10.0.0.1", "10.0.0.9"]}
    return c


def _scenario(rng: random.Random, v6: bool, port0: int, gbp: bool = False) -> list[bytes]:
    """1–3 inner flows of 3–24 segments whose outer metadata fields change now and then (persistently or for
    one frame), interleaved in blocks."""
    ch = _choices(v6, gbp)
    per_flow = []
    for i in range(rng.choice([1, 1, 2, 3])):
        base = FrameSpec(
            outer_ipv6=v6,
            timestamps=rng.random() < 0.5,
            payload=1000,
            sport=port0 + i,
            seq=rng.randrange(1 << 32),
            outer_ip_id=rng.randrange(1 << 16),
            ip_id=rng.randrange(1 << 16),
            **{k: rng.choice(v) for k, v in ch.items()},
        )
        n = rng.randint(3, 24)
        specs = flow_specs(base, [rng.choice([1000, 1000, 1000, rng.randint(1, 1000)]) for _ in range(n)])
        cur: dict = {}
        for k in range(n):
            if rng.random() < 0.2:
                field = rng.choice(list(ch))
                value = rng.choice(ch[field])
                if rng.random() < 0.5:
                    cur[field] = value
                    specs[k] = replace(specs[k], **cur)
                else:
                    specs[k] = replace(specs[k], **(cur | {field: value}))
            elif cur:
                specs[k] = replace(specs[k], **cur)
        per_flow.append([build_frame(s) for s in specs])
    out = []
    block = rng.choice([1, 2, 8])
    while any(per_flow):
        for fl in per_flow:
            out.extend(fl[:block])
            del fl[:block]
    return out


#: (run, outer family, --rx-csum, udp6zerocsumrx, gbp): 8 IPv4 runs cycling the checksum states, 2 IPv6 runs;
#: every other run on gbp devices
RUNS = [
    (i, "v4", ("none", "unnecessary", "unnecessary-tunnel")[i % 3], False, i % 2 == 1) for i in range(8)
] + [
    (8, "v6", "none", True, False),
    (9, "v6", "unnecessary", False, True),
]
PER_RUN = 50


@pytest.mark.parametrize(
    ("run", "fam", "rx", "udp6zero", "gbp"),
    RUNS,
    ids=[f"{r[0]}-{r[1]}-{r[2]}{'-gbp' if r[4] else ''}" for r in RUNS],
)
def test_validate_metadata_random_differential(tmp_path, run, fam, rx, udp6zero, gbp):
    """50 seeded scenarios per kernel run, 10 runs (500 scenarios): 100 % agreement on every device (the phys
    veth and the vxlan devices on ports 4789 and 4790)."""
    rng = random.Random(f"issue11-metadata-{run}")
    frames = []
    for s in range(PER_RUN):
        frames += _scenario(rng, fam == "v6", 1024 + 4 * s, gbp)
    devices, oracle = _validate(
        _write(tmp_path, frames, "m.pcap"), rx, udp6zero=udp6zero, gbp=gbp, ports=PORTS
    )
    assert oracle.frames_sent == len(frames)
    _assert_agree(devices)
    assert [d.port for d in devices[1:]] == list(PORTS)
    assert all(d.total > 0 for d in devices)  # both vxlan devices received traffic


PORTS = (4789, 4790)


def _pair_frames(first: FrameSpec, second: FrameSpec, sport: int) -> list[bytes]:
    a, b = flow_specs(replace(first, sport=sport), [1000, 1000])
    b2 = replace(second, sport=sport, seq=b.seq, outer_ip_id=b.outer_ip_id, ip_id=b.ip_id)
    return [build_frame(a), build_frame(b2)]


P = FrameSpec(timestamps=False, payload=1000, outer_csum="zero", udp_dport=4789)

#: (first frame's VXLAN flags word, second's, tunnel skbs with gbp, without): each pair a flow of two contiguous
#: 1000-byte segments (tunnel skbs of 1040 bytes each, or one of 2040 when they merge)
GBP_PAIRS = [
    (gbp_flags(5), gbp_flags(6), [1040, 1040], []),  # policy ID; G-flagged frames dropped without gbp
    (gbp_flags(5), gbp_flags(5, dont_learn=True), [1040, 1040], []),  # D bit
    (gbp_flags(5), gbp_flags(5, policy_applied=True), [1040, 1040], []),  # A bit
    (VXLAN_HF_VNI, gbp_flags(0), [1040, 1040], [1040]),  # G flag: TUNNEL_VXLAN_OPT, options_len 4
    (gbp_flags(5), gbp_flags(5) | 1 << 16, [2040], []),  # reserved GBP bit: consumed, not stored
    (VXLAN_HF_VNI, gbp_flags(9, g=False), [2040], [1040]),  # policy bits without G: ignored (dropped w/o gbp)
    (gbp_flags(5), gbp_flags(5), [2040], []),
]


@pytest.mark.parametrize("gbp", [True, False], ids=["gbp", "no-gbp"])
def test_validate_gbp_and_dport_pairs(tmp_path, gbp):
    """Measured on this kernel, in one run per device setting: GBP policy ID, D and A bits and the G flag split a
    flow at the vxlan device's gro_cells; a reserved GBP bit and policy bits without G do not; without ``gbp``
    G-flagged frames are dropped. A flow whose second segment goes to port 4790 ends as one 1040-byte skb on each
    of the two vxlan devices. The simulator agrees on every device."""
    frames = []
    for i, (f1, f2, _, _) in enumerate(GBP_PAIRS):
        frames += _pair_frames(replace(P, vxlan_flags=f1), replace(P, vxlan_flags=f2), 2000 + i)
    frames += _pair_frames(P, replace(P, udp_dport=4790), 3000)
    devices, _ = _validate(_write(tmp_path, frames, "pairs.pcap"), gbp=gbp, ports=PORTS)
    _assert_agree(devices)
    want = [n for *_, with_gbp, without in GBP_PAIRS for n in (with_gbp if gbp else without)] + [1040]
    assert sorted(devices[1].kernel) == sorted(want)  # port 4789
    assert devices[2].kernel == [1040]  # port 4790


def test_cli_kernel_and_validate_outer_ipv6(tmp_path):
    """``kernel`` and ``validate`` on an outer-IPv6 VXLAN capture (zero UDPv6 checksums, port 8472 detected)."""
    import json

    from click.testing import CliRunner

    from gro_replay.cli import main

    spec = replace(V6, outer_csum="zero", udp_dport=8472)
    path = _write(tmp_path, [build_frame(s) for s in flow_specs(spec, [1380] * 100)], "v6cli.pcap")
    r = CliRunner().invoke(main, ["validate", path, "--udp6zerocsumrx"])
    assert r.exit_code == 0, r.output
    # budget polls of 64 (kernel-oracle.md): 1380-byte segments, 47 fill 64 KiB at the phys device
    assert "SUMMARY validate agrees=yes phys=3/3 tunnel=3/3" in r.output
    r = CliRunner().invoke(main, ["validate", path])
    assert r.exit_code == 0, r.output
    assert "SUMMARY validate agrees=yes phys=3/3 tunnel=0/0" in r.output  # __udp6_lib_rcv drops them
    r = CliRunner().invoke(main, ["kernel", path, "--udp6zerocsumrx", "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["config"]["vxlan_ports"] == [8472] and doc["config"]["udp6_zero_csum_rx"] is True
    assert doc["kernels"][0]["stages"]["tunnel"]["segments_delivered"] == 100


def test_cli_two_ports_and_gbp(tmp_path):
    """``validate``/``kernel`` with ``--vxlan-port 4789 --vxlan-port 4790 --vxlan-gbp``: one vxlan device per port
    in both backends, each compared on its own. 20 contiguous 1000-byte segments of one inner flow, every fifth
    to port 4790, the last ten G-flagged (policy 7). The phys stage splits wherever the outer port or the VXLAN
    header word changes (another outer flow; ``vxlan_gro_receive`` compares the word): 8 skbs."""
    import json

    from click.testing import CliRunner

    from gro_replay.cli import main

    specs = flow_specs(P, [1000] * 20)
    specs = [
        replace(
            s, udp_dport=4790 if i % 5 == 4 else 4789, vxlan_flags=gbp_flags(7) if i >= 10 else VXLAN_HF_VNI
        )
        for i, s in enumerate(specs)
    ]
    path = _write(tmp_path, [build_frame(s) for s in specs], "two.pcap")
    ports = ["--vxlan-port", "4789", "--vxlan-port", "4790"]
    r = CliRunner().invoke(main, ["validate", path, *ports, "--vxlan-gbp"])
    assert r.exit_code == 0, r.output
    # per port: runs of 4 segments on 4789 (4 skbs of 4040: 1-4, 6-9, 11-14, 16-19), single frames on 4790 (5, 10,
    # 15, 20); the G flag from frame 11 on changes the header word and the metadata, so nothing merges across it
    assert "SUMMARY validate agrees=yes phys=8/8 tunnel@4789=4/4 tunnel@4790=4/4" in r.output
    r = CliRunner().invoke(main, ["validate", path, *ports])  # without gbp the G-flagged frames are dropped
    assert "SUMMARY validate agrees=yes phys=8/8 tunnel@4789=2/2 tunnel@4790=2/2" in r.output, r.output
    r = CliRunner().invoke(main, ["kernel", path, *ports, "--vxlan-gbp", "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["config"]["vxlan_ports"] == [4789, 4790] and doc["config"]["vxlan_gbp"] is True
    assert doc["kernels"][0]["stages"]["tunnel"]["segments_delivered"] == 20
