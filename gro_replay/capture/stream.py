"""Reading a capture as a byte stream: ``CaptureError`` (every unreadable capture's one-line error), exact reads
that never take a short read for the end, the errors a read can raise, a pipe's buffer ``widened`` for large reads,
and ``DigestingRaw``, the digest (digest.py: BLAKE3 or SHA-256) of the bytes as they are read (the path is never
opened a second time).
"""

from __future__ import annotations

import ctypes
import fcntl
import gzip
import io
import os
import queue
import stat
import struct
import threading
import zlib
from typing import Any

from zlib_ng import zlib_ng

from ..project import plural
from .digest import DEFAULT_DIGEST, new_hash

# gzip and the file object raise these; the pcapng block parsers add dpkt's (pcapng.py with_dpkt_errors)
#: what corrupt deflate data raises: zlib's error, and zlib-ng's (a gzip capture is inflated by zlib-ng:
#: ``GzipStream``)
_ZLIB_NG_ERROR: type[Exception] = zlib_ng.error  # type: ignore[assignment]  # its stub declares an instance
ZLIB_ERRORS: tuple[type[Exception], ...] = (zlib.error, _ZLIB_NG_ERROR)
#: the first two bytes of a gzip member (RFC 1952 §2.3.1: ID1, ID2)
GZIP_MAGIC = b"\x1f\x8b"
READ_ERRORS: tuple[type[Exception], ...] = (
    OSError,
    EOFError,
    ValueError,
    IndexError,
    struct.error,
    *ZLIB_ERRORS,
)
#: what reading a block of a capture raises: the stream's errors and, for gzip, the inflater's
BLOCK_READ_ERRORS: tuple[type[Exception], ...] = (OSError, *ZLIB_ERRORS)


