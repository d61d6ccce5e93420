"""Frames skipped before the replay are read for where they were going (sim/skipped.py, packet/headers.py
``tunnel_port_of``): a record cut short (``snaplen_cut``) or refused as malformed holds whole outer headers, so its
outer UDP destination port says whether it is tunnel traffic. No sentence says a capture, an interface or the
frames carry no VXLAN or Geneve traffic when such frames went to a tunnel port: the notes count them ("20 frames to a
VXLAN port were cut short (snaplen_cut) and not replayed: <how to get whole frames>"), the interfaces' note counts
them per interface (and a cut tunnel frame chooses its device, as a whole one does: capture/interfaces.py), and the
verdict's outcome is ``tunnel_not_replayed``, not ``no_tunnel``, when no frame replayed is tunnel traffic. A frame
whose bytes end before its UDP port is said unknown. One count for text, JSON and both replay paths.

The captures: the fix sample's 17 VXLAN records (16 of 1,514 bytes, one of 788; VXLAN port 4789) written with a
snap length (tests/test_caplen_over_snaplen.py ``_cut``), their inner packets (the frame after the 50 bytes of
outer Ethernet, IPv4, UDP and VXLAN headers: 1,464 bytes at most) as plain traffic, and the shared triage capture
``tcpdump-any-sll2.pcap`` copied through ``tcpdump -r`` (its 20 VXLAN frames of ifindex 2 cut to its declared
snaplen, the 20 decapsulated copies of ifindex 5 whole).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import CLI, ROOT, cli_env, without_engine
from test_caplen_over_snaplen import CUT_HINT, _cut, _docs, _records

from gro_replay.capture.writer import PcapngWriter, PcapWriter
from gro_replay.packet.headers import UNREAD, tunnel_port_of

#: outer Ethernet + IPv4 + UDP + VXLAN: where the fix sample's inner frame starts
OUTER = 14 + 20 + 8 + 8
PORTS = "VXLAN 4789, 8472; Geneve 6081"
TRIAGE_SLL2 = ROOT.parent / "shared" / "triage" / "tcpdump-any-sll2.pcap"


def _inner(n: int = 4) -> list[tuple[int, bytes]]:
    """The inner packets of the fix sample's first ``n`` frames as plain frames, timed before them."""
    return [(ts - 1_000_000, buf[OUTER:]) for ts, buf in _records()[:n]]


def test_tunnel_port_of_reads_the_outer_headers_only() -> None:
    ports = {4789: "vxlan", 6081: "geneve"}
    frame = _records()[0][1]
    assert tunnel_port_of(frame[:42], ports) == "vxlan"  # up to the end of the outer UDP header
    assert tunnel_port_of(frame[:38], ports) == "vxlan"  # the destination port is bytes 36-37
    assert tunnel_port_of(frame[:37], ports) == UNREAD
    assert tunnel_port_of(frame[OUTER:][:60], ports) is None  # the inner TCP packet
    assert tunnel_port_of(None, ports) == UNREAD
    tagged = frame[:12] + b"\x81\x00\x00\x64" + frame[12:]
    assert tunnel_port_of(tagged[:46], ports) == "vxlan"


def test_every_frame_of_a_cut_capture_to_a_tunnel_port_is_said_so(tmp_path) -> None:
    """Plain frames whole, the VXLAN frames cut at 1,000 bytes (the 788-byte one whole): tunnel traffic is
    replayed, and the 16 cut are said to be left out of the counts, in the notes and the verdict."""
    got, ref = _docs(_cut(tmp_path / "mixed.pcap", 1000, "pcap"))
    assert without_engine(got) == without_engine(ref)
    inp = got["input"]
    assert inp["skipped"] == {"snaplen_cut": 16} and inp["classes"] == {"tunnel_tcp": 1}
    assert inp["skipped_to_tunnel_ports"] == {"snaplen_cut": {"vxlan": 16}}
    hidden = f"16 frames to a VXLAN port were cut short (snaplen_cut) and not replayed: {CUT_HINT}"
    # the notes leave how to get whole frames to the snaplen note; the verdict says it
    assert f"not in the counts: {hidden.removesuffix(': ' + CUT_HINT)}" in inp["notes"]
    assert not any(n.startswith("no VXLAN or Geneve traffic") for n in inp["notes"])
    assert got["verdict"]["outcome"] != "no_tunnel"
    assert got["verdict"]["text"].endswith(f" Not in these counts: {hidden}.")


