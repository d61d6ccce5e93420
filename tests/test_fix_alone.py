"""Compare mode across releases that differ in more than the fix judges the fix alone (report/verdict/facts.py
``fix_counterfactuals``, ``FlowVerdict.fix_alone``).

``--kernel 5.10 --kernel 6.18`` compares two kernels that differ in 89e5c58fc1e2 and in twelve other switches; one
of those, 21f7484220ac (v6.18, ``inet_gro_checks_outer_id``), stops 6.18's phys device from merging tunnelled
segments whose outer IPv4 IDs are neither fixed nor incrementing. Judging the fix by 6.18's counts would call a
flow the zero-checksum bug costs aggregation on 5.10 "no gain". The replay therefore runs 5.10 a second time with
only the fix applied (``5.10+89e5c58fc1e2``), hidden from every output but the verdict, and the verdict — its
outcome, counts, sentences, JSON — measures the fix against it, while the table keeps each kernel's own counts.
"""

from __future__ import annotations

import io
import json

import pytest
from conftest import ROOT, SAMPLES, shared_capture_paths

from gro_replay.kernel.model import K_4_19, K_5_4, K_5_10, K_5_11, K_5_12, K_6_1, K_6_18
from gro_replay.report.document import document
from gro_replay.report.trace import TraceWriter
from gro_replay.report.verdict import verdict_of
from gro_replay.sim import ReplayConfig, replay_capture

TRIAGE = ROOT.parent / "shared" / "triage"
SHARED_ID = TRIAGE / "two-flows-shared-outer-id.pcap"


def _captures() -> list:
    return sorted(SAMPLES.glob("*.pcap")) + shared_capture_paths() + sorted(TRIAGE.glob("*.pcap"))


def _judged(path, kernels, rx_csum: str) -> tuple[int, list[tuple[int, str]], int, int]:
    r = replay_capture(str(path), ReplayConfig(kernels=kernels, rx_csum=rx_csum))
    v = verdict_of(r)
    doc = document(r)["verdict"]
    flows = [(f.fid, f.outcome) for f in v.flows]
    return doc["affected_flows"], flows, doc["stack_traversals_saved"], doc["tunnel_skbs_saved"]


@pytest.mark.parametrize("path", _captures(), ids=lambda p: p.name)
@pytest.mark.parametrize("rx_csum", ["none", "unnecessary"])
@pytest.mark.parametrize(("pre", "post"), [(K_5_10, K_6_18), (K_4_19, K_6_1)], ids=["5.10-6.18", "4.19-6.1"])
def test_distant_releases_judge_the_fix_as_the_adjacent_pair(path, rx_csum, pre, post):
    """Whatever kernel with the fix it is compared with, a kernel without it is judged by what the fix alone
    changes: every flow's outcome, the affected count and the skbs saved equal those of the comparison with
    the same kernel plus 89e5c58fc1e2 and nothing else (the counterfactual) — and the single-kernel verdict's."""
    from dataclasses import replace

    alone = replace(pre, name=pre.name + "-fixed", udp_tunnel_gate_checks_uh_check=True)
    distant = _judged(path, (pre, post), rx_csum)
    assert distant == _judged(path, (pre, alone), rx_csum)
    assert distant[:2] == _judged(path, (pre,), rx_csum)[:2]


