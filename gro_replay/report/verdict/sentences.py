"""The capture-level sentences of a ``Verdict`` (its base class): the verdict text, the comparison of the kernels
without and with the fix, and per kernel why its phys stage does not merge. They read the state ``Verdict``
computed (``flows``, ``kernels``, ``pre``/``post``, ``result``) and compute nothing of their own.
"""

from __future__ import annotations

from collections import Counter

from ...kernel.names import BACKEND_GENEVE_PORT
from ...kernel.reasons import IP_TUNNEL_ENCAP_MARKS
from .compare import CompareSentences
from .facts import COUNTERFACTUAL_SUFFIX, FIX, REASONS_NOT_OBSERVED, KernelFacts
from .fix_words import (
    assumed_lack_lead,
    ended_branch_advice,
    fix_advice_sentences,
    fix_lack_assumed,
    fix_way_sentence,
    lacks_fix_words,
)
from .gate_words import TUNNEL_GATE_WORDS, _gate_words, zero_csum_states_text
from .id_steps import id_step_text
from .inner_stop import not_tcp_text
from .input_words import fragments_sentence, left_out_text, not_replayed_text
from .scope import ScopeSentences
from .tally import Refusals, Unmerged
from .unseen import refusals_unseen, unseen_text
from .words import (
    COSTLESS_WORDS,
    NESTED_PHYS_WORDS,
    WHOLE_FRAMES_HINT,
    _nic_words,
    _state_of,
    _via,
    by_count,
    hidden_text,
    kernel_label,
    loss_text,
    no_gain_text,
    payload_clause,
    phys_gro_off_words,
    plural,
    ports_text,
    reason_list,
    split_text,
    unread_text,
)

#: the options for tunnels on other ports in the no-tunnel verdict, by whether the kernel backend ran: its geneve
#: device is on 6081 only (kernel/names.py BACKEND_GENEVE_PORT), it has no --geneve-port; the replay has
_OTHER_PORTS = {
    False: "(tunnels on other ports: --vxlan-port P / --geneve-port P).",
    True: f"(VXLAN on other ports: --vxlan-port P; Geneve on a port other than {BACKEND_GENEVE_PORT}: the replay's "
    "--geneve-port P).",
}


