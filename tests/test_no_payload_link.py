"""The flows without payload, said twice in a comparison, read as the same flows (report/verdict/sentences.py
``_said_above``, tally.py ``Unmerged.empty_refused_before``).

In the overlay-node mix (gro_replay/synth_mix.py) every connection has an ACK direction: a flow of segments without
payload, which tcp_gro_receive merges in no kernel (net/ipv4/tcp_offload.c: a segment of length 0 fails
out_check_final's ``len < mss`` test and the held packet's ``(len - 1) >= mss`` compare). Every ``csum_every``-th
connection computes its outer UDP checksum, the others send 0. Before the fix, udp_gro_receive refuses the
zero-checksum ACK flows at no cost (listed as "Z flows without payload"); with the fix, every ACK flow is among
those "carry no payload" — Z of them the ones already listed, the computed-checksum ones others. The sentence must
say so, not leave the reader to add Z to the total.
"""

from __future__ import annotations

import dpkt
import pytest

from gro_replay.kernel.model import K_5_10, K_5_11, K_5_12, K_6_18
from gro_replay.report.verdict import verdict_of
from gro_replay.sim import ReplayConfig, replay_frames
from gro_replay.synth_mix import OverlayMix, mix_frames

MIX = OverlayMix(frames=3000, connections=8, seed=7)
#: after a count above 1 (every count here: 6 zero-checksum and 2 computed-checksum ACK flows)
NO_PAYLOAD = "tunnelled TCP flows carry no payload"


def _ack_flows(frames) -> tuple[int, int]:
    """(zero-checksum, computed-checksum) ACK-direction flows of two frames or more, read from the frames."""
    acks: dict[int, list[int]] = {}
    for _ts, buf in frames:
        eth = dpkt.ethernet.Ethernet(buf)
        if eth.data.src != bytes([10, 0, 0, 2]):  # the data direction
            continue
        tcp = dpkt.ethernet.Ethernet(bytes(eth.data.data.data)[8:]).data.data
        assert len(tcp.data) == 0  # the mix's ACKs carry no payload
        acks.setdefault(tcp.dport, []).append(eth.data.data.sum)
    many = [sums for sums in acks.values() if len(sums) > 1]
    zero = sum(all(s == 0 for s in sums) for sums in many)
    return zero, len(many) - zero


@pytest.fixture(scope="module")
def frames():
    return list(mix_frames(MIX))


@pytest.mark.parametrize(
    ("kernels", "who"),
    [((K_5_11, K_5_12), "In post-fix (v5.12), "), ((K_5_10, K_6_18), "In 6.18 (v6.18), ")],
    ids=["5.11-5.12", "5.10-6.18"],
)
def test_compared_the_flows_without_payload_name_those_listed_above(frames, kernels, who):
    zero, computed = _ack_flows(frames)
    # 8 connections, every 4th with a computed checksum (connections 3 and 7), each with ACKs in 3,000 frames
    assert (zero, computed) == (6, 2)
    r = replay_frames(frames, ReplayConfig(kernels=kernels))
    v = verdict_of(r)
    assert f"at no cost to aggregation: {zero} flows without payload (ACKs" in v.text
    assert f"{who}{zero + computed} {NO_PAYLOAD} (the {zero} above and {computed} others; ACKs" in v.text
    # the rule behind "in any kernel": the kernel with the fix hands up every ACK alone
    post = r.kernels[1]
    acks = [f for fv in v.flows if fv.key.outer_dst == "10.0.0.1" for f in [post.flows[fv.fid]]]
    assert len(acks) == zero + computed and all(f.skbs["phys"] == f.segs["phys"] for f in acks)


def test_one_kernel_without_the_fix_says_the_others(frames):
    """One kernel without the fix: its gate refused the zero-checksum ACK flows (listed at no cost); the flows
    without payload it counts apart are the computed-checksum ones only, "other" than those."""
    zero, computed = _ack_flows(frames)
    v = verdict_of(replay_frames(frames, ReplayConfig(kernels=(K_5_11,))))
    assert f"at no cost to aggregation: {zero} flows without payload" in v.text
    assert f" {computed} other {NO_PAYLOAD} (ACKs" in v.text and " above" not in v.text


@pytest.mark.parametrize(
    ("selector", "listed"),
    [("csum=zero", True), ("outer-src=10.0.0.2", True), ("outer-src=10.0.0.2,csum=set", False)],
)
def test_flow_selection_counts_the_selected_flows_only(frames, selector, listed):
    """--flow: the sentence is about the selected flows; only those the pre-fix kernel refused are "above"."""
    zero, computed = _ack_flows(frames)
    v = verdict_of(replay_frames(frames, ReplayConfig(kernels=(K_5_11, K_5_12), flow=selector)))
    if selector == "csum=zero":
        assert f"{zero} {NO_PAYLOAD} (the {zero} above; ACKs" in v.text
    elif listed:
        assert f"{zero + computed} {NO_PAYLOAD} (the {zero} above and {computed} others; ACKs" in v.text
    else:  # no zero checksum selected: nothing refused, nothing above
        assert f"{computed} {NO_PAYLOAD} (ACKs" in v.text and " above" not in v.text
