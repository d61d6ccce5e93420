"""``--write-pcap DIR``: per kernel and device, the skbs it delivered as tcpdump on that device would capture them.

Expected values come from the kernel's rules, not from the writer: an AF_PACKET tap records an skb from its MAC
header (net/packet/af_packet.c ``packet_rcv``); a phys skb starts at the outer Ethernet header, a tunnel skb at
the inner one (``eth_type_trans`` on the vxlan/geneve device, gro-spec §6.2); a packet completed with count 1
goes up unchanged (gro-spec §1.6); an aggregate's headers are rewritten by the gro_complete chain (§5.7).
Files are read back with tshark (Debian package ``tshark``; ``make deps`` installs it).
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import dpkt
import pytest
from click.testing import CliRunner

from gro_replay.cli import main
from gro_replay.packet.build import FrameSpec, build_flow
from gro_replay.report.pcapout import DevicePcaps, skb_frame
from gro_replay.sim import ReplayConfig, replay_frames

ROOT = Path(__file__).resolve().parents[1]
FIX_SAMPLE = ROOT / "sample_pcaps" / "vxlan-zero-csum-fix-89e5c58fc1e2.pcap"
GENEVE_SAMPLE = ROOT / "sample_pcaps" / "geneve-ipv6-bulk.pcap"
VXLAN4_SAMPLE = ROOT / "sample_pcaps" / "vxlan-4flows-computed-csum.pcap"
TSHARK = shutil.which("tshark")
needs_tshark = pytest.mark.skipif(
    TSHARK is None, reason="tshark is not installed (Debian package tshark; `make deps` installs it)"
)

#: Header bytes in front of the TCP payload of the fix sample's frames, from the outer IP header on:
#: IPv4 20 + UDP 8 + VXLAN 8 + inner Ethernet 14 + IPv4 20 + TCP 20 with the 12-byte timestamp option.
FIX_HDRS = 20 + 8 + 8 + 14 + 20 + 32
ETH = 14
#: tshark severity of an expert "error" item (epan/proto.h PI_ERROR).
PI_ERROR = 0x800000


def read_frames(path: Path) -> list[bytes]:
    """Every record's frame bytes (dpkt reads both pcap magics)."""
    with open(path, "rb") as fh:
        r = dpkt.pcap.Reader(fh)
        assert r.datalink() == dpkt.pcap.DLT_EN10MB
        return [bytes(buf) for _, buf in r]


def record_times_ns(path: Path) -> list[int]:
    """Exact record timestamps in ns (struct arithmetic: float seconds lose nanoseconds at 1.6e9 s)."""
    data = path.read_bytes()
    assert struct.unpack_from("<I", data)[0] == 0xA1B23C4D  # nanosecond magic
    off, out = 24, []
    while off < len(data):
        sec, nsec, caplen, _ = struct.unpack_from("<IIII", data, off)
        out.append(sec * 10**9 + nsec)
        off += 16 + caplen
    return out


def tshark_fields(path: Path, *fields: str, check_ip: bool = True) -> list[list[str]]:
    args = [TSHARK, "-n", "-r", str(path), "-T", "fields"]
    if check_ip:
        args += ["-o", "ip.check_checksum:TRUE"]
    for f in fields:
        args += ["-e", f]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return [line.split("\t") for line in out.splitlines()]


