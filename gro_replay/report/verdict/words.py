"""The verdict's words: what drops a lost frame and the knob that changes it (``LOSSES``), end-reason lists with
the commit of the rule a switch introduced (``reason_list``), the split, IPv4 ID, gate and NIC phrases (the words
about the input, what was not replayed and why, are in ``input_words``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from ...kernel import drop_reasons as D
from ...kernel import reasons as R
from ...kernel.model import FIX_COMMIT, KernelModel, commit_of_switch
from ...kernel.stable import short_commit
from ...packet.decode import SKIP_OUTGOING, SKIP_SNAPLEN
from ...project import plural
from ...sim.skipped import to_tunnel_ports, unread
from .facts import NO_REASON_RECORDED, STAGE_NAMES

#: normal-path drop reason → (what drops it, kernel counter), the knob that changes it (None: no knob)
LOSSES: dict[str, tuple[str, str | None]] = {
    D.NOT_AT_TUNNEL_DEVICE: (
        "the running kernel's phys device delivered it and no tunnel device did: dropped on the way, where is "
        "not observable with the kernel backend (its netif_receive_skb trace shows deliveries, not drops; e.g. "
        "udp_rcv for an outer UDP checksum that does not verify, __udp6_lib_rcv for a zero UDPv6 checksum)",
        "the replay (gro-replay CAPTURE, same options) names the drops it models (not those of IP options, "
        "extension headers, routes); before TX offload: --rx-csum unnecessary; UDPv6 checksum 0: --udp6zerocsumrx",
    ),
    D.UDP6_CSUM_ZERO: (
        "__udp6_lib_rcv drops a UDPv6 datagram with checksum 0 (RFC 6936; counter Udp6InCsumErrors)",
        "udp6zerocsumrx on the tunnel device (ip link add … udp6zerocsumrx; here --udp6zerocsumrx)",
    ),
    D.UDP_CSUM_ERROR: (
        "udp_rcv drops it: the outer UDP checksum does not verify (UdpInCsumErrors / Udp6InCsumErrors)",
        "a capture taken before TX checksum offload carries unfilled checksums: replay with "
        "--rx-csum unnecessary (what a receiving NIC verifies)",
    ),
    D.UDP_NO_SOCKET: (
        "udp_rcv finds no socket on the destination port (UdpNoPorts)",
        "the tunnel's UDP port: --vxlan-port P / --geneve-port P",
    ),
    D.UDP_SHORT: ("udp_rcv drops a truncated UDP header", None),
    D.UDP_SHORT_PACKET: ("udp_rcv drops it: UDP length below 8 or beyond the packet", None),
    D.IP_RCV_CSUM_ERROR: (
        "ip_rcv drops it: the outer IPv4 header checksum does not verify (InCsumErrors)",
        None,
    ),
    D.IP_RCV_BAD_HEADER: ("ip_rcv drops a malformed outer IPv4 header (InHdrErrors)", None),
    D.IP_RCV_BAD_LENGTH: (
        "ip_rcv drops it: outer IPv4 total length beyond the frame (InTruncatedPkts)",
        None,
    ),
    D.IP_RCV_SHORT: ("ip_rcv drops a truncated outer IPv4 header", None),
    D.IPV6_RCV_BAD_HEADER: ("ipv6_rcv drops a malformed outer IPv6 header (Ip6InHdrErrors)", None),
    D.IPV6_RCV_BAD_LENGTH: ("ipv6_rcv drops it: payload length beyond the frame (Ip6InTruncatedPkts)", None),
    D.GRO_CELLS_BACKLOG_FULL: (
        "gro_cells_receive drops it: the tunnel device's cell queue is full",
        "sysctl net.core.netdev_max_backlog",
    ),
    D.VXLAN_ECN_DROP: (
        "vxlan_rcv drops it: CE on the outer header of a not-ECT inner packet (vxlan_ecn_decapsulate; "
        "rx_frame_errors, rx_errors)",
        None,
    ),
    D.GENEVE_ECN_DROP: (
        "geneve_rx drops it: CE on the outer header of a not-ECT inner packet (IP_ECN_decapsulate; "
        "rx_frame_errors, rx_errors)",
        None,
    ),
    D.VXLAN_NO_VNI_FLAG: ("vxlan_rcv drops it: VXLAN I flag clear", None),
    D.VXLAN_SHORT: ("vxlan_rcv drops it: UDP + VXLAN header + inner Ethernet header not all present", None),
    D.NOT_IP: ("__netif_receive_skb_core finds no IPv4/IPv6 handler for the outer ethertype", None),
    D.VLAN_OTHERHOST: (
        "__netif_receive_skb_core finds no VLAN device for its outer VLAN tag and marks it PACKET_OTHERHOST, which "
        "ip_rcv drops (a kernel without CONFIG_VLAN_8021Q has none; rx_otherhost_dropped)",
        "a kernel with CONFIG_VLAN_8021Q and a VLAN device for the tag (the default: --vlan-offload)",
    ),
    D.NOT_UDP: ("ip_local_deliver: an outer IP protocol other than UDP reaches no tunnel socket", None),
    D.IP_FRAGMENT: (
        "ip_local_deliver: an outer IPv4 fragment (reassembly is not modelled: counted as dropped)",
        None,
    ),
    D.IP6_FRAGMENT: (
        "ip6_input: an outer IPv6 fragment (reassembly is not modelled: counted as dropped)",
        None,
    ),
    D.IP6_BAD_EXTHDR: ("ip6_input drops it: an outer IPv6 extension header that cannot be parsed", None),
    D.GENEVE_SHORT: (
        "geneve_udp_encap_recv drops it: UDP + Geneve header and options not all present (rx_dropped when the "
        "options are cut)",
        None,
    ),
    D.GENEVE_VERSION: ("geneve_udp_encap_recv drops it: Geneve version not 0", None),
    D.GENEVE_INNER_PROTO: (
        "geneve_udp_encap_recv drops it: Geneve protocol type not Ethernet (ETH_P_TEB)",
        None,
    ),
    D.GENEVE_CRITICAL: (
        "geneve_rx drops it: Geneve C bit (critical options) on a device without collect metadata "
        "(rx_frame_errors, rx_errors)",
        "a collect-metadata geneve device (ip link add … type geneve external; here --tunnel-metadata)",
    ),
    D.GENEVE_INNER_SHORT: ("geneve_rx drops it: no inner Ethernet header after the Geneve options", None),
    D.VXLAN_RESERVED_BITS: (
        "vxlan_rcv drops it: reserved VXLAN bits set",
        "--vxlan-gbp when they are Group Based Policy bits (the G flag)",
    ),
}


def loss_text(outcome: str, frames: int, skbs: Sequence[tuple[str, int]] = ()) -> str:
    """``outcome`` (a normal-path drop reason) and ``frames`` as "N frames lost: <function, counter>; knob:
    …" ("1 frame lost: …" for one).
    ``skbs``: (kernel, skbs those frames were in) for each kernel run; where GRO merged some (skbs fewer than
    frames in a kernel) they are named, since the stack drops, and its counter counts, skbs: "… (RFC 6936; counter
    Udp6InCsumErrors); the stack drops, and counts, skbs: pre-fix 40, post-fix 2"."""
    what, knob = LOSSES.get(outcome, (f"dropped by the stack ({outcome})", None))
    if frames != 1:  # the table's words speak of one packet: "udp_rcv drops it", "the … device delivered it"
        for one in (" drops it", " delivered it"):
            what = what.replace(one, one[:-2] + "them", 1)
    text = f"{frames:,} {plural(frames, 'frame')} lost: {what}"
    if any(n != frames for _, n in skbs):
        text += "; the stack drops, and counts, skbs: " + ", ".join(f"{k} {n:,}" for k, n in skbs)
    return text + (f"; knob: {knob}" if knob else "")


