"""Rich rendering of a replay result: one table per kernel (single mode) or a side-by-side comparison."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich import box

from ..capture.reader import path_words
from ..project import plural
from . import AGGREGATES_LABEL, BACKEND_NO_DEVICE, BACKEND_RX_CSUM, MIXED_WHY, SW_CSUM_LABEL, backend_recipe
from .document import summary_line
from .kernel_lines import kernel_lines, kernels_words
from .verbatim import VerbatimTable, say, verbatim
from .verdict.input_words import filtered_text
from .verdict.words import drop_counts, kernel_label
from .verdict_lines import verdict_lines

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

STAGE_TITLES = {"phys": "phys NAPI", "tunnel": "tunnel gro_cells"}
STAGES = ("phys", "tunnel")
NO_SKBS = "–"  # a per-skb figure of a stage that delivered no skb


def _skbs_in(st, stage: str) -> int:
    # phys: every wire frame enters napi_gro_receive as one skb; tunnel: the skbs decapsulated and queued to
    # gro_cells, each carrying one or more segments (a phys aggregate stays one skb)
    return st.frames_in if stage == "phys" else st.skbs_in


#: (label, getter(stage stats, stage name), per-skb figure: "–" when the stage delivered no skb)
ROWS = (
    ("skbs in", _skbs_in, False),
    ("segments in (wire frames)", lambda st, s: st.frames_in, False),
    ("skbs delivered", lambda st, s: st.skbs, False),
    (AGGREGATES_LABEL, lambda st, s: st.aggregates, False),
    ("segments / skb, mean", lambda st, s: round(st.mean_segs, 2), True),
    ("segments / skb, max", lambda st, s: st.max_segs, True),
    ("bytes (skb->len)", lambda st, s: st.bytes, False),
    (SW_CSUM_LABEL, lambda st, s: st.sw_csum_bytes, False),
)


def value(ks, stage: str, row) -> object:
    """A row's value for kernel ``ks`` at ``stage``: a number, None (not measured by this backend) or NO_SKBS."""
    _label, get, per_skb = row
    st = ks.stages[stage]
    if per_skb and not st.skbs:
        return NO_SKBS
    return get(st, stage)


def _fmt(v) -> str:
    if v is None:
        return "n/a"  # not measured by this backend
    if isinstance(v, str):
        return v
    return f"{v:,.2f}" if isinstance(v, float) else f"{v:,}"


def delta_text(a, b) -> str:
    """``b - a`` signed, "0", "n/a" (not measured) or NO_SKBS (a stage without skbs on either side)."""
    if a is None or b is None:
        return "n/a"
    if isinstance(a, str) or isinstance(b, str):
        return NO_SKBS
    d = b - a
    if d == 0:
        return "0"
    return f"{d:+,.2f}" if isinstance(d, float) else f"{d:+,}"


def kernels_by_release(result) -> list:
    """The result's kernels ordered by release (oldest first), whatever the order of the options."""
    from .verdict import release_order

    models = {m.name: m for m in getattr(result.config, "kernels", ()) if m is not None}
    return sorted(result.kernels, key=lambda k: release_order(models.get(k.name, k)))


def table_title(kernels) -> str:
    if len(kernels) == 1:
        return f"GRO aggregation, kernel {kernel_label(kernels[0].name, kernels[0].release)}"
    names = " vs ".join(kernel_label(k.name, k.release) for k in kernels)
    return f"GRO aggregation, {names}"


def delta_head(kernels) -> str:
    """The Δ column's name for ``kernels`` (by release, oldest first): Δ is newest − oldest; with three kernels or
    more the pair is named (``Δ post-fix − 5.10``), with two it is the only pair (``Δ``)."""
    if len(kernels) > 2:
        return f"Δ {kernels[-1].name} − {kernels[0].name}"
    return "Δ"


