"""The verdict: one computation behind the replay's verdict sentence, ``explain``'s per-flow and capture verdicts,
the JSON document's ``comparison``/``verdict`` and the ``SUMMARY`` line.

It reasons only from what ran: the kernels of the result (their ``KernelModel`` switches, read from the config),
and per kernel, flow and stage the counters the simulation recorded (``report.stats.FlowStats``: skbs, segments,
end reasons named after the kernel condition, and what the normal path did with each phys skb).

* **The bug.** A kernel without 89e5c58fc1e2 (``KernelModel.udp_tunnel_gate_checks_uh_check`` false) refuses
  tunnel GRO in ``udp_gro_receive`` for a frame whose UDP checksum is 0 when it is not CHECKSUM_PARTIAL,
  ``csum_cnt`` is 0 and ``csum_valid`` is 0 (gro-spec §4.4–4.7; end reason
  ``udp_gro_receive:csum_cnt0_csum_valid0_not_partial(uh.check=0)``). That refusal is counted at either GRO stage:
  at the phys device for the outer header, at the tunnel device's gro_cells for a nested tunnel's header.
* **Affected** (compare mode: a kernel without the fix and one with it ran): the kernel without the fix refused
  frames of the flow that way, and the kernel with it delivers fewer skbs for the flow at some stage — each phys
  skb is one pass through ``ip_rcv``/``udp_rcv``/decapsulation, each tunnel skb one pass through the inner stack
  (gro-spec §6.1–6.3). With only kernels without the fix, a flow is affected when they refuse its frames; with
  only kernels carrying the fix, no flow is.
* **Lost**: frames whose phys skb the normal path dropped (``__udp6_lib_rcv``'s zero UDPv6 checksum, a bad outer
  checksum, no socket, a full gro_cells queue, …). A flow all of whose frames are lost in every kernel run is
  *lost*, never *affected*: the fix changes how many skbs carry it to the drop, not what the host receives.
  Each loss is reported with the kernel function and counter that drop it and the knob that changes it.
* **Per kernel**: whether it carries the fix, and, for tunnelled flows that its phys stage does not merge at all,
  the conditions that ended their skbs (the poll-end flush left out when other conditions exist), what the IPv4
  ID did where an ID condition ended one (``FlowStats.id_steps``), and the compares that kept a frame apart from
  a held skb of its own flow (``FlowStats.splits``); inner flows carried under several outer keys are named.
* **Outcome** of the capture: ``nothing_replayed``, ``no_tunnel`` (no flow carries VXLAN/Geneve on the
  configured ports), ``lost``, ``affected`` or ``not_affected``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..kernel import reasons as R
from ..kernel.model import FIX_COMMIT, PROFILES, KernelModel

FIX = "89e5c58fc1e2"
GATE_ZERO = R.UDP_GATE_ZERO_CSUM
GATE_SET = R.UDP_GATE
STAGE_NAMES = {"phys": "the phys device", "tunnel": "the tunnel device's gro_cells"}
#: flushes that end the last held packet of a poll: not a reason a flow does not merge when others exist
_POLL_FLUSHES = (R.POLL_END, R.BUDGET_EXHAUSTED)
#: what the verdict says where it would name end reasons and the backend cannot know them: the kernel backend reads
#: ``net:netif_receive_skb`` (device, length), which does not say why GRO ended an skb (oracle/, kernel-oracle.md)
REASONS_NOT_OBSERVED = (
    "the end reasons are not observable with the kernel backend (the netif_receive_skb trace gives each skb's "
    "device and length, not why GRO ended it)"
)
#: an empty reason counter where the backend records reasons
NO_REASON_RECORDED = "no end reason recorded"
#: ``InputStats.filtered`` key → the option that filtered
_FILTER_OPTIONS = {"bpf": "-f", "flow": "--flow"}

#: normal-path drop reason → (what drops it, kernel counter), the knob that changes it (None: no knob)
LOSSES: dict[str, tuple[str, str | None]] = {
    "udp6_csum_zero_error": (
        "__udp6_lib_rcv drops a UDPv6 datagram with checksum 0 (RFC 6936; counter Udp6InCsumErrors)",
        "udp6zerocsumrx on the tunnel device (ip link add … udp6zerocsumrx; here --udp6zerocsumrx)",
    ),
    "udp_rcv:csum_error": (
        "udp_rcv drops it: the outer UDP checksum does not verify (UdpInCsumErrors / Udp6InCsumErrors)",
        "a capture taken before TX checksum offload carries unfilled checksums: replay with "
        "--rx-csum unnecessary (what a receiving NIC verifies)",
    ),
    "udp_rcv:no_socket": (
        "udp_rcv finds no socket on the destination port (UdpNoPorts)",
        "the tunnel's UDP port: --vxlan-port P / --geneve-port P",
    ),
    "udp_rcv:short": ("udp_rcv drops a truncated UDP header", None),
    "udp_rcv:short_packet": ("udp_rcv drops it: UDP length beyond the packet", None),
    "ip_rcv:csum_error": (
        "ip_rcv drops it: the outer IPv4 header checksum does not verify (InCsumErrors)",
        None,
    ),
    "ip_rcv:bad_header": ("ip_rcv drops a malformed outer IPv4 header (InHdrErrors)", None),
    "ip_rcv:bad_length": (
        "ip_rcv drops it: outer IPv4 total length beyond the frame (InTruncatedPkts)",
        None,
    ),
    "ip_rcv:short": ("ip_rcv drops a truncated outer IPv4 header", None),
    "ipv6_rcv:bad_header": ("ipv6_rcv drops a malformed outer IPv6 header (Ip6InHdrErrors)", None),
    "ipv6_rcv:bad_length": ("ipv6_rcv drops it: payload length beyond the frame (Ip6InTruncatedPkts)", None),
    "gro_cells_receive:backlog_full": (
        "gro_cells_receive drops it: the tunnel device's cell queue is full",
        "sysctl net.core.netdev_max_backlog",
    ),
    "vxlan_ecn_decapsulate:ce_on_not_ect": (
        "INET_ECN_decapsulate drops it: CE on the outer header of a not-ECT inner packet (rx_frame_errors)",
        None,
    ),
    "vxlan_rcv:no_vni_flag": ("vxlan_rcv drops it: VXLAN I flag clear", None),
    "vxlan_rcv:reserved_bits": (
        "vxlan_rcv drops it: reserved VXLAN bits set",
        "--vxlan-gbp when they are Group Based Policy bits (the G flag)",
    ),
}


def loss_text(outcome: str, frames: int) -> str:
    """``outcome`` (a normal-path drop reason) and ``frames`` as "N frame(s) lost: <function, counter>; knob: …"."""
    what, knob = LOSSES.get(outcome, (f"dropped by the stack ({outcome})", None))
    return f"{frames} frame(s) lost: {what}" + (f"; knob: {knob}" if knob else "")


def not_replayed_text(inp) -> str:
    """Why no frame of ``inp`` (``sim.InputStats``) was replayed, e.g. "none of the 20 frames read was replayed
    (skipped snaplen_cut 12, filtered out by -f 8)", or "the capture holds no frames"."""
    if not inp.frames_read:
        return "the capture holds no frames"
    gone = [f"skipped {k} {v}" for k, v in sorted(inp.skipped.items()) if v]
    gone += [
        f"filtered out by {_FILTER_OPTIONS.get(k, k)} {v}"
        for k, v in sorted(getattr(inp, "filtered", {}).items())
        if v
    ]
    return f"none of the {inp.frames_read} frames read was replayed" + (
        f" ({', '.join(gone)})" if gone else ""
    )


