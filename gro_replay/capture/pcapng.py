"""The pcapng half of ``reader.Capture``: the file header (the first section and interface blocks, read as a
stream) and the parsing of section and interface blocks (dpkt's block classes; timestamps as integer nanoseconds
per interface: ``if_tsresol``, ``if_tsoffset``). The blocks after the header, packet blocks included, are walked by
pcapng_chunks.py ``PcapngChunks``, which calls ``_shb_layout``/``_start_section``/``_add_interface`` for section
and interface blocks in file order.

dpkt is imported by the parsers of section and interface blocks, on a file's first section, not with this module:
``import dpkt`` loads every protocol module of dpkt (~0.08 CPU s), which a classic pcap never needs. The block
types and the packet block's layout are therefore written out here: they are the values of dpkt.pcapng
(``PCAPNG_BT_*``, ``PacketBlock``), which tests/test_reader.py checks.
"""

from __future__ import annotations

import io
import math
import struct
import sys
from collections.abc import Iterator

from .stream import READ_ERRORS, CaptureError, read_exactly

#: Largest caplen accepted; a record claiming more is corrupt (matches tcpdump's MAXIMUM_SNAPLEN).
MAX_CAPLEN = 262144
#: Largest pcapng block read into memory (packet, section and interface blocks); others are skipped.
_MAX_BLOCK_LEN = 16 << 20

_NS = 1_000_000_000
#: the largest timestamp (ns since the epoch) a record may carry: int64, as the JSON schema's integers
_TS_NS_MAX = (1 << 63) - 1

# block types (dpkt.pcapng PCAPNG_BT_SHB, _IDB, _EPB, _PB, _SPB)
_PCAPNG_SHB = 0x0A0D0D0A
_PCAPNG_IDB = 0x00000001
_PCAPNG_EPB = 0x00000006
_PCAPNG_PB = 0x00000002
_PCAPNG_SPB = 0x00000003
_PCAPNG_OPT_IF_NAME = 2  #: pcapng IDB option if_name (draft-ietf-opsawg-pcapng §4.2)


# pcapng block header: type, total length.
_NG_BLK = {"<": struct.Struct("<II"), ">": struct.Struct(">II")}
# PB after the block header: iface_id, drops_count, ts_high, ts_low, caplen, pkt_len (dpkt PacketBlock's fields
# after type and length, its trailing length left out).
_NG_PB = {"<": struct.Struct("<HHIIII"), ">": struct.Struct(">HHIIII")}
_NG_U32 = {"<": struct.Struct("<I"), ">": struct.Struct(">I")}
_NG_I64 = {"<": struct.Struct("<q"), ">": struct.Struct(">q")}


def with_dpkt_errors(*errors: type[Exception]) -> tuple[type[Exception], ...]:
    """``errors`` and, once dpkt is loaded, ``dpkt.UnpackError`` (what dpkt's parsers of section and interface
    blocks raise for a malformed one). For ``except`` clauses (``except with_dpkt_errors(*READ_ERRORS)``), which
    evaluate it only when an exception is on its way: a dpkt error can be on its way only when dpkt is loaded, so
    this never imports it."""
    dpkt = sys.modules.get("dpkt")
    return errors if dpkt is None else (*errors, dpkt.UnpackError)


