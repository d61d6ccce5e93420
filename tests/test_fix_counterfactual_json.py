"""What the fix saves where no kernel with it ran: measured on the kernel without it run again with 89e5c58fc1e2
applied (report/verdict/facts.py ``fix_counterfactuals``), and said alike by the sentence, the JSON verdict, the
per-kernel facts, explain's per-flow verdict and its EXPLAIN line (breaker's finding: the sentence said "15 fewer
phys skbs" while the JSON and EXPLAIN said 0 saved and 0 skbs with the fix).

The shipped fix sample: one VXLAN flow, outer UDP checksum 0, 16 × 1398 + 1 × 672 payload bytes. Under
``--poll budget`` its 17 frames arrive in one poll; a kernel without the fix refuses them at the phys device
(gro-spec §4.7 row 3: 17 phys skbs) and merges them on vxlan0 into 1 skb (§5.5: the 672-byte segment completes it);
the same kernel with the fix merges them at the phys device instead: 1 phys skb, 16 fewer.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from gro_replay.cli import main
from gro_replay.report import schema

FIX_SAMPLE = Path(__file__).resolve().parents[1] / "sample_pcaps" / "vxlan-zero-csum-fix-89e5c58fc1e2.pcap"


def _json(*args: str) -> dict:
    r = CliRunner().invoke(main, [*args, "--poll", "budget", "--format", "json", "-q"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    # the nulls and the added key are in the schemas
    schema.check(doc, "explain" if args[0] == "explain" else "replay")
    return doc


def test_one_kernel_without_the_fix_reports_what_its_counterfactual_saves():
    v = _json(str(FIX_SAMPLE), "--kernel", "5.10")["verdict"]
    assert "the affected flows go up in 16 fewer phys skbs" in v["text"]
    assert (v["stack_traversals_saved"], v["tunnel_skbs_saved"]) == (16, 0)
    (k,) = v["kernels"]
    assert (k["kernel"], k["phys_skbs"], k["fix_applied_saves"]) == ("5.10", 17, {"phys": 16, "tunnel": 0})


def test_each_kernel_without_the_fix_has_its_own_figure():
    """4.19 and 5.10 both lack the fix: the sentence gives each its figure, and so does each kernel's entry; the
    verdict's totals are those of the newest without it (the one compare mode would judge)."""
    v = _json(str(FIX_SAMPLE), "--kernel", "4.19", "--kernel", "5.10")["verdict"]
    assert v["text"].count("the affected flows go up in 16 fewer phys skbs") == 2
    assert [k["fix_applied_saves"] for k in v["kernels"]] == [{"phys": 16, "tunnel": 0}] * 2
    assert v["stack_traversals_saved"] == 16


def test_explain_flow_verdict_without_a_kernel_with_the_fix():
    doc = _json("explain", str(FIX_SAMPLE), "--kernel", "5.10")
    (flow,) = doc["flows"]
    v = flow["verdict"]
    assert (v["phys_skbs_pre_fix"], v["phys_skbs_post_fix"], v["stack_traversals_saved"]) == (17, 1, 16)
    assert doc["summary"].split()[5] == "stack_traversals_saved=16"


def test_explain_flow_verdict_with_no_kernel_without_the_fix():
    """6.18 alone carries the fix, and no kernel without it ran: nothing without the fix was measured (null),
    not 0 skbs; nothing is saved. With the fix the flow merges at the phys device: 1 skb."""
    (flow,) = _json("explain", str(FIX_SAMPLE), "--kernel", "6.18")["flows"]
    v = flow["verdict"]
    assert (v["phys_skbs_pre_fix"], v["tunnel_skbs_pre_fix"]) == (None, None)
    assert (v["phys_skbs_post_fix"], v["stack_traversals_saved"]) == (1, 0)


COMPUTED = FIX_SAMPLE.parent / "vxlan-4flows-computed-csum.pcap"


def test_a_counterfactual_that_saves_nothing_says_zero():
    """The 4-flow sample's outer UDP checksums are computed: 89e5c58fc1e2 changes only udp_gro_receive's test of a
    zero checksum (gro-spec §4.7 rows 3–4), so 5.10 with it applied delivers the skbs 5.10 does and saves 0 at each
    stage. The kernel's entry says 0, not nothing (breaker's finding: the key was missing unless a flow was affected,
    so "saved 0" read as "not measured")."""
    v = _json(str(COMPUTED), "--kernel", "5.10")["verdict"]
    assert (v["affected_flows"], v["stack_traversals_saved"], v["tunnel_skbs_saved"]) == (0, 0, 0)
    (k,) = v["kernels"]
    assert k["fix_applied_saves"] == {"phys": 0, "tunnel": 0}


def test_no_counterfactual_no_figure():
    """Where a kernel with the fix ran and no other commit separates it from the one without (5.11 and 5.12), or
    only kernels with it ran (6.18), no kernel is replayed again with the fix applied: no kernel's entry has
    fix_applied_saves."""
    for args in (["--kernel", "6.18"], ["--kernel", "5.11", "--kernel", "5.12"]):
        v = _json(str(FIX_SAMPLE), *args)["verdict"]
        assert all("fix_applied_saves" not in k for k in v["kernels"]), args
