"""Bad input (issue 2, "What to build" 8): a one-line error with exit code 2, or a counted skip with its reason;
never a traceback; every frame read appears in the stats exactly once.

Frames are built field by field with ``packet.build`` (and dpkt for non-tunnel traffic), then corrupted at a
named header field with the lengths that follow it kept consistent, so that exactly one decode rule fires.
Frames that the decoder accepts go through the simulated kernels; the stack outcome of each phys-stage skb
names where the kernel's normal path leaves it (gro-spec §6.1: IP input → UDP → tunnel ``encap_rcv``).
"""

from __future__ import annotations

import gzip
import json
import random
import struct

import dpkt
import pytest
from conftest import FIX_SAMPLE, GENEVE_SAMPLE, VXLAN4_SAMPLE

from gro_replay.capture.writer import PcapWriter
from gro_replay.cli import main
from gro_replay.packet.build import FrameSpec, build_flow, build_frame
from gro_replay.packet.csum import ipv4_header_checksum
from gro_replay.packet.vxlan import VxlanHdr

ETH = 14
IP4 = 20
UDP = 8


# -- helpers --------------------------------------------------------------------------------------------------------
def write_pcap(path, frames, **kw) -> None:
    """``frames``: bytes, or (bytes, orig_len) pairs; 1 µs apart."""
    with PcapWriter(path, **kw) as w:
        for i, f in enumerate(frames):
            buf, orig = (f, None) if isinstance(f, bytes) else f
            w.write(1_000_000_000 + 1000 * i, buf, orig)


def run_json(runner, path, *extra):
    r = runner.invoke(main, [str(path), "--format", "json", "-q", *extra])
    assert "Traceback" not in r.stderr and r.exception is None or isinstance(r.exception, SystemExit)
    return r


def one_line_error(r, exit_code: int = 2) -> str:
    """The run failed with ``exit_code`` and exactly one stderr line ``Error: …``; returns that line."""
    assert r.exit_code == exit_code, r.output
    assert r.stdout == ""
    assert "Traceback" not in r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), r.stderr
    return lines[0]


def accounted(doc: dict) -> None:
    """Every frame read is replayed or skipped exactly once, and the phys stage hands up every replayed frame."""
    inp = doc["input"]
    as_read = inp["frames_replayed"] - inp["segments_created"] + inp["resegmented_frames"]
    assert inp["frames_read"] == as_read + sum(inp["skipped"].values())
    assert sum(inp["classes"].values()) == inp["frames_replayed"]
    for k in doc["kernels"]:
        phys, tun = k["stages"]["phys"], k["stages"]["tunnel"]
        assert phys["frames_in"] == inp["frames_replayed"]
        assert phys["segments_delivered"] == phys["frames_in"] - phys["gro_complete_errors"]
        assert sum(k["stack"].values()) == phys["skbs_delivered"]
        assert tun["segments_delivered"] == tun["frames_in"] - tun["gro_complete_errors"]


def cut_datagram(frame: bytes, udp_payload: int) -> bytes:
    """An outer-IPv4/UDP frame cut to ``udp_payload`` bytes after the UDP header, IP and UDP lengths made to agree
    (IP header checksum recomputed, UDP checksum 0) so that only the tunnel/inner parse can object."""
    end = ETH + IP4 + UDP + udp_payload
    b = bytearray(frame[:end])
    struct.pack_into("!H", b, ETH + 2, IP4 + UDP + udp_payload)
    struct.pack_into("!H", b, ETH + 10, 0)
    struct.pack_into("!H", b, ETH + 10, ipv4_header_checksum(bytes(b[ETH : ETH + IP4])))
    struct.pack_into("!HH", b, ETH + IP4 + 4, UDP + udp_payload, 0)
    return bytes(b)


def ip_cut(frame: bytes, ip_payload: int) -> bytes:
    """An outer-IPv4 frame cut to ``ip_payload`` bytes after the IP header, with the IP total length to match."""
    b = bytearray(frame[: ETH + IP4 + ip_payload])
    struct.pack_into("!H", b, ETH + 2, IP4 + ip_payload)
    struct.pack_into("!H", b, ETH + 10, 0)
    struct.pack_into("!H", b, ETH + 10, ipv4_header_checksum(bytes(b[ETH : ETH + IP4])))
    return bytes(b)


