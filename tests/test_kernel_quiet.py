"""``kernel`` and ``validate`` take ``-q``/``--quiet`` as replay does (README "Usage": ``-q``; docs/kernel-backend.md):
a progress display on a terminal's stderr while the capture is read, none with ``-q``.

Before, ``kernel -q`` was accepted and did nothing (its help said so) and ``validate`` had no ``-q``. The capture is
read and decoded whole before the kernel backend sends the first frame (validate.load_capture); that reading now
reports its progress like the replay's (sim/api.py ``counting``: every 1024 frames).
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys

import pytest
from conftest import ROOT, read_terminal, skip_without_kernel_backend

from gro_replay.cli import main
from gro_replay.cli.app import mount_all
from gro_replay.sim import ReplayConfig
from gro_replay.synth import Scenario, write_scenario
from gro_replay.validate import load_capture

mount_all()


@pytest.fixture(scope="module")
def capture(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("q") / "bulk.pcap"
    write_scenario(path, Scenario(flows=2, frames=1500))  # 3000 frames: progress calls at 1024 and 2048
    return str(path)


def test_load_capture_reports_progress(capture) -> None:
    calls: list[int] = []
    loaded = load_capture(capture, ReplayConfig(), calls.append)
    assert calls == [1024, 2048]
    assert len(loaded.frames) == 3000


@pytest.mark.parametrize("name", ["kernel", "validate"])
def test_quiet_is_an_option_of_the_backend_commands(name) -> None:
    opts = {o for p in main.commands[name].params for o in getattr(p, "opts", [])}
    assert {"-q", "--quiet"} <= opts
    help_text = next(p.help for p in main.commands[name].params if "--quiet" in getattr(p, "opts", []))
    assert "changes nothing" not in help_text


def _stderr_on_a_terminal(args: list[str]) -> tuple[int, bytes]:
    """Run the console entry with stderr on a pseudo-terminal; its exit code and what it wrote there."""
    env = dict(
        os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), COLUMNS="120"
    )
    env.pop("NO_COLOR", None)
    ctl, term = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-c", "from gro_replay.cli import entry; entry()", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=term,
        env=env,
    )
    os.close(term)
    out = read_terminal(ctl)
    os.close(ctl)
    return proc.wait(timeout=120), out


def test_kernel_shows_progress_unless_quiet_like_replay(capture) -> None:
    skip_without_kernel_backend()
    for cmd in ([capture], ["kernel", capture]):
        code, shown = _stderr_on_a_terminal(cmd)
        assert code == 0 and b"frames" in shown, (cmd, shown[-300:])
        code, shown = _stderr_on_a_terminal([*cmd, "-q"])
        assert code == 0 and shown == b"", (cmd, shown[-300:])
