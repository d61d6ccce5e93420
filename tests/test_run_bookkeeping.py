"""The flow-run engine's bookkeeping (sim/run_serve.py, sim/run_lookup.py, sim/runs.py): work not repeated, answers
unchanged.

Every replay here is compared whole with the reference path (``ReplayConfig(fast_path=False)``): the JSON documents
must be identical, dict order included. The other assertions pin how much work the engine does, each against what
the engine's own argument allows: one lookup per distinct memo (``RunLookup._memo``: equal memos, equal answers), a
poll marked again only for a recording of one of its unknown runs' keys (a lookup reads only the entries under its
run's own key), a run never spanning two polls, and a shape (``Columns.anon``) per kv class.
"""

from __future__ import annotations

import random
from types import SimpleNamespace

import numpy as np
from conftest import batch_and_reference, new_runs_capture

from gro_replay import pollcache
from gro_replay.capture.writer import PcapWriter
from gro_replay.packet.build import ACK, PSH, FrameSpec, build_frame
from gro_replay.packet.columns import V_UDP_ZERO, analyse
from gro_replay.sim import ReplayConfig, run_lookup, run_serve, runs
from gro_replay.synth_mix import OverlayMix, mix_frames


def test_runs_with_equal_memos_are_looked_up_once(tmp_path, monkeypatch):
    # the overlay-node mix: most runs of a block share their key with others. Each ``_look_up`` calls ``_lookup``
    # at most once per distinct memo among its runs (key, context, and the run's lengths or IPv4 IDs where the
    # answer reads them), and far fewer times than it has runs
    path = tmp_path / "mix.pcap"
    with PcapWriter(path) as w:
        for ts, f in mix_frames(OverlayMix(frames=6000, seed=5)):
            w.write(ts, f)
    calls = {"lookup": 0}
    lookup = run_lookup.RunLookup._lookup
    look_up = run_serve.RunServe._look_up
    seen = []  # (runs looked up, distinct memos, _lookup calls) per _look_up

    def counted_lookup(self, *a):
        calls["lookup"] += 1
        return lookup(self, *a)

    def counted(self, rs, lists, js, full, m):
        memos = {
            self._memo(rs, j, lists.bounds[j], lists.bounds[j + 1], b"F" if full[p] else b"")
            for j, p in zip(js.tolist(), rs.poll[js].tolist(), strict=True)
        }
        calls["lookup"] = 0
        out = look_up(self, rs, lists, js, full, m)
        seen.append((len(js), len(memos), calls["lookup"]))
        return out

    monkeypatch.setattr(run_lookup.RunLookup, "_lookup", counted_lookup)
    monkeypatch.setattr(run_serve.RunServe, "_look_up", counted)
    got, want, counts = batch_and_reference(path, ReplayConfig())
    assert got == want
    assert counts["polls_served"] > 100, counts
    assert all(n <= d for _r, d, n in seen), seen
    assert sum(n for _r, _d, n in seen) * 3 < sum(r for r, _d, _n in seen), seen


def test_a_poll_is_marked_again_only_for_a_recording_of_its_unknown_keys(tmp_path, monkeypatch):
    # 500 polls (gap:3: each triple is one poll), each with a run of flow a (one PSH frame: one key) and a run of
    # flow b never seen before (a random TCP window on its second frame: a key of its own). Every poll records b's
    # run; no poll's unknown b key is another's, so after the block that recorded a's key no poll is marked again
    # in its turn (each recording of a b key is of the poll being composed, after its mark was used)
    path = new_runs_capture(tmp_path / "new-runs.pcap")
    marked_again = []  # the marks (one per block) of each poll marked again in its turn
    marks = []
    servable = run_serve.RunServe._servable

    def noted(self, m, polls):
        polls = list(polls)
        if m not in marks:
            marks.append(m)
        if len(polls) == 1:
            marked_again.append(marks.index(m))
        return servable(self, m, polls)

    monkeypatch.setattr(pollcache, "BLOCK", 40_000)
    monkeypatch.setattr(run_serve.RunServe, "_servable", noted)
    got, want, counts = batch_and_reference(path, ReplayConfig())
    assert got == want
    assert counts["polls_composed"] == 500, counts
    assert len(marks) >= 4, len(marks)  # several blocks
    assert set(marked_again) <= {0}, marked_again  # only in the block where a's key was first recorded


