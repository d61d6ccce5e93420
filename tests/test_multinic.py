"""Tunnel traffic captured on more than one device: one device replayed, the others' frames said, file == pipe.

Kernel rules the expected counts come from:
- each NIC's frames are merged by its own NAPI: a driver calls ``napi_gro_receive(napi, skb)`` for its NAPI, whose
  ``gro_hash`` holds only that NAPI's packets (net/core/gro.c ``dev_gro_receive``; gro-spec §1). Two NICs' frames
  never share a GRO list, so the replay models one of them and counts the other's as left out.
- ``tcpdump -i any`` taps an skb in ``__netif_receive_skb_core`` on every device it passes: on a bond's slave,
  then (``bond_handle_frame`` → ``RX_HANDLER_ANOTHER``) on the bond; GRO ran once, on the slave's NAPI, so the
  bond's frames repeat the slave's and add nothing; the tunnel device's decapsulated inner packets (delivered by its
  gro_cells NAPI) never reach a physical device's NAPI (../shared/triage/README.md, kernel-checked).
- the frames: synth's VXLAN with outer UDP checksum 0 and the default ``--rx-csum unnecessary`` (level 0): before
  89e5c58fc1e2 ``udp_gro_receive`` refuses tunnel GRO for each (csum_cnt 0, csum_valid 0: the phys stage delivers
  every frame alone) and the tunnel device's gro_cells merges a flow's 10 frames, 1 µs apart, into one skb; after
  it the phys stage merges them into one skb (gro-spec §4, the fix's commit message).
The choice is made as records are read (capture/interfaces.py): the device of the capture's first tunnel frame,
or ``--interface``. Every capture is replayed from a file and through a FIFO: the documents are equal.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from test_interface_pipes import _fifo

from gro_replay.capture import interfaces
from gro_replay.capture.reader import DLT_LINUX_SLL2
from gro_replay.capture.writer import PcapngWriter, PcapWriter
from gro_replay.report.document import document
from gro_replay.sim import ReplayConfig, replay_capture
from gro_replay.synth import Scenario, synth_frames

_OUTER = 14 + 20 + 8 + 8  # Ethernet + IPv4 + UDP + VXLAN before the inner Ethernet frame
#: two VXLAN flows of 10 frames each, 1 µs apart, alternating (synth's round robin): flow j % 2 is frame j's
_FRAMES = list(synth_frames(Scenario(frames=10, flows=2)))


def _docs(path: Path, tmp_path: Path, *extra: str) -> dict:
    """The replay document of ``path`` (``--interface`` from ``extra``) from the file and through a FIFO: equal but
    for the input's path and the engine statement; the file's."""

    def doc(p: str) -> dict:
        cfg = ReplayConfig(interface=extra[1] if extra else None)
        d = document(replay_capture(p, cfg))
        d.pop("engine")
        d["input"].pop("path")
        return json.loads(json.dumps(d, default=str))

    want = doc(str(path))
    with _fifo(tmp_path / "fifo", path.read_bytes()) as fifo:
        assert doc(fifo) == want
    return want


def _rows(doc: dict) -> list[tuple]:
    return [
        (
            i["interface"],
            i["frames"],
            i["tunnel_frames"],
            i["tunnel_frames_repeated"],
            i["tunnel_frames_left_out"],
            i["copies_of_tunnel_payload"],
            i["replayed"],
        )
        for i in doc["input"]["interfaces"]
    ]


def _stages(doc: dict) -> dict:
    return {
        k["name"]: {s: (v["frames_in"], v["skbs_delivered"]) for s, v in k["stages"].items()}
        for k in doc["kernels"]
    }


#: one flow of 10 VXLAN frames on one phys device (the module docstring's rules)
_ONE_FLOW = {
    "pre-fix": {"phys": (10, 10), "tunnel": (10, 1)},
    "post-fix": {"phys": (10, 1), "tunnel": (10, 1)},
}


def _two_nics(path: Path) -> Path:
    """eth0 receives flow 0, eth1 flow 1 (each its own NIC); vxlan0 the inner packet of every frame."""
    with PcapngWriter(path, [("eth0", ""), ("eth1", ""), ("vxlan0", "")]) as w:
        for j, (ts, f) in enumerate(_FRAMES):
            w.write(ts, f, iface=j % 2)
            w.write(ts + 500, f[_OUTER:], iface=2)
    return path


def test_two_nics_replay_the_first_tunnel_frames_device_and_name_the_other(tmp_path):
    doc = _docs(_two_nics(tmp_path / "two-nics.pcapng"), tmp_path)
    inp = doc["input"]
    assert (inp["frames_read"], inp["frames_replayed"], inp["skipped"]) == (40, 10, {"other_interface": 30})
    assert inp["classes"] == {"tunnel_tcp": 10}
    assert _rows(doc) == [
        ("interface 0 (eth0)", 10, 10, 0, 0, 0, True),
        ("interface 2 (vxlan0)", 20, 0, 0, 0, 10, False),  # the 10 inner packets of eth0's frames
        ("interface 1 (eth1)", 10, 10, 0, 10, 0, False),
    ]
    assert [i["select"] for i in inp["interfaces"]] == [
        "--interface eth0",
        "--interface vxlan0",
        "--interface eth1",
    ]
    assert _stages(doc) == _ONE_FLOW  # eth0's flow only: eth1's frames are in no count
    (note,) = [n for n in inp["notes"] if "interfaces" in n]
    assert "replaying interface 0 (eth0) only (the interface of the capture's first tunnel frame" in note
    assert "10 tunnel frames on interface 1 (eth1) left out" in note and "--interface eth1 replays it" in note
    assert doc["verdict"]["text"].endswith(
        "Only interface 0 (eth0) was replayed: tunnel frames of another device, which its own NAPI merges, are in "
        "no count here: 10 on interface 1 (eth1) (--interface eth1 replays them)."
    )
    # the other NIC, chosen: its flow, and eth0's frames left out
    other = _docs(tmp_path / "two-nics.pcapng", tmp_path, "--interface", "eth1")
    assert _rows(other) == [
        ("interface 0 (eth0)", 10, 10, 0, 10, 0, False),
        ("interface 2 (vxlan0)", 20, 0, 0, 0, 10, False),
        ("interface 1 (eth1)", 10, 10, 0, 0, 0, True),
    ]
    assert _stages(other) == _ONE_FLOW
    assert "10 on interface 0 (eth0) (--interface eth0 replays them)." in other["verdict"]["text"]


def _bond(path: Path) -> Path:
    """eth0, a bond's slave, receives both flows; bond0 sees each frame again; vxlan0 the inner packets."""
    with PcapngWriter(path, [("eth0", ""), ("bond0", ""), ("vxlan0", "")]) as w:
        for ts, f in _FRAMES:
            w.write(ts, f, iface=0)
            w.write(ts, f, iface=1)
            w.write(ts + 500, f[_OUTER:], iface=2)
    return path


