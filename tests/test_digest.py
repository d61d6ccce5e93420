"""The input's digest (capture/digest.py): BLAKE3 by default (JSON ``input.blake3``), SHA-256 with ``--digest
sha256`` (``input.sha256``, what documents before BLAKE3 record), in every command that replays, and diff comparing
documents by the digest both record.

Values: the BLAKE3 test vector of the empty input (the BLAKE3 team's ``test_vectors.json``, input_len 0, ``hash``)
and the SHA-256 of "abc" (FIPS 180-2, appendix B.1); a document's digest against ``b3sum`` (Debian package b3sum,
``make deps``) and ``sha256sum`` (coreutils), which hash the file themselves.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from click.testing import CliRunner
from conftest import CLI, FIX_SAMPLE, VXLAN4_SAMPLE, cli_env

from gro_replay.capture.digest import DIGESTS, new_hash, recorded
from gro_replay.capture.reader import open_capture
from gro_replay.cli import main

BLAKE3_EMPTY = "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
SHA256_ABC = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def _doc(*args: str) -> dict:
    p = subprocess.run([*CLI, *args, "--format", "json", "-q"], capture_output=True, env=cli_env())
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def main_run(args: list[str]):
    return CliRunner().invoke(main, args, catch_exceptions=False)


def _tool_hex(tool: str, path) -> str:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} not installed (make deps installs it)")
    return subprocess.run([tool, str(path)], capture_output=True, text=True, check=True).stdout.split()[0]


def test_known_answers():
    """Each algorithm's published test vector: BLAKE3("") and SHA-256("abc")."""
    h = new_hash("blake3")
    h.update(b"")
    assert h.hexdigest() == BLAKE3_EMPTY
    h = new_hash("sha256")
    h.update(b"abc")
    assert h.hexdigest() == SHA256_ABC
    with pytest.raises(ValueError, match="unknown digest 'md5'; choose from blake3, sha256"):
        new_hash("md5")


def test_document_records_the_default_blake3_as_b3sum_prints_it():
    """A default replay records BLAKE3 of the file's bytes (``b3sum FILE``) and null for SHA-256."""
    inp = _doc(str(VXLAN4_SAMPLE))["input"]
    assert inp["blake3"] == _tool_hex("b3sum", VXLAN4_SAMPLE)
    assert inp["sha256"] is None


@pytest.mark.parametrize("command", [[], ["explain"]])
def test_digest_sha256_records_what_sha256sum_prints(command):
    """``--digest sha256`` (replay and explain): SHA-256 as ``sha256sum FILE``, BLAKE3 null."""
    inp = _doc(*command, str(VXLAN4_SAMPLE), "--digest", "sha256")["input"]
    assert inp == {**inp, "sha256": _tool_hex("sha256sum", VXLAN4_SAMPLE), "blake3": None}


def test_piped_capture_has_the_files_digest_in_both_algorithms():
    """Through a pipe (``-``) the digest is of the bytes read, the file's, under either algorithm."""
    for algorithm, tool in (("blake3", "b3sum"), ("sha256", "sha256sum")):
        p = subprocess.run(
            [*CLI, "-", "--format", "json", "-q", "--digest", algorithm],
            input=FIX_SAMPLE.read_bytes(),
            capture_output=True,
            env=cli_env(),
        )
        assert p.returncode == 0, p.stderr
        assert recorded(json.loads(p.stdout)["input"]) == {algorithm: _tool_hex(tool, FIX_SAMPLE)}


def test_batch_takes_the_digest(tmp_path):
    """``gro-replay batch --digest sha256``: each capture's document records SHA-256."""
    r = subprocess.run(
        [*CLI, "batch", str(FIX_SAMPLE), "--out", str(tmp_path / "out"), "--digest", "sha256", "-q"],
        capture_output=True,
        env=cli_env(),
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "out" / f"{FIX_SAMPLE.stem}.json").read_text())
    assert recorded(doc["input"]) == {"sha256": _tool_hex("sha256sum", FIX_SAMPLE)}


