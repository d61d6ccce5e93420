"""The batch path's reading of a pcapng or Linux cooked (``tcpdump -i any``) capture whose interface is chosen as
it is read (capture/interfaces.py ``Selection``): the block walker's blocks (pcapng_chunks.py ``PcapngChunks``, or
chunks.py ``PcapChunks`` for a classic pcap), each with the records of the interfaces not replayed marked as skipped
(``RecordChunk.skip``: every record keeps its capture index), its cooked records rewritten as the Ethernet frames
the replay reads (cooked.py ``as_ethernet``) and its columns (packet/columns.py ``analyse``,
``RecordChunk.columns``: the batch path's own).

The same rule as ``Selection.filter``, record by record in capture order (``Selection._hold`` while the device is
not known, ``Selection._route`` for a record whose payload hash counts: ``Selection.hashed``), read from the
blocks' columns: each record's interface (the pcapng interface column, a Linux cooked v2 record's ifindex) and
whether it is tunnel traffic — a frame of the common layout (``Columns.common``, UDP to a tunnel port with
every length field consistent) is, as ``packet.decode.Decoder`` finds it; any other record, and every record
whose payload hash counts, is decoded by the selection's decoder (``payload_windows.record_payload``). A
capture of one interface is therefore read without decoding a common frame twice or hashing anything.

Memory: the walker's block; while the device is not known (no tunnel frame yet) the records read are kept in it
(the walker's buffer grows, up to ``LOOKAHEAD_BYTES`` and a block, and shrinks back once they are handed on).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..packet.columns import analyse
from .chunks import RecordChunk
from .cooked import as_ethernet
from .interface_stats import InterfaceStats
from .interfaces import Selection
from .payload_windows import SENT, record_payload
from .reader import DLT_EN10MB, DLT_LINUX_SLL, DLT_LINUX_SLL2


class SelectedChunks:
    """``PcapChunks.next``'s contract over ``reader`` (a ``PcapngChunks`` or a ``PcapChunks`` of ``cap``), each
    chunk's other-interface records marked (``RecordChunk.skip``), its Linux cooked records as Ethernet frames
    (cooked.py ``as_ethernet``, ``limit``: ``--resegment``'s, bytes) and its columns attached
    (``RecordChunk.columns``, of ``vxlan_ports``/``geneve_ports``); ``sel`` counts every interface's frames as
    ``Selection.filter`` does and is ended (``Selection.stream_end``) when the reader is."""

    def __init__(
        self,
        sel: Selection,
        cap,
        reader,
        vxlan_ports: Iterable[int],
        geneve_ports: Iterable[int],
        limit: int | None = None,
    ):
        self.sel, self.cap, self.reader = sel, cap, reader
        self.ports = (tuple(vxlan_ports), tuple(geneve_ports))
        self.limit = limit  # --resegment's: longer cooked frames stay cooked (cooked.py ``as_ethernet``)
        sel._begin()
        self._sts: list[InterfaceStats] = []  # every interface met, by id
        self._id_of: dict[int, int] = {}  # interface code (``_codes``) → id
        self._last: RecordChunk | None = None
        self._replayed = np.zeros(0, bool)  # of the last chunk's records
        # records read while the device is not known (at the start of the chunk, after the routed ones)
        self._pend: tuple | None = None
        #: of the records the last chunk marked, those the capturing host sent (``_take``)
        self._sent = np.zeros(0, bool)
        self._ended = False

    def next(self, keep: int | None = None) -> RecordChunk | None:
        last = self._last
        prev = np.zeros(0, bool)
        if last is not None:
            assert last.starts is not None
            k = len(last) if keep is None else int(np.searchsorted(last.starts, keep))
            prev = self._replayed[k:]
            last.columns = None
        self._last = None
        got = self._read(keep)
        fresh = len(prev)
        marks = None
        while got is not None:
            marks = self._take(*got, fresh)
            if marks is not None:
                break
            # the device is not known yet: keep every record read and read on
            fresh = len(got[0])
            got = self._read(got[0].record_start(0))
        if got is None:
            if not self._ended:
                self._ended = True
                self.sel.stream_end(self.cap)
            return None
        ch = got[0]
        assert marks is not None
        self._replayed = np.concatenate([prev, marks]) if len(prev) else marks
        # the records marked now (after those kept from the last chunk), in capture order: the replayed ones' times
        assert self.sel.time_order is not None and len(self._replayed) == len(ch)
        self.sel.time_order.add_records(ch.ts_ns[len(prev) :][marks & ~self._sent])
        ch.skip = None if self._replayed.all() else ~self._replayed
        self._last = ch
        return ch

    def _read(self, keep: int | None) -> tuple[RecordChunk, RecordChunk] | None:
        """The reader's next chunk (``keep``: as ``PcapChunks.next``) with its Linux cooked records as Ethernet
        frames and its columns (cooked.py ``as_ethernet``, else packet/columns.py ``analyse``), and the chunk as
        read (its records' link types and cooked headers: their ifindexes), valid until the next read; None at the
        end."""
        raw = self.reader.next(keep)
        if raw is None:
            return None
        ch = as_ethernet(raw, *self.ports, self.limit)
        if ch.columns is None:
            ch.columns = analyse(ch.buf, ch.data, ch.caplen, *self.ports)
        return ch, raw

    def _take(self, ch: RecordChunk, raw: RecordChunk, fresh: int) -> np.ndarray | None:
        """Read records ``fresh:`` of ``ch`` (those before were read already; ``raw``: the chunk as read, whose
        records' link types and interfaces are theirs): each interface's frames, the device when it is decided; the
        replayed marks of the records not yet routed (the held ones first), or None while the device is not known
        and the capture goes on."""
        sel, cap = self.sel, self.cap
        col = ch.columns
        n = len(ch)
        assert ch.linktype is not None and raw.linktype is not None
        lt = ch.linktype[fresh:]
        sid = self._ids(raw, fresh)
        for i, c in enumerate(np.bincount(sid, minlength=len(self._sts)).tolist()):
            self._sts[i].frames += c
        index = sel._index + np.arange(n - fresh)
        sel._index += n - fresh
        at = cap.iface_records
        read_lt = raw.linktype[fresh:]
        hashed = (read_lt == DLT_LINUX_SLL) | (read_lt == DLT_LINUX_SLL2)
        if len(at) > 1:
            hashed |= index >= at[1]
        common = col.common[fresh:] & (lt == DLT_EN10MB)
        # a common frame is tunnel traffic by its headers, whole or cut short (``record_payload`` says the same),
        # and a whole one decodes as its columns read it: its payload hash, where it counts, is that of the bytes
        # from its inner TCP header on (``Columns.l4``), as ``record_payload`` takes it (a record cut short, its
        # datagram whole and what followed it not: ``record_payload`` reads no hash of it, and says it is cut)
        tunnel = common.copy()
        cut = ch.caplen[fresh:] < ch.origlen[fresh:]
        unread = np.zeros(len(tunnel), bool)
        sent = np.zeros(len(tunnel), bool)  # frames the capturing host sent (``interfaces.SENT``)
        gots: dict[int, object] = {}
        both = np.flatnonzero(common & hashed & ~cut)
        if len(both):
            rec_at = ch.data[fresh:][both]
            heads, ends = (
                (rec_at + col.l4[fresh:][both]).tolist(),
                (rec_at + ch.caplen[fresh:][both]).tolist(),
            )
            buf = ch.buf
            for i, a, b in zip(both.tolist(), heads, ends, strict=True):
                gots[i] = (True, hash(bytes(buf[a:b])), False)
        for i in np.flatnonzero(~common | (hashed & cut)).tolist():
            o, c = int(ch.data[fresh + i]), int(ch.caplen[fresh + i])
            got = record_payload(
                sel._dec, bytes(ch.buf[o : o + c]), int(ch.origlen[fresh + i]), int(lt[i]), hashed[i]
            )
            tunnel[i] = got is not None and got[0]
            unread[i] = got is None
            sent[i] = got is SENT
            if hashed[i]:
                gots[i] = got
        flags = np.stack([tunnel, tunnel & cut, unread, sent])
        if self._pend is not None:  # records read before, not routed: the device was not known
            p_sid, p_flags, p_hashed, p_gots = self._pend
            gots = {**p_gots, **{len(p_sid) + i: g for i, g in gots.items()}}
            start = len(p_sid)
            sid, hashed = (np.concatenate(x) for x in ((p_sid, sid), (p_hashed, hashed)))
            flags = np.concatenate((p_flags, flags), axis=1)
        else:
            start = 0
        if not sel.decided:
            size = ch.caplen if ch.shrunk is None else ch.caplen + ch.shrunk  # bytes read (a cooked record's)
            caplen = size[fresh - start :].tolist()
            sts = self._sts
            rows = zip(
                sid[start:].tolist(), flags[0, start:].tolist(), flags[3, start:].tolist(), strict=True
            )
            for i, (s, t, by_host) in enumerate(rows):
                # a look-ahead of frames the host sent decides nothing (Selection._hold): read on; each is
                # routed as outgoing whatever is decided (Selection._route)
                if sel._hold(sts[s], t, caplen[start + i], by_host) and sel.decided:
                    break
            else:
                if not ch.eof:
                    self._pend = (sid, flags, hashed, gots)
                    return None
        self._pend = None
        self._sent = flags[3]  # of the records marked: the times of those the host sent order nothing
        return self._route(sid, flags[:3], hashed, gots)

    def _route(self, sid: np.ndarray, flags: np.ndarray, hashed: np.ndarray, gots: dict) -> np.ndarray:
        """The replayed marks of records of interfaces ``sid``; each counted in its interface (``flags``: rows
        tunnel, tunnel cut short, unread; for those whose hash counts, repeats and copies too: ``Selection._route``
        in capture order)."""
        sel, sts = self.sel, self._sts
        replayed = np.array([sel.member(st) for st in sts], bool)[sid]
        plain = ~hashed
        tunnel, cut, unread = (np.bincount(sid[plain], f[plain], minlength=len(sts)).tolist() for f in flags)
        for i, st in enumerate(sts):
            st.tunnel_frames += int(tunnel[i])
            st.tunnel_cut += int(cut[i])
            st.unread += int(unread[i])
        for i in np.flatnonzero(hashed).tolist():
            replayed[i] = sel._route(sts[sid[i]], gots[i])
        return replayed

    def _ids(self, ch: RecordChunk, fresh: int) -> np.ndarray:
        """The interface id (in ``_sts``) of each record ``fresh:`` of ``ch``: its pcapng interface and, Linux
        cooked v2, its ifindex (``interface_stats.interface_key``); interfaces new to the capture added in order of
        first frame."""
        assert ch.iface is not None and ch.linktype is not None
        g = ch.iface[fresh:]
        lt = ch.linktype[fresh:]
        code = g << 33
        sll2 = np.flatnonzero((lt == DLT_LINUX_SLL2) & (ch.caplen[fresh:] >= 8))
        if len(sll2):
            o = ch.data[fresh:][sll2]
            b = np.frombuffer(ch.buf, np.uint8)
            ifx = (b[o + 4].astype(np.int64) << 24) | (b[o + 5].astype(np.int64) << 16)
            ifx |= (b[o + 6].astype(np.int64) << 8) | b[o + 7]
            code[sll2] += ifx + 1
        uniq, first, inv = np.unique(code, return_index=True, return_inverse=True)
        ids = np.empty(len(uniq), np.int64)
        for u in np.argsort(first, kind="stable").tolist():
            c = int(uniq[u])
            got = self._id_of.get(c)
            if got is None:
                j = int(first[u])
                ifindex = None if c & ((1 << 33) - 1) == 0 else (c & ((1 << 33) - 1)) - 1
                pcapng_id = c >> 33 if self.cap.format == "pcapng" else None  # interface_stats.interface_key
                key = (pcapng_id, ifindex)
                got = self._id_of[c] = len(self._sts)
                self._sts.append(self.sel._stats(self.cap, key, int(lt[j])))
            ids[u] = got
        return ids[inv.reshape(-1)]
