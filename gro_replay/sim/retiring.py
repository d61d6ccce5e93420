"""Flow retirement in a replay (sim/flows.py ``FlowTracker``): every frame noted in capture order as it is decoded, the
flows that ended retired at the end of each poll (``poll_end``) — the same calls at the same points on the
frame-by-frame path (``Replayer.run_polls``) and the batch path (pollcache.py) — or, with scheduled polls
(``--rx-queues`` > 1, ``--gro-flush-timeout``), as records are read. ``Replayer`` inherits these methods.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..kernel.skbuff import SkBuff
from ..packet.decode import CLS_TUNNEL_TCP
from ..report.stats import FlowRow, FlowRows, KernelStats
from .driver import DriverRx
from .flows import TCP_FIN_RST, FlowTracker
from .ingest import Frame, Ingest
from .polls import RxQueue

#: what the per-flow-id lists hold for a retired flow (never read again: the flow id is not reused)
_FORGOTTEN_RX = (0, False)
_FORGOTTEN_NIC = (0, 0, "")


class Retiring(Ingest):
    """The flow-retirement part of ``Replayer`` (its attributes are set in ``Replayer.__init__``)."""

    tracker: FlowTracker
    retired_verdict: Any
    flow_rows: FlowRows
    shown: int
    stats: list[KernelStats]
    kernels: list
    queues: list[list[RxQueue]]
    driver: DriverRx
    on_flow_change: Callable[[int, int | None], None] | None
    _retiring: bool
    _retire_on_records: bool
    _inflight: dict[int, int]
    _clock: int | None
    _poll_clock: int | None
    _polled_fids: int

    def poll_end(self, ts_ns: int, fid: int) -> None:
        """A poll ended whose frames' latest time is ``ts_ns`` and largest flow id ``fid``: count the flows live
        (started up to its last frame, not retired: ``FlowTracker.note_live``) and retire the flows that ended by
        the clock at its last frame (``retire_flows``). The batch path calls this at the same polls with the same
        values (pollcache.py), so both retire the same flows at the same points: what a retirement depends on
        (capture time, what the kernels hold after the poll) is the same on both paths."""
        c = self._poll_clock
        if c is None or ts_ns > c:
            c = self._poll_clock = ts_ns
        tracker = self.tracker
        if fid >= self._polled_fids:
            # the flows started in this poll (flow ids are handed out in capture order): the verdict keeps an inner
            # flow's group open while one of its flows is live (report/verdict.py ``Verdict.started``)
            flows = self.decoder.flows
            started = self.retired_verdict.started
            for f in range(self._polled_fids, fid + 1):
                first = tracker.first_seen(f)
                if flows[f] is not None:
                    started(f, flows[f], first, tracker.timed_out)
            self._polled_fids = fid + 1
        tracker.note_live(self._polled_fids - tracker.retired)
        if tracker.due(c):
            self.retire_flows(c)

    def _before_records(
        self, records: Iterable[tuple[int, bytes, int, int]]
    ) -> Iterator[tuple[int, bytes, int, int]]:
        """``records``, with the flows that ended retired before each is decoded (while ``run_polls`` retires):
        a frame whose key belonged to a retired flow then starts a new flow. The clock is the largest record
        time so far (a capture whose time runs backwards retires nothing early)."""
        self._own_frames = True
        return self._retiring_before(records)

    def _retiring_before(
        self, records: Iterable[tuple[int, bytes, int, int]]
    ) -> Iterator[tuple[int, bytes, int, int]]:
        clock = None
        tracker = self.tracker
        for r in records:
            if self._retire_on_records:
                t = r[0]
                if clock is None or t > clock:
                    clock = t
                if tracker.due(clock):
                    self.retire_flows(clock)
            yield r

    def _tracking(self, frames: Iterable[Frame]) -> Iterator[Frame]:
        """``frames``, each noted in the flow tracker as it is decoded (``track_frame``); with scheduled polls
        also counted in flight until polled."""
        track = self.track_frame
        inflight = self._inflight if self._retire_on_records else None
        # with gro_flush_timeout each kernel polls from its own schedule: a frame is polled once per kernel
        copies = len(self.kernels) if self.config.gro_flush_timeout_ns else 1
        for f in frames:
            f = track(f)
            if inflight is not None:
                fid = f[3]
                inflight[fid] = inflight.get(fid, 0) + copies
            yield f

    def track_frame(self, f: Frame) -> Frame:
        """``track`` for a decoded frame: whether it ends its flow's TCP connection is read from its inner TCP
        header (FIN or RST, include/net/tcp.h, in a tunnelled TCP flow). Returns the frame, with its new flow id
        when its flow had ended."""
        fid = f[3]
        buf = f[1]
        l4 = f[6]
        ended = bool(
            l4
            and self.decoder.flow_class[fid] == CLS_TUNNEL_TCP
            and len(buf) > l4 + 13
            and buf[l4 + 13] & TCP_FIN_RST
        )
        new = self.track(fid, f[0], ended)
        if new != fid:
            h, l4_hash = self._flow_rx(new)
            f = f._replace(flow_id=new, hash=h, l4_hash=l4_hash)
        return f

    def track(self, fid: int, ts_ns: int, ended: bool) -> int:
        """Note a frame of flow ``fid`` at ``ts_ns`` (ns) in the flow tracker, in capture order as frames are
        decoded (the clock is the largest frame time so far); ``ended``: it carries FIN or RST. A frame whose flow
        had ended by then (sim/flows.py ``FlowTracker.timed_out``) starts a new flow (``Decoder.restart``), as a
        new conntrack entry would. Returns the frame's flow id."""
        c = self._clock
        if c is None or ts_ns > c:
            c = self._clock = ts_ns
        tracker = self.tracker
        if tracker.timed_out(fid, c):
            fid = self._restart_flow(fid)
        if tracker.seen(fid, c, ended) and self._retire_on_records:
            tracker.first_seen(fid)
            self.retired_verdict.started(fid, self.decoder.flows[fid], c, tracker.timed_out)
            tracker.note_live(tracker.live)
        return fid

    def flow_ended(self, fid: int, ts_ns: int) -> bool:
        """Whether flow ``fid`` had ended by the arrival of a frame of its key at ``ts_ns`` (ns): while flows are
        retired, it is tracked and silent past its timeout (sim/flows.py ``FlowTracker.timed_out``) at the clock,
        the largest frame time so far. A retired flow's key no longer names it (``Decoder.retire``). Decides both
        which flow the frame belongs to (``fresh_flow``) and what ``--resegment auto`` knows of its MSS
        (``Ingest.flow_mss_at``)."""
        if not self._retiring:
            return False
        c = self._clock
        if c is None or ts_ns > c:
            c = ts_ns
        return self.tracker.timed_out(fid, c)

    def fresh_flow(self, fid: int, ts_ns: int) -> int:
        """The flow id a frame of flow ``fid`` decoded at ``ts_ns`` belongs to: a new one when ``fid`` had ended
        by then (``flow_ended``; ``track`` then notes it; deciding it as the frame is decoded keeps what is kept
        per flow id at decoding, the MSS ``--resegment auto`` learns, with the flow the frame belongs to)."""
        return self._restart_flow(fid) if self.flow_ended(fid, ts_ns) else fid

    def _fresh_hook(self) -> Callable[[int, int], int] | None:
        return self.fresh_flow if self._retiring else None

    def _restart_flow(self, fid: int) -> int:
        """A new flow id for the key of ended flow ``fid`` (``Decoder.restart``), selected by ``--flow`` as any new
        flow is (``Ingest._selected``: by its key and its own id)."""
        new = self.decoder.restart(fid)
        if self.on_flow_change is not None:
            self.on_flow_change(fid, new)
        if self._select is not None:
            self._selected(new)
        return new

    def _polled(self, batch: list[Frame]) -> None:
        """The frames of ``batch`` left the poll schedule (they are in the kernels now, or delivered)."""
        inflight = self._inflight
        for f in batch:
            fid = f[3]
            n = inflight[fid] - 1
            if n:
                inflight[fid] = n
            else:
                del inflight[fid]

    def held_flows(self) -> set[int]:
        """Flow ids with something still in the simulation: frames decoded and not yet polled, GRO packets held
        in any NAPI's lists, GRO_NORMAL batches, gro_cells queues and backlogs (with the other flows whose frames
        such a packet carries: ``SkBuff.mixed``)."""
        held = set(self._inflight)
        for queues in self.queues:
            for rq in queues:
                for cells in [None, *rq.cells, *rq.sock_cells]:
                    napi = rq.napi if cells is None else cells.napi
                    if any(napi.gro_count):
                        for head in napi.gro_hash:
                            _add_flows(held, head)
                    if napi.rx_list:
                        _add_flows(held, napi.rx_list)
                    if cells is not None and (cells.napi_skbs or cells.backlog):
                        _add_flows(held, cells.napi_skbs)
                        _add_flows(held, cells.backlog)
        return held

    def retire_flows(self, now: int) -> int:
        """Retire every flow that ended (sim/flows.py) by ``now`` (ns) and holds nothing in the simulation: its
        final counters go to ``flow_rows`` and the verdict, and every per-flow entry is dropped. Returns how many
        (none with ``ReplayConfig.flows_kept``)."""
        if self.config.flows_kept:  # ended flows are kept (explain): nothing is retired
            return 0
        cands = self.tracker.expired(now)
        if not cands:
            return 0
        held = self.held_flows()
        dec = self.decoder
        n = 0
        for fid in cands:
            if fid in held:
                continue
            if self.on_flow_change is not None:
                self.on_flow_change(fid, None)
            stats = [st.retire(fid) for st in self.stats]
            key, cls = dec.flows[fid], dec.flow_class[fid]
            if any(f is not None for f in stats):
                self.flow_rows.offer(FlowRow(fid, key, cls, stats[: self.shown]), retired=True)
            self.retired_verdict.retire(fid, key, cls, stats, self.tracker.ended_at(fid))
            dec.retire(fid)
            if fid < len(self._rx_of_flow):
                self._rx_of_flow[fid] = _FORGOTTEN_RX  # one shared tuple: nothing per retired flow
            if fid < len(self.driver._flow_state):
                self.driver._flow_state[fid] = _FORGOTTEN_NIC
            if self._flow_mss is not None:
                self._flow_mss.pop(fid, None)
            # the MSS this flow announced for its peer, unless another flow has announced one since
            mss_key = self._syn_mss_key.pop(fid, None)
            if mss_key is not None and self._syn_mss.get(mss_key, (0, -1))[1] == fid:
                del self._syn_mss[mss_key]
            self.tracker.forget(fid)
            n += 1
        return n


def _add_flows(held: set[int], skbs: Iterable[SkBuff]) -> None:
    """Add to ``held`` the flows whose frames ``skbs`` carry: each skb's own and those merged into it (``mixed``)."""
    for skb in skbs:
        held.add(skb.flow)
        if skb.mixed is not None:
            held.update(skb.mixed)
