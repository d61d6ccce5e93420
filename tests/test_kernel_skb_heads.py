"""The kernel backend knows the first frame each delivered skb carries by its address, not only by lengths.

The trace names every skb entering GRO (``net:napi_gro_receive_entry``, net/core/gro.c ``napi_gro_receive``) and
every skb delivered (``net:netif_receive_skb``) by its address. GRO delivers the first skb of a run, the others
merged into it (``dev_gro_receive`` / ``skb_gro_receive``), and decapsulation hands that same skb to the tunnel
device (``gro_cells_receive``): a phys delivery carries the frame whose entry last had its address, a tunnel
delivery the first frame of the phys delivery that last had its address (oracle/replay.py ``_Run._heads``). The
lengths then only say how many frames follow it (oracle/match.py ``match_deliveries``).

Before, the match was inferred from lengths alone (fidelity helper's findings, session 27): a bounded search that
ran out on three round-robin flows whose singles and segments have equal lengths and then matched the oldest frame
first, so 8 UDP datagrams took the TCP flows' first frames, and the report said the running kernel "does not
merge" flows it merged, SUMMARY ``phys_aggregates=0`` where the trace shows 2; and on two flows of equal lengths
(A, B, A, B, B's outer UDP checksum wrong) both assignments fit and the wrong one gave B's drops to A. Then a
flow's frames were taken to go up in send order, which they do not where GRO flushes a segment at once and holds
the earlier ones, nor at the tunnel device where some were dropped on the way; and a frame's length at the phys
device left out the bytes past its datagram, which its skb->len counts (second helper's and breaker's findings).
"""

from __future__ import annotations

import json
from dataclasses import replace
from types import SimpleNamespace

from click.testing import CliRunner
from conftest import needs_kernel_backend
from test_kernel_plain_tcp import VXLAN, _decoded, _udp, _write

from gro_replay.cli import main
from gro_replay.oracle.match import frame_lengths, match_deliveries
from gro_replay.oracle.replay import _Run
from gro_replay.oracle.tracefs import TraceEvent
from gro_replay.packet.build import build_flow, build_frame, flow_specs
from gro_replay.packet.decode import Decoder

PORTS = Decoder((4789,), (6081,)).tunnel_ports


def _round_robin(*flows: list[bytes]) -> list[bytes]:
    return [f for group in zip(*flows, strict=True) for f in group]


def _three_flows() -> list[bytes]:
    """Round robin: tunnelled TCP flow A (8 segments of 1,400 bytes), 8 plain UDP datagrams of A's outer IP length
    (never merged: no socket, no GRO handler takes them), tunnelled TCP flow B (another VNI)."""
    a = build_flow(VXLAN, [1400] * 8)
    b = build_flow(replace(VXLAN, vni=101), [1400] * 8)
    outer = (a[0][16] << 8) | a[0][17]
    return _round_robin(a, [_udp(outer)] * 8, b)


def _bad_second_flow() -> list[bytes]:
    """A, B, A, B: two tunnelled TCP flows of 2 segments of 1,400 bytes each, B's outer UDP checksum wrong."""
    a = build_flow(VXLAN, [1400] * 2)
    b = build_flow(replace(VXLAN, udp_sport=37634, outer_csum="bad"), [1400] * 2)
    return _round_robin(a, b)


def test_the_first_frame_decides_which_flow_a_delivery_is():
    # the running kernel's deliveries of _three_flows (trace of session 27): the 8 datagrams at once, then A's and
    # B's 8 segments each in one skb; by lengths alone a datagram fits A's first frame as well, by address not
    decoded = _decoded(_three_flows())
    single = frame_lengths(decoded[0][1], decoded[0][6], PORTS)[0]
    merged = single + 7 * 1400
    lengths = [single] * 8 + [merged, merged]
    heads = [3 * k + 1 for k in range(8)] + [0, 2]  # positions in the frames given
    got = match_deliveries(lengths, decoded, "phys", PORTS, heads)
    assert [idx for idx, _ in got] == [[3 * k + 1] for k in range(8)] + [
        list(range(0, 24, 3)),
        list(range(2, 24, 3)),
    ]


def test_two_flows_of_equal_lengths_are_told_apart_by_their_first_frames():
    # the running kernel delivered B's two frames alone (udp4_gro_receive refuses a checksum that does not verify)
    # and A's as one skb: lengths fit A1, A2 alone and B merged as well, which the search took
    decoded = _decoded(_bad_second_flow())
    single = frame_lengths(decoded[0][1], decoded[0][6], PORTS)[0]
    lengths = [single, single, single + 1400]
    assert [idx for idx, _ in match_deliveries(lengths, decoded, "phys", PORTS)] == [[0], [2], [1, 3]]
    heads = [1, 3, 0]
    assert [idx for idx, _ in match_deliveries(lengths, decoded, "phys", PORTS, heads)] == [[1], [3], [0, 2]]


