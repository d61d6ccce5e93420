"""Streaming capture reader: pcap and pcapng (optionally gzip-compressed) to ``(ts_ns, buf, orig_len, linktype)``.

The file formats are dpkt's: the pcap magic numbers and the file and record header layouts are those of
``dpkt.pcap`` (``MAGIC_TO_PKT_HDR``, ``FileHdr``/``LEFileHdr``, ``PktHdr``/``PktModHdr``); pcapng section and
interface blocks are parsed by ``dpkt.pcapng.SectionHeaderBlock``/``InterfaceDescriptionBlock`` and the
packet-block layouts are ``dpkt.pcapng.EnhancedPacketBlock``/``PacketBlock``'s. Per-record headers are unpacked
with precompiled ``struct.Struct`` objects of those dpkt layouts instead of a dpkt object per frame (a dpkt object
per record caps reading at ~350k frames/s), and timestamps are kept as integer nanoseconds: dpkt's readers
return float (or ``Decimal``) seconds, and ``dpkt.pcapng.Reader`` applies the first interface's link type
and resolution to every packet. The pcap values are written out below (``_PCAP_MAGICS``, ``_PCAP_FILE_HDR``,
``_PCAP_REC``; tests/test_reader.py checks them against dpkt's): a classic pcap is read without importing dpkt,
whose package loads every protocol module it has (~0.08 CPU s of start-up per run).

The file is read as a stream, one record at a time; nothing holds the whole file in memory. Any stream works:
a file, ``-`` (standard input), a FIFO, ``/dev/stdin``, a process substitution. A short read is never taken for
the end of the stream (only a read of 0 bytes is), and the file's digest (``Capture.hexdigest``: BLAKE3 by default,
digest.py) is computed from the bytes as they are read (``stream.DigestingRaw``): the path is never opened a second
time.

Modules: ``stream.py`` (exact reads, ``CaptureError``, the digest), ``pcapng.py`` (the pcapng blocks),
``linktypes.py`` (DLT values, ``l2_normalize``); their names are re-exported here.

Left out: pcapng Simple Packet Blocks carry no timestamp and are yielded with the previous packet's
timestamp; pcap FCS bits in the link-type field are ignored (an FCS is found by its CRC-32 instead: fcs.py removes
it from ``buf``); pcapng options
other than ``if_tsresol``/``if_tsoffset`` are not interpreted.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import struct
import sys
from collections.abc import Iterator

from ..project import plural
from .digest import DEFAULT_DIGEST
from .fcs import fcs_removed
from .joined import PCAP_MAGICS, joined_before_corrupt
from .linktypes import (
    DLT_EN10MB,
    DLT_LINUX_SLL,
    DLT_LINUX_SLL2,
    DLT_NAMES,
    DLT_RAW,
    DLT_RAW_ALT12,
    DLT_RAW_ALT14,
    LINKTYPE_IPV4,
    LINKTYPE_IPV6,
    RAW_LINKTYPES,
    SUPPORTED_LINKTYPES,
    l2_normalize,
    linktype_error,
)
from .pcapng import _NS, _PCAPNG_SHB, MAX_CAPLEN, PcapngBlocks, with_dpkt_errors
from .pcapng_chunks import PcapngChunks
from .snaplen import CaplenOverSnaplen
from .stream import (
    GZIP_MAGIC,
    READ_ERRORS,
    ZLIB_ERRORS,
    CaptureError,
    DigestingRaw,
    GzipStream,
    header_cut_words,
    offset_words,
    read_error,
    read_exactly,
    widened,
)
from .time_order import TimeOrder

__all__ = [
    "DLT_EN10MB",
    "DLT_LINUX_SLL",
    "DLT_LINUX_SLL2",
    "DLT_NAMES",
    "DLT_RAW",
    "DLT_RAW_ALT12",
    "DLT_RAW_ALT14",
    "LINKTYPE_IPV4",
    "LINKTYPE_IPV6",
    "MAX_CAPLEN",
    "RAW_LINKTYPES",
    "STDIN_PATH",
    "SUPPORTED_LINKTYPES",
    "Capture",
    "CaptureError",
    "l2_normalize",
    "open_capture",
]

#: pcap magic number (read big-endian) -> (byte order, record header bytes) (joined.py, whose readers look for
#: them where a record should start)
_PCAP_MAGICS = PCAP_MAGICS
#: the first bytes of files that are not captures gro-replay reads, and what to do with them (the error names it):
#: compressed files other than gzip (xz, zstd, bzip2, lz4: their format specifications' magic numbers), zip
#: archives, and capture formats that editcap converts (Sun snoop, RFC 1761: "snoop\0\0\0"); each told by the
#: first 4 bytes, all a replay reads before it refuses (more could wait on a pipe whose writer is still open)
OTHER_FORMATS = tuple(
    (
        magic,
        f"{tool}-compressed",
        f"decompress it first ({tool} -dc FILE | gro-replay -); only gzip is read directly",
    )
    for magic, tool in (
        (b"\xfd7zX", "xz"),
        (b"\x28\xb5\x2f\xfd", "zstd"),
        (b"BZh", "bzip2"),
        (b"\x04\x22\x4d\x18", "lz4"),
    )
) + (
    (b"PK\x03\x04", "a zip archive", "extract the capture first (unzip -p ARCHIVE NAME | gro-replay -)"),
    (b"snoo", "a snoop capture", "convert it first (editcap -F pcap FILE out.pcap)"),
)


def other_format(path: str, head: bytes) -> str | None:
    """The error for ``path`` when ``head`` (its first bytes) is one of ``OTHER_FORMATS``: what it is and what to
    do; else None."""
    for magic, what, todo in OTHER_FORMATS:
        if head.startswith(magic):
            return f"{path}: {what}, not a pcap or pcapng file: {todo}"
    return None


_PCAP_NANO_MAGICS = frozenset({0xA1B23C4D, 0x4D3CB2A1})  # dpkt.pcap TCPDUMP_MAGIC_NANO, PMUDPCT_MAGIC_NANO
#: pcap file header (dpkt.pcap.FileHdr/LEFileHdr): magic, v_major, v_minor, thiszone, sigfigs, snaplen, linktype
_PCAP_FILE_HDR = {"<": struct.Struct("<IHHIIII"), ">": struct.Struct(">IHHIIII")}


# pcap record header (dpkt.pcap.PktHdr): tv_sec, tv_usec|tv_nsec, caplen, len. The modified-pcap header
# (PktModHdr) starts with the same four fields.
_PCAP_REC = {"<": struct.Struct("<IIII"), ">": struct.Struct(">IIII")}


class Capture(PcapngBlocks):
    """An open capture, iterated once as ``(ts_ns, buf, orig_len, linktype)`` tuples.

    ``ts_ns`` is the absolute timestamp in integer nanoseconds, ``buf`` the captured bytes, ``orig_len`` the
    wire length in bytes (``len(buf) < orig_len`` means the snaplen cut the frame) and ``linktype`` the DLT
    of the frame's interface.

    Attributes:
        path: the path as given, used in error messages.
        format: ``"pcap"`` or ``"pcapng"``.
        compressed: True when the file is gzip-compressed.
        linktype: DLT of the first (pcap: only) interface.
        truncated_records: records cut short at end of file (0 or 1), set when iteration stops.
        snaplens: the snaplen (bytes, 0: no limit) the file header declares (pcap: one) or each interface of
            ``all_interfaces`` (pcapng).
        caplen_over_snaplen: the records read so far that hold more bytes than their snaplen (snaplen.py).
        fcs_stripped, fcs_cut: the records read so far without the Ethernet FCS they were captured with, or
            without the part of it a snaplen left (fcs.py).
        digest_algorithm: the digest computed (digest.py ``DIGESTS``), None when opened without one.
        hexdigest(): that digest of the whole file or stream, from the bytes read (call after iterating).

    Raises (from iteration): CaptureError for corrupt records, another capture's header where a record starts
    (captures joined with cat: joined.py), unsupported link types of later pcapng interfaces, corrupt gzip data and
    read errors. A record cut short at end of file does not raise.
    """

    def __init__(
        self,
        path: str,
        raw: io.BufferedIOBase,
        f: io.BufferedIOBase,
        compressed: bool,
        digest: DigestingRaw | None = None,
    ) -> None:
        self.path = path
        #: the file opened (``open_capture``'s ``path``): ``path`` unless the capture is a copy named as its stream
        self.source = path
        self.compressed = compressed
        #: the gzip reader of a compressed capture (``stream_cut``), set by ``open_capture``
        self.gzip: GzipStream | None = None
        self.truncated_records = 0
        #: the declared snaplen (bytes, 0: no limit): pcap the file header's, pcapng each of ``all_interfaces``'
        self.snaplens: list[int] = []
        #: records longer than their declared snaplen, counted by the record readers as they read each record
        self.caplen_over_snaplen = CaplenOverSnaplen()
        #: records read without the Ethernet FCS they were captured with, and without the part of it the snaplen
        #: left (fcs.py), counted by the record readers
        self.fcs_stripped = 0
        self.fcs_cut = 0
        #: records timestamped before one read before them (capture/time_order.py)
        self.time_order = TimeOrder()
        #: pcapng: (link type, if_name or None) of each interface of the current section, by interface id
        self.interfaces: list[tuple[int, str | None]] = []
        #: pcapng: the interface id of the record last yielded, within its section (None for classic pcap)
        self.last_iface: int | None = None
        #: pcapng: (link type, if_name or None) of every interface of every section read so far, in order of
        #: appearance: a section's interface id ``i`` is ``all_interfaces[iface_base + i]`` (one list for files
        #: that are several sections, as ``cat a.pcapng b.pcapng`` makes them)
        self.all_interfaces: list[tuple[int, str | None]] = []
        #: pcapng: index in ``all_interfaces`` of the current section's interface 0
        self.iface_base = 0
        #: pcapng: section header blocks read so far
        self.sections = 0
        #: pcapng: the section (1-based) of each of ``all_interfaces``, and the index of its section's interface 0
        self.iface_sections: list[int] = []
        self.iface_bases: list[int] = []
        #: pcapng: records walked so far (pcapng_chunks.py ``PcapngChunks``), and how many were walked before each of
        #: ``all_interfaces`` was described (0: in the file header)
        self.records_walked = 0
        self.iface_records: list[int] = []
        #: pcapng: the ``if_tsresol`` byte of each of ``all_interfaces`` (None: absent, microseconds)
        self.iface_tsresol: list[int | None] = []
        self.pcap_layout: tuple[str, int, int] | None = None
        self._raw = raw
        self._digest = digest
        self._f = f
        self._offset = 0  # byte offset of the next record in the decompressed stream
        head = read_exactly(f, 4)
        if not head:
            what = "empty file" if _regular(raw) else "empty input"  # a pipe or terminal holds no file
            raise CaptureError(f"{path}: {what}" + (" (after gzip decompression)" if compressed else ""))
        if len(head) < 4:
            got = f"{len(head)} {plural(len(head), 'byte')}"
            raise CaptureError(f"{path}: not a pcap or pcapng file (only {got})")
        magic = int.from_bytes(head, "big")
        if magic in _PCAP_MAGICS:
            self.format = "pcap"
            self._open_pcap(head, magic)
        elif magic == _PCAPNG_SHB:
            self.format = "pcapng"
            self._open_pcapng(head)
        elif compressed and head.startswith(GZIP_MAGIC):  # one gzip is read; its data is gzip again
            raise CaptureError(
                f"{path}: gzip-compressed more than once, not a pcap or pcapng file inside the gzip: decompress "
                "the outer gzip first (gzip -dc FILE | gro-replay -; again for each further one)"
            )
        else:
            other = other_format(path, head)  # the 4 bytes read: reading more could wait on a pipe
            raise CaptureError(other or f"{path}: not a pcap or pcapng file (magic 0x{magic:08x})")

    # --- pcap ---

    def _open_pcap(self, head: bytes, magic: int) -> None:
        order, rec_len = _PCAP_MAGICS[magic]
        file_hdr = _PCAP_FILE_HDR[order]
        size = file_hdr.size
        buf = head + read_exactly(self._f, size - len(head))
        if len(buf) < size:
            raise CaptureError(f"{self.path}: pcap file header cut short ({len(buf)} of {size} bytes)")
        *_, snaplen, linktype_field = file_hdr.unpack(buf)
        # The upper bits of the pcap link-type field carry FCS information, not the link type.
        linktype = linktype_field & 0xFFFF
        if linktype not in SUPPORTED_LINKTYPES:
            raise linktype_error(self.path, linktype)
        self.linktype = linktype
        self.snaplens = [snaplen]
        self._offset = size
        #: (byte order, record header bytes, ns per timestamp fraction unit): what ``chunks.PcapChunks`` needs
        self.pcap_layout = (order, rec_len, 1 if magic in _PCAP_NANO_MAGICS else 1000)
        self._iter = self._iter_pcap(
            _PCAP_REC[order],
            rec_len,
            1 if magic in _PCAP_NANO_MAGICS else 1000,
        )

    def _iter_pcap(
        self, rec: struct.Struct, rec_len: int, frac_ns: int
    ) -> Iterator[tuple[int, bytes, int, int]]:
        read = self._f.read
        unpack_from = rec.unpack_from
        linktype = self.linktype
        ethernet = linktype == DLT_EN10MB
        snaplen = self.snaplens[0] or MAX_CAPLEN  # 0: no limit (no record holds more than MAX_CAPLEN)
        over = self.caplen_over_snaplen.add
        in_order = self.time_order.add
        off = self._offset
        last: tuple[int, bytes] | None = None  # the record header before this one (joined.py)
        try:
            while True:
                hdr = read(rec_len)
                if len(hdr) < rec_len:
                    hdr += read_exactly(self._f, rec_len - len(hdr)) if hdr else b""
                    if len(hdr) < rec_len:
                        if hdr:
                            self.truncated_records += 1
                        return
                sec, frac, caplen, orig_len = unpack_from(hdr)
                if caplen > MAX_CAPLEN:
                    raise joined_before_corrupt(
                        self.path, (off, hdr), last, self.compressed
                    ) or self._corrupt(off, f"caplen {caplen} > {MAX_CAPLEN}")
                last = (off, hdr)
                buf = read(caplen)
                if len(buf) < caplen:
                    buf += read_exactly(self._f, caplen - len(buf))
                    if len(buf) < caplen:
                        self.truncated_records += 1
                        return
                off += rec_len + caplen
                if caplen > snaplen:
                    over(snaplen, caplen)
                if ethernet:  # fcs.py: as a NIC with rx-fcs off
                    n, orig_len = fcs_removed(self, buf, orig_len)
                    buf = buf[:n]
                ts = sec * _NS + frac * frac_ns
                in_order(ts)
                yield ts, buf, orig_len, linktype
        except READ_ERRORS as e:
            raise self._read_error(e, off) from e

    # --- pcapng ---

    def _iter_pcapng(self) -> Iterator[tuple[int, bytes, int, int]]:
        """The records of the pcapng block walker (pcapng_chunks.py ``PcapngChunks``, the one parser of pcapng's blocks
        after the file header), one at a time; ``last_iface``/``iface_base`` name each record's interface."""
        walker = PcapngChunks(self, 1 << 20)
        bases = self.iface_bases
        while True:
            ch = walker.next()
            if ch is None:
                return
            buf = ch.buf
            assert ch.iface is not None and ch.linktype is not None
            for o, c, orig, ts, g, lt in zip(
                ch.data.tolist(),
                ch.caplen.tolist(),
                ch.origlen.tolist(),
                ch.ts_ns.tolist(),
                ch.iface.tolist(),
                ch.linktype.tolist(),
                strict=True,
            ):
                self.iface_base = bases[g]
                self.last_iface = g - bases[g]
                yield ts, bytes(buf[o : o + c]), orig, lt

    # --- common ---

    def _corrupt(self, off: int, detail: str) -> CaptureError:
        return CaptureError(f"{self.path}: corrupt record at {offset_words(off, self.compressed)} ({detail})")

    def _read_error(self, e: BaseException, off: int) -> CaptureError:
        if isinstance(e, (*ZLIB_ERRORS, gzip.BadGzipFile)):
            words = self.gzip.error_words(e) if self.gzip else f"near {offset_words(off, True)} ({e})"
            return CaptureError(f"{self.path}: corrupt gzip data {words}")
        if isinstance(e, OSError):  # where the read failed: after the bytes the file gave (no count: unsaid)
            return read_error(self.path, e, self._bytes_read(), bool(self.gzip))
        return self._corrupt(off, f"{type(e).__name__}: {e}")

    def __iter__(self) -> Iterator[tuple[int, bytes, int, int]]:
        return self._iter

    @property
    def bytes_consumed(self) -> int:
        """Bytes read so far from the file or stream as stored (compressed bytes for gzip), for progress; 0 when
        opened without a digest."""
        return self._bytes_read() or 0

    def _bytes_read(self) -> int | None:
        return self._digest.bytes_read if self._digest is not None else None  # None: not counted

    @property
    def stream_cut(self) -> bool:
        """True when the capture is gzip data that ended before its end-of-stream marker (RFC 1952 trailer): the
        records before the cut were read; a record cut with it is in ``truncated_records``."""
        return self.gzip is not None and self.gzip.cut

    @property
    def digest_algorithm(self) -> str | None:
        """The digest ``hexdigest`` computes (digest.py ``DIGESTS``); None: opened without one."""
        return self._digest.algorithm if self._digest is not None else None

    def hexdigest(self) -> str:
        """The digest (hex, ``digest_algorithm``) of the file's bytes as stored (compressed for gzip), from the
        bytes read; the rest of the stream after the last record is read to its end first. Call once, after
        iterating. Raises: CaptureError on a read error."""
        if self._digest is None:
            raise ValueError("Capture opened without a digest")
        try:
            return self._digest.hexdigest()
        except OSError as e:
            raise read_error(self.path, e, self._bytes_read(), bool(self.gzip)) from None

    def close(self) -> None:
        """Close the file. Idempotent."""
        try:
            self._f.close()
        finally:
            self._raw.close()

    def __enter__(self) -> Capture:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: The path that names standard input.
