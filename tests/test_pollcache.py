"""The batch path (pollcache.py: block decoding + poll cache) against the reference path.

The expected value of every comparison is "identical": the JSON document of ``replay_capture`` with the batch
path equals the one with ``ReplayConfig(fast_path=False)`` (reference path, frame by frame, no cache). The
captures are the seeded random scenarios of test_scenarios.py (flags, sequence gaps, checksum errors in every
layer, option and header changes, VLAN tags, ECN, retransmissions, non-tunnel and malformed frames, IPv4/IPv6,
VXLAN/Geneve, all five NIC checksum profiles, three kernel profiles), repeated so that polls recur and the cache
answers them, written to pcap files and read back in small blocks so that polls straddle block boundaries.
Why the cache is exact is argued in pollcache.py's docstring (every poll ends with GRO flushed when HZ < 1000).
"""

from __future__ import annotations

import io
import json
import random
import struct
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import without_engine
from test_scenarios import random_scenario

from gro_replay import pollcache
from gro_replay.capture.writer import PcapWriter
from gro_replay.packet.build import FrameSpec, build_frame, flow_specs
from gro_replay.report.document import document
from gro_replay.sim import PollModel, ReplayConfig, block_flows, engine_path, replay_capture
from gro_replay.synth import Scenario, synth_frames, write_scenario

SAMPLES = sorted((Path(__file__).resolve().parent.parent / "sample_pcaps").glob("*.pcap"))
SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "captures"


def _doc(path, cfg) -> str:
    return _run(path, cfg)[0]


def _run(path, cfg) -> tuple[str, dict | None]:
    """The JSON document (text, in the order it is printed: the batch path must not reorder a dict) and the batch
    path's poll counts (None: the frame-by-frame path ran)."""
    r = replay_capture(str(path), cfg)
    return json.dumps(without_engine(document(r)), default=str), r.batch


def _eligible(cfg: ReplayConfig, rng: random.Random) -> ReplayConfig:
    """The scenario's config with the settings the batch path needs (HZ < 1000, no deferral, one queue)."""
    return replace(cfg, hz=250, gro_flush_timeout_ns=0, napi_defer_hard_irqs=0, rx_queues=1)


def _write(path: Path, frames, repeat: int) -> None:
    """``frames`` ``repeat`` times, each copy 1 ms after the previous one ends (a new burst for gap polls)."""
    span = frames[-1][0] - frames[0][0] + 1_000_000
    with PcapWriter(path) as w:
        for r in range(repeat):
            for ts, f in frames:
                w.write(ts + r * span, f)


