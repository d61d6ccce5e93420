"""The verdict's flows without payload are one set everywhere it counts them (audit44): the denominator of "N of
the T tunnelled flows that carry payload (U with the E that carry none)", the "E tunnelled TCP flows carry no
payload" sentence, explain's per-flow why and the JSON ``verdict.tunnel_flows_without_payload`` — a flow of one
frame, a tunnel inside the tunnel and a replay with phys GRO off included. A segment without payload is never
merged: tcp_gro_receive flushes it ((len - 1) >= mss with len 0, net/ipv4/tcp_offload.c), in every kernel.
"""

from __future__ import annotations

import json
from collections import defaultdict

import dpkt
import pytest
from click.testing import CliRunner
from test_verdict import _nested_vxlan

from gro_replay.capture.writer import PcapWriter
from gro_replay.cli import main
from gro_replay.packet.build import FrameSpec, build_flow


def _run(*args: str) -> str:
    r = CliRunner().invoke(main, [*args], env={"COLUMNS": "400"})
    assert r.exit_code == 0, r.output
    return r.stdout


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def mix(tmp_path_factory):
    """synth's overlay-node mix, 8 connections, 60 frames (some ACK directions of a single frame), and its inner TCP
    flows as read by dpkt, not by the code under test: flow → (outer UDP checksum 0, TCP payload lengths)."""
    path = tmp_path_factory.mktemp("mix") / "m.pcap"
    r = CliRunner().invoke(
        main, ["synth", str(path), "--mix", "overlay-node", "--connections", "8", "--frames", "60"]
    )
    assert r.exit_code == 0, r.output
    flows: dict = defaultdict(lambda: [True, []])
    with open(path, "rb") as f:
        for _ts, buf in dpkt.pcap.Reader(f):
            outer = dpkt.ethernet.Ethernet(buf).data
            inner = dpkt.ethernet.Ethernet(outer.data.data[8:]).data  # past the 8-byte VXLAN header
            tcp = inner.data
            key = (inner.src, inner.dst, tcp.sport, tcp.dport)
            flows[key][0] = outer.data.sum == 0
            flows[key][1].append(len(tcp.data))
    return str(path), dict(flows)


def test_flows_without_payload_are_counted_alike(mix):
    """The capture's flows whose every TCP segment is empty (E, a lone ACK among them) are the denominator's "that
    carry none" and the with-fix kernel's "carry no payload" sentence alike: the R with outer checksum 0 were listed
    above as refused at no cost by the kernel without the fix (csum_cnt 0, csum_valid 0 at its gate: gro-spec
    §4.4), the others are "other"; their segments go up one by one, one skb each (×frames)."""
    path, flows = mix
    empty = [k for k, (_z, lens) in flows.items() if not any(lens)]
    assert any(len(flows[k][1]) == 1 for k in empty)  # a flow of one frame is among them
    e, t = len(empty), len(flows)
    r = sum(flows[k][0] for k in empty)
    frames = sum(len(flows[k][1]) for k in empty)
    text = _flat(_run(path, "--no-hist"))
    assert f"tunnelled TCP flows that carry payload ({t} with the {e} that carry none)" in text
    assert f"{r} flows without payload (ACKs" in text
    assert f"(v5.12), {e} tunnelled TCP flows carry no payload (the {r} above and {e - r} other;" in text
    assert f"[tcp_gro_receive:len_zero] ×{frames}):" in text
    assert f"{e - r} other tunnelled TCP flow{'s' if e - r > 1 else ''} carr" in _flat(_run(path, "--no-fix"))
    assert f"{e} tunnelled TCP flows carry no payload" in _flat(_run(path, "--kernel", "6.18"))
    for args in ([], ["--gro", "phys=off"]):  # phys GRO off: every frame still passes dev_gro_receive's count
        v = json.loads(_run(path, *args, "--format", "json"))["verdict"]
        assert (v["tunnel_flows"], v["tunnel_flows_without_payload"]) == (t, e)
    # phys GRO off: the verdict says no kernel's unmerged flows, so the flows without payload are no "other" ones
    # (breaker45)
    off = _flat(_run(path, "--gro", "phys=off", "--no-hist"))
    assert "The fix changes nothing with GRO off on eth0" in off
    assert f" {e} tunnelled TCP flows carry no payload" in off and "other tunnelled TCP" not in off


def _plain(j: int, sizes: list[int], csum: str = "zero") -> list[bytes]:
    """A flow over VXLAN (outer UDP checksum ``csum``), one frame per TCP payload size."""
    return build_flow(FrameSpec(outer_csum=csum, udp_sport=42000 + j, sport=31000 + j), sizes)