def _release_key(release: str) -> tuple:
    out = []
    for part in release.replace("-", ".").split("."):
        out.append(int(part) if part.isascii() and part.isdigit() else 0)
    return tuple(out)


def _model_of(config, name: str, release: str) -> KernelModel | None:
    for m in getattr(config, "kernels", ()):
        if getattr(m, "name", None) == name:
            return m
    base = ".".join(release.split("-")[0].split(".")[:2])
    return PROFILES.get(base)


@dataclass
class KernelFacts:
    """One kernel's facts for one flow (or summed over flows): what the verdict reasons from."""

    name: str
    release: str
    carries_fix: bool | None
    frames: int = 0
    skbs: dict = field(default_factory=lambda: {"phys": 0, "tunnel": 0})
    gate_zero: dict = field(default_factory=lambda: {"phys": 0, "tunnel": 0})
    gate_set: dict = field(default_factory=lambda: {"phys": 0, "tunnel": 0})
    lost: Counter = field(default_factory=Counter)  # frames by drop reason
    phys_reasons: Counter = field(default_factory=Counter)
    #: phys skbs ended by an IP ID condition, by (header, step, segments held)
    id_steps: Counter = field(default_factory=Counter)
    #: skbs started beside a held skb of the same flow, by (stage, reasons.SPLIT_*)
    splits: Counter = field(default_factory=Counter)

    @property
    def lost_frames(self) -> int:
        return sum(self.lost.values())

    def as_dict(self) -> dict:
        return {
            "kernel": self.name,
            "release": self.release,
            "carries_fix": self.carries_fix,
            "frames": self.frames,
            "phys_skbs": self.skbs["phys"],
            "tunnel_skbs": self.skbs["tunnel"],
            "gate_refusals_zero_csum": dict(self.gate_zero),
            "gate_refusals_csum_set": dict(self.gate_set),
            "lost_frames": self.lost_frames,
            "lost": dict(sorted(self.lost.items())),
        }


def facts_of(name: str, release: str, model, f) -> KernelFacts:
    """One kernel's ``KernelFacts`` for one flow from its ``FlowStats`` ``f`` (None: the kernel saw none of it)."""
    kf = KernelFacts(name, release, model.udp_tunnel_gate_checks_uh_check if model else None)
    if f is None:
        return kf
    kf.frames = f.segs["phys"]
    for s in ("phys", "tunnel"):
        kf.skbs[s] = f.skbs[s]
        kf.gate_zero[s] = f.reasons[s][GATE_ZERO]
        kf.gate_set[s] = f.reasons[s][GATE_SET]
    frames_by = getattr(f, "stack_frames", None) or f.stack
    for outcome, n in frames_by.items():
        if outcome != "queued" and n:
            kf.lost[outcome] += n
    kf.phys_reasons = Counter(f.reasons["phys"])
    steps = getattr(f, "id_steps", None)
    if steps:
        kf.id_steps = Counter(steps["phys"])
    splits = getattr(f, "splits", None)
    if splits:
        kf.splits = Counter({(s, why): n for s, c in splits.items() for why, n in c.items()})
    return kf


def split_text(splits: Counter) -> str:
    """ "N skb(s) started beside a held skb of the same flow at <stage> (kept apart by <desc> [reason] ×n)"."""
    parts = []
    for stage in ("phys", "tunnel"):
        c = Counter({why: n for (s, why), n in splits.items() if s == stage})
        if c:
            parts.append(
                f"{sum(c.values())} skb(s) started beside a held skb of the same flow at {STAGE_NAMES[stage]} "
                f"instead of merging (kept apart by {reason_list(c)})"
            )
    return "; ".join(parts)


def id_step_text(steps: Counter, limit: int = 2) -> str:
    """What the IPv4 IDs did where an ID condition ended skbs, e.g. "the outer IPv4 ID stepped by +2 over a held
    packet of 1 segment (incrementing: +1) ×2"; "" when nothing was observed."""
    parts = []
    for (hdr, step, held), n in sorted(steps.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]:
        signed = step - 0x10000 if step > 0x7FFF else step
        which = "IPv4 ID" if hdr == "ip" else f"{hdr} IPv4 ID"
        parts.append(
            f"the {which} stepped by {signed:+d} over a held packet of {held} segment(s) "
            f"(incrementing: +{held}; fixed: +0) ×{n}"
        )
    return "; ".join(parts)


