"""net/ipv4/tcp_offload.c ``tcp_gro_receive`` / ``tcp_gro_complete`` / ``tcp4_gro_complete`` (gro-spec
§5.5, §6.5).

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
from rule_frames import BASE, K_AB4C, POST, frames, specs
from test_kernel_harness import TCP_FIN, rig

from gro_replay.kernel import reasons as R
from gro_replay.kernel.model import K_5_11, K_5_12, K_6_18
from gro_replay.kernel.skbuff import SKB_GSO_TCP_ACCECN, SKB_GSO_TCP_ECN
from gro_replay.packet.build import ACK, CWR, ECE, FIN, PSH, RST, SYN, URG, build_frame


# -- IPv4 (§3.1, §3.3) -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("model", "gso_fixedid"),
    [(K_5_12, True), (K_6_18, True)],
)
def test_tcp4_gro_complete_marks_fixed_inner_ids(model, gso_fixedid):
    from gro_replay.kernel.skbuff import SKB_GSO_TCP_FIXEDID, SKB_GSO_TCP_FIXEDID_INNER

    r = rig(model)
    r.poll(frames(specs(3, id_step=0)))  # inner IDs 0, 0, 0 with DF: the flow stays "fixed"
    d = r.rec.at("phys")[0]
    assert d.len == 4290
    # ≤6.9: is_atomic → SKB_GSO_TCP_FIXEDID; 6.18: ip_fixedid bit 1 (inner) → SKB_GSO_TCP_FIXEDID_INNER, and the
    # outer IDs (0, 1, 2) increment so bit 0 stays clear
    flag = SKB_GSO_TCP_FIXEDID_INNER if model.inet_gro_checks_outer_id else SKB_GSO_TCP_FIXEDID
    assert bool(d.gso_type & flag) is gso_fixedid
    if model.inet_gro_checks_outer_id:
        assert not d.gso_type & SKB_GSO_TCP_FIXEDID


# -- TCP (§5.5) ---------------------------------------------------------------------------------------------------
def _tcp(r, sizes, changes, model=None):
    sp = specs(len(sizes), sizes)
    for i, ch in changes.items():
        sp[i] = replace(sp[i], **ch)
    r.poll(frames(sp))
    return r.rec.lens("phys")


@pytest.mark.parametrize(
    ("model", "changes", "expected"),
    [
        # f1 has CWR, f2 not
        (K_5_12, {1: {"flags": ACK | CWR}}, [1490, 2890]),  # CWR flushes; a CWR head absorbs non-CWR segments
        (K_6_18, {1: {"flags": ACK | CWR}}, [1490] * 3),  # 4e4f7cefb130: CWR compared with the other flags
        (K_AB4C, {1: {"flags": ACK | CWR}}, [1490] * 3),
        # f1 and f2 have CWR
        (K_5_12, {1: {"flags": ACK | CWR}, 2: {"flags": ACK | CWR}}, [1490] * 3),  # every CWR segment flushes
        (K_6_18, {1: {"flags": ACK | CWR}, 2: {"flags": ACK | CWR}}, [1490] * 3),
        # ab4c8b6f7fcb: no own flush, and both carry CWR
        (K_AB4C, {1: {"flags": ACK | CWR}, 2: {"flags": ACK | CWR}}, [1490, 2890]),
    ],
    ids=[
        "5.12-cwr-plain",
        "6.18-cwr-plain",
        "ab4c-cwr-plain",
        "5.12-cwr-cwr",
        "6.18-cwr-cwr",
        "ab4c-cwr-cwr",
    ],
)
def test_tcp_gro_receive_cwr(model, changes, expected):
    assert _tcp(rig(model), [1400] * 3, changes) == expected


@pytest.mark.parametrize(("model", "flag"), [(K_5_12, SKB_GSO_TCP_ECN), (K_AB4C, SKB_GSO_TCP_ACCECN)])
def test_tcp_gro_complete_marks_a_cwr_head(model, flag):
    r = rig(model)
    cwr = {"flags": ACK | CWR}
    _tcp(r, [1400] * 2, {0: cwr, 1: cwr} if model is K_AB4C else {0: cwr})
    # tcp_gro_complete: th->cwr → SKB_GSO_TCP_ECN, SKB_GSO_TCP_ACCECN from 4e4f7cefb130
    d = r.rec.at("phys")[0]
    assert d.len == 2890 and d.gso_type & flag


@pytest.mark.parametrize("model", POST)
@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({1: {"flags": ACK | ECE}, 2: {"flags": ACK | ECE}}, [1490, 2890]),  # flag word differs
        ({1: {"window": 600}, 2: {"window": 600}}, [1490, 2890]),  # window is in the flag word
        ({1: {"ack": 2}, 2: {"ack": 2}}, [1490, 2890]),  # ack_seq differs
        ({1: {"timestamps": True}, 2: {"timestamps": True}}, [1490, 1502 + 1400]),  # doff differs
        # option bytes differ (4 NOPs vs 3 NOPs + EOL), same doff
        ({1: {"tcp_options": b"\x01" * 4}, 2: {"tcp_options": b"\x01\x01\x01\x00"}}, [1490, 1494, 1494]),
        ({1: {"seq": 1_000_000 + 1400 + 1}, 2: {"seq": 1_000_000 + 2 * 1400 + 1}}, [1490, 2890]),  # seq gap
    ],
    ids=["ece", "window", "ack", "doff", "option_bytes", "seq_gap"],
)
def test_tcp_gro_receive_mismatch_completes_p_and_holds_the_segment(model, changes, expected):
    assert _tcp(rig(model), [1400] * 3, changes) == expected


@pytest.mark.parametrize("model", POST)
def test_tcp_gro_receive_timestamp_value_change_flushes(model):
    r = rig(model)
    sp = specs(3, spec=replace(BASE, timestamps=True))
    sp[1:] = [replace(s, tsval=s.tsval + 1) for s in sp[1:]]
    r.poll(frames(sp))
    # option bytes compared in 4-byte words: a new tsval is a mismatch (selftest tcp_ts); 90 + 12 + 1400
    assert r.rec.lens("phys") == [1502, 2902]


@pytest.mark.parametrize("model", POST)
@pytest.mark.parametrize(
    ("sizes", "changes", "expected"),
    [
        ([1400, 1400, 1400], {1: {"flags": ACK | PSH}}, [2890, 1490]),  # merged, then p completed
        ([1400, 700, 1400], {}, [2190, 1490]),  # len < mss: merged, then p completed
        ([700, 1400, 1400], {}, [790, 2890]),  # len > mss: p completed, new head with mss 1400
        ([1400, 1400, 0], {}, [2890, 90]),  # pure ACK: p completed, the ACK GRO_NORMAL
        ([1400, 1400, 1400], {1: {"flags": ACK | URG}}, [1490] * 3),  # flag word differs → p completed …
        ([1400, 1400, 1400], {1: {"flags": ACK | RST}}, [1490] * 3),  # … and URG/RST/SYN make the segment
        ([1400, 1400, 1400], {1: {"flags": ACK | SYN}}, [1490] * 3),  # … GRO_NORMAL; frame 2 a new head
    ],
    ids=["psh", "len_lt_mss", "len_gt_mss", "pure_ack", "urg", "rst", "syn"],
)
def test_tcp_gro_receive_out_check_final(model, sizes, changes, expected):
    assert _tcp(rig(model), sizes, changes) == expected


_S = BASE.seq
_ACK0 = {"payload": 0}


@pytest.mark.parametrize("model", POST)
@pytest.mark.parametrize(
    ("order", "expected"),
    [
        # ACK at snd_nxt, 1 byte at snd_nxt - 1 (a keepalive or zero-window probe), twice. An ACK with no p held:
        # mss stays 1, out_check_final's len < mss (0 < 1) flushes it at once. The probe with no p: 1 < 1 is false
        # and no flag in URG|PSH|RST|SYN|FIN, so it is held (gso_size: its 1 byte, dev_gro_receive). The next ACK
        # fails the compare's (len - 1) >= mss (0 - 1 read unsigned): the probe is completed, named by the ACK that
        # came (not as an skb without payload), and the ACK flushed as before (mss 1 after the mismatch). The last
        # probe stays held until napi_complete_done flushes the poll.
        (
            [_ACK0, {"payload": 1, "seq": _S - 1}, _ACK0, {"payload": 1, "seq": _S - 1}],
            [(90, R.TCP_PURE_ACK), (91, R.TCP_NEXT_PURE_ACK), (90, R.TCP_PURE_ACK), (91, R.POLL_END)],
        ),
        # the same probes with PSH: out_check_final flushes each at once (PSH), never held
        (
            [_ACK0, {"payload": 1, "seq": _S - 1, "flags": ACK | PSH}] * 2,
            [(90, R.TCP_PURE_ACK), (91, R.TCP_FLAGS_PSH_FIN)] * 2,
        ),
        # small writes of 100 bytes without PSH, each followed by an ACK (seq continuing): held like the probe
        (
            [{"payload": 100}, {"payload": 0, "seq": _S + 100}, {"payload": 100, "seq": _S + 100}],
            [(190, R.TCP_NEXT_PURE_ACK), (90, R.TCP_PURE_ACK), (190, R.POLL_END)],
        ),
        # a SYN carrying 50 bytes (TCP Fast Open: the SYN takes seq _S - 1, its data _S to _S + 49), then ACKs at
        # _S + 50: the SYN flag flushes it at once (URG|RST|SYN), 90 header bytes + 50
        (
            [{"payload": 50, "seq": _S - 1, "flags": SYN, "ack": 0}] + [{"payload": 0, "seq": _S + 50}] * 2,
            [(140, R.TCP_FLAGS_URG_RST_SYN), (90, R.TCP_PURE_ACK), (90, R.TCP_PURE_ACK)],
        ),
    ],
    ids=["probe", "probe_psh", "small_write", "syn_data"],
)
def test_short_segments_among_acks_are_named_by_what_ended_each(model, order, expected):
    # one flow's segments in one poll (gro-spec §5.5, net/ipv4/tcp_offload.c tcp_gro_receive): every skb goes up
    # alone, each named by the condition that ended it, in delivery order (a completed p before the segment that
    # completed it: napi_gro_complete then the segment's GRO_NORMAL)
    r = rig(model)
    r.poll(frames([replace(BASE, **o) for o in order]))
    assert [(d.frames, d.len, d.why) for d in r.rec.at("phys")] == [
        ((i,), n, why) for i, (n, why) in enumerate(expected)
    ]


@pytest.mark.parametrize("model", POST)
def test_tcp_gro_receive_fin_is_merged_and_copied_into_the_held_header(model):
    r = rig(model)
    _tcp(r, [1400] * 3, {1: {"flags": ACK | FIN}})
    d = r.rec.at("phys")
    # FIN may differ (mask), is OR-ed into p's flag word after the merge, and ends the aggregate
    assert [x.len for x in d] == [2890, 1490]
    assert d[0].tcp()[1] & TCP_FIN


@pytest.mark.parametrize("model", POST)
@pytest.mark.parametrize("flag", [PSH, FIN, URG, RST, SYN])
def test_tcp_gro_receive_first_segment_with_special_flag_is_never_held(model, flag):
    r = rig(model)
    r.gro(build_frame(replace(BASE, flags=ACK | flag)))
    # no p: out_check_final flush = flags & (URG|PSH|RST|SYN|FIN) → GRO_NORMAL
    assert r.queued() == [(0,)] and r.held() == []


# -- checksums: the gate, software sums, bad checksums (§4, §6.1, §6.5) -----------------------------------------
def test_tunnel_stage_bad_inner_tcp_checksum_goes_up_first_pre_fix():
    r = rig(K_5_11)
    sp = specs(20)
    sp[10] = replace(sp[10], tcp_csum="bad")
    r.poll(frames(sp))
    # gro_cells runs tcp4_gro_receive's software check (gro-spec §6.5): frame 10 fails and goes up alone and
    # first; frame 11's sequence gap completes frames 0–9 (40 + 10·1400 = 14040); 11–19 end the cell poll
    assert r.rec.lens("phys") == [1490] * 20
    assert r.rec.lens("tunnel") == [1440, 14040, 12640]
