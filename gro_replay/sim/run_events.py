"""Delivery events of flow runs, and the order in which a composed poll hands them to an observer.

With an observer of deliveries (``--trace``, explain: ``served_from_events``), a flow run recorded alone
(sim/compose.py ``RunComposer._record_run``) keeps its deliveries (``_placed``), each with what places it among the
other runs', and ``_deliver`` hands a composed poll's deliveries to the observers sorted by it. Why that order is
the kernels':

Each run recorded alone keeps its
deliveries (``_placed``), each with what places it among the other runs', and ``_deliver`` hands the
poll's deliveries to the observers sorted by it. Kernel by kernel (``Replayer.run_poll``), the phys stage's
first: the tunnel cells are polled after the phys poll returns (``net_rx_action``; net/core/dev.c
``napi_poll`` runs each NAPI's poll to its end). In a NAPI's poll an skb is queued for the stack
(``gro_normal_one``) either while ``napi_gro_receive`` processes an input — the input itself
(``GRO_NORMAL``), a held packet of the same flow it completes (``pp``), the oldest of a full bucket
(``gro_flush_oldest``) — or by the final flush (``napi_gro_flush`` from ``napi_complete_done``, or
``napi_poll`` at budget). The first kind stands at its input's position, in the run's own order among the
deliveries of one input (only that input's run takes part: ``pp`` is of its flow, and no bucket fills
across runs, above). The flush goes bucket by bucket in ascending index (``napi_gro_flush``: the bitmask),
oldest first in a bucket (``__napi_gro_flush_chain`` walks the list from its tail; ``dev_gro_receive``
adds new packets at its head): a held packet's age is the position of the input that started it (its
first frame; merges never move a packet in its list). The bucket is ``skb->hash`` of that input, the
frame's RX hash on the phys device and, at a tunnel cell, the same or 0 (``skb_clear_hash_if_not_l4``);
a run with the same key may belong to other flows, so a known run's buckets are taken from this poll's
hashes by the rule recorded (``_known_events``), and a rule this poll's hashes do not decide sends it
whole. ``gro_normal_list`` hands the queued skbs up in the order they were queued: ``gro_normal_batch``
changes only when a batch goes up during the poll, and what the stack does with it (queue it to a cell)
keeps that order; every delivery is at the poll's time (``napi->now``). A tunnel cell's inputs are the
phys deliveries it was given, in phys order: its deliveries are placed as the phys ones, by the phys
position of the input, after the skbs ``netif_rx`` queued to the backlog when GRO is off on the device
(``process_backlog`` runs before the cell's poll), and cell by cell in device order (one round: a cell's
poll never takes more than its weight here, and a full one flushes at budget, HZ < 1000). A known run's
deliveries carry its own frames' capture indices, skb addresses (the first frame's: sim/driver.py),
flows (by slot: its flows in order of first frame) and lengths (each skb's ``len`` moves with its frames'
payloads, the key fixing the headers: sim/runs.py). A known run whose deliveries were not kept
(``MAX_RUN_EVENTS``) sends the poll whole.
"""

from __future__ import annotations

from collections import deque
from operator import itemgetter

import numpy as np

from ..kernel.gro import GRO_HASH_BUCKETS
from ..report.deliveries import hand_over_kernels
from .replayer import Replayer
from .runs import Runs

#: delivery events kept over all flow runs when an observer needs them (~250 bytes each: ~32 MiB)
MAX_RUN_EVENTS = 1 << 17
#: equal parts of kept events shared (``_placed``) before the table starts afresh
MAX_SHARED = 1 << 16
#: where a delivery stands in its stage's order (``_placed``), in that order: on a tunnel device handed to
#: ``netif_rx`` (GRO elided: the cell's backlog, processed before its poll); queued while an skb was processed; queued
#: by the poll's final flush
_BACKLOG, _TRIGGERED, _FLUSHED = 0, 1, 2


def placed_run(
    block_runs: tuple, j: int, base_index: int, events: list, grew: list | None, hashes: list | None
) -> tuple:
    """What ``RunEvents._deliver`` takes of run ``j`` of ``_block_runs``' answer ``block_runs``: its ``events``
    (``_placed``; ``grew``, ``hashes``: ``_known_events``), its entries' poll order, their capture indices
    (``base_index``: the block's first) and its flows in order of first frame."""
    _runs, run_src, _run_at, lists = block_runs
    a, b = lists[0][j], lists[0][j + 1]
    return events, lists[1][a:b], (run_src[a:b] + base_index).tolist(), list(lists[3][j]), grew, hashes