@dataclass
class FlowVerdict:
    """The verdict for one flow: ``outcome`` is ``affected``, ``lost``, ``refused_no_gain``, ``not_affected`` or
    ``not_tunnel``; ``pre``/``post``: the facts of the kernel without / with the fix that were compared (None
    when that side did not run); ``kernels``: every kernel's facts."""

    fid: int
    key: object
    cls: str
    outcome: str
    kernels: list[KernelFacts]
    pre: KernelFacts | None
    post: KernelFacts | None
    why: str = ""

    @property
    def affected(self) -> bool:
        return self.outcome == "affected"

    @property
    def gate_zero(self) -> int:
        """Frames refused by the zero-checksum gate in the kernel without the fix: at the phys device, or at the
        tunnel device (a nested tunnel's frames can be refused at both: counted once)."""
        return max(self.pre.gate_zero.values()) if self.pre else 0

    def saved(self, stage: str) -> int:
        if self.outcome != "affected" or not self.pre or not self.post:
            return 0  # not compared: what the fix saves needs a kernel without it and one with it
        return max(self.pre.skbs[stage] - self.post.skbs[stage], 0)

    def as_dict(self) -> dict:
        """explain's per-flow ``verdict`` (keys of the earlier format kept, facts added)."""
        pre, post = self.pre, self.post
        return {
            "affected": self.affected,
            "outcome": self.outcome,
            "gate_refusals_zero_csum": self.gate_zero,
            "gate_refusals_csum_set": max((sum(k.gate_set.values()) for k in self.kernels), default=0),
            "phys_skbs_pre_fix": pre.skbs["phys"] if pre else 0,
            "phys_skbs_post_fix": post.skbs["phys"] if post else 0,
            "stack_traversals_saved": self.saved("phys"),
            "tunnel_skbs_pre_fix": pre.skbs["tunnel"] if pre else 0,
            "tunnel_skbs_post_fix": post.skbs["tunnel"] if post else 0,
            "tunnel_skbs_saved": self.saved("tunnel"),
            "lost_frames": max((k.lost_frames for k in self.kernels), default=0),
            "kernels": [k.as_dict() for k in self.kernels],
            "why": self.why,
        }


def _via(model) -> str:
    """ " (stable backport <commit>, since <point release>)" when ``model`` has the fix from a stable branch
    (KernelModel.stable_backport), else ""."""
    bp = (
        model.stable_backport(FIX_COMMIT) if model is not None and hasattr(model, "stable_backport") else None
    )
    return f" (stable backport {bp[0][:12]}, since {bp[1]})" if bp else ""


def _state_of(cfg, key, rx_csum: str) -> str:
    """The RX checksum state of flow ``key``'s frames (a --nic preset decides per flow: sim.ReplayConfig)."""
    f = getattr(cfg, "rx_csum_of_flow", None)
    return f(key) if f is not None else rx_csum


def _nic_words(cfg, rx_csum: str) -> str:
    f = getattr(cfg, "nic_words", None)
    return f() if f is not None else f"--rx-csum {rx_csum}"


def _gate_words(rx_csum: str) -> str:
    return (
        "their outer UDP checksum is 0 and the NIC marks them "
        + ("CHECKSUM_NONE" if rx_csum == "none" else "CHECKSUM_UNNECESSARY level 0")
        + ", so udp_gro_receive finds csum_cnt 0 and csum_valid 0 and refuses tunnel GRO"
    )


#: end-reason part → (KernelModel switch, the rule's origin): named when the kernel that shows it has the switch on
RULES = {
    "outer_ip_id": (
        "inet_gro_checks_outer_id",
        "outer IPv4 IDs must be fixed or incrementing since 21f7484220ac, v6.18",
    ),
    R.GSO_SKB: ("gro_accepts_gso", None),
}


def _rule_note(why: str, model: KernelModel | None) -> str:
    if model is None:
        return ""
    for part, (switch, text) in RULES.items():
        if part in why and text and getattr(model, switch, False):
            return f" ({text})"
    if why == R.GSO_SKB and not model.gro_accepts_gso:
        return " (dev_gro_receive flushes GSO skbs before 5eddb24901ee, v6.1)"
    return ""


def reason_list(counter: Counter, limit: int = 3, model: KernelModel | None = None) -> str:
    """``desc [reason] ×n; …`` for the top ``limit`` reasons, then "and N more" so the counts add up to the
    skbs; ``model``: the kernel whose rules are named (a reason a switch introduced names its commit).
    An empty ``counter`` reads ``NO_REASON_RECORDED``."""
    if not counter:
        return NO_REASON_RECORDED

    items = sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = items[:limit]
    text = "; ".join(f"{R.describe(k)} [{k}] ×{v}{_rule_note(k, model)}" for k, v in shown)
    rest = sum(v for _, v in items[limit:])
    if rest:
        text += f"; and {rest} more"
    return text


def _break_reasons(reasons: Counter) -> Counter:
    """The end reasons that explain why skbs were not merged: poll-end flushes left out unless nothing else."""
    other = Counter({k: v for k, v in reasons.items() if k not in _POLL_FLUSHES and k not in (GATE_ZERO,)})
    return other or Counter(reasons)


#: outer flow key field → (words, the kernel function that keeps frames apart on it)
_SPLIT_KEYS = (
    ("outer_src", "outer source address", "inet_gro_receive/ipv6_gro_receive compare the addresses"),
    ("outer_dst", "outer destination address", "inet_gro_receive/ipv6_gro_receive compare the addresses"),
    ("outer_sport", "outer source port", "udp_gro_receive compares the UDP ports"),
    ("outer_dport", "outer destination port", "udp_gro_receive compares the UDP ports"),
    ("tunnel", "tunnel type", "the tunnel sockets differ"),
    ("vni", "VNI", "vxlan_gro_receive/geneve_gro_receive compare the VNI"),
    ("outer_csum_zero", "outer UDP checksum zero vs set", "udp_gro_receive compares whether uh->check is 0"),
)


def _split_ident(k) -> tuple | None:
    """The inner flow a tunnelled flow key carries (None: not tunnelled or no inner addresses)."""
    if k.tunnel and k.inner_src:
        return (k.inner_src, k.inner_dst, k.inner_proto, k.inner_sport, k.inner_dport)
    return None


#: what else keeps two flows of one inner flow apart when no field of ``_SPLIT_KEYS`` differs: the decoder keys
#: tunnel flows by the whole VXLAN header (flags word: e.g. a GBP policy) or Geneve's VNI word (its reserved byte)
_SPLIT_TUNNEL_HEADER = {
    "vxlan": ("VXLAN flags word", "vxlan_gro_receive compares the flags and VNI words"),
    "geneve": ("Geneve header", "geneve_gro_receive compares the whole header with its options"),
}


def _split_fields(me, other) -> tuple:
    """The (words, rule) pairs of the flow key fields in which ``other`` differs from ``me``; the tunnel header
    when none of them does."""
    fields = tuple(
        (words, rule) for attr, words, rule in _SPLIT_KEYS if getattr(other, attr) != getattr(me, attr)
    )
    return fields or (_SPLIT_TUNNEL_HEADER.get(me.tunnel, ("outer header", "the outer headers differ")),)


