"""The kernel backend says tunnelled TCP flows without payload apart, as the simulator does.

The running kernel's trace gives each delivered skb's device and length only (kernel-oracle.md), so the backend
(validate.kernel_result) knows no GRO control block; but it matches each delivery to the frames it carries, and
those frames' lengths say whether the skb carried TCP payload. tcp_gro_receive (net/ipv4/tcp_offload.c) merges no
segment without payload, in any kernel: with no held packet of its flow, out_check_final's ``flush = len < mss``
(mss 1) sends it up at once; with one, ``flush |= (len - 1) >= mss`` (0 - 1 read unsigned) completes the held
packet and the segment goes up on its own. So a flow all of whose phys skbs carried no payload goes up one by one
whatever else happens, and the verdict says it apart from the flows GRO does not merge for a reason of their own.

These tests need no root: the running kernel's deliveries are given as an ``OracleResult`` whose lengths follow
from how the capture is built and the kernel's rules (each step below). tests/test_validate.py replays the same
capture through the running kernel where the backend runs.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from gro_replay.capture.writer import PcapWriter
from gro_replay.kernel.model import K_6_18
from gro_replay.oracle.replay import KernelDelivery, OracleResult
from gro_replay.packet.build import FrameSpec, build_frame, flow_specs
from gro_replay.report.document import document
from gro_replay.report.verdict import REASONS_NOT_OBSERVED
from gro_replay.report.verdict.core import verdict_of
from gro_replay.sim import PollModel, ReplayConfig, replay_capture
from gro_replay.validate import kernel_result, load_capture

#: the sentence of the flows without payload (report/verdict/sentences.py _empty_note), after its count ("1
#: tunnelled TCP flow carries"), around its reason list
NO_PAYLOAD = "no payload (ACKs, and SYN, FIN or RST without data), whose segments go up one by one ("
#: "other" than the flow with payload the kernel does not merge, said before it (the gapped flow of
#: ``own_acks_capture``; newcomer34: whether it was among them could not be told)
ONE_CARRIES = "1 other tunnelled TCP flow carries"
NEVER = "): tcp_gro_receive merges no segment without payload, in any kernel."
#: the simulator's reason list for the 3 pure ACKs (kernel/tcp_offload.py: len_zero)
SIM_ACK_REASONS = "no payload (pure ACK) [tcp_gro_receive:len_zero] ×3"

#: outer IPv4 (20) + UDP (8) + VXLAN (8) + inner Ethernet (14) + inner IPv4 (20) + TCP with timestamps (32): the
#: bytes before the TCP payload of a frame from ``FrameSpec``'s defaults; the inner L3 length is 50 bytes less
HDR = 102
INNER = HDR - 50


def own_acks_capture(path: Path, outer_csum: str = "zero") -> Path:
    """Write 9 frames, 1 µs apart, all from one host to one other (one outer source and destination: what the
    kernel backend replays, oracle/replay.py plan_frames) and return ``path``:

    * a bulk flow (inner port 40000, outer UDP source port 49152): 4 contiguous segments of 1398 bytes;
    * the pure ACKs this host sends on another connection, whose data flows the other way (inner port 40001,
      outer UDP source port 49153): 3 segments without payload, each acknowledging 1398 bytes more;
    * a third connection (inner port 40002, outer UDP source port 49154): 2 segments of 1000 bytes with a
      sequence gap of 1000 bytes between them.

    In the order D1 A1 D2 A2 D3 A3 D4 G1 G2, outer UDP checksums ``outer_csum``.
    """
    spec = FrameSpec(outer_csum=outer_csum)
    data = flow_specs(spec, [1398] * 4)
    ack = replace(spec, sport=40001, udp_sport=49153, payload=0, seq=5000)
    acks = [replace(ack, ack=7000 + 1398 * (k + 1), ip_id=k) for k in range(3)]
    gap = replace(spec, sport=40002, udp_sport=49154, seq=9000, payload=1000)
    gapped = [gap, replace(gap, seq=gap.seq + 2000)]
    order = [data[0], acks[0], data[1], acks[1], data[2], acks[2], data[3], *gapped]
    with PcapWriter(str(path)) as w:
        for i, s in enumerate(order):
            w.write(1_614_373_368_000_000_000 + i * 1000, build_frame(s))
    return path


#: what a kernel with GRO on both devices delivers for ``own_acks_capture`` in one budget poll (the 9 frames are
#: fewer than the NAPI weight of 64). Phys device: each ACK at once (no held packet of its flow; len 0 < mss 1 at
#: out_check_final), G1 when G2 arrives (its sequence does not continue G1's: the held packet is completed), then
#: at the poll's end (napi_complete_done flushes GRO) the 4 bulk segments as one skb and G2 (these two in the order
#: of their GRO hash buckets, which the verdict does not read). Tunnel device's gro_cells: the same skbs
#: decapsulated, 50 bytes shorter; the ACKs go up at once again, the bulk aggregate at once (dev_gro_receive
#: flushes an skb with a frag_list), G1 when G2 arrives, G2 at the end.
GRO_ON = {
    "phys": [HDR] * 3 + [HDR + 1000, HDR + 4 * 1398, HDR + 1000],
    "tunnel": [INNER] * 3 + [INNER + 4 * 1398, INNER + 1000, INNER + 1000],
}
#: the same with GRO elided on the phys veth (generic XDP: ``--defer-to-tunnel``, netif_elide_gro): every frame
#: goes up alone there, in capture order; the tunnel device's gro_cells merge the bulk flow (4 segments) and send
#: each ACK up at once, G1 when G2 arrives, the aggregate and G2 at the end
PHYS_ELIDED = {
    "phys": [HDR + 1398, HDR] * 3 + [HDR + 1398, HDR + 1000, HDR + 1000],
    "tunnel": [INNER] * 3 + [INNER + 1000, INNER + 4 * 1398, INNER + 1000],
}


def fake_oracle(lengths: dict[str, list[int]], frames: int) -> OracleResult:
    """An ``OracleResult`` of a 6.18 kernel that delivered ``lengths`` per stage (phys veth ``g-p``, one vxlan
    device ``g-vx`` on port 4789), every one of ``frames`` frames sent."""
    deliveries = [
        KernelDelivery(role, "g-p" if role == "phys" else "g-vx", n, 0.001 * i)
        for role in ("phys", "tunnel")
        for i, n in enumerate(lengths[role])
    ]
    return OracleResult(
        deliveries=deliveries,
        polls=[("g-p", frames)],
        kernel_release="6.18.0",
        hz=250,
        frames_sent=frames,
        frames_not_replayable={},
        attempts=1,
        sent=list(range(frames)),
        devices={"g-p": "phys", "g-vx": "tunnel"},
        tunnel_ports={"g-vx": 4789},
    )


def _config(**kw) -> ReplayConfig:
    """The kernel backend's config (cli/kernel.py _prepare), CHECKSUM_NONE as its default."""
    return ReplayConfig(
        rx_csum="none", poll=PollModel("budget"), rss="none", vxlan_ports=(4789,), tunnel_metadata=True, **kw
    )


