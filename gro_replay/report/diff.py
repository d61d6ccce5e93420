"""``gro-replay diff``: compare two JSON documents (``gro-replay CAPTURE --format json``) for CI.

Per kernel and GRO stage the comparison shows skbs delivered, the aggregation ratio (segments per skb), the
aggregates, the bytes checksummed in software and, per flow, skbs and segments per skb; each with its delta.
A *checked* metric regresses when it moves the wrong way by more than ``max_regression_pct`` percent of the
baseline (segments per skb down, skbs or software-checksummed bytes up). The replay is deterministic, so with
the same input and configuration any change comes from the kernel model or the tool; the default threshold is
therefore 0 %: any loss of aggregation fails the check.

Documents are refused (``DiffError``, one line) when their ``schema_version`` is unknown, when they hold
different kernel sets (unless each holds exactly one kernel: then those two are compared, e.g. a ``--fix`` run
against a ``--no-fix`` run), and when their inputs differ (``input.sha256``) unless explicitly allowed.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from .stats import SCHEMA_VERSION, STAGES

KNOWN_SCHEMA_VERSIONS = (SCHEMA_VERSION,)
STAGE_TITLES = {"phys": "phys NAPI", "tunnel": "tunnel gro_cells"}
DEFAULT_MAX_REGRESSION_PCT = 0.0
_EPS = 1e-9


class DiffError(ValueError):
    """The documents cannot be compared (one-line message; the CLI exits 2)."""


@dataclass(frozen=True)
class Metric:
    """A compared quantity: ``better`` is ``"higher"``, ``"lower"`` or ``""`` (shown, never checked)."""

    name: str
    label: str
    level: str  # "stage" or "flow"
    better: str


def _ratio(segments: int, skbs: int) -> float:
    return segments / skbs if skbs else 0.0


METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric("skbs", "skbs delivered", "stage", "lower"),
        Metric("segs_per_skb", "segments / skb", "stage", "higher"),
        Metric("aggregates", "aggregates (≥2 segs)", "stage", ""),
        Metric("sw_csum_bytes", "bytes checksummed in software", "stage", "lower"),
        Metric("flow_skbs", "skbs delivered (per flow)", "flow", "lower"),
        Metric("flow_segs_per_skb", "segments / skb (per flow)", "flow", "higher"),
    )
}
CHECKABLE = tuple(n for n, m in METRICS.items() if m.better)
DEFAULT_METRICS = ("segs_per_skb", "flow_segs_per_skb")


def _stage_values(st: dict) -> dict:
    return {
        "skbs": st["skbs_delivered"],
        "segs_per_skb": _ratio(st["segments_delivered"], st["skbs_delivered"]),
        "aggregates": st["aggregates"],
        "sw_csum_bytes": st["sw_csum_bytes"],
    }


def _flow_values(st: dict) -> dict:
    return {"flow_skbs": st["skbs"], "flow_segs_per_skb": _ratio(st["segments"], st["skbs"])}


# -- loading ---------------------------------------------------------------------------------------------------------
#: the most bytes ``load_document`` reads of one document (``gro-replay diff --max-bytes``)
MAX_DOCUMENT_BYTES = 128 << 20
#: the deepest nesting of arrays and objects a document may have (gro-replay writes at most 6 levels)
MAX_DEPTH = 64
_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


class _Unusable:
    """A JSON number Python cannot compare honestly (NaN, ±Infinity, overflowing to infinity, thousands of digits);
    the schema check reports it with its JSON pointer instead of it passing as a value."""

    __slots__ = ("what",)

    def __init__(self, what: str) -> None:
        self.what = what

    def __repr__(self) -> str:
        return self.what


def _parse_constant(name: str) -> _Unusable:
    return _Unusable(f"{name} (not a finite number)")


def _parse_float(text: str):
    v = float(text)
    return v if math.isfinite(v) else _Unusable(f"{text[:24]} (overflows to infinity)")


def _parse_int(text: str):
    if len(text.lstrip("-")) > 20:
        return _Unusable(f"an integer of {len(text.lstrip('-'))} digits")
    return int(text)


def _too_deep(data: bytes) -> int | None:
    """Byte offset where ``data``'s arrays/objects nest deeper than ``MAX_DEPTH`` (strings skipped), or None."""
    depth = 0
    for m in _TOKENS.finditer(data):
        c = m.group()
        if c in (b"[", b"{"):
            depth += 1
            if depth > MAX_DEPTH:
                return m.start()
        elif c in (b"]", b"}"):
            depth -= 1
    return None


