"""``gro-replay diff``: compare two JSON documents (``gro-replay CAPTURE --format json``) for CI.

Per kernel and GRO stage the comparison shows skbs delivered, the aggregation ratio (segments per skb), the
aggregates, the bytes checksummed in software and, per flow, skbs and segments per skb; each with its delta.
A *checked* metric regresses when it moves the wrong way by more than ``max_regression_pct`` percent of the
baseline (segments per skb down, skbs or software-checksummed bytes up). The replay is deterministic, so with
the same input and configuration any change comes from the kernel model or the tool; the default threshold is
therefore 0 %: any loss of aggregation fails the check.

Documents are refused (``DiffError``, one line) when their ``schema_version`` is unknown, when they hold
different kernel sets (unless each holds exactly one kernel: then those two are compared, e.g. a ``--fix`` run
against a ``--no-fix`` run), and when their inputs differ (``input.blake3``, or ``input.sha256``: the digest both
record, capture/digest.py) unless explicitly allowed.
"""

from __future__ import annotations

import json
import math

from ...kernel.model import commit_of_switch, counted_switches, shared_switches_text
from ...project import plain_number
from ..stats import SCHEMA_VERSION, STAGES
from .inputs import (
    _digest_advice,
    digest_why,
    input_words,
    inputs_words,
    interface_note,
    same_input,
    unknown_why,
)
from .metrics import (
    CHECKABLE,
    DEFAULT_METRICS,
    METRICS,
    Metric,
    cell,
    flow_values,
    loss_digits,
    stage_values,
)
from .pairing import _both_carry_proto, _flow_maps, omitted_flows

KNOWN_SCHEMA_VERSIONS = (SCHEMA_VERSION,)
STAGE_TITLES = {"phys": "phys NAPI", "tunnel": "tunnel gro_cells"}
DEFAULT_MAX_REGRESSION_PCT = 0.0


class DiffError(ValueError):
    """The documents cannot be compared (one-line message; the CLI exits 2)."""


def _pair_kernels(base: dict, cur: dict) -> list[tuple[dict, dict]]:
    bn = [k["name"] for k in base["kernels"]]
    cn = [k["name"] for k in cur["kernels"]]
    if sorted(bn) == sorted(cn) and len(set(bn)) == len(bn):
        by_name = {k["name"]: k for k in cur["kernels"]}
        return [(k, by_name[k["name"]]) for k in base["kernels"]]
    if len(bn) == 1 and len(cn) == 1:
        return [(base["kernels"][0], cur["kernels"][0])]
    raise DiffError(
        f"the documents hold different kernels: BASELINE {', '.join(bn)}; CURRENT {', '.join(cn)} "
        "(compare runs of the same kernels, or of one kernel each)"
    )


_ABSENT = object()


def _value_words(value) -> str:
    """A document's value as the JSON spells it (``"ice"``, ``null``, ``true``, ``[4789, 8472]``; an object as
    ``{…N fields}``), or ``(absent)`` for a key the document lacks (an older one)."""
    if value is _ABSENT:
        return "(absent)"
    if isinstance(value, dict):
        return f"{{…{len(value)} {'field' if len(value) == 1 else 'fields'}}}"
    return json.dumps(value, ensure_ascii=False)


def _changes(base, cur, key: str) -> list[str]:
    """``config KEY: BASE → CUR`` for each value that differs under ``key``, objects present on both sides compared
    field by field, an object on one side only said once (``null → {…9 fields}``)."""
    if isinstance(base, dict) and isinstance(cur, dict):
        return [
            line
            for k in sorted(set(base) | set(cur))
            for line in _changes(base.get(k, _ABSENT), cur.get(k, _ABSENT), f"{key}.{k}" if key else k)
        ]
    if base is not _ABSENT and cur is not _ABSENT and base == cur:
        return []
    return [f"config {key}: {_value_words(base)} → {_value_words(cur)}"]


def _config_notes(base: dict, cur: dict) -> list[str]:
    bc = {k: v for k, v in base.get("config", {}).items() if k != "kernels"}
    cc = {k: v for k, v in cur.get("config", {}).items() if k != "kernels"}
    interface, known = interface_note(base, cur)
    if known:
        # said by the interfaces replayed, not as ``config interface: null → "bond0"``
        bc.pop("interface", None)
        cc.pop("interface", None)
    notes = _changes(bc, cc, "") + ([interface] if interface else [])
    if base.get("backend") != cur.get("backend"):
        notes.append(f"backend: {base.get('backend')} → {cur.get('backend')}")
    return notes + _kernel_model_notes(base, cur)


