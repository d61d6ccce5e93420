"""The rx tunnel metadata dst per release (issue 11 item 1): what gro_cells GRO compares at the tunnel device.

Kernel rule (include/net/dst_metadata.h ``skb_metadata_dst_cmp``, called from net/core/gro.c ``gro_list_prepare``
for skbs with ``slow_gro``): two decapsulated skbs are the same flow only when their whole ``ip_tunnel_info``
(plus options) is byte-equal. ``udp_tun_rx_dst`` / ``ip_tun_rx_dst`` / ``ipv6_tun_rx_dst`` fill it from the outer
headers: addresses, TOS/traffic class, TTL/hop limit, IPv6 flow label, UDP ports, TUNNEL_CSUM (outer UDP check
!= 0), TUNNEL_KEY + VNI, Geneve O/C bits and options, and — since a9888628cb2c (v6.17) — TUNNEL_DONT_FRAGMENT from
the outer IPv4 DF bit. Fields outside the struct (outer IPv4 ID, outer MACs) never split a flow there.

Each case below: two contiguous 1000-byte segments of one inner flow whose outer headers differ in one field.
The phys stage never merges them (a differing outer field either names another flow or flushes), so the tunnel
device gets two skbs of 1040 bytes (inner IPv4 20 + TCP 20 + 1000): one of 2040 when the metadata is equal, two
of 1040 when it differs.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import ROOT

from gro_replay.kernel.model import K_5_11, K_5_12, K_6_18
from gro_replay.packet.build import FrameSpec, build_frame, flow_specs
from gro_replay.sim import PollModel, ReplayConfig, replay_capture, replay_frames

TRIAGE = ROOT.parent / "shared" / "triage"
DF_PCAP = TRIAGE / "outer-df-tunnel-metadata.pcap"
RX = ["none", "unnecessary", "unnecessary-tunnel", "complete"]

BASE = FrameSpec(timestamps=False, payload=1000, outer_csum="zero", udp_dport=4789)
SPLIT, MERGED = [1040, 1040], [2040]


def _lens(kernels, frames=None, path=None, rx="none", fast=True) -> dict:
    seq: dict = {}
    cfg = ReplayConfig(kernels=kernels, rx_csum=rx, poll=PollModel("budget"), rss="none", fast_path=fast)
    cfg.geneve_ports = (6081,)

    def rec(k, stage, dev, skb, now):
        seq.setdefault((k, stage), []).append(skb.len)

    if path is not None:
        replay_capture(str(path), cfg, rec)
    else:
        replay_frames([(i * 1000, f) for i, f in enumerate(frames)], cfg, rec)
    return seq


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("rx", RX)
def test_outer_df_triage_capture(rx, fast):
    """../shared/triage Fidelity row: 6.18 phys 1090, 1090; tunnel 1040, 1040 (measured on Linux 6.18)."""
    if not DF_PCAP.exists():
        pytest.skip(f"{DF_PCAP} not present")
    seq = _lens((K_6_18, K_5_12), path=DF_PCAP, rx=rx, fast=fast)
    assert seq[("6.18", "phys")] == [1090, 1090]
    assert seq[("6.18", "tunnel")] == SPLIT
    # before a9888628cb2c (5.12 here) the DF bit is not in the metadata: one skb of 2040 at the tunnel device
    assert seq[("post-fix", "phys")] == [1090, 1090]
    assert seq[("post-fix", "tunnel")] == MERGED


def _pair(second: FrameSpec, first: FrameSpec = BASE) -> list[bytes]:
    a, b = flow_specs(first, [1000, 1000])
    return [build_frame(a), build_frame(replace(second, seq=b.seq, outer_ip_id=b.outer_ip_id, ip_id=b.ip_id))]


#: (name, second frame's outer change, tunnel skbs on 6.18, tunnel skbs before a9888628cb2c)
CASES = [
    ("outer DF", replace(BASE, outer_df=False), SPLIT, MERGED),
    ("outer TOS", replace(BASE, outer_tos=0x10), SPLIT, SPLIT),
    ("outer ECN bits", replace(BASE, outer_tos=0x01), SPLIT, SPLIT),
    ("outer TTL", replace(BASE, outer_ttl=63), SPLIT, SPLIT),
    ("outer UDP source port", replace(BASE, udp_sport=49153), SPLIT, SPLIT),
    ("outer source address", replace(BASE, outer_src="10.0.0.9"), SPLIT, SPLIT),
    ("outer checksum set (TUNNEL_CSUM)", replace(BASE, outer_csum="computed"), SPLIT, SPLIT),
    ("VNI", replace(BASE, vni=101), SPLIT, SPLIT),
    # not part of ip_tunnel_info: the outer IPv4 ID and the outer MACs (whatever the phys stage does with them,
    # the tunnel device ends with one 2040-byte skb)
    ("outer IPv4 ID", replace(BASE, outer_ip_id=7), MERGED, MERGED),
    ("outer source MAC", replace(BASE, outer_src_mac="02:00:00:00:00:09"), MERGED, MERGED),
]


@pytest.mark.parametrize(("name", "second", "new", "old"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("fast", [True, False])
def test_metadata_fields_ipv4_vxlan(name, second, new, old, fast):
    seq = _lens((K_6_18, K_5_12, K_5_11), _pair(second), fast=fast)
    assert seq[("6.18", "tunnel")] == new
    assert seq[("post-fix", "tunnel")] == old
    assert seq[("pre-fix", "tunnel")] == old


V6 = replace(BASE, outer_ipv6=True)
CASES6 = [
    ("flow label", replace(V6, outer_flow_label=0x12345), SPLIT),
    ("traffic class", replace(V6, outer_tos=0x20), SPLIT),
    ("hop limit", replace(V6, outer_hop_limit=63), SPLIT),
    ("UDP source port", replace(V6, udp_sport=50000), SPLIT),
    ("same outer headers", V6, MERGED),
]


@pytest.mark.parametrize(("name", "second", "want"), CASES6, ids=[c[0] for c in CASES6])
def test_metadata_fields_ipv6_vxlan(name, second, want):
    # a zero UDPv6 checksum is dropped without udp6zerocsumrx: use computed checksums
    first = replace(V6, outer_csum="computed")
    seq = _lens((K_6_18, K_5_12), _pair(replace(second, outer_csum="computed"), first))
    assert seq[("6.18", "tunnel")] == want and seq[("post-fix", "tunnel")] == want


G = replace(BASE, encap="geneve", udp_dport=6081, geneve_options=bytes.fromhex("0102030400000000"))
CASES_G = [
    ("option data", replace(G, geneve_options=bytes.fromhex("0102030400000001")), SPLIT),
    ("no options", replace(G, geneve_options=b""), SPLIT),
    ("critical bit (TUNNEL_CRIT_OPT)", replace(G, geneve_critical=True), SPLIT),
    ("OAM bit (TUNNEL_OAM)", replace(G, geneve_oam=True), SPLIT),
    ("same header", G, MERGED),
]


@pytest.mark.parametrize(("name", "second", "want"), CASES_G, ids=[c[0] for c in CASES_G])
@pytest.mark.parametrize("fast", [True, False])
def test_metadata_fields_geneve(name, second, want, fast):
    seq = _lens((K_6_18,), _pair(second, G), fast=fast)
    assert seq[("6.18", "tunnel")] == want