#: How to get whole frames when records were cut short (captured length < original length, skipped as
#: ``snaplen_cut``), true whatever cut them: a record cut by the snap length of the capture (tcpdump -s N) and one cut
#: by a copy (tcpdump -r cuts a pcap file's records that hold more than its declared snaplen: sim/notes.py
#: ``over_snaplen_text``) look alike, so the file cannot tell which it was
WHOLE_FRAMES_HINT = (
    "capture or copy whole frames: tcpdump -s 0 when capturing; a copy through tcpdump -r cuts records at the "
    "file's declared snaplen"
)


#: the tunnel kinds in words; what became of a skipped frame, by reason (else: skipped as malformed)
_KIND_NAMES = {"vxlan": "VXLAN", "geneve": "Geneve"}
_SKIPPED_AS = {SKIP_SNAPLEN: "cut short", SKIP_OUTGOING: "sent, not received, by the capturing host"}


def hidden_text(inp, hint: bool = True, received: bool | None = None) -> str:
    """The tunnel frames skipped, in words, one clause by reason, e.g. "20 frames to a VXLAN port were cut short
    (snaplen_cut) and not replayed: capture or copy whole frames: …"; "" when none. ``hint``: with how to get
    whole frames (``WHOLE_FRAMES_HINT``; the input notes leave it to the snaplen note). ``received``: which
    reasons (``to_tunnel_ports``)."""
    parts = []
    for reason, kinds in to_tunnel_ports(inp, received).items():
        n = sum(kinds.values())
        where = " or ".join(_KIND_NAMES.get(k, k) for k in kinds)
        port = "port" if len(kinds) == 1 else "ports"
        what = _SKIPPED_AS.get(reason, "skipped as malformed")
        parts.append(
            f"{n:,} {plural(n, 'frame')} to a {where} {port} {'was' if n == 1 else 'were'} {what} ({reason}) and "
            f"not replayed{': ' + WHOLE_FRAMES_HINT if hint and reason == SKIP_SNAPLEN else ''}"
        )
    return "; ".join(parts)


