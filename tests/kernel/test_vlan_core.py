"""net/8021q/vlan_core.c ``vlan_gro_receive`` / ``vlan_gro_complete``: an 802.1Q or 802.1ad tag in the inner frame
of a VXLAN/Geneve packet.

The kernel's path: ``eth_gro_receive`` (net/ethernet/eth.c) looks the inner ethertype up with
``gro_find_receive_by_type``; ``vlan_offload_init`` registered ETH_P_8021Q and ETH_P_8021AD (``vlan_packet_offloads``)
with ``vlan_gro_receive``, which reads the 4-byte tag, finds the encapsulated protocol's handler (none: flush), clears
``same_flow`` of held packets whose 4 tag bytes differ (include/linux/if_vlan.h ``compare_vlan_header``: TCI, PCP and
DEI included, and the encapsulated protocol), pulls the tag and calls that handler. At the tunnel device
``eth_type_trans`` leaves ``skb->protocol`` 0x8100, so ``dev_gro_receive`` calls ``vlan_gro_receive`` again.

Frames of tests/kernel/rule_frames.py: VXLAN over IPv4, outer checksum 0, inner IPv4/TCP without options, 1400-byte
payloads, one inner tag (4 bytes): a segment is 1494 bytes at the phys device (outer IPv4 20 + UDP 8 + VXLAN 8 + inner
Ethernet 14 + tag 4 + inner IPv4 20 + TCP 20 + 1400) and 1444 at the tunnel device (from the tag on: 4 + 20 + 20 +
1400); each merged segment adds its 1400 payload bytes. Post-fix kernels, so that udp_gro_receive lets the tunnel
GRO run (gro-spec §4.5).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from rule_frames import BASE, POST, frames, specs
from test_kernel_harness import rig

from gro_replay.kernel.model import K_5_11

#: where the inner tag's TCI sits: outer Ethernet 14 + IPv4 20 + UDP 8 + VXLAN 8 + inner MACs 12 + TPID 2
TCI = 14 + 20 + 8 + 8 + 12 + 2
ONE = 1494  # one tagged segment at the phys device
TUNNEL_ONE = ONE - 50  # from the tag on (outer IPv4 20 + UDP 8 + VXLAN 8 + inner Ethernet 14 pulled)


def tagged(n: int, vid: int | tuple[int, int] = 100, **kw) -> list[bytes]:
    return frames(specs(n, spec=replace(BASE, inner_vlan=vid, **kw)))


@pytest.mark.parametrize("model", POST, ids=lambda m: m.name)
def test_a_tagged_inner_flow_merges_at_both_stages(model):
    # vlan_gro_receive pulls the tag and calls inet_gro_receive: 4 segments make one aggregate at the phys device,
    # and again one at the tunnel device (dev_gro_receive → vlan_gro_receive for skb->protocol 0x8100)
    r = rig(model)
    r.poll(tagged(4))
    assert r.rec.lens("phys") == [ONE + 3 * 1400]
    assert r.rec.lens("tunnel") == [TUNNEL_ONE + 3 * 1400]


def test_pre_fix_the_tunnel_device_merges_what_the_phys_device_refused():
    # v5.11 (pre-fix): udp_gro_receive refuses the outer-checksum-0 frames at the phys device (gro-spec §4.5), each goes up
    # alone; the tunnel device's GRO then walks the tag (vlan_gro_receive) and merges the 4 segments
    r = rig(K_5_11)
    r.poll(tagged(4))
    assert r.rec.lens("phys") == [ONE] * 4
    assert r.rec.lens("tunnel") == [TUNNEL_ONE + 3 * 1400]


@pytest.mark.parametrize("model", POST, ids=lambda m: m.name)
def test_two_vlan_ids_with_the_same_five_tuple_are_two_flows(model):
    # compare_vlan_header differs in the TCI: vlan_gro_receive clears same_flow, so interleaved segments of VID 10
    # and VID 20 (same outer and inner addresses and ports, each with its own contiguous sequence) make one
    # aggregate per VID at each stage
    a = tagged(3, 10)
    b = frames(specs(3, spec=replace(BASE, inner_vlan=20, seq=5_000_000)))
    r = rig(model)
    r.poll([a[0], b[0], a[1], b[1], a[2], b[2]])
    phys = r.rec.at("phys")
    assert sorted(d.frames for d in phys) == [(0, 2, 4), (1, 3, 5)]
    assert [d.len for d in phys] == [ONE + 2 * 1400] * 2
    assert [d.len for d in r.rec.at("tunnel")] == [TUNNEL_ONE + 2 * 1400] * 2


@pytest.mark.parametrize("model", POST, ids=lambda m: m.name)
def test_another_priority_in_the_tci_is_another_flow(model):
    # compare_vlan_header compares the whole TCI: the same VID with PCP 5 in segments 3-4 splits the flow in two
    fs = [bytearray(f) for f in tagged(4)]
    for f in fs[2:]:
        f[TCI] |= 5 << 5  # PCP: the TCI's top 3 bits
    r = rig(model)
    r.poll([bytes(f) for f in fs])
    assert r.rec.lens("phys") == [ONE + 1400] * 2


@pytest.mark.parametrize("model", POST, ids=lambda m: m.name)
def test_an_802_1ad_and_802_1q_pair_merges(model):
    # both TPIDs are in vlan_packet_offloads: the S-tag's vlan_gro_receive calls the C-tag's, which calls IPv4
    r = rig(model)
    r.poll(tagged(3, (7, 100)))
    assert r.rec.lens("phys") == [ONE + 4 + 2 * 1400]
    assert r.rec.lens("tunnel") == [TUNNEL_ONE + 4 + 2 * 1400]


@pytest.mark.parametrize("model", POST, ids=lambda m: m.name)
def test_inner_ipv6_and_geneve(model):
    # the same walk for an inner IPv6 packet (ipv6_gro_receive: 40-byte header) inside Geneve (8-byte header, no
    # options): outer IPv4 20 + UDP 8 + Geneve 8 + inner Ethernet 14 + tag 4 + IPv6 40 + TCP 20 + 1400 = 1514 bytes
    # a segment at the phys device
    r = rig(model)
    r.poll(tagged(3, inner_ipv6=True, encap="geneve"))
    assert r.rec.lens("phys") == [1514 + 2 * 1400]


@pytest.mark.parametrize("model", POST, ids=lambda m: m.name)
def test_a_kernel_without_the_vlan_offloads_merges_nothing(model):
    # CONFIG_VLAN_8021Q not set: no vlan_packet_offloads, eth_gro_receive finds no handler for 0x8100 (flush), and
    # at the tunnel device dev_gro_receive none for skb->protocol 0x8100: every frame goes up alone at both stages
    r = rig(model, vlan_offload=False)
    r.poll(tagged(3))
    assert r.rec.lens("phys") == [ONE] * 3
    assert r.rec.lens("tunnel") == [TUNNEL_ONE] * 3
    assert {d.why for d in r.rec.at("phys")} == {"eth_gro_receive:no_packet_offload(type=0x8100)"}
    assert {d.why for d in r.rec.at("tunnel")} == {"dev_gro_receive:no_packet_offload(type=0x8100)"}


@pytest.mark.parametrize("model", POST, ids=lambda m: m.name)
def test_an_encapsulated_protocol_without_handler_flushes(model):
    # vlan_gro_receive: gro_find_receive_by_type(h_vlan_encapsulated_proto) is NULL for ARP (0x0806): flush, each
    # frame alone, with the reason named after vlan_gro_receive
    fs = [bytearray(f) for f in tagged(3)]
    for f in fs:
        f[TCI + 2 : TCI + 4] = b"\x08\x06"
    r = rig(model)
    r.poll([bytes(f) for f in fs])
    assert r.rec.lens("phys") == [ONE] * 3
    assert {d.why for d in r.rec.at("phys")} == {"vlan_gro_receive:no_packet_offload(type=0x0806)"}
