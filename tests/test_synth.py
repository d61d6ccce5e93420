"""Scenario generator and ``synth`` CLI: the shipped samples, the fix's scenario, flows, timing.

The fix's scenario is the traffic of the 89e5c58fc1e2 mail (gro-spec §8): one VXLAN/IPv4 flow with outer
UDP checksum 0, inner IPv4/TCP with timestamps, 16 segments of 1398 bytes and one of 672 (outer IP lengths
1500 and 774), frames 1–10 and 11–17 one microsecond apart with a 10 µs gap between 10 and 11.
pcap records are read here with plain struct arithmetic so that timestamps stay exact nanoseconds.
"""

from __future__ import annotations

import shlex
import shutil
import struct
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from gro_replay.cli.synth import synth
from gro_replay.packet.build import FrameSpec, build_frame
from gro_replay.synth import (
    DEFAULT_START_NS,
    LOCAL_PORT_MAX,
    LOCAL_PORT_MIN,
    Scenario,
    flow_spec,
    synth_frames,
    udp_flow_src_port,
    write_scenario,
)

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_pcaps"
FIX_SAMPLE = "vxlan-zero-csum-fix-89e5c58fc1e2.pcap"
GENEVE_SAMPLE = "geneve-ipv6-bulk.pcap"
VXLAN4_SAMPLE = "vxlan-4flows-computed-csum.pcap"

#: The shipped samples as scenarios, mirroring the Makefile's `samples` command lines.
SAMPLE_SCENARIOS = {
    FIX_SAMPLE: Scenario(
        encap="vxlan",
        port=4789,
        outer_csum="zero",
        timestamps=True,
        flows=1,
        frames=17,
        mss=1398,
        last_payload=672,
        gap_ns=1000,
        pause_every=10,
        pause_ns=10_000,
    ),
    GENEVE_SAMPLE: Scenario(
        encap="geneve",
        port=6081,
        geneve_opt_bytes=8,
        outer_ipv6=True,
        outer_csum="computed",
        flows=4,
        interleave="rr",
        frames=64,
    ),
    VXLAN4_SAMPLE: Scenario(
        encap="vxlan", outer_csum="computed", timestamps=False, flows=4, interleave=8, frames=100
    ),
}


def read_pcap(path: Path) -> list[tuple[int, bytes]]:
    """(ts_ns, frame) records of a nanosecond or microsecond pcap, either byte order."""
    data = path.read_bytes()
    magic = data[:4]
    order = {
        b"\x4d\x3c\xb2\xa1": "<",
        b"\xa1\xb2\x3c\x4d": ">",
        b"\xd4\xc3\xb2\xa1": "<",
        b"\xa1\xb2\xc3\xd4": ">",
    }[magic]
    nano = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    assert struct.unpack_from(order + "I", data, 20)[0] == 1  # DLT_EN10MB
    out, off = [], 24
    while off < len(data):
        sec, frac, caplen, wirelen = struct.unpack_from(order + "IIII", data, off)
        assert caplen == wirelen
        out.append((sec * 10**9 + (frac if nano else frac * 1000), data[off + 16 : off + 16 + caplen]))
        off += 16 + caplen
    assert off == len(data)
    return out


def outer_ip_len(frame: bytes) -> int:
    if struct.unpack_from("!H", frame, 12)[0] == 0x0800:
        return struct.unpack_from("!H", frame, 16)[0]
    return 40 + struct.unpack_from("!H", frame, 18)[0]