def unread_text(inp) -> str:
    """ "3 frames skipped before their UDP port could be read (snaplen_cut 3)": the frames whose tunnel traffic is
    unknown (``unread``); "" when none."""
    un = unread(inp)
    n = sum(un.values())
    if not n:
        return ""
    each = ", ".join(f"{r} {c:,}" for r, c in un.items())
    return (
        f"{n:,} {plural(n, 'frame')} skipped before {'its' if n == 1 else 'their'} UDP port could be read "
        f"({each}): whether {'it is' if n == 1 else 'they are'} tunnel traffic is unknown"
    )


def split_text(splits: Counter) -> str:
    """ "N skbs started beside a held skb of the same flow at <stage> (kept apart by <desc> [reason] ×n)"
    ("1 skb started …" for one)."""
    parts = []
    for stage in ("phys", "tunnel"):
        c = Counter({why: n for (s, why), n in splits.items() if s == stage})
        if c:
            total = sum(c.values())
            parts.append(
                f"{total:,} {plural(total, 'skb')} started beside a held skb of the same flow at "
                f"{STAGE_NAMES[stage]} instead of merging (kept apart by {reason_list(c)})"
            )
    return "; ".join(parts)


def payload_clause(skbs: int, empty: int, whose: str = "their") -> str:
    """ " (E of <whose> S skbs carry no payload)" beside the end reasons of unmerged phys skbs (``skbs``) of which
    ``empty`` carried no TCP payload (``FlowStats.empty``: ``NapiGroCb.no_payload``, read from the frames by the
    driver step, ``packet.headers.tcp_payload_len``, and counted where GRO runs), so that a reason list mixing ACKs with short data (1-byte probes, small writes, a SYN with
    data) does not read as all without payload, nor the other way round; "" when ``empty`` is 0."""
    if not empty:
        return ""
    if empty == skbs == 1:
        return f" ({whose} one skb carries no payload)"
    if empty == skbs:
        return f" (all {skbs:,} of {whose} skbs carry no payload)"
    return f" ({empty:,} of {whose} {skbs:,} skbs {'carries' if empty == 1 else 'carry'} no payload)"


def _via(model) -> str:
    """ " (stable backport <commit>, since <point release>)" when ``model`` has the fix from a stable branch
    (KernelModel.stable_backport), else ""."""
    bp = (
        model.stable_backport(FIX_COMMIT) if model is not None and hasattr(model, "stable_backport") else None
    )
    return f" (stable backport {short_commit(bp[0])}, since {bp[1]})" if bp else ""