class PcapngBlocks:
    """Reading the pcapng blocks of a ``Capture`` (its base class): ``_open_pcapng`` reads the section header and
    the first interfaces; ``Capture._iter_pcapng`` the records (pcapng_chunks.py). Uses the capture's ``_f``, ``_offset``, ``_corrupt`` and
    ``_read_error``.
    """

    # the state of the Capture this class is the base of (reader.py ``Capture.__init__``), read and set here
    path: str
    linktype: int
    _f: io.BufferedIOBase
    _offset: int
    interfaces: list[tuple[int, str | None]]
    all_interfaces: list[tuple[int, str | None]]
    iface_base: int
    sections: int
    iface_sections: list[int]
    iface_bases: list[int]
    records_walked: int
    iface_records: list[int]
    iface_tsresol: list[int | None]
    snaplens: list[int]
    _iter: Iterator[tuple[int, bytes, int, int]]

    def _corrupt(self, off: int, detail: str) -> CaptureError:
        """The error for a corrupt block at file offset ``off``: reader.py ``Capture._corrupt``."""
        raise NotImplementedError

    def _read_error(self, e: BaseException, off: int) -> CaptureError:
        """The error for a failed read at file offset ``off``: reader.py ``Capture._read_error``."""
        raise NotImplementedError

    def _iter_pcapng(self) -> Iterator[tuple[int, bytes, int, int]]:
        """The records after the file header: reader.py ``Capture._iter_pcapng``."""
        raise NotImplementedError

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
        except with_dpkt_errors(*READ_ERRORS) as e:
            raise self._read_error(e, self._offset) from e
        self.linktype = self._ifaces[0][0]
        self._iter = self._iter_pcapng()

    def _read_block_header(self) -> tuple[int, int, bytes] | None:
        """Read a block's type and total length. Returns None at a clean end of file.

        Raises: EOFError when the header is cut short; CaptureError when the length is impossible.
        """
        hdr = read_exactly(self._f, 8)
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
        body = read_exactly(self._f, blk_len - len(hdr))
        if len(body) < blk_len - len(hdr):
            raise EOFError
        return hdr + body

    def _read_shb(self, hdr: bytes) -> None:
        """Read a section header block whose first bytes are ``hdr``; starts a new interface list."""
        hdr += read_exactly(self._f, 12 - len(hdr))
        if len(hdr) < 12:
            raise EOFError
        order, cls, blk_len = self._shb_layout(hdr, self._offset)
        self._start_section(self._read_body(hdr, blk_len), order, cls)
        self._offset += blk_len

    def _shb_layout(self, hdr: bytes, off: int) -> tuple[str, type, int]:
        """``(byte order, dpkt class, block length)`` of the section header block at file offset ``off`` from its
        first 12 bytes ``hdr``. Raises: CaptureError (corrupt) for a bad byte-order magic or block length."""
        import dpkt.pcapng

        bom = hdr[8:12]
        if bom == b"\x1a\x2b\x3c\x4d":
            order, cls = ">", dpkt.pcapng.SectionHeaderBlock
        elif bom == b"\x4d\x3c\x2b\x1a":
            order, cls = "<", dpkt.pcapng.SectionHeaderBlockLE
        else:
            raise self._corrupt(off, f"pcapng byte-order magic 0x{bom.hex()}")
        blk_len = _NG_BLK[order].unpack_from(hdr)[1]
        if blk_len < cls.__hdr_len__ or blk_len & 3 or blk_len > _MAX_BLOCK_LEN:
            raise self._corrupt(off, f"block length {blk_len}")
        return order, cls, blk_len

    def _start_section(self, block: bytes, order: str, cls: type) -> None:
        """Start the section whose section header block is ``block`` (all of it, ``_shb_layout``'s ``order`` and
        ``cls``). Raises: CaptureError for an unsupported version; dpkt's errors for a malformed block."""
        import dpkt.pcapng

        shb = cls(block)
        if shb.v_major != dpkt.pcapng.PCAPNG_VERSION_MAJOR:
            raise CaptureError(f"{self.path}: unsupported pcapng version {shb.v_major}.{shb.v_minor}")
        self._order = order
        self._ifaces = []
        self.interfaces = []
        self.iface_base = len(self.all_interfaces)
        self.sections += 1

    def _read_idb(self, hdr: bytes, blk_len: int) -> None:
        """Read an interface description block. An unsupported link type does not reject the file: that
        interface's frames are yielded with its link type and skipped by the caller (``l2_normalize`` → None)."""
        self._add_interface(self._read_body(hdr, blk_len))
        self._offset += blk_len

    def _add_interface(self, block: bytes) -> None:
        """Add the interface whose interface description block is ``block`` (all of it) to the current section:
        link type, name, snaplen (bytes, 0: no limit), timestamp units (``if_tsresol``) and offset (``if_tsoffset``).
        Raises: dpkt's errors for a malformed block."""
        import dpkt.pcapng

        order = self._order
        cls = (
            dpkt.pcapng.InterfaceDescriptionBlockLE if order == "<" else dpkt.pcapng.InterfaceDescriptionBlock
        )
        idb = cls(block)
        name = None
        num, den, offset_ns = _NS, 1_000_000, 0  # if_tsresol absent: microseconds
        tsresol = None
        for opt in idb.opts:
            if opt.code == dpkt.pcapng.PCAPNG_OPT_IF_TSRESOL and opt.data:
                # MSB clear: 10^-n seconds per unit; set: 2^-n (dpkt reads this byte as signed)
                res = tsresol = opt.data[0]
                den = 2 ** (res & 0x7F) if res & 0x80 else 10 ** (res & 0x7F)
            elif opt.code == dpkt.pcapng.PCAPNG_OPT_IF_TSOFFSET and len(opt.data) >= 8:
                offset_ns = _NG_I64[order].unpack_from(opt.data)[0] * _NS
            elif opt.code == _PCAPNG_OPT_IF_NAME and opt.data:
                name = bytes(opt.data).split(b"\0", 1)[0].decode("utf-8", "replace") or None
        g = math.gcd(num, den)
        self._ifaces.append((idb.linktype, num // g, den // g, offset_ns))
        self.interfaces.append((idb.linktype, name))
        self.all_interfaces.append((idb.linktype, name))
        self.snaplens.append(idb.snaplen)
        self.iface_sections.append(self.sections)
        self.iface_bases.append(self.iface_base)
        self.iface_records.append(self.records_walked)
        self.iface_tsresol.append(tsresol)

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
