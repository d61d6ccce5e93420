"""Poll models (budget, gap:US, rx-usecs:US) and the end-of-poll timers (gro_flush_timeout, napi_defer_hard_irqs).

Rules (gro-spec §1.3, §1.8; net/core/dev.c ``napi_poll``, ``napi_complete_done``, ``napi_watchdog``):
* at most ``weight`` (64) frames per driver poll; a poll that takes 64 leaves the NAPI on the repoll list, so the
  next poll follows at once, and is empty when nothing is left (``napi_complete_done(0)``);
* a full poll flushes only packets of older jiffies when HZ ≥ 1000 (``napi_gro_flush(n, HZ >= 1000)``), all
  packets otherwise; a poll below budget ends in ``napi_complete_done``: full flush unless a timeout is in use;
* ``napi_complete_done``: with GRO holding packets, timeout := gro_flush_timeout and only old packets are flushed;
  with napi_defer_hard_irqs the count is reset by every poll with work, each poll decrements it, and while it was
  positive the timeout is used and the IRQ stays masked (it returns false); the hrtimer re-polls at poll time +
  timeout and that poll takes what has arrived (at most 64);
* jiffies = floor(poll_time · HZ / 1e9); a held packet's ``age`` is the jiffy of the poll that held it.

Frames: one TCP flow in VXLAN (outer UDP checksum 0), inner IPv4/TCP without options, 100 payload bytes: 190
bytes from the outer IP header (skb->len at phys = 90 + 100·segments). Kernel 5.12 (post-fix): such frames
aggregate at the phys device (gro-spec §4.7).
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from conftest import FIX_SAMPLE

from gro_replay.kernel.model import K_5_11, K_5_12
from gro_replay.packet.build import FrameSpec, build_flow
from gro_replay.sim import (
    PollModel,
    PollSchedule,
    ReplayConfig,
    Replayer,
    iter_polls,
    replay_frames,
)

US = 1000  # ns
MS = 1_000_000
SPEC = FrameSpec(payload=100, timestamps=False)


def phys_len(segs: int) -> int:
    """skb->len at phys of an aggregate of ``segs`` 100-byte segments: 90 header bytes (outer IP … TCP)."""
    return 90 + 100 * segs


def flow(times: list[int], spec: FrameSpec = SPEC) -> list[tuple[int, bytes]]:
    return list(zip(times, build_flow(spec, [100] * len(times)), strict=True))


def phys_deliveries(frames, **cfg) -> list[tuple[int, int]]:
    """(skb->len, time in ns) of every phys-device netif_receive_skb, in order."""
    out = []
    config = ReplayConfig(kernels=(K_5_12,), **cfg)
    replay_frames(frames, config, lambda k, st, d, skb, t: st == "phys" and out.append((skb.len, t)))
    return out


def polls_of(times, poll: str, weight: int = 64):
    """iter_polls over frames ``(ts, index)``: [(poll time, [indexes])]."""
    frames = [(t, i) for i, t in enumerate(times)]
    return [(t, [f[1] for f in batch]) for t, batch in iter_polls(frames, PollModel.parse(poll), weight)]


def scheduled_polls_of(times, poll: str, weight: int = 64):
    """The same through PollSchedule with no timers (every poll end reports timeout 0, IRQ enabled)."""
    s = PollSchedule(PollModel.parse(poll), weight)
    out = []

    def advance(now):
        while (t := s.due(now)) is not None:
            batch = s.take(t)
            out.append((t, [f[1] for f in batch]))
            s.done(t, len(batch), 0, False)

    for i, t in enumerate(times):
        advance(t)
        s.push(t, (t, i))
    s.end_time = times[-1] if times else 0
    advance(None)
    return out


# -- poll boundaries and times ------------------------------------------------------------------------------------
def test_budget_polls_64_frames_at_the_time_of_the_last():
    times = [i * US for i in range(130)]
    assert polls_of(times, "budget") == [
        (63 * US, list(range(64))),
        (127 * US, list(range(64, 128))),
        (129 * US, [128, 129]),
    ]
    # a full last poll stays scheduled; its repoll finds nothing (napi_complete_done(0))
    assert polls_of(times[:128], "budget")[-1] == (127 * US, [])


def test_gap_cuts_a_poll_where_the_gap_exceeds_us():
    # gaps of exactly 5 µs stay in the poll; 5.001 µs starts a new one
    times = [0, 5 * US, 10 * US, 15 * US + 1, 16 * US]
    assert polls_of(times, "gap:5") == [(10 * US, [0, 1, 2]), (16 * US, [3, 4])]


def test_gap_bursts_longer_than_64_are_polled_64_at_a_time():
    times = [i * 10 for i in range(64)] + [5 * MS + i * 10 for i in range(70)]
    polls = polls_of(times, "gap:1")
    assert polls == [
        (630, list(range(64))),
        (630, []),  # the burst ended exactly with the full poll: the repoll is empty
        (5 * MS + 630, list(range(64, 128))),
        (5 * MS + 690, list(range(128, 134))),
    ]


def test_rx_usecs_polls_us_after_the_first_pending_frame_and_takes_what_arrived():
    # poll at 0 + 10 µs takes the frames with ts ≤ 10 µs (the one at exactly 10 µs included)
    times = [0, 3 * US, 10 * US, 10 * US + 1, 12 * US, 40 * US]
    assert polls_of(times, "rx-usecs:10") == [
        (10 * US, [0, 1, 2]),
        (10 * US + 1 + 10 * US, [3, 4]),
        (50 * US, [5]),
    ]


def test_rx_usecs_full_poll_repolls_at_once():
    # 100 frames within 99 ns: the poll at 1 µs takes 64, the repoll at the same time the other 36
    times = list(range(100))
    assert polls_of(times, "rx-usecs:1") == [(US, list(range(64))), (US, list(range(64, 100)))]
    # 64 frames, then one after the poll: the repoll at 1 µs finds nothing; the late frame gets its own IRQ poll
    times = list(range(64)) + [US + 1]
    assert polls_of(times, "rx-usecs:1") == [(US, list(range(64))), (US, []), (2 * US + 1, [64])]


def test_a_smaller_weight_caps_every_poll():
    times = list(range(10))
    assert [len(b) for _, b in polls_of(times, "budget", weight=4)] == [4, 4, 2]
    assert [len(b) for _, b in polls_of(times, "rx-usecs:1", weight=4)] == [4, 4, 2]


@pytest.mark.parametrize("poll", ["budget", "gap:3", "gap:0", "rx-usecs:2", "rx-usecs:0"])
def test_iter_polls_is_a_shortcut_of_poll_schedule(poll):
    """STYLE.md: the fast path (iter_polls) gives the same polls as the reference (PollSchedule) on random input."""
    rng = random.Random(poll)
    for _ in range(40):
        t = 0
        times = []
        for _ in range(rng.randrange(0, 300)):
            t += rng.choice([0, 0, 1, 5, 100, 900, 2500, 4000, 10_000])
            times.append(t)
        fast = polls_of(times, poll)
        assert fast == scheduled_polls_of(times, poll)
        assert all(len(b) <= 64 for _, b in fast)
        assert [i for _, b in fast for i in b] == list(range(len(times)))


# -- the jiffies a poll sees -------------------------------------------------------------------------------------
def test_full_polls_keep_this_jiffys_packets_at_hz_1000():
    # 192 frames within 192 µs: three full budget polls in jiffy 0. HZ 1000: each full poll flushes only packets
    # older than this jiffy, so the aggregate keeps growing; the empty repoll after the last (napi_complete_done(0),
    # timeout 0) flushes it: one skb of 192 segments at the last frame's time
    frames = flow([i * US for i in range(192)])
    budget = PollModel("budget")
    assert phys_deliveries(frames, hz=1000, poll=budget) == [(phys_len(192), 191 * US)]
    # HZ 250: a full poll flushes everything
    assert phys_deliveries(frames, hz=250, poll=budget) == [
        (phys_len(64), 63 * US),
        (phys_len(64), 127 * US),
    ] + [(phys_len(64), 191 * US)]


def test_a_polls_jiffy_is_taken_from_its_time():
    # frames 0..126 in jiffy 0; frame 127 (the second poll's last frame, which sets its time) at 1 ms = jiffy 1.
    # Poll 2 merges frames 64..127 into the packet held since jiffy 0; its only-old flush completes it (age 0 ≠ 1).
    # Poll 3 (jiffy 1) holds a new packet that survives its full poll and goes up at the empty repoll.
    times = [i * US for i in range(127)] + [MS + i * US for i in range(65)]
    frames = flow(times)
    assert phys_deliveries(frames, hz=1000, poll=PollModel("budget")) == [
        (phys_len(128), MS),
        (phys_len(64), MS + 64 * US),
    ]


def test_rx_usecs_repoll_merges_into_the_packet_the_full_poll_kept():
    frames = flow(list(range(100)))  # 100 frames within 100 ns
    # HZ 1000: the full poll at 1 µs keeps its (jiffy 0) packet, the repoll at 1 µs merges 36 more, then flushes
    assert phys_deliveries(frames, poll=PollModel.parse("rx-usecs:1"), hz=1000) == [(phys_len(100), US)]
    assert phys_deliveries(frames, poll=PollModel.parse("rx-usecs:1"), hz=250) == [
        (phys_len(64), US),
        (phys_len(36), US),
    ]


# -- gro_flush_timeout without deferral: the next IRQ poll or the timer, whichever comes first ----------------------
RXU = PollModel.parse("rx-usecs:10")


def burst(t0: int, n: int, seq0: int = 0) -> list[tuple[int, int]]:
    return [(t0 + i * US, seq0 + i) for i in range(n)]


def frames_at(times_seq: list[tuple[int, int]]) -> list[tuple[int, bytes]]:
    frames = build_flow(SPEC, [100] * len(times_seq))
    return [(t, frames[k]) for t, k in times_seq]


def test_no_timeout_flushes_at_every_poll_end():
    frames = frames_at(burst(0, 10) + burst(50 * US, 10, 10))
    # poll at 10 µs (first frame + 10 µs) and at 60 µs, each ending in a full flush (gro-spec §1.3 defaults)
    assert phys_deliveries(frames, poll=RXU) == [(phys_len(10), 10 * US), (phys_len(10), 60 * US)]


def test_timeout_keeps_packets_until_an_empty_poll():
    frames = frames_at(burst(0, 10) + burst(50 * US, 10, 10))
    # poll @10: GRO holds → timeout 100 µs, only-old flush keeps the jiffy-0 packet, timer @110, IRQ enabled;
    # IRQ poll @60 comes first and merges; re-arms @160; the timer's poll finds nothing: napi_complete_done(0)
    # → timeout 0 → full flush
    assert phys_deliveries(frames, poll=RXU, gro_flush_timeout_ns=100 * US) == [(phys_len(20), 160 * US)]


def test_timer_before_the_irq_poll_flushes_when_nothing_arrived():
    frames = frames_at(burst(0, 10) + burst(150 * US, 10, 10))
    # timer @110 comes before the IRQ poll @160: empty poll, full flush; then poll @160 holds, timer @260 flushes
    assert phys_deliveries(frames, poll=RXU, gro_flush_timeout_ns=100 * US) == [
        (phys_len(10), 110 * US),
        (phys_len(10), 260 * US),
    ]


def test_timer_poll_takes_the_frames_that_arrived_by_then():
    frames = frames_at(burst(0, 10) + burst(105 * US, 10, 10))
    # timer @110 (before the IRQ poll @115) takes the frames of 105..110 µs (6), merges, re-arms @210;
    # the rest (111..114 µs) get an IRQ poll at 111 + 10 µs = 121, merge, re-arm @221; empty poll @221 flushes
    assert phys_deliveries(frames, poll=RXU, gro_flush_timeout_ns=100 * US) == [(phys_len(20), 221 * US)]


# -- napi_defer_hard_irqs: the IRQ stays masked, the timer's poll is the next poll ----------------------------------
def test_defer_hard_irqs_polls_only_from_the_timer():
    frames = frames_at(burst(0, 10) + burst(20 * US, 10, 10))
    # poll @10 (work 10): count := 2, then 1; timeout; masked; timer @110. The second burst waits for it: poll
    # @110 takes 10 (count := 2 → 1, timer @210); @210 empty: count 1 → 0, still masked, only-old flush, timer
    # @310; @310 empty: count 0 → timeout 0 → full flush, IRQ enabled
    got = phys_deliveries(frames, poll=RXU, gro_flush_timeout_ns=100 * US, napi_defer_hard_irqs=2)
    assert got == [(phys_len(20), 310 * US)]
    # without deferral the IRQ poll @30 merges and the timer re-armed @130 flushes
    assert phys_deliveries(frames, poll=RXU, gro_flush_timeout_ns=100 * US) == [(phys_len(20), 130 * US)]


def test_deferred_timer_poll_takes_at_most_64():
    frames = frames_at(burst(0, 10) + burst(20 * US, 100, 10))
    # timer @110: 91 frames have arrived (20..110 µs); the poll takes 64 → full: HZ 250 flushes all (10 + 64
    # segments); the repoll @110 takes the other 27 (count := 2 → 1, timer @210); @210 takes 111..119 µs (9)
    # → 36 segments held; @310 empty (count 1 → 0, masked); @410 empty: full flush
    got = phys_deliveries(frames, poll=RXU, gro_flush_timeout_ns=100 * US, napi_defer_hard_irqs=2)
    assert got == [(phys_len(74), 110 * US), (phys_len(36), 410 * US)]


def test_defer_without_a_timeout_changes_nothing():
    frames = frames_at(burst(0, 10) + burst(50 * US, 10, 10))
    # napi_complete_done: the deferral branch sets timeout = gro_flush_timeout = 0: full flush, IRQ re-enabled
    assert phys_deliveries(frames, poll=RXU, napi_defer_hard_irqs=5) == phys_deliveries(frames, poll=RXU)


def test_each_kernel_follows_its_own_timer():
    """The pre-fix kernel holds nothing at phys (zero outer checksum, gro-spec §4.7) so arms no timer; the
    post-fix one does. Run together, each must behave exactly as when run alone."""
    frames = frames_at(burst(0, 10) + burst(105 * US, 10, 10))
    cfg = ReplayConfig(poll=RXU, gro_flush_timeout_ns=100 * US)

    def run(kernels):
        out = []
        replay_frames(
            frames,
            replace(cfg, kernels=kernels),
            lambda k, st, d, skb, t: out.append((k, st, skb.len, t)),
        )
        return out

    both = run((K_5_11, K_5_12))
    assert [x for x in both if x[0] == "pre-fix"] == run((K_5_11,))
    assert [x for x in both if x[0] == "post-fix"] == run((K_5_12,))
    # pre-fix: polls @10 and @115 (first frame 105 + 10), no timer involved; 10 singles at phys each time
    assert {(x[3]) for x in both if x[0] == "pre-fix" and x[1] == "phys"} == {10 * US, 115 * US}


def test_idle_deferral_shortcut_equals_running_every_empty_poll():
    """STYLE.md shortcut check: skipping the empty timer polls of an idle, masked NAPI changes nothing."""
    rng = random.Random(7)
    times = []
    t = 0
    for _ in range(12):
        t += rng.choice([3 * MS, 40 * MS, 200 * US])
        times += [t + i * US for i in range(rng.randrange(1, 90))]
    frames = flow(times)
    cfg = ReplayConfig(
        kernels=(K_5_12,), poll=RXU, gro_flush_timeout_ns=50 * US, napi_defer_hard_irqs=300, hz=1000
    )

    def run(skip):
        out = []
        rep = Replayer(cfg, lambda k, st, d, skb, t: out.append((st, skb.len, t)))
        rep.skip_idle_timer_polls = skip
        rep.run_polls(rep.decoded((ts, buf, len(buf), 1) for ts, buf in frames))
        rep.finish()
        napi = rep.queues[0][0].napi
        return out, napi.stats.polls, napi.defer_hard_irqs_count

    assert run(True) == run(False)


@pytest.mark.parametrize(
    "value",
    [
        "rx-usecs:1e20",
        "rx-usecs:4294967296",
        "gap:١٢",
        "gap:𝟏",
        "gap:1_000",
        "gap:nan",
        "gap:inf",
        "gap:-1",
        "",
        "gap:",
    ],
)
def test_poll_time_constants_outside_a_32_bit_decimal_number_of_us_are_one_line(value):
    """--poll's US is read as every decimal option value is (project.decimal_number: ASCII digits, no '_') and
    bounded by ethtool's rx-usecs, a __u32 of µs (include/uapi/linux/ethtool.h struct ethtool_coalesce):
    rx-usecs:1e20 ended in an OverflowError in the batch engine, exit 70, while the frame-by-frame engine ran it,
    and foreign digits or separators were read as numbers (breaker's finding); an empty value was the default."""
    from click.testing import CliRunner

    from gro_replay.cli import main

    r = CliRunner().invoke(main, [str(FIX_SAMPLE), f"--poll={value}", "-q"])
    assert r.exit_code == 2, r.output
    assert r.stderr.startswith(
        f"Error: invalid poll model {value!r}: use budget, gap:US or rx-usecs:US, US a decimal"
    )
    assert len(r.stderr.splitlines()) == 1


def test_the_largest_poll_time_constant_runs_on_both_engines():
    """rx-usecs:4294967295 (the bound): one poll 4,294,967,295 µs after the first frame takes all 17 frames of the
    fix sample, on the batch engine and on the frame-by-frame one (--rx-queues 2 with --rss none: one queue gets
    every frame); pre-fix the gate refuses all 17 (gro-spec §4.7 row 3), gro_cells merges them into 1 skb (§5.5)."""
    from click.testing import CliRunner

    from gro_replay.cli import main

    lines = []
    for extra in ([], ["--rx-queues", "2", "--rss", "none"]):
        r = CliRunner().invoke(main, [str(FIX_SAMPLE), "--poll", "rx-usecs:4294967295", "-q", *extra])
        assert r.exit_code == 0, r.output
        lines.append(r.stdout.splitlines()[-1])
        assert "kernel[pre-fix].phys_skbs=17 " in lines[-1] and "kernel[post-fix].phys_skbs=1 " in lines[-1]
    assert lines[0].split()[4:] == lines[1].split()[4:]


def test_a_poll_model_prints_its_time_constant_as_it_can_be_typed_back():
    """gap:4294967295 printed as gap:4.29497e+09 (4,294,970,000 µs, not the model that ran) and gap:-0 as
    'pause > -0 µs' (breaker's finding)."""
    assert str(PollModel.parse("gap:4294967295")) == "gap:4294967295"
    assert "pause > 4294967295 µs" in PollModel.parse("gap:4294967295").describe()
    assert (
        str(PollModel.parse("gap:-0")) == "gap:0" and str(PollModel.parse("rx-usecs:2.5")) == "rx-usecs:2.5"
    )
    assert str(PollModel.parse("GAP:1e3")) == "gap:1000"
