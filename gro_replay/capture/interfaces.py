"""Captures that hold several interfaces: ``tcpdump -i any`` (Linux cooked v2 carries the ifindex of each packet,
libpcap pcap/pcap-linktype.h ``LINKTYPE_LINUX_SLL2``) and pcapng files with several interface description blocks.

Only one interface is the physical device whose NAPI GRO the replay models: on an overlay host ``-i any`` also
captures the tunnel device's decapsulated copies (the inner packets, which never reach the physical device's NAPI)
and other devices' traffic. ``plan`` reads a capture file once, counts frames and tunnel frames per interface and
picks the one that carries the tunnel traffic (or the user's ``--interface``); ``Selection.filter`` then passes
only that interface's records and counts the others as skipped (``other_interface``). A pipe cannot be read twice:
without ``--interface`` every interface is replayed and the report says so; an ``--interface`` that matched none
of its interfaces is the same error as for a file, at the end of the stream.

A pcapng file may be several sections (``cat a.pcapng b.pcapng``), each numbering its interfaces from 0: an
interface is (section, id), numbered here over the whole file in order of appearance (``interface_key``), and
interfaces of one ``if_name`` in several sections are one device (chosen together by default and by name).
"""

from __future__ import annotations

import os
import stat
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from ..packet.decode import CLS_NOT_TUNNEL, Decoder
from .pcapng_chunks import PcapngChunks
from .reader import DLT_EN10MB, DLT_LINUX_SLL, DLT_LINUX_SLL2, CaptureError, l2_normalize, open_capture

