"""``gro-replay diff BASELINE.json CURRENT.json``: the CI comparison of two replay documents.

The CI scenario of issue 5: the baseline is the post-fix run, the current the pre-fix run of the fix's sample
(one VXLAN flow, outer UDP checksum 0, NIC CHECKSUM_UNNECESSARY level 0, 17 frames in one budget poll).
Post-fix the phys device merges all 17 frames into one skb (gro-spec §4.7 row 3, K-fix column; the last
segment of 672 < mss 1398 completes it, §5.5); pre-fix udp_gro_receive refuses each frame (§4.4), so the phys
stage delivers 17 single-segment skbs, and gro_cells merges them on vxlan0 (§6.3): 17 segments per skb there in
both runs (post-fix the 17-segment GSO skb passes through the tunnel stage as one skb, §6.6).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import CLI, cli_env

from gro_replay.cli import main
from gro_replay.report.diff import DiffError, compare, load_document

ROOT = Path(__file__).resolve().parents[1]
FIX_SAMPLE = ROOT / "sample_pcaps" / "vxlan-zero-csum-fix-89e5c58fc1e2.pcap"
VXLAN4_SAMPLE = ROOT / "sample_pcaps" / "vxlan-4flows-computed-csum.pcap"


def run(*args: str, input: bytes | None = None):
    # the report's width as on a pipe without COLUMNS (120: cli/output.py report_console), whatever the test
    # process inherited: a narrower one folds cells (tests/test_narrow_tables.py)
    return CliRunner().invoke(main, [str(a) for a in args], env={"COLUMNS": None}, input=input)


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("docs")
    out = {}
    for name, extra in (("post", ["--fix"]), ("pre", ["--no-fix"]), ("both", []), ("other", None)):
        capture = VXLAN4_SAMPLE if extra is None else FIX_SAMPLE
        r = run(capture, "--poll", "budget", *(extra or []), "--format", "json", "-q")
        assert r.exit_code == 0, r.output
        out[name] = d / f"{name}.json"
        out[name].write_text(r.stdout)
    return out


def test_diff_ci_scenario_post_fix_baseline_pre_fix_current_fails(docs):
    r = run("diff", docs["post"], docs["pre"])
    assert r.exit_code == 1
    # phys NAPI segments per skb 17 → 1 is a loss of 16/17 = 94.1 %, beyond the default 0 %
    assert "regression: post-fix → pre-fix, phys NAPI: segments / skb 17.00 → 1.00 (-94.1%" in r.stdout
    assert "tunnel gro_cells: segments / skb" not in r.stdout  # 17.00 in both: no tunnel regression
    assert (
        r.stdout.rstrip()
        .splitlines()[-1]
        .startswith("DIFF status=regression regressions=2 stage_regressions=1")
    )
    # the line on stderr names the phys-stage regression too: a finding, not an error (no "Error: " as a usage
    # error has), and exit 1 as README "Exit codes" documents
    assert r.stderr == (
        "aggregation regressed: post-fix → pre-fix, phys NAPI: segments / skb 17.00 → 1.00 (-94.1%; allowed loss "
        "0%) (and 1 more)\n"
    )
    assert "Error" not in r.stdout + r.stderr


def test_diff_same_document_passes(docs):
    for name in ("post", "pre", "both"):
        r = run("diff", docs[name], docs[name])
        assert r.exit_code == 0, r.output
        assert "OK: no checked metric" in r.stdout
        assert r.stderr == ""


def test_diff_json_names_regressions(docs):
    r = run("diff", docs["post"], docs["pre"], "--format", "json")
    assert r.exit_code == 1
    cmp = json.loads(r.stdout)
    assert cmp["status"] == "regression"
    assert cmp["max_regression_pct"] == 0.0
    flow = "10.0.0.1:37531→10.0.0.2:4789 vxlan vni 100 (csum 0) | 192.168.1.1:40000→192.168.1.2:5201 tcp"
    assert cmp["regressions"] == [
        {
            "kernel": "post-fix → pre-fix",
            "stage": "phys",
            "metric": "segs_per_skb",
            "flow": None,
            "baseline": 17.0,
            "current": 1.0,
            "change_pct": -94.12,
            "loss_pct": 94.117647,  # 16/17, the loss the check compared, to 6 decimals
        },
        {
            "kernel": "post-fix → pre-fix",
            "stage": "phys",
            "metric": "flow_segs_per_skb",
            "flow": flow,
            "baseline": 17.0,
            "current": 1.0,
            "change_pct": -94.12,
            "loss_pct": 94.117647,  # 16/17, the loss the check compared, to 6 decimals
        },
    ]
    (k,) = cmp["kernels"]
    phys, tun = k["stages"]["phys"], k["stages"]["tunnel"]
    assert (phys["skbs"]["baseline"], phys["skbs"]["current"], phys["skbs"]["delta"]) == (1, 17, 16)
    assert (tun["skbs"]["baseline"], tun["skbs"]["current"]) == (1, 1)
    # software checksum moves from the phys GRO (post-fix rows 1/3: inner TCP summed during GRO, §4.7) to the
    # tunnel stage's GRO (pre-fix, §6.5): 23,584 bytes = 17 inner TCP segments (16·(32+1398) + 32+672)
    assert (phys["sw_csum_bytes"]["baseline"], phys["sw_csum_bytes"]["current"]) == (23584, 0)
    assert (tun["sw_csum_bytes"]["baseline"], tun["sw_csum_bytes"]["current"]) == (0, 23584)
    assert 16 * (32 + 1398) + 32 + 672 == 23584


def test_diff_markdown_for_ci_summary(docs):
    r = run("diff", docs["post"], docs["pre"], "--format", "markdown")
    assert r.exit_code == 1
    md = r.stdout
    assert md.startswith("## gro-replay diff\n")
    assert "**REGRESSION: 2 checked values lost more than 0%.**" in md
    assert "| segments / skb | phys NAPI | 17.00 | 1.00 | -16.00 | -94.1% ❌ |" in md
    assert "| segments / skb | tunnel gro_cells | 17.00 | 17.00 | 0 | 0% |" in md
    # the flow label's pipe is escaped so the table keeps its columns
    assert "(csum 0) \\| 192.168.1.1:40000" in md
    for line in md.splitlines():
        if line.startswith("| `"):
            assert line.replace("\\|", "").count("|") == 6
    assert "```\nDIFF status=regression" in md


def test_diff_max_regression_threshold(docs):
    # loss 94.1 %: fails at 94, passes at 95
    assert run("diff", docs["post"], docs["pre"], "--max-regression", "94").exit_code == 1
    r = run("diff", docs["post"], docs["pre"], "--max-regression", "95")
    assert r.exit_code == 0, r.output
    assert "OK" in r.stdout


@pytest.mark.parametrize(("fails", "passes"), [("94%", "95%"), ("94 %", "95.0%"), (" 94% ", "1e2%")])
def test_diff_max_regression_takes_the_percent_it_prints(docs, fails, passes):
    """diff prints the threshold and every change with "%" ("allowed loss 5%", "-94.1%"): the option takes the
    value back as printed. Loss 16/17 = 94.12 % (segments per phys skb 17 → 1): fails at 94%, passes at 95%."""
    r = run("diff", docs["post"], docs["pre"], "--max-regression", fails)
    assert r.exit_code == 1, r.output
    assert "allowed loss 94%" in " ".join(r.stdout.split())
    assert run("diff", docs["post"], docs["pre"], "--max-regression", passes).exit_code == 0


@pytest.mark.parametrize("value", ["%", "5%%", "%5", "5 percent", "-5%", "nan%"])
def test_diff_max_regression_refuses_what_is_not_a_percent(docs, value):
    r = run("diff", docs["post"], docs["pre"], "--max-regression", value)
    assert r.exit_code == 2 and r.stderr.startswith("Error: --max-regression: "), r.output
    assert len(r.stderr.splitlines()) == 1
    # the refusal quotes what was typed, '%' included, and its range as it can be typed back (not 1e+06)
    assert r.stderr.startswith(f"Error: --max-regression: {value!r} is not a "), r.stderr
    assert "e+" not in r.stderr


@pytest.mark.parametrize(("given", "printed"), [("1e6", "1000000%"), ("2.50%", "2.5%"), ("0.001", "0.001%")])
def test_diff_prints_the_threshold_so_that_it_can_be_passed_back(docs, given, printed):
    """Every output prints --max-regression as positional digits with '%' (comparison.limit_text): the table's
    'allowed loss', the OK/REGRESSION line and the DIFF line's max_regression=; passed back, it reads the same."""
    r = run("diff", docs["post"], docs["pre"], "--max-regression", given)
    out = " ".join(r.stdout.split())
    assert f"allowed loss {printed}" in out and f"max_regression={printed} " in out, out
    again = run("diff", docs["post"], docs["pre"], "--max-regression", printed)
    assert again.exit_code == r.exit_code and " ".join(again.stdout.split()) == out


