"""``make test`` (README "Development") lists why each test was skipped: pytest's ``-rs`` on the target's command."""

from __future__ import annotations

import shlex
from pathlib import Path

MAKEFILE = Path(__file__).resolve().parents[1] / "Makefile"


def test_make_test_lists_skip_reasons() -> None:
    lines = MAKEFILE.read_text().splitlines()
    start = lines.index(next(line for line in lines if line.startswith("test:")))
    recipe = []
    for line in lines[start + 1 :]:
        if not line.startswith("\t"):
            break
        recipe.append(line)
    pytest_cmds = [shlex.split(line) for line in recipe if "pytest" in line]
    assert pytest_cmds, recipe
    for words in pytest_cmds:
        assert any(w.startswith("-r") and "s" in w[2:] for w in words), words
