"""Classic pcap read in blocks of records, for the batch path (sim.py ``Replayer.run_chunks``).

``Capture`` (reader.py) parses the file header with dpkt and yields one record at a time; reading 1M records that
way costs about 1 µs each on the benchmark machine before any frame is looked at. ``PcapChunks`` reads the
same records (the record header layout is dpkt's ``PktHdr``/``LEPktHdr``: tv_sec, tv_usec|tv_nsec, caplen, len)
a few MB at a time into one ``bytes`` object and returns numpy arrays of their offsets, lengths and timestamps.
Runs of records with equal caplen — the bulk of a data capture — are found with one vectorised check instead
of one Python step per record.

Classic pcap with 16-byte record headers is read this way, plain or gzip-compressed (``PcapChunks.supported``).
pcapng is read by pcapng_chunks.py ``PcapngChunks``, the one parser of pcapng blocks after the file header (``Capture`` iterates its
records): equal-length enhanced packet blocks are found and read as numpy columns the same way, every other block
(section, interface, simple and obsolete packet blocks, the rest skipped) is handled in file order; each record's
interface and link type are kept (``RecordChunk.iface``/``linktype``). tests/test_chunks.py checks that both give
the records of the reference reader (pcapng: the values the test files were built with), the same truncated-record
count and the same corrupt-record error, at every block size, cut gzip streams included.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from .fcs import strip_fcs
from .joined import joined_before_corrupt
from .linktypes import DLT_EN10MB
from .pcapng import MAX_CAPLEN
from .snaplen import CaplenOverSnaplen
from .stream import BLOCK_READ_ERRORS, CaptureError
from .time_order import TimeOrder

_NS = 1_000_000_000
#: a classic pcap record header's length (bytes)
REC_LEN = 16
#: a run of equal-caplen records shorter than this is walked one record at a time
_MIN_RUN = 16
#: records per chunk at most (``PcapChunks``, ``PcapngChunks``): what a block's columns and the batch engine's
#: per-frame arrays hold grows with its records, not its bytes (a block of small frames holds more of them)
RECORDS = 4096


@dataclass
class RecordChunk:
    """Complete records of one block, as arrays (int64, one entry per record).

    ``buf``: the reader's buffer (valid until its next read; bytes past ``end`` are not records); ``data``: offset in ``buf`` of each record's
    captured bytes; ``caplen``/``origlen``: bytes captured / on the wire; ``ts_ns``: timestamps (ns);
    ``end``: offset in ``buf`` after the last complete record (``buf[end:]`` is the start of the next one);
    ``eof``: the file has nothing after ``buf`` (a non-empty ``buf[end:]`` is then a record cut short).
    """

    buf: bytearray
    data: np.ndarray
    caplen: np.ndarray
    origlen: np.ndarray
    ts_ns: np.ndarray
    end: int
    eof: bool
    #: the link type of each record (int64), or None when every record is Ethernet (EN10MB)
    linktype: np.ndarray | None = None
    #: pcapng: offset in ``buf`` of each record's block, and its interface (index in ``Capture.all_interfaces``)
    starts: np.ndarray | None = None
    iface: np.ndarray | None = None
    #: bool per record: read and skipped as another interface's (``other_interface``), never replayed; None: none
    skip: np.ndarray | None = None
    #: the records' ``packet.columns.Columns`` when the reader computed them (capture/interface_chunks.py)
    columns: Any = None
    #: bytes each record's link header lost when it was rewritten as Ethernet (int64, 0: not rewritten; cooked.py
    #: ``as_ethernet``): its captured and wire lengths are the frame's, the bytes read ``caplen + shrunk``; None: none
    shrunk: np.ndarray | None = None
    #: bool per record: a Linux cooked record the capturing host sent (cooked.py ``as_ethernet``: ``outgoing``, read
    #: and never replayed, its time no arrival); None: none
    sent: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.data)

    def unreplayed(self) -> np.ndarray:
        """bool per record: read and not replayed as it is: cut short (captured length below the wire length:
        ``snaplen_cut``), another interface's (``skip``) or sent by the capturing host (``sent``)."""
        out = self.caplen < self.origlen
        for mask in (self.skip, self.sent):
            if mask is not None:
                out |= mask
        return out

    def record_start(self, i: int) -> int:
        """Offset in ``buf`` of record ``i``'s header (``end`` for ``i == len(self)``)."""
        if i >= len(self.data):
            return self.end
        return int(self.data[i]) - REC_LEN if self.starts is None else int(self.starts[i])


