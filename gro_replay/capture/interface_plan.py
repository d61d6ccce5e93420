"""Which interfaces of a capture the replay reads, planned before it reads (capture/interfaces.py ``Selection``):
for a pcapng file of one interface, nothing to choose (``plan`` walks its blocks); for any other capture that may
hold several, ``Selection.filter`` chooses as the records are read."""

from __future__ import annotations

import numpy as np

from ..project import shortened
from .interface_stats import _new_stats
from .interfaces import Selection
from .pcapng_chunks import PcapngChunks
from .reader import DLT_LINUX_SLL, DLT_LINUX_SLL2, CaptureError, open_capture
from .spool import is_regular_file


def may_hold_several(cap) -> bool:
    """True for inputs that can carry several interfaces: pcapng, Linux cooked v2 (per-packet ifindex), or Linux
    cooked v1 (``tcpdump -i any`` without the ifindex: only the copies can be told, by their bytes)."""
    return cap.format == "pcapng" or cap.linktype in (DLT_LINUX_SLL2, DLT_LINUX_SLL)


def plan(path: str, cap, decoder_factory, want: str | None, batch: bool = False) -> Selection:
    """The interface selection of ``cap`` (open, not yet iterated; ``path`` names it in errors, ``cap.source`` is
    the file opened): ``Selection.filter`` chooses as the records are read (the module docstring's rule), the same
    for a file and a pipe. ``decoder_factory()``
    gives a ``packet.decode.Decoder`` with the replay's tunnel ports. For the frame-by-frame path (``batch``
    False), a regular pcapng file whose frames are all on one interface of a link type without an ifindex or
    copies to tell (not Linux cooked) has nothing to choose: its blocks are walked to count the frames
    (``_one_interface``) and no frame is decoded. The batch path (``batch``) reads a pcapng file as a stream, once,
    choosing as it reads without decoding a frame of the common layout (capture/interface_chunks.py
    ``SelectedChunks``): walking the file first would read it twice. Raises: CaptureError when ``want`` names no
    interface of a planned file or of a capture that holds one interface (a streamed selection raises it at the
    end: ``Selection.check``).
    """
    sel = Selection(path=path, want=want, decoder_factory=decoder_factory)
    if not may_hold_several(cap):
        if want is not None:
            raise CaptureError(f"{path}: --interface {shortened(want, 40)}: the capture holds one interface")
        return sel
    if want is not None and cap.format != "pcapng" and cap.linktype == DLT_LINUX_SLL:
        # its records carry no ifindex and the file no interface: nothing a selector can name
        raise CaptureError(
            f"{path}: --interface {shortened(want, 40)}: a Linux cooked v1 capture names no interface (its "
            "packets carry no ifindex; a LINUX_SLL2 capture's do: tcpdump -i any -y LINUX_SLL2)"
        )
    if (
        cap.format == "pcapng"
        and not batch
        and is_regular_file(cap.source)
        and _one_interface(cap.source, sel)
    ):
        sel.planned = True
        if want is not None:
            match = frozenset(k for k, st in sel.by_key.items() if st.matches(want))
            if not match:
                raise sel._no_such(want)
            sel.chosen, sel.reason = match, "--interface"
    return sel


def _one_interface(path: str, sel: Selection) -> bool:
    """Walk the pcapng file's blocks (no frame decoded, nothing hashed) counting each interface's frames; when they
    are all on one interface whose link type is not Linux cooked (v1 may hold copies, v2 carries ifindexes), fill
    ``sel`` with it and return True."""
    counts: dict[int, int] = {}  # interface (index in all_interfaces) → frames, in order of first frame
    with open_capture(path, digest=None) as scan:
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
        sel._idle(scan)
    return True