@pytest.mark.skipif(not SHARED_ID.exists(), reason="../shared/triage not present")
def test_two_flows_shared_outer_id_between_5_10_and_6_18():
    """../shared/triage/two-flows-shared-outer-id.pcap: 2 VXLAN flows × 2 frames, outer IDs 0..3 from one counter,
    outer checksum 0. Its README's kernel truth: 6.18 delivers 4 single phys skbs (it compares the outer IP ID,
    21f7484220ac), 5.12 merges each flow (2 phys skbs). 5.10 without the fix refuses all 4 at the gate (gro-spec
    §4.7 row 3, --rx-csum unnecessary): 4 phys skbs; with the fix alone it merges each flow as 5.12 does. So both
    flows are affected and the fix saves 2 phys skbs, while 6.18's own column shows 4."""
    r = replay_capture(str(SHARED_ID), ReplayConfig(kernels=(K_5_10, K_6_18)))
    doc = document(r)
    v = doc["verdict"]
    assert v["affected_flows"] == 2 and v["stack_traversals_saved"] == 2 and v["outcome"] == "affected"
    assert v["compared"]["fix_alone"] == "5.10+89e5c58fc1e2"
    assert "inet_gro_checks_outer_id" in v["compared"]["other_changes"]
    # the sentence names those changes by commit, as `gro-replay kernels` does: the 13 released switches between
    # v5.10 and v6.18 in kernel/model.py SWITCH_COMMITS (v5.11 8dc1c444df19 … v6.18 21f7484220ac, f095a358faf2)
    assert (
        "5.10 → 6.18 also changes 13 other modelled commits that can change counts (8dc1c444df19, "
        in v["text"]
    )
    assert "21f7484220ac, f095a358faf2, a9888628cb2c; gro-replay kernels names them)" in v["text"]
    assert [(k["name"], k["stages"]["phys"]["skbs_delivered"]) for k in doc["kernels"]] == [
        ("5.10", 4),
        ("6.18", 4),
    ]
    rows = doc["comparison"]["affected_flows"]
    assert [
        (x["phys_skbs_pre"], x["phys_skbs_post"], x["phys_skbs_fix_alone"], x["stack_traversals_saved"])
        for x in rows
    ] == [
        (2, 2, 1, 1),
        (2, 2, 1, 1),
    ]
    assert "measured on 5.10 with only 89e5c58fc1e2 applied" in v["text"]
    assert "6.18 (v6.18) does not merge 2 tunnelled TCP flows at the phys device" in v["text"]
    assert doc["summary"].endswith(" affected_flows=2 fix_alone=5.10+89e5c58fc1e2")


@pytest.mark.skipif(not SHARED_ID.exists(), reason="../shared/triage not present")
def test_the_fix_alone_is_seen_by_the_verdict_alone():
    """The counterfactual runs only where the compared kernels differ in more than the fix, and shows in no output
    but the verdict: not the document's kernels, not the trace (the 4 frames once per shown kernel)."""
    out = io.StringIO()
    r = replay_capture(str(SHARED_ID), ReplayConfig(kernels=(K_5_10, K_6_18)), TraceWriter(out, tag=True))
    assert [k.name for k in r.counterfactuals] == ["5.10+89e5c58fc1e2"]
    assert "89e5c58fc1e2" not in out.getvalue()
    assert "+89e5c58fc1e2" not in json.dumps(document(r)["kernels"])
    for kernels in ((K_5_11, K_5_12), (K_5_4,)):
        r = replay_capture(str(SHARED_ID), ReplayConfig(kernels=kernels))
        doc = document(r)["verdict"]
        if len(kernels) == 2:  # 5.11 and 5.12 differ in the fix alone: 5.12 is the fix's side
            assert r.counterfactuals == [] and doc["compared"]["fix_alone"] is None
        assert doc["affected_flows"] == 2


def test_no_gain_names_what_keeps_the_frames_apart_with_the_fix():
    """One kernel without the fix, a refusal that costs nothing because the fix would not merge either: the
    sentence names why, from the counterfactual's own end reasons. ../shared/triage/bad-inner-csum-3frames.pcap's
    kind built here: 3 segments with outer checksum 0, the second with a bad inner TCP checksum. Its kernel truth
    (the triage README, measured on 6.18 with --rx-csum none): the bad frame goes up alone (tcp4_gro_receive
    flushes a segment whose checksum fails, gro-spec §5) and frames 1 and 3 are not merged (tcp_gro_receive: the
    third does not continue the first, a sequence gap)."""
    from gro_replay.packet.build import FrameSpec, build_flow
    from gro_replay.sim import replay_frames

    frames = build_flow(FrameSpec(outer_csum="zero"), [1000] * 3)
    bad = bytearray(frames[1])
    bad[-1] ^= 0xFF  # a payload byte: the inner TCP checksum no longer verifies
    frames[1] = bytes(bad)
    r = replay_frames(
        [(1000 * i, f) for i, f in enumerate(frames)], ReplayConfig(kernels=(K_5_4,), rx_csum="none")
    )
    v = verdict_of(r)
    (flow,) = v.flows
    for text in (v.text, flow.why):
        assert "with the fix there this flow's phys skbs end by:" in text
        assert "[tcp4_gro_receive:checksum_bad] ×1" in text and "[tcp_gro_receive:seq_gap] ×1" in text
    assert flow.outcome == "refused_no_gain" and document(r)["verdict"]["affected_flows"] == 0


