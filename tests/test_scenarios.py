"""Seeded random scenarios (``random_scenario``, used by tests/test_pollcache.py to compare the batch path with the
reference path), the poll-batch checksum helpers against RFC 1071, and the input digest.

Each seeded scenario mixes flows, TCP flags, sequence gaps, checksum errors (inner TCP, inner IP, outer UDP),
segment sizes, option and header changes, VLAN tags, ECN marks, retransmissions and non-tunnel frames, over
VXLAN or Geneve, outer and inner IPv4 or IPv6, under a random NIC checksum profile (all five), poll model,
NAPI weight, RX queue count, gro_flush_timeout, HZ and size limits, through all three kernel profiles at once.
"""

from __future__ import annotations

import random
from dataclasses import replace

from blake3 import blake3
from test_csum import rfc1071_sum

from gro_replay.kernel.model import K_5_11, K_5_12, K_6_18
from gro_replay.packet.build import ACK, CWR, ECE, FIN, PSH, RST, SYN, URG, FrameSpec, build_frame, flow_specs
from gro_replay.sim import PollModel, ReplayConfig

RX_CSUM = ("none", "unnecessary", "unnecessary-tunnel", "complete", "partial")
T0 = 1_614_373_368_000_000_000


def _flow_frames(rng: random.Random, base: FrameSpec, i: int) -> list[bytes]:  # noqa: C901, PLR0915 - one random mutation per kind, listed flat
    """One TCP flow's frames with per-segment mutations (flags, errors, gaps, header and option changes)."""
    n = rng.randint(3, 70)
    mss = base.payload
    sizes = [rng.choice([mss, mss, mss, mss, mss, rng.randint(0, mss)]) for _ in range(n)]
    spec = replace(
        base,
        sport=40000 + i,
        udp_sport=50000 + rng.randrange(4) if rng.random() < 0.2 else 50000 + i,
        seq=rng.randrange(1 << 32),
        ip_id=rng.randrange(1 << 16),
        outer_ip_id=rng.randrange(1 << 16),
        df=rng.random() < 0.85,
        outer_df=rng.random() < 0.85,
        vni=rng.choice([100, 100, 100 + i]),
    )
    specs = flow_specs(
        spec,
        sizes,
        ts_step=rng.choice([0, 0, 1]),
        id_step=rng.choice([1, 1, 1, 0]) if not base.inner_ipv6 else 1,
    )
    rate = rng.choice([0.0, 0.02, 0.1, 0.3])
    out = []
    for s in specs:
        if rng.random() < rate:
            r = rng.randrange(25)
            if r == 0:
                s = replace(s, flags=ACK | PSH)
            elif r == 1:
                s = replace(s, flags=ACK | FIN)
            elif r == 2:
                s = replace(s, flags=rng.choice([ACK | URG, ACK | RST, SYN, ACK | SYN]))
            elif r == 3:
                s = replace(s, flags=ACK | rng.choice([CWR, ECE, CWR | ECE]))
            elif r == 4:
                s = replace(s, tcp_csum="bad")
            elif r == 5:
                s = replace(s, ip_csum="bad") if not s.inner_ipv6 else replace(s, hop_limit=63)
            elif r == 6 and s.outer_csum == "computed":
                s = replace(s, outer_csum="bad")
            elif r == 7:
                s = replace(s, seq=(s.seq + rng.choice([1, mss, -mss])) & 0xFFFFFFFF)
            elif r == 8:
                s = replace(s, window=s.window + 1)
            elif r == 9:
                s = replace(s, tos=rng.choice([1, 2, 3, 4]))
            elif r == 10:
                s = replace(s, ttl=63)
            elif r == 11:
                s = replace(s, ip_id=rng.randrange(1 << 16))
            elif r == 12:
                s = (
                    replace(s, tsval=s.tsval + 7)
                    if s.timestamps
                    else replace(s, tcp_options=b"\x01\x01\x01\x01")
                )
            elif r == 13:
                s = replace(s, outer_tos=rng.choice([1, 2, 3]))
            elif r == 14:
                s = replace(s, outer_ttl=1)
            elif r == 15:
                s = replace(s, ack=s.ack + 1)
            elif r == 16:
                s = replace(s, payload=0)
            elif r == 17:
                s = replace(s, pad_to=len(build_frame(s)) + rng.choice([1, 2, 8]))
            elif r == 18 and s.encap == "geneve":
                s = replace(
                    s, geneve_options=bytes(4) if not s.geneve_options else b"", geneve_oam=rng.random() < 0.3
                )
            elif r == 18:
                s = replace(s, vxlan_flags=s.vxlan_flags | 0x01000000)
            elif r == 19:
                s = replace(s, outer_ip_id=rng.randrange(1 << 16))
            elif r == 20:
                s = replace(s, outer_vlan=rng.choice([5, 7]))
            elif r == 21:
                s = replace(s, tos=s.tos | 3, outer_tos=3)
            elif r == 22:
                s = replace(s, payload=mss * rng.choice([2, 3]))  # a super-frame (split when resegmenting)
            elif r == 23 and s.inner_ipv6:
                s = replace(s, ipv6_ext=[(60, b"")])
            elif r == 23:
                s = replace(s, ip_options=b"\x01\x01\x01\x01")
            elif r == 24:
                s = (
                    replace(s, ip_id=s.ip_id)
                    if s.inner_ipv6
                    else replace(s, frag_off=rng.choice([0, 1]), mf=True)
                )
        out.append(build_frame(s))
    if rng.random() < 0.1 and len(out) > 3:  # a retransmission / reordering
        j = rng.randrange(len(out) - 1)
        out.insert(rng.randrange(len(out)), out[j])
    return out


