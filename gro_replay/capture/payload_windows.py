"""The payload hashes of a capture's records (``record_payload``) and the windows of them capture/interfaces.py
``Selection`` keeps to sort other interfaces' tunnel frames as repeats of replayed ones or as left out (the latest
``COPY_WINDOW`` hashes each: memory bounded whatever the capture's size)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ..packet.decode import CLS_NOT_TUNNEL
from ..packet.headers import UNREAD, tunnel_port_of
from .linktypes import sent_by_host
from .reader import DLT_EN10MB, l2_normalize


def _l4_of(dec, buf: bytes, orig_len: int, linktype: int) -> tuple[bool, bytes, int, bool] | None:
    """``(is tunnel traffic, the frame as decoded, offset of its innermost L4 header or 0, cut short)`` of one record
    (``packet.decode.Decoder.decode``); a record cut short (captured < original length) or that does not decode is
    tunnel traffic when its outer headers go to a tunnel port (packet/headers.py ``tunnel_port_of``: the headers of
    a cut frame are whole), with no L4 offset. None when that is unknown: an unsupported link layer, or bytes that
    end before the outer UDP destination port."""
    eth = buf if linktype == DLT_EN10MB else l2_normalize(buf, linktype)
    if eth is None:
        return None
    cut = len(buf) < orig_len
    r = None if cut else dec.decode(eth)
    if r is None or isinstance(r, str):
        kind = tunnel_port_of(eth, dec.tunnel_ports)
        return None if kind == UNREAD else (kind is not None, eth, 0, cut)
    frame, _vlan, fid, _rss, l4 = r
    return dec.flow_class[fid] != CLS_NOT_TUNNEL, frame, l4, False


#: ``record_payload``'s answer for a frame the capturing host sent: not tunnel traffic, no payload hash, whole
SENT = (False, None, False)


def record_payload(
    dec, buf: bytes, orig_len: int, linktype: int, hashed: bool = True
) -> tuple[bool, int | None, bool] | None:
    """``(is tunnel traffic, hash of the L4 header and payload or None, cut short)`` of one record (no hash unless
    ``hashed``, nor for a frame that does not decode); None when whether it is tunnel traffic is unknown
    (``_l4_of``)."""
    if sent_by_host(buf, linktype):  # no receive path saw it: it decides no device and counts as no traffic
        return SENT
    got = _l4_of(dec, buf, orig_len, linktype)
    if got is None:
        return None
    tunnel, frame, l4, cut = got
    return tunnel, (hash(bytes(frame[l4:])) if l4 and hashed else None), cut


class Recent:
    """The latest ``size`` payload hashes seen (a window: memory bounded whatever the capture's size), each with a
    value: ``add`` keeps the newest, ``pop`` takes one out."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.d: OrderedDict[int, object] = OrderedDict()

    def add(self, h: int, value: object = None) -> None:
        d = self.d
        d[h] = value
        d.move_to_end(h)
        if len(d) > self.size:
            self._evicted(d.popitem(last=False)[1])

    def _evicted(self, value: object) -> None:
        """The value of the oldest hash, pushed out by a newer one (``Views``: frames no replayed frame matched)."""

    def __contains__(self, h: int) -> bool:
        return h in self.d

    def pop(self, h: int) -> object:
        return self.d.pop(h, None)


class Views(Recent):
    """The latest ``size`` payload hashes of left-out tunnel frames, each with the interfaces that read a frame of
    those bytes (a bond and a bridge above the slave: any number of views of one frame, read before the replayed
    view). The value is one interface key (the common case: one view, one frame) or a dict key → frames.

    ``shared`` is called with each dict of several interfaces that leaves the window unmatched (pushed out by newer
    hashes, or at the stream's end: ``settle``): frames of one payload that no replayed frame matched, seen on
    several interfaces left out (two slaves of one bond and the bond: the second slave's frames twice)."""

    def __init__(self, size: int, shared: Callable[[dict], None] | None = None) -> None:
        super().__init__(size)
        self.shared = shared

    def _evicted(self, seen: object) -> None:
        if self.shared is not None and isinstance(seen, dict) and len(seen) > 1:
            self.shared(seen)

    def settle(self) -> None:
        """The stream ended: every hash left is of frames no replayed frame matched (``shared`` each)."""
        for seen in self.d.values():
            self._evicted(seen)
        self.d.clear()

    def note(self, h: int, key: tuple) -> None:
        """Interface ``key`` read a tunnel frame of hash ``h``."""
        seen = self.d.get(h)
        if seen is None:
            self.add(h, key)
            return
        if not isinstance(seen, dict):
            seen = {seen: 1}
        seen[key] = seen.get(key, 0) + 1
        self.add(h, seen)

    def first(self, h: int) -> tuple | None:
        """The interface that read the first left-out tunnel frame of hash ``h`` still in the window, or None."""
        seen = self.d.get(h)
        return next(iter(seen)) if isinstance(seen, dict) else seen  # type: ignore[return-value]

    def match(self, h: int) -> list:
        """A replayed tunnel frame of hash ``h`` was read: the interfaces that read a frame of its bytes before,
        one frame of each taken out of the window (a repeat of it: one view of one frame per interface)."""
        seen = self.pop(h)
        if seen is None:
            return []
        if not isinstance(seen, dict):
            return [seen]
        rest = {key: n - 1 for key, n in seen.items() if n > 1}
        if rest:
            self.add(h, rest)
        return list(seen)


class Replayed(Recent):
    """The latest ``size`` payload hashes of replayed tunnel frames, each with how many were replayed and, per
    other interface, how many of its frames were matched to them as repeats (a frame of those bytes on another
    interface is a repeat while it has one left to match, read before or after: one view of one frame per
    interface; a keepalive sent again and again on a NIC that then failed over is that NIC's traffic). The value
    is the count alone while nothing was matched (the common case: a few dozen bytes less per hash), else
    ``[count, {interface key: frames matched}]``."""

    def replayed(self, h: int, matched: list) -> None:
        """One more replayed frame of hash ``h``, already matched to frames of interfaces ``matched`` (read
        before it)."""
        v: Any = self.d.get(h)
        if not matched and not isinstance(v, list):
            self.add(h, (v or 0) + 1)
            return
        if not isinstance(v, list):
            v = [v or 0, {}]
        v[0] += 1
        for key in matched:
            v[1][key] = v[1].get(key, 0) + 1
        self.add(h, v)

    def take(self, h: int, key: tuple) -> bool:
        """Whether a frame of hash ``h`` read on interface ``key`` (not replayed) is a repeat: a replayed frame of
        those bytes has no frame of ``key`` matched yet (it is matched now)."""
        v: Any = self.d.get(h)
        if v is None:
            return False
        if not isinstance(v, list):
            v = self.d[h] = [v, {}]
        got = v[1].get(key, 0)
        if got >= v[0]:
            return False
        v[1][key] = got + 1
        return True
