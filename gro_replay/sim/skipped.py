"""Frames skipped before the replay, read for where they were going: a record cut short (``snaplen_cut``) or
refused by the decoder (``malformed:*``) holds its outer headers, so its outer UDP destination port says whether it
is tunnel traffic (packet/headers.py ``tunnel_port_of``); an unsupported link layer, or bytes that end before that
port, leave it unknown. ``count_skip`` is the one count of every such skip, on both replay paths
(``Ingest._decoded``, the batch path's ``FlowTracking._account``); the notes and the verdict read it
(``InputStats.skipped_seen``; report/verdict/words.py ``hidden_text``) so that nothing said of the capture's tunnel traffic covers frames it did not see.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..capture.linktypes import (
    DLT_EN10MB,
    DLT_LINUX_SLL,
    DLT_LINUX_SLL2,
    LINK_HEADER_LEN,
    RAW_LINKTYPES,
    l2_normalize,
    sent_by_host,
)
from ..packet.decode import SKIP_LINK_HEADER, SKIP_LINKTYPE, SKIP_OUTER_IP, SKIP_OUTGOING, SKIP_SNAPLEN
from ..packet.headers import UNREAD, data_end, tunnel_port_of

#: ``inp`` below: sim/ingest.py ``InputStats`` (not imported: ingest imports this module)
InputStats = Any


def count_skip(inp: InputStats, reason: str, buf: bytes | None, linktype: int, tunnel_ports: dict) -> None:
    """Count one frame skipped for ``reason`` in ``inp.skipped`` and, by what its headers say (``buf``: the record
    as captured, of link type ``linktype``; None when not read), in ``inp.skipped_seen``: reason → tunnel kind or
    ``UNREAD`` → frames (frames to no tunnel port are not listed)."""
    inp.skipped[reason] += 1
    if reason == SKIP_LINKTYPE or buf is None:
        kind: str | None = UNREAD
    else:
        kind = tunnel_port_of(l2_normalize(buf, linktype), tunnel_ports)
    if kind is not None:
        inp.skipped_seen.setdefault(reason, Counter())[kind] += 1


def to_tunnel_ports(inp: InputStats, received: bool | None = None) -> dict[str, dict[str, int]]:
    """JSON ``input.skipped_to_tunnel_ports``: reason → tunnel kind → frames skipped that go to a tunnel port.
    ``received``: True, only the reasons of frames some host received (not ``outgoing``: no receive path's GRO sees
    a frame its host sent); False, only ``outgoing``; None, every reason."""
    seen = getattr(inp, "skipped_seen", {})
    out = {r: {k: n for k, n in sorted(c.items()) if k != UNREAD and n} for r, c in sorted(seen.items())}
    return {r: c for r, c in out.items() if c and (received is None or (r == SKIP_OUTGOING) != received)}


def unread(inp: InputStats) -> dict[str, int]:
    """JSON ``input.skipped_unread``: reason → frames skipped whose headers end before their outer UDP destination
    port (or whose link layer is not read): whether they are tunnel traffic is unknown."""
    seen = getattr(inp, "skipped_seen", {})
    return {r: c[UNREAD] for r, c in sorted(seen.items()) if c.get(UNREAD)}


def unread_count(inp: InputStats, reason: str) -> int:
    """Frames skipped for ``reason`` whose headers were not read to their UDP port (``unread``)."""
    return unread(inp).get(reason, 0)


def hidden_tunnel_frames(inp: InputStats, received: bool = False) -> int:
    """Frames to a tunnel port that were skipped (``to_tunnel_ports``), every kind and reason (``received``: but
    ``outgoing``, frames the capturing host sent)."""
    return sum(sum(c.values()) for c in to_tunnel_ports(inp, received or None).values())


def received_frame(
    inp: InputStats, ts_ns: int, buf: bytes, orig_len: int, linktype: int, ports: dict
) -> bytes | None:
    """One record read (``Ingest._decoded``): its Ethernet frame, or None with the record counted as skipped. A
    Linux cooked frame the capturing host sent (capture/linktypes.py ``sent_by_host``: its link header is whole
    even cut short) is ``outgoing``: no receive path saw it, and its time is no arrival (``first_ts_ns``,
    ``last_ts_ns`` are the others'). A record cut short is ``snaplen_cut``; one that states a wire length below
    its bytes is counted (``caplen_over_orig_len``) and replayed; one of another link type is converted
    (capture/linktypes.py ``l2_normalize``), or skipped: ``malformed:link_header`` when too short for its link
    header, ``malformed:outer_ip`` for a raw IP record of IP version neither 4 nor 6, else
    ``unsupported_link_layer``."""
    if sent_by_host(buf, linktype):
        count_skip(inp, SKIP_OUTGOING, buf, linktype, ports)
        return None
    if inp.first_ts_ns is None:
        inp.first_ts_ns = ts_ns
    inp.last_ts_ns = ts_ns
    if len(buf) != orig_len:
        if len(buf) < orig_len:
            count_skip(inp, SKIP_SNAPLEN, buf, linktype, ports)
            return None
        inp.caplen_over_orig_len += 1
    inp.cooked_frames += linktype in (DLT_LINUX_SLL, DLT_LINUX_SLL2)
    eth = buf if linktype == DLT_EN10MB else l2_normalize(buf, linktype)
    if eth is None:
        # a record too short for its link header is malformed, and so is a raw IP record of IP version neither 4
        # nor 6 (breaker61): not of a link layer left unread
        if len(buf) < LINK_HEADER_LEN.get(linktype, 0):
            reason = SKIP_LINK_HEADER
        else:
            reason = SKIP_OUTER_IP if linktype in RAW_LINKTYPES else SKIP_LINKTYPE
        count_skip(inp, reason, None, linktype, ports)
        return None
    return eth


def past_datagram(inp: InputStats, frame: bytes) -> None:
    """Count the Ethernet ``frame`` replayed in ``inp.frames_past_datagram`` (by those bytes) when it carries bytes
    past its own (packet/headers.py ``data_end``: its outer IP datagram, or Ethernet padding): a trailer, or an FCS
    the capture does not show to be one (an FCS that verifies was removed by the record reader: capture/fcs.py).
    It is replayed as it is, as the kernel receives it: GRO flushes it for its length (inet_gro_receive,
    ipv6_gro_receive) and ``ip_rcv_core`` trims it after."""
    end = data_end(frame)
    if end is not None and len(frame) > end:
        inp.frames_past_datagram[len(frame) - end] += 1
