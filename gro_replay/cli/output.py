"""Where the commands' output goes: the report console, named output files, exports, the progress display.

rich is imported when a console or a progress display is made (start-up time, bench/startup.py).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import click

from ..outputs import RunOutputs, failure_text
from ..project import plural, terminal_size
from ..report.deliveries import hand_over
from .errors import UsageError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress


def report_console():
    """The stdout console of the text reports: the terminal's width on a terminal (a table that does not fit is
    stacked, one table per stage), else ``COLUMNS`` when set, else 120 columns (a pipe or file)."""
    from rich.console import Console

    from ..report.verbatim import verbatim_console

    cols = os.environ.get("COLUMNS", "")
    if sys.stdout.isatty():
        width = Console().width
    else:
        width = terminal_size(cols) or 120
    return verbatim_console(no_color=bool(os.environ.get("NO_COLOR")), soft_wrap=False, width=width)


def output_error(what: str, path: str, e: OSError) -> UsageError:
    """The one-line error (exit 2) of output ``what`` (an option, or "" for an argument) at ``path`` that failed
    with ``e``: ``--trace out.txt: cannot write: No space left on device``. ``e.filename``, when set, is the file
    of the output that failed (a ``--write-pcap DIR``'s file) and is named instead of ``path``."""
    where = e.filename if isinstance(e.filename, str) and e.filename else path
    return UsageError(failure_text(what, where, e.strerror or e))


class NamedOutput:
    """An ``on_deliver`` observer whose write errors are errors of the output ``what`` at ``path``: an OSError
    from it becomes a one-line UsageError (exit 2, ``output_error``) naming that output, never the capture."""

    def __init__(self, observer, what: str, path: str) -> None:
        self.observer = observer
        self.what = what
        self.path = path

    @property
    def served_from_events(self) -> bool:
        return bool(getattr(self.observer, "served_from_events", False))

    @property
    def frame_by_frame_reason(self) -> str | None:
        return getattr(self.observer, "frame_by_frame_reason", None)

    def bind(self, input_stats) -> None:
        if hasattr(self.observer, "bind"):
            self.observer.bind(input_stats)

    def __call__(self, kernel: str, stage: str, dev: str, skb, now_ns: int) -> None:
        try:
            self.observer(kernel, stage, dev, skb, now_ns)
        except OSError as e:
            raise output_error(self.what, self.path, e) from None

    def deliver_batch(self, kernel: str, rows: list) -> None:
        """Many deliveries at once (report/deliveries.py ``hand_over``), errors named as ``__call__``'s."""
        try:
            hand_over(self.observer, kernel, rows)
        except OSError as e:
            raise output_error(self.what, self.path, e) from None


def open_out(outs: RunOutputs, path: str, what: str):
    """``path`` opened for a text output of this run (``outs``: renamed into place when the command succeeds,
    removed when it fails), or standard output for ``-``."""
    return outs.open_text(path, what)


class ProgressReport:
    """The progress callback ``replay_capture`` calls with the frame count; bound to the open capture, it shows
    bytes read against the input's size (a regular file's, compressed or not): percentage, rate, time left.

    The display starts at the first call (after the batch path's first block, or the first 1,024 frames:
    ``sim.api.counting``), not before: every
    refusal that comes earlier — standard input a terminal, a missing or unreadable file, not a capture, a bad
    header, an option the input cannot serve — prints its one line alone, with no bar flashed and erased before
    it. ``stop`` ends a display that started and does nothing otherwise.

    Before that, a stream copied for ``--vxlan-port auto`` (capture/spool.py) is shown while it is copied by
    ``copying``: a display of its own (``copy_text``), from the copy's first report (its header checked) until the
    replay's display starts (then with the copy's size as its total) or ``stop``."""

    def __init__(self, prog, task, total: int | None, name: str = "-") -> None:
        self.prog = prog
        self.task = task
        self.total = total
        self.name = name
        self.capture = None
        self.started = False
        self.copy_display: Progress | None = None  # the copy's display while it is shown

    def bind_capture(self, cap) -> None:
        self.capture = cap

    def stop(self) -> None:
        self._stop_copy_display()
        if self.started:
            self.started = False
            self.prog.stop()

    def copying(self, copied: int, frames: int | None, ended: bool) -> None:
        """capture/spool.py ``spooled``'s ``on_copy``: ``copied`` bytes of the stream copied so far, ``frames``
        records among them (None: not counted, gzip), ``ended`` once the stream has ended (tunnel ports are then
        looked for in the copy until the replay's display takes over)."""
        text = copy_text(self.name, copied, frames, ended)
        if self.copy_display is None:
            from rich.progress import Progress, TextColumn, TimeElapsedColumn

            self.copy_display = Progress(
                TextColumn("{task.description}", markup=False),  # the stream's name, as is
                TimeElapsedColumn(),
                console=self.prog.console,
                transient=True,
            )
            self.copy_display.add_task(text, total=None)
            self.copy_display.start()
        else:
            self.copy_display.update(self.copy_display.task_ids[0], description=text)

    def _stop_copy_display(self) -> None:
        if self.copy_display is not None:
            self.copy_display.stop()
            self.copy_display = None

    def _replaying_the_copy(self) -> None:
        """The replay's display once a stream has been copied: its clock restarted (elapsed, frames/s from the
        replay's start, not the copy's); the copy being a regular file, its size (bytes) is the total, as a
        file's: a bar, percentage, MB/s and time left."""
        total = input_size(self.capture.source) if self.capture is not None and not self.total else None
        if total:
            self.prog = progress_display(total, self.prog.console)
            self.task = self.prog.add_task("replaying", total=total, frames=0)
            self.total = total
        else:
            self.prog.reset(self.task, frames=0)

    def __call__(self, frames: int) -> None:
        if not self.started:
            if self.copy_display is not None:  # a stream's copy was shown: the replay's display takes over
                self._stop_copy_display()
                self._replaying_the_copy()
            self.started = True
            self.prog.start()
        done = self.capture.bytes_consumed if self.capture is not None and self.total else None
        if done is None:
            self.prog.update(self.task, completed=frames, frames=frames)
        else:
            self.prog.update(self.task, completed=min(done, self.total), frames=frames)


def copy_text(name: str, copied: int, frames: int | None, ended: bool) -> str:
    """The line of the copy of stream ``name`` (``-``: standard input) made for ``--vxlan-port auto``
    (capture/spool.py): ``copied`` bytes (shown in decimal units: 12.3 MB), ``frames`` records (None: left out), the
    stream not yet ``ended`` (the replay waits for its end) or ended (the ports are being found in the copy)."""
    from rich.filesize import decimal

    from ..capture.reader import path_words

    what = path_words(name)
    size = decimal(copied)
    if frames is not None:
        size += f", {frames:,} {'frame' if frames == 1 else 'frames'}"
    if ended:
        return f"{what} ended after {size}: finding tunnel ports"
    return f"reading {what} to its end for tunnel ports: {size}"


def input_size(path: str) -> int | None:
    """Bytes of a regular file at ``path`` (the progress total), None for stdin, pipes, devices or errors."""
    import stat

    if path == "-":
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) and st.st_size > 0 else None


