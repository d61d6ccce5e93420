"""Click's usage errors, every kind on every command: one line ``Error: …`` on stderr and exit code 2 (README "Exit
codes"; HELPERS "Bad input: a one-line error and exit 2"), not click's four lines (Usage / Try / blank / Error).

The cases are generated from the commands' own parameters (``app.COMMANDS``, every option of each), so a new option
or command is covered without editing this file.
"""

from __future__ import annotations

import os
import subprocess
import sys

import click
import pytest
from conftest import FIX_SAMPLE, required_cli_args

from gro_replay.cli import main
from gro_replay.cli.app import COMMANDS, mount_all

mount_all()


def _options(kind):
    return [
        (name, p)
        for name in sorted(COMMANDS)
        for p in main.commands[name].params
        if isinstance(p, click.Option) and not p.is_flag and isinstance(p.type, kind)
    ]


def _long(p: click.Option) -> str:
    return max(p.opts, key=len)


def run(runner, args: list[str]):
    return runner.invoke(main, args, prog_name="gro-replay")


def one_line(r, *words: str) -> str:
    """Exit code 2, nothing on stdout, exactly one stderr line ``Error: …`` containing ``words``."""
    assert r.exit_code == 2, (r.exit_code, r.output)
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), r.stderr
    assert "Usage:" not in r.stderr and "Traceback" not in r.stderr
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_unknown_option(runner, tmp_path, name) -> None:
    line = one_line(
        run(runner, [name, "--no-such-option", *required_cli_args(name, tmp_path)]), "--no-such-option"
    )
    assert line.startswith("Error: no such option: --no-such-option")
    assert line.endswith(f"; see 'gro-replay {name} --help'")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--fixx", str(FIX_SAMPLE)], "Error: no such option: --fixx (did you mean --fix or --no-fix?)"),
        (["--kernal", "6.1", str(FIX_SAMPLE)], "Error: no such option: --kernal (did you mean --kernel?)"),
    ],
)
def test_unknown_option_of_the_default_command_suggests(runner, args, expected) -> None:
    """``gro-replay --fixx CAPTURE`` is the replay command's: click's close matches kept, on the same line."""
    assert one_line(run(runner, args)).startswith(expected)


@pytest.mark.parametrize(("name", "param"), _options(click.Choice), ids=lambda x: getattr(x, "name", x))
def test_bad_choice(runner, tmp_path, name, param) -> None:
    opt = _long(param)
    line = one_line(
        run(runner, [name, opt, "bogus-value", *required_cli_args(name, tmp_path)]), opt, "'bogus-value'"
    )
    assert line.startswith(f"Error: {opt}: 'bogus-value' is not ")


def test_bad_choice_argument(runner) -> None:
    line = one_line(run(runner, ["schema", "foo"]))
    assert line.startswith("Error: NAME: 'foo' is not one of 'replay', ")


@pytest.mark.parametrize(
    ("name", "param"),
    _options((click.types.IntParamType, click.types.FloatParamType)),
    ids=lambda x: getattr(x, "name", x),
)
def test_bad_number(runner, tmp_path, name, param) -> None:
    opt = _long(param)
    one_line(
        run(runner, [name, opt, "x1", *required_cli_args(name, tmp_path)]), f"Error: {opt}: 'x1' is not "
    )


@pytest.mark.parametrize(
    ("name", "param"), _options((click.IntRange, click.FloatRange)), ids=lambda x: getattr(x, "name", x)
)
def test_number_out_of_range(runner, tmp_path, name, param) -> None:
    opt = _long(param)
    low = param.type.min
    assert low is not None, f"{opt} has no lower bound"
    value = str(low - 1)
    one_line(
        run(runner, [name, opt, value, *required_cli_args(name, tmp_path)]),
        f"Error: {opt}: ",
        value,
        " is not ",
    )


@pytest.mark.parametrize(
    "name", sorted(n for n in COMMANDS if any(p.required for p in main.commands[n].params))
)
def test_missing_argument(runner, name) -> None:
    first = next(p for p in main.commands[name].params if p.required)
    line = one_line(run(runner, [name]))
    assert line == f"Error: missing argument {first.name.upper()}; see 'gro-replay {name} --help'"


