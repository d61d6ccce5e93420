"""Streaming capture reader: pcap and pcapng (optionally gzip-compressed) to ``(ts_ns, buf, orig_len, linktype)``.

The file formats are dpkt's: the pcap file header is parsed by ``dpkt.pcap.FileHdr``/``LEFileHdr`` and the
record header layout is ``dpkt.pcap.PktHdr``'s; pcapng section and interface blocks are parsed by
``dpkt.pcapng.SectionHeaderBlock``/``InterfaceDescriptionBlock`` and the packet-block layouts are
``dpkt.pcapng.EnhancedPacketBlock``/``PacketBlock``'s. Per-record headers are unpacked with precompiled
``struct.Struct`` objects built from those dpkt layouts instead of a dpkt object per frame (a dpkt object
per record caps reading at ~350k frames/s), and timestamps are kept as integer nanoseconds: dpkt's readers
return float (or ``Decimal``) seconds, and ``dpkt.pcapng.Reader`` applies the first interface's link type
and resolution to every packet.

The file is read as a stream, one record at a time; nothing holds the whole file in memory. Any stream works:
a file, ``-`` (standard input), a FIFO, ``/dev/stdin``, a process substitution. A short read is never taken for
the end of the stream (only a read of 0 bytes is), and the file's SHA-256 (``Capture.sha256``) is computed from
the bytes as they are read (``_DigestingRaw``): the path is never opened a second time.

Left out: pcapng Simple Packet Blocks carry no timestamp and are yielded with the previous packet's
timestamp; pcap FCS bits in the link-type field are ignored (the FCS stays in ``buf``); pcapng options
other than ``if_tsresol``/``if_tsoffset`` are not interpreted.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import math
import os
import queue
import struct
import sys
import threading
import zlib
from collections.abc import Iterator
from typing import BinaryIO

import dpkt
import dpkt.pcap
import dpkt.pcapng

DLT_EN10MB = 1
DLT_RAW = 101
DLT_RAW_ALT12 = 12  #: DLT_RAW on most BSDs/Linux libpcap before LINKTYPE_ values existed
DLT_RAW_ALT14 = 14  #: DLT_RAW on OpenBSD
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
DLT_LINUX_SLL = 113
DLT_LINUX_SLL2 = 276

#: Link types whose frames start at the IP header.
RAW_LINKTYPES = frozenset({DLT_RAW, DLT_RAW_ALT12, DLT_RAW_ALT14, LINKTYPE_IPV4, LINKTYPE_IPV6})
SUPPORTED_LINKTYPES = frozenset({DLT_EN10MB, DLT_LINUX_SLL, DLT_LINUX_SLL2}) | RAW_LINKTYPES

#: Largest caplen accepted; a record claiming more is corrupt (matches tcpdump's MAXIMUM_SNAPLEN).
MAX_CAPLEN = 262144
#: Largest pcapng block read into memory (packet, section and interface blocks); others are skipped.
_MAX_BLOCK_LEN = 16 << 20

_NS = 1_000_000_000
#: the largest timestamp (ns since the epoch) a record may carry: int64, as the JSON schema's integers
_TS_NS_MAX = (1 << 63) - 1

# dpkt.pcap defines DLT_RAW as 12 (14 on OpenBSD) and reuses 253; the first name defined wins.
_DLT_NAMES: dict[int, str] = {}
for _name, _value in vars(dpkt.pcap).items():
    if _name.startswith("DLT_") and isinstance(_value, int):
        _DLT_NAMES.setdefault(_value, _name[4:])
_DLT_NAMES.update({DLT_RAW: "RAW", LINKTYPE_IPV4: "IPV4", LINKTYPE_IPV6: "IPV6"})
del _name, _value

_GZIP_MAGIC = b"\x1f\x8b"
_PCAP_NANO_MAGICS = frozenset({dpkt.pcap.TCPDUMP_MAGIC_NANO, dpkt.pcap.PMUDPCT_MAGIC_NANO})
_PCAPNG_SHB = dpkt.pcapng.PCAPNG_BT_SHB
_PCAPNG_IDB = dpkt.pcapng.PCAPNG_BT_IDB
_PCAPNG_EPB = dpkt.pcapng.PCAPNG_BT_EPB
_PCAPNG_PB = dpkt.pcapng.PCAPNG_BT_PB
_PCAPNG_SPB = dpkt.pcapng.PCAPNG_BT_SPB
_PCAPNG_OPT_IF_NAME = 2  #: pcapng IDB option if_name (draft-ietf-opsawg-pcapng §4.2)

# pcap record header (dpkt.pcap.PktHdr): tv_sec, tv_usec|tv_nsec, caplen, len. The modified-pcap header
# (PktModHdr) starts with the same four fields.
_PCAP_REC = {
    "<": struct.Struct(dpkt.pcap.LEPktHdr.__hdr_fmt__),
    ">": struct.Struct(dpkt.pcap.PktHdr.__hdr_fmt__),
}


def _block_fields(cls: type) -> struct.Struct:
    """Struct for a dpkt pcapng block class's fields after type and length, trailing length excluded."""
    fmt = cls.__hdr_fmt__
    return struct.Struct(fmt[0] + fmt[3:-1])


