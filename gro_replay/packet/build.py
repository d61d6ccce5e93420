"""Literal Ethernet frames of TCP over VXLAN/Geneve, built field by field for tests and ``synth``.

One :class:`FrameSpec` describes one frame: outer Ethernet (optional 802.1Q tag or 802.1ad+802.1Q QinQ
pair), outer IPv4 or IPv6, outer UDP, a VXLAN or Geneve header, inner Ethernet (the same optional tags,
``inner_vlan``), inner IPv4 (options, fragment fields) or IPv6 (extension headers), TCP (options, payload). The defaults are one bulk-TCP
segment over VXLAN over IPv4 at MTU 1500: inner IPv4/TCP with timestamps, 1398 payload bytes, outer IP
total length 1500, a 1514-byte frame, outer UDP checksum 0.

:func:`build_frame` computes every length and checksum (IPv4 header, TCP over its pseudo header, outer
UDP over the whole datagram including the inner frame) unless the spec asks for a bad one; a computed
UDP checksum of 0 is sent as 0xFFFF (RFC 768). :func:`build_flow` turns one spec into contiguous
segments of a TCP stream.

Kernel: the layouts the receive path parses (include/uapi/linux/if_ether.h, if_vlan.h, ip.h, ipv6.h,
tcp.h, udp.h; include/net/vxlan.h, include/net/geneve.h); ``udp_set_csum``/``udp6_set_csum`` for the
zero-to-0xFFFF rule.

Left out: building anything but TCP inside the tunnel; VLAN tags with PCP/DEI bits; outer IPv6 extension headers;
the routing-header rule for the TCP pseudo header (the final destination is always ``inner_dst``).
"""

from __future__ import annotations

import functools
import ipaddress
import struct
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from gro_replay.kernel.ip6_offload import NEXTHDR_DEST, NEXTHDR_HOP
from gro_replay.kernel.reassembly import NEXTHDR_FRAGMENT
from gro_replay.packet.csum import ipv4_header_checksum, l4_checksum_field, pseudo4, pseudo6
from gro_replay.packet.geneve import ETH_P_TEB, GENEVE_UDP_PORT, GeneveHdr
from gro_replay.packet.vxlan import IANA_VXLAN_UDP_PORT, VXLAN_HF_VNI, VxlanHdr

# TCP flag bits (include/net/tcp.h TCPHDR_*).
FIN = 0x01
SYN = 0x02
RST = 0x04
PSH = 0x08
ACK = 0x10
URG = 0x20
ECE = 0x40
CWR = 0x80

ETH_P_IP = 0x0800
ETH_P_IPV6 = 0x86DD
ETH_P_8021Q = 0x8100
ETH_P_8021AD = 0x88A8
IPPROTO_TCP = 6
IPPROTO_UDP = 17

# IPv6 extension headers whose length field counts 8-byte units beyond the first 8 (RFC 8200 §4): hop-by-hop,
# routing, destination options (kernel/ip6_offload.py) and the fragment header (kernel/reassembly.py); AH counts
# 4-byte units
NEXTHDR_AUTH = 51
_OPTION_EXTHDRS = (NEXTHDR_HOP, NEXTHDR_DEST)

#: XORed into a correct checksum to make a "bad" one: always different, never 0.
BAD_CSUM_XOR = 0x1234

_ETH = struct.Struct("!6s6sH")
_VLAN = struct.Struct("!HH")  # TCI, then the next TPID/ethertype
_IPV4 = struct.Struct("!BBHHHBBH4s4s")
_IPV6 = struct.Struct("!IHBB16s16s")
_UDP = struct.Struct("!HHHH")
_TCP = struct.Struct("!HHIIHHHH")
_TS_OPT = struct.Struct("!BBBBII")

_CSUM_CHOICES = ("ok", "bad")
_OUTER_CSUM_CHOICES = ("zero", "computed", "bad")
_ENCAPS = ("vxlan", "geneve")
_PATTERN = bytes(range(256)) * 2


