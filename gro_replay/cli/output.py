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
        self.updates = 0  # counts given to the display since its clock started (``progress_line``'s stalls)

    def bind_capture(self, cap) -> None:
        self.capture = cap
        if self.copy_display is not None and not self.started:
            # the replay opens the copy: its clock starts now, before its first block is replayed (breaker55: a
            # clock started after it read 342,376,838 frames/s), its display at its first count
            self._replaying_the_copy()

    def stop(self) -> None:
        self._stop_copy_display()
        if self.started:
            self.started = False
            self.prog.stop()

    def copying(self, copied: int, frames: int | None, ended: bool) -> None:
        """capture/spool.py ``spooled``'s ``on_copy``: ``copied`` bytes of the stream copied so far, ``frames``
        records among them (None: not counted, gzip), ``ended`` once the stream has ended (tunnel ports are then
        looked for in the copy until the replay's display takes over). Shown as ``copy_line`` at the terminal's
        width of each refresh."""
        if self.copy_display is None:
            from rich.progress import Progress, ProgressColumn
            from rich.table import Column
            from rich.text import Text

            console, name = self.prog.console, self.name

            class CopyLine(ProgressColumn):
                def render(self, task):
                    f = task.fields
                    line = copy_line(name, f["copied"], f["frames"], f["ended"], task.elapsed, console.width)
                    return Text(line, style="progress.description")

            self.copy_display = Progress(
                CopyLine(table_column=Column(no_wrap=True)), console=console, transient=True
            )
            self.copy_display.add_task("copy", total=None, copied=copied, frames=frames, ended=ended)
            self.copy_display.start()
        else:
            self.copy_display.update(self.copy_display.task_ids[0], copied=copied, frames=frames, ended=ended)

    def _stop_copy_display(self) -> None:
        if self.copy_display is not None:
            self.copy_display.stop()
            self.copy_display = None

    def _replaying_the_copy(self) -> None:
        """The replay's display once a stream has been copied: its clock restarted (elapsed, frames/s from the
        replay's start, not the copy's); the copy being a regular file, its size (bytes) is the total, as a
        file's: a bar, percentage, MB/s and time left."""
        if self.capture is not None and not self.total:
            self.total = input_size(self.capture.source)
        self.prog.reset(self.task, total=self.total, frames=0, frames_at=None, updates=0)
        self.updates = 0

    def __call__(self, frames: int) -> None:
        starting = not self.started
        if starting:
            self._stop_copy_display()  # a stream's copy was shown: the replay's display takes over
            self.started = True
        done = self.capture.bytes_consumed if self.capture is not None and self.total else None
        # ``frames_at``: when the count was taken, the rate's clock (``progress_line``)
        at = self.prog.get_time()
        self.updates += 1
        completed = frames if done is None else min(done, self.total)
        self.prog.update(self.task, completed=completed, frames=frames, frames_at=at, updates=self.updates)
        if starting:  # after the first count: no "0 frames" is drawn once frames were replayed (breaker54)
            self.prog.start()


def copy_text(name: str, copied: int, frames: int | None, ended: bool, width: int | None = None) -> str:
    """The line of the copy of stream ``name`` (``-``: standard input) made for ``--vxlan-port auto``
    (capture/spool.py): ``copied`` bytes (shown in decimal units: 12.3 MB), ``frames`` records (None: left out), the
    stream not yet ``ended`` (the replay waits for its end) or ended (the ports are being found in the copy). Within
    ``width`` columns (None: any) the words give way before the numbers, never cut (breaker53): "reading standard
    input to its end for tunnel ports: 12.3 MB, 8,112 frames", "reading to its end: …", "reading: …", then the
    numbers alone."""
    from rich.filesize import decimal

    from ..capture.reader import path_words

    size = decimal(copied)
    if frames is not None:
        size += f", {frames:,} {plural(frames, 'frame')}"
    what = path_words(name)
    if ended:
        forms = [
            f"{what} ended after {size}: finding tunnel ports",
            f"finding tunnel ports in {size}",
            f"finding ports: {size}",
        ]
    else:
        forms = [
            f"reading {what} to its end for tunnel ports: {size}",
            f"reading to its end: {size}",
            f"reading: {size}",
        ]
    return next((f for f in forms if width is None or len(f) <= width), size)


def copy_line(
    name: str, copied: int, frames: int | None, ended: bool, elapsed: float | None, width: int
) -> str:
    """``copy_text`` and the copy's clock (``elapsed`` seconds, "0:00:03", "1 day, 3:46:40") within ``width``
    columns: the words give way first; where the numbers and the clock do not fit together the clock goes (and
    what words then fit come back); the numbers are never cut unless they alone are wider (breaker54: the clock
    kept its place and cut them)."""
    clock = _clock(elapsed)
    text = copy_text(name, copied, frames, ended, width - len(clock) - 1)
    if len(text) + 1 + len(clock) <= width:
        return f"{text} {clock}"
    return copy_text(name, copied, frames, ended, width)


def _clock(seconds: float | None) -> str:
    """``seconds`` as rich's time columns show them: "0:00:03", "1 day, 3:46:40" (None: 0)."""
    from datetime import timedelta

    return str(timedelta(seconds=int(seconds or 0)))


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


#: terminal columns from which the progress line has a long bar, and a short one (no bar under _BAR)
_WIDE = 130
_BAR = 80
#: the progress line's parts in the order they give way when the line would not fit: the byte rate, the elapsed
#: time, the time left, the frame rate, the description, the percentage (the frames never)
_GIVE_WAY = ("bytes", "elapsed", "left", "rate", "description", "percent")


