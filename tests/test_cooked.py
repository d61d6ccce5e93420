"""Linux cooked captures (``tcpdump -i any``: LINUX_SLL, LINUX_SLL2) on the batch path (capture/cooked.py
``as_ethernet``): classic pcap and pcapng, from a file and a pipe, give the frame-by-frame reference path's
document, and the batch path runs.

Expected values come from how each capture is built: which records the capturing host sent (packet type 4,
PACKET_OUTGOING: never received, ``outgoing``), which are cut short (``snaplen_cut``), which carry a header
``l2_normalize`` refuses (an ARPHRD type that is no L3 link, a protocol below 0x0600: ``unsupported_link_layer``),
which are on the second ifindex (the decapsulated copies: another interface's), and from the rule of
capture/linktypes.py ``l2_normalize`` (destination MAC zeros, source MAC the 6-byte link address, else zeros;
ethertype the cooked protocol): a cooked capture replays as the Ethernet capture of those frames.
"""

from __future__ import annotations

import json
import random
import struct
from dataclasses import replace

import pytest
from test_interface_pipes import _OUTER, _doc, _fifo, _frames, _idb, _shb
from test_scenarios import random_scenario

from gro_replay import pollcache
from gro_replay.capture.reader import DLT_LINUX_SLL, DLT_LINUX_SLL2, CaptureError
from gro_replay.capture.writer import PcapWriter
from gro_replay.report.document import document
from gro_replay.sim import ReplayConfig, replay_capture

PACKET_HOST, PACKET_OTHERHOST, PACKET_OUTGOING = 0, 3, 4
ARPHRD_ETHER, ARPHRD_CAN = 1, 280


def _cooked(linktype: int, f: bytes, *, ifindex: int = 2, pkttype: int = PACKET_HOST, **kw) -> bytes:
    """Ethernet frame ``f`` as a Linux cooked record: its ethertype as the protocol, its source MAC as the 6-byte
    link address (``halen``, ``hatype``, ``protocol`` may be given otherwise)."""
    halen, hatype = kw.get("halen", 6), kw.get("hatype", ARPHRD_ETHER)
    proto = kw.get("protocol", struct.unpack_from("!H", f, 12)[0] if len(f) >= 14 else 0x0800)
    addr = f[6:12] + bytes(2)
    if linktype == DLT_LINUX_SLL:
        return struct.pack("!HHH8sH", pkttype, hatype, halen, addr, proto) + f[14:]
    return struct.pack("!HHIHBB8s", proto, 0, ifindex, hatype, pkttype, halen, addr) + f[14:]


def _epb(ts: int, data: bytes, orig: int, iface: int = 0) -> bytes:
    body = struct.pack("<IIIII", iface, ts >> 32, ts & 0xFFFFFFFF, len(data), orig) + data
    body += b"\0" * (-len(body) % 4)
    return struct.pack("<II", 6, len(body) + 12) + body + struct.pack("<I", len(body) + 12)


def _write(path, fmt: str, linktype: int, records: list[tuple[int, bytes, int]]) -> None:
    """``records`` (time in ns, captured bytes, wire length) as a classic pcap or a pcapng file of ``linktype``."""
    if fmt == "pcap":
        with PcapWriter(path, linktype=linktype) as w:
            for ts, data, orig in records:
                w.write(ts, data, orig)
        return
    body = b"".join(_epb(ts, data, orig) for ts, data, orig in records)
    path.write_bytes(_shb() + _idb("any", linktype=linktype) + body)


