"""``--write-pcap DIR`` writes pcapng by default: one file per kernel, one interface block per simulated device
(``if_name`` eth0 / vxlan0 / geneve0, the kernel model in ``if_description``), a comment per packet with the
skb's segment count, gso_size and the reason it ended; ``--pcap-format pcap`` the classic per-device files.

Read back with tshark/capinfos (Debian ``tshark``; ``make deps`` installs it). The fix sample with ``--poll gap:5``
(the fix's own scenario, gro-spec §8): 10 frames 1 µs apart, a 10 µs pause, 7 more: two polls. Pre-fix,
``udp_gro_receive`` refuses every frame (outer checksum 0, CHECKSUM_UNNECESSARY level 0: csum_cnt 0, csum_valid 0,
§4.4), so eth0 delivers 17 single-segment skbs (gso_size 0) and gro_cells merges them into 10 + 7 on vxlan0;
post-fix the gate passes (§4.5): eth0 delivers aggregates of 10 and 7 segments (gso_size 1398, the MSS).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter

import pytest
from click.testing import CliRunner
from conftest import FIX_SAMPLE, GENEVE_SAMPLE

from gro_replay.capture.writer import PcapngWriter
from gro_replay.cli import main
from gro_replay.kernel import reasons as R

TSHARK = shutil.which("tshark")
CAPINFOS = shutil.which("capinfos")
needs_tshark = pytest.mark.skipif(
    TSHARK is None or CAPINFOS is None, reason="tshark is not installed (Debian package tshark; make deps)"
)


def tshark_rows(path, *fields: str) -> list[list[str]]:
    cmd = [TSHARK, "-r", str(path), "-T", "fields"] + [a for f in fields for a in ("-e", f)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return [line.split("\t") for line in out.split("\n") if line]


def interfaces(path) -> list[tuple[str, str]]:
    """(name, description) of each interface block, as capinfos lists them."""
    out = subprocess.run([CAPINFOS, str(path)], capture_output=True, text=True, check=True).stdout
    names = [line.split("=", 1)[1].strip() for line in out.splitlines() if line.strip().startswith("Name =")]
    descs = [
        line.split("=", 1)[1].strip() for line in out.splitlines() if line.strip().startswith("Description =")
    ]
    return list(zip(names, descs, strict=True))


@pytest.fixture(scope="module")
def fix_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("pcapng")
    r = CliRunner().invoke(
        main, [str(FIX_SAMPLE), "--poll", "gap:5", "--write-pcap", str(out), "--format", "json"]
    )
    assert r.exit_code == 0, r.output
    return out, json.loads(r.stdout), r.stderr


def test_pcapng_is_the_default_one_file_per_kernel(fix_run):
    out, _doc, stderr = fix_run
    assert sorted(p.name for p in out.iterdir()) == ["post-fix.pcapng", "pre-fix.pcapng"]
    # pre-fix: 17 on eth0 + 2 on vxlan0; post-fix: 2 + 2
    assert stderr.splitlines() == [
        f"wrote {out / 'pre-fix.pcapng'} (19 frames)",
        f"wrote {out / 'post-fix.pcapng'} (4 frames)",
    ]


@needs_tshark
def test_pcapng_one_interface_per_device_with_the_kernel_profile(fix_run):
    out, _doc, _ = fix_run
    for kernel, release in (("pre-fix", "5.11"), ("post-fix", "5.12")):
        ifs = interfaces(out / f"{kernel}.pcapng")
        # a device per tunnel socket (default ports: VXLAN 4789 and 8472, Geneve 6081), named as
        # sim/config.py ReplayConfig.devices names them
        assert [name for name, _ in ifs] == ["eth0", "vxlan0", "vxlan0-8472", "geneve0"]
        for _name, desc in ifs:
            assert f"kernel {kernel} (Linux v{release} model)" in desc
        assert ifs[0][1].startswith("physical device: NAPI GRO")
        assert ifs[1][1].startswith("tunnel device: gro_cells GRO")


@needs_tshark
def test_pcapng_comments_hold_the_segment_counts_the_json_reports(fix_run):
    out, doc, _ = fix_run
    stage_of = {"eth0": "phys", "vxlan0": "tunnel"}
    for k in doc["kernels"]:
        rows = tshark_rows(out / f"{k['name']}.pcapng", "frame.interface_name", "frame.comment")
        by_stage: dict[str, Counter] = {"phys": Counter(), "tunnel": Counter()}
        for dev, comment in rows:
            fields = dict(kv.split("=", 1) for kv in comment.split())
            by_stage[stage_of[dev]][fields["segments"]] += 1
        for stage, hist in by_stage.items():
            st = k["stages"][stage]
            assert dict(hist) == st["segs_per_skb_hist"], (k["name"], stage)
            assert sum(hist.values()) == st["skbs_delivered"]
            assert sum(int(s) * n for s, n in hist.items()) == st["segments_delivered"]
    # and the values the kernel's rules give (module docstring)
    pre = tshark_rows(out / "pre-fix.pcapng", "frame.interface_name", "frame.comment")
    assert [c for d, c in pre if d == "eth0"] == [f"segments=1 gso_size=0 end={R.UDP_GATE_ZERO_CSUM}"] * 17
    assert [c.split()[0] for d, c in pre if d == "vxlan0"] == ["segments=10", "segments=7"]
    post = tshark_rows(out / "post-fix.pcapng", "frame.interface_name", "frame.comment", "frame.len")
    eth0 = [(c.split()[0], c.split()[1], int(n)) for d, c, n in post if d == "eth0"]
    # frame lengths from the outer Ethernet header: 14 + 20 + 8 + 8 + 14 + 20 + 32 (TCP with timestamps) = 116
    # header bytes once, then the payload: 10 × 1398 and 6 × 1398 + 672
    assert eth0 == [
        ("segments=10", "gso_size=1398", 116 + 10 * 1398),
        ("segments=7", "gso_size=1398", 116 + 6 * 1398 + 672),
    ]


@needs_tshark
def test_pcapng_timestamps_are_exact_nanoseconds(tmp_path):
    path = tmp_path / "t.pcapng"
    with PcapngWriter(path, [("eth0", "d0"), ("vxlan0", "d1")]) as w:
        w.write(1_614_373_368_123_456_789, b"\x02" * 60, 1, "segments=3 gso_size=1448 end=x")
        w.write(1_614_373_368_123_456_790, b"\x02" * 60, 0)
    rows = tshark_rows(path, "frame.interface_name", "frame.time_epoch", "frame.comment")
    assert rows == [
        ["vxlan0", "1614373368.123456789", "segments=3 gso_size=1448 end=x"],
        ["eth0", "1614373368.123456790", ""],
    ]


@needs_tshark
def test_pcap_format_pcap_writes_classic_files_tshark_reads(tmp_path):
    r = CliRunner().invoke(
        main, [str(GENEVE_SAMPLE), "--write-pcap", str(tmp_path), "--pcap-format", "pcap", "-q"]
    )
    assert r.exit_code == 0, r.output
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [
        "post-fix-eth0.pcap",
        "post-fix-geneve0.pcap",
        "pre-fix-eth0.pcap",
        "pre-fix-geneve0.pcap",
    ]
    for n in names:
        assert (
            subprocess.run([CAPINFOS, "-t", str(tmp_path / n)], capture_output=True, text=True).stdout.find(
                "pcap"
            )
            >= 0
        )


@needs_tshark
def test_pcapng_geneve_device_is_its_own_interface(tmp_path):
    r = CliRunner().invoke(main, [str(GENEVE_SAMPLE), "--fix", "--write-pcap", str(tmp_path), "-q"])
    assert r.exit_code == 0, r.output
    devs = Counter(d for (d,) in tshark_rows(tmp_path / "post-fix.pcapng", "frame.interface_name"))
    assert set(devs) == {"eth0", "geneve0"} and devs["eth0"] == devs["geneve0"]


def _fix_sample_on_port(tmp_path, port: int):
    """The fix sample with every frame's outer UDP destination port set to ``port`` (its outer checksum is 0,
    so nothing else changes): outer Ethernet 14 + IPv4 20, then the UDP source and destination ports."""
    import dpkt

    out = tmp_path / f"fix-{port}.pcap"
    with open(FIX_SAMPLE, "rb") as src, open(out, "wb") as dst:
        r = dpkt.pcap.Reader(src)
        w = dpkt.pcap.Writer(dst, nano=True, linktype=r.datalink())
        for ts, buf in r:
            frame = bytearray(buf)
            assert frame[40:42] == b"\x00\x00"  # outer UDP checksum 0
            frame[36:38] = port.to_bytes(2, "big")
            w.writepkt(bytes(frame), ts)
    return out


@needs_tshark
@pytest.mark.parametrize(
    ("port", "options", "device", "interface_names"),
    [
        # the second default VXLAN port: its socket's device is declared with the others
        (8472, [], "vxlan0-8472", ["eth0", "vxlan0", "vxlan0-8472", "geneve0"]),
        # a port found while replaying (--vxlan-port auto): its device's interface block comes after the
        # declared ones, before its first packet (pcapng allows an interface block anywhere in a section)
        (
            5555,
            ["--vxlan-port", "auto"],
            "vxlan0-5555",
            ["eth0", "vxlan0", "vxlan0-8472", "geneve0", "vxlan0-5555"],
        ),
    ],
)
def test_pcapng_tunnel_device_of_any_port_is_an_interface(tmp_path, port, options, device, interface_names):
    capture = _fix_sample_on_port(tmp_path, port)
    out = tmp_path / "out"
    r = CliRunner().invoke(main, [str(capture), "--poll", "gap:5", "--write-pcap", str(out), "-q", *options])
    assert r.exit_code == 0, r.output
    # the fix sample's values (module docstring): pre-fix 17 single skbs on eth0, gro_cells merges 10 + 7 on the
    # port's device; post-fix eth0 merges 10 + 7 and the tunnel device passes both aggregates up
    expected = {
        "pre-fix": [["eth0", "segments=1"]] * 10
        + [[device, "segments=10"]]
        + [["eth0", "segments=1"]] * 7
        + [[device, "segments=7"]],
        "post-fix": [
            ["eth0", "segments=10"],
            [device, "segments=10"],
            ["eth0", "segments=7"],
            [device, "segments=7"],
        ],
    }
    for kernel, rows in expected.items():
        path = out / f"{kernel}.pcapng"
        assert [name for name, _ in interfaces(path)] == interface_names
        got = tshark_rows(path, "frame.interface_name", "frame.comment")
        assert [[d, c.split()[0]] for d, c in got] == rows
        tcpdump = shutil.which("tcpdump")
        if tcpdump:  # libpcap reads the file too, late interface block included
            lines = subprocess.run(
                [tcpdump, "-n", "-r", str(path)], capture_output=True, text=True, check=True
            )
            # a packet's first line starts with its time; an encapsulated packet adds lines that do not
            assert sum(line[:1].isdigit() for line in lines.stdout.splitlines()) == len(rows)
