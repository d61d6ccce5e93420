"""What the verdict advises a kernel without 89e5c58fc1e2 whose stable branch ended without it (a newcomer on
4.18 was pointed at "linux-4.19.y carries it since 4.19.181", a branch it is not on): no release of the branch
has the fix, so the advice is to move to the nearest newer branch that carries it, from its first release
carrying it. The facts, from kernel.org's stable trees and tags: the last release of each ended branch (4.18.20 of
2018-11-21, tag a9da8725, no v4.18.21; the others as kernel/stable.py STABLE_ENDED cites them), and the stable
backports of 89e5c58fc1e2 (4.19.y: e5008f2e9157, between "Linux 4.19.180" 030194a5b292 and "Linux 4.19.181"
ac3af4beac43 in the linux-4.19.y push notifications; 5.4.y: f2d78bbbca42 in 5.4.106; 5.10.y: 09af4362ba47 in
5.10.24); none of 4.18, 4.20, 5.0-5.3, 5.5-5.9 took it (each ended before v5.12's merge window).
"""

from __future__ import annotations

import json

import pytest
from conftest import FIX_SAMPLE

from gro_replay.cli import main

TO_419 = "linux-4.19.y, from 4.19.181 (e5008f2e9157), itself ended with 4.19.325 in December 2024"
TO_54 = "linux-5.4.y, from 5.4.106 (f2d78bbbca42), itself ended with 5.4.302 in December 2025"
TO_510 = "linux-5.10.y, from 5.10.24 (09af4362ba47)"

#: ended branch → (its last release, its month, where to move)
ENDED = {
    "4.18": ("4.18.20", "November 2018", TO_419),
    "4.20": ("4.20.17", "March 2019", TO_54),
    "5.0": ("5.0.21", "June 2019", TO_54),
    "5.1": ("5.1.21", "July 2019", TO_54),
    "5.2": ("5.2.21", "October 2019", TO_54),
    "5.3": ("5.3.18", "December 2019", TO_54),
    "5.5": ("5.5.19", "April 2020", TO_510),
    "5.6": ("5.6.19", "June 2020", TO_510),
    "5.7": ("5.7.19", "August 2020", TO_510),
    "5.8": ("5.8.18", "November 2020", TO_510),
    "5.9": ("5.9.16", "December 2020", TO_510),
}


