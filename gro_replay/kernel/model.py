"""Kernel behaviour switches, one per commit that changed a decision on this receive path.

Each switch is read by exactly one ``if`` at the branch point its commit changed. A profile is a
``KernelModel`` value; ``Kernel`` instances built from two profiles run side by side over one read of a capture.
Profiles (4.19, 5.4, 5.10, 5.11, 5.12, 5.15, 6.1, 6.6, 6.12, 6.18) are computed from ``SWITCH_COMMITS`` (each switch's
commit and upstream release); ``resolve_kernel`` adds the stable backports a point release carries
(``STABLE_BACKPORTS``, read in the stable trees) and says what it cannot know (distribution kernels).
Not modelled for 4.19: it has no GRO_NORMAL list (323ebb61e32b, v5.4) and hands each skb up at once; the list only
changes when within a poll the stack sees an skb, not the order, the merges or any count this tool reports.
Sources: gro-spec §9 timeline; v6.x rules read in torvalds/linux net/core/gro.c, include/net/gro.h,
net/ipv4/tcp_offload.c (stored text carrying the 2025 AccECN and IP-ID series), net/core/dev.h
(``netif_set_gro_max_size``), and the netdev patch mails named below.

Version pins: a release marked [D] below was derived from merge dates (a net-next merge before the release's
merge window opened), not read in a tagged tree:

* 4e4f7cefb130 "gro: prevent ACE field corruption & better AccECN handling": merged into net-next with the
  'tcp-accecn' branch in March 2025 → v6.15 [D].
* 21f7484220ac "net: gro: only merge packets with incrementing or fixed outer ids" and f095a358faf2 "net: gro:
  remove unnecessary df checks" (Richard Gobert, series v7 of 2025-09-22, merge 12de5f0f6c2d
  'net-gso-restore-outer-ip-ids-correctly'): in net-next on 2025-09-25, before the v6.18 merge window → v6.18 [D].
  The v7 text is modelled (two ``ip_fixedid`` bits; fixed IDs without DF).
* ab4c8b6f7fcb "gro: flushing when CWR is set negatively affects AccECN" (AccECN series v12, 2026-01): after
  v6.18, in no profile; the switch exists because the newest selftest (tools/testing/selftests/net/lib/gro.c,
  ``flags_cwr``) expects its behaviour.
* 7871f54e3dee "gro: take care of DODGY packets": v6.2-rc4, backported to 6.1.7; 5eddb24901ee is v6.1.

Commits on this path that need no switch here: 18f25dc39990 (v5.13, tunnel sockets never take the fraglist/L4
UDP path) only matters with NETIF_F_GRO_FRAGLIST or NETIF_F_GRO_UDP_FWD, both off by default and not modelled;
1d11fa696733 (GRO_DROP removed) is unreachable from ``napi_gro_receive``; the v5.17 file moves and the 2025
``gro_node`` split are code moves; 3271f19bf7b9 only renames the gso_type bits set at completion.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields, replace

from .banner import MAX_LEN, Banner, is_banner, parse_banner, shown
from .distro import base_words, parse_distro_release


@dataclass(frozen=True, slots=True)
class KernelModel:
    """A kernel release as the set of GRO behaviours this tool models.

    Attributes are booleans named after what they switch on; each comment names the commit and release.
    """

    name: str
    release: str
    #: 89e5c58fc1e2 (v5.12-rc2): udp_gro_receive's checksum gate only refuses when uh->check != 0.
    udp_tunnel_gate_checks_uh_check: bool = False
    #: 8dc1c444df19 (v5.11): a completed GRO packet adds its segment count to napi->rx_count.
    gro_normal_counts_segs: bool = True
    #: eac1b93c14d6 (v5.17): skb_gro_receive limits p->len + len by dev->gro_max_size instead of 65536.
    gro_max_size_from_dev: bool = False
    #: 6fc2f3832d36 (v5.18): an IPv6 hop_limit difference flushes instead of splitting the flow.
    ipv6_hop_limit_flushes: bool = False
    #: 0fe79f28bfaf (v5.19): beyond GRO_LEGACY_MAX_SIZE, a non-encapsulated IPv6/TCP p may still grow (BIG TCP).
    gro_big_tcp_ipv6: bool = False
    #: 5eddb24901ee (v6.1): GSO (TCP) skbs enter GRO with count = gso_segs instead of being flushed.
    gro_accepts_gso: bool = False
    #: 7871f54e3dee (v6.2, 6.1.7): a DODGY GSO skb (gso_type from an untrusted source) is still flushed.
    gro_flushes_dodgy_gso: bool = False
    #: b1a78b9b9886 (v6.3): an IPv4 p is limited by dev->gro_ipv4_max_size; beyond GRO_LEGACY_MAX_SIZE the test
    #: becomes "skb's innermost protocol is TCP and p is not encapsulation" for both families (IPv4 BIG TCP).
    gro_ipv4_max_size: bool = False
    #: 4b0ebbca3e16 (v6.10): IPv4/IPv6 flush checks (ttl, tos, DF, ID) evaluated from tcp_gro_receive via
    #: gro_receive_network_flush, flush_id removed; outer ID ignored when the outer DF is set; one ip_fixedid bit
    #: shared by the outer and inner header (set by either, it holds both to a fixed ID).
    l3_flush_in_tcp: bool = False
    #: 4e4f7cefb130 (v6.15): CWR is part of the compared TCP flag word (a CWR head no longer absorbs non-CWR
    #: segments); completion marks SKB_GSO_TCP_ACCECN instead of SKB_GSO_TCP_ECN.
    tcp_gro_compares_cwr: bool = False
    #: 21f7484220ac (v6.18): outer IPv4 IDs must be fixed or incrementing like inner ones (even with DF set);
    #: ip_fixedid has one bit for the outer (or only) header and one for the inner header.
    inet_gro_checks_outer_id: bool = False
    #: f095a358faf2 (v6.18): a fixed IPv4 ID is accepted without DF (the DF bits must still be equal).
    inet_gro_fixedid_without_df: bool = False
    #: a9888628cb2c (v6.17; net tree 2025-09-14, after v6.17-rc6): ip_tun_rx_dst sets TUNNEL_DONT_FRAGMENT in the rx
    #: tunnel metadata from the outer IPv4 DF bit, so gro_cells GRO splits one inner flow whose outer DF differs.
    ip_tun_rx_dst_sets_df: bool = False
    #: ab4c8b6f7fcb (2026, after v6.18; no profile): an incoming CWR segment no longer flushes by itself.
    tcp_gro_cwr_no_flush: bool = False
    #: the upstream release the switches start from ("5.4" for 5.4.120); equal to ``release`` for a base profile
    base: str = ""
    #: stable backports on top of ``base``: (upstream commit, stable commit, first point release carrying it)
    backports: tuple[tuple[str, str, str], ...] = ()
    #: what the resolution could not know (distribution patches, unresearched branches), printed with the report
    notes: tuple[str, ...] = ()
    #: a distribution kernel: who may have backported commits this tool cannot know of ("Red Hat", "Ubuntu", "the
    #: distribution"); "" for upstream, stable and pre-releases (their commits are known)
    vendor: str = ""
    #: a distribution kernel: the upstream release its version names ("4.18" for 4.18.0-305.el8), which may differ
    #: from ``base`` (the profile run: 4.18 runs as 4.19)
    vendor_base: str = ""
    #: a pre-release: the release candidate it is ("5.12-rc1" for 5.12-rc1 and 5.12.0-rc1+), whose switches are
    #: ``base``'s without the commits that landed in a later rc; "" otherwise
    pre_release: str = ""

    def with_name(self, name: str) -> KernelModel:
        return replace(self, name=name)

    def carries(self, commit: str) -> bool:
        """Whether this kernel has the behaviour of upstream ``commit`` (12+ hex digits of a switch's commit),
        from its upstream base or from a stable backport.

        Raises: KeyError when no switch is named after ``commit``.
        """
        return getattr(self, switch_of_commit(commit))

    def knows(self, commit: str) -> bool:
        """Whether ``carries(commit)`` is a fact: False for a distribution kernel whose assumed upstream base lacks
        ``commit``, which its vendor may have backported (kernel/distro.py); True for upstream and stable kernels
        and for a distribution kernel whose base already has it."""
        return not (self.vendor and not self.carries(commit))

    def stable_backport(self, commit: str) -> tuple[str, str] | None:
        """``(stable commit, point release)`` when this kernel has ``commit`` from a stable backport, else None."""
        key = commit[:12]
        for up, stable, point in self.backports:
            if up == key:
                return stable, point
        return None

    def describe(self) -> dict:
        """The JSON ``config.kernels[]`` entry: name, release, upstream base, backports (each with its stable commit
        and first point release), notes, and where 89e5c58fc1e2 comes from (``fix_89e5c58fc1e2``)."""
        fix = FIX_COMMIT
        bp = self.stable_backport(fix)
        return {
            "name": self.name,
            "release": self.release,
            "base": self.base or self.release,
            "backports": [
                {"upstream": up, "switch": switch_of_commit(up), "stable_commit": st, "point_release": pt}
                for up, st, pt in self.backports
            ],
            "notes": list(self.notes),
            "vendor": self.vendor or None,
            "vendor_base": self.vendor_base or None,
            "pre_release": self._pre_release_entry(),
            f"fix_{fix}": {
                "carried": self.carries(fix),
                # a distribution kernel whose base lacks the fix: the vendor may have backported it (not known)
                "known": self.knows(fix),
                "carried_basis": (
                    "assumed-upstream-base" if self.vendor else ("stable" if bp else "upstream")
                ),
                "via": ("stable" if bp else "upstream") if self.carries(fix) else None,
                "stable_commit": bp[0] if bp else None,
                "point_release": bp[1] if bp else None,
            },
        }

    def _pre_release_entry(self) -> dict | None:
        """``describe``'s ``pre_release``: the release candidate and the commits of ``base`` it lacks (they landed
        in a later rc: ``SwitchCommit.upstream_rc``); None for a release."""
        if not self.pre_release:
            return None
        rc = int(self.pre_release.rsplit("-rc", 1)[1])
        own = _release_tuple(self.base)
        lacks = [c.commit for c in SWITCH_COMMITS if c.upstream == own and (c.upstream_rc or 0) > rc]
        return {"release": self.pre_release, "lacks": lacks}

    def switches(self) -> dict[str, bool]:
        """The behaviour switches (every boolean field) and their values."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.type in (bool, "bool")}


