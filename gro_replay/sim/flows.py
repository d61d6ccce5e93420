"""Flow bookkeeping: which flows are live, and when a flow that ended is retired.

A flow is retired once it has ended — a frame with FIN or RST of its (inner) TCP connection was replayed and the
flow then stayed silent for ``close_timeout_ns``, or any flow stayed silent for ``idle_timeout_ns`` (capture time,
as conntrack times out a connection: nf_conntrack_proto_tcp.c ``tcp_timeouts``, TCP_CONNTRACK_CLOSE 10 s; the idle
timeout 120 s as nf_conntrack's ``udp_timeout_stream`` and TCP TIME_WAIT) — and nothing of it is held anywhere in
the simulation (GRO lists, GRO_NORMAL batches, gro_cells queues, frames waiting for their poll). Its counters are
then final: the replayer hands its row to the bounded summary (``report.stats.FlowRows``) and to the verdict, and
forgets it; a later frame with the same key starts a new flow, as a new conntrack entry would. The simulation never
looks at flow ids (GRO matches headers), so retiring changes no count.

Memory: per live flow one entry here and the flow's counters (``report.stats.FlowStats``, per kernel model); per
retired flow nothing but one slot (8 bytes) in each list indexed by flow id (decoder, RX hash, NIC state, --flow).
"""

from __future__ import annotations

from typing import overload

import numpy as np

from ..numeric import distinct

#: TCP flags that end a connection (FIN, RST): include/net/tcp.h TCPHDR_FIN, TCPHDR_RST
TCP_FIN_RST = 0x01 | 0x04
#: conntrack-like timeouts (ns of capture time): ``--flow-timeout``'s and ``--flow-close-timeout``'s defaults
IDLE_TIMEOUT_NS = 120 * 10**9
CLOSE_TIMEOUT_NS = 10 * 10**9


@overload
def silent_past(gap_ns: int, closing: bool, idle_timeout_ns: int, close_timeout_ns: int) -> bool: ...


@overload
def silent_past(
    gap_ns: np.ndarray, closing: np.ndarray, idle_timeout_ns: int, close_timeout_ns: int
) -> np.ndarray: ...


def silent_past(
    gap_ns: int | np.ndarray, closing: bool | np.ndarray, idle_timeout_ns: int, close_timeout_ns: int
) -> bool | np.ndarray:
    """Whether a flow silent for ``gap_ns`` (ns of capture time) has ended: the gap reaches ``close_timeout_ns``
    when the flow carried FIN or RST (``closing``), else ``idle_timeout_ns`` (nf_conntrack_proto_tcp.c
    ``tcp_timeouts``: TCP_CONNTRACK_CLOSE; the idle timeout as ``udp_timeout_stream``). The one test of a flow's
    end: ``FlowTracker.timed_out`` calls it with ints and a bool, ``FlowTracker.timing_out`` with numpy arrays
    (int64 gaps, bool ``closing``: a bool array of the same shape), elementwise. A gap of 0 is no silence, whatever
    the timeout (``--flow-close-timeout 0`` included): a frame noted at the clock's time — a segment of a super-frame
    split with the FIN, or a frame decoded ahead of the poll that ends (the poll models look ahead) — is not past."""
    return (gap_ns > 0) & (gap_ns >= idle_timeout_ns - (idle_timeout_ns - close_timeout_ns) * closing)