def _kernel(path: Path, lengths: dict[str, list[int]], **kw):
    cfg = _config(**kw)
    return kernel_result(load_capture(str(path), cfg), fake_oracle(lengths, 9), cfg)


def _empty_by_port(result) -> dict[int, dict[str, int]]:
    """``FlowStats.empty`` (skbs delivered without TCP payload, per stage) of each flow, by its inner source port."""
    (k,) = result.kernels
    return {result.flows[fid].inner_sport: dict(f.empty) for fid, f in k.flows.items()}


def test_kernel_backend_says_the_flow_without_payload_apart(tmp_path):
    """Of the 3 flows, the kernel's phys device merges the bulk flow (4 segments in one skb) and neither of the
    others: the gapped connection for its sequence gap, the ACK flow because tcp_gro_receive merges no segment
    without payload. The kernel backend used to say that it "does not merge 2 tunnelled TCP flows"; now it
    counts 1 there and says the ACK flow apart in the simulator's sentence, whose reason list reads "not
    observable" (the trace does not say which condition ended each skb: the simulator names len_zero) and whose
    rule, tcp_gro_receive's, holds in any kernel."""
    path = own_acks_capture(tmp_path / "acks.pcap")
    result = _kernel(path, GRO_ON)
    # the 3 ACKs, each in an skb of its own, carried no payload at either stage; nothing else did
    assert _empty_by_port(result) == {
        40000: {"phys": 0, "tunnel": 0},
        40001: {"phys": 3, "tunnel": 3},
        40002: {"phys": 0, "tunnel": 0},
    }
    text = verdict_of(result).text
    assert (
        f"does not merge 1 tunnelled TCP flow at the phys device; why its skbs ended: {REASONS_NOT_OBSERVED}."
        in text
    )
    note = f" {ONE_CARRIES} {NO_PAYLOAD}{REASONS_NOT_OBSERVED}{NEVER}"
    assert text.endswith(note)
    # the JSON document carries the same verdict (one computation); no count of the SUMMARY line or the verdict's
    # counts names flows not merged: no flow is affected, 3 are tunnelled
    doc = document(result, backend="kernel")
    assert doc["verdict"]["text"] == text
    assert (doc["verdict"]["affected_flows"], doc["verdict"]["tunnel_flows"]) == (0, 3)
    assert doc["summary"].endswith(" affected_flows=0")
    # the simulator, with the same kernel and polls, says the same with the reasons it records
    cfg = replace(_config(), kernels=(K_6_18,))
    sim = verdict_of(replay_capture(str(path), cfg)).text
    assert sim.endswith(f" {ONE_CARRIES} {NO_PAYLOAD}{SIM_ACK_REASONS}{NEVER}")
    # the gapped flow: G1 completed by G2 (seq_gap), G2 held to the poll's end (every skb's reason)
    # (equal counts in the order the kernel tests them: tcp_gro_receive's during the frame, napi_complete_done's
    # after the poll, kernel/reasons.py CHECK_ORDER)
    assert (
        "does not merge 1 tunnelled TCP flow at the phys device; why its skbs ended: TCP sequence does not continue"
        in sim
    )
    assert (
        "[tcp_gro_receive:seq_gap] ×1; poll ended below budget: napi_complete_done flushed GRO [napi_complete_done:flush] ×1"
        in sim
    )