#: Skip reason of the frames of an interface that is not replayed.
SKIP_OTHER_INTERFACE = "other_interface"

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
    tunnel_frames: int = 0
    #: frames whose L4 header and payload equal a tunnel frame's inner ones on the chosen interface
    copies: int = 0

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
        index (over all sections, in order of appearance); anything else is a pcapng ``if_name``."""
        index, ifindex = self.key
        if want.isascii() and want.isdigit():
            n = int(want)
            return ifindex == n if ifindex is not None else index == n
        return self.name is not None and self.name == want

    def group(self) -> tuple:
        """Interfaces that are one device: the same ``if_name`` (and ifindex) in every section of the file."""
        return (self.name, self.key[1]) if self.name else self.key

    def as_dict(self, replayed: bool, sections: int = 1, interfaces: int = 1) -> dict:
        return {
            "interface": self.label(sections, interfaces),
            "linktype": self.linktype,
            "frames": self.frames,
            "tunnel_frames": self.tunnel_frames,
            "copies_of_tunnel_payload": self.copies,
            "replayed": replayed,
        }


def _new_stats(cap, key: tuple, linktype: int) -> InterfaceStats:
    index = key[0]
    if index is None:
        return InterfaceStats(key, None, None, linktype)
    known = cap.all_interfaces
    name = known[index][1] if index < len(known) else None
    return InterfaceStats(
        key, name, cap.iface_sections[index] if index < len(known) else cap.sections, linktype
    )


def _l4_of(dec, buf: bytes, orig_len: int, linktype: int) -> tuple[bool, bytes, int] | None:
    """``(is tunnel traffic, the frame as decoded, offset of its innermost L4 header or 0)`` of one record
    (``packet.decode.Decoder.decode``); None when it does not decode (cut short, unsupported link layer,
    malformed)."""
    if len(buf) < orig_len:
        return None
    eth = buf if linktype == DLT_EN10MB else l2_normalize(buf, linktype)
    if eth is None:
        return None
    r = dec.decode(eth)
    if isinstance(r, str):
        return None
    frame, _vlan, fid, _rss, l4 = r
    return dec.flow_class[fid] != CLS_NOT_TUNNEL, frame, l4


def _payload(dec, buf: bytes, orig_len: int, linktype: int) -> tuple[bool, int | None] | None:
    """``(is tunnel traffic, hash of the L4 header and payload or None)`` of one record; None when it does not
    decode (cut short, unsupported link layer, malformed)."""
    got = _l4_of(dec, buf, orig_len, linktype)
    if got is None:
        return None
    tunnel, frame, l4 = got
    return tunnel, (hash(bytes(frame[l4:])) if l4 else None)


@dataclass
class Selection:
    """Which interfaces are replayed, what each held, and the notes for the report."""

    #: keys of the replayed interfaces (one device: the same name in every section); None: every interface
    chosen: frozenset | None = None
    #: a pipe read once with ``--interface``: matched per record as interfaces appear
    stream_want: str | None = None
    planned: bool = False  # by_key was filled by a first read of the file
    #: a pipe: ``packet.decode.Decoder`` factory, to count each interface's tunnel frames while streaming
    decoder_factory: Callable[[], Decoder] | None = None
    #: Linux cooked v1 (no ifindex): packets that appear as a tunnel frame's inner packet and again on their own
    unattributed_copies: int = 0
    by_key: dict = field(default_factory=dict)  # key → InterfaceStats, in order of first frame
    reason: str = ""
    #: pcapng sections of the file and interfaces declared in them (what labels say: ``InterfaceStats.label``)
    sections: int = 1
    interfaces: int = 1
    path: str = ""

    def filter(self, cap, records: Iterable, inp) -> Iterator:
        """The records of the chosen interfaces; the others counted in ``inp`` (read, bytes, ``other_interface``).
        Keys seen while streaming are kept (``by_key``, with frames and tunnel frames) for the notes when nothing
        was planned (a pipe)."""
        want = self.stream_want
        seen = self.by_key
        dec = None if self.planned or self.decoder_factory is None else self.decoder_factory()
        # a pipe: the payload hashes the plan of a file collects (``_scan``), to tell the decapsulated copies at
        # the end of the stream as a file's plan does (``_count_copies``)
        inner: dict[tuple, set] = {}
        plain: dict[tuple, list] = {}
        chosen: set | None = (
            set() if want is not None else set(self.chosen) if self.chosen is not None else None
        )
        for rec in records:
            key = interface_key(cap, rec[1], rec[3])
            st = seen.get(key)
            if st is None:
                st = seen[key] = _new_stats(cap, key, rec[3])
                if want is not None and chosen is not None and st.matches(want):
                    chosen.add(key)
                    self.chosen = frozenset(chosen)
            if not self.planned:
                st.frames += 1
            if dec is not None:
                _keep_payload(_payload(dec, rec[1], rec[2], rec[3]), key, inner, plain)
            if chosen is not None and key not in chosen:
                inp.frames_read += 1
                inp.bytes_read += len(rec[1])
                inp.skipped[SKIP_OTHER_INTERFACE] += 1
                if inp.first_ts_ns is None:
                    inp.first_ts_ns = rec[0]
                inp.last_ts_ns = rec[0]
                if dec is not None:
                    got = _payload(dec, rec[1], rec[2], rec[3])
                    st.tunnel_frames += got is not None and got[0]
                continue
            if dec is None:
                yield rec
                continue
            # a replayed record is classified by the replay itself (its classes: one decode per frame); one that
            # the -f filter then leaves out is classified here
            tunnel, bpf = inp.frames_replayed - inp.classes[CLS_NOT_TUNNEL], inp.filtered["bpf"]
            yield rec
            if inp.frames_replayed - inp.classes[CLS_NOT_TUNNEL] > tunnel:
                st.tunnel_frames += 1
            elif inp.filtered["bpf"] > bpf:
                got = _payload(dec, rec[1], rec[2], rec[3])
                st.tunnel_frames += got is not None and got[0]
        self.stream_end(cap, inner, plain, dec is not None)

    def stream_end(self, cap, inner: dict, plain: dict, hashed: bool) -> None:
        """After the last record: the sections and interfaces the labels say, and (``hashed``: the payloads of a
        pipe were kept, ``inner``/``plain`` as ``_scan`` fills them) the copies of tunnel frames' inner packets."""
        if cap.format == "pcapng":
            self.sections, self.interfaces = max(1, cap.sections), len(cap.all_interfaces)
        if hashed:
            _count_copies(self, inner, plain)

    def devices(self) -> int:
        """Devices the capture holds: its interfaces, the interfaces of one ``if_name`` in several pcapng
        sections counted once (``cat a.pcapng b.pcapng`` of two eth0 captures is one device)."""
        return len({st.group() for st in self.by_key.values()})

    def check(self) -> None:
        """After a pipe was read: ``--interface`` that named none of its interfaces is the error a file gives.
        Raises: CaptureError."""
        if self.stream_want is not None and not self.chosen:
            raise self._no_such(self.stream_want)

    def _no_such(self, want: str) -> CaptureError:
        names = "; ".join(self._labels(self.by_key)) or "none"
        return CaptureError(
            f"{self.path}: --interface {want}: no such interface (the capture holds: {names})"
        )

    def _labels(self, keys: Iterable) -> list[str]:
        return [self.by_key[k].label(self.sections, self.interfaces) for k in keys]

    def notes(self) -> list[str]:
        """One note when the capture held several interfaces (and the same packets twice, when it did)."""
        if self.devices() < 2:
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
            parts.append(f"{st.label(self.sections, self.interfaces)}: {st.frames:,} frames, {what}")
        head = f"the capture holds {len(self.by_key)} interfaces ({'; '.join(parts)})"
        chosen = " and ".join(self._labels(k for k in self.by_key if self.chosen and k in self.chosen))
        copies = [st for st in self.by_key.values() if st.copies]
        if copies:
            dup = ", ".join(f"{st.copies:,} on {st.label(self.sections, self.interfaces)}" for st in copies)
            whose = f"{chosen}'s tunnel frames" if self.chosen else "tunnel frames on another interface"
            head += (
                f", and the same packets twice: {dup} carry the inner packets of {whose} "
                "(decapsulated copies, which never reach the physical device's NAPI)"
            )
        if self.chosen is None:
            # a pipe without --interface (interfaces cannot be planned ahead on a stream): every one is replayed
            also = ", the copies too (counted there)" if copies else ""
            return [head + f"; all were replayed as one device's traffic{also}: --interface N chooses one"]
        why = self.reason if self.reason == "--interface" else f"{self.reason}; --interface chooses"
        return [f"{head}; replaying {chosen} only ({why})"]

    def as_list(self) -> list[dict]:
        return [
            st.as_dict(self.chosen is None or k in self.chosen, self.sections, self.interfaces)
            for k, st in self.by_key.items()
        ]


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
    """Read ``path`` once (a regular file; ``cap`` is its open Capture, not yet iterated) and choose the interfaces.

    ``decoder_factory()`` gives a ``packet.decode.Decoder`` with the replay's tunnel ports. The chosen interfaces
    are those ``want`` names (an ifindex, a pcapng interface index over all sections, or an ``if_name``: every
    section's interface of that name) or else the device with the most tunnel frames (an ``if_name`` counts
    over all sections). A pcapng file whose frames are all on one interface of a link type without an ifindex or
    copies to tell (not Linux cooked) has nothing to choose among: its blocks are walked to count the frames
    (``_one_interface``), and no frame is decoded (its tunnel frames are not counted; as for a classic pcap, no
    report line says them). Raises: CaptureError when ``want`` names no interface of the capture.
    """
    sel = Selection(path=path)
    if not may_hold_several(cap):
        if want is not None:
            raise CaptureError(f"{path}: --interface {want}: the capture holds one interface")
        return sel
    if not _regular_file(path):
        sel.stream_want = want
        sel.decoder_factory = decoder_factory
        sel.reason = "--interface"
        return sel
    sel.planned = True
    inner: dict[tuple, set] = {}
    plain: dict[tuple, list] = {}
    if cap.format != "pcapng" or not _one_interface(path, sel):
        _scan(path, decoder_factory(), sel, inner, plain)
    _choose(sel, want, inner, plain)
    return sel


