"""synth refuses what it would silently ignore: bulk-flow options with --mix, --mix options without it, and an
OUTPUT named for another format than the nanosecond pcap it writes (one line, exit 2; nothing written)."""

from __future__ import annotations

import os
import struct
from dataclasses import replace

import pytest

from gro_replay.cli import main
from gro_replay.packet.build import build_frame
from gro_replay.synth import Scenario, ScenarioError, flow_spec, payload_limit, synth_frames
from gro_replay.synth_mix import OverlayMix

BULK_ONLY = [
    ["--encap", "geneve"],
    ["--outer-csum", "computed"],
    ["--flows", "3"],
    ["--interleave", "rr"],
    ["--outer-ipv6"],
    ["--no-timestamps"],
    ["--vni", "7"],
    ["--last-payload", "100"],
]


@pytest.mark.parametrize("opt", BULK_ONLY, ids=lambda o: o[0])
def test_mix_refuses_bulk_flow_options(runner, tmp_path, opt):
    out = tmp_path / "m.pcap"
    r = runner.invoke(main, ["synth", "--mix", "overlay-node", "--frames", "100", *opt, str(out)])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "describes bulk flows: --mix does not read it" in r.stderr and opt[0] in r.stderr
    assert not out.exists()


@pytest.mark.parametrize("opt", [["--connections", "3"], ["--seed", "2"]], ids=lambda o: o[0])
def test_mix_options_need_mix(runner, tmp_path, opt):
    r = runner.invoke(main, ["synth", "--frames", "10", *opt, str(tmp_path / "b.pcap")])
    assert r.exit_code == 2 and f"{opt[0]} goes with --mix" in r.stderr


@pytest.mark.parametrize("name", ["x.pcapng", "x.pcap.gz", "X.PCAPNG"])
def test_output_named_for_another_format(runner, tmp_path, name):
    r = runner.invoke(main, ["synth", "--frames", "10", str(tmp_path / name)])
    assert r.exit_code == 2 and "synth writes a classic nanosecond pcap" in r.stderr
    assert not (tmp_path / name).exists()


def test_what_mix_reads_still_works(runner, tmp_path):
    out = tmp_path / "m.pcap"
    r = runner.invoke(
        main,
        [
            "synth",
            "--mix",
            "overlay-node",
            "--frames",
            "200",
            "--seed",
            "3",
            "--mss",
            "1000",
            "--connections",
            "4",
            "--port",
            "4790",
            str(out),
        ],
    )
    assert r.exit_code == 0, r.stderr
    assert out.stat().st_size > 0


#: a scenario the options' types accept but gro_replay/synth.py Scenario refuses: the error names the options
#: (Geneve options are 4-byte words, at most 63 of them: geneve.c's opt_len is 6 bits of 4-byte units)
REFUSED_SCENARIOS = [
    (
        ["--encap", "geneve", "--geneve-opt-bytes", "6"],
        "--geneve-opt-bytes must be a multiple of 4, at most 252",
    ),
    (["--geneve-opt-bytes", "8"], "--geneve-opt-bytes needs --encap geneve"),
    (
        ["--mtu", "157", "--inner-ipv6"],
        "--mtu 157 is less than 158, the smallest MTU that leaves these headers an inner TCP MSS of 48 bytes (158 = "
        "20 outer IPv4 + 8 UDP + 8 VXLAN + 14 inner Ethernet + 40 inner IPv6 + 20 TCP + 48; the MSS counts the 12 "
        "bytes of TCP options, so a full segment carries at least 36 payload bytes): no Linux sender segments below "
        "that MSS (TCP_MIN_SND_MSS, include/net/tcp.h, applied by __tcp_mtu_to_mss in net/ipv4/tcp_output.c)",
    ),
    # RFC 8200 §5: no IPv6 link has an MTU below 1280 (include/uapi/linux/ipv6.h IPV6_MIN_MTU)
    (
        ["--mtu", "1000", "--outer-ipv6"],
        "--mtu 1000 is less than 1280, the smallest link MTU of IPv6 (RFC 8200 §5; IPV6_MIN_MTU, "
        "include/uapi/linux/ipv6.h): Linux runs no IPv6 on a link below it, so no outer IPv6 packet is segmented "
        "smaller",
    ),
]


