"""The README's example outputs are what the tool prints now (the product's rule: the truth of every sentence the
tool prints, its documentation's quotes of it included). Each fenced example block is run with the command the
README gives for it; every line of the block that elides nothing ("…") is a line of the output, in the same order,
and a line that elides is its pieces in order within one output line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gro_replay.cli import main

ROOT = Path(__file__).resolve().parents[1]
FIX = "sample_pcaps/vxlan-zero-csum-fix-89e5c58fc1e2.pcap"
TRIAGE = "../shared/triage/bad-inner-csum-3frames.pcap"

#: (first line of the block, the command the README gives for it, needs ../shared)
EXAMPLES = [
    ("pre-fix     0.000009: net:netif_receive_skb", [FIX, "--trace", "-"], False),
    ("SUMMARY kernels=pre-fix,post-fix", [FIX], False),
    (f"input: {TRIAGE}", ["explain", TRIAGE, "--rx-csum", "none", "--kernel", "6.18", "--skbs"], True),
]


def _blocks() -> list[list[str]]:
    """The README's fenced blocks, each as its lines (the fences left out)."""
    blocks: list[list[str]] = []
    inside = False
    for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            inside = not inside
            if inside:
                blocks.append([])
        elif inside:
            blocks[-1].append(line)
    return blocks


def _in_order(lines: list[str], out: list[str]) -> None:
    at = 0
    for line in lines:
        if not line.strip() or line.strip() == "…":
            continue
        pieces = [p.strip() for p in re.split(r"…\s*(?:\([^)]*\))?", line) if p.strip()]
        while at < len(out) and not _has(out[at], pieces):
            at += 1
        assert at < len(out), f"README line not printed (in this order): {line!r}"
        at += 1


def _has(out_line: str, pieces: list[str]) -> bool:
    pos = 0
    for p in pieces:
        pos = out_line.find(p, pos)
        if pos < 0:
            return False
        pos += len(p)
    return True


@pytest.mark.parametrize(("first", "argv", "shared"), EXAMPLES, ids=["trace", "summary", "explain-skbs"])
def test_readme_example_is_what_the_tool_prints(runner, monkeypatch, first, argv, shared):
    if shared and not (ROOT.parent / "shared" / "triage").is_dir():
        pytest.skip("needs ../shared/triage")
    block = next((b for b in _blocks() if b and b[0].startswith(first)), None)
    assert block is not None, f"README has no example block starting {first!r}"
    monkeypatch.chdir(ROOT)  # the README's paths are relative to the checkout
    r = runner.invoke(main, argv, env={"COLUMNS": None})
    assert r.exit_code == 0, r.output
    _in_order(block, r.stdout.splitlines())


def test_summary_counts_refused_flows_only_where_refusals_cost(runner):
    """The README's SUMMARY section: one kernel without the fix counts the flows whose refusals cost aggregation
    (newcomer34: it said "the flows it refuses"). The triage capture's one flow has a bad inner TCP checksum on one
    segment of 3; 5.10's gate refuses all 3 frames (outer checksum 0, csum_cnt 0, csum_valid 0: gro-spec §4.4), and
    with the fix applied they still go up apart (the bad segment alone, and frame 3 does not follow frame 1: a
    sequence gap, the capture's truth in ../shared/triage/README.md): 3 refused, 0 affected."""
    import json

    path = ROOT.parent / "shared" / "triage" / "bad-inner-csum-3frames.pcap"
    if not path.is_file():
        pytest.skip("needs ../shared/triage")
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert (
        "`../shared/triage/bad-inner-csum-3frames.pcap --kernel 5.10` refuses 3 frames of 1 flow, `affected_flows=0`"
        in readme
    )
    r = runner.invoke(main, [str(path), "--kernel", "5.10", "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert (doc["verdict"]["frames_refused"], doc["verdict"]["tunnel_flows"]) == (3, 1)
    assert doc["summary"].endswith(" affected_flows=0")
