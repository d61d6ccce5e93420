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
* **Per kernel**: whether it carries the fix, the stage whose gate refused each affected flow first
  (``KernelFacts.refused_at``: the phys device, or only the tunnel device's gro_cells for a tunnel inside the
  tunnel; summed per kernel in ``tally.Refusals``), and, for tunnelled flows that its phys stage does not merge at all,
  the conditions that ended every one of their skbs (``facts.break_reasons``, poll-end flushes included, and how
  many of the skbs carried no TCP payload, ``FlowStats.empty``), what the IPv4
  ID did where an ID condition ended one (``FlowStats.id_steps``), and the compares that kept a frame apart from
  a held skb of its own flow (``FlowStats.splits``); inner flows carried under several outer keys are named.
* **Outcome** of the capture: ``nothing_replayed``, ``no_tunnel`` (no flow carries VXLAN/Geneve on the
  configured ports, and no frame skipped goes to one by its headers), ``tunnel_not_replayed`` (frames were
  replayed, none of them tunnel traffic, and frames to a tunnel port were skipped: cut short or malformed, sim/skipped.py),
  ``lost``, ``affected``, ``not_affected`` or ``not_observed`` (the kernel backend on a kernel without the fix:
  ``CaptureSentences.refusals_unseen``).

Modules: ``facts.py`` (what the verdict reasons from), ``tally.py`` (the flow-by-flow sums), ``words.py`` (drop
reasons, reason lists, phrases), ``unseen.py`` (where the kernel backend cannot see the gate's refusals),
``compare.py`` (the comparison's sentences), ``sentences.py`` (the other capture sentences), ``flow_sentences.py``
(each flow's why), ``core.py`` (``Verdict``, ``verdict_of``); their names are re-exported here.
"""

from .core import Verdict, verdict_of
from .facts import (
    _FILTER_OPTIONS,
    _POLL_FLUSHES,
    FIX,
    GATE_SET,
    GATE_ZERO,
    NO_REASON_RECORDED,
    REASONS_NOT_OBSERVED,
    STAGE_NAMES,
    FlowVerdict,
    KernelFacts,
    _model_of,
    _release_key,
    break_reasons,
    facts_of,
    reasons_apart,
    release_order,
)
from .gate_words import _gate_words
from .id_steps import id_step_text
from .input_words import left_out_text, not_replayed_text
from .splits import _SPLIT_KEYS, _SPLIT_TUNNEL_HEADER, _split_fields, _split_ident, _split_texts
from .tally import _Tally
from .words import (
    LOSSES,
    RULES,
    _nic_words,
    _rule_note,
    _state_of,
    _via,
    loss_text,
    reason_list,
    split_text,
)

__all__ = [
    "FIX",
    "FlowVerdict",
    "GATE_SET",
    "GATE_ZERO",
    "KernelFacts",
    "NO_REASON_RECORDED",
    "REASONS_NOT_OBSERVED",
    "STAGE_NAMES",
    "_FILTER_OPTIONS",
    "_POLL_FLUSHES",
    "_SPLIT_KEYS",
    "_SPLIT_TUNNEL_HEADER",
    "reasons_apart",
    "break_reasons",
    "_model_of",
    "_release_key",
    "release_order",
    "_split_fields",
    "_split_ident",
    "_split_texts",
    "facts_of",
    "LOSSES",
    "RULES",
    "_gate_words",
    "_nic_words",
    "_rule_note",
    "_state_of",
    "_via",
    "id_step_text",
    "loss_text",
    "left_out_text",
    "not_replayed_text",
    "reason_list",
    "split_text",
    "_Tally",
    "Verdict",
    "verdict_of",
]
