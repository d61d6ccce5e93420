"""A stream kept as a temporary file for a replay that reads its capture twice.

``--vxlan-port auto`` / ``--geneve-port auto`` / ``--detect-tunnels`` read the capture once to find the ports that
carry tunnel traffic and again to replay it (sim/ingest.py ``detect_tunnel_ports``). A regular file is opened
twice. A stream (``-``, a FIFO, ``/dev/stdin`` or a process substitution on a pipe) can be read once, so its bytes
are copied as they are read, unchanged (gzip stays compressed), into a temporary file in the system's temporary
directory (``$TMPDIR``, else ``/tmp``: ``tempfile.gettempdir``), and that copy is read as the file: the same
bytes give the same document (``input.blake3`` is the digest of the bytes read; a stream cut short is a file cut
short, its truncated record counted alike). The copy is removed when the replay ends, when it fails, and when
SIGINT or SIGTERM stops it (the CLI turns both into exceptions that unwind the stack: cli/entry.py).

Every other replay reads a stream as it comes, without a copy (``spooled`` is entered only for the options
above: sim/api.py ``replay_capture``). Memory: one ``COPY_BLOCK`` buffer and the bytes read for the capture header
(a 64 kB read buffer or a few); disk: the stream's bytes.

The copy can be watched (``on_copy``: the CLI's progress display, cli/output.py ``ProgressReport.copying``): it is
told the bytes copied and, for a capture that is not gzip-compressed, the records among them (``RecordCounter``,
which walks the record headers as the bytes go by, while that is cheap: ``_Meter``), at most every
``REPORT_EVERY`` seconds and once at the end. Without ``on_copy`` nothing is counted or timed.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import time
from collections.abc import Callable, Iterator

import numpy as np

from .chunks import _MIN_RUN, stride_prefix
from .pcapng import _NG_U32, _PCAPNG_EPB, _PCAPNG_PB, _PCAPNG_SHB, _PCAPNG_SPB, MAX_CAPLEN
from .reader import STDIN_PATH, capture_of, open_stream
from .stream import GZIP_MAGIC, CaptureError, read_error

#: bytes copied per read of the stream
COPY_BLOCK = 1 << 20
#: the temporary file's name: ``gro-replay-spool-XXXXXXXX.pcap`` in the temporary directory
SPOOL_PREFIX = "gro-replay-spool-"
#: seconds between two reports to ``spooled``'s ``on_copy`` (at most; a report waits for the stream's next bytes)
REPORT_EVERY = 0.25
#: records are counted while counting takes at most this share of the copy's time, once past ``COUNT_FREE``
#: seconds of counting (``_Meter``)
COUNT_SHARE = 0.1
COUNT_FREE = 0.05

#: ``on_copy(copied, records, ended)``: bytes of the stream copied so far; complete records among them (None: not
#: counted: gzip, counting too dear, or bytes that are no records); True once the stream has ended (the last report)
OnCopy = Callable[[int, "int | None", bool], None]


def is_regular_file(path: str) -> bool:
    """True when ``path`` (not ``-``) is a regular file after symbolic links (``/dev/stdin`` redirected from a
    file is one): it can be opened and read more than once. False for streams and for paths that cannot be
    examined (opening them names the problem)."""
    try:
        return path != STDIN_PATH and stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


@contextlib.contextmanager
def spooled(path: str, why: str, on_copy: OnCopy | None = None) -> Iterator[str]:
    """The path to read ``path``'s capture from, as often as needed, while the block runs: ``path`` itself when it
    is a regular file (or cannot be examined: opening it names the problem), else a temporary file holding every
    byte of the stream, read to its end first, and removed when the block ends (normally or by any exception). The
    stream's capture header is read and checked as it is copied (``capture_of``): a stream that is not a capture
    (or whose header is cut short or unsupported) is refused with the replay's own line before more is copied.

    ``why`` names what reads the capture twice in the error lines (``--vxlan-port/--geneve-port auto``).
    ``on_copy`` (``OnCopy``), when given, is told how far the copy is: first once the header has been checked,
    then at most every ``REPORT_EVERY`` seconds as bytes arrive, last with ``ended`` True when the stream has ended
    (not when the copy fails: the exception says why). It is never called for a regular file.
    Raises: CaptureError, one line naming ``path``: the stream cannot be opened (``-`` a terminal …), read or
    taken as a capture, or the copy cannot be created or written (``No space left on device``, ``File too large``); the copy is removed.
    """
    if path != STDIN_PATH and (is_regular_file(path) or not os.path.exists(path)):
        yield path
        return
    import tempfile  # only for a copy: ~0.02 CPU s of imports (shutil, random) a replay of a file does without

    src = open_stream(path)  # before the temporary file: a terminal or a missing FIFO is refused as ever
    tmp = None
    try:
        try:
            fd, tmp = tempfile.mkstemp(prefix=SPOOL_PREFIX, suffix=".pcap")
        except OSError as e:
            raise _cannot_copy(path, why, tempfile.gettempdir(), e) from None
        with open(fd, "wb", buffering=0) as out:
            # the header read and checked as the replay reads it, through the copy: a stream that is not a capture
            # is refused at once, with the line a replay without the copy gives, before anything more is copied
            tee = _Tee(src, out, path, why, tmp)
            with capture_of(tee, path, digest=None) as cap:
                meter = None
                if on_copy is not None:
                    meter = _Meter(on_copy, RecordCounter.of(cap))
                    # the bytes the header's reading copied (a read buffer or so), then the rest as it comes
                    meter.add(memoryview(tee.copied), force=True)
            _copy(src, out, path, why, tmp, meter, tee.copied)
            if meter is not None:
                meter.end()
        yield tmp
    finally:
        src.close()
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


class _Tee(io.RawIOBase):
    """Reads stream ``src`` and writes every byte it hands out to ``out`` (the copy ``tmp``), so that what reads
    through it and what ``_copy`` writes after it are the stream's bytes in order. Closing it leaves ``src`` open.
    Raises (from ``readinto``): CaptureError when the copy cannot be written; OSError of ``src``."""

    def __init__(self, src, out, path: str, why: str, tmp: str) -> None:
        super().__init__()
        self._src, self._out, self._path, self._why, self._tmp = src, out, path, why, tmp
        #: the bytes written to the copy (the header's reading: a read buffer or a few)
        self.copied = bytearray()

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        """The stream's descriptor (what a reader asks of the input it reads, e.g. whether it is a file)."""
        return self._src.fileno()

    def readinto(self, b) -> int:
        try:
            n = self._src.readinto(b) or 0
        except OSError as e:
            # counted here: the header's reader, reading through no digest, cannot (breaker41)
            raise read_error(self._path, e, len(self.copied), self.copied[:2] == GZIP_MAGIC) from None
        data = memoryview(b).cast("B")[:n]
        _write_all(self._out, data, self._path, self._why, self._tmp)
        self.copied += data
        return n


