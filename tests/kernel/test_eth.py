"""net/ethernet/eth.c ``eth_gro_receive`` (gro-spec §5.3): the inner Ethernet header of a tunnelled frame at the
phys device.

Frames of tests/kernel/rule_frames.py: VXLAN over IPv4 with outer checksum 0, inner IPv4/TCP, 1400-byte payloads:
one segment is 1490 bytes at the phys device (90 header bytes), two merged are 2890. Post-fix kernels, so that
udp_gro_receive lets the tunnel GRO run (gro-spec §4.5).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from rule_frames import POST, frames, specs
from test_kernel_harness import rig

from gro_replay.packet.csum import ipv4_header_checksum

#: where the inner ethertype sits in a rule frame: outer Ethernet 14 + IPv4 20 + UDP 8 + VXLAN 8, then 12 bytes of
#: inner MAC addresses
INNER_ETHERTYPE = 14 + 20 + 8 + 8 + 12


@pytest.mark.parametrize("model", POST, ids=lambda m: m.name)
@pytest.mark.parametrize("field", ["inner_dst_mac", "inner_src_mac"])
def test_a_different_inner_ethernet_header_is_another_flow(model, field):
    # eth_gro_receive clears same_flow of a held packet whose 14-byte inner Ethernet header differs
    # (compare_ether_header): segments 1-2 and 3-4 make two aggregates
    r = rig(model)
    sp = specs(4)
    sp[2:] = [replace(s, **{field: "02:00:00:00:01:09"}) for s in sp[2:]]
    r.poll(frames(sp))
    assert r.rec.lens("phys") == [2890, 2890]


@pytest.mark.parametrize("model", POST, ids=lambda m: m.name)
def test_an_inner_ethertype_without_gro_handler_flushes(model):
    # eth_gro_receive finds no packet offload for the inner ethertype (here ARP, 0x0806): flush, every frame goes up
    # on its own with the reason eth_gro_receive:no_packet_offload, carrying the ethertype looked up
    # (``type = eh->h_proto``); at the tunnel device dev_gro_receive finds no handler for skb->protocol either
    fs = [bytearray(f) for f in frames(specs(3))]
    for f in fs:
        f[INNER_ETHERTYPE : INNER_ETHERTYPE + 2] = b"\x08\x06"
    r = rig(model)
    r.poll([bytes(f) for f in fs])
    assert r.rec.lens("phys") == [1490] * 3
    assert {d.why for d in r.rec.at("phys")} == {"eth_gro_receive:no_packet_offload(type=0x0806)"}
    assert {d.why for d in r.rec.at("tunnel")} == {"dev_gro_receive:no_packet_offload(type=0x0806)"}


@pytest.mark.parametrize("model", POST, ids=lambda m: m.name)
def test_a_frame_cut_inside_the_inner_ethernet_header_is_not_merged(model):
    # skb_gro_header_ok fails for the 14 bytes of the inner Ethernet header: flush, one skb per frame
    cut = [f[: INNER_ETHERTYPE - 4] for f in frames(specs(2))]
    fixed = [bytearray(f) for f in cut]
    for f in fixed:  # the outer IPv4 total length and UDP length follow the cut (outer checksum 0)
        tot = len(f) - 14
        f[16:18] = tot.to_bytes(2, "big")
        f[24:26] = b"\0\0"
        f[24:26] = ipv4_header_checksum(bytes(f[14:34])).to_bytes(2, "big")
        f[38:40] = (tot - 20).to_bytes(2, "big")
    r = rig(model)
    r.poll([bytes(f) for f in fixed])
    assert r.rec.lens("phys") == [len(fixed[0]) - 14] * 2
    assert {d.why for d in r.rec.at("phys")} == {"skb_gro_header:short"}
