"""Counters collected while kernels run: per stage, per flow, per reason; and the JSON document built from them.

Integers stay integers; histograms are numpy arrays indexed by segments per skb. The JSON shape is README.md's
"JSON document"; keys are only ever added.
"""

from __future__ import annotations

import os
from collections import Counter

import numpy as np

from ..kernel import skbuff as _skbuff
from ..kernel.kernel import Sink
from ..kernel.netdevice import NetDevice
from ..kernel.skbuff import SkBuff
from . import FLOWS_MAX_DEFAULT

SCHEMA_VERSION = 1
STAGES = ("phys", "tunnel")
#: skbs of up to this many segments are counted in a list; larger ones (an skb ≤ 64 KiB of 1-byte segments holds
#: up to 65,535, BIG TCP more) in a Counter, so that every total is exact
_HIST_MAX = 64


class Counts(Counter):
    """A ``Counter`` for the counters touched per skb: the same mapping, whose ``c[key] += n`` costs about half.

    ``Counter`` defines ``__delitem__`` (deleting a missing key is no error), and a class that defines one of
    ``__setitem__``/``__delitem__`` in Python has both go through a Python-level slot: every item assignment then
    looks ``__setitem__`` up and calls it. Taking dict's own ``__delitem__`` back keeps dict's C slot for both
    (1,700 → 950 machine instructions per increment, callgrind); deleting a missing key raises KeyError, as a
    dict does. Kernel stats and flow stats count reasons, devices and stack outcomes in these.
    """

    __slots__ = ()
    __delitem__ = dict.__delitem__


class StageStats:
    """What one GRO stage (phys NAPI or the tunnel devices' gro_cells) delivered.

    ``frames_in``: wire frames (segments) that entered the stage; ``skbs``: skbs handed to the stack;
    ``segs_hist[k]``: skbs that carried k segments; ``bytes``: sum of ``skb->len`` (bytes, as the stage counts
    them: from the outer IP header on the phys device, from the inner IP header on the tunnel device);
    ``reasons``: why each delivered skb ended (the kernel condition); ``sw_csum_bytes``: bytes GRO summed in
    software (and, at phys, the normal path's UDP checks); ``complete_errors``: wire frames inside held packets
    whose ``napi_gro_complete`` chain failed and which were freed instead of delivered (net/core/dev.c v5.10
    ``napi_gro_complete``), so that ``segments == frames_in - complete_errors`` always holds.
    """

    __slots__ = (
        "frames_in",
        "skbs_in",
        "skbs",
        "hist",
        "hist_over",
        "bytes",
        "reasons",
        "sw_csum_bytes",
        "results",
        "devices",
        "complete_errors",
    )

    def __init__(self) -> None:
        self.frames_in = 0
        self.skbs_in = 0
        self.skbs = 0
        #: counted as a list (a Python int increment is cheaper than a numpy element's); ``segs_hist`` is the array
        self.hist = [0] * (_HIST_MAX + 1)
        #: skbs of more than _HIST_MAX segments, by segment count
        self.hist_over: Counter = Counts()
        self.bytes = 0
        self.reasons: Counter = Counts()
        self.sw_csum_bytes = 0
        self.results: Counter = Counts()
        self.devices: Counter = Counts()
        self.complete_errors = 0

    @property
    def segs_hist(self) -> np.ndarray:
        """``segs_hist[k]``: skbs delivered carrying k segments (int64, length max(65, largest skb + 1)); exact."""
        over = self.hist_over
        h = np.zeros(max(_HIST_MAX, max(over, default=0)) + 1, dtype=np.int64)
        h[: _HIST_MAX + 1] = self.hist
        for k, v in over.items():
            h[k] = v
        return h

    @property
    def segments(self) -> int:
        """Wire frames (segments) carried by the skbs delivered: every skb's count, none capped."""
        return sum(i * n for i, n in enumerate(self.hist) if n) + sum(
            k * n for k, n in self.hist_over.items()
        )

    @property
    def aggregates(self) -> int:
        """skbs delivered carrying 2 segments or more, merged at this stage or arrived so (``AGGREGATES_MEANS``)."""
        return sum(self.hist[2:]) + sum(self.hist_over.values())

    @property
    def max_segs(self) -> int:
        """Segments of the largest skb delivered (0: none)."""
        if self.hist_over:
            return max(self.hist_over)
        return max((i for i, n in enumerate(self.hist) if n), default=0)

    @property
    def mean_segs(self) -> float:
        return self.segments / self.skbs if self.skbs else 0.0

    def as_dict(self) -> dict:
        hist = self.segs_hist
        nz = np.nonzero(hist)[0]
        return {
            "frames_in": self.frames_in,
            "skbs_in": self.skbs_in,
            "skbs_delivered": self.skbs,
            "segments_delivered": self.segments,
            "aggregates": self.aggregates,
            "segs_per_skb_mean": round(self.mean_segs, 4),
            "segs_per_skb_max": self.max_segs,
            "segs_per_skb_hist": {str(int(i)): int(hist[i]) for i in nz},
            "bytes": self.bytes,
            "sw_csum_bytes": self.sw_csum_bytes,
            "gro_results": None
            if self.results is None
            else {k.name: v for k, v in sorted(self.results.items())},
            "end_reasons": dict(sorted(self.reasons.items())),
            "devices": dict(sorted(self.devices.items())),
            "gro_complete_errors": self.complete_errors,
        }