def by_count(counter: Counter | dict, limit: int | None = None) -> list:
    """``counter``'s ``(key, count)`` items, most first; equal counts of end reasons, drop reasons or splits in the
    order the kernel tests them (``reasons.check_rank``: a frame's own condition before the poll's flush of a held
    packet nothing else ended), other keys by key. One order whatever order the counts were added in
    (``Counter.most_common`` keeps insertion order among equals, and the batch path adds a flow's counts in another
    order than the reference path)."""
    return sorted(counter.items(), key=_count_order)[:limit]


def _count_order(kv: tuple) -> tuple:
    key, n = kv
    return (-n, R.check_rank(key) if isinstance(key, str) else 0, key)


def other_changes_words(switches: list[str]) -> str:
    """The modelled commits but 89e5c58fc1e2 and those that change no count two compared kernels differ in (facts.py
    ``other_changes``: switch names), by commit as ``gro-replay kernels`` lists them: "2 other modelled commits that
    can change counts (21f7484220ac, f095a358faf2; gro-replay kernels names them)"."""
    n = len(switches)
    commits = ", ".join(commit_of_switch(s) for s in switches)
    them = "it" if n == 1 else "them"
    return f"{n} other modelled {plural(n, 'commit')} that can change counts ({commits}; gro-replay kernels names {them})"


def ports_text(ports) -> str:
    """The tunnel ports of one kind, for a sentence: "UDP port 6081", "UDP ports 4789, 8472", "no UDP port"."""
    ports = list(ports)
    if not ports:
        return "no UDP port"
    return f"UDP {plural(len(ports), 'port')} {', '.join(str(p) for p in ports)}"


def drop_counts(skbs: Counter, frames: Counter) -> str:
    """The phys skbs the normal path did not decapsulate, by drop reason in the receive path's order
    (``drop_reasons.STACK_DROPS``), each with the wire frames they carried (what the verdict counts):
    "udp6_csum_zero_error 1 skb (20 frames)"; "" when every skb was queued.

    ``skbs``/``frames``: outcome → count (``KernelStats.stack``/``stack_frames``, ``FlowStats`` likewise)."""
    parts = []
    for outcome, n in sorted(skbs.items(), key=lambda kv: (R.check_rank(kv[0]), kv[0])):
        if outcome == "queued":
            continue
        m = frames.get(outcome, 0)
        parts.append(f"{outcome} {n:,} {plural(n, 'skb')} ({m:,} {plural(m, 'frame')})")
    return ", ".join(parts)


_UPSTREAM_TAG = re.compile(r"(\d+\.\d+)(\.\d+)?(-rc\d+)?", re.ASCII)


def kernel_label(name: str, release: str) -> str:
    """How reports name a kernel: ``5.11 (v5.11)`` when the release is an upstream tag (X.Y, X.Y.Z, X.Y-rcN), else
    the name alone (``4.18.0-305.el8``: a distribution's uname -r is no v-tag), or ``name (release)``. A ``.0``
    patch level is not in the tag (``5.10.0`` is v5.10, ``5.12.0-rc2`` v5.12-rc2: the tags have none)."""
    m = _UPSTREAM_TAG.fullmatch(release)
    if m:
        patch = m[2] if m[2] and m[2] != ".0" else ""
        return f"{name} (v{m[1]}{patch}{m[3] or ''})"
    return name if name == release else f"{name} ({release})"


def phys_gro_off_words(cfg) -> str:
    """What keeps GRO from running on the phys device (``ReplayConfig.gro_runs()["phys"]`` False), as a noun
    phrase: "GRO off on eth0" (``--gro phys=off`` of a replay: NETIF_F_GRO cleared), or, where a generic XDP program
    elides it (``phys_xdp_generic``: the kernel backend, whose ``--defer-to-tunnel`` and ``--gro phys=off`` run that
    one recipe), "GRO elided on eth0 by a generic XDP program (…)". Either way ``netif_elide_gro``
    (include/linux/netdevice.h) is true there."""
    if getattr(cfg, "phys_xdp_generic", False):
        return (
            f"GRO elided on {cfg.phys_dev} by a generic XDP program (the kernel backend's --defer-to-tunnel or "
            "--gro phys=off)"
        )
    return f"GRO off on {cfg.phys_dev}"