def _write_all(out, data: memoryview, path: str, why: str, tmp: str) -> None:
    """Write ``data`` to the copy ``out`` (unbuffered: short writes continue). Raises: CaptureError (``_cannot_copy``)."""
    done = 0
    while done < len(data):
        try:
            w = out.write(data[done:])
        except OSError as e:
            raise _cannot_copy(path, why, os.path.dirname(tmp), e) from None
        done += w or 0


def _copy(
    src, out, path: str, why: str, tmp: str, meter: _Meter | None = None, head: bytes | bytearray = b""
) -> None:
    """Every byte of stream ``src`` written to ``out`` (the temporary file ``tmp``, unbuffered), each block then
    shown to ``meter`` (when given); ``head``: the bytes of the stream read before (the header's, through
    ``_Tee``), counted in a read error (compressed bytes after a gzip magic). Raises: CaptureError on a read error
    of the stream or a write error of the copy."""
    buf = bytearray(COPY_BLOCK)
    view = memoryview(buf)
    copied = len(head)
    while True:
        try:
            n = src.readinto(buf)
        except OSError as e:
            raise read_error(path, e, copied, head[:2] == GZIP_MAGIC) from None
        if not n:
            return
        copied += n
        _write_all(out, view[:n], path, why, tmp)
        if meter is not None:
            meter.add(view[:n])


