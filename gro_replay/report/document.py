"""The JSON document (README.md "JSON document") and the plain-language verdict built from a replay result."""

from __future__ import annotations

from .. import __version__
from .stats import SCHEMA_VERSION
from .verdict import verdict_of


def flow_rows(result, ks) -> list[dict]:
    """Per-flow rows of one kernel: key, class, frames, and per stage skbs, segments and end reasons."""
    rows = []
    for fid, f in sorted(ks.flows.items()):
        key = result.flows[fid]
        rows.append(
            {
                "id": fid,
                "flow": key.label(),
                "key": key.as_dict(),
                "class": result.flow_classes[fid],
                "phys": {
                    "skbs": f.skbs["phys"],
                    "segments": f.segs["phys"],
                    "end_reasons": dict(f.reasons["phys"]),
                },
                "tunnel": {
                    "skbs": f.skbs["tunnel"],
                    "segments": f.segs["tunnel"],
                    "end_reasons": dict(f.reasons["tunnel"]),
                },
                "stack": dict(f.stack),
            }
        )
    return rows


def affected_flows(result) -> list[dict]:
    """JSON ``comparison.affected_flows``: the flows the verdict (report/verdict.py) finds affected."""
    return verdict_of(result).comparison_rows()


def verdict(result) -> str:
    """The verdict sentence (report/verdict.py): about the kernels run, both stages and the frames lost."""
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
    parts += [f"frames={inp.frames_read}", f"skipped={sum(inp.skipped.values())}"]
    for k in result.kernels:
        pre = "" if len(result.kernels) == 1 else f"kernel[{k.name}]."
        for stage in ("phys", "tunnel"):
            st = k.stages[stage]
            parts.append(f"{pre}{stage}_skbs={st.skbs}")
            parts.append(f"{pre}{stage}_aggregates={st.aggregates}")
    parts += verdict_of(result).summary_tokens()
    return " ".join(parts)


def document(result, backend: str = "simulator") -> dict:
    """The JSON document: schema_version, input, config, one entry per kernel, and (compare mode) the verdict."""
    doc = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "gro-replay", "version": __version__},
        "backend": backend,
        "input": result.input.as_dict(),
        "config": result.config.as_dict(),
        "kernels": [],
    }
    for ks in result.kernels:
        doc["kernels"].append(
            {
                "name": ks.name,
                "release": ks.release,
                "stages": {s: st.as_dict() for s, st in ks.stages.items()},
                "stack": dict(sorted(ks.stack.items())),
                "flows": flow_rows(result, ks),
            }
        )
    v = verdict_of(result)
    if len(result.kernels) > 1:
        doc["comparison"] = {"affected_flows": v.comparison_rows(), "verdict": v.text}
    doc["verdict"] = v.as_dict()
    doc["summary"] = summary_line(result)
    return doc
