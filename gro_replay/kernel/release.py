"""Kernel release strings → ``KernelModel`` (``resolve_kernel``): a profile, an upstream ``X.Y``, a stable point
release (``with_stable``: the backports its branch took, ``stable.STABLE_BACKPORTS``), a pre-release (``X.Y-rcN``),
a distribution's ``uname -r`` (kernel/distro.py) or the longer strings naming the stable release it is built from
(kernel/banner.py). Kernel: none (release naming: the top-level Makefile's VERSION/PATCHLEVEL/SUBLEVEL/EXTRAVERSION,
scripts/setlocalversion; the distributions' packaging, cited in distro.py and banner.py).
"""

from __future__ import annotations

import re
from dataclasses import replace

from .banner import MAX_LEN, Banner, is_banner, parse_banner, shown
from .distro import DistroRelease, base_words, parse_distro_release
from .model import (
    PROFILES,
    SWITCH_COMMITS,
    KernelModel,
    SwitchCommit,
    rc_lacks,
    release_tuple,
    upstream_profile,
)
from .stable import STABLE_BACKPORTS, backports_unread, own_branch, read_through, refuse_past_end

# ASCII only: \d would take other scripts' digits ('5.٤.١٠٦'), which no kernel version has
_UPSTREAM = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?", re.ASCII)
#: a pre-release: X.Y-rcN (Makefile EXTRAVERSION), X.Y.0-rcN (uname -r), X.Y.0-0.rcN.… (Fedora),
#: X.Y.0-XXYY00rcN-… (Ubuntu mainline builds), X.Y~rcN (Debian's package versions: 5.12~rc3-1~exp1), with a local
#: or distribution suffix after it; "rc" in any letter case (5.12-RC1 is 5.12-rc1, not 5.12 with a suffix)
_RC = re.compile(r"(\d+)\.(\d+)(?:\.0)?[-~](?:0\.|[0-9]{6})?rc(\d+)([-+.~_]\S*)?", re.ASCII | re.IGNORECASE)
#: a build's own string: X.Y or X.Y.Z, then a separator and its suffix; a dot after X.Y starts the point release,
#: digits (``5.10.-1``, ``5.10.0x1``, ``5.10.1e3`` are typos, not a distribution's uname -r)
#: a release (X.Y, X.Y.Z, X.Y-rcN, a distribution's uname -r), "+" and a commit id: how the verdict names a kernel
#: it replays with a commit applied
#: (``NAME+89e5c58fc1e2``), refused as a release when the id is a modelled commit's (``_applied_commit``)
_APPLIED = re.compile(r"(\d+\.\d+\S*?)\+([0-9a-fA-F]{7,40})", re.ASCII)
_OTHER = re.compile(r"(\d+)\.(\d+)(?:\.(\d+)[-+.~_]|[-+~_])\S*", re.ASCII)
#: a version number with a leading zero (05, 0106): kernel versions have none
_LEADING_ZERO = re.compile(r"(?<![0-9])0[0-9]", re.ASCII)


#: who built a release whose grammar names no builder (5.12.1-rc1-amd64, 6.18.44-fc-v657)
UNKNOWN_VENDOR = "the distribution"


def with_stable(base: KernelModel, point: int, name: str) -> KernelModel:
    """``base`` (an upstream profile) plus the stable backports its branch took up to point release ``point``.

    Switches whose commit's backports were not researched for this branch stay as in ``base`` and add a note (none
    when the branch ended before the commit was released: ``stable.ended_before``). ``point`` is one of the branch's
    releases: the callers refuse one past an ended branch's last (``stable.refuse_past_end``).
    """
    branch = base.release
    on: dict[str, bool] = {}
    backports = []
    notes = []
    unread: list[str] = []
    for c in SWITCH_COMMITS:
        if getattr(base, c.switch):
            continue
        took = STABLE_BACKPORTS.get(c.commit, {}).get(branch)
        if took is not None:
            stable, first = took
            if point >= first:
                on[c.switch] = True
                backports.append((c.commit, stable, f"{branch}.{first}"))
            continue
        if backports_unread(c.commit, c.upstream, branch, point):
            unread.append(c.commit)
            upto = read_through(c.commit, branch)
            notes.append(
                f"backports unknown: whether linux-{branch}.y took {c.commit} ({c.switch}) was not read in the "
                f"stable sources{f' after {branch}.{upto}' if upto else ''}; {name} has it off as upstream {branch} does"
            )
    model = replace(base, name=name, release=name, backports=tuple(backports), notes=tuple(notes))
    return replace(model, unread=tuple(unread), **on)  # type: ignore[arg-type]  # bool switches


