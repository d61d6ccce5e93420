"""What the fix costs a flow it does not touch: frames of other flows that 89e5c58fc1e2 lets GRO hold take room in
the same GRO lists (breaker62).

The capture: 12 VXLAN flows with outer UDP checksum 0 and 1 with a computed one, 20 segments each, round-robin,
1 µs apart; ``--rx-csum none`` (CHECKSUM_NONE) and ``--rss none`` (hash 0: every flow in GRO bucket 0). No pause
exceeds gap:3, so polls take the NAPI weight: 64, 64, 64, 64, 4 frames. The kernel rules (gro-spec §4.4, §1):

* without the fix, udp_gro_receive refuses every zero-checksum frame (csum_cnt 0, csum_valid 0: each goes up
  alone, never held), so the checksum-set flow is the bucket's only held packet and merges its 4 or 5 frames of
  each poll: 5 phys skbs for its 20 frames (frames 13, 26, … of the capture: 4 in each full poll, flushed at its
  end by napi_poll, the last 4 by napi_complete_done);
* with it, all 13 flows are held in bucket 0, which keeps MAX_GRO_SKBS (8) packets: each arrival of a 9th flow
  flushes the oldest (gro_flush_oldest), and 12 other flows arrive between two frames of one flow, so every
  frame goes up alone: 20 phys skbs for the checksum-set flow, 260 in all (without the fix: 240 + 5 = 245).

Measured on the running kernel (6.18, with the fix: ``gro-replay kernel``/``validate``, 260/260 skbs agree): the
post-fix side, 260 phys skbs, 20 of the checksum-set flow. Before, the verdict said "No flow loses phys-device
aggregation before the fix … (no skb is saved)" and the flow's "outer UDP checksum set: … affected: no" with no word
of its 5 → 20.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIX_SAMPLE, needs_kernel_backend

from gro_replay.capture.writer import PcapWriter
from gro_replay.cli import main
from gro_replay.packet.build import FrameSpec, build_flow
from gro_replay.report.schema import check

ARGS = ("--rx-csum", "none", "--rss", "none", "-q")
BASE = FrameSpec(timestamps=False, outer_csum="zero")


@pytest.fixture(scope="module")
def crowded(tmp_path_factory) -> str:
    specs = [
        replace(BASE, udp_sport=50000 + i, inner_src=f"10.1.0.{i + 1}", seq=1000 + 7919 * i)
        for i in range(12)
    ]
    specs.append(replace(BASE, outer_csum="computed", udp_sport=51000, inner_src="10.2.0.1", seq=3000))
    flows = [build_flow(s, [1386] * 20) for s in specs]
    path = tmp_path_factory.mktemp("crowded") / "crowded.pcap"
    with PcapWriter(str(path)) as w:
        for i, f in enumerate(f for group in zip(*flows, strict=True) for f in group):
            w.write(1_614_373_368_000_000_000 + i * 1000, f)
    return str(path)


def _run(*argv: str) -> str:
    r = CliRunner().invoke(main, list(argv), env={"COLUMNS": "4000"})
    assert r.exit_code == 0, r.output
    return r.stdout


def test_the_replay_says_what_the_fix_costs_the_crowded_flow(crowded):
    doc = json.loads(_run(crowded, *ARGS, "--format", "json"))
    check(doc, "replay")
    phys = {k["name"]: k["stages"]["phys"]["skbs_delivered"] for k in doc["kernels"]}
    assert phys == {"pre-fix": 245, "post-fix": 260}
    flow = {
        k["name"]: next(f["phys"]["skbs"] for f in k["flows"] if f["key"]["outer"]["udp_csum_zero"] is False)
        for k in doc["kernels"]
    }
    assert flow == {"pre-fix": 5, "post-fix": 20}
    v = doc["verdict"]
    assert (v["affected_flows"], v["flows_worse_with_fix"]) == (0, 1)
    said = (
        "With the fix, 1 flow loses aggregation it had without it: post-fix (v5.12) hands its frames up in 20 phys skbs, "
        "not 5: frames of other flows that the fix lets GRO hold take room in the same GRO lists (with the fix: "
        "bucket full: oldest held packet evicted (MAX_GRO_SKBS 8) [gro_flush_oldest:MAX_GRO_SKBS] "
        "×19; poll ended below budget: napi_complete_done flushed GRO [napi_complete_done:flush] ×1)."
    )
    assert said in v["text"]
    # the flow named, in JSON and a line of the text (newcomer41: only counted)
    (label,) = [f["flow"] for f in doc["kernels"][1]["flows"] if f["key"]["outer"]["udp_csum_zero"] is False]
    (worse,) = v["worse_with_fix"]
    assert (worse["flow"], worse["phys_skbs_without_fix"], worse["phys_skbs_with_fix"]) == (label, 5, 20)
    assert worse["with_fix"] == "post-fix"
    text = _run(crowded, *ARGS)
    assert f"  worse with the fix: {label}: phys skbs 5 → 20" in text.splitlines()
    assert said in " ".join(text.split())  # the text prints the same sentence
    assert text.splitlines()[-1].endswith(" affected_flows=0 flows_worse_with_fix=1")  # and SUMMARY the count


def test_explain_says_it_of_the_flow(crowded):
    doc = json.loads(_run("explain", crowded, *ARGS, "--format", "json"))
    (flow,) = [f for f in doc["flows"] if f["key"]["outer"]["udp_csum_zero"] is False]
    assert flow["verdict"]["affected"] is False
    assert flow["verdict"]["why"].startswith(
        "outer UDP checksum set: 89e5c58fc1e2 changes only frames whose outer UDP checksum is 0 (uh->check == 0); "
        "yet with the fix its phys skbs go 5 → 20: frames of other flows that the fix lets GRO hold take room in the "
        "same GRO lists (with the fix: bucket full: oldest held packet evicted (MAX_GRO_SKBS 8)"
    )
    assert doc["verdict"]["flows_worse_with_fix"] == 1
    assert doc["summary"].endswith(" outcome=not_affected flows_worse_with_fix=1")
    check(doc, "explain")


def test_measured_on_the_fix_alone_where_the_kernels_differ_in_more(crowded):
    # 5.4 → 6.18 changes 15 other switches: the fix is measured alone on 5.4+89e5c58fc1e2, and costs the same
    doc = json.loads(_run(crowded, *ARGS, "--kernel", "5.4", "--kernel", "6.18", "--format", "json"))
    v = doc["verdict"]
    assert v["compared"]["fix_alone"] == "5.4+89e5c58fc1e2"
    assert v["flows_worse_with_fix"] == 1
    assert [
        (w["with_fix"], w["phys_skbs_without_fix"], w["phys_skbs_with_fix"]) for w in v["worse_with_fix"]
    ] == [("5.4+89e5c58fc1e2", 5, 20)]
    text = _run(crowded, *ARGS, "--kernel", "5.4", "--kernel", "6.18").splitlines()
    assert any(
        ln.startswith("  worse with the fix: ")
        and ln.endswith(": with the fix alone (5.4+89e5c58fc1e2): phys skbs 5 → 20")
        for ln in text
    )
    assert (
        "With the fix, 1 flow loses aggregation it had without it: 5.4 (v5.4) with the fix alone" in v["text"]
    )


def test_none_where_nothing_measures_the_fix_and_0_where_nothing_crowds(crowded):
    # --fix: one kernel with the fix, nothing without it to measure the fix against
    assert (
        json.loads(_run(crowded, *ARGS, "--fix", "--format", "json"))["verdict"]["flows_worse_with_fix"]
        is None
    )
    # the fix sample's one flow: nothing to crowd it
    doc = json.loads(_run(str(FIX_SAMPLE), "-q", "--format", "json"))
    assert doc["verdict"]["flows_worse_with_fix"] == 0
    assert "loses aggregation it had without it" not in doc["verdict"]["text"]


def test_batch_carries_the_count(crowded, tmp_path):
    """``batch.json`` rows and the table carry the capture's ``verdict.flows_worse_with_fix`` (breaker63: a batch
    run said nothing of it): 1 for the crowded capture, 0 for the fix sample (a column only where some capture has
    one)."""
    import shutil

    d = tmp_path / "dir"
    d.mkdir()
    shutil.copy(crowded, d / "crowded.pcap")
    shutil.copy(FIX_SAMPLE, d / "fix.pcap")
    out = tmp_path / "out"
    r = CliRunner().invoke(
        main,
        ["batch", str(d), "-j", "1", "--out", str(out), "--rx-csum", "none", "--rss", "none"],
        env={"COLUMNS": "200"},
    )
    assert r.exit_code == 0, r.output
    rows = {Path(row["path"]).name: row for row in json.loads((out / "batch.json").read_text())["captures"]}
    assert {n: row["flows_worse_with_fix"] for n, row in rows.items()} == {"crowded.pcap": 1, "fix.pcap": 0}
    table = [ln.split() for ln in r.stdout.splitlines()]
    assert ["crowded.pcap", "260", "245", "245", "260", "260", "0", "1"] in table
    head = [ln.split() for ln in r.stdout.splitlines()[:8]]
    assert ["worse"] in [h[-1:] for h in head] and ["with"] in [h[-1:] for h in head]  # the column's header


def test_one_kernel_without_the_fix_says_what_the_fix_alone_would_cost(crowded):
    """``--no-fix``: the verdict on pre-fix alone measures the fix on its counterfactual (pre-fix with only
    89e5c58fc1e2 applied, replayed beside it), which costs the crowded flow the same 5 → 20 (breaker63: said
    nothing, "at no cost to aggregation" only)."""
    doc = json.loads(_run(crowded, *ARGS, "--no-fix", "--format", "json"))
    v = doc["verdict"]
    assert (v["affected_flows"], v["flows_worse_with_fix"]) == (0, 1)
    assert (
        "With the fix, 1 flow loses aggregation it had without it: pre-fix (v5.11) with the fix alone "
        "(pre-fix+89e5c58fc1e2) hands its frames up in 20 phys skbs, not 5: "
    ) in v["text"]
    assert (
        _run(crowded, *ARGS, "--no-fix").splitlines()[-1].endswith(" affected_flows=0 flows_worse_with_fix=1")
    )
    ex = json.loads(_run("explain", crowded, *ARGS, "--no-fix", "--format", "json"))
    (flow,) = [f for f in ex["flows"] if f["key"]["outer"]["udp_csum_zero"] is False]
    assert (
        "; yet with the fix alone (pre-fix+89e5c58fc1e2) its phys skbs go 5 → 20: " in flow["verdict"]["why"]
    )
    assert ex["summary"].endswith(" flows_worse_with_fix=1")


def test_a_flow_outside_the_tunnel_is_said_too(tmp_path):
    """The crowded flow sent without a tunnel (its inner frame alone, in the same GRO bucket: hash 0): the fix costs
    it the same 5 → 20 (the bucket is GRO's, whatever the protocol), and its why says so beside "not a UDP tunnel
    flow" (breaker64: counted, but no flow's line said it)."""
    specs = [
        replace(BASE, udp_sport=50000 + i, inner_src=f"10.1.0.{i + 1}", seq=1000 + 7919 * i)
        for i in range(12)
    ]
    flows = [build_flow(s, [1386] * 20) for s in specs]
    vxlan_headers = 14 + 20 + 8 + 8  # outer Ethernet, IPv4, UDP, VXLAN: the inner frame follows
    flows.append(
        [f[vxlan_headers:] for f in build_flow(replace(BASE, inner_src="10.2.0.1", seq=3000), [1386] * 20)]
    )
    path = tmp_path / "plain.pcap"
    with PcapWriter(str(path)) as w:
        for i, f in enumerate(f for group in zip(*flows, strict=True) for f in group):
            w.write(1_614_373_368_000_000_000 + i * 1000, f)
    ex = json.loads(_run("explain", str(path), *ARGS, "--format", "json"))
    assert ex["verdict"]["flows_worse_with_fix"] == 1
    (plain,) = [f for f in ex["flows"] if f["class"] == "not_tunnel"]
    assert plain["verdict"]["why"].startswith(
        "not a UDP tunnel flow: udp_gro_receive's tunnel gate never sees it; yet with the fix its phys skbs go "
        "5 → 20: frames of other flows that the fix lets GRO hold take room in the same GRO lists"
    )


def test_the_kernel_backend_measures_no_fix_cost(tmp_path):
    """The kernel backend replays the running kernel only (no fix-alone run beside it, no gate in its trace): null,
    whether the running kernel lacks the fix (5.10.0) or carries it (breaker64: 0 on 5.10.0)."""
    from test_kernel_no_payload import GRO_ON, _config, fake_oracle, own_acks_capture

    from gro_replay.report.document import document
    from gro_replay.validate import kernel_result, load_capture

    path = own_acks_capture(tmp_path / "acks.pcap")
    for release in ("5.10.0", "6.18.0"):
        oracle = replace(fake_oracle(GRO_ON, 9), kernel_release=release)
        cfg = _config()
        doc = document(kernel_result(load_capture(str(path), cfg), oracle, cfg), backend="kernel")
        assert doc["verdict"]["flows_worse_with_fix"] is None
        assert "flows_worse_with_fix" not in doc["summary"]


@needs_kernel_backend
def test_the_running_kernel_delivers_the_post_fix_side(crowded):
    """The running kernel carries the fix (6.18): its GRO hands the crowded capture up in 260 phys skbs, the
    checksum-set flow in 20, the post-fix side the replay gives (``gro-replay kernel``, --rx-csum none: the
    backend's veth has no RX hash, every flow in bucket 0; its polls take 64 frames, as gap:3 does here)."""
    doc = json.loads(_run("kernel", crowded, "--rx-csum", "none", "--format", "json", "-q"))
    (k,) = doc["kernels"]
    assert k["stages"]["phys"]["skbs_delivered"] == 260
    assert [f["phys"]["skbs"] for f in k["flows"] if f["key"]["outer"]["udp_csum_zero"] is False] == [20]


def _long_lived_beside_groups(path: Path, groups: int) -> None:
    """breaker65's capture: flow W (outer checksum set) first, then ``groups`` groups of 8 zero-checksum flows and
    1 checksum-set flow, 5 segments each, round-robin with a segment of W after each round; each group is followed by
    2.5 s in which W sends every 0.5 s (never silent for 1 s). Under --flow-timeout 1 the groups' flows retire and
    are judged before W, which stays live to the end."""
    w_frames = build_flow(
        replace(BASE, outer_csum="computed", udp_sport=39999, inner_src="10.250.0.1", seq=5000),
        [1386] * (10 * groups + 1),
    )
    t, wi = 1_614_373_368_000_000_000, 0
    with PcapWriter(str(path)) as w:
        w.write(t, w_frames[wi])
        wi, t = wi + 1, t + 1000
        for g in range(groups):
            specs = [
                replace(
                    BASE, udp_sport=40000 + g * 16 + i, inner_src=f"10.{g + 1}.0.{i + 1}", seq=1000 + 7919 * i
                )
                for i in range(8)
            ]
            specs.append(
                replace(
                    BASE,
                    outer_csum="computed",
                    udp_sport=40015 + g * 16,
                    inner_src=f"10.{g + 1}.9.1",
                    seq=3000,
                )
            )
            for rnd in zip(*(build_flow(s, [1386] * 5) for s in specs), strict=True):
                for f in rnd:
                    w.write(t, f)
                    t += 1000
                w.write(t, w_frames[wi])
                wi, t = wi + 1, t + 1000
            for _ in range(5):
                t += 500_000_000
                w.write(t, w_frames[wi])
                wi += 1
            t += 500_000_000


def test_the_flows_named_are_the_lowest_ids_whichever_is_judged_first(tmp_path):
    """More flows worse with the fix than are named (20), flows retired and judged before a long-lived one (flow 0):
    the named are the 20 lowest ids of those explain says it of (breaker65: flow 0 was left out), the count is every
    one, and the text's last line counts the rest."""
    path = tmp_path / "groups.pcap"
    _long_lived_beside_groups(path, 22)
    args = (str(path), *ARGS, "--flow-timeout", "1")
    v = json.loads(_run(*args, "--format", "json"))["verdict"]
    ex = json.loads(_run("explain", *args, "--format", "json"))
    said = sorted(
        f["id"] for f in ex["flows"] if "; yet with the fix its phys skbs go " in f["verdict"]["why"]
    )
    assert v["flows_worse_with_fix"] == len(said) > 20
    assert [w["id"] for w in v["worse_with_fix"]] == said[:20]
    assert said[0] == 0
    more = len(said) - 10  # the text names at most 10 (as it does affected flows)
    assert (
        f"  … and {more} more flows worse with the fix (explain --limit 0 lists them, each with its phys skbs without "
        "and with the fix)"
    ) in _run(*args).splitlines()