def test_diff_metric_selection(docs):
    # skbs 1 → 17 is +1600 %: a regression of a lower-is-better metric
    r = run(
        "diff", docs["post"], docs["pre"], "--metric", "skbs", "--max-regression", "1000", "--format", "json"
    )
    assert r.exit_code == 1
    regs = json.loads(r.stdout)["regressions"]
    assert [(x["stage"], x["metric"], x["baseline"], x["current"]) for x in regs] == [("phys", "skbs", 1, 17)]
    # the reverse direction (pre-fix baseline, post-fix current) only gains aggregation
    assert (
        run("diff", docs["pre"], docs["post"], "--metric", "skbs", "--metric", "segs_per_skb").exit_code == 0
    )
    # ... but moves the software checksum work onto the phys stage, which sw_csum_bytes catches
    r = run("diff", docs["pre"], docs["post"], "--metric", "sw_csum_bytes", "--format", "json")
    assert r.exit_code == 1
    assert [(x["stage"], x["change_pct"]) for x in json.loads(r.stdout)["regressions"]] == [("phys", None)]


def test_diff_bad_metric_is_usage_error(docs):
    r = run("diff", docs["post"], docs["pre"], "--metric", "bogus")
    assert r.exit_code == 2


def test_diff_unknown_schema_version_exit_2(docs, tmp_path):
    doc = json.loads(docs["post"].read_text())
    doc["schema_version"] = 99
    p = tmp_path / "future.json"
    p.write_text(json.dumps(doc))
    r = run("diff", p, docs["post"])
    assert r.exit_code == 2
    assert r.stderr == f"Error: BASELINE {p}: unknown schema_version 99 (this gro-replay reads 1)\n"
    assert r.stdout == ""


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "not JSON"),
        ("[1, 2]", "not a gro-replay JSON document"),
        ('{"schema_version": 1, "kernels": []}', "/kernels: [] should be non-empty"),
        (
            '{"schema_version": 1, "kernels": [{"name": "x", "stages": {}}]}',
            "/kernels/0/stages: 'phys' is a required",
        ),
    ],
)
def test_diff_bad_documents_one_line(tmp_path, docs, content, message):
    p = tmp_path / "bad.json"
    p.write_text(content)
    r = run("diff", docs["post"], p)
    assert r.exit_code == 2
    assert r.stderr.startswith(f"Error: CURRENT {p}: {message}") and r.stderr.count("\n") == 1


def test_diff_missing_file_exit_2(tmp_path, docs):
    r = run("diff", tmp_path / "nope.json", docs["post"])
    assert r.exit_code == 2
    assert "cannot read" in r.stderr and "Traceback" not in r.output


def test_one_capture_as_a_file_and_piped_in_names_both(tmp_path):
    """The same capture replayed from its file and piped in (``-``, "standard input") has one digest: diff compares
    them as one input and its input line names both, each with its role (a newcomer's finding: only the baseline's
    name was shown, so the line read as if both documents came from the file)."""
    file_doc, pipe_doc = tmp_path / "file.json", tmp_path / "pipe.json"
    file_doc.write_text(run(FIX_SAMPLE, "--format", "json", "-q").stdout)
    # the CLI reads file descriptor 0 (capture/stream.py): a real pipe, not click's runner's stand-in
    p = subprocess.run(
        [*CLI, "-", "--format", "json", "-q"],
        input=FIX_SAMPLE.read_bytes(),
        capture_output=True,
        env=cli_env(),
    )
    assert p.returncode == 0, p.stderr
    pipe_doc.write_bytes(p.stdout)
    sha = json.loads(file_doc.read_text())["input"]["blake3"]
    assert json.loads(pipe_doc.read_text())["input"]["blake3"] == sha
    lines = run("diff", file_doc, pipe_doc).stdout.splitlines()
    assert (
        lines[0]
        == f"input: {FIX_SAMPLE} (baseline) and standard input (current), the same bytes (blake3 {sha[:12]})"
    )
    md = run("diff", pipe_doc, file_doc, "--format", "markdown").stdout
    assert (
        f"- input: standard input (baseline) and {FIX_SAMPLE} (current), the same bytes (blake3 {sha[:12]})"
        in md
    )
    # one name: said once
    assert (
        run("diff", file_doc, file_doc).stdout.splitlines()[0] == f"input: {FIX_SAMPLE} (blake3 {sha[:12]})"
    )


def test_a_document_without_path_or_digest_is_said_so(tmp_path):
    """One capture's document with its input path removed: the input line names the path the other records, and
    whose document records none (it named "an unnamed input", the baseline's lack, before). Without a digest the
    inputs are not known to differ: refused as "not known to be the same", not as "different inputs"
    (breaker's finding)."""
    doc = json.loads(run(FIX_SAMPLE, "--format", "json", "-q").stdout)
    sha = doc["input"]["blake3"]
    full, nopath, nosha = tmp_path / "full.json", tmp_path / "nopath.json", tmp_path / "nosha.json"
    full.write_text(json.dumps(doc))
    nopath.write_text(json.dumps({**doc, "input": {**doc["input"], "path": None}}))
    nosha.write_text(json.dumps({**doc, "input": {**doc["input"], "blake3": None}}))
    assert run("diff", nopath, full).stdout.splitlines()[0] == (
        f"input: {FIX_SAMPLE} (blake3 {sha[:12]}; the baseline document records no path)"
    )
    assert run("diff", full, nopath).stdout.splitlines()[0] == (
        f"input: {FIX_SAMPLE} (blake3 {sha[:12]}; the current document records no path)"
    )
    r = run("diff", nosha, full)
    assert r.exit_code == 2 and r.stderr.startswith(
        f"Error: inputs not known to be the same: BASELINE replayed {FIX_SAMPLE} (no digest recorded), CURRENT "
        f"replayed {FIX_SAMPLE} (blake3 {sha[:12]})"
    )
    r = run("diff", nosha, full, "--allow-different-input", "--format", "json")
    assert any(n.startswith("inputs not known to be the same: ") for n in json.loads(r.stdout)["notes"])


def test_diff_different_inputs_refused_unless_allowed(docs):
    r = run("diff", docs["both"], docs["other"])
    assert r.exit_code == 2
    assert r.stderr.startswith("Error: different inputs: BASELINE replayed ")
    assert "--allow-different-input" in r.stderr and r.stderr.count("\n") == 1
    r = run("diff", docs["both"], docs["other"], "--allow-different-input", "--format", "json")
    assert r.exit_code in (0, 1)
    cmp = json.loads(r.stdout)
    assert any(n.startswith("different inputs:") for n in cmp["notes"])
    # no flow is common to the two captures (outer source ports differ); all are listed as one-sided
    assert cmp["kernels"][0]["flows"] == []
    assert len(cmp["kernels"][0]["flows_only_in_current"]) == 4


