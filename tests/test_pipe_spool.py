"""A capture piped in gives the file's document, whatever the options; a stream is copied only when a replay reads
its capture twice.

``--vxlan-port auto`` / ``--geneve-port auto`` / ``--detect-tunnels`` read the capture once for the ports and
again to replay it: a stream is copied, as read, to a temporary file in ``$TMPDIR`` that is read as the file and
removed at the end, after an error and after SIGINT/SIGTERM (capture/spool.py). Interfaces are chosen as records
are read, by one rule for a file and a pipe (capture/interfaces.py): a pipe of several interfaces (two NICs,
several pcapng sections, ``tcpdump -i any``) is never copied.

The expected value of every comparison is the document of the same bytes read from the regular file: through
``cat FILE | gro-replay -`` and through ``/dev/stdin`` it differs only in ``input.path``; ``input.blake3`` is the
SHA-256 of the bytes (hashlib here). The concrete values come from how each capture is built (the kernel rules in
tests/test_multinic.py's docstring): synth's VXLAN frames, outer UDP checksum 0, 1 µs apart, under the default
``--rx-csum unnecessary`` — before 89e5c58fc1e2 the phys stage delivers each frame alone (N skbs), after it one
aggregate per flow: the flow is affected.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import json
import os
import resource
import signal
import struct
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from blake3 import blake3
from conftest import CLI, cli_env, file_sizes, in_a_session
from test_interface_pipes import _fifo

from gro_replay.capture import spool
from gro_replay.capture.reader import DLT_LINUX_SLL2
from gro_replay.capture.writer import PcapngWriter, PcapWriter
from gro_replay.report.document import document
from gro_replay.sim import ReplayConfig, replay_capture
from gro_replay.synth import Scenario, synth_frames

N = 20  # frames of a flow
_OUTER = 14 + 20 + 8 + 8  # Ethernet + IPv4 + UDP + VXLAN before the inner Ethernet frame (synth's default)


def _run(args: list[str], stdin=None, tmpdir: Path | None = None, **kw) -> subprocess.CompletedProcess:
    env = cli_env()
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    return subprocess.run(
        [*CLI, *args, "--format", "json", "-q"], stdin=stdin, capture_output=True, env=env, timeout=300, **kw
    )


def _doc(p: subprocess.CompletedProcess) -> dict:
    assert p.returncode == 0, p.stderr.decode()
    return json.loads(p.stdout)


def _piped(path: Path, name: str, opts: tuple[str, ...], tmpdir: Path) -> subprocess.CompletedProcess:
    """``cat PATH | gro-replay NAME OPTS`` with ``$TMPDIR`` ``tmpdir`` (NAME: ``-`` or ``/dev/stdin``)."""
    with subprocess.Popen(["cat", str(path)], stdout=subprocess.PIPE) as cat:
        p = _run([name, *opts], stdin=cat.stdout, tmpdir=tmpdir)
    return p


def _three(path: Path, tmp_path: Path, *opts: str) -> dict:
    """The document of ``path`` with ``opts``, checked equal (but for ``input.path``) through ``cat |`` with ``-``
    and with ``/dev/stdin``; its BLAKE3 is the file's; no temporary file is left behind."""
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir(exist_ok=True)
    want = _doc(_run([str(path), *opts], tmpdir=tmpdir))
    assert want["input"]["blake3"] == blake3(path.read_bytes()).hexdigest()
    for name in ("-", "/dev/stdin"):
        got = _doc(_piped(path, name, opts, tmpdir))
        assert got["input"].pop("path") == name
        assert got == {**want, "input": {k: v for k, v in want["input"].items() if k != "path"}}, (name, opts)
    assert not list(tmpdir.iterdir())
    return want


def _write_pcap(path: Path, frames, linktype: int = 1) -> Path:
    with PcapWriter(path, linktype=linktype) as w:
        for ts, f in frames:
            w.write(ts, f)
    return path