@dataclass
class FrameSpec:
    """Every field of one TCP-over-UDP-tunnel frame that a GRO test may vary.

    Addresses are strings (``None`` picks the family's default), MACs ``"aa:bb:cc:dd:ee:ff"`` strings or
    6 bytes. Checksum choices: ``outer_csum`` ``'zero'|'computed'|'bad'``, ``ip_csum``/``tcp_csum``
    ``'ok'|'bad'``; "bad" is the correct value XOR 0x1234. ``frag_off`` is the IPv4 fragment offset in
    8-byte units (the 13-bit field; ``df``/``mf`` are the flag bits). ``tos`` is the IPv4 TOS byte or the
    IPv6 traffic class (ECN bits included). ``payload`` is bytes, or a count of bytes of the pattern
    ``(seq + i) & 0xff``. ``tcp_options`` (raw bytes, zero-padded to 4) replaces the timestamp option.
    ``ipv6_ext`` lists ``(type, body)`` pairs in order; ``body`` is what follows the next-header and
    length bytes (for a fragment header (44): the 6 bytes after next-header and reserved, empty meaning
    offset 0, id 0); hop-by-hop and destination-option bodies are padded with Pad1/PadN, others with zeros.
    ``outer_vlan``/``inner_vlan``: None, a VID (one 802.1Q tag) or an (S-VID, C-VID) pair (802.1ad, then 802.1Q);
    PCP and DEI are 0.
    """

    # outer Ethernet
    outer_src_mac: str | bytes = "02:00:00:00:00:01"
    outer_dst_mac: str | bytes = "02:00:00:00:00:02"
    outer_vlan: int | tuple[int, int] | None = None
    # outer IPv4 / IPv6
    outer_ipv6: bool = False
    outer_src: str | None = None
    outer_dst: str | None = None
    outer_ttl: int = 64
    outer_tos: int = 0
    outer_df: bool = True
    outer_ip_id: int = 0
    outer_flow_label: int = 0
    outer_hop_limit: int = 64
    # outer UDP
    udp_sport: int = 49152
    udp_dport: int | None = None
    outer_csum: str = "zero"
    # tunnel
    encap: str = "vxlan"
    vni: int = 100
    vxlan_flags: int = VXLAN_HF_VNI
    geneve_options: bytes = b""
    geneve_oam: bool = False
    geneve_critical: bool = False
    # inner Ethernet
    inner_src_mac: str | bytes = "02:00:00:00:01:01"
    inner_dst_mac: str | bytes = "02:00:00:00:01:02"
    inner_vlan: int | tuple[int, int] | None = None
    # inner IPv4 / IPv6
    inner_ipv6: bool = False
    inner_src: str | None = None
    inner_dst: str | None = None
    ttl: int = 64
    tos: int = 0
    df: bool = True
    ip_id: int = 0
    ip_options: bytes = b""
    frag_off: int = 0
    mf: bool = False
    flow_label: int = 0
    hop_limit: int = 64
    ipv6_ext: list[tuple[int, bytes]] = field(default_factory=list)
    ip_csum: str = "ok"
    # TCP
    sport: int = 40000
    dport: int = 5201
    seq: int = 1_000_000
    ack: int = 1
    flags: int = ACK
    window: int = 512
    urg_ptr: int = 0
    timestamps: bool = True
    tsval: int = 100_000
    tsecr: int = 50_000
    tcp_options: bytes | None = None
    payload: bytes | int = 1398
    tcp_csum: str = "ok"
    # Ethernet padding after the outer IP datagram
    pad_to: int = 0

    def resolved_udp_dport(self) -> int:
        """``udp_dport``, or the IANA port of ``encap`` when it is ``None``."""
        if self.udp_dport is not None:
            return self.udp_dport
        return IANA_VXLAN_UDP_PORT if self.encap == "vxlan" else GENEVE_UDP_PORT

    def resolved_outer_addrs(self) -> tuple[str, str]:
        """``(outer_src, outer_dst)`` with the family defaults filled in."""
        d_src, d_dst = ("fd00::1", "fd00::2") if self.outer_ipv6 else ("10.0.0.1", "10.0.0.2")
        return self.outer_src or d_src, self.outer_dst or d_dst

    def resolved_inner_addrs(self) -> tuple[str, str]:
        """``(inner_src, inner_dst)`` with the family defaults filled in."""
        d_src, d_dst = ("fd01::1", "fd01::2") if self.inner_ipv6 else ("192.168.1.1", "192.168.1.2")
        return self.inner_src or d_src, self.inner_dst or d_dst


def peer_spec(spec: FrameSpec, **changes) -> FrameSpec:
    """The other direction of ``spec``'s connection: outer and inner addresses and TCP ports swapped (the outer UDP
    source port is the sender's flow hash, kept unless ``changes`` set it), then ``changes`` applied."""
    osrc, odst = spec.resolved_outer_addrs()
    isrc, idst = spec.resolved_inner_addrs()
    peer = replace(
        spec,
        outer_src=odst,
        outer_dst=osrc,
        inner_src=idst,
        inner_dst=isrc,
        sport=spec.dport,
        dport=spec.sport,
    )
    return replace(peer, **changes)


