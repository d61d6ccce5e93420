"""``--plot FILE.svg|png`` (matplotlib, the ``plot`` extra) and the replay command's stderr: progress, --quiet."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from gro_replay.cli import main, output

ROOT = Path(__file__).resolve().parents[1]
FIX_SAMPLE = ROOT / "sample_pcaps" / "vxlan-zero-csum-fix-89e5c58fc1e2.pcap"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("ext", ["png", "svg"])
def test_plot_writes_file(tmp_path, ext):
    pytest.importorskip("matplotlib", reason="matplotlib not installed (pip install '.[plot]')")
    out = tmp_path / f"segs.{ext}"
    r = CliRunner().invoke(main, [str(FIX_SAMPLE), "--plot", str(out), "--format", "json", "-q"])
    assert r.exit_code == 0, r.output
    data = out.read_bytes()
    if ext == "png":
        assert data.startswith(PNG_MAGIC)
    else:
        assert data.lstrip().startswith(b"<?xml") and b"<svg" in data[:2000]


def test_plot_figure_bars_are_the_segment_histograms():
    pytest.importorskip("matplotlib", reason="matplotlib not installed (pip install '.[plot]')")
    from gro_replay.report.plot import segs_figure
    from gro_replay.sim import PollModel, ReplayConfig, replay_capture

    result = replay_capture(str(FIX_SAMPLE), ReplayConfig(poll=PollModel("budget")))
    axes = segs_figure(result).axes  # row-major: phys pre, phys post, tunnel pre, tunnel post

    def bars(ax):
        return {
            round(b.get_x() + b.get_width() / 2): int(b.get_height()) for b in ax.patches if b.get_height()
        }

    # pre-fix phys: the gate refuses all 17 frames (gro-spec §4.7 row 3) → 17 skbs of 1 segment;
    # post-fix phys: one poll, one 17-segment aggregate; tunnel: 17 segments per skb in both (§6.3, §6.6)
    assert [bars(ax) for ax in axes] == [{1: 17}, {17: 1}, {17: 1}, {17: 1}]


def test_plot_title_names_the_capture_as_the_report_does():
    """The figure's title names the capture's file, and a capture read from standard input (``input.path`` "-",
    as sim/api.py records a stream) as "standard input", as the report's sentences do (newcomer's finding: "GRO
    segments per skb: -")."""
    pytest.importorskip("matplotlib", reason="matplotlib not installed (pip install '.[plot]')")
    from gro_replay.report.plot import segs_figure
    from gro_replay.sim import ReplayConfig, replay_capture

    result = replay_capture(str(FIX_SAMPLE), ReplayConfig())
    assert segs_figure(result)._suptitle.get_text() == f"GRO segments per skb: {FIX_SAMPLE.name}"
    result.input.path = "-"
    assert segs_figure(result)._suptitle.get_text() == "GRO segments per skb: standard input"


def test_plot_bad_extension_exit_2(tmp_path):
    r = CliRunner().invoke(main, [str(FIX_SAMPLE), "--plot", str(tmp_path / "x.jpg"), "-q"])
    assert r.exit_code == 2
    assert r.stderr == f"Error: --plot {tmp_path / 'x.jpg'}: the file name must end in .svg or .png\n"


def test_plot_without_matplotlib_exit_2(tmp_path, monkeypatch):
    # a None entry in sys.modules makes `import matplotlib` raise ImportError, as when it is not installed
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    out = tmp_path / "x.png"
    r = CliRunner().invoke(main, [str(FIX_SAMPLE), "--plot", str(out), "-q"])
    assert r.exit_code == 2
    assert r.stderr == (
        "Error: --plot needs matplotlib: pip install '.[plot]' in the gro-replay source tree (or: pip install "
        "'matplotlib>=3.7,<4')\n"
    )
    assert r.stderr.count("\n") == 1 and r.stdout == ""  # refused before replaying
    assert not out.exists()


# -- progress bar and --quiet ---------------------------------------------------------------------------------------
class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_only_on_a_terminal_and_not_quiet(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert output.start_progress(False) == (None, None)
    monkeypatch.setattr(sys, "stderr", _Tty())
    assert output.start_progress(True) == (None, None)


def test_progress_shows_frames_per_second(monkeypatch):
    monkeypatch.setattr(sys, "stderr", _Tty())
    monkeypatch.delenv("NO_COLOR", raising=False)
    prog, cb = output.start_progress(False)
    try:
        cb(1024)
        cb(2048)
        shown = Console(file=io.StringIO(), width=200)
        shown.print(prog.make_tasks_table(prog.tasks))
        line = shown.file.getvalue()
    finally:
        prog.stop()
    assert "2,048 frames " in line and " frames/s" in line, line
    assert prog.console.no_color is False


def test_progress_honours_no_color(monkeypatch):
    monkeypatch.setattr(sys, "stderr", _Tty())
    monkeypatch.setenv("NO_COLOR", "1")
    prog, _ = output.start_progress(False)
    prog.stop()
    assert prog.console.no_color is True


def test_quiet_replay_writes_nothing_to_stderr(tmp_path):
    r = CliRunner().invoke(main, [str(FIX_SAMPLE), "--write-pcap", str(tmp_path), "--quiet"])
    assert r.exit_code == 0
    assert r.stderr == ""
    assert "SUMMARY " in r.stdout