def test_plain_traffic_replayed_and_every_tunnel_frame_cut(tmp_path) -> None:
    """4 whole inner packets (plain TCP, 1,464 bytes and less), then the VXLAN frames cut at 1,480 bytes: the
    frames replayed are not tunnel traffic, but the capture's tunnel frames are, and the verdict says so: outcome
    tunnel_not_replayed, not no_tunnel (whose sentence says the fix has nothing to change)."""
    frames = _inner() + [(ts, buf) for ts, buf in _records() if len(buf) > 1480]
    got, ref = _docs(_cut(tmp_path / "plain-and-cut.pcap", 1480, "pcap", frames))
    assert without_engine(got) == without_engine(ref)
    inp = got["input"]
    assert (inp["frames_replayed"], inp["classes"], inp["skipped"]) == (
        4,
        {"not_tunnel": 4},
        {"snaplen_cut": 16},
    )
    assert inp["skipped_to_tunnel_ports"] == {"snaplen_cut": {"vxlan": 16}} and inp["skipped_unread"] == {}
    hidden = f"16 frames to a VXLAN port were cut short (snaplen_cut) and not replayed: {CUT_HINT}"
    assert inp["notes"][0] == f"no VXLAN or Geneve traffic replayed: {hidden.removesuffix(': ' + CUT_HINT)}"
    v = got["verdict"]
    assert v["outcome"] == "tunnel_not_replayed"
    assert v["text"] == (
        f"No tunnel frame was replayed: {hidden}, so what the fix changes for them is not known here; the 4 frames "
        "replayed are not VXLAN or Geneve traffic."
    )


def test_frames_cut_before_their_udp_port_are_unknown(tmp_path) -> None:
    """Snap length 37: the outer UDP destination port (bytes 36-37) is not captured, so the notes say that whether
    the frames are tunnel traffic is unknown, never that they are not."""
    got, ref = _docs(_cut(tmp_path / "tiny.pcap", 37, "pcap"))
    assert without_engine(got) == without_engine(ref)
    inp = got["input"]
    assert inp["skipped_unread"] == {"snaplen_cut": 17} and inp["skipped_to_tunnel_ports"] == {}
    assert inp["notes"][0] == (
        "no VXLAN or Geneve traffic replayed: every frame read was cut short (snaplen_cut) before its UDP port, none was "
        "decoded: whether they are tunnel traffic is unknown"
    )
    assert got["verdict"]["outcome"] == "nothing_replayed"


def test_cut_and_unread_frames_beside_plain_ones(tmp_path) -> None:
    """Plain frames to UDP port 53 whole, beside VXLAN frames cut at 37 bytes (port unread) and at 1,000 (read):
    the no-tunnel-traffic note covers the frames whose headers were read, and names the others as unknown."""
    recs = _records()
    plain = []
    for ts, buf in recs[:2]:
        b = bytearray(buf[:200])
        b[16:18] = (186).to_bytes(2, "big")  # outer IPv4 total length: 200 − 14
        b[36:38] = (53).to_bytes(2, "big")  # UDP destination port
        b[38:40] = (166).to_bytes(2, "big")  # UDP length
        b[40:42] = bytes(2)  # no UDP checksum
        plain.append((ts - 10_000, bytes(b)))
    path = tmp_path / "unread.pcap"
    with PcapWriter(path) as w:
        for ts, buf in plain:
            w.write(ts, buf)
        for ts, buf in recs[:3]:
            w.write(ts, buf[:37], orig_len=len(buf))
        w.write(recs[3][0], recs[3][1][:1000], orig_len=len(recs[3][1]))
    got, ref = _docs(path)
    assert without_engine(got) == without_engine(ref)
    inp = got["input"]
    assert inp["skipped_unread"] == {"snaplen_cut": 3}
    assert inp["skipped_to_tunnel_ports"] == {"snaplen_cut": {"vxlan": 1}}
    assert got["verdict"]["outcome"] == "tunnel_not_replayed"
    assert inp["notes"][0].startswith(
        "no VXLAN or Geneve traffic replayed: 1 frame to a VXLAN port was cut short (snaplen_cut) and not replayed"
    )
    # without the frame cut at 1,000 bytes: no tunnel frame is known, and what is not known is said
    with PcapWriter(path) as w:
        for ts, buf in plain:
            w.write(ts, buf)
        for ts, buf in recs[:3]:
            w.write(ts, buf[:37], orig_len=len(buf))
    got, ref = _docs(path)
    assert without_engine(got) == without_engine(ref)
    unknown = (
        "3 frames skipped before their UDP port could be read (snaplen_cut 3): whether they are tunnel traffic is "
        "unknown"
    )
    assert got["input"]["notes"][0] == (
        f"no VXLAN or Geneve traffic: no frame whose headers could be read goes to a configured tunnel port ({PORTS}) and "
        f"none decoded parses as VXLAN or Geneve on another UDP port ({unknown})"
    )
    assert got["verdict"]["outcome"] == "no_tunnel"
    assert got["verdict"]["text"] == (
        "No flow carries VXLAN or Geneve traffic: none of the 2 frames replayed is VXLAN (UDP ports 4789, 8472) or Geneve "
        f"(UDP port 6081), so the fix has nothing to change for them; {unknown} (tunnels on other ports: "
        "--vxlan-port P / --geneve-port P)."
    )


