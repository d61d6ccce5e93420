"""Tunnel frames whose outer UDP length disagrees with their IP datagram (fidelity30's findings, measured on the
running kernel 6.18.44 with the kernel backend).

No GRO stage reads the outer UDP length (udp_gro_receive, vxlan_gro_receive; udp_gro_complete rewrites it for an
aggregate: net/ipv4/udp_offload.c), so a frame whose length is too long or under 8 merges like any other; where it
goes up alone, ``__udp4_lib_rcv`` drops it (``ulen > skb->len`` or ``ulen < 8``: short_packet). Such frames used to
be skipped as ``malformed:outer_udp``, which also split their flow's aggregate in two. A UDP length shorter than the
IP payload is trimmed by ``udp_rcv`` (``pskb_trim_rcsum``) before decapsulation: the tunnel device sees the inner
frame without the bytes past it, which the kernel backend's matching used to count (it reported frames the
tunnel device delivered as lost).

Values measured on the running kernel (``gro-replay kernel CAP --trace -``), 8 segments of one flow (1,300-byte
frames, outer UDP checksum 0), 64-frame polls (the kernel backend's recipe):
- UDP length +4 on frame 4, or 0 on frame 4, or +4 on frame 0: one skb of all 8 at the phys device (10,502 bytes)
  and at the tunnel device (10,452);
- frames 3 and 4 with 4 bytes past the UDP datagram that the outer IP length counts: 4 phys skbs (1-2, 3, 4, 5-7)
  and 3 tunnel skbs (3 + 2 + 3 frames, the trimmed frames merged with their neighbours), none lost;
- a second flow's single frame with UDP length +4: delivered by the phys device, by no tunnel device (dropped).
"""

from __future__ import annotations

import json
import struct
from dataclasses import replace

import pytest
from click.testing import CliRunner
from conftest import batch_and_reference, needs_kernel_backend

from gro_replay.capture.writer import PcapWriter
from gro_replay.cli import main
from gro_replay.packet.build import ACK, FrameSpec, build_frame
from gro_replay.packet.csum import ipv4_header_checksum
from gro_replay.sim import ReplayConfig

BACKEND = ["--kernel", "6.18", "--rx-csum", "none", "--poll", "budget", "--rss", "none"]
T0 = 1_700_000_000_000_000_000


def _segments(n: int = 8, sport: int = 40000) -> list[bytes]:
    """``n`` in-order 1,300-byte segments of one flow over VXLAN (outer IPv4, UDP checksum 0)."""
    spec = FrameSpec(seq=1_000_000, flags=ACK, payload=1300 - 116, sport=sport)
    return [build_frame(replace(spec, seq=spec.seq + i * spec.payload, ip_id=i)) for i in range(n)]  # type: ignore[operator]


def _udp_len(frame: bytes, delta: int | None = None, value: int | None = None) -> bytes:
    """The frame with its outer UDP length changed by ``delta`` or set to ``value`` (checksum 0: nothing else)."""
    b = bytearray(frame)
    ulen = struct.unpack_from("!H", b, 38)[0]
    struct.pack_into("!H", b, 38, value if value is not None else ulen + (delta or 0))
    return bytes(b)


def _past_udp(frame: bytes, extra: bytes) -> bytes:
    """The frame with ``extra`` bytes after its UDP datagram, counted by the outer IP total length (its header
    checksum recomputed), not by the UDP length."""
    b = bytearray(frame + extra)
    struct.pack_into("!H", b, 16, len(b) - 14)
    struct.pack_into("!H", b, 24, 0)
    struct.pack_into("!H", b, 24, ipv4_header_checksum(bytes(b[14:34])))
    return bytes(b)


def _write(path, frames: list[bytes]) -> str:
    with PcapWriter(str(path)) as w:
        for i, f in enumerate(frames):
            w.write(T0 + 1000 * i, f)
    return str(path)