def _state_of(cfg, key, rx_csum: str) -> str:
    """The RX checksum state of flow ``key``'s frames (a --nic preset decides per flow: sim.ReplayConfig)."""
    f = getattr(cfg, "rx_csum_of_flow", None)
    return f(key) if f is not None else rx_csum


def _nic_words(cfg, rx_csum: str) -> str:
    f = getattr(cfg, "rx_csum_words", None)
    return f() if f is not None else f"--rx-csum {rx_csum}"


#: why a zero-checksum refusal at the phys device costs a flow carrying a tunnel inside the tunnel nothing
#: (``FlowVerdict.costly``; gro-spec §4.4, §4.5)
NESTED_PHYS_WORDS = (
    "after the fix udp_gro_receive passes the outer header and stops at the nested tunnel header "
    "(NAPI_GRO_CB(skb)->encap_mark already set: udp_gro_receive:encap_mark), so the phys device merges a tunnel "
    "inside the tunnel in no kernel"
)
#: ``FlowVerdict.costless_why`` → (what the flows are, why their refusal costs nothing)
COSTLESS_WORDS = {
    "nested": ("carrying a tunnel inside the tunnel", NESTED_PHYS_WORDS),
    "not_tcp": (
        "whose inner packets are not TCP segments",
        "after the fix GRO stops them at their inner header, which carries no TCP segment for tcp_gro_receive, "
        "so no kernel merges them",
    ),
    "one_frame": ("of a single frame", "a single frame has nothing to merge with, in any kernel"),
    "no_payload": (
        "without payload (ACKs, and SYN, FIN or RST without data)",
        "tcp_gro_receive merges no segment without payload, in any kernel",
    ),
    "no_gain": (
        # the fix alone, measured on this kernel: not a kernel of the table (newcomer31: "a kernel with the fix" read
        # as 6.18, which merged them; breaker35: "pre-fix with the fix alone")
        "that the fix alone merges no further",
        "measured: the same kernel model with 89e5c58fc1e2 applied, replayed beside it, delivers as many skbs of "
        "them, so something other than the zero-checksum gate keeps them apart",
    ),
    "post_no_gain": (
        "that the post-fix kernel merges no further",
        "it delivers as many skbs of them: something other than the zero-checksum gate keeps them apart",
    ),
}


def no_gain_text(reasons: str | None, flows: int, why: str = "no_gain") -> str:
    """``COSTLESS_WORDS[why]``'s reason (``no_gain``, or ``post_no_gain`` in a comparison), followed, where the
    kernel with the fix (the counterfactual, or the post-fix kernel) ended the ``flows`` flows' phys skbs by
    something other than a poll's end, by ``reasons`` (a ``reason_list``): "…; with the fix there these flows' phys
    skbs end by: …" ("this flow's" for one)."""
    because = COSTLESS_WORDS[why][1]
    whose = "this flow's" if flows == 1 else "these flows'"
    return f"{because}; with the fix there {whose} phys skbs end by: {reasons}" if reasons else because


def refusal_places(k, why: str) -> str:
    """Where the zero-checksum gate refused one flow's frames in kernel facts ``k`` (``KernelFacts``), stage by
    stage as ``k.gate_zero`` (the JSON's ``gate_refusals_zero_csum``) counts them, with ``why`` (the gate's
    condition): "4 of its 4 frames at the phys device (why)", "4 of its 4 frames at the tunnel device's gro_cells
    (a tunnel inside the tunnel: why)", "4 of its 4 frames at the phys device and 4 again at the tunnel device's
    gro_cells (a tunnel inside the tunnel; each time: why)", or "0 of its 4 frames"."""
    frames = f"{k.frames:,} {plural(k.frames, 'frame')}"
    phys, tunnel = k.gate_zero["phys"], k.gate_zero["tunnel"]
    if phys and tunnel:
        return (
            f"{phys:,} of its {frames} at {STAGE_NAMES['phys']} and {tunnel:,} again at {STAGE_NAMES['tunnel']} "
            f"(a tunnel inside the tunnel; each time: {why})"
        )
    if phys:
        return f"{phys:,} of its {frames} at {STAGE_NAMES['phys']} ({why})"
    if tunnel:
        return f"{tunnel:,} of its {frames} at {STAGE_NAMES['tunnel']} (a tunnel inside the tunnel: {why})"
    return f"0 of its {frames}"


