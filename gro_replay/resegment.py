"""Split captured super-frames of tunnelled TCP back into the wire-sized frames a receiving NIC would have seen.

Captures hold frames larger than the MTU: a receiver's capture shows post-GRO skbs (AF_PACKET taps sit after
GRO), a sender's capture shows TSO/GSO skbs before the NIC or ``dev_hard_start_xmit`` segments them, and BIG TCP
skbs (> 64 KiB) carry an IPv4 total length of 0 (IPv6: payload length 0, with or without the jumbo hop-by-hop
option). ``Resegmenter.split`` turns one such frame of TCP inside VXLAN or Geneve into the frames the segmentation
code would have produced:

* inner TCP: payload cut into ``mss``-byte pieces, ``seq`` advanced by each piece, FIN and PSH only on the last
  segment, CWR only on the first, checksum computed over the pseudo header (the captured value is only a
  pseudo-header sum on TX, ``CHECKSUM_PARTIAL``);
* inner IPv4: ``tot_len`` per segment, ID incremented per segment, header checksum rebuilt; inner IPv6:
  ``payload_len`` per segment;
* outer UDP: length per segment; checksum 0 when the captured one was 0 (no ``SKB_GSO_UDP_TUNNEL_CSUM``),
  else computed over the segment (the captured value is "not final": TX offload had not filled it yet);
* outer IPv4: ``tot_len``, ID incremented, header checksum; outer IPv6: ``payload_len``; every other header byte
  (L2 with VLAN tags, tunnel header with Geneve options, inner Ethernet, TCP options) copied per segment.

Headers are read in place with ``struct`` (the replay path never builds dpkt object trees); tests
verify the output independently with dpkt and ``packet.build``.

Kernel: net/ipv4/tcp_offload.c ``tcp_gso_segment`` (seq, FIN/PSH cleared on all but the last, CWR cleared after the
first); net/ipv4/af_inet.c ``inet_gso_segment`` (``id = ntohs(iph->id)`` of the super-frame, then
``iph->id = htons(id++)`` per segment unless fixedid, ``tot_len``, ``ip_send_check``; it runs once for the outer and once for
the inner IPv4 header, so segment i of a super-frame with ids (O, I) carries (O + i, I + i) mod 2^16; fixedid is
SKB_GSO_TCP_FIXEDID, innermost header only until "net: gso: restore ids of outer ip headers correctly" (net-next,
Sep 2025), ``SKB_GSO_TCP_FIXEDID << encap`` (outer / FIXEDID_INNER) since); net/ipv6/ip6_offload.c
``ipv6_gso_segment`` (``payload_len``; IPv6 has no id); net/ipv4/udp_offload.c ``__skb_udp_tunnel_segment`` (outer
UDP length per segment, checksum only with SKB_GSO_UDP_TUNNEL_CSUM); BIG TCP: net/ipv4/ip_output.c /
include/net/ip.h ``iph_set_totlen`` (0 above 64 KiB), include/linux/ipv6.h ``ipv6_has_hopopt_jumbo``.

IDs across super-frames are the capture's: a Linux sender leaves room for every segment (the next super-frame's id
is ``gso_segs`` on: include/net/ip.h ``ip_select_ident_segs`` for the inner header, net/ipv4/ip_tunnel_core.c
``iptunnel_xmit`` for the outer; synth.py ``Scenario.gso_segs``). Where the capture leaves no room (a non-Linux
sender, FIXEDID upstream, an MSS smaller than the sender's gso_size, jumbo wire frames taken for super-frames) the
segments still count up from each super-frame's id, the ids of neighbouring super-frames overlap, and the replay
shows GRO's IP ID rule ending the aggregates there (``tcp_gro_receive:inner_ip_id``): input, not smoothed over.

Left out: SKB_GSO_TCP_FIXEDID (IDs always increment; a capture does not show gso_type), AccECN's CWR on every
segment, the URG pointer (copied), non-TCP inner protocols (UDP GSO, fraglist), IPv6 extension headers other than a
jumbo-only hop-by-hop header, inner VLAN tags, and tunnels other than VXLAN and Geneve (those frames are replayed as
captured and counted).
"""

