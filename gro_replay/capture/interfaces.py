"""Captures that hold several interfaces: ``tcpdump -i any`` (Linux cooked v2 carries the ifindex of each packet,
libpcap pcap/pcap-linktype.h ``LINKTYPE_LINUX_SLL2``) and pcapng files with several interface description blocks.

Only one interface is the physical device whose NAPI GRO the replay models: on an overlay host ``-i any`` also
captures the tunnel device's decapsulated copies (the inner packets, which never reach the physical device's NAPI)
and other devices' traffic. ``plan`` reads a capture file once, counts frames and tunnel frames per interface and
picks the one that carries the tunnel traffic (or the user's ``--interface``); ``Selection.filter`` then passes
only that interface's records and counts the others as skipped (``other_interface``). A pipe cannot be read twice:
without ``--interface`` every interface is replayed and the report says so.
"""

from __future__ import annotations

import os
import stat
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from .reader import DLT_EN10MB, DLT_LINUX_SLL, DLT_LINUX_SLL2, CaptureError, l2_normalize, open_capture

#: Skip reason of the frames of an interface that is not replayed.
SKIP_OTHER_INTERFACE = "other_interface"

_IFINDEX = struct.Struct("!I")  # LINUX_SLL2 header bytes 4..8: interface index


def interface_key(cap, buf: bytes, linktype: int) -> tuple:
    """``(pcapng interface id or None, SLL2 ifindex or None)`` of the record just read from ``cap``."""
    ifindex = _IFINDEX.unpack_from(buf, 4)[0] if linktype == DLT_LINUX_SLL2 and len(buf) >= 8 else None
    return (cap.last_iface if cap.format == "pcapng" else None, ifindex)


@dataclass
class InterfaceStats:
    """What one interface of the capture held: frames, frames that parse as tunnel traffic, link type."""

    label: str
    linktype: int
    frames: int = 0
    tunnel_frames: int = 0
    #: frames whose L4 header and payload equal a tunnel frame's inner ones on the chosen interface
    copies: int = 0

    def as_dict(self, replayed: bool) -> dict:
        return {
            "interface": self.label,
            "linktype": self.linktype,
            "frames": self.frames,
            "tunnel_frames": self.tunnel_frames,
            "copies_of_tunnel_payload": self.copies,
            "replayed": replayed,
        }


@dataclass
class Selection:
    """Which interface is replayed, what each held, and the notes for the report."""

    chosen: tuple | None = None  # None: every interface
    #: a pipe read once with ``--interface``: matched per record (``_matches``)
    stream_want: str | None = None
    planned: bool = False  # by_key was filled by a first read of the file
    #: Linux cooked v1 (no ifindex): packets that appear as a tunnel frame's inner packet and again on their own
    unattributed_copies: int = 0
    by_key: dict = field(default_factory=dict)  # key → InterfaceStats, in order of first frame
    reason: str = ""

    def filter(self, cap, records: Iterable, inp) -> Iterator:
        """The records of the chosen interface; the others counted in ``inp`` (read, bytes, ``other_interface``).
        Keys seen while streaming are kept (``by_key``) for the notes when nothing was planned (a pipe)."""
        chosen = self.chosen
        want = self.stream_want
        seen = self.by_key
        for rec in records:
            key = interface_key(cap, rec[1], rec[3])
            st = seen.get(key)
            if st is None:
                st = seen[key] = InterfaceStats(_label(cap, key), rec[3])
            if not self.planned:
                st.frames += 1
            if want is not None:
                if chosen is None and _matches(cap, key, want):
                    chosen = self.chosen = key
            if (chosen is not None or want is not None) and key != chosen:
                inp.frames_read += 1
                inp.bytes_read += len(rec[1])
                inp.skipped[SKIP_OTHER_INTERFACE] += 1
                if inp.first_ts_ns is None:
                    inp.first_ts_ns = rec[0]
                inp.last_ts_ns = rec[0]
                continue
            yield rec

    def notes(self) -> list[str]:
        """One note when the capture held several interfaces (and the same packets twice, when it did)."""
        if len(self.by_key) < 2:
            if self.unattributed_copies:
                n = self.unattributed_copies
                return [
                    f"the capture holds the same packets twice: {n:,} frames carry the inner packets of tunnel "
                    "frames (decapsulated copies, as `tcpdump -i any` records them on the tunnel device); Linux "
                    "cooked v1 does not say the interface, so they are replayed as the physical device's traffic "
                    "and counted there; capture on the physical device, or as LINUX_SLL2 "
                    "(tcpdump -i any -y LINUX_SLL2), to leave them out"
                ]
            return []
        parts = []
        for st in self.by_key.values():
            what = f"{st.tunnel_frames:,} tunnel" if st.tunnel_frames else "no tunnel traffic"
            parts.append(f"{st.label}: {st.frames:,} frames, {what}")
        head = f"the capture holds {len(self.by_key)} interfaces ({'; '.join(parts)})"
        copies = [st for st in self.by_key.values() if st.copies]
        if copies and self.chosen is not None:
            chosen = self.by_key[self.chosen].label
            dup = ", ".join(f"{st.copies:,} on {st.label}" for st in copies)
            head += (
                f", and the same packets twice: {dup} carry the inner packets of {chosen}'s tunnel frames "
                "(decapsulated copies, which never reach the physical device's NAPI)"
            )
        if self.chosen is None:
            return [head + "; all were replayed as one device's traffic: --interface N chooses one"]
        return [
            f"{head}; replaying {self.by_key[self.chosen].label} only ({self.reason}; --interface chooses)"
        ]

    def as_list(self) -> list[dict]:
        return [st.as_dict(self.chosen is None or k == self.chosen) for k, st in self.by_key.items()]


