"""include/net/gro.h ``GRO_RECURSION_LIMIT`` (15) and ``gro_recursion_inc_test``: each nested ``gro_receive`` call
made through ``call_gro_receive``/``call_gro_receive_sk`` (or the INDIRECT_CALL forms with the same test) does
``++NAPI_GRO_CB(skb)->recursion_counter == GRO_RECURSION_LIMIT``; when it is true the skb is flushed
(``flush |= 1``) and the next handler is not called. fcd91dd44946 "net: add recursion limit to GRO" (v4.9),
older than every kernel modelled. ``dev_gro_receive`` zeroes the counter and calls the L3 handler without the test;
tcp4/udp4_gro_receive call tcp_gro_receive/udp_gro_receive directly.

The counted calls of a VXLAN/IPv4/TCP frame at the phys device: inet_gro_receive → udp4_gro_receive (1),
udp_gro_receive → vxlan_gro_receive (``call_gro_receive_sk``, 2), vxlan_gro_receive → eth_gro_receive (3),
eth_gro_receive → inet_gro_receive (4), inet_gro_receive → tcp4_gro_receive (5). Each inner VLAN tag puts one
vlan_gro_receive between eth and inet: one more call. With N tags the call to tcp4_gro_receive is the (5 + N)th, so
N = 10 reaches 15 there and every frame is flushed, N = 9 merges. Geneve (geneve_gro_receive →
``call_gro_receive`` of the ETH_P_TEB handler) and an inner IPv6 packet (ipv6_gro_receive → tcp6_gro_receive) count
the same. At the tunnel device ``dev_gro_receive`` calls vlan_gro_receive (skb->protocol 0x8100) uncounted: the N
tags make N counted calls up to inet, then inet → tcp4 is the (N + 1)th: N = 14 is flushed there, N = 13 merges.

Frames (tests/kernel/rule_frames.py): VXLAN over IPv4, outer UDP checksum 0, inner IPv4/TCP, 1400-byte payloads,
post-fix kernels: 1490 bytes at the phys device and 1440 at the tunnel device untagged, 4 more per tag.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from rule_frames import BASE, POST, fix_outer_ipv4_checksum, frames, specs
from test_kernel_harness import rig

from gro_replay.kernel import reasons as R

#: the first inner TPID: outer Ethernet 14 + IPv4 20 + UDP 8 + VXLAN/Geneve 8 + inner MACs 12
TPID = 14 + 20 + 8 + 8 + 12
PHYS, TUNNEL = 1490, 1440  # an untagged segment at each device


def deep(n_tags: int, n: int = 3, **kw) -> list[bytes]:
    """``n`` segments of one flow with ``n_tags`` inner 802.1Q tags (VID 100): FrameSpec makes one, the others are
    inserted before it, and the outer IPv4 total length, header checksum and UDP length grow by 4 each."""
    out = []
    for f in frames(specs(n, spec=replace(BASE, inner_vlan=100, **kw))):
        extra = b"\x81\x00\x00\x64" * (n_tags - 1)
        b = bytearray(f[:TPID] + extra + f[TPID:])
        b[16:18] = (int.from_bytes(b[16:18], "big") + len(extra)).to_bytes(2, "big")
        b[38:40] = (int.from_bytes(b[38:40], "big") + len(extra)).to_bytes(2, "big")
        out.append(fix_outer_ipv4_checksum(b))
    return out


@pytest.mark.parametrize("model", POST, ids=lambda m: m.name)
def test_ten_tags_reach_the_limit_at_the_phys_device_nine_merge(model):
    r = rig(model)
    r.poll(deep(10))
    assert r.rec.lens("phys") == [PHYS + 40] * 3
    assert {d.why for d in r.rec.at("phys")} == {R.GRO_RECURSION_LIMIT}
    r = rig(model)
    r.poll(deep(9))
    assert r.rec.lens("phys") == [PHYS + 36 + 2 * 1400]


@pytest.mark.parametrize("model", POST, ids=lambda m: m.name)
def test_geneve_and_inner_ipv6_count_the_same(model):
    # Geneve 8 bytes without options, inner IPv6 40: 1510 bytes a segment untagged
    r = rig(model)
    r.poll(deep(10, encap="geneve", inner_ipv6=True))
    assert r.rec.lens("phys") == [1510 + 40] * 3
    assert {d.why for d in r.rec.at("phys")} == {R.GRO_RECURSION_LIMIT}
    r = rig(model)
    r.poll(deep(9, encap="geneve", inner_ipv6=True))
    assert r.rec.lens("phys") == [1510 + 36 + 2 * 1400]


@pytest.mark.parametrize("model", POST, ids=lambda m: m.name)
def test_fourteen_tags_reach_the_limit_at_the_tunnel_device_thirteen_merge(model):
    # both are flushed at the phys device (N >= 10); the tunnel device's chain is shorter by the 4 calls before eth
    r = rig(model)
    r.poll(deep(14))
    assert r.rec.lens("phys") == [PHYS + 56] * 3
    assert r.rec.lens("tunnel") == [TUNNEL + 56] * 3
    assert {d.why for d in r.rec.at("tunnel")} == {R.GRO_RECURSION_LIMIT}
    r = rig(model)
    r.poll(deep(13))
    assert r.rec.lens("phys") == [PHYS + 52] * 3
    assert r.rec.lens("tunnel") == [TUNNEL + 52 + 2 * 1400]


def test_the_counter_restarts_for_each_skb():
    # dev_gro_receive zeroes recursion_counter: nine-tag segments keep merging however many came before
    r = rig(POST[-1])
    r.poll(deep(9, n=6))
    assert r.rec.lens("phys") == [PHYS + 36 + 5 * 1400]