class FrameLayout(NamedTuple):
    """Byte offsets of each header in a frame from :func:`build_frame`, and its lengths."""

    outer_l3: int  #: outer IPv4/IPv6 header (after any VLAN tags)
    outer_l4: int  #: outer UDP header
    tunnel: int  #: VXLAN/Geneve header
    inner_l2: int  #: inner Ethernet header
    inner_l3: int  #: inner IPv4/IPv6 header (after any inner VLAN tags)
    inner_l4: int  #: TCP header (after any IPv6 extension headers)
    payload: int  #: TCP payload
    end: int  #: end of the outer IP datagram (padding, if any, follows)
    frame_len: int  #: whole frame including padding


def _mac(value: str | bytes) -> bytes:
    """A MAC address (``aa:bb:…`` or 6 bytes) as 6 bytes. Raises: ValueError when it is not 6 bytes."""
    raw = bytes(value) if isinstance(value, bytes | bytearray) else _mac_text(value)
    if len(raw) != 6:
        raise ValueError(f"MAC address must be 6 bytes: {value!r}")
    return raw


@functools.lru_cache(maxsize=1024)
def _mac_text(value: str) -> bytes:
    """``aa:bb:…`` as bytes, parsed once per string (a capture's frames repeat a few)."""
    return bytes(int(part, 16) for part in value.split(":"))


@functools.lru_cache(maxsize=1024)
def _addr(value: str, ipv6: bool) -> bytes:
    """An IP address string as its packed bytes; parsed once per value. Raises: ValueError for another family."""
    addr = ipaddress.ip_address(value)
    if addr.version != (6 if ipv6 else 4):
        raise ValueError(f"address {value} is not IPv{6 if ipv6 else 4}")
    return addr.packed


def _pad4(opts: bytes, what: str) -> bytes:
    padded = opts + b"\x00" * (-len(opts) % 4)
    if len(padded) > 40:
        raise ValueError(f"{what} are {len(padded)} bytes, more than 40")
    return padded


def _bad(value: int) -> int:
    return (value ^ BAD_CSUM_XOR) or 0xFFFF


def _check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, not {value!r}")


