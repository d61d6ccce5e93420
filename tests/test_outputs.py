"""Outputs are all or nothing (gro_replay/outputs.py): written to a temporary file beside the target and renamed
into place (``os.replace``, rename(2): atomic within a file system) when the run succeeds, removed when it fails, so
a failed run leaves no half-written file and an earlier file at the path untouched.

The CLI tests run each command's file outputs into a failure (a capture that ends in a truncated record: exit 2;
an interrupt: exit 130) and into success.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import struct
import subprocess
import time

import click
import pytest
from click.testing import CliRunner
from conftest import CLI, FIX_SAMPLE, cli_env, in_a_session, without_engine

from gro_replay.capture.writer import PcapWriter
from gro_replay.cli import main
from gro_replay.outputs import OutputError, RunOutputs
from gro_replay.synth import Scenario, synth_frames


def _left(d) -> list[str]:
    return sorted(os.listdir(d))


def test_committed_on_success_with_nothing_else_left(tmp_path):
    with RunOutputs() as outs:
        f = outs.open_text(str(tmp_path / "t.txt"), "--trace")
        f.write("line\n")
        outs.write_text(str(tmp_path / "r.json"), "{}\n", "--json")
        assert not (tmp_path / "t.txt").exists()  # nothing at the path before the run ends
    assert (tmp_path / "t.txt").read_text() == "line\n" and (tmp_path / "r.json").read_text() == "{}\n"
    assert _left(tmp_path) == ["r.json", "t.txt"]


@pytest.mark.parametrize(
    "error",
    [
        click.ClickException("bad input"),
        OutputError("--json x: cannot write"),
        KeyboardInterrupt(),
        OSError(5, "EIO"),
    ],
)
def test_discarded_on_failure_and_the_old_file_untouched(tmp_path, error):
    old = tmp_path / "t.txt"
    old.write_text("earlier run\n")
    error_type = type(error)
    with pytest.raises(error_type), RunOutputs() as outs:
        outs.open_text(str(old), "--trace").write("half")
        outs.write_text(str(tmp_path / "new.json"), "{", "--json")
        raise error
    assert old.read_text() == "earlier run\n"
    assert _left(tmp_path) == ["t.txt"]


def test_an_earlier_file_is_removed_with_the_commit_only(tmp_path):
    """``remove``: an earlier run's regular file goes when the run commits, not before, and stays when the run
    fails; a symbolic link (not followed), a directory, a missing path and an input are left as they are."""
    stale, data = tmp_path / "stale.json", tmp_path / "in.pcap"
    stale.write_text("earlier\n")
    data.write_text("capture")
    (tmp_path / "dir").mkdir()
    os.symlink(data, tmp_path / "link.json")
    with pytest.raises(KeyboardInterrupt), RunOutputs() as outs:
        outs.remove(stale, "--out")
        raise KeyboardInterrupt
    assert stale.read_text() == "earlier\n"
    with RunOutputs(inputs=[data]) as outs:
        for name in ("stale.json", "dir", "link.json", "missing.json", "in.pcap"):
            outs.remove(tmp_path / name, "--out")
        assert stale.exists()  # until the commit
    assert _left(tmp_path) == ["dir", "in.pcap", "link.json"]
    assert data.read_text() == "capture"


def test_devices_and_fifos_are_written_directly(tmp_path):
    with RunOutputs() as outs:
        assert outs.temp_path(os.devnull, "--trace") == os.devnull
        outs.write_text(os.devnull, "x", "--trace")
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)  # still the device, never renamed over
    fifo = tmp_path / "p"
    os.mkfifo(fifo)
    with RunOutputs() as outs:
        assert outs.temp_path(fifo, "--trace") == str(fifo)


@pytest.mark.parametrize("option", ["--trace", "--json"])
@pytest.mark.parametrize("path", ["/dev/stdout", "/dev/fd/1"])
def test_dev_stdout_on_a_pipe_is_written_directly(option, path):
    # /dev/stdout is a link to /proc/self/fd/1, which names "pipe:[N]" on a pipe: no path reaches that name, so
    # the output is written through the path as given (newcomer's finding: "cannot write: No such file")
    r = subprocess.run(
        [*CLI, str(FIX_SAMPLE), option, path, "--format", "markdown"],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    if option == "--trace":  # the fix sample's 17 + 2 skbs at phys and 2 + 2 at the tunnel device (README)
        lines = [x for x in r.stdout.splitlines() if "net:netif_receive_skb" in x]
        assert len(lines) == 23 and lines[0].startswith(
            "pre-fix     0.000009: net:netif_receive_skb: dev=eth0 "
        )
    else:
        assert '"schema_version": 1' in r.stdout


def test_a_symlink_is_followed_and_kept(tmp_path):
    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    with RunOutputs() as outs:
        outs.write_text(str(link), "new", "--json")
    assert link.is_symlink() and target.read_text() == "new"


def test_modes_new_as_open_would_make_them_replaced_kept(tmp_path):
    mask = os.umask(0o022)
    try:
        with RunOutputs() as outs:
            outs.write_text(str(tmp_path / "new"), "x", "--json")
        assert stat.S_IMODE(os.stat(tmp_path / "new").st_mode) == 0o644  # 0666 & ~umask, as open(2) makes it
        (tmp_path / "kept").write_text("x")
        os.chmod(tmp_path / "kept", 0o600)
        with RunOutputs() as outs:
            outs.write_text(str(tmp_path / "kept"), "y", "--json")
        assert stat.S_IMODE(os.stat(tmp_path / "kept").st_mode) == 0o600
    finally:
        os.umask(mask)


def test_a_directory_made_by_a_failed_run_goes_again(tmp_path):
    with pytest.raises(KeyboardInterrupt), RunOutputs() as outs:
        outs.make_dir(tmp_path / "a", "--write-pcap")
        outs.temp_path(tmp_path / "a" / "k.pcapng", "--write-pcap")
        raise KeyboardInterrupt
    assert _left(tmp_path) == []
    (tmp_path / "mine").mkdir()
    with pytest.raises(KeyboardInterrupt), RunOutputs() as outs:
        outs.make_dir(tmp_path / "mine", "--write-pcap")
        raise KeyboardInterrupt
    assert _left(tmp_path) == ["mine"]  # it was there before


@pytest.mark.parametrize("what", ["--write-pcap", "--out"])
def test_an_output_directory_in_a_missing_directory_is_one_line(tmp_path, what):
    """A directory output is made in a directory that exists, as every output file is (mkdir, not mkdir -p):
    --write-pcap /nonexistent/dir/x made the whole tree and said it wrote there, while --json and --trace refuse a
    missing parent (newcomer's finding)."""
    with pytest.raises(OutputError) as e, RunOutputs() as outs:
        outs.make_dir(tmp_path / "missing" / "x", what)
    assert e.value.exit_code == 2 and what in e.value.message
    assert e.value.message.endswith("No such file or directory") and _left(tmp_path) == []


def test_an_unwritable_directory_is_a_one_line_error_naming_the_output(tmp_path):
    with pytest.raises(OutputError) as e, RunOutputs() as outs:
        outs.temp_path(tmp_path / "missing" / "t.txt", "--trace")
    assert e.value.exit_code == 2 and "--trace" in e.value.message and "missing" in e.value.message


# -- the commands' file outputs -------------------------------------------------------------------------------------
N = 200  # frames before the corrupt record: polls end and skbs are delivered (and traced) before the error


def _corrupt_at_the_end(path) -> None:
    """N frames of the synth flow, then a record whose caplen (0x7FFFFFFF) exceeds any snaplen: the reader's
    one-line error "corrupt record" (exit 2) after the N frames went through the replay."""
    frames = [f for _ts, f in synth_frames(Scenario(frames=N + 1))]
    with PcapWriter(path) as w:
        for i, f in enumerate(frames):
            w.write(1_000_000_000 + i * 1000, f)
    data = bytearray(path.read_bytes())
    last = len(data) - len(frames[-1]) - 16  # the last record's header
    struct.pack_into("<I", data, last + 8, 0x7FFFFFFF)
    path.write_bytes(bytes(data))


def _invoke(*args):
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert "Traceback" not in r.output, r.output
    return r


OUTPUTS = {
    "--trace": lambda d: ["--trace", d / "trace.txt"],
    "--write-pcap pcapng": lambda d: ["--write-pcap", d / "pcaps"],
    "--write-pcap pcap": lambda d: ["--write-pcap", d / "pcaps", "--pcap-format", "pcap"],
}


@pytest.mark.parametrize("name", list(OUTPUTS))
def test_a_replay_stopped_by_a_corrupt_record_leaves_no_output(tmp_path, name):
    cap = tmp_path / "corrupt.pcap"
    _corrupt_at_the_end(cap)
    out = tmp_path / "out"
    out.mkdir()
    r = _invoke(cap, *OUTPUTS[name](out), "-q")
    assert r.exit_code == 2 and "corrupt record" in r.stderr, r.output
    assert _left(out) == []  # no trace, no pcap, no directory the run made, no temporary file
    # the same outputs on the capture without the corrupt record: written (the failing run did start them)
    good = tmp_path / "good.pcap"
    data = cap.read_bytes()
    good.write_bytes(data[: len(data) - (len(next(synth_frames(Scenario(frames=1)))[1]) + 16)])
    r = _invoke(good, *OUTPUTS[name](out), "-q")
    assert r.exit_code == 0, r.output
    assert _left(out) == (["trace.txt"] if name == "--trace" else ["pcaps"])


def test_a_failed_run_keeps_the_earlier_files_at_its_paths(tmp_path):
    cap = tmp_path / "corrupt.pcap"
    _corrupt_at_the_end(cap)
    trace = tmp_path / "trace.txt"
    trace.write_text("an earlier run's trace\n")
    r = _invoke(cap, "--trace", trace, "-q")
    assert r.exit_code == 2
    assert trace.read_text() == "an earlier run's trace\n"
    assert _left(tmp_path) == ["corrupt.pcap", "trace.txt"]


def test_every_output_of_a_run_or_none(tmp_path):
    # --markdown into a missing directory fails after the replay, when the trace, the pcaps, the plot and the
    # JSON document are written: none of them stays (before: all four did, looking complete)
    pytest.importorskip("matplotlib")
    out = tmp_path / "out"
    out.mkdir()
    args = [
        "--trace",
        out / "t.txt",
        "--write-pcap",
        out / "p",
        "--plot",
        out / "s.svg",
        "--json",
        out / "r.json",
    ]
    r = _invoke(FIX_SAMPLE, *args, "--markdown", out / "missing" / "r.md", "-q")
    assert r.exit_code == 2 and "--markdown" in r.stderr and r.stderr.count("\n") == 1, r.output
    assert _left(out) == []
    r = _invoke(FIX_SAMPLE, *args, "--markdown", out / "r.md", "-q")
    assert r.exit_code == 0, r.output
    assert _left(out) == ["p", "r.json", "r.md", "s.svg", "t.txt"]
    assert sorted(os.listdir(out / "p")) == ["post-fix.pcapng", "pre-fix.pcapng"]
    # complete: the document --format json prints, and one trace line per delivered skb (17 + 2 pre-fix, 2 + 2
    # post-fix: the fix's scenario, sample_pcaps README)
    # (--write-pcap took the frame-by-frame path, the plain run the batch path: only the engine differs)
    written = json.loads((out / "r.json").read_text())
    assert written["engine"]["reasons"] == ["--write-pcap reads each skb's bytes"]
    assert without_engine(written) == without_engine(
        json.loads(_invoke(FIX_SAMPLE, "--format", "json", "-q").stdout)
    )
    assert len((out / "t.txt").read_text().splitlines()) == 17 + 2 + 2 + 2


def test_flow_matching_nothing_leaves_nothing(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    r = _invoke(FIX_SAMPLE, "--flow", "vni=4242", "--trace", out / "t.txt", "--write-pcap", out / "p", "-q")
    assert r.exit_code == 2 and "no flow matches" in r.stderr
    assert _left(out) == []


def _interrupt(args, stdin: bytes | None, wait_for, sig: int = signal.SIGINT) -> subprocess.CompletedProcess:
    """Run the CLI, wait until ``wait_for()`` holds (its output has started), then send it ``sig``."""
    proc = subprocess.Popen(
        [*CLI, *map(str, args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
        preexec_fn=in_a_session,
    )
    try:
        if stdin is not None:
            proc.stdin.write(stdin)
            proc.stdin.flush()
        deadline = time.monotonic() + 60
        while not wait_for() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert wait_for(), "the output never started"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _temps(d) -> list[str]:
    return [n for n in os.listdir(d) if n.endswith(".tmp")]


def test_an_interrupted_replay_leaves_no_output(tmp_path):
    # a pipe that stays open: the replay reads, delivers and writes the trace, then waits for more; SIGINT
    # ends it (exit 130) and the trace written so far goes
    frames = [f for _ts, f in synth_frames(Scenario(frames=2000))]
    cap = tmp_path / "c.pcap"
    with PcapWriter(cap) as w:
        for i, f in enumerate(frames):
            w.write(1_000_000_000 + i * 100_000, f)  # 100 µs apart: a poll per frame, delivered at once
    out = tmp_path / "out"
    out.mkdir()
    p = _interrupt(
        ["-", "--trace", out / "t.txt", "--write-pcap", out / "p", "--json", out / "r.json", "-q"],
        cap.read_bytes(),
        lambda: bool(_temps(out)) and any(os.path.getsize(out / n) for n in _temps(out)),
    )
    assert p.returncode == 130, p.stderr
    assert p.stderr.decode().strip().splitlines()[-1] == "gro-replay: interrupted"
    assert _left(out) == []


def test_an_interrupted_synth_leaves_no_capture(tmp_path):
    # the overlay-node mix is generated as it is written: SIGINT once 100 kB of it are on disk
    out = tmp_path / "big.pcap"
    p = _interrupt(
        ["synth", "--mix", "overlay-node", "--frames", "5000000", out],
        None,
        lambda: any(os.path.getsize(tmp_path / n) > 100_000 for n in _temps(tmp_path)),
    )
    assert p.returncode == 130, p.stderr
    assert _left(tmp_path) == []


def test_synth_writes_its_capture_whole(tmp_path):
    out = tmp_path / "s.pcap"
    r = _invoke("synth", "--frames", "50", out)
    assert r.exit_code == 0 and _left(tmp_path) == ["s.pcap"]
    assert json.loads(_invoke(out, "--format", "json", "-q").stdout)["input"]["frames_read"] == 50


def test_baseline_update_replaces_the_baseline_whole(tmp_path):
    doc = _invoke(FIX_SAMPLE, "--format", "json", "-q").stdout
    cur = tmp_path / "cur.json"
    cur.write_text(doc)
    base = tmp_path / "base.json"
    base.write_text(_invoke(FIX_SAMPLE, "--format", "json", "-q", "--hz", "1000").stdout)
    r = _invoke("diff", base, cur, "--baseline-update")
    assert r.exit_code == 0, r.output
    assert base.read_text() == doc and _left(tmp_path) == ["base.json", "cur.json"]
    r = _invoke("diff", tmp_path / "missing" / "base.json", cur, "--baseline-update")
    assert r.exit_code == 2 and "--baseline-update" in r.stderr
    assert _left(tmp_path) == ["base.json", "cur.json"]


def test_batch_interrupted_leaves_no_out_directory(tmp_path, monkeypatch):
    import gro_replay.batch

    def interrupted(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(gro_replay.batch, "run_batch", interrupted)
    r = CliRunner().invoke(main, ["batch", str(FIX_SAMPLE), "--out", str(tmp_path / "out" / "docs")])
    assert r.exit_code != 0
    assert _left(tmp_path) == []  # both directories the run made are gone


def test_batch_document_that_cannot_be_written_takes_the_others_along(tmp_path):
    # batch.json is a directory: the capture's own document is not left without the combined one
    pytest.importorskip("distributed")
    out = tmp_path / "out"
    (out / "batch.json").mkdir(parents=True)
    r = CliRunner().invoke(
        main, ["batch", str(FIX_SAMPLE), "--jobs", "1", "--out", str(out), "--format", "json"]
    )
    assert r.exit_code == 2 and "batch.json" in r.stderr and "Is a directory" in r.stderr, r.output
    assert _left(out) == ["batch.json"]


@pytest.mark.parametrize(("sig", "line"), [(signal.SIGTERM, "terminated"), (signal.SIGHUP, "hangup")])
def test_a_terminated_synth_leaves_no_capture(tmp_path, sig, line):
    # SIGTERM (kill, timeout, a stopped CI job) or SIGHUP (the terminal or ssh session closed): the command unwinds
    # like an interrupt, exit 128 + the signal's number (143, 129)
    out = tmp_path / "big.pcap"
    p = _interrupt(
        ["synth", "--mix", "overlay-node", "--frames", "5000000", out],
        None,
        lambda: any(os.path.getsize(tmp_path / n) > 100_000 for n in _temps(tmp_path)),
        sig,
    )
    assert p.returncode == 128 + sig, p.stderr
    assert p.stderr.decode().strip().splitlines()[-1] == f"gro-replay: {line}"
    assert _left(tmp_path) == []


def test_an_ignored_sighup_stays_ignored(tmp_path):
    """Under nohup (SIGHUP ignored when the command starts, inherited through exec) a hangup during the run does not
    stop it: the capture is written whole, exit 0."""
    out = tmp_path / "s.pcap"
    proc = subprocess.Popen(
        [*CLI, "synth", "--mix", "overlay-node", "--frames", "300000", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),
    )
    try:
        deadline = time.monotonic() + 60
        while not any(os.path.getsize(tmp_path / n) > 100_000 for n in _temps(tmp_path)):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        proc.send_signal(signal.SIGHUP)
        _out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert out.stat().st_size > 100_000 and _left(tmp_path) == ["s.pcap"]


# -- an output never replaces the input or another output of the run (breaker's reproducers, 2026-12-01) ----------
FILE_OPTIONS = ["--trace", "--json", "--markdown", "--plot"]


@pytest.mark.parametrize("option", FILE_OPTIONS)
def test_an_output_that_is_the_capture_is_refused_and_the_capture_kept(tmp_path, option):
    cap = tmp_path / "in.pcap"
    cap.write_bytes(FIX_SAMPLE.read_bytes())
    link = tmp_path / "link.out"
    link.symlink_to(cap)
    for out in (cap, link):  # the path itself, and through a symbolic link
        r = _invoke(cap, option, out, "-q")
        assert r.exit_code == 2 and r.stderr.count("\n") == 1, r.output
        assert "is the input" in r.stderr and option in r.stderr, r.output
    r = _invoke(link, option, cap, "-q")  # the capture named through the link, the output by its own path
    assert r.exit_code == 2 and "is the input" in r.stderr, r.output
    assert cap.read_bytes() == FIX_SAMPLE.read_bytes()
    assert sorted(os.listdir(tmp_path)) == ["in.pcap", "link.out"]  # no temporary file either


@pytest.mark.parametrize("first", FILE_OPTIONS)
@pytest.mark.parametrize("second", FILE_OPTIONS)
def test_two_outputs_on_one_path_are_refused_before_the_replay(tmp_path, first, second):
    if first == second:
        return
    out = tmp_path / "same.out"
    r = _invoke(FIX_SAMPLE, first, out, second, out, "-q")
    assert r.exit_code == 2 and r.stderr.count("\n") == 1, r.output
    assert "writes the same file" in r.stderr and first in r.stderr and second in r.stderr, r.output
    assert os.listdir(tmp_path) == []


def test_run_outputs_refuse_an_input_by_inode_and_a_second_output(tmp_path):
    src = tmp_path / "capture.pcap"
    src.write_bytes(b"x")
    hard = tmp_path / "hard.pcap"
    os.link(src, hard)
    with pytest.raises(OutputError, match="is the input"), RunOutputs(inputs=[src]) as outs:
        outs.write_text(str(hard), "doc", "--json")  # another name of the same file
    with pytest.raises(OutputError, match="writes the same file"), RunOutputs(inputs=["-"]) as outs:
        outs.write_text(str(tmp_path / "a"), "1", "--json")
        outs.write_text(str(tmp_path / "a"), "2", "--markdown")
    assert sorted(os.listdir(tmp_path)) == ["capture.pcap", "hard.pcap"] and src.read_bytes() == b"x"
