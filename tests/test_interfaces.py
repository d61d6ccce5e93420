"""Captures with several interfaces (issue 10 item 6): ``tcpdump -i any`` (Linux cooked v2: one ifindex per
packet) and pcapng with several interface description blocks.

Kernel truth (../shared/triage/README.md, checked on Linux 6.18): the decapsulated copies that ``-i any`` records
on the tunnel device never reach the physical device's NAPI, so the phys stage replays the interface that carries
the tunnel traffic; the report says the capture holds several interfaces and the same packets twice.
"""

from __future__ import annotations

import json
import subprocess
import sys

import dpkt
import pytest
from conftest import ROOT, SHARED_CAPTURES

from gro_replay.cli import main
from gro_replay.synth import Scenario, synth_frames

TRIAGE = SHARED_CAPTURES.parent / "triage"
SLL2 = TRIAGE / "tcpdump-any-sll2.pcap"


@pytest.fixture
def sll2() -> str:
    if not SLL2.is_file():
        pytest.skip(f"triage capture not present ({SLL2})")
    return str(SLL2)


def _json(runner, *args) -> dict:
    r = runner.invoke(main, [*map(str, args), "--format", "json", "-q"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _phys(doc) -> list:
    return [(k["name"], k["stages"]["phys"], k["stages"]["tunnel"]) for k in doc["kernels"]]


def test_tcpdump_any_replays_the_tunnel_interface_and_warns(runner, sll2):
    doc = _json(runner, sll2)
    inp = doc["input"]
    assert (inp["frames_read"], inp["frames_replayed"]) == (40, 20)
    assert inp["skipped"] == {"other_interface": 20}
    assert inp["classes"] == {"tunnel_tcp": 20}
    (note,) = [n for n in inp["notes"] if "interfaces" in n]
    assert note.startswith(
        "the capture holds 2 interfaces (ifindex 2: 20 frames, 20 tunnel; ifindex 5: 20 frames"
    )
    assert (
        "the same packets twice: 20 on ifindex 5 carry the inner packets of ifindex 2's tunnel frames" in note
    )
    assert "replaying ifindex 2 only" in note
    assert [(i["interface"], i["replayed"]) for i in inp["interfaces"]] == [
        ("ifindex 2", True),
        ("ifindex 5", False),
    ]
    # phys stage: the 20 VXLAN frames only (outer checksum 0, CHECKSUM_UNNECESSARY level 0): pre-fix the gate
    # refuses each (20 single skbs), post-fix one burst of 1 µs gaps merges; the decapsulated copies add nothing
    pre, post = doc["kernels"]
    assert pre["stages"]["phys"]["frames_in"] == post["stages"]["phys"]["frames_in"] == 20
    assert (pre["stages"]["phys"]["skbs_delivered"], post["stages"]["phys"]["skbs_delivered"]) == (20, 1)
    assert _phys(doc) == _phys(_json(runner, sll2, "--interface", "2"))
    r = runner.invoke(main, [sll2, "-q", "--no-hist"])
    assert "note: the capture holds 2 interfaces" in r.stdout


def test_interface_option_chooses_and_names_unknown_ones(runner, sll2):
    doc = _json(runner, sll2, "--interface", "5")
    assert doc["input"]["classes"] == {"not_tunnel": 20} and doc["input"]["skipped"] == {
        "other_interface": 20
    }
    assert doc["config"]["interface"] == "5"
    r = runner.invoke(main, [sll2, "--interface", "9", "-q"])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1
    assert "--interface 9: no such interface (the capture holds: ifindex 2; ifindex 5)" in r.stderr


def test_a_pipe_replays_every_interface_unless_told(sll2):
    def run(*extra):
        with open(sll2, "rb") as fh:
            out = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    "from gro_replay.cli import entry; entry()",
                    "-",
                    "--format",
                    "json",
                    "-q",
                    *extra,
                ],
                stdin=fh,
                capture_output=True,
                check=True,
                cwd=ROOT,
            ).stdout
        return json.loads(out)["input"]

    inp = run()
    assert inp["frames_replayed"] == 40
    assert any(
        "all were replayed as one device's traffic: --interface N chooses one" in n for n in inp["notes"]
    )
    inp = run("--interface", "2")
    assert (inp["frames_replayed"], inp["skipped"]) == (20, {"other_interface": 20})


