"""Exports beside the screen (``--json FILE``, ``--markdown FILE``), the progress display, shell completion and
the man pages (issue 14)."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner
from conftest import FIX_SAMPLE, ROOT, VXLAN4_SAMPLE, on_a_terminal, skip_without_kernel_backend
from rich.console import Console

from gro_replay.cli import main
from gro_replay.cli.output import ProgressReport, input_size, progress_display
from gro_replay.sim import ReplayConfig, replay_capture


def run(*args, **kw):
    r = CliRunner().invoke(main, [str(a) for a in args], **kw)
    assert "Traceback" not in r.output, r.output
    return r


# -- exports ----------------------------------------------------------------------------------------------------
def test_json_export_beside_the_table_equals_format_json(tmp_path):
    out = tmp_path / "out.json"
    r = run(FIX_SAMPLE, "--json", out, "-q")
    assert r.exit_code == 0, r.output
    assert "GRO aggregation, before vs after 89e5c58fc1e2" in r.stdout  # the table is on the terminal
    assert r.stdout.rstrip().splitlines()[-1].startswith("SUMMARY kernels=pre-fix,post-fix ")
    ref = run(FIX_SAMPLE, "--format", "json", "-q")
    assert out.read_text() == ref.stdout  # byte for byte the document --format json prints
    assert json.loads(out.read_text())["summary"] == r.stdout.rstrip().splitlines()[-1]


def test_markdown_export_and_both_at_once(tmp_path):
    md, js = tmp_path / "r.md", tmp_path / "r.json"
    r = run(VXLAN4_SAMPLE, "--markdown", md, "--json", js, "-q")
    assert r.exit_code == 0 and "GRO aggregation" in r.stdout
    assert md.read_text() == run(VXLAN4_SAMPLE, "--format", "markdown", "-q").stdout
    assert js.read_text() == run(VXLAN4_SAMPLE, "--format", "json", "-q").stdout


def test_dash_prints_the_export_instead_of_the_table(tmp_path):
    r = run(FIX_SAMPLE, "--json", "-", "--markdown", tmp_path / "r.md", "-q")
    assert r.exit_code == 0 and "GRO aggregation" not in r.stdout
    assert json.loads(r.stdout)["summary"].startswith("SUMMARY ")
    assert (tmp_path / "r.md").read_text().startswith("- input: ")


@pytest.mark.parametrize(
    "args",
    [
        ["--json", "-", "--format", "json"],
        ["--json", "-", "--markdown", "-"],
        ["--trace", "-", "--json", "-"],
        ["--markdown", "-", "--format", "markdown"],
    ],
)
def test_two_exports_on_stdout_are_refused(args):
    r = run(FIX_SAMPLE, *args, "-q")
    assert r.exit_code == 2 and "write to stdout" in r.stderr and r.stderr.count("\n") == 1


def test_unwritable_export_is_one_line_exit_2(tmp_path):
    r = run(FIX_SAMPLE, "--json", tmp_path / "no" / "such" / "dir.json", "-q")
    assert r.exit_code == 2 and r.stderr.startswith("Error: --json ") and r.stderr.count("\n") == 1


def test_summary_keys_split_for_kernel_names_with_dots():
    r = run(FIX_SAMPLE, "--kernel", "5.11", "--kernel", "6.18", "--poll", "budget", "-q", "--no-hist")
    line = r.stdout.rstrip().splitlines()[-1]
    assert line.startswith("SUMMARY ")
    pairs = dict(kv.split("=", 1) for kv in line.split()[1:])  # README: split on spaces, then the first "="
    per_kernel = {}
    for key, value in pairs.items():
        m = re.fullmatch(r"kernel\[([^]]*)\]\.(\w+)", key)
        if m:
            per_kernel.setdefault(m[1], {})[m[2]] = int(value)
    assert pairs["kernels"].split(",") == ["pre-fix", "6.18"]
    # the 6.18 profile is named by its release: the dots stay inside the brackets. Budget poll: all 17 frames in
    # one poll; pre-fix (5.11) refuses each at the gate (17 phys skbs), 6.18 has the fix and merges them into one.
    assert per_kernel == {
        "pre-fix": {"phys_skbs": 17, "phys_aggregates": 0, "tunnel_skbs": 1, "tunnel_aggregates": 1},
        "6.18": {"phys_skbs": 1, "phys_aggregates": 1, "tunnel_skbs": 1, "tunnel_aggregates": 1},
    }


# -- progress ---------------------------------------------------------------------------------------------------
def test_progress_with_a_known_size_shows_percentage_rate_and_time_left():
    console = Console(file=io.StringIO(), force_terminal=True, width=200, color_system=None)
    prog = progress_display(console)
    task = prog.add_task("replaying", total=1_000_000, frames=0)
    prog.update(task, completed=250_000, frames=1000)
    prog.update(task, completed=500_000, frames=2000)
    console.print(prog.make_tasks_table(prog.tasks))
    text = console.file.getvalue()
    assert "50%" in text and "2,000 frames" in text and "frames/s" in text
    # each time says what it is (newcomer's finding: "0:00:00 left 0:00:08" read as the wrong pair)
    assert re.search(r"elapsed \d+:\d\d:\d\d · (\d+:\d\d:\d\d|-:--:--) left", text), text


def test_progress_fits_one_line_of_an_80_column_terminal():
    """At 80 columns the line drops MB/s and the elapsed time and shortens the bar (newcomer's finding: it wrapped
    onto two lines, cut to "frames…"), keeping the percentage, frames, rate and time left; 10 million frames fit."""
    console = Console(file=io.StringIO(), force_terminal=True, width=80, color_system=None)
    prog = progress_display(console)
    task = prog.add_task("replaying", total=10**10, frames=0)
    prog.update(task, completed=5 * 10**9, frames=10_000_000)
    prog.tasks[0].start_time -= 10  # 10 s in: 1,000,000 frames/s (an instant would give billions)
    console.print(prog.make_tasks_table(prog.tasks))
    lines = console.file.getvalue().splitlines()
    assert len(lines) == 1 and len(lines[0]) <= 80, lines
    assert "50%" in lines[0] and "10,000,000 frames" in lines[0] and "frames/s" in lines[0]
    assert re.search(r"(\d+:\d\d:\d\d|-:--:--) left$", lines[0].rstrip()), lines


@pytest.mark.parametrize("width", [40, 63, 64, 79, 80, 129, 130])
@pytest.mark.parametrize("total", [10**10, None])
def test_progress_stays_one_line_at_any_width(width, total):
    """Narrower terminals drop the bar (under 80 columns), then the rate and time (under 64): the line never wraps
    (breaker's finding: it did at 60 and 40 columns), and percentage and frames always show."""
    console = Console(file=io.StringIO(), force_terminal=True, width=width, color_system=None)
    prog = progress_display(console)
    task = prog.add_task("replaying", total=total, frames=0)
    prog.update(task, completed=5 * 10**9 if total else 0, frames=10_000_000)
    prog.tasks[0].start_time -= 10
    console.print(prog.make_tasks_table(prog.tasks))
    lines = console.file.getvalue().splitlines()
    assert len(lines) == 1 and len(lines[0].rstrip()) <= width, lines
    assert "10,000,000 frames" in lines[0] and (total is None or "50%" in lines[0])


@pytest.mark.parametrize("width", [64, 65, 66])
def test_progress_keeps_a_billion_frames_with_its_noun_on_one_line(width):
    """1,234,567,890 frames of a 30 GB file at 1.5 M frames/s: at 64–66 columns the line wrapped, "frames" on a
    second line under its count (breaker52); the count and the rate are never split, a column gives way instead."""
    console = Console(file=io.StringIO(), force_terminal=True, width=width, color_system=None)
    prog = progress_display(console)
    task = prog.add_task("replaying", total=30 * 10**9, frames=0)
    prog.update(task, completed=29_629_629_360, frames=1_234_567_890)
    prog.tasks[0].start_time -= 1_234_567_890 / 1.5e6
    console.print(prog.make_tasks_table(prog.tasks))
    lines = console.file.getvalue().splitlines()
    assert len(lines) == 1 and len(lines[0].rstrip()) <= width, lines
    assert "1,234,567,890 frames" in lines[0] and "frames/s" in lines[0], lines


def _progress_at(total, width: int, frames: int, seconds: float) -> list[str]:
    """The progress line of ``frames`` frames (``total`` bytes, None: a pipe) after ``seconds`` on a fixed clock."""
    clock = [1000.0]
    console = Console(file=io.StringIO(), force_terminal=True, width=width, color_system=None)
    prog = progress_display(console)
    prog.get_time = lambda: clock[0]
    task = prog.add_task("replaying", total=total, frames=0)
    done = frames * 1500 if total is None else total * 2 // 3
    for half in (1, 2):
        clock[0] += seconds / 2
        prog.update(task, completed=done * half // 2, frames=frames * half // 2)
    console.print(prog.make_tasks_table(prog.tasks))
    return console.file.getvalue().rstrip("\n").split("\n")


def test_progress_parts_give_way_whole_at_every_width():
    """Widths 20–250, a pipe or a 30 TB file, 0 to 10^12 frames, seconds to days: one line, no wider than the
    terminal once the frames fit, the count beside its noun, and no part cut short ("…" only as an unknown rate):
    parts give way whole (breaker53: "1 day," / "3:46:40" on two lines, "1,000 fram…", "5…" for 50%)."""
    for total in (None, 30 * 10**12):
        for frames in (0, 1, 1000, 12_345_678, 1_234_567_890, 10**12):
            noun = f"{frames:,} {'frame' if frames == 1 else 'frames'}"
            for seconds in (2.0, 100_000.0):
                for width in range(20, 251):
                    lines = _progress_at(total, width, frames, seconds)
                    assert len(lines) == 1, (width, lines)
                    line = lines[0].rstrip()
                    if len(noun) + 1 <= width:
                        assert len(line) <= width and noun in line, (width, line)
                        assert "…" not in line.replace("… frames/s", "").replace("… bytes/s", ""), (
                            width,
                            line,
                        )


def test_progress_shows_slow_rates_with_a_tenth():
    """A slow pipe: 3 frames in 2.5 s read "1.2 frames/s", 1 in 3 s "0.3 frames/s", not "1 frames/s" or a known
    rate of "0 frames/s" beside a replayed frame (breaker53)."""
    assert "3 frames 1.2 frames/s" in _progress_at(None, 100, 3, 2.5)[0]
    assert "1 frame 0.3 frames/s" in _progress_at(None, 100, 1, 3.0)[0]


@pytest.mark.parametrize(("start", "now"), [(140, 80), (140, 60), (100, 40), (60, 140), (30, 140)])
@pytest.mark.parametrize("total", [10**9, None])
def test_progress_follows_a_terminal_resized_during_the_replay(start, now, total):
    """The line is laid out for the width at each refresh (breaker54: a terminal narrowed from 140 to 70 columns
    cut the line laid out for 140 to "rep…  41% … 0:00:0…", and widened kept the narrow form)."""
    clock = [1000.0]
    console = Console(file=io.StringIO(), force_terminal=True, width=start, color_system=None)
    prog = progress_display(console)
    prog.get_time = lambda: clock[0]
    task = prog.add_task("replaying", total=total, frames=0)
    for half in (1, 2):
        clock[0] += 37
        prog.update(task, completed=(total or 10**6) * half // 3, frames=1_234_567 * half)
    console.width = now
    console.print(prog.make_tasks_table(prog.tasks))
    lines = console.file.getvalue().rstrip("\n").split("\n")
    assert len(lines) == 1 and len(lines[0]) <= now and "2,469,134 frames" in lines[0], lines
    assert "…" not in lines[0].replace("… bytes/s", ""), lines
    assert ("━" in lines[0]) == (total is not None and now >= 80), lines  # the bar of the new width


def test_progress_rate_reads_the_count_at_its_update():
    """A count updated block by block: the rate is the count over the time to its update, not over a clock that
    ran on (breaker54: a steady 1,500 frames/s pipe read 834 to 1,512 between two blocks of 2,688 frames)."""
    clock = [1000.0]
    console = Console(file=io.StringIO(), force_terminal=True, width=120, color_system=None)
    prog = progress_display(console)
    prog.get_time = lambda: clock[0]
    task = prog.add_task("replaying", total=None, frames=0)
    clock[0] += 2688 / 1500
    prog.update(task, completed=2688, frames=2688, frames_at=clock[0], updates=1)
    clock[0] += 1.5  # the next block not yet counted
    console.print(prog.make_tasks_table(prog.tasks))
    assert "2,688 frames 1,500 frames/s" in console.file.getvalue()
    # a stall: no count for more than twice the mean time between counts (2 × 1.792 s) reads the running clock,
    # 2,688 frames over 1.792 + 5 s (breaker55: a burst's 27,206 frames/s held through a 6 s stall)
    clock[0] += 3.5
    console.print(prog.make_tasks_table(prog.tasks))
    assert f"2,688 frames {2688 / (2688 / 1500 + 5):,.0f} frames/s" in console.file.getvalue()
    assert "10 frames <0.1 frames/s" in _progress_at(None, 100, 10, 100_000.0)[0]


def test_no_display_under_a_trace_to_the_same_terminal(tmp_path):
    """``--trace -`` on the terminal the display is drawn on ran trace lines into the bar ("… leftpre-fix
    0.002623: …", breaker54), and so did ``/dev/stdout`` and ``/dev/tty`` (breaker55): no display then; a trace
    to a file keeps it."""
    for trace in ("-", "/dev/stdout", "/dev/tty"):  # breaker55: the terminal under another name
        code, out = on_a_terminal(str(FIX_SAMPLE), "--no-hist", "--trace", trace)
        assert code == 0 and b"replaying" not in out and b"vxlan0" in out, (trace, out[:200])
    code, out = on_a_terminal(str(FIX_SAMPLE), "--no-hist", "--trace", str(tmp_path / "t.txt"))
    assert code == 0 and b"replaying" in out


def test_no_display_and_no_blank_line_on_a_dumb_terminal(monkeypatch, tmp_path):
    """TERM=dumb draws no display; it left a blank line where it would have been (breaker54)."""
    monkeypatch.setenv("TERM", "dumb")
    code, out = on_a_terminal(str(FIX_SAMPLE), "--no-hist", "--trace", str(tmp_path / "t.txt"))
    assert code == 0 and out.startswith(b"input: "), out[:80]


def test_progress_before_the_first_bytes_shows_no_question_mark():
    """Before any byte is read the rates are unknown: "… frames/s … bytes/s", not rich's "?" for bytes/s."""
    console = Console(file=io.StringIO(), force_terminal=True, width=200, color_system=None)
    prog = progress_display(console)
    prog.add_task("replaying", total=10**9, frames=0)
    console.print(prog.make_tasks_table(prog.tasks))
    text = console.file.getvalue()
    assert "… frames/s … bytes/s" in text and "?" not in text, text


def test_progress_without_a_size_shows_frames_and_rate():
    console = Console(file=io.StringIO(), force_terminal=True, width=200, color_system=None)
    prog = progress_display(console)
    task = prog.add_task("replaying", total=None, frames=0)
    prog.update(task, completed=3000, frames=3000)
    console.print(prog.make_tasks_table(prog.tasks))
    text = console.file.getvalue()
    assert "3,000 frames" in text and "%" not in text


@pytest.mark.parametrize("frames, words", [(0, "0 frames"), (1, "1 frame "), (2, "2 frames")])
def test_progress_says_one_frame_in_the_singular(frames, words):
    """The frames column is English at 1 (breaker50: "1 frames")."""
    console = Console(file=io.StringIO(), force_terminal=True, width=200, color_system=None)
    prog = progress_display(console)
    task = prog.add_task("replaying", total=None, frames=0)
    prog.update(task, completed=frames, frames=frames)
    console.print(prog.make_tasks_table(prog.tasks))
    assert f" {words}" in console.file.getvalue() + " "


def test_progress_report_counts_the_bytes_of_the_file():
    class Recorder:
        def __init__(self):
            self.calls = []
            self.shown = []

        def update(self, task, **kw):
            self.calls.append(kw)

        def get_time(self):
            return 0.0

        def start(self):
            self.shown.append("start")

        def stop(self):
            self.shown.append("stop")

    size = input_size(str(VXLAN4_SAMPLE))
    assert size == os.path.getsize(VXLAN4_SAMPLE)
    rec = Recorder()
    report = ProgressReport(rec, 0, size)
    report.stop()
    assert rec.shown == []  # never called: never shown, nothing to stop
    replay_capture(str(VXLAN4_SAMPLE), ReplayConfig(), None, report)
    replay_capture(str(VXLAN4_SAMPLE), ReplayConfig(), None, None)
    assert report.capture is not None  # bound to the open capture
    report(400)
    assert rec.calls[-1]["completed"] == size and rec.calls[-1]["frames"] == 400
    report.stop()
    assert rec.shown == ["start", "stop"]  # shown from the first call on (the batch path's first block), once
    assert input_size("-") is None and input_size("/nonexistent/x.pcap") is None


# -- shell completion -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("shell", "marker"),
    [
        ("bash", "complete -o nosort -F _gro_replay_completion gro-replay"),
        ("zsh", "#compdef gro-replay"),
        ("fish", "complete --no-files --command gro-replay"),
    ],
)
def test_completion_script_generates(shell, marker):
    r = CliRunner().invoke(main, [], env={"_GRO_REPLAY_COMPLETE": f"{shell}_source"}, prog_name="gro-replay")
    assert r.exit_code == 0 and marker in r.stdout


def test_completion_answers_commands_and_options():
    env = {"_GRO_REPLAY_COMPLETE": "bash_complete", "COMP_WORDS": "gro-replay sch", "COMP_CWORD": "1"}
    r = CliRunner().invoke(main, [], env=env, prog_name="gro-replay")
    assert r.stdout.split() == ["plain,schema"]
    env = {
        "_GRO_REPLAY_COMPLETE": "bash_complete",
        "COMP_WORDS": "gro-replay x.pcap --pcap-f",
        "COMP_CWORD": "2",
    }
    r = CliRunner().invoke(main, [], env=env, prog_name="gro-replay")
    assert r.stdout.split() == ["plain,--pcap-format"]  # the default command's options (gro-replay CAPTURE …)


def test_completion_from_the_console_entry():
    env = {**os.environ, "_GRO_REPLAY_COMPLETE": "bash_source", "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", "from gro_replay.cli import entry; entry()"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0 and "_gro_replay_completion" in out.stdout


# -- man pages --------------------------------------------------------------------------------------------------
def test_man_pages_generate_and_render(tmp_path):
    pytest.importorskip("click_man", reason="the man extra (click-man) is part of the test extra")
    from gro_replay.manpage import write_man_pages

    pages = write_man_pages(tmp_path)
    names = {p.name for p in pages}
    assert {"gro-replay.1", "gro-replay-replay.1", "gro-replay-diff.1", "gro-replay-explain.1"} <= names
    text = _rendered(tmp_path / "gro-replay-replay.1")
    assert "gro-replay replay [OPTIONS] CAPTURE" in text
    assert "--write-pcap" in text and "--pcap-format" in text and "--flow" in text


def _rendered(page, width: int = 100) -> str:
    """``page`` as ``man -l`` (else ``groff -man``) renders it, ``width`` columns, plain text."""
    man, groff = shutil.which("man"), shutil.which("groff")
    assert man or groff, "neither man nor groff is installed: make deps installs man-db and groff-base"
    if man:
        cmd = [man, "-l", str(page)]
        env = {**os.environ, "MANPAGER": "cat", "PAGER": "cat", "MANWIDTH": str(width), "LANG": "C.UTF-8"}
    else:
        cmd, env = [groff, "-man", "-Tutf8", f"-rLL={width}n", str(page)], dict(os.environ)
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    text = re.sub(r".\x08", "", out.stdout)  # overstrike bold/underline, if any
    return re.sub("\u2010\n\\s*", "", text)  # a word hyphenated at the end of a line, whole again


def test_man_pages_keep_examples_apart_and_name_lines_whole(tmp_path):
    """The help's unwrapped blocks (click's \\b paragraphs: gro-replay's examples) render one example a line, and
    every NAME line and COMMANDS entry is the command's whole summary, not cut at 45 characters with "..."
    (click-man 0.6's default); "--fix" is typed as hyphen-minus (\\-), so it can be copied from the page."""
    pytest.importorskip("click_man", reason="the man extra (click-man) is part of the test extra")
    from gro_replay.cli.app import main, mount_all
    from gro_replay.manpage import summary, write_man_pages

    pages = write_man_pages(tmp_path)
    text = _rendered(tmp_path / "gro-replay.1", 150)
    lines = [ln.strip() for ln in text.splitlines()]
    for example in (
        "gro-replay CAPTURE              compare the pre-fix (5.11) and post-fix (5.12) kernels",
        "gro-replay CAPTURE --no-fix     only the pre-fix kernel (--fix: only post-fix; --kernel 6.18: that release)",
        "gro-replay synth OUT.pcap       write a scenario capture",
    ):
        assert example in lines
    assert not re.search(r"[a-z,]\.\.\.", text) and "\x08" not in (tmp_path / "gro-replay.1").read_text()
    mount_all()
    flat = " ".join(text.split())
    for name, cmd in main.commands.items():
        assert " ".join(summary(cmd).split()) in flat, name  # the COMMANDS entry, whole
    for page in pages:
        rendered = " ".join(_rendered(page, 150).split())
        name = page.stem.removeprefix("gro-replay").removeprefix("-")
        cmd = main.commands[name] if name else main
        assert f"NAME {page.stem} - {' '.join(summary(cmd).split())} SYNOPSIS" in rendered, page.name


def _backend_environment() -> None:
    """Skip unless the kernel backend can run here: without root, namespaces or tracefs ``kernel``/``validate``
    report that (exit 3) before they read the capture."""
    skip_without_kernel_backend("the kernel backend's environment is checked first here")


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["-"], "Error: standard input is a terminal: pipe a capture into it"),
        (["explain", "-"], "Error: standard input is a terminal: pipe a capture into it"),
        (["kernel", "-"], "Error: standard input is a terminal: pipe a capture into it"),
        (
            ["batch", "-"],
            "Error: batch reads capture files: its Dask workers do not share this process's standard input (-); "
            "for a single stream use 'gro-replay -'; see 'gro-replay batch --help'",
        ),
        (["/nonexistent/x.pcap"], "Error: /nonexistent/x.pcap: no such file"),
        # refused before a copy of standard input is begun (capture/spool.py)
        (["-", "--detect-tunnels"], "Error: standard input is a terminal: pipe a capture into it"),
        (
            [str(VXLAN4_SAMPLE), "--interface", "7"],
            f"Error: {VXLAN4_SAMPLE}: --interface 7: the capture holds one",
        ),
    ],
    ids=[
        "stdin",
        "explain-stdin",
        "kernel-stdin",
        "batch-stdin",
        "missing",
        "detect-on-terminal",
        "interface",
    ],
)
def test_early_refusal_comes_before_any_progress_display(args, line):
    """With stderr a terminal (progress on) a refusal is the only thing written: before the fix rich's bar
    ("replaying 0 frames …", cursor hidden, line erased) flashed before it. The display starts with the first
    progress report (the batch path's first block, or 1,024 frames; cli/output.py ProgressReport), after every
    refusal that comes before them."""
    if args[0] == "kernel":
        _backend_environment()
    code, out = on_a_terminal(*args)
    assert code == 2, out
    assert out.startswith(line.encode()) and out.endswith(b"\r\n") and out.count(b"\n") == 1, out
    assert b"\x1b" not in out and b"replaying" not in out, out
