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

from bisect import bisect_left
from collections import deque

import numpy as np

from ..kernel.gro import GRO_HASH_BUCKETS
from ..report.deliveries import hand_over
from .replayer import Replayer
from .runs import BlockRuns, Runs

#: delivery events kept over all flow runs when an observer needs them (~250 bytes each: ~32 MiB)
MAX_RUN_EVENTS = 1 << 17
#: equal parts of kept events shared (``_placed``) before the table starts afresh
MAX_SHARED = 1 << 16
#: lists of events worked out for ``_deliver`` (``_forms``) kept before the table starts afresh
MAX_FORMS = 1 << 12
#: where a delivery stands in its stage's order (``_placed``), in that order: on a tunnel device handed to
#: ``netif_rx`` (GRO elided: the cell's backlog, processed before its poll); queued while an skb was processed; queued
#: by the poll's final flush
_BACKLOG, _TRIGGERED, _FLUSHED = 0, 1, 2
#: bit offsets in a delivery's place (``_deliver``): a poll position or an index among the poll's events (24 bits), a
#: phys delivery's kind and bucket, a tunnel delivery's cell, kind and bucket, the stage (then the kernel)
_POS, _PHYS_KIND, _CELL_KIND, _STAGE = 24, 48, 80, 96


def placed_run(block_runs: BlockRuns, j: int, events: list, grew: list | None, hashes: list | None) -> tuple:
    """What ``RunEvents._deliver`` takes of run ``j`` of ``_block_runs``' answer ``block_runs``: its ``events``
    (``_placed``; ``grew``, ``hashes``: ``_known_events``), its entries' poll order, their bounds among the block's
    runs' entries and its flows in order of first frame."""
    lists = block_runs.lists
    a, b = lists.bounds[j], lists.bounds[j + 1]
    return events, lists.order[a:b], a, b, lists.flows[j], grew, hashes


def _event_rules(events: list, payload: np.ndarray) -> tuple:
    """``RunEntry.events`` of a run recorded with ``events`` (``RunComposer._placed``) and ``payload`` lengths:
    ``(payload lengths (bytes per run position, a list), whether a flush's bucket follows the RX hashes, run positions of the flushes whose bucket
    is 0 and follows the hash only if it is 0)``."""
    hashed = [ev[9][-4:] for ev in events if ev[9][-4] == _FLUSHED and ev[9][-2] != "z"]
    return payload.tolist(), bool(hashed), tuple(at for _k, _b, rule, at in hashed if rule == "fz")


