"""gro_cells: the tunnel device's per-CPU queue and NAPI that run GRO a second time on decapsulated frames.

Kernel: net/core/gro_cells.c ``gro_cells_receive``, ``gro_cell_poll``, ``gro_cells_init`` (5.x text read in
torvalds/linux; gro-spec §6.3). One cell (single-CPU model, §6.4). Later changes need no switch: "gro_cells: Avoid
packet re-ordering for cloned skbs" (Thomas Bogendoerfer, v2 posted 2025-01-21; merge and release unverified)
only changes where a *cloned* skb goes (queued and handed to ``gro_normal_one`` instead of ``netif_rx``), and the
skbs here are never cloned; the 2025 nested-BH locking is a PREEMPT_RT change with the same queue semantics.
GRO elided on the tunnel device (``ethtool -K vxlan0 gro off``, NETIF_F_GRO clear): ``gro_cells_receive`` hands the
skb to ``netif_rx`` instead of the cell; it goes up alone from the CPU's backlog (``enqueue_to_backlog``, limit
``netdev_max_backlog``; ``process_backlog`` → ``__netif_receive_skb``), with no GRO at all.
Left out: the cloned-skb path (skbs here are never cloned), RPS.
"""

from __future__ import annotations

from collections import deque

from . import reasons as R
from .napi import Napi
from .netdevice import NetDevice
from .skbuff import SkBuff

NETDEV_MAX_BACKLOG = 1000  #: net/core/dev.c netdev_max_backlog (also caps a gro_cell queue)


class GroCells:
    """The tunnel device's cell: a queue of decapsulated skbs and the NAPI that polls it (weight 64)."""

    def __init__(self, dev: NetDevice, napi: Napi) -> None:
        self.dev = dev
        self.napi = napi
        self.napi_skbs: deque[SkBuff] = deque()
        #: skbs given to ``netif_rx`` (GRO off on the device), waiting in the CPU backlog
        self.backlog: deque[SkBuff] = deque()
        self.dropped = 0
        #: the last poll took the whole weight: the NAPI stays scheduled (``napi_poll``'s repoll list)
        self.repoll = False

    def gro_cells_receive(self, skb: SkBuff) -> bool:
        """Queue ``skb`` for the cell's NAPI; False (dropped) when the queue already exceeds the backlog.

        Kernel: net/core/gro_cells.c ``gro_cells_receive``: with GRO elided on the device (``netif_elide_gro``)
        the skb goes to ``netif_rx`` (net/core/dev.c ``enqueue_to_backlog``, the same limit) instead.
        """
        if self.dev.netif_elide_gro():
            if len(self.backlog) > NETDEV_MAX_BACKLOG:
                self.dropped += 1
                return False
            self.backlog.append(skb)
            return True
        if len(self.napi_skbs) > NETDEV_MAX_BACKLOG:
            self.dropped += 1
            return False
        self.napi_skbs.append(skb)
        return True

    def gro_cell_poll(self, now_ns: int) -> int:
        """Dequeue up to the NAPI weight and run them through GRO; end the poll as NAPI does.

        Kernel: net/core/gro_cells.c ``gro_cell_poll`` (+ ``napi_complete_done`` when below budget).
        Returns the number of skbs processed.
        """
        q = self.napi_skbs
        n = min(len(q), self.napi.weight)
        batch = [q.popleft() for _ in range(n)]
        self.napi.poll(batch, now_ns)
        return n

    def process_backlog(self, now_ns: int) -> int:
        """Hand every ``netif_rx`` skb to the stack, one by one, without GRO.

        Kernel: net/core/dev.c ``process_backlog`` → ``__netif_receive_skb``. Returns the number of skbs.
        """
        q = self.backlog
        n = len(q)
        self.napi.set_time(now_ns)
        while q:
            skb = q.popleft()
            skb.cb.why = R.GRO_CELLS_NETIF_RX
            # observation only: what completed it at the phys device does not apply here
            skb.cb.ended_by = None
            skb.cb.no_payload = False  # nor is an skb without payload counted: GRO does not run here
            self.napi.netif_receive_skb_list([skb])
        return n
