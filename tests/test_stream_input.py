"""Any stream in: ``-``, ``/dev/stdin``, FIFOs, for pcap, pcapng and gzip, on the batch and the per-frame path.

The expected value of every comparison is the document of the same bytes read from a regular file: a stream
differs only in ``input.path``; ``input.blake3`` is the BLAKE3 of the stream's bytes (blake3 over the file,
computed here independently). A pipe returns short reads (at most its buffer, 64 KiB on Linux); only a read of
0 bytes ends the stream (read(2)).
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import dpkt
import pytest
from blake3 import blake3
from conftest import CLI, FIX_SAMPLE, ROOT, cli_env, on_a_terminal, without_engine

from gro_replay.capture.reader import open_capture
from gro_replay.report.document import document
from gro_replay.sim import ReplayConfig, replay_capture

ROBUSTNESS = ROOT.parent / "shared" / "robustness"


def _cli_doc(path: str, stdin: bytes | None = None) -> dict:
    p = subprocess.run(
        [*CLI, path, "--format", "json", "--quiet"],
        input=stdin,
        capture_output=True,
        env=cli_env(),
        timeout=300,
    )
    assert p.returncode == 0, p.stderr.decode()
    return json.loads(p.stdout)


def _without_path(doc: dict) -> dict:
    """The document without its input path and engine (a pcapng pipe takes the frame-by-frame path)."""
    doc = without_engine(json.loads(json.dumps(doc)))
    doc["input"].pop("path")
    return doc


def _pcapng_copy(src: Path, dst: Path) -> None:
    """``src`` as pcapng (dpkt's writer) with a nanosecond interface (if_tsresol 9), timestamps unchanged."""
    ng = dpkt.pcapng
    idb = ng.InterfaceDescriptionBlockLE(
        snaplen=262144,
        linktype=1,
        opts=[
            ng.PcapngOptionLE(code=ng.PCAPNG_OPT_IF_TSRESOL, data=b"\x09"),
            ng.PcapngOptionLE(code=ng.PCAPNG_OPT_ENDOFOPT),
        ],
    )
    with open_capture(src) as cap, open(dst, "wb") as out:
        w = ng.Writer(out, idb=idb)
        for ts_ns, buf, orig_len, _lt in cap:
            epb = ng.EnhancedPacketBlockLE(
                ts_high=ts_ns >> 32,
                ts_low=ts_ns & 0xFFFFFFFF,
                caplen=len(buf),
                pkt_len=orig_len,
                pkt_data=buf,
            )
            w.writepkt(epb)


@pytest.fixture(scope="module")
def synth20k(tmp_path_factory) -> Path:
    """A 20,000-frame synth capture (two flows of 10,000): larger than a pipe's buffer many times over."""
    out = tmp_path_factory.mktemp("synth") / "synth20k.pcap"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "gro_replay.cli.synth",
            "--flows",
            "2",
            "--frames",
            "10000",
            "--pause-every",
            "40",
            "--pause-us",
            "100",
            str(out),
        ],
        capture_output=True,
        env=cli_env(),
        timeout=300,
    )
    assert p.returncode == 0, p.stderr.decode()
    return out


def _variants(src: Path, tmp: Path) -> list[Path]:
    ng = tmp / (src.stem + ".pcapng")
    _pcapng_copy(src, ng)
    gz = tmp / (src.name + ".gz")
    gz.write_bytes(gzip.compress(src.read_bytes()))
    return [src, ng, gz]


def _check_through_pipes(f: Path) -> None:
    want = _cli_doc(str(f))
    assert want["input"]["blake3"] == blake3(f.read_bytes()).hexdigest()
    for name in ("-", "/dev/stdin"):
        got = _cli_doc(name, stdin=f.read_bytes())
        assert got["input"]["path"] == name
        assert _without_path(got) == _without_path(want), (f.name, name)


def test_fix_sample_through_a_pipe(tmp_path) -> None:
    for f in _variants(FIX_SAMPLE, tmp_path):
        _check_through_pipes(f)
    # the fix's sample: 17 frames (Makefile `samples`), none lost on the way
    assert _cli_doc("-", stdin=FIX_SAMPLE.read_bytes())["input"]["frames_read"] == 17


