"""Pipeline wiring: one read of the frames → NIC model → poll model → every kernel model's two GRO stages.

The one-shot API (api.py) is ``replay_capture(path, config)`` / ``replay_frames(frames, config)`` returning a
``Result`` (DPDK's ``rte_gro_reassemble_burst`` tier); the stateful tier is ``kernel.Kernel`` itself. Each kernel model
gets its own skb per frame (GRO mutates skbs) built from the same decoded bytes.

Stages in order: records → (``resegment``: super-frames split into wire frames, resegment.py) → decode
(``ingest.py``) → RSS queue (``polls.py``: ``rx_queues``) → poll schedule (``iter_polls`` / ``PollSchedule``: poll
model, repolls, gro_flush_timeout and napi_defer_hard_irqs) → driver RX (``driver.py``) → ``Kernel.net_rx_action``
per poll. All streaming: memory holds the frames not yet polled, never the capture. ``replay_capture`` hands
eligible captures to the batch path (pollcache.py: blocks of frames decoded as columns, each distinct poll
simulated once), which gives the same results.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..kernel.kernel import Kernel
from ..kernel.model import KernelModel
from ..kernel.napi import Napi
from ..kernel.nic import unread_switches
from ..report.stats import (
    ConservationError,
    FlowRows,
    KernelStats,
    check_conservation,
    checks_enabled,
)
from .config import RSS_INDIR_TABLE_SIZE, ReplayConfig
from .driver import DriverRx
from .flows import FlowTracker
from .ingest import Frame, InputStats
from .notes import both_ways, input_notes
from .polls import (
    _MASKED,
    PollSchedule,
    RxQueue,
    add_rx_queues,
    enter_rx_queue,
    ethtool_rxfh_indir_default,
    iter_polls,
)
from .retiring import Retiring


@dataclass
class Result:
    """The outcome of one replay: input accounting, the config, and one ``KernelStats`` per kernel model."""

    input: InputStats
    config: ReplayConfig
    kernels: list[KernelStats]
    flows: list
    flow_classes: list[str]
    #: the batch path's poll counts (pollcache.py; None when the frame-by-frame path ran): ``polls_cached``
    #: (answered by the cache), ``polls_simulated`` (run through the kernels). Not part of the JSON document.
    batch: dict | None = None
    #: which path ran and why (sim/api.py ``engine``: path, reasons, polls, polls_cached): the JSON document's
    #: ``engine``; None for results not made by ``replay_capture``/``replay_frames`` (the kernel backend)
    engine: dict | None = None
    #: the rows of the flows retired during the replay (``report.stats.FlowRows``; ``flows[fid]`` is None for them)
    flow_rows: FlowRows | None = None
    #: the verdict the retired flows were added to (``report.verdict.Verdict.start``), completed by ``verdict_of``
    retired_verdict: object | None = None
    #: the largest number of flows tracked at once (sim/flows.py ``FlowTracker.live_max``)
    flows_live_max: int = 0
    #: what produced the counters: ``"simulator"``, or ``"kernel"`` (validate.kernel_result: the running kernel's
    #: deliveries, without end reasons or software-checksum counts)
    backend: str = "simulator"
    #: the stats of the kernels run beside those without the fix when no kernel with it ran (report/verdict/facts.py
    #: ``fix_counterfactuals``): read by the verdict alone, so that what the fix would change is measured
    counterfactuals: list[KernelStats] = field(default_factory=list)


def _kernel(m: KernelModel, config: ReplayConfig, st: KernelStats) -> Kernel:
    """Kernel model ``m`` built with the replay's devices, ports and knobs, delivering into ``st``."""
    k = Kernel(
        m,
        hz=config.hz,
        gro_normal_batch=config.gro_normal_batch,
        vxlan_ports=config.vxlan_ports,
        geneve_ports=config.geneve_ports,
        phys_dev=config.phys_dev,
        vxlan_dev=config.vxlan_dev,
        geneve_dev=config.geneve_dev,
        tunnel_metadata=config.tunnel_metadata,
        udp6_zero_csum_rx=config.udp6_zero_csum_rx,
        vxlan_gbp=config.vxlan_gbp,
        vlan_offload=config.vlan_offload,
        gro_max_size=config.gro_max_size,
        sink=st,
    )
    k.phys.gro_flush_timeout = config.gro_flush_timeout_ns
    k.phys.napi_defer_hard_irqs = config.napi_defer_hard_irqs
    k.phys.xdp_generic = config.phys_xdp_generic
    k.phys.gro = config.gro.get("phys", True)
    for cells in k.tunnel_cells:
        cells.dev.gro = config.gro.get("tunnel", True)
    k.phys_napi.weight = config.weight
    return k