@pytest.mark.parametrize("want", [None, "bond0"])
def test_a_bond_and_its_slave_are_one_device_replayed_once(tmp_path, want):
    path = _bond(tmp_path / "bond.pcapng")
    doc = _docs(path, tmp_path, *(("--interface", want) if want else ()))
    inp = doc["input"]
    assert (inp["frames_read"], inp["frames_replayed"]) == (60, 20)
    slave, master = ("interface 0 (eth0)", "interface 1 (bond0)")
    # the device not replayed repeats the other's 20 tunnel frames: nothing left out (in either order of reading)
    assert _rows(doc) == [
        (slave, 20, 20, 20 if want else 0, 0, 0, bool(not want)),
        (master, 20, 20, 0 if want else 20, 0, 0, bool(want)),
        ("interface 2 (vxlan0)", 20, 0, 0, 0, 20, False),
    ]
    # both flows, 10 frames each, on one NAPI: per flow as _ONE_FLOW
    assert _stages(doc) == {
        "pre-fix": {"phys": (20, 20), "tunnel": (20, 2)},
        "post-fix": {"phys": (20, 2), "tunnel": (20, 2)},
    }
    assert "Only" not in doc["verdict"]["text"]
    (note,) = [n for n in inp["notes"] if "interfaces" in n]
    assert "left out" not in note
    # the other view named with the --interface that replays it, neither called the port: which one is, the order
    # of the records does not say for sure (newcomer37, breaker58, breaker59)
    other = "interface 1 (bond0) (--interface bond0)" if not want else "interface 0 (eth0) (--interface eth0)"
    replayed = "interface 1 (bond0)" if want else "interface 0 (eth0)"
    assert (
        f"the same tunnel frames twice: 20 on {other} are also {replayed}'s (two views of one device's frames, a "
        "bond or bridge and its port: GRO ran once, on the port's NAPI; counted once; --interface replays another "
        "view instead)"
    ) in note


