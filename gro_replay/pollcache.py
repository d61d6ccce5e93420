"""The batch path: whole blocks of a capture decoded as columns, and each distinct poll simulated once.

Why it is exact. With HZ < 1000 (the default, 250), no gro_flush_timeout, no napi_defer_hard_irqs and one RX queue,
every poll ends with all GRO state flushed: ``napi_poll`` flushes everything when the budget is used up ("if HZ <
1000, flush all packets": ``napi_gro_flush(n, HZ >= 1000)``), ``napi_complete_done`` flushes everything when it is
not (no timeout armed), and the tunnel devices' gro_cells, fed at most one poll's worth, are polled to empty in the
same softirq round (Kernel: net/core/dev.c ``napi_poll``, ``napi_complete_done``; net/core/gro_cells.c
``gro_cell_poll``; gro-spec §1.3, §6.3). ``idle`` checks this after every simulated poll; a poll that leaves
anything behind turns the cache off until the kernels are idle again. A poll then starts from the same (empty) state
whatever came before, and what it adds to the counters depends only on its frames: their header bytes, lengths and
checksum verdicts, and how the fields that change from segment to segment (TCP sequence and acknowledgment numbers,
window, options; IPv4 IDs) relate between frames of the same inner flow. GRO never looks at anything else — not the
payload beyond its checksum, not the time (jiffies only matter to ``flush_old``, which HZ < 1000 turns off).

``analyse`` (packet/columns.py) computes those per frame for a block; ``PollCache`` keys each poll by the
concatenation of its frames' canonical rows (varying fields relative to the poll's first frame of the same inner
flow; built only for a poll whose key's number, sim/poll_keys.py, is a recorded key's, or that runs through the
kernels). A poll with a key runs through the reference kernels (kernel/), and the counters it changed (stage, flow,
stack and NAPI counters) are kept as a delta — at once for the first polls and while the cache answers as many
polls as it records, else the second time the key runs (``PollCache.seen_before``: recording snapshots every
counter, wasted on irregular traffic whose keys rarely recur). Later polls with the same key add the delta. A poll
is run through the kernels instead whenever a frame is not of the common layout (decoded one by one as before),
or the kernels are not idle before it. A poll of common frames whose key is new is composed of its flow runs
(sim/compose.py ``RunComposer._compose``, keys in sim/runs.py: irregular traffic repeats runs, not polls), and
run whole through the kernels only when its runs could fill a GRO bucket or a tunnel cell's poll together.

Observers. With an ``on_deliver`` observer that reads only an skb's address, length, flow and frames (``--trace``,
explain: ``served_from_events``), a recorded poll also keeps its delivery events in order (``_record``) and a
later poll with the same key hands them to the observer (``_hit``) with its own frames' capture indices, skb
addresses (the first frame's: sim/driver.py) and time: the frames at each position have the same headers, so the
same flows, and the kernels deliver the same skbs in the same order. Composed polls merge their runs'
deliveries in the kernels' order (sim/run_events.py). An observer of the bytes (``--write-pcap``) keeps the
reference path.

Flow retirement: sim/block_flows.py. Input: a classic pcap is read in blocks (capture/chunks.py ``PcapChunks``),
a pcapng file or stream by its block walker (``PcapngChunks``); pcapng and Linux cooked captures with the records of
interfaces not replayed marked and cooked records as Ethernet frames (capture/interface_chunks.py), other link
types decoded one by one (sim/engine_path.py ``batch_input``). tests/test_pollcache.py compares whole
JSON documents, trace text and explain's deliveries with the reference path (``ReplayConfig(fast_path=False)``) over
the test captures, the shared captures, random scenarios and the overlay-node mix, as pcap, gzip and pcapng.
"""

from __future__ import annotations

import numpy as np

from .capture.chunks import PcapChunks
from .capture.pcapng_chunks import PcapngChunks
from .capture.reader import DLT_EN10MB
from .packet.columns import analyse
from .report.deliveries import hand_over_kernels
from .sim.block_flows import FlowTracking
from .sim.compose import RunComposer
from .sim.deltas import PollCache, counters, delta, idle
from .sim.ingest import Frame
from .sim.poll_keys import BlockKeys, KnownPolls

