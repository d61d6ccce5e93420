"""The published JSON Schemas (``gro-replay schema NAME``, report/schema/*.json) and the documents the commands make.

Every document a command prints or writes in the test suite is validated (tests/conftest.py sets
``GRO_REPLAY_CHECK_SCHEMA`` and wraps the document builders); this module adds the schemas' own validity, the
``schema`` command, and a sweep of each document kind over the samples, the shared captures and option sets.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import FIX_SAMPLE, GENEVE_SAMPLE, VXLAN4_SAMPLE, shared_capture_paths
from jsonschema import Draft202012Validator

from gro_replay.cli import main
from gro_replay.report import schema as S
from gro_replay.report.stats import SCHEMA_VERSION


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.mark.parametrize("name", S.NAMES)
def test_schema_command_prints_a_valid_2020_12_schema(name):
    r = run("schema", name)
    assert r.exit_code == 0, r.output
    schema = json.loads(r.stdout)
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert r.stdout == S.bundled(name)
    assert {k: v for k, v in schema.items() if k != "$defs"} == {
        k: v for k, v in S.load(name).items() if k != "$defs"
    }


def test_printed_schemas_stand_alone(tmp_path):
    """``gro-replay schema NAME`` is enough for any 2020-12 validator: no registry, the replay schema the explain,
    batch and kernel-backend schemas refer to by URN is embedded (a newcomer's plain jsonschema validation stopped
    at ``Unresolvable: urn:gro-replay:schema:replay#/$defs/input``). A document off the referenced part is caught."""
    r = run("explain", FIX_SAMPLE, "--format", "json", "-q")
    doc = json.loads(r.stdout)
    v = Draft202012Validator(json.loads(run("schema", "explain").stdout))  # no registry
    assert list(v.iter_errors(doc)) == []
    doc["input"]["frames_read"] = "many"  # a key the explain schema takes from the replay schema's $defs
    assert any("frames_read" in "/".join(map(str, e.absolute_path)) for e in v.iter_errors(doc))
    for name in S.NAMES:
        printed = run("schema", name).stdout
        assert (
            "urn:gro-replay:schema:replay#" not in printed
            or '"$id": "urn:gro-replay:schema:replay"' in printed
        )


def test_schema_command_refuses_unknown_name():
    r = run("schema", "nope")
    assert r.exit_code == 2 and "nope" in r.stderr


def test_schema_version_constant_matches_the_code():
    for name in S.NAMES:
        assert S.load(name)["properties"]["schema_version"] == {"const": SCHEMA_VERSION}


def test_schema_files_are_package_data():
    # the wheel ships them: pyproject's package-data names the folder's *.json, and jsonschema is a dependency
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    assert '[tool.setuptools.package-data]\n"gro_replay.report.schema" = ["*.json"]' in text
    assert '"jsonschema>=' in text.split("[project.optional-dependencies]")[0]


OPTION_SETS = [
    [],
    ["--no-fix"],
    ["--kernel", "6.18"],
    ["--kernel", "5.11", "--kernel", "5.12", "--kernel", "6.18"],
    ["--rx-csum", "none", "--poll", "gap:5", "--hz", "1000"],
    ["--rx-queues", "4", "--resegment", "off"],
    ["--gro-flush-timeout", "20000", "--napi-defer-hard-irqs", "2"],
]


@pytest.mark.parametrize("opts", OPTION_SETS, ids=lambda o: " ".join(o) or "default")
@pytest.mark.parametrize("capture", [FIX_SAMPLE, GENEVE_SAMPLE, VXLAN4_SAMPLE], ids=lambda p: p.name)
def test_replay_documents_validate(capture, opts):
    r = run(capture, *opts, "--format", "json", "-q")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    S.check(doc, "replay")
    S.check(doc, "replay#/$defs/comparable")  # what diff reads is part of what replay writes


def test_shared_capture_documents_validate(shared_captures):
    for p in shared_capture_paths()[:40]:
        r = run(p, "--format", "json", "-q")
        if r.exit_code == 2:  # an unreadable capture: one line, no document
            continue
        assert r.exit_code == 0, (p, r.output)
        S.check(json.loads(r.stdout), "replay")


@pytest.mark.parametrize("capture", [FIX_SAMPLE, VXLAN4_SAMPLE], ids=lambda p: p.name)
def test_explain_and_diff_documents_validate(tmp_path, capture):
    r = run("explain", capture, "--format", "json", "-q")
    assert r.exit_code == 0, r.output
    S.check(json.loads(r.stdout), "explain")
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(run(capture, "--fix", "--format", "json", "-q").stdout)
    b.write_text(run(capture, "--no-fix", "--format", "json", "-q").stdout)
    r = run("diff", a, b, "--format", "json")
    assert r.exit_code in (0, 1), r.output
    S.check(json.loads(r.stdout), "diff")


def test_a_document_off_its_schema_is_caught():
    r = run(FIX_SAMPLE, "--format", "json", "-q")
    doc = json.loads(r.stdout)
    doc["kernels"][0]["stages"]["phys"]["skbs_delivered"] = 1.5
    with pytest.raises(S.SchemaViolation) as e:
        S.check(doc)
    assert e.value.pointer == "/kernels/0/stages/phys/skbs_delivered"
    doc = json.loads(r.stdout)
    del doc["input"]["sha256"]
    with pytest.raises(S.SchemaViolation, match="'sha256' is a required property"):
        S.check(doc)
    # a document from before BLAKE3 (newcomer32's finding: the schema refused them under the same version)
    doc = json.loads(r.stdout)
    del doc["input"]["blake3"]
    S.check(doc)


def test_added_keys_are_allowed():
    # the document contract: keys are only ever added
    doc = json.loads(run(FIX_SAMPLE, "--format", "json", "-q").stdout)
    doc["notes"] = ["a later version's note"]
    doc["kernels"][0]["stages"]["tunnel"]["new_counter"] = 3
    doc["config"]["new_knob"] = {"x": 1}
    S.check(doc)
