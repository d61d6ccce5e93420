"""net/ipv4/af_inet.c ``inet_gro_receive`` / ``inet_gro_flush`` (gro-spec §3.1, §3.3).

From the former tests/test_kernel_rules.py:
Frames are VXLAN over IPv4 (outer UDP checksum 0 unless a test says otherwise), inner IPv4/TCP without options,
1400-byte payloads: one segment is 1490 bytes on the phys device (outer IPv4 20 + UDP 8 + VXLAN 8 + inner Ethernet
14 + inner IPv4 20 + TCP 20 = 90 header bytes) and 1440 on the tunnel device. Skbs are handed to the phys NAPI the
way a driver does (``Rig.skb``); expected values come from the kernel rule cited next to each (gro-spec section,
kernel function, commit), never from the code under test.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from rule_frames import FLUSH_P, K_6_10, POST, _three, fix_outer_ipv4_checksum, frames, specs
from test_kernel_harness import rig

from gro_replay.kernel import reasons as R
from gro_replay.kernel import skbuff
from gro_replay.kernel.model import K_5_11, K_5_12, K_6_18
from gro_replay.packet.build import ACK, PSH


# -- IPv4 (§3.1, §3.3) -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("model", [K_5_11.with_name("pre"), K_5_12, K_6_18])
@pytest.mark.parametrize(
    "change",
    [
        {"ttl": 63},  # inet_gro_receive (≤6.9) / inet_gro_flush (≥6.10): ttl must match
        {"tos": 4},  # tos must match
        {"tos": 1},  # … ECN bits included (selftest ip_ecn)
        {"df": False},  # DF must match
        {"outer_ttl": 63},  # the outer header's fields too
        {"outer_tos": 8},
    ],
    ids=str,
)
def test_inet_gro_receive_header_field_change_flushes_the_held_packet(model, change):
    r = rig(model, nic="unnecessary-tunnel")  # level 1 so that the pre-fix kernel aggregates at phys
    sp = specs(3)
    sp[1:] = [replace(s, **change) for s in sp[1:]]
    assert _three(r, frames(sp)) == FLUSH_P


@pytest.mark.parametrize("model", POST)
@pytest.mark.parametrize(
    "change",
    [{"ip_options": b"\x01\x01\x01\x01"}, {"mf": True}, {"frag_off": 1}, {"ip_csum": "bad"}],
    ids=["options", "mf", "frag_offset", "bad_header_csum"],
)
def test_inet_gro_receive_own_header_flush_overtakes_the_held_packet(model, change):
    r = rig(model)
    sp = specs(3)
    sp[1] = replace(sp[1], **change)
    # version/IHL byte != 0x45, ip_is_fragment, ip_fast_csum: goto out, flush on the skb only — the held packet of
    # the flow stays (gro-spec §3.1 notes); frame 2 then finds a sequence gap and completes it
    assert _three(r, frames(sp)) == (([(1,)], [(0,)]), ([(1,), (0,)], [(2,)]))


@pytest.mark.parametrize("model", POST)
@pytest.mark.parametrize("how", ["padding", "reserved_frag_bit"])
def test_inet_gro_receive_tot_len_or_reserved_bit_flushes_skb_and_completes_p(model, how):
    r = rig(model)
    f = frames(specs(3))
    if how == "padding":
        f[1] = f[1] + b"\0\0\0\0"  # Ethernet padding after the outer datagram: tot_len != skb_gro_len
    else:
        b = bytearray(f[1])
        b[20] |= 0x80  # outer frag_off bit 15 (reserved): (id & ~IP_DF) is non-zero
        f[1] = fix_outer_ipv4_checksum(b)
    # ≤6.9 the own flush is also OR-ed into p->flush; ≥6.10 only into the skb's, and skb_gro_receive refuses a
    # flushed skb: either way tcp_gro_receive returns p as pp and the skb itself is GRO_NORMAL
    assert _three(r, f)[0] == ([(0,), (1,)], [])


@pytest.mark.parametrize("model", POST)
def test_an_own_ip_flush_stays_the_reason_of_a_final_segment(model):
    # frame 1 padded (tot_len != skb_gro_len: inet_gro_receive flushes it) and carrying PSH: it would be passed up
    # for the padding alone, so the padding, set first, is its reason, not tcp_gro_receive's PSH
    r = rig(model)
    sp = specs(3)
    sp[1] = replace(sp[1], flags=ACK | PSH)
    f = frames(sp)
    f[1] = f[1] + b"\0\0\0\0"
    r.poll(f)
    assert r.rec.lens("phys") == [1490, 1494, 1490]  # the padding is trimmed later, in ip_rcv_core
    assert [d.why for d in r.rec.at("phys")][1] == R.INET_TOT_LEN


@pytest.mark.parametrize(
    ("model", "outer_df", "ids", "merged"),
    [
        # outer DF set, outer IDs neither fixed nor incrementing
        (K_5_12, True, [7, 300, 12], True),  # ≤6.9: the inner header's verdict overwrites the outer one
        (K_6_10, True, [7, 300, 12], True),  # 4b0ebbca3e16: outer ID ignored when the outer DF is set
        (K_6_18, True, [7, 300, 12], False),  # 21f7484220ac: outer IDs must be fixed or incrementing
        # outer DF clear, incrementing: every version merges
        (K_5_12, False, [5, 6, 7], True),
        (K_6_18, False, [5, 6, 7], True),
        # outer DF clear, fixed
        (K_5_12, False, [5, 5, 5], False),  # DF clear → the ID must increment by count
        (K_6_10, False, [5, 5, 5], False),
        (K_6_18, False, [5, 5, 5], True),  # f095a358faf2: fixed IDs no longer need DF
    ],
)
def test_inet_gro_flush_outer_ip_id_rules(model, outer_df, ids, merged):
    r = rig(model)
    sp = [replace(s, outer_df=outer_df, outer_ip_id=i) for s, i in zip(specs(3), ids, strict=True)]
    r.poll(frames(sp))
    assert r.rec.lens("phys") == ([4290] if merged else [1490] * 3)


@pytest.mark.parametrize(
    ("model", "lens"),
    [
        # ≤6.9 (inet_gro_receive, v5.10): the inner header's atomic flush_id overwrites the outer verdict
        (K_5_12, [1490 + 3 * 1400]),
        # 4b0ebbca3e16 (v6.10–v6.17), include/net/gro.h inet_gro_flush as applied (net-next v10 2/3, 2024-05-09;
        # unchanged in a 6.17-rc tree, Kingxukai/linux@0291023e): at segment 2 the outer header (DF clear) is
        # checked first against the incrementing rule (ip_fixedid still clear: the ID must step by the count),
        # then the inner header (DF, same ID) sets the one ip_fixedid bit; from segment 3 on the outer header is
        # held to the fixed rule too (the final test compares the step with 0 whenever the bit is set, whatever
        # this header's DF), its step of 2 flushes, and the next held packet starts over: pairs
        (K_6_10, [1490 + 1400, 1490 + 1400]),
        # 21f7484220ac (v6.18): bit 0 for the outer header, bit 1 for the inner one: both rules hold, all merge
        (K_6_18, [1490 + 3 * 1400]),
    ],
    ids=["5.12", "6.10", "6.18"],
)
def test_inet_gro_flush_one_fixedid_bit_for_both_headers(model, lens):
    r = rig(model)
    # outer DF clear with incrementing IDs (specs() steps the outer ID by one), inner DF set with a fixed ID
    sp = [replace(s, outer_df=False, ip_id=9) for s in specs(4)]
    r.poll(frames(sp))
    assert r.rec.lens("phys") == lens


@pytest.mark.parametrize("model", [K_6_10, K_6_18])
def test_inet_gro_flush_ttl_difference_returns_before_the_id(model, monkeypatch):
    # include/net/gro.h inet_gro_flush (4b0ebbca3e16 as applied, and 21f7484220ac): a TTL/TOS/DF difference
    # returns at once, before the ID is read: the flush is named for the header fields only, though the inner ID
    # jumps too, and the batch engine's ID tally notes no inner ID difference (only 6.18's outer ID check, which
    # 4b0ebbca3e16 skips for an outer header with DF set)
    tally: list = []
    monkeypatch.setattr(skbuff, "id_tally", tally)
    r = rig(model)
    sp = specs(2)
    sp[1] = replace(sp[1], ttl=63, ip_id=500)
    r.poll(frames(sp))
    assert [(d.len, d.why) for d in r.rec.at("phys")] == [
        (1490, "tcp_gro_receive:inner_ttl_tos_df"),
        (1490, "napi_complete_done:flush"),
    ]
    outer_id_at = 14 + 4  # Ethernet, then the outer IPv4 header's ID field
    assert [t[1] for t in tally] == ([outer_id_at] if model.inet_gro_checks_outer_id else [])
