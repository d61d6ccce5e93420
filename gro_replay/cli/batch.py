"""``gro-replay batch PATH... [--jobs N | --scheduler ADDRESS] [--out DIR] [--format table|json]``.

Replays many captures in parallel on Dask (see :mod:`gro_replay.batch`) with the same replay options as
``gro-replay CAPTURE``. With ``--out DIR`` each capture's JSON document (the one ``gro-replay CAPTURE --format
json`` prints) is written to ``DIR/STEM.json`` and the combined report to ``DIR/batch.json``; stdout gets the
combined table or JSON. Exit codes: 0 every capture replayed; 2 a capture failed (each failure is a row with
its error, the others still run), bad usage, or dask.distributed missing / the scheduler unreachable.
"""

from __future__ import annotations

import inspect
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import click
from rich.console import Console

from ..outputs import RunOutputs
from ..project import __version__, plural
from ..report.schema import dumps
from ..report.stats import SCHEMA_VERSION
from ..report.verbatim import VerbatimTable, say, verbatim_console
from ..sim import ReplayConfig
from .command import Command
from .errors import UsageError
from .options import build_config, replay_options
from .params import BoundedInt, Keyword

COMBINED_NAME = "batch.json"


def combined(outcomes, cfg, where: dict, seconds: float) -> dict:
    """The combined JSON: tool, config, where it ran, one row per capture (input order), totals (``captures``:
    rows, a capture named twice replayed twice; ``distinct_captures``: the files they name, by real path)."""
    rows = [o.row() for o in outcomes]
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "gro-replay", "version": __version__},
        "command": "batch",
        "config": cfg.as_dict(),
        "cluster": where,
        "captures": rows,
        "totals": {
            "captures": len(rows),
            "distinct_captures": len({os.path.realpath(r["path"]) for r in rows}),
            "failed": sum(1 for r in rows if r["error"] is not None),
            "frames": sum(r["frames"] or 0 for r in rows),
            "replayed": sum(r["replayed"] or 0 for r in rows),
            "seconds": round(seconds, 3),
        },
    }


def display_names(paths: list[str | None]) -> list[str]:
    """Short names for the table: each path's file name, with as many parent folders as needed to tell apart
    captures of the same name (``ndpi/vxlan.pcap``, ``tcpdump/vxlan.pcap``)."""
    parts = [Path(p).parts if p else ("-",) for p in paths]
    out = []
    for i, ps in enumerate(parts):
        n = 1
        while n < len(ps) and any(
            j != i and len(q) >= n and q[-n:] == ps[-n:] and q != ps for j, q in enumerate(parts)
        ):
            n += 1
        out.append("/".join(ps[-n:]))
    return out