from __future__ import annotations

import struct
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from .packet.csum import ipv4_header_checksum, l4_checksum_field, pseudo4, pseudo6
from .packet.headers import vlan_l3

ETH_P_IP = 0x0800
ETH_P_IPV6 = 0x86DD
ETH_P_TEB = 0x6558
_VLAN_TPIDS = (0x8100, 0x88A8, 0x9100)
IPPROTO_HOPOPTS = 0
IPPROTO_TCP = 6
IPPROTO_UDP = 17
IPV6_TLV_JUMBO = 0xC2  #: include/uapi/linux/in6.h
TCP_FIN = 0x01
TCP_PSH = 0x08
TCP_CWR = 0x80

_H = struct.Struct("!H")
_I = struct.Struct("!I")

# Reasons a frame above the MTU is replayed as captured (counted in InputStats.oversize_not_split).
KEEP_NOT_IP = "not_ip"
KEEP_FRAGMENT = "ip_fragment"
KEEP_NOT_TUNNEL = "not_vxlan_geneve"
KEEP_NOT_TCP = "inner_not_tcp"
KEEP_IPV6_EXT = "ipv6_extension_headers"
KEEP_MALFORMED = "malformed"
KEEP_NO_MSS = "mtu_below_headers"
KEEP_WITHIN_MSS = "payload_within_mss"
KEEP_MSS_TOO_SMALL = "mss_below_tcp_min_snd_mss"
#: why, in words (the input note: sim/size_notes.py ``kept_text``)
KEEP_WORDS = {
    KEEP_NOT_IP: "not IP",
    KEEP_FRAGMENT: "an IP fragment",
    KEEP_NOT_TUNNEL: "not VXLAN or Geneve on a configured port",
    KEEP_NOT_TCP: "the inner packet is not TCP",
    KEEP_IPV6_EXT: "IPv6 extension headers",
    KEEP_MALFORMED: "malformed headers",
    KEEP_NO_MSS: "--mtu leaves no room for TCP payload after the headers",
    KEEP_WITHIN_MSS: "its TCP payload fits one segment already",
    KEEP_MSS_TOO_SMALL: (
        "the MSS would make segments smaller than a Linux sender ever does (TCP_MIN_SND_MSS 48 bytes with the TCP "
        "options: 36 payload bytes with timestamps, 48 without)"
    ),
}

#: The smallest MSS a Linux sender uses: include/net/tcp.h ``TCP_MIN_SND_MSS`` (48), the default of
#: net.ipv4.tcp_min_snd_mss (5f3e2bf008c2 "tcp: add tcp_min_snd_mss sysctl", v5.2). It counts the TCP options:
#: net/ipv4/tcp_output.c ``__tcp_mtu_to_mss`` floors the MSS before ``tcp_mtu_to_mss`` subtracts them ("reserve room
#: for full set of TCP options and 8 bytes of data"), so a full segment carries at least 48 bytes of options and
#: payload (:func:`min_payload`; synth.py ``Scenario.min_mtu``). A split into smaller segments is refused, counted.
TCP_MIN_SND_MSS = 48
#: The most TCP option bytes a segment carries (a 4-bit data offset: 60 − 20), so the smallest payload
#: :func:`min_payload` gives is 8.
MAX_TCP_OPTION_BYTES = 40


def min_payload(tcp_opt_len: int) -> int:
    """The smallest payload (bytes) of a full segment a Linux sender makes when its segments carry ``tcp_opt_len``
    bytes of TCP options (0..40): ``TCP_MIN_SND_MSS`` less the options, 36 with timestamps (12 bytes), 48 without.
    Kernel: net/ipv4/tcp_output.c ``__tcp_mtu_to_mss`` (the floor) and ``tcp_mtu_to_mss`` / ``tcp_current_mss``
    (the options subtracted after it)."""
    return TCP_MIN_SND_MSS - tcp_opt_len


