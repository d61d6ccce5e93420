"""The timestamp resolution of a capture's replayed frames: what a classic pcap's magic number or a pcapng
interface's ``if_tsresol`` says one timestamp unit is, for the note that a time-aware poll model follows times
held to that unit (sim/notes.py ``resolution_note``).

Formats: a classic pcap counts the fraction of a second in microseconds (magic ``a1b2c3d4``) or nanoseconds
(``a1b23c4d``); a pcapng interface in 10^-n or 2^-n seconds as its ``if_tsresol`` byte says (MSB clear: 10^-n,
set: 2^-n), microseconds when the option is absent (draft-ietf-opsawg-pcapng §4.2, ``if_tsresol``). The reader
keeps every timestamp as integer nanoseconds (reader.py), so a unit finer than 1 ns reads as 1 ns.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

#: the pcap magic numbers as libpcap names them (pcap/pcap.h, sf-pcap.c): microsecond and nanosecond files
PCAP_MAGIC_US, PCAP_MAGIC_NS = "a1b2c3d4", "a1b23c4d"

_DECIMAL_UNITS = ((10**9, "s"), (10**6, "ms"), (10**3, "µs"), (1, "ns"))


@dataclass(frozen=True)
class Coarse:
    """Replayed frames whose timestamps are coarser than the nanosecond: ``who`` ("the capture", "interface 0
    (eth0)"), ``unit_ns`` (one timestamp unit, ns), ``source`` (what the file says: "microsecond pcap, magic
    a1b2c3d4", "if_tsresol 6", "no if_tsresol: microseconds, its default")."""

    who: str
    unit_ns: Fraction
    source: str


def unit_words(unit_ns: Fraction) -> str:
    """One timestamp unit in words: "1 µs", "100 ns", "10 ms", "2^-20 s (about 954 ns)", "1.5 ns"."""
    if unit_ns.denominator == 1:
        n = unit_ns.numerator
        for scale, name in _DECIMAL_UNITS:
            if n % scale == 0 and n // scale in (1, 10, 100):
                return f"{n // scale} {name}"
    seconds = unit_ns / 10**9
    if seconds.numerator == 1 and seconds.denominator & (seconds.denominator - 1) == 0:
        about = float(unit_ns)
        near = f"{about / 1000:.3g} µs" if about >= 1000 else f"{about:.3g} ns"
        return f"2^-{seconds.denominator.bit_length() - 1} s (about {near})"
    return f"{float(unit_ns):,g} ns"


def pcapng_unit(tsresol: int | None) -> tuple[Fraction, str]:
    """One timestamp unit (ns) of a pcapng interface whose ``if_tsresol`` byte is ``tsresol`` (None: absent), and
    the words that say where it comes from."""
    if tsresol is None:
        return Fraction(1000), "no if_tsresol: microseconds, its default"
    n = tsresol & 0x7F
    if tsresol & 0x80:
        return Fraction(10**9, 2**n), f"if_tsresol 0x{tsresol:02x}: 2^-{n} s"
    return Fraction(10**9, 10**n), f"if_tsresol {n}"


def coarse_units(cap, replayed: list[int] | None) -> list[Coarse]:
    """The replayed frames' timestamp units coarser than 1 ns, one entry per unit's source.

    Args: cap: the open ``reader.Capture`` (read to its end for pcapng: every interface described);
    replayed: pcapng: the indexes (in ``cap.all_interfaces``) of the interfaces whose frames were replayed, None for
    every interface (ignored for a classic pcap, whose one clock is its file header's).
    Returns: [] when every replayed frame is timed to the nanosecond."""
    if cap.format == "pcap":
        assert cap.pcap_layout is not None
        frac_ns = cap.pcap_layout[2]
        if frac_ns == 1:
            return []
        return [Coarse("the capture", Fraction(frac_ns), f"microsecond pcap, magic {PCAP_MAGIC_US}")]
    known = cap.all_interfaces
    indexes = range(len(known)) if replayed is None else sorted(set(replayed))
    out = []
    for g in indexes:
        unit, source = pcapng_unit(cap.iface_tsresol[g])
        if unit <= 1:
            continue
        name = known[g][1]
        who = "the capture" if len(known) == 1 else f"interface {g}" + (f" ({name})" if name else "")
        out.append(Coarse(who, unit, source))
    return out