def progress_line(task, width: int) -> list[tuple[str, str, str]]:
    """The parts of a replay's progress line for rich ``Task`` ``task`` (fields: ``frames``; total: the input's
    bytes or None) within ``width`` columns, as ``(name, text, rich style)`` in display order: description,
    percentage, frames, frames/s, bytes/s, "elapsed h:mm:ss", "· h:mm:ss left" (with a size; without one the
    elapsed time alone, after the rate). Parts give way whole, in ``_GIVE_WAY`` order, until the line fits: a count
    is never split from its noun nor a time from its days (breaker52, breaker53); the frames alone may still be
    wider than a tiny terminal. Rates not yet known read "…" (rich prints "?"), and under 10 frames/s a tenth
    shows, under 0.1 one significant digit (a slow pipe's 0.4 frames/s is no "0 frames/s")."""
    from rich.filesize import decimal

    frames = task.fields.get("frames", 0)
    elapsed = task.finished_time if task.finished else task.elapsed
    # the rate over the time to the count's last update (``frames_at``): a count updated block by block read
    # against a clock still running swung (breaker54: 834 to 1,512 on a steady 1,500 frames/s)
    at, updates = task.fields.get("frames_at"), task.fields.get("updates", 0)
    span = elapsed
    if at is not None and task.start_time is not None and updates and elapsed is not None:
        to_update = at - task.start_time
        # a stall (no count for twice the mean time between counts) reads the clock as it runs: a burst's rate
        # was held while nothing came (breaker55)
        span = to_update if elapsed - to_update <= 2 * to_update / updates else elapsed
    fps = frames / span if span and frames else None
    if fps is None:
        rate = "…"
    elif fps < 0.05:
        rate = "<0.1"
    else:
        rate = f"{fps:.1f}" if round(fps, 1) < 10 else f"{fps:,.0f}"
    clock = _clock(elapsed)
    parts = [("description", task.description, "progress.description")]
    if task.total:
        parts.append(("percent", f"{task.percentage:>3.0f}%", "progress.percentage"))
    parts += [
        ("frames", f"{frames:,} {plural(frames, 'frame')}", "progress.download"),
        ("rate", f"{rate} frames/s", "progress.data.speed"),
    ]
    if task.total:
        speed = task.finished_speed or task.speed
        left = task.time_remaining
        per_s = "… bytes/s" if speed is None else f"{decimal(int(speed))}/s"
        parts += [
            ("bytes", per_s, "progress.data.speed"),
            ("elapsed", f"elapsed {clock}", "progress.elapsed"),
            (
                "left",
                f"· {'-:--:--' if left is None else _clock(left)} left",
                "progress.remaining",
            ),
        ]
    else:
        parts.append(("elapsed", clock, "progress.elapsed"))
    for name in _GIVE_WAY:
        if sum(len(t) for _, t, _ in parts) + len(parts) - 1 <= width:  # a space between parts
            break
        parts = [x for x in parts if x[0] != name]
    if parts[-1][0] == "left" and not any(n == "elapsed" for n, _, _ in parts):
        parts[-1] = ("left", parts[-1][1][2:], parts[-1][2])  # no "·" after nothing
    return parts


def progress_display(console: Console):
    """A rich ``Progress`` for a replay whose task's total is the input's bytes (None for a stream): one line of
    ``progress_line``'s description, then with a size a bar (40 columns from ``_WIDE`` terminal columns, 12 from
    ``_BAR``, none under it), then the line's other parts, laid out at each refresh for ``console.width`` as it is
    then (breaker54: a terminal resized during a replay cut the line laid out for its old width)."""
    from rich.console import RenderableType
    from rich.progress import BarColumn, Progress, ProgressColumn
    from rich.table import Column, Table
    from rich.text import Text

    bars = BarColumn()

    class Line(ProgressColumn):
        def render(self, task):
            width = console.width
            bar = (40 if width >= _WIDE else 12 if width >= _BAR else 0) if task.total else 0
            parts = progress_line(task, width - (bar + 1 if bar else 0))
            cells: list[RenderableType] = [
                Text(t, style=style) for n, t, style in parts if n == "description"
            ]
            if bar:
                bars.bar_width = bar
                cells.append(bars.render(task))
            cells.append(Text(" ").join(Text(t, style=style) for n, t, style in parts if n != "description"))
            grid = Table.grid(*(Column(no_wrap=True) for _ in cells), padding=(0, 1))
            grid.add_row(*cells)
            return grid

    return Progress(Line(table_column=Column(no_wrap=True)), console=console, transient=True)


def on_the_display_terminal(f) -> bool:
    """Whether the open file ``f`` writes to the terminal standard error is, where the progress display is drawn:
    the same terminal device, or ``/dev/tty`` (the controlling terminal); False when either is no terminal, or
    ``f`` has no descriptor."""
    try:
        fd = f.fileno()
        if not (os.isatty(fd) and os.isatty(2)):
            return False
        return os.fstat(fd).st_rdev == os.fstat(2).st_rdev or os.ttyname(fd) == "/dev/tty"
    except (OSError, ValueError, AttributeError):
        return False


def start_progress(quiet: bool, path: str | None = None):
    """A progress display on stderr when it is a terminal (else None, None) and the callback for the replay
    (``ProgressReport``: it shows the display from its first call on). The caller calls the callback's ``stop``
    when the replay ends or fails (the display's own ``stop`` would print a line on a display never shown)."""
    if quiet or not sys.stderr.isatty():
        return None, None
    from ..report.verbatim import verbatim_console

    total = input_size(path) if path is not None else None
    console = verbatim_console(stderr=True, no_color=bool(os.environ.get("NO_COLOR")) or None)
    # TERM=dumb: no display, nor a blank line where it would have been (breaker54)
    if console.is_dumb_terminal:
        return None, None
    prog = progress_display(console)
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
