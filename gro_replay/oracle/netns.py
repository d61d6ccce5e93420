"""Network namespaces and devices: ``ip`` for topology, setns(2) and ioctls for the rest.

A network namespace is a property of a thread, not of a process, so ``in_netns`` runs a function in a
short-lived thread that enters the namespace with setns(2) (Python 3.11 has no ``os.setns``); the host's
own namespace is never entered or changed. Sockets and BPF links keep the namespace they were created in,
so fds returned from such a thread stay valid in the caller.

Kernel: kernel/nsproxy.c (setns), net/ethtool/ioctl.c (ETHTOOL_STSO, ETHTOOL_SGRO via
ethtool_set_one_feature), net/core/net-sysfs.c (threaded).

Left out: netlink; ``ip`` from iproute2 builds and deletes everything, which keeps the commands readable
and identical to the recipe's.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import re
import socket
import struct
import subprocess
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

CLONE_NEWNET = 0x40000000
SIOCETHTOOL = 0x8946
ETHTOOL_STSO = 0x1F
ETHTOOL_SGRO = 0x2C

_libc = ctypes.CDLL(None, use_errno=True)


class CommandError(RuntimeError):
    """An ``ip`` or shell command inside a namespace failed; the message is its one-line stderr."""


def ip(*args: str, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess:
    """Run ``ip ARGS`` (``stdin``: text for ``-batch -``).

    Raises: CommandError (with ip's stderr) when ``check`` and it fails.
    """
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, input=stdin or "")
    if check and proc.returncode != 0:
        msg = " ".join(proc.stderr.split()) or f"exit {proc.returncode}"
        raise CommandError(f"ip {' '.join(args)}: {msg}")
    return proc


def ip_batch(lines: list[str], *, ns: str | None = None, force: bool = False) -> subprocess.CompletedProcess:
    """Run several ``ip`` commands in one process (``ip [-n NS] -batch -``), stopping at the first failure
    unless ``force``. Raises: CommandError naming the failed command when not ``force``."""
    args = (["-n", ns] if ns else []) + (["-force"] if force else []) + ["-batch", "-"]
    proc = ip(*args, check=False, stdin="\n".join(lines) + "\n")
    if not force and proc.returncode != 0:
        failed = re.search(r"Command failed -:(\d+)", proc.stderr)
        cmd = lines[int(failed[1]) - 1] if failed else "; ".join(lines)
        msg = " ".join(line for line in proc.stderr.splitlines() if "Command failed" not in line)
        raise CommandError(f"ip {'-n ' + ns + ' ' if ns else ''}{cmd}: {' '.join(msg.split()) or 'failed'}")
    return proc


def write_sysctl(ns: str, key: str, value: str) -> None:
    """Write ``/proc/sys/<key>`` (dots as slashes) of namespace ``ns`` (net sysctls follow the writing
    thread's namespace). Raises: OSError."""

    def write() -> None:
        with open("/proc/sys/" + key.replace(".", "/"), "w") as f:
            f.write(value)

    in_netns(ns, write)


def netns_path(name: str) -> str:
    return f"/run/netns/{name}"


def setns(fd: int) -> None:
    """Move the calling thread into the network namespace ``fd``. Raises: OSError."""
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


def in_netns(name: str, fn: Callable[[], T]) -> T:
    """Run ``fn()`` in a fresh thread that has entered network namespace ``name``; return its result.

    Raises: whatever ``fn`` raised, OSError when the namespace cannot be entered.
    """
    box: dict[str, object] = {}

    def body() -> None:
        try:
            fd = os.open(netns_path(name), os.O_RDONLY | os.O_CLOEXEC)
            try:
                setns(fd)
            finally:
                os.close(fd)
            box["result"] = fn()
        except BaseException as e:  # handed over to the calling thread
            box["error"] = e

    t = threading.Thread(target=body, name=f"netns-{name}", daemon=True)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["result"]  # type: ignore[return-value]


def ethtool_set(ifname: str, cmd: int, value: int) -> None:
    """Legacy ETHTOOL ``S*`` ioctl (e.g. ETHTOOL_SGRO 1 = ``ethtool -K dev gro on``) in the calling
    thread's namespace. Raises: OSError."""
    ev = ctypes.create_string_buffer(struct.pack("=II", cmd, value))
    ifr = struct.pack("16sP16x", ifname.encode(), ctypes.addressof(ev))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        fcntl.ioctl(s.fileno(), SIOCETHTOOL, ifr)


def sh_in_netns(name: str, script: str) -> None:
    """Run a shell script under ``ip netns exec`` (which mounts the namespace's own /sys).

    Raises: CommandError.
    """
    ip("netns", "exec", name, "sh", "-ec", script)
