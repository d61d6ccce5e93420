"""Command line: ``gro-replay CAPTURE [--fix|--no-fix]`` and the sub-commands. Parses, validates, calls, prints.

Exit codes: 0 success; 1 a check failed; 2 usage, unreadable input or an output that cannot be written; 3 environment
(kernel backend); 70 internal error; 130 SIGINT; 141 standard output's reader went away (see ``entry``).
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import signal
import sys
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

import click

from . import __version__
from .cli_types import S32_MAX, ULONG_MAX, BoundedInt
from .kernel.model import K_5_11, K_5_12, PROFILES, resolve_kernel
from .kernel.names import DEFAULT_POLL_GAP_USECS, NIC_NAMES, RSS_MODES, RX_CSUM_NAMES
from .report import FLOWS_MAX_DEFAULT

if TYPE_CHECKING:
    from rich.console import Console

    from .sim import ReplayConfig

# Imported on demand (start-up time, bench/startup.py): rich, dpkt (capture.reader), the simulation (sim, numpy
# columns) and each sub-command's module (LAZY_COMMANDS).

#: The CONFIG_HZ values a kernel can be built with (kernel/Kconfig.hz: HZ_100, HZ_250, HZ_300, HZ_1000).
CONFIG_HZ_VALUES = ("100", "250", "300", "1000")


class PortOrAuto(click.ParamType):
    """A UDP port (1..65535) or ``auto``."""

    name = "PORT|auto"

    def convert(self, value, param, ctx):
        if value == "auto":
            return value
        return _UDP_PORT.convert(value, param, ctx)


_UDP_PORT = BoundedInt(1, 65535)
PORT_OR_AUTO = PortOrAuto()


class UsageError(click.ClickException):
    """Bad input or usage: exit code 2."""

    exit_code = 2


class CheckFailed(click.ClickException):
    """A check failed (diff threshold, validate mismatch): exit code 1."""

    exit_code = 1


class EnvironmentProblem(click.ClickException):
    """The environment lacks something (root, namespaces, tracefs): exit code 3."""

    exit_code = 3


#: errno values of a failed write to standard output (a full or failing disk, a quota, a file size limit)
_WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG, errno.EBADF})
#: Sub-commands that live in their own modules, imported when named: name → (module, one-line help for --help).
LAZY_COMMANDS: dict[str, tuple[str, str]] = {
    "batch": ("cli_batch", "Replay many captures in parallel on Dask, each exactly as gro-replay CAPTURE."),
    "diff": ("cli_triage", "Compare two JSON documents per kernel, stage and flow (CI regression gate)."),
    "explain": ("cli_triage", "Per flow: where its frames were aggregated, why not, and the verdict."),
    "kernel": ("cli_kernel", "Replay CAPTURE through the running Linux kernel (needs root)."),
    "kernels": ("cli_kernels", "The kernel profiles and the behaviour switches that separate them."),
    "synth": ("cli_synth", "Write a synthetic bulk-TCP-over-VXLAN/Geneve capture."),
    "validate": ("cli_kernel", "Compare the simulator with the running kernel on the same frames."),
}


@contextlib.contextmanager
def _stdout_failures() -> Iterator[None]:
    """Turn a write error on standard output into ``StdoutFailed`` (click's ``main`` would make a closed pipe exit
    code 1 and other write errors a traceback)."""
    try:
        yield
    except OSError as e:
        # the reader's errors are CaptureErrors and named outputs raise UsageErrors: a bare write error left
        # here is standard output's
        if e.errno == errno.EPIPE or (e.filename is None and e.errno in _WRITE_ERRNOS):
            raise StdoutFailed(e) from None
        raise
    except SystemExit as e:
        # rich's Console.on_broken_pipe: stdout pointed at /dev/null, then SystemExit(1)
        if isinstance(e.__context__, BrokenPipeError):
            raise StdoutFailed(e.__context__) from None
        raise


class DefaultGroup(click.Group):
    """A group whose default command is ``replay``: ``gro-replay CAPTURE`` means ``gro-replay replay CAPTURE``.

    A write error on standard output leaves a command as ``StdoutFailed`` (click would turn a closed pipe into
    exit code 1 and other write errors into a traceback); ``entry`` gives it its exit code.

    Sub-commands of ``LAZY_COMMANDS`` are imported when named; ``--help`` lists them from their one-line help and
    shows the replay command's options (what ``gro-replay CAPTURE`` takes) without importing them.
    """

    def invoke(self, ctx):
        with _stdout_failures():
            return super().invoke(ctx)

    def make_context(self, info_name, args, parent=None, **extra):
        # --help and --version print while the arguments are parsed, before invoke
        with _stdout_failures():
            return super().make_context(info_name, args, parent=parent, **extra)

    def list_commands(self, ctx):
        return sorted(set(self.commands) | set(LAZY_COMMANDS))

    def get_command(self, ctx, name):
        if name not in self.commands and name in LAZY_COMMANDS:
            import importlib

            mod = importlib.import_module(f"{__package__}.{LAZY_COMMANDS[name][0]}")
            for cmd in [*getattr(mod, "COMMANDS", ()), getattr(mod, name, None)]:
                if isinstance(cmd, click.Command) and cmd.name not in self.commands:
                    self.add_command(cmd)
        return self.commands.get(name)

    def format_commands(self, ctx, formatter):
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.commands.get(name)
            short = cmd.get_short_help_str(80) if cmd is not None else LAZY_COMMANDS[name][1]
            rows.append((name, short))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def format_help(self, ctx, formatter):
        super().format_help(ctx, formatter)
        replay = self.commands["replay"]
        sub = click.Context(replay, info_name="replay", parent=ctx)
        rows = [r for p in replay.get_params(sub) if (r := p.get_help_record(sub)) is not None]
        with formatter.section("Replay options (gro-replay CAPTURE [OPTIONS])"):
            formatter.write_dl(rows)

    def parse_args(self, ctx, args):
        if args and args[0] not in self.list_commands(ctx) and args[0] not in ("--help", "-h", "--version"):
            args = ["replay", *args]
        elif not args:
            args = ["--help"]
        return super().parse_args(ctx, args)


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gro-replay")
def main() -> None:
    """Replay a VXLAN/Geneve capture through simulated Linux GRO (physical device NAPI, then the tunnel
    device's gro_cells), before and after 89e5c58fc1e2 "net: Fix gro aggregation for udp encaps with zero csum".

    \b
    gro-replay CAPTURE              compare the pre-fix (5.11) and post-fix (5.12) kernels
    gro-replay CAPTURE --no-fix     only the pre-fix kernel (--fix: only post-fix; --kernel 6.18: that release)
    gro-replay synth OUT.pcap       write a scenario capture
    """


def replay_options(f):
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
            multiple=True,
            help="Kernel release(s) to run instead (repeatable): a profile ("
            + ", ".join(PROFILES)
            + "), a stable point release (5.4.120: base + the stable backports it carries), a pre-release "
            "(5.12-rc1: base without the commits of a later rc, with a note) or a distribution's uname -r "
            "(5.4.0-42-generic, 4.18.0-305.el8: base only, with a note); 4.18 runs as 4.19 with a note, older "
            "than 4.18 or newer than the newest profile is refused. `gro-replay kernels` lists them.",
        ),
        click.option(
            "--rx-csum",
            type=click.Choice(list(RX_CSUM_NAMES)),
            default=None,
            help="NIC RX checksum state (default unnecessary = CHECKSUM_UNNECESSARY level 0; with --nic: the "
            "driver preset decides per frame unless this is given).",
        ),
        click.option(
            "--nic",
            type=click.Choice(list(NIC_NAMES)),
            default=None,
            help="Driver preset: the checksum state per frame (outer family, zero/computed outer UDP checksum, "
            "tunnel port offloaded, bad checksums), the RX hash fields and the interrupt moderation default of "
            "that driver's RX path.",
        ),
        click.option(
            "--nic-tunnel-port",
            type=click.Choice(["on", "off"]),
            default=None,
            help="With --nic: the tunnel UDP port is programmed into the NIC (udp_tunnel_nic) or not (default off).",
        ),
        click.option(
            "--poll",
            "poll",
            default=None,
            help="Poll model: gap:US (a poll after each pause > US µs) | rx-usecs:US (a poll US µs after the "
            "first frame) | budget (64 per poll, times ignored). Default: the --nic preset's interrupt moderation, "
            f"else gap:{DEFAULT_POLL_GAP_USECS} (mlx5's CQE-based moderation).",
        ),
        click.option(
            "--hz",
            type=click.Choice(CONFIG_HZ_VALUES),
            default="250",
            show_default=True,
            help="CONFIG_HZ (kernel/Kconfig.hz; HZ 1000 flushes only old packets on a full poll).",
        ),
        click.option(
            "--rss",
            type=click.Choice(list(RSS_MODES)),
            default=None,
            help="RX hash: Toeplitz over outer addresses/ports (default), over outer addresses only "
            "(toeplitz-l3), or none (hash 0, as on veth); with --nic the preset's fields unless this is given.",
        ),
        click.option("--rss-key", default=None, help="RSS key as hex (default: the common 40-byte key)."),
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
            "--interface",
            default=None,
            metavar="N|NAME",
            help="Of a capture holding several interfaces (tcpdump -i any, pcapng): the one to replay, by ifindex, "
            "pcapng interface id or name. Default: the one that carries the tunnel traffic.",
        ),
        click.option(
            "--detect-tunnels",
            is_flag=True,
            help="Same as --vxlan-port auto --geneve-port auto.",
        ),
        click.option("--phys-dev", default="eth0", show_default=True, help="Physical device name in traces."),
        click.option(
            "--tunnel-dev", default=None, help="Tunnel device name in traces (default vxlan0 / geneve0)."
        ),
        click.option(
            "--gro-flush-timeout",
            type=BoundedInt(0, ULONG_MAX),
            default=0,
            help="gro_flush_timeout of the phys device, ns.",
        ),
        click.option(
            "--napi-defer-hard-irqs",
            type=BoundedInt(0, S32_MAX),
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
            default=1,
            show_default=True,
            help="RX queues of the phys device: one NAPI (and one CPU's gro_cells) each; flows spread by RSS.",
        ),
        click.option(
            "--resegment",
            default="auto",
            show_default=True,
            metavar="auto|off|MSS",
            help="Split tunnelled TCP super-frames above --mtu (GSO/TSO, post-GRO, BIG TCP) into wire frames.",
        ),
        click.option(
            "--mtu",
            type=BoundedInt(68, 65535),
            default=1500,
            show_default=True,
            help="Bytes of the outer IP packet a wire frame carries (the --resegment threshold).",
        ),
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
) -> ReplayConfig:
    """Turn CLI options into a validated ReplayConfig. Raises UsageError."""
    from .kernel.nic import NIC_PRESETS
    from .sim import ConfigError, PollModel, ReplayConfig, parse_gro

    if nic_tunnel_port is not None and nic is None:
        raise UsageError("--nic-tunnel-port needs --nic")
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
        raise UsageError(f"--hz {hz}: CONFIG_HZ is one of {', '.join(CONFIG_HZ_VALUES)} (kernel/Kconfig.hz)")
    if kernel_rel:
        if fix is not None:
            raise UsageError("--kernel and --fix/--no-fix are exclusive")
        kernels = []
        for r in dict.fromkeys(kernel_rel):  # each release once, in order given
            try:
                kernels.append(resolve_kernel(r))
            except ValueError as e:
                raise UsageError(str(e)) from None
        from .report.verdict import _release_key

        # one order for every output (table, text lines, SUMMARY, JSON, explain, trace tags): by release, oldest
        # first; a stable sort, so kernels of one release keep the options' order
        kernels = tuple(sorted(kernels, key=lambda k: _release_key(k.release)))
    elif fix is None:
        kernels = (K_5_11, K_5_12)
    else:
        kernels = (K_5_12,) if fix else (K_5_11,)
    try:
        key = bytes.fromhex(rss_key) if rss_key else None
    except ValueError:
        raise UsageError("--rss-key must be hex digits") from None
    try:
        cfg = ReplayConfig(
            kernels=kernels,
            rx_csum=rx_csum,
            nic=nic,
            nic_tunnel_port=nic_tunnel_port == "on",
            poll=PollModel.parse(poll or _default_poll(nic)),
            hz=int(hz),
            rss=rss,
            vxlan_ports=tuple(vxlan_port) or (4789, 8472),
            geneve_ports=tuple(geneve_port) or (6081,),
            detect_tunnels=tuple(k for k in ("vxlan", "geneve") if k in auto),
            interface=interface,
            phys_dev=phys_dev,
            vxlan_dev=tunnel_dev or "vxlan0",
            geneve_dev=tunnel_dev or "geneve0",
            tunnel_metadata=tunnel_metadata,
            gro_flush_timeout_ns=gro_flush_timeout,
            napi_defer_hard_irqs=napi_defer_hard_irqs,
            rx_queues=rx_queues,
            resegment=resegment,
            mtu=mtu,
            udp6_zero_csum_rx=udp6_zero_csum_rx,
            vxlan_gbp=vxlan_gbp,
            gro=parse_gro(gro),
            flow=flow,
            capture_filter=capture_filter,
        )
        if key is not None:
            if len(key) < 40:
                raise UsageError("--rss-key needs at least 40 bytes (80 hex digits) for IPv6 4-tuples")
            cfg.rss_key = key
        cfg.validate()
    except ConfigError as e:
        raise UsageError(str(e)) from None
    return cfg


def _default_poll(nic: str | None) -> str:
    """``--poll`` when not given: the ``--nic`` preset's interrupt moderation (``NicPreset.poll``), else the
    default time-aware model."""
    from .kernel.nic import NIC_PRESETS

    preset = NIC_PRESETS.get(nic) if nic else None
    return (preset.poll if preset is not None else None) or f"gap:{DEFAULT_POLL_GAP_USECS}"


def report_console():
    """The stdout console of the text reports: the terminal's width on a terminal (a table that does not fit is
    stacked, one table per stage), else ``COLUMNS`` when set, else 120 columns (a pipe or file)."""
    from rich.console import Console

    cols = os.environ.get("COLUMNS", "")
    if sys.stdout.isatty():
        width = Console().width
    else:
        width = int(cols) if cols.isascii() and cols.isdigit() and 0 < int(cols) < 100_000 else 120
    return Console(no_color=bool(os.environ.get("NO_COLOR")), soft_wrap=False, width=width)


class NamedOutput:
    """An ``on_deliver`` observer whose write errors are errors of the output ``name`` (an option and its path):
    an OSError from it becomes a one-line UsageError (exit 2) naming that output, never the capture."""

    def __init__(self, observer, name: str) -> None:
        self.observer = observer
        self.name = name

    @property
    def served_from_events(self) -> bool:
        return bool(getattr(self.observer, "served_from_events", False))

    def bind(self, input_stats) -> None:
        if hasattr(self.observer, "bind"):
            self.observer.bind(input_stats)

    def __call__(self, kernel: str, stage: str, dev: str, skb, now_ns: int) -> None:
        try:
            self.observer(kernel, stage, dev, skb, now_ns)
        except OSError as e:
            where = f" ({e.filename})" if e.filename else ""
            raise UsageError(f"{self.name}{where}: {e.strerror or e}") from None


def _open_out(path: str):
    if path == "-":
        return sys.stdout, False
    try:
        return open(path, "w", encoding="utf-8"), True
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror}") from None


class ProgressReport:
    """The progress callback ``replay_capture`` calls with the frame count; bound to the open capture, it shows
    bytes read against the input's size (a regular file's, compressed or not): percentage, rate, time left."""

    def __init__(self, prog, task, total: int | None) -> None:
        self.prog = prog
        self.task = task
        self.total = total
        self.capture = None

    def bind_capture(self, cap) -> None:
        self.capture = cap

    def __call__(self, frames: int) -> None:
        done = self.capture.bytes_consumed if self.capture is not None and self.total else None
        if done is None:
            self.prog.update(self.task, completed=frames, frames=frames)
        else:
            self.prog.update(self.task, completed=min(done, self.total), frames=frames)


def input_size(path: str) -> int | None:
    """Bytes of a regular file at ``path`` (the progress total), None for stdin, pipes, devices or errors."""
    import stat

    if path == "-":
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) and st.st_size > 0 else None


def progress_display(total: int | None, console: Console):
    """A rich ``Progress`` for a replay: with a known input size (bytes) a bar, percentage, frames, frames/s,
    MB/s, elapsed and time left; without one (stdin, a pipe) frames, frames/s and elapsed."""
    from rich.progress import (
        BarColumn,
        Progress,
        ProgressColumn,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )
    from rich.text import Text

    class FramesPerSecond(ProgressColumn):
        def render(self, task):
            elapsed = task.finished_time if task.finished else task.elapsed
            frames = task.fields.get("frames", 0)
            speed = frames / elapsed if elapsed else None
            return Text(f"{speed:,.0f} frames/s" if speed else "… frames/s", style="progress.data.speed")

    columns = [TextColumn("[progress.description]{task.description}")]
    if total:
        columns += [BarColumn(), TaskProgressColumn()]
    columns += [TextColumn("{task.fields[frames]:,} frames"), FramesPerSecond()]
    if total:
        columns += [TransferSpeedColumn(), TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn()]
    else:
        columns += [TimeElapsedColumn()]
    return Progress(*columns, console=console, transient=True)


def _progress(quiet: bool, path: str | None = None):
    """A progress display on stderr when it is a terminal (else None, None) and the callback for the replay."""
    if quiet or not sys.stderr.isatty():
        return None, None
    from rich.console import Console

    total = input_size(path) if path is not None else None
    console = Console(stderr=True, no_color=bool(os.environ.get("NO_COLOR")) or None)
    prog = progress_display(total, console)
    task = prog.add_task("replaying", total=total, frames=0)
    prog.start()
    return prog, ProgressReport(prog, task, total)


FLOW_HELP = (
    "Only flows matching every comma-separated term: N (flow id), ADDR[:PORT] or [V6]:PORT (any endpoint), "
    "vni=, tunnel=vxlan|geneve|none, outer-src=, outer-dst=, outer-sport=, outer-dport=, src=, dst=, sport=, "
    "dport= (inner), proto=tcp|udp|icmp|icmpv6|N, csum=zero|set. README: Selecting flows."
)


def _write_export(path: str, text: str, what: str) -> None:
    """Write an export (``--json``/``--markdown``) to ``path``, or stdout for ``-``. Raises UsageError."""
    if path == "-":
        click.echo(text)
        return
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    except OSError as e:
        raise UsageError(f"{what} {path}: cannot write: {e.strerror or e}") from None


@main.command("replay")
@click.argument("capture", type=click.Path(dir_okay=False))
@replay_options
@click.option("--flow", "flow", default=None, metavar="SELECTOR", help=FLOW_HELP)
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json", "markdown"]), default="table", show_default=True
)
@click.option(
    "--json",
    "json_path",
    default=None,
    metavar="FILE",
    help="Also write the JSON document (as --format json prints it) to FILE; - prints it instead of the table.",
)
@click.option(
    "--markdown",
    "md_path",
    default=None,
    metavar="FILE",
    help="Also write the Markdown report to FILE; - prints it instead of the table.",
)
@click.option(
    "--trace",
    "trace_path",
    default=None,
    help="Write netif_receive_skb lines (perf script style) to PATH or -.",
)
@click.option("--no-hist", is_flag=True, help="Leave out the segments-per-skb bar charts.")
@click.option(
    "--flows-max",
    type=BoundedInt(0, 1 << 32),
    default=FLOWS_MAX_DEFAULT,
    show_default=True,
    metavar="N",
    help="JSON: per kernel, list at most N flows in full in flows[] (those with most segments); the others are "
    "counted and their counters summed in flows_summary.omitted.",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no notes on stderr.")
@click.option(
    "--write-pcap",
    "pcap_dir",
    default=None,
    metavar="DIR",
    help="Write DIR/<kernel>-<dev>.pcapng: the skbs each device delivered, as tcpdump on it would capture "
    "them, with a comment per packet (segments, gso_size, why the skb ended).",
)
@click.option(
    "--pcap-format",
    type=click.Choice(["pcapng", "pcap"]),
    default="pcapng",
    show_default=True,
    help="--write-pcap file format: pcapng (interface block per device, packet comments) or classic pcap.",
)
@click.option(
    "--plot", "plot_path", default=None, metavar="FILE", help="Segments-per-skb charts to FILE.svg|png."
)
def replay_cmd(
    capture,
    flow,
    fmt,
    json_path,
    md_path,
    trace_path,
    no_hist,
    flows_max,
    quiet,
    pcap_dir,
    pcap_format,
    plot_path,
    **opts,
) -> None:
    """Replay CAPTURE (pcap/pcapng, optionally gzip; - for stdin) through the GRO stages of each kernel model."""
    from .capture.reader import CaptureError
    from .report.document import document
    from .report.pcapout import Observers, PcapTimeError, open_device_pcaps
    from .report.plot import check_plot_request, write_plot
    from .report.schema import dumps
    from .report.trace import TraceWriter
    from .sim import replay_capture

    stdout_users = [f"--format {fmt}"] if fmt != "table" else []
    stdout_users += [f"{o} -" for o in _dash_options(trace_path, json_path, md_path)]
    if len(stdout_users) > 1:
        both = "both" if len(stdout_users) == 2 else "all"
        raise UsageError(f"{' and '.join(stdout_users)} {both} write to stdout: give all but one a file")
    cfg = build_config(flow=flow, **opts)
    # what --flow matching no flow removes again: outputs this run created and left empty
    created = [p for p in (trace_path, pcap_dir) if p and p != "-" and not os.path.lexists(p)]
    try:
        check_plot_request(plot_path)
        pcaps = open_device_pcaps(pcap_dir, pcap_format, cfg)
    except (ValueError, RuntimeError) as e:
        raise UsageError(str(e)) from None
    tracer = None
    out = None
    if trace_path:
        out, close = _open_out(trace_path)
        tracer = TraceWriter(out, tag=len(cfg.kernels) > 1)
        if trace_path != "-":  # standard output's errors are entry()'s (a closed pipe ends quietly)
            tracer = NamedOutput(tracer, f"--trace {trace_path}")
    observer = tracer
    if pcaps is not None:
        observer = Observers(tracer, NamedOutput(pcaps, f"--write-pcap {pcap_dir}"))
    prog, cb = _progress(quiet, capture)
    try:
        result = replay_capture(capture, cfg, observer, cb)
    except CaptureError as e:
        raise UsageError(str(e)) from None
    except PcapTimeError as e:
        # the run stops: the --write-pcap files it wrote would lack this frame and every later one, so they go
        pcaps.close()
        for path, _n in pcaps.written():
            with contextlib.suppress(OSError):
                path.unlink()
        _remove_if_empty(created)
        raise UsageError(f"{e}; no file written") from None
    except OSError as e:
        if e.filename is None:
            raise  # a write to standard output (--trace -): entry() reports it
        raise UsageError(f"{e.filename}: {e.strerror}") from None
    finally:
        if prog is not None:
            prog.stop()
        if pcaps is not None:
            try:
                pcaps.close()
            except OSError as e:
                raise UsageError(f"--write-pcap {pcap_dir}: {e.strerror or e}") from None
    if out is not None and trace_path != "-":
        try:
            out.close()
        except OSError as e:
            raise UsageError(f"--trace {trace_path}: {e.strerror}") from None
    if flow is not None and not result.input.selected_frames:
        # known only now, after the replay: nothing is rendered, and the empty --trace file and --write-pcap
        # directory this run made are removed (no frame of a matching flow reached them)
        _remove_if_empty(created)
        raise UsageError(
            f"no flow matches --flow {flow!r} ({len(result.flows)} flows in {capture}; "
            "gro-replay explain CAPTURE lists them)"
        )
    if pcaps is not None and not quiet:
        for path, n in pcaps.written():
            click.echo(f"wrote {path} ({n} frames)", err=True)
    if plot_path:
        try:
            write_plot(result, plot_path)
        except OSError as e:
            raise UsageError(f"--plot {plot_path}: {e.strerror}") from None
    if json_path:
        _write_export(json_path, dumps(document(result, flows_max=flows_max)), "--json")
    if md_path:
        _write_export(md_path, markdown(result), "--markdown")
    if fmt == "json":
        click.echo(dumps(document(result, flows_max=flows_max)))
    elif fmt == "markdown":
        click.echo(markdown(result))
    elif "-" not in (json_path, md_path):
        from .report.table import render

        render(result, report_console(), hist=not no_hist)


def _remove_if_empty(paths: list[str]) -> None:
    """Remove each path that is an empty file or an empty directory (best effort: a path that changed stays)."""
    for p in paths:
        try:
            if os.path.isdir(p):
                os.rmdir(p)
            elif os.path.isfile(p) and os.path.getsize(p) == 0:
                os.unlink(p)
        except OSError:
            pass


def _dash_options(trace_path, json_path, md_path) -> list[str]:
    return [
        o for o, p in (("--trace", trace_path), ("--json", json_path), ("--markdown", md_path)) if p == "-"
    ]


@main.command("schema")
@click.argument("name", type=click.Choice(["replay", "explain", "diff", "batch", "kernel-backend"]))
def schema_cmd(name: str) -> None:
    """Print the JSON Schema (draft 2020-12) of a document: replay (CAPTURE --format json), explain, diff,
    batch (the combined batch.json) or kernel-backend (kernel CAPTURE --format json)."""
    from .report.schema import text

    click.echo(text(name), nl=False)


def markdown(result) -> str:
    """The replay as Markdown (CI job summaries): ``report.table.markdown``."""
    from .report.table import markdown as _markdown

    return _markdown(result)


def _mount_all() -> None:
    """Import every sub-command module now (``main.commands`` complete, e.g. for documentation tools)."""
    for name in LAZY_COMMANDS:
        main.get_command(None, name)


class Interrupted(BaseException):
    """SIGINT (Ctrl-C): raised by ``entry``'s handler instead of KeyboardInterrupt, which click would turn into
    "Aborted!" and exit code 1."""


class StdoutFailed(Exception):
    """Writing standard output failed: ``errno`` EPIPE (the reader went away) or another error (a full disk)."""

    def __init__(self, error: OSError) -> None:
        super().__init__(error.strerror or str(error))
        self.errno = error.errno


#: Exit code when the reader of standard output went away (``| head``): 128 + SIGPIPE, what a shell reports for
#: cat, grep or tcpdump killed by SIGPIPE, so ``set -o pipefail`` scripts see the same thing.
EXIT_PIPE_CLOSED = 128 + signal.SIGPIPE
#: Exit code after SIGINT: 128 + SIGINT.
EXIT_INTERRUPTED = 128 + signal.SIGINT


class _WholeWrites(io.RawIOBase):
    """File descriptor 1 for a ``BufferedWriter`` whose ``write`` writes everything or raises.

    CPython's ``BufferedWriter.write`` of more bytes than its buffer (a JSON document of megabytes in one
    ``click.echo``) writes straight to the raw file; when the pipe's reader goes away during that write, ``write(2)``
    returns the part that fitted (64 KiB) and the following EPIPE is lost: the rest of the document is dropped
    silently and the process exits 0. Looping here until every byte is written makes the EPIPE an exception
    (BrokenPipeError) for every writer of standard output at once: click.echo, rich, ``--trace -``.
    """

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, b) -> int:
        view = memoryview(b).cast("B")
        done = 0
        while done < len(view):
            done += os.write(self._fd, view[done:])
        return done

    def close(self) -> None:  # descriptor 1 stays open (the interpreter's own sys.__stdout__ owns it)
        super().close()


def _whole_stdout_writes() -> None:
    """Replace ``sys.stdout`` (a text stream on descriptor 1) by the same text stream over ``_WholeWrites``; leaves
    any other standard output (a test's capture, a closed or missing one) alone."""
    out = sys.stdout
    if not isinstance(out, io.TextIOWrapper):
        return
    try:
        fd = out.fileno()
        out.flush()
    except (OSError, ValueError):
        return
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(_WholeWrites(fd)),
        encoding=out.encoding,
        errors=out.errors,
        line_buffering=out.line_buffering,
    )


