"""gro-replay: replay VXLAN/Geneve captures through a simulation of Linux NAPI GRO, before and after 89e5c58fc1e2.

The one-shot API (DPDK's ``rte_gro_reassemble_burst`` tier)::

    import gro_replay
    result = gro_replay.replay("capture.pcap", rx_csum="none")
    doc = gro_replay.document(result)  # the ``--format json`` document

``ReplayConfig`` and ``Result`` are re-exported from ``gro_replay.sim``; the stateful tier is
``gro_replay.kernel.kernel.Kernel``. Imports are on demand so that ``gro-replay --version`` stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .project import __version__, install_extra_hint
    from .sim import ReplayConfig, Result

__all__ = ["ReplayConfig", "Result", "__version__", "document", "install_extra_hint", "replay"]


def replay(capture: str, config: ReplayConfig | None = None, **options: Any) -> Result:
    """Replay a capture through every kernel model of ``config`` (the CLI's replay, without the report).

    Args:
        capture: a pcap/pcapng file (optionally gzip), a FIFO, or ``-`` for standard input; read once (a stream
            with ``detect_tunnels``, which reads the capture twice, through a temporary copy: capture/spool.py).
        config: a ``ReplayConfig``; None builds one from ``options`` (its field names, e.g. ``rx_csum="none"``,
            ``kernels=(K_6_18,)``) — the library defaults, which differ from the CLI's in one place:
            ``resegment`` is ``"off"`` here and ``auto`` on the command line.
    Returns: a ``Result`` (input accounting, the config, one ``KernelStats`` per kernel, flows; ``engine``: which
        path ran, batch or frame-by-frame, and why).
    Raises: ``capture.reader.CaptureError`` for unreadable input, ``sim.ConfigError`` for a bad option value,
        TypeError for an unknown option name.
    """
    from .sim import ReplayConfig, replay_capture

    if config is None:
        config = ReplayConfig(**options)
    elif options:
        raise TypeError("give either config or keyword options, not both")
    return replay_capture(capture, config)


def document(result: Result) -> dict:
    """The ``--format json`` document of ``result`` (report/document.py; schema ``gro-replay schema replay``)."""
    from .report.document import document as _document

    return _document(result)


#: sysexits.h EX_TEMPFAIL: a temporary failure, the command may be run again (the installation changed under it)
EXIT_TEMPFAIL = 75
#: the exit code of an internal error (a bug): sysexits.h EX_SOFTWARE
EXIT_INTERNAL = 70
#: the import names of pyproject.toml's ``[project] dependencies``: what ``pip install .`` brings
REQUIRED_PACKAGES = ("dpkt", "click", "rich", "numpy", "jsonschema", "blake3", "zlib_ng")


def import_failed(e: ImportError) -> tuple[str, int]:
    """The one line and the exit code for an import that failed, at start-up (cli/entry.py ``entry``, or
    ``python -m gro_replay`` with the entry itself gone: __main__.py) or while a command ran. One of gro-replay's
    own modules (``e.name``) that is not found, or lacks a name another of its modules imports, means its
    installation changed under the running command (``pip install`` replacing the package, as the README's test
    command does over the first command's install: modules loaded before it are the old ones, those after the new)
    or is incomplete: ``EXIT_TEMPFAIL``, to run it again once the install has finished (CI's mypy checks every
    import of the package's own names, so a release has no such bug of its own). A package it requires
    (``REQUIRED_PACKAGES``) not found, without a name gro-replay imports (a version outside pyproject.toml's
    bounds), or broken (its own import raised ``e``, or one of its own imports did: ``_importing``), is an
    incomplete installation too: the line names it and how to install it, ``EXIT_TEMPFAIL``. Any other is an
    internal error (``EXIT_INTERNAL``). Kept here, in the package's one module that imports nothing, so it is there
    to say it."""
    top = (e.name or "").split(".")[0]
    if top != "gro_replay" and top not in REQUIRED_PACKAGES:
        # a nameless error, or a module a required package imports (jsonschema's referencing: breaker40)
        top = _importing(e).split(".")[0] or top
    if top == "gro_replay":
        return (
            f"gro-replay: its installation changed while it ran, or is incomplete ({e}): run it again once the "
            "install has finished, else reinstall it",
            EXIT_TEMPFAIL,
        )
    if top in REQUIRED_PACKAGES:
        return (
            f"gro-replay: the package {top}, which it requires, is missing, broken or not a version it supports "
            f"({e}): pip install . in the gro-replay source tree installs its requirements",
            EXIT_TEMPFAIL,
        )
    return f"gro-replay: internal error: {type(e).__name__}: {e}", EXIT_INTERNAL


def _importing(e: ImportError) -> str:
    """The required package whose module was being imported when ``e`` was raised (the innermost module body,
    ``<module>``, of one of ``REQUIRED_PACKAGES`` in its traceback), or "": a package broken in place (a module of
    it that fails to load a C extension, or raises an ImportError without ``name`` itself) or missing a package of
    its own, at any depth (jsonschema without referencing, or referencing without rpds: breaker41). Functions of a
    required package on the way (click's invoke runs every command) name none (breaker39)."""
    tb, found = e.__traceback__, ""
    while tb is not None:
        if tb.tb_frame.f_code.co_name == "<module>":
            name = str(tb.tb_frame.f_globals.get("__name__", ""))
            found = name if name.split(".")[0] in REQUIRED_PACKAGES else found
        tb = tb.tb_next
    return found


def __getattr__(name: str) -> Any:
    """The names of ``__all__`` imported when first asked for: the console script's start-up imports nothing of the
    package here, so a module missing there is one line and exit 75 (cli/entry.py), not a traceback."""
    if name in ("ReplayConfig", "Result"):
        from . import sim

        return getattr(sim, name)
    if name in ("__version__", "install_extra_hint"):
        from . import project

        return getattr(project, name)
    raise AttributeError(f"module 'gro_replay' has no attribute {name!r}")