def _event_rules(events: list, payload: np.ndarray) -> tuple:
    """``RunEntry.events`` of a run recorded with ``events`` (``RunComposer._placed``) and ``payload`` lengths:
    ``(payload lengths, whether a flush's bucket follows the RX hashes, run positions of the flushes whose bucket
    is 0 and follows the hash only if it is 0)``."""
    hashed = [ev[9][-4:] for ev in events if ev[9][-4] == _FLUSHED and ev[9][-2] != "z"]
    return payload.copy(), bool(hashed), tuple(at for _k, _b, rule, at in hashed if rule == "fz")


class RunEvents:
    """The delivery-event part of ``compose.RunComposer`` (a mixin: it uses the composer's ``rep``, ``_napis``,
    ``_shared`` and ``_cell_at``)."""

    rep: Replayer
    _napis: list
    _shared: dict
    _cell_at: list

    def _known_placed(self, found: list, runs: Runs, bounds: list[int], ra: int) -> list | None:
        """``_known_events`` of each known run of ``found`` (``_known_runs``, runs from ``ra``, ``bounds``: the
        runs' bounds as a list; None for the others), or None when one cannot be placed."""
        out = []
        for j, (_k, _c, e, _w) in enumerate(found, ra):
            evs = None if e is None else self._known_events(e, runs, bounds[j], bounds[j + 1])
            if e is not None and evs is None:
                return None
            out.append(evs)
        return out

    def _known_events(self, e: list, runs: Runs, a: int, b: int) -> tuple | None:
        """``(events, grew, hashes)`` of known run ``e`` (a run cache entry) for the run at ``runs`` entries
        ``a..b``, or None when they cannot be placed: not kept (``MAX_RUN_EVENTS``, a bucket without a rule), or a
        flush from a bucket the hashes of this run's frames do not fix (``_placed``'s rule ``fz`` on a non-zero
        hash). The same key fixes the headers, not the payload lengths nor the flows' RX hashes (sim/runs.py): an
        skb's ``len`` moves with its frames' payloads (``skb_gro_receive`` appends them; the key fixes the headers)
        by ``grew`` (bytes more per run position, None when none), and a flush's bucket follows this run's
        ``hashes`` (RX hash per run position; None when no bucket follows them): ``_deliver`` applies both."""
        x = e[3]  # runs.RunEntry
        if x.events is None:
            return None
        payload, hashed, fz = x.events
        grew = (runs.payload[a:b] - payload).tolist()
        hashes = None
        if hashed:
            flow_rx = self.rep._flow_rx
            hashes = [flow_rx(f)[0] for f in runs.fids[a:b].tolist()]
            if any(hashes[j] for j in fz):
                return None
        return e[2], grew if any(grew) else None, hashes

    def _placed(self, batch: list, t: int, raw: list, taps: list, counts0: list[int]) -> tuple[list, bool]:
        """A run's deliveries (``raw``: as ``_run_alone`` kept them, in delivery order) as events ``(kernel index,
        kernel name, stage, device, addr - (first frame's capture index << 8), len, flow slot (the run's flows in
        order of first frame), run positions of its frames, now_ns - t, how)``, ``how`` placing it in the kernels' order (``_compose``: "The order of
        deliveries"): ``(kind, GRO bucket, bucket rule, run position)`` at phys, ``(cell index, kind, bucket, rule,
        run position)`` at a tunnel device. ``kind``: ``_TRIGGERED`` (queued while the skb whose first frame is at
        that position was processed), ``_FLUSHED`` (queued by the poll's final flush from ``bucket``, held since
        the skb with that first frame was taken), ``_BACKLOG`` (GRO elided: handed to ``netif_rx``). ``rule``
        (``_bucket``) says how the bucket follows from the frames' RX hash (a known run's frames have other hashes:
        the key does not name flows). ``taps``: ``(napi, skb, taken by napi_gro_receive / queued by gro_normal_one,
        that NAPI's GRO results so far, skb->hash, first frame)`` in order (kernel/skbuff.py ``queue_tap``);
        ``counts0``: each NAPI's GRO results before the run. Also whether every flush's bucket follows a rule (else
        the events serve this poll only)."""
        if len(self._shared) > MAX_SHARED:
            self._shared.clear()  # only memory shared is lost
        pos = {f.index: j for j, f in enumerate(batch)}
        slot = {fid: j for j, fid in enumerate(dict.fromkeys(f.flow_id for f in batch))}
        base = {id(st): c for st, c in zip(self._napis, counts0, strict=True)}
        taken: dict[int, list[int]] = {}  # id(NapiStats) → first frames of the skbs napi_gro_receive took
        queued: dict[int, deque] = {}  # id(NapiStats) → (skb, how) in gro_normal_one's order
        ruled = True
        for napi, skb, took, done, h, first in taps:
            nid = id(napi.stats)
            got = taken.setdefault(nid, [])
            if took:
                got.append(first)
                continue
            # GRO results counted: the skb being processed is the k-th taken (none taken then: the final flush)
            k = done - base[nid]
            how: tuple
            if k < len(got):
                how = (_TRIGGERED, 0, "", pos[got[k]])
            else:
                j = pos[first]
                fh = batch[j].hash
                rule = "f" if h == fh and fh else "z" if not h and fh else "fz" if not h else None
                ruled = ruled and rule is not None
                how = (_FLUSHED, h & (GRO_HASH_BUCKETS - 1), rule, j)
            queued.setdefault(nid, deque()).append((skb, how))
        kernels = self.rep.kernels
        out = []
        for i, kernel, stage, dev, skb, addr, length, flow, frames, now_ns in raw:
            where = tuple(pos[x] for x in frames)
            kern = kernels[i]
            if stage == "phys":
                got_skb, how = queued[id(kern.phys_napi.stats)].popleft()
                assert got_skb is skb, "a phys delivery not queued by gro_normal_one"
            else:
                ci = self._cell_at[i][dev]
                q = queued.get(id(kern.tunnel_cells[ci].napi.stats))
                if q and q[0][0] is skb:
                    how = (ci, *q.popleft()[1])
                else:
                    how = (ci, _BACKLOG, 0, "", where[0])
            # kept events share their equal parts (``_shared``): most recur across runs, and each would cost more
            # than the event's own slot
            share = self._shared.setdefault
            out.append(
                (
                    i,
                    kernel,
                    stage,
                    dev,
                    share(addr - (frames[0] << 8), addr - (frames[0] << 8)),
                    share(length, length),
                    slot[flow],
                    share(where, where),
                    now_ns - t,
                    share(how, how),
                )
            )
        return out, ruled

    def _deliver(self, placed: list, t: int) -> None:
        """Hand the observers the deliveries of a composed poll at ``t`` (ns), its runs' events (``_placed``) merged
        into the kernels' order (``_compose``: "The order of deliveries"); ``placed``: per run, ``(events, poll order
        of its entries, their capture indices, its flow ids in order of first frame, grew, hashes)`` (the last two:
        ``_known_events``). Each delivery's place is one integer: kernel and stage, then at phys ``(kind, bucket,
        poll position)``, at a tunnel device ``(cell, kind, bucket, the place of the phys delivery that was its
        input)``, then its index among its run's events (deliveries of one input: the run's own order); 24 bits
        for a position or an index (a block holds fewer entries), 64 for a phys place."""
        keyed = []
        for events, order, cap, flows, grew, hashes in placed:
            phys: dict[tuple[int, int], int] = {}  # (kernel, first frame's run position) → its place at phys
            for n, ev in enumerate(events):
                i, how = ev[0], ev[9]
                if ev[2] == "phys":
                    kind, bucket, rule, at = how
                    if hashes is not None and kind == _FLUSHED and rule != "z":
                        bucket = hashes[at] & (GRO_HASH_BUCKETS - 1)
                    inner = (kind << 3 | bucket) << 64 | order[at] << 24 | n
                    phys[(i, ev[7][0])] = inner
                    key = i << 129 | inner
                else:
                    cell, kind, bucket, rule, at = (
                        how  # ``at``: the first frame of the cell input that places it
                    )
                    if hashes is not None and kind == _FLUSHED and rule != "z":
                        bucket = hashes[at] & (GRO_HASH_BUCKETS - 1)
                    key = (
                        (i << 1 | 1) << 128 | (cell << 5 | kind << 3 | bucket) << 96 | phys[(i, at)] << 24 | n
                    )
                keyed.append((key, ev, cap, flows, grew))
        keyed.sort(key=itemgetter(0))
        rows = []
        for _key, (i, kernel, stage, dev, addr, length, flow, where, dt, _how), cap, flows, grew in keyed:
            frames = [cap[j] for j in where]
            if grew is not None:
                length += sum([grew[j] for j in where])
            rows.append((i, kernel, stage, dev, addr + (frames[0] << 8), length, flows[flow], frames, t + dt))
        hand_over_kernels(self.rep.stats, rows)