def _pre_release(model: KernelModel, major: int, minor: int, rc: int, text: str) -> tuple[KernelModel, str]:
    """``model`` (upstream X.Y, or the profile X.Y runs as: 4.19 for 4.18) as its pre-release ``X.Y-rcN``: a switch
    whose commit landed in a later rc of X.Y (``SwitchCommit.upstream_rc``) is off; the others of X.Y are assumed
    in. Returns the model and its note."""
    rel = f"{major}.{minor}"
    own = [c for c in SWITCH_COMMITS if c.upstream == (major, minor)]
    lacks = rc_lacks(major, minor, rc)
    parts = [f"{c.commit} ({c.switch}) landed in v{rel}-rc{c.upstream_rc}: off" for c in lacks]
    parts += [
        f"{c.commit} ({c.switch}) landed in v{rel}-rc{c.upstream_rc}: on"
        for c in own
        if c.upstream_rc is not None and c.upstream_rc <= rc
    ]
    unpinned = [c.commit for c in own if c.upstream_rc is None]
    if unpinned:
        parts.append(f"assumed to carry {', '.join(unpinned)} of {rel} (the rc each landed in is not known)")
    if not own:
        parts.append(
            f"no modelled commit landed in {rel}'s merge window or release candidates: ran as {model.base or rel}"
        )
    note = f"kernel {text}: a pre-release of upstream {rel}; " + "; ".join(parts)
    return replace(model, pre_release=f"{rel}-rc{rc}", **{c.switch: False for c in lacks}), note  # type: ignore[arg-type]  # bool switches


def _check_release_chars(text: str) -> None:
    """Raises ValueError when ``text`` has a character or a number no kernel release string has."""
    if not text.isascii():
        raise ValueError(
            f"kernel release {text!r} is not ASCII (want X.Y, X.Y.Z or a distribution's uname -r)"
        )
    if not re.fullmatch(r"[A-Za-z0-9._+~-]*", text):
        # uname -r is letters, digits and . _ + ~ - (a build's LOCALVERSION too); a comma, bracket or = would also
        # make the name ambiguous in the SUMMARY line's kernels=A,B and kernel[NAME]. keys
        raise ValueError(
            f"kernel release {text!r} has a character no release string has (want letters, digits and . _ + ~ -: "
            "X.Y, X.Y.Z or a distribution's uname -r; give --kernel once per kernel)"
        )
    version = re.match(r"[0-9.]*", text).group().rstrip(".")  # type: ignore[union-attr]  # * matches any text
    if _LEADING_ZERO.search(version):
        raise ValueError(f"kernel release {text!r}: version numbers have no leading zeros (e.g. 5.4.106)")


