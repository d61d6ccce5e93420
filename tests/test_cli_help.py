"""The commands' ``--help`` says what the options do: a metavar that names what the value is (FILE, DIR, N, BYTES,
NS, US…, never click's TEXT / INTEGER RANGE / FLOAT), the bounds of every number, and the files ``--write-pcap``
writes and what ``-q`` hides checked against what a run does."""

from __future__ import annotations

import click
import pytest
from conftest import FIX_SAMPLE

from gro_replay.cli import main
from gro_replay.cli.app import COMMANDS, mount_all

mount_all()

OPTIONS = [
    (name, p)
    for name in sorted(COMMANDS)
    for p in main.commands[name].params
    if isinstance(p, click.Option) and not p.is_flag
]


def _record(name: str, p: click.Option) -> tuple[str, str]:
    ctx = click.Context(main.commands[name], info_name=name)
    rec = p.get_help_record(ctx)
    assert rec is not None
    return rec


@pytest.mark.parametrize(("name", "param"), OPTIONS, ids=lambda x: getattr(x, "name", x))
def test_metavar_names_the_value(name, param) -> None:
    opts, _help = _record(name, param)
    for generic in ("TEXT", "INTEGER", "FLOAT", "RANGE", "PATH"):
        assert generic not in opts, opts


@pytest.mark.parametrize(
    ("name", "param"),
    [(n, p) for n, p in OPTIONS if isinstance(p.type, (click.IntRange, click.FloatRange))],
    ids=lambda x: getattr(x, "name", x),
)
def test_numbers_show_their_bounds(name, param) -> None:
    _opts, help_text = _record(name, param)
    assert "x>=" in help_text or "<=x" in help_text or "x<=" in help_text, help_text


def test_flows_max_bound() -> None:
    """A count of listed flows: 0 .. 10^9 like the other counts (--limit, --frames), not 2^32."""
    p = next(p for p in main.commands["replay"].params if p.name == "flows_max")
    assert (p.type.min, p.type.max) == (0, 10**9)


def _help(runner, *args: str) -> str:
    r = runner.invoke(main, [*args, "--help"], prog_name="gro-replay", terminal_width=400)
    assert r.exit_code == 0
    return " ".join(r.stdout.split())


@pytest.mark.parametrize(
    ("fmt", "expected"),
    [
        ("pcapng", {"pre-fix.pcapng", "post-fix.pcapng"}),
        ("pcap", {"pre-fix-eth0.pcap", "pre-fix-vxlan0.pcap", "post-fix-eth0.pcap", "post-fix-vxlan0.pcap"}),
    ],
)
def test_write_pcap_help_names_the_files_written(runner, tmp_path, fmt, expected) -> None:
    """The fix sample through both kernels: pcapng one file per kernel, pcap one per kernel and device
    (eth0 the phys device, vxlan0 the tunnel device, report/pcapout.py); the help names both patterns."""
    r = runner.invoke(main, [str(FIX_SAMPLE), "--write-pcap", str(tmp_path), "--pcap-format", fmt])
    assert r.exit_code == 0, r.output
    assert {p.name for p in tmp_path.iterdir()} == expected
    text = _help(runner, "replay")
    assert "DIR/<kernel>.pcapng" in text and "DIR/<kernel>-<dev>.pcap" in text
    assert "pre-fix.pcapng and post-fix.pcapng" in text and "pre-fix-eth0.pcap" in text


def test_quiet_help_says_what_it_hides(runner, tmp_path) -> None:
    """-q hides the 'wrote FILE (N frames)' lines (the progress bar needs a terminal); the report is unchanged."""
    args = [str(FIX_SAMPLE), "--write-pcap", str(tmp_path)]
    loud, quiet = runner.invoke(main, args), runner.invoke(main, [*args, "-q"])
    assert loud.exit_code == quiet.exit_code == 0
    assert [line.split(" (")[0] for line in loud.stderr.splitlines()] == [
        f"wrote {tmp_path / 'pre-fix.pcapng'}",
        f"wrote {tmp_path / 'post-fix.pcapng'}",
    ]
    assert quiet.stderr == "" and quiet.stdout == loud.stdout
    text = _help(runner, "replay")
    assert "no notes" not in text and "'wrote FILE (N frames)' lines of --write-pcap" in text


@pytest.mark.parametrize("name", ["replay", "kernel"])
def test_trace_metavar_is_file(runner, name) -> None:
    assert "--trace FILE" in _help(runner, name)