def _seeded(seed: int, tmp_path: Path, monkeypatch) -> tuple[str, str, dict | None]:
    """Batch and reference documents of seeded scenario ``seed`` (written 3 times; budget polls: the frames
    cut to a multiple of the weight so that the copies are polled alike), and the batch path's counts."""
    rng = random.Random(1000 + seed)
    frames, cfg = random_scenario(rng)
    cfg = _eligible(cfg, rng)
    if cfg.poll.kind == "budget" and len(frames) >= cfg.weight:
        frames = frames[: len(frames) // cfg.weight * cfg.weight]
    path = tmp_path / "s.pcap"
    _write(path, frames, repeat=3)
    monkeypatch.setattr(pollcache, "BLOCK", rng.choice([2048, 9000, 65536]))
    # frames noted in the flow tracker a run at a time (``_track_run``) from runs of 1 frame or of 32
    monkeypatch.setattr(block_flows, "MIN_RUN", rng.choice([1, 32]))
    assert engine_path.batch_eligible(cfg, False)
    got, batch = _run(path, cfg)
    return got, _doc(path, replace(cfg, fast_path=False)), batch


@pytest.mark.parametrize("seed", range(24))
def test_batch_path_equals_reference_on_seeded_scenarios(seed, tmp_path, monkeypatch):
    got, want, batch = _seeded(seed, tmp_path, monkeypatch)
    assert batch is not None  # the batch path ran
    assert got == want


def test_seeded_scenarios_exercise_the_cache(tmp_path, monkeypatch):
    cached = simulated = 0
    for seed in range(24, 40):
        got, want, batch = _seeded(seed, tmp_path, monkeypatch)
        assert got == want
        cached += batch["polls_cached"]
        simulated += batch["polls_simulated"]
    # the second and third copies of each scenario repeat the first one's polls
    assert cached > 200 and simulated > 100, (cached, simulated)


@pytest.mark.parametrize(
    "sc",
    [
        Scenario(frames=3000, pause_every=100, pause_ns=50_000),
        Scenario(flows=64, frames=40, interleave="rr"),
        Scenario(flows=5, frames=400, interleave=8, outer_csum="computed"),
        Scenario(flows=3, frames=300, encap="geneve", outer_ipv6=True, inner_ipv6=True, geneve_opt_bytes=8),
    ],
    ids=["bulk", "flows64", "blocks8-csum", "geneve-v6"],
)
@pytest.mark.parametrize("poll", ["budget", "gap:5", "rx-usecs:16"])
def test_batch_path_equals_reference_on_synth_captures_and_hits(sc, poll, tmp_path, monkeypatch):
    path = tmp_path / "c.pcap"
    write_scenario(path, sc)
    monkeypatch.setattr(pollcache, "BLOCK", 50_000)
    cfg = ReplayConfig(poll=PollModel.parse(poll), resegment="auto")
    assert _doc(path, cfg) == _doc(path, replace(cfg, fast_path=False))
    b = _run(path, cfg)[1]
    # regular in-order traffic repeats its poll shapes: most polls are answered by the cache (rx-usecs:16 over
    # frames 1 µs apart: polls of 17 frames; over 64 round-robin flows they take 64 shapes before repeating)
    assert b["polls_cached"] > (1 if poll.startswith("rx-usecs") else 2) * b["polls_simulated"], b


@pytest.mark.parametrize("rx_csum", ["none", "unnecessary", "unnecessary-tunnel", "complete", "partial"])
def test_batch_path_equals_reference_on_samples_and_shared_captures(rx_csum):
    paths = SAMPLES + (sorted(SHARED.rglob("*.pcap")) if SHARED.is_dir() else [])
    assert len(paths) >= 3
    for p in paths:
        for poll in ("budget", "gap:5", "rx-usecs:16"):
            cfg = ReplayConfig(rx_csum=rx_csum, poll=PollModel.parse(poll), resegment="auto")
            assert _doc(p, cfg) == _doc(p, replace(cfg, fast_path=False)), (p, poll)


def test_not_eligible_configs_take_the_reference_path():
    base = ReplayConfig()
    assert engine_path.batch_eligible(base, False)
    assert not engine_path.batch_eligible(base, True)  # a trace or pcap writer observes single deliveries
    for change in (
        {"hz": 1000},  # napi_poll keeps young packets across polls (flush_old)
        {"gro_flush_timeout_ns": 20_000},
        {"napi_defer_hard_irqs": 2},
        {"rx_queues": 2},
        {"fast_path": False},
    ):
        assert not engine_path.batch_eligible(replace(base, **change), False), change


@pytest.mark.parametrize(
    "times",
    [
        "equal",  # every frame at one instant: one rx-usecs window over every block (memory: full polls run)
        "backwards",  # timestamps that go back now and then (iter_polls: arrivals checked in capture order)
        "spread",  # windows of 1..70 frames that straddle block boundaries, some ending with a full poll
    ],
)
def test_rx_usecs_windows_across_blocks_equal_reference(times, tmp_path, monkeypatch):
    """rx-usecs on the batch path (pollcache ``_polls_rx_usecs``): a window opened in one block continues in the
    next (its poll time is kept), its full polls are final, and a window that ended with a full poll gets its
    empty repoll (iter_polls) — whole JSON documents equal to the reference path's."""
    rng = random.Random(7)
    frames = [f for _, f in synth_frames(Scenario(flows=3, frames=300, interleave=5))]
    if times == "equal":
        ts = [5_000_000] * len(frames)
    elif times == "backwards":
        ts = [100_000 + i * 3000 - (40_000 if i % 37 == 0 else 0) for i in range(len(frames))]
    else:
        ts, t = [], 0
        for _ in frames:
            t += rng.choice([100, 200, 900, 20_000, 40_000])
            ts.append(t)
    path = tmp_path / "w.pcap"
    with PcapWriter(path) as w:
        for t, f in zip(ts, frames, strict=True):
            w.write(t, f)
    for block in (2048, 9000):
        monkeypatch.setattr(pollcache, "BLOCK", block)
        cfg = ReplayConfig(poll=PollModel.parse("rx-usecs:16"))
        got, batch = _run(path, cfg)
        assert batch is not None
        assert got == _doc(path, replace(cfg, fast_path=False)), (times, block)


# -- cases a fuzzer found (each once differed between the paths) ---------------------------------------------------
def _pcap(path: Path, frames: list[bytes], step_ns: int = 1000) -> Path:
    with PcapWriter(path) as w:
        for i, f in enumerate(frames):
            w.write(1_000_000_000 + i * step_ns, f)
    return path


def test_equal_udp_and_tcp_checksum_errors_are_part_of_the_key(tmp_path):
    """With a non-zero, wrong outer UDP checksum the stack converts it (``skb_gro_checksum_try_convert``): the inner
    TCP check then passes exactly when the TCP error equals the UDP one. Two polls with the same "UDP bad, TCP bad"
    verdicts but different errors must not share a cache entry."""
    f = bytearray(build_frame(FrameSpec(outer_csum="computed", timestamps=False, payload=100)))
    f[100] ^= 0x12
    f[101] ^= 0x34  # the TCP checksum is wrong, and so is the UDP one, by the same amount
    same_error = bytes(f)
    f[41] ^= 1  # the UDP checksum field: now the errors differ
    other_error = bytes(f)
    path = _pcap(tmp_path / "c.pcap", [other_error, same_error], step_ns=1_000_000)
    cfg = ReplayConfig(poll=PollModel("gap", 5.0))  # one poll per frame
    assert _doc(path, cfg) == _doc(path, replace(cfg, fast_path=False))


def test_zero_and_computed_outer_checksums_name_two_flows(tmp_path):
    z = FrameSpec(outer_csum="zero", timestamps=False)
    c = replace(z, outer_csum="computed")
    frames = [build_frame(s) for s in flow_specs(z, [1000] * 3)]
    frames += [build_frame(s) for s in flow_specs(c, [1000] * 3, seq0=5_000_000)]
    frames += [build_frame(s) for s in flow_specs(replace(z, sport=40001), [1000] * 3)]
    path = _pcap(tmp_path / "z.pcap", frames)
    for cfg in (ReplayConfig(), ReplayConfig(resegment="auto")):
        assert _doc(path, cfg) == _doc(path, replace(cfg, fast_path=False))


def test_a_flow_named_by_an_inner_fragment_keeps_its_class(tmp_path):
    """The decoder names a flow by its first frame: an inner fragment (no ports) makes it ``tunnel_other``, and the
    TCP frames with ports 0/0 that follow belong to it (no MSS tracked for --resegment auto)."""
    base = FrameSpec(sport=0, dport=0, timestamps=False)
    frames = [build_frame(replace(base, mf=True, df=False, payload=200))]
    frames += [build_frame(s) for s in flow_specs(base, [1398] * 10)]
    path = _pcap(tmp_path / "f.pcap", frames)
    for cfg in (ReplayConfig(), ReplayConfig(resegment="auto")):
        assert _doc(path, cfg) == _doc(path, replace(cfg, fast_path=False))


@pytest.mark.parametrize("seed", range(4))
def test_batch_path_reads_gzip_and_equals_the_reference(seed, tmp_path, monkeypatch):
    """A gzip-compressed classic pcap takes the batch path (capture/chunks.py reads the decompressed stream in
    blocks) and gives the reference path's document, whole and cut short inside a record."""
    import gzip

    rng = random.Random(2000 + seed)
    frames, cfg = random_scenario(rng)
    cfg = _eligible(cfg, rng)
    plain = tmp_path / "s.pcap"
    _write(plain, frames, repeat=2)
    data = gzip.compress(plain.read_bytes())
    gz = tmp_path / "s.pcap.gz"
    monkeypatch.setattr(pollcache, "BLOCK", rng.choice([2048, 65536]))
    for blob in (data, data[: len(data) * 2 // 3]):
        gz.write_bytes(blob)
        got, batch = _run(gz, cfg)
        assert batch is not None  # the batch path ran
        assert got == _doc(gz, replace(cfg, fast_path=False))


def _write_pcapng(path: Path, frames, repeat: int, sll_section: bool = False) -> None:
    """``_write``'s records as pcapng (dpkt's writer, one interface named eth0, µs timestamps); with
    ``sll_section`` a second section follows whose interface, also named eth0 (one device: both are replayed), is
    Linux cooked v1 and carries the first 50 frames again (decoded one by one: ``l2_normalize``)."""
    import dpkt

    span = frames[-1][0] - frames[0][0] + 1_000_000
    with open(path, "wb") as g:
        name = dpkt.pcapng.PcapngOptionLE(code=2, data=b"eth0")
        end = dpkt.pcapng.PcapngOptionLE(code=dpkt.pcapng.PCAPNG_OPT_ENDOFOPT)
        idb = dpkt.pcapng.InterfaceDescriptionBlockLE(linktype=1, snaplen=65535, opts=[name, end])
        w = dpkt.pcapng.Writer(g, shb=dpkt.pcapng.SectionHeaderBlockLE(), idb=idb)
        for r in range(repeat):
            for ts, f in frames:
                w.writepkt(f, ts=(ts + r * span) / 1e9)
        if sll_section:
            idb = dpkt.pcapng.InterfaceDescriptionBlockLE(linktype=113, snaplen=65535, opts=[name, end])
            w = dpkt.pcapng.Writer(g, shb=dpkt.pcapng.SectionHeaderBlockLE(), idb=idb)
            for ts, f in frames[:50]:
                sll = struct.pack("!HHH8s", 0, 1, 6, f[6:12] + bytes(2)) + f[12:]
                w.writepkt(sll, ts=(ts + repeat * span) / 1e9)


@pytest.mark.parametrize("seed", range(6))
def test_batch_path_reads_pcapng_and_equals_the_reference(seed, tmp_path, monkeypatch):
    """A pcapng file whose interfaces are all replayed takes the batch path (capture/chunks.py ``RecordBlocks``: the
    record reader's records packed into blocks, each with its interface's link type) and gives the reference
    path's document; a second section with a Linux-cooked interface of the same name included."""
    rng = random.Random(3000 + seed)
    frames, cfg = random_scenario(rng)
    cfg = _eligible(cfg, rng)
    ng = tmp_path / "s.pcapng"
    _write_pcapng(ng, frames, repeat=2, sll_section=seed % 2 == 1)
    monkeypatch.setattr(pollcache, "BLOCK", rng.choice([2048, 65536]))
    got, batch = _run(ng, cfg)
    assert batch is not None  # the batch path ran
    assert got == _doc(ng, replace(cfg, fast_path=False))


@pytest.mark.parametrize("poll", ["budget", "gap:3", "rx-usecs:16"])
def test_batch_path_equals_reference_on_the_overlay_node_mix(poll, tmp_path, monkeypatch):
    """The overlay-node mix (synth_mix.py: 48 bidirectional connections, bursts of 1–16 frames, delayed ACKs, PSH,
    timestamps, a quarter with outer checksums), where nearly every poll is new: as pcap and as pcapng."""
    from gro_replay.synth_mix import OverlayMix, mix_frames

    frames = list(mix_frames(OverlayMix(frames=3000, seed=5)))
    path = tmp_path / "m.pcap"
    with PcapWriter(path) as w:
        for ts, f in frames:
            w.write(ts, f)
    ng = tmp_path / "m.pcapng"
    _write_pcapng(ng, frames, repeat=1)
    monkeypatch.setattr(pollcache, "BLOCK", 200_000)
    cfg = ReplayConfig(poll=PollModel.parse(poll))
    for p in (path, ng):
        got, batch = _run(p, cfg)
        assert batch is not None
        assert got == _doc(p, replace(cfg, fast_path=False)), p


def _observed(path, cfg) -> tuple:
    """The ``--trace`` text (every kernel tagged), explain's per-flow deliveries, the JSON document and the batch
    path's poll counts of one replay with both observers."""
    from gro_replay.report.explain import FlowDeliveries
    from gro_replay.report.pcapout import Observers
    from gro_replay.report.trace import TraceWriter

    out = io.StringIO()
    deliveries = FlowDeliveries()
    r = replay_capture(str(path), cfg, Observers(TraceWriter(out, tag=True), deliveries))
    doc = json.dumps(without_engine(document(r)), sort_keys=True, default=str)
    return (out.getvalue(), dict(deliveries.devices), dict(deliveries.aggregates), doc), r.batch


@pytest.mark.parametrize("seed", range(8))
def test_trace_and_explain_from_cached_events_equal_reference(seed, tmp_path, monkeypatch):
    """--trace and explain's observer on the batch path: polls answered by the cache hand the observers their
    recorded delivery events (pollcache ``_hit``) — the trace text (order, times, skb addresses, lengths), the
    per-flow deliveries and the document equal the reference path's."""
    rng = random.Random(4000 + seed)
    frames, cfg = random_scenario(rng)
    cfg = _eligible(cfg, rng)
    if cfg.poll.kind == "budget" and len(frames) >= cfg.weight:
        frames = frames[: len(frames) // cfg.weight * cfg.weight]
    path = tmp_path / "s.pcap"
    _write(path, frames, repeat=3)
    monkeypatch.setattr(pollcache, "BLOCK", rng.choice([2048, 65536]))
    got, batch = _observed(path, cfg)
    want, ref = _observed(path, replace(cfg, fast_path=False))
    assert batch is not None and ref is None
    assert got == want


@pytest.mark.parametrize("kind", ["bulk", "mix"])
def test_trace_from_cached_events_on_bulk_and_mix(kind, tmp_path, monkeypatch):
    from gro_replay.synth_mix import OverlayMix, mix_frames

    path = tmp_path / "c.pcap"
    if kind == "bulk":
        write_scenario(path, Scenario(frames=3000, pause_every=100, pause_ns=50_000))
    else:
        with PcapWriter(path) as w:
            for ts, f in mix_frames(OverlayMix(frames=3000, seed=9)):
                w.write(ts, f)
    monkeypatch.setattr(pollcache, "BLOCK", 100_000)
    got, batch = _observed(path, ReplayConfig())
    want, _ = _observed(path, ReplayConfig(fast_path=False))
    assert got == want
    if kind == "bulk":
        assert batch["polls_cached"] > 2 * batch["polls_simulated"], batch


def test_an_observer_of_skb_bytes_keeps_the_reference_path(tmp_path):
    """The pcap writer reads each skb's bytes, which cached events do not hold: such an observer (alone or
    beside the trace writer) turns the batch path off."""
    from gro_replay.report.pcapout import Observers
    from gro_replay.report.trace import TraceWriter

    path = tmp_path / "c.pcap"
    write_scenario(path, Scenario(frames=300))

    def bytes_reader(kernel, stage, dev, skb, now_ns):
        pass

    for obs in (bytes_reader, Observers(TraceWriter(io.StringIO(), tag=True), bytes_reader)):
        assert not engine_path.served_from_events(obs)
        assert replay_capture(str(path), ReplayConfig(), obs).batch is None
    assert engine_path.served_from_events(TraceWriter(io.StringIO(), tag=False))


def test_trace_with_the_event_budget_spent_equals_reference(tmp_path, monkeypatch):
    """When the cache holds ``MAX_EVENTS`` delivery events it records no more keys (memory stays bounded): later
    new polls are simulated, known ones still answered — the same trace and document."""
    path = tmp_path / "c.pcap"
    write_scenario(path, Scenario(flows=5, frames=400, interleave=8, outer_csum="computed"))
    monkeypatch.setattr(pollcache, "MAX_EVENTS", 12)
    got, batch = _observed(path, ReplayConfig())
    want, _ = _observed(path, ReplayConfig(fast_path=False))
    assert got == want
    assert batch["polls_cached"] > 0, batch


@pytest.mark.parametrize("poll", ["budget", "gap:3", "rx-usecs:16"])
def test_batch_path_equals_reference_with_flows_retired_between_cached_polls(poll, tmp_path, monkeypatch):
    # 4 bulk flows in bursts of 16 segments each, 1 ms apart (the polls repeat: the cache answers them), then 20 ms
    # of silence (> the 5 ms idle timeout: all four are retired, their cached polls dropped with their counts
    # added), then the same keys again: 4 new flows (a returning key starts a new flow), whose polls are recorded
    # anew. Read in small blocks, so that polls and retirements straddle block boundaries.
    monkeypatch.setattr(pollcache, "BLOCK", 8192)
    frames, t = [], 0
    for _phase in range(2):
        for burst in range(6):
            for k in range(16):
                for f in range(4):
                    seq = 1000 + (burst * 16 + k) * 1000
                    spec = FrameSpec(outer_csum="zero", sport=40000 + f, seq=seq, payload=1000)
                    frames.append((t, build_frame(spec)))
                    t += 100
            t += 1_000_000
        t += 20_000_000
    path = tmp_path / "bulk.pcap"
    _write(path, frames, 1)
    cfg = ReplayConfig(poll=PollModel.parse(poll), flow_idle_timeout_ns=5_000_000)
    a, batch = _run(path, cfg)
    b, ref = _run(path, replace(cfg, fast_path=False))
    assert ref is None and batch is not None and batch["polls_cached"] > 0
    assert a == b
    k = json.loads(a)["kernels"][0]
    assert k["flows_summary"]["flows"] == 8 and k["flows_summary"]["retired"] == 4
    assert [r["phys"]["segments"] for r in k["flows"]] == [96] * 8


def test_tunnel_devices_listed_by_name_on_both_paths(tmp_path):
    """A poll holding a Geneve and a VXLAN flow: the order in which the two tunnel devices first deliver differs
    between the paths (the batch path places cached runs), so the document lists them by name. Values from the
    rules (gro-spec §4.4/§4.5): both flows have outer checksum 0, so pre-fix udp_gro_receive refuses every frame and
    each device's gro_cells merges its flow's 3 frames of a poll into 1 skb; post-fix the phys stage merges them
    and each device passes 1 aggregate up per poll. Two polls (1 ms apart, gap:5): 2 skbs per device."""
    g = FrameSpec(encap="geneve", timestamps=False)
    v = FrameSpec(timestamps=False, udp_sport=50000)
    first = [build_frame(s) for s in flow_specs(g, [1000] * 3) + flow_specs(v, [1000] * 3)]
    second = [
        build_frame(s)
        for s in flow_specs(v, [1000] * 3, seq0=10_000) + flow_specs(g, [1000] * 3, seq0=10_000)
    ]
    path = tmp_path / "mixed.pcap"
    with PcapWriter(path) as w:
        for i, f in enumerate(first):
            w.write(1_000_000_000 + i * 1000, f)
        for i, f in enumerate(second):
            w.write(1_001_000_000 + i * 1000, f)
    cfg = ReplayConfig(poll=PollModel("gap", 5.0))
    got = _doc(path, cfg)
    assert got == _doc(path, replace(cfg, fast_path=False))
    for k in json.loads(got)["kernels"]:
        assert list(k["stages"]["tunnel"]["devices"].items()) == [("geneve0", 2), ("vxlan0", 2)], k["name"]


def test_frames_at_the_gro_recursion_limit_equal_the_reference(tmp_path):
    """Inner VLAN tags lengthen the gro_receive chain (include/net/gro.h GRO_RECURSION_LIMIT 15, counted calls:
    tests/kernel/test_gro_recursion.py): 10 tags flush each frame at the phys device, 9 merge. Tagged frames are
    not of the batch path's common layout (packet/columns.py: inner untagged Ethernet), so both paths run them
    through the kernels; mixed with untagged flows that the poll cache keys, the documents are the same."""
    sys.path.insert(0, str(Path(__file__).resolve().parent / "kernel"))
    from test_gro_recursion import deep

    plain = [build_frame(s) for s in flow_specs(FrameSpec(timestamps=False), [1000] * 4, seq0=9_000_000)]
    frames = (plain + deep(10, n=4) + deep(9, n=4)) * 3
    path = _pcap(tmp_path / "deep.pcap", frames)
    cfg = ReplayConfig()
    doc = _doc(path, cfg)
    assert doc == _doc(path, replace(cfg, fast_path=False))
    assert '"gro_recursion_inc_test:GRO_RECURSION_LIMIT"' in doc
