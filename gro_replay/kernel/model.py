"""Kernel behaviour switches, one per commit that changed a decision on this receive path.

Each switch is read by exactly one ``if`` at the branch point its commit changed. A profile is a
``KernelModel`` value; ``Kernel`` instances built from two profiles run side by side over one read of a capture.
Profiles (4.19, 5.4, 5.10, 5.11, 5.12, 5.15, 6.1, 6.6, 6.12, 6.18) are computed from ``SWITCH_COMMITS`` (each switch's
commit and upstream release); ``release.resolve_kernel`` adds the stable backports a point release carries
(``stable.STABLE_BACKPORTS``, read in the stable trees) and says what it cannot know (distribution kernels).
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
* 0780b4145634 "inet_ecn: Use csum16_add() helper for IP_ECN_set_* helpers" (Toke Høiland-Jørgensen, net-next
  v3 of 2020-12-11): pushed to net-next master on 2020-12-12 (after 989a1db06eb1), in linux-next of 2020-12-16
  with the v5.11 merge window's merges → v5.11-rc1 [D].
* 7871f54e3dee "gro: take care of DODGY packets": v6.2-rc4, backported to 6.1.7; 5eddb24901ee is v6.1.
* ae6db08f8b56 "net/packet: change packet_alloc_skb() to allow bigger paged allocations" (with 09c2c90705bb in
  alloc_skb_with_frags): net-next 2023-08, listed in the "Networking for 6.6" pull → v6.6. It is on the sender's
  side of the model without --nic (AF_PACKET into veth, what the kernel backend measures), not on the GRO path.

Commits on this path that need no switch here: 18f25dc39990 (v5.13, tunnel sockets never take the fraglist/L4
UDP path) only matters with NETIF_F_GRO_FRAGLIST or NETIF_F_GRO_UDP_FWD, both off by default and not modelled;
1d11fa696733 (GRO_DROP removed) is unreachable from ``napi_gro_receive``; the v5.17 file moves and the 2025
``gro_node`` split are code moves; 3271f19bf7b9 only renames the gso_type bits set at completion.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields, replace


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
    #: b723748750ec (v5.7; 5.4.41 took it, 4.19.y did not): decapsulation copies an outer ECT(1) onto an inner
    #: ECT(0) header (``INET_ECN_set_ect1``, RFC 6040 §4.2), which the tunnel device's inet_gro_receive then compares.
    inet_ecn_decap_sets_ect1: bool = False
    #: 2867e1eac610 (v5.10-rc7; 5.4.82 took it): ``IP_ECN_set_ect1`` updates the IPv4 header checksum by +1, not
    #: +0x100 (network order), so the inner header still verifies after the ECT(1) mark (kernel/ip_tunnel_core.py).
    ip_ecn_set_ect1_right_csum: bool = False
    #: 0780b4145634 (v5.11-rc1 [D]): ``IP_ECN_set_ce`` and ``IP_ECN_set_ect1`` add to the IPv4 header checksum with
    #: ``csum16_add``, which keeps a sum of 0xFFFF; before, ``check + (check >= 0xFFFF)`` wrote it as 0x0000. Both
    #: verify: only the header's bytes differ (kernel/ip_tunnel_core.py ``ip_ecn_check_add``).
    ip_ecn_csum16_add: bool = False
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
    #: ae6db08f8b56 (v6.6): with 09c2c90705bb, AF_PACKET's paged skbs (veth, the model without --nic, the kernel
    #: backend) take page frags of orders up to PAGE_ALLOC_COSTLY_ORDER, not order 0: fewer frags per frame, so
    #: skb_gro_receive reaches MAX_SKB_FRAGS later (kernel/nic_skb.py ``packet_alloc_skb_frags``).
    packet_alloc_skb_costly_order: bool = False
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
    backports: tuple[tuple[str, str | None, str], ...] = ()
    #: what the resolution could not know (distribution patches, unresearched branches), printed with the report
    notes: tuple[str, ...] = ()
    #: the modelled commits whose backports to this stable release were not read (release.with_stable): off by
    #: assumption, each with a "backports unknown" note
    unread: tuple[str, ...] = ()
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

    def stable_backport(self, commit: str) -> tuple[str | None, str] | None:
        """``(stable commit, point release)`` when this kernel has ``commit`` from a stable backport, else None; the
        stable commit is None where it was not read (kernel/stable.py ``STABLE_BACKPORTS``)."""
        key = commit[:12]
        for up, stable, point in self.backports:
            if up == key:
                return stable, point
        return None

    def behaviour_notes(self) -> list[str]:
        """What this kernel does that the counts, which end at the tunnel device, do not show: an ECT(1) mark at
        decapsulation that writes a wrong inner IPv4 header checksum (``inet_ecn_decap_sets_ect1`` on,
        ``ip_ecn_set_ect1_right_csum`` off: include/net/inet_ecn.h ``IP_ECN_set_ect1`` before 2867e1eac610), so that
        ``ip_rcv`` drops such a packet after the tunnel device, also one the tunnel device's GRO passed up whole (a
        GSO skb), whose end reason names no checksum."""
        if self.inet_ecn_decap_sets_ect1 and not self.ip_ecn_set_ect1_right_csum:
            # lacking the fix by assumption (a vendor's kernel, a stable branch whose backports were not read)
            assumed = self.vendor or "2867e1eac610" in self.unread
            return [
                f"{self.name} {'is assumed to write' if assumed else 'writes'} a wrong inner IPv4 header checksum "
                "where decapsulation copies an outer ECT(1) "
                "onto an inner ECT(0) (IP_ECN_set_ect1 before 2867e1eac610): ip_rcv drops such packets after the "
                "tunnel device, which the counts here, ending there, do not show; the tunnel device's GRO flushes "
                "them (end reason inet_gro_receive:inner_ip_fast_csum(IP_ECN_set_ect1)) unless they reach it merged"
            ]
        return []

    def describe(self) -> dict:
        """The JSON ``config.kernels[]`` entry: name, release, upstream base, backports (each with its stable commit
        and first point release), the modelled commits whose backports were not read, notes, the switches
        (``switches``: the model the simulation runs), and where 89e5c58fc1e2 comes from (``fix_89e5c58fc1e2``)."""
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
            "notes": [*self.notes, *self.behaviour_notes()],
            # the modelled commits whose backports to this stable release were not read (off by assumption)
            "backports_unread": list(self.unread),
            "vendor": self.vendor or None,
            "vendor_base": self.vendor_base or None,
            "pre_release": self._pre_release_entry(),
            # what the simulation runs: two kernels with equal switches are one model (cli/options.py refuses to
            # compare them; diff says so)
            "switches": self.switches(),
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
        rel, rc = self.pre_release.rsplit("-rc", 1)  # its own X.Y (4.18-rc8 runs as 4.19)
        return {
            "release": self.pre_release,
            "lacks": [c.commit for c in rc_lacks(*release_tuple(rel), int(rc))],
        }

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
    ``upstream`` is assumed to carry it (``release.resolve_kernel`` says so in a note).
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
        "inet_ecn_decap_sets_ect1",
        "b723748750ec",
        (5, 7),
        "tunnel: Propagate ECT(1) when decapsulating as recommended by RFC6040",
    ),
    SwitchCommit(
        "ip_ecn_set_ect1_right_csum",
        "2867e1eac610",
        (5, 10),
        "inet_ecn: Fix endianness of checksum update when setting ECT(1)",
        7,  # in the "Networking fixes for 5.10-rc7" pull (Jakub Kicinski, 2020-12-03)
    ),
    SwitchCommit(
        "ip_ecn_csum16_add",
        "0780b4145634",
        (5, 11),
        "inet_ecn: Use csum16_add() helper for IP_ECN_set_* helpers",
        1,  # [D]: in net-next from 2020-12-12, pulled in the 5.11 merge window
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
        "packet_alloc_skb_costly_order",
        "ae6db08f8b56",
        (6, 6),
        "net/packet: change packet_alloc_skb() to allow bigger paged allocations",
        1,  # the net-next pull of the 6.6 merge window: in 6.6-rc1
    ),
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


def rc_lacks(major: int, minor: int, rc: int) -> list[SwitchCommit]:
    """The modelled commits of upstream ``major.minor`` that a pre-release ``X.Y-rcN`` lacks: those that landed in a
    later rc (``SwitchCommit.upstream_rc`` > ``rc``; a commit whose rc is not known is assumed in)."""
    return [
        c
        for c in SWITCH_COMMITS
        if c.upstream == (major, minor) and c.upstream_rc is not None and c.upstream_rc > rc
    ]


def switches_text(switches: dict) -> str:
    """A model's switches (``KernelModel.switches()``, or a document's ``config.kernels[].switches``) by the commits
    they are named after: "modelled commits on: 8dc1c444df19, 89e5c58fc1e2; the other 14 off", or "every modelled
    commit off"; a switch of no known commit (a document of another version) by its name."""
    on = [commit_of_switch(s) for s, v in switches.items() if v is True]
    if not on:
        return "every modelled commit off"
    off = len(switches) - len(on)
    return f"modelled commits on: {', '.join(on)}" + (f"; the other {off} off" if off else "")


