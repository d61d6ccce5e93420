"""Replay frames through the running kernel and record what each GRO stage delivered.

One run (docs/kernel-backend.md, "gro-replay kernel"): two private network namespaces joined by a veth pair with one
queue each; the sender end carries the capture's outer source MAC/IP, the receiving end ("phys" stage: veth
NAPI GRO, threaded, pinned) its outer destination MAC/IP, and a ``vxlan external`` device beside it ("tunnel"
stage: gro_cells) for each VXLAN UDP port asked for (each device binds its own socket, so a frame reaches the
device of its destination port and the gro_cells of one device never see two destination ports), made with
``gbp`` when the Group Based Policy extension is asked for. A child process in the sender namespace writes the
frames to an AF_PACKET socket in chunks of 192 from SCHED_FIFO on the NAPI thread's CPU, so that every poll
takes exactly 64 frames; a private tracefs instance records ``netif_receive_skb`` and ``napi_poll`` of the
receiving devices. The poll shape is checked (every poll 64 or 0 but the last) and the run repeated when it does
not hold.

NIC checksum state: plain injection arrives CHECKSUM_NONE; a tcx egress program on the sender calling
``bpf_csum_level(INC)`` level+1 times makes it CHECKSUM_UNNECESSARY at that level. ``defer_to_tunnel``
attaches a generic-XDP pass program to the receiving veth, so its GRO is elided and gro_cells aggregate.
Outer IPv4 or IPv6 (IPv6 enabled on the receiving veth only, address without DAD); ``udp6_zero_csum_rx`` makes
the tunnel devices with ``udp6zerocsumrx``; ``tunnel_gro=False`` is ``ethtool -K <vxlan> gro off``
(``gro_cells_receive`` then uses ``netif_rx``).

Kernel: drivers/net/veth.c (veth_xmit, veth_poll), net/core/gro.c, drivers/net/vxlan/vxlan_core.c,
net/core/gro_cells.c, net/core/dev.c (netif_elide_gro, napi_threaded_poll).

Left out: outer VLAN tags and non-IP frames (counted, not sent); several outer destinations (counted as
``outer_destination_differs``; adding each destination's address would be the way); Geneve on kernels
without it (``geneve_not_built_in``); CHECKSUM_COMPLETE; HZ >= 1000 kernels' partial flush at budget end;
the pre-fix kernel logic (only *where* pre-fix aggregation happened is shown, with ``defer_to_tunnel``).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import ipaddress
import logging
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gro_replay.kernel.names import BACKEND_GENEVE_PORT
from gro_replay.oracle import bpf, netns
from gro_replay.oracle.env import (
    OracleError,
    OracleUnavailable,
    check_environment,
    kernel_config,
    kernel_hz,
    kernel_identity,
    kernel_release,
    kernel_vlan_offload,
)
from gro_replay.oracle.tracefs import TraceEvent, Tracefs, TraceInstance
from gro_replay.packet.headers import outer_udp

log = logging.getLogger(__name__)

NAPI_POLL_WEIGHT = 64  #: NAPI_POLL_WEIGHT, the veth poll budget
CHUNK = 3 * NAPI_POLL_WEIGHT  #: a multiple of the budget below the veth ring (VETH_RING_SIZE 256)
CHUNK_SLEEP_S = 0.002
NAPI_FIFO_PRIORITY = 49  #: the injector runs at 50
GENEVE_PORT = BACKEND_GENEVE_PORT  #: its geneve device's UDP port (kernel/names.py)
RX_CSUM = ("none", "unnecessary")

ETH_P_IP = 0x0800
ETH_P_IPV6 = 0x86DD

ETH_P_8021Q = 0x8100
ETH_P_8021AD = 0x88A8

#: Reasons a frame is not sent, the keys of ``OracleResult.frames_not_replayable``.
NOT_REPLAYABLE = (
    "outer_destination_differs",  # outer family, destination MAC or IP differs from the first IP frame's
    "geneve_not_built_in",  # UDP port 6081 and no Geneve in this kernel
    "outer_vlan_unsupported",  # 802.1Q/802.1ad-tagged outer frame: no VLAN device is built
    "outer_not_ip",  # ARP, LLDP, ...
    "truncated",  # shorter than its outer Ethernet/IP headers
)


@dataclass
class KernelDelivery:
    """One ``netif_receive_skb`` of a receiving device: ``len`` is skb->len after the Ethernet header."""

    dev_role: str  # 'phys' (receiving veth) or 'tunnel' (vxlan device)
    dev: str
    len: int
    ts: float  # trace timestamp, seconds
    #: the position in the frames sent (``OracleResult.sent``) of the first frame the skb carries, known by its
    #: address (``_Run._heads``), or None
    head: int | None = None
    #: the skb's address as the trace prints it (``%p``: hashed per boot, hex digits), or ""
    addr: str = ""


@dataclass
class OracleResult:
    """What the kernel delivered for one replay (the attempt that passed the self-check)."""

    deliveries: list[KernelDelivery]  # trace order
    polls: list[tuple[str, int]]  # (dev, work) of every napi_poll of the receiving devices
    kernel_release: str
    hz: int
    frames_sent: int
    frames_not_replayable: dict[str, int]  # reason -> count
    attempts: int
    sent: list[int] = field(default_factory=list)  # indices into ``frames`` of the frames sent, in order
    #: index into ``frames`` → reason, of each frame not sent (``frames_not_replayable`` counts them)
    unsent: dict[int, str] = field(default_factory=dict)
    devices: dict[str, str] = field(default_factory=dict)  # device name -> 'phys' | 'tunnel'
    tunnel_ports: dict[str, int] = field(default_factory=dict)  # tunnel device name -> its UDP port
    #: the running kernel's longest name (env.kernel_identity: /proc/version_signature or /proc/version), resolved
    #: instead of ``kernel_release`` where it parses (Debian's and Ubuntu's name their stable release)
    kernel_identity: str = ""
    #: whether the running kernel has the VLAN GRO offloads (env.kernel_vlan_offload: CONFIG_VLAN_8021Q)
    vlan_offload: bool = True


@dataclass
class _Plan:
    family: int
    src_mac: bytes
    dst_mac: bytes
    src_ip: str
    dst_ip: str
    sent: list[int]
    #: index → reason of each frame not sent, in order
    unsent: dict[int, str]
    geneve: bool
    mtu: int
    #: the frames' destination MAC can be no veth's address (a Linux cooked or raw IP capture's frames carry
    #: 00:00:00:00:00:00; a multicast one): the frames sent carry ``dst_mac``, a locally administered address, there
    rewrite_dst: bool = False

    @property
    def not_replayable(self) -> dict[str, int]:
        """The frames not sent, counted per reason (``OracleResult.frames_not_replayable``), in order of first
        occurrence."""
        counts: dict[str, int] = {}
        for reason in self.unsent.values():
            counts[reason] = counts.get(reason, 0) + 1
        return counts


#: the veth addresses for frames whose own cannot be one (``_unicast``): locally administered (02:…)
_LOCAL_SRC_MAC, _LOCAL_DST_MAC = bytes.fromhex("020000000001"), bytes.fromhex("020000000002")


def _unicast(mac: bytes) -> bool:
    """Whether ``mac`` can be a device's address: not all zero, not multicast (the I/G bit of its first byte)."""
    return any(mac) and not mac[0] & 1


