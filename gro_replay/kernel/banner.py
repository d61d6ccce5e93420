"""Kernel strings longer than ``uname -r`` that say which upstream release a distribution kernel was built from.

Debian (up to 12) and Ubuntu release strings keep ``X.Y.0`` for a whole release (kernel/distro.py); the upstream
stable release a build is based on is printed elsewhere, and ``--kernel`` takes those strings whole:

* ``/proc/version``: init/version.c ``linux_proc_banner`` is ``"%s version %s (" LINUX_COMPILE_BY "@"
  LINUX_COMPILE_HOST ") (" LINUX_COMPILER ") %s\\n"`` with utsname's sysname, release (``uname -r``) and version
  (``uname -v``). LINUX_COMPILER holds parentheses and version numbers of its own ("gcc version 9.3.0 (Ubuntu
  9.3.0-10ubuntu2)" before v5.8; "gcc-10 (Debian 10.2.1-6) 10.2.1 20210110, GNU ld (GNU Binutils for Debian)
  2.35.2" since), so the parenthesised groups after the release are skipped by their nesting, never searched.
* ``uname -v`` (UTS_VERSION): scripts/mkcompile_h writes ``"#" KBUILD_BUILD_VERSION``, the SMP / PREEMPT flags and
  the timestamp, cut to 64 bytes (``UTS_LEN=64; … | cut -b -$UTS_LEN``). Debian's linux packaging
  (debian/rules.real) builds with ``KBUILD_BUILD_VERSION_TIMESTAMP="$(DISTRIBUTOR) $(SOURCEVERSION)
  ($(SOURCE_DATE_UTC_ISO))"`` (DISTRIBUTOR: ``lsb_release -is``, else "Debian"; SOURCEVERSION: the source
  package's version) and its patch "Make mkcompile_h accept an alternate timestamp string" (Ben Hutchings, 2015:
  "We want to include the Debian version in the utsname::version string") prints it in the timestamp's place:
  ``#1 SMP Debian 5.10.162-1 (2023-01-21)``, ``#1 SMP PREEMPT_DYNAMIC Debian 6.1.69-1 (2023-12-30)``,
  ``5.10.0-0.deb10.16-amd64 #1 SMP Debian 5.10.127-2~bpo10+1 (2022-07-28)`` (backports: ``~bpoNN+M``; a newer
  series for an older release: ``~debNNuM``; experimental: ``X.Y~rcN-1~expN``; an epoch ``N:`` on rebuilds such
  as Raspberry Pi OS's ``1:6.1.63-1+rpt1``). The package version's upstream part is the stable release the source
  is (libuv reads the same field, "Debian %u.%u.%u" in utsname.version: libuv/libuv#4131). Only the distributor
  "Debian" is read: others who reuse the packaging print their own (Kali, PVE) and their release strings already
  name X.Y.Z; text such as Rockchip's "Debian 2024_01_01 - Rockchip (…)" is no package version and is ignored.
  Ubuntu's ``uname -v`` (``#46-Ubuntu SMP …``: KBUILD_BUILD_VERSION is the upload number) names no version.
* Ubuntu's ``/proc/version_signature`` (UBUNTU: SAUCE "version: Implement version_signature proc file") prints
  CONFIG_VERSION_SIGNATURE, which debian/rules.d/2-binary-arch.mk sets to ``"Ubuntu $(release)-$(revision)-$*
  $(raw_kernelversion)"``: release ``X.Y.0``, revision ``ABI.UPLOAD`` (``67.74~20.04.1`` for a backport to an older
  release), the flavour, and ``raw_kernelversion = $(shell make kernelversion)`` (0-common-vars.mk), the tree's
  upstream version: ``Ubuntu 5.4.0-42.46-generic 5.4.44``. ``uname -r`` is ``$(release)-$(abinum)-$*`` with
  abinum the revision without ``.UPLOAD`` and any ``~…``/``+…`` (0-common-vars.mk), so the signature gives the
  ``uname -r`` too (ubuntu.com/kernel: "Mainline kernel-version = 5.4.8"; wiki.ubuntu.com/Kernel/FAQ/
  GeneralVersionMeaning).

Sources read: torvalds/linux init/version.c, scripts/mkcompile_h; the Debian kernel team's linux packaging
(debian/rules.real, as mirrored on GitHub: AOSC-Tracking/debian-kernel-team-linux) and its version.patch;
Ubuntu's focal kernel tree debian/rules.d/2-binary-arch.mk and 0-common-vars.mk (proxmox/mirror_ubuntu-focal-kernel);
``uname -a`` lines of Debian 10 backports and Debian 12 machines quoted in mails and bug reports.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..project import shortened
from .distro import DEBIAN_RELEASE

#: longer than any /proc/version (release and version are at most 64 bytes each; the compiler string ~200)
MAX_LEN = 1024
_N = r"(0|[1-9][0-9]*)"  # a version number: no leading zero
#: a Debian source package version in uname -v: [epoch:]X.Y[.Z][~rcN]-REVISION (linux is never a native package)
_DEBIAN_PKG = re.compile(
    r"(?<!\S)Debian\s+(?:[0-9]+:)?(" + _N + r"\." + _N + r"(?:\." + _N + r")?(?:~rc([1-9][0-9]*))?"
    r"-([0-9A-Za-z.+~]+))(?=\s|$)",
    re.ASCII,
)
#: Ubuntu's CONFIG_VERSION_SIGNATURE: Ubuntu X.Y.Z-ABI.UPLOAD[~…][+…]-FLAVOUR X.Y.Z[-rcN]
_SIGNATURE = re.compile(
    r"Ubuntu\s+("
    + _N
    + r"\."
    + _N
    + r"\.[0-9]+)-([0-9]+)\.([0-9]+)((?:[~+][0-9A-Za-z.~+]*)?)-([a-z0-9][a-z0-9-]*)"
    r"\s+(" + _N + r"\." + _N + r"\." + _N + r"(?:-rc([1-9][0-9]*))?)",
    re.ASCII,
)
_RELEASE_CHARS = re.compile(r"[A-Za-z0-9._+~-]+", re.ASCII)


@dataclass(frozen=True, slots=True)
class Stated:
    """The upstream version a build string names: ``major.minor.point`` (point 0: no stable release) or the
    pre-release ``major.minor-rcN`` (``rc``); ``vendor`` who built it; ``where`` it was read (``uname -v``,
    ``/proc/version_signature``) and ``what`` it says there (``Debian package 5.10.162-1``), for notes; ``who``
    (``Debian 10 backports``) for a string without a ``uname -r`` to tell it."""

    major: int
    minor: int
    point: int
    rc: int | None
    vendor: str
    where: str
    what: str
    who: str

    @property
    def version(self) -> str:
        v = f"{self.major}.{self.minor}"
        if self.rc is None:
            return f"{v}.{self.point}"
        return f"{v}.{self.point}-rc{self.rc}" if self.point else f"{v}-rc{self.rc}"

    @property
    def pre_release(self) -> int | None:
        """The rc of a mainline pre-release (X.Y-rcN, ``5.12~rc1``); None for a release and for a stable release
        candidate (X.Y.Z-rcN, ``5.10.30~rc1``), which is a build of its release X.Y.Z, as ``--kernel 5.10.30-rc1``
        is (kernel/release.py) — not of X.Y-rcN."""
        return self.rc if not self.point else None


@dataclass(frozen=True, slots=True)
class Banner:
    """A parsed kernel string: ``kind`` (``uname -rv``, ``uname -v``, ``/proc/version``,
    ``/proc/version_signature``), ``release`` (its ``uname -r``; "" when it has none), ``name`` (the kernel's name
    in every output: the ``uname -r``, else the package version), ``stated`` (None: no version beyond the release)
    and ``version_part`` (the ``#…`` text, "" for a signature)."""

    kind: str
    release: str
    name: str
    stated: Stated | None
    version_part: str


def shown(text: str, width: int = 72) -> str:
    """``text`` quoted for a one-line message, cut to ``width`` characters (``project.shortened``)."""
    return repr(shortened(text, width))


def is_banner(text: str) -> bool:
    """Whether ``text`` (stripped) is more than a release string: it has a blank or starts with uname -v's ``#``."""
    return text.startswith("#") or any(c.isspace() for c in text)


def parse_banner(text: str) -> Banner:
    """The parts of ``text`` (stripped; ``is_banner``): ``/proc/version``, Ubuntu's ``/proc/version_signature``,
    Debian's ``uname -v`` or ``uname -rv`` (module docstring).

    Raises: ValueError (one line, the string shortened) for a string over MAX_LEN characters or of several lines,
    a ``/proc/version`` whose parentheses do not close, a signature not in Ubuntu's format, a release followed by
    something other than uname -v's ``#…`` (two releases, ``uname -a``), a ``uname -v`` alone that names no Debian
    package version (it names no release), a package version that is no valid release name, and two different
    Debian package versions in one string.
    """
    if len(text) > MAX_LEN:
        raise ValueError(
            f"kernel string of {len(text):,} characters is longer than any uname -rv, /proc/version or "
            f"/proc/version_signature line (at most {MAX_LEN:,}): {shown(text)}"
        )
    if "\n" in text or "\r" in text:
        raise ValueError(
            f"kernel string {shown(text)} has several lines: give one (--kernel once per kernel)"
        )
    if text.startswith("Linux version "):
        release, rest = _split_release(text[len("Linux version ") :].lstrip(), text)
        return _with_version("/proc/version", release, _skip_groups(rest, text), text)
    if text.startswith("Ubuntu "):
        return _signature(text)
    if text.startswith("#"):
        return _with_version("uname -v", "", text, text)
    release, rest = _split_release(text, text)
    if release == "Linux" and not rest.startswith(
        "#"
    ):  # uname -a: kernel name, host name, release, version, …
        raise ValueError(
            f"kernel string {shown(text)}: that is uname -a (it starts with the kernel name, then the host name); "
            "give uname -rv or /proc/version (--kernel once per kernel)"
        )
    if not rest.startswith("#"):
        raise ValueError(
            f"kernel string {shown(text)}: after the release {release!r} comes {shown(rest, 24)}, not uname -v's "
            "'#…'; want a release, uname -rv, Debian's uname -v, /proc/version or Ubuntu's "
            "/proc/version_signature (--kernel once per kernel)"
        )
    return _with_version("uname -rv", release, rest, text)


def _split_release(s: str, text: str) -> tuple[str, str]:
    parts = s.split(None, 1)
    if not parts:
        raise ValueError(f"kernel string {shown(text)} names no release")
    return parts[0], (parts[1] if len(parts) > 1 else "")


def _skip_groups(s: str, text: str) -> str:
    """``s`` without its leading parenthesised groups (nested parentheses count). Raises: ValueError when a group
    does not close."""
    s = s.lstrip()
    while s.startswith("("):
        depth = 0
        for i, c in enumerate(s):
            depth += (c == "(") - (c == ")")
            if depth == 0:
                s = s[i + 1 :].lstrip()
                break
        else:
            raise ValueError(f"kernel string {shown(text)}: a parenthesis of /proc/version does not close")
    return s


def _with_version(kind: str, release: str, version: str, text: str) -> Banner:
    """A banner of ``release`` (may be "") and its ``uname -v`` text ``version``. Raises: ValueError as
    ``parse_banner``."""
    found = {m.group(1): m for m in _DEBIAN_PKG.finditer(version)}
    if len(found) > 1:
        raise ValueError(
            f"kernel string {shown(text)} names {len(found)} Debian package versions ({', '.join(found)}): "
            "give one kernel's uname -rv or /proc/version"
        )
    stated = _debian_stated(next(iter(found.values()))) if found else None
    if not release:
        if stated is None:
            raise ValueError(
                f"kernel string {shown(text)}: this uname -v names no release (only Debian's, 'Debian X.Y.Z-N', "
                "does); give uname -rv, /proc/version or Ubuntu's /proc/version_signature"
            )
        name = next(iter(found))  # without the epoch: the regex leaves it out
        if not _RELEASE_CHARS.fullmatch(name):
            raise ValueError(f"kernel string {shown(text)}: package version {name!r} is no kernel name")
        return Banner(kind, "", name, stated, version)
    return Banner(kind, release, release, stated, version)


def _debian_stated(m: re.Match) -> Stated:
    x, y = int(m.group(2)), int(m.group(3))
    rc = int(m.group(5)) if m.group(5) else None
    revision = m.group(6)
    older = re.match(r"[^~]*~(?:bpo|deb)([0-9]+)", revision)
    if older:
        who = f"Debian {older.group(1)} backports"
    else:
        who = "Debian " + DEBIAN_RELEASE[(x, y)] if (x, y) in DEBIAN_RELEASE else "Debian"
    pkg = m.group(1)
    return Stated(x, y, int(m.group(4) or 0), rc, "Debian", "uname -v", f"Debian package {pkg}", who)


def _signature(text: str) -> Banner:
    m = _SIGNATURE.fullmatch(text)
    if m is None:
        raise ValueError(
            f"kernel string {shown(text)} is no Ubuntu /proc/version_signature (want 'Ubuntu X.Y.0-ABI.UPLOAD-"
            "FLAVOUR X.Y.Z', e.g. 'Ubuntu 5.4.0-42.46-generic 5.4.44')"
        )
    release = f"{m.group(1)}-{m.group(4)}-{m.group(7)}"
    x, y, z = int(m.group(9)), int(m.group(10)), int(m.group(11))
    rc = int(m.group(12)) if m.group(12) else None
    what = f"Ubuntu {m.group(1)}-{m.group(4)}.{m.group(5)}{m.group(6)}-{m.group(7)} {m.group(8)}"
    stated = Stated(x, y, z, rc, "Ubuntu", "/proc/version_signature", what, "Ubuntu")
    return Banner("/proc/version_signature", release, release, stated, "")


__all__ = ["MAX_LEN", "Banner", "Stated", "is_banner", "parse_banner", "shown"]
