"""net/ipv6/ip6_offload.c ``ipv6_gro_receive`` (gro-spec §3.2).

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
from rule_frames import BASE, FLUSH_P, POST, _three, frames, specs
from test_kernel_harness import rig

from gro_replay.kernel.model import K_5_12, K_6_18

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