def mss_option_payload(mss_option: int, tcp_opt_len: int) -> int:
    """The payload (bytes) of a full segment of a sender whose MSS is ``mss_option`` (a SYN's MSS option value,
    which counts no TCP options: RFC 6691 §2) when its segments carry ``tcp_opt_len`` bytes of TCP options: the MSS
    raised to ``TCP_MIN_SND_MSS``, less the options. Kernel: net/ipv4/tcp_output.c ``__tcp_mtu_to_mss`` clamps to
    ``rx_opt.mss_clamp`` (the MSS option) and floors at ``tcp_min_snd_mss``; ``tcp_mtu_to_mss`` and
    ``tcp_current_mss`` then subtract the options (12 for timestamps: MSS 1000 sends 988-byte segments)."""
    return max(mss_option, TCP_MIN_SND_MSS) - tcp_opt_len


#: The smallest link MTU IPv6 runs on: RFC 8200 §5 ("every link in the Internet have an MTU of 1280 octets or
#: greater"), include/uapi/linux/ipv6.h ``IPV6_MIN_MTU``. Linux never sizes an IPv6 packet below it: net/ipv6/addrconf.c
#: takes IPv6 off a device whose MTU drops below it (``addrconf_notify`` NETDEV_CHANGEMTU), and net/ipv6/route.c
#: ``__ip6_rt_update_pmtu`` never lowers a path MTU below it (raised to it; ignored in newer kernels).
IPV6_MIN_MTU = 1280


@dataclass(slots=True)
class AboveMtu:
    """The segments splits made whose outer IP packet exceeds the MTU, which only a ``--resegment MSS`` larger than
    what fits does (``auto`` never takes more than fits): ``segments``, the ``largest`` such packet (bytes) and
    ``fit``, the largest MSS that fits the MTU with the headers of every super-frame they came from (None: none),
    and ``floor``, the largest of those super-frames' smallest full-segment payloads (:func:`min_payload`: a
    ``--resegment`` of ``fit`` splits them all when ``fit >= floor``)."""

    segments: int = 0
    largest: int = 0
    fit: int | None = None
    floor: int = 0


class SuperFrame(NamedTuple):
    """A parsed super-frame: a header template with its offsets, and where the TCP payload lies in the capture.

    ``hdr`` holds every header byte from the outer Ethernet header to the end of the TCP options (a jumbo
    hop-by-hop header left out); offsets index ``hdr``. ``payload``: (start, end) byte offsets in the captured
    frame. ``outer_len``: the outer IP datagram's length in bytes as captured (derived from the frame when the
    length field is 0). ``zero_len``: some length field was 0 (BIG TCP).
    """

    hdr: bytes
    outer_l3: int
    outer_v6: bool
    udp: int
    udp_csum: bool
    inner_l3: int
    inner_v6: bool
    tcp: int
    payload: tuple[int, int]
    outer_len: int
    zero_len: bool

    @property
    def payload_len(self) -> int:
        return self.payload[1] - self.payload[0]

    @property
    def min_payload(self) -> int:
        """The smallest payload of a full segment carrying this frame's TCP options (:func:`min_payload`)."""
        return min_payload(len(self.hdr) - self.tcp - 20)

    @property
    def mtu_overhead(self) -> int:
        """Bytes of one segment's outer IP datagram that are not TCP payload (outer IP header … TCP options)."""
        return len(self.hdr) - self.outer_l3