# pcapng block header: type, total length.
_NG_BLK = {"<": struct.Struct("<II"), ">": struct.Struct(">II")}
# EPB after the block header: iface_id, ts_high, ts_low, caplen, pkt_len (dpkt EnhancedPacketBlock).
_NG_EPB = {
    "<": _block_fields(dpkt.pcapng.EnhancedPacketBlockLE),
    ">": _block_fields(dpkt.pcapng.EnhancedPacketBlock),
}
# PB after the block header: iface_id, drops_count, ts_high, ts_low, caplen, pkt_len (dpkt PacketBlock).
_NG_PB = {"<": _block_fields(dpkt.pcapng.PacketBlockLE), ">": _block_fields(dpkt.pcapng.PacketBlock)}
_NG_U32 = {"<": struct.Struct("<I"), ">": struct.Struct(">I")}
_NG_I64 = {"<": struct.Struct("<q"), ">": struct.Struct(">q")}

# dpkt raises these from its Packet classes; gzip and the file object raise the rest.
_READ_ERRORS = (OSError, EOFError, ValueError, IndexError, struct.error, zlib.error, dpkt.UnpackError)


class CaptureError(Exception):
    """A capture that cannot be read. ``str(e)`` is one user-facing line starting with the path."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


def _linktype_error(path: str, linktype: int) -> CaptureError:
    name = _DLT_NAMES.get(linktype)
    named = f"{linktype} ({name})" if name else str(linktype)
    return CaptureError(
        f"{path}: unsupported link type {named}; supported: EN10MB, LINUX_SLL, LINUX_SLL2, RAW"
    )


def _read_exactly(f: BinaryIO, n: int) -> bytes:
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


class _DigestingRaw(io.RawIOBase):
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

    def readinto(self, b) -> int:  # type: ignore[override]
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


class Capture:
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
        sha256(): the SHA-256 of the whole file or stream, from the bytes read (call after iterating).

    Raises (from iteration): CaptureError for corrupt records, unsupported link types of later pcapng
    interfaces, corrupt gzip data and read errors. A record cut short at end of file does not raise.
    """

    def __init__(
        self, path: str, raw: BinaryIO, f: BinaryIO, compressed: bool, digest: _DigestingRaw | None = None
    ) -> None:
        self.path = path
        self.compressed = compressed
        self.truncated_records = 0
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
        self.pcap_layout: tuple[str, int, int] | None = None
        self._raw = raw
        self._digest = digest
        self._f = f
        self._offset = 0  # byte offset of the next record in the decompressed stream
        head = _read_exactly(f, 4)
        if not head:
            raise CaptureError(f"{path}: empty file" + (" (after gzip decompression)" if compressed else ""))
        if len(head) < 4:
            raise CaptureError(f"{path}: not a pcap or pcapng file (only {len(head)} bytes)")
        magic = int.from_bytes(head, "big")
        if magic in dpkt.pcap.MAGIC_TO_PKT_HDR:
            self.format = "pcap"
            self._open_pcap(head, magic)
        elif magic == _PCAPNG_SHB:
            self.format = "pcapng"
            self._open_pcapng(head)
        else:
            raise CaptureError(f"{path}: not a pcap or pcapng file (magic 0x{magic:08x})")

    # --- pcap ---

    def _open_pcap(self, head: bytes, magic: int) -> None:
        size = dpkt.pcap.FileHdr.__hdr_len__
        buf = head + _read_exactly(self._f, size - len(head))
        if len(buf) < size:
            raise CaptureError(f"{self.path}: pcap file header cut short ({len(buf)} of {size} bytes)")
        rec_cls = dpkt.pcap.MAGIC_TO_PKT_HDR[magic]
        order = rec_cls.__hdr_fmt__[0]
        fh = dpkt.pcap.LEFileHdr(buf) if order == "<" else dpkt.pcap.FileHdr(buf)
        # The upper bits of the pcap link-type field carry FCS information, not the link type.
        linktype = fh.linktype & 0xFFFF
        if linktype not in SUPPORTED_LINKTYPES:
            raise _linktype_error(self.path, linktype)
        self.linktype = linktype
        self._offset = size
        #: (byte order, record header bytes, ns per timestamp fraction unit): what ``chunks.PcapChunks`` needs
        self.pcap_layout = (order, rec_cls.__hdr_len__, 1 if magic in _PCAP_NANO_MAGICS else 1000)
        self._iter = self._iter_pcap(
            _PCAP_REC[order],
            rec_cls.__hdr_len__,
            1 if magic in _PCAP_NANO_MAGICS else 1000,
        )

    def _iter_pcap(
        self, rec: struct.Struct, rec_len: int, frac_ns: int
    ) -> Iterator[tuple[int, bytes, int, int]]:
        read = self._f.read
        unpack_from = rec.unpack_from
        linktype = self.linktype
        off = self._offset
        try:
            while True:
                hdr = read(rec_len)
                if len(hdr) < rec_len:
                    hdr += _read_exactly(self._f, rec_len - len(hdr)) if hdr else b""
                    if len(hdr) < rec_len:
                        if hdr:
                            self.truncated_records += 1
                        return
                sec, frac, caplen, orig_len = unpack_from(hdr)
                if caplen > MAX_CAPLEN:
                    raise self._corrupt(off, f"caplen {caplen} > {MAX_CAPLEN}")
                buf = read(caplen)
                if len(buf) < caplen:
                    buf += _read_exactly(self._f, caplen - len(buf))
                    if len(buf) < caplen:
                        self.truncated_records += 1
                        return
                off += rec_len + caplen
                yield sec * _NS + frac * frac_ns, buf, orig_len, linktype
        except EOFError:
            # gzip stream cut short: the record being read is lost, the ones before were yielded
            self.truncated_records += 1
        except _READ_ERRORS as e:
            raise self._read_error(e, off) from e

    # --- pcapng ---

    def _open_pcapng(self, head: bytes) -> None:
        # Interfaces of the current section: (linktype, num, den, offset_ns), ts_ns = units * num // den + off.
        self._ifaces: list[tuple[int, int, int, int]] = []
        self._order = "<"
        try:
            self._read_shb(head)
            while not self._ifaces:
                blk = self._read_block_header()
                if blk is None:
                    raise CaptureError(f"{self.path}: pcapng file has no interface description block")
                blk_type, blk_len, hdr = blk
                if blk_type in (_PCAPNG_EPB, _PCAPNG_PB, _PCAPNG_SPB):
                    raise self._corrupt(self._offset, "packet before any interface")
                if not self._other_block(blk_type, blk_len, hdr):
                    raise EOFError
        except EOFError:
            raise CaptureError(f"{self.path}: pcapng file header cut short") from None
        except CaptureError:
            raise
        except _READ_ERRORS as e:
            raise self._read_error(e, self._offset) from e
        self.linktype = self._ifaces[0][0]
        self._iter = self._iter_pcapng()

    def _read_block_header(self) -> tuple[int, int, bytes] | None:
        """Read a block's type and total length. Returns None at a clean end of file.

        Raises: EOFError when the header is cut short; CaptureError when the length is impossible.
        """
        hdr = _read_exactly(self._f, 8)
        if not hdr:
            return None
        if len(hdr) < 8:
            raise EOFError
        blk_type, blk_len = _NG_BLK[self._order].unpack(hdr)
        if blk_type == _PCAPNG_SHB:
            # a new section may switch byte order: the length is read after the byte-order magic
            return blk_type, 0, hdr
        if blk_len < 12 or blk_len & 3:
            raise self._corrupt(self._offset, f"block length {blk_len}")
        return blk_type, blk_len, hdr

    def _read_body(self, hdr: bytes, blk_len: int) -> bytes:
        """The whole block (header included) of ``blk_len`` bytes. Raises EOFError when cut short."""
        if blk_len > _MAX_BLOCK_LEN:
            raise self._corrupt(self._offset, f"block length {blk_len}")
        body = _read_exactly(self._f, blk_len - len(hdr))
        if len(body) < blk_len - len(hdr):
            raise EOFError
        return hdr + body

    def _read_shb(self, hdr: bytes) -> None:
        """Read a section header block whose first bytes are ``hdr``; starts a new interface list."""
        hdr += _read_exactly(self._f, 12 - len(hdr))
        if len(hdr) < 12:
            raise EOFError
        bom = hdr[8:12]
        if bom == b"\x1a\x2b\x3c\x4d":
            order, cls = ">", dpkt.pcapng.SectionHeaderBlock
        elif bom == b"\x4d\x3c\x2b\x1a":
            order, cls = "<", dpkt.pcapng.SectionHeaderBlockLE
        else:
            raise self._corrupt(self._offset, f"pcapng byte-order magic 0x{bom.hex()}")
        blk_len = _NG_BLK[order].unpack_from(hdr)[1]
        if blk_len < cls.__hdr_len__ or blk_len & 3:
            raise self._corrupt(self._offset, f"block length {blk_len}")
        shb = cls(self._read_body(hdr, blk_len))
        if shb.v_major != dpkt.pcapng.PCAPNG_VERSION_MAJOR:
            raise CaptureError(f"{self.path}: unsupported pcapng version {shb.v_major}.{shb.v_minor}")
        self._order = order
        self._ifaces = []
        self.interfaces = []
        self.iface_base = len(self.all_interfaces)
        self.sections += 1
        self._offset += blk_len

    def _read_idb(self, hdr: bytes, blk_len: int) -> None:
        """Read an interface description block. An unsupported link type does not reject the file: that
        interface's frames are yielded with its link type and skipped by the caller (``l2_normalize`` → None)."""
        order = self._order
        cls = (
            dpkt.pcapng.InterfaceDescriptionBlockLE if order == "<" else dpkt.pcapng.InterfaceDescriptionBlock
        )
        idb = cls(self._read_body(hdr, blk_len))
        name = None
        num, den, offset_ns = _NS, 1_000_000, 0  # if_tsresol absent: microseconds
        for opt in idb.opts:
            if opt.code == dpkt.pcapng.PCAPNG_OPT_IF_TSRESOL and opt.data:
                # MSB clear: 10^-n seconds per unit; set: 2^-n (dpkt reads this byte as signed)
                res = opt.data[0]
                den = 2 ** (res & 0x7F) if res & 0x80 else 10 ** (res & 0x7F)
            elif opt.code == dpkt.pcapng.PCAPNG_OPT_IF_TSOFFSET and len(opt.data) >= 8:
                offset_ns = _NG_I64[order].unpack_from(opt.data)[0] * _NS
            elif opt.code == _PCAPNG_OPT_IF_NAME and opt.data:
                name = bytes(opt.data).split(b"\0", 1)[0].decode("utf-8", "replace") or None
        g = math.gcd(num, den)
        self._ifaces.append((idb.linktype, num // g, den // g, offset_ns))
        self.interfaces.append((idb.linktype, name))
        self.all_interfaces.append((idb.linktype, name))
        self._offset += blk_len

    def _other_block(self, blk_type: int, blk_len: int, hdr: bytes) -> bool:
        """Consume a non-packet block. Returns False when it is cut short at end of file."""
        try:
            if blk_type == _PCAPNG_SHB:
                self._read_shb(hdr)
            elif blk_type == _PCAPNG_IDB:
                self._read_idb(hdr, blk_len)
            else:
                # skip without holding the block: name resolution, statistics, secrets, custom blocks
                left = blk_len - len(hdr)
                while left:
                    chunk = self._f.read(min(left, 1 << 16))
                    if not chunk:
                        return False
                    left -= len(chunk)
                self._offset += blk_len
        except EOFError:
            return False
        return True

    def _iter_pcapng(self) -> Iterator[tuple[int, bytes, int, int]]:
        f = self._f
        read = f.read
        ts_ns = 0
        off = self._offset
        try:
            while True:
                # per section: byte order and interfaces change only at a section header block
                order = self._order
                ifaces = self._ifaces
                blk_unpack = _NG_BLK[order].unpack
                epb_unpack_from = _NG_EPB[order].unpack_from
                u32_unpack_from = _NG_U32[order].unpack_from
                while True:
                    hdr = read(8)
                    if len(hdr) < 8:
                        hdr += _read_exactly(f, 8 - len(hdr)) if hdr else b""
                        if len(hdr) < 8:
                            if hdr:
                                self.truncated_records += 1
                            return
                    blk_type, blk_len = blk_unpack(hdr)
                    if blk_type == _PCAPNG_EPB or blk_type == _PCAPNG_PB or blk_type == _PCAPNG_SPB:
                        if (
                            blk_len & 3
                            or blk_len > _MAX_BLOCK_LEN
                            or blk_len < (16 if blk_type == _PCAPNG_SPB else 32)
                        ):
                            raise self._corrupt(off, f"block length {blk_len}")
                        left = blk_len - 8
                        body = read(left)
                        if len(body) < left:
                            body += _read_exactly(f, left - len(body))
                            if len(body) < left:
                                self.truncated_records += 1
                                return
                        if u32_unpack_from(body, left - 4)[0] != blk_len:
                            raise self._corrupt(off, "block lengths differ")
                        if blk_type == _PCAPNG_EPB:
                            iface_id, ts_high, ts_low, caplen, orig_len = epb_unpack_from(body)
                            data_off = 20
                        elif blk_type == _PCAPNG_PB:
                            iface_id, _drops, ts_high, ts_low, caplen, orig_len = _NG_PB[order].unpack_from(
                                body
                            )
                            data_off = 20
                        else:
                            # no timestamp, interface 0, data = min(orig_len, snaplen) bytes plus padding
                            iface_id = 0
                            orig_len = u32_unpack_from(body)[0]
                            caplen = min(orig_len, left - 8)
                            data_off = 4
                        if caplen > MAX_CAPLEN or data_off + ((caplen + 3) & ~3) > left - 4:
                            raise self._corrupt(off, f"caplen {caplen}, block length {blk_len}")
                        if iface_id >= len(ifaces):
                            raise self._corrupt(off, f"interface {iface_id} not described")
                        linktype, num, den, offset_ns = ifaces[iface_id]
                        if blk_type != _PCAPNG_SPB:
                            ts_ns = ((ts_high << 32) | ts_low) * num // den + offset_ns
                            if not 0 <= ts_ns <= _TS_NS_MAX:
                                # a 64-bit count at if_tsresol can leave the int64 ns range of every time here
                                raise self._corrupt(off, f"timestamp {ts_ns} ns outside 1970..2262")
                        off += blk_len
                        self.last_iface = iface_id
                        yield ts_ns, body[data_off : data_off + caplen], orig_len, linktype
                    else:
                        if blk_type != _PCAPNG_SHB and (blk_len < 12 or blk_len & 3):
                            raise self._corrupt(off, f"block length {blk_len}")
                        self._offset = off
                        if not self._other_block(blk_type, blk_len, hdr):
                            self.truncated_records += 1
                            return
                        off = self._offset
                        if blk_type == _PCAPNG_SHB:
                            break
        except EOFError:
            self.truncated_records += 1
        except CaptureError:
            raise
        except _READ_ERRORS as e:
            raise self._read_error(e, off) from e

    # --- common ---

    def _corrupt(self, off: int, detail: str) -> CaptureError:
        return CaptureError(f"{self.path}: corrupt record at offset {off} ({detail})")

    def _read_error(self, e: BaseException, off: int) -> CaptureError:
        if isinstance(e, (zlib.error, gzip.BadGzipFile)):
            return CaptureError(f"{self.path}: corrupt gzip data near offset {off} ({e})")
        if isinstance(e, OSError):
            return CaptureError(f"{self.path}: read error near offset {off} ({e.strerror or e})")
        return self._corrupt(off, f"{type(e).__name__}: {e}")

    def __iter__(self) -> Iterator[tuple[int, bytes, int, int]]:
        return self._iter

    @property
    def bytes_consumed(self) -> int:
        """Bytes read so far from the file or stream as stored (compressed bytes for gzip), for progress; 0 when
        opened without a digest."""
        return self._digest.bytes_read if self._digest is not None else 0

    def sha256(self) -> str:
        """SHA-256 (hex) of the file's bytes as stored (compressed for gzip), from the bytes read; the rest of
        the stream after the last record is read to its end first. Call once, after iterating.

        Raises: CaptureError on a read error.
        """
        if self._digest is None:
            raise ValueError("Capture opened without a digest")
        try:
            return self._digest.hexdigest()
        except OSError as e:
            raise CaptureError(f"{self.path}: read error ({e.strerror or e})") from None

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


def open_capture(path: str | os.PathLike[str]) -> Capture:
    """Open a pcap or pcapng capture, gzip-compressed or not (detected by the 1f 8b magic).

    Args: path: the capture file, or ``-`` for standard input; FIFOs, ``/dev/stdin`` and process substitutions
        are read as streams (each byte once; nothing is reopened or seeked).
    Returns: a Capture; the caller closes it (it is a context manager). Its ``sha256()`` hashes the bytes read.
    Raises: CaptureError (one line) when the file is missing, unreadable, a directory, empty, not pcap/pcapng,
        has a header cut short, corrupt gzip, or (pcap; pcapng first interface) an unsupported link type; or
        when ``-`` is a terminal.
    """
    name = os.fspath(path)
    try:
        if name == STDIN_PATH:
            if sys.stdin is not None and sys.stdin.isatty():
                raise CaptureError("-: standard input is a terminal: pipe a capture into it")
            fileio = io.FileIO(0, "rb", closefd=False)
        else:
            fileio = io.FileIO(name, "rb")
    except FileNotFoundError:
        raise CaptureError(f"{name}: no such file") from None
    except PermissionError:
        raise CaptureError(f"{name}: permission denied") from None
    except IsADirectoryError:
        raise CaptureError(f"{name}: is a directory") from None
    except OSError as e:
        raise CaptureError(f"{name}: cannot open ({e.strerror or e})") from None
    digest = _DigestingRaw(fileio)
    raw = io.BufferedReader(digest, buffer_size=1 << 16)  # owned, and closed, by the Capture
    f: BinaryIO = raw  # type: ignore[assignment]
    compressed = False
    try:
        if raw.peek(2)[:2] == _GZIP_MAGIC:
            f = gzip.open(raw, "rb")  # type: ignore[assignment]
            compressed = True
        return Capture(name, raw, f, compressed, digest)  # type: ignore[arg-type]
    except CaptureError:
        _close_quietly(f, raw)
        raise
    except EOFError:
        _close_quietly(f, raw)
        raise CaptureError(f"{name}: gzip data cut short before the capture header") from None
    except (OSError, ValueError, struct.error, zlib.error, dpkt.UnpackError) as e:
        _close_quietly(f, raw)
        if compressed and isinstance(e, (zlib.error, gzip.BadGzipFile)):
            raise CaptureError(f"{name}: corrupt gzip data ({e})") from None
        if isinstance(e, OSError):
            raise CaptureError(f"{name}: read error ({e.strerror or e})") from None
        raise CaptureError(f"{name}: corrupt capture header ({type(e).__name__}: {e})") from None


def _close_quietly(f: BinaryIO, raw: BinaryIO) -> None:
    for fo in (f, raw):
        try:
            fo.close()
        except OSError:
            pass


# --- link-layer normalisation ---

_ETH_HDR = struct.Struct("!6s6sH")
_SLL_HDR = struct.Struct("!HHH8sH")  # pkttype, hatype, halen, addr, protocol
_SLL2_HDR = struct.Struct("!HHIHBB8s")  # protocol, reserved, ifindex, hatype, pkttype, halen, addr
_ZERO_MAC = bytes(6)
_ETH_P_IP = 0x0800
_ETH_P_IPV6 = 0x86DD
#: Below this the SLL protocol field is a Linux ETH_P_* meta value (802.3, AX25, ALL, 802.2, CAN…).
_ETH_P_802_3_MIN = 0x0600
#: ARPHRD types whose SLL payload is not an L3 packet named by the protocol field.
#: CAN 280, IEEE80211 801, IEEE80211_PRISM 802, IEEE80211_RADIOTAP 803, IEEE802154 804, NETLINK 824.
_ARPHRD_NOT_L3 = frozenset({280, 801, 802, 803, 804, 824})
_IP_ETHERTYPE = {4: _ETH_P_IP, 6: _ETH_P_IPV6}


def _sll_to_eth(hatype: int, halen: int, addr: bytes, protocol: int, payload: bytes) -> bytes | None:
    if protocol < _ETH_P_802_3_MIN or hatype in _ARPHRD_NOT_L3:
        return None
    return _ETH_HDR.pack(_ZERO_MAC, addr[:6] if halen == 6 else _ZERO_MAC, protocol) + payload


def l2_normalize(buf: bytes, linktype: int) -> bytes | None:
    """Turn a captured frame into an Ethernet II frame (14-byte header, then the L3 packet).

    EN10MB frames are returned as is. LINUX_SLL (16-byte header) and LINUX_SLL2 (20-byte header) get
    dst 00:00:00:00:00:00, src = the link address when it is 6 bytes long (else zeros) and the SLL protocol
    as ethertype. RAW/IPV4/IPV6 frames get zero MACs and the ethertype of the IP version nibble.

    Args: buf: captured bytes; linktype: the frame's DLT.
    Returns: the Ethernet frame, or None when the link header is too short, the SLL protocol is not an
        ethertype (ETH_P_ALL, 802.2, CAN… or a non-L3 ARPHRD), the IP version is neither 4 nor 6, or the
        link type is not supported. Never raises.
    """
    if linktype == DLT_EN10MB:
        return buf if len(buf) >= 14 else None
    if linktype == DLT_LINUX_SLL:
        if len(buf) < 16:
            return None
        _pkttype, hatype, halen, addr, protocol = _SLL_HDR.unpack_from(buf)
        return _sll_to_eth(hatype, halen, addr, protocol, buf[16:])
    if linktype == DLT_LINUX_SLL2:
        if len(buf) < 20:
            return None
        protocol, _res, _ifindex, hatype, _pkttype, halen, addr = _SLL2_HDR.unpack_from(buf)
        return _sll_to_eth(hatype, halen, addr, protocol, buf[20:])
    if linktype in RAW_LINKTYPES:
        if not buf:
            return None
        ethertype = _IP_ETHERTYPE.get(buf[0] >> 4)
        if ethertype is None:
            return None
        return _ETH_HDR.pack(_ZERO_MAC, _ZERO_MAC, ethertype) + buf
    return None
