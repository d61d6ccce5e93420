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


def ip_fast_csum(buf: bytes | bytearray, off: int, ihl: int) -> int:
    """The folded checksum of the IPv4 header of ``ihl`` 32-bit words at ``off``: 0 when it verifies.

    Kernel: arch ``ip_fast_csum`` as used by ``inet_gro_receive`` (net/ipv4/af_inet.c) and ``ip_rcv_core``.
    Same arithmetic as ``csum_partial`` (value of the bytes mod 0xFFFF).
    """
    v = int.from_bytes(buf[off : off + 4 * ihl], "big")
    return ~(v % 0xFFFF or (0xFFFF if v else 0)) & 0xFFFF


def ip_fast_csum_ok(buf: bytes | memoryview, off: int, ihl_bytes: int = 20) -> bool:
    """True when the IPv4 header at ``off`` sums to 0xFFFF (its checksum verifies).

    Kernel: arch ``ip_fast_csum`` as used by ``inet_gro_receive`` (net/ipv4/af_inet.c) and ``ip_rcv_core``.
    """
    return csum_partial(buf, off, off + ihl_bytes) == 0xFFFF


def pseudo4(saddr: bytes | bytearray, daddr: bytes | bytearray, length: int, proto: int) -> int:
    """IPv4 pseudo-header sum (not complemented).

    Kernel: ``csum_tcpudp_nofold`` via ``inet_gro_compute_pseudo`` (include/net/ip.h).
    Args: saddr/daddr: 4-byte addresses; length: L4 length in bytes; proto: IP protocol number.
    Computed as the value of the address bytes plus length and protocol, mod 0xFFFF (2^16 ≡ 1), a non-zero
    multiple of 0xFFFF giving 0xFFFF as end-around-carry folding does (see ``csum_partial``).
    """
    return _fold_pseudo(int.from_bytes(saddr, "big") + int.from_bytes(daddr, "big") + length + proto)


def _fold_pseudo(s: int) -> int:
    """A pseudo-header's value ``s`` (addresses as one number, plus length and protocol) as its 16-bit
    one's-complement sum: mod 0xFFFF (2^16 ≡ 1), a non-zero multiple of 0xFFFF giving 0xFFFF."""
    return s % 0xFFFF or (0xFFFF if s else 0)


def pseudo6(saddr: bytes | bytearray, daddr: bytes | bytearray, length: int, proto: int) -> int:
    """IPv6 pseudo-header sum (not complemented).

    Kernel: ``csum_ipv6_magic`` via ``ip6_gro_compute_pseudo`` (include/net/ip6_checksum.h).
    Args: saddr/daddr: 16-byte addresses; length: L4 length in bytes; proto: next header number.
    Same arithmetic as ``pseudo4``.
    """
    return _fold_pseudo(int.from_bytes(saddr, "big") + int.from_bytes(daddr, "big") + length + proto)


def pseudo_at(buf: bytes | bytearray, addrs: int, addr_len: int, length: int, proto: int) -> int:
    """``pseudo4``/``pseudo6`` over the ``addr_len`` address bytes (8: IPv4 saddr+daddr, 32: IPv6) at ``addrs``
    in ``buf``: the same value without slicing the two addresses apart."""
    return _fold_pseudo(int.from_bytes(buf[addrs : addrs + addr_len], "big") + length + proto)


def l4_checksum_field(pseudo: int, buf: bytes | bytearray | memoryview, start: int, end: int) -> int:
    """The value to write into a TCP/UDP checksum field whose bytes (field zeroed) span ``buf[start:end]``.

    Returns the complement of pseudo + data sum; a result of 0 is returned as is (callers building UDP
    replace it with 0xFFFF, RFC 768).
    """
    return csum_fold(csum_add(pseudo, csum_partial(buf, start, end)))


def ipv4_header_checksum(hdr: bytes | bytearray) -> int:
    """Checksum field value for an IPv4 header whose checksum field is zero (RFC 791)."""
    return csum_fold(csum_partial(hdr))


