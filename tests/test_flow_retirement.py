"""Bounded per-flow bookkeeping (issue 13, item 2): the JSON document lists at most ``--flows-max`` flows in full and
sums the others, so that its totals never change and nothing is silently lost.

Every expected value is derived from how the capture is built: flow k carries k + 1 in-order TCP segments of one
VXLAN/IPv4 connection (outer UDP checksum computed, so every kernel merges them: gro-spec §4.4), every frame is one
segment at the phys stage, and no frame is dropped.
"""

from __future__ import annotations

from dataclasses import replace

from gro_replay.packet.build import FrameSpec, build_flow
from gro_replay.report.document import document
from gro_replay.sim import ReplayConfig, replay_frames

US = 1000
SPEC = FrameSpec(outer_csum="computed", payload=100)


def _flows(n: int) -> list[tuple[int, bytes]]:
    """``n`` flows one after the other, flow k (inner source port 10000 + k) with k + 1 segments 1 µs apart and
    100 µs between flows."""
    frames, t = [], 0
    for k in range(n):
        for f in build_flow(replace(SPEC, sport=10000 + k), [100] * (k + 1)):
            frames.append((t, f))
            t += US
        t += 100 * US
    return frames


def test_document_lists_the_flows_with_most_segments_and_sums_the_others() -> None:
    n, keep = 30, 8
    result = replay_frames(_flows(n), ReplayConfig())
    full = document(result, flows_max=n)
    doc = document(result, flows_max=keep)
    for kf, kd in zip(full["kernels"], doc["kernels"], strict=True):
        assert kd["stages"] == kf["stages"]  # totals never depend on the rows listed
        assert len(kf["flows"]) == n and kf["flows_summary"]["omitted"]["flows"] == 0
        # the 8 flows with most segments: ports 10029 .. 10022 (30 .. 23 segments), listed by flow id
        assert [r["key"]["inner"]["sport"] for r in kd["flows"]] == list(range(10000 + n - keep, 10000 + n))
        assert [r["phys"]["segments"] for r in kd["flows"]] == list(range(n - keep + 1, n + 1))
        s = kd["flows_summary"]
        assert (s["max_rows"], s["flows"], s["listed"], s["retired"]) == (keep, n, keep, 0)
        om = s["omitted"]
        assert om["flows"] == n - keep
        assert om["phys"]["segments"] == sum(range(1, n - keep + 1))  # flows of 1 .. 22 segments
        # listed rows plus the summed ones add up to the stage totals, counter by counter
        for stage in ("phys", "tunnel"):
            for what in ("skbs", "segments"):
                listed = sum(r[stage][what] for r in kd["flows"])
                assert listed + om[stage][what] == sum(r[stage][what] for r in kf["flows"])
            reasons: dict[str, int] = {}
            for r in kf["flows"]:
                for k, v in r[stage]["end_reasons"].items():
                    reasons[k] = reasons.get(k, 0) + v
            for r in kd["flows"]:
                for k, v in r[stage]["end_reasons"].items():
                    reasons[k] -= v
            assert {k: v for k, v in reasons.items() if v} == om[stage]["end_reasons"]
        assert sum(om["stack"].values()) == om["phys"]["skbs"]  # one stack outcome per phys skb


def test_flows_max_zero_lists_no_flow_and_ties_keep_the_earlier_flows() -> None:
    # 6 flows of 3 segments each: equal rank, so the earlier flow ids are kept
    frames, t = [], 0
    for k in range(6):
        for f in build_flow(replace(SPEC, sport=20000 + k), [100] * 3):
            frames.append((t, f))
            t += US
    result = replay_frames(frames, ReplayConfig())
    doc = document(result, flows_max=2)
    assert [r["key"]["inner"]["sport"] for r in doc["kernels"][0]["flows"]] == [20000, 20001]
    none = document(result, flows_max=0)["kernels"][0]
    assert none["flows"] == [] and none["flows_summary"]["omitted"]["flows"] == 6
    assert none["flows_summary"]["omitted"]["phys"]["segments"] == 18


def test_cli_flows_max(tmp_path, runner) -> None:
    import json

    from gro_replay.capture.writer import PcapWriter
    from gro_replay.cli import main

    path = tmp_path / "flows.pcap"
    with PcapWriter(path) as w:
        for ts, f in _flows(5):
            w.write(ts, f)
    out = runner.invoke(main, [str(path), "--format", "json", "--flows-max", "2", "-q"])
    assert out.exit_code == 0, out.output
    k = json.loads(out.output)["kernels"][0]
    assert len(k["flows"]) == 2 and k["flows_summary"]["omitted"]["flows"] == 3
    bad = runner.invoke(main, [str(path), "--flows-max", "-1", "-q"])
    assert bad.exit_code == 2
