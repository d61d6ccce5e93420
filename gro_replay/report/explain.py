"""``gro-replay explain``: per flow, where its frames were aggregated and why every skb ended, then a verdict.

Every skb a GRO stage hands to the stack ends for one reason, recorded by the simulation at the decision point
(``NAPI_GRO_CB(skb)->why``, named ``function:condition`` in ``kernel/reasons.py``) and counted per flow and stage
by ``report.stats.KernelStats``: a frame that was not merged (flushed as GRO_NORMAL: the pre-fix
``udp_gro_receive`` gate, PSH, a bad checksum …) or an aggregate that was completed (sequence gap, 64 KiB limit,
MAX_GRO_SKBS eviction, end of poll, PSH on the merged segment …). This module only reads those counters; it
re-derives nothing. Devices and per-flow aggregate counts come from the ``on_deliver`` hook (``FlowDeliveries``).

Verdict (per flow, then for the capture): computed by ``report.verdict`` — the same computation as the replay's
verdict sentence, the JSON document and the SUMMARY line — over the kernels that ran (default: pre-fix 5.11 and
post-fix 5.12): affected by the zero-checksum bug, lost before decapsulation, or not, and why.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import TYPE_CHECKING

from ..kernel import drop_reasons as D
from ..packet.flowkey import endpoint, proto_title, vlan_text
from ..packet.flowsel import KEYS, SelectorError, select_flows  # noqa: F401 (re-exported)
from ..project import plural
from . import MIXED_WHY
from .explain_skbs import SkbEnds, skb_lines, skb_list
from .stats import SCHEMA_VERSION, STAGES
from .verdict import NO_REASON_RECORDED, verdict_of
from .verdict.words import by_count, describe_for, drop_counts, kernel_label

if TYPE_CHECKING:
    from ..kernel.model import KernelModel

STAGE_TITLES = {"phys": "phys NAPI", "tunnel": "tunnel gro_cells"}


class FlowDeliveries:
    """``on_deliver`` observer: per (kernel, stage, flow) the devices that delivered and the aggregates (≥ 2 segs).
    Reads ``skb.flow`` and ``skb.frames`` only: the batch path may answer it from cached events (pollcache.py)."""

    served_from_events = True

    def __init__(self) -> None:
        self.devices: dict[tuple, Counter] = defaultdict(Counter)
        self.aggregates: Counter = Counter()

    def __call__(self, kernel: str, stage: str, dev: str, skb, now_ns: int) -> None:
        self.deliver_batch(kernel, [(stage, dev, 0, 0, skb.flow, skb.frames, now_ns)])

    def deliver_batch(self, kernel: str, rows: list) -> None:
        """Count the deliveries ``rows`` of ``kernel`` (report/deliveries.py ``Row``)."""
        devices, aggregates = self.devices, self.aggregates
        for stage, dev, _addr, _len, flow, frames, _now in rows:
            key = (kernel, stage, flow)
            devices[key][dev] += 1
            if len(frames) > 1:
                aggregates[key] += 1


# -- flow selection: the shared --flow grammar (packet/flowsel.py), re-exported for explain's callers ------------------
SELECTOR_KEYS = KEYS


# -- the explanation ----------------------------------------------------------------------------------------------------
def _reason_rows(counter: Counter, model: KernelModel | None = None) -> list[dict]:
    """Rows of end reasons, most first, each described as a report on ``model`` (the kernel that ran) says it
    (``describe_for``: its own IPv4 ID rule; breaker47: explain named every era's)."""
    rows = []
    for why, n in by_count(counter):
        function, _, condition = why.partition(":")
        rows.append(
            {
                "reason": why,
                "function": function,
                "condition": condition,
                "description": describe_for(why, model),
                "count": n,
            }
        )
    return rows


def _stage_row(
    ks,
    fs,
    obs: FlowDeliveries,
    stage: str,
    fid: int,
    listing: SkbEnds | None,
    model: KernelModel | None = None,
) -> dict:
    """One stage of one flow: skbs in (phys: one per wire frame; tunnel: the skbs decapsulated and queued to
    gro_cells), frames they carry, skbs delivered, aggregates among them, skbs merged at this stage, reasons;
    with ``listing`` (``--skbs``) each skb delivered (``explain_skbs.skb_list``)."""
    skbs = fs.skbs[stage]
    skbs_in = fs.segs["phys"] if stage == "phys" else fs.stack.get("queued", 0)
    devs = obs.devices.get((ks.name, stage, fid), Counter())
    row = {
        "devices": sorted(devs),
        "skbs_in": skbs_in,
        "frames_in": fs.segs[stage],
        "skbs": skbs,
        "aggregates": obs.aggregates[(ks.name, stage, fid)],
        "merged_here": max(skbs_in - skbs, 0),
        "segments_carried_for_other_flows": fs.carried[stage],
        "segments_carried_by_other_flows": fs.carried_by[stage],
        "reasons": _reason_rows(fs.reasons[stage], model),
        "splits": _reason_rows(getattr(fs, "splits", {}).get(stage, Counter()), model),
    }
    if listing is not None:
        row["skb_list"] = skb_list(listing, ks.name, stage, fid, model)
    return row


def _crossed(st: dict, also: str = "") -> list[str]:
    """The clauses of a stage row whose merges crossed flows: "they[ also] carry N frames of other flows" (its
    skbs merged other flows' frames; "it carries 1 frame of another flow" for one skb and one frame) and "K of its
    frames went up in other flows' skbs" ("its frame went up in another flow's skb" when it had one): [] when
    none did (breaker50: the plural for one of each)."""
    out = []
    theirs, mine, own = (
        st["segments_carried_for_other_flows"],
        st["segments_carried_by_other_flows"],
        st["skbs"],
    )
    if theirs:
        carry = f"it{also} carries" if own == 1 else f"they{also} carry"
        whose = "1 frame of another flow" if theirs == 1 else f"{theirs:,} frames of other flows"
        out.append(f"{carry} {whose}")
    if mine:
        if mine == st["frames_in"]:
            which = "its frame" if mine == 1 else f"its {mine:,} frames"
        else:
            which = f"{mine:,} of its frames"
        out.append(f"{which} went up in " + ("another flow's skb" if mine == 1 else "other flows' skbs"))
    return out


def _mixed_words(st: dict) -> str:
    """The words for a stage row whose skbs merged frames of other flows (the tunnel device without tunnel metadata
    merges one inner flow under two outer keys, gro-spec §6.6; a key retired and back while GRO held its frames is
    two flows with one header): "; they also carry N frames of other flows", "; N of its frames went up in other
    flows' skbs" (``_crossed``), with why; "" when it has none."""
    words = "".join(f"; {c}" for c in _crossed(st, " also"))
    return words + f" ({MIXED_WHY})" if words else ""


def affected_word(affected: bool, outcome: str | None) -> str:
    """The word after "affected:" in explain's text, as its EXPLAIN line's ``affected=`` says it: "yes", "no", or
    "no (lost)" for a flow or capture whose tunnelled frames are all lost (``outcome`` ``lost``)."""
    if affected:
        return "yes"
    return "no (lost)" if outcome == "lost" else "no"


def explain(
    result, obs: FlowDeliveries, shown: list[str], flow_ids: list[int], skbs: SkbEnds | None = None
) -> dict:
    """The explanation of ``result`` (a ``sim.Result`` that ran at least the pre-fix and post-fix kernels).

    Args: obs: the observer that watched the run; shown: names of the kernels whose stages are detailed;
    flow_ids: the flows to explain (the capture verdict still covers every flow); skbs: ``--skbs``' observer
    (it watched the run around ``obs``), or None. Returns a JSON-ready dict (``flows``: one entry per selected
    flow; ``verdict``: the capture's; ``summary``: the EXPLAIN line; ``engine``: which path the run took and why,
    as the replay document's, when the result says (the kernel backend's does not); with ``skbs`` also
    ``skbs_max``).
    """
    by_name = {k.name: k for k in result.kernels}
    cfg = result.config
    v = verdict_of(result)
    verdicts = {f.fid: f.as_dict() for f in v.flows}
    flows = []
    for fid in flow_ids:
        key = result.flows[fid]
        kernels = {}
        for name in shown:
            ks = by_name[name]
            fs = ks.flows.get(fid)
            if fs is None:
                continue
            stages = {s: _stage_row(ks, fs, obs, s, fid, skbs, v.models.get(name)) for s in STAGES}
            kernels[name] = {
                "release": ks.release,
                "aggregated_at": _aggregated_at(stages),
                "phys": stages["phys"],
                "stack": dict(sorted(fs.stack.items())),
                "stack_frames": dict(sorted(fs.stack_frames.items())),
                "tunnel": stages["tunnel"],
            }
        flows.append(
            {
                "id": fid,
                "flow": key.label(),
                "key": key.as_dict(),
                "class": result.flow_classes[fid],
                "frames": max((k["phys"]["frames_in"] for k in kernels.values()), default=0),
                "kernels": kernels,
                "verdict": verdicts[fid],
            }
        )
    vd = v.as_dict()
    aff = vd["affected_flows"]
    saved = vd["stack_traversals_saved"]
    frames = vd["frames_refused"]
    text = f"affected: {affected_word(bool(aff), v.outcome)}: {v.text}"
    doc = {
        "schema_version": SCHEMA_VERSION,
        "kind": "explain",
        "input": result.input.as_dict(),
        "config": cfg.as_dict(),
        "kernels_shown": shown,
        "flows_total": len(result.flows),
        "flows": flows,
        "verdict": {
            **vd,
            "flows_affected": aff,
            "text": text,
            "sentence": v.text,
        },
        "summary": (
            f"EXPLAIN affected={'yes' if aff else 'no'} flows={len(result.flows)} affected_flows={aff} "
            f"frames_refused={frames} stack_traversals_saved={saved} tunnel_skbs_saved={vd['tunnel_skbs_saved']} "
            f"outcome={v.outcome}"
            + "".join(f" {t}" for t in (*v.worse_tokens(), *v.fix_alone_tokens(), *v.assumed_tokens()))
        ),
    }
    if getattr(result, "engine", None):
        doc["engine"] = dict(result.engine)
    if skbs is not None:
        doc["skbs_max"] = skbs.skbs_max
    return doc


def _outer_text(key: dict) -> str:
    o = key["outer"]
    csum = "checksum 0" if o["udp_csum_zero"] else "checksum set"
    return f"{endpoint(o['src'], o['sport'])} → {endpoint(o['dst'], o['dport'])} UDP ({csum})"


def _inner_text(key: dict) -> str:
    i = key["inner"]
    proto = proto_title(i["proto"])
    if i["sport"] or i["dport"]:
        text = f"{endpoint(i['src'], i['sport'])} → {endpoint(i['dst'], i['dport'])} {proto}"
    else:
        text = f"{i['src']} → {i['dst']} {proto}"
    tags = [
        (t["tpid"], (t["pcp"] << 13) | (0x1000 if t["dei"] else 0) | t["vid"]) for t in i.get("vlan") or ()
    ]
    return f"{vlan_text(tuple(tags))}: {text}" if tags else text


def _why_lines(st: dict) -> list[str]:
    """One stage's end reasons and splits (``flows[].kernels[].STAGE`` of the explain document) as text lines."""

    def row(r: dict) -> str:
        return f"      {r['count']:>6,} × {r['function']}: {r['condition']}  ({r['description']})"

    if not st["reasons"]:
        none = "no skb left this stage" if not st["skbs"] else NO_REASON_RECORDED
        lines = [f"      why each skb out ended: {none}"]
    else:
        lines = ["      why each skb out ended (a frame not merged, or an aggregate completed):"]
    lines += [row(r) for r in st["reasons"]]
    if st.get("splits"):
        lines.append("      skbs started beside a held skb of this flow instead of merging, kept apart by:")
        lines += [row(r) for r in st["splits"]]
    return lines


def _stack_line(k: dict, tunnel: str | None) -> str:
    """explain's line of what the normal path did with a flow's phys skbs (one kernel's flow dict ``k``, its
    ``stack``/``stack_frames``): queued to gro_cells, not VXLAN/Geneve traffic (not followed further), dropped."""
    skbs, frames = Counter(k["stack"]), Counter(k.get("stack_frames", {}))
    queued, through, carried = skbs["queued"], sum(skbs.values()), sum(frames.values())
    # traffic that is no UDP tunnel's goes to its own protocol (plain TCP, GRE, IP in IP: ip_local_deliver:not_udp;
    # not IP: netif_receive_skb:not_ip) or to a UDP port without a tunnel socket (udp_rcv:no_socket), which the
    # replay does not follow: said apart, not as dropped
    elsewhere = Counter({o: n for o, n in skbs.items() if o in D.NOT_TUNNEL_TRAFFIC})
    drops, other = drop_counts(skbs - elsewhere, frames), drop_counts(elsewhere, frames)
    return (
        f"    stack ({f'IP → UDP → {tunnel} decap' if tunnel else 'IP'}): {through:,} {plural(through, 'skb')} "
        f"({carried:,} "
        f"{plural(carried, 'frame')}); {queued:,} {plural(queued, 'skb')} ({frames['queued']:,} "
        f"{plural(frames['queued'], 'frame')}) queued to gro_cells"
        + (f"; not VXLAN/Geneve traffic, not followed further: {other}" if other else "")
        + (f"; dropped: {drops}" if drops else "")
    )


def _merged_words(stage: str, st: dict) -> str:
    """A stage where GRO merged a flow's frames (``aggregated_at``), with what went in and came out ("phys NAPI
    (56 skbs → 54)"): a flow of which 2 frames of 56 merged is aggregated there as much as one of 56 frames in 4
    skbs, and the heading says which (newcomer34 read "aggregated at phys NAPI" over 2 merges as the flow being
    aggregated). Where the merges crossed flows (``_crossed``), it says so: "(5 skbs → 0: its 5 frames went up in
    other flows' skbs)", "(5 skbs → 5: they carry 5 frames of other flows)" (breaker49: "5 skbs → 0" alone read as
    the flow merged into nothing)."""
    words = f"{STAGE_TITLES[stage]} ({st['skbs_in']:,} {plural(st['skbs_in'], 'skb')} → {st['skbs']:,}"
    crossed = _crossed(st)  # in the stage row's order: "they carry" first, next to the skbs out it speaks of
    return words + (f": {'; '.join(crossed)}" if crossed else "") + ")"


def _aggregated_at(stages: dict) -> list[str]:
    """The stages where GRO merged some of a flow's frames: into skbs of its own (fewer skbs out than in) or of
    other flows, or other flows' frames into its skbs (``segments_carried_for_other_flows``: a tunnel device
    without tunnel metadata merges one inner flow under two outer keys, gro-spec §6.6)."""
    return [
        s for s in STAGES if stages[s]["merged_here"] > 0 or stages[s]["segments_carried_for_other_flows"]
    ]


def render_text(doc: dict, limit: int | None = None) -> list[str]:
    """The explanation as text lines; at most ``limit`` flows (None: all), affected flows first.

    First the capture's ``input:`` line, the resolved kernels' lines (a distribution kernel's base, backports and
    notes: report/table.py ``kernel_lines``) and the input's notes (records cut short or longer than the declared snaplen,
    --resegment segments larger than --mtu, tunnel ports …), rendered from the document's ``input`` by the
    replay's own functions (report/table.py ``input_line``, ``note_lines``): the same lines ``gro-replay CAPTURE``
    prints; then the flows, the engine line, the capture verdict and the EXPLAIN line."""
    from .table import input_line, kernel_lines, note_lines

    kernels = doc.get("config", {}).get("kernels", [])
    lines = [input_line(doc["input"]), *kernel_lines(kernels), *note_lines(doc["input"]), ""]
    flows = sorted(doc["flows"], key=lambda f: (not f["verdict"]["affected"], -f["frames"], f["id"]))
    shown = flows if limit is None else flows[:limit]
    for f in shown:
        key = f["key"]
        if key["tunnel"]:
            head = (
                f"flow {f['id']}: outer {_outer_text(key)}, {key['tunnel']} VNI {key['vni']}; "
                f"inner {_inner_text(key) if key['inner']['src'] else '(not IP)'}; {f['frames']:,} {plural(f['frames'], 'frame')}"
            )
        else:
            head = f"flow {f['id']}: {f['flow']}; {f['frames']:,} {plural(f['frames'], 'frame')}"
        lines.append(head)
        for name, k in f["kernels"].items():
            where = " and ".join(_merged_words(s, k[s]) for s in k["aggregated_at"])
            lines.append(
                f"  {kernel_label(name, k['release'])}: "
                + (f"aggregated at {where}" if where else "not aggregated")
            )
            for s in STAGES:
                st = k[s]
                if not st["skbs"] and not st["segments_carried_by_other_flows"] and s == "tunnel":
                    continue
                # no device: the flow's frames at this stage all went up in other flows' skbs
                dev = f" ({', '.join(st['devices'])})" if st["devices"] else ""
                lines.append(
                    f"    {STAGE_TITLES[s]}{dev}: {st['skbs_in']:,} {plural(st['skbs_in'], 'skb')} in ({st['frames_in']:,} "
                    f"{plural(st['frames_in'], 'frame')}) → {st['skbs']:,} {plural(st['skbs'], 'skb')} out "
                    f"({st['aggregates']:,} with ≥2 segs); {st['merged_here']:,} merged here{_mixed_words(st)}"
                )
                lines.extend(_why_lines(st))
                if "skb_list" in st:
                    lines.extend(skb_lines(st["skb_list"], s, doc["skbs_max"]))
                if s == "phys" and k["stack"]:
                    lines.append(_stack_line(k, key["tunnel"]))
        fv = f["verdict"]
        lines.append(f"  verdict: affected: {affected_word(fv['affected'], fv.get('outcome'))}: {fv['why']}")
        lines.append("")
    if limit is not None and len(flows) > limit:
        lines.append(
            f"… {len(flows) - limit:,} more {plural(len(flows) - limit, 'flow')}: select with --flow, "
            "--limit 0 for all, or --format json"
        )
        lines.append("")
    if "engine" in doc:  # the path the run took (sim/engine_path.py), as the replay's report says it
        from .table import engine_lines

        lines.extend(engine_lines(doc["engine"]))
    total = doc["flows_total"]
    # the capture's verdict judges every flow, also where --flow chose fewer to show (the replay's --flow judges
    # the selected flows only): said, so that the two do not read as a contradiction
    label = (
        "capture" if len(doc["flows"]) >= total else f"capture (all {total:,} flows, not only those chosen)"
    )
    lines.append(f"{label}: {doc['verdict']['text']}")
    lines.append(doc["summary"])
    return lines
