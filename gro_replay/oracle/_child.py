"""Helper processes of the kernel backend, run as ``python -I _child.py ROLE ...`` (standard library only).

``tracefs PARENT_PID``
    Enter a private mount namespace, mount tracefs on /sys/kernel/tracing there, print ``mounted`` and
    stay until stdin closes (the parent reaches the mount through ``/proc/<pid>/root``).
``inject NETNS_PATH IFNAME CPU PARENT_PID CHUNK SLEEP_S``
    Read frames from stdin (each a 4-byte little-endian length and the bytes), enter the sender's network
    namespace, pin to CPU, become SCHED_FIFO 50 and send them on an AF_PACKET socket in chunks of CHUNK
    frames with SLEEP_S seconds between chunks; print ``sent N waited W``. A frame refused with ENOBUFS (the
    receiving veth's ring was full and veth_xmit dropped it: the NAPI thread did not run in a sleep, e.g. while
    the hypervisor held the CPU) is sent again after a sleep, W counts those sleeps; the ring then holds whole
    polls as before, as every poll took 64 frames and the ring is 256, so the parent's poll-shape check still
    decides whether the run is usable.

Both die with their parent (PR_SET_PDEATHSIG), so nothing outlives a killed run.
Kernel: kernel/nsproxy.c (setns), net/packet/af_packet.c (packet_snd), kernel/sched/syscalls.c.
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import socket
import struct
import sys
import time

CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
PR_SET_PDEATHSIG = 1
SO_SNDBUFFORCE = 32
SNDBUF = 64 << 20
FIFO_PRIORITY = 50

FULL_RING_PATIENCE_S = 5.0  #: how long one frame may wait for the veth ring to drain

libc = ctypes.CDLL(None, use_errno=True)


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _die_with_parent(parent_pid: int) -> None:
    _check(
        libc.prctl(
            PR_SET_PDEATHSIG,
            ctypes.c_ulong(signal.SIGKILL),
            ctypes.c_ulong(0),
            ctypes.c_ulong(0),
            ctypes.c_ulong(0),
        ),
        "prctl",
    )
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        sys.exit(1)


def tracefs(parent_pid: int) -> None:
    _die_with_parent(parent_pid)
    _check(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    # private propagation first, or the mount below would leak into the host's namespace
    _check(libc.mount(None, b"/", None, ctypes.c_ulong(MS_REC | MS_PRIVATE), None), "mount --make-rprivate /")
    _check(
        libc.mount(b"tracefs", b"/sys/kernel/tracing", b"tracefs", ctypes.c_ulong(0), None), "mount tracefs"
    )
    print("mounted", flush=True)
    sys.stdin.buffer.read()


def _read_frames(buf: bytes) -> list[bytes]:
    frames, off = [], 0
    while off < len(buf):
        (n,) = struct.unpack_from("<I", buf, off)
        frames.append(buf[off + 4 : off + 4 + n])
        off += 4 + n
    return frames


def inject(netns: str, ifname: str, cpu: int, parent_pid: int, chunk: int, sleep_s: float) -> None:
    _die_with_parent(parent_pid)
    frames = _read_frames(sys.stdin.buffer.read())
    fd = os.open(netns, os.O_RDONLY)
    _check(libc.setns(fd, CLONE_NEWNET), "setns")
    os.close(fd)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)  # protocol 0: send only, receives nothing
    s.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, SNDBUF)
    s.bind((ifname, 0))
    os.sched_setaffinity(0, {cpu})
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(FIFO_PRIORITY))
    sent = waited = 0
    for start in range(0, len(frames), chunk):
        if start:
            time.sleep(sleep_s)  # lets the NAPI thread on this CPU drain the veth ring in whole polls
        for frame in frames[start : start + chunk]:
            waited += _send(s, frame, sleep_s)
            sent += 1
    s.close()
    print(f"sent {sent} waited {waited}", flush=True)


def _send(s: socket.socket, frame: bytes, sleep_s: float) -> int:
    """Send one frame, sleeping ``sleep_s`` and sending again while the veth ring is full (ENOBUFS: veth_xmit
    dropped it, so nothing of it was delivered); returns the number of sleeps. Raises OSError on any other
    error, or when the ring stays full for FULL_RING_PATIENCE_S."""
    sleeps, deadline = 0, time.monotonic() + FULL_RING_PATIENCE_S
    while True:
        try:
            s.send(frame)
            return sleeps
        except OSError as e:
            if e.errno != errno.ENOBUFS or time.monotonic() > deadline:
                raise
        time.sleep(sleep_s)
        sleeps += 1


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when we stop
    try:
        if argv[0] == "tracefs":
            tracefs(int(argv[1]))
        elif argv[0] == "inject":
            inject(argv[1], argv[2], int(argv[3]), int(argv[4]), int(argv[5]), float(argv[6]))
        else:
            raise ValueError(f"unknown role {argv[0]!r}")
    except OSError as e:
        print(f"{argv[0]}: {e}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