def test_20k_frame_synth_through_a_pipe(synth20k, tmp_path) -> None:
    """pcap (the batch path's block reader), pcapng and gzip (the per-frame reader) through a pipe."""
    for f in _variants(synth20k, tmp_path):
        _check_through_pipes(f)
        doc = _cli_doc("-", stdin=f.read_bytes())
        assert doc["input"]["frames_read"] == 20_000
        assert doc["input"]["skipped"] == {}


def test_shell_pipe_with_cat(synth20k) -> None:
    """`cat F | gro-replay - --format json` as a user types it (a real pipe between two processes)."""
    cmd = " ".join(CLI[:2]) + f" {json.dumps(CLI[2])}"
    p = subprocess.run(
        f"cat {synth20k} | {cmd} - --format json --quiet",
        shell=True,
        capture_output=True,
        env=cli_env(),
        timeout=300,
    )
    assert p.returncode == 0, p.stderr.decode()
    assert _without_path(json.loads(p.stdout)) == _without_path(_cli_doc(str(synth20k)))


def test_fifo_fed_in_small_writes(synth20k) -> None:
    """A FIFO written 1000 bytes at a time: every read is short; both paths read all 20,000 records."""
    data = synth20k.read_bytes()
    want = json.dumps(without_engine(document(replay_capture(str(synth20k), ReplayConfig()))), sort_keys=True)
    for fast in (True, False):
        fifo = Path(os.environ.get("TMPDIR", "/tmp")) / f"gro-replay-test-fifo-{os.getpid()}-{fast}"
        os.mkfifo(fifo)
        try:

            def feed(fifo=fifo) -> None:
                with open(fifo, "wb", buffering=0) as w:
                    for i in range(0, len(data), 1000):
                        w.write(data[i : i + 1000])

            t = threading.Thread(target=feed)
            t.start()
            r = replay_capture(str(fifo), ReplayConfig(fast_path=fast))
            t.join()
        finally:
            fifo.unlink()
        assert r.input.frames_read == 20_000
        assert (r.batch is not None) == fast
        got = without_engine(document(r))
        got["input"]["path"] = str(synth20k)
        assert json.dumps(got, sort_keys=True) == want


def test_stream_cut_mid_record_is_counted(synth20k) -> None:
    """A stream cut inside the last record: every complete record is read, the cut one counted."""
    data = synth20k.read_bytes()
    cut = data[:-100]
    doc = _cli_doc("-", stdin=cut)
    assert doc["input"]["frames_read"] == 20_000
    assert doc["input"]["skipped"] == {"truncated_record": 1}
    assert doc["input"]["frames_replayed"] == 19_999
    assert doc["input"]["blake3"] == blake3(cut).hexdigest()


def test_digest_covers_bytes_after_the_last_record(tmp_path) -> None:
    """The digest is of the whole stream, also when bytes follow the records (pcapng padding, junk block)."""
    f = tmp_path / "x.pcap"
    f.write_bytes(FIX_SAMPLE.read_bytes())
    with open_capture(f) as cap:
        n = sum(1 for _ in cap)
        assert cap.hexdigest() == blake3(f.read_bytes()).hexdigest()
    assert n == 17


@pytest.mark.parametrize("block", [64, 1000])
def test_digest_of_reads_of_every_size_through_reused_buffers(block, monkeypatch) -> None:
    """``DigestingRaw`` gathers reads in reused buffers of ``_DIGEST_BLOCK`` bytes: reads smaller than, equal to
    and several times larger than a buffer, far more buffers' worth than it keeps (every buffer handed back and
    refilled), a partial buffer at the end: the BLAKE3 of the bytes, computed here by blake3 at once."""
    import io
    import random

    from gro_replay.capture import stream

    monkeypatch.setattr(stream, "_DIGEST_BLOCK", block)
    data = random.Random(block).randbytes(40 * block + 17)
    d = stream.DigestingRaw(io.BytesIO(data))  # type: ignore[arg-type]
    rng = random.Random(1)
    got = 0
    while got < 30 * block:
        buf = bytearray(rng.choice([1, 16, block - 1, block, block + 1, 3 * block]))
        n = d.readinto(memoryview(buf))
        assert bytes(buf[:n]) == data[got : got + n]
        got += n
    assert d.hexdigest() == blake3(data).hexdigest()
    assert d.bytes_read == len(data)
    d.close()


