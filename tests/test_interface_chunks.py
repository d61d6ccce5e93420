"""The batch path's block reading of pcapng captures by interface (capture/interface_chunks.py ``SelectedChunks``)
and the block walker's interface numbering (pcapng_chunks.py ``PcapngChunks``).

Expected values come from how each capture is built (which interface each record is on, which records are tunnel
frames and which are copies of their inner packets) and from the rule of capture/interfaces.py (the device of the
first tunnel frame; a look-ahead of ``LOOKAHEAD_RECORDS``; payloads hashed from the record after a second interface
was described). Every capture gives one document from a file, a pipe and the frame-by-frame reference path.
"""

from __future__ import annotations

import struct

import pytest
from test_interface_pipes import _OUTER, _block, _both, _epb, _frames, _idb, _interfaces, _shb

from gro_replay import pollcache
from gro_replay.capture import interface_chunks, interface_plan, interfaces
from gro_replay.capture.reader import open_capture


@pytest.fixture(autouse=True)
def _small_blocks(monkeypatch):
    monkeypatch.setattr(pollcache, "BLOCK", 4096)


def test_a_section_begun_at_the_end_of_a_walkers_read_names_its_own_interface(tmp_path):
    # section 1 (eth0) fills the walker's first read of 1 MiB (Capture iteration) up to section 2's header and
    # interface block (wlan9); section 2's packets come in the next read. Iteration sets iface_base to each record's
    # section: the walker must number the next read's packets by its own section (wlan9), not the last yielded's
    f = bytes(1000)
    one = _shb() + _idb("eth0") + b"".join(_epb(0, 1000 + k, f) for k in range(1015))
    two = _shb() + _idb("wlan9")
    one += _epb(0, 5000, bytes((1 << 20) - len(one) - len(two) - 32))
    assert len(one) + len(two) == 1 << 20
    path = tmp_path / "sections.pcapng"
    path.write_bytes(one + two + b"".join(_epb(0, 9000 + k, f) for k in range(5)))
    with open_capture(path) as cap:
        names = [cap.all_interfaces[cap.iface_base + cap.last_iface][1] for _rec in cap]
    assert names == ["eth0"] * 1016 + ["wlan9"] * 5


def test_one_interface_decodes_no_frame_of_the_common_layout(tmp_path, monkeypatch):
    # 3 flows x 40 VXLAN frames on eth0: the selection reads tunnel frames from the block's columns, decodes none;
    # with vxlan0 described after the first 10 frames and a copy after each later frame, the records after its
    # interface block have their payload hashes counted — eth0's VXLAN frames hashed from their columns (the bytes
    # from the inner TCP header on), vxlan0's inner frames (not of the common layout) decoded — and the copies
    # counted: 110 of eth0's 120
    calls = []
    real = interface_chunks.record_payload
    monkeypatch.setattr(interface_chunks, "record_payload", lambda *a: calls.append(a[-1]) or real(*a))
    frames = _frames(40, flows=3)
    doc = _both(_shb() + _idb("eth0") + b"".join(_epb(0, ts, f) for ts, f in frames), tmp_path)
    assert doc["input"]["frames_replayed"] == 120 and calls == []
    recs = [_epb(0, ts, f) for ts, f in frames[:10]] + [_idb("vxlan0")]
    for ts, f in frames[10:]:
        recs += [_epb(0, ts, f), _epb(1, ts + 500, f[_OUTER:])]
    doc = _both(_shb() + _idb("eth0") + b"".join(recs), tmp_path)
    assert _interfaces(doc) == [
        ("interface 0 (eth0)", 120, 120, 0, True),
        ("interface 1 (vxlan0)", 110, 0, 110, False),
    ]
    # twice (a file, a pipe), each of vxlan0's 110 records decoded and hashed
    assert calls == [True] * 2 * 110


def test_the_batch_path_reads_a_pcapng_file_once(tmp_path, monkeypatch):
    # one interface (eth0), 60 VXLAN frames: the frame-by-frame path walks the file's blocks first to find that
    # nothing is to be chosen (interface_plan.plan); the batch path reads the file once, as a pipe, and chooses as it
    # reads (SelectedChunks). Same document either way (_both: file, pipe, reference path)
    walks = []
    real = interface_plan._one_interface
    monkeypatch.setattr(interface_plan, "_one_interface", lambda *a: walks.append(a[0]) or real(*a))
    doc = _both(_shb() + _idb("eth0") + b"".join(_epb(0, ts, f) for ts, f in _frames(60)), tmp_path)
    assert doc["input"]["frames_replayed"] == 60 and doc["input"]["interfaces"] == []
    assert walks == [str(tmp_path / "capture")]  # the reference path's file only