#: bytes read per block (a module attribute so that tests can force many block boundaries), of at most
#: capture/chunks.py ``RECORDS`` (4,096) records: 4 MB, ~2,700 bulk frames or ~4,100 of the overlay-node mix, 12 %
#: less CPU than 2 MB on both (fewer blocks: each costs ~1 ms of numpy calls whatever its size) for 3-7 MB more peak
#: RSS; 8 MB is no faster (the block no longer stays in cache between its passes) and holds 10 MB more
BLOCK = 4 << 20
#: distinct poll keys kept (each key is ~16 KiB for a full poll): bounds the cache to ~32 MiB
MAX_KEYS = 2048
#: delivery events kept over all keys when an observer needs them (~250 bytes each: bounds them to ~64 MiB)
MAX_EVENTS = 1 << 18


class BatchReplay(RunComposer, FlowTracking):
    """Runs a ``Capture`` through a ``Replayer``'s kernels block by block (see the module docstring).

    Results (``Replayer.input``, ``Replayer.stats``) equal ``Replayer.run_polls(Replayer.decoded(capture))``.
    Entries: the frames that enter the simulation, in order — a common frame is its record's position in the
    block (``src >= 0``), anything decoded one by one (other layouts, resegmented super-frames, an unfinished
    poll carried over from the previous block) is ``extras[-1 - src]``, a ``(ts_ns, decoded tuple)``.
    """

    def __init__(self, rep, block: int | None = None) -> None:
        self.rep = rep
        self.cfg = rep.config
        self.cache = PollCache(MAX_KEYS)
        #: the numbers of the keys the poll cache recorded (sim/poll_keys.py)
        self._known_polls = KnownPolls(self.cache.entries, 2 * MAX_KEYS)
        self._init_runs(rep)
        self._block_fids = np.zeros(0, np.int64)
        self.block = block or BLOCK
        self._fid_of: dict[bytes, int] = {}  # kv row + UDP-zero bit → flow id
        self._idle = True  # the kernels hold nothing (true between polls unless a poll left something)
        self._rx_at: int | None = None  # rx-usecs: poll time of the window left open by the previous block
        #: an observer (``served_from_events``) sees every delivery: cache entries keep delivery events
        self.observed = any(st.on_deliver is not None for st in rep.stats)
        #: flows are retired (``--flow-timeout``): every frame is noted in the replayer's flow tracker in capture
        #: order as its block is read (``_tracked_pass``), and the flows that ended are retired at the end of each
        #: poll (``Replayer.poll_end``), as on the frame-by-frame path
        self.retiring = bool(self.cfg.flow_idle_timeout_ns)
        self._keys_of: dict[int, list[bytes]] = {}  # flow id → its keys in ``_fid_of`` (retiring)
        self._fin_of: dict[bytes, bool] = {}  # key → its frames carry FIN or RST (retiring)
        self._moved: dict[int, int] = {}  # flow id → the flow its key moved to in this block (retiring)
        self._ahead: list[int] = []  # flow ids of the records the previous block tracked and left to this one
        self._fids: np.ndarray | None = None  # the block's flow ids per record (retiring)
        if self.retiring:
            rep._retiring = True
            rep._own_frames = True
            rep.on_flow_change = self._flow_changed

    def counts(self) -> dict[str, int]:
        """Polls answered without running a frame through the kernels (``polls_cached``: whole polls from the
        poll cache and polls whose runs were all known) and polls that ran some or all of their frames
        (``polls_simulated``); ``polls_composed``: the polls answered from their flow runs (sim/compose.py),
        ``polls_served`` those of them answered a block at a time (sim/run_serve.py), ``runs_recorded``: the flow
        runs recorded for them."""
        return {
            "polls_cached": self.cache.hits + self.composed,
            "polls_simulated": self.cache.misses + self.cache.uncacheable + self.composed_partly,
            "polls_composed": self.composed + self.composed_partly,
            "polls_served": self.served,
            "runs_recorded": self.runs.misses,
        }

    def run(self, cap, progress=None, reader=None) -> None:
        """Replay every record of ``cap`` (``batch_input``): a classic pcap is read in blocks (``PcapChunks``), a
        pcapng file or stream by its block walker (``PcapngChunks``). ``reader``: the blocks to read instead
        (capture/interface_chunks.py ``SelectedChunks``: a pcapng capture's blocks with the records of interfaces
        not replayed marked, capture/interfaces.py). Raises CaptureError."""
        if reader is None:
            reader = PcapngChunks(cap, self.block) if cap.format == "pcapng" else PcapChunks(cap, self.block)
        carry: list = []
        keep = None
        while True:
            chunk = reader.next(keep)
            if chunk is None:
                break
            keep, carry = self._chunk(chunk, carry)
            if progress is not None:
                progress(self.rep.input.frames_read)
        if carry or self._rx_at is not None:  # the file ended exactly after the records of a carried poll
            ts = np.array([e[0] for e in carry], np.int64)
            src = -1 - np.arange(len(carry))
            starts, times, sizes, empties, _unfinished, lead = self._polls(ts, True)
            efid = np.array([e[1][3] for e in carry], np.int64)
            self._run_chunk_polls(None, None, src, starts, times, sizes, empties, carry, 0, lead, (ts, efid))
        self.cache.settle()
        self.runs.settle()
        self.flow_ops.settle()

    # -- one block -----------------------------------------------------------------------------------------------
    def _chunk(self, ch, carry: list):
        rep = self.rep
        n = len(ch)
        eof = ch.eof
        base_index = rep.input.frames_read
        snap = ch.unreplayed()  # read, skipped (_account)
        col = ch.columns  # computed by the reader (capture/interface_chunks.py), else here
        if col is None:
            col = analyse(ch.buf, ch.data, ch.caplen, self.cfg.vxlan_ports, self.cfg.geneve_ports)
        common = col.common & ~snap
        if ch.linktype is not None:
            common &= ch.linktype == DLT_EN10MB  # other link types: decoded one by one (l2_normalize)
        if rep.reseg is not None:
            common &= ch.caplen <= rep.reseg.limit
        unusual = np.flatnonzero(~common & ~snap).tolist()
        fids, new_flows, classes = self._flow_ids(ch, col, common, unusual)
        extras: list = list(carry)
        after_unusual: list[tuple[int, list[int]]] = []  # (record position, its extras)
        last = 0
        nf = 0
        if self.retiring:
            self._fids = fids
            last = self._tracked_pass(ch, col, common, snap, unusual, fids, classes, extras, after_unusual)
            nf = len(new_flows)
        for q in [] if self.retiring else unusual:
            while nf < len(new_flows) and new_flows[nf][0] < q:  # flows are created in capture order
                self._new_flow(ch, fids, classes, *new_flows[nf])
                nf += 1
            self._account(ch, col, common, snap, last, q, fids)
            o = int(ch.data[q])
            lt = DLT_EN10MB if ch.linktype is None else int(ch.linktype[q])
            rec = (int(ch.ts_ns[q]), bytes(ch.buf[o : o + int(ch.caplen[q])]), int(ch.origlen[q]), lt)
            got = list(rep.decoded([rec]))
            after_unusual.append((q, list(range(len(extras), len(extras) + len(got)))))
            extras.extend((g[0], g) for g in got)
            last = q + 1
        while nf < len(new_flows):
            self._new_flow(ch, fids, classes, *new_flows[nf])
            nf += 1
        src, ts, rec_of = self._sequence(ch, common, carry, extras, after_unusual)
        starts, times, sizes, empties, unfinished, lead = self._polls(ts, eof)
        # the unfinished last poll: its records are read again with the next block when they are all common
        # frames (nothing was counted for them yet) and none after its first is another interface's (read again
        # and again while the replayed one is silent); otherwise its entries are carried, decoded
        cut = n
        new_carry: list = []
        if unfinished:
            s0 = int(starts[-1])
            first_rec = int(rec_of[s0])
            ok = first_rec >= 0 and (src[s0:] >= 0).all() and (not unusual or unusual[-1] < first_rec)
            if ok and (ch.skip is None or not ch.skip[first_rec:].any()):
                cut = first_rec
            else:
                new_carry = [self._entry(ch, int(x), extras, base_index) for x in src[s0:].tolist()]
            starts, times, sizes, empties = starts[:-1], times[:-1], sizes[:-1], empties[:-1]
        self._account(ch, col, common, snap, last, cut, fids)
        ends = self._entry_flows(src, ts, fids, extras, cut) if self.retiring else None
        self._run_chunk_polls(ch, col, src, starts, times, sizes, empties, extras, base_index, lead, ends)
        return ch.record_start(cut), new_carry

    @staticmethod
    def _sequence(ch, common, carry: list, extras: list, after_unusual: list) -> tuple:
        """The block's entry sequence: the carried entries, then its records in order, each unusual record's
        decoded entries (``extras``) in its place: ``(src, ts_ns, record position, -1 where carried)``."""
        n = len(ch)
        pos = np.flatnonzero(common)
        m = len(pos) + len(extras)
        src = np.empty(m, np.int64)
        ts = np.empty(m, np.int64)
        rec_of = np.empty(m, np.int64)  # record position of each entry (-1: carried)
        nc = len(carry)
        src[:nc] = -1 - np.arange(nc)
        ts[:nc] = [e[0] for e in carry]
        rec_of[:nc] = -1
        k = nc
        pi = 0
        for q, xs in after_unusual + [(n, [])]:
            j = int(np.searchsorted(pos, q))
            src[k : k + j - pi] = pos[pi:j]
            ts[k : k + j - pi] = ch.ts_ns[pos[pi:j]]
            rec_of[k : k + j - pi] = pos[pi:j]
            k += j - pi
            pi = j
            for x in xs:
                src[k] = -1 - x
                ts[k] = extras[x][0]
                rec_of[k] = q
                k += 1
        return src, ts, rec_of

    def _polls(self, ts: np.ndarray, eof: bool):
        """``(starts, times, sizes, empties, unfinished, lead)`` of the polls over entry times ``ts``: iter_polls'
        rules (``empties``: the poll is full and ends its burst / window / the input, so an empty repoll follows).
        ``unfinished``: the last poll may still grow (the next entries decide its end or its repoll): always so
        for budget and gap unless ``eof``; for rx-usecs when the open window's last poll is not full (its full
        polls are final). ``lead``: the time of an empty repoll that closes a window left open by the previous
        block before these polls (rx-usecs), or None."""
        m = len(ts)
        w = self.cfg.weight
        z = np.zeros(0, np.int64)
        if self.cfg.poll.kind == "rx-usecs":
            return self._polls_rx_usecs(ts, eof)
        if not m:
            return z, z, z, z.astype(bool), False, None
        if self.cfg.poll.kind == "budget":
            starts = np.arange(0, m, w)
            last_of_burst = np.zeros(len(starts), bool)
        else:
            limit = int(self.cfg.poll.usecs * 1000)
            new = np.ones(m, bool)
            if m > 1:
                new[1:] = np.diff(ts) > limit
            bstart = np.flatnonzero(new)
            counts = (np.append(bstart[1:], m) - bstart + w - 1) // w
            first_poll = np.cumsum(counts) - counts
            starts = np.repeat(bstart, counts) + w * (
                np.arange(int(counts.sum())) - np.repeat(first_poll, counts)
            )
            last_of_burst = np.zeros(len(starts), bool)
            last_of_burst[np.cumsum(counts) - 1] = True
        if eof and len(starts):
            last_of_burst[-1] = True
        ends = np.append(starts[1:], m)
        sizes = ends - starts
        times = ts[ends - 1]
        empties = (sizes == w) & last_of_burst
        return starts, times, sizes, empties, not eof, None

    def _polls_rx_usecs(self, ts: np.ndarray, eof: bool):
        """``_polls`` for ``rx-usecs:US``: a window opens at an entry and its polls run at that entry's time + US;
        it takes the entries that come before the first one later than that time, in polls of ``weight``
        (iter_polls: the repoll after a full poll runs at the same time). A window still open at the end of the
        block continues in the next one (``self._rx_at``: its poll time)."""
        m = len(ts)
        w = self.cfg.weight
        delay = int(self.cfg.poll.usecs * 1000)
        ts = np.asarray(ts, np.int64)
        pm = np.maximum.accumulate(ts) if m else ts

        def first_later(j: int, x: int) -> int:
            """The first index >= j whose time is > x (m if none)."""
            k = int(np.searchsorted(pm, x, side="right"))
            if k >= j:
                return k  # pm <= x before k, and pm rises at k: ts[k] = pm[k] > x
            for a in range(j, m, 4096):  # an earlier entry is later than x: times went backwards
                hit = np.flatnonzero(ts[a : a + 4096] > x)
                if len(hit):
                    return a + int(hit[0])
            return m

        wins: list[tuple[int, int, int]] = []
        lead = None
        i = 0
        at = self._rx_at
        if at is not None:
            k = first_later(0, at)
            if k == 0 and (m or eof):
                lead = at  # the window of the previous block ended with a full poll: its repoll finds nothing
            elif k:
                wins.append((0, k, at))
            i = k
            if k == m and not eof:
                return (*self._rx_expand(wins, w, False), lead)  # still open, still at ``at``
        while i < m:
            at = int(ts[i]) + delay
            k = first_later(i + 1, at)
            wins.append((i, k, at))
            i = k
        closed = eof or not wins or wins[-1][1] < m
        if m and wins and wins[-1][1] == m and not eof:
            self._rx_at = wins[-1][2]
            closed = False
        else:
            self._rx_at = None
        return (*self._rx_expand(wins, w, closed), lead)

    def _rx_expand(self, wins, w: int, closed: bool):
        """Polls of windows ``(start, end, poll time)``; the last window is open unless ``closed``: its full polls
        are final, its last partial poll is unfinished. Returns ``(starts, times, sizes, empties, unfinished)``."""
        if not wins:
            z = np.zeros(0, np.int64)
            return z, z, z, z.astype(bool), False
        a = np.array(wins, np.int64)
        bstart, bend, bat = a[:, 0], a[:, 1], a[:, 2]
        counts = (bend - bstart + w - 1) // w
        first_poll = np.cumsum(counts) - counts
        starts = np.repeat(bstart, counts) + w * (
            np.arange(int(counts.sum())) - np.repeat(first_poll, counts)
        )
        sizes = np.minimum(np.repeat(bend, counts) - starts, w)
        times = np.repeat(bat, counts)
        last = np.zeros(len(starts), bool)
        last[np.cumsum(counts) - 1] = True
        if not closed:
            last[-1] = False  # the open window: its repoll, if any, is decided by the next block
        empties = (sizes == w) & last
        unfinished = not closed and bool(sizes[-1] < w)
        return starts, times, sizes, empties, unfinished

    def _run_chunk_polls(
        self, ch, col, src, starts, times, sizes, empties, extras, base_index, lead=None, ends=None
    ) -> None:
        """Run (or answer from the cache) the polls ``starts``/``sizes`` of the block's entries; ``ends``: with
        flows retired, the entries' times and flow ids, for ``Replayer.poll_end`` after each poll."""
        if lead is not None and not self._hit(b"", lead):
            self._run_poll([], lead, b"")
        if not len(starts):
            return
        poll_end = None
        if ends is not None:
            poll_end = self.rep.poll_end
            last = starts + sizes - 1  # each poll's last entry: the latest time and largest flow id up to it
            end_ts, end_fid = (np.maximum.accumulate(a)[last].tolist() for a in (ends[0], ends[1]))
            efids = np.asarray(ends[1], np.int64)
        end = int(starts[-1] + sizes[-1])
        src = src[:end]
        bk = BlockKeys(col, ch, src, starts, sizes, efids if poll_end is not None else None)
        known = self._known_polls
        entries = self.cache.entries
        # a poll is looked up in the poll cache only when the number of its key is known (sim/poll_keys.py);
        # the others, not in the cache, are composed of their flow runs (sim/compose.py)
        nums = [n if c else None for n, c in zip(bk.numbers.tolist(), bk.cached.tolist(), strict=True)]
        keys = [bk.key(p) if n is not None and n in known else None for p, n in enumerate(nums)]
        new = [n is not None and (k is None or k not in entries) for n, k in zip(nums, keys, strict=True)]
        runs = None if not any(new) else self._block_runs(col, ch, src, bk.idx, bk.poll_of, sizes, new)
        hit = self._hit
        sz = sizes.tolist()
        repoll = empties.tolist()
        for p, (s, size, t) in enumerate(zip(starts.tolist(), sz, times.tolist(), strict=True)):
            e = s + size
            n = nums[p]
            key = keys[p] or (bk.key(p) if n is not None and n in known else None)  # or recorded in the block
            if key is None or not hit(key, t, src, s, e, base_index):
                # from its runs: all known, sim/run_serve.py; else sim/compose.py
                if (
                    runs is None
                    or not new[p]
                    or not (
                        self._serve(runs, p, sz, new, base_index, t)
                        or self._compose(runs, p, ch, extras, base_index, t, size)
                    )
                ):
                    batch = [self._entry(ch, x, extras, base_index)[1] for x in src[s:e].tolist()]
                    self._run_poll(batch, t, bk.key(p), n)
            if poll_end is not None:
                poll_end(end_ts[p], end_fid[p])
            if repoll[p] and not hit(b"", t):
                self._run_poll([], t, b"")
        self._settle_served()
        self._settle_polls()
        self.settle_lengths()

    def _hit(self, key: bytes, t: int, src=None, s: int = 0, e: int = 0, base_index: int = 0) -> bool:
        """Answer a poll (at time ``t``, of the common frames at block positions ``src[s:e]``) from the cache: True
        when the kernels are idle and ``key`` is known. Its counter delta waits for ``settle``; its delivery events
        go to the observers now, in their order, with this poll's skb addresses, frames and time."""
        events = self.cache.hit(key) if self._idle else None
        if events is None:
            return False
        if events:
            idx = (np.asarray(() if src is None else src[s:e], np.int64) + base_index).tolist()
            rows = []
            for i, kernel, stage, dev, addr, length, flow, pos, dt in events:
                frames = [idx[j] for j in pos]
                rows.append((i, kernel, stage, dev, addr + (frames[0] << 8), length, flow, frames, t + dt))
            hand_over_kernels(self.rep.stats, rows)
        return True

    def _run_poll(self, batch: list, t: int, key: bytes | None, number: int | None = None) -> None:
        """One poll through the kernels (``Replayer.run_poll``), its counter delta kept under ``key`` (``number``:
        its number, sim/poll_keys.py, noted in ``_known_polls``)."""
        rep = self.rep
        cache = self.cache
        record = (
            key is not None
            and self._idle
            and len(cache.entries) < MAX_KEYS
            and cache.events_kept < MAX_EVENTS
            and cache.seen_before(key)
        )
        fids = {b[3] for b in batch}
        before = [counters(k, rep.stats[i], fids) for i, k in enumerate(rep.kernels)] if record else None
        events: list = []
        if record and self.observed:
            self._record(batch, t, events)
        else:
            rep.run_poll(batch, t)
        self._idle = all(idle(k) for k in rep.kernels)
        if key is not None and before is not None and self._idle and None not in events:
            cache.add(
                key,
                [
                    delta(b, counters(k, rep.stats[i], fids))
                    for i, (k, b) in enumerate(zip(rep.kernels, before, strict=True))
                ],
                events,
                fids if self.retiring else (),
            )
            if number is not None:
                self._known_polls.add(key, number)
        else:
            cache.uncacheable += 1

    def _record(self, batch: list, t: int, events: list) -> None:
        """``Replayer.run_poll`` with every delivery also kept in ``events`` as ``(kernel index, kernel name,
        stage, device, addr - (first frame's capture index << 8), len, flow id, positions in the poll of the
        frames it carries, now_ns - t)``: what ``_hit`` hands an observer for a later poll with the same key
        (its frames at the same positions have the same headers, so the same flows; an skb's address is its first
        frame's: sim/driver.py). ``events`` is emptied and a None put in it when a delivery carries a frame
        that is not in ``batch``: such a poll is not cached."""
        rep = self.rep
        raw: list = []
        saved = [st.on_deliver for st in rep.stats]
        for i, st in enumerate(rep.stats):
            obs = saved[i]
            if obs is None:
                continue

            def keep(kernel, stage, dev, skb, now_ns, _i=i, _obs=obs):
                raw.append((_i, kernel, stage, dev, skb.addr, skb.len, skb.flow, tuple(skb.frames), now_ns))
                _obs(kernel, stage, dev, skb, now_ns)

            st.on_deliver = keep
        try:
            rep.run_poll(batch, t)
        finally:
            for st, obs in zip(rep.stats, saved, strict=True):
                st.on_deliver = obs
        pos = {b[7]: j for j, b in enumerate(batch)}
        for i, kernel, stage, dev, addr, length, flow, frames, now_ns in raw:
            where = tuple(pos.get(x, -1) for x in frames)
            if not frames or -1 in where:
                events.clear()
                events.append(None)
                return
            events.append((i, kernel, stage, dev, addr - (frames[0] << 8), length, flow, where, now_ns - t))

    # -- frames and flows ----------------------------------------------------------------------------------------
    def _entry(self, ch, src: int, extras: list, base_index: int):
        """``(ts_ns, Frame)`` of entry ``src``, as ``Replayer.decoded`` yields it (nothing counted)."""
        if src < 0:
            return extras[-1 - src]
        rep = self.rep
        o = int(ch.data[src])
        buf = bytes(ch.buf[o : o + int(ch.caplen[src])])
        _frame, vlan, fid, _rss, l4 = rep.decoder.decode(buf)
        if self._fids is not None:
            fid = int(
                self._fids[src]
            )  # the flow the block's pass gave it (its key may name a newer flow now)
        h, l4_hash = rep._flow_rx(fid)
        ts = int(ch.ts_ns[src])
        return ts, Frame(ts, buf, vlan, fid, h, l4_hash, l4, base_index + src)
