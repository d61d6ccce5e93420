"""Facts about the installed project that many modules print: the version, how to install an optional extra, how
a number the user typed is printed back (``plain_number``) and how a long text is cut for a one-line message
(``shortened``), and a noun after a count (``plural``).

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


def import_failed_words(e: Exception, package: str) -> str:
    """What an optional extra's error adds for the error ``e`` its import of ``package`` (its top-level name)
    raised: nothing when the package itself is not installed; else " (its import failed: …)": installed but
    broken in place, or missing a module or package of its own, where installing it again is not the whole story
    (breaker41/42), with the type of an error other than an ImportError (breaker43: an AttributeError)."""
    if isinstance(e, ModuleNotFoundError) and e.name == package:
        return ""
    return f" (its import failed: {e if isinstance(e, ImportError) else f'{type(e).__name__}: {e}'})"


def plain_number(x: float) -> str:
    """``x`` as it can be typed back: positional digits, no exponent, no separators, trailing zeros trimmed
    (``1000000``, ``2.5``, ``0.0000001``; ``{:g}`` gives ``1e+06``). A leaf function: the CLI's option types use it
    without importing numpy (tests/test_conventions.py)."""
    from decimal import Decimal

    text = format(Decimal(repr(float(x))), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def decimal_number(text: str) -> float | None:
    """``text`` as a decimal number (``12``, ``2.5``, ``1e3``, an optional sign, spaces around; ``inf`` and
    ``nan`` too, which the caller's range refuses), or None for no number: a word, digits of other scripts
    (``١٢``, ``𝟏``) and ``_`` separators, which ``float`` takes. The one reading of every option value that is a
    decimal number (cli/params.py ``FiniteFloat``, sim/config.py ``PollModel.parse``); ``decimal_in`` checks its
    range."""
    exact = _exact_decimal(text)
    return None if exact is None else float(exact)


def decimal_in(text: str, least: float, most: float) -> bool:
    """Whether the decimal number ``text`` (``decimal_number``'s reading) is finite and within ``least..most``
    as written, not as rounded to a float: ``4294967295.0000001`` is above 4294967295 (its float is not), and
    ``-1e-30`` below 0 (its float is -0.0)."""
    from decimal import Decimal

    exact = _exact_decimal(text)
    return exact is not None and exact.is_finite() and Decimal(least) <= exact <= Decimal(most)


def _exact_decimal(text: str):
    """``text`` as a ``decimal.Decimal`` (exact), or None (``decimal_number``'s refusals). An exponent of more digits
    than ``Decimal`` holds (``3e-99999999999999999999``, which ``float`` reads as 0.0) is clamped to one it holds:
    the value keeps its sign and its side of every bound an option has (zero stays zero, a tiny value stays above 0
    or below it, a huge one above any bound)."""
    import re
    from decimal import Decimal, InvalidOperation

    text = text.strip()
    if not text.isascii() or "_" in text:
        return None
    try:
        return Decimal(text)
    except InvalidOperation:
        m = re.fullmatch(r"([+-]?(?:\d+\.?\d*|\.\d+)[eE])([+-]?)(\d+)", text)
        if m is None:
            return None
        try:
            digits = m.group(3).lstrip("0") or "0"  # not int(): Python refuses over 4,300 digits
            return Decimal(f"{m.group(1)}{m.group(2)}{digits if len(digits) <= 17 else 10**17}")
        except InvalidOperation:
            return None


def shortened(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters for a one-line message, its last one then ``…`` (kernel/banner.py
    ``shown`` quotes it; report/schema cuts a schema violation's reason)."""
    return text if len(text) <= width else text[: width - 1] + "…"


def terminal_size(text: str) -> int | None:
    """A ``COLUMNS``/``LINES`` value as a number of cells: ASCII digits from 1 to 99,999, else None (``str.isdigit``
    lets '²' through, and ``int`` refuses over 4,300 digits: rich would fail on either)."""
    if text.isascii() and text.isdigit() and len(text) <= 5 and 0 < int(text):
        return int(text)
    return None


def plural(n: int, noun: str, many: str | None = None) -> str:
    """``noun`` for a count of 1, else ``many`` (default ``noun + "s"``): "1 frame", "2 frames", "1 skb"."""
    return noun if n == 1 else (many or noun + "s")


def and_list(items: list[str], last: str = "and") -> str:
    """``a``, ``a and b``, ``a, b and c`` (``last``: the word before the last item, e.g. "or")."""
    if len(items) < 3:
        return f" {last} ".join(items)
    return f"{', '.join(items[:-1])} {last} {items[-1]}"
