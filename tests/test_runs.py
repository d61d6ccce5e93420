"""Polls composed of their flow runs (sim/runs.py, sim/compose.py) against the reference path.

Every comparison expects "identical": the JSON document of the batch path, which composes polls it has not seen
from their flow runs, equals the frame-by-frame reference path's (``ReplayConfig(fast_path=False)``). Each case
aims at one part of the argument in sim/compose.py ``RunComposer._compose`` and sim/runs.py: runs of equal shape
with other payload lengths (lengths keyed by rank, length counters moved by the length differences), lengths
out of order without PSH (``len > mss`` flushes, tcp_gro_receive), runs that reach the merge limit
(``skb_gro_receive``: exact lengths then), more flows held at once than a GRO bucket keeps (``MAX_GRO_SKBS``:
dev_gro_receive flushes the oldest), polls that take the whole budget (``napi_poll``'s flush), and bytes the
stack checksums in software (``udp_rcv``: runs keyed by exact lengths). Each case also checks that the
reference really goes through the rule it aims at, so that the comparison is not vacuous.
"""

from __future__ import annotations

import json
import random
from dataclasses import replace

import numpy as np
import pytest
from conftest import without_engine

from gro_replay.capture.writer import PcapWriter
from gro_replay.kernel import reasons as R
from gro_replay.kernel.model import K_5_11, K_5_12, K_6_12, K_6_18
from gro_replay.packet.build import ACK, PSH, FrameSpec, build_frame
from gro_replay.packet.columns import analyse
from gro_replay.report.document import document
from gro_replay.sim import PollModel, ReplayConfig, replay_capture, runs

MSS = 1398


def _docs(path, cfg: ReplayConfig) -> tuple[dict, dict, dict]:
    """(batch document, reference document, batch poll counts)."""
    r = replay_capture(str(path), cfg)
    ref = replay_capture(str(path), replace(cfg, fast_path=False))
    assert r.batch is not None and ref.batch is None
    return without_engine(document(r)), without_engine(document(ref)), r.batch


def _same(got: dict, want: dict) -> None:
    assert json.dumps(got, default=str) == json.dumps(want, default=str)  # as printed: dict order too


def _replayed(tmp_path, polls: list[list[bytes]], cfg: ReplayConfig) -> tuple[dict, dict]:
    """Write ``polls`` (``_write``), replay them on both paths, assert equal documents; returns the reference
    document and the batch path's poll counts."""
    path = tmp_path / "c.pcap"
    _write(path, polls)
    got, want, counts = _docs(path, cfg)
    _same(got, want)
    return want, counts


def _reasons(doc: dict, stage: str) -> dict:
    out: dict = {}
    for k in doc["kernels"]:
        for why, n in k["stages"][stage]["end_reasons"].items():
            out[why] = out.get(why, 0) + n
    return out


class _Conn:
    """One TCP connection over VXLAN (data one way, pure ACKs the other), its sequence numbers and IDs."""

    def __init__(self, i: int, outer_csum: str = "zero") -> None:
        self.data = FrameSpec(
            inner_src=f"10.244.1.{i + 1}",
            inner_dst=f"10.244.2.{i + 1}",
            sport=33000 + i,
            dport=8080,
            udp_sport=40000 + 7 * i,
            outer_csum=outer_csum,
        )
        self.back = replace(
            self.data,
            inner_src=self.data.inner_dst,
            inner_dst=self.data.inner_src,
            sport=8080,
            dport=33000 + i,
            outer_src="10.0.0.2",
            outer_dst="10.0.0.1",
            payload=0,
        )
        self.seq = 1_000_000 + 17 * i
        self.acked = 1
        self.ip_id = 100 * i

    def segment(self, size: int, psh: bool) -> bytes:
        spec = replace(
            self.data, seq=self.seq, payload=size, ip_id=self.ip_id, flags=ACK | (PSH if psh else 0)
        )
        self.seq += size
        self.ip_id += 1
        return build_frame(spec)

    def ack(self) -> bytes:
        spec = replace(self.back, ack=self.seq, seq=1, ip_id=self.ip_id)
        return build_frame(spec)