def test_diff_different_kernel_sets_refused(docs):
    r = run("diff", docs["both"], docs["pre"])
    assert r.exit_code == 2
    assert "different kernels: BASELINE pre-fix, post-fix; CURRENT pre-fix" in r.stderr


def test_diff_config_difference_is_noted(tmp_path, docs):
    r = run(
        FIX_SAMPLE, "--fix", "--poll", "budget", "--format", "json", "--rx-csum", "unnecessary-tunnel", "-q"
    )
    assert r.exit_code == 0
    p = tmp_path / "tunnel.json"
    p.write_text(r.stdout)
    r = run("diff", docs["post"], p, "--format", "json")
    # CHECKSUM_UNNECESSARY level 1 aggregates at phys in both kernels (gro-spec §4.7 row 5): no regression
    assert r.exit_code == 0, r.output
    # values as the JSON spells them
    assert 'config nic.rx_csum: "unnecessary" → "unnecessary-tunnel"' in json.loads(r.stdout)["notes"]


def test_an_object_on_one_side_only_is_one_note(tmp_path):
    """A --nic preset's object (config.nic.preset) against no preset (null): one note for it, not one per field
    (newcomer's finding: 17 lines for --nic ice)."""
    paths = []
    for name, extra in (("plain", []), ("ice", ["--nic", "ice"])):
        r = run(FIX_SAMPLE, "--fix", "--format", "json", "-q", *extra)
        assert r.exit_code == 0, r.output
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(r.stdout)
    notes = json.loads(run("diff", *paths, "--format", "json").stdout)["notes"]
    (preset,) = [n for n in notes if n.startswith("config nic.preset")]
    assert preset.startswith("config nic.preset: null → {…") and preset.endswith(" fields}")


def test_diff_baseline_update_accepts_current(tmp_path, docs):
    base = tmp_path / "baseline.json"
    base.write_text(docs["post"].read_text())
    r = run("diff", base, docs["pre"], "--baseline-update", "--format", "markdown")
    assert r.exit_code == 0, r.output
    assert "**REGRESSION" in r.stdout  # the diff is still shown
    assert r.stderr == f"baseline updated: {docs['pre']} → {base}\n"
    assert base.read_text() == docs["pre"].read_text()
    assert run("diff", base, docs["pre"]).exit_code == 0


def test_diff_baseline_update_creates_missing_baseline(tmp_path, docs):
    base = tmp_path / "ci" / "baseline.json"
    base.parent.mkdir()
    r = run("diff", base, docs["post"], "--baseline-update")
    assert r.exit_code == 0, r.output
    assert r.stderr == f"baseline created: {docs['post']} → {base}\n"
    assert base.read_text() == docs["post"].read_text()
    # without --baseline-update a missing baseline is bad input
    assert run("diff", tmp_path / "none.json", docs["post"]).exit_code == 2


def test_compare_zero_baseline_lower_is_better(docs):
    base = load_document(str(docs["pre"]), "BASELINE")
    cur = load_document(str(docs["post"]), "CURRENT")
    cur["kernels"][0]["name"] = base["kernels"][0]["name"]
    cmp = compare(base, cur, metrics=("sw_csum_bytes",), max_regression_pct=1e6)
    # growth from a zero baseline is an unbounded relative loss: beyond any finite threshold
    assert [(r["stage"], r["baseline"], r["current"]) for r in cmp["regressions"]] == [("phys", 0, 23584)]
    with pytest.raises(DiffError, match="--max-regression"):
        compare(base, cur, max_regression_pct=-1)


def test_diff_prints_the_observed_change_beside_the_threshold(docs):
    # BASELINE post-fix, CURRENT pre-fix of the fix's sample (above): segments per phys skb 17 → 1, a loss of
    # 16/17 = 94.12 % — printed with its values beside the allowed loss, in every format
    r = run("diff", docs["post"], docs["pre"], "--max-regression", "5", "--format", "json")
    w = json.loads(r.stdout)["largest_loss"]
    assert (w["loss_pct"], w["stage"], w["flow"], w["baseline"], w["current"]) == (
        94.117647,
        "phys",
        None,
        17.0,
        1.0,
    )
    want = (
        "observed: largest loss 94.1% (post-fix → pre-fix, phys NAPI: segments / skb 17.00 → 1.00); "
        "allowed loss 5%"
    )
    for fmt in ("table", "markdown"):
        r = run("diff", docs["post"], docs["pre"], "--max-regression", "5", "--format", fmt)
        assert want in " ".join(r.stdout.split()), fmt
    r = run("diff", docs["pre"], docs["pre"])
    assert "observed: no checked value lost anything (allowed loss 0%)" in " ".join(r.stdout.split())


def test_diff_summary_line_carries_the_observed_largest_loss(docs):
    """``largest_loss=`` beside ``max_regression=`` on the DIFF line (keys only added, in the old order): the
    same value as the "observed: largest loss" sentence. Post-fix → pre-fix of the fix sample: segments per phys
    skb 17 → 1, a loss of 16/17 = 94.12 %; a document against itself loses nothing (0%)."""
    r = run("diff", docs["post"], docs["pre"], "--max-regression", "5")
    assert r.stdout.rstrip().splitlines()[-1] == (
        "DIFF status=regression regressions=2 stage_regressions=1 flows_regressed=1 max_regression=5% "
        "largest_loss=94.1% kernels=post-fix→pre-fix"
    )
    md = run("diff", docs["post"], docs["pre"], "--max-regression", "5", "--format", "markdown").stdout
    assert "max_regression=5% largest_loss=94.1% kernels=post-fix→pre-fix" in md
    doc = json.loads(
        run("diff", docs["post"], docs["pre"], "--max-regression", "5", "--format", "json").stdout
    )
    assert "max_regression=5% largest_loss=94.1% kernels=post-fix→pre-fix" in doc["summary"]
    r = run("diff", docs["pre"], docs["pre"])
    assert r.stdout.rstrip().splitlines()[-1] == (
        "DIFF status=ok regressions=0 stage_regressions=0 flows_regressed=0 max_regression=0% largest_loss=0% "
        "kernels=pre-fix"
    )
    # a zero baseline (bytes checksummed in software 0 → 23,584 at phys NAPI, pre-fix → post-fix): no percentage
    r = run("diff", docs["pre"], docs["post"], "--metric", "sw_csum_bytes")
    assert " max_regression=0% largest_loss=from0 kernels=pre-fix→post-fix" in r.stdout


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_diff_prints_every_measured_percentage_at_one_precision(docs, fmt):
    """One precision for every measured percentage of one output: post-fix → pre-fix of the fix sample loses
    16/17 = 94.117… % of its segments per phys skb (17 → 1): the table or Markdown cell, the regression sentence,
    the observed sentence and the DIFF line all print -94.1% / 94.1%; skbs 1 → 17 is +1,600.0%; an exact zero
    0%; the threshold as given (5)."""
    r = run("diff", docs["post"], docs["pre"], "--max-regression", "5", "--format", fmt)
    text = " ".join(r.stdout.split())
    pcts = set(re.findall(r"[-+]?[\d,.<]+%", text))
    assert pcts == {"-94.1%", "94.1%", "+1,600.0%", "-100.0%", "0%", "5%"}, pcts