#: what makes a kernel's model (``config.kernels[]``) another model under the same name, read by ``_model_words``
_MODEL_FIELDS = ("release", "base", "vendor", "vendor_base", "pre_release")


def _model_words(k: dict) -> dict:
    """What makes ``k`` (a ``config.kernels[]`` entry, read as found: a field of another type is compared as it is,
    never assumed to be a list or an object) the model it is, by the words the note uses."""
    words = {f: k.get(f) for f in _MODEL_FIELDS}
    backports = k.get("backports")
    if isinstance(backports, list):
        words["backports"] = sorted(
            str(b.get("upstream")) if isinstance(b, dict) else str(b) for b in backports
        )
    else:
        words["backports"] = backports
    fix = k.get("fix_89e5c58fc1e2")
    words["carries 89e5c58fc1e2"] = fix.get("carried") if isinstance(fix, dict) else fix
    return words


def _shown(value) -> str:
    """A field's value in a note, as JSON writes it ("5.10", null, ["89e5c58fc1e2"], true)."""
    return json.dumps(value, ensure_ascii=False, default=str)


def _onoff(value) -> str:
    """A switch's value in a note: on, off, ``(absent)`` where the document has no such switch (an older one), or
    as JSON writes anything else."""
    return "on" if value is True else "off" if value is False else _value_words(value)


def _csum_moved(kb: dict, kc: dict) -> str:
    """The note of a kernel pair (baseline ``kb``, current ``kc``) whose bytes checksummed in software moved
    between stages, in the words of the replay's line (report/table.py ``csum_words``), or ""."""
    from ..table import csum_words

    return csum_words(
        [
            (f"{side} {k['name']}", tuple(k["stages"][s]["sw_csum_bytes"] for s in STAGES))
            for side, k in (("baseline", kb), ("current", kc))
        ]
    )


def _kernel_model_notes(base: dict, cur: dict) -> list[str]:
    """A note per kernel name whose model differs between the documents (``config.kernels[]``: the switches the
    simulation ran, ``switches``, where both documents hold them; else what makes a model: release, base, vendor
    base, pre-release, stable backports, whether it carries the fix): e.g. ``--kernel 5.10.0-21-amd64`` and
    ``--kernel "$(uname -rv)"`` name one Debian kernel by name but two models (5.10 and 5.10.162), so a change
    between the documents may be the model's, not the kernel's. A name described differently whose switches are
    equal runs one kernel model in both, and so do two kernels of different names paired as one each
    (``_pair_kernels``) whose switches are equal: the words of cli/options.py, which refuses to compare those."""

    def named(doc: dict) -> dict:
        kernels = (doc.get("config") or {}).get("kernels") if isinstance(doc.get("config"), dict) else None
        if not isinstance(kernels, list):
            return {}
        return {k["name"]: k for k in kernels if isinstance(k, dict) and isinstance(k.get("name"), str)}

    base_by, cur_by = named(base), named(cur)
    notes = []
    for name, k in base_by.items():
        other = cur_by.get(name)
        if other is not None:
            notes += _same_name_notes(name, k, other)
    if len(base_by) == 1 and len(cur_by) == 1 and not base_by.keys() & cur_by.keys():
        ((a_name, a),), ((b_name, b),) = base_by.items(), cur_by.items()
        sw, sw_b = a.get("switches"), b.get("switches")
        if isinstance(sw, dict) and isinstance(sw_b, dict) and counted_switches(sw) == counted_switches(sw_b):
            notes.append(
                f"kernels {a_name} and {b_name} run one kernel model ({shared_switches_text(sw, sw_b)}): a change "
                "between the documents is not a difference of the kernels"
            )
    return notes


