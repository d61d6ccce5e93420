"""Exit codes and output errors of the console entry (``gro_replay.cli.entry``), as README "Exit codes" says.

* standard output closed by its reader (``| head -1``): nothing printed, exit 141 (128 + SIGPIPE, what a shell
  reports for cat or grep killed by SIGPIPE);
* standard output cannot be written (``> /dev/full``): one line naming standard output, exit 2;
* ``--trace FILE`` / ``--write-pcap DIR`` / ``--plot FILE`` that cannot be written: one line naming that option and
  path (never the capture), exit 2;
* SIGINT: "gro-replay: interrupted", exit 130 (128 + SIGINT), no traceback;
* a numeric option that cannot be used (inf, nan, negative, huge, other scripts' digits): click's one-line
  usage error, exit 2.

Child processes run the entry exactly as the console script does; write errors are made real with a closed pipe,
/dev/full and RLIMIT_FSIZE (Python ignores SIGXFSZ, so a write past the limit fails with EFBIG).
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import time

import pytest
from conftest import CLI, FIX_SAMPLE, cli_env

SAMPLE = str(FIX_SAMPLE)


def _run(args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*CLI, *args], capture_output=kw.pop("capture", True), env=cli_env(), timeout=120, **kw
    )


def _closed_pipe_run(args) -> subprocess.CompletedProcess:
    r, w = os.pipe()
    os.close(r)  # the reader is gone before the first write: every write fails with EPIPE
    try:
        return subprocess.run([*CLI, *args], stdout=w, stderr=subprocess.PIPE, env=cli_env(), timeout=120)
    finally:
        os.close(w)


@pytest.mark.parametrize(
    "args",
    [
        [SAMPLE],
        [SAMPLE, "--format", "json"],
        [SAMPLE, "--format", "markdown"],
        [SAMPLE, "--trace", "-"],
        ["explain", SAMPLE],
        ["explain", SAMPLE, "--format", "json"],
        ["schema", "replay"],
        ["kernels"],
        ["kernels", "--format", "json"],
        ["diff", SAMPLE + ".json", SAMPLE + ".json"],
        ["--help"],
        ["--version"],
    ],
    ids=[
        "table", "json", "markdown", "trace-stdout", "explain", "explain-json", "schema", "kernels",
        "kernels-json", "diff", "help", "version",
    ],
)  # fmt: skip
def test_closed_pipe_ends_quietly_with_141(args, tmp_path) -> None:
    if args[0] == "diff":  # a document of the sample as both BASELINE and CURRENT
        doc = tmp_path / "doc.json"
        assert (
            _run([SAMPLE, "--json", str(doc), "-q"], capture=False, stdout=subprocess.DEVNULL).returncode == 0
        )
        args = ["diff", str(doc), str(doc)]
    p = _closed_pipe_run(args)
    assert p.returncode == 141
    assert p.stderr == b""


@pytest.fixture(scope="module")
def big_docs(tmp_path_factory) -> dict:
    """A capture whose JSON document (about 0.7 MB) is far larger than a pipe's buffer (64 KiB), and two
    documents of it (kernels 5.4 and 6.1) for diff."""
    d = tmp_path_factory.mktemp("big")
    cap = d / "big.pcap"
    assert _run(["synth", "--flows", "300", "--frames", "2", str(cap)]).returncode == 0
    docs = {}
    for k in ("5.4", "6.1"):
        docs[k] = d / f"{k}.json"
        assert (
            _run([str(cap), "--kernel", k, "--json", str(docs[k]), "-q", "--format", "json"]).returncode == 0
        )
    return {"CAP": str(cap), "5.4": str(docs["5.4"]), "6.1": str(docs["6.1"])}


def _early_close_run(args) -> tuple[int, bytes, bytes]:
    """Run the entry with a reader that takes 100 bytes of standard output, then closes its end (``| head -c 100``);
    returns (exit code, the bytes read, stderr)."""
    p = subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=cli_env())
    try:
        got = p.stdout.read(100)
        p.stdout.close()
        err = p.stderr.read()
        return p.wait(timeout=120), got, err
    finally:
        if p.poll() is None:
            p.kill()


@pytest.mark.parametrize(
    "args",
    [
        ["CAP", "--format", "json"],
        ["CAP", "--json", "-"],
        ["CAP", "--trace", "-"],
        ["explain", "CAP", "--format", "json"],
        ["explain", "CAP", "--limit", "0"],  # every flow: 0.6 MB (20 flows, the default, fit the pipe)
        ["diff", "5.4", "6.1", "--format", "json"],
    ],
    ids=["json", "json-dash", "trace-stdout", "explain-json", "explain", "diff-json"],
)
def test_reader_closing_mid_document_ends_quietly_with_141(big_docs, args) -> None:
    """CPython's BufferedWriter loses the EPIPE that follows a partial write of a write larger than its buffer (the
    whole JSON document in one click.echo): before the fix, ``--format json | head -1`` exited 0 with the
    document cut at 64 KiB. Now every writer of standard output ends with 141 and says nothing. Each output here is
    far larger than the pipe's buffer, so the reader always goes away before the last write (the table and
    markdown of this capture fit in the buffer: test_closed_pipe_ends_quietly_with_141 covers them)."""
    code, got, err = _early_close_run([big_docs.get(a, a) for a in args])
    assert code == 141
    assert err == b""
    assert len(got) == 100  # the reader did get the start of the output before going away


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
@pytest.mark.parametrize(
    "args",
    [
        [SAMPLE],
        [SAMPLE, "--format", "json"],
        [SAMPLE, "--format", "markdown"],
        [SAMPLE, "--trace", "-", "-q"],
        [SAMPLE, "--json", "-"],
        ["explain", SAMPLE],
        ["kernels"],
        ["schema", "replay"],
        ["--help"],
    ],
    ids=["table", "json", "markdown", "trace", "json-dash", "explain", "kernels", "schema", "help"],
)
def test_full_stdout_is_one_line_and_exit_2(args) -> None:
    with open("/dev/full", "wb") as full:
        p = subprocess.run([*CLI, *args], stdout=full, stderr=subprocess.PIPE, env=cli_env(), timeout=120)
    assert p.returncode == 2
    err = p.stderr.decode()
    # the wording of every output that cannot be written (tests/test_output_errors.py: --json /dev/full …)
    assert err == "Error: standard output: cannot write: No space left on device\n"


def _fsize_limit(nbytes: int):
    def pre() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, nbytes))

    return pre


def test_trace_write_error_names_the_trace_file(tmp_path) -> None:
    out = tmp_path / "trace.txt"
    p = _run([SAMPLE, "--trace", str(out), "-q", "--format", "json"], preexec_fn=_fsize_limit(200))
    assert p.returncode == 2
    (line,) = p.stderr.decode().splitlines()
    assert line.startswith(f"Error: --trace {out}") and "File too large" in line
    assert SAMPLE not in line


def test_write_pcap_error_names_the_output(tmp_path) -> None:
    d = tmp_path / "pcaps"
    p = _run([SAMPLE, "--write-pcap", str(d), "-q", "--format", "json"], preexec_fn=_fsize_limit(3000))
    assert p.returncode == 2
    (line,) = p.stderr.decode().splitlines()
    assert line.startswith(f"Error: --write-pcap {d}") and "File too large" in line
    assert SAMPLE not in line


def test_plot_error_names_the_output(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    target = tmp_path / "missing-dir" / "x.svg"
    p = _run([SAMPLE, "--plot", str(target), "-q", "--format", "json"])
    assert p.returncode == 2
    (line,) = p.stderr.decode().splitlines()
    assert line.startswith(f"Error: --plot {target}")


def test_synth_output_error_names_the_output(tmp_path) -> None:
    out = tmp_path / "x.pcap"
    p = _run(["synth", "--frames", "64", str(out)], preexec_fn=_fsize_limit(1000))
    assert p.returncode == 2
    (line,) = p.stderr.decode().splitlines()
    assert str(out) in line and "File too large" in line


def test_sigint_exits_130_without_traceback() -> None:
    """``gro-replay -`` on a pipe that stays open waits for data; SIGINT then ends it."""
    proc = subprocess.Popen(
        [*CLI, "-", "--format", "json"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
    )
    try:
        proc.stdin.write(FIX_SAMPLE.read_bytes()[:100])  # a header and part of a record: it reads on
        proc.stdin.flush()
        time.sleep(1.5)  # the interpreter starts and blocks in read(2)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    assert err.decode().strip().splitlines()[-1] == "gro-replay: interrupted"
    assert b"Traceback" not in err


# -- numeric options ------------------------------------------------------------------------------------------
BAD_NUMBERS = ["inf", "nan", "-1", "1e400", "9" * 400, "\u0661", "1_0", ""]

NUMERIC_OPTIONS = [
    # (command prefix, option, values that must be refused besides BAD_NUMBERS' unusable ones)
    ([SAMPLE], "--gro-flush-timeout", [str(1 << 64)]),
    ([SAMPLE], "--napi-defer-hard-irqs", [str(1 << 31)]),
    ([SAMPLE], "--rx-queues", ["0", "129"]),
    ([SAMPLE], "--mtu", ["67", "65536"]),
    ([SAMPLE], "--vxlan-port", ["0", "65536"]),
    ([SAMPLE], "--geneve-port", ["0", "65536"]),
    ([SAMPLE], "--resegment", ["7", "65536"]),  # 48 (TCP_MIN_SND_MSS) less at most 40 TCP option bytes
    (["synth", "OUT"], "--gap-us", ["1e10"]),
    (["synth", "OUT"], "--pause-us", ["1e10"]),
    (["synth", "OUT"], "--mss", ["0", "65536"]),
    (["synth", "OUT"], "--mtu", ["65536"]),
    # inner TCP source ports 40000 + k must fit 16 bits; 27232: found by `make fuzz` (struct.error, exit 70)
    (["synth", "OUT"], "--flows", ["0", "25537", "27232"]),
    (["synth", "OUT"], "--frames", ["0", str(10**9 + 1)]),
    (["synth", "OUT"], "--pause-every", [str(10**9 + 1)]),
    (["synth", "OUT"], "--last-payload", ["65536"]),
    (["synth", "OUT"], "--port", ["0"]),
    (["synth", "OUT"], "--geneve-opt-bytes", ["256"]),
    (["synth", "OUT"], "--vni", [str(1 << 24)]),
    (["synth", "OUT"], "--inner-vlan", ["4096"]),  # a 12-bit VLAN ID
    (["synth", "OUT"], "--start-ns", [str(1 << 62)]),
    (["synth", "OUT"], "--connections", ["251"]),
    (["synth", "OUT"], "--seed", [str(1 << 64)]),
    (["diff", "A", "B"], "--max-regression", ["1e7"]),
    (["explain", SAMPLE], "--limit", [str(10**9 + 1)]),
    (["batch", SAMPLE], "--jobs", ["0", "1025"]),
]


@pytest.mark.parametrize(
    "prefix,option,extra", NUMERIC_OPTIONS, ids=[o[1] + "-" + o[0][0] for o in NUMERIC_OPTIONS]
)
def test_numeric_options_refuse_what_they_cannot_use(runner, tmp_path, prefix, option, extra) -> None:
    from gro_replay.cli import main

    args = [str(tmp_path / "out.pcap") if a == "OUT" else a for a in prefix]
    if option == "--max-regression":
        args = [str(FIX_SAMPLE), str(FIX_SAMPLE)]
        args = ["diff", *args]
    for value in BAD_NUMBERS + extra:
        if option == "--resegment" and value in ("", "-1"):
            continue  # "" and "-1": covered by parse_resegment's own test (click takes "-1" as an option name)
        r = runner.invoke(main, [*args, option, value])
        assert r.exit_code == 2, (option, value, r.output, r.exception)
        assert "Traceback" not in (r.stderr or "")
    assert not (tmp_path / "out.pcap").exists()