def _bridged_bond(path: Path) -> Path:
    """eth0, a bond's slave, receives both flows; bond0 and br0 (a bridge above the bond) see each frame again, in
    that order (each master's tap runs after its slave's rx_handler returns RX_HANDLER_ANOTHER)."""
    with PcapngWriter(path, [("eth0", ""), ("bond0", ""), ("br0", "")]) as w:
        for ts, f in _FRAMES:
            for iface in range(3):
                w.write(ts, f, iface=iface)
    return path


@pytest.mark.parametrize("want", [None, "bond0", "br0"])
def test_three_views_of_one_frame_are_repeats_whichever_is_replayed(tmp_path, want):
    # every view not replayed repeats the replayed one's 20 tunnel frames, also those read before it (two views
    # before br0's: each counts; one window entry per frame used to keep only the latest view, and the other's 20
    # frames were said "left out")
    doc = _docs(
        _bridged_bond(tmp_path / "bridged-bond.pcapng"), tmp_path, *(("--interface", want) if want else ())
    )
    names = ["eth0", "bond0", "br0"]
    chosen = want or "eth0"
    assert doc["input"]["frames_read"] == 60 and doc["input"]["frames_replayed"] == 20
    assert _rows(doc) == [
        (f"interface {i} ({n})", 20, 20, 0 if n == chosen else 20, 0, 0, n == chosen)
        for i, n in enumerate(names)
    ]
    assert "left out" not in json.dumps(doc["input"]["notes"]) and "Only" not in doc["verdict"]["text"]
    assert _stages(doc) == {
        "pre-fix": {"phys": (20, 20), "tunnel": (20, 2)},
        "post-fix": {"phys": (20, 2), "tunnel": (20, 2)},
    }
    # the two other views, each with the --interface that replays it
    (note,) = [n for n in doc["input"]["notes"] if "interfaces" in n]
    views = ", ".join(
        f"20 on interface {i} ({n}) (--interface {n})" for i, n in enumerate(names) if n != chosen
    )
    assert (
        f"the same tunnel frames twice: {views} are also interface {names.index(chosen)} ({chosen})'s" in note
    )


def _sll2(ifindex: int, f: bytes) -> bytes:
    """A Linux cooked v2 record (``tcpdump -i any``): protocol, reserved, ifindex, ARPHRD_ETHER, packet type,
    address length, address (8 bytes), then the frame after its Ethernet header."""
    return struct.pack("!HHIHBB8s", 0x0800, 0, ifindex, 1, 0, 6, f[6:12]) + f[14:]


def test_tcpdump_any_of_two_nics_from_a_pipe_leaves_the_copies_out(tmp_path):
    # ifindex 2 (eth0) flow 0, ifindex 3 (eth1) flow 1, ifindex 5 (vxlan0) every inner packet: a pipe counted the
    # copies as phys traffic before; now file and pipe replay ifindex 2 and name ifindex 5's copies
    path = tmp_path / "any.pcap"
    with PcapWriter(path, linktype=DLT_LINUX_SLL2) as w:
        for j, (ts, f) in enumerate(_FRAMES):
            w.write(ts, _sll2(2 + j % 2, f))
            w.write(ts + 500, _sll2(5, f[_OUTER:]))
    doc = _docs(path, tmp_path)
    inp = doc["input"]
    assert inp["classes"] == {"tunnel_tcp": 10} and inp["skipped"] == {"other_interface": 30}
    assert _rows(doc) == [
        ("ifindex 2", 10, 10, 0, 0, 0, True),
        ("ifindex 5", 20, 0, 0, 0, 10, False),
        ("ifindex 3", 10, 10, 0, 10, 0, False),
    ]
    assert _stages(doc) == _ONE_FLOW
    assert doc["verdict"]["text"].endswith("10 on ifindex 3 (--interface 3 replays them).")