def test_reader_digest_options():
    """``open_capture``'s ``digest``: each algorithm, or None (no hash: ``hexdigest`` refuses)."""
    for algorithm in DIGESTS:
        with open_capture(FIX_SAMPLE, digest=algorithm) as cap:
            frames = sum(1 for _ in cap)
            assert (frames, cap.digest_algorithm) == (17, algorithm)
            want = new_hash(algorithm)
            want.update(FIX_SAMPLE.read_bytes())
            assert cap.hexdigest() == want.hexdigest()
    with open_capture(FIX_SAMPLE, digest=None) as cap:
        assert cap.digest_algorithm is None
        with pytest.raises(ValueError, match="without a digest"):
            cap.hexdigest()


def test_diff_compares_by_the_digest_both_record(tmp_path):
    """diff: two documents of one capture under SHA-256 are one input; a SHA-256 baseline (an older document) and
    a BLAKE3 current one share no digest: refused as not known to be the same, with how to make them comparable;
    ``--allow-different-input`` compares them with a note."""
    sha_doc, b3_doc, sha_doc2 = tmp_path / "sha.json", tmp_path / "b3.json", tmp_path / "sha2.json"
    sha_doc.write_text(json.dumps(_doc(str(FIX_SAMPLE), "--digest", "sha256")))
    sha_doc2.write_text(json.dumps(_doc(str(FIX_SAMPLE), "--digest", "sha256")))
    b3_doc.write_text(json.dumps(_doc(str(FIX_SAMPLE))))
    sha = _tool_hex("sha256sum", FIX_SAMPLE)
    b3 = json.loads(b3_doc.read_text())["input"]["blake3"]
    r = main_run(["diff", str(sha_doc), str(sha_doc2)])
    assert r.exit_code == 0 and r.stdout.splitlines()[0] == f"input: {FIX_SAMPLE} (sha256 {sha[:12]})"
    r = main_run(["diff", str(sha_doc), str(b3_doc)])
    assert r.exit_code == 2
    assert r.stderr == (
        f"Error: inputs not known to be the same: BASELINE replayed {FIX_SAMPLE} (sha256 {sha[:12]}), CURRENT "
        f"replayed {FIX_SAMPLE} (blake3 {b3[:12]}); if both are of one capture, replay it with --digest sha256 for the "
        "current document, or pass --allow-different-input to compare anyway\n"
    )
    r = main_run(["diff", str(sha_doc), str(b3_doc), "--allow-different-input", "--format", "json"])
    assert r.exit_code == 0
    assert (
        f"inputs not known to be the same: {FIX_SAMPLE} (sha256 {sha[:12]}) → {FIX_SAMPLE} (blake3 {b3[:12]}) "
        in (" ".join(json.loads(r.stdout)["notes"]))
    )


def test_input_line_names_the_digest_both_documents_share(tmp_path):
    """A document that records both digests beside one that records BLAKE3 only: one input by BLAKE3, and the input
    line names that digest alone, not the other, which nothing compared (breaker36's finding)."""
    doc = _doc(str(FIX_SAMPLE))
    sha = _tool_hex("sha256sum", FIX_SAMPLE)
    both, b3 = tmp_path / "both.json", tmp_path / "b3.json"
    both.write_text(json.dumps({**doc, "input": {**doc["input"], "sha256": "0" * 64}}))
    b3.write_text(json.dumps(doc))
    r = main_run(["diff", str(both), str(b3)])
    assert r.exit_code == 0
    assert r.stdout.splitlines()[0] == f"input: {FIX_SAMPLE} (blake3 {doc['input']['blake3'][:12]})"
    both.write_text(json.dumps({**doc, "input": {**doc["input"], "sha256": sha}}))
    r = main_run(["diff", str(both), str(both)])  # both digests shared: the first of DIGESTS names the input
    assert r.stdout.splitlines()[0] == f"input: {FIX_SAMPLE} (blake3 {doc['input']['blake3'][:12]})"