def _one_interface(path: str, sel: Selection) -> bool:
    """Walk the pcapng file's blocks (no frame decoded, nothing hashed) counting each interface's frames; when they
    are all on one interface whose link type is not Linux cooked (v1 may hold copies, v2 carries ifindexes), fill
    ``sel`` with it and return True."""
    counts: dict[int, int] = {}  # interface (index in all_interfaces) → frames, in order of first frame
    with open_capture(path, digest=False) as scan:
        walker = PcapngChunks(scan)
        while (ch := walker.next()) is not None:
            assert ch.iface is not None
            ids, first = np.unique(ch.iface, return_index=True)
            for g in ids[np.argsort(first)].tolist():
                counts.setdefault(g, 0)
            for g, c in enumerate(np.bincount(ch.iface).tolist()):
                if c:
                    counts[g] += c
            if len(counts) > 1:
                return False
        for g, frames in counts.items():
            linktype = scan.all_interfaces[g][0]
            if linktype in (DLT_LINUX_SLL, DLT_LINUX_SLL2):
                return False
            sel.by_key[(g, None)] = st = _new_stats(scan, (g, None), linktype)
            st.frames = frames
        sel.sections, sel.interfaces = max(1, scan.sections), len(scan.all_interfaces)
    return True


def _scan(path: str, dec, sel: Selection, inner: dict, plain: dict) -> None:
    """Decode every frame of ``path``: each interface's frames and tunnel frames into ``sel.by_key``, the hashes of
    tunnel frames' inner payloads (``inner``) and of other frames' payloads (``plain``) by interface."""
    with open_capture(path, digest=False) as scan:
        for _ts, buf, orig_len, linktype in scan:
            key = interface_key(scan, buf, linktype)
            st = sel.by_key.get(key)
            if st is None:
                st = sel.by_key[key] = _new_stats(scan, key, linktype)
            st.frames += 1
            got = _payload(dec, buf, orig_len, linktype)
            if got is None:
                continue
            tunnel, payload = got
            if tunnel:
                st.tunnel_frames += 1
                if payload is not None:
                    inner.setdefault(key, set()).add(payload)
            elif payload is not None:
                plain.setdefault(key, []).append(payload)
        if scan.format == "pcapng":
            sel.sections, sel.interfaces = max(1, scan.sections), len(scan.all_interfaces)


