"""Frames the capturing host sent are not replayed as received.

``tcpdump -i any`` (Linux cooked capture, LINUX_SLL and LINUX_SLL2) captures both directions and marks each frame's
packet type (include/uapi/linux/if_packet.h): ``PACKET_OUTGOING`` (4) for one the host transmitted, which no
receive path, and so no GRO, ever handled. They used to be replayed into the phys device's GRO as if received
(newcomer's finding, session 27: the fix sample as SLL2 frames "sent by us" read "1 of 1 tunnelled TCP flow loses
phys-device aggregation"). Now each is skipped and counted (``outgoing``), on every path that reads the capture,
and the note names them. Other packet types (to this host, broadcast, multicast, to another host in promiscuous
mode, looped back) are received: replayed as before.
"""

from __future__ import annotations

import json
import struct
import subprocess

import dpkt
import pytest
from click.testing import CliRunner
from conftest import CLI, cli_env

from gro_replay.capture.linktypes import DLT_LINUX_SLL, DLT_LINUX_SLL2, sent_by_host
from gro_replay.capture.writer import PcapWriter
from gro_replay.cli import main
from gro_replay.sim import ReplayConfig, replay_capture

FIX_SAMPLE = "sample_pcaps/vxlan-zero-csum-fix-89e5c58fc1e2.pcap"


def _cooked(frame: bytes, linktype: int, pkttype: int, ifindex: int = 2) -> bytes:
    """An Ethernet frame as a Linux cooked capture records it: the link header, then the L3 packet."""
    if linktype == DLT_LINUX_SLL2:  # protocol, reserved, ifindex, hatype, pkttype, halen, address
        head = struct.pack("!HHIHBB8s", 0x0800, 0, ifindex, 1, pkttype, 6, frame[6:12] + b"\0\0")
    else:  # pkttype, hatype, halen, address, protocol
        head = struct.pack("!HHH8sH", pkttype, 1, 6, frame[6:12] + b"\0\0", 0x0800)
    return head + frame[14:]


def _sample() -> list[tuple[int, bytes]]:
    """The fix sample's 17 frames, (ns, bytes)."""
    from pathlib import Path

    with open(Path(__file__).resolve().parent.parent / FIX_SAMPLE, "rb") as f:
        return [(int(ts * 10**9), buf) for ts, buf in dpkt.pcap.Reader(f)]


def _sample_cooked(path, linktype: int, outgoing: set[int]) -> str:
    """The fix sample's 17 frames as Linux cooked frames, those at ``outgoing`` positions sent by the host."""
    frames = _sample()
    with PcapWriter(str(path), linktype=linktype) as w:
        for i, (ts, buf) in enumerate(frames):
            w.write(ts, _cooked(buf, linktype, 4 if i in outgoing else i % 4))
    return str(path)


@pytest.mark.parametrize("linktype", [DLT_LINUX_SLL, DLT_LINUX_SLL2])
def test_the_packet_type_says_which_frames_the_host_sent(linktype):
    frame = bytes(14) + b"\x45" + bytes(19)
    assert [sent_by_host(_cooked(frame, linktype, t), linktype) for t in range(6)] == [False] * 4 + [
        True,
        False,
    ]
    assert not sent_by_host(b"\x00", linktype)  # a link header cut short says nothing
    assert not sent_by_host(frame, 1)  # an Ethernet frame says no direction


