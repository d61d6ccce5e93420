"""Rich rendering of a replay result: one table per kernel (single mode) or a side-by-side comparison."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..kernel import reasons as R
from .document import affected_flows, summary_line, verdict

STAGE_TITLES = {"phys": "phys NAPI", "tunnel": "tunnel gro_cells"}
_ROWS = (
    ("frames in", lambda st: st.frames_in),
    ("skbs delivered", lambda st: st.skbs),
    ("aggregates (≥2 segs)", lambda st: st.aggregates),
    ("segments / skb, mean", lambda st: round(st.mean_segs, 2)),
    ("segments / skb, max", lambda st: st.max_segs),
    ("bytes (skb->len)", lambda st: st.bytes),
    ("bytes checksummed in software", lambda st: st.sw_csum_bytes),
)


def _fmt(v) -> str:
    if v is None:
        return "n/a"  # not measured by this backend
    return f"{v:,.2f}" if isinstance(v, float) else f"{v:,}"


def _delta(a, b) -> Text:
    if a is None or b is None:
        return Text("n/a", style="dim")
    d = b - a
    if d == 0:
        return Text("0", style="dim")
    s = f"{d:+,.2f}" if isinstance(d, float) else f"{d:+,}"
    return Text(s)


def input_lines(result) -> list[str]:
    inp = result.input
    cfg = result.config
    skipped = ", ".join(f"{k} {v}" for k, v in sorted(inp.skipped.items())) or "none"
    classes = ", ".join(f"{k} {v}" for k, v in sorted(inp.classes.items())) or "none"
    resegmented = ""
    if getattr(inp, "resegmented_frames", 0) or getattr(inp, "oversize_not_split", None):
        kept = sum(inp.oversize_not_split.values())
        resegmented = (
            f"; resegmented: {inp.resegmented_frames:,} super-frames into {inp.segments_created:,} segments"
            + (f", {kept:,} above the MTU kept as captured" if kept else "")
        )
    return [
        f"input: {inp.path or '(frames)'}: {inp.frames_read:,} frames read, {inp.frames_replayed:,} replayed; "
        f"skipped: {skipped}{resegmented}",
        f"frames: {classes}",
        f"NIC: {cfg.nic_words() if hasattr(cfg, 'nic_words') else '--rx-csum ' + cfg.rx_csum}, RSS {cfg.rss}"
        + (f", {cfg.rx_queues} RX queues" if getattr(cfg, "rx_queues", 1) > 1 else "")
        + f"; poll model {cfg.poll}, weight {cfg.weight}, HZ {cfg.hz}; "
        f"kernels: " + ", ".join(f"{k.name} (v{k.release})" for k in cfg.kernels),
        *kernel_lines(cfg.kernels),
    ]


def kernel_lines(kernels) -> list[str]:
    """One line per resolved kernel that is not an upstream profile: its base, its stable backports (each with
    the stable commit and first point release) and the notes of its resolution (``KernelModel.describe``)."""
    out = []
    for k in kernels:
        d = k.describe() if hasattr(k, "describe") else None
        if not d or (not d["backports"] and not d["notes"] and d["base"] == d["release"]):
            continue
        bps = ", ".join(
            f"{b['upstream']} as {b['stable_commit'][:12]} (since {b['point_release']})"
            for b in d["backports"]
        )
        out.append(
            f"kernel {d['name']}: upstream {d['base']} + "
            + (f"stable backports {bps}" if bps else "no stable backports of a modelled commit")
        )
        out += [f"  note: {n}" for n in d["notes"]]
    return out


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
        lines.append(f"  {int(i):>3} segs │{bar} {n}")
    return lines


def render(result, console: Console, hist: bool = True) -> None:
    """Print the input summary, the table(s), the verdict (compare mode) and the SUMMARY line."""
    for line in input_lines(result):
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    kernels = result.kernels
    if len(kernels) == 2:
        a, b = kernels
        t = Table(title="GRO aggregation, before vs after 89e5c58fc1e2", box=box.SIMPLE_HEAD)
        t.add_column("metric")
        for stage in ("phys", "tunnel"):
            t.add_column(f"{a.name}\n{STAGE_TITLES[stage]}", justify="right")
            t.add_column(f"{b.name}\n{STAGE_TITLES[stage]}", justify="right")
            t.add_column(f"Δ\n{stage}", justify="right")
        for label, get in _ROWS:
            row = [label]
            for stage in ("phys", "tunnel"):
                va, vb = get(a.stages[stage]), get(b.stages[stage])
                row += [_fmt(va), _fmt(vb), _delta(va, vb)]
            t.add_row(*row)
        console.print(t)
    else:
        for ks in kernels:
            t = Table(title=f"GRO aggregation, kernel {ks.name} (v{ks.release})", box=box.SIMPLE_HEAD)
            t.add_column("metric")
            for stage in ("phys", "tunnel"):
                t.add_column(STAGE_TITLES[stage], justify="right")
            for label, get in _ROWS:
                t.add_row(label, *(_fmt(get(ks.stages[s])) for s in ("phys", "tunnel")))
            console.print(t)
    if hist:
        for ks in kernels:
            for stage in ("phys", "tunnel"):
                lines = _histogram(ks.stages[stage])
                if lines:
                    console.print(f"segments per skb, {ks.name} {STAGE_TITLES[stage]}:", highlight=False)
                    for line in lines:
                        console.print(line, highlight=False, markup=False, soft_wrap=True)
    for ks in kernels:
        top = ks.stages["phys"].reasons.most_common(3)
        if top:
            console.print(
                f"phys skbs ended by ({ks.name}): "
                + "; ".join(f"{R.DESCRIPTIONS.get(k, k)} [{k}] ×{v}" for k, v in top),
                highlight=False,
                markup=False,
                soft_wrap=True,
            )
        drops = {k: v for k, v in ks.stack.items() if k != "queued"}
        if drops:
            console.print(
                f"not decapsulated ({ks.name}): " + ", ".join(f"{k} {v}" for k, v in sorted(drops.items())),
                highlight=False,
                markup=False,
                soft_wrap=True,
            )
    v = verdict(result)
    if v:
        console.print(v, highlight=False, markup=False, soft_wrap=True)
        for a in affected_flows(result)[:10]:
            console.print(
                f"  affected: {a['flow']}: phys skbs {a['phys_skbs_pre']} → {a['phys_skbs_post']}",
                highlight=False,
                markup=False,
                soft_wrap=True,
            )
    console.print(summary_line(result), highlight=False, markup=False, soft_wrap=True)
