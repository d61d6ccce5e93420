"""``--resegment auto`` and flow retirement: the MSS a split may take from a flow is what was known of that flow at the
super-frame's arrival, on the capture's clock — the same on the batch path and the reference path, for every poll
model (sim/polls.py: budget, gap, rx-usecs; the scheduled polls of several RX queues or gro_flush_timeout).

The rule (sim/ingest.py ``Ingest.flow_mss_at``): a flow that had ended by the frame's arrival (silent past
``--flow-idle-timeout``, or past ``--flow-close-timeout`` after FIN/RST: sim/flows.py ``silent_past``, conntrack's
timeouts) is not the frame's flow — the frame starts a new flow (as a new conntrack entry would), which has learned
nothing, so the split takes what fits ``--mtu`` (resegment.py ``Resegmenter.split``). A flow that had not ended gives
its largest wire segment so far (≥ ``TCP_MIN_SND_MSS``), else the MSS option of its peer's SYN (the other direction
of its TCP connection, while that flow has not ended), capped at what fits the MTU.
Whether the flow's retirement ran before the record was decoded (budget polls end before the next frame is decoded,
gap/rx-usecs polls after, the batch path a whole block later) must not matter.

Sizes (packet/build.py defaults): outer IPv4 20 + UDP 8 + VXLAN 8 + inner Ethernet 14 + inner IPv4 20 + TCP 20 with
NOP NOP timestamps 12 = 102 header bytes per segment's outer IP packet; the super-frame carries 1398 payload bytes
(outer IP 1500 > ``--mtu`` 1000). By the MTU: 1000 − 102 = 898 per segment, 1398 = 898 + 500 → 2 segments. By a
learned 600: 600 + 600 + 198 → 3. By the MSS option 500 of the peer's SYN: 500 + 500 + 398 → 3.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from conftest import without_engine

from gro_replay.packet.build import ACK, FIN, SYN, FrameSpec, build_frame, peer_spec
from gro_replay.report.document import document
from gro_replay.sim import PollModel, ReplayConfig, replay_capture

US = 1000
MS = 1_000_000
T0 = 1_700_000_000 * 10**9
A = FrameSpec(
    inner_src="10.244.1.1", inner_dst="10.244.2.1", sport=33000, udp_sport=40000, seq=1000, payload=600
)
B = replace(A, inner_src="10.244.1.2", inner_dst="10.244.2.2", sport=33001, udp_sport=40007)
#: flow A's super-frame after its 600-byte segment
SUPER = replace(A, seq=1600, payload=1398)
#: A's peer: the other direction of A's TCP connection (inner and outer addresses and ports swapped), whose SYN's MSS
#: option is what A's sender clamps its segments to (net/ipv4/tcp_input.c tcp_parse_options → rx_opt.mss_clamp)
A_PEER = peer_spec(A)
#: polls of 2 frames (budget: the first poll is [A's first frame, B's], ending before the super-frame is decoded)
WEIGHT = 2
POLLS = ["budget", "gap:3", "rx-usecs:16", "rx-usecs:5000"]
#: poll schedules only the reference path forms (sim/polls.py ``PollSchedule``)
SCHEDULED = [{"rx_queues": 2}, {"gro_flush_timeout_ns": 10 * US}]
BY_MTU, BY_600, BY_SYN_500 = 2, 3, 3


def _pcap(tmp_path, frames):
    from gro_replay.capture.writer import PcapWriter

    path = tmp_path / "c.pcap"
    with PcapWriter(path) as w:
        for ts, f in frames:
            w.write(ts, f)
    return str(path)


def _three(first: FrameSpec, at_ns: int) -> list[tuple[int, bytes]]:
    """Flow A's ``first`` frame at 0, flow B's segment 1 µs before ``at_ns``, A's super-frame at ``at_ns``."""
    return [(T0, build_frame(first)), (T0 + at_ns - US, build_frame(B)), (T0 + at_ns, build_frame(SUPER))]


def _cfg(poll: str, **kw) -> ReplayConfig:
    return ReplayConfig(
        resegment="auto",
        mtu=1000,
        poll=PollModel.parse(poll),
        weight=WEIGHT,
        flow_idle_timeout_ns=2 * MS,
        **kw,
    )