@pytest.mark.parametrize(
    "name", sorted(n for n in COMMANDS if all(p.nargs != -1 for p in main.commands[n].params))
)
def test_extra_argument(runner, tmp_path, name) -> None:
    line = one_line(run(runner, [name, *required_cli_args(name, tmp_path), "extra1"]))
    assert line.startswith("Error: got unexpected extra argument (extra1)")


@pytest.mark.parametrize(("name", "param"), _options(object), ids=lambda x: getattr(x, "name", x))
def test_option_without_value(runner, name, param) -> None:
    """The option is the last word: click's "requires an argument", on one line."""
    opt = _long(param)
    one_line(run(runner, [name, opt]), f"Error: option '{opt}' requires an argument")


#: what the tool says of a directory given where a file is read, per command's file argument (the capture reader's
#: "is a directory", diff's "cannot read:" and synth's "cannot write:" with os.strerror(EISDIR)); click.Path's
#: own check ("file '…' is a directory; see …") is not used, so every command words it as its other input errors
DIRECTORY_AS_FILE = {
    ("replay", "capture"): "Error: {path}: is a directory",
    ("explain", "capture"): "Error: {path}: is a directory",
    ("kernel", "capture"): "Error: {path}: is a directory",
    ("validate", "capture"): "Error: {path}: is a directory",
    ("diff", "baseline"): "Error: BASELINE {path}: cannot read: Is a directory",
    ("diff", "current"): "Error: CURRENT {path}: cannot read: Is a directory",
    ("synth", "output"): "Error: {path}: cannot write: Is a directory",
}


def test_directory_as_file_covers_every_path_argument() -> None:
    paths = {
        (n, p.name)
        for n in sorted(COMMANDS)
        for p in main.commands[n].params
        if isinstance(p, click.Argument) and isinstance(p.type, click.Path) and p.nargs == 1
    }
    assert paths == set(DIRECTORY_AS_FILE)


@pytest.mark.parametrize(("name", "arg"), sorted(DIRECTORY_AS_FILE), ids=str)
def test_directory_as_file(runner, tmp_path, name, arg) -> None:
    params = [p for p in main.commands[name].params if isinstance(p, click.Argument)]
    args = [
        str(tmp_path) if p.name == arg else a
        for p, a in zip(params, required_cli_args(name, tmp_path), strict=True)
    ]
    if (name, arg) == ("diff", "current"):  # a readable BASELINE first: CURRENT is read after it
        doc = tmp_path.parent / f"{tmp_path.name}-baseline.json"
        doc.write_text(run(runner, [str(FIX_SAMPLE), "--format", "json"]).stdout)
        args[0] = str(doc)
    assert one_line(run(runner, [name, *args])) == DIRECTORY_AS_FILE[name, arg].format(path=tmp_path)


@pytest.mark.parametrize("name", ["replay", "explain"])
def test_missing_file(runner, tmp_path, name) -> None:
    path = tmp_path / "nothing.pcap"
    assert one_line(run(runner, [name, str(path)])) == f"Error: {path}: no such file"


def test_missing_file_diff(runner, tmp_path) -> None:
    path = tmp_path / "nothing.json"
    one_line(run(runner, ["diff", str(path), str(path)]), f"Error: BASELINE {path}: ")


def test_console_entry_one_line(tmp_path) -> None:
    """The real entry (``python -m gro_replay.cli``), not only the click runner."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.getcwd(), *sys.path])}
    r = subprocess.run(
        [sys.executable, "-m", "gro_replay.cli", "--nic", "e1000", str(FIX_SAMPLE)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.splitlines() == [
        "Error: --nic: 'e1000' is not one of 'ice', 'i40e', 'ixgbe', 'mlx5', 'bnxt', 'virtio-net', 'vmxnet3', "
        "'ena', 'gve', 'veth'; see 'gro-replay replay --help'"
    ]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_kept(runner, name) -> None:
    r = run(runner, [name, "--help"])
    assert r.exit_code == 0 and r.stdout.startswith(f"Usage: gro-replay {name} [OPTIONS]")