def patch(frame: bytes, off: int, fmt: str, value: int) -> bytes:
    b = bytearray(frame)
    struct.pack_into(fmt, b, off, value)
    return bytes(b)


GOOD = build_frame(FrameSpec())  # VXLAN/IPv4, outer checksum 0, inner IPv4/TCP with timestamps, 1514 bytes
GOOD6 = build_frame(FrameSpec(outer_ipv6=True))
GENEVE = build_frame(FrameSpec(encap="geneve"))
INNER_L3 = ETH + IP4 + UDP + 8 + ETH  # 64: inner IPv4 header of GOOD

#: (skip reason, frame) — each corrupts one header (decode.py's rules; the reasons are its SKIP_* names). An outer UDP
#: length under 8 or beyond the IP datagram is no skip: GRO merges such a frame (tests/test_outer_udp_length.py).
MALFORMED = {
    "ethernet_short": ("malformed:ethernet", GOOD[:12]),
    "vlan_tag_cut": ("malformed:ethernet", GOOD[:12] + b"\x81\x00\x00\x05"),
    "outer_ip_version": ("malformed:outer_ip", patch(GOOD, ETH, "!B", 0x65)),
    "outer_ip_ihl_below_5": ("malformed:outer_ip", patch(GOOD, ETH, "!B", 0x44)),
    "outer_ip_tot_len_beyond_frame": ("malformed:outer_ip", patch(GOOD, ETH + 2, "!H", 1501)),
    "outer_ipv6_payload_len_beyond_frame": ("malformed:outer_ip", patch(GOOD6, ETH + 4, "!H", 1481)),
    "outer_ipv4_cut_inside_header": ("malformed:outer_ip", GOOD[: ETH + 19]),
    "outer_udp_header_cut": ("malformed:outer_udp", ip_cut(GOOD, 4)),
    "vxlan_header_cut": ("malformed:tunnel_header", cut_datagram(GOOD, 4)),
    "geneve_options_beyond_datagram": (
        "malformed:tunnel_header",
        patch(cut_datagram(GENEVE, 8 + 10), ETH + IP4 + UDP, "!B", 4),  # opt_len 4 = 16 option bytes
    ),
    "inner_ethernet_cut": ("malformed:inner_headers", cut_datagram(GOOD, 8 + 10)),
    "inner_ip_version": ("malformed:inner_headers", patch(GOOD, INNER_L3, "!B", 0x65)),
    "inner_ip_cut": ("malformed:inner_headers", cut_datagram(GOOD, 8 + ETH + 12)),
    "inner_tcp_header_cut": ("malformed:inner_headers", cut_datagram(GOOD, 8 + ETH + IP4 + 10)),
}


# -- one-line errors (exit 2) ---------------------------------------------------------------------------------------
def test_missing_file(runner, tmp_path):
    path = tmp_path / "nope.pcap"
    line = one_line_error(runner.invoke(main, [str(path)]))
    assert line == f"Error: {path}: no such file"


def test_missing_file_library_raises_capture_error(tmp_path):
    from gro_replay.capture.reader import CaptureError
    from gro_replay.sim import ReplayConfig, replay_capture

    with pytest.raises(CaptureError, match="no such file"):
        replay_capture(str(tmp_path / "nope.pcap"), ReplayConfig())


def test_directory(runner, tmp_path):
    r = runner.invoke(main, [str(tmp_path)])
    assert r.exit_code == 2 and "Traceback" not in r.stderr
    assert "is a directory" in r.stderr


def test_empty_file(runner, tmp_path):
    path = tmp_path / "empty.pcap"
    path.write_bytes(b"")
    assert one_line_error(runner.invoke(main, [str(path)])) == f"Error: {path}: empty file"


@pytest.mark.parametrize("args", [[], ["--vxlan-port", "auto"]])
@pytest.mark.parametrize("gz", [False, True])
def test_empty_pipe_is_empty_input(args, gz):
    """An empty stream is no empty file: '-: empty input', also when it is copied for auto ports (the copy is a
    file, the input is not) and when it is an empty gzip stream."""
    import subprocess
    import sys

    data = gzip.compress(b"") if gz else b""
    r = subprocess.run(
        [sys.executable, "-m", "gro_replay", "-", *args], input=data, capture_output=True, timeout=120
    )
    want = "Error: standard input: empty input" + (" (after gzip decompression)" if gz else "")
    assert (r.returncode, r.stderr.decode().strip()) == (2, want)


