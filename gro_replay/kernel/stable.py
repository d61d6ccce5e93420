"""Stable kernel.org branches: the backports each took of the switches' commits (``STABLE_BACKPORTS``), which
commits' backports were looked for (``BACKPORTS_RESEARCHED``), and the branches that ended, with their last releases
(``STABLE_ENDED``), past whose last a point release names none (``refuse_past_end``). Kernel: none (the stable
trees' history and the stable announcements, cited below); kernel/release.py applies them to a point release
(``with_stable``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .model import KernelModel

#: Stable backports of the switches' commits: upstream commit → {stable branch: (stable commit, first point release)}.
#: Each was read in the stable trees' history as mirrored by the kernel.org post-receive notifications and the
#: stable review mails (the stable commit message says "commit <upstream> upstream"):
#:
#: * 89e5c58fc1e2 → 4.19.y e5008f2e9157 (between "Linux 4.19.180" 030194a5b292 and "Linux 4.19.181" ac3af4beac43;
#:   review "[PATCH 4.19 004/120]" of 2021-03-15, the 4.19.181-rc1 series); 5.4.y f2d78bbbca42 (linux-5.4.y range
#:   "Linux 5.4.105" ce615a08404c → "Linux 5.4.106" 0437de26e28d); 5.10.y 09af4362ba47 (stable/linux push of
#:   linux-5.10.y dfbf345b63c3 → "Linux 5.10.24" 05d125f7524e); 5.11.y 9b815b6efaf8 (linux-stable push of
#:   linux-rolling-stable e6711451ef30 → 42c4659cc6f4 of 2021-03-17, the 5.11.7 commits before "Linux 5.11.7"
#:   dd5ae3523018 and "Merge v5.11.7"; the same commit in linux-stable-rc queue/5.11 of 2021-03-18, before "Linux
#:   5.11.7"). (4.4.y, 4.9.y and 4.14.y took it too: no profile.)
#: * 8dc1c444df19 → 5.4.y 2085d886630a (just before "Linux 5.4.99" 850e6a95deb5; review "[PATCH 5.4 52/60]" of
#:   2021-02-15, the 5.4.99-rc1 series); 5.10.y 9e6ce473e96b (listed in the "Linux 5.10.17" announcement). 4.19.y has
#:   no GRO_NORMAL list (323ebb61e32b, v5.4), so the commit it fixes (c80794323e82) does not apply there.
#: * 7871f54e3dee → 6.1.y 0b1605e45c36 (before "Linux 6.1.7" 21e996306a6a; review "[PATCH 6.1 133/183]" of
#:   2023-01-16). It fixes 5eddb24901ee (v6.1), so no older branch needs it.
#: * b723748750ec → 5.4.y in 5.4.41: review "[PATCH 5.4 30/90] tunnel: Propagate ECT(1) when decapsulating as
#:   recommended by RFC6040" of 2020-05-13 (<20200513094411.682649645@linuxfoundation.org>, the 5.4.41-rc1 series),
#:   and the "Linux 5.4.41" announcement of 2020-05-14 (<158944616723079@kroah.com>: the shortlog names Toke
#:   Høiland-Jørgensen's patch, the diffstat include/net/inet_ecn.h). Its stable commit id is not read (None): the
#:   archive holds no kernel.org push of that month. 4.19.y did not take it: "Linux 4.19.123", of the same day and
#:   batch, lacks it and include/net/inet_ecn.h, and no 4.19 review of it exists. (Its checksum fix 2867e1eac610
#:   reached 5.4.y in 5.4.82: below.)
#: * 2867e1eac610 (``IP_ECN_set_ect1``'s checksum) → 5.4.y 2b714b607f24 in 5.4.82: review "[PATCH 5.4 21/39]
#:   inet_ecn: Fix endianness of checksum update when setting ECT(1)" of 2020-12-06
#:   (<20201206111555.693217763@linuxfoundation.org>), the "Linux 5.4.82" announcement of 2020-12-08
#:   (<160742509510821@kroah.com>), and the stable queue's push of 2020-12-08 rebased on that release, whose
#:   queue/5.4 revlist names 2b714b607f24 before "ec274ecd62f9 Linux 5.4.82". 4.19.y has no b723748750ec to fix
#:   (its queue to "Linux 4.19.162" lacks this too).
#: * a9888628cb2c → 6.16.y 8b1dc0217f96 in 6.16.9: review "[PATCH 6.16 023/149]" of 2025-09-22
#:   (<20250922192413.456801456@linuxfoundation.org>), the "Linux 6.16.9" announcement of 2025-09-25
#:   (<2025092511-ethanol-music-de7f@gregkh>) and the linux-rolling-stable push of that release, whose revlist
#:   names the commit before "b0d8acc71198 Linux 6.16.9". The long-term branches are not read: 6.12.y had not taken
#:   it by 6.12.50 (the linux-rolling-lts revlist to "Linux 6.12.49", the 6.12.50 announcement), which says nothing
#:   of later point releases.
STABLE_BACKPORTS: dict[str, dict[str, tuple[str | None, int]]] = {
    "89e5c58fc1e2": {
        "4.19": ("e5008f2e9157247e7758d8f19707033a2956e08c", 181),
        "5.4": ("f2d78bbbca42e55e96b415f6f232b22844beb7c7", 106),
        "5.10": ("09af4362ba47c805347840c2bb9719c0458925ca", 24),
        "5.11": ("9b815b6efaf8072ea0cdf2ed22ac51c0b76574d9", 7),
    },
    "8dc1c444df19": {
        "5.4": ("2085d886630a5efab216e677d03b51916cd77ff1", 99),
        "5.10": ("9e6ce473e96ba0ad63820325892373d24c1aa8aa", 17),
    },
    "7871f54e3dee": {
        "6.1": ("0b1605e45c36968a508703e08bf0947a68732841", 7),
    },
    "b723748750ec": {
        "5.4": (None, 41),
    },
    "a9888628cb2c": {
        "6.16": ("8b1dc0217f96cb649571ac029a5c746d94f96612", 9),
    },
    "2867e1eac610": {
        "5.4": ("2b714b607f24cd1ffeb492d73449a21fcc584b13", 82),
    },
}

#: Stable branches that ended: their last point release and its month, and the first upstream release whose merge
#: window opened after it — no commit first released there or later can be in the branch, so its backports need no
#: reading. Last releases and their dates: the stable announcements ("this is the LAST X.Y.z kernel") and the git tag
#: dates of linux-stable as endoflife.date's release-data lists them (4.20.17 and 5.2.21 have no announcement: tags
#: only; 5.2.20 was announced as the last, 5.2.21 followed). The window is two releases after the last upstream release
#: tagged on or before the branch's last (that one opened the next window while the branch lived): 4.19.325,
#: 2024-12-05, came after v6.12 (2024-11-17), so v6.13's commits could reach it and v6.14's could not; 5.4.302,
#: 2025-12-03, came after v6.18 (2025-11-30), so v6.19's could and 7.0's could not. 6.16.12 (2025-10-12, announced
#: as the last: lore 2025101235-eliminate-dexterity-d7f9@gregkh) came after v6.17 (2025-09-28); 6.17.13 (2025-12-18,
#: lore 2025121823-avid-hatchback-83fb@gregkh) after v6.18. Checked against endoflife.date's linux-kernel page
#: (products/linux-kernel.md, its "latest" of each cycle, from linux-stable's tags): 4.19.325 of 2024-12-05, 5.4.302
#: of 2025-12-03, 5.11.22 of 2021-05-19, 6.15.11 of 2025-08-20. Not listed: the long-term branches 5.10, 5.15, 6.1,
#: 6.6, 6.12 and 6.18 (live: no end known), branches after 6.17, and those older than 4.18 (refused by
#: release.resolve_kernel). A point release past a listed branch's last names no release (``refuse_past_end``).
#: 4.18 (run as 4.19, RHEL 8's base): its last tag, "Linux 4.18.20" a9da8725, is of 2018-11-21 (linux-stable's tags; no v4.18.21), after v4.19 (2018-10-22), so v4.20's commits could
#: reach it and v5.0's could not.
STABLE_ENDED: dict[str, tuple[int, str, tuple[int, int]]] = {
    "4.18": (20, "November 2018", (5, 0)),
    "4.19": (325, "December 2024", (6, 14)),
    "4.20": (17, "March 2019", (5, 2)),
    "5.0": (21, "June 2019", (5, 3)),
    "5.1": (21, "July 2019", (5, 4)),
    "5.2": (21, "October 2019", (5, 5)),
    "5.3": (18, "December 2019", (5, 6)),
    "5.4": (302, "December 2025", (7, 0)),
    "5.5": (19, "April 2020", (5, 8)),
    "5.6": (19, "June 2020", (5, 9)),
    "5.7": (19, "August 2020", (5, 10)),
    "5.8": (18, "November 2020", (5, 11)),
    "5.9": (16, "December 2020", (5, 12)),
    "5.11": (22, "May 2021", (5, 14)),
    "5.12": (19, "July 2021", (5, 15)),
    "5.13": (19, "September 2021", (5, 16)),
    "5.14": (21, "November 2021", (5, 17)),
    "5.16": (20, "April 2022", (5, 19)),
    "5.17": (15, "June 2022", (6, 0)),
    "5.18": (19, "August 2022", (6, 1)),
    "5.19": (17, "October 2022", (6, 2)),
    "6.0": (19, "January 2023", (6, 3)),
    "6.2": (16, "May 2023", (6, 5)),
    "6.3": (13, "July 2023", (6, 6)),
    "6.4": (16, "September 2023", (6, 7)),
    "6.5": (13, "November 2023", (6, 8)),
    "6.7": (12, "April 2024", (6, 10)),
    "6.8": (12, "May 2024", (6, 11)),
    "6.9": (12, "July 2024", (6, 12)),
    "6.10": (14, "October 2024", (6, 13)),
    "6.11": (11, "December 2024", (6, 14)),
    "6.13": (12, "April 2025", (6, 16)),
    "6.14": (11, "June 2025", (6, 17)),
    "6.15": (11, "August 2025", (6, 18)),
    "6.16": (12, "October 2025", (6, 19)),
    "6.17": (13, "December 2025", (7, 0)),
}


def backports_unread(commit: str, upstream: tuple[int, int] | None, branch: str, point: int) -> bool:
    """Whether the backports of ``commit`` (first released upstream in ``upstream``) to stable branch ``branch``
    ("5.4") up to its point release ``point`` were not read (``BACKPORTS_RESEARCHED``: the branch read whole, or
    up to a point release), for a branch that may have taken it (``ended_before``): then a release of the
    branch without a backport in ``STABLE_BACKPORTS`` lacks it by assumption, not as a fact."""
    if STABLE_BACKPORTS.get(commit, {}).get(branch) is not None:
        return False
    researched = BACKPORTS_RESEARCHED.get(commit, ())
    if researched is None or ended_before(branch, upstream):
        return False
    return not any(
        r == branch or (isinstance(r, tuple) and r[0] == branch and point <= r[1]) for r in researched
    )


def read_through(commit: str, branch: str) -> int | None:
    """The last point release of ``branch`` whose backports of ``commit`` were read (``BACKPORTS_RESEARCHED``'s
    ``(branch, point)``), None when the branch was read whole or not at all."""
    return next(
        (r[1] for r in BACKPORTS_RESEARCHED.get(commit) or () if isinstance(r, tuple) and r[0] == branch),
        None,
    )


#: the X.Y of a release as typed: "4.18", "4.18.20", "5.12-rc1", "4.18.0-305.el8"
_BRANCH = re.compile(r"(\d+\.\d+)(?:\.\d+)?(?:[-+.]|$)", re.ASCII)


def own_branch(model: KernelModel) -> str:
    """The stable branch ("4.18") a kernel's release names: its X.Y, not the profile it runs as (4.18 runs as 4.19);
    for a distribution kernel its ``vendor_base``'s; "" when the release names none."""
    named = getattr(model, "vendor_base", "") or model.release
    m = _BRANCH.match(named)
    return m[1] if m else ".".join((getattr(model, "base", "") or "").split(".")[:2])