def _doc(*args: str) -> dict:
    r = CliRunner().invoke(main, [*args, "--format", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _flows(doc: dict) -> list[tuple]:
    """Per flow: phys skbs and segments, tunnel skbs and segments."""
    return [
        (f["phys"]["skbs"], f["phys"]["segments"], f["tunnel"]["skbs"], f["tunnel"]["segments"])
        for f in doc["kernels"][0]["flows"]
    ]


CASES = {
    "long_mid": lambda s: [_udp_len(f, 4) if i == 4 else f for i, f in enumerate(s)],
    "long_head": lambda s: [_udp_len(f, 4) if i == 0 else f for i, f in enumerate(s)],
    "zero_mid": lambda s: [_udp_len(f, value=0) if i == 4 else f for i, f in enumerate(s)],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_wrong_udp_length_merges_like_any_other(tmp_path, case):
    path = _write(tmp_path / f"{case}.pcap", CASES[case](_segments()))
    doc = _doc(path, *BACKEND)
    assert doc["input"]["skipped"] == {}
    assert _flows(doc) == [(1, 8, 1, 8)]
    batch, ref, _ = batch_and_reference(path, ReplayConfig())
    assert batch == ref


def test_a_wrong_udp_length_alone_is_dropped_by_udp_rcv(tmp_path):
    frames = _segments(4) + [_udp_len(_segments(1, sport=41000)[0], 4)]
    doc = _doc(_write(tmp_path / "alone.pcap", frames), *BACKEND)
    assert doc["input"]["skipped"] == {}
    flows = doc["kernels"][0]["flows"]
    assert _flows(doc) == [(1, 4, 1, 4), (1, 1, 0, 0)]
    assert flows[1]["stack_frames"] == {"udp_rcv:short_packet": 1}


def test_bytes_past_the_udp_datagram_are_trimmed_before_decapsulation(tmp_path):
    frames = [_past_udp(f, b"\x77" * 4) if i in (3, 4) else f for i, f in enumerate(_segments())]
    doc = _doc(_write(tmp_path / "short.pcap", frames), *BACKEND)
    assert _flows(doc) == [(4, 8, 3, 8)]


@needs_kernel_backend
def test_the_kernel_backend_reads_the_trimmed_frames(tmp_path):
    """The backend's report of the running kernel: the trimmed frames are matched at the tunnel device (they were
    reported lost, and one skb unmatched), and a wrong length mid-flow merges."""
    frames = [_past_udp(f, b"\x77" * 4) if i in (3, 4) else f for i, f in enumerate(_segments())]
    doc = _doc("kernel", _write(tmp_path / "short.pcap", frames))
    assert _flows(doc) == [(4, 8, 3, 8)]
    assert not [n for n in doc["input"]["notes"] if "no run" in n]
    doc = _doc("kernel", _write(tmp_path / "long.pcap", CASES["long_mid"](_segments())))
    assert _flows(doc) == [(1, 8, 1, 8)]


def _v6_segments(n: int, sport: int = 40000) -> list[bytes]:
    """``n`` segments of one flow over VXLAN in outer IPv6 (UDP checksum computed, as RFC 8200 asks)."""
    spec = FrameSpec(
        seq=1_000_000, flags=ACK, payload=1200, sport=sport, outer_ipv6=True, outer_csum="computed"
    )
    return [build_frame(replace(spec, seq=spec.seq + i * 1200, ip_id=i)) for i in range(n)]


def _v6_udp_len_zero(frame: bytes) -> bytes:
    """The outer IPv6 frame with UDP length 0 (a jumbo payload's) and its checksum recomputed over that header,
    with the pseudo-header's length the datagram's (``csum_ipv6_magic(..., skb->len, ...)`` in udp6_csum_init)."""
    from gro_replay.packet.csum import l4_checksum_field, pseudo6

    b = bytearray(frame)
    n = len(b) - 54
    struct.pack_into("!HH", b, 58, 0, 0)
    struct.pack_into(
        "!H",
        b,
        60,
        l4_checksum_field(pseudo6(bytes(b[22:38]), bytes(b[38:54]), n, 17), b, 54, 54 + n) or 0xFFFF,
    )
    return bytes(b)


def _v6_dest_options(frame: bytes) -> bytes:
    """The outer IPv6 frame with an 8-byte destination options header (a PadN option) before its UDP header."""
    b = bytearray(frame[:54] + bytes([17, 0, 1, 4, 0, 0, 0, 0]) + frame[54:])
    b[20] = 60  # next header: destination options
    struct.pack_into("!H", b, 18, struct.unpack_from("!H", b, 18)[0] + 8)
    return bytes(b)


def test_an_ipv6_udp_length_of_0_is_the_datagrams_own(tmp_path):
    """__udp6_lib_rcv takes a UDP length of 0 as the datagram's (a jumbo payload): a frame with it, going up alone,
    is delivered, not dropped (breaker28b; the running kernel delivered it at vxlan0)."""
    frames = _v6_segments(4) + [_v6_udp_len_zero(_v6_segments(1, sport=41000)[0])]
    doc = _doc(_write(tmp_path / "v6zero.pcap", frames), *BACKEND)
    assert _flows(doc) == [(1, 4, 1, 4), (1, 1, 1, 1)]


@needs_kernel_backend
def test_the_kernel_backend_reads_outer_ipv6_extension_headers_and_udp_length_0(tmp_path):
    """Outer IPv6 with a destination options header before UDP: the running kernel merges the 8 frames at both
    devices; its report used to read the UDP header at a fixed offset and call the tunnel skb unmatched
    (breaker28b). And a UDP length of 0, alone: delivered at the tunnel device."""
    doc = _doc("kernel", _write(tmp_path / "ext.pcap", [_v6_dest_options(f) for f in _v6_segments(8)]))
    assert _flows(doc) == [(1, 8, 1, 8)]
    assert not [n for n in doc["input"]["notes"] if "no run" in n]
    frames = _v6_segments(4) + [_v6_udp_len_zero(_v6_segments(1, sport=41000)[0])]
    assert _flows(_doc("kernel", _write(tmp_path / "v6zero.pcap", frames))) == [(1, 4, 1, 4), (1, 1, 1, 1)]


def _v6_atomic_fragment(frame: bytes, ident: int = 7) -> bytes:
    """The outer IPv6 frame with a fragment header that fragments nothing (offset 0, M clear) before its UDP
    header: an atomic fragment (RFC 6946)."""
    b = bytearray(frame[:54] + struct.pack("!BBHI", 17, 0, 0, ident) + frame[54:])
    b[20] = 44  # next header: fragment
    struct.pack_into("!H", b, 18, struct.unpack_from("!H", b, 18)[0] + 8)
    return bytes(b)


@pytest.mark.parametrize(("which", "want"), [("all", [(8, 8, 1, 8)]), ("mid", [(3, 8, 3, 8)])])
def test_an_ipv6_fragment_header_that_fragments_nothing_is_stepped_past(tmp_path, which, want):
    """ipv6_frag_rcv takes a fragment header with offset 0 and M clear for no fragment and goes on to UDP; GRO has
    no handler for it and flushes the frame at the phys device. Measured on the running kernel (fidelity31,
    ``gro-replay kernel --trace -``): all 8 such frames go up alone at eth0 and merge into one skb at vxlan0 (9,652
    bytes); with frame 5 alone carrying one, eth0 delivers 3 skbs (0-4, 5, 6-7) and vxlan0 3 (the replay used to
    drop them as fragments never reassembled, and call the capture one without tunnel traffic)."""
    frames = [
        _v6_atomic_fragment(f) if which == "all" or i == 5 else f for i, f in enumerate(_v6_segments(8))
    ]
    path = _write(tmp_path / f"{which}.pcap", frames)
    doc = _doc(path, *BACKEND)
    assert _flows(doc) == want
    assert doc["input"]["classes"] == {"tunnel_tcp": 8}
    batch, ref, _ = batch_and_reference(path, ReplayConfig())
    assert batch == ref


@needs_kernel_backend
def test_the_kernel_backend_counts_atomic_fragments_as_tunnel_traffic(tmp_path):
    frames = [_v6_atomic_fragment(f) for f in _v6_segments(8)]
    assert _flows(_doc("kernel", _write(tmp_path / "atomic.pcap", frames))) == [(8, 8, 1, 8)]


def _v4_fragments(frame: bytes, ident: int) -> list[bytes]:
    """The outer IPv4 datagram of ``frame`` as two fragments: the first 1,000 bytes of its payload (offset 0, MF
    set: it holds the UDP and VXLAN headers), then the rest (offset 125 × 8)."""
    from gro_replay.packet.csum import ipv4_header_checksum

    payload = frame[34:]
    out = []
    for part, off, mf in ((payload[:1000], 0, 0x2000), (payload[1000:], 1000 // 8, 0)):
        hdr = bytearray(frame[14:34])
        struct.pack_into("!HHH", hdr, 2, 20 + len(part), ident, mf | off)
        struct.pack_into("!H", hdr, 10, 0)
        struct.pack_into("!H", hdr, 10, ipv4_header_checksum(bytes(hdr)))
        out.append(frame[:14] + bytes(hdr) + part)
    return out


def test_fragmented_tunnel_datagrams_are_named_not_called_absent(tmp_path):
    """Outer IPv4 fragments of VXLAN datagrams: reassembly is not modelled (README), so they are no VXLAN or Geneve traffic
    here; the running kernel reassembles and decapsulates them (fidelity31: its trace showed one vxlan0 skb of all
    8). The report used to say that no frame goes to a tunnel port; now it counts their first fragments, in a note
    and the verdict, on both engines."""
    frames = [f for i, seg in enumerate(_segments()) for f in _v4_fragments(seg, 100 + i)]
    path = _write(tmp_path / "frag.pcap", frames)
    doc = _doc(path)
    assert doc["input"]["fragments_to_tunnel"] == 8
    assert doc["input"]["classes"] == {"not_tunnel": 16}
    assert (
        "no VXLAN or Geneve traffic replayed whole: what goes to a tunnel port came fragmented"
        in doc["input"]["notes"]
    )
    (note,) = [n for n in doc["input"]["notes"] if "are first fragments" in n]
    assert note.startswith(
        "8 frames are first fragments of outer datagrams to a tunnel port (each with its whole UDP header): IP "
        "fragment reassembly is not modelled"
    )
    assert doc["verdict"]["text"].startswith(
        "No flow carries VXLAN or Geneve traffic whole: the 8 frames to a tunnel port are first fragments of outer datagrams"
    )
    batch, ref, _ = batch_and_reference(path, ReplayConfig())
    assert batch == ref


@needs_kernel_backend
def test_the_kernel_backend_says_it_leaves_reassembled_datagrams_out(tmp_path):
    frames = [f for i, seg in enumerate(_segments()) for f in _v4_fragments(seg, 100 + i)]
    doc = _doc("kernel", _write(tmp_path / "frag.pcap", frames))
    assert doc["input"]["fragments_to_tunnel"] == 8
    (note,) = [n for n in doc["input"]["notes"] if "are first fragments" in n]
    assert "this report reads the frames as the replay does" in note


def _v6_with(frame: bytes, headers: list[tuple[int, bytes]]) -> bytes:
    """The outer IPv6 frame with extension headers (next-header value, body) before its UDP header, chained in
    order: each body's first byte is set to the next header's value."""
    chain = [h for h, _ in headers] + [17]
    b = bytearray(frame[:54])
    for (_, body), nxt in zip(headers, chain[1:], strict=True):
        b += bytes([nxt]) + body[1:]
    b += frame[54:]
    b[20] = chain[0]
    struct.pack_into("!H", b, 18, len(b) - 54)
    return bytes(b)


ATOMIC = struct.pack("!BBHI", 0, 0, 0, 7)  # a fragment header that fragments nothing
DSTOPT = bytes([0, 0, 1, 4, 0, 0, 0, 0])  # destination options: one PadN
HOPOPT = bytes([0, 0, 1, 4, 0, 0, 0, 0])  # hop-by-hop: one PadN


@pytest.mark.parametrize(
    ("chain", "lost"),
    [
        ([(44, ATOMIC), (60, DSTOPT)], False),  # the fragment header, then destination options: fine
        ([(44, ATOMIC), (44, ATOMIC)], True),  # a second fragment header fails (IP6SKB_FRAGMENTED)
        ([(44, ATOMIC), (0, HOPOPT)], True),  # hop-by-hop anywhere but first: no handler, dropped
        ([(60, DSTOPT), (0, HOPOPT)], True),
        ([(0, HOPOPT), (0, HOPOPT)], True),
        ([(0, HOPOPT), (60, DSTOPT)], False),
    ],
)
def test_the_stack_walks_outer_ipv6_extension_headers_as_ip6_input_does(tmp_path, chain, lost):
    """Measured on the running kernel (breaker28c, fidelity31: ``gro-replay kernel``, 8 segments of one flow): each
    chain is flushed at the phys device (no GRO merges past a fragment header; 8 skbs) or walked by GRO (valid
    hop-by-hop/destination options first: merged), and the stack decapsulates the flow (1 tunnel skb) or drops
    every frame (0): a second fragment header, or hop-by-hop after another header."""
    frames = [_v6_with(f, chain) for f in _v6_segments(8)]
    doc = _doc(_write(tmp_path / "chain.pcap", frames), *BACKEND)
    (flow,) = _flows(doc)
    assert flow[2:] == ((0, 0) if lost else (1, 8))
    if lost:
        assert doc["kernels"][0]["flows"][0]["stack_frames"] == {"ip6_input:bad_exthdr": 8}


def test_first_fragments_count_only_when_a_kernel_could_reassemble_them(tmp_path):
    """An outer IPv6 first fragment (M set) to a tunnel port counts when it holds the whole UDP header, past
    destination options too (breaker28c: it was missed); one holding 4 bytes of it does not (ipv6frag_thdr_truncated
    drops it: the running kernel delivered nothing at vxlan0)."""
    seg = _v6_segments(1)[0]
    first = struct.pack("!BBHI", 0, 0, 1, 9)  # offset 0, M set
    whole = _v6_with(seg, [(44, first), (60, DSTOPT)])
    cut = bytearray(_v6_with(seg, [(44, first)]))[: 54 + 8 + 4]
    struct.pack_into("!H", cut, 18, len(cut) - 54)
    doc = _doc(_write(tmp_path / "firsts.pcap", [whole, bytes(cut)]))
    assert doc["input"]["fragments_to_tunnel"] == 1
