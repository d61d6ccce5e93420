"""Frame builder: exact lengths, layouts and checksums, re-verified with independent arithmetic and dpkt.

Checksums are re-checked with the pure-Python RFC 1071 sum below, not with gro_replay.packet.csum, so a
bug shared by builder and checksum module cannot hide. Expected lengths come from the header sizes
(Ethernet 14, 802.1Q 4, IPv4 20, IPv6 40, UDP 8, VXLAN/Geneve 8, TCP 20, timestamps option 12) and the
fix mail's golden numbers (gro-spec §8: 1500-byte outer packets, inner IP+TCP with timestamps = 52 bytes).
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import replace

import dpkt
import pytest

from gro_replay.packet.build import (
    ACK,
    CWR,
    ECE,
    FIN,
    PSH,
    RST,
    SYN,
    URG,
    FrameSpec,
    build_flow,
    build_frame,
    build_inner_frame,
    flow_specs,
    frame_layout,
    outer_ip_overhead,
    pattern_payload,
)
from gro_replay.packet.geneve import GeneveHdr, GeneveOpt, geneve_opt, genevehdr
from gro_replay.packet.vxlan import VxlanHdr, vxlanhdr

GENEVE_OPT8 = geneve_opt(0xFFF0, 1, b"\x00\x01\x02\x03")


def rfc1071(data: bytes) -> int:
    """Ones'-complement sum of 16-bit big-endian words, folded; independent of gro_replay.packet.csum."""
    if len(data) % 2:
        data += b"\0"
    s = 0
    for i in range(0, len(data), 2):
        s += (data[i] << 8) | data[i + 1]
    while s > 0xFFFF:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def pseudo(src: bytes, dst: bytes, proto: int, length: int) -> bytes:
    if len(src) == 4:
        return src + dst + bytes((0, proto)) + struct.pack("!H", length)
    return src + dst + struct.pack("!I", length) + b"\0\0\0" + bytes((proto,))


