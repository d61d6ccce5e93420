"""Polls composed of their flow runs with observers on (``--trace``, explain) against the reference path.

With an observer the batch engine still composes a poll it has not seen from its flow runs (sim/compose.py
``RunComposer._compose``) and hands the observers every delivery of the poll merged into the kernels' order
(``_deliver``: "The order of deliveries" in ``_compose``'s docstring): at each stage, deliveries queued while a
frame (or, at a tunnel device, a cell input) was processed at its position, then the poll's final flush bucket by
bucket (``napi_gro_flush``), oldest first within a bucket (``__napi_gro_flush_chain``), the tunnel cells after the
phys poll in their order, each cell's input being the phys stage's deliveries in order. Every comparison expects
"identical": the ``--trace`` text (order, times, skb addresses, lengths), explain's document and text, and the
replay's JSON document of the batch path equal those of the frame-by-frame reference path
(``ReplayConfig(fast_path=False)``). Each case checks that polls were composed (``polls_composed``) and that the
reference went through the rule it aims at, so that the comparison is not vacuous.
"""

from __future__ import annotations

import io
import json
import random
from dataclasses import replace

import pytest
from conftest import without_engine
from test_pollcache import _write as write_repeated
from test_runs import MSS, _Conn, _reasons, _write
from test_scenarios import random_scenario

from gro_replay import pollcache
from gro_replay.kernel import reasons as R
from gro_replay.report.document import document
from gro_replay.report.explain import FlowDeliveries, explain, render_text
from gro_replay.report.pcapout import Observers
from gro_replay.report.trace import TraceWriter
from gro_replay.sim import ReplayConfig, replay_capture


def _observed(path, cfg: ReplayConfig) -> tuple[tuple, dict | None, dict]:
    """One replay with the trace writer and explain's observer: ``(trace text, explain document, explain text,
    replay document)``, the batch path's poll counts (None: frame by frame) and the replay document."""
    out = io.StringIO()
    deliveries = FlowDeliveries()
    r = replay_capture(str(path), cfg, Observers(TraceWriter(out, tag=True), deliveries))
    doc = without_engine(document(r))
    # which path ran (``engine``) differs by design: the rest must not
    ex = without_engine(explain(r, deliveries, [m.name for m in cfg.kernels], list(range(len(r.flows)))))
    ex_text = "\n".join(render_text(ex))
    dumped = json.dumps(doc, default=str)  # as printed: dict order too
    return (out.getvalue(), json.dumps(ex, default=str), ex_text, dumped), r.batch, doc


def _compared(path, cfg: ReplayConfig) -> tuple[dict, dict, str]:
    """Replay ``path`` on both paths with both observers, assert every output equal; returns the reference
    document, the batch path's poll counts and the reference trace."""
    # explain replays with no flow retired (cli/explain.py): the same here, so that every flow is explained
    cfg = replace(cfg, flow_idle_timeout_ns=0, flows_max=1 << 62)
    got, counts, _ = _observed(path, cfg)
    want, ref, doc = _observed(path, replace(cfg, fast_path=False))
    assert counts is not None and ref is None
    for name, a, b in zip(
        ("trace", "explain document", "explain text", "replay document"), got, want, strict=True
    ):
        assert a == b, name
    return doc, counts, want[0]


def _interleaved(conns: list[_Conn], plan: list[tuple[int, bool]]) -> list[bytes]:
    """One burst: connection ``c`` of each ``(c, psh)`` in ``plan`` sends one full segment in that order (with PSH
    when ``psh``)."""
    return [conns[c].segment(MSS, psh) for c, psh in plan]


