"""Rendering a ``compare`` result: the observed change, regression sentences, the Markdown report and the rich
table (``gro-replay diff --format markdown|table``).
"""

from __future__ import annotations

from ...capture.digest import digest_words, recorded
from ...project import plural
from ..stats import STAGES
from .comparison import STAGE_TITLES, _loss_text, limit_text, pct_text
from .inputs import input_words, inputs_words, same_input
from .load import document_name
from .metrics import METRICS, loss_digits, loss_pct

# -- rendering ----------------------------------------------------------------------------------------------------------
#: the ratios, whose value is 0 only where no skb was delivered (``metrics.ratio``): shown "–", as the replay's
#: table shows a stage without skbs, never as a mean of 0.00 segments (newcomer37)
_RATIOS = ("segs_per_skb", "flow_segs_per_skb")


def fmt_value(v, metric: str | None = None, none: str = "–") -> str:
    """A compared value: "n/a" for None, a float to two decimals, an int with separators; a ratio ``metric``'s 0
    (no skb delivered) as ``none``."""
    if v is None:
        return "n/a"
    if metric in _RATIOS and not v:
        return none
    if isinstance(v, float):
        return f"{v:,.2f}"
    return f"{v:,}"


def fmt_delta(v) -> str:
    if v is None:
        return "n/a"
    if not v:
        return "0"
    return f"{v:+,.2f}" if isinstance(v, float) else f"{v:+,}"


def _delta(c: dict, metric: str) -> str:
    """A cell's Δ (``fmt_delta``); "–" for a ratio with no skb on one side (``fmt_value``): no mean to subtract."""
    if metric in _RATIOS and c["delta"] is not None and not (c["baseline"] and c["current"]):
        return "–"
    return fmt_delta(c["delta"])


def _cell_change(c: dict, metric: str | None = None, limit: float | None = None) -> str:
    """A cell's change (``fmt_change``); a failed check's (``regression``) as its loss beside ``limit`` reads
    (``loss_change``), where the cell's ``metric`` and the threshold are given."""
    if c["delta"] is None:
        return "n/a"
    if metric is not None and limit is not None and c.get("regression") and c.get("loss_pct") is not None:
        return loss_change(metric, c["loss_pct"], limit)
    return fmt_change(c["change_pct"])


def loss_change(metric: str, loss: float, limit: float) -> str:
    """A failed check's change, signed as the metric moves when it loses (``-`` where higher is better, ``+`` where
    lower is: skbs, checksummed bytes), with the decimals that show it beyond ``limit`` (``loss_digits``)."""
    sign = -1 if METRICS[metric].better == "higher" else 1
    return pct_text(sign * loss, signed=True, digits=loss_digits(loss, limit, True))


def _pair(c: dict) -> str:
    """A ratio cell's "baseline → current", each "n/a" where there is none (a flow whose frames all went up in
    other flows' skbs has no segments per skb of its own)."""
    return f"{fmt_value(c['baseline'], 'flow_segs_per_skb')} → {fmt_value(c['current'], 'flow_segs_per_skb')}"


def fmt_change(pct) -> str:
    """A cell's change in percent of its baseline (``pct_text``, signed), or ``new`` from a zero baseline."""
    return "new" if pct is None else pct_text(pct, signed=True)


def observed_sentence(cmp: dict) -> str:
    """The observed change beside the threshold: the largest loss among the checked values."""
    w = cmp.get("largest_loss")
    limit = cmp["max_regression_pct"]
    if not w:
        return f"nothing checked (allowed loss {limit_text(limit)})"
    if w["loss_pct"] == 0:
        return f"observed: no checked value lost anything (allowed loss {limit_text(limit)})"
    m = METRICS[w["metric"]]
    flow = f", flow {w['flow']}" if w["flow"] else ""
    loss = _loss_text(w, limit, bool(cmp["regressions"]))
    return (
        f"observed: largest loss {loss} ({w['kernel']}, {STAGE_TITLES[w['stage']]}{flow}: "
        f"{m.label.replace(' (per flow)', '')} {fmt_value(w['baseline'], m.name, 'no skb')} → "
        f"{fmt_value(w['current'], m.name, 'no skb')}); "
        f"allowed loss {limit_text(limit)}"
    )


