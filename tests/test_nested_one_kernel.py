"""One kernel's verdict on a tunnel inside the tunnel agrees with compare mode (report/verdict/: FlowVerdict.costly).

A single-kernel verdict infers what the fixed kernel would do. For VXLAN in VXLAN the phys device merges nothing in
any kernel: before the fix a zero outer UDP checksum with CHECKSUM_UNNECESSARY level 0 is refused by the gate
(gro-spec §4.4, §4.7 row 3); after it (§4.5) udp_gro_receive passes the outer header and stops at the nested one
(§4.4: NAPI_GRO_CB(skb)->encap_mark already set, ``udp_gro_receive:encap_mark``). Only the nested header's refusal
at the tunnel device's gro_cells (its zero checksum, level 0 again after udp_rcv consumed one, §6.1) costs
aggregation. Compare mode measures both kernels; it is the reference for what one kernel must conclude.
"""

from __future__ import annotations

import itertools
import json

import pytest
from test_verdict import _LACKS_511, _NESTED_PHYS, _nested_vxlan

from gro_replay.kernel.model import K_5_4, K_5_11, K_5_12, K_6_18
from gro_replay.packet.build import FrameSpec, build_flow
from gro_replay.report.document import document
from gro_replay.report.verdict import verdict_of
from gro_replay.sim import ReplayConfig, replay_frames


def _nested(j: int, outer_zero: bool, nested_zero: bool) -> list[bytes]:
    """4 contiguous inner TCP segments in VXLAN (nested UDP checksum 0 or computed) in VXLAN (outer 0 or computed)."""
    csum = "zero" if nested_zero else "computed"
    inner = build_flow(FrameSpec(outer_csum=csum, udp_sport=41000 + j), [1000] * 4)
    return [_nested_vxlan(f, 100 + 10 * j + i, computed=not outer_zero) for i, f in enumerate(inner)]


def _frames(streams: list[list[bytes]]) -> list[tuple[int, bytes]]:
    return [(1000 * (i * len(streams) + j), s[i]) for i in range(4) for j, s in enumerate(streams)]


def _plain(j: int) -> list[bytes]:
    """4 contiguous inner TCP segments in plain VXLAN with outer UDP checksum 0 (§4.7 row 3 before the fix)."""
    return build_flow(FrameSpec(outer_csum="zero", udp_sport=42000 + j), [1000] * 4)


def _frames_of(frames: list[bytes]) -> list[tuple[int, bytes]]:
    return [(1000 * i, f) for i, f in enumerate(frames)]


def _judged(frames, kernels, rx_csum_none: bool = False, **kw) -> tuple[int, list[str], str]:
    rx = "none" if rx_csum_none else "unnecessary"
    result = replay_frames(frames, ReplayConfig(kernels=kernels, rx_csum=rx, **kw))
    v = verdict_of(result)
    doc = document(result)
    # the count the SUMMARY line carries, followed by the counterfactual it is measured on where one ran
    compared = doc["verdict"]["compared"] or {}
    alone = f" fix_alone={compared['fix_alone']}" if compared.get("fix_alone") else ""
    assert doc["summary"].endswith(f" affected_flows={doc['verdict']['affected_flows']}{alone}")
    return doc["verdict"]["affected_flows"], [f.outcome for f in v.flows], doc["verdict"]["outcome"]


_COMBOS = list(itertools.product((True, False), (True, False), (False, True), (True, False)))