def _same_name_notes(name: str, k: dict, other: dict) -> list[str]:
    """``_kernel_model_notes`` for kernel ``name``, ``k`` in the baseline and ``other`` in the current document."""
    a, b = _model_words(k), _model_words(other)
    changed = [f"{f} {_shown(a[f])} → {_shown(b[f])}" for f in a if a[f] != b[f]]
    sa, sb = k.get("switches"), other.get("switches")
    if isinstance(sa, dict) and isinstance(sb, dict):
        ca, cb = (
            counted_switches(sa),
            counted_switches(sb),
        )  # a switch that changes no count makes no other model
        if ca == cb:
            return (
                [
                    f"kernel {name} is described differently in the two documents ({'; '.join(changed)}) but runs "
                    f"one kernel model in both ({shared_switches_text(sa, sb)}): a change between them is not the "
                    "model's"
                ]
                if changed
                else []
            )
        flips = [
            f"{commit_of_switch(sw)} {_onoff(ca.get(sw, _ABSENT))} → {_onoff(cb.get(sw, _ABSENT))}"
            for sw in dict.fromkeys([*ca, *cb])
            if ca.get(sw) != cb.get(sw)
        ]
        changed.append(f"modelled commits {', '.join(flips)}")
    elif sa is not None and sb is not None and sa != sb:
        changed.append(f"switches {_shown(sa)} → {_shown(sb)}")
    if not changed:
        return []
    return [
        f"kernel {name} is another model in the two documents ({'; '.join(changed)}): a change between them may be "
        "the model's, not the kernel's"
    ]


#: the config that decides which flows a capture's frames make and how they are numbered (flow ids): a capture
#: filter, a replay-side selection, the interface replayed, the tunnel ports, resegmentation, and the flow timeouts
_ID_CONFIG = ("filter", "flow", "interface", "vxlan_ports", "geneve_ports", "detect_tunnels", "resegment")
_ID_TIMEOUTS = ("idle_timeout_ns", "close_timeout_ns")


