"""Command-line conventions (issue 10 item 8): the group's ``--help`` shows the replay options; ``--version`` and
``--help`` import no heavy module (their start-up time is measured by bench/startup.py, not here); ``--hz`` takes
the CONFIG_HZ values of kernel/Kconfig.hz; a LICENSE file; no docstring points outside the repository.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from conftest import FIX_SAMPLE, ROOT

from gro_replay.cli import main


def test_group_help_lists_every_command_and_the_replay_options(runner):
    r = runner.invoke(main, ["--help"])
    assert r.exit_code == 0
    out = r.stdout
    for cmd in ("batch", "diff", "explain", "kernel", "kernels", "replay", "schema", "synth", "validate"):
        assert re.search(rf"^  {cmd}\s", out, re.M), cmd
    assert "Replay options (gro-replay CAPTURE [OPTIONS]):" in out
    for opt in ("--poll", "--rx-csum", "--vxlan-port", "--interface", "--detect-tunnels", "--hz", "--kernel"):
        assert opt in out.split("Replay options", 1)[1], opt


@pytest.mark.parametrize("args", [["--version"], ["--help"]])
def test_version_and_help_import_no_heavy_module(args):
    code = (
        "import sys\n"
        "from gro_replay.cli import main\n"
        "try:\n"
        f"    main({args!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('numpy', 'rich', 'dpkt', 'gro_replay.sim', 'gro_replay.cli.batch', 'gro_replay.cli.diff', 'gro_replay.cli.explain', 'gro_replay.cli.kernel', 'gro_replay.cli.kernels', 'gro_replay.cli.synth')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)), file=sys.stderr)\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert p.stderr.strip() == "[]"


#: What a JSON replay of a classic pcap does not import (each costs start-up CPU on every run of a CI job; measured by
#: bench/startup.py, not here): rich (the table renderer, ~0.1 CPU s), dpkt (its package loads every protocol module
#: it has, and socket, ~0.08 CPU s: only pcapng's section and interface blocks and the writers use it), the --kernel
#: release parsers (~20 regular expressions), tempfile (a stream's copy: capture/spool.py), importlib.resources
#: (the schema files), pathlib (--write-pcap) and hashlib (its OpenSSL binding, ~4 ms: --digest sha256 only).
NOT_ON_THE_JSON_PATH = (
    "hashlib",
    "rich",
    "dpkt",
    "socket",
    "gro_replay.kernel.release",
    "gro_replay.kernel.banner",
    "gro_replay.kernel.distro",
    "tempfile",
    "importlib.resources",
    "pathlib",
)


def _clean_interpreter_env() -> dict:
    """The environment of a child that runs with ``python -S`` on this interpreter's module path: no site module,
    so nothing a ``.pth`` file imports (an editable install's finder imports pathlib; other environments import
    more) is counted as the replay's; and no check the suite turns on (conftest.py: the schema check loads the
    schema files and jsonschema), as a user's run."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    env.pop("GRO_REPLAY_CHECK_SCHEMA", None)
    env.pop("GRO_REPLAY_CHECK_INVARIANTS", None)
    return env