def _mac(b: bytes) -> str:
    return ":".join(f"{x:02x}" for x in b)


def _outer(frame: bytes) -> tuple[int, bytes, bytes, bytes, int | None] | str:
    """(family, dst mac, src ip, dst ip, UDP dport or None) of a frame's outer headers, or a skip reason."""
    if len(frame) < 14:
        return "truncated"
    ethertype = int.from_bytes(frame[12:14], "big")
    if ethertype == ETH_P_IP:
        if len(frame) < 34:
            return "truncated"
        return 4, frame[0:6], frame[26:30], frame[30:34], _dport(frame)
    if ethertype == ETH_P_IPV6:
        if len(frame) < 54:
            return "truncated"
        return 6, frame[0:6], frame[22:38], frame[38:54], _dport(frame)
    if ethertype in (ETH_P_8021Q, ETH_P_8021AD):
        return "outer_vlan_unsupported"
    return "outer_not_ip"


def _dport(frame: bytes) -> int | None:
    """The outer UDP destination port (packet/headers.py ``outer_udp``: IPv6 extension headers walked), or None."""
    u = outer_udp(frame)
    return None if u is None else int.from_bytes(frame[u + 2 : u + 4], "big")


def geneve_available() -> bool:
    """Whether this kernel can make a Geneve device (CONFIG_GENEVE y/m or the module loaded)."""
    return Path("/sys/module/geneve").exists() or kernel_config().get("CONFIG_GENEVE") in ("y", "m")