def csum_partial_batch(bufs: list, start: int) -> list[int]:
    """``csum_partial(buf, start)`` of every buffer in ``bufs``, with one numpy reduction over all of them.

    ``start`` must be even. The buffers are joined (each padded to an even length, RFC 1071) and read as big-endian
    16-bit words; ``np.add.reduceat`` over the pairs (first word from ``start``, first word after the buffer) sums
    each buffer's words, then the sums are folded with end-around carries.
    Returns: one 0..0xFFFF value per buffer, equal to ``csum_partial(buf, start)``.
    """
    if not bufs:
        return []
    if any(len(b) & 1 for b in bufs):
        bufs = [b + b"\0" if len(b) & 1 else b for b in bufs]
    sizes = np.array([len(b) >> 1 for b in bufs], dtype=np.intp)
    words = np.frombuffer(b"".join(bufs) + b"\0\0", dtype=_U16)  # one spare word: the last "after" index
    ends = np.cumsum(sizes)
    starts = np.minimum(ends - sizes + (start >> 1), ends)
    idx = np.empty(2 * len(bufs), dtype=np.intp)
    idx[0::2] = starts
    idx[1::2] = ends
    total = np.add.reduceat(words, idx, dtype=np.uint64)[0::2]
    total[starts == ends] = 0  # nothing after ``start`` (reduceat would give the word at the index)
    while True:
        high = total >> 16
        if not high.any():
            break
        total = (total & 0xFFFF) + high
    return total.tolist()


class PollSums:
    """The sums ``csum_partial(buf, 14)`` (Ethernet payload to the end) of one poll's frames, computed for all of
    them at once (``csum_partial_batch``) the first time one is asked for.

    ``suffix(i, start)`` derives ``csum_partial(bufs[i], start)`` for an even ``start - 14`` by ones'-complement
    subtraction of the header bytes before ``start``; it returns 0 when that residue is 0, where the subtraction
    cannot tell 0 from 0xFFFF (the caller then sums directly).
    """

    __slots__ = ("bufs", "sums")

    def __init__(self, bufs: list) -> None:
        self.bufs = bufs
        self.sums: list[int] | None = None

    def fill(self) -> list[int]:
        """Compute (once) and return every frame's ``csum_partial(buf, 14)``."""
        sums = self.sums
        if sums is None:
            sums = self.sums = csum_partial_batch(self.bufs, 14)
        return sums

    def full(self, i: int) -> int:
        """``csum_partial(bufs[i], 14)``."""
        sums = self.sums
        if sums is None:
            sums = self.sums = csum_partial_batch(self.bufs, 14)
        return sums[i]

    def suffix(self, i: int, start: int) -> int:
        """``csum_partial(bufs[i], start)`` for ``start >= 14``, ``start - 14`` even; 0: not derivable."""
        sums = self.sums
        if sums is None:
            sums = self.sums = csum_partial_batch(self.bufs, 14)
        if start == 14:
            return sums[i] % 0xFFFF
        return (sums[i] - int.from_bytes(self.bufs[i][14:start], "big")) % 0xFFFF


_M = 0xFFFF


def frame_sums(buf: bytes, data: np.ndarray, caplen: np.ndarray, runs) -> np.ndarray:
    """Ones' complement sum (mod 0xFFFF, big-endian 16-bit words, odd tail padded) of each whole frame
    ``buf[data[i]:data[i] + caplen[i]]`` (int64 per frame): the frames of ``runs`` (``(first, end, caplen,
    stride)``: equal-length records at a fixed stride, packet/rows.py ``record_runs``) after the last frame outside
    them read as little-endian 32-bit words over a strided view, one numpy pass a run; the others by one
    ``word_sums``, which reads the block's words up to its last frame's end whatever frames it is given (a run
    before a frame outside the runs costs it nothing more)."""
    n = len(data)
    out = np.zeros(n, np.int64)
    a = np.frombuffer(buf, dtype=np.uint8)
    done = np.zeros(n, bool)
    for s, e, _clen, _stride in runs:
        done[s:e] = True
    odd = np.flatnonzero(~done)
    rest = int(odd[-1]) + 1 if len(odd) else 0  # frames [0, rest) by word_sums
    for s, e, clen, stride in runs:
        if s < rest:
            continue
        c4 = clen & ~3
        base = int(data[s])
        view = np.lib.stride_tricks.as_strided(a[base:], shape=(e - s, c4), strides=(stride, 1))
        le = view.view("<u4").sum(axis=1, dtype=np.uint64).astype(np.int64)
        for k in range(c4, clen):  # tail bytes: little-endian weights 1, 256 for positions 0, 1 (mod 2)
            le += a[base + k :: stride][: e - s].astype(np.int64) * (256 if k & 1 else 1)
        out[s:e] = ((le % _M) * 256) % _M  # little-endian sums are byte-swapped: ×256 swaps modulo 0xFFFF
    if rest:
        out[:rest] = word_sums(buf, data[:rest], caplen[:rest])
    return out