def _imported(argv: list[str], watched: tuple[str, ...]) -> subprocess.CompletedProcess:
    """The CLI run with ``argv`` in a fresh ``python -S``; its stderr lists which of the ``watched`` modules it
    imported (itself or a submodule), sorted."""
    code = (
        "import sys\n"
        "from gro_replay.cli import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit as e:\n"
        "    assert not e.code, e.code\n"
        f"heavy = {watched!r}\n"
        "print(sorted(h for h in heavy if h in sys.modules or any(m.startswith(h + '.') for m in sys.modules)), "
        "file=sys.stderr)\n"
    )
    return subprocess.run(
        [sys.executable, "-S", "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_clean_interpreter_env(),
    )


@pytest.mark.parametrize(
    "args", [["--format", "json"], ["--json", "-"], ["--json", "{tmp}/r.json", "--format", "json"]]
)
def test_a_json_replay_imports_no_table_renderer_nor_dpkt(args, tmp_path):
    """A CI job's JSON run of a classic pcap imports none of ``NOT_ON_THE_JSON_PATH``."""
    argv = [str(FIX_SAMPLE), "-q", *(a.replace("{tmp}", str(tmp_path)) for a in args)]
    p = _imported(argv, NOT_ON_THE_JSON_PATH)
    assert p.returncode == 0, p.stderr
    assert p.stderr.strip() == "[]"
    assert '"schema_version"' in p.stdout


def test_the_lazy_imports_come_when_needed(tmp_path):
    """What ``NOT_ON_THE_JSON_PATH`` leaves out is there when a run needs it: dpkt for a pcapng capture, pathlib and
    dpkt for --write-pcap, the release parsers for --kernel, rich for the table."""
    from gro_replay.capture.reader import open_capture
    from gro_replay.capture.writer import PcapngWriter

    ng = tmp_path / "fix.pcapng"
    with open_capture(FIX_SAMPLE, digest=None) as cap, PcapngWriter(ng, [("eth0", "")]) as w:
        for ts_ns, buf, _orig_len, _linktype in cap:
            w.write(ts_ns, buf)
    argv = [str(ng), "-q", "--kernel", "5.11", "--kernel", "6.1", "--write-pcap", str(tmp_path / "o")]
    p = _imported(argv, ("rich", "dpkt", "pathlib", "gro_replay.kernel.release"))
    assert p.returncode == 0, p.stderr
    assert p.stderr.strip() == "['dpkt', 'gro_replay.kernel.release', 'pathlib', 'rich']"
    assert "SUMMARY kernels=pre-fix,6.1 frames=17 " in p.stdout
    assert sorted(f.name for f in (tmp_path / "o").iterdir()) == ["6.1.pcapng", "pre-fix.pcapng"]


BLAS_AT_NUMPY_IMPORT = (
    "import os, sys\n"
    "seen = []\n"
    "def hook(event, args):\n"
    "    if event == 'import' and args[0] == 'numpy' and not seen:\n"
    "        seen.append({v: os.environ.get(v) for v in ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS')})\n"
    "sys.addaudithook(hook)\n"
    "import atexit\n"
    "atexit.register(lambda: print(seen, file=sys.stderr))\n"
    "sys.argv = ['gro-replay', CAPTURE, '-q', '--format', 'json']\n"
    "from gro_replay.cli import entry\n"
    "entry()\n"
)


@pytest.mark.parametrize(
    "given, at_import",
    [
        ({}, {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": None}),
        ({"OPENBLAS_NUM_THREADS": "2"}, {"OPENBLAS_NUM_THREADS": "2", "OMP_NUM_THREADS": None}),
        ({"OMP_NUM_THREADS": "2"}, {"OPENBLAS_NUM_THREADS": None, "OMP_NUM_THREADS": "2"}),
        ({"GOTO_NUM_THREADS": "2"}, {"OPENBLAS_NUM_THREADS": None, "OMP_NUM_THREADS": None}),
    ],
    ids=["unset", "openblas-given", "omp-given", "goto-given"],
)
def test_the_console_entry_runs_numpy_blas_on_one_thread_unless_told(given, at_import):
    """cli/entry.py ``_one_blas_thread``: when numpy is first imported, OPENBLAS_NUM_THREADS is 1 (OpenBLAS starts
    no thread per core) unless the user set a thread count of their own, which stands."""
    blas = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "GOTO_NUM_THREADS")
    env = {k: v for k, v in os.environ.items() if k not in blas}
    p = subprocess.run(
        [sys.executable, "-c", BLAS_AT_NUMPY_IMPORT.replace("CAPTURE", repr(str(FIX_SAMPLE)))],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**env, **given},
    )
    assert p.returncode == 0, p.stderr
    assert p.stderr.strip() == repr([at_import])
    assert '"schema_version"' in p.stdout


GC_AT_EXIT = (
    "import atexit, gc, sys\n"
    "atexit.register(lambda: print(gc.get_threshold(), file=sys.stderr))\n"
    "sys.argv = ['gro-replay', CAPTURE, '-q', '--format', 'json']\n"
    "from gro_replay.cli import entry\n"
    "entry()\n"
)


def test_the_console_entry_collects_young_objects_less_often_and_the_library_leaves_gc_alone():
    """cli/entry.py ``_fewer_collections``: a command runs with a youngest-generation threshold of 10,000 and the
    interpreter's own thresholds for the older ones; ``gro_replay.replay`` in someone's program changes nothing
    (both compared with a fresh interpreter's defaults: 700, 10, 10 on 3.11, other values on other versions)."""
    from gro_replay.cli.entry import GC_YOUNG_THRESHOLD

    def run(code: str, out: str = "stdout") -> str:
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
        assert p.returncode == 0, p.stderr
        return getattr(p, out).strip().splitlines()[-1]

    default = run("import gc; print(gc.get_threshold())")
    young, *older = default.strip("()").split(", ")
    assert GC_YOUNG_THRESHOLD == 10_000
    assert (
        run(GC_AT_EXIT.replace("CAPTURE", repr(str(FIX_SAMPLE))), "stderr")
        == f"({', '.join(['10000', *older])})"
    )
    lib = f"import gc, gro_replay; gro_replay.replay({str(FIX_SAMPLE)!r}); print(gc.get_threshold())"
    assert run(lib) == default


def test_lazy_sub_commands_still_run(runner):
    r = runner.invoke(main, ["kernels"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(main, ["explain", str(FIX_SAMPLE), "-q", "--format", "json"])
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("hz", ["100", "250", "300", "1000"])
def test_hz_takes_the_config_hz_values(runner, hz):
    r = runner.invoke(main, [str(FIX_SAMPLE), "--hz", hz, "--format", "json", "-q"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["config"]["constants"]["hz"] == int(hz)


# (200 and 1200 are arm's and alpha's CONFIG_HZ: taken, tests/test_kernel_gro_recipe.py)
@pytest.mark.parametrize("hz", ["150", "0", "2000", "-250", "250.0"])
def test_other_hz_values_exit_2(runner, hz):
    r = runner.invoke(main, [str(FIX_SAMPLE), "--hz", hz, "-q"])
    assert r.exit_code == 2
    assert "--hz" in r.stderr and "Traceback" not in r.stderr


def test_license_is_mit_as_pyproject_says():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License")
    assert 'license = "MIT"' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")


def test_no_docstring_points_outside_the_repository():
    hits = []
    for path in sorted((ROOT / "gro_replay").rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if "../shared" in line or "shared/" in line:
                hits.append(f"{path.relative_to(ROOT)}:{n}")
    assert hits == []