def regression_sentence(r: dict, limit: float) -> str:
    """One line naming a regression: kernel, stage, (flow,) metric, values, change and the threshold."""
    m = METRICS[r["metric"]]
    where = f"{r['kernel']}, {STAGE_TITLES[r['stage']]}"
    what = m.label.replace(" (per flow)", "")
    flow = f", flow {r['flow']}" if r["flow"] else ""
    return (
        f"{where}{flow}: {what} {fmt_value(r['baseline'], m.name, 'no skb')} → "
        f"{fmt_value(r['current'], m.name, 'no skb')} "
        f"({fmt_change(None) if r['loss_pct'] is None else loss_change(r['metric'], r['loss_pct'], limit)}; "
        f"allowed loss {limit_text(limit)})"
    )


def _status_text(cmp: dict) -> str:
    n = len(cmp["regressions"])
    if not n:
        checked = ", ".join(cmp["metrics_checked"]) or "none"
        return f"OK: no checked metric ({checked}) lost more than {limit_text(cmp['max_regression_pct'])}."
    limit = limit_text(cmp["max_regression_pct"])
    return f"REGRESSION: {n:,} checked {plural(n, 'value')} lost more than {limit}."


def _input_line(cmp: dict) -> str:
    b, c = cmp["baseline"], cmp["current"]
    bi, ci = b.get("input") or {}, c.get("input") or {}
    if not (bi.get("path") or recorded(bi)) and not (ci.get("path") or recorded(ci)):
        return "input: neither document records its input"
    same, by = same_input(bi, ci)
    if same and by:
        b, c = input_words(bi, short=True), input_words(ci, short=True)
        said = digest_words(by, recorded(bi)[by])
        if b != c and bi.get("path") and ci.get("path"):
            # one capture under two names (a file, and the same bytes piped in: "standard input"): both named
            return f"input: {b} (baseline) and {c} (current), the same bytes ({said})"
        if bool(bi.get("path")) != bool(
            ci.get("path")
        ):  # the one name recorded, and whose document lacks one
            named, lacking = (b, "current") if bi.get("path") else (c, "baseline")
            return f"input: {named} ({said}; the {lacking} document records no path)"
        return f"input: {input_words(bi, only=by).removeprefix('replayed ')}"
    if same:  # neither records a digest: one input by its name (comparison.py ``same_input``)
        return (
            f"input: {input_words(bi, short=True)} (neither document records a digest: the same by its name)"
        )
    return f"inputs: {inputs_words(bi, ci)}"


_STAGE_ROWS = ("skbs", "segs_per_skb", "aggregates", "sw_csum_bytes")
_FLOW_LIMIT = 30


def _changed_flows(k: dict) -> list[dict]:
    """The flow rows of kernel pair ``k`` that changed, in the order the tables list them (one order for the table and
    the Markdown): those with a checked value beyond the threshold (a regression) first, then the rest; within
    each, by the skbs the change added or removed (|current − baseline| summed over the stages: what the flow moved
    the stage totals by), largest first; then by the larger loss of segments per skb (percent of the baseline); then
    in the documents' order. A loss of skbs is not measured from zero here: a flow that went from no skb to 10 (its
    frames dropped in the baseline, delivered now) ranks by those 10, not first as an infinite loss
    (``_flow_change`` names it)."""
    rows = [r for r in k["flows"] if r["changed"]]

    def rank(r: dict) -> tuple[bool, int, float]:
        stages = r["stages"].values()
        skbs = sum(abs(st["flow_skbs"]["delta"] or 0) for st in stages)
        ratio = METRICS["flow_segs_per_skb"]
        loss = max(
            (
                loss_pct(ratio, c["baseline"], c["current"])
                for c in (st["flow_segs_per_skb"] for st in stages)
                if c["baseline"] is not None and c["current"] is not None  # n/a: nothing to rank by
            ),
            default=0.0,
        )
        flagged = any(c["regression"] for st in stages for c in st.values())
        return (not flagged, -skbs, -loss)

    return sorted(rows, key=rank)