def render_table(doc: dict, console: Console) -> None:
    """The combined report as a rich table: per capture (file name) frames read (and replayed, when that differs
    for some capture), phys/tunnel skbs per kernel,
    affected flows; then one line per capture that failed, with its error; the full paths are in the JSON.

    Fits 80 columns with the names readable: the number columns' headers are stacked a word a line
    (``pre-fix`` / ``phys`` / ``skbs``) and their cells never wrap, so the capture column gets the rest (a name
    longer than that folds onto a second line); errors are lines under the table, not a column beside the names."""
    from rich import box

    names = [k["name"] for k in doc["config"]["kernels"]]
    compare = any(r["affected_flows"] is not None for r in doc["captures"])
    table = VerbatimTable(
        title="gro-replay batch", box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False
    )
    table.add_column("capture", overflow="fold")
    table.add_column("frames", justify="right", no_wrap=True)
    # what entered the simulation (a super-frame split by --resegment is its segments, a skipped frame none): a
    # column when it differs from the frames read somewhere, so the usual table keeps the names' room at 80 columns
    counts = (
        ("frames", "replayed") if any(r["replayed"] != r["frames"] for r in doc["captures"]) else ("frames",)
    )
    if len(counts) == 2:
        table.add_column("re-\nplayed", justify="right", no_wrap=True)
    for n in names:
        table.add_column(f"{n}\nphys\nskbs", justify="right", no_wrap=True)
        table.add_column(f"{n}\ntunnel\nskbs", justify="right", no_wrap=True)
    # the flows the fix costs aggregation: a column where a capture has some (compare mode)
    worse = any(r.get("flows_worse_with_fix") for r in doc["captures"])
    if compare:
        table.add_column("affected\nflows", justify="right", no_wrap=True)
    if worse:
        table.add_column("worse\nwith\nfix", justify="right", no_wrap=True)
    names_shown = display_names([r["path"] for r in doc["captures"]])
    failed = []
    for r, shown in zip(doc["captures"], names_shown, strict=True):
        cells: list = [shown] + [f"{r[c]:,}" if r[c] is not None else "-" for c in counts]
        for n in names:
            k = r["kernels"].get(n)
            cells += [f"{k['phys_skbs']:,}", f"{k['tunnel_skbs']:,}"] if k else ["-", "-"]
        if compare:
            cells.append(str(r["affected_flows"]) if r["affected_flows"] is not None else "-")
        if worse:
            cells.append(str(r["flows_worse_with_fix"]) if r.get("flows_worse_with_fix") is not None else "-")
        table.add_row(*cells)
        if r["error"]:
            error = r["error"].removeprefix(f"{r['path']}: ")  # the reader's errors name the path: once here
            failed.append(f"failed: {shown}: {error}")
    from rich.cells import cell_len
    from rich.measure import Measurement

    from ..report.table import print_uncut

    # the capture column takes what the others leave of the console's width (at least 12 columns); a longer name
    # folds, the numbers stay whole (print_uncut)
    natural = max(cell_len(x) for x in ("capture", *names_shown))
    others = Measurement.get(console, console.options.update_width(1 << 20), table).maximum - natural
    table.columns[0].max_width = max(12, console.width - others)
    print_uncut(console, table)
    for line in failed:
        say(console, line)
    t = doc["totals"]
    n, distinct = t["captures"], t.get("distinct_captures", t["captures"])
    # a capture named twice (a directory and its files, overlapping globs) is replayed, and counted, twice
    what = (
        f"{n:,} {plural(n, 'capture')}"
        if distinct == n
        else f"{n:,} replays of {distinct:,} {plural(distinct, 'capture')} (named more than once)"
    )
    say(
        console,
        f"{what}, {t['failed']:,} failed, {t['frames']:,} "
        f"{plural(t['frames'], 'frame')} read, {t['replayed']:,} replayed in {t['seconds']:.1f} s",
        soft_wrap=False,
    )


@click.command("batch", cls=Command)
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option(
    "--jobs",
    "-j",
    type=BoundedInt(1, 1024),
    metavar="N",
    default=None,
    help="Worker processes of the local Dask cluster, one thread each [default: CPU count].",
)
@click.option(
    "--scheduler",
    default=None,
    metavar="ADDRESS",
    help="Use a running dask.distributed scheduler (tcp://host:8786) instead of a local cluster.",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    metavar="DIR",
    default=None,
    help="Write each capture's JSON document to DIR/STEM.json (STEM: the file name without capture suffixes; "
    "repeated stems numbered STEM-2, … in path order; a failed capture gets none, and an earlier run's "
    "DIR/STEM.json of it is removed) and the combined JSON to DIR/batch.json.",
)
@click.option("--format", "fmt", type=Keyword(["table", "json"]), default="table", show_default=True)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@replay_options
def batch(paths, jobs, scheduler, out_dir, fmt, quiet, **opts) -> None:
    """Replay many captures in parallel on Dask, each exactly as 'gro-replay CAPTURE' would.

    PATHS are capture files, or directories whose *.pcap, *.pcapng and *.cap files (any case, also
    compressed: *.pcap.gz …; only gzip is read, the others fail saying so) are replayed, in name order
    (not hidden files, not subdirectories).

    Per capture: frames, phys/tunnel skbs per kernel, affected flows; under the table, the error that
    stopped each failed capture (a failed capture does not stop the others). Exit 0 when every capture
    was replayed, 2 when any failed (or on bad usage, or when dask.distributed is missing or the
    scheduler cannot be reached).
    """
    if jobs is not None and scheduler is not None:
        raise UsageError(
            "--jobs and --scheduler are exclusive: --jobs sizes a local cluster, a running scheduler has its own "
            "workers; give one of them"
        )
    _refuse_descriptors(paths)
    paths = _expand(paths)
    cfg = build_config(**opts)
    # the --out files are written beside their paths and renamed into place once all are written; an interrupted
    # or failed run removes them (and the directory when it made it): gro_replay/outputs.py. A capture that fails
    # is reported in the documents, which are complete: they are kept, then exit 2 says so.
    with RunOutputs(inputs=list(paths)) as outs:
        if out_dir is not None:
            outs.make_dir(out_dir, "--out")
        doc, outcomes = _replay_all(list(paths), cfg, jobs, scheduler, quiet, out_dir is not None)
        if out_dir is not None:
            for o in outcomes:
                if o.out_file is not None:
                    _write_json(outs, out_dir / o.out_file, o.document)
                elif o.failed_file is not None:
                    # an earlier run's document of this capture would sit beside this run's batch.json as if
                    # current: removed when this run's files are put in place
                    outs.remove(out_dir / o.failed_file, "--out")
            _write_json(outs, out_dir / COMBINED_NAME, doc)
    if fmt == "json":
        click.echo(dumps(doc))
    else:
        from .output import report_console

        render_table(doc, report_console())
    failed = doc["totals"]["failed"]
    if failed:
        raise UsageError(f"{failed:,} of {len(outcomes):,} {plural(len(outcomes), 'capture')} failed")


