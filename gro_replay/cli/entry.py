"""The console-script entry (``gro-replay``, ``python -m gro_replay``, ``python -m gro_replay.cli``): runs the
group and turns every way of ending into its exit code (README "Exit codes"), never a traceback.
"""

from __future__ import annotations

import errno
import gc
import io
import os
import signal
import sys
import threading

# A module of its own or a package it requires (click) missing at start-up (an install under way or incomplete) is
# one line and exit 75, as later: the imports this module needs are kept here for ``entry()`` to report, the
# commands (``.app``, which imports the rest of the package) and ``..outputs`` are imported inside its handler.
_START_FAILED: ImportError | None = None
try:
    import click

    from ..project import terminal_size
    from .errors import Interrupted, StdoutFailed, Terminated
except ImportError as _e:  # pragma: no cover - tests/test_install_changed.py runs it in a child process
    _START_FAILED = _e

#: Exit code when the reader of standard output went away (``| head``): 128 + SIGPIPE, what a shell reports for
#: cat, grep or tcpdump killed by SIGPIPE, so ``set -o pipefail`` scripts see the same thing.
EXIT_PIPE_CLOSED = 128 + signal.SIGPIPE
#: Exit code after SIGINT: 128 + SIGINT.
EXIT_INTERRUPTED = 128 + signal.SIGINT


class _WholeWrites(io.RawIOBase):
    """File descriptor 1 for a ``BufferedWriter`` whose ``write`` writes everything or raises.

    CPython's ``BufferedWriter.write`` of more bytes than its buffer (a JSON document of megabytes in one
    ``click.echo``) writes straight to the raw file; when the pipe's reader goes away during that write, ``write(2)``
    returns the part that fitted (64 KiB) and the following EPIPE is lost: the rest of the document is dropped
    silently and the process exits 0. Looping here until every byte is written makes the EPIPE an exception
    (BrokenPipeError) for every writer of standard output at once: click.echo, rich, ``--trace -``.
    """

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, b) -> int:
        view = memoryview(b).cast("B")
        done = 0
        while done < len(view):
            done += os.write(self._fd, view[done:])
        return done

    def close(
        self,
    ) -> None:  # the descriptor stays open (the interpreter's own sys.__stdout__/__stderr__ owns it)
        super().close()


class _LossyWrites(_WholeWrites):
    """File descriptor 2 for standard error: a write that fails (the reader of a ``2>&1 | head -0`` pipe went away:
    EPIPE; ``2>/dev/full``: ENOSPC) is dropped instead of raised.

    A message on standard error is the last thing a command does on its way out with an exit code: when it cannot
    be written there is no one left to tell, and the exit code is what remains. Raising would replace that code by
    click's 1 for EPIPE (``Command.main``) or a failure of the error handling itself; so a usage error stays 2, an
    environment problem 3, an interrupt 130, whatever becomes of standard error.
    """

    def __init__(self, fd: int) -> None:
        super().__init__(fd)
        #: a write failed: the rest is not attempted (a closed pipe stays closed)
        self.lost = False

    def write(self, b) -> int:
        view = memoryview(b).cast("B")
        done = 0
        while not self.lost and done < len(view):
            try:
                done += os.write(self._fd, view[done:])
            except OSError:
                self.lost = True
        return len(view)


def _closed_stdout() -> None:
    """Standard output whose descriptor was closed before the command started (``>&-``: the interpreter then sets
    ``sys.stdout`` to None, and the first writer died on it, exit 70): descriptor 1 becomes /dev/null opened for
    reading, so that every write to it fails with EBADF, as a write to a closed descriptor does, and the report
    meets the one-line error of ``> /dev/full`` (exit 2) whoever writes (click, rich, ``synth -``); a command that
    writes nothing there runs as usual, and no file the command opens later takes the number 1."""
    if sys.stdout is not None:
        return
    try:
        fd = os.open(os.devnull, os.O_RDONLY)
        if fd != 1:
            os.dup2(fd, 1)
            os.close(fd)
    except OSError:
        return
    sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 - the interpreter's standard output, never closed