def test_pct_text_one_rule():
    """``pct_text``: one decimal place (half away from zero as Python's format rounds 94.117… → 94.1), exact zero
    0%, a non-zero change below 0.05 % never printed as zero."""
    from gro_replay.report.diff.comparison import pct_text

    assert [pct_text(16 / 17 * 100), pct_text(-16 / 17 * 100, True), pct_text(1600.0, True)] == [
        "94.1%",
        "-94.1%",
        "+1,600.0%",
    ]
    assert [pct_text(0), pct_text(0.0, True), pct_text(0.04), pct_text(-0.04, True)] == [
        "0%",
        "0%",
        "<0.1%",
        "-<0.1%",
    ]


def test_diff_notes_a_kernel_name_that_is_another_model(tmp_path):
    """One Debian kernel named by its uname -r alone (5.10 without stable backports: lacks 89e5c58fc1e2) and by
    its uname -rv (built from 5.10.162: carries it since 5.10.24, kernel/stable.py STABLE_BACKPORTS): the same name
    in both documents, two models. The diff pairs them by name and says the models differ, so the regression it
    finds (phys segments per skb 8.50 → 1.00) is not read as the kernel's own."""
    docs = []
    for i, k in enumerate(("5.10.0-21-amd64 #1 SMP Debian 5.10.162-1 (2023-01-21)", "5.10.0-21-amd64")):
        r = run(FIX_SAMPLE, "--kernel", k, "--format", "json", "-q")
        assert r.exit_code == 0, r.output
        docs.append(tmp_path / f"{i}.json")
        docs[-1].write_text(r.stdout)
    r = run("diff", *docs)
    note = (
        'note: kernel 5.10.0-21-amd64 is another model in the two documents (vendor_base "5.10.162" → "5.10"; '
        'backports ["89e5c58fc1e2", "8dc1c444df19"] → []; carries 89e5c58fc1e2 true → false; modelled commits '
        "89e5c58fc1e2 on → off, 8dc1c444df19 on → off): a change between them may be the model's, not the kernel's"
    )
    assert note in " ".join(r.stdout.split()) and r.exit_code == 1
    assert "another model" not in run("diff", docs[0], docs[0]).stdout


def _kernel_documents(tmp_path, *kernels: str) -> dict:
    """The fix sample's JSON document under each ``--kernel`` of ``kernels``, written to ``tmp_path``: path by
    kernel."""
    paths = {}
    for k in kernels:
        r = run(FIX_SAMPLE, "--kernel", k, "--format", "json", "-q")
        assert r.exit_code == 0, r.output
        paths[k] = tmp_path / f"{k}.json"
        paths[k].write_text(r.stdout)
    return paths


def test_diff_says_when_two_documents_ran_one_kernel_model(tmp_path):
    """The words of --kernel's refusal (cli/options.py): a kernel model is the switches the simulation runs
    (config.kernels[].switches). 5.10 and Debian 11's 5.10.0-21-amd64 (upstream 5.10 assumed: of the modelled
    commits only b723748750ec, v5.7, and its checksum fix 2867e1eac610, v5.10-rc7, on) are one model under two names, so the diff of their documents compares a model with
    itself; a name described differently (an older document without vendor) but with equal switches is one model
    too, and a change between them is not the model's."""
    paths = _kernel_documents(tmp_path, "5.10", "5.10.0-21-amd64")
    r = run("diff", paths["5.10"], paths["5.10.0-21-amd64"])
    assert r.exit_code == 0, r.output
    assert (
        "note: kernels 5.10 and 5.10.0-21-amd64 run one kernel model (modelled commits on: b723748750ec, "
        "2867e1eac610; the other 16 off): a change between the documents is not a difference of the kernels"
    ) in " ".join(r.stdout.split())
    doc = json.loads(paths["5.10.0-21-amd64"].read_text())
    doc["config"]["kernels"][0]["vendor"] = None
    older = tmp_path / "older.json"
    older.write_text(json.dumps(doc))
    r = run("diff", older, paths["5.10.0-21-amd64"])
    assert (
        'note: kernel 5.10.0-21-amd64 is described differently in the two documents (vendor null → "Debian") but '
        "runs one kernel model in both (modelled commits on: b723748750ec, 2867e1eac610; the other 16 off): a change "
        "between them is not the model's"
    ) in " ".join(r.stdout.split())
    assert "another model" not in r.stdout
    # a document of before config.kernels[].switches: the descriptive fields stand for the model, as before
    del doc["config"]["kernels"][0]["switches"]
    older.write_text(json.dumps(doc))
    r = run("diff", older, paths["5.10.0-21-amd64"])
    assert (
        'note: kernel 5.10.0-21-amd64 is another model in the two documents (vendor null → "Debian")'
        in r.stdout
    )


def test_a_switch_that_changes_no_count_makes_no_other_model(tmp_path):
    """0780b4145634 (``ip_ecn_csum16_add``, v5.11-rc1) changes only how an ECN mark writes a checksum summing to
    0xFFFF (kernel/model.py ``BYTES_ONLY_SWITCHES``): documents of 5.10.24 and 5.11.7 (which differ only in it,
    kernel/stable.py) run one kernel model, as --kernel refuses them as one; a document of before the switch
    existed (no ``ip_ecn_csum16_add`` among its switches) runs the model a newer one does (breaker's finding:
    every older baseline of a 5.11+ kernel got "another model")."""
    paths = _kernel_documents(tmp_path, "5.10.24", "5.11.7")
    r = run("diff", paths["5.10.24"], paths["5.11.7"])
    assert (
        "note: kernels 5.10.24 and 5.11.7 run one kernel model (modelled commits on: 89e5c58fc1e2, 8dc1c444df19, "
        "b723748750ec, 2867e1eac610; the other 13 off; they differ in 0780b4145634, but it changes only how an ECN "
        "mark writes an IPv4 header checksum that sums to 0xFFFF): a change between the documents is not a "
        "difference of the kernels"
    ) in " ".join(r.stdout.split())
    doc = json.loads(paths["5.11.7"].read_text())
    del doc["config"]["kernels"][0]["switches"]["ip_ecn_csum16_add"]
    older = tmp_path / "older.json"
    older.write_text(json.dumps(doc))
    r = run("diff", older, paths["5.11.7"])
    assert r.exit_code == 0 and "another model" not in r.stdout and "note: kernel" not in r.stdout


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("name", [1]),
        ("backports", [{"upstream": None}, {"upstream": "x"}, 3]),
        ("backports", "abc"),
        ("fix_89e5c58fc1e2", "yes"),
        ("release", None),
        ("switches", "abc"),
        ("switches", {"udp_tunnel_gate_checks_uh_check": "yes", "x": [1]}),
    ],
)
def test_diff_reads_odd_kernel_entries_without_failing(docs, tmp_path, field, value):
    """config.kernels[] fields of another type than the tool writes (the schema lets them through): the model
    note compares them as found, never assumes their type, and a name that is not a string pairs nothing."""
    doc = json.loads(docs["pre"].read_text())
    doc["config"]["kernels"][0][field] = value
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps(doc))
    for pair in ((docs["pre"], odd), (odd, odd)):
        r = run("diff", *pair)
        assert r.exit_code in (0, 1) and "internal error" not in r.output, r.output
    out = run("diff", docs["pre"], odd).stdout.replace("carries 89e5c58fc1e2", "fix_89e5c58fc1e2")
    if field == "switches":
        # switches the tool did not write: the model is another, the values shown as found
        assert "note: kernel pre-fix is another model in the two documents (" in out
        assert ('"yes"' if isinstance(value, dict) else '"abc"') in out
    elif field != "name":
        # the same switches in both: one kernel model, described differently
        assert f"note: kernel pre-fix is described differently in the two documents ({field}" in out


