"""What the kernel backend needs from the machine, and facts about the running kernel.

``check_environment`` refuses with a one-line reason (the CLI exits 3) when a capability is missing: root
(CAP_SYS_ADMIN, CAP_NET_ADMIN), network namespaces, iproute2, tracefs and its two events, veth and vxlan,
the bpf syscall.

Left out: probing by building a namespace (``run_kernel`` reports the exact failing step if one fails).
"""

from __future__ import annotations

import gzip
import os
import platform
import re
import shutil
import time
from itertools import pairwise
from pathlib import Path

from gro_replay.oracle import bpf

CAP_NET_ADMIN = 12
CAP_SYS_ADMIN = 21


class OracleUnavailable(Exception):
    """The kernel backend cannot run on this machine; ``str()`` is a one-line reason."""


class OracleError(Exception):
    """The kernel backend ran but could not produce a trustworthy result; ``str()`` is a one-line reason."""


def kernel_release() -> str:
    """``uname -r``, e.g. '6.18.44-fc-v782'."""
    return platform.release()


def kernel_identity(proc: Path = Path("/proc")) -> str:
    """The running kernel named by the longest string ``kernel.release.resolve_kernel`` takes (kernel/banner.py):
    Ubuntu's ``/proc/version_signature`` (its last field is the upstream stable release the build is based on),
    else ``/proc/version`` (``uname -r`` and ``uname -v``: Debian's names its package version, e.g. 'Debian
    5.10.162-1'), else ``uname -r``: Debian 11 and Ubuntu 20.04 kernels then resolve with their stable backports
    instead of an assumed bare X.Y.0. ``proc``: where procfs is mounted (tests). Raises nothing."""
    for name in ("version_signature", "version"):
        try:
            text = (proc / name).read_text(errors="replace").strip()
        except OSError:
            continue
        if text:
            return text
    return kernel_release()


def kernel_config() -> dict[str, str]:
    """``CONFIG_*`` of the running kernel from /boot/config-<release> or /proc/config.gz ({} if neither)."""
    text = ""
    boot = Path(f"/boot/config-{kernel_release()}")
    try:
        text = boot.read_text()
    except OSError:
        try:
            with gzip.open("/proc/config.gz", "rt") as f:
                text = f.read()
        except OSError:
            return {}
    return dict(re.findall(r"^(CONFIG_\w+)=(.*)$", text, re.M))


def kernel_vlan_offload() -> bool:
    """Whether the running kernel has the VLAN GRO offloads (net/8021q/vlan_core.c ``vlan_offload_init``, built in
    whenever CONFIG_VLAN_8021Q is y or m): from its config, or the 8021q module being loaded; True when neither
    says (the distributions build it), the simulator's default (``ReplayConfig.vlan_offload``)."""
    if Path("/sys/module/8021q").exists():
        return True
    config = kernel_config()
    return config.get("CONFIG_VLAN_8021Q") in ("y", "m") if config else True


def _timer_list_sample() -> tuple[int, int]:
    """(jiffies, ns) from one read of /proc/timer_list: its "now at N nsecs" (ktime_get, CLOCK_MONOTONIC) and the
    first CPU's "jiffies: N", printed within microseconds of each other (kernel/time/timer_list.c). Raises OSError."""
    text = Path("/proc/timer_list").read_text()
    now = re.search(r"^now at (\d+) nsecs", text, re.M)
    jiffies = re.search(r"^jiffies: (\d+)", text, re.M)
    if now is None or jiffies is None:
        raise OSError("no jiffies in /proc/timer_list")
    return int(jiffies[1]), int(now[1])


#: CONFIG_HZ's choices: kernel/Kconfig.hz (HZ_100, HZ_250, HZ_300, HZ_1000) for every architecture but three,
#: which have their own: arch/arm/Kconfig (HZ_100, HZ_200, HZ_250, HZ_300, HZ_500, HZ_1000; HZ_FIXED 128 for
#: AT91RM9200), arch/mips/Kconfig (HZ_24, HZ_48, HZ_100, HZ_128, HZ_250, HZ_256, HZ_1000, HZ_1024),
#: arch/alpha/Kconfig (HZ_32, HZ_64, HZ_128, HZ_256, HZ_1024, HZ_1200); by ``platform.machine()`` prefix
KCONFIG_HZ = (100, 250, 300, 1000)
ARCH_HZ = {
    "alpha": (32, 64, 128, 256, 1024, 1200),
    "mips": (24, 48, 100, 128, 250, 256, 1000, 1024),
    "arm": (100, 128, 200, 250, 300, 500, 1000),
}