STDIN_PATH = "-"


def path_words(path: str) -> str:
    """A capture's path as a report's sentences name it: ``-`` (``STDIN_PATH``) is "standard input"; a file named
    ``-`` is given as ``./-``, so nothing else is renamed."""
    return "standard input" if path == STDIN_PATH else path


def open_stream(path: str | os.PathLike[str], name: str | None = None) -> io.FileIO:
    """The file or stream at ``path`` opened for reading bytes: ``-`` is standard input (descriptor 0, left open
    when the result is closed). ``name`` (default ``path``) names it in errors.

    Raises: CaptureError (one line) when it is missing, unreadable or a directory, or ``-`` is a terminal.
    """
    shown = os.fspath(path) if name is None else name
    try:
        if os.fspath(path) == STDIN_PATH:
            if sys.stdin is not None and sys.stdin.isatty():
                raise CaptureError("standard input is a terminal: pipe a capture into it")
            return widened(io.FileIO(0, "rb", closefd=False))
        return widened(io.FileIO(os.fspath(path), "rb"))
    except FileNotFoundError:
        raise CaptureError(f"{shown}: no such file") from None
    except PermissionError:
        raise CaptureError(f"{shown}: permission denied") from None
    except IsADirectoryError:
        raise CaptureError(f"{shown}: is a directory") from None
    except OSError as e:
        raise CaptureError(f"{shown}: cannot open ({e.strerror or e})") from None


