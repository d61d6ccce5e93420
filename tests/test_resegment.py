"""``--resegment``: super-frames (TSO/GSO, post-GRO, BIG TCP) split into the frames the wire carried.

Expected segments follow the kernel's segmentation code (resegment.py docstring): net/ipv4/tcp_offload.c
``tcp_gso_segment`` (seq advanced by MSS, FIN/PSH cleared on all but the last segment, CWR cleared after the first),
net/ipv4/af_inet.c ``inet_gso_segment`` (IPv4 ID + 1 per segment, tot_len, header checksum),
net/ipv6/ip6_offload.c ``ipv6_gso_segment`` (payload_len), net/ipv4/udp_offload.c ``__skb_udp_tunnel_segment``
(outer UDP length per segment; checksum only when the tunnel uses one). Every produced segment is checked two
independent ways: byte for byte against ``packet.build`` building the same wire segment from its fields, and field
by field with dpkt (checksums with ``dpkt.in_cksum``, not the project's csum module).
"""

from __future__ import annotations

import json
import struct
from dataclasses import replace

import dpkt
import pytest

from gro_replay.cli import main
from gro_replay.kernel.model import K_5_12
from gro_replay.packet.build import (
    ACK,
    CWR,
    ECE,
    FIN,
    PSH,
    FrameSpec,
    build_frame,
    flow_specs,
    frame_layout,
    pattern_payload,
    peer_spec,
)
from gro_replay.resegment import KEEP_NOT_TUNNEL, Resegmenter, parse_super_frame
from gro_replay.sim import ReplayConfig, replay_capture, replay_frames

TUNNEL_PORTS = {4789: "vxlan", 8472: "vxlan", 6081: "geneve"}


def resegmenter(mtu: int = 1500, mss: int | None = None) -> Resegmenter:
    return Resegmenter(mtu, mss, (4789, 8472), (6081,))


def expected_segments(spec: FrameSpec, sizes: list[int]) -> list[bytes]:
    """The wire frames tcp_gso_segment + inet_gso_segment make of ``spec``: sizes, seq/IDs advanced, flags split."""
    out = []
    specs = flow_specs(spec, sizes)
    for i, s in enumerate(specs):
        flags = spec.flags
        if i < len(specs) - 1:
            flags &= ~(FIN | PSH)  # tcp_gso_segment: th->fin = th->psh = 0 on all but the last
        if i:
            flags &= ~CWR  # tcp_gso_segment: th->cwr = 0 after the first
        out.append(build_frame(replace(s, flags=flags)))
    return out


def _sum_ok(data: bytes) -> bool:
    return dpkt.in_cksum(data) == 0


def dpkt_check(seg: bytes, *, v6_outer: bool, v6_inner: bool, geneve: bool) -> dict:
    """Parse ``seg`` with dpkt and verify every checksum with dpkt.in_cksum; return the fields tests compare."""
    eth = dpkt.ethernet.Ethernet(seg)
    l3 = 14 + 4 * len(getattr(eth, "vlan_tags", []) or [])
    ip = eth.data
    out = {}
    if v6_outer:
        assert isinstance(ip, dpkt.ip6.IP6)
        out["outer_len"] = 40 + ip.plen
        udp_raw = seg[l3 + 40 : l3 + 40 + ip.plen]
    else:
        assert isinstance(ip, dpkt.ip.IP)
        assert _sum_ok(seg[l3 : l3 + ip.hl * 4]), "outer IPv4 header checksum"
        out["outer_len"] = ip.len
        out["outer_id"] = ip.id
        udp_raw = seg[l3 + ip.hl * 4 : l3 + ip.len]
    udp = dpkt.udp.UDP(udp_raw)
    assert udp.ulen == len(udp_raw)
    out["udp_csum"] = udp.sum
    if udp.sum:
        if v6_outer:
            ph = ip.src + ip.dst + struct.pack("!IxxxB", udp.ulen, 17)
        else:
            ph = ip.src + ip.dst + struct.pack("!BBH", 0, 17, udp.ulen)
        assert _sum_ok(ph + udp_raw), "outer UDP checksum"
    tun = udp_raw[8:]
    inner = tun[8 + (tun[0] & 0x3F) * 4 if geneve else 8 :]
    ieth = dpkt.ethernet.Ethernet(inner)
    iip = ieth.data
    iraw = inner[14 + 4 * len(getattr(ieth, "vlan_tags", []) or []) :]  # past the inner VLAN tags, if any
    if v6_inner:
        assert isinstance(iip, dpkt.ip6.IP6)
        assert iip.plen == len(iraw) - 40
        tcp_raw = iraw[40:]
        ph = iip.src + iip.dst + struct.pack("!IxxxB", len(tcp_raw), 6)
    else:
        assert isinstance(iip, dpkt.ip.IP)
        assert iip.len == len(iraw)
        assert _sum_ok(iraw[: iip.hl * 4]), "inner IPv4 header checksum"
        out["inner_id"] = iip.id
        tcp_raw = iraw[iip.hl * 4 :]
        ph = iip.src + iip.dst + struct.pack("!BBH", 0, 6, len(tcp_raw))
    assert _sum_ok(ph + tcp_raw), "inner TCP checksum"
    tcp = dpkt.tcp.TCP(tcp_raw)
    out.update(seq=tcp.seq, flags=tcp.flags, payload=bytes(tcp.data))
    return out


