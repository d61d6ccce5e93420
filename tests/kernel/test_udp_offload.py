"""net/ipv4/udp_offload.c ``udp_gro_receive`` / ``udp4_gro_receive``: the 89e5c58fc1e2 checksum gate,
software sums, bad outer checksums and outer UDP flow matching (gro-spec §4, §5.2, §6.1, §6.5).

From the former tests/test_kernel_rules.py:
Frames are VXLAN over IPv4 (outer UDP checksum 0 unless a test says otherwise), inner IPv4/TCP without options,
1400-byte payloads: one segment is 1490 bytes on the phys device (outer IPv4 20 + UDP 8 + VXLAN 8 + inner Ethernet
14 + inner IPv4 20 + TCP 20 = 90 header bytes) and 1440 on the tunnel device. Skbs are handed to the phys NAPI the
way a driver does (``Rig.skb``); expected values come from the kernel rule cited next to each (gro-spec section,
kernel function, commit), never from the code under test.

From the former tests/test_csum_gate_table.py:
gro-spec §4.7: the phys-stage decision table, every NIC checksum state × outer UDP checksum × kernel.

Each case replays one VXLAN flow of four full segments (outer IPv4 or IPv6, UDP checksum zero or computed,
inner IPv4/TCP with timestamps, 1398 payload bytes each) built field by field with ``packet.build``, all in one
``budget`` poll, through the pre-fix (v5.11) and post-fix (89e5c58fc1e2) kernels together. Expected values are
derived by hand from the table and the checksum helpers of gro-spec §4.1/§4.2, §5.5, §6.1 and §6.5:

* aggregation at the phys device: only rows 1 and 3 (zero outer checksum with CHECKSUM_NONE or
  CHECKSUM_UNNECESSARY level 0) fail, and only before the fix (§4.4 vs §4.5);
* checksum work (bytes summed in software, ``__skb_gro_checksum_complete`` at GRO, ``__skb_checksum_complete``
  on the normal path) per stage, from the frame sizes below.

Sizes (gro-spec §8: inner IP+TCP with timestamps = 52 bytes):
inner TCP segment = 20 (header) + 12 (NOP NOP TS) + 1398 = 1430 bytes;
outer UDP datagram = 8 (UDP) + 8 (VXLAN) + 14 (inner Ethernet) + 20 (inner IPv4) + 1430 = 1480 bytes.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from rule_frames import BASE, _sw, frames, specs
from test_kernel_harness import rig

from gro_replay.kernel import reasons as R
from gro_replay.kernel.model import K_5_11, K_5_12, K_6_18
from gro_replay.kernel.skbuff import CHECKSUM_COMPLETE, CHECKSUM_PARTIAL, CHECKSUM_UNNECESSARY
from gro_replay.packet.build import FrameSpec, build_flow, build_frame
from gro_replay.sim import ReplayConfig, replay_frames

# -- checksums: the gate, software sums, bad checksums (§4, §6.1, §6.5) -----------------------------------------
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


# -- VXLAN, Geneve, outer UDP flow matching (§4.4, §5.1, §5.2) ---------------------------------------------------
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


# -- from the former tests/test_csum_gate_table.py ----------------------------------------
N = 4  # segments in the flow, all in one poll
MSS = 1398
TCP_SEG = 20 + 12 + MSS  # 1430: bytes FULL_SUM covers when it checks the inner TCP checksum (§4.1)
UDP_DGRAM = 8 + 8 + 14 + 20 + TCP_SEG  # 1480: bytes FULL_SUM covers when it checks the outer UDP checksum
INNER_AGG_LEN = 52 + N * MSS  # 5644: tunnel-device skb->len of the 4-segment aggregate (§6.6, §8)
OUTER_HDRS = {False: 20 + 8 + 8 + 14, True: 40 + 8 + 8 + 14}  # outer IPv4|IPv6 + UDP + VXLAN + inner Ethernet

# (NIC profile, outer checksum) → gro-spec §4.7 row number. Row 9 (PARTIAL) holds for "any" outer checksum.
ROWS = {
    ("none", "zero"): 1,
    ("none", "computed"): 2,
    ("unnecessary", "zero"): 3,
    ("unnecessary", "computed"): 4,
    ("unnecessary-tunnel", "zero"): 5,
    ("unnecessary-tunnel", "computed"): 6,
    ("complete", "zero"): 7,
    ("complete", "computed"): 8,
    ("partial", "zero"): 9,
    ("partial", "computed"): 9,
}

#: Rows whose phys stage refuses tunnel GRO before the fix (gro-spec §4.7 "K-pre fails exactly for rows 1 and 3").
PRE_FIX_REFUSED = {1, 3}

#: Software-summed bytes per frame at the phys stage, by (row, refused at phys?), from gro-spec §4.7:
#: row 1/3 pre-fix: the UDP checksum is 0 ("not needed"), the gate refuses, TCP is never reached; the normal
#:   path's udp4_csum_init finds UNNECESSARY (row 1: promoted NONE→UNN/L0 in GRO) and sets csum_valid (§6.1): 0.
#: row 1/3 post-fix: "NEEDS_SW → FULL_SUM over TCP hdr+payload" (1430 bytes).
#: row 2: "FULL_SUM over whole UDP datagram" (1480 bytes); the inner TCP check then uses the derived gc.
#: rows 4–9: TRY_CONVERT-derived gc, a consumed UNNECESSARY level, the NIC's CHECKSUM_COMPLETE value, or PARTIAL
#:   with its start after the offset: no data touched (0).
PHYS_SW_PER_FRAME = {
    (1, True): 0,
    (1, False): TCP_SEG,
    (2, False): UDP_DGRAM,
    (3, True): 0,
    (3, False): TCP_SEG,
    **{(row, False): 0 for row in (4, 5, 6, 7, 8, 9)},
}

#: Software-summed bytes per frame at the tunnel stage (gro_cells). A phys aggregate is a GSO skb, flushed by
#: dev_gro_receive before any checksum work (§6.6, ≤ v6.0): 0. Frames refused at phys (rows 1/3 pre-fix) arrive
#: with (csum_cnt, csum_valid) = (0, 0) after udp4_csum_init consumed their last level, so the cell does
#: "FULL_SUM over inner TCP" (§6.5): 1430 bytes each.
TUNNEL_SW_PER_FRAME = {True: TCP_SEG, False: 0}

CASES = [(nic, csum, ROWS[nic, csum]) for (nic, csum) in ROWS]


def _flow(outer_csum: str, outer_ipv6: bool, n: int = N) -> list[tuple[int, bytes]]:
    spec = FrameSpec(outer_csum=outer_csum, outer_ipv6=outer_ipv6)
    return [(1000 * i, f) for i, f in enumerate(build_flow(spec, [MSS] * n))]


def _case_id(case) -> str:
    nic, csum, row = case
    return f"row{row}-{nic}-{csum}"


@pytest.mark.parametrize("outer_ipv6", [False, True], ids=["outer4", "outer6"])
@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_phys_stage_aggregates_per_gro_spec_4_7(case, outer_ipv6):
    nic, csum, row = case
    res = replay_frames(_flow(csum, outer_ipv6), ReplayConfig(kernels=(K_5_11, K_5_12), rx_csum=nic))
    pre, post = res.kernels
    assert res.input.frames_replayed == N and res.input.classes == {"tunnel_tcp": N}
    for ks in (pre, post):
        refused = ks is pre and row in PRE_FIX_REFUSED
        phys = ks.stages["phys"]
        assert phys.frames_in == N
        if refused:
            # §4.4: the gate refuses each frame (flush on the skb only, §4.7 last bullet): GRO_NORMAL one by one,
            # each skb->len = the outer IP packet: 1500 bytes over IPv4, 40 + 1480 = 1520 over IPv6.
            assert (phys.skbs, phys.aggregates) == (N, 0)
            assert phys.reasons == {R.UDP_GATE_ZERO_CSUM: N}
            assert phys.bytes == N * (OUTER_HDRS[outer_ipv6] + 52 + MSS)
        else:
            # all four merged into one aggregate, completed by the end-of-poll flush (§1.3 napi_complete_done)
            assert (phys.skbs, phys.aggregates, phys.max_segs) == (1, 1, N)
            assert phys.reasons == {R.POLL_END: 1}
            # §5.6: phys skb->len counts from the outer IP header
            assert phys.bytes == OUTER_HDRS[outer_ipv6] + INNER_AGG_LEN
        assert phys.sw_csum_bytes == N * PHYS_SW_PER_FRAME[row, refused], (ks.name, row)


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_tunnel_stage_per_gro_spec_6_5(case):
    """Outer IPv4 only: the tunnel stage after udp_rcv (IPv6 zero checksums need udp6zerocsumrx, §6.1 aside)."""
    nic, csum, row = case
    res = replay_frames(_flow(csum, False), ReplayConfig(kernels=(K_5_11, K_5_12), rx_csum=nic))
    for ks in res.kernels:
        refused = ks.release == "5.11" and row in PRE_FIX_REFUSED
        tun = ks.stages["tunnel"]
        # every phys skb is decapsulated and queued to the vxlan device's cell (§6.1, §6.2)
        assert dict(ks.stack) == {"queued": N if refused else 1}
        assert tun.frames_in == N
        # either the phys aggregate passes through unchanged (§6.6: GSO skb flushed) or gro_cells merges the four
        # refused frames (§6.5): one 4-segment skb of inner length 52 + 4·1398 either way
        assert (tun.skbs, tun.aggregates, tun.max_segs, tun.bytes) == (1, 1, N, INNER_AGG_LEN)
        assert tun.reasons == {(R.POLL_END if refused else R.GSO_SKB): 1}
        assert tun.sw_csum_bytes == N * TUNNEL_SW_PER_FRAME[refused], (ks.name, row)


#: gro-spec §4.7 last column "skb at end" (ip_summed, csum_level) for a frame that went through the whole phys
#: GRO chain, seen on a single-segment flow (completed with count 1: no gro_complete callbacks rewrite it, §1.6).
#: Rows 1/3 pre-fix stop at the gate: row 1 was promoted NONE→UNN/L0 by the zero-checksum UDP validation and
#: row 3 keeps UNN/L0 (§6.5 column "skb after phys GRO").
SKB_AT_END = {
    (1, False): (CHECKSUM_UNNECESSARY, 1),
    (2, False): (CHECKSUM_UNNECESSARY, 1),
    (3, False): (CHECKSUM_UNNECESSARY, 1),
    (4, False): (CHECKSUM_UNNECESSARY, 1),
    (5, False): (CHECKSUM_UNNECESSARY, 1),
    (6, False): (CHECKSUM_UNNECESSARY, 1),
    (7, False): (CHECKSUM_COMPLETE, None),
    (8, False): (CHECKSUM_COMPLETE, None),
    (9, False): (CHECKSUM_PARTIAL, None),
    (1, True): (CHECKSUM_UNNECESSARY, 0),
    (3, True): (CHECKSUM_UNNECESSARY, 0),
}


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_skb_checksum_state_at_end_of_phys_gro(case):
    nic, csum, row = case
    seen = []

    def on_deliver(kernel, stage, dev, skb, now_ns):
        if stage == "phys":
            seen.append((kernel, skb.ip_summed, skb.csum_level))

    frame = build_frame(FrameSpec(outer_csum=csum))
    res = replay_frames([(0, frame)], ReplayConfig(kernels=(K_5_11, K_5_12), rx_csum=nic), on_deliver)
    assert len(seen) == 2
    for kernel, ip_summed, level in seen:
        refused = kernel == "pre-fix" and row in PRE_FIX_REFUSED
        want_summed, want_level = SKB_AT_END[row, refused]
        assert ip_summed == want_summed, (kernel, row)
        if want_level is not None:
            assert level == want_level, (kernel, row)
    for ks in res.kernels:
        refused = ks.release == "5.11" and row in PRE_FIX_REFUSED
        assert ks.stages["phys"].sw_csum_bytes == PHYS_SW_PER_FRAME[row, refused]


def test_row1_post_fix_level_survives_to_the_cell():
    """Row 1 post-fix, one frame: GRO leaves UNN/L1 (§4.7), udp4_csum_init consumes one level (§6.1), so the
    cell's inner TCP check is "not needed" (cnt 1 → 0): nothing summed at the tunnel stage. Pre-fix the frame
    arrives as NONE (§6.5 row NONE) and the cell sums the inner TCP segment (1430 bytes)."""
    frame = build_frame(FrameSpec(outer_csum="zero"))
    res = replay_frames([(0, frame)], ReplayConfig(kernels=(K_5_11, K_5_12), rx_csum="none"))
    pre, post = res.kernels
    assert pre.stages["tunnel"].sw_csum_bytes == TCP_SEG
    assert post.stages["tunnel"].sw_csum_bytes == 0
    assert post.stages["phys"].sw_csum_bytes == TCP_SEG