def _choose(sel: Selection, want: str | None, inner: dict, plain: dict) -> None:
    """The interfaces ``want`` names, else the device with the most tunnel frames; the copies of tunnel frames'
    inner packets on the others (or, one device, on it). Raises: CaptureError when ``want`` names none."""
    if want is not None:
        match = frozenset(k for k, st in sel.by_key.items() if st.matches(want))
        if not match:
            raise sel._no_such(want)
        sel.chosen = match
        sel.reason = "--interface"
    elif len(sel.by_key) > 1:
        groups: dict[tuple, list] = {}
        for k, st in sel.by_key.items():
            groups.setdefault(st.group(), []).append(k)
        best = max(groups.values(), key=lambda ks: sum(sel.by_key[k].tunnel_frames for k in ks))
        if any(sel.by_key[k].tunnel_frames for k in best):
            sel.chosen = frozenset(best)
            sel.reason = "the interface that carries the tunnel traffic"
    _count_copies(sel, inner, plain)


def _keep_payload(got: tuple[bool, int | None] | None, key: tuple, inner: dict, plain: dict) -> None:
    """Keep one record's payload hash (``_payload``'s answer) as ``_scan`` does: a tunnel frame's inner payload in
    ``inner``, another frame's payload in ``plain``, by interface ``key``."""
    if got is None or got[1] is None:
        return
    if got[0]:
        inner.setdefault(key, set()).add(got[1])
    else:
        plain.setdefault(key, []).append(got[1])


def _count_copies(sel: Selection, inner: dict, plain: dict) -> None:
    """The frames whose L4 header and payload equal a tunnel frame's inner ones (``inner``/``plain``: payload hashes
    by interface, ``_scan``; ``inner``'s a set or an int64 array each): with one device ``unattributed_copies``;
    else each interface's ``copies`` of the chosen interfaces' tunnel frames, or, when every interface is replayed
    (a pipe without --interface), of any other interface's tunnel frames."""
    if sel.devices() == 1:  # one device (in one section or several): the copies cannot be told by interface
        hashes = [h for hs in plain.values() for h in hs]
        sel.unattributed_copies = _members(hashes, inner.values()) if hashes else 0
        return
    for k, hashes in plain.items():
        if sel.chosen is not None and k in sel.chosen:
            continue
        src = sel.chosen if sel.chosen is not None else [o for o in inner if o != k]
        sel.by_key[k].copies = _members(hashes, [inner[o] for o in src if o in inner])


def _members(hashes: list[int], refs: Iterable) -> int:
    """How many of ``hashes`` (with repeats) are in one of ``refs`` (sets or int64 arrays of hashes)."""
    if not hashes:
        return 0
    parts = [r if isinstance(r, np.ndarray) else np.fromiter(r, np.int64, len(r)) for r in refs]
    if not parts:
        return 0
    return int(np.count_nonzero(np.isin(np.array(hashes, np.int64), np.concatenate(parts))))