def test_frames_before_the_first_tunnel_frame_wait_for_the_choice(tmp_path, monkeypatch):
    # eth1 carries 3 plain frames (inner packets, not tunnel traffic) before eth0's first VXLAN frame: they are held
    # until the choice and left out; eth0's own plain frame before it is replayed
    plain = [f[_OUTER:] for _ts, f in _FRAMES[:4]]
    t0 = _FRAMES[0][0] - 10_000
    path = tmp_path / "late.pcapng"
    with PcapngWriter(path, [("eth0", ""), ("eth1", "")]) as w:
        for k in range(3):
            w.write(t0 + k, plain[k], iface=1)
        w.write(t0 + 3, plain[3], iface=0)
        for ts, f in _FRAMES[::2]:  # flow 0
            w.write(ts, f, iface=0)
    doc = _docs(path, tmp_path)
    assert doc["input"]["classes"] == {"tunnel_tcp": 10, "not_tunnel": 1}
    assert _rows(doc) == [
        ("interface 1 (eth1)", 3, 0, 0, 0, 0, False),
        ("interface 0 (eth0)", 11, 10, 0, 0, 0, True),
    ]
    # a look-ahead of 3 records fills with eth1's: eth1 (it received the most held) is replayed, eth0's flow left out
    monkeypatch.setattr(interfaces, "LOOKAHEAD_RECORDS", 3)
    doc = _docs(path, tmp_path)
    assert doc["input"]["classes"] == {"not_tunnel": 3}
    assert _rows(doc) == [
        ("interface 1 (eth1)", 3, 0, 0, 0, 0, True),
        ("interface 0 (eth0)", 11, 10, 0, 10, 0, False),
    ]
    (note,) = [n for n in doc["input"]["notes"] if "interfaces" in n]
    assert (
        "(no tunnel frame among the first 3 frames: the interface that received the most of them; --interface"
        in note
    )
    assert doc["verdict"]["text"].endswith("10 on interface 0 (eth0) (--interface eth0 replays them).")


def test_no_tunnel_traffic_replays_every_interface(tmp_path):
    path = tmp_path / "plain.pcapng"
    with PcapngWriter(path, [("eth0", ""), ("eth1", "")]) as w:
        for j, (ts, f) in enumerate(_FRAMES):
            w.write(ts, f[_OUTER:], iface=j % 2)
    doc = _docs(path, tmp_path)
    assert (doc["input"]["frames_replayed"], doc["input"]["classes"]) == (20, {"not_tunnel": 20})
    (note,) = [n for n in doc["input"]["notes"] if "interfaces" in n]
    assert note.endswith(
        "none carries tunnel traffic: every interface was replayed as one device's traffic; --interface N chooses one"
    )


def test_tcpdump_any_cooked_v1_copies_are_said_alike_from_a_pipe(tmp_path):
    # Linux cooked v1 carries no ifindex: one device to the replay; eth0's 10 VXLAN frames and vxlan0's 10 inner
    # packets are all replayed (the copies cannot be told apart by interface) and the note counts the 10 copies,
    # from a file as from a pipe (a copy follows its tunnel frame: found in the window of recent inner packets)
    from gro_replay.capture.reader import DLT_LINUX_SLL

    def sll(f: bytes) -> bytes:  # packet type, ARPHRD_ETHER, address length, address (8 bytes), protocol
        return struct.pack("!HHH8sH", 0, 1, 6, f[6:12] + b"\0\0", 0x0800) + f[14:]

    path = tmp_path / "any-v1.pcap"
    with PcapWriter(path, linktype=DLT_LINUX_SLL) as w:
        for ts, f in _FRAMES[::2]:
            w.write(ts, sll(f))
            w.write(ts + 500, sll(f[_OUTER:]))
    doc = _docs(path, tmp_path)
    assert doc["input"]["classes"] == {"tunnel_tcp": 10, "not_tunnel": 10}
    (note,) = doc["input"]["notes"]
    assert note.startswith("the capture holds the same packets twice: 10 frames carry the inner packets")