class FlowStats:
    """Per flow and stage: skbs and segments delivered, and why each skb ended.

    ``stack``: phys skbs by what the normal path did with them (``queued`` to a tunnel device, or a drop reason);
    ``stack_frames``: the wire frames those skbs carried, by the same outcome (frames lost on the way).
    """

    __slots__ = (
        "frames",
        "skbs",
        "segs",
        "reasons",
        "stack",
        "stack_frames",
        "id_steps",
        "splits",
        "carried",
        "carried_by",
        "empty",
        "gate_unvalidated_phys",
        "gate_unvalidated_tunnel",
        "gate_reached_phys",
        "gate_reached_tunnel",
    )

    def __init__(self) -> None:
        self.frames = 0
        self.skbs = {"phys": 0, "tunnel": 0}
        self.segs = {"phys": 0, "tunnel": 0}
        self.reasons: dict[str, Counter[str]] = {"phys": Counts(), "tunnel": Counts()}
        self.stack: Counter = Counts()
        self.stack_frames: Counter = Counts()
        #: skbs an IP ID condition ended, by (header, ID step, segments held): what the ID did (observation)
        self.id_steps: dict[str, Counter[tuple[str, int, int]]] = {"phys": Counts(), "tunnel": Counts()}
        #: skbs that started beside a held packet of this flow, by the compare that kept them apart (SPLIT_*)
        self.splits: dict[str, Counter[str]] = {"phys": Counts(), "tunnel": Counts()}
        #: frames of other flows this flow's skbs carried, and frames of this flow carried in other flows' skbs
        #: (``SkBuff.mixed``: merged at a tunnel device without tunnel metadata); ``segs`` counts each flow's own
        self.carried = {"phys": 0, "tunnel": 0}
        self.carried_by = {"phys": 0, "tunnel": 0}
        #: skbs delivered without TCP payload where GRO runs (``NapiGroCb.no_payload``, observation: tcp_gro_receive
        #: merges none such), read from the frames each skb carries (``packet.headers.tcp_payload_len``: the
        #: simulator's driver step and the kernel backend, validate.py, alike)
        self.empty = {"phys": 0, "tunnel": 0}
        #: per stage, the frames of the skbs that reached udp_gro_receive's gate with a UDP checksum of 0 but
        #: unvalidated, GRO already flushing them (``NapiGroCb.gate_unvalidated``, observation; the kernel backend's
        #: deliveries carry none): two ints, not a dict, for a flow's memory
        self.gate_unvalidated_phys = 0
        self.gate_unvalidated_tunnel = 0
        #: per stage, the frames of the skbs that reached the gate with a UDP checksum of 0, validated or not
        #: (``NapiGroCb.gate_reached``; ints as above)
        self.gate_reached_phys = 0
        self.gate_reached_tunnel = 0

    @property
    def gate_unvalidated(self) -> dict[str, int]:
        """``{"phys": …, "tunnel": …}``: ``gate_unvalidated_phys`` and ``gate_unvalidated_tunnel`` (frames)."""
        return {"phys": self.gate_unvalidated_phys, "tunnel": self.gate_unvalidated_tunnel}

    @property
    def gate_reached(self) -> dict[str, int]:
        """``{"phys": …, "tunnel": …}``: ``gate_reached_phys`` and ``gate_reached_tunnel`` (frames)."""
        return {"phys": self.gate_reached_phys, "tunnel": self.gate_reached_tunnel}


