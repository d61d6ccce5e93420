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


#: the counters of a stage (``StageStats``) and of a NAPI (``NapiStats``) kept as attributes
_STAGE_ATTRS = ("frames_in", "skbs_in", "skbs", "bytes", "sw_csum_bytes", "complete_errors")
_NAPI_ATTRS = ("sw_csum_bytes", "complete_errors", "polls", "full_polls")
_FLOW_ATTRS = (
    "frames",
    "gate_unvalidated_phys",
    "gate_unvalidated_tunnel",
    "gate_reached_phys",
    "gate_reached_tunnel",
)


def counters(k: Kernel, st: KernelStats, fids: Iterable[int]) -> dict[int, tuple]:
    """Every counter a poll can change (stage, stack, flow and NAPI counters), by container: ``{id(container):
    (container, attribute names, their values)}`` for an object whose counters are attributes, ``{id(container):
    (container, None, a copy)}`` for a dict or list of counters. Copies, not one entry per counter: ``delta``
    and ``undo`` compare a container's two copies whole and walk only the containers that changed."""
    out: dict[int, tuple] = {}
    for s in st.stages.values():
        out[id(s)] = (s, _STAGE_ATTRS, tuple([getattr(s, nm) for nm in _STAGE_ATTRS]))
        out[id(s.hist)] = (s.hist, None, list(s.hist))
        for c in (s.hist_over, s.reasons, s.results, s.devices):
            out[id(c)] = (c, None, dict(c))
    out[id(st.stack)] = (st.stack, None, dict(st.stack))
    out[id(st.stack_frames)] = (st.stack_frames, None, dict(st.stack_frames))
    for fid in fids:
        f = st.flows.get(fid)
        if f is None:
            continue
        for path, part in flow_parts(f):
            if path:
                out[id(part)] = (part, None, dict(part))  # type: ignore[call-overload]
            else:
                out[id(f)] = (f, _FLOW_ATTRS, tuple([getattr(f, nm) for nm in _FLOW_ATTRS]))
    for n in [k.phys_napi] + [cells.napi for cells in k.tunnel_cells]:
        ns = n.stats
        out[id(ns)] = (ns, _NAPI_ATTRS, tuple([getattr(ns, nm) for nm in _NAPI_ATTRS]))
        out[id(ns.counts)] = (ns.counts, None, list(ns.counts))
    for cells in k.tunnel_cells:
        out[id(cells)] = (cells, ("dropped",), (cells.dropped,))
    return out


def _changes(before: dict[int, tuple], after: dict[int, tuple]) -> list[tuple[Any, tuple | None, Any, Any]]:
    """``(container, attribute names or None, values before, values after)`` of each container of the ``after``
    snapshot (``counters``) whose counters differ from ``before``'s (values before: None for a container
    ``before`` did not hold), in ``after``'s order."""
    out = []
    for oid, (o, names, v) in after.items():
        b = before.get(oid)
        w = None if b is None else b[2]
        if v != w:
            out.append((o, names, w, v))
    return out


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


def delta(before: dict[int, tuple], after: dict[int, tuple]) -> tuple[list, list]:
    """(attribute increments, item increments) from two ``counters`` snapshots: ``(container, name or key,
    increment)`` of every counter that changed, in ``after``'s order (containers in snapshot order, keys in the
    container's order, list indexes ascending)."""
    attr_ops: list = []
    item_ops: list = []
    for o, names, w, v in _changes(before, after):
        if names is not None:
            for j, nm in enumerate(names):
                inc = v[j] - (0 if w is None else w[j])
                if inc:
                    attr_ops.append((o, nm, inc))
        elif type(v) is list:
            for i, x in enumerate(v):
                inc = x - (w[i] if w is not None and i < len(w) else 0)
                if inc:
                    item_ops.append((o, i, inc))
        else:
            for key, x in v.items():
                inc = x - (0 if w is None else w.get(key, 0))
                if inc:
                    item_ops.append((o, key, inc))
    return attr_ops, item_ops


def undo(before: dict[int, tuple], after: dict[int, tuple]) -> None:
    """Put every counter of the ``after`` snapshot back to its value in ``before`` (``counters``); a dict key that
    ``before`` did not have is removed, a counter of a container ``before`` did not hold is set to 0
    (sim/run_probe.py)."""
    for o, names, w, v in _changes(before, after):
        if names is not None:
            for j, nm in enumerate(names):
                was = 0 if w is None else w[j]
                if v[j] != was:
                    setattr(o, nm, was)
        elif type(v) is list:
            for i, x in enumerate(v):
                was = w[i] if w is not None and i < len(w) else 0
                if x != was:
                    o[i] = was
        else:
            for key, x in v.items():
                if w is None or key not in w:
                    del o[key]
                elif x != w[key]:
                    o[key] = w[key]


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