@pytest.mark.parametrize("linktype", [DLT_LINUX_SLL, DLT_LINUX_SLL2])
def test_frames_sent_by_the_host_are_skipped_and_counted(tmp_path, linktype):
    # every third frame of the fix sample sent by the host: 6 of 17 skipped, the other 11 replayed, from a file,
    # through a pipe and as pcapng (which the batch path reads), with the same document
    path = _sample_cooked(tmp_path / "any.pcap", linktype, set(range(1, 17, 3)))
    result = replay_capture(path, ReplayConfig())
    assert (dict(result.input.skipped), result.input.frames_replayed) == ({"outgoing": 6}, 11)
    docs = []
    with open(path, "rb") as f:
        data = f.read()
    for args, stdin in (([path], None), (["-"], data)):
        r = subprocess.run(
            [*CLI, *args, "--format", "json", "-q"],
            input=stdin,
            capture_output=True,
            env=cli_env(),
            timeout=120,
        )
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        docs.append((doc["input"]["skipped"], doc["input"]["frames_replayed"], doc["kernels"]))
        assert (
            "not in the counts: 6 frames to a VXLAN port were sent, not received, by the capturing host (outgoing) "
            "and not replayed"
        ) in " ".join(doc["input"]["notes"])
    assert docs[0] == docs[1]
    ng = tmp_path / "any.pcapng"
    with open(path, "rb") as src, open(ng, "wb") as dst:
        w = dpkt.pcapng.Writer(dst, snaplen=65535, linktype=linktype)
        for ts, buf in dpkt.pcap.Reader(src):
            w.writepkt(buf, float(ts))
    r = CliRunner().invoke(main, [str(ng), "--format", "json"])
    doc = json.loads(r.stdout)
    assert (doc["input"]["skipped"], doc["input"]["frames_replayed"], doc["kernels"]) == docs[0]


def test_a_frame_the_host_sent_chooses_no_interface(tmp_path):
    """``tcpdump -i any``: the fix sample's 17 frames received on ifindex 2, and 17 VXLAN frames the host sent on
    ifindex 3, one of them first. A sent frame decides no device (capture/interfaces.py: the device of the first
    tunnel frame received) and is no VXLAN or Geneve traffic of its interface (breaker's finding: ifindex 3 was replayed,
    all of it skipped as outgoing, and ifindex 2's received frames were left out as another device's)."""
    path = tmp_path / "two.pcap"
    with PcapWriter(str(path), linktype=DLT_LINUX_SLL2) as w:
        for ts, buf in _sample():
            w.write(ts, _cooked(buf, DLT_LINUX_SLL2, 4, ifindex=3))
            w.write(ts + 100, _cooked(buf, DLT_LINUX_SLL2, 0, ifindex=2))
    result = replay_capture(str(path), ReplayConfig())
    # a frame the host sent is outgoing whichever interface is replayed, never another device's traffic
    assert (dict(result.input.skipped), result.input.frames_replayed) == ({"outgoing": 17}, 17)
    # what the host sent is not looked at: not "no VXLAN or Geneve traffic" of 17 frames to a VXLAN port
    # (newcomer38: the next note said them sent to a VXLAN port)
    assert result.input.notes[0] == (
        "the capture holds 2 interfaces (ifindex 3: 17 frames, all sent by the capturing host; "
        "ifindex 2: 17 frames, 17 tunnel); replaying ifindex 2 only (the interface of the capture's first tunnel "
        "frame; --interface chooses)"
    )
    # ifindex 3 receiving too (a copy of each frame ifindex 2 received, its own received traffic here)
    with PcapWriter(str(path), linktype=DLT_LINUX_SLL2) as w:
        for ts, buf in _sample():
            w.write(ts, _cooked(buf, DLT_LINUX_SLL2, 4, ifindex=3))
            w.write(ts + 100, _cooked(buf, DLT_LINUX_SLL2, 0, ifindex=2))
            w.write(ts + 200, _cooked(buf[:14] + bytes(20), DLT_LINUX_SLL2, 0, ifindex=3))
    note = replay_capture(str(path), ReplayConfig()).input.notes[0]
    assert note.startswith(
        "the capture holds 2 interfaces (ifindex 3: 34 frames, no VXLAN or Geneve traffic received, 17 sent by the "
        "capturing host; ifindex 2: 17 frames, 17 tunnel)"
    )
    # what ifindex 3 received cut within its IP header: nothing of it could be read (breaker61: "no VXLAN or
    # Geneve traffic received in the 0 frames whose headers could be read")
    with PcapWriter(str(path), linktype=DLT_LINUX_SLL2) as w:
        for i, (ts, buf) in enumerate(_sample()):
            w.write(ts, _cooked(buf, DLT_LINUX_SLL2, 4, ifindex=3))
            w.write(ts + 100, _cooked(buf, DLT_LINUX_SLL2, 0, ifindex=2))
            if i < 2:
                rec = _cooked(buf, DLT_LINUX_SLL2, 0, ifindex=3)
                w.write(ts + 200, rec[:30], len(rec))
    note = replay_capture(str(path), ReplayConfig()).input.notes[0]
    assert note.startswith(
        "the capture holds 2 interfaces (ifindex 3: 19 frames, the 2 received could not be read to their UDP port, "
        "17 sent by the capturing host; ifindex 2: 17 frames, 17 tunnel)"
    )


