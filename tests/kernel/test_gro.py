"""net/core/gro.c rules (gro-spec §1.5–§2.4, §5.6, §5.7, §6.6): ``dev_gro_receive`` buckets and
MAX_GRO_SKBS, ``gro_normal_one``, ``skb_gro_receive`` size limits and frag_list use, GSO skbs entering GRO,
``gro_list_prepare`` on the tunnel device, ``napi_gro_complete``.

From the former tests/test_kernel_rules.py:
Frames are VXLAN over IPv4 (outer UDP checksum 0 unless a test says otherwise), inner IPv4/TCP without options,
1400-byte payloads: one segment is 1490 bytes on the phys device (outer IPv4 20 + UDP 8 + VXLAN 8 + inner Ethernet
14 + inner IPv4 20 + TCP 20 = 90 header bytes) and 1440 on the tunnel device. Skbs are handed to the phys NAPI the
way a driver does (``Rig.skb``); expected values come from the kernel rule cited next to each (gro-spec section,
kernel function, commit), never from the code under test.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from rule_frames import BASE, POST, frames, specs
from test_kernel_harness import rig

from gro_replay.kernel import reasons as R
from gro_replay.kernel.model import K_5_11, K_5_12, K_6_1, K_6_18
from gro_replay.kernel.skbuff import CHECKSUM_PARTIAL, SKB_GSO_DODGY, SKB_GSO_TCPV4, SKB_GSO_UDP_TUNNEL
from gro_replay.packet.build import ACK, PSH, build_frame
from gro_replay.packet.csum import csum_partial


# -- RX hash and buckets (§2.2; NIC RSS §7) -------------------------------------------------------------------------
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
    ("model", "why"),
    [
        # ≤ 6.0: NAPI_GRO_CB(skb)->flush = skb_is_gso(skb) || skb_has_frag_list(skb): the GSO test comes first
        (K_5_12, R.GSO_SKB),
        # 5eddb24901ee: flush = skb_has_frag_list(skb), then a non-TCP (or DODGY) GSO skb's flush = 1 after it
        (K_6_18, R.FRAG_LIST),
    ],
)
def test_dev_gro_receive_names_the_first_of_its_two_flushes(model, why):
    from gro_replay.kernel.gro import GroResult, napi_gro_receive

    r = rig(model)
    skb = _gso_skb(r, 2800, 1400, SKB_GSO_UDP_TUNNEL)
    skb.frag_list = True
    assert napi_gro_receive(r.kernel.phys_napi, skb) == GroResult.GRO_NORMAL
    assert skb.cb.why == why


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
    ("model", "segs", "frag_list"),
    # 4116-byte frames from AF_PACKET on veth (kernel/nic_skb.py): 1 frag each from v6.6 (an order-1 page), 2 before
    # (order 0); headlen 0 <= offset: the frags move while the last skb's nr_frags stays <= MAX_SKB_FRAGS (17)
    [(K_6_18, 16, False), (K_6_1, 8, False), (K_6_1, 9, True)],
)
def test_skb_gro_receive_moves_a_paged_segments_frags(model, segs, frag_list):
    r = rig(model)
    r.poll(frames(specs(segs, [4116 - 104] * segs)))
    assert [(x.segs, x.frag_list) for x in r.rec.at("phys")] == [(segs, frag_list)]


def test_gro_pull_from_frag0_moves_only_the_headers_gro_read():
    """A held paged skb's linear part after dev_gro_receive's pull: the 90 bytes GRO read past the outer Ethernet
    header (outer IPv4 20, UDP 8, VXLAN 8, inner Ethernet 14, IPv4 20, TCP 20): skb_gro_offset."""
    r = rig(K_6_18)
    skb = r.gro(build_frame(replace(BASE, payload=4116 - 104)))
    assert r.held() == [(0,)]
    assert (skb.tail - skb.data - skb.data_len, skb.data_len, skb.nr_frags) == (90, 4116 - 14 - 90, 1)


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


@pytest.mark.parametrize(
    ("model", "head_frag", "why"),
    [
        # ≤ 6.0: flushed for skb_is_gso before tcp_gro_receive sees the PSH; without the PSH it is flushed all the
        # same, so the PSH is not the reason (bigtcp-ipv4-vxlan-ipv4.pcap --fix said psh_or_fin for one of two)
        (K_5_12, True, R.GSO_SKB),
        (K_6_18, False, R.FRAG_LIST),  # skb_has_frag_list, as above
        # 5eddb24901ee: a TCP GSO skb may be held; the PSH of its last segment is then the only reason it is not
        (K_6_18, True, R.TCP_FLAGS_PSH_FIN),
    ],
)
def test_a_flush_set_by_dev_gro_receive_stays_the_reason_of_a_final_gso_skb(model, head_frag, why):
    r = rig(model, head_frag=head_frag, tunnel_metadata=False)
    sp = specs(4)
    sp[2:] = [replace(s, udp_sport=49153) for s in sp[2:]]  # two phys aggregates (outer ports differ)
    sp[1], sp[3] = replace(sp[1], flags=ACK | PSH), replace(sp[3], flags=ACK | PSH)  # each ends in PSH
    r.poll(frames(sp))
    assert r.rec.lens("phys") == [2890, 2890]
    assert r.rec.lens("tunnel") == [2840, 2840]
    assert [d.why for d in r.rec.at("tunnel")] == [why, why]


# -- VXLAN, Geneve, outer UDP flow matching (§4.4, §5.1, §5.2) ---------------------------------------------------
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