class RunEvents:
    """The delivery-event part of ``compose.RunComposer`` (a mixin: it uses the composer's ``rep``, ``_napis``,
    ``_shared``, ``_event_forms`` and ``_cell_at``)."""

    rep: Replayer
    _napis: list
    _shared: dict
    _event_forms: dict
    _cell_at: list

    def _known_placed(self, found: list, runs: Runs, bounds: list[int], ra: int) -> list | None:
        """``_known_events`` of each known run of ``found`` (``_known_runs``, runs from ``ra``, ``bounds``: the
        runs' bounds as a list; None for the others), or None when one cannot be placed."""
        out = []
        first = bounds[ra]
        pay = runs.payload[first : bounds[ra + len(found)]].tolist()
        for j, (_k, _c, e, _w) in enumerate(found, ra):
            evs = (
                None
                if e is None
                else self._known_events(e, runs, bounds[j], bounds[j + 1], pay[bounds[j] - first :])
            )
            if e is not None and evs is None:
                return None
            out.append(evs)
        return out

    def _known_events(self, e: list, runs: Runs, a: int, b: int, pay: list[int]) -> tuple | None:
        """``(events, grew, hashes)`` of known run ``e`` (a run cache entry) for the run at ``runs`` entries
        ``a..b`` (``pay``: payload lengths from ``a`` on, bytes), or None when they cannot be placed: not kept (``MAX_RUN_EVENTS``, a bucket without a rule), or a
        flush from a bucket the hashes of this run's frames do not fix (``_placed``'s rule ``fz`` on a non-zero
        hash). The same key fixes the headers, not the payload lengths nor the flows' RX hashes (sim/runs.py): an
        skb's ``len`` moves with its frames' payloads (``skb_gro_receive`` appends them; the key fixes the headers)
        by ``grew`` (bytes more per run position, None when none), and a flush's bucket follows this run's
        ``hashes`` (RX hash per run position; None when no bucket follows them): ``_deliver`` applies both."""
        x = e[3]  # runs.RunEntry
        if x.events is None:
            return None
        payload, hashed, fz = x.events
        got = pay[: b - a]
        grew = None if got == payload else [p - q for p, q in zip(got, payload, strict=True)]
        hashes = None
        if hashed:
            flow_rx = self.rep._flow_rx
            hashes = [flow_rx(f)[0] for f in runs.fids[a:b].tolist()]
            if any(hashes[j] for j in fz):
                return None
        return e[2], grew, hashes

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

    def _forms(self, events: list) -> tuple[list, list, list]:
        """``events`` (a run's, ``_placed``) as ``_deliver`` reads them, worked out once per list of events (a known
        run's are served many times): ``(phys, tunnel, outs)``. ``phys``: ``(index n among the events, kernel and
        stage bits, kind and bucket bits, run position of its first frame, kind when an RX hash moves its bucket
        else None)``; ``tunnel``: ``(n, kernel, stage, cell, kind and bucket bits, n of the phys delivery that was
        its input, cell and kind bits when an RX hash moves its bucket else None, run position that places it)``; a
        bucket moves with the hash when the skb is ``_FLUSHED`` by a rule other than ``z``. ``outs``: per event
        ``(stage, device, addr less the first frame's, len, flow slot, run position of its first frame, run
        positions of its frames when more than one else None, now_ns - t)``."""
        got = self._event_forms.get(id(events))
        if got is not None and got[0] is events:
            return got[1]
        phys_of: dict[tuple[int, int], int] = {}  # (kernel, first frame's run position) → its phys event
        phys, tunnel = [], []
        outs = [
            (ev[2], ev[3], ev[4], ev[5], ev[6], ev[7][0], ev[7] if len(ev[7]) > 1 else None, ev[8])
            for ev in events
        ]
        for n, ev in enumerate(events):
            i, how = ev[0], ev[9]
            if ev[2] == "phys":
                kind, bucket, rule, at = how
                moves = kind == _FLUSHED and rule != "z"
                phys_of[(i, ev[7][0])] = n
                phys.append(
                    (n, (i << 1) << _STAGE, (kind << 3 | bucket) << _PHYS_KIND, at, kind if moves else None)
                )
            else:
                cell, kind, bucket, rule, at = how  # ``at``: the first frame of the cell input that places it
                moves = kind == _FLUSHED and rule != "z"
                hi = (i << 1 | 1) << _STAGE | (cell << 5 | kind << 3 | bucket) << _CELL_KIND
                tunnel.append((n, hi, phys_of[(i, at)], (cell << 5 | kind << 3) if moves else None, at))
        if len(self._event_forms) > MAX_FORMS:
            self._event_forms.clear()
        self._event_forms[id(events)] = (events, (phys, tunnel, outs))
        return phys, tunnel, outs

    def _deliver(self, block_runs: tuple, base_index: int, placed: list, t: int) -> None:
        """Hand the observers the deliveries of a composed poll at ``t`` (ns), its runs' events (``_placed``) merged
        into the kernels' order (``_compose``: "The order of deliveries"); ``placed``: per run of ``_block_runs``'
        answer ``block_runs``, consecutive, ``placed_run``'s ``(events, poll order of its entries, their bounds, its
        flow ids in order of first frame, grew, hashes)`` (the last two: ``_known_events``); ``base_index``: the
        capture index of the block's first record. Each delivery's place is one integer: kernel and stage, then at phys ``(kind, bucket,
        poll position)``, at a tunnel device ``(cell, kind, bucket, the place of the phys delivery that was its
        input)``, then its index among the poll's events (deliveries of one input: its run's own order, the same
        run's events being consecutive); 24 bits for a position or an index (a block holds fewer entries)."""
        keys = []
        evs: list = []  # the poll's events (``_forms``), run after run, each with its run's (capture indices, flow ids, grew)
        if not placed:
            return
        mask = GRO_HASH_BUCKETS - 1
        first = placed[0][2]
        caps = (block_runs[1][first : placed[-1][3]] + base_index).tolist()  # the runs' capture indices
        for events, order, a, b, flows, grew, hashes in placed:
            cap = caps[a - first : b - first]
            base = len(evs)
            phys, tunnel, outs = self._forms(events)
            inner = {}
            for n, hi, kb, at, moves in phys:
                if moves is not None and hashes is not None:
                    kb = (moves << 3 | hashes[at] & mask) << _PHYS_KIND
                inner[n] = v = kb | order[at] << _POS | base + n
                keys.append(hi | v)
            for n, hi, link, moves, at in tunnel:
                if moves is not None and hashes is not None:
                    hi = hi >> _STAGE << _STAGE | (moves | hashes[at] & mask) << _CELL_KIND
                keys.append(hi | inner[link] << _POS | base + n)
            ctx = (cap, flows, grew)
            evs += [(o, ctx) for o in outs]
        keys.sort()
        stats = self.rep.stats
        names = [k.name for k in stats]
        low = (1 << _POS) - 1
        a = 0
        while a < len(keys):
            i = keys[a] >> _STAGE >> 1
            b = bisect_left(keys, (i + 1) << 1 << _STAGE, a)
            rows = []
            for k in keys[a:b]:
                (stage, dev, addr, length, flow, w0, where, dt), (cap, flows, grew) = evs[k & low]
                c0 = cap[w0]
                if where is None:
                    frames = [c0]
                    if grew is not None:
                        length += grew[w0]
                else:
                    frames = [cap[j] for j in where]
                    if grew is not None:
                        length += sum([grew[j] for j in where])
                rows.append((stage, dev, addr + (c0 << 8), length, flows[flow], frames, t + dt))
            hand_over(stats[i].on_deliver, names[i], rows)
            a = b