def _inside(j: int, sizes: list[int]) -> list[bytes]:
    """A flow over VXLAN in VXLAN, both UDP checksums 0."""
    inner = build_flow(FrameSpec(outer_csum="zero", udp_sport=41000 + j, sport=30000 + j), sizes)
    return [_nested_vxlan(f, 100 + 10 * j + i) for i, f in enumerate(inner)]


def _round_robin(path, streams: list[list[bytes]]) -> str:
    """``streams`` written one frame of each in turn, 1 µs apart."""
    with PcapWriter(str(path)) as w:
        t = 0
        for i in range(max(map(len, streams))):
            for s in streams:
                if i < len(s):
                    w.write(1_614_373_368_000_000_000 + 1000 * t, s[i])
                    t += 1
    return str(path)


@pytest.fixture(scope="module")
def nested(tmp_path_factory):
    """Four flows round robin, each of 4 frames, every UDP checksum 0: A data (1000 bytes a segment) over VXLAN, B
    pure ACKs over VXLAN, C data over VXLAN in VXLAN, D pure ACKs over VXLAN in VXLAN."""
    streams = [_plain(0, [1000] * 4), _plain(1, [0] * 4), _inside(2, [1000] * 4), _inside(3, [0] * 4)]
    return _round_robin(tmp_path_factory.mktemp("nested") / "n.pcap", streams)


def test_nested_flows_without_payload(nested):
    """Before the fix A loses phys-device aggregation (its outer checksum 0 refused at the gate; with the fix
    tcp_gro_receive merges its 4 segments) and C aggregation at the tunnel device's gro_cells (the phys device
    stops at its nested header in every kernel: udp_gro_receive's encap_mark flush; the tunnel device's gate
    refuses the nested checksum 0 before the fix). B and D carry none: of the 4 tunnelled flows 2 carry payload;
    of the tunnelled TCP flows (C's class is a tunnel inside the tunnel) 1 of 2. D's explain says why it gains
    nothing: no payload, len_zero at the tunnel device (not only the phys device's encap_mark)."""
    text = _flat(_run(nested, "--no-hist"))
    assert (
        "Before the fix, 1 of the 1 tunnelled TCP flow that carries payload (2 with the 1 that carries none)"
        in text
    )
    assert (
        "1 of the 2 tunnelled flows other than the 2 whose TCP segments carry no payload (4 in all) loses "
        "aggregation at the tunnel" in text
    )
    v = json.loads(_run(nested, "--format", "json"))["verdict"]
    assert (v["affected_flows"], v["tunnel_flows"], v["tunnel_flows_without_payload"]) == (2, 4, 2)
    d = _flat(_run("explain", nested, "--flow", "3"))  # D: flow ids in order of first frames
    assert "inner 10.0.0.1:41003 → 10.0.0.2:4789 UDP; 4 frames" in d
    assert "its TCP segments carry no payload, which tcp_gro_receive merges in no kernel" in d
    assert "at the tunnel device's gro_cells no payload (pure ACK) [tcp_gro_receive:len_zero] ×4" in d


def test_a_flow_whose_data_is_dropped_at_decapsulation_carries_payload(tmp_path):
    """breaker44: flow 0's 4 data segments have outer TOS CE over a not-ECT inner packet, which the tunnel device
    drops (vxlan_ecn_decapsulate, RFC 6040: drivers/net/vxlan/vxlan_core.c), then 4 pure ACKs follow; flow 1 is
    4 data segments. Both carry payload and both lose phys-device aggregation before the fix (outer checksum 0;
    the fix merges the data at the phys device: 8 → 5 and 4 → 1 phys skbs): "2 of 2", none without payload,
    although flow 0's skbs that reach the tunnel device are all ACKs."""
    from dataclasses import replace

    sp = FrameSpec(outer_csum="zero", udp_sport=42000, sport=31000)
    frames = build_flow(replace(sp, outer_tos=3), [1000] * 4) + build_flow(
        replace(sp, seq=1_004_000), [0] * 4
    )
    frames += build_flow(FrameSpec(outer_csum="zero", udp_sport=42001, sport=31001), [1000] * 4)
    path = tmp_path / "ce.pcap"
    with PcapWriter(str(path)) as w:
        for i, f in enumerate(frames):
            w.write(1_614_373_368_000_000_000 + 1000 * i, f)
    text = _flat(_run(str(path), "--no-hist"))
    assert "Before the fix, 2 of 2 tunnelled TCP flows lose phys-device aggregation" in text
    v = json.loads(_run(str(path), "--format", "json"))["verdict"]
    assert (v["affected_flows"], v["tunnel_flows"], v["tunnel_flows_without_payload"]) == (2, 2, 0)
    assert "carry no payload, which" not in _flat(_run("explain", str(path), "--flow", "0"))