def _unusable_at(doc) -> str | None:
    """The JSON pointer of the first ``_Unusable`` value anywhere in ``doc`` (iterative walk), or None."""
    from .schema import pointer

    stack = [((), doc)]
    while stack:
        path, v = stack.pop()
        if isinstance(v, _Unusable):
            return pointer(path) + f": {v.what}"
        if isinstance(v, dict):
            stack.extend(((*path, k), x) for k, x in v.items())
        elif isinstance(v, list):
            stack.extend(((*path, i), x) for i, x in enumerate(v))
    return None


def load_document(path: str, role: str, max_bytes: int = MAX_DOCUMENT_BYTES) -> dict:
    """Read a gro-replay JSON document and check it against the replay schema's ``comparable`` part.

    ``role`` (BASELINE/CURRENT) prefixes errors. At most ``max_bytes`` bytes are read; NaN, ±Infinity, numbers
    that overflow, integers beyond 2**63-1, strings for numbers, missing keys and nesting deeper than
    ``MAX_DEPTH`` are refused. Raises: DiffError (one line naming the file and, where there is one, the JSON
    pointer of the offending field).
    """
    from .schema import SchemaViolation, check

    where = f"{role} {path}"
    try:
        with open(path, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as e:
        raise DiffError(f"{where}: cannot read: {e.strerror or e}") from None
    if len(data) > max_bytes:
        raise DiffError(f"{where}: larger than {max_bytes:,} bytes (--max-bytes): not a gro-replay document")
    at = _too_deep(data)
    if at is not None:
        raise DiffError(f"{where}: arrays/objects nested deeper than {MAX_DEPTH} levels (at byte {at})")
    try:
        doc = json.loads(
            data.decode("utf-8"),
            parse_constant=_parse_constant,
            parse_float=_parse_float,
            parse_int=_parse_int,
        )
    except UnicodeDecodeError as e:
        raise DiffError(f"{where}: not UTF-8 text (byte {e.start})") from None
    except (json.JSONDecodeError, RecursionError, ValueError) as e:
        raise DiffError(f"{where}: not JSON ({str(e)[:120]})") from None
    if not isinstance(doc, dict) or "schema_version" not in doc:
        raise DiffError(f"{where}: not a gro-replay JSON document (no schema_version)")
    ver = doc["schema_version"]
    if ver not in KNOWN_SCHEMA_VERSIONS or type(ver) is not int:
        known = ", ".join(str(v) for v in KNOWN_SCHEMA_VERSIONS)
        raise DiffError(f"{where}: unknown schema_version {repr(ver)[:40]} (this gro-replay reads {known})")
    try:
        check(doc, "replay#/$defs/comparable")
    except SchemaViolation as e:
        raise DiffError(f"{where}: {e.pointer}: {e.reason}") from None
    bad = _unusable_at(doc)
    if bad is not None:
        raise DiffError(f"{where}: {bad}")
    return doc


# -- comparing ---------------------------------------------------------------------------------------------------------
def _loss_pct(metric: Metric, base: float, cur: float) -> float:
    """How much worse ``cur`` is than ``base``, in percent of ``base`` (0 when not worse; inf from a zero base)."""
    if metric.better == "higher":
        worse = base - cur
    elif metric.better == "lower":
        worse = cur - base
    else:
        return 0.0
    if worse <= _EPS * max(1.0, abs(base)):
        return 0.0
    return math.inf if base == 0 else 100.0 * worse / abs(base)


def _change_pct(base: float, cur: float) -> float | None:
    if base == cur:
        return 0.0
    return None if base == 0 else 100.0 * (cur - base) / abs(base)


def _cell(metric: Metric, base, cur, checked: bool, limit: float) -> dict:
    if (
        base is None or cur is None
    ):  # not measured (kernel backend) or not attributable (--flow): shown as n/a
        return {
            "baseline": base,
            "current": cur,
            "delta": None,
            "change_pct": None,
            "checked": False,
            "regression": False,
        }
    loss = _loss_pct(metric, base, cur)
    regression = checked and loss > limit + _EPS
    if isinstance(base, float) or isinstance(cur, float):
        base, cur = round(base, 4), round(cur, 4)
        delta = round(cur - base, 4)
    else:
        delta = cur - base
    change = _change_pct(base, cur)
    return {
        "baseline": base,
        "current": cur,
        "delta": delta,
        "change_pct": None if change is None else round(change, 2),
        "checked": checked,
        "regression": regression,
    }


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


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flat(v, key + "."))
        else:
            out[key] = v
    return out


