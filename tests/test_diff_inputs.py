"""``gro-replay diff`` reads hostile documents without a crash: every refusal is one line, exit 2, naming the file
and the JSON pointer of the field (issue 13; ``../shared/robustness/README.md``, rows ``diff-*.json``).

Each shared reproducer is an example of a kind; the kinds are also built here from a minimal document (the
shape of ``diff-mini-ok.json``: what ``diff`` compares, one kernel, both stages) so the test holds without
``../shared``: NaN / ±Infinity anywhere (a NaN ``segments_delivered`` passed as "status ok", hiding a
regression), numbers that overflow a float, integers beyond 2**63-1 or of thousands of digits, strings for
numbers, missing ``name`` / ``flow`` / stages, ``input`` of the wrong type, deep nesting, an unbounded input.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from gro_replay.cli import main
from gro_replay.report.diff import MAX_DEPTH

ROBUSTNESS = Path(__file__).resolve().parents[2] / "shared" / "robustness"

MINI = {
    "schema_version": 1,
    "kernels": [
        {
            "name": "post-fix",
            "stages": {
                "phys": {"skbs_delivered": 17, "segments_delivered": 17, "aggregates": 0, "sw_csum_bytes": 0},
                "tunnel": {
                    "skbs_delivered": 1,
                    "segments_delivered": 17,
                    "aggregates": 1,
                    "sw_csum_bytes": 23584,
                },
            },
            "flows": [
                {
                    "flow": "f0",
                    "phys": {"skbs": 17, "segments": 17},
                    "tunnel": {"skbs": 1, "segments": 17},
                }
            ],
        }
    ],
}


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def one_line_exit_2(r, path, *needles: str) -> None:
    assert r.exit_code == 2, (r.exit_code, r.output)
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.output and "internal error" not in r.stderr
    assert r.stderr.startswith(f"Error: CURRENT {path}: "), r.stderr
    for n in needles:
        assert n in r.stderr, r.stderr


@pytest.fixture
def mini(tmp_path) -> Path:
    p = tmp_path / "mini.json"
    p.write_text(json.dumps(MINI))
    return p


def test_minimal_document_against_itself_is_ok(mini):
    r = run("diff", mini, mini, "--format", "json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["status"] == "ok"


def _raw(tmp_path, text: str) -> Path:
    p = tmp_path / "cur.json"
    p.write_text(text)
    return p


_SEG = '"segments_delivered": 17, "aggregates": 0'


@pytest.mark.parametrize(
    ("literal", "pointer", "what"),
    [
        ("NaN", "/kernels/0/stages/phys/segments_delivered", "NaN"),
        ("Infinity", "/kernels/0/stages/phys/segments_delivered", "Infinity"),
        ("-Infinity", "/kernels/0/stages/phys/segments_delivered", "-Infinity"),
        ("1e999", "/kernels/0/stages/phys/segments_delivered", "overflows"),
        ("1" + "0" * 309, "/kernels/0/stages/phys/segments_delivered", "310 digits"),  # 10**309
        ("9" * 5000, "/kernels/0/stages/phys/segments_delivered", "5000 digits"),  # past int()'s 4300
        ("9223372036854775808", "/kernels/0/stages/phys/segments_delivered", "maximum"),  # 2**63
        ("-1", "/kernels/0/stages/phys/segments_delivered", "minimum"),
        ('"17"', "/kernels/0/stages/phys/segments_delivered", "not of type 'integer'"),
        ("null", "/kernels/0/stages/phys/segments_delivered", "not of type 'integer'"),
        ("true", "/kernels/0/stages/phys/segments_delivered", "not of type 'integer'"),
    ],
)
def test_bad_numbers_in_a_stage(tmp_path, mini, literal, pointer, what):
    text = json.dumps(MINI).replace(_SEG, f'"segments_delivered": {literal}, "aggregates": 0', 1)
    assert literal in text
    p = _raw(tmp_path, text)
    one_line_exit_2(run("diff", mini, p), p, pointer, what)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "1e400", '"3"', "-2"])
def test_bad_numbers_in_a_flow(tmp_path, mini, literal):
    doc = copy.deepcopy(MINI)
    doc["kernels"][0]["flows"][0]["tunnel"]["segments"] = "@@"
    p = _raw(tmp_path, json.dumps(doc).replace('"@@"', literal))
    one_line_exit_2(run("diff", mini, p), p, "/kernels/0/flows/0/tunnel/segments")


def test_nan_where_no_schema_types_it_is_refused_too(tmp_path, mini):
    doc = copy.deepcopy(MINI)
    doc["config"] = {"future_knob": "@@"}
    p = _raw(tmp_path, json.dumps(doc).replace('"@@"', "NaN"))
    one_line_exit_2(run("diff", mini, p), p, "/config/future_knob", "NaN")


def test_nan_in_the_baseline_is_named_as_the_baseline(tmp_path, mini):
    p = _raw(tmp_path, json.dumps(MINI).replace(_SEG, '"segments_delivered": NaN, "aggregates": 0'))
    r = run("diff", p, mini)
    assert r.exit_code == 2 and r.stderr.startswith(f"Error: BASELINE {p}: /kernels/0/stages/phys/")


def _without(path: list, key: str) -> dict:
    doc = copy.deepcopy(MINI)
    node = doc
    for k in path:
        node = node[k]
    del node[key]
    return doc


@pytest.mark.parametrize(
    ("doc", "pointer", "what"),
    [
        (_without(["kernels", 0], "name"), "/kernels/0", "'name' is a required property"),
        (_without(["kernels", 0, "flows", 0], "flow"), "/kernels/0/flows/0", "'flow' is a required property"),
        (_without(["kernels", 0, "stages"], "tunnel"), "/kernels/0/stages", "'tunnel' is a required"),
        (
            _without(["kernels", 0, "stages", "phys"], "skbs_delivered"),
            "/kernels/0/stages/phys",
            "'skbs_delivered' is a required",
        ),
        (_without(["kernels", 0, "flows", 0, "phys"], "skbs"), "/kernels/0/flows/0/phys", "'skbs' is a"),
        ({**MINI, "input": []}, "/input", "not of type 'object'"),
        ({**MINI, "input": {"sha256": 5}}, "/input/sha256", "not of type"),
        ({**MINI, "input": {"blake3": 5}}, "/input/blake3", "not of type"),
        # digests are 64 lowercase hex digits, as the replay writes them (breaker36: an uppercase copy of one digest
        # was "different inputs", a cut one shown twice alike)
        ({**MINI, "input": {"blake3": "9D41" * 16}}, "/input/blake3", "does not match"),
        ({**MINI, "input": {"blake3": "9d41cca026e0"}}, "/input/blake3", "does not match"),
        ({**MINI, "input": {"sha256": "  "}}, "/input/sha256", "does not match"),
        ({**MINI, "kernels": {}}, "/kernels", "not of type 'array'"),
        ({**MINI, "kernels": []}, "/kernels", "non-empty"),
        ({**MINI, "kernels": [{**MINI["kernels"][0], "name": 7}]}, "/kernels/0/name", "not of type 'string'"),
        (
            {**MINI, "kernels": [{**MINI["kernels"][0], "flows": {}}]},
            "/kernels/0/flows",
            "not of type 'array'",
        ),
    ],
)
def test_missing_and_mistyped_fields(tmp_path, mini, doc, pointer, what):
    p = _raw(tmp_path, json.dumps(doc))
    one_line_exit_2(run("diff", mini, p), p, f": {pointer}: ", what)


@pytest.mark.parametrize("field", ["segments_carried_for_other_flows", "segments_carried_by_other_flows"])
@pytest.mark.parametrize(
    ("value", "what"), [(None, "None is not of type"), (-1, "less than the minimum"), ("3", "not of type")]
)
def test_every_flow_count_diff_reads_is_typed(tmp_path, mini, field, value, what):
    """diff reads a flow's segments carried for and by other flows when present (report/diff/metrics.py
    ``flow_values``); a null one raised a TypeError (the fuzz test's finding): every key it reads is typed by the
    comparable schema."""
    doc = copy.deepcopy(MINI)
    doc["kernels"][0]["flows"][0]["phys"][field] = value
    p = _raw(tmp_path, json.dumps(doc))
    one_line_exit_2(run("diff", mini, p), p, f": /kernels/0/flows/0/phys/{field}: ", what)


@pytest.mark.parametrize("opener", ["[", '{"a":'])
def test_deep_nesting(tmp_path, mini, opener):
    closer = "]" if opener == "[" else "}"
    p = _raw(tmp_path, opener * 5000 + "1" + closer * 5000)
    one_line_exit_2(run("diff", mini, p), p, f"nested deeper than {MAX_DEPTH} levels")


def test_deep_nesting_inside_a_valid_document(tmp_path, mini):
    doc = copy.deepcopy(MINI)
    doc["config"] = json.loads("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    p = _raw(tmp_path, json.dumps(doc))
    one_line_exit_2(run("diff", mini, p), p, "nested deeper")


def test_brackets_inside_strings_are_not_nesting(tmp_path, mini):
    doc = copy.deepcopy(MINI)
    doc["kernels"][0]["flows"][0]["flow"] = '[[[{"' * 100  # a label full of brackets and an escaped quote
    p = tmp_path / "ok.json"
    p.write_text(json.dumps(doc))
    r = run("diff", mini, p)
    assert r.exit_code == 0, r.output


def test_size_limit_on_what_is_read(tmp_path, mini):
    size = len(json.dumps(MINI))
    p = _raw(tmp_path, json.dumps(MINI) + " " * 100)
    one_line_exit_2(run("diff", mini, p, "--max-bytes", size + 50), p, f"larger than {size + 50:,} bytes")
    assert run("diff", mini, p, "--max-bytes", 10_000).exit_code == 0


def test_max_bytes_takes_the_size_as_printed(tmp_path, mini):
    """The refusal prints "larger than 1,234 bytes (--max-bytes)" and README/--help say "128 MiB": each form is
    taken back as written (cli/params.py ByteCount)."""
    size = len(json.dumps(MINI))
    p = _raw(tmp_path, json.dumps(MINI) + " " * 100)
    limit = size + 50  # below the file's size + 100
    for form in (f"{limit:,}", f"{limit:,} bytes", f"{limit} bytes", f"{limit}B"):
        one_line_exit_2(run("diff", mini, p, "--max-bytes", form), p, f"larger than {limit:,} bytes")
    for form in ("1 KiB", "1KIB", "128 MiB", "1 GiB"):  # 1 KiB = 1,024 bytes ≥ the file
        assert size + 100 <= 1024
        assert run("diff", mini, p, "--max-bytes", form).exit_code == 0, form
    for form in ("1B", "1 byte", "1"):  # a one-byte limit is printed in the singular and read back alike
        r = run("diff", mini, p, "--max-bytes", form)
        assert (
            r.exit_code == 2
            and r.stderr
            == f"Error: BASELINE {mini}: larger than 1 byte (--max-bytes): raise --max-bytes to read it\n"
        )
    for bad in ("12 MB", ",123", "1,2", "1234,567", "1 KiB 2", "MiB"):
        r = run("diff", mini, p, "--max-bytes", bad)
        assert r.exit_code == 2 and r.stderr.startswith("Error: --max-bytes: "), (bad, r.output)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_dev_zero_is_not_read_without_limit(mini):
    r = run("diff", mini, "/dev/zero", "--max-bytes", 1 << 20)
    one_line_exit_2(r, "/dev/zero", "larger than 1,048,576 bytes")


@pytest.mark.parametrize(
    "value", ["nan", "inf", "-1", "-1e-30", "-0.0000000000000000001%", "1000000.0000000001"]
)
def test_max_regression_must_be_finite(mini, value):
    """Finite and in 0..1000000 as written: -1e-30 and 1000000.0000000001 round into the range as floats."""
    r = run("diff", mini, mini, "--max-regression", value)
    assert r.exit_code == 2 and "--max-regression" in r.stderr and "Traceback" not in r.output


# -- the shared reproducers ---------------------------------------------------------------------------------------
SHARED_EXPECT = {
    # file: JSON pointer (or text) the one-line error names; the README: "exit 2 with one line naming the file
    # and the field; NaN/∞ rejected"
    "diff-deep-nesting.json": "nested deeper than",
    "diff-flow-no-label.json": "/kernels/0/flows/0: 'flow' is a required property",
    "diff-huge-int.json": "/kernels/0/stages/phys/segments_delivered: an integer of",
    "diff-input-list.json": "/input: [] is not of type 'object'",
    "diff-nan.json": "/kernels/0/stages/phys/segments_delivered: NaN",
    "diff-no-kernel-name.json": "/kernels/0: 'name' is a required property",
    "diff-string-number.json": "/kernels/0/stages/phys/aggregates: '1' is not of type 'integer'",
}


@pytest.fixture
def robustness() -> Path:
    if not (ROBUSTNESS / "diff-mini-ok.json").is_file():
        pytest.skip(f"robustness inputs not present ({ROBUSTNESS})")
    return ROBUSTNESS


def test_every_shared_diff_reproducer(robustness):
    ok = robustness / "diff-mini-ok.json"
    r = run("diff", ok, ok)
    assert r.exit_code == 0 and "DIFF status=ok" in r.stdout
    seen = set()
    for p in sorted(robustness.glob("diff-*.json")):
        if p.name in ("diff-mini-ok.json", "diff-base.json"):
            continue
        seen.add(p.name)
        assert p.name in SHARED_EXPECT, f"new reproducer {p.name}: add its expected error"
        one_line_exit_2(run("diff", ok, p), p, SHARED_EXPECT[p.name])
    assert seen == set(SHARED_EXPECT)


def test_shared_full_document_is_refused_against_the_mini_one_for_its_input(robustness):
    # diff-base.json is a whole --format json document of the fix sample; diff-mini-ok.json has no input: the
    # two are not documents of the same capture, which diff refuses (exit 2) unless told otherwise.
    r = run("diff", robustness / "diff-mini-ok.json", robustness / "diff-base.json")
    assert r.exit_code == 2 and r.stderr.count("\n") == 1
    # the mini document records no input: not known to be another capture, nor the same
    assert r.stderr.startswith(
        "Error: inputs not known to be the same: BASELINE has no input recorded, CURRENT "
    )


def test_max_regression_minus_zero_is_zero(mini):
    """-0 percent is 0 percent: printed and kept as 0, not -0 (breaker's finding: 'max_regression=-0%')."""
    r = run("diff", mini, mini, "--max-regression", "-0", "--format", "json")
    assert r.exit_code == 0, r.output
    assert "-0" not in r.stdout.split('"max_regression_pct"')[1].split(",")[0]


@pytest.mark.parametrize(
    ("command", "said"),
    [
        (["explain"], "an explain document (gro-replay explain --format json)"),
        (
            ["batch"],
            "a batch document (gro-replay batch --format json; each capture's own document is in --out DIR)",
        ),
        # they carry ``kind`` too (breaker's finding, session 23)
        (["diff"], "a diff document (gro-replay diff --format json)"),
        (["validate"], "a validate document (gro-replay validate --format json)"),
    ],
)
def test_another_command_s_document_is_named(mini, tmp_path, command, said):
    """diff compares replay documents: an explain, batch, diff or validate document is named as what it is, one
    line, exit 2 (newcomer's finding: "/: 'kernels' is a required property" left them guessing)."""
    from conftest import FIX_SAMPLE, skip_without_kernel_backend

    if command == ["validate"]:
        skip_without_kernel_backend()
    r = run(*command, *([mini, mini] if command == ["diff"] else [FIX_SAMPLE, "-q"]), "--format", "json")
    assert r.exit_code == 0, r.output
    other = tmp_path / "other.json"
    other.write_text(r.stdout)
    one_line_exit_2(
        run("diff", mini, other),
        other,
        f"{said}, not a replay document: diff compares documents of gro-replay CAPTURE --format json",
    )


def test_the_interface_note_says_only_what_the_documents_record():
    """``interface_note`` (report/diff/inputs.py) on hand-made documents of one capture (breaker60): how an
    interface was chosen is said only where ``config.interface`` is recorded (no "(by default)" for a document
    without config), an interface named by no string is no interface, and two documents that replayed the same
    one (the default, and ``--interface`` naming it) get no note and no ``config interface`` line."""
    from gro_replay.report.diff.comparison import _config_notes
    from gro_replay.report.diff.inputs import interface_note

    def doc(replayed: str | None, cfg: dict | None) -> dict:
        rows = [{"interface": n, "replayed": n == replayed} for n in ("ifindex 2", "ifindex 5")]
        return {"input": {"interfaces": rows}, **({"config": cfg} if cfg is not None else {})}

    default, five = doc("ifindex 2", {"interface": None}), doc("ifindex 5", {"interface": "5"})
    assert interface_note(default, five) == (
        "interface replayed: ifindex 2 (by default) → ifindex 5 (--interface 5): other records of the capture, so "
        "a change between the documents may be theirs, not the kernel's",
        True,
    )
    assert interface_note(doc("ifindex 2", None), five)[0].startswith(
        "interface replayed: ifindex 2 → ifindex 5 ("
    )
    unnamed = {
        "input": {"interfaces": [{"interface": None, "replayed": True}]},
        "config": {"interface": None},
    }
    assert interface_note(unnamed, five) == (None, False)
    two = doc("ifindex 2", {"interface": "2"})
    assert interface_note(default, two) == (None, True)
    assert _config_notes(default, two) == []
    # where the documents do not say which interface each replayed, the option's change is said as recorded
    assert _config_notes(unnamed, two) == ['config interface: null → "2"']
