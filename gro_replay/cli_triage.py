"""CI and triage commands: ``gro-replay diff BASELINE.json CURRENT.json`` and ``gro-replay explain CAPTURE``.

Thin click commands: parse, validate, call ``report.diff`` / ``report.explain``, print. Exit codes as everywhere:
0 success; 1 a checked metric regressed (diff); 2 usage or bad input (unknown schema version, different inputs,
an unreadable capture, a selector that matches nothing).
"""

from __future__ import annotations

import os
import sys

import click
from rich.console import Console

from .capture.reader import CaptureError
from .cli import FLOW_HELP, CheckFailed, UsageError, _progress, build_config, replay_options
from .cli import main as _cli_main
from .cli_types import BoundedInt, FiniteFloat
from .report.diff import (
    CHECKABLE,
    DEFAULT_METRICS,
    MAX_DOCUMENT_BYTES,
    DiffError,
    compare,
    load_document,
)
from .report.schema import dumps
from .sim import replay_capture


def _console() -> Console:
    from .cli import report_console

    return report_console()


@click.command("diff")
@click.argument("baseline", type=click.Path(dir_okay=False))
@click.argument("current", type=click.Path(dir_okay=False))
@click.option(
    "--max-regression",
    type=FiniteFloat(0, 1e6),
    default=0.0,
    show_default=True,
    metavar="PCT",
    help="Allowed loss of a checked metric, in percent of its baseline value. 0: any loss fails "
    "(the replay is deterministic: same input and config give the same numbers).",
)
@click.option(
    "--metric",
    "metrics",
    type=click.Choice(CHECKABLE),
    multiple=True,
    help=f"Metric checked against --max-regression (repeatable). Default: {', '.join(DEFAULT_METRICS)}.",
)
@click.option(
    "--format", "fmt", type=click.Choice(["table", "markdown", "json"]), default="table", show_default=True
)
@click.option(
    "--allow-different-input",
    is_flag=True,
    help="Compare documents of different captures (input sha256) instead of refusing.",
)
@click.option(
    "--baseline-update",
    is_flag=True,
    help="Accept CURRENT: print the diff, then copy CURRENT over BASELINE (or create it) and exit 0.",
)
@click.option(
    "--max-bytes",
    type=click.IntRange(1),
    default=MAX_DOCUMENT_BYTES,
    show_default=True,
    help="Refuse a document larger than this many bytes (it is not read beyond).",
)
@click.option("--flow", "flow", default=None, metavar="SELECTOR", help=FLOW_HELP)
def diff(
    baseline, current, max_regression, metrics, fmt, allow_different_input, baseline_update, max_bytes, flow
) -> None:
    """Compare two JSON documents of `gro-replay CAPTURE --format json` (BASELINE, then CURRENT).

    Exit 1 when a checked aggregation metric (segments per skb, per stage and per flow, by default) is worse
    than BASELINE by more than --max-regression percent; 2 when the documents cannot be compared.
    """
    if baseline_update and not os.path.exists(baseline):
        try:
            load_document(current, "CURRENT", max_bytes)
        except DiffError as e:
            raise UsageError(str(e)) from None
        _copy_over(current, baseline)
        click.echo(f"baseline created: {current} → {baseline}", err=True)
        return
    try:
        base = load_document(baseline, "BASELINE", max_bytes)
        cur = load_document(current, "CURRENT", max_bytes)
        cmp = compare(
            base,
            cur,
            metrics=tuple(metrics) or DEFAULT_METRICS,
            max_regression_pct=max_regression,
            allow_different_input=allow_different_input,
            baseline_path=baseline,
            current_path=current,
            flow=flow,
        )
    except DiffError as e:
        raise UsageError(str(e)) from None
    if fmt == "json":
        click.echo(dumps(cmp))
    elif fmt == "markdown":
        from .report.diff import render_markdown

        click.echo(render_markdown(cmp))
    else:
        from .report.diff import render_table

        render_table(cmp, _console())
    if baseline_update:
        _copy_over(current, baseline)
        click.echo(f"baseline updated: {current} → {baseline}", err=True)
        return
    if cmp["regressions"]:
        from .report.diff import regression_sentence

        first = regression_sentence(cmp["regressions"][0], cmp["max_regression_pct"])
        more = len(cmp["regressions"]) - 1
        raise CheckFailed(f"aggregation regressed: {first}" + (f" (and {more} more)" if more else ""))


def _copy_over(src_path: str, dst_path: str) -> None:
    """Replace ``dst_path`` by a copy of ``src_path`` (atomically: write beside it, then rename)."""
    tmp = f"{dst_path}.tmp-{os.getpid()}"
    try:
        with open(src_path, "rb") as src, open(tmp, "wb") as dst:
            dst.write(src.read())
        os.replace(tmp, dst_path)
    except OSError as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise UsageError(f"--baseline-update: cannot write {dst_path}: {e.strerror}") from None


@click.command("explain")
@click.argument("capture", type=click.Path(dir_okay=False))
@click.option(
    "--flow",
    "selector",
    default=None,
    metavar="SELECTOR",
    help=FLOW_HELP + " Explain replays every frame and details the matching flows.",
)
@replay_options
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option(
    "--limit",
    type=BoundedInt(0, 10**9),
    default=20,
    show_default=True,
    help="Text: at most N flows (0: all).",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def explain_cmd(capture, selector, fmt, limit, quiet, **opts) -> None:
    """Explain, per flow of CAPTURE, where its frames were aggregated (phys NAPI, tunnel gro_cells) and why
    every skb ended, named after the kernel function and condition; then whether the flow, and the capture,
    is affected by the zero-checksum bug fixed in 89e5c58fc1e2 and how many stack traversals the fix saves.

    The kernels are those of the replay (default: pre-fix 5.11 and post-fix 5.12, compared); with --fix,
    --no-fix or --kernel the verdict is about the kernels named (whether each carries the fix, and why its phys
    stage does not merge), the same verdict the replay prints.
    """
    from .report.explain import FlowDeliveries, SelectorError, explain, render_text, select_flows

    if selector is not None:  # a bad selector is refused before the replay
        try:
            select_flows([], selector)
        except SelectorError as e:
            raise UsageError(str(e)) from None
    cfg = build_config(**opts)  # validates, and rejects --kernel with --fix/--no-fix
    shown = [m.name for m in cfg.kernels]
    obs = FlowDeliveries()
    prog, cb = _progress(quiet, capture)
    try:
        result = replay_capture(capture, cfg, obs, cb)
    except CaptureError as e:
        raise UsageError(str(e)) from None
    except OSError as e:
        raise UsageError(f"{capture}: {e.strerror}") from None
    finally:
        if prog is not None:
            prog.stop()
    try:
        ids = select_flows(result.flows, selector)
    except SelectorError as e:
        raise UsageError(str(e)) from None
    if not ids and selector is None:
        inp = result.input
        skipped = ", ".join(f"{k} {v}" for k, v in sorted(inp.skipped.items())) or "no frames"
        raise UsageError(f"{capture}: no frame could be replayed ({skipped}), so there is no flow to explain")
    if not ids:
        raise UsageError(
            f"no flow matches --flow {selector!r} ({len(result.flows)} flows in {capture}; "
            "run without --flow to list them)"
        )
    doc = explain(result, obs, shown, ids)
    if fmt == "json":
        click.echo(dumps(doc))
    else:
        out = sys.stdout
        for line in render_text(doc, limit or None):
            out.write(line + "\n")


COMMANDS = [diff, explain_cmd]

# mount on the main group even when this module was imported before gro_replay.cli finished
for _cmd in COMMANDS:
    _cli_main.add_command(_cmd)
