"""pcap output with exact integer-nanosecond timestamps.

The file header is ``dpkt.pcap.LEFileHdr`` and the record header layout ``dpkt.pcap.LEPktHdr``, the bytes
``dpkt.pcap.Writer`` writes on a little-endian host. ``dpkt.pcap.Writer`` itself is not used for records:
it takes float seconds, which around 1.6e9 s are only good to ~240 ns (1614373368.123456789 is written as
.123456717), and it picks the host's byte order. Output depends only on the inputs (no wall clock, fixed
little-endian order), so regenerated captures are byte-identical.

``PcapngWriter`` writes pcapng (dpkt's block classes, little-endian): a section header naming the tool, one
interface description block per interface (``if_name``, ``if_description``, ``if_tsresol`` 9: nanosecond
timestamps), and enhanced packet blocks with an interface id and an ``opt_comment``.

Left out: the packet direction (``epb_flags``).

dpkt is imported when a writer is made, not with this module (report/pcapout.py imports it for every replay, and
``import dpkt`` loads every protocol module of dpkt: ~0.08 CPU s); the record header's layout is written out
(``_REC``; tests/test_writer.py checks it against ``dpkt.pcap.LEPktHdr``).
"""

from __future__ import annotations

import os
import struct
from functools import cache
from typing import BinaryIO, TypeVar

from gro_replay.capture.reader import DLT_EN10MB

_NS = 1_000_000_000
_REC = struct.Struct("<IIII")  # dpkt.pcap.LEPktHdr: tv_sec, tv_usec|tv_nsec, caplen, len
_U32_MAX = 0xFFFFFFFF
#: the last nanosecond a classic pcap record holds (ts_sec is a u32: 2106-02-07 06:28:15.999999999 UTC)
PCAP_TS_NS_MAX = (_U32_MAX + 1) * _NS - 1
#: the last nanosecond a pcapng block at if_tsresol 9 holds (ts_high:ts_low is a u64: year 2554)
PCAPNG_TS_NS_MAX = (1 << 64) - 1


_W = TypeVar("_W", bound="_OutputFile")