def test_malformed_frames_to_a_tunnel_port_are_tunnel_traffic_not_replayed(tmp_path) -> None:
    """VXLAN frames whose outer IP and UDP lengths end 4 bytes into the inner Ethernet header (skipped as
    malformed:inner_headers) beside plain frames: their outer headers go to port 4789, so the verdict is not
    no_tunnel."""
    bad = []
    for ts, buf in _records()[:3]:
        b = bytearray(buf)
        b[16:18] = (20 + 8 + 8 + 4).to_bytes(2, "big")  # outer IPv4 total length
        b[38:40] = (8 + 8 + 4).to_bytes(2, "big")  # UDP length
        b[40:42] = bytes(2)
        bad.append((ts, bytes(b)))
    got, ref = _docs(_cut(tmp_path / "bad.pcap", 262144, "pcap", _inner(2) + bad))
    assert without_engine(got) == without_engine(ref)
    inp = got["input"]
    assert inp["skipped"] == {"malformed:inner_headers": 3}
    assert inp["skipped_to_tunnel_ports"] == {"malformed:inner_headers": {"vxlan": 3}}
    assert inp["notes"][0] == (
        "no VXLAN or Geneve traffic replayed: 3 frames to a VXLAN port were skipped as malformed (malformed:inner_headers) "
        "and not replayed"
    )
    assert got["verdict"]["outcome"] == "tunnel_not_replayed"


def _two_interfaces(path: Path, snaplen: int) -> Path:
    """eth0: the fix sample's VXLAN frames; eth1: their inner packets 1 µs later (decapsulated copies, as
    ``tcpdump -i any`` sees them on the tunnel device), every record cut at ``snaplen``."""
    with PcapngWriter(path, [("eth0", ""), ("vxlan0", "")], snaplen=snaplen) as w:
        for ts, buf in _records():
            w.write(ts, buf, 0)
            w.write(ts + 1000, buf[OUTER:], 1)
    return path


def test_a_cut_tunnel_frame_chooses_its_interface(tmp_path) -> None:
    """Two pcapng interfaces, snap length 1,480: eth0's 16 long VXLAN frames cut, its 788-byte one and every copy
    on vxlan0 whole. eth0 is the device of the first tunnel frame (cut or not): replayed, vxlan0 left out; the
    note says how many of eth0's tunnel frames were cut. Batch (selected blocks) and frame by frame agree."""
    got, ref = _docs(_two_interfaces(tmp_path / "two.pcapng", 1480))
    assert without_engine(got) == without_engine(ref)
    inp = got["input"]
    assert inp["skipped"] == {"other_interface": 17, "snaplen_cut": 16}
    assert inp["classes"] == {"tunnel_tcp": 1}
    rows = {r["interface"]: r for r in inp["interfaces"]}
    eth0, vx = rows["interface 0 (eth0)"], rows["interface 1 (vxlan0)"]
    assert (eth0["tunnel_frames"], eth0["tunnel_frames_cut"], eth0["replayed"]) == (17, 16, True)
    assert (vx["tunnel_frames"], vx["replayed"]) == (0, False)
    (note,) = [n for n in inp["notes"] if "interfaces" in n]
    assert note.startswith(
        "the capture holds 2 interfaces (interface 0 (eth0): 17 frames, 17 tunnel (16 cut short: snaplen_cut, not "
        "replayed); interface 1 (vxlan0): 17 frames, no VXLAN or Geneve traffic); replaying interface 0 (eth0) only"
    )