def _write(path, polls: list[list[bytes]]) -> None:
    """Each inner list is one burst: frames 1 µs apart, bursts 1 ms apart (a gap:3 poll each, when < 64)."""
    t = 1_700_000_000 * 10**9
    with PcapWriter(path) as w:
        for burst in polls:
            for f in burst:
                w.write(t, f)
                t += 1_000
            t += 1_000_000


def _writes(rng: random.Random, conns: list[_Conn], n_polls: int, sizes) -> list[list[bytes]]:
    """Polls of 1–3 connections' interleaved application writes (``sizes(rng)``: one write's segment sizes, the
    last one with PSH) and the other direction's ACKs."""
    polls = []
    for _ in range(n_polls):
        burst: list[bytes] = []
        for c in rng.sample(conns, rng.randint(1, 3)):
            seg = sizes(rng)
            for j, size in enumerate(seg):
                burst.append(c.segment(size, j == len(seg) - 1))
            burst.append(c.ack())
        polls.append(burst)
    return polls


@pytest.mark.parametrize("rx_csum", ["unnecessary", "none", "complete"])
def test_runs_with_other_payload_lengths_are_composed_exactly(rx_csum, tmp_path):
    """Writes of 1–6 full segments and a short last one of random length: the runs recur with other lengths, so
    known runs answer them and the byte counters move by the length differences."""
    rng = random.Random(7)
    conns = [_Conn(i, "computed" if i % 3 == 0 else "zero") for i in range(6)]
    polls = _writes(rng, conns, 300, lambda r: [MSS] * r.randint(0, 5) + [r.randint(1, MSS)])
    want, counts = _replayed(tmp_path, polls, ReplayConfig(rx_csum=rx_csum))
    assert counts["polls_composed"] > 200 and counts["polls_cached"] > 100, counts
    assert want["kernels"][0]["stages"]["phys"]["bytes"] > 0


def test_lengths_out_of_order_without_psh(tmp_path):
    """Segments longer than the held packet's first one (``len > mss`` flushes it) and shorter ones that end it
    (``len < mss``), no PSH: the same rank pattern with other absolute lengths must give the same answers."""
    rng = random.Random(11)
    conns = [_Conn(i) for i in range(4)]

    def sizes(r: random.Random) -> list[int]:
        a, b, c = sorted(r.sample(range(200, MSS + 1), 3))
        return r.choice([[b, c, a, b], [b, b, a], [a, c, c, b], [c, a, a, a]])

    polls = []
    for _ in range(200):
        burst = []
        for c in rng.sample(conns, 2):
            for size in sizes(rng):
                burst.append(c.segment(size, False))
        polls.append(burst)
    want, counts = _replayed(tmp_path, polls, ReplayConfig())
    assert counts["polls_cached"] > 20, counts
    why = _reasons(want, "tunnel")
    assert why.get(R.TCP_LEN_GT_MSS, 0) > 0 and why.get(R.TCP_SHORT, 0) > 0, why


@pytest.mark.parametrize("gro_max_size", [65536, 12000])
def test_runs_that_reach_the_merge_limit(gro_max_size, tmp_path):
    """Long writes (up to 60 segments in one poll) reach ``p->len + len >= gro_max_size``: such runs are keyed by
    their exact lengths."""
    rng = random.Random(3)
    conns = [_Conn(i, "computed") for i in range(2)]
    polls = []
    for _ in range(60):
        c = rng.choice(conns)
        n = rng.choice([8, 30, 47, 60])
        polls.append([c.segment(MSS if j < n - 1 else rng.randint(1, MSS), j == n - 1) for j in range(n)])
    want, counts = _replayed(tmp_path, polls, ReplayConfig(gro_max_size=gro_max_size))
    assert counts["polls_composed"] > 0, counts
    assert _reasons(want, "phys").get(R.SKB_GRO_RECEIVE_E2BIG, 0) > 0


