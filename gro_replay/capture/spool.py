"""A stream kept as a temporary file for a replay that reads its capture twice.

``--vxlan-port auto`` / ``--geneve-port auto`` / ``--detect-tunnels`` read the capture once to find the ports that
carry tunnel traffic and again to replay it (sim/ingest.py ``detect_tunnel_ports``). A regular file is opened
twice. A stream (``-``, a FIFO, ``/dev/stdin`` or a process substitution on a pipe) can be read once, so its bytes
are copied as they are read, unchanged (gzip stays compressed), into a temporary file in the system's temporary
directory (``$TMPDIR``, else ``/tmp``: ``tempfile.gettempdir``), and that copy is read as the file: the same
bytes give the same document (``input.sha256`` is the SHA-256 of the bytes read; a stream cut short is a file cut
short, its truncated record counted alike). The copy is removed when the replay ends, when it fails, and when
SIGINT or SIGTERM stops it (the CLI turns both into exceptions that unwind the stack: cli/entry.py).

Every other replay reads a stream as it comes, without a copy (``spooled`` is entered only for the options
above: sim/api.py ``replay_capture``). Memory: one ``COPY_BLOCK`` buffer; disk: the stream's bytes.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import tempfile
from collections.abc import Iterator

from .reader import STDIN_PATH, capture_of, open_stream
from .stream import CaptureError

#: bytes copied per read of the stream
COPY_BLOCK = 1 << 20
#: the temporary file's name: ``gro-replay-spool-XXXXXXXX.pcap`` in the temporary directory
SPOOL_PREFIX = "gro-replay-spool-"


def is_regular_file(path: str) -> bool:
    """True when ``path`` (not ``-``) is a regular file after symbolic links (``/dev/stdin`` redirected from a
    file is one): it can be opened and read more than once. False for streams and for paths that cannot be
    examined (opening them names the problem)."""
    try:
        return path != STDIN_PATH and stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


@contextlib.contextmanager
def spooled(path: str, why: str) -> Iterator[str]:
    """The path to read ``path``'s capture from, as often as needed, while the block runs: ``path`` itself when it
    is a regular file (or cannot be examined: opening it names the problem), else a temporary file holding every
    byte of the stream, read to its end first, and removed when the block ends (normally or by any exception). The
    stream's capture header is read and checked as it is copied (``capture_of``): a stream that is not a capture
    (or whose header is cut short or unsupported) is refused with the replay's own line before more is copied.

    ``why`` names what reads the capture twice in the error lines (``--vxlan-port/--geneve-port auto``).
    Raises: CaptureError, one line naming ``path``: the stream cannot be opened (``-`` a terminal …), read or
    taken as a capture, or the copy cannot be created or written (``No space left on device``, ``File too large``); the copy is removed.
    """
    if path != STDIN_PATH and (is_regular_file(path) or not os.path.exists(path)):
        yield path
        return
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
            with capture_of(_Tee(src, out, path, why, tmp), path, digest=False):
                pass
            _copy(src, out, path, why, tmp)
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

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        n = self._src.readinto(b) or 0
        _write_all(self._out, memoryview(b).cast("B")[:n], self._path, self._why, self._tmp)
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


def _copy(src, out, path: str, why: str, tmp: str) -> None:
    """Every byte of stream ``src`` written to ``out`` (the temporary file ``tmp``, unbuffered). Raises:
    CaptureError on a read error of the stream or a write error of the copy."""
    buf = bytearray(COPY_BLOCK)
    view = memoryview(buf)
    while True:
        try:
            n = src.readinto(buf)
        except OSError as e:
            raise CaptureError(f"{path}: read error ({e.strerror or e})") from None
        if not n:
            return
        _write_all(out, view[:n], path, why, tmp)


def _cannot_copy(path: str, why: str, where: str, e: OSError) -> CaptureError:
    return CaptureError(
        f"{path}: {why} reads the capture twice: the copy of the stream cannot be written in {where} "
        f"({e.strerror or e}); set TMPDIR to a directory with room, or name the port"
    )
