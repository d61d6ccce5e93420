"""The progress display while a stream is copied for ``--vxlan-port auto`` (capture/spool.py ``spooled``'s
``on_copy``, cli/output.py ``ProgressReport.copying``).

A stream replayed with auto ports is read to its end before the replay starts. With the replay's progress display
on (stderr a terminal, no ``-q``: cli/output.py ``start_progress``) the copy is shown as it goes — bytes and, for a
capture that is not gzip-compressed, the records among them (``RecordCounter``) — then the replay's own display.
With the display off nothing more is written to stderr; the document is the file's either way.

The record counts expected are the reader's (``open_capture`` iterated): the counter must agree with it whatever
the sizes of the pieces the stream arrives in, for a stream cut anywhere, for both pcapng byte orders and for
several sections.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import pty
import random
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import ROOT, cli_env, file_sizes, read_terminal
from rich.console import Console
from test_interface_pipes import _fifo

from gro_replay.capture import spool
from gro_replay.capture.reader import CaptureError, open_capture
from gro_replay.capture.spool import RecordCounter, spooled
from gro_replay.capture.writer import PcapngWriter, PcapWriter
from gro_replay.cli.output import ProgressReport, copy_line, copy_text, progress_display
from gro_replay.synth import Scenario, synth_frames

SAMPLES = ROOT / "sample_pcaps"
_ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")


def _records(path: Path) -> int:
    with open_capture(str(path)) as cap:
        return sum(1 for _ in cap)


def _counter(path: Path) -> RecordCounter | None:
    with open_capture(str(path)) as cap:
        return RecordCounter.of(cap)


def _fed(path: Path, data: bytes, sizes: list[int], rng: random.Random) -> int | None:
    counter = _counter(path)
    assert counter is not None
    i = 0
    while i < len(data):
        k = rng.choice(sizes)
        counter.feed(memoryview(data[i : i + k]))
        i += k
    return counter.complete()


def _pcapng_swapped(path: Path) -> bytes:
    """``path`` (pcapng, little-endian, written by PcapngWriter) with every block's type and lengths and the section
    header's byte-order magic in big-endian order: all the counter reads of a big-endian capture (the blocks'
    bodies are left as they are: not a capture the reader would take)."""
    data = bytearray(path.read_bytes())
    off = 0
    while off < len(data):
        kind, length = (
            int.from_bytes(data[off : off + 4], "little"),
            int.from_bytes(data[off + 4 : off + 8], "little"),
        )
        data[off : off + 4] = kind.to_bytes(4, "big")
        data[off + 4 : off + 8] = length.to_bytes(4, "big")
        data[off + length - 4 : off + length] = length.to_bytes(4, "big")
        if kind == 0x0A0D0D0A:
            data[off + 8 : off + 12] = (0x1A2B3C4D).to_bytes(4, "big")
        off += length
    return bytes(data)


@pytest.fixture(scope="module")
def captures(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("counts")
    frames = list(synth_frames(Scenario(frames=100, flows=3)))
    ng = tmp / "two-ifaces.pcapng"
    with PcapngWriter(ng, [("eth0", ""), ("eth1", "")]) as w:
        for i, (ts, f) in enumerate(frames):
            w.write(ts, f, iface=i % 2)
    sections = tmp / "sections.pcapng"
    sections.write_bytes(ng.read_bytes() * 2)  # cat a.pcapng a.pcapng
    # alternating sizes (a full segment, then a short one): no run of equal records to speculate on
    mixed = tmp / "mixed.pcap"
    with PcapWriter(mixed) as pw:
        for i, (ts, f) in enumerate(frames):
            pw.write(ts, f[: 60 + (i % 7) * 100])
    return {
        "geneve": SAMPLES / "geneve-ipv6-bulk.pcap",
        "vxlan4": SAMPLES / "vxlan-4flows-computed-csum.pcap",
        "pcapng": ng,
        "sections": sections,
        "mixed": mixed,
    }


@pytest.mark.parametrize("name", ["geneve", "vxlan4", "pcapng", "sections", "mixed"])
def test_the_counter_counts_the_readers_records_in_any_pieces(captures, name, tmp_path):
    path = captures[name]
    want = _records(path)
    data = path.read_bytes()
    rng = random.Random(name)
    for sizes in ([1], [3, 7, 12, 13, 16, 17], [100, 1000, 1 << 16], [len(data)]):
        assert _fed(path, data, sizes, rng) == want, sizes
    # cut anywhere: the records the reader returns before the cut (one cut short is not counted)
    cut = tmp_path / "cut"  # never beside a shipped sample
    for at in sorted(rng.sample(range(30, len(data)), 25)):
        cut.write_bytes(data[:at])
        try:
            got = _records(cut)
        except CaptureError:
            continue  # a pcapng cut inside its first interface block: refused before any record
        assert _fed(path, data[:at], [1 << 16], rng) == got, at


def test_the_counter_reads_big_endian_pcapng(captures):
    # a big-endian section, then a little-endian one: each section header sets the order of the blocks after it
    one = captures["pcapng"]
    counter = RecordCounter("pcapng", "<", 12, 0)
    counter.feed(memoryview(_pcapng_swapped(one) + one.read_bytes()))
    assert counter.complete() == 2 * _records(one)


def test_gzip_is_not_counted_and_garbage_loses_the_count(captures, tmp_path):
    gz = tmp_path / "x.pcap.gz"
    gz.write_bytes(gzip.compress(captures["vxlan4"].read_bytes()))
    assert _counter(gz) is None
    data = bytearray(captures["vxlan4"].read_bytes())
    data[24 + 8 : 24 + 12] = (1 << 30).to_bytes(4, "little")  # the first record's caplen: impossible
    counter = _counter(captures["vxlan4"])
    assert counter is not None
    counter.feed(memoryview(bytes(data)))
    assert counter.complete() is None


# --- spooled's reports -------------------------------------------------------------------------------------------


def test_the_copy_is_reported_from_its_header_to_its_end(captures, tmp_path):
    path = captures["vxlan4"]
    calls: list[tuple[int, int | None, bool]] = []
    with spooled(str(path), "auto", lambda *a: calls.append(a)) as source:
        assert source == str(path)
    assert calls == []  # a regular file is not copied, and not reported
    with (
        _fifo(tmp_path / "fifo", path.read_bytes()) as fifo,
        spooled(fifo, "auto", lambda *a: calls.append(a)),
    ):
        pass
    size, n = path.stat().st_size, _records(path)
    assert calls[0][2] is False and 0 < calls[0][0] <= size  # first: once the header was read and checked
    assert calls[-1] == (size, n, True)  # last: the stream's end
    assert [c[0] for c in calls] == sorted(c[0] for c in calls)


def test_records_too_dear_to_count_are_left_out(captures, tmp_path, monkeypatch):
    # counting allowed no time at all: bytes only, from the first report on (as a fast producer of small frames
    # of varied sizes gets once counting passes a tenth of the copy's time)
    monkeypatch.setattr(spool, "COUNT_FREE", 0.0)
    monkeypatch.setattr(spool, "COUNT_SHARE", 0.0)
    path = captures["mixed"]
    calls: list[tuple[int, int | None, bool]] = []
    with (
        _fifo(tmp_path / "fifo", path.read_bytes()) as fifo,
        spooled(fifo, "auto", lambda *a: calls.append(a)),
    ):
        pass
    assert {c[1] for c in calls} == {None} and calls[-1] == (path.stat().st_size, None, True)


class _Clock:
    """A clock for capture/spool.py in place of ``time``: each ``monotonic()`` call moves it 10 ms on."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        self.now += 0.01
        return self.now


