"""A private tracefs instance recording what each GRO stage delivered.

tracefs is one filesystem for the whole machine: an instance created through any mount of it is seen
through every other. When the host has it mounted (``/sys/kernel/tracing``, or ``tracing/`` under a
mounted debugfs) that mount is used. Otherwise a helper child mounts it inside its own, private mount
namespace and the instance is reached through ``/proc/<child>/root``: the host's mount table is never
touched, and the mount disappears with the child.

Kernel: kernel/trace/trace.c (instances, buffer_size_kb, tracing_on), include/trace/events/net.h
(netif_receive_skb: ``dev=%s skbaddr=%p len=%u``; napi_gro_receive_entry, net/core/gro.c ``napi_gro_receive``:
``dev=%s napi_id=%#x queue_mapping=%u skbaddr=%p …``), include/trace/events/napi.h (napi_poll: ``napi poll on
napi struct %p for device %s work %d budget %d``). ``%p`` prints a pointer hashed per boot: equal addresses print
equal.

Left out: trace_pipe streaming; the buffer is sized for the run and an overrun is reported.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

_CHILD = str(Path(__file__).with_name("_child.py"))

RECEIVE_RE = re.compile(r"\s(\d+\.\d+): netif_receive_skb: dev=(\S+) skbaddr=(\S+) len=(\d+)")
ENTRY_RE = re.compile(r"\s(\d+\.\d+): napi_gro_receive_entry: dev=(\S+) .*?skbaddr=(\S+) .*? len=(\d+) ")
POLL_RE = re.compile(r"\s(\d+\.\d+): napi_poll: .* for device (\S+) work (-?\d+)")


@dataclass(frozen=True)
class TraceEvent:
    """One parsed trace line: ``kind`` 'receive' (``netif_receive_skb``, value = skb len, ``addr`` its skb),
    'entry' (``napi_gro_receive_entry``: an skb entering GRO, value = its len, ``addr`` its skb) or 'poll'
    (``napi_poll``, value = work)."""

    kind: str
    ts: float
    dev: str
    value: int
    addr: str = ""


def parse_trace(text: str) -> list[TraceEvent]:
    """Events of a ``trace`` file's text, in trace order; other lines (headers, comments) are ignored."""
    out: list[TraceEvent] = []
    for line in text.splitlines():
        m = RECEIVE_RE.search(line)
        if m:
            out.append(TraceEvent("receive", float(m[1]), m[2], int(m[4]), m[3]))
            continue
        m = ENTRY_RE.search(line)
        if m:
            out.append(TraceEvent("entry", float(m[1]), m[2], int(m[4]), m[3]))
            continue
        m = POLL_RE.search(line)
        if m:
            out.append(TraceEvent("poll", float(m[1]), m[2], int(m[3])))
    return out


def host_mount() -> Path | None:
    """The host's tracefs mount point, if the host has one (from /proc/self/mountinfo)."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, fstype = left.split(), right.split()[:1]
        if fstype == ["tracefs"]:
            return Path(fields[4])
        if fstype == ["debugfs"] and Path(fields[4], "tracing", "instances").is_dir():
            return Path(fields[4], "tracing")
    return None


def _pipes(proc: subprocess.Popen[bytes]) -> tuple[IO[bytes], IO[bytes], IO[bytes]]:
    """The stdin, stdout and stderr of ``proc``, started with all three piped. Raises: ValueError otherwise."""
    if proc.stdin is None or proc.stdout is None or proc.stderr is None:
        raise ValueError("the tracefs child was started without its three pipes")
    return proc.stdin, proc.stdout, proc.stderr


class Tracefs:
    """Access to the tracefs root, mounting it privately in a helper child when the host has no mount.

    Use as a context manager; ``root`` is valid until ``close()``.
    """

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        mounted = host_mount()
        self.root = mounted if mounted is not None else self._mount_private()

    def _mount_private(self) -> Path:
        if shutil.which("unshare"):  # util-linux: starts in a few ms, Python in tens
            script = "mount -t tracefs tracefs /sys/kernel/tracing && echo mounted && exec cat >/dev/null"
            argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script]
        else:
            argv = [sys.executable, "-I", "-S", _CHILD, "tracefs", str(os.getpid())]
        # own session: a Ctrl-C meant for the caller must not take the mount away before cleanup;
        # the child ends when its stdin closes, which a dying caller also does
        self._proc = proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        stdin, stdout, stderr = _pipes(proc)
        line = stdout.readline().decode().strip()
        if line != "mounted":
            err = stderr.read().decode().strip().splitlines()
            self.close()
            raise OSError(f"cannot mount tracefs privately: {err[-1] if err else line or 'no answer'}")
        return Path(f"/proc/{proc.pid}/root/sys/kernel/tracing")

    def instances(self) -> list[str]:
        return sorted(os.listdir(self.root / "instances"))

    def close(self) -> None:
        if self._proc is not None:
            proc, self._proc = self._proc, None
            stdin, stdout, stderr = _pipes(proc)
            try:
                stdin.close()  # the child exits on EOF
                proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait()
            stdout.close()
            stderr.close()

    def __enter__(self) -> Tracefs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def trace_instances() -> list[str]:
    """Names of the machine's tracefs instances (to check that a run left none behind)."""
    with Tracefs() as t:
        return t.instances()


