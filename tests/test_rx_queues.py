"""``--rx-queues N``: RSS spreads flows over RX queues, one phys NAPI per queue, one CPU's gro_cells per queue.

Rules:
* the NIC's RX hash picks an entry of the RSS indirection table (128 entries, low bits of the hash) and the entry
  names the queue; the default table is filled round-robin: entry i → queue i % N (include/linux/ethtool.h
  ``ethtool_rxfh_indir_default``);
* each queue has its own NAPI: its own 8 GRO buckets of at most MAX_GRO_SKBS (8) held packets (gro-spec §1.2,
  §1.5: holding a 9th packet in a full bucket completes the oldest), its own rx_list and poll schedule;
* model: one CPU per queue; the stack processing of a queue's deliveries runs on that CPU and queues to that
  CPU's cell of the tunnel device (net/core/gro_cells.c ``gro_cells_receive``: ``this_cpu_ptr``), whose NAPI runs
  after the phys poll (gro-spec §6.4);
* polls of different queues run in time order, so deliveries come out ordered by time.

Frames: TCP in VXLAN (outer UDP checksum 0), inner IPv4/TCP without options, 100 payload bytes (190 bytes from the
outer IP header at phys, 140 from the inner IP header at the tunnel device). Flows differ by the outer UDP source
port, which changes their Toeplitz hash.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import replace

from gro_replay.cli import main
from gro_replay.kernel.model import K_5_11, K_5_12
from gro_replay.kernel.nic import DEFAULT_RSS_KEY, toeplitz_hash
from gro_replay.packet.build import FrameSpec, build_flow
from gro_replay.sim import (
    PollModel,
    ReplayConfig,
    Replayer,
    ethtool_rxfh_indir_default,
    replay_frames,
)

US = 1000
SPEC = FrameSpec(payload=100, timestamps=False)


def rx_hash(sport: int, spec: FrameSpec = SPEC) -> int:
    src, dst = (ipaddress.ip_address(a).packed for a in spec.resolved_outer_addrs())
    return toeplitz_hash(DEFAULT_RSS_KEY, src + dst + sport.to_bytes(2, "big") + (4789).to_bytes(2, "big"))


def queue_of(h: int, n: int) -> int:
    """The default indirection table: entry ``h % 128``, filled round-robin over ``n`` queues."""
    return (h % 128) % n


def sports(pred, count: int) -> list[int]:
    """The first ``count`` outer UDP source ports (from 49152) whose RX hash satisfies ``pred``."""
    out = []
    for p in range(49152, 65536):
        if pred(rx_hash(p)):
            out.append(p)
            if len(out) == count:
                return out
    raise AssertionError("not enough ports")


def test_toeplitz_matches_the_rss_verification_suite():
    # Microsoft's RSS verification suite, IPv4 with TCP: 66.9.149.187:2794 → 161.142.100.80:1766 = 0x51ccc178
    data = bytes([66, 9, 149, 187, 161, 142, 100, 80]) + (2794).to_bytes(2, "big") + (1766).to_bytes(2, "big")
    assert toeplitz_hash(DEFAULT_RSS_KEY, data) == 0x51CCC178


def test_default_indirection_table_is_round_robin():
    assert [ethtool_rxfh_indir_default(i, 3) for i in range(7)] == [0, 1, 2, 0, 1, 2, 0]
    assert [ethtool_rxfh_indir_default(i, 1) for i in range(3)] == [0, 0, 0]


def test_each_queue_napi_receives_the_flows_its_table_entry_names():
    ports = list(range(49152, 49152 + 12))
    frames = []
    for k, p in enumerate(ports):
        frames += [
            (k * 10 * US + i, f) for i, f in enumerate(build_flow(replace(SPEC, udp_sport=p), [100] * 3))
        ]
    rep = Replayer(ReplayConfig(kernels=(K_5_12,), rx_queues=4))
    rep.run_polls(rep.decoded((t, b, len(b), 1) for t, b in frames))
    rep.finish()
    want = [0] * 4
    for p in ports:
        want[queue_of(rx_hash(p), 4)] += 3
    got = [sum(rq.napi.stats.results.values()) for rq in rep.queues[0]]
    assert got == want
    assert len({q for q, n in enumerate(want) if n}) > 1  # the flows really are spread
    assert rep.stats[0].stages["phys"].frames_in == 36


def _nine_flows_one_bucket():
    """9 flows whose hashes all pick GRO bucket 0 (hash & 7 == 0) and split 5/4 over queues 0 and 8 of 16."""
    q0 = sports(lambda h: h % 16 == 0, 5)
    q8 = sports(lambda h: h % 16 == 8, 4)
    ports = [p for pair in zip(q0, q8, strict=False) for p in pair] + q0[4:]
    frames = []
    specs = [build_flow(replace(SPEC, udp_sport=p), [100, 100]) for p in ports]
    # round-robin: every flow's first segment, then every flow's second one (18 frames, 1 µs apart)
    order = [specs[k][0] for k in range(9)] + [specs[k][1] for k in range(9)]
    frames = [(i * US, f) for i, f in enumerate(order)]
    return frames


def _deliveries(frames, **cfg):
    out = {"phys": [], "tunnel": []}
    cfg.setdefault("poll", PollModel("budget"))  # all 18 frames in one poll per queue (the truths below)
    replay_frames(frames, ReplayConfig(**cfg), lambda k, st, d, skb, t: out[st].append(len(skb.frames)))
    return out


def test_every_queue_has_its_own_gro_buckets():
    frames = _nine_flows_one_bucket()
    # one queue: 9 flows in one bucket of one NAPI. The 9th first segment finds the bucket full and completes the
    # oldest (gro-spec §1.5); every later segment misses its (evicted) flow and evicts again: 18 single skbs
    one = _deliveries(frames, kernels=(K_5_12,), rx_queues=1)
    assert one["phys"] == [1] * 18
    # 16 queues: 5 flows on queue 0, 4 on queue 8, each in its own NAPI's bucket 0: every flow merges its two
    sixteen = _deliveries(frames, kernels=(K_5_12,), rx_queues=16)
    assert sixteen["phys"] == [2] * 9


def test_every_cpu_has_its_own_gro_cell():
    frames = _nine_flows_one_bucket()
    # pre-fix with a zero outer checksum: phys GRO refuses (gro-spec §4.7 row 3), every frame is decapsulated and
    # queued to the CPU's cell; the tunnel bucket is the kept L4 RX hash (gro-spec §6.6), so the same 9 flows
    # share bucket 0 of the cell: one CPU evicts, two CPUs (queues 0 and 8) merge
    one = _deliveries(frames, kernels=(K_5_11,), rx_queues=1)
    assert (one["phys"], one["tunnel"]) == ([1] * 18, [1] * 18)
    sixteen = _deliveries(frames, kernels=(K_5_11,), rx_queues=16)
    assert (sixteen["phys"], sixteen["tunnel"]) == ([1] * 18, [2] * 9)


def _two_queue_flows():
    a, b = sports(lambda h: h % 2 == 0, 1)[0], sports(lambda h: h % 2 == 1, 1)[0]
    return replace(SPEC, udp_sport=a), replace(SPEC, udp_sport=b)


def test_deliveries_are_merged_in_time_order_across_queues():
    sa, sb = _two_queue_flows()
    fa, fb = build_flow(sa, [100, 100]), build_flow(sb, [100, 100])
    frames = [(0, fa[0]), (5 * US, fb[0]), (25 * US, fb[1]), (30 * US, fa[1])]
    got = []
    cfg = ReplayConfig(kernels=(K_5_12,), poll=PollModel.parse("rx-usecs:10"), rx_queues=2)
    replay_frames(frames, cfg, lambda k, st, d, skb, t: got.append((st, skb.hash % 2, t)))
    # queue 0 (flow a) polls @10 and @40, queue 1 (flow b) @15 and @35 (first frame + 10 µs each); each phys
    # delivery is followed by that CPU's cell delivering the decapsulated frame
    assert got == [
        ("phys", 0, 10 * US),
        ("tunnel", 0, 10 * US),
        ("phys", 1, 15 * US),
        ("tunnel", 1, 15 * US),
        ("phys", 1, 35 * US),
        ("tunnel", 1, 35 * US),
        ("phys", 0, 40 * US),
        ("tunnel", 0, 40 * US),
    ]
    # one queue: the poll @10 takes both first frames, the poll @35 both second ones
    got.clear()
    replay_frames(
        frames, replace(cfg, rx_queues=1), lambda k, st, d, skb, t: got.append((st, skb.hash % 2, t))
    )
    assert [t for st, _, t in got if st == "phys"] == [10 * US, 10 * US, 35 * US, 35 * US]


def test_a_queue_waits_for_an_earlier_undecided_poll_of_another():
    """gap:5 — queue 0's burst ends at 10 µs but is only known to have ended when nothing arrives on it by 15 µs;
    queue 1's full poll at 11.063 µs must still go after it."""
    sa, sb = _two_queue_flows()
    fa = build_flow(sa, [100] * 7)
    fb = build_flow(sb, [100] * 65)
    frames = [(i * 2 * US, fa[i]) for i in range(6)]  # 0, 2, …, 10 µs
    frames += [(11 * US + i, fb[i]) for i in range(64)]  # 11.000 … 11.063 µs: 64 frames, a full poll
    frames += [(12 * US, fb[64]), (20 * US, fa[6])]
    got = []
    cfg = ReplayConfig(kernels=(K_5_12,), poll=PollModel.parse("gap:5"), rx_queues=2)
    replay_frames(frames, cfg, lambda k, st, d, skb, t: st == "phys" and got.append((len(skb.frames), t)))
    assert got == [(6, 10 * US), (64, 11 * US + 63), (1, 12 * US), (1, 20 * US)]