def test_interface_left_out_whose_tunnel_frames_were_cut(tmp_path) -> None:
    """``--interface vxlan0``: eth0's tunnel frames are left out, and the words say --interface eth0 would skip the
    16 cut ones too; the no-tunnel-traffic note is said of the interface replayed."""
    got, ref = _docs(_two_interfaces(tmp_path / "two.pcapng", 1480), interface="vxlan0")
    assert without_engine(got) == without_engine(ref)
    notes = got["input"]["notes"]
    assert (
        "17 tunnel frames on interface 0 (eth0) left out (another device's traffic, merged by its own NAPI: "
        "--interface eth0 replays it instead; 16 are cut short (snaplen_cut), skipped there too)"
    ) in notes[0]
    assert notes[1].startswith(
        "no VXLAN or Geneve traffic on the interface replayed: no frame goes to a configured tunnel"
    )
    # vxlan0 holds the inner packets of eth0's frames: of the one whole (the others are cut: no payload to tell)
    assert got["verdict"]["text"].endswith(
        "17 on interface 0 (eth0) (--interface eth0 replays them; 16 are cut short (snaplen_cut), skipped there too). "
        "Of the frames replayed, 1 on interface 1 (vxlan0) carries the inner packet of one of those tunnel frames: "
        "most likely a decapsulated copy, a tunnel device's, which never reaches a physical device's NAPI, counted "
        "here as if one received it."
    )


def _piped(data: bytes, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*CLI, "-", "-q", *args], input=data, capture_output=True, env=cli_env(), timeout=120
    )


def test_tcpdump_copy_of_the_triage_any_capture() -> None:
    """The newcomer's pipe: ``tcpdump -r tcpdump-any-sll2.pcap -w - | gro-replay - --rx-csum none --kernel 6.18``.
    tcpdump cuts ifindex 2's 20 VXLAN frames to the file's declared snaplen; their headers say VXLAN, so ifindex 2
    (the first tunnel frame's device) is replayed and nothing is: every one of its frames was cut. Before, the
    report said ifindex 2 held no VXLAN or Geneve traffic and replayed ifindex 5's decapsulated copies as phys traffic."""
    tcpdump = shutil.which("tcpdump")
    if not TRIAGE_SLL2.is_file() or tcpdump is None:
        pytest.skip("needs ../shared/triage and tcpdump")
    copy = subprocess.run([tcpdump, "-r", str(TRIAGE_SLL2), "-w", "-"], capture_output=True, timeout=60)
    assert copy.returncode == 0, copy.stderr
    args = ("--rx-csum", "none", "--kernel", "6.18")
    r = _piped(copy.stdout, *args, "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    inp = doc["input"]
    assert (inp["frames_read"], inp["frames_replayed"]) == (40, 0)
    assert inp["skipped"] == {"other_interface": 20, "snaplen_cut": 20}
    assert inp["skipped_to_tunnel_ports"] == {"snaplen_cut": {"vxlan": 20}}
    hidden = f"20 frames to a VXLAN port were cut short (snaplen_cut) and not replayed: {CUT_HINT}"
    assert inp["notes"][:2] == [
        "the capture holds 2 interfaces (ifindex 2: 20 frames, 20 tunnel (all cut short: snaplen_cut, not "
        "replayed); ifindex 5: 20 frames, no VXLAN or Geneve traffic); replaying ifindex 2 only (the interface of the "
        "capture's first tunnel frame; --interface chooses)",
        f"no VXLAN or Geneve traffic replayed: {hidden.removesuffix(': ' + CUT_HINT)}",
    ]
    assert doc["verdict"]["outcome"] == "nothing_replayed"
    assert doc["verdict"]["text"] == (
        "Nothing to compare: none of the 40 frames read was replayed (skipped other_interface 20, snaplen_cut 20): "
        f"{hidden}."
    )
    text = " ".join(_piped(copy.stdout, *args).stdout.decode().split())
    for claim in (
        "none carries tunnel traffic",
        "all were replayed",
        "No flow carries VXLAN or Geneve traffic",
    ):
        assert claim not in text
    assert f"note: no VXLAN or Geneve traffic replayed: {hidden.removesuffix(': ' + CUT_HINT)}" in text
    assert "SUMMARY kernel=6.18 frames=40 skipped=40 replayed=0 phys_skbs=0" in text
    # the copies chosen by hand: replayed, and the words keep the cut tunnel frames of ifindex 2 in view
    r = _piped(copy.stdout, *args, "--interface", "5", "--format", "json")
    doc = json.loads(r.stdout)
    assert doc["verdict"]["outcome"] == "no_tunnel" and doc["input"]["frames_replayed"] == 20
    assert doc["verdict"]["text"].endswith(
        "20 on ifindex 2 (--interface 2 replays them; all 20 are cut short (snaplen_cut), skipped there too)."
    )
    assert doc["input"]["notes"][1].startswith("no VXLAN or Geneve traffic on the interface replayed: ")
