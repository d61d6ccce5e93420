"""Release strings that name no release because their branch or release cycle had ended before them
(kernel/stable.py ``refuse_past_end``, kernel/release.py ``LAST_RC``): refused, one line, exit 2, in every form a
release is given in.

Facts (kernel.org's releases, as endoflife.date's products/linux-kernel.md lists each cycle's last release and its
date from linux-stable's tags, with the announcements it links): linux-5.11.y ended with 5.11.22 (2021-05-19),
4.19.y with 4.19.325 (2024-12-05), 5.4.y with 5.4.302 (2025-12-03), 5.12.y with 5.12.19 (2021-07-20), 6.5.y with
6.5.13 (2023-11-28), 6.15.y with 6.15.11 (2025-08-20), 6.16.y with 6.16.12 (2025-10-12), 6.17.y with 6.17.13
(2025-12-18); 4.18.y with 4.18.20 (tag of 2018-11-21, no v4.18.21); 4.20.y with 4.20.17 (March 2019), 5.2.y with
5.2.21 (October 2019). Mainline: v5.12 followed v5.12-rc8 (2021-04-25, ten weeks after v5.11: rc1-rc8), v6.18
followed v6.18-rc7, v6.7 followed v6.7-rc8, v4.18 followed v4.18-rc8. 5.10, 5.15, 6.1, 6.6, 6.12 and 6.18 are
live long-term branches: no last release is known.
"""

from __future__ import annotations

import pytest
from conftest import FIX_SAMPLE

from gro_replay.cli import main
from gro_replay.kernel.model import FIX_COMMIT
from gro_replay.kernel.release import resolve_kernel
from gro_replay.kernel.stable import STABLE_ENDED

#: (a point past the branch's last, the last, the month it came out)
PAST = [
    ("5.11.30", "5.11.22", "May 2021"),
    ("4.18.25", "4.18.20", "November 2018"),
    ("4.19.326", "4.19.325", "December 2024"),
    ("5.4.303", "5.4.302", "December 2025"),
    ("5.12.20", "5.12.19", "July 2021"),
    ("4.20.18", "4.20.17", "March 2019"),
    ("5.2.22", "5.2.21", "October 2019"),
    ("6.5.14", "6.5.13", "November 2023"),
    ("6.15.12", "6.15.11", "August 2025"),
    ("6.16.13", "6.16.12", "October 2025"),
    ("6.17.14", "6.17.13", "December 2025"),
]


def _said(text: str, point: str, last: str, when: str) -> str:
    branch = last.rsplit(".", 1)[0]
    return (
        f"Error: kernel {text} names no release: linux-{branch}.y ended with {last} in {when}, so there is no "
        f"{point}\n"
    )


@pytest.mark.parametrize(("point", "last", "when"), PAST)
def test_a_point_past_an_ended_branch_is_refused_on_every_command(runner, point, last, when):
    """5.11.30 was run and said to carry the fix "since 5.11.7"; 4.18.25 ran as 4.19 while the same verdict said
    "linux-4.18.y ended with 4.18.20". Both name no release; so does every point past an ended branch's last."""
    with pytest.raises(ValueError, match="names no release"):
        resolve_kernel(point)
    for cmd in ([str(FIX_SAMPLE)], ["explain", str(FIX_SAMPLE)], ["kernels"], ["batch", str(FIX_SAMPLE)]):
        r = runner.invoke(
            main, [*cmd, "--kernel", point, "-q"] if cmd[0] != "kernels" else [*cmd, "--kernel", point]
        )
        assert r.exit_code == 2, (cmd, r.output)
        assert r.stdout == ""
        assert r.stderr == _said(point, point, last, when)


@pytest.mark.parametrize(("point", "last", "when"), PAST)
def test_the_last_point_of_an_ended_branch_stays_accepted(runner, point, last, when):
    assert resolve_kernel(last).release == last
    r = runner.invoke(main, [str(FIX_SAMPLE), "--kernel", last, "-q"])
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("branch", sorted(STABLE_ENDED))
def test_every_ended_branch_refuses_the_point_after_its_last(branch):
    last, when, _ = STABLE_ENDED[branch]
    resolve_kernel(f"{branch}.{last}")
    with pytest.raises(ValueError) as e:
        resolve_kernel(f"{branch}.{last + 1}")
    assert (
        str(e.value) == _said(f"{branch}.{last + 1}", f"{branch}.{last + 1}", f"{branch}.{last}", when)[7:-1]
    )


@pytest.mark.parametrize(
    ("text", "point", "last", "when"),
    [
        # distribution uname -r strings whose version names the stable point
        ("5.4.303-1-vendor", "5.4.303", "5.4.302", "December 2025"),
        ("6.5.14-300.fc39.x86_64", "6.5.14", "6.5.13", "November 2023"),
        ("4.18.25-1-custom", "4.18.25", "4.18.20", "November 2018"),
        # a release with a build's suffix after "+"
        ("5.11.30+abcdef1", "5.11.30", "5.11.22", "May 2021"),
    ],
)
def test_a_build_string_naming_a_point_past_the_end_is_refused(runner, text, point, last, when):
    r = runner.invoke(main, [str(FIX_SAMPLE), "--kernel", text, "-q"])
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr == _said(text, point, last, when)


