"""``gro-replay replay CAPTURE`` (also ``gro-replay CAPTURE``): the replay report, its exports and observers."""

from __future__ import annotations

from dataclasses import replace

import click

from ..outputs import RunOutputs
from ..project import plural
from ..report import FLOWS_MAX_DEFAULT
from .command import Command
from .errors import UsageError, capture_error, no_flow_error
from .options import FLOW_HELP, build_config, flow_timeout_options, flow_timeouts, given, replay_options
from .output import (
    NamedOutput,
    on_the_display_terminal,
    open_out,
    output_error,
    report_console,
    start_progress,
    write_export,
)
from .params import BoundedInt, Keyword


@click.command("replay", cls=Command)
@click.argument("capture", type=click.Path())
@replay_options
@click.option("--flow", "flow", default=None, metavar="SELECTOR", help=FLOW_HELP)
@click.option(
    "--format", "fmt", type=Keyword(["table", "json", "markdown"]), default="table", show_default=True
)
@click.option(
    "--json",
    "json_path",
    default=None,
    metavar="FILE",
    help="Also write the JSON document (as --format json prints it) to FILE; - prints it instead of the table.",
)
@click.option(
    "--markdown",
    "md_path",
    default=None,
    metavar="FILE",
    help="Also write the Markdown report to FILE; - prints it instead of the table.",
)
@click.option(
    "--trace",
    "trace_path",
    default=None,
    metavar="FILE",
    help="Write netif_receive_skb lines (perf script style) to FILE, or - for standard output; the time is the "
    "delivery's poll time in seconds from the capture's first frame (--write-pcap keeps the capture's clock).",
)
@click.option("--no-hist", is_flag=True, help="Leave out the segments-per-skb bar charts.")
@click.option(
    "--flows-max",
    type=BoundedInt(0, 10**9),
    default=FLOWS_MAX_DEFAULT,
    show_default=True,
    metavar="N",
    help="JSON: per kernel, list at most N flows in full in flows[] (those with most segments); the others are "
    "counted and their counters summed in flows_summary.omitted.",
)
@flow_timeout_options
@click.option(
    "--quiet",
    "-q",
    is_flag=True,
    help="No progress bar (shown only when stderr is a terminal) and no "
    "'wrote FILE (N frames)' lines of --write-pcap; errors are still printed.",
)
@click.option(
    "--write-pcap",
    "pcap_dir",
    default=None,
    metavar="DIR",
    help="Write the skbs each device delivered, as tcpdump on it would capture them (timestamps: the delivery's "
    "poll time on the capture's clock), into DIR: with "
    "--pcap-format pcapng (default) one file per kernel, DIR/<kernel>.pcapng (pre-fix.pcapng and "
    "post-fix.pcapng; --kernel 6.18: 6.18.pcapng), an interface per device and a comment per packet "
    "(segments, gso_size, why the skb ended); with --pcap-format pcap one file per kernel and device, "
    "DIR/<kernel>-<dev>.pcap (pre-fix-eth0.pcap, pre-fix-vxlan0.pcap, ...), frames only.",
)
@click.option(
    "--pcap-format",
    type=Keyword(["pcapng", "pcap"]),
    default="pcapng",
    show_default=True,
    help="--write-pcap file format: pcapng (interface block per device, packet comments) or classic pcap.",
)
@click.option(
    "--plot", "plot_path", default=None, metavar="FILE", help="Segments-per-skb charts to FILE.svg|png."
)
def replay_cmd(
    capture,
    flow,
    fmt,
    json_path,
    md_path,
    trace_path,
    no_hist,
    flows_max,
    flow_timeout,
    flow_close_timeout,
    quiet,
    pcap_dir,
    pcap_format,
    plot_path,
    **opts,
) -> None:
    """Replay CAPTURE (pcap/pcapng, optionally gzip; - for stdin) through the GRO stages of each kernel model."""
    _check_dependent_options(pcap_dir)
    stdout_users = [f"--format {fmt}"] if fmt != "table" else []
    stdout_users += [f"{o} -" for o in _dash_options(trace_path, json_path, md_path)]
    if len(stdout_users) > 1:
        both = "both" if len(stdout_users) == 2 else "all"
        raise UsageError(f"{' and '.join(stdout_users)} {both} write to stdout: give all but one a file")
    cfg = replace(build_config(flow=flow, **opts), flows_max=flows_max)
    cfg = flow_timeouts(cfg, flow_timeout, flow_close_timeout)
    # every file output (--trace, --write-pcap, --plot, --json, --markdown) is written beside its path and renamed
    # into place when the run succeeds; a run that stops (exit 2, 130) removes them (gro_replay/outputs.py)
    with RunOutputs(inputs=[capture]) as outs:
        # refused before the replay: an output that is the capture, or two outputs on one path
        for path, what in (
            (trace_path, "--trace"),
            (json_path, "--json"),
            (md_path, "--markdown"),
            (plot_path, "--plot"),
        ):
            outs.reserve(path, what)
        result, pcaps = _run(capture, cfg, quiet, trace_path, pcap_dir, pcap_format, plot_path, outs)
        if flow is not None and not result.input.selected_frames:
            # known only now, after the replay: nothing is rendered or written
            raise no_flow_error(
                flow, result, capture, "gro-replay explain CAPTURE with the same options lists them"
            )
        _file_outputs(result, json_path, md_path, plot_path, outs)
    if pcaps is not None and not quiet:
        for path, n in pcaps.written():
            click.echo(f"wrote {path} ({n:,} {plural(n, 'frame')})", err=True)
    _outputs(result, fmt, json_path, md_path, no_hist)


