"""``gro-replay diff`` table at 120 columns (a pipe's width, README): every metric label and every change on one
line. Values: the fix sample (89e5c58fc1e2, v5.12-rc2) through the post-fix kernel aggregates its 17 zero-checksum
segments into 2 phys NAPI skbs (8.50 segments each, both aggregates) and through the pre-fix kernel not at all
(17 skbs, 0 aggregates: udp_gro_receive refuses zero outer checksums without the fix), the tunnel gro_cells stage
aggregating in both (README "What the fix sample shows")."""

from __future__ import annotations

import re

from conftest import FIX_SAMPLE
from rich.cells import cell_len

from gro_replay.cli import main


def test_diff_table_cells_whole_at_120_columns(runner, tmp_path) -> None:
    docs = {}
    for side in ("--fix", "--no-fix"):
        r = runner.invoke(main, [str(FIX_SAMPLE), side, "--format", "json", "-q"])
        assert r.exit_code == 0, r.output
        docs[side] = tmp_path / f"{side[2:]}.json"
        docs[side].write_text(r.stdout)
    r = runner.invoke(
        main,
        ["diff", str(docs["--fix"]), str(docs["--no-fix"]), "--allow-different-input"],
        env={"COLUMNS": "120"},
    )
    assert r.exit_code == 1, r.output  # the pre-fix kernel lost the aggregation
    lines = r.stdout.splitlines()
    assert max(cell_len(line) for line in lines if line.startswith(" ")) <= 120  # the tables
    assert any(
        re.fullmatch(r"\s+skbs delivered\s+2\s+17\s+\+15 \(\+750\.0%\)\s+2\s+2\s+0 \(0%\)\s*", x)
        for x in lines
    )
    assert any(
        re.fullmatch(r"\s+skbs delivered with ≥2 segs\s+2\s+0\s+-2 \(-100\.0%\)\s+2\s+2\s+0 \(0%\)\s*", x)
        for x in lines
    )
    assert any(
        re.fullmatch(r"\s+bytes the CPU checksummed here\s+[\d,]+\s+0\s+-[\d,]+ \(-100\.0%\)\s.*", x)
        for x in lines
    )