def test_the_verdict_s_applied_name_of_a_point_past_the_end_is_refused_as_that_point(runner):
    """``X+<modelled commit>`` resolves its release first (release._applied_commit): the release is refused."""
    r = runner.invoke(main, [str(FIX_SAMPLE), "--kernel", f"5.11.30+{FIX_COMMIT}", "-q"])
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr == _said("5.11.30", "5.11.30", "5.11.22", "May 2021")


@pytest.mark.parametrize(
    ("text", "point", "last", "when"),
    [
        # Ubuntu's /proc/version_signature names the stable release it is built from
        ("Ubuntu 5.4.0-216.236-generic 5.4.303", "5.4.303", "5.4.302", "December 2025"),
        # Debian's uname -rv names its package version, X.Y.Z-N
        ("4.19.0-27-amd64 #1 SMP Debian 4.19.326-1 (2024-12-20)", "4.19.326", "4.19.325", "December 2024"),
    ],
)
def test_a_longer_kernel_string_naming_a_point_past_the_end_is_refused(runner, text, point, last, when):
    r = runner.invoke(main, [str(FIX_SAMPLE), "--kernel", text, "-q"])
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr == _said(f"string {text!r}", point, last, when)


@pytest.mark.parametrize("release", ["5.10.400", "6.1.500", "6.18.99", "5.15.300-1-vendor"])
def test_a_live_branch_takes_any_point(runner, release):
    """No end is known for the live long-term branches: a point not released yet is not refused."""
    assert resolve_kernel(release).carries(FIX_COMMIT)
    assert runner.invoke(main, [str(FIX_SAMPLE), "--kernel", release, "-q"]).exit_code == 0


@pytest.mark.parametrize(
    ("text", "rc", "last"),
    [
        ("5.12-rc9", "5.12-rc9", 8),
        ("5.12.0-rc9", "5.12-rc9", 8),
        ("5.12-rc9+", "5.12-rc9", 8),
        ("5.12.0-0.rc9.20210420git.1.fc35.x86_64", "5.12-rc9", 8),
        ("6.18-rc8", "6.18-rc8", 7),
        ("4.18-rc9", "4.18-rc9", 8),
        # "rc" in any letter case and Debian's "~rc" (breaker's finding: these ran as the release itself)
        ("5.12-RC9", "5.12-rc9", 8),
        ("5.12.0-RC9-generic", "5.12-rc9", 8),
        ("5.12.0-051200RC9-generic", "5.12-rc9", 8),
        ("5.12.0~rc9", "5.12-rc9", 8),
    ],
)
def test_a_release_candidate_after_the_last_one_is_refused(runner, text, rc, last):
    """5.12-rc9 was run and said to carry the fix: v5.12 followed v5.12-rc8, so no 5.12-rc9 exists."""
    xy = rc.split("-")[0]
    r = runner.invoke(main, [str(FIX_SAMPLE), "--kernel", text, "-q"])
    assert r.exit_code == 2 and r.stdout == ""
    assert (
        r.stderr
        == f"Error: kernel {text} names no release: {xy} was released after -rc{last}, so there is no {rc}\n"
    )


@pytest.mark.parametrize("release", ["5.12-rc8", "6.7-rc8", "6.18-rc7", "4.18-rc8"])
def test_the_last_release_candidate_stays_accepted(release):
    assert resolve_kernel(release).pre_release == release


@pytest.mark.parametrize(
    "text", ["5.12-RC1", "5.12-Rc1", "5.12.0-RC1-generic", "5.12.0~rc1", "5.12.0~rc1-1~exp1"]
)
def test_a_release_candidate_in_any_spelling_is_that_release_candidate(text):
    """5.12-rc1 lacks 89e5c58fc1e2 (merged for v5.12-rc2); upper-case RC and Debian's ~rc were read as a build of
    5.12 itself, which carries it: the verdict reversed (breaker's finding)."""
    m = resolve_kernel(text)
    assert m.pre_release == "5.12-rc1" and not m.carries(FIX_COMMIT)


def test_a_4_18_release_candidate_is_named_as_4_18s(runner):
    """4.18 runs as the 4.19 model; its release candidate is still 4.18's (it was "a pre-release of upstream 4.19",
    pre_release 4.19-rc8, a release candidate of another release)."""
    m = resolve_kernel("4.18-rc8")
    assert (m.base, m.pre_release) == ("4.19", "4.18-rc8")
    assert (
        "kernel 4.18-rc8: a pre-release of upstream 4.18; no modelled commit landed in 4.18's merge window or "
        "release candidates: ran as 4.19" in m.notes
    )
    assert m.describe()["pre_release"] == {"release": "4.18-rc8", "lacks": []}
