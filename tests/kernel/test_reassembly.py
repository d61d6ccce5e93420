"""kernel/reassembly.py: ``ipv6_frag_rcv``'s test of a fragment header that fragments nothing (net/ipv6/reassembly.c:
``!(fhdr->frag_off & htons(IP6_OFFSET | IP6_MF))``), bit by bit, and the stack and decoder stepping past it."""

from __future__ import annotations

import struct

import pytest

from gro_replay.kernel.reassembly import ipv6_frag_atomic
from gro_replay.packet.decode import ipv6_upper


@pytest.mark.parametrize(
    ("frag_off", "atomic"),
    [
        (0x0000, True),  # offset 0, M clear
        (0x0006, True),  # the two reserved bits (res, 0x0006) are no part of IP6_OFFSET | IP6_MF
        (0x0001, False),  # M set: the first fragment of several
        (0x0008, False),  # offset 1 (8 bytes), M clear: the last fragment
        (0xFFF8, False),  # the largest offset
        (0x0009, False),
    ],
)
def test_the_fragment_offset_and_m_flag_decide(frag_off, atomic):
    hdr = struct.pack("!BBHI", 17, 0, frag_off, 99)
    assert ipv6_frag_atomic(hdr, 0) is atomic


def test_the_walk_steps_past_an_atomic_fragment_header_only():
    """An IPv6 header, then a destination options header (8 bytes), a fragment header, UDP: past an atomic one
    the walk reaches UDP (17) at byte 56; a real fragment's header stops it (44 at byte 48)."""
    ip6 = bytearray(40)
    ip6[0], ip6[6] = 0x60, 60
    dst = bytes([44, 0, 1, 4, 0, 0, 0, 0])
    for frag_off, want in ((0, (17, 56)), (1, (44, 48))):
        frame = bytes(ip6) + dst + struct.pack("!BBHI", 17, 0, frag_off, 1) + bytes(8)
        assert ipv6_upper(frame, 0, len(frame)) == want