def _split_texts(members: list[tuple[int, object]]) -> dict[int, str]:
    """Per flow id of ``members`` (``(fid, key)`` of one inner flow under several outer keys): its split note."""
    out = {}
    if len(members) < 2:
        return out
    for fid, me in members:
        # the others by what tells them apart from this flow, in flow-id order: "#1, #3 with another outer
        # destination port (rule) and #2 with another VXLAN flags word (rule)"
        by_fields: dict[tuple, list[int]] = {}
        for o, k in members:
            if o != fid:
                by_fields.setdefault(_split_fields(me, k), []).append(o)
        parts = []
        for fields, others in by_fields.items():
            what = ", ".join(w for w, _ in fields)
            rules = "; ".join(dict.fromkeys(r for _, r in fields))
            parts.append(f"{', '.join(f'#{o}' for o in others)} with another {what} ({rules})")
        out[fid] = (
            f"split: the same inner flow also travels as flow(s) {' and '.join(parts)}, so its frames start "
            "new skbs instead of merging with theirs"
        )
    return out


class _Tally:
    """What the capture's verdict needs from every flow, summed as flows are judged: counts, sums and counters,
    the affected flows with the lowest ids in full (at most ``keep``), and the inner-flow groups of the flows
    live (a group is kept while one of its flows is). Memory: ``keep`` flows and one entry per live group."""

    def __init__(self, names: list[str], keep: int | None) -> None:
        self.keep = keep
        self.flows = 0
        self.tunnel = 0
        self.tunnel_tcp = 0
        self.lost_tunnel = 0
        self.refused = 0  # gate_zero summed over every flow
        self.affected = 0
        self.affected_kept: list[tuple[int, FlowVerdict]] = []  # max-heap by -fid of the lowest ids
        self.first_affected: FlowVerdict | None = None
        self.aff_gate_zero = 0
        self.aff_saved = {"phys": 0, "tunnel": 0}
        # affected flows that the fix saves phys skbs for ("phys_aff") and the others ("tun_only")
        self.pa = 0
        self.pa_first: FlowVerdict | None = None
        self.pa_all_tcp = True
        self.pa_zero = True
        self.pa_frames = 0
        self.pa_saved = {"phys": 0, "tunnel": 0}
        self.pa_reached = 0
        self.pa_tunnel_gate = False
        self.pa_drops: Counter = Counter()
        self.to = 0
        self.to_frames = 0
        self.to_saved_tunnel = 0
        self.to_brk: Counter = Counter()
        #: per kernel name: [flows not merged at the phys stage, their break reasons, their ID steps]
        self.unmerged = {n: [0, Counter(), Counter()] for n in names}
        self.totals: dict[str, KernelFacts] = {}
        #: inner flow → [[(fid, key) of the flows judged], flows started and not yet retired]; a group is closed
        #: (its split flows counted) when its last started flow is retired
        self.groups: dict[tuple, list] = {}
        self.split_flows = 0

    def started(self, key: object) -> None:
        """A flow with ``key`` started during a replay that retires flows: its inner flow's group stays open until
        it is retired, so that the flows of one inner flow live at the same time name each other."""
        ident = _split_ident(key)
        if ident is not None:
            self.groups.setdefault(ident, [[], 0])[1] += 1

    def add(self, fv: FlowVerdict, live: bool) -> None:
        """Sum flow ``fv`` (``live``: still live at the end of the input, else retired during the replay)."""
        self.flows += 1
        self.refused += fv.gate_zero
        if fv.key.tunnel:
            self._add_tunnel(fv, live)
        if fv.affected:
            self._add_affected(fv)

    def _add_tunnel(self, fv: FlowVerdict, live: bool) -> None:
        self.tunnel += 1
        self.tunnel_tcp += fv.cls == "tunnel_tcp"
        self.lost_tunnel += fv.outcome == "lost"
        for k in fv.kernels:
            tot = self.totals[k.name]
            tot.frames += k.frames
            for s in ("phys", "tunnel"):
                tot.skbs[s] += k.skbs[s]
                tot.gate_zero[s] += k.gate_zero[s]
                tot.gate_set[s] += k.gate_set[s]
            tot.lost.update(k.lost)
            tot.splits.update(k.splits)
            if (
                fv.cls == "tunnel_tcp"
                and fv.outcome != "lost"
                and k.frames > 1
                and k.skbs["phys"] >= k.frames
                and not sum(k.gate_zero.values())
            ):
                u = self.unmerged[k.name]
                u[0] += 1
                u[1].update(_break_reasons(k.phys_reasons))
                u[2].update(k.id_steps)
        ident = _split_ident(fv.key)
        if ident is not None:
            g = self.groups.setdefault(ident, [[], 0])
            g[0].append((fv.fid, fv.key))
            if not live:
                g[1] -= 1
                if g[1] <= 0:
                    self.close(ident)

    def _add_affected(self, fv: FlowVerdict) -> None:
        import heapq

        self.affected += 1
        if self.first_affected is None or fv.fid < self.first_affected.fid:
            self.first_affected = fv
        heapq.heappush(self.affected_kept, (-fv.fid, fv))
        if self.keep is not None and len(self.affected_kept) > self.keep:
            heapq.heappop(self.affected_kept)
        self.aff_gate_zero += fv.gate_zero
        for s in ("phys", "tunnel"):
            self.aff_saved[s] += fv.saved(s)
        if fv.pre is None or fv.post is None:
            return  # no comparison: what follows is only said when a kernel without and one with the fix ran
        if fv.saved("phys"):
            self.pa += 1
            if self.pa_first is None or fv.fid < self.pa_first.fid:
                self.pa_first = fv
            self.pa_all_tcp &= fv.cls == "tunnel_tcp"
            self.pa_zero &= bool(fv.key.outer_csum_zero)
            self.pa_frames += fv.pre.gate_zero["phys"]
            for s in ("phys", "tunnel"):
                self.pa_saved[s] += fv.saved(s)
            self.pa_reached += fv.pre.skbs["tunnel"]
            self.pa_tunnel_gate |= bool(fv.pre.gate_zero["tunnel"])
            self.pa_drops.update(fv.pre.lost)
        else:
            self.to += 1
            self.to_frames += fv.pre.gate_zero["tunnel"]
            self.to_saved_tunnel += fv.saved("tunnel")
            self.to_brk.update(_break_reasons(fv.post.phys_reasons))

    def close(self, ident: tuple) -> None:
        """Drop the group of ``ident`` (none of its flows is live any more), counting its split flows."""
        members = self.groups.pop(ident)[0]
        if len(members) >= 2:
            self.split_flows += len(members)

    def split_notes(self) -> dict[int, str]:
        """Split notes of the flows in the groups still open (the live flows and their retired siblings)."""
        out = {}
        for members, _live in self.groups.values():
            out.update(_split_texts(members))
        return out


