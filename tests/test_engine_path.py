"""Which path ran and why: the JSON document's ``engine`` and the text report's ``engine:`` line.

One computation (gro_replay/pollcache.py ``batch_reasons``) decides between the batch path (blocks of columns,
polls answered from a cache) and the frame-by-frame reference path; sim/api.py ``engine`` turns it into the
document's ``engine`` object and report/table.py ``engine_lines`` prints it. Each reason is produced here by the
real option or input that causes it. The expected path comes from the rules the batch path rests on
(pollcache.py's docstring): every poll must end with GRO flushed — ``napi_poll`` flushes all packets only when
HZ < 1000 (``napi_gro_flush(n, HZ >= 1000)``), ``napi_complete_done`` only when no gro_flush_timeout is armed
(net/core/dev.c; gro-spec §1.3) —, one RX queue, no per-frame NIC preset, no observer of the skb bytes, and an
input read in blocks. Poll counts come from the poll models (sim/config.py ``PollModel``): ``gap:3`` starts a
poll after each pause of more than 3 µs, ``budget`` takes 64 frames per poll in capture order.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import replace

import pytest
from conftest import CLI, FIX_SAMPLE, cli_env

from gro_replay.capture.writer import PcapngWriter, PcapWriter
from gro_replay.cli import main
from gro_replay.report.document import document
from gro_replay.report.schema import check, load
from gro_replay.report.table import engine_lines, input_lines, markdown
from gro_replay.sim import PollModel, ReplayConfig, replay_capture, replay_frames
from gro_replay.sim.api import FRAMES_REASON
from gro_replay.sim.engine_path import OBSERVER_REASON, config_reasons
from gro_replay.synth import Scenario, synth_frames, write_scenario

#: 10 bursts of 16 frames of one flow, 1 µs apart within a burst and 100 µs between bursts: 10 gap:3 polls
BURSTS = Scenario(frames=160, pause_every=16, pause_ns=100_000)
BURST_POLLS = 10


@pytest.fixture
def bursts(tmp_path):
    path = tmp_path / "bursts.pcap"
    write_scenario(path, BURSTS)
    return path


def _json(runner, *args) -> dict:
    r = runner.invoke(main, [*map(str, args), "--format", "json", "-q"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    check(doc, "replay")
    return doc


def _engine(runner, *args) -> dict:
    return _json(runner, *args)["engine"]


def _piped(data: bytes, *args: str) -> dict:
    """The document of ``gro-replay - ARGS --format json`` reading ``data`` from a pipe (a child process)."""
    p = subprocess.run(
        [*CLI, "-", *args, "--format", "json", "-q"],
        input=data,
        capture_output=True,
        env=cli_env(),
        timeout=300,
    )
    assert p.returncode == 0, p.stderr.decode()
    doc = json.loads(p.stdout)
    check(doc, "replay")
    return doc


def _piped_engine(data: bytes) -> dict:
    return _piped(data)["engine"]


def _only_reason(eng: dict) -> str:
    assert eng["path"] == "frame-by-frame" and eng["polls_cached"] == 0, eng
    (reason,) = eng["reasons"]
    return reason


# --- the batch path --------------------------------------------------------------------------------------------


def test_a_plain_pcap_takes_the_batch_path_and_the_cache_answers_repeated_polls(runner, bursts):
    eng = _engine(runner, bursts)
    assert eng["path"] == "batch" and eng["reasons"] == []
    assert eng["polls"] == BURST_POLLS
    # the first poll meets an empty cache; the later bursts have the first one's shape
    assert 0 < eng["polls_cached"] < eng["polls"]


def test_both_paths_count_the_same_polls(bursts):
    cfg = ReplayConfig()
    batch = replay_capture(str(bursts), cfg)
    ref = replay_capture(str(bursts), replace(cfg, fast_path=False))
    assert batch.engine["path"] == "batch" and ref.engine["path"] == "frame-by-frame"
    assert batch.engine["polls"] == ref.engine["polls"] == BURST_POLLS
    assert batch.engine["polls_cached"] == batch.batch["polls_cached"]
    assert batch.engine["polls"] == batch.batch["polls_cached"] + batch.batch["polls_simulated"]
    # budget polls: 64 frames each in capture order, 160 frames → 64 + 64 + 32
    budget = replace(cfg, poll=PollModel("budget"))
    for c in (budget, replace(budget, fast_path=False)):
        assert replay_capture(str(bursts), c).engine["polls"] == 3


@pytest.mark.parametrize("hz", ["100", "250", "300"])
def test_hz_below_1000_flushes_every_poll_batch_path(runner, bursts, hz):
    assert _engine(runner, bursts, "--hz", hz)["path"] == "batch"


def test_trace_alone_is_served_from_cached_events(runner, bursts, tmp_path):
    eng = _engine(runner, bursts, "--trace", tmp_path / "t.txt")
    assert eng["path"] == "batch" and eng["polls_cached"] > 0


@pytest.mark.parametrize("poll", ["gap:3", "rx-usecs:16", "budget"])
def test_every_poll_model_of_the_cli_runs_on_the_batch_path(runner, bursts, poll):
    assert _engine(runner, bursts, "--poll", poll)["path"] == "batch"


def test_a_pcapng_file_with_every_interface_replayed_takes_the_batch_path(runner, tmp_path):
    path = tmp_path / "one.pcapng"
    with PcapngWriter(path, [("eth0", "")]) as w:
        for ts, f in synth_frames(BURSTS):
            w.write(ts, f)
    eng = _engine(runner, path)
    assert eng["path"] == "batch" and eng["polls"] == BURST_POLLS


# --- every reason, from the option or input that causes it ------------------------------------------------------


def test_hz_1000_keeps_packets_across_polls_frame_by_frame(runner, bursts):
    assert _only_reason(_engine(runner, bursts, "--hz", "1000")) == (
        "--hz 1000: HZ >= 1000 keeps GRO packets across full polls (napi_gro_flush(n, HZ >= 1000))"
    )


def test_write_pcap_reads_the_bytes_frame_by_frame(runner, bursts, tmp_path):
    eng = _engine(runner, bursts, "--write-pcap", tmp_path / "out")
    assert _only_reason(eng) == "--write-pcap reads each skb's bytes"
    assert eng["polls"] == BURST_POLLS  # the frame-by-frame path runs every poll
    # with --trace beside it, only --write-pcap is a reason (the trace is served from cached events)
    eng = _engine(runner, bursts, "--write-pcap", tmp_path / "out2", "--trace", tmp_path / "t.txt")
    assert _only_reason(eng) == "--write-pcap reads each skb's bytes"


def test_explain_skbs_reads_each_skbs_end_reason(runner, bursts):
    # explain's per-flow counts are served from cached events; --skbs reads NAPI_GRO_CB(skb)->why and ->ended_by
    # of each skb, which they do not hold (report/explain_skbs.py)
    from gro_replay.report.explain_skbs import SKBS_REASON

    r = runner.invoke(main, ["explain", str(bursts), "--skbs", "--format", "json", "-q"])
    assert r.exit_code == 0, r.output
    eng = json.loads(r.stdout)["engine"]
    assert _only_reason(eng) == SKBS_REASON and eng["polls"] == BURST_POLLS
    text = runner.invoke(main, ["explain", str(bursts), "--skbs", "-q"]).stdout
    assert f"engine: frame-by-frame ({BURST_POLLS} polls run through the kernels): {SKBS_REASON}" in text


def test_rx_queues(runner, bursts):
    assert _only_reason(_engine(runner, bursts, "--rx-queues", "4")) == (
        "--rx-queues 4: one NAPI per RX queue, polls interleaved across queues"
    )


def test_gro_flush_timeout(runner, bursts):
    assert _only_reason(_engine(runner, bursts, "--gro-flush-timeout", "20000")) == (
        "--gro-flush-timeout 20000: napi_complete_done keeps GRO packets for a timer poll "
        "(napi_gro_flush(n, !!timeout))"
    )


def test_napi_defer_hard_irqs(runner, bursts):
    assert _only_reason(_engine(runner, bursts, "--napi-defer-hard-irqs", "2")) == (
        "--napi-defer-hard-irqs 2: the batch path assumes no IRQ deferral (napi_complete_done)"
    )


def test_nic_preset_decides_checksums_per_frame(runner, bursts):
    assert _only_reason(_engine(runner, bursts, "--nic", "ice")) == "--nic ice decides checksums per frame"
    # --rx-csum overrides the preset's checksum state: one state for every frame, the batch path again
    assert _engine(runner, bursts, "--nic", "ice", "--rx-csum", "unnecessary")["path"] == "batch"


def test_flow_selection(runner, bursts):
    assert _only_reason(_engine(runner, bursts, "--flow", "vni=100")) == (
        "--flow selects flows frame by frame"
    )


def test_capture_filter(runner, bursts):
    pytest.importorskip("pcapy", reason="the bpf extra (pcapy-ng) is part of the test extra")
    assert _only_reason(_engine(runner, bursts, "-f", "udp")) == "-f filters frame by frame"


def test_several_reasons_all_named_in_order(runner, bursts, tmp_path):
    eng = _engine(runner, bursts, "--hz", "1000", "--rx-queues", "2", "--write-pcap", tmp_path / "o")
    assert eng["path"] == "frame-by-frame"
    assert [r.split(":")[0] for r in eng["reasons"]] == [
        "--hz 1000",
        "--rx-queues 2",
        "--write-pcap reads each skb's bytes",
    ]


def _pcapng_bytes(ifaces: int = 1) -> bytes:
    """BURSTS as pcapng on interface eth0, and its first 5 frames copied on eth1 when ``ifaces`` is 2."""
    from io import BytesIO

    buf = BytesIO()
    w = PcapngWriter(buf, [("eth0", ""), ("eth1", "")][:ifaces])
    for i, (ts, f) in enumerate(synth_frames(BURSTS)):
        w.write(ts, f, iface=0)
        if ifaces == 2 and i < 5:
            w.write(ts, f, iface=1)
    w.close()
    return buf.getvalue()


def test_pcapng_from_a_pipe_takes_the_batch_path():
    # the records its interface selection passes on (capture/chunks.py RecordPacker)
    eng = _piped_engine(_pcapng_bytes())
    assert eng["path"] == "batch" and eng["polls"] == BURST_POLLS


def test_pcapng_pipe_with_interface_leaves_records_out_as_they_are_read():
    # --interface is matched per record as interfaces appear, the others counted; the batch path reads the rest
    doc = _piped(_pcapng_bytes(2), "--interface", "eth0")
    assert doc["input"]["skipped"].get("other_interface") == 5
    assert doc["engine"]["path"] == "batch" and doc["engine"]["polls"] == BURST_POLLS


def test_a_classic_pcap_from_a_pipe_takes_the_batch_path(bursts):
    eng = _piped_engine(bursts.read_bytes())
    assert eng["path"] == "batch" and eng["polls"] == BURST_POLLS


def test_interface_selection_that_leaves_records_out(runner, tmp_path):
    # eth0 carries the tunnel flow, eth1 a copy of its first 5 frames: eth0 is chosen, eth1's records left out, and
    # the batch path reads the records passed on; a file whose frames are all on one interface is read directly
    path = tmp_path / "two.pcapng"
    path.write_bytes(_pcapng_bytes(2))
    for extra in ((), ("--interface", "eth0")):
        doc = _json(runner, path, *extra)
        assert doc["input"]["skipped"].get("other_interface") == 5
        assert doc["engine"]["path"] == "batch" and doc["engine"]["polls"] == BURST_POLLS
    one = tmp_path / "one.pcapng"
    one.write_bytes(_pcapng_bytes(1))
    assert _engine(runner, one)["path"] == "batch"


def test_a_classic_pcap_of_another_link_type(runner, tmp_path):
    # LINKTYPE_RAW (101): the frames' IP packets without their Ethernet header
    path = tmp_path / "raw.pcap"
    with PcapWriter(path, linktype=101) as w:
        for ts, f in synth_frames(BURSTS):
            w.write(ts, f[14:])
    doc = _json(runner, path)
    assert doc["input"]["frames_replayed"] == BURSTS.frames
    assert _only_reason(doc["engine"]) == "link type 101 (RAW) (pcap, not Ethernet)"


@pytest.mark.parametrize("linktype", [113, 276])
def test_a_classic_pcap_of_linux_cooked_frames_takes_the_batch_path(runner, tmp_path, linktype):
    # LINUX_SLL (113) and LINUX_SLL2 (276), as tcpdump -i any writes them: read as the Ethernet frames l2_normalize
    # makes of them (capture/cooked.py), on the batch path, polled as the Ethernet capture is
    from test_cooked import _cooked

    path = tmp_path / "any.pcap"
    with PcapWriter(path, linktype=linktype) as w:
        for ts, f in synth_frames(BURSTS):
            w.write(ts, _cooked(linktype, f))
    doc = _json(runner, path)
    assert doc["input"]["frames_replayed"] == BURSTS.frames
    assert doc["engine"]["path"] == "batch" and doc["engine"]["polls"] == BURST_POLLS


def test_a_modified_pcap_with_24_byte_record_headers(runner, tmp_path):
    # Kuznetzov's modified pcap (magic 0xa1b2cd34): 8 more bytes per record header (ifindex, protocol, type)
    import struct

    data = struct.pack("<IHHiIII", 0xA1B2CD34, 2, 4, 0, 0, 65535, 1)
    for ts, f in synth_frames(BURSTS):
        data += struct.pack("<IIIIIHBB", ts // 10**9, ts % 10**9 // 1000, len(f), len(f), 2, 0x0800, 0, 0) + f
    path = tmp_path / "mod.pcap"
    path.write_bytes(data)
    eng = _engine(runner, path)
    assert _only_reason(eng) == "pcap records with 24-byte headers (a modified pcap format)"


def test_fast_path_false_and_an_observer_that_reads_more(bursts):
    r = replay_capture(str(bursts), ReplayConfig(fast_path=False))
    assert _only_reason(r.engine) == "fast_path is False (ReplayConfig: the reference path was asked for)"
    # an on_deliver observer that does not say it reads only what cached events hold
    r = replay_capture(str(bursts), ReplayConfig(), lambda *a: None)
    assert _only_reason(r.engine) == OBSERVER_REASON


def test_replay_frames_runs_frame_by_frame():
    r = replay_frames(list(synth_frames(BURSTS)), ReplayConfig())
    assert _only_reason(r.engine) == FRAMES_REASON
    assert r.engine["polls"] == BURST_POLLS
    check(document(r), "replay")


def test_a_poll_model_the_batch_path_does_not_form():
    # the CLI and PollModel.parse make only budget, gap and rx-usecs, which the batch path forms: any other kind
    # (a model added later) takes the frame-by-frame path until the batch path forms its polls
    assert config_reasons(ReplayConfig(poll=PollModel("budget"))) == []
    assert config_reasons(ReplayConfig(poll=PollModel("napi-timer", 5))) == [
        "poll model napi-timer: the batch path forms budget, gap, rx-usecs polls"
    ]


# --- the text line and the JSON say the same ---------------------------------------------------------------------

_BATCH_LINE = re.compile(r"engine: batch \(([\d,]+) of ([\d,]+) polls? answered from the cache\)")
_FBF_LINE = re.compile(r"engine: frame-by-frame \(([\d,]+) polls? run through the kernels\): (.+)")


def _num(s: str) -> int:
    return int(s.replace(",", ""))


@pytest.mark.parametrize("extra", [(), ("--hz", "1000", "--rx-queues", "2")], ids=["batch", "frame-by-frame"])
def test_text_line_and_json_agree(runner, bursts, tmp_path, extra):
    # one run: the table on stdout, the JSON document in a file
    out = tmp_path / "doc.json"
    r = runner.invoke(main, [str(bursts), *extra, "--json", str(out), "-q", "--no-hist"])
    assert r.exit_code == 0, r.output
    eng = json.loads(out.read_text())["engine"]
    (line,) = [x for x in r.stdout.splitlines() if x.startswith("engine:")]
    m = _BATCH_LINE.fullmatch(line)
    if m:
        assert eng["path"] == "batch" and eng["reasons"] == []
        assert (_num(m[1]), _num(m[2])) == (eng["polls_cached"], eng["polls"])
    else:
        m = _FBF_LINE.fullmatch(line)
        assert m, line
        assert eng["path"] == "frame-by-frame" and eng["polls_cached"] == 0
        assert _num(m[1]) == eng["polls"]
        assert m[2] == "; ".join(eng["reasons"])
    assert eng["path"] == ("frame-by-frame" if extra else "batch")
    # Markdown carries the same line
    md = runner.invoke(main, [str(bursts), *extra, "--format", "markdown", "-q"])
    assert f"- {line}" in md.stdout.splitlines()


# --- the schema, and the kernel backend --------------------------------------------------------------------------


def test_the_schema_types_the_engine_and_refuses_contradictions(bursts):
    doc = document(replay_capture(str(bursts), ReplayConfig()))
    check(doc, "replay")
    assert set(load("replay")["$defs"]["engine"]["required"]) == set(doc["engine"])
    from gro_replay.report.schema import SchemaViolation

    bad = [
        {**doc["engine"], "path": "batch", "reasons": ["--hz 1000"]},  # batch with a reason against it
        {**doc["engine"], "path": "frame-by-frame", "reasons": []},  # frame-by-frame without one
        {**doc["engine"], "path": "frame-by-frame", "reasons": ["x"], "polls_cached": 1},
        {**doc["engine"], "polls": -1},
        {**doc["engine"], "path": "fast"},
    ]
    for eng in bad:
        with pytest.raises(SchemaViolation):
            check({**doc, "engine": eng}, "replay")


def test_the_kernel_backend_document_has_no_engine(bursts):
    # the running kernel receives every frame (gro-replay kernel): neither simulator path applies, so its results
    # (validate.kernel_result: Result without engine) have no engine object and no engine line
    assert "engine" not in json.dumps(load("kernel-backend")["properties"])
    r = replace(replay_capture(str(bursts), ReplayConfig()), engine=None, backend="kernel")
    assert "engine" not in document(r, backend="kernel")
    assert engine_lines(r.engine) == [] and not any(x.startswith("engine:") for x in input_lines(r))
    assert "engine:" not in markdown(r)


def test_the_fix_sample_states_its_path(runner):
    # the shipped sample: a classic Ethernet pcap with the default options — the batch path
    out = runner.invoke(main, [str(FIX_SAMPLE), "-q", "--no-hist"]).stdout
    assert any(_BATCH_LINE.fullmatch(x) for x in out.splitlines()), out


def test_a_run_that_replays_no_frame_says_no_poll_ran(runner, tmp_path, bursts):
    """No frame replayed, no poll: every record of the capture is skipped (3 records of 10 bytes, shorter than an
    Ethernet header: ``malformed:ethernet``), or ``-f`` rejects every frame; the line says so on both paths
    instead of "0 of 0 polls answered from the cache"."""
    path = tmp_path / "short.pcap"
    with open(path, "wb") as f:
        w = PcapWriter(f)
        for i in range(3):
            w.write(i * 1_000_000_000, b"\x00" * 10)
    eng = _engine(runner, path)
    assert (eng["path"], eng["polls"], eng["polls_cached"]) == ("batch", 0, 0)
    assert engine_lines(eng) == ["engine: batch (no poll: no frame was replayed)"]
    pytest.importorskip("pcapy", reason="the bpf extra (pcapy-ng) is part of the test extra")
    eng = _engine(runner, bursts, "-f", "host 203.0.113.9")
    assert (eng["path"], eng["polls"]) == ("frame-by-frame", 0)
    assert engine_lines(eng) == [
        f"engine: frame-by-frame (no poll: no frame was replayed), the path chosen for: {eng['reasons'][0]}"
    ]