class Parsed:
    """Offsets and fields of a built frame, read by hand (no builder code)."""

    def __init__(self, frame: bytes):
        self.frame = frame
        off = 12
        self.tpids = []
        self.vids = []
        ethertype = struct.unpack_from("!H", frame, off)[0]
        while ethertype in (0x8100, 0x88A8):
            self.tpids.append(ethertype)
            self.vids.append(struct.unpack_from("!H", frame, off + 2)[0] & 0xFFF)
            off += 4
            ethertype = struct.unpack_from("!H", frame, off)[0]
        self.outer_ethertype = ethertype
        self.outer_l3 = off + 2
        if ethertype == 0x0800:
            ihl = (frame[self.outer_l3] & 0xF) * 4
            self.outer_len = struct.unpack_from("!H", frame, self.outer_l3 + 2)[0]
            self.outer_src, self.outer_dst = (
                frame[self.outer_l3 + 12 : self.outer_l3 + 16],
                frame[self.outer_l3 + 16 : self.outer_l3 + 20],
            )
            self.outer_l4 = self.outer_l3 + ihl
            self.outer_end = self.outer_l3 + self.outer_len
        else:
            assert ethertype == 0x86DD
            plen = struct.unpack_from("!H", frame, self.outer_l3 + 4)[0]
            assert frame[self.outer_l3 + 6] == 17
            self.outer_len = 40 + plen
            self.outer_src, self.outer_dst = (
                frame[self.outer_l3 + 8 : self.outer_l3 + 24],
                frame[self.outer_l3 + 24 : self.outer_l3 + 40],
            )
            self.outer_l4 = self.outer_l3 + 40
            self.outer_end = self.outer_l3 + self.outer_len
        self.udp_sport, self.udp_dport, self.udp_len, self.udp_csum = struct.unpack_from(
            "!HHHH", frame, self.outer_l4
        )
        self.tunnel = self.outer_l4 + 8
        if self.udp_dport == 6081:
            self.inner_l2 = self.tunnel + 8 + 4 * (frame[self.tunnel] & 0x3F)
        else:
            self.inner_l2 = self.tunnel + 8
        self.inner_ethertype = struct.unpack_from("!H", frame, self.inner_l2 + 12)[0]
        self.inner_l3 = self.inner_l2 + 14
        if self.inner_ethertype == 0x0800:
            self.ihl = (frame[self.inner_l3] & 0xF) * 4
            self.inner_len = struct.unpack_from("!H", frame, self.inner_l3 + 2)[0]
            self.inner_src, self.inner_dst = (
                frame[self.inner_l3 + 12 : self.inner_l3 + 16],
                frame[self.inner_l3 + 16 : self.inner_l3 + 20],
            )
            self.inner_l4 = self.inner_l3 + self.ihl
        else:
            plen = struct.unpack_from("!H", frame, self.inner_l3 + 4)[0]
            self.inner_len = 40 + plen
            self.inner_src, self.inner_dst = (
                frame[self.inner_l3 + 8 : self.inner_l3 + 24],
                frame[self.inner_l3 + 24 : self.inner_l3 + 40],
            )
            nh, off = frame[self.inner_l3 + 6], self.inner_l3 + 40
            self.ext_chain = []
            while nh != 6:
                self.ext_chain.append((nh, off))
                if nh == 44:
                    length = 8
                elif nh == 51:
                    length = (frame[off + 1] + 2) * 4
                else:
                    length = (frame[off + 1] + 1) * 8
                nh, off = frame[off], off + length
            self.inner_l4 = off
        self.inner_end = self.inner_l3 + self.inner_len
        self.doff = (frame[self.inner_l4 + 12] >> 4) * 4
        self.payload = frame[self.inner_l4 + self.doff : self.inner_end]

    def outer_ipv4_ok(self) -> bool:
        return rfc1071(self.frame[self.outer_l3 : self.outer_l4]) == 0xFFFF

    def inner_ipv4_ok(self) -> bool:
        return rfc1071(self.frame[self.inner_l3 : self.inner_l4]) == 0xFFFF

    def tcp_ok(self) -> bool:
        seg = self.frame[self.inner_l4 : self.inner_end]
        return rfc1071(pseudo(self.inner_src, self.inner_dst, 6, len(seg)) + seg) == 0xFFFF

    def udp_ok(self) -> bool:
        dgram = self.frame[self.outer_l4 : self.outer_end]
        assert len(dgram) == self.udp_len
        return rfc1071(pseudo(self.outer_src, self.outer_dst, 17, len(dgram)) + dgram) == 0xFFFF


# ---- exact lengths (gro-spec §8 golden numbers) ------------------------------------------------------------


def test_build_frame_default_is_mtu_sized_vxlan_ipv4_tcp_with_timestamps():
    frame = build_frame(FrameSpec())
    p = Parsed(frame)
    assert len(frame) == 1514
    assert p.outer_len == 1500
    assert p.udp_len == 1480
    assert p.inner_len == 1450  # 52 (IP + TCP with timestamps) + 1398
    assert p.doff == 32
    assert len(p.payload) == 1398
    assert p.udp_dport == 4789 and p.udp_sport == 49152
    assert p.udp_csum == 0
    assert outer_ip_overhead(FrameSpec()) == 102


def test_build_frame_geneve_with_one_8_byte_option_adds_8_bytes():
    frame = build_frame(FrameSpec(encap="geneve", geneve_options=GENEVE_OPT8))
    p = Parsed(frame)
    assert len(frame) == 1514 + 8
    assert p.outer_len == 1508
    assert p.udp_dport == 6081
    assert frame[p.tunnel] == 0x02  # ver 0, opt_len 2 words
    assert frame[p.tunnel + 8 : p.tunnel + 16] == GENEVE_OPT8
    assert p.inner_len == 1450