def test_reports_come_at_most_every_quarter_second(tmp_path, monkeypatch):
    # blocks of at most 4 kB of a 2.4 MB stream (600 and more), the copy's clock 10 or 20 ms on per block (a
    # clock of its own: the test does not depend on the machine's load): a report every 0.25 s of it, not per block
    data = (SAMPLES / "vxlan-4flows-computed-csum.pcap").read_bytes()
    monkeypatch.setattr(spool, "COPY_BLOCK", 1 << 12)
    clock = _Clock()
    monkeypatch.setattr(spool, "time", clock)
    calls: list[float] = []
    stream = data + data[24:] * 3  # the records again after the header
    with _fifo(tmp_path / "fifo", stream) as fifo, spooled(fifo, "auto", lambda *a: calls.append(clock.now)):
        pass
    gaps = [b - a for a, b in zip(calls[:-2], calls[1:-1], strict=True)]  # but the last, the end's
    assert 10 <= len(calls) <= 2 + clock.now / spool.REPORT_EVERY
    assert min(gaps) >= spool.REPORT_EVERY - 1e-9


def test_the_lines_of_the_copy():
    assert (
        copy_text("-", 12_345_678, 8112, False)
        == "reading standard input to its end for tunnel ports: 12.3 MB, 8,112 frames"
    )
    assert (
        copy_text("/tmp/fifo", 999, None, False) == "reading /tmp/fifo to its end for tunnel ports: 999 bytes"
    )
    assert (
        copy_text("-", 2_000_000, 1, True)
        == "standard input ended after 2.0 MB, 1 frame: finding tunnel ports"
    )