class _Meter:
    """How far a copy is, reported to ``on_copy`` (``OnCopy``) at most every ``REPORT_EVERY`` seconds: bytes
    copied and, with a ``RecordCounter``, the complete records among them — while counting them takes at most
    ``COUNT_SHARE`` of the copy's time (past ``COUNT_FREE`` seconds of counting): a producer slower than the copy
    (tcpdump on a live link) leaves it all the time it needs; a fast one (``cat`` of a capture of small frames of
    varied sizes, about 1 µs per record) has its records left uncounted, bytes only, rather than a slower copy."""

    def __init__(self, on_copy: OnCopy, records: RecordCounter | None) -> None:
        self._on_copy = on_copy
        self._records = records
        self.copied = 0  # bytes
        self._due = 0.0  # time.monotonic() of the next report
        self._start = time.monotonic()
        self._counting = 0.0  # seconds spent counting records

    def add(self, block: memoryview, force: bool = False) -> None:
        """Count ``block``, the next bytes copied; report when a report is due (or ``force``)."""
        self.copied += len(block)
        if self._records is not None:
            began = time.monotonic()
            self._records.feed(block)
            now = time.monotonic()
            self._counting += now - began
            if self._counting > COUNT_FREE and self._counting > COUNT_SHARE * (now - self._start):
                self._records = None  # too dear: bytes only from now on
        else:
            now = time.monotonic()
        if force or now >= self._due:
            self._due = now + REPORT_EVERY
            self._report(False)

    def end(self) -> None:
        """The last report: the stream has ended."""
        self._report(True)

    def _report(self, ended: bool) -> None:
        self._on_copy(self.copied, None if self._records is None else self._records.complete(), ended)


_U32 = {order: st.unpack_from for order, st in _NG_U32.items()}
#: pcapng block types that hold a frame: enhanced, simple and (obsolete) packet blocks
_NG_FRAMES = frozenset({_PCAPNG_EPB, _PCAPNG_SPB, _PCAPNG_PB})
_BOM_LE, _BOM_BE = (0x1A2B3C4D).to_bytes(4, "little"), (0x1A2B3C4D).to_bytes(4, "big")