def short_commit(stable: str | None) -> str:
    """A stable commit as tables print it: its first 12 hex digits, or "(id not read)" where ``STABLE_BACKPORTS``
    has None (a backport known from its review and release announcement, its commit id not read)."""
    return stable[:12] if stable else "(id not read)"


def ended_before(branch: str, upstream: tuple[int, int] | None) -> bool:
    """Whether stable branch ``branch`` ("4.19") ended before a commit first released in upstream ``upstream``
    could reach it (``STABLE_ENDED``); False for a branch not known to have ended or an unknown release."""
    ended = STABLE_ENDED.get(branch)
    return ended is not None and upstream is not None and upstream >= ended[2]


def refuse_past_end(branch: str, point: int, text: str) -> None:
    """Refuse kernel string ``text`` whose stable point release ``point`` of ``branch`` ("5.11") is past the
    branch's last (``STABLE_ENDED``: linux-5.11.y ended with 5.11.22, so 5.11.30 was never released). A branch not
    known to have ended (5.10, 6.1, 6.18, …) takes any point. Kernel: none (kernel.org's stable releases, above).

    Raises: ValueError, one line naming the branch's last release and the month it came out."""
    ended = STABLE_ENDED.get(branch)
    if ended is None or point <= ended[0]:
        return
    last, when, _ = ended
    raise ValueError(
        f"kernel {text} names no release: linux-{branch}.y ended with {branch}.{last} in {when}, so there is no "
        f"{branch}.{point}"
    )


