"""The JSON document (README.md "JSON document") and the plain-language verdict built from a replay result."""

from __future__ import annotations

from ..project import __version__
from .stats import FLOWS_MAX_DEFAULT, SCHEMA_VERSION, FlowRow, FlowRows
from .verdict import verdict_of


def _stage_row(f, stage: str) -> dict:
    return {
        "skbs": f.skbs[stage],
        "segments": f.segs[stage],
        "segments_carried_for_other_flows": f.carried[stage],
        "segments_carried_by_other_flows": f.carried_by[stage],
        "end_reasons": dict(sorted(f.reasons[stage].items())),
    }


def flow_summary(result, limit: int | None = None) -> FlowRows:
    """The per-flow rows of every kernel, bounded (``report.stats.FlowRows``): the flows retired during the replay
    (``result.flow_rows``) and the flows still live at the end, at most ``limit`` rows in full (default: the
    replay's ``flows_max``; never more than it once flows were retired), the others summed."""
    base = getattr(result, "flow_rows", None)
    if limit is None:
        limit = base.limit if base is not None else getattr(result.config, "flows_max", FLOWS_MAX_DEFAULT)
    rows = base.copy(limit) if base is not None else FlowRows(len(result.kernels), limit)
    live = sorted(set().union(*(ks.flows for ks in result.kernels)))
    for fid in live:
        stats = [ks.flows.get(fid) for ks in result.kernels]
        rows.offer(FlowRow(fid, result.flows[fid], result.flow_classes[fid], stats))
    return rows


def flow_rows(result, ks, summary: FlowRows | None = None) -> list[dict]:
    """Per-flow rows of one kernel (those ``summary`` keeps in full): key, class, frames, and per stage skbs,
    segments and end reasons."""
    summary = summary if summary is not None else flow_summary(result)
    i = result.kernels.index(ks)
    rows = []
    for r in summary.kept():
        f = r.stats[i]
        if f is None:
            continue
        rows.append(
            {
                "id": r.fid,
                "flow": r.key.label(),
                "key": r.key.as_dict(),
                "class": r.cls,
                "phys": _stage_row(f, "phys"),
                "tunnel": _stage_row(f, "tunnel"),
                "stack": dict(sorted(f.stack.items())),
                "stack_frames": dict(sorted(f.stack_frames.items())),
            }
        )
    return rows


def flows_summary_dict(summary: FlowRows, i: int, listed: int, live_max: int = 0) -> dict:
    """JSON ``kernels[].flows_summary``: how many flows kernel ``i`` counted, how many ``flows[]`` lists in full
    (at most ``max_rows``, ``--flows-max``), how many were retired before the end of the input, the largest number
    of flows tracked at once (``live_max``: what the replay's per-flow memory grew with), and the flows not
    listed with their counters summed (so that ``flows[]`` plus ``omitted`` add up to the stage totals)."""
    om = summary.omitted[i]
    n = summary.omitted_flows[i]
    return {
        "max_rows": summary.limit,
        "flows": listed + n,
        "listed": listed,
        "retired": summary.retired,
        "live_max": live_max,
        "omitted": {
            "flows": n,
            "phys": _stage_row(om, "phys"),
            "tunnel": _stage_row(om, "tunnel"),
            "stack": dict(sorted(om.stack.items())),
            "stack_frames": dict(sorted(om.stack_frames.items())),
        },
    }


def affected_flows(result) -> list[dict]:
    """JSON ``comparison.affected_flows``: the flows the verdict (report/verdict/) finds affected."""
    return verdict_of(result).comparison_rows()


def verdict(result) -> str:
    """The verdict sentence (report/verdict/): about the kernels run, both stages and the frames lost."""
    return verdict_of(result).text


def summary_line(result) -> str:
    """The grep-able ``SUMMARY`` line: ``SUMMARY`` then space-separated ``key=value`` pairs (README "SUMMARY line").

    One kernel: ``kernel=NAME`` and unprefixed ``phys_skbs=`` …; several: ``kernels=A,B`` and per kernel
    ``kernel[NAME].phys_skbs=`` …, so a name with dots (``6.18``) never mixes with the field names. Values and
    names hold no space, ``=`` or brackets (profile names are fixed: ``kernel/model.py``).
    """
    inp = result.input
    parts = ["SUMMARY"]
    if len(result.kernels) == 1:
        parts.append(f"kernel={result.kernels[0].name}")
    else:
        parts.append("kernels=" + ",".join(k.name for k in result.kernels))
    # frames read, then what entered the simulation: a resegmented GSO super-frame is one frame read and its
    # segments replayed (input.frames_read, input.frames_replayed)
    parts += [
        f"frames={inp.frames_read}",
        f"skipped={sum(inp.skipped.values())}",
        f"replayed={inp.frames_replayed}",
    ]
    # then, when asked for: frames -f filtered out (input.filtered), and under --flow the selected flows' frames,
    # which the skb counts below cover (input.selected_frames)
    filtered = sum(getattr(inp, "filtered", {}).values())
    if filtered:
        parts.append(f"filtered={filtered}")
    selected = getattr(inp, "selected_frames", None)
    if selected is not None:
        parts.append(f"selected={selected}")
    above = getattr(getattr(inp, "above_mtu", None), "segments", 0)
    if above:  # --resegment MSS made segments larger than --mtu (input.segments_above_mtu; sim/notes.py)
        parts.append(f"segments_above_mtu={above}")
    for k in result.kernels:
        pre = "" if len(result.kernels) == 1 else f"kernel[{k.name}]."
        for stage in ("phys", "tunnel"):
            st = k.stages[stage]
            parts.append(f"{pre}{stage}_skbs={st.skbs}")
            parts.append(f"{pre}{stage}_aggregates={st.aggregates}")
    parts += verdict_of(result).summary_tokens()
    return " ".join(parts)


def document(result, backend: str = "simulator", flows_max: int | None = None) -> dict:
    """The JSON document: schema_version, input, config, one entry per kernel, and (compare mode) the verdict.

    ``flows_max``: per kernel, at most this many flows listed in full in ``flows[]`` (the flows with most segments;
    None: the replay's ``flows_max``, else ``FLOWS_MAX_DEFAULT``); the others are summed in ``flows_summary``."""
    summary = flow_summary(result, flows_max)
    doc = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "gro-replay", "version": __version__},
        "backend": backend,
        "input": result.input.as_dict(),
        "config": result.config.as_dict(),
    }
    eng = getattr(result, "engine", None)
    if eng is not None:  # the simulator's path (sim/api.py ``engine``); the kernel backend has none
        doc["engine"] = dict(eng)
    doc["kernels"] = []
    for i, ks in enumerate(result.kernels):
        rows = flow_rows(result, ks, summary)
        doc["kernels"].append(
            {
                "name": ks.name,
                "release": ks.release,
                "stages": {s: st.as_dict() for s, st in ks.stages.items()},
                "stack": dict(sorted(ks.stack.items())),
                "stack_frames": dict(sorted(ks.stack_frames.items())),
                "flows": rows,
                "flows_summary": flows_summary_dict(
                    summary, i, len(rows), getattr(result, "flows_live_max", 0)
                ),
            }
        )
    v = verdict_of(result)
    if len(result.kernels) > 1:
        doc["comparison"] = {"affected_flows": v.comparison_rows(), "verdict": v.text}
    doc["verdict"] = v.as_dict()
    doc["summary"] = summary_line(result)
    return doc