@pytest.mark.parametrize("tunnel_gro", [True, False])
def test_a_flow_flushed_mid_poll_beside_flows_held_to_its_end(tunnel_gro, tmp_path):
    """In each poll one connection's write ends with PSH mid-poll (``tcp_gro_receive``: PSH flushes the aggregate
    while that frame is processed) while the others' segments, interleaved with it, stay held until the poll ends
    (``napi_complete_done``'s flush): the PSH flow's deliveries come at its frame's position, before the held ones.
    Without GRO on the tunnel device (``gro_cells_receive`` → ``netif_rx``) the tunnel skbs go up from the backlog
    in the phys stage's order."""
    rng = random.Random(29)
    conns = [_Conn(i, "computed" if i % 2 else "zero") for i in range(6)]
    polls = []
    for _ in range(150):
        a, *held = rng.sample(range(6), rng.randint(2, 4))
        plan = []
        for k in range(3):
            plan += [(c, False) for c in held[: rng.randint(1, len(held))]]
            plan.append((a, k == 1))  # PSH on a's second segment: mid-poll
        plan += [(c, False) for c in held]
        polls.append(_interleaved(conns, plan))
    path = tmp_path / "c.pcap"
    _write(path, polls)
    cfg = ReplayConfig(gro={"phys": True, "tunnel": tunnel_gro})
    doc, counts, trace = _compared(path, cfg)
    assert counts["polls_composed"] > 100 and counts["polls_cached"] > 20, counts
    why = _reasons(doc, "phys")
    assert why.get(R.TCP_FLAGS_PSH_FIN, 0) > 0 and why.get(R.POLL_END, 0) > 0, why
    if not tunnel_gro:
        assert _reasons(doc, "tunnel").get(R.GRO_CELLS_NETIF_RX, 0) > 0


@pytest.mark.parametrize("rss", ["none", "toeplitz"])
def test_several_flows_held_in_one_bucket(rss, tmp_path):
    """Up to six connections, two or three full segments each without PSH, interleaved: all held until the
    poll's end. With ``--rss none`` every flow's hash is 0, so they share bucket 0 and its flush goes oldest first
    (``__napi_gro_flush_chain``: the list's tail); with Toeplitz hashes the buckets go in ascending order
    (``napi_gro_flush``)."""
    rng = random.Random(31)
    conns = [_Conn(i, "computed") for i in range(8)]
    polls = []
    for _ in range(150):
        chosen = rng.sample(range(8), rng.randint(2, 6))
        plan = [(c, False) for _ in range(rng.randint(2, 3)) for c in rng.sample(chosen, len(chosen))]
        polls.append(_interleaved(conns, plan))
    path = tmp_path / "c.pcap"
    _write(path, polls)
    doc, counts, trace = _compared(path, ReplayConfig(rss=rss))
    assert counts["polls_composed"] > 100 and counts["polls_cached"] > 20, counts
    assert _reasons(doc, "phys").get(R.POLL_END, 0) > 0


def test_full_polls(tmp_path):
    """Polls of 64 frames (the budget) and of 32: four or two connections' writes of sixteen full segments (PSH
    on the last one or not), interleaved at random, so that the whole polls are new and their runs recur (a poll
    whose runs are all new is not composed when they could fill a poll: the short polls make them known).
    ``napi_poll`` flushes at budget (HZ < 1000: ``napi_gro_flush(n, HZ >= 1000)``) what PSH did not flush
    mid-poll; each run was recorded as a poll that takes its whole budget."""
    rng = random.Random(37)
    conns = [_Conn(i, "computed") for i in range(6)]
    polls = []
    for _ in range(120):
        left = {c: 16 for c in rng.sample(range(6), rng.choice([2, 4]))}
        psh = {c: rng.random() < 0.5 for c in range(6)}
        plan = []
        while left:
            c = rng.choice(sorted(left))
            left[c] -= 1
            plan.append((c, psh[c] and not left[c]))
            if not left[c]:
                del left[c]
        polls.append(_interleaved(conns, plan))
    path = tmp_path / "c.pcap"
    _write(path, polls)
    doc, counts, _trace = _compared(path, ReplayConfig())
    assert counts["polls_composed"] > 50, counts
    why = _reasons(doc, "phys")
    assert why.get(R.BUDGET_EXHAUSTED, 0) > 0 and why.get(R.TCP_FLAGS_PSH_FIN, 0) > 0, why