def test_a_frame_the_host_sent_is_outgoing_cut_short_or_not(tmp_path):
    # the cooked header is whole in a record cut short: what the host sent is counted as that, not as a frame to
    # capture whole again (breaker's finding: snaplen_cut, with the advice to capture whole frames)
    path = tmp_path / "cut.pcap"
    with PcapWriter(str(path), linktype=DLT_LINUX_SLL2) as w:
        for i, (ts, buf) in enumerate(_sample()):
            rec = _cooked(buf, DLT_LINUX_SLL2, 4 if i % 2 else 0)
            w.write(ts, rec[:200], orig_len=len(rec))
    result = replay_capture(str(path), ReplayConfig())
    assert dict(result.input.skipped) == {"outgoing": 8, "snaplen_cut": 9}


def _sent_then_received(path, sent: int, linktype_out: str = "pcap", late: bool = False) -> str:
    """``sent`` copies of the fix sample's first frame sent by the host on ifindex 3 (1 s after the others with
    ``late``), then the 17 frames received on ifindex 2; as pcap, or pcapng (the batch path reads it in blocks)."""
    frames = _sample()
    t0 = frames[0][0]
    with PcapWriter(str(path), linktype=DLT_LINUX_SLL2) as w:
        for k in range(sent):
            w.write(t0 + (10**9 if late else -1000) + k, _cooked(frames[0][1], DLT_LINUX_SLL2, 4, ifindex=3))
        for ts, buf in frames:
            w.write(ts, _cooked(buf, DLT_LINUX_SLL2, 0, ifindex=2))
    if linktype_out == "pcap":
        return str(path)
    ng = str(path) + "ng"
    with open(path, "rb") as src, open(ng, "wb") as dst:
        ngw = dpkt.pcapng.Writer(dst, snaplen=65535, linktype=DLT_LINUX_SLL2)
        for ts, buf in dpkt.pcap.Reader(src):
            ngw.writepkt(buf, float(ts))
    return ng


@pytest.mark.parametrize("form", ["pcap", "pcapng"])
def test_frames_the_host_sent_fill_no_look_ahead(tmp_path, form):
    """5,000 frames the host sent, then the 17 received: the look-ahead (capture/interfaces.py LOOKAHEAD_RECORDS,
    4,096) fills with sent frames, which decide nothing; the first tunnel frame received decides, on both engines
    (breaker's finding: the interface of the sent frames was chosen, and nothing replayed)."""
    path = _sent_then_received(tmp_path / "many.pcap", 5000, form)
    result = replay_capture(path, ReplayConfig())
    assert (dict(result.input.skipped), result.input.frames_replayed) == ({"outgoing": 5000}, 17)
    assert (
        "replaying ifindex 2 only (the interface of the capture's first tunnel frame" in result.input.notes[0]
    )