def pattern_payload(seq: int, n: int) -> bytes:
    """``n`` bytes whose byte ``i`` is ``(seq + i) & 0xff``: stream position decides the byte."""
    start = seq & 0xFF
    if n <= 256:
        return _PATTERN[start : start + n]
    return (_PATTERN[start : start + 256] * (n // 256 + 1))[:n]


def payload_bytes(spec: FrameSpec) -> bytes:
    """The TCP payload of ``spec``: its bytes, or the pattern for an integer count."""
    if isinstance(spec.payload, int):
        if spec.payload < 0:
            raise ValueError("payload length must not be negative")
        return pattern_payload(spec.seq, spec.payload)
    return bytes(spec.payload)


def tcp_options_bytes(spec: FrameSpec) -> bytes:
    """The TCP option bytes of ``spec``: ``tcp_options`` padded, or NOP NOP TS, or none."""
    if spec.tcp_options is not None:
        return _pad4(spec.tcp_options, "TCP options")
    if spec.timestamps:
        return _TS_OPT.pack(1, 1, 8, 10, spec.tsval & 0xFFFFFFFF, spec.tsecr & 0xFFFFFFFF)
    return b""


def _ipv6_ext_bytes(spec: FrameSpec) -> tuple[int, bytes]:
    """The chained extension headers and the next-header value for the IPv6 header."""
    if not spec.ipv6_ext:
        return IPPROTO_TCP, b""
    types = [t for t, _ in spec.ipv6_ext] + [IPPROTO_TCP]
    out = bytearray()
    for i, (ext_type, body) in enumerate(spec.ipv6_ext):
        nexthdr = types[i + 1]
        if ext_type == NEXTHDR_FRAGMENT:
            body = body or b"\x00" * 6
            if len(body) != 6:
                raise ValueError("an IPv6 fragment header body is 6 bytes (offset/flags, identification)")
            out += bytes((nexthdr, 0)) + body
            continue
        need = -(2 + len(body)) % 8
        if ext_type in _OPTION_EXTHDRS and need:
            # Pad1 for one byte, PadN for more (RFC 8200 §4.2)
            body = body + (b"\x00" if need == 1 else bytes((1, need - 2)) + b"\x00" * (need - 2))
        else:
            body = body + b"\x00" * need
        total = 2 + len(body)
        # AH counts 4-byte units beyond the first 8 bytes, the others 8-byte units (RFC 4302 §2.2)
        hdrlen = total // 4 - 2 if ext_type == NEXTHDR_AUTH else total // 8 - 1
        if hdrlen > 255:
            raise ValueError(f"IPv6 extension header type {ext_type} is too long ({total} bytes)")
        out += bytes((nexthdr, hdrlen)) + body
    return types[0], bytes(out)


def _tcp_segment(spec: FrameSpec, pseudo_of_len) -> bytes:
    opts = tcp_options_bytes(spec)
    payload = payload_bytes(spec)
    doff = (20 + len(opts)) // 4
    if not 0 <= spec.flags < 0x1000:
        raise ValueError("TCP flags must fit the 12 bits after the data offset")
    seg = bytearray(
        _TCP.pack(
            spec.sport,
            spec.dport,
            spec.seq & 0xFFFFFFFF,
            spec.ack & 0xFFFFFFFF,
            (doff << 12) | spec.flags,
            spec.window,
            0,
            spec.urg_ptr,
        )
    )
    seg += opts
    seg += payload
    csum = l4_checksum_field(pseudo_of_len(len(seg), IPPROTO_TCP), seg, 0, len(seg))
    if spec.tcp_csum == "bad":
        csum = _bad(csum)
    struct.pack_into("!H", seg, 16, csum)
    return bytes(seg)


def _inner_ip_packet(spec: FrameSpec) -> bytes:
    src, dst = spec.resolved_inner_addrs()
    saddr, daddr = _addr(src, spec.inner_ipv6), _addr(dst, spec.inner_ipv6)
    if spec.inner_ipv6:
        if spec.ip_options or spec.frag_off or spec.mf or spec.ip_csum != "ok":
            raise ValueError("ip_options, frag_off, mf and ip_csum apply to an inner IPv4 header only")
        seg = _tcp_segment(spec, lambda n, proto: pseudo6(saddr, daddr, n, proto))
        nexthdr, ext = _ipv6_ext_bytes(spec)
        plen = len(ext) + len(seg)
        if plen > 0xFFFF:
            raise ValueError(f"inner IPv6 payload length {plen} exceeds 65535")
        vtc = (6 << 28) | ((spec.tos & 0xFF) << 20) | (spec.flow_label & 0xFFFFF)
        return _IPV6.pack(vtc, plen, nexthdr, spec.hop_limit, saddr, daddr) + ext + seg
    if spec.ipv6_ext:
        raise ValueError("ipv6_ext applies to an inner IPv6 header only")
    seg = _tcp_segment(spec, lambda n, proto: pseudo4(saddr, daddr, n, proto))
    opts = _pad4(spec.ip_options, "IPv4 options")
    ihl = 5 + len(opts) // 4
    tot_len = 4 * ihl + len(seg)
    if tot_len > 0xFFFF:
        raise ValueError(f"inner IPv4 total length {tot_len} exceeds 65535")
    if not 0 <= spec.frag_off < 1 << 13:
        raise ValueError("frag_off is the 13-bit fragment offset in 8-byte units")
    frag = (0x4000 if spec.df else 0) | (0x2000 if spec.mf else 0) | spec.frag_off
    hdr = bytearray(
        _IPV4.pack(
            0x40 | ihl, spec.tos, tot_len, spec.ip_id & 0xFFFF, frag, spec.ttl, IPPROTO_TCP, 0, saddr, daddr
        )
    )
    hdr += opts
    csum = ipv4_header_checksum(hdr)
    if spec.ip_csum == "bad":
        csum = _bad(csum)
    struct.pack_into("!H", hdr, 10, csum)
    return bytes(hdr) + seg


def build_inner_frame(spec: FrameSpec) -> bytes:
    """The inner Ethernet frame (what the tunnel header carries) of ``spec``."""
    _check_choice("ip_csum", spec.ip_csum, _CSUM_CHOICES)
    _check_choice("tcp_csum", spec.tcp_csum, _CSUM_CHOICES)
    ethertype = ETH_P_IPV6 if spec.inner_ipv6 else ETH_P_IP
    vids = _vlan_ids(spec.inner_vlan, "inner_vlan")
    return _l2(spec.inner_dst_mac, spec.inner_src_mac, vids, ethertype) + _inner_ip_packet(spec)


def _tunnel_header(spec: FrameSpec) -> bytes:
    if not 0 <= spec.vni < 1 << 24:
        raise ValueError(f"VNI {spec.vni} does not fit in 24 bits")
    if spec.encap == "vxlan":
        if spec.geneve_options or spec.geneve_oam or spec.geneve_critical:
            raise ValueError("geneve_* fields need encap='geneve'")
        return bytes(VxlanHdr(vx_flags=spec.vxlan_flags, vx_vni=spec.vni << 8))
    gh = GeneveHdr(
        proto_type=ETH_P_TEB, vni=spec.vni, oam=int(spec.geneve_oam), critical=int(spec.geneve_critical)
    )
    gh.set_options(spec.geneve_options)
    return bytes(gh)


def _vlan_ids(vlan: int | tuple[int, int] | None, name: str) -> tuple[int, ...]:
    """The VIDs of an ``outer_vlan``/``inner_vlan`` field, outermost first. Raises: ValueError for another shape or a
    VID beyond 12 bits."""
    if vlan is None:
        return ()
    vids = (vlan,) if isinstance(vlan, int) else tuple(vlan)
    if len(vids) not in (1, 2):
        raise ValueError(f"{name} is None, a VID, or an (outer_vid, inner_vid) pair")
    for vid in vids:
        if not 0 <= vid < 4096:
            raise ValueError(f"VLAN id {vid} does not fit 12 bits")
    return vids


def _l2(dst: str | bytes, src: str | bytes, vids: tuple[int, ...], ethertype: int) -> bytes:
    """An Ethernet header with the VLAN tags of ``vids`` (one: 802.1Q; two: 802.1ad S-tag, then 802.1Q C-tag),
    then ``ethertype``: each type field names what follows it."""
    types = {0: (), 1: (ETH_P_8021Q,), 2: (ETH_P_8021AD, ETH_P_8021Q)}[len(vids)] + (ethertype,)
    out = _ETH.pack(_mac(dst), _mac(src), types[0])
    for vid, nxt in zip(vids, types[1:], strict=True):
        out += _VLAN.pack(vid, nxt)
    return out


def _outer_l2(spec: FrameSpec) -> bytes:
    ethertype = ETH_P_IPV6 if spec.outer_ipv6 else ETH_P_IP
    return _l2(spec.outer_dst_mac, spec.outer_src_mac, _vlan_ids(spec.outer_vlan, "outer_vlan"), ethertype)


def build_frame(spec: FrameSpec) -> bytes:
    """The full Ethernet frame described by ``spec``.

    Returns: the frame bytes, padded with zero bytes to ``spec.pad_to`` if shorter.
    Raises: ValueError for an unknown choice string, a value that does not fit its field, or a field
        that does not apply to the chosen family or encapsulation.
    """
    _check_choice("encap", spec.encap, _ENCAPS)
    _check_choice("outer_csum", spec.outer_csum, _OUTER_CSUM_CHOICES)
    udp_payload = _tunnel_header(spec) + build_inner_frame(spec)
    ulen = _UDP.size + len(udp_payload)
    if ulen > 0xFFFF:
        raise ValueError(f"outer UDP length {ulen} exceeds 65535")
    src, dst = spec.resolved_outer_addrs()
    saddr, daddr = _addr(src, spec.outer_ipv6), _addr(dst, spec.outer_ipv6)
    udp = bytearray(_UDP.pack(spec.udp_sport, spec.resolved_udp_dport(), ulen, 0))
    udp += udp_payload
    if spec.outer_csum != "zero":
        pseudo = (pseudo6 if spec.outer_ipv6 else pseudo4)(saddr, daddr, ulen, IPPROTO_UDP)
        # a computed 0 would read as "no checksum"; send its ones'-complement twin (RFC 768)
        csum = l4_checksum_field(pseudo, udp, 0, ulen) or 0xFFFF
        if spec.outer_csum == "bad":
            csum = _bad(csum)
        struct.pack_into("!H", udp, 6, csum)
    if spec.outer_ipv6:
        vtc = (6 << 28) | ((spec.outer_tos & 0xFF) << 20) | (spec.outer_flow_label & 0xFFFFF)
        l3 = _IPV6.pack(vtc, ulen, IPPROTO_UDP, spec.outer_hop_limit, saddr, daddr)
    else:
        tot_len = 20 + ulen
        if tot_len > 0xFFFF:
            raise ValueError(f"outer IPv4 total length {tot_len} exceeds 65535")
        hdr = bytearray(
            _IPV4.pack(
                0x45,
                spec.outer_tos,
                tot_len,
                spec.outer_ip_id & 0xFFFF,
                0x4000 if spec.outer_df else 0,
                spec.outer_ttl,
                IPPROTO_UDP,
                0,
                saddr,
                daddr,
            )
        )
        struct.pack_into("!H", hdr, 10, ipv4_header_checksum(hdr))
        l3 = bytes(hdr)
    frame = _outer_l2(spec) + l3 + bytes(udp)
    if len(frame) < spec.pad_to:
        frame += b"\x00" * (spec.pad_to - len(frame))
    return frame


def frame_layout(spec: FrameSpec) -> FrameLayout:
    """Header offsets and lengths of ``build_frame(spec)``, computed without building it."""
    outer_l3 = 14 + 4 * len(_vlan_ids(spec.outer_vlan, "outer_vlan"))
    outer_l4 = outer_l3 + (40 if spec.outer_ipv6 else 20)
    tunnel = outer_l4 + _UDP.size
    inner_l2 = tunnel + 8 + (len(spec.geneve_options) if spec.encap == "geneve" else 0)
    inner_l3 = inner_l2 + _ETH.size + 4 * len(_vlan_ids(spec.inner_vlan, "inner_vlan"))
    if spec.inner_ipv6:
        inner_l4 = inner_l3 + 40 + len(_ipv6_ext_bytes(spec)[1])
    else:
        inner_l4 = inner_l3 + 20 + len(_pad4(spec.ip_options, "IPv4 options"))
    payload = inner_l4 + 20 + len(tcp_options_bytes(spec))
    plen = spec.payload if isinstance(spec.payload, int) else len(spec.payload)
    end = payload + plen
    return FrameLayout(
        outer_l3, outer_l4, tunnel, inner_l2, inner_l3, inner_l4, payload, end, max(end, spec.pad_to)
    )


def outer_ip_overhead(spec: FrameSpec) -> int:
    """Bytes of the outer IP datagram that are not TCP payload (outer IP header … TCP options).

    ``mtu - outer_ip_overhead(spec)`` is the payload that fills an MTU-sized outer packet (1398 for the
    defaults at MTU 1500).
    """
    lay = frame_layout(spec)
    return lay.payload - lay.outer_l3


def flow_specs(
    spec: FrameSpec,
    payload_sizes: list[int],
    *,
    seq0: int | None = None,
    ip_id0: int | None = None,
    id_step: int = 1,
    tsval0: int | None = None,
    ts_step: int = 0,
) -> list[FrameSpec]:
    """Specs of contiguous TCP segments: ``spec`` with ``payload``, ``seq``, IDs and ``tsval`` advanced.

    Segment ``k`` carries ``payload_sizes[k]`` pattern bytes at ``seq0 + sum(payload_sizes[:k])``; its
    inner IPv4 id is ``ip_id0 + k·id_step``, its outer IPv4 id ``spec.outer_ip_id + k``, its tsval
    ``tsval0 + k·ts_step`` (all wrapping). ``None`` starts from the value in ``spec``.
    """
    seq = spec.seq if seq0 is None else seq0
    ip_id = spec.ip_id if ip_id0 is None else ip_id0
    tsval = spec.tsval if tsval0 is None else tsval0
    out = []
    for k, size in enumerate(payload_sizes):
        out.append(
            replace(
                spec,
                payload=size,
                seq=seq & 0xFFFFFFFF,
                ip_id=(ip_id + k * id_step) & 0xFFFF,
                outer_ip_id=(spec.outer_ip_id + k) & 0xFFFF,
                tsval=(tsval + k * ts_step) & 0xFFFFFFFF,
            )
        )
        seq += size
    return out


def build_flow(
    spec: FrameSpec,
    payload_sizes: list[int],
    *,
    seq0: int | None = None,
    ip_id0: int | None = None,
    id_step: int = 1,
    tsval0: int | None = None,
    ts_step: int = 0,
) -> list[bytes]:
    """Frames of contiguous TCP segments; see :func:`flow_specs` for how the fields advance."""
    specs = flow_specs(
        spec, payload_sizes, seq0=seq0, ip_id0=ip_id0, id_step=id_step, tsval0=tsval0, ts_step=ts_step
    )
    return [build_frame(s) for s in specs]