def _config_notes(base: dict, cur: dict) -> list[str]:
    bc = _flat({k: v for k, v in base.get("config", {}).items() if k != "kernels"})
    cc = _flat({k: v for k, v in cur.get("config", {}).items() if k != "kernels"})
    notes = []
    for key in sorted(set(bc) | set(cc)):
        if bc.get(key) != cc.get(key):
            notes.append(f"config {key}: {bc.get(key)!r} → {cc.get(key)!r}")
    if base.get("backend") != cur.get("backend"):
        notes.append(f"backend: {base.get('backend')} → {cur.get('backend')}")
    return notes


def _flow_id(row: dict) -> str:
    return json.dumps(row.get("key"), sort_keys=True) if row.get("key") is not None else row["flow"]


def compare(
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
        from ..packet.flowsel import FlowSelector, KeyView, SelectorError

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
    if bi.get("sha256") != ci.get("sha256"):
        if not allow_different_input:
            raise DiffError(
                f"different inputs: BASELINE replayed {bi.get('path')} (sha256 {str(bi.get('sha256'))[:12]}), "
                f"CURRENT {ci.get('path')} (sha256 {str(ci.get('sha256'))[:12]}); "
                "pass --allow-different-input to compare anyway"
            )
        notes.append(f"different inputs: {bi.get('path')} → {ci.get('path')} (--allow-different-input)")
    pairs = _pair_kernels(base, cur)
    notes += _config_notes(base, cur)
    checked = set(metrics)
    out_kernels = []
    regressions = []
    largest: dict | None = None  # the largest loss among the checked values, wherever it is

    def observe(pair: str, stage: str, m: Metric, c: dict, flow: str | None) -> None:
        nonlocal largest
        if not c["checked"]:
            return
        loss = _loss_pct(m, c["baseline"], c["current"])
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
            vb, vc = _stage_values(kb["stages"][s]), _stage_values(kc["stages"][s])
            cells = {}
            for name, v in vb.items():
                m = METRICS[name]
                stage_checked = name in checked and select is None
                cells[name] = c = _cell(m, v, vc[name], stage_checked, max_regression_pct)
                observe(pair_label, s, m, c, None)
                if c["regression"]:
                    regressions.append(_regression(pair_label, s, m, c, None))
            stages[s] = cells
        flows_b = {_flow_id(f): f for f in kb.get("flows", []) if select is None or select(f)}
        flows_c = {_flow_id(f): f for f in kc.get("flows", []) if select is None or select(f)}
        matched += len(flows_b) + len(flows_c)
        rows = []
        for fid, fb in flows_b.items():
            fc = flows_c.get(fid)
            if fc is None:
                continue
            row = {"flow": fb["flow"], "key": fb.get("key"), "stages": {}}
            for s in STAGES:
                vb, vc = _flow_values(fb[s]), _flow_values(fc[s])
                cells = {}
                for name, v in vb.items():
                    m = METRICS[name]
                    cells[name] = c = _cell(m, v, vc[name], name in checked, max_regression_pct)
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
    return {**largest, "loss_pct": None if math.isinf(loss) else round(loss, 2)}


def observed_sentence(cmp: dict) -> str:
    """The observed change beside the threshold: the largest loss among the checked values."""
    w = cmp.get("largest_loss")
    limit = cmp["max_regression_pct"]
    if not w:
        return f"nothing checked (allowed loss {limit:g}%)"
    if w["loss_pct"] == 0:
        return f"observed: no checked value lost anything (allowed loss {limit:g}%)"
    m = METRICS[w["metric"]]
    flow = f", flow {w['flow']}" if w["flow"] else ""
    loss = _loss_text(w)
    return (
        f"observed: largest loss {loss} ({w['kernel']}, {STAGE_TITLES[w['stage']]}{flow}: "
        f"{m.label.replace(' (per flow)', '')} {fmt_value(w['baseline'])} → {fmt_value(w['current'])}); "
        f"allowed loss {limit:g}%"
    )


def _regression(pair: str, stage: str, m: Metric, c: dict, flow: str | None) -> dict:
    return {
        "kernel": pair,
        "stage": stage,
        "metric": m.name,
        "flow": flow,
        "baseline": c["baseline"],
        "current": c["current"],
        "change_pct": c["change_pct"],
    }


def _loss_text(w: dict) -> str:
    """A ``largest_loss`` entry's loss as the text line and SUMMARY show it: ``88.24%``, or ``from 0`` (a zero
    baseline: no percentage)."""
    return "from 0" if w["loss_pct"] is None else f"{w['loss_pct']:g}%"


def _summary_line(regressions: list, limit: float, kernels: list, worst: dict | None) -> str:
    """The grep-able ``DIFF`` line. Keys are only ever added: ``largest_loss`` (the observed largest loss of a
    checked value, as ``observed_sentence`` says it; ``none`` when nothing was checked, ``from0`` from a zero
    baseline) sits beside ``max_regression`` (the allowed loss)."""
    stage_regs = sum(1 for r in regressions if r["flow"] is None)
    flows = len({(r["kernel"], r["flow"]) for r in regressions if r["flow"] is not None})
    largest = "none" if not worst else _loss_text(worst).replace(" ", "")
    return (
        f"DIFF status={'regression' if regressions else 'ok'} regressions={len(regressions)} "
        f"stage_regressions={stage_regs} flows_regressed={flows} max_regression={limit:g}% "
        f"largest_loss={largest} kernels={','.join(k['label'].replace(' ', '') for k in kernels)}"
    )


# -- rendering ----------------------------------------------------------------------------------------------------------
def fmt_value(v) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:,.2f}"
    return f"{v:,}"


