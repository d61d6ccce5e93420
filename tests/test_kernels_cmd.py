"""``gro-replay kernels``: the switches × releases table laid out for the output's width (80-column terminals,
pipes at 120 columns or ``COLUMNS``) without cut or wrapped cells, and the values it shows.

Expected values are the kernel history the switches are named after (gro_replay/kernel/model.py cites each commit):
89e5c58fc1e2 ("net: Fix gro aggregation for udp encaps with zero csum") landed in v5.12-rc2 and in the stable
releases 5.4.106 (f2d78bbbca42) and 5.10.24; 8dc1c444df19 ("net: gro: do not keep too many GRO packets in
napi->rx_list") in v5.11; 21f7484220ac (outer IPv4 ID check) in v6.18. The profiles are upstream bases.
"""

from __future__ import annotations

import re

import pytest
from rich.cells import cell_len

from gro_replay.cli import main
from gro_replay.kernel.model import PROFILES, SWITCH_COMMITS


def _kernels(runner, columns: int, *args: str) -> str:
    r = runner.invoke(main, ["kernels", *args], env={"COLUMNS": str(columns)})
    assert r.exit_code == 0, r.output
    return r.stdout


def _matrix(text: str) -> tuple[dict[str, dict[str, str]], int]:
    """Switch → release → cell, read back from every table whose header starts with ``switch``; and how many
    tables carry release columns."""
    releases = set(PROFILES) | {"5.4.120"}
    out: dict[str, dict[str, str]] = {}
    header: list[str] | None = None
    tables = 0
    for line in text.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if cells[0] == "switch":
            header = cells[1:]
            tables += any(h in releases for h in header)
        elif header and cells[0] in {c.switch for c in SWITCH_COMMITS}:
            for h, v in zip(header, cells[1:], strict=True):
                if h in releases:
                    out.setdefault(cells[0], {})[h] = v
    return out, tables


def _check_values(m: dict[str, dict[str, str]]) -> None:
    gate = m["udp_tunnel_gate_checks_uh_check"]
    assert [gate[r] for r in ("4.19", "5.4", "5.10", "5.11")] == ["·"] * 4
    assert [gate[r] for r in ("5.12", "5.15", "6.1", "6.6", "6.12", "6.18")] == ["on"] * 6
    assert m["gro_normal_counts_segs"]["5.10"] == "·" and m["gro_normal_counts_segs"]["5.11"] == "on"
    assert [r for r, v in m["inet_gro_checks_outer_id"].items() if v != "·"] == ["6.18"]
    assert set(m) == {c.switch for c in SWITCH_COMMITS}


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_narrow_outputs_stack_the_release_columns_and_cut_nothing(runner, columns):
    text = _kernels(runner, columns, "--kernel", "5.4.120")
    assert max(cell_len(line) for line in text.splitlines()) <= columns
    assert "…" not in text  # no cell cut short
    m, tables = _matrix(text)
    # the 129-column table does not fit: commits in a table of their own, the release columns beside the switches
    assert tables >= 1 and not re.search(r"switch\s+commit\s+upstream\s+4\.19", text)
    _check_values(m)
    assert m["udp_tunnel_gate_checks_uh_check"]["5.4.120"] == "on (5.4.106)"
    assert m["gro_normal_counts_segs"]["5.4.120"] == "on (5.4.99)"
    for c in SWITCH_COMMITS:  # commits and upstream releases in their own table
        assert re.search(rf"^\s+{c.switch}\s+{c.commit}\s", text, re.M)


def test_a_wide_output_keeps_one_table(runner):
    text = _kernels(runner, 200)
    assert max(cell_len(line) for line in text.splitlines()) <= 200
    m, tables = _matrix(text)
    assert tables == 1
    _check_values(m)
    assert re.search(r"^\s+switch\s+commit\s+upstream\s+4\.19\s.*\s6\.18\s*$", text, re.M)


def test_a_pipe_without_columns_is_120_wide(runner, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    r = runner.invoke(main, ["kernels"])
    assert r.exit_code == 0, r.output
    assert max(cell_len(line) for line in r.stdout.splitlines()) <= 120
    _check_values(_matrix(r.stdout)[0])


def _block(lines: list[str], first: int) -> list[str]:
    """``lines[first]`` and its continuation lines (two spaces, then text)."""
    out = [lines[first]]
    for line in lines[first + 1 :]:
        if not re.match(r"^  \S", line):
            break
        out.append(line)
    return out


@pytest.mark.parametrize("columns", [80, 100, 120, 200])
def test_profiles_line_whole_items_no_repeated_labels(runner, columns):
    """Each profile is written whole on one line (never "6.12" then "(LTS)" on the next), tagged only where the
    tag adds something: LTS branches, and 5.11/5.12 as pre-fix/post-fix of 89e5c58fc1e2 (v5.12-rc2)."""
    lines = _kernels(runner, columns).splitlines()
    block = _block(lines, 0)
    assert max(cell_len(line) for line in block) <= columns
    items = [
        i.strip() for i in " ".join(line.strip() for line in block).removeprefix("profiles: ").split(",")
    ]
    assert items == [
        "4.19 (LTS)", "5.4 (LTS)", "5.10 (LTS)", "5.11 (pre-fix)", "5.12 (post-fix)", "5.15 (LTS)", "6.1 (LTS)",
        "6.6 (LTS)", "6.12 (LTS)", "6.18",
    ]  # fmt: skip
    for item in items:  # none cut across two lines
        assert any(item in line for line in block), (item, block)


@pytest.mark.parametrize("columns", [80, 120, 200])
def test_unreleased_switch_explained(runner, columns):
    """tcp_gro_cwr_no_flush is ab4c8b6f7fcb ("gro: flushing when CWR is set negatively affects AccECN", after
    v6.18): its upstream cell is marked and a footnote gives the commit's title and that no profile has it."""
    text = _kernels(runner, columns)
    assert re.search(r"^\s+tcp_gro_cwr_no_flush\s+ab4c8b6f7fcb\s+none\*\s", text, re.M)
    lines = text.splitlines()
    notes = [i for i, line in enumerate(lines) if line.startswith("* ")]
    assert len(notes) == 1
    block = _block(lines, notes[0])
    assert max(cell_len(line) for line in block) <= columns
    assert " ".join(line.strip() for line in block) == (
        '* tcp_gro_cwr_no_flush: ab4c8b6f7fcb "gro: flushing when CWR is set negatively affects AccECN" is in no '
        "upstream release up to 6.18; no profile has it on"
    )