def test_every_failed_check_is_printed_as_a_finding(capsys):
    """The kind: every CheckFailed (diff's regression, the kernel backend's "simulator and kernel differ", which
    needs root to reach) prints its finding alone on stderr, exit 1; a usage error keeps its "Error: " (exit 2)."""
    from gro_replay.cli.errors import CheckFailed, UsageError

    for exc, line in (
        (CheckFailed("simulator and kernel differ"), "simulator and kernel differ\n"),
        (UsageError("--nic-tunnel-port needs --nic"), "Error: --nic-tunnel-port needs --nic\n"),
    ):
        exc.show()
        assert capsys.readouterr().err == line
    assert (CheckFailed("x").exit_code, UsageError("x").exit_code) == (1, 2)


def _flow_docs(tmp_path) -> tuple[Path, Path, str, str]:
    """Two flows in one budget poll (64 frames a poll: all 20 in one): A, VXLAN over IPv4 with outer checksum 0, 16
    full segments; B, VXLAN over IPv6 with outer checksum 0, 4 full segments. The baseline runs the post-fix kernel
    without udp6zerocsumrx: the phys device merges each flow into one skb (89e5c58fc1e2: udp_gro_receive no longer
    refuses a zero outer checksum), and B's skb is dropped by the normal path before decapsulation
    (net/ipv6/udp.c __udp6_lib_rcv: zero UDPv6 checksum), so B has no tunnel skb. The current runs the pre-fix
    kernel with udp6zerocsumrx: the phys device merges nothing (16 and 4 skbs) and gro_cells merges each flow into
    one skb, B's included. A moves the skb counts by 15 (phys 1 → 16), B by 4 (phys 1 → 4, tunnel 0 → 1)."""
    from gro_replay.capture.writer import PcapWriter
    from gro_replay.synth import DEFAULT_START_NS, Scenario, synth_frames

    a = list(synth_frames(Scenario(frames=16)))
    b = list(synth_frames(Scenario(frames=4, outer_ipv6=True, vni=200, start_ns=DEFAULT_START_NS + 10**6)))
    cap = tmp_path / "two.pcap"
    with PcapWriter(cap) as w:
        for ts, f in a + b:
            w.write(ts, f)
    docs = []
    for name, opts in (("base", ["--fix"]), ("cur", ["--no-fix", "--udp6zerocsumrx"])):
        r = run(cap, *opts, "--poll", "budget", "--format", "json", "-q")
        assert r.exit_code == 0, r.output
        docs.append(tmp_path / f"{name}.json")
        docs[-1].write_text(r.stdout)
    inner = "192.168.1.1:40000→192.168.1.2:5201 tcp"
    return (
        docs[0],
        docs[1],
        f"10.0.0.1:37531→10.0.0.2:4789 vxlan vni 100 (csum 0) | {inner}",
        f"[fd00::1]:37531→[fd00::2]:4789 vxlan vni 200 (csum 0) | {inner}",
    )


def test_changed_flows_rank_by_the_skbs_they_moved_not_by_a_loss_from_zero(tmp_path):
    """A flow that had no tunnel skb in the baseline and has one now is not an infinite loss that ranks first: both
    flows lost aggregation at the phys device (checked, flagged), and A, which moved the counts by 15 skbs, comes
    before B, which moved them by 4; B's tunnel row says it was delivered in the current document only."""
    base, cur, a, b = _flow_docs(tmp_path)
    r = run("diff", base, cur, "--format", "markdown")
    assert r.exit_code == 1, r.output
    rows = [line for line in r.stdout.splitlines() if line.startswith("| `")]
    assert rows == [
        f"| `{a.replace('|', chr(92) + '|')}` | phys NAPI | 1 → 16 | 16.00 → 1.00 | -93.8% ❌ |",
        f"| `{b.replace('|', chr(92) + '|')}` | phys NAPI | 1 → 4 | 4.00 → 1.00 | -75.0% ❌ |",
        f"| `{b.replace('|', chr(92) + '|')}` | tunnel gro_cells | 0 → 1 | – → 4.00 | delivered in current only |",
    ]
    table = run("diff", base, cur).stdout
    # the table lists A first too, and prints B's outer IPv6 addresses (rich markup would read "[fd00::1]" as a tag)
    assert table.index("10.0.0.1:37531→10.0.0.2:4789") < table.index(
        "[fd00::1]:37531→[fd00::2]:4789 vxlan vni 200"
    )
    # the other way round, B's tunnel skb is gone: named so, and its segments per skb 4 → 0 is the checked loss
    rows = [
        line for line in run("diff", cur, base, "--format", "markdown").stdout.splitlines() if "| `" in line
    ]
    assert rows[:2] == [
        f"| `{b.replace('|', chr(92) + '|')}` | phys NAPI | 4 → 1 | 1.00 → 4.00 | +300.0% |",
        f"| `{b.replace('|', chr(92) + '|')}` | tunnel gro_cells | 1 → 0 | 4.00 → – | not delivered in current ❌ |",
    ]


def test_flows_regressed_counts_a_flow_once_whatever_kernels_it_regressed_in(tmp_path):
    """``flows_regressed`` is the flows with at least one regression (docs/ci.md): the fix sample's one flow
    regressing in both kernels is 1 flow (breaker's finding: it said 2, one per kernel). Budget polls against
    ``--poll gap:5``: gap:5 splits the 17 frames into polls of 10 and 7 (frames 1-10 and 11-17 1 µs apart, 10 µs
    between them, gro-spec §1.8), so pre-fix gro_cells goes from 1 to 2 skbs (17 → 8.5 segments / skb) and post-fix
    the phys device and gro_cells too: 3 stage regressions and 3 of the flow, over 2 kernels."""
    a, b = tmp_path / "budget.json", tmp_path / "gap5.json"
    for path, poll in ((a, "budget"), (b, "gap:5")):
        r = run(FIX_SAMPLE, "--poll", poll, "--format", "json", "-q")
        assert r.exit_code == 0, r.output
        path.write_text(r.stdout)
    r = run("diff", a, b)
    assert (
        r.stdout.rstrip()
        .splitlines()[-1]
        .startswith("DIFF status=regression regressions=6 stage_regressions=3 flows_regressed=1 ")
    )


def test_flows_found_in_one_document_only_are_named_in_every_format(tmp_path):
    """Flows whose key is in one document only are not compared: the text said nothing of them ("no flow changed
    (0 compared)") where Markdown counted them and JSON listed them (breaker's finding: an older document keyed a
    tagged flow otherwise). The fix sample's one flow (outer checksum 0) is no flow of the 4-flow sample (computed
    checksums): 1 only in the baseline, 4 only in the current, each line naming at most 3."""
    a, b = tmp_path / "fix.json", tmp_path / "four.json"
    for path, cap in ((a, FIX_SAMPLE), (b, VXLAN4_SAMPLE)):
        r = run(cap, "--format", "json", "-q")
        assert r.exit_code == 0, r.output
        path.write_text(r.stdout)
    only_b = json.loads(a.read_text())["kernels"][0]["flows"][0]["flow"]
    four = [f["flow"] for f in json.loads(b.read_text())["kernels"][0]["flows"]]
    assert len(four) == 4 and only_b not in four
    doc = json.loads(run("diff", a, b, "--allow-different-input", "--format", "json").stdout)
    shown = doc["kernels"][0]["flows_only_in_current"][:3]
    want = [
        f"1 flow only in the baseline, not compared: {only_b}",
        f"4 flows only in the current, not compared: {'; '.join(shown)} and 1 more (see --format json)",
    ]
    text = run("diff", a, b, "--allow-different-input").stdout
    md = run("diff", a, b, "--allow-different-input", "--format", "markdown").stdout
    for line in want:
        assert line in " ".join(text.split()), line
    assert f"1 flow only in the baseline, not compared: `{only_b}`." in md