def _odd_frames(rng: random.Random) -> list[bytes]:
    """Frames that are not tunnelled TCP or that the decoder skips: ARP, plain UDP, cut headers, garbage."""
    plain = build_frame(FrameSpec(udp_dport=9999, payload=100))
    tunnel = build_frame(FrameSpec(payload=200))
    return [
        rng.choice(
            [
                b"\xff" * 12 + b"\x08\x06" + bytes(28),
                plain,
                tunnel[:60],
                tunnel[: rng.randrange(14, len(tunnel))],
                bytes(rng.randrange(0, 80)),
            ]
        )
    ]


def random_scenario(rng: random.Random) -> tuple[list[tuple[int, bytes]], ReplayConfig]:
    """A seeded capture and configuration (see the module docstring)."""
    encap = rng.choice(["vxlan", "geneve"])
    outer_ipv6 = rng.random() < 0.3
    inner_ipv6 = rng.random() < 0.3
    base = FrameSpec(
        encap=encap,
        outer_ipv6=outer_ipv6,
        inner_ipv6=inner_ipv6,
        outer_csum=rng.choice(["zero", "computed"]),
        timestamps=rng.random() < 0.5,
        payload=rng.choice([1400, 1400, 1000, 200]),
        geneve_options=bytes(rng.choice([0, 0, 8])) if encap == "geneve" else b"",
        outer_vlan=7 if rng.random() < 0.1 else None,
    )
    nflows = rng.choice([1, 1, 2, 3, 4, 6, 9])
    per_flow = [_flow_frames(rng, base, i) for i in range(nflows)]
    block = rng.choice([1, 1, 2, 8, 64])
    frames: list[bytes] = []
    while any(per_flow):
        for fl in per_flow:
            frames.extend(fl[:block])
            del fl[:block]
        if rng.random() < 0.05:
            frames.extend(_odd_frames(rng))
    ts = T0
    timed = []
    gap = rng.choice([1_000, 1_000, 20_000])
    for f in frames:
        r = rng.random()
        if r < 0.03:
            ts += rng.choice([5_000_000, 20_000_000])  # beyond a jiffy at HZ 250 and 1000
        elif r < 0.04:
            ts -= 3_000  # a timestamp going backwards
        else:
            ts += gap
        timed.append((ts, f))
    poll = rng.choice(
        [
            PollModel("budget"),
            PollModel("budget"),
            PollModel("gap", 5.0),
            PollModel("rx-usecs", rng.choice([8.0, 50.0])),
        ]
    )
    cfg = ReplayConfig(
        kernels=(K_5_11, K_5_12, K_6_18),
        rx_csum=rng.choice(RX_CSUM),
        poll=poll,
        weight=rng.choice([64, 64, 64, 16, 5]),
        hz=rng.choice([250, 1000]),
        rss=rng.choice(["toeplitz", "toeplitz", "none"]),
        vxlan_ports=(4789,),
        geneve_ports=(6081,),
        tunnel_metadata=rng.random() < 0.8,
        udp6_zero_csum_rx=rng.random() < 0.5,
        gro_normal_batch=rng.choice([8, 8, 1, 3]),
        gro_max_size=rng.choice([65536, 65536, 20000, 100000]),
        gro_flush_timeout_ns=rng.choice([0, 0, 0, 20_000]),
        napi_defer_hard_irqs=rng.choice([0, 0, 2]),
        phys_xdp_generic=rng.random() < 0.05,
        rx_queues=rng.choice([1, 1, 1, 2, 3]),
        resegment=rng.choice(["off", "off", "off", "auto", 700]),
    )
    return timed, cfg