def _rewrap(name: str, raw: type, line_buffering: bool | None, write_through: bool = False) -> None:
    """Replace ``sys.<name>`` (a text stream on its descriptor) by the same text stream over ``raw(fd)``
    (``_WholeWrites`` for standard output, ``_LossyWrites`` for standard error); ``line_buffering`` None keeps the
    stream's own. Leaves any other stream (a test's capture, a closed or missing one) alone."""
    old = getattr(sys, name)
    if not isinstance(old, io.TextIOWrapper):
        return
    try:
        fd = old.fileno()
        old.flush()
    except (OSError, ValueError):
        return
    stream = io.TextIOWrapper(
        io.BufferedWriter(raw(fd)),
        encoding=old.encoding,
        errors=old.errors,
        line_buffering=old.line_buffering if line_buffering is None else line_buffering,
        write_through=write_through,
    )
    setattr(sys, name, stream)


def _stdout_error() -> OSError | None:
    """The error of flushing the bytes still buffered for standard output (EPIPE: the reader went away), or None."""
    try:
        sys.stdout.flush()
    except OSError as e:
        return e
    except ValueError:  # closed
        return OSError(errno.EIO, "write error")
    return None


def _silence_stdout() -> None:
    """Point file descriptor 1 at /dev/null so that the interpreter's last flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _on_sigint(signum, frame) -> None:
    raise Interrupted()


def _on_sigterm(signum, frame) -> None:
    raise Terminated(signum)


#: The variables OpenBLAS reads its thread count from (``OPENBLAS_NUM_THREADS``, then ``GOTO_NUM_THREADS``, then
#: ``OMP_NUM_THREADS``): when the user set any of them, theirs stands.
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


def _one_blas_thread() -> None:
    """Set ``OPENBLAS_NUM_THREADS=1`` before numpy is first imported, unless one of ``BLAS_THREAD_VARIABLES`` is
    set (even empty) or numpy is already loaded (too late for this process; children are left to theirs).

    numpy's OpenBLAS starts one thread per core when it is loaded, and they spin: ``import numpy`` took 0.28 CPU s
    instead of 0.20 (user + system, median of 21 runs, 2 cores shared, numpy 2.4.6). gro-replay does no linear
    algebra, so one thread loses nothing; the JSON replay of the fix's 17-frame sample went from 0.322 to 0.279
    CPU s (median of 25, bytecode cached). The environment is inherited by children: the kernel backend's helpers
    (oracle/_child.py, ``ip``) do not load numpy, and Dask's nanny sets ``OPENBLAS_NUM_THREADS=1`` for ``batch``'s
    workers anyway (``distributed.nanny.pre-spawn-environ``). Only the command's entry does this: ``import
    gro_replay`` in someone's program leaves its BLAS alone."""
    if "numpy" in sys.modules or any(v in os.environ for v in BLAS_THREAD_VARIABLES):
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"


#: ``gc.set_threshold``'s first value for a command (Python's default: 700 allocations less deallocations)
GC_YOUNG_THRESHOLD = 10_000


def _fewer_collections() -> None:
    """Collect the youngest generation after ``GC_YOUNG_THRESHOLD`` net container allocations instead of 700, the
    older ones as often relative to it (Python's defaults, 10 and 10).

    A replay allocates tuples, lists and dicts by the million and frees nearly all of them at once (its cycles
    are few: the JSON document's and the kernel models' own), so most collections find nothing: the 200k-frame
    overlay-node mix (bench/modes.py) ran 116 collections in 0.025 s, and its plain JSON replay took 1.07 CPU s
    instead of 1.10 (median of 12 runs each, alternated, 2 cores). Garbage in cycles lives at most 10,000
    allocations longer: memory is bounded as before. Only the command's own process does this: ``batch``'s
    replays run in Dask workers (its local cluster's or a scheduler's), which keep their collector's settings, and
    ``import gro_replay`` in someone's program leaves its collector alone."""
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])


def command_process() -> None:
    """What a command's process sets for itself before any command module loads (``entry``; bench/floor.py's
    child starts the same way): one OpenBLAS thread (``_one_blas_thread``) and fewer collections
    (``_fewer_collections``)."""
    _one_blas_thread()
    _fewer_collections()