def compare(  # noqa: C901, PLR0915 - one rule per document section, in the order of the diff document
    base: dict,
    cur: dict,
    *,
    metrics: tuple[str, ...] = DEFAULT_METRICS,
    max_regression_pct: float = DEFAULT_MAX_REGRESSION_PCT,
    allow_different_input: bool = False,
    baseline_path: str = "BASELINE",
    current_path: str = "CURRENT",
    flow: str | None = None,
) -> dict:
    """Compare two loaded documents; return the comparison as a JSON-ready dict.

    Args: metrics: names from ``CHECKABLE`` checked against the threshold; max_regression_pct: allowed loss in
    percent of the baseline value (≥ 0); flow: a ``--flow`` selector (packet/flowsel.py): only the flow rows it
    matches (by their ``key`` and ``id``) are compared and checked, and the stage totals, which cover every flow of
    a document, are shown but not checked. Returns keys ``status`` ("ok" | "regression"), ``regressions`` (one entry
    per checked value beyond the threshold), ``kernels`` (per pair: stage cells and flow rows), ``notes``.
    Raises: DiffError for different inputs (unless allowed), kernel sets that cannot be paired, a bad selector or
    one that matches no flow.
    """
    select = None
    if flow is not None:
        from ...packet.flowsel import FlowSelector, KeyView, SelectorError

        try:
            sel = FlowSelector.parse(flow)
        except SelectorError as e:
            raise DiffError(str(e)) from None

        def select(row: dict) -> bool:
            return sel.matches(KeyView(row.get("key")), row.get("id", -1))

    unknown = [m for m in metrics if m not in CHECKABLE]
    if unknown:
        raise DiffError(f"unknown metric {unknown[0]!r}; choose from {', '.join(CHECKABLE)}")
    if not 0 <= max_regression_pct < math.inf:
        raise DiffError("--max-regression must be a percentage ≥ 0")
    bi, ci = base.get("input", {}), cur.get("input", {})
    notes: list[str] = []
    same, by = same_input(bi, ci)
    if not same:
        # a document without a digest both record may be of the same bytes: not said to differ
        what = "different inputs" if by else "inputs not known to be the same"
        if not allow_different_input:
            # documents of two digests: the current one can be made with the baseline's
            again = _digest_advice(bi, ci)
            raise DiffError(
                f"{what}: BASELINE {input_words(bi)}, CURRENT {input_words(ci)}"
                f"{digest_why(bi, ci) if by else unknown_why(bi, ci)}; "
                f"{again}pass --allow-different-input to compare anyway"
            )
        notes.append(f"{what}: {inputs_words(bi, ci)} (--allow-different-input)")
    pairs = _pair_kernels(base, cur)
    notes += _config_notes(base, cur)
    # the same flows, by id, where the capture and what numbers its flows are the same (``_flow_maps``)
    bcfg, ccfg = base.get("config") or {}, cur.get("config") or {}
    same_ids = (
        same
        and all(bcfg.get(n) == ccfg.get(n) for n in _ID_CONFIG)
        and all((bcfg.get("flows") or {}).get(n) == (ccfg.get("flows") or {}).get(n) for n in _ID_TIMEOUTS)
    )
    checked = set(metrics)
    out_kernels = []
    regressions = []
    largest: dict | None = None  # the largest loss among the checked values, wherever it is

    def observe(pair: str, stage: str, m: Metric, c: dict, flow: str | None) -> None:
        nonlocal largest
        if not c["checked"]:
            return
        # the loss the check compared (the cell's; None: from a zero baseline), not one of the rounded values
        loss = math.inf if c["loss_pct"] is None else c["loss_pct"]
        if largest is None or loss > largest["_loss"]:
            largest = {**_regression(pair, stage, m, c, flow), "_loss": loss}

    matched = 0
    if select is not None:
        notes.append(
            f"--flow {flow}: only the matching flows are compared; the stage totals cover every flow of the "
            "documents and are not checked"
        )
    for kb, kc in pairs:
        pair_label = kb["name"] if kb["name"] == kc["name"] else f"{kb['name']} → {kc['name']}"
        stages = {}
        for s in STAGES:
            vb, vc = stage_values(kb["stages"][s]), stage_values(kc["stages"][s])
            cells = {}
            for name, v in vb.items():
                m = METRICS[name]
                stage_checked = name in checked and select is None
                cells[name] = c = cell(m, v, vc[name], stage_checked, max_regression_pct)
                observe(pair_label, s, m, c, None)
                if c["regression"]:
                    regressions.append(_regression(pair_label, s, m, c, None))
            stages[s] = cells
        moved = _csum_moved(kb, kc)
        if moved:
            notes.append(f"{pair_label}: {moved}")
        proto = _both_carry_proto(kb, kc)
        flows_b, flows_c, unpaired = _flow_maps((kb, kc), proto, select, same_ids)
        notes += [f"{pair_label}: {n}" for n in unpaired]
        matched += len(flows_b) + len(flows_c)
        rows = []
        for fid, fb in flows_b.items():
            fc = flows_c.get(fid)
            if fc is None:
                continue
            row = {"flow": fb["flow"], "key": fb.get("key"), "stages": {}}
            for s in STAGES:
                vb, vc = flow_values(fb[s]), flow_values(fc[s])
                if not vb["flow_skbs"] and not vc["flow_skbs"]:
                    # no skb at this stage in either document: nothing per skb to compare (it read 0.00 → 0.00,
                    # checked: newcomer30)
                    vb["flow_segs_per_skb"] = vc["flow_segs_per_skb"] = None
                cells = {}
                for name, v in vb.items():
                    m = METRICS[name]
                    cells[name] = c = cell(m, v, vc[name], name in checked, max_regression_pct)
                    observe(pair_label, s, m, c, fb["flow"])
                    if c["regression"]:
                        regressions.append(_regression(pair_label, s, m, c, fb["flow"]))
                row["stages"][s] = cells
            row["changed"] = any(c["delta"] for st in row["stages"].values() for c in st.values())
            rows.append(row)
        only_b = [flows_b[f]["flow"] for f in flows_b if f not in flows_c]
        only_c = [flows_c[f]["flow"] for f in flows_c if f not in flows_b]
        out_kernels.append(
            {
                "baseline": {"name": kb["name"], "release": kb.get("release")},
                "current": {"name": kc["name"], "release": kc.get("release")},
                "label": pair_label,
                "stages": stages,
                "flows": rows,
                "flows_only_in_baseline": only_b,
                "flows_only_in_current": only_c,
                # flows a document sums without listing them (--flows-max): the other's may be among them
                "flows_omitted": {"baseline": omitted_flows(kb), "current": omitted_flows(kc)},
            }
        )
    if select is not None and not matched:
        raise DiffError(f"no flow of the documents matches --flow {flow!r}")
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "diff",
        "baseline": {"document": baseline_path, "input": bi},
        "current": {"document": current_path, "input": ci},
        "max_regression_pct": max_regression_pct,
        "metrics_checked": list(metrics),
        "status": "regression" if regressions else "ok",
        "regressions": regressions,
        "largest_loss": (worst := _largest_loss(largest)),
        "kernels": out_kernels,
        "notes": notes,
        "summary": _summary_line(regressions, max_regression_pct, out_kernels, worst),
    }