def open_capture(
    path: str | os.PathLike[str], digest: str | None = DEFAULT_DIGEST, name: str | None = None
) -> Capture:
    """Open a pcap or pcapng capture, gzip-compressed or not (detected by the 1f 8b magic).

    Args: path: the capture file, or ``-`` for standard input; FIFOs, ``/dev/stdin`` and process substitutions
        are read as streams (each byte once; nothing is reopened or seeked). name: what error messages and
        ``Capture.path`` call it (default ``path``; capture/spool.py's copy of a stream is named as the stream).
    Returns: a Capture; the caller closes it (it is a context manager). Its ``hexdigest()`` is the ``digest``
        (digest.py ``DIGESTS``) of the bytes read (``digest=None``: no hash is computed, for a second read of a
        file, and ``hexdigest()`` raises ValueError).
        ``Capture.source`` is ``path`` (the file opened).
    Raises: CaptureError (one line) when the file is missing, unreadable, a directory, empty, not pcap/pcapng,
        has a header cut short, corrupt gzip, or (pcap; pcapng first interface) an unsupported link type; or
        when ``-`` is a terminal. ValueError for a ``digest`` not in digest.py ``DIGESTS``.
    """
    source = os.fspath(path)
    name = source if name is None else name
    cap = capture_of(open_stream(source, name), name, digest)
    cap.source = source
    return cap


