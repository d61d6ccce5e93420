"""packet/columns.py: layout recognition, checksum verdicts and canonical rows of a block of frames.

Expected verdicts come from how each frame was built (FrameSpec's checksum choices: ``bad`` writes a wrong
checksum, ``ok``/``computed`` a correct one, ``zero`` none — RFC 768/793/791), never from the code under test.
Frames are laid out as pcap records (16-byte header + frame) so that runs of equal length take the strided
summing path and the others the per-frame one.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest

from gro_replay.packet import columns as C
from gro_replay.packet.build import ACK, PSH, FrameSpec, build_frame


def _block(frames: list[bytes]):
    parts, data, off = [], [], 0
    for f in frames:
        parts.append(bytes(16) + f)
        data.append(off + 16)
        off += 16 + len(f)
    caplen = np.array([len(f) for f in frames], np.int64)
    return b"".join(parts), np.array(data, np.int64), caplen


def _analyse(frames):
    buf, data, caplen = _block(frames)
    return C.analyse(buf, data, caplen, (4789, 8472), (6081,))


SPECS = [
    FrameSpec(outer_ipv6=o6, inner_ipv6=i6, encap=enc, geneve_options=opts, payload=pay)
    for o6, i6, (enc, opts), pay in itertools.product(
        (False, True), (False, True), (("vxlan", b""), ("geneve", b""), ("geneve", bytes(8))), (1398, 777)
    )
]


@pytest.mark.parametrize("run", [1, 9], ids=["single", "run-of-9"])
@pytest.mark.parametrize(
    "spec",
    SPECS,
    ids=lambda s: (
        f"o{6 if s.outer_ipv6 else 4}i{6 if s.inner_ipv6 else 4}-{s.encap}{len(s.geneve_options)}-{s.payload}"
    ),
)
def test_checksum_verdicts_follow_how_the_frame_was_built(spec, run):
    choices = list(itertools.product(("zero", "computed", "bad"), ("ok", "bad"), ("ok", "bad")))
    frames, want = [], []
    for outer, ip, tcp in choices:
        s = replace(spec, outer_csum=outer, ip_csum=ip if not spec.inner_ipv6 else "ok", tcp_csum=tcp)
        f = build_frame(s)
        # a computed outer UDP checksum covers the frame as built (a wrong inner checksum included): correct
        v = {"zero": C.V_UDP_ZERO, "computed": 0, "bad": C.V_UDP_BAD}[outer]
        if s.ip_csum == "bad":
            v |= C.V_INNER_IP_BAD
        if tcp == "bad":
            v |= C.V_TCP_BAD
        frames += [f] * run
        want += [v] * run
    col = _analyse(frames)
    assert col.common.all()
    assert col.vbits.tolist() == want
    # the payload length (bytes after the TCP header) is the spec's
    assert set(col.payload.tolist()) == {spec.payload}


def test_a_wrong_outer_ipv4_header_checksum_is_seen():
    f = bytearray(build_frame(FrameSpec()))
    f[24] ^= 0x01  # outer IPv4 header checksum (RFC 791), offset 14 + 10
    col = _analyse([bytes(f), build_frame(FrameSpec())])
    assert col.vbits.tolist() == [C.V_OUTER_IP_BAD | C.V_UDP_ZERO, C.V_UDP_ZERO]


@pytest.mark.parametrize(
    "spec",
    [
        FrameSpec(outer_vlan=7),  # tagged: the decoder strips tags, frame by frame
        FrameSpec(ip_options=bytes(4)),  # inner IPv4 options
        FrameSpec(frag_off=0, mf=True),  # inner fragment
        FrameSpec(udp_dport=9999),  # not a tunnel port
        FrameSpec(pad_to=2000),  # Ethernet padding after the IP packet: lengths do not match the frame
        FrameSpec(inner_ipv6=True, ipv6_ext=[(60, bytes(6))]),  # extension header
    ],
    ids=["vlan", "ip-options", "fragment", "port", "padding", "ipv6-ext"],
)
def test_other_layouts_are_not_common(spec):
    col = _analyse([build_frame(spec), build_frame(FrameSpec())])
    assert col.common.tolist() == [False, True]


def test_a_frame_cut_short_is_not_common():
    f = build_frame(FrameSpec())
    col = _analyse([f[:100], f])
    assert col.common.tolist() == [False, True]


def test_kv_rows_keep_what_gro_compares_and_drop_what_changes_per_segment():
    base = FrameSpec(seq=1000, ip_id=7, outer_ip_id=3, tsval=5, outer_csum="computed")
    same_flow_next = replace(base, seq=2398, ip_id=8, outer_ip_id=4, tsval=6, window=600, ack=9)
    col = _analyse([build_frame(base), build_frame(same_flow_next)])
    assert (col.kv[0] == col.kv[1]).all()
    assert col.group[0] == col.group[1]
    # the varying fields are kept as columns: seq, ack, window, outer and inner IPv4 id, TCP option words
    rel = col.rel[1] - col.rel[0]
    assert rel[C.FIELDS.index("seq")] == 1398
    assert rel[C.FIELDS.index("ack")] == 8
    assert rel[C.FIELDS.index("win")] == 88
    assert rel[C.FIELDS.index("oid")] == 1
    assert rel[C.FIELDS.index("iid")] == 1
    assert rel[C.FIELDS.index("opt1")] == 1  # NOP NOP TS: the second word is TSval (RFC 7323)
    for change in ({"ttl": 63}, {"tos": 2}, {"flags": ACK | PSH}, {"vni": 101}, {"df": False}):
        other = build_frame(replace(base, **change))
        col = _analyse([build_frame(base), other])
        assert not (col.kv[0] == col.kv[1]).all(), change
    other_flow = _analyse([build_frame(base), build_frame(replace(base, sport=40001))])
    assert other_flow.group[0] != other_flow.group[1]


def test_option_words_are_those_within_each_frames_tcp_header_and_zero_past_it():
    """``rel``'s option columns hold the 32-bit words after the 20-byte TCP header up to its data offset
    (RFC 793: doff counts 32-bit words) and 0 past it, where the payload lies: in a block whose frames all have
    one header length and in one whose lengths differ (the same layout, so one pass over both)."""
    words = {k: bytes(range(1, 1 + 4 * k)) for k in (0, 1, 3, 10)}  # k option words, none of them zero
    for ks in ([3, 3, 3], [0, 10, 1, 3]):
        frames = [build_frame(FrameSpec(tcp_options=words[k], payload=64)) for k in ks]
        col = _analyse(frames)
        assert col.common.all()
        for row, k in zip(col.rel.tolist(), ks, strict=True):
            expect = [int.from_bytes(words[k][4 * i : 4 * i + 4], "big") for i in range(k)] + [0] * (10 - k)
            assert row[C.FIELDS.index("opt0") :] == expect, (ks, k)


def test_relative_is_taken_per_base_row_modulo_the_field_width():
    rel = np.zeros((3, len(C.FIELDS)), np.int64)
    rel[:, C.FIELDS.index("seq")] = [0xFFFFFF00, 0x100, 5]
    rel[:, C.FIELDS.index("iid")] = [0xFFFF, 0, 0]
    out = C.relative(rel, np.array([0, 0, 2]))
    assert out[:, C.FIELDS.index("seq")].tolist() == [0, 0x200, 0]
    assert out[:, C.FIELDS.index("iid")].tolist() == [0, 1, 0]
    into = np.zeros((3, len(C.FIELDS) + 2), np.uint32)  # uint32 columns of a wider array (sim/poll_keys.py)
    C.relative(rel, np.array([2, 0, 0]), out=into[:, 1:-1])
    # seq: 0xFFFFFF00 - 5, 0x100 - 0xFFFFFF00 and 5 - 0xFFFFFF00 modulo 2**32; iid modulo 2**16
    assert into[:, 1 + C.FIELDS.index("seq")].tolist() == [0xFFFFFEFB, 0x200, 0x105]
    assert into[:, 1 + C.FIELDS.index("iid")].tolist() == [0xFFFF, 1, 1]
    assert not into[:, [0, -1]].any()


def test_word_sums_of_frames_at_any_offset_and_length():
    """The per-frame sums of frames that do not form equal-length runs (odd and even offsets, odd and even
    lengths, empty frames, frames back to back) equal packet/csum.py ``csum_partial`` (RFC 1071) folded modulo
    0xFFFF: ``csum_partial`` returns the 16-bit folded sum, whose value modulo 0xFFFF is the sum's."""
    import random

    from gro_replay.packet.csum import csum_partial, word_sums

    rng = random.Random(41)
    buf = bytes(rng.randrange(256) for _ in range(60_000))
    starts, lengths, o = [], [], 1
    while True:
        k = rng.choice([0, 1, 2, 3, 59, 60, 1501, rng.randrange(3000)])
        if o + k > len(buf):
            break
        starts.append(o)
        lengths.append(k)
        o += k + rng.choice([0, 0, 1, 16])
    got = word_sums(buf, np.array(starts), np.array(lengths))
    want = [csum_partial(buf, s, s + k) % 0xFFFF for s, k in zip(starts, lengths, strict=True)]
    assert got.tolist() == want
    assert {s & 1 for s in starts} == {0, 1} and {k & 1 for k in lengths} == {0, 1} and 0 in lengths