def _check_dependent_options(pcap_dir) -> None:
    """Refuse (UsageError, exit 2) an option given on the command line that the others make void, as
    ``--nic-tunnel-port`` without ``--nic`` is (cli/options.py): ``--pcap-format`` without ``--write-pcap`` (no
    file is written); ``flow_timeouts`` checks ``--flow-close-timeout``."""
    if given("pcap_format") and pcap_dir is None:
        raise UsageError("--pcap-format needs --write-pcap")


def _run(capture, cfg, quiet, trace_path, pcap_dir, pcap_format, plot_path, outs: RunOutputs):
    """The replay with its observers (``--trace``, ``--write-pcap``: outputs of ``outs``) and progress display:
    ``(result, pcaps)``.

    Raises UsageError for an unreadable capture, an output that cannot be written, or a frame ``--write-pcap``
    cannot store.
    """
    from ..capture.reader import CaptureError
    from ..report.pcapout import Observers, PcapTimeError, open_device_pcaps
    from ..report.plot import check_plot_request
    from ..report.trace import TraceWriter
    from ..sim import replay_capture

    try:
        check_plot_request(plot_path)
        pcaps = open_device_pcaps(pcap_dir, pcap_format, cfg, outs)
    except (ValueError, RuntimeError) as e:
        raise UsageError(str(e)) from None
    tracer: TraceWriter | NamedOutput | None = None
    out = None
    if trace_path:
        out = open_out(outs, trace_path, "--trace")
        tracer = TraceWriter(out, tag=len(cfg.kernels) > 1)
        if trace_path != "-":  # standard output's errors are entry()'s (a closed pipe ends quietly)
            tracer = NamedOutput(tracer, "--trace", trace_path)
    observer: TraceWriter | NamedOutput | Observers | None = tracer
    if pcaps is not None:
        observer = Observers(tracer, NamedOutput(pcaps, "--write-pcap", pcap_dir))
    # a trace written to the terminal the display is drawn on would run into it (breaker54: --trace -, breaker55:
    # --trace /dev/stdout or /dev/tty): no display then
    _prog, cb = start_progress(quiet or (out is not None and on_the_display_terminal(out)), capture)
    try:
        result = replay_capture(capture, cfg, observer, cb)
    except CaptureError as e:
        raise capture_error(e, str(capture)) from None
    except PcapTimeError as e:
        # the run stops: the --write-pcap files it wrote would lack this frame and every later one, so they go
        # (with every other output of the run)
        raise UsageError(f"{e}; no file written") from None
    except OSError as e:
        if e.filename is None:
            raise  # a write to standard output (--trace -): entry() reports it
        raise UsageError(f"{e.filename}: {e.strerror}") from None
    finally:
        if cb is not None:
            cb.stop()  # the display, when it was shown
        if pcaps is not None:
            try:
                pcaps.close()
            except OSError as e:
                raise output_error("--write-pcap", pcap_dir, e) from None
    if out is not None and trace_path != "-":
        try:
            out.close()
        except OSError as e:
            raise output_error("--trace", trace_path, e) from None
    return result, pcaps


def _file_outputs(result, json_path, md_path, plot_path, outs: RunOutputs) -> None:
    """The exports to files, as outputs of ``outs``: ``--plot``, ``--json FILE``, ``--markdown FILE``."""
    # imported only for the exports asked for: the table module brings rich, the plot module matplotlib
    if plot_path:
        from ..report.plot import PlotUnavailable, write_plot

        try:
            write_plot(result, plot_path, outs.temp_path(plot_path, "--plot"))
        except OSError as e:
            raise output_error("--plot", plot_path, e) from None
        except PlotUnavailable as e:  # matplotlib failing as it draws: one line, as before the replay
            raise UsageError(str(e)) from None
    if json_path and json_path != "-":
        from ..report.document import document
        from ..report.schema import dumps

        write_export(outs, json_path, dumps(document(result)), "--json")
    if md_path and md_path != "-":
        from ..report.table import markdown

        write_export(outs, md_path, markdown(result), "--markdown")


def _outputs(result, fmt, json_path, md_path, no_hist) -> None:
    """The report on stdout: the table, JSON or Markdown (``--format``, or an export given ``-``)."""
    from ..report.document import document
    from ..report.schema import dumps

    if json_path == "-":
        write_export(None, "-", dumps(document(result)), "--json")
    if md_path == "-":
        from ..report.table import markdown

        write_export(None, "-", markdown(result), "--markdown")
    if fmt == "json":
        click.echo(dumps(document(result)))
    elif fmt == "markdown":
        from ..report.table import markdown

        click.echo(markdown(result))
    elif "-" not in (json_path, md_path):
        from ..report.table import render

        render(result, report_console(), hist=not no_hist)


def _dash_options(trace_path, json_path, md_path) -> list[str]:
    return [
        o for o, p in (("--trace", trace_path), ("--json", json_path), ("--markdown", md_path)) if p == "-"
    ]