def test_a_loss_printed_beside_its_threshold_is_on_the_side_the_gate_put_it(docs):
    """Post-fix → pre-fix of the fix sample under budget polls: segments per phys skb 17 → 1, a loss of 16/17 =
    94.1176 %. Against --max-regression 94.1 the gate fails (94.1176 > 94.1), and the one-decimal "94.1%" beside
    "lost more than 94.1%" contradicted it (newcomer's finding, with 88.24 % and 88.2): a second decimal is shown
    there; against 94.2 the one-decimal text stands."""
    r = run("diff", docs["post"], docs["pre"], "--max-regression", "94.1")
    assert r.exit_code == 1
    out = " ".join(r.stdout.split())
    assert "(-94.12%; allowed loss 94.1%)" in out and "observed: largest loss 94.12%" in out
    assert out.endswith("largest_loss=94.12% kernels=post-fix→pre-fix")
    r = run("diff", docs["post"], docs["pre"], "--max-regression", "94.2")
    assert r.exit_code == 0 and "observed: largest loss 94.1%" in " ".join(r.stdout.split())


def _with_phys(doc: dict, path, **stage) -> None:
    """Write ``doc`` with its first kernel's phys-stage counters set to ``stage``'s values to ``path``."""
    d = json.loads(json.dumps(doc))
    d["kernels"][0]["stages"]["phys"].update(stage)
    path.write_text(json.dumps(d))


@pytest.mark.parametrize(
    ("stage", "metric", "limit", "printed"),
    [
        # 10.00 → 1,000,000 / 847,486 segments per skb: a loss of 88.2004 %, beyond 88.2 only at the 4th decimal
        ({"segments_delivered": 1_000_000, "skbs_delivered": 847_486}, "segs_per_skb", "88.2", "-88.2004%"),
        # 1,000,000 / 850,412: 88.2409 %, beyond 88.24 at the 3rd (two decimals read 88.24, not beyond)
        ({"segments_delivered": 1_000_000, "skbs_delivered": 850_412}, "segs_per_skb", "88.24", "-88.241%"),
        # skbs 100,000 → 188,241: lower is better, the loss is the rise, 88.241 %: "+88.24%"
        ({"segments_delivered": 1_000_000, "skbs_delivered": 188_241}, "skbs", "88.2", "+88.24%"),
        # 1,000,000 / 112,500 = 8.888… per skb: 11.111… %, beyond a threshold of 7 decimals at the 8th, of 6 at the
        # 7th (six decimals read 11.111111, at or below them: breaker's finding)
        (
            {"segments_delivered": 1_000_000, "skbs_delivered": 112_500},
            "segs_per_skb",
            "11.1111111",
            "-11.11111111%",
        ),
        (
            {"segments_delivered": 1_000_000, "skbs_delivered": 112_500},
            "segs_per_skb",
            "11.111111",
            "-11.1111111%",
        ),
        # skbs 100,000 → 233,333: a rise of 133.333 %, beyond 133.3329999 at the 3rd decimal
        ({"segments_delivered": 1_000_000, "skbs_delivered": 233_333}, "skbs", "133.3329999", "+133.333%"),
    ],
)
def test_a_failed_check_prints_its_loss_beyond_the_threshold(tmp_path, docs, stage, metric, limit, printed):
    """A failed check's loss is printed with the decimals that show it beyond the threshold (metrics.loss_digits),
    in the regression line, the Markdown table and sentence, the observed sentence and largest_loss=: a loss of
    88.2004 % read "-88.2%; allowed loss 88.2%" under "lost more than 88.2%", the digits were chosen from values
    already rounded to 2 decimals, and a metric where lower is better (skbs) never got them (breaker's findings).
    The baseline: 1,000,000 segments in 100,000 skbs (10.00 per skb) at the first kernel's phys device."""
    base = json.loads(Path(docs["post"]).read_text())
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    _with_phys(base, a, segments_delivered=1_000_000, skbs_delivered=100_000)
    _with_phys(base, b, **stage)
    args = ["diff", a, b, "--metric", metric, "--max-regression", limit]
    text = " ".join(run(*args).stdout.split())
    assert f"({printed}; allowed loss {limit}%)" in text
    loss = printed.lstrip("+-")
    assert f"observed: largest loss {loss} " in text and f"largest_loss={loss} " in text
    md = run(*args, "--format", "markdown").stdout
    assert f"| {printed} ❌ |" in md and f"({printed}; allowed loss {limit}%)" in md
    # JSON: the loss the check compared, with at least those decimals: beyond the threshold, as its status says
    doc = json.loads(run(*args, "--format", "json").stdout)
    assert doc["status"] == "regression"
    got, shown = doc["largest_loss"]["loss_pct"], loss.rstrip("%")
    assert round(got, len(shown.split(".")[1])) == float(shown) and got > float(limit)


@pytest.mark.parametrize("limit", ["66.66666666666", "66.666666666", "66.66666666666666"])
def test_a_passed_check_never_prints_its_loss_above_the_allowance(tmp_path, docs, limit):
    """1,000,000 segments in 100,000 skbs (10.00 per skb) → in 300,000 (3.33…): a loss of 66.666…%, within 1e-9
    (metrics._EPS) of these thresholds, so the check passes (exit 0). Rounded it reads 66.6666666667%, above the
    allowance under "OK" (breaker's finding); it is cut to the threshold's side: the document's loss_pct and every
    text are at or below it."""
    base = json.loads(Path(docs["post"]).read_text())
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    _with_phys(base, a, segments_delivered=1_000_000, skbs_delivered=100_000)
    _with_phys(base, b, segments_delivered=1_000_000, skbs_delivered=300_000)
    args = ["diff", a, b, "--metric", "segs_per_skb", "--max-regression", limit]
    r = run(*args, "--format", "json")
    doc = json.loads(r.stdout)
    assert doc["status"] == "ok" and doc["largest_loss"]["loss_pct"] <= float(limit)
    text = " ".join(run(*args).stdout.split())
    shown = text.split("largest loss ")[1].split("%")[0]
    assert float(shown) <= float(limit), text


def test_diff_names_a_switch_a_document_lacks_absent(tmp_path):
    """A document written before a switch existed (here: 6.6's without packet_alloc_skb_costly_order, added with
    ae6db08f8b56) against one with it on: the note says the switch is absent there, not JSON's null (breaker's
    finding)."""
    r = run(FIX_SAMPLE, "--kernel", "6.6", "--format", "json", "-q")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    new = tmp_path / "new.json"
    new.write_text(r.stdout)
    del doc["config"]["kernels"][0]["switches"]["packet_alloc_skb_costly_order"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc))
    out = " ".join(run("diff", old, new).stdout.split())
    assert "modelled commits ae6db08f8b56 (absent) → on" in out and "null" not in out