@pytest.mark.parametrize(
    "gro", [[], ["--gro", "phys=off"], ["--gro", "tunnel=off"], ["--gro", "phys=off", "--gro", "tunnel=off"]]
)
def test_flows_without_payload_do_not_depend_on_gro(nested, gro):
    """B and D carry no payload whatever GRO runs where (breaker44: 0 with GRO off on both devices): every frame
    passes the phys device's dev_gro_receive, which counts it, GRO elided or not (netif_elide_gro)."""
    v = json.loads(_run(nested, *gro, "--format", "json"))["verdict"]
    assert (v["tunnel_flows"], v["tunnel_flows_without_payload"]) == (4, 2)


def test_flows_said_above_are_not_other_ones(tmp_path):
    """breaker47: flow A (outer checksum set, outer IPv4 IDs stepping 7919 with DF: 6.18 checks the outer ID,
    21f7484220ac, and merges none of it; 5.10 does not read an outer ID under DF and merges it) and two flows of 3
    pure ACKs with outer checksum 0 (refused by 5.10's gate at no cost: no payload). 6.18's flows without payload
    are the 2 the text listed above: "2 tunnelled TCP flows carry no payload (the 2 above", not "2 other"; and
    explain names 6.18's ID rule, not every era's."""
    from dataclasses import replace

    from gro_replay.packet.build import build_frame, flow_specs

    def spec(j: int, csum: str) -> FrameSpec:
        return FrameSpec(udp_sport=42000 + j, sport=31000 + j, outer_csum=csum)

    data = [
        replace(s, outer_ip_id=(7919 * i) & 0xFFFF)
        for i, s in enumerate(flow_specs(spec(0, "computed"), [1398] * 8))
    ]
    acks = [s for j in (5, 6) for s in flow_specs(spec(j, "zero"), [0, 0, 0])]
    path = tmp_path / "a.pcap"
    with PcapWriter(str(path)) as w:
        for i, s in enumerate(data + acks):
            w.write(1_614_373_368_000_000_000 + 1000 * i, build_frame(s))
    text = _flat(_run(str(path), "--kernel", "5.10", "--kernel", "6.18", "--no-hist"))
    assert "6.18 (v6.18) does not merge 1 tunnelled TCP flow at the phys device" in text
    assert (
        "udp_gro_receive refuses 6 frames for their zero outer UDP checksum, but 5.10 (v5.10) with the fix"
        in text
    )
    assert "does not merge those frames either (no skb is saved): 2 flows without payload" in text
    assert "In 6.18 (v6.18), 2 tunnelled TCP flows carry no payload (the 2 above;" in text
    doc = json.loads(_run("explain", str(path), "--kernel", "6.18", "--flow", "0", "--format", "json"))
    (row,) = [
        r for r in doc["flows"][0]["kernels"]["6.18"]["phys"]["reasons"] if r["reason"].endswith("ip_id")
    ]
    assert (
        "each header with its own ip_fixedid bit" in row["description"] and "v6.10" not in row["description"]
    )


def test_flows_listed_above_are_told_apart_from_these(nested, tmp_path):
    """breaker48. The nested capture: the kernel without the fix lists B and D as its no-cost refusals of flows
    without payload (outer checksum 0); the post-fix kernel's tunnelled TCP flows without payload are B alone (D is
    a tunnel inside the tunnel): "1 of the 2 above", not "the 1 above". Then a capture where the listed one is a
    nested ACK flow (checksum 0) and the post-fix kernel's is another, a plain ACK flow with its checksum set, beside
    a data flow with its checksum set: "1 other", in compare mode as with --no-fix."""
    text = _flat(_run(nested, "--no-hist"))
    assert "In post-fix (v5.12), 1 tunnelled TCP flow carries no payload (1 of the 2 above;" in text
    streams = [_plain(0, [1000] * 4, "computed"), _plain(1, [0] * 4, "computed"), _inside(3, [0] * 4)]
    path = _round_robin(tmp_path / "apart.pcap", streams)
    for args in ([], ["--no-fix"]):
        text = _flat(_run(path, *args, "--no-hist"))
        assert ": 1 flow without payload (ACKs, and SYN, FIN or RST without data), 4 frames" in text
        assert " 1 other tunnelled TCP flow carries no payload (ACKs" in text