class _OutputFile:
    """What both writers share: ``close`` (flush; close the file only when the writer opened it) and the context
    manager. Subclasses set ``_f`` (a binary file) and ``_owned``."""

    _f: BinaryIO
    _owned: bool

    def close(self) -> None:
        """Flush, and close the file when this writer opened it. Idempotent."""
        if self._f.closed:
            return
        if self._owned:
            self._f.close()
        else:
            self._f.flush()

    def __enter__(self: _W) -> _W:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class PcapWriter(_OutputFile):
    """Write frames to a little-endian pcap file, nanosecond resolution by default.

    Args:
        dest: a path (opened, and closed by ``close()``) or a writable binary file object (flushed, not
            closed, by ``close()``).
        linktype: DLT written in the file header (default EN10MB).
        snaplen: bytes kept per frame (default 262144); longer frames are cut and keep their ``orig_len``.
        nano: True for nanosecond timestamps (magic 0xa1b23c4d), False for microseconds (0xa1b2c3d4,
            ``ts_ns`` truncated to the microsecond).

    Raises: OSError when the path cannot be opened.
    """

    def __init__(
        self,
        dest: str | os.PathLike[str] | BinaryIO,
        *,
        linktype: int = DLT_EN10MB,
        snaplen: int = 262144,
        nano: bool = True,
    ) -> None:
        if isinstance(dest, (str, os.PathLike)):
            self._f: BinaryIO = open(dest, "wb")  # owned, and closed, by close()
            self._owned = True
        else:
            self._f = dest
            self._owned = False
        self.snaplen = snaplen
        self._frac_div = 1 if nano else 1000
        import dpkt.pcap

        magic = dpkt.pcap.TCPDUMP_MAGIC_NANO if nano else dpkt.pcap.TCPDUMP_MAGIC
        self._f.write(bytes(dpkt.pcap.LEFileHdr(magic=magic, snaplen=snaplen, linktype=linktype)))

    def write(self, ts_ns: int, buf: bytes, orig_len: int | None = None) -> None:
        """Append one record.

        Args:
            ts_ns: absolute timestamp in integer nanoseconds, 0 <= ts_ns < 2**32 s.
            buf: the frame bytes; cut to ``snaplen``.
            orig_len: wire length in bytes (default ``len(buf)``); keep it when ``buf`` was already cut.

        Raises: ValueError when ts_ns or orig_len does not fit the pcap record header.
        """
        sec, ns = divmod(ts_ns, _NS)
        if not 0 <= ts_ns <= PCAP_TS_NS_MAX:
            raise ValueError(f"timestamp {ts_ns} ns does not fit a pcap record (0 .. 2**32 s)")
        if orig_len is None:
            orig_len = len(buf)
        elif not len(buf) <= orig_len <= _U32_MAX:
            raise ValueError(f"orig_len {orig_len} is below the frame length {len(buf)} or above 2**32-1")
        if len(buf) > self.snaplen:
            buf = buf[: self.snaplen]
        self._f.write(_REC.pack(sec, ns // self._frac_div, len(buf), orig_len))
        self._f.write(buf)


class PcapngWriter(_OutputFile):
    """Write frames to a little-endian pcapng file: one section, fixed interfaces, a comment per packet.

    Args:
        dest: a path (opened, and closed by ``close()``) or a writable binary file object (flushed, not closed).
        interfaces: ``(name, description)`` per interface, in interface-id order; link type EN10MB each.
        application: the section header's ``shb_userappl`` (e.g. ``gro-replay 0.1.0``).
        snaplen: bytes kept per frame (default 262144); longer frames are cut and keep their wire length.

    Timestamps are integer nanoseconds (``if_tsresol`` 9), so they are exact. Output depends only on the inputs.
    Raises: OSError when the path cannot be opened or written.
    """

    def __init__(
        self,
        dest: str | os.PathLike[str] | BinaryIO,
        interfaces: list[tuple[str, str]],
        *,
        application: str = "gro-replay",
        snaplen: int = 262144,
    ) -> None:
        if isinstance(dest, (str, os.PathLike)):
            self._f: BinaryIO = open(dest, "wb")
            self._owned = True
        else:
            self._f = dest
            self._owned = False
        self.snaplen = snaplen
        import dpkt.pcapng as ng

        shb = ng.SectionHeaderBlockLE(opts=[_opt(ng.PCAPNG_OPT_SHB_USERAPPL, application.encode()), _end()])
        self._f.write(bytes(shb))
        self.interfaces = 0
        for name, description in interfaces:
            self.add_interface(name, description)

    def add_interface(self, name: str, description: str) -> int:
        """Append an interface description block and return its interface id (ids count from 0 in block order).
        The pcapng format allows one anywhere in the section before the first packet that uses it
        (draft-ietf-opsawg-pcapng §4.2); Wireshark, tshark and libpcap read such files. Raises: OSError."""
        import dpkt.pcapng as ng

        idb = ng.InterfaceDescriptionBlockLE(
            linktype=DLT_EN10MB,
            snaplen=self.snaplen,
            opts=[
                _opt(ng.PCAPNG_OPT_IF_NAME, name.encode()),
                _opt(ng.PCAPNG_OPT_IF_DESCRIPTION, description.encode()),
                _opt(ng.PCAPNG_OPT_IF_TSRESOL, b"\x09"),
                _end(),
            ],
        )
        self._f.write(bytes(idb))
        self.interfaces += 1
        return self.interfaces - 1

    def write(self, ts_ns: int, buf: bytes, iface: int = 0, comment: str | None = None) -> None:
        """Append one enhanced packet block.

        Args: ts_ns: timestamp in integer nanoseconds (0 <= ts_ns < 2**64); buf: the frame (cut to ``snaplen``,
        its wire length kept); iface: interface id (index into ``interfaces``); comment: ``opt_comment`` text.
        Raises: ValueError for a timestamp out of range or an unknown interface id.
        """
        if not 0 <= ts_ns <= PCAPNG_TS_NS_MAX:
            raise ValueError(f"timestamp {ts_ns} ns does not fit a pcapng block")
        if not 0 <= iface < self.interfaces:
            raise ValueError(f"interface {iface} not declared")
        import dpkt.pcapng as ng

        wire = len(buf)
        opts = [ng.PcapngOptionLE(code=ng.PCAPNG_OPT_COMMENT, text=comment)] if comment else []
        epb = ng.EnhancedPacketBlockLE(
            iface_id=iface,
            ts_high=ts_ns >> 32,
            ts_low=ts_ns & 0xFFFFFFFF,
            pkt_data=buf[: self.snaplen],
            opts=[*opts, _end()] if opts else [],
        )
        raw = bytearray(bytes(epb))
        if wire > self.snaplen:  # dpkt writes pkt_len = caplen: put the wire length back (offset 24)
            struct.pack_into("<I", raw, 24, wire)
        self._f.write(raw)


def _opt(code: int, data: bytes):
    import dpkt.pcapng as ng

    return ng.PcapngOptionLE(code=code, data=data)


@cache
def _end():
    """The ``opt_endofopt`` option that ends an option list (one object, made once, as the module constant was)."""
    import dpkt.pcapng as ng

    return ng.PcapngOptionLE(code=ng.PCAPNG_OPT_ENDOFOPT)
