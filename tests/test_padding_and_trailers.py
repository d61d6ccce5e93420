"""Frames that carry bytes past their IP datagram — Ethernet padding to the 60-byte minimum, a captured FCS, a
switch's trailer — and what the verdict says of their flows.

``skb_gro_len`` counts those bytes until ``ip_rcv_core`` trims the skb to the IP length, after GRO, so
inet_gro_receive flushes such a frame (``tot_len`` differs from the bytes present: net/ipv4/af_inet.c, gro-spec
§3.1), and tcp_gro_receive sees them as payload. Whether a segment carries TCP payload is read from its IP header
(packet/headers.py ``tcp_payload_len``, read by the driver step): an ACK with padding is still a segment without payload, which
tcp_gro_receive never merges (``(len - 1) >= mss``, net/ipv4/tcp_offload.c), and its flow is said apart from the
flows GRO does not merge for a reason of their own.
"""

from __future__ import annotations

import pytest

from gro_replay.kernel.model import PROFILES
from gro_replay.packet.build import FrameSpec, build_frame, flow_specs, peer_spec
from gro_replay.packet.csum import ip_fast_csum
from gro_replay.report.document import document
from gro_replay.report.verdict.core import verdict_of
from gro_replay.sim import ReplayConfig, replay_frames

_NO_PAYLOAD = (
    "1 tunnelled TCP flow carries no payload (ACKs, and SYN, FIN or RST without data), whose segments go up one by "
    "one ("
)
_OUTER = "IPv4 total length differs from the bytes present (padding) or reserved frag bit"


def _inner_padded(frame: bytes, n: int) -> bytes:
    """VXLAN over IPv4 ``frame`` with ``n`` zero bytes after its inner frame, as a hardware VTEP encapsulates a frame
    padded to 60 bytes on its access port: the outer IPv4 total length, header checksum and UDP length grow by
    ``n`` (outer UDP checksum 0: nothing else covers them)."""
    b = bytearray(frame + b"\0" * n)
    b[16:18] = (int.from_bytes(b[16:18], "big") + n).to_bytes(2, "big")
    b[24:26] = b"\0\0"
    b[24:26] = ip_fast_csum(b, 14, 5).to_bytes(2, "big")
    b[38:40] = (int.from_bytes(b[38:40], "big") + n).to_bytes(2, "big")
    return bytes(b)


@pytest.mark.parametrize(
    ("extra", "inner_ipv6", "data_skbs", "ack_reason"),
    [
        # a 4-byte FCS after every outer datagram: inet_gro_receive flushes each frame at the outer header
        ("fcs", False, 4, f"{_OUTER} [inet_gro_receive:tot_len_or_frag_bits] ×3"),
        ("fcs", True, 4, f"{_OUTER} [inet_gro_receive:tot_len_or_frag_bits] ×3"),
        # the inner ACKs (54 bytes without TCP timestamps) padded to 60: flushed at the inner header; the data
        # segments carry no padding and merge into one skb
        ("inner_pad", False, 1, f"{_OUTER} (inner header) [inet_gro_receive:inner_tot_len_or_frag_bits] ×3"),
    ],
)
def test_an_ack_flow_with_bytes_past_its_datagrams_carries_no_payload(
    extra, inner_ipv6, data_skbs, ack_reason
):
    # a bulk flow of 4 contiguous 1398-byte segments and its peer's 3 pure ACKs interleaved, without TCP
    # timestamps, outer checksum 0, 6.18 (the fix in: its gate passes them). Before, the ACK flow read as one the
    # kernel "does not merge" for the padding (second breaker's finding), and with an FCS the data flow was
    # counted with it ("does not merge 2 tunnelled TCP flows … ×7")
    spec = FrameSpec(outer_csum="zero", timestamps=False, inner_ipv6=inner_ipv6)
    data = flow_specs(spec, [1398] * 4)
    acks = [peer_spec(spec, payload=0, seq=1, ack=1_000_000 + 1398 * (k + 1)) for k in range(3)]
    built = [build_frame(s) for s in [data[0], acks[0], data[1], acks[1], data[2], acks[2], data[3]]]
    if extra == "fcs":
        built = [f + b"\0" * 4 for f in built]
    else:
        assert [len(f) - 50 for f in built[1::2]] == [54] * 3  # inner Ethernet 14 + IPv4 20 + TCP 20
        built = [_inner_padded(f, 6) if k % 2 else f for k, f in enumerate(built)]
    result = replay_frames(
        [(1000 * k, f) for k, f in enumerate(built)], ReplayConfig(kernels=(PROFILES["6.18"],))
    )
    (k,) = result.kernels
    assert k.stages["phys"].skbs == data_skbs + 3
    text = verdict_of(result).text
    # "other" than the data flow the kernel does not merge, when it says so before (newcomer34)
    said = _NO_PAYLOAD if data_skbs == 1 else _NO_PAYLOAD.replace("1 tunnelled", "1 other tunnelled")
    assert text.endswith(
        f". {said}{ack_reason}): tcp_gro_receive merges no segment without payload, in any kernel."
    ), text
    if data_skbs == 1:
        assert "does not merge" not in text
    else:  # the data flow, flushed for the FCS, is the one the kernel does not merge
        assert (
            f"6.18 (v6.18) does not merge 1 tunnelled TCP flow at the phys device; why its skbs ended: {_OUTER} "
            "[inet_gro_receive:tot_len_or_frag_bits] ×4."
        ) in text
    v = document(result)["verdict"]
    assert v["text"] == text