def _stdout_error() -> OSError | None:
    """The error of flushing the bytes still buffered for standard output (EPIPE: the reader went away), or None."""
    try:
        sys.stdout.flush()
    except OSError as e:
        return e
    except ValueError:  # closed
        return OSError(errno.EIO, "write error")
    return None


def _silence_stdout() -> None:
    """Point file descriptor 1 at /dev/null so that the interpreter's last flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _on_sigint(signum, frame) -> None:
    raise Interrupted()


def _sane_terminal_size_env() -> None:
    """Drop ``COLUMNS``/``LINES`` values that are not a plain number: rich's Console takes them with ``int()``
    after ``str.isdigit()``, which lets '²' through and ends in a ValueError."""
    for name in ("COLUMNS", "LINES"):
        v = os.environ.get(name)
        if v is not None and not (v.isascii() and v.isdigit() and 0 < int(v) < 100_000):
            del os.environ[name]


def entry() -> None:
    """Console-script entry. Exit codes: click's own errors keep theirs (2 usage); 130 after SIGINT (one line, no
    traceback); 141 when the reader of standard output went away (``| head -1``; nothing printed); 2 when standard
    output cannot be written (``> /dev/full``: one line naming it); anything unexpected becomes one line on stderr
    and exit code 70 (EX_SOFTWARE, a bug to report) instead of a traceback (``GRO_REPLAY_DEBUG=1`` shows it).
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _on_sigint)
    code: int | str | None = 0
    _whole_stdout_writes()
    _sane_terminal_size_env()
    try:
        try:
            # prog_name fixed: usage lines and shell completion (_GRO_REPLAY_COMPLETE) name the console script
            # even when run as python -m gro_replay.cli
            main(standalone_mode=True, prog_name="gro-replay")
        except SystemExit as e:
            code = e.code
        error = _stdout_error()
        if error is not None:
            raise StdoutFailed(error)
    except (Interrupted, KeyboardInterrupt):
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        click.echo("gro-replay: interrupted", err=True)
        code = EXIT_INTERRUPTED
    except StdoutFailed as e:
        _silence_stdout()
        if e.errno == errno.EPIPE:
            code = EXIT_PIPE_CLOSED
        else:
            click.echo(f"gro-replay: cannot write standard output: {e}", err=True)
            code = 2
    except Exception as e:  # noqa: BLE001 - the last line of defence against tracebacks
        if os.environ.get("GRO_REPLAY_DEBUG"):
            raise
        click.echo(f"gro-replay: internal error: {type(e).__name__}: {e}", err=True)
        code = 70
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