def _affected(doc: dict) -> list[tuple[int, int]]:
    return [(f["phys_skbs_pre"], f["phys_skbs_post"]) for f in doc["comparison"]["affected_flows"]]


def _replayed(doc: dict) -> list[str]:
    return [i["interface"] for i in doc["input"]["interfaces"] if i["replayed"]]


# --- auto ports: the capture is read twice, a stream through a copy ---------------------------------------------


@pytest.mark.parametrize(
    ("form", "opts"),
    [("pcap", ("--vxlan-port", "auto")), ("pcapng", ("--detect-tunnels",)), ("gz", ("--vxlan-port", "auto"))],
)
def test_auto_ports_through_a_pipe_give_the_files_document(tmp_path, form, opts):
    # one flow on UDP 4790 (no socket there by default): auto finds the port and the flow is replayed as VXLAN
    frames = list(synth_frames(Scenario(frames=N, port=4790)))
    path = _write_pcap(tmp_path / "p4790.pcap", frames)
    if form == "pcapng":
        path = tmp_path / "p4790.pcapng"
        with PcapngWriter(path, [("eth0", "")]) as w:
            for ts, f in frames:
                w.write(ts, f)
    elif form == "gz":
        gz = tmp_path / "p4790.pcap.gz"
        gz.write_bytes(gzip.compress(path.read_bytes()))
        path = gz
    doc = _three(path, tmp_path, *opts)
    inp = doc["input"]
    assert inp["tunnel_ports_detected"] == {"vxlan": {"4790": N}}
    assert inp["classes"] == {"tunnel_tcp": N} and inp["tunnel_ports_not_configured"] == {}
    assert 4790 in doc["config"]["vxlan_ports"]
    assert _affected(doc) == [(N, 1)]


def test_geneve_auto_through_a_pipe(tmp_path):
    path = tmp_path / "g6082.pcap"
    _write_pcap(path, synth_frames(Scenario(frames=N, encap="geneve", port=6082, geneve_opt_bytes=8)))
    doc = _three(path, tmp_path, "--geneve-port", "auto")
    assert doc["input"]["tunnel_ports_detected"] == {"geneve": {"6082": N}}
    assert doc["input"]["classes"] == {"tunnel_tcp": N}


@pytest.mark.parametrize(("form", "cut"), [("pcap", 0.03), ("pcap", 0.6), ("gz", 0.6)])
def test_a_cut_stream_with_auto_reports_the_truncation_as_the_file_does(tmp_path, form, cut):
    # cut inside the first record (nothing to detect) or inside a later one: a cut stream is a cut file; gzip
    # data cut before its end-of-stream marker as well
    data = _write_pcap(tmp_path / "w.pcap", synth_frames(Scenario(frames=N, port=4790))).read_bytes()
    if form == "gz":
        data = gzip.compress(data)
    path = tmp_path / f"cut.{form}"
    path.write_bytes(data[: int(len(data) * cut)])
    doc = _three(path, tmp_path, "--vxlan-port", "auto")
    assert doc["input"]["skipped"] == {"truncated_record": 1}
    assert doc["input"]["frames_read"] < N


# --- several interfaces: chosen as read, the same for a pipe (no copy); with auto through the copy --------------


def _two_nics(path: Path) -> Path:
    """eth0 receives flow A to UDP 4790 first, eth1 flow B to 4789 (each its own NIC), vxlan0 every inner packet."""
    a = list(synth_frames(Scenario(frames=10, port=4790)))
    # another inner packet (no TCP timestamp option): not a repeat of A's (capture/interfaces.py)
    b = list(synth_frames(Scenario(frames=10, start_ns=Scenario().start_ns + 300, timestamps=False)))
    with PcapngWriter(path, [("eth0", ""), ("eth1", ""), ("vxlan0", "")]) as w:
        for (ta, fa), (tb, fb) in zip(a, b, strict=True):
            w.write(ta, fa, iface=0)
            w.write(ta + 100, fa[_OUTER:], iface=2)
            w.write(tb, fb, iface=1)
            w.write(tb + 100, fb[_OUTER:], iface=2)
    return path


