"""Facts about the installed project that many modules print: the version and how to install an optional extra.

A leaf module (it imports nothing of the package), so that reporting modules can name the version without
importing the package's ``__init__`` (which imports the simulation on demand): no import cycle.
"""

from __future__ import annotations

__version__ = "0.1.0"


def install_extra_hint(extra: str) -> str:
    """How to install optional extra ``extra`` (``plot``, ``batch``, ``bpf``, ``man``: pyproject.toml's
    ``[project.optional-dependencies]``), as every missing-extra error says it: gro-replay is installed from its
    source tree (README's ``pip install .``), so the command names the tree, not a package index."""
    return f"pip install '.[{extra}]' in the gro-replay source tree"
