"""``gro-replay kernels``: the kernel profiles, the switches × releases table and the stable backports.

Every value comes from gro_replay/kernel/model.py (``PROFILES``, ``SWITCH_COMMITS``), stable.py
(``STABLE_BACKPORTS``) and release.py (``resolve_kernel``); this module only lays them out. Exit codes: 0; 2 for a
release string that cannot be parsed.
"""

from __future__ import annotations

import json
import textwrap

import click
from rich import box
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from ..kernel.model import LTS, PROFILES, SWITCH_COMMITS, KernelModel
from ..kernel.release import resolve_kernel
from ..kernel.stable import STABLE_BACKPORTS, short_commit
from ..report.verbatim import VerbatimTable, say
from .command import Command
from .errors import UsageError
from .params import Keyword


def kernels_document(extra: tuple[KernelModel, ...] = ()) -> dict:
    """JSON-ready: ``profiles`` (each ``KernelModel.describe()``, its switches included, and ``lts``), ``switches`` (commit, upstream
    release, ``upstream_rc``: the rc of that release the commit landed in or None, title), ``stable_backports``
    (upstream commit → branch → stable commit, first point release)."""
    models = list(PROFILES.values()) + list(extra)
    return {
        "profiles": [dict(m.describe(), lts=m.release in LTS) for m in models],
        "switches": [
            {
                "switch": c.switch,
                "commit": c.commit,
                "upstream": f"{c.upstream[0]}.{c.upstream[1]}" if c.upstream else None,
                "upstream_rc": c.upstream_rc,
                "title": c.title,
            }
            for c in SWITCH_COMMITS
        ],
        "stable_backports": {
            up: {br: {"stable_commit": st, "point_release": f"{br}.{pt}"} for br, (st, pt) in b.items()}
            for up, b in STABLE_BACKPORTS.items()
        },
    }


_TITLE = "behaviour switches × releases (on: the release carries the commit)"


#: Marks an upstream cell "none" (the commit is in no upstream release) and starts its footnote (``footnotes``).
NONE_MARK = "none*"


def _upstream(c) -> str:
    if not c.upstream:
        return NONE_MARK
    return f"v{c.upstream[0]}.{c.upstream[1]}" + (f"-rc{c.upstream_rc}" if c.upstream_rc else "")


def _cell(m: KernelModel, c) -> str:
    bp = m.stable_backport(c.commit)
    return f"on ({bp[1]})" if bp else ("on" if getattr(m, c.switch) else "·")


def _matrix(models: list[KernelModel], title: str, with_commits: bool) -> Table:
    t = VerbatimTable(title=title, box=box.SIMPLE_HEAD)
    t.add_column("switch", no_wrap=True)
    if with_commits:
        t.add_column("commit", no_wrap=True)
        t.add_column("upstream", no_wrap=True)
    for m in models:
        t.add_column(m.release, justify="center", no_wrap=True)
    for c in SWITCH_COMMITS:
        head = (c.switch, c.commit, _upstream(c)) if with_commits else (c.switch,)
        t.add_row(*head, *(_cell(m, c) for m in models))
    return t


def footnotes() -> list[str]:
    """One line per switch whose commit is in no upstream release (its ``upstream`` cell ``none*``): the commit's
    title and that no profile carries it (a base profile has a switch on iff its release is not older than the
    commit's, kernel/model.py ``SWITCH_COMMITS``)."""
    newest = max(PROFILES.values(), key=lambda m: tuple(int(x) for x in m.release.split("."))).release
    return [
        f'* {c.switch}: {c.commit} "{c.title}" is in no upstream release up to {newest}; no profile has it on'
        for c in SWITCH_COMMITS
        if not c.upstream
    ]