def _resolve_banner(text: str, b: Banner) -> KernelModel:
    """The model of kernel string ``text`` parsed as ``b`` (kernel/banner.py): its release's model when it names no
    more; else upstream X.Y with the stable backports of the X.Y.Z it names (its pre-release for X.Y-rcN), named
    ``b.name``, with the vendor's note: the vendor's own patches stay unknown, the stable base is now known.

    Raises: ValueError when the release and the version the string names differ in X.Y or, for a release
    candidate, in its rc (two kernels), and as
    ``resolve_kernel`` does for the release or the named version.
    """
    m, d = _resolved(b.release) if b.release else (None, None)
    s = b.stated
    if s is None:
        assert m is not None  # parse_banner refuses a uname -v that names neither a release nor a package
        if m.vendor == "Debian" and len(m.vendor_base.split(".")) == 2 and b.version_part:
            note = (
                f"kernel {b.release}: its uname -v {shown(b.version_part, 48)} names no Debian package version "
                "('Debian X.Y.Z-N'), so its stable release stays unknown"
            )
            return replace(m, notes=m.notes + (note,))
        return m
    xy = f"{s.major}.{s.minor}"
    # the X.Y the release names (not the profile run: 4.18.5 and 4.18-rc3 run as 4.19)
    rel_xy = ".".join((m.vendor_base or b.release).split(".")[:2]).split("-")[0] if m is not None else xy
    if rel_xy != xy:
        raise ValueError(
            f"kernel string {shown(text)}: its release {b.release} is {rel_xy} but its {s.where} names {s.what} "
            f"({s.version}): two different kernels (give one machine's uname -rv, /proc/version or "
            "/proc/version_signature)"
        )
    rc = s.pre_release
    named = xy if rc is None else f"{xy}-rc{rc}"
    if m is not None and m.pre_release and m.pre_release != named:
        raise ValueError(
            f"kernel string {shown(text)}: its release {b.release} is {m.pre_release} but its {s.where} names "
            f"{s.what} ({s.version}): two different kernels (give one machine's uname -rv, /proc/version or "
            "/proc/version_signature)"
        )
    up = resolve_kernel(named)
    point = s.point if rc is None else 0
    refuse_past_end(xy, point, f"string {shown(text)}")
    # the backports of X.Y.Z are known where X.Y is a modelled branch; 4.18.20 runs as 4.19 (none modelled)
    known = point and up.base == xy
    model = with_stable(up, point, b.name) if known else replace(up, name=b.name, release=b.name)
    signed = b.kind == "/proc/version_signature"  # Ubuntu's, whatever flavour its uname -r has
    who = d.who if d is not None and d.who else ("" if b.release and not signed else s.who)
    # who built it: the release's vendor (Raspberry Pi OS's 6.1.0-rpi7-rpi-v8 with Debian's packaging stays "the
    # distribution"'s), but the banner's for a release candidate's build (Debian's 5.12.0-rc1-amd64)
    by_release = m.vendor if m is not None and not m.pre_release and not signed else ""
    vendor = by_release or s.vendor
    assumed = f"upstream {xy}-rc{rc}" if rc is not None else base_words(s.major, s.minor, point)
    note = (
        f"{who + ' ' if who else ''}kernel {b.name} ({s.where}: {s.what}): built from upstream {s.version}; {vendor}'s own "
        f"patches are not known here; assumed {assumed}"
    )
    own = re.match(r"[0-9]+\.[0-9]+\.([0-9]+)", b.release)
    if own and int(own.group(1)) not in (0, s.point):
        note += f" (its release names {xy}.{own.group(1)}; the version the build names is used)"
    notes = (note,) + up.notes + (model.notes if known else ())
    return replace(model, notes=notes, vendor=vendor, vendor_base=xy + (f".{point}" if point else ""))


def resolve_kernel(text: str) -> KernelModel:
    """The model for a kernel release string as ``uname -r`` or a changelog writes it.

    * a named profile (``5.11``, ``5.4``, ``6.18``) or any upstream ``X.Y`` from 4.19 to 6.18 (switches by release);
    * a stable point release ``X.Y.Z``: upstream ``X.Y`` plus the backports STABLE_BACKPORTS lists for branch
      ``X.Y`` with a first point release ≤ Z (``5.4.106`` carries 89e5c58fc1e2 as f2d78bbbca42, ``5.4.105`` not);
    * a pre-release ``X.Y-rcN`` (``X.Y.0-rcN``): upstream ``X.Y`` without the commits that landed in a later rc
      (``SwitchCommit.upstream_rc``: ``5.12-rc1`` lacks 89e5c58fc1e2, ``5.12-rc2`` has it), with a note that
      the other commits of X.Y are assumed in;
    * a distribution kernel (``distro.parse_distro_release``: ``5.10.0-21-amd64`` Debian 11, ``5.4.0-42-generic``
      Ubuntu, ``4.18.0-305.el8`` RHEL 8, SUSE, Fedora, Amazon Linux, Oracle UEK, Proxmox, Arch; any other suffix:
      "the distribution"): its own backports cannot be known here, so the upstream base is used (with a stable
      point release only when the version carries one, X.Y.Z with Z > 0) and ``notes`` say whose kernel it is
      and which base was assumed. Ubuntu's mainline builds (``5.11.7-051107-generic``) are upstream releases.
      A 4.18 base runs as 4.19 with a note (the one GRO list before 07d78363dcff is not modelled); older
      ones are refused.
    * a string that names the stable release a distribution kernel is built from (kernel/banner.py: Debian's
      ``uname -v``, ``uname -rv`` and ``/proc/version``, Ubuntu's ``/proc/version_signature``, any
      ``/proc/version``): the vendor's kernel on upstream X.Y with the stable backports of the X.Y.Z it names
      (``5.10.0-21-amd64 #1 SMP Debian 5.10.162-1 (2023-01-21)`` carries 89e5c58fc1e2 from 5.10.24 on), named by
      its ``uname -r`` (the package version for a ``uname -v`` alone); one that names nothing beyond its release
      resolves as that release.

    Raises: ValueError for a string that is no kernel release (non-ASCII digits, a leading zero such as
        ``5.4.0106``), for a base that names no mainline release (``5.20``, ``4.21``: ``LAST_MINOR``; ``5.12-rc0``:
        release candidates start at rc1; ``5.12-rc9``: ``LAST_RC``; ``5.11.30``, past linux-5.11.y's last:
        ``stable.refuse_past_end``), for a modelled commit after ``+`` (``_no_release``), for a base
        older than 4.18, and for a base
        newer than the newest profile
    (6.18: ``7.99``, ``6.19.2``, ``7.0.0-1-generic``), whose GRO changes are not modelled; the message names the
    newest profile; for a longer kernel string as ``banner.parse_banner`` and ``_resolve_banner`` raise (a release
    and a package version of different X.Y, two releases, a ``uname -v`` naming no release, over MAX_LEN).
    """
    return _resolved(text)[0]