def test_two_nics_through_a_pipe_replay_the_files_interface(tmp_path):
    path = _two_nics(tmp_path / "two-nics.pcapng")
    # 4790 has no socket: eth1 carries the first tunnel frame; eth0's 10 frames are plain UDP, not replayed
    doc = _three(path, tmp_path)
    assert _replayed(doc) == ["interface 1 (eth1)"]
    assert doc["input"]["classes"] == {"tunnel_tcp": 10} and _affected(doc) == [(10, 1)]
    # auto finds 4790 (eth0's frames): eth0's first frame is now the first tunnel frame, eth1's 10 left out
    doc = _three(path, tmp_path, "--vxlan-port", "auto")
    assert doc["input"]["tunnel_ports_detected"] == {"vxlan": {"4790": 10}}
    assert _replayed(doc) == ["interface 0 (eth0)"]
    rows = {i["interface"]: i for i in doc["input"]["interfaces"]}
    assert rows["interface 1 (eth1)"]["tunnel_frames_left_out"] == 10
    assert rows["interface 2 (vxlan0)"]["copies_of_tunnel_payload"] == 10
    assert doc["input"]["classes"] == {"tunnel_tcp": 10} and _affected(doc) == [(10, 1)]


def test_two_sections_through_a_pipe(tmp_path):
    # cat a.pcapng b.pcapng: eth0 (section 1) carries flow A, eth1 (section 2) flow B; eth0's frames come first
    a, b = tmp_path / "a.pcapng", tmp_path / "b.pcapng"
    for p, name, sc in (
        (a, "eth0", Scenario(frames=10)),
        (b, "eth1", Scenario(frames=10, start_ns=2 * 10**18)),
    ):
        with PcapngWriter(p, [(name, "")]) as w:
            for ts, f in synth_frames(sc):
                w.write(ts, f)
    path = tmp_path / "sections.pcapng"
    path.write_bytes(a.read_bytes() + b.read_bytes())
    for opts in ((), ("--detect-tunnels",)):
        doc = _three(path, tmp_path, *opts)
        assert _replayed(doc) == ["interface 0 (eth0, section 1)"], opts
        rows = {i["interface"]: i for i in doc["input"]["interfaces"]}
        assert rows["interface 1 (eth1, section 2)"]["tunnel_frames_left_out"] == 10
        assert _affected(doc) == [(10, 1)]


def _sll2(ifindex: int, f: bytes) -> bytes:
    """A Linux cooked v2 record: protocol, reserved, ifindex, ARPHRD_ETHER, packet type, address length, address
    (8 bytes), then the frame after its Ethernet header."""
    return struct.pack("!HHIHBB8s", 0x0800, 0, ifindex, 1, 0, 6, f[6:12]) + f[14:]


def test_tcpdump_any_through_a_pipe_leaves_the_copies_out(tmp_path):
    # ifindex 2 flow A, ifindex 3 flow B (two NICs), ifindex 5 (the VXLAN device) every inner packet
    a = list(synth_frames(Scenario(frames=10)))
    b = list(synth_frames(Scenario(frames=10, start_ns=Scenario().start_ns + 300, timestamps=False)))
    recs = []
    for (ta, fa), (tb, fb) in zip(a, b, strict=True):
        recs += [(ta, _sll2(2, fa)), (ta + 100, _sll2(5, fa[_OUTER:]))]
        recs += [(tb, _sll2(3, fb)), (tb + 100, _sll2(5, fb[_OUTER:]))]
    path = _write_pcap(tmp_path / "any.pcap", recs, DLT_LINUX_SLL2)
    for opts in ((), ("--detect-tunnels",)):
        doc = _three(path, tmp_path, *opts)
        assert _replayed(doc) == ["ifindex 2"], opts
        rows = {i["interface"]: i for i in doc["input"]["interfaces"]}
        assert rows["ifindex 5"]["copies_of_tunnel_payload"] == 10
        assert rows["ifindex 3"]["tunnel_frames_left_out"] == 10
        assert doc["input"]["classes"] == {"tunnel_tcp": 10} and _affected(doc) == [(10, 1)]


