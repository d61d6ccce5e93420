"""Counter deltas of simulated polls: what a poll changed in every counter, kept and added again later.

The batch engine (pollcache.py) runs a poll (or a flow run, sim/compose.py) through the kernels once and keeps
what it changed: ``counters`` snapshots every counter a poll can change (stage, stack, flow and NAPI counters),
``delta`` takes the difference of two snapshots as increments on the counters' containers, ``PollCache`` keeps
them by key and adds them again for each later poll with the same key. ``idle`` tells whether a kernel holds
nothing (pollcache.py's exactness argument needs every poll to start and end idle).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..kernel.kernel import Kernel
from ..report.stats import FlowStats, KernelStats

#: hashes of keys met once, kept to decide when a key is worth recording (8 bytes + set overhead each)
MAX_SEEN = 1 << 16
#: polls whose new keys are recorded at once, whatever the cache's hit rate (``PollCache.seen_before``)
WARMUP = 256


def counters(k: Kernel, st: KernelStats, fids: Iterable[int]) -> dict:
    """Every counter a poll can change, as {(id(container), key, is_attr): value}, plus the containers."""
    out: dict = {}
    objs: dict = {}

    def attrs(o: Any, names: Iterable[str]) -> None:
        objs[id(o)] = o
        for nm in names:
            out[(id(o), nm, True)] = getattr(o, nm)

    def items(c: Any, keys: Iterable | None = None) -> None:
        objs[id(c)] = c
        for key, v in c.items() if keys is None else ((x, c[x]) for x in keys):
            out[(id(c), key, False)] = v

    for s in st.stages.values():
        attrs(s, ("frames_in", "skbs_in", "skbs", "bytes", "sw_csum_bytes", "complete_errors"))
        items(s.hist, [i for i, v in enumerate(s.hist) if v])
        items(s.hist_over)
        items(s.reasons)
        items(s.results)
        items(s.devices)
    items(st.stack)
    items(st.stack_frames)
    for fid in fids:
        f = st.flows.get(fid)
        if f is None:
            continue
        for path, c in flow_parts(f):
            if path:
                items(c)
            else:
                attrs(f, ("frames",))
    napis = [k.phys_napi] + [cells.napi for cells in k.tunnel_cells]
    for n in napis:
        attrs(n.stats, ("sw_csum_bytes", "complete_errors", "polls", "full_polls"))
        items(n.stats.counts, [i for i, v in enumerate(n.stats.counts) if v])
    for cells in k.tunnel_cells:
        attrs(cells, ("dropped",))
    return {"v": out, "o": objs}


def flow_parts(f: FlowStats) -> list[tuple[tuple, object]]:
    """A flow's counter containers, each with its path from the ``FlowStats`` (``counters``, ``apply_flow_ops``)."""
    parts: list[tuple[tuple, object]] = [((), f), (("skbs",), f.skbs), (("segs",), f.segs)]
    parts += [(("reasons", stage), c) for stage, c in f.reasons.items()]
    parts += [(("stack",), f.stack), (("stack_frames",), f.stack_frames)]
    parts += [(("id_steps", stage), c) for stage, c in f.id_steps.items()]
    parts += [(("splits", stage), c) for stage, c in f.splits.items()]
    parts += [(("carried",), f.carried), (("carried_by",), f.carried_by), (("empty",), f.empty)]
    return parts


def flow_containers(st: KernelStats, fids: Iterable[int]) -> dict[int, tuple[int, tuple]]:
    """id(container) → (flow id, path) for the counters of flows ``fids`` in kernel stats ``st``."""
    out = {}
    for fid in fids:
        f = st.flows.get(fid)
        if f is not None:
            for path, c in flow_parts(f):
                out[id(c)] = (fid, path)
    return out


def apply_flow_ops(stats: list[KernelStats], flow_ops: list, fids: tuple[int, ...], times: int = 1) -> None:
    """Add ``times`` a recorded run's flow counters to the flows ``fids`` of a run (``fids[slot]``: its flows in
    order of first frame), ``flow_ops``: ``(kernel index, slot, path, key, is attribute, increment)``."""
    for i, slot, path, key, is_attr, inc in flow_ops:
        c: Any = stats[i].flow(fids[slot])
        for step in path:
            c = getattr(c, step) if isinstance(step, str) and not isinstance(c, dict) else c[step]
        if is_attr:
            setattr(c, key, getattr(c, key) + inc * times)
        else:
            c[key] += inc * times


class PendingFlowOps:
    """Recorded runs' flow counters (``apply_flow_ops``) not yet added, counted by (counters, flows): the same run
    of the same flows recurs, and its counters are added once, times its count. Flow counters are read only
    after the replay or when a flow is retired or renamed (``settle_flow`` first); a recording's snapshots take
    differences, which counters added later leave alone."""

    __slots__ = ("stats", "pending", "by_fid")

    def __init__(self, stats: list[KernelStats]) -> None:
        self.stats = stats
        #: (id of the flow ops, flows) → [flow ops, flows, count]; the list keeps the ops (and their id) alive
        self.pending: dict[tuple[int, tuple[int, ...]], list] = {}
        self.by_fid: dict[int, list[tuple[int, tuple[int, ...]]]] = {}

    def add(self, flow_ops: list, fids: tuple[int, ...], times: int = 1) -> None:
        """Note ``times`` runs with the counters ``flow_ops`` of flows ``fids`` (``apply_flow_ops``)."""
        key = (id(flow_ops), fids)
        e = self.pending.get(key)
        if e is not None:
            e[2] += times
            return
        self.pending[key] = [flow_ops, fids, times]
        for fid in fids:
            self.by_fid.setdefault(fid, []).append(key)

    def settle_flow(self, fid: int) -> None:
        """Add what waits for flow ``fid`` (and for the other flows of the same runs)."""
        for key in self.by_fid.pop(fid, ()):
            e = self.pending.pop(key, None)
            if e is not None:
                apply_flow_ops(self.stats, e[0], e[1], e[2])

    def settle(self) -> None:
        for flow_ops, fids, times in self.pending.values():
            apply_flow_ops(self.stats, flow_ops, fids, times)
        self.pending.clear()
        self.by_fid.clear()