def tshark_problems(path: Path) -> list[str]:
    """Frames tshark calls malformed or flags with an expert error."""
    out = subprocess.run(
        [TSHARK, "-n", "-r", str(path), "-Y", f"_ws.malformed || _ws.expert.severity >= {PI_ERROR:#x}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.splitlines()


def fold(s: int) -> int:
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def pseudo_sum_v4(saddr: bytes, daddr: bytes, proto: int, length: int) -> int:
    """16-bit ones' complement sum of the IPv4 pseudo header, not inverted."""
    words = struct.unpack("!HHHH", saddr + daddr)
    return fold(sum(words) + proto + length)


@pytest.fixture(scope="module")
def fix_pcaps(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fixpcaps")
    r = CliRunner().invoke(
        main,
        [
            str(FIX_SAMPLE),
            "--poll",
            "gap:5",
            "--write-pcap",
            str(out),
            "--pcap-format",
            "pcap",
            "--format",
            "json",
            "--quiet",
        ],
    )
    assert r.exit_code == 0, r.output
    assert r.stderr == ""  # --quiet: no progress, no notes
    return out


def test_write_pcap_files_per_kernel_and_device(fix_pcaps):
    # one file per kernel and delivering device: eth0 (phys NAPI) and vxlan0 (the 4789 socket's device)
    assert sorted(p.name for p in fix_pcaps.iterdir()) == [
        "post-fix-eth0.pcap",
        "post-fix-vxlan0.pcap",
        "pre-fix-eth0.pcap",
        "pre-fix-vxlan0.pcap",
    ]


def test_write_pcap_pre_fix_phys_frames_are_the_wire_frames(fix_pcaps):
    # pre-fix the udp_gro_receive gate refuses every frame (gro-spec §4.7 row 3): each goes up with count 1,
    # and napi_gro_complete hands a count-1 packet up unchanged (§1.6), so eth0 shows the captured frames.
    wire = read_frames(FIX_SAMPLE)
    got = read_frames(fix_pcaps / "pre-fix-eth0.pcap")
    assert got == wire
    assert [len(b) for b in got] == [1514] * 16 + [788]


def test_write_pcap_post_fix_phys_aggregates_lengths(fix_pcaps):
    # gap:5 puts frames 1-10 and 11-17 in separate polls (10 µs gap > 5 µs); each poll below budget ends with
    # napi_complete_done flushing GRO (gro-spec §1.3). skb->len counts from the outer IP header (§5.6):
    # 102 header bytes + 10·1398 = 14082 and 102 + 6·1398 + 672 = 9162; with the Ethernet header 14096 / 9176.
    recs = read_frames(fix_pcaps / "post-fix-eth0.pcap")
    assert [len(b) for b in recs] == [14096, 9176]
    assert [len(b) - ETH for b in recs] == [FIX_HDRS + 10 * 1398, FIX_HDRS + 6 * 1398 + 672]


def test_write_pcap_post_fix_phys_headers_as_gro_complete_left_them(fix_pcaps):
    wire = read_frames(FIX_SAMPLE)
    recs = read_frames(fix_pcaps / "post-fix-eth0.pcap")
    for frame, members in zip(recs, (wire[:10], wire[10:]), strict=True):
        head = members[0]
        o = ETH  # outer IPv4
        u = o + 20  # outer UDP
        i = u + 8 + 8 + ETH  # inner IPv4
        t = i + 20  # inner TCP
        skb_len = len(frame) - ETH
        # inet_gro_complete: tot_len := skb->len - nhoff, header checksum patched (stays valid)
        assert struct.unpack_from("!H", frame, o + 2)[0] == skb_len
        assert fold(sum(struct.unpack_from("!10H", frame, o))) == 0xFFFF
        # udp_gro_complete: length rewritten; a zero check stays zero (only a non-zero one is re-seeded)
        assert struct.unpack_from("!HH", frame, u + 4) == (skb_len - 20, 0)
        # inner IPv4 through the tunnel's complete chain: tot_len from the inner header, checksum valid
        assert struct.unpack_from("!H", frame, i + 2)[0] == skb_len - 20 - 8 - 8 - ETH
        assert fold(sum(struct.unpack_from("!10H", frame, i))) == 0xFFFF
        # tcp4_gro_complete: th->check = ~tcp_v4_check(len, saddr, daddr, 0) = the pseudo-header sum
        tcp_len = len(frame) - t
        want = pseudo_sum_v4(frame[i + 12 : i + 16], frame[i + 16 : i + 20], 6, tcp_len)
        assert struct.unpack_from("!H", frame, t + 16)[0] == want
        # everything else of the headers is the first segment's; the payload is every segment's, in order
        assert frame[:o] == head[:o]
        assert frame[t : t + 16] == head[t : t + 16]
        assert frame[t + 18 : t + 32] == head[t + 18 : t + 32]
        assert frame[t + 32 :] == b"".join(m[ETH + FIX_HDRS :] for m in members)


def test_write_pcap_tunnel_device_shows_inner_ethernet(fix_pcaps):
    # On vxlan0 a tap sees the inner Ethernet header on (eth_type_trans on the tunnel device, gro-spec §6.2):
    # the aggregates minus outer IPv4/UDP/VXLAN: 14096 - 50 = 14046 and 9176 - 50 = 9126 (the fix mail's
    # 14032-byte inner skb, §6.6, plus the inner Ethernet header). Pre-fix gro_cells builds the same two
    # aggregates (the poll boundaries are the phys polls', §6.4); post-fix the GSO skbs pass through (§6.6).
    for kernel in ("pre-fix", "post-fix"):
        recs = read_frames(fix_pcaps / f"{kernel}-vxlan0.pcap")
        assert [len(b) for b in recs] == [14046, 9126]
        assert struct.unpack_from("!H", recs[0], 12)[0] == 0x0800
        assert [struct.unpack_from("!H", b, ETH + 2)[0] for b in recs] == [14032, 9112]


def test_write_pcap_timestamps_are_delivery_times(fix_pcaps):
    # Frame k of the sample arrives at t0 + k µs for k < 10 and t0 + (k + 9) µs after the gap. The first
    # aggregate is delivered when its poll ends: not before frame 10 arrived, before frame 11 did (§1.3).
    t0 = record_times_ns(FIX_SAMPLE)[0]
    first, second = record_times_ns(fix_pcaps / "post-fix-eth0.pcap")
    assert t0 + 9_000 <= first < t0 + 19_000
    assert second >= t0 + 25_000
    pre = record_times_ns(fix_pcaps / "pre-fix-eth0.pcap")
    assert pre == sorted(pre) and pre[0] >= t0


@needs_tshark
def test_write_pcap_tshark_reads_fix_sample_output(fix_pcaps):
    expect = {
        "pre-fix-eth0.pcap": [1514] * 16 + [788],
        "pre-fix-vxlan0.pcap": [14046, 9126],
        "post-fix-eth0.pcap": [14096, 9176],
        "post-fix-vxlan0.pcap": [14046, 9126],
    }
    for name, lengths in expect.items():
        path = fix_pcaps / name
        rows = tshark_fields(path, "frame.len", "ip.len", "ip.checksum.status", "tcp.len")
        assert [int(r[0]) for r in rows] == lengths, name
        assert tshark_problems(path) == [], name
        # every IPv4 header checksum verifies (1 = good), outer and inner
        assert all(set(r[2].split(",")) == {"1"} for r in rows), name
    rows = tshark_fields(fix_pcaps / "post-fix-eth0.pcap", "ip.len", "udp.length", "vxlan.vni", "tcp.len")
    # outer/inner IPv4 lengths, UDP length, VNI 100 and the TCP payload of 10 and 7 segments
    assert rows == [
        ["14082,14032", "14062", "100", str(10 * 1398)],
        ["9162,9112", "9142", "100", str(6 * 1398 + 672)],
    ]


@needs_tshark
def test_write_pcap_tshark_geneve_ipv6_sample(tmp_path):
    # 256 frames, four flows round-robin, outer IPv6, Geneve with 8 option bytes: each 64-frame poll holds 16
    # segments of each flow, merged into one aggregate per flow (budget exhausted: napi_poll flushes, §1.3).
    # skb->len from the outer IPv6 header: 40 + 8 + 16 + 14 + 20 + 32 + 16·1370 = 22050; plen = 22010.
    r = CliRunner().invoke(
        main,
        [
            str(GENEVE_SAMPLE),
            "--poll",
            "budget",
            "--write-pcap",
            str(tmp_path),
            "--pcap-format",
            "pcap",
            "-q",
            "--format",
            "json",
        ],
    )
    assert r.exit_code == 0, r.output
    for kernel in ("pre-fix", "post-fix"):
        phys = tmp_path / f"{kernel}-eth0.pcap"
        rows = tshark_fields(phys, "frame.len", "ipv6.plen", "ip.len", "tcp.len")
        assert rows == [["22064", "22010", "21972", str(16 * 1370)]] * 16
        assert tshark_problems(phys) == []
        tun = tmp_path / f"{kernel}-geneve0.pcap"
        assert tshark_fields(tun, "frame.len", "ip.len") == [["21986", "21972"]] * 16
        assert tshark_problems(tun) == []


@needs_tshark
def test_write_pcap_nonzero_outer_checksum_reseeded(tmp_path):
    # udp_gro_complete re-seeds a non-zero outer check with ~udp_v4_check(len, saddr, daddr, 0), i.e. the
    # pseudo-header sum of the new length (gro-spec §5.7); tshark leaves it unverified, so nothing is flagged.
    r = CliRunner().invoke(
        main,
        [
            str(VXLAN4_SAMPLE),
            "--fix",
            "--poll",
            "budget",
            "--write-pcap",
            str(tmp_path),
            "--pcap-format",
            "pcap",
            "-q",
        ],
    )
    assert r.exit_code == 0, r.output
    path = tmp_path / "post-fix-eth0.pcap"
    assert tshark_problems(path) == []
    for frame in read_frames(path):
        o, u = ETH, ETH + 20
        ulen = struct.unpack_from("!H", frame, u + 4)[0]
        assert ulen == len(frame) - ETH - 20
        want = pseudo_sum_v4(frame[o + 12 : o + 16], frame[o + 16 : o + 20], 17, ulen)
        assert struct.unpack_from("!H", frame, u + 6)[0] == want


def test_skb_frame_reinserts_stripped_vlan_tag(tmp_path):
    # The decoder models RX VLAN offload (tag → skb->vlan_tci); libpcap puts the tag back from PACKET_AUXDATA,
    # so a count-1 packet on eth0 reads back as the tagged wire frame, and an aggregate carries the tag too.
    spec = FrameSpec(outer_vlan=5, outer_csum="zero")
    frames = build_flow(spec, [1398] * 4)
    pcaps = DevicePcaps(tmp_path)
    t0 = 1_614_373_368 * 10**9
    replay_frames([(t0 + k * 1000, f) for k, f in enumerate(frames)], ReplayConfig(), pcaps)
    pcaps.close()
    pre = read_frames(tmp_path / "pre-fix-eth0.pcap")
    assert pre == frames
    (agg,) = read_frames(tmp_path / "post-fix-eth0.pcap")
    assert agg[12:16] == b"\x81\x00\x00\x05"
    assert len(agg) == 4 + ETH + FIX_HDRS + 4 * 1398
    if TSHARK:
        path = tmp_path / "post-fix-eth0.pcap"
        assert tshark_fields(path, "vlan.id", "frame.len") == [["5", str(len(agg))]]
        assert tshark_problems(path) == []


def test_skb_frame_of_a_single_frame_skb_is_its_buffer():
    from gro_replay.kernel.skbuff import SkBuff

    buf = bytes(range(60))
    skb = SkBuff(buf, 0, 0, 0, 0)
    skb.data = 14
    assert skb_frame(skb) == buf


def test_write_pcap_unwritable_dir_is_one_line_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = CliRunner().invoke(main, [str(FIX_SAMPLE), "--write-pcap", str(blocker / "sub"), "-q"])
    assert r.exit_code == 2
    assert r.stderr.startswith("Error: --write-pcap ") and r.stderr.count("\n") == 1
    assert "Traceback" not in r.output


def test_write_pcap_notes_files_on_stderr_unless_quiet(tmp_path):
    r = CliRunner().invoke(
        main,
        [
            str(FIX_SAMPLE),
            "--fix",
            "--poll",
            "budget",
            "--write-pcap",
            str(tmp_path),
            "--pcap-format",
            "pcap",
            "--format",
            "json",
        ],
    )
    assert r.exit_code == 0
    # budget poll: all 17 frames in one poll → one 17-segment aggregate on eth0, passed through vxlan0
    assert r.stderr.splitlines() == [
        f"wrote {tmp_path / 'post-fix-eth0.pcap'} (1 frame)",
        f"wrote {tmp_path / 'post-fix-vxlan0.pcap'} (1 frame)",
    ]
    assert r.stdout.lstrip().startswith("{")