def test_the_copy_line_gives_way_word_by_word_never_cutting_a_number():
    """Within a terminal's width the words go first and the numbers stay whole (breaker53: at 66 columns the
    line was cut to "…: 1.6 GB, 1,05…" and at 80 its clock to "0:…")."""
    full = "reading standard input to its end for tunnel ports: 1.6 GB, 1,044,035 frames"
    assert copy_text("-", 1_600_000_000, 1_044_035, False, len(full)) == full
    assert (
        copy_text("-", 1_600_000_000, 1_044_035, False, 58) == "reading to its end: 1.6 GB, 1,044,035 frames"
    )
    assert copy_text("-", 1_600_000_000, 1_044_035, False, 42) == "reading: 1.6 GB, 1,044,035 frames"
    assert copy_text("-", 1_600_000_000, 1_044_035, False, 20) == "1.6 GB, 1,044,035 frames"
    ended = "standard input ended after 1.8 GB, 1,200,000 frames: finding tunnel ports"
    assert copy_text("-", 1_800_000_000, 1_200_000, True, 80) == ended
    assert (
        copy_text("-", 1_800_000_000, 1_200_000, True, 58)
        == "finding tunnel ports in 1.8 GB, 1,200,000 frames"
    )
    assert copy_text("-", 1_800_000_000, 1_200_000, True, 40) == "finding ports: 1.8 GB, 1,200,000 frames"


def test_the_copy_line_keeps_its_numbers_whole_at_every_width():
    """Widths 10–199, ended or not, with or without a frame count, a clock of seconds or of a day: the numbers are
    whole and the line within the width wherever they fit (breaker54: the clock kept its place and cut them, and
    "1 day, 3:46:40" was wider than the 8 columns kept for it)."""
    for ended in (False, True):
        for frames in (None, 1, 1_044_035, 1_234_567_890):
            nums = "1.6 GB" + (
                "" if frames is None else f", {frames:,} {'frame' if frames == 1 else 'frames'}"
            )
            for elapsed in (3.0, 100_000.0):
                for width in range(10, 200):
                    line = copy_line("-", 1_600_000_000, frames, ended, elapsed, width)
                    assert nums in line, (width, line)
                    assert len(line) <= width or len(nums) > width, (width, line)
    assert copy_line("-", 1_600_000_000, 1_234_567_890, False, 100_000.0, 65) == (
        "reading to its end: 1.6 GB, 1,234,567,890 frames 1 day, 3:46:40"
    )


def test_the_replays_clock_starts_as_it_opens_the_copy():
    """After a stream's copy (``--vxlan-port auto``) the replay's rate counts from when the replay opened the copy
    (``bind_capture``), before its first block: 2,688 frames replayed in 1.792 s read 1,500 frames/s (breaker55: a
    clock restarted at the first count, after that block, read 342,376,838 frames/s)."""
    clock = [1000.0]
    console = Console(file=io.StringIO(), force_terminal=True, width=120, color_system=None)
    prog = progress_display(console)
    prog.get_time = lambda: clock[0]
    report = ProgressReport(prog, prog.add_task("replaying", total=None, frames=0), None, "-")
    report.copying(10**6, 600, False)
    clock[0] += 5
    report.copying(2 * 10**6, 1200, True)
    clock[0] += 2  # tunnel ports found in the copy

    class Copy:  # the open copy, as replay_capture binds it (its size unknown here: the display resets its task)
        source = "-"

    report.bind_capture(Copy())
    clock[0] += 2688 / 1500  # the first block replayed
    report(2688)
    try:
        console.print(report.prog.make_tasks_table(report.prog.tasks))
    finally:
        report.stop()
    assert "2,688 frames 1,500 frames/s" in console.file.getvalue()


def test_the_copy_display_gives_way_to_the_replay_display():
    class Recorder:
        def __init__(self) -> None:
            self.seen: list[str] = []
            self.console = Console(file=io.StringIO(), width=80)

        def start(self) -> None:
            self.seen.append("start")

        def stop(self) -> None:
            self.seen.append("stop")

        def update(self, task, **kw) -> None:
            self.seen.append("update")

        def get_time(self) -> float:
            return 0.0

        def reset(self, task, **kw) -> None:
            self.seen.append("reset")

    class CopyDisplay(Recorder):
        def __init__(self) -> None:
            super().__init__()
            self.task_ids = [0]

    rec, shown = Recorder(), CopyDisplay()
    report = ProgressReport(rec, 0, None)
    report.copy_display = shown  # as ``copying``'s first call leaves it
    report.copying(10, 1, False)

    class Copy:  # the open copy, bound as replay_capture binds it before its first count
        source = "-"

    report.bind_capture(Copy())
    report(1024)  # the replay's first report: the copy's display goes, the replay's clock restarts
    assert shown.seen == ["update", "stop"] and report.copy_display is None
    assert rec.seen == [
        "reset",
        "update",
        "start",
    ]  # counted before it is drawn: no "0 frames" flash (breaker54)
    report.stop()
    assert rec.seen[-1] == "stop"


