"""A block's frames as rows of their first bytes, and its runs of equal-length records (packet/columns.py
``analyse`` reads its columns from the rows; packet/csum.py ``frame_sums`` sums the runs a run at a time)."""

from __future__ import annotations

import numpy as np

#: bytes of each frame's headers kept in a row (IPv6 in IPv6 with 40 bytes of TCP options needs 184)
H = 192
#: ``_KEEP[c]``: 1 for each of a row's first ``c`` bytes, 0 after them (c = 0 … H; ``_heads``)
_KEEP = (np.arange(H)[None, :] < np.arange(H + 1)[:, None]).astype(np.uint8)


def record_runs(data: np.ndarray, caplen: np.ndarray) -> list[tuple[int, int, int, int]]:
    """Runs ``(first, end, caplen, stride)`` of at least 8 consecutive records with equal caplen, which lie at a
    fixed stride in the block (pcap: record header + caplen; pcapng: the enhanced packet block's length), that end
    the block one after the other: those after the last frame in no run, the only ones read (packet/csum.py
    ``frame_sums`` sums every frame up to that one by ``word_sums``; ``head_rows`` copies a block that is one run).
    Found from the block's end back to the first stretch of records that is no run (on a mix of frame sizes, its
    last records). ``data``/``caplen``: int64 offsets and captured lengths (bytes) of the block's records."""
    n = len(data)
    if not n:
        return []
    brk = np.flatnonzero(np.diff(caplen)) + 1
    out = []
    k, e = len(brk), n
    while e:
        s = int(brk[k - 1]) if k else 0
        if e - s < 8:
            break
        clen = int(caplen[s])
        stride = int(data[s + 1] - data[s])
        if stride < clen or not (np.diff(data[s:e]) == stride).all():
            break
        out.append((s, e, clen, stride))
        k, e = k - 1, s
    out.reverse()
    return out


def _heads(a: np.ndarray, at: np.ndarray, caplen: np.ndarray) -> np.ndarray:
    """The H bytes of ``a`` (uint8) at each offset ``at`` (each at most ``len(a) - H``) as an (n, H) uint8 array,
    zero past each frame's ``caplen``: one gather of H-byte items (a void view of ``a``: a quarter faster than a
    window view's rows), then ``_KEEP``'s row of each shorter frame (a third faster than comparing)."""
    rows = np.ndarray((len(a) - H + 1,), np.dtype((np.void, H)), a, 0, (1,))[at].view(np.uint8)
    rows = rows.reshape(len(at), H)
    short = np.flatnonzero(caplen < H)
    if len(short):
        rows[short] *= _KEEP[caplen[short]]
    return rows


def head_rows(buf: bytes, data: np.ndarray, caplen: np.ndarray, runs) -> np.ndarray:
    """The first H bytes of each frame ``buf[data[i]:data[i] + caplen[i]]`` as an (n, H) uint8 array, zero past
    the frame's end (``data``/``caplen``: int64 offsets and captured lengths in bytes; ``runs``: ``record_runs``'
    of them). Never raises on frame content."""
    n = len(data)
    a = np.frombuffer(buf, dtype=np.uint8)
    if len(runs) == 1 and runs[0][:2] == (0, n) and runs[0][2] >= H and int(data[-1]) + H <= len(buf):
        # one run of frames H bytes or longer (a bulk block): its rows copied, nothing to zero
        stride = runs[0][3]
        return np.array(np.lib.stride_tricks.as_strided(a[int(data[0]) :], shape=(n, H), strides=(stride, 1)))
    if n and len(a) >= H and int(data.max()) <= len(a) - H:
        # every frame H bytes or more before the block's end: one gather, runs or not (the runs' rows copied
        # apart and the others gathered into a zeroed array cost twice as much on a mix of frame sizes)
        return _heads(a, data, caplen)
    rows = np.zeros((n, H), np.uint8)
    done = np.zeros(n, bool)
    for s, e, clen, stride in runs:
        w = min(H, clen)
        if int(data[e - 1]) + w > len(buf):
            continue
        rows[s:e, :w] = np.lib.stride_tricks.as_strided(
            a[int(data[s]) :], shape=(e - s, w), strides=(stride, 1)
        )
        done[s:e] = True
    rest = np.flatnonzero(~done)
    if len(rest) and len(a) >= H:
        # the others by one gather; frames that start less than H bytes before the block's end by hand below
        inside = rest[data[rest] <= len(a) - H]
        rows[inside] = _heads(a, data[inside], caplen[inside])
        rest = rest[data[rest] > len(a) - H]
    if len(rest):
        lim = np.minimum(caplen[rest], H).tolist()
        parts = [buf[o : o + k].ljust(H, b"\0") for o, k in zip(data[rest].tolist(), lim, strict=True)]
        rows[rest] = np.frombuffer(b"".join(parts), dtype=np.uint8).reshape(len(rest), H)
    return rows