# -- upstream releases of each switch's commit -------------------------------------------------------------------

#: 89e5c58fc1e2 "net: Fix gro aggregation for udp encaps with zero csum", the fix this tool is about
FIX_COMMIT = "89e5c58fc1e2"


@dataclass(frozen=True, slots=True)
class SwitchCommit:
    """The commit a switch is named after and the first upstream release that carries it (None: no release).

    ``upstream_rc``: the release candidate of ``upstream`` it first appeared in, where known (``X.Y-rcN`` is the
    X.Y tree before its release: an ``-rcM`` with M < N lacks the commit); None: not pinned, and a pre-release of
    ``upstream`` is assumed to carry it (``resolve_kernel`` says so in a note).
    """

    switch: str
    commit: str
    upstream: tuple[int, int] | None
    title: str
    upstream_rc: int | None = None


#: Every switch's commit and upstream release (the pins of the switch comments above; [D] pins as documented in
#: the module docstring). A base profile has a switch on iff its release is not older than the commit's.
SWITCH_COMMITS: tuple[SwitchCommit, ...] = (
    SwitchCommit(
        "udp_tunnel_gate_checks_uh_check",
        "89e5c58fc1e2",
        (5, 12),
        "net: Fix gro aggregation for udp encaps with zero csum",
        2,  # v5.12-rc2 (gro-spec §9; README): 5.12-rc1 lacks it
    ),
    SwitchCommit(
        "gro_normal_counts_segs",
        "8dc1c444df19",
        (5, 11),
        "net: gro: do not keep too many GRO packets in napi->rx_list",
    ),
    SwitchCommit(
        "gro_max_size_from_dev", "eac1b93c14d6", (5, 17), "gro: add ability to control gro max packet size"
    ),
    SwitchCommit(
        "ipv6_hop_limit_flushes",
        "6fc2f3832d36",
        (5, 18),
        "ipv6: gro: flush instead of assuming different flows on hop_limit mismatch",
    ),
    SwitchCommit("gro_big_tcp_ipv6", "0fe79f28bfaf", (5, 19), "net: allow gro_max_size to exceed 65536"),
    SwitchCommit(
        "gro_accepts_gso", "5eddb24901ee", (6, 1), "gro: add support of (hw)gro packets to gro stack"
    ),
    SwitchCommit("gro_flushes_dodgy_gso", "7871f54e3dee", (6, 2), "gro: take care of DODGY packets", 4),
    SwitchCommit("gro_ipv4_max_size", "b1a78b9b9886", (6, 3), "net: add support for ipv4 big tcp"),
    SwitchCommit(
        "l3_flush_in_tcp",
        "4b0ebbca3e16",
        (6, 10),
        "net: gro: move L3 flush checks to tcp_gro_receive and udp_gro_receive_segment",
    ),
    SwitchCommit(
        "tcp_gro_compares_cwr",
        "4e4f7cefb130",
        (6, 15),
        "gro: prevent ACE field corruption & better AccECN handling",
    ),
    SwitchCommit(
        "ip_tun_rx_dst_sets_df",
        "a9888628cb2c",
        (6, 17),
        "net: dst_metadata: fix IP_DF bit not extracted from tunnel headers",
    ),
    SwitchCommit(
        "inet_gro_checks_outer_id",
        "21f7484220ac",
        (6, 18),
        "net: gro: only merge packets with incrementing or fixed outer ids",
    ),
    SwitchCommit(
        "inet_gro_fixedid_without_df", "f095a358faf2", (6, 18), "net: gro: remove unnecessary df checks"
    ),
    SwitchCommit(
        "tcp_gro_cwr_no_flush",
        "ab4c8b6f7fcb",
        None,
        "gro: flushing when CWR is set negatively affects AccECN",
    ),
)