@pytest.mark.parametrize(
    ("opts", "words"), REFUSED_SCENARIOS, ids=lambda o: " ".join(o) if isinstance(o, list) else ""
)
def test_a_refused_scenario_names_its_options(runner, tmp_path, opts, words):
    out = tmp_path / "s.pcap"
    r = runner.invoke(main, ["synth", "--frames", "10", *opts, str(out)])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(f"Error: {words}; see '") and r.stderr.endswith(" synth --help'\n")
    assert not out.exists()


# -- values the frame builder or the pcap writer would refuse: refused by Scenario/OverlayMix, before a file exists --
#: Every length field a frame's payload counts in is 16 bits: outer IPv4 Total Length (RFC 791 §3.1), outer UDP
#: Length (RFC 768), outer IPv6 Payload Length (RFC 8200 §3, the UDP length here: no extension headers), inner IPv4
#: Total Length, inner IPv6 Payload Length. 65535 minus the header bytes the widest of them counts is the payload
#: limit: outer IPv4 20 + UDP 8 + VXLAN 8 + inner Ethernet 14 + inner IPv4 20 + TCP 20 + 12 (NOP NOP timestamp) = 102
#: bytes, so 65433 (an outer IPv6 header is not in its own payload length: 82 bytes, 65453).
SEE = "; see 'gro-replay synth --help'\n"


def read_pcap(path) -> list[tuple[int, bytes]]:
    """(ts_ns, frame) of each record of the little-endian nanosecond pcap synth writes."""
    data = path.read_bytes()
    assert data[:4] == b"\x4d\x3c\xb2\xa1"
    out, off = [], 24
    while off < len(data):
        sec, ns, caplen, _wirelen = struct.unpack_from("<IIII", data, off)
        out.append((sec * 10**9 + ns, data[off + 16 : off + 16 + caplen]))
        off += 16 + caplen
    return out


V4_SUM = "an outer IPv4 packet's total length (RFC 791) is 16 bits, 65535 = 20 IPv4 + 8 UDP + 8 VXLAN + 14 Ethernet"
V6_SUM = "an outer UDP datagram's length (RFC 768; the outer IPv6 payload length, RFC 8200) is 16 bits, 65535 = 8 UDP"
TOO_LARGE = [
    (
        ["--last-payload", "65434"],
        f"--last-payload 65434 is more than the 65433 payload bytes a segment can carry with these headers: {V4_SUM} "
        "+ 20 IPv4 + 32 TCP + 65433",
    ),
    (
        ["--mss", "65535"],
        f"--mss 65535 is more than the 65433 payload bytes a segment can carry with these headers: {V4_SUM} "
        "+ 20 IPv4 + 32 TCP + 65433",
    ),
    (
        ["--mss", "65454", "--outer-ipv6"],
        f"--mss 65454 is more than the 65453 payload bytes a segment can carry with these headers: {V6_SUM} "
        "+ 8 VXLAN + 14 Ethernet + 20 IPv4 + 32 TCP + 65453",
    ),
    (
        # Geneve: 8 bytes + 252 of options; inner IPv6 40; TCP without options 20
        ["--mss", "65194", "--outer-ipv6", "--inner-ipv6", "--encap", "geneve", "--geneve-opt-bytes", "252"]
        + ["--no-timestamps"],
        f"--mss 65194 is more than the 65193 payload bytes a segment can carry with these headers: {V6_SUM} "
        "+ 260 Geneve + 14 Ethernet + 40 IPv6 + 20 TCP + 65193",
    ),
    (
        ["--mix", "overlay-node", "--mss", "65434"],
        f"--mss 65434 is more than the 65433 payload bytes a segment can carry with these headers: {V4_SUM} "
        "+ 20 IPv4 + 32 TCP + 65433",
    ),
]


