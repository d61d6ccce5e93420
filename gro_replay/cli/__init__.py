"""Command line: ``gro-replay CAPTURE [--fix|--no-fix]`` and the sub-commands. Parses, validates, calls, prints.

One module per command (``replay``, ``schema``, ``diff``, ``explain``, ``batch``, ``kernel`` with ``validate``,
``kernels``, ``synth``), registered in one place: ``app.COMMANDS``, imported when named. Shared pieces:
``options`` (the replay options and ``build_config``), ``params`` (parameter types), ``output`` (console, output
files, progress), ``errors`` (exceptions carrying exit codes) and ``entry`` (the console-script entry).
Rendering lives in ``report/``.

Exit codes: 0 success; 1 a check failed; 2 usage, unreadable input or an output that cannot be written; 3 environment
(kernel backend); 70 internal error; 75 its installation changed while it ran or lacks a package it requires; 130 SIGINT; 141 standard output's reader went away (see ``entry``).
"""

from __future__ import annotations

from typing import Any

from .entry import entry

__all__ = ["entry", "main"]


def __getattr__(name: str) -> Any:
    """``main`` (the click group, ``app.main``) imported when first asked for: ``entry`` imports it inside its
    error handling, so a module of the package missing at start-up is one line (exit 75), not a traceback."""
    if name == "main":
        from .app import main

        return main
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
