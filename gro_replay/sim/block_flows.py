"""Flows of the batch engine's blocks (pollcache.py ``BatchReplay``): flow ids of the common frames, the flow
tracker fed in capture order when flows are retired, and the input counters of a block's records.

Flow retirement (sim/flows.py, on by default). A block's records are noted in the replayer's flow tracker in
capture order before its polls run (``_tracked_pass``: flow ids handed out in the order the frame-by-frame path
decodes them, a frame whose flow ended starting a new one), and after every poll ``Replayer.poll_end`` retires
the flows that ended by the clock at its last frame, as the frame-by-frame path does after each poll: which flows
have ended then depends only on capture time up to that frame, and whether one is held only on what the kernels
hold after the poll, so the lookahead (a whole block here, one poll there) changes nothing. While retiring, a
poll's key also holds its frames' flow ids (a recorded delta adds to the counters of the flows it was recorded
with), and a flow's recorded polls are dropped, their pending counts added, when it is retired or its key comes
back as a new flow (``PollCache.drop_flow``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..capture.interfaces import SKIP_OTHER_INTERFACE
from ..capture.linktypes import sent_by_host
from ..capture.reader import DLT_EN10MB
from ..kernel.skbuff import ETH_FRAME_LEN
from ..numeric import member
from ..packet.columns import V_UDP_BAD
from ..packet.decode import CLS_TUNNEL_TCP, SKIP_OUTGOING, SKIP_SNAPLEN
from .deltas import PendingFlowOps, PollCache
from .flows import TCP_FIN_RST
from .replayer import Replayer
from .skipped import count_skip

#: common frames between two unusual records noted in the flow tracker a run at a time (``_track_run``); fewer
#: are noted one by one (the same result: tests shrink it to compare)
MIN_RUN = 32


class FlowTracking:
    """The flow part of ``pollcache.BatchReplay`` (a mixin: it uses the replay's ``rep``, ``cache``, ``runs``,
    ``flow_ops`` and the flow maps ``BatchReplay.__init__`` sets up)."""

    rep: Replayer
    cache: PollCache
    runs: PollCache
    flow_ops: PendingFlowOps
    _forget_all: Callable[[], None]
    _settle_served: Callable[[], None]
    _fid_of: dict[bytes, int]
    _keys_of: dict[int, list[bytes]]
    _fin_of: dict[bytes, bool]
    _moved: dict[int, int]

    def _flow_ids(self, ch: Any, col: Any, common: Any, unusual: Any) -> Any:
        """Flow ids of the common frames (-1 where not yet known) and the flows still to create:
        ``[(position of the first frame, class index, key)]`` in capture order, and ``(positions, class of each,
        hash verified)`` of the common frames for ``_new_flow``; frames of a class share a kv row.
        A kv-hash collision sends the colliding frames to ``unusual``."""
        n = len(ch)
        fids = self._block_fids = np.full(n, -1, np.int64)  # also the flow runs' (``_compose``)
        #: each common frame's class (its kv row and UDP-zero bit, rows compared whole), for the flow runs' keys
        cls = self._block_cls = np.full(n, -1, np.int64)
        pos = np.flatnonzero(common)
        if not len(pos):
            return fids, [], None
        every = len(pos) == n
        kv64 = col.kv.view(np.uint64)
        rows = kv64 if every else kv64[pos]
        # every row the first one's (bulk traffic: first tried on the last row): one hash for them all
        eq = rows == rows[0] if every and (rows[-1] == rows[0]).all() else None
        h = col.kv_hash(same_rows=eq is not None and bool(eq.all()))
        if every and (h == h[0]).all():  # one class (one flow, one direction)
            first = np.zeros(1, np.int64)
            inv = np.zeros(n, np.int64)
            if eq is None:
                eq = rows == rows[0]
        else:
            _u, first, inv = np.unique(h if every else h[pos], return_index=True, return_inverse=True)
            inv = inv.reshape(-1)
            eq = rows == rows[first][inv]
        # the rows of a class equal its first one's (a row at a time only when some differ: a hash collision)
        same = np.ones(len(pos), bool) if eq.all() else eq.all(axis=1)
        rep_rows = pos[first]
        cls[pos] = inv  # a frame whose row differs from its class's leaves the common frames below
        if not same.all():
            bad = pos[~same]
            common[bad] = False
            unusual.extend(bad.tolist())
            unusual.sort()
        ufid = np.full(len(first), -1, np.int64)
        todo = []
        fid_of = self._fid_of
        keys: list = [b""] * len(first)
        for j in np.argsort(rep_rows, kind="stable").tolist():
            r = int(rep_rows[j])
            key = keys[j] = col.kv[r].tobytes() + bytes([int(col.vbits[r]) & 2])
            fid = fid_of.get(key)
            if fid is None:
                todo.append((r, j, key))
            else:
                ufid[j] = fid
        fids[pos] = ufid[inv]
        fids[~common] = -1
        return fids, todo, (pos, inv, same, ufid, keys)

    def _new_flow(self, ch: Any, fids: Any, classes: Any, r: int, j: int, key: bytes) -> None:
        """Create (Decoder.decode) the flow of class ``j`` from its first frame at ``r``; fill in its frames."""
        fid = self._fid_of.get(key)
        if fid is None:
            o = int(ch.data[r])
            fid = self._fid_of[key] = self.rep.decoder.decode(bytes(ch.buf[o : o + int(ch.caplen[r])]))[2]
        pos, inv, same = classes[:3]
        sel = pos[(inv == j) & same]
        fids[sel] = fid

    def _entry_flows(self, src: Any, ts: Any, fids: Any, extras: Any, cut: int) -> Any:
        """``(times, flow ids)`` of the block's entries, for ``Replayer.poll_end``; the records from ``cut`` on,
        left to the next block, were tracked: their flow ids go with them (``_ahead``)."""
        self._ahead = fids[cut:].tolist()
        xf = np.array([e[1][3] for e in extras] or [0], np.int64)
        efid = np.where(src >= 0, fids[np.maximum(src, 0)] if len(fids) else 0, xf[np.maximum(-1 - src, 0)])
        return ts, efid

    def _tracked_pass(
        self,
        ch: Any,
        col: Any,
        common: Any,
        snap: Any,
        unusual: Any,
        fids: Any,
        classes: Any,
        extras: Any,
        after_unusual: Any,
    ) -> int:
        """With flows retired: every record of the block in capture order, as the frame-by-frame path decodes
        them — a common frame's flow found (``_class_flow``) and noted in the flow tracker (``Replayer.track``: a
        frame whose flow ended starts a new one), an unusual record decoded (``Replayer.decoded``) and its frames
        noted (``Replayer.track_frame``) — so that flow ids are handed out in the same order. The common frames
        between two unusual records are noted a run at a time (``_track_run``). Fills ``fids``, ``extras`` and
        ``after_unusual`` as ``_chunk`` does; returns the first record not yet counted."""
        rep = self.rep
        self._moved.clear()
        n = len(ch)
        ahead = self._ahead
        self._ahead = []
        if classes is None:
            pos = np.zeros(0, np.int64)
            run = None
        else:
            pos, inv, same, ufid, keys = classes
            run = (pos, inv, ch.ts_ns[pos], col.group[pos], ufid.tolist(), keys)
            # records the previous block tracked and left to this one keep their flow ids
            ah = same & (pos < len(ahead))
            if ah.any():
                fids[pos[ah]] = np.asarray(ahead, np.int64)[pos[ah]]
            todo = np.flatnonzero(same & (pos >= len(ahead)))
        i = 0
        last = 0
        for q in [*unusual, n]:
            if run is not None:
                k = int(np.searchsorted(pos[todo], q))
                if k > i:
                    self._track_run(ch, fids, run, todo[i:k])
                i = k
            if q == n:
                break
            self._account(ch, col, common, snap, last, q, fids)
            o = int(ch.data[q])
            lt = DLT_EN10MB if ch.linktype is None else int(ch.linktype[q])
            rec = (int(ch.ts_ns[q]), bytes(ch.buf[o : o + int(ch.caplen[q])]), int(ch.origlen[q]), lt)
            got = [rep.track_frame(g) for g in rep.decoded([rec])]
            after_unusual.append((q, list(range(len(extras), len(extras) + len(got)))))
            extras.extend((g[0], g) for g in got)
            last = q + 1
        return last

    def _track_run(self, ch: Any, fids: Any, run: Any, sel: Any) -> None:
        """Note the common frames ``sel`` (indexes into the block's common frames, in capture order, no unusual
        record between them) in the flow tracker, as ``Replayer.track`` frame by frame would: the frames of the
        flows ``_quiet_flows`` finds quiet only by their last frame (``FlowTracker.seen``: the same state as noting
        each), the others one by one through ``Replayer.track``, in capture order with those last frames, so that
        flow ids are handed out and the tracker's flows ordered as frame by frame. The clock
        (``Replayer._clock``, the largest frame time so far) is set before each, as noting every frame would."""
        rep = self.rep
        pos, inv, ts_all, _group, cfid, keys = run
        moved = self._moved
        fin_of = self._fin_of
        flow_class = rep.decoder.flow_class
        rs = pos[sel]
        clock = np.maximum.accumulate(ts_all[sel])
        if rep._clock is not None:
            np.maximum(clock, rep._clock, out=clock)
        if len(sel) < MIN_RUN or rep._retire_on_records:
            slow = np.arange(len(sel))
            last: dict[int, tuple[int, bool]] = {}
        else:
            slow, last = self._quiet_flows(fids, run, sel, clock)
        if len(slow):
            steps = sorted([*slow.tolist(), *last]) if last else slow.tolist()
            rs_l, cls_l, ts_l = rs.tolist(), inv[sel].tolist(), ts_all[sel].tolist()
            clock_l = clock.tolist()
        else:  # every flow quiet: the clock only at their last frames
            steps = sorted(last)
            clock_l = dict(zip(steps, clock[steps].tolist(), strict=True))
        track = rep.track
        seen = rep.tracker.seen
        for x in steps:
            quiet = last.get(x)
            if quiet is not None:
                seen(quiet[0], clock_l[x], quiet[1])
                continue
            r = rs_l[x]
            j = cls_l[x]
            fid = cfid[j]
            if fid < 0:
                fid = cfid[j] = self._class_flow(ch, r, keys[j])
            while fid in moved:
                fid = moved[fid]
            rep._clock = clock_l[x]
            fids[r] = track(fid, ts_l[x], fin_of[keys[j]] and flow_class[fid] == CLS_TUNNEL_TCP)
        rep._clock = int(clock[-1])

    def _quiet_flows(
        self, fids: Any, run: Any, sel: Any, clock: Any
    ) -> tuple[np.ndarray, dict[int, tuple[int, bool]]]:
        """Split the frames ``sel`` of ``_track_run`` (``clock``: the clock at each): a flow is quiet when its
        frames here are all of classes whose flow is known and none finds it timed out
        (``FlowTracker.timing_out``), and no frame of its inner flow (``Columns.group``: every frame of a flow id
        shares it) is of a class not yet known (decoding its first frame may name that flow). Sets ``fids`` of
        the quiet flows' frames. Returns the other frames (indexes into ``sel``, in order) and, by the index of
        each quiet flow's last frame, ``(flow id, whether any of its frames carries FIN or RST)``."""
        rep = self.rep
        pos, inv, _ts, group_all, cfid, keys = run
        moved = self._moved
        fin_of = self._fin_of
        flow_class = rep.decoder.flow_class
        cls = inv[sel]
        if (cls == cls[0]).all():  # one class
            ucls, cinv = cls[:1], np.zeros(len(cls), np.int64)
        else:
            ucls, cinv = np.unique(cls, return_inverse=True)
        cf = np.empty(len(ucls), np.int64)
        ce = np.zeros(len(ucls), bool)
        for u, j in enumerate(ucls.tolist()):
            fid = cfid[j]
            if fid >= 0:
                while fid in moved:
                    fid = moved[fid]
                ce[u] = fin_of[keys[j]] and flow_class[fid] == CLS_TUNNEL_TCP
            cf[u] = fid
        rf = cf[cinv]
        ended = ce[cinv]
        known = rf >= 0
        grp = group_all[sel]
        bad = grp[~known]
        loud = rep.tracker.timing_out(rf[known], clock[known], ended[known])
        if len(loud):
            bad = np.concatenate([bad, grp[known][member(rf[known], loud)]])
        slow_m = member(grp, bad) if len(bad) else np.zeros(len(sel), bool)
        qi = np.flatnonzero(~slow_m)
        qf = rf[qi]
        fids[pos[sel][qi]] = qf
        # each quiet flow's last frame, and whether any of its frames ended it
        if not len(qi):
            return np.flatnonzero(slow_m), {}
        if (qf == qf[0]).all():  # one quiet flow (bulk traffic)
            return np.flatnonzero(slow_m), {int(qi[-1]): (int(qf[0]), bool(ended[qi].any()))}
        o = np.argsort(qf, kind="stable")
        qs = qf[o]
        is_last = np.ones(len(o), bool)
        is_last[:-1] = qs[1:] != qs[:-1]
        flow_first = np.flatnonzero(np.concatenate(([True], is_last[:-1])))
        any_end = np.logical_or.reduceat(ended[qi[o]], flow_first)
        lasts = qi[o[is_last]].tolist()
        last = dict(zip(lasts, zip(qf[o[is_last]].tolist(), any_end.tolist(), strict=True), strict=True))
        return np.flatnonzero(slow_m), last

    def _class_flow(self, ch: Any, r: int, key: bytes) -> int:
        """The flow of the common frames with ``key`` (``_fid_of``), found by decoding the one at ``r`` when not
        known (``Decoder.decode``: a key it does not know starts a flow); also whether they carry FIN or RST."""
        fid = self._fid_of.get(key)
        if fid is None:
            o = int(ch.data[r])
            frame, _vlan, fid, _rss, l4 = self.rep.decoder.decode(bytes(ch.buf[o : o + int(ch.caplen[r])]))
            self._fid_of[key] = fid
            self._keys_of.setdefault(fid, []).append(key)
            self._fin_of[key] = bool(l4 and len(frame) > l4 + 13 and frame[l4 + 13] & TCP_FIN_RST)
        return fid

    def _flow_changed(self, fid: int, new: int | None) -> None:
        """``Replayer.on_flow_change``: flow ``fid`` is retired (``new`` None) or its key now names flow ``new``.
        Cached polls with its frames are dropped (their deltas hold its counters), and its keys are forgotten or
        name ``new``."""
        self._settle_served()  # the served runs' counters (sim/run_serve.py), this flow's among them
        self.cache.drop_flow(fid)
        self.runs.drop_flow(fid)
        self._forget_all()  # answers from the runs' entries (sim/run_lookup.py ``_lookup``)
        self.flow_ops.settle_flow(fid)
        keys = [k for k in self._keys_of.pop(fid, ()) if self._fid_of.get(k) == fid]
        if new is None:
            for k in keys:
                del self._fid_of[k]
                del self._fin_of[k]
            return
        self._moved[fid] = new
        for k in keys:
            self._fid_of[k] = new
        self._keys_of.setdefault(new, []).extend(keys)

    def _account(self, ch: Any, col: Any, common: Any, snap: Any, a: int, b: int, fids: Any) -> None:
        """Input counters of records [a, b) that are common frames, snaplen-cut or another interface's
        (``RecordChunk.skip``; ``Replayer.decoded`` counts the others), and, for ``--resegment auto``, what
        ``Ingest._learn_mss`` learns of each flow: its largest TCP payload, and the MSS option of its SYNs
        (``Columns.syn_l4``, in capture order)."""
        if b <= a:
            return
        inp = self.rep.input
        _count_read(inp, ch, a, b)
        ns = int(snap[a:b].sum())
        if ch.skip is not None and ns:
            no = int(ch.skip[a:b].sum())
            if no:
                inp.skipped[SKIP_OTHER_INTERFACE] += no
                ns -= no
        if ns:
            # each record cut short or sent by the host, read for where its headers say it goes (Ingest._decoded's
            # count_skip)
            cut = snap[a:b] if ch.skip is None else snap[a:b] & ~ch.skip[a:b]
            ports = self.rep.decoder.tunnel_ports
            for r in (np.flatnonzero(cut) + a).tolist():
                o = int(ch.data[r])
                lt = DLT_EN10MB if ch.linktype is None else int(ch.linktype[r])
                rec = bytes(ch.buf[o : o + int(ch.caplen[r])])
                count_skip(inp, SKIP_OUTGOING if sent_by_host(rec, lt) else SKIP_SNAPLEN, rec, lt, ports)
        sel = np.flatnonzero(common[a:b]) + a
        if len(sel):
            inp.frames_replayed += len(sel)
            # records that state a wire length below what was captured (Ingest.decoded counts the others)
            inp.caplen_over_orig_len += int(np.count_nonzero(ch.caplen[sel] > ch.origlen[sel]))
            # the common layout is untagged: the captured length is the frame's without VLAN tags
            inp.frames_over_eth_frame_len += int(np.count_nonzero(ch.caplen[sel] > ETH_FRAME_LEN))
            # outer UDP checksums that do not verify (packet.decode.outer_udp_csum_bad for the others)
            inp.outer_csum_bad += int(np.count_nonzero(col.vbits[sel] & V_UDP_BAD))
            # the class is the flow's (named by its first frame: an inner fragment makes it tunnel_other)
            flow_class = self.rep.decoder.flow_class
            f = fids[sel]
            if (f == f[0]).all():  # one flow (bulk traffic)
                uf, inv, cnt = f[:1], np.zeros(len(f), np.int64), np.array([len(f)])
            else:
                uf, inv, cnt = np.unique(f, return_inverse=True, return_counts=True)
            mss = self.rep._flow_mss
            if mss is not None:
                mx = np.zeros(len(uf), np.int64)
                np.maximum.at(mx, inv, col.payload[sel])
            pair_of, pair_frames = self.rep.decoder.pair_of, self.rep.decoder.pair_frames
            for j, fid in enumerate(uf.tolist()):
                cls = flow_class[fid]
                inp.classes[cls] += int(cnt[j])
                pair_frames[pair_of[fid]] += int(cnt[j])
                if mss is not None and cls == CLS_TUNNEL_TCP and mx[j] > mss.get(fid, 0):
                    mss[fid] = int(mx[j])
            if mss is not None:
                syn = sel[col.syn_l4[sel] != 0]
                for r in syn.tolist():
                    fid = int(fids[r])
                    if flow_class[fid] == CLS_TUNNEL_TCP:
                        o = int(ch.data[r])
                        self.rep._learn_mss(fid, bytes(ch.buf[o : o + int(ch.caplen[r])]), int(col.syn_l4[r]))


def _count_read(inp: Any, ch: Any, a: int, b: int) -> None:
    """Records [a, b) of block ``ch`` read (``FlowTracking._account``): frames, bytes (a Linux cooked record's
    whole: capture/cooked.py ``RecordChunk.shrunk``, and those of them read as Ethernet frames and not another
    interface's in ``cooked_frames``) and the span of their times, but a record the capturing host sent
    (``RecordChunk.sent``: no arrival, as sim/skipped.py ``received_frame`` reads it)."""
    inp.frames_read += b - a
    inp.bytes_read += int(ch.caplen[a:b].sum())
    if ch.shrunk is not None:
        inp.bytes_read += int(ch.shrunk[a:b].sum())
        rewritten = ch.shrunk[a:b] > 0
        inp.cooked_frames += int(
            np.count_nonzero(rewritten if ch.skip is None else rewritten & ~ch.skip[a:b])
        )
    ts = ch.ts_ns[a:b]
    if ch.sent is not None:
        ts = ts[~ch.sent[a:b]]
    if len(ts):
        if inp.first_ts_ns is None:
            inp.first_ts_ns = int(ts[0])
        inp.saw_ts_range(int(ts.min()), int(ts.max()))
        inp.last_ts_ns = int(ts[-1])