@pytest.mark.parametrize(
    ("opts", "line"), TOO_LARGE, ids=lambda o: " ".join(o) if isinstance(o, list) else ""
)
def test_a_payload_the_length_fields_cannot_hold_names_its_option_and_limit(runner, tmp_path, opts, line):
    """Was the builder's "inner IPv4 total length 65587 exceeds 65535" (no option; for --last-payload after every
    other frame was written)."""
    out = tmp_path / "s.pcap"
    r = runner.invoke(main, ["synth", "--frames", "10", *opts, str(out)], prog_name="gro-replay")
    assert r.exit_code == 2, r.stderr
    assert r.stderr == f"Error: {line}{SEE}"
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    ("opts", "frame_len"),
    [
        (["--mss", "65433"], 14 + 65535),
        (["--frames", "2", "--mss", "1000", "--last-payload", "65433"], 14 + 65535),
        (["--mss", "65453", "--outer-ipv6"], 14 + 40 + 65535),
        (["--mix", "overlay-node", "--frames", "2", "--mss", "65433"], 14 + 65535),
        # one frame: it is the last, so --mss is never sent and not refused
        (["--frames", "1", "--mss", "65535", "--last-payload", "10"], 14 + 102 + 10),
    ],
    ids=["mss", "last-payload", "outer-ipv6", "mix", "mss-unsent"],
)
def test_the_largest_payload_is_written(runner, tmp_path, opts, frame_len):
    out = tmp_path / "s.pcap"
    r = runner.invoke(main, ["synth", *opts, str(out)], prog_name="gro-replay")
    assert r.exit_code == 0, r.stderr
    assert max(len(frame) for _ts, frame in read_pcap(out)) == frame_len


@pytest.mark.parametrize("encap", ["vxlan", "geneve"])
@pytest.mark.parametrize("outer_ipv6", [False, True])
@pytest.mark.parametrize("inner_ipv6", [False, True])
@pytest.mark.parametrize("timestamps", [False, True])
def test_payload_limit_is_where_the_builder_stops(encap, outer_ipv6, inner_ipv6, timestamps):
    """payload_limit is derived from the header sizes; the builder checks each length field as it fills it in: the
    two agree to the byte for every header combination synth makes."""
    sc = Scenario(
        encap=encap,
        outer_ipv6=outer_ipv6,
        inner_ipv6=inner_ipv6,
        timestamps=timestamps,
        geneve_opt_bytes=12 if encap == "geneve" else 0,
        frames=2,
    )
    spec = flow_spec(sc, 0)
    limit = payload_limit(spec).payload
    headers = (40 if outer_ipv6 else 20) + 8 + 8 + (12 if encap == "geneve" else 0) + 14
    headers += (40 if inner_ipv6 else 20) + 20 + (12 if timestamps else 0)
    assert limit == 65535 - headers + (40 if outer_ipv6 else 0)
    assert len(build_frame(replace(spec, payload=limit))) == 14 + headers + limit
    with pytest.raises(ValueError, match="exceeds 65535"):
        build_frame(replace(spec, payload=limit + 1))
    with pytest.raises(ScenarioError) as e:
        replace(sc, mss=limit + 1)
    assert str(e.value).startswith(f"mss {limit + 1} is more than the {limit} payload bytes")


#: 2**32 s, less a nanosecond: the last instant a pcap record's 32-bit seconds field holds
PCAP_LAST_NS = 2**32 * 10**9 - 1