class CaptureFile(Protocol):
    """What the block readers read of an open ``reader.Capture`` (a protocol, so that reader.py, which reads pcapng
    through pcapng_chunks.py, is not imported back): its format (``"pcap"``/``"pcapng"``), classic pcap's record
    layout, the decompressed stream and the offset of the next record in it (bytes), the count of records cut at
    end of file, the declared snaplens and the count of records longer than theirs (snaplen.py), the records' time
    order (time_order.py), the link type (pcap: the file's), the count of records read without their FCS (fcs.py),
    and the capture's error messages (``CaptureError`` naming a file offset)."""

    path: str
    compressed: bool  # gzip: offsets are of the decompressed data (stream.py ``offset_words``)
    truncated_records: int
    snaplens: list[int]
    caplen_over_snaplen: CaplenOverSnaplen
    time_order: TimeOrder
    linktype: int
    fcs_stripped: int
    fcs_cut: int

    @property
    def format(self) -> str: ...

    @property
    def pcap_layout(self) -> tuple[str, int, int] | None: ...

    @property
    def _f(self) -> io.BufferedIOBase: ...

    @property
    def _offset(self) -> int: ...

    def _corrupt(self, off: int, detail: str) -> CaptureError: ...

    def _read_error(self, e: BaseException, off: int) -> CaptureError: ...


def stride_prefix(a: np.ndarray, off: int, step: int, k: int, u32: np.dtype, *words: int) -> int:
    """How many of ``k`` records ``step`` bytes apart in ``a`` (the buffer's bytes, uint8) hold ``words``, 32-bit
    words in ``u32``'s byte order, at ``a[off]`` for the first record (``a[off + step]`` for the second …), counted
    from the first up to the first that does not: a walk's run of records of one size (classic pcap: the caplen;
    pcapng: block type and length), found with one vectorised check instead of one step per record. The ``k``
    records' words must lie in ``a``."""
    bad = np.ndarray((k,), dtype=u32, buffer=a, offset=off, strides=(step,)) != words[0]
    for i in range(1, len(words)):
        bad |= np.ndarray((k,), dtype=u32, buffer=a, offset=off + 4 * i, strides=(step,)) != words[i]
    at = np.flatnonzero(bad)
    return int(at[0]) if len(at) else k