def _ipv6(buf: bytes, l3: int, limit: int) -> tuple[int, int, int, bool] | str:
    """Parse an IPv6 header at ``l3``: (next header, L4 offset, datagram end, payload_len was 0) or a reason.

    A hop-by-hop header holding only the jumbo option (RFC 2675) is skipped; other extension headers refuse.
    """
    if l3 + 40 > limit or buf[l3] >> 4 != 6:
        return KEEP_MALFORMED
    (plen,) = _H.unpack_from(buf, l3 + 4)
    nexthdr = buf[l3 + 6]
    l4 = l3 + 40
    jumbo = not plen or limit - l4 > 0xFFFF
    end = limit if jumbo else l4 + plen
    if nexthdr == IPPROTO_HOPOPTS:
        if l4 + 8 > limit or buf[l4 + 1] != 0 or buf[l4 + 2] != IPV6_TLV_JUMBO or buf[l4 + 3] != 4:
            return KEEP_IPV6_EXT
        if jumbo:
            end = l3 + 40 + _I.unpack_from(buf, l4 + 4)[0]
        nexthdr = buf[l4]
        l4 += 8
    if nexthdr in (43, 44, 51, 60):
        return KEEP_IPV6_EXT if nexthdr != 44 else KEEP_FRAGMENT
    if end > limit:
        return KEEP_MALFORMED
    return nexthdr, l4, end, jumbo


def parse_super_frame(buf: bytes, tunnel_ports: dict[int, str]) -> SuperFrame | str:  # noqa: C901, PLR0915 - one pass over the headers, outer to inner, each layer's refusal inline
    """Parse an Ethernet frame of TCP in VXLAN/Geneve over IPv4/IPv6 (outer and inner VLAN tags allowed).

    Args: buf: the captured frame; tunnel_ports: UDP destination port → ``"vxlan"`` or ``"geneve"``.
    Returns: a SuperFrame, or a reason (``KEEP_*``) why the frame cannot be split.
    """
    n = len(buf)
    eth = vlan_l3(buf)
    if eth is None:
        return KEEP_MALFORMED
    etype, l3 = eth
    pieces: list[bytes] = []
    zero_len = False
    if etype == ETH_P_IP:
        if l3 + 20 > n or buf[l3] >> 4 != 4:
            return KEEP_MALFORMED
        ihl = (buf[l3] & 0x0F) * 4
        (tot_len,) = _H.unpack_from(buf, l3 + 2)
        if _H.unpack_from(buf, l3 + 6)[0] & 0x3FFF:
            return KEEP_FRAGMENT
        if buf[l3 + 9] != IPPROTO_UDP:
            return KEEP_NOT_TUNNEL
        if not tot_len or n - l3 > 0xFFFF:
            # BIG TCP: 0 above 64 KiB (a value that cannot describe the frame is treated the same way)
            zero_len = True
            end = n
        else:
            end = l3 + tot_len
        if ihl < 20 or end > n or l3 + ihl + 8 > end:
            return KEEP_MALFORMED
        u = l3 + ihl
        pieces.append(buf[:u])
        outer_v6 = False
    elif etype == ETH_P_IPV6:
        r = _ipv6(buf, l3, n)
        if isinstance(r, str):
            return r
        nexthdr, u, end, zl = r
        zero_len |= zl
        if nexthdr != IPPROTO_UDP:
            return KEEP_NOT_TUNNEL
        if u + 8 > end:
            return KEEP_MALFORMED
        # the template's IPv6 header names UDP directly (a jumbo hop-by-hop header is not copied)
        pieces.append(buf[: l3 + 6] + bytes((IPPROTO_UDP,)) + buf[l3 + 7 : l3 + 40])
        outer_v6 = True
    else:
        return KEEP_NOT_IP
    udp = sum(map(len, pieces))
    dport = _H.unpack_from(buf, u + 2)[0]
    kind = tunnel_ports.get(dport)
    if kind is None:
        return KEEP_NOT_TUNNEL
    (ulen,) = _H.unpack_from(buf, u + 4)
    if not ulen or end - u > 0xFFFF:
        zero_len = True
    elif u + ulen > end:
        return KEEP_MALFORMED
    udp_csum = _H.unpack_from(buf, u + 6)[0] != 0
    t = u + 8
    if t + 8 > end:
        return KEEP_MALFORMED
    if kind == "geneve":
        if _H.unpack_from(buf, t + 2)[0] != ETH_P_TEB:
            return KEEP_NOT_TCP
        ie = t + 8 + (buf[t] & 0x3F) * 4
    else:
        ie = t + 8
    # the inner frame's VLAN tags, if any, stay in every segment's headers
    ieth = vlan_l3(buf, ie) if ie + 14 <= end else None
    if ieth is None or ieth[1] > end:
        return KEEP_MALFORMED
    itype, il3 = ieth
    if itype == ETH_P_IP:
        if il3 + 20 > end or buf[il3] >> 4 != 4:
            return KEEP_MALFORMED
        iihl = (buf[il3] & 0x0F) * 4
        (itot,) = _H.unpack_from(buf, il3 + 2)
        if _H.unpack_from(buf, il3 + 6)[0] & 0x3FFF:
            return KEEP_FRAGMENT
        if buf[il3 + 9] != IPPROTO_TCP:
            return KEEP_NOT_TCP
        if not itot or end - il3 > 0xFFFF:
            zero_len = True
            iend = end
        else:
            iend = il3 + itot
        if iihl < 20 or iend > end:
            return KEEP_MALFORMED
        tcp_in = il3 + iihl
        pieces.append(buf[u:tcp_in])
        inner_v6 = False
    elif itype == ETH_P_IPV6:
        r = _ipv6(buf, il3, end)
        if isinstance(r, str):
            return r
        nexthdr, tcp_in, iend, zl = r
        zero_len |= zl
        if nexthdr != IPPROTO_TCP:
            return KEEP_NOT_TCP
        pieces.append(buf[u : il3 + 6] + bytes((IPPROTO_TCP,)) + buf[il3 + 7 : il3 + 40])
        inner_v6 = True
    else:
        return KEEP_NOT_TCP
    inner_l3 = udp + (il3 - u)
    if tcp_in + 20 > iend:
        return KEEP_MALFORMED
    thlen = (buf[tcp_in + 12] >> 4) * 4
    if thlen < 20 or tcp_in + thlen > iend:
        return KEEP_MALFORMED
    tcp = sum(map(len, pieces))
    pieces.append(buf[tcp_in : tcp_in + thlen])
    return SuperFrame(
        b"".join(pieces),
        l3,
        outer_v6,
        udp,
        udp_csum,
        inner_l3,
        inner_v6,
        tcp,
        (tcp_in + thlen, iend),
        end - l3,
        zero_len,
    )


