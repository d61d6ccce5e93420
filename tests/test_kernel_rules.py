"""The GRO rules of gro-spec §1–§6, each pinned by literal frames through the simulated kernels.

Frames are VXLAN over IPv4 (outer UDP checksum 0 unless a test says otherwise), inner IPv4/TCP without options,
1400-byte payloads: one segment is 1490 bytes on the phys device (outer IPv4 20 + UDP 8 + VXLAN 8 + inner Ethernet
14 + inner IPv4 20 + TCP 20 = 90 header bytes) and 1440 on the tunnel device. Skbs are handed to the phys NAPI the
way a driver does (``Rig.skb``); expected values come from the kernel rule cited next to each (gro-spec section,
kernel function, commit), never from the code under test.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from test_kernel_harness import TCP_FIN, rig

from gro_replay.kernel import reasons as R
from gro_replay.kernel.model import K_5_11, K_5_12, K_6_18
from gro_replay.kernel.nic import DEFAULT_RSS_KEY, toeplitz_hash
from gro_replay.kernel.skbuff import (
    CHECKSUM_COMPLETE,
    CHECKSUM_PARTIAL,
    CHECKSUM_UNNECESSARY,
    SKB_GSO_DODGY,
    SKB_GSO_TCP_ACCECN,
    SKB_GSO_TCP_ECN,
    SKB_GSO_TCPV4,
    SKB_GSO_UDP_TUNNEL,
)
from gro_replay.packet.build import ACK, CWR, ECE, FIN, PSH, RST, SYN, URG, FrameSpec, build_frame, flow_specs
from gro_replay.packet.csum import csum_partial, ipv4_header_checksum
from gro_replay.packet.geneve import geneve_opt

BASE = FrameSpec(timestamps=False, payload=1400)
#: the 6.10–6.17 state of inet_gro_flush (4b0ebbca3e16), before the v6.18 IP ID series
K_6_10 = replace(
    K_6_18, name="6.10", release="6.10", inet_gro_checks_outer_id=False, inet_gro_fixedid_without_df=False
)
#: 6.18 plus ab4c8b6f7fcb (2026): an incoming CWR no longer flushes by itself
K_AB4C = replace(K_6_18, name="6.18+ab4c8b6f7fcb", tcp_gro_cwr_no_flush=True)
POST = [K_5_12, K_6_18]


def specs(n: int = 3, sizes: list[int] | None = None, spec: FrameSpec = BASE, **kw) -> list[FrameSpec]:
    """``n`` contiguous segments of one flow (inner and outer IPv4 IDs incrementing from 0)."""
    return flow_specs(spec, sizes or [1400] * n, **kw)


def frames(sp: list[FrameSpec]) -> list[bytes]:
    return [build_frame(s) for s in sp]


def fix_outer_ipv4_checksum(frame: bytearray) -> bytes:
    frame[24:26] = b"\0\0"
    frame[24:26] = ipv4_header_checksum(bytes(frame[14:34])).to_bytes(2, "big")
    return bytes(frame)


# -- RX hash and buckets (§2.2; NIC RSS §7) -------------------------------------------------------------------------
def test_toeplitz_hash_matches_the_microsoft_rss_verification_suite():
    import ipaddress
    import struct

    def h(src, sport, dst, dport, ports=True):
        data = ipaddress.ip_address(src).packed + ipaddress.ip_address(dst).packed
        return toeplitz_hash(DEFAULT_RSS_KEY, data + (struct.pack("!HH", sport, dport) if ports else b""))

    # Microsoft "Verifying the RSS Hash Calculation": IPv4 and TCP/IPv4 rows under the default 40-byte key
    assert h("66.9.149.187", 2794, "161.142.100.80", 1766, ports=False) == 0x323E8FC2
    assert h("66.9.149.187", 2794, "161.142.100.80", 1766) == 0x51CCC178
    assert h("199.92.111.2", 14230, "65.69.140.83", 4739) == 0xC626B0EA
    assert h("24.19.198.95", 12898, "12.22.207.184", 38024) == 0x5C2B394A


def test_dev_gro_receive_bucket_is_skb_hash_and_7_and_prepare_compares_the_full_hash():
    r = rig(K_6_18)
    f = frames(specs(3))
    other = build_frame(replace(BASE, sport=41000))
    r.gro(f[0], hash=0x11)
    r.gro(f[1], hash=0x11)  # bucket 0x11 & 7 = 1: merged into frame 0's packet
    r.gro(f[2], hash=0x19)  # bucket 1 too, but gro_list_prepare compares all 32 hash bits: another flow
    r.gro(other, hash=0x1A)  # bucket 2
    napi = r.kernel.phys_napi
    # dev_gro_receive: bucket = skb_get_hash_raw(skb) & (GRO_HASH_BUCKETS - 1); list_add at the head
    assert r.held(1) == [(2,), (0, 1)]
    assert r.held(2) == [(3,)]
    assert napi.gro_count[:3] == [0, 2, 1]
    assert napi.gro_bitmask == 0b110


# -- MAX_GRO_SKBS, pp ordering, gro_normal_batch (§1.5–§1.7, §2.3) -----------------------------------------------
def test_gro_flush_oldest_completes_the_oldest_when_a_bucket_holds_max_gro_skbs():
    r = rig(K_6_18)
    flows = [build_frame(replace(BASE, sport=42000 + i)) for i in range(9)]
    for f in flows[:8]:
        r.gro(f)
    assert len(r.held()) == 8 and r.queued() == []
    r.gro(flows[8])
    # dev_gro_receive: count >= MAX_GRO_SKBS (8) → gro_flush_oldest completes the list tail (the oldest);
    # the count stays 8 because the new packet takes its place (gro-spec §1.5)
    assert r.queued() == [(0,)]
    assert [h[0] for h in r.held()] == [8, 7, 6, 5, 4, 3, 2, 1]
    assert r.kernel.phys_napi.gro_count[0] == 8
    # a merge never evicts: flow 5's second segment joins its held packet
    r.gro(build_frame(replace(BASE, sport=42005, seq=BASE.seq + 1400)))
    assert r.queued() == [(0,)] and len(r.held()) == 8
    r.end(10)
    d = r.rec.at("phys")
    assert d[0].frames == (0,) and d[0].why == R.MAX_GRO_SKBS
    # napi_gro_flush walks each bucket from the oldest: flows 1..8, flow 5 carrying two segments
    assert [x.frames for x in d[1:]] == [(1,), (2,), (3,), (4,), (5, 9), (6,), (7,), (8,)]
    assert r.rec.lens("phys") == [1490] * 5 + [2890] + [1490] * 3


def test_dev_gro_receive_completes_pp_before_the_skbs_own_disposition():
    r = rig(K_6_18)
    sp = specs(4, [1400, 1400, 1400, 0])
    f = frames(sp)
    for x in f[:3]:
        r.gro(x)
    # a pure ACK: tcp_gro_receive returns p as pp ((len - 1) >= mss), the ACK itself is GRO_NORMAL
    r.gro(f[3])
    # dev_gro_receive completes pp (napi_gro_complete → gro_normal_one) before the skb's own GRO_NORMAL
    # (napi_skb_finish → gro_normal_one): the aggregate precedes the ACK on rx_list (gro-spec §2.3)
    assert r.queued() == [(0, 1, 2), (3,)]
    assert r.held() == []


def test_dev_gro_receive_len_above_mss_completes_p_and_holds_the_new_segment():
    r = rig(K_6_18)
    f = frames(specs(2, [700, 1400]))
    r.gro(f[0])
    r.gro(f[1])
    # tcp_gro_receive: (len - 1) >= mss (700) → flush, pp = p; the new segment is held with mss 1400
    assert r.queued() == [(0,)]
    assert r.held() == [(1,)]


@pytest.mark.parametrize(
    ("model", "batches"),
    [
        # 8dc1c444df19 (v5.11): napi_gro_complete → gro_normal_one(napi, skb, count): a 10-segment aggregate
        # reaches gro_normal_batch (8) alone and goes up at once
        (K_5_11, [[10], [10], [10]]),
        # v5.10.13: one per skb, so the three aggregates wait for the poll's end (gro_normal_list)
        (replace(K_5_11, gro_normal_counts_segs=False), [[10, 10, 10]]),
    ],
)
def test_gro_normal_one_counts_segments_of_a_completed_aggregate(model, batches):
    r = rig(model, nic="unnecessary-tunnel")  # level 1: aggregated at phys even pre-fix (gro-spec §4.7 row 5)
    r.record_batches()
    f = []
    for i in range(3):
        sp = specs(10, spec=replace(BASE, sport=43000 + i))
        sp[9] = replace(sp[9], flags=ACK | PSH)  # PSH ends each aggregate at its 10th segment
        f += frames(sp)
    r.poll(f)
    assert r.batches == batches


def test_gro_normal_one_delivers_a_batch_of_eight_plain_skbs():
    r = rig(K_6_18)
    r.record_batches()
    acks = [build_frame(replace(BASE, payload=0, ack=100 + i)) for i in range(9)]
    r.poll(acks)
    # pure ACKs are GRO_NORMAL (one segment each): the 8th fills gro_normal_batch, the 9th goes at poll end
    assert r.batches == [[1] * 8, [1]]


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


# -- the 64 KiB limit and gro_max_size (§5.6) --------------------------------------------------------------------
@pytest.mark.parametrize("model", POST)
@pytest.mark.parametrize(("last", "expected"), [(1445, [65535]), (1446, [64090, 1536])])
def test_skb_gro_receive_limit_counts_from_the_phys_outer_ip_header(model, last, expected):
    r = rig(model)
    r.poll(frames(specs(9, [8000] * 8 + [last])))
    # p->len (90 + 8·8000 = 64090) + len ≥ 65536 → -E2BIG: 64090 + 1445 = 65535 merges, + 1446 does not
    assert r.rec.lens("phys") == expected


@pytest.mark.parametrize(("last", "expected"), [(1495, [65535]), (1496, [64040, 1536])])
def test_skb_gro_receive_limit_counts_from_the_tunnel_inner_ip_header(last, expected):
    r = rig(K_5_11)  # pre-fix, outer checksum 0, NONE: aggregated by gro_cells (gro-spec §4.7 row 1)
    r.poll(frames(specs(9, [8000] * 8 + [last])))
    # on the vxlan device p->len starts at the inner IP header: 40 + 64000 + 1495 = 65535 merges
    assert r.rec.lens("phys") == [8090] * 8 + [last + 90]
    assert r.rec.lens("tunnel") == expected


@pytest.mark.parametrize(("model", "expected"), [(K_6_18, [32290, 32290]), (K_5_12, [64490])])
def test_skb_gro_receive_gro_max_size_from_eac1b93c14d6(model, expected):
    r = rig(model, gro_max_size=32768)
    r.poll(frames(specs(46)))
    # eac1b93c14d6 (v5.17): dev->gro_max_size (netif_set_gro_max_size also sets gro_ipv4_max_size ≤ 64 KiB):
    # 90 + 23·1400 = 32290, one more would reach 33690; before it the limit is the fixed 65536
    assert r.rec.lens("phys") == expected


def test_skb_gro_receive_ipv4_uses_gro_ipv4_max_size_from_b1a78b9b9886():
    r = rig(K_6_18, gro_max_size=131072)
    r.poll(frames(specs(64)))
    # b1a78b9b9886 (v6.3): an IPv4 p is bounded by gro_ipv4_max_size, which netif_set_gro_max_size leaves at
    # 65536 for sizes above it: 46 segments (64490) then 18 (25290), as with the defaults
    assert r.rec.lens("phys") == [64490, 25290]


def test_skb_gro_receive_beyond_legacy_size_when_gro_ipv4_max_size_allows_it():
    r = rig(K_6_18, gro_ipv4_max_size=131072)
    r.poll(frames(specs(64)))
    # b1a78b9b9886 text: beyond GRO_LEGACY_MAX_SIZE the merge needs NAPI_GRO_CB(skb)->proto == TCP (the innermost
    # protocol) and !p->encapsulation (set only at completion on this software path): 90 + 64·1400 = 89690
    d = r.rec.at("phys")
    assert [x.len for x in d] == [89690]
    assert d[0].head[2:4] == b"\0\0"  # iph_set_totlen: tot_len 0 beyond IP_MAX_MTU


# -- GSO skbs entering GRO (§2.4, §6.6) --------------------------------------------------------------------------
def _gso_skb(r, payload: int, gso_size: int, gso_type: int):
    skb = r.skb(build_frame(replace(BASE, payload=payload)))
    skb.gso_size, skb.gso_segs, skb.gso_type = gso_size, payload // gso_size, gso_type
    return skb


@pytest.mark.parametrize(
    ("model", "dodgy", "held"),
    [
        (K_5_12, False, False),  # ≤ 6.0: NAPI_GRO_CB(skb)->flush = skb_is_gso(skb)
        (K_6_18, False, True),  # 5eddb24901ee (v6.1): count = gso_segs, TCP GSO may be held
        (K_6_18, True, False),  # 7871f54e3dee (v6.2): DODGY GSO is still flushed
        (replace(K_6_18, gro_flushes_dodgy_gso=False), True, True),  # v6.1.0 before the DODGY fix
    ],
)
def test_dev_gro_receive_gso_skb(model, dodgy, held):
    from gro_replay.kernel.gro import GroResult, napi_gro_receive

    r = rig(model)
    skb = _gso_skb(r, 2800, 1400, SKB_GSO_TCPV4 | SKB_GSO_UDP_TUNNEL | (SKB_GSO_DODGY if dodgy else 0))
    ret = napi_gro_receive(r.kernel.phys_napi, skb)
    assert (ret == GroResult.GRO_HELD) is held
    if held:
        # tcp_gro_receive: len 2800 == count (2) · gso_size → not final; the held packet counts 2 segments
        assert r.kernel.phys_napi.gro_hash[0][0].cb.count == 2


def test_dev_gro_receive_non_tcp_gso_skb_is_flushed_from_6_1():
    from gro_replay.kernel.gro import GroResult, napi_gro_receive

    r = rig(K_6_18)
    skb = _gso_skb(r, 2800, 1400, SKB_GSO_UDP_TUNNEL)
    # 5eddb24901ee: "Only support TCP" — !skb_is_gso_tcp(skb) → flush
    assert napi_gro_receive(r.kernel.phys_napi, skb) == GroResult.GRO_NORMAL


@pytest.mark.parametrize(
    ("head_frag", "segs", "frag_list"), [(False, 2, True), (True, 18, False), (True, 19, True)]
)
def test_skb_gro_receive_frag_list_use_depends_on_the_driver_buffers(head_frag, segs, frag_list):
    r = rig(K_6_18, head_frag=head_frag)
    r.poll(frames(specs(segs)))
    # skb_gro_receive: a kmalloc'd linear head is chained on the frag_list at once ("merge:"); a head_frag skb's
    # head is stolen into the last skb's frags while nr_frags + 1 ≤ MAX_SKB_FRAGS (17): p plus 17 stolen heads
    d = r.rec.at("phys")
    assert [(x.segs, x.frag_list) for x in d] == [(segs, frag_list)]


@pytest.mark.parametrize(
    ("model", "head_frag", "tunnel", "why"),
    [
        # ≤ 6.0: dev_gro_receive flushes a GSO skb (gro-spec §6.6)
        (K_5_12, True, [2840, 2840], R.GSO_SKB),
        # 5eddb24901ee: same gso_size (1400), contiguous: merged on the vxlan device, completed at poll end
        (K_6_18, True, [5640], R.POLL_END),
        # veth-like buffers: each aggregate carries a frag_list, and skb_has_frag_list → flush
        (K_6_18, False, [2840, 2840], R.FRAG_LIST),
    ],
)
def test_dev_gro_receive_on_the_tunnel_device_with_a_gso_aggregate(model, head_frag, tunnel, why):
    r = rig(model, head_frag=head_frag, tunnel_metadata=False)
    sp = specs(4)
    sp[2:] = [replace(s, udp_sport=49153) for s in sp[2:]]  # two phys aggregates (outer ports differ)
    r.poll(frames(sp))
    assert r.rec.lens("phys") == [2890, 2890]
    assert r.rec.lens("tunnel") == tunnel
    assert {d.why for d in r.rec.at("tunnel")} == {why}


# -- IPv4 (§3.1, §3.3) -------------------------------------------------------------------------------------------
def _three(r, f):
    r.gro(f[0])
    r.gro(f[1])
    after1 = (r.queued(), r.held())
    r.gro(f[2])
    return after1, (r.queued(), r.held())


#: rules that make the held packet "same flow, must not merge": p completed, the new segment becomes the head
FLUSH_P = ([(0,)], [(1,)]), ([(0,)], [(1, 2)])


@pytest.mark.parametrize("model", [K_5_11.with_name("pre"), K_5_12, K_6_18])
@pytest.mark.parametrize(
    "change",
    [
        {"ttl": 63},  # inet_gro_receive (≤6.9) / inet_gro_flush (≥6.10): ttl must match
        {"tos": 4},  # tos must match
        {"tos": 1},  # … ECN bits included (selftest ip_ecn)
        {"df": False},  # DF must match
        {"outer_ttl": 63},  # the outer header's fields too
        {"outer_tos": 8},
    ],
    ids=str,
)
def test_inet_gro_receive_header_field_change_flushes_the_held_packet(model, change):
    r = rig(model, nic="unnecessary-tunnel")  # level 1 so that the pre-fix kernel aggregates at phys
    sp = specs(3)
    sp[1:] = [replace(s, **change) for s in sp[1:]]
    assert _three(r, frames(sp)) == FLUSH_P


@pytest.mark.parametrize("model", POST)
@pytest.mark.parametrize(
    "change",
    [{"ip_options": b"\x01\x01\x01\x01"}, {"mf": True}, {"frag_off": 1}, {"ip_csum": "bad"}],
    ids=["options", "mf", "frag_offset", "bad_header_csum"],
)
def test_inet_gro_receive_own_header_flush_overtakes_the_held_packet(model, change):
    r = rig(model)
    sp = specs(3)
    sp[1] = replace(sp[1], **change)
    # version/IHL byte != 0x45, ip_is_fragment, ip_fast_csum: goto out, flush on the skb only — the held packet of
    # the flow stays (gro-spec §3.1 notes); frame 2 then finds a sequence gap and completes it
    assert _three(r, frames(sp)) == (([(1,)], [(0,)]), ([(1,), (0,)], [(2,)]))


@pytest.mark.parametrize("model", POST)
@pytest.mark.parametrize("how", ["padding", "reserved_frag_bit"])
def test_inet_gro_receive_tot_len_or_reserved_bit_flushes_skb_and_completes_p(model, how):
    r = rig(model)
    f = frames(specs(3))
    if how == "padding":
        f[1] = f[1] + b"\0\0\0\0"  # Ethernet padding after the outer datagram: tot_len != skb_gro_len
    else:
        b = bytearray(f[1])
        b[20] |= 0x80  # outer frag_off bit 15 (reserved): (id & ~IP_DF) is non-zero
        f[1] = fix_outer_ipv4_checksum(b)
    # ≤6.9 the own flush is also OR-ed into p->flush; ≥6.10 only into the skb's, and skb_gro_receive refuses a
    # flushed skb: either way tcp_gro_receive returns p as pp and the skb itself is GRO_NORMAL
    assert _three(r, f)[0] == ([(0,), (1,)], [])


@pytest.mark.parametrize(
    ("model", "outer_df", "ids", "merged"),
    [
        # outer DF set, outer IDs neither fixed nor incrementing
        (K_5_12, True, [7, 300, 12], True),  # ≤6.9: the inner header's verdict overwrites the outer one
        (K_6_10, True, [7, 300, 12], True),  # 4b0ebbca3e16: outer ID ignored when the outer DF is set
        (K_6_18, True, [7, 300, 12], False),  # 21f7484220ac: outer IDs must be fixed or incrementing
        # outer DF clear, incrementing: every version merges
        (K_5_12, False, [5, 6, 7], True),
        (K_6_18, False, [5, 6, 7], True),
        # outer DF clear, fixed
        (K_5_12, False, [5, 5, 5], False),  # DF clear → the ID must increment by count
        (K_6_10, False, [5, 5, 5], False),
        (K_6_18, False, [5, 5, 5], True),  # f095a358faf2: fixed IDs no longer need DF
    ],
)
def test_inet_gro_flush_outer_ip_id_rules(model, outer_df, ids, merged):
    r = rig(model)
    sp = [replace(s, outer_df=outer_df, outer_ip_id=i) for s, i in zip(specs(3), ids, strict=True)]
    r.poll(frames(sp))
    assert r.rec.lens("phys") == ([4290] if merged else [1490] * 3)


@pytest.mark.parametrize(
    ("model", "gso_fixedid"),
    [(K_5_12, True), (K_6_18, True)],
)
def test_tcp4_gro_complete_marks_fixed_inner_ids(model, gso_fixedid):
    from gro_replay.kernel.skbuff import SKB_GSO_TCP_FIXEDID, SKB_GSO_TCP_FIXEDID_INNER

    r = rig(model)
    r.poll(frames(specs(3, id_step=0)))  # inner IDs 0, 0, 0 with DF: the flow stays "fixed"
    d = r.rec.at("phys")[0]
    assert d.len == 4290
    # ≤6.9: is_atomic → SKB_GSO_TCP_FIXEDID; 6.18: ip_fixedid bit 1 (inner) → SKB_GSO_TCP_FIXEDID_INNER, and the
    # outer IDs (0, 1, 2) increment so bit 0 stays clear
    flag = SKB_GSO_TCP_FIXEDID_INNER if model.inet_gro_checks_outer_id else SKB_GSO_TCP_FIXEDID
    assert bool(d.gso_type & flag) is gso_fixedid
    if model.inet_gro_checks_outer_id:
        assert not d.gso_type & SKB_GSO_TCP_FIXEDID


# -- IPv6 (§3.2) --------------------------------------------------------------------------------------------------
V6 = replace(BASE, inner_ipv6=True)  # 1510 bytes per segment on the phys device


@pytest.mark.parametrize("model", [K_5_12, K_6_18])
def test_ipv6_gro_receive_traffic_class_change_flushes(model):
    r = rig(model)
    sp = specs(3, spec=V6)
    sp[1:] = [replace(s, tos=0x10) for s in sp[1:]]
    assert _three(r, frames(sp)) == FLUSH_P


@pytest.mark.parametrize("model", [K_5_12, K_6_18])
def test_ipv6_gro_receive_flow_label_change_is_another_flow(model):
    r = rig(model)
    sp = specs(3, spec=V6)
    sp[1:] = [replace(s, flow_label=5) for s in sp[1:]]
    # first word & 0xF00FFFFF differs → same_flow = 0: both packets stay held
    assert _three(r, frames(sp)) == (([], [(1,), (0,)]), ([], [(1, 2), (0,)]))


@pytest.mark.parametrize(
    ("model", "after"),
    [
        (K_5_12, ([], [(1,), (0,)])),  # ≤5.17: (nexthdr, hop_limit) compared as one u16 → another flow
        (K_6_18, ([(0,)], [(1,)])),  # 6fc2f3832d36 (v5.18): a hop_limit difference flushes
    ],
)
def test_ipv6_gro_receive_hop_limit_change(model, after):
    r = rig(model)
    sp = specs(2, spec=V6)
    sp[1] = replace(sp[1], hop_limit=63)
    f = frames(sp)
    r.gro(f[0])
    r.gro(f[1])
    assert (r.queued(), r.held()) == after


@pytest.mark.parametrize("model", [K_5_12, K_6_18])
@pytest.mark.parametrize(("body2", "merged"), [(b"\0" * 6, True), (b"\x11" * 6, False)])
def test_ipv6_gro_receive_extension_header_bytes_compare(model, body2, merged):
    r = rig(model)
    sp = specs(2, spec=replace(V6, ipv6_ext=[(60, b"\0" * 6)]))
    sp[1] = replace(sp[1], ipv6_ext=[(60, body2)])
    r.poll(frames(sp))
    # ipv6_gro_receive: extension headers pulled in software, then memcmp over nlen - 40 bytes (selftest
    # ip_v6ext_same / ip_v6ext_diff): one segment = 1510 + 8 bytes of destination options
    assert r.rec.lens("phys") == ([1518 + 1400] if merged else [1518, 1518])


@pytest.mark.parametrize("model", POST)
def test_ipv6_gro_receive_payload_len_vs_padding(model):
    r = rig(model)
    f = frames(specs(3, spec=replace(BASE, outer_ipv6=True)))
    f[1] = f[1] + b"\0\0\0\0"
    # outer payload_len != bytes present: own flush (gro-spec §3.2), p completed as for IPv4 padding
    assert _three(r, f)[0] == ([(0,), (1,)], [])


# -- TCP (§5.5) ---------------------------------------------------------------------------------------------------
def _tcp(r, sizes, changes, model=None):
    sp = specs(len(sizes), sizes)
    for i, ch in changes.items():
        sp[i] = replace(sp[i], **ch)
    r.poll(frames(sp))
    return r.rec.lens("phys")


@pytest.mark.parametrize(
    ("model", "changes", "expected"),
    [
        # f1 has CWR, f2 not
        (K_5_12, {1: {"flags": ACK | CWR}}, [1490, 2890]),  # CWR flushes; a CWR head absorbs non-CWR segments
        (K_6_18, {1: {"flags": ACK | CWR}}, [1490] * 3),  # 4e4f7cefb130: CWR compared with the other flags
        (K_AB4C, {1: {"flags": ACK | CWR}}, [1490] * 3),
        # f1 and f2 have CWR
        (K_5_12, {1: {"flags": ACK | CWR}, 2: {"flags": ACK | CWR}}, [1490] * 3),  # every CWR segment flushes
        (K_6_18, {1: {"flags": ACK | CWR}, 2: {"flags": ACK | CWR}}, [1490] * 3),
        # ab4c8b6f7fcb: no own flush, and both carry CWR
        (K_AB4C, {1: {"flags": ACK | CWR}, 2: {"flags": ACK | CWR}}, [1490, 2890]),
    ],
    ids=[
        "5.12-cwr-plain",
        "6.18-cwr-plain",
        "ab4c-cwr-plain",
        "5.12-cwr-cwr",
        "6.18-cwr-cwr",
        "ab4c-cwr-cwr",
    ],
)
def test_tcp_gro_receive_cwr(model, changes, expected):
    assert _tcp(rig(model), [1400] * 3, changes) == expected


@pytest.mark.parametrize(("model", "flag"), [(K_5_12, SKB_GSO_TCP_ECN), (K_AB4C, SKB_GSO_TCP_ACCECN)])
def test_tcp_gro_complete_marks_a_cwr_head(model, flag):
    r = rig(model)
    cwr = {"flags": ACK | CWR}
    _tcp(r, [1400] * 2, {0: cwr, 1: cwr} if model is K_AB4C else {0: cwr})
    # tcp_gro_complete: th->cwr → SKB_GSO_TCP_ECN, SKB_GSO_TCP_ACCECN from 4e4f7cefb130
    d = r.rec.at("phys")[0]
    assert d.len == 2890 and d.gso_type & flag


@pytest.mark.parametrize("model", POST)
@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({1: {"flags": ACK | ECE}, 2: {"flags": ACK | ECE}}, [1490, 2890]),  # flag word differs
        ({1: {"window": 600}, 2: {"window": 600}}, [1490, 2890]),  # window is in the flag word
        ({1: {"ack": 2}, 2: {"ack": 2}}, [1490, 2890]),  # ack_seq differs
        ({1: {"timestamps": True}, 2: {"timestamps": True}}, [1490, 1502 + 1400]),  # doff differs
        # option bytes differ (4 NOPs vs 3 NOPs + EOL), same doff
        ({1: {"tcp_options": b"\x01" * 4}, 2: {"tcp_options": b"\x01\x01\x01\x00"}}, [1490, 1494, 1494]),
        ({1: {"seq": 1_000_000 + 1400 + 1}, 2: {"seq": 1_000_000 + 2 * 1400 + 1}}, [1490, 2890]),  # seq gap
    ],
    ids=["ece", "window", "ack", "doff", "option_bytes", "seq_gap"],
)
def test_tcp_gro_receive_mismatch_completes_p_and_holds_the_segment(model, changes, expected):
    assert _tcp(rig(model), [1400] * 3, changes) == expected


@pytest.mark.parametrize("model", POST)
def test_tcp_gro_receive_timestamp_value_change_flushes(model):
    r = rig(model)
    sp = specs(3, spec=replace(BASE, timestamps=True))
    sp[1:] = [replace(s, tsval=s.tsval + 1) for s in sp[1:]]
    r.poll(frames(sp))
    # option bytes compared in 4-byte words: a new tsval is a mismatch (selftest tcp_ts); 90 + 12 + 1400
    assert r.rec.lens("phys") == [1502, 2902]


@pytest.mark.parametrize("model", POST)
@pytest.mark.parametrize(
    ("sizes", "changes", "expected"),
    [
        ([1400, 1400, 1400], {1: {"flags": ACK | PSH}}, [2890, 1490]),  # merged, then p completed
        ([1400, 700, 1400], {}, [2190, 1490]),  # len < mss: merged, then p completed
        ([700, 1400, 1400], {}, [790, 2890]),  # len > mss: p completed, new head with mss 1400
        ([1400, 1400, 0], {}, [2890, 90]),  # pure ACK: p completed, the ACK GRO_NORMAL
        ([1400, 1400, 1400], {1: {"flags": ACK | URG}}, [1490] * 3),  # flag word differs → p completed …
        ([1400, 1400, 1400], {1: {"flags": ACK | RST}}, [1490] * 3),  # … and URG/RST/SYN make the segment
        ([1400, 1400, 1400], {1: {"flags": ACK | SYN}}, [1490] * 3),  # … GRO_NORMAL; frame 2 a new head
    ],
    ids=["psh", "len_lt_mss", "len_gt_mss", "pure_ack", "urg", "rst", "syn"],
)
def test_tcp_gro_receive_out_check_final(model, sizes, changes, expected):
    assert _tcp(rig(model), sizes, changes) == expected


@pytest.mark.parametrize("model", POST)
def test_tcp_gro_receive_fin_is_merged_and_copied_into_the_held_header(model):
    r = rig(model)
    _tcp(r, [1400] * 3, {1: {"flags": ACK | FIN}})
    d = r.rec.at("phys")
    # FIN may differ (mask), is OR-ed into p's flag word after the merge, and ends the aggregate
    assert [x.len for x in d] == [2890, 1490]
    assert d[0].tcp()[1] & TCP_FIN


@pytest.mark.parametrize("model", POST)
@pytest.mark.parametrize("flag", [PSH, FIN, URG, RST, SYN])
def test_tcp_gro_receive_first_segment_with_special_flag_is_never_held(model, flag):
    r = rig(model)
    r.gro(build_frame(replace(BASE, flags=ACK | flag)))
    # no p: out_check_final flush = flags & (URG|PSH|RST|SYN|FIN) → GRO_NORMAL
    assert r.queued() == [(0,)] and r.held() == []


# -- checksums: the gate, software sums, bad checksums (§4, §6.1, §6.5) -----------------------------------------
def _sw(r):
    return (
        r.kernel.phys_napi.stats.sw_csum_bytes,
        r.rec.stack_sw_bytes,
        sum(c.napi.stats.sw_csum_bytes for c in r.kernel.tunnel_cells),
    )


#: (phys lens, tunnel lens, (phys GRO, normal path, tunnel GRO) bytes summed in software) for 3 segments
#: GRO_NORMAL at phys; inner TCP (20 + 1400) summed by the cell
REFUSED = ([1490] * 3, [4240], (0, 0, 3 * 1420))
TCP_SUM = ([4290], [4240], (3 * 1420, 0, 0))  # aggregated at phys, inner TCP summed there
UDP_SUM = ([4290], [4240], (3 * 1470, 0, 0))  # whole outer UDP datagram (8 + 8 + 14 + 20 + 20 + 1400) summed
NO_SUM = ([4290], [4240], (0, 0, 0))


@pytest.mark.parametrize(
    ("nic", "outer", "pre", "post"),
    [
        ("none", "zero", REFUSED, TCP_SUM),  # row 1: the case 89e5c58fc1e2 fixed
        ("none", "computed", UDP_SUM, UDP_SUM),  # row 2: software UDP sum, inner TCP checked against it
        ("unnecessary", "zero", REFUSED, TCP_SUM),  # row 3: the case 89e5c58fc1e2 fixed
        ("unnecessary", "computed", NO_SUM, NO_SUM),  # row 4: level consumed, checksum-complete derived
        ("unnecessary-tunnel", "zero", NO_SUM, NO_SUM),  # row 5
        ("unnecessary-tunnel", "computed", NO_SUM, NO_SUM),  # row 6
        ("complete", "zero", NO_SUM, NO_SUM),  # row 7
        ("complete", "computed", NO_SUM, NO_SUM),  # row 8
        ("partial", "zero", NO_SUM, NO_SUM),  # row 9
        ("partial", "computed", NO_SUM, NO_SUM),
    ],
)
@pytest.mark.parametrize("kernel", ["pre", "post"])
def test_udp_gro_receive_gate_decision_table(nic, outer, pre, post, kernel):
    model = K_5_11 if kernel == "pre" else K_5_12
    r = rig(model, nic=nic)
    r.poll(frames(specs(3, spec=replace(BASE, outer_csum=outer))))
    phys, tunnel, sw = pre if kernel == "pre" else post
    # gro-spec §4.7: pre-fix refuses rows 1 and 3 only; the bytes are what __skb_gro_checksum_complete and the
    # normal path's __skb_checksum_complete summed
    assert r.rec.lens("phys") == phys
    assert r.rec.lens("tunnel") == tunnel
    assert _sw(r) == sw


@pytest.mark.parametrize(
    ("nic", "outer", "state"),
    [
        ("none", "zero", (CHECKSUM_UNNECESSARY, 1)),  # promoted by the UDP (zero) and TCP (software) checks
        ("none", "computed", (CHECKSUM_UNNECESSARY, 1)),
        ("unnecessary", "zero", (CHECKSUM_UNNECESSARY, 1)),
        ("unnecessary", "computed", (CHECKSUM_UNNECESSARY, 1)),
        ("unnecessary-tunnel", "zero", (CHECKSUM_UNNECESSARY, 1)),  # both levels consumed from csum_cnt
        ("complete", "zero", (CHECKSUM_COMPLETE, 0)),
        ("partial", "zero", (CHECKSUM_PARTIAL, 0)),
    ],
)
def test_gro_checksum_state_of_a_single_segment_after_phys_gro(nic, outer, state):
    r = rig(K_5_12, nic=nic)
    r.poll(frames(specs(1, spec=replace(BASE, outer_csum=outer))))
    d = r.rec.at("phys")[0]
    # gro-spec §4.7 "skb at end": napi_gro_complete hands a count-1 packet up unchanged
    assert (d.ip_summed, d.csum_level) == state


@pytest.mark.parametrize("nic", ["none", "unnecessary"])
def test_udp_gro_receive_prefix_refused_segment_goes_up_promoted_to_unnecessary_level0(nic):
    r = rig(K_5_11, nic=nic)
    r.poll(frames(specs(1)))
    d = r.rec.at("phys")[0]
    # gro-spec §6.5: the zero UDP checksum "validated" by skb_gro_checksum_validate_zero_check promotes NONE to
    # UNNECESSARY/0 (UNNECESSARY/0 stays: its level was consumed from csum_cnt) before the gate refuses
    assert (d.ip_summed, d.csum_level, d.why) == (CHECKSUM_UNNECESSARY, 0, R.UDP_GATE_ZERO_CSUM)


def test_udp4_gro_receive_bad_outer_checksum_flushes_and_udp_rcv_drops():
    r = rig(K_6_18)
    r.poll(frames(specs(3, spec=replace(BASE, outer_csum="bad"))))
    # udp4_gro_receive: __skb_gro_checksum_complete over the UDP datagram (1470 bytes) fails → flush;
    # udp_queue_rcv_one_skb sums it again (__skb_checksum_complete) and drops it
    assert r.rec.lens("phys") == [1490] * 3
    assert r.rec.lens("tunnel") == []
    assert r.rec.stack == ["udp_rcv:csum_error"] * 3
    assert _sw(r) == (3 * 1470, 3 * 1470, 0)


def test_tunnel_stage_bad_inner_tcp_checksum_goes_up_first_pre_fix():
    r = rig(K_5_11)
    sp = specs(20)
    sp[10] = replace(sp[10], tcp_csum="bad")
    r.poll(frames(sp))
    # gro_cells runs tcp4_gro_receive's software check (gro-spec §6.5): frame 10 fails and goes up alone and
    # first; frame 11's sequence gap completes frames 0–9 (40 + 10·1400 = 14040); 11–19 end the cell poll
    assert r.rec.lens("phys") == [1490] * 20
    assert r.rec.lens("tunnel") == [1440, 14040, 12640]


def test_udp_queue_rcv_one_skb_full_check_leaves_complete_for_the_cell():
    r = rig(K_5_12, nic="none")
    f = frames(specs(2, spec=replace(BASE, outer_csum="computed")))
    f = [x + b"\0\0" for x in f]  # Ethernet padding: outer own flush skips udp4_gro_receive's check
    r.poll(f)
    # both frames go up as NONE; udp4_csum_init defers (len > 76); udp_queue_rcv_one_skb sums the datagram
    # (1470 bytes each), leaving CHECKSUM_COMPLETE (gro-spec §6.1), so the cell's inner TCP check needs no sum;
    # the second frame merges at the cell (40 + 2·1400)
    assert r.rec.lens("phys") == [1492, 1492]  # skb->len still counts the padding (ip_rcv trims it)
    assert _sw(r) == (0, 2 * 1470, 0)
    assert r.rec.lens("tunnel") == [2840]


@pytest.mark.parametrize(
    ("model", "nic", "tunnel_sw"),
    [
        (K_5_11, "none", 3 * 1420),  # gro-spec §6.5 row NONE: cell sees (0,0), FULL_SUM over inner TCP
        (K_5_11, "unnecessary", 3 * 1420),  # row UNN/L0: udp4_csum_init consumed the level
        (K_5_11, "complete", 0),  # row COMPLETE: csum reduced by the pulls, CHECK_WITH without a sum
        (K_5_12, "none", 0),  # post-fix: phys GRO promoted to UNNECESSARY/1, one level left at the cell
    ],
)
def test_gro_cells_checksum_state_on_arrival(model, nic, tunnel_sw):
    r = rig(model, nic=nic)
    sp = [replace(s, flags=ACK | PSH) for s in specs(3)]  # PSH: nothing is held anywhere
    r.poll(frames(sp))
    assert r.rec.lens("tunnel") == [1440] * 3
    assert _sw(r)[2] == tunnel_sw


# -- VXLAN, Geneve, outer UDP flow matching (§4.4, §5.1, §5.2) ---------------------------------------------------
@pytest.mark.parametrize("model", POST)
@pytest.mark.parametrize(
    ("change", "merged"),
    [({"vni": 100}, True), ({"vni": 101}, False), ({"vxlan_flags": 0x0C000000}, False)],
    ids=["same", "vni", "flags"],
)
def test_vxlan_gro_receive_compares_flags_and_vni_words(model, change, merged):
    r = rig(model)
    sp = specs(2)
    sp[1] = replace(sp[1], **change)
    r.poll(frames(sp))
    assert r.rec.lens("phys") == ([2890] if merged else [1490, 1490])


def test_vxlan_rcv_drops_reserved_flag_bits_that_gro_accepted():
    r = rig(K_6_18)
    r.poll(frames([replace(BASE, vxlan_flags=0x0C000000)]))
    # vxlan_gro_receive does not validate flags; vxlan_rcv drops an unknown flag (gro-spec §5.1, §6.2)
    assert r.rec.lens("phys") == [1490]
    assert r.rec.stack == ["vxlan_rcv:reserved_bits"]


GENEVE = replace(BASE, encap="geneve", geneve_options=geneve_opt(0x0102, 1, b"\0\0\0\x01"))


@pytest.mark.parametrize("model", POST)
@pytest.mark.parametrize(
    ("options", "merged"),
    [
        (geneve_opt(0x0102, 1, b"\0\0\0\x01"), True),
        (geneve_opt(0x0102, 1, b"\0\0\0\x02"), False),  # option data differs
        (geneve_opt(0x0102, 1, b"\0\0\0\x01\0\0\0\0"), False),  # opt_len differs
    ],
    ids=["same", "option_bytes", "opt_len"],
)
def test_geneve_gro_receive_compares_the_whole_header_with_options(model, options, merged):
    r = rig(model)
    sp = specs(2, spec=GENEVE)
    sp[1] = replace(sp[1], geneve_options=options)
    r.poll(frames(sp))
    # one segment: 90 + 8 bytes of options (+4 more for the longer option)
    second = 1498 + len(options) - 8
    assert r.rec.lens("phys") == ([1498 + 1400] if merged else [1498, second])


@pytest.mark.parametrize("model", POST)
@pytest.mark.parametrize("bad", ["oam", "version"])
def test_geneve_gro_receive_version_or_oam_flushes(model, bad):
    r = rig(model)
    sp = specs(2, spec=GENEVE)
    f = frames([replace(s, geneve_oam=bad == "oam") for s in sp])
    if bad == "version":
        f = [x[:42] + bytes([x[42] | 0x40]) + x[43:] for x in f]  # genevehdr ver 1 (outer csum 0: no fix-up)
    r.poll(f)
    assert r.rec.lens("phys") == [1498, 1498]


@pytest.mark.parametrize(("model", "tunnel"), [(K_5_12, [1440, 1440]), (K_6_18, [1440, 1440])])
def test_udp_gro_receive_zero_and_nonzero_outer_checksum_are_different_flows(model, tunnel):
    r = rig(model)
    sp = specs(2)
    sp[1] = replace(sp[1], outer_csum="computed")
    f = frames(sp)
    r.gro(f[0])
    r.gro(f[1])
    # udp_gro_receive: (!uh->check ^ !uh2->check) → same_flow = 0: two held packets
    assert r.held() == [(1,), (0,)]
    r.end(2)
    assert r.rec.lens("phys") == [1490, 1490]
    # the metadata dst carries TUNNEL_CSUM: still two flows on the vxlan device
    assert r.rec.lens("tunnel") == tunnel


@pytest.mark.parametrize(
    ("model", "metadata", "tunnel"),
    [
        (K_5_12, True, [2840, 2840]),  # metadata dst differs (outer source port)
        (K_6_18, True, [2840, 2840]),
        (K_5_12, False, [2840, 2840]),  # ≤ 6.0: a GSO skb is flushed by dev_gro_receive
        (K_6_18, False, [5640]),  # ≥ 6.1 (head_frag buffers): the two aggregates merge on the vxlan device
        (K_5_11, True, [2840, 2840]),  # pre-fix: aggregated by gro_cells only, split by the metadata dst
        (K_5_11, False, [5640]),
    ],
)
def test_outer_source_port_change_splits_the_flow(model, metadata, tunnel):
    r = rig(model, tunnel_metadata=metadata, head_frag=True)
    sp = specs(4)
    sp[2:] = [replace(s, udp_sport=49153) for s in sp[2:]]
    r.poll(frames(sp))
    # udp_gro_receive compares source and destination ports
    assert r.rec.lens("phys") == ([1490] * 4 if model is K_5_11 else [2890, 2890])
    assert r.rec.lens("tunnel") == tunnel


@pytest.mark.parametrize("metadata", [True, False])
def test_gro_list_prepare_on_the_tunnel_device_compares_the_inner_mac_header(metadata):
    r = rig(K_5_11, tunnel_metadata=metadata)
    sp = specs(4)
    sp[2:] = [replace(s, inner_dst_mac="02:00:00:00:01:03") for s in sp[2:]]
    r.poll(frames(sp))
    # vxlan hard_header_len 14: compare_ether_header on the inner Ethernet header (gro-spec §6.6)
    assert r.rec.lens("tunnel") == [2840, 2840]


@pytest.mark.parametrize(("metadata", "tunnel"), [(True, [2840, 2840]), (False, [5640])])
def test_gro_list_prepare_on_the_tunnel_device_compares_the_metadata_dst(metadata, tunnel):
    r = rig(K_5_11, tunnel_metadata=metadata)
    sp = specs(4)
    sp[2:] = [replace(s, outer_ttl=63) for s in sp[2:]]
    r.poll(frames(sp))
    # collect-metadata mode: skb_metadata_dst_cmp covers the outer TTL; without it only the inner headers count
    assert r.rec.lens("tunnel") == tunnel


# -- gro_cells (§6.3, §6.4) ---------------------------------------------------------------------------------------
def test_gro_cell_poll_takes_at_most_64_per_poll():
    r = rig(K_5_11)
    f = frames(specs(128, [500] * 128))
    napi = r.kernel.phys_napi
    for i in (0, 64):  # two phys polls before the cells run: 128 skbs queued on the cell
        napi.poll([r.skb(x) for x in f[i : i + 64]], 0)
    assert len(r.kernel.tunnel_cells[0].napi_skbs) == 128
    r.kernel.run_gro_cells(0)
    # gro_cell_poll(budget 64) twice, each exhausting its budget (HZ 250: flush all): 40 + 64·500 each
    assert r.rec.lens("tunnel") == [32040, 32040]


def test_gro_cells_run_after_each_phys_poll():
    r = rig(K_5_11)
    f = frames(specs(20))
    r.poll(f[:10], now_ns=0)
    r.poll(f[10:], now_ns=1_000)
    # net_rx_action: the cell scheduled by a phys poll runs before the next phys poll (gro-spec §6.4), and ends
    # below budget with a full flush: two aggregates of 10 segments, not one of 20
    assert r.rec.lens("tunnel") == [14040, 14040]


# -- other §2 / §5.7 rules -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("model", [K_5_11, K_5_12, K_6_18])
def test_netif_elide_gro_with_generic_xdp_defers_aggregation_to_gro_cells(model):
    r = rig(model)
    r.kernel.phys.xdp_generic = True
    r.poll(frames(specs(5)))
    # kernel-oracle.md: a generic-XDP program makes the phys stage deliver every frame singly
    assert r.rec.lens("phys") == [1490] * 5
    assert r.rec.lens("tunnel") == [40 + 5 * 1400]


@pytest.mark.parametrize("model", POST)
def test_napi_gro_complete_rewrites_lengths_and_marks_the_aggregate(model):
    r = rig(model)
    r.poll(frames(specs(3)))
    d = r.rec.at("phys")[0]
    h = d.head
    # gro-spec §5.7: outer tot_len and header checksum, UDP length (checksum 0 stays 0), inner tot_len and header
    # checksum, TCP check seeded with the pseudo-header sum; gso_size = mss, gso_segs = count
    assert int.from_bytes(h[2:4], "big") == d.len == 4290
    assert csum_partial(h, 0, 20) == 0xFFFF
    assert int.from_bytes(h[24:26], "big") == 4290 - 20 and h[26:28] == b"\0\0"
    assert int.from_bytes(h[52:54], "big") == 4290 - 50 and csum_partial(h, 50, 70) == 0xFFFF
    from gro_replay.packet.csum import pseudo4

    assert int.from_bytes(h[86:88], "big") == pseudo4(h[62:66], h[66:70], 20 + 3 * 1400, 6)
    assert (d.gso_size, d.gso_segs) == (1400, 3)
    assert d.gso_type & SKB_GSO_TCPV4 and d.gso_type & SKB_GSO_UDP_TUNNEL
    assert d.ip_summed == CHECKSUM_PARTIAL
