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
from conftest import FIX_SAMPLE, required_cli_args, skip_without_kernel_backend

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


@pytest.mark.parametrize(("name", "param"), _options(click.IntRange), ids=lambda x: getattr(x, "name", x))
@pytest.mark.parametrize("sign", ["", "-"])
def test_huge_integer_out_of_range(runner, tmp_path, name, param, sign) -> None:
    """An integer of more than 20 digits is out of range, worded as a smaller one is (click's "is not in the
    range"), not "not an integer": cut to 20 digits, its length given."""
    opt = _long(param)
    value = sign + "1" + "0" * 22
    line = one_line(run(runner, [name, opt, value, *required_cli_args(name, tmp_path)]), f"Error: {opt}: ")
    assert f"{sign}1{'0' * 19}… (23 digits) is not in the range " in line, line
    assert "not an integer" not in line


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


@pytest.mark.parametrize("prefix", [[], ["replay"]], ids=["default", "replay"])
def test_several_captures_name_batch(runner, prefix) -> None:
    """``gro-replay sample_pcaps/*.pcap``: the shell gives the replay command several captures; the one line
    says which command replays several (exit 2, as any usage error). Other commands' extra arguments do not."""
    caps = [str(FIX_SAMPLE), str(FIX_SAMPLE.with_name("vxlan-4flows-computed-csum.pcap"))]
    line = one_line(run(runner, [*prefix, *caps]))
    assert line == (
        f"Error: got unexpected extra argument ({caps[1]}): gro-replay batch PATH... replays several captures; "
        "see 'gro-replay replay --help'"
    )
    line = one_line(run(runner, ["explain", *caps]))
    assert "batch" not in line


@pytest.mark.parametrize(("name", "param"), _options(object), ids=lambda x: getattr(x, "name", x))
def test_option_without_value(runner, name, param) -> None:
    """The option is the last word: click's "requires an argument", on one line."""
    opt = _long(param)
    one_line(run(runner, [name, opt]), f"Error: option '{opt}' requires an argument")