def test_digest_of_lent_reads_hashed_where_they_lie(monkeypatch) -> None:
    """``DigestingRaw.lend``: reads of ``_LENT_MIN`` bytes or more into the lent buffer are hashed in place, in
    stream order with the copied ones (reads into other buffers, shorter reads, a partly filled digest buffer
    before a lent read); the owner scrambles the buffer after each ``settle`` (which waits for the hash) and
    before its next read: the digest is still the BLAKE3 of the bytes read, computed here by blake3 at once."""
    import io
    import random

    from gro_replay.capture import stream

    monkeypatch.setattr(stream, "_DIGEST_BLOCK", 1000)
    monkeypatch.setattr(stream, "_LENT_MIN", 300)
    data = random.Random(5).randbytes(200_000)
    d = stream.DigestingRaw(io.BytesIO(data))  # type: ignore[arg-type]
    lent = bytearray(5000)
    other = bytearray(5000)
    d.lend(lent)
    rng = random.Random(2)
    got = 0
    while got < 150_000:
        d.settle()
        lent[:] = rng.randbytes(len(lent))  # the owner writes to its buffer again, after settle
        target = rng.choice([lent, lent, other])
        at = rng.choice([0, 7, 1000])
        size = rng.choice([1, 299, 300, 2500, 4000])
        n = d.readinto(memoryview(target)[at : at + size])
        assert bytes(target[at : at + n]) == data[got : got + n]
        got += n
    d.lend(None)
    assert d.hexdigest() == blake3(data).hexdigest()
    assert d.bytes_read == len(data)
    d.close()


@pytest.mark.parametrize("block", [1 << 17, 1 << 18])
def test_digest_of_a_pcap_read_in_blocks_with_lent_reads(block, tmp_path, monkeypatch) -> None:
    """chunks.py ``PcapChunks`` lends its buffer to the capture's digest (moves its kept bytes and grows it for a
    record larger than a block, after ``settle``); blocks larger than the reader's 64 KiB buffer are read into it
    directly, so reads are lent: the BLAKE3 is the file's (blake3), the records those read."""
    import random

    from gro_replay.capture import stream
    from gro_replay.capture.chunks import PcapChunks
    from gro_replay.capture.writer import PcapWriter

    monkeypatch.setattr(stream, "_LENT_MIN", 256)
    inside = stream._inside
    lent = []
    monkeypatch.setattr(stream, "_inside", lambda v, b: lent.append(inside(v, b)) or lent[-1])
    f = tmp_path / "x.pcap"
    rng = random.Random(block)
    sizes = [rng.choice([60, 1514, 3000, 9000]) for _ in range(600)]
    sizes[300] = 200_000  # larger than the first block: the buffer grows
    with PcapWriter(str(f)) as w:
        for i, size in enumerate(sizes):
            w.write(1_000_000 * i, rng.randbytes(size))
    with open_capture(f) as cap:
        r = PcapChunks(cap, block)
        got = []
        keep = None
        while (ch := r.next(keep)) is not None:
            take = (
                len(ch) - len(ch) // 3 if not ch.eof and len(ch) > 2 else len(ch)
            )  # some records read again
            got.extend(int(x) for x in ch.caplen[:take])
            keep = ch.record_start(take)
        assert got == sizes
        assert cap.hexdigest() == blake3(f.read_bytes()).hexdigest()
    assert sum(lent) >= 5


def test_stdin_terminal_is_refused() -> None:
    """`gro-replay -` on a terminal would wait forever: one line, exit 2."""
    code, out = on_a_terminal("-", "--quiet")
    assert code == 2
    assert b"standard input is a terminal" in out