VARIANTS = {
    "vxlan4-in4-zero-csum": FrameSpec(),
    "vxlan4-in4-computed-csum": FrameSpec(outer_csum="computed"),
    "vxlan4-in6-vlan": FrameSpec(inner_ipv6=True, outer_vlan=5, outer_csum="computed"),
    "vxlan6-in4": FrameSpec(outer_ipv6=True, outer_csum="computed"),
    "geneve4-in4-options": FrameSpec(encap="geneve", geneve_options=bytes(range(8))),
    "geneve6-in6": FrameSpec(encap="geneve", outer_ipv6=True, inner_ipv6=True, outer_csum="computed"),
    # an inner 802.1Q tag stays in every segment's headers (the receive side's vlan_gro_receive reads it)
    "vxlan4-in4-inner-vlan": FrameSpec(inner_vlan=10, outer_csum="computed"),
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_tcp_gso_segment_rebuilds_every_header(name):
    """A 5000-byte super-segment at MSS 1398: 1398×3 + 806, each frame exactly what build_frame makes of it."""
    base = replace(
        VARIANTS[name], payload=1398, seq=0xFFFFF000, ip_id=0xFFFE, outer_ip_id=0xFFFF, flags=ACK | CWR | ECE
    )
    sup = build_frame(replace(base, payload=5000, flags=ACK | CWR | ECE | PSH | FIN))
    segs = resegmenter(mtu=1500, mss=1398).split(sup)
    sizes = [1398, 1398, 1398, 806]
    assert segs == expected_segments(replace(base, flags=ACK | CWR | ECE | PSH | FIN), sizes)
    # the same, read back field by field with dpkt (checksums summed by dpkt.in_cksum)
    sup_tcp = dpkt_check(
        sup, v6_outer=base.outer_ipv6, v6_inner=base.inner_ipv6, geneve=base.encap == "geneve"
    )
    payload = b""
    for i, seg in enumerate(segs):
        f = dpkt_check(seg, v6_outer=base.outer_ipv6, v6_inner=base.inner_ipv6, geneve=base.encap == "geneve")
        assert f["seq"] == (0xFFFFF000 + 1398 * i) & 0xFFFFFFFF  # wraps past 2^32
        want = ACK | ECE | (CWR if i == 0 else 0) | (PSH | FIN if i == 3 else 0)
        assert f["flags"] == want
        assert len(f["payload"]) == sizes[i]
        if not base.outer_ipv6:
            assert f["outer_id"] == (0xFFFF + i) & 0xFFFF
        if not base.inner_ipv6:
            assert f["inner_id"] == (0xFFFE + i) & 0xFFFF
        # outer UDP checksum: kept 0 when the super-frame had none, else computed (checked in dpkt_check)
        assert (f["udp_csum"] == 0) == (base.outer_csum == "zero")
        payload += f["payload"]
    assert payload == sup_tcp["payload"]


def test_mss_from_mtu_fills_the_outer_packet():
    """No MSS and no flow history: MSS = MTU − outer datagram overhead (102 bytes here: 1398 at MTU 1500)."""
    spec = FrameSpec(payload=1398)
    sup = build_frame(replace(spec, payload=4000))
    segs = resegmenter(mtu=1500).split(sup)
    assert segs == expected_segments(spec, [1398, 1398, 1204])
    assert [len(s) - 14 for s in segs] == [1500, 1500, 1306]
    # a smaller MTU gives smaller segments: 1400 − 102 = 1298
    segs = resegmenter(mtu=1400).split(sup)
    assert segs == expected_segments(spec, [1298, 1298, 1298, 106])


def _big_tcp(spec: FrameSpec, payload_len: int) -> bytes:
    """A BIG TCP frame: ``spec``'s headers, ``payload_len`` pattern bytes, every length field 0.

    IPv4 BIG TCP: ``iph_set_totlen`` writes 0 above 64 KiB; the outer UDP length (16 bits) cannot express it
    either and the capture shows 0 (tcpdump's bigtcp-ipv4-vxlan-ipv4.pcap does).
    """
    hdr = build_frame(replace(spec, payload=0))
    lay = frame_layout(replace(spec, payload=0))
    frame = bytearray(hdr) + pattern_payload(spec.seq, payload_len)
    struct.pack_into("!H", frame, lay.outer_l3 + 2, 0)
    struct.pack_into("!H", frame, lay.outer_l4 + 4, 0)
    struct.pack_into("!H", frame, lay.inner_l3 + 2, 0)
    return bytes(frame)


def test_big_tcp_zero_lengths_are_split_by_the_frame_length():
    spec = FrameSpec(payload=1398, outer_csum="computed", flags=ACK | PSH)
    sup = _big_tcp(spec, 80000)
    sf = parse_super_frame(sup, TUNNEL_PORTS)
    assert sf.zero_len and sf.payload_len == 80000 and sf.outer_len == len(sup) - 14
    segs = resegmenter().split(sup)
    # 80000 = 57 × 1398 + 314
    assert segs == expected_segments(spec, [1398] * 57 + [314])
    # a 16-bit length that cannot describe the frame (here the true length mod 2^16) counts as 0 too
    lay = frame_layout(spec)
    wrapped = bytearray(sup)
    struct.pack_into("!H", wrapped, lay.outer_l3 + 2, (len(sup) - lay.outer_l3) & 0xFFFF)
    assert resegmenter().oversize(bytes(wrapped))
    assert resegmenter().split(bytes(wrapped)) == segs


def test_ipv6_jumbo_payload_length_zero_with_hop_by_hop_jumbo_option():
    """IPv6 BIG TCP: payload_len 0 and a jumbo hop-by-hop option (RFC 2675) that segments do not carry."""
    spec = FrameSpec(outer_ipv6=True, payload=1378, outer_csum="computed")  # 1500 − 122 bytes of headers
    lay = frame_layout(replace(spec, payload=0))
    hdr = bytearray(build_frame(replace(spec, payload=0)))
    hbh = bytes((17, 0, 0xC2, 4)) + struct.pack("!I", 0)  # next header UDP, jumbo length filled below
    hdr[lay.outer_l3 + 6] = 0  # next header: hop-by-hop
    frame = hdr[: lay.outer_l4] + hbh + hdr[lay.outer_l4 :] + pattern_payload(spec.seq, 70000)
    struct.pack_into("!H", frame, lay.outer_l3 + 4, 0)
    struct.pack_into("!I", frame, lay.outer_l4 + 4, len(frame) - lay.outer_l3 - 40)
    struct.pack_into("!H", frame, lay.outer_l4 + 8 + 4, 0)  # UDP length
    struct.pack_into("!H", frame, lay.inner_l3 + 8 + 2, 0)  # inner IPv4 tot_len
    segs = resegmenter().split(bytes(frame))
    # 70000 = 50 × 1378 + 1100
    assert segs == expected_segments(spec, [1378] * 50 + [1100])


def test_frames_at_or_below_the_mtu_are_not_touched():
    r = resegmenter(mtu=1500)
    assert r.split(build_frame(FrameSpec(payload=1398))) is None  # outer IP length exactly 1500
    assert r.resegmented_frames == 0 and r.segments_created == 0 and not r.not_split


def test_oversize_frames_that_cannot_be_split_are_counted_and_kept():
    r = resegmenter(mtu=1500)
    # UDP to a port that is not a tunnel: not VXLAN/Geneve
    sup = build_frame(FrameSpec(payload=3000, udp_dport=9999))
    assert r.split(sup) is None
    assert r.not_split == {KEEP_NOT_TUNNEL: 1}


def _frames(specs, t0=0, step=1000):
    return [(t0 + i * step, build_frame(s)) for i, s in enumerate(specs)]


def test_auto_takes_the_mss_from_the_flow_then_the_mtu():
    """auto: the largest TCP payload of the flow's frames at or below the MTU so far (1000 here), else the MTU."""
    base = FrameSpec(payload=1000)
    first = flow_specs(base, [1000, 600])
    sup = replace(base, seq=first[-1].seq + 600, payload=2500, ip_id=2, outer_ip_id=2, flags=ACK | PSH)
    frames = _frames(first + [sup])
    lens = []
    cfg = ReplayConfig(kernels=(K_5_12,), resegment="auto")
    res = replay_frames(frames, cfg, lambda k, st, d, skb, t: lens.append((st, skb.len)))
    assert (res.input.resegmented_frames, res.input.segments_created) == (1, 3)  # 1000 + 1000 + 500
    assert res.input.frames_replayed == 5 and res.input.frames_read == 3
    # one poll of 5 contiguous segments (1000, 600 | 1000, 1000, 500): the 600-byte one is shorter than the
    # aggregate's MSS and ends it after merging (gro-spec §5.5, tcp_gro_receive); the split ones merge up to PSH
    assert [x for x in lens if x[0] == "phys"] == [("phys", 102 + 1600), ("phys", 102 + 2500)]
    # a flow with no history: MTU-derived 1398 → 1398 + 1102
    res = replay_frames(_frames([replace(sup, udp_sport=50000)]), cfg)
    assert res.input.segments_created == 2
    # an explicit MSS wins
    res = replay_frames(frames, replace(cfg, resegment=700))
    assert res.input.segments_created == 4  # 2500 = 700 × 3 + 400


def test_flow_selected_frames_count_a_split_super_frame_as_its_segments():
    """``--flow`` counts the selected flow's frames in the unit of ``frames_replayed`` (frames that entered the
    simulation): 1000 + 600 + a 2500-byte super-frame split at the flow's MSS 1000 (1000, 1000, 500) are 5
    frames, and the phys stage sees those 5 segments; the other flow's 2 frames are replayed, not selected."""
    base = FrameSpec(payload=1000)
    first = flow_specs(base, [1000, 600])
    sup = replace(base, seq=first[-1].seq + 600, payload=2500, ip_id=2, outer_ip_id=2, flags=ACK | PSH)
    other = flow_specs(replace(base, sport=41000, udp_sport=50001), [1000, 1000])
    cfg = ReplayConfig(kernels=(K_5_12,), resegment="auto", flow="sport=40000")
    res = replay_frames(_frames(first + [sup] + other), cfg)
    assert (res.input.frames_read, res.input.resegmented_frames, res.input.segments_created) == (5, 1, 3)
    assert res.input.frames_replayed == 7
    assert res.input.selected_frames == 5
    assert res.kernels[0].stages["phys"].frames_in == 5


def test_off_replays_super_frames_as_captured():
    sup = build_frame(FrameSpec(payload=3000))
    res = replay_frames([(0, sup)], ReplayConfig(kernels=(K_5_12,), resegment="off"))
    assert res.input.frames_replayed == 1 and res.input.resegmented_frames == 0
    assert res.kernels[0].stages["phys"].bytes == len(sup) - 14


# -- the public captures (../shared/captures/tcpdump; README there) ---------------------------------------------
def _replay(path, **cfg):
    out = []
    res = replay_capture(
        str(path),
        ReplayConfig(kernels=(K_5_12,), resegment="auto", **cfg),
        lambda k, st, d, skb, t: out.append((st, skb.len, len(skb.frames))),
    )
    return res, [x for x in out if x[0] == "phys"]


#: outer IPv4 20 + UDP 8 + VXLAN/Geneve 8 + inner Ethernet 14 + inner IPv4 20 + TCP with timestamps 32
HDRS = 102


@pytest.mark.parametrize("name", ["gso-ipv4-vxlan-ipv4.pcap", "gso-ipv4-geneve-ipv4.pcap"])
def test_gso_capture_reaggregates_to_its_6990_bytes(shared_captures, name):
    # README: one TX GSO super-frame (7106 bytes) with 6990 bytes of TCP payload, PSH set.
    res, phys = _replay(shared_captures / "tcpdump" / name)
    # MTU 1500 → MSS 1398 = 1500 − 102; 6990 = 5 × 1398: five wire frames
    assert (res.input.resegmented_frames, res.input.segments_created) == (1, 5)
    # post-fix phys GRO merges them (gro-spec §4.7: zero or non-zero outer checksum both aggregate post-fix);
    # PSH on the last segment flushes the aggregate (gro-spec §5.5): one skb of 5 segments
    assert phys == [("phys", HDRS + 6990, 5)]


def test_big_tcp_capture_reaggregates_into_64k_skbs(shared_captures):
    # README: one BIG TCP frame of 80116 bytes: 116 bytes of headers (with outer Ethernet), 80000 of payload
    res, phys = _replay(shared_captures / "tcpdump" / "bigtcp-ipv4-vxlan-ipv4.pcap")
    assert (res.input.resegmented_frames, res.input.segments_created) == (1, 58)  # 57 × 1398 + 314
    # skb_gro_receive refuses when p->len + the new payload ≥ 65536 (gro-spec §1.1, §5.6), p->len counted from
    # the outer IP header at phys: 1500 + 1398·k + 1398 < 65536 ⇔ k ≤ 44, so 46 segments (64410 bytes) per skb
    assert phys == [("phys", 1500 + 45 * 1398, 46), ("phys", HDRS + 11 * 1398 + 314, 12)]
    assert all(n <= 65536 for _, n, _ in phys)
    assert sum(n - HDRS for _, n, _ in phys) == 80000


def test_cli_resegment_counts_in_json_and_input_line(shared_captures, runner):
    path = str(shared_captures / "tcpdump" / "gso-ipv4-vxlan-ipv4.pcap")
    r = runner.invoke(main, [path, "--fix", "--format", "json", "-q"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert (doc["input"]["resegmented_frames"], doc["input"]["segments_created"]) == (1, 5)
    assert doc["config"]["resegment"] == "auto" and doc["config"]["mtu"] == 1500
    r = runner.invoke(main, [path, "--fix", "--format", "markdown", "-q", "--resegment", "1000"])
    assert r.exit_code == 0, r.output
    assert "resegmented: 1 super-frame into 7 segments" in r.stdout  # 6990 = 6 × 1000 + 990
    r = runner.invoke(main, [path, "--resegment", "off", "--format", "json", "-q"])
    assert json.loads(r.stdout)["input"]["frames_replayed"] == 1


@pytest.mark.parametrize("bad", ["0", "fast", "70000"])
def test_cli_rejects_a_bad_resegment_value(runner, tmp_path, bad):
    cap = tmp_path / "x.pcap"
    cap.write_bytes(b"")
    r = runner.invoke(main, [str(cap), "--resegment", bad])
    assert r.exit_code == 2
    assert "--resegment" in r.stderr and "Traceback" not in r.stderr


# -- IPv4 ids: what inet_gso_segment gives the segments, and what a Linux sender leaves room for ----------------
# net/ipv4/af_inet.c inet_gso_segment: id = ntohs(iph->id) of the super-frame, then per segment (not GSO partial)
# `iph->id = htons(id++)` unless fixedid; it runs once per IPv4 header, outer and inner of a VXLAN/Geneve frame.
# fixedid is SKB_GSO_TCP_FIXEDID, which applied only to the innermost header (`if (!skb->encapsulation || encap)`:
# outer ids always increment) until "net: gso: restore ids of outer ip headers correctly" (Richard Gobert, net-next
# Sep 2025): mainline reads `SKB_GSO_TCP_FIXEDID << encap` (FIXEDID outer, FIXEDID_INNER inner). resegment.py leaves
# FIXEDID out: a capture does not show gso_type, and a sender's own TCP skbs never carry it. IPv6 has no id
# (net/ipv6/ip6_offload.c ipv6_gso_segment sets payload_len only).
# A Linux sender numbers consecutive super-frames `gso_segs` apart: include/net/ip.h ip_select_ident_segs(…,
# skb_shinfo(skb)->gso_segs ?: 1) from net/ipv4/ip_output.c __ip_queue_xmit (inner), __ip_select_ident(…, gso_segs
# ?: 1) from net/ipv4/ip_tunnel_core.c iptunnel_xmit (outer) — synth.py Scenario.gso_segs.
def _ipv4_ids(seg: bytes, spec: FrameSpec) -> tuple[int | None, int | None]:
    """(outer, inner) IPv4 id of ``seg`` laid out as ``spec`` (None for an IPv6 header)."""
    lay = frame_layout(spec)
    outer = None if spec.outer_ipv6 else struct.unpack_from("!H", seg, lay.outer_l3 + 4)[0]
    inner = None if spec.inner_ipv6 else struct.unpack_from("!H", seg, lay.inner_l3 + 4)[0]
    return outer, inner


@pytest.mark.parametrize(
    ("name", "want"),
    [
        # outer 0x1234 → 0x1234…0x1237, inner 0xFFFE → 0xFFFE, 0xFFFF, 0, 1 (16 bits wrap: htons(id++))
        ("vxlan4-in4-zero-csum", [(0x1234, 0xFFFE), (0x1235, 0xFFFF), (0x1236, 0), (0x1237, 1)]),
        ("geneve4-in4-options", [(0x1234, 0xFFFE), (0x1235, 0xFFFF), (0x1236, 0), (0x1237, 1)]),
        ("vxlan4-in6-vlan", [(0x1234, None), (0x1235, None), (0x1236, None), (0x1237, None)]),
        ("vxlan6-in4", [(None, 0xFFFE), (None, 0xFFFF), (None, 0), (None, 1)]),
        ("geneve6-in6", [(None, None)] * 4),
    ],
)
def test_inet_gso_segment_ids_count_up_from_the_super_frames(name, want):
    spec = replace(VARIANTS[name], payload=1000, ip_id=0xFFFE, outer_ip_id=0x1234)
    sup = build_frame(replace(spec, payload=4000))
    segs = resegmenter(mss=1000).split(sup)
    assert [_ipv4_ids(s, spec) for s in segs] == want


def test_linux_sender_super_frames_resegment_into_one_id_sequence():
    """8 super-frames of a Linux sender at MTU 1102 (4000 bytes = 4 × MSS 1000 each, ids 0, 4, 8, …: synth's
    Scenario) split at MSS 1000 give ids 0…31 in both headers: no id repeats, none is skipped."""
    from gro_replay.synth import Scenario, synth_frames

    segs = [
        s
        for _, f in synth_frames(Scenario(frames=8, mss=4000, mtu=1102))
        for s in resegmenter(mss=1000).split(f)
    ]
    assert [_ipv4_ids(s, FrameSpec()) for s in segs] == [(i, i) for i in range(32)]


def test_super_frames_one_id_apart_are_split_as_the_kernel_would_regardless():
    """Super-frames whose next one's id leaves no room (ids 0, 1, 2: a non-Linux sender, FIXEDID upstream of a
    forwarder, jumbo wire frames taken for super-frames): each is still numbered id, id + 1, … (the overlap stays;
    the replay shows what GRO does with it, test_cli_resegmented_linux_super_frames_aggregate_across_frames)."""
    from gro_replay.synth import Scenario, synth_frames

    frames = [f for _, f in synth_frames(Scenario(frames=3, mss=4000, mtu=9000))]
    ids = [[_ipv4_ids(s, FrameSpec()) for s in resegmenter(mss=1000).split(f)] for f in frames]
    assert ids == [[(k + i, k + i) for i in range(4)] for k in range(3)]


def _stages(runner, path, *args) -> dict:
    r = runner.invoke(main, [str(path), "--format", "json", "-q", *args])
    assert r.exit_code == 0, r.output
    return {k["name"]: k["stages"] for k in json.loads(r.stdout)["kernels"]}


#: one kernel of each model the profiles have (4.19 to 5.10 are one model, every switch off: --kernel refuses to run
#: two strings of one model; 5.12 and 5.15 are one too)
KERNELS = ("4.19", "5.11", "5.12", "6.1", "6.6", "6.12", "6.18")


def test_cli_resegmented_linux_super_frames_aggregate_across_frames(runner, tmp_path):
    """`synth --mss 4000 --mtu 1102` (super-frames of a sender whose MTU makes MSS 1000) replayed with
    `--resegment 1000`: the 32 segments carry ids 0…31 and every kernel merges them into one skb, ended by the
    poll, never by an IP id condition. The same frames written by `synth --mss 4000 --mtu 9000` are jumbo wire
    frames (ids 0, 1, 2, …); split at 1000 anyway, their ids overlap and GRO ends an skb at each frame boundary
    (tcp_gro_receive ip_id), as the kernel does: the running 6.18 kernel delivered 8 × 4102 bytes at the phys
    veth for that capture and 1 × 32102 for the first (kernel-oracle.md; test_validate.py)."""
    from gro_replay.cli.synth import synth

    linux, jumbo = tmp_path / "linux.pcap", tmp_path / "jumbo.pcap"
    for out, mtu in ((linux, "1102"), (jumbo, "9000")):
        r = runner.invoke(synth, [str(out), "--frames", "8", "--mss", "4000", "--mtu", mtu])
        assert r.exit_code == 0, r.output
    kernels = [a for k in KERNELS for a in ("--kernel", k)]
    for name, st in _stages(runner, linux, "--resegment", "1000", *kernels).items():
        # kernels without 89e5c58fc1e2 (4.19, 5.11) refuse this zero-checksum tunnel at phys: gro_cells merges
        stages = ("phys", "tunnel") if name not in ("4.19", "pre-fix") else ("tunnel",)
        assert [st[s]["segs_per_skb_hist"] for s in stages] == [{"32": 1}] * len(stages), name
        assert not [r for s in st.values() for r in s["end_reasons"] if "ip_id" in r], name
    # --kernel 5.12 is reported as "post-fix"
    st = _stages(runner, jumbo, "--resegment", "1000", "--kernel", "5.12", "--kernel", "6.18")
    assert st["post-fix"]["phys"]["end_reasons"] == {
        "tcp_gro_receive:inner_ip_id": 7,
        "napi_complete_done:flush": 1,
    }
    assert st["6.18"]["phys"]["end_reasons"] == {
        "tcp_gro_receive:outer_ip_id+inner_ip_id": 7,
        "napi_complete_done:flush": 1,
    }
    assert st["6.18"]["phys"]["segs_per_skb_hist"] == {"4": 8}


@pytest.mark.parametrize(
    ("timestamps", "mss", "above", "largest", "fit", "segments"),
    [
        # 102 header bytes (20 outer IPv4 + 8 UDP + 8 VXLAN + 14 Ethernet + 20 IPv4 + 20 TCP + 12 NOP NOP TS): --mtu
        # 1500 leaves 1398; tcp_gso_segment cuts each 4000-byte payload into gso_size pieces, the last the remainder
        (True, 3000, 8, 3102, 1398, 16),  # 3000 (3102 bytes: above) + 1000 (1102) per frame
        (True, 1399, 16, 1501, 1398, 24),  # 1399, 1399 (1501 bytes: above) + 1202 (1304) per frame
        (True, 1398, 0, 0, None, 24),  # 1398, 1398 (1500 bytes) + 1204: every segment fits
        (False, 1411, 16, 1501, 1410, 24),  # 90 header bytes without timestamps: 1410 fit
        (True, None, 0, 0, None, 24),  # auto: what fits --mtu (the flow's wire segments are all super-frames)
    ],
)
def test_segments_an_mss_makes_above_the_mtu_are_said(
    runner, tmp_path, timestamps, mss, above, largest, fit, segments
):
    """`--resegment MSS` above what --mtu leaves with a super-frame's headers makes segments the link could not
    carry: replayed as made, counted (JSON input.segments_above_mtu, largest_segment_above_mtu; SUMMARY
    segments_above_mtu=N) and said in the resegment note with the MSS that fits; `auto` never makes them."""
    from gro_replay.cli.synth import synth

    cap = tmp_path / "super.pcap"
    ts = ["--timestamps"] if timestamps else ["--no-timestamps"]
    r = runner.invoke(synth, [str(cap), "--frames", "8", "--mss", "4000", "--mtu", "1102", *ts])
    assert r.exit_code == 0, r.output
    reseg = ["--resegment", str(mss)] if mss else []
    r = runner.invoke(main, [str(cap), "--no-fix", "--format", "json", "-q", *reseg])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    inp = doc["input"]
    assert (inp["resegmented_frames"], inp["segments_created"]) == (8, segments)
    assert (inp["segments_above_mtu"], inp["largest_segment_above_mtu"]) == (above, largest)
    (note,) = [n for n in inp["notes"] if "split into" in n]
    big = 4102 if timestamps else 4090
    head = f"8 frames larger than --mtu 1500 (the largest outer IP packet {big:,} bytes) were split into {segments} "
    if above:
        assert note.startswith(
            head + "segments, taken for TSO/GSO or GRO super-frames of the capturing host; "
        )
        assert (
            f"; {above} of the segments are larger than --mtu 1500 too (outer IP packets of up to {largest:,} "
            f"bytes): --resegment {mss} is more TCP payload than the {fit:,} bytes --mtu 1500 leaves with their "
            "headers, so GRO here receives segments no link of that MTU carries (--resegment "
            f"{fit} or less splits them to wire size; a link that carries them needs --mtu {largest}); "
        ) in note
        assert f" skipped=0 replayed={segments} segments_above_mtu={above} " in doc["summary"]
    else:
        assert note.startswith(head + "wire segments, ")
        assert "segments_above_mtu" not in doc["summary"] and "larger than --mtu 1500 too" not in note


@pytest.mark.parametrize(("mtu", "room"), [(120, "30 bytes"), (68, "none")])
def test_an_mtu_that_leaves_less_than_the_smallest_mss_names_no_mss(runner, tmp_path, mtu, room):
    """When --mtu leaves the super-frames' segments less TCP payload than ``TCP_MIN_SND_MSS`` (48, the smallest
    --resegment takes: include/net/tcp.h), the note names no MSS to split them to wire size (--resegment 30 would be
    refused): 90 header bytes without timestamps, so --mtu 120 leaves 30 bytes and --mtu 68 none (breaker's
    finding)."""
    from gro_replay.cli.synth import synth

    cap = tmp_path / "super.pcap"
    r = runner.invoke(synth, [str(cap), "--frames", "4", "--mss", "4000", "--mtu", "1090", "--no-timestamps"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(
        main, [str(cap), "--no-fix", "--format", "json", "-q", "--resegment", "100", "--mtu", str(mtu)]
    )
    assert r.exit_code == 0, r.output
    (note,) = [n for n in json.loads(r.stdout)["input"]["notes"] if "split into" in n]
    assert (
        f"--resegment 100 is more TCP payload than --mtu {mtu} leaves with their headers ({room}, below the 48-byte "
        "TCP_MIN_SND_MSS), so GRO here receives segments no link of that MTU carries (no --resegment splits them to "
        "wire size; a link that carries them needs --mtu 190)"
    ) in note


def test_an_outer_ipv6_datagram_is_split_at_no_less_than_1280():
    """No IPv6 link has an MTU below 1280 (RFC 8200 §5, IPV6_MIN_MTU: Linux takes IPv6 off a device below it,
    net/ipv6/addrconf.c), so with --mtu 1000 an outer IPv6 datagram of up to 1280 bytes is a wire frame and a larger
    one splits at 1280: 1280 − 122 header bytes (40 IPv6 + 8 UDP + 8 VXLAN + 14 Ethernet + 20 IPv4 + 20 TCP + 12
    NOP NOP TS) = 1158 per segment. Outer IPv4 keeps --mtu 1000 (IPv4 links go down to 68, RFC 791): 1000 − 102 =
    898."""
    r = resegmenter(mtu=1000)
    v6 = FrameSpec(outer_ipv6=True, payload=1158)
    wire = build_frame(v6)
    assert len(wire) - 14 == 1280 and not r.oversize(wire) and r.split(wire) is None
    segs = r.split(build_frame(replace(v6, payload=4000)))
    assert segs == expected_segments(v6, [1158, 1158, 1158, 526])
    assert [len(s) - 14 for s in segs] == [1280, 1280, 1280, 648]
    v4 = FrameSpec(payload=898)
    assert r.oversize(build_frame(replace(v4, payload=899)))
    segs = r.split(build_frame(replace(v4, payload=2000)))
    assert segs == expected_segments(v4, [898, 898, 204])
    assert r.not_split == {} and r.above.segments == 0


def test_cli_replay_mtu_below_1280_splits_outer_ipv6_at_1280(runner, tmp_path):
    """`--mtu 1000` over outer IPv6 super-frames (a sender at 1280: 4000 payload bytes → 3 × 1158 + 526): the
    replay splits them at 1280, as the sender's segmentation did, and the note says where (RFC 8200 §5)."""
    from gro_replay.cli.synth import synth

    cap = tmp_path / "v6.pcap"
    r = runner.invoke(synth, [str(cap), "--outer-ipv6", "--frames", "4", "--mss", "4000", "--mtu", "1280"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(main, [str(cap), "--no-fix", "--format", "json", "-q", "--mtu", "1000"])
    assert r.exit_code == 0, r.output
    inp = json.loads(r.stdout)["input"]
    assert (inp["resegmented_frames"], inp["segments_created"], inp["segments_above_mtu"]) == (4, 16, 0)
    (note,) = [n for n in inp["notes"] if "split into" in n]
    assert note.startswith(
        "4 frames larger than --mtu 1000 (1,280 for outer IPv6: RFC 8200 §5) (the largest outer IP packet 4,122 "
        "bytes) were split into 16 wire segments"
    )


def test_auto_learns_the_mss_of_outer_ipv6_wire_frames_above_an_mtu_below_1280():
    """--mtu 1000, outer IPv6: a 1200-byte outer datagram (1078 payload bytes with 122 of headers) is a wire frame
    (no IPv6 link is below 1280, RFC 8200 §5), so auto learns its MSS and splits the flow's 2200-byte super-frame
    into 1078 + 1078 + 44, not at what fits 1280 (1158 + 1042)."""
    base = FrameSpec(outer_ipv6=True, payload=1078)
    first = flow_specs(base, [1078])
    sup = replace(base, seq=first[-1].seq + 1078, payload=2200, flags=ACK | PSH)
    cfg = ReplayConfig(kernels=(K_5_12,), resegment="auto", mtu=1000)
    res = replay_frames(_frames(first + [sup]), cfg)
    assert (res.input.resegmented_frames, res.input.segments_created) == (1, 3)
    assert res.input.largest_split == 122 + 2200
    # with no history the split fills 1280: 1158 + 1042
    res = replay_frames(_frames([sup]), cfg)
    assert res.input.segments_created == 2


# TCP_MIN_SND_MSS (48, include/net/tcp.h) bounds the MSS with the TCP options counted: net/ipv4/tcp_output.c
# __tcp_mtu_to_mss raises the MSS to it, then tcp_mtu_to_mss subtracts the options ("reserve room for full set of
# TCP options and 8 bytes of data"). A full segment with timestamps (NOP NOP TS, 12 bytes) carries at least 36
# payload bytes; without options 48.
@pytest.mark.parametrize(("timestamps", "least"), [(True, 36), (False, 48)])
def test_the_split_floor_counts_the_tcp_options(timestamps, least):
    sup = build_frame(FrameSpec(payload=3600, timestamps=timestamps))
    segs = resegmenter(mss=least).split(sup)
    assert segs == expected_segments(
        FrameSpec(payload=least, timestamps=timestamps), [least] * (3600 // least)
    )
    r = resegmenter(mss=least - 1)
    assert r.split(sup) is None and r.not_split == {"mss_below_tcp_min_snd_mss": 1}


@pytest.mark.parametrize(("timestamps", "segments"), [(True, 84), (False, 3)])
def test_auto_takes_a_36_byte_mss_only_with_timestamps(timestamps, segments):
    """A flow whose wire segments carry 36 payload bytes: with timestamps that is a full segment of the smallest
    MSS (48 = 36 + 12 option bytes), so auto splits the 3000-byte super-frame at 36 (⌈3000 / 36⌉ = 84); without
    options 36 is below any Linux MSS (a small write), so the MTU decides: 1500 − 90 = 1410, ⌈3000 / 1410⌉ = 3."""
    base = FrameSpec(payload=36, timestamps=timestamps)
    first = flow_specs(base, [36, 36])
    sup = replace(base, seq=first[-1].seq + 36, payload=3000, flags=ACK | PSH)
    res = replay_frames(_frames(first + [sup]), ReplayConfig(kernels=(K_5_12,), resegment="auto"))
    assert (res.input.resegmented_frames, res.input.segments_created) == (1, segments)


def test_resegment_mss_parses_down_to_8():
    """48 less the most TCP option bytes a header holds (40: data offset 15 × 4 − 20) is 8."""
    from gro_replay.sim import ConfigError, parse_resegment

    assert parse_resegment("8") == 8 and parse_resegment("36") == 36
    with pytest.raises(
        ConfigError, match=r"\(8\.\.65535: TCP_MIN_SND_MSS 48 less at most 40 bytes of TCP options\)"
    ):
        parse_resegment("7")


@pytest.mark.parametrize(
    ("mtu", "words"),
    [
        (
            140,
            "the 38 bytes --mtu 140 leaves with their headers, so GRO here receives segments no link of that MTU "
            "carries (--resegment 38 or less splits them to wire size",
        ),
        (
            130,
            "--mtu 130 leaves with their headers (28 bytes, below the 36 payload bytes the 48-byte TCP_MIN_SND_MSS "
            "leaves with 12 bytes of TCP options), so GRO here receives segments no link of that MTU carries (no "
            "--resegment splits them to wire size",
        ),
    ],
)
def test_the_above_mtu_note_counts_the_tcp_options(runner, tmp_path, mtu, words):
    """Timestamps (102 header bytes with the 12 option bytes): --mtu 140 leaves 38 payload bytes, a full segment of
    a Linux sender (38 + 12 ≥ 48), so --resegment 38 splits to wire size; --mtu 130 leaves 28 (< 36): none does."""
    from gro_replay.cli.synth import synth

    cap = tmp_path / "super.pcap"
    r = runner.invoke(synth, [str(cap), "--frames", "4", "--mss", "4000", "--mtu", "1102"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(
        main, [str(cap), "--no-fix", "--format", "json", "-q", "--resegment", "100", "--mtu", str(mtu)]
    )
    assert r.exit_code == 0, r.output
    (note,) = [n for n in json.loads(r.stdout)["input"]["notes"] if "split into" in n]
    assert words in note


@pytest.mark.parametrize(("mss_option", "segments"), [(1000, 6), (40, 139)])
def test_auto_subtracts_the_tcp_options_from_the_syn_mss_option(mss_option, segments):
    """A SYN's MSS option counts no TCP options (RFC 6691 §2); the peer's sender clamps to it, floors at
    TCP_MIN_SND_MSS (48), then subtracts its segments' options (net/ipv4/tcp_output.c __tcp_mtu_to_mss,
    tcp_mtu_to_mss): with timestamps (12 bytes) MSS 1000 sends 988-byte segments (5000 = 5 × 988 + 60) and MSS 40
    sends 48 − 12 = 36 (5000 = 138 × 36 + 32)."""
    data = FrameSpec(flags=ACK, timestamps=True, payload=1)
    # the peer's SYN-ACK announces the MSS (the other direction of the connection: addresses and ports swapped)
    syn = peer_spec(
        data, payload=0, flags=0x12, tcp_options=b"\x02\x04" + struct.pack("!H", mss_option), timestamps=False
    )
    tiny = replace(data, seq=data.seq + 1)
    sup = replace(tiny, seq=tiny.seq + 1, payload=5000, flags=ACK | PSH)
    res = replay_frames(_frames([syn, tiny, sup]), ReplayConfig(kernels=(K_5_12,), resegment="auto"))
    assert (res.input.resegmented_frames, res.input.segments_created) == (1, segments)
    assert res.input.frames_replayed == 2 + segments


@pytest.mark.parametrize(("a_announces", "b_announces", "segments"), [(400, 1400, 3), (1400, 400, 8)])
def test_auto_takes_the_mss_the_peer_announced(a_announces, b_announces, segments):
    """A's SYN announces the MSS B may send, B's SYN-ACK the MSS A may send (tcp_parse_options stores the peer's
    option in rx_opt.mss_clamp, which __tcp_mtu_to_mss caps the sender's MSS by): A's 3000-byte super-frame (no TCP
    options) splits by B's figure: 1400 → 1400 + 1400 + 200, 400 → 7 × 400 + 200 (breaker's finding: the flow's
    own SYN was used)."""
    a = FrameSpec(flags=ACK, timestamps=False, payload=1)
    a_syn = replace(a, flags=0x02, payload=0, tcp_options=b"\x02\x04" + struct.pack("!H", a_announces))
    b_syn = peer_spec(a_syn, flags=0x12, tcp_options=b"\x02\x04" + struct.pack("!H", b_announces))
    tiny = replace(a, seq=a.seq + 1)
    sup = replace(tiny, seq=tiny.seq + 1, payload=3000, flags=ACK | PSH)
    res = replay_frames(_frames([a_syn, b_syn, tiny, sup]), ReplayConfig(kernels=(K_5_12,), resegment="auto"))
    assert (res.input.resegmented_frames, res.input.segments_created) == (1, segments)


@pytest.mark.parametrize(
    ("cfg", "count"),
    [
        # --resegment 20: below the 48 bytes a segment without TCP options carries at least (TCP_MIN_SND_MSS)
        ({"resegment": 20}, 2),
        # auto at --mtu 130: 130 - 90 header bytes leave 40 < 48
        ({"resegment": "auto", "mtu": 130}, 2),
    ],
)
def test_frames_kept_unsplit_are_said_with_why(cfg, count):
    """A super-frame the split refuses is replayed as captured; the input notes say how many and why, as JSON
    input.oversize_not_split counts them (breaker's finding: only the count in the input line showed it)."""
    sp = FrameSpec(timestamps=False, payload=3000)
    res = replay_frames(_frames([sp, replace(sp, seq=sp.seq + 3000)]), ReplayConfig(kernels=(K_5_12,), **cfg))
    assert res.input.oversize_not_split == {"mss_below_tcp_min_snd_mss": count}
    mtu = cfg.get("mtu", 1500)
    assert (
        f"{count} frames larger than --mtu {mtu} were replayed as captured, not split: {count} because the MSS would "
        "make segments smaller than a Linux sender ever does (TCP_MIN_SND_MSS 48 bytes with the TCP options: 36 "
        "payload bytes with timestamps, 48 without) (mss_below_tcp_min_snd_mss)"
    ) in res.input.notes


@pytest.mark.parametrize(
    ("options", "want"),
    [
        (b"\x02\x04\x03\xe8", 1000),
        (b"\x02\x04\x03\xe8\x02\x04\x05\x78", 1400),  # a later MSS option replaces an earlier one (mss_clamp)
        (b"\x02\x04\x00\x00", None),  # an MSS of 0 is ignored
        (b"\x02\x04\x00\x00\x01\x01\x01\x01", None),
        (
            b"\x02\x04\x03\xe8\x05\x01\x00\x00",
            1000,
        ),  # a length below 2 stops the parse; what came before stands
        (b"\x02\x04\x03\xe8\x05\x09\x00\x00", 1000),  # so does an option past the end
        (b"\x00\x00\x02\x04\x03\xe8\x00\x00", None),  # EOL ends the list
        (b"\x01\x01\x02\x04\x03\xe8\x00\x00", 1000),  # NOPs are one byte
        (b"\x02\x03\x03\xe8", None),  # length 3 is no MSS option
    ],
)
def test_tcp_mss_option_parses_as_tcp_parse_options(options, want):
    """net/ipv4/tcp_input.c tcp_parse_options on a SYN: the MSS the peer will be held to (breaker's finding: the
    first MSS option was taken, and a malformed option after it discarded it)."""
    from gro_replay.packet.headers import tcp_mss_option

    assert tcp_mss_option(options, 0, len(options)) == want