def _no_release(text: str) -> None:
    """Refuse release strings of a release's shape that name none: ``X.Y-rc0`` (a merge window's first tag is
    -rc1, the Makefile's EXTRAVERSION), ``X.Y-rc01`` (no leading zeros, as ``_check_release_chars`` says of X.Y.Z) and ``X.Y+<modelled commit>`` (``_applied_commit``). Raises: ValueError."""
    m = _RC.fullmatch(text)
    if m is not None and int(m.group(3)) == 0:
        raise ValueError(f"kernel {text} names no release: release candidates start at -rc1")
    if m is not None and m.group(3) != str(int(m.group(3))):
        raise ValueError(f"kernel {text}: version numbers have no leading zeros (-rc{int(m.group(3))})")
    _applied_commit(text)


def _applied_commit(text: str) -> None:
    """Refuse ``X.Y+<commit>`` where the commit id is one of ``SWITCH_COMMITS``: the name the verdict gives a kernel
    it replays with that commit applied (``5.10+89e5c58fc1e2``, SUMMARY ``fix_alone=``), which a user may copy; read
    as a build's suffix, it ran the release without the commit and the verdict said so of it (breaker's finding).
    Raises: ValueError naming the commit, what to run instead and the releases that carry it (``_carried_by``)."""
    m = _APPLIED.fullmatch(text)
    if m is None:
        return
    base, h = m.group(1), m.group(2).lower()
    for c in SWITCH_COMMITS:
        if c.commit.startswith(h) or h.startswith(c.commit):
            model = _resolved(base)[0]  # raises as for the release alone (7.99+89e5c58fc1e2: newer than 6.18)
            branch = own_branch(model)
            # the point release a stable kernel names (0: X.Y, a pre-release; a vendor's is not kernel.org's)
            up = _UPSTREAM.fullmatch(model.release)
            point = int(up.group(3) or 0) if up is not None else 0
            if getattr(model, c.switch):  # a switch is on where its commit is in (SWITCH_COMMITS)
                rc_unknown = model.pre_release and c.upstream_rc is None and model.base == branch
                how = f" ({base} {'is assumed to carry it: the rc it landed in is not known' if rc_unknown else 'carries it'})"
            else:
                if model.vendor:
                    lacks = f"{base} is assumed to lack it, as its upstream base does"
                elif point and backports_unread(c.commit, c.upstream, branch, point):
                    upto = read_through(c.commit, branch)
                    lacks = (
                        f"{base} is assumed to lack it, as linux-{branch}.y's backports of it were not read"
                        + (f" after {branch}.{upto}" if upto else "")
                    )
                else:
                    lacks = f"{base} lacks it"
                if c.switch == "udp_tunnel_gate_checks_uh_check":
                    lacks += f": the verdict replays {base} with it applied beside it"
                how = f" ({lacks}; {_carried_by(c, model)})"
            raise ValueError(
                f'kernel {text}: +{h} names {c.commit} ("{c.title}"), a commit gro-replay models, not a '
                "build's suffix; no commit is applied to a release by name (NAME+89e5c58fc1e2 is only how the "
                f"verdict names a kernel it replays with the fix applied): use --kernel {base}{how}"
            )