def test_build_frame_outer_ipv6_adds_20_bytes():
    frame = build_frame(FrameSpec(outer_ipv6=True))
    p = Parsed(frame)
    assert len(frame) == 1534
    assert p.outer_len == 1520
    assert struct.unpack_from("!H", frame, 12)[0] == 0x86DD
    assert p.outer_src == ipaddress.ip_address("fd00::1").packed
    assert p.outer_dst == ipaddress.ip_address("fd00::2").packed


def test_build_frame_inner_ipv6_adds_20_bytes():
    p = Parsed(build_frame(FrameSpec(inner_ipv6=True)))
    assert len(p.frame) == 1534
    assert p.inner_len == 1470
    assert p.inner_src == ipaddress.ip_address("fd01::1").packed
    assert p.tcp_ok()


def test_build_frame_without_timestamps_has_20_byte_tcp_header():
    p = Parsed(build_frame(FrameSpec(timestamps=False, payload=1410)))
    assert p.doff == 20
    assert p.outer_len == 1500


@pytest.mark.parametrize(
    ("vlan", "tpids", "vids"),
    [(None, [], []), (5, [0x8100], [5]), ((100, 200), [0x88A8, 0x8100], [100, 200])],
)
def test_build_frame_outer_vlan_tags(vlan, tpids, vids):
    frame = build_frame(FrameSpec(outer_vlan=vlan))
    p = Parsed(frame)
    assert p.tpids == tpids
    assert p.vids == vids
    assert p.outer_ethertype == 0x0800
    assert len(frame) == 1514 + 4 * len(vids)
    assert frame_layout(FrameSpec(outer_vlan=vlan)).outer_l3 == p.outer_l3


def test_build_frame_pad_to_pads_after_the_datagram_without_changing_lengths():
    spec = FrameSpec(payload=0)
    short = build_frame(spec)
    padded = build_frame(replace(spec, pad_to=len(short) + 6))
    assert len(padded) == len(short) + 6
    assert padded[: len(short)] == short
    assert padded[len(short) :] == b"\0" * 6
    p = Parsed(padded)
    assert p.outer_end == len(short)
    # a pad_to below the frame length changes nothing
    assert build_frame(replace(spec, pad_to=10)) == short


def test_build_frame_pad_to_keeps_computed_udp_checksum_over_datagram_only():
    spec = FrameSpec(payload=2, outer_csum="computed", pad_to=200)
    p = Parsed(build_frame(spec))
    assert len(p.frame) == 200
    assert p.udp_ok()


# ---- checksums --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("outer_ipv6", [False, True])
@pytest.mark.parametrize("inner_ipv6", [False, True])
@pytest.mark.parametrize("encap", ["vxlan", "geneve"])
def test_build_frame_checksums_verify_independently(outer_ipv6, inner_ipv6, encap):
    spec = FrameSpec(
        outer_ipv6=outer_ipv6,
        inner_ipv6=inner_ipv6,
        encap=encap,
        geneve_options=GENEVE_OPT8 if encap == "geneve" else b"",
        outer_csum="computed",
        payload=777,
    )
    p = Parsed(build_frame(spec))
    assert p.udp_csum not in (0,)
    assert p.udp_ok()
    assert p.tcp_ok()
    if not outer_ipv6:
        assert p.outer_ipv4_ok()
    if not inner_ipv6:
        assert p.inner_ipv4_ok()


def test_build_frame_zero_outer_csum_leaves_field_zero_and_others_valid():
    p = Parsed(build_frame(FrameSpec(outer_csum="zero")))
    assert p.udp_csum == 0
    assert p.outer_ipv4_ok() and p.inner_ipv4_ok() and p.tcp_ok()


def test_build_frame_bad_checksums_fail_verification_and_are_never_zero():
    spec = FrameSpec(outer_csum="bad", ip_csum="bad", tcp_csum="bad")
    p = Parsed(build_frame(spec))
    good = Parsed(build_frame(replace(spec, outer_csum="computed")))  # same inner bytes
    assert p.udp_csum != 0
    assert p.udp_csum == good.udp_csum ^ 0x1234
    assert not p.udp_ok()
    assert not p.inner_ipv4_ok()
    assert not p.tcp_ok()
    assert p.outer_ipv4_ok()  # the outer IPv4 header stays valid: only the named checksums are bad