def _flow_change(sk: dict, ra: dict, limit: float | None = None, metric: str = "flow_segs_per_skb") -> str:
    """A changed flow's change at one stage (``sk``: its skbs cell, ``ra``: its segments-per-skb cell, of
    ``metric``): "delivered in current only" when it had no skb there in the baseline and has some now, "not
    delivered in current" for the reverse (a flow whose frames went up in other flows' skbs has n/a segments per
    skb, not 0: it was delivered, and its change is that cell's), else the segments-per-skb change."""
    if ra["baseline"] is not None and not sk["baseline"] and sk["current"]:
        return "delivered in current only"
    if ra["current"] is not None and sk["baseline"] and not sk["current"]:
        return "not delivered in current"
    return _cell_change(ra, metric, limit)


def _stage_change(stage: dict, name: str, limit: float | None, short: bool = False) -> str:
    """The change of a stage's ``name`` cell (``stage``: a ``comparison.kernels[].stages`` entry): segments per skb
    where the stage delivered skbs in one document only as a flow's reads (``_flow_change``; ``short``: "none now"
    and "new", for the table's narrow Δ column), else ``_cell_change``."""
    if name != "segs_per_skb":
        return _cell_change(stage[name], name, limit)
    if not (stage["skbs"]["baseline"] or stage["skbs"]["current"]):
        return "no skb"
    said = _flow_change(stage["skbs"], stage[name], limit, name)
    if short:
        return {"not delivered in current": "none now", "delivered in current only": "new"}.get(said, said)
    return said


#: flows named in an "only in" line; the others are counted
_ONLY_IN_NAMED = 3


def _only_in(k: dict, quote: str) -> list[str]:
    """The flows of one kernel pair found in one document only, not compared (their key differs: another capture's
    flow, or a document that keys it otherwise), a line per document, for every format: "2 flows only in the
    baseline, not compared: A; B" ("1 flow …" for one; ``quote`` around each label: Markdown's backquote); at
    most ``_ONLY_IN_NAMED`` named, then how many more (``--format json`` lists them all)."""
    lines = []
    omitted = k.get("flows_omitted") or {}
    for what, other, fl in (
        ("baseline", "current", k["flows_only_in_baseline"]),
        ("current", "baseline", k["flows_only_in_current"]),
    ):
        if fl:
            named = "; ".join(f"{quote}{f}{quote}" for f in fl[:_ONLY_IN_NAMED])
            more = (
                f" and {len(fl) - _ONLY_IN_NAMED:,} more (see --format json)"
                if len(fl) > _ONLY_IN_NAMED
                else ""
            )
            n = omitted.get(other) or 0
            # the other document sums flows it does not list (--flows-max): these may be among them (breaker35)
            where = (
                f"listed only in the {what} (the {other} sums {n:,} {plural(n, 'flow')} it does not list, "
                "--flows-max: they may be among them)"
                if n
                else f"only in the {what}"
            )
            lines.append(f"{len(fl):,} {plural(len(fl), 'flow')} {where}, not compared: {named}{more}")
    return lines


def render_markdown(cmp: dict) -> str:
    """The comparison as Markdown for a CI job summary (``$GITHUB_STEP_SUMMARY``)."""
    limit = cmp["max_regression_pct"]
    lines = ["## gro-replay diff", "", f"**{_status_text(cmp)}**", "", observed_sentence(cmp), ""]
    lines.append(f"- {_input_line(cmp)}")
    base, cur = (document_name(cmp[r]["document"]) for r in ("baseline", "current"))
    lines.append(f"- baseline: `{base}`, current: `{cur}`")
    lines.append(
        f"- checked: {', '.join(f'`{m}`' for m in cmp['metrics_checked']) or 'nothing'}; allowed loss {limit_text(limit)}"
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
                    f"| {METRICS[name].label} | {STAGE_TITLES[s]} | {fmt_value(c['baseline'], name)} | "
                    f"{fmt_value(c['current'], name)} | {_delta(c, name)} | "
                    f"{_stage_change(k['stages'][s], name, limit)}{flag} |"
                )
        changed = _changed_flows(k)
        unchanged = len(k["flows"]) - len(changed)
        if changed:
            lines += [
                "",
                f"Flows that changed ({len(changed):,}; {unchanged:,} unchanged):",
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
                        f"{_pair(ra)} | {_flow_change(sk, ra, limit)}{flag} |"
                    )
            if len(changed) > _FLOW_LIMIT:
                lines.append(
                    f"\n… and {len(changed) - _FLOW_LIMIT:,} more changed flows (see `--format json`)."
                )
        else:
            lines += ["", f"No flow changed ({len(k['flows']):,} compared)."]
        lines += [f"\n{line}." for line in _only_in(k, "`")]
    lines += ["", "```", cmp["summary"], "```"]
    return "\n".join(lines)