def test_a_copy_of_a_frame_read_before_its_interface_was_described_is_not_told(tmp_path):
    # eth0's first VXLAN frame, then vxlan0's interface block and that frame's copy, then 9 frames each with its
    # copy: the first copy's tunnel frame was read while the capture was one interface (no hash kept): 9 copies
    frames = _frames(10)
    ts, f = frames[0]
    recs = [_epb(0, ts, f), _idb("vxlan0"), _epb(1, ts + 500, f[_OUTER:])]
    for ts, f in frames[1:]:
        recs += [_epb(0, ts, f), _epb(1, ts + 500, f[_OUTER:])]
    doc = _both(_shb() + _idb("eth0") + b"".join(recs), tmp_path)
    assert _interfaces(doc) == [
        ("interface 0 (eth0)", 10, 10, 0, True),
        ("interface 1 (vxlan0)", 10, 0, 9, False),
    ]


@pytest.mark.parametrize("lookahead", [4096, 25])
def test_the_look_ahead_over_several_blocks(tmp_path, monkeypatch, lookahead):
    # 40 plain frames on eth1 (inner packets of 1.4 kB: the batch path's 4 KiB blocks grow to hold them), then 30
    # VXLAN frames on eth0. The look-ahead holds eth1's frames until eth0's first tunnel frame decides; a look-ahead
    # of 25 records fills with eth1's first 25 frames: eth1 is replayed and eth0's 30 tunnel frames are left out
    monkeypatch.setattr(interfaces, "LOOKAHEAD_RECORDS", lookahead)
    plain = [(ts, f[_OUTER:]) for ts, f in _frames(40, flows=2)][:40]
    t0 = plain[0][0] - 10_000_000
    recs = [_epb(1, t0 + k, f) for k, (_ts, f) in enumerate(plain)]
    recs += [_epb(0, ts, f) for ts, f in _frames(30)]
    doc = _both(_shb() + _idb("eth0") + _idb("eth1") + b"".join(recs), tmp_path)
    eth0 = lookahead > 40
    assert _interfaces(doc) == [
        ("interface 1 (eth1)", 40, 0, 0, not eth0),
        ("interface 0 (eth0)", 30, 30, 0, eth0),
    ]
    assert doc["input"]["frames_replayed"] == (30 if eth0 else 40)
    assert doc["input"]["skipped"] == {"other_interface": 40 if eth0 else 30}


def test_a_record_cut_after_its_datagram_on_a_hashed_interface(tmp_path):
    # breaker57: eth0 and bond0 (one device's two views) read the same 40 VXLAN frames; every 10th record states
    # a wire length 10 bytes over what was captured (a trailer cut by the snaplen, the IP datagram whole). Such a
    # record is cut short: no payload hash (capture/payload_windows.py ``record_payload``), skipped ``snaplen_cut`` where
    # replayed, counted cut on both interfaces; the other 36 of bond0's repeat eth0's, each taken out of the window
    frames = _frames(20, flows=2)
    recs = []
    for i, (ts, f) in enumerate(frames):
        orig = len(f) + (10 if i % 10 == 0 else 0)
        for iface, dt in ((0, 0), (1, 10)):
            body = struct.pack("<IIIII", iface, (ts + dt) >> 32, (ts + dt) & 0xFFFFFFFF, len(f), orig) + f
            recs.append(_block("<", 6, body))
    doc = _both(_shb() + _idb("eth0") + _idb("bond0") + b"".join(recs), tmp_path)
    got = {
        i["interface"]: (i["tunnel_frames"], i["tunnel_frames_cut"], i.get("tunnel_frames_repeated"))
        for i in doc["input"]["interfaces"]
    }
    assert got == {"interface 0 (eth0)": (40, 4, 0), "interface 1 (bond0)": (40, 4, 36)}
    assert doc["input"]["skipped"] == {"snaplen_cut": 4, "other_interface": 40}