# --- when a copy is made, and that it goes -----------------------------------------------------------------------


def _in_process(path: str, cfg: ReplayConfig) -> dict:
    d = document(replay_capture(path, cfg))
    d["input"].pop("path")
    return json.loads(json.dumps(d, default=str))


def test_only_auto_copies_a_stream_and_the_copy_goes(tmp_path, monkeypatch):
    made: list[str] = []
    real = tempfile.mkstemp

    def mkstemp(*a, **kw):
        fd, name = real(*a, **kw)
        made.append(name)
        return fd, name

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    one = _write_pcap(tmp_path / "one.pcap", synth_frames(Scenario(frames=N, port=4790)))
    two = _two_nics(tmp_path / "two.pcapng")
    for path in (one, two):  # one interface, several: read as they stream, never copied
        want = _in_process(str(path), ReplayConfig())
        with _fifo(tmp_path / "fifo", path.read_bytes()) as fifo:
            assert _in_process(fifo, ReplayConfig()) == want
        assert made == []
    auto = ReplayConfig(detect_tunnels=("vxlan",))
    want = _in_process(str(one), auto)
    assert made == []  # a regular file is opened twice
    with _fifo(tmp_path / "fifo", one.read_bytes()) as fifo:
        assert _in_process(fifo, auto) == want
    (name,) = made
    assert Path(name).name.startswith(spool.SPOOL_PREFIX) and not os.path.exists(name)
    assert want["input"]["tunnel_ports_detected"] == {"vxlan": {"4790": N}}


def test_the_copy_goes_after_a_corrupt_record(tmp_path):
    data = _write_pcap(tmp_path / "ok.pcap", synth_frames(Scenario(frames=4, port=4790))).read_bytes()
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(data + struct.pack("<IIII", 0, 0, 0x7FFFFFF0, 0x7FFFFFF0) + b"\0" * 64)
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    f = _run([str(bad), "--vxlan-port", "auto"], tmpdir=tmpdir)
    p = _piped(bad, "-", ("--vxlan-port", "auto"), tmpdir)
    assert (f.returncode, p.returncode) == (2, 2)
    assert p.stderr.decode() == f.stderr.decode().replace(str(bad), "standard input")
    assert p.stderr.count(b"\n") == 1 and b"corrupt record" in p.stderr
    assert not list(tmpdir.iterdir())


def test_a_full_disk_while_copying_is_one_line_and_the_copy_goes(tmp_path, monkeypatch):
    # the copy is written to /dev/full: every write fails with ENOSPC, as on a full file system
    marker = tmp_path / "copy.pcap"

    def mkstemp(*a, **kw):
        marker.write_bytes(b"")
        return os.open("/dev/full", os.O_WRONLY), str(marker)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    path = _write_pcap(tmp_path / "p.pcap", synth_frames(Scenario(frames=N, port=4790)))
    with _fifo(tmp_path / "fifo", path.read_bytes()) as fifo, pytest.raises(spool.CaptureError) as e:
        replay_capture(fifo, ReplayConfig(detect_tunnels=("vxlan",)))
    assert str(e.value).startswith(
        f"{fifo}: --vxlan-port/--geneve-port auto reads the capture twice: the copy of the stream cannot be "
        f"written in {tmp_path} ({os.strerror(errno.ENOSPC)}); set TMPDIR"
    )
    assert not marker.exists()


