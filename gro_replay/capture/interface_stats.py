"""One interface of a capture that holds several (capture/interfaces.py): its key (``interface_key``: the pcapng
interface over all sections, a Linux cooked v2 ifindex), what it held (``InterfaceStats``: frames, tunnel frames,
repeats of replayed tunnel frames, decapsulated copies), its label in notes and its JSON row.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from .reader import DLT_LINUX_SLL2

_IFINDEX = struct.Struct("!I")  # LINUX_SLL2 header bytes 4..8: interface index


def interface_key(cap, buf: bytes, linktype: int) -> tuple:
    """``(pcapng interface index or None, SLL2 ifindex or None)`` of the record just read from ``cap``.

    The pcapng index counts interface description blocks over every section in order of appearance
    (``Capture.all_interfaces``): a file of several sections (``cat a.pcapng b.pcapng``) reuses ids from 0 in each
    section, and (section, id) is one interface. In a one-section file it is the interface id."""
    ifindex = _IFINDEX.unpack_from(buf, 4)[0] if linktype == DLT_LINUX_SLL2 and len(buf) >= 8 else None
    return (cap.iface_base + cap.last_iface if cap.format == "pcapng" else None, ifindex)


@dataclass
class InterfaceStats:
    """What one interface of the capture held: frames, frames that parse as tunnel traffic, link type."""

    key: tuple
    #: pcapng ``if_name`` (None: not named, or not pcapng)
    name: str | None
    #: pcapng section (1-based) that declared the interface; None when not pcapng
    section: int | None
    linktype: int
    frames: int = 0
    #: frames to a tunnel port, whole or not (a frame cut short or malformed: by its outer headers)
    tunnel_frames: int = 0
    #: of ``tunnel_frames``, those cut short (captured < original length: skipped as ``snaplen_cut``)
    tunnel_cut: int = 0
    #: frames whose headers end before the outer UDP destination port, or of a link layer not read: whether they are
    #: tunnel traffic is unknown
    unread: int = 0
    #: frames the capturing host sent (Linux cooked ``PACKET_OUTGOING``: capture/linktypes.py ``sent_by_host``)
    sent: int = 0
    #: frames (not tunnel traffic) whose L4 header and payload equal a replayed tunnel frame's inner ones
    copies: int = 0
    #: tunnel frames (of an interface not replayed) equal to a replayed one: the same frame seen on two devices
    repeats: int = 0
    #: of the tunnel frames left out, those equal to left-out ones another interface read first (key → frames: one
    #: frame of each matched, as ``repeats`` are): the second slave of a bond seen again on the bond
    also: dict = field(default_factory=dict)
    #: frames (of a replayed interface) that carry the inner packet of a tunnel frame left out, by the interface
    #: that read it (key → frames): ``--interface`` chose the tunnel device of an ``-i any`` capture
    decapsulated: dict = field(default_factory=dict)

    @property
    def left_out(self) -> int:
        """Tunnel frames that are not repeats of replayed ones (meaningful for an interface not replayed)."""
        return self.tunnel_frames - self.repeats

    def select(self, ambiguous: frozenset[int] = frozenset()) -> str:
        """The ``--interface`` argument that replays this interface (its device): its name, ifindex or index;
        ``ifindex=N`` / ``index=N`` for a number in ``ambiguous`` (one that is both an ifindex and another
        interface's index in this capture), and ``index=N`` for a name that would be read as a number or a form."""
        index, ifindex = self.key
        if ifindex is not None:
            return f"ifindex={ifindex}" if ifindex in ambiguous else str(ifindex)
        if self.name and not reads_as_selector(self.name):
            return self.name
        return f"index={index}" if index in ambiguous or self.name else str(index)

    def label(self, sections: int = 1, interfaces: int = 1) -> str:
        """``interface 3 (eth0)``, ``ifindex 2``, ``interface 3 (eth0, section 2) ifindex 2``: the section is said
        when the file has several; the pcapng interface beside an ifindex when the file declares several."""
        index, ifindex = self.key
        parts = []
        if index is not None and (ifindex is None or sections > 1 or interfaces > 1):
            inside = [self.name] if self.name else []
            if sections > 1 and self.section is not None:
                inside.append(f"section {self.section}")
            parts.append(f"interface {index}" + (f" ({', '.join(inside)})" if inside else ""))
        if ifindex is not None:
            parts.append(f"ifindex {ifindex}")
        return " ".join(parts) or "the capture's interface"

    def matches(self, want: str) -> bool:
        """``--interface want``: a number is the SLL2 ifindex (when packets carry one) or else the pcapng interface
        index (over all sections, in order of appearance); ``ifindex=N`` and ``index=N`` say which (an interface
        whose packets carry ifindexes is several devices, selected by ifindex only); anything else is a pcapng
        ``if_name``."""
        index, ifindex = self.key
        kind, eq, value = want.partition("=")
        n = selector_number(value) if eq and kind in ("ifindex", "index") else None
        if n is not None:
            return ifindex == n if kind == "ifindex" else ifindex is None and index == n
        n = selector_number(want)
        if n is not None:
            return ifindex == n if ifindex is not None else index == n
        return self.name is not None and self.name == want

    def group(self) -> tuple:
        """Interfaces that are one device: the same ``if_name`` (and ifindex) in every section of the file."""
        return (self.name, self.key[1]) if self.name else self.key

    def may_be_replayed(self, kept: list[InterfaceStats]) -> bool:
        """Whether nothing in the capture tells this interface from a replayed one (``kept``): neither is named
        (pcapng ``if_name``), they share a link type, and this one was declared in another section: ``cat a.pcapng
        b.pcapng`` of one device's captures reads so, as two devices do."""
        return self.name is None and any(
            o.name is None
            and o.linktype == self.linktype
            and o.section is not None
            and o.section != self.section
            for o in kept
        )

    def as_dict(
        self,
        replayed: bool,
        sections: int = 1,
        interfaces: int = 1,
        ambiguous: frozenset[int] = frozenset(),
        kept: list[InterfaceStats] | None = None,
        labels: dict | None = None,
    ) -> dict:
        """The interface's row of the JSON document's ``input.interfaces``; ``kept``: the replayed interfaces, for
        ``may_be_replayed_device`` (``may_be_replayed``) of an interface left out; ``labels``: key → label of the
        interfaces ``also`` names (``tunnel_frames_left_out_also``: label → frames)."""
        labels = labels or {}
        return {
            "interface": self.label(sections, interfaces),
            "linktype": self.linktype,
            "frames": self.frames,
            "tunnel_frames": self.tunnel_frames,
            "tunnel_frames_cut": self.tunnel_cut,
            "frames_unread": self.unread,
            "frames_sent_by_host": self.sent,
            "copies_of_tunnel_payload": self.copies,
            "copies_of_tunnel_payload_left_out": _labelled(self.decapsulated, labels) if replayed else {},
            "replayed": replayed,
            "tunnel_frames_repeated": self.repeats,
            "tunnel_frames_left_out": 0 if replayed else self.left_out,
            "tunnel_frames_left_out_cut": 0 if replayed else self.tunnel_cut,
            "tunnel_frames_left_out_also": {} if replayed else _labelled(self.also, labels),
            "select": f"--interface {self.select(ambiguous)}",
            "may_be_replayed_device": not replayed and self.may_be_replayed(kept or []),
        }


def _labelled(counts: dict, labels: dict) -> dict:
    """``counts`` (interface key → frames) keyed by each interface's label (``labels``: key → label)."""
    return {labels.get(k, str(k)): n for k, n in counts.items()}


#: digits a number selecting an interface may have: ifindexes and interface numbers are 32-bit
_MAX_DIGITS = 10


def selector_number(text: str) -> int | None:
    """``--interface`` text as a number: ASCII digits (at most ``_MAX_DIGITS``: longer names no interface, and
    Python refuses to convert over 4,300), else None."""
    if text.isascii() and text.isdigit():
        return int(text) if len(text) <= _MAX_DIGITS else -1
    return None


def reads_as_selector(name: str) -> bool:
    """Whether an ``if_name`` would be read as a number or as ``ifindex=N`` / ``index=N`` by ``--interface``."""
    kind, eq, value = name.partition("=")
    return selector_number(name) is not None or (
        bool(eq) and kind in ("ifindex", "index") and selector_number(value) is not None
    )


def cut_words(left_out: int, cut: int) -> str:
    """What ``--interface`` would replay of ``left_out`` tunnel frames of which ``cut`` were cut short: "" when none
    was, else e.g. "; all 20 are cut short (snaplen_cut), skipped there too"."""
    if not cut:
        return ""
    which = f"all {cut:,} are" if cut == left_out else f"{cut:,} {'is' if cut == 1 else 'are'}"
    return f"; {which} cut short (snaplen_cut), skipped there too"


def _new_stats(cap, key: tuple, linktype: int) -> InterfaceStats:
    index = key[0]
    if index is None:
        return InterfaceStats(key, None, None, linktype)
    known = cap.all_interfaces
    name = known[index][1] if index < len(known) else None
    return InterfaceStats(
        key, name, cap.iface_sections[index] if index < len(known) else cap.sections, linktype
    )


def shared_words(views: list[tuple[str, int, dict]]) -> tuple[str, int]:
    """What the interfaces left out share (``views``: label, tunnel frames left out, ``also`` by label: those of its
    frames another view left out read first, ``InterfaceStats.also``): ("interface 2 (bond0)'s 6 are also
    interface 1 (eth1)'s and 6 interface 3 (eth2)'s", the distinct tunnel frames left out: 12), ("", …) when none
    shares any (a bond over slaves left out sees their frames again; breaker58: each view's were counted as frames
    of their own). How many devices received them the capture does not say (a bond over two slaves, or one slave's
    frames on two views: breaker61), so none is counted."""
    parts = [
        f"{label}'s "
        + " and ".join(
            f"{n:,} {'are' if n > 1 else 'is'} also {other}'s" if j == 0 else f"{n:,} {other}'s"
            for j, (other, n) in enumerate((o, n) for o, n in also.items() if n)
        )
        for label, _n, also in views
        if any(also.values())
    ]
    return ", ".join(parts), sum(n - sum(also.values()) for _label, n, also in views)