def _mutated(rng: random.Random, linktype: int, frames) -> tuple[list, dict]:
    """The cooked records of ``frames`` with, at random, records the host sent, cut short, refused by
    ``l2_normalize``, on another link address or packet type, and decapsulated copies on ifindex 5 (SLL2); and
    the skip counts they must give."""
    recs, skipped = [], {}
    for ts, f in frames:
        r = rng.random()
        kw: dict = {}
        why = None
        if r < 0.04:
            kw["pkttype"], why = PACKET_OUTGOING, "outgoing"
        elif r < 0.06:
            kw["hatype"], why = ARPHRD_CAN, "unsupported_link_layer"
        elif r < 0.08:
            kw["protocol"], why = 0x0003, "unsupported_link_layer"  # ETH_P_ALL: no ethertype
        elif r < 0.12:
            kw["halen"] = rng.choice([0, 8])  # a source MAC of zeros: another flow of the same inner packets
        elif r < 0.16:
            kw["pkttype"] = PACKET_OTHERHOST
        data = _cooked(linktype, f, **kw)
        orig = len(data)
        if why is None and rng.random() < 0.03:
            data, why = data[: rng.randrange(24, len(data))], "snaplen_cut"
        if why is not None:
            skipped[why] = skipped.get(why, 0) + 1
        recs.append((ts, data, orig))
        if linktype == DLT_LINUX_SLL2 and rng.random() < 0.2:
            inner = _cooked(linktype, f[_OUTER:], ifindex=5)
            recs.append((ts + 300, inner, len(inner)))
            skipped["other_interface"] = skipped.get("other_interface", 0) + 1
    return recs, skipped


