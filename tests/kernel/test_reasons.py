"""kernel/reasons.py holds every flush and drop reason (issue 12: "drop reasons … each in one place"): no kernel
module spells one as a string of its own, and every stack drop has the verdict's words (what drops it, which
counter, which knob)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from gro_replay.kernel import reasons as R
from gro_replay.report.verdict.words import LOSSES

KERNEL = Path(R.__file__).resolve().parent
#: a reason's shape: ``function:condition`` (kernel/reasons.py)
REASON = re.compile(r"^_*[a-z][a-z0-9_]*:[a-z0-9_]+$")


def test_no_kernel_module_spells_a_reason_of_its_own():
    found = []
    for path in sorted(KERNEL.glob("*.py")):
        if path.name == "reasons.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and REASON.match(node.value):
                found.append(f"{path.name}:{node.lineno}: {node.value}")
    assert found == []


def test_every_stack_drop_has_the_verdicts_words():
    assert len(set(R.STACK_DROPS)) == len(R.STACK_DROPS)
    assert set(LOSSES) == set(R.STACK_DROPS)


def test_the_size_limit_reads_true_on_every_kernel():
    """skb_gro_receive refuses a merge that reaches 65536 bytes before eac1b93c14d6 (v5.17: the literal in
    ``p->len + len >= 65536``), ``dev->gro_max_size`` from it, ``dev->gro_ipv4_max_size`` for IPv4 from
    b1a78b9b9886 (v6.3) (kernel/gro.py ``skb_gro_receive``). One reason names all three (a 5.12 run shows it
    too), so its words give the 64 KiB and say from which release the device's sizes apply."""
    words = R.describe(R.SKB_GRO_RECEIVE_E2BIG)
    assert "64 KiB" in words
    assert "from v5.17 the device's gro_max_size" in words
    assert "from v6.3 gro_ipv4_max_size" in words