#: switches of the sender of the model without --nic (AF_PACKET into veth), which a --nic driver's skbs never read
SENDER_SWITCHES = frozenset({"packet_alloc_skb_costly_order"})
#: switches that change only bytes the kernel writes, never a decision or a count: two kernels differing only in
#: them are one model to compare (``same_model``, verdict.facts ``other_changes``), each replayed with its own
BYTES_ONLY_SWITCHES = frozenset({"ip_ecn_csum16_add"})
#: why a switch in ``SENDER_SWITCHES`` or ``BYTES_ONLY_SWITCHES`` changes no count (``same_model_words``)
_NO_COUNT_WHY = {
    "packet_alloc_skb_costly_order": "only the veth model's AF_PACKET sender reads it, not a --nic driver's skbs",
    "ip_ecn_csum16_add": "it changes only how an ECN mark writes an IPv4 header checksum that sums to 0xFFFF",
}


def same_model(models: Iterable[KernelModel], ignore: frozenset[str] = frozenset()) -> tuple[int, int] | None:
    """The first pair ``(i, j)``, i < j, of ``models`` that are one kernel model (equal ``switches()``: the simulation
    runs the switches alone, so the two give the same counts whatever their names: ``5.11`` and
    ``5.11.0-16-generic``, ``5.12-rc2`` and ``5.12``, a model and itself), or None. ``ignore``: switches the
    replay does not read (``SENDER_SWITCHES`` with a --nic driver: kernel/nic.py ``unread_switches``); the switches
    of ``BYTES_ONLY_SWITCHES``, which change no count, are never compared. Compared with itself a model shows no
    difference: the CLI and ``ReplayConfig.validate`` refuse such a pair."""
    ignore = ignore | BYTES_ONLY_SWITCHES
    seen: dict[tuple[tuple[str, bool], ...], int] = {}
    for j, m in enumerate(models):
        key = tuple((s, v) for s, v in m.switches().items() if s not in ignore)
        if key in seen:
            return seen[key], j
        seen[key] = j
    return None