def capture_of(fileio: io.RawIOBase, name: str, digest: str | None = DEFAULT_DIGEST) -> Capture:
    """``open_capture``'s work on a stream already open (``open_stream``'s, or capture/spool.py's copying one):
    the gzip, pcap or pcapng header read and checked, the Capture (named ``name``) returned; it owns ``fileio``.
    Raises: CaptureError, as ``open_capture``; a CaptureError that ``fileio`` itself raises passes unchanged."""
    hashing = DigestingRaw(fileio, digest) if digest else None
    raw = io.BufferedReader(hashing or fileio, buffer_size=1 << 16)  # owned, and closed, by the Capture
    f: io.BufferedIOBase = raw
    compressed = False
    gz: GzipStream | None = None
    try:
        if raw.peek(2)[:2] == GZIP_MAGIC:
            gz = GzipStream(raw)
            f = io.BufferedReader(gz, buffer_size=1 << 16)
            compressed = True
        cap = Capture(name, raw, f, compressed, hashing)
        cap.gzip = gz
        return cap
    except CaptureError:
        _close_quietly(f, raw)
        if gz is not None and gz.cut:
            raise CaptureError(f"{name}: gzip data cut short {header_cut_words(gz)}") from None
        raise
    except EOFError:
        _close_quietly(f, raw)
        raise CaptureError(f"{name}: gzip data cut short {header_cut_words(gz)}") from None
    except with_dpkt_errors(OSError, ValueError, struct.error, *ZLIB_ERRORS) as e:
        _close_quietly(f, raw)
        if gz is not None and isinstance(e, (*ZLIB_ERRORS, gzip.BadGzipFile)):
            raise CaptureError(f"{name}: corrupt gzip data {gz.error_words(e)}") from None
        if isinstance(e, OSError):
            raise read_error(name, e, hashing.bytes_read if hashing else None, gz is not None) from None
        raise CaptureError(f"{name}: corrupt capture header ({type(e).__name__}: {e})") from None


def _regular(f: io.IOBase) -> bool:
    """Whether ``f`` reads a regular file (not a pipe, FIFO, socket or terminal); True when it cannot tell."""
    try:
        return stat.S_ISREG(os.fstat(f.fileno()).st_mode)
    except (OSError, ValueError, AttributeError):  # io.UnsupportedOperation is an OSError
        return True


def _close_quietly(f: io.BufferedIOBase, raw: io.BufferedIOBase) -> None:
    for fo in (f, raw):
        try:
            fo.close()
        except OSError:
            pass