def _segments_on_both_paths(path: str, cfg: ReplayConfig) -> int:
    """``segments_created`` of the replay of ``path``, after checking that the batch path ran and gave the reference
    path's whole document."""
    a = replay_capture(path, cfg)
    b = replay_capture(path, replace(cfg, fast_path=False))
    assert a.batch is not None and b.batch is None
    da, db = (json.dumps(without_engine(document(r)), sort_keys=True, default=str) for r in (a, b))
    assert da == db
    assert a.input.resegmented_frames == 1
    return a.input.segments_created


@pytest.mark.parametrize("poll", POLLS)
def test_a_flow_idle_past_the_timeout_starts_afresh_without_its_mss(poll, tmp_path) -> None:
    # A silent 3 ms ≥ --flow-idle-timeout 2 ms when its super-frame arrives: the super-frame starts a new flow, which
    # has learned no MSS: split by the MTU (898 + 500), not by the 600 the ended flow sent
    path = _pcap(tmp_path, _three(A, 3 * MS + US))
    assert _segments_on_both_paths(path, _cfg(poll)) == BY_MTU


@pytest.mark.parametrize("poll", POLLS)
def test_a_live_flow_splits_with_its_largest_segment(poll, tmp_path) -> None:
    # A silent 1.001 ms < 2 ms: the same flow, whose largest wire segment (600 ≥ TCP_MIN_SND_MSS, below the MTU's
    # 898) is the MSS: 600 + 600 + 198
    path = _pcap(tmp_path, _three(A, MS + US))
    assert _segments_on_both_paths(path, _cfg(poll)) == BY_600


@pytest.mark.parametrize("poll", POLLS)
@pytest.mark.parametrize(("silent_ns", "want"), [(2 * MS - 1, BY_600), (2 * MS, BY_MTU)])
def test_the_idle_timeout_s_boundary(poll, silent_ns, want, tmp_path) -> None:
    # a flow has ended once its silence reaches the timeout (sim/flows.py silent_past: gap >= timeout)
    path = _pcap(tmp_path, _three(A, silent_ns))
    assert _segments_on_both_paths(path, _cfg(poll)) == want