def test_rx_queues_with_flush_timeout_follow_each_queues_timer():
    sa, sb = _two_queue_flows()
    fa, fb = build_flow(sa, [100] * 2), build_flow(sb, [100] * 2)
    frames = [(0, fa[0]), (5 * US, fb[0]), (50 * US, fa[1]), (300 * US, fb[1])]
    got = []
    cfg = ReplayConfig(
        kernels=(K_5_12,), poll=PollModel.parse("rx-usecs:10"), rx_queues=2, gro_flush_timeout_ns=100 * US
    )
    replay_frames(frames, cfg, lambda k, st, d, skb, t: st == "phys" and got.append((len(skb.frames), t)))
    # queue 0: poll @10 holds (timer @110), poll @60 merges (timer @160), empty timer poll @160 flushes 2 segments.
    # queue 1: poll @15 holds (timer @115), empty timer poll @115 flushes 1; poll @310 holds, timer @410 flushes 1
    assert got == [(1, 115 * US), (2, 160 * US), (1, 410 * US)]


def test_cli_rx_queues(runner, tmp_path):
    from gro_replay.capture.writer import PcapWriter

    sa, sb = _two_queue_flows()
    cap = tmp_path / "two.pcap"
    with PcapWriter(str(cap)) as w:
        for i, f in enumerate(build_flow(sa, [100] * 3) + build_flow(sb, [100] * 3)):
            w.write(i * US, f)
    r = runner.invoke(main, [str(cap), "--fix", "--rx-queues", "2", "--format", "json", "-q"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["config"]["rx_queues"] == 2
    assert doc["kernels"][0]["stages"]["phys"]["frames_in"] == 6
    # each flow on its own queue, each polled once at the end of the input: two aggregates of 3
    assert doc["kernels"][0]["stages"]["phys"]["segs_per_skb_hist"] == {"3": 2}
    r = runner.invoke(main, [str(cap), "--rx-queues", "0"])
    assert r.exit_code == 2 and "Traceback" not in r.stderr