@pytest.mark.parametrize("rss", ["none", "toeplitz"])
def test_more_flows_held_than_a_bucket_keeps(rss, tmp_path):
    """Twelve connections, two segments each without PSH, round robin in one poll: with one RX hash for all
    (``--rss none``) a bucket holds 8 and dev_gro_receive flushes the oldest (``MAX_GRO_SKBS``); such polls
    must not be composed of runs recorded apart."""
    rng = random.Random(5)
    conns = [_Conn(i, "computed") for i in range(12)]
    polls = []
    for _ in range(80):
        chosen = rng.sample(conns, rng.choice([3, 12]))
        burst = [c.segment(MSS, False) for c in chosen] + [c.segment(MSS, True) for c in chosen]
        polls.append(burst)
    want, counts = _replayed(tmp_path, polls, ReplayConfig(rss=rss))
    assert counts["polls_composed"] > 0, counts
    if rss == "none":
        assert _reasons(want, "phys").get(R.MAX_GRO_SKBS, 0) > 0


def test_full_polls_composed_of_runs(tmp_path):
    """Budget polls of 64 frames cut across writes: each run is recorded as a poll that takes its whole budget,
    so its packets end by ``napi_poll``'s flush as in the full poll."""
    rng = random.Random(9)
    conns = [_Conn(i) for i in range(5)]
    polls = _writes(rng, conns, 400, lambda r: [MSS] * r.randint(0, 9) + [r.randint(1, MSS)])
    want, counts = _replayed(tmp_path, polls, ReplayConfig(poll=PollModel.parse("budget")))
    assert counts["polls_composed"] > 0, counts
    assert _reasons(want, "phys").get(R.BUDGET_EXHAUSTED, 0) > 0


def test_bytes_the_stack_checksums_in_software(tmp_path):
    """rx-csum none with outer UDP checksums: udp_rcv sums each datagram in software (phys sw_csum_bytes): those
    runs are keyed by their exact lengths, and the document still equals the reference."""
    rng = random.Random(13)
    conns = [_Conn(i, "computed") for i in range(4)]
    polls = _writes(rng, conns, 200, lambda r: [MSS] * r.randint(0, 3) + [r.choice([100, 700, 1000])])
    want, counts = _replayed(tmp_path, polls, ReplayConfig(rx_csum="none"))
    assert counts["polls_cached"] > 0, counts
    assert any(k["stages"]["phys"]["sw_csum_bytes"] > 0 for k in want["kernels"])


def test_a_run_in_a_full_poll_is_not_the_same_run_in_a_short_one(tmp_path):
    """The same run shape (8 full segments, no PSH: held when the poll ends) in polls that take the whole budget
    (8 connections, 64 frames: ``napi_poll`` flushes, budget exhausted) and in short ones (2 connections:
    ``napi_complete_done`` flushes): the two end reasons must not be answered from one recording."""
    rng = random.Random(17)
    conns = [_Conn(i, "computed") for i in range(8)]
    polls = []
    for _ in range(60):
        chosen = conns if rng.random() < 0.5 else rng.sample(conns, 2)
        polls.append([f for c in chosen for f in [c.segment(MSS, False) for _ in range(8)]])
    want, counts = _replayed(tmp_path, polls, ReplayConfig())
    assert counts["polls_cached"] > 10, counts
    why = _reasons(want, "phys")
    assert why.get(R.BUDGET_EXHAUSTED, 0) > 0 and why.get(R.POLL_END, 0) > 0, why