def test_garbage(runner, tmp_path):
    path = tmp_path / "garbage.pcap"
    path.write_bytes(b"this is not a capture file at all\n" * 20)
    line = one_line_error(runner.invoke(main, [str(path)]))
    assert line.startswith(f"Error: {path}: not a pcap or pcapng file")


def test_unknown_link_type(runner, tmp_path):
    path = tmp_path / "wifi.pcap"
    write_pcap(path, [GOOD], linktype=105)  # DLT_IEEE802_11
    line = one_line_error(runner.invoke(main, [str(path)]))
    assert line.startswith(f"Error: {path}: unsupported link type 105")


def test_corrupt_record_in_the_middle(runner, tmp_path):
    path = tmp_path / "corrupt.pcap"
    write_pcap(path, [GOOD, GOOD])
    data = bytearray(path.read_bytes())
    struct.pack_into("<I", data, 24 + 16 + len(GOOD) + 8, 0x7FFFFFFF)  # second record's caplen
    path.write_bytes(bytes(data))
    line = one_line_error(runner.invoke(main, [str(path)]))
    assert line.startswith(f"Error: {path}: corrupt record")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--poll", "gap:x"],
            "Error: invalid poll model 'gap:x': use budget, gap:US or rx-usecs:US"
            ", US a decimal number of µs from 0 to 4294967295 (ethtool's rx-usecs is 32 bits)",
        ),
        (
            ["--poll", "gap:-1"],
            "Error: invalid poll model 'gap:-1': use budget, gap:US or rx-usecs:US"
            ", US a decimal number of µs from 0 to 4294967295 (ethtool's rx-usecs is 32 bits)",
        ),
        (
            ["--poll", "gap:inf"],
            "Error: invalid poll model 'gap:inf': use budget, gap:US or rx-usecs:US"
            ", US a decimal number of µs from 0 to 4294967295 (ethtool's rx-usecs is 32 bits)",
        ),
        (
            ["--poll", "rx-usecs:nan"],
            "Error: invalid poll model 'rx-usecs:nan': use budget, gap:US or rx-usecs:US"
            ", US a decimal number of µs from 0 to 4294967295 (ethtool's rx-usecs is 32 bits)",
        ),
        # the range holds the number as written, not its float (4294967295.0000001 and -1e-30 round into it)
        (
            ["--poll", "gap:4294967295.0000001"],
            "Error: invalid poll model 'gap:4294967295.0000001': use budget, gap:US or rx-usecs:US"
            ", US a decimal number of µs from 0 to 4294967295 (ethtool's rx-usecs is 32 bits)",
        ),
        (
            ["--poll", "rx-usecs:-1e-30"],
            "Error: invalid poll model 'rx-usecs:-1e-30': use budget, gap:US or rx-usecs:US"
            ", US a decimal number of µs from 0 to 4294967295 (ethtool's rx-usecs is 32 bits)",
        ),
        (["--rss-key", "zz"], "Error: --rss-key: must be hex digits, two per byte"),
        (["--rss-key", "6d" * 40 + "5"], "Error: --rss-key: must be hex digits, two per byte"),
        # an empty key is a key of no bytes, not the default (breaker's finding)
        (
            ["--rss-key", ""],
            "Error: --rss-key: needs at least 40 bytes (80 hex digits) for IPv6 4-tuples",
        ),
        (
            ["--rss-key", "00" * 8],
            "Error: --rss-key: needs at least 40 bytes (80 hex digits) for IPv6 4-tuples",
        ),
        (["--vxlan-port", "6081"], "Error: port 6081 given as both VXLAN and Geneve"),
    ],
)
def test_bad_option_values(runner, args, message):
    # click's "; see 'PROG replay --help'" after a bad value names the program as it was started
    assert one_line_error(runner.invoke(main, [str(FIX_SAMPLE), *args])).split("; see '")[0] == message