def test_refused_without_gain_beside_a_kernel_that_merges_for_another_reason():
    """A flow the fix alone does not merge further, beside a kernel with the fix that merges it for another reason:
    8 segments with outer checksum 0 and a fixed inner IPv4 ID without DF. Before 6.18 a fixed ID needs DF set
    (gro-spec §3.3: "fixed" is DF set and the same ID), so 5.10 with the fix alone ends an skb at every frame
    (8 phys skbs, as the gate's refusals gave, and 8 at the tunnel device's gro_cells, whose GRO applies the same
    rule); 6.18 drops the DF requirement (f095a358faf2,
    ``inet_gro_fixedid_without_df``) and merges all 8 (1 phys skb). The flow is not affected by the zero-checksum
    bug, and its sentence must not say it cannot be aggregated: 6.18's column shows it aggregated."""
    from gro_replay.packet.build import FrameSpec, build_flow
    from gro_replay.sim import replay_frames

    frames = build_flow(FrameSpec(outer_csum="zero", df=False), [1000] * 8, id_step=0)
    r = replay_frames([(1000 * i, f) for i, f in enumerate(frames)], ReplayConfig(kernels=(K_5_10, K_6_18)))
    (flow,) = verdict_of(r).flows
    assert flow.outcome == "refused_no_gain" and document(r)["verdict"]["affected_flows"] == 0
    assert [k.skbs["phys"] for k in flow.kernels] == [8, 1] and flow.fix_alone.skbs["phys"] == 8
    assert (
        "phys skbs 8 → 8, tunnel skbs 8 → 8): the zero-checksum gate is not what keeps them apart" in flow.why
    )
    assert "6.18: phys skbs 1, tunnel skbs 1" in flow.why and "cannot" not in flow.why


def test_one_kernel_says_what_the_fix_measured_saves():
    """One kernel without the fix runs beside its counterfactual, so its sentence says what the fix saves instead of
    asking for another run: the fix sample's 17 frames, two polls of the default gap:3 model, go up in 2 phys skbs
    with the fix (gro-spec §4.5; README's first command shows 17 → 2), 15 fewer than 5.10's 17."""
    from conftest import FIX_SAMPLE

    r = replay_capture(str(FIX_SAMPLE), ReplayConfig(kernels=(K_5_10,)))
    v = verdict_of(r)
    measured = (
        "89e5c58fc1e2 applied (measured: the same kernel model replayed beside it) {} go up in 15 fewer phys skbs "
        "(each one IP/UDP/tunnel decapsulation)"
    )
    # the verdict's own sentence; the flow's why, a clause after "udp_gro_receive refuses …; "
    assert f"With {measured.format('the affected flows')}." in v.text
    assert f"; with {measured.format('they')};" in v.flows[0].why
    assert "to see what the fix saves" not in v.text


def replay_frames_of(frames, kernels):
    from gro_replay.sim import replay_frames

    return replay_frames(frames, ReplayConfig(kernels=kernels))


