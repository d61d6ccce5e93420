"""Polls whose unknown flow runs could fill a tunnel cell's poll, or include a piece that is not its flow's last:
those runs are recorded first and the poll decided again (sim/compose.py ``RunComposer._compose``).

``_known_runs`` refuses a poll when the skbs its known runs put into a tunnel cell and the frames of its unknown
runs could reach the cell's weight: whether the cell's poll fills, and so in which context every run is to be
recorded (``C``: compose.py), depends on the skbs the unknown runs put there, which only running them tells.
Likewise whether a piece that is not its flow's last holds something after its last frame (compose.py: then the
poll is not composed of these pieces). ``_probe`` records each unknown run as ``_compose`` records one (a poll of
its own in the poll's context), which tells what it holds, whether it still holds it at its end and how many skbs
it puts into each cell (none of which depends on how its poll ends: compose.py), and decides again with those runs
known:

- when no cell's poll fills, the poll is composed with the recorded runs as they ran (compose.py's argument,
  the unknown runs now known: each ran alone in the poll's own context);
- otherwise (the cells' polls fill, the runs could fill a GRO bucket, a piece not its flow's last still holds
  something at its end, or an observer's deliveries cannot be placed) the counters the recorded runs changed are put back (``deltas.undo``: each counter as the snapshot
  before them had it, the flows they created removed; the kernels are idle after every run, pollcache.py, so
  nothing else of them remains) and the poll runs whole, as it would have without them. The recordings stay:
  each is what its run does alone in that context. A poll whose cells' polls fill is not composed in their
  context (``C``) here: run whole, it is recorded in the poll cache (pollcache.py), which then answers regular
  traffic's next polls whole (the 89e5c58fc1e2 bulk flow: every full poll fills the cell) instead of
  composing each of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .deltas import PollCache, counters, undo
from .replayer import Replayer
from .runs import BlockRuns


class RunProbe:
    """The probing part of ``compose.RunComposer`` (a mixin: it uses the composer's ``rep``, ``runs``,
    ``observed``, ``_entry``, ``_known_runs``, ``_known_placed``, ``_record_run`` and ``_cells_unknown``)."""

    rep: Replayer
    runs: PollCache
    observed: bool
    _cells_unknown: list[int]
    _entry: Callable[..., Any]
    _known_runs: Callable[..., Any]
    _known_placed: Callable[..., Any]
    _record_run: Callable[..., Any]

    def _probe(
        self, block_runs: BlockRuns, p: int, ch: Any, extras: list, base_index: int, t: int, full: bool
    ) -> tuple[list, dict[int, tuple[list, list]]] | None:
        """Record the unknown runs ``_cells_unknown`` of poll ``p`` (``_compose``'s arguments) and decide the poll
        again: ``(found, done)`` — ``found`` as ``_known_runs`` gives it, ``done``: by run index, what
        ``_record_run`` returned for each run recorded here — or None (their counters put back) when the poll
        runs whole."""
        runs, run_src, run_at, lists = block_runs
        ra, rb = run_at[p], run_at[p + 1]
        bounds = lists.bounds
        rep = self.rep
        todo = list(self._cells_unknown)
        batches = {
            j: [
                self._entry(ch, x, extras, base_index)[1] for x in run_src[bounds[j] : bounds[j + 1]].tolist()
            ]
            for j in todo
        }
        fids = {f.flow_id for batch in batches.values() for f in batch}
        before = [counters(k, rep.stats[i], fids) for i, k in enumerate(rep.kernels)]
        new_flows = [[fid for fid in fids if fid not in st.flows] for st in rep.stats]
        ctx = b"F" if full else b""
        done = {}
        for j in todo:
            a, b = bounds[j], bounds[j + 1]
            done[j] = self._record_run(
                runs.keys[j], ctx, batches[j], t, runs.payload[a:b], runs.ids[a:b], full
            )
        found = self._known_runs(runs, lists, ra, rb, full)
        if (
            found is not None
            and all(f[3] is None for f in found)
            and (not self.observed or self._known_placed(found, runs, bounds, ra) is not None)
        ):
            return found, done
        for i, (k, snap) in enumerate(zip(rep.kernels, before, strict=True)):
            undo(snap, counters(k, rep.stats[i], fids))
            for fid in new_flows[i]:
                rep.stats[i].flows.pop(fid, None)  # created by the recordings, if they delivered any of it
        return None
