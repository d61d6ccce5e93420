"""The rx tunnel metadata dst per release (issue 11 item 1): what gro_cells GRO compares at the tunnel device.

Kernel rule (include/net/dst_metadata.h ``skb_metadata_dst_cmp``, called from net/core/gro.c ``gro_list_prepare``
for skbs with ``slow_gro``): two decapsulated skbs are the same flow only when their whole ``ip_tunnel_info``
(plus options) is byte-equal. ``udp_tun_rx_dst`` / ``ip_tun_rx_dst`` / ``ipv6_tun_rx_dst`` fill it from the outer
headers: addresses, TOS/traffic class, TTL/hop limit, IPv6 flow label, UDP ports, TUNNEL_CSUM (outer UDP check
!= 0), TUNNEL_KEY + VNI, Geneve O/C bits and options, and — since a9888628cb2c (v6.17) — TUNNEL_DONT_FRAGMENT from
the outer IPv4 DF bit. Fields outside the struct (outer IPv4 ID, outer MACs) never split a flow there.

VXLAN Group Based Policy (drivers/net/vxlan/vxlan_core.c ``vxlan_parse_gbp_hdr``, same text in every modelled
release 4.19 … 6.18): on a device made with ``gbp`` a G-flagged frame gets TUNNEL_VXLAN_OPT and a 4-byte
``struct vxlan_metadata`` option (policy ID, D = VXLAN_GBP_DONT_LEARN, A = VXLAN_GBP_POLICY_APPLIED); every other bit
of the flags word's low 24 (``VXLAN_GBP_USED_BITS``) is consumed and ignored, so it splits the phys stage (the whole
header word is compared by ``vxlan_gro_receive``) but not the tunnel stage. Without ``gbp`` a G-flagged frame is
dropped (unparsed flag). The UDP destination port (``tp_dst``) never differs inside one device's gro_cells: each
port is its own device, so one inner flow sent to two ports is two flows on two devices.

Geneve (drivers/net/geneve.c ``geneve_rx``): the metadata dst gets TUNNEL_KEY, TUNNEL_OAM from the O bit and
TUNNEL_CRIT_OPT from the C bit (``udp_tun_rx_dst``), then ``ip_tunnel_info_opts_set(info, gnvh->options,
opt_len * 4, TUNNEL_GENEVE_OPT)`` sets ``options_len`` and copies the options (include/net/ip_tunnels.h: the flag
only when len > 0); ``skb_metadata_dst_cmp`` memcmp's ``sizeof(ip_tunnel_info) + options_len`` bytes, so option
length, option bytes and the O/C bits each split a flow. These cases are simulator-only: the machine's kernel
(6.18) has no Geneve (``CONFIG_GENEVE`` not set, no module: ``ip link add … type geneve`` fails), so the kernel
backend counts Geneve frames as ``geneve_not_built_in`` and the random differential
(tests/test_validate_metadata.py) cannot send them; the expected values come from the kernel source above.

Each case below: two contiguous 1000-byte segments of one inner flow whose outer headers differ in one field.
The phys stage never merges them (a differing outer field either names another flow or flushes), so the tunnel
device gets two skbs of 1040 bytes (inner IPv4 20 + TCP 20 + 1000): one of 2040 when the metadata is equal, two
of 1040 when it differs.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import ROOT

from gro_replay.kernel.model import K_4_19, K_5_11, K_5_12, K_6_18
from gro_replay.packet.build import FrameSpec, build_frame, flow_specs
from gro_replay.packet.vxlan import gbp_flags
from gro_replay.sim import PollModel, ReplayConfig, replay_capture, replay_frames

TRIAGE = ROOT.parent / "shared" / "triage"
DF_PCAP = TRIAGE / "outer-df-tunnel-metadata.pcap"
RX = ["none", "unnecessary", "unnecessary-tunnel", "complete"]

BASE = FrameSpec(timestamps=False, payload=1000, outer_csum="zero", udp_dport=4789)
SPLIT, MERGED = [1040, 1040], [2040]


def _lens(kernels, frames=None, path=None, rx="none", fast=True, gbp=False, by_dev=False) -> dict:
    seq: dict = {}
    cfg = ReplayConfig(
        kernels=kernels,
        rx_csum=rx,
        poll=PollModel("budget"),
        rss="none",
        fast_path=fast,
        vxlan_ports=(4789, 4790),
        vxlan_gbp=gbp,
    )
    cfg.geneve_ports = (6081,)

    def rec(k, stage, dev, skb, now):
        seq.setdefault((k, dev if by_dev else stage), []).append(skb.len)

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


# Geneve options: length as well as content (the memcmp covers options_len bytes; options_len is in the struct)
CASES_G_LEN = [
    (
        "longer options, same prefix",
        replace(G, geneve_options=bytes.fromhex("0102030400000000 00000000")),
        SPLIT,
    ),
    ("same options, O and C", replace(G, geneve_oam=True, geneve_critical=True), SPLIT),
]


@pytest.mark.parametrize(("name", "second", "want"), CASES_G_LEN, ids=[c[0] for c in CASES_G_LEN])
def test_metadata_geneve_option_length(name, second, want):
    seq = _lens((K_6_18, K_5_12, K_5_11), _pair(second, G))
    for k in ("6.18", "post-fix", "pre-fix"):  # geneve_rx's metadata is the same in every modelled release
        assert seq[(k, "tunnel")] == want


def test_geneve_metadata_dst_fields():
    """``udp_tun_rx_dst`` for Geneve, field by field: options bytes and length, TUNNEL_GENEVE_OPT only with options
    (``ip_tunnel_info_opts_set``), O → TUNNEL_OAM, C → TUNNEL_CRIT_OPT (geneve.c ``geneve_rx``)."""
    from gro_replay.kernel.dst_metadata import (
        TUNNEL_CRIT_OPT,
        TUNNEL_DONT_FRAGMENT,
        TUNNEL_GENEVE_OPT,
        TUNNEL_OAM,
        udp_tun_rx_dst,
    )
    from gro_replay.kernel.dst_metadata import TUNNEL_KEY as KEY
    from gro_replay.kernel.geneve import geneve_tun_flags

    def md(spec):
        f = build_frame(spec)
        gs = 14 + 20 + 8
        opts = bytes(f[gs + 8 : gs + 8 + (f[gs] & 0x3F) * 4])
        return udp_tun_rx_dst(K_6_18, f, 14, 34, geneve_tun_flags(f[gs + 1], opts), 100, opts)

    TUNNEL_KEY = KEY | TUNNEL_DONT_FRAGMENT  # the frames have the outer DF bit (6.18: a9888628cb2c)
    base = md(G)
    assert base[7] == TUNNEL_KEY | TUNNEL_GENEVE_OPT and base[9] == bytes.fromhex("0102030400000000")
    assert md(replace(G, geneve_options=b""))[7] == TUNNEL_KEY  # no options: no TUNNEL_GENEVE_OPT
    assert md(replace(G, geneve_oam=True))[7] == TUNNEL_KEY | TUNNEL_GENEVE_OPT | TUNNEL_OAM
    assert md(replace(G, geneve_critical=True))[7] == TUNNEL_KEY | TUNNEL_GENEVE_OPT | TUNNEL_CRIT_OPT
    assert md(replace(G, geneve_options=bytes(12)))[9] == bytes(12)


# -- VXLAN GBP -----------------------------------------------------------------------------------------------------
def _gbp(flags: int) -> FrameSpec:
    return replace(BASE, vxlan_flags=flags)


#: (name, first frame's flags word, second frame's, tunnel skbs on a gbp device) — measured on Linux 6.18 as well
#: (tests/test_validate_metadata.py::test_validate_gbp_and_dport_pairs)
CASES_GBP = [
    ("policy ID", gbp_flags(5), gbp_flags(6), SPLIT),
    ("D bit (VXLAN_GBP_DONT_LEARN)", gbp_flags(5), gbp_flags(5, dont_learn=True), SPLIT),
    ("A bit (VXLAN_GBP_POLICY_APPLIED)", gbp_flags(5), gbp_flags(5, policy_applied=True), SPLIT),
    ("G flag set vs clear", gbp_flags(0, g=False), gbp_flags(0), SPLIT),  # TUNNEL_VXLAN_OPT, options_len 4
    # consumed by VXLAN_GBP_USED_BITS but not stored: split at the phys stage only
    ("reserved bit of the GBP byte", gbp_flags(5), gbp_flags(5) | 1 << 16, MERGED),
    ("policy bits without G (ignored)", gbp_flags(0, g=False), gbp_flags(9, g=False), MERGED),
    ("same GBP header", gbp_flags(5, dont_learn=True), gbp_flags(5, dont_learn=True), MERGED),
]


@pytest.mark.parametrize(("name", "f1", "f2", "want"), CASES_GBP, ids=[c[0] for c in CASES_GBP])
@pytest.mark.parametrize("fast", [True, False])
def test_metadata_vxlan_gbp(name, f1, f2, want, fast):
    seq = _lens((K_6_18, K_5_12, K_5_11, K_4_19), _pair(_gbp(f2), _gbp(f1)), fast=fast, gbp=True)
    for k in (
        "6.18",
        "post-fix",
        "pre-fix",
        "4.19",
    ):  # vxlan_parse_gbp_hdr: the same in every modelled release
        assert seq[(k, "tunnel")] == want, k
    # the phys stage compares the whole VXLAN header word (vxlan_gro_receive): equal words merge there
    assert seq[("6.18", "phys")] == ([2090] if f1 == f2 else [1090, 1090])


def test_vxlan_gbp_frame_dropped_without_gbp():
    """vxlan_rcv: a G flag on a device without VXLAN_F_GBP stays unparsed, and the frame is dropped."""
    seq = _lens((K_6_18,), _pair(_gbp(gbp_flags(5)), _gbp(gbp_flags(0, g=False))))
    assert seq[("6.18", "phys")] == [1090, 1090] and seq[("6.18", "tunnel")] == [1040]


def test_vxlan_two_ports_two_devices():
    """One inner flow sent to ports 4789 then 4790: two vxlan devices (one socket each, vxlan_sock_add), so
    the segments never meet in one gro_cells: one 1040-byte skb on each device."""
    seq = _lens((K_6_18,), _pair(replace(BASE, udp_dport=4790)), by_dev=True)
    assert seq[("6.18", "vxlan0")] == [1040] and seq[("6.18", "vxlan0-4790")] == [1040]