def grid(kernels, stages=STAGES) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the comparison: per stage one column per kernel (by release) and, with several
    kernels, Δ (newest − oldest, ``delta_head``). Shared by the rich table and the Markdown table."""
    head = ["metric"]
    for s in stages:
        head += [f"{k.name} {STAGE_TITLES[s]}" for k in kernels]
        if len(kernels) > 1:
            pair = delta_head(kernels).removeprefix("Δ").strip()
            head.append(f"Δ {s}" + (f" ({pair})" if pair else ""))
    rows = []
    for row in ROWS:
        cells = [row[0]]
        for s in stages:
            vals = [value(k, s, row) for k in kernels]
            cells += [_fmt(v) for v in vals]
            if len(kernels) > 1:
                cells.append(delta_text(vals[0], vals[-1]))
        rows.append(cells)
    return head, rows


def _rich_table(title: str, kernels, stages) -> Table:
    t = VerbatimTable(title=title, box=box.SIMPLE_HEAD)
    t.add_column("metric")
    for s in stages:
        for k in kernels:
            # stacked (one stage per table): the stage is in the title
            t.add_column(k.name if len(stages) == 1 else f"{k.name}\n{STAGE_TITLES[s]}", justify="right")
        if len(kernels) > 1:
            t.add_column(f"{delta_head(kernels)}\n{s}", justify="right")
    _head, rows = grid(kernels, stages)
    for cells in rows:
        t.add_row(*(verbatim(c, "dim") if c in ("0", NO_SKBS) and i else c for i, c in enumerate(cells)))
    return t


def print_uncut(console: Console, table: Table) -> None:
    """Print ``table`` on ``console`` with no cell cut short: when its natural width (every cell on one line) does
    not fit, the text columns (left-justified: metric labels, flow names, switch names) wrap and fold a word longer
    than the column, while the number columns (right-justified) keep each cell on one line, and if even then the
    table is wider than the console it is printed at the width it needs (the terminal wraps the lines; nothing is
    dropped). rich's default cuts such a cell with an ellipsis or crops it: the diff's phys Δ of the fix sample read
    "(+1,600.…" at 80 columns, and folding numbers split 23,244 into "23,24" over "4", a different number."""
    from rich.measure import Measurement

    wide = console.options.update_width(1 << 20)
    if Measurement.get(console, wide, table).maximum <= console.width:
        console.print(table)
        return
    from rich.cells import cell_len

    need = 4  # the outer edges' padding
    for col in table.columns:
        numbers = col.justify == "right"
        col.no_wrap = numbers
        col.overflow = "fold"
        lines = [ln for c in (col.header, *col.cells) for ln in str(getattr(c, "plain", c)).splitlines()]
        words = [cell_len(w) for ln in lines for w in (ln.split() if not numbers else [ln])]
        need += 2 + (max(words, default=1) if numbers else min(max(words, default=1), 12))
    width = console.width
    console.width = max(width, need, Measurement.get(console, wide, table).minimum)
    try:
        console.print(table)
    finally:
        console.width = width


def render_tables(result, console: Console) -> None:
    """The numbers: one table with every stage side by side when it fits ``console.width``, else stacked (one
    table per stage); kernels by release."""
    kernels = kernels_by_release(result)
    title = table_title(kernels)
    if len(kernels) == 2 and [k.release for k in kernels] == ["5.11", "5.12"]:
        title = "GRO aggregation, before vs after 89e5c58fc1e2"
    wide = _rich_table(title, kernels, STAGES)
    natural = console.measure(wide, options=console.options.update(max_width=10_000)).maximum
    if natural <= console.width:
        console.print(wide)
        return
    for s in STAGES:
        print_uncut(console, _rich_table(f"{title}: {STAGE_TITLES[s]}", kernels, (s,)))


def csum_lines(kernels) -> list[str]:
    """Where the CPU checksummed bytes in software, per kernel (``kernels`` by release), when the kernels sum them
    at different stages: one line, e.g. "bytes the CPU checksummed: pre-fix 23,584 at tunnel gro_cells, post-fix
    23,584 at phys NAPI: the same total in each kernel, summed at another stage (not more work)" (the fix sample:
    post-fix the phys stage verifies the inner checksums gro_cells verified pre-fix); when the totals differ (GRO
    off on the tunnel device: pre-fix no GRO stage sums them) it says that the count is the GRO stages' and that
    TCP verifies what they leave (net/ipv4/tcp_ipv4.c ``tcp_v4_rcv``: ``skb_checksum_init``, then
    ``tcp_checksum_complete``); none for one kernel, equal splits, or counters not measured (None: the kernel
    backend, ``--flow``). Then where a stage summed more bytes than its skbs hold, what the row counts (newcomer35
    read 23,584 over 23,244 as more work than data; breaker51: not always merging, frames summed twice too)."""
    line = csum_words([(k.name, tuple(k.stages[s].sw_csum_bytes for s in STAGES)) for k in kernels])
    st = [(k.name, s, k.stages[s]) for k in kernels for s in STAGES]
    over = [f"{n} {STAGE_TITLES[s]}" for n, s, x in st if (x.sw_csum_bytes or 0) > x.bytes]
    why = (
        f"bytes the CPU checksummed exceed bytes (skb->len) at {', '.join(over)}: the row counts every software sum, "
        "GRO's of each frame before it merges the frame (a merged skb keeps one frame's headers) and, at the phys "
        "device, udp_rcv's of each skb whose UDP checksum GRO did not settle (so a frame can count twice)"
    )
    return [x for x in (line, why if over else "") if x]


def csum_words(named: list[tuple[str, tuple]]) -> str:
    """The line of ``csum_lines`` for ``named``: (who, (phys bytes, tunnel bytes)) in order (kernels, or diff's
    baseline and current); "" for fewer than two, equal splits, or a count not measured (None). Different totals
    are said to be the GRO stages' and udp_rcv's count only (report/stats.py ``stack_outcome`` adds the stack's UDP
    sums to the phys stage's): a sum they skip may be done later (tcp_v4_rcv) or never (a frame dropped first),
    which the line does not judge (breaker51: it said every stack sum was left out)."""
    splits = [sp for _, sp in named]
    if len(named) < 2 or len(set(splits)) < 2 or any(v is None for sp in splits for v in sp):
        return ""
    parts = []
    for who, sp in named:
        where = " and ".join(f"{v:,} at {STAGE_TITLES[s]}" for s, v in zip(STAGES, sp, strict=True) if v)
        parts.append(f"{who} {where or 0}")  # as the table's row (newcomer36: "none")
    line = "bytes the CPU checksummed: " + ", ".join(parts)
    if len({sum(sp) for sp in splits}) == 1:
        line += ": the same total in each kernel, summed at another stage (not more work)"
    else:  # the counter is the GRO stages' and udp_rcv's: whether TCP (or none, for a dropped frame) sums what
        # they leave depends on the frame, so the line claims nothing about it
        line += (
            ": the totals differ; counted in the GRO stages and udp_rcv only (checksums verified later in the stack, "
            "by TCP, are not counted)"
        )
    return line


def reason_lines(result) -> list[str]:
    """Per kernel and stage: what ended the skbs (top 3, then "and N more", adding up to the skbs delivered),
    and the phys skbs the stack did not decapsulate."""
    from .verdict import reason_list, verdict_of

    models = verdict_of(result).models
    lines = []
    for ks in kernels_by_release(result):
        for s in STAGES:
            st = ks.stages[s]
            if st.reasons:
                what = "phys skbs" if s == "phys" else "tunnel skbs"
                lines.append(
                    f"{what} ended by ({ks.name}, {st.skbs:,} {plural(st.skbs, 'skb')}): "
                    + reason_list(st.reasons, 3, models.get(ks.name))
                )
        drops = drop_counts(ks.stack, ks.stack_frames)
        if drops:
            lines.append(f"not decapsulated as VXLAN/Geneve ({ks.name}): {drops}")
    return lines


def input_line(inp: dict) -> str:
    """The ``input:`` line from a document's ``input`` object (``InputStats.as_dict``): frames read and replayed,
    frames skipped and why, super-frames resegmented, frames filtered. The replay's text and Markdown print it
    (``input_lines``), and so does explain's text (report/explain.py ``render_text``)."""
    skipped = ", ".join(f"{k} {v:,}" for k, v in sorted(inp["skipped"].items())) or "none"
    resegmented = ""
    if inp.get("resegmented_frames") or inp.get("oversize_not_split"):
        made, kept = inp["resegmented_frames"], sum(inp["oversize_not_split"].values())
        resegmented = (
            f"; resegmented: {made:,} {plural(made, 'super-frame')} into "
            f"{inp['segments_created']:,} {plural(inp['segments_created'], 'segment')}"
            + (f", {kept:,} above the MTU kept as captured" if kept else "")
        )
    filtered = inp.get("filtered")
    if filtered and any(filtered.values()):
        resegmented += "; " + filtered_text(filtered)
    read, replayed = inp["frames_read"], inp["frames_replayed"]
    name = path_words(inp["path"]) if inp["path"] else "(frames)"
    return (
        f"input: {name}: {read:,} {plural(read, 'frame')} read, {replayed:,} replayed; "
        f"skipped: {skipped}{resegmented}"
    )


def note_lines(inp: dict) -> list[str]:
    """The input notes of a document's ``input`` object (``InputStats.notes``, sim/notes.py: records longer than
    the declared snaplen or cut short, --resegment segments larger than --mtu, tunnel ports, how the capture was
    taken), one ``note:`` line each: the replay's text and Markdown print them (``input_lines``), and so does
    explain's text (report/explain.py ``render_text``)."""
    return [f"note: {n}" for n in inp.get("notes", ())]


def nic_line(result) -> str:
    """The report's NIC line: the simulated NIC and poll model of ``result.config``, or with the kernel backend
    (``result.backend``) what its recipe does (``backend_recipe``, ``BACKEND_RX_CSUM``; no device when it sent no
    frame), and the kernels, said to lack the VLAN GRO offloads where they do (--no-vlan-offload, or the backend's)."""
    cfg = result.config
    backend = getattr(result, "backend", None) == "kernel"
    kernels = kernels_words(cfg, backend)
    if backend:
        sent = result.input.frames_replayed  # validate.py account_sent: the frames the backend sent
        if not sent:
            return f"NIC: {BACKEND_NO_DEVICE} (--rx-csum {cfg.rx_csum} asked), HZ {cfg.hz}; {kernels}"
        rss, poll = backend_recipe(sent)
        return (
            f"NIC: the kernel backend's veth: --rx-csum {cfg.rx_csum} ({BACKEND_RX_CSUM[cfg.rx_csum]}), RSS "
            f"{rss}; poll model {poll}, HZ {cfg.hz}; {kernels}"
        )
    return (
        f"NIC: {cfg.nic_words() if hasattr(cfg, 'nic_words') else '--rx-csum ' + cfg.rx_csum}, RSS {cfg.rss}"
        + (f", {cfg.rx_queues} RX queues" if getattr(cfg, "rx_queues", 1) > 1 else "")
        + f"; poll model {cfg.poll_words() if hasattr(cfg, 'poll_words') else cfg.poll.describe()}, weight "
        f"{cfg.weight}, HZ {cfg.hz}; {kernels}"
    )


def input_lines(result) -> list[str]:
    inp = result.input
    cfg = result.config
    doc = inp.as_dict()  # the JSON document's input object: the input line and notes are rendered from it
    classes = ", ".join(f"{k} {v:,}" for k, v in sorted(inp.classes.items())) or "none"
    lines = [
        input_line(doc),
        f"frames: {classes}",
        nic_line(result),
        *kernel_lines(
            cfg.kernels, measured=getattr(result, "backend", None) == "kernel" and inp.frames_replayed > 0
        ),
        *engine_lines(getattr(result, "engine", None)),
        *note_lines(doc),
    ]
    rows = getattr(result, "flow_rows", None)
    retired = rows.retired if rows is not None else 0  # flows with counters, retired during the replay
    if retired:
        lines.append(
            f"flows: {retired:,} retired before the end of the input (ended: --flow-timeout, "
            f"--flow-close-timeout), at most {result.flows_live_max:,} live at once"
        )
    if getattr(cfg, "flow", None) is not None:
        shown = len({f for k in result.kernels for f in k.flows}) + retired
        lines.append(
            f"--flow {cfg.flow}: {shown:,} of {len(result.flows):,} {plural(len(result.flows), 'flow')}, "
            f"{inp.selected_frames:,} of "
            f"{inp.frames_replayed:,} {plural(inp.frames_replayed, 'frame')} replayed"
            + (
                "; the other flows' frames went through the kernels too, the counts below are the selected flows' "
                "(bytes the CPU checksummed: n/a, a NAPI-wide counter)"
                if shown < len(result.flows)
                else " (every flow selected; bytes the CPU checksummed: n/a, a NAPI-wide counter)"
            )
            + _shared_words(result.kernels)
        )
    return lines


def _shared_words(kernels) -> str:
    """Under ``--flow``: "; at tunnel gro_cells (6.18) 5 skbs carried 20 frames of flows not selected too …" (the
    kernels named when not all of them), the skbs that GRO merged from selected and other flows' frames
    (``KernelStats.shared``, ``MIXED_WHY``), which the table counts with the selected frames only; "" when there are
    none."""
    parts = []
    for s in STAGES:
        by_kernel = {k.name: tuple(k.shared[s]) for k in kernels if k.shared[s][0]}
        for (skbs, frames), names in _grouped(by_kernel).items():
            who = f" ({', '.join(names)})" if len(names) < len(kernels) else ""
            parts.append(
                f"at {STAGE_TITLES[s]}{who} {skbs:,} {plural(skbs, 'skb')} carried {frames:,} "
                f"{plural(frames, 'frame')} of flows not selected too"
            )
    if not parts:
        return ""
    return (
        "; "
        + "; ".join(parts)
        + f" ({MIXED_WHY}): counted with the selected flows' frames as segments, their "
        "bytes whole (explain --flow says where each flow's frames went)"
    )


def _grouped(by_kernel: dict) -> dict:
    """{value: [kernel names]} of {kernel name: value}, in kernel order."""
    out: dict = {}
    for name, v in by_kernel.items():
        out.setdefault(v, []).append(name)
    return out


def engine_lines(engine: dict | None) -> list[str]:
    """The ``engine:`` line from the JSON document's ``engine`` object (sim/api.py ``engine``): which path ran,
    how many polls the cache answered, or why the batch path did not run; [] without one (the kernel backend)."""
    if engine is None:
        return []
    polls = engine["polls"]
    if engine["path"] == "batch":
        if not polls:  # nothing was replayed: no poll ran, none was answered
            return ["engine: batch (no poll: no frame was replayed)"]
        return [
            f"engine: batch ({engine['polls_cached']:,} of {polls:,} {plural(polls, 'poll')} answered from the cache)"
        ]
    why = "; ".join(engine["reasons"])
    if not polls:  # the reasons are why the path was chosen, not why nothing was replayed (newcomer35)
        return [f"engine: frame-by-frame (no poll: no frame was replayed), the path chosen for: {why}"]
    return [f"engine: frame-by-frame ({polls:,} {plural(polls, 'poll')} run through the kernels): {why}"]


def _histogram(st, width: int = 30) -> list[str]:
    import numpy as np

    nz = np.nonzero(st.segs_hist)[0]
    if not len(nz):
        return []
    peak = int(st.segs_hist.max())
    lines = []
    for i in nz:
        n = int(st.segs_hist[i])
        bar = "█" * max(1, round(width * n / peak))
        lines.append(f"  {int(i):>3} {'seg ' if int(i) == 1 else 'segs'} │{bar} {n:,}")
    return lines


def render(result, console: Console, hist: bool = True) -> None:
    """Print the input summary, the tables, the reasons, the verdict and the SUMMARY line."""
    for line in input_lines(result):
        say(console, line)
    render_tables(result, console)
    kernels = kernels_by_release(result)
    for line in csum_lines(kernels):
        say(console, line)
    if hist:
        for ks in kernels:
            for stage in STAGES:
                lines = _histogram(ks.stages[stage])
                if lines:
                    say(console, f"segments per skb, {ks.name} {STAGE_TITLES[stage]}:")
                    for line in lines:
                        say(console, line)
    for line in reason_lines(result) + verdict_lines(result):
        say(console, line)
    say(console, summary_line(result))


def markdown(result) -> str:
    """The same content as the table, in Markdown (CI job summaries): input lines, the table with its deltas,
    the end reasons, the verdict with the affected flows, and the SUMMARY line."""
    lines = [f"- {x}" for x in input_lines(result)] + [""]
    kernels = kernels_by_release(result)
    head, rows = grid(kernels)
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|---|" + "---:|" * (len(head) - 1))
    for cells in rows:
        lines.append("| " + " | ".join(cells) + " |")
    csum = csum_lines(kernels)
    lines += ["", *csum] if csum else []
    extra = reason_lines(result)
    if extra:
        lines += [""] + [f"- {x}" for x in extra]
    v = verdict_lines(result)
    if v:
        lines += ["", v[0]] + ([""] + [f"- {x.strip()}" for x in v[1:]] if v[1:] else [])
    lines += ["", "```", summary_line(result), "```"]
    return "\n".join(lines)
