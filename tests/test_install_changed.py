"""A command whose own modules vanish while it runs — the README's test command reinstalls gro-replay (editable)
over the first command's install, and a replay started meanwhile found ``gro_replay.report.document`` gone — says
so in one line and exits 75 (sysexits.h EX_TEMPFAIL: run it again), not "internal error … (a bug: please report it)",
exit 70 (newcomer's finding); so does a name missing from a module of its own (an old module loaded before the
install, a new one after it); so does a package it requires missing (pyproject.toml's dependencies: the line names
it and ``pip install .``, not "internal error"). Any other import failure stays an internal error (70).

The vanished module is simulated by a ``None`` entry in ``sys.modules``: its import then raises
``ModuleNotFoundError`` naming it, as a module whose file is gone does.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import BROKEN_MODULE, FIX_SAMPLE, cli_env, run_cli_shadowed

_RUN = (
    "import sys\n"
    "sys.modules[{module!r}] = None\n"
    "from gro_replay.cli import entry\n"
    "sys.argv = ['gro-replay', *{args!r}]\n"
    "entry()\n"
)


def _run(module: str, args: list[str]) -> subprocess.CompletedProcess:
    code = _RUN.format(module=module, args=args)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=cli_env(), timeout=300, check=False
    )


@pytest.mark.parametrize(
    ("module", "args"),
    [
        (
            "gro_replay.report.document",
            [str(FIX_SAMPLE), "-q"],
        ),  # the newcomer's: imported when the replay reports
        ("gro_replay.report.explain", ["explain", str(FIX_SAMPLE)]),
        ("gro_replay.report.diff", ["diff", str(FIX_SAMPLE), str(FIX_SAMPLE)]),
        # at start-up, before any command runs: the commands' group and the output wording module, which the
        # entry imported at load (a traceback before its handler)
        ("gro_replay.cli.app", [str(FIX_SAMPLE), "-q"]),
        ("gro_replay.outputs", [str(FIX_SAMPLE), "-q"]),
        # the two entry.py itself imports, and the package's own (imported by gro_replay/__init__ on demand)
        ("gro_replay.project", ["--version"]),
        ("gro_replay.cli.errors", [str(FIX_SAMPLE), "-q"]),
    ],
)
def test_a_module_of_its_own_gone_is_one_line_exit_75(module, args):
    p = _run(module, args)
    assert p.returncode == 75, p.stderr
    assert p.stderr == (
        f"gro-replay: its installation changed while it ran, or is incomplete (import of {module} halted; None in "
        "sys.modules): run it again once the install has finished, else reinstall it\n"
    )


def test_a_name_gone_from_a_module_of_its_own_is_one_line_exit_75():
    # a module loaded before the install (the old report/__init__.py, without BACKEND_RX_CSUM) and one loaded after
    # it (the new table.py, which imports it): 'cannot import name' from a module of its own (breaker's finding)
    code = (
        "import sys\n"
        "import gro_replay.report\n"
        "del gro_replay.report.BACKEND_RX_CSUM\n"
        "from gro_replay.cli import entry\n"
        f"sys.argv = ['gro-replay', {str(FIX_SAMPLE)!r}, '-q']\n"
        "entry()\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=cli_env(), timeout=300, check=False
    )
    assert p.returncode == 75, p.stderr
    assert p.stderr.startswith(
        "gro-replay: its installation changed while it ran, or is incomplete (cannot import name 'BACKEND_RX_CSUM' "
        "from 'gro_replay.report' ("
    ), p.stderr
    assert p.stderr.endswith("): run it again once the install has finished, else reinstall it\n"), p.stderr


@pytest.mark.parametrize("module", ["gro_replay.cli", "gro_replay.cli.entry"])
def test_python_m_with_the_entry_gone_is_one_line_exit_75(module):
    # python -m gro_replay imports the entry itself (gro_replay/__main__.py): with it gone there is no entry() to
    # say so, so __main__ says it, in the same words
    code = (
        "import runpy, sys\n"
        f"sys.modules[{module!r}] = None\n"
        "sys.argv = ['gro-replay', '--version']\n"
        "runpy.run_module('gro_replay', run_name='__main__', alter_sys=True)\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=cli_env(), timeout=300, check=False
    )
    assert (p.returncode, p.stdout) == (75, ""), p.stderr
    assert p.stderr == (
        f"gro-replay: its installation changed while it ran, or is incomplete (import of {module} halted; None in "
        "sys.modules): run it again once the install has finished, else reinstall it\n"
    )


def test_another_module_gone_is_an_internal_error():
    p = _run("json", [str(FIX_SAMPLE), "-q", "--format", "json"])
    assert p.returncode == 70, p.stderr
    assert p.stderr.startswith("gro-replay: internal error: ModuleNotFoundError: "), p.stderr


@pytest.mark.parametrize("package", ["click", "rich", "numpy", "blake3", "zlib_ng"])
def test_a_required_package_missing_is_one_line_exit_75(package):
    p = _run(package, [str(FIX_SAMPLE), "-q"])
    assert p.returncode == 75, p.stderr
    assert p.stderr.startswith(f"gro-replay: the package {package}, which it requires, is missing"), p.stderr
    assert p.stderr.rstrip().endswith("pip install . in the gro-replay source tree installs its requirements")
    assert len(p.stderr.splitlines()) == 1 and "internal error" not in p.stderr


@pytest.mark.parametrize("package", ["blake3", "zlib_ng"])
def test_a_required_package_broken_in_place_is_one_line_exit_75(package, tmp_path):
    """The kind's sibling (breaker38): a package found but broken, whose import raises an ImportError without
    ``name`` (a C extension that fails to load; here a package whose ``__init__`` raises one), is named as the
    missing one is: exit 75, not "internal error" and 70."""
    p = run_cli_shadowed(tmp_path, {f"{package}/__init__.py": BROKEN_MODULE}, [str(FIX_SAMPLE), "-q"])
    assert p.returncode == 75, p.stderr
    assert p.stderr.startswith(
        f"gro-replay: the package {package}, which it requires, is missing, broken or not a version "
        "it supports (libfoo.so: cannot open shared object file)"
    ), p.stderr
    assert len(p.stderr.splitlines()) == 1


def test_a_package_a_required_one_needs_missing_names_the_required_one(tmp_path):
    """jsonschema's own dependency (referencing) missing: the import that fails names ``referencing``, which
    gro-replay does not import itself; the line names jsonschema, whose module was being imported, exit 75
    (breaker40: an internal error, 70)."""
    from click.testing import CliRunner

    from gro_replay.cli import main

    doc = tmp_path / "doc.json"
    assert CliRunner().invoke(main, [str(FIX_SAMPLE), "-q", "--json", str(doc)]).exit_code == 0
    for missing in ("referencing", "rpds"):  # jsonschema's, and referencing's (breaker41: 70 two levels down)
        p = _run(missing, ["diff", str(doc), str(doc)])  # as if not installed
        assert p.returncode == 75, (missing, p.stderr)
        assert p.stderr.startswith(
            "gro-replay: the package jsonschema, which it requires, is missing, broken"
        )


def test_a_nameless_import_error_outside_a_required_package_is_an_internal_error():
    """An ImportError without a name raised by gro-replay's own code while a command runs (click's functions on
    the stack, no required package's module being imported) is a bug: exit 70, not blamed on click (breaker39)."""
    code = (
        "import sys\nimport gro_replay.sim.api as api\n"
        "def _boom(*a, **k):\n    raise ImportError('own code')\n"
        "api._replay = _boom\nfrom gro_replay.cli import entry\n"
        f"sys.argv = ['gro-replay', {str(FIX_SAMPLE)!r}, '-q']\nentry()\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=cli_env(), timeout=300
    )
    assert (p.returncode, p.stderr) == (70, "gro-replay: internal error: ImportError: own code\n")


def test_required_packages_are_pyprojects_dependencies():
    import re
    from pathlib import Path

    import tomllib

    from gro_replay import REQUIRED_PACKAGES

    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]
    names = [re.match(r"[A-Za-z0-9_.-]+", d).group(0) for d in project["dependencies"]]
    assert tuple(names) == REQUIRED_PACKAGES  # each distribution's import name is its own here
