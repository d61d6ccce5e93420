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
and looked up, as before.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..packet.columns import FIELDS, H, relative

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


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
        self._rows: tuple[np.ndarray, int] | None = None  # every entry's key row (one uint8 array); width
        self._keys: dict[int, bytes] = {}
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
        """Poll ``p``'s key (None when it has none); built once."""
        if not self.cached[p]:
            return None
        got = self._keys.get(p)
        if got is not None:
            return got
        if self._rows is None:
            col, ch, idx = self.col, self.ch, self.idx
            g = col.group[idx]
            if (g == g[0]).all():  # one inner flow: each entry's poll's first entry
                base = np.repeat(self.starts, self.sizes)
            else:
                _u, first, inv = np.unique(
                    g ^ (self.poll_of * _GOLDEN), return_index=True, return_inverse=True
                )
                base = first[inv.reshape(-1)]
            nf = len(FIELDS)
            whole = len(idx) == len(col.kv) and (idx == np.arange(len(idx))).all()
            kv = col.kv if whole else col.kv[idx]
            # each frame's row: kv, the fields below, and with flows retired its flow id (a key's frames name
            # other flows once one of them was retired or its key came back as a new flow, and a recorded delta
            # adds to the counters of the flows it was recorded with); all rows as one array, a key a slice of it
            w = H + 4 * (nf + 6) + (8 if self.efids is not None else 0)
            rows = np.empty((len(idx), w), np.uint8)
            rows[:, :H] = kv
            ext = rows[:, H : H + 4 * (nf + 6)].view("<u4")
            ext[:, :nf] = relative(col.rel if whole else col.rel[idx], base)
            ext[:, nf] = ch.caplen if whole else ch.caplen[idx]
            ext[:, nf + 1] = col.vbits if whole else col.vbits[idx]
            ext[:, nf + 2 :] = col.resid if whole else col.resid[idx]
            if self.efids is not None:
                rows[:, w - 8 :].view("<i8")[:, 0] = self.efids[: len(idx)]
            self._rows = (rows.reshape(-1), w)
        flat, width = self._rows
        s = int(self.starts[p]) * width
        key = flat[s : s + int(self.sizes[p]) * width].tobytes()
        self._keys[p] = key
        return key


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
