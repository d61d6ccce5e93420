"""Header fields read in place outside the decoder's pass: where a frame that is not replayed was going, read from its outer headers alone: a record cut short
(``snaplen_cut``: captured length < original length) or one the decoder refuses (``malformed:*``) still holds
its Ethernet, IP and UDP headers, and the outer UDP destination port says whether it is tunnel traffic the way a
kernel's tunnel socket lookup does (``udp4_gro_receive``/``udp6_gro_receive`` find the socket by that port).

``tunnel_port_of`` is what ``packet.decode.Decoder.decode`` reads up to the port, without its checks of the
lengths the headers state against the bytes captured (a cut frame fails them, its headers are whole): VLAN tags,
IPv4 (IHL, fragment offset) or IPv6 (the extension headers the decoder walks), then the UDP destination port
against the configured tunnel ports. A fragment is not tunnel traffic, as for the decoder. Never raises.

``tcp_mss_option``: the MSS option of a TCP header (``--resegment auto`` learns a flow's MSS from its SYN).
``ip_datagram_len``: the length an IP header declares (bytes after it in the frame are padding or a trailer);
``data_end``: where a frame's own bytes end by it (its datagram, or Ethernet padding); ``ends_with_fcs``: whether a
frame's last 4 bytes are its Ethernet FCS.
``tcp_payload_len``: the TCP payload of a frame's innermost TCP segment, by the lengths its IP headers declare: the
one definition of a segment without payload, for the simulator's driver step (sim/driver.py) and the kernel
backend (validate.py).
"""

from __future__ import annotations

import zlib

from ..kernel.gre_offload import gre_flags_ok, gre_hlen
from ..kernel.skbuff import ETH_FCS_LEN, ETH_HLEN, ETH_ZLEN
from .decode import _H, _VLAN_TPIDS, ETH_P_IP, ETH_P_IPV6, ETH_P_TEB, ipv6_upper

#: the bytes the readers below take: a frame, or a view of one in a reader's buffer
Buffer = bytes | bytearray | memoryview

#: ``tunnel_port_of``'s answer for a frame whose captured bytes end before its outer UDP destination port (or
#: whose link layer is not read): whether it is tunnel traffic is unknown
UNREAD = "unread"


def vlan_l3(buf: Buffer, mac: int = 0) -> tuple[int, int] | None:
    """``(EtherType, offset of the network header)`` of the Ethernet frame at ``buf[mac]`` past its VLAN tags
    (802.1Q, 802.1ad, 0x9100), or None when it ends before them."""
    n = len(buf)
    if n < mac + 14:
        return None
    off = mac + 12
    (etype,) = _H.unpack_from(buf, off)
    while etype in _VLAN_TPIDS:
        off += 4
        if off + 2 > n:
            return None
        (etype,) = _H.unpack_from(buf, off)
    return etype, off + 2


def tunnel_port_of(buf: bytes | None, tunnel_ports: dict[int, str]) -> str | None:
    """The tunnel kind (``tunnel_ports[port]``: ``"vxlan"``, ``"geneve"``) of the Ethernet frame ``buf``'s outer
    UDP destination port, None when its headers say it goes to no tunnel port (not IP, not UDP, a fragment,
    another port), ``UNREAD`` when ``buf`` is None (a link layer not converted) or ends before that port."""
    eth = None if buf is None else vlan_l3(buf)
    if buf is None or eth is None:
        return UNREAD
    n = len(buf)
    etype, l3 = eth
    if etype == ETH_P_IP:
        if l3 + 20 > n:
            return UNREAD
        if buf[l3] >> 4 != 4 or buf[l3 + 9] != 17 or _H.unpack_from(buf, l3 + 6)[0] & 0x3FFF:
            return None
        l4 = l3 + (buf[l3] & 0x0F) * 4
    elif etype == ETH_P_IPV6:
        if l3 + 40 > n:
            return UNREAD
        upper = ipv6_upper(buf, l3, len(buf))
        if upper is None:
            return UNREAD
        proto, l4 = upper
        if proto != 17:  # 44: a fragment
            return None
    else:
        return None
    if l4 + 4 > n:
        return UNREAD
    return tunnel_ports.get(_H.unpack_from(buf, l4 + 2)[0])


