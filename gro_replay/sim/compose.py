"""Polls composed of their flow runs (sim/runs.py): the batch engine's answer to irregular traffic.

On an overlay node nearly every poll is new as a whole (which connections, how many segments, where the ACKs
fall), but the runs it is made of — the frames of one inner flow within the poll, in pieces that end where a
frame ends its packet (sim/runs.py) — recur: ``run_keys`` keys them
by what GRO reads, relative to each other. ``RunComposer._compose`` answers a poll whose whole key the poll
cache (pollcache.py) does not know from its runs: a known run adds the counters it added when recorded, an
unknown one runs through the kernels as a poll of its own and is recorded; the polls whose runs are all known, the
most, are answered a block at a time by sim/run_serve.py, under the same argument. With an observer of deliveries
(``--trace``, explain) a run also keeps its deliveries, and the poll's are handed over in the kernels' order.
Below: why the sum is the poll's own; sim/run_events.py: why that order is the kernels'. tests/test_runs.py,
tests/test_runs_observed.py, tests/test_run_serve.py and tests/test_pollcache.py compare whole documents, trace text
and explain's output with the reference path.

Why a composed poll is exact. Every poll ends with GRO flushed (pollcache.py): below budget by
``napi_complete_done``, at budget by ``napi_poll`` (a run of a full poll is recorded as a poll that takes
its whole, smaller, budget: the same end, ``napi_poll``'s flush; a run whose recording held nothing when it
ended serves full and short polls alike: both ends then flush nothing, and the phys NAPI's poll counts are
the poll's own, one poll, full or not); the tunnel cells likewise (when the
poll's runs put a cell's whole budget there, each run is recorded with that cell's weight set to what it
puts there, so that its cell poll too ends full and is polled again, as the poll's is). GRO compares
packets only within a flow (``gro_list_prepare``, every offload's ``same_flow``) and a run holds every
frame of its inner flow in the poll, or a piece of them whose frames all follow those of the flow's pieces before
it and all precede those of its pieces after it. A piece that is not its flow's last is served only from a
recording that held nothing after its last frame (``RunEntry.ends_held`` false: no packet flushed by its poll's
end, on the phys NAPI or a tunnel cell): the next piece then meets nothing of the earlier ones on the phys NAPI,
nor on a cell, where its skbs follow theirs in the queue — as when each ran alone. A recording that held something
there notes its key (``_held_pieces``): the poll runs whole, and from the next block on no run is cut where that
key would end (``_block_runs``); an unknown piece that is not its flow's last is recorded before the poll is decided
(sim/run_probe.py). So the runs share only the GRO buckets and the cells' budget: a
bucket holding ``MAX_GRO_SKBS`` packets flushes its oldest (``dev_gro_receive``). A flow holds at most
one packet per NAPI and a run's flows are its distinct header rows; counting those of every run that
held or merged a packet when recorded (and of every unknown run) over the frames between its first and
its last (or the poll's end, when its recording flushed a packet there), no bucket can fill when they
are at most ``MAX_GRO_SKBS`` at every frame; the skbs each run's recording put into each cell (an unknown
run: its frames) say whether the cell's poll fills. Every counter but the NAPIs' poll counts then adds
up over the runs; each NAPI's poll count is what any run that polled it counted (the same poll, whole or
filled, in every run of the poll's context).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..kernel import skbuff as _skbuff
from ..kernel.gro import GRO_LEGACY_MAX_SIZE, GroResult
from ..kernel.nic_skb import AF_PACKET_PAGED_FROM
from .deltas import PendingFlowOps, PollCache, counters, delta, flow_containers, idle
from .ingest import Frame
from .replayer import Replayer
from .run_events import MAX_RUN_EVENTS, RunEvents, _event_rules, placed_run
from .run_lookup import MAX_RUN_KEYS, RunLookup
from .run_probe import RunProbe
from .run_serve import RunServe
from .runs import (
    BlockRuns,
    LengthOps,
    RunEntry,
    RunLists,
    ends_held,
    id_guards,
    length_exact_key,
    length_ops,
    run_flows,
    run_keys,
)

#: distinct header rows without flow names numbered (``run_keys``' ``shapes``; ~300 bytes each)
MAX_SHAPES = 1 << 16
#: GRO results that leave a packet held on the NAPI (``GRO_HELD``) or merge into one (``GRO_MERGED*``)
_HOLDING = (GroResult.GRO_MERGED, GroResult.GRO_MERGED_FREE, GroResult.GRO_HELD)


class RunComposer(RunServe, RunEvents, RunProbe, RunLookup):
    """The flow-run part of ``pollcache.BatchReplay`` (a mixin: it uses the replay's ``rep``, ``_entry``,
    ``_idle`` and ``retiring``). ``_init_runs`` sets its state up."""

    rep: Replayer
    _idle: bool
    observed: bool
    _block_fids: np.ndarray
    _block_cls: np.ndarray
    retiring: bool
    _entry: Callable[..., tuple[int, Frame]]

    def _init_runs(self, rep: Replayer) -> None:
        #: the block's frames' kv classes (sim/block_flows.py ``_flow_ids``; -1: not a common frame)
        self._block_cls = np.zeros(0, np.int64)
        #: flow runs: polls whose whole key misses are composed of their runs (``_compose``)
        self.runs = PollCache(MAX_RUN_KEYS)
        #: known runs' flow counters, added at the end or when their flow is retired (``PendingFlowOps``)
        self.flow_ops = PendingFlowOps(rep.stats)
        #: run keys whose runs add bytes that are not an skb's length: looked up with their exact lengths
        self._exact_runs: set[bytes] = set()
        self._shapes: dict[bytes, int] = {}  # header rows without flow names (sim/runs.py ``run_keys``)
        #: keys of runs recorded holding a packet after their last frame: no piece of a run ends where one of
        #: them would (``_block_runs``)
        self._held_pieces: set[bytes] = set()
        #: by run key (``Runs.keys``): ``_lookup``'s answers by key and context (and the run's IPv4 ID
        #: differences where a recording read IDs: ``_id_key``), and ``_reads_ids``' answers; a key's emptied when
        #: a run with it is recorded (``_forget``), all when the runs are forgotten, a flow is retired or renamed,
        #: or an outer ID is first compared with an inner one, and past ``MAX_RUN_KEYS`` answers
        self._looked: dict[bytes, dict] = {}
        self._looked_n = 0  # answers kept in ``_looked``
        #: some recording's ``IdGuards`` compare an outer IPv4 ID with an inner one (``_id_key``)
        self._ids_across = False
        #: ``_id_key``'s IDs of the last runs it read: (runs, relative IDs, outer less inner IDs)
        self._id_rel: tuple = (None, b"", b"")
        self._phys_napis = [k.phys_napi.stats for k in rep.kernels]
        self._cells_napis = [c.napi.stats for k in rep.kernels for c in k.tunnel_cells]
        self._napis = self._phys_napis + self._cells_napis
        self._phys_ids = [id(n) for n in self._phys_napis]
        self._cells_ids = {id(n) for n in self._cells_napis}
        self._cells_index = {id(n): i for i, n in enumerate(self._cells_napis)}
        self._cells_napi_of = {id(c.napi.stats): c.napi for k in rep.kernels for c in k.tunnel_cells}
        #: the NAPIs whose weight a recording may set (``_record_run``)
        self._weighted = [k.phys_napi for k in rep.kernels] + list(self._cells_napi_of.values())
        self._counts_ids = {id(n.counts) for n in self._napis}
        #: skbs a tunnel cell's poll takes (``gro_cell_poll``: the NAPI weight)
        self._cells_weight = min([c.napi.weight for k in rep.kernels for c in k.tunnel_cells] or [1 << 30])
        devs = [d for k in rep.kernels for d in [k.phys] + [c.dev for c in k.tunnel_cells]]
        #: the smallest merge limit of any device (bytes): a run shorter than it can never reach it
        self._limit = min([GRO_LEGACY_MAX_SIZE] + [min(d.gro_max_size, d.gro_ipv4_max_size) for d in devs])
        #: the wire length from which the driver's skbs are paged (AF_PACKET's on veth), None: never (a run key
        #: then holds such frames' lengths: sim/runs.py)
        self._paged_from = AF_PACKET_PAGED_FROM if rep.driver.layout.af_packet else None
        #: equal parts of kept delivery events, kept once (``_placed``; emptied with the runs' shapes)
        self._shared: dict = {}
        #: each list of kept delivery events as ``_deliver`` reads it (``_forms``), by id
        self._event_forms: dict = {}
        #: each kernel's tunnel cells by device name (``_placed``)
        self._cell_at = [{c.dev.name: ci for ci, c in enumerate(k.tunnel_cells)} for k in rep.kernels]
        #: known runs' length-adding counters not yet added (``LengthOps.add``; ``settle_lengths``)
        self._lengths_due: list[LengthOps] = []
        self._cells_unknown: list[int] = []  # runs ``_known_runs`` refused a poll for (``_probe``)
        self.composed = 0  # polls answered from their runs, every run known
        self.composed_partly = 0  # polls composed of their runs, some of them run through the kernels
        self._init_serve()

    def _block_runs(
        self,
        col: Any,
        ch: Any,
        src: np.ndarray,
        idx: np.ndarray,
        poll_of: np.ndarray,
        sizes: np.ndarray,
        new: list,
    ) -> BlockRuns:
        """The flow runs of the block's polls marked ``new`` (``src``/``idx``: the entries and their block
        positions, ``poll_of`` their polls): sim/runs.py ``BlockRuns``."""
        ent = np.flatnonzero(np.repeat(np.asarray(new, bool), sizes))
        rep = self.rep
        if len(self._shapes) > MAX_SHAPES:  # run keys name shapes by number: start both afresh
            self.runs.settle()
            self.runs.entries.clear()
            self._forget_all()
            self._ids_across = False
            self.runs.events_kept = 0
            self._shared.clear()
            self._exact_runs.clear()
            self._shapes.clear()
            self._held_pieces.clear()
        at = idx[ent]
        no_cut = None
        while True:  # each round joins at least one piece to the next: at most as many rounds as cuts
            runs = run_keys(
                col,
                at,
                poll_of[ent],
                ch.caplen,
                self._limit,
                self._block_fids[at],
                self._block_cls[at],
                self._shapes,
                rep._flow_ok if rep._select is not None else None,
                no_cut,
                self._paged_from,
            )
            held = [j for j in np.flatnonzero(runs.more).tolist() if runs.keys[j] in self._held_pieces]
            if not held:
                break
            if no_cut is None:
                no_cut = np.zeros(len(at), bool)
            no_cut[runs.order[runs.bounds[np.array(held) + 1] - 1]] = True  # the runs' last frames
        run_at = np.searchsorted(runs.poll, np.arange(len(sizes) + 1)).tolist()
        flows, pay = run_flows(runs)
        lists = RunLists(
            runs.bounds.tolist(), runs.order.tolist(), runs.nkv.tolist(), flows, pay, runs.more.tolist()
        )
        return BlockRuns(runs, src[ent][runs.order], run_at, lists)

    def _compose(
        self, block_runs: BlockRuns, p: int, ch: Any, extras: list, base_index: int, t: int, size: int
    ) -> bool:
        """Answer poll ``p`` of ``size`` frames at ``t`` (ns) from its flow runs (``_block_runs``, sim/runs.py): a
        known run adds its recorded counters, an unknown one runs through the kernels as a poll of its own and is
        recorded (without an observer, a later run of the poll with a key recorded so is served from that
        recording: what it would record). False (nothing done) when the kernels are not idle, the runs could hold
        more packets than a GRO bucket keeps, or fill a tunnel cell's poll without every run known (the unknown
        ones are recorded first, and the poll decided again: sim/run_probe.py).

        Why it is exact: the module docstring.
        The order of deliveries with an observer (``--trace``, explain): sim/run_events.py.
        """
        if not self._idle:
            return False
        runs, run_src, run_at, lists = block_runs
        ra, rb = run_at[p], run_at[p + 1]
        full = size == self.rep.config.weight
        found = self._known_runs(runs, lists, ra, rb, full)
        done: dict = {}  # runs recorded by ``_probe`` whose counters stay
        ran = bool(self._cells_unknown) and len(self.runs.entries) < MAX_RUN_KEYS
        if ran:
            probed = self._probe(block_runs, p, ch, extras, base_index, t, full)
            found, done = probed or (None, {})
        if found is None:
            return False
        observed = self.observed
        bounds = lists.bounds
        # with an observer: each known run's events, for this run's lengths and RX hashes
        known = self._known_placed(found, runs, bounds, ra) if observed else []
        if known is None:
            return False  # a known run's deliveries cannot be placed in this poll: it runs whole
        napis = self._napis
        before = [(n.polls, n.full_polls) for n in napis]
        gots = set()  # what each run polled (``RunEntry.polled``; most runs of a poll poll the same)
        placed: list = []  # (run's events, its entries' poll order, their capture indices) with an observer
        recorded: set[bytes] = set()  # keys of this poll's runs recorded here
        for j, (k, ctx, e, weights) in zip(range(ra, rb), found, strict=True):
            a, b = bounds[j], bounds[j + 1]
            if e is None and k in recorded and not observed:
                # an earlier run of this poll with this key was just recorded: what this one would record
                e = self._find(self._exact(k, runs, a, b) + ctx, runs.ids[a:b])
            if j in done:
                got, events = done[j]
                grew = hashes = None
            elif e is not None:
                got = self._hit_run(e, lists, j)
                events, grew, hashes = known[j - ra] if observed else ([], None, None)
            else:
                batch = [self._entry(ch, x, extras, base_index)[1] for x in run_src[a:b].tolist()]
                got, events = self._record_run(
                    k, ctx, batch, t, runs.payload[a:b], runs.ids[a:b], full, weights
                )
                grew = hashes = None  # recorded with this run's own lengths and hashes
                ran = True
                recorded.add(k)
            if observed:
                placed.append(placed_run(block_runs, j, events, grew, hashes))
            gots.add(tuple(got))
        polled: dict[int, tuple[int, int]] = {}
        for got in gots:
            for nid, dp, df in got:
                p, f = polled.get(nid, (0, 0))
                polled[nid] = (max(p, dp), max(f, df))
        self._count_polls(polled, before, full)
        if ran:
            self._idle = all(idle(k) for k in self.rep.kernels)
            self.composed_partly += 1
        else:
            self.composed += 1
        if observed:
            self._deliver(block_runs, base_index, placed, t)
        return True

    def _hit_run(self, e: list, lists: RunLists, j: int) -> tuple:
        """Count run ``j`` (``lists``: see ``_block_runs``) as served from cache entry ``e``: a hit, its
        length-adding and flow counters noted (added by ``settle_lengths`` and ``flow_ops``). Returns what its
        recording polled (``RunEntry.polled``)."""
        e[1] += 1
        self.runs.hits += 1
        x: RunEntry = e[3]
        a, b = lists.bounds[j], lists.bounds[j + 1]
        if x.lengths is not None and x.lengths.add(lists.pay[8 * a : 8 * b]):
            self._lengths_due.append(x.lengths)
        if x.flow_ops:
            self.flow_ops.add(x.flow_ops, lists.flows[j])
        return x.polled

    def _count_polls(self, polled: dict[int, tuple[int, int]], before: list, full: bool) -> None:
        """Each NAPI's poll counts after a composed poll: ``before`` them, plus the phys NAPIs' one poll (full or
        not: ``_known_runs``) and the tunnel cells' polls ``polled`` by its runs (``id(NapiStats)`` → polls, full
        polls: the most any run counted)."""
        for nid in self._phys_ids:
            polled[nid] = (1, int(full))
        for n, (p0, f0) in zip(self._napis, before, strict=True):
            dp, df = polled.get(id(n), (0, 0))
            n.polls = p0 + dp
            n.full_polls = f0 + df

    def settle_lengths(self) -> None:
        """Add the length-adding counters of the known runs served since the last call (``LengthOps.settle``):
        counters are read only after the replay, and recordings take differences, which these leave alone."""
        for lengths in self._lengths_due:
            lengths.settle()
        self._lengths_due.clear()

    def _run_alone(
        self,
        batch: list,
        t: int,
        full: bool,
        fill: dict[int, int] | None,
        tally: list | None,
        id_tally: list | None = None,
    ) -> tuple[list[tuple[int, int, int]], list[tuple[int, int]], tuple[list, bool]]:
        """``Replayer.run_poll`` of one run with the NAPI weights ``_record_run`` says, ``tally`` noting the
        length-adding counters, ``id_tally`` the IPv4 ID differences read. Returns ``(id(NapiStats), polls, full
        polls)`` of each NAPI it polled (their poll counts are put back: ``_compose`` counts the poll's own),
        ``(id(NapiStats), skbs)`` each cell took, and with an observer the run's deliveries, kept instead of handed
        on (``_placed``; else ``([], False)``)."""
        stats = self._napis
        polls0 = [(st.polls, st.full_polls) for st in stats]
        counts0 = [sum(st.counts) for st in stats]
        weights = [napi.weight for napi in self._weighted]
        rep = self.rep
        raw: list = []
        taps: list = []
        saved = [st.on_deliver for st in rep.stats]
        if self.observed:
            for i, ks in enumerate(rep.stats):
                if saved[i] is not None:
                    ks.on_deliver = lambda kernel, stage, dev, skb, now_ns, _i=i: raw.append(
                        (_i, kernel, stage, dev, skb, skb.addr, skb.len, skb.flow, tuple(skb.frames), now_ns)
                    )
            _skbuff.queue_tap = lambda napi, skb, taken: taps.append(
                (napi, skb, taken, sum(napi.stats.counts), skb.hash, skb.frames[0])
            )
        _skbuff.length_tally = tally
        _skbuff.id_tally = id_tally
        try:
            if full:
                for k in rep.kernels:
                    k.phys_napi.weight = len(batch)
            for nid, w in (fill or {}).items():
                self._cells_napi_of[nid].weight = w
            rep.run_poll(batch, t)
        finally:
            _skbuff.length_tally = None
            _skbuff.id_tally = None
            _skbuff.queue_tap = None
            for ks, obs in zip(rep.stats, saved, strict=True):
                ks.on_deliver = obs
            for napi, w in zip(self._weighted, weights, strict=True):
                napi.weight = w
        polled = []
        for st, (p0, f0) in zip(stats, polls0, strict=True):
            if st.polls != p0:
                polled.append((id(st), st.polls - p0, st.full_polls - f0))
            st.polls, st.full_polls = p0, f0
        cells_in = [
            (id(st), sum(st.counts) - c0)
            for st, c0 in zip(stats, counts0, strict=True)
            if id(st) in self._cells_ids and sum(st.counts) != c0
        ]
        placed = self._placed(batch, t, raw, taps, counts0) if self.observed else ([], False)
        return polled, cells_in, placed

    def _split_deltas(self, before: list, batch: list, fids: set[int]) -> tuple[list, list, bool] | None:
        """A recorded run's counter changes since the ``before`` snapshots (``counters``, one per kernel): ``(deltas
        of the counters that are no flow's, one per kernel, flow counters by flow slot (``apply_flow_ops``), whether
        it held or merged a packet on some NAPI)``; the NAPIs' poll counts left out (``_compose`` counts them);
        None when a tunnel cell's queue dropped an skb (that depends on the other runs)."""
        rep = self.rep
        slot = {fid: j for j, fid in enumerate(dict.fromkeys(f.flow_id for f in batch))}
        deltas = []
        flow_ops: list = []
        holding = False
        for i, (k, snap) in enumerate(zip(rep.kernels, before, strict=True)):
            where = flow_containers(rep.stats[i], fids)
            attr_ops, item_ops = delta(snap, counters(k, rep.stats[i], fids))
            keep_attr: list = []
            keep_item: list = []
            for o, name, inc in attr_ops:
                if name in ("polls", "full_polls"):
                    continue
                if name == "dropped":
                    return None
                fw = where.get(id(o))
                if fw is None:
                    keep_attr.append((o, name, inc))
                else:
                    flow_ops.append((i, slot[fw[0]], fw[1], name, True, inc))
            for o, name, inc in item_ops:
                fw = where.get(id(o))
                if fw is None:
                    keep_item.append((o, name, inc))
                else:
                    flow_ops.append((i, slot[fw[0]], fw[1], name, False, inc))
            holding = holding or any(
                id(c) in self._counts_ids and key_ in _HOLDING and inc > 0 for c, key_, inc in item_ops
            )
            deltas.append((keep_attr, keep_item))
        return deltas, flow_ops, holding

    def _record_run(
        self,
        key: bytes,
        ctx: bytes,
        batch: list,
        t: int,
        payload: np.ndarray,
        ids: np.ndarray,
        full: bool,
        fill: dict[int, int] | None = None,
    ) -> tuple[list[tuple[int, int, int]], list]:
        """One flow run through the kernels as a poll of its own — with ``full``, one that takes its whole budget
        (the phys NAPIs' weight set to the run's length for it), with ``fill``, one whose tunnel cells' polls take
        theirs (each cell NAPI's weight set to the skbs this run puts there) — its counter deltas kept under
        ``key`` and its context ``ctx`` (when it adds bytes that are not an skb's length, with its exact lengths
        between them; beside the key's first recording when their IPv4 IDs answer apart: ``_id_walk``); with an
        observer, its delivery events too (``_placed``, within ``MAX_RUN_EVENTS``). Returns ``(id(NapiStats), polls,
        full polls)`` of each NAPI it polled (``_compose`` counts them once) and the run's delivery events
        (``_placed``; [] without an observer)."""
        rep = self.rep
        cache = self.runs
        raw = key
        fids = {b[3] for b in batch}
        record = len(cache.entries) < MAX_RUN_KEYS and cache.seen_before(key + ctx)
        before = [counters(k, rep.stats[i], fids) for i, k in enumerate(rep.kernels)] if record else None
        tally: list | None = [] if record else None
        read_ids: list | None = [] if record else None
        polled, cells_in, (events, ruled) = self._run_alone(batch, t, full, fill, tally, read_ids)
        if before is None or tally is None or read_ids is None or not all(idle(k) for k in rep.kernels):
            cache.uncacheable += 1
            return polled, events
        guards = id_guards(read_ids, batch, ids)
        if guards is None:
            cache.uncacheable += 1
            return polled, events
        split = self._split_deltas(before, batch, fids)
        if split is None:
            cache.uncacheable += 1  # a cell queue drop depends on the other runs
            return polled, events
        deltas, flow_ops, holding = split
        # packets flushed by the end of the poll: the run held something after its last frame
        to_end = ends_held(deltas)
        lengths = length_ops(tally, {f.index: j for j, f in enumerate(batch)}, payload)
        if lengths is None:
            self._exact_runs.add(key)
            self._forget(key)  # its lookups now read its exact lengths
        elif not lengths.ops:
            lengths = None
        if key in self._exact_runs:
            key = length_exact_key(key, payload.tobytes())
        key += ctx
        slot_key, _e = self._id_walk(key, ids)
        if slot_key is None or slot_key in cache.entries:
            cache.uncacheable += 1
            return polled, events
        keep = self.observed and ruled and cache.events_kept + len(events) <= MAX_RUN_EVENTS
        cache.add(slot_key, deltas, events if keep else [])
        self._forget(raw)  # lookups of runs with this key (sim/run_lookup.py ``_remember``)
        if self._marks is not None:
            self._marks.recorded.append(raw)  # the block's polls that may know it now (sim/run_serve.py)
        if not self._ids_across and any(ca != cb for _a, ca, _b, cb, _d, _n in guards.rows):
            self._ids_across = True
            self._forget_all()  # every ``_id_key`` now holds the outer less the inner ID: memos change
        cache.entries[slot_key].append(
            RunEntry(
                holding,
                tuple(polled),
                lengths,
                flow_ops,
                cells_in,
                to_end,
                guards,
                _event_rules(events, payload) if keep else None,
            )
        )
        return polled, events
