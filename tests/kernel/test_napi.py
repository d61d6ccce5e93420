"""net/core/dev.c end of poll (gro-spec §1.3, §1.4): ``napi_complete_done``, ``napi_poll``'s full-budget
flush, ``gro_flush_timeout`` and ``napi_defer_hard_irqs`` (gro_replay/kernel/napi.py).

From the former tests/test_kernel_rules.py:
Frames are VXLAN over IPv4 (outer UDP checksum 0 unless a test says otherwise), inner IPv4/TCP without options,
1400-byte payloads: one segment is 1490 bytes on the phys device (outer IPv4 20 + UDP 8 + VXLAN 8 + inner Ethernet
14 + inner IPv4 20 + TCP 20 = 90 header bytes) and 1440 on the tunnel device. Skbs are handed to the phys NAPI the
way a driver does (``Rig.skb``); expected values come from the kernel rule cited next to each (gro-spec section,
kernel function, commit), never from the code under test.
"""

from __future__ import annotations

from dataclasses import replace

from rule_frames import BASE, frames, specs
from test_kernel_harness import rig

from gro_replay.kernel import reasons as R
from gro_replay.kernel.model import K_6_18


# -- end of poll (§1.3, §1.4) -------------------------------------------------------------------------------------
def test_napi_complete_done_flushes_every_held_packet_when_a_poll_ends_below_budget():
    r = rig(K_6_18)
    r.poll(frames(specs(5)))
    # napi_complete_done with gro_flush_timeout 0: napi_gro_flush(n, false): 90 + 5·1400
    d = r.rec.at("phys")
    assert [x.len for x in d] == [7090] and d[0].why == R.POLL_END
    assert r.kernel.phys_napi.held() == 0


def test_napi_poll_full_budget_flushes_everything_when_hz_below_1000():
    r = rig(K_6_18, hz=250)
    r.poll(frames(specs(64, [500] * 64)))
    # napi_poll, work == weight: napi_gro_flush(n, HZ >= 1000 → false): all 64 segments, 90 + 64·500
    d = r.rec.at("phys")
    assert [x.len for x in d] == [32090] and d[0].why == R.BUDGET_EXHAUSTED


def test_napi_poll_full_budget_flushes_only_packets_older_than_this_jiffy_when_hz_1000():
    r = rig(K_6_18, hz=1000)
    a = frames(specs(64, [500] * 64, spec=replace(BASE, sport=44000)))
    b = frames(specs(64, [500] * 64, spec=replace(BASE, sport=44001)))
    r.poll(a, now_ns=100_000)  # jiffy 0
    # napi_gro_flush(n, true): __napi_gro_flush_chain stops at a packet whose age == jiffies
    assert r.rec.lens("phys") == [] and r.kernel.phys_napi.held() == 1
    r.poll(b, now_ns=1_500_000)  # jiffy 1: flow A (age 0) is old now, flow B (age 1) is not
    assert r.rec.lens("phys") == [32090] and r.rec.at("phys")[0].frames[0] == 0
    r.end(0, now_ns=1_600_000)  # a poll below budget flushes the rest
    assert r.rec.lens("phys") == [32090, 32090] and r.rec.at("phys")[1].frames[0] == 64


def test_napi_complete_done_with_gro_flush_timeout_keeps_this_jiffys_packets_until_the_timer():
    r = rig(K_6_18, hz=250)
    r.kernel.phys.gro_flush_timeout = 500_000
    skbs = [r.skb(f, ts_ns=1_000_000) for f in frames(specs(5))]
    # napi_complete_done(work 5): GRO holds packets → timeout = gro_flush_timeout; napi_gro_flush(n, true)
    assert r.kernel.net_rx_action(skbs, 1_000_000) == 500_000
    assert r.rec.lens("phys") == []
    # the hrtimer's poll finds no work: timeout 0 → full flush
    assert r.kernel.flush_timer(1_500_000) == 0
    assert r.rec.lens("phys") == [7090]


def test_napi_complete_done_napi_defer_hard_irqs_rearms_the_timer():
    r = rig(K_6_18, hz=250)
    r.kernel.phys.gro_flush_timeout = 500_000
    r.kernel.phys.napi_defer_hard_irqs = 2
    skbs = [r.skb(f, ts_ns=1_000_000) for f in frames(specs(5))]
    assert r.kernel.net_rx_action(skbs, 1_000_000) == 500_000  # defer count 2 → 1, timeout armed
    # timer poll with no work: defer count 1 → 0, timeout re-armed, only-old flush keeps the jiffy-0 packet
    assert r.kernel.flush_timer(1_500_000) == 500_000
    assert r.rec.lens("phys") == []
    assert r.kernel.flush_timer(2_000_000) == 0  # count exhausted: full flush
    assert r.rec.lens("phys") == [7090]