class FlowTracker:
    """The live flows of one replay, in order of their last frame, split by whether they ended (FIN/RST).

    ``seen(fid, ts_ns, ended)`` for every frame replayed, in capture order as it is decoded (``ts_ns`` on a clock
    that never runs backwards);
    ``due(now)`` is True when some flow may have timed out (O(1)); ``expired(now)`` lists them, oldest first;
    ``forget(fid)`` drops one (it was retired). ``idle_timeout_ns`` 0: flows are never retired (the replay's
    default being ``IDLE_TIMEOUT_NS``, conntrack's value: ``ReplayConfig.flow_idle_timeout_ns``).
    """

    def __init__(
        self, idle_timeout_ns: int = IDLE_TIMEOUT_NS, close_timeout_ns: int = CLOSE_TIMEOUT_NS
    ) -> None:
        self.idle_timeout_ns = idle_timeout_ns
        self.close_timeout_ns = min(close_timeout_ns, idle_timeout_ns)
        #: fid → time of its last frame (ns); insertion order is the order of last frames
        self.open: dict[int, int] = {}
        self.closing: dict[int, int] = {}
        #: fid → the clock at its first frame (ns), until ``first_seen`` takes it (the verdict: sim/retiring.py)
        self.first: dict[int, int] = {}
        #: flows retired, and the largest number of flows live at once
        self.retired = 0
        self.live_max = 0

    @property
    def live(self) -> int:
        """Flows tracked now (seen and not retired)."""
        return len(self.open) + len(self.closing)

    def seen(self, fid: int, ts_ns: int, ended: bool) -> bool:
        """Note a frame of flow ``fid`` at ``ts_ns``; ``ended``: it carries FIN or RST. True for a new flow."""
        op, cl = self.open, self.closing
        if fid in cl:
            del cl[fid]
            cl[fid] = ts_ns
            return False
        new = op.pop(fid, None) is None
        if new:
            self.first[fid] = ts_ns
        if ended:
            cl[fid] = ts_ns
        else:
            op[fid] = ts_ns
        return new

    def first_seen(self, fid: int) -> int | None:
        """The clock (ns) at flow ``fid``'s first frame, once: the entry is dropped (None: not noted, or taken)."""
        return self.first.pop(fid, None)

    def note_live(self, n: int) -> None:
        """``n`` flows are live now (``live_max`` keeps the largest): the replayer counts, at the end of each poll,
        the flows whose first frame was polled and that are not retired, so that frames decoded ahead of their
        poll (a lookahead the batch path makes a whole block long) count nothing early."""
        if n > self.live_max:
            self.live_max = n

    def timed_out(self, fid: int, now: int) -> bool:
        """True when flow ``fid`` is tracked and has been silent past its timeout at ``now`` (ns): a frame of its
        key at ``now`` starts a new flow."""
        if not self.idle_timeout_ns:
            return False
        t = self.closing.get(fid)
        if t is not None:
            return self._silent(now - t, True)
        t = self.open.get(fid)
        return t is not None and self._silent(now - t, False)

    def timing_out(self, fids: np.ndarray, now: np.ndarray, ended: np.ndarray) -> np.ndarray:
        """The flows among ``fids`` that some frame finds timed out (``timed_out``) when the frames of flows
        ``fids`` at clock ``now`` (int64 ns, capture order, never decreasing; ``ended``: the frame carries FIN or RST)
        are noted (``seen``) one by one in order — each frame's gap counted from its flow's previous frame, the
        first one's from the flow's last frame here (none: a flow not tracked). A flow's frames after the one that
        finds it timed out would belong to a new flow: only whether one does is answered, as a sorted int64 array
        of flow ids (empty: noting the frames with ``seen`` alone is what ``timed_out``/``seen`` frame by frame
        would do). Time and memory grow with the frames, not with the flows tracked."""
        if not self.idle_timeout_ns or not len(fids):
            return np.zeros(0, np.int64)
        # no gap here can reach the shorter timeout: the frames span less, and so do they and the oldest flow
        # tracked (each dict is in order of last frames, noted on the clock)
        oldest = int(now[0])
        for d in (self.closing, self.open):
            if d:
                oldest = min(oldest, next(iter(d.values())))
        if int(now[-1]) - oldest < self.close_timeout_ns:
            return np.zeros(0, np.int64)
        order = np.argsort(fids, kind="stable")
        f, t, e = fids[order], now[order], ended[order]
        first = np.ones(len(f), bool)
        first[1:] = f[1:] != f[:-1]
        starts = np.flatnonzero(first)
        uf = f[starts].tolist()
        cl, op = self.closing, self.open
        prev_t = np.zeros(len(uf), np.int64)
        was_closing = np.zeros(len(uf), bool)
        tracked = np.zeros(len(uf), bool)
        for k, fid in enumerate(uf):
            x = cl.get(fid)
            if x is not None:
                prev_t[k], was_closing[k], tracked[k] = x, True, True
            else:
                x = op.get(fid)
                if x is not None:
                    prev_t[k], tracked[k] = x, True
        run = np.cumsum(first) - 1  # each frame's flow, as an index into uf
        gap = np.empty(len(f), np.int64)
        gap[1:] = t[1:] - t[:-1]
        gap[starts] = t[starts] - prev_t
        # FIN or RST seen before the frame: tracked as closing, or an earlier frame of the flow here ended it
        ends_before = np.cumsum(e) - e
        closing = was_closing[run] | (ends_before - ends_before[starts][run] > 0)
        checked = ~first | tracked[run]
        hit = checked & silent_past(gap, closing, self.idle_timeout_ns, self.close_timeout_ns)
        return distinct(f[hit])

    def due(self, now: int) -> bool:
        """True when the oldest open or closing flow has been silent past its timeout at ``now`` (ns)."""
        if not self.idle_timeout_ns:
            return False
        for d, closing in ((self.closing, True), (self.open, False)):
            if d and self._silent(now - next(iter(d.values())), closing):
                return True
        return False

    def _silent(self, gap_ns: int, closing: bool) -> bool:
        return silent_past(gap_ns, closing, self.idle_timeout_ns, self.close_timeout_ns)

    def expired(self, now: int) -> list[int]:
        """Flows silent past their timeout at ``now``, oldest first (not yet forgotten)."""
        out = []
        for d, closing in ((self.closing, True), (self.open, False)):
            for fid, last in d.items():
                if not self._silent(now - last, closing):
                    break
                out.append(fid)
        return out

    def ended_at(self, fid: int) -> int | None:
        """When flow ``fid`` ended (ns): its last frame plus its timeout (``close_timeout_ns`` after FIN or RST, else
        ``idle_timeout_ns``), the first instant at which ``timed_out`` holds; None when it is not tracked."""
        t = self.closing.get(fid)
        if t is not None:
            return t + max(self.close_timeout_ns, 1)  # a gap of 0 is no silence (``silent_past``)
        t = self.open.get(fid)
        return None if t is None else t + max(self.idle_timeout_ns, 1)

    def forget(self, fid: int) -> None:
        self.first.pop(fid, None)
        self.open.pop(fid, None)
        self.closing.pop(fid, None)
        self.retired += 1
