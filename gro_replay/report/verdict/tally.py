"""``_Tally``: the verdict summed flow by flow (counts, per-kernel facts, the affected flows kept in full, the
inner-flow split groups while a member is live), so a flow can be added when it retires (sim/flows.py).
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from ...kernel.vlan_core import vlan_tags_name_a_vid
from ...packet.decode import FlowKey
from .facts import FlowVerdict, KernelFacts, break_reasons
from .inner_stop import not_tcp_reasons
from .splits import Lives, _split_ident, _split_texts, split_members


@dataclass
class Unmerged:
    """One kernel's tunnelled TCP flows not merged at the phys stage: how many, their phys skbs (``skbs``), of them
    those without TCP payload (``skbs_empty``: a flow mixing ACKs with short data, e.g. 1-byte keepalive or
    zero-window probes), the skbs' end reasons (end reason → skbs, ``break_reasons``: every skb's, adding up to
    ``skbs``) and their IP ID steps ((header, step, segments held) → skbs); ``empty``: those of them whose every
    phys skb carried no TCP payload (ACKs, SYN, FIN or RST without data: tcp_gro_receive flushes a segment without
    payload, (len - 1) >= mss, net/ipv4/tcp_offload.c), which no kernel merges, counted apart (not in ``flows``),
    with their end reasons (``empty_reasons``)."""

    flows: int = 0
    skbs: int = 0
    skbs_empty: int = 0
    empty: int = 0
    #: of ``empty``, the flows whose refusals by the compared kernel without the fix the verdict lists as costing
    #: nothing for want of payload (``Refusals.costless_by["no_payload"]``): the same flows said twice, once per kernel
    empty_refused_before: int = 0
    #: of ``flows``, those the comparison names as merged no further by the post-fix kernel
    #: (``Refusals.costless_by["post_no_gain"]``, which also holds flows it merges in part: breaker41)
    no_gain_said: int = 0
    empty_reasons: Counter = field(default_factory=Counter)
    reasons: Counter = field(default_factory=Counter)
    id_steps: Counter = field(default_factory=Counter)

    def alike(self, other: Unmerged) -> bool:
        """As many flows and skbs unmerged, as many without payload, for the same reasons (sentences.py
        ``_unmerged_note``: "Neither … nor … merges")."""
        return (self.flows, self.skbs, self.skbs_empty, self.reasons) == (
            other.flows,
            other.skbs,
            other.skbs_empty,
            other.reasons,
        )


@dataclass
class Refusals:
    """One kernel's flows that its zero-checksum gate refused. Affected flows by the first stage whose refusals
    cost them aggregation (``FlowVerdict.costly_at``): flows and refused frames per stage, each frame once (a flow
    refused at both stages counts its phys refusals); ``again``: the phys-refused flows refused again at the tunnel
    device's gro_cells; ``phys_too``: the tunnel-stage flows (a tunnel inside the tunnel) whose outer header was
    refused at the phys device too, at no cost; ``first_phys``: (flow id, key) of the lowest phys-refused flow (its
    NIC checksum state is named). ``costless``/``costless_frames``: the flows (and their refused frames) whose
    every refusal costs nothing (``refused_no_gain``: a tunnel inside the tunnel refused only at the phys device, inner
    packets that are not TCP segments, a single frame), and by reason (``costless_by``)."""

    flows: dict = field(default_factory=lambda: {"phys": 0, "tunnel": 0})
    frames: dict = field(default_factory=lambda: {"phys": 0, "tunnel": 0})
    again: int = 0
    phys_too: int = 0
    #: of those flows, the frames whose outer header was refused at the phys device
    phys_too_frames: int = 0
    first_phys: tuple[int, FlowKey] | None = None
    costless: int = 0
    costless_frames: int = 0
    #: frames refused of flows lost before decapsulation (every frame dropped: ``Verdict._flow_outcome`` "lost")
    lost_frames: int = 0
    #: ``FlowVerdict.costless_why`` → [flows, refused frames] of the costless flows
    costless_by: dict = field(default_factory=dict)
    #: the ``no_gain`` flows' phys end reasons in the kernel's counterfactual (``FlowVerdict.shadows``), poll-end
    #: flushes left out (``reasons_apart``): what keeps their frames apart with the fix
    no_gain_reasons: Counter = field(default_factory=Counter)
    #: the ``not_tcp`` flows' phys end reasons with the fix (``inner_stop.not_tcp_reasons``: what stops them at the
    #: inner header), and the name of the kernel they were recorded in (its counterfactual's, or the post-fix one's)
    not_tcp_reasons: Counter = field(default_factory=Counter)
    not_tcp_kernel: str | None = None
    #: in a comparison, the ``post_no_gain`` flows' phys end reasons in the post-fix kernel (``break_reasons``: what
    #: keeps their frames apart there), and its name
    post_no_gain_reasons: Counter = field(default_factory=Counter)
    post_kernel: str | None = None

    def add(self, fv: FlowVerdict, k: KernelFacts) -> None:
        """Count flow ``fv`` with this kernel's facts ``k`` for it, if the gate refused it."""
        stage = fv.costly_at(k)
        if stage is None:
            if k.refused:
                self.add_costless(fv, k, fv.costless_why(k))
            return
        self.flows[stage] += 1
        self.frames[stage] += k.gate_zero[stage]
        if stage == "tunnel":
            self.phys_too += bool(k.gate_zero["phys"])
            self.phys_too_frames += k.gate_zero["phys"]
        else:
            self.again += bool(k.gate_zero["tunnel"])
            if self.first_phys is None or fv.fid < self.first_phys[0]:
                self.first_phys = (fv.fid, fv.key)

    def add_costless(self, fv: FlowVerdict, k: KernelFacts, why: str | None) -> None:
        """Count flow ``fv``, whose refusals in kernel ``k`` cost nothing, under ``why`` (``COSTLESS_WORDS``' keys;
        ``post_no_gain`` in a comparison: the post-fix kernel merges the flow no further); for ``not_tcp`` its phys
        end reasons with the fix (``not_tcp_reasons``), for ``post_no_gain`` the post-fix kernel's
        (``post_no_gain_reasons``)."""
        if why == "not_tcp" and (side := fv.with_fix(k)) is not None:
            self.not_tcp_reasons.update(not_tcp_reasons(fv, k))
            self.not_tcp_kernel = self.not_tcp_kernel or side.name
        elif why == "post_no_gain" and fv.post is not None:
            self.post_no_gain_reasons.update(break_reasons(fv.post))
            self.post_kernel = fv.post.name
        elif why == "no_gain" and k.name in fv.shadows:
            # what keeps them apart with the fix alone, one kernel or compared (newcomer31: compare mode named none)
            self.no_gain_reasons.update(break_reasons(fv.shadows[k.name]))
        self.costless += 1
        self.costless_frames += k.refused
        c = self.costless_by.setdefault(why, [0, 0])
        c[0] += 1
        c[1] += k.refused