def test_a_silent_replayed_interface_beside_a_busy_one_reads_each_record_once(tmp_path, monkeypatch):
    # eth0's first tunnel frame decides the device, then 3,000 frames on bond0 (not replayed) and none on eth0
    # until the last record. The batch path's last poll stays open (the next replayed frame decides its end); it
    # used to keep every record after that poll's first for the next block, bond0's too, so each block read them
    # all again: the buffer grew with the run of another interface's records and the time with its square (1M
    # such records: 1.1 GB, 247 s; breaker's finding). Now the open poll's entries are carried: every block holds
    # at most what its size allows. Blocks of 64 KiB here, so the run spans many of them.
    from gro_replay import pollcache
    from gro_replay.capture import interface_chunks

    monkeypatch.setattr(pollcache, "BLOCK", 64 << 10)
    sizes: list[int] = []
    real_next = interface_chunks.SelectedChunks.next

    def next_(self, keep=None):
        ch = real_next(self, keep)
        if ch is not None:
            sizes.append(len(ch))
        return ch

    monkeypatch.setattr(interface_chunks.SelectedChunks, "next", next_)
    path = tmp_path / "busy-bond.pcapng"
    with PcapngWriter(path, [("eth0", ""), ("bond0", "")]) as w:
        w.write(_FRAMES[0][0], _FRAMES[0][1], iface=0)
        for k in range(3000):
            w.write(_FRAMES[0][0] + 1 + k, _FRAMES[1 + k % 8][1], iface=1)
        w.write(_FRAMES[0][0] + 5000, _FRAMES[9][1], iface=0)
    doc = document(replay_capture(str(path), ReplayConfig()))
    assert doc["engine"]["path"] == "batch"
    inp = doc["input"]
    assert (inp["frames_read"], inp["frames_replayed"], inp["skipped"]) == (
        3002,
        2,
        {"other_interface": 3000},
    )
    per_block = (64 << 10) // 100  # records of at least 100 bytes (these are ~150): a block holds fewer
    assert len(sizes) > 3000 // per_block and max(sizes) <= per_block, sizes


@pytest.mark.parametrize("order", ["before", "after"])
def test_each_replayed_frame_matches_one_frame_per_interface_in_any_order(tmp_path, order):
    # eth0 holds each of the 20 frames twice, bond0 (replayed) once: one of eth0's two is bond0's frame seen there
    # too (a repeat), the other is not (left out: eth0's own traffic), whether eth0 read them before bond0 or
    # after (breaker's finding: read before, one was a repeat; read after, both were). A repeat is one view of one
    # frame per interface: a keepalive sent five times on a NIC before it failed over, then once on the replayed
    # one, is one repeat and four frames of that NIC (the second breaker's case)
    path = tmp_path / f"dup-{order}.pcapng"
    with PcapngWriter(path, [("eth0", ""), ("bond0", "")]) as w:
        for ts, f in _FRAMES:
            views = [0, 0, 1] if order == "before" else [0, 1, 0]
            for iface in views:
                w.write(ts, f, iface=iface)
    doc = _docs(path, tmp_path, "--interface", "bond0")
    assert _rows(doc) == [
        ("interface 0 (eth0)", 40, 40, 20, 20, 0, False),
        ("interface 1 (bond0)", 20, 20, 0, 0, 0, True),
    ]
    assert doc["verdict"]["text"].endswith(
        "Only interface 1 (bond0) was replayed: tunnel frames of another device, which its own NAPI merges, are in "
        "no count here: 20 on interface 0 (eth0) (--interface eth0 replays them)."
    )


def _also(doc: dict) -> list:
    return [(i["interface"], i["tunnel_frames_left_out_also"]) for i in doc["input"]["interfaces"]]


