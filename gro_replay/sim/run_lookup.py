"""Which of a poll's flow runs are known, and in which context to serve or record them (sim/compose.py
``RunComposer._compose``): the run cache's lookups, the GRO-bucket and tunnel-cell checks of compose.py's argument,
and the pieces that may not end where they do (a recording that still held a packet at its end)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..kernel.gro import MAX_GRO_SKBS
from .deltas import PollCache
from .runs import RunEntry, RunLists, Runs, length_exact_key, most_held

#: distinct flow-run keys kept (a key is ~100 bytes per frame, an entry ~6 KiB: ~12 MiB)
MAX_RUN_KEYS = 2048
#: recordings of one run key told apart by what their IPv4 IDs answer, one below the other (``_id_walk``)
MAX_ID_DEPTH = 8


class RunLookup:
    """The lookup part of ``compose.RunComposer`` (a mixin: ``_init_runs`` sets its state up)."""

    runs: PollCache
    _exact_runs: set[bytes]
    _held_pieces: set[bytes]
    _looked: dict[bytes, dict]
    _looked_n: int
    _ids_across: bool
    _id_rel: tuple
    _cells_unknown: list[int]
    _cells_weight: int
    _cells_index: dict[int, int]

    def _known_runs(self, runs: Runs, lists: RunLists, ra: int, rb: int, full: bool) -> list | None:
        """``(key, context, cache entry or None, cell weights to record it with or None)`` of runs ``ra..rb`` of one
        poll, or None when together they could fill a GRO bucket, or could fill a tunnel cell's poll without every
        run known, or when a piece that is not its flow's last is unknown or held a packet at its end when recorded
        (``_compose``; ``_cells_unknown`` then lists the unknown runs to record first: sim/run_probe.py). A run's context: ``F`` when the poll is full, ``C`` and the cells when the runs
        fill cells' polls. What a run holds and puts into the cells does not depend on how the poll ends (both
        ends flush everything): a recording in any context answers that for the guards. ``lists``: see
        ``_block_runs``."""
        bounds, order, nkv, more = lists.bounds, lists.order, lists.nkv, lists.more
        ctx = b"F" if full else b""
        found = []
        infos = []
        cells: dict[int, int] = {}
        unknown = 0
        self._cells_unknown = []
        unknown_at = []
        unknown_more = False  # some run not its flow's last in the poll is unknown
        spans: list[tuple[int, int, int]] = []  # (first, last or -1: to the poll's end, packets held)
        for j in range(ra, rb):
            a, b = bounds[j], bounds[j + 1]
            e, info = self._lookup(runs, j, a, b, ctx)
            found.append((runs.keys[j], ctx, e, None))
            infos.append(info)
            if info is None:
                spans.append((order[a], -1, nkv[j]))
                unknown += b - a
                unknown_at.append(j)
                unknown_more = unknown_more or more[j]
                continue
            x: RunEntry = info[3]
            if more[j] and x.ends_held:  # a later piece of its flow would meet what it holds
                self._held_pieces.add(runs.keys[j])
                return None
            if x.holding:
                spans.append((order[a], -1 if x.ends_held else order[b - 1], nkv[j]))
            for nid, c in x.cells_in:
                cells[nid] = cells.get(nid, 0) + c
        if unknown_more:  # whether it holds something at its end only its recording tells (``_probe``)
            self._cells_unknown = unknown_at
            return None
        if sum(sp[2] for sp in spans) > MAX_GRO_SKBS:
            first, last, n = np.array(spans, np.int64).reshape(-1, 3).T
            if most_held(np.zeros(len(spans), np.int64), first, last, n, 1)[0] > MAX_GRO_SKBS:
                return None
        weight = self._cells_weight
        if unknown:
            if unknown >= weight or any(c + unknown >= weight for c in cells.values()):
                self._cells_unknown = unknown_at
                return None
            return found
        filled = sorted(self._cells_index[nid] for nid, c in cells.items() if c >= weight)
        if not filled:
            return found
        if any(c > weight for c in cells.values()):
            return None
        # the cells' polls take their whole budget: each run keyed (and recorded) as one that fills them
        ctx += b"C" + bytes(filled)
        out = []
        for j, ((k, _c, _e, _w), info) in enumerate(zip(found, infos, strict=True)):
            assert info is not None  # every run is known here
            fill = {nid: c for nid, c in info[3].cells_in if c and self._cells_index[nid] in filled}
            a, b = bounds[ra + j], bounds[ra + j + 1]
            out.append((k, ctx, self._find(self._exact(k, runs, a, b) + ctx, runs.ids[a:b]), fill))
        return out

    def _lookup(self, runs: Runs, j: int, a: int, b: int, ctx: bytes) -> tuple[list | None, list | None]:
        """``(entry, info)`` of run ``j`` (entries ``a..b``) in a poll of context ``ctx`` (``_known_runs``): its
        cache entry to serve it from, or None, and a recording of it in any context (what it holds and puts into
        the cells), or None.

        The answer reads the cache, the run's key (with its exact lengths when length-exact) and, through the
        ``IdGuards`` of the recordings under it (``_find``), its IPv4 IDs, only as differences of two IDs modulo
        2**16. ``_looked`` keeps it until a run with its key is recorded (``_remember``): by key and context when
        no recording under the key read an ID, else by key, context and ``_id_key`` of the run's IDs, which fixes
        every such difference."""
        raw = runs.keys[j]
        memo = self._memo(runs, j, a, b, ctx)
        sub = self._looked.get(raw)
        got = None if sub is None else sub.get(memo)
        if got is not None:
            return got
        k = memo[0]
        ids = runs.ids[a:b]
        e = self._find(k + ctx, ids)
        if e is None:
            # a run that holds nothing when its poll ends: both ends flush nothing, and a full poll differs only
            # in the phys NAPI's poll counts, which ``_compose`` counts itself
            alt = self._find(k + (b"F" if ctx == b"" else b""), ids)
            if alt is not None and not alt[3].ends_held:
                e = alt
        got = (e, e or self._find(k, ids) or self._find(k + b"F", ids))
        self._remember(raw, memo, got)
        return got

    def _remember(self, raw: bytes, memo: tuple, got: Any) -> None:
        """Keep answer ``got`` of ``_lookup`` or ``_reads_ids`` for a run with key ``raw`` (``Runs.keys``) under
        ``memo`` in ``_looked``, past ``MAX_RUN_KEYS`` answers all forgotten first. Every answer for ``raw`` reads
        only the entries under ``raw`` (its exact lengths and a context after it, an ID walk's places from there:
        sim/runs.py ``length_exact_key``, ``_id_walk``), which no other key's entries share: a recording forgets
        only its own key's answers (``_forget``)."""
        looked = self._looked
        if self._looked_n >= MAX_RUN_KEYS:
            self._forget_all()
        sub = looked.get(raw)
        if sub is None:
            sub = looked[raw] = {}
        sub[memo] = got
        self._looked_n += 1

    def _forget_all(self) -> None:
        """Forget every answer of ``_looked`` (the runs' entries forgotten, a flow retired or renamed, an outer
        IPv4 ID first compared with an inner one, ``MAX_RUN_KEYS`` answers kept)."""
        self._looked.clear()
        self._looked_n = 0

    def _forget(self, raw: bytes) -> None:
        """Forget ``_looked``'s answers for runs with key ``raw`` (a run with that key was recorded, or the key
        was made length-exact)."""
        sub = self._looked.pop(raw, None)
        if sub is not None:
            self._looked_n -= len(sub)

    def _memo(self, runs: Runs, j: int, a: int, b: int, ctx: bytes) -> tuple:
        """What ``_lookup``'s answer for run ``j`` (entries ``a..b``) in context ``ctx`` depends on besides the
        cache: ``(key, ctx)``, the key with its exact lengths when length-exact, and ``_id_key`` of the run's IDs
        after them when a recording under the key read an ID (``_reads_ids``). Equal memos, equal answers."""
        k = self._exact(runs.keys[j], runs, a, b)
        if self._reads_ids(k, ctx, runs.keys[j]):
            return (k, ctx, self._id_key(runs, a, b))  # a recording the IDs could tell apart
        return (k, ctx)

    def _exact(self, k: bytes, runs: Runs, a: int, b: int) -> bytes:
        """Key ``k`` (``Runs.keys``) of the run of entries ``a..b`` with its exact lengths when it is length-exact
        (sim/runs.py ``length_exact_key``), else ``k``: what its cache entries are kept under, before the
        context."""
        return length_exact_key(k, runs.payload[a:b].tobytes()) if k in self._exact_runs else k

    def _reads_ids(self, k: bytes, ctx: bytes, raw: bytes) -> bool:
        """Whether some recording ``_lookup`` may answer a run with key ``k`` (exact lengths included where
        length-exact; ``raw``: its ``Runs.keys`` key) in context ``ctx`` from read IPv4 IDs: the answer then
        depends on the run's IDs. Kept in ``_looked`` (under ``("ids", (k, ctx))``) as ``_lookup``'s answers."""
        sub = self._looked.get(raw)
        got = None if sub is None else sub.get(("ids", (k, ctx)))
        if got is None:
            entries = self.runs.entries
            got = any((x := entries.get(k + c)) is not None and x[3].ids.rows for c in (b"", b"F", ctx))
            self._remember(raw, ("ids", (k, ctx)), got)
        return got

    def _per_run(self, k: bytes, ctx: bytes) -> bool:
        """Whether ``_lookup``'s answer for a run with key ``k`` (``Runs.keys``) in context ``ctx`` depends on more
        than the key, the context and the cache: on the run's own lengths (a length-exact key) or IPv4 IDs
        (``_reads_ids``)."""
        return k in self._exact_runs or self._reads_ids(k, ctx, k)

    def _id_key(self, runs: Runs, a: int, b: int) -> bytes:
        """What fixes every difference modulo 2**16 of two IPv4 IDs of the run of entries ``a..b`` of ``runs``
        that an ``IdGuards`` row can read: each ID less the run's first in its column (uint16 per entry and column,
        computed for all of ``runs`` at once), and while some recording read a difference of an outer and an inner
        ID (``_ids_across``), the first outer less the first inner."""
        rel = self._id_rel
        if rel[0] is not runs:
            ids = runs.ids.astype(np.int64)
            start = np.repeat(runs.bounds[:-1], np.diff(runs.bounds))
            cross = (ids[:, 0] - ids[:, 1]) & 0xFFFF
            rel = self._id_rel = (
                runs,
                ((ids - ids[start]) & 0xFFFF).astype(np.uint16).tobytes(),
                cross.astype(np.uint16).tobytes(),
            )
        d = rel[1][4 * a : 4 * b]
        return d + rel[2][2 * a : 2 * a + 2] if self._ids_across else d

    def _find(self, key: bytes, ids: np.ndarray) -> list | None:
        """The cache entry of a run with ``key`` (context included) whose recording's IPv4 ID differences its own
        IDs ``ids`` (``Runs.ids``) answer alike (sim/runs.py ``IdGuards``), or None. The first recording of a key
        is kept under it; a run its IDs set apart from that one, under ``(how its IDs answer the first one's
        differences, key)``, and so on (``_id_walk``)."""
        e = self.runs.entries.get(key)
        if e is None or not e[3].ids.rows:  # no recording, or one that read no ID: the first answers
            return e
        return self._id_walk(key, ids)[1]

    def _id_walk(self, key: bytes, ids: np.ndarray) -> tuple[Any, list | None]:
        """``(place, entry)``: the entry ``_find`` answers with and its place, or (where a recording of this run
        would go, None), the place None past ``MAX_ID_DEPTH`` recordings."""
        entries = self.runs.entries
        place: Any = key
        for _ in range(MAX_ID_DEPTH):
            e = entries.get(place)
            if e is None or e[3].ids.agree(ids):
                return place, e
            place = (e[3].ids.signature(ids), place)
        return None, None
