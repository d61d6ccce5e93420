"""The public one-shot API (``gro_replay.replay``, ``gro_replay.document``) and ``python -m gro_replay``.

Expected values: the 89e5c58fc1e2 commit message's traces for the shipped fix scenario (gap polls of 5 µs): before
the fix 17 single skbs of len 1500/774 on eth0, after it two aggregates of 14082 and 9162 bytes on eth0
(tests/test_fix_scenario.py derives them from the mail).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import FIX_SAMPLE, ROOT

import gro_replay
from gro_replay.kernel.model import K_5_11, K_5_12
from gro_replay.sim import PollModel


def test_replay_gives_the_fix_mails_phys_skbs():
    res = gro_replay.replay(str(FIX_SAMPLE), kernels=(K_5_11, K_5_12), poll=PollModel.parse("gap:5"))
    doc = gro_replay.document(res)
    phys = {k["name"]: k["stages"]["phys"] for k in doc["kernels"]}
    assert phys["pre-fix"]["skbs_delivered"] == 17
    assert phys["post-fix"]["skbs_delivered"] == 2
    assert doc["input"]["frames_read"] == 17


def test_replay_takes_a_config_or_options_not_both():
    with pytest.raises(TypeError):
        gro_replay.replay(str(FIX_SAMPLE), gro_replay.ReplayConfig(), rx_csum="none")
    with pytest.raises(TypeError):
        gro_replay.replay(str(FIX_SAMPLE), no_such_option=1)


def test_python_dash_m_runs_the_cli():
    out = subprocess.run(
        [sys.executable, "-m", "gro_replay", "--version"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    assert out.stdout.strip().endswith(gro_replay.__version__)
    out = subprocess.run(
        [sys.executable, "-m", "gro_replay", str(FIX_SAMPLE), "--poll", "gap:5", "--format", "json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    doc = json.loads(out.stdout)
    assert doc["input"]["frames_read"] == 17