# -- counted skips (exit 0) -----------------------------------------------------------------------------------------
def test_truncated_last_record(runner, tmp_path):
    path = tmp_path / "cut.pcap"
    write_pcap(path, [GOOD, GOOD, GOOD])
    data = path.read_bytes()
    path.write_bytes(data[:-100])  # the third record loses its last 100 bytes
    r = run_json(runner, path)
    assert r.exit_code == 0 and r.stderr == ""
    doc = json.loads(r.stdout)
    assert doc["input"]["frames_read"] == 3
    assert doc["input"]["frames_replayed"] == 2
    assert doc["input"]["skipped"] == {"truncated_record": 1}
    accounted(doc)


def test_truncated_gzip_stream(runner, tmp_path):
    plain = tmp_path / "p.pcap"
    write_pcap(plain, [GOOD] * 4)
    path = tmp_path / "cut.pcap.gz"
    z = gzip.compress(plain.read_bytes(), mtime=0)
    path.write_bytes(z[: len(z) - 40])
    r = run_json(runner, path)
    assert r.exit_code in (0, 2) and "Traceback" not in r.stderr
    if r.exit_code == 0:
        doc = json.loads(r.stdout)
        assert doc["input"]["skipped"].get("truncated_record") == 1
        accounted(doc)
    else:
        one_line_error(r)


def test_snaplen_cut_frames(runner, tmp_path):
    path = tmp_path / "snap.pcap"
    write_pcap(path, [GOOD, GOOD, (GOOD[:96], len(GOOD))], snaplen=262144)
    write_pcap(tmp_path / "snap96.pcap", [GOOD] * 3, snaplen=96)
    for p, cut in ((path, 1), (tmp_path / "snap96.pcap", 3)):
        r = run_json(runner, p)
        assert r.exit_code == 0
        doc = json.loads(r.stdout)
        assert doc["input"]["skipped"] == {"snaplen_cut": cut}
        assert doc["input"]["frames_replayed"] == 3 - cut
        accounted(doc)


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_header_is_a_counted_skip(runner, tmp_path, name):
    reason, bad = MALFORMED[name]
    path = tmp_path / f"{name}.pcap"
    write_pcap(path, [GOOD, bad, GOOD])
    r = run_json(runner, path)
    assert r.exit_code == 0 and r.stderr == ""
    doc = json.loads(r.stdout)
    assert doc["input"]["skipped"] == {reason: 1}
    assert doc["input"]["classes"] == {"tunnel_tcp": 2}
    accounted(doc)


# -- traffic that passes through unmerged or outside the tunnels ----------------------------------------------------
def plain_tcp(seq: int, payload: int = 1000, ip_id: int = 1) -> bytes:
    tcp = dpkt.tcp.TCP(
        sport=33000, dport=80, seq=seq, ack=1, flags=dpkt.tcp.TH_ACK, win=512, data=b"x" * payload
    )
    ip = dpkt.ip.IP(src=bytes([10, 1, 0, 1]), dst=bytes([10, 1, 0, 2]), p=6, ttl=64, id=ip_id, df=1)
    ip.data = tcp
    ip.len = len(ip)
    return bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=0x0800, data=ip))


def plain_udp(dport: int = 53) -> bytes:
    udp = dpkt.udp.UDP(sport=40000, dport=dport, data=b"\x12\x34" + b"\x00" * 30)
    udp.ulen = len(udp)
    ip = dpkt.ip.IP(src=bytes([10, 1, 0, 1]), dst=bytes([10, 1, 0, 3]), p=17, ttl=64, data=udp)
    ip.len = len(ip)
    return bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=0x0800, data=ip))


def arp() -> bytes:
    a = dpkt.arp.ARP(sha=b"\x02" * 6, spa=bytes([10, 1, 0, 1]), tha=b"\x00" * 6, tpa=bytes([10, 1, 0, 2]))
    return bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\xff" * 6, type=0x0806, data=a)) + b"\x00" * 18


def icmp_in_vxlan(seq: int) -> bytes:
    echo = dpkt.icmp.ICMP.Echo(id=7, seq=seq, data=b"ping" * 14)
    icmp = dpkt.icmp.ICMP(type=8, code=0, data=echo)
    iip = dpkt.ip.IP(src=bytes([192, 168, 1, 1]), dst=bytes([192, 168, 1, 2]), p=1, ttl=64, data=icmp)
    iip.len = len(iip)
    inner = dpkt.ethernet.Ethernet(
        src=b"\x02\x00\x00\x00\x01\x01", dst=b"\x02\x00\x00\x00\x01\x02", type=0x0800
    )
    inner.data = iip
    vx = VxlanHdr(vx_vni=100 << 8, data=bytes(inner))
    udp = dpkt.udp.UDP(sport=49152, dport=4789, data=bytes(vx))
    udp.ulen = len(udp)
    oip = dpkt.ip.IP(src=bytes([10, 0, 0, 1]), dst=bytes([10, 0, 0, 2]), p=17, ttl=64, df=1, data=udp)
    oip.len = len(oip)
    frame = bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=0x0800, data=oip))
    return patch(frame, ETH + IP4 + 6, "!H", 0)  # outer UDP checksum 0, as vxlan sends by default