@dataclass(eq=False)
class SplitGroup:
    """Flows of one inner flow that were live at the same time, one after another (each started before every
    earlier one had ended): ``(fid, key)`` of those judged, and the ids of those started and not retired yet."""

    ident: tuple
    members: list[tuple[int, FlowKey]] = field(default_factory=list)
    live: set[int] = field(default_factory=set)
    #: per flow id: (first frame, end) in ns (``splits.Lives``), so that each flow names only those live with it
    lives: Lives = field(default_factory=dict)


#: flows the fix costs aggregation kept in full for the lines and JSON that name them (the count is of every one)
FIX_COSTS_KEPT = 20


class _Tally:
    """What the capture's verdict needs from every flow, summed as flows are judged: counts, sums and counters,
    the affected flows with the lowest ids in full (at most ``keep``), and the inner-flow groups of the flows
    live (a group is kept while one of its flows is). Memory: ``keep`` flows and one entry per live group."""

    def __init__(
        self,
        names: list[str],
        keep: int | None,
        state_of: Callable[[FlowKey], str] | None = None,
        no_vlan_offload: bool = False,
    ) -> None:
        self.keep = keep
        #: --no-vlan-offload: flows of inner VID != 0 that reached the tunnel device (``scope._vlan_after_tunnel``)
        self.no_vlan_offload, self.vlan_dropped_after_tunnel = no_vlan_offload, 0
        #: a flow's RX checksum state (``words._state_of``: the --rx-csum setting, or the --nic preset's for the flow)
        self.state_of = state_of
        self.flows = 0
        self.tunnel = 0
        self.tunnel_tcp = 0
        #: of ``tunnel``, the flows whose frames carry no payload in their innermost TCP segment
        #: (``KernelFacts.without_payload`` in some kernel: ACKs, SYN, FIN or RST without data, a tunnel inside
        #: the tunnel's too), which no kernel merges; ``tunnel_tcp_empty``: those of them in ``tunnel_tcp``
        self.tunnel_empty = 0
        self.tunnel_tcp_empty = 0
        #: tunnelled flows whose outer UDP checksum is 0 (``FlowKey.outer_csum_zero``): what a kernel without the fix
        #: may refuse, where the refusals cannot be seen (the kernel backend: ``Verdict.refusals_unseen``)
        self.tunnel_zero = 0
        #: of them, the frames at the phys device (``KernelFacts.frames``) by the RX checksum state the NIC gave them
        #: (``state_of``, an RX_CSUM_PROFILES name): what the zero-checksum gate saw before the fix
        self.zero_states: Counter = Counter()
        #: of those frames, by state, the ones that reached the gate unvalidated (``KernelFacts.gate_unvalidated``)
        self.zero_unvalidated: Counter = Counter()
        #: and the ones that reached it at all, validated or not (``KernelFacts.gate_reached``)
        self.zero_reached: Counter = Counter()
        self.lost_tunnel = 0
        self.refused = 0  # gate_zero summed over every flow
        self.refused_lost = 0  # of them, the frames of lost flows (every frame dropped before decapsulation)
        #: per kernel without the fix: the skbs carrying them to the drop without and with it, and whether "with" is
        #: the compared kernel with the fix (not the fix alone: other commits may differ)
        self.lost_skbs_fix: dict[str, list] = {}
        #: the others by the stage that refused them first in the kernel without the fix (``KernelFacts.refused_at``)
        self.refused_at = {"phys": 0, "tunnel": 0}
        self.affected = 0
        self.affected_kept: list[tuple[int, FlowVerdict]] = []  # max-heap by -fid of the lowest ids
        self.aff_gate_zero = 0
        self.aff_saved = {"phys": 0, "tunnel": 0}
        #: per kernel without the fix whose counterfactual ran: the skbs fewer it delivers for the affected flows
        self.shadow_saved: dict[str, dict[str, int]] = {}
        # affected flows that the fix saves phys skbs for ("phys_aff") and the others ("tun_only")
        self.pa = 0
        self.pa_first: FlowVerdict | None = None
        self.pa_all_tcp = True
        self.pa_zero = True
        self.pa_frames = 0
        self.pa_saved = {"phys": 0, "tunnel": 0}
        self.pa_reached = 0
        #: of the ``pa`` flows in the kernel without the fix: the segments the tunnel stage handed up (in
        #: ``pa_reached`` skbs) and the skbs' end reasons (whether they were "merged only later by its gro_cells")
        self.pa_tunnel_segs = 0
        self.pa_tunnel_reasons: Counter = Counter()
        self.pa_tunnel_gate = False
        self.pa_drops: Counter = Counter()
        self.to = 0
        self.to_frames = 0
        self.to_saved_tunnel = 0
        self.to_brk: Counter = Counter()
        #: flows, not lost, the fix (``fixed``) hands up in more phys skbs (``compare._fix_costs_text``): how many,
        #: their phys skbs without and with it, its ``break_reasons``, the first kept in full (``worse_flows``)
        self.fix_costs, self.fix_costs_skbs = 0, [0, 0]
        self.fix_costs_reasons: Counter = Counter()
        self.fix_costs_kept: list[tuple[int, FlowVerdict]] = []
        #: per kernel name: the flows not merged at the phys stage
        self.unmerged = {n: Unmerged() for n in names}
        #: per kernel name: the affected flows its zero-checksum gate refused, by stage
        self.refusals = {n: Refusals() for n in names}
        self.totals: dict[str, KernelFacts] = {}
        #: inner flow → the group its next flow joins; a group is closed (its split flows counted) when its last
        #: started flow is retired
        self.groups: dict[tuple, SplitGroup] = {}
        #: groups no flow joins any more (every flow of theirs had ended when another of the inner flow started),
        #: open while one of their flows is not retired; and the group of each flow started and not retired
        self.ended_groups: list[SplitGroup] = []
        self.group_of: dict[int, SplitGroup] = {}
        self.split_flows = 0

    def started(
        self, fid: int, key: FlowKey, first_ns: int | None, ended_by: Callable[[int, int], bool]
    ) -> None:
        """Flow ``fid`` with ``key`` started during a replay that retires flows, its first frame at ``first_ns``
        (ns; None: not known). It joins its inner flow's group, which stays open until all of its flows are
        retired, so that flows of one inner flow live at the same time name each other — unless every flow of the
        group had ended by ``first_ns`` (``ended_by(fid, ns)``: sim/flows.py ``FlowTracker.timed_out``, silent past
        conntrack's timeout): then the flow starts a group of its own, whether or not the others were retired yet.
        Flows are retired only at the end of a poll, so when that happens depends on the polls and other flows'
        traffic; whether two flows were live at the same time depends on their own frames' times only."""
        ident = _split_ident(key)
        if ident is None:
            return
        g = self.groups.get(ident)
        if g is not None and first_ns is not None and all(ended_by(f, first_ns) for f in g.live):
            self.ended_groups.append(g)
            g = None
        if g is None:
            g = self.groups[ident] = SplitGroup(ident)
        g.live.add(fid)
        g.lives[fid] = (first_ns, None)
        self.group_of[fid] = g

    def ends(self, fid: int, end_ns: int) -> None:
        """Flow ``fid``, not retired, ends (or ended) at ``end_ns`` (ns: its last frame plus its timeout): the end
        its split notes compare (``splits.lived_together``); ``explain`` keeps ended flows, the replay its live ones."""
        g = self.group_of.get(fid)
        if g is not None and fid in g.lives:
            g.lives[fid] = (g.lives[fid][0], end_ns)

    def forget(self, fid: int) -> None:
        """Flow ``fid`` was retired unjudged (outside ``--flow``'s selection, or without counters): it leaves its
        group, unnamed, so that the group closes when its judged flows are retired."""
        g = self.group_of.pop(fid, None)
        if g is not None:
            g.live.discard(fid)
            g.lives.pop(fid, None)
            if not g.live:
                self.close(g)

    def add(self, fv: FlowVerdict, live: bool, end_ns: int | None = None) -> None:
        """Sum flow ``fv`` (``live``: still live at the end of the input, else retired during the replay, having
        ended at ``end_ns``: its last frame plus its timeout, ns)."""
        self.flows += 1
        self.refused += fv.gate_zero
        if fv.outcome == "lost":
            self.refused_lost += fv.gate_zero
            self._add_lost_skbs(fv)
            for k in fv.kernels:  # per kernel too: an affected kernel says them beside its costly refusals
                self.refusals[k.name].lost_frames += k.refused
        elif fv.gate_zero and fv.pre is not None:
            stage = fv.pre.refused_at()
            if stage is not None:
                self.refused_at[stage] += fv.gate_zero
        empty_in, unmerged_in = self._add_tunnel(fv, live, end_ns) if fv.key.tunnel else (set(), set())
        if self.no_vlan_offload and vlan_tags_name_a_vid(tci for _tpid, tci in fv.key.inner_vlan):
            self.vlan_dropped_after_tunnel += any(k.skbs["tunnel"] for k in fv.kernels)
        self._add_fix_cost(fv)
        if fv.affected:
            self._add_affected(fv)
        elif fv.outcome == "refused_no_gain" and (fv.pre is None or fv.post is None):
            for k in fv.kernels:  # one kernel: refusals that cost nothing (FlowVerdict.costly)
                self.refusals[k.name].add(fv, k)
        elif fv.outcome == "refused_no_gain" and fv.pre is not None and fv.pre.refused:
            # compared: the pre-fix kernel's refusals, none costing a skb the post-fix kernel saves
            pre = fv.pre
            why = fv.costless_why(pre) or "post_no_gain"
            self.refusals[pre.name].add_costless(fv, pre, why)
            if why == "no_payload" and fv.post is not None and fv.post.name in empty_in:
                self.unmerged[fv.post.name].empty_refused_before += 1
            elif why == "post_no_gain" and fv.post is not None and fv.post.name in unmerged_in:
                self.unmerged[fv.post.name].no_gain_said += 1

    def _add_lost_skbs(self, fv: FlowVerdict) -> None:
        """A lost flow's refused frames: per kernel without the fix, the skbs carrying them to the drop without the
        fix and with it (its fix-alone run, else the compared kernel with it), where measured (``lost_skbs_fix``)."""
        for k in fv.kernels if fv.gate_zero else ():
            fixed, by_post = fv.shadows.get(k.name), False
            if fixed is None and k is fv.pre and fv.post is not None:
                fixed, by_post = fv.post, True
            if fixed is not None:
                m = self.lost_skbs_fix.setdefault(k.name, [0, 0, by_post])
                m[0] += sum(k.lost_skbs.values())
                m[1] += sum(fixed.lost_skbs.values())

    def _add_fix_cost(self, fv: FlowVerdict) -> None:
        """A flow, not lost, that the fix (``fixed``: compared, or one kernel without it whose fix-alone run ran)
        hands up in more phys skbs than the kernel without it: counted, its skbs and reasons summed, kept in full
        among the ``FIX_COSTS_KEPT`` lowest ids (``fix_costs*``)."""
        fixed = fv.fixed if fv.outcome != "lost" and fv.pre is not None else None
        if fixed is None or fv.pre is None or fixed.skbs["phys"] <= fv.pre.skbs["phys"]:
            return
        self.fix_costs += 1
        self.fix_costs_skbs[0] += fv.pre.skbs["phys"]
        self.fix_costs_skbs[1] += fixed.skbs["phys"]
        self.fix_costs_reasons.update(break_reasons(fixed))
        heapq.heappush(self.fix_costs_kept, (-fv.fid, fv))  # the lowest ids, whichever was judged first
        if len(self.fix_costs_kept) > FIX_COSTS_KEPT:
            heapq.heappop(self.fix_costs_kept)

    def _add_tunnel(self, fv: FlowVerdict, live: bool, end_ns: int | None) -> tuple[set[str], set[str]]:
        """Sum tunnelled flow ``fv`` into the kernels' totals, unmerged flows and split groups. Returns the names of
        the kernels that counted it among their flows without payload (``Unmerged.empty``), and among their other
        unmerged flows (``Unmerged.flows``)."""
        empty_in: set[str] = set()
        unmerged_in: set[str] = set()
        self.tunnel += 1
        self.tunnel_zero += bool(fv.key.outer_csum_zero)
        if fv.key.outer_csum_zero and self.state_of is not None and fv.kernels:
            state = self.state_of(fv.key)
            self.zero_states[state] += max(k.frames for k in fv.kernels)
            self.zero_unvalidated[state] += max(k.gate_unvalidated["phys"] for k in fv.kernels)
            self.zero_reached[state] += max(k.gate_reached["phys"] for k in fv.kernels)
        self.tunnel_tcp += fv.cls == "tunnel_tcp"
        empty = any(k.without_payload for k in fv.kernels)
        self.tunnel_empty += empty
        self.tunnel_tcp_empty += empty and fv.cls == "tunnel_tcp"
        self.lost_tunnel += fv.outcome == "lost"
        for k in fv.kernels:
            tot = self.totals[k.name]
            tot.frames += k.frames
            tot.refused += k.refused
            for s in ("phys", "tunnel"):
                tot.skbs[s] += k.skbs[s]
                tot.gate_zero[s] += k.gate_zero[s]
                tot.gate_set[s] += k.gate_set[s]
                tot.gate_unvalidated[s] += k.gate_unvalidated[s]
                tot.gate_reached[s] += k.gate_reached[s]
            tot.lost.update(k.lost)
            tot.lost_skbs.update(k.lost_skbs)
            tot.splits.update(k.splits)
            if fv.cls == "tunnel_tcp" and k.skbs["phys"] >= k.frames and not sum(k.gate_zero.values()):
                u = self.unmerged[k.name]
                # of one frame or lost too: the flows ``tunnel_tcp_empty`` counts (audit44)
                if k.without_payload:
                    u.empty += 1
                    u.empty_reasons.update(break_reasons(k))
                    empty_in.add(k.name)
                    continue
                if fv.outcome == "lost" or k.frames < 2:
                    continue
                u.flows += 1
                unmerged_in.add(k.name)
                u.skbs += k.skbs["phys"]
                u.skbs_empty += k.phys_empty
                u.reasons.update(break_reasons(k))
                u.id_steps.update(k.id_steps)
        ident = _split_ident(fv.key)
        if ident is not None:
            g = self.group_of.pop(fv.fid, None)
            if g is None:  # a replay that retires no flow: one group per inner flow
                g = self.groups.get(ident)
                if g is None:
                    g = self.groups[ident] = SplitGroup(ident)
            g.members.append((fv.fid, fv.key))
            if end_ns is not None and fv.fid in g.lives:
                g.lives[fv.fid] = (g.lives[fv.fid][0], end_ns)
            if not live:
                g.live.discard(fv.fid)
                if not g.live:
                    self.close(g)
        return empty_in, unmerged_in

    def _add_affected(self, fv: FlowVerdict) -> None:
        self.affected += 1
        heapq.heappush(self.affected_kept, (-fv.fid, fv))
        if self.keep is not None and len(self.affected_kept) > self.keep:
            heapq.heappop(self.affected_kept)
        self.aff_gate_zero += fv.gate_zero
        for s in ("phys", "tunnel"):
            self.aff_saved[s] += fv.saved(s)
        for k in fv.kernels:
            self.refusals[k.name].add(fv, k)
            saved = fv.shadow_saved(k)
            if saved is not None:
                got = self.shadow_saved.setdefault(k.name, {"phys": 0, "tunnel": 0})
                for s in ("phys", "tunnel"):
                    got[s] += saved[s]
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
            self.pa_tunnel_segs += fv.pre.tunnel_segs
            self.pa_tunnel_reasons.update(fv.pre.tunnel_reasons)
            self.pa_tunnel_gate |= bool(fv.pre.gate_zero["tunnel"])
            self.pa_drops.update(fv.pre.lost)
        else:
            self.to += 1
            self.to_frames += fv.pre.gate_zero["tunnel"]
            self.to_saved_tunnel += fv.saved("tunnel")
            self.to_brk.update(break_reasons(fv.fixed or fv.post))

    def close(self, g: SplitGroup) -> None:
        """Drop group ``g`` (none of its flows is live any more), counting its split flows: all of its flows when
        they are under two outer keys or more, none when they are one key's flows (a key that came back as a new
        flow: a connection after the last one ended, or a key retired while GRO held its frames)."""
        if self.groups.get(g.ident) is g:
            del self.groups[g.ident]
        else:
            self.ended_groups.remove(g)
        self.split_flows += split_members(g.members, g.lives)

    def split_notes(self) -> dict[int, str]:
        """Split notes of the flows in the groups still open (the live flows and their retired siblings)."""
        out: dict[int, str] = {}
        for g in [*self.ended_groups, *self.groups.values()]:
            out.update(_split_texts(g.members, g.lives))
        return out