def test_a_file_size_limit_while_copying_is_exit_2_and_the_copy_goes(tmp_path):
    # RLIMIT_FSIZE below the capture's size: the copy's write fails (EFBIG; Python ignores SIGXFSZ)
    path = _write_pcap(tmp_path / "p.pcap", synth_frames(Scenario(frames=200, port=4790)))
    assert path.stat().st_size > 1 << 17
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 16, 1 << 16))

    with subprocess.Popen(["cat", str(path)], stdout=subprocess.PIPE) as cat:
        p = _run(["-", "--vxlan-port", "auto"], stdin=cat.stdout, tmpdir=tmpdir, preexec_fn=limit)
    assert p.returncode == 2
    err = p.stderr.decode()
    assert err.count("\n") == 1 and err.startswith(
        "Error: standard input: --vxlan-port/--geneve-port auto reads the capture"
    )
    assert f"({os.strerror(errno.EFBIG)})" in err
    assert not list(tmpdir.iterdir())


@pytest.mark.parametrize(
    ("sig", "code", "line"),
    # SIGHUP: the terminal or ssh session closed (129, unwinding as SIGTERM does; it left the copy behind)
    [
        (signal.SIGTERM, 143, "terminated"),
        (signal.SIGINT, 130, "interrupted"),
        (signal.SIGHUP, 129, "hangup"),
    ],
)
def test_a_signal_while_copying_removes_the_copy(tmp_path, sig, code, line):
    data = _write_pcap(tmp_path / "p.pcap", synth_frames(Scenario(frames=N, port=4790))).read_bytes()
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    env = {**cli_env(), "TMPDIR": str(tmpdir)}
    with subprocess.Popen(
        [*CLI, "-", "--vxlan-port", "auto", "-q"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        preexec_fn=in_a_session,
    ) as p:
        assert p.stdin is not None and p.stderr is not None
        p.stdin.write(data[: len(data) // 2])
        p.stdin.flush()
        deadline = time.monotonic() + 60
        # the copy exists and holds what was written: the stream is being copied, its end not yet read
        while len(data) // 2 not in file_sizes(tmpdir):
            assert time.monotonic() < deadline and p.poll() is None
            time.sleep(0.05)
        p.send_signal(sig)
        assert p.wait(timeout=60) == code
        err = p.stderr.read().decode()
        with contextlib.suppress(BrokenPipeError):
            p.stdin.close()
    assert err == f"gro-replay: {line}\n"
    assert not list(tmpdir.iterdir())


@pytest.mark.parametrize(
    ("head", "line"),
    [
        (b"\0" * 64, "Error: standard input: not a pcap or pcapng file (magic 0x00000000)"),
        (b"hello\n", "Error: standard input: not a pcap or pcapng file (magic 0x68656c6c)"),
        (  # xz's stream header magic: what the file is, told from the 4 bytes a refusal reads
            b"\xfd7zXZ\0" + bytes(26),
            "Error: standard input: xz-compressed, not a pcap or pcapng file: decompress it first (xz -dc FILE | gro-replay -); "
            "only gzip is read directly",
        ),
    ],
)
def test_a_stream_that_is_no_capture_is_refused_before_it_is_copied(tmp_path, head, line):
    """A stream whose first bytes are no capture header gets the line a replay without the copy gives, at once:
    the header is read and checked as it is copied (spool.py ``capture_of`` through ``_Tee``), not after the
    whole stream (a producer that keeps writing, ``yes``/``/dev/zero``, filled the temporary directory first).
    The producer here keeps its end of the pipe open: the refusal comes while it still runs, and no copy is left."""
    plain = _run(["-"], input=head)
    assert (plain.returncode, plain.stderr.decode().strip()) == (2, line)
    with subprocess.Popen(
        ["sh", "-c", 'cat "$0"; exec sleep 200', str(_write_bytes(tmp_path / "head", head))],
        stdout=subprocess.PIPE,
    ) as producer:
        p = _run(["-", "--vxlan-port", "auto"], stdin=producer.stdout, tmpdir=tmp_path)
        still_writing = producer.poll() is None  # the end of the stream was not waited for
        producer.kill()
    assert (p.returncode, p.stderr.decode().strip()) == (2, line)
    assert still_writing
    assert not list(tmp_path.glob(f"{spool.SPOOL_PREFIX}*"))


def _write_bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path
