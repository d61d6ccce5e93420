"""The text and Markdown reports' numbers (report/table.py): rows, kernel order, stages without skbs, layout.

Values follow from the kernel's rules for the shipped fix sample (gro-spec §4.7 row 3, §6.6) and for IPv6 frames
with a zero UDP checksum (net/ipv6/udp.c ``__udp6_lib_rcv``: dropped before the tunnel device).
"""

from __future__ import annotations

import io

from click.testing import CliRunner
from conftest import FIX_SAMPLE
from rich.console import Console

from gro_replay.cli import main
from gro_replay.kernel.model import K_5_11, K_6_18
from gro_replay.packet.build import FrameSpec, build_flow
from gro_replay.report.table import NO_SKBS, grid, kernels_by_release, render_tables
from gro_replay.sim import PollModel, ReplayConfig, replay_capture, replay_frames


def _tables(result, width: int) -> list[str]:
    buf = io.StringIO()
    render_tables(result, Console(file=buf, width=width, no_color=True))
    return buf.getvalue().splitlines()


def test_narrow_console_stacks_one_table_per_stage():
    # budget polls: all 17 frames in one poll (the figures below are budget-poll truths)
    result = replay_capture(str(FIX_SAMPLE), ReplayConfig(poll=PollModel("budget")))
    wide = _tables(result, 200)
    assert any("before vs after 89e5c58fc1e2" in ln for ln in wide)
    assert not any(ln.strip().endswith(": phys NAPI") for ln in wide)
    for width in (80, 60):
        lines = _tables(result, width)
        assert max(len(ln) for ln in lines) <= width
        text = " ".join(" ".join(lines).split())
        assert ": phys NAPI" in text and ": tunnel gro_cells" in text
        # every figure is still there: skbs delivered pre-fix 17 → post-fix 1 at phys (Δ -16)
        assert any(
            ln.split()[:2] == ["skbs", "delivered"] and ln.split()[2:] == ["17", "1", "-16"] for ln in lines
        )


def test_compare_orders_kernels_by_release_whatever_the_option_order():
    r = CliRunner().invoke(
        main, [str(FIX_SAMPLE), "--kernel", "6.18", "--kernel", "5.11", "--format", "markdown"]
    )
    assert r.exit_code == 0, r.output
    head = next(ln for ln in r.stdout.splitlines() if ln.startswith("| metric"))
    assert head == (
        "| metric | pre-fix phys NAPI | 6.18 phys NAPI | Δ phys | pre-fix tunnel gro_cells | 6.18 tunnel gro_cells "
        "| Δ tunnel |"
    )
    cfg = ReplayConfig(kernels=(K_6_18, K_5_11))
    result = replay_capture(str(FIX_SAMPLE), cfg)
    assert [k.release for k in kernels_by_release(result)] == ["5.11", "6.18"]


def test_stage_without_skbs_shows_a_dash_for_per_skb_figures():
    # IPv6 outer header, UDP checksum 0: __udp6_lib_rcv drops every phys skb (no udp6zerocsumrx), so the tunnel
    # stage receives and delivers nothing; its mean/max segments per skb are "–", not 0
    frames = build_flow(FrameSpec(outer_ipv6=True, outer_csum="zero"), [1398, 1398])
    result = replay_frames([(1000 * i, f) for i, f in enumerate(frames)], ReplayConfig())
    head, rows = grid(kernels_by_release(result))
    by = {r[0]: dict(zip(head, r, strict=True)) for r in rows}
    for label in ("segments / skb, mean", "segments / skb, max"):
        assert by[label]["pre-fix tunnel gro_cells"] == NO_SKBS == by[label]["post-fix tunnel gro_cells"]
        assert by[label]["Δ tunnel"] == NO_SKBS
    assert by["skbs delivered"]["pre-fix tunnel gro_cells"] == "0"
    # the phys stage did deliver: pre-fix 2 single skbs (gate), post-fix one aggregate of 2
    assert (
        by["segments / skb, mean"]["pre-fix phys NAPI"],
        by["segments / skb, mean"]["post-fix phys NAPI"],
    ) == (
        "1.00",
        "2.00",
    )


def test_more_affected_flows_line_counts_those_not_shown(tmp_path):
    """The "… and N more affected flows" line counts the affected flows not listed above it, whatever capped
    the list (its 10 lines, or --flows-max, which also caps the JSON's comparison.affected_flows[]), and names
    --format json only where the JSON lists them all (breaker's finding: --flows-max 3 listed 3 of 36 flows and
    said "26 more … --format json lists them"). synth --flows 12 with outer checksum 0: every flow's frames are
    refused by the pre-fix gate and merged at the phys device with the fix (gro-spec §4.7 row 3), 12 affected."""
    cap = tmp_path / "twelve.pcap"
    r = CliRunner().invoke(main, ["synth", str(cap), "--flows", "12", "--frames", "8"])
    assert r.exit_code == 0, r.output

    def run(*opts: str) -> list[str]:
        r = CliRunner().invoke(main, [str(cap), "--no-hist", *opts], env={"COLUMNS": "200"})
        assert r.exit_code == 0, r.output
        return r.stdout.splitlines()

    out = run()
    assert sum(line.startswith("  affected: ") for line in out) == 10
    assert "  … and 2 more affected flows (explain --limit 0 or --format json lists them)" in out
    for cap_n, shown in (("3", 3), ("0", 0)):
        out = run("--flows-max", cap_n)
        assert sum(line.startswith("  affected: ") for line in out) == shown
        assert f"  … and {12 - shown} more affected flows (explain --limit 0 lists them)" in out
    # --flows-max 12 keeps every affected flow: the text still lists 10, and the JSON lists the others
    assert "  … and 2 more affected flows (explain --limit 0 or --format json lists them)" in run(
        "--flows-max", "12"
    )
