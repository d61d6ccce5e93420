"""The ``Verdict`` of one replay result: built from the facts (facts.py) flow by flow (tally.py), worded with
words.py and sentences.py; rendered by the table, Markdown, JSON, ``explain`` and SUMMARY alike.
"""

from __future__ import annotations

from collections.abc import Callable

from ...kernel.nic import unread_switches
from ...packet.decode import FlowKey
from ...sim.skipped import hidden_tunnel_frames
from ..stats import FlowStats
from .facts import (
    COUNTERFACTUAL_SUFFIX,
    FlowVerdict,
    KernelFacts,
    ReplayResult,
    _model_of,
    carries_tunnel,
    facts_of,
    fix_counterfactuals,
    fix_sides,
    other_changes,
)
from .flow_sentences import FlowSentences
from .tally import _Tally
from .words import (
    _state_of,
    split_text,
)


class Verdict(FlowSentences):
    """The verdict of one ``sim.Result`` (see the module doc). Build once, render everywhere.

    Attributes: ``flows`` (one ``FlowVerdict`` per flow live at the end of the input: every flow unless the replay
    retired some, sim/flows.py), ``kernels`` (``KernelFacts`` summed over the tunnelled flows, per kernel, in run
    order), ``pre``/``post`` (names of the kernels compared for the fix, or None), ``outcome`` (capture:
    ``nothing_replayed``, ``no_tunnel``, ``tunnel_not_replayed``, ``lost``, ``affected``, ``not_affected``),
    ``text`` (the sentence).

    Every capture-level fact is summed flow by flow (``_Tally``) as each flow is judged: the flows retired during
    the replay (``start`` / ``retire``, their counters final) and then the live ones (``complete``), so the verdict
    is the same whether flows were retired or not, and its memory grows with the live flows, not with every flow.
    """

    def __init__(self, result: ReplayResult, keep: int | None = None) -> None:
        if keep is None:
            keep = getattr(result.config, "flows_max", None)
        self._setup(result.config, [(ks.name, ks.release) for ks in result.kernels], keep)
        #: the running kernel replayed the frames (``gro-replay kernel``), not the simulator
        self.kernel_backend = getattr(result, "backend", "simulator") == "kernel"
        #: the backend records why each skb ended (the simulator does; the kernel backend cannot)
        self.reasons_observed = not self.kernel_backend
        self.complete(result)

    @classmethod
    def start(
        cls, config, kernels: list[tuple[str, str]], keep: int | None, selected: list[bool] | None = None
    ) -> Verdict:
        """A verdict that flows retired during a replay are added to (``retire``) before ``complete``:
        ``kernels``: (name, release) in run order; ``keep``: affected flows kept in full (None: all);
        ``selected``: ``--flow``'s per flow id selection (None: every flow), retired flows outside it not judged."""
        v = cls.__new__(cls)
        v._setup(config, kernels, keep)
        v._selection = selected
        return v

    def _setup(self, cfg, kernels: list[tuple[str, str]], keep: int | None) -> None:
        self.config = cfg
        self._unmerged_said = set()
        self.kernel_backend = False
        self.reasons_observed = True
        self._selection: list[bool] | None = None
        self.rx_csum = getattr(cfg, "rx_csum", "unnecessary")
        models = {name: _model_of(cfg, name, release) for name, release in kernels}
        self.models = models
        self._kernels = kernels
        without_m, with_m = fix_sides([models[n] for n, _ in kernels])
        #: the kernels a replay of these runs beside them (``fix_counterfactuals``; their stats follow the kernels')
        unread = unread_switches(getattr(cfg, "nic", None))
        self._counterfactuals = fix_counterfactuals([models[n] for n, _ in kernels], unread)
        without = [(m.name, m) for m in without_m]
        with_fix = [(m.name, m) for m in with_m]
        #: the kernels compared for the fix (both None unless one without and one with the fix ran)
        self.pre = without[-1][0] if without and with_fix else None
        self.post = with_fix[0][0] if without and with_fix else None
        #: without a comparison: the facts reported as "pre-fix" / "post-fix" in the per-flow verdicts
        self._pre_side = self.pre or (without[-1][0] if without else None)
        self._post_side = self.post or (with_fix[0][0] if with_fix else None)
        #: switches other than the fix that differ between the compared kernels
        self.other_changes: list[str] = []
        if without and with_fix:
            self.other_changes = other_changes(without[-1][1], with_fix[0][1], unread)
        #: compare mode with ``other_changes``: the kernel the fix is judged on, ``pre`` with only the fix applied
        #: (``FlowVerdict.fix_alone``), so that what another commit changes is not counted for or against the fix
        self.fix_alone = self._counterfactuals[0].name if self.pre and self._counterfactuals else None
        for cf in self._counterfactuals:
            models[cf.name] = cf
        self._tally = _Tally(
            [n for n, _ in kernels],
            keep,
            lambda key: _state_of(cfg, key, self.rx_csum),
            no_vlan_offload=not getattr(cfg, "vlan_offload", True),
        )
        for name, release in kernels:
            m = models[name]
            self._tally.totals[name] = KernelFacts(
                name, release, m.udp_tunnel_gate_checks_uh_check if m else None
            )

    def judge(self, fid: int, key: FlowKey, cls: str, stats: list[FlowStats | None]) -> FlowVerdict:
        """The ``FlowVerdict`` of one flow (its ``why`` left empty) from its ``FlowStats`` per kernel (run order,
        None where a kernel saw none of it), then those of the counterfactual kernels the replay ran beside them
        (``Result.counterfactuals``, ``facts.fix_counterfactuals``, in that order)."""
        n = len(self._kernels)
        facts = [
            facts_of(name, release, self.models[name], f)
            for (name, release), f in zip(self._kernels, stats[:n], strict=True)
        ]
        by = {k.name: k for k in facts}
        shadows = {
            m.name.removesuffix(COUNTERFACTUAL_SUFFIX): facts_of(m.name, m.release, None, f)
            for m, f in zip(self._counterfactuals, stats[n:], strict=False)
        }
        fv = FlowVerdict(
            fid,
            key,
            cls,
            "",
            facts,
            by.get(self._pre_side) if self._pre_side else None,
            by.get(self._post_side) if self._post_side else None,
            nested=carries_tunnel(key, self.config),
            shadows=shadows,
        )
        fv.outcome = self._flow_outcome(fv)
        return fv

    def started(
        self, fid: int, key: FlowKey, first_ns: int | None, ended_by: Callable[[int, int], bool]
    ) -> None:
        """Flow ``fid`` with ``key`` started, its first frame at ``first_ns`` (ns of capture time; None: not known):
        a replay that retires flows calls this for each new flow, ``ended_by(fid, ns)`` telling whether a flow not
        retired yet had ended by then (sim/flows.py ``FlowTracker.timed_out``). See ``_Tally.started``."""
        self._tally.started(fid, key, first_ns, ended_by)

    def ends(self, fid: int, end_ns: int) -> None:
        """Flow ``fid``, not retired, ends at ``end_ns`` (ns): ``_Tally.ends``."""
        self._tally.ends(fid, end_ns)

    def retire(
        self, fid: int, key: FlowKey, cls: str, stats: list[FlowStats | None], end_ns: int | None
    ) -> None:
        """Add a flow that ended during the replay at ``end_ns`` (ns: its last frame plus its timeout; its counters
        final): judged now, summed, kept only if it is among the affected flows kept in full; a flow outside
        ``--flow``'s selection or without counters (``stats`` all None) is not judged, and leaves its split group."""
        if self._selected(fid) and any(st is not None for st in stats):
            self._tally.add(self.judge(fid, key, cls, stats), live=False, end_ns=end_ns)
        else:
            self._tally.forget(fid)

    def complete(self, result: ReplayResult) -> None:
        """Judge the flows still live at the end of ``result`` and build the capture's verdict. Each flow's
        ``FlowVerdict`` is summed and let go (``flows`` builds them again, with their ``why``, when asked)."""
        self.result = result
        self._flows: list[FlowVerdict] | None = None
        tally = self._tally
        #: ``--flow``: per flow id whether it is selected (report.stats.KernelStats.selected; None: every flow); the
        #: verdict, like the table and the JSON, is about the selected flows only
        self._selection = getattr(result.kernels[0], "selected", None) if result.kernels else None
        for fid, key in enumerate(result.flows):
            if key is None or not self._selected(fid):
                continue  # retired during the replay (already in the tally), or outside --flow's selection
            tally.add(self._judge_live(fid, key), live=True)
        for cf in getattr(result, "counterfactuals", ()):  # ran, and no affected flow: it saves none
            tally.shadow_saved.setdefault(
                cf.name.removesuffix(COUNTERFACTUAL_SUFFIX), {"phys": 0, "tunnel": 0}
            )
        self.splits = tally.split_notes()
        #: flows that carry an inner flow also carried under another outer key (live ones and retired ones)
        self.split_count = tally.split_flows + len(self.splits)
        self.kernels = [tally.totals[name] for name, _ in self._kernels]
        self.outcome = self._capture_outcome()
        self.text = self._capture_text()

    def _selected(self, fid: int) -> bool:
        sel = self._selection
        return sel is None or (fid < len(sel) and bool(sel[fid]))

    def _judge_live(self, fid: int, key: FlowKey) -> FlowVerdict:
        r = self.result
        stats = [ks.flows.get(fid) for ks in [*r.kernels, *getattr(r, "counterfactuals", ())]]
        return self.judge(fid, key, r.flow_classes[fid], stats)

    @property
    def flows(self) -> list[FlowVerdict]:
        """One ``FlowVerdict`` per flow live at the end of the input, in flow id order, with its ``why`` (the
        split notes included): built on first use (explain), so that a replay's memory never holds them all."""
        if self._flows is None:
            out = []
            for fid, key in enumerate(self.result.flows):
                if key is None or not self._selected(fid):
                    continue
                fv = self._judge_live(fid, key)
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
            pre, _ = fv.sides()
            fixed = fv.fixed
            assert fixed is not None  # compared: post ran
            refused = sum(pre.gate_zero.values())
            gain = any(pre.skbs[s] > fixed.skbs[s] for s in ("phys", "tunnel"))
            if refused and gain:
                return "affected"
            return "refused_no_gain" if refused else "not_affected"
        # no kernel with the fix ran: the kernel compare mode would judge (the newest without it) against its
        # counterfactual (FlowVerdict.costly: measured; inferred where none ran, the kernel backend)
        lacking = fv.pre
        if lacking is None or lacking.carries_fix is not False:
            return "not_affected"
        if fv.costly_at(lacking):
            return "affected"
        return "refused_no_gain" if lacking.refused else "not_affected"

    # -- the capture -----------------------------------------------------------------------------------------------
    def _capture_outcome(self) -> str:
        if not self.result.input.frames_replayed:
            return "nothing_replayed"
        t = self._tally
        if not t.tunnel:
            # tunnel frames skipped (cut short, malformed) are tunnel traffic the replay did not see; those the
            # capturing host sent (outgoing) no receive path's GRO sees, whatever the kernel (newcomer39)
            return (
                "tunnel_not_replayed"
                if hidden_tunnel_frames(self.result.input, received=True)
                else "no_tunnel"
            )
        if t.affected:
            return "affected"
        if t.lost_tunnel == t.tunnel:
            return "lost"
        if self.refusals_unseen():
            return "not_observed"
        return "not_affected"

    def affected_flows(self) -> list[FlowVerdict]:
        """The affected flows kept in full, by flow id: every one, or with a ``keep`` the ``keep`` lowest ids
        (``affected_count`` counts them all)."""
        return [f for _, f in sorted(self._tally.affected_kept, key=lambda x: -x[0])]

    def worse_flows(self) -> list[FlowVerdict]:
        """The flows the fix costs aggregation kept in full (``_Tally.fix_costs_kept``: the ``FIX_COSTS_KEPT`` lowest
        ids; ``flows_worse_with_fix`` counts every one), by flow id; [] where that count is 0 or None."""
        kept = sorted((f for _, f in self._tally.fix_costs_kept), key=lambda f: f.fid)
        return kept if self.flows_worse_with_fix() else []

    @property
    def affected_count(self) -> int:
        """Affected flows, every one (also those not kept in full)."""
        return self._tally.affected

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
                    **f._fix_alone_dict(),
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
            "tunnel_flows_without_payload": t.tunnel_empty,
            "lost_flows": t.lost_tunnel,
            # flows the fix costs phys-device aggregation (other flows' frames it lets GRO hold): ``_fix_costs_text``
            "flows_worse_with_fix": self.flows_worse_with_fix(),
            # the first of them by id, each with its phys skbs without and with the fix (measured on ``with_fix``)
            "worse_with_fix": [
                {
                    "id": f.fid,
                    "flow": f.key.label(),
                    "phys_skbs_without_fix": f.pre.skbs["phys"],
                    "phys_skbs_with_fix": f.fixed.skbs["phys"],
                    "with_fix": f.fixed.name,
                }
                for f in self.worse_flows()
                if f.pre is not None and f.fixed is not None
            ],
            # --no-vlan-offload: flows handed up the tunnel device to no VLAN device (``_vlan_after_tunnel``)
            "flows_vlan_dropped_after_tunnel": t.vlan_dropped_after_tunnel,
            "compared": {
                "without_fix": self.pre,
                "with_fix": self.post,
                "other_changes": self.other_changes,
                "fix_alone": self.fix_alone,
            }
            if self.compare
            else None,
            "frames_refused": t.refused,
            "frames_refused_affected": t.aff_gate_zero,
            "stack_traversals_saved": t.aff_saved["phys"],
            "tunnel_skbs_saved": t.aff_saved["tunnel"],
            "kernels": [self._kernel_dict(k) for k in self.kernels],
            "fix_assumed_lacking": self.assumed_lacking(),
        }

    def _kernel_dict(self, k: KernelFacts) -> dict:
        """One kernel's facts (``KernelFacts.as_dict``) and, where the replay ran it again with 89e5c58fc1e2
        applied (``fix_counterfactuals``), the skbs of the affected flows fewer that delivers per stage, the
        figure the sentence gives for that kernel (``fix_applied_saves``)."""
        saved = self._tally.shadow_saved.get(k.name)
        return k.as_dict() | ({"fix_applied_saves": dict(saved)} if saved is not None else {})

    def summary_tokens(self) -> list[str]:
        """Tokens the SUMMARY line carries from the verdict: ``affected_flows=N``, ``gate_refusals=not_observed``
        when the outcome is ``not_observed`` (N counts no flow then: ``refusals_unseen``), ``fix_alone=NAME`` when
        N is measured on a counterfactual (``fix_alone_tokens``), and ``fix_assumed_lacking=K,…`` when a kernel's
        lack of the fix is an assumption (``assumed_lacking``); ``flows_worse_with_fix=N`` after N when the fix
        costs flows aggregation (``flows_worse_with_fix``, compare mode, N > 0)."""
        unseen = ["gate_refusals=not_observed"] if self.outcome == "not_observed" else []
        return [
            f"affected_flows={self._tally.affected}",
            *self.worse_tokens(),
            *unseen,
            *self.fix_alone_tokens(),
            *self.assumed_tokens(),
        ]

    def worse_tokens(self) -> list[str]:
        """``["flows_worse_with_fix=N"]`` when the fix, where measured, costs N > 0 flows aggregation
        (``flows_worse_with_fix``, JSON ``verdict.flows_worse_with_fix``); else [] (SUMMARY and EXPLAIN)."""
        worse = self.flows_worse_with_fix()
        return [f"flows_worse_with_fix={worse}"] if worse else []

    def fix_alone_tokens(self) -> list[str]:
        """``["fix_alone=PRE+89e5c58fc1e2"]`` when the comparison measures the fix on the kernel without it run again
        with only the fix applied (``fix_alone``, JSON ``verdict.compared.fix_alone``), not on the kernel with it:
        the affected flows and skbs saved the line counts are that counterfactual's; else [] (SUMMARY and
        EXPLAIN)."""
        return [f"fix_alone={self.fix_alone}"] if self.fix_alone else []

    def assumed_tokens(self) -> list[str]:
        """``["fix_assumed_lacking=K,…"]`` when ``assumed_lacking`` names a kernel, else [] (SUMMARY and EXPLAIN)."""
        assumed = self.assumed_lacking()
        return ["fix_assumed_lacking=" + ",".join(assumed)] if assumed else []


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
