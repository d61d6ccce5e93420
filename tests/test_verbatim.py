"""Text the reports print through rich comes out as given (report/verbatim.py).

rich reads a ``str`` as console markup ("[bold]x[/bold]" styles and drops its tags, "[fd00::1]" is dropped as an
unknown tag) and replaces emoji codes (":smile:" becomes 😄) unless told not to. Capture paths, kernel names and
release strings, flow labels with outer IPv6 addresses, notes, errors and the reason keys all reach the text
reports, so each is checked here printed whole. The inputs are this test's own: a copy of the fix sample under a
directory and a file named with the text, kernel models renamed with it; the expected lines are those inputs.
The reason key and SUMMARY key checked are the kernel's names for what ended the fix sample's pre-fix phys skbs:
udp_gro_receive (net/ipv4/udp_offload.c, before 89e5c58fc1e2) refusing a zero outer checksum (gro-spec §4.7 row 3).
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
from dataclasses import replace

import pytest
import rich.console
import rich.text
from blake3 import blake3
from click.testing import CliRunner
from conftest import CLI, FIX_SAMPLE
from rich.console import Console

from gro_replay.batch import CaptureOutcome
from gro_replay.cli import main
from gro_replay.cli.batch import combined, render_table, replay_config
from gro_replay.cli.kernels import switch_tables
from gro_replay.kernel.model import K_5_11, K_6_18
from gro_replay.report.diff import compare
from gro_replay.report.diff.render import render_table as render_diff
from gro_replay.report.document import document
from gro_replay.report.table import print_uncut, render
from gro_replay.sim import ReplayConfig, replay_capture

TEXTS = ["[bold]x[/bold]", "[fd00::1]", ":smile:", "[ab]"]


@pytest.fixture
def unread(monkeypatch):
    """Fails the test where rich would read text: parse markup, replace emoji codes or highlight a str."""
    render_str = rich.console.Console.render_str

    def checked(self, text, *, emoji=None, markup=None, highlight=None, **kw):
        reads = {
            "markup": markup or (markup is None and self._markup),
            "emoji": emoji or (emoji is None and self._emoji),
            "highlight": highlight or (highlight is None and self._highlight),
        }
        assert not any(reads.values()), f"rich reads {text!r}: {reads}"
        return render_str(self, text, emoji=emoji, markup=markup, highlight=highlight, **kw)

    def from_markup(*a, **kw):
        raise AssertionError(f"rich parses markup: {a!r}")

    monkeypatch.setattr(rich.console.Console, "render_str", checked)
    monkeypatch.setattr(rich.text.Text, "from_markup", from_markup)


def _capture(tmp_path, text: str):
    cap = (
        tmp_path / f"in {text}" / f"{text}.pcap"
    )  # a "/" in ``text`` makes directories: the path is the text
    cap.parent.mkdir(parents=True)
    shutil.copyfile(FIX_SAMPLE, cap)
    return cap


def _run(args: list[str], width: int = 250) -> str:
    r = CliRunner().invoke(main, args, env={"COLUMNS": str(width), "NO_COLOR": "1"})
    assert r.exit_code == 0, (r.output, r.exception)
    return r.stdout


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("width", [250, 60])
def test_replay_text_prints_paths_and_reason_keys_whole(tmp_path, text, width, unread):
    cap = _capture(tmp_path, text)
    out = _run([str(cap)], width)
    assert out.splitlines()[0].startswith(f"input: {cap}: 17 frames read")
    assert "[udp_gro_receive:csum_cnt0_csum_valid0_not_partial(uh.check=0)] ×17" in out
    assert "kernel[pre-fix].phys_skbs=17" in out


@pytest.mark.parametrize("text", TEXTS)
def test_explain_and_markdown_print_paths_whole(tmp_path, text, unread):
    cap = _capture(tmp_path, text)
    assert _run(["explain", str(cap)]).splitlines()[0].startswith(f"input: {cap}: 17 frames read")
    assert f"input: {cap}: 17 frames read" in _run([str(cap), "--format", "markdown"])


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("width", [250, 60])
def test_diff_table_prints_document_paths_whole(tmp_path, text, width, unread):
    cap = _capture(tmp_path, text)
    docs = []
    for which in ("--no-fix", "--fix"):
        p = tmp_path / f"{which} {text}.json"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(_run([str(cap), which, "--format", "json"]))
        docs.append(p)
    out = _run(["diff", str(docs[0]), str(docs[1])], width)
    assert f"input: {cap} (blake3 " in out
    assert f"baseline {docs[0]}, current {docs[1]}" in out


_PLAIN = {**os.environ, "COLUMNS": "250", "NO_COLOR": "1"}


def test_standard_input_is_named_in_words_where_json_keeps_its_path(tmp_path):
    """A piped capture (path ``-``) was "input: -: 17 frames read" in text, markdown and explain, and "replayed -"
    in diff; the sentences say "standard input", the JSON keeps ``input.path`` "-" (what was given)."""

    def piped(args: list[str]) -> str:
        with open(FIX_SAMPLE, "rb") as fh:
            r = subprocess.run([*CLI, *args], stdin=fh, capture_output=True, text=True, env=_PLAIN)
        assert r.returncode == 0, r.stderr
        return r.stdout

    line = "input: standard input: 17 frames read, 17 replayed; skipped: none"
    assert piped(["-"]).splitlines()[0] == line
    assert line in piped(["-", "--format", "markdown"])
    assert piped(["explain", "-"]).splitlines()[0] == line
    docs = []
    for which in ("--no-fix", "--fix"):
        text = piped(["-", which, "--format", "json"])
        assert json.loads(text)["input"]["path"] == "-"
        docs.append(tmp_path / f"{which}.json")
        docs[-1].write_text(text)
    assert "input: standard input (blake3 " in _run(["diff", str(docs[0]), str(docs[1])])
    with open(FIX_SAMPLE, "rb") as fh:
        r = subprocess.run([*CLI, "-", "--flow", "sport=1"], stdin=fh, capture_output=True, text=True)
    assert r.returncode == 2 and "(1 flow in standard input; " in r.stderr
    # two different piped captures: "inputs: - → -" named neither; each is named with its digest
    other = FIX_SAMPLE.parent / "vxlan-4flows-computed-csum.pcap"
    with open(other, "rb") as fh:
        text = subprocess.run(
            [*CLI, "-", "--no-fix", "--format", "json"], stdin=fh, capture_output=True, text=True
        ).stdout
    (tmp_path / "other.json").write_text(text)
    out = _run(["diff", str(docs[0]), str(tmp_path / "other.json"), "--allow-different-input"])
    sha = [blake3(p.read_bytes()).hexdigest()[:12] for p in (FIX_SAMPLE, other)]
    pair = f"standard input (blake3 {sha[0]}) → standard input (blake3 {sha[1]})"
    assert f"inputs: {pair}\n" in out and f"note: different inputs: {pair} (--allow-different-input)" in out


def _named(text: str):
    """The pre-fix and 6.18 models named and released with ``text`` in them (the names are this test's)."""
    return (
        replace(K_5_11, name=f"old{text}", release=f"5.11{text}"),
        replace(K_6_18, name=f"new{text}", release=f"6.18{text}"),
    )


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("width", [250, 60])
def test_kernel_names_print_whole_in_every_table(text, width):
    """On a caller's own console (markup and emoji codes on, rich's default): the report functions hand rich only
    text, so the names are printed as given in titles, headers and cells."""
    kernels = _named(text)
    cfg = ReplayConfig(kernels=kernels)
    result = replay_capture(str(FIX_SAMPLE), cfg)
    doc = document(result)

    def printed(draw) -> str:
        buf = io.StringIO()
        draw(Console(file=buf, width=width, no_color=True))
        return buf.getvalue()

    out = printed(lambda c: render(result, c, hist=True))
    for k in kernels:
        assert f"{k.name} " in out or f"{k.name}\n" in out  # a header (side by side, or stacked per stage)
        assert f"segments per skb, {k.name} phys NAPI:" in out
        assert f"kernel[{k.name}].phys_skbs=" in out

    out = printed(lambda c: [print_uncut(c, t) for t in switch_tables(list(kernels), c)])
    for k in kernels:
        assert k.release in out

    batch_cfg = replay_config([])
    outcomes = [
        CaptureOutcome(f"/x/{text}.pcap", document=doc),
        CaptureOutcome(f"/x/bad {text}.pcap", error=f"/x/bad {text}.pcap: not a capture [{text}]"),
    ]
    whole = combined(outcomes, replace(batch_cfg, kernels=kernels), {}, 0.0)
    out = printed(lambda c: render_table(whole, c))
    for k in kernels:
        assert k.name in out
    assert f"{text}.pcap" in out
    assert f"failed: bad {text}.pcap: not a capture [{text}]" in out

    out = " ".join(printed(lambda c: render_diff(compare(doc, doc), c)).split())
    for k in kernels:  # one table per kernel of the two documents, titled with its name
        assert f"GRO aggregation diff, kernel {k.name} " in out


def test_only_verbatim_makes_rich_tables_and_consoles():
    """Every rich table is a VerbatimTable and every console a verbatim_console (report/verbatim.py): a plain
    ``Table(`` or ``Console(`` elsewhere would read its text as markup again. ``Console().width`` only measures."""
    from pathlib import Path

    pkg = Path(__file__).resolve().parents[1] / "gro_replay"
    found = []
    for p in sorted(pkg.rglob("*.py")):
        if p.name == "verbatim.py":
            continue
        for i, line in enumerate(p.read_text().splitlines(), 1):
            if re.search(r"(?<!Verbatim)\bTable\(|\bConsole\((?!\)\.width)", line):
                found.append(f"{p.relative_to(pkg)}:{i}: {line.strip()}")
    assert found == []
