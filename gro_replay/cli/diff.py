"""``gro-replay diff BASELINE.json CURRENT.json``: compare two replay documents (a CI regression gate).

Thin click command: parse, validate, call ``report.diff``, print. Exit codes: 0 success; 1 a checked metric
regressed; 2 usage or bad input (unknown schema version, different inputs).
"""

from __future__ import annotations

import os

import click

from ..outputs import RunOutputs
from ..report.diff import (
    CHECKABLE,
    DEFAULT_METRICS,
    MAX_DOCUMENT_BYTES,
    DiffError,
    compare,
    load_document,
)
from ..report.diff.load import STDIN, document_name, read_document
from ..report.schema import dumps
from .command import Command
from .errors import CheckFailed, UsageError
from .options import FLOW_HELP
from .output import report_console
from .params import ByteCount, Keyword, Percent


@click.command("diff", cls=Command)
@click.argument("baseline", type=click.Path(allow_dash=True))
@click.argument("current", type=click.Path(allow_dash=True))
@click.option(
    "--max-regression",
    type=Percent(0, 1e6),
    default=0.0,
    show_default=True,
    metavar="PCT",
    help="Allowed loss of a checked metric, in percent of its baseline value (5 or 5%). 0: any loss fails "
    "(the replay is deterministic: same input and config give the same numbers).",
)
@click.option(
    "--metric",
    "metrics",
    type=Keyword(CHECKABLE),
    multiple=True,
    help=f"Metric checked against --max-regression (repeatable). Default: {', '.join(DEFAULT_METRICS)}.",
)
@click.option(
    "--format", "fmt", type=Keyword(["table", "markdown", "json"]), default="table", show_default=True
)
@click.option(
    "--allow-different-input",
    is_flag=True,
    help="Compare documents of different captures (their input digests, blake3 or sha256, differ or cannot be "
    "compared) instead of refusing.",
)
@click.option(
    "--baseline-update",
    is_flag=True,
    help="Accept CURRENT: print the diff, then copy CURRENT over BASELINE (or create it) and exit 0.",
)
@click.option(
    "--max-bytes",
    type=ByteCount(1, 2**63 - 1),
    metavar="BYTES",
    default=MAX_DOCUMENT_BYTES,
    show_default=True,
    help="Refuse a document larger than this many bytes (it is not read beyond): N, N bytes or N KiB/MiB/GiB.",
)
@click.option("--flow", "flow", default=None, metavar="SELECTOR", help=FLOW_HELP)
def diff(
    baseline, current, max_regression, metrics, fmt, allow_different_input, baseline_update, max_bytes, flow
) -> None:
    """Compare two JSON documents of `gro-replay CAPTURE --format json` (BASELINE, then CURRENT).

    Exit 1 when a checked aggregation metric (segments per skb, per stage and per flow, by default) is worse
    than BASELINE by more than --max-regression percent; 2 when the documents cannot be compared.
    """
    if baseline == STDIN and current == STDIN:
        raise UsageError(
            "BASELINE and CURRENT are both standard input (-): at most one of them can be; give the other as a file"
        )
    if baseline_update and baseline == STDIN:
        raise UsageError("--baseline-update: BASELINE is standard input (-), not a file to update")
    try:
        if baseline_update and not os.path.exists(baseline):
            data = read_document(current, "CURRENT", max_bytes)
            load_document(current, "CURRENT", max_bytes, data)
            _write_baseline(data, baseline)
            click.echo(f"baseline created: {document_name(current)} → {baseline}", err=True)
            return
        base = load_document(baseline, "BASELINE", max_bytes)
        data = read_document(current, "CURRENT", max_bytes)
        cur = load_document(current, "CURRENT", max_bytes, data)
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
        from ..report.diff import render_markdown

        click.echo(render_markdown(cmp))
    else:
        from ..report.diff import render_table

        render_table(cmp, report_console())
    if baseline_update:
        _write_baseline(data, baseline)
        click.echo(f"baseline updated: {document_name(current)} → {baseline}", err=True)
        return
    if cmp["regressions"]:
        from ..report.diff import regression_sentence

        first = regression_sentence(cmp["regressions"][0], cmp["max_regression_pct"])
        more = len(cmp["regressions"]) - 1
        raise CheckFailed(f"aggregation regressed: {first}" + (f" (and {more} more)" if more else ""))


def _write_baseline(data: bytes, dst_path: str) -> None:
    """Replace ``dst_path`` by ``data``, the CURRENT document's bytes as read and checked (written beside it and
    renamed into place: gro_replay/outputs.py; an interrupted copy leaves the old baseline and no temporary file)."""
    with RunOutputs() as outs:
        outs.write_bytes(dst_path, data, "--baseline-update")