@pytest.mark.parametrize("window", [interfaces.COPY_WINDOW, 2])
@pytest.mark.parametrize("order", ["slave-first", "bond-first", "mixed", "bridged"])
def test_two_slaves_of_a_bond_left_out_are_counted_once(tmp_path, monkeypatch, order, window):
    """eth0 and eth1, two slaves of bond0, receive flow 0 and flow 1; bond0 sees every frame again (the module
    docstring's tap order: a slave, then its bond; ``mixed``: either first, by frame; ``bridged``: br0 above the
    bond sees each again, after it). eth0 is replayed: bond0's 10 frames of eth1 are left out and so are eth1's
    (and br0's), the same 10 frames on several views (breaker58: said as 10 and 10 left out, 20 frames of other
    devices; breaker60: split between the views by file order, "other devices"). Each view read after another is
    said to be the first's too (``tunnel_frames_left_out_also``), and the views' frames are said to be 10 distinct
    ones, whichever order the file holds them in and whether the payload window keeps them to the end or pushes
    them out after 2 newer hashes (``window``); how many devices received them is not said (breaker61: a bond
    over two slaves left out shares frames with each, test below)."""
    monkeypatch.setattr(interfaces, "COPY_WINDOW", window)
    path = tmp_path / f"two-slaves-{order}-{window}.pcapng"
    names = ["eth0", "eth1", "bond0"] + (["br0"] if order == "bridged" else [])
    with PcapngWriter(path, [(n, "") for n in names]) as w:
        for j, (ts, f) in enumerate(_FRAMES):
            views = {
                "slave-first": (j % 2, 2),
                "bond-first": (2, j % 2),
                # eth1's frames 1, 5, 9, … before the bond's
                "mixed": (j % 2, 2) if j % 4 < 2 else (2, j % 2),
                "bridged": (j % 2, 2, 3),
            }[order]
            for iface in views:
                w.write(ts, f, iface=iface)
    doc = _docs(path, tmp_path, "--interface", "eth0")
    eth0, eth1, bond0, br0 = (
        "interface 0 (eth0)",
        "interface 1 (eth1)",
        "interface 2 (bond0)",
        "interface 3 (br0)",
    )
    # bond0 (and br0 above it): eth0's 10 repeat the replayed ones; eth1's 10 are left out
    rows = {
        eth0: (eth0, 10, 10, 0, 0, 0, True),
        eth1: (eth1, 10, 10, 0, 10, 0, False),
        bond0: (bond0, 20, 20, 10, 10, 0, False),
        br0: (br0, 20, 20, 10, 10, 0, False),
    }
    listed = [bond0, eth0, eth1] if order == "bond-first" else [eth0, bond0, eth1]  # by first frame
    if order == "bridged":
        listed.insert(2, br0)
    assert _rows(doc) == [rows[i] for i in listed]
    # a view's frames read after another left-out view's: eth1's 5 frames 3, 7, … and the bond's 5 of 1, 5, …
    also = {
        "slave-first": {bond0: {eth1: 10}},
        "bond-first": {eth1: {bond0: 10}},
        "mixed": {bond0: {eth1: 5}, eth1: {bond0: 5}},
        "bridged": {bond0: {eth1: 10}, br0: {eth1: 10}},
    }[order]
    assert _also(doc) == [(i, also.get(i, {})) for i in listed]
    assert _stages(doc) == _ONE_FLOW
    (note,) = [n for n in doc["input"]["notes"] if "interfaces" in n]
    views = [i for i in listed if i != eth0]
    for v in views:
        name = v.split("(")[1].rstrip(")")
        assert (
            f"; 10 tunnel frames on {v} left out (another device's traffic, merged by its own NAPI: --interface "
            f"{name} replays it instead)"
        ) in note
    shared = ", ".join(f"{v}'s {n} are also {o}'s" for v in views for o, n in also.get(v, {}).items())
    assert (
        f"; the same tunnel frames on several interfaces among those left out: {shared} (views of the same frames, "
        "a bond or bridge and its ports: 10 distinct tunnel frames left out)"
    ) in note
    each = "; ".join(f"10 on {v} (--interface {v.split('(')[1].rstrip(')')} replays them)" for v in views)
    assert doc["verdict"]["text"].endswith(
        f"Only {eth0} was replayed: tunnel frames of devices other than the one replayed, which their own NAPIs "
        f"merge, are in no count here: {each}. They are 10 distinct frames: {shared} (views of the same frames, a "
        "bond or bridge and its ports)."
    )