class Verdict:
    """The verdict of one ``sim.Result`` (see the module doc). Build once, render everywhere.

    Attributes: ``flows`` (one ``FlowVerdict`` per flow live at the end of the input: every flow unless the replay
    retired some, sim/flows.py), ``kernels`` (``KernelFacts`` summed over the tunnelled flows, per kernel, in run
    order), ``pre``/``post`` (names of the kernels compared for the fix, or None), ``outcome`` (capture:
    ``nothing_replayed``, ``no_tunnel``, ``lost``, ``affected``, ``not_affected``), ``text`` (the sentence).

    Every capture-level fact is summed flow by flow (``_Tally``) as each flow is judged: the flows retired during
    the replay (``start`` / ``retire``, their counters final) and then the live ones (``complete``), so the verdict
    is the same whether flows were retired or not, and its memory grows with the live flows, not with every flow.
    """

    def __init__(self, result, keep: int | None = None) -> None:
        if keep is None:
            keep = getattr(result.config, "flows_max", None)
        self._setup(result.config, [(ks.name, ks.release) for ks in result.kernels], keep)
        #: the backend records why each skb ended (the simulator does; the kernel backend cannot)
        self.reasons_observed = getattr(result, "backend", "simulator") != "kernel"
        self.complete(result)

    @classmethod
    def start(cls, config, kernels: list[tuple[str, str]], keep: int | None) -> Verdict:
        """A verdict that flows retired during a replay are added to (``retire``) before ``complete``:
        ``kernels``: (name, release) in run order; ``keep``: affected flows kept in full (None: all)."""
        v = cls.__new__(cls)
        v._setup(config, kernels, keep)
        return v

    def _setup(self, cfg, kernels: list[tuple[str, str]], keep: int | None) -> None:
        self.config = cfg
        self.reasons_observed = True
        self.rx_csum = getattr(cfg, "rx_csum", "unnecessary")
        models = {name: _model_of(cfg, name, release) for name, release in kernels}
        self.models = models
        self._kernels = kernels
        order = sorted(kernels, key=lambda k: _release_key(k[1]))
        without = [
            n for n, _ in order if models[n] is not None and not models[n].udp_tunnel_gate_checks_uh_check
        ]
        with_fix = [
            n for n, _ in order if models[n] is not None and models[n].udp_tunnel_gate_checks_uh_check
        ]
        #: the kernels compared for the fix (both None unless one without and one with the fix ran)
        self.pre = without[-1] if without and with_fix else None
        self.post = with_fix[0] if without and with_fix else None
        #: without a comparison: the facts reported as "pre-fix" / "post-fix" in the per-flow verdicts
        self._pre_side = self.pre or (without[-1] if without else None)
        self._post_side = self.post or (with_fix[0] if with_fix else None)
        #: switches other than the fix that differ between the compared kernels
        self.other_changes: list[str] = []
        if self.pre:
            a, b = models[self.pre].switches(), models[self.post].switches()
            self.other_changes = [s for s in a if a[s] != b[s] and s != "udp_tunnel_gate_checks_uh_check"]
        self._tally = _Tally([n for n, _ in kernels], keep)
        for name, release in kernels:
            m = models[name]
            self._tally.totals[name] = KernelFacts(
                name, release, m.udp_tunnel_gate_checks_uh_check if m else None
            )

    def _reasons(self, counter: Counter, kernel: str | None) -> str:
        """``reason_list`` of ``counter`` for kernel ``kernel``, or, when the backend does not record end reasons,
        ``REASONS_NOT_OBSERVED`` (never an empty list)."""
        if not self.reasons_observed:
            return REASONS_NOT_OBSERVED
        return reason_list(counter, model=self.models.get(kernel) if kernel else None)

    def judge(self, fid: int, key, cls: str, stats: list) -> FlowVerdict:
        """The ``FlowVerdict`` of one flow (its ``why`` left empty) from its ``FlowStats`` per kernel (run order,
        None where a kernel saw none of it)."""
        facts = [
            facts_of(name, release, self.models[name], f)
            for (name, release), f in zip(self._kernels, stats, strict=True)
        ]
        by = {k.name: k for k in facts}
        fv = FlowVerdict(
            fid,
            key,
            cls,
            "",
            facts,
            by.get(self._pre_side) if self._pre_side else None,
            by.get(self._post_side) if self._post_side else None,
        )
        fv.outcome = self._flow_outcome(fv)
        return fv

    def started(self, key: object) -> None:
        """A flow with ``key`` started (a replay that retires flows calls this for each new flow)."""
        self._tally.started(key)

    def retire(self, fid: int, key, cls: str, stats: list) -> None:
        """Add a flow that ended during the replay (its counters final): judged now, summed, kept only if it is
        among the affected flows kept in full."""
        self._tally.add(self.judge(fid, key, cls, stats), live=False)

    def complete(self, result) -> None:
        """Judge the flows still live at the end of ``result`` and build the capture's verdict. Each flow's
        ``FlowVerdict`` is summed and let go (``flows`` builds them again, with their ``why``, when asked)."""
        self.result = result
        self._flows: list[FlowVerdict] | None = None
        tally = self._tally
        for fid, key in enumerate(result.flows):
            if key is None:
                continue  # retired during the replay: already in the tally
            tally.add(self._judge_live(fid), live=True)
        self.splits = tally.split_notes()
        #: flows that carry an inner flow also carried under another outer key (live ones and retired ones)
        self.split_count = tally.split_flows + len(self.splits)
        self.kernels = [tally.totals[name] for name, _ in self._kernels]
        self.outcome = self._capture_outcome()
        self.text = self._capture_text()

    def _judge_live(self, fid: int) -> FlowVerdict:
        r = self.result
        return self.judge(fid, r.flows[fid], r.flow_classes[fid], [ks.flows.get(fid) for ks in r.kernels])

    @property
    def flows(self) -> list[FlowVerdict]:
        """One ``FlowVerdict`` per flow live at the end of the input, in flow id order, with its ``why`` (the
        split notes included): built on first use (explain), so that a replay's memory never holds them all."""
        if self._flows is None:
            out = []
            for fid, key in enumerate(self.result.flows):
                if key is None:
                    continue
                fv = self._judge_live(fid)
                fv.why = self._flow_why(fv)
                text = self.splits.get(fid)
                if text:
                    fv.why += f"; {text}"
                kept = max(fv.kernels, key=lambda k: sum(k.splits.values()), default=None)
                if kept is not None and kept.splits:
                    who = "" if len(fv.kernels) == 1 else f" ({kept.name})"
                    fv.why += f"; {split_text(kept.splits)}{who}"
                out.append(fv)
            self._flows = out
        return self._flows

    # -- per flow --------------------------------------------------------------------------------------------------
    def _flow_outcome(self, fv: FlowVerdict) -> str:
        if not fv.key.tunnel:
            return "not_tunnel"
        if fv.kernels and all(k.frames and k.lost_frames >= k.frames for k in fv.kernels):
            return "lost"
        if self.compare:
            refused = sum(fv.pre.gate_zero.values())
            gain = any(fv.pre.skbs[s] > fv.post.skbs[s] for s in ("phys", "tunnel"))
            if refused and gain:
                return "affected"
            return "refused_no_gain" if refused else "not_affected"
        if any(sum(k.gate_zero.values()) for k in fv.kernels if k.carries_fix is False):
            return "affected"
        return "not_affected"

    def _flow_why(self, fv: FlowVerdict) -> str:
        if fv.outcome == "not_tunnel":
            return "not a UDP tunnel flow: udp_gro_receive's tunnel gate never sees it"
        losses = Counter()
        for k in fv.kernels:
            for o, n in k.lost.items():
                losses[o] = max(losses[o], n)
        loss = "; ".join(loss_text(o, n) for o, n in losses.most_common())
        if fv.outcome == "lost":
            kernels = ", ".join(k.name for k in fv.kernels)
            return f"lost before decapsulation in every kernel run ({kernels}): {loss}"
        if self.compare:
            return self._compare_why(fv, loss)
        parts = []
        for k in fv.kernels:
            parts.append(self._kernel_flow_why(k, fv))
        if loss:
            parts.append(loss)
        return "; ".join(parts)

    def _compare_why(self, fv: FlowVerdict, loss: str) -> str:
        pre, post, key = fv.pre, fv.post, fv.key
        gate_set = sum(pre.gate_set.values())
        stages = [s for s in ("phys", "tunnel") if pre.gate_zero[s]]
        at = [
            f"{pre.gate_zero[s]} of its {pre.frames} frames at {STAGE_NAMES[s]}"
            if i == 0
            else f"{pre.gate_zero[s]} at {STAGE_NAMES[s]} (a tunnel inside the tunnel)"
            for i, s in enumerate(stages)
        ]
        refused = (
            f"before the fix udp_gro_receive refused {' and '.join(at) or f'0 of its {pre.frames} frames'} "
            "(UDP checksum 0, not CHECKSUM_PARTIAL, csum_cnt 0, csum_valid 0)"
        )
        if fv.outcome == "affected":
            bits = []
            if pre.skbs["phys"] > post.skbs["phys"]:
                bits.append(
                    f"phys skbs {pre.skbs['phys']} → {post.skbs['phys']}, "
                    f"{fv.saved('phys')} fewer traversals of IP/UDP/{key.tunnel} decap"
                )
            elif pre.gate_zero["phys"]:
                brk = self._reasons(_break_reasons(post.phys_reasons), post.name)
                bits.append(f"at the phys device they are not merged after it either ({brk})")
            if pre.skbs["tunnel"] > post.skbs["tunnel"]:
                bits.append(
                    f"tunnel skbs {pre.skbs['tunnel']} → {post.skbs['tunnel']}, {fv.saved('tunnel')} fewer "
                    "skbs handed up by the tunnel device"
                )
            why = f"{refused}; after it: " + "; ".join(bits)
        elif fv.outcome == "refused_no_gain":
            why = (
                f"{refused}, but after the fix they are not merged either (phys skbs {pre.skbs['phys']} → "
                f"{post.skbs['phys']}): in this capture nothing of this flow can be aggregated"
            )
            brk = _break_reasons(post.phys_reasons)
            if brk and post.skbs["phys"] >= post.frames > 1:
                why += f" ({post.name}: {self._reasons(brk, post.name)})"
        elif not key.outer_csum_zero:
            why = "outer UDP checksum set: 89e5c58fc1e2 only exempts uh->check == 0" + (
                f" (the gate refuses {gate_set} of its frames in both kernels: csum_cnt 0, csum_valid 0)"
                if gate_set
                else ""
            )
        elif fv.cls != "tunnel_tcp":
            why = "outer checksum 0, but the inner packet is not TCP: nothing to aggregate either way"
        elif not (getattr(self.result.config, "gro", None) or {}).get("phys", True):
            why = (
                f"outer UDP checksum 0, but GRO is off on {self.result.config.phys_dev}: dev_gro_receive passes "
                "every frame up unmerged (netif_elide_gro) before udp_gro_receive's gate, in every kernel"
            )
        else:
            why = (
                "outer UDP checksum 0, but udp_gro_receive's gate passed before the fix too "
                "(the NIC's checksum state left csum_cnt > 0 or csum_valid set, or the skb is CHECKSUM_PARTIAL)"
            )
        if self.other_changes and fv.outcome in ("affected", "refused_no_gain"):
            why += f" ({pre.name} → {post.name} also changes {', '.join(self.other_changes)})"
        if loss:
            why += f"; {loss}"
        return why

    def _kernel_flow_why(self, k: KernelFacts, fv: FlowVerdict) -> str:
        head = f"{k.name} (v{k.release})"
        gz = max(k.gate_zero.values())
        if k.carries_fix is None:
            return f"{head}: not a modelled kernel profile: no verdict on the zero-checksum fix"
        if not k.carries_fix:
            if gz:
                return (
                    f"{head} lacks {FIX}: udp_gro_receive refuses {gz} of its {k.frames} frames "
                    "(UDP checksum 0, csum_cnt 0, csum_valid 0); compare with a kernel carrying the fix "
                    "(--kernel 5.12) to see what it saves"
                )
            text = f"{head} lacks {FIX}, but udp_gro_receive never refuses this flow's frames"
        else:
            text = f"{head} carries {FIX}{_via(self.models.get(k.name))}: the zero-checksum refusal does not apply"
        if fv.cls == "tunnel_tcp" and k.frames > 1 and k.skbs["phys"] >= k.frames:
            brk = self._reasons(_break_reasons(k.phys_reasons), k.name)
            text += f"; not merged at the phys device: {brk}"
            if k.id_steps:
                text += f"; {id_step_text(k.id_steps)}"
        return text

    # -- the capture -----------------------------------------------------------------------------------------------
    def _capture_outcome(self) -> str:
        if not self.result.input.frames_replayed:
            return "nothing_replayed"
        t = self._tally
        if not t.tunnel:
            return "no_tunnel"
        if t.affected:
            return "affected"
        if t.lost_tunnel == t.tunnel:
            return "lost"
        return "not_affected"

    def affected_flows(self) -> list[FlowVerdict]:
        """The affected flows kept in full, by flow id: every one, or with a ``keep`` the ``keep`` lowest ids
        (``affected_count`` counts them all)."""
        return [f for _, f in sorted(self._tally.affected_kept, key=lambda x: -x[0])]

    @property
    def affected_count(self) -> int:
        """Affected flows, every one (also those not kept in full)."""
        return self._tally.affected

    @property
    def compare(self) -> bool:
        return self.pre is not None

    def _loss_sentence(self) -> str:
        worst = max(self.kernels, key=lambda k: k.lost_frames)
        if not worst.lost_frames:
            return ""
        per = "; ".join(loss_text(o, n) for o, n in worst.lost.most_common())
        every = all(k.lost_frames == worst.lost_frames for k in self.kernels)
        who = "every kernel" if every and len(self.kernels) > 1 else worst.name
        return f"Lost on the way ({who}): {per}."

    def _capture_text(self) -> str:
        inp = self.result.input
        cfg = self.result.config
        if self.outcome == "nothing_replayed":
            hint = " (capture whole frames: tcpdump -s 0)" if "snaplen_cut" in inp.skipped else ""
            return f"Nothing to compare: {not_replayed_text(inp)}{hint}."
        if self.outcome == "no_tunnel":
            vx = ", ".join(str(p) for p in getattr(cfg, "vxlan_ports", ())) or "none"
            gn = ", ".join(str(p) for p in getattr(cfg, "geneve_ports", ())) or "none"
            return (
                f"No flow carries tunnel traffic: none of the {inp.frames_replayed} frames replayed is VXLAN "
                f"(UDP ports {vx}) or Geneve (UDP ports {gn}), so the fix has nothing to change here "
                "(tunnels on other ports: --vxlan-port P / --geneve-port P)."
            )
        if self.outcome == "lost":
            return (
                f"Every tunnelled frame is lost before decapsulation, in every kernel run "
                f"({', '.join(k.name for k in self.kernels)}): "
                + "; ".join(
                    loss_text(o, n)
                    for o, n in max(self.kernels, key=lambda k: k.lost_frames).lost.most_common()
                )
                + ". No flow is affected by the zero-checksum bug: what the host receives does not depend on it."
            )
        gro = getattr(cfg, "gro", None) or {}
        if not gro.get("phys", True) and not self._tally.affected:
            tunnel = (
                "the tunnel device's gro_cells do all the merging"
                if gro.get("tunnel", True)
                else "with GRO off on the tunnel device too, nothing is merged anywhere"
            )
            text = (
                f"The fix changes nothing with GRO off on {cfg.phys_dev}: dev_gro_receive passes every frame up "
                "unmerged (netif_elide_gro) in every kernel, so udp_gro_receive's checksum gate (what "
                f"{FIX} changed) is never reached; {tunnel}."
            )
        elif self.compare:
            text = self._compare_text()
        else:
            text = " ".join(self._kernel_sentence(k) for k in self.kernels)
        loss = self._loss_sentence()
        text += f" {loss}" if loss else ""
        kept = max(self.kernels, key=lambda k: sum(k.splits.values()), default=None)
        if kept is not None and kept.splits:
            who = "" if len(self.kernels) == 1 else f"{kept.name}: "
            text += f" {who}{split_text(kept.splits)}."
        if self.split_count:
            text += (
                f" {self.split_count} flow(s) carry an inner flow that also travels under another outer key "
                "(see explain: split): GRO never merges frames across outer keys."
            )
        return text

    def _compare_text(self) -> str:
        t = self._tally
        post = next(k for k in self.kernels if k.name == self.post)
        nic = self.rx_csum
        if not t.affected:
            refused = t.refused
            nic_words = _nic_words(self.result.config, nic)
            if refused:
                text = (
                    f"No flow loses phys-device aggregation before the fix: with {nic_words}, udp_gro_receive "
                    f"refuses {refused} frame(s) for their zero outer UDP checksum, but the post-fix kernel does "
                    "not merge those frames either (no skb is saved)."
                )
            else:
                text = (
                    f"No flow loses phys-device aggregation before the fix: with {nic_words} and these outer UDP "
                    "checksums, udp_gro_receive refuses no tunnelled frame for a zero checksum."
                )
            return text + self._unmerged_note(post)
        parts = []
        if t.pa:
            tcp = t.tunnel_tcp
            all_tcp = t.pa_all_tcp
            frames = t.pa_frames
            saved = t.pa_saved["phys"]
            saved_tun = t.pa_saved["tunnel"]
            why = (
                _gate_words(_state_of(self.result.config, t.pa_first.key, nic))
                if t.pa_zero
                else "udp_gro_receive refuses tunnel GRO for them (csum_cnt 0, csum_valid 0)"
            )
            reached = t.pa_reached
            gro = getattr(self.result.config, "gro", None) or {}
            if reached and not gro.get("tunnel", True):
                later = (
                    "with GRO off on the tunnel device they are not merged later either "
                    "(gro_cells_receive hands them to netif_rx)"
                )
            elif reached and t.pa_tunnel_gate:
                later = "at the tunnel device's gro_cells udp_gro_receive refuses them again (a tunnel inside the tunnel)"
            elif reached:
                later = "they are merged only later by the tunnel device's gro_cells"
            else:
                drops = t.pa_drops
                reason = ", ".join(f"{k} ×{v}" for k, v in drops.most_common(2))
                later = "they never reach a tunnel device" + (f" (dropped: {reason})" if reason else "")
            count = f"{t.pa} of {tcp if all_tcp else t.tunnel} tunnelled {'TCP ' if all_tcp else ''}flow(s)"
            text = (
                f"Before the fix, {count} lose phys-device aggregation ({frames} frames go up one by one): "
                f"{why}; {later}, and the fix saves {saved} skb traversals of IP/UDP/tunnel decapsulation"
            )
            if saved_tun:
                text += f" and {saved_tun} skbs handed up by the tunnel device"
            parts.append(text + ".")
        if t.to:
            frames = t.to_frames
            saved_tun = t.to_saved_tunnel
            brk = t.to_brk
            phys_note = (
                f" (at the phys device the fix changes nothing for them: {self._reasons(brk, self.post)})"
                if brk or not self.reasons_observed
                else ""
            )
            parts.append(
                f"{'Before the fix, ' if not t.pa else 'Also before the fix, '}{t.to} of {t.tunnel} "
                f"tunnelled flow(s) lose aggregation at the tunnel device's gro_cells ({frames} frames refused there "
                "by udp_gro_receive: a tunnel inside the tunnel whose UDP checksum is 0, csum_cnt 0, csum_valid 0); "
                f"the fix saves {saved_tun} skbs handed up by the tunnel device{phys_note}."
            )
        text = " ".join(parts)
        via = _via(self.models.get(self.post))
        if via:
            text += f" {self.post} has the fix{via}."
        if self.other_changes:
            text += f" ({self.pre} → {self.post} also changes {', '.join(self.other_changes)}.)"
        return text + self._unmerged_note(post)

    def _unmerged_note(self, k: KernelFacts) -> str:
        """ " <kernel> does not merge F tunnelled TCP flow(s) at the phys device: reasons." or ""."""
        n, reasons, steps = self._tally.unmerged[k.name]
        if not n:
            return ""
        return (
            f" {k.name} (v{k.release}) does not merge {n} tunnelled TCP flow(s) at the phys device: "
            f"{self._reasons(reasons, k.name)}" + (f"; {id_step_text(steps)}" if steps else "") + "."
        )

    def _kernel_sentence(self, k: KernelFacts) -> str:
        t = self._tally
        head = f"{k.name} (v{k.release})"
        if k.carries_fix is None:
            return f"{head}: not a modelled kernel profile, so no verdict on the zero-checksum fix."
        gz = max(k.gate_zero.values())
        if not k.carries_fix:
            if t.affected:
                text = (
                    f"{head} lacks {FIX} and is affected by the zero-checksum bug: {t.affected} of {t.tunnel} "
                    f"tunnelled flow(s) lose aggregation ({gz} frames refused by udp_gro_receive: "
                    + _gate_words(
                        _state_of(self.result.config, t.first_affected.key, self.rx_csum)
                    ).removeprefix("their ")
                    + "); run without --no-fix (or add --kernel 5.12) to see what the fix saves."
                )
                return text + self._unmerged_note(k)
            text = (
                f"{head} lacks {FIX}, but is not affected here: with {_nic_words(self.result.config, self.rx_csum)} "
                "and these outer "
                "UDP checksums, udp_gro_receive never refuses a tunnelled frame for a zero checksum."
            )
            return text + self._unmerged_note(k)
        text = (
            f"{head} carries {FIX}{_via(self.models.get(k.name))}: udp_gro_receive does not refuse tunnel frames "
            "for a zero UDP checksum, so it "
            f"is not affected by the zero-checksum bug; at the phys device it delivers {k.skbs['phys']} skbs for "
            f"{k.frames} frames of {t.tunnel} tunnelled flow(s)."
        )
        return text + self._unmerged_note(k)

    # -- renderings --------------------------------------------------------------------------------------------------
    def comparison_rows(self) -> list[dict]:
        """JSON ``comparison.affected_flows`` rows (earlier keys kept: id, flow, phys_skbs_pre, phys_skbs_post,
        gate_refusals, zero_csum; added: tunnel_skbs_pre/post, stack_traversals_saved)."""
        rows = []
        for f in self.affected_flows():
            pre, post = f.pre, f.post
            rows.append(
                {
                    "id": f.fid,
                    "flow": f.key.label(),
                    "phys_skbs_pre": pre.skbs["phys"] if pre else f.kernels[0].skbs["phys"],
                    "phys_skbs_post": post.skbs["phys"] if post else 0,
                    "gate_refusals": f.gate_zero,
                    "zero_csum": f.key.outer_csum_zero,
                    "tunnel_skbs_pre": pre.skbs["tunnel"] if pre else f.kernels[0].skbs["tunnel"],
                    "tunnel_skbs_post": post.skbs["tunnel"] if post else 0,
                    "stack_traversals_saved": f.saved("phys"),
                }
            )
        return rows

    def as_dict(self) -> dict:
        """The JSON document's ``verdict``: outcome, sentence, counts, the compared kernels, per-kernel facts."""
        t = self._tally
        return {
            "outcome": self.outcome,
            "text": self.text,
            "affected": bool(t.affected),
            "affected_flows": t.affected,
            "tunnel_flows": t.tunnel,
            "lost_flows": t.lost_tunnel,
            "compared": {"without_fix": self.pre, "with_fix": self.post, "other_changes": self.other_changes}
            if self.compare
            else None,
            "frames_refused": t.aff_gate_zero,
            "stack_traversals_saved": t.aff_saved["phys"],
            "tunnel_skbs_saved": t.aff_saved["tunnel"],
            "kernels": [k.as_dict() for k in self.kernels],
        }

    def summary_tokens(self) -> list[str]:
        """Tokens the SUMMARY line carries from the verdict."""
        return [f"affected_flows={self._tally.affected}"]


def verdict_of(result) -> Verdict:
    """The result's ``Verdict``, computed once and kept on the result (``result._verdict``)."""
    v = getattr(result, "_verdict", None)
    if v is None:
        started = getattr(result, "retired_verdict", None)  # the flows the replayer retired, already judged
        if started is not None:
            started.complete(result)
            v = started
        else:
            v = Verdict(result)
        try:
            result._verdict = v
        except AttributeError:
            pass
    return v