def test_a_frame_the_host_sent_sets_no_time(tmp_path):
    # one frame sent by the host, stamped 1 s after the 17 received ones and read first: the replay's times start
    # at the first frame received (no negative trace time) and no record is said to go back in time
    path = _sent_then_received(tmp_path / "late.pcap", 1, late=True)
    r = subprocess.run(
        [*CLI, path, "--trace", "-", "-q", "--no-hist"],
        capture_output=True,
        env=cli_env(),
        timeout=120,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    times = [
        float(x.split(":")[0].split()[-1]) for x in r.stdout.splitlines() if "net:netif_receive_skb" in x
    ]
    assert times and min(times) >= 0
    assert "timestamped before" not in r.stdout


def test_every_frame_sent_by_the_host_is_said_so(tmp_path):
    # nothing received: the note says what the frames are, not that none of them parses as a tunnel
    path = tmp_path / "all.pcap"
    with PcapWriter(str(path), linktype=DLT_LINUX_SLL2) as w:
        for ts, buf in _sample():
            w.write(ts, _cooked(buf, DLT_LINUX_SLL2, 4), orig_len=len(buf) + 1000)
    result = replay_capture(str(path), ReplayConfig(vxlan_ports=(4790,)))
    assert (dict(result.input.skipped), result.input.caplen_over_orig_len) == ({"outgoing": 17}, 0)
    assert result.input.notes == [
        "no VXLAN or Geneve traffic replayed: every frame read was sent by the capturing host (outgoing), none received"
    ]


def test_tunnel_frames_the_host_sent_are_no_tunnel_traffic_left_unseen(tmp_path):
    """Frames the capturing host sent reach no receive path's GRO, whatever the kernel (sim/skipped.py
    received_frame): sent VXLAN frames are not tunnel traffic the replay did not see, of which "what the fix changes
    is not known" (newcomer39: ``--interface`` on a device of plain frames beside 3 sent VXLAN frames read
    ``tunnel_not_replayed``). Received ones cut short still are, and the sent ones are said apart."""
    import json

    from gro_replay.report.document import document

    frames = _sample()
    inner = 14 + 20 + 8 + 8  # the fix sample's outer Ethernet, IPv4, UDP and VXLAN headers
    path = tmp_path / "sent.pcap"
    with PcapWriter(str(path), linktype=DLT_LINUX_SLL2) as w:
        for i, (ts, buf) in enumerate(frames):
            if i < 3:
                w.write(ts, _cooked(buf, DLT_LINUX_SLL2, 4, ifindex=3))
            w.write(ts + 100, _cooked(buf[inner:], DLT_LINUX_SLL2, 0, ifindex=9))
    doc = document(replay_capture(str(path), ReplayConfig(interface="9")))
    assert doc["input"]["skipped"] == {"outgoing": 3}
    assert doc["verdict"]["outcome"] == "no_tunnel"
    assert doc["verdict"]["text"].startswith(
        "No flow carries VXLAN or Geneve traffic: none of the 17 frames replayed"
    )
    assert "the 3 frames the capturing host sent not read: outgoing" in json.dumps(doc["input"]["notes"])
    # one device: 5 VXLAN frames received cut short, 3 sent, one plain frame received
    with PcapWriter(str(path), linktype=DLT_LINUX_SLL2) as w:
        for i, (ts, buf) in enumerate(frames[:8]):
            rec = _cooked(buf, DLT_LINUX_SLL2, 4 if i >= 5 else 0)
            w.write(ts, rec if i >= 5 else rec[:80], len(rec))
        w.write(frames[8][0], _cooked(frames[8][1][inner:], DLT_LINUX_SLL2, 0))
    v = document(replay_capture(str(path), ReplayConfig()))["verdict"]
    assert v["outcome"] == "tunnel_not_replayed"
    assert v["text"].startswith(
        "No tunnel frame was replayed: 5 frames to a VXLAN port were cut short (snaplen_cut) and not replayed"
    )
    assert (
        "so what the fix changes for them is not known here; the one frame replayed is not VXLAN" in v["text"]
    )
    assert v["text"].endswith(
        "Not in these counts: 3 frames to a VXLAN port were sent, not received, by the capturing host (outgoing) "
        "and not replayed."
    )