def _expand(paths: Sequence[str]) -> list[str]:
    """``paths`` with each directory replaced by its capture files (``gro_replay.batch.expand_directories``); a
    directory without any is a one-line usage error (exit 2)."""
    from ..batch import expand_directories

    try:
        return expand_directories(paths)
    except ValueError as e:
        raise click.UsageError(str(e)) from None


def _refuse_descriptors(paths: Sequence[str]) -> None:
    """A one-line usage error (exit 2) for a PATH that is a descriptor of this process
    (``gro_replay.batch.descriptor_refusal``)."""
    from ..batch import descriptor_refusal

    refusal = descriptor_refusal(paths)
    if refusal is not None:
        raise click.UsageError(refusal)


def _replay_all(paths: list[str], cfg, jobs, scheduler, quiet: bool, out_files: bool) -> tuple[dict, list]:
    """Replay ``paths`` on Dask with a progress display: ``(combined document, outcomes)``; with ``out_files``
    each outcome's ``out_file`` (or ``failed_file``) is named first. Raises UsageError when Dask cannot run."""
    from ..batch import BatchUnavailable, assign_out_files, run_batch

    progress = None
    on_done = on_start = None
    if not quiet and sys.stderr.isatty():
        from rich.progress import Progress

        progress = Progress(console=verbatim_console(stderr=True), transient=True)
        task = progress.add_task("replaying captures", total=len(paths))

        def on_done(_outcome) -> None:
            progress.advance(task)

        # shown once the cluster is there: a refusal before (dask missing, a scheduler that cannot be reached)
        # prints its line alone, as every early refusal does (cli/output.py ProgressReport)
        on_start = progress.start

    t0 = time.perf_counter()
    try:
        outcomes = run_batch(paths, cfg, jobs=jobs, scheduler=scheduler, on_done=on_done, on_start=on_start)
    except BatchUnavailable as e:
        raise UsageError(str(e)) from None
    finally:
        if progress is not None:
            progress.stop()
    seconds = time.perf_counter() - t0
    where = (
        {"scheduler": scheduler}
        if scheduler
        else {"local_workers": min(jobs or os.cpu_count() or 1, sum(o.sent for o in outcomes))}
    )
    if out_files:
        assign_out_files(outcomes, reserved=(COMBINED_NAME,))
    return combined(outcomes, cfg, where, seconds), outcomes


def replay_config(args: Sequence[str] = ()) -> ReplayConfig:
    """The ReplayConfig that ``gro-replay CAPTURE ARGS`` and ``gro-replay batch PATH... ARGS`` build from the
    replay options ``ARGS`` (defaults included), for serial runs that must match a batch. Raises UsageError
    (a bad value) or click.UsageError (an unknown option)."""
    ctx = batch.make_context("batch", ["-", *args])
    names = inspect.signature(build_config).parameters
    return build_config(**{k: v for k, v in ctx.params.items() if k in names})


def _write_json(outs: RunOutputs, path: Path, doc: dict) -> None:
    outs.write_text(str(path), dumps(doc) + "\n", "--out")
