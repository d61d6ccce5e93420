"""Every missing optional extra (pyproject.toml's ``[project.optional-dependencies]``: plot, batch, bpf, man) is
named the same way: ``pip install '.[EXTRA]'`` in the source tree, as README installs gro-replay (``pip install
.``), never ``'gro-replay[EXTRA]'`` from a package index the project is not published on."""

from __future__ import annotations

import sys
import types

import pytest
from click.testing import CliRunner
from conftest import BROKEN_MODULE, FIX_SAMPLE, ROOT, run_cli_shadowed

from gro_replay import install_extra_hint
from gro_replay.cli import main


def test_extras_are_the_ones_pyproject_defines() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    extras = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    for extra in ("plot", "batch", "bpf", "man"):
        assert f"\n{extra} = [" in extras, extra
    assert install_extra_hint("bpf") == "pip install '.[bpf]' in the gro-replay source tree"


@pytest.mark.parametrize(
    ("module", "args", "message"),
    [
        ("matplotlib", [str(FIX_SAMPLE), "--plot", "PLOT", "-q"], "Error: --plot needs matplotlib: "),
        ("distributed", ["batch", str(FIX_SAMPLE)], "Error: gro-replay batch needs dask.distributed: "),
        (
            "pcapy",
            [str(FIX_SAMPLE), "-f", "udp", "-q"],
            "Error: -f needs a libpcap binding: install the bpf extra (",
        ),
    ],
    ids=["plot", "batch", "bpf"],
)
def test_missing_extra_names_the_source_tree_install(monkeypatch, tmp_path, module, args, message) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # import raises ImportError, as when not installed
    extra = {"matplotlib": "plot", "distributed": "batch", "pcapy": "bpf"}[module]
    r = CliRunner().invoke(main, [str(tmp_path / "x.svg") if a == "PLOT" else a for a in args])
    assert r.exit_code == 2 and r.stdout == ""
    (line,) = r.stderr.splitlines()
    assert line.startswith(message + f"pip install '.[{extra}]' in the gro-replay source tree")
    assert "gro-replay[" not in line


def test_missing_man_extra_names_the_source_tree_install(monkeypatch, tmp_path, capsys) -> None:
    from gro_replay.manpage import _main

    monkeypatch.setitem(sys.modules, "click_man", None)
    monkeypatch.setitem(sys.modules, "click_man.core", None)
    assert _main(["manpage", str(tmp_path / "man")]) == 2
    err = capsys.readouterr().err
    assert err == "gro-replay: man pages need click-man: pip install '.[man]' in the gro-replay source tree\n"


def test_man_pages_with_a_module_of_its_own_missing_say_so(monkeypatch, tmp_path, capsys) -> None:
    # a module of the package missing (an install under way), click-man there or not: not "need click-man" but
    # the entry's one line, exit 75 (breaker's finding: every ModuleNotFoundError read as click-man missing)
    from gro_replay.manpage import _main

    monkeypatch.setitem(sys.modules, "click_man", types.ModuleType("click_man"))
    man = types.ModuleType("click_man.man")
    man.ManPage = object  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "click_man.man", man)
    monkeypatch.setitem(sys.modules, "gro_replay.cli.app", None)
    assert _main(["manpage", str(tmp_path / "man")]) == 75
    assert capsys.readouterr().err == (
        "gro-replay: its installation changed while it ran, or is incomplete (import of gro_replay.cli.app halted; "
        "None in sys.modules): run it again once the install has finished, else reinstall it\n"
    )


def test_only_click_mans_deprecation_warning_is_filtered() -> None:
    """pyproject's pytest filterwarnings ignores click 8.5's warning for click-man's call of
    ``click.utils.make_default_short_help`` (click_man/core.py), nothing broader: the same deprecation from another
    module, and another deprecated name from click-man, still show."""
    import warnings

    msg = "'click.utils.{}' is deprecated and will be removed in Click 9.0."
    with warnings.catch_warnings(record=True) as seen:
        for name, module in (
            ("make_default_short_help", "click_man.core"),
            ("make_default_short_help", "gro_replay.cli"),
            ("safecall", "click_man.core"),
        ):
            warnings.warn_explicit(msg.format(name), DeprecationWarning, "core.py", 27, module=module)
    assert [(str(w.message), w.category) for w in seen] == [
        (msg.format("make_default_short_help"), DeprecationWarning),
        (msg.format("safecall"), DeprecationWarning),
    ]


