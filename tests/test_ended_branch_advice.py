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
