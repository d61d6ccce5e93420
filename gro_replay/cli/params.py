"""Click parameter types: numeric options (finite, bounded, ASCII numbers only) and keyword values.

Keyword values (``auto``, ``off``, ``none``, ``budget``, ``json``, ``vxlan``, …) are accepted in any letter case
by every option of every command and normalised to the lower-case spelling the help shows (``keyword``,
``Keyword``, ``PortOrAuto``, ``SecondsOrOff``; ``sim/config.py``'s ``--poll``/``--gro``/``--resegment`` parsers and
``packet/flowsel.py`` follow the same rule).

``click.FloatRange`` lets NaN through (every comparison with NaN is false) and ``float``/``int`` accept "inf",
Unicode digits and 300-digit numbers; an option value that the tool cannot use is refused here, at parse time,
with click's one-line usage error (exit 2), instead of failing later (exit 70) or running away.
"""

from __future__ import annotations

import math
from typing import NoReturn

import click

from ..project import decimal_in, decimal_number, plain_number

#: The largest 64-bit unsigned value (``unsigned long`` on 64-bit Linux: gro_flush_timeout).
ULONG_MAX = (1 << 64) - 1
#: ``S32_MAX``: net/core/net-sysfs.c refuses a larger napi_defer_hard_irqs (-ERANGE).
S32_MAX = (1 << 31) - 1


class FiniteFloat(click.FloatRange):
    """A finite decimal number in ``[min, max]`` (ASCII digits; no inf, nan, or digits of other scripts). A
    ``FloatRange`` so that ``--help`` shows the bounds as for integers (``0<=x<=1000000``)."""

    name = "float"
    #: both bounds always given (click's FloatRange allows None for an open end)
    min: float
    max: float

    def __init__(self, min: float = 0.0, max: float = 1e9) -> None:  # noqa: A002 - click's own names
        super().__init__(min, max)

    def convert(self, value, param, ctx) -> float:
        return self._number(value, value, param, ctx)

    def _number(self, value, given, param, ctx) -> float:
        """``value`` as a float in range; a refusal quotes ``given``, what the user wrote."""
        if isinstance(value, float):
            x, exact = value, repr(value)
        else:
            exact = str(value)
            number = decimal_number(exact)
            if number is None:
                self.fail(f"{given!r} is not a number", param, ctx)
            x = number
        # the range of the number as written (``project.decimal_in``), not of its float
        if not math.isfinite(x) or not decimal_in(exact, self.min, self.max):
            self.fail(
                f"{given!r} is not a finite number in {plain_number(self.min)}..{plain_number(self.max)}",
                param,
                ctx,
            )
        return x + 0.0  # -0 is 0 (as PollModel.parse)

    def _describe_range(self) -> str:
        return f"{plain_number(self.min)}<=x<={plain_number(self.max)}"

    def __repr__(self) -> str:
        return f"FiniteFloat({self.min}, {self.max})"


class Percent(FiniteFloat):
    """``FiniteFloat`` in percent, with or without the ``%`` the reports print beside it (``5``, ``5%``, ``2.5 %``
    all mean 5 / 2.5 percent): what ``diff`` prints as "allowed loss 5%" is taken back as written."""

    name = "percent"

    def convert(self, value, param, ctx) -> float:
        number = value.strip().removesuffix("%").rstrip() if isinstance(value, str) else value
        return self._number(number, value, param, ctx)

    def __repr__(self) -> str:
        return f"Percent({self.min}, {self.max})"


class BoundedInt(click.IntRange):
    """An integer in ``[min, max]`` written in ASCII digits (an optional sign). One of more than 20 digits is
    refused as out of range, as click refuses a smaller one, without being converted (``_out_of_range``)."""

    def convert(self, value, param, ctx):
        if not isinstance(value, int):
            text = str(value).strip()
            digits = text[1:] if text[:1] in "+-" else text
            if not (text.isascii() and digits.isdigit()):
                self.fail(f"{value!r} is not an integer in {self.min}..{self.max}", param, ctx)
            if len(digits) > 20:
                self._out_of_range(text, digits, param, ctx)
        return super().convert(value, param, ctx)

    def _out_of_range(self, text: str, digits: str, param, ctx) -> NoReturn:
        """Refuse integer ``text`` of more than 20 ``digits``, beyond every bound this type is given: click's own
        out-of-range words, the number cut to its first 20 digits and its length given."""
        shown = f"{text[: len(text) - len(digits) + 20]}… ({len(digits)} digits)"
        self.fail(f"{shown} is not in the range {self._describe_range()}", param, ctx)