def test_pieces_never_join_two_polls():
    # two inner flows whose groups (packet/columns.py: a hash of the inner addresses and ports) g and
    # g ^ (1 * G) ^ (2 * G) made one value of ``group ^ poll * G`` for polls 1 and 2 (G the golden-ratio multiplier
    # the pieces used to mix polls with): their frames, in different polls, are still different runs
    gold = 0x9E3779B97F4A7C15
    g1 = 0x1234_5678_9ABC_DEF0
    g2 = g1 ^ ((1 * gold) % (1 << 64)) ^ ((2 * gold) % (1 << 64))
    col = SimpleNamespace(
        group=np.array([g1, g1, g2, g2], np.uint64),
        tflags=np.zeros(4, np.uint8),  # no piece ends but by payload 0: none here
        payload=np.full(4, 100, np.int64),
    )
    idx = np.arange(4)
    rid, more = runs._pieces(col, idx, np.array([1, 1, 2, 2], np.int64), None)
    assert rid.tolist() == [0, 0, 1, 1]
    assert more.tolist() == [False, False]
    # cut after a frame without payload: two pieces of flow g1 in poll 1, the first followed by the second
    col.payload = np.array([0, 100, 100, 100], np.int64)
    rid, more = runs._pieces(col, idx, np.array([1, 1, 2, 2], np.int64), None)
    assert rid.tolist() == [0, 1, 2, 2]
    assert more.tolist() == [True, False, False]


def test_equal_kv_rows_have_equal_anon_rows_in_every_layout():
    # run keys number a frame's shape (``Columns.anon``) by its kv class (sim/runs.py ``run_keys``): frames whose
    # kv rows (and UDP-zero bits) are equal have equal anon rows. Frames of every layout the common path takes
    # (outer IPv4/IPv6, VXLAN/Geneve with and without options, inner IPv4/IPv6), of several flows each, with the
    # fields kv leaves out (IDs, sequence numbers, lengths, checksums) varying
    frames = []
    rng = random.Random(3)
    for outer6 in (False, True):
        for encap, opts in (("vxlan", b""), ("geneve", b""), ("geneve", bytes(8))):
            for inner6 in (False, True):
                for sport in (40001, 40002):
                    for i in range(4):
                        spec = FrameSpec(
                            outer_ipv6=outer6,
                            encap=encap,
                            geneve_options=opts,
                            inner_ipv6=inner6,
                            sport=sport,
                            udp_sport=49152 + sport % 7,
                            seq=rng.randrange(1 << 32),
                            ip_id=rng.randrange(1 << 16),
                            outer_ip_id=rng.randrange(1 << 16),
                            payload=rng.randrange(1, 1400),
                            flags=ACK | (PSH if i % 2 else 0),
                            outer_csum="zero" if i < 2 else "computed",
                        )
                        frames.append(build_frame(spec))
    buf = b"".join(frames)
    caplen = np.array([len(f) for f in frames], np.int64)
    data = np.concatenate([[0], np.cumsum(caplen)[:-1]]).astype(np.int64)
    col = analyse(buf, data, caplen, (4789,), (6081,))
    common = np.flatnonzero(col.common)
    assert len(common) == len(frames)
    zero = (col.vbits[common] & V_UDP_ZERO) != 0
    classes: dict[bytes, int] = {}
    for i, z in zip(common.tolist(), zero.tolist(), strict=True):
        key = col.kv[i].tobytes() + bytes([z])
        j = classes.setdefault(key, i)
        assert col.anon[i].tobytes() == col.anon[j].tobytes()
    assert len(classes) >= 2 * 3 * 2 * 2 * 2  # layouts x flows x flags, some split by the UDP-zero bit