#: end-reason part → (KernelModel switch, the rule's origin): named when the kernel that shows it has the switch on
RULES = {
    "outer_ip_id": (
        "inet_gro_checks_outer_id",
        "outer IPv4 IDs must be fixed or incrementing since 21f7484220ac, v6.18",
    ),
    R.GSO_SKB: ("gro_accepts_gso", None),
}


#: before 4b0ebbca3e16: inet_gro_receive's flush_id and tcp_gro_receive's check (flush_id != 1 || count != 1 ||
#: !is_atomic); the inner header's verdict overwrites the outer's where the outer has DF (gro-spec §3.1)
_ID_RULE_FLUSH_ID = (
    "(GRO takes an ID stepping +1 per held segment; a held packet with DF not yet seen incrementing{gso} takes only "
    "the same ID, or +1 when it is one segment; the ID of an outer header with DF is not read)"
)
#: 4b0ebbca3e16: inet_gro_flush sets ip_fixedid where count == 1, DF and the same ID, returns early for an outer
#: header with DF; gro_receive_network_flush reads the outer header before the inner (breaker46)
_ID_RULE_ONE_BIT = (
    "(GRO takes an ID stepping +1 per held segment, or a fixed one, decided when a held packet of one segment meets "
    "the same ID with DF set; the ID of an outer header with DF is not read; one ip_fixedid bit serves both "
    "headers, the outer read first: an outer ID without DF steps +1 to a held packet of one segment, then, once a "
    "fixed inner ID has set the bit, stays at the held packet's ID)"
)
#: 21f7484220ac and f095a358faf2: one ip_fixedid bit per header, every outer header read, no DF needed
_ID_RULE_BIT_EACH = (
    "(GRO takes an ID stepping +1 per held segment, or a fixed one, decided when a held packet of one segment meets "
    "the same ID, in the outer header as in the inner, each header with its own ip_fixedid bit)"
)
#: the IPv4 ID rule (kernel/reasons.py ``ID_RULE``: every era's) as one kernel has it, by its switches
#: (``KernelModel.l3_flush_in_tcp`` 4b0ebbca3e16, ``inet_gro_checks_outer_id`` 21f7484220ac,
#: ``inet_gro_fixedid_without_df`` f095a358faf2): the words a report on that kernel gives (``describe_for``;
#: newcomer34: a 6.18 run read every era's rule); a combination no upstream release has (a vendor's backport of one
#: of them) keeps every era's
_ID_RULES_BY_SWITCHES: dict[tuple[bool, bool, bool], str] = {
    (False, False, False): _ID_RULE_FLUSH_ID,
    (True, False, False): _ID_RULE_ONE_BIT,
    (True, True, True): _ID_RULE_BIT_EACH,
}


def describe_for(why: str, model: KernelModel | None) -> str:
    """``R.describe(why)`` as a report on kernel ``model`` (None: every era's words) says it: an IPv4 ID reason
    names that kernel's ID rule (``_ID_RULES_BY_SWITCHES``; before v6.10, a GSO skb held only from 5eddb24901ee,
    v6.1: breaker45)."""
    text = R.describe(why)
    if model is None or R.ID_RULE not in text:
        return text
    key = (model.l3_flush_in_tcp, model.inet_gro_checks_outer_id, model.inet_gro_fixedid_without_df)
    rule = _ID_RULES_BY_SWITCHES.get(key)
    if rule is None:
        return text
    gso = ", such as a GSO skb that arrived merged," if model.gro_accepts_gso else ""
    return text.replace(R.ID_RULE, rule.replace("{gso}", gso))


def _rule_note(why: str, model: KernelModel | None) -> str:
    if model is None:
        return ""
    for part, (switch, text) in RULES.items():
        if part in why and text and getattr(model, switch, False):
            return f" ({text})"
    if why == R.GSO_SKB and not model.gro_accepts_gso:
        return " (every GSO skb before 5eddb24901ee, v6.1; from it GRO can merge a TCP one further)"
    return ""


