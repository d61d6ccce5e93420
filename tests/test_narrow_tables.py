"""No report table cuts a cell on a narrow terminal (report/table.py ``print_uncut``).

rich shortens a cell that does not fit its column to ``…`` (or crops a ``no_wrap`` one): on an 80-column terminal
the diff's phys Δ of the fix sample read ``(+1,600.…``, the batch table's capture names and the kernels table's
switch names were cut; folding every cell instead split 23,244 into "23,24" over "4", another number. Every table
of every command (replay, diff, batch, kernels) now folds only its text columns and keeps each number on one line,
printing wider than the terminal when it must: every number of the wide rendering is there whole at any width.
"""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner
from conftest import FIX_SAMPLE, SAMPLES, VXLAN4_SAMPLE

from gro_replay.cli import main

WIDTHS = (20, 30, 40, 60, 80, 100)
#: a number as the reports print it: 24,774 / -1,530 / 8.50 / +1,600.0%
NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?%?")


def _run(columns: int, *args) -> str:
    r = CliRunner().invoke(main, [str(a) for a in args], env={"COLUMNS": str(columns)})
    assert r.exit_code in (0, 1), r.output
    return r.stdout


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> tuple:
    d = tmp_path_factory.mktemp("narrow")
    out = []
    for name, flag in (("post", "--fix"), ("pre", "--no-fix")):
        path = d / f"{name}.json"
        path.write_text(_run(120, FIX_SAMPLE, "--poll", "budget", flag, "--format", "json", "-q"))
        out.append(path)
    return tuple(out)


@pytest.mark.parametrize("columns", WIDTHS)
def test_no_table_cuts_a_cell(docs, columns):
    post, pre = docs
    outputs = {
        "replay": _run(columns, VXLAN4_SAMPLE),
        "replay 3 kernels": _run(
            columns, FIX_SAMPLE, "--kernel", "4.19", "--kernel", "5.11", "--kernel", "6.18"
        ),
        "diff": _run(columns, "diff", post, pre, "--max-regression", "5"),
        "batch": _run(columns, "batch", *sorted(SAMPLES.glob("*.pcap"))),
        "kernels": _run(columns, "kernels", "--kernel", "5.4.0-42-generic"),
    }
    for what, text in outputs.items():
        assert "…" not in text, (what, columns, text)
    wide = _run(200, FIX_SAMPLE, "--kernel", "4.19", "--kernel", "5.11", "--kernel", "6.18")
    assert set(NUMBER.findall(wide)) <= set(NUMBER.findall(outputs["replay 3 kernels"])), columns
    wide = _run(200, "diff", post, pre, "--max-regression", "5")
    assert set(NUMBER.findall(wide)) <= set(NUMBER.findall(outputs["diff"])), columns


def test_the_diff_cell_is_whole_when_it_fits(docs):
    """At 120 columns (a pipe's width) the fix sample's phys skbs 1 → 17 reads +16 (+1,600.0%) on one line."""
    post, pre = docs
    assert "(+1,600.0%)" in _run(120, "diff", post, pre)
