"""One reading of "a segment without payload", for the simulator and the kernel backend.

tcp_gro_receive (net/ipv4/tcp_offload.c) merges no TCP segment without payload, in any kernel: ``flush |= (len -
1) >= mss`` (0 - 1 read unsigned) with a held packet of its flow, ``flush = len < mss`` (mss 1) at out_check_final
without one. A flow none of whose frames carries TCP payload therefore goes up one by one whatever else stops GRO
first. Before, the simulator marked an skb without payload inside its tcp_gro_receive, so the frames GRO stopped
earlier were never so marked — an inner IPv4 header with options (inet_gro_receive, net/ipv4/af_inet.c: ``if
(*(u8 *)iph != 0x45) goto out``), a bad inner IPv4 header checksum (``if (unlikely(ip_fast_csum((u8 *)iph, 5)))
goto out``), the pre-fix udp_gro_receive gate (a zero outer UDP checksum under CHECKSUM_NONE, before 89e5c58fc1e2)
— while the kernel backend (validate.py) read it from the frames' lengths, and fell back to the frame's length
behind an inner IPv6 extension header. An ACK flow with inner IPv4 options read "does not merge" in the replay and
"carry no payload" in ``gro-replay kernel``. Now the driver step reads it once per frame
(``packet.headers.tcp_payload_len``, sim/driver.py), and validate.py reads it with the same function.

No root: the running kernel's deliveries are given as an ``OracleResult`` whose lengths follow from how the capture
is built and the kernel's rules (tests/test_kernel_no_payload.py, whose capture and deliveries these vary).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from test_kernel_no_payload import (
    GRO_ON,
    NEVER,
    NO_PAYLOAD,
    ONE_CARRIES,
    PHYS_ELIDED,
    _config,
    _empty_by_port,
    fake_oracle,
)
from test_padding_and_trailers import _inner_padded

from gro_replay.capture.writer import PcapWriter
from gro_replay.kernel import reasons as R
from gro_replay.kernel.model import K_6_18, PROFILES
from gro_replay.packet.build import FrameSpec, build_frame, flow_specs
from gro_replay.packet.csum import ip_fast_csum
from gro_replay.packet.headers import tcp_payload_len
from gro_replay.report.verdict import REASONS_NOT_OBSERVED
from gro_replay.report.verdict.core import verdict_of
from gro_replay.sim import replay_capture
from gro_replay.validate import kernel_result, load_capture

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


# -- the same flow classification in both backends ------------------------------------------------------------------


def _capture(path: Path, ack_kw: dict, post=None, outer_csum: str = "zero") -> Path:
    """tests/test_kernel_no_payload.py ``own_acks_capture`` with the 3 ACKs (inner port 40001) built with
    ``ack_kw`` and rewritten by ``post``: D1 A1 D2 A2 D3 A3 D4 G1 G2, 1 µs apart, outer checksums ``outer_csum``."""
    spec = FrameSpec(outer_csum=outer_csum)
    data = flow_specs(spec, [1398] * 4)
    ack = replace(spec, sport=40001, udp_sport=49153, payload=0, seq=5000, **ack_kw)
    acks = [replace(ack, ack=7000 + 1398 * (k + 1), ip_id=k) for k in range(3)]
    gap = replace(spec, sport=40002, udp_sport=49154, seq=9000, payload=1000)
    order = [data[0], acks[0], data[1], acks[1], data[2], acks[2], data[3], gap, replace(gap, seq=11000)]
    with PcapWriter(str(path)) as w:
        for i, s in enumerate(order):
            f = build_frame(s)
            w.write(1_614_373_368_000_000_000 + i * 1000, post(f) if post and i in (1, 3, 5) else f)
    return path


def _acks_longer(lengths: dict[str, list[int]], extra: int) -> dict[str, list[int]]:
    """``lengths`` with the ACK skbs ``extra`` bytes longer: the first 3 (GRO_ON: each ACK goes up at once at
    both devices, before anything held is completed); in PHYS_ELIDED's phys order every other of the first 6."""
    out = {}
    for stage, ls in lengths.items():
        if lengths is PHYS_ELIDED and stage == "phys":
            out[stage] = [n + extra if i in (1, 3, 5) else n for i, n in enumerate(ls)]
        else:
            out[stage] = [n + extra if i < 3 else n for i, n in enumerate(ls)]
    return out


