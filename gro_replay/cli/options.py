"""The replay options every replaying command takes (``replay_options``) and their validation into a
``ReplayConfig`` (``build_config``). Light to import: the simulation is imported when a config is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ..capture.digest import DEFAULT_DIGEST, DIGESTS
from ..kernel.model import (
    K_5_11,
    K_5_12,
    PROFILES,
    KernelModel,
    same_model,
    same_model_words,
    shared_switches_text,
)
from ..kernel.names import DEFAULT_POLL_GAP_USECS, NIC_NAMES, RSS_MODES, RX_CSUM_NAMES
from .errors import UsageError
from .params import (
    CONFIG_HZ_VALUES,
    PORT_OR_AUTO,
    RSS_KEY,
    S32_MAX,
    ULONG_MAX,
    BoundedInt,
    Keyword,
    SecondsOrOff,
)

if TYPE_CHECKING:
    from ..sim import ReplayConfig

FLOW_HELP = (
    "Only flows matching every comma-separated term: N (flow id), ADDR[:PORT] or [V6]:PORT (any endpoint), "
    "vni=, tunnel=vxlan|geneve|none, outer-src=, outer-dst=, outer-sport=, outer-dport=, src=, dst=, sport=, "
    "dport= (inner), proto=tcp|udp|icmp|icmpv6|ipip|ipv6-in-ip|gre|N, csum=zero|set, vlan=VID|none (an inner 802.1Q tag). README: "
    "Selecting flows."
)


def capture_frame_options() -> list:
    """``--interface``, ``--resegment``, ``--mtu`` and ``--digest``: which of a capture's interfaces is replayed
    (capture/interfaces.py), how its super-frames become the wire frames a NIC receives (resegment.py), and the
    digest its document records (capture/digest.py), one definition for every command that replays (the replay,
    ``kernel``, ``validate``)."""
    return [
        click.option(
            "--interface",
            default=None,
            metavar="N|NAME",
            help="Of a capture holding several interfaces (tcpdump -i any, pcapng): the one to replay, by ifindex, "
            "pcapng interface id or name (ifindex=N, index=N where a number is both). Default: the device of its "
            "first tunnel frame; the others' frames are counted, not replayed.",
        ),
        click.option(
            "--resegment",
            default="auto",
            show_default=True,
            metavar="auto|off|MSS",
            help="Split tunnelled TCP super-frames above --mtu (GSO/TSO, post-GRO, BIG TCP) into wire frames: "
            "auto takes the flow's MSS, at most what fits --mtu; an MSS above what fits makes segments larger than "
            "--mtu, which a note counts (and the replay's SUMMARY line: segments_above_mtu=N).",
        ),
        click.option(
            "--mtu",
            type=BoundedInt(68, 65535),
            metavar="BYTES",
            default=1500,
            show_default=True,
            help="Bytes of the outer IP packet a wire frame carries (the --resegment threshold); an outer IPv6 "
            "packet's at least 1280, IPv6's smallest link MTU (RFC 8200 §5).",
        ),
        click.option(
            "--digest",
            type=Keyword(list(DIGESTS)),
            default=DEFAULT_DIGEST,
            show_default=True,
            help="The digest of the capture's bytes the JSON document records (input.blake3 or input.sha256; "
            "batch: its --out documents; diff compares documents of one capture by it): blake3 as b3sum prints it, "
            "sha256 as sha256sum (what documents before BLAKE3 record; ~5x the CPU time).",
        ),
    ]


# long: a declarative list of the replay options (one click.option each), not logic
def replay_options(f):
    """Add the replay options (what ``gro-replay CAPTURE`` takes; ``build_config`` turns them into a config)."""
    opts = [
        click.option(
            "--fix/--no-fix",
            "fix",
            default=None,
            help="Only the post-fix (5.12) / pre-fix (5.11) kernel. Default: both, compared.",
        ),
        click.option(
            "--kernel",
            "kernel_rel",
            metavar="RELEASE",
            multiple=True,
            help="Kernel releases to run instead (repeatable): a profile ("
            + ", ".join(PROFILES)
            + "), a stable point release (5.4.120: base + the stable backports it carries), a pre-release "
            "(5.12-rc1: base without the commits of a later rc, with a note) or a distribution's uname -r "
            "(5.4.0-42-generic, 4.18.0-305.el8: base only, with a note). Debian and Ubuntu name their stable "
            'release elsewhere; give it whole: "$(uname -rv)" or "$(cat /proc/version)" (Debian: '
            "'5.10.0-21-amd64 #1 SMP Debian 5.10.162-1 (2023-01-21)' runs as 5.10.162), \"$(cat "
            "/proc/version_signature)\" (Ubuntu: 'Ubuntu 5.4.0-42.46-generic 5.4.44' runs as 5.4.44), named by "
            "their uname -r, with a note. 4.18 runs as 4.19 with a note; older than 4.18, newer than the "
            "newest profile or never released (5.20: 5.19 was followed by 6.0) is refused. `gro-replay kernels` "
            "lists them.",
        ),
        click.option(
            "--rx-csum",
            type=Keyword(list(RX_CSUM_NAMES)),
            default=None,
            help="NIC RX checksum state (default unnecessary = CHECKSUM_UNNECESSARY level 0; with --nic: the "
            "driver preset decides per frame unless this is given).",
        ),
        click.option(
            "--nic",
            type=Keyword(list(NIC_NAMES)),
            default=None,
            help="Driver preset: the checksum state per frame (outer family, zero/computed outer UDP checksum, "
            "tunnel port offloaded, bad checksums), the RX hash fields and the interrupt moderation default of "
            "that driver's RX path.",
        ),
        click.option(
            "--nic-tunnel-port",
            type=Keyword(["on", "off"]),
            default=None,
            help="With --nic: the tunnel UDP port is programmed into the NIC (udp_tunnel_nic) or not (default off).",
        ),
        click.option(
            "--poll",
            "poll",
            metavar="MODEL",
            default=None,
            help="Poll model: gap:US (a poll after each pause > US µs) | rx-usecs:US (a poll US µs after the "
            "first frame) | budget (64 per poll, times ignored). Default: the --nic preset's interrupt moderation, "
            f"else gap:{DEFAULT_POLL_GAP_USECS} (mlx5's CQE-based moderation).",
        ),
        click.option(
            "--hz",
            type=Keyword(CONFIG_HZ_VALUES),
            default="250",
            show_default=True,
            help="CONFIG_HZ (kernel/Kconfig.hz, arch/*/Kconfig; HZ >= 1000 flushes only old packets on a full poll).",
        ),
        click.option(
            "--rss",
            type=Keyword(list(RSS_MODES)),
            default=None,
            help="RX hash: Toeplitz over outer addresses/ports (default), over outer addresses only "
            "(toeplitz-l3), or none (hash 0, as on veth); with --nic the preset's fields unless this is given.",
        ),
        click.option(
            "--rss-key",
            type=RSS_KEY,
            default=None,
            metavar="HEX",
            help="RSS key as hex, as `ethtool -x` prints it (6d:5a:…) or plain (default: the common 40-byte key).",
        ),
        click.option(
            "--vxlan-port",
            type=PORT_OR_AUTO,
            multiple=True,
            help="VXLAN UDP port (repeatable; default 4789 and 8472); auto: also every port whose traffic parses "
            "as VXLAN.",
        ),
        click.option(
            "--geneve-port",
            type=PORT_OR_AUTO,
            multiple=True,
            help="Geneve UDP port (repeatable; default 6081); auto: also every port whose traffic parses as Geneve.",
        ),
        click.option(
            "--detect-tunnels",
            is_flag=True,
            help="Same as --vxlan-port auto --geneve-port auto.",
        ),
        click.option(
            "--phys-dev",
            default="eth0",
            show_default=True,
            metavar="NAME",
            help="Physical device name in traces.",
        ),
        click.option(
            "--tunnel-dev",
            default=None,
            metavar="NAME",
            help="Tunnel device name in traces (default vxlan0 / geneve0).",
        ),
        click.option(
            "--gro-flush-timeout",
            type=BoundedInt(0, ULONG_MAX),
            metavar="NS",
            default=0,
            help="gro_flush_timeout of the phys device, ns.",
        ),
        click.option(
            "--napi-defer-hard-irqs",
            type=BoundedInt(0, S32_MAX),
            metavar="N",
            default=0,
            help="napi_defer_hard_irqs of the phys device.",
        ),
        click.option(
            "--tunnel-metadata/--no-tunnel-metadata",
            default=True,
            show_default=True,
            help="Collect-metadata (external) tunnel devices: a metadata dst per skb.",
        ),
        click.option(
            "--rx-queues",
            type=BoundedInt(1, 128),
            metavar="N",
            default=1,
            show_default=True,
            help="RX queues of the phys device: one NAPI (and one CPU's gro_cells) each; flows spread by RSS.",
        ),
        *capture_frame_options(),
        click.option(
            "-f",
            "--filter",
            "capture_filter",
            default=None,
            metavar="EXPR",
            help="BPF capture filter (tcpdump/tshark -f syntax) applied to the frames before the replay; those "
            "it rejects are counted (input.filtered.bpf). Needs the bpf extra (pcapy-ng).",
        ),
        click.option(
            "--udp6zerocsumrx",
            "udp6_zero_csum_rx",
            is_flag=True,
            help="Tunnel sockets accept zero UDPv6 checksums (vxlan/geneve udp6zerocsumrx; off by default).",
        ),
        click.option(
            "--vxlan-gbp",
            is_flag=True,
            help="The vxlan devices are made with gbp (Group Based Policy: G-flagged frames accepted, policy ID and "
            "D/A bits in the tunnel metadata); without it such frames are dropped, as by default.",
        ),
        click.option(
            "--vlan-offload/--no-vlan-offload",
            default=True,
            help="The kernels have the VLAN GRO offloads (CONFIG_VLAN_8021Q y or m, as distributions build them: "
            "vlan_gro_receive takes inner frames with an 802.1Q/802.1ad tag); --no-vlan-offload: a kernel built "
            "without it, whose GRO merges none of them. Default: on.",
        ),
        click.option(
            "--gro",
            "gro",
            multiple=True,
            metavar="DEV=on|off",
            help="GRO per device, DEV phys or tunnel (ethtool -K DEV gro off); repeatable. Default: on for both.",
        ),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


# long: the signature lists every replay option, one parameter each; the body is ~60 lines
def build_config(
    fix,
    kernel_rel,
    rx_csum,
    poll,
    hz,
    rss,
    rss_key,
    vxlan_port,
    geneve_port,
    phys_dev,
    tunnel_dev,
    gro_flush_timeout,
    napi_defer_hard_irqs,
    tunnel_metadata,
    rx_queues=1,
    resegment="auto",
    mtu=1500,
    udp6_zero_csum_rx=False,
    gro=(),
    nic=None,
    vxlan_gbp=False,
    nic_tunnel_port=None,
    capture_filter=None,
    flow=None,
    detect_tunnels=False,
    interface=None,
    digest=DEFAULT_DIGEST,
    vlan_offload=True,
) -> ReplayConfig:
    """Turn CLI options into a validated ReplayConfig. Raises UsageError."""
    from ..kernel.nic import NIC_PRESETS
    from ..sim import ConfigError, PollModel, ReplayConfig, parse_gro

    if nic_tunnel_port is not None and nic is None:
        raise UsageError("--nic-tunnel-port needs --nic")
    if rss_key is not None and (rss or (NIC_PRESETS[nic].rss_mode if nic else "")) == "none":
        why = "--rss none" if rss else f"--nic {nic}'s preset (no RX hash)"
        raise UsageError(f"--rss-key needs an RX hash: with {why} every hash is 0 and no key is read")
    if nic is not None:
        rx_csum = rx_csum or "nic"
        rss = rss or NIC_PRESETS[nic].rss_mode
    rx_csum = rx_csum or "unnecessary"
    rss = rss or "toeplitz"
    auto = {"vxlan", "geneve"} if detect_tunnels else set()
    if "auto" in vxlan_port:
        auto.add("vxlan")
    if "auto" in geneve_port:
        auto.add("geneve")
    vxlan_port = tuple(p for p in vxlan_port if p != "auto")
    geneve_port = tuple(p for p in geneve_port if p != "auto")
    if str(hz) not in CONFIG_HZ_VALUES:
        raise UsageError(
            f"--hz {hz}: CONFIG_HZ is one of {', '.join(CONFIG_HZ_VALUES)} (kernel/Kconfig.hz, arch/*/Kconfig)"
        )
    kernels = _kernels(fix, kernel_rel, nic)
    try:
        cfg = ReplayConfig(
            kernels=kernels,
            kernels_option="kernel" if kernel_rel else {None: "", True: "fix", False: "no-fix"}[fix],
            rx_csum=rx_csum,
            nic=nic,
            nic_tunnel_port=nic_tunnel_port == "on",
            # an empty --poll is no model (refused), not the default
            poll=PollModel.parse(_default_poll(nic) if poll is None else poll),
            hz=int(hz),
            rss=rss,
            vxlan_ports=tuple(vxlan_port) or (4789, 8472),
            geneve_ports=tuple(geneve_port) or (6081,),
            detect_tunnels=tuple(k for k in ("vxlan", "geneve") if k in auto),
            interface=interface,
            digest=digest,
            phys_dev=phys_dev,
            vxlan_dev="vxlan0" if tunnel_dev is None else tunnel_dev,
            geneve_dev="geneve0" if tunnel_dev is None else tunnel_dev,
            tunnel_metadata=tunnel_metadata,
            gro_flush_timeout_ns=gro_flush_timeout,
            napi_defer_hard_irqs=napi_defer_hard_irqs,
            rx_queues=rx_queues,
            resegment=resegment,
            mtu=mtu,
            udp6_zero_csum_rx=udp6_zero_csum_rx,
            vxlan_gbp=vxlan_gbp,
            vlan_offload=vlan_offload,
            gro=parse_gro(gro),
            flow=flow,
            capture_filter=capture_filter,
        )
        if rss_key is not None:  # plain hex (params.RssKey)
            cfg.rss_key = bytes.fromhex(rss_key)
        cfg.validate()
    except ConfigError as e:
        raise UsageError(str(e)) from None
    return cfg


def _kernels(
    fix: bool | None, kernel_rel: tuple[str, ...], nic: str | None = None
) -> tuple[KernelModel, ...]:
    """The kernel models of ``--fix``/``--no-fix`` or ``--kernel`` (by release, oldest first). Raises UsageError for
    two strings of one model (equal switches: ``5.11`` and ``5.11.0-16-generic``, ``5.12-rc2`` and ``5.12``, one
    string twice), which would compare a model with itself (``model.same_model``, as ``ReplayConfig.validate``), and
    for two strings of one name (a host's uname -r and uname -rv)."""
    if kernel_rel:
        # the release parsers (kernel/release.py, banner.py, distro.py: ~20 regular expressions compiled at import,
        # ~0.01 CPU s) only for --kernel
        from ..kernel.banner import shown
        from ..kernel.release import resolve_kernel

        given: list[KernelModel] = []
        for r in kernel_rel:  # every string given, a repeated one too: it would compare a model with itself
            try:
                given.append(resolve_kernel(r))
            except ValueError as e:
                raise UsageError(str(e)) from None
        from ..kernel.nic import unread_switches

        pair = same_model(given, unread_switches(nic))  # a --nic driver reads no switch of veth's sender
        if pair is not None:
            # the simulation runs the switches alone: the same switches give the same counts, whatever the names
            i, j = pair
            raise UsageError(
                same_model_words(
                    f"--kernel {shown(kernel_rel[i], 48)}",
                    f"--kernel {shown(kernel_rel[j], 48)}",
                    given[i].switches(),
                    given[j].switches(),
                )
            )
        named: dict[str, str] = {}
        for r, k in zip(kernel_rel, given, strict=True):
            if k.name in named:
                # two strings of one kernel (its uname -r and its uname -rv): one name in kernels=A,B and kernel[NAME].
                raise UsageError(
                    f"--kernel {shown(named[k.name], 48)} and --kernel {shown(r, 48)} both name kernel {k.name}: "
                    "give each kernel once"
                )
            named[k.name] = r
        if fix is not None:
            raise UsageError(_fix_with_kernel(fix, given, named))
        from ..report.verdict import release_order

        # one order for every output (table, text lines, SUMMARY, JSON, explain, trace tags): by release, oldest
        # first; a stable sort, so kernels of one release keep the options' order
        return tuple(sorted(given, key=release_order))
    if fix is None:
        return (K_5_11, K_5_12)
    return (K_5_12,) if fix else (K_5_11,)


def _fix_with_kernel(fix: bool, given: list[KernelModel], named: dict[str, str]) -> str:
    """The refusal of ``--fix``/``--no-fix`` beside ``--kernel`` (one kernel set per run), naming the spelling that
    works: ``--fix`` runs the 5.12 profile alone (K_5_12, "post-fix"), ``--no-fix`` the 5.11 profile (K_5_11,
    "pre-fix"), so ``--kernel 5.12`` / ``--kernel 5.11`` in its place runs that model beside the given releases;
    when one of them already runs that model (equal switches) the flag is dropped instead. ``given``: the
    resolved ``--kernel`` models, ``named``: model name to the string given."""
    from ..kernel.banner import shown

    flag, model, which = ("--fix", K_5_12, "post-fix") if fix else ("--no-fix", K_5_11, "pre-fix")
    head = f"--kernel and {flag} are exclusive: {flag} is --kernel {model.release} (the {which} model)"
    same = next((g for g in given if same_model((g, model))), None)
    if same is not None:
        mine, its = same.switches(), model.switches()
        # a switch that changes no count may differ (model.BYTES_ONLY_SWITCHES): named, with why
        runs = "already runs" if mine == its else f"already runs ({shared_switches_text(mine, its)})"
        return f"{head}, which --kernel {shown(named[same.name], 48)} {runs}: leave out {flag}"
    rels = " ".join(f"--kernel {shown(named[g.name], 48)}" for g in given)
    return f"{head}; write --kernel {model.release} in place of {flag} to run it beside {rels}"


def _default_poll(nic: str | None) -> str:
    """``--poll`` when not given: the ``--nic`` preset's interrupt moderation (``NicPreset.poll``), else the
    default time-aware model."""
    from ..kernel.nic import NIC_PRESETS

    preset = NIC_PRESETS.get(nic) if nic else None
    return (preset.poll if preset is not None else None) or f"gap:{DEFAULT_POLL_GAP_USECS}"


def given(name: str) -> bool:
    """Whether option ``name`` (its parameter name) was given on the command line or by environment, not defaulted."""
    from click.core import ParameterSource

    return click.get_current_context().get_parameter_source(name) in (
        ParameterSource.COMMANDLINE,
        ParameterSource.ENVIRONMENT,
    )


def flow_timeout_options(f):
    """``--flow-timeout`` and ``--flow-close-timeout``, shared by the replay and ``explain`` (which ends flows as
    the replay does, keeping them all: ``ReplayConfig.flows_kept``); read with ``flow_timeouts``."""
    f = click.option(
        "--flow-close-timeout",
        type=BoundedInt(0, 10**9),
        default=10,
        show_default=True,
        metavar="SECONDS",
        help="End a tunnelled TCP flow this long after its FIN or RST (conntrack's CLOSE; unless --flow-timeout "
        "is off); the replay retires it.",
    )(f)
    return click.option(
        "--flow-timeout",
        type=SecondsOrOff(0, 10**9),
        default="120",
        show_default=True,
        metavar="SECONDS|off",
        help="End a flow silent this long (capture time; 120 as conntrack; 0 or off: no flow ends): a later "
        "frame with its key starts a new flow. The replay retires it (its counters are final, it is summed or "
        "listed, memory grows with the flows live at once); explain keeps every flow.",
    )(f)


def flow_timeouts(cfg: ReplayConfig, flow_timeout: int, flow_close_timeout: int) -> ReplayConfig:
    """``cfg`` with ``--flow-timeout`` and ``--flow-close-timeout`` (seconds) as its flow timeouts (ns). Raises
    UsageError (exit 2) for ``--flow-close-timeout`` given with ``--flow-timeout`` 0/off (no flow ends)."""
    from dataclasses import replace

    if given("flow_close_timeout") and not flow_timeout:
        raise UsageError("--flow-close-timeout needs --flow-timeout on (with 0 or off no flow ends)")
    return replace(
        cfg, flow_idle_timeout_ns=flow_timeout * 10**9, flow_close_timeout_ns=flow_close_timeout * 10**9
    )
