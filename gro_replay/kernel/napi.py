"""NAPI instances, devices, and the end-of-poll rules that decide when held GRO packets go up.

Kernel: net/core/dev.c ``napi_poll`` (budget exhausted: ``napi_gro_flush(n, HZ >= 1000)`` + ``gro_normal_list``),
``napi_complete_done`` (gro_flush_timeout / napi_defer_hard_irqs), ``netif_napi_add`` (weight 64),
``netif_elide_gro``. gro-spec §1.2–§1.3.
Left out: IRQ masking, busy polling, threaded NAPI scheduling details, netdev_budget (300) and its time limit
(only the order of polls matters to GRO here).
"""

from __future__ import annotations

from collections.abc import Callable

from . import reasons as R
from .gro import GRO_HASH_BUCKETS, gro_normal_list, napi_gro_flush, napi_gro_receive
from .netdevice import KernelView, NapiStats, NetDevice
from .skbuff import SkBuff

NAPI_POLL_WEIGHT = 64  #: include/linux/netdevice.h


class Napi:
    """One NAPI context: 8 GRO buckets (newest first), the GRO_NORMAL batch, and the current jiffy.

    ``deliver(batch)`` receives each list handed to ``netif_receive_skb_list_internal``.
    Kernel: struct napi_struct (include/linux/netdevice.h; ``struct gro_node`` from 2025).
    """

    def __init__(
        self,
        kernel: KernelView,
        dev: NetDevice,
        deliver: Callable[[list[SkBuff]], None],
        weight: int = NAPI_POLL_WEIGHT,
    ):
        self.kernel = kernel
        self.dev = dev
        dev.napi = self
        self.weight = weight
        self.gro_hash: list[list[SkBuff]] = [[] for _ in range(GRO_HASH_BUCKETS)]
        self.gro_count = [0] * GRO_HASH_BUCKETS
        self.rx_list: list[SkBuff] = []
        self.rx_count = 0
        self.jiffies = 0
        self.now_ns = 0
        self.defer_hard_irqs_count = 0
        self.stats = NapiStats()
        self.netif_receive_skb_list = deliver

    @property
    def gro_bitmask(self) -> int:
        """Bit i set ⇔ bucket i holds packets (derived from the bucket counts)."""
        return sum(1 << i for i, c in enumerate(self.gro_count) if c)

    def held(self) -> int:
        """Number of packets held in all buckets."""
        return sum(self.gro_count)

    def set_time(self, now_ns: int) -> None:
        """Advance the clock: ``jiffies = floor(now · HZ)``."""
        self.now_ns = now_ns
        self.jiffies = now_ns * self.kernel.hz // 1_000_000_000

    def poll(self, skbs: list[SkBuff], now_ns: int) -> int:
        """One driver poll at time ``now_ns``: up to ``weight`` skbs through ``napi_gro_receive``, then the end rules.

        Kernel: a driver's poll function + net/core/dev.c ``napi_poll`` / ``napi_complete_done``.
        Returns the gro_flush_timeout to arm (ns; 0 = none), as ``napi_complete_done`` would.
        Raises: ValueError when more than ``weight`` skbs are given.
        """
        work = len(skbs)
        if work > self.weight:
            raise ValueError(f"a poll takes at most {self.weight} skbs, got {work}")
        self.set_time(now_ns)
        self.stats.polls += 1
        for skb in skbs:
            napi_gro_receive(self, skb)
        if work == self.weight:
            self.stats.full_polls += 1
            # flush too old packets; if HZ < 1000, flush all packets
            if self.held():
                napi_gro_flush(self, self.kernel.hz >= 1000, R.BUDGET_EXHAUSTED)
            gro_normal_list(self)
            return 0
        return self.napi_complete_done(work)

    def napi_complete_done(self, work_done: int) -> int:
        """End a poll below budget. Kernel: net/core/dev.c ``napi_complete_done`` (gro-spec §1.3).

        Returns the hrtimer timeout to arm in ns (0 = none).
        """
        timeout = 0
        if work_done:
            if self.held():
                timeout = self.dev.gro_flush_timeout
            self.defer_hard_irqs_count = self.dev.napi_defer_hard_irqs
        if self.defer_hard_irqs_count > 0:
            self.defer_hard_irqs_count -= 1
            timeout = self.dev.gro_flush_timeout
        if self.held():
            napi_gro_flush(self, bool(timeout), R.POLL_END)
        gro_normal_list(self)
        return timeout