#: (ACK variation, what it adds to each ACK's inner length, the simulator's per-skb end reason of each ACK at the
#: phys device): the end reasons are kernel events and stay as they are; only the flow's classification moves
CASES = {
    # inet_gro_receive: version/IHL byte not 0x45 → out (flushed before tcp_gro_receive)
    "inner IPv4 options": ({"ip_options": b"\x01" * 4}, None, 4, "inet_gro_receive:inner_not_0x45"),
    # inet_gro_receive: ip_fast_csum(iph, 5) != 0 → out
    "bad inner IPv4 checksum": ({"ip_csum": "bad"}, None, 0, "inet_gro_receive:inner_ip_fast_csum"),
    # ipv6_gro_receive: payload_len differs from the bytes present → flush, tcp_gro_receive still called
    # (inner IPv6 40 - 20 + destination options 8 + trailer 4 = 32 bytes more)
    "inner IPv6 extension header and trailer": (
        {"inner_ipv6": True, "ipv6_ext": [(60, b"")]},
        _trailer,
        32,
        "ipv6_gro_receive:inner_payload_len",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_an_ack_flow_stopped_before_tcp_gro_receive_carries_no_payload_in_both_backends(tmp_path, case):
    # 6.18 (the fix in: the gate passes the zero-checksum frames). The ACKs go up one by one at both devices in
    # the replay (each flushed at its inner header, or len 0 < mss 1) and in the kernel (GRO_ON, each ACK longer by
    # what its variation adds). Before, the replay counted the first two cases' ACKs among the flows 6.18 "does
    # not merge" (2 flows, the reasons of the ACKs listed there) and the kernel backend said "carry no payload";
    # in the third the kernel backend counted the trailer as payload. Now both say the ACK flow apart and count
    # only the gapped flow as not merged
    ack_kw, post, extra, reason = CASES[case]
    path = _capture(tmp_path / "c.pcap", ack_kw, post)
    sim = replay_capture(str(path), replace(_config(), kernels=(K_6_18,)))
    cfg = _config()
    kern = kernel_result(load_capture(str(path), cfg), fake_oracle(_acks_longer(GRO_ON, extra), 9), cfg)
    expected = {
        40000: {"phys": 0, "tunnel": 0},
        40001: {"phys": 3, "tunnel": 3},
        40002: {"phys": 0, "tunnel": 0},
    }
    assert _empty_by_port(sim) == expected
    assert _empty_by_port(kern) == expected
    (k,) = sim.kernels
    ack_flow = next(fid for fid in k.flows if sim.flows[fid].inner_sport == 40001)
    assert dict(k.flows[ack_flow].reasons["phys"]) == {reason: 3}  # the kernel event, unchanged
    words = R.DESCRIPTIONS[reason]  # "<the outer form's words> (inner header)"
    sim_text, kern_text = verdict_of(sim).text, verdict_of(kern).text
    assert sim_text.endswith(f" {ONE_CARRIES} {NO_PAYLOAD}{words} [{reason}] ×3{NEVER}"), sim_text
    assert kern_text.endswith(f" {ONE_CARRIES} {NO_PAYLOAD}{REASONS_NOT_OBSERVED}{NEVER}"), kern_text
    for text in (sim_text, kern_text):
        assert "does not merge 1 tunnelled TCP flow at the phys device" in text  # the gapped flow only


def test_an_ack_flow_with_an_inner_vlan_tag_is_read_alike_in_both_backends(tmp_path):
    # the decoder reads the inner 802.1Q tag (kernel/vlan_core.py: vlan_gro_receive pulls it and calls
    # inet_gro_receive), so the ACK flow (inner source port 40001) is a tunnelled TCP flow in both backends, and
    # its 3 skbs carry no payload at both devices in both: each ACK goes up at once (tcp_gro_receive: len 0), 4
    # bytes longer than an untagged one (GRO_ON). The verdict says so in both, beside the gapped flow it does not
    # merge
    path = _capture(tmp_path / "c.pcap", {}, inner_vlan)
    sim = replay_capture(str(path), replace(_config(), kernels=(K_6_18,)))
    cfg = _config()
    kern = kernel_result(load_capture(str(path), cfg), fake_oracle(_acks_longer(GRO_ON, 4), 9), cfg)
    expected = {
        40000: {"phys": 0, "tunnel": 0},
        40001: {"phys": 3, "tunnel": 3},
        40002: {"phys": 0, "tunnel": 0},
    }
    assert _empty_by_port(sim) == expected
    assert _empty_by_port(kern) == expected
    for result in (sim, kern):
        text = verdict_of(result).text
        assert f"{ONE_CARRIES} {NO_PAYLOAD}" in text
        assert "does not merge 1 tunnelled TCP flow at the phys device" in text


def _facts(result, port: int):
    """The ``KernelFacts`` of the flow of inner source port ``port`` in ``result``'s verdict (its one kernel)."""
    v = verdict_of(result)
    (fv,) = [f for f in v.flows if f.key.inner_sport == port]
    (k,) = fv.kernels
    return k


@pytest.mark.parametrize("ack_kw", [{}, {"ip_options": b"\x01" * 4}], ids=["plain", "inner IPv4 options"])
def test_a_zero_checksum_ack_flow_before_the_fix_carries_no_payload_in_both_backends(tmp_path, ack_kw):
    # upstream 5.10 (no 89e5c58fc1e2), outer UDP checksum 0, CHECKSUM_NONE: udp_gro_receive refuses every frame at
    # the phys device (gro-spec §4.4), before tcp_gro_receive, so the ACKs were not counted as without payload
    # there in the replay (0 phys skbs), while the kernel backend counted 3. Now both count 3 at each device (the
    # kernel: PHYS_ELIDED's deliveries, every frame alone at the phys device in capture order), and the flow's
    # facts say "without payload" in both. The replay's refusal sentence stays true: the gate refuses the 3 ACKs
    # at no cost, since tcp_gro_receive merges none of them with the fix either. With inner IPv4 options the fixed
    # kernel stops them at inet_gro_receive: before, the sentence counted them with the gapped flow among "2
    # flows that a kernel with the fix does not merge further either, 5 frames", listing the options as their
    # reason; now they are the flow without payload there too
    path = _capture(tmp_path / "c.pcap", ack_kw)
    extra = len(ack_kw.get("ip_options", b""))
    sim = replay_capture(str(path), replace(_config(), kernels=(PROFILES["5.10"],)))
    cfg = _config()
    oracle = replace(fake_oracle(_acks_longer(PHYS_ELIDED, extra), 9), kernel_release="5.10.0")
    kern = kernel_result(load_capture(str(path), cfg), oracle, cfg)
    assert _empty_by_port(sim)[40001] == _empty_by_port(kern)[40001] == {"phys": 3, "tunnel": 3}
    (k,) = sim.kernels
    ack_flow = next(fid for fid in k.flows if sim.flows[fid].inner_sport == 40001)
    assert dict(k.flows[ack_flow].reasons["phys"]) == {
        R.UDP_GATE_ZERO_CSUM: 3
    }  # the gate's refusals, unchanged
    assert _facts(sim, 40001).without_payload and _facts(kern, 40001).without_payload
    assert not _facts(sim, 40002).without_payload and not _facts(kern, 40002).without_payload
    text = verdict_of(sim).text
    assert (
        "at no cost to aggregation: 1 flow that the fix alone merges no further, 2 frames"
    ) in text  # the gapped flow
    assert (
        "1 flow without payload (ACKs, and SYN, FIN or RST without data), 3 frames (tcp_gro_receive merges no "
        "segment without payload, in any kernel)"
    ) in text
    assert "inner_not_0x45" not in text  # no flow's refusal is explained by the fixed kernel's options flush
