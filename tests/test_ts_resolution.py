"""The note that a time-aware poll schedule follows timestamps coarser than the nanosecond (sim/notes.py
``resolution_note``, capture/ts_resolution.py).

The capture: one VXLAN flow, outer checksum 0, 17 full segments, 10 of them 1 µs apart, then a pause of 3.5 µs,
then 7 more 1 µs apart, from a whole second (synth ``Scenario``). ``gap:3`` starts a poll after a pause of more than
3 µs (mlx5's CQE moderation, README "Poll model"): in nanoseconds the pause is 3,500 ns, two polls of 10 and 7, and
the post-fix kernel's phys NAPI delivers one aggregate per poll (every poll ends with GRO flushed:
``napi_complete_done``), 2 skbs. Held to the microsecond (written as a microsecond pcap, which truncates each time
to its microsecond, as ``tcpdump -w`` does), the frames before and after the pause are at 9 µs and 12 µs: a pause
of 3 µs, not more than 3, so one poll and one skb of 17 segments (17 × 1,398 bytes < 64 KiB: ``skb_gro_receive``).
"""

from __future__ import annotations

import json

import dpkt
import pytest
from click.testing import CliRunner

from gro_replay.capture.writer import PcapngWriter, PcapWriter
from gro_replay.cli import main
from gro_replay.synth import Scenario, synth_frames

FRAMES = list(synth_frames(Scenario(frames=17, pause_every=10, pause_ns=3500)))
COPY = "(a copy through tcpdump -w holds microseconds unless given --time-stamp-precision=nano)"


def _note(what: str, readers: str = "the poll model gap:3") -> str:
    return (
        f"{what}: the poll boundaries of {readers} follow them, so a nanosecond capture of the same traffic can "
        f"poll, and so merge, differently {COPY}"
    )


US_PCAP = _note("the timestamps of the capture are held to 1 µs (microsecond pcap, magic a1b2c3d4)")


def _pcap(tmp_path, nano: bool) -> str:
    path = tmp_path / ("ns.pcap" if nano else "us.pcap")
    with PcapWriter(path, nano=nano) as w:
        for ts, f in FRAMES:
            w.write(ts, f)
    return str(path)