def delta(before: dict, after: dict) -> tuple[list, list]:
    """(attribute increments, item increments) from two ``counters`` snapshots, containers resolved."""
    b = before["v"]
    objs = after["o"]
    attr_ops: list = []
    item_ops: list = []
    for (oid, key, is_attr), v in after["v"].items():
        inc = v - b.get((oid, key, is_attr), 0)
        if inc:
            (attr_ops if is_attr else item_ops).append((objs[oid], key, inc))
    # hist/count lists: an index that was 0 before the poll is absent from ``before`` and from ``after`` if the
    # snapshot skipped zeros; lists are snapshot by non-zero index after the poll, so new indexes are present.
    return attr_ops, item_ops


def undo(before: dict, after: dict) -> None:
    """Put every counter of the ``after`` snapshot back to its value in ``before`` (``counters``); a dict key that
    ``before`` did not have is removed (sim/run_probe.py)."""
    b = before["v"]
    objs = after["o"]
    for (oid, key, is_attr), v in after["v"].items():
        was = b.get((oid, key, is_attr))
        if was == v:
            continue
        o = objs[oid]
        if is_attr:
            setattr(o, key, was or 0)
        elif was is None and isinstance(o, dict):
            del o[key]
        else:
            o[key] = was or 0


def idle(k: Kernel) -> bool:
    """True when kernel ``k`` holds nothing: no GRO packets, no GRO_NORMAL batch, no queued cell or backlog skbs."""
    for n in [k.phys_napi] + [cells.napi for cells in k.tunnel_cells]:
        if n.held() or n.rx_list or n.rx_count or n.defer_hard_irqs_count:
            return False
    return all(not cells.napi_skbs and not cells.backlog for cells in k.tunnel_cells)


class PollCache:
    """Counter deltas of polls by key, and how many times each key recurred since its deltas were added.

    ``hit(key)`` counts a recurrence (True) or returns False for an unknown key; ``settle()`` adds every delta
    times its pending count to the counters (counters are only read after the run, and recording a new delta
    takes differences, so pending counts may wait). ``hits``/``misses``/``uncacheable`` count polls.
    """

    def __init__(self, max_keys: int) -> None:
        #: the most keys the caller records (bounds the flow index ``by_fid``)
        self.max_keys = max_keys
        self.entries: dict[bytes, list] = {}  # key → [deltas (one per kernel), pending count, events]
        self._seen: set[int] = set()  # hashes of the keys run once (``seen_before``)
        self.events_kept = 0  # delivery events over all entries
        #: flow id → the keys recorded with its frames (``add``'s ``fids``; ``drop_flow``)
        self.by_fid: dict[int, list[bytes]] = {}
        self.hits = 0
        self.misses = 0
        self.uncacheable = 0

    def hit(self, key: bytes) -> list | None:
        """The delivery events of ``key`` (see ``BatchReplay._record``; empty when nothing observes), its
        recurrence counted; None for an unknown key."""
        e = self.entries.get(key)
        if e is None:
            return None
        e[1] += 1
        self.hits += 1
        return e[2]

    def seen_before(self, key: bytes) -> bool:
        """Whether to record ``key``'s delta now: at once for the first ``WARMUP`` polls and while the cache
        answers at least as many polls as it recorded, else when a poll with ``key`` ran before (by the key's hash: a collision only records early).
        Recording costs a snapshot of every counter before and after the poll, wasted on the polls of irregular
        traffic, whose keys mostly never recur; regular traffic keeps recording each new key at once."""
        if self.hits + self.misses < WARMUP or self.hits >= self.misses:
            return True  # the first polls, and while the cache answers as many polls as it records: at once
        h = hash(key)
        if h in self._seen:
            return True
        if len(self._seen) >= MAX_SEEN:
            self._seen.clear()
        self._seen.add(h)
        return False

    def add(self, key: bytes, deltas: list, events: list, fids: Iterable[int] = ()) -> None:
        """Record ``key``'s counter ``deltas`` and delivery ``events``; ``fids``: the flow ids of its frames, whose
        counters (``FlowStats`` objects) and ids its deltas and events hold (``drop_flow``)."""
        self.entries[key] = [deltas, 0, events]
        self.events_kept += len(events)
        self.misses += 1
        entries = self.entries
        for fid in fids:
            keys = self.by_fid.setdefault(fid, [])
            keys.append(key)
            # keys dropped with other flows stay listed: at most max_keys of them are entries
            if len(keys) > 2 * self.max_keys:
                keys[:] = [k for k in keys if k in entries]

    def drop_flow(self, fid: int) -> None:
        """Forget every key recorded with a frame of flow ``fid``, their pending counts added first: the flow is
        retired (its counters leave the stats) or its key now names another flow, so the same frames would no
        longer change the same counters."""
        for key in self.by_fid.pop(fid, ()):
            e = self.entries.pop(key, None)
            if e is not None:
                self._settle(e)
                self.events_kept -= len(e[2])

    def settle(self) -> None:
        for e in self.entries.values():
            self._settle(e)

    @staticmethod
    def _settle(e: list) -> None:
        times = e[1]
        if not times:
            return
        e[1] = 0
        for attr_ops, item_ops in e[0]:
            for o, key, inc in attr_ops:
                setattr(o, key, getattr(o, key) + inc * times)
            for c, key, inc in item_ops:
                c[key] += inc * times