def test_a_run_that_holds_nothing_at_its_end_serves_full_and_short_polls(tmp_path):
    """Writes of 2, 5 or 8 segments, the last with PSH, of 8 connections: a run's last segment ends its packet
    (tcp_gro_receive: PSH), so nothing of it is held when the poll ends, by ``napi_poll`` at budget (64 frames:
    all 8 connections' 8-segment writes) or by ``napi_complete_done`` below it. Both ends then flush nothing,
    so one recording per write length serves both kinds of poll (the connections share one header shape without
    their names): 3 runs recorded, not 6."""
    rng = random.Random(31)
    conns = [_Conn(i, "computed") for i in range(8)]
    polls = []
    for _ in range(120):
        if rng.random() < 0.4:
            chosen, sizes = conns, [8] * 8
        else:
            chosen = rng.sample(conns, rng.randint(1, 3))
            sizes = [rng.choice([2, 5, 8]) for _ in chosen]
        chosen = rng.sample(chosen, len(chosen))
        polls.append(
            [c.segment(MSS, j == n - 1) for c, n in zip(chosen, sizes, strict=True) for j in range(n)]
        )
    want, counts = _replayed(tmp_path, polls, ReplayConfig(kernels=(K_5_12,)))
    assert counts["polls_composed"] > 60 and counts["runs_recorded"] == 3, counts
    assert _reasons(want, "phys").get(R.TCP_FLAGS_PSH_FIN, 0) > 0


def test_runs_that_fill_a_tunnel_cell_poll(tmp_path):
    """Before the fix, a full poll of zero-checksum VXLAN frames reaches the tunnel cell as 64 skbs, which fill
    its poll (``gro_cell_poll`` takes the weight; ``napi_poll`` flushes, budget exhausted, and polls it again):
    the same runs in such polls, in full polls that do not fill the cell and in short ones must not share a
    recording."""
    rng = random.Random(19)
    conns = [_Conn(i) for i in range(8)]
    merged = [_Conn(8 + i, "computed") for i in range(2)]  # merged on the phys device: fewer skbs in the cell
    polls = []
    for _ in range(90):
        chosen = rng.choice([conns, conns[:6] + merged, rng.sample(conns + merged, 2)])
        chosen = rng.sample(chosen, len(chosen))  # in another order each time: the whole poll is new
        polls.append([f for c in chosen for f in [c.segment(MSS, False) for _ in range(8)]])
    want, counts = _replayed(tmp_path, polls, ReplayConfig())
    assert counts["polls_cached"] > 10, counts
    pre = want["kernels"][0]
    assert pre["stages"]["tunnel"]["end_reasons"].get(R.BUDGET_EXHAUSTED, 0) > 0, pre["stages"]["tunnel"]


def test_shapes_and_runs_start_afresh_when_too_many(tmp_path, monkeypatch):
    """Run keys name header shapes by number; past ``MAX_SHAPES`` shapes both are forgotten (pending counts added
    first), so memory does not grow with the shapes a capture brings: the document is unchanged."""
    from gro_replay import pollcache
    from gro_replay.sim import compose

    monkeypatch.setattr(compose, "MAX_SHAPES", 2)
    monkeypatch.setattr(pollcache, "BLOCK", 65536)  # many blocks: the shapes are counted at each
    resets = []
    settle = compose.PollCache.settle
    monkeypatch.setattr(compose.PollCache, "settle", lambda self: (resets.append(1), settle(self))[1])
    rng = random.Random(23)
    conns = [_Conn(i, "computed" if i % 2 else "zero") for i in range(5)]
    conns[3].data = replace(conns[3].data, outer_ttl=17)  # another header shape
    conns[4].data = replace(conns[4].data, tos=0x10)
    polls = _writes(rng, conns, 200, lambda r: [MSS] * r.randint(0, 4) + [r.randint(1, MSS)])
    want, counts = _replayed(tmp_path, polls, ReplayConfig())
    assert counts["polls_composed"] > 100, counts
    assert len(resets) > 3  # started afresh several times (and settled at the end)


