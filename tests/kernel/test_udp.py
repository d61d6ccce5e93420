"""net/ipv4/udp.c / net/ipv6/udp.c: the normal path's UDP checksum checks (gro-spec §6.1).

From the former tests/test_kernel_rules.py:
Frames are VXLAN over IPv4 (outer UDP checksum 0 unless a test says otherwise), inner IPv4/TCP without options,
1400-byte payloads: one segment is 1490 bytes on the phys device (outer IPv4 20 + UDP 8 + VXLAN 8 + inner Ethernet
14 + inner IPv4 20 + TCP 20 = 90 header bytes) and 1440 on the tunnel device. Skbs are handed to the phys NAPI the
way a driver does (``Rig.skb``); expected values come from the kernel rule cited next to each (gro-spec section,
kernel function, commit), never from the code under test.

From the former tests/test_udp6_zero_csum.py:
Zero outer UDPv6 checksums: GRO merges them, the normal path drops them unless the tunnel socket allows it.

Kernel: net/ipv6/udp_offload.c ``udp6_gro_receive`` validates with the zero check (zero accepted in GRO);
net/ipv6/udp.c ``__udp6_lib_rcv`` drops a zero checksum for a socket without ``no_check6_rx`` (vxlan/geneve
``udp6zerocsumrx``, off by default; RFC 6936). kernel-oracle.md's backend observed on 6.18: 20 × 1400 B over
outer IPv6 with checksum 0 → 28110 on the phys device and nothing on the tunnel device.
"""

from __future__ import annotations

from dataclasses import replace

from rule_frames import BASE, _sw, frames, specs
from test_kernel_harness import rig

from gro_replay.kernel.model import K_5_12, K_6_18
from gro_replay.packet.build import FrameSpec, build_flow
from gro_replay.sim import PollModel, ReplayConfig, replay_frames


# -- checksums: the gate, software sums, bad checksums (§4, §6.1, §6.5) -----------------------------------------
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


# -- from the former tests/test_udp6_zero_csum.py ----------------------------------------
FRAMES = build_flow(
    FrameSpec(outer_ipv6=True, outer_csum="zero", timestamps=False, payload=1400), [1400] * 20
)


def _run(**kw):
    seen = {"phys": [], "tunnel": []}
    cfg = replace(ReplayConfig(kernels=(K_6_18,), rx_csum="none", rss="none", poll=PollModel("budget")), **kw)
    res = replay_frames(
        ((i * 1000, f) for i, f in enumerate(FRAMES)), cfg, lambda k, s, d, skb, t: seen[s].append(skb.len)
    )
    return seen, res.kernels[0].stack


def test_udp6_zero_checksum_dropped_by_default():
    seen, stack = _run()
    # outer IPv6 40 + UDP 8 + VXLAN 8 + inner Ethernet 14 + IPv4 20 + TCP 20 + 1400, plus 19 × 1400
    assert seen["phys"] == [1510 + 19 * 1400] == [28110]
    assert seen["tunnel"] == []
    assert stack == {"udp6_csum_zero_error": 1}


def test_udp6_zero_checksum_accepted_with_udp6zerocsumrx():
    seen, stack = _run(udp6_zero_csum_rx=True)
    assert seen["phys"] == [28110]
    assert seen["tunnel"] == [28110 - 70]  # the tunnel device counts from the inner IPv4 header
    assert stack == {"queued": 1}


def test_verdict_says_refused_ipv6_frames_are_lost():
    # pre-fix the gate refuses these frames (zero checksum, UNNECESSARY level 0: gro-spec §4.7 row 3) and then
    # __udp6_lib_rcv drops them in both kernels: the flow is lost, not affected (the fix changes only how many
    # skbs carry the frames to the drop), and the verdict names the drop and the knob
    from gro_replay.report.document import affected_flows, verdict

    res = replay_frames(
        ((i * 1000, f) for i, f in enumerate(FRAMES)),
        ReplayConfig(rx_csum="unnecessary", poll=PollModel("budget")),
    )
    v = verdict(res)
    assert v.startswith("Every VXLAN/Geneve frame is lost before decapsulation")
    assert "20 frames lost: __udp6_lib_rcv drops a UDPv6 datagram with checksum 0" in v
    assert "Udp6InCsumErrors" in v and "udp6zerocsumrx" in v
    assert "go up one by one" not in v and affected_flows(res) == []
