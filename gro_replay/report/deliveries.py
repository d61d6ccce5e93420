"""Deliveries answered from cached events (the batch path, pollcache.py and sim/run_events.py), as observers see them.

An ``on_deliver`` observer that declares ``served_from_events`` reads only an skb's address, length, flow and
frames (sim/engine_path.py): the batch path hands it ``DeliveredSkb`` objects with those values. A composed poll
delivers hundreds of skbs at once (a trace line each): ``hand_over`` gives an observer that has
``deliver_batch(kernel, rows)`` the poll's deliveries of one kernel in one call, in the order the kernel delivered
them, and calls the others once per skb. Each observer's ``deliver_batch`` does for every row exactly what its
``__call__`` does for one skb (report/trace.py, report/explain.py, cli/output.py, report/pcapout.py).
"""

from __future__ import annotations

from typing import Any

#: one delivery: ``(stage, device name, skb address, skb->len (bytes), flow id, capture indices of its wire
#: frames, time (ns))``
Row = tuple[str, str, int, int, int, list[int], int]


class DeliveredSkb:
    """A delivery answered from cached events, as an observer sees it: ``addr``, ``len`` (bytes at delivery),
    ``flow`` (flow id), ``frames`` (capture indices of the wire frames it carries) — the values the reference
    path's ``SkBuff`` had. Only these: an observer that reads other fields (the pcap writer reads the bytes)
    does not declare ``served_from_events`` (sim/engine_path.py)."""

    __slots__ = ("addr", "len", "flow", "frames")

    def __init__(self, addr: int, length: int, flow: int, frames: list[int]) -> None:
        self.addr = addr
        self.len = length
        self.flow = flow
        self.frames = frames


def hand_over(observer: Any, kernel: str, rows: list[Row]) -> None:
    """Give ``observer`` (an ``on_deliver`` callable) the deliveries ``rows`` of kernel ``kernel``, in order: at
    once through its ``deliver_batch`` when it has one, else one ``DeliveredSkb`` at a time."""
    batch = getattr(observer, "deliver_batch", None)
    if batch is not None:
        batch(kernel, rows)
        return
    for stage, dev, addr, length, flow, frames, now_ns in rows:
        observer(kernel, stage, dev, DeliveredSkb(addr, length, flow, frames), now_ns)


def hand_over_kernels(stats: list, rows: list[tuple]) -> None:
    """``hand_over`` of ``rows`` ``(kernel index, kernel name, *Row)`` to each kernel's observer
    (``stats[i].on_deliver``), a kernel's consecutive rows together, in order."""
    a = 0
    for b in range(1, len(rows) + 1):
        if b == len(rows) or rows[b][0] != rows[a][0]:
            hand_over(stats[rows[a][0]].on_deliver, rows[a][1], [r[2:] for r in rows[a:b]])
            a = b
