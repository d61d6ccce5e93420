"""Internet checksum (RFC 1071) arithmetic over bytes, with numpy doing the byte sums.

All values are 16-bit ones'-complement sums held in Python ints (0..0xFFFF), the way the kernel's
``__wsum``/``__sum16`` helpers behave once folded. Byte order is network order (big-endian 16-bit words).

Kernel: include/net/checksum.h (csum_add, csum_sub, csum_fold), lib/checksum.c (csum_partial),
net/ipv4/af_inet.c / include/net/ip.h (inet_gro_compute_pseudo), include/net/ip6_checksum.h.

Left out: the 32-bit unfolded representation and its byte-rotation for odd offsets; every sum here is
taken from an even offset of the buffer it is computed over, so folding early changes no verdict.
"""

from __future__ import annotations

import numpy as np

_U16 = np.dtype(">u2")


_NUMPY_MIN = 4096  # below this many bytes a big-integer reduction is faster than a numpy call


def csum_partial(buf: bytes | bytearray | memoryview, start: int = 0, end: int | None = None) -> int:
    """Ones'-complement sum of ``buf[start:end]`` as big-endian 16-bit words, folded to 16 bits.

    An odd trailing byte is padded with a zero byte, as RFC 1071 prescribes.
    Kernel: lib/checksum.c ``csum_partial`` (folded with ``csum_fold`` semantics, without the final NOT).
    Short ranges use the identity "ones'-complement sum ≡ value of the byte string mod 0xFFFF" (2^16 ≡ 1), with a
    non-zero multiple of 0xFFFF giving 0xFFFF as end-around-carry folding does; long ranges sum uint16 words
    with numpy.

    Args: buf: the bytes; start/end: byte offsets (end defaults to len(buf)).
    Returns: 0..0xFFFF.
    """
    if end is None:
        end = len(buf)
    n = end - start
    if n <= 0:
        return 0
    if n < _NUMPY_MIN:
        v = int.from_bytes(buf[start:end], "big")
        if n & 1:
            v <<= 8
        if not v:
            return 0
        return v % 0xFFFF or 0xFFFF
    even = n & ~1
    total = int(np.frombuffer(buf, dtype=_U16, count=even >> 1, offset=start).sum(dtype=np.uint64))
    if n & 1:
        total += buf[end - 1] << 8
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def csum_add(a: int, b: int) -> int:
    """Ones'-complement addition of two 16-bit sums. Kernel: include/net/checksum.h ``csum_add``."""
    s = a + b
    return (s & 0xFFFF) + (s >> 16)


def csum_sub(a: int, b: int) -> int:
    """Ones'-complement subtraction ``a - b``. Kernel: include/net/checksum.h ``csum_sub``."""
    return csum_add(a, ~b & 0xFFFF)


def csum_fold(s: int) -> int:
    """The 16-bit checksum field value for sum ``s``: its complement. 0 means "verifies".

    Kernel: ``csum_fold`` (which folds 32→16 bits and complements).
    """
    return ~s & 0xFFFF


def ip_fast_csum_ok(buf: bytes | memoryview, off: int, ihl_bytes: int = 20) -> bool:
    """True when the IPv4 header at ``off`` sums to 0xFFFF (its checksum verifies).

    Kernel: arch ``ip_fast_csum`` as used by ``inet_gro_receive`` (net/ipv4/af_inet.c) and ``ip_rcv_core``.
    """
    return csum_partial(buf, off, off + ihl_bytes) == 0xFFFF


def pseudo4(saddr: bytes, daddr: bytes, length: int, proto: int) -> int:
    """IPv4 pseudo-header sum (not complemented).

    Kernel: ``csum_tcpudp_nofold`` via ``inet_gro_compute_pseudo`` (include/net/ip.h).
    Args: saddr/daddr: 4-byte addresses; length: L4 length in bytes; proto: IP protocol number.
    """
    a = int.from_bytes(saddr, "big")
    b = int.from_bytes(daddr, "big")
    s = (a >> 16) + (a & 0xFFFF) + (b >> 16) + (b & 0xFFFF) + proto + (length >> 16) + (length & 0xFFFF)
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def pseudo6(saddr: bytes, daddr: bytes, length: int, proto: int) -> int:
    """IPv6 pseudo-header sum (not complemented).

    Kernel: ``csum_ipv6_magic`` via ``ip6_gro_compute_pseudo`` (include/net/ip6_checksum.h).
    Args: saddr/daddr: 16-byte addresses; length: L4 length in bytes; proto: next header number.
    """
    s = proto + (length >> 16) + (length & 0xFFFF)
    for addr in (saddr, daddr):
        v = int.from_bytes(addr, "big")
        while v:
            s += v & 0xFFFF
            v >>= 16
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def l4_checksum_field(pseudo: int, buf: bytes | bytearray | memoryview, start: int, end: int) -> int:
    """The value to write into a TCP/UDP checksum field whose bytes (field zeroed) span ``buf[start:end]``.

    Returns the complement of pseudo + data sum; a result of 0 is returned as is (callers building UDP
    replace it with 0xFFFF, RFC 768).
    """
    return csum_fold(csum_add(pseudo, csum_partial(buf, start, end)))


def ipv4_header_checksum(hdr: bytes | bytearray) -> int:
    """Checksum field value for an IPv4 header whose checksum field is zero (RFC 791)."""
    return csum_fold(csum_partial(hdr))
