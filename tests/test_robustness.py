"""The robustness reproducers of ``../shared/robustness`` (README there: what was seen, what is right), and the
kinds they are examples of.

The files are read from ``<repo>/../shared/robustness`` and their tests skip when it is absent; each kind has a
test on synthetic frames too, so that the rule holds without the shared folder. Every replay in the suite also
ends with ``report.stats.check_conservation`` and ``Replayer.check_drained`` (tests/conftest.py turns them on).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from conftest import ROOT

from gro_replay.kernel.model import K_5_11, K_5_12
from gro_replay.packet.build import FrameSpec, build_flow
from gro_replay.report.document import document
from gro_replay.report.stats import StageStats, check_conservation
from gro_replay.sim import PollModel, ReplayConfig, replay_capture, replay_frames

ROBUSTNESS = ROOT.parent / "shared" / "robustness"
US = 1000


def shared(name: str) -> Path:
    p = ROBUSTNESS / name
    if not p.exists():
        pytest.skip(f"{p} not present")
    return p


def _stage(doc: dict, stage: str, kernel: int = 0) -> dict:
    return doc["kernels"][kernel]["stages"][stage]


# -- gro_cells: a poll that takes the whole weight is followed by another (net/core/gro_cells.c) ---------------------
def test_cells_full_poll_64_delivers_every_segment() -> None:
    # 64 frames of one flow, outer checksum 0, pre-fix: the phys device delivers them one by one (udp_gro_receive
    # refuses tunnel GRO, gro-spec §4.7), so one gro_cell_poll takes exactly 64 = its weight. HZ 1000: that
    # full poll's napi_gro_flush(n, true) keeps the packets of this jiffy; the NAPI stays scheduled and its next
    # poll (0 skbs) calls napi_complete_done, which flushes them: one aggregate of all 64 segments.
    doc = document(
        replay_capture(str(shared("cells-full-poll-64.pcap")), ReplayConfig(kernels=(K_5_11,), hz=1000))
    )
    assert doc["input"]["frames_read"] == 64
    tun = _stage(doc, "tunnel")
    assert tun["frames_in"] == 64
    assert tun["segments_delivered"] == 64
    assert tun["skbs_delivered"] == 1
    assert tun["segs_per_skb_hist"] == {"64": 1}


SPEC = FrameSpec(payload=100, timestamps=False)


@pytest.mark.parametrize("n", [64, 128, 64 * 3 + 5])
def test_every_segment_delivered_in_every_poll_model_and_hz(n: int) -> None:
    """The kind: whatever the poll model, HZ, timers and RX queues, every segment in is delivered by the end.

    Pre-fix with outer checksum 0 (phys delivers singles, so gro_cells polls of exactly 64 occur) and post-fix
    (phys aggregates). Conservation is checked by Replayer.finish in the suite; here the totals are asserted too.
    """
    frames = list(zip([i * US for i in range(n)], build_flow(SPEC, [100] * n), strict=True))
    polls = ["budget", "gap:5", "gap:0.5", "rx-usecs:10", "rx-usecs:100"]
    for poll, hz, (timeout, defer), queues in itertools.product(
        polls, (100, 250, 300, 1000), ((0, 0), (20_000, 0), (20_000, 2), (1, 1000)), (1, 2)
    ):
        cfg = ReplayConfig(
            kernels=(K_5_11, K_5_12),
            poll=PollModel.parse(poll),
            hz=hz,
            gro_flush_timeout_ns=timeout,
            napi_defer_hard_irqs=defer,
            rx_queues=queues,
        )
        r = replay_frames(frames, cfg)
        for ks in r.kernels:
            check_conservation(ks)
            for stage in ("phys", "tunnel"):
                assert ks.stages[stage].segments == n, (poll, hz, timeout, defer, queues, ks.name, stage)


# -- totals from skbs, never from a capped histogram -------------------------------------------------------------------
def test_segs64_mss1_65frames_totals() -> None:
    # 65 one-byte segments of one flow, post-fix, HZ 1000: the first (full) poll keeps its 64 (this jiffy's), the
    # second adds the 65th and napi_complete_done flushes one skb of 65 segments, at phys and again at the tunnel.
    doc = document(
        replay_capture(str(shared("segs64-mss1-65frames.pcap")), ReplayConfig(kernels=(K_5_12,), hz=1000))
    )
    for stage in ("phys", "tunnel"):
        st = _stage(doc, stage)
        assert st["segments_delivered"] == 65
        assert st["segs_per_skb_max"] == 65
        assert st["segs_per_skb_mean"] == 65.0
        assert st["segs_per_skb_hist"] == {"65": 1}
        assert st["aggregates"] == 1
    (flow,) = doc["kernels"][0]["flows"]
    assert flow["phys"]["segments"] == 65
    assert flow["tunnel"]["segments"] == 65


def test_stage_totals_are_exact_beyond_the_list_bins() -> None:
    """Skbs of 1, 64, 65 and 40,000 segments: totals, max, mean and histogram count each exactly."""
    st = StageStats()
    for segs in (1, 64, 65, 40_000):
        st.skbs += 1
        if segs <= 64:
            st.hist[segs] += 1
        else:
            st.hist_over[segs] += 1
    assert st.segments == 1 + 64 + 65 + 40_000
    assert st.max_segs == 40_000
    assert st.aggregates == 3
    assert st.mean_segs == (1 + 64 + 65 + 40_000) / 4
    h = st.segs_hist
    assert len(h) == 40_001 and h[65] == 1 and h[40_000] == 1 and h.sum() == 4
    d = st.as_dict()
    assert d["segs_per_skb_hist"] == {"1": 1, "64": 1, "65": 1, "40000": 1}
    assert d["segments_delivered"] == 40_130


# -- bounded cost: idle time and held packets under a tiny gro_flush_timeout ------------------------------------------
def _count_polls(monkeypatch) -> list[int]:
    from gro_replay.kernel.kernel import Kernel

    calls = [0]
    orig = Kernel.net_rx_action

    def counted(self, skbs, now_ns):
        calls[0] += 1
        return orig(self, skbs, now_ns)

    monkeypatch.setattr(Kernel, "net_rx_action", counted)
    return calls


@pytest.mark.parametrize("poll", ["budget", "gap:5", "rx-usecs:10"])
@pytest.mark.parametrize("hz", [100, 1000])
def test_two_frames_1s_idle_time_skipped(monkeypatch, poll: str, hz: int) -> None:
    # 2 frames 1 s apart, gro_flush_timeout 1 ns, napi_defer_hard_irqs 10^6: the hrtimer re-polls every ns while
    # the count runs down (net/core/dev.c napi_complete_done/napi_watchdog). Those empty polls change nothing but
    # the count until the jiffy changes (napi_gro_flush(n, true) keeps this jiffy's packets) or the count ends:
    # skipped in O(1), so the polls simulated are bounded by the frames, not by 1 s / 1 ns.
    calls = _count_polls(monkeypatch)
    cfg = ReplayConfig(
        poll=PollModel.parse(poll), hz=hz, gro_flush_timeout_ns=1, napi_defer_hard_irqs=1_000_000
    )
    doc = document(replay_capture(str(shared("two-frames-1s.pcap")), cfg))
    assert doc["input"]["frames_read"] == 2
    assert doc["input"]["duration_ns"] == 1_000_000_000
    for k in range(2):
        for stage in ("phys", "tunnel"):
            assert _stage(doc, stage, k)["segments_delivered"] == 2
    # per kernel: a poll per frame, the empty repoll / timer poll that flushes in the next jiffy, the one that
    # ends the deferral; 2 kernels
    assert calls[0] <= 2 * 8


@pytest.mark.parametrize("hz", [100, 250, 1000])
@pytest.mark.parametrize("poll", ["budget", "gap:2", "rx-usecs:3"])
def test_skipped_timer_polls_equal_running_them_while_packets_are_held(poll: str, hz: int) -> None:
    """The shortcut with GRO holding packets gives the same deliveries, times, poll counts and deferral count as
    running every 1 µs timer poll (bursts 0.2–3 ms apart, so that held packets cross jiffies)."""
    import random

    from gro_replay.sim import Replayer

    rng = random.Random(hz)
    times: list[int] = []
    t = 0
    for _ in range(8):
        t += rng.choice([3_000_000, 1_100_000, 200_000])
        times += [t + i * US for i in range(rng.randrange(1, 70))]
    frames = list(zip(times, build_flow(SPEC, [100] * len(times)), strict=True))
    cfg = ReplayConfig(
        kernels=(K_5_11, K_5_12),
        poll=PollModel.parse(poll),
        gro_flush_timeout_ns=US,
        napi_defer_hard_irqs=2000,
        hz=hz,
    )

    def run(skip: bool):
        out = []
        rep = Replayer(cfg, lambda k, st, d, skb, t: out.append((k, st, skb.len, t)))
        rep.skip_idle_timer_polls = skip
        rep.run_polls(rep.decoded((ts, buf, len(buf), 1) for ts, buf in frames))
        rep.finish()
        napis = [rep.queues[i][0].napi for i in range(2)]
        return out, [n.stats.polls for n in napis], [n.defer_hard_irqs_count for n in napis]

    assert run(True) == run(False)


# -- resegmenting with the MSS the sender used; absurd splits refused --------------------------------------------------
def test_reseg_mss1_one_tso64k_uses_the_senders_mss() -> None:
    # A 1-byte segment, then a 65,104-byte super-frame of the same flow (inner TCP without options: 65,000 payload
    # bytes). A 1-byte write says nothing of the MSS (a Linux sender's MSS is ≥ TCP_MIN_SND_MSS = 48,
    # include/net/tcp.h): the MTU decides: 1500 − 20 (outer IP) − 8 (UDP) − 8 (VXLAN) − 14 (inner Ethernet)
    # − 20 (inner IP) − 20 (TCP) = 1410 bytes per segment, ⌈65,000 / 1410⌉ = 47 segments.
    doc = document(replay_capture(str(shared("reseg-mss1-one-tso64k.pcap")), ReplayConfig(resegment="auto")))
    inp = doc["input"]
    assert inp["frames_read"] == 2
    assert (inp["resegmented_frames"], inp["segments_created"]) == (1, 47)
    assert inp["frames_replayed"] == 48
    # the SUMMARY line says both: 2 frames read, 48 replayed (a CI reader sees why the skbs outnumber the frames)
    from gro_replay.report.document import summary_line

    r = replay_capture(str(shared("reseg-mss1-one-tso64k.pcap")), ReplayConfig(resegment="auto"))
    assert " frames=2 skipped=0 replayed=48 " in summary_line(r)
    # and batch's row (batch.json captures[]): frames read, skipped, replayed
    from gro_replay.batch import CaptureOutcome

    row = CaptureOutcome(path="x.pcap", document=doc).row()
    assert (row["frames"], row["skipped"], row["replayed"]) == (2, 0, 48)


def test_auto_takes_the_syn_mss_option_when_no_segment_says_more() -> None:
    from dataclasses import replace

    from gro_replay.packet.build import build_frame, peer_spec

    SYN = 0x02
    mss_opt = b"\x02\x04\x03\xe8"  # MSS 1000
    data = FrameSpec(flags=0x10, timestamps=False, payload=1)
    # the peer's SYN-ACK (addresses and ports swapped) announces the MSS the data's sender may use
    syn = peer_spec(data, payload=0, flags=SYN | 0x10, tcp_options=mss_opt)
    tiny = replace(data, seq=data.seq + 1)
    sup = replace(tiny, seq=tiny.seq + 1, payload=5000, flags=0x18)
    frames = [(i * US, build_frame(s)) for i, s in enumerate((syn, tiny, sup))]
    r = replay_frames(frames, ReplayConfig(kernels=(K_5_12,), resegment="auto"))
    assert (r.input.resegmented_frames, r.input.segments_created) == (1, 5)  # 5000 = 5 × 1000
    # without the SYN: the MTU's 1410 (no TCP options) → ⌈5000 / 1410⌉ = 4
    r = replay_frames(frames[1:], ReplayConfig(kernels=(K_5_12,), resegment="auto"))
    assert r.input.segments_created == 4


def test_split_below_tcp_min_snd_mss_is_refused_and_counted() -> None:
    from gro_replay.packet.build import build_frame
    from gro_replay.resegment import KEEP_MSS_TOO_SMALL, TCP_MIN_SND_MSS, Resegmenter
    from gro_replay.sim import ConfigError, parse_resegment

    sup = build_frame(FrameSpec(payload=3000, timestamps=False))
    r = Resegmenter(1500, TCP_MIN_SND_MSS - 1, (4789,), ())
    assert r.split(sup) is None
    assert r.not_split == {KEEP_MSS_TOO_SMALL: 1}
    assert len(Resegmenter(1500, TCP_MIN_SND_MSS, (4789,), ()).split(sup)) == 63  # ⌈3000 / 48⌉
    for bad in (
        "1",
        "7",
        "0",
        "65536",
        "1e3",
        "٤٨",
        "inf",
        "-48",
    ):  # 8..65535: 48 less at most 40 option bytes
        with pytest.raises(ConfigError):
            parse_resegment(bad)
    assert parse_resegment("48") == 48


# -- memory: bounded per flow, independent of the frames per flow ---------------------------------------------------
def _retained(frames) -> int:
    import gc
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    try:
        result = replay_frames(frames, ReplayConfig())
        size = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert result.input.frames_read == len(frames)
    return size


def test_memory_per_flow_is_bounded_and_does_not_grow_with_frames() -> None:
    """Each distinct flow costs the replay a bounded amount (its key, class, RSS input and, per kernel model, its
    counters: measured ~2.3 KB per kernel on CPython 3.11; ceiling asserted 3 KB, README "Input"), and a flow's
    frames cost nothing once replayed: 18,000 more frames of one flow leave at most 64 KB more."""
    import struct

    def one_flow_per_ethertype(n: int):
        return [(i * US, b"\x02" * 6 + b"\x04" * 6 + struct.pack("!H", i) + bytes(46)) for i in range(n)]

    per_flow = (_retained(one_flow_per_ethertype(4000)) - _retained(one_flow_per_ethertype(2000))) / 2000
    assert per_flow <= 2 * 3000  # two kernel models
    one = [(i * US, f) for i, f in enumerate(build_flow(SPEC, [100] * 20_000))]
    assert _retained(one) - _retained(one[:2000]) <= 64 << 10
