"""``gro-replay explain CAPTURE``: per flow, where its frames were aggregated, why not, and the verdict.

Thin click command: parse, validate, call ``report.explain``, print. Exit codes: 0 success; 2 usage or bad input
(an unreadable capture, a selector that matches nothing).
"""

from __future__ import annotations

import sys
from dataclasses import replace

import click

from ..capture.reader import CaptureError, path_words
from ..report.schema import dumps
from ..sim import replay_capture
from .command import Command
from .errors import UsageError, capture_error, no_flow_error
from .options import FLOW_HELP, build_config, flow_timeout_options, flow_timeouts, replay_options
from .output import start_progress
from .params import BoundedInt, Keyword

#: ``--skbs-max`` default: skbs listed per flow, stage and kernel
DEFAULT_SKBS_MAX = 50


@click.command("explain", cls=Command)
@click.argument("capture", type=click.Path())
@click.option(
    "--flow",
    "selector",
    default=None,
    metavar="SELECTOR",
    help=FLOW_HELP + " Explain replays every frame and details the matching flows.",
)
@replay_options
@flow_timeout_options
@click.option("--format", "fmt", type=Keyword(["text", "json"]), default="text", show_default=True)
@click.option(
    "--limit",
    type=BoundedInt(0, 10**9),
    metavar="N",
    default=20,
    show_default=True,
    help="Text: at most N flows (0: all).",
)
@click.option(
    "--skbs",
    is_flag=True,
    help="Also list, per flow, stage and kernel, each skb delivered in order: the capture frames it carries "
    "(1-based frame numbers, as Wireshark's), why it ended and, where a later frame's arrival ended it, which "
    "frame (with the TCP sequence numbers of a gap). Runs the frame-by-frame path (the report's engine line "
    "says so).",
)
@click.option(
    "--skbs-max",
    type=BoundedInt(0, 10**9),
    metavar="N",
    default=DEFAULT_SKBS_MAX,
    show_default=True,
    help="With --skbs: at most N skbs listed per flow, stage and kernel, the rest counted (0: all).",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def explain_cmd(
    capture, selector, fmt, limit, skbs, skbs_max, quiet, flow_timeout, flow_close_timeout, **opts
) -> None:
    """Explain, per flow of CAPTURE, where its frames were aggregated (phys NAPI, tunnel gro_cells) and why
    every skb ended, named after the kernel function and condition; then whether the flow, and the capture,
    is affected by the zero-checksum bug fixed in 89e5c58fc1e2 and how many stack traversals the fix saves.

    The kernels are those of the replay (default: pre-fix 5.11 and post-fix 5.12, compared); with --fix,
    --no-fix or --kernel the verdict is about the kernels named (whether each carries the fix, and why its phys
    stage does not merge), the same verdict the replay prints. The text opens with the capture's input line and
    notes (records cut short, --resegment segments larger than --mtu …), the lines the replay's text prints.
    """
    from ..report.explain import FlowDeliveries, SelectorError, explain, render_text, select_flows
    from ..report.explain_skbs import SkbEnds

    _check_skbs_max(skbs)

    if selector is not None:  # a bad selector is refused before the replay
        try:
            select_flows([], selector)
        except SelectorError as e:
            raise UsageError(str(e)) from None
    cfg = build_config(**opts)  # validates, and rejects --kernel with --fix/--no-fix
    # every flow is explained from its own counters: flows end as in the replay (a key back is a new flow, splits
    # are judged by when flows lived: sim/flows.py), but none is retired, none summed
    cfg = flow_timeouts(replace(cfg, flows_kept=True, flows_max=1 << 62), flow_timeout, flow_close_timeout)
    shown = [m.name for m in cfg.kernels]
    obs = FlowDeliveries()
    # only the selected flows' skbs are kept: all of them, the JSON's flows, not only the text's --limit
    listing = SkbEnds(obs, skbs_max, selector) if skbs else None
    _prog, cb = start_progress(quiet, capture)
    try:
        result = replay_capture(capture, cfg, listing or obs, cb)
    except CaptureError as e:
        raise capture_error(e, str(capture)) from None
    except OSError as e:
        raise UsageError(f"{path_words(capture)}: {e.strerror}") from None
    finally:
        if cb is not None:
            cb.stop()  # the display, when it was shown
    try:
        ids = select_flows(result.flows, selector)
    except SelectorError as e:
        raise UsageError(str(e)) from None
    if not ids and selector is None:
        inp = result.input
        from ..report.verdict import not_replayed_text

        raise UsageError(f"{path_words(capture)}: {not_replayed_text(inp)}, so there is no flow to explain")
    if not ids:
        raise no_flow_error(selector, result, capture, "run without --flow to list them")
    doc = explain(result, obs, shown, ids, listing)
    if fmt == "json":
        click.echo(dumps(doc))
    else:
        out = sys.stdout
        for line in render_text(doc, limit or None):
            out.write(line + "\n")


def _check_skbs_max(skbs: bool) -> None:
    """Refuse (UsageError, exit 2) ``--skbs-max`` given without ``--skbs``, which it would leave void (as replay
    refuses ``--pcap-format`` without ``--write-pcap``)."""
    from click.core import ParameterSource

    ctx = click.get_current_context()
    src = ctx.get_parameter_source("skbs_max")
    if not skbs and src in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT):
        raise UsageError("--skbs-max needs --skbs")