def tcp_mss_option(buf: bytes, start: int, end: int) -> int | None:
    """The MSS a SYN's TCP options ``buf[start:end]`` announce (kind 2, length 4), or None.

    Kernel: net/ipv4/tcp_input.c ``tcp_parse_options``: EOL ends the list, NOP is one byte, a length below 2 or past
    the end stops the parse (what was parsed before stands), an MSS of 0 is ignored and a later MSS option
    replaces an earlier one (``opt_rx->mss_clamp``). Never raises.
    """
    mss = None
    i = start
    while i < end:
        kind = buf[i]
        if kind == 0:
            break
        if kind == 1:
            i += 1
            continue
        if i + 1 >= end:
            break
        size = buf[i + 1]
        if size < 2 or i + size > end:
            break
        if kind == 2 and size == 4:
            value = (buf[i + 2] << 8) | buf[i + 3]
            if value:
                mss = value
        i += size
    return mss


def outer_udp(buf: Buffer) -> int | None:
    """The offset of the UDP header of the untagged Ethernet frame ``buf``'s outer IPv4 (any IHL) or IPv6 packet
    (past the extension headers ``ipv6_upper`` walks), its 8 bytes there; None when the frame carries no such UDP
    header (another protocol, a VLAN tag, bytes that end first). Never raises."""
    if len(buf) < 34:
        return None
    etype = (buf[12] << 8) | buf[13]
    if etype == ETH_P_IP:
        proto, u = buf[23], 14 + (buf[14] & 0x0F) * 4
    elif etype == ETH_P_IPV6 and len(buf) >= 54:
        upper = ipv6_upper(buf, 14, len(buf))
        if upper is None:
            return None
        proto, u = upper
    else:
        return None
    return u if proto == 17 and u + 8 <= len(buf) else None


def ip_datagram_len(buf: Buffer, off: int) -> int:
    """The length in bytes the IP header at ``buf[off]`` declares for its datagram, header included: IPv4
    ``tot_len``, IPv6 ``payload_len`` + 40 (extension headers counted in it); 0 when the header declares none (a
    length of 0: BIG TCP's, ``iph_totlen``, include/net/ip.h; an IPv6 jumbogram). Bytes of the frame past it
    (Ethernet padding to 60 bytes, a captured FCS or trailer) are no part of the datagram: ``ip_rcv_core`` trims
    them, after GRO. The caller has checked that the header's bytes are there."""
    if buf[off] >> 4 == 4:
        return _H.unpack_from(buf, off + 2)[0]
    plen = _H.unpack_from(buf, off + 4)[0]
    return plen + 40 if plen else 0


def data_end(buf: Buffer, tags_padded: bool = True) -> int | None:
    """Where the Ethernet frame ``buf``'s own bytes end, before any FCS or trailer: the end of its outer IP
    datagram by the length its header declares (``ip_datagram_len``, after any VLAN tags), or the end of Ethernet
    padding when that is further. A sender pads a frame to ``ETH_ZLEN``; a VLAN tag inserted after that (by the NIC
    or a switch) adds its 4 bytes, one inserted before it (a software VLAN device) does not: ``tags_padded`` takes
    the further end (60 bytes and 4 per tag: what can be no trailer), else the nearer (60: what an FCS follows at
    the least). None when the frame is not IPv4/IPv6, its header is cut before the length, or it declares none (0:
    BIG TCP, an IPv6 jumbogram). Never raises."""
    eth = vlan_l3(buf)
    if eth is None:
        return None
    etype, l3 = eth
    version = {ETH_P_IP: 4, ETH_P_IPV6: 6}.get(etype)
    if version is None or l3 + 6 > len(buf) or buf[l3] >> 4 != version:
        return None
    n = ip_datagram_len(buf, l3)
    return max(l3 + n, ETH_ZLEN + (l3 - ETH_HLEN if tags_padded else 0)) if n else None


