"""Poll formation: which frames share a driver poll (``iter_polls``, ``PollSchedule``: the poll models, repolls,
gro_flush_timeout and napi_defer_hard_irqs) and the RX queues (one NAPI per queue, one CPU per queue).

Frames here are the decoded tuples of ``ingest.Ingest.decoded``; only element 0 (``ts_ns``) is read.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator

from ..kernel.gro_cells import GroCells
from ..kernel.kernel import Kernel
from ..kernel.napi import Napi
from .config import PollModel

# -- poll models -----------------------------------------------------------------------------------------------------
# A poll is ``(poll_time_ns, frames)``: the driver hands ``frames`` (at most ``weight``) to napi_gro_receive at
# ``poll_time_ns``, the time the NAPI's jiffies and the held packets' ``age`` are taken from. The rules (gro-spec
# §1.3, §1.8; net/core/dev.c ``napi_poll``, ``napi_complete_done``, ``napi_watchdog``):
#
# * budget: the NIC always has frames: a poll takes the next ``weight`` frames in capture order at the time of the
#   last of them; the rest of the input is polled at the input's last timestamp.
# * gap:US: a burst is a run of frames whose inter-arrival gaps are ≤ US µs; a poll takes the burst (at most
#   ``weight``) at the time of its last frame.
# * rx-usecs:US: interrupt moderation: a poll runs US µs after the first frame that arrived since the last poll
#   and takes the frames that arrived by then (ts ≤ poll time), at most ``weight``.
# * A poll that takes ``weight`` frames leaves the NAPI scheduled (``napi_poll`` repoll list): the next poll
#   follows at once — rx-usecs: at the same time, taking what had arrived by then; budget/gap: the next
#   ``weight`` frames of the input/burst. When nothing is left (end of input / end of burst / nothing arrived)
#   that repoll is empty: ``napi_complete_done(0)``, which flushes what the full poll kept (HZ ≥ 1000).
# * gro_flush_timeout (ns) > 0: ``napi_complete_done`` arms the NAPI's hrtimer at poll time + timeout (when GRO
#   holds packets, or while napi_defer_hard_irqs defers); when it fires and the NAPI is not scheduled,
#   ``napi_watchdog`` schedules a poll that takes the frames that have arrived by then (at most ``weight``).
#   Without deferral the IRQ stays enabled: the next poll is the model's next poll or the timer's, whichever
#   comes first. With napi_defer_hard_irqs > 0 the driver leaves the IRQ masked: the next poll is the timer's.
#   A timer is never cancelled (only re-armed); one that fires while the NAPI is scheduled does nothing.
# Timestamps that go backwards count as arriving at the latest time seen.


def iter_polls(frames: Iterable, poll: PollModel, weight: int) -> Iterator[tuple[int, list]]:  # noqa: C901 - one generator per poll model, kept together for the shared batching
    """Group decoded frames (tuples whose element 0 is ``ts_ns``) into polls ``(poll_time_ns, frames)``.

    The shortcut of ``PollSchedule`` for one NAPI without gro_flush_timeout (the poll schedule then does not depend
    on the kernel's state); both give identical polls (tests/test_poll_models.py). Streams: holds at most one
    poll's worth of frames (plus, for rx-usecs, the frames that arrived meanwhile).
    """
    if poll.kind == "budget":
        batch: list = []
        last: int | None = None
        for f in frames:
            batch.append(f)
            if len(batch) == weight:
                last = f[0]
                yield last, batch
                batch = []
        if batch:
            yield batch[-1][0], batch
        elif last is not None:
            yield last, []  # the repoll after a full last poll finds nothing
    elif poll.kind == "gap":
        limit = int(poll.usecs * 1000)
        batch = []
        prev = 0  # read only while batch holds a frame
        for f in frames:
            t = f[0]
            if batch:
                full = len(batch) == weight
                if full or t - prev > limit:
                    yield prev, batch
                    if full and t - prev > limit:
                        yield prev, []  # the burst ended with a full poll: its repoll finds nothing
                    batch = []
            batch.append(f)
            prev = t
        if batch:
            yield prev, batch
            if len(batch) == weight:
                yield prev, []
    else:
        delay = int(poll.usecs * 1000)
        pending: deque = deque()
        poll_at = None
        for f in frames:
            while poll_at is not None and f[0] > poll_at:
                take = [pending.popleft() for _ in range(min(weight, len(pending)))]
                yield poll_at, take
                if len(take) < weight:
                    poll_at = None
            pending.append(f)
            if poll_at is None:
                poll_at = f[0] + delay
        while poll_at is not None:
            take = [pending.popleft() for _ in range(min(weight, len(pending)))]
            yield poll_at, take
            if len(take) < weight:
                poll_at = None


_IRQ, _REPOLL, _MASKED = 0, 1, 2


class PollSchedule:
    """The poll schedule of one NAPI (one RX queue), driven by frame arrivals and by what each poll's end did.

    ``push(t, frame)`` records an arrival at ``t`` ns; ``due(now)`` is the time of the next poll when it runs
    before a frame arriving at ``now`` (``None``: the input ended), else None; ``take(t)`` removes the frames
    that poll handles; ``done(t, work, timeout, masked)`` feeds back what the poll's end did: ``timeout`` the
    hrtimer ``napi_complete_done`` armed (ns, 0 = none), ``masked`` whether it left the IRQ masked (it returned
    false: napi_defer_hard_irqs with a timeout). Rules: see the comment above ``iter_polls``.
    Kernel: net/core/dev.c ``napi_poll`` (repoll after a full poll), ``napi_complete_done``, ``napi_watchdog``.
    """

    __slots__ = (
        "kind",
        "delay",
        "weight",
        "pending",
        "state",
        "timer_at",
        "burst_last",
        "last_poll",
        "end_time",
    )

    def __init__(self, poll: PollModel, weight: int) -> None:
        self.kind = poll.kind
        self.delay = int(poll.usecs * 1000)
        self.weight = weight
        self.pending: deque = deque()  # (arrival ns, frame)
        self.state = _IRQ
        self.timer_at: int | None = None
        self.burst_last = 0  # last arrival (gap: the current burst's end so far); read only after a push
        self.last_poll: int | None = None
        self.end_time = 0  # the input's last arrival, set when it ends (budget: when the rest is polled)

    def push(self, t: int, frame: tuple) -> None:
        self.pending.append((t, frame))
        self.burst_last = t

    def _rule(self, now: int | None) -> int | None:
        """The poll model's next poll time (IRQ or repoll), or None when not known yet / nothing to poll."""
        p = self.pending
        w = self.weight
        if self.kind == "rx-usecs":
            if self.state == _REPOLL:
                return self.last_poll
            return p[0][0] + self.delay if p else None
        if len(p) >= w:
            return p[w - 1][0]
        if not p and self.state != _REPOLL:
            return None
        if self.kind == "gap":
            if now is None or now - self.burst_last > self.delay:
                return self.burst_last
            return None
        return self.end_time if now is None else None

    def due(self, now: int | None) -> int | None:
        """Time of the next poll if it runs before an arrival at ``now`` (None: end of input), else None."""
        if self.state == _MASKED:
            t = self.timer_at
        else:
            t = self._rule(now)
            tm = self.timer_at
            if self.state == _IRQ and tm is not None and (t is None or tm < t):
                t = tm
        if t is None:
            return None
        if self.last_poll is not None and t < self.last_poll:
            t = self.last_poll
        return t if now is None or t < now else None

    def lower_bound(self, now: int) -> int | None:
        """The earliest time this NAPI's next poll can have (for ordering several queues); None: not before now."""
        t = self.due(now)
        if t is not None:
            return t
        if self.kind == "gap" and self.state != _MASKED and (self.pending or self.state == _REPOLL):
            # the burst's poll is at its last frame: this one, unless a frame at ``now`` continues it
            t = self.burst_last
            if self.timer_at is not None and self.state == _IRQ:
                t = min(t, self.timer_at)
            return t if self.last_poll is None else max(t, self.last_poll)
        return None

    def take(self, t: int) -> list:
        """Remove and return the frames the poll at ``t`` handles: those arrived by ``t``, at most ``weight``."""
        p = self.pending
        out: list = []
        while p and len(out) < self.weight and p[0][0] <= t:
            out.append(p.popleft()[1])
        return out

    def done(self, t: int, work: int, timeout: int, masked: bool) -> None:
        """Record the end of the poll at ``t`` that handled ``work`` frames (see the class docstring)."""
        self.last_poll = t
        if self.timer_at is not None and self.timer_at <= t:
            self.timer_at = None  # fired: it scheduled this poll, or found the NAPI scheduled
        if work == self.weight:
            self.state = _REPOLL
            return
        if timeout:
            self.timer_at = t + timeout
        self.state = _MASKED if masked else _IRQ


def ethtool_rxfh_indir_default(index: int, n_rx_rings: int) -> int:
    """The default RSS indirection table entry: ``index % n_rx_rings`` (round-robin over the RX queues).

    Kernel: include/linux/ethtool.h ``ethtool_rxfh_indir_default``.
    """
    return index % n_rx_rings


class RxQueue:
    """One RX queue of one kernel: its phys NAPI, and the gro_cells of the CPU that handles it.

    Model: one CPU per RX queue (IRQ affinity spread, no RPS/RFS): queue ``q``'s poll, the stack processing of
    what it delivers (IP → UDP → ``vxlan_rcv``/``geneve_rx``) and therefore ``gro_cells_receive`` all run on CPU
    ``q``, which queues to its own cell of each tunnel device (``this_cpu_ptr(gcells->cells)``); that cell's NAPI
    runs in the same softirq round, after the phys poll (gro-spec §6.4). Each queue has its own GRO buckets,
    rx_list and hrtimer. ``cells`` follows ``Kernel.tunnel_cells``; ``sock_cells`` the order of
    ``Kernel.udp_tunnel_sockets``.
    Kernel: net/core/gro_cells.c ``gro_cells_init`` (one cell per possible CPU), ``gro_cells_receive``.
    """

    __slots__ = ("napi", "cells", "sock_cells")

    def __init__(self, napi: Napi, cells: list[GroCells], sock_cells: list[GroCells]) -> None:
        self.napi = napi
        self.cells = cells
        self.sock_cells = sock_cells


def add_rx_queues(k: Kernel, n: int, weight: int) -> list[RxQueue]:
    """RX queues 0..n-1 of kernel ``k``: queue 0 is the kernel's own phys NAPI and cells; the others are new
    ``Napi``s on the same phys ``NetDevice`` and new cells (one per tunnel device) for their CPUs.

    The kernel core has one phys NAPI and one cell per tunnel device; ``enter_rx_queue`` switches those
    references to a queue's objects before its poll (what ``this_cpu_ptr`` would select).
    """
    socks = list(k.udp_tunnel_sockets.values())
    q0 = RxQueue(k.phys_napi, list(k.tunnel_cells), [sk.cells for sk in socks])
    queues = [q0]
    for _ in range(1, n):
        napi = Napi(k, k.phys, k._phys_deliver, weight)
        mine = {}
        for c in q0.cells:
            nc = GroCells(c.dev, None)  # type: ignore[arg-type]
            nc.napi = Napi(k, c.dev, c.napi.netif_receive_skb_list, c.napi.weight)
            mine[id(c)] = nc
        queues.append(RxQueue(napi, [mine[id(c)] for c in q0.cells], [mine[id(c)] for c in q0.sock_cells]))
    enter_rx_queue(k, q0)
    return queues


def enter_rx_queue(k: Kernel, rq: RxQueue) -> None:
    """Make ``rq``'s NAPI and its CPU's cells the ones ``k`` polls and queues to."""
    k.phys_napi = rq.napi
    k.phys.napi = rq.napi
    k.tunnel_cells = rq.cells
    for sk, cells in zip(k.udp_tunnel_sockets.values(), rq.sock_cells, strict=True):
        sk.cells = cells
    for cells in rq.cells:
        cells.dev.napi = cells.napi
