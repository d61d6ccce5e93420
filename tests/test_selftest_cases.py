"""The kernel's own GRO conformance cases, replayed as the inner TCP flow of VXLAN and Geneve tunnels.

Source: torvalds/linux tools/testing/selftests/net/lib/gro.c (the 2026 text: per-case test names, ``data_lrg_1byte``,
``flags_cwr``, ``capacity``, the ``ip_id_df*`` cases after f095a358faf2) and its predecessor
tools/testing/selftests/net/gro.c (grouped cases ``data``/``flags``/``tcp``/``ip``/``large``). Packet shapes are the
selftest's: PAYLOAD_LEN 100, NUM_PACKETS 4, START_SEQ/START_ACK 100, sport 1500 → dport 8000, window 65535,
IPv4 TTL 8 with DF and ID 0, IPv6 hop limit 8, MACs aa:00:00:00:00:02 → aa:00:00:00:00:01, payload bytes 'a';
every case ends with a FIN (seq offset 200, no payload) that the receiver stops at. The selftest's sleeps
(``sleep``, ``usleep(fin_delay_us)``, data_burst's 100 ms) separate polls here: each burst is one poll.

Each case runs at the stage that aggregates: the phys device of a post-fix kernel (5.12, 6.18), and the tunnel
device of the pre-fix kernel (5.11) with outer UDP checksum 0 and CHECKSUM_NONE (gro-spec §4.7 row 1), as
CHECKSUM_NONE is what AF_PACKET injection into veth delivers (kernel-oracle.md). The receiver's payload list is
read back from each delivered skb's own headers (``Delivery.tcp``), as the selftest's ``check_recv_pkts`` does.

Where versions differ (noted per row): ``flags_cwr`` — the selftest's {100, 200, 200} needs ab4c8b6f7fcb (2026);
6.18 (4e4f7cefb130 compares CWR) gives {100, 100, 100, 200}; ≤ 6.14 (CWR head absorbs non-CWR segments) {100, 100,
300}. ``ip_id_df0_fixed`` — {200} from f095a358faf2 (v6.18); the older gro.c expected, and ≤ 6.17 give, {100, 100}.
``large_*`` — lib/gro.c sizes MSS and the maximum payload from the headers in front of TCP (``total_hdr_len``), which
here are those the aggregating device counts: outer + inner headers on the phys device, inner headers on the
tunnel device. ``data_lrg_1byte`` tests Ethernet padding without a tunnel; inside one the inner packet is unpadded.
``ip_v6ext_*`` use a destination-options header (lib/gro.c; the older gro.c used hop-by-hop).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, replace

import pytest
from test_kernel_harness import rig

from gro_replay.kernel.model import K_5_11, K_5_12, K_6_18, KernelModel
from gro_replay.packet.build import ACK, CWR, FIN, PSH, RST, SYN, URG, FrameSpec, build_frame
from gro_replay.packet.geneve import geneve_opt

PAYLOAD_LEN = 100
START_SEQ = 100
K_AB4C = replace(K_6_18, name="6.18+ab4c8b6f7fcb", tcp_gro_cwr_no_flush=True)

ENCAPS = {
    "vxlan": FrameSpec(encap="vxlan"),
    "geneve": FrameSpec(encap="geneve", geneve_options=geneve_opt(0x0102, 1, b"\0\0\0\x01")),
}


def base(encap: str, v6: bool) -> FrameSpec:
    return replace(
        ENCAPS[encap],
        outer_csum="zero",
        inner_ipv6=v6,
        inner_src="fdaa::2" if v6 else "192.168.1.200",
        inner_dst="fdaa::1" if v6 else "192.168.1.100",
        inner_src_mac="aa:00:00:00:00:02",
        inner_dst_mac="aa:00:00:00:00:01",
        ttl=8,
        hop_limit=8,
        df=True,
        ip_id=0,
        sport=1500,
        dport=8000,
        ack=START_SEQ,
        flags=ACK,
        window=65535,
        timestamps=False,
    )


class Pkt:
    """``create_packet(buf, seq_offset, ack_offset, payload_len, fin)`` of the selftest, plus field changes."""

    def __init__(self, spec: FrameSpec):
        self.spec = spec

    def __call__(self, seq_off: int, n: int = PAYLOAD_LEN, *, ack_off: int = 0, **kw) -> FrameSpec:
        return replace(self.spec, seq=START_SEQ + seq_off, ack=START_SEQ + ack_off, payload=b"a" * n, **kw)

    def fin(self) -> FrameSpec:
        return self(PAYLOAD_LEN * 2, 0, flags=ACK | FIN)


def ts_opts(ts: int, order: int) -> bytes:
    """add_standard_tcp_options: permutations of {TS, NOP, NOP}; tsval written in host (little-endian) order."""
    ts_opt = bytes((8, 10)) + struct.pack("<I", ts) + b"\0\0\0\0"
    return {0: b"\x01\x01" + ts_opt, 1: b"\x01" + ts_opt + b"\x01", 2: ts_opt + b"\x00\x01"}[order]


IP_TS_OPTION = bytes((68, 40, 5, 0)) + bytes(36)  # struct ip_timestamp (40 bytes), IPOPT_TS, TSONLY


def hdr_len(encap: str, v6: bool, stage: str) -> int:
    """``total_hdr_len`` as the aggregating device counts it: Ethernet … TCP header."""
    inner = 14 + (40 if v6 else 20) + 20
    if stage == "tunnel":
        return inner
    return 14 + 20 + 8 + (8 if encap == "vxlan" else 16) + inner


@dataclass(frozen=True)
class Case:
    """One selftest case: the rule it pins, its bursts of packets, and the payload list the receiver expects."""

    name: str
    rule: str
    family: str  #: "both", "v4" or "v6" (the selftest runs IPv4-only cases only with -4, IPv6-only with -6)
    bursts: Callable[[Pkt, int], list[list[FrameSpec]]]
    expected: Callable[[KernelModel, int], list[int]]


def _same(values):
    return lambda model, hdr: values


def _flags(flag: int, cwr: bool = False):
    def bursts(p: Pkt, hdr):
        # send_flags: packets 0..4, flag packet at NUM_PACKETS/2 (and at NUM_PACKETS/2 - 1 for CWR); the flag
        # packet carries PAYLOAD_LEN only for PSH/CWR, otherwise no payload (and seq offset 0)
        n = PAYLOAD_LEN if flag in (PSH, CWR) else 0
        out = []
        for i in range(5):
            if i == 2 or (i == 1 and cwr):
                out.append(p(i * n, n, flags=ACK | flag))
            else:
                out.append(p(i * PAYLOAD_LEN))
        return [out + [p.fin()]]

    return bursts


def _cwr_expected(model: KernelModel, hdr):
    if model.tcp_gro_cwr_no_flush:  # ab4c8b6f7fcb: the selftest's expectation
        return [100, 200, 200]
    if model.tcp_gro_compares_cwr:  # 4e4f7cefb130 (v6.15): CWR flushes and differs from non-CWR segments
        return [100, 100, 100, 200]
    return [100, 100, 300]  # ≤ 6.14: CWR flushes, a CWR head absorbs later non-CWR segments


def _ip_id(ids: list[int], df: bool):
    def bursts(p: Pkt, hdr):
        return [[p(i * PAYLOAD_LEN, ip_id=x, df=df) for i, x in enumerate(ids)], [p.fin()]]

    return bursts


def _large(remainder_extra: int):
    def bursts(p: Pkt, hdr):
        mss = 4096 - (hdr - 14)  # calc_mss: ASSUMED_MTU - (total_hdr_len - ETH_HLEN)
        maxp = 65535 - (hdr - 14)  # max_payload: IP_MAXPACKET - (total_hdr_len - ETH_HLEN)
        n, rem = divmod(maxp, mss)
        last = rem + remainder_extra
        pkts = [p(i * mss, mss) for i in range(n)]
        return [pkts + [p(n * mss, last), p((n + 1) * mss, last), p.fin()]]

    return bursts


def _large_expected(remainder_extra: int):
    def expected(model, hdr):
        mss, maxp = 4096 - (hdr - 14), 65535 - (hdr - 14)
        rem = maxp % mss
        if remainder_extra == 0:
            return [maxp, rem]  # large_max: the remainder still fits (p->len + len = 65535 < 65536)
        return [maxp - rem, rem + 1, rem + 1]  # large_rem: one byte more reaches 65536 → -E2BIG

    return expected


def _capacity(p: Pkt, hdr):
    # send_capacity: A1 B1 C1 D1 (200 bytes, no PSH) then A2 B2 C2 D2 (PSH), sport 1500 + flow
    first = [replace(p(0, 200), sport=1500 + i, payload=bytes([97 + i]) * 200) for i in range(4)]
    second = [
        replace(p(200, 200, flags=ACK | PSH), sport=1500 + i, payload=bytes([97 + i]) * 200) for i in range(4)
    ]
    return [first + second, [p.fin()]]


CASES = [
    Case("data_same", "same size segments coalesce", "both",
         lambda p, h: [[p(0), p(100), p.fin()]], _same([200])),
    Case("data_lrg_sml", "a smaller last segment coalesces (len < mss ends it)", "both",
         lambda p, h: [[p(0), p(100, 50), p.fin()]], _same([150])),
    Case("data_lrg_1byte", "a 1-byte last segment coalesces", "both",
         lambda p, h: [[p(0), p(100, 1), p.fin()]], _same([101])),
    Case("data_sml_lrg", "len > mss does not coalesce", "both",
         lambda p, h: [[p(0, 50), p(50, 100), p.fin()]], _same([50, 100])),
    Case("data_burst", "bursts in separate polls coalesce separately", "both",
         lambda p, h: [[p(0), p(100)], [p(200), p(300), p.fin()]], _same([200, 200])),
    Case("ack", "pure ACKs (len 0) are never held", "both",
         lambda p, h: [[p(0, 0), p(0, 0), p(0, 0, ack_off=1), p.fin()]], _same([0, 0, 0])),
    Case("flags_psh", "PSH is merged and ends the aggregate", "both", _flags(PSH), _same([300, 200])),
    Case("flags_syn", "SYN: held packet completed, segment GRO_NORMAL", "both", _flags(SYN), _same([200, 0, 200])),
    Case("flags_rst", "RST: held packet completed, segment GRO_NORMAL", "both", _flags(RST), _same([200, 0, 200])),
    Case("flags_urg", "URG: held packet completed, segment GRO_NORMAL", "both", _flags(URG), _same([200, 0, 200])),
    Case("flags_cwr", "CWR flush / CWR in the compared flags (version-dependent)", "both",
         _flags(CWR, cwr=True), _cwr_expected),
    Case("tcp_csum", "a bad TCP checksum is not merged (software check)", "both",
         lambda p, h: [[p(0), p(100, tcp_csum="bad")], [p.fin()]], _same([100, 100])),
    Case("tcp_seq", "a sequence gap is not merged", "both",
         lambda p, h: [[p(0), p(101)], [p.fin()]], _same([100, 100])),
    Case("tcp_ts", "timestamp values and option order must match", "both",
         lambda p, h: [[p(0, tcp_options=ts_opts(0, 0)), p(100, tcp_options=ts_opts(0, 0)),
                        p(200, tcp_options=ts_opts(100, 0)), p(300, tcp_options=ts_opts(100, 1)),
                        p(400, tcp_options=ts_opts(100, 2))], [p.fin()]],
         _same([200, 100, 100, 100])),
    Case("tcp_opt", "different TCP options (doff) are not merged", "both",
         lambda p, h: [[p(0, tcp_options=ts_opts(0, 0)), p(100, tcp_options=ts_opts(0, 0)),
                        p(200, tcp_options=b"\x01\x03\x03\x00")], [p.fin()]],
         _same([200, 100])),
    Case("ip_ecn", "ECN bits differ: flush", "both",
         lambda p, h: [[p(0), p(100, tos=0x02), p.fin()]], _same([100, 100])),
    Case("ip_tos", "TOS / traffic class differs: flush", "both",
         lambda p, h: [[p(0), p(100, tos=0xF0 if p.spec.inner_ipv6 else 0x01), p.fin()]], _same([100, 100])),
    Case("ip_ttl", "TTL differs: flush", "v4",
         lambda p, h: [[p(0), p(100, ttl=7), p.fin()]], _same([100, 100])),
    Case("ip_opt", "IPv4 options: own flush, the held packet stays", "v4",
         lambda p, h: [[p(0), p(100, ip_options=IP_TS_OPTION), p(200)], [p.fin()]], _same([100, 100, 100])),
    Case("ip_frag4", "an IPv4 fragment is not merged", "v4",
         lambda p, h: [[p(0), p(100, mf=True, tcp_csum="bad")], [p.fin()]], _same([100, 100])),
    Case("ip_id_df1_inc", "DF, incrementing IDs coalesce", "v4", _ip_id([8, 9], True), _same([200])),
    Case("ip_id_df1_fixed", "DF, fixed IDs coalesce", "v4", _ip_id([8, 8], True), _same([200])),
    Case("ip_id_df0_inc", "no DF, incrementing IDs coalesce", "v4", _ip_id([8, 9], False), _same([200])),
    Case("ip_id_df0_fixed", "no DF, fixed IDs coalesce from f095a358faf2", "v4", _ip_id([8, 8], False),
         lambda model, h: [200] if model.inet_gro_fixedid_without_df else [100, 100]),
    Case("ip_id_df1_inc_fixed", "incrementing, then fixed: third not merged", "v4",
         _ip_id([8, 9, 9], True), _same([200, 100])),
    Case("ip_id_df1_fixed_inc", "fixed, then incrementing: third not merged", "v4",
         _ip_id([8, 8, 9], True), _same([200, 100])),
    Case("ip_frag6", "an IPv6 fragment header: own flush", "v6",
         lambda p, h: [[p(0), p(100)], [p(200, ipv6_ext=[(44, b"")]), p(300)], [p.fin()]],
         _same([200, 100, 100])),
    Case("ip_v6ext_same", "equal extension headers coalesce", "v6",
         lambda p, h: [[p(0, ipv6_ext=[(60, b"\0" * 6)]), p(100, ipv6_ext=[(60, b"\0" * 6)])], [p.fin()]],
         _same([200])),
    Case("ip_v6ext_diff", "different extension header bytes: another flow", "v6",
         lambda p, h: [[p(0, ipv6_ext=[(60, b"\0" * 6)]), p(100, ipv6_ext=[(60, b"\x11" * 6)])], [p.fin()]],
         _same([100, 100])),
    Case("large_max", "the 64 KiB limit, remainder fits", "both", _large(0), _large_expected(0)),
    Case("large_rem", "the 64 KiB limit, remainder + 1 does not fit", "both", _large(1), _large_expected(1)),
    Case("single", "one segment goes up alone", "both", lambda p, h: [[p(0), p.fin()]], _same([100])),
    Case("capacity", "four flows held at once (one bucket), completed by PSH", "both", _capacity,
         _same([400] * 4)),
]  # fmt: skip

VARIANTS = [(c, encap, v6) for c in CASES for encap in ENCAPS for v6 in (False, True)
            if c.family == "both" or c.family == ("v6" if v6 else "v4")]  # fmt: skip
IDS = [f"{c.name}-{encap}-{'v6' if v6 else 'v4'}" for c, encap, v6 in VARIANTS]
STAGES = [(K_5_12, "phys"), (K_6_18, "phys"), (K_5_11, "tunnel")]


def run_case(case: Case, encap: str, v6: bool, model: KernelModel, stage: str):
    r = rig(model, nic="none")
    hdr = hdr_len(encap, v6, stage)
    bursts = case.bursts(Pkt(base(encap, v6)), hdr)
    r.bursts([[build_frame(s) for s in b] for b in bursts])
    return r, case.expected(model, hdr)


@pytest.mark.parametrize(("model", "stage"), STAGES, ids=["5.12-phys", "6.18-phys", "5.11-tunnel"])
@pytest.mark.parametrize(("case", "encap", "v6"), VARIANTS, ids=IDS)
def test_gro_selftest_case(case, encap, v6, model, stage):
    r, expected = run_case(case, encap, v6, model, stage)
    assert r.rec.payloads(stage) == expected, case.rule


@pytest.mark.parametrize(("encap", "v6"), [(e, v6) for e in ENCAPS for v6 in (False, True)])
def test_gro_selftest_flags_cwr_as_the_2026_selftest_expects(encap, v6):
    case = next(c for c in CASES if c.name == "flags_cwr")
    r, expected = run_case(case, encap, v6, K_AB4C, "phys")
    # lib/gro.c flags_cwr: correct_payload {PAYLOAD_LEN, PAYLOAD_LEN * 2, PAYLOAD_LEN * 2}
    assert expected == [100, 200, 200]
    assert r.rec.payloads("phys") == expected


@pytest.mark.parametrize(("model", "stage"), STAGES, ids=["5.12-phys", "6.18-phys", "5.11-tunnel"])
def test_gro_selftest_capacity_flow_order(model, stage):
    case = next(c for c in CASES if c.name == "capacity")
    r, _ = run_case(case, "vxlan", False, model, stage)
    # check_capacity_pkts with --order-check: every flow coalesced, completed in send order (A, B, C, D)
    sports = []
    for d in r.rec.at(stage)[:4]:
        off = 50 + 20 if stage == "phys" else 20
        sports.append(struct.unpack_from("!H", d.head, off)[0])
    assert sports == [1500, 1501, 1502, 1503]