@pytest.mark.parametrize("seed", range(12))
def test_seeded_cooked_captures_take_the_batch_path_and_equal_the_reference(seed, tmp_path, monkeypatch):
    """Random scenarios (tests/test_scenarios.py) as cooked captures: the batch path runs, gives the reference
    path's document from a file and from a pipe, and counts the records sent by the host, cut short and of the
    other ifindex as the capture was built."""
    rng = random.Random(7000 + seed)
    frames, cfg = random_scenario(rng)
    cfg = replace(cfg, hz=250, gro_flush_timeout_ns=0, napi_defer_hard_irqs=0, rx_queues=1)
    linktype = (DLT_LINUX_SLL, DLT_LINUX_SLL2)[seed % 2]
    fmt = ("pcap", "pcapng")[seed // 2 % 2]
    recs, skipped = _mutated(rng, linktype, frames)
    path = tmp_path / f"any.{fmt}"
    _write(path, fmt, linktype, recs)
    monkeypatch.setattr(pollcache, "BLOCK", rng.choice([4096, 65536]))
    want = _doc(str(path), cfg)  # asserts the batch path ran
    assert want == _doc(str(path), replace(cfg, fast_path=False))
    if seed < 4:
        with _fifo(tmp_path / "fifo", path.read_bytes()) as fifo:
            assert _doc(fifo, cfg) == want
    inp = json.loads(want)["input"]
    assert inp["frames_read"] == len(recs)
    assert inp["bytes"] == sum(len(d) for _ts, d, _o in recs)
    # the scenario's own frames may be malformed or of an 802.3 length (no ethertype: unsupported_link_layer too)
    got = inp["skipped"]
    for why in ("outgoing", "snaplen_cut", "other_interface"):
        assert got.get(why, 0) == skipped.get(why, 0), why
    assert got.get("unsupported_link_layer", 0) >= skipped.get("unsupported_link_layer", 0)


@pytest.mark.parametrize("linktype", [DLT_LINUX_SLL, DLT_LINUX_SLL2])
def test_a_cooked_capture_replays_as_the_ethernet_capture_of_its_frames(linktype, tmp_path):
    """l2_normalize's frames (destination MAC zeros, source MAC the link address) written as an Ethernet capture
    give the cooked capture's kernels, flows and verdict; the bytes read differ by the link headers' lengths
    (16 or 20 bytes a record against 14). 3 flows x 40 segments, round robin 1 µs apart (no pause: the gap:3 poll
    model polls at the weight, 64 then 56 frames), zero outer checksums: pre-fix every frame is its own phys skb
    (udp_gro_receive refuses them, 89e5c58fc1e2), post-fix each flow's frames of a poll merge into one skb, which the
    poll's end flushes: 2 polls x 3 flows."""
    frames = _frames(40, flows=3)
    cooked = tmp_path / "any.pcap"
    eth = tmp_path / "eth.pcap"
    with PcapWriter(cooked, linktype=linktype) as c, PcapWriter(eth) as e:
        for ts, f in frames:
            c.write(ts, _cooked(linktype, f))
            e.write(ts, bytes(6) + f[6:])
    got = document(replay_capture(str(cooked), ReplayConfig()))
    ref = document(replay_capture(str(eth), ReplayConfig()))
    assert got["engine"]["path"] == "batch" and not got["engine"]["reasons"]
    for key in ("kernels", "comparison", "verdict", "summary"):
        assert got[key] == ref[key]
    grow = {DLT_LINUX_SLL: 2, DLT_LINUX_SLL2: 6}[linktype]
    assert got["input"]["bytes"] == ref["input"]["bytes"] + grow * 120
    phys = [k["stages"]["phys"]["skbs_delivered"] for k in got["kernels"]]
    assert phys == [120, 6]


@pytest.mark.parametrize("seed", range(4))
def test_trace_and_explain_of_a_cooked_capture_equal_the_reference(seed, tmp_path, monkeypatch):
    """--trace and explain's observer over a cooked capture (the overlay-node mix, synth_mix.py, as SLL2 on ifindex
    2, one host's direction sent by the capturing host, decapsulated copies on ifindex 5): the trace text, the
    per-flow deliveries and the document from cached events equal the reference path's (tests/test_pollcache.py
    ``_observed``)."""
    from test_pollcache import _observed

    from gro_replay.sim import PollModel
    from gro_replay.synth_mix import OverlayMix, mix_frames

    rng = random.Random(8000 + seed)
    recs = []
    for k, (ts, f) in enumerate(mix_frames(OverlayMix(frames=1500, seed=seed))):
        # one host's direction as the capturing host sent it (every outer IPv4 source above its destination)
        sent = f[26:30] > f[30:34]
        recs.append((ts, _cooked(DLT_LINUX_SLL2, f, pkttype=PACKET_OUTGOING if sent else PACKET_HOST), 0))
        if k % 5 == 0 and not sent:
            recs.append((ts + 300, _cooked(DLT_LINUX_SLL2, f[_OUTER:], ifindex=5), 0))
    recs = [(ts, d, len(d)) for ts, d, _o in recs]
    path = tmp_path / "any.pcap"
    _write(path, "pcap", DLT_LINUX_SLL2, recs)
    monkeypatch.setattr(pollcache, "BLOCK", rng.choice([4096, 65536]))
    # time-aware polls (about 13 frames each here): polls of 64 frames are all new in a mix this short (16 of them)
    cfg = ReplayConfig(poll=PollModel.parse(("gap:3", "rx-usecs:16")[seed % 2]))
    got, batch = _observed(path, cfg)
    want, ref = _observed(path, replace(cfg, fast_path=False))
    assert batch is not None and ref is None
    assert batch["polls_cached"] > 0
    assert got == want


@pytest.mark.parametrize("linktype", [DLT_LINUX_SLL, DLT_LINUX_SLL2])
def test_records_cut_within_the_cooked_header(linktype, tmp_path):
    """A record cut short within its cooked header (breaker56), first and last in the capture, 7 µs before and after
    12 frames 1 µs apart: sent by the capturing host it is ``outgoing`` and its time no arrival (sim/skipped.py
    received_frame: the span stays the 12 frames' 11 µs); received, it is ``snaplen_cut`` and its time counts
    (25 µs); cut before the packet type is readable, it is received; an SLL2 record cut before its ifindex is of no
    known interface: no interface of the capture (it was listed as a second one and skipped as ``other_interface``),
    replayed and so skipped as ``snaplen_cut`` (capture/interfaces.py ``Selection._stats``). Every cut, both paths
    alike."""
    frames = _frames(12)
    hl = {DLT_LINUX_SLL: 16, DLT_LINUX_SLL2: 20}[linktype]
    type_end = {DLT_LINUX_SLL: 2, DLT_LINUX_SLL2: 11}[linktype]  # the packet type's last byte, plus one
    for pkttype in (PACKET_HOST, PACKET_OUTGOING):
        for cut in range(hl):
            full = _cooked(linktype, frames[0][1], pkttype=pkttype)
            odd = (full[:cut], len(full))
            recs = [(frames[0][0] - 7000, *odd)]
            recs += [(ts, c, len(c)) for ts, f in frames for c in [_cooked(linktype, f)]]
            recs.append((frames[-1][0] + 7000, *odd))
            path = tmp_path / "cut.pcap"
            _write(path, "pcap", linktype, recs)
            want = _doc(str(path), ReplayConfig())
            assert want == _doc(str(path), ReplayConfig(fast_path=False))
            inp = json.loads(want)["input"]
            assert inp["interfaces"] == []  # one device: nothing to choose, no interface listed
            sent = pkttype == PACKET_OUTGOING and cut >= type_end
            assert inp["skipped"] == {"outgoing" if sent else "snaplen_cut": 2}
            assert inp["duration_ns"] == (11_000 if sent else 25_000)


def test_an_interface_named_in_a_cooked_v1_capture(tmp_path):
    """newcomer37, breaker58: a Linux cooked v1 capture carries no ifindex and its file no interface, so no
    --interface names anything in it, with records or without: a one-line error that says so (capture/interfaces.py
    ``plan``), before any record is read."""
    from click.testing import CliRunner

    from gro_replay.cli import main

    for name, recs in (("any.pcap", _frames(3)), ("empty.pcap", [])):
        path = tmp_path / name
        _write(path, "pcap", DLT_LINUX_SLL, [(ts, c, len(c)) for ts, f in recs for c in [_cooked(113, f)]])
        r = CliRunner().invoke(main, [str(path), "--interface", "0", "-q"])
        assert r.exit_code == 2
        assert r.output.strip().endswith(
            f"{path}: --interface 0: a Linux cooked v1 capture names no interface (its packets carry no ifindex; a "
            "LINUX_SLL2 capture's do: tcpdump -i any -y LINUX_SLL2)"
        )


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
@pytest.mark.parametrize("want", [None, "5"])
def test_a_record_cut_before_its_ifindex_is_no_interface(fmt, want, tmp_path):
    """``tcpdump -i any`` of two devices, ifindex 2 and ifindex 5, each receiving one 12-frame VXLAN flow, and two
    records cut before their ifindex (0 and 5 bytes of 20; one first, one among the frames): their interface is not
    known, so they are no third interface ("the capture's interface", selected by "--interface None", the records
    skipped as ``other_interface``: the finding) and choose nothing; they are replayed wherever they were received,
    and so skipped as ``snaplen_cut``, whichever device is replayed, on both paths, from a file and a pipe."""
    a, b = _frames(12), _frames(12, vni=200)
    whole = _cooked(DLT_LINUX_SLL2, a[0][1])
    recs = [(a[0][0] - 1000, whole[:0], len(whole))]
    for (ts, f), (_, g) in zip(a, b, strict=True):
        recs += [(ts, c, len(c)) for c in (_cooked(DLT_LINUX_SLL2, f), _cooked(DLT_LINUX_SLL2, g, ifindex=5))]
    recs.insert(9, (recs[8][0], whole[:5], len(whole)))
    path = tmp_path / f"cut.{fmt}"
    _write(path, fmt, DLT_LINUX_SLL2, recs)
    cfg = ReplayConfig(interface=want)
    doc = _doc(str(path), cfg)
    assert doc == _doc(str(path), replace(cfg, fast_path=False))
    with _fifo(tmp_path / "fifo", path.read_bytes()) as fifo:
        assert doc == _doc(fifo, cfg)
    inp = json.loads(doc)["input"]
    assert inp["skipped"] == {"other_interface": 12, "snaplen_cut": 2}
    assert [(i["interface"], i["frames"], i["tunnel_frames"], i["replayed"]) for i in inp["interfaces"]] == [
        ("ifindex 2", 12, 12, want is None),
        ("ifindex 5", 12, 12, want == "5"),
    ]
    (note,) = [n for n in inp["notes"] if "interfaces" in n]
    assert note.startswith(
        "the capture holds 2 interfaces (ifindex 2: 12 frames, 12 tunnel; ifindex 5: 12 frames"
    )


def test_an_interface_of_records_cut_before_their_ifindex_is_said_so(tmp_path):
    """``--interface`` naming a pcapng ``-i any`` interface whose records are all cut before their ifindex (6 of
    them, 5 bytes of 20), beside eth0's 3 VXLAN frames: the interface is not idle (breaker60: "holds no frames"),
    it holds records of no known device, which the replay skips as ``snaplen_cut`` whichever interface it
    replays; a capture of nothing else says how many it holds (not "no frames")."""
    frames = _frames(3)

    def cut(iface: int) -> bytes:
        return b"".join(_epb(ts, _cooked(DLT_LINUX_SLL2, f)[:5], len(f) + 6, iface) for ts, f in _frames(6))

    both = tmp_path / "both.pcapng"
    both.write_bytes(
        _shb()
        + _idb("eth0")
        + _idb("any", linktype=DLT_LINUX_SLL2)
        + b"".join(_epb(ts, f, len(f)) for ts, f in frames)
        + cut(1)
    )
    alone = tmp_path / "alone.pcapng"
    alone.write_bytes(_shb() + _idb("any", linktype=DLT_LINUX_SLL2) + cut(0))
    inp = json.loads(_doc(str(both), ReplayConfig()))["input"]
    assert (inp["frames_read"], inp["frames_replayed"], inp["skipped"]) == (9, 3, {"snaplen_cut": 6})
    said = {
        (
            both,
            "any",
        ): "interface 1 (any) holds only records cut before their ifindex, skipped as snaplen_cut "
        "whichever interface is replayed (the capture's frames are on: interface 0 (eth0))",
        (
            both,
            "wlan0",
        ): "no such interface (the capture holds: interface 0 (eth0); interface 1 (any), only records "
        "cut before their ifindex)",
        (alone, "2"): "no such interface (the capture holds 6 records cut before their ifindex)",
    }
    for (path, want), words in said.items():
        for fast in (True, False):
            with pytest.raises(CaptureError) as e:
                replay_capture(str(path), ReplayConfig(interface=want, fast_path=fast))
            assert str(e.value) == f"{path}: --interface {want}: {words}"


@pytest.mark.parametrize("linktype", [DLT_LINUX_SLL, DLT_LINUX_SLL2])
def test_a_whole_record_shorter_than_its_cooked_header_is_malformed(linktype, tmp_path):
    """A record whole (captured length = wire length) but shorter than its Linux cooked header (16 or 20 bytes),
    every length from 0, beside 12 VXLAN frames: ``malformed:link_header`` (breaker60: it was
    ``unsupported_link_layer``, as for a link layer not read); a CAN record (ARPHRD_CAN, its protocol no
    ethertype) stays ``unsupported_link_layer``. Both paths alike."""
    frames = _frames(12)
    hl = {DLT_LINUX_SLL: 16, DLT_LINUX_SLL2: 20}[linktype]
    whole = _cooked(linktype, frames[0][1])
    can = _cooked(linktype, frames[0][1], hatype=ARPHRD_CAN, protocol=0x000C)
    recs = [(frames[0][0] - 100 + n, whole[:n], n) for n in range(hl)]
    recs += [(frames[0][0] - 50, can, len(can))]
    recs += [(ts, c, len(c)) for ts, f in frames for c in [_cooked(linktype, f)]]
    path = tmp_path / "short.pcap"
    _write(path, "pcap", linktype, recs)
    want = _doc(str(path), ReplayConfig())
    assert want == _doc(str(path), ReplayConfig(fast_path=False))
    inp = json.loads(want)["input"]
    assert inp["skipped"] == {"malformed:link_header": hl, "unsupported_link_layer": 1}
    assert inp["frames_replayed"] == 12