def test_documents_without_digests_are_one_input_only_under_one_name(tmp_path):
    """Two documents without a digest: one input when they name the same path (or none), else not known to be the
    same and refused like one-sided digests (breaker's finding: compared silently under two paths)."""
    doc = json.loads(run(FIX_SAMPLE, "--format", "json", "-q").stdout)
    a, b, c = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    a.write_text(json.dumps({**doc, "input": {**doc["input"], "blake3": None}}))
    b.write_text(
        json.dumps({**doc, "input": {**doc["input"], "blake3": None, "path": "/other/capture.pcap"}})
    )
    c.write_text(json.dumps({**doc, "input": {**doc["input"], "blake3": None}}))
    r = run("diff", a, c)
    # one input, said so (breaker38: "inputs: X (no digest recorded) → X (no digest recorded)" read as two)
    assert r.exit_code == 0 and r.stdout.splitlines()[0] == (
        f"input: {FIX_SAMPLE} (neither document records a digest: the same by its name)"
    )
    r = run("diff", a, b)
    assert r.exit_code == 2 and r.stderr.startswith("Error: inputs not known to be the same: ")
    # a stream's name names no capture: two documents of captures piped in are not known to be one (breaker39)
    for name in (
        "-",
        "/dev/stdin",
        "/dev/fd/63",
        "/proc/self/fd/0",
        "/proc/4242/fd/0",
        "//dev/./stdin",
        "/dev/../dev/stdin",
        "/proc/self/task/5/fd/0",
        "../dev/stdin",
        "/proc/self/root/dev/stdin",
        "/dev/fd/../../self/fd/0",
    ):
        for x in (a, c):
            x.write_text(json.dumps({**doc, "input": {**doc["input"], "blake3": None, "path": name}}))
        r = run("diff", a, c)
        assert r.exit_code == 2 and r.stderr.startswith("Error: inputs not known to be the same: "), name
        assert "names a stream, which any capture piped in has); pass --allow-different-input" in r.stderr
    # one name, frames read differing: not one capture (breaker41); /dev/fd/../../x is a file's name
    for name in ("/tmp/capture.pcap", "/dev/fd/../../tmp/capture.pcap"):
        a.write_text(json.dumps({**doc, "input": {**doc["input"], "blake3": None, "path": name}}))
        c.write_text(json.dumps({**doc, "input": {**doc["input"], "blake3": None, "path": name}}))
        assert run("diff", a, c).exit_code == 0, name
        for other in ({"frames_read": 18}, {"bytes": doc["input"]["bytes"] + 64}):
            c.write_text(
                json.dumps({**doc, "input": {**doc["input"], "blake3": None, "path": name, **other}})
            )
            r = run("diff", a, c)
            assert r.exit_code == 2 and r.stderr.startswith("Error: inputs not known to be the same: "), name
            n, unit = ("frames_read", "frames") if "frames_read" in other else ("bytes", "bytes")
            assert f" (they read {doc['input'][n]} and {other[n]} {unit}); " in r.stderr, r.stderr


def test_either_document_can_be_piped_in_as_the_replay_reads_a_capture(docs, tmp_path):
    """``-`` is standard input, as CAPTURE ``-`` is for the replay: ``gro-replay x.pcap --format json | gro-replay
    diff baseline.json -`` (it was read as a file named "-": "cannot read: No such file or directory"). The
    report names it "standard input" (the JSON keeps ``-``, as ``input.path`` does); not both documents, and not
    a BASELINE that --baseline-update would overwrite; the document --baseline-update writes is the bytes read."""
    post = docs["post"].read_bytes()
    for args in (("-", docs["pre"]), (docs["pre"], "-")):
        p = subprocess.run([*CLI, "diff", *map(str, args)], input=post, capture_output=True, env=cli_env())
        want = 1 if args[0] == "-" else 0  # post-fix → pre-fix regresses; pre-fix → post-fix does not
        assert p.returncode == want, p.stderr
        names = ("standard input", docs["pre"]) if args[0] == "-" else (docs["pre"], "standard input")
        assert f"baseline {names[0]}, current {names[1]}" in p.stdout.decode(), p.stdout
    j = run("diff", "-", docs["post"], "--format", "json", input=post)
    assert json.loads(j.stdout)["baseline"]["document"] == "-"
    r = run("diff", "-", "-", input=post)
    assert r.exit_code == 2
    assert r.stderr == (
        "Error: BASELINE and CURRENT are both standard input (-): at most one of them can be; give the other as a "
        "file\n"
    )
    r = run("diff", "-", docs["post"], "--baseline-update", input=post)
    assert r.exit_code == 2
    assert r.stderr == "Error: --baseline-update: BASELINE is standard input (-), not a file to update\n"
    new = tmp_path / "new.json"
    r = run("diff", new, "-", "--baseline-update", input=post)
    assert r.exit_code == 0 and new.read_bytes() == post
    assert r.stderr == f"baseline created: standard input → {new}\n"
    r = run("diff", docs["post"], "-", input=b"")
    assert r.exit_code == 2 and r.stderr == "Error: CURRENT standard input: empty input\n"


