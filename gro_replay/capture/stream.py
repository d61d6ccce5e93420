"""Reading a capture as a byte stream: ``CaptureError`` (every unreadable capture's one-line error), exact reads
that never take a short read for the end, the errors a read can raise, and ``DigestingRaw``, the SHA-256 of the
bytes as they are read (the path is never opened a second time).
"""

from __future__ import annotations

import hashlib
import io
import queue
import struct
import threading
import zlib

import dpkt

# dpkt raises these from its Packet classes; gzip and the file object raise the rest.
READ_ERRORS = (OSError, EOFError, ValueError, IndexError, struct.error, zlib.error, dpkt.UnpackError)


class CaptureError(Exception):
    """A capture that cannot be read. ``str(e)`` is one user-facing line starting with the path."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


class GzipStream(io.RawIOBase):
    """A gzip file object read one decompressed piece at a time (``read1``), for ``io.BufferedReader``.

    A stream cut before its end-of-stream marker (the member's CRC32/ISIZE trailer, RFC 1952 §2.3) makes ``gzip``
    raise EOFError; here it ends like a file (a 0-byte read) and sets ``cut``, so every reader sees the same end of
    stream as for an uncompressed file: a record is counted as truncated only when part of one was read, and the
    report says the stream was cut (``cut``). ``read1`` raises only when nothing is left, so no byte decompressed
    before the cut is lost. zlib and BadGzipFile errors propagate.
    """

    def __init__(self, g: io.BufferedIOBase) -> None:
        super().__init__()
        self._g = g
        #: the gzip data ended before its end-of-stream marker
        self.cut = False

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        if self.cut:
            return 0
        try:
            piece = self._g.read1(len(b))
        except EOFError:
            self.cut = True
            return 0
        n = len(piece)
        b[:n] = piece
        return n

    def close(self) -> None:
        self._g.close()
        super().close()


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


#: Raw reads are gathered to about this many bytes before they are handed to the hashing thread.
_DIGEST_BLOCK = 1 << 20


class DigestingRaw(io.RawIOBase):
    """A raw byte stream that feeds every byte read from it, in order, to a SHA-256.

    The bytes read are copied and handed to a helper thread (hashlib releases the GIL for large blocks, so the
    hash runs on another core instead of on the replay's critical path); small reads are gathered first.
    ``hexdigest()`` reads what is left of the stream (a file's bytes after the last record, padding) so the
    digest is always that of the whole stream, then waits for the thread.
    Raises (from ``readinto``/``hexdigest``): OSError of the underlying stream.
    """

    def __init__(self, raw: io.RawIOBase) -> None:
        super().__init__()
        self._raw = raw
        self._sha = hashlib.sha256()
        self._pending = bytearray()
        self._queue: queue.Queue[bytes | None] = queue.Queue(maxsize=8)
        self._thread: threading.Thread | None = None
        self.bytes_read = 0

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._raw.fileno()

    def readinto(self, b) -> int:
        n = self._raw.readinto(b)
        if n:
            self.bytes_read += n
            self._pending += memoryview(b)[:n]
            if len(self._pending) >= _DIGEST_BLOCK:
                self._hand_over()
        return n or 0

    def _hand_over(self) -> None:
        block = bytes(self._pending)
        self._pending.clear()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="gro-replay-sha256", daemon=True)
            self._thread.start()
        self._queue.put(block)

    def _run(self) -> None:
        while True:
            block = self._queue.get()
            if block is None:
                return
            self._sha.update(block)

    def hexdigest(self) -> str:
        """SHA-256 (hex) of every byte of the stream: what was read, then the rest up to its end."""
        buf = bytearray(_DIGEST_BLOCK)
        while self.readinto(buf):
            pass
        if self._thread is not None:
            self._queue.put(bytes(self._pending))
            self._pending.clear()
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        else:
            self._sha.update(self._pending)
            self._pending.clear()
        return self._sha.hexdigest()

    def close(self) -> None:
        if self._thread is not None:
            self._pending.clear()
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        try:
            self._raw.close()
        finally:
            super().close()