def test_build_frame_udp_computed_zero_is_sent_as_ffff():
    # RFC 768: a computed 0 is transmitted as all ones. Shift the UDP source port by the checksum value so
    # that the ones'-complement sum becomes 0xFFFF (field value 0).
    spec = FrameSpec(outer_csum="computed", payload=10)
    c = Parsed(build_frame(spec)).udp_csum
    sport = spec.udp_sport + c
    sport = (sport & 0xFFFF) + (sport >> 16)
    p = Parsed(build_frame(replace(spec, udp_sport=sport)))
    assert p.udp_sport == sport
    assert p.udp_csum == 0xFFFF
    assert p.udp_ok()


# ---- field placement, cross-checked with dpkt -------------------------------------------------------------


def test_build_frame_fields_match_dpkt_parse_vxlan():
    spec = FrameSpec(
        outer_src_mac="02:aa:00:00:00:01",
        outer_dst_mac=b"\x02\xbb\x00\x00\x00\x02",
        outer_src="10.1.1.1",
        outer_dst="10.2.2.2",
        outer_ttl=17,
        outer_tos=0x10,
        outer_df=False,
        outer_ip_id=4321,
        udp_sport=50000,
        udp_dport=8472,
        vni=0xABCDEF,
        vxlan_flags=0x08000000,
        inner_src="172.16.0.1",
        inner_dst="172.16.0.2",
        ttl=33,
        tos=0x03,
        df=False,
        ip_id=777,
        sport=1234,
        dport=80,
        seq=0xFFFFFFF0,
        ack=99,
        flags=ACK | PSH,
        window=1000,
        urg_ptr=0,
        tsval=11,
        tsecr=22,
        payload=b"hello",
    )
    eth = dpkt.ethernet.Ethernet(build_frame(spec))
    assert eth.src == b"\x02\xaa\x00\x00\x00\x01" and eth.dst == b"\x02\xbb\x00\x00\x00\x02"
    ip = eth.data
    assert (ip.ttl, ip.tos, ip.df, ip.id, ip.p) == (17, 0x10, 0, 4321, 17)
    assert ip.src == bytes([10, 1, 1, 1]) and ip.dst == bytes([10, 2, 2, 2])
    udp = ip.data
    assert (udp.sport, udp.dport, udp.sum) == (50000, 8472, 0)
    vx = VxlanHdr(udp.data)
    assert vx.vx_flags == 0x08000000 and vx.vx_vni == 0xABCDEF00 and vx.vni == 0xABCDEF
    inner = dpkt.ethernet.Ethernet(vx.data)
    assert inner.src == bytes.fromhex("020000000101") and inner.dst == bytes.fromhex("020000000102")
    iip = inner.data
    assert (iip.ttl, iip.tos, iip.df, iip.id, iip.len) == (33, 3, 0, 777, 20 + 32 + 5)
    assert iip.src == bytes([172, 16, 0, 1])
    tcp = iip.data
    assert (tcp.sport, tcp.dport, tcp.seq, tcp.ack, tcp.flags, tcp.win) == (
        1234,
        80,
        0xFFFFFFF0,
        99,
        0x18,
        1000,
    )
    assert tcp.opts == b"\x01\x01\x08\x0a" + struct.pack("!II", 11, 22)
    assert tcp.data == b"hello"