def test_a_bond_over_two_slaves_left_out_shares_the_frames_of_each(tmp_path):
    """eth0, eth1 and eth2, slaves of bond0, each receive one flow of 10 frames; bond0 sees every frame after its
    slave. eth0 is replayed: eth1's and eth2's 10 each are left out, and so are the bond's 20 of them, which are
    also theirs (breaker61: the three views were said to be one device's, as one slave's on two views are). The
    note and the verdict give each view's count and what the views share, 20 distinct frames, and count no
    device."""
    frames = list(synth_frames(Scenario(frames=10, flows=3)))  # flow j % 3 is frame j's
    path = tmp_path / "bond-of-three.pcapng"
    with PcapngWriter(path, [("eth0", ""), ("eth1", ""), ("eth2", ""), ("bond0", "")]) as w:
        for j, (ts, f) in enumerate(frames):
            for iface in (j % 3, 3):
                w.write(ts, f, iface=iface)
    doc = _docs(path, tmp_path, "--interface", "eth0")
    eth0, eth1, eth2, bond0 = (
        f"interface {i} ({n})" for i, n in enumerate(("eth0", "eth1", "eth2", "bond0"))
    )
    assert _rows(doc) == [
        (eth0, 10, 10, 0, 0, 0, True),
        (bond0, 30, 30, 10, 20, 0, False),
        (eth1, 10, 10, 0, 10, 0, False),
        (eth2, 10, 10, 0, 10, 0, False),
    ]
    assert _also(doc) == [(eth0, {}), (bond0, {eth1: 10, eth2: 10}), (eth1, {}), (eth2, {})]
    assert _stages(doc) == _ONE_FLOW
    shared = f"{bond0}'s 10 are also {eth1}'s and 10 {eth2}'s"
    (note,) = [n for n in doc["input"]["notes"] if "interfaces" in n]
    assert (
        f"among those left out: {shared} (views of the same frames, a bond or bridge and its ports: 20 distinct"
        in note
    )
    assert doc["verdict"]["text"].endswith(
        f"in no count here: 20 on {bond0} (--interface bond0 replays them); 10 on {eth1} (--interface eth1 replays "
        f"them); 10 on {eth2} (--interface eth2 replays them). They are 20 distinct frames: {shared} (views of the "
        "same frames, a bond or bridge and its ports)."
    )


def test_unnamed_interfaces_of_two_sections_may_be_one_device_joined_with_cat(tmp_path):
    """Two pcapng files of one device, with no if_name (as editcap -F pcapng writes them), joined with cat: a
    section each, interface 0 and interface 1 of the file. Nothing in them tells one device from two, so the note
    and the verdict say the frames left out may be this device's in a joined capture, and name mergecap (newcomer's
    finding: they were called another device's traffic, merged by its own NAPI). Named interfaces keep the
    sentence as it was (test_two_nics_… above)."""
    import dpkt

    frames = list(synth_frames(Scenario(frames=17)))
    path = tmp_path / "joined.pcapng"
    with open(path, "wb") as f:
        for part in (frames[:10], frames[10:]):
            w = dpkt.pcapng.Writer(f, snaplen=65535, linktype=1)
            for ts, buf in part:
                w.writepkt(buf, ts=ts / 1e9)
    doc = _docs(path, tmp_path)
    assert (doc["input"]["frames_replayed"], doc["input"]["skipped"]) == (10, {"other_interface": 7})
    rows = doc["input"]["interfaces"]
    assert [r["may_be_replayed_device"] for r in rows] == [False, True]
    (note,) = [n for n in doc["input"]["notes"] if "interfaces" in n]
    assert (
        "7 tunnel frames on interface 1 (section 2) left out (another device's traffic, merged by its own NAPI, or "
        "this device's in a second capture joined with cat: the interfaces are not named, and capture files rotated "
        "or split each start a section (mergecap -w joins them into one): --interface 1 replays it instead)"
    ) in note
    assert doc["verdict"]["text"].endswith(
        "Only interface 0 (section 1) was replayed: tunnel frames of another device, which its own NAPI merges, or "
        "of this device in captures joined with cat (the interfaces are not named; mergecap -w joins captures), are "
        "in no count here: 7 on interface 1 (section 2) (--interface 1 replays them)."
    )