def _carried_by(c: SwitchCommit, model: KernelModel) -> str:
    """The releases that carry commit ``c`` for a kernel ``model`` that lacks it (``_applied_commit``'s advice): the
    stable point release of the model's branch that took it (kernel/stable.py ``STABLE_BACKPORTS``; not for a
    distribution's kernel, whose point releases are its vendor's), else the upstream release, and release
    candidate where pinned, that it first appeared in (``SwitchCommit.upstream``, ``upstream_rc``)."""
    branch = own_branch(model)
    took = STABLE_BACKPORTS.get(c.commit, {}).get(branch)
    if took is not None and not model.vendor:
        return f"{branch}.{took[1]} and later {branch}.y releases carry it"
    if c.upstream is None:
        return "no release gro-replay models carries it"
    up = f"{c.upstream[0]}.{c.upstream[1]}"
    if c.upstream_rc is None:
        return f"{up} and later carry it"
    if model.release != model.base and model.base == up:  # a release candidate of the commit's own release
        return f"{up}-rc{c.upstream_rc} and later carry it"
    return f"{up} and later carry it, from {up}-rc{c.upstream_rc}"


#: the last mainline release of each finished major number (kernel.org: 3.19 was followed by 4.0 in April 2015,
#: 4.20 by 5.0 in March 2019, 5.19 by 6.0 in October 2022): a higher minor names no release
LAST_MINOR = {3: 19, 4: 20, 5: 19}

#: the last release candidate of each mainline release from 4.18 to 6.18 (its tags: v5.12-rc8 was followed by v5.12,
#: v6.7-rc8 by v6.7): a later -rcN names no release. Most releases had seven, those that needed another week eight;
#: each count agrees with the weeks between the release and the one before it (rc1 two weeks after that one, one rc
#: a week, the release a week after its last rc: v5.11 2021-02-14 → v5.12 2021-04-25 is ten weeks, rc1–rc8)
LAST_RC = {
    (4, 18): 8, (4, 19): 8, (4, 20): 7, (5, 0): 8, (5, 1): 7, (5, 2): 7, (5, 3): 8, (5, 4): 8, (5, 5): 7,
    (5, 6): 7, (5, 7): 7, (5, 8): 7, (5, 9): 8, (5, 10): 7, (5, 11): 7, (5, 12): 8, (5, 13): 7, (5, 14): 7,
    (5, 15): 7, (5, 16): 8, (5, 17): 8, (5, 18): 7, (5, 19): 8, (6, 0): 7, (6, 1): 8, (6, 2): 8, (6, 3): 7,
    (6, 4): 7, (6, 5): 7, (6, 6): 7, (6, 7): 8, (6, 8): 7, (6, 9): 7, (6, 10): 7, (6, 11): 7, (6, 12): 7,
    (6, 13): 7, (6, 14): 7, (6, 15): 7, (6, 16): 7, (6, 17): 7, (6, 18): 7,
}  # fmt: skip