@pytest.mark.parametrize("extra", ["none", "fcs", "inner_pad"])
def test_the_kernel_backend_reads_the_payload_by_the_inner_ip_length(extra):
    # the kernel backend (validate.py) decides which delivered skbs carried no payload from the frames matched to
    # them (no_payload_frames): an ACK without timestamps (inner frame 14 + 20 + 20 = 54 bytes) carries none
    # whether it has a 4-byte FCS after the outer datagram or 6 bytes of padding inside it; the 1398-byte segment
    # carries 1398. The inner L3 length keeps the padding (the tunnel device's netif_receive_skb sees it: ip_rcv_core
    # trims it later), the outer one the bytes inside the outer datagram
    from gro_replay.oracle.match import frame_lengths

    spec = FrameSpec(outer_csum="zero", timestamps=False)
    ack = build_frame(peer_spec(spec, payload=0, seq=1, ack=1_000_000))
    data = build_frame(spec)
    if extra == "fcs":
        ack, data = ack + b"\0" * 4, data + b"\0" * 4
    elif extra == "inner_pad":
        ack = _inner_padded(ack, 6)
    l4 = 14 + 20 + 8 + 8 + 14 + 20  # outer Ethernet, IPv4, UDP, VXLAN, inner Ethernet, IPv4
    pad = 6 if extra == "inner_pad" else 0
    assert frame_lengths(ack, l4, {4789: "vxlan"}) == (20 + 8 + 8 + 54 + pad, 40 + pad, 0)
    assert frame_lengths(data, l4, {4789: "vxlan"}) == (20 + 8 + 8 + 54 + 1398, 40 + 1398, 1398)


@pytest.mark.parametrize("outer_ipv6", [False, True])
@pytest.mark.parametrize("release", ["5.15", "6.6", "6.18"])
def test_a_held_segment_ended_by_a_segment_with_a_trailer_is_named_by_that_arrival(release, outer_ipv6):
    # 4 contiguous segments of one flow (outer checksum computed, --rx-csum complete: the gate passes them), the
    # second (1000 bytes) with a 4-byte trailer after its outer datagram. inet_gro_receive (ipv6_gro_receive:
    # payload_len) flushes the second for its length (its own reason); tcp_gro_receive finds the held first
    # segment, whose compare passes. From v6.10 skb_gro_receive refuses to merge a flushing skb (-E2BIG,
    # NAPI_GRO_CB(skb)->flush); up to v6.9 inet_gro_receive/ipv6_gro_receive fold the arriving skb's flush into the
    # held packet's (NAPI_GRO_CB(p)->flush |= flush), which tcp_gro_receive reads. Either way the first goes up,
    # named by that arrival (tcp_gro_receive:next_flushing): not by the trailer it does not carry (newcomer's
    # finding, of a GSO skb arriving at the tunnel device before v6.1), nor as "IP header fields differ" (second
    # breaker's finding: no TTL, TOS, DF or ID differs here). The third and fourth merge and go up at the poll's
    # end
    from gro_replay.kernel import reasons as R

    spec = FrameSpec(outer_csum="computed", outer_ipv6=outer_ipv6)
    built = [build_frame(s) for s in flow_specs(spec, [1398, 1000, 1398, 1398])]
    built[1] += b"\0" * 4  # 1000 + 4 bytes past the TCP header: not above the held segment's mss (1398)
    cfg = ReplayConfig(kernels=(PROFILES[release],), rx_csum="complete")
    doc = document(replay_frames([(1000 * k, f) for k, f in enumerate(built)], cfg))
    own = R.IPV6_PAYLOAD_LEN if outer_ipv6 else R.INET_TOT_LEN
    assert doc["kernels"][0]["stages"]["phys"]["end_reasons"] == {
        R.TCP_NEXT_FLUSHING: 1,
        own: 1,
        R.POLL_END: 1,
    }