def test_a_flush_reason_names_only_the_packet_s_own_header_differences(tmp_path):
    """A held packet of flow A, a frame of flow B (other outer UDP source port, outer DF set) compared with it in
    inet_gro_receive before the UDP ports tell the flows apart, then A's next frame with another inner TOS: A's
    packet ends for its inner TOS only. The flush bit B set is cleared for every new skb (gro_list_prepare:
    ``NAPI_GRO_CB(p)->flush = 0``), and so is the reason it noted; before, the reference said
    ``outer_ttl_tos_df+inner_ttl_tos_df`` and the batch path, which records A's run alone, ``inner_ttl_tos_df``
    (found by a breaker run, 5.12 and every model before l3_flush_in_tcp)."""
    a = FrameSpec(
        inner_src="10.244.1.1",
        inner_dst="10.244.2.1",
        sport=33000,
        dport=8080,
        udp_sport=40000,
        outer_df=False,
        outer_ip_id=10,
        ip_id=1,
        seq=1000,
        payload=100,
        flags=ACK,
    )
    b = replace(
        a,
        inner_src="10.244.1.2",
        inner_dst="10.244.2.2",
        sport=33001,
        udp_sport=40007,
        outer_df=True,
        outer_ip_id=500,
    )
    a2 = replace(a, outer_ip_id=11, ip_id=2, seq=1100, tos=4)
    cfg = ReplayConfig(kernels=(K_5_12,), rss="none")
    want, _ = _replayed(tmp_path, [[build_frame(a), build_frame(b), build_frame(a2)]] * 2, cfg)
    why = want["kernels"][0]["stages"]["phys"]["end_reasons"]
    assert why.get("inet_gro_receive:inner_ttl_tos_df") == 2, why


def test_an_aggregate_s_length_met_with_mss_is_keyed_exactly(tmp_path):
    """Before 6.1 (no gro_accepts_gso) tcp_gro_receive compares a phys aggregate's whole length with the held
    packet's mss at the tunnel device ((len - 1) >= mss): a sum of segment lengths, which ranks do not fix. One flow,
    outer DF clear: 1398, then X and X with an outer ID jump (phys flushes the first alone and merges the others);
    X = 600 (1200 < 1398) and X = 800 (1600 > 1398) have one rank pattern and different answers (breaker run).
    The aggregate arrives flushed already (dev_gro_receive: skb_is_gso, before 6.1), which names its own end
    (reasons.py skb_flush_reason); the held packet is named by the length compare where it flushes (X = 800:
    len_gt_mss), else by the flushing arrival, which skb_gro_receive refuses (X = 600: next_flushing). The batch
    path must give the reference document in both cases."""
    a = FrameSpec(
        inner_src="10.244.1.1", inner_dst="10.244.2.1", sport=33000, udp_sport=40000, outer_df=False
    )
    polls, seq, ip_id = [], 1000, 1
    for x in (600, 800, 600, 800):
        burst = []
        for j, size in enumerate([1398, x, x]):
            spec = replace(a, seq=seq, payload=size, ip_id=ip_id, outer_ip_id=ip_id + (4 if j else 0))
            burst.append(build_frame(spec))
            seq += size
            ip_id += 1
        polls.append(burst)
    want, counts = _replayed(tmp_path, polls, ReplayConfig(kernels=(K_5_12,)))
    assert counts["polls_composed"] > 0, counts
    why = want["kernels"][0]["stages"]["tunnel"]["end_reasons"]
    # per poll: the aggregate (skb_is_gso) and the held 1398-byte segment (by the compare, or by the arrival)
    assert why == {R.GSO_SKB: 4, R.TCP_LEN_GT_MSS: 2, R.TCP_NEXT_FLUSHING: 2}, why