def _label(cap, key: tuple) -> str:
    iface, ifindex = key
    parts = []
    if iface is not None and (ifindex is None or len(cap.interfaces) > 1):
        name = cap.interfaces[iface][1] if iface < len(cap.interfaces) else None
        parts.append(f"interface {iface}" + (f" ({name})" if name else ""))
    if ifindex is not None:
        parts.append(f"ifindex {ifindex}")
    return " ".join(parts) or "the capture's interface"


def _matches(cap, key: tuple, want: str) -> bool:
    iface, ifindex = key
    if want.isascii() and want.isdigit():
        n = int(want)
        return ifindex == n if ifindex is not None else iface == n
    return iface is not None and iface < len(cap.interfaces) and cap.interfaces[iface][1] == want


def _regular_file(path: str) -> bool:
    try:
        return path != "-" and stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def may_hold_several(cap) -> bool:
    """True for inputs that can carry several interfaces: pcapng, Linux cooked v2 (per-packet ifindex), or Linux
    cooked v1 (``tcpdump -i any`` without the ifindex: only the copies can be told, by their bytes)."""
    return cap.format == "pcapng" or cap.linktype in (DLT_LINUX_SLL2, DLT_LINUX_SLL)


def plan(path: str, cap, decoder_factory, want: str | None) -> Selection:
    """Read ``path`` once (a regular file; ``cap`` is its open Capture, not yet iterated) and choose the interface.

    ``decoder_factory()`` gives a ``packet.decode.Decoder`` with the replay's tunnel ports. The chosen interface is
    ``want`` (an ifindex / interface id, or a pcapng interface name) or else the one with the most tunnel frames.
    Raises: CaptureError when ``want`` names no interface of the capture.
    """
    sel = Selection()
    if not may_hold_several(cap):
        if want is not None:
            raise CaptureError(f"{path}: --interface {want}: the capture holds one interface")
        return sel
    if not _regular_file(path):
        sel.stream_want = want
        sel.reason = "--interface"
        return sel
    dec = decoder_factory()
    sel.planned = True
    inner: dict[tuple, set] = {}
    plain: dict[tuple, list] = {}
    with open_capture(path) as scan:
        for _ts, buf, orig_len, linktype in scan:
            key = interface_key(scan, buf, linktype)
            st = sel.by_key.get(key)
            if st is None:
                st = sel.by_key[key] = InterfaceStats(_label(scan, key), linktype)
            st.frames += 1
            if len(buf) < orig_len:
                continue
            eth = buf if linktype == DLT_EN10MB else l2_normalize(buf, linktype)
            if eth is None:
                continue
            r = dec.decode(eth)
            if isinstance(r, str):
                continue
            frame, _vlan, fid, _rss, l4 = r
            payload = hash(bytes(frame[l4:])) if l4 else None
            if dec.flow_class[fid] != "not_tunnel":
                st.tunnel_frames += 1
                if payload is not None:
                    inner.setdefault(key, set()).add(payload)
            elif payload is not None:
                plain.setdefault(key, []).append(payload)
    if want is not None:
        match = [k for k in sel.by_key if _matches(scan, k, want)]
        if not match:
            names = "; ".join(st.label for st in sel.by_key.values()) or "none"
            raise CaptureError(f"{path}: --interface {want}: no such interface (the capture holds: {names})")
        sel.chosen = match[0]
        sel.reason = "--interface"
    elif len(sel.by_key) > 1:
        best = max(sel.by_key, key=lambda k: sel.by_key[k].tunnel_frames)
        if sel.by_key[best].tunnel_frames:
            sel.chosen = best
            sel.reason = "the interface that carries the tunnel traffic"
    if len(sel.by_key) == 1:
        (only,) = sel.by_key
        ref = inner.get(only, set())
        sel.unattributed_copies = sum(1 for h in plain.get(only, ()) if h in ref)
    if sel.chosen is not None:
        ref = inner.get(sel.chosen, set())
        for k, hashes in plain.items():
            if k != sel.chosen:
                sel.by_key[k].copies = sum(1 for h in hashes if h in ref)
    return sel