def _sane_terminal_size_env() -> None:
    """Drop ``COLUMNS``/``LINES`` values that are not a plain number: rich's Console takes them with ``int()``
    after ``str.isdigit()``, which lets '²' through and ends in a ValueError (``project.terminal_size``)."""
    for name in ("COLUMNS", "LINES"):
        v = os.environ.get(name)
        if v is not None and terminal_size(v) is None:
            del os.environ[name]


def _import_failed(e: ImportError) -> int:
    """One line for an import that failed at start-up (the commands' modules, imported in ``entry``'s handler) or
    while a command ran, and its exit code: gro_replay/__init__.py ``import_failed`` (75 for a module of its own,
    or a package it requires, 70 for any other). Written without click, which may be the package missing; a
    standard error that cannot be written loses the line, not the exit code."""
    from .. import import_failed

    line, code = import_failed(e)
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):  # closed, full or None (pythonw)
        pass
    return code


def entry() -> None:
    """Console-script entry. Exit codes: click's own errors keep theirs (2 usage); 130 after SIGINT, 143 after
    SIGTERM and 129 after SIGHUP unless it was ignored (nohup) (one line, no traceback; the command unwinds first,
    so its output files are removed); 141 when the
    reader of standard output went away (``| head -1``; nothing printed); 2 when standard output cannot be written
    (``> /dev/full``: ``Error: standard output: cannot write: No space left on device``, the wording of every
    output); 75 when a module of its own, or a name in one, cannot be imported (its installation changed while it
    ran: ``_import_failed``); anything unexpected becomes one line on stderr and exit code 70
    (EX_SOFTWARE, a bug to report) instead of a traceback (``GRO_REPLAY_DEBUG=1`` shows it). Every code stays the
    same when standard error cannot be written (a closed pipe, a full disk: ``_LossyWrites``).
    """
    if _START_FAILED is not None:
        sys.exit(_import_failed(_START_FAILED))
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _on_sigint)
        signal.signal(signal.SIGTERM, _on_sigterm)
        if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:  # nohup: stay deaf to it
            signal.signal(signal.SIGHUP, _on_sigterm)
    code: int | str | None = 0
    command_process()
    _closed_stdout()
    _rewrap("stdout", _WholeWrites, None)
    _rewrap("stderr", _LossyWrites, True, write_through=True)
    _sane_terminal_size_env()
    try:
        try:
            from .app import main

            # prog_name fixed: usage lines and shell completion (_GRO_REPLAY_COMPLETE) name the console script
            # even when run as python -m gro_replay.cli
            main(standalone_mode=True, prog_name="gro-replay")
        except SystemExit as e:
            code = e.code
        error = _stdout_error()
        if error is not None:
            raise StdoutFailed(error)
    except (Interrupted, KeyboardInterrupt):
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        click.echo("gro-replay: interrupted", err=True)
        code = EXIT_INTERRUPTED
    except Terminated as e:
        signal.signal(e.signum, signal.SIG_DFL)
        click.echo(f"gro-replay: {(signal.strsignal(e.signum) or 'terminated').lower()}", err=True)
        code = 128 + e.signum
    except StdoutFailed as e:
        _silence_stdout()
        if e.errno == errno.EPIPE:
            code = EXIT_PIPE_CLOSED
        else:
            # the wording of every output that cannot be written (gro_replay/outputs.py failure_text)
            from ..outputs import STDOUT_NAME, failure_text

            click.echo(f"Error: {failure_text('', STDOUT_NAME, e)}", err=True)
            code = 2
    except ImportError as e:
        if os.environ.get("GRO_REPLAY_DEBUG"):
            raise
        code = _import_failed(e)
    except Exception as e:  # noqa: BLE001 - the last line of defence against tracebacks
        if os.environ.get("GRO_REPLAY_DEBUG"):
            raise
        click.echo(f"gro-replay: internal error: {type(e).__name__}: {e}", err=True)
        code = 70
    sys.exit(code)