def test_no_payload_is_counted_at_the_phys_device_and_where_gro_runs(tmp_path):
    """Every frame passes the phys device's dev_gro_receive, GRO elided there or not (include/linux/netdevice.h
    netif_elide_gro): with generic XDP on the phys veth (``--defer-to-tunnel``) every frame goes up alone and
    nothing reaches tcp_gro_receive, yet, as in the simulator, the 3 ACKs are counted as phys skbs without payload
    (the flows without payload are known in every mode: audit44), and the verdict says what it says with GRO off
    there: the fix changes nothing, the gate is never reached (tests/test_kernel_backend_verdict.py); at the
    tunnel device's gro_cells GRO runs and the 3 ACKs are counted too.
    With GRO off on the tunnel device (gro_cells_receive hands every skb to netif_rx) the phys device's count
    stays and the tunnel device counts none."""
    path = own_acks_capture(tmp_path / "acks.pcap")
    elided = _kernel(path, PHYS_ELIDED, phys_xdp_generic=True)
    assert _empty_by_port(elided)[40001] == {"phys": 3, "tunnel": 3}
    text = verdict_of(elided).text
    assert text.startswith(
        "The fix changes nothing with GRO elided on eth0 by a generic XDP program (the kernel backend's "
        "--defer-to-tunnel or --gro phys=off): dev_gro_receive passes "
        "every frame up unmerged (netif_elide_gro)"
    )
    # no kernel's unmerged flows are said before it: not an "other" flow (breaker45)
    alone = ONE_CARRIES.replace(" other", "")
    assert text.endswith(f" {alone} {NO_PAYLOAD}{REASONS_NOT_OBSERVED}{NEVER}")
    # GRO off at the tunnel device: it hands up the phys skbs as they are, 50 bytes shorter
    tunnel_off = {"phys": GRO_ON["phys"], "tunnel": [n - 50 for n in GRO_ON["phys"]]}
    result = _kernel(path, tunnel_off, gro={"phys": True, "tunnel": False})
    assert _empty_by_port(result)[40001] == {"phys": 3, "tunnel": 0}
    assert verdict_of(result).text.endswith(f" {ONE_CARRIES} {NO_PAYLOAD}{REASONS_NOT_OBSERVED}{NEVER}")