def ends_with_fcs(buf: Buffer) -> bool:
    """Whether the last ``ETH_FCS_LEN`` bytes of the Ethernet frame ``buf`` are its FCS: the CRC-32 of the bytes
    before them (IEEE 802.3 §3.2.9; zlib's CRC-32, least significant byte first, as drivers compare it:
    ``~crc32_le(~0, data, len)`` against the little-endian FCS). A trailer that is no FCS matches by chance one time
    in 2**32. Never raises."""
    n = len(buf) - ETH_FCS_LEN
    return n >= 14 and zlib.crc32(memoryview(buf)[:n]) == int.from_bytes(buf[n:], "little")


def tcp_payload_len(buf: bytes | bytearray, tunnel_ports: dict[int, str]) -> int | None:
    """Bytes of TCP payload of the innermost TCP segment of the Ethernet frame ``buf``: from the end of its TCP
    header to where the datagram ends by the lengths its IP headers declare (the nearest of the ends each outer
    and inner header declares, ``ip_datagram_len``; a length of 0, BIG TCP's or an IPv6 jumbogram's, declares none:
    the frame's end), 0 when none (an ACK, SYN, FIN or RST without data; bytes past the datagram, Ethernet padding
    to 60 bytes or a captured FCS, are no payload: ``ip_rcv_core`` trims them after GRO). None when the innermost
    packet is no whole TCP segment: not IP, an IPv4 fragment or IPv6 fragment header, another protocol, a UDP
    datagram to no port of ``tunnel_ports`` (UDP port → ``"vxlan"``/``"geneve"``, the decoder's), a Geneve header
    carrying no Ethernet, a GRE header GRO refuses, a TCP header cut short or with a data offset below 5 words.

    Walks what the kernel's GRO walks to reach tcp_gro_receive, wherever the frame is stopped before it: VLAN tags
    (outer and inner: vlan_gro_receive, net/8021q/vlan_core.c), IPv4 with options (inet_gro_receive flushes them),
    IPv6 hop-by-hop, routing and destination-options headers (ipv6_gro_receive's ``ipv6_gso_pull_exthdrs``),
    UDP to a tunnel port, VXLAN (8 bytes) or Geneve (8 + options), IP in IP and GRE (``_tunnel_inner``). A segment without payload is one that
    tcp_gro_receive merges in no kernel ((len - 1) >= mss, len < mss at out_check_final; net/ipv4/tcp_offload.c).
    Never raises.
    """
    seg = _innermost_tcp(buf, tunnel_ports)
    if seg is None:
        return None
    _etype, _l3, l4, doff, end = seg
    return max(0, end - l4 - doff)


def tcp_connection(buf: bytes | bytearray, tunnel_ports: dict[int, str]) -> bytes | None:
    """The connection of the innermost TCP segment ``tcp_payload_len`` finds, as the bytes of its IP addresses and
    ports; None where it finds none. GRO merges segments of one connection only: the connections inside one
    IP-in-IP or GRE flow of the report (keyed by addresses and IP protocol) are told apart by it
    (oracle/match.py). Never raises."""
    seg = _innermost_tcp(buf, tunnel_ports)
    if seg is None:
        return None
    etype, l3, l4, _doff, _end = seg
    addrs = buf[l3 + 12 : l3 + 20] if etype == ETH_P_IP else buf[l3 + 8 : l3 + 40]
    return bytes(addrs) + bytes(buf[l4 : l4 + 4])


