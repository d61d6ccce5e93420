"""Replay configuration: ``ReplayConfig`` (everything a replay needs besides the frames), the poll model and the
parsers of the options that build them (``--gro``, ``--resegment``). No I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..capture.digest import DEFAULT_DIGEST
from ..kernel.model import K_5_11, K_5_12, KernelModel, same_model, same_model_words
from ..kernel.nic import (
    DEFAULT_POLL_GAP_USECS,
    DEFAULT_RSS_KEY,
    NIC_PRESETS,
    RSS_MODES,
    RX_CSUM_PROFILES,
    unread_switches,
)
from ..kernel.nic_skb import VETH_AF_PACKET
from ..kernel.skbuff import CHECKSUM_COMPLETE, CHECKSUM_NONE, CHECKSUM_UNNECESSARY
from ..project import decimal_in, decimal_number, plain_number
from ..report import FLOWS_MAX_DEFAULT
from ..resegment import MAX_TCP_OPTION_BYTES, TCP_MIN_SND_MSS, min_payload
from .flows import CLOSE_TIMEOUT_NS, IDLE_TIMEOUT_NS

if TYPE_CHECKING:
    from ..packet.decode import FlowKey

#: Entries of the RSS indirection table (a common size; drivers use 64..512).
RSS_INDIR_TABLE_SIZE = 128


class ConfigError(ValueError):
    """A configuration value that cannot be used (one-line message)."""


#: The largest time constant of a poll model, µs: ethtool's rx-usecs (``struct ethtool_coalesce``'s
#: ``rx_coalesce_usecs``, uapi/linux/ethtool.h) is a __u32; a larger one overflows the engine's 64-bit ns times
POLL_USECS_MAX = (1 << 32) - 1


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
        """Parse ``budget``, ``gap:US`` or ``rx-usecs:US`` (keywords in any letter case; US a decimal number of µs,
        ``project.decimal_number``, from 0 to ``POLL_USECS_MAX``). Raises ConfigError."""
        given, text = text, text.strip().lower()
        if text == "budget":
            return cls("budget")
        kind, _, value = text.partition(":")
        if kind in ("gap", "rx-usecs") and value:
            us = decimal_number(value)
            if us is not None and decimal_in(value, 0, POLL_USECS_MAX):  # NaN and infinity fail too
                return cls(kind, us + 0.0)  # -0 is 0
        raise ConfigError(
            f"invalid poll model {given!r}: use budget, gap:US or rx-usecs:US, US a decimal number of µs from 0 to "
            f"{POLL_USECS_MAX} (ethtool's rx-usecs is 32 bits)"
        )

    def __str__(self) -> str:
        """``budget``, ``gap:3``, ``rx-usecs:4294967295``: the time constant as it can be typed back
        (``project.plain_number``; ``:g`` printed 4.29497e+09)."""
        return self.kind if self.kind == "budget" else f"{self.kind}:{plain_number(self.usecs)}"

    @property
    def reads_times(self) -> bool:
        """Whether the capture's times decide which frames share a poll: ``gap`` and ``rx-usecs``; ``budget`` takes
        ``weight`` frames whatever their times."""
        return self.kind != "budget"

    def describe(self, weight: int = 64) -> str:
        """One line for the report: the model and what it means, e.g. ``gap:3 (a poll after each pause > 3 µs, …)``;
        ``weight``: the NAPI weight (frames per poll, ``ReplayConfig.weight``; NAPI_POLL_WEIGHT 64 by default)."""
        if self.kind == "budget":
            return f"budget ({weight}-frame polls in capture order, times ignored)"
        if self.kind == "gap":
            src = (
                ", the default time-aware model: mlx5's CQE-based moderation"
                if self.usecs == DEFAULT_POLL_GAP_USECS
                else ""
            )
            return f"{self} (a poll after each pause > {plain_number(self.usecs)} µs{src})"
        return f"{self} (interrupt moderation: a poll {plain_number(self.usecs)} µs after the first frame)"


#: The drivers whose RX checksum state each ``--rx-csum`` profile is (kernel/nic.py ``RxCsumProfile``; gro-spec §7.6)
RX_CSUM_DRIVERS = {
    "none": "CHECKSUM_NONE: RX checksum offload off or a packet type the parser does not know",
    "unnecessary": "CHECKSUM_UNNECESSARY level 0: ice/i40e without the tunnel port programmed, virtio-net DATA_VALID",
    "unnecessary-tunnel": "CHECKSUM_UNNECESSARY level 1: a tunnel-aware parser",
    "complete": "CHECKSUM_COMPLETE: mlx5",
    "partial": "CHECKSUM_PARTIAL: veth carrying locally generated frames",
}


#: include/uapi/linux/if.h: bytes of a device name, its terminating NUL included
IFNAMSIZ = 16
#: the bytes net/core/dev.c ``dev_valid_name`` refuses in a name: ``/``, ``:`` and what the kernel's ``isspace``
#: (lib/ctype.c, one byte at a time) calls space: 9–13, 32 and 0xA0
_NOT_IN_NAMES = frozenset(b"/:\t\n\v\f\r \xa0")


@dataclass
class ReplayConfig:
    """Everything a replay needs besides the frames. Units: ns for times, bytes for sizes."""

    kernels: tuple[KernelModel, ...] = (K_5_11, K_5_12)
    #: how the user chose the kernels: "no-fix", "fix", "kernel" (--kernel) or "" (the default pair, or not from the
    #: command line); the verdict's advice names options that work from it. Not part of the JSON document.
    kernels_option: str = ""
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
    #: or name); None: the device of the first tunnel frame (capture/interfaces.py)
    interface: str | None = None
    digest: str = DEFAULT_DIGEST  #: ``--digest``: of the capture's bytes, the document's (capture/digest.py)
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
    #: the vxlan devices are made with ``gbp`` (VXLAN_F_GBP): G-flagged frames are accepted and their Group Based Policy
    #: ID and D/A bits go into the tunnel metadata (kernel/vxlan_core.py ``vxlan_parse_gbp_hdr``)
    vxlan_gbp: bool = False
    #: the kernels have the VLAN GRO offloads (CONFIG_VLAN_8021Q y or m, as distribution kernels are built): an
    #: 802.1Q/802.1ad tag in the inner frame is GRO'd through (kernel/vlan_core.py); False: it finds no handler
    vlan_offload: bool = True
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
    #: the JSON document's ``flows[]``: at most this many flows in full per kernel (``--flows-max``), the others
    #: summed in ``flows_summary.omitted``; also how many affected flows the verdict keeps in full
    flows_max: int = FLOWS_MAX_DEFAULT
    #: a flow silent this long (ns of capture time) is retired (``sim/flows.py``; default ``IDLE_TIMEOUT_NS``, 120 s
    #: as conntrack); 0: no flow is retired, every flow is kept to the end of the input. Both paths retire the same
    #: flows at the same polls (``Replayer.poll_end``)
    flow_idle_timeout_ns: int = IDLE_TIMEOUT_NS
    #: a flow whose TCP connection sent FIN or RST is retired after this much silence (ns)
    flow_close_timeout_ns: int = CLOSE_TIMEOUT_NS
    #: flows end by the timeouts above (a key back starts a new flow; splits are judged by when flows lived) but are
    #: never retired, every flow's counters kept to the end (``explain``, which explains every flow)
    flows_kept: bool = False

    def _validate_flows(self) -> None:
        if self.flows_max < 0 or self.flow_idle_timeout_ns < 0 or self.flow_close_timeout_ns < 0:
            raise ConfigError("--flows-max and the flow timeouts must be >= 0")

    def _validate_kernels(self) -> None:
        """Two ``kernels`` of one model (``model.same_model``) would compare a model with itself: refused, as the CLI
        refuses two such ``--kernel`` strings."""
        pair = same_model(self.kernels, unread_switches(self.nic))
        if pair is not None:
            a, b = (self.kernels[i] for i in pair)
            raise ConfigError(same_model_words(f"kernels {a.name}", b.name, a.switches(), b.switches()))

    def _validate_devices(self) -> None:
        """Device names as the kernel takes them (net/core/dev.c ``dev_valid_name``: 1..15 bytes, IFNAMSIZ 16 with
        its NUL; not ``.`` or ``..``; no ``/``, ``:`` or byte the kernel's ``isspace`` takes), and one name per
        device: no two tunnel devices alike, the physical device not named like a tunnel device (the reports key
        devices by name)."""
        for option, name in (
            ("--phys-dev", self.phys_dev),
            ("--tunnel-dev", self.vxlan_dev),
            ("--tunnel-dev", self.geneve_dev),
        ):
            raw = name.encode("utf-8", "surrogateescape")
            if (
                not raw
                or len(raw) >= IFNAMSIZ
                or raw in (b".", b"..")
                or any(b in _NOT_IN_NAMES for b in raw)
            ):
                raise ConfigError(
                    f"{option} {name[:40]!r}: not a Linux device name (1 to {IFNAMSIZ - 1} bytes, not . or .., "
                    "no /, : or space: bytes 9-13, 32, 0xA0)"
                )
        tunnels = [name for name, stage, _port in self.devices() if stage == "tunnel"]
        twice = next((name for i, name in enumerate(tunnels) if name in tunnels[:i]), None)
        if twice is not None:  # a --tunnel-dev NAME-PORT equal to a further port's name cut to 15 bytes
            raise ConfigError(
                f"--tunnel-dev {self.vxlan_dev!r}: two tunnel devices would be named {twice!r}; choose another name"
            )
        if self.phys_dev in tunnels:
            raise ConfigError(
                f"--phys-dev {self.phys_dev!r} is also the name of a tunnel device (--tunnel-dev, or a further port's "
                "NAME-PORT): one device each"
            )

    def _validate_nic(self) -> None:
        """The --nic preset known, the checksum state it decides only with it, and its tunnel port programmable only
        when its driver offloads tunnel ports (kernel/nic.py ``NicPreset.tunnel_port_offload``)."""
        if self.nic is not None and self.nic not in NIC_PRESETS:
            raise ConfigError(f"unknown --nic {self.nic!r}; choose from {', '.join(NIC_PRESETS)}")
        if self.rx_csum == "nic" and self.nic is None:
            raise ConfigError("rx_csum 'nic' needs a --nic preset")
        if self.nic_tunnel_port and self.nic is not None and not NIC_PRESETS[self.nic].tunnel_port_offload:
            raise ConfigError(
                f"--nic-tunnel-port on: the {self.nic} preset has no tunnel port offload (udp_tunnel_nic) to "
                "program; leave it off"
            )

    def validate(self) -> None:
        """Raises ConfigError naming the bad value."""
        self._validate_kernels()
        self._validate_nic()
        if self.rx_csum not in RX_CSUM_PROFILES and self.rx_csum != "nic":
            raise ConfigError(
                f"unknown --rx-csum {self.rx_csum!r}; choose from {', '.join(RX_CSUM_PROFILES)}"
            )
        if self.rss not in RSS_MODES:
            raise ConfigError(f"unknown --rss {self.rss!r}; choose {', '.join(RSS_MODES)}")
        self._validate_flows()
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
        self._validate_devices()  # the devices of the ports as the kernels make them
        if not 1 <= self.rx_queues <= RSS_INDIR_TABLE_SIZE:
            raise ConfigError(f"--rx-queues must be 1..{RSS_INDIR_TABLE_SIZE}")
        self.resegment = parse_resegment(str(self.resegment))
        unknown = set(self.gro) - set(GRO_DEVICES)
        if unknown:
            raise ConfigError(f"--gro: unknown device {min(unknown)!r}; use phys or tunnel")
        if not 68 <= self.mtu <= 65535:
            raise ConfigError("--mtu must be 68..65535 (bytes of the outer IP datagram)")
        if self.flow is not None:
            from ..packet.flowsel import FlowSelector, SelectorError

            try:
                FlowSelector.parse(self.flow)
            except SelectorError as e:
                raise ConfigError(str(e)) from None
        if self.capture_filter is not None:
            from ..capture.bpf import BpfFilter, FilterError

            try:
                BpfFilter(self.capture_filter)
            except FilterError as e:
                raise ConfigError(str(e)) from None

    def rx_csum_of_flow(self, key: FlowKey) -> str:
        """The RX checksum state (an RX_CSUM_PROFILES name) frames of flow ``key`` (decode.FlowKey) get when their
        checksums verify: ``rx_csum``, or with a --nic preset deciding, that preset's state for the flow."""
        if self.rx_csum != "nic":
            return self.rx_csum
        assert self.nic is not None  # check(): rx_csum "nic" needs --nic
        tunnelled = bool(key.tunnel)
        ip_summed, level = NIC_PRESETS[self.nic].rx_state(
            ":" in key.outer_src, key.outer_csum_zero, self.nic_tunnel_port, tunnelled
        )
        if ip_summed == CHECKSUM_UNNECESSARY:
            return "unnecessary-tunnel" if level else "unnecessary"
        return {CHECKSUM_NONE: "none", CHECKSUM_COMPLETE: "complete"}.get(ip_summed, "partial")

    def gro_runs(self) -> dict[str, bool]:
        """Per stage (``"phys"``, ``"tunnel"``) whether GRO runs there: not where ``netif_elide_gro`` holds
        (include/linux/netdevice.h: the GRO feature off, ``--gro phys=off`` / ``--gro tunnel=off``, or a generic XDP
        program on the phys device, ``phys_xdp_generic``: the kernel backend's ``--defer-to-tunnel`` and ``--gro
        phys=off``). Where it does not, no skb reaches a gro_receive callback (dev_gro_receive passes it up as
        GRO_NORMAL; gro_cells_receive hands it to netif_rx): neither tcp_gro_receive nor udp_gro_receive's
        zero-checksum gate sees it."""
        gro = self.gro or {}
        return {
            "phys": gro.get("phys", True) and not self.phys_xdp_generic,
            "tunnel": gro.get("tunnel", True),
        }

    def devices(self) -> list[tuple[str, str, int | None]]:
        """``(name, stage, UDP port)`` of every simulated device a kernel of this configuration makes: the phys
        device (``"phys"``, port None), then each tunnel device (``"tunnel"``) as kernel/kernel.py
        ``tunnel_devices`` names it."""
        from ..kernel.kernel import tunnel_devices

        tunnels = tunnel_devices(self.vxlan_dev, self.vxlan_ports, self.geneve_dev, self.geneve_ports)
        return [(self.phys_dev, "phys", None)] + [(name, "tunnel", port) for name, _kind, port in tunnels]

    def rx_csum_words(self) -> str:
        """The RX checksum model in short, for notes: ``--rx-csum X``, ``--rx-csum X (--nic NAME)`` or ``--nic NAME
        (tunnel port on|off)``, ``(no tunnel port offload)`` for a preset without one (virtio-net, veth: no
        udp_tunnel_nic port to turn on or off)."""
        if self.rx_csum == "nic" and self.nic is not None:  # validate(): "nic" needs a preset
            if not NIC_PRESETS[self.nic].tunnel_port_offload:
                return f"--nic {self.nic} (no tunnel port offload)"
            return f"--nic {self.nic} (tunnel port {'on' if self.nic_tunnel_port else 'off'})"
        return f"--rx-csum {self.rx_csum}" + (f" (--nic {self.nic})" if self.nic else "")

    def tunnel_devices_by_port(self) -> dict[str, str]:
        """Each tunnel port's device name (``devices``), keyed by the port as text: the JSON's
        ``config.tunnel_devices``, e.g. ``{"4789": "vxlan0", "8472": "vxlan0-8472", "6081": "geneve0"}``."""
        return {str(port): name for name, stage, port in self.devices() if stage == "tunnel"}

    def nic_words(self) -> str:
        """How the report's NIC line (text, Markdown) and JSON ``config.nic.description`` name the NIC model. With
        ``--nic`` the preset's; without it the checksum state and the poll model are separate defaults that no one
        driver has together (``unnecessary`` is ice/i40e's or virtio-net's, the default poll model mlx5's):
        "no --nic (checksum state and poll model set separately, not one driver's preset): --rx-csum unnecessary
        (CHECKSUM_UNNECESSARY level 0: ice/i40e without the tunnel port programmed, virtio-net DATA_VALID); skbs laid
        out as veth's from AF_PACKET …" (the tunnel stage's frag_list flushes follow: kernel/nic_skb.py). A preset
        whose driver's skb layout is not modelled (virtio-net, vmxnet3, ena, gve) says so."""
        if self.nic is not None:
            preset = NIC_PRESETS.get(self.nic)
            unbuilt = (
                preset is not None and preset.rx_skb.head_frag_from is None and not preset.rx_skb.af_packet
            )
            return self.rx_csum_words() + (
                f"; its skbs built with a linear head, as veth's under 4,080 bytes (the {self.nic} driver's is not "
                "modelled: on 6.1+ the tunnel device's skb_has_frag_list flushes may be more than the driver's)"
                if unbuilt
                else ""
            )
        return (
            "no --nic (checksum state and poll model set separately, not one driver's preset): "
            f"--rx-csum {self.rx_csum} ({RX_CSUM_DRIVERS[self.rx_csum]}); skbs laid out as veth's from AF_PACKET, "
            "the kernel backend's (a linear head under 4,080 bytes: a phys aggregate of such frames "
            "carries a frag_list, which the tunnel device flushes from v6.1; --nic DRIVER builds a driver's)"
        )

    def poll_words(self) -> str:
        """The poll model for the report's NIC line and JSON ``config.poll_model``: ``PollModel.describe``, and when a
        ``--nic`` preset without interrupt moderation of its own (virtio-net, vmxnet3, ena, gve, veth: kernel/nic.py
        ``NicPreset.poll``) leaves the default (mlx5's) standing, that it does."""
        words = self.poll.describe(self.weight)
        preset = NIC_PRESETS.get(self.nic) if self.nic else None
        if preset is not None and preset.poll is None and self.poll == PollModel():
            words = (
                words[:-1]
                + f"; {self.nic} has no interrupt moderation of its own here, so that default stands)"
            )
        return words

    def as_dict(self) -> dict:
        return {
            # name, release, upstream base, stable backports (stable commit, point release), notes, fix origin
            "kernels": [m.describe() for m in self.kernels],
            "nic": {
                "rx_csum": self.rx_csum,
                "rss": self.rss,
                "rss_key": self.rss_key.hex(),
                # the NIC line's words: the preset's, or that the defaults are no one driver's (nic_words)
                "description": self.nic_words(),
                # the driver preset (--nic): its source, RSS fields, moderation default; None without one
                "preset": (
                    dict(NIC_PRESETS[self.nic].as_dict(), tunnel_port=self.nic_tunnel_port)
                    if self.nic
                    else None
                ),
                # the skb layout the driver step builds (kernel/nic_skb.py): the preset's, else veth's from AF_PACKET
                "rx_skb": (NIC_PRESETS[self.nic].rx_skb if self.nic else VETH_AF_PACKET).as_dict(),
            },
            "poll": str(self.poll),
            "poll_model": self.poll_words(),
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
            "tunnel_devices": self.tunnel_devices_by_port(),
            "tunnel_metadata": self.tunnel_metadata,
            "udp6_zero_csum_rx": self.udp6_zero_csum_rx,
            "vxlan_gbp": self.vxlan_gbp,
            "vlan_offload": self.vlan_offload,
            "gro": {role: bool(self.gro.get(role, True)) for role in GRO_DEVICES},
            "rx_queues": self.rx_queues,
            "resegment": str(self.resegment),
            "mtu": self.mtu,
            "flows": {
                "max_rows": self.flows_max,
                "idle_timeout_ns": self.flow_idle_timeout_ns,
                "close_timeout_ns": self.flow_close_timeout_ns,
            },
            **({"flow": self.flow} if self.flow is not None else {}),
            **({"filter": self.capture_filter} if self.capture_filter is not None else {}),
        }


GRO_DEVICES = ("phys", "tunnel")


def parse_gro(items: Iterable[str]) -> dict[str, bool]:
    """Parse ``--gro DEV=on|off`` items (DEV: ``phys`` or ``tunnel``) into {role: GRO on}; both default to on.

    What ``ethtool -K DEV gro off`` does: NETIF_F_GRO cleared, so ``netif_elide_gro`` is true on that device
    (phys: ``dev_gro_receive`` passes every skb up as GRO_NORMAL; tunnel: ``gro_cells_receive`` uses ``netif_rx``).
    Hardware GRO (``rx-gro-hw``) and LRO are refused: the NIC would merge before the kernel sees the frames, by
    rules of its own. One device given both on and off is refused; the same value twice is harmless. Raises
    ConfigError.
    """
    out = {role: True for role in GRO_DEVICES}
    given: dict[str, str] = {}  # role → the value given first
    for item in items:
        dev, sep, value = str(item).partition("=")
        dev, value = dev.strip().lower(), value.strip().lower()
        if dev in ("hw", "rx-gro-hw", "lro", "large-receive-offload") or value in ("hw", "lro"):
            raise ConfigError(
                "--gro: hardware GRO / LRO is not modelled (the NIC merges by its own rules before the kernel "
                "sees the frames); capture on the host and replay with --gro phys=on|off"
            )
        if not sep or dev not in GRO_DEVICES or value not in ("on", "off"):
            raise ConfigError(f"invalid --gro {item!r}: use phys=on|off or tunnel=on|off")
        if dev in given and given[dev] != value:
            # as for every option given twice in contradiction (cli/command.py): refused, not "the last wins"
            raise ConfigError(
                f"--gro {dev}={given[dev]} and --gro {dev}={value} contradict each other: give one of them"
            )
        given[dev] = value
        out[dev] = value == "on"
    return out


def parse_resegment(text: str) -> str | int:
    """Parse ``--resegment``: ``auto``, ``off`` or an MSS (TCP payload bytes per segment, 8..65535: the smallest full
    segment a Linux sender makes carries ``TCP_MIN_SND_MSS`` = 48 bytes of TCP options and payload, and at most 40
    of options; a split below the floor of a super-frame's own options is refused per frame, resegment.py
    ``min_payload``); keywords in any letter case. Raises ConfigError."""
    if text.strip().lower() in ("auto", "off"):
        return text.strip().lower()
    mss = int(text) if text.isascii() and text.isdigit() and len(text) <= 6 else 0
    least = min_payload(MAX_TCP_OPTION_BYTES)
    if not least <= mss <= 65535:
        raise ConfigError(
            f"invalid --resegment {text!r}: use auto, off or an MSS in bytes ({least}..65535: TCP_MIN_SND_MSS "
            f"{TCP_MIN_SND_MSS} less at most {MAX_TCP_OPTION_BYTES} bytes of TCP options)"
        )
    return mss
