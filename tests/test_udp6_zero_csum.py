"""Zero outer UDPv6 checksums: GRO merges them, the normal path drops them unless the tunnel socket allows it.

Kernel: net/ipv6/udp_offload.c ``udp6_gro_receive`` validates with the zero check (zero accepted in GRO);
net/ipv6/udp.c ``__udp6_lib_rcv`` drops a zero checksum for a socket without ``no_check6_rx`` (vxlan/geneve
``udp6zerocsumrx``, off by default; RFC 6936). kernel-oracle.md's backend observed on 6.18: 20 × 1400 B over
outer IPv6 with checksum 0 → 28110 on the phys device and nothing on the tunnel device.
"""

from dataclasses import replace

from gro_replay.kernel.model import K_6_18
from gro_replay.packet.build import FrameSpec, build_flow
from gro_replay.sim import PollModel, ReplayConfig, replay_frames

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
    assert v.startswith("Every tunnelled frame is lost before decapsulation")
    assert "20 frame(s) lost: __udp6_lib_rcv drops a UDPv6 datagram with checksum 0" in v
    assert "Udp6InCsumErrors" in v and "udp6zerocsumrx" in v
    assert "go up one by one" not in v and affected_flows(res) == []