def test_polls_that_fill_a_tunnel_cell(tmp_path):
    """Before the fix a full poll of zero-checksum frames puts 64 skbs into the tunnel cell: its poll takes the
    whole weight and ends by ``napi_poll``'s flush (the runs recorded with the cell's weight set to what each puts
    there)."""
    rng = random.Random(41)
    conns = [_Conn(i) for i in range(8)]
    merged = [_Conn(8 + i, "computed") for i in range(2)]
    polls = []
    for _ in range(90):
        chosen = rng.choice([conns, conns[:6] + merged, rng.sample(conns + merged, 2)])
        chosen = rng.sample(chosen, len(chosen))
        polls.append([f for c in chosen for f in [c.segment(MSS, False) for _ in range(8)]])
    path = tmp_path / "c.pcap"
    _write(path, polls)
    doc, counts, _trace = _compared(path, ReplayConfig())
    assert counts["polls_composed"] > 10, counts
    assert doc["kernels"][0]["stages"]["tunnel"]["end_reasons"].get(R.BUDGET_EXHAUSTED, 0) > 0


#: seeds of ``random_scenario`` (from 7000) whose captures have polls to compose (the others' polls are all
#: answered whole or run whole: tests/test_pollcache.py compares their observers)
COMPOSING = (0, 1, 2, 3, 5, 6, 7, 9, 11, 16, 17, 18)


@pytest.mark.parametrize("seed", COMPOSING)
def test_seeded_scenarios(seed, tmp_path, monkeypatch):
    """The seeded random scenarios of test_scenarios.py (every layer's checksum errors, flags, options, VLANs,
    IPv4/IPv6, VXLAN/Geneve, NIC checksum profiles, GRO_NORMAL batch sizes, poll models and weights, three
    kernels), written three times, read in small or large blocks."""
    rng = random.Random(7000 + seed)
    frames, cfg = random_scenario(rng)
    cfg = replace(cfg, hz=250, gro_flush_timeout_ns=0, napi_defer_hard_irqs=0, rx_queues=1)
    if cfg.poll.kind == "budget" and len(frames) >= cfg.weight:
        frames = frames[: len(frames) // cfg.weight * cfg.weight]
    path = tmp_path / "s.pcap"
    write_repeated(path, frames, repeat=3)
    monkeypatch.setattr(pollcache, "BLOCK", rng.choice([2048, 65536]))
    _doc, counts, _trace = _compared(path, cfg)
    assert counts["polls_composed"] > 0, counts


def test_losses_of_equal_count_are_listed_alike_on_both_paths(tmp_path):
    """A flow that loses one frame to ip_rcv (outer IPv4 header checksum, InCsumErrors) and one to udp_rcv (outer
    UDP checksum, UdpInCsumErrors, --rx-csum none): its explain verdict lists the two losses by name, ip_rcv's
    first, on both paths. The batch path serves the flow's first piece (a PSH frame) from another flow's recording
    and adds its counts after the second piece ran, so an order of first count put udp_rcv's first there
    (breaker's finding)."""
    from gro_replay.packet.build import ACK, PSH, FrameSpec, build_frame

    def bad_ip(frame: bytes) -> bytes:
        b = bytearray(frame)
        b[14 + 10] ^= 0x55  # the outer IPv4 header checksum
        return bytes(b)

    a = FrameSpec(udp_sport=40000, sport=30000, outer_csum="computed")
    b = FrameSpec(udp_sport=40001, sport=30001, outer_csum="computed")
    polls = [
        [build_frame(replace(a, outer_csum="bad", flags=ACK | PSH, seq=1000))],
        [
            build_frame(replace(b, outer_csum="bad", flags=ACK | PSH, seq=1000)),
            bad_ip(build_frame(replace(b, seq=2398))),
        ],
    ]
    path = tmp_path / "loss.pcap"
    _write(path, polls)
    cfg = ReplayConfig(rx_csum="none")
    doc, counts, _trace = _compared(path, cfg)
    got, _c, _d = _observed(path, replace(cfg, flow_idle_timeout_ns=0, flows_max=1 << 62))
    lines = [ln for ln in got[2].splitlines() if ln.startswith("  verdict:") and "ip_rcv drops it" in ln]
    assert lines and all(
        ln.index("1 frame lost: ip_rcv drops it") < ln.index("; 1 frame lost: udp_rcv drops it")
        for ln in lines
    )
    assert counts["polls_composed"] >= 1, counts
