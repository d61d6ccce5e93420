"""The click command class of every sub-command (``Command``): an option given twice in contradiction is a usage
error instead of click's silent "the last one wins".

click's parser keeps the last value of a single-valued option and the last of a ``--x/--no-x`` pair, so
``gro-replay X.pcap --fix --no-fix`` ran the pre-fix kernel alone and ``--format json --format table`` printed a
table, without a word. ``Command`` records every occurrence of every option while click parses, then refuses, with
one line and exit code 2 (``UsageError``):

* both sides of a boolean pair (``--fix`` and ``--no-fix``, ``--tunnel-metadata`` and ``--no-tunnel-metadata``,
  synth's ``--outer-ipv6``/``--outer-ipv4``…): ``--fix and --no-fix contradict each other: give one of them``;
* a single-valued option given with different values (after conversion, so ``--format JSON --format json`` is one
  value): ``--format given twice with different values (json, table): give it once``.

Harmless repeats stay accepted: the same flag twice (``-q -q``), the same value twice, and repeatable options
(``multiple=True``: ``--kernel``, ``--vxlan-port``, ``--gro``, whose own parsers judge their items).
"""

from __future__ import annotations

from typing import Any

import click

from .errors import UsageError

#: ``Context.meta`` key of the occurrences recorded while one command's arguments are parsed
_GIVEN = "gro_replay.cli.command.given"


def _spelling(popt: Any) -> str:
    """How the user wrote the option of parser entry ``popt``: its longest name (``--no-fix``, ``--quiet``)."""
    names = list(popt._long_opts) or list(popt._short_opts)
    return max(names, key=len)


def refuse_contradictions(ctx: click.Context, given: list[tuple[Any, Any]]) -> None:
    """Raise UsageError (exit 2, one line) when ``given`` — the parser entries and raw values in command-line order —
    holds both sides of a boolean pair, or one single-valued option with two different values (each value is
    converted first: a bad one is refused as click would refuse it, BadParameter)."""
    uses: dict[click.Option, list[tuple[Any, Any]]] = {}
    for popt, raw in given:
        param = popt.obj
        if isinstance(param, click.Option) and not (param.multiple or param.count):
            uses.setdefault(param, []).append((popt, raw))
    for param, seen in uses.items():
        if len(seen) < 2:
            continue
        if param.is_flag:
            sides = list(dict.fromkeys(_spelling(popt) for popt, _raw in seen))
            if len({popt.const for popt, _raw in seen}) > 1:
                raise UsageError(f"{sides[0]} and {sides[1]} contradict each other: give one of them")
            continue
        values = list(dict.fromkeys(param.type_cast_value(ctx, raw) for _popt, raw in seen))
        if len(values) > 1:
            name = max(param.opts, key=len)
            times = "twice" if len(seen) == 2 else f"{len(seen)} times"
            shown = ", ".join(str(v) for v in values)
            raise UsageError(f"{name} given {times} with different values ({shown}): give it once")


class Command(click.Command):
    """A click command that refuses contradicting repeats of its options (module doc). Every sub-command of
    ``gro-replay`` is one (tests/test_cli_usage_errors.py checks)."""

    def make_parser(self, ctx: click.Context):
        parser = super().make_parser(ctx)
        given: list[tuple[Any, Any]] = []
        ctx.meta[_GIVEN] = given
        # click's parser (click 8.x: _OptionParser, its _long_opt/_short_opt entries) calls each option entry's
        # process() once per occurrence, with the raw value; record it. A click whose parser is shaped otherwise
        # parses as before, without the check (tests/test_cli_usage_errors.py fails there, saying so)
        long_opts, short_opts = getattr(parser, "_long_opt", {}), getattr(parser, "_short_opt", {})
        entries = {id(o): o for o in (*long_opts.values(), *short_opts.values()) if hasattr(o, "process")}
        for popt in entries.values():
            process = popt.process

            def recording(value, state, _popt=popt, _process=process) -> None:
                given.append((_popt, value))
                _process(value, state)

            popt.process = recording
        return parser

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        rest = super().parse_args(ctx, args)
        refuse_contradictions(ctx, ctx.meta.pop(_GIVEN, []))
        return rest