def test_build_frame_fields_match_dpkt_parse_geneve_ipv6():
    spec = FrameSpec(
        encap="geneve",
        geneve_options=GENEVE_OPT8 + geneve_opt(0x0102, 0x05, b"", critical=True),
        geneve_oam=True,
        geneve_critical=True,
        vni=7,
        outer_ipv6=True,
        outer_tos=0xB8,
        outer_flow_label=0xABCDE,
        outer_hop_limit=9,
        inner_ipv6=True,
        tos=0x02,
        flow_label=0x12345,
        hop_limit=3,
        outer_csum="computed",
        payload=100,
    )
    eth = dpkt.ethernet.Ethernet(build_frame(spec))
    ip6 = eth.data
    assert isinstance(ip6, dpkt.ip6.IP6)
    assert (ip6.fc, ip6.flow, ip6.hlim, ip6.nxt) == (0xB8, 0xABCDE, 9, 17)
    udp = ip6.data
    assert udp.dport == 6081
    gh = GeneveHdr(udp.data)
    assert (gh.ver, gh.opt_len, gh.oam, gh.critical, gh.rsvd1, gh.proto_type, gh.vni, gh.rsvd2) == (
        0,
        3,
        1,
        1,
        0,
        0x6558,
        7,
        0,
    )
    assert gh.options == GENEVE_OPT8 + b"\x01\x02\x85\x00"
    inner = dpkt.ethernet.Ethernet(gh.data)
    iip6 = inner.data
    assert (iip6.fc, iip6.flow, iip6.hlim, iip6.nxt, iip6.plen) == (0x02, 0x12345, 3, 6, 20 + 12 + 100)
    assert iip6.data.data == pattern_payload(spec.seq, 100)


def test_tcp_flag_constants():
    assert (FIN, SYN, RST, PSH, ACK, URG, ECE, CWR) == (1, 2, 4, 8, 0x10, 0x20, 0x40, 0x80)
    p = Parsed(build_frame(FrameSpec(flags=FIN | PSH | ACK | CWR | ECE, urg_ptr=0)))
    assert p.frame[p.inner_l4 + 13] == 0xD9


def test_build_frame_tcp_options_override_padded_to_4():
    spec = FrameSpec(tcp_options=b"\x02\x04\x05\xb4\x01", timestamps=True, payload=0)
    p = Parsed(build_frame(spec))
    assert p.doff == 28
    assert p.frame[p.inner_l4 + 20 : p.inner_l4 + 28] == b"\x02\x04\x05\xb4\x01\x00\x00\x00"
    assert p.tcp_ok()
    with pytest.raises(ValueError):
        build_frame(FrameSpec(tcp_options=b"\x01" * 41))


def test_build_frame_ipv4_options_padded_and_ihl_adjusted():
    spec = FrameSpec(ip_options=b"\x94\x04\x00", payload=10)  # router alert, 3 bytes -> 4
    p = Parsed(build_frame(spec))
    assert p.ihl == 24
    assert p.frame[p.inner_l3 + 20 : p.inner_l3 + 24] == b"\x94\x04\x00\x00"
    assert p.inner_len == 24 + 32 + 10
    assert p.outer_len == 20 + 8 + 8 + 14 + p.inner_len
    assert p.inner_ipv4_ok() and p.tcp_ok()
    assert frame_layout(spec).inner_l4 == p.inner_l4


def test_build_frame_ipv4_fragment_fields():
    p = Parsed(build_frame(FrameSpec(df=False, mf=True, frag_off=185, payload=8)))
    assert struct.unpack_from("!H", p.frame, p.inner_l3 + 6)[0] == 0x2000 | 185
    p = Parsed(build_frame(FrameSpec()))
    assert struct.unpack_from("!H", p.frame, p.inner_l3 + 6)[0] == 0x4000
    with pytest.raises(ValueError):
        build_frame(FrameSpec(frag_off=1 << 13))