def _shared_outer_id_frames() -> list[tuple[int, bytes]]:
    """../shared/triage/two-flows-shared-outer-id.pcap's shape built here: 2 VXLAN flows × 2 contiguous 1000-byte
    segments, outer checksum 0, sent round-robin A B A B 1 µs apart (one poll of the default gap:3 model), outer
    IPv4 IDs from one counter (A 0, 2; B 1, 3)."""
    from dataclasses import replace

    from gro_replay.packet.build import FrameSpec, build_frame, flow_specs

    a = FrameSpec(outer_csum="zero", sport=40000, udp_sport=49152)
    b = replace(a, sport=40001, udp_sport=49153, inner_src="192.168.1.3")
    sa, sb = (flow_specs(s, [1000, 1000]) for s in (a, b))
    order = [(sa[0], 0), (sb[0], 1), (sa[1], 2), (sb[1], 3)]
    return [(1000 * i, build_frame(replace(s, outer_ip_id=oid))) for i, (s, oid) in enumerate(order)]


def test_the_sentence_says_first_that_it_measures_the_fix_alone_and_how_the_columns_differ():
    """5.10 (gate refuses all 4 frames, --rx-csum unnecessary: gro-spec §4.7 row 3) delivers 4 phys skbs; 6.18
    compares the outer IPv4 ID (21f7484220ac) and each flow's IDs step by 2: 4 phys skbs too, the table's Δ 0; 5.10
    with the fix alone compares no outer ID (before 21f7484220ac) and merges each flow: 2. The tunnel device
    sees the inner headers only (IDs +1 per flow): 1 skb per flow in all three. So the sentence must say before its
    "the fix alone saves 2" that it measures 5.10+89e5c58fc1e2, and that between 5.10 and 6.18 the phys skbs do not
    change: the fix alone saves 2, the other commits add 2 (no such note for the tunnel stage, which they do not
    change); the SUMMARY line names the counterfactual, and each affected flow's line gives the counterfactual's
    counts as such, the other kernel's after them."""
    from gro_replay.report.table import verdict_lines

    r = replay_frames_of(_shared_outer_id_frames(), (K_5_10, K_6_18))
    doc = document(r)
    text = doc["verdict"]["text"]
    assert text.startswith(
        "What the fix saves is measured on 5.10 with only 89e5c58fc1e2 applied (5.10+89e5c58fc1e2, run beside it), "
        "not between the table's columns: 5.10 → 6.18 also changes 13 other modelled commits that can "
    )
    between = (
        "; between 5.10 and 6.18 the phys skbs do not change (4 → 4): the fix alone saves 2 (5.10+89e5c58fc1e2 "
        "delivers 2), the other commits add 2. Before the fix, 2 of 2 tunnelled TCP flows lose"
    )
    assert between in text and "the tunnel skbs" not in text
    assert text.index(between) < text.index("The fix alone saves 2 skb traversals")
    assert [(k["name"], k["stages"]["phys"]["skbs_delivered"]) for k in doc["kernels"]] == [
        ("5.10", 4),
        ("6.18", 4),
    ]
    assert doc["summary"].endswith(" affected_flows=2 fix_alone=5.10+89e5c58fc1e2")
    flows = [x for x in verdict_lines(r) if x.startswith("  affected: ")]
    assert len(flows) == 2 and all(
        x.endswith(
            ": with the fix alone (5.10+89e5c58fc1e2): phys skbs 2 → 1; 6.18: phys skbs 2, tunnel skbs 1"
        )
        for x in flows
    )


def test_no_between_note_where_the_newer_kernel_counts_what_the_fix_alone_does():
    """One flow of 8 contiguous segments, outer checksum 0, IDs incrementing: 5.10 refuses each at the gate (8 phys
    skbs); with the fix alone, and on 6.18, the phys device merges all 8 (1 skb). The columns differ by what the fix
    alone changes: the lead says what is measured, no "between" note."""
    from gro_replay.packet.build import FrameSpec, build_flow

    frames = build_flow(FrameSpec(outer_csum="zero"), [1000] * 8)
    r = replay_frames_of([(1000 * i, f) for i, f in enumerate(frames)], (K_5_10, K_6_18))
    text = verdict_of(r).text
    assert text.startswith("What the fix saves is measured on 5.10 with only 89e5c58fc1e2 applied")
    assert "between 5.10 and 6.18" not in text and "The fix alone saves 7 skb traversals" in text
    assert [k.stages["phys"].skbs for k in (*r.kernels, *r.counterfactuals)] == [8, 1, 1]