def fold_flow(into: FlowStats, f: FlowStats) -> None:
    """Add every counter of ``f`` to ``into`` (a summed row: ``flows_summary.omitted``)."""
    for s in STAGES:
        into.skbs[s] += f.skbs[s]
        into.segs[s] += f.segs[s]
        into.reasons[s].update(f.reasons[s])
        into.id_steps[s].update(f.id_steps[s])
        into.splits[s].update(f.splits[s])
        into.carried[s] += f.carried[s]
        into.carried_by[s] += f.carried_by[s]
        into.empty[s] += f.empty[s]
    into.gate_unvalidated_phys += f.gate_unvalidated_phys
    into.gate_unvalidated_tunnel += f.gate_unvalidated_tunnel
    into.gate_reached_phys += f.gate_reached_phys
    into.gate_reached_tunnel += f.gate_reached_tunnel
    into.stack.update(f.stack)
    into.stack_frames.update(f.stack_frames)


class FlowRow:
    """One flow's final counters in every kernel: ``fid``, ``key`` (decode.FlowKey), ``cls`` and ``stats`` (one
    ``FlowStats`` or None per kernel, in run order)."""

    __slots__ = ("fid", "key", "cls", "stats")

    def __init__(self, fid: int, key, cls: str, stats: list) -> None:
        self.fid, self.key, self.cls, self.stats = fid, key, cls, stats

    @property
    def rank(self) -> tuple[int, int]:
        """Order of keeping: most segments first (the flow's wire frames, as its largest count over the kernels
        has them at the phys stage), then the earlier flow."""
        return max((f.segs["phys"] for f in self.stats if f is not None), default=0), -self.fid


class FlowRows:
    """The bounded per-flow part of the report: full rows of at most ``limit`` flows (those with most segments,
    ``FlowRow.rank``), the others summed per kernel into ``omitted`` with their count, so that every total stays.

    ``offer`` takes a flow's final row (a retired flow's, or at the end of the input a live one's); memory is
    ``limit`` rows plus one summed row per kernel, whatever the number of flows offered.
    """

    def __init__(self, n_kernels: int, limit: int = FLOWS_MAX_DEFAULT) -> None:
        if limit < 0:
            raise ValueError(f"flows limit {limit} < 0")
        self.limit = limit
        self._heap: list[tuple[tuple[int, int], int, FlowRow]] = []
        #: per kernel: the summed counters of the flows not kept, and how many flows they are
        self.omitted = [FlowStats() for _ in range(n_kernels)]
        self.omitted_flows = [0] * n_kernels
        #: flows offered (kept or summed), and of those how many were retired before the end of the input
        self.offered = 0
        self.retired = 0

    def offer(self, row: FlowRow, retired: bool = False) -> None:
        """Keep ``row`` if it is among the ``limit`` largest so far, else sum it (or the row it displaces)."""
        self.offered += 1
        self.retired += retired
        self._place(row)

    def _place(self, row: FlowRow) -> None:
        import heapq

        item = (row.rank, row.fid, row)
        if len(self._heap) < self.limit:
            heapq.heappush(self._heap, item)
            return
        if self._heap and item[0] > self._heap[0][0]:
            item = heapq.heapreplace(self._heap, item)
        self._omit(item[2])

    def _omit(self, row: FlowRow) -> None:
        for i, f in enumerate(row.stats):
            if f is not None:
                fold_flow(self.omitted[i], f)
                self.omitted_flows[i] += 1

    def copy(self, limit: int | None = None) -> FlowRows:
        """An independent copy (rows are shared, never changed once offered), keeping at most ``limit`` rows
        (None or more than ``self.limit``: ``self.limit``)."""
        limit = self.limit if limit is None else min(limit, self.limit)
        c = FlowRows(len(self.omitted), limit)
        for i, f in enumerate(self.omitted):
            fold_flow(c.omitted[i], f)
        c.omitted_flows = list(self.omitted_flows)
        for _, _, r in self._heap:
            c._place(r)
        c.offered, c.retired = self.offered, self.retired
        return c

    def kept(self) -> list[FlowRow]:
        """The rows kept in full, by flow id."""
        return sorted((r for _, _, r in self._heap), key=lambda r: r.fid)