class ByteCount(BoundedInt):
    """A number of bytes in ``[min, max]``, also as the tool prints byte counts and sizes: with thousands separators
    and the unit (``134,217,728 bytes``, "larger than 134,217,728 bytes (--max-bytes)") or in binary units (``128
    MiB`` as README and ``--help`` say, ``64KiB``; K/M/G/TiB = 2^10/20/30/40 bytes, any letter case)."""

    name = "bytes"
    _UNITS = {
        "": 1,
        "b": 1,
        "byte": 1,
        "bytes": 1,
        "kib": 1 << 10,
        "mib": 1 << 20,
        "gib": 1 << 30,
        "tib": 1 << 40,
    }

    def convert(self, value, param, ctx):
        if isinstance(value, str):
            text = value.strip()
            number = text.rstrip("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ").rstrip()
            unit = keyword(text[len(number) :])
            digits = number.replace(",", "")
            groups = number.split(",")
            # 134,217,728: a first group of 1 to 3 digits, then groups of three
            grouped = len(groups) == 1 or (1 <= len(groups[0]) <= 3 and all(len(g) == 3 for g in groups[1:]))
            if unit in self._UNITS and grouped and digits.isascii() and digits.isdigit():
                if len(digits) > 20:
                    self._out_of_range(number, digits, param, ctx)
                return super().convert(int(digits) * self._UNITS[unit], param, ctx)
            if unit and unit not in self._UNITS:
                self.fail(f"{value!r} is not a number of bytes (N, N bytes, N KiB/MiB/GiB/TiB)", param, ctx)
        return super().convert(value, param, ctx)


def keyword(value: str) -> str:
    """``value`` as a keyword is compared: without surrounding blanks, in lower case (``AUTO`` → ``auto``)."""
    return value.strip().lower()


class Keyword(click.Choice):
    """A ``click.Choice`` of keywords accepted in any letter case, giving the listed spelling (``JSON`` → ``json``).
    Every keyword option of every command uses it (tests/test_cli_keywords.py walks them all)."""

    def __init__(self, choices) -> None:
        super().__init__(list(choices), case_sensitive=False)


class SecondsOrOff(BoundedInt):
    """``BoundedInt``, or ``off`` (case-insensitive) for 0."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and keyword(value) == "off":
            return 0
        return super().convert(value, param, ctx)


#: The CONFIG_HZ values a kernel can be built with: kernel/Kconfig.hz's HZ_100, HZ_250, HZ_300, HZ_1000, and the
#: architectures' own (arch/arm/Kconfig HZ_200, HZ_500; arch/mips/Kconfig HZ_24, HZ_48, HZ_128, HZ_256, HZ_1024;
#: arch/alpha/Kconfig HZ_32, HZ_64, HZ_1200), so the running kernel's HZ (the kernel backend) is always one
CONFIG_HZ_VALUES = (
    "24", "32", "48", "64", "100", "128", "200", "250", "256", "300", "500", "1000", "1024", "1200",
)  # fmt: skip


class PortOrAuto(click.ParamType):
    """A UDP port (1..65535) or ``auto`` (any letter case)."""

    name = "PORT|auto"

    def convert(self, value, param, ctx):
        if isinstance(value, str) and keyword(value) == "auto":
            return "auto"
        return _UDP_PORT.convert(value, param, ctx)


_UDP_PORT = BoundedInt(1, 65535)
PORT_OR_AUTO = PortOrAuto()


class RssKey(click.ParamType):
    """An RSS key (``--rss-key``): hex digits, in pairs separated by ``:`` as ``ethtool -x`` prints the key
    (``6d:5a:…``), or by spaces, or none, in any letter case; at least 40 bytes (the IPv6 4-tuple's Toeplitz input
    is 36 bytes, plus 4: ``netdev_rss_key`` is 52). Converted to its plain lowercase hex, so that one key written
    two ways is one value (``Command`` compares converted values). Fails (BadParameter) for other characters, an
    odd digit, or fewer than 40 bytes; an empty key is refused, not the default."""

    name = "HEX"

    def convert(self, value, param, ctx):
        if isinstance(value, bytes):
            value = value.hex()
        try:
            key = bytes.fromhex(str(value).replace(":", " "))
        except ValueError:
            self.fail("must be hex digits, two per byte", param, ctx)
        if len(key) < 40:
            self.fail("needs at least 40 bytes (80 hex digits) for IPv6 4-tuples", param, ctx)
        return key.hex()


RSS_KEY = RssKey()