#: terminal columns from which the progress line shows everything (its widest form takes 129 at 10 million frames),
#: a short bar, and any bar; under _NARROW it keeps percentage and frames only
_WIDE = 130
_BAR = 80
_NARROW = 64


def progress_display(total: int | None, console: Console):
    """A rich ``Progress`` for a replay: with a known input size (bytes) a bar, percentage, frames, frames/s,
    MB/s, elapsed and time left (under ``_WIDE`` columns: a short bar, percentage, frames, frames/s, time left;
    under ``_BAR`` no bar; under ``_NARROW`` percentage and frames); without one (stdin, a pipe) frames, frames/s
    and elapsed (under ``_NARROW`` frames). The line stays one line of ``console.width`` columns."""
    from rich.progress import (
        BarColumn,
        Progress,
        ProgressColumn,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )
    from rich.table import Column
    from rich.text import Text

    class Frames(ProgressColumn):
        def render(self, task):
            frames = task.fields.get("frames", 0)
            return Text(f"{frames:,} {plural(frames, 'frame')}")

    class FramesPerSecond(ProgressColumn):
        def render(self, task):
            elapsed = task.finished_time if task.finished else task.elapsed
            frames = task.fields.get("frames", 0)
            speed = frames / elapsed if elapsed else None
            return Text(f"{speed:,.0f} frames/s" if speed else "… frames/s", style="progress.data.speed")

    class BytesPerSecond(TransferSpeedColumn):
        def render(
            self, task
        ):  # "… B/s" until the rate is known, as "… frames/s" (rich prints "?": breaker52)
            speed = task.finished_speed or task.speed
            return super().render(task) if speed is not None else Text("… B/s", style="progress.data.speed")

    # a terminal under _WIDE columns gets a short bar and no MB/s or elapsed time: the line stays one line at 80
    width = console.width
    wide = width >= _WIDE
    columns: list[ProgressColumn] = [
        TextColumn("{task.description}", style="progress.description", markup=False)
    ]
    if total and width >= _BAR:
        columns += [BarColumn(bar_width=40 if wide else 12)]
    if total:
        columns += [TaskProgressColumn()]
    # a count is never split from its noun: a column that must give way is cut at its end (breaker52)
    columns += [Frames(table_column=Column(no_wrap=True))]
    if width >= _NARROW:  # under it: percentage and frames only
        columns += [FramesPerSecond(table_column=Column(no_wrap=True))]
        if total and wide:
            # "elapsed 0:00:02 · 0:00:08 left"
            columns += [
                BytesPerSecond(table_column=Column(no_wrap=True)),
                TextColumn("elapsed"),
                TimeElapsedColumn(),
                TextColumn("·"),
                TimeRemainingColumn(),
                TextColumn("left"),
            ]
        elif total:
            columns += [TimeRemainingColumn(), TextColumn("left")]
        else:
            columns += [TimeElapsedColumn()]
    return Progress(*columns, console=console, transient=True)


def start_progress(quiet: bool, path: str | None = None):
    """A progress display on stderr when it is a terminal (else None, None) and the callback for the replay
    (``ProgressReport``: it shows the display from its first call on). The caller calls the callback's ``stop``
    when the replay ends or fails (the display's own ``stop`` would print a line on a display never shown)."""
    if quiet or not sys.stderr.isatty():
        return None, None
    from ..report.verbatim import verbatim_console

    total = input_size(path) if path is not None else None
    console = verbatim_console(stderr=True, no_color=bool(os.environ.get("NO_COLOR")) or None)
    prog = progress_display(total, console)
    task = prog.add_task("replaying", total=total, frames=0)  # its clock runs from now: elapsed, rate
    return prog, ProgressReport(prog, task, total, "-" if path is None else path)


def write_export(outs: RunOutputs | None, path: str, text: str, what: str) -> None:
    """Write an export (``--json``/``--markdown``) to ``path`` as an output of this run (``outs``), or stdout for
    ``-``. Raises OutputError (exit 2)."""
    if path == "-":
        click.echo(text)
        return
    assert outs is not None
    outs.write_text(path, text + "\n", what)
