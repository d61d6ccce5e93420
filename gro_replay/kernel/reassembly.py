"""IPv6 fragment headers that fragment nothing (net/ipv6/reassembly.c ``ipv6_frag_rcv``).

A fragment header whose offset is 0 and whose M flag is clear ("atomic fragment", RFC 6946) holds the whole
datagram: ``ipv6_frag_rcv`` takes it for no fragment ("It is not a fragmented frame"), steps past its 8 bytes and
returns 1, so ``ip6_input_finish`` goes on with the header after it. GRO does not (no offload handler is
registered for NEXTHDR_FRAGMENT: ipv6_gro_receive flushes the frame). Read in v5.10 and v6.18: unchanged.
"""

from __future__ import annotations

#: net/ipv6 ``struct frag_hdr``: next header, reserved, frag_off (offset and flags, IP6_OFFSET | IP6_MF), id
FRAG_HDR_LEN = 8
IP6_OFFSET_MF = 0xFFF9  #: include/net/ipv6.h ``IP6_OFFSET | IP6_MF`` (host order)
NEXTHDR_FRAGMENT = 44


def ipv6_frag_atomic(buf: bytes | bytearray | memoryview, off: int) -> bool:
    """Whether the fragment header at ``buf[off]`` (its 8 bytes there: the caller checked) fragments nothing: offset
    0 and M clear (``ipv6_frag_rcv``'s ``!(fhdr->frag_off & htons(IP6_OFFSET | IP6_MF))``). Never raises."""
    return not ((buf[off + 2] << 8) | buf[off + 3]) & IP6_OFFSET_MF