_BY_COMMIT = {c.commit: c for c in SWITCH_COMMITS}
_BY_SWITCH = {c.switch: c for c in SWITCH_COMMITS}


def switch_of_commit(commit: str) -> str:
    """The switch named after ``commit`` (its first 12 hex digits). Raises: KeyError naming the known commits."""
    try:
        return _BY_COMMIT[commit[:12].lower()].switch
    except KeyError:
        raise KeyError(
            f"no switch is named after commit {commit!r}; known: {', '.join(_BY_COMMIT)}"
        ) from None


# -- stable backports ------------------------------------------------------------------------------------------------

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
STABLE_BACKPORTS: dict[str, dict[str, tuple[str, int]]] = {
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
}

#: Commits whose stable backports were looked for in the stable mailing-list archive and the stable trees' push
#: notifications, and the branches read (None: every branch; no stable review or stable commit of it exists in the
#: archive besides those in STABLE_BACKPORTS). Feature commits were never marked for stable (6fc2f3832d36 went to
#: net-next only). A branch not read for a commit the branch's base lacks resolves without it and says so.
BACKPORTS_RESEARCHED: dict[str, tuple[str, ...] | None] = {
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
    # taken into 6.16.y (6.16.9-rc1 review, 2025-09-22: no profile); the LTS branches were not read
    "a9888628cb2c": (),
}