def test_non_tunnel_traffic_is_replayed_and_counted(runner, tmp_path):
    path = tmp_path / "plain.pcap"
    tcp_cut = ip_cut(plain_tcp(3000, ip_id=3), 10)  # a TCP header cut short: still not tunnel traffic
    write_pcap(path, [plain_tcp(1000), plain_tcp(2000, ip_id=2), plain_udp(), arp(), tcp_cut])
    r = run_json(runner, path)
    assert r.exit_code == 0 and r.stderr == ""
    doc = json.loads(r.stdout)
    assert doc["input"]["skipped"] == {}
    assert doc["input"]["classes"] == {"not_tunnel": 5}
    accounted(doc)
    for k in doc["kernels"]:
        phys = k["stages"]["phys"]
        # plain TCP runs inet_gro_receive → tcp4_gro_receive on the phys device too (gro-spec §3.1, §5.5): the two
        # contiguous 1000-byte segments merge (the fix only touches UDP tunnels, so both kernels agree); UDP without
        # a tunnel socket and ARP (no packet offload) go up as they are (§4.6 "no socket", §2.2); the cut TCP
        # header flushes in tcp_gro_receive (header short) without completing the held aggregate
        assert (phys["skbs_delivered"], phys["aggregates"]) == (4, 1)
        assert phys["segs_per_skb_hist"] == {"1": 3, "2": 1}
        want = {"ip_local_deliver:not_udp": 2, "udp_rcv:no_socket": 1, "netif_receive_skb:not_ip": 1}
        assert k["stack"] == want
        assert k["stages"]["tunnel"]["frames_in"] == 0
        assert {f["class"] for f in k["flows"]} == {"not_tunnel"}


def test_inner_icmp_in_vxlan_is_tunnel_other(runner, tmp_path):
    path = tmp_path / "icmp.pcap"
    write_pcap(path, [icmp_in_vxlan(1), icmp_in_vxlan(2), *build_flow(FrameSpec(), [1398, 1398])])
    r = run_json(runner, path)
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    assert doc["input"]["classes"] == {"tunnel_other": 2, "tunnel_tcp": 2}
    accounted(doc)
    pre, post = doc["kernels"]
    for k in doc["kernels"]:
        # decapsulated and queued like any VXLAN frame (§6.2); ICMP (protocol 1) has no inet_offloads entry, so
        # neither stage merges it (inet_gro_receive, net/ipv4/af_inet.c; the reason carries iph->protocol)
        assert k["stack"]["queued"] >= 2
        (icmp,) = [f for f in k["flows"] if f["class"] == "tunnel_other"]
        assert icmp["key"]["tunnel"] == "vxlan" and icmp["key"]["inner"]["proto"] == 1
        assert (icmp["phys"]["skbs"], icmp["tunnel"]["skbs"]) == (2, 2)
        assert icmp["tunnel"]["end_reasons"] == {"inet_gro_receive:no_inet_offload(proto=1)": 2}
    # the TCP flow shows the fix as usual (§4.7 row 3)
    assert [k["stages"]["phys"]["skbs_delivered"] for k in (pre, post)] == [4, 3]


def test_every_kind_of_frame_in_one_capture_is_counted_once(runner, tmp_path):
    frames = [GOOD, plain_tcp(1000), arp(), icmp_in_vxlan(1), (GOOD[:100], len(GOOD))]
    frames += [bad for _reason, bad in MALFORMED.values()]
    path = tmp_path / "mix.pcap"
    write_pcap(path, frames)
    data = path.read_bytes()
    path.write_bytes(data + data[24 : 24 + 16 + 10])  # a truncated last record (header + 10 bytes)
    r = run_json(runner, path)
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    inp = doc["input"]
    want_skips = {"snaplen_cut": 1, "truncated_record": 1}
    for reason, _bad in MALFORMED.values():
        want_skips[reason] = want_skips.get(reason, 0) + 1
    assert inp["skipped"] == want_skips
    assert inp["frames_read"] == len(frames) + 1
    assert inp["classes"] == {"tunnel_tcp": 1, "not_tunnel": 2, "tunnel_other": 1}
    accounted(doc)