def test_seeded_scenarios_cover_the_required_space():
    """The scenarios above span every NIC checksum profile, VXLAN and Geneve, outer and inner IPv4/IPv6, several RX
    queues, resegmenting and the three kernel profiles (the brief of the batch-vs-reference comparison)."""
    seen = set()
    for seed in range(120):
        frames, cfg = random_scenario(random.Random(seed))
        seen.add(("rx", cfg.rx_csum))
        seen.add(("queues", cfg.rx_queues > 1))
        seen.add(("reseg", cfg.resegment != "off"))
        for _ts, f in frames:
            e = (f[12] << 8) | f[13] if len(f) > 100 else 0
            if e in (0x0800, 0x86DD):
                outer6 = e == 0x86DD
                u = 54 if outer6 else 34
                dport = (f[u + 2] << 8) | f[u + 3]
                seen.add(("encap", dport))
                seen.add(("outer", outer6))
    assert {("rx", r) for r in RX_CSUM} <= seen
    assert {("encap", 4789), ("encap", 6081), ("outer", False), ("outer", True)} <= seen
    assert {("queues", True), ("queues", False), ("reseg", True), ("reseg", False)} <= seen
    assert [m.release for m in random_scenario(random.Random(0))[1].kernels] == ["5.11", "5.12", "6.18"]


def test_csum_partial_batch_and_poll_sums_match_rfc1071():
    """packet/csum.py ``csum_partial_batch`` (one numpy pass over a poll) and ``PollSums.suffix`` (a suffix by
    ones'-complement subtraction) equal the RFC 1071 sum of each range, zero-length and all-zero buffers included."""
    from gro_replay.packet.csum import PollSums, csum_partial_batch

    rng = random.Random(1071)
    for _ in range(60):
        bufs = [
            bytes(
                rng.randrange(256) if rng.random() < 0.9 else 0
                for _ in range(rng.choice([0, 13, 14, 15, 16, 99, 1514]))
            )
            for _ in range(rng.randint(1, 8))
        ]
        bufs.append(bytes(64))
        bufs.append(b"\xff" * 40)
        assert csum_partial_batch(bufs, 14) == [rfc1071_sum(b[14:]) for b in bufs]
        ps = PollSums(bufs)
        for i, b in enumerate(bufs):
            for start in range(14, min(len(b), 120), 2):
                got = ps.suffix(i, start)
                # 0 means "not derivable" (the residue is 0): the caller then sums directly
                assert got in (0, rfc1071_sum(b[start:])), (i, start)
                if rfc1071_sum(b[start:]) not in (0, 0xFFFF):
                    assert got == rfc1071_sum(b[start:])


def test_replay_capture_digest_is_the_file_blake3(tmp_path):
    """capture/stream.py ``DigestingRaw`` hashes the capture on a helper thread: the document's BLAKE3 is the file's."""

    from gro_replay.capture.writer import PcapWriter
    from gro_replay.sim import replay_capture

    frames, cfg = random_scenario(random.Random(3))
    path = tmp_path / "c.pcap"
    with PcapWriter(str(path)) as w:
        for ts, f in frames:
            w.write(ts, f)
    res = replay_capture(str(path), cfg)
    assert res.input.digests["blake3"] == blake3(path.read_bytes()).hexdigest()
