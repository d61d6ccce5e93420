"""The ``gro-replay`` click group and the one table of its commands (``COMMANDS``).

Every sub-command is registered here, explicitly, and its module is imported when the command is named (start-up
time, bench/startup.py): no module registers itself as a side effect of being imported.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
from collections.abc import Iterator

import click

from ..project import __version__
from .errors import StdoutFailed

#: errno values of a failed write to standard output (a full or failing disk, a quota, a file size limit)
_WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG, errno.EBADF})
#: Every sub-command: name → (module in this package, the click command's name there, one-line help for --help).
COMMANDS: dict[str, tuple[str, str, str]] = {
    "batch": (
        "batch",
        "batch",
        "Replay many captures in parallel on Dask, each exactly as gro-replay CAPTURE.",
    ),
    "diff": ("diff", "diff", "Compare two JSON documents per kernel, stage and flow (CI regression gate)."),
    "explain": (
        "explain",
        "explain_cmd",
        "Per flow: where its frames were aggregated, why not, and the verdict.",
    ),
    "kernel": ("kernel", "kernel_cmd", "Replay CAPTURE through the running Linux kernel (needs root)."),
    "kernels": (
        "kernels",
        "kernels_cmd",
        "The kernel profiles and the behaviour switches that separate them.",
    ),
    "replay": (
        "replay",
        "replay_cmd",
        "Replay CAPTURE (pcap/pcapng, optionally gzip; - for stdin) through the GRO stages of each kernel model.",
    ),
    "schema": ("schema", "schema_cmd", "Print the JSON Schema (draft 2020-12) of a document."),
    "synth": ("synth", "synth", "Write a synthetic bulk-TCP-over-VXLAN/Geneve capture."),
    "validate": (
        "kernel",
        "validate_cmd",
        "Compare the simulator with the running kernel on the same frames.",
    ),
}


@contextlib.contextmanager
def _stdout_failures() -> Iterator[None]:
    """Turn a write error on standard output into ``StdoutFailed`` (click's ``main`` would make a closed pipe exit
    code 1 and other write errors a traceback)."""
    try:
        yield
    except OSError as e:
        # the reader's errors are CaptureErrors and named outputs raise UsageErrors: a bare write error left
        # here is standard output's
        if e.errno == errno.EPIPE or (e.filename is None and e.errno in _WRITE_ERRNOS):
            raise StdoutFailed(e) from None
        raise
    except SystemExit as e:
        # rich's Console.on_broken_pipe: stdout pointed at /dev/null, then SystemExit(1)
        if isinstance(e.__context__, BrokenPipeError):
            raise StdoutFailed(e.__context__) from None
        raise


class OneLineUsageError(click.UsageError):
    """A click usage error shown as the project's one line (``Error: …``, exit code 2) instead of click's four
    (Usage / Try / blank / Error)."""

    def show(self, file=None) -> None:
        click.echo(f"Error: {self.format_message()}", file=file, err=file is None)


def _phrase(text: str) -> str:
    """Click's sentence as a phrase inside one line: whitespace (newlines) collapsed, first letter lower-case unless
    the first word is upper-case throughout (a metavar such as OUTPUT or CAPTURE, an acronym), no closing full
    stop."""
    text = " ".join(text.split()).removesuffix(".")
    first = text.split(" ", 1)[0].rstrip(":,")
    if len(first) > 1 and first.isupper():
        return text
    return text[:1].lower() + text[1:]


def _param_name(param: click.Parameter | None, hint: str | None) -> str:
    """How the user names ``param`` on the command line: its long option (``--nic``) or its argument's metavar
    (``CAPTURE``)."""
    if isinstance(param, click.Option):
        return max(param.opts, key=len)
    if param is not None:
        return (param.metavar or param.name or "").upper()
    return (hint or "value").strip("'\"")


def one_line_usage(e: click.UsageError) -> str:
    """The one line (without ``Error: ``) that says what ``e`` says: e.g. ``no such option: --fixx (did you mean
    --fix or --no-fix?); see 'gro-replay replay --help'``. Every kind of click usage error: unknown option, bad
    choice/number/path (``BadParameter``), missing and extra arguments (the replay command's with the hint that
    ``gro-replay batch PATH...`` replays several captures), an option without its value."""
    if isinstance(e, click.NoSuchOption):
        text = f"no such option: {e.option_name}"
        if e.possibilities:
            names = sorted(e.possibilities)
            text += f" (did you mean {', '.join(names[:-1]) + ' or ' if len(names) > 1 else ''}{names[-1]}?)"
    elif isinstance(e, click.MissingParameter):
        kind = e.param_type or (e.param.param_type_name if e.param is not None else "parameter")
        text = (
            f"missing {kind} {_param_name(e.param, e.param_hint if isinstance(e.param_hint, str) else None)}"
        )
    elif isinstance(e, click.BadParameter):
        hint = e.param_hint if isinstance(e.param_hint, str) else None
        text = f"{_param_name(e.param, hint)}: {_phrase(e.message)}"
    else:
        text = _phrase(e.format_message())
        if (
            text.startswith("got unexpected extra argument")
            and e.ctx is not None
            and e.ctx.info_name == "replay"
        ):
            # gro-replay sample_pcaps/*.pcap: the shell gave several captures to the replay command
            text += ": gro-replay batch PATH... replays several captures"
    if e.ctx is not None:
        text += f"; see '{e.ctx.command_path} --help'"
    return text


@contextlib.contextmanager
def _one_line_usage_errors() -> Iterator[None]:
    """Re-raise click's usage errors as ``OneLineUsageError`` (same exit code 2, one line)."""
    try:
        yield
    except OneLineUsageError:
        raise
    except click.UsageError as e:
        raise OneLineUsageError(one_line_usage(e), ctx=e.ctx) from None