class KernelStats(Sink):
    """A ``Sink`` that counts everything one kernel model did, and optionally forwards each delivery.

    ``on_deliver(kernel_name, stage, dev_name, skb, now_ns)`` is called for every ``netif_receive_skb`` (trace and
    pcap writers subscribe through it).
    """

    def __init__(self, name: str, release: str, on_deliver=None, selected: list[bool] | None = None) -> None:
        self.name = name
        #: ``--flow``: per flow id whether it is selected (None: every flow); skbs of other flows are not counted
        #: and not forwarded to ``on_deliver``
        self.selected = selected
        self.release = release
        self.stages = {s: StageStats() for s in STAGES}
        self.flows: dict[int, FlowStats] = {}
        #: phys skbs by what the normal path did with them (``queued`` to a tunnel device, or a drop reason)
        self.stack: Counter = Counts()
        #: the wire frames those skbs carried, by the same outcome (what the verdict counts)
        self.stack_frames: Counter = Counts()
        self.on_deliver = on_deliver
        self.trace: list | None = None
        #: segments per stage of the flows retired (``retire``): their rows left ``flows``
        self.retired_segs = {"phys": 0, "tunnel": 0}
        #: ``--flow``: per stage [skbs counted, frames of flows not selected they carried too] of the skbs that GRO
        #: merged from selected and other flows' frames (``_mixed``; --flow runs frame by frame, never cached)
        self.shared = {"phys": [0, 0], "tunnel": [0, 0]}

    def retire(self, fid: int) -> FlowStats | None:
        """Take flow ``fid``'s final counters out of ``flows`` (it ended; sim/flows.py), keeping the stage sums
        ``check_conservation`` needs. Returns them, or None when this kernel counted nothing of the flow."""
        f = self.flows.pop(fid, None)
        if f is not None:
            for s in STAGES:
                self.retired_segs[s] += f.segs[s]
        return f

    def flow(self, fid: int) -> FlowStats:
        f = self.flows.get(fid)
        if f is None:
            f = self.flows[fid] = FlowStats()
        return f

    def netif_receive_skb(self, stage: str, dev: NetDevice, skb: SkBuff, now_ns: int) -> None:
        flow = skb.flow
        mine = self.selected is None or self.selected[flow]
        frames = skb.frames
        segs = len(frames)  # wire frames carried (== NAPI_GRO_CB(skb)->count for GRO packets)
        # the segments counted: under --flow the selected flows' (an skb of other flows' frames counts none)
        counted = segs if mine else 0
        if skb.mixed is not None:
            counted = self._mixed(stage, skb, segs, mine)
        if not counted:
            return
        st = self.stages[stage]
        st.skbs += 1
        if counted <= _HIST_MAX:
            st.hist[counted] += 1
        else:
            st.hist_over[counted] += 1
        st.bytes += skb.len
        if _skbuff.length_tally is not None:
            _skbuff.length_tally.append((st, "bytes", tuple(frames)))
        cb = skb.cb
        why = cb.why or "unknown"
        st.reasons[why] += 1
        st.devices[dev.name] += 1
        if mine:
            f = self.flows.get(flow)
            if f is None:
                f = self.flows[flow] = FlowStats()
            f.skbs[stage] += 1
            f.reasons[stage][why] += 1
            if cb.no_payload:
                f.empty[stage] += 1
            if getattr(cb, "gate_reached", False):
                if stage == "phys":
                    f.gate_reached_phys += segs
                    f.gate_unvalidated_phys += segs if cb.gate_unvalidated else 0
                else:
                    f.gate_reached_tunnel += segs
                    f.gate_unvalidated_tunnel += segs if cb.gate_unvalidated else 0
            if skb.mixed is None:
                f.segs[stage] += segs
            # the kernel backend's deliveries (validate.py) carry a control block with ``why`` and ``no_payload``
            split = getattr(cb, "split", None)
            if split is not None:
                f.splits[stage][split] += 1
            step = getattr(cb, "id_step", None)  # set only when an IP ID condition ended the held packet
            if step is not None and why.endswith("ip_id"):
                f.id_steps[stage][step] += 1
        if self.on_deliver is not None:
            self.on_deliver(self.name, stage, dev.name, skb, now_ns)

    def _mixed(self, stage: str, skb: SkBuff, segs: int, mine: bool) -> int:
        """An skb carrying frames of other flows too (``SkBuff.mixed``): each flow counts its own frames as
        segments; the skb is the first frame's flow's, which counts the others' frames (``carried``), and each
        other flow the frames it left in another flow's skbs (``carried_by``). ``mine``: the first frame's flow
        is counted (``--flow`` selects it); a flow not selected is not. Returns the segments counted: the
        counted flows' frames, so that under ``--flow`` the stage's segments in and delivered stay theirs."""
        assert skb.mixed is not None
        others = sum(skb.mixed.values())
        counted = 0
        unselected = 0 if mine else segs - others  # frames of flows not selected (--flow) the skb carried
        if mine:
            f = self.flows.get(skb.flow)
            if f is None:
                f = self.flows[skb.flow] = FlowStats()
            f.segs[stage] += segs - others
            f.carried[stage] += others
            counted = segs - others
        for other, n in skb.mixed.items():
            if self.selected is not None and not self.selected[other]:
                unselected += n
                continue
            o = self.flows.get(other)
            if o is None:
                o = self.flows[other] = FlowStats()
            o.segs[stage] += n
            o.carried_by[stage] += n
            counted += n
        if counted and unselected:
            shared = self.shared[stage]
            shared[0] += 1
            shared[1] += unselected
        return counted

    def stack_outcome(self, skb: SkBuff, outcome: str, sw_bytes: int) -> None:
        flow = skb.flow
        if self.selected is not None and not self.selected[flow]:
            return
        frames = len(skb.frames)
        self.stack[outcome] += 1
        self.stack_frames[outcome] += frames
        if sw_bytes:
            phys = self.stages["phys"]
            phys.sw_csum_bytes += sw_bytes
            if _skbuff.length_tally is not None:
                _skbuff.length_tally.append((phys, "sw_csum_bytes", None))
        if outcome == "queued":
            tun = self.stages["tunnel"]
            tun.skbs_in += 1
            tun.frames_in += frames
        f = self.flows.get(flow)
        if f is None:
            f = self.flows[flow] = FlowStats()
        f.stack[outcome] += 1
        f.stack_frames[outcome] += frames


