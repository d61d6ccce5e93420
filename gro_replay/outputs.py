"""The files a command writes, all or nothing: each output is written to a temporary file in its own directory and
renamed into place when the command succeeds, or removed when it fails.

A run that stops on an error (exit 2: a truncated capture, an unwritable output, a frame time a pcap cannot hold;
exit 130: interrupted; 143: terminated) leaves no half-written file behind and an earlier file at the same path untouched; a run
that ends normally renames every output into place (``os.replace``: atomic within a file system, so a reader sees
the old file or the whole new one). A command whose complete outputs come with a non-zero exit (``batch`` with a
failed capture) raises that exit after the block. A file an earlier run made that this run does not make again
(``batch --out``'s document of a capture that failed now) is removed with the commit (``RunOutputs.remove``), and
kept when the run fails. Standard output (``-``) is written directly. Paths that are not
regular files (``/dev/stdout``, a FIFO, a terminal, ``/dev/null``) are written directly too: renaming over them
would replace the device node. A symbolic link is followed: its target
is replaced, the link stays. A new file gets the mode ``open()`` would give it (0666 less the umask); a replaced
file keeps its mode.

An output never replaces what the run reads or another output of the same run: a path that is (after symbolic links,
or as the same inode) one of the run's inputs, or the path of an output already made, is refused with a one-line
error (exit 2) before anything is written there, so ``--json capture.pcap`` cannot overwrite the capture and
``--json out --markdown out`` cannot lose one of the two.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import stat
import sys
from typing import IO, Any

import click

_seq = itertools.count()


class OutputError(click.ClickException):
    """An output could not be written or renamed into place (exit 2)."""

    exit_code = 2


#: How error lines name standard output (``Error: standard output: cannot write: No space left on device``).
STDOUT_NAME = "standard output"


def _named(what: str, path: str) -> str:
    return f"{what} {path}" if what else path


def failure_text(what: str, path: str, reason: object, verb: str = "write") -> str:
    """The one wording of every output that cannot be written (after ``Error: ``, exit 2): ``WHAT PATH: cannot
    VERB: REASON``, e.g. ``--trace out.txt: cannot write: No space left on device``; ``what`` "" for an argument
    (synth's OUTPUT) and for standard output (``path`` STDOUT_NAME); ``verb`` ``create`` for a directory or a
    file that cannot be made."""
    return f"{_named(what, path)}: cannot {verb}: {reason}"


def _resolve(path: str | os.PathLike[str], what: str) -> tuple[str, str, os.stat_result | None]:
    """``(path as given, the file written: a symbolic link's target, its stat or None when missing)``; raises
    OutputError (exit 2) when it cannot be examined. A path that is not a regular file or a directory through its
    links (``/dev/stdout`` on a pipe: ``/proc/self/fd/1`` names ``pipe:[N]``, which no path reaches) is written
    through the path as given."""
    final = os.fspath(path)
    try:
        st = os.stat(final)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise OutputError(failure_text(what, final, e.strerror or e)) from None
    if st is not None and not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        return final, final, st
    return final, os.path.realpath(final) if os.path.islink(final) else final, st


def _dangling(path: str, reason: object) -> object:
    """``reason`` for an output at ``path`` that cannot be made, prefixed where ``path`` is a symbolic link to a
    missing path (the link exists, so the system's reason alone, ``No such file or directory`` or ``Not a
    directory``, misleads): "a symbolic link to a missing path (TARGET as the link says it): REASON", or that alone
    where ``reason`` is None."""
    try:
        if not os.path.islink(path):
            return reason
        os.stat(path)
        return reason
    except OSError as e:
        if e.errno == errno.ELOOP:  # a loop of links is no missing path
            return reason or e.strerror
        if e.errno not in (errno.ENOENT, errno.ENOTDIR):
            return reason
    try:
        target = os.readlink(path)
    except OSError:
        return reason
    said = f"a symbolic link to a missing path ({target})"
    return said if reason is None else f"{said}: {reason}"


def _is_dir(final: str, st: os.stat_result | None, what: str) -> None:
    """Refuse (OutputError, exit 2) a file output whose path is a directory."""
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise OutputError(failure_text(what, final, os.strerror(errno.EISDIR)))


class RunOutputs:
    """The file outputs of one command run; a context manager that commits them on success and discards them on
    failure (see the module doc).

    ``what`` arguments name the output in error messages (``--trace``, ``--json``…). Raises ``OutputError`` (exit 2,
    one line naming the output and its path, then ``cannot write:`` or ``cannot create:`` and the system's reason:
    ``Not a directory``, ``Is a directory``, ``Permission denied``, ``No space left on device``, ``Read-only file
    system`` …) when a temporary file cannot be created, written, closed or renamed. Committed when
    the block ends normally; discarded on any exception (exit 2, KeyboardInterrupt …), which then propagates.
    """

    def __init__(self, inputs: list[str | os.PathLike[str]] | tuple = ()) -> None:
        """``inputs``: the files the run reads (``-`` and paths that do not exist are ignored); no output may be one
        of them."""
        #: (device, inode) of each input that exists, and its path: an output there is refused (``_check_target``)
        self._inputs: dict[tuple[int, int], str] = {}
        for p in inputs:
            if os.fspath(p) == "-":
                continue
            with contextlib.suppress(OSError):
                st = os.stat(p)
                self._inputs[(st.st_dev, st.st_ino)] = os.fspath(p)
        #: realpath of each output made so far -> the option that made it
        self._targets: dict[str, str] = {}
        #: (temporary path, final path, what): renamed in this order by ``commit``
        self._pending: list[tuple[str, str, str]] = []
        #: directories this run created (``make_dir``): removed again on failure when left empty
        self._created_dirs: list[str] = []
        #: files opened by ``open_text``, each with the output's name and its path as given
        self._open: list[tuple[IO[Any], str, str]] = []
        #: (path, the symbolic link that led to it or None, what): regular files an earlier run left that this run
        #: removes on ``commit`` (``remove``)
        self._removals: list[tuple[str, str | None, str]] = []

    # -- making outputs -------------------------------------------------------------------------------------------
    def temp_path(self, path: str | os.PathLike[str], what: str) -> str:
        """A new, empty temporary file beside ``path`` for a writer that opens files by name (pcap writers,
        matplotlib); it replaces ``path`` on ``commit``. ``path`` itself when it is not a regular file (a device,
        a FIFO: written directly)."""
        final, target, st = _resolve(path, what)
        _is_dir(final, st, what)
        self._check_target(final, target, st, what)
        if st is not None and not stat.S_ISREG(st.st_mode):
            return target
        head, tail = os.path.split(target)
        while True:
            tmp = os.path.join(head, f".{tail}.{os.getpid()}-{next(_seq)}.tmp")
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            except FileExistsError:
                continue
            except OSError as e:
                raise OutputError(failure_text(what, final, _dangling(final, e.strerror or e))) from None
            break
        try:
            if st is not None:
                os.fchmod(fd, stat.S_IMODE(st.st_mode))
        except OSError:
            pass  # the mode of a file we may not own: the new file keeps the default
        finally:
            os.close(fd)
        self._pending.append((tmp, target, what))
        return tmp

    def _check_target(self, final: str, target: str, st: os.stat_result | None, what: str) -> None:
        """Refuse (OutputError, exit 2) an output that is one of the run's inputs or an earlier output's path."""
        if st is not None and stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) in self._inputs:
            src = self._inputs[(st.st_dev, st.st_ino)]
            raise OutputError(f"{_named(what, final)}: is the input {src}: refusing to overwrite it")
        real = os.path.realpath(target)
        other = self._targets.get(real)
        if other is not None and other != (what or final) and (st is None or stat.S_ISREG(st.st_mode)):
            raise OutputError(
                f"{_named(what, final)}: {other} writes the same file: give each output its own path"
            )
        self._targets[real] = what or final

    def reserve(self, path: str | None, what: str) -> None:
        """Check before a long run that output ``path`` (None or ``-``: nothing to check) can be examined (its
        parent is a directory that exists, a symbolic link's target's too), is not a directory, and is neither an
        input nor another output's path; raises
        OutputError (exit 2). The output is made later with the same ``what``."""
        if path is None or path == "-":
            return
        final, target, st = _resolve(path, what)
        if st is None and not os.path.isdir(os.path.dirname(target) or "."):
            # its directory is missing (through a symbolic link to a missing path, say so): known now, not after
            raise OutputError(failure_text(what, final, _dangling(final, os.strerror(errno.ENOENT))))
        _is_dir(final, st, what)
        self._check_target(final, target, st, what)

    def open_text(self, path: str, what: str) -> IO[str]:
        """``path`` opened for text output (UTF-8), or standard output for ``-``."""
        if path == "-":
            return sys.stdout
        f = open(self.temp_path(path, what), "w", encoding="utf-8")  # noqa: SIM115 (closed by commit/discard)
        self._open.append((f, what, path))
        return f

    def write_text(self, path: str, text: str, what: str) -> None:
        """Write ``text`` to ``path`` (``-``: standard output, via click)."""
        if path == "-":
            click.echo(text, nl=False)
            return
        f = self.open_text(path, what)
        try:
            f.write(text)
            f.close()
        except OSError as e:
            raise OutputError(failure_text(what, path, e.strerror or e)) from None

    def write_bytes(self, path: str, data: bytes, what: str) -> None:
        """Write ``data`` to ``path`` (``-``: standard output)."""
        if path == "-":
            sys.stdout.buffer.write(data)
            return
        try:
            with open(self.temp_path(path, what), "wb") as f:
                f.write(data)
        except OSError as e:
            raise OutputError(failure_text(what, path, e.strerror or e)) from None

    def make_dir(self, path: str | os.PathLike[str], what: str) -> None:
        """Create directory ``path`` unless it exists, in a directory that exists, as every output file's parent
        must (``mkdir``, not ``mkdir -p``: a mistyped path is one line, exit 2, not a tree made silently); one this
        run created and leaves empty is removed again on failure. A symbolic link to a directory is followed; one to
        a missing path is refused as that (OutputError, exit 2: mkdir does not make a link's target)."""
        d = os.fspath(path)
        try:
            os.mkdir(d)
        except FileExistsError:
            if not os.path.isdir(d):
                # the path exists and is not a directory (a file, /dev/full), or is a symbolic link to a missing
                # path (mkdir does not follow it: EEXIST)
                reason = _dangling(d, None) or os.strerror(errno.ENOTDIR)
                raise OutputError(failure_text(what, d, reason, "create")) from None
            return
        except OSError as e:
            raise OutputError(failure_text(what, d, e.strerror or e, "create")) from None
        self._created_dirs.append(os.path.abspath(d))

    def remove(self, path: str | os.PathLike[str], what: str) -> None:
        """Remove ``path`` when the run commits (an earlier run's output this run does not make again; kept when it
        fails): a regular file, never one of the run's inputs (nothing when missing, or a directory, a device).
        Where ``path`` is a symbolic link, the file it leads to is removed and the link kept, as an output written
        to ``path`` replaces that file and keeps the link (``_final``): the earlier run's document is not left
        behind a link; where that file is one of this run's outputs, the link is removed instead (``commit``).
        A link to a missing path or a loop of links leads to no file: nothing to remove. OutputError (exit 2) when
        it cannot be examined, or on ``commit`` removed."""
        p = os.fspath(path)
        link = None
        try:
            st = os.stat(p)
            if os.path.islink(p):
                link, p = p, os.path.realpath(p)
        except FileNotFoundError:  # missing, or a link to a missing path
            return
        except OSError as e:
            if e.errno == errno.ELOOP:
                return
            raise OutputError(failure_text(what, p, e.strerror or e, "remove")) from None
        if stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) not in self._inputs:
            self._removals.append((p, link, what))

    # -- ending the run -----------------------------------------------------------------------------------------
    def _close_all(self) -> None:
        for f, _what, _path in self._open:
            with contextlib.suppress(OSError):
                f.close()
        self._open.clear()

    def commit(self) -> None:
        """Close every output, remove the files to ``remove``, and rename each output into place. Raises OutputError
        (and removes what is left) when one cannot be closed, removed or renamed."""
        for f, what, path in self._open:
            try:
                f.close()
            except OSError as e:
                self.discard()
                raise OutputError(failure_text(what, path, e.strerror or e)) from None
        self._open.clear()
        while (
            self._removals
        ):  # before the renames: a file that cannot be removed leaves the run's files unmade
            path, link, what = self._removals[0]
            if link is not None and path in self._targets:
                path = link  # the link leads to one of this run's outputs: the link goes, the output stays
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            except OSError as e:
                self.discard()
                raise OutputError(failure_text(what, path, e.strerror or e, "remove")) from None
            self._removals.pop(0)
        while self._pending:
            tmp, final, what = self._pending[0]
            try:
                os.replace(tmp, final)
            except OSError as e:
                self.discard()
                raise OutputError(failure_text(what, final, e.strerror or e)) from None
            self._pending.pop(0)
        self._created_dirs.clear()

    def discard(self) -> None:
        """Close and remove every temporary file, and the directories this run created that are left empty; files
        to ``remove`` are kept."""
        self._close_all()
        self._removals.clear()
        for tmp, _final, _what in self._pending:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        self._pending.clear()
        for d in self._created_dirs:
            with contextlib.suppress(OSError):
                os.rmdir(d)  # only when empty
        self._created_dirs.clear()

    def __enter__(self) -> RunOutputs:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc is None:
            self.commit()
        else:
            self.discard()
