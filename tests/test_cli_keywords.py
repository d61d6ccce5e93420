"""Keyword values are accepted in any letter case by every option of every command (README "Usage": keywords).

The rule (cli/params.py): a keyword (``auto``, ``off``, ``none``, ``budget``, ``json``, ``vxlan``, …) is compared
without surrounding blanks and in lower case, and becomes the spelling the help lists. Before, ``--vxlan-port AUTO``
was refused while ``--flow-timeout OFF`` and ``--gro phys=OFF`` were accepted. The choice options are found from the
commands' own parameters (``app.COMMANDS``), so a new one is covered without editing this file; the options that
parse keywords themselves are listed in ``FREE_FORM`` and the test fails when a command grows one not listed.
"""

from __future__ import annotations

import json
import re

import click
import pytest
from conftest import FIX_SAMPLE, required_cli_args

from gro_replay.cli import main
from gro_replay.cli.app import COMMANDS, mount_all
from gro_replay.cli.params import Keyword, PortOrAuto, SecondsOrOff
from gro_replay.packet.flowsel import FlowSelector
from gro_replay.sim.config import PollModel, parse_gro, parse_resegment

mount_all()


def _choice_params():
    return [
        (name, p)
        for name in sorted(COMMANDS)
        for p in main.commands[name].params
        if isinstance(p.type, click.Choice)
    ]


@pytest.mark.parametrize(
    ("name", "param"), _choice_params(), ids=lambda x: x if isinstance(x, str) else x.name
)
def test_every_choice_takes_any_letter_case(name, param, tmp_path) -> None:
    """Each choice of each choice option/argument, written in upper case and in mixed case, parses to the listed
    spelling."""
    assert isinstance(param.type, Keyword), f"{name} {param.name}: a click.Choice that is not a Keyword"
    cmd = main.commands[name]
    for choice in param.type.choices:
        for spelled in (choice.upper(), choice.title()):
            if isinstance(param, click.Argument):
                args = [
                    spelled if a == str(param.type.choices[0]) else a
                    for a in required_cli_args(name, tmp_path)
                ]
            else:
                args = [max(param.opts, key=len), spelled, *required_cli_args(name, tmp_path)]
            ctx = cmd.make_context(name, args)
            got = ctx.params[param.name]
            assert (choice in got) if param.multiple else (got == choice), (name, param.name, spelled, got)


#: (command, option) → (type, keyword spellings the option's parser must accept as the canonical one)
FREE_FORM = {
    "--vxlan-port": "AUTO",
    "--geneve-port": "Auto",
    "--flow-timeout": "OFF",
    "--resegment": "OFF",
    "--poll": "GAP:5",
    "--gro": "PHYS=OFF",
    "--flow": "CSUM=ZERO,TUNNEL=VXLAN,PROTO=TCP",
    "--interleave": "RR",
}


def test_every_keyword_option_that_is_not_a_choice_is_listed() -> None:
    """An option whose metavar names a lower-case keyword (``auto|off|MSS``, ``DEV=on|off``, ``rr|K``) or whose type
    takes one (``PortOrAuto``, ``SecondsOrOff``) is in FREE_FORM, so the tests below cover it."""
    found = set()
    for name in COMMANDS:
        for p in main.commands[name].params:
            if not isinstance(p, click.Option) or p.is_flag or isinstance(p.type, click.Choice):
                continue
            if re.search(r"\b[a-z]{2,}\b", p.metavar or "") or isinstance(p.type, (PortOrAuto, SecondsOrOff)):
                found.add(max(p.opts, key=len))
            if p.name in (
                "poll",
                "flow",
            ):  # metavar MODEL / SELECTOR: keywords inside (budget, gap:, csum=zero)
                found.add(max(p.opts, key=len))
    assert found <= set(FREE_FORM), found - set(FREE_FORM)


def test_parsers_take_keywords_in_any_case() -> None:
    """The parsers behind the free-form keyword options give the canonical value for any letter case."""
    assert PollModel.parse("BUDGET") == PollModel.parse("budget")
    assert PollModel.parse("Rx-Usecs:50") == PollModel.parse("rx-usecs:50")
    assert PollModel.parse("GAP:5") == PollModel.parse("gap:5")
    assert parse_gro(["PHYS=OFF", "Tunnel=On"]) == {"phys": False, "tunnel": True}
    assert parse_resegment("AUTO") == "auto" and parse_resegment("Off") == "off"
    upper = FlowSelector.parse("CSUM=ZERO,TUNNEL=VXLAN,PROTO=TCP").terms
    assert upper == FlowSelector.parse("csum=zero,tunnel=vxlan,proto=tcp").terms


def _doc(runner, *args: str) -> dict:
    r = runner.invoke(main, [str(FIX_SAMPLE), "--format", "json", "-q", *args])
    assert r.exit_code == 0, (args, r.stderr)
    return json.loads(r.stdout)


@pytest.mark.parametrize(
    ("lower", "upper"),
    [
        (["--vxlan-port", "auto"], ["--vxlan-port", "AUTO"]),
        (["--geneve-port", "auto"], ["--geneve-port", "Auto"]),
        (["--flow-timeout", "off"], ["--flow-timeout", "OFF"]),
        (["--resegment", "off"], ["--resegment", "OFF"]),
        (["--poll", "budget"], ["--poll", "BUDGET"]),
        (["--gro", "phys=off"], ["--gro", "PHYS=OFF"]),
        (["--flow", "csum=zero,tunnel=vxlan,proto=tcp"], ["--flow", "CSUM=ZERO,TUNNEL=VXLAN,PROTO=TCP"]),
        (["--rx-csum", "none", "--nic", "ice"], ["--rx-csum", "NONE", "--nic", "ICE"]),
    ],
)
def test_replay_document_is_the_same_for_any_letter_case(runner, lower, upper) -> None:
    """A replay with the upper-case spelling is the replay with the lower-case one: equal documents (the config
    part included, so the keyword reached the replay in its canonical spelling; ``config.flow`` echoes the selector
    as typed, as ``input.path`` echoes the path)."""
    got, want = _doc(runner, *upper), _doc(runner, *lower)
    if "--flow" in lower:
        assert got["config"].pop("flow") == upper[1] and want["config"].pop("flow") == lower[1]
    assert got == want


def test_kernel_gro_and_synth_interleave_take_any_case(runner, tmp_path, monkeypatch) -> None:
    """kernel's ``--gro`` takes ``TUNNEL=OFF`` (it is parsed before the environment check, which here says the
    backend is unavailable: exit 3, where a bad value is exit 2), and synth ``--interleave RR`` writes the same
    bytes as ``rr``."""
    import gro_replay.oracle as oracle

    def unavailable() -> None:
        raise oracle.OracleUnavailable("no backend in this test")

    monkeypatch.setattr(oracle, "check_environment", unavailable)
    for cmd in ("kernel", "validate"):
        assert runner.invoke(main, [cmd, str(FIX_SAMPLE), "--gro", "TUNNEL=OFF"]).exit_code == 3
        assert runner.invoke(main, [cmd, str(FIX_SAMPLE), "--gro", "TUNNEL=MAYBE"]).exit_code == 2
    outs = []
    for spelled in ("rr", "RR"):
        out = tmp_path / f"{spelled}.pcap"
        r = runner.invoke(main, ["synth", str(out), "--flows", "2", "--frames", "6", "--interleave", spelled])
        assert r.exit_code == 0, r.stderr
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
