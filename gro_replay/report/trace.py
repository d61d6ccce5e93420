"""``--trace``: one line per delivered skb in the shape of perf's ``net:netif_receive_skb`` event.

Format (perf script): ``   0.000012: net:netif_receive_skb: dev=eth0 skbaddr=0xffff888100000100 len=1500``;
time in seconds from the first frame of the capture, ``len`` = ``skb->len`` at delivery (from the outer IP header
on the phys device, from the inner IP header on the tunnel device). With several kernels in one run, each line
starts with the kernel's name in perf's ``comm`` column, e.g. ``pre-fix      0.000012: net:…``.
"""

from __future__ import annotations

from typing import TextIO


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
        t0 = (
            self.input.first_ts_ns
            if self.input is not None and self.input.first_ts_ns is not None
            else now_ns
        )
        t = (now_ns - t0) / 1e9
        prefix = f"{kernel:<8}" if self.tag else ""
        self.out.write(
            f"{prefix}{t:12.6f}: net:netif_receive_skb: dev={dev} skbaddr=0x{skb.addr:x} len={skb.len}\n"
        )
        self.lines += 1