def counted_switches(switches: dict) -> dict:
    """``switches`` (``KernelModel.switches()`` or a document's) without those that change no count
    (``BYTES_ONLY_SWITCHES``): what makes two kernels one model to compare (report/diff/comparison.py)."""
    return {sw: v for sw, v in switches.items() if sw not in BYTES_ONLY_SWITCHES}


def shared_switches_text(a_switches: dict, b_switches: dict) -> str:
    """The switches of two kernels of one model (:func:`same_model`, a diff's documents): those they share
    (:func:`switches_text`), then each they differ in, which changes no count, with why (``_NO_COUNT_WHY``)."""
    differ = [
        sw for sw in dict.fromkeys([*a_switches, *b_switches]) if a_switches.get(sw) != b_switches.get(sw)
    ]
    text = switches_text({sw: v for sw, v in a_switches.items() if sw not in differ})
    for sw in differ:
        why = _NO_COUNT_WHY.get(sw, "it changes no count")
        text += f"; they differ in {commit_of_switch(sw)}, but {why}"
    return text


def same_model_words(a: str, b: str, a_switches: dict, b_switches: dict) -> str:
    """The refusal of two kernels ``a`` and ``b`` (as the user gave them, with their ``switches()``) that are one
    model (:func:`same_model`), naming the commits they share and those they differ in that change no count
    (:func:`shared_switches_text`)."""
    shared = shared_switches_text(a_switches, b_switches)
    return (
        f"{a} and {b} run one kernel model ({shared}): compared with itself it shows no "
        "difference; give one of them, or kernels that differ in a modelled commit (gro-replay kernels --kernel … "
        "shows each one's switches)"
    )


def commit_of_switch(switch: object) -> str:
    """The commit ``switch`` is named after (``SWITCH_COMMITS``); a name no switch has (a document of another
    version) as it is."""
    c = _BY_SWITCH.get(switch) if isinstance(switch, str) else None
    return c.commit if c is not None else str(switch)


def switch_of_commit(commit: str) -> str:
    """The switch named after ``commit`` (its first 12 hex digits). Raises: KeyError naming the known commits."""
    try:
        return _BY_COMMIT[commit[:12].lower()].switch
    except KeyError:
        raise KeyError(
            f"no switch is named after commit {commit!r}; known: {', '.join(_BY_COMMIT)}"
        ) from None


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


def release_tuple(release: str) -> tuple[int, int]:
    """``"6.18"`` → ``(6, 18)`` (a profile's release or base: upstream X.Y). Raises: ValueError for another form."""
    major, minor = release.split(".")[:2]
    return int(major), int(minor)