class CaptureSentences(CompareSentences, ScopeSentences):
    """Sentence builders mixed into ``core.Verdict`` (the comparison's: ``compare.CompareSentences``)."""

    @property
    def compare(self) -> bool:
        return self.pre is not None

    def assumed_lacking(self) -> list[str]:
        """The kernels whose lack of 89e5c58fc1e2 is an assumption (``fix_lack_assumed``: a distribution kernel whose
        vendor may have backported it): what the verdict says of them holds only if the vendor did not. The JSON's
        ``verdict.fix_assumed_lacking``, the SUMMARY's token and the sentences' assumption (``_assumed_lead``)."""
        return [name for name, _ in self._kernels if fix_lack_assumed(self.models.get(name))]

    def _assumed_lead(self) -> str:
        """Compare mode: ``assumed_lack_lead`` of the kernel compared without the fix when ``assumed_lacking`` names
        it ("4.18.0-305.el8, assumed an upstream 4.18 base, …, lacks 89e5c58fc1e2 unless Red Hat backported it; what
        follows assumes Red Hat did not"); else ""."""
        if self.pre is None or self.pre not in self.assumed_lacking():
            return ""
        release = dict(self._kernels)[self.pre]
        return assumed_lack_lead(self.models[self.pre], kernel_label(self.pre, release))

    def _reasons(self, counter: Counter, kernel: str | None) -> str:
        """``reason_list`` of ``counter`` for kernel ``kernel``, or, when the backend does not record end reasons,
        ``REASONS_NOT_OBSERVED`` (never an empty list)."""
        if not self.reasons_observed:
            return REASONS_NOT_OBSERVED
        return reason_list(counter, model=self.models.get(kernel) if kernel else None)

    def _capture_text(self) -> str:
        """The verdict text: ``_capture_body``, then what the capture held that was not replayed (another
        device's tunnel frames: ``left_out_text``), so that no sentence reads as covering traffic it did not see."""
        text = self._capture_body()
        some = self._selection is not None and not all(
            self._selection
        )  # every flow selected: nothing left out
        if some and not text.startswith("No flow selected by --flow"):
            # every sentence below speaks of the flows --flow selects, as the table and the JSON do (breaker32: "no
            # tunnelled frame has a zero checksum" of a capture whose other flows had)
            text = (
                f"Of the flows selected by --flow {self.result.config.flow} (the capture's others are left out of "
                f"these counts): {text}"
            )
        left = left_out_text(self.result.input)
        text = f"{text} {left}" if left else text
        if self.outcome == "nothing_replayed":
            hidden = ""  # its own sentence says them all
        elif self.outcome == "tunnel_not_replayed":
            hidden = hidden_text(self.result.input, received=False)  # its own sentence says those received
        else:
            hidden = hidden_text(self.result.input)
        if hidden:
            text += f" Not in these counts: {hidden}."
        return text

    def _capture_body(self) -> str:
        inp = self.result.input
        cfg = self.result.config
        hidden = hidden_text(inp, received=True if self.outcome == "tunnel_not_replayed" else None)
        if self.outcome == "nothing_replayed":
            hint = (
                f" (captured length < original length; {WHOLE_FRAMES_HINT})"
                if "snaplen_cut" in inp.skipped
                else ""
            )
            # the tunnel frames among those skipped, by their headers (the hint is in their words)
            return f"Nothing to compare: {not_replayed_text(inp)}{f': {hidden}' if hidden else hint}."
        if self.outcome in ("no_tunnel", "tunnel_not_replayed") and self._selection is not None:
            # --flow: the flows selected carry none; the capture's other flows may (explain's capture line says),
            # and what the capture-wide sentences count (frames cut short, fragments) is not theirs (breaker33)
            n = self.result.kernels[0].stages["phys"].frames_in if self.result.kernels else 0
            return (
                f"No flow selected by --flow {cfg.flow} carries VXLAN or Geneve traffic: "
                f"{'its one frame is not' if n == 1 else f'none of their {n:,} frames is'} to a tunnel port, so the "
                "fix has nothing to change for them (the capture's other flows are not selected"
                + (f"; {_OTHER_PORTS[self.kernel_backend][1:]}" if self._udp_flows(selected=True) else ").")
            )
        if self.outcome == "tunnel_not_replayed":
            n = inp.frames_replayed
            return (
                f"No tunnel frame was replayed: {hidden}, so what the fix changes for them is not known here; "
                f"{'the one frame replayed is' if n == 1 else f'the {n:,} frames replayed are'} not VXLAN or Geneve traffic."
            )
        if self.outcome == "no_tunnel" and getattr(inp, "fragments_to_tunnel", 0) > 0:
            return fragments_sentence(inp.fragments_to_tunnel)
        if self.outcome == "no_tunnel":
            vx = ports_text(getattr(cfg, "vxlan_ports", ()))
            gn = ports_text(getattr(cfg, "geneve_ports", ()))
            # frames skipped before their UDP port was read may be tunnel traffic: the sentence is of the others
            unread = unread_text(inp)
            where = f"for them; {unread}" if unread else "here"
            # the hint to other ports where UDP traffic could be a tunnel on another port (a capture of GRE or plain
            # TCP alone has none: truth31)
            udp = self._udp_flows(selected=False)
            return (
                f"No flow carries VXLAN or Geneve traffic: {'the one frame replayed is not' if inp.frames_replayed == 1 else f'none of the {inp.frames_replayed:,} frames replayed is'} VXLAN "
                f"({vx}) or Geneve ({gn}), so the fix has nothing to change {where}"
                + (f" {_OTHER_PORTS[self.kernel_backend]}" if udp or unread else ".")
            )
        if self.outcome == "lost":
            return (
                f"Every VXLAN/Geneve frame is lost before decapsulation, in every kernel run "
                f"({', '.join(k.name for k in self.kernels)}): "
                + "; ".join(
                    loss_text(o, n, self._lost_skbs(o, n))
                    for o, n in by_count(max(self.kernels, key=lambda k: k.lost_frames).lost)
                )
                + ". No flow is affected by the zero-checksum bug: what the host receives does not depend on it."
                + self._lost_refusals_text()
            )
        runs = cfg.gro_runs()
        # a tunnel inside the tunnel meets the gate at the tunnel device, where the fix changes what it refuses
        # (breaker42: "never reached" with phys GRO off)
        nested_gate = any(self._tally.totals[k.name].gate_reached["tunnel"] for k in self.kernels)
        if not runs["phys"] and not self._tally.affected and not nested_gate:
            tunnel = (
                "the tunnel device's gro_cells do all the merging"
                if runs["tunnel"]
                else "with GRO off on the tunnel device too, nothing is merged anywhere"
            )
            text = (
                f"The fix changes nothing with {phys_gro_off_words(cfg)}: dev_gro_receive passes every frame up "
                "unmerged (netif_elide_gro) in every kernel, so udp_gro_receive's checksum gate (what "
                f"{FIX} changed) is never reached; {tunnel}."
            )
        elif self.compare:
            text = self._compare_mode_text()
        else:
            text = " ".join(self._kernel_sentence(k) for k in self.kernels) + self._fix_costs_text()
        return text + self._closing_text()

    def _compare_mode_text(self) -> str:
        """The capture sentence of compare mode: the compared pair (``_compare_text``), where each kernel without the
        fix gets it, and the kernels run beside the pair (``_beside_text``)."""
        text = self._compare_text()
        lead = self._assumed_lead()
        if lead:
            text = f"{lead}. {text}"
        if len(self.kernels) > 2:
            # which pair the sentence compares (as the table's Δ column names its pair): the newest kernel
            # without the fix and the oldest with it
            pre, post = (next(k for k in self.kernels if k.name == n) for n in (self.pre, self.post))
            text = (
                f"Compared for the fix: {kernel_label(pre.name, pre.release)}, "
                f"{'assumed without it' if lead else 'without it'}, and "
                f"{kernel_label(post.name, post.release)}, with it. {text}"
            )
        # the kernels run beside the compared pair: what each merges, as its own verdict says it (truth30: a
        # third kernel's phys device went unsaid); then, last, where each kernel without the fix gets it
        for k in self.kernels:
            if k.name not in (self.pre, self.post):
                text += self._beside_text(k)
        ways = [  # where each compared kernel without the fix gets it, as one kernel's verdict says it
            fix_way_sentence(self.models.get(k.name), kernel_label(k.name, k.release))
            for k in self.kernels
            if k.carries_fix is False and not (lead and k.name == self.pre)  # the lead said it of pre
        ]
        text += "".join(f" {w}" for w in ways if w)
        return text

    def _closing_text(self) -> str:
        """What the capture text ends with, in any mode: the flows without payload (once; in compare mode as the
        kernel with the fix has them), the losses, the split notes."""
        named = [
            k for k in self.kernels if (k.name == self.post if self.compare else k.carries_fix is not None)
        ]
        text = self._empty_note(named)
        loss = (self._loss_sentence() + self._vlan_after_tunnel()).strip()
        text += f" {loss}" if loss else ""
        kept = max(self.kernels, key=lambda k: sum(k.splits.values()), default=None)
        if kept is not None and kept.splits:
            who = "" if len(self.kernels) == 1 else f"{kept.name}: "
            text += f" {who}{split_text(kept.splits)}."
        if self.split_count:
            text += (
                f" {self.split_count:,} {plural(self.split_count, 'flow')} "
                f"{'carries' if self.split_count == 1 else 'carry'} an inner flow that also travels under "
                "another outer key (see explain: split): the phys device's GRO never merges frames across outer "
                "keys."
            )
        return text

    def _unmerged_note(self, k: KernelFacts, other: KernelFacts | None = None) -> str:
        """ " <kernel> does not merge F tunnelled TCP flows at the phys device (E of their S skbs carry no
        payload); why their skbs ended: reasons." (" Neither <other> nor <kernel> merges …" where ``other``, the kernel without the fix
        whose gate refused nothing, leaves them alike: ``Unmerged.alike``, newcomer38); for the flows the comparison
        said the post-fix kernel merges no further, " <kernel> merges none of that flow's frames …, for the reasons
        above."; or "" (the flows without payload: ``_empty_note``). Reasons: every unmerged skb's."""
        u = self._tally.unmerged[k.name]
        if not u.flows:
            return ""
        # named with their reasons before (``_costless_parts``): referred to, not listed twice (newcomer33); only
        # when the two sets are one (``Unmerged.no_gain_said``: some merged no further are merged in part, breaker41)
        pre = self.pre if self.compare and k.name == self.post else None
        r = self._tally.refusals[pre] if pre is not None else None
        said = r.costless_by.get("post_no_gain", (0, 0))[0] if r else None
        referred = r is not None and said == u.flows == u.no_gain_said and bool(r.post_no_gain_reasons)
        self._unmerged_said.add(k.name)  # the flows without payload are "other" than these (``_empty_note``)
        whose = "its" if u.flows == 1 else "their"
        steps = f"; {id_step_text(u.id_steps, model=self.models.get(k.name))}" if u.id_steps else ""
        if referred:  # newcomer35 could not parse "does not merge 1 … flow …: that flow, by the reasons …"
            flows = "that flow's" if u.flows == 1 else f"those {u.flows:,} flows'"
            return (
                f" {kernel_label(k.name, k.release)} merges none of {flows} frames at the phys device"
                f"{payload_clause(u.skbs, u.skbs_empty, whose)}, for the reasons above{steps}."
            )
        alike = other is not None and self._tally.unmerged[other.name].alike(u)
        who = (
            f" Neither {kernel_label(other.name, other.release)} nor {kernel_label(k.name, k.release)} merges"
            if alike and other is not None
            else f" {kernel_label(k.name, k.release)} does not merge"
        )
        # the reasons are every unmerged skb's end (a poll's flush of a lone segment among them), not causes of
        # not merging: said as such (newcomer40)
        return (
            f"{who} {u.flows:,} tunnelled TCP {plural(u.flows, 'flow')} at the phys device"
            f"{payload_clause(u.skbs, u.skbs_empty, whose)}; why {whose} skbs ended: "
            f"{self._reasons(u.reasons, k.name)}{steps}."
        )

    def _empty_note(self, kernels: list[KernelFacts]) -> str:
        """The tunnelled TCP flows whose every phys skb carried no TCP payload (``Unmerged.empty``), in ``kernels``
        (compare mode: the kernel with the fix): " N [other] tunnelled TCP flows carry no payload (ACKs, and
        SYN, FIN or RST without data), whose segments go up one by one (reasons): tcp_gro_receive merges no
        segment without payload, in any kernel." — "other" than those the kernel's gate refused
        (``_costless_text``) or the unmerged flows with payload of a kernel said before (``_unmerged_said``); once
        when every kernel of the run counts the same, else per kernel named; "" when none."""
        counts = [(k, self._tally.unmerged[k.name]) for k in kernels if self._tally.unmerged[k.name].empty]
        if not counts:
            return ""
        # a kernel is named unless every kernel of the run counts the same (compare mode: the post-fix kernel's
        # count, which the pre-fix one may not share: its gate refuses zero-checksum frames before tcp_gro_receive)
        every = {
            (u.empty, tuple(sorted(u.empty_reasons.items())))
            for u in (self._tally.unmerged[k.name] for k in self.kernels if k.carries_fix is not None)
        }
        named = len(every) > 1
        parts = []
        for k, u in counts:
            who = f"in {kernel_label(k.name, k.release)}, " if named else ""
            # "other" than flows said before (newcomer34, breaker48), unless the count names them itself ("the 2
            # above and 2 others": breaker47)
            above = self._said_above(k, u)
            said = self._unmerged_said or self._listed_before(k) is not None
            other = " other" if said and not above else ""
            parts.append(
                f"{who}{u.empty:,}{other} tunnelled TCP {plural(u.empty, 'flow')} "
                f"{'carries' if u.empty == 1 else 'carry'} no payload ({above}ACKs, and "
                f"SYN, FIN or RST without data), whose segments go up one by one "
                f"({self._reasons(u.empty_reasons, k.name)})"
            )
            if not named:  # every kernel's is this one
                break
        joined = "; ".join(parts)
        return f" {joined[0].upper()}{joined[1:]}: tcp_gro_receive merges no segment without payload, in any kernel."

    def _listed_before(self, k: KernelFacts) -> Refusals | None:
        """The refusals whose no-cost list of flows without payload the text said before kernel ``k``'s flows
        without payload (``_costless_parts``): ``k``'s own gate's (one kernel), or in compare mode, for the kernel
        with the fix, the kernel's without it (``_pre_costless_listed``); None when no such list was said."""
        r = self._pre_costless_listed() if k.name == self.post else self._tally.refusals[k.name]
        return r if r is not None and "no_payload" in r.costless_by else None

    def _said_above(self, k: KernelFacts, u: Unmerged) -> str:
        """Compare mode, for the kernel with the fix (``k``, its flows without payload ``u``): "the 36 above and 12
        others; " when the comparison's text listed some of them before, as flows without payload the kernel without
        the fix refused at no cost (``Unmerged.empty_refused_before``, counted for that kernel only;
        ``_listed_before``), so that the two counts do not read as adding up; else ""."""
        listed = self._listed_before(k)
        said = u.empty_refused_before
        if listed is None or not said:
            return ""
        rest = u.empty - said
        others = f" and {rest:,} {plural(rest, 'other')}" if rest else ""
        # the listing above may hold flows this count leaves out (a tunnel inside the tunnel: breaker48)
        shown = listed.costless_by["no_payload"][0]
        which = f"the {said:,}" if shown <= said else f"{said:,} of the {shown:,}"
        return f"{which} above{others}; "

    def _refusal_text(self, r: Refusals) -> str:
        """A kernel's affected flows by the stage whose gate refused them (``Refusals``, from
        ``KernelFacts.refused_at``), in sentences: "F of T tunnelled flows lose phys-device aggregation:
        udp_gro_receive refuses N frames at the phys device. Their outer UDP checksum is 0 … (why).", then the flows
        refused only at the tunnel device's gro_cells, likewise."""
        parts = []
        if r.flows["phys"]:
            n, frames = r.flows["phys"], r.frames["phys"]
            assert r.first_phys is not None  # set by the first phys-refused flow
            # refused at the phys device: merged (if at all) only later, at the tunnel device's gro_cells
            why = _gate_words(
                _state_of(self.result.config, r.first_phys[1], self.rx_csum), self.result.config
            )
            parts.append(
                f"{self._of_tunnelled(n)} {'loses' if n == 1 else 'lose'} "
                "phys-device aggregation: udp_gro_receive refuses "
                f"{frames:,} {plural(frames, 'frame')} at the phys device. {why[0].upper()}{why[1:]}."
            )
            if r.again:
                whose = "them" if r.again == n else f"the frames of {r.again:,} of these flows"
                parts.append(
                    f"At the tunnel device's gro_cells udp_gro_receive refuses {whose} again (a tunnel inside the "
                    "tunnel)."
                )
        if r.flows["tunnel"]:
            n, frames = r.flows["tunnel"], r.frames["tunnel"]
            count = f"{n:,} other tunnelled {plural(n, 'flow')}" if parts else self._of_tunnelled(n)
            if not self.result.config.gro_runs()["phys"]:  # breaker41: said as if it ran there
                phys = (
                    "At the phys device GRO is off (netif_elide_gro), so udp_gro_receive does not run there"
                )
            elif not r.phys_too:
                phys = "At the phys device udp_gro_receive does not refuse them for a zero checksum"
            else:
                # by frames: a flow's frames can be refused at the tunnel device and not all at the phys device
                # (those GRO was already flushing there pass its gate unvalidated: KernelFacts.gate_unvalidated)
                pf = r.phys_too_frames
                whose = "their outer header" if pf >= frames else f"the outer header of {pf:,} of them"
                phys = f"At the phys device it refuses {whose} too, which costs nothing: {NESTED_PHYS_WORDS}"
            parts.append(
                f"{count} {'loses' if n == 1 else 'lose'} aggregation at the tunnel device's gro_cells: "
                f"udp_gro_receive refuses {frames:,} "
                f"{plural(frames, 'frame')} there ({TUNNEL_GATE_WORDS}). {phys}."
            )
        return " ".join(parts)

    def _costless_text(
        self, r: Refusals, kernel: str, also: bool = False, subject: str = "udp_gro_receive"
    ) -> str:
        """The refusals of a kernel that cost no flow aggregation (``Refusals.costless_by``, by
        ``FlowVerdict.costless_why``): "udp_gro_receive [also] refuses N frames for a zero UDP checksum at no cost to
        aggregation: F1 flows carrying a tunnel inside the tunnel, n1 frames (why); F2 flows ..."
        (``subject``: who refuses, "It" after a sentence naming udp_gro_receive)."""
        n = r.costless_frames
        return (
            f"{subject} {'also ' if also else ''}refuses {n:,} {plural(n, 'frame')} for a zero UDP checksum "
            f"at no cost to aggregation: {self._costless_parts(r, kernel)}"
        )

    def _costless_parts(self, r: Refusals, kernel: str) -> str:
        """The flows whose refusals in ``kernel`` cost nothing, by why (``Refusals.costless_by``): "F1 flows
        carrying a tunnel inside the tunnel, n1 frames (why); F2 flows ..." ("1 flow …" for one)."""
        parts = []
        for why, (flows, frames) in sorted(r.costless_by.items()):
            what, because = COSTLESS_WORDS[why]
            if why == "no_gain" and r.no_gain_reasons:
                because = no_gain_text(
                    self._reasons(r.no_gain_reasons, kernel + COUNTERFACTUAL_SUFFIX), flows
                )
            elif why == "post_no_gain" and r.post_no_gain_reasons:
                because = no_gain_text(self._reasons(r.post_no_gain_reasons, r.post_kernel), flows, why)
            elif why == "not_tcp" and r.not_tcp_reasons and self.reasons_observed:
                because = not_tcp_text(self._reasons(r.not_tcp_reasons, r.not_tcp_kernel))
                if set(r.not_tcp_reasons) <= set(IP_TUNNEL_ENCAP_MARKS):
                    # IP in IP or GRE inside the tunnel: TCP one header deeper, which the tunnel device reaches
                    # (newcomer30: "not TCP segments" read as if no kernel could merge them)
                    what = "whose inner packets are IP in IP or GRE (a second encapsulation)"
            parts.append(
                f"{flows:,} {plural(flows, 'flow')} {what}, {frames:,} {plural(frames, 'frame')} ({because})"
            )
        return "; ".join(parts)

    def refusals_unseen(self) -> bool:
        """``unseen.refusals_unseen`` of this verdict: outcome ``not_observed``."""
        return refusals_unseen(
            self.reasons_observed, self._tally.tunnel_zero, self.kernels, self.result.config
        )

    def _affected_kernel_text(self, k: KernelFacts, lacks: str, refused: Refusals) -> str:
        """One kernel without the fix whose gate cost flows their aggregation, in short sentences, one claim each:
        that it lacks the fix and is affected (``lacks``: ``lacks_fix_words``), which flows lose what and why
        (``_refusal_text``), what else the gate refuses at no cost, what the fix saves and how to compare
        (``fix_advice_sentences``), and, for a branch that ended without the fix, where to get it
        (``ended_branch_advice``)."""
        model = self.models.get(k.name)
        text = (
            f"{lacks}{'; if it does not, it is' if fix_lack_assumed(model) else ' and is'} affected by the "
            f"zero-checksum bug. {self._refusal_text(refused)}"
        )
        if refused.costless:
            text += f" {self._costless_text(refused, k.name, also=True, subject='It')}."
        if refused.lost_frames:
            n = refused.lost_frames
            text += (
                f" It also refuses {n:,} {plural(n, 'frame')} for a zero checksum of flows lost before decapsulation "
                "(below), whose frames never reach the host whatever GRO does."
            )
        text += f" {fix_advice_sentences(self.result.config, self._tally.shadow_saved.get(k.name))}"
        move = ended_branch_advice(model)
        return f"{text} {move}" if move else text

    def _kernel_sentence(self, k: KernelFacts) -> str:
        t = self._tally
        head = kernel_label(k.name, k.release)
        if k.carries_fix is None:
            return f"{head}: not a modelled kernel profile, so no verdict on the zero-checksum fix."
        model = self.models.get(k.name)
        if not k.carries_fix:
            lacks = lacks_fix_words(model, head)
            refused = t.refusals[k.name]
            if any(refused.flows.values()):
                return self._affected_kernel_text(k, lacks, refused) + self._unmerged_note(k)
            if k.refused:
                # refused, yet no flow affected (Verdict._flow_outcome): the refusals cost nothing (a tunnel inside
                # the tunnel refused at the phys device, FlowVerdict.costly) or the flows are lost before
                # decapsulation
                lost = k.refused - refused.costless_frames
                text = f"{lacks}, but is not affected here: "
                if refused.costless:
                    text += f"{self._costless_text(refused, k.name)}."
                    if lost:
                        text += (
                            f" It also refuses {lost:,} {plural(lost, 'frame')} of flows lost before "
                            "decapsulation (below), whose frames never reach the host whatever GRO does."
                        )
                else:
                    text += (
                        f"udp_gro_receive refuses {k.refused:,} {plural(k.refused, 'frame')} for a zero checksum, "
                        "all of flows lost before decapsulation (below), whose frames never reach the host "
                        "whatever GRO does."
                    )
                return text + self._unmerged_note(k)
            if self.refusals_unseen():
                t = self._tally
                return unseen_text(lacks, k, t.tunnel_zero, t.tunnel, self.result) + self._unmerged_note(k)
            text = (
                f"{lacks}, but is not affected here: with {_nic_words(self.result.config, self.rx_csum)} "
                "and these outer UDP checksums, udp_gro_receive never refuses a tunnelled frame for a zero checksum: "
                f"{zero_csum_states_text(t.zero_states, t.zero_unvalidated, self._zero_reached())}."
            )
            return text + self._unmerged_note(k)
        text = (
            f"{head} carries {FIX}{_via(self.models.get(k.name))}: udp_gro_receive does not refuse tunnel frames "
            "for a zero UDP checksum, so it "
            f"is not affected by the zero-checksum bug; at the phys device it delivers {k.skbs['phys']:,} {plural(k.skbs['phys'], 'skb')} "
            f"for {k.frames:,} {plural(k.frames, 'frame')} of {t.tunnel:,} tunnelled "
            f"{plural(t.tunnel, 'flow')}."
        )
        return text + self._unmerged_note(k)