def fmt_delta(v) -> str:
    if v is None:
        return "n/a"
    if not v:
        return "0"
    return f"{v:+,.2f}" if isinstance(v, float) else f"{v:+,}"


def _cell_change(c: dict) -> str:
    return "n/a" if c["delta"] is None else fmt_change(c["change_pct"])


def fmt_change(pct) -> str:
    if pct is None:
        return "new"
    if pct == 0:
        return "0%"
    return f"{pct:+.1f}%"


def regression_sentence(r: dict, limit: float) -> str:
    """One line naming a regression: kernel, stage, (flow,) metric, values, change and the threshold."""
    m = METRICS[r["metric"]]
    where = f"{r['kernel']}, {STAGE_TITLES[r['stage']]}"
    what = m.label.replace(" (per flow)", "")
    flow = f", flow {r['flow']}" if r["flow"] else ""
    return (
        f"{where}{flow}: {what} {fmt_value(r['baseline'])} → {fmt_value(r['current'])} "
        f"({fmt_change(r['change_pct'])}; allowed loss {limit:g}%)"
    )


def _status_text(cmp: dict) -> str:
    n = len(cmp["regressions"])
    if not n:
        checked = ", ".join(cmp["metrics_checked"]) or "none"
        return f"OK: no checked metric ({checked}) lost more than {cmp['max_regression_pct']:g}%."
    return f"REGRESSION: {n} checked value(s) lost more than {cmp['max_regression_pct']:g}%."


def _input_line(cmp: dict) -> str:
    b, c = cmp["baseline"], cmp["current"]
    if b["input"].get("sha256") == c["input"].get("sha256"):
        return f"input: {b['input'].get('path')} (sha256 {str(b['input'].get('sha256'))[:12]})"
    return f"inputs: {b['input'].get('path')} → {c['input'].get('path')}"


_STAGE_ROWS = ("skbs", "segs_per_skb", "aggregates", "sw_csum_bytes")
_FLOW_LIMIT = 30


def _changed_flows(k: dict) -> list[dict]:
    rows = [r for r in k["flows"] if r["changed"]]

    def worst(r):
        return -max(
            _loss_pct(METRICS[n], c["baseline"], c["current"])
            for st in r["stages"].values()
            for n, c in st.items()
        )

    return sorted(rows, key=worst)