def test_gro_cells_backlog_drops_are_counted_once(monkeypatch):
    """net/core/gro_cells.c ``gro_cells_receive`` drops when the cell queue already holds more than
    netdev_max_backlog skbs. With the limit at 0, the pre-fix phys poll of the fix sample (17 GRO_NORMAL skbs, one
    poll, gro-spec §4.7 row 3) queues the first skb and drops the other 16 before the cell runs (§6.4)."""
    from gro_replay.kernel import gro_cells
    from gro_replay.kernel.model import K_5_11
    from gro_replay.sim import PollModel, ReplayConfig, replay_capture

    monkeypatch.setattr(gro_cells, "NETDEV_MAX_BACKLOG", 0)
    res = replay_capture(str(FIX_SAMPLE), ReplayConfig(kernels=(K_5_11,), poll=PollModel("budget")))
    (ks,) = res.kernels
    assert dict(ks.stack) == {"queued": 1, "gro_cells_receive:backlog_full": 16}
    assert sum(ks.stack.values()) == ks.stages["phys"].skbs == 17
    assert (ks.stages["tunnel"].frames_in, ks.stages["tunnel"].skbs) == (1, 1)


# -- fuzzing: random corruptions of the shipped samples ------------------------------------------------------------
def _records(data: bytes) -> list[tuple[int, int]]:
    """(data offset, caplen) of each record of a little-endian pcap (the samples' format)."""
    out, off = [], 24
    while off + 16 <= len(data):
        caplen = struct.unpack_from("<I", data, off + 8)[0]
        out.append((off + 16, caplen))
        off += 16 + caplen
    return out


def test_fuzzed_samples_exit_0_or_2_without_traceback(runner, tmp_path):
    """~200 corruptions: header bytes of random frames (biased to the first 100 bytes, where every header lives),
    record headers, and cuts at random offsets. Each run exits 0 (and accounts for every frame) or 2 (one line)."""
    rng = random.Random(0x89E5C58F)
    samples = [p.read_bytes() for p in (FIX_SAMPLE, GENEVE_SAMPLE, VXLAN4_SAMPLE)]
    start, caplen = _records(samples[1])[63]
    samples[1] = samples[1][: start + caplen]  # the Geneve sample's first 64 frames keep the runs short
    profiles = ["none", "unnecessary", "unnecessary-tunnel", "complete", "partial"]
    codes = {0: 0, 2: 0}
    for i in range(200):
        data = bytearray(rng.choice(samples))
        recs = _records(bytes(data))
        kind = i % 4
        if kind == 3:
            data = data[: rng.randrange(len(data))]
        else:
            for _ in range(rng.choice((1, 2, 4, 8))):
                if kind == 2:
                    off = rng.randrange(len(data))  # anywhere, record headers included
                else:
                    start, caplen = rng.choice(recs)
                    off = start + min(caplen - 1, int(rng.expovariate(1 / 40)))
                data[off] = rng.randrange(256)
        path = tmp_path / f"fuzz{i}.pcap"
        path.write_bytes(bytes(data))
        args = ["--rx-csum", rng.choice(profiles), "--poll", rng.choice(["budget", "gap:5", "rx-usecs:3"])]
        r = run_json(runner, path, *args)
        assert r.exit_code in codes, (i, r.exit_code, r.output)
        codes[r.exit_code] += 1
        if r.exit_code == 0:
            accounted(json.loads(r.stdout))
        else:
            one_line_error(r)
        path.unlink()
    assert codes[0] > 100  # most corruptions leave a readable capture: the skip/merge paths were exercised