def test_build_frame_ipv6_extension_headers_chain_and_lengths():
    frag = struct.pack("!HI", (8 << 3) | 1, 0xDEADBEEF)
    spec = FrameSpec(
        inner_ipv6=True,
        ipv6_ext=[(0, b""), (60, b"\x05\x02\x00\x00\x00"), (43, b"\x00" * 14), (44, frag)],
        payload=64,
    )
    p = Parsed(build_frame(spec))
    assert [t for t, _ in p.ext_chain] == [0, 60, 43, 44]
    f = p.frame
    (hbh, hbh_off), (dst, dst_off), (_, rt_off), (_, fr_off) = p.ext_chain
    assert f[p.inner_l3 + 6] == 0
    # hop-by-hop: 2 bytes + PadN(4) = 8 bytes, length field 0
    assert f[hbh_off : hbh_off + 8] == bytes((60, 0, 1, 4, 0, 0, 0, 0))
    # destination options: 2 + 5 bytes + Pad1 = 8
    assert f[dst_off : dst_off + 8] == bytes((43, 0, 5, 2, 0, 0, 0, 0))
    # routing: 2 + 14 = 16 bytes, length field 1
    assert f[rt_off] == 44 and f[rt_off + 1] == 1
    assert f[fr_off : fr_off + 8] == bytes((6, 0)) + frag
    assert p.inner_l4 == fr_off + 8
    assert p.inner_len == 40 + 8 + 8 + 16 + 8 + 32 + 64
    assert frame_layout(spec).inner_l4 == p.inner_l4
    assert p.tcp_ok()


def test_build_frame_ipv6_fragment_header_default_body_and_auth_length():
    spec = FrameSpec(inner_ipv6=True, ipv6_ext=[(44, b""), (51, b"\x00" * 14)], payload=0)
    p = Parsed(build_frame(spec))
    (_, fr_off), (_, ah_off) = p.ext_chain
    assert p.frame[fr_off : fr_off + 8] == bytes((51, 0, 0, 0, 0, 0, 0, 0))
    assert p.frame[ah_off] == 6 and p.frame[ah_off + 1] == 16 // 4 - 2


def test_build_frame_rejects_misapplied_fields():
    for bad in (
        FrameSpec(encap="gre"),
        FrameSpec(outer_csum="partial"),
        FrameSpec(ip_csum="maybe"),
        FrameSpec(inner_ipv6=True, ip_options=b"\x01"),
        FrameSpec(ipv6_ext=[(0, b"")]),
        FrameSpec(geneve_options=GENEVE_OPT8),  # vxlan
        FrameSpec(encap="geneve", geneve_options=b"\x00" * 6),
        FrameSpec(vni=1 << 24),
        FrameSpec(outer_vlan=4096),
        FrameSpec(outer_src="fd00::1"),
        FrameSpec(payload=70000),
    ):
        with pytest.raises(ValueError):
            build_frame(bad)


def test_frame_layout_matches_parse():
    for spec in (
        FrameSpec(),
        FrameSpec(encap="geneve", geneve_options=GENEVE_OPT8, outer_ipv6=True, outer_vlan=(1, 2)),
        FrameSpec(inner_ipv6=True, ipv6_ext=[(0, b"abc")], timestamps=False, payload=b"xyz"),
    ):
        frame = build_frame(spec)
        p = Parsed(frame)
        lay = frame_layout(spec)
        assert (lay.outer_l3, lay.outer_l4, lay.tunnel, lay.inner_l2, lay.inner_l3, lay.inner_l4) == (
            p.outer_l3,
            p.outer_l4,
            p.tunnel,
            p.inner_l2,
            p.inner_l3,
            p.inner_l4,
        )
        assert lay.payload == p.inner_l4 + p.doff
        assert lay.end == p.outer_end == lay.frame_len == len(frame)


def test_build_inner_frame_is_the_tunnel_payload():
    spec = FrameSpec(payload=33)
    p = Parsed(build_frame(spec))
    assert build_inner_frame(spec) == p.frame[p.inner_l2 : p.outer_end]


# ---- payload pattern and flows ----------------------------------------------------------------------------


def test_pattern_payload_depends_on_stream_position():
    assert pattern_payload(0x1FE, 4) == bytes((0xFE, 0xFF, 0x00, 0x01))
    assert pattern_payload(3, 600) == bytes((3 + i) & 0xFF for i in range(600))
    p = Parsed(build_frame(FrameSpec(seq=5, payload=3)))
    assert p.payload == b"\x05\x06\x07"