def build_segment(sf: SuperFrame, buf: bytes, index: int, count: int, mss: int) -> bytes:
    """Segment ``index`` of ``count`` of super-frame ``sf`` (captured bytes ``buf``), payload pieces of ``mss``.

    Kernel: ``tcp_gso_segment``, ``inet_gso_segment``/``ipv6_gso_segment``, ``__skb_udp_tunnel_segment``.
    Returns the frame's bytes with every length, ID and checksum rebuilt (see the module docstring): each IPv4
    header's ID is the super-frame's plus ``index`` (mod 2^16), ``inet_gso_segment``'s ``htons(id++)``.
    """
    start = sf.payload[0] + index * mss
    stop = min(start + mss, sf.payload[1])
    seg = bytearray(sf.hdr)
    seg += buf[start:stop]
    total = len(seg)
    hdr = sf.hdr
    tcp = sf.tcp
    # inner TCP: sequence number, flags, checksum
    seq = (_I.unpack_from(hdr, tcp + 4)[0] + index * mss) & 0xFFFFFFFF
    _I.pack_into(seg, tcp + 4, seq)
    flags = hdr[tcp + 13]
    if index < count - 1:
        flags &= ~(TCP_FIN | TCP_PSH)
    if index:
        flags &= ~TCP_CWR
    seg[tcp + 13] = flags
    seg[tcp + 16 : tcp + 18] = b"\0\0"
    il3 = sf.inner_l3
    tcp_len = total - tcp
    if sf.inner_v6:
        _H.pack_into(seg, il3 + 4, total - il3 - 40)
        pseudo = pseudo6(hdr[il3 + 8 : il3 + 24], hdr[il3 + 24 : il3 + 40], tcp_len, IPPROTO_TCP)
    else:
        _H.pack_into(seg, il3 + 2, total - il3)
        _H.pack_into(seg, il3 + 4, (_H.unpack_from(hdr, il3 + 4)[0] + index) & 0xFFFF)
        ihl = (hdr[il3] & 0x0F) * 4
        seg[il3 + 10 : il3 + 12] = b"\0\0"
        _H.pack_into(seg, il3 + 10, ipv4_header_checksum(seg[il3 : il3 + ihl]))
        pseudo = pseudo4(hdr[il3 + 12 : il3 + 16], hdr[il3 + 16 : il3 + 20], tcp_len, IPPROTO_TCP)
    _H.pack_into(seg, tcp + 16, l4_checksum_field(pseudo, seg, tcp, total))
    # outer UDP: length; checksum only when the tunnel used one
    u = sf.udp
    ulen = total - u
    _H.pack_into(seg, u + 4, ulen)
    seg[u + 6 : u + 8] = b"\0\0"
    l3 = sf.outer_l3
    if sf.outer_v6:
        _H.pack_into(seg, l3 + 4, total - l3 - 40)
        if sf.udp_csum:
            pseudo = pseudo6(hdr[l3 + 8 : l3 + 24], hdr[l3 + 24 : l3 + 40], ulen, IPPROTO_UDP)
    else:
        _H.pack_into(seg, l3 + 2, total - l3)
        _H.pack_into(seg, l3 + 4, (_H.unpack_from(hdr, l3 + 4)[0] + index) & 0xFFFF)
        seg[l3 + 10 : l3 + 12] = b"\0\0"
        _H.pack_into(seg, l3 + 10, ipv4_header_checksum(seg[l3:u]))
        if sf.udp_csum:
            pseudo = pseudo4(hdr[l3 + 12 : l3 + 16], hdr[l3 + 16 : l3 + 20], ulen, IPPROTO_UDP)
    if sf.udp_csum:
        # a computed 0 is sent as 0xFFFF (udp_set_csum / RFC 768)
        _H.pack_into(seg, u + 6, l4_checksum_field(pseudo, seg, u, total) or 0xFFFF)
    return bytes(seg)