@pytest.mark.parametrize(("pre", "post"), [(K_5_11, K_5_12), (K_5_4, K_6_18)], ids=["5.11-5.12", "5.4-6.18"])
@pytest.mark.parametrize(("outer_zero", "nested_zero", "plain", "tunnel_gro"), _COMBOS)
def test_one_kernel_agrees_with_compare_mode(pre, post, outer_zero, nested_zero, plain, tunnel_gro):
    """Every nested combination (outer checksum zero/set × nested zero/set, beside a plain zero-checksum VXLAN flow
    or not, GRO on or off on the tunnel device): the kernel without the fix alone counts the affected flows, and
    judges each flow, as compare mode with that kernel as its pre-fix side does. A phys refusal of a nested flow
    costs nothing (§4.4 encap_mark after §4.5); its nested header's refusal at gro_cells (§6.1, §4.7 row 3) is
    affected only while GRO runs there; the plain flow's phys refusal is affected (§4.7 row 3)."""
    streams = ([_plain(0)] if plain else []) + [_nested(1, outer_zero, nested_zero)]
    kw = {} if tunnel_gro else {"gro": {"tunnel": False}}
    one = _judged(_frames(streams), (pre,), **kw)
    both = _judged(_frames(streams), (pre, post), **kw)
    assert one == both
    nested_affected = nested_zero and tunnel_gro  # whatever the outer checksum
    assert one[0] == int(plain) + int(nested_affected)


def test_five_flow_mix_with_tunnel_gro_off():
    """The tester's mix (plain zero, nested set/zero, zero/set, zero/zero, set/set) with --gro tunnel=off: only the
    plain flow is affected (§4.7 row 3); the nested ones refused at the phys device cost nothing (§4.4), and with
    no GRO at the tunnel device no nested refusal is met there. One kernel: 1, as compare mode."""
    streams = [_plain(0), _nested(1, False, True), _nested(2, True, False), _nested(3, True, True)]
    streams.append(_nested(4, False, False))
    kw = {"gro": {"tunnel": False}}
    one = _judged(_frames(streams), (K_5_11,), **kw)
    assert one == _judged(_frames(streams), (K_5_11, K_5_12), **kw)
    assert one[0] == 1
    assert one[1] == ["affected", "not_affected", "refused_no_gain", "refused_no_gain", "not_affected"]


_COSTLESS = (
    "udp_gro_receive refuses 4 frames for a zero UDP checksum at no cost to aggregation: 1 flow carrying a "
    f"tunnel inside the tunnel, 4 frames ({_NESTED_PHYS})."
)
_FLOW_COSTLESS = (
    f"{_LACKS_511}, but this flow is not affected: udp_gro_receive refuses 4 of its 4 frames at the phys device "
    f"(UDP checksum 0, csum_cnt 0, csum_valid 0), which costs nothing: {_NESTED_PHYS}"
)


def _write(tmp_path, streams) -> str:
    from gro_replay.capture.writer import PcapWriter

    path = tmp_path / "c.pcap"
    with PcapWriter(path) as w:
        for t, f in _frames(streams):
            w.write(1_614_373_368_000_000_000 + t, f)
    return str(path)