def plan_frames(frames: Sequence[bytes], *, geneve: bool, outer_tagged: Collection[int] = ()) -> _Plan:
    """Decide which frames are sent and which addresses the two veth ends carry (those of the first IP
    frame); the others are kept with their reason (``unsent``). ``sent`` is empty when nothing can be sent.
    ``outer_tagged``: the indices of frames whose outer VLAN tags the reader took off (the replay's skb
    ``vlan_tci``): no VLAN device is built, so they are not sent (``outer_vlan_unsupported``), as a frame that
    still carries its tag is not."""
    skipped: dict[int, str] = {}
    sent: list[int] = []
    ref: tuple[int, int, bytes, bytes] | None = None
    uses_geneve = False
    for i, frame in enumerate(frames):
        o = "outer_vlan_unsupported" if i in outer_tagged else _outer(bytes(frame[:60]))
        if isinstance(o, str):
            skipped[i] = o
            continue
        family, dst_mac, _src, dst, dport = o
        if ref is None:
            ref = (i, family, dst_mac, dst)
        if (family, dst_mac, dst) != ref[1:]:
            reason = "outer_destination_differs"
        elif dport == GENEVE_PORT and not geneve:
            reason = "geneve_not_built_in"
        else:
            sent.append(i)
            uses_geneve |= dport == GENEVE_PORT
            continue
        skipped[i] = reason
    plan = _Plan(4, b"", b"", "", "", sent, skipped, uses_geneve, 1500)
    if ref is not None:
        first = bytes(frames[ref[0]])
        o = _outer(first)
        assert not isinstance(o, str)
        plan.family, plan.src_mac, plan.dst_mac = o[0], first[6:12], first[0:6]
        # the same destination for every frame sent (the test above), rewritten alike: dev_gro_receive compares
        # the frames' MAC headers with each other, which stay equal where they were
        if not _unicast(plan.dst_mac):
            plan.dst_mac, plan.rewrite_dst = _LOCAL_DST_MAC, True
        if not _unicast(plan.src_mac) or plan.src_mac == plan.dst_mac:
            plan.src_mac = _LOCAL_SRC_MAC  # the sending veth's own address only: the frames keep theirs
        plan.src_ip, plan.dst_ip = str(ipaddress.ip_address(o[2])), str(ipaddress.ip_address(o[3]))
    if sent:
        plan.mtu = max(1500, max(len(frames[i]) for i in sent) - 14)
    return plan


# -- signals ---------------------------------------------------------------------------------------------