def _rel(t: tuple[int, int]) -> str:
    return f"{t[0]}.{t[1]}"


def upstream_profile(major: int, minor: int, name: str | None = None) -> KernelModel:
    """The model of upstream release ``major.minor``: a switch is on iff its commit's release is not newer.

    Raises: ValueError for a release older than 4.19 (the model has 8 GRO hash buckets, 07d78363dcff, v4.19).
    """
    if (major, minor) < (4, 19):
        raise ValueError(
            f"upstream {major}.{minor} predates 4.19 (07d78363dcff: 8 GRO hash buckets), which every profile models"
        )
    rel = f"{major}.{minor}"
    on = {c.switch: c.upstream is not None and c.upstream <= (major, minor) for c in SWITCH_COMMITS}
    return KernelModel(name=name or rel, release=rel, base=rel, **on)  # type: ignore[arg-type]  # bool switches


K_4_19 = upstream_profile(4, 19)
K_5_4 = upstream_profile(5, 4)
K_5_10 = upstream_profile(5, 10)
K_5_11 = upstream_profile(5, 11, name="pre-fix")
K_5_12 = upstream_profile(5, 12, name="post-fix")
K_5_15 = upstream_profile(5, 15)
K_6_1 = upstream_profile(6, 1)
K_6_6 = upstream_profile(6, 6)
K_6_12 = upstream_profile(6, 12)
K_6_18 = upstream_profile(6, 18)