def _heads(events: list[TraceEvent], sent: int) -> dict[int, int]:
    run = object.__new__(_Run)
    run.devices = {"g-p": "phys", "g-vx": "tunnel"}
    run.plan = SimpleNamespace(sent=list(range(sent)))
    return run._heads(events)


def test_segments_split_from_one_captured_frame_are_told_apart():
    """The segments a super-frame is split into before it is sent (--resegment, --mtu) share its capture index
    (``Frame.index``): a delivery's first frame is its position among the frames sent, not that index (fidelity
    helper's finding: each delivery was matched from the super-frame's last segment, so on split captures the
    lengths never added up, flows lost segments to "(unmatched)" and frames the tunnel device delivered were
    called lost). Two super-frames of 3 segments each, each delivered as one skb at the phys device."""
    a = _decoded(build_flow(VXLAN, [1400] * 3) + _flows([1400] * 3)[1])
    split = [f._replace(index=0 if k < 3 else 1) for k, f in enumerate(a)]
    single = frame_lengths(a[0][1], a[0][6], PORTS)[0]
    got = match_deliveries([single + 2 * 1400] * 2, split, "phys", PORTS, [0, 3])
    assert got == [([0, 0, 0], a[0][3]), ([1, 1, 1], a[3][3])]


def test_heads_follow_the_addresses_gro_keeps():
    """Frames 0..3 enter the phys device's GRO as skbs a, b, b, c: frame 1 is merged into frame 0's held skb a and
    its skb b freed, which frame 2 then reuses (its last entry names it). The phys device delivers a (frames 0, 1),
    b (frame 2) and c (frame 3); the tunnel device delivers a (the phys skbs a and b merged into it) and c."""
    e = [
        TraceEvent("entry", 0.0, "g-p", 1500, "a"),
        TraceEvent("entry", 0.1, "g-p", 1500, "b"),  # merged into a, freed
        TraceEvent("entry", 0.2, "g-p", 1500, "b"),  # frame 2 in the freed skb
        TraceEvent("receive", 0.3, "g-p", 2900, "a"),
        TraceEvent("receive", 0.4, "g-p", 1500, "b"),
        TraceEvent("entry", 0.5, "g-p", 1500, "c"),
        TraceEvent("poll", 0.55, "g-p", 4),
        TraceEvent("entry", 0.6, "g-vx", 2850, "a"),
        TraceEvent("entry", 0.7, "g-vx", 1450, "b"),
        TraceEvent("receive", 0.8, "g-p", 1500, "c"),
        TraceEvent("receive", 0.9, "g-vx", 4250, "a"),
        TraceEvent("receive", 1.0, "g-vx", 1450, "c"),
    ]
    heads = _heads(e, 4)
    assert [heads.get(id(x)) for x in e if x.kind == "receive"] == [0, 2, 3, 0, 3]
    # a frame that never entered GRO (one entry fewer than frames sent): no address names a frame
    assert _heads(e, 5) == {}


@needs_kernel_backend
def test_running_kernel_reports_the_aggregates_it_made(tmp_path):
    # measured on the running kernel (6.18.44, budget polls of 64): 10 phys skbs for the 24 frames, A's 8 and B's
    # 8 segments in one skb each; the tunnel device delivers those 2 (the datagrams reach no tunnel device)
    path = _write(tmp_path / "three.pcap", _three_flows())
    r = CliRunner().invoke(main, ["kernel", path, "-q"])
    assert r.exit_code == 0, r.output
    (summary,) = [x for x in r.stdout.splitlines() if x.startswith("SUMMARY")]
    assert "phys_skbs=10 phys_aggregates=2 tunnel_skbs=2 tunnel_aggregates=2" in summary
    assert "does not merge" not in r.stdout and "matches no run" not in r.stdout