@pytest.mark.parametrize("poll", POLLS)
@pytest.mark.parametrize(("silent_ns", "want"), [(MS // 2, BY_600), (3 * MS // 2, BY_MTU)])
def test_a_flow_closed_by_fin_starts_afresh_after_the_close_timeout(poll, silent_ns, want, tmp_path) -> None:
    # A's 600-byte segment carries FIN: with --flow-close-timeout 1 ms it has ended 1.5 ms later (not 0.5 ms later),
    # below the 2 ms idle timeout
    path = _pcap(tmp_path, _three(replace(A, flags=FIN | ACK), silent_ns))
    assert _segments_on_both_paths(path, _cfg(poll, flow_close_timeout_ns=MS)) == want


@pytest.mark.parametrize("poll", POLLS)
@pytest.mark.parametrize(("silent_ns", "want"), [(MS + US, BY_SYN_500), (3 * MS + US, BY_MTU)])
def test_an_ended_flow_s_syn_mss_option_is_forgotten_too(poll, silent_ns, want, tmp_path) -> None:
    # the first frame is A's peer's SYN-ACK announcing MSS 500 (tcp_parse_options), no data: while that flow is live
    # A's super-frame splits by it (500 + 500 + 398), once it has ended before the super-frame it does not
    syn = replace(A_PEER, flags=SYN | ACK, payload=0, tcp_options=b"\x02\x04\x01\xf4", timestamps=False)
    path = _pcap(tmp_path, _three(syn, silent_ns))
    assert _segments_on_both_paths(path, _cfg(poll)) == want


@pytest.mark.parametrize("poll", POLLS)
def test_the_batch_path_learns_a_syn_s_mss_option_without_retirement(poll, tmp_path) -> None:
    # --flow-timeout off: the batch path's own accounting of common frames (pollcache.py BatchReplay._account) reads
    # the peer's SYN MSS option 500 as the reference path does (500 + 500 + 398), not only the largest payload
    syn = replace(A_PEER, flags=SYN | ACK, payload=0, tcp_options=b"\x02\x04\x01\xf4", timestamps=False)
    path = _pcap(tmp_path, _three(syn, 3 * MS + US))
    assert _segments_on_both_paths(path, replace(_cfg(poll), flow_idle_timeout_ns=0)) == BY_SYN_500


@pytest.mark.parametrize("scheduled", SCHEDULED)
@pytest.mark.parametrize("poll", POLLS)
@pytest.mark.parametrize(("silent_ns", "want"), [(MS + US, BY_600), (3 * MS + US, BY_MTU)])
def test_scheduled_polls_follow_the_same_rule(poll, scheduled, silent_ns, want, tmp_path) -> None:
    # several RX queues or gro_flush_timeout: poll schedules per queue (frame by frame only), flows retired as records
    # are read but only once nothing of them is held — which must not change the flow a frame belongs to
    path = _pcap(tmp_path, _three(A, silent_ns))
    r = replay_capture(path, _cfg(poll, **scheduled))
    assert r.batch is None
    assert (r.input.resegmented_frames, r.input.segments_created) == (1, want)


@pytest.mark.parametrize("scheduled", [{}, *SCHEDULED])
@pytest.mark.parametrize("poll", POLLS)
@pytest.mark.parametrize(("selector", "frames"), [("id=0", 1), ("id=2", BY_MTU), ("sport=33000", 1 + BY_MTU)])
def test_flow_selects_the_new_flow_by_its_own_id(poll, scheduled, selector, frames, tmp_path) -> None:
    # the same rule for --flow: flow ids go in capture order (A's first frame 0, B 1, A's super-frame, a new flow
    # since A ended, 2, its 2 segments); the new flow is matched by its own id and key whether A was retired before
    # the super-frame was decoded (budget) or only found ended then (gap, rx-usecs, scheduled polls)
    path = _pcap(tmp_path, _three(A, 3 * MS + US))
    r = replay_capture(path, _cfg(poll, flow=selector, **scheduled))
    assert r.input.selected_frames == frames


def _mss(value: int) -> bytes:
    return b"\x02\x04" + value.to_bytes(2, "big")


@pytest.mark.parametrize("poll", POLLS)
def test_a_re_announced_mss_outlives_the_flow_that_first_announced_it(poll, tmp_path) -> None:
    # A's peer sends its SYN-ACK (MSS 500) on outer source port 40000, then again on 41000 (another outer flow of the
    # same connection), which stays live with an ACK; the first outer flow ends (silent 2 ms) and is retired, which
    # must not forget what the live one announced: A's 1398-byte super-frame splits by 500 (500 + 500 + 398 → 3) on
    # both paths (breaker's finding: the reference path split by the MTU)
    syn = replace(A_PEER, flags=SYN | ACK, payload=0, tcp_options=_mss(500), timestamps=False)
    again = replace(syn, udp_sport=41000)
    ack = replace(again, flags=ACK, tcp_options=None, seq=syn.seq + 1)
    frames = [
        (T0, build_frame(syn)),
        (T0 + MS, build_frame(again)),
        (T0 + 2 * MS, build_frame(replace(A, payload=10))),
        (T0 + 2 * MS + 500 * US, build_frame(ack)),
        (T0 + 3 * MS, build_frame(B)),
        (T0 + 3 * MS + 100 * US, build_frame(replace(B, seq=B.seq + 600))),
        (T0 + 3 * MS + 200 * US, build_frame(replace(SUPER, seq=1010))),
    ]
    assert _segments_on_both_paths(_pcap(tmp_path, frames), _cfg(poll)) == BY_SYN_500


@pytest.mark.parametrize("poll", POLLS)
def test_a_flow_that_starts_over_keeps_its_live_peer_s_mss(poll, tmp_path) -> None:
    # A's SYN (MSS 400) at 0 and nothing more from A until 3.4 ms: A has ended (2 ms idle) and its frame starts a
    # new flow, which has learned nothing of its own payloads; its peer, live (ACKs at 2.2 and 3.0 ms), announced
    # MSS 500: A's 2500-byte super-frame at --mtu 1000 splits by it, 5 × 500, on both paths (breaker's finding:
    # the batch path split by the MTU: 3)
    syn = replace(A, flags=SYN, payload=0, tcp_options=_mss(400), timestamps=False, seq=1000)
    peer_syn = replace(A_PEER, flags=SYN | ACK, payload=0, tcp_options=_mss(500), timestamps=False)
    ack = replace(peer_syn, flags=ACK, tcp_options=None, seq=peer_syn.seq + 1)
    data = replace(A, flags=ACK, seq=1001, payload=2500, timestamps=False)
    frames = [
        (T0, build_frame(syn)),
        (T0 + 300 * US, build_frame(peer_syn)),
        (T0 + 2200 * US, build_frame(ack)),
        (T0 + 3000 * US, build_frame(ack)),
        (T0 + 3400 * US, build_frame(data)),
    ]
    assert _segments_on_both_paths(_pcap(tmp_path, frames), _cfg(poll)) == 5
