"""Shared test fixtures: repository paths, the public captures in ``../shared/captures``, and a CLI runner.

The public captures live beside the checkout (``<repo>/../shared/captures``, see its README); a user's clone has
no ``../shared``, so every test that needs them takes the ``shared_captures`` fixture and is skipped cleanly
when the folder is absent.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

# every document a command prints or writes while the tests run (in-process or in a child process) is validated
# against its published schema first (report/schema: ``dumps``): a shape change fails the test that made it
os.environ["GRO_REPLAY_CHECK_SCHEMA"] = "1"


def _checked(module, name: str, ref: str | None):
    """Wrap ``module.name`` (a document builder) so every document it returns in the tests is validated against
    ``ref`` (None: the schema of the document's kind). Installed before the test modules import the builders."""
    from gro_replay.report.schema import check

    build = getattr(module, name)

    def wrapper(*args, **kwargs):
        doc = build(*args, **kwargs)
        if ref is not None and doc.get("backend", "simulator") != "simulator":
            return doc  # the kernel backend completes its document afterwards: checked when printed
        check(doc, ref)
        return doc

    wrapper.__wrapped__ = build
    wrapper.__doc__ = build.__doc__
    setattr(module, name, wrapper)


def _check_every_built_document() -> None:
    from gro_replay.report import diff, document, explain

    _checked(document, "document", "replay")
    _checked(explain, "explain", "explain")
    _checked(diff, "compare", "diff")


_check_every_built_document()
# Every replay the suite runs (in-process and in child processes, which inherit the environment) ends with
# report.stats.check_conservation and Replayer.check_drained: segments in = delivered + dropped per stage, nothing
# left held (sim.Replayer.finish).
os.environ["GRO_REPLAY_CHECK_INVARIANTS"] = "1"

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_pcaps"
SHARED_CAPTURES = ROOT.parent / "shared" / "captures"

FIX_SAMPLE = SAMPLES / "vxlan-zero-csum-fix-89e5c58fc1e2.pcap"
GENEVE_SAMPLE = SAMPLES / "geneve-ipv6-bulk.pcap"
VXLAN4_SAMPLE = SAMPLES / "vxlan-4flows-computed-csum.pcap"


def shared_capture_paths() -> list[Path]:
    """Every ``*.pcap``/``*.pcapng`` (optionally ``.gz``) under ``../shared/captures``, sorted; [] when absent."""
    if not SHARED_CAPTURES.is_dir():
        return []
    pats = ("*.pcap", "*.pcapng", "*.pcap.gz", "*.pcapng.gz")
    return sorted({p for pat in pats for p in SHARED_CAPTURES.rglob(pat)})


@pytest.fixture
def shared_captures() -> Path:
    """The ``../shared/captures`` folder; skips the test when it is absent."""
    if not SHARED_CAPTURES.is_dir():
        pytest.skip(f"public captures not present ({SHARED_CAPTURES})")
    return SHARED_CAPTURES


@pytest.fixture
def runner() -> CliRunner:
    """A click CliRunner that keeps stdout and stderr apart (click ≥ 8.2 always does; 8.1 needs the flag)."""
    try:
        return CliRunner(mix_stderr=False)  # click 8.1
    except TypeError:
        return CliRunner()


def without_engine(doc: dict) -> dict:
    """A copy of replay document ``doc`` without ``engine`` (which path ran: batch or frame-by-frame, its reasons
    and poll counts; sim/api.py ``engine``): what every path must give alike. tests/test_engine_path.py checks the
    engine object itself."""
    return {k: v for k, v in doc.items() if k != "engine"}


def batch_and_reference(path, cfg) -> tuple[str, str, dict]:
    """The JSON documents (without ``engine``) of ``path`` replayed with ``cfg`` on the batch path and on the
    reference path (``fast_path=False``), and the batch path's counts (``Replay.batch``)."""
    import json
    from dataclasses import replace

    from gro_replay.report.document import document
    from gro_replay.sim import replay_capture

    r = replay_capture(str(path), cfg)
    ref = replay_capture(str(path), replace(cfg, fast_path=False))
    assert r.batch is not None and ref.batch is None
    dump = lambda x: json.dumps(without_engine(document(x)), default=str)  # noqa: E731
    return dump(r), dump(ref), r.batch


def new_runs_capture(path: Path) -> Path:
    """500 polls under gap:3 (three frames 100 ns apart, polls 10 µs apart) written to ``path``: each a run of flow
    a (one PSH frame, one key) and a run of flow b never seen before (a random TCP window on its second frame: a
    key of its own, so every poll records a run). Seeded: the same bytes every time."""
    import random
    from dataclasses import replace

    from gro_replay.capture.writer import PcapWriter
    from gro_replay.packet.build import ACK, PSH, FrameSpec, build_frame

    rng = random.Random(1)
    a = FrameSpec(sport=40001, inner_src="192.168.1.11", payload=1)
    b = FrameSpec(sport=40002, inner_src="192.168.1.12", payload=1, seq=7_000_000)
    t = 1_000_000_000
    with PcapWriter(path) as w:
        for i in range(500):
            w.write(t, build_frame(replace(a, flags=ACK | PSH, ip_id=i)))
            a = replace(a, seq=a.seq + 1)
            w.write(t + 100, build_frame(replace(b, flags=ACK, ip_id=2 * i)))
            b = replace(b, seq=b.seq + 1 + rng.randrange(2, 1 << 20))
            window = rng.randrange(1, 65535)
            w.write(t + 200, build_frame(replace(b, flags=ACK | PSH, ip_id=2 * i + 1, window=window)))
            b = replace(b, seq=b.seq + 1)
            t += 10_000
    return path


def without_engine_line(text: str) -> str:
    """Text report ``text`` without its ``engine:`` line (report/table.py ``engine_lines``; Markdown: ``- engine:``)."""
    return "".join(
        line for line in text.splitlines(keepends=True) if not line.lstrip("- ").startswith("engine: ")
    )


#: the command line in a child process (``cli_env`` puts this checkout's package first on its path)
CLI = [sys.executable, "-c", "from gro_replay.cli import entry; entry()"]


def cli_env() -> dict:
    """The environment of a CLI child process: this checkout first on PYTHONPATH, GRO_REPLAY_DEBUG unset (errors
    as users see them)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("GRO_REPLAY_DEBUG", None)
    return env


#: a module that fails as a C extension that cannot be loaded does (an ImportError without a name)
BROKEN_MODULE = "raise ImportError('libfoo.so: cannot open shared object file')\n"


def run_cli_shadowed(tmp: Path, files: dict[str, str], args: list[str]):
    """The CLI (``entry``) run with ``args`` in a child process whose PYTHONPATH starts with ``tmp/site``, holding
    ``files`` (relative path → text): a package shadowed by a broken or partial copy, as an installation broken in
    place is. Returns the ``subprocess.CompletedProcess`` (text)."""
    import subprocess

    site = tmp / "site"
    for name, text in files.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text(text)
    env = cli_env()
    env["PYTHONPATH"] = f"{site}{os.pathsep}{env['PYTHONPATH']}"
    code = f"import sys\nfrom gro_replay.cli import entry\nsys.argv = ['gro-replay', *{args!r}]\nentry()\n"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)


def required_cli_args(name: str, tmp: Path) -> list[str]:
    """Valid values of command ``name``'s required arguments (a choice's first value, synth's output file in
    ``tmp``, the fix sample otherwise)."""
    import click

    from gro_replay.cli import main

    out = []
    for p in main.commands[name].params:
        if isinstance(p, click.Argument) and p.required:
            if isinstance(p.type, click.Choice):
                out.append(str(p.type.choices[0]))
            elif name == "synth":
                out.append(str(tmp / "out.pcap"))
            else:
                out.append(str(FIX_SAMPLE))
    return out


def on_a_terminal(*args: str) -> tuple[int, bytes]:
    """Run the CLI with standard input, output and error on a pseudo-terminal (progress display on): exit code and
    every byte written to the terminal."""
    pty = pytest.importorskip("pty")
    pid, fd = pty.fork()
    if pid == 0:  # the child: the terminal is its stdin, stdout and stderr
        os.environ["PYTHONPATH"] = str(ROOT)
        os.environ.pop("NO_COLOR", None)
        os.execv(sys.executable, [sys.executable, "-c", "from gro_replay.cli import entry; entry()", *args])
    out = b""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out


def read_terminal(ctl: int, out: bytearray | None = None) -> bytes:
    """Everything a child wrote to the pseudo-terminal whose controlling side is ``ctl``, until it closed its end
    (EIO) or the end of file; each chunk is added to ``out`` as it arrives (a reader thread's buffer that the test
    watches), when given."""
    out = bytearray() if out is None else out
    while True:
        try:
            chunk = os.read(ctl, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not chunk:
            break
        out.extend(chunk)
    return bytes(out)


def in_a_session() -> None:
    """``preexec_fn`` of a child that is sent SIGHUP as a terminal or ssh session's end would send it: the
    default disposition, whatever the test process inherited (a suite run under nohup ignores SIGHUP, and an
    ignored signal stays ignored through exec, which the tool keeps on purpose: tests/test_outputs.py)."""
    import signal

    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def file_sizes(directory: Path) -> list[int]:
    """Sizes (bytes) of the files now in ``directory``, leaving out any removed between the listing and its stat: a
    child's ``tempfile.gettempdir()`` writes and removes a probe file in its TMPDIR (``_get_default_tempdir``)."""
    sizes = []
    for q in directory.iterdir():
        with contextlib.suppress(FileNotFoundError):
            sizes.append(q.stat().st_size)
    return sizes


