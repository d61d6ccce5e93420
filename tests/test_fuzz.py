"""Property-based / mutation fuzzing (hypothesis) of the reader, the decoder, the replay, the CLI's numeric options,
``diff`` (mutated documents) and ``explain --flow`` (selectors).

Oracles, for every generated input:

* no exception escapes: the reader raises only ``CaptureError`` (one line, starting with the path), the decoder
  returns a frame or a skip reason, the CLI exits 0 or 2 (usage / unreadable input; ``diff`` also 1, a regression)
  and never 70 or a traceback;
* input accounting: ``frames_read + segments_created − resegmented_frames = frames_replayed + Σ skipped``;
* segment conservation and a drained simulation (checked by ``Replayer.finish``: tests/conftest.py turns the
  checks on for every replay);
* batch path = reference path: the JSON document of the batch path (pollcache.py) equals the one of
  ``ReplayConfig(fast_path=False)`` (tests/test_pollcache.py);
* bounded work: polls simulated (``Kernel.net_rx_action`` calls) ≤ 8 per frame entering the simulation + 16 per
  kernel, whatever the timestamps, timers and HZ.

The suite runs a short, derandomized pass (a fixed number of examples per target: seconds). ``make fuzz`` runs the
same targets with random seeds for ``FUZZ_SECONDS`` seconds in all (default 600, shared by the targets); a failure prints the
shrunk input (hypothesis), which then belongs in tests/test_robustness.py as a regression test.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import dpkt
import pytest
from blake3 import blake3
from conftest import FIX_SAMPLE, GENEVE_SAMPLE, VXLAN4_SAMPLE, without_engine
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_robustness import _count_polls

from gro_replay.capture.reader import CaptureError, open_capture
from gro_replay.kernel.model import K_5_11, K_5_12
from gro_replay.packet.decode import Decoder
from gro_replay.report.document import document
from gro_replay.sim import PollModel, ReplayConfig, replay_capture

#: seconds of the long run (``make fuzz``), shared by the targets; 0: the suite's short derandomized pass
FUZZ_SECONDS = float(os.environ.get("FUZZ_SECONDS", "0") or 0)
#: the targets below (each gets FUZZ_SECONDS / TARGETS)
TARGETS = 6
SHORT_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "25"))

_SHORT = settings(
    max_examples=SHORT_EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
_LONG = settings(
    max_examples=50,
    derandomize=False,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)


def run_target(test) -> None:
    """Run hypothesis test ``test``: once with the short settings, or for FUZZ_SECONDS with random seeds."""
    if not FUZZ_SECONDS:
        _SHORT(test)()
        return
    end = time.monotonic() + FUZZ_SECONDS / TARGETS
    long_run = _LONG(test)
    while time.monotonic() < end:
        long_run()  # each call: max_examples new random examples


# -- seed captures -------------------------------------------------------------------------------------------------
def _first_records(path: Path, n: int) -> bytes:
    data = path.read_bytes()
    off = 24
    for _ in range(n):
        caplen = int.from_bytes(data[off + 8 : off + 12], "little")
        off += 16 + caplen
    return data[:off]


def _pcapng(pcap: bytes) -> bytes:
    out = io.BytesIO()
    r = dpkt.pcap.Reader(io.BytesIO(pcap))
    w = dpkt.pcapng.Writer(out, snaplen=262144, linktype=r.datalink())
    for ts, buf in r:
        w.writepkt(buf, ts=float(ts))
    return out.getvalue()


def _seeds() -> list[bytes]:
    fix = FIX_SAMPLE.read_bytes()
    geneve = _first_records(GENEVE_SAMPLE, 24)
    vx = _first_records(VXLAN4_SAMPLE, 40)
    return [fix, geneve, vx, _pcapng(fix), gzip.compress(fix, mtime=0), gzip.compress(_pcapng(vx), mtime=0)]


SEEDS = _seeds()


@st.composite
def mutated_capture(draw) -> bytes:
    """A seed capture with a few byte-level mutations: overwrite, insert, delete, truncate, duplicate a span."""
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(0, 4))):
        op = draw(st.sampled_from(["set", "insert", "delete", "truncate", "dup", "flip"]))
        pos = draw(st.integers(0, max(0, len(data) - 1)))
        if op == "set":
            chunk = draw(st.binary(min_size=1, max_size=8))
            data[pos : pos + len(chunk)] = chunk
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=64))
        elif op == "delete":
            del data[pos : pos + draw(st.integers(1, 64))]
        elif op == "truncate":
            del data[pos:]
        elif op == "dup":
            n = draw(st.integers(1, 400))
            data[pos:pos] = data[pos : pos + n]
        elif data:
            data[pos] ^= 1 << draw(st.integers(0, 7))
    return bytes(data)


_TMP = tempfile.TemporaryDirectory(prefix="gro-replay-fuzz-")


def _write(data: bytes) -> str:
    path = os.path.join(_TMP.name, f"in-{os.getpid()}.pcap")
    with open(path, "wb") as f:
        f.write(data)
    return path


# -- reader ---------------------------------------------------------------------------------------------------------
def test_fuzz_reader() -> None:
    @given(mutated_capture())
    def one(data: bytes) -> None:
        path = _write(data)
        try:
            with open_capture(path) as cap:
                n = sum(1 for _ in cap)
                digest = cap.hexdigest()
        except CaptureError as e:
            msg = str(e)
            assert msg.startswith(path) and "\n" not in msg
            return
        assert n >= 0 and cap.truncated_records in (0, 1)

        assert digest == blake3(data).hexdigest()

    run_target(one)


# -- decoder --------------------------------------------------------------------------------------------------------
def test_fuzz_decoder() -> None:
    dec = Decoder((4789, 8472), (6081,))
    frames = []
    with open_capture(FIX_SAMPLE) as cap:
        frames = [buf for _, buf, _, _ in cap]

    @given(
        st.sampled_from(frames), st.lists(st.tuples(st.integers(0, 2000), st.integers(0, 255)), max_size=6)
    )
    def one(frame: bytes, edits) -> None:
        buf = bytearray(frame)
        for pos, val in edits:
            if pos < len(buf):
                buf[pos] = val
            else:
                del buf[pos % (len(buf) + 1) :]
        r = dec.decode(bytes(buf))
        assert isinstance(r, (str, tuple))

    run_target(one)


# -- replay: accounting, conservation, batch = reference, bounded work ----------------------------------------------
@st.composite
def replay_config(draw) -> ReplayConfig:
    poll = draw(st.sampled_from(["budget", "gap:0", "gap:5", "gap:50", "rx-usecs:3", "rx-usecs:50"]))
    timed = draw(st.booleans())
    return ReplayConfig(
        kernels=draw(st.sampled_from([(K_5_11, K_5_12), (K_5_12,), (K_5_11,)])),
        poll=PollModel.parse(poll),
        hz=draw(st.sampled_from([100, 250, 300, 1000])),
        rx_csum=draw(st.sampled_from(["unnecessary", "none", "complete", "unnecessary-tunnel"])),
        gro_flush_timeout_ns=draw(st.sampled_from([1, 1000, 20_000])) if timed else 0,
        napi_defer_hard_irqs=draw(st.sampled_from([0, 2, 1_000_000])) if timed else 0,
        rx_queues=draw(st.sampled_from([1, 1, 2])),
        resegment=draw(st.sampled_from(["auto", "off", "auto"])),
    )


def test_fuzz_replay(monkeypatch) -> None:
    calls = _count_polls(monkeypatch)

    @given(mutated_capture(), replay_config())
    def one(data: bytes, cfg: ReplayConfig) -> None:
        path = _write(data)
        calls[0] = 0
        try:
            r = replay_capture(path, cfg)
        except CaptureError:
            return
        inp = r.input
        skipped = sum(inp.skipped.values())
        assert (
            inp.frames_read + inp.segments_created - inp.resegmented_frames == inp.frames_replayed + skipped
        )
        entered = inp.frames_replayed
        assert calls[0] <= len(cfg.kernels) * (8 * entered + 16), (calls[0], entered)
        doc = json.dumps(without_engine(document(r)), sort_keys=True)
        ref = replay_capture(path, replace(cfg, fast_path=False))
        ref = json.dumps(without_engine(document(ref)), sort_keys=True)
        assert doc == ref

    run_target(one)


# -- CLI options ----------------------------------------------------------------------------------------------------
_NUMBERS = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(
        ["", "inf", "-inf", "nan", "1e400", "0x10", "\u0661\u0662", "1_000", " 5", "5 ", "+3", "-0"]
    ),
    st.text(max_size=6),
)

_REPLAY_OPTIONS = [
    "--hz",
    "--gro-flush-timeout",
    "--napi-defer-hard-irqs",
    "--rx-queues",
    "--mtu",
    "--vxlan-port",
    "--geneve-port",
    "--resegment",
    "--poll",
]
_SYNTH_OPTIONS = [
    "--gap-us",
    "--pause-us",
    "--mss",
    "--mtu",
    "--flows",
    "--pause-every",
    "--last-payload",
    "--port",
    "--geneve-opt-bytes",
    "--vni",
    "--inner-vlan",
    "--start-ns",
    "--interleave",
]


def _exit_code(r) -> int:
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r.exit_code


def test_fuzz_cli_options(runner) -> None:
    from gro_replay.cli import main

    out = os.path.join(_TMP.name, "synth.pcap")

    @given(
        st.sampled_from(["replay", "synth"]),
        st.lists(st.tuples(st.integers(0, 20), _NUMBERS), min_size=1, max_size=3),
    )
    def one(cmd: str, picks) -> None:
        if cmd == "replay":
            args = [str(FIX_SAMPLE), "--format", "json", "-q"]
            names = _REPLAY_OPTIONS
        else:
            args = ["synth", out, "--frames", "8"]
            names = _SYNTH_OPTIONS
        for i, value in picks:
            args += [names[i % len(names)], value]
        code = _exit_code(runner.invoke(main, args))
        assert code in (0, 2), (args, code)

    run_target(one)


@pytest.mark.skipif(not FUZZ_SECONDS, reason="long run only (make fuzz)")
def test_fuzz_seconds_is_a_long_run() -> None:
    """A marker that the long run ran (``make fuzz`` prints it among the passed tests)."""
    assert FUZZ_SECONDS > 0


# -- diff and explain --flow: documents and selectors -----------------------------------------------------------------
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=8,
)


def _paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, (*prefix, i))


def test_fuzz_diff_documents(runner) -> None:
    from gro_replay.cli import main

    base_doc = document(replay_capture(str(FIX_SAMPLE), ReplayConfig()))
    base = os.path.join(_TMP.name, "base.json")
    with open(base, "w") as f:
        json.dump(base_doc, f)
    paths = [p for p in _paths(base_doc) if p]
    cur = os.path.join(_TMP.name, "current.json")

    @given(
        st.lists(st.tuples(st.sampled_from(paths), _JSON), max_size=3),
        st.lists(st.tuples(st.integers(0, 10**6), st.binary(max_size=4)), max_size=2),
        st.sampled_from(["text", "json", "markdown"]),
    )
    def one(edits, byte_edits, fmt) -> None:
        doc = json.loads(json.dumps(base_doc))
        for path, value in edits:
            node = doc
            try:
                for k in path[:-1]:
                    node = node[k]
                node[path[-1]] = value
            except (KeyError, IndexError, TypeError):
                continue
        text = bytearray(json.dumps(doc, allow_nan=True).encode())
        for pos, data in byte_edits:
            p = pos % (len(text) + 1)
            text[p : p + len(data)] = data
        with open(cur, "wb") as f:
            f.write(text)
        code = _exit_code(runner.invoke(main, ["diff", base, cur, "--format", fmt]))
        assert code in (0, 1, 2), (edits, byte_edits, code)

    run_target(one)


def test_fuzz_explain_flow_selector(runner) -> None:
    from gro_replay.cli import main

    @given(
        st.one_of(
            st.text(max_size=40),
            st.from_regex(
                r"(id|vni|sport|dport|src|dst|port)=[0-9a-f:.\u0660-\u0669²_-]{0,30}", fullmatch=True
            ),
        )
    )
    def one(selector: str) -> None:
        code = _exit_code(runner.invoke(main, ["explain", str(FIX_SAMPLE), "--flow", selector]))
        assert code in (0, 2), (selector, code)

    run_target(one)
