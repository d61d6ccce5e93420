"""``gro-replay explain --skbs``: per flow, stage and kernel, every skb delivered, in order, and why it ended.

Each row names the capture frames the skb carries (1-based frame numbers, as Wireshark's ``frame.number`` and
``tcpdump -#`` count every record of the capture; the segments of a super-frame split by ``--resegment`` share its
number, each segment listed: ``segments`` counts them, ``capture_frames`` the distinct numbers), the reason recorded at the decision (``NAPI_GRO_CB(skb)->why``, kernel/reasons.py) and, when a later
frame's arrival completed the held skb (a flush decided in ``dev_gro_receive`` while receiving that frame: sequence
gap, flags, merge limit, a bucket full …), which frame that was (``NAPI_GRO_CB(skb)->ended_by``, recorded beside
``why`` at the decision: kernel/gro.py ``dev_gro_receive``, kernel/tcp_offload.py ``tcp_gro_receive`` with the TCP
sequence numbers of a gap). The text and the JSON are both made from ``skb_list``'s rows.

Cached delivery events (pollcache.py) hold no end reason per skb: the observer is not ``served_from_events`` and
the replay takes the frame-by-frame path, which the document's ``engine`` says (sim/engine_path.py).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..kernel import reasons as R
from ..packet.flowsel import FlowSelector
from ..project import plural
from .verdict.words import describe_for

if TYPE_CHECKING:
    from ..kernel.model import KernelModel

#: why the replay takes the frame-by-frame path with ``--skbs`` (sim/engine_path.py ``observer_reasons``)
SKBS_REASON = (
    "explain --skbs reads each skb's end reason and the frame whose arrival ended it "
    "(NAPI_GRO_CB why, ended_by), which cached delivery events do not hold"
)

#: one delivered skb as recorded: (0-based capture indices of its frames, why, ended_by)
Recorded = tuple[tuple[int, ...], str, tuple[int, int | None, int | None] | None]


class SkbEnds:
    """``on_deliver`` observer of ``explain --skbs``: passes every delivery on to ``inner`` (explain's
    ``FlowDeliveries``) and keeps, per (kernel, stage, flow id) of the flows ``selector`` selects (None: every
    flow), the first ``skbs_max`` skbs delivered (0: every one) as ``Recorded`` tuples, and how many were delivered
    in all. Reads ``skb.cb.why`` and ``skb.cb.ended_by``, which cached events do not hold (module docstring).

    A flow is selected as explain selects it once the run is over (``packet.flowsel.select_flows`` over the
    result's flows: its key and id), decided once per flow id when its first skb is delivered, from the flow keys
    the replayer binds (``bind_flows``: the decoder's list, which flows started during the run join). Unbound (a
    caller that gives no flow keys), every flow is kept. Nothing is kept of a flow that is not explained."""

    served_from_events = False
    frame_by_frame_reason = SKBS_REASON

    def __init__(self, inner: Callable, skbs_max: int, selector: str | None = None) -> None:
        self.inner = inner
        self.skbs_max = skbs_max
        self.listed: dict[tuple[str, str, int], list[Recorded]] = defaultdict(list)
        self.delivered: Counter = Counter()
        self._select = None if selector is None else FlowSelector.parse(selector)
        self._flows: Sequence | None = None
        self._wanted: list[bool] = []  # per flow id, whether it is selected (decided in order of ids)

    def bind_flows(self, flows: Sequence) -> None:
        """Take the run's flow keys by id (the decoder's ``flows``; sim/replayer.py calls it)."""
        self._flows = flows

    def wanted(self, fid: int) -> bool:
        """Whether flow ``fid`` is explained, so that its skbs are kept (class docstring)."""
        sel, flows = self._select, self._flows
        if sel is None or flows is None or fid >= len(flows):
            return True
        ok = self._wanted
        while len(ok) <= fid:
            key = flows[len(ok)]
            # a retired flow's key is gone (None): explain retires none (cli/explain.py); kept if ever
            ok.append(key is None or sel.matches(key, len(ok)))
        return ok[fid]

    def __call__(self, kernel: str, stage: str, dev: str, skb, now_ns: int) -> None:
        self.inner(kernel, stage, dev, skb, now_ns)
        if not self.wanted(skb.flow):
            return
        key = (kernel, stage, skb.flow)
        self.delivered[key] += 1
        if not self.skbs_max or self.delivered[key] <= self.skbs_max:
            cb = skb.cb
            # copied now: the skb goes on to the tunnel device, whose GRO writes the same control block
            self.listed[key].append((tuple(skb.frames), cb.why or "unknown", cb.ended_by))


def _seq_gap(held_next: int, seq: int) -> dict:
    """The JSON of a TCP sequence gap: absolute sequence numbers and the signed distance in bytes (negative: the
    arriving segment overlaps what the held skb carries, as a retransmission does)."""
    d = (seq - held_next) & 0xFFFFFFFF
    return {"held_next_seq": held_next, "seq": seq, "bytes": d - (1 << 32) if d >= 1 << 31 else d}


def skb_row(rec: Recorded, model: KernelModel | None = None) -> dict:
    """One JSON row of ``skb_list`` from a ``Recorded`` delivery: ``frames`` (1-based frame numbers, one per
    segment: a super-frame split by ``--resegment`` repeats its number), ``segments`` (their count: the frames the
    GRO stage received) and ``capture_frames`` (the distinct numbers), the reason
    (``reason``, ``function``, ``condition``, ``description``), ``held`` (it waited in a GRO list: a later frame's
    arrival or a flush completed it; false: it went up without being held, GRO_NORMAL) and ``ended_by`` (None, or
    the frame whose arrival completed it and, for a TCP sequence gap, ``seq_gap``)."""
    frames, why, ended = rec
    function, _, condition = why.partition(":")
    by: dict[str, int | dict] | None = None
    if ended is not None:
        trigger, held_next, seq = ended
        by = {"frame": trigger + 1}
        if held_next is not None and seq is not None:
            by["seq_gap"] = _seq_gap(held_next, seq)
    return {
        "frames": [i + 1 for i in frames],
        "segments": len(frames),
        "capture_frames": len(set(frames)),
        "reason": why,
        "function": function,
        "condition": condition,
        "description": describe_for(why, model),
        "held": ended is not None or why in R.FLUSHES,
        "ended_by": by,
    }


def skb_list(obs: SkbEnds, kernel: str, stage: str, fid: int, model: KernelModel | None = None) -> dict:
    """The ``skb_list`` of one stage of one flow: ``skbs`` (rows of ``skb_row``, reasons described as a report on
    ``model`` says them, in delivery order) and ``omitted`` (skbs delivered beyond ``--skbs-max``, counted, not
    listed)."""
    key = (kernel, stage, fid)
    rows = [skb_row(r, model) for r in obs.listed.get(key, ())]
    return {"skbs": rows, "omitted": obs.delivered[key] - len(rows)}


# -- text -------------------------------------------------------------------------------------------------------------
def split_frames(rows: list[dict]) -> frozenset[int]:
    """The frame numbers listed more than once among ``rows`` (one stage's skbs): super-frames split by
    ``--resegment``, whose segments share their number (a capture frame otherwise reaches a stage in one skb)."""
    seen = Counter(n for row in rows for n in row["frames"])
    return frozenset(n for n, c in seen.items() if c > 1)


def frames_text(frames: list[int], split: frozenset[int] = frozenset()) -> str:
    """``frame 3``, ``frames 1–45``, ``frames 1, 3–5``: 1-based frame numbers, consecutive runs as ranges, each
    number once. The segments of a frame of ``split`` (a super-frame split by ``--resegment``) are said as such:
    ``frame 2 (47 segments of it)``, ``frames 1, 2 (a segment of it)``; the count is of capture frames."""
    runs: list[list[int]] = []  # [first, last, segments of last]
    for n in frames:
        if runs and n == runs[-1][1] and runs[-1][0] < n:  # a range's last number repeated: a run of its own
            runs[-1][1] = n - 1
            runs.append([n, n, 2])
        elif runs and n == runs[-1][1]:
            runs[-1][2] += 1
        elif runs and n == runs[-1][1] + 1 and runs[-1][2] == 1 and n not in split:
            runs[-1][1] = n
        else:
            runs.append([n, n, 1])
    parts = []
    for a, b, segs in runs:
        text = f"{a}" if a == b else f"{a}–{b}"
        if segs > 1 or b in split:
            text += f" ({segs} segments of it)" if segs > 1 else " (a segment of it)"
        parts.append(text)
    distinct = sum(b - a + 1 for a, b, _ in runs)
    return f"{plural(distinct, 'frame')} {', '.join(parts)}"


#: end reasons whose triggering segment merged into the skb before it ended: tcp_gro_receive lets a PSH/FIN segment
#: and one shorter than the MSS merge, then its out_check_final flushes (net/ipv4/tcp_offload.c); so a split
#: super-frame's segment that ended such an skb was its last, whichever segment it was
ENDS_WITH_ITS_TRIGGER = frozenset({R.TCP_FLAGS_PSH_FIN, R.TCP_SHORT})


def _trigger_text(row: dict, stage: str, split: frozenset[int] = frozenset()) -> str:
    """How a held skb ended: the frame whose arrival completed it (and the sequence numbers of a gap), or the
    flush that took it at the end of a poll. A frame of ``split`` is a super-frame's segments, which share its
    number: which segment arrived is not recorded (it may have merged or started the next skb)."""
    by = row["ended_by"]
    if by is None:
        return "held until the poll's flush"
    n = by["frame"]
    if n in split and n in row["frames"] and f"{row['function']}:{row['condition']}" in ENDS_WITH_ITS_TRIGGER:
        return f"ended with its last segment, of frame {n}"
    if n in split:
        arrived = f"a segment of frame {n}"
        if stage != "phys":
            arrived = f"the skb starting with {arrived}"
    elif n in row["frames"]:
        return f"ended with its last frame {n}"
    else:
        arrived = f"frame {n}" if stage == "phys" else f"the skb starting with frame {n}"
    gap = by.get("seq_gap")
    if gap is None:
        return f"ended when {arrived} arrived"
    d = gap["bytes"]
    starts = f"that segment of frame {n} starts" if n in split else f"frame {n} starts"
    between = (
        f"a gap of {d:,} {plural(d, 'byte')}" if d > 0 else f"overlapping it by {-d:,} {plural(-d, 'byte')}"
    )
    return (
        f"ended when {arrived} arrived and did not continue it (TCP sequence gap: {starts} at seq "
        f"{gap['seq']}, {frames_text(row['frames'], split)} {plural(row['capture_frames'], 'ends', 'end')} before seq "
        f"{gap['held_next_seq']}; absolute sequence "
        f"numbers, {between})"
    )


def _unheld_text(row: dict) -> str:
    """How an skb that was never held went up (GRO_NORMAL): "alone", one segment as received; or "as it arrived",
    several segments merged before this stage (at the tunnel device: an skb the phys device's GRO built, which
    dev_gro_receive passes up as it is before 5eddb24901ee, v6.1, and from it when it cannot take it further)."""
    return "went up alone" if row["segments"] == 1 else "went up as it arrived"


def skb_lines(sl: dict, stage: str, skbs_max: int) -> list[str]:
    """Text lines of one stage's ``skb_list``: one per skb in delivery order, then the count of those omitted."""
    lines = ["      skbs delivered, in order (frame numbers as Wireshark's):"]
    split = split_frames(sl["skbs"])
    for i, row in enumerate(sl["skbs"], 1):
        how = _trigger_text(row, stage, split) if row["held"] else _unheld_text(row)
        lines.append(
            f"      {i:>6,}. {frames_text(row['frames'], split)}: {how}: {row['function']}: {row['condition']}  "
            f"({row['description']})"
        )
    if sl["omitted"]:
        lines.append(
            f"      … {sl['omitted']:,} more {plural(sl['omitted'], 'skb')} not listed (--skbs-max {skbs_max}; "
            "0 lists all)"
        )
    return lines
