"""Reason lists order equal counts by where the kernel tests them (kernel/reasons.py ``CHECK_ORDER``,
``check_rank``; report/verdict/words.py ``by_count``), not by the reasons' names: a frame's own condition before
the poll's flush of a held packet that nothing else ended, a stack drop by the receive path's order.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from gro_replay.kernel import drop_reasons as D
from gro_replay.kernel import reasons as R
from gro_replay.kernel.model import K_6_18
from gro_replay.packet.build import FrameSpec, build_frame, flow_specs
from gro_replay.report.explain import _reason_rows
from gro_replay.report.table import reason_lines
from gro_replay.report.verdict import reason_list
from gro_replay.report.verdict.words import by_count, drop_list
from gro_replay.sim import ReplayConfig, replay_frames


def test_every_named_end_reason_has_its_place_in_the_receive_path():
    """Every end reason the report describes (``DESCRIPTIONS``, the inner-header forms included) is placed by
    ``CHECK_ORDER``, each once; the poll's flushes (napi_poll, napi_complete_done: after the frames of the poll)
    come last, tcp_gro_receive's compares with the held packet before its out_check_final (net/ipv4/tcp_offload.c),
    dev_gro_receive's before any header's."""
    order = R.CHECK_ORDER
    assert len(order) == len(set(order)) and set(R.DESCRIPTIONS) <= set(order)
    assert order[-2:] == (R.BUDGET_EXHAUSTED, R.POLL_END)
    rank = R.check_rank
    assert rank(R.GSO_SKB) < rank(R.INET_CSUM) < rank(R.UDP_GATE_ZERO_CSUM) < rank(R.TCP_ACK)
    # out_check_final: "flush = len < mss; flush |= flags & (URG | PSH | RST | SYN | FIN)"
    assert rank(R.TCP_SEQ) < rank(R.TCP_PURE_ACK) < rank(R.TCP_FLAGS_PSH_FIN) < rank(R.MAX_GRO_SKBS)
    # an l3_reason name sits at its function's compare of the held packet's IP header
    assert (
        rank("tcp_gro_receive:outer_ip_id")
        == rank("tcp_gro_receive:inner_ip_id+outer_ip_id")
        == rank(R.IP_FLUSH)
    )
    assert rank("inet_gro_receive:outer_ttl_tos_df") == rank(R.IP_TTL_TOS_DF)


def test_equal_counts_by_the_order_of_the_checks_whatever_the_order_added():
    """Counted in the order the report's names would sort them (napi… before tcp…), listed in the kernel's."""
    for added in ([R.POLL_END, R.TCP_SEQ], [R.TCP_SEQ, R.POLL_END]):
        c = Counter({why: 1 for why in added})
        assert [k for k, _ in by_count(c)] == [R.TCP_SEQ, R.POLL_END]
        assert reason_list(c).index("[tcp_gro_receive:seq_gap]") < reason_list(c).index("[napi_complete_done")
    # more skbs still first
    assert [k for k, _ in by_count(Counter({R.POLL_END: 2, R.TCP_SEQ: 1}))] == [R.POLL_END, R.TCP_SEQ]
    # stack drops in the receive path's order (STACK_DROPS): __udp6_lib_rcv before gro_cells_receive's queue
    drops = Counter({D.GRO_CELLS_BACKLOG_FULL: 3, D.UDP6_CSUM_ZERO: 3})
    assert drop_list(drops).startswith(f"{D.UDP6_CSUM_ZERO} ×3, {D.GRO_CELLS_BACKLOG_FULL} ×3")


def _two_flows_one_outer_id_counter() -> list[tuple[int, bytes]]:
    """Two VXLAN flows of 2 × 1000-byte segments each, sent round-robin A B A B 1 µs apart (one poll of the gap:3
    model) with outer IPv4 IDs from one counter: A 0, 2 and B 1, 3 (the shape of ../shared/triage's
    two-flows-shared-outer-id.pcap)."""
    a = FrameSpec(outer_csum="computed", sport=40000, udp_sport=49152)
    b = replace(a, sport=40001, udp_sport=49153, inner_src="192.168.1.3")
    sa, sb = (flow_specs(s, [1000, 1000]) for s in (a, b))
    order = [(sa[0], 0), (sb[0], 1), (sa[1], 2), (sb[1], 3)]
    return [(1000 * i, build_frame(replace(s, outer_ip_id=oid))) for i, (s, oid) in enumerate(order)]


def test_the_condition_that_ended_a_flow_comes_before_the_polls_flush():
    """6.18 compares the outer IPv4 ID (21f7484220ac: fixed or incrementing by one per segment held): each flow's
    second segment arrives with its outer ID stepped by +2, so tcp_gro_receive ends each flow's first skb (2 ×
    tcp_gro_receive:outer_ip_id), and napi_complete_done flushes the two second segments held at the poll's end
    (2 × napi_complete_done:flush). Equal counts: the frames' condition is listed first, in the table's reason
    line and in explain's rows."""
    r = replay_frames(_two_flows_one_outer_id_counter(), ReplayConfig(kernels=(K_6_18,)))
    phys = r.kernels[0].stages["phys"].reasons
    assert phys == Counter({"tcp_gro_receive:outer_ip_id": 2, R.POLL_END: 2})
    (line,) = [x for x in reason_lines(r) if x.startswith("phys skbs ended by")]
    assert line.index("[tcp_gro_receive:outer_ip_id] ×2") < line.index(f"[{R.POLL_END}] ×2")
    assert [row["reason"] for row in _reason_rows(phys)] == ["tcp_gro_receive:outer_ip_id", R.POLL_END]
