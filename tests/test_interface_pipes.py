"""A capture of several interfaces gives one document, read from a file or the same bytes through a pipe.

The interface to replay is chosen as the records are read, by one rule for both (capture/interfaces.py: the
device of the first tunnel frame, or ``--interface``; a bounded look-ahead before it), and each other interface's
frames, tunnel frames, repeats and decapsulated copies are counted as they stream past. The expected value of
every comparison is "identical": the JSON document of ``replay_capture`` on the file equals the one of the same
bytes through a FIFO, and the frame-by-frame reference path's (``ReplayConfig(fast_path=False)``). The interface
counts are checked against what each capture was built with; tests/test_multinic.py has the kernel counts.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import random
import struct
import threading
from dataclasses import replace

import pytest
from test_scenarios import random_scenario

from gro_replay import pollcache
from gro_replay.capture.interface_plan import plan
from gro_replay.capture.reader import DLT_LINUX_SLL2, open_capture
from gro_replay.packet.decode import Decoder
from gro_replay.report.document import document
from gro_replay.sim import ReplayConfig, engine_path, replay_capture
from gro_replay.synth import Scenario, synth_frames

_OUTER = 14 + 20 + 8 + 8  # Ethernet + IPv4 + UDP + VXLAN before the inner Ethernet frame (synth's default)
_SHB, _IDB, _EPB, _NRB = 0x0A0D0D0A, 1, 6, 4


def _block(order: str, btype: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    n = len(body) + 12
    return struct.pack(order + "II", btype, n) + body + struct.pack(order + "I", n)


def _shb(order: str = "<") -> bytes:
    return _block(order, _SHB, struct.pack(order + "IHHq", 0x1A2B3C4D, 1, 0, -1))


def _idb(name: str, order: str = "<", linktype: int = 1, ns: bool = True) -> bytes:
    """An interface description block: ``if_name`` (option 2), ``if_tsresol`` 9 (ns, option 9) or the default µs."""

    def opt(code: int, data: bytes) -> bytes:
        return struct.pack(order + "HH", code, len(data)) + data + b"\0" * (-len(data) % 4)

    opts = opt(2, name.encode()) + (opt(9, b"\x09") if ns else b"") + opt(0, b"")
    return _block(order, _IDB, struct.pack(order + "HHI", linktype, 0, 0) + opts)


def _epb(iface: int, ts: int, data: bytes, order: str = "<") -> bytes:
    return _block(
        order,
        _EPB,
        struct.pack(order + "IIIII", iface, ts >> 32, ts & 0xFFFFFFFF, len(data), len(data)) + data,
    )


def _nrb(order: str = "<") -> bytes:
    """A name resolution block (skipped in order): one IPv4 record, then the end of records."""
    rec = struct.pack(order + "HH", 1, 14) + bytes([10, 0, 0, 1]) + b"host-a\0\0\0\0" + b"\0" * 2
    return _block(order, _NRB, rec + struct.pack(order + "HH", 0, 0))


@contextlib.contextmanager
def _fifo(path, data: bytes):
    """``path``, a FIFO that a thread fills with ``data`` and closes (a pipe: read once, no size)."""
    if not path.exists():
        os.mkfifo(path)

    def feed() -> None:
        with open(path, "wb") as w:
            with contextlib.suppress(BrokenPipeError):
                w.write(data)

    t = threading.Thread(target=feed)
    t.start()
    try:
        yield str(path)
    finally:
        t.join()


def _doc(path: str, cfg: ReplayConfig) -> str:
    """The JSON document (text) of the capture at ``path`` but for its path and its statement of the path that
    ran (``engine``), which is checked: the batch path unless ``cfg`` is the reference."""
    r = replay_capture(path, cfg)
    assert (r.batch is not None) == cfg.fast_path
    doc = document(r)
    doc.pop("engine")
    doc["input"].pop("path")
    return json.dumps(doc, sort_keys=True, default=str)


def _both(data: bytes, tmp_path, cfg: ReplayConfig | None = None) -> dict:
    """The documents of ``data`` as a file and through a pipe (both on the batch path) and the file's on the
    reference path: equal; the document."""
    cfg = cfg or ReplayConfig()
    f = tmp_path / "capture"
    f.write_bytes(data)
    want = _doc(str(f), cfg)
    with _fifo(tmp_path / "fifo", data) as path:
        got = _doc(path, cfg)
    assert got == want
    assert _doc(str(f), replace(cfg, fast_path=False)) == want
    return json.loads(got)


@pytest.fixture(autouse=True)
def _small_blocks(monkeypatch):
    monkeypatch.setattr(pollcache, "BLOCK", 4096)


def _frames(n: int = 60, **kw) -> list[tuple[int, bytes]]:
    return list(synth_frames(Scenario(frames=n, **kw)))


def _interfaces(doc) -> list[tuple]:
    return [
        (i["interface"], i["frames"], i["tunnel_frames"], i["copies_of_tunnel_payload"], i["replayed"])
        for i in doc["input"].get("interfaces", [])
    ]


def test_the_path_decision_of_a_pcapng_pipe(tmp_path):
    # engine_path.input_reasons: a pipe's selection is not planned (another interface may be described later); the
    # batch path reads the records it passes on (capture/chunks.py RecordPacker)
    data = _shb() + _idb("eth0") + b"".join(_epb(0, ts, f) for ts, f in _frames(5))
    with _fifo(tmp_path / "fifo", data) as path, open_capture(path) as cap:
        sel = plan(path, cap, lambda: Decoder((4789,), (6081,)), None)
        assert not sel.planned and sel.chosen is None
        assert engine_path.input_reasons(cap, sel) == []
        list(cap)


def test_one_interface(tmp_path):
    frames = _frames(70, flows=3, interleave="rr")  # 70 frames per flow
    data = _shb() + _idb("eth0") + b"".join(_epb(0, ts, f) for ts, f in frames)
    doc = _both(data, tmp_path)
    assert doc["input"]["frames_replayed"] == 210
    assert doc["input"]["classes"] == {"tunnel_tcp": 210}
    assert doc["input"]["interfaces"] == []  # one interface: no list, no note


def test_two_interfaces_with_decapsulated_copies(tmp_path):
    # eth0: 40 VXLAN frames; vxlan0: the inner frame of each (a decapsulated copy, plain TCP): eth0 carries the first
    # tunnel frame and is replayed, and the note counts 40 copies on vxlan0 of eth0's tunnel frames' inner packets
    recs = []
    for ts, f in _frames(40):
        recs += [_epb(0, ts, f), _epb(1, ts + 500, f[_OUTER:])]
    data = _shb() + _idb("eth0") + _idb("vxlan0") + b"".join(recs)
    doc = _both(data, tmp_path)
    assert doc["input"]["classes"] == {"tunnel_tcp": 40}
    assert doc["input"]["skipped"] == {"other_interface": 40}
    assert _interfaces(doc) == [
        ("interface 0 (eth0)", 40, 40, 0, True),
        ("interface 1 (vxlan0)", 40, 0, 40, False),
    ]


def test_two_sections_of_either_byte_order(tmp_path):
    # section 1 (little-endian, ns): eth0 and vxlan0; section 2 (big-endian, µs): the ids swapped. Interfaces are
    # numbered over the stream in order of appearance; the eth0 of both sections is one device (one name)
    frames = _frames(40)
    one = b"".join(_epb(0, ts, f) + _epb(1, ts + 500, f[_OUTER:]) for ts, f in frames[:20])
    two = b"".join(
        _epb(1, ts // 1000, f, ">") + _epb(0, ts // 1000 + 1, f[_OUTER:], ">") for ts, f in frames[20:]
    )
    data = (
        _shb() + _idb("eth0") + _idb("vxlan0") + one
        + _shb(">") + _idb("vxlan0", ">", ns=False) + _idb("eth0", ">", ns=False) + two
    )  # fmt: skip
    doc = _both(data, tmp_path)
    assert _interfaces(doc) == [
        ("interface 0 (eth0, section 1)", 20, 20, 0, True),
        ("interface 1 (vxlan0, section 1)", 20, 0, 20, False),
        ("interface 3 (eth0, section 2)", 20, 20, 0, True),
        ("interface 2 (vxlan0, section 2)", 20, 0, 20, False),
    ]


def test_an_interface_described_after_packets_and_other_blocks_in_between(tmp_path):
    # eth0's frames, a name resolution block, then vxlan0's description and both interfaces' frames
    frames = _frames(60)
    data = (
        _shb() + _idb("eth0") + b"".join(_epb(0, ts, f) for ts, f in frames[:30]) + _nrb() + _idb("vxlan0")
        + b"".join(_epb(0, ts, f) + _epb(1, ts + 500, f[_OUTER:]) for ts, f in frames[30:])
    )  # fmt: skip
    doc = _both(data, tmp_path)
    assert _interfaces(doc) == [
        ("interface 0 (eth0)", 60, 60, 0, True),
        ("interface 1 (vxlan0)", 30, 0, 30, False),
    ]


def test_linux_cooked_v2_interface_by_ifindex(tmp_path):
    # one pcapng interface of link type LINUX_SLL2 (`tcpdump -i any`): ifindex 2 carries the VXLAN frames,
    # ifindex 5 their inner frames; the interfaces are told apart by ifindex, as in a classic pcap
    def sll2(ifindex: int, f: bytes) -> bytes:
        # protocol, reserved, ifindex, ARPHRD_ETHER, packet type, address length, address (8 bytes): 20 bytes
        return struct.pack("!HHIHBB8s", 0x0800, 0, ifindex, 1, 0, 6, f[6:12]) + f[14:]

    recs = []
    for ts, f in _frames(30):
        recs += [_epb(0, ts, sll2(2, f)), _epb(0, ts + 500, sll2(5, f[_OUTER:]))]
    data = _shb() + _idb("any", linktype=DLT_LINUX_SLL2) + b"".join(recs)
    doc = _both(data, tmp_path)
    assert doc["input"]["classes"] == {"tunnel_tcp": 30}
    assert _interfaces(doc) == [("ifindex 2", 30, 30, 0, True), ("ifindex 5", 30, 0, 30, False)]


def test_gzip_pcapng(tmp_path):
    frames = _frames(60, flows=2)  # 120 frames
    data = _shb() + _idb("eth0") + _idb("vxlan0")
    data += b"".join(_epb(0, ts, f) + _epb(1, ts + 500, f[_OUTER:]) for ts, f in frames)
    doc = _both(gzip.compress(data), tmp_path)
    assert _interfaces(doc) == [
        ("interface 0 (eth0)", 120, 120, 0, True),
        ("interface 1 (vxlan0)", 120, 0, 120, False),
    ]


@pytest.mark.parametrize("cut", [1, 30, 200])
def test_a_cut_final_block(tmp_path, cut):
    # the last enhanced packet block cut short: counted as one truncated record, the others replayed
    frames = _frames(50)
    data = _shb() + _idb("eth0") + b"".join(_epb(0, ts, f) for ts, f in frames)
    doc = _both(data[:-cut], tmp_path)
    inp = doc["input"]
    assert (inp["frames_read"], inp["frames_replayed"], inp["skipped"]) == (50, 49, {"truncated_record": 1})


@pytest.mark.parametrize("seed", range(6))
def test_seeded_scenarios_over_two_interfaces_and_sections(seed, tmp_path, monkeypatch):
    # the random scenarios of test_scenarios.py (odd frames, VLAN tags, non-tunnel and malformed frames, IPv6,
    # Geneve, checksum errors) on eth0, copies of some of their inner bytes on vxlan0, cut into two sections
    rng = random.Random(7000 + seed)
    frames, cfg = random_scenario(rng)
    cfg = replace(cfg, hz=250, gro_flush_timeout_ns=0, napi_defer_hard_irqs=0, rx_queues=1)
    monkeypatch.setattr(pollcache, "BLOCK", rng.choice([2048, 9000, 65536]))
    half = len(frames) // 2
    out = b""
    for part in (frames[:half], frames[half:]):
        out += _shb() + _idb("eth0")
        recs = []
        for k, (ts, f) in enumerate(part):
            if k == 3:
                recs.append(_idb("vxlan0"))
            recs.append(_epb(0, ts, f))
            if k >= 3 and rng.random() < 0.3:
                recs.append(_epb(1, ts + 1, f[_OUTER:]))
        out += b"".join(recs)
    _both(out, tmp_path, cfg)


def test_trace_and_explain_through_the_selection_equal_the_reference(tmp_path):
    # eth0's VXLAN frames replayed, vxlan0's copies left out between them: the batch path reads ahead of its own
    # accounting (capture/chunks.py RecordPacker), so the trace's time origin (the first record read) and every
    # delivery must still be the frame-by-frame path's, from a file and through a pipe
    import io

    from gro_replay.report.explain import FlowDeliveries
    from gro_replay.report.pcapout import Observers
    from gro_replay.report.trace import TraceWriter

    recs = []
    for ts, f in _frames(60, flows=2):
        recs += [_epb(0, ts, f), _epb(1, ts + 500, f[_OUTER:])]
    data = _shb() + _idb("eth0") + _idb("vxlan0") + b"".join(recs)
    f = tmp_path / "capture.pcapng"
    f.write_bytes(data)

    def observed(path: str, cfg: ReplayConfig) -> tuple:
        out = io.StringIO()
        deliveries = FlowDeliveries()
        r = replay_capture(path, cfg, Observers(TraceWriter(out, tag=True), deliveries))
        assert (r.batch is not None) == cfg.fast_path
        return out.getvalue(), dict(deliveries.devices), dict(deliveries.aggregates)

    want = observed(str(f), ReplayConfig(fast_path=False))
    assert want[0].startswith(
        "pre-fix     0.000063: net:netif_receive_skb: dev=eth0"
    )  # 63 µs after the first
    assert observed(str(f), ReplayConfig()) == want
    with _fifo(tmp_path / "fifo", data) as path:
        assert observed(path, ReplayConfig()) == want
