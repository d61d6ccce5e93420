"""``make man`` / ``python -m gro_replay.manpage DIR``: man pages generated from the commands' own help, laid out
by click-man (the ``man`` extra), one page per command: ``gro-replay.1``, ``gro-replay-replay.1``,
``gro-replay-diff.1`` … Read one with ``man -l DIR/gro-replay.1``. The date is ``SOURCE_DATE_EPOCH``'s when set
(reproducible builds), else today's.
"""

from __future__ import annotations

import inspect
import os
import sys
import time
from pathlib import Path

from .project import install_extra_hint


def write_man_pages(target: str | os.PathLike[str]) -> list[Path]:
    """Write the man pages into ``target`` (created if missing); returns the files written, sorted.

    click-man lays the pages out (``ManPage``: title, NAME, SYNOPSIS, DESCRIPTION, OPTIONS, COMMANDS); the text put
    in them is roff made here (``roff_text``, ``roff_help``): click-man 0.6 cut every NAME line and command summary
    at 45 characters ("Replay a VXLAN/Geneve capture through...") and put the help's ``\\b`` blocks (the examples)
    in as a backspace character in filled text, so ``man`` ran the example lines together.

    Raises: ModuleNotFoundError (click-man not installed: ``pip install '.[man]'`` in the source tree), OSError.
    """
    import click
    from click_man.man import ManPage

    from .cli.app import main, mount_all
    from .project import __version__

    mount_all()  # sub-commands are imported on demand: read main.commands after this
    out = Path(target)
    out.mkdir(parents=True, exist_ok=True)
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch and not (epoch.isascii() and epoch.isdigit() and len(epoch) <= 12):
        raise SystemExit(f"SOURCE_DATE_EPOCH {epoch[:40]!r} is not a number of seconds since 1970")
    date = time.strftime("%Y-%m-%d", time.gmtime(int(epoch) if epoch else None))
    written = []
    todo: list[tuple[click.Command, str, click.Context | None]] = [(main, "gro-replay", None)]
    while todo:
        cmd, name, parent = todo.pop(0)
        ctx = click.Context(cmd, info_name=name, parent=parent)
        page = ManPage(ctx.command_path)
        page.version, page.date = __version__, date
        page.short_help = roff_text(summary(cmd))
        page.description = roff_help(cmd.help or "")
        page.synopsis = " ".join(cmd.collect_usage_pieces(ctx))
        page.options = [
            (rec[0], roff_text(rec[1]))
            for rec in (
                p.get_help_record(ctx) for p in cmd.params if isinstance(p, click.Option) and not p.hidden
            )
            if rec is not None
        ]
        subs = {n: c for n, c in getattr(cmd, "commands", {}).items() if not c.hidden}
        page.commands = [(n, roff_text(summary(c))) for n, c in subs.items()]
        path = out / f"{ctx.command_path.replace(' ', '-')}.1"
        path.write_text(str(page), encoding="utf-8")
        written.append(path)
        todo += [(c, n, ctx) for n, c in subs.items()]
    return sorted(written)


def summary(cmd) -> str:
    """A command's one-line summary, whole (its ``short_help``, else the first sentence of its help): the NAME
    line and the parent page's COMMANDS entry."""
    return cmd.get_short_help_str(limit=10_000)


def roff_text(text: str) -> str:
    """``text`` as roff text: backslashes as ``\\e``, hyphen-minus as ``\\-`` (so ``--fix`` is typed as it reads),
    and a line that starts with ``.`` or ``'`` (a roff request) guarded by ``\\&``."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join("\\&" + ln if ln.startswith((".", "'")) else ln for ln in text.split("\n"))


def roff_help(text: str) -> str:
    """A click help text as roff paragraphs: blank lines separate paragraphs (``.PP``); a paragraph that click
    keeps unwrapped (first line ``\\b``: the examples) is set line for line (``.nf`` … ``.fi``); what follows
    ``\\f`` is not help (click leaves it out too)."""
    text = inspect.cleandoc(text.split("\f")[0])
    paragraphs = [p for p in text.split("\n\n") if p.strip()]
    out = []
    for para in paragraphs:
        lines = para.split("\n")
        if lines[0].strip() == "\b":
            out.append(".nf\n" + roff_text("\n".join(lines[1:])) + "\n.fi")
        else:
            out.append(roff_text(" ".join(ln.strip() for ln in lines)))
    return "\n.PP\n".join(out)


def _main(argv: list[str]) -> int:
    target = argv[1] if len(argv) > 1 else "man"
    try:
        pages = write_man_pages(target)
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] != "click_man":  # one of its own (exit 75), or another: one line
            from . import import_failed

            line, code = import_failed(e)
            print(line, file=sys.stderr)
            return code
        print(f"gro-replay: man pages need click-man: {install_extra_hint('man')}", file=sys.stderr)
        return 2
    print(f"wrote {len(pages)} man pages to {target}/ (read one with: man -l {target}/gro-replay.1)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(_main(sys.argv))
