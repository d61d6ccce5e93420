"""packet/csum.py against a literal RFC 1071 loop (16-bit big-endian words, end-around carry)."""

import random

from gro_replay.packet.csum import csum_add, csum_fold, csum_partial, csum_sub, pseudo4, pseudo6


def rfc1071_sum(b: bytes) -> int:
    if len(b) & 1:
        b += b"\0"
    s = 0
    for i in range(0, len(b), 2):
        s += (b[i] << 8) | b[i + 1]
        s = (s & 0xFFFF) + (s >> 16)
    return s


def test_csum_partial_matches_rfc1071_on_both_paths():
    rng = random.Random(1071)
    # lengths on both sides of the big-integer / numpy switch, odd and even, at odd and even offsets
    for n in (0, 1, 2, 3, 20, 21, 1398, 1451, 4095, 4096, 4097, 9001, 65000):
        for _ in range(5):
            start = rng.randrange(0, 3)
            buf = bytes(rng.randrange(256) for _ in range(n + start + 2))
            assert csum_partial(buf, start, start + n) == rfc1071_sum(buf[start : start + n])


def test_csum_partial_zero_and_negative_zero():
    # all-zero data sums to 0; data whose words add up to a multiple of 0xFFFF folds to 0xFFFF (RFC 1071)
    assert csum_partial(b"\0" * 40) == 0
    assert csum_partial(b"\xff\xff") == 0xFFFF
    assert csum_partial(b"\x80\x00\x7f\xff") == 0xFFFF


def test_ones_complement_helpers():
    assert csum_add(0xFFFF, 1) == 1  # end-around carry
    assert csum_sub(5, 5) in (0, 0xFFFF)
    assert csum_fold(0xFFFF) == 0


def test_pseudo_headers_match_rfc1071_over_the_packed_header():
    s, d = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
    assert pseudo4(s, d, 1480, 17) == rfc1071_sum(s + d + bytes([0, 17]) + (1480).to_bytes(2, "big"))
    s6, d6 = bytes(range(16)), bytes(range(16, 32))
    packed = s6 + d6 + (70000).to_bytes(4, "big") + bytes([0, 0, 0, 6])
    assert pseudo6(s6, d6, 70000, 6) == rfc1071_sum(packed)
