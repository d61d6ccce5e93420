"""A capture's file header where a record is expected: two captures joined with ``cat`` (or ``cat a.pcap.gz
b.pcap.gz``, whose gzip members decompress as one stream).

Two classic pcap files joined byte for byte are no pcap file: the second one's 24-byte file header (libpcap
pcap/pcap.h ``struct pcap_file_header``: magic, version 2.4, thiszone, sigfigs, snaplen, linktype) lies where a
record header (``struct pcap_pkthdr`` as written: tv_sec, tv_usec, caplen, len) is expected, and reads as one:
its magic as tv_sec, its version as tv_usec, thiszone (0) as caplen, and the next "record" starts with its snaplen
and link type, whose caplen is the first real record's tv_sec (newcomer's finding: ``corrupt record at offset
25324 (caplen 1614373368 > 262144)``, 16 bytes after the header it did not name). So where a pcap record is
corrupt, its reader looks at it and at the record header just before it, if that one had caplen 0 (the header's
thiszone): where one starts with a pcap magic number followed by version 2, or is a pcapng section header block
(type 0x0A0D0D0A and a byte-order magic 0x1A2B3C4D, draft-ietf-opsawg-pcapng §4.1), the error names it. Only
there: a good record's tv_sec and tv_usec can spell a magic and version 2 (1295823521.000512, in 2011, is
0xA1B23C4D and 2 read big-endian; breaker's finding: such captures were refused), so a record that reads well is a
record (a second capture whose first record's tv_sec is below 262,144, in 1970, is then read on as records). A pcapng section is no error inside pcapng (``cat a.pcapng b.pcapng`` is a file of two sections); a pcap file
header is, where a pcapng block type is expected. The readers: reader.py ``Capture._iter_pcap`` (frame-by-frame),
chunks.py ``PcapChunks`` (batch), pcapng_chunks.py ``PcapngChunks`` (both paths).
"""

from __future__ import annotations

import struct
from functools import cache

from .stream import CaptureError, offset_words

#: pcap magic number (read big-endian) -> (byte order, record header bytes): dpkt.pcap ``MAGIC_TO_PKT_HDR``'s
#: classes' ``__hdr_fmt__[0]`` and ``__hdr_len__`` (PktHdr 16 bytes; the modified-pcap PktModHdr 24)
PCAP_MAGICS = {
    0xA1B2C3D4: (">", 16),  # TCPDUMP_MAGIC
    0xA1B23C4D: (">", 16),  # TCPDUMP_MAGIC_NANO
    0xA1B2CD34: (">", 24),  # MODPCAP_MAGIC
    0xD4C3B2A1: ("<", 16),  # PMUDPCT_MAGIC
    0x4D3CB2A1: ("<", 16),  # PMUDPCT_MAGIC_NANO
    0x34CDB2A1: ("<", 24),  # PMUDPCT_MODPCAP_MAGIC
}
#: a pcapng section header block's type (the same bytes in either byte order) and its byte-order magic's bytes
_SHB_TYPE = 0x0A0D0D0A
_SHB_BOMS = (b"\x1a\x2b\x3c\x4d", b"\x4d\x3c\x2b\x1a")


def joined_before_corrupt(
    path: str, here: tuple[int, bytes], before: tuple[int, bytes] | None, compressed: bool = False
) -> CaptureError | None:
    """For a corrupt pcap record header ``here`` (byte offset, 16 bytes) of capture ``path``: ``joined_error`` of it,
    else of ``before`` (the record header read before it, offset and bytes) where that one lies right before it
    (caplen 0, as a second file header's thiszone reads); None when neither starts another capture."""
    err = joined_error(path, here[0], here[1], "pcap", compressed)
    if err is None and before is not None and before[0] + len(before[1]) == here[0]:
        err = joined_error(path, before[0], before[1], "pcap", compressed)
    return err


@cache
def header_words(order: str) -> frozenset[int]:
    """The 32-bit words (read in byte order ``order``, ``"<"``/``">"``) that start a pcap file header or a pcapng
    section header block: what a pcap record's tv_sec or a pcapng block's type reads where another capture starts
    (a record whose first word is one of them is looked at with ``joined_error``)."""
    raw = [m.to_bytes(4, "big") for m in PCAP_MAGICS] + [_SHB_TYPE.to_bytes(4, "big")]
    return frozenset(int.from_bytes(b, "little" if order == "<" else "big") for b in raw)


def joined_error(
    path: str, off: int, head: bytes, inside: str, compressed: bool = False
) -> CaptureError | None:
    """The one-line error for a capture's header at byte ``off`` (of the decompressed stream) of the capture
    ``path``, a ``inside`` (``"pcap"``/``"pcapng"``) file: ``head`` is the bytes there (a pcap record header, 16
    bytes, or a pcapng block's first 8). None when they start no capture's header (a pcap magic followed by version
    2; a pcapng section header block, in a pcap file, whose byte-order magic needs 12 bytes)."""
    magic = int.from_bytes(head[:4], "big")
    if magic in PCAP_MAGICS and len(head) >= 8:
        major = struct.unpack_from(PCAP_MAGICS[magic][0] + "H", head, 4)[0]
        if major != 2:
            return None
        what = "a second pcap file header" if inside == "pcap" else "a pcap file header"
    elif magic == _SHB_TYPE and inside == "pcap" and head[8:12] in _SHB_BOMS:
        what = "a pcapng section header"
    else:
        return None
    join = (
        "join pcaps with mergecap" if what == "a second pcap file header" else "join captures with mergecap"
    )
    return CaptureError(
        f"{path}: {what} at {offset_words(off, compressed)} (captures joined with cat?): {join}"
    )