def test_an_rss_key_as_ethtool_prints_it_is_the_same_key(runner):
    """`ethtool -x DEV` prints the RSS key as colon-separated pairs (6d:5a:56:…): that form is the same key as its
    plain digits (breaker's finding: it was refused as "must be hex digits"); a colon inside a pair is not hex."""
    pairs = [f"{(i * 37) % 256:02x}" for i in range(52)]
    docs = []
    for key in (":".join(pairs), "".join(pairs), " ".join(pairs)):
        r = run_json(runner, FIX_SAMPLE, "--rss-key", key)
        assert r.exit_code == 0, r.output
        doc = json.loads(r.stdout)
        docs.append((doc["config"], doc["kernels"]))
    assert docs[0] == docs[1] == docs[2]
    assert one_line_error(runner.invoke(main, [str(FIX_SAMPLE), "--rss-key", "6:d5a"])).split("; see '")[
        0
    ] == ("Error: --rss-key: must be hex digits, two per byte")


def test_one_rss_key_written_two_ways_is_one_value(runner):
    """The same key in colon pairs, plain, and upper case is one value, given twice (README: "the same value twice
    is accepted"); two different keys are refused (breaker's finding: the strings were compared)."""
    pairs = [f"{(i * 37) % 256:02x}" for i in range(52)]
    plain = "".join(pairs)
    r = run_json(runner, FIX_SAMPLE, "--rss-key", ":".join(pairs), "--rss-key", plain.upper())
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["config"]["nic"]["rss_key"] == plain
    other = "ff" + plain[2:]
    assert one_line_error(runner.invoke(main, [str(FIX_SAMPLE), "--rss-key", plain, "--rss-key", other])) == (
        f"Error: --rss-key given twice with different values ({plain}, {other}): give it once"
    )


@pytest.mark.parametrize(
    ("args", "why"),
    [(["--rss", "none"], "--rss none"), (["--nic", "veth"], "--nic veth's preset (no RX hash)")],
)
def test_an_rss_key_without_an_rx_hash_is_refused(runner, args, why):
    """--rss none (hash 0, as on veth) and the presets without RX hash (veth, virtio-net: NicPreset.rss "none")
    read no key: --rss-key beside them is void, refused as README's Usage says of an option another makes void
    (breaker's finding: accepted, and config.nic showed rss none with the key)."""
    key = "6d" * 40
    assert one_line_error(runner.invoke(main, [str(FIX_SAMPLE), *args, "--rss-key", key])) == (
        f"Error: --rss-key needs an RX hash: with {why} every hash is 0 and no key is read"
    )
    # a given --rss with a hash makes the preset's fields void instead: the key is read
    r = run_json(runner, FIX_SAMPLE, "--nic", "veth", "--rss", "toeplitz", "--rss-key", key)
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize(
    ("message", "said"),
    [
        ("OUTPUT -: standard output is a terminal.", "OUTPUT -: standard output is a terminal"),
        ("Invalid value for\n  'CAPTURE'.", "invalid value for 'CAPTURE'"),
        ("A capture is needed.", "a capture is needed"),
    ],
)
def test_a_message_starting_with_a_metavar_keeps_its_case(message, said):
    """cli/app.py ``_phrase`` lower-cases a message's first letter to fit it after "Error: "; a first word in capitals
    is a metavar or an acronym (newcomer's finding: synth - on a terminal said 'oUTPUT -: …')."""
    from gro_replay.cli.app import _phrase

    assert _phrase(message) == said


@pytest.mark.parametrize(
    ("text", "number", "inside"),
    [
        ("0e99999999999999999999", 0.0, True),  # zero, whatever its exponent
        ("3e-99999999999999999999", 0.0, True),  # a tiny positive number: in 0..max, as its float 0.0
        ("-3e-99999999999999999999", -0.0, False),  # a tiny negative one: below 0, though its float is -0.0
        ("1e99999999999999999999", float("inf"), False),
        ("1e" + "9" * 5000, float("inf"), False),  # more digits than int() converts: no ValueError
        ("4294967295.0000001", 4294967295.0, False),
        ("4294967295", 4294967295.0, True),
    ],
)
def test_a_decimal_number_s_range_is_that_of_the_number_as_written(text, number, inside):
    """project.decimal_number / decimal_in (every option that reads a decimal number): exponents of more digits
    than ``decimal.Decimal`` holds were 'not a number' (breaker's finding), though float reads them."""
    from gro_replay.project import decimal_in, decimal_number

    assert decimal_number(text) == number
    assert decimal_in(text, 0, 4294967295) is inside