#: The named profiles: the LTS releases beside the fix's pair (5.11 pre-fix, 5.12 post-fix) and 6.18.
PROFILES: dict[str, KernelModel] = {
    m.release: m for m in (K_4_19, K_5_4, K_5_10, K_5_11, K_5_12, K_5_15, K_6_1, K_6_6, K_6_12, K_6_18)
}
#: LTS branches among the profiles (kernel.org longterm releases)
LTS = ("4.19", "5.4", "5.10", "5.15", "6.1", "6.6", "6.12")


def profile(release: str) -> KernelModel:
    """The named profile for a release string such as ``5.11``, ``5.4`` or ``6.18``.

    Raises: KeyError naming the known releases.
    """
    try:
        return PROFILES[release]
    except KeyError:
        raise KeyError(f"unknown kernel {release!r}; known: {', '.join(PROFILES)}") from None


# ASCII only: \d would take other scripts' digits ('5.٤.١٠٦'), which no kernel version has
_UPSTREAM = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?", re.ASCII)
#: a pre-release: X.Y-rcN (Makefile EXTRAVERSION), X.Y.0-rcN (uname -r), X.Y.0-0.rcN.… (Fedora),
#: X.Y.0-XXYY00rcN-… (Ubuntu mainline builds), with a local or distribution suffix after it
_RC = re.compile(r"(\d+)\.(\d+)(?:\.0)?-(?:0\.|[0-9]{6})?rc(\d+)([-+.~_]\S*)?", re.ASCII)
_OTHER = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?[-+.~_]\S*", re.ASCII)
#: a version number with a leading zero (05, 0106): kernel versions have none
_LEADING_ZERO = re.compile(r"(?<![0-9])0[0-9]", re.ASCII)


def _release_tuple(release: str) -> tuple[int, int]:
    """``"6.18"`` → ``(6, 18)`` (a profile's release: upstream X.Y)."""
    major, minor = release.split(".")[:2]
    return int(major), int(minor)


def with_stable(base: KernelModel, point: int, name: str) -> KernelModel:
    """``base`` (an upstream profile) plus the stable backports its branch took up to point release ``point``.

    Switches whose commit's backports were not researched for this branch stay as in ``base`` and add a note.
    """
    branch = base.release
    on: dict[str, bool] = {}
    backports = []
    notes = []
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
        researched = BACKPORTS_RESEARCHED.get(c.commit, ())
        if researched is not None and branch not in researched:
            notes.append(
                f"backports unknown: whether linux-{branch}.y took {c.commit} ({c.switch}) was not read in the "
                f"stable sources; {name} has it off as upstream {branch} does"
            )
    return replace(base, name=name, release=name, backports=tuple(backports), notes=tuple(notes), **on)  # type: ignore[arg-type]  # bool switches