def _kernel_flows(tmp_path, frames: list[bytes], side: str = "inner") -> tuple[dict, dict]:
    """``gro-replay kernel --format json`` of ``frames``: the document, and per flow (by its ``side`` source port)
    (phys skbs, phys segments, tunnel skbs, tunnel segments, frames lost)."""
    path = _write(tmp_path / "c.pcap", frames)
    r = CliRunner().invoke(main, ["kernel", path, "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    (k,) = doc["kernels"]
    return doc, {
        f["key"][side]["sport"]: (
            f["phys"]["skbs"],
            f["phys"]["segments"],
            f["tunnel"]["skbs"],
            f["tunnel"]["segments"],
            # frames lost between the devices (the backend counts the queued ones as the simulator does)
            sum(n for outcome, n in f["stack_frames"].items() if outcome != "queued"),
        )
        for f in k["flows"]
    }


@needs_kernel_backend
def test_running_kernel_drops_are_the_bad_flows(tmp_path):
    # measured on the running kernel: B's frames go up alone and udp_rcv drops both (their outer checksums do not
    # verify, CHECKSUM_NONE); A's two frames go up as one skb at each device
    _, got = _kernel_flows(tmp_path, _bad_second_flow(), "outer")
    assert got == {49152: (1, 2, 1, 2, 0), 37634: (2, 2, 0, 0, 2)}


def _flows(sizes: list[int]) -> tuple[list[bytes], list[bytes]]:
    """Tunnelled TCP flows A and B (another outer source port and inner source port) of segments of ``sizes``."""
    return build_flow(VXLAN, sizes), build_flow(replace(VXLAN, udp_sport=49153, sport=40001), sizes)


def _bad_sixth() -> list[bytes]:
    """Round robin: tunnelled TCP flows A and B (another outer source port and inner source port), 12 segments of
    1,400 bytes each; A's sixth segment with a TCP checksum that does not verify."""
    specs = flow_specs(VXLAN, [1400] * 12)
    specs[5] = replace(specs[5], tcp_csum="bad")
    a = [build_frame(s) for s in specs]
    return _round_robin(a, _flows([1400] * 12)[1])


def _fcs_first_flow() -> list[bytes]:
    """Tunnelled TCP flow A, 6 segments of 1,400 bytes, each with 4 bytes after its outer datagram (a captured
    FCS), then flow B's 6 segments without."""
    a = [f + b"\0" * 4 for f in build_flow(VXLAN, [1400] * 6)]
    return a + _flows([1400] * 6)[1]


def _ce_dropped() -> list[bytes]:
    """Round robin: tunnelled TCP flows A and B, 20 segments of 1,400 bytes each, not ECN-capable; A's 6th, 7th and
    14th under an outer CE, which decapsulation drops (``vxlan_ecn_decapsulate``: CE outside a not-ECT packet)."""
    specs = flow_specs(VXLAN, [1400] * 20)
    for k in (5, 6, 13):
        specs[k] = replace(specs[k], outer_tos=3)
    a = [build_frame(s) for s in specs]
    return _round_robin(a, _flows([1400] * 20)[1])


def test_frames_dropped_before_the_tunnel_device_are_skipped():
    """Frames the phys device delivered and decapsulation dropped never reach the tunnel device: a tunnel delivery
    from a later first frame of their flow is matched from it (breaker's finding: every later tunnel skb of the
    flow went unmatched). A's tunnel skbs of ``_ce_dropped``: A1-A5, A8-A13, A15-A20."""
    decoded = _decoded(_ce_dropped())
    a = [x for x in decoded if x[3] == decoded[0][3]]
    lengths = [1440 + 4 * 1400, 1440 + 5 * 1400, 1440 + 5 * 1400]
    heads = [0, 7, 14]
    got = match_deliveries(lengths, a, "tunnel", PORTS, heads)
    assert [idx for idx, _ in got] == [
        [a[k][7] for k in ks] for ks in (range(5), range(7, 13), range(14, 20))
    ]


def test_a_segment_flushed_at_once_goes_up_before_the_ones_gro_holds():
    """net/ipv4/tcp_offload.c ``tcp4_gro_receive``: a segment whose checksum does not verify is flushed at once
    (``NAPI_GRO_CB(skb)->flush``) without flushing the packet GRO holds for its flow, so it goes up before the
    earlier segments of that flow (the running kernel's deliveries of ``_bad_sixth``, 6.18.44: A6 alone (1,490),
    A1-A5 (7,090, when A7's sequence gap flushes them), B1-B12 (16,890), A7-A12 (8,490)). A flow's frames are
    then not delivered in send order: the match follows each delivery's first frame."""
    decoded = _decoded(_bad_sixth())
    lengths = [1490, 1490 + 4 * 1400, 1490 + 11 * 1400, 1490 + 5 * 1400]
    heads = [10, 0, 1, 12]
    got = match_deliveries(lengths, decoded, "phys", PORTS, heads)
    assert [idx for idx, _ in got] == [[10], [0, 2, 4, 6, 8], list(range(1, 24, 2)), [12, 14, 16, 18, 20, 22]]


def test_bytes_past_the_outer_datagram_count_at_the_phys_device_only():
    """A frame with bytes after its outer datagram: its phys skb->len counts them (eth_type_trans pulls only the
    Ethernet header) and inet_gro_receive merges it with nothing (tot_len ≠ the skb's length), while ip_rcv trims
    them before decapsulation, so the tunnel device merges such frames (the running kernel, ``_fcs_first_flow``:
    6 skbs of 1,494 then B's 8,490 at eth0; A's 6 segments in one skb of 8,440 at vxlan0, B's likewise)."""
    decoded = _decoded(_fcs_first_flow())
    phys = match_deliveries([1494] * 6 + [8490], decoded, "phys", PORTS, list(range(7)))
    assert [idx for idx, _ in phys] == [[k] for k in range(6)] + [list(range(6, 12))]
    tunnel = match_deliveries([8440, 8440], decoded, "tunnel", PORTS, [6, 0])
    assert [idx for idx, _ in tunnel] == [list(range(6, 12)), list(range(6))]


@needs_kernel_backend
def test_running_kernel_out_of_order_trailers_and_drops_per_flow(tmp_path):
    # measured on the running kernel (6.18.44, budget polls of 64; the traces in the docstrings above): per flow,
    # (phys skbs, phys segments, tunnel skbs, tunnel segments, frames lost), with no skb unmatched
    for frames, want in (
        (_bad_sixth(), {40000: (3, 12, 3, 12, 0), 40001: (1, 12, 1, 12, 0)}),
        (_fcs_first_flow(), {40000: (6, 6, 1, 6, 0), 40001: (1, 6, 1, 6, 0)}),
        # A: 7,090 (A1-A5), 2,890 (A6-A7, merged under CE), 8,490 (A8-A13), 1,490 (A14), 8,490 (A15-A20) at
        # eth0; vxlan0 delivers A's 7,040, 8,440 and 8,440: A6, A7 and A14 lost
        (_ce_dropped(), {40000: (5, 20, 3, 17, 3), 40001: (1, 20, 1, 20, 0)}),
        # two flows of 4 super-frames of 4,000 bytes each, split into 3 segments at --mtu 1500 before they are sent:
        # each super-frame's 3 segments go up as one skb of 4,090 at eth0 and 4,040 at vxlan0
        (_round_robin(*_flows([4000] * 4)), {40000: (4, 12, 4, 12, 0), 40001: (4, 12, 4, 12, 0)}),
    ):
        doc, got = _kernel_flows(tmp_path, frames)
        assert got == want
        assert [n for n in doc["input"]["notes"] if "no run" in n] == []
        # the backend retires no flow: both flows live at the end (fidelity helper's finding: live_max 0)
        assert doc["kernels"][0]["flows_summary"]["live_max"] == 2


@needs_kernel_backend
def test_a_frame_named_first_by_a_later_delivery_is_in_no_earlier_run(tmp_path):
    """Three VXLAN frames of one flow (outer UDP checksum computed): A (seq S), B a retransmit of A (seq S), C (seq
    S+1300) with 4 bytes past its outer datagram. Measured on the running 6.18.44 kernel (fidelity35): the phys
    device sends C up at once, ahead of B, and the vxlan device merges A with C (2640 bytes, A's address) and
    delivers B alone (1340 bytes, B's address). The backend's run from A took the flow's next frame not yet
    delivered, B, so B's own delivery matched nothing and C read lost between the devices. A frame whose address
    names the start of a delivery is in no other delivery's run now (oracle/match.py ``_follow_heads``)."""
    spec = replace(VXLAN, outer_csum="computed", payload=1300, seq=1000)
    frames = [build_frame(replace(spec, outer_ip_id=i + 1)) for i in range(2)]
    frames.append(build_frame(replace(spec, seq=2300, outer_ip_id=3)) + bytes(4))
    r = CliRunner().invoke(main, ["kernel", _write(tmp_path / "c.pcap", frames), "--format", "json", "-q"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    (k,) = doc["kernels"]
    assert (k["stages"]["phys"]["skbs_delivered"], k["stages"]["tunnel"]["skbs_delivered"]) == (3, 2)
    assert k["stages"]["tunnel"]["segs_per_skb_max"] == 2
    assert k["stack"] == {"queued": 3} and doc["verdict"]["lost_flows"] == 0
    assert "(unmatched)" not in r.stdout