def _sigterm_exit(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    """While the block runs, SIGTERM unwinds the stack (SystemExit 143) instead of killing the process
    outright, so that cleanup runs; only in the main thread and only over the default action."""
    in_main = threading.current_thread() is threading.main_thread()
    if not in_main or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
        yield
        return
    signal.signal(signal.SIGTERM, _sigterm_exit)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGINT/SIGTERM while the block runs (cleanup must not be cut short), then deliver them."""
    sigs = (signal.SIGINT, signal.SIGTERM)
    prev = {s: signal.getsignal(s) for s in sigs}
    if threading.current_thread() is not threading.main_thread() or None in prev.values():
        yield
        return
    pending: list[int] = []
    for s in sigs:
        signal.signal(s, lambda signum, frame: pending.append(signum))
    try:
        yield
    finally:
        for s, handler in prev.items():
            signal.signal(s, handler)
        for signum in pending[:1]:
            signal.raise_signal(signum)


# -- one run ---------------------------------------------------------------------------------------------


class _Run:
    """The namespaces, devices, BPF links, trace instance and injector of one attempt; ``close`` undoes
    all of it and is safe after a partial setup."""

    def __init__(
        self,
        tracefs: Tracefs,
        plan: _Plan,
        frames: Sequence[bytes],
        *,
        n_inc: int,
        defer: bool,
        vxlan_ports: tuple[int, ...],
        udp6_zero_csum_rx: bool = False,
        tunnel_gro: bool = True,
        vxlan_gbp: bool = False,
    ) -> None:
        token = secrets.token_hex(4)
        base = f"groreplay-{os.getpid()}-{token}"
        self.ns_send, self.ns_recv = f"{base}-a", f"{base}-b"
        # device names are global in the trace; 10 characters keep "napi/<dev>" whole in a 15-char comm
        self.send, self.recv = f"g{token}s", f"g{token}r"
        self.vxlan, self.geneve = f"g{token}v", f"g{token}g"
        self.plan, self.frames, self.n_inc, self.defer = plan, frames, n_inc, defer
        self.udp6_zero_csum_rx, self.tunnel_gro, self.vxlan_gbp = udp6_zero_csum_rx, tunnel_gro, vxlan_gbp
        self.trace = TraceInstance(tracefs, base)
        self.link_fds: list[int] = []
        self.injector: subprocess.Popen | None = None
        # one vxlan device per port (each binds its own UDP socket: vxlan_sock_add), named g<token>v, g<token>v1, ...
        self.vxlan_devs = {
            (self.vxlan if i == 0 else f"{self.vxlan}{i}"): p for i, p in enumerate(vxlan_ports)
        }
        self.devices = {self.recv: "phys"} | dict.fromkeys(self.vxlan_devs, "tunnel")
        self.tunnel_ports = dict(self.vxlan_devs)
        if plan.geneve:
            self.devices[self.geneve] = "tunnel"
            self.tunnel_ports[self.geneve] = GENEVE_PORT

    # setup

    def build(self) -> None:
        p = self.plan
        a, b = self.ns_send, self.ns_recv
        netns.ip_batch([f"netns add {a}", f"netns add {b}"])
        for ns in (a, b):  # no IPv6: neighbour discovery would show up in the traces
            for conf in ("all", "default"):
                netns.write_sysctl(ns, f"net.ipv6.conf.{conf}.disable_ipv6", "1")
        one_queue = f"mtu {p.mtu} numtxqueues 1 numrxqueues 1"
        send = [
            f"link add {self.send} address {_mac(p.src_mac)} {one_queue} type veth"
            f" peer name {self.recv} netns {b} address {_mac(p.dst_mac)} {one_queue}",
            f"link set {self.send} up",
        ]
        zero6 = " udp6zerocsumrx" if self.udp6_zero_csum_rx else ""
        gbp = " gbp" if self.vxlan_gbp else ""
        recv = [
            f"link add {d} type vxlan external dstport {p}{gbp}{zero6}" for d, p in self.vxlan_devs.items()
        ]
        recv += [f"link add {self.geneve} type geneve external{zero6}"] if p.geneve else []
        recv += [f"link set {dev} up" for dev in self.devices if dev != self.recv]
        if p.family == 4:
            send.append(f"addr add {p.src_ip}/32 dev {self.send}")
            recv.append(f"addr add {p.dst_ip}/32 dev {self.recv}")
        else:
            recv.append(f"link set {self.recv} addrgenmode none")  # no link-local address to announce
        netns.ip_batch(send, ns=a)
        netns.ip_batch(recv, ns=b)
        if p.family == 6:
            # IPv6 on the receiving veth only, and without DAD: nothing is solicited
            netns.write_sysctl(b, f"net.ipv6.conf.{self.recv}.disable_ipv6", "0")
            netns.ip_batch([f"addr add {p.dst_ip}/128 dev {self.recv} nodad"], ns=b)
        # with TSO on, veth_xmit() bypasses NAPI for these skbs; veth GRO is off by default
        netns.in_netns(a, lambda: netns.ethtool_set(self.send, netns.ETHTOOL_STSO, 0))
        netns.in_netns(b, lambda: netns.ethtool_set(self.recv, netns.ETHTOOL_SGRO, 1))
        if not self.tunnel_gro:
            # ethtool -K <vxlan> gro off: gro_cells_receive hands every skb to netif_rx (netif_elide_gro)
            for dev in self.devices:
                if dev != self.recv:
                    netns.in_netns(b, functools.partial(netns.ethtool_set, dev, netns.ETHTOOL_SGRO, 0))
        netns.ip_batch([f"link set {self.recv} up"], ns=b)
        netns.sh_in_netns(b, f"echo 1 > /sys/class/net/{self.recv}/threaded")
        if self.n_inc:
            prog = bpf.csum_level_prog(self.n_inc)
            self._attach(a, self.send, bpf.BPF_PROG_TYPE_SCHED_CLS, prog, bpf.BPF_TCX_EGRESS, 0)
        if self.defer:
            prog = bpf.xdp_pass_prog()
            self._attach(b, self.recv, bpf.BPF_PROG_TYPE_XDP, prog, bpf.BPF_XDP, bpf.XDP_FLAGS_SKB_MODE)

    def _attach(self, ns: str, dev: str, prog_type: int, insns: bytes, attach_type: int, flags: int) -> None:
        prog_fd = bpf.prog_load(prog_type, insns, expected_attach_type=attach_type, name="groreplay")
        try:
            link = netns.in_netns(
                ns, lambda: bpf.link_create(prog_fd, socket.if_nametoindex(dev), attach_type, flags)
            )
            self.link_fds.append(link)
        finally:
            os.close(prog_fd)  # the link holds the program

    def _napi_thread(self) -> int:
        prefix = f"napi/{self.recv}-"[:15]  # TASK_COMM_LEN
        for d in Path("/proc").iterdir():
            if d.name.isdigit():
                try:
                    if (d / "comm").read_text().startswith(prefix):
                        return int(d.name)
                except OSError:
                    pass
        raise OracleError(f"no threaded NAPI kthread for {self.recv}")

    # replay

    def replay(self, cpu: int) -> tuple[list[KernelDelivery], list[tuple[str, int]]]:
        """Inject from ``cpu`` with the NAPI thread on ``cpu``; the caller holds that CPU's lock."""
        n = len(self.plan.sent)
        napi = self._napi_thread()
        os.sched_setaffinity(napi, {cpu})
        # just below the injector: it drains the ring as soon as the injector sleeps, whatever else runs
        os.sched_setscheduler(napi, os.SCHED_FIFO, os.sched_param(NAPI_FIFO_PRIORITY))
        # events land on the NAPI CPU: per frame in the worst case a GRO entry and a receive at each device (an
        # entry, ~100 bytes, twice a receive's), plus polls
        self.trace.create(list(self.devices), 8192)
        self.trace.size_cpu(cpu, min(max(8192, n * 6 * 64 // 1024 + 1024), 1 << 19))
        self.trace.start()
        dst = self.plan.dst_mac if self.plan.rewrite_dst else b""
        payload = b"".join(
            len(f).to_bytes(4, "little") + dst + bytes(f)[len(dst) :]
            for f in (self.frames[i] for i in self.plan.sent)
        )
        child = str(Path(__file__).with_name("_child.py"))
        args = [self.send, cpu, os.getpid(), CHUNK, CHUNK_SLEEP_S]
        argv = [sys.executable, "-I", "-S", child, "inject", netns.netns_path(self.ns_send), *map(str, args)]
        with _signals_held():  # self.injector must name the child if one was started
            self.injector = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        out, err = self.injector.communicate(payload, timeout=60 + n / 1000)
        if self.injector.returncode != 0:
            raise _AttemptFailed(err.decode().strip().splitlines()[-1] if err.strip() else "injector failed")
        log.debug("injector: %s", out.decode().strip())  # "sent N waited W": W sleeps on a full veth ring
        self._wait_quiet()
        self.trace.stop()
        lost = self.trace.overrun()
        if lost:
            raise OracleError(f"the trace buffer overran ({lost} events lost); replay fewer frames")
        return self._collect(self.trace.read())

    def _wait_quiet(self, quiet_s: float = 0.03, limit_s: float = 5.0) -> None:
        """Wait until no event has been recorded for ``quiet_s``: the veth ring and gro_cells have drained."""
        deadline = time.monotonic() + limit_s
        last, since = -1, time.monotonic()
        while time.monotonic() < deadline:
            now_entries = self.trace.entries()
            if now_entries != last:
                last, since = now_entries, time.monotonic()
            elif time.monotonic() - since >= quiet_s:
                return
            time.sleep(0.005)

    def _collect(self, events: list[TraceEvent]) -> tuple[list[KernelDelivery], list[tuple[str, int]]]:
        events = [e for e in events if e.dev in self.devices]
        heads = self._heads(events)
        deliveries, polls = [], []
        for e in events:
            if e.kind == "receive":
                role = self.devices[e.dev]
                deliveries.append(KernelDelivery(role, e.dev, e.value, e.ts, heads.get(id(e)), e.addr))
            elif e.kind == "poll":
                polls.append((e.dev, e.value))
        return deliveries, polls

    def _heads(self, events: list[TraceEvent]) -> dict[int, int]:
        """Per delivery event (by ``id``): the position in the frames sent of the first frame its skb carries.

        GRO keeps the first skb of a run as the one it delivers (net/core/gro.c ``dev_gro_receive``: a segment that
        starts no new held packet is merged into the held one, ``skb_gro_receive``), and decapsulation hands the
        same skb to the tunnel device (``gro_cells_receive``), so a phys delivery carries the frame whose
        ``napi_gro_receive_entry`` last had its address, and a tunnel delivery the first frame of the phys delivery
        that last had its address. The k-th frame entering the phys device's GRO is the k-th sent (one RX queue, in
        order); when the phys entries are not one per frame sent, nothing is known (oracle/match.py then infers the
        match from lengths alone)."""
        phys = [e for e in events if e.kind == "entry" and self.devices[e.dev] == "phys"]
        if len(phys) != len(self.plan.sent):
            return {}
        entered: dict[str, int] = {}  # address → the position of the frame that last entered with it
        delivered: dict[str, int] = {}  # address → the first frame of the phys delivery that last had it
        heads: dict[int, int] = {}
        k = 0
        for e in events:
            role = self.devices[e.dev]
            if e.kind == "entry" and role == "phys":
                entered[e.addr] = k
                k += 1
            elif e.kind == "receive" and role == "phys" and e.addr in entered:
                heads[id(e)] = delivered[e.addr] = entered[e.addr]
            elif e.kind == "receive" and role == "tunnel" and e.addr in delivered:
                heads[id(e)] = delivered[e.addr]
        return heads

    # teardown

    def close(self) -> list[str]:
        """Undo everything; returns what could not be undone (empty when clean)."""
        problems: list[str] = []
        if self.injector is not None:
            if self.injector.poll() is None:
                self.injector.kill()
            self.injector.wait()
            for f in (self.injector.stdin, self.injector.stdout, self.injector.stderr):
                if f is not None:
                    f.close()
        try:
            self.trace.remove()
        except OSError as e:
            problems.append(f"trace instance {self.trace.path.name}: {e}")
        for fd in self.link_fds:
            os.close(fd)
        self.link_fds.clear()
        left = [ns for ns in (self.ns_recv, self.ns_send) if Path(netns.netns_path(ns)).exists()]
        if left:
            netns.ip_batch([f"netns del {ns}" for ns in left], force=True)
            problems += [
                f"netns {ns} could not be deleted" for ns in left if Path(netns.netns_path(ns)).exists()
            ]
        return problems


class _AttemptFailed(Exception):
    """This attempt produced no usable trace; another may."""


def _self_check(polls: list[tuple[str, int]], recv: str, n_sent: int) -> str | None:
    """None when every poll of the receiving veth took 64 frames or none, but the last, and all frames
    arrived; otherwise the reason, in one line."""
    works = [w for dev, w in polls if dev == recv and w]
    if sum(works) != n_sent:
        return f"the receiving veth polled {sum(works)} of {n_sent} frames"
    bad = [i for i, w in enumerate(works[:-1]) if w != NAPI_POLL_WEIGHT]
    if bad:
        return f"poll {bad[0] + 1} of the receiving veth took {works[bad[0]]} frames, not {NAPI_POLL_WEIGHT}"
    return None


@contextlib.contextmanager
def _tracefs() -> Iterator[Tracefs]:
    with _signals_held():
        try:
            tracefs = Tracefs()
        except OSError as e:
            raise OracleUnavailable(f"no usable tracefs: {e}") from None
    try:
        yield tracefs
    finally:
        with _signals_held():
            tracefs.close()


@contextlib.contextmanager
def _cpu_slot(timeout_s: float = 300.0) -> Iterator[int]:
    """Hold one CPU for injection, exclusive among kernel replays of this host (threads and processes).

    Two injectors on one CPU starve each other's NAPI thread and overflow the veth ring, so each run takes
    a CPU of its own (the last free one this process may use), waiting while all are taken. The lock is
    an abstract unix socket name: no file is left behind, and it is released when its holder dies.
    """
    cpus = sorted(os.sched_getaffinity(0), reverse=True)
    deadline = time.monotonic() + timeout_s
    while True:
        for cpu in cpus:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.bind(f"\0gro-replay/kernel-backend/cpu{cpu}")
            except OSError:
                sock.close()
                continue
            try:
                yield cpu
            finally:
                sock.close()
            return
        if time.monotonic() > deadline:
            raise OracleError(f"other kernel replays held every CPU for {timeout_s:.0f} s")
        time.sleep(0.005)


_LEFTOVER = re.compile(r"groreplay-(\d+)-[0-9a-f]{8}(?:-[ab])?")


def remove_leftovers() -> list[str]:
    """Delete the namespaces and trace instances of kernel replays whose process is gone (killed with
    SIGKILL, say, when no cleanup can run); returns their names. Runs of live processes are untouched.

    Raises: OracleUnavailable without tracefs; OracleError when something could not be removed.
    """

    def orphaned(name: str) -> bool:
        m = _LEFTOVER.fullmatch(name)
        return m is not None and not Path(f"/proc/{m[1]}").exists()

    try:
        namespaces = [n for n in os.listdir("/run/netns") if orphaned(n)]
    except FileNotFoundError:
        namespaces = []
    if namespaces:
        netns.ip_batch([f"netns del {n}" for n in namespaces], force=True)
    with _tracefs() as tracefs:
        instances = [n for n in tracefs.instances() if orphaned(n)]
        for name in instances:
            inst = TraceInstance(tracefs, name)
            inst.created = True
            inst.remove()
    stuck = [n for n in namespaces if Path(netns.netns_path(n)).exists()]
    if stuck:
        raise OracleError(f"could not delete namespaces {', '.join(stuck)}")
    return namespaces + instances


def run_kernel(
    frames: Sequence[bytes],
    *,
    rx_csum: str = "none",
    csum_level: int = 0,
    defer_to_tunnel: bool = False,
    vxlan_port: int | Sequence[int] = 4789,
    retries: int = 3,
    udp6_zero_csum_rx: bool = False,
    tunnel_gro: bool = True,
    vxlan_gbp: bool = False,
    outer_tagged: Collection[int] = (),
) -> OracleResult:
    """Replay ``frames`` (full Ethernet II frames) through the running kernel; see the module docstring.

    Args: rx_csum: 'none' (CHECKSUM_NONE) or 'unnecessary' (CHECKSUM_UNNECESSARY at ``csum_level``, 0..3);
        defer_to_tunnel: elide GRO on the receiving veth with generic XDP; vxlan_port: the vxlan devices' UDP
        ports, one device per port (an int: one device; 6081 is Geneve's); retries: attempts allowed for the
        poll-shape self-check; udp6_zero_csum_rx: tunnel devices made with ``udp6zerocsumrx`` (accept zero
        UDPv6 checksums); tunnel_gro: False turns GRO off on the tunnel devices (``ethtool -K DEV gro off``);
        vxlan_gbp: make the vxlan devices with ``gbp``
        (VXLAN_F_GBP: the Group Based Policy extension is parsed, drivers/net/vxlan/vxlan_core.c
        ``vxlan_parse_gbp_hdr``); outer_tagged: indices of frames whose outer VLAN tags were taken off
        (``plan_frames``: not sent).
    Returns: OracleResult; frames not sent are counted per reason in ``frames_not_replayable`` (see
        ``NOT_REPLAYABLE``), ``sent`` lists the indices of those sent (feed the simulator the same ones).
    Raises: ValueError on bad arguments; OracleUnavailable when the machine lacks a capability;
        OracleError when no attempt passed the self-check or a step failed (one-line message).

    Every exit path removes the namespaces (with their devices), BPF links, trace instance and helper
    processes. Called from the main thread, SIGINT (KeyboardInterrupt) and SIGTERM (SystemExit 143, when
    its handler is the default) unwind through that cleanup; during setup and cleanup they are held until
    the step ends. Runs in several threads or processes at once are independent: names are unique per
    run, and each injection takes a CPU of its own, waiting while every CPU is taken.
    """
    if rx_csum not in RX_CSUM:
        raise ValueError(f"rx_csum must be one of {RX_CSUM}, not {rx_csum!r}")
    if not 0 <= csum_level <= 3:
        raise ValueError(f"csum_level must be 0..3 (SKB_MAX_CSUM_LEVEL), not {csum_level}")
    ports = (vxlan_port,) if isinstance(vxlan_port, int) else tuple(dict.fromkeys(vxlan_port))
    if not ports or any(not 0 < p < 65536 or p == GENEVE_PORT for p in ports):
        raise ValueError(f"vxlan_port out of range (1..65535, not {GENEVE_PORT}): {vxlan_port}")
    if retries < 1:
        raise ValueError("retries must be at least 1")
    check_environment()
    release, hz = kernel_release(), kernel_hz()
    plan = plan_frames(frames, geneve=geneve_available(), outer_tagged=frozenset(outer_tagged))
    if not plan.sent:
        return OracleResult(
            [],
            [],
            release,
            hz,
            0,
            plan.not_replayable,
            0,
            unsent=dict(plan.unsent),
            vlan_offload=kernel_vlan_offload(),  # the running kernel's, sent to or not (breaker62)
        )
    n_inc = csum_level + 1 if rx_csum == "unnecessary" else 0
    reason = ""
    with _sigterm_unwinds(), _tracefs() as tracefs:
        for attempt in range(1, retries + 1):
            run = _Run(
                tracefs,
                plan,
                frames,
                n_inc=n_inc,
                defer=defer_to_tunnel,
                vxlan_ports=ports,
                udp6_zero_csum_rx=udp6_zero_csum_rx,
                tunnel_gro=tunnel_gro,
                vxlan_gbp=vxlan_gbp,
            )
            finished = False
            try:
                # an interrupt inside subprocess.Popen can orphan an `ip netns add`: let none cut setup short
                with _signals_held():
                    run.build()
                with _cpu_slot() as cpu:
                    deliveries, polls = run.replay(cpu)
                reason = _self_check(polls, run.recv, len(plan.sent)) or ""
                finished = True
                if reason:
                    log.debug("attempt %d: %s", attempt, reason)
            except _AttemptFailed as e:
                reason, finished = str(e), True
                log.debug("attempt %d: %s", attempt, reason)
            except subprocess.TimeoutExpired:
                raise OracleError("the injector did not finish in time") from None
            except bpf.BpfError as e:
                if n_inc and e.errno == errno.EINVAL:
                    raise OracleUnavailable(f"cannot attach tcx egress (kernel >= 6.6 needed): {e}") from None
                raise OracleError(f"BPF: {e}") from None
            except (netns.CommandError, OSError) as e:
                raise OracleError(f"kernel replay failed: {e}") from None
            finally:
                with _signals_held():
                    problems = run.close()
                if problems and finished:
                    raise OracleError("cleanup failed: " + "; ".join(problems))
            if not reason:
                return OracleResult(
                    deliveries=deliveries,
                    polls=polls,
                    kernel_release=release,
                    kernel_identity=kernel_identity(),
                    vlan_offload=kernel_vlan_offload(),
                    hz=hz,
                    frames_sent=len(plan.sent),
                    frames_not_replayable=plan.not_replayable,
                    attempts=attempt,
                    sent=list(plan.sent),
                    unsent=dict(plan.unsent),
                    devices=dict(run.devices),
                    tunnel_ports=dict(run.tunnel_ports),
                )
    raise OracleError(f"kernel replay not deterministic after {retries} attempts: {reason}")
