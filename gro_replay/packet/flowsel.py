"""The flow selector of ``--flow`` (replay, ``--trace``, ``--write-pcap``, explain, diff): one grammar, one parser.

Grammar (README "Selecting flows"): comma-separated terms, all of which a flow must match::

    SELECTOR := TERM ("," TERM)*
    TERM     := N | "#" N                       flow id (the order flows first appear in the capture, as explain lists)
              | ADDR | ADDR ":" PORT | "[" IPV6 "]" ":" PORT      any outer or inner endpoint
              | KEY "=" VALUE
    KEY      := id | vni | tunnel | outer-src | outer-dst | outer-sport | outer-dport
              | src | dst | sport | dport | proto | csum          (src … dport: the inner packet)
              | vlan                                        (a tag of the inner frame)

Values: ``id`` 0 … 2**63-1; ``vni`` 0 … 16777215 (24 bits); ports 0 … 65535; ``proto`` tcp, udp, icmp, icmpv6,
ipip, ipv6-in-ip, gre or 0 … 255 (the inner packet's; a flow that is not VXLAN/Geneve: its own IP protocol);
``tunnel`` vxlan, geneve or none; ``csum`` zero or set (the outer UDP checksum); ``vlan`` 0 … 4095 (the VID of any
802.1Q/802.1ad tag of the inner frame) or none (a tunnelled flow whose inner frame has no tag); addresses IPv4 or IPv6
(compared in canonical form, ``2001:DB8::1`` matches ``2001:db8::1``). Numbers are ASCII digits, at most 20
of them. Anything else is a ``SelectorError`` (one line), raised by ``parse`` before any frame is read.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from functools import lru_cache

from .flowkey import PROTO_NAMES

KEYS = (
    "id",
    "vni",
    "tunnel",
    "outer-src",
    "outer-dst",
    "outer-sport",
    "outer-dport",
    "src",
    "dst",
    "sport",
    "dport",
    "proto",
    "csum",
    "vlan",
)
#: the protocol names ``proto=`` takes: those a flow's label prints (packet/flowkey.py ``PROTO_NAMES``)
PROTOS = {name: number for number, name in PROTO_NAMES.items()}
_RANGES = {
    "id": (0, (1 << 63) - 1),
    "vni": (0, (1 << 24) - 1),
    "outer-sport": (0, 65535),
    "outer-dport": (0, 65535),
    "sport": (0, 65535),
    "dport": (0, 65535),
    "proto": (0, 255),
    "port": (0, 65535),
    "vlan": (0, 4095),
}
_MAX_DIGITS = 20
_MAX_TERMS = 64


class SelectorError(ValueError):
    """A --flow selector that cannot be parsed (one-line message)."""


def _number(text: str, what: str) -> int:
    """ASCII digits only (``str.isdigit`` also accepts '²' and other scripts' digits, which ``int`` refuses)."""
    lo, hi = _RANGES[what] if what in _RANGES else (0, (1 << 63) - 1)
    if not text or not (text.isascii() and text.isdigit()):
        raise SelectorError(f"--flow: {what} needs a number ({lo}…{hi}), not {text[:40]!r}")
    if len(text) > _MAX_DIGITS:
        raise SelectorError(f"--flow: {what} {text[:20]}… has {len(text)} digits; the range is {lo}…{hi}")
    n = int(text)
    if not lo <= n <= hi:
        raise SelectorError(f"--flow: {what} {n} is out of range ({lo}…{hi})")
    return n


def _address(text: str, what: str) -> str:
    try:
        return ipaddress.ip_address(text).compressed
    except ValueError:
        raise SelectorError(f"--flow: {what}: {text[:60]!r} is not an IPv4 or IPv6 address") from None


@lru_cache(maxsize=4096)
def _canonical(addr: str) -> str:
    """A flow key's address text in ``ipaddress`` canonical form ('' and non-addresses unchanged)."""
    try:
        return ipaddress.ip_address(addr).compressed
    except ValueError:
        return addr


@dataclass(frozen=True)
class Term:
    """One parsed term: ``field`` (a KEYS name, or ``endpoint``) and its normalized value (``port`` for endpoints)."""

    field: str
    value: object
    port: int | None = None

    def matches(self, key, fid: int) -> bool:
        """Whether flow ``fid`` with ``FlowKey``-like ``key`` matches this term."""
        f = self.field
        if f == "id":
            return fid == self.value
        if f == "endpoint":
            ends = (
                (key.outer_src, key.outer_sport),
                (key.outer_dst, key.outer_dport),
                (key.inner_src, key.inner_sport),
                (key.inner_dst, key.inner_dport),
            )
            return any(_canonical(a) == self.value and (self.port is None or p == self.port) for a, p in ends)
        if f == "vni":
            return bool(key.tunnel) and key.vni == self.value
        if f == "tunnel":
            return (key.tunnel or "none") == self.value
        if f == "csum":
            return bool(key.tunnel) and key.outer_csum_zero == (self.value == "zero")
        if f == "proto":
            return key.inner_proto == self.value
        if f == "vlan":
            tags = key.inner_vlan
            return bool(key.tunnel) and (
                not tags if self.value is None else any(t & 0x0FFF == self.value for _, t in tags)
            )
        attr = {
            "outer-src": "outer_src",
            "outer-dst": "outer_dst",
            "src": "inner_src",
            "dst": "inner_dst",
            "outer-sport": "outer_sport",
            "outer-dport": "outer_dport",
            "sport": "inner_sport",
            "dport": "inner_dport",
        }[f]
        got = getattr(key, attr)
        return _canonical(got) == self.value if isinstance(got, str) else got == self.value


def _endpoint(term: str) -> Term:
    if term.startswith("["):
        addr, close, rest = term[1:].partition("]")
        if not close or (rest and not rest.startswith(":")):
            raise SelectorError(f"--flow: {term[:60]!r}: use [IPV6]:PORT")
        port = rest[1:] if rest else None
    elif term.count(":") == 1:
        addr, port = term.split(":")
    else:
        addr, port = term, None
    return Term("endpoint", _address(addr, "address"), None if port is None else _number(port, "port"))


def _term(term: str) -> Term:
    name, eq, value = term.partition("=")
    if not eq:
        digits = term[1:] if term.startswith("#") else term
        if digits.isdigit() or term.startswith("#"):
            return Term("id", _number(digits, "id"))
        return _endpoint(term)
    name = name.strip().lower()
    value = value.strip()
    if name not in KEYS:
        raise SelectorError(f"--flow: unknown key {name[:40]!r}; use {', '.join(KEYS)}")
    if name == "vlan" and value.lower() == "none":
        return Term(name, None)
    if name in _RANGES and name not in ("proto", "port"):
        return Term(name, _number(value, name))
    if name == "proto":
        if value.lower() in PROTOS:
            return Term(name, PROTOS[value.lower()])
        if not (value.isascii() and value.isdigit()):
            raise SelectorError(f"--flow: proto must be {', '.join(PROTOS)} or 0…255, not {value[:40]!r}")
        return Term(name, _number(value, "proto"))
    if name == "csum":
        if value.lower() not in ("zero", "set"):
            raise SelectorError(f"--flow: csum must be zero or set, not {value[:40]!r}")
        return Term(name, value.lower())
    if name == "tunnel":
        if value.lower() not in ("vxlan", "geneve", "none"):
            raise SelectorError(f"--flow: tunnel must be vxlan, geneve or none, not {value[:40]!r}")
        return Term(name, value.lower())
    return Term(name, _address(value, name))


@dataclass(frozen=True)
class FlowSelector:
    """A parsed ``--flow`` selector: a flow matches when it matches every term. ``text`` is what was given."""

    text: str
    terms: tuple[Term, ...]

    @classmethod
    def parse(cls, text: str) -> FlowSelector:
        """Parse ``text`` (module docstring's grammar). Raises: SelectorError (one line)."""
        if len(text) > 4096:
            raise SelectorError(f"--flow: selector of {len(text)} characters (at most 4096)")
        parts = [t.strip() for t in text.split(",")]
        if not all(parts):
            raise SelectorError(f"--flow: empty term in {text[:80]!r}")
        if len(parts) > _MAX_TERMS:
            raise SelectorError(f"--flow: {len(parts)} terms (at most {_MAX_TERMS})")
        return cls(text, tuple(_term(t) for t in parts))

    def matches(self, key, fid: int) -> bool:
        """Whether flow ``fid`` (its ``FlowKey``, or any object with the same attributes) matches every term."""
        return all(t.matches(key, fid) for t in self.terms)


class KeyView:
    """A ``FlowKey``-like view of a JSON document's flow ``key`` object (``FlowKey.as_dict``), for ``diff``."""

    __slots__ = (
        "outer_src",
        "outer_dst",
        "outer_sport",
        "outer_dport",
        "tunnel",
        "vni",
        "inner_src",
        "inner_dst",
        "inner_sport",
        "inner_dport",
        "inner_proto",
        "outer_csum_zero",
        "inner_vlan",
    )

    def __init__(self, key: dict | None) -> None:
        key = key or {}
        o = key.get("outer") or {}
        i = key.get("inner") or {}
        self.outer_src, self.outer_dst = o.get("src", ""), o.get("dst", "")
        self.outer_sport, self.outer_dport = o.get("sport", 0), o.get("dport", 0)
        self.tunnel = key.get("tunnel") or ""
        self.vni = key.get("vni") or 0
        self.inner_src, self.inner_dst = i.get("src", ""), i.get("dst", "")
        self.inner_sport, self.inner_dport = i.get("sport", 0), i.get("dport", 0)
        # a flow that is not VXLAN/Geneve has no inner key: its IP protocol is the outer one (FlowKey.inner_proto)
        self.inner_proto = i.get("proto", 0) if key.get("inner") else o.get("proto", 0)
        self.outer_csum_zero = bool(o.get("udp_csum_zero", False))
        tags = i.get("vlan") or ()  # FlowKey.inner_vlan's (TPID, TCI) pairs; absent in older documents
        self.inner_vlan = tuple(
            (t["tpid"], (t["pcp"] << 13) | (0x1000 if t["dei"] else 0) | t["vid"]) for t in tags
        )


def select_flows(flows: list, selector: str | None) -> list[int]:
    """Flow ids (indexes of ``flows``, a list of ``FlowKey``) matching ``selector``; all flows when None.

    Raises: SelectorError for a selector that cannot be parsed.
    """
    if selector is None:
        return list(range(len(flows)))
    sel = FlowSelector.parse(selector)
    return [fid for fid, key in enumerate(flows) if sel.matches(key, fid)]
