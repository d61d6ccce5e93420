"""synth refuses what it would silently ignore: bulk-flow options with --mix, --mix options without it, and an
OUTPUT named for another format than the nanosecond pcap it writes (one line, exit 2; nothing written)."""

from __future__ import annotations

import pytest

from gro_replay.cli import main

BULK_ONLY = [
    ["--encap", "geneve"],
    ["--outer-csum", "computed"],
    ["--flows", "3"],
    ["--interleave", "rr"],
    ["--outer-ipv6"],
    ["--no-timestamps"],
    ["--vni", "7"],
    ["--last-payload", "100"],
]


@pytest.mark.parametrize("opt", BULK_ONLY, ids=lambda o: o[0])
def test_mix_refuses_bulk_flow_options(runner, tmp_path, opt):
    out = tmp_path / "m.pcap"
    r = runner.invoke(main, ["synth", "--mix", "overlay-node", "--frames", "100", *opt, str(out)])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "describes bulk flows: --mix does not read it" in r.stderr and opt[0] in r.stderr
    assert not out.exists()


@pytest.mark.parametrize("opt", [["--connections", "3"], ["--seed", "2"]], ids=lambda o: o[0])
def test_mix_options_need_mix(runner, tmp_path, opt):
    r = runner.invoke(main, ["synth", "--frames", "10", *opt, str(tmp_path / "b.pcap")])
    assert r.exit_code == 2 and f"{opt[0]} goes with --mix" in r.stderr


@pytest.mark.parametrize("name", ["x.pcapng", "x.pcap.gz", "X.PCAPNG"])
def test_output_named_for_another_format(runner, tmp_path, name):
    r = runner.invoke(main, ["synth", "--frames", "10", str(tmp_path / name)])
    assert r.exit_code == 2 and "synth writes a classic nanosecond pcap" in r.stderr
    assert not (tmp_path / name).exists()


def test_what_mix_reads_still_works(runner, tmp_path):
    out = tmp_path / "m.pcap"
    r = runner.invoke(
        main,
        [
            "synth",
            "--mix",
            "overlay-node",
            "--frames",
            "200",
            "--seed",
            "3",
            "--mss",
            "1000",
            "--connections",
            "4",
            "--port",
            "4790",
            str(out),
        ],
    )
    assert r.exit_code == 0, r.stderr
    assert out.stat().st_size > 0


#: a scenario the options' types accept but gro_replay/synth.py Scenario refuses: the error names the options
#: (Geneve options are 4-byte words, at most 63 of them: geneve.c's opt_len is 6 bits of 4-byte units)
REFUSED_SCENARIOS = [
    (
        ["--encap", "geneve", "--geneve-opt-bytes", "6"],
        "--geneve-opt-bytes must be a multiple of 4, at most 252",
    ),
    (["--geneve-opt-bytes", "8"], "--geneve-opt-bytes needs --encap geneve"),
    (["--mtu", "70", "--outer-ipv6", "--inner-ipv6"], "--mtu 70 leaves no room for TCP payload"),
]


@pytest.mark.parametrize(
    ("opts", "words"), REFUSED_SCENARIOS, ids=lambda o: " ".join(o) if isinstance(o, list) else ""
)
def test_a_refused_scenario_names_its_options(runner, tmp_path, opts, words):
    out = tmp_path / "s.pcap"
    r = runner.invoke(main, ["synth", "--frames", "10", *opts, str(out)])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(f"Error: {words}; see '") and r.stderr.endswith(" synth --help'\n")
    assert not out.exists()
