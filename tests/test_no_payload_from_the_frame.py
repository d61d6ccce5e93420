"""``packet.headers.tcp_payload_len``: the TCP payload of a frame's innermost TCP segment, by the lengths its IP
headers declare, past VLAN tags, tunnel headers, IPv4 options and IPv6 extension headers.

tcp_gro_receive (net/ipv4/tcp_offload.c) merges no TCP segment without payload, in any kernel; whether a segment
carries any is read here from the frame, wherever GRO stops it.
"""

from __future__ import annotations

from dataclasses import replace

from test_padding_and_trailers import _inner_padded

from gro_replay.packet.build import FrameSpec, build_frame
from gro_replay.packet.csum import ip_fast_csum
from gro_replay.packet.headers import tcp_payload_len

VXLAN = {4789: "vxlan"}
#: where the inner Ethernet header's EtherType starts in a VXLAN-over-IPv4 frame: outer Ethernet 14, IPv4 20, UDP
#: 8, VXLAN 8, inner MAC addresses 12
INNER_ETYPE = 14 + 20 + 8 + 8 + 12


def inner_vlan(frame: bytes, tci: int = 5) -> bytes:
    """VXLAN-over-IPv4 ``frame`` (outer UDP checksum 0) with an 802.1Q tag in its inner Ethernet header: 4 bytes
    before the inner EtherType; the outer IPv4 total length, header checksum and UDP length grow by 4."""
    tag = bytes([0x81, 0x00, tci >> 8, tci & 0xFF])
    b = bytearray(frame[:INNER_ETYPE] + tag + frame[INNER_ETYPE:])
    b[16:18] = (int.from_bytes(b[16:18], "big") + 4).to_bytes(2, "big")
    b[24:26] = b"\0\0"
    b[24:26] = ip_fast_csum(b, 14, 5).to_bytes(2, "big")
    b[38:40] = (int.from_bytes(b[38:40], "big") + 4).to_bytes(2, "big")
    return bytes(b)


def _trailer(frame: bytes) -> bytes:
    """4 bytes after the inner datagram, inside the outer one (a switch's trailer before a hardware VTEP)."""
    return _inner_padded(frame, 4)


# -- the reading itself ---------------------------------------------------------------------------------------------


def test_the_payload_is_read_past_whatever_headers_come_before_it():
    # FrameSpec builds VXLAN over IPv4 with inner IPv4 and TCP with timestamps (32 bytes); payload = what is asked
    ack = FrameSpec(payload=0)
    assert tcp_payload_len(build_frame(ack), VXLAN) == 0
    assert tcp_payload_len(build_frame(FrameSpec(payload=1398)), VXLAN) == 1398
    # inner IPv4 options (IHL 6): the TCP header starts 4 bytes later, the payload is the same
    assert tcp_payload_len(build_frame(replace(ack, ip_options=b"\x01" * 4)), VXLAN) == 0
    assert tcp_payload_len(build_frame(FrameSpec(payload=100, ip_options=b"\x01" * 4)), VXLAN) == 100
    # an inner VLAN tag (vlan_gro_receive, net/8021q/vlan_core.c, walks it in the kernel)
    assert tcp_payload_len(inner_vlan(build_frame(ack)), VXLAN) == 0
    assert tcp_payload_len(inner_vlan(build_frame(FrameSpec(payload=1398))), VXLAN) == 1398
    # inner IPv6 with a destination-options header (8 bytes, counted in payload_len) and a 4-byte trailer after
    # the inner datagram: payload by the inner header's length (validate.py read the frame's length there: 4)
    v6 = replace(ack, inner_ipv6=True, ipv6_ext=[(60, b"")])
    assert tcp_payload_len(_trailer(build_frame(v6)), VXLAN) == 0
    assert tcp_payload_len(_trailer(build_frame(replace(v6, payload=10))), VXLAN) == 10
    # Geneve with 8 bytes of options (Geneve header 8 + 8)
    geneve = replace(ack, encap="geneve", geneve_options=bytes([1, 2, 3, 1, 0, 0, 0, 0]))
    assert tcp_payload_len(build_frame(geneve), {6081: "geneve"}) == 0
    # padded inner frame (an ACK without timestamps: 54 bytes, padded to 60 before a VTEP encapsulated it)
    assert tcp_payload_len(_inner_padded(build_frame(replace(ack, timestamps=False)), 6), VXLAN) == 0


def test_a_length_of_zero_declares_none_and_an_outer_length_still_bounds_the_datagram():
    # BIG TCP (iph_totlen, include/net/ip.h): an inner tot_len of 0 declares no length, the payload runs to the
    # end of the outer datagram — not into a 4-byte FCS captured after it
    b = bytearray(build_frame(FrameSpec(payload=1398)))
    inner_l3 = INNER_ETYPE + 2
    b[inner_l3 + 2 : inner_l3 + 4] = b"\0\0"
    assert tcp_payload_len(bytes(b), VXLAN) == 1398
    assert tcp_payload_len(bytes(b) + b"\0" * 4, VXLAN) == 1398


def test_what_is_no_whole_tcp_segment_has_no_reading():
    ack = FrameSpec(payload=0)
    assert tcp_payload_len(build_frame(ack), {}) is None  # outer UDP to no tunnel port
    assert tcp_payload_len(build_frame(replace(ack, frag_off=100)), VXLAN) is None  # an inner fragment
    frame = build_frame(ack)
    assert tcp_payload_len(frame[: INNER_ETYPE + 2 + 20 + 10], VXLAN) is None  # TCP header cut short
    assert tcp_payload_len(frame[:20], VXLAN) is None