#: Commits whose stable backports were looked for in the stable mailing-list archive and the stable trees' push
#: notifications, and the branches read (None: every branch; no stable review or stable commit of it exists in the
#: archive besides those in STABLE_BACKPORTS). Feature commits were never marked for stable (6fc2f3832d36 went to
#: net-next only). A branch not read for a commit the branch's base lacks resolves without it and says so, unless
#: the branch ended before the commit was released (``ended_before``).
BACKPORTS_RESEARCHED: dict[str, tuple[str | tuple[str, int], ...] | None] = {
    "8dc1c444df19": ("4.19", "5.4", "5.10"),
    "89e5c58fc1e2": ("4.19", "5.4", "5.10", "5.11"),
    # fixes 5eddb24901ee (v6.1): no branch before 6.1 has what it fixes; 6.1.y took it
    "7871f54e3dee": None,
    "eac1b93c14d6": None,
    "6fc2f3832d36": None,
    "0fe79f28bfaf": None,
    "5eddb24901ee": None,
    "b1a78b9b9886": None,
    "4b0ebbca3e16": None,
    "4e4f7cefb130": None,
    "21f7484220ac": None,
    "f095a358faf2": None,
    "ab4c8b6f7fcb": None,
    # a net-next feature (the 6.6 pull); the only stable backport found is Jason Baron's later fix of 09c2c90705bb
    # (MAX_SKB_FRAGS - 1), taken by branches that have 09c2c90705bb
    "ae6db08f8b56": None,
    # 6.16.y took it (STABLE_BACKPORTS); 6.12.y read up to 6.12.50, not taken (STABLE_BACKPORTS' comment); the
    # other long-term branches not read
    "a9888628cb2c": ("6.16", ("6.12", 50)),
    # 5.4.y took it in 5.4.41, 4.19.y did not (STABLE_BACKPORTS)
    "b723748750ec": ("4.19", "5.4"),
    # its fix: 5.4.y in 5.4.82; 4.19.y has nothing to fix (the 5.7-5.9 branches are not read)
    "2867e1eac610": ("4.19", "5.4"),
    # a net-next cleanup (it changes only how a zero checksum is written): the archive holds its three netdev
    # versions, the net-next and linux-next pushes and no stable review
    "0780b4145634": None,
}
