"""The kernel backend sees plain (not tunnelled) TCP merged on the physical device too.

The running kernel's trace gives only each delivered skb's length (net:netif_receive_skb); the backend matches it
to the frames it carries by their lengths (oracle/match.py ``match_deliveries``: the first frame's L3 length plus
the others' TCP payload). It used to take the payload of tunnelled TCP only, so a merged plain TCP skb matched no run
of frames: 17 frames of one plain flow, which the running 6.18 kernel delivered as one skb of 23,840 bytes, read
"1 skb of 1 segment" with the flow "(unmatched)" (breaker's finding, session 22). ``validate`` compares lengths and
agreed all the same.

Lengths: ``skb->len`` at the phys device's netif_receive_skb is from the IP header on (eth_type_trans pulled the
Ethernet header); TCP header 20 bytes (no options), 1400 payload bytes per frame. Measured on the running kernel
(6.18.44, kernel-oracle.md's recipe, budget polls of 64): 17 plain IPv4 frames → one skb of 20 + 20 + 17 · 1400
= 23,840 bytes; IPv6 → 40 + 20 + 17 · 1400 = 23,860.
"""

from __future__ import annotations

import json
from dataclasses import replace

import dpkt
import pytest
from click.testing import CliRunner
from conftest import needs_kernel_backend

from gro_replay.capture.writer import PcapWriter
from gro_replay.cli import main
from gro_replay.oracle.match import match_deliveries
from gro_replay.packet.build import PSH, FrameSpec, build_flow, build_inner_frame, flow_specs
from gro_replay.packet.decode import Decoder

# outer addresses of the tunnelled flow = the plain flow's: the backend sends frames to one veth address
# (oracle/replay.py plan_frames), as a node's NIC receives both kinds
NODE = {"outer_dst_mac": "02:00:00:00:00:02", "outer_dst": "10.0.0.2"}
VXLAN = FrameSpec(timestamps=False, outer_csum="zero", **NODE)
OUTER = 14 + 20 + 8 + 8  # outer Ethernet, IPv4, UDP, VXLAN in front of the inner Ethernet frame


def _plain(
    ipv6: bool = False, sport: int = 40000, sizes: tuple[int, ...] = (1400,) * 17, psh_last: bool = False
):
    """One plain TCP flow to the node (payloads ``sizes``; PSH on the last with ``psh_last``): inner Ethernet
    frames (packet/build.py ``build_inner_frame``) whose addresses are the node's."""
    spec = FrameSpec(
        timestamps=False,
        inner_dst_mac=NODE["outer_dst_mac"],
        inner_ipv6=ipv6,
        inner_src="fd00::1" if ipv6 else "10.0.0.1",
        inner_dst="fd00::2" if ipv6 else NODE["outer_dst"],
        sport=sport,
    )
    specs = flow_specs(spec, list(sizes))
    if psh_last:
        specs[-1] = replace(specs[-1], flags=specs[-1].flags | PSH)
    return [build_inner_frame(x) for x in specs]


def _udp(ip_len: int) -> bytes:
    """A plain UDP datagram to the node whose IP packet is ``ip_len`` bytes (no socket: never merged)."""
    udp = dpkt.udp.UDP(sport=5000, dport=6000, data=b"\x00" * (ip_len - 28))
    udp.ulen = len(udp)
    ip = dpkt.ip.IP(src=bytes([10, 0, 0, 1]), dst=bytes([10, 0, 0, 2]), p=17, ttl=64, data=udp)
    ip.len = len(ip)
    mac = bytes.fromhex(NODE["outer_dst_mac"].replace(":", ""))
    return bytes(dpkt.ethernet.Ethernet(src=b"\x02" + b"\x00" * 4 + b"\x01", dst=mac, type=0x0800, data=ip))


def _write(path, frames: list[bytes]) -> str:
    with PcapWriter(str(path)) as w:
        for i, f in enumerate(frames):
            w.write(1_614_373_368_000_000_000 + i * 1000, f)
    return str(path)


def _decoded(frames: list[bytes]) -> list[tuple]:
    """The replay's decoded tuples (ts, frame, vlan, flow id, …, index) of ``frames``, as load_capture makes them."""
    from gro_replay.sim import ReplayConfig, Replayer

    rep = Replayer(ReplayConfig(vxlan_ports=(4789,)))
    return list(rep.decoded((i * 1000, f, len(f), 1) for i, f in enumerate(frames)))  # DLT_EN10MB


# runs of different flows of equal lengths (breaker's findings, session 23), IPv4 and TCP headers of 20 bytes each:
# a UDP datagram of 240 bytes = two TCP segments of 100 (140 + 100); flow B's 4 segments of 700 (740 + 3 · 700) =
# flow A's first 2 of 1400 (1440 + 1400). The running 6.18 kernel delivered, budget polls of 64: the UDP datagram
# (GRO_NORMAL, at once) before the TCP flow's one skb of 4 (440), and flow B's skb (PSH flushes it) before flow A's
# (at the poll's end, 5640); validate agrees with the simulator on both
STEAL = [*_plain(sizes=(100,) * 4), _udp(240)]
SWAP = [*_plain(sizes=(1400,) * 4), *_plain(sport=40001, sizes=(700,) * 4, psh_last=True)]


