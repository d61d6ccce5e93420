"""Pipeline wiring: one read of the frames → NIC model → poll model → every kernel model's two GRO stages.

The one-shot API is ``replay_capture(path, config)`` / ``replay_frames(frames, config)`` returning a ``Result``
(DPDK's ``rte_gro_reassemble_burst`` tier); the stateful tier is ``kernel.Kernel`` itself. Each kernel model
gets its own skb per frame (GRO mutates skbs) built from the same decoded bytes.

Stages in order: records → (``resegment``: super-frames split into wire frames, resegment.py) → decode → RSS
queue (``rx_queues``) → poll schedule (``iter_polls`` / ``PollSchedule``: poll model, repolls, gro_flush_timeout
and napi_defer_hard_irqs) → ``Kernel.net_rx_action`` per poll. All streaming: memory holds the frames not yet
polled, never the capture. ``replay_capture`` hands eligible captures to the batch path (pollcache.py: blocks of
frames decoded as columns, each distinct poll simulated once), which gives the same results.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace

from .capture.chunks import PcapChunks
from .capture.interfaces import may_hold_several
from .capture.interfaces import plan as plan_interfaces
from .capture.reader import DLT_EN10MB, CaptureError, l2_normalize, open_capture
from .kernel.gro_cells import GroCells
from .kernel.kernel import Kernel
from .kernel.model import K_5_11, K_5_12, KernelModel
from .kernel.napi import Napi
from .kernel.nic import (
    DEFAULT_POLL_GAP_USECS,
    DEFAULT_RSS_KEY,
    NIC_PRESETS,
    RSS_MODES,
    RX_CSUM_PROFILES,
    hw_checksums_ok,
    toeplitz_hash,
)
from .kernel.skbuff import CHECKSUM_COMPLETE, CHECKSUM_NONE, CHECKSUM_PARTIAL, CHECKSUM_UNNECESSARY, SkBuff
from .packet.csum import PollSums
from .packet.decode import (
    CLS_NOT_TUNNEL,
    CLS_TUNNEL_OTHER,
    CLS_TUNNEL_TCP,
    SKIP_LINKTYPE,
    SKIP_SNAPLEN,
    SKIP_TRUNCATED_RECORD,
    Decoder,
    outer_udp_csum_bad,
)
from .pollcache import BatchReplay, batch_eligible
from .report.stats import ConservationError, KernelStats, check_conservation, checks_enabled
from .resegment import TCP_MIN_SND_MSS, Resegmenter

#: Entries of the RSS indirection table (a common size; drivers use 64..512).
RSS_INDIR_TABLE_SIZE = 128


class ConfigError(ValueError):
    """A configuration value that cannot be used (one-line message)."""


@dataclass(frozen=True)
class PollModel:
    """Which frames share a driver poll.

    ``gap`` (the default, ``gap:3``): a new poll when the inter-arrival gap exceeds ``usecs`` µs (at most
    ``weight`` per poll), taken at its last frame's time: the interrupt of CQE-based moderation, which fires once
    the traffic pauses for the moderation period (``kernel.nic.DEFAULT_POLL_GAP_USECS``, mlx5's default), so
    no poll holds frames that a pause of that length separated. ``rx-usecs``: EQE-based moderation — a poll
    starts ``usecs`` µs after the first pending frame and takes what has arrived (at most ``weight``),
    repeating at once after a full poll. ``budget``: capture order, ``weight`` frames per poll, whatever the
    times (the kernel backend's injection recipe: ``validate`` and ``kernel`` use it).
    The exact rules, with repolls and timers, are in the comment above ``iter_polls``.
    """

    kind: str = "gap"
    usecs: float = DEFAULT_POLL_GAP_USECS

    def __post_init__(self) -> None:
        if self.kind == "budget" and self.usecs:
            object.__setattr__(
                self, "usecs", 0.0
            )  # budget has no time constant: PollModel("budget") is one value

    @classmethod
    def parse(cls, text: str) -> PollModel:
        """Parse ``budget``, ``gap:US`` or ``rx-usecs:US``. Raises ConfigError."""
        if text == "budget":
            return cls("budget")
        kind, _, value = text.partition(":")
        if kind in ("gap", "rx-usecs") and value:
            try:
                us = float(value)
            except ValueError:
                us = -1.0
            if 0 <= us < float("inf"):  # NaN and infinity fail too
                return cls(kind, us)
        raise ConfigError(f"invalid poll model {text!r}: use budget, gap:US or rx-usecs:US")

    def __str__(self) -> str:
        return self.kind if self.kind == "budget" else f"{self.kind}:{self.usecs:g}"

    def describe(self) -> str:
        """One line for the report: the model and what it means, e.g. ``gap:3 (a poll after each pause > 3 µs, …)``."""
        if self.kind == "budget":
            return "budget (64-frame polls in capture order, times ignored)"
        if self.kind == "gap":
            src = (
                ", the default time-aware model: mlx5's CQE-based moderation"
                if self.usecs == DEFAULT_POLL_GAP_USECS
                else ""
            )
            return f"{self} (a poll after each pause > {self.usecs:g} µs{src})"
        return f"{self} (interrupt moderation: a poll {self.usecs:g} µs after the first frame)"


@dataclass
class ReplayConfig:
    """Everything a replay needs besides the frames. Units: ns for times, bytes for sizes."""

    kernels: tuple[KernelModel, ...] = (K_5_11, K_5_12)
    #: RX checksum state (RX_CSUM_PROFILES), or "nic": the --nic preset decides per frame
    rx_csum: str = "unnecessary"
    poll: PollModel = field(default_factory=PollModel)
    weight: int = 64
    hz: int = 250
    #: RX hash: "toeplitz" (outer addresses + UDP ports), "toeplitz-l3" (outer addresses only) or "none"
    rss: str = "toeplitz"
    #: a driver preset (nic.NIC_PRESETS) or None; with it rx_csum "nic" lets the preset decide per frame
    nic: str | None = None
    #: the tunnel UDP port is programmed into the NIC's parser (udp_tunnel_nic); only read by --nic presets
    nic_tunnel_port: bool = False
    rss_key: bytes = DEFAULT_RSS_KEY
    vxlan_ports: tuple[int, ...] = (4789, 8472)
    geneve_ports: tuple[int, ...] = (6081,)
    #: the interface to replay of a capture that holds several (``--interface``: an ifindex, a pcapng interface id
    #: or name); None: the one that carries the tunnel traffic (capture/interfaces.py)
    interface: str | None = None
    #: tunnel kinds (``"vxlan"``, ``"geneve"``) whose ports are detected (``--vxlan-port auto``): a first read of
    #: the capture finds the UDP ports whose payloads parse as that tunnel (``packet.decode.sniff_tunnel``) and
    #: the kernels get a tunnel socket on each (``detect_tunnel_ports``)
    detect_tunnels: tuple[str, ...] = ()
    phys_dev: str = "eth0"
    vxlan_dev: str = "vxlan0"
    geneve_dev: str = "geneve0"
    tunnel_metadata: bool = True
    #: tunnel sockets accept zero UDPv6 checksums (vxlan/geneve udp6zerocsumrx; off by default, RFC 6936)
    udp6_zero_csum_rx: bool = False
    gro_normal_batch: int = 8
    gro_max_size: int = 65536
    gro_flush_timeout_ns: int = 0
    napi_defer_hard_irqs: int = 0
    #: a generic-XDP program on the phys device: netif_elide_gro() is true there (net/core/dev.c)
    phys_xdp_generic: bool = False
    #: NETIF_F_GRO per device role ("phys", "tunnel"): ``ethtool -K DEV gro off`` clears it (``parse_gro``)
    gro: dict[str, bool] = field(default_factory=lambda: {"phys": True, "tunnel": True})
    #: RX queues of the phys device: one NAPI each, flows spread by the RSS indirection table, one CPU per queue
    rx_queues: int = 1
    #: super-frame splitting before replay: "off" (frames replayed as given; the library default), "auto" (the
    #: CLI's default) or a fixed MSS (int); see resegment.py
    resegment: str | int = "off"
    #: bytes of the outer IP datagram a wire frame carries (the resegmenting threshold)
    mtu: int = 1500
    #: ``--flow``: only the frames of flows matching this selector are replayed (packet/flowsel.py grammar)
    flow: str | None = None
    #: ``-f``: only the records this BPF capture filter accepts are replayed (capture/bpf.py)
    capture_filter: str | None = None
    #: allow the batch path (pollcache.py: each distinct poll simulated once, results identical); False runs the
    #: reference path, every frame through the kernels. Not part of the JSON document: results do not depend on it.
    fast_path: bool = True

    def validate(self) -> None:
        """Raises ConfigError naming the bad value."""
        if self.nic is not None and self.nic not in NIC_PRESETS:
            raise ConfigError(f"unknown --nic {self.nic!r}; choose from {', '.join(NIC_PRESETS)}")
        if self.rx_csum == "nic" and self.nic is None:
            raise ConfigError("rx_csum 'nic' needs a --nic preset")
        if self.rx_csum not in RX_CSUM_PROFILES and self.rx_csum != "nic":
            raise ConfigError(
                f"unknown --rx-csum {self.rx_csum!r}; choose from {', '.join(RX_CSUM_PROFILES)}"
            )
        if self.rss not in RSS_MODES:
            raise ConfigError(f"unknown --rss {self.rss!r}; choose {', '.join(RSS_MODES)}")
        if not 1 <= self.weight <= 64:
            raise ConfigError("NAPI weight must be 1..64")
        if self.hz <= 0:
            raise ConfigError("--hz must be positive")
        # a port repeated within one list is one tunnel socket (the kernel binds one per port)
        self.vxlan_ports = tuple(dict.fromkeys(self.vxlan_ports))
        self.geneve_ports = tuple(dict.fromkeys(self.geneve_ports))
        overlap = set(self.vxlan_ports) & set(self.geneve_ports)
        if overlap:
            raise ConfigError(f"port {min(overlap)} given as both VXLAN and Geneve")
        if not 1 <= self.rx_queues <= RSS_INDIR_TABLE_SIZE:
            raise ConfigError(f"--rx-queues must be 1..{RSS_INDIR_TABLE_SIZE}")
        self.resegment = parse_resegment(str(self.resegment))
        unknown = set(self.gro) - set(GRO_DEVICES)
        if unknown:
            raise ConfigError(f"--gro: unknown device {min(unknown)!r}; use phys or tunnel")
        if not 68 <= self.mtu <= 65535:
            raise ConfigError("--mtu must be 68..65535 (bytes of the outer IP datagram)")
        if self.flow is not None:
            from .packet.flowsel import FlowSelector, SelectorError

            try:
                FlowSelector.parse(self.flow)
            except SelectorError as e:
                raise ConfigError(str(e)) from None
        if self.capture_filter is not None:
            from .capture.bpf import BpfFilter, FilterError

            try:
                BpfFilter(self.capture_filter)
            except FilterError as e:
                raise ConfigError(str(e)) from None

    def rx_csum_of_flow(self, key) -> str:
        """The RX checksum state (an RX_CSUM_PROFILES name) frames of flow ``key`` (decode.FlowKey) get when their
        checksums verify: ``rx_csum``, or with a --nic preset deciding, that preset's state for the flow."""
        if self.rx_csum != "nic":
            return self.rx_csum
        tunnelled = bool(key.tunnel)
        ip_summed, level = NIC_PRESETS[self.nic].rx_state(
            ":" in key.outer_src, key.outer_csum_zero, self.nic_tunnel_port, tunnelled
        )
        if ip_summed == CHECKSUM_UNNECESSARY:
            return "unnecessary-tunnel" if level else "unnecessary"
        return {CHECKSUM_NONE: "none", CHECKSUM_COMPLETE: "complete"}.get(ip_summed, "partial")

    def nic_words(self) -> str:
        """How the report names the NIC model: ``--rx-csum X`` or ``--nic NAME (tunnel port on|off)``."""
        if self.rx_csum == "nic":
            return f"--nic {self.nic} (tunnel port {'on' if self.nic_tunnel_port else 'off'})"
        return f"--rx-csum {self.rx_csum}" + (f" (--nic {self.nic})" if self.nic else "")

    def as_dict(self) -> dict:
        return {
            # name, release, upstream base, stable backports (stable commit, point release), notes, fix origin
            "kernels": [m.describe() for m in self.kernels],
            "nic": {
                "rx_csum": self.rx_csum,
                "rss": self.rss,
                "rss_key": self.rss_key.hex(),
                # the driver preset (--nic): its source, RSS fields, moderation default; None without one
                "preset": (
                    dict(NIC_PRESETS[self.nic].as_dict(), tunnel_port=self.nic_tunnel_port)
                    if self.nic
                    else None
                ),
            },
            "poll": str(self.poll),
            "poll_model": self.poll.describe(),
            "constants": {
                "napi_weight": self.weight,
                "hz": self.hz,
                "gro_normal_batch": self.gro_normal_batch,
                "gro_hash_buckets": 8,
                "max_gro_skbs": 8,
                "gro_max_size": self.gro_max_size,
                "gro_flush_timeout_ns": self.gro_flush_timeout_ns,
                "napi_defer_hard_irqs": self.napi_defer_hard_irqs,
            },
            "vxlan_ports": list(self.vxlan_ports),
            "geneve_ports": list(self.geneve_ports),
            "detect_tunnels": list(self.detect_tunnels),
            "interface": self.interface,
            "devices": {"phys": self.phys_dev, "vxlan": self.vxlan_dev, "geneve": self.geneve_dev},
            "tunnel_metadata": self.tunnel_metadata,
            "udp6_zero_csum_rx": self.udp6_zero_csum_rx,
            "gro": {role: bool(self.gro.get(role, True)) for role in GRO_DEVICES},
            "rx_queues": self.rx_queues,
            "resegment": str(self.resegment),
            "mtu": self.mtu,
            **({"flow": self.flow} if self.flow is not None else {}),
            **({"filter": self.capture_filter} if self.capture_filter is not None else {}),
        }


GRO_DEVICES = ("phys", "tunnel")


def parse_gro(items) -> dict[str, bool]:
    """Parse ``--gro DEV=on|off`` items (DEV: ``phys`` or ``tunnel``) into {role: GRO on}; both default to on.

    What ``ethtool -K DEV gro off`` does: NETIF_F_GRO cleared, so ``netif_elide_gro`` is true on that device
    (phys: ``dev_gro_receive`` passes every skb up as GRO_NORMAL; tunnel: ``gro_cells_receive`` uses ``netif_rx``).
    Hardware GRO (``rx-gro-hw``) and LRO are refused: the NIC would merge before the kernel sees the frames, by
    rules of its own. Raises ConfigError.
    """
    out = {role: True for role in GRO_DEVICES}
    for item in items:
        dev, sep, value = str(item).partition("=")
        dev, value = dev.strip(), value.strip().lower()
        if dev in ("hw", "rx-gro-hw", "lro", "large-receive-offload") or value in ("hw", "lro"):
            raise ConfigError(
                "--gro: hardware GRO / LRO is not modelled (the NIC merges by its own rules before the kernel "
                "sees the frames); capture on the host and replay with --gro phys=on|off"
            )
        if not sep or dev not in GRO_DEVICES or value not in ("on", "off"):
            raise ConfigError(f"invalid --gro {item!r}: use phys=on|off or tunnel=on|off")
        out[dev] = value == "on"
    return out


def tcp_mss_option(buf: bytes, start: int, end: int) -> int | None:
    """The MSS option (kind 2, length 4) in the TCP options ``buf[start:end]``, or None.

    Kernel: net/ipv4/tcp_input.c ``tcp_parse_options`` (EOL ends the list, NOP is one byte, others carry a length
    of at least 2). Never raises.
    """
    i = start
    while i < end:
        kind = buf[i]
        if kind == 0:
            return None
        if kind == 1:
            i += 1
            continue
        if i + 1 >= end:
            return None
        size = buf[i + 1]
        if size < 2 or i + size > end:
            return None
        if kind == 2 and size == 4:
            return (buf[i + 2] << 8) | buf[i + 3]
        i += size
    return None


def parse_resegment(text: str) -> str | int:
    """Parse ``--resegment``: ``auto``, ``off`` or an MSS in bytes (48..65535: ``TCP_MIN_SND_MSS`` is the smallest
    MSS a Linux sender uses). Raises ConfigError."""
    if text in ("auto", "off"):
        return text
    mss = int(text) if text.isascii() and text.isdigit() and len(text) <= 6 else 0
    if not TCP_MIN_SND_MSS <= mss <= 65535:
        raise ConfigError(
            f"invalid --resegment {text!r}: use auto, off or an MSS in bytes ({TCP_MIN_SND_MSS}..65535)"
        )
    return mss


@dataclass
class InputStats:
    """What was read: frames, bytes, skips by reason, frame classes; ``path``/``sha256`` for capture files.

    ``frames_replayed`` and ``classes`` count the frames that entered the simulation: a resegmented super-frame
    counts once in ``resegmented_frames`` and as its segments (``segments_created``) there.
    ``oversize_not_split``: frames above the MTU replayed as captured, by reason (resegment.py ``KEEP_*``).
    """

    path: str | None = None
    sha256: str | None = None
    frames_read: int = 0
    bytes_read: int = 0
    frames_replayed: int = 0
    skipped: Counter = field(default_factory=Counter)
    classes: Counter = field(default_factory=Counter)
    #: the first record's timestamp (ns); ``last_ts_ns`` (a property) the latest record's so far
    first_ts_ns: int | None = None
    #: the earliest and the latest timestamp of any record read (ns): a capture's times can run backwards
    #: (a clock step, pcapng interfaces with their own if_tsresol/if_tsoffset); ``duration_ns`` is max − min
    min_ts_ns: int | None = None
    max_ts_ns: int | None = None
    resegmented_frames: int = 0
    segments_created: int = 0
    oversize_not_split: Counter = field(default_factory=Counter)
    #: frames left out on purpose, by filter: ``flow`` (``--flow``), ``bpf`` (``-f``); a resegmented super-frame
    #: counts once
    filtered: Counter = field(default_factory=Counter)
    #: ``--flow``: frames of the selected flows that entered the simulation, counted as ``frames_replayed`` counts
    #: them (a resegmented super-frame as its segments); None without a selector
    selected_frames: int | None = None
    #: frames on UDP ports without a tunnel socket that parse as a tunnel: kind → port → frames
    tunnel_ports_not_configured: dict = field(default_factory=dict)
    #: tunnel ports found by ``--vxlan-port auto`` / ``--geneve-port auto``: kind → port → frames
    tunnel_ports_detected: dict = field(default_factory=dict)
    #: facts about the input a reader must know (one sentence each), in the order found
    notes: list = field(default_factory=list)
    #: per interface of a capture that holds several (capture/interfaces.py ``Selection.as_list``)
    interfaces: list = field(default_factory=list)
    #: replayed tunnel frames whose outer UDP checksum is set and does not verify (``outer_udp_csum_bad``)
    outer_csum_bad: int = 0
    #: the largest outer IP packet that ``--resegment`` split (bytes, 0: none)
    largest_split: int = 0

    _last_ts_ns: int | None = None  # not a field: ``last_ts_ns`` below

    @property
    def last_ts_ns(self) -> int | None:
        """The timestamp (ns) of the last record read; setting it also widens ``min_ts_ns``..``max_ts_ns``."""
        return self._last_ts_ns

    @last_ts_ns.setter
    def last_ts_ns(self, ts_ns: int) -> None:
        self._last_ts_ns = ts_ns
        self.saw_ts_range(ts_ns, ts_ns)

    def saw_ts_range(self, lo_ns: int, hi_ns: int) -> None:
        """Records with timestamps from ``lo_ns`` to ``hi_ns`` (ns, lo ≤ hi) were read: widen the span."""
        if self.min_ts_ns is None or lo_ns < self.min_ts_ns:
            self.min_ts_ns = lo_ns
        if self.max_ts_ns is None or hi_ns > self.max_ts_ns:
            self.max_ts_ns = hi_ns

    @property
    def duration_ns(self) -> int:
        """The span of the records' timestamps, latest − earliest (ns, never negative; 0 without records)."""
        return self.max_ts_ns - self.min_ts_ns if self.min_ts_ns is not None else 0

    def as_dict(self) -> dict:
        return {
            "path": self.path,
            "sha256": self.sha256,
            "frames_read": self.frames_read,
            "bytes": self.bytes_read,
            "frames_replayed": self.frames_replayed,
            "skipped": dict(sorted(self.skipped.items())),
            "classes": dict(sorted(self.classes.items())),
            "duration_ns": self.duration_ns,
            "resegmented_frames": self.resegmented_frames,
            "segments_created": self.segments_created,
            "oversize_not_split": dict(sorted(self.oversize_not_split.items())),
            "filtered": dict(sorted(self.filtered.items())),
            **({"selected_frames": self.selected_frames} if self.selected_frames is not None else {}),
            "tunnel_ports_not_configured": _by_port(self.tunnel_ports_not_configured),
            "tunnel_ports_detected": _by_port(self.tunnel_ports_detected),
            "notes": list(self.notes),
            "interfaces": list(self.interfaces),
            "outer_udp_csum_bad": self.outer_csum_bad,
        }


def _by_port(d: dict) -> dict:
    """kind → port → frames with the ports as JSON object keys (text), sorted."""
    return {kind: {str(p): n for p, n in sorted(ports.items())} for kind, ports in sorted(d.items())}


def tunnel_notes(inp: InputStats, config: ReplayConfig) -> list[str]:
    """The input notes about tunnel ports: traffic that parses as VXLAN/Geneve on ports without a tunnel socket
    (with the option that decodes it), ports ``auto`` found, or that the capture holds no tunnel traffic."""
    notes = []
    opt = {"vxlan": "--vxlan-port", "geneve": "--geneve-port"}
    name = {"vxlan": "VXLAN", "geneve": "Geneve"}
    for kind, ports in sorted(inp.tunnel_ports_detected.items()):
        found = ", ".join(f"{p} ({n:,} frames)" for p, n in sorted(ports.items()))
        notes.append(f"{opt[kind]} auto: {name[kind]} found on UDP port {found}; decoded there")
    for kind, ports in sorted(inp.tunnel_ports_not_configured.items()):
        for p, n in sorted(ports.items()):
            notes.append(
                f"{n:,} frames to UDP port {p} parse as {name[kind]}, but no {name[kind]} port is configured there: "
                f"replayed as plain UDP (not_tunnel), as a kernel without that tunnel socket would; "
                f"pass {opt[kind]} {p} (or {opt[kind]} auto) to decode them"
            )
    if not inp.classes.get(CLS_TUNNEL_TCP) and not inp.classes.get(CLS_TUNNEL_OTHER) and not notes:
        ports = ", ".join(map(str, config.vxlan_ports)) or "none"
        gports = ", ".join(map(str, config.geneve_ports)) or "none"
        notes.append(
            f"no tunnel traffic: no frame goes to a configured tunnel port (VXLAN {ports}; Geneve {gports}) "
            "and none parses as VXLAN or Geneve on another UDP port"
        )
    return notes


def capture_notes(inp: InputStats, config: ReplayConfig) -> list[str]:
    """Notes on how the capture was taken: outer checksums that do not verify, super-frames split at ``--mtu``."""
    notes = []
    if inp.outer_csum_bad:
        notes.append(
            f"{inp.outer_csum_bad:,} tunnel frames carry an outer UDP checksum that does not verify, typical of a "
            "capture taken on the sending host before TX checksum offload filled it in; a NIC would not have "
            f"reported them as verified: {config.nic_words()} replays them as that checksum state says, "
            "--rx-csum none has the kernels check (and drop) them in software"
        )
    if inp.resegmented_frames:
        big = inp.largest_split
        jumbo = (
            f"if the underlay really carries frames this large (jumbo MTU), pass --mtu {big} or --resegment off"
            if big <= JUMBO_MAX
            else "no underlay MTU carries them (above 9216 bytes: BIG TCP or GRO aggregates)"
        )
        notes.append(
            f"{inp.resegmented_frames:,} frames larger than --mtu {config.mtu} (the largest outer IP packet "
            f"{big:,} bytes) were split into {inp.segments_created:,} wire segments, taken for TSO/GSO or GRO "
            f"super-frames of the capturing host; {jumbo}"
        )
    return notes


#: Above this an outer IP packet is no jumbo frame: 9216 bytes, the usual jumbo MTU ceiling of data-centre
#: switches (NICs allow a little more: i40e 9702 = ``I40E_MAX_RXBUFFER`` 9728 less ``I40E_PACKET_HDR_PAD``).
JUMBO_MAX = 9216


def _outer_ip_len(buf: bytes) -> int:
    """The outer IP packet's length from its header (IPv4 total length, IPv6 40 + payload length), after any VLAN
    tags; the bytes after the Ethernet header when the header cannot say (a BIG TCP frame's 0)."""
    off = 12
    et = (buf[12] << 8) | buf[13]
    while et in (0x8100, 0x88A8, 0x9100) and off + 6 <= len(buf):
        off += 4
        et = (buf[off] << 8) | buf[off + 1]
    l3 = off + 2
    n = 0
    if et == 0x0800 and l3 + 4 <= len(buf):
        n = (buf[l3 + 2] << 8) | buf[l3 + 3]
    elif et == 0x86DD and l3 + 6 <= len(buf):
        n = 40 + ((buf[l3 + 4] << 8) | buf[l3 + 5])
    return n if n > 40 else len(buf) - l3


class TunnelScanError(CaptureError):
    """``--vxlan-port auto`` on an input that cannot be read twice (a pipe)."""


def detect_tunnel_ports(path: str, config: ReplayConfig) -> dict[str, dict[int, int]]:
    """First read of ``path`` for ``config.detect_tunnels``: kind → UDP destination port → frames whose payload
    parses as that tunnel (``packet.decode.sniff_tunnel``) on ports without a socket of either kind.

    Raises: TunnelScanError when ``path`` is not a regular file (a pipe is read once); CaptureError.
    """
    import os
    import stat

    try:
        regular = path != "-" and stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        regular = True  # open_capture names the problem
    if not regular:
        raise TunnelScanError(
            f"{path}: --vxlan-port/--geneve-port auto reads the capture twice and a pipe can be read once: "
            "name the port (the report lists ports that carry tunnel traffic)"
        )
    dec = Decoder(config.vxlan_ports, config.geneve_ports)
    with open_capture(path) as cap:
        for _ts, buf, orig_len, linktype in cap:
            if len(buf) < orig_len:
                continue
            if linktype != DLT_EN10MB:
                buf = l2_normalize(buf, linktype)
                if buf is None:
                    continue
            dec.decode(buf)
    return {k: dict(v) for k, v in dec.unconfigured.items() if k in config.detect_tunnels}


@dataclass
class Result:
    """The outcome of one replay: input accounting, the config, and one ``KernelStats`` per kernel model."""

    input: InputStats
    config: ReplayConfig
    kernels: list[KernelStats]
    flows: list
    flow_classes: list[str]
    #: the batch path's poll counts (pollcache.py; None when the frame-by-frame path ran): ``polls_cached``
    #: (answered by the cache), ``polls_simulated`` (run through the kernels). Not part of the JSON document.
    batch: dict | None = None


# -- poll models -----------------------------------------------------------------------------------------------------
# A poll is ``(poll_time_ns, frames)``: the driver hands ``frames`` (at most ``weight``) to napi_gro_receive at
# ``poll_time_ns``, the time the NAPI's jiffies and the held packets' ``age`` are taken from. The rules (gro-spec
# §1.3, §1.8; net/core/dev.c ``napi_poll``, ``napi_complete_done``, ``napi_watchdog``):
#
# * budget: the NIC always has frames: a poll takes the next ``weight`` frames in capture order at the time of the
#   last of them; the rest of the input is polled at the input's last timestamp.
# * gap:US: a burst is a run of frames whose inter-arrival gaps are ≤ US µs; a poll takes the burst (at most
#   ``weight``) at the time of its last frame.
# * rx-usecs:US: interrupt moderation: a poll runs US µs after the first frame that arrived since the last poll
#   and takes the frames that arrived by then (ts ≤ poll time), at most ``weight``.
# * A poll that takes ``weight`` frames leaves the NAPI scheduled (``napi_poll`` repoll list): the next poll
#   follows at once — rx-usecs: at the same time, taking what had arrived by then; budget/gap: the next
#   ``weight`` frames of the input/burst. When nothing is left (end of input / end of burst / nothing arrived)
#   that repoll is empty: ``napi_complete_done(0)``, which flushes what the full poll kept (HZ ≥ 1000).
# * gro_flush_timeout (ns) > 0: ``napi_complete_done`` arms the NAPI's hrtimer at poll time + timeout (when GRO
#   holds packets, or while napi_defer_hard_irqs defers); when it fires and the NAPI is not scheduled,
#   ``napi_watchdog`` schedules a poll that takes the frames that have arrived by then (at most ``weight``).
#   Without deferral the IRQ stays enabled: the next poll is the model's next poll or the timer's, whichever
#   comes first. With napi_defer_hard_irqs > 0 the driver leaves the IRQ masked: the next poll is the timer's.
#   A timer is never cancelled (only re-armed); one that fires while the NAPI is scheduled does nothing.
# Timestamps that go backwards count as arriving at the latest time seen.


def iter_polls(frames: Iterable, poll: PollModel, weight: int) -> Iterator[tuple[int, list]]:
    """Group decoded frames (tuples whose element 0 is ``ts_ns``) into polls ``(poll_time_ns, frames)``.

    The shortcut of ``PollSchedule`` for one NAPI without gro_flush_timeout (the poll schedule then does not depend
    on the kernel's state); both give identical polls (tests/test_poll_models.py). Streams: holds at most one
    poll's worth of frames (plus, for rx-usecs, the frames that arrived meanwhile).
    """
    if poll.kind == "budget":
        batch: list = []
        last = None
        for f in frames:
            batch.append(f)
            if len(batch) == weight:
                last = f[0]
                yield last, batch
                batch = []
        if batch:
            yield batch[-1][0], batch
        elif last is not None:
            yield last, []  # the repoll after a full last poll finds nothing
    elif poll.kind == "gap":
        limit = int(poll.usecs * 1000)
        batch = []
        prev = None
        for f in frames:
            t = f[0]
            if batch:
                full = len(batch) == weight
                if full or t - prev > limit:
                    yield prev, batch
                    if full and t - prev > limit:
                        yield prev, []  # the burst ended with a full poll: its repoll finds nothing
                    batch = []
            batch.append(f)
            prev = t
        if batch:
            yield prev, batch
            if len(batch) == weight:
                yield prev, []
    else:
        delay = int(poll.usecs * 1000)
        pending: deque = deque()
        poll_at = None
        for f in frames:
            while poll_at is not None and f[0] > poll_at:
                take = [pending.popleft() for _ in range(min(weight, len(pending)))]
                yield poll_at, take
                if len(take) < weight:
                    poll_at = None
            pending.append(f)
            if poll_at is None:
                poll_at = f[0] + delay
        while poll_at is not None:
            take = [pending.popleft() for _ in range(min(weight, len(pending)))]
            yield poll_at, take
            if len(take) < weight:
                poll_at = None


_IRQ, _REPOLL, _MASKED = 0, 1, 2


class PollSchedule:
    """The poll schedule of one NAPI (one RX queue), driven by frame arrivals and by what each poll's end did.

    ``push(t, frame)`` records an arrival at ``t`` ns; ``due(now)`` is the time of the next poll when it runs
    before a frame arriving at ``now`` (``None``: the input ended), else None; ``take(t)`` removes the frames
    that poll handles; ``done(t, work, timeout, masked)`` feeds back what the poll's end did: ``timeout`` the
    hrtimer ``napi_complete_done`` armed (ns, 0 = none), ``masked`` whether it left the IRQ masked (it returned
    false: napi_defer_hard_irqs with a timeout). Rules: see the comment above ``iter_polls``.
    Kernel: net/core/dev.c ``napi_poll`` (repoll after a full poll), ``napi_complete_done``, ``napi_watchdog``.
    """

    __slots__ = (
        "kind",
        "delay",
        "weight",
        "pending",
        "state",
        "timer_at",
        "burst_last",
        "last_poll",
        "end_time",
    )

    def __init__(self, poll: PollModel, weight: int) -> None:
        self.kind = poll.kind
        self.delay = int(poll.usecs * 1000)
        self.weight = weight
        self.pending: deque = deque()  # (arrival ns, frame)
        self.state = _IRQ
        self.timer_at: int | None = None
        self.burst_last: int | None = None  # last arrival (gap: the current burst's end so far)
        self.last_poll: int | None = None
        self.end_time = 0  # the input's last arrival, set when it ends (budget: when the rest is polled)

    def push(self, t: int, frame) -> None:
        self.pending.append((t, frame))
        self.burst_last = t

    def _rule(self, now: int | None) -> int | None:
        """The poll model's next poll time (IRQ or repoll), or None when not known yet / nothing to poll."""
        p = self.pending
        w = self.weight
        if self.kind == "rx-usecs":
            if self.state == _REPOLL:
                return self.last_poll
            return p[0][0] + self.delay if p else None
        if len(p) >= w:
            return p[w - 1][0]
        if not p and self.state != _REPOLL:
            return None
        if self.kind == "gap":
            if now is None or now - self.burst_last > self.delay:
                return self.burst_last
            return None
        return self.end_time if now is None else None

    def due(self, now: int | None) -> int | None:
        """Time of the next poll if it runs before an arrival at ``now`` (None: end of input), else None."""
        if self.state == _MASKED:
            t = self.timer_at
        else:
            t = self._rule(now)
            tm = self.timer_at
            if self.state == _IRQ and tm is not None and (t is None or tm < t):
                t = tm
        if t is None:
            return None
        if self.last_poll is not None and t < self.last_poll:
            t = self.last_poll
        return t if now is None or t < now else None

    def lower_bound(self, now: int) -> int | None:
        """The earliest time this NAPI's next poll can have (for ordering several queues); None: not before now."""
        t = self.due(now)
        if t is not None:
            return t
        if self.kind == "gap" and self.state != _MASKED and (self.pending or self.state == _REPOLL):
            # the burst's poll is at its last frame: this one, unless a frame at ``now`` continues it
            t = self.burst_last
            if self.timer_at is not None and self.state == _IRQ:
                t = min(t, self.timer_at)
            return t if self.last_poll is None else max(t, self.last_poll)
        return None

    def take(self, t: int) -> list:
        """Remove and return the frames the poll at ``t`` handles: those arrived by ``t``, at most ``weight``."""
        p = self.pending
        out = []
        while p and len(out) < self.weight and p[0][0] <= t:
            out.append(p.popleft()[1])
        return out

    def done(self, t: int, work: int, timeout: int, masked: bool) -> None:
        """Record the end of the poll at ``t`` that handled ``work`` frames (see the class docstring)."""
        self.last_poll = t
        if self.timer_at is not None and self.timer_at <= t:
            self.timer_at = None  # fired: it scheduled this poll, or found the NAPI scheduled
        if work == self.weight:
            self.state = _REPOLL
            return
        if timeout:
            self.timer_at = t + timeout
        self.state = _MASKED if masked else _IRQ


def ethtool_rxfh_indir_default(index: int, n_rx_rings: int) -> int:
    """The default RSS indirection table entry: ``index % n_rx_rings`` (round-robin over the RX queues).

    Kernel: include/linux/ethtool.h ``ethtool_rxfh_indir_default``.
    """
    return index % n_rx_rings


class RxQueue:
    """One RX queue of one kernel: its phys NAPI, and the gro_cells of the CPU that handles it.

    Model: one CPU per RX queue (IRQ affinity spread, no RPS/RFS): queue ``q``'s poll, the stack processing of
    what it delivers (IP → UDP → ``vxlan_rcv``/``geneve_rx``) and therefore ``gro_cells_receive`` all run on CPU
    ``q``, which queues to its own cell of each tunnel device (``this_cpu_ptr(gcells->cells)``); that cell's NAPI
    runs in the same softirq round, after the phys poll (gro-spec §6.4). Each queue has its own GRO buckets,
    rx_list and hrtimer. ``cells`` follows ``Kernel.tunnel_cells``; ``sock_cells`` the order of
    ``Kernel.udp_tunnel_sockets``.
    Kernel: net/core/gro_cells.c ``gro_cells_init`` (one cell per possible CPU), ``gro_cells_receive``.
    """

    __slots__ = ("napi", "cells", "sock_cells")

    def __init__(self, napi: Napi, cells: list[GroCells], sock_cells: list[GroCells]) -> None:
        self.napi = napi
        self.cells = cells
        self.sock_cells = sock_cells


def add_rx_queues(k: Kernel, n: int, weight: int) -> list[RxQueue]:
    """RX queues 0..n-1 of kernel ``k``: queue 0 is the kernel's own phys NAPI and cells; the others are new
    ``Napi``s on the same phys ``NetDevice`` and new cells (one per tunnel device) for their CPUs.

    The kernel core has one phys NAPI and one cell per tunnel device; ``enter_rx_queue`` switches those
    references to a queue's objects before its poll (what ``this_cpu_ptr`` would select).
    """
    socks = list(k.udp_tunnel_sockets.values())
    q0 = RxQueue(k.phys_napi, list(k.tunnel_cells), [sk.cells for sk in socks])
    queues = [q0]
    for _ in range(1, n):
        napi = Napi(k, k.phys, k._phys_deliver, weight)
        mine = {}
        for c in q0.cells:
            nc = GroCells(c.dev, None)  # type: ignore[arg-type]
            nc.napi = Napi(k, c.dev, c.napi.netif_receive_skb_list, c.napi.weight)
            mine[id(c)] = nc
        queues.append(RxQueue(napi, [mine[id(c)] for c in q0.cells], [mine[id(c)] for c in q0.sock_cells]))
    enter_rx_queue(k, q0)
    return queues


def enter_rx_queue(k: Kernel, rq: RxQueue) -> None:
    """Make ``rq``'s NAPI and its CPU's cells the ones ``k`` polls and queues to."""
    k.phys_napi = rq.napi
    k.phys.napi = rq.napi
    k.tunnel_cells = rq.cells
    for sk, cells in zip(k.udp_tunnel_sockets.values(), rq.sock_cells, strict=True):
        sk.cells = cells
    for cells in rq.cells:
        cells.dev.napi = cells.napi


# -- the run ----------------------------------------------------------------------------------------------------------
class Replayer:
    """Owns the decoder, the kernels and their stats for one run: ``run_polls(decoded(records))``, then ``finish``.

    With ``rx_queues`` > 1 every kernel gets one phys NAPI per RX queue and one cell per tunnel device per queue's
    CPU (``RxQueue``); a frame goes to queue ``indir[hash % 128]`` of the default indirection table
    (``ethtool_rxfh_indir_default``); polls are formed per queue by the poll model and run in time order across
    queues, so deliveries come out ordered by time.
    """

    def __init__(self, config: ReplayConfig, on_deliver: Callable | None = None) -> None:
        config.validate()
        self.config = config
        self.input = InputStats()
        self.decoder = Decoder(config.vxlan_ports, config.geneve_ports)
        #: the driver preset deciding each frame's checksum state (rx_csum "nic"), else None
        self.preset = NIC_PRESETS[config.nic] if config.rx_csum == "nic" else None
        self._flow_state: list[tuple[int, int, str]] = []
        self.profile = RX_CSUM_PROFILES["none" if self.preset else config.rx_csum]
        prof = self.profile
        # (ip_summed, ip_summed of a PARTIAL-profile frame without an L4 header, csum_level) the driver sets
        self._rx_csum = (
            prof.ip_summed,
            CHECKSUM_NONE,
            0 if prof.ip_summed in (CHECKSUM_NONE, CHECKSUM_COMPLETE, CHECKSUM_PARTIAL) else prof.csum_level,
        )
        self._hash_cache: dict[bytes, int] = {}
        self._rx_of_flow: list[tuple[int, bool]] = []
        self.stats: list[KernelStats] = []
        self.kernels: list[Kernel] = []
        #: ``--flow`` (None: every flow) and, per flow id, whether it matches (filled as flows appear, before any
        #: of their frames reaches a kernel): every frame is replayed, the stats count the matching flows' skbs
        self._select = None
        self._flow_ok: list[bool] = []
        if config.flow is not None:
            from .packet.flowsel import FlowSelector

            self._select = FlowSelector.parse(config.flow)
            self.input.selected_frames = 0
        selected = self._flow_ok if self._select is not None else None
        for m in config.kernels:
            st = KernelStats(m.name, m.release, on_deliver, selected)
            k = Kernel(
                m,
                hz=config.hz,
                gro_normal_batch=config.gro_normal_batch,
                vxlan_ports=config.vxlan_ports,
                geneve_ports=config.geneve_ports,
                phys_dev=config.phys_dev,
                vxlan_dev=config.vxlan_dev,
                geneve_dev=config.geneve_dev,
                tunnel_metadata=config.tunnel_metadata,
                udp6_zero_csum_rx=config.udp6_zero_csum_rx,
                gro_max_size=config.gro_max_size,
                sink=st,
            )
            k.phys.gro_flush_timeout = config.gro_flush_timeout_ns
            k.phys.napi_defer_hard_irqs = config.napi_defer_hard_irqs
            k.phys.xdp_generic = config.phys_xdp_generic
            k.phys.gro = config.gro.get("phys", True)
            for cells in k.tunnel_cells:
                cells.dev.gro = config.gro.get("tunnel", True)
            k.phys_napi.weight = config.weight
            self.stats.append(st)
            self.kernels.append(k)
        #: per kernel, its RX queues (queue 0 is the kernel's own phys NAPI)
        self.queues: list[list[RxQueue]] = [
            add_rx_queues(k, config.rx_queues, config.weight) for k in self.kernels
        ]
        self.reseg: Resegmenter | None = None
        self._flow_mss: dict[int, int] | None = None
        self._syn_mss: dict[int, int] = {}
        if config.resegment != "off":
            mss = None if config.resegment == "auto" else int(config.resegment)
            self.reseg = Resegmenter(config.mtu, mss, config.vxlan_ports, config.geneve_ports)
            self.reseg.not_split = self.input.oversize_not_split
            if mss is None:
                self._flow_mss = {}
        #: the batch path's poll counts when it ran (``Result.batch``)
        self.batch: dict | None = None
        #: ``-f`` (None: every record)
        self._bpf = None
        if config.capture_filter is not None:
            from .capture.bpf import BpfFilter, FilterError

            try:
                self._bpf = BpfFilter(config.capture_filter)
            except FilterError as e:
                raise ConfigError(str(e)) from None
        #: a pure-shortcut switch for tests: False runs every empty deferred-timer poll one by one
        self.skip_idle_timer_polls = True
        if on_deliver is not None and hasattr(on_deliver, "bind"):
            on_deliver.bind(self.input)

    def _rss(self, data: bytes) -> int:
        if self.config.rss == "none" or not data:
            return 0
        if self.config.rss == "toeplitz-l3" and len(data) in (12, 36):
            data = data[: len(data) - 4]  # the addresses without the two ports
        h = self._hash_cache.get(data)
        if h is None:
            h = self._hash_cache[data] = toeplitz_hash(self.config.rss_key, data)
        return h

    def _flow_rx(self, fid: int) -> tuple[int, bool]:
        """(RSS hash, l4_hash) of flow ``fid``: the RSS input is a function of the flow (decoder ``flow_rss``)."""
        rx = self._rx_of_flow
        rss_of = self.decoder.flow_rss
        while len(rx) <= fid:
            rss = rss_of[len(rx)]
            rx.append((self._rss(rss), len(rss) in (12, 36) and self.config.rss == "toeplitz"))
        return rx[fid]

    def decoded(self, records: Iterable[tuple[int, bytes, int, int]]) -> Iterator[tuple]:
        """``_decoded``, with ``-f`` (BPF on the records) applied and ``--flow`` (on the decoded flows) counted.

        A record the BPF filter rejects is read and counted (``frames_read``, ``bytes``, timestamps) and then in
        ``input.filtered["bpf"]`` instead of ``frames_replayed`` / ``classes``: never silently gone. ``--flow``
        drops nothing: every frame is replayed (the selected flows share polls, buckets and MAX_GRO_SKBS with the
        others, as in the capture) and the matching flows' frames are counted in ``input.selected_frames``.
        """
        if self._bpf is None and self._select is None:
            return self._decoded(records)
        return self._filtered(records)

    def _filtered(self, records: Iterable[tuple[int, bytes, int, int]]) -> Iterator[tuple]:
        inp = self.input
        filtered = inp.filtered
        bpf = self._bpf
        if bpf is not None:
            match = bpf.match

            def passed(recs):
                for rec in recs:
                    if match(rec[1], rec[3]):
                        yield rec
                        continue
                    inp.frames_read += 1
                    inp.bytes_read += len(rec[1])
                    if inp.first_ts_ns is None:
                        inp.first_ts_ns = rec[0]
                    inp.last_ts_ns = rec[0]
                    filtered["bpf"] += 1

            records = passed(records)
        sel = self._select
        if sel is None:
            yield from self._decoded(records)
            return
        ok = self._flow_ok
        flows = self.decoder.flows
        for t in self._decoded(records):
            fid = t[3]
            while len(ok) <= fid:
                ok.append(sel.matches(flows[len(ok)], len(ok)))
            if ok[fid]:
                # every frame that enters the simulation, as frames_replayed counts them: a resegmented
                # super-frame's segments (same capture index) count one each
                inp.selected_frames += 1
            yield t

    def _decoded(self, records: Iterable[tuple[int, bytes, int, int]]) -> Iterator[tuple]:
        """Decode capture records ``(ts_ns, buf, orig_len, linktype)``; count skips; yield replayable frames.

        Yields ``(ts_ns, frame, vlan_tci, flow_id, hash, l4_hash, l4_start, index)``.
        With resegmenting on, a super-frame yields its segments (same ``ts_ns`` and capture ``index``) instead:
        ``_decoded_resegmenting``.
        """
        if self.reseg is not None:
            yield from self._decoded_resegmenting(records)
            return
        inp = self.input
        dec = self.decoder.decode
        flow_class = self.decoder.flow_class
        classes = inp.classes
        rxs = self._rx_of_flow
        for ts_ns, buf, orig_len, linktype in records:
            index = inp.frames_read
            inp.frames_read = index + 1
            inp.bytes_read += len(buf)
            if inp.first_ts_ns is None:
                inp.first_ts_ns = ts_ns
            inp.last_ts_ns = ts_ns
            if len(buf) < orig_len:
                inp.skipped[SKIP_SNAPLEN] += 1
                continue
            if linktype != DLT_EN10MB:
                buf = l2_normalize(buf, linktype)
                if buf is None:
                    inp.skipped[SKIP_LINKTYPE] += 1
                    continue
            r = dec(buf)
            if r.__class__ is str:
                inp.skipped[r] += 1
                continue
            frame, vlan, fid, _rss, l4 = r
            inp.frames_replayed += 1
            cls = flow_class[fid]
            classes[cls] += 1
            if cls != CLS_NOT_TUNNEL and outer_udp_csum_bad(frame):
                inp.outer_csum_bad += 1
            h, l4_hash = rxs[fid] if fid < len(rxs) else self._flow_rx(fid)
            yield ts_ns, frame, vlan, fid, h, l4_hash, l4, index

    def _decoded_resegmenting(self, records: Iterable[tuple[int, bytes, int, int]]) -> Iterator[tuple]:
        """``decoded`` with super-frames split first (resegment.py); in ``auto`` mode it also keeps, per tunnelled
        TCP flow, the largest TCP payload of the frames at or below the MTU (the flow's MSS for later splits)."""
        inp = self.input
        dec = self.decoder.decode
        flow_class = self.decoder.flow_class
        reseg = self.reseg
        limit = reseg.limit
        seen = self._flow_mss
        flow_mss = self._mss_of_flow if seen is not None else None
        for ts_ns, buf, orig_len, linktype in records:
            index = inp.frames_read
            inp.frames_read += 1
            inp.bytes_read += len(buf)
            if inp.first_ts_ns is None:
                inp.first_ts_ns = ts_ns
            inp.last_ts_ns = ts_ns
            if len(buf) < orig_len:
                inp.skipped[SKIP_SNAPLEN] += 1
                continue
            if linktype != DLT_EN10MB:
                buf = l2_normalize(buf, linktype)
                if buf is None:
                    inp.skipped[SKIP_LINKTYPE] += 1
                    continue
            if len(buf) > limit and reseg.oversize(buf):
                segs = reseg.split(buf, flow_mss)
                if segs is not None:
                    inp.largest_split = max(inp.largest_split, _outer_ip_len(buf))
                    if outer_udp_csum_bad(buf):  # the super-frame as captured (its segments get new sums)
                        inp.outer_csum_bad += 1
                    inp.resegmented_frames += 1
                    inp.segments_created += len(segs)
                    for seg in segs:
                        r = dec(seg)
                        if isinstance(r, str):
                            inp.skipped[r] += 1
                            continue
                        frame, vlan, fid, _rss, l4 = r
                        inp.frames_replayed += 1
                        inp.classes[flow_class[fid]] += 1
                        yield ts_ns, frame, vlan, fid, *self._flow_rx(fid), l4, index
                    continue
            r = dec(buf)
            if isinstance(r, str):
                inp.skipped[r] += 1
                continue
            frame, vlan, fid, _rss, l4 = r
            inp.frames_replayed += 1
            cls = flow_class[fid]
            inp.classes[cls] += 1
            if cls != CLS_NOT_TUNNEL and outer_udp_csum_bad(frame):
                inp.outer_csum_bad += 1
            if seen is not None and l4 and cls == CLS_TUNNEL_TCP and len(frame) <= limit:
                doff = (frame[l4 + 12] >> 4) << 2
                payload = len(frame) - l4 - doff
                if payload > seen.get(fid, 0):
                    seen[fid] = payload
                if frame[l4 + 13] & 0x02 and doff > 20:  # SYN: the MSS option the sender announced
                    opt = tcp_mss_option(frame, l4 + 20, min(l4 + doff, len(frame)))
                    if opt:
                        self._syn_mss[fid] = opt
            yield ts_ns, frame, vlan, fid, *self._flow_rx(fid), l4, index

    def _mss_of_flow(self, probe: bytes) -> int | None:
        """The MSS the sender of ``probe``'s flow used (``probe``: a header-only frame), or None: its largest TCP
        payload seen so far when at least ``TCP_MIN_SND_MSS`` (smaller writes say nothing of the MSS), else the
        MSS option of its SYN."""
        r = self.decoder.decode(probe)
        if isinstance(r, str):
            return None
        seen = self._flow_mss.get(r[2], 0)
        return seen if seen >= TCP_MIN_SND_MSS else self._syn_mss.get(r[2])

    def _skbs(self, k: Kernel, batch: list[tuple], shared: tuple) -> list[SkBuff]:
        """The skbs the driver builds for one poll's frames on kernel ``k``: RSS hash, VLAN tag, checksum state.

        ``shared``: ``_poll_shared``'s per-poll values (CHECKSUM_COMPLETE sums, the poll's ``PollSums``).
        """
        sums, ps, states = shared
        ip_summed, ip_summed_no_l4, csum_level = self._rx_csum
        complete = ip_summed == CHECKSUM_COMPLETE
        partial = ip_summed == CHECKSUM_PARTIAL
        phys = k.phys
        skbs = []
        for j, (ts_ns, frame, vlan, fid, h, l4_hash, l4, index) in enumerate(batch):
            if states is not None:  # the --nic preset's per-frame decision
                ip_summed, csum_level = states[j]
                complete = ip_summed == CHECKSUM_COMPLETE
            skbs.append(
                SkBuff(
                    frame,
                    0,
                    ts_ns,
                    index,
                    fid,
                    data=14,
                    protocol=(frame[12] << 8) | frame[13],
                    dev=phys,
                    hash=h,
                    l4_hash=l4_hash,
                    vlan_tci=vlan,
                    ip_summed=ip_summed if l4 or not partial else ip_summed_no_l4,
                    csum_level=csum_level,
                    csum=sums[j] if complete else 0,
                    csum_start=l4 if partial else 0,
                    addr=0xFFFF888100000000 + (index << 8),
                    psums=ps,
                    pidx=j,
                )
            )
        return skbs

    def _poll_shared(self, batch: list[tuple]) -> tuple:
        """What every kernel's skbs of one poll share: the CHECKSUM_COMPLETE values, the ``PollSums`` batch that
        serves software checksums (where bytes are summed, not a decision) and, with a --nic preset deciding,
        each frame's ``(ip_summed, csum_level)`` (``_nic_states``)."""
        states = self._nic_states(batch) if self.preset is not None else None
        if states is not None:
            complete = any(st[0] == CHECKSUM_COMPLETE for st in states)
        else:
            complete = self.profile.ip_summed == CHECKSUM_COMPLETE
        ps = PollSums([f[1] for f in batch])
        if complete:
            sums = ps.fill()
            return sums, ps, states
        return None, ps, states

    def _nic_state_of_flow(self, fid: int) -> tuple[int, int, str]:
        """(ip_summed, csum_level, tunnel kind) the preset decides for flow ``fid``'s frames when their checksums
        verify: a function of the flow (outer family, outer UDP checksum zero or not, tunnelled or not)."""
        st = self._flow_state
        flows = self.decoder.flows
        classes = self.decoder.flow_class
        while len(st) <= fid:
            key = flows[len(st)]
            tunnelled = classes[len(st)] != CLS_NOT_TUNNEL
            ip_summed, level = self.preset.rx_state(
                ":" in key.outer_src, key.outer_csum_zero, self.config.nic_tunnel_port, tunnelled
            )
            st.append((ip_summed, level, key.tunnel if tunnelled else ""))
        return st[fid]

    def _nic_states(self, batch: list[tuple]) -> list[tuple[int, int]]:
        """Per frame of one poll: the preset's state for its flow, CHECKSUM_NONE instead of UNNECESSARY when the
        preset reports bad checksums as NONE and a checksum the hardware checks does not verify
        (``nic.hw_checksums_ok``)."""
        out = []
        check = self.preset.bad_csum_none
        for f in batch:
            ip_summed, level, tunnel = self._nic_state_of_flow(f[3])
            if check and ip_summed == CHECKSUM_UNNECESSARY and not hw_checksums_ok(f[1], level, tunnel, f[6]):
                ip_summed, level = CHECKSUM_NONE, 0
            out.append((ip_summed, level))
        return out

    def run_polls(self, frames: Iterable[tuple]) -> None:
        """Run every poll of ``frames`` through every kernel (one read feeds all models).

        One RX queue without gro_flush_timeout: the poll schedule does not depend on the kernel, ``iter_polls``
        forms it once for all kernels. Otherwise ``_run_scheduled``.
        """
        cfg = self.config
        if cfg.rx_queues > 1 or cfg.gro_flush_timeout_ns:
            self._run_scheduled(frames)
            return
        for poll_time, batch in iter_polls(frames, cfg.poll, cfg.weight):
            self.run_poll(batch, poll_time)

    def run_poll(self, batch: list[tuple], poll_time: int) -> None:
        """One poll of decoded frames ``batch`` at ``poll_time`` (ns) through every kernel (one RX queue)."""
        shared = self._poll_shared(batch)
        for i, k in enumerate(self.kernels):
            skbs = self._skbs(k, batch, shared)
            phys = self.stats[i].stages["phys"]
            n = len(skbs) if self._select is None else self._selected_in(batch)
            phys.frames_in += n
            phys.skbs_in += n
            k.net_rx_action(skbs, poll_time)

    def _selected_in(self, batch: list[tuple]) -> int:
        """Frames of ``batch`` (decoded tuples) whose flow ``--flow`` selects."""
        ok = self._flow_ok
        return sum(1 for t in batch if ok[t[3]])

    def _run_scheduled(self, frames: Iterable[tuple]) -> None:
        """Poll schedules per RX queue (``PollSchedule``), run in time order across queues.

        Without gro_flush_timeout one schedule per queue serves every kernel; with it each kernel has its own
        (its hrtimer depends on what its GRO holds). Holds only the frames not yet polled.
        """
        cfg = self.config
        n = cfg.rx_queues
        if cfg.gro_flush_timeout_ns:
            groups = [[i] for i in range(len(self.kernels))]
        else:
            groups = [list(range(len(self.kernels)))]
        scheds = [[PollSchedule(cfg.poll, cfg.weight) for _ in range(n)] for _ in groups]
        indir = [ethtool_rxfh_indir_default(i, n) for i in range(RSS_INDIR_TABLE_SIZE)]
        clock = None
        for f in frames:
            t = f[0]
            if clock is not None and t < clock:
                t = clock
            clock = t
            q = indir[f[4] % RSS_INDIR_TABLE_SIZE]
            for g, ss in zip(groups, scheds, strict=True):
                self._advance(g, ss, t)
                ss[q].push(t, f)
        for g, ss in zip(groups, scheds, strict=True):
            for s in ss:
                s.end_time = clock or 0
            self._advance(g, ss, None)

    def _advance(self, group: list[int], scheds: list[PollSchedule], now: int | None) -> None:
        """Run, in time order, every poll of ``scheds`` that happens before an arrival at ``now`` (None: all)."""
        while True:
            best = -1
            bt = 0
            for q, s in enumerate(scheds):
                d = s.due(now)
                if d is not None and (best < 0 or d < bt):
                    best, bt = q, d
            if best < 0:
                return
            if now is not None and len(scheds) > 1:
                for q, s in enumerate(scheds):
                    if q != best:
                        lb = s.lower_bound(now)
                        if lb is not None and lb < bt:
                            return  # another queue may still poll earlier: wait for its next frame
            self._poll(group, scheds[best], best, bt, now)

    def _poll(self, group: list[int], s: PollSchedule, q: int, t: int, now: int | None) -> None:
        """One poll of RX queue ``q`` at ``t`` on each kernel of ``group``; feeds the outcome back to ``s``."""
        multi = len(self.queues[group[0]]) > 1
        if s.state == _MASKED and len(group) == 1 and self.skip_idle_timer_polls:
            t = self._skip_idle_timer_polls(s, self.queues[group[0]][q].napi, t, now)
        batch = s.take(t)
        work = len(batch)
        shared = self._poll_shared(batch)
        timeout = 0
        masked = False
        for i in group:
            k = self.kernels[i]
            rq = self.queues[i][q]
            if multi:
                enter_rx_queue(k, rq)
            deferred = rq.napi.defer_hard_irqs_count
            skbs = self._skbs(k, batch, shared)
            phys = self.stats[i].stages["phys"]
            n = work if self._select is None else self._selected_in(batch)
            phys.frames_in += n
            phys.skbs_in += n
            timeout = k.net_rx_action(skbs, t)
            if timeout and work < rq.napi.weight:
                # napi_complete_done returned false (IRQ left masked) when its deferral branch ran with a timeout
                masked = k.phys.napi_defer_hard_irqs > 0 if work else deferred > 0
        s.done(t, work, timeout, masked)

    @staticmethod
    def _skip_idle_timer_polls(s: PollSchedule, napi: Napi, t: int, now: int | None) -> int:
        """Shortcut of the empty timer polls of a masked NAPI: returns the time of the last one to run.

        Shortcuts running ``napi_complete_done(0)`` once per gro_flush_timeout while nothing arrives: each such
        poll only decrements ``defer_hard_irqs_count`` and re-arms the timer, and the one that finds the count at
        0 unmasks the IRQ (and flushes everything). While GRO holds packets, an empty poll's
        ``napi_gro_flush(napi, true)`` flushes only packets of older jiffies: the polls that fall in the jiffy of
        every held packet's ``age`` do nothing else, so they are skipped up to the first poll of the next jiffy,
        which runs. The cost is then bounded by frames and jiffies crossed while packets are held, never by
        duration / gro_flush_timeout. Results equal running them one by one (tests/test_poll_models.py,
        tests/test_robustness.py).
        Kernel: net/core/dev.c ``napi_complete_done``, ``napi_watchdog``; ``napi_gro_flush`` (flush_old).
        """
        first = s.pending[0][0] if s.pending else now
        if first is not None and first <= t:
            return t
        to = napi.dev.gro_flush_timeout
        count = napi.defer_hard_irqs_count
        polls = count + 1 if first is None else min(count + 1, (first - 1 - t) // to + 1)
        if napi.held():
            hz = napi.kernel.hz
            jiffy = t * hz // 1_000_000_000
            if napi.rx_list or any(skb.cb.age != jiffy for head in napi.gro_hash for skb in head):
                return t
            next_jiffy = -(-(jiffy + 1) * 1_000_000_000 // hz)  # first ns of the next jiffy
            polls = min(polls, (next_jiffy - 1 - t) // to + 2)  # the skipped ones all fall in this jiffy
        if polls <= 1:
            return t
        napi.defer_hard_irqs_count = count - (polls - 1)
        napi.stats.polls += polls - 1
        return t + (polls - 1) * to

    def finish(self) -> None:
        """Collect every RX queue's NAPI counters and every CPU's cell counters into the kernels' stage stats.

        With ``--flow`` the NAPI-wide counters (bytes GRO checksummed in software, GRO results, gro_complete
        errors) cover every flow, so they are not attributed to the selected ones: they become None (n/a),
        ``_finish_selected``.
        """
        if self._select is not None:
            self._finish_selected()
            return
        for i, k in enumerate(self.kernels):
            st = self.stats[i]
            phys = st.stages["phys"]
            tun = st.stages["tunnel"]
            # gro_cells backlog drops are already counted: the stack outcome "gro_cells_receive:backlog_full"
            for rq in self.queues[i]:
                phys.sw_csum_bytes += rq.napi.stats.sw_csum_bytes
                phys.results.update(rq.napi.stats.results)
                phys.complete_errors += rq.napi.stats.complete_errors
                for cells in rq.cells:
                    tun.sw_csum_bytes += cells.napi.stats.sw_csum_bytes
                    tun.results.update(cells.napi.stats.results)
                    tun.complete_errors += cells.napi.stats.complete_errors
            if len(self.queues[i]) > 1:
                enter_rx_queue(k, self.queues[i][0])
        if checks_enabled():
            self.check_drained()
            for st in self.stats:
                check_conservation(st)

    def check_drained(self) -> None:
        """Assert that every kernel holds nothing at the end of the input: no GRO packet in any NAPI's lists, no
        GRO_NORMAL batch, no skb in a gro_cells queue or backlog. Raises: ConservationError."""
        for i in range(len(self.kernels)):
            for q, rq in enumerate(self.queues[i]):
                for cells in [None, *rq.cells, *rq.sock_cells]:
                    napi = rq.napi if cells is None else cells.napi
                    where = f"{self.stats[i].name} queue {q} " + (
                        "phys NAPI" if cells is None else f"{cells.dev.name} cell"
                    )
                    if napi.held() or napi.rx_list:
                        raise ConservationError(f"{where}: {napi.held()} GRO packets held at end of input")
                    if cells is not None and (cells.napi_skbs or cells.backlog):
                        raise ConservationError(f"{where}: {len(cells.napi_skbs)} skbs never polled")

    def _finish_selected(self) -> None:
        """``finish`` with ``--flow``: NAPI-wide counters are None, except gro_complete errors when there were none
        at all (then the selected flows had none either); the end-of-replay checks run as in ``finish``."""
        for i, k in enumerate(self.kernels):
            st = self.stats[i]
            errors = {"phys": 0, "tunnel": 0}
            for rq in self.queues[i]:
                errors["phys"] += rq.napi.stats.complete_errors
                errors["tunnel"] += sum(c.napi.stats.complete_errors for c in rq.cells)
            for name, stage in st.stages.items():
                stage.sw_csum_bytes = None
                stage.results = None
                stage.complete_errors = 0 if errors[name] == 0 else None
            if len(self.queues[i]) > 1:
                enter_rx_queue(k, self.queues[i][0])
        if checks_enabled():
            self.check_drained()
            for st in self.stats:
                if all(stage.complete_errors is not None for stage in st.stages.values()):
                    check_conservation(st)

    def result(self) -> Result:
        inp = self.input
        inp.tunnel_ports_not_configured = {k: dict(v) for k, v in self.decoder.unconfigured.items()}
        for note in tunnel_notes(inp, self.config) + capture_notes(inp, self.config):
            if note not in inp.notes:
                inp.notes.append(note)
        return Result(
            self.input, self.config, self.stats, self.decoder.flows, self.decoder.flow_class, self.batch
        )


def replay_capture(
    path: str, config: ReplayConfig, on_deliver: Callable | None = None, progress=None
) -> Result:
    """Replay a capture file through every kernel model in ``config``.

    Args: path: pcap/pcapng (optionally gzip), a FIFO or ``-`` (stdin), read once; config: models and NIC/poll settings; on_deliver: observer of
    every ``netif_receive_skb`` (kernel name, stage, device, skb, ns); progress: called with the frame count.
    A classic pcap of Ethernet frames (plain or gzip) takes the batch path (pollcache.py) when the configuration
    allows it (``pollcache.batch_eligible``) and nothing observes single deliveries: same results, and
    ``Result.batch`` counts its polls.
    Raises: capture.reader.CaptureError (unreadable input), ConfigError.
    """
    detected: dict[str, dict[int, int]] = {}
    if config.detect_tunnels:
        detected = detect_tunnel_ports(path, config)
        if detected:
            config = replace(
                config,
                vxlan_ports=config.vxlan_ports + tuple(sorted(detected.get("vxlan", {}))),
                geneve_ports=config.geneve_ports + tuple(sorted(detected.get("geneve", {}))),
            )
    rep = Replayer(config, on_deliver)
    rep.input.tunnel_ports_detected = detected
    with open_capture(path) as cap:  # first: a missing or unreadable file is a CaptureError (one line)
        rep.input.path = str(path)
        if progress is not None and hasattr(progress, "bind_capture"):
            progress.bind_capture(cap)  # a progress display that shows bytes read against the file's size
        records = cap if progress is None else _counting(cap, progress)
        sel = plan_interfaces(
            str(path), cap, lambda: Decoder(config.vxlan_ports, config.geneve_ports), config.interface
        )
        if may_hold_several(cap):
            records = sel.filter(cap, records, rep.input)
        batch = (
            batch_eligible(config, on_deliver is not None)
            and config.flow is None  # the filters apply on the frame-by-frame path (Replayer.decoded)
            and config.capture_filter is None
            and PcapChunks.supported(cap)
            and cap.linktype == DLT_EN10MB
        )
        if batch:
            br = BatchReplay(rep)
            br.run(cap, progress)
            rep.batch = {
                "polls_cached": br.cache.hits,
                "polls_simulated": br.cache.misses + br.cache.uncacheable,
            }
        else:
            rep.run_polls(rep.decoded(records))
        rep.input.sha256 = cap.sha256()  # of the bytes read: a pipe is never reopened
        if cap.truncated_records:
            rep.input.frames_read += cap.truncated_records
            rep.input.skipped[SKIP_TRUNCATED_RECORD] += cap.truncated_records
        sel.check()  # a pipe's --interface that matched nothing: known only now
        rep.input.notes.extend(sel.notes())
        if len(sel.by_key) > 1:
            rep.input.interfaces = sel.as_list()
    rep.finish()
    return rep.result()


def _counting(records, progress):
    for n, r in enumerate(records, 1):
        yield r
        if not n & 0x3FF:
            progress(n)


def replay_frames(
    frames: Iterable[tuple[int, bytes]], config: ReplayConfig, on_deliver: Callable | None = None
) -> Result:
    """Replay in-memory Ethernet frames ``(ts_ns, frame)`` (tests, synth). Same semantics as ``replay_capture``."""
    rep = Replayer(config, on_deliver)
    rep.run_polls(rep.decoded((ts, buf, len(buf), DLT_EN10MB) for ts, buf in frames))
    rep.finish()
    return rep.result()