def _innermost_tcp(
    buf: bytes | bytearray, tunnel_ports: dict[int, str]
) -> tuple[int, int, int, int, int] | None:
    """``(ethertype, IP header offset, TCP header offset, TCP header length, datagram end)`` of the innermost TCP
    segment of ``buf``, by the walk ``tcp_payload_len`` describes; None where there is none."""
    n = len(buf)
    end = n
    eth = vlan_l3(buf)
    while eth is not None:
        etype, l3 = eth
        if etype == ETH_P_IP:
            if (
                l3 + 20 > n
                or buf[l3] >> 4 != 4
                or buf[l3] & 0x0F < 5
                or _H.unpack_from(buf, l3 + 6)[0] & 0x3FFF
            ):
                return None
            proto, l4 = buf[l3 + 9], l3 + (buf[l3] & 0x0F) * 4
        elif etype == ETH_P_IPV6:
            if l3 + 40 > n or buf[l3] >> 4 != 6:
                return None
            upper = ipv6_upper(buf, l3, len(buf))
            if upper is None:
                return None
            proto, l4 = upper
        else:
            return None
        declared = ip_datagram_len(buf, l3)
        if declared:
            end = min(end, l3 + declared)
        if proto == 6:
            if l4 + 20 > n:
                return None
            doff = (buf[l4 + 12] >> 4) * 4
            if doff < 20 or l4 + doff > n:
                return None
            return etype, l3, l4, doff, end
        eth = _tunnel_inner(buf, proto, l4, tunnel_ports)
    return None


def _tunnel_inner(buf: Buffer, proto: int, l4: int, tunnel_ports: dict[int, str]) -> tuple[int, int] | None:
    """``(ethertype, offset)`` of the packet inside the tunnel header at ``buf[l4]`` of IP protocol ``proto``
    (``vlan_l3``'s, past any VLAN tags, for an inner Ethernet frame), as GRO's handlers reach it: IP in IP (4, 41:
    ``ipip_gro_receive``, ``sit_ip6ip6_gro_receive``, ``ip4ip6_gro_receive``), GRE of version 0 with only the K and
    C flags (47: ``gre_gro_receive``, kernel/gre_offload.py; IPv4, IPv6 or Ethernet inside), UDP to a VXLAN or
    Geneve port of ``tunnel_ports`` (Geneve carrying Ethernet). None for any other, or a header cut short."""
    n = len(buf)
    if proto == 4 or proto == 41:
        return (ETH_P_IP if proto == 4 else ETH_P_IPV6), l4
    if proto == 47:
        if l4 + 4 > n:
            return None
        flags, gtype = _H.unpack_from(buf, l4)[0], _H.unpack_from(buf, l4 + 2)[0]
        if not gre_flags_ok(flags):
            return None
        inner = l4 + gre_hlen(flags)
        if gtype == ETH_P_TEB:
            return vlan_l3(buf, inner)
        return (gtype, inner) if gtype in (ETH_P_IP, ETH_P_IPV6) else None
    if proto != 17 or l4 + 16 > n:
        return None
    kind = tunnel_ports.get(_H.unpack_from(buf, l4 + 2)[0])
    t = l4 + 8
    if kind == "vxlan":
        return vlan_l3(buf, t + 8)
    if kind == "geneve" and _H.unpack_from(buf, t + 2)[0] == ETH_P_TEB:
        return vlan_l3(buf, t + 8 + (buf[t] & 0x3F) * 4)
    return None


def outer_ip_len(buf: bytes) -> int:
    """The outer IP packet's length from its header (IPv4 total length, IPv6 40 + payload length), after any VLAN
    tags; the bytes after the Ethernet header when the header cannot say (a BIG TCP frame's 0)."""
    off = 12
    et = (buf[12] << 8) | buf[13]
    while et in _VLAN_TPIDS and off + 6 <= len(buf):
        off += 4
        et = (buf[off] << 8) | buf[off + 1]
    l3 = off + 2
    n = 0
    if et == ETH_P_IP and l3 + 4 <= len(buf):
        n = (buf[l3 + 2] << 8) | buf[l3 + 3]
    elif et == ETH_P_IPV6 and l3 + 6 <= len(buf):
        n = 40 + ((buf[l3 + 4] << 8) | buf[l3 + 5])
    return n if n > 40 else len(buf) - l3