class RecordCounter:
    """Counts the records of a capture that is not compressed from its bytes as they are copied (``feed``), with
    one header read per record and no record body looked at: classic pcap records (the file header of 24 bytes
    skipped, then ``caplen`` at offset 8 of each record header) or pcapng packet blocks (every block walked by its
    total length; a section header block sets the byte order of those after it). Runs of records of one length
    (bulk traffic) are counted with one vectorised check (chunks.py ``stride_prefix``), by the rule of the readers'
    walk (chunks.py ``SizeWalk``): the headers are walked one by one until ``_MIN_RUN`` in a row share a length
    (and pcapng block type), never across a section header block; the counter keeps its own loop, as it reads a
    stream being copied, not a reader's buffer. Bytes that cannot be a record
    (a caplen over ``MAX_CAPLEN``, a block length under 12 or not a multiple of 4) end the count: ``complete``
    is then None (the replay names the problem when it reads the copy)."""

    def __init__(self, fmt: str, order: str, head: int, first: int) -> None:
        self._pcapng = fmt == "pcapng"
        self._u32 = _U32[order]
        self._head = head  # bytes of a record or block header read: pcap 16 or 24, pcapng 12
        self._next = first  # stream offset of the next record or block header
        self._base = 0  # stream offset of the next byte fed
        self._tail = b""  # the start of a header cut by the end of the last block fed
        self._counted = 0  # records whose header was read
        self._last_frame = False  # the last header read was a record's (pcapng: a packet block's)
        self._np = np.dtype(order + "u4")
        self._kind = self._length = self._step = 0  # the last header's block type, length field, record bytes
        self._same = 0  # headers in a row of the last one's type and length
        self._slow = False  # headers are walked one by one until ``_same`` reaches ``_MIN_RUN``
        self.lost = False

    @classmethod
    def of(cls, cap) -> RecordCounter | None:
        """The counter of open ``reader.Capture`` ``cap`` (its header read), None for gzip (its bytes are
        compressed) or an unknown layout."""
        if cap.compressed:
            return None
        if cap.format == "pcap" and cap.pcap_layout is not None:
            order, rec_len, _ = cap.pcap_layout
            return cls("pcap", order, rec_len, 24)
        if cap.format == "pcapng":
            return cls("pcapng", "<", 12, 0)  # the section header block sets the order
        return None

    def complete(self) -> int | None:
        """Records whose every byte has been fed; None when the count was lost."""
        if self.lost:
            return None
        return self._counted - (1 if self._last_frame and self._next > self._base else 0)

    def feed(self, block: memoryview) -> None:
        """Walk the headers in ``block``, the stream's next bytes."""
        if self.lost:
            return
        start = self._base
        n = len(block)
        self._base += n
        off = self._next - start  # negative: a header began in the last block (``_tail``)
        head = self._head
        if off < 0:
            need = head - len(self._tail)  # the tail holds the header's first -off bytes
            if n < need:
                self._tail += bytes(block)
                return
            self._header(self._tail + bytes(block[:need]), 0, self._next)
            self._tail = b""
            if self.lost:
                return
            off = self._next - start
        arr = None
        while off + head <= n:
            self._header(block, off, start + off)
            if self.lost:
                return
            off = self._next - start
            if self._slow:
                if self._same < _MIN_RUN:
                    continue
                self._slow = False
            # speculate, as chunks.py does: records of the same length (and pcapng block type) follow at a
            # fixed stride; the prefix that agrees is counted with one vectorised check
            step = self._step
            k = (n - off - head) // step + 1 if off + head <= n else 0
            if k < _MIN_RUN:
                continue
            if arr is None:
                arr = np.frombuffer(block, dtype=np.uint8)
            if self._pcapng:
                m = stride_prefix(arr, off, step, k, self._np, self._kind, self._length)
            else:
                m = stride_prefix(arr, off + 8, step, k, self._np, self._length)
            self._next += m * step
            self._counted += m * self._last_frame
            off = self._next - start
            if m < _MIN_RUN:
                self._slow = True  # sizes vary: the next records one by one
        if off < n:
            self._tail = bytes(block[off:])

    def _header(self, buf, off: int, at: int) -> None:
        """The header at ``buf[off:]`` (stream offset ``at``): counted, ``_next`` moved past its record."""
        if not self._pcapng:
            caplen = self._u32(buf, off + 8)[0]
            if caplen > MAX_CAPLEN:
                self.lost = True
                return
            self._walked(0, caplen, self._head + caplen)
            self._next = at + self._step
            self._counted += 1
            self._last_frame = True
            return
        kind = self._u32(buf, off)[0]
        if kind == _PCAPNG_SHB:
            bom = bytes(buf[off + 8 : off + 12])
            order = "<" if bom == _BOM_LE else ">" if bom == _BOM_BE else ""
            if not order:
                self.lost = True
                return
            self._u32 = _U32[order]
            self._np = np.dtype(order + "u4")
        length = self._u32(buf, off + 4)[0]
        if length < 12 or length & 3:
            self.lost = True
            return
        self._walked(kind, length, length)
        if kind == _PCAPNG_SHB:
            # no run of section headers: each one sets the byte order of the blocks after it
            self._slow, self._same = True, 0
        self._next = at + length
        self._last_frame = kind in _NG_FRAMES
        self._counted += self._last_frame

    def _walked(self, kind: int, length: int, step: int) -> None:
        """A header of block type ``kind`` (pcap: 0) and length field ``length`` read, its record ``step`` bytes."""
        self._same = self._same + 1 if kind == self._kind and length == self._length else 1
        self._kind, self._length, self._step = kind, length, step


def _cannot_copy(path: str, why: str, where: str, e: OSError) -> CaptureError:
    return CaptureError(
        f"{path}: {why} reads the capture twice: the copy of the stream cannot be written in {where} "
        f"({e.strerror or e}); set TMPDIR to a directory with room, or name the port"
    )
