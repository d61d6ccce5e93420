"""``make man`` / ``python -m gro_replay.manpage DIR``: man pages generated from the commands' own help by
click-man (the ``man`` extra), one page per command: ``gro-replay.1``, ``gro-replay-replay.1``,
``gro-replay-diff.1`` … Read one with ``man -l DIR/gro-replay.1``. The date is ``SOURCE_DATE_EPOCH``'s when set
(reproducible builds), else today's.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from .project import install_extra_hint


def write_man_pages(target: str | os.PathLike[str]) -> list[Path]:
    """Write the man pages into ``target`` (created if missing); returns the files written, sorted.

    Raises: ModuleNotFoundError (click-man not installed: ``pip install '.[man]'`` in the source tree), OSError.
    """
    from click_man.core import write_man_pages as click_man_write

    from .cli.app import main, mount_all
    from .project import __version__

    mount_all()  # sub-commands are imported on demand: click-man reads main.commands
    out = Path(target)
    out.mkdir(parents=True, exist_ok=True)
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    date = time.strftime("%Y-%m-%d", time.gmtime(int(epoch) if epoch else None))
    click_man_write("gro-replay", main, version=__version__, target_dir=str(out), date=date)
    return sorted(out.glob("gro-replay*.1"))


def _main(argv: list[str]) -> int:
    target = argv[1] if len(argv) > 1 else "man"
    try:
        pages = write_man_pages(target)
    except ModuleNotFoundError:
        print(f"gro-replay: man pages need click-man: {install_extra_hint('man')}", file=sys.stderr)
        return 2
    print(f"wrote {len(pages)} man pages to {target}/ (read one with: man -l {target}/gro-replay.1)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(_main(sys.argv))