def profiles_lines(width: int) -> list[str]:
    """``profiles: 4.19 (LTS), …, 5.11 (pre-fix), …, 6.18`` broken between profiles (never inside one) to fit
    ``width`` columns; a tag only where it adds to the release (LTS, or a name other than the release)."""
    items = [
        m.release + (" (LTS)" if m.release in LTS else f" ({m.name})" if m.name != m.release else "")
        for m in PROFILES.values()
    ]
    lines, cur = [], "profiles:"
    for i, item in enumerate(items):
        piece = item + ("," if i < len(items) - 1 else "")
        if cur.strip() and cur != "profiles:" and len(cur) + 1 + len(piece) > width:
            lines.append(cur)
            cur = "  " + piece
        else:
            cur += " " + piece
    return [*lines, cur]


def _width(console: Console, table: Table) -> int:
    """The columns ``table`` takes unconstrained (rich's maximum measurement with no width limit)."""
    return Measurement.get(console, console.options.update_width(1 << 20), table).maximum


def switch_tables(models: list[KernelModel], console: Console) -> list[Table]:
    """The switches × releases table laid out for ``console``'s width (columns): one table when it fits; else a
    table of the switches with their commits and upstream releases, then the release columns in consecutive groups,
    as many per group as fit beside the switch names, so that no cell is cut or wrapped."""
    full = _matrix(models, _TITLE, with_commits=True)
    if _width(console, full) <= console.width:
        return [full]
    commits = VerbatimTable(title="behaviour switches (each named after its commit)", box=box.SIMPLE_HEAD)
    for name in ("switch", "commit", "upstream"):
        commits.add_column(name, no_wrap=True)
    for c in SWITCH_COMMITS:
        commits.add_row(c.switch, c.commit, _upstream(c))
    groups: list[list[KernelModel]] = []
    for m in models:
        if groups and _width(console, _matrix([*groups[-1], m], "", False)) <= console.width:
            groups[-1].append(m)
        else:
            groups.append([m])
    return [commits] + [
        _matrix(g, "on: the release carries the commit" if i == 0 else "", False)
        for i, g in enumerate(groups)
    ]


@click.command("kernels", cls=Command)
@click.option(
    "--kernel",
    "kernel_rel",
    metavar="RELEASE",
    multiple=True,
    help="Also resolve these releases (5.4.120, 5.4.0-42-generic, Debian's \"$(uname -rv)\", Ubuntu's "
    '"$(cat /proc/version_signature)", …) and show their columns and notes.',
)
@click.option("--format", "fmt", type=Keyword(["table", "json"]), default="table", show_default=True)
def kernels_cmd(kernel_rel, fmt) -> None:
    """The kernel profiles and which behaviour switch (named after its commit) each release has, and the stable
    point releases that took a switch's commit."""
    extra = []
    for r in dict.fromkeys(kernel_rel):
        try:
            m = resolve_kernel(r)
        except ValueError as e:
            raise UsageError(str(e)) from None
        if m.release not in PROFILES:
            extra.append(m)
    from ..report.verdict import release_order

    extra.sort(key=release_order)  # by release, as every report orders kernels
    doc = kernels_document(tuple(extra))
    if fmt == "json":
        click.echo(json.dumps(doc, indent=2))
        return
    from .output import report_console

    console = report_console()
    models = list(PROFILES.values()) + extra
    for line in profiles_lines(console.width):
        say(console, line)
    from ..report.table import print_uncut

    for t in switch_tables(models, console):
        print_uncut(console, t)
    for note in footnotes():
        for line in textwrap.wrap(note, console.width, subsequent_indent="  "):
            say(console, line)
    b = VerbatimTable(title="stable backports (first point release carrying the commit)", box=box.SIMPLE_HEAD)
    b.add_column("upstream commit")
    b.add_column("branch")
    b.add_column("stable commit")
    b.add_column("first point release")
    for up, branches in STABLE_BACKPORTS.items():
        for br, (st, pt) in branches.items():
            b.add_row(up, f"linux-{br}.y", short_commit(st), f"{br}.{pt}")
    print_uncut(console, b)
    for m in extra:
        for n in [*m.notes, *m.behaviour_notes()]:
            say(console, f"note ({m.name}): {n}", soft_wrap=False)