class SizeWalk:
    """The walk of records that each give their own size, shared by classic pcap (``PcapChunks``: records) and
    pcapng (pcapng_chunks.py ``PcapngChunks``: consecutive enhanced packet blocks). Two 32-bit words in ``order``
    are read at ``at`` in each record: pcap (``kind`` None): caplen and len at 8, the record is ``extra`` (16) more
    bytes than caplen; pcapng: block type (``kind``, the walk stops at another) and block length, the record's
    size (``extra`` 0). A size word outside ``least..most`` or not a multiple of ``align + 1`` stops the walk as
    bad (the caller names the problem).

    Records are walked one at a time until ``_MIN_RUN`` in a row have the same size; the records that follow at
    that stride with the same words are then found with one vectorised check (``stride_prefix``), and the walk
    goes on after them. ``walk`` adds the records it finds to those not yet taken; ``take`` returns their offsets
    and first ``width`` header bytes (as 32-bit words, int64), a run's read at its stride, the others gathered."""

    def __init__(self, order: str, at: int, kind: int | None, extra: int, least: int, most: int, align: int):
        self._words = struct.Struct(order + "II").unpack_from
        self._word = struct.Struct(order + "I").unpack_from
        self.u32 = np.dtype(order + "u4")
        self._at, self._kind, self._extra = at, kind, extra
        self._least, self._most, self._align = least, most, align
        #: runs (first offset, stride, records) and records walked one at a time (``_got[:k]`` as (k, 0, 0))
        self._parts: list[tuple[int, int, int]] = []
        self._got: list[int] = []

    def __bool__(self) -> bool:
        """True when records walked are not taken yet."""
        return bool(self._got or self._parts)

    def walk(self, buf: bytearray, a: np.ndarray, off: int, n: int, left: int) -> tuple[int, int, bool]:
        """Walk the complete records in ``buf[off:n]`` (``a``: its bytes, uint8), at most ``left``; returns the
        offset after the last one, the records still to find, and True when the walk stopped at a bad size word
        (at the returned offset)."""
        if self._kind is None and not self._least and not self._align:
            return self._walk_sizes(buf, a, off, n, left)
        words, at, kind, extra = self._words, self._at, self._kind, self._extra
        least, most, align = self._least, self._most, self._align
        got = self._got
        last = -1
        same = 0
        while off + at + 8 <= n and left:
            w0, w1 = words(buf, off + at)
            if kind is None:
                size = w0
            elif w0 != kind:
                break
            else:
                size = w1
            if size < least or size > most or size & align:
                return off, left, True
            step = size + extra
            if off + step > n:
                break
            if size != last:
                last = size
                same = 1
            else:
                same += 1
                if same >= _MIN_RUN:
                    # a run of records of one size: the records that follow at this stride with these words
                    m = self._run(a, off, n, left, step, *((size,) if kind is None else (kind, size)))
                    off += step * m
                    left -= m
                    last = -1
                    continue
            got.append(off)
            off += step
            left -= 1
        return off, left, False

    def _walk_sizes(
        self, buf: bytearray, a: np.ndarray, off: int, n: int, left: int
    ) -> tuple[int, int, bool]:
        """``walk`` where the first word is the size and only ``most`` bounds it (classic pcap): the same steps,
        one word read a record."""
        word, at, extra, most = self._word, self._at, self._extra, self._most
        append = self._got.append
        last = -1
        same = 0
        stop = n - at - 8  # the last offset whose two words lie in buf[:n] (as ``walk`` reads them)
        while off <= stop and left:
            size = word(buf, off + at)[0]
            if size > most:
                return off, left, True
            step = size + extra
            if off + step > n:
                break
            if size != last:
                last = size
                same = 1
            else:
                same += 1
                if same >= _MIN_RUN:
                    m = self._run(a, off, n, left, step, size)
                    off += step * m
                    left -= m
                    last = -1
                    continue
            append(off)
            off += step
            left -= 1
        return off, left, False

    def _run(self, a: np.ndarray, off: int, n: int, left: int, step: int, *words: int) -> int:
        """The records of a run of one size at ``off`` (``walk``): how many follow at stride ``step`` (bytes) with
        these header ``words`` in ``a[:n]``, at most ``left``; recorded as one part after the records walked."""
        k = min((n - off) // step, left)
        m = stride_prefix(a, off + self._at, step, k, self.u32, *words)
        self._parts.append((len(self._got), 0, 0))
        self._parts.append((off, step, m))
        return m

    def take(self, a: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
        """The offsets (int64, in order) of the records walked and not yet taken, and their first ``width`` bytes
        as ``(records, width // 4)`` 32-bit words (int64); none are left."""
        parts, got = self._parts, self._got
        parts.append((len(got), 0, 0))
        walked = np.array(got, dtype=np.int64)
        heads, offs = [], []
        at = 0
        for first, step, m in parts:
            if step:
                heads.append(
                    np.ndarray((m, width // 4), dtype=self.u32, buffer=a, offset=first, strides=(step, 4))
                )
                offs.append(first + step * np.arange(m, dtype=np.int64))
            elif first > at:
                o = walked[at:first]
                # every ``width`` bytes of ``a`` as a row (a window view made without sliding_window_view's checks)
                window = np.ndarray((len(a) - width + 1, width), np.uint8, a, 0, (1, 1))
                heads.append(window[o].view(self.u32))
                offs.append(o)
                at = first
        self._parts, self._got = [], []
        # the words copied a header word at a time into a (width // 4, records) array, returned transposed: a
        # column per word, each contiguous (a cast of the (records, width // 4) rows copies a few words per
        # call of its inner loop, 4 times slower on a bulk block)
        words = np.empty((width // 4, sum(len(o) for o in offs)), np.int64)
        k = 0
        for h in heads:
            words[:, k : k + len(h)] = h.T
            k += len(h)
        return (offs[0] if len(offs) == 1 else np.concatenate(offs or [np.zeros(0, np.int64)])), words.T


def _read_into(capture: CaptureFile, view: memoryview) -> int:
    """Bytes read into ``view`` (0: end of stream). A gzip capture is read through ``GzipStream``
    (capture/stream.py), which ends a cut stream like a file and loses no decompressed byte."""
    return capture._f.readinto(view) or 0


class PcapChunks:
    """Reads an open classic-pcap ``Capture`` in blocks of about ``block`` bytes, into one reused buffer.

    ``next(keep)`` returns the next ``RecordChunk``: its ``buf`` starts with the bytes ``keep:`` of the previous
    chunk's buffer (records the caller did not process, plus the incomplete tail; ``keep=None``: the previous
    chunk's ``end``), followed by newly read bytes. None when the file and the kept bytes hold no complete record.
    A chunk's ``buf`` is valid until the next call (the buffer is reused; copy what must outlive it).
    A chunk holds at most ``records`` records (the next ones stay in the buffer for the next call; a caller that
    keeps all of them gets twice as many, and a larger buffer, the next time).
    A record cut short at end of file is counted in ``capture.truncated_records`` (as ``Capture`` iteration
    does) when ``next`` reaches it; a complete record longer than the file header's snaplen in
    ``capture.caplen_over_snaplen`` the first time a chunk holds it (records kept are not counted again).
    Raises: CaptureError for a record claiming more than MAX_CAPLEN bytes, for another capture's header where a
    record starts (``cat a.pcap b.pcap``: joined.py) and for read errors.
    """

    def __init__(self, capture: CaptureFile, block: int = 4 << 20, records: int = RECORDS) -> None:
        if not self.supported(capture):
            raise ValueError("PcapChunks reads classic pcap only")
        self.capture = capture
        order, _rec_len, frac_ns = capture.pcap_layout  # type: ignore[misc]
        self._sizes = SizeWalk(order, 8, None, REC_LEN, 0, MAX_CAPLEN, 0)
        self._caplen_at = struct.Struct(order + "I").unpack_from
        self._frac_ns = frac_ns
        #: the last record header walked (file offset, 16 bytes), looked at when the next one is corrupt (joined.py)
        self._last: tuple[int, bytes] | None = None
        self._buf = bytearray(block)
        self._fill = 0  # bytes of _buf holding data
        self._end = 0  # the last chunk's end
        self._file_off = capture._offset  # file offset of _buf[_fill]
        self._counted = capture._offset  # file offset after the last record counted in caplen_over_snaplen
        self._eof = False
        #: an uncompressed capture's digest, which hashes the reads into ``_buf`` where they lie (stream.py
        #: ``DigestingRaw.lend``): settled before ``_buf`` is written to again
        self._lender = getattr(capture, "_digest", None) if not getattr(capture, "compressed", True) else None
        self._records = records
        self._first = 0  # offset in _buf of the last chunk's first record
        self._count = 0  # its records
        self._took = 0  # its bytes
        self._capped = False  # it stopped at ``_records``: complete records may follow it in the buffer

    @staticmethod
    def supported(capture: CaptureFile) -> bool:
        """True for a classic pcap with 16-byte record headers (plain or gzip-compressed)."""
        lay = capture.pcap_layout
        return lay is not None and lay[1] == REC_LEN

    def _read_into(self, view: memoryview) -> int:
        return _read_into(self.capture, view)

    def next(self, keep: int | None = None) -> RecordChunk | None:
        keep = self._end if keep is None else keep
        need = 0  # records the chunk must hold more than
        if keep == self._first and keep < self._end:
            # the caller consumed nothing (an unfinished poll fills the chunk): twice as many records, and more
            # than it had (a larger buffer when they do not fit)
            self._records *= 2
            need = self._count
        if not (self._capped and self._fill - keep >= self._took):
            # not as much left as the last chunk took: moved to the front, more read
            keep = self._refill(keep)
        while True:
            chunk = self._walk(self._buf, keep, self._fill, self._file_off - self._fill, self._records)
            if len(chunk) > need or self._eof:
                break
            keep = self._refill(keep, grow=True)  # a record larger than what the buffer holds
        fill = self._fill
        self._first, self._end, self._count = keep, chunk.end, len(chunk)
        self._capped = not chunk.eof and len(chunk) >= self._records
        self._took = chunk.end - keep
        if chunk.eof and chunk.end < fill:
            self.capture.truncated_records = 1  # the cut record is counted, never returned
        if not len(chunk):
            return None
        self._count_over_snaplen(chunk, self._file_off - fill)
        if self.capture.linktype != DLT_EN10MB:
            # as a pcapng block walker's records (a Linux cooked capture is read by interface_chunks.py
            # ``SelectedChunks``, then cooked.py ``as_ethernet``): each one's link type, interface and header offset
            chunk.linktype = np.full(len(chunk), self.capture.linktype, np.int64)
            chunk.iface = np.zeros(len(chunk), np.int64)
            chunk.starts = chunk.data - REC_LEN
        return chunk

    def _refill(self, keep: int, grow: bool = False) -> int:
        """Move the buffer's bytes from ``keep`` to its front (twice as large a buffer with ``grow`` when they fill
        it) and read until it is full or the stream ends (a pipe or FIFO returns what it holds: only a read of 0
        bytes is the end); returns where the kept bytes now start (0)."""
        if self._lender is not None:
            self._lender.settle()  # the thread hashed what was read into the buffer before it is written to
        buf = self._buf
        rest = self._fill - keep
        if keep:
            buf[:rest] = buf[keep : self._fill]
        fill = rest
        if grow and fill == len(buf) and not self._eof:
            self._buf = buf = buf + bytes(len(buf))
        if self._lender is not None:
            self._lender.lend(buf)
        view = memoryview(buf)
        try:
            while not self._eof and fill < len(buf):
                try:
                    got = self._read_into(view[fill:])
                except BLOCK_READ_ERRORS as e:
                    # named at the record being read, as the record reader names it
                    at = self._file_off - fill + self._walk(buf, 0, fill, self._file_off - fill, None).end
                    raise self.capture._read_error(e, at) from None
                if not got:
                    self._eof = True
                    break
                fill += got
                self._file_off += got
        finally:
            view.release()
            self._fill = fill
        return 0

    def _count_over_snaplen(self, chunk: RecordChunk, file_base: int) -> None:
        """Count the records of ``chunk`` (``file_base``: file offset of its ``buf[0]``) not counted before (the
        records a caller kept come again) that are longer than the file header's snaplen, and their time order;
        remove the FCS of those of an Ethernet capture that end with one (fcs.py ``strip_fcs``: every time a chunk
        holds them, as their headers are read again; counted the first time)."""
        cap = self.capture
        fresh = chunk.data - REC_LEN + file_base >= self._counted
        cap.caplen_over_snaplen.add_records(cap.snaplens[0], chunk.caplen[fresh])
        cap.time_order.add_records(chunk.ts_ns[fresh])
        self._counted = max(self._counted, file_base + chunk.end)
        if cap.linktype == DLT_EN10MB:
            stripped, cut = strip_fcs(chunk.buf, chunk.data, chunk.caplen, chunk.origlen)
            cap.fcs_stripped += int(fresh[stripped].sum())
            cap.fcs_cut += int(fresh[cut].sum())

    def _walk(self, buf: bytearray, start: int, n: int, file_base: int, limit: int | None) -> RecordChunk:
        """Find the complete records in ``buf[start:n]`` (``file_base``: file offset of ``buf[0]``), the first
        ``limit`` of them (None: all), by the walk shared with pcapng (``SizeWalk``); their headers are read at
        the end, as columns."""
        a = np.frombuffer(buf, dtype=np.uint8, count=n)
        left = n if limit is None else limit  # records still to find (each takes 16 bytes or more)
        off, left, bad = self._sizes.walk(buf, a, start, n, left)
        rec, f32 = self._sizes.take(a, REC_LEN)
        if len(
            rec
        ):  # the last record header walked: where another capture's header may have been read as one
            r = int(rec[-1])
            self._last = (file_base + r, bytes(buf[r : r + REC_LEN]))
        if bad:
            self._joined(buf, off, file_base)
            raise self._corrupt(file_base + off, self._caplen_at(buf, off + 8)[0])
        ts = f32[:, 0] * _NS + f32[:, 1] * self._frac_ns
        # the end of the file is the end of the chunk only when the limit did not stop the walk
        eof = self._eof and left > 0
        return RecordChunk(buf, rec + REC_LEN, f32[:, 2].copy(), f32[:, 3].copy(), ts, off, eof)

    def _joined(self, buf: bytearray, off: int, file_base: int) -> None:
        """Before the corrupt record at ``buf[off]`` is reported: raise joined.py's error where another capture's
        file header is that record, or the record just before it, of caplen 0 (``joined_before_corrupt``)."""
        here = (file_base + off, bytes(buf[off : off + REC_LEN]))
        err = joined_before_corrupt(self.capture.path, here, self._last, self.capture.compressed)
        if err is not None:
            raise err

    def _corrupt(self, file_off: int, caplen: int) -> CaptureError:
        return self.capture._corrupt(file_off, f"caplen {caplen} > {MAX_CAPLEN}")
