"""The comparison's sentences of a ``Verdict`` (the base of ``sentences.CaptureSentences``): what the fix saves
between the kernel compared without it and the one with it, measured on the fix alone where the two differ in other
commits too (``fix_alone``), or what the gate refused at no cost when no flow is affected. They read the state
``core.Verdict`` computed and compute nothing of their own.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from ...kernel import reasons as R
from ...kernel.model import KernelModel
from .facts import COUNTERFACTUAL_SUFFIX, FIX, KernelFacts, ReplayResult, reasons_apart
from .gate_words import TUNNEL_GATE_WORDS, _gate_words, zero_csum_states_text
from .tally import Refusals, _Tally
from .words import (
    _nic_words,
    _state_of,
    _via,
    drop_list,
    kernel_label,
    of_tunnelled,
    other_changes_words,
    plural,
    refused_where,
)

#: end reasons of an skb flushed by its own inner headers at the tunnel device, never merged (``_merged_later``)
_APART = frozenset({*R.INNER.values(), R.INET_CSUM_ECT1_MARK, R.TCP_CSUM})


class CompareSentences:
    """The comparison's sentence builders; the helpers they share with the other sentences are
    ``sentences.CaptureSentences``'."""

    # the state core.Verdict computes (``_setup``, ``complete``), read here
    result: ReplayResult
    kernels: list[KernelFacts]
    outcome: str
    pre: str | None
    post: str | None
    other_changes: list[str]
    fix_alone: str | None
    #: the kernel without the fix a verdict of one kernel speaks of, and the counterfactual kernels run beside
    _pre_side: str | None
    _counterfactuals: list[KernelModel]
    #: ``--flow``: per flow id whether it is selected (None: every flow)
    _selection: list[bool] | None
    rx_csum: str
    models: dict[str, KernelModel | None]
    reasons_observed: bool
    kernel_backend: bool
    split_count: int
    _tally: _Tally
    _kernels: list[tuple[str, str]]
    #: the kernels whose unmerged flows with payload the text has said (``_unmerged_note``), which makes the flows
    #: without payload said after them "other" ones (``_empty_note``; breaker45, breaker46)
    _unmerged_said: set[str]

    if TYPE_CHECKING:  # defined by sentences.CaptureSentences

        def _reasons(self, counter: Counter, kernel: str | None) -> str: ...
        def _costless_parts(self, r: Refusals, kernel: str) -> str: ...
        def _costless_text(
            self, r: Refusals, kernel: str, also: bool = False, subject: str = "udp_gro_receive"
        ) -> str: ...
        def _unmerged_note(self, k: KernelFacts, other: KernelFacts | None = None) -> str: ...
        def _selected(self, fid: int) -> bool: ...  # core.Verdict's

    def _zero_reached(self) -> Counter | None:
        """``_Tally.zero_reached``, or None for the kernel backend, whose trace does not show which frames reached
        udp_gro_receive's gate (``zero_state_words`` then takes all to have)."""
        return None if self.kernel_backend else self._tally.zero_reached

    def _label(self, name: str | None) -> str:
        """``kernel_label`` of the kernel of ``name`` in this verdict ("post-fix (v5.12)", "5.10.24 (v5.10.24)")."""
        k = next((k for k in self.kernels if k.name == name), None)
        return kernel_label(name or "", k.release) if k is not None else (name or "")

    def _no_effect_text(self, post: KernelFacts) -> str:
        """Compare mode when no flow is affected: what the gate refused (frames of flows that reach decapsulation,
        which the post-fix kernel does not merge either, and frames of flows lost before it) or that it refused
        nothing."""
        t = self._tally
        nic = self.rx_csum
        lost = t.refused_lost  # refused, then dropped before decapsulation: the fix changes no delivery
        refused = t.refused - lost
        nic_words = _nic_words(self.result.config, nic)
        if refused:
            # why each refused frame stays unmerged with the fix, as a single kernel's verdict says it; the pre-fix
            # kernel's refusals, all costless here, are the frames counted (less those of lost flows)
            listed = self._pre_costless_listed()
            why = f": {self._costless_parts(listed, self.pre)}" if listed is not None and self.pre else ""
            text = (
                f"No flow loses phys-device aggregation before the fix: with {nic_words}, udp_gro_receive "
                f"refuses {refused:,} {plural(refused, 'frame')} {refused_where(t.refused_at)}, but "
                + (
                    f"{self._label(self.pre)} with the fix alone ({self.fix_alone})"
                    if self.fix_alone
                    else self._label(self.post)  # the kernel with the fix, by name (breaker35)
                )
                + f" does not merge {'that frame' if refused == 1 else 'those frames'} either "
                f"(no skb is saved){why}."
            )
        elif lost:
            text = "No flow loses phys-device aggregation before the fix."
        else:
            text = (
                f"No flow loses phys-device aggregation before the fix: with {nic_words} and these outer UDP "
                f"checksums, udp_gro_receive refuses no tunnelled frame for a zero checksum: "
                f"{zero_csum_states_text(t.zero_states, t.zero_unvalidated, self._zero_reached())}."
            )
        if lost:
            text += (
                f" {'It also refuses' if refused else f'With {nic_words}, udp_gro_receive refuses'} {lost:,} "
                f"{plural(lost, 'frame')} for a zero checksum of flows lost before decapsulation (below): "
                f"{self._drop_skbs_words('it' if lost == 1 else 'them')}."
            )
        # the gate refused nothing: the kernel without the fix ran the phys device as the one with it
        pre = next((k for k in self.kernels if k.name == self.pre), None) if not t.refused else None
        return (
            self._fix_alone_lead()
            + text
            + self._fix_costs_text()
            + self._other_changes_note()
            + self._unmerged_note(post, pre)
        )

    def _of_tunnelled(self, n: int, tcp: bool = False) -> str:
        """ "N of T tunnelled [TCP ]flows" for N flows that lose aggregation (``words.of_tunnelled``): T the
        tunnelled flows (``tcp``: the tunnelled TCP flows), less those without payload, named beside."""
        t = self._tally
        if tcp:
            return of_tunnelled(n, t.tunnel_tcp, t.tunnel_tcp_empty, True)
        return of_tunnelled(n, t.tunnel, t.tunnel_empty, all_tcp=t.tunnel == t.tunnel_tcp)

    def _pre_costless_listed(self) -> Refusals | None:
        """Compare mode: the refusals of the kernel compared without the fix (``Refusals``) when the comparison's
        text lists those that cost nothing flow by flow (``_costless_parts``: ``_compare_text`` whenever some
        cost nothing, ``_no_effect_text`` when all those of flows not lost do), else None. What "the N above" of
        ``sentences._empty_note`` refers to."""
        if self.pre is None:
            return None
        t = self._tally
        r = t.refusals[self.pre]
        if t.affected:
            return r if r.costless else None
        refused = t.refused - t.refused_lost
        gro_phys = self.result.config.gro_runs()["phys"]
        return r if refused and gro_phys and r.costless_frames == refused else None

    def _compare_text(self) -> str:
        t = self._tally
        post = next(k for k in self.kernels if k.name == self.post)
        if not t.affected:
            return self._no_effect_text(post)
        parts = [self._phys_affected_text()] if t.pa else []
        if t.to:
            frames = t.to_frames
            saved_tun = t.to_saved_tunnel
            brk = t.to_brk
            phys_note = (
                f" (at the phys device the fix changes nothing for them: {self._reasons(brk, self.fix_alone or self.post)})"
                if brk or not self.reasons_observed
                else ""
            )
            parts.append(
                f"{'Before the fix, ' if not t.pa else 'Also before the fix, '}"
                f"{self._of_tunnelled(t.to)} {'loses' if t.to == 1 else 'lose'} aggregation at the "
                "tunnel device's gro_cells: udp_gro_receive refuses "
                f"{frames:,} {plural(frames, 'frame')} there ({TUNNEL_GATE_WORDS}). "
                f"The fix{' alone' if self.fix_alone else ''} saves {saved_tun:,} {plural(saved_tun, 'skb')} handed "
                f"up by the tunnel device{phys_note}."
            )
        listed = self._pre_costless_listed()
        if (
            listed is not None and self.pre
        ):  # the pre-fix kernel's other refusals, at no cost (as one kernel's says)
            parts.append(f"Before the fix {self._costless_text(listed, self.pre, also=True)}.")
        if t.refused_lost:  # and those of flows lost before decapsulation, so the refusals add up (truth30)
            n = t.refused_lost
            parts.append(
                f"Before the fix udp_gro_receive also refuses {n:,} {plural(n, 'frame')} for a zero checksum of flows "
                "lost before decapsulation (below), whose frames never reach the host whatever GRO does."
            )
        text = " ".join(parts)
        via = _via(self.models.get(post.name))
        if via:
            text += f" {self.post} has the fix{via}."
        return (
            self._fix_alone_lead()
            + text
            + self._fix_costs_text()
            + self._other_changes_note()
            + self._unmerged_note(post)
        )

    def _drop_skbs_words(self, them: str = "them", kernel: str | None = None) -> str:
        """What the fix changes for refused frames of flows lost before decapsulation in ``kernel`` (default: the
        compared kernel without it, or the one a single kernel's verdict speaks of), from ``_Tally.lost_skbs_fix``
        (the skbs carrying them to the drop without the fix and with it, where measured): "the fix changes how many
        skbs carry them to the drop (19 → 2), not what the host receives", "… neither what the host receives nor,
        here, how many skbs carry them to the drop (19 either way)" (newcomer41: an inner VLAN tag kept them apart
        with the fix too), or "can change" where nothing measures the fix alone (breaker65: every kernel without the
        fix whose fix-alone run ran is measured)."""
        m = self._tally.lost_skbs_fix.get(kernel or self.pre or self._pre_side or "")
        if m is None or not self._measures_fix(by_post=m[2]):
            return f"the fix can change how many skbs carry {them} to the drop, never what the host receives"
        a, b = m[0], m[1]
        if a == b:
            return (
                f"the fix changes neither what the host receives nor, here, how many skbs carry {them} to the drop "
                f"({a:,} either way)"
            )
        return f"the fix changes how many skbs carry {them} to the drop ({a:,} → {b:,}), not what the host receives"

    def _measures_fix(self, by_post: bool) -> bool:
        """Whether a difference against the kernel with the fix is the fix's: not where it is the compared post-fix
        kernel (``by_post``) and the compared kernels differ in other commits too (no fix-alone run then)."""
        return not (by_post and self.other_changes)

    def fix_measured(self) -> str | None:
        """What the fix is measured on against the kernel without it: the kernel with it (compare mode), or the
        fix alone applied to it (``fix_alone`` in compare mode; in one kernel's verdict its counterfactual, run
        beside it: ``fix_counterfactuals``); None where nothing measures it (one kernel with the fix, the kernel
        backend)."""
        # the kernel backend: its trace shows no gate, and no counterfactual runs beside the running kernel
        if self.kernel_backend:
            return None
        if self.pre is not None:  # compare mode
            return self.fix_alone or self.post
        pre = self._pre_side
        names = {m.name for m in self._counterfactuals}
        return f"{pre}{COUNTERFACTUAL_SUFFIX}" if pre and f"{pre}{COUNTERFACTUAL_SUFFIX}" in names else None

    def flows_worse_with_fix(self) -> int | None:
        """The flows the fix costs phys-device aggregation (``_Tally.fix_costs``), what the text says, JSON
        ``verdict.flows_worse_with_fix`` and the SUMMARY count: None where nothing measures the fix
        (``fix_measured``); 0 where the compared kernels differ in other commits and the fix was not measured alone
        (the difference is not the fix's then)."""
        name = self.fix_measured()
        if name is None:
            return None
        return self._tally.fix_costs if self._measures_fix(by_post=name == self.post) else 0

    def _fix_costs_text(self) -> str:
        """ " With the fix, N flows lose aggregation they had without it: <kernel with it> hands their frames up in B
        phys skbs, not A: frames of other flows that the fix lets GRO hold take room in the same GRO lists (with the
        fix: what kept their frames apart, ``break_reasons``)." for the flows ``_Tally.fix_costs`` counts (breaker62:
        12 zero-checksum flows the fix holds fill the one GRO bucket a checksum-set flow shares, MAX_GRO_SKBS 8, and
        it goes from 5 phys skbs to 20 while the verdict said no skb changes); "" when none, or where the compared
        kernels differ in other commits and the fix was not measured alone (the difference is not the fix's then)."""
        t = self._tally
        n = self.flows_worse_with_fix()
        name = self.fix_measured()
        if not n or name is None:
            return ""
        a, b = t.fix_costs_skbs
        one = n == 1
        pre = self.pre or self._pre_side
        alone = name != self.post
        who = f"{self._label(pre)} with the fix alone ({name})" if alone else self._label(name)
        return (
            f" With the fix, {n:,} {plural(n, 'flow')} {'loses' if one else 'lose'} aggregation {'it' if one else 'they'} "
            f"had without it: {who} "
            f"hands {'its' if one else 'their'} frames up in {b:,} phys {plural(b, 'skb')}, not {a:,}: frames of other "
            "flows that the fix lets GRO hold take room in the same GRO lists (with the fix: "
            f"{self._reasons(t.fix_costs_reasons, name)})."
        )

    def _phys_affected_text(self) -> str:
        """Compare mode: the affected flows whose phys skbs the fix saves (``_Tally.pa``): how many, why the gate
        refused them, what became of them at the tunnel device, what the fix (alone, where ``fix_alone`` ran)
        saves."""
        t = self._tally
        nic = self.rx_csum
        alone = " alone" if self.fix_alone else ""
        all_tcp = t.pa_all_tcp
        frames = t.pa_frames
        saved = t.pa_saved["phys"]
        saved_tun = t.pa_saved["tunnel"]
        first = t.pa_first
        assert first is not None  # set by the first of the t.pa flows
        why = (
            _gate_words(_state_of(self.result.config, first.key, nic), self.result.config)
            if t.pa_zero
            else "for them udp_gro_receive refuses tunnel GRO (csum_cnt 0, csum_valid 0)"
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
            later = self._merged_later()
        else:
            reason = drop_list(t.pa_drops)
            later = "they never reach a tunnel device" + (f" (dropped: {reason})" if reason else "")
        count = self._of_tunnelled(t.pa, tcp=all_tcp)
        # one claim a sentence: what is affected, why, what becomes of it later, what the fix saves
        text = (
            f"Before the fix, {count} {'loses' if t.pa == 1 else 'lose'} phys-device aggregation: udp_gro_receive "
            f"refuses {frames:,} {plural(frames, 'frame')}, which {'goes' if frames == 1 else 'go'} up one by one. "
            f"{why[0].upper()}{why[1:]}. {later[0].upper()}{later[1:]}. "
            f"The fix{alone} saves {saved:,} {plural(saved, 'skb traversal')} of IP/UDP/tunnel decapsulation"
        )
        if saved_tun:
            text += f" and {saved_tun:,} {plural(saved_tun, 'skb')} handed up by the tunnel device"
        return text + "."

    def _merged_later(self) -> str:
        """What the tunnel device's gro_cells made of the affected flows' frames that reached it (compare mode,
        the kernel without the fix, ``_Tally.pa_tunnel_*``): "merged only later" when it merged some and sent none
        up alone for its own inner headers (``_APART``: an inner IPv4 header checksum the ECT(1) mark broke, a bad
        inner TCP checksum); else how many frames went up in how many skbs and why (those reasons, or the skbs'
        other ends: a lone frame flushed at the poll's end); and how many never reach it (``pa_drops``)."""
        t = self._tally
        segs, skbs = t.pa_tunnel_segs, t.pa_reached
        # skbs a condition of their own inner headers sent up alone (an inner IPv4 header checksum the ECT(1) mark
        # broke, a bad inner TCP checksum): frames the tunnel device could not merge, whatever it merged of others
        apart = Counter({r: n for r, n in t.pa_tunnel_reasons.items() if r in _APART})
        if skbs < segs and not apart:
            cells = "its gro_cells" if t.pa_drops else "the tunnel device's gro_cells"
            done = f"merged only later by {cells}"
            text = f"those that reach the tunnel device are {done}" if t.pa_drops else f"they are {done}"
        else:
            why = self._reasons(apart or reasons_apart(t.pa_tunnel_reasons), self.pre)
            reach = "" if not t.pa_drops else "that reaches it " if segs == 1 else "that reach it "
            text = (
                f"at the tunnel device's gro_cells {'the' if t.pa_drops else 'their'} {segs:,} "
                f"{plural(segs, 'frame')} {reach}{'goes' if segs == 1 else 'go'} up in {skbs:,} "
                f"{plural(skbs, 'skb')} ({why})"
            )
        if not t.pa_drops:
            return text
        lost = sum(t.pa_drops.values())  # some of their frames never reach the tunnel device
        reach = "reaches" if lost == 1 else "reach"
        return f"{text}; {lost:,} {plural(lost, 'frame')} never {reach} it ({drop_list(t.pa_drops)})"

    def _other_changes_note(self) -> str:
        """ " (PRE → POST also changes S1, S2.)" where the compared kernels differ in other commits too and the fix
        was not measured alone (nothing refused: it had nothing to change); "" otherwise (``_fix_alone_lead`` says
        them)."""
        if not self.other_changes or self._fix_alone_lead():
            return ""
        return f" ({self.pre} → {self.post} also changes {other_changes_words(self.other_changes)}.)"

    def _fix_alone_lead(self) -> str:
        """What the comparison's text starts with where the fix was measured alone (``fix_alone``: the compared
        kernels differ in other commits too, and the gate refused frames): "What the fix saves is measured on PRE
        with only 89e5c58fc1e2 applied (PRE+89e5c58fc1e2, run beside it), not between the table's columns: PRE →
        POST also changes N other modelled commits (…), whose effects the columns include", then, where the
        columns' difference at a stage is not the fix alone's, ``_between_text``. "" otherwise."""
        if not self.fix_alone or not self._tally.refused:
            return ""
        changes = other_changes_words(self.other_changes)
        between = self._between_text()
        return (
            f"What the fix saves is measured on {self.pre} with only {FIX} applied ({self.fix_alone}, run beside it), "
            f"not between the table's columns: {self.pre} → {self.post} also changes {changes}, whose effects the "
            f"columns include{f'; {between}' if between else ''}. "
        )

    def _between_text(self) -> str:
        """Per stage where the compared kernels' skbs (the table's columns, ``Result.kernels``) differ by another
        count than the fix alone changes them (its counterfactual's, ``Result.counterfactuals``): "between PRE and
        POST the phys skbs do not change (4 → 4): the fix alone saves 2 (PRE+89e5c58fc1e2 delivers 2), the other
        commits add 2"; "" where they differ by the fix alone's count at both stages."""
        runs = {k.name: k for k in (*self.result.kernels, *getattr(self.result, "counterfactuals", ()))}
        pre, post, alone = (runs.get(n) for n in (self.pre, self.post, self.fix_alone))
        if pre is None or post is None or alone is None:
            return ""
        parts = []
        # the stages' totals count the skbs that carry flows lost before decapsulation to their drop too, which the
        # traversals the fix saves do not (truth31: "saves 11" beside "saves 6 skb traversals")
        for stage in ("phys", "tunnel"):
            a, b, c = (k.stages[stage].skbs for k in (pre, post, alone))
            # lost flows never reach gro_cells: only the phys stage carries their skbs (breaker32)
            lost = (
                "; skbs of flows lost before decapsulation included"
                if stage == "phys" and self._tally.lost_tunnel
                else ""
            )
            if b == c:
                continue
            change = "do not change" if a == b else f"change by {b - a:+,}"
            fix = f"saves {a - c:,}" if a >= c else f"adds {c - a:,}"
            other = f"add {b - c:,}" if b > c else f"save {c - b:,}"
            parts.append(
                f"between {self.pre} and {self.post} the {stage} skbs {change} ({a:,} → {b:,}): the fix alone {fix} "
                f"({self.fix_alone} delivers {c:,}{lost}), the other commits {other}"
            )
        return "; ".join(parts)