def test_build_flow_segments_are_contiguous():
    spec = FrameSpec(outer_ip_id=0xFFFE, outer_csum="computed")
    sizes = [1398, 1398, 1398, 672]
    frames = build_flow(spec, sizes, seq0=0xFFFFF000, ip_id0=0xFFFF, id_step=1, tsval0=7, ts_step=2)
    assert len(frames) == 4
    seq = 0xFFFFF000
    stream = b""
    for k, frame in enumerate(frames):
        p = Parsed(frame)
        tcp = dpkt.tcp.TCP(p.frame[p.inner_l4 : p.inner_end])
        assert tcp.seq == seq & 0xFFFFFFFF
        assert len(tcp.data) == sizes[k]
        assert struct.unpack_from("!H", frame, p.inner_l3 + 4)[0] == (0xFFFF + k) & 0xFFFF
        assert struct.unpack_from("!H", frame, p.outer_l3 + 4)[0] == (0xFFFE + k) & 0xFFFF
        assert struct.unpack("!I", tcp.opts[4:8])[0] == 7 + 2 * k
        assert p.udp_ok() and p.tcp_ok() and p.inner_ipv4_ok() and p.outer_ipv4_ok()
        stream += tcp.data
        seq += sizes[k]
    assert stream == pattern_payload(0xFFFFF000, sum(sizes))
    assert [len(f) for f in frames] == [1514, 1514, 1514, 1514 - 1398 + 672]


def test_flow_specs_defaults_start_from_spec():
    spec = FrameSpec(seq=10, ip_id=5, tsval=3)
    specs = flow_specs(spec, [1, 2, 3], id_step=0)
    assert [s.seq for s in specs] == [10, 11, 13]
    assert [s.ip_id for s in specs] == [5, 5, 5]
    assert [s.tsval for s in specs] == [3, 3, 3]
    assert [s.payload for s in specs] == [1, 2, 3]


# ---- header classes ---------------------------------------------------------------------------------------


def test_vxlanhdr_roundtrip_and_alias():
    assert vxlanhdr is VxlanHdr
    hdr = VxlanHdr(vx_vni=0, data=b"inner")
    hdr.vni = 0x123456
    raw = bytes(hdr)
    assert raw == bytes.fromhex("08000000 12345600") + b"inner"
    back = VxlanHdr(raw)
    assert (back.vx_flags, back.vx_vni, back.vni, back.data) == (0x08000000, 0x12345600, 0x123456, b"inner")


def test_genevehdr_roundtrip_and_alias():
    assert genevehdr is GeneveHdr
    hdr = GeneveHdr(vni=0xA, oam=1, data=b"inner")
    hdr.set_options(GENEVE_OPT8)
    raw = bytes(hdr)
    assert raw[:8] == bytes.fromhex("02 80 6558 00000a 00")
    assert len(hdr) == len(raw) == 8 + 8 + 5
    back = GeneveHdr(raw)
    assert (back.opt_len, back.oam, back.critical, back.vni, back.options, back.data) == (
        2,
        1,
        0,
        0xA,
        GENEVE_OPT8,
        b"inner",
    )
    with pytest.raises(dpkt.NeedData):
        GeneveHdr(raw[:12])


def test_geneve_opt_tlv_layout():
    assert geneve_opt(0x0102, 0x03, b"abcdefgh") == bytes.fromhex("0102 03 02") + b"abcdefgh"
    assert geneve_opt(0xFFF0, 0x01, critical=True) == bytes.fromhex("fff0 81 00")
    opt = GeneveOpt(geneve_opt(0x0102, 0x03, b"abcd") + b"rest")
    assert (opt.opt_class, opt.type, opt.length, opt.data) == (0x0102, 3, 1, b"abcd")
    with pytest.raises(ValueError):
        geneve_opt(1, 1, b"abc")
    with pytest.raises(ValueError):
        geneve_opt(1, 1, b"\0" * 128)