def render_markdown(cmp: dict) -> str:
    """The comparison as Markdown for a CI job summary (``$GITHUB_STEP_SUMMARY``)."""
    limit = cmp["max_regression_pct"]
    lines = ["## gro-replay diff", "", f"**{_status_text(cmp)}**", "", observed_sentence(cmp), ""]
    lines.append(f"- {_input_line(cmp)}")
    lines.append(f"- baseline: `{cmp['baseline']['document']}`, current: `{cmp['current']['document']}`")
    lines.append(
        f"- checked: {', '.join(f'`{m}`' for m in cmp['metrics_checked']) or 'nothing'}; allowed loss {limit:g}%"
    )
    for n in cmp["notes"]:
        lines.append(f"- note: {n}")
    if cmp["regressions"]:
        lines += ["", "### Regressions", ""]
        lines += [f"- {regression_sentence(r, limit)}" for r in cmp["regressions"]]
    for k in cmp["kernels"]:
        lines += ["", f"### Kernel {k['label']}", ""]
        lines.append("| metric | stage | baseline | current | Δ | change |")
        lines.append("|---|---|---:|---:|---:|---:|")
        for s in STAGES:
            for name in _STAGE_ROWS:
                c = k["stages"][s][name]
                flag = " ❌" if c["regression"] else ""
                lines.append(
                    f"| {METRICS[name].label} | {STAGE_TITLES[s]} | {fmt_value(c['baseline'])} | "
                    f"{fmt_value(c['current'])} | {fmt_delta(c['delta'])} | {_cell_change(c)}{flag} |"
                )
        changed = _changed_flows(k)
        unchanged = len(k["flows"]) - len(changed)
        if changed:
            lines += [
                "",
                f"Flows that changed ({len(changed)}; {unchanged} unchanged):",
                "",
                "| flow | stage | skbs | segments / skb | change |",
                "|---|---|---:|---:|---:|",
            ]
            for r in changed[:_FLOW_LIMIT]:
                for s in STAGES:
                    sk, ra = r["stages"][s]["flow_skbs"], r["stages"][s]["flow_segs_per_skb"]
                    if not (sk["delta"] or ra["delta"]):
                        continue
                    flag = " ❌" if sk["regression"] or ra["regression"] else ""
                    label = r["flow"].replace("|", "\\|")  # a pipe ends a Markdown table cell
                    lines.append(
                        f"| `{label}` | {STAGE_TITLES[s]} | {sk['baseline']:,} → {sk['current']:,} | "
                        f"{ra['baseline']:.2f} → {ra['current']:.2f} | {fmt_change(ra['change_pct'])}{flag} |"
                    )
            if len(changed) > _FLOW_LIMIT:
                lines.append(
                    f"\n… and {len(changed) - _FLOW_LIMIT} more changed flows (see `--format json`)."
                )
        else:
            lines += ["", f"No flow changed ({len(k['flows'])} compared)."]
        for what, fl in (("baseline", k["flows_only_in_baseline"]), ("current", k["flows_only_in_current"])):
            if fl:
                lines.append(f"\n{len(fl)} flow(s) only in the {what}.")
    lines += ["", "```", cmp["summary"], "```"]
    return "\n".join(lines)


def render_table(cmp: dict, console) -> None:
    """Print the comparison with rich tables on ``console``."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    limit = cmp["max_regression_pct"]

    def say(text: str, style: str | None = None) -> None:
        console.print(Text(text, style=style or ""), highlight=False, soft_wrap=True)

    say(_input_line(cmp))
    say(f"baseline {cmp['baseline']['document']}, current {cmp['current']['document']}")
    for n in cmp["notes"]:
        say(f"note: {n}", "yellow")
    for k in cmp["kernels"]:
        t = Table(title=f"GRO aggregation diff, kernel {k['label']}", box=box.SIMPLE_HEAD)
        t.add_column("metric")
        for s in STAGES:
            t.add_column(f"baseline\n{STAGE_TITLES[s]}", justify="right")
            t.add_column(f"current\n{STAGE_TITLES[s]}", justify="right")
            t.add_column(f"Δ\n{s}", justify="right")
        for name in _STAGE_ROWS:
            row: list = [METRICS[name].label]
            for s in STAGES:
                c = k["stages"][s][name]
                style = "bold red" if c["regression"] else ("dim" if not c["delta"] else "")
                row += [
                    fmt_value(c["baseline"]),
                    fmt_value(c["current"]),
                    Text(
                        "n/a" if c["delta"] is None else f"{fmt_delta(c['delta'])} ({_cell_change(c)})",
                        style=style,
                    ),
                ]
            t.add_row(*row)
        console.print(t)
        changed = _changed_flows(k)
        if changed:
            ft = Table(title=f"flows that changed ({len(changed)} of {len(k['flows'])})", box=box.SIMPLE_HEAD)
            ft.add_column("flow", overflow="fold")
            for s in STAGES:
                ft.add_column(f"skbs\n{s}", justify="right")
                ft.add_column(f"segs/skb\n{s}", justify="right")
            for r in changed[:_FLOW_LIMIT]:
                cells: list = [r["flow"]]
                for s in STAGES:
                    sk, ra = r["stages"][s]["flow_skbs"], r["stages"][s]["flow_segs_per_skb"]
                    style = "bold red" if sk["regression"] or ra["regression"] else ""
                    cells += [
                        Text(f"{sk['baseline']:,} → {sk['current']:,}", style=style),
                        Text(f"{ra['baseline']:.2f} → {ra['current']:.2f}", style=style),
                    ]
                ft.add_row(*cells)
            console.print(ft)
            if len(changed) > _FLOW_LIMIT:
                say(f"… and {len(changed) - _FLOW_LIMIT} more changed flows (see --format json)")
        else:
            say(f"no flow changed ({len(k['flows'])} compared)", "dim")
    for r in cmp["regressions"]:
        say(f"regression: {regression_sentence(r, limit)}", "bold red")
    say(_status_text(cmp), "bold red" if cmp["regressions"] else "green")
    say(observed_sentence(cmp))
    say(cmp["summary"])
