"""``gro-replay kernel`` and ``gro-replay validate``: the running kernel as a backend and as the simulator's judge."""

from __future__ import annotations

import os
from dataclasses import replace

import click
from rich.console import Console

from ..capture.digest import DEFAULT_DIGEST
from ..capture.reader import CaptureError, path_words
from ..outputs import RunOutputs
from ..project import plural
from ..report.schema import dumps
from ..report.verbatim import say, verbatim_console
from .command import Command
from .errors import CheckFailed, EnvironmentProblem, UsageError, capture_error
from .options import capture_frame_options
from .output import NamedOutput, open_out, start_progress
from .params import BoundedInt, Keyword

_RX = Keyword(["none", "unnecessary", "unnecessary-tunnel"])


def _common(f):
    opts = [
        click.argument("capture", type=click.Path()),
        click.option(
            "--rx-csum",
            type=_RX,
            default="none",
            show_default=True,
            help="Checksum state the frames arrive with (tcx BPF sets UNNECESSARY levels).",
        ),
        click.option(
            "--defer-to-tunnel",
            is_flag=True,
            help="Generic XDP on the phys device: GRO elided there, left to the vxlan gro_cells (as --gro phys=off).",
        ),
        click.option(
            "--vxlan-port",
            type=BoundedInt(1, 65535),
            metavar="PORT",
            multiple=True,
            help="VXLAN port, one vxlan device each (repeatable; default: those of 4789 and 8472 the capture "
            "uses, else 4789).",
        ),
        click.option(
            "--vxlan-gbp",
            is_flag=True,
            help="Make the vxlan devices with gbp (Group Based Policy: G-flagged frames accepted, policy ID and "
            "D/A bits in the tunnel metadata).",
        ),
        # the interface replayed and the super-frames split as in the replay, before the frames are sent
        *capture_frame_options(),
        click.option(
            "--phys-dev",
            default="eth0",
            show_default=True,
            metavar="NAME",
            help="Physical (veth) device name.",
        ),
        click.option(
            "--tunnel-dev", default="vxlan0", show_default=True, metavar="NAME", help="Tunnel device name."
        ),
        click.option(
            "--udp6zerocsumrx",
            "udp6_zero_csum_rx",
            is_flag=True,
            help="Make the vxlan device with udp6zerocsumrx (accept zero UDPv6 checksums).",
        ),
        click.option(
            "--gro",
            "gro",
            multiple=True,
            metavar="DEV=on|off",
            help="tunnel=off: ethtool -K <vxlan> gro off; phys=off: GRO elided on the phys veth (as --defer-to-tunnel).",
        ),
        click.option(
            "--quiet",
            "-q",
            is_flag=True,
            help="No progress bar (shown while the capture is read, when stderr is a terminal).",
        ),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def _gro_recipe(defer_to_tunnel: bool, gro) -> tuple[bool, bool]:
    """The backend's GRO recipe from ``--defer-to-tunnel`` and ``--gro`` items: (generic XDP on the phys veth,
    GRO on the tunnel devices). ``--gro phys=off`` and ``--defer-to-tunnel`` run that one recipe (the veth's
    NETIF_F_GRO stays on: a veth with GRO off would bypass NAPI; netif_elide_gro holds either way), so one
    configuration describes both in every output, and ``--gro phys=on`` contradicts ``--defer-to-tunnel`` as it
    contradicts ``--gro phys=off``. Raises UsageError."""
    from ..sim import ConfigError, parse_gro

    try:
        on = parse_gro(gro)
    except ConfigError as e:
        raise UsageError(str(e)) from None
    if defer_to_tunnel:
        try:
            parse_gro((*gro, "phys=off"))
        except ConfigError:
            raise UsageError(
                "--defer-to-tunnel and --gro phys=on contradict each other (--defer-to-tunnel elides GRO on the "
                "phys veth, as --gro phys=off): give one of them"
            ) from None
    return defer_to_tunnel or not on["phys"], on["tunnel"]


def _prepare(
    capture,
    rx_csum,
    defer_to_tunnel,
    vxlan_port,
    phys_dev,
    tunnel_dev,
    udp6_zero_csum_rx=False,
    gro=(),
    vxlan_gbp=False,
    quiet=False,
    resegment="auto",
    mtu=1500,
    interface=None,
    digest=DEFAULT_DIGEST,
):
    from ..oracle import OracleUnavailable, check_environment
    from ..oracle.replay import GENEVE_PORT
    from ..sim import ConfigError, PollModel, ReplayConfig
    from ..validate import load_capture

    if GENEVE_PORT in vxlan_port:  # run_kernel's geneve device has the port whenever the capture holds Geneve
        raise UsageError(
            f"--vxlan-port {GENEVE_PORT}: the kernel backend keeps UDP port {GENEVE_PORT} for its geneve device"
        )
    elided, tunnel_gro = _gro_recipe(defer_to_tunnel, gro)
    ports = tuple(dict.fromkeys(vxlan_port)) or (4789, 8472)
    cfg = ReplayConfig(
        rx_csum=rx_csum,
        poll=PollModel("budget"),
        rss="none",
        vxlan_ports=ports,
        phys_dev=phys_dev,
        vxlan_dev=tunnel_dev,
        tunnel_metadata=True,
        resegment=resegment,  # as the replay command: super-frames become wire frames before they are sent
        mtu=mtu,
        interface=interface,
        digest=digest,
        udp6_zero_csum_rx=udp6_zero_csum_rx,
        vxlan_gbp=vxlan_gbp,
        gro={"phys": True, "tunnel": tunnel_gro},  # where GRO runs: ReplayConfig.gro_runs
        phys_xdp_generic=elided,
    )
    try:
        cfg.validate()
    except ConfigError as e:
        raise UsageError(str(e)) from None
    try:
        check_environment()
    except OracleUnavailable as e:
        raise EnvironmentProblem(str(e)) from None
    # the capture is read and decoded whole before the first frame is sent: the progress display of the replay
    # (stderr a terminal, not --quiet)
    _prog, cb = start_progress(quiet, capture)
    try:
        loaded = load_capture(capture, cfg, cb)
    except CaptureError as e:
        raise capture_error(e, str(capture)) from None
    finally:
        if cb is not None:
            cb.stop()  # the display, when it was shown
    if not vxlan_port:
        # the default ports the capture uses (UDP destination ports after an option-less outer IPv4 or an outer
        # IPv6 header), in the default order: the devices are named by it as in a replay (ReplayConfig.devices)
        at = {b"\x08\x00": 36, b"\x86\xdd": 56}
        used = {
            int.from_bytes(f[1][o : o + 2], "big")
            for f in loaded.frames
            if (o := at.get(bytes(f[1][12:14]))) is not None and len(f[1]) >= o + 2
        }
        ports = tuple(p for p in ports if p in used) or (4789,)
    # the ports of the devices the backend makes (their names, JSON); the capture was read with those asked for
    return replace(cfg, vxlan_ports=ports), loaded


def _run_oracle(loaded, cfg):
    """The running kernel's deliveries of ``loaded``'s frames in the configuration ``cfg`` (``_prepare``'s, with
    its tunnel ports): oracle.run_kernel. Raises EnvironmentProblem (exit 3), ClickException."""
    from ..oracle import OracleError, OracleUnavailable, run_kernel
    from ..validate import ORACLE_RX_CSUM

    mode, level = ORACLE_RX_CSUM[cfg.rx_csum]
    runs = cfg.gro_runs()
    try:
        return run_kernel(
            [f[1] for f in loaded.frames],
            rx_csum=mode,
            csum_level=level,
            defer_to_tunnel=not runs["phys"],
            vxlan_port=cfg.vxlan_ports,
            udp6_zero_csum_rx=cfg.udp6_zero_csum_rx,
            vxlan_gbp=cfg.vxlan_gbp,
            tunnel_gro=runs["tunnel"],
            # the reader took their outer VLAN tags off (the driver's vlan_tci): the backend builds no VLAN device
            outer_tagged=[i for i, f in enumerate(loaded.frames) if f[2] is not None],
        )
    except OracleUnavailable as e:
        raise EnvironmentProblem(str(e)) from None
    except OracleError as e:
        raise click.ClickException(f"kernel backend: {e}") from None


@click.command("kernel", cls=Command)
@_common
@click.option(
    "--format", "fmt", type=Keyword(["table", "json", "markdown"]), default="table", show_default=True
)
@click.option(
    "--trace",
    "trace_path",
    default=None,
    metavar="FILE",
    help="netif_receive_skb lines to FILE, or - for standard output; the time is in seconds from the first skb "
    "the running kernel delivered.",
)
@click.option("--no-hist", is_flag=True, help="Leave out the segments-per-skb bar charts.")
def kernel_cmd(fmt, trace_path, no_hist, **common):
    """Replay CAPTURE through the running Linux kernel (private namespaces, veth + vxlan) and report what its
    GRO stages delivered. Needs root, network namespaces, tracefs, vxlan and bpf(2) (exit 3 otherwise)."""
    from ..report.table import render
    from ..report.trace import TraceWriter
    from ..validate import kernel_result

    if trace_path == "-" and fmt != "table":
        raise UsageError(f"--trace - and --format {fmt} both write to stdout: give --trace a file")
    # --trace FILE: written beside its path and renamed into place when the report is made, else removed; checked
    # before the backend runs (a directory, a parent that is not one, the capture itself: one line, exit 2)
    with RunOutputs(inputs=[common["capture"]]) as outs:
        outs.reserve(trace_path, "--trace")
        cfg, loaded = _prepare(**common)
        oracle = _run_oracle(loaded, cfg)
        cfg = replace(cfg, hz=oracle.hz)  # the running kernel's, for the report's NIC line
        tracer: TraceWriter | NamedOutput | None = None
        if trace_path:
            trace = TraceWriter(open_out(outs, trace_path, "--trace"), tag=False)
            trace.bind(loaded.replayer.input)
            tracer = trace
            if trace_path != "-":  # standard output's errors are entry()'s (a closed pipe ends quietly)
                tracer = NamedOutput(tracer, "--trace", trace_path)
        result = kernel_result(loaded, oracle, cfg, tracer)
    if fmt == "json":
        click.echo(dumps(_document(result, cfg, oracle)))
    elif fmt == "markdown":
        from ..report.table import markdown

        click.echo(f"- {_backend_line(oracle, cfg)}\n{markdown(result)}")
    else:
        console = verbatim_console(no_color=bool(os.environ.get("NO_COLOR")), width=max(120, Console().width))
        # one line (soft wrap: the terminal wraps it), as the README quotes it: grep finds it
        say(console, _backend_line(oracle, cfg))
        render(result, console, hist=not no_hist)


def _segments(oracle) -> str:
    """How the backend counted each skb's segments (JSON ``kernel.segments``, the backend line): from the first
    frame the skb's address names (oracle/replay.py ``_Run._heads``) and its length, or from lengths alone where the
    trace's addresses named no frame (oracle/match.py)."""
    heads = [d.head is not None for d in oracle.deliveries]
    if heads and all(heads):
        return "counted from each skb's first frame, named by its address, and its length"
    if any(heads):
        return "counted from each skb's first frame, named by its address where the trace names one, and its length"
    return "inferred from lengths"


def _backend_line(oracle, cfg) -> str:
    """The report's first line (text and Markdown): the running kernel, its HZ, the frames sent and how (where GRO
    was elided or off: ``_gro_clause``); that no device was made when no frame was sent."""
    sent = oracle.frames_sent
    head = f"backend: kernel {oracle.kernel_release}, HZ {oracle.hz}, {sent:,} {plural(sent, 'frame')} sent"
    if not sent:
        return f"{head}, so no device was made"
    return f"{head}{_gro_clause(cfg, oracle)}; segments per skb {_segments(oracle)}"


def _gro_clause(cfg, oracle) -> str:
    """How the backend's recipe set GRO up, as a clause of its header line (the kernel report's backend line,
    validate's first line): ", GRO elided on eth0 by a generic XDP program, left to the gro_cells of vxlan0"
    (``--defer-to-tunnel`` or ``--gro phys=off``: one recipe), ", GRO off on vxlan0 (ethtool -K DEV gro off)"
    (``--gro tunnel=off``, on every tunnel device it made), both: "…: GRO nowhere"; "" with GRO on both devices, or
    when no frame was sent (run_kernel then makes no device: there was no recipe)."""
    if not oracle.frames_sent:
        return ""
    runs = cfg.gro_runs()
    tunnels = " and ".join(_backend_tunnel_devices(cfg, oracle).values())
    if runs["phys"]:
        return "" if runs["tunnel"] else f", GRO off on {tunnels} (ethtool -K DEV gro off)"
    return f", GRO elided on {cfg.phys_dev} by a generic XDP program" + (
        f", left to the gro_cells of {tunnels}"
        if runs["tunnel"]
        else f" and off on {tunnels} (ethtool -K DEV gro off): GRO nowhere"
    )


def _backend_tunnel_devices(cfg, oracle) -> dict[str, str]:
    """``config.tunnel_devices`` of the kernel backend's document: the tunnel devices the backend made (its vxlan
    devices on ``cfg.vxlan_ports``, its geneve device when the capture held Geneve: ``oracle.tunnel_ports``), each
    under the simulator's name for its port (``ReplayConfig.devices``), keyed by the port as text; none when no
    frame was sent (run_kernel made no device)."""
    if not oracle.frames_sent:
        return {}
    names = cfg.tunnel_devices_by_port()
    made = set((getattr(oracle, "tunnel_ports", None) or {}).values()) or set(cfg.vxlan_ports)
    return {port: name for port, name in names.items() if int(port) in made}


def _document(result, cfg, oracle) -> dict:
    """The kernel backend's JSON document: the replay document with the config the backend really used (the
    simulator's constants do not apply) and a ``kernel`` object about the run."""
    from ..report import backend_recipe
    from ..report.document import document

    doc = document(result, backend="kernel")
    rss, poll = backend_recipe(oracle.frames_sent)
    # run_kernel made no device when no frame was sent: what it did not do is false
    made = bool(oracle.frames_sent)
    doc["config"] = {
        "kernels": doc["config"]["kernels"],
        "nic": {"rx_csum": cfg.rx_csum, "rss": rss},
        "poll": poll,
        "constants": {"hz": oracle.hz},
        "vxlan_ports": list(cfg.vxlan_ports),
        "vxlan_gbp": cfg.vxlan_gbp and made,
        "devices": {"phys": cfg.phys_dev, "vxlan": cfg.vxlan_dev},
        "tunnel_devices": _backend_tunnel_devices(cfg, oracle),
        "resegment": str(cfg.resegment),
        "mtu": cfg.mtu,
        "udp6_zero_csum_rx": cfg.udp6_zero_csum_rx,
        # the running kernel's VLAN GRO offloads (CONFIG_VLAN_8021Q), as validate gives the simulator
        "vlan_offload": oracle.vlan_offload,
        # where GRO ran: phys false when a generic XDP program elided it; nowhere when no device was made
        "gro": cfg.gro_runs() if made else {"phys": False, "tunnel": False},
    }
    doc["kernel"] = {
        "release": oracle.kernel_release,
        "hz": oracle.hz,
        "attempts": oracle.attempts,
        "defer_to_tunnel": cfg.phys_xdp_generic and made,
        "frames_sent": oracle.frames_sent,
        "frames_not_replayable": oracle.frames_not_replayable,
        "segments": _segments(oracle) if made else "none: no frame was sent",
    }
    return doc


@click.command("validate", cls=Command)
@_common
@click.option("--format", "fmt", type=Keyword(["text", "json"]), default="text", show_default=True)
def validate_cmd(fmt, **common):
    """Run the simulator (profile of the running kernel, same checksum state, budget polls, --rss none) and the
    kernel backend on the same frames; compare the delivered lengths per device. Exit 0 when they agree, 1 when
    they differ, 3 when the kernel backend cannot run."""
    from ..oracle import kernel_hz, kernel_release, kernel_vlan_offload
    from ..report.validation import validation_document
    from ..validate import account_sent, compare, profile_for_release

    cfg, loaded = _prepare(**common)
    release = kernel_release()
    try:
        model = profile_for_release(release)
    except ValueError as e:
        raise EnvironmentProblem(str(e)) from None
    sim_cfg = replace(
        cfg,
        kernels=(model,),
        hz=kernel_hz(),
        vlan_offload=kernel_vlan_offload(),
    )
    oracle = _run_oracle(loaded, cfg)
    if not oracle.frames_sent:
        # what the backend could not send, and what was skipped before it (records cut short, ...)
        skipped = ", ".join(f"{k} {v:,}" for k, v in loaded.replayer.input.skipped.items() if v)
        why = ", ".join(
            [f"{k} {v:,}" for k, v in oracle.frames_not_replayable.items()]
            + ([f"skipped: {skipped}"] * bool(skipped))
        )
        why = why or "no replayable frame"
        raise EnvironmentProblem(
            f"nothing to validate: no frame of {path_words(common['capture'])} can be replayed here ({why})"
        )
    devices = compare(loaded, oracle, sim_cfg)
    ok = all(d.agrees for d in devices)
    account_sent(loaded, oracle, cfg)
    inp = loaded.replayer.input.as_dict()
    if fmt == "json":
        click.echo(dumps(validation_document(release, model, oracle, devices, sim_cfg, inp)))
    else:
        _print_validation(release, model, oracle, devices, sim_cfg, inp)
    if not ok:
        raise CheckFailed("simulator and kernel differ")


def _print_validation(release, model, oracle, devices, sim_cfg, inp):
    """``validate``'s text report: the run (frames read and sent when they differ: super-frames split, frames not
    replayable), the input's notes (JSON ``input.notes``: what was split, and why), per device how many skbs
    agree and the first divergence, SUMMARY."""
    from ..report.validation import validation_summary

    sent = oracle.frames_sent
    frames = f"{sent:,} {plural(sent, 'frame')}"
    if inp["frames_read"] != sent:
        frames = f"{inp['frames_read']:,} {plural(inp['frames_read'], 'frame')} read, {sent:,} sent"
    click.echo(
        f"validate: kernel {release} (HZ {oracle.hz}) vs simulator profile {model.release}; "
        f"{frames}, --rx-csum {sim_cfg.rx_csum}" + _gro_clause(sim_cfg, oracle)
    )
    for note in inp["notes"]:
        click.echo(f"note: {note}")
    names = {
        port: name for name, stage, port in sim_cfg.devices() if stage == "tunnel"
    }  # the simulator's names
    for d in devices:
        if d.stage == "phys":
            name = sim_cfg.phys_dev
        else:
            name = names.get(d.port, sim_cfg.vxlan_dev)
        click.echo(f"  {name} ({d.stage}, port {d.port})" if d.port else f"  {name} ({d.stage})", nl=False)
        click.echo(
            f": {d.matching:,}/{d.total:,} {plural(d.total, 'skb')} {'agrees' if d.total == 1 else 'agree'}"
        )
        div = d.first_divergence()
        if div:
            click.echo(
                f"    first divergence at skb {div['index'] + 1}: kernel len={div['kernel_len']} "
                f"(frames {div['kernel_frames'] or '?'}), simulator len={div['sim_len']} (frames {div['sim_frames']})"
            )
    if oracle.frames_not_replayable:
        click.echo(
            "  not replayable (wire frames): "
            + ", ".join(f"{k} {v:,}" for k, v in oracle.frames_not_replayable.items())
        )
    click.echo(validation_summary(devices))
