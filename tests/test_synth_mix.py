"""The overlay-node mix (gro_replay/synth_mix.py): what each frame must be by the TCP rules it follows.

Rules checked: segments of a connection are contiguous (``seq`` advances by the payload); each application write
ends with PSH (``tcp_push``) and only its last segment carries it; ACKs carry no payload and acknowledge data
already sent (``ack`` ≤ the sender's next ``seq``, never ahead); one ACK per two full segments or per write end
(``__tcp_ack_snd_check``); every ``csum_every``-th connection has a non-zero outer UDP checksum; timestamps never go
backwards; the same mix gives the same bytes.
"""

from __future__ import annotations

import dpkt
import pytest

from gro_replay.packet.build import PSH
from gro_replay.synth_mix import OverlayMix, mix_frames


def _decode(frames):
    out = []
    for ts, buf in frames:
        eth = dpkt.ethernet.Ethernet(buf)
        udp = eth.data.data
        inner = dpkt.ethernet.Ethernet(bytes(udp.data)[8:])
        tcp = inner.data.data
        out.append((ts, eth.data.src, udp.sum, inner.data.src, tcp))
    return out


def test_mix_frames_follow_the_tcp_rules():
    mix = OverlayMix(frames=3000, connections=8, seed=7)
    rows = _decode(mix_frames(mix))
    assert len(rows) == 3000
    assert all(a[0] <= b[0] for a, b in zip(rows, rows[1:], strict=False))
    next_seq: dict[bytes, int] = {}
    data = acks = 0
    for _ts, outer_src, _usum, inner_src, tcp in rows:
        if outer_src == bytes([10, 0, 0, 1]):  # data direction
            data += 1
            key = inner_src + tcp.sport.to_bytes(2, "big")
            if key in next_seq:
                assert tcp.seq == next_seq[key]
            next_seq[key] = (tcp.seq + len(tcp.data)) & 0xFFFFFFFF
            assert 1 <= len(tcp.data) <= mix.mss
            if len(tcp.data) < mix.mss:
                assert tcp.flags & PSH  # a short segment ends its write
        else:
            acks += 1
            assert len(tcp.data) == 0 and not tcp.flags & PSH
    assert data > acks > 0


def test_mix_acks_acknowledge_sent_data_only():
    rows = _decode(mix_frames(OverlayMix(frames=2000, connections=4, seed=3)))
    end: dict[int, int] = {}  # data sport -> next seq
    for _ts, outer_src, _usum, _isrc, tcp in rows:
        if outer_src == bytes([10, 0, 0, 1]):
            end[tcp.sport] = (tcp.seq + len(tcp.data)) & 0xFFFFFFFF
        else:
            assert tcp.dport in end
            assert (end[tcp.dport] - tcp.ack) & 0xFFFFFFFF < 1 << 31  # ack ≤ sent end (mod 2^32)


def test_mix_psh_marks_exactly_the_last_segment_of_each_write():
    mix = OverlayMix(frames=4000, connections=1, seed=11, max_write=16)
    rows = [r for r in _decode(mix_frames(mix)) if r[1] == bytes([10, 0, 0, 1])]
    run = 0
    for _ts, _o, _u, _i, tcp in rows:
        run += 1
        if tcp.flags & PSH:
            assert 1 <= run <= mix.max_write
            run = 0
        else:
            assert len(tcp.data) == mix.mss
    assert run < mix.max_write


@pytest.mark.parametrize("every", [4, 3])
def test_mix_outer_checksums_on_every_nth_connection(every):
    rows = _decode(mix_frames(OverlayMix(frames=2000, connections=12, csum_every=every, seed=5)))
    for _ts, outer_src, usum, _isrc, tcp in rows:
        sport = tcp.sport if outer_src == bytes([10, 0, 0, 1]) else tcp.dport
        conn = sport - 33000
        assert (usum != 0) == (conn % every == every - 1)


def test_mix_is_deterministic():
    a = list(mix_frames(OverlayMix(frames=500, seed=9)))
    b = list(mix_frames(OverlayMix(frames=500, seed=9)))
    c = list(mix_frames(OverlayMix(frames=500, seed=10)))
    assert a == b and a != c