def fields(frame: bytes) -> dict:
    """Outer UDP and inner TCP fields of an untagged frame, by hand."""
    l3 = 14
    l4 = l3 + (20 if frame[l3] >> 4 == 4 else 40)
    sport, dport, ulen, ucsum = struct.unpack_from("!HHHH", frame, l4)
    tun = l4 + 8
    inner_l2 = tun + 8 + (4 * (frame[tun] & 0x3F) if dport == 6081 else 0)
    il3 = inner_l2 + 14
    ipv4 = frame[il3] >> 4 == 4
    il4 = il3 + ((frame[il3] & 0xF) * 4 if ipv4 else 40)
    tcp_sport, tcp_dport, seq = struct.unpack_from("!HHI", frame, il4)
    doff = (frame[il4 + 12] >> 4) * 4
    inner_end = il3 + (
        struct.unpack_from("!H", frame, il3 + 2)[0]
        if ipv4
        else 40 + struct.unpack_from("!H", frame, il3 + 4)[0]
    )
    return {
        "udp_sport": sport,
        "udp_dport": dport,
        "udp_csum": ucsum,
        "tcp_sport": tcp_sport,
        "tcp_dport": tcp_dport,
        "seq": seq,
        "doff": doff,
        "payload": inner_end - il4 - doff,
        "opts": frame[il4 + 20 : il4 + doff],
        "geneve_opt_len": frame[tun] & 0x3F if dport == 6081 else None,
        "inner_ip_id": struct.unpack_from("!H", frame, il3 + 4)[0] if ipv4 else None,
    }


