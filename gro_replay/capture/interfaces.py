"""Captures that hold several interfaces: ``tcpdump -i any`` (Linux cooked v2 carries the ifindex of each packet,
libpcap pcap/pcap-linktype.h ``LINKTYPE_LINUX_SLL2``) and pcapng files with several interface description blocks.

The replay models one physical device: one NAPI whose GRO (``napi->gro_hash``) sees that device's frames only
(net/core/gro.c ``napi_gro_receive`` is called by each driver for its own NAPI; gro-spec §1). A capture of several
interfaces holds what the others received too: the tunnel device's decapsulated copies (inner packets, which never
reach a physical device's NAPI), a bond's or bridge's second view of the same frames (``-i any`` taps the skb on
the slave in ``__netif_receive_skb_core`` and again on the master after ``bond_handle_frame`` returns
``RX_HANDLER_ANOTHER``: GRO ran once, on the slave's NAPI), and other NICs' traffic, which their own NAPIs merge.
Replaying two NICs' frames as one device would put them in one GRO list; replaying a bond and its slave would
count each frame twice. So one device is replayed, and what was left out is counted and said.

The choice is one rule for a file and for a pipe (read once; a pipe cannot be read ahead without bound), made as
the records are read (``Selection.filter``): ``--interface`` when given; else the device of the capture's first
tunnel frame (for a bond, the slave: its tap runs first; a frame cut short or malformed is one when its outer
headers go to a tunnel port, packet/headers.py ``tunnel_port_of``, though it is skipped). Records read before that frame are held, at most
``LOOKAHEAD_RECORDS`` records and ``LOOKAHEAD_BYTES`` bytes; when the look-ahead fills without a tunnel frame the
device with the most of its frames is replayed; a capture that ends before any tunnel frame replays every
interface. Interfaces that appear later are sorted as they appear (a pcapng interface block comes before its
packets; an ifindex with its first packet). Each other interface's tunnel frames are counted as repeats of the
replayed device's (the same frame: L4 header and payload of the innermost packet equal, a bond or bridge) or as
left out (another device's traffic: ``--interface`` replays it instead), its other frames as decapsulated copies
when they equal a replayed tunnel frame's inner packet. Payloads are hashed only where that can tell anything
(``Selection.hashed``): in a Linux cooked record, and in a pcapng record read after a second interface was
described (an interface block comes before its packets: before it, the capture is one interface, all replayed).
Memory: the look-ahead and two windows of the latest ``COPY_WINDOW`` payload hashes, whatever the capture's size
(a copy follows its tunnel frame within the same or the next NAPI poll of the tunnel device's gro_cells).
The batch path reads a pcapng capture in blocks by the same rule (capture/interface_chunks.py ``SelectedChunks``).

A pcapng file may be several sections (``cat a.pcapng b.pcapng``), each numbering its interfaces from 0: an
interface is (section, id), numbered here over the whole file in order of appearance (``interface_key``), and
interfaces of one ``if_name`` in several sections are one device (chosen together by default and by name).
A pcapng file whose frames are all on one interface of a link type that is not Linux cooked has nothing to
choose: for the frame-by-frame path interface_plan.py ``plan`` walks its blocks to count them (no frame
decoded); the batch path reads it once, as a stream, by the same rule (``SelectedChunks`` decodes no frame of the
common layout).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from ..packet.decode import Decoder
from ..project import shortened
from .interface_notes import interface_notes, unselected_words
from .interface_stats import InterfaceStats, _new_stats, interface_key, selector_number
from .payload_windows import SENT, Replayed, Views, record_payload
from .reader import DLT_LINUX_SLL, DLT_LINUX_SLL2, CaptureError
from .time_order import TimeOrder

#: Skip reason of the frames of an interface that is not replayed.
SKIP_OTHER_INTERFACE = "other_interface"

#: records held (and their bytes) while the replayed device is not known: no tunnel frame read yet
LOOKAHEAD_RECORDS = 4096
LOOKAHEAD_BYTES = 16 << 20
#: payload hashes kept to tell repeats and decapsulated copies (8 bytes each, about 100 with the dict's entry)
COPY_WINDOW = 65536


@dataclass
class Selection:
    """Which interfaces are replayed (the module docstring's rule), what each held, and the notes for the report.

    ``filter`` makes the choice as the records are read, for a file as for a pipe; ``planned`` only for a pcapng
    file whose frames are all on one interface that is not Linux cooked (``plan``: nothing to choose)."""

    #: ``--interface``: matched per interface as interfaces appear
    want: str | None = None
    #: keys of the replayed interfaces once the stream ended (or, planned, from the start); None: every interface
    chosen: frozenset | None = None
    #: the replayed device (``InterfaceStats.group``) once chosen without ``--interface``
    device: tuple | None = None
    decided: bool = False
    planned: bool = False  # by_key was filled by walking the file's blocks: one interface, nothing to choose
    #: ``packet.decode.Decoder`` factory: each record's class and payload hash as it is read
    decoder_factory: Callable[[], Decoder] | None = None
    #: one device: packets that appear as a tunnel frame's inner packet and again on their own
    unattributed_copies: int = 0
    by_key: dict = field(default_factory=dict)  # key → InterfaceStats, in order of first frame
    reason: str = ""
    #: pcapng sections of the file and interfaces declared in them (what labels say: ``InterfaceStats.label``)
    sections: int = 1
    interfaces: int = 1
    path: str = ""
    # what reading holds (``_begin``): the decoder, the windows of payload hashes, records read so far, and the
    # look-ahead's counts while the device is not known
    _dec: Decoder | None = field(default=None, init=False, repr=False)
    _inner: Replayed = field(default_factory=lambda: Replayed(COPY_WINDOW), init=False, repr=False)
    _left: Views = field(default_factory=lambda: Views(COPY_WINDOW), init=False, repr=False)
    _index: int = field(default=0, init=False, repr=False)
    _held: int = field(default=0, init=False, repr=False)
    _held_bytes: int = field(default=0, init=False, repr=False)
    _held_count: dict = field(default_factory=dict, init=False, repr=False)
    _held_first: dict = field(default_factory=dict, init=False, repr=False)
    #: pcapng: the interfaces declared that held no frame, and those whose only records were cut before their
    #: ifindex (``_idle``), for ``_no_such``
    idle: list = field(default_factory=list, init=False, repr=False)
    cut_only: list = field(default_factory=list, init=False, repr=False)
    #: the pcapng interfaces (None: a classic pcap) of the records of no known interface
    _unknown_at: set = field(default_factory=set, init=False, repr=False)
    #: the records whose interface is unknown: Linux cooked v2 ones cut before their ifindex (``_stats``)
    _unknown: InterfaceStats = field(
        default_factory=lambda: InterfaceStats((None, None), None, None, DLT_LINUX_SLL2),
        init=False,
        repr=False,
    )
    #: the time order of the records handed on to the replay, counted as they are (``filter``, ``_planned``,
    #: capture/interface_chunks.py ``SelectedChunks``); None until reading starts
    time_order: TimeOrder | None = field(default=None, init=False, repr=False)

    def member(self, st: InterfaceStats) -> bool:
        """True when ``st``'s frames are replayed (every interface while nothing is decided; records of no known
        interface always: the replay skips them, cut short, as ``snaplen_cut``)."""
        if st is self._unknown:
            return True
        if self.want is not None:
            return st.matches(self.want)
        if self.planned:
            return self.chosen is None or st.key in self.chosen
        return self.device is None or st.group() == self.device

    def filter(self, cap, records: Iterable, inp) -> Iterator:
        """The records of the replayed interfaces, in capture order; the others counted in ``inp`` (read, bytes,
        ``other_interface``) and in ``by_key`` (frames, tunnel frames, repeats, copies). Holds at most
        ``LOOKAHEAD_RECORDS`` records / ``LOOKAHEAD_BYTES`` bytes until the replayed device is known. The batch
        path reads a pcapng capture in blocks instead (capture/interface_chunks.py ``SelectedChunks``: the same
        ``_hold`` and ``_route`` of each record)."""
        if self.planned:
            yield from self._planned(cap, records, inp)
            return
        self._begin()
        assert self.time_order is not None
        in_order = self.time_order.add
        held: deque = deque()
        for rec in records:
            st = self._stats(cap, interface_key(cap, rec[1], rec[3]), rec[3])
            st.frames += 1
            got = record_payload(self._dec, rec[1], rec[2], rec[3], self.hashed(cap, self._index, rec[3]))
            # the first record read, whichever is replayed, but one the host sent (no arrival)
            if inp.first_ts_ns is None and got is not SENT:
                inp.first_ts_ns = rec[0]
            self._index += 1
            held.append((rec, st, got))
            if not self.decided and not self._hold(st, got is not None and got[0], len(rec[1]), got is SENT):
                continue
            while held:
                rec, st, got = held.popleft()
                if self._route(st, got):
                    if got is not SENT:  # a frame the host sent is no arrival: its time orders nothing
                        in_order(rec[0])
                    yield rec
                else:
                    _skip(rec, inp)
        # the end before any tunnel frame: every interface is replayed
        while held:
            rec, st, got = held.popleft()
            self._route(st, got)
            if got is not SENT:
                in_order(rec[0])
            yield rec
        self.stream_end(cap)

    def _begin(self) -> None:
        """Start reading: the decoder, the windows of payload hashes, nothing held, ``--interface`` decided."""
        assert self.decoder_factory is not None  # plan sets one for every capture it does not plan
        self._dec = self.decoder_factory()
        self.decided = self.want is not None
        if self.decided:
            self.reason = "--interface"
        # the replayed tunnel frames' inner payload hashes; the left-out ones' with their interface (a repeat of
        # one may be replayed later)
        self._inner = Replayed(COPY_WINDOW)
        self._left = Views(COPY_WINDOW, self._shared)
        self._index = 0
        self._held = 0
        self._held_bytes = 0
        self._held_count = {}
        self._held_first = {}
        self.time_order = TimeOrder()

    def _shared(self, seen: dict) -> None:
        """Frames of one payload left out on several interfaces (``Views``: ``seen``, key → frames, in order of
        first read) that no replayed frame matched: each later interface's are also the first one's, one frame of
        each matched (``InterfaceStats.also``)."""
        first, *later = seen
        for k in later:
            also = self.by_key[k].also
            also[first] = also.get(first, 0) + min(seen[k], seen[first])

    def _stats(self, cap, key: tuple, linktype: int) -> InterfaceStats:
        """The ``InterfaceStats`` of ``key``, added (in order of first frame) when new; for a Linux cooked v2 record
        cut before its ifindex, ``_unknown``: no interface of the capture, replayed wherever it was received, so
        that the replay counts it cut short (``snaplen_cut``)."""
        if linktype == DLT_LINUX_SLL2 and key[1] is None:
            self._unknown_at.add(key[0])
            return self._unknown
        st = self.by_key.get(key)
        if st is None:
            st = self.by_key[key] = _new_stats(cap, key, linktype)
            if self.want is not None:
                # a number that names two devices is known with the second one's first frame: refused there, not
                # after the rest of the capture was read (labelled by the sections and interfaces declared so far)
                if cap.format == "pcapng":
                    self.sections, self.interfaces = max(1, cap.sections), len(cap.all_interfaces)
                self._refuse_ambiguous([k for k, s in self.by_key.items() if self.member(s)])
        return st

    @staticmethod
    def hashed(cap, index: int, linktype: int) -> bool:
        """True when record ``index`` (0: the first after the file header) needs its payload hash: a Linux cooked
        record (an ``-i any`` capture: copies on one device or another ifindex), or a pcapng record read after a
        second interface was described (``Capture.iface_records``). Before that the capture is one interface, whose
        frames are all replayed: there is nothing to tell apart."""
        if linktype in (DLT_LINUX_SLL, DLT_LINUX_SLL2):
            return True
        at = cap.iface_records
        return cap.format == "pcapng" and len(at) > 1 and index >= at[1]

    def _hold(self, st: InterfaceStats, tunnel: bool, size: int, sent: bool = False) -> bool:
        """One more record (of ``st``, ``size`` bytes) read before the replayed device is known: True when it
        decides (a tunnel frame: its device; the look-ahead full: the device that received the most frames held,
        a frame the capturing host ``sent``, or of no known interface, counting for none)."""
        sent = sent or st is self._unknown
        if tunnel:
            self._decide(st, "the interface of the capture's first tunnel frame")
            return True
        self._held += 1
        self._held_bytes += size
        g = st.group()
        self._held_count[g] = self._held_count.get(g, 0) + (not sent)
        self._held_first.setdefault(g, st)
        if self._held < LOOKAHEAD_RECORDS and self._held_bytes < LOOKAHEAD_BYTES:
            return False
        count = self._held_count
        if not any(count.values()):
            # every frame held was one the host sent (skipped as outgoing wherever it is): none decides the device;
            # they go on, and the look-ahead starts again
            self._held = self._held_bytes = 0
            count.clear()
            self._held_first.clear()
            return True
        why = f"no tunnel frame among the first {self._held:,} frames: the interface that received the most of them"
        self._decide(self._held_first[max(count, key=lambda g: count[g])], why)
        return True

    def _decide(self, st: InterfaceStats, reason: str) -> None:
        self.device, self.reason, self.decided = st.group(), reason, True

    def _route(self, st: InterfaceStats, got) -> bool:
        """Count one record (``got``: ``record_payload``'s answer) in ``st`` and in the windows of payload hashes; True
        when it is replayed."""
        if got is SENT:  # skipped as outgoing wherever it is (sim/skipped.py received_frame), never another's
            st.sent += 1
            return True
        tunnel = got is not None and got[0]
        h = None if got is None else got[1]
        st.tunnel_frames += tunnel
        st.tunnel_cut += tunnel and got[2]
        st.unread += got is None
        inner, left = self._inner, self._left
        if self.member(st):
            if tunnel and h is not None:
                # a tunnel frame of another interface read before this one with its bytes was this frame, seen
                # there first: a repeat (one per interface)
                matched = left.match(h)
                for other in matched:
                    self.by_key[other].repeats += 1
                inner.replayed(h, matched)
            elif h is not None and h in inner:
                st.copies += 1
            elif h is not None and (src := left.first(h)) is not None:  # the inner packet of a frame left out
                st.decapsulated[src] = st.decapsulated.get(src, 0) + 1
            return True
        if tunnel and h is not None:
            if inner.take(h, st.key):
                st.repeats += 1
            else:
                left.note(h, st.key)
        elif h is not None and h in inner:
            st.copies += 1
        return False

    def _planned(self, cap, records: Iterable, inp) -> Iterator:
        """A planned file (one interface, frames counted by ``plan``): its records, unless ``--interface`` named
        another."""
        self.time_order = order = TimeOrder()
        for rec in records:
            if self.member(self.by_key[interface_key(cap, rec[1], rec[3])]):
                order.add(rec[0])
                yield rec
            else:
                _skip(rec, inp)

    def stream_end(self, cap) -> None:
        """After the last record: the sections and interfaces the labels say, the replayed keys, and for one
        device of a Linux cooked capture the copies on it."""
        if cap.format == "pcapng":
            self.sections, self.interfaces = max(1, cap.sections), len(cap.all_interfaces)
            self._idle(cap)
        if self.decided and self.by_key:
            self.chosen = frozenset(k for k, st in self.by_key.items() if self.member(st))
        self._left.settle()
        if self.devices() == 1:
            cooked = any(st.linktype in (DLT_LINUX_SLL, DLT_LINUX_SLL2) for st in self.by_key.values())
            self.unattributed_copies = sum(st.copies for st in self.by_key.values()) if cooked else 0
            for st in self.by_key.values():
                st.copies = 0

    def replayed_time_order(self) -> tuple[TimeOrder, list[str]] | None:
        """After the last record: the time order of the records handed on to the replay (capture/time_order.py),
        with the labels of the replayed interfaces when some interface read was not replayed (none when every
        record read was: the count is then the capture's); None when no record went through the selection (a
        capture of one interface: the reader's count, of every record, is the replayed one's)."""
        if self.time_order is None:
            return None
        if self.chosen is None or all(k in self.chosen for k in self.by_key):
            return self.time_order, []
        return self.time_order, self._labels(k for k in self.by_key if k in self.chosen)

    def devices(self) -> int:
        """Devices the capture holds: its interfaces, the interfaces of one ``if_name`` in several pcapng
        sections counted once (``cat a.pcapng b.pcapng`` of two eth0 captures is one device)."""
        return len({st.group() for st in self.by_key.values()})

    def check(self) -> None:
        """After the capture was read: ``--interface`` that named none of its interfaces (a number that names two
        devices is refused as it is read: ``_refuse_ambiguous``). Raises: CaptureError."""
        if self.want is None or self.planned:
            return
        if not self.chosen:
            raise self._no_such(self.want)

    def _idle(self, cap) -> None:
        """``idle``: the interfaces ``cap`` (pcapng, read to its end) declares of which no record was read;
        ``cut_only``: those whose records were all cut before their ifindex."""
        used = {k[0] for k in self.by_key}
        unused = [(i, lt) for i, (lt, _n) in enumerate(cap.all_interfaces) if i not in used]
        self.idle = [_new_stats(cap, (i, None), lt) for i, lt in unused if i not in self._unknown_at]
        self.cut_only = [_new_stats(cap, (i, None), lt) for i, lt in unused if i in self._unknown_at]

    def _refuse_ambiguous(self, matched: list) -> None:
        """Refuse ``--interface N`` when N is both an ifindex of Linux cooked v2 packets and another interface's
        pcapng number among the interfaces met so far (``ambiguous``); ``matched``: the keys it selects, named in
        the error. Called as each interface's first frame is read (``_stats``), so the capture is refused at the
        frame that makes it ambiguous. Raises: CaptureError."""
        n = selector_number(self.want or "")
        if n is not None and n in self.ambiguous():
            raise CaptureError(
                f"{self.path}: --interface {shortened(self.want or '', 40)} names two devices here "
                f"({' and '.join(self._labels(matched))}), "
                f"and GRO runs on one: a number is the ifindex of Linux cooked v2 packets and the pcapng interface "
                f"number of the others; give --interface ifindex={n} or --interface index={n}"
            )

    def ambiguous(self) -> frozenset[int]:
        """Numbers that are both an ifindex of one interface's packets and another interface's index here."""
        ifindexes = {k[1] for k in self.by_key if k[1] is not None}
        return frozenset(k[0] for k in self.by_key if k[1] is None and k[0] in ifindexes)

    def _no_such(self, want: str) -> CaptureError:
        """The error for ``--interface want`` naming none of the interfaces; a number that is the pcapng interface
        id of an ``-i any`` capture (whose packets carry ifindexes, which a number selects: ``matches``) says so
        and names the ifindexes; an interface declared that holds no frame is said so (``idle``)."""
        lab = (self.sections, self.interfaces)
        names = self._labels(self.by_key)
        quiet = [(st.label(*lab), "no frames", st.matches(want)) for st in self.idle]
        quiet += [
            (st.label(*lab), "only records cut before their ifindex", st.matches(want))
            for st in self.cut_only
        ]
        named, holds = unselected_words(names, quiet, self._unknown.frames)
        if named:
            return CaptureError(f"{self.path}: --interface {shortened(want, 40)}: {named}")
        hint = ""
        number = selector_number(want.removeprefix("index="))
        if number is not None:
            ifindexes = sorted({k[1] for k in self.by_key if k[0] == number and k[1] is not None})
            if ifindexes:
                amb = self.ambiguous()
                hint = (
                    f"; pcapng interface {number} is a Linux cooked v2 capture (tcpdump -i any) whose packets "
                    "carry the ifindex of their device, which a number selects: "
                    + " or ".join(f"--interface {'ifindex=' if i in amb else ''}{i}" for i in ifindexes)
                )
        return CaptureError(
            f"{self.path}: --interface {shortened(want, 40)}: no such interface ({holds}){hint}"
        )

    def _labels(self, keys: Iterable) -> list[str]:
        return [self.by_key[k].label(self.sections, self.interfaces) for k in keys]

    def _replayed(self, k: tuple) -> bool:
        return self.chosen is None or k in self.chosen

    def notes(self) -> list[str]:
        """The note on the capture's interfaces (capture/interface_notes.py ``interface_notes``)."""
        return interface_notes(
            self.by_key,
            self.chosen,
            self.reason,
            (self.sections, self.interfaces),
            self.unattributed_copies,
            self.ambiguous(),
        )

    def as_list(self) -> list[dict]:
        amb = self.ambiguous()
        kept = [st for k, st in self.by_key.items() if self._replayed(k)]
        labels = {k: st.label(self.sections, self.interfaces) for k, st in self.by_key.items()}
        return [
            st.as_dict(self._replayed(k), self.sections, self.interfaces, amb, kept, labels)
            for k, st in self.by_key.items()
        ]


def _skip(rec, inp) -> None:
    """Count a record of an interface that is not replayed in ``inp`` (``sim.ingest.InputStats``)."""
    inp.frames_read += 1
    inp.bytes_read += len(rec[1])
    inp.skipped[SKIP_OTHER_INTERFACE] += 1
    if inp.first_ts_ns is None:
        inp.first_ts_ns = rec[0]
    inp.last_ts_ns = rec[0]