def test_a_document_without_the_outer_protocol_matches_its_flows(docs, tmp_path):
    """Documents written before ``key.outer.proto`` was added name the same flows: the flows of an older baseline
    are matched without it (they were "only in the baseline" and "only in the current", 0 compared: breaker30)."""
    old = json.loads(docs["post"].read_text())
    for k in old["kernels"]:
        for f in k["flows"]:
            f["key"]["outer"].pop("proto")
    older = tmp_path / "older.json"
    older.write_text(json.dumps(old))
    r = run("diff", older, docs["post"], "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert "only in the baseline" not in run("diff", older, docs["post"]).stdout
    assert doc["status"] == "ok"


def test_diff_selects_a_flow_that_is_not_tunnelled_by_its_protocol(tmp_path):
    """``--flow proto=`` reads a flow's own IP protocol where it is not VXLAN/Geneve (JSON ``key.outer.proto``, the
    inner key null), as explain and the replay do (FlowKey.inner_proto): diff read 0 and selected a GRE flow with
    proto=0 (breaker30). The label's names (gre, ipip) are accepted."""
    import struct

    from gro_replay.capture.writer import PcapWriter
    from gro_replay.packet.build import ACK, FrameSpec, build_inner_frame

    frame = build_inner_frame(FrameSpec(flags=ACK, payload=100))
    ip = bytearray(frame[14:34])
    ip[9] = 47  # the same IPv4 header as protocol 47, a 4-byte GRE header (IPv4 inside) before the packet
    inner = struct.pack("!HH", 0, 0x0800) + frame[14:]
    ip[2:4] = (20 + len(inner)).to_bytes(2, "big")
    ip[10:12] = b"\0\0"
    from gro_replay.packet.csum import ip_fast_csum

    ip[10:12] = ip_fast_csum(ip, 0, 5).to_bytes(2, "big")
    cap = tmp_path / "gre.pcap"
    with PcapWriter(str(cap)) as w:
        w.write(1_700_000_000_000_000_000, frame[:14] + bytes(ip) + inner)
    doc = tmp_path / "gre.json"
    doc.write_text(run(cap, "--format", "json", "-q").stdout)
    assert run("diff", doc, doc, "--flow", "proto=gre").exit_code == 0
    assert run("diff", doc, doc, "--flow", "proto=47").exit_code == 0
    r = run("diff", doc, doc, "--flow", "proto=0")
    assert r.exit_code == 2 and "no flow of the documents matches --flow 'proto=0'" in r.stderr
    # the GRE flow reaches no tunnel device: no skb there in either document, so nothing per skb to compare (it
    # read 0.00 → 0.00, checked: newcomer30)
    cmp = json.loads(run("diff", doc, doc, "--format", "json").stdout)
    (flow,) = cmp["kernels"][0]["flows"]
    cell = flow["stages"]["tunnel"]["flow_segs_per_skb"]
    assert (cell["baseline"], cell["current"], cell["checked"]) == (None, None, False)


def test_flows_of_a_key_that_came_back_are_compared_in_order(tmp_path):
    """One key in two bursts 2 s apart with --flow-timeout 1: two flows of one key (README: a key back after its
    flow ended is a new flow). diff excluded both as "sharing a key" and reported no flow regression where each
    lost its phys-device merging (breaker32); the n-th flow of a key is compared with the n-th of the other
    document. Baseline CHECKSUM_COMPLETE (csum_valid 1: the gate passes, gro-spec §4.7 row 7), current CHECKSUM_NONE
    before the fix (refused, row 1): segments / skb 4.00 → 1.00 at the phys device, for both flows."""
    from gro_replay.capture.writer import PcapWriter
    from gro_replay.packet.build import FrameSpec, build_flow

    frames = build_flow(FrameSpec(outer_csum="zero", timestamps=False), [1000] * 8)
    cap = tmp_path / "back.pcap"
    with PcapWriter(str(cap)) as w:
        for i, f in enumerate(frames):
            w.write(1_700_000_000_000_000_000 + 1000 * i + (2 * 10**9 if i >= 4 else 0), f)
    docs = []
    for name, rx in (("base", "complete"), ("cur", "none")):
        r = run(
            cap,
            "--no-fix",
            "--flow-timeout",
            "1",
            "--rx-csum",
            rx,
            "--format",
            "json",
            "-q",
        )
        assert r.exit_code == 0, r.output
        assert len(json.loads(r.stdout)["kernels"][0]["flows"]) == 2
        docs.append(tmp_path / f"{name}.json")
        docs[-1].write_text(r.stdout)
    cmp = json.loads(run("diff", *docs, "--format", "json").stdout)
    (k,) = cmp["kernels"]
    assert len(k["flows"]) == 2 and k["flows_only_in_baseline"] == k["flows_only_in_current"] == []
    phys = [f["stages"]["phys"]["flow_segs_per_skb"] for f in k["flows"]]
    assert [(c["baseline"], c["current"], c["regression"]) for c in phys] == [(4.0, 1.0, True)] * 2
    # paired by id (the same capture and flow timeouts), named with them, and counted as two flows (breaker33)
    assert [f["flow"].rsplit(" (", 1)[1] for f in k["flows"]] == ["#0 → #0)", "#1 → #1)"]
    assert " flows_regressed=2 " in run("diff", *docs).stdout
    # other flow timeouts cut the key's traffic into other flows: not paired by position (a false regression)
    r = run(cap, "--no-fix", "--flow-timeout", "off", "--rx-csum", "complete", "--format", "json", "-q")
    whole = tmp_path / "whole.json"
    whole.write_text(r.stdout)
    cmp = json.loads(run("diff", whole, docs[1], "--format", "json").stdout)
    assert not cmp["kernels"][0]["flows"] and not cmp["regressions"][1:]
    # said in the note, not as flows in one document only: the key is in both (breaker35)
    assert cmp["kernels"][0]["flows_only_in_baseline"] == cmp["kernels"][0]["flows_only_in_current"] == []
    assert any(
        "1 flow in the baseline and 2 in the current (other flow timeouts cut its traffic into other flows): not "
        "compared" in n
        for n in cmp["notes"]
    ), cmp["notes"]


def test_ids_renumbered_by_a_filter_are_not_paired_by_id(tmp_path):
    """A UDP flow to port 9999 first, then one VXLAN key in two bursts 2 s apart (--flow-timeout 1): the capture
    filter -f 'udp port 4789' leaves the UDP flow out, so the VXLAN flows are #0 and #1 where they were #1 and #2.
    Paired by id they compared different bursts (breaker34); ids are used only where what numbers the flows is the
    same and no id names two identities, else the flows of a key pair in order: no change is found, as none
    happened."""
    pytest.importorskip("pcapy", reason="the bpf extra (pcapy-ng) is part of the test extra")
    from gro_replay.capture.writer import PcapWriter
    from gro_replay.packet.build import FrameSpec, build_flow

    udp = build_flow(FrameSpec(outer_csum="zero", udp_dport=9999, udp_sport=50001), [1000] * 3)
    vx = build_flow(FrameSpec(outer_csum="zero"), [1000] * 4 + [500] + [1000] * 6)
    cap = tmp_path / "f.pcap"
    with PcapWriter(str(cap)) as w:
        t = 1_700_000_000_000_000_000
        for i, f in enumerate(udp + vx):
            w.write(t + 1000 * i + (2 * 10**9 if i >= len(udp) + 5 else 0), f)
    docs = []
    for name, extra in (("all", []), ("filtered", ["-f", "udp port 4789"])):
        r = run(cap, "--flow-timeout", "1", *extra, "--format", "json", "-q")
        assert r.exit_code == 0, r.output
        docs.append(tmp_path / f"{name}.json")
        docs[-1].write_text(r.stdout)
    r = run("diff", *docs, "--format", "json")
    cmp = json.loads(r.stdout)
    assert r.exit_code == 0 and not cmp["regressions"], cmp["regressions"]
    assert [f["flow"].rsplit(" (", 1)[1] for f in cmp["kernels"][0]["flows"]] == ["#1 → #0)", "#2 → #1)"]


def test_flows_a_smaller_listing_sums_are_not_said_to_be_only_in_one_document(tmp_path):
    """The 4-flow sample (4 flows of 100 segments each) with --flows-max 2 lists 2 flows and sums the other 2
    (``flows_summary.omitted.flows``): against the full listing, the 2 it does not list are "listed only in the
    baseline (the current sums 2 flows it does not list, --flows-max: they may be among them)", not "only in the
    baseline" (breaker35: they were said to be absent from a document that holds them); JSON ``flows_omitted``."""
    from conftest import VXLAN4_SAMPLE

    from gro_replay.report.diff.pairing import omitted_flows

    full, short = tmp_path / "full.json", tmp_path / "short.json"
    full.write_text(run(VXLAN4_SAMPLE, "--format", "json", "-q").stdout)
    short.write_text(run(VXLAN4_SAMPLE, "--format", "json", "-q", "--flows-max", "2").stdout)
    lines = [ln for ln in run("diff", full, short).stdout.splitlines() if "only" in ln]
    assert len(lines) == 2 and all(
        ln.startswith(
            "2 flows listed only in the baseline (the current sums 2 flows it does not list, --flows-max: they may "
            "be among them), not compared: "
        )
        for ln in lines
    )
    cmp = json.loads(run("diff", short, full, "--format", "json").stdout)
    assert [k["flows_omitted"] for k in cmp["kernels"]] == [{"baseline": 2, "current": 0}] * 2
    assert [len(k["flows_only_in_current"]) for k in cmp["kernels"]] == [2, 2]
    # a hand-made flows_summary the comparable schema does not check counts no omitted flow
    for bad in ("x", [], {"omitted": 3}, {"omitted": {"flows": -1}}, {"omitted": {"flows": True}}, None):
        assert omitted_flows({"flows_summary": bad}) == 0
    assert omitted_flows({"flows_summary": {"omitted": {"flows": 7}}}) == 7


def test_a_compressed_copy_is_refused_saying_why(tmp_path):
    """newcomer34: the fix sample piped in gzipped was refused as "different inputs" with no hint that it holds
    the same packets. Each digest is of the bytes as read (the gzip stream's here), so the documents stay apart,
    and the refusal says both read as many frames and bytes (the sample's, as dpkt reads them); two different
    captures get no such words."""
    import gzip

    import dpkt

    raw = FIX_SAMPLE.read_bytes()
    with FIX_SAMPLE.open("rb") as f:
        sizes = [len(buf) for _ts, buf in dpkt.pcap.Reader(f)]
    runner = CliRunner()
    base, cur, other = tmp_path / "base.json", tmp_path / "cur.json", tmp_path / "other.json"
    for path, argv, data in (
        (base, [str(FIX_SAMPLE)], None),
        (cur, ["-"], gzip.compress(raw)),  # through a pipe: the stream reader reads file descriptor 0
        (other, [str(VXLAN4_SAMPLE)], None),
    ):
        p = subprocess.run([*CLI, *argv, "--format", "json"], input=data, capture_output=True, env=cli_env())
        assert p.returncode == 0, p.stderr
        path.write_bytes(p.stdout)
    r = runner.invoke(main, ["diff", str(base), str(cur)])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
    assert (
        f"(both read {len(sizes)} frames and {sum(sizes):,} bytes: each digest is of the capture's bytes as read, so a "
        "compressed or rewritten copy of one capture (gzip, tcpdump -w, editcap) has another)"
    ) in r.output
    r = runner.invoke(main, ["diff", str(base), str(other)])
    assert r.exit_code == 2 and "both read" not in r.output, r.output