@pytest.mark.parametrize("flag", [["--no-fix"], ["--kernel", "5.4"]])
def test_outer_zero_nested_set_is_not_affected_in_one_kernel(tmp_path, runner, flag):
    """The repro (/work/repro/nested-vxlan-outer-zero-inner-set.pcap): outer checksum 0, nested set, 4 frames. The
    pre-fix gate refuses the outer header at the phys device (§4.7 row 3), but the fix would stop at the nested
    header (§4.4 encap_mark), and the nested header passes at gro_cells (computed checksum, §4.7 row 4): not affected
    in the sentence, the JSON, SUMMARY and explain, as compare mode says."""
    from gro_replay.cli import main

    cap = _write(tmp_path, [_nested(0, True, False)])
    r = runner.invoke(main, [cap, *flag, "--json", "-", "-q"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    v = doc["verdict"]
    assert (v["outcome"], v["affected"], v["affected_flows"], v["frames_refused"]) == (
        "not_affected",
        False,
        0,
        4,
    )
    assert doc["summary"].endswith(" affected_flows=0")
    if flag == ["--no-fix"]:
        assert v["text"] == f"{_LACKS_511}, but is not affected here: {_COSTLESS}", v["text"]
    else:
        assert v["text"].endswith(f", but is not affected here: {_COSTLESS}"), v["text"]
    assert not any(w in v["text"] for w in ("lose phys-device aggregation", "loses phys-device aggregation"))
    r = runner.invoke(main, ["explain", cap, *flag, "--format", "json"])
    ex = json.loads(r.stdout)
    (flow,) = ex["flows"]
    assert (flow["verdict"]["affected"], flow["verdict"]["outcome"]) == (False, "refused_no_gain")
    assert ex["verdict"]["text"].startswith("affected: no: ")
    if flag == ["--no-fix"]:
        assert flow["verdict"]["why"] == _FLOW_COSTLESS


def test_nested_zero_beside_plain_names_each_stage_once(tmp_path, runner):
    """The repro nested-vxlan-zero-plus-plain.pcap with --no-fix: the plain flow loses phys-device aggregation
    (§4.7 row 3); the nested flow (both checksums 0) loses aggregation at gro_cells only (§6.1, row 3 again): its
    phys refusal costs nothing (§4.4 encap_mark after §4.5). 2 affected flows, as compare mode counts (phys 1, tunnel
    1), not "2 of 2 lose phys-device aggregation"."""
    from gro_replay.cli import main

    cap = _write(tmp_path, [_nested(0, True, True), _plain(1)])
    r = runner.invoke(main, [cap, "--no-fix", "--json", "-", "-q"])
    v = json.loads(r.stdout)["verdict"]
    assert (v["outcome"], v["affected_flows"]) == ("affected", 2)
    assert (
        "1 of 2 tunnelled flows loses phys-device aggregation: udp_gro_receive refuses 4 frames at the phys device."
        in v["text"]
    )
    assert (
        " 1 other tunnelled flow loses aggregation at the tunnel device's gro_cells: udp_gro_receive refuses 4 "
        "frames there (a tunnel inside the tunnel whose UDP checksum is 0, csum_cnt 0, csum_valid 0). At the "
        f"phys device it refuses their outer header too, which costs nothing: {_NESTED_PHYS}. "
    ) in v["text"], v["text"]
    r = runner.invoke(main, [cap, "--json", "-", "-q"])
    assert json.loads(r.stdout)["verdict"]["affected_flows"] == 2


def test_costless_beside_lost_flow(tmp_path, runner):
    """The repro nested-vxlan-outer-zero-inner-set-plus-v6zero.pcap: the nested flow's phys refusal costs nothing
    (§4.4), the VXLAN/IPv6 zero-checksum flow is lost (__udp6_lib_rcv, §6.1): not affected, and the sentence names
    both kinds of refused frames."""
    from gro_replay.cli import main

    v6 = build_flow(FrameSpec(outer_csum="zero", outer_ipv6=True, udp_sport=43001), [1000] * 4)
    cap = _write(tmp_path, [_nested(0, True, False), v6])
    r = runner.invoke(main, [cap, "--no-fix", "--json", "-", "-q"])
    v = json.loads(r.stdout)["verdict"]
    assert (v["outcome"], v["affected_flows"], v["lost_flows"], v["frames_refused"]) == (
        "not_affected",
        0,
        1,
        8,
    )
    assert v["text"].startswith(
        f"{_LACKS_511}, but is not affected here: {_COSTLESS} It also refuses 4 frames of flows lost before "
        "decapsulation (below), whose frames never reach the host whatever GRO does. Lost on the way (pre-fix): "
    ), v["text"]


def _fragments(j: int) -> list[bytes]:
    """4 inner IPv4 fragments (offset 800 bytes) in plain VXLAN with outer UDP checksum 0: refused at the phys device by the
    gate before the fix (§4.7 row 3), flushed by inet_gro_receive after it (a fragment, §3.1): merged in no kernel."""
    return build_flow(FrameSpec(outer_csum="zero", udp_sport=43000 + j, frag_off=100), [1000] * 4)


@pytest.mark.parametrize(("pre", "post"), [(K_5_11, K_5_12), (K_5_4, K_6_18)], ids=["5.11-5.12", "5.4-6.18"])
def test_refusals_no_kernel_would_merge_cost_nothing_with_one_kernel(pre, post):
    """Beside a plain zero-checksum TCP flow (affected, §4.7 row 3): a flow of inner IPv4 fragments and a TCP flow
    of one frame, both refused by the gate at the phys device before the fix. After it the fragments flush in
    inet_gro_receive (§3.1) and the single frame has nothing to merge with: compare mode measures no gain for
    either (refused_no_gain), and the kernel without the fix alone concludes the same."""
    lone = build_flow(FrameSpec(outer_csum="zero", udp_sport=44000), [1000])
    streams = [_plain(0), _fragments(1)]
    frames = _frames(streams) + [(9000, lone[0])]
    one = _judged(frames, (pre,))
    assert one == _judged(frames, (pre, post))
    assert one[0] == 1 and one[1] == ["affected", "refused_no_gain", "refused_no_gain"]


# -- measured: the counterfactual kernels (report/verdict/facts.py fix_counterfactuals) ----------------------------
def _captures() -> list:
    from conftest import ROOT, SAMPLES, shared_capture_paths

    triage = ROOT.parent / "shared" / "triage"
    return sorted(SAMPLES.glob("*.pcap")) + shared_capture_paths() + sorted(triage.glob("*.pcap"))


@pytest.mark.parametrize("path", _captures(), ids=lambda p: p.name)
@pytest.mark.parametrize("rx_csum", ["none", "unnecessary"])
def test_one_kernel_judges_every_capture_as_compare_mode(path, rx_csum):
    """What the fix changes is measured with one kernel too: a replay of one kernel without 89e5c58fc1e2 runs the
    same model with the fix applied beside it (hidden from every output but the verdict), so every flow's outcome
    and the count of affected flows equal compare mode's with that kernel as the pre-fix side — also where the
    fixed kernel would not merge for another reason (the bad-inner-csum triage capture: a bad checksum and a
    sequence gap; geneve.pcap; the outer DF difference), which no rule of the gate alone can tell."""
    from gro_replay.sim import replay_capture

    def judged(kernels):
        r = replay_capture(str(path), ReplayConfig(kernels=kernels, rx_csum=rx_csum))
        v = verdict_of(r)
        return document(r)["verdict"]["affected_flows"], [(f.fid, f.outcome) for f in v.flows]

    assert judged((K_5_11,)) == judged((K_5_11, K_5_12))


def test_the_counterfactual_is_seen_by_the_verdict_alone(tmp_path):
    """The counterfactual kernel (``pre-fix+89e5c58fc1e2``) runs only when no kernel with the fix does, and no
    output shows it: not the document's kernels, not the trace, not --write-pcap (one file, the pre-fix kernel's)."""
    import io

    from conftest import FIX_SAMPLE

    from gro_replay.report.trace import TraceWriter
    from gro_replay.sim import replay_capture

    out = io.StringIO()
    r = replay_capture(str(FIX_SAMPLE), ReplayConfig(kernels=(K_5_11,)), TraceWriter(out, tag=True))
    (cf,) = r.counterfactuals
    assert [k.name for k in r.kernels] == ["pre-fix"] and cf.name == "pre-fix+89e5c58fc1e2"
    # the fix sample's 17 frames, a pause after the 10th (Makefile samples: --pause-every 10 --pause-us 10), two
    # polls of the default gap:3 model: the counterfactual merges each poll's at the phys device (gro-spec §4.5)
    assert cf.stages["phys"].skbs == 2 and r.kernels[0].stages["phys"].skbs == 17
    assert "89e5c58fc1e2" not in out.getvalue() and out.getvalue().count("dev=eth0") == 17
    doc = document(r)
    assert [k["name"] for k in doc["kernels"]] == ["pre-fix"]
    both = replay_capture(str(FIX_SAMPLE), ReplayConfig(kernels=(K_5_11, K_5_12)))
    assert both.counterfactuals == []
    fixed = replay_capture(str(FIX_SAMPLE), ReplayConfig(kernels=(K_6_18,)))
    assert fixed.counterfactuals == []


def test_a_flow_the_fix_would_not_merge_is_not_affected_with_one_kernel():
    """../shared/triage/bad-inner-csum-3frames.pcap's kind, built here: 3 segments of one zero-checksum flow, the
    second with a bad inner TCP checksum (it goes up alone, tcp4_gro_receive) so the third does not continue the
    first (sequence gap, tcp_gro_receive): before the fix the gate refuses all 3 (§4.7 row 3), after it none is
    merged either. One kernel: not affected, measured."""
    frames = build_flow(FrameSpec(outer_csum="zero"), [1000] * 3)
    bad = bytearray(frames[1])
    bad[-1] ^= 0xFF  # a payload byte: the inner TCP checksum no longer verifies
    frames[1] = bytes(bad)
    one = _judged(_frames_of(frames), (K_5_4,), rx_csum_none=True)
    assert one == _judged(_frames_of(frames), (K_5_4, K_6_18), rx_csum_none=True)
    assert one[:2] == (0, ["refused_no_gain"])


def test_several_kernels_without_the_fix_each_measured_the_capture_judged_by_the_newest():
    """4.19 and 5.11, neither with the fix (two models: 5.11 has 8dc1c444df19; 4.19 and 5.10 are one model, which
    ReplayConfig refuses): each runs beside its own counterfactual, and the capture's verdict judges the newest
    (5.11), as compare mode with 5.12 beside them does. The bad-checksum flow (a sequence gap behind
    it: no kernel merges it, tcp4_gro_receive / tcp_gro_receive) is affected in neither; the plain zero-checksum
    flow is (gro-spec §4.7 row 3). Before, 4.19 was judged by the gate's rule alone and counted the first."""
    from gro_replay.kernel.model import K_4_19, K_5_11

    frames = build_flow(FrameSpec(outer_csum="zero", udp_sport=45000), [1000] * 3)
    bad = bytearray(frames[1])
    bad[-1] ^= 0xFF
    frames[1] = bytes(bad)
    streams = [frames + [frames[2]], _plain(0)[:4]]  # 4 frames each for _frames
    both = (K_4_19, K_5_11)
    one = _judged(_frames(streams), both, rx_csum_none=True)
    assert one == _judged(_frames(streams), (*both, K_5_12), rx_csum_none=True)
    assert one[:2] == (1, ["refused_no_gain", "affected"])
    result = replay_frames(_frames(streams), ReplayConfig(kernels=both, rx_csum="none"))
    assert [k.name for k in result.counterfactuals] == ["4.19+89e5c58fc1e2", "pre-fix+89e5c58fc1e2"]


def test_the_counterfactual_polls_are_not_counted():
    """With --gro-flush-timeout each kernel polls on its own schedule; the counterfactual's polls are not the
    replay's: the engine counts the same polls with and without it (the fix sample: 4)."""
    from conftest import FIX_SAMPLE

    from gro_replay.sim import replay_capture

    def polls(kernels):
        cfg = ReplayConfig(kernels=kernels, gro_flush_timeout_ns=20000, napi_defer_hard_irqs=2)
        return replay_capture(str(FIX_SAMPLE), cfg).engine["polls"]

    assert polls((K_5_11,)) == polls((K_5_12,)) == 4


def test_explain_line_carries_the_tunnel_skbs_the_fix_saves(tmp_path, runner):
    """Outer checksum computed, nested checksum 0, 4 contiguous segments, --kernel 5.10: the phys device merges none
    in any kernel (nested header, §4.4 encap_mark after the fix), and before the fix gro_cells refuses the nested
    header's zero checksum (§6.1, §4.7 row 3: 4 skbs up from vxlan0); 5.10 with 89e5c58fc1e2 applied merges the 4
    there into 1 (§4.5): 3 tunnel skbs saved, 0 phys. The EXPLAIN line names both figures, as the JSON verdict does
    (breaker's finding: it named only stack_traversals_saved)."""
    from gro_replay.cli import main

    cap = _write(tmp_path, [_nested(0, False, True)])
    r = runner.invoke(main, ["explain", cap, "--kernel", "5.10", "--format", "json"])
    assert r.exit_code == 0, r.output
    ex = json.loads(r.stdout)
    assert (ex["verdict"]["stack_traversals_saved"], ex["verdict"]["tunnel_skbs_saved"]) == (0, 3)
    assert " stack_traversals_saved=0 tunnel_skbs_saved=3 outcome=affected" in ex["summary"]
    r = runner.invoke(main, ["explain", cap, "--kernel", "5.10", "-q"])
    assert r.stdout.rstrip().splitlines()[-1] == ex["summary"]


def test_the_outer_headers_refused_are_counted_by_frame(tmp_path, runner):
    """VXLAN in VXLAN, both checksums 0, with a 4-byte trailer on 2 of the 4 frames: before the fix the nested
    header is refused at gro_cells for all 4 (udp_rcv trimmed the trailers: §6.1, row 3 again), but at the phys
    device only the 2 plain frames' outer header (§4.7 row 3); the 2 with a trailer reach the gate already flushing,
    unvalidated (csum_cnt left 1: gro-spec §4.3). The sentence said "their outer header" of all 4 (breaker29)."""
    from gro_replay.cli import main

    frames = _nested(0, True, True)
    frames = [f + b"\0\0\0\1" if i % 2 else f for i, f in enumerate(frames)]
    cap = _write(tmp_path, [frames])
    r = runner.invoke(main, [cap, "--no-fix", "--json", "-", "-q"])
    v = json.loads(r.stdout)["verdict"]
    (k,) = v["kernels"]
    assert k["gate_refusals_zero_csum"] == {"phys": 2, "tunnel": 4}
    assert k["gate_unvalidated_zero_csum"] == {"phys": 2, "tunnel": 0}
    assert "udp_gro_receive refuses 4 frames there" in v["text"]
    assert "At the phys device it refuses the outer header of 2 of them too, which costs nothing" in v["text"]


def test_nested_refusals_with_phys_gro_off_say_it_is_off(tmp_path):
    """VXLAN (nested UDP checksum 0) in VXLAN (outer 0), --gro phys=off, a kernel without the fix: the tunnel
    device's gro_cells refuses the 4 nested frames (gro-spec §4.7 row 3 after udp_rcv consumed a level, §6.1); at
    the phys device GRO does not run at all (netif_elide_gro), which the sentence says instead of "does not refuse
    them" (breaker41)."""
    frames = _frames_of(_nested(0, outer_zero=True, nested_zero=True))
    result = replay_frames(frames, ReplayConfig(kernels=[K_5_11], rx_csum="unnecessary", gro={"phys": False}))
    text = document(result)["verdict"]["text"]
    assert "udp_gro_receive refuses 4 frames there" in text, text
    assert "At the phys device GRO is off (netif_elide_gro), so udp_gro_receive does not run there." in text
    assert "does not refuse them" not in text


def test_phys_gro_off_with_a_kernel_carrying_the_fix_does_not_say_the_gate_is_never_reached():
    """The same nested frames, --gro phys=off, one kernel with the fix: the gate is reached at the tunnel device's
    gro_cells (where the fix changes what it refuses), so the verdict no longer says "The fix changes nothing …
    udp_gro_receive's checksum gate … is never reached" (breaker42); it says what the kernel carries."""
    frames = _frames_of(_nested(0, outer_zero=True, nested_zero=True))
    result = replay_frames(frames, ReplayConfig(kernels=[K_5_12], rx_csum="unnecessary", gro={"phys": False}))
    text = document(result)["verdict"]["text"]
    assert "is never reached" not in text and "changes nothing" not in text, text
    assert text.startswith("post-fix (v5.12) carries 89e5c58fc1e2"), text