def drop_list(counter: Counter, unit: str = "frame", limit: int = 2) -> str:
    """``reason ×n, …`` of the top ``limit`` drop reasons, then "and N more frames (M other reasons)" so the counts
    add up (``unit``: what the counter counts)."""
    items = by_count(counter)
    return ", ".join(f"{k} ×{v:,}" for k, v in items[:limit]) + the_rest(items, limit, unit, " and")


def the_rest(items: list, limit: int, unit: str, join: str, what: str = "reason") -> str:
    """What ``items`` (``by_count``'s) beyond the first ``limit`` add up to: "{join} N more UNITs (M other
    WHATs)", or "" when there are none."""
    rest = sum(v for _, v in items[limit:])
    if not rest:
        return ""
    others = len(items) - limit
    return f"{join} {rest:,} more {plural(rest, unit)} ({others:,} other {plural(others, what)})"


def reason_list(counter: Counter, limit: int = 3, model: KernelModel | None = None, unit: str = "skb") -> str:
    """``desc [reason] ×n; …`` for the top ``limit`` reasons, then "and N more skbs (M other reasons)" so the
    counts add up to the skbs (``unit``: what the counter counts; every caller counts skbs); ``model``: the kernel
    whose rules are named (a reason a switch introduced names its commit). An empty ``counter`` reads
    ``NO_REASON_RECORDED``."""
    if not counter:
        return NO_REASON_RECORDED

    items = by_count(counter)
    shown = items[:limit]
    text = "; ".join(f"{describe_for(k, model)} [{k}] ×{v:,}{_rule_note(k, model)}" for k, v in shown)
    return text + the_rest(items, limit, unit, "; and")


def refused_where(at: dict) -> str:
    """For which zero checksum the gate refused frames, from ``_Tally.refused_at`` (frames by the stage that refused
    them first): the outer header's at the phys device, a nested tunnel header's at the tunnel device's gro_cells
    (its outer header passed at the phys device), or both."""
    phys, tunnel = at["phys"], at["tunnel"]
    nested = f"at {STAGE_NAMES['tunnel']} for the zero UDP checksum of a tunnel inside the tunnel"
    their = "its" if phys + tunnel == 1 else "their"
    if not tunnel:
        return f"for {their} zero outer UDP checksum"
    if not phys:
        return f"{nested} ({their} outer header passed at {STAGE_NAMES['phys']})"
    return f"for a zero UDP checksum ({phys:,} at {STAGE_NAMES['phys']}, {tunnel:,} only {nested})"


def of_tunnelled(n: int, of: int, empty: int, tcp: bool = False, all_tcp: bool = False) -> str:
    """ "N of T tunnelled [TCP ]flows" for N flows that lose aggregation among T tunnelled flows (``tcp``: T counts
    tunnelled TCP flows only). ``empty`` of the T are flows whose TCP segments all carry no payload
    (``_Tally.tunnel_empty``): tcp_gro_receive merges none of them in any kernel (net/ipv4/tcp_offload.c), so none
    can lose aggregation; T then counts the others and the sentence says so: "N of the T - E tunnelled TCP flows
    that carry payload (T with the E that carry none)", or, where T counts flows of other protocols too (whose
    payload is not TCP's; ``all_tcp`` false: some tunnelled flow is not TCP over the tunnel), "N of the T - E
    tunnelled flows other than the E whose TCP segments carry no payload (T in all)" (newcomer33: "36 of 96"
    counted the 48 pure-ACK directions as flows that could be affected)."""
    kind = f"tunnelled {'TCP ' if tcp else ''}"
    if not empty:
        return f"{n:,} of {of:,} {kind}{plural(of, 'flow')}"
    rest = of - empty
    if not (tcp or all_tcp):
        return (
            f"{n:,} of the {rest:,} tunnelled {plural(rest, 'flow')} other than the {empty:,} whose TCP segments "
            f"carry no payload ({of:,} in all)"
        )
    return (
        f"{n:,} of the {rest:,} {kind}{plural(rest, 'flow')} that {'carries' if rest == 1 else 'carry'} payload "
        f"({of:,} with the {empty:,} that {'carries' if empty == 1 else 'carry'} none)"
    )