def _resolved(text: str) -> tuple[KernelModel, DistroRelease | None]:
    """``resolve_kernel``'s model of ``text`` and the distribution release it parsed ``text`` as (None: a profile,
    an upstream or pre-release, another build, a longer string), so that ``_resolve_banner`` names a release's
    vendor without parsing it again. Raises: ValueError as ``resolve_kernel``."""
    text = text.strip()
    if text in PROFILES:
        return PROFILES[text], None
    if len(text) > MAX_LEN or is_banner(text):
        return _resolve_banner(text, parse_banner(text)), None
    _check_release_chars(text)
    _no_release(text)
    notes: list[str] = []
    point = 0
    rc = None
    vendor = ""
    d = None
    m = _UPSTREAM.fullmatch(text)
    if m:
        major, minor = int(m.group(1)), int(m.group(2))
        point = int(m.group(3) or 0)
    elif (m := _RC.fullmatch(text)) is not None:
        major, minor, rc = int(m.group(1)), int(m.group(2)), int(m.group(3))
        if m.group(4):  # "+": setlocalversion's mark of a tree past the tag
            vendor = UNKNOWN_VENDOR  # a later rc's commits may be in it: what it lacks is assumed, not known
            notes.append(
                f"kernel {text}: a build of or after {major}.{minor}-rc{rc} (a later snapshot, a distribution's "
                f"patches): what it adds is not known here; assumed {major}.{minor}-rc{rc}"
            )
    elif (d := parse_distro_release(text)) is not None:
        major, minor, point, vendor = d.major, d.minor, d.point, d.vendor
        notes.append(d.note)
    elif (m := _OTHER.fullmatch(text)) is not None:
        major, minor = int(m.group(1)), int(m.group(2))
        point = int(m.group(3) or 0)
        vendor = UNKNOWN_VENDOR
        notes.append(
            f"kernel {text}: the distribution's or build's own patches are not known here; assumed upstream "
            f"{major}.{minor}" + (f" with the stable backports of {major}.{minor}.{point}" if point else "")
        )
    else:
        raise ValueError(
            f"cannot parse kernel release {text!r} (want X.Y, X.Y.Z or a distribution's uname -r)"
        )
    _refuse_unreleased(text, major, minor, point, rc)
    vendor_base = f"{major}.{minor}" + (f".{point}" if point else "") if vendor else ""
    named = (major, minor)  # 4.18 runs as 4.19 below; its release candidates stay 4.18's
    if (major, minor) < (4, 19):
        notes.append(
            f"upstream {major}.{minor} predates 4.19: it had one GRO list, not 8 hash buckets (07d78363dcff), "
            f"which is not modelled; ran as 4.19 (every switch off, as in {major}.{minor})"
        )
        major, minor, point = 4, 19, 0
    base_rel = f"{major}.{minor}"
    base = PROFILES.get(base_rel) or upstream_profile(major, minor)
    base = replace(base, name=base_rel, release=base_rel) if base.name != base_rel else base
    model = with_stable(base, point, text) if point else replace(base, name=text, release=text)
    if rc is not None:
        model, rc_note = _pre_release(model, *named, rc, text)
        notes.append(rc_note)
    if base_rel not in PROFILES:
        notes.append(
            f"upstream {base_rel} is not a named profile: switches set by the release of each commit"
        )
    return replace(model, notes=tuple(notes) + model.notes, vendor=vendor, vendor_base=vendor_base), d


def _refuse_unreleased(text: str, major: int, minor: int, point: int, rc: int | None) -> None:
    """Refuse release string ``text`` whose version ``major.minor.point`` (``-rc`` ``rc``) is not modelled or names
    no release: newer than the newest profile, a minor past its major's last (``LAST_MINOR``), older than 4.18, a
    point past its ended stable branch's last (``stable.refuse_past_end``), an rc after the release's last
    (``LAST_RC``). Raises: ValueError, one line."""
    newest = max(PROFILES.values(), key=lambda m: release_tuple(m.release))
    if (major, minor) > release_tuple(newest.release):
        raise ValueError(
            f"kernel {text} is newer than {newest.release}, the newest modelled release (GRO changes after it are "
            f"not modelled, so its verdict would be a guess): use --kernel {newest.release}"
        )
    last = LAST_MINOR.get(major)
    if last is not None and minor > last:
        raise ValueError(
            f"kernel {text} names no release: the {major}.x releases ran from {major}.0 to {major}.{last}, "
            f"then {major + 1}.0 followed"
        )
    if (major, minor) < (4, 18):
        raise ValueError(
            f"kernel {text} is older than 4.18: its GRO (one GRO list, no 8 hash buckets of 07d78363dcff, an older "
            "UDP tunnel offload) is not modelled, so its verdict would be a guess; the oldest modelled release is "
            "4.19 (4.18, RHEL 8's base, runs as 4.19 with a note)"
        )
    refuse_past_end(f"{major}.{minor}", point, text)
    last_rc = LAST_RC.get((major, minor))
    if rc is not None and last_rc is not None and rc > last_rc:
        raise ValueError(
            f"kernel {text} names no release: {major}.{minor} was released after -rc{last_rc}, so there is no "
            f"{major}.{minor}-rc{rc}"
        )