def hz_choices(machine: str) -> tuple[int, ...]:
    """The CONFIG_HZ values a kernel of ``machine`` (``uname -m``: "x86_64", "armv7l", "mips64", "alpha") can be
    built with (``ARCH_HZ``, else ``KCONFIG_HZ``; "aarch64"/"arm64" use kernel/Kconfig.hz)."""
    for prefix, choices in ARCH_HZ.items():
        if machine.startswith(prefix) and machine != "arm64":
            return choices
    return KCONFIG_HZ


def measured_hz(choices: tuple[int, ...], sample=_timer_list_sample, sleep=time.sleep) -> int:
    """The one of ``choices`` nearest the rate jiffies advance at: two ``sample`` (jiffies, ns) pairs apart by
    long enough that the rate's error (a jiffy at either end: 2 jiffies over the interval) is under a quarter of
    the closest two choices' distance (mips 250 against 256: 1.33 s; kernel/Kconfig.hz's 250 against 300: 0.2 s).
    Raises OSError."""
    gap = min(b - a for a, b in pairwise(choices))
    j0, t0 = sample()
    sleep(max(0.2, 8 / gap))
    j1, t1 = sample()
    # jiffies is an unsigned long: a 32-bit kernel's wraps 5 minutes after boot (INITIAL_JIFFIES) and every
    # 2**32 jiffies after (include/linux/jiffies.h)
    rate = ((j1 - j0) % (1 << 32) if j1 < j0 else j1 - j0) * 1e9 / max(t1 - t0, 1)
    return min(choices, key=lambda hz: abs(hz - rate))


def kernel_hz() -> int:
    """CONFIG_HZ of the running kernel (Hz); measured from jiffies in /proc/timer_list when no config is found
    (``measured_hz`` among the architecture's choices, ``hz_choices``).

    Raises: OracleUnavailable when neither works.
    """
    hz = kernel_config().get("CONFIG_HZ")
    if hz and hz.isdigit():
        return int(hz)
    try:
        return measured_hz(hz_choices(platform.machine()))
    except OSError as e:
        raise OracleUnavailable(f"cannot tell the kernel's HZ: no kernel config and {e}") from None


def _cap_eff() -> int:
    m = re.search(r"^CapEff:\s*([0-9a-f]+)", Path("/proc/self/status").read_text(), re.M)
    return int(m[1], 16) if m else 0


def _has_driver(name: str, config_key: str, config: dict[str, str]) -> bool:
    if Path("/sys/module", name).exists() or config.get(config_key) in ("y", "m"):
        return True
    moddir = Path("/lib/modules", kernel_release())
    for listing in ("modules.builtin", "modules.dep"):
        try:
            if re.search(rf"/{name}\.ko", (moddir / listing).read_text()):
                return True
        except OSError:
            pass
    return False


def check_environment() -> None:
    """Raise OracleUnavailable naming the first missing capability; return None when all are there."""
    if os.geteuid() != 0:
        raise OracleUnavailable(f"the kernel backend needs root (running as uid {os.geteuid()})")
    caps = _cap_eff()
    for cap, name in ((CAP_SYS_ADMIN, "CAP_SYS_ADMIN"), (CAP_NET_ADMIN, "CAP_NET_ADMIN")):
        if not caps >> cap & 1:
            raise OracleUnavailable(f"the kernel backend needs {name}, which this root process lacks")
    if not Path("/proc/self/ns/net").exists():
        raise OracleUnavailable("no network namespaces (CONFIG_NET_NS) in this kernel")
    if shutil.which("ip") is None:
        raise OracleUnavailable("iproute2's 'ip' command is not installed")
    try:
        filesystems = Path("/proc/filesystems").read_text()
    except OSError:
        filesystems = ""
    if not re.search(r"\ttracefs$", filesystems, re.M):
        raise OracleUnavailable("no tracefs in this kernel (CONFIG_TRACING)")
    config = kernel_config()
    if not _has_driver("veth", "CONFIG_VETH", config):
        raise OracleUnavailable("no veth driver in this kernel (CONFIG_VETH)")
    if not _has_driver("vxlan", "CONFIG_VXLAN", config):
        raise OracleUnavailable("no vxlan driver in this kernel (CONFIG_VXLAN)")
    try:
        bpf.probe()
    except OSError as e:
        raise OracleUnavailable(f"no usable bpf syscall: {e.strerror or e}") from None
