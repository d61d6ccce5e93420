"""The pcapng block walker: a pcapng ``Capture`` read in blocks of records (``chunks.RecordChunk``), the one parser
of pcapng blocks after the file header (reader.py ``Capture`` iterates its records one at a time; the batch path,
pollcache.py, takes its blocks). tests/test_chunks.py checks its records against the values the test files were
built with, at every block size.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from .chunks import RECORDS, CaptureFile, RecordChunk, SizeWalk, _read_into
from .fcs import fcs_removed, strip_fcs
from .joined import header_words, joined_error
from .linktypes import DLT_EN10MB
from .pcapng import (
    _MAX_BLOCK_LEN,
    _NG_BLK,
    _NG_PB,
    _NG_U32,
    _PCAPNG_EPB,
    _PCAPNG_IDB,
    _PCAPNG_PB,
    _PCAPNG_SHB,
    _PCAPNG_SPB,
    _TS_NS_MAX,
    MAX_CAPLEN,
    with_dpkt_errors,
)
from .stream import BLOCK_READ_ERRORS, READ_ERRORS, CaptureError


class PcapngCaptureFile(CaptureFile, Protocol):
    """What the pcapng walker reads and calls of an open ``reader.Capture`` beyond ``CaptureFile``: the current
    section's byte order (``"<"``/``">"``) and interfaces ((link type, ns numerator, denominator, offset ns) by
    interface id), every interface of the file (``all_interfaces``, the current section's interface 0 at
    ``iface_base``), and the section and interface block parsers of pcapng.py ``PcapngBlocks``."""

    @property
    def _order(self) -> str: ...

    @property
    def _ifaces(self) -> list[tuple[int, int, int, int]]: ...

    @property
    def all_interfaces(self) -> list[tuple[int, str | None]]: ...

    @property
    def iface_base(self) -> int: ...

    records_walked: int

    def _shb_layout(self, hdr: bytes, off: int) -> tuple[str, type, int]: ...

    def _start_section(self, block: bytes, order: str, cls: type) -> None: ...

    def _add_interface(self, block: bytes) -> None: ...


#: bytes of an enhanced packet block before the packet data: type, length, interface, ts high/low, caplen, len
#: (dpkt ``EnhancedPacketBlock``)
_EPB_DATA = 28


class PcapngChunks:
    """Reads an open pcapng ``Capture`` in blocks of about ``block`` bytes, with ``PcapChunks.next``'s contract.

    The one parser of pcapng blocks after the file header (``Capture`` iteration is this walker's records, one
    at a time). The block type/length walk finds runs of equal-length enhanced packet blocks with one vectorised
    check; their fields (interface, 64-bit timestamp, caplen, len; the trailing block length) are read as numpy
    columns in the section's byte order, timestamps scaled by each interface's ``if_tsresol``/``if_tsoffset`` to
    ns. Every other block is handled in file order, as it comes: section header blocks (byte order, a new
    interface list: ``Capture._start_section``), interface description blocks (``Capture._add_interface``), simple
    and obsolete packet blocks (one record each; a simple packet block: interface 0, the previous packet's
    timestamp), anything else skipped without being held (name resolution, statistics, secrets, custom blocks).
    ``RecordChunk.starts``/``iface``/``linktype`` give each record's block offset, interface (index in
    ``Capture.all_interfaces``) and link type; records kept by the caller (``next(keep)``) are returned again
    without their blocks being walked twice.
    Each record walked that is longer than its interface's snaplen is counted in ``capture.caplen_over_snaplen``.
    A chunk holds at most ``records`` records (the blocks after them are walked by the next call).
    A block cut short at end of file is counted in ``capture.truncated_records``; a corrupt block raises
    CaptureError (with the reference's message and offset) after the records before it were returned.
    Raises: CaptureError for corrupt blocks, a pcap file header where a block starts (``cat a.pcapng b.pcap``:
    joined.py), unsupported versions and read errors.
    """

    def __init__(self, capture: PcapngCaptureFile, block: int = 4 << 20, records: int = RECORDS) -> None:
        if capture.format != "pcapng":
            raise ValueError("PcapngChunks reads pcapng only")
        self.capture = capture
        self._buf = bytearray(block)
        self._fill = 0  # bytes of _buf holding data
        self._pos = 0  # offset in _buf of the first block not walked yet
        self._pos_file = capture._offset  # its file offset (decompressed stream)
        self._rec_end = 0  # offset in _buf after the last record's block
        self._skip = 0  # bytes of a skipped block still to be read (and dropped)
        self._eof = False
        self._error: CaptureError | None = None  # raised by the next call (the records before it came first)
        self._last: RecordChunk | None = None
        self._ts = 0  # the last packet's timestamp (ns): a simple packet block's
        #: ``all_interfaces`` index of the current section's interface 0 (the walker's own: ``Capture`` iteration
        #: sets ``iface_base`` to each record's section as it yields records walked before a new section began)
        self._iface_base = capture.iface_base
        self._size = block
        self._records = records
        #: the last walk stopped after ``records`` records (more may follow in the buffer), and the bytes it walked
        self._capped = False
        self._took = 0

    def next(self, keep: int | None = None) -> RecordChunk | None:
        if self._error is not None:
            err, self._error = self._error, None
            raise err
        last = self._last
        pieces: list[tuple] = []
        keep = (self._pos if last is None else last.end) if keep is None else keep
        # the blocks after the last walk's are walked where they are when it stopped at its limit and as many
        # bytes are left as it took; else what is kept moves to the front and the buffer is filled
        in_place = self._capped and self._fill - self._pos >= self._took
        shift = 0 if in_place else keep
        if last is not None:
            assert last.starts is not None
            k = int(np.searchsorted(last.starts, keep))
            if k < len(last):
                pieces.append(
                    (
                        last.starts[k:] - shift,
                        last.data[k:] - shift,
                        last.caplen[k:],
                        last.origlen[k:],
                        last.ts_ns[k:],
                        last.iface[k:],  # type: ignore[index]
                    )
                )
        if not in_place:
            self._drop(keep)
        walked_from = self._pos
        while True:
            if not in_place:
                self._read()
            in_place = False
            got = self._walk()
            pieces.extend(got)
            if got or self._eof or self._error is not None:
                break
            # no complete record read yet: drop the walked blocks after the last record, else grow the buffer
            if self._pos > self._rec_end:
                buf, pos, end = self._buf, self._pos, self._rec_end
                buf[end : end + self._fill - pos] = buf[pos : self._fill]
                self._fill -= pos - end
                self._pos = end
            elif self._fill == len(self._buf):
                self._buf += bytes(len(self._buf))
        self._took = self._pos - walked_from
        cap = self.capture
        if self._eof and self._error is None and not self._capped and (self._skip or self._pos < self._fill):
            cap.truncated_records = 1  # the cut block is counted, never returned
        if not pieces:
            self._last = None
            return None
        cols = [p[0] for p in zip(*pieces, strict=True)] if len(pieces) == 1 else None
        if cols is None:
            cols = [np.concatenate(c) for c in zip(*pieces, strict=True)]
        starts, data, caplen, origlen, ts, iface = cols
        lt = np.array([i[0] for i in cap.all_interfaces], np.int64)[iface]
        self._last = RecordChunk(
            self._buf,
            data,
            caplen,
            origlen,
            ts,
            self._pos,
            self._eof and self._error is None and not self._capped,
            lt,
            starts,
            iface,
        )
        return self._last

    def _drop(self, keep: int) -> None:
        """Drop ``buf[:keep]`` (records and blocks the caller is done with); a buffer that grew (records kept
        while they did not fit) goes back to its size once what is left fits."""
        if keep:
            buf = self._buf
            rest = self._fill - keep
            buf[:rest] = buf[keep : self._fill]
            self._fill = rest
            self._pos -= keep
            self._rec_end = max(0, self._rec_end - keep)
        if len(self._buf) > self._size and self._fill <= self._size // 2:
            del self._buf[self._size :]

    def _read(self) -> None:
        """Fill the buffer (a pipe or FIFO returns what it holds: only a read of 0 bytes is the end), dropping
        the rest of a skipped block."""
        cap = self.capture
        buf = self._buf
        fill = self._fill
        view = memoryview(buf)
        try:
            while not self._eof and fill < len(buf):
                try:
                    got = _read_into(cap, view[fill:])
                except BLOCK_READ_ERRORS as e:
                    raise cap._read_error(e, self._pos_file) from None
                if not got:
                    self._eof = True
                    break
                if self._skip:
                    d = min(got, self._skip)
                    self._skip -= d
                    got -= d
                    if got:
                        buf[fill : fill + got] = buf[fill + d : fill + d + got]
                fill += got
        finally:
            view.release()
            self._fill = fill

    def _walk(self) -> list[tuple]:  # noqa: C901, PLR0915 - the block walk: one branch per block type, in file order
        """Walk the complete blocks from ``_pos``; returns the record pieces found (``next``'s columns)."""
        cap = self.capture
        buf, n = self._buf, self._fill
        off = self._pos
        base = self._pos_file - off  # file offset of buf[0] (for messages)
        pieces: list[tuple] = []
        left = self._records  # records still to walk in this chunk
        self._capped = False
        a = np.frombuffer(buf, np.uint8, count=n)
        order = cap._order
        epbs = _epb_walk(order)  # the enhanced packet blocks walked, not yet in a piece
        try:
            blk = _NG_BLK[order].unpack_from
            while off + 8 <= n:
                if left <= 0:
                    self._capped = True
                    break
                t, size = blk(buf, off)
                if t == _PCAPNG_EPB:
                    end, left, bad = epbs.walk(buf, a, off, n, left)
                    if bad:
                        off = end
                        raise cap._corrupt(base + off, f"block length {blk(buf, off)[1]}")
                    if end == off:
                        break  # cut short: the rest is read first
                    off = end
                    continue
                if epbs:
                    self._epb(a, epbs, base, pieces)
                    self._rec_end = off
                if t == _PCAPNG_PB or t == _PCAPNG_SPB:
                    if size & 3 or size > _MAX_BLOCK_LEN or size < (16 if t == _PCAPNG_SPB else 32):
                        raise cap._corrupt(base + off, f"block length {size}")
                    if off + size > n:
                        break
                    pieces.append(self._packet(buf, off, size, t, base))
                    off += size
                    left -= 1
                    self._rec_end = off
                elif t == _PCAPNG_SHB:
                    if off + 12 > n:
                        break
                    order, cls, size = cap._shb_layout(bytes(buf[off : off + 12]), base + off)
                    if off + size > n:
                        break
                    cap._start_section(bytes(buf[off : off + size]), order, cls)
                    self._iface_base = cap.iface_base
                    blk = _NG_BLK[order].unpack_from
                    epbs = _epb_walk(order)
                    off += size
                else:
                    if t in header_words(order):  # a pcap file header (``cat a.pcapng b.pcap``)?
                        joined = joined_error(
                            cap.path, base + off, bytes(buf[off : off + 8]), "pcapng", cap.compressed
                        )
                        if joined is not None:
                            raise joined
                    if size < 12 or size & 3:
                        raise cap._corrupt(base + off, f"block length {size}")
                    if t == _PCAPNG_IDB:
                        if size > _MAX_BLOCK_LEN:
                            raise cap._corrupt(base + off, f"block length {size}")
                        if off + size > n:
                            break
                        cap._add_interface(bytes(buf[off : off + size]))
                    elif off + size > n:
                        if self._eof:
                            break
                        # skip without holding the block: what is in the buffer now, the rest as it is read
                        self._skip = off + size - n
                        base += self._skip
                        off = n
                        break
                    off += size
            if epbs:
                self._epb(a, epbs, base, pieces)
                self._rec_end = off
        except with_dpkt_errors(CaptureError, *READ_ERRORS) as e:
            err = e if isinstance(e, CaptureError) else cap._read_error(e, base + off)
            if epbs:  # the enhanced packet blocks before the corrupt block (one may be corrupt first)
                try:
                    self._epb(a, epbs, base, pieces)
                except CaptureError as first:
                    err = first
            if not pieces:
                raise err from None
            self._error = err
        self._pos = off
        self._pos_file = base + off
        return pieces

    def _epb(self, a: np.ndarray, epbs: SizeWalk, base: int, pieces: list) -> None:
        """Append the records of the enhanced packet blocks walked by ``epbs`` (of the current section) to
        ``pieces``. Raises CaptureError at the first corrupt one (after appending those before it)."""
        cap = self.capture
        offs, f = epbs.take(a, _EPB_DATA)  # type, len, iface, hi, lo, cap, len
        size = f[:, 1]
        window = np.lib.stride_tricks.sliding_window_view
        trail = window(a, 4)[offs + size - 4].view(epbs.u32)[:, 0].astype(np.int64)
        iface, caplen = f[:, 2], f[:, 5]
        ifaces = cap._ifaces
        known = iface < len(ifaces)
        ts = np.zeros(len(offs), np.int64)
        ts_bad = np.zeros(len(offs), bool)
        units = (f[:, 3].astype(np.uint64) << np.uint64(32)) | f[:, 4].astype(np.uint64)
        for i, (_lt, num, den, offset_ns) in enumerate(ifaces):
            sel = known & (iface == i)
            if not sel.any():
                continue
            u = units[sel]
            hi, lo = int(u.max()), int(u.min())
            if (
                hi * num < 1 << 63
                and den < 1 << 63
                and -(1 << 63) < offset_ns < 1 << 63
                and lo * num // den + offset_ns >= 0
                and hi * num // den + offset_ns <= _TS_NS_MAX
            ):
                ts[sel] = u.astype(np.int64) * num // den + offset_ns
            else:  # beyond int64 somewhere: exact integers, one at a time
                got = [x * num // den + offset_ns for x in u.tolist()]
                ts[sel] = [x if 0 <= x <= _TS_NS_MAX else 0 for x in got]
                ts_bad[sel] = [not 0 <= x <= _TS_NS_MAX for x in got]
        bad_len = trail != size
        bad_cap = (caplen > MAX_CAPLEN) | (20 + ((caplen + 3) & ~3) > size - 12)
        bad = np.flatnonzero(bad_len | bad_cap | ~known | ts_bad)
        m = int(bad[0]) if len(bad) else len(offs)
        if m:
            self._ts = int(ts[m - 1])
            glob = iface[:m] + self._iface_base
            data, cl, ol = offs[:m] + _EPB_DATA, caplen[:m].copy(), f[:m, 6].copy()
            cap.records_walked += m
            cap.caplen_over_snaplen.add_records(np.array(cap.snaplens, np.int64)[glob], cl)
            cap.time_order.add_records(ts[:m])
            # fcs.py: each record walked once (a record kept comes again from these columns)
            ethernet = np.array([i[0] == DLT_EN10MB for i in ifaces], bool)[iface[:m]]
            if ethernet.any():
                stripped, cut = strip_fcs(self._buf, data, cl, ol, ethernet)
                cap.fcs_stripped += len(stripped)
                cap.fcs_cut += len(cut)
            pieces.append((offs[:m], data, cl, ol, ts[:m], glob))
        if m < len(offs):
            at = base + int(offs[m])
            if bad_len[m]:
                raise cap._corrupt(at, "block lengths differ")
            if bad_cap[m]:
                raise cap._corrupt(at, f"caplen {int(caplen[m])}, block length {int(size[m])}")
            if not known[m]:
                raise cap._corrupt(at, f"interface {int(iface[m])} not described")
            i = int(iface[m])
            _lt, num, den, offset_ns = ifaces[i]
            raise cap._corrupt(
                at, f"timestamp {int(units[m]) * num // den + offset_ns} ns outside 1970..2262"
            )

    def _packet(self, buf: bytearray, off: int, size: int, t: int, base: int) -> tuple:
        """The record of the simple or obsolete packet block of ``size`` bytes at ``buf[off]``, as a piece."""
        cap = self.capture
        order = cap._order
        u32_from = _NG_U32[order].unpack_from
        left = size - 8
        if u32_from(buf, off + size - 4)[0] != size:
            raise cap._corrupt(base + off, "block lengths differ")
        if t == _PCAPNG_PB:
            iface_id, _drops, ts_high, ts_low, caplen, orig_len = _NG_PB[order].unpack_from(buf, off + 8)
            data_off = 20
        else:
            # no timestamp, interface 0, data = min(orig_len, snaplen) bytes plus padding
            iface_id, ts_high, ts_low = 0, 0, 0
            orig_len = u32_from(buf, off + 8)[0]
            caplen = min(orig_len, left - 8)
            data_off = 4
        if caplen > MAX_CAPLEN or data_off + ((caplen + 3) & ~3) > left - 4:
            raise cap._corrupt(base + off, f"caplen {caplen}, block length {size}")
        ifaces = cap._ifaces
        if iface_id >= len(ifaces):
            raise cap._corrupt(base + off, f"interface {iface_id} not described")
        lt, num, den, offset_ns = ifaces[iface_id]
        if t != _PCAPNG_SPB:
            ts_ns = ((ts_high << 32) | ts_low) * num // den + offset_ns
            if not 0 <= ts_ns <= _TS_NS_MAX:
                raise cap._corrupt(base + off, f"timestamp {ts_ns} ns outside 1970..2262")
            self._ts = ts_ns
            cap.time_order.add(ts_ns)
        cap.records_walked += 1
        cap.caplen_over_snaplen.add(cap.snaplens[iface_id + self._iface_base], caplen)
        data = off + 8 + data_off
        if lt == DLT_EN10MB:  # fcs.py: as a NIC with rx-fcs off
            caplen, orig_len = fcs_removed(cap, bytes(buf[data : data + caplen]), orig_len)
        one = np.array  # one record: arrays of one entry
        return (
            one([off], np.int64),
            one([data], np.int64),
            one([caplen], np.int64),
            one([orig_len], np.int64),
            one([self._ts], np.int64),
            one([iface_id + self._iface_base], np.int64),
        )


def _epb_walk(order: str) -> SizeWalk:
    """The walk of consecutive enhanced packet blocks of a section in byte order ``order``: block type and length
    at the start of each (length 32 to ``_MAX_BLOCK_LEN``, a multiple of 4)."""
    return SizeWalk(order, 0, _PCAPNG_EPB, 0, 32, _MAX_BLOCK_LEN, 3)