def _stage_table(k: dict, no_wrap: bool, limit: float | None = None):
    """The per-stage table of one kernel pair ``k`` (a ``comparison.kernels[]`` entry). ``no_wrap``: the metric
    labels ("skbs delivered with ≥2 segs") and the changes ("-2 (-100.0%)") stay on one line, the stage titles of the
    headers a word a line; without it every cell may wrap (terminals too narrow for that)."""
    from rich import box

    from ..verbatim import VerbatimTable, verbatim

    t = VerbatimTable(title=f"GRO aggregation diff, kernel {k['label']}", box=box.SIMPLE_HEAD)
    t.add_column("metric", no_wrap=no_wrap)
    for s in STAGES:
        title = STAGE_TITLES[s].replace(" ", "\n") if no_wrap else STAGE_TITLES[s]
        t.add_column(f"baseline\n{title}", justify="right", no_wrap=no_wrap)
        t.add_column(f"current\n{title}", justify="right", no_wrap=no_wrap)
        t.add_column(f"Δ\n{s}", justify="right", no_wrap=no_wrap)
    for name in _STAGE_ROWS:
        row: list = [METRICS[name].label]
        for s in STAGES:
            c = k["stages"][s][name]
            style = "bold red" if c["regression"] else ("dim" if not c["delta"] else "")
            row += [
                fmt_value(c["baseline"], name),
                fmt_value(c["current"], name),
                verbatim(
                    "n/a"
                    if c["delta"] is None
                    else f"{_delta(c, name)} ({_stage_change(k['stages'][s], name, limit, short=True)})",
                    style,
                ),
            ]
        t.add_row(*row)
    return t


def render_table(cmp: dict, console) -> None:
    """Print the comparison with rich tables on ``console``."""
    from rich import box
    from rich.measure import Measurement

    from ..table import print_uncut
    from ..verbatim import VerbatimTable, verbatim
    from ..verbatim import say as say_on

    limit = cmp["max_regression_pct"]

    def say(text: str, style: str = "") -> None:
        say_on(console, text, style)

    say(_input_line(cmp))
    say(
        f"baseline {document_name(cmp['baseline']['document'])}, current {document_name(cmp['current']['document'])}"
    )
    for n in cmp["notes"]:
        say(f"note: {n}", "yellow")
    for k in cmp["kernels"]:
        t = _stage_table(k, no_wrap=True, limit=limit)
        if Measurement.get(console, console.options.update_width(1 << 20), t).maximum > console.width:
            t = _stage_table(
                k, no_wrap=False, limit=limit
            )  # too narrow for whole cells: wrap them rather than cut them
        print_uncut(console, t)
        changed = _changed_flows(k)
        if changed:
            ft = VerbatimTable(
                title=f"flows that changed ({len(changed):,} of {len(k['flows']):,})", box=box.SIMPLE_HEAD
            )
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
                        verbatim(f"{sk['baseline']:,} → {sk['current']:,}", style),
                        verbatim(_pair(ra), style),
                    ]
                ft.add_row(*cells)
            print_uncut(console, ft)
            if len(changed) > _FLOW_LIMIT:
                say(f"… and {len(changed) - _FLOW_LIMIT:,} more changed flows (see --format json)")
        else:
            say(f"no flow changed ({len(k['flows']):,} compared)", "dim")
        for line in _only_in(k, ""):
            say(line, "yellow")
    for r in cmp["regressions"]:
        say(f"regression: {regression_sentence(r, limit)}", "bold red")
    say(_status_text(cmp), "bold red" if cmp["regressions"] else "green")
    say(observed_sentence(cmp))
    say(cmp["summary"])