def word_sums(buf: bytes, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """The sums modulo 0xFFFF of the big-endian 16-bit words of ``buf[start:start + length]`` (an odd last byte is
    a word's high byte), for frames in increasing, non-overlapping order (int64 per frame).

    One ``reduceat`` over the block read as little-endian 32-bit words (native, no byte swap, half as many
    elements as 16-bit words) sums each frame's whole aligned words; its at most 3 leading and 3 trailing bytes
    are added one by one. A byte at buffer offset ``a`` then weighs ``256 ** (a % 4)``, which is ``256 ** (a %
    2)`` modulo 0xFFFF (``256 ** 2 = 65536 ≡ 1``): the frame's own big-endian weight when it starts at an odd
    offset, that weight times 256 (a byte swap) when it starts at an even one (``frame_sums``' equal-length runs
    are summed the same way)."""
    start = start.astype(np.int64)
    end = start + length.astype(np.int64)
    out = np.zeros(len(start), np.int64)
    if not len(start):
        return out
    # the buffer up to the frames' end: reduceat's last sum runs to the end of what it is given
    a = np.frombuffer(buf, dtype=np.uint8, count=int(end.max()))
    lo = np.minimum((start + 3) & ~3, end)  # the first whole aligned word (or the frame's end)
    hi = np.maximum(end & ~3, lo)  # after the last one
    w4 = a[: len(a) // 4 * 4].view("<u4")
    nw = len(w4)
    words = hi > lo
    if nw:
        idx = np.empty(2 * len(start), np.int64)
        idx[0::2] = np.minimum(lo // 4, nw - 1)
        idx[1::2] = np.minimum(hi // 4, nw - 1)  # reduceat sums idx[2i]..idx[2i + 1] - 1
        # widened first: numpy's reduceat casting as it sums (``dtype=np.uint64``) took twice as long
        out = np.add.reduceat(w4.astype(np.uint64), idx)[0::2].astype(np.int64)
        out[~words] = 0
        # a frame whose words end with the block's last word: its index was clipped to that word's (reduceat
        # then sums up to it, or returns that one word alone when it is also the frame's first)
        out[words & (hi // 4 == nw) & (lo // 4 < nw - 1)] += int(w4[-1])
    # the bytes before the first whole word and after the last: the buffer's words that hold them, masked (the
    # words read at the same weights); a buffer's last bytes past its whole words are one more, zero-padded word
    n = len(start)
    at = np.concatenate((start >> 2, hi >> 2))
    nb = np.concatenate((lo - start, end - hi)).astype(np.uint64)  # 0 to 3 bytes
    shift = np.concatenate((start & 3, np.zeros(n, np.int64))).astype(np.uint64) * np.uint64(8)
    tail = np.uint64(int.from_bytes(bytes(a[nw * 4 :]), "little"))
    got = np.where(at < nw, w4[np.minimum(at, nw - 1)], tail) if nw else np.full(2 * n, tail)
    mask = ((np.uint64(1) << (nb * np.uint64(8))) - np.uint64(1)) << shift
    part = (got & mask).astype(np.int64)
    out += part[:n] + part[n:]
    out %= _M
    even = (start & 1) == 0
    out[even] = out[even] * 256 % _M
    return out