def _id_polls(outer_df: bool, shared_outer_ids: bool, inner_ipv6: bool) -> list[list[bytes]]:
    """300 polls of 1–3 of 5 connections' writes of 2 or 4 full segments and their ACKs. Outer IDs: with
    ``shared_outer_ids``, one counter per sending host over all its connections (``ip_select_ident``: a
    connection's outer ID steps by 1 plus the frames the host sent in between), else one per connection,
    stepping by 1. Inner IDs (IPv4; ``inner_ipv6`` has none) step by 1, stay fixed, or jump by 1–3 within a
    write."""
    rng = random.Random(29)
    conns = [_Conn(i, "computed" if i % 2 else "zero") for i in range(5)]
    for c in conns:
        c.data = replace(c.data, outer_df=outer_df)
        c.back = replace(c.back, outer_df=outer_df)
        if inner_ipv6:
            c.data = replace(
                c.data, inner_ipv6=True, inner_src=f"fd00::1:{c.seq % 97}", inner_dst="fd00::2:1"
            )
            c.back = replace(c.back, inner_ipv6=True, inner_src=c.data.inner_dst, inner_dst=c.data.inner_src)
    host_id = {"10.0.0.1": 7, "10.0.0.2": 9000}
    polls = []
    for _ in range(300):
        burst = []
        for c in rng.sample(conns, rng.randint(1, 3)):
            mode = rng.choice(["step", "step", "step", "fixed", "jump"])
            n = rng.choice([2, 4])
            for j in range(n):
                outer = host_id["10.0.0.1"] if shared_outer_ids else c.ip_id + 5000
                spec = replace(c.data, seq=c.seq, payload=MSS, ip_id=c.ip_id, outer_ip_id=outer)
                burst.append(build_frame(replace(spec, flags=ACK | (PSH if j == n - 1 else 0))))
                host_id["10.0.0.1"] += 1 + rng.choice([0, 0, 0, 1, 2])  # other connections' frames between
                c.seq += MSS
                c.ip_id += {"step": 1, "fixed": 0, "jump": rng.choice([1, 2, 3])}[mode]
            outer = host_id["10.0.0.2"] if shared_outer_ids else c.ip_id + 5000
            burst.append(build_frame(replace(c.back, ack=c.seq, seq=1, ip_id=c.ip_id, outer_ip_id=outer)))
            host_id["10.0.0.2"] += 1
        polls.append(burst)
    return polls


@pytest.mark.parametrize("outer_df", [True, False], ids=["outer-df", "outer-no-df"])
@pytest.mark.parametrize(
    ("kernels", "inner_ipv6"),
    [((K_5_11, K_5_12), False), ((K_5_11, K_5_12), True), ((K_6_12,), False), ((K_6_18,), False)],
    ids=["5.11+5.12", "5.11+5.12-inner-ipv6", "6.12", "6.18"],
)
def test_runs_are_keyed_without_their_ip_ids(kernels, inner_ipv6, outer_df, tmp_path):
    """Run keys leave the IPv4 IDs out; a recording serves a run only when its own IDs answer the differences the
    recording used alike (0, 1, the held packet's segment count; the value where the report names an ID step).
    Which IDs end an skb depends on the kernel (gro-spec §3.1: up to v6.9 ``flush_id``, the outer header's
    overwritten by the inner header's after an atomic (DF) outer datagram, by ipv6_gro_receive's 0 for an
    inner IPv6 header; §3.3: v6.10 ``inet_gro_flush`` ignores
    the outer ID under DF and allows fixed IDs under DF; v6.18 checks the outer ID too and allows fixed IDs
    without DF): the documents, whose verdicts name the ID steps, must equal the reference's. Where the kernel
    never uses the outer ID (DF before v6.18), outer IDs from one counter per host must not split the runs
    that outer IDs stepping by one per connection leave together: the batch path answers as many polls from
    known runs for both."""
    path = tmp_path / "c.pcap"
    _write(path, _id_polls(outer_df, True, inner_ipv6))
    cfg = ReplayConfig(kernels=kernels)
    got, want, counts = _docs(path, cfg)
    _same(got, want)
    assert counts["polls_composed"] > 250, counts
    ends = {why for stage in ("phys", "tunnel") for why in _reasons(want, stage)}
    assert any("inner_ip_id" in why for why in ends) != inner_ipv6, ends  # an ID ended some skb
    outer_used = not outer_df or kernels == (K_6_18,)
    assert any("outer_ip_id" in why for why in ends) == outer_used, ends
    if not outer_used:
        _write(path, _id_polls(outer_df, False, inner_ipv6))
        _got, _want, regular = _docs(path, cfg)
        assert counts["polls_cached"] == regular["polls_cached"] > 200, (counts, regular)