class DefaultGroup(click.Group):
    """A group whose default command is ``replay``: ``gro-replay CAPTURE`` means ``gro-replay replay CAPTURE``.

    A click usage error of any command (an unknown option, a bad value, a missing or extra argument) is one line
    ``Error: …`` with exit code 2 (``OneLineUsageError``), like every other bad input.

    A write error on standard output leaves a command as ``StdoutFailed`` (click would turn a closed pipe into
    exit code 1 and other write errors into a traceback); ``entry`` gives it its exit code.

    Sub-commands (``COMMANDS``) are imported when named; ``--help`` lists them from their one-line help and shows
    the replay command's options (what ``gro-replay CAPTURE`` takes) without importing the others.
    """

    def invoke(self, ctx):
        with _stdout_failures(), _one_line_usage_errors():
            return super().invoke(ctx)

    def make_context(self, info_name, args, parent=None, **extra):
        # --help and --version print while the arguments are parsed, before invoke
        with _stdout_failures(), _one_line_usage_errors():
            return super().make_context(info_name, args, parent=parent, **extra)

    def list_commands(self, ctx):
        return sorted(set(self.commands) | set(COMMANDS))

    def get_command(self, ctx, name):
        if name not in self.commands and name in COMMANDS:
            module, attr, _help = COMMANDS[name]
            cmd = getattr(importlib.import_module(f"{__package__}.{module}"), attr)
            self.add_command(cmd, name)
        return self.commands.get(name)

    def format_commands(self, ctx, formatter):
        with formatter.section("Commands"):
            formatter.write_dl([(name, COMMANDS[name][2]) for name in self.list_commands(ctx)])

    def format_help(self, ctx, formatter):
        super().format_help(ctx, formatter)
        replay = self.get_command(ctx, "replay")
        sub = click.Context(replay, info_name="replay", parent=ctx)
        rows = [r for p in replay.get_params(sub) if (r := p.get_help_record(sub)) is not None]
        with formatter.section("Replay options (gro-replay CAPTURE [OPTIONS])"):
            formatter.write_dl(rows)

    def parse_args(self, ctx, args):
        if args and args[0] not in self.list_commands(ctx) and args[0] not in ("--help", "-h", "--version"):
            args = ["replay", *args]
        elif not args:
            args = ["--help"]
        return super().parse_args(ctx, args)


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gro-replay")
def main() -> None:
    """Replay a VXLAN/Geneve capture through simulated Linux GRO (physical device NAPI, then the tunnel
    device's gro_cells), before and after 89e5c58fc1e2 "net: Fix gro aggregation for udp encaps with zero csum".

    \b
    gro-replay CAPTURE              compare the pre-fix (5.11) and post-fix (5.12) kernels
    gro-replay CAPTURE --no-fix     only the pre-fix kernel (--fix: only post-fix; --kernel 6.18: that release)
    gro-replay synth OUT.pcap       write a scenario capture
    """


def mount_all() -> None:
    """Import every sub-command now (``main.commands`` complete, e.g. for documentation tools)."""
    for name in COMMANDS:
        main.get_command(None, name)