def _verdict(runner, kernel: str) -> str:
    r = runner.invoke(main, [str(FIX_SAMPLE), "--kernel", kernel, "--format", "json", "-q"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)["verdict"]["text"]


@pytest.mark.parametrize("release", ["", ".3"])
@pytest.mark.parametrize("branch", sorted(ENDED))
def test_an_ended_branch_without_the_fix_is_told_to_move(runner, branch, release):
    """The sample's flow is refused by the zero-checksum gate (affected): the verdict says no release of the
    branch has the fix and, as its own sentence, where to get it; the JSON's text is the same sentence."""
    last, when, move = ENDED[branch]
    kernel = branch + release
    text = _verdict(runner, kernel)
    label = f"{kernel} (v{kernel})"
    assert text.startswith(
        f"{label} lacks 89e5c58fc1e2 (no {branch}.y release has it: linux-{branch}.y ended with {last} in {when}) "
        "and is affected by the zero-checksum bug. "
    ), text
    assert f" To get the fix, move to a branch that carries it: the nearest newer one is {move}." in text, (
        text
    )
    assert "carries it since" not in text
    r = runner.invoke(main, [str(FIX_SAMPLE), "--kernel", kernel, "-q"])
    assert text in r.stdout.splitlines()


@pytest.mark.parametrize(
    ("kernel", "hint"),
    [
        ("4.19", "(linux-4.19.y carries it since 4.19.181, as e5008f2e9157)"),
        ("4.19.100", "(linux-4.19.y carries it since 4.19.181, as e5008f2e9157)"),
        ("5.4.50", "(linux-5.4.y carries it since 5.4.106, as f2d78bbbca42)"),
        ("5.11.3", "(linux-5.11.y carries it since 5.11.7, as 9b815b6efaf8)"),
    ],
)
def test_a_branch_that_took_the_backport_names_its_own_release(runner, kernel, hint):
    text = _verdict(runner, kernel)
    assert f"lacks 89e5c58fc1e2 {hint} and is affected" in text
    assert "move to a branch" not in text and "ended with" not in text


def test_a_distribution_kernel_of_an_ended_branch_keeps_its_assumption(runner):
    """5.3.0-18-generic (Ubuntu 19.10): the vendor may have taken the fix into its own continuation, so the
    verdict states the assumption and gives no kernel.org branch advice."""
    text = _verdict(runner, "5.3.0-18-generic")
    assert "lacks 89e5c58fc1e2 unless Ubuntu backported it" in text
    assert "move to a branch" not in text and "no 5.3.y release" not in text


def _compare_text(runner, *kernels: str, extra: tuple[str, ...] = ()) -> str:
    args = [str(FIX_SAMPLE), *(a for k in kernels for a in ("--kernel", k)), *extra]
    r = runner.invoke(main, [*args, "--format", "json", "-q"])
    assert r.exit_code == 0, r.output
    text = json.loads(r.stdout)["verdict"]["text"]
    t = runner.invoke(main, [*args, "-q"])
    assert text in t.stdout.splitlines()  # one computation: the text report says the same
    return text


@pytest.mark.parametrize(
    ("kernel", "hint"),
    [
        ("4.19.100", "(linux-4.19.y carries it since 4.19.181, as e5008f2e9157)"),
        ("5.4.50", "(linux-5.4.y carries it since 5.4.106, as f2d78bbbca42)"),
        ("5.11.3", "(linux-5.11.y carries it since 5.11.7, as 9b815b6efaf8)"),
        # a release candidate of 5.12 before the fix's: v5.12-rc2 merged it (breaker's finding: nothing was said)
        ("5.12-rc1", "(merged for v5.12-rc2: 5.12-rc2 and later, and 5.12, carry it)"),
    ],
)
@pytest.mark.parametrize("nic", [(), ("--nic", "mlx5")], ids=["affected", "not-affected"])
def test_compare_mode_names_the_branch_s_own_release_carrying_the_fix(runner, kernel, hint, nic):
    """``--kernel 4.19.100 --kernel 5.12`` said what the fix saves but not that 4.19.181 carries it, which the
    single-kernel verdict says (fix_words.stable_fix_hint): compare mode says it in the same words, affected or not
    (with --nic mlx5 the gate refuses nothing)."""
    text = _compare_text(runner, kernel, "5.12", extra=nic)
    assert text.endswith(f" {kernel} (v{kernel}) lacks 89e5c58fc1e2 {hint}."), text
    assert "move to a branch" not in text


@pytest.mark.parametrize("branch", sorted(ENDED))
def test_compare_mode_tells_an_ended_branch_to_move(runner, branch):
    last, when, move = ENDED[branch]
    kernel = f"{branch}.3"
    text = _compare_text(runner, kernel, "5.12")
    assert text.endswith(
        f" {kernel} (v{kernel}) lacks 89e5c58fc1e2 (no {branch}.y release has it: linux-{branch}.y ended with {last} "
        f"in {when}). To get the fix, move to a branch that carries it: the nearest newer one is {move}."
    ), text


def test_compare_mode_advises_every_kernel_without_the_fix(runner):
    """Three kernels: 4.18.3 and 5.4.100 lack the fix (5.4.100, with 8dc1c444df19 since 5.4.99, is the one
    compared), 5.12 carries it; each of the two gets its own way to the fix, in run order."""
    text = _compare_text(runner, "4.18.3", "5.4.100", "5.12")
    assert text.endswith(
        " 4.18.3 (v4.18.3) lacks 89e5c58fc1e2 (no 4.18.y release has it: linux-4.18.y ended with 4.18.20 in November "
        f"2018). To get the fix, move to a branch that carries it: the nearest newer one is {TO_419}. 5.4.100 (v5.4.100) "
        "lacks 89e5c58fc1e2 (linux-5.4.y carries it since 5.4.106, as f2d78bbbca42)."
    ), text


def test_compare_mode_says_a_distribution_kernel_s_assumption_once(runner):
    """4.18.0-305.el8 (RHEL 8): the comparison's lead states the assumed lack; no kernel.org advice is added."""
    text = _compare_text(runner, "4.18.0-305.el8", "5.12")
    assert text.count("lacks 89e5c58fc1e2") == 1 and "move to a branch" not in text, text
