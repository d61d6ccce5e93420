"""What the running Linux 6.18 kernel delivered (kernel-oracle.md, "Observed results"), replayed by the simulator.

Input (issue 3, "What must be shown"): one flow of VXLAN over IPv4 (outer UDP checksum 0), inner IPv4/TCP without
options, 1400-byte payloads; budget polls of 64, HZ 250, no RX hash (veth: every frame in bucket 0). Lengths are
``skb->len`` at ``netif_receive_skb``: from the outer IP header on the phys device, from the inner IP header on the
tunnel device (50 bytes less: outer IPv4 20 + UDP 8 + VXLAN 8 + inner Ethernet 14).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from gro_replay.kernel.model import profile
from gro_replay.packet.build import FrameSpec, build_frame, flow_specs
from gro_replay.sim import PollModel, ReplayConfig, replay_frames

SPEC = FrameSpec(timestamps=False, outer_csum="zero", payload=1400)


def _replay(frames: list[bytes], release: str, nic: str) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {"phys": [], "tunnel": []}

    def on_deliver(kernel_name, stage, dev_name, skb, now_ns):
        out[stage].append(skb.len)

    cfg = ReplayConfig(kernels=(profile(release),), rx_csum=nic, rss="none", hz=250, poll=PollModel("budget"))
    replay_frames([(i * 10_000, f) for i, f in enumerate(frames)], cfg, on_deliver)
    return out


@pytest.mark.parametrize("release", ["6.18", "5.12"])
def test_oracle_1000_frames_fill_64k_per_aggregate(release):
    frames = [build_frame(s) for s in flow_specs(SPEC, [1400] * 1000)]
    out = _replay(frames, release, "none")
    # kernel-oracle.md observed table: each poll of 64 frames gives 46 segments (1490 + 45·1400 = 64490; one more
    # would reach 65890 ≥ 65536, skb_gro_receive) and 18 (1490 + 17·1400 = 25290); 1000 = 15·64 + 40 → last
    # poll one skb of 40 segments (1490 + 39·1400 = 56090). HZ 250 < 1000: full flush at each poll's end.
    assert out["phys"] == [64490, 25290] * 15 + [56090]
    # tunnel device: the same skbs, 50 bytes shorter (gro-spec §6.6)
    assert out["tunnel"] == [64440, 25240] * 15 + [56040]


def _bad_frame_10(n: int = 20) -> list[bytes]:
    specs = flow_specs(SPEC, [1400] * n)
    specs[10] = replace(specs[10], tcp_csum="bad")
    return [build_frame(s) for s in specs]


@pytest.mark.parametrize("release", ["6.18", "5.12"])
@pytest.mark.parametrize("nic", ["none", "unnecessary"])
def test_oracle_bad_inner_tcp_checksum_goes_up_first(release, nic):
    out = _replay(_bad_frame_10(), release, nic)
    # kernel-oracle.md: frame 10 fails tcp4_gro_receive's software check (NONE, or UNNECESSARY level 0 consumed
    # by the outer UDP header) and goes up at once (1490); frame 11 finds a sequence gap, completing the held
    # frames 0–9 (1490 + 9·1400 = 14090); frames 11–19 end the poll (1490 + 8·1400 = 12690).
    assert out["phys"] == [1490, 14090, 12690]
    assert out["tunnel"] == [1440, 14040, 12640]


@pytest.mark.parametrize("release", ["6.18", "5.12"])
def test_oracle_bad_inner_tcp_checksum_trusted_at_unnecessary_level1(release):
    out = _replay(_bad_frame_10(), release, "unnecessary-tunnel")
    # kernel-oracle.md: at level 1 the NIC vouches for the inner checksum (csum_cnt 2 at dev_gro_receive, one
    # level per checksummed header): all 20 merge, 1490 + 19·1400 = 28090.
    assert out["phys"] == [28090]
    assert out["tunnel"] == [28040]


def test_oracle_wrong_outer_udp_checksum_drops_every_frame():
    specs = flow_specs(replace(SPEC, outer_csum="bad"), [1400] * 128)
    out = _replay([build_frame(s) for s in specs], "6.18", "none")
    # kernel-oracle.md: 128 × 1490 on the phys device (udp4_gro_receive's check fails: flush), nothing on the
    # tunnel device (udp_queue_rcv_one_skb's full software check fails: drop)
    assert out["phys"] == [1490] * 128
    assert out["tunnel"] == []