def make_sample_command_lines() -> list[list[str]]:
    """Argument lists of the Makefile's `samples` recipe (program replaced by the word SYNTH)."""
    out = subprocess.run(
        ["make", "-s", "-n", "-C", str(ROOT), "samples", "SYNTH=SYNTH", "SAMPLES_DIR=OUT"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    lines = [shlex.split(line) for line in out.replace("\\\n", " ").splitlines() if line.strip()]
    assert all(line[0] == "SYNTH" for line in lines)
    return [line[1:] for line in lines]


# ---- shipped samples ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SAMPLE_SCENARIOS))
def test_write_scenario_regenerates_shipped_sample_byte_identically(name, tmp_path):
    out = tmp_path / name
    write_scenario(out, SAMPLE_SCENARIOS[name])
    assert out.read_bytes() == (SAMPLES / name).read_bytes()


@pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")
def test_makefile_samples_command_lines_regenerate_shipped_samples(tmp_path):
    lines = make_sample_command_lines()
    names = sorted(Path(args[-1]).name for args in lines)
    assert names == sorted(SAMPLE_SCENARIOS)
    runner = CliRunner()
    for args in lines:
        name = Path(args[-1]).name
        assert args[-1] == f"OUT/{name}"
        result = runner.invoke(synth, [*args[:-1], str(tmp_path / name)])
        assert result.exit_code == 0, result.output
        assert (tmp_path / name).read_bytes() == (SAMPLES / name).read_bytes()


@pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")
def test_make_samples_runs_end_to_end(tmp_path):
    synth_cmd = f"{shlex.quote(sys.executable)} -m gro_replay.cli.synth"
    subprocess.run(
        ["make", "-s", "-C", str(ROOT), "samples", f"SYNTH={synth_cmd}", f"SAMPLES_DIR={tmp_path}"],
        check=True,
        capture_output=True,
    )
    for name in SAMPLE_SCENARIOS:
        assert (tmp_path / name).read_bytes() == (SAMPLES / name).read_bytes()


def test_fix_sample_frame_by_frame():
    recs = read_pcap(SAMPLES / FIX_SAMPLE)
    assert len(recs) == 17
    assert [outer_ip_len(f) for _, f in recs] == [1500] * 16 + [774]
    assert [len(f) for _, f in recs] == [1514] * 16 + [788]
    deltas = [b[0] - a[0] for a, b in zip(recs, recs[1:], strict=False)]
    assert deltas == [1000] * 9 + [10_000] + [1000] * 6
    assert recs[0][0] == DEFAULT_START_NS == 1614373368 * 10**9
    fs = [fields(f) for _, f in recs]
    assert {(f["udp_sport"], f["udp_dport"], f["tcp_sport"], f["tcp_dport"]) for f in fs} == {
        (fs[0]["udp_sport"], 4789, 40000, 5201)
    }
    assert all(f["udp_csum"] == 0 for f in fs)
    assert all(f["doff"] == 32 and f["opts"][:4] == b"\x01\x01\x08\x0a" for f in fs)
    assert [f["payload"] for f in fs] == [1398] * 16 + [672]
    assert [f["seq"] - fs[0]["seq"] for f in fs] == [1398 * k for k in range(17)]
    assert [f["inner_ip_id"] for f in fs] == list(range(17))
    # golden: ten of these frames make the 14032-byte aggregate of the fix mail (gro-spec §8)
    assert 52 + sum(f["payload"] for f in fs[:10]) == 14032


def test_geneve_sample_layout():
    recs = read_pcap(SAMPLES / GENEVE_SAMPLE)
    assert len(recs) == 256
    assert all(outer_ip_len(f) == 1500 for _, f in recs)
    fs = [fields(f) for _, f in recs]
    assert all(f["udp_dport"] == 6081 and f["geneve_opt_len"] == 2 and f["udp_csum"] != 0 for f in fs)
    assert all(f["payload"] == 1370 for f in fs)  # 1500 - 40 - 8 - 16 - 14 - 20 - 32
    # round-robin over four flows
    assert [f["tcp_sport"] for f in fs[:8]] == [40000, 40001, 40002, 40003] * 2
    assert len({f["udp_sport"] for f in fs}) == 4


def test_vxlan_4flows_sample_layout():
    recs = read_pcap(SAMPLES / VXLAN4_SAMPLE)
    assert len(recs) == 400
    fs = [fields(f) for _, f in recs]
    assert all(outer_ip_len(f) == 1500 for _, f in recs)
    assert all(f["doff"] == 20 and f["payload"] == 1410 and f["udp_csum"] != 0 for f in fs)
    assert [f["tcp_sport"] for f in fs[:40:8]] == [40000, 40001, 40002, 40003, 40000]
    # blocks of 8 per flow; 100 = 12·8 + 4, so the last round has blocks of 4
    expected = [
        40000 + flow for first in range(0, 100, 8) for flow in range(4) for _ in range(min(8, 100 - first))
    ]
    assert [f["tcp_sport"] for f in fs] == expected


# ---- scenario semantics ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sc", "mss"),
    [
        (Scenario(), 1398),
        (Scenario(timestamps=False), 1410),
        (Scenario(outer_ipv6=True), 1378),
        (Scenario(inner_ipv6=True), 1378),
        (Scenario(encap="geneve", geneve_opt_bytes=8, outer_ipv6=True), 1370),
        (Scenario(mtu=9000), 8898),
        (Scenario(mss=100), 100),
    ],
)
def test_scenario_default_mss_fills_the_mtu(sc, mss):
    assert sc.resolved_mss() == mss
    _, frame = next(synth_frames(replace(sc, frames=1)))
    if sc.mss is None:
        assert outer_ip_len(frame) == sc.mtu


def test_synth_frames_interleave_blocks_and_flows_differ():
    sc = Scenario(flows=3, frames=5, interleave=2, timestamps=False, mss=10)
    fs = [fields(f) for _, f in synth_frames(sc)]
    assert [f["tcp_sport"] - 40000 for f in fs] == [0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2, 0, 1, 2]
    ports = {f["tcp_sport"]: f["udp_sport"] for f in fs}
    assert len(set(ports.values())) == 3
    assert all(LOCAL_PORT_MIN <= p < LOCAL_PORT_MAX for p in ports.values())
    # per flow: contiguous sequence numbers
    for sport in ports:
        seqs = [f["seq"] for f in fs if f["tcp_sport"] == sport]
        assert [s - seqs[0] for s in seqs] == [0, 10, 20, 30, 40]


def test_synth_frames_pause_replaces_the_gap():
    sc = Scenario(frames=7, gap_ns=500, pause_every=3, pause_ns=4000, start_ns=10)
    ts = [t for t, _ in synth_frames(sc)]
    assert ts[0] == 10
    assert [b - a for a, b in zip(ts, ts[1:], strict=False)] == [500, 500, 4000, 500, 500, 4000]


def test_synth_frames_tcp_clock_ticks_each_millisecond():
    sc = Scenario(frames=3, gap_ns=600_000, mss=1)
    tsvals = [struct.unpack("!I", fields(f)["opts"][4:8])[0] for _, f in synth_frames(sc)]
    assert [v - tsvals[0] for v in tsvals] == [0, 0, 1]


def test_synth_frames_outer_ip_id_counts_frames_across_flows():
    sc = Scenario(flows=2, frames=3, mss=1)
    ids = [struct.unpack_from("!H", f, 18)[0] for _, f in synth_frames(sc)]
    assert ids == list(range(6))


# A frame whose outer IP packet exceeds --mtu is a GSO/TSO super-frame as the sending host captures it. A Linux
# sender numbers it with the count of wire segments it becomes: net/ipv4/tcp_output.c tcp_set_skb_tso_segs
# (pcount = DIV_ROUND_UP(skb->len, mss_now), copied to skb_shinfo(skb)->gso_segs by __tcp_transmit_skb);
# net/ipv4/ip_output.c __ip_queue_xmit → include/net/ip.h ip_select_ident_segs(net, skb, sk, gso_segs ?: 1) (the
# inner id: the socket's inet_id, advanced by gso_segs); net/ipv4/ip_tunnel_core.c iptunnel_xmit →
# __ip_select_ident(net, iph, gso_segs ?: 1) (the outer id). GSO then numbers the segments id, id + 1, …
# (net/ipv4/af_inet.c inet_gso_segment), which end just below the next super-frame's id.
#: VXLAN over IPv4, inner IPv4, TCP timestamps: 102 bytes of the outer IP packet are headers, so MTU 1102 → MSS 1000
MTU_FOR_MSS_1000 = 1102


def _ids(frame: bytes) -> tuple[int, int | None]:
    """(outer IPv4 id, inner IPv4 id) of an untagged frame with an outer IPv4 header."""
    return struct.unpack_from("!H", frame, 18)[0], fields(frame)["inner_ip_id"]


@pytest.mark.parametrize(
    ("payload", "segs"), [(0, 1), (1, 1), (1000, 1), (1001, 2), (3999, 4), (4000, 4), (4001, 5), (65000, 65)]
)
def test_gso_segs_is_payload_over_the_mtus_mss_rounded_up(payload, segs):
    sc = Scenario(mss=4000, mtu=MTU_FOR_MSS_1000)
    assert sc.wire_mss() == 1000
    assert sc.gso_segs(payload) == segs  # DIV_ROUND_UP(len, mss); a frame within the MTU (or empty) is 1


@pytest.mark.parametrize("inner_ipv6", [False, True])
@pytest.mark.parametrize(("encap", "opt_bytes"), [("vxlan", 0), ("geneve", 0), ("geneve", 8)])
@pytest.mark.parametrize("timestamps", [True, False])
def test_the_smallest_mtu_leaves_an_inner_mss_of_tcp_min_snd_mss(inner_ipv6, encap, opt_bytes, timestamps):
    """No Linux sender segments below an MSS of 48 (include/net/tcp.h TCP_MIN_SND_MSS; net/ipv4/tcp_output.c
    __tcp_mtu_to_mss floors the MSS before ``tcp_mtu_to_mss`` subtracts the TCP options): the smallest --mtu is the
    headers without TCP options + 20 TCP + 48 — outer IPv4 20 / IPv6 40, UDP 8 (RFC 768), VXLAN 8 (RFC 7348) or
    Geneve 8 + options (RFC 8926), inner Ethernet 14, inner IPv4 20 / IPv6 40 — whatever the TCP options: at that
    MTU a full segment carries 48 − 12 = 36 payload bytes with timestamps (NOP NOP TS), 48 without. One byte less
    is refused, naming it. (Outer IPv4: an outer IPv6 packet's floor is IPv6's 1280, below.)"""
    outer_ipv6 = False
    sc = dict(outer_ipv6=outer_ipv6, inner_ipv6=inner_ipv6, encap=encap, timestamps=timestamps, frames=2)
    if opt_bytes:
        sc["geneve_opt_bytes"] = opt_bytes
    least = (40 if outer_ipv6 else 20) + 8 + 8 + opt_bytes + 14 + (40 if inner_ipv6 else 20) + 20 + 48
    ok = Scenario(mtu=least, **sc)
    assert ok.min_mtu() == least and ok.resolved_mss() == (36 if timestamps else 48)
    assert [outer_ip_len(f) for _, f in synth_frames(ok)] == [least, least]
    with pytest.raises(ValueError) as e:
        Scenario(mtu=least - 1, **sc)
    assert str(e.value).startswith(
        f"mtu {least - 1} is less than {least}, the smallest MTU that leaves these headers an inner TCP MSS of 48 "
        f"bytes ({least} = {40 if outer_ipv6 else 20} outer IPv{6 if outer_ipv6 else 4} + 8 UDP + "
        f"{8 + opt_bytes} {'VXLAN' if encap == 'vxlan' else 'Geneve'} + 14 inner Ethernet + "
        f"{40 if inner_ipv6 else 20} inner IPv{6 if inner_ipv6 else 4} + 20 TCP + 48"
    )
    assert ("the MSS counts the 12 bytes of TCP options" in str(e.value)) is timestamps


@pytest.mark.parametrize("inner_ipv6", [False, True])
@pytest.mark.parametrize(("encap", "opt_bytes"), [("vxlan", 0), ("geneve", 252)])
@pytest.mark.parametrize("mss", [None, 100])
def test_an_outer_ipv6_mtu_is_at_least_1280(inner_ipv6, encap, opt_bytes, mss):
    """RFC 8200 §5: every IPv6 link has an MTU of at least 1280 (include/uapi/linux/ipv6.h IPV6_MIN_MTU; Linux
    takes IPv6 off a device below it, net/ipv6/addrconf.c addrconf_notify). The TCP_MIN_SND_MSS floor is below it
    with any headers (at most 40 + 8 + 8 + 252 + 14 + 40 + 20 + 48 = 430), so 1280 is the smallest outer IPv6 MTU:
    its full segments fill 1280-byte outer packets, and 1279 (or 1000) is refused naming 1280."""
    sc = dict(outer_ipv6=True, inner_ipv6=inner_ipv6, encap=encap, frames=2, mss=mss)
    if opt_bytes:
        sc["geneve_opt_bytes"] = opt_bytes
    ok = Scenario(mtu=1280, **sc)
    assert ok.min_mtu() == 1280
    headers = 40 + 8 + 8 + opt_bytes + 14 + (40 if inner_ipv6 else 20) + 20 + 12
    assert ok.wire_mss() == 1280 - headers
    if mss is None:
        assert [outer_ip_len(f) for _, f in synth_frames(ok)] == [1280, 1280]
    for mtu in (1279, 1000):
        with pytest.raises(ValueError) as e:
            Scenario(mtu=mtu, **sc)
        assert str(e.value).startswith(
            f"mtu {mtu} is less than 1280, the smallest link MTU of IPv6 (RFC 8200 §5; IPV6_MIN_MTU"
        )


def test_an_outer_ipv4_mtu_below_1280_is_kept():
    """IPv4's floor is 68 (RFC 791), and TCP_MIN_SND_MSS above it: outer IPv4 at --mtu 1000 stands, even with inner
    IPv6 (the inner MSS of a Linux sender may come from the peer's SYN, down to 48: it is not bound to 1280)."""
    sc = Scenario(mtu=1000, inner_ipv6=True, frames=2)
    assert [outer_ip_len(f) for _, f in synth_frames(sc)] == [1000, 1000]


def test_an_mtu_below_the_smallest_mss_is_refused_with_mss_given_too():
    # --mss 100 at --mtu 100 would be super-frames of a sender whose MSS is below 48: no Linux sender's
    with pytest.raises(ValueError, match="mtu 100 is less than 138, the smallest MTU"):
        Scenario(mss=100, mtu=100)


def test_super_frame_ids_advance_by_their_segments():
    """--mss 4000 --mtu 1102: 4 segments of 1000 bytes per frame, so both ids step by 4 (ip_select_ident_segs,
    iptunnel_xmit); the outer id counts every flow's segments in wire order, each flow's inner id its own."""
    sc = Scenario(flows=2, frames=3, mss=4000, mtu=MTU_FOR_MSS_1000)
    ids = [_ids(f) for _, f in synth_frames(sc)]
    # wire order rr: flow 0 frame 0, flow 1 frame 0, flow 0 frame 1, …; flow 1's inner ids start at 0x1000
    assert ids == [(0, 0), (4, 0x1000), (8, 4), (12, 0x1004), (16, 8), (20, 0x1008)]


def test_super_frame_last_payload_steps_the_outer_id_by_its_own_segments():
    """A flow's last frame of 1500 bytes is 2 segments: the next frame's outer id is 2 on, not 4."""
    sc = Scenario(flows=2, frames=2, mss=4000, mtu=MTU_FOR_MSS_1000, last_payload=1500, interleave=2)
    ids = [_ids(f) for _, f in synth_frames(sc)]
    assert ids == [(0, 0), (4, 4), (6, 0x1000), (10, 0x1004)]


def test_frames_within_the_mtu_step_ids_by_one():
    """--mss 4000 --mtu 9000: 4102-byte frames are wire frames of a jumbo underlay (gso_segs 1), ids step by 1."""
    sc = Scenario(frames=4, mss=4000, mtu=9000)
    assert [_ids(f) for _, f in synth_frames(sc)] == [(0, 0), (1, 1), (2, 2), (3, 3)]


def test_flow_spec_first_flow_is_the_default_spec_but_for_the_udp_source_port():
    spec = flow_spec(Scenario(), 0)
    assert replace(spec, udp_sport=FrameSpec().udp_sport, udp_dport=None) == FrameSpec()
    assert spec.udp_dport == 4789
    assert build_frame(spec)[34:36] == struct.pack("!H", spec.udp_sport)


def test_udp_flow_src_port_scales_into_range():
    assert udp_flow_src_port(0) == LOCAL_PORT_MIN
    assert udp_flow_src_port(0xFFFFFFFF) == LOCAL_PORT_MAX - 1


@pytest.mark.parametrize(
    "kwargs",
    [
        {"encap": "gre"},
        {"outer_csum": "partial"},
        {"flows": 0},
        {"frames": 0},
        {"interleave": 0},
        {"interleave": "zigzag"},
        {"geneve_opt_bytes": 8},  # vxlan
        {"encap": "geneve", "geneve_opt_bytes": 6},
        {"mtu": 100},
        {"gap_ns": -1},
        {"port": 0},
    ],
)
def test_scenario_rejects_invalid_values(kwargs):
    with pytest.raises(ValueError):
        Scenario(**kwargs)


# ---- CLI ------------------------------------------------------------------------------------------------


def test_cli_synth_writes_and_reports_on_stderr(tmp_path):
    out = tmp_path / "x.pcap"
    result = CliRunner().invoke(synth, ["--flows", "2", "--frames", "3", str(out)])
    assert result.exit_code == 0
    assert result.stdout == ""
    assert result.stderr == f"wrote 6 frames to {out}\n"
    recs = read_pcap(out)
    assert len(recs) == 6
    assert recs == list(synth_frames(Scenario(flows=2, frames=3)))


def test_cli_synth_gap_and_pause_in_microseconds(tmp_path):
    out = tmp_path / "x.pcap"
    args = ["--frames", "4", "--gap-us", "0.25", "--pause-every", "2", "--pause-us", "12.5", str(out)]
    assert CliRunner().invoke(synth, args).exit_code == 0
    ts = [t for t, _ in read_pcap(out)]
    assert [b - a for a, b in zip(ts, ts[1:], strict=False)] == [250, 12_500, 250]


@pytest.mark.parametrize(
    "args",
    [
        ["--interleave", "0"],
        ["--interleave", "x"],
        ["--encap", "geneve", "--geneve-opt-bytes", "6"],
        ["--geneve-opt-bytes", "8"],
        ["--mtu", "100"],
        ["--gap-us", "0.0001"],
        ["--mss", "70000"],
        ["--frames", "0"],
    ],
)
def test_cli_synth_rejects_bad_input_with_exit_2(args, tmp_path):
    out = tmp_path / "x.pcap"
    result = CliRunner().invoke(synth, [*args, str(out)])
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert "Error" in result.stderr
    assert not out.exists()


def test_cli_synth_unwritable_output_exits_2(tmp_path):
    result = CliRunner().invoke(synth, [str(tmp_path / "missing-dir" / "x.pcap")])
    assert result.exit_code == 2
    assert "cannot write" in result.stderr
