"""Flow runs cut into pieces (sim/runs.py ``run_keys``, sim/compose.py's argument) against the reference path.

A flow's frames in a poll are cut after each frame that ends its packet in ``tcp_gro_receive`` (PSH, FIN, RST, SYN,
URG, no payload: net/ipv4/tcp_offload.c ``out_check_final``). A piece that is not its flow's last is served only
from a recording that held nothing after its last frame. Every case compares the batch path's whole JSON document
with the frame-by-frame reference path's (``ReplayConfig(fast_path=False)``), as tests/test_runs.py does.
"""

from __future__ import annotations

import random
from dataclasses import replace

from test_runs import MSS, _Conn, _reasons, _replayed

from gro_replay import pollcache
from gro_replay.kernel import reasons as R
from gro_replay.kernel.model import K_5_12
from gro_replay.sim import ReplayConfig


def _engines(monkeypatch) -> list:
    """The batch replays the test creates (``BatchReplay``), to read what their composer learnt."""
    made: list = []
    init = pollcache.BatchReplay._init_runs

    def spy(self, rep):
        made.append(self)
        init(self, rep)

    monkeypatch.setattr(pollcache.BatchReplay, "_init_runs", spy)
    return made


def _polls(seed: int, n_conns: int, n_polls: int, most: int, frames_of) -> list[list[bytes]]:
    """``n_polls`` polls, each of 1 to ``most`` of ``n_conns`` connections (``_Conn``, outer checksums computed) in
    random order, each connection's frames in it ``frames_of(connection, rng)``."""
    rng = random.Random(seed)
    conns = [_Conn(i, "computed") for i in range(n_conns)]
    return [
        [f for c in rng.sample(conns, rng.randint(1, most)) for f in frames_of(c, rng)]
        for _ in range(n_polls)
    ]


def test_writes_in_new_combinations_are_served_from_one_recording_per_write(tmp_path, monkeypatch):
    """Four connections, each poll one or two of them with one to three application writes each, of 2, 5 or 8
    full segments, the last one with PSH (tcp_gro_receive flushes the packet it completes: nothing of the flow is
    held after it). Whole, a connection's frames in a poll make 3 + 9 + 27 different runs; cut after each PSH, they
    are the three writes, whatever comes before or after them: 3 recordings (the connections share one header shape
    without their names, sim/runs.py). A poll holds at most two connections' three 8-segment writes: 48 frames,
    below the NAPI weight of 64."""
    made = _engines(monkeypatch)

    def writes(c: _Conn, rng: random.Random) -> list[bytes]:
        frames = []
        for _w in range(rng.randint(1, 3)):
            n = rng.choice([2, 5, 8])
            frames += [c.segment(MSS, j == n - 1) for j in range(n)]
        return frames

    polls = _polls(5, 4, 150, 2, writes)
    want, counts = _replayed(tmp_path, polls, ReplayConfig(kernels=(K_5_12,)))
    assert counts["runs_recorded"] == 3, counts
    assert counts["polls_composed"] > 50, counts
    assert _reasons(want, "phys").get(R.TCP_FLAGS_PSH_FIN, 0) > 0
    assert made[0]._held_pieces == set()


def test_a_piece_that_still_holds_a_packet_is_not_cut_off(tmp_path, monkeypatch):
    """One inner flow on two outer UDP source ports (two flows to udp_gro_receive: ``same_flow`` compares the
    ports): a full segment on port A (held), one with PSH on port B (nothing of port B held: not held itself), then
    two more on port A, the last with PSH. After the PSH of port B the segment of port A is still held, so the flow
    is not cut there: the recording of the first two frames says so (``ends_held``), the poll runs whole, and later
    polls are composed of the flow's four frames as one run. The held segment then meets the third, which does not
    follow it (the PSH segment between them took its sequence numbers): ``tcp_gro_receive`` ends it, seq_gap."""
    made = _engines(monkeypatch)
    monkeypatch.setattr(pollcache, "BLOCK", 65536)  # runs are cut block by block: the next block knows

    def two_ports(c: _Conn, _rng: random.Random) -> list[bytes]:
        a = c.segment(MSS, False)
        main, c.data = c.data, replace(c.data, udp_sport=c.data.udp_sport + 1)
        b = c.segment(MSS, True)
        c.data = main
        return [a, b, c.segment(MSS, False), c.segment(MSS, True)]

    polls = _polls(9, 5, 120, 3, two_ports)
    want, counts = _replayed(tmp_path, polls, ReplayConfig(kernels=(K_5_12,)))
    assert len(made[0]._held_pieces) == 1
    assert counts["polls_composed"] > 50, counts
    assert _reasons(want, "phys").get(R.TCP_SEQ, 0) > 0