def _doc(path: str, *opts: str) -> dict:
    r = CliRunner().invoke(main, [path, "--fix", *opts, "--format", "json", "-q"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _phys_skbs(doc: dict) -> int:
    (k,) = doc["kernels"]
    return k["stages"]["phys"]["skbs_delivered"]


def _resolution_notes(doc: dict) -> list[str]:
    return [n for n in doc["input"]["notes"] if "time-stamp-precision" in n]


def test_a_microsecond_pcap_under_gap_polls_otherwise_and_says_so(tmp_path):
    ns, us = _pcap(tmp_path, nano=True), _pcap(tmp_path, nano=False)
    doc = _doc(ns)
    assert (_phys_skbs(doc), _resolution_notes(doc)) == (2, [])
    doc = _doc(us)
    assert (_phys_skbs(doc), _resolution_notes(doc)) == (1, [US_PCAP])
    assert doc["input"]["notes"][-1] == US_PCAP
    text = CliRunner().invoke(main, [us, "--fix", "-q"]).stdout
    assert f"note: {US_PCAP}" in " ".join(text.split())


@pytest.mark.parametrize(
    ("opts", "readers"),
    [
        (["--poll", "rx-usecs:50"], "the poll model rx-usecs:50"),
        (["--poll", "budget", "--gro-flush-timeout", "20000"], "--gro-flush-timeout's timer"),
        (
            ["--poll", "gap:2", "--gro-flush-timeout", "20000"],
            "the poll model gap:2 and of --gro-flush-timeout's timer",
        ),
    ],
)
def test_every_schedule_that_reads_the_times_is_named(tmp_path, opts, readers):
    # rx-usecs polls a delay after a frame's time; the gro_flush_timeout hrtimer fires at a poll's time plus the
    # timeout and takes the frames timed by then (net/core/dev.c napi_complete_done, napi_watchdog)
    us = _pcap(tmp_path, nano=False)
    what = "the timestamps of the capture are held to 1 µs (microsecond pcap, magic a1b2c3d4)"
    assert _resolution_notes(_doc(us, *opts)) == [_note(what, readers)]


def test_budget_polls_do_not_read_the_times(tmp_path):
    # budget: 64 frames a poll in capture order, whatever the times: all 17 in one poll either way
    ns, us = _pcap(tmp_path, nano=True), _pcap(tmp_path, nano=False)
    for path in (ns, us):
        doc = _doc(path, "--poll", "budget")
        assert (_phys_skbs(doc), _resolution_notes(doc)) == (1, [])


def _idb(name: str, tsresol: int | None) -> bytes:
    opts = [dpkt.pcapng.PcapngOptionLE(code=2, data=name.encode())]
    if tsresol is not None:
        opts.append(dpkt.pcapng.PcapngOptionLE(code=dpkt.pcapng.PCAPNG_OPT_IF_TSRESOL, data=bytes([tsresol])))
    opts.append(dpkt.pcapng.PcapngOptionLE(code=dpkt.pcapng.PCAPNG_OPT_ENDOFOPT))
    return bytes(dpkt.pcapng.InterfaceDescriptionBlockLE(linktype=1, opts=opts))


def _epb(iface: int, units: int, frame: bytes) -> bytes:
    return bytes(
        dpkt.pcapng.EnhancedPacketBlockLE(
            iface_id=iface, ts_high=units >> 32, ts_low=units & 0xFFFFFFFF, pkt_data=frame
        )
    )


@pytest.mark.parametrize(
    ("tsresol", "unit", "source"),
    [
        (None, "1 µs", "no if_tsresol: microseconds, its default"),
        (6, "1 µs", "if_tsresol 6"),
        (3, "1 ms", "if_tsresol 3"),
        (0x94, "2^-20 s (about 954 ns)", "if_tsresol 0x94: 2^-20 s"),
    ],
)
def test_a_pcapng_interface_is_named_by_its_if_tsresol(tmp_path, tsresol, unit, source):
    """eth0 (if_tsresol 9: nanoseconds) carries the flow; eth1, in the unit under test, carries the same frames
    again, later. Replaying eth0 (the interface of the first tunnel frame) says nothing of time resolution;
    --interface eth1 names eth1's unit and where the file says it (draft-ietf-opsawg-pcapng §4.2 if_tsresol: MSB
    clear 10^-n s, set 2^-n s, absent 10^-6 s)."""
    den = (
        2 ** (tsresol & 0x7F)
        if tsresol is not None and tsresol & 0x80
        else 10 ** (6 if tsresol is None else tsresol)
    )
    later = FRAMES[-1][0] + 10**9
    blocks = [bytes(dpkt.pcapng.SectionHeaderBlockLE()), _idb("eth0", 9), _idb("eth1", tsresol)]
    blocks += [_epb(0, ts, f) for ts, f in FRAMES]
    blocks += [_epb(1, (later + ts - FRAMES[0][0]) * den // 10**9, f) for ts, f in FRAMES]
    path = tmp_path / "two.pcapng"
    path.write_bytes(b"".join(blocks))
    assert _resolution_notes(_doc(str(path))) == []
    what = f"the timestamps of interface 1 (eth1) are held to {unit} ({source})"
    assert _resolution_notes(_doc(str(path), "--interface", "eth1")) == [_note(what)]


def test_the_project_pcapng_writer_is_nanoseconds(tmp_path):
    # PcapngWriter writes if_tsresol 9 (capture/writer.py): its captures carry no note
    path = tmp_path / "ns.pcapng"
    with PcapngWriter(path, [("eth0", "")]) as w:
        for ts, f in FRAMES:
            w.write(ts, f)
    doc = _doc(str(path))
    assert (_phys_skbs(doc), _resolution_notes(doc)) == (2, [])
