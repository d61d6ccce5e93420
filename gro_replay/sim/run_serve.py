"""Polls whose flow runs are all known, answered a block at a time (sim/compose.py's argument, unchanged).

``RunComposer._compose`` answers one poll from its runs with Python work per run: look each run up, check the
GRO buckets and the tunnel cells, add each run's counters. On an overlay node a poll holds ~9 runs of ~2 frames and
nearly every run is known, so that per-run work was most of a composed poll's cost. ``RunServe`` does it for the
polls of a block together:

- ``_servable`` looks every run of the block's polls up in its poll's context (``RunLookup._lookup``, as
  ``_known_runs`` does) and marks the polls ``_known_runs`` answers with every run's own entry and nothing else:
  every run known; no piece that is not its flow's last held a packet at its end when recorded; the runs that held
  or merged a packet have at most ``MAX_GRO_SKBS`` distinct header rows together, or hold at most that many at
  once (``most_held``: then no bucket can fill); and the skbs the runs' recordings put into each tunnel cell stay
  below the cell's weight (no cell's poll fills: no ``C`` context). Such a poll is composed as ``_compose`` composes it when every
  run is known: each run's cache entry counted once more, its length and flow counters added for its own
  lengths and flows, and the NAPIs' polls counted once (``_count_polls``: the phys NAPIs one poll, full or not;
  each cell what the runs polled it, the most of any run).
- ``_serve`` answers one marked poll in its turn: the kernels must be idle (as ``_compose`` needs). Its NAPIs'
  polls (its mark's ``most``, and the phys NAPIs' one) are summed with the runs' counters by ``_settle_served`` and
  added at the end of the block's polls (``_settle_polls``): poll counts too are read only after the replay, and a
  recording takes their differences, which additions between polls leave alone.
- ``_settle_served`` adds the served runs' counters for all of them: entry counts (``PollCache``: added at its
  ``settle``), length counters (``LengthOps.add_sums``: the runs' payload lengths summed by entry and run
  position) and flow counters (``PendingFlowOps``), all of which wait anyway until they are read. It runs at the
  end of the block's polls and before a flow is retired or renamed (``FlowTracking._flow_changed`` settles that
  flow's counters).

Any other poll goes to ``_compose``. Entries are only added within a block (``_block_runs`` forgets them between
blocks), but a recording can make a key length-exact: after one (``_unmark``), each poll left with a run of that key
is marked again in its turn (a run's lookup reads whether its own key is length-exact, no other's); and a poll not
marked for a run then unknown, in its turn, when a run with that run's key was recorded since (a run's lookup reads
only the entries under its own key; one poll at a time: a block whose every poll records a run is marked once per
poll, not once per poll for each poll after it). Runs with the same key in the same context are looked up once
(``_look_up``), unless their lookups read their own lengths or IPv4 IDs (``RunLookup._per_run``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..kernel.gro import MAX_GRO_SKBS
from .deltas import PendingFlowOps, PollCache
from .run_events import placed_run
from .runs import BlockRuns, LengthOps, RunEntry, RunLists, Runs, most_held


class RunServe:
    """The block-at-a-time part of ``compose.RunComposer`` (a mixin: ``_init_runs`` calls ``_init_serve``)."""

    runs: PollCache
    flow_ops: PendingFlowOps
    rep: Any
    observed: bool
    composed: int
    _idle: bool
    _exact_runs: set[bytes]
    _lengths_due: list[LengthOps]
    _cells_index: dict[int, int]
    _cells_weight: int
    _phys_napis: list
    _cells_napis: list
    _lookup: Callable[..., tuple]
    _per_run: Callable[[bytes, bytes], bool]
    _memo: Callable[..., tuple]
    _id_key: Callable[..., bytes]
    _known_placed: Callable[..., list | None]
    _deliver: Callable[[tuple, int, list, int], None]

    def _init_serve(self) -> None:
        #: the marks of the current block (``_servable``), or None
        self._marks: _Marks | None = None
        #: the block's polls served (``_serve``) and not yet settled (``_settle_served``)
        self._served: list[int] = []
        self.served = 0  # polls answered by ``_serve`` (also counted in ``composed``)
        #: the NAPIs' poll counts of the served polls settled and not yet added (``_settle_polls``): the phys
        #: NAPIs' polls and full polls, then each cell's (int64)
        self._polls_due = np.zeros(2 + 2 * len(self._cells_napis), np.int64)

    def _unmark(self, m: _Marks) -> None:
        """Note the keys made length-exact since ``m``'s marks and mark the polls with a run of one of them to be
        marked again (``stale``): what makes a lookup's earlier answer wrong is its run's key made length-exact
        (its runs are then looked up with their exact lengths: ``_lookup`` reads ``_exact_runs`` for the run's own
        key only). A new recording only adds answers: a run a mark found stays answered rightly by the entry it
        found (``_lookup``: the poll's own context, or a recording that held nothing at its end), and a run it did
        not find sends its poll to ``_compose``."""
        made = self._exact_runs - m.exact
        m.exact = set(self._exact_runs)
        poll = m.runs.poll
        for j, k in enumerate(m.runs.keys):
            if k in made:
                m.stale[poll[j]] = True

    def _serve(
        self, block_runs: BlockRuns, p: int, sizes: list[int], new: list[bool], base_index: int, t: int
    ) -> bool:
        """Answer poll ``p`` at ``t`` (ns) of the block (``_block_runs``' answer ``block_runs``; ``sizes``: each
        poll's frames; ``new``: the polls composed of their runs; ``base_index``: capture index of the block's first
        record) from its runs when ``_servable`` marks it (module docstring); False (nothing done) otherwise, when
        the kernels are not idle, or when an observer's deliveries of a run cannot be placed in this poll
        (``_known_events``: ``_compose`` then runs it whole)."""
        if not self._idle:
            return False
        m = self._marks
        if m is None or m.block_runs is not block_runs:
            m = self._marks = _Marks(
                block_runs, sizes, new, self.rep.config.weight, self._exact_runs, len(self._cells_napis)
            )
            self._servable(m, range(p, len(sizes)))
        else:
            if len(self._exact_runs) != len(
                m.exact
            ):  # keys made length-exact since (only ever added in a block)
                self._unmark(m)
            if m.stale[p] or (not m.ok[p] and m.unknown[p] and m.recorded_since(p)):
                # a run's key made length-exact since, or a run with an unknown run's key recorded since (that
                # run may be known now: a lookup reads only the entries under its own key, ``_lookup``)
                self._servable(m, [p])
        if not m.ok[p]:
            return False
        placed: list = []
        if self.observed:  # each run's deliveries, for this run's lengths and RX hashes (sim/run_events.py)
            ra, rb = int(m.run_at[p]), int(m.run_at[p + 1])
            found = [(None, None, m.entries[i], None) for i in m.ei[ra:rb].tolist()]
            known = self._known_placed(found, m.runs, m.lists.bounds, ra)
            if known is None:
                return False
            placed = [placed_run(block_runs, j, *k) for j, k in zip(range(ra, rb), known, strict=True)]
        self.composed += 1
        self.served += 1
        self._served.append(p)
        if placed:
            self._deliver(block_runs, base_index, placed, t)
        return True

    def _servable(self, m: _Marks, polls: Iterable[int]) -> None:
        """Mark polls ``polls`` of ``m``'s block (module docstring): look their runs up, and check them together.
        The marks of the polls served already stay (their runs' entries are settled from them)."""
        polls = np.asarray([q for q in polls if m.new[q]], np.int64)
        js, at = m.runs_of(polls)
        nrun = np.diff(at)
        runs = m.runs
        m.ei[js] = self._look_up(runs, m.lists, js, m.full, m)
        holding, ends, cells_in, polled = self._entry_table(m)
        known = m.ei[js] >= 0
        ei = np.where(known, m.ei[js], len(m.entries))

        def per_poll(v: np.ndarray) -> np.ndarray:  # sums over each poll's runs
            c = np.zeros((len(v) + 1, *v.shape[1:]), np.int64)
            np.cumsum(v, axis=0, out=c[1:])
            return c[at[1:]] - c[at[:-1]]

        unknown = per_poll((~known).astype(np.int64)) > 0
        bad = per_poll((m.more[js] & ends[ei]).astype(np.int64)) > 0
        held = holding[ei] & known
        rows = m.nkv[js]
        load = per_poll(rows * held)
        over = load > MAX_GRO_SKBS
        if over.any():  # the runs' distinct rows could fill a bucket: count the packets held at once
            hj = np.flatnonzero(held & np.repeat(over, nrun))
            b = m.bounds
            first = runs.order[b[js[hj]]]
            last = np.where(ends[ei[hj]], -1, runs.order[b[js[hj] + 1] - 1])
            poll = np.repeat(np.arange(len(polls)), nrun)[hj]
            load = np.where(over, most_held(poll, first, last, rows[hj], len(polls)), load)
        fill = per_poll(cells_in[ei]).max(axis=1, initial=0)
        ok = (nrun > 0) & ~unknown & ~bad & (load <= MAX_GRO_SKBS) & (fill < self._cells_weight)
        most = np.zeros((len(polls), polled.shape[1]), np.int64)
        some = np.flatnonzero(nrun > 0)
        if len(some) and polled.shape[1]:
            most[some] = np.maximum.reduceat(polled[ei], at[some], axis=0)
        m.most[polls] = most
        unknown_keys: dict[int, set[bytes]] = {}
        keys = runs.keys
        unk = js[~known]
        for j, q in zip(unk.tolist(), runs.poll[unk].tolist(), strict=True):
            unknown_keys.setdefault(q, set()).add(keys[j])
        seen = len(m.recorded)
        for q, o, u in zip(polls.tolist(), ok.tolist(), unknown.tolist(), strict=True):
            m.ok[q], m.unknown[q] = o, u
            m.stale[q], m.seen[q], m.unknown_keys[q] = False, seen, unknown_keys.get(q)

    def _look_up(
        self, runs: Runs, lists: RunLists, js: np.ndarray, full: list[bool], m: _Marks
    ) -> np.ndarray:
        """Runs ``js`` looked up in their polls' contexts (``full``: per poll): each one's index in ``m.entries``
        (grown with the entries met first), or -1 (unknown). Runs with the same key in the same context get the
        same answer (``RunLookup._lookup``: it reads the cache, the key and the context, and the run's own lengths
        and IPv4 IDs only where ``_per_run`` says so): one lookup per such group, nothing is recorded meanwhile."""
        bounds = lists.bounds
        keys = runs.keys
        lookup = self._lookup
        pair = m.kid[js] * 2 + np.asarray(full, np.int64)[runs.poll[js]]
        _u, first, inv = np.unique(pair, return_index=True, return_inverse=True)
        inv = inv.reshape(-1)
        ans = np.empty(len(first), np.int64)
        alone = np.zeros(len(first), bool)
        ctx_of = [b"F" if c else b"" for c in (pair[first] & 1).tolist()]  # per group
        for g, (j, ctx) in enumerate(zip(js[first].tolist(), ctx_of, strict=True)):
            if self._per_run(keys[j], ctx):
                alone[g] = True
                continue
            ans[g] = m.index(lookup(runs, j, bounds[j], bounds[j + 1], ctx)[0])
        out = ans[inv]
        if alone.any():
            xs = np.flatnonzero(alone[inv])
            memo, id_key, exact = self._memo, self._id_key, self._exact_runs
            exact_of = [keys[j] in exact for j in js[first].tolist()]  # per group
            by_memo: dict[tuple, int] = {}  # equal memos, equal answers (``RunLookup._memo``)
            got = []
            for g, j in zip(inv[xs].tolist(), js[xs].tolist(), strict=True):
                a, b = bounds[j], bounds[j + 1]
                # a key not length-exact whose lookup reads IDs (``_per_run``): its memo is its group's key and
                # context (``g``) and ``_id_key`` of its IDs
                mk = memo(runs, j, a, b, ctx_of[g]) if exact_of[g] else (g, id_key(runs, a, b))
                i = by_memo.get(mk)
                if i is None:
                    i = by_memo[mk] = m.index(lookup(runs, j, a, b, ctx_of[g])[0])
                got.append(i)
            out[xs] = got
        return out

    def _entry_table(self, m: _Marks) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per entry of ``m.entries``, and a last row of zeros for unknown runs: held or merged a packet, still held
        one at its end (bool), skbs put into each tunnel cell (int64 (entries + 1, cells)), and each cell's polls
        and full polls (int64 (entries + 1, 2 * cells)). Entries only grow and a ``RunEntry`` does not change, so
        the rows made already are kept in ``m.table`` and only the entries met since are added (all again when a
        tunnel cell was met since)."""
        cells = self._cells_index
        nc = len(cells)
        t = m.table
        done = 0 if t is None or t[2].shape[1] != nc else len(t[0]) - 1
        nu = len(m.entries)
        if t is not None and done == nu:
            return t
        holding = np.zeros(nu + 1, bool)
        ends = np.zeros(nu + 1, bool)
        cells_in = np.zeros((nu + 1, nc), np.int64)
        polled = np.zeros((nu + 1, 2 * nc), np.int64)
        if done and t is not None:
            for new, old in zip((holding, ends, cells_in, polled), t, strict=True):
                new[:done] = old[:done]
        for i in range(done, nu):
            x: RunEntry = m.entries[i][3]
            holding[i] = x.holding
            ends[i] = x.ends_held
            for nid, c in x.cells_in:
                cells_in[i, cells[nid]] += c
            for nid, dp, df in x.polled:
                ci = cells.get(nid)
                if ci is not None:
                    polled[i, 2 * ci : 2 * ci + 2] = dp, df
        m.table = (holding, ends, cells_in, polled)
        return m.table

    def _settle_polls(self) -> None:
        """Add the NAPIs' poll counts of the polls ``_settle_served`` settled (``_polls_due``): counters are read
        only after the replay, and a recording takes differences, which these leave alone (called between polls,
        at the end of a block's)."""
        due = self._polls_due
        if not due[0]:
            return
        for n in self._phys_napis:
            n.polls += int(due[0])
            n.full_polls += int(due[1])
        for ci, n in enumerate(self._cells_napis):
            n.polls += int(due[2 + 2 * ci])
            n.full_polls += int(due[3 + 2 * ci])
        due[:] = 0

    def _settle_served(self) -> None:
        """Add the counters of the runs of the polls ``_serve`` answered since the last call (module docstring)."""
        m = self._marks
        if m is None or not self._served:
            return
        served = np.asarray(self._served, np.int64)
        js, _at = m.runs_of(served)
        self._served = []
        # the NAPIs' polls: each phys NAPI one a poll (full or not), each cell what its mark says (``most``)
        due = self._polls_due
        due[0] += len(served)
        due[1] += int(np.asarray(m.full, bool)[served].sum())
        due[2:] += m.most[served].sum(axis=0)
        ei = m.ei[js]
        self.runs.hits += len(js)
        nt = len(m.tuples)
        pair, first, times = np.unique(ei * nt + m.flows[js], return_index=True, return_counts=True)
        by_entry = np.bincount(ei, minlength=len(m.entries))
        # each entry's runs' payload lengths summed by run position, for its length counters (``LengthOps``)
        has = np.asarray([e[3].lengths is not None for e in m.entries], bool)
        lj = js[has[ei]]
        a = m.bounds[lj]
        n = m.bounds[lj + 1] - a
        width = int(n.max()) if len(n) else 0
        pos = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
        row = np.zeros(len(m.entries), np.int64)  # each entry with length counters: its row of ``sums``
        used = np.flatnonzero(has & (by_entry > 0))
        row[used] = np.arange(len(used))
        sums = np.bincount(
            np.repeat(row[ei[has[ei]]], n) * width + pos,
            weights=m.runs.payload[np.repeat(a, n) + pos],
            minlength=len(used) * width,
        ).astype(np.int64)  # exact: a block's payload bytes stay far below 2**53
        for i, r in zip(np.flatnonzero(by_entry).tolist(), row[by_entry > 0].tolist(), strict=True):
            e = m.entries[i]
            times_served = int(by_entry[i])
            e[1] += times_served
            lengths = e[3].lengths
            if lengths is not None and lengths.add_sums(
                sums[r * width : r * width + len(lengths.payload)], times_served
            ):
                self._lengths_due.append(lengths)
        # flow counters in the order the runs came (``PendingFlowOps`` keeps them in that order)
        o = np.argsort(first, kind="stable")
        entries, tuples, add = m.entries, m.tuples, self.flow_ops.add
        for i, f, n_runs in zip(
            (pair[o] // nt).tolist(), (pair[o] % nt).tolist(), times[o].tolist(), strict=True
        ):
            ops = entries[i][3].flow_ops
            if ops:
                add(ops, tuples[f], n_runs)


class _Marks:
    """The polls of one block ``_serve`` may answer (``_servable``), per poll: ``ok`` (may be served), ``unknown``
    (not, for a run not known: ``unknown_keys``, its unknown runs' keys, and ``seen``, how many of the runs
    ``recorded`` since the marks were made its mark had seen), ``most`` (int64 (polls, 2 * cells): each cell's
    polls and full polls, ``2 * cell`` and ``2 * cell + 1``), ``stale`` (to be marked again: a run's key was made
    length-exact since its mark, ``_unmark``); per run: ``ei``, its entry's index in ``entries`` (-1: unknown or not looked up); each run's
    flows (``run_flows``) by number ``flows`` in ``tuples``; ``exact``: the length-exact keys the marks were made
    or brought up to date with."""

    def __init__(
        self,
        block_runs: BlockRuns,
        sizes: list[int],
        new: list[bool],
        weight: int,
        exact: set[bytes],
        cells: int,
    ) -> None:
        self.block_runs = block_runs
        self.runs: Runs = block_runs.runs
        self.run_at = np.asarray(block_runs.run_at, np.int64)
        self.lists: RunLists = block_runs.lists
        self.sizes, self.new = sizes, new
        self.full = [s == weight for s in sizes]  # per poll: it took ``weight`` frames
        # per run, as arrays once for every marking of the block
        self.more = np.asarray(self.runs.more, bool)
        self.nkv = np.asarray(self.runs.nkv, np.int64)
        self.bounds = np.asarray(self.runs.bounds, np.int64)
        #: ``_entry_table``'s rows for ``entries`` so far
        self.table: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        n = len(sizes)
        self.ok = [False] * n
        self.unknown = [False] * n
        self.most = np.zeros((n, 2 * cells), np.int64)
        self.ei = np.full(len(self.runs.bounds) - 1, -1, np.int64)
        self.entries: list[list] = []
        self.uniq: dict[int, int] = {}  # id(entry) → its index in ``entries``
        #: per run: its key numbered in the block (equal keys, equal numbers: ``Runs.kid``, else numbered here)
        kid = self.runs.kid
        if kid is None:
            kd: dict[bytes, int] = {}
            kid = np.array([kd.setdefault(k, len(kd)) for k in self.runs.keys], np.int64)
        self.kid = kid
        runs = self.runs
        # each run's flows (``RunLists.flows``) numbered: with one flow a run (each run's frames all of its first
        # frame's flow), by flow id, without a tuple a run
        first = runs.fids[self.bounds[:-1]]
        if (runs.fids == np.repeat(first, np.diff(self.bounds))).all():
            u, inv = np.unique(first, return_inverse=True)
            self.flows = inv.reshape(-1).astype(np.int64)
            self.tuples: list[tuple[int, ...]] = [(f,) for f in u.tolist()]
        else:
            tuples: dict[tuple, int] = {}
            self.flows = np.array([tuples.setdefault(f, len(tuples)) for f in self.lists.flows], np.int64)
            self.tuples = list(tuples)
        self.stale = [False] * n
        self.exact = set(exact)
        #: the keys (``Runs.keys``) of the runs recorded since the marks were made (``_record_run``), in order
        self.recorded: list[bytes] = []
        #: per poll: how many of ``recorded`` its mark had seen, and its unknown runs' keys (None: none)
        self.seen = [0] * n
        self.unknown_keys: list[set[bytes] | None] = [None] * n

    def recorded_since(self, p: int) -> bool:
        """Whether a run with the key of one of poll ``p``'s unknown runs was recorded since its mark."""
        keys = self.unknown_keys[p]
        return keys is not None and any(k in keys for k in self.recorded[self.seen[p] :])

    def index(self, e: list | None) -> int:
        """Cache entry ``e``'s index in ``entries`` (added when first met), or -1 for None."""
        if e is None:
            return -1
        i = self.uniq.get(id(e))
        if i is None:
            i = self.uniq[id(e)] = len(self.entries)
            self.entries.append(e)
        return i

    def runs_of(self, polls: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The runs of ``polls`` (int64 run indexes, poll by poll) and where each poll's begin among them (``at``:
        poll ``polls[q]``'s are ``[at[q], at[q + 1])``)."""
        a, b = self.run_at[polls], self.run_at[polls + 1]
        n = b - a
        at = np.zeros(len(polls) + 1, np.int64)
        np.cumsum(n, out=at[1:])
        return np.repeat(a - at[:-1], n) + np.arange(int(at[-1])), at