#: the events an instance records (``TraceInstance.create``)
_EVENTS = ("net/netif_receive_skb", "net/napi_gro_receive_entry", "napi/napi_poll")


class TraceInstance:
    """``instances/<name>`` with ``net:netif_receive_skb``, ``net:napi_gro_receive_entry`` and ``napi:napi_poll``
    filtered on ``devs``."""

    def __init__(self, tracefs: Tracefs, name: str) -> None:
        self.path = tracefs.root / "instances" / name
        self.created = False

    def create(self, devs: list[str], buffer_kb: int) -> None:
        """Make the instance and arm its events (tracing stays off until ``start``)."""
        # True before mkdir: a KeyboardInterrupt raised at the first bytecode after a successful mkdir
        # (still inside the try) must leave the instance to remove(); only mkdir's own failure means none
        self.created = True
        try:
            self.path.mkdir()  # a new instance starts with tracing_on 1 and no event enabled
        except OSError:
            self.created = False
            raise
        self._write("tracing_on", "0")
        self._write("buffer_size_kb", str(buffer_kb))
        names = " || ".join(f'name == "{d}"' for d in devs)
        dev_names = " || ".join(f'dev_name == "{d}"' for d in devs)
        for event in _EVENTS:
            self._write(f"events/{event}/filter", dev_names if event == "napi/napi_poll" else names)
            self._write(f"events/{event}/enable", "1")

    def _write(self, rel: str, value: str) -> None:
        with open(self.path / rel, "w") as f:
            f.write(value)

    def size_cpu(self, cpu: int, buffer_kb: int) -> None:
        """Grow the buffer of one CPU (the NAPI CPU, where the events land)."""
        self._write(f"per_cpu/cpu{cpu}/buffer_size_kb", str(buffer_kb))

    def start(self) -> None:
        with open(self.path / "trace", "w"):  # O_TRUNC clears the buffer
            pass
        self._write("tracing_on", "1")

    def stop(self) -> None:
        self._write("tracing_on", "0")

    def entries(self) -> int:
        """Events currently in the buffer (all CPUs)."""
        return sum(s["entries"] for s in self._stats())

    def overrun(self) -> int:
        """Events lost because the buffer was full (all CPUs)."""
        return sum(s["overrun"] + s.get("dropped events", 0) for s in self._stats())

    def _stats(self) -> list[dict[str, int]]:
        out = []
        for cpu in sorted((self.path / "per_cpu").iterdir()):
            stats: dict[str, int] = {}
            for line in (cpu / "stats").read_text().splitlines():
                key, _, val = line.partition(":")
                val = val.strip()
                if val.isdigit():
                    stats[key.strip()] = int(val)
            out.append(stats)
        return out

    def read(self) -> list[TraceEvent]:
        return parse_trace((self.path / "trace").read_text())

    def remove(self) -> None:
        """Disable the events and remove the instance if this object created it; safe to call twice."""
        if not self.created or not self.path.exists():
            self.created = False
            return
        for rel in ("tracing_on", *(f"events/{event}/enable" for event in _EVENTS)):
            try:
                self._write(rel, "0")
            except OSError:
                pass
        for delay in (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 0):
            try:
                self.path.rmdir()
                break
            except OSError as e:
                # EBUSY while any file of the instance is open, also a copy inherited by a child that
                # another thread has forked and not yet exec'ed
                if e.errno != errno.EBUSY or not delay:
                    raise
                time.sleep(delay)
        self.created = False