def _pcapng(path, ifaces, records) -> None:
    """ifaces: [(linktype, name)]; records: [(iface, ts_us, bytes)] written with dpkt's pcapng blocks."""
    blocks = [bytes(dpkt.pcapng.SectionHeaderBlockLE())]
    for lt, name in ifaces:
        opts = [
            dpkt.pcapng.PcapngOptionLE(code=2, data=name.encode()),
            dpkt.pcapng.PcapngOptionLE(code=dpkt.pcapng.PCAPNG_OPT_ENDOFOPT),
        ]
        blocks.append(bytes(dpkt.pcapng.InterfaceDescriptionBlockLE(linktype=lt, opts=opts)))
    for i, ts, data in records:
        blk = dpkt.pcapng.EnhancedPacketBlockLE(
            iface_id=i, ts_high=ts >> 32, ts_low=ts & 0xFFFFFFFF, pkt_data=data
        )
        blocks.append(bytes(blk))
    path.write_bytes(b"".join(blocks))


def test_pcapng_interfaces_by_name_and_an_unsupported_link_type_skipped(runner, tmp_path):
    # eth0 carries the VXLAN flow; wlan0 (802.11, link type 105: not supported) carries 5 frames, which are skipped
    # and counted (unsupported_link_layer) instead of rejecting the file
    frames = list(synth_frames(Scenario(frames=10)))
    recs = [(0, ts // 1000, f) for ts, f in frames] + [
        (1, frames[-1][0] // 1000 + k, b"\x08\x00" * 20) for k in range(5)
    ]
    path = tmp_path / "two.pcapng"
    _pcapng(path, [(1, "eth0"), (105, "wlan0")], recs)
    doc = _json(runner, path)
    inp = doc["input"]
    assert inp["skipped"] == {"other_interface": 5}  # eth0 carries the tunnel traffic: replayed alone
    assert inp["classes"] == {"tunnel_tcp": 10}
    assert [i["interface"] for i in inp["interfaces"]] == ["interface 0 (eth0)", "interface 1 (wlan0)"]
    everything = _json(runner, path, "--interface", "wlan0")["input"]
    assert everything["skipped"] == {"other_interface": 10, "unsupported_link_layer": 5}
    assert everything["frames_replayed"] == 0


def test_linux_cooked_v1_any_capture_names_the_copies(runner, tmp_path):
    # LINUX_SLL (v1) has no ifindex: the 10 decapsulated copies of the 10 VXLAN frames cannot be left out, but the
    # report says the same packets appear twice and how to capture so that they can be
    import struct

    from gro_replay.capture.reader import DLT_LINUX_SLL
    from gro_replay.capture.writer import PcapWriter

    outer = 14 + 20 + 8 + 8  # Ethernet + IPv4 + UDP + VXLAN before the inner Ethernet frame
    path = tmp_path / "any-v1.pcap"
    with PcapWriter(path, linktype=DLT_LINUX_SLL) as w:
        for ts, f in synth_frames(Scenario(frames=10)):
            w.write(ts, struct.pack("!HHH8sH", 0, 1, 6, f[6:12] + b"\0\0", 0x0800) + f[14:])
            inner = f[outer:]
            w.write(ts + 500, struct.pack("!HHH8sH", 0, 1, 6, inner[6:12] + b"\0\0", 0x0800) + inner[14:])
    inp = json.loads(runner.invoke(main, [str(path), "--format", "json", "-q"]).stdout)["input"]
    assert inp["classes"] == {"not_tunnel": 10, "tunnel_tcp": 10}
    (note,) = inp["notes"]
    assert note.startswith("the capture holds the same packets twice: 10 frames carry the inner packets")
    assert "tcpdump -i any -y LINUX_SLL2" in note
