"""Text printed through rich exactly as given: the one way the project hands text to rich.

rich reads a ``str`` three ways unless told not to: as console markup ("[fd00::1]", "[ab]" or "[bold]" is a tag,
dropped from the output: an outer IPv6 address, a capture named ``[ab].pcap``), with emoji codes replaced
(":smile:" in a path becomes 😄) and highlighted (styles only). Paths, kernel release strings (``uname -r`` of
the kernel backend's machine, a distribution's banner), device names, flow labels, error messages, notes,
verdict sentences and reason keys ("[tcp_gro_receive:len_zero]") all reach the reports, so none of them may be
read. Hence:

* ``verbatim_console``: every console the commands print on (markup, emoji codes and highlighting off);
* ``VerbatimTable``: a ``rich.table.Table`` whose title, column headers and ``str`` cells become ``Text``
  (never parsed, whatever console prints it);
* ``say``: one line of text as ``Text``.

A ``Text`` is never parsed for markup or emoji codes nor highlighted, whatever the console's settings, so the
report functions stay verbatim on a caller's own console too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from rich.console import Console, RenderableType


def verbatim(text: str, style: str = "") -> Text:
    """``text`` as a rich ``Text`` in ``style`` (a rich style name or definition, "" for none): printed as is."""
    return Text(text, style=style)


def _cell(c: Any) -> Any:
    return verbatim(c) if isinstance(c, str) else c


def verbatim_console(**kwargs: Any) -> Console:
    """A rich ``Console`` (``kwargs`` as ``rich.console.Console`` takes them) that prints a ``str`` as is: no
    markup, no emoji codes, no highlighting."""
    from rich.console import Console

    return Console(markup=False, emoji=False, highlight=False, **kwargs)


class VerbatimTable(Table):
    """A ``rich.table.Table`` (same arguments) whose ``title``, column headers and ``str`` cells are ``Text``:
    printed as given on any console. The title keeps rich's title style (``title_style`` or ``table.title``)."""

    def __init__(self, *headers: Any, title: str | None = None, **kwargs: Any) -> None:
        style = kwargs.get("title_style") or "table.title"
        super().__init__(
            *(_cell(h) for h in headers), title=verbatim(title, style) if title else title, **kwargs
        )

    def add_column(self, header: RenderableType = "", *args: Any, **kwargs: Any) -> None:
        super().add_column(_cell(header), *args, **kwargs)

    def add_row(self, *renderables: RenderableType | None, **kwargs: Any) -> None:
        super().add_row(*(_cell(c) for c in renderables), **kwargs)


def say(console: Console, line: str, style: str = "", soft_wrap: bool = True) -> None:
    """Print ``line`` on ``console`` as is, in ``style``; ``soft_wrap``: a line wider than the console is left for
    the terminal to wrap (never cut or broken by rich)."""
    console.print(verbatim(line, style), soft_wrap=soft_wrap)