def test_id_key_fixes_the_id_differences_guards_read():
    # GRO reads an IPv4 ID only as its difference with another one modulo 2**16 (inet_gro_receive / inet_gro_flush:
    # ntohs(iph2->id) - ntohs(iph->id), a u16 sum), so a run's lookup answer (sim/run_lookup.py ``_lookup``) is kept
    # by what fixes every such difference: IDs shifted by one constant per column share a key; one difference
    # changed does not; outer less inner enters only once some recording compared the two
    import numpy as np

    from gro_replay.sim.run_lookup import RunLookup
    from gro_replay.sim.runs import Runs

    # (outer, inner) IDs of three runs of two entries: run 1 is run 0 shifted by 65435 and 65532 (wrapping);
    # run 2 is run 0 with its second outer ID one higher
    ids = np.array([[100, 7], [101, 9], [65535, 3], [0, 5], [100, 7], [102, 9]], np.int64)
    z = np.zeros(6, np.int64)
    runs = Runs(z, np.array([0, 2, 4, 6]), z[:3], [b"k"] * 3, z, z, z[:3], ids, z[:3].astype(bool))
    look = RunLookup.__new__(RunLookup)
    look._id_rel, look._ids_across = (None, b"", b""), False
    key = [look._id_key(runs, 2 * r, 2 * r + 2) for r in range(3)]
    assert key[0] == key[1] != key[2]
    look._ids_across = True  # outer 100 - inner 7 = 93 and 65535 - 3 = 65532 now tell runs 0 and 1 apart
    across = [look._id_key(runs, 2 * r, 2 * r + 2) for r in range(3)]
    assert across[0] != across[1] and across[0][:8] == key[0]


def test_a_run_key_names_its_rows_lengths_and_context_alone():
    """The run cache's keys (sim/runs.py ``run_keys``, ``length_exact_key``): a key of 14 frames and a length-exact
    key of 13 frames have rows + suffix of one byte length when a row is as long as 13 int64 lengths (104 bytes:
    26 uint32 columns); each row holds its run's frame count (column 7, above the exact bit), so their first rows
    differ, and after the rows ``P`` starts the lengths where a context starts with F or C (sim/run_lookup.py)."""
    frames = [
        build_frame(FrameSpec(seq=1000 + 1398 * i, payload=1398, flags=ACK, sport=40000 + (i >= 13)))
        for i in range(27)
    ]  # a flow of 13 frames, then one of 14, in two polls
    buf = b"".join(frames)
    caplen = np.array([len(f) for f in frames], np.int64)
    data = np.concatenate([[0], np.cumsum(caplen)[:-1]]).astype(np.int64)
    col = analyse(buf, data, caplen, (4789,), (6081,))
    idx = np.arange(27, dtype=np.int64)
    poll_of = (idx >= 13).astype(np.int64)
    fids = poll_of.copy()
    got = runs.run_keys(col, idx, poll_of, caplen, 65536, fids, fids, {})
    width = 4 * runs._EXT
    assert width == 8 * 13 and [len(k) // width for k in got.keys] == [13, 14]
    for key, n in zip(got.keys, (13, 14), strict=True):
        rows = np.frombuffer(key, np.uint32).reshape(n, runs._EXT)
        assert (rows[:, 7] >> 1 == n).all()
    exact13 = runs.length_exact_key(got.keys[0], np.full(13, 1398, np.int64).tobytes())
    assert len(exact13) == 14 * width + 1 and exact13[13 * width : 13 * width + 1] == b"P"
    assert exact13[:width] != got.keys[1][:width]
