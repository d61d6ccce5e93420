"""Every way of ending keeps its exit code when standard error (or standard output) is a closed pipe or a full
device (README "Exit codes"; cli/entry.py ``_LossyWrites``).

``gro-replay --bogus 2>&1 | head -0`` exited 1: the one-line usage error was written into a pipe whose reader had
gone, and click's ``Command.main`` turns that EPIPE into exit code 1. The error's message cannot reach anyone then,
but its code still can: 2 for usage and input errors, 1 for a failed check, 130 / 143 after SIGINT / SIGTERM, 0 for
success (standard output's own closed pipe stays 141: the report could not be delivered).

Child processes run the entry as the console script does; "closed" is a pipe whose read end is closed before the
child starts, so every write fails with EPIPE (Python ignores SIGPIPE).
"""

from __future__ import annotations

import fcntl
import os
import signal
import struct
import subprocess
import termios
import time

import pytest
from conftest import CLI, FIX_SAMPLE, cli_env

SAMPLE = str(FIX_SAMPLE)


def _closed_pipe() -> int:
    r, w = os.pipe()
    os.close(r)
    return w


def _run(args: list[str], stdout, stderr) -> int:
    closed = []
    streams = {}
    for name, how in (("stdout", stdout), ("stderr", stderr)):
        if how == "closed":
            closed.append(_closed_pipe())
            streams[name] = closed[-1]
        elif how == "full":
            streams[name] = open("/dev/full", "wb")  # noqa: SIM115 - closed below
            closed.append(streams[name])
        else:
            streams[name] = subprocess.DEVNULL
    try:
        return subprocess.run(
            [*CLI, *args], stdin=subprocess.DEVNULL, env=cli_env(), timeout=120, **streams
        ).returncode
    finally:
        for c in closed:
            c.close() if hasattr(c, "close") else os.close(c)


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> tuple[str, str]:
    """The fix sample's post-fix and pre-fix documents: diff of the first against the second is a regression
    (docs/ci.md "diff in full": largest loss 88.2%, exit 1)."""
    d = tmp_path_factory.mktemp("docs")
    out = []
    for flag in ("--fix", "--no-fix"):
        path = str(d / f"{flag.strip('-')}.json")
        subprocess.run([*CLI, SAMPLE, flag, "-q", "--format", "json", "--json", path], env=cli_env(), check=True,
                       stdout=subprocess.DEVNULL, timeout=120)  # fmt: skip
        out.append(path)
    return out[0], out[1]


CASES = [
    # (args, exit code, writes standard output on success)
    (["--bogus"], 2, False),
    ([SAMPLE, "--bogus"], 2, False),
    (["explain", SAMPLE, "--rx-csum", "maybe"], 2, False),
    (["synth"], 2, False),
    (["/nonexistent/capture.pcap"], 2, False),
    ([SAMPLE, "--json", SAMPLE + "/x.json"], 2, False),
    (["schema", "nope"], 2, False),
    ([SAMPLE, "--flow", "10.9.9.9"], 2, False),  # no flow matches: exit 2 after the replay
    (["kernels", "--kernel", "9.9"], 2, False),
    ([SAMPLE], 0, True),
    (["kernels"], 0, True),
]
IDS = ["bogus", "replay-bogus", "bad-choice", "missing-arg", "no-capture", "bad-output", "schema", "no-flow",
       "bad-kernel", "replay-ok", "kernels-ok"]  # fmt: skip


@pytest.mark.parametrize(("args", "code", "prints"), CASES, ids=IDS)
def test_exit_code_survives_a_closed_stderr(args, code, prints) -> None:
    assert _run(args, "devnull", "closed") == code
    # standard output closed too: a report that cannot be delivered is 141; an error keeps its code
    assert _run(args, "closed", "closed") == (141 if prints else code)
    assert _run(args, "closed", "devnull") == (141 if prints else code)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
@pytest.mark.parametrize(("args", "code", "prints"), CASES[:3], ids=IDS[:3])
def test_exit_code_survives_a_full_stderr(args, code, prints) -> None:
    assert _run(args, "devnull", "full") == code


def test_failed_check_keeps_exit_1_with_stderr_closed(docs) -> None:
    post, pre = docs
    assert _run(["diff", post, pre], "devnull", "devnull") == 1
    assert _run(["diff", post, pre], "devnull", "closed") == 1
    assert _run(["diff", post, pre, "--format", "json"], "devnull", "closed") == 1


def _unread(fd: int) -> int:
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]


@pytest.mark.parametrize(
    ("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"]
)
def test_signal_exit_code_survives_a_closed_stderr(sig, code) -> None:
    """``gro-replay -`` on a pipe that stays open: once it has read what was written (the pipe is empty again,
    FIONREAD), its handlers are installed; the signal then ends it with 128 + the signal."""
    w = _closed_pipe()
    proc = subprocess.Popen(
        [*CLI, "-", "-q"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=w, env=cli_env()
    )
    os.close(w)
    try:
        proc.stdin.write(FIX_SAMPLE.read_bytes()[:100])  # a header and part of a record: it reads on
        proc.stdin.flush()
        deadline = time.monotonic() + 60
        while _unread(proc.stdin.fileno()) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)  # from its read(2) into the next one
        proc.send_signal(sig)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdin.close()
    assert proc.returncode == code


def _with_stdout_closed(args: list[str]) -> subprocess.CompletedProcess:
    """The CLI run with descriptor 1 closed before it starts (``>&-``), its standard error captured."""
    return subprocess.run(
        [*CLI, *args],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=cli_env(),
        text=True,
        timeout=300,
        preexec_fn=lambda: os.close(1),  # noqa: PLW1509 - in the child only: no thread there
    )


CLOSED_STDOUT_COMMANDS = [
    [SAMPLE, "-q"],
    [SAMPLE, "--format", "json"],
    [SAMPLE, "--format", "markdown"],
    [SAMPLE, "--trace", "-", "-q"],
    ["explain", SAMPLE],
    ["kernels"],
    ["schema", "replay"],
    ["synth", "-", "--frames", "5"],
]


@pytest.mark.parametrize("args", CLOSED_STDOUT_COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_a_closed_stdout_descriptor_is_one_line_exit_2(args) -> None:
    """``>&-``: descriptor 1 closed before the command starts (the interpreter's ``sys.stdout`` is None). Every
    command that prints there says so in one line, exit 2, as for ``> /dev/full`` (a write to a closed descriptor
    fails with EBADF); before, the first writer died on None: "internal error: AttributeError", exit 70 (breaker's
    finding). synth - wrote its frames to /dev/null (it reopened /dev/stdout) and said it wrote them."""
    r = _with_stdout_closed(args)
    assert (r.returncode, r.stderr) == (2, "Error: standard output: cannot write: Bad file descriptor\n")


def test_a_closed_stdout_that_nothing_is_written_to_is_no_error(tmp_path) -> None:
    """A command that prints nothing to standard output (synth into a file) runs as usual with it closed."""
    out = tmp_path / "s.pcap"
    r = _with_stdout_closed(["synth", str(out), "--frames", "5"])
    assert (r.returncode, r.stderr) == (0, f"wrote 5 frames to {out}\n")
    assert out.stat().st_size > 0