def _pre_release(model: KernelModel, major: int, minor: int, rc: int, text: str) -> tuple[KernelModel, str]:
    """``model`` (upstream X.Y) as its pre-release ``X.Y-rcN``: a switch whose commit landed in a later rc of X.Y
    (``SwitchCommit.upstream_rc``) is off; the others of X.Y are assumed in. Returns the model and its note."""
    rel = f"{major}.{minor}"
    own = [c for c in SWITCH_COMMITS if c.upstream == (major, minor)]
    lacks = [c for c in own if c.upstream_rc is not None and c.upstream_rc > rc]
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
        parts.append(f"no modelled commit landed in {rel}'s merge window or release candidates: ran as {rel}")
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

    Raises: ValueError when the release and the version the string names differ in X.Y (two kernels), and as
    ``resolve_kernel`` does for the release or the named version.
    """
    m = resolve_kernel(b.release) if b.release else None
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
    rel_xy = ".".join((m.vendor_base or m.base).split(".")[:2]) if m is not None else xy
    if rel_xy != xy:
        raise ValueError(
            f"kernel string {shown(text)}: its release {b.release} is {rel_xy} but its {s.where} names {s.what} "
            f"({s.version}): two different kernels (give one machine's uname -rv, /proc/version or "
            "/proc/version_signature)"
        )
    up = resolve_kernel(xy if s.rc is None else f"{xy}-rc{s.rc}")
    point = s.point if s.rc is None and up.base == xy else 0
    model = with_stable(up, point, b.name) if point else replace(up, name=b.name, release=b.name)
    d = parse_distro_release(b.release) if b.release else None
    signed = b.kind == "/proc/version_signature"  # Ubuntu's, whatever flavour its uname -r has
    who = d.who if d is not None and d.who else ("" if b.release and not signed else s.who)
    vendor = m.vendor if m is not None and m.vendor and not signed else s.vendor
    assumed = f"upstream {xy}-rc{s.rc}" if s.rc is not None else base_words(s.major, s.minor, point)
    note = (
        f"{who + ' ' if who else ''}kernel {b.name} ({s.where}: {s.what}): built from upstream {s.version}; {vendor}'s own "
        f"patches are not known here; assumed {assumed}"
    )
    own = re.match(r"[0-9]+\.[0-9]+\.([0-9]+)", b.release)
    if own and int(own.group(1)) not in (0, s.point):
        note += f" (its release names {xy}.{own.group(1)}; the version the build names is used)"
    notes = (note,) + up.notes + (model.notes if point else ())
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
        ``5.4.0106``), for a base older than 4.18, and for a base
        newer than the newest profile
    (6.18: ``7.99``, ``6.19.2``, ``7.0.0-1-generic``), whose GRO changes are not modelled; the message names the
    newest profile; for a longer kernel string as ``banner.parse_banner`` and ``_resolve_banner`` raise (a release
    and a package version of different X.Y, two releases, a ``uname -v`` naming no release, over MAX_LEN).
    """
    text = text.strip()
    if text in PROFILES:
        return PROFILES[text]
    if len(text) > MAX_LEN or is_banner(text):
        return _resolve_banner(text, parse_banner(text))
    _check_release_chars(text)
    notes: list[str] = []
    point = 0
    rc = None
    vendor = ""
    m = _UPSTREAM.fullmatch(text)
    if m:
        major, minor = int(m.group(1)), int(m.group(2))
        point = int(m.group(3) or 0)
    elif (m := _RC.fullmatch(text)) is not None:
        major, minor, rc = int(m.group(1)), int(m.group(2)), int(m.group(3))
        if m.group(4):  # "+": setlocalversion's mark of a tree past the tag
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
        vendor = "the distribution"
        notes.append(
            f"kernel {text}: the distribution's or build's own patches are not known here; assumed upstream "
            f"{major}.{minor}" + (f" with the stable backports of {major}.{minor}.{point}" if point else "")
        )
    else:
        raise ValueError(
            f"cannot parse kernel release {text!r} (want X.Y, X.Y.Z or a distribution's uname -r)"
        )
    newest = max(PROFILES.values(), key=lambda m: _release_tuple(m.release))
    if (major, minor) > _release_tuple(newest.release):
        raise ValueError(
            f"kernel {text} is newer than {newest.release}, the newest modelled release (GRO changes after it are "
            f"not modelled, so its verdict would be a guess): use --kernel {newest.release}"
        )
    if (major, minor) < (4, 18):
        raise ValueError(
            f"kernel {text} is older than 4.18: its GRO (one GRO list, no 8 hash buckets of 07d78363dcff, an older "
            "UDP tunnel offload) is not modelled, so its verdict would be a guess; the oldest modelled release is "
            "4.19 (4.18, RHEL 8's base, runs as 4.19 with a note)"
        )
    vendor_base = f"{major}.{minor}" + (f".{point}" if point else "") if vendor else ""
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
        model, rc_note = _pre_release(model, major, minor, rc, text)
        notes.append(rc_note)
    if base_rel not in PROFILES:
        notes.append(
            f"upstream {base_rel} is not a named profile: switches set by the release of each commit"
        )
    return replace(model, notes=tuple(notes) + model.notes, vendor=vendor, vendor_base=vendor_base)
