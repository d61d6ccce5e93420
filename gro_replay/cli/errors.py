"""The CLI's exceptions, each carrying its exit code (README "Exit codes"): deep code raises, only ``entry`` exits.

0 success; 1 a check failed (``CheckFailed``); 2 usage, unreadable input or an output that cannot be written
(``UsageError``; click's own usage errors); 3 environment (``EnvironmentProblem``); 70 internal error; 130 SIGINT
(``Interrupted``); 141 standard output's reader went away (``StdoutFailed`` with EPIPE).
"""

from __future__ import annotations

import os

import click


class UsageError(click.ClickException):
    """Bad input or usage: exit code 2."""

    exit_code = 2


def capture_error(e: Exception, capture: str) -> UsageError:
    """The usage error (exit 2) for a capture the reader refused (``CaptureError``): its one line, the capture named
    as the report names it (``-`` is "standard input": capture/reader.py ``path_words``), and for a directory the
    command that replays the captures in it."""
    from ..capture.reader import STDIN_PATH, path_words

    text = str(e)
    if capture == STDIN_PATH and text.startswith(f"{STDIN_PATH}: "):  # the reader names what it was given
        text = f"{path_words(capture)}: {text[len(STDIN_PATH) + 2 :]}"
    if os.path.isdir(capture):
        text += f": 'gro-replay batch {capture}' replays the captures in it"
    return UsageError(text)


def no_flow_error(selector: str, result, capture: str, hint: str) -> UsageError:
    """The usage error (exit 2) for a ``--flow`` selector that matched no flow of ``result`` (a ``ReplayResult``):
    how many flows there were and what kept frames from the replay (skip reasons such as other_interface or
    snaplen_cut, ``-f``: ``verdict.input_words.gone_words``), then ``hint`` (where the flows are listed; left out when
    no frame was replayed, since no listing has any)."""
    from ..capture.reader import path_words
    from ..project import plural
    from ..report.verdict.input_words import gone_words, not_replayed_text  # heavy: not at --help

    inp = result.input
    n = len(result.flows)
    text = f"no flow matches --flow {selector!r} ({n:,} {plural(n, 'flow')} in {path_words(capture)}"
    if not inp.frames_replayed:
        return UsageError(f"{text}: {not_replayed_text(inp)})")
    gone = gone_words(inp)
    if gone:
        text += f"; frames not replayed: {', '.join(gone)}"
    return UsageError(f"{text}; {hint})")


class CheckFailed(click.ClickException):
    """A check failed (diff threshold, validate mismatch): exit code 1. It is a finding about the inputs, not an
    error of the command: its line on standard error is the finding itself (``aggregation regressed: …``), without
    the ``Error: `` of usage errors."""

    exit_code = 1

    def show(self, file=None) -> None:
        """Print the finding (``format_message``) as one line to ``file`` (default standard error)."""
        click.echo(self.format_message(), file=file, err=True)


class EnvironmentProblem(click.ClickException):
    """The environment lacks something (root, namespaces, tracefs): exit code 3."""

    exit_code = 3


class Interrupted(BaseException):
    """SIGINT (Ctrl-C): raised by ``entry``'s handler instead of KeyboardInterrupt, which click would turn into
    "Aborted!" and exit code 1."""


class Terminated(BaseException):
    """SIGTERM (``kill``, ``timeout``, a stopped service) or SIGHUP (the terminal or ssh session closed): raised by
    ``entry``'s handler so that the command unwinds (its output files and a stream's temporary copy are removed,
    gro_replay/outputs.py, capture/spool.py; the kernel backend's namespaces are torn down) before exit code
    128 + ``signum`` (143, 129), instead of the interpreter dying at once."""

    def __init__(self, signum: int = 15) -> None:
        super().__init__(signum)
        self.signum = signum


class StdoutFailed(Exception):
    """Writing standard output failed: ``errno`` EPIPE (the reader went away) or another error (a full disk)."""

    def __init__(self, error: OSError) -> None:
        super().__init__(error.strerror or str(error))
        self.errno = error.errno