class Replayer(Retiring):
    """Owns the decoder, the kernels and their stats for one run: ``run_polls(decoded(records))``, then ``finish``.

    ``Ingest`` (ingest.py) is the record → frame stage; ``driver`` (``DriverRx``) builds each poll's skbs.
    With ``rx_queues`` > 1 every kernel gets one phys NAPI per RX queue and one cell per tunnel device per queue's
    CPU (``RxQueue``); a frame goes to queue ``indir[hash % 128]`` of the default indirection table
    (``ethtool_rxfh_indir_default``); polls are formed per queue by the poll model and run in time order across
    queues, so deliveries come out ordered by time.
    """

    def __init__(self, config: ReplayConfig, on_deliver: Callable | None = None) -> None:
        config.validate()
        super().__init__(config)
        self.driver = DriverRx(config, self.decoder)
        self.stats: list[KernelStats] = []
        self.kernels: list[Kernel] = []
        selected = self._flow_ok if self._select is not None else None
        from ..report.verdict.facts import fix_counterfactuals

        #: the kernels run beside those without the fix when none with it runs (their stats after the shown ones
        #: in ``stats``, seen by no observer and no output but the verdict: ``Result.counterfactuals``)
        cfs = fix_counterfactuals(list(config.kernels), unread_switches(config.nic))
        #: the kernels the outputs show: the first ``shown`` of ``kernels`` and ``stats``
        self.shown = len(config.kernels)
        for i, m in enumerate([*config.kernels, *cfs]):
            st = KernelStats(m.name, m.release, on_deliver if i < self.shown else None, selected)
            self.stats.append(st)
            self.kernels.append(_kernel(m, config, st))
        #: per kernel, its RX queues (queue 0 is the kernel's own phys NAPI)
        self.queues: list[list[RxQueue]] = [
            add_rx_queues(k, config.rx_queues, config.weight) for k in self.kernels
        ]
        #: the batch path's poll counts when it ran (``Result.batch``)
        self.batch: dict | None = None
        #: which path ran (``Result.engine``), set by sim/api.py
        self.engine: dict | None = None
        #: polls run through the kernels (``run_poll``, ``_poll``, the empty timer polls ``_skip_idle_timer_polls``
        #: shortcuts): one per poll of a schedule, whatever the number of kernels sharing it; the frame-by-frame
        #: path's ``engine.polls`` (the batch path also runs flow runs as polls of their own: it counts its polls
        #: with ``BatchReplay.counts``)
        self.polls_run = 0
        #: a pure-shortcut switch for tests: False runs every empty deferred-timer poll one by one
        self.skip_idle_timer_polls = True
        #: live flows and their retirement (sim/flows.py); the retired flows' rows and verdict
        self.tracker = FlowTracker(config.flow_idle_timeout_ns, config.flow_close_timeout_ns)
        #: flows are retired (run_polls with a timeout, or the batch path): at the end of every poll (``poll_end``);
        #: with scheduled polls (``_run_scheduled``) as records are read instead, and per flow id its frames decoded
        #: but not yet polled are counted (``_inflight``)
        self._retiring = False
        self._retire_on_records = False
        self._own_frames = False  # ``decoded`` was called: frames of this replayer's decoder
        self._inflight: dict[int, int] = {}
        self._clock: int | None = None  # the latest frame time the tracker saw (ns): the largest so far
        self._poll_clock: int | None = None  # the same at the last polled frame
        self._polled_fids = 0  # 1 + the largest flow id polled: the flows started up to the last polled frame
        #: called ``(fid, None)`` before flow ``fid`` is retired, ``(fid, new)`` when its key moved to flow ``new``
        #: (``_restart_flow``): the batch path drops what it cached of ``fid``
        self.on_flow_change: Callable[[int, int | None], None] | None = None
        self.flow_rows = FlowRows(self.shown, config.flows_max)
        from ..report.verdict import Verdict

        self.retired_verdict = Verdict.start(
            config,
            [(m.name, m.release) for m in config.kernels],
            config.flows_max,
            selected=self._flow_ok if self._select is not None else None,
        )
        if on_deliver is not None and hasattr(on_deliver, "bind"):
            on_deliver.bind(self.input)
        if on_deliver is not None and hasattr(on_deliver, "bind_flows"):
            on_deliver.bind_flows(self.decoder.flows)  # the flow keys by id, appended to as flows start

    def run_polls(self, frames: Iterable[Frame]) -> None:
        """Run every poll of ``frames`` through every kernel (one read feeds all models).

        One RX queue without gro_flush_timeout: the poll schedule does not depend on the kernel, ``iter_polls``
        forms it once for all kernels. Otherwise ``_run_scheduled``.
        """
        cfg = self.config
        scheduled = cfg.rx_queues > 1 or bool(cfg.gro_flush_timeout_ns)
        if cfg.flow_idle_timeout_ns and self._own_frames:
            # flows are retired only when the frames are this replayer's (``decoded``): their flow ids are its
            # decoder's (validate.py replays frames another replayer decoded)
            self._retiring = True
            self._retire_on_records = scheduled
            frames = self._tracking(frames)
        if scheduled:
            self._run_scheduled(frames)
            return
        retiring = self._retiring
        for poll_time, batch in iter_polls(frames, cfg.poll, cfg.weight):
            self.run_poll(batch, poll_time)
            if retiring and batch:
                self.poll_end(max(f[0] for f in batch), max(f[3] for f in batch))

    def run_poll(self, batch: list[Frame], poll_time: int) -> None:
        """One poll of decoded frames ``batch`` at ``poll_time`` (ns) through every kernel (one RX queue)."""
        self.polls_run += 1
        shared = self.driver.poll_shared(batch)
        for i, k in enumerate(self.kernels):
            skbs = self.driver.skbs(k, batch, shared)
            phys = self.stats[i].stages["phys"]
            n = len(skbs) if self._select is None else self._selected_in(batch)
            phys.frames_in += n
            phys.skbs_in += n
            k.net_rx_action(skbs, poll_time)

    def _selected_in(self, batch: list[Frame]) -> int:
        """Frames of ``batch`` (decoded tuples) whose flow ``--flow`` selects."""
        ok = self._flow_ok
        return sum(1 for t in batch if ok[t.flow_id])

    def _run_scheduled(self, frames: Iterable[Frame]) -> None:
        """Poll schedules per RX queue (``PollSchedule``), run in time order across queues.

        Without gro_flush_timeout one schedule per queue serves every kernel; with it each kernel has its own
        (its hrtimer depends on what its GRO holds). Holds only the frames not yet polled.
        """
        cfg = self.config
        n = cfg.rx_queues
        if cfg.gro_flush_timeout_ns:
            groups = [[i] for i in range(len(self.kernels))]
        else:
            groups = [list(range(len(self.kernels)))]
        scheds = [[PollSchedule(cfg.poll, cfg.weight) for _ in range(n)] for _ in groups]
        indir = [ethtool_rxfh_indir_default(i, n) for i in range(RSS_INDIR_TABLE_SIZE)]
        clock = None
        for f in frames:
            t = f.ts_ns
            if clock is not None and t < clock:
                t = clock
            clock = t
            q = indir[f.hash % RSS_INDIR_TABLE_SIZE]
            for g, ss in zip(groups, scheds, strict=True):
                self._advance(g, ss, t)
                ss[q].push(t, f)
        for g, ss in zip(groups, scheds, strict=True):
            for s in ss:
                s.end_time = clock or 0
            self._advance(g, ss, None)

    def _advance(self, group: list[int], scheds: list[PollSchedule], now: int | None) -> None:
        """Run, in time order, every poll of ``scheds`` that happens before an arrival at ``now`` (None: all)."""
        while True:
            best = -1
            bt = 0
            for q, s in enumerate(scheds):
                d = s.due(now)
                if d is not None and (best < 0 or d < bt):
                    best, bt = q, d
            if best < 0:
                return
            if now is not None and len(scheds) > 1:
                for q, s in enumerate(scheds):
                    if q != best:
                        lb = s.lower_bound(now)
                        if lb is not None and lb < bt:
                            return  # another queue may still poll earlier: wait for its next frame
            self._poll(group, scheds[best], best, bt, now)

    def _poll(self, group: list[int], s: PollSchedule, q: int, t: int, now: int | None) -> None:
        """One poll of RX queue ``q`` at ``t`` on each kernel of ``group``; feeds the outcome back to ``s``."""
        multi = len(self.queues[group[0]]) > 1
        shown = (
            group[0] < self.shown
        )  # the counterfactual kernel's own schedule is not counted (Result.engine)
        if s.state == _MASKED and len(group) == 1 and self.skip_idle_timer_polls:
            napi = self.queues[group[0]][q].napi
            skipped = self._skip_idle_timer_polls(s, napi, t, now)
            if skipped != t and shown:  # the empty timer polls it shortcut, one per gro_flush_timeout
                self.polls_run += (skipped - t) // napi.dev.gro_flush_timeout
            t = skipped
        self.polls_run += shown
        batch = s.take(t)
        work = len(batch)
        if self._retire_on_records:
            self._polled(batch)  # once per schedule group (``_copies``)
        shared = self.driver.poll_shared(batch)
        timeout = 0
        masked = False
        for i in group:
            k = self.kernels[i]
            rq = self.queues[i][q]
            if multi:
                enter_rx_queue(k, rq)
            deferred = rq.napi.defer_hard_irqs_count
            skbs = self.driver.skbs(k, batch, shared)
            phys = self.stats[i].stages["phys"]
            n = work if self._select is None else self._selected_in(batch)
            phys.frames_in += n
            phys.skbs_in += n
            timeout = k.net_rx_action(skbs, t)
            if timeout and work < rq.napi.weight:
                # napi_complete_done returned false (IRQ left masked) when its deferral branch ran with a timeout
                masked = k.phys.napi_defer_hard_irqs > 0 if work else deferred > 0
        s.done(t, work, timeout, masked)

    @staticmethod
    def _skip_idle_timer_polls(s: PollSchedule, napi: Napi, t: int, now: int | None) -> int:
        """Shortcut of the empty timer polls of a masked NAPI: returns the time of the last one to run.

        Shortcuts running ``napi_complete_done(0)`` once per gro_flush_timeout while nothing arrives: each such
        poll only decrements ``defer_hard_irqs_count`` and re-arms the timer, and the one that finds the count at
        0 unmasks the IRQ (and flushes everything). While GRO holds packets, an empty poll's
        ``napi_gro_flush(napi, true)`` flushes only packets of older jiffies: the polls that fall in the jiffy of
        every held packet's ``age`` do nothing else, so they are skipped up to the first poll of the next jiffy,
        which runs. The cost is then bounded by frames and jiffies crossed while packets are held, never by
        duration / gro_flush_timeout. Results equal running them one by one (tests/test_poll_models.py,
        tests/test_robustness.py).
        Kernel: net/core/dev.c ``napi_complete_done``, ``napi_watchdog``; ``napi_gro_flush`` (flush_old).
        """
        first = s.pending[0][0] if s.pending else now
        if first is not None and first <= t:
            return t
        to = napi.dev.gro_flush_timeout
        count = napi.defer_hard_irqs_count
        polls = count + 1 if first is None else min(count + 1, (first - 1 - t) // to + 1)
        if napi.held():
            hz = napi.kernel.hz
            jiffy = t * hz // 1_000_000_000
            if napi.rx_list or any(skb.cb.age != jiffy for head in napi.gro_hash for skb in head):
                return t
            next_jiffy = -(-(jiffy + 1) * 1_000_000_000 // hz)  # first ns of the next jiffy
            polls = min(polls, (next_jiffy - 1 - t) // to + 2)  # the skipped ones all fall in this jiffy
        if polls <= 1:
            return t
        napi.defer_hard_irqs_count = count - (polls - 1)
        napi.stats.polls += polls - 1
        return t + (polls - 1) * to

    def finish(self) -> None:
        """Collect every RX queue's NAPI counters and every CPU's cell counters into the kernels' stage stats.

        With ``--flow`` the NAPI-wide counters (bytes GRO checksummed in software, GRO results, gro_complete
        errors) cover every flow, so they are not attributed to the selected ones: they become None (n/a),
        ``_finish_selected``.
        """
        if self._retiring and self._clock is not None and self.tracker.due(self._clock):
            self.retire_flows(self._clock)  # the flows that had ended by the last frame (nothing is held now)
        if self._retiring:  # when the flows not retired end (ended, kept by explain: ReplayConfig.flows_kept)
            tracker = self.tracker
            for fid in [*tracker.closing, *tracker.open]:
                end = tracker.ended_at(fid)
                if end is not None:
                    self.retired_verdict.ends(fid, end)
        if self._select is not None:
            self._finish_selected()
            return
        for i, k in enumerate(self.kernels):
            st = self.stats[i]
            phys = st.stages["phys"]
            tun = st.stages["tunnel"]
            # gro_cells backlog drops are already counted: the stack outcome "gro_cells_receive:backlog_full"
            for rq in self.queues[i]:
                phys.sw_csum_bytes += rq.napi.stats.sw_csum_bytes
                phys.results.update(rq.napi.stats.results)
                phys.complete_errors += rq.napi.stats.complete_errors
                for cells in rq.cells:
                    tun.sw_csum_bytes += cells.napi.stats.sw_csum_bytes
                    tun.results.update(cells.napi.stats.results)
                    tun.complete_errors += cells.napi.stats.complete_errors
            if len(self.queues[i]) > 1:
                enter_rx_queue(k, self.queues[i][0])
        if checks_enabled():
            self.check_drained()
            for st in self.stats:
                check_conservation(st)

    def check_drained(self) -> None:
        """Assert that every kernel holds nothing at the end of the input: no GRO packet in any NAPI's lists, no
        GRO_NORMAL batch, no skb in a gro_cells queue or backlog. Raises: ConservationError."""
        for i in range(len(self.kernels)):
            for q, rq in enumerate(self.queues[i]):
                for cells in [None, *rq.cells, *rq.sock_cells]:
                    napi = rq.napi if cells is None else cells.napi
                    where = f"{self.stats[i].name} queue {q} " + (
                        "phys NAPI" if cells is None else f"{cells.dev.name} cell"
                    )
                    if napi.held() or napi.rx_list:
                        raise ConservationError(f"{where}: {napi.held()} GRO packets held at end of input")
                    if cells is not None and (cells.napi_skbs or cells.backlog):
                        raise ConservationError(f"{where}: {len(cells.napi_skbs)} skbs never polled")

    def _finish_selected(self) -> None:
        """``finish`` with ``--flow``: NAPI-wide counters are None, except gro_complete errors when there were none
        at all (then the selected flows had none either); the end-of-replay checks run as in ``finish``."""
        for i, k in enumerate(self.kernels):
            st = self.stats[i]
            errors = {"phys": 0, "tunnel": 0}
            for rq in self.queues[i]:
                errors["phys"] += rq.napi.stats.complete_errors
                errors["tunnel"] += sum(c.napi.stats.complete_errors for c in rq.cells)
            for name, stage in st.stages.items():
                # None: not known for the selected flows alone (the document prints null)
                stage.sw_csum_bytes = None  # type: ignore[assignment]
                stage.results = None  # type: ignore[assignment]
                stage.complete_errors = 0 if errors[name] == 0 else None  # type: ignore[assignment]
            if len(self.queues[i]) > 1:
                enter_rx_queue(k, self.queues[i][0])
        if checks_enabled():
            self.check_drained()
            for st in self.stats:
                if all(stage.complete_errors is not None for stage in st.stages.values()):
                    check_conservation(st)

    def result(self) -> Result:
        inp = self.input
        # a Linux cooked capture says which frames the capturing host received (its sent ones are skipped: outgoing)
        if not inp.cooked_frames:
            inp.tunnel_both_ways = both_ways(self.decoder)
        inp.fragments_to_tunnel = self.decoder.fragments_to_tunnel
        input_notes(inp, self.config, self.decoder.unconfigured)
        return Result(
            self.input,
            self.config,
            self.stats[: self.shown],
            self.decoder.flows,
            self.decoder.flow_class,
            self.batch,
            self.engine,
            self.flow_rows,
            # the verdict the flows started into (their split groups: when each lived) and retired ones were added to
            self.retired_verdict if self._retiring else None,
            # without retirement every flow stays live
            self.tracker.live_max if self._retiring else sum(1 for k in self.decoder.flows if k is not None),
            counterfactuals=self.stats[self.shown :],
        )