class Resegmenter:
    """Splits frames whose outer IP datagram exceeds ``mtu`` (or carries a zero length field) into segments.

    Args: mtu: bytes of the outer IP datagram a wire frame may carry (``--mtu``; an outer IPv6 datagram's at least
    ``IPV6_MIN_MTU``, ``mtu6``: no IPv6 link has less, so no Linux sender segmented one smaller); mss: fixed TCP payload per
    segment (``--resegment MSS``), or None to take it from the flow (``flow_mss`` passed to ``split``: the MSS the
    sender used — its largest wire segment, else its SYN's MSS option) capped at what fits the MTU, else from
    the MTU; vxlan_ports / geneve_ports: tunnel UDP destination ports.
    Counters: ``resegmented_frames``, ``segments_created``, ``ipv6_at_min_mtu``, ``not_split`` (reason → frames above the MTU replayed
    as captured), ``above`` (segments still above the MTU: ``AboveMtu``). Work is bounded per input byte: a segment carries at
    least ``TCP_MIN_SND_MSS`` bytes of TCP options and payload, so at least 8 of payload (:func:`min_payload`; a flow's
    segments smaller than that do not set the MSS; a split below it is refused, ``KEEP_MSS_TOO_SMALL``).
    """

    def __init__(
        self, mtu: int, mss: int | None, vxlan_ports: tuple[int, ...], geneve_ports: tuple[int, ...]
    ) -> None:
        self.mtu = mtu
        #: the MTU of outer IPv6 datagrams: ``mtu``, raised to IPv6's smallest link MTU (RFC 8200 §5)
        self.mtu6 = max(mtu, IPV6_MIN_MTU)
        self.mss = mss
        self.tunnel_ports = {p: "vxlan" for p in vxlan_ports}
        self.tunnel_ports.update({p: "geneve" for p in geneve_ports})
        #: frames no longer than this cannot hold an outer IP datagram above the MTU (or BIG TCP)
        self.limit = mtu + 14
        self.resegmented_frames = 0
        self.segments_created = 0
        self.not_split: Counter = Counter()
        self.above = AboveMtu()
        #: outer IPv6 super-frames split at ``mtu6`` where it is above ``mtu`` (the resegment note says so)
        self.ipv6_at_min_mtu = 0

    def oversize(self, buf: bytes) -> bool:
        """True when ``buf`` (longer than ``limit``) carries an outer IP datagram above the MTU or of length 0."""
        off = 12
        (etype,) = _H.unpack_from(buf, off)
        while etype in _VLAN_TPIDS and off + 6 <= len(buf):
            off += 4
            (etype,) = _H.unpack_from(buf, off)
        l3 = off + 2
        mtu = self.mtu
        if etype == ETH_P_IP:
            (length,) = _H.unpack_from(buf, l3 + 2)
        elif etype == ETH_P_IPV6:
            (length,) = _H.unpack_from(buf, l3 + 4)
            length = length + 40 if length else 0
            mtu = self.mtu6
        else:
            return len(buf) - l3 > self.mtu
        return length == 0 or length > mtu or len(buf) - l3 > 0xFFFF

    def split(self, buf: bytes, flow_mss: Callable[[bytes], int | None] | None = None) -> list[bytes] | None:
        """The wire-sized frames for ``buf``, or None to replay it as captured.

        ``flow_mss(probe)`` returns the largest TCP payload seen so far in the flow of ``probe`` (a header-only
        frame of the same flow), or None. Frames at or below the MTU (``mtu6`` for outer IPv6) are never split.
        """
        sf = parse_super_frame(buf, self.tunnel_ports)
        if isinstance(sf, str):
            self.not_split[sf] += 1
            return None
        mtu = self.mtu6 if sf.outer_v6 else self.mtu
        if sf.outer_len <= mtu and not sf.zero_len:
            return None
        fit = mtu - sf.mtu_overhead
        mss = self.mss
        if mss is None:
            seen = flow_mss(build_segment(sf, buf, 0, 1, 0)) if flow_mss is not None else None
            mss = min(seen, fit) if seen and seen >= sf.min_payload else fit
        if mss <= 0:
            self.not_split[KEEP_NO_MSS] += 1
            return None
        if mss < sf.min_payload:
            self.not_split[KEEP_MSS_TOO_SMALL] += 1
            return None
        plen = sf.payload_len
        if plen <= mss and not sf.zero_len:
            self.not_split[KEEP_WITHIN_MSS] += 1
            return None
        count = max(1, -(-plen // mss))
        segs = [build_segment(sf, buf, i, count, mss) for i in range(count)]
        self.resegmented_frames += 1
        self.segments_created += count
        if sf.outer_v6 and self.mtu6 > self.mtu:
            self.ipv6_at_min_mtu += 1
        if sf.mtu_overhead + min(mss, plen) > mtu:  # the first segment is the largest
            a = self.above
            a.segments += sum(sf.mtu_overhead + min(mss, plen - i * mss) > mtu for i in range(count))
            a.largest = max(a.largest, sf.mtu_overhead + min(mss, plen))
            a.fit = fit if a.fit is None else min(a.fit, fit)
            a.floor = max(a.floor, sf.min_payload)
        return segs