#: what the tool says of a directory given where a file is read, per command's file argument (the capture reader's
#: "is a directory", diff's "cannot read:" and synth's "cannot write:" with os.strerror(EISDIR)); click.Path's
#: own check ("file '…' is a directory; see …") is not used, so every command words it as its other input errors
DIRECTORY_AS_FILE = {
    (
        "replay",
        "capture",
    ): "Error: {path}: is a directory: 'gro-replay batch {path}' replays the captures in it",
    (
        "explain",
        "capture",
    ): "Error: {path}: is a directory: 'gro-replay batch {path}' replays the captures in it",
    (
        "kernel",
        "capture",
    ): "Error: {path}: is a directory: 'gro-replay batch {path}' replays the captures in it",
    (
        "validate",
        "capture",
    ): "Error: {path}: is a directory: 'gro-replay batch {path}' replays the captures in it",
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
    if name in (
        "kernel",
        "validate",
    ):  # without root, namespaces or tracefs: exit 3 before the capture is read
        skip_without_kernel_backend("the kernel backend's environment is checked first here")
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


# -- options given twice: a contradiction is refused, a harmless repeat is not (cli/command.py) -------------------


def test_every_command_refuses_contradicting_repeats() -> None:
    from gro_replay.cli.command import Command

    assert [n for n in sorted(COMMANDS) if not isinstance(main.commands[n], Command)] == []


_PAIRS = [
    (n, p)
    for n in sorted(COMMANDS)
    for p in main.commands[n].params
    if isinstance(p, click.Option) and p.is_bool_flag and p.secondary_opts
]


@pytest.mark.parametrize(("name", "param"), _PAIRS, ids=lambda x: getattr(x, "name", x))
def test_both_sides_of_a_flag_pair(runner, tmp_path, name, param) -> None:
    """``--fix --no-fix`` (and every other --x/--no-x pair of every command): one line naming both, in the order
    given, exit 2 — not the last one silently winning."""
    yes, no = _long(param), max(param.secondary_opts, key=len)
    for a, b in ((yes, no), (no, yes)):
        line = one_line(run(runner, [name, a, b, *required_cli_args(name, tmp_path)]))
        assert line == f"Error: {a} and {b} contradict each other: give one of them"
    for side in (yes, no):  # the same side twice is harmless
        ctx = main.commands[name].make_context(name, [side, side, *required_cli_args(name, tmp_path)])
        assert ctx.params[param.name] is (side == yes)


def _two_values(p: click.Option) -> tuple[str, str] | None:
    """Two different valid values of option ``p`` (None: it has only one)."""
    t = p.type
    if isinstance(t, click.Choice):
        return (str(t.choices[0]), str(t.choices[1])) if len(t.choices) > 1 else None
    if isinstance(t, (click.IntRange, click.FloatRange)):
        return (str(t.min), str(t.max if t.max is not None else t.min + 1))
    if t.name == "PORT|auto":
        return ("4789", "auto")
    if p.name == "interleave":  # synth: rr or a block size
        return ("rr", "2")
    if t.name == "HEX":  # --rss-key: 40 bytes or more
        return ("6d" * 40, "5a" * 40)
    return ("a", "b")


_SINGLE = [
    (n, p, v)
    for n in sorted(COMMANDS)
    for p in main.commands[n].params
    if isinstance(p, click.Option) and not (p.is_flag or p.multiple or p.count)
    if (v := _two_values(p)) is not None
]


@pytest.mark.parametrize(("name", "param", "values"), _SINGLE, ids=lambda x: getattr(x, "name", str(x)))
def test_single_valued_option_given_twice(runner, tmp_path, name, param, values) -> None:
    """``--format json --format table`` (every single-valued option of every command): refused, naming the
    option and both values; the same value twice (also in another letter case of a keyword) is accepted."""
    opt, (a, b) = _long(param), values
    line = one_line(run(runner, [name, opt, a, opt, b, *required_cli_args(name, tmp_path)]))
    assert line.startswith(f"Error: {opt} given twice with different values (")
    assert line.endswith("): give it once")
    cmd = main.commands[name]
    again = (
        a.upper() if isinstance(param.type, click.Choice) else a
    )  # a keyword in any letter case is one value
    ctx = cmd.make_context(name, [opt, a, opt, again, *required_cli_args(name, tmp_path)])
    assert (
        ctx.params[param.name]
        == cmd.make_context(name, [opt, a, *required_cli_args(name, tmp_path)]).params[param.name]
    )


def test_given_twice_wording(runner, tmp_path) -> None:
    args = required_cli_args("replay", tmp_path)
    assert one_line(run(runner, ["replay", "--format", "json", "--format", "TABLE", *args])) == (
        "Error: --format given twice with different values (json, table): give it once"
    )
    assert one_line(run(runner, ["replay", "--hz", "100", "--hz", "100", "--hz", "1000", *args])) == (
        "Error: --hz given 3 times with different values (100, 1000): give it once"
    )
    # a bad value is refused even when a later one would have replaced it
    one_line(run(runner, ["replay", "--hz", "abc", "--hz", "250", *args]), "Error: --hz: 'abc' is not one of")


def test_gro_device_given_on_and_off(runner, tmp_path) -> None:
    """``--gro`` is repeatable (one item per device); one device both on and off is the same contradiction."""
    for name in ("replay", "kernel"):
        args = required_cli_args(name, tmp_path)
        assert one_line(run(runner, [name, "--gro", "phys=on", "--gro", "PHYS=off", *args])) == (
            "Error: --gro phys=on and --gro phys=off contradict each other: give one of them"
        )
    from gro_replay.sim import parse_gro

    assert parse_gro(["tunnel=off", "tunnel=OFF"]) == {"phys": True, "tunnel": False}


@pytest.mark.parametrize("value", ["١٢", "12²"])
def test_max_bytes_other_scripts(runner, tmp_path, value) -> None:
    one_line(run(runner, ["diff", "--max-bytes", value, *required_cli_args("diff", tmp_path)]), "--max-bytes")


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--pcap-format", "pcap"], "Error: --pcap-format needs --write-pcap"),
        (
            ["--flow-timeout", "off", "--flow-close-timeout", "5"],
            "Error: --flow-close-timeout needs --flow-timeout on (with 0 or off no flow ends)",
        ),
        (
            ["--flow-close-timeout", "5", "--flow-timeout", "0"],
            "Error: --flow-close-timeout needs --flow-timeout on (with 0 or off no flow ends)",
        ),
    ],
)
def test_option_the_others_make_void(runner, tmp_path, args, line) -> None:
    """Given together, the second option would be ignored without a word (no --write-pcap file to format; no flow
    ends, so no close timeout): refused as --nic-tunnel-port without --nic is, by explain too (it ends flows as
    the replay does)."""
    assert one_line(run(runner, [*required_cli_args("replay", tmp_path), *args])) == line
    if "--write-pcap" not in line:
        assert one_line(run(runner, [*required_cli_args("explain", tmp_path), *args])) == line


def test_option_the_others_need_is_accepted_with_them(runner, tmp_path) -> None:
    r = run(
        runner,
        [
            *required_cli_args("replay", tmp_path),
            "--write-pcap",
            str(tmp_path / "p"),
            "--pcap-format",
            "pcap",
            "-q",
        ],
    )
    assert r.exit_code == 0, r.output
    assert sorted(os.listdir(tmp_path / "p")) == [
        "post-fix-eth0.pcap",
        "post-fix-vxlan0.pcap",
        "pre-fix-eth0.pcap",
        "pre-fix-vxlan0.pcap",
    ]
    r = run(
        runner,
        [*required_cli_args("replay", tmp_path), "--flow-timeout", "60", "--flow-close-timeout", "5", "-q"],
    )
    assert r.exit_code == 0, r.output
