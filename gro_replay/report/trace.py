"""``--trace``: one line per delivered skb in the shape of perf's ``net:netif_receive_skb`` event.

Format (perf script): ``   0.000012: net:netif_receive_skb: dev=eth0 skbaddr=0xffff888100000100 len=1500``;
time in seconds from the first frame of the capture, ``len`` = ``skb->len`` at delivery (from the outer IP header
on the phys device, from the inner IP header on the tunnel device). With several kernels in one run, each line
starts with the kernel's name in perf's ``comm`` column, e.g. ``pre-fix      0.000012: net:…``.
"""

from __future__ import annotations

from operator import itemgetter
from typing import TextIO

#: a delivery's time (report/deliveries.py ``Row``)
_NOW = itemgetter(6)


class TraceWriter:
    """Writes delivery lines to ``out``; ``t0_ns`` is the capture's first timestamp; ``tag`` adds the kernel name.
    Reads ``skb.addr`` and ``skb.len`` only: the batch path may answer it from cached events (pollcache.py)."""

    served_from_events = True

    def __init__(self, out: TextIO, tag: bool) -> None:
        self.out = out
        self.tag = tag
        self.input = None
        self.lines = 0

    def bind(self, input_stats) -> None:
        """Take the time origin (first frame's timestamp) from the run's ``InputStats``."""
        self.input = input_stats

    def __call__(self, kernel: str, stage: str, dev: str, skb, now_ns: int) -> None:
        self.deliver_batch(kernel, [(stage, dev, skb.addr, skb.len, 0, [], now_ns)])

    def deliver_batch(self, kernel: str, rows: list) -> None:
        """Lines for the deliveries ``rows`` of ``kernel`` (report/deliveries.py ``Row``), in order."""
        if not rows:
            return
        first = None if self.input is None else self.input.first_ts_ns  # the time origin (ns), when known
        prefix = f"{kernel:<8}" if self.tag else ""
        times = set(map(_NOW, rows))
        if len(times) == 1:  # the deliveries of one poll, at its time: the line's start to "dev=" once
            head = self._head(prefix, first, times.pop())
            lines = [
                f"{head}{dev} skbaddr=0x{addr:x} len={length}\n"
                for _s, dev, addr, length, _f, _fr, _t in rows
            ]
        else:
            lines = [
                f"{self._head(prefix, first, now_ns)}{dev} skbaddr=0x{addr:x} len={length}\n"
                for _s, dev, addr, length, _f, _fr, now_ns in rows
            ]
        self.out.write("".join(lines))
        self.lines += len(rows)

    @staticmethod
    def _head(prefix: str, first: int | None, now_ns: int) -> str:
        """A line's start up to ``dev=``: ``prefix``, then the time (``now_ns``) in seconds from ``first``."""
        t = 0 if first is None else now_ns - first
        return f"{prefix}{t / 1e9:12.6f}: net:netif_receive_skb: dev="