class CaptureError(Exception):
    """A capture that cannot be read. ``str(e)`` is one user-facing line starting with the path."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


def offset_words(off: int, compressed: bool) -> str:
    """Where in a capture an error lies, for its one line: "offset N" (bytes from the file's start), or for a gzip
    capture "offset N of the decompressed data" (the readers count the bytes they parse, which are inflated)."""
    return f"offset {off} of the decompressed data" if compressed else f"offset {off}"


class GzipStream(io.RawIOBase):
    """A gzip stream (RFC 1952: one member or several, zero bytes of padding between or after them, as gzip(1) and
    Python's ``gzip`` read it) inflated by zlib-ng, for ``io.BufferedReader``: ``zlib_ng.decompressobj`` with
    wbits 31 reads each member's header and checks its trailer (CRC-32, ISIZE); this class finds where each member
    starts. As gzip(1), and unlike Python's ``gzip``, zlib also checks a header's CRC-16 (FHCRC) and refuses
    reserved FLG bits. zlib-ng inflates ~2.5x faster than zlib (the 1.5 GB bulk capture of bench/modes.py: 0.33 CPU s
    against 0.83); its ``gzip_ng`` reader, like python-isal's, drops up to ~32 KB inflated before a cut.

    A stream cut before a member's end (its CRC32/ISIZE trailer, RFC 1952 §2.3) ends like a file (a 0-byte read)
    and sets ``cut``, once every byte inflated from what was read has been returned: every reader sees the same end
    of stream as for an uncompressed file cut there, a record is counted as truncated only when part of one was
    read, and the report says the stream was cut (``cut``).
    Raises (``readinto``): gzip.BadGzipFile where a member should start and other bytes than the gzip magic stand
    (Python's words: "Not a gzipped file (b'..')"); zlib_ng.error for corrupt deflate data, a bad header or a
    trailer that does not match; OSError of the underlying stream.
    """

    def __init__(self, raw: io.BufferedIOBase, piece: int = 1 << 17) -> None:
        super().__init__()
        self._raw = raw
        self._piece = piece  # compressed bytes read at a time
        self._d: Any = None  # the member's decompressor; None between members
        self._in = b""  # compressed bytes read and not yet inflated
        self._end = False
        #: the gzip data ended before its end-of-stream marker
        self.cut = False
        #: bytes inflated and returned so far; compressed bytes read from ``raw``
        self.inflated = 0
        self.compressed_read = 0
        #: the compressed offset of the member being inflated (or of the bytes where one should have started)
        self.member_at = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        n = len(b)
        while n and not (self.cut or self._end):
            if self._d is None and not self._member():
                break
            out = self._d.decompress(self._in, n)
            if self._d.eof:
                # the member's trailer checked: the next member (or padding, or the end) follows. Its bytes are
                # ``unused_data``; ``unconsumed_tail`` (input held back by the ``n`` limit) holds them too then
                self._in, self._d = self._d.unused_data, None
            else:
                self._in = self._d.unconsumed_tail
            if out:
                b[: len(out)] = out
                self.inflated += len(out)
                return len(out)
            if self._d is None:
                continue
            more = self._read()
            if not more:
                self.cut = True
                break
            self._in = self._in + more if self._in else more
        return 0

    def _read(self) -> bytes:
        more = self._raw.read(self._piece)
        self.compressed_read += len(more)
        return more

    def _member(self) -> bool:
        """Past zero padding, a member starts (True: its magic checked, a decompressor made) or the stream ends
        (False). Raises gzip.BadGzipFile for other bytes."""
        while True:
            self._in = self._in.lstrip(b"\0")
            more = b"" if len(self._in) >= 2 else self._read()
            if not more:
                break
            self._in += more
        self.member_at = self.compressed_read - len(self._in)
        if not self._in:
            self._end = True
            return False
        if self._in == GZIP_MAGIC[:1]:  # the next member's first byte, then the end: a cut (gzip(1) says so)
            self.cut = True
            return False
        if self._in[:2] != GZIP_MAGIC:
            raise gzip.BadGzipFile(f"Not a gzipped file ({self._in[:2]!r})")
        self._d = zlib_ng.decompressobj(31)
        return True

    def error_words(self, e: BaseException) -> str:
        """Where a read raised ``e`` (readinto's gzip.BadGzipFile or zlib_ng.error) and why, for the one-line
        error: at the compressed byte where a member should have started, after every byte inflated before it;
        or in the member that starts at a compressed byte (where in it is not known: zlib does not say, and a
        CRC-32 or length that does not match is found at the member's end, breaker39). A record reader's own
        offset can lie megabytes before either: it names the first record not yet read whole."""
        if isinstance(e, gzip.BadGzipFile):  # every byte before it inflated
            return f"at compressed byte {self.member_at}, after {self.inflated} {plural(self.inflated, 'byte')} inflated: {e}"
        # anywhere in the member: a CRC-32 that does not match is found at its end
        return f"in the member that starts at compressed byte {self.member_at}: {e}"

    def close(self) -> None:
        self._raw.close()
        super().close()


def header_cut_words(gz: GzipStream | None) -> str:
    """Where gzip data that ended before its end-of-stream marker cut the capture's header: "before the capture
    header", or "inside the capture header (after N bytes inflated)"."""
    if gz is None or not gz.inflated:
        return "before the capture header"
    return f"inside the capture header (after {gz.inflated} {plural(gz.inflated, 'byte')} inflated)"


def read_error(path: str, e: OSError, n: int | None, compressed: bool = False) -> CaptureError:
    """The one-line error for a read of ``path`` that failed with ``e`` after ``n`` bytes of the file as stored
    (``compressed``: a gzip file's compressed bytes) were read: "read error after N bytes read (strerror)";
    ``n`` None (not counted): no count said."""
    after = ""
    if n is not None:
        after = f" after {n} {'compressed ' if compressed else ''}{plural(n, 'byte')} read"
    return CaptureError(f"{path}: read error{after} ({e.strerror or e})")


def read_exactly(f: io.BufferedIOBase, n: int) -> bytes:
    """Up to ``n`` bytes; fewer only at end of stream (a gzip stream or pipe may return short reads)."""
    buf = f.read(n)
    if len(buf) == n or not buf:
        return buf
    parts = [buf]
    got = len(buf)
    while got < n:
        more = f.read(n - got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


#: the pipe buffer asked for a capture read from a pipe (bytes; Linux fcntl F_SETPIPE_SZ, at most
#: /proc/sys/fs/pipe-max-size for an unprivileged process, 1 MiB by default)
PIPE_BYTES = 1 << 20


def widened(f: io.FileIO) -> io.FileIO:
    """``f``, whose pipe buffer (a pipe's: standard input, a FIFO, a process substitution) is made ``PIPE_BYTES``
    where the system allows it: reads then return up to 1 MiB where the default 64 KiB buffer gave 64 KiB each
    (16 times the system calls, and a wake-up of the writer each: the 1M-frame bulk capture through ``cat |``
    took 2.41 CPU s, 2.01 with it; bench/modes.py). A file, a pipe already as large, or one the system keeps
    smaller is left as it is (never shrunk)."""
    get_size, set_size = getattr(fcntl, "F_GETPIPE_SZ", None), getattr(fcntl, "F_SETPIPE_SZ", None)
    if get_size is not None and set_size is not None:
        try:
            if stat.S_ISFIFO(os.fstat(f.fileno()).st_mode) and fcntl.fcntl(f.fileno(), get_size) < PIPE_BYTES:
                fcntl.fcntl(f.fileno(), set_size, PIPE_BYTES)
        except OSError:
            pass  # EPERM above pipe-max-size or the user's pipe pages: the pipe's own size serves
    return f


#: Raw reads are gathered into buffers of this many bytes, each hashed by the hashing thread when full.
_DIGEST_BLOCK = 1 << 20
#: buffers in use at once (filling, queued, hashing): the reader waits for the hash when all are taken
_DIGEST_BUFFERS = 8
#: a read of at least this many bytes into memory lent by its owner (``DigestingRaw.lend``) is hashed where it lies
_LENT_MIN = 1 << 20


class DigestingRaw(io.RawIOBase):
    """A raw byte stream that feeds every byte read from it, in order, to a hash of ``algorithm`` (digest.py
    ``DIGESTS``).

    The bytes read are copied into one of ``_DIGEST_BUFFERS`` reused buffers of ``_DIGEST_BLOCK`` bytes (one
    copy, no allocation per read), and each full buffer is hashed by a helper thread (hashlib and blake3 release the
    GIL for large blocks, so the hash runs on another core instead of on the replay's critical path), which hands the
    buffer back; small reads are gathered the same way. A read of ``_LENT_MIN`` bytes or more into ``lend``'s
    buffer is not copied: the thread hashes it where it lies, in stream order with the rest, and the owner calls
    ``settle()`` before it writes to that buffer again or lets it go. ``hexdigest()`` reads what is left of the
    stream (a file's bytes after the last record, padding) so the digest is always that of the whole stream, then
    waits for the thread.
    Raises (from ``readinto``/``hexdigest``): OSError of the underlying stream; ValueError (``__init__``) for an
    unknown algorithm.
    """

    def __init__(self, raw: io.RawIOBase, algorithm: str = DEFAULT_DIGEST) -> None:
        super().__init__()
        self._raw = raw
        self.algorithm = algorithm
        self._hash = new_hash(algorithm)
        self._buf = bytearray(_DIGEST_BLOCK)  # the buffer being filled
        self._fill = 0
        self._made = 1  # buffers allocated (at most _DIGEST_BUFFERS)
        self._free: queue.SimpleQueue[bytearray] = queue.SimpleQueue()
        self._queue: queue.SimpleQueue[
            tuple[bytearray, int] | tuple[memoryview, bytearray] | threading.Event | None
        ]
        self._queue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self.bytes_read = 0
        self._lent: bytearray | None = None  # the buffer lent (``lend``)
        self._unsettled = False  # lent bytes were queued since the last ``settle``

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._raw.fileno()

    def lend(self, buf: bytearray | None) -> None:
        """Reads into ``buf`` (its owner's, reused: None ends the loan) need not be copied: the owner calls
        ``settle()`` before it writes to ``buf`` again or drops it (the thread may still be hashing it)."""
        self._lent = buf

    def settle(self) -> None:
        """Wait until the thread has hashed every lent read queued (nothing to wait for when none was)."""
        if self._unsettled and self._thread is not None:
            done = threading.Event()
            self._queue.put(done)
            done.wait()
        self._unsettled = False

    def readinto(self, b) -> int:
        n = self._raw.readinto(b)
        if n:
            self.bytes_read += n
            src = memoryview(b).cast("B")[:n]
            lent = self._lent
            if lent is not None and n >= _LENT_MIN and not src.readonly and _inside(src, lent):
                # hashed where it lies (after the bytes gathered before it): the owner settles before reuse
                if self._fill:
                    self._hand_over()
                self._start()
                self._queue.put((src, lent))
                self._unsettled = True
                return n
            done = 0
            while done < n:
                k = min(n - done, _DIGEST_BLOCK - self._fill)
                self._buf[self._fill : self._fill + k] = src[done : done + k]
                self._fill += k
                done += k
                if self._fill == _DIGEST_BLOCK:
                    self._hand_over()
        return n or 0

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name=f"gro-replay-{self.algorithm}", daemon=True
            )
            self._thread.start()

    def _hand_over(self) -> None:
        """Queue the buffer being filled for the hashing thread; take a free one (wait when all are in use)."""
        self._start()
        self._queue.put((self._buf, self._fill))
        if self._made < _DIGEST_BUFFERS:
            self._made += 1
            self._buf = bytearray(_DIGEST_BLOCK)
        else:
            self._buf = self._free.get()
        self._fill = 0

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            if isinstance(item, threading.Event):
                item.set()  # ``settle``: everything queued before it is hashed
                continue
            buf, n = item
            if isinstance(buf, memoryview):
                self._hash.update(buf)  # lent bytes (``n``: their owner's buffer, kept alive until hashed)
                continue
            assert isinstance(n, int)
            with memoryview(buf) as v:
                self._hash.update(v[:n])
            self._free.put(buf)

    def _stop(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        self._unsettled = False

    def hexdigest(self) -> str:
        """The digest (hex) of every byte of the stream: what was read, then the rest up to its end."""
        buf = bytearray(_DIGEST_BLOCK)
        while self.readinto(buf):
            pass
        self._stop()
        with memoryview(self._buf) as v:
            self._hash.update(v[: self._fill])
        self._fill = 0
        return self._hash.hexdigest()

    def close(self) -> None:
        self._stop()
        try:
            self._raw.close()
        finally:
            super().close()


def _inside(view: memoryview, buf: bytearray) -> bool:
    """``view``'s bytes (writable, non-empty) lie in ``buf``'s memory: a read into the lent buffer, not into a
    reader's own."""
    if not len(buf):
        return False
    lo = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    at = ctypes.addressof(ctypes.c_char.from_buffer(view))
    return lo <= at and at + view.nbytes <= lo + len(buf)