def test_a_last_timestamp_past_the_pcap_seconds_names_the_options_and_the_latest_start(runner, tmp_path):
    out = tmp_path / "s.pcap"
    # 100 frames 1000 s apart: 99,000 s after the first
    args = ["synth", "--frames", "100", "--gap-us", "1000000000", "--start-ns"]
    start = PCAP_LAST_NS - 99_000 * 10**9
    r = runner.invoke(main, [*args, str(start + 1), str(out)], prog_name="gro-replay")
    assert r.exit_code == 2
    assert r.stderr == (
        f"Error: --start-ns {start + 1} puts the last of 100 frames (--flows × --frames, --gap-us apart) at "
        f"{PCAP_LAST_NS + 1} ns, past a pcap record's 32-bit seconds (at most {PCAP_LAST_NS} ns): --start-ns at most "
        f"{start} with these gaps{SEE}"
    )
    assert os.listdir(tmp_path) == []
    r = runner.invoke(main, [*args, str(start), str(out)], prog_name="gro-replay")
    assert r.exit_code == 0, r.stderr
    assert read_pcap(out)[-1][0] == PCAP_LAST_NS


def test_gaps_longer_than_the_pcap_seconds_name_the_gap_options(runner, tmp_path):
    out = tmp_path / "s.pcap"
    # 2 flows × 5,000,000 frames with a 1000 s pause after every 2nd: 4,999,999 pauses and 5,000,000 gaps of 1 ms
    opts = ["--flows", "2", "--frames", "5000000", "--gap-us", "1000", "--pause-every", "2"]
    r = runner.invoke(main, ["synth", *opts, "--pause-us", "1000000000", str(out)], prog_name="gro-replay")
    assert r.exit_code == 2
    span = 4_999_999 * 10**12 + 5_000_000 * 10**6
    assert r.stderr == (
        "Error: the last of 10,000,000 frames (--flows × --frames, --gap-us/--pause-us apart) comes "
        f"{span} ns after the first, past a pcap record's 32-bit seconds (at most {PCAP_LAST_NS} ns): shorten "
        f"--gap-us/--pause-us or send fewer frames{SEE}"
    )
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    "kwargs",
    [
        {"flows": 3, "frames": 7, "gap_ns": 11, "pause_every": 4, "pause_ns": 1000},
        {"flows": 2, "frames": 4, "gap_ns": 5, "pause_every": 8, "pause_ns": 99},
        {"frames": 5, "gap_ns": 3},
    ],
)
def test_last_ns_is_the_last_frames_timestamp(kwargs):
    sc = Scenario(**kwargs)
    assert sc.last_ns() == list(synth_frames(sc))[-1][0]


def test_a_scenario_error_reads_field_names_outside_the_command():
    with pytest.raises(ScenarioError) as e:
        Scenario(geneve_opt_bytes=8)
    assert str(e.value) == "geneve_opt_bytes needs encap geneve"
    assert (
        e.value.words({"geneve_opt_bytes": "--geneve-opt-bytes"}) == "--geneve-opt-bytes needs encap geneve"
    )
    with pytest.raises(ScenarioError, match=r"^vni 16777216 does not fit the 24-bit VNI field$"):
        Scenario(vni=1 << 24)
    with pytest.raises(ScenarioError, match=r"^port 0 is not a UDP port$"):
        OverlayMix(port=0)
    with pytest.raises(ScenarioError, match=r"^connections must be at most 32536 "):
        OverlayMix(connections=32537)
    with pytest.raises(
        ScenarioError, match=r"^start_ns -1 is not in a pcap record's 0 \.\. 4294967295999999999 ns$"
    ):
        OverlayMix(start_ns=-1)


@pytest.mark.parametrize("value", ["1000000000.0000001", "-1e-30"])
@pytest.mark.parametrize("opt", ["--gap-us", "--pause-us"])
def test_a_time_just_outside_its_range_as_written_is_refused(runner, tmp_path, opt, value):
    """0..1e9 µs holds the number as written (cli/params.py ``FiniteFloat``): both values round into the range
    as floats (1e9 and -0.0) and were taken."""
    out = tmp_path / "x.pcap"
    r = runner.invoke(main, ["synth", str(out), opt, value])
    assert r.exit_code == 2 and not out.exists(), r.output
    assert r.stderr.splitlines()[0].startswith(
        f"Error: {opt}: {value!r} is not a finite number in 0..1000000000"
    ), r.stderr