@pytest.mark.parametrize(
    "broken", ["figure.py", "backends/backend_svg.py", "missing backends/backend_svg.py"]
)
def test_a_plot_extra_broken_in_place_is_named_with_its_error(tmp_path, broken) -> None:
    """matplotlib found but broken: its figure module, or the backend that writes the SVG (a C extension for
    PNG), fails to load with an ImportError without a name. The --plot error names it with the import's error
    before the replay, exit 2 (breaker39: it was an internal error once the replay had run, and before that was
    blamed on click; breaker40: the backend was still imported only after the replay)."""
    files = {f"matplotlib/{n}": "" for n in ("__init__.py", "figure.py", "ticker.py", "backends/__init__.py")}
    if broken.startswith(
        "missing "
    ):  # a module of it gone: named (breaker41: "needs matplotlib: pip install")
        why = "No module named 'matplotlib.backends.backend_svg'"
    else:
        files["matplotlib/backends/backend_svg.py"] = ""
        files[f"matplotlib/{broken}"] = BROKEN_MODULE
        why = "libfoo.so: cannot open shared object file"
    p = run_cli_shadowed(tmp_path, files, [str(FIX_SAMPLE), "--plot", str(tmp_path / "x.svg")])
    assert p.returncode == 2 and p.stdout == "", p.stderr  # nothing replayed
    assert p.stderr.startswith(
        f"Error: --plot needs matplotlib (its import failed: {why}): pip install '.[plot]' in the gro-replay source "
        "tree"
    ), p.stderr


@pytest.mark.parametrize(
    ("package", "args", "message"),
    [
        ("distributed", ["batch", str(FIX_SAMPLE)], "Error: gro-replay batch needs dask.distributed"),
        ("pcapy", [str(FIX_SAMPLE), "-f", "udp", "-q"], "Error: -f needs a libpcap binding"),
    ],
    ids=["batch", "bpf"],
)
def test_an_extra_broken_in_place_is_named_with_its_error(tmp_path, package, args, message) -> None:
    """The kind of breaker41's --plot finding for the other extras (breaker42): a package found but broken (its
    import raises an ImportError without a name, or another error: breaker43's AttributeError was an internal
    error) is named with its error, not only "install it"."""
    attr = "raise AttributeError(\"module 'tornado' has no attribute 'gen'\")\n"
    for text, why in (
        (BROKEN_MODULE, "libfoo.so: cannot open shared object file"),
        (attr, "AttributeError: module 'tornado' has no attribute 'gen'"),
    ):
        p = run_cli_shadowed(tmp_path, {f"{package}/__init__.py": text}, args)
        assert p.returncode == 2, p.stderr
        assert p.stderr.startswith(f"{message} (its import failed: {why}): "), p.stderr
        assert len(p.stderr.splitlines()) == 1


def test_a_plot_that_matplotlib_cannot_draw_is_one_line(tmp_path, monkeypatch) -> None:
    """matplotlib failing as it draws (text.usetex without LaTeX raises RuntimeError in savefig; here savefig
    raises it): the one-line --plot error, exit 2, no file (breaker42: an internal error after the replay)."""
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    def fail(*_a, **_k):
        raise RuntimeError("Failed to process string with tex because latex could not be found")

    monkeypatch.setattr(Figure, "savefig", fail)
    out = tmp_path / "x.svg"
    r = CliRunner().invoke(main, [str(FIX_SAMPLE), "--plot", str(out), "-q"])
    assert r.exit_code == 2, r.output
    assert r.stderr == (
        "Error: --plot: matplotlib could not draw the plot (RuntimeError: Failed to process string with tex because "
        "latex could not be found)\n"
    )
    assert not out.exists()


def test_a_figure_that_matplotlib_cannot_build_is_one_line(tmp_path, monkeypatch) -> None:
    """matplotlib failing as the figure is built (an rc file's empty colour cycle raised ZeroDivisionError in
    segs_figure, outside the save: breaker43): the one-line --plot error, exit 2, no file."""
    pytest.importorskip("matplotlib")
    from gro_replay.report import plot

    def fail(_result):
        raise ZeroDivisionError("integer modulo by zero")

    monkeypatch.setattr(plot, "segs_figure", fail)
    out = tmp_path / "x.svg"
    r = CliRunner().invoke(main, [str(FIX_SAMPLE), "--plot", str(out), "-q"])
    assert (r.exit_code, r.stderr) == (
        2,
        "Error: --plot: matplotlib could not draw the plot (ZeroDivisionError: integer modulo by zero)\n",
    )
    assert not out.exists()
