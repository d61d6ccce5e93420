"""Which flow rows of two documents diff compares: a flow's identity across documents (``_flow_id``) and the
pairing of flows that share one (``_flow_maps``: a key back after its flow ended, older documents without
``key.outer.proto``).
"""

from __future__ import annotations

import json

from ...project import plural


def _flow_id(row: dict, proto: bool = True) -> str:
    """A flow's identity across two documents: its key as JSON, without an empty inner ``vlan`` list (an untagged
    inner frame: documents before the key was added have none, and name the same flow), and without the outer
    ``proto`` unless ``proto`` (both documents carry it: ``_both_carry_proto``; older ones have none, and name the
    same flow), else its label."""
    key = row.get("key")
    if key is None:
        return row["flow"]
    inner = key.get("inner")
    if isinstance(inner, dict) and inner.get("vlan") == []:
        key = {**key, "inner": {k: v for k, v in inner.items() if k != "vlan"}}
    outer = key.get("outer")
    if not proto and isinstance(outer, dict) and "proto" in outer:
        key = {**key, "outer": {k: v for k, v in outer.items() if k != "proto"}}
    return json.dumps(key, sort_keys=True)


def _flow_maps(
    kernels: tuple[dict, dict], proto: bool, select, same_ids: bool
) -> tuple[dict, dict, list[str]]:
    """The selected flows of a pair of kernel documents that are compared, each under one shared name, and a note per
    identity whose flows are not. A flow's identity is ``_flow_id``; several flows share one where a key came back
    after its flow ended (a new connection after a FIN, ``--flow-timeout``: a new flow with its own id) or where a
    document written before ``key.outer.proto`` names flows of different IP protocols between two hosts alike.
    Such flows are paired by their ids where ``same_ids`` (what numbers the flows is the same: report/diff/
    comparison.py ``_ID_CONFIG``; one document may list fewer, ``--flows-max``) and the ids are consistent (every
    flow has one, no id names two identities), else in document order (first frame) where both documents have as
    many of them, else not at all, said in a note (other flow timeouts cut the key's traffic into other flows:
    breaker33). A shared name carries the flows' ids (``label (#3 → #3)``), or their places where they have none,
    so that rows, regressions and their count tell them apart."""
    # ids mean the same flows only where every flow has one and no id names two identities (breaker34: a capture
    # filter renumbered the flows; a document without ids)
    named = [{f.get("id"): _flow_id(f, proto) for f in k.get("flows", [])} for k in kernels]
    same_ids = (
        same_ids
        and all(None not in n for n in named)
        and all(named[1].get(i, ident) == ident for i, ident in named[0].items())
    )
    groups: list[dict[str, list[dict]]] = []
    for k in kernels:
        by: dict[str, list[dict]] = {}
        for f in k.get("flows", []):
            if select is None or select(f):
                by.setdefault(_flow_id(f, proto), []).append(f)
        groups.append(by)
    base: dict[str, dict] = {}
    cur: dict[str, dict] = {}
    notes: list[str] = []
    for ident in dict.fromkeys([*groups[0], *groups[1]]):
        fb, fc = groups[0].get(ident, []), groups[1].get(ident, [])
        if len(fb) <= 1 and len(fc) <= 1:
            if fb:
                base[ident] = fb[0]
            if fc:
                cur[ident] = fc[0]
            continue
        if same_ids:
            ids_c = {f.get("id"): f for f in fc}
            pairs = [(f, ids_c.pop(f.get("id"))) for f in fb if f.get("id") in ids_c]
            unpaired_b = [f for f in fb if all(f is not p for p, _ in pairs)]
            unpaired_c = list(ids_c.values())
        elif len(fb) == len(fc):
            pairs, unpaired_b, unpaired_c = list(zip(fb, fc, strict=True)), [], []
        else:  # said in the note, not as flows only in one document (they are in both: breaker35)
            pairs, unpaired_b, unpaired_c = [], [], []
            label = (fb or fc)[0]["flow"]
            notes.append(
                f"{label}: {len(fb):,} {plural(len(fb), 'flow')} in the baseline and {len(fc):,} in the current "
                "(other flow timeouts cut its traffic into other flows): not compared"
            )
        # named by ids where the flows have them, else by their place among the identity's flows
        for n, (f, g) in enumerate(pairs, 1):
            base[f"{ident} {n}"] = {**f, "flow": f"{f['flow']} ({_tag(f, n)} → {_tag(g, n)})"}
            cur[f"{ident} {n}"] = g
        for side, out, rest in (("b", base, unpaired_b), ("c", cur, unpaired_c)):
            for n, f in enumerate(rest, 1):
                out[f"{ident} {side}{n}"] = {**f, "flow": f"{f['flow']} ({_tag(f, n)})"}
    return base, cur, notes


def _tag(f: dict, n: int) -> str:
    """``#id`` of a flow row, or, where it has none, its place ``n`` among the flows of its identity (``n.``)."""
    return f"#{f['id']}" if f.get("id") is not None else f"{n}."


def _both_carry_proto(*kernels: dict) -> bool:
    """Whether every flow key of these kernels' documents has ``outer.proto`` (documents before it was added have
    none: their flows are matched without it)."""
    return all(
        "proto" in ((f.get("key") or {}).get("outer") or {"proto": 0})
        for k in kernels
        for f in k.get("flows", [])
    )


def omitted_flows(k: dict) -> int:
    """The flows a document's kernel entry sums without listing them (``flows_summary.omitted.flows``, what
    ``--flows-max`` leaves out); 0 where it records none or holds no count there (the comparable schema does not
    check ``flows_summary``)."""
    n = (
        ((k.get("flows_summary") or {}).get("omitted") or {})
        if isinstance(k.get("flows_summary"), dict)
        else {}
    )
    got = n.get("flows") if isinstance(n, dict) else None
    return got if type(got) is int and got > 0 else 0