def _kernel_backend_unavailable() -> str | None:
    """Why the kernel backend cannot run on this machine (``oracle.check_environment``'s reason: root, network
    namespaces, veth/vxlan, tracefs), None when it can. Asked once, when the test modules are collected."""
    from gro_replay.oracle import OracleUnavailable, check_environment

    try:
        check_environment()
    except OracleUnavailable as e:  # pragma: no cover - depends on the machine
        return str(e)
    return None


#: why the running-kernel tests are skipped here, None when they run (CI runs as root: they run)
KERNEL_BACKEND_UNAVAILABLE = _kernel_backend_unavailable()

#: marks a test (or, as ``pytestmark``, a module) that runs the kernel backend on the running kernel
needs_kernel_backend = pytest.mark.skipif(
    KERNEL_BACKEND_UNAVAILABLE is not None, reason=f"kernel backend unavailable: {KERNEL_BACKEND_UNAVAILABLE}"
)


def skip_without_kernel_backend(why: str = "kernel backend unavailable") -> None:
    """Skip the calling test, saying ``why``, where the kernel backend cannot run (``KERNEL_BACKEND_UNAVAILABLE``)."""
    if KERNEL_BACKEND_UNAVAILABLE is not None:
        pytest.skip(f"{why}: {KERNEL_BACKEND_UNAVAILABLE}")