def test_robustness_stdin_pipe_4frames() -> None:
    f = ROBUSTNESS / "stdin-pipe-4frames.pcap"
    if not f.exists():
        pytest.skip(f"{f} not present")
    want = _cli_doc(str(f))
    for name in ("-", "/dev/stdin"):
        got = _cli_doc(name, stdin=f.read_bytes())
        # README of ../shared/robustness: 4 frames, the digest of the stream, the file's document
        assert got["input"]["frames_read"] == 4
        assert got["input"]["skipped"] == {}
        assert got["input"]["blake3"] == blake3(f.read_bytes()).hexdigest()
        assert _without_path(got) == _without_path(want)


def test_process_substitution_and_explain_from_stdin(tmp_path) -> None:
    """`gro-replay <(cat F)` reads /dev/fd/N (a pipe); `gro-replay explain -` reads standard input."""
    want = _without_path(_cli_doc(str(FIX_SAMPLE)))
    r, w = os.pipe()
    feeder = threading.Thread(target=lambda: (os.write(w, FIX_SAMPLE.read_bytes()), os.close(w)))
    feeder.start()
    try:
        p = subprocess.run(
            [*CLI, f"/dev/fd/{r}", "--format", "json", "--quiet"],
            capture_output=True,
            env=cli_env(),
            timeout=120,
            pass_fds=(r,),
        )
    finally:
        feeder.join()
        os.close(r)
    assert p.returncode == 0, p.stderr.decode()
    assert _without_path(json.loads(p.stdout)) == want
    file_explain = subprocess.run(
        [*CLI, "explain", str(FIX_SAMPLE)], capture_output=True, env=cli_env(), timeout=120
    )
    stdin_explain = subprocess.run(
        [*CLI, "explain", "-"], input=FIX_SAMPLE.read_bytes(), capture_output=True, env=cli_env(), timeout=120
    )
    assert stdin_explain.returncode == 0, stdin_explain.stderr.decode()
    # the same text but the input line's name: "input: standard input: 17 frames read" for "-"
    named = stdin_explain.stdout.replace(b"input: standard input: ", f"input: {FIX_SAMPLE}: ".encode(), 1)
    assert named == file_explain.stdout


def test_a_pipe_is_widened_to_pipe_bytes_and_never_shrunk(tmp_path) -> None:
    """``open_stream`` (stream.py ``widened``) asks a pipe for a ``PIPE_BYTES`` (1 MiB) buffer (fcntl F_SETPIPE_SZ): reads of a capture
    piped in return up to 1 MiB instead of 64 KiB. Where this process may make a pipe that large (probed on a pipe
    of its own: pipe-max-size, the user's pipe pages), the capture's pipe becomes that large; a pipe already larger
    keeps its size; a file is read as before."""
    import fcntl

    from gro_replay.capture.reader import open_stream
    from gro_replay.capture.stream import PIPE_BYTES

    probe_r, probe_w = os.pipe()
    try:
        fcntl.fcntl(probe_w, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        can = fcntl.fcntl(probe_w, fcntl.F_GETPIPE_SZ) == PIPE_BYTES
    except OSError:
        can = False
    finally:
        os.close(probe_r)
        os.close(probe_w)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    w = os.open(fifo, os.O_RDWR)  # read-write: opening the read end does not block
    try:
        before = fcntl.fcntl(w, fcntl.F_GETPIPE_SZ)
        with open_stream(fifo) as f:
            got = fcntl.fcntl(f.fileno(), fcntl.F_GETPIPE_SZ)
        assert got == (PIPE_BYTES if can else before) and got >= before
        try:  # a pipe made larger first (where this process may: CAP_SYS_RESOURCE) is left as it is
            fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, 2 * PIPE_BYTES)
        except OSError:
            pass
        larger = fcntl.fcntl(w, fcntl.F_GETPIPE_SZ)
        with open_stream(fifo) as f:
            assert fcntl.fcntl(f.fileno(), fcntl.F_GETPIPE_SZ) == larger
    finally:
        os.close(w)
    with open_stream(FIX_SAMPLE) as f:
        assert f.read(4) == FIX_SAMPLE.read_bytes()[:4]