def _largest_loss(largest: dict | None) -> dict | None:
    """The checked value that lost most (``loss_pct``: percent of its baseline, None from a zero baseline), or
    None when nothing was checked."""
    if largest is None:
        return None
    loss = largest.pop("_loss")
    return {**largest, "loss_pct": None if math.isinf(loss) else loss}


def _regression(pair: str, stage: str, m: Metric, c: dict, flow: str | None) -> dict:
    return {
        "kernel": pair,
        "stage": stage,
        "metric": m.name,
        "flow": flow,
        "baseline": c["baseline"],
        "current": c["current"],
        "change_pct": c["change_pct"],
        "loss_pct": c["loss_pct"],
    }


def pct_text(pct: float, signed: bool = False, digits: int = 1) -> str:
    """A measured percentage as every text output of diff prints it (table, Markdown, sentences, the DIFF line; JSON
    keeps change_pct to two decimals, loss_pct to six or more: ``metrics.cell``): ``digits`` decimal places, one by default, ``88.2%`` (``signed``: ``-88.2%``,
    ``+750.0%``), an exact zero ``0%``, a change too small to show at one decimal ``<0.1%`` (signed ``-<0.1%``).
    A loss printed beside the threshold takes the places ``metrics.loss_digits`` gives. A threshold the user
    gave (``--max-regression``) is printed as given, so it can be passed back."""
    if pct == 0:
        return "0%"
    sign = ("+" if pct > 0 else "-") if signed else ""
    if abs(pct) < 0.05 and digits == 1:
        return f"{sign}<0.1%"
    return f"{pct:+,.{digits}f}%" if signed else f"{pct:,.{digits}f}%"


def limit_text(limit: float) -> str:
    """A threshold the user gave (``--max-regression``), as every output prints it, so that it can be passed back:
    positional digits without exponent or separators, trailing zeros trimmed, with ``%``: ``5%``, ``2.5%``,
    ``1000000%`` (``{:g}`` printed ``1e+06%``, which reads as no percentage a user would type)."""
    return plain_number(limit) + "%"


def _loss_text(w: dict, limit: float, exceeded: bool) -> str:
    """A ``largest_loss`` entry's loss as the text line and SUMMARY show it: ``88.2%`` (``pct_text``, with the places
    ``loss_digits`` gives beside ``limit``, ``exceeded`` whether any check failed), or ``from 0`` (a zero
    baseline: no percentage)."""
    if w["loss_pct"] is None:
        return "from 0"
    return pct_text(w["loss_pct"], digits=loss_digits(w["loss_pct"], limit, exceeded))


def _summary_line(regressions: list, limit: float, kernels: list, worst: dict | None) -> str:
    """The grep-able ``DIFF`` line. Keys are only ever added: ``largest_loss`` (the observed largest loss of a
    checked value, as ``observed_sentence`` says it; ``none`` when nothing was checked, ``from0`` from a zero
    baseline) sits beside ``max_regression`` (the allowed loss)."""
    stage_regs = sum(1 for r in regressions if r["flow"] is None)
    # flows with at least one regression, in any kernel pair: a flow is the capture's, not a kernel's
    flows = len({r["flow"] for r in regressions if r["flow"] is not None})
    largest = "none" if not worst else _loss_text(worst, limit, bool(regressions)).replace(" ", "")
    return (
        f"DIFF status={'regression' if regressions else 'ok'} regressions={len(regressions)} "
        f"stage_regressions={stage_regs} flows_regressed={flows} max_regression={limit_text(limit)} "
        f"largest_loss={largest} kernels={','.join(k['label'].replace(' ', '') for k in kernels)}"
    )
