"""Whole-poll key numbers (sim/poll_keys.py): a poll is looked up in the poll cache only when its key's number
is among those of the recorded keys, so equal keys must give equal numbers (wherever the poll lies in its block,
whatever its sequence numbers and IPv4 IDs that the key holds only relative to the poll's first frame), and a
number must follow every part of the key that differs. tests/test_pollcache.py compares whole documents with
the reference path, where polls are answered from the cache this way."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np

from gro_replay.packet.build import ACK, PSH, FrameSpec, build_frame
from gro_replay.packet.columns import analyse
from gro_replay.sim.poll_keys import BlockKeys, KnownPolls

SPEC = FrameSpec(inner_src="10.244.1.1", inner_dst="10.244.2.1", sport=33000, dport=8080, outer_csum="zero")


def _poll(seq: int, ip_id: int, sizes=(1398, 1398, 600), flags=ACK, spec=SPEC) -> list[bytes]:
    out = []
    for k, size in enumerate(sizes):
        out.append(build_frame(replace(spec, seq=seq, payload=size, ip_id=ip_id + k, flags=flags)))
        seq += size
    return out


def _keys(polls: list[list[bytes]], efids=None) -> BlockKeys:
    frames = [f for p in polls for f in p]
    buf = b"".join(frames)
    caplen = np.array([len(f) for f in frames], np.int64)
    data = np.concatenate(([0], np.cumsum(caplen)[:-1])).astype(np.int64)
    col = analyse(buf, data, caplen, {4789}, set())
    assert col.common.all()
    sizes = np.array([len(p) for p in polls], np.int64)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    ch = SimpleNamespace(caplen=caplen)
    return BlockKeys(col, ch, np.arange(len(frames)), starts, sizes, efids)


def test_equal_keys_equal_numbers_anywhere_in_the_block():
    polls = [
        _poll(1000, 7),
        _poll(5_000_000, 900),
        _poll(1000, 7, flags=ACK | PSH),
        _poll(1000, 7, (1398, 600)),
    ]
    bk = _keys(polls)
    keys = [bk.key(p) for p in range(len(polls))]
    assert keys[0] == keys[1]  # sequence numbers and IDs relative to the poll's first frame
    assert bk.numbers[0] == bk.numbers[1]
    assert len(set(keys)) == 3 and len(set(bk.numbers.tolist())) == 3


def test_numbers_follow_flow_ids_and_lengths():
    other = replace(SPEC, udp_sport=40007)  # another outer source port: another kv row
    polls = [_poll(1000, 7), _poll(1000, 7, (1398, 1398, 601)), _poll(1000, 7, spec=other), _poll(1000, 7)]
    bk = _keys(polls, efids=np.array([1, 1, 1, 1, 1, 1, 2, 2, 2, 3, 3, 3], np.int64))
    assert len({bk.key(p) for p in range(4)}) == 4  # the last poll names another flow (retired or renamed)
    assert len(set(bk.numbers.tolist())) == 4


def test_a_poll_with_an_entry_decoded_one_by_one_has_no_key():
    polls = [_poll(1000, 7), _poll(1000, 7)]
    bk = _keys(polls)
    bk2 = BlockKeys(bk.col, bk.ch, np.array([0, 1, 2, -1, 4, 5]), bk.starts, bk.sizes, None)
    assert bk2.cached.tolist() == [True, False] and bk2.key(1) is None


def test_known_numbers_forget_dropped_keys_past_the_limit():
    entries: dict = {}
    known = KnownPolls(entries, 4)
    for n in range(6):
        key = bytes([n])
        entries[key] = n
        known.add(key, 100 + n)
        if n % 2:
            del entries[key]  # dropped by the cache (a flow retired)
    assert 105 in known  # dropped but still listed: it only makes a key be built and looked up
    assert 101 not in known  # forgotten when the numbers passed the limit at the fifth
    entries[b"x"] = 6
    known.add(b"x", 200)  # past the limit again: the dropped ones go, the recorded ones stay
    assert [n in known for n in (100, 101, 102, 103, 104, 105, 200)] == [1, 0, 1, 0, 1, 0, 1]


def _bad_tcp(poll: list[bytes], k: int) -> list[bytes]:
    """``poll`` with frame ``k``'s TCP checksum wrong (the kernel's ``csum_fold`` of it is not 0): only its
    verdict bits and residual differ, not its headers nor its number."""
    seq = 1000 + sum(1398 for _ in range(k))
    out = list(poll)
    out[k] = build_frame(replace(SPEC, seq=seq, payload=1398, ip_id=7 + k, flags=ACK, tcp_csum="bad"))
    return out


def test_consecutive_equal_polls_share_one_key_and_differences_in_any_column_part_them():
    """A poll whose key equals the previous poll's gets the same bytes object (hashed once, compared by identity
    in the poll cache); a poll whose number equals the previous one's but whose rows differ in the relative
    sequence numbers, the window or a checksum verdict gets its own key. Polls of one size and of several sizes
    (each compared with the previous poll of its own size)."""
    a = _poll(1000, 7)
    gap = _poll(1000, 7, (1398, 1398, 600))
    gap[1] = build_frame(replace(SPEC, seq=1000 + 1399, payload=1398, ip_id=8, flags=ACK))  # a byte missing
    win = list(a)
    win[2] = build_frame(replace(SPEC, seq=1000 + 2 * 1398, payload=600, ip_id=9, flags=ACK, window=999))
    bad = _bad_tcp(a, 0)
    for polls, same, differ in [
        # one size: every candidate compared with the poll one size before it
        (
            [a, _poll(70_000, 300), gap, win, bad, bad, a],
            [(0, 1), (4, 5)],
            [(1, 2), (2, 3), (3, 4), (5, 6)],
        ),
        # several sizes
        (
            [a, _poll(50, 1), _poll(1000, 7, (1398, 600)), _poll(9, 2, (1398, 600)), bad, a, a],
            [(0, 1), (2, 3), (5, 6)],
            [(1, 2), (3, 4), (4, 5)],
        ),
    ]:
        bk = _keys(polls)
        keys = [bk.key(p) for p in range(len(polls))]
        for p, q in same:
            assert keys[p] is keys[q]
        for p, q in differ:
            assert keys[p] != keys[q]
        assert keys[6] == keys[0] and bk.numbers[4] == bk.numbers[0]  # same number, other verdicts


def test_consecutive_polls_of_other_flows_get_their_own_keys():
    polls = [_poll(1000, 7)] * 4
    bk = _keys(polls, efids=np.array([1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2], np.int64))
    keys = [bk.key(p) for p in range(4)]
    assert keys[0] is keys[1] and keys[2] is keys[3] and keys[1] != keys[2]
