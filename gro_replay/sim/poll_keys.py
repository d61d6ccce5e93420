"""Whole-poll keys of a block's polls (pollcache.py ``BatchReplay``), built only where they can be used.

A poll's key is the concatenation of its frames' canonical rows: ``kv`` (the headers without their varying
fields), the varying fields relative to the poll's first frame of the same inner flow, the captured length, the
checksum verdicts and residuals, and with flows retired the flow ids (pollcache.py's module docstring). Most
polls of irregular traffic are new as a whole and are composed of their flow runs (sim/compose.py), which never
reads their key; building it (a few KiB per poll) and hashing it for the poll cache's lookup is wasted there.
``BlockKeys`` computes one 64-bit number per poll from numbers each frame's row already has — its ``kv`` hash
(``Columns.kv_hash``: the ``kv`` row and the UDP-zero verdict bit), captured length and flow id, weighted by its
position in the poll — a function of the key: equal keys give equal numbers. A poll whose number is not among
those of the keys the poll cache recorded (``KnownPolls``) is not in the cache, and its key is built only when
it runs through the kernels (``key``), to be recorded. A number that matches only means that the key is built
and looked up, as before. Regular traffic repeats one poll again and again: a poll whose rows equal the previous
poll's (compared for the whole block at once, ``BlockKeys._same``) gets that poll's key object, so a block builds
and hashes one key per run of equal polls, and the cache's lookups compare them by identity.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..packet.columns import FIELDS, relative

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
#: uint32 columns of an entry's key row besides ``kv`` (``BlockKeys._ext_rows``): FIELDS, caplen, verdict bits,
#: 4 residuals, the flow id (2 columns) when flows are retired, zero padding to a multiple of 8
_EXT = 24


class BlockKeys:
    """The keys of polls ``starts``/``sizes`` (numpy int64) over a block's entries ``src`` (block positions,
    negative for entries decoded one by one: a poll with one has no key); ``efids``: the entries' flow ids when
    flows are retired (in the key), else None. ``cached[p]``: poll ``p`` has a key; ``idx``/``poll_of``: each
    entry's block position (0 where none) and poll; ``numbers[p]``: the key's 64-bit number (see the module
    docstring)."""

    def __init__(
        self,
        col: Any,
        ch: Any,
        src: np.ndarray,
        starts: np.ndarray,
        sizes: np.ndarray,
        efids: np.ndarray | None,
    ) -> None:
        self.col, self.ch, self.starts, self.sizes = col, ch, starts, sizes
        self.efids = efids
        isc = src >= 0
        self.cached = np.add.reduceat(isc.astype(np.int64), starts) == sizes
        self.idx = idx = np.where(isc, src, 0)
        self.poll_of = np.repeat(np.arange(len(starts), dtype=np.uint64), sizes)
        self._ext: np.ndarray | None = None  # every entry's key columns but kv (``_ext_rows``)
        self._prefix = False  # the entries are the block's first records, in order (``_parts``)
        self._rep: list[int] | None = None  # each poll's first poll with its key in its run (``_same``)
        self._keys: dict[int, bytes] = {}  # by that first poll
        self.numbers: np.ndarray
        if ch is None or not self.cached.any():
            self.cached[:] = False
            self.numbers = np.zeros(len(starts), np.uint64)
            return
        row = col.kv_hash()[idx] ^ (ch.caplen[idx].astype(np.uint64) * _GOLDEN)
        if efids is not None:
            row ^= (efids[: len(idx)].astype(np.uint64) + np.uint64(1)) * np.uint64(0xC2B2AE3D27D4EB4F)
        pos = np.arange(len(idx), dtype=np.uint64) - np.repeat(starts.astype(np.uint64), sizes)
        mixed: np.ndarray = row * ((pos + np.uint64(1)) * _GOLDEN | np.uint64(1))
        self.numbers = np.add.reduceat(mixed, starts) ^ sizes.astype(np.uint64)

    def key(self, p: int) -> bytes | None:
        """Poll ``p``'s key (None when it has none); built once, and once for a run of consecutive polls whose keys
        are equal (``_same``): they share one bytes object, hashed once and compared by identity in the cache."""
        if not self.cached[p]:
            return None
        if self._rep is None:
            self._rep = self._same()
        r = self._rep[p]
        got = self._keys.get(r)
        if got is not None:
            return got
        kv, ext = self._parts()
        s = int(self.starts[r])
        e = s + int(self.sizes[r])
        # the poll's kv rows, then its other columns: the size gives the split, so equal keys are equal rows
        key = (kv[s:e] if kv is not None else self.col.kv[self.idx[s:e]]).tobytes() + ext[s:e].tobytes()
        self._keys[r] = key
        return key

    def _parts(self) -> tuple[np.ndarray | None, np.ndarray]:
        """The entries' ``kv`` rows (``Columns.kv`` itself when the entries are the block's first records in
        order, else None: gathered by ``idx``) and their other key columns (``_ext``)."""
        if self._ext is None:
            idx = self.idx
            m = len(idx)
            self._prefix = m <= len(self.col.kv) and bool((idx == np.arange(m)).all())
            self._ext = self._ext_rows(self._prefix)
        return (self.col.kv[: len(self.idx)] if self._prefix else None), self._ext

    def _ext_rows(self, prefix: bool) -> np.ndarray:
        """uint32 (entries, ``_EXT``; unused columns 0): each entry's varying fields relative to its
        poll's first entry of the same inner flow, captured length, verdict bits, checksum residuals and with
        flows retired its flow id (a key's frames name other flows once one of them was retired or its key came
        back as a new flow, and a recorded delta adds to the counters of the flows it was recorded with)."""
        col, ch, idx = self.col, self.ch, self.idx
        m = len(idx)
        g = col.group[:m] if prefix else col.group[idx]
        if (g == g[0]).all():  # one inner flow: each entry's poll's first entry
            base = np.repeat(self.starts, self.sizes)
        else:
            _u, first, inv = np.unique(g ^ (self.poll_of * _GOLDEN), return_index=True, return_inverse=True)
            base = first[inv.reshape(-1)]
        nf = len(FIELDS)
        ext = np.zeros((m, _EXT), np.uint32)  # columns past the last one used stay 0
        pick = slice(0, m) if prefix else idx
        relative(col.rel[pick], base, out=ext[:, :nf])
        ext[:, nf] = ch.caplen[pick]
        ext[:, nf + 1] = col.vbits[pick]
        ext[:, nf + 2 : nf + 6] = col.resid[pick]
        if self.efids is not None:
            ext[:, nf + 6 : nf + 8].view("<i8")[:, 0] = self.efids[:m]
        return ext

    def _same(self) -> list[int]:
        """Each poll's first poll of the run of consecutive polls with its key (itself when the one before has
        another key): a poll whose size and number equal the previous poll's has its rows compared with that
        poll's, all at once (one vectorised comparison, not a key built, hashed and compared per poll)."""
        starts, sizes, cached = self.starts, self.sizes, self.cached
        n_polls = len(starts)
        cand = np.zeros(n_polls, bool)
        cand[1:] = (
            cached[1:] & cached[:-1] & (sizes[1:] == sizes[:-1]) & (self.numbers[1:] == self.numbers[:-1])
        )
        polls = np.arange(n_polls)
        if not cand.any():
            return polls.tolist()
        kv, ext = self._parts()
        shift = sizes[cand]
        # each entry against the one at its place in the previous poll (8 comparisons per uint64: H / 8 and _EXT
        # are multiples of 8), OR-ed over each poll's entries
        d = int(shift[0])
        if kv is not None and (shift == d).all() and 2 * d * len(shift) >= len(ext):
            # one size, most polls candidates (regular traffic): each entry against the one a poll's size before
            rows = kv.view(np.uint64)  # H is a multiple of 8
            parts = [(rows[d:] != rows[:-d]), (ext[d:] != ext[:-d])]
            seg = np.maximum(starts - d, 0)  # poll p's rows of ``parts`` (p a candidate: starts[p] >= d)
        else:
            at = np.flatnonzero(np.repeat(cand, sizes))
            was = at - np.repeat(shift, shift)
            kv_all = self.col.kv.view(np.uint64)
            pairs = ((kv_all[self.idx[at]], kv_all[self.idx[was]]), (ext[at], ext[was]))
            # and a last row of False: a poll that is not a candidate may start there
            parts = [np.append(a != b, np.zeros((1, a.shape[1]), bool), axis=0) for a, b in pairs]
            took = np.where(cand, sizes, 0)
            seg = np.cumsum(took) - took  # poll p's rows of ``parts`` (none for a poll not a candidate)
        differ = np.zeros(n_polls, bool)
        for part in parts:
            bits = part.view(np.uint64)
            differ |= np.bitwise_or.reduceat(bits.reshape(-1), seg * bits.shape[1]) != 0
        same = cand & ~differ
        rep: list[int] = np.maximum.accumulate(np.where(same, 0, polls)).tolist()
        return rep


class KnownPolls:
    """The numbers (``BlockKeys.numbers``) of the keys the poll cache recorded: ``add(key, number)``;
    ``number in known``. A key the cache dropped (``PollCache.drop_flow``) may stay listed (its number then only
    makes a poll's key be built and looked up); past ``limit`` numbers those of dropped keys are forgotten."""

    def __init__(self, entries: dict, limit: int) -> None:
        self.entries = entries
        self.limit = limit
        self.of_key: dict[bytes, int] = {}
        self.numbers: set[int] = set()

    def add(self, key: bytes, number: int) -> None:
        self.of_key[key] = number
        self.numbers.add(number)
        if len(self.of_key) > self.limit:
            self.of_key = {k: n for k, n in self.of_key.items() if k in self.entries}
            self.numbers = set(self.of_key.values())

    def __contains__(self, number: int) -> bool:
        return number in self.numbers
