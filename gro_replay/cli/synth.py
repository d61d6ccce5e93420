"""``gro-replay synth``: write a scenario's frames to a pcap.

Parses options into a :class:`~gro_replay.synth.Scenario` and calls :func:`~gro_replay.synth.write_scenario`;
prints one line to stderr: ``wrote N frames to PATH``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import BinaryIO

import click
from click.core import ParameterSource

from ..outputs import RunOutputs, failure_text
from ..synth import DEFAULT_START_NS, MAX_FLOWS, Scenario, ScenarioError, write_frames, write_scenario
from ..synth_mix import OverlayMix, mix_frames
from .command import Command
from .params import BoundedInt, FiniteFloat, Keyword


class SynthInputError(click.ClickException):
    """A scenario that cannot be built, or an output that cannot be written (exit code 2)."""

    exit_code = 2


#: Scenario and OverlayMix fields by the option that sets each: their ValueErrors begin with the field's name
_OPTION_OF = {
    "encap": "--encap",
    "outer_csum": "--outer-csum",
    "flows": "--flows",
    "frames": "--frames",
    "mss": "--mss",
    "mtu": "--mtu",
    "last_payload": "--last-payload",
    "port": "--port",
    "geneve_opt_bytes": "--geneve-opt-bytes",
    "interleave": "--interleave",
    "gap_ns": "--gap-us",
    "pause_every": "--pause-every",
    "pause_ns": "--pause-us",
    "start_ns": "--start-ns",
    "connections": "--connections",
    "seed": "--seed",
    "vni": "--vni",
}


def _option_words(exc: ValueError) -> str:
    """A scenario's ValueError in the command's words: each field a ScenarioError names as its option
    ("geneve_opt_bytes needs encap geneve" → "--geneve-opt-bytes needs --encap geneve"); any other ValueError
    with the field it begins with as the option."""
    if isinstance(exc, ScenarioError):
        return exc.words(_OPTION_OF)
    head, sep, rest = str(exc).partition(" ")
    return _OPTION_OF.get(head, head) + sep + rest


#: Longest gap or pause (µs): 1000 s.
MAX_US = 1e9
#: Latest first timestamp: a pcap record's seconds field is 32 bits; leave a day for the frames.
MAX_START_NS = ((1 << 32) - 86_400) * 1_000_000_000


def _us_to_ns(value: float, name: str) -> int:
    ns = round(value * 1000)
    if value < 0 or abs(value * 1000 - ns) > 1e-6:
        raise click.BadParameter("must be a non-negative whole number of nanoseconds", param_hint=name)
    return ns


def _interleave(ctx: click.Context, param: click.Parameter, value: str) -> int:
    if value.strip().lower() in ("rr", "round-robin"):
        return 1
    if value.isascii() and value.isdigit() and len(value) <= 9 and int(value) >= 1:
        return int(value)
    raise click.BadParameter("expected rr or a block size K >= 1")


#: the options --mix reads (the others describe bulk flows); --connections and --seed only mean something with it
_MIX_OPTIONS = {"frames", "mss", "port", "start_ns", "connections", "seed", "mix", "output"}
_MIX_ONLY = {"connections", "seed"}


def _check_given(mixing: bool, output: Path) -> None:
    """A one-line usage error (exit 2) for an option given on the command line that this kind of capture does not
    read (with --mix: the bulk flows' options; without: --connections, --seed), or an OUTPUT named for another
    format than the nanosecond pcap synth writes."""
    ctx = click.get_current_context()
    typed = (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)
    given = [p for p in ctx.command.params if p.name and ctx.get_parameter_source(p.name) in typed]
    for p in given:
        opt = "/".join(p.opts + p.secondary_opts)
        if mixing and p.name not in _MIX_OPTIONS:
            raise click.UsageError(f"{opt} describes bulk flows: --mix does not read it", ctx)
        if not mixing and p.name in _MIX_ONLY:
            raise click.UsageError(f"{opt} goes with --mix", ctx)
    name = str(output).lower()
    if name.endswith((".pcapng", ".gz", ".ntar")):
        raise click.UsageError(
            f"synth writes a classic nanosecond pcap, not what {output} is named for: name it .pcap "
            "(editcap -F pcapng or gzip converts it)",
            ctx,
        )


@click.command("synth", cls=Command)
@click.argument("output", type=click.Path(path_type=Path))
@click.option("--encap", type=Keyword(["vxlan", "geneve"]), default="vxlan", show_default=True)
@click.option("--outer-ipv6/--outer-ipv4", default=False, show_default=True, help="Outer IP family.")
@click.option("--inner-ipv6/--inner-ipv4", default=False, show_default=True, help="Inner IP family.")
@click.option(
    "--outer-csum",
    type=Keyword(["zero", "computed", "bad"]),
    default="zero",
    show_default=True,
    help="Outer UDP checksum: 0, the correct value, or a wrong one.",
)
@click.option(
    "--mss",
    type=BoundedInt(1, 65535),
    metavar="BYTES",
    help="Payload bytes per full segment [default: fill --mtu].",
)
@click.option(
    "--mtu",
    type=BoundedInt(68, 65535),
    metavar="BYTES",
    default=1500,
    show_default=True,
    help="Outer IP MTU: a frame above it is a GSO super-frame, its IPv4 IDs stepping by the segments it makes. At "
    "least the headers plus an inner TCP MSS of 48, the smallest a Linux sender uses (TCP_MIN_SND_MSS; the MSS "
    "counts the TCP options): 138 with outer and inner IPv4 and VXLAN; with --outer-ipv6 at least 1280, IPv6's "
    "smallest link MTU (RFC 8200 §5).",
)
@click.option("--timestamps/--no-timestamps", default=True, show_default=True, help="TCP timestamp option.")
@click.option("--flows", type=BoundedInt(1, MAX_FLOWS), metavar="N", default=1, show_default=True)
@click.option(
    "--frames",
    type=BoundedInt(1, 10**9),
    metavar="N",
    default=64,
    show_default=True,
    help="Frames per flow (with --mix: frames in all).",
)
@click.option(
    "--mix",
    type=Keyword(["overlay-node"]),
    help="A traffic mix instead of bulk flows: overlay-node = --connections bidirectional TCP connections over "
    "VXLAN, writes of 1-16 segments ending in PSH, delayed ACKs back, a quarter with outer checksums "
    "(gro_replay/synth_mix.py). Uses --frames, --mss (default 1398), --port, --start-ns.",
)
@click.option(
    "--connections", type=BoundedInt(1, 250), metavar="N", default=48, show_default=True, help="With --mix."
)
@click.option(
    "--seed", type=BoundedInt(0, (1 << 64) - 1), metavar="N", default=1, show_default=True, help="With --mix."
)
@click.option(
    "--interleave",
    metavar="rr|K",
    default="rr",
    show_default=True,
    callback=_interleave,
    help="rr: one frame per flow in turn; K: K frames of each flow in turn.",
)
@click.option(
    "--gap-us",
    type=FiniteFloat(0, MAX_US),
    metavar="US",
    default=1.0,
    show_default=True,
    help="Gap between frames (µs).",
)
@click.option(
    "--pause-every",
    type=BoundedInt(0, 10**9),
    metavar="N",
    default=0,
    show_default=True,
    help="Pause after every N frames (0: never).",
)
@click.option(
    "--pause-us",
    type=FiniteFloat(0, MAX_US),
    metavar="US",
    default=0.0,
    show_default=True,
    help="The pause, replacing the gap (µs).",
)
@click.option(
    "--last-payload", type=BoundedInt(0, 65535), metavar="BYTES", help="Payload of each flow's last frame."
)
@click.option(
    "--port",
    type=BoundedInt(1, 65535),
    metavar="PORT",
    help="Tunnel UDP port [default: 4789 vxlan, 6081 geneve].",
)
@click.option(
    "--geneve-opt-bytes",
    type=BoundedInt(0, 252),
    metavar="BYTES",
    default=0,
    show_default=True,
    help="Bytes of Geneve options (multiple of 4).",
)
@click.option("--vni", type=BoundedInt(0, (1 << 24) - 1), metavar="VNI", default=100, show_default=True)
@click.option(
    "--inner-vlan",
    type=BoundedInt(0, 4095),
    metavar="VID",
    help="An 802.1Q tag with this VLAN ID in every inner frame (after the inner Ethernet addresses).",
)
@click.option(
    "--start-ns",
    type=BoundedInt(0, MAX_START_NS),
    metavar="NS",
    default=DEFAULT_START_NS,
    show_default=True,
    help="First timestamp (ns since the epoch).",
)
def synth(
    output: Path,
    encap: str,
    outer_ipv6: bool,
    inner_ipv6: bool,
    outer_csum: str,
    mss: int | None,
    mtu: int,
    timestamps: bool,
    flows: int,
    frames: int,
    interleave: int,
    gap_us: float,
    pause_every: int,
    pause_us: float,
    last_payload: int | None,
    port: int | None,
    geneve_opt_bytes: int,
    vni: int,
    inner_vlan: int | None,
    start_ns: int,
    mix: str | None,
    connections: int,
    seed: int,
) -> None:
    """Write a synthetic bulk-TCP-over-VXLAN/Geneve capture to OUTPUT (nanosecond pcap; - for standard output)."""
    _check_given(mix is not None, output)
    named = "standard output" if str(output) == "-" else output  # in the closing line
    if str(output) == "-":  # standard output, as every other command reads "-"; never a terminal
        if sys.stdout.isatty():
            raise click.UsageError(
                "OUTPUT -: standard output is a terminal: redirect it or name a .pcap file"
            )
        sys.stdout.flush()
    try:
        # written beside OUTPUT and renamed into place when complete: an error or an interrupt leaves no half
        # capture (gro_replay/outputs.py)
        with RunOutputs() as outs:
            if mix is not None:
                m = OverlayMix(
                    frames=frames,
                    connections=connections,
                    mss=mss or OverlayMix.mss,
                    seed=seed,
                    start_ns=start_ns,
                    port=port or OverlayMix.port,
                )
                n = write_frames(_target(outs, output), mix_frames(m))
            else:
                sc = Scenario(
                    encap=encap,
                    outer_ipv6=outer_ipv6,
                    inner_ipv6=inner_ipv6,
                    outer_csum=outer_csum,
                    mss=mss,
                    mtu=mtu,
                    timestamps=timestamps,
                    flows=flows,
                    frames=frames,
                    interleave=interleave,
                    gap_ns=_us_to_ns(gap_us, "--gap-us"),
                    pause_every=pause_every,
                    pause_ns=_us_to_ns(pause_us, "--pause-us"),
                    last_payload=last_payload,
                    start_ns=start_ns,
                    port=port,
                    geneve_opt_bytes=geneve_opt_bytes,
                    vni=vni,
                    inner_vlan=inner_vlan,
                )
                n = write_scenario(_target(outs, output), sc)
    except ValueError as exc:
        raise click.UsageError(_option_words(exc)) from exc
    except OSError as exc:
        if str(output) == "-":
            raise  # standard output's: the entry's one handling (a closed pipe 141, /dev/full one line, exit 2)
        raise SynthInputError(failure_text("", str(output), exc.strerror or exc)) from exc
    if str(output) == "-":
        sys.stdout.buffer.flush()  # a write error here is standard output's too
    click.echo(f"wrote {n:,} frame{'' if n == 1 else 's'} to {named}", err=True)


def _target(outs: RunOutputs, output) -> str | BinaryIO:
    """Where synth writes: standard output's own descriptor for ``-`` (through ``sys.stdout.buffer``, as every
    command writes it: not by reopening /dev/stdout, which reaches another file when descriptor 1 was closed), else
    a file beside OUTPUT renamed into place when complete (gro_replay/outputs.py)."""
    return sys.stdout.buffer if str(output) == "-" else outs.temp_path(output, "")


if __name__ == "__main__":
    synth()