#: environment variable that turns on ``check_conservation`` at the end of every replay (the test suite sets it)
CHECK_ENV = "GRO_REPLAY_CHECK_INVARIANTS"


class ConservationError(AssertionError):
    """A replay lost or invented segments: a bug in the simulation, never a property of the input."""


def checks_enabled() -> bool:
    """True when ``GRO_REPLAY_CHECK_INVARIANTS`` is set to a non-empty value other than 0."""
    return os.environ.get(CHECK_ENV, "") not in ("", "0")


def check_conservation(ks: KernelStats) -> None:
    """Assert that no segment was lost or invented by one kernel model's stages (call after the replay ended).

    Per stage, segments in = segments delivered + dropped: phys ``frames_in`` = phys segments delivered + wire
    frames freed by a failed ``napi_gro_complete`` (``complete_errors``); every skb the phys stage delivered got one
    stack outcome (queued to a tunnel device, or a drop reason); the tunnel stage received exactly the queued skbs
    and their segments, and delivered every one of those segments or freed it in ``napi_gro_complete``. Per flow,
    the segments delivered add up to the stage's. With everything drained (GRO lists flushed, gro_cells queues
    polled empty: net/core/gro_cells.c ``gro_cell_poll`` → ``napi_complete_done``), these hold exactly.
    Raises: ConservationError naming the stage and the counts.
    """
    phys, tun = ks.stages["phys"], ks.stages["tunnel"]
    for name, st in (("phys", phys), ("tunnel", tun)):
        if st.frames_in != st.segments + st.complete_errors:
            raise ConservationError(
                f"{ks.name} {name}: {st.frames_in} segments in, {st.segments} delivered, "
                f"{st.complete_errors} freed by gro_complete"
            )
        if st.skbs != sum(st.hist) + sum(st.hist_over.values()):
            raise ConservationError(f"{ks.name} {name}: {st.skbs} skbs, histogram disagrees")
        flow_segs = sum(f.segs[name] for f in ks.flows.values()) + ks.retired_segs[name]
        if flow_segs != st.segments:
            raise ConservationError(
                f"{ks.name} {name}: flows carry {flow_segs} segments, stage {st.segments}"
            )
    outcomes = sum(ks.stack.values())
    if outcomes != phys.skbs:
        raise ConservationError(f"{ks.name}: {phys.skbs} phys skbs delivered, {outcomes} stack outcomes")
    if tun.skbs_in != ks.stack.get("queued", 0):
        raise ConservationError(
            f"{ks.name}: {ks.stack.get('queued', 0)} skbs queued, tunnel took {tun.skbs_in}"
        )