# --- the command line: stderr a terminal or not ------------------------------------------------------------------


def _run(args: list[str], data: bytes, tty: bool, hold: bool = False, tmpdir: Path | None = None):
    """``gro-replay ARGS`` with ``data`` written to its standard input (a pipe) and stderr a pseudo-terminal
    (``tty``) or a pipe: ``(exit code, stdout, stderr)``. ``hold``: the pipe is left open after ``data`` and the
    process is sent SIGINT once its copy holds it all (``tmpdir``: its ``$TMPDIR``)."""
    env = cli_env()
    env.pop("NO_COLOR", None)
    env["COLUMNS"] = "120"
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    ctl, term = pty.openpty() if tty else (None, None)
    proc = subprocess.Popen(
        [sys.executable, "-c", "from gro_replay.cli import entry; entry()", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=term if tty else subprocess.PIPE,
        env=env,
    )
    err = bytearray()

    def read_tty() -> None:
        read_terminal(ctl, err)

    reader = None
    if tty:
        os.close(term)
        reader = threading.Thread(target=read_tty)
        reader.start()
    assert proc.stdin is not None and proc.stdout is not None
    out = b""
    try:
        if hold:
            proc.stdin.write(data)
            proc.stdin.flush()
            assert tmpdir is not None
            deadline = time.monotonic() + 60
            while len(data) not in file_sizes(tmpdir) or b"tunnel" not in err:
                assert time.monotonic() < deadline and proc.poll() is None, bytes(err)
                time.sleep(0.05)
            proc.send_signal(signal.SIGINT)
            code = proc.wait(timeout=60)
            with contextlib.suppress(BrokenPipeError):
                proc.stdin.close()
        else:
            out, e = proc.communicate(data, timeout=300)
            code = proc.returncode
            if not tty:
                err.extend(e)
    finally:
        if reader is not None:
            reader.join(timeout=60)
            os.close(ctl)
        proc.kill()
        proc.wait()
    return code, out, bytes(err)


def _doc(out: bytes) -> dict:
    doc = json.loads(out)
    doc["input"].pop("path")
    return doc


def test_a_terminal_shows_the_copy_then_the_replay_and_the_document_is_the_files(captures):
    path = captures["vxlan4"]
    want = _doc(
        subprocess.run(
            [*_cli(), str(path), "--vxlan-port", "auto", "--format", "json", "-q"],
            capture_output=True,
            env=cli_env(),
            check=True,
        ).stdout
    )
    data = path.read_bytes()
    code, out, err = _run(["-", "--vxlan-port", "auto", "--format", "json"], data, tty=True)
    assert code == 0, err
    assert _doc(out) == want
    text = _ANSI.sub(b"", err).decode()
    size = f"{path.stat().st_size / 1000:.1f} kB"
    assert "reading standard input to its end for tunnel ports: " in text
    assert f"standard input ended after {size}, {_records(path)} frames: finding tunnel ports" in text
    # the replay's display follows the copy's (the batch path reports from its first block), with the copy's size
    # as its total, as a file's: a percentage
    assert text.index("replaying") > text.index("standard input ended after")
    assert "%" in text[text.index("replaying") :] and "%" not in text[: text.index("replaying")]
    # every display erased: the terminal is left as it was (cursor shown again, last line cleared)
    assert err.endswith(b"\x1b[2K")


@pytest.mark.parametrize("opts", [("-q",), ()], ids=["quiet", "stderr-a-pipe"])
def test_no_display_without_a_terminal_or_with_quiet(captures, opts):
    path = captures["vxlan4"]
    tty = bool(opts)  # -q on a terminal; without -q stderr a pipe
    code, out, err = _run(
        ["-", "--vxlan-port", "auto", "--format", "json", *opts], path.read_bytes(), tty=tty
    )
    assert code == 0 and err == b""
    assert _doc(out)["input"]["tunnel_ports_detected"] == {}


def test_sigint_while_copying_erases_the_display_and_removes_the_copy(captures, tmp_path):
    code, _, err = _run(
        ["-", "--vxlan-port", "auto"], captures["vxlan4"].read_bytes(), tty=True, hold=True, tmpdir=tmp_path
    )
    assert code == 130
    assert b"reading standard input to its end for tunnel ports" in err
    # the display erased before the one line of the interruption
    assert err.endswith(b"gro-replay: interrupted\r\n") and b"\x1b[2Kgro-replay: interrupted" in err
    assert not list(tmp_path.iterdir())


def _cli() -> list[str]:
    return [sys.executable, "-c", "from gro_replay.cli import entry; entry()"]
