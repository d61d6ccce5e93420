"""The per-flow sentences of a ``Verdict`` (its base class, above ``sentences.CaptureSentences``): each flow's
``why``, in compare mode (``_compare_why``) and per kernel run (``_kernel_flow_why``), for ``explain`` and the JSON.
They read the ``FlowVerdict`` judged by ``core.Verdict`` and compute nothing of their own.
"""

from __future__ import annotations

from collections import Counter

from .facts import FIX, STAGE_NAMES, FlowVerdict, KernelFacts, break_reasons, reasons_apart
from .fix_words import fix_advice, lacks_fix_words
from .gate_words import zero_state_words
from .id_steps import id_step_text
from .inner_stop import not_tcp_reasons, not_tcp_text
from .sentences import CaptureSentences
from .words import (
    COSTLESS_WORDS,
    NESTED_PHYS_WORDS,
    _state_of,
    _via,
    by_count,
    kernel_label,
    loss_text,
    no_gain_text,
    other_changes_words,
    payload_clause,
    phys_gro_off_words,
    plural,
    refusal_places,
)


class FlowSentences(CaptureSentences):
    """Per-flow sentence builders mixed into ``core.Verdict``."""

    def _flow_why(self, fv: FlowVerdict) -> str:
        if fv.outcome == "not_tunnel":  # what the fix costs it, where measured against the kernel without it
            cost = self._fix_cost_clause(fv.pre, fv.post, fv.fixed) if fv.pre is not None else ""
            return f"not a UDP tunnel flow: udp_gro_receive's tunnel gate never sees it{cost}"
        losses: Counter[str] = Counter()
        for k in fv.kernels:
            for o, n in k.lost.items():
                losses[o] = max(losses[o], n)
        loss = "; ".join(loss_text(o, n, self._lost_skbs(o, n, fv.kernels)) for o, n in by_count(losses))
        if fv.outcome == "lost":
            kernels = ", ".join(k.name for k in fv.kernels)
            return f"lost before decapsulation in every kernel run ({kernels}): {loss}"
        if self.compare:
            return self._compare_why(fv, loss)
        parts = []
        for k in fv.kernels:
            # the kernel without the fix whose counterfactual ran: what the fix would cost it
            cost = (
                self._fix_cost_clause(k, fv.post, fv.fixed)
                if k is fv.pre and fv.outcome != "affected"
                else ""
            )
            parts.append(self._kernel_flow_why(k, fv) + cost)
        if loss:
            parts.append(loss)
        return "; ".join(parts)

    def _fix_cost_clause(self, pre: KernelFacts, post: KernelFacts | None, fixed: KernelFacts | None) -> str:
        """ "; yet with the fix its phys skbs go A → B: frames of other flows that the fix lets GRO hold take room
        in the same GRO lists (with the fix: reasons)" for a flow the fix does not touch and costs aggregation
        (breaker62; the capture's ``_fix_costs_text``); "" otherwise, and where the difference is other commits' (no
        fix-alone run)."""
        if (
            fixed is None
            or fixed.skbs["phys"] <= pre.skbs["phys"]
            or not self._measures_fix(by_post=fixed is post)
        ):
            return ""
        brk = self._reasons(break_reasons(fixed), fixed.name)
        with_fix = "with the fix" if fixed is post else f"with the fix alone ({fixed.name})"
        return (
            f"; yet {with_fix} its phys skbs go {pre.skbs['phys']:,} → {fixed.skbs['phys']:,}: frames of other "
            f"flows that the fix lets GRO hold take room in the same GRO lists (with the fix: {brk})"
        )

    def _compare_why(self, fv: FlowVerdict, loss: str) -> str:
        (pre, post), key = fv.sides(), fv.key
        fixed = fv.fixed
        assert fixed is not None  # compared: post ran
        after = "after it" if fixed is post else f"with the fix alone ({self.fix_alone})"
        gate_set = sum(pre.gate_set.values())
        refused = "before the fix udp_gro_receive refused " + refusal_places(
            pre, "UDP checksum 0, not CHECKSUM_PARTIAL, csum_cnt 0, csum_valid 0"
        )
        if fv.outcome == "affected":
            bits = []
            if pre.skbs["phys"] > fixed.skbs["phys"]:
                bits.append(
                    f"phys skbs {pre.skbs['phys']:,} → {fixed.skbs['phys']:,}, "
                    f"{fv.saved('phys'):,} fewer {plural(fv.saved('phys'), 'traversal')} of IP/UDP/{key.tunnel} decap"
                )
            elif pre.gate_zero["phys"]:
                brk = self._reasons(break_reasons(fixed), fixed.name)
                bits.append(f"at the phys device they are not merged either ({brk})")
            if pre.skbs["tunnel"] > fixed.skbs["tunnel"]:
                bits.append(
                    f"tunnel skbs {pre.skbs['tunnel']:,} → {fixed.skbs['tunnel']:,}, {fv.saved('tunnel'):,} fewer "
                    f"{plural(fv.saved('tunnel'), 'skb')} handed up by the tunnel device"
                )
            why = f"{refused}; {after}: " + "; ".join(bits)
        elif fv.outcome == "refused_no_gain":
            when = "after the fix" if fixed is post else after  # not "after it its frames" (newcomer36)
            why = (
                f"{refused}, but {when} {'its frame is' if fixed.frames == 1 else 'its frames are'} not merged "
                f"further (phys skbs {pre.skbs['phys']:,} → "
                f"{fixed.skbs['phys']:,}, tunnel skbs {pre.skbs['tunnel']:,} → {fixed.skbs['tunnel']:,}): "
                + (
                    "a flow of one frame has nothing to merge it with"
                    if fixed.frames < 2
                    else "its TCP segments carry no payload, which tcp_gro_receive merges in no kernel"
                    if fixed.without_payload
                    else "the zero-checksum gate is not what keeps them apart"
                )
            )
            if fixed.frames > 1:
                why += self._apart_reasons(fixed, bool(pre.gate_zero["tunnel"]))
        elif not key.outer_csum_zero:
            why = (
                "outer UDP checksum set: 89e5c58fc1e2 changes only frames whose outer UDP checksum is 0 (uh->check == 0)"
                + (
                    f" (the gate refuses {gate_set:,} of its frames in both kernels: csum_cnt 0, csum_valid 0)"
                    if gate_set
                    else ""
                )
            )
        elif fv.cls != "tunnel_tcp":
            why = "outer checksum 0, but the inner packet is not TCP: nothing to aggregate either way"
        elif not self.result.config.gro_runs()["phys"]:
            why = (
                f"outer UDP checksum 0, but with {phys_gro_off_words(self.result.config)} dev_gro_receive passes "
                "every frame up unmerged (netif_elide_gro) before udp_gro_receive's gate, in every kernel"
            )
        else:
            why = (
                "outer UDP checksum 0, but udp_gro_receive's gate refuses none of its frames before the fix either: "
                + self._zero_state_clause(fv, pre)
            )
        if fv.outcome != "affected":
            why += self._fix_cost_clause(pre, post, fixed)
        lead = self._assumed_lead()
        if lead and fv.outcome in ("affected", "refused_no_gain"):
            why = f"{lead}: {why}"
        if self.other_changes and fv.outcome in ("affected", "refused_no_gain"):
            why += f" ({pre.name} → {post.name} also changes {other_changes_words(self.other_changes)}"
            if fixed is not post:
                why += f"; {post.name}: phys skbs {post.skbs['phys']:,}, tunnel skbs {post.skbs['tunnel']:,}"
            why += ")"
        if loss:
            why += f"; {loss}"
        return why

    def _apart_reasons(self, fixed: KernelFacts, at_tunnel: bool) -> str:
        """What keeps a flow's frames apart in kernel ``fixed`` (the fix applied), as " (<kernel>: <reasons>)": its
        phys skbs' end reasons where none merged there (``break_reasons``); for a flow refused at the tunnel
        device's gro_cells too (``at_tunnel``: a tunnel inside the tunnel, which the phys device stops at the
        nested header whatever the fix), its tunnel skbs' (audit44: the phys device's encap_mark alone was named
        for a nested pure-ACK flow); "" when no reason is left."""
        parts = []
        breaks = break_reasons(fixed)
        if breaks and fixed.skbs["phys"] >= fixed.frames:
            parts.append(("at the phys device " if at_tunnel else "") + self._reasons(breaks, fixed.name))
        tunnel = reasons_apart(fixed.tunnel_reasons) if at_tunnel else None
        if tunnel:
            parts.append("at the tunnel device's gro_cells " + self._reasons(tunnel, fixed.name))
        return f" ({fixed.name}: {'; '.join(parts)})" if parts else ""

    def _zero_state_clause(self, fv: FlowVerdict, k: KernelFacts) -> str:
        """Why kernel ``k``'s zero-checksum gate refused none of flow ``fv``'s frames (outer UDP checksum 0): the
        RX checksum state they had and what the gate found (gate_words.py ``zero_state_words``)."""
        name, how = zero_state_words(
            _state_of(self.result.config, fv.key, self.rx_csum),
            k.frames,
            k.gate_unvalidated["phys"],
            None if self.kernel_backend else k.gate_reached["phys"],
        )
        return (
            f"marked {name}" + (f" ({how})" if how else "") + ", and the gate refuses only frames not "
            "CHECKSUM_PARTIAL whose csum_cnt and csum_valid are both 0"
        )

    def _kernel_flow_why(self, k: KernelFacts, fv: FlowVerdict) -> str:
        head = kernel_label(k.name, k.release)
        gz = k.refused
        if k.carries_fix is None:
            return f"{head}: not a modelled kernel profile: no verdict on the zero-checksum fix"
        if not k.carries_fix:
            lacks = lacks_fix_words(self.models.get(k.name), head)
            if gz:
                return self._lacking_flow_why(k, fv, lacks)
            if fv.key.outer_csum_zero and self.refusals_unseen():
                text = (
                    f"{lacks}: whether udp_gro_receive refuses this flow's frames for their zero outer UDP checksum "
                    f"is not observable with the kernel backend"
                )
            else:
                # for a zero checksum: the gate's other refusal (a non-zero checksum on a frame already flushing,
                # reasons.UDP_GATE) is no cost of the fix's (breaker40)
                text = f"{lacks}, but udp_gro_receive never refuses this flow's frames for a zero checksum"
                if (
                    fv.key.outer_csum_zero
                    and fv.cls == "tunnel_tcp"
                    and k.frames
                    and self.result.config.gro_runs()["phys"]
                ):
                    text += f": {self._zero_state_clause(fv, k)}"
        else:
            text = f"{head} carries {FIX}{_via(self.models.get(k.name))}: the zero-checksum refusal does not apply"
        if fv.cls == "tunnel_tcp" and k.frames > 1 and k.skbs["phys"] >= k.frames:
            brk = self._reasons(break_reasons(k), k.name)
            text += (
                f"; not merged at the phys device{payload_clause(k.skbs['phys'], k.phys_empty, 'its')}; why its "
                f"skbs ended: {brk}"
            )
            if k.id_steps:
                text += f"; {id_step_text(k.id_steps, model=self.models.get(k.name))}"
        return text

    def _costless_because(self, k: KernelFacts, fv: FlowVerdict, why: str) -> str:
        """Why kernel ``k``'s refusals of flow ``fv`` cost nothing (``COSTLESS_WORDS``), for ``no_gain`` with the
        end reasons of the phys skbs of ``k``'s counterfactual (``FlowVerdict.shadows``)."""
        if why == "not_tcp":
            side = fv.with_fix(k)
            brk = not_tcp_reasons(fv, k)
            return not_tcp_text(
                self._reasons(brk, side.name) if side and brk and self.reasons_observed else None
            )
        if why != "no_gain":
            return COSTLESS_WORDS[why][1]
        shadow = fv.shadows[k.name]
        brk = break_reasons(shadow)
        return no_gain_text(self._reasons(brk, shadow.name) if brk else None, 1)

    def _lacking_flow_why(self, k: KernelFacts, fv: FlowVerdict, lacks: str) -> str:
        """The flow why of a kernel ``k`` without the fix whose gate refused the flow's frames: where, and for a
        flow carrying a tunnel inside the tunnel that its phys refusal costs nothing (``FlowVerdict.costly``)."""
        gate = "UDP checksum 0, csum_cnt 0, csum_valid 0"
        why = fv.costless_why(k)
        if why in ("one_frame", "not_tcp", "no_gain"):
            return (
                f"{lacks}, but this flow is not affected: udp_gro_receive refuses {refusal_places(k, gate)}, which "
                f"costs nothing: {self._costless_because(k, fv, why)}"
            )
        if not fv.nested:
            return f"{lacks}: udp_gro_receive refuses {refusal_places(k, gate)}; {self._advice(k, fv)}"
        frames = f"{k.frames:,} {plural(k.frames, 'frame')}"
        phys, tunnel = k.gate_zero["phys"], k.gate_zero["tunnel"]
        costless = f"{phys:,} of its {frames} at {STAGE_NAMES['phys']} ({gate}), which costs nothing: {NESTED_PHYS_WORDS}"
        if not tunnel:
            return f"{lacks}, but this flow is not affected: udp_gro_receive refuses {costless}"
        text = f"{lacks}: udp_gro_receive refuses {tunnel:,} of its {frames} at {STAGE_NAMES['tunnel']} (a tunnel inside the tunnel: {gate})"
        if phys:
            text += f"; it also refuses {costless}"
        return f"{text}; {self._advice(k, fv)}"

    def _advice(self, k: KernelFacts, fv: FlowVerdict) -> str:
        """``fix_advice`` for flow ``fv`` in kernel ``k``, with what ``k``'s counterfactual saves where it ran."""
        return fix_advice(self.result.config, fv.shadow_saved(k))