@pytest.mark.parametrize(("ipv6", "length"), [(False, 23_840), (True, 23_860)])
def test_a_merged_plain_tcp_skb_matches_its_17_frames(ipv6, length):
    # no kernel needed: the match is the rule (first frame's IP length 1440 / 1460, then 16 · 1400)
    frames = _decoded(_plain(ipv6))
    ports = Decoder((4789,), (6081,)).tunnel_ports
    ((idx, flow),) = match_deliveries([length], frames, "phys", ports)
    assert (idx, flow) == (list(range(17)), frames[0][3])


def test_plain_and_tunnelled_flows_each_match_their_own_skb():
    # interleaved one by one, each flow merged whole: the VXLAN skb is 50 bytes longer (outer IPv4, UDP, VXLAN,
    # inner Ethernet: 20 + 8 + 8 + 14) than the plain one, 23,890 against 23,840
    tunnelled = build_flow(VXLAN, [1400] * 17)
    frames = _decoded([f for pair in zip(_plain(), tunnelled, strict=True) for f in pair])
    ports = Decoder((4789,), (6081,)).tunnel_ports
    (vx, vx_flow), (plain, plain_flow) = match_deliveries([23_890, 23_840], frames, "phys", ports)
    assert vx == list(range(1, 34, 2)) and plain == list(range(0, 34, 2))
    assert vx_flow != plain_flow


@pytest.mark.parametrize(
    ("frames", "lengths", "runs"),
    [(STEAL, [240, 440], [[4], [0, 1, 2, 3]]), (SWAP, [2840, 5640], [[4, 5, 6, 7], [0, 1, 2, 3]])],
    ids=["udp-datagram-and-tcp-run", "psh-flushed-flow-first"],
)
def test_a_run_of_another_flow_of_equal_length_does_not_take_the_delivery(frames, lengths, runs):
    # the oldest flow's run fits the first delivery, and then nothing fits the second: the match backs off
    decoded = _decoded(frames)
    ports = Decoder((4789,), (6081,)).tunnel_ports
    assert [idx for idx, _ in match_deliveries(lengths, decoded, "phys", ports)] == runs


def test_a_frame_without_payload_or_not_tcp_goes_up_alone():
    # the TCP flow's 140 + 0 + 100 would be the UDP datagram's 240, but an ACK (no payload) joins no run
    # (tcp_gro_receive flushes it at once), so the first delivery is the datagram's, sent last
    decoded = _decoded([*_plain(sizes=(100, 0, 100)), _udp(240)])
    ports = Decoder((4789,), (6081,)).tunnel_ports
    got = match_deliveries([240, 140, 40, 140], decoded, "phys", ports)
    assert [idx for idx, _ in got] == [[3], [0], [1], [2]]
    # no assignment: the oldest-first one, the delivery no run fits unmatched
    assert match_deliveries([999, 240], decoded, "phys", ports)[0] == ([], -1)


def _kernel_json(path: str) -> dict:
    r = CliRunner().invoke(main, ["kernel", path, "--format", "json"], prog_name="gro-replay")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


@needs_kernel_backend
@pytest.mark.parametrize(("ipv6", "length"), [(False, 23_840), (True, 23_860)])
def test_kernel_backend_reports_the_running_kernels_plain_tcp_merge(tmp_path, ipv6, length):
    doc = _kernel_json(_write(tmp_path / "plain.pcap", _plain(ipv6)))
    (k,) = doc["kernels"]
    phys = k["stages"]["phys"]
    assert (phys["skbs_delivered"], phys["bytes"]) == (1, length)  # measured: the kernel's one delivery
    assert (phys["aggregates"], phys["segs_per_skb_hist"]) == (1, {"17": 1})
    (flow,) = k["flows"]
    assert flow["class"] == "not_tunnel" and (flow["phys"]["skbs"], flow["phys"]["segments"]) == (1, 17)


@needs_kernel_backend
def test_kernel_backend_says_which_flow_each_skb_of_a_mixed_capture_carries(tmp_path):
    tunnelled = build_flow(VXLAN, [1400] * 17)
    frames = [f for pair in zip(_plain(), tunnelled, strict=True) for f in pair]
    doc = _kernel_json(_write(tmp_path / "mixed.pcap", frames))
    (k,) = doc["kernels"]
    by_class = {f["class"]: (f["phys"]["skbs"], f["phys"]["segments"]) for f in k["flows"]}
    # 6.18 merges the zero-checksum VXLAN flow on the phys device (89e5c58fc1e2) and the plain one alike
    assert by_class == {"not_tunnel": (1, 17), "tunnel_tcp": (1, 17)}
    assert k["stages"]["phys"]["segs_per_skb_hist"] == {"17": 2}
    assert "(unmatched)" not in json.dumps(doc)


@needs_kernel_backend
@pytest.mark.parametrize("frames", [STEAL, SWAP], ids=["udp-datagram-and-tcp-run", "psh-flushed-flow-first"])
def test_kernel_backend_gives_each_flow_its_own_skb(tmp_path, frames):
    doc = _kernel_json(_write(tmp_path / "c.pcap", frames))
    (k,) = doc["kernels"]
    flows = sorted((f["phys"]["skbs"], f["phys"]["segments"]) for f in k["flows"])
    assert flows == ([(1, 1), (1, 4)] if frames is STEAL else [(1, 4), (1, 4)])
    assert "(unmatched)" not in json.dumps(doc)
