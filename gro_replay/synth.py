"""Scenario generator: bulk TCP flows over VXLAN or Geneve, as timestamped frames or a pcap file.

A :class:`Scenario` names a traffic pattern (encapsulation, address families, outer checksum, segment
size, flows, interleaving, timing); :func:`synth_frames` yields its frames in wire order with exact
nanosecond timestamps, and :func:`write_scenario` writes them as a nanosecond pcap. Everything is
deterministic: the same scenario gives byte-identical output.

What a real sender does, and the scenario mirrors:
- each flow has its own inner TCP source port, and the outer UDP source port comes from a hash of the
  inner flow, scaled into the local port range the way ``udp_flow_src_port`` does;
- segments of a flow are contiguous; the inner IPv4 id advances by the number of wire segments of each frame
  (``ip_select_ident_segs`` with ``gso_segs`` on a connected socket) and the outer IPv4 id the same way per frame
  across all flows (one tunnel destination, ``iptunnel_xmit``): by one for a frame within ``mtu``, by the
  number of segments GSO/TSO makes of a larger one (a super-frame, as a sending host's capture shows it;
  :meth:`Scenario.gso_segs`);
- the TCP timestamp clock ticks every millisecond (``tcp_clock_ms``) from a per-flow offset.

Kernel: net/ipv4/udp.c / include/net/udp.h ``udp_flow_src_port``; include/net/ip.h ``ip_select_ident_segs``
(called from net/ipv4/ip_output.c ``__ip_queue_xmit`` with ``skb_shinfo(skb)->gso_segs ?: 1``);
net/ipv4/ip_tunnel_core.c ``iptunnel_xmit`` (``__ip_select_ident(net, iph, skb_shinfo(skb)->gso_segs ?: 1)``);
include/net/tcp.h ``tcp_time_stamp``.

Left out: the real flow hash (``skb_get_hash`` is a keyed jhash; a CRC-32 of the inner 5-tuple stands in),
the random step ``ip_idents_reserve`` (net/ipv4/route.c) adds to the outer id when jiffies moved since the
counter's last use (the outer ids here advance by the segments alone, as within one jiffy), ACKs in the reverse
direction, loss and reordering.
"""

from __future__ import annotations

import functools
import ipaddress
import itertools
import struct
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO, NamedTuple

from gro_replay.capture.writer import PCAP_TS_NS_MAX, PcapWriter
from gro_replay.packet.build import FrameSpec, build_frame, frame_layout, outer_ip_overhead
from gro_replay.packet.geneve import GENEVE_UDP_PORT, geneve_opt
from gro_replay.packet.vxlan import IANA_VXLAN_UDP_PORT
from gro_replay.resegment import IPV6_MIN_MTU, TCP_MIN_SND_MSS

#: 2021-02-26 21:02:48 UTC, the date of the fix's mail: a fixed start keeps output reproducible.
DEFAULT_START_NS = 1614373368 * 10**9
#: Default local port range (net.ipv4.ip_local_port_range), which ``udp_flow_src_port`` scales into.
LOCAL_PORT_MIN = 32768
LOCAL_PORT_MAX = 60999
#: Geneve option class of the synthetic options (IANA "Experimental Use" range 0xFFF0-0xFFFF).
SYNTH_GENEVE_OPT_CLASS = 0xFFF0
SYNTH_GENEVE_OPT_TYPE = 0x01
#: Distance between the initial sequence numbers, inner IP ids and TS clock offsets of successive flows.
FLOW_SEQ_STRIDE = 0x01000000
FLOW_ID_STRIDE = 0x1000
FLOW_TS_STRIDE = 100_000
#: Flows a scenario can have: flow k's inner TCP source port is 40000 + k (``flow_spec``), at most 65535.
MAX_FLOWS = 0x10000 - FrameSpec.sport

_FLOW_KEY = struct.Struct("!16s16sHHB")
#: The largest value of a 16-bit length field: IPv4 Total Length (RFC 791 §3.1), UDP Length (RFC 768), IPv6
#: Payload Length (RFC 8200 §3).
MAX_LENGTH_FIELD = 0xFFFF


class ScenarioError(ValueError):
    """A value a scenario (or a traffic mix) cannot use. The message names fields as ``{field}`` placeholders:
    ``str()`` reads them as the field names (``mss 65535 is more than …``), :meth:`words` in other names (the
    synth command's options: ``--mss 65535 is more than …``)."""

    def __init__(self, template: str) -> None:
        self.template = template
        super().__init__(self.words({}))

    def words(self, names: Mapping[str, str]) -> str:
        """The message with each ``{field}`` read as ``names[field]`` (the field's own name when not there)."""
        return self.template.format_map(_Names(names))


class _Names(dict):
    def __missing__(self, key: str) -> str:
        return key


#: The TCP header without options (RFC 9293 §3.1: data offset 5)
TCP_HEADER = 20


class PayloadLimit(NamedTuple):
    """The most TCP payload bytes one frame can carry, and what sets that limit."""

    payload: int  #: the largest payload whose frame every 16-bit length field can hold
    field: str  #: the length field that sets it, with its RFC
    headers: tuple[tuple[int, str], ...]  #: (bytes, name) of each header that field counts, outermost first


def payload_limit(spec: FrameSpec) -> PayloadLimit:
    """The largest TCP payload :func:`~gro_replay.packet.build.build_frame` can build with ``spec``'s headers.

    Every length field on the way is 16 bits (:data:`MAX_LENGTH_FIELD`); the one that counts the most header bytes
    besides the payload sets the limit: an outer IPv4 packet's total length counts everything from its own header
    on; an outer IPv6 packet's payload length does not count its own header and equals the outer UDP length (no
    outer extension headers), which counts the UDP header on. The inner IPv4 total length and IPv6 payload length
    count fewer headers than either, so they never set it.
    """
    headers = header_sizes(spec)
    field = "an outer IPv4 packet's total length (RFC 791)"
    if spec.outer_ipv6:
        headers = headers[1:]
        field = "an outer UDP datagram's length (RFC 768; the outer IPv6 payload length, RFC 8200)"
    return PayloadLimit(MAX_LENGTH_FIELD - sum(n for n, _ in headers), field, tuple(headers))


def header_sizes(spec: FrameSpec, outer: str = "", inner: str = "") -> list[tuple[int, str]]:
    """(bytes, name) of each header of ``spec``'s outer IP packet before the TCP payload, outermost first: outer IP,
    UDP, VXLAN or Geneve (its options included), inner Ethernet (its VLAN tags included), inner IP, TCP (its options
    included); ``outer`` and ``inner`` prefix the names of the outer IP and of the inner Ethernet and IP headers."""
    lay = frame_layout(replace(spec, payload=0))
    return [
        (lay.outer_l4 - lay.outer_l3, outer + ("IPv6" if spec.outer_ipv6 else "IPv4")),
        (lay.tunnel - lay.outer_l4, "UDP"),
        (lay.inner_l2 - lay.tunnel, "VXLAN" if spec.encap == "vxlan" else "Geneve"),
        (
            lay.inner_l3 - lay.inner_l2,
            inner + ("Ethernet + VLAN" if spec.inner_vlan is not None else "Ethernet"),
        ),
        (lay.inner_l4 - lay.inner_l3, inner + ("IPv6" if spec.inner_ipv6 else "IPv4")),
        (lay.payload - lay.inner_l4, "TCP"),
    ]


def check_payload(name: str, size: int, spec: FrameSpec) -> None:
    """Raise ScenarioError naming field ``name`` when a frame of ``spec`` cannot carry ``size`` payload bytes
    (:func:`payload_limit`): ``mss 65535 is more than the 65433 payload bytes … 65535 = 20 IPv4 + … + 65433``."""
    limit = payload_limit(spec)
    if size <= limit.payload:
        return
    parts = " + ".join(f"{n} {what}" for n, what in limit.headers)
    raise ScenarioError(
        f"{{{name}}} {size} is more than the {limit.payload} payload bytes a segment can carry with these headers: "
        f"{limit.field} is 16 bits, {MAX_LENGTH_FIELD} = {parts} + {limit.payload}"
    )


@dataclass(frozen=True)
class Scenario:
    """A bulk-TCP traffic pattern over a UDP tunnel.

    ``mss`` is the payload of a full frame (bytes); ``None`` fills an outer IP packet of ``mtu`` bytes. A frame
    whose outer IP packet exceeds ``mtu`` is a GSO/TSO super-frame as the sending host captures it before
    segmentation: its IPv4 ids leave room for the :meth:`gso_segs` wire segments it becomes.
    ``frames`` counts the frames of each flow; with ``last_payload`` the last of them carries that many
    bytes instead of ``mss``. ``interleave`` is ``"rr"`` (one frame of each flow in turn) or a block size
    ``k``: k frames of flow 1, then k of flow 2, and so on. Frame ``j`` (1-based, across all flows) is
    followed by ``pause_ns`` instead of ``gap_ns`` when ``pause_every`` divides ``j``. ``port`` defaults
    to 4789 (VXLAN) or 6081 (Geneve); ``geneve_opt_bytes`` is the total size of the Geneve options,
    option headers included (a multiple of 4); ``inner_vlan`` a VID the inner frames carry in an 802.1Q tag.
    """

    encap: str = "vxlan"
    outer_ipv6: bool = False
    inner_ipv6: bool = False
    outer_csum: str = "zero"
    mss: int | None = None
    mtu: int = 1500
    timestamps: bool = True
    flows: int = 1
    frames: int = 64
    interleave: int | str = "rr"
    gap_ns: int = 1000
    pause_every: int = 0
    pause_ns: int = 0
    last_payload: int | None = None
    start_ns: int = DEFAULT_START_NS
    port: int | None = None
    geneve_opt_bytes: int = 0
    vni: int = 100
    inner_vlan: int | None = None

    def __post_init__(self) -> None:
        if self.encap not in ("vxlan", "geneve"):
            raise ScenarioError(f"{{encap}} must be vxlan or geneve, not {self.encap!r}")
        if self.outer_csum not in ("zero", "computed", "bad"):
            raise ScenarioError(f"{{outer_csum}} must be zero, computed or bad, not {self.outer_csum!r}")
        for name in ("flows", "frames"):
            if getattr(self, name) < 1:
                raise ScenarioError(f"{{{name}}} must be at least 1")
        if self.flows > MAX_FLOWS:
            raise ScenarioError(
                f"{{flows}} must be at most {MAX_FLOWS} (one inner TCP source port each, from 40000)"
            )
        for name in ("gap_ns", "pause_every", "pause_ns", "start_ns", "geneve_opt_bytes"):
            if getattr(self, name) < 0:
                raise ScenarioError(f"{{{name}}} must not be negative")
        if self.mss is not None and self.mss < 1:
            raise ScenarioError("{mss} must be at least 1")
        if self.last_payload is not None and self.last_payload < 0:
            raise ScenarioError("{last_payload} must not be negative")
        self._check_tunnel()
        self.interleave_block()  # validates
        self._check_mtu()
        self._check_payloads()
        self._check_last_timestamp()

    def _check_tunnel(self) -> None:
        """The tunnel's fields fit their headers: UDP port, 24-bit VNI, Geneve options (Geneve only), the inner
        12-bit VID."""
        if self.port is not None and not 0 < self.port <= 0xFFFF:
            raise ScenarioError(f"{{port}} {self.port} is not a UDP port")
        if not 0 <= self.vni < 1 << 24:
            raise ScenarioError(f"{{vni}} {self.vni} does not fit the 24-bit VNI field")
        if self.geneve_opt_bytes:
            if self.encap != "geneve":
                raise ScenarioError("{geneve_opt_bytes} needs {encap} geneve")
            if self.geneve_opt_bytes % 4 or self.geneve_opt_bytes > 252:
                raise ScenarioError("{geneve_opt_bytes} must be a multiple of 4, at most 252")
        if self.inner_vlan is not None and not 0 <= self.inner_vlan < 4096:
            raise ScenarioError(f"{{inner_vlan}} {self.inner_vlan} does not fit the 12-bit VLAN ID field")

    def min_mtu(self) -> int:
        """The smallest ``mtu`` that leaves a full segment's inner TCP options and payload ``TCP_MIN_SND_MSS`` bytes:
        the headers without the TCP options, plus 48. Kernel: net/ipv4/tcp_output.c ``__tcp_mtu_to_mss`` raises the
        MSS a path MTU leaves (IP and 20-byte TCP headers off, the options not yet) to ``sysctl_tcp_min_snd_mss``
        (default TCP_MIN_SND_MSS, include/net/tcp.h: "reserve room for full set of TCP options and 8 bytes of
        data"); ``tcp_mtu_to_mss`` then subtracts the options (``tcp_header_len - sizeof(struct tcphdr)``: 12 for
        timestamps), so at this MTU a full segment carries 48 bytes less its TCP options.
        With an outer IPv6 header, at least ``IPV6_MIN_MTU`` (1280, RFC 8200 §5), which is always more."""
        least = sum(n for n, _ in header_sizes(flow_spec(self, 0))[:-1]) + TCP_HEADER + TCP_MIN_SND_MSS
        return max(least, IPV6_MIN_MTU) if self.outer_ipv6 else least

    def _check_mtu(self) -> None:
        """``mtu`` is one a Linux sender could have segmented for: with an outer IPv6 header at least 1280 (no IPv6
        link has less), and its inner MSS not below ``TCP_MIN_SND_MSS`` (``min_mtu``; the MSS and every
        super-frame's segment count come from ``mtu``: :meth:`wire_mss`). Raises ScenarioError."""
        least = self.min_mtu()
        if self.mtu >= least:
            return
        if self.outer_ipv6 and self.mtu < IPV6_MIN_MTU:
            raise ScenarioError(
                f"{{mtu}} {self.mtu} is less than {IPV6_MIN_MTU}, the smallest link MTU of IPv6 (RFC 8200 §5; "
                "IPV6_MIN_MTU, include/uapi/linux/ipv6.h): Linux runs no IPv6 on a link below it, so no outer IPv6 "
                "packet is segmented smaller"
            )
        *outer, tcp = header_sizes(flow_spec(self, 0), "outer ", "inner ")
        parts = " + ".join(f"{n} {what}" for n, what in outer)
        opts = tcp[0] - TCP_HEADER
        counted = (
            f"; the MSS counts the {opts} bytes of TCP options, so a full segment carries at least "
            f"{TCP_MIN_SND_MSS - opts} payload bytes"
            if opts
            else ""
        )
        raise ScenarioError(
            f"{{mtu}} {self.mtu} is less than {least}, the smallest MTU that leaves these headers an inner TCP MSS "
            f"of {TCP_MIN_SND_MSS} bytes ({least} = {parts} + {TCP_HEADER} TCP + {TCP_MIN_SND_MSS}{counted}): no "
            "Linux sender segments below that MSS (TCP_MIN_SND_MSS, include/net/tcp.h, applied by "
            "__tcp_mtu_to_mss in net/ipv4/tcp_output.c)"
        )

    def _check_payloads(self) -> None:
        """Every payload a frame carries fits the frame's 16-bit length fields (:func:`check_payload`): the full
        segments' (``mss``, or what ``mtu`` leaves) unless the one frame is the last, and ``last_payload``."""
        first = flow_spec(self, 0)
        if self.last_payload is None or self.frames > 1:
            if self.mss is not None:
                check_payload("mss", self.mss, first)
            elif self.resolved_mss() > payload_limit(first).payload:
                raise ScenarioError(
                    f"{{mtu}} {self.mtu} is more than a 16-bit length field holds: at most "
                    f"{self.mtu - self.resolved_mss() + payload_limit(first).payload}"
                )
        if self.last_payload is not None:
            check_payload("last_payload", self.last_payload, first)

    def last_ns(self) -> int:
        """The timestamp of the last frame: ``start_ns`` plus the gaps and pauses between ``flows × frames``."""
        n = self.flows * self.frames
        pauses = (n - 1) // self.pause_every if self.pause_every else 0
        return self.start_ns + (n - 1 - pauses) * self.gap_ns + pauses * self.pause_ns

    def _check_last_timestamp(self) -> None:
        """The last frame's timestamp fits a pcap record: its seconds field is 32 bits (``PCAP_TS_NS_MAX``)."""
        last = self.last_ns()
        if last <= PCAP_TS_NS_MAX:
            return
        n = self.flows * self.frames
        apart = "{gap_ns}/{pause_ns}" if self.pause_every and n > self.pause_every else "{gap_ns}"
        frames = f"last of {n:,} frames ({{flows}} × {{frames}}, {apart} apart)" if n > 1 else "only frame"
        room = PCAP_TS_NS_MAX - (last - self.start_ns)
        if room < 0:
            raise ScenarioError(
                f"the {frames} comes {last - self.start_ns} ns after the first, past a pcap record's 32-bit "
                f"seconds (at most {PCAP_TS_NS_MAX} ns): shorten {apart} or send fewer frames"
            )
        raise ScenarioError(
            f"{{start_ns}} {self.start_ns} puts the {frames} at {last} ns, past a pcap record's 32-bit "
            f"seconds (at most {PCAP_TS_NS_MAX} ns): {{start_ns}} at most {room} with these gaps"
        )

    def interleave_block(self) -> int:
        """Frames of one flow sent back to back before the next flow's turn ("rr" is 1)."""
        if isinstance(self.interleave, str):
            if self.interleave in ("rr", "round-robin"):
                return 1
            if not (self.interleave.isascii() and self.interleave.isdigit()):
                raise ScenarioError(f"{{interleave}} must be rr or a block size, not {self.interleave!r}")
            block = int(self.interleave)
        else:
            block = self.interleave
        if block < 1:
            raise ScenarioError("{interleave} block size must be at least 1")
        return block

    def resolved_port(self) -> int:
        """``port``, or the encapsulation's IANA port."""
        if self.port is not None:
            return self.port
        return IANA_VXLAN_UDP_PORT if self.encap == "vxlan" else GENEVE_UDP_PORT

    def resolved_mss(self) -> int:
        """``mss``, or the payload that makes a full segment's outer IP packet exactly ``mtu`` bytes."""
        if self.mss is not None:
            return self.mss
        return self.wire_mss()

    def wire_mss(self) -> int:
        """TCP payload bytes per wire segment that make the outer IP packet exactly ``mtu`` bytes: the MSS, and so
        the ``gso_size``, of a sender whose tunnel underlay has MTU ``mtu`` (the tunnel device's MTU is ``mtu``
        less the outer IP, UDP, tunnel and inner Ethernet headers); at least ``TCP_MIN_SND_MSS`` less the TCP
        options (``_check_mtu``)."""
        return self._wire_mss

    @functools.cached_property
    def _wire_mss(self) -> int:
        """``wire_mss``, computed once (a frame layout built from flow 0's spec; the scenario is frozen)."""
        return self.mtu - outer_ip_overhead(flow_spec(self, 0))

    def gso_segs(self, payload: int) -> int:
        """Wire segments a Linux sender makes of a frame carrying ``payload`` TCP bytes: ``skb_shinfo(skb)->
        gso_segs`` = ceil(payload / gso_size) with gso_size = :meth:`wire_mss` (net/ipv4/tcp_output.c
        ``tcp_set_skb_tso_segs``: ``DIV_ROUND_UP(skb->len, mss_now)``, copied into ``gso_segs`` by
        ``__tcp_transmit_skb``) when the frame's outer IP packet exceeds
        ``mtu``; 1 for a frame within ``mtu`` (``gso_segs ?: 1``).

        Each IPv4 id counter advances by this many per frame: include/net/ip.h ``ip_select_ident_segs`` (inner,
        the TCP socket's ``inet_id``), net/ipv4/ip_tunnel_core.c ``iptunnel_xmit`` (outer, ``__ip_select_ident``),
        so that the segments net/ipv4/af_inet.c ``inet_gso_segment`` numbers id, id + 1, … end just below the
        next frame's id.
        """
        fit = self.wire_mss()
        if payload <= fit:
            return 1
        return -(-payload // fit)

    def payload_size(self, k: int) -> int:
        """TCP payload bytes of frame ``k`` (0-based) of one flow: ``mss``, or ``last_payload`` for the last."""
        if self.last_payload is not None and k == self.frames - 1:
            return self.last_payload
        return self.resolved_mss()

    def payload_sizes(self) -> list[int]:
        """TCP payload bytes of each frame of one flow (a list of ``frames`` ints: for small scenarios only;
        :func:`synth_frames` uses :meth:`payload_size`)."""
        return [self.payload_size(k) for k in range(self.frames)]


def geneve_options(total: int) -> bytes:
    """``total`` bytes of synthetic Geneve options: non-critical experimental TLVs of at most 128 bytes."""
    out = b""
    while len(out) < total:
        size = min(total - len(out), 128)
        out += geneve_opt(SYNTH_GENEVE_OPT_CLASS, SYNTH_GENEVE_OPT_TYPE, bytes(range(size - 4)))
    return out


def udp_flow_src_port(hash32: int, low: int = LOCAL_PORT_MIN, high: int = LOCAL_PORT_MAX) -> int:
    """Scale a 32-bit flow hash into ``[low, high)``. Kernel: include/net/udp.h ``udp_flow_src_port``."""
    return ((hash32 * (high - low)) >> 32) + low


def inner_flow_hash(spec: FrameSpec) -> int:
    """A deterministic 32-bit hash of the inner 5-tuple (CRC-32 standing in for ``skb_get_hash``)."""
    src, dst = spec.resolved_inner_addrs()
    key = _FLOW_KEY.pack(
        ipaddress.ip_address(src).packed.rjust(16, b"\0"),
        ipaddress.ip_address(dst).packed.rjust(16, b"\0"),
        spec.sport,
        spec.dport,
        6,
    )
    return zlib.crc32(key)


def flow_spec(sc: Scenario, flow: int) -> FrameSpec:
    """The first segment of flow ``flow`` (0-based): its ports, initial sequence number and ids."""
    base = FrameSpec()
    spec = FrameSpec(
        outer_ipv6=sc.outer_ipv6,
        outer_csum=sc.outer_csum,
        udp_dport=sc.resolved_port(),
        encap=sc.encap,
        vni=sc.vni,
        geneve_options=geneve_options(sc.geneve_opt_bytes),
        inner_ipv6=sc.inner_ipv6,
        inner_vlan=sc.inner_vlan,
        sport=base.sport + flow,
        seq=(base.seq + flow * FLOW_SEQ_STRIDE) & 0xFFFFFFFF,
        ip_id=(flow * FLOW_ID_STRIDE) & 0xFFFF,
        timestamps=sc.timestamps,
        tsval=base.tsval + flow * FLOW_TS_STRIDE,
        tsecr=base.tsecr + flow * FLOW_TS_STRIDE,
    )
    return replace(spec, udp_sport=udp_flow_src_port(inner_flow_hash(spec)))


def _wire_order(sc: Scenario) -> Iterator[tuple[int, int]]:
    """``(flow, index in flow)`` of each frame in sending order, generated one at a time."""
    block = sc.interleave_block()
    for first in range(0, sc.frames, block):
        for flow in range(sc.flows):
            for k in range(first, min(first + block, sc.frames)):
                yield flow, k


def synth_frames(sc: Scenario) -> Iterator[tuple[int, bytes]]:
    """Yield ``(ts_ns, frame)`` for every frame of ``sc`` in wire order.

    Frames are built one at a time as they are asked for: memory holds one first-segment spec per flow
    (``sc.flows`` of them), never a list of ``sc.frames`` frames or specs. Frame ``k`` of a flow carries
    ``payload_size(k)`` bytes at ``seq + k·mss`` (all frames before the last are full) with inner IPv4 id
    ``ip_id + k·gso_segs(mss)``; the outer IPv4 id starts at 0 and advances by each frame's ``gso_segs`` in
    wire order (``ip_select_ident_segs``, ``iptunnel_xmit``; :meth:`Scenario.gso_segs`). Frames within ``mtu``
    step both by one, as :func:`~gro_replay.packet.build.flow_specs` lays them out.

    Every frame can be built and timestamped in a pcap record: ``Scenario`` refuses payloads its length fields
    cannot hold and a last timestamp past the record's 32-bit seconds before any frame is built.
    """
    firsts = [flow_spec(sc, f) for f in range(sc.flows)]
    mss = sc.resolved_mss()
    # every frame but a flow's last carries mss bytes: frame k's inner id follows k full frames
    id_step = sc.gso_segs(mss)
    outer_id = 0
    ts = sc.start_ns
    for j, (flow, k) in enumerate(_wire_order(sc)):
        first = firsts[flow]
        payload = sc.payload_size(k)
        # the TCP clock ticks each millisecond from the flow's offset
        tsval = (first.tsval + (ts - sc.start_ns) // 1_000_000) & 0xFFFFFFFF
        spec = replace(
            first,
            payload=payload,
            seq=(first.seq + k * mss) & 0xFFFFFFFF,
            ip_id=(first.ip_id + k * id_step) & 0xFFFF,
            outer_ip_id=outer_id,
            tsval=tsval,
        )
        yield ts, build_frame(spec)
        # a full frame's segments are id_step (no second wire_mss, which builds a frame layout, per frame)
        outer_id = (outer_id + (id_step if payload == mss else sc.gso_segs(payload))) & 0xFFFF
        pause = sc.pause_every and (j + 1) % sc.pause_every == 0
        ts += sc.pause_ns if pause else sc.gap_ns


def write_scenario(path: str | Path | BinaryIO, sc: Scenario) -> int:
    """Write the frames of ``sc`` to a nanosecond pcap at ``path`` (or an open binary file: standard output);
    return the number of frames.

    Raises: OSError if ``path`` cannot be written (``Scenario`` refused every unbuildable value already).
    """
    return write_frames(path, synth_frames(sc))


def write_frames(path: str | Path | BinaryIO, frames: Iterator[tuple[int, bytes]]) -> int:
    """Write ``(ts_ns, frame)`` items to a nanosecond pcap at ``path`` (or an open binary file, left open); return
    the number of frames.

    The first frame is built before ``path`` is created, so an unbuildable scenario leaves no file.
    Raises: ValueError from the generator; OSError if ``path`` cannot be written.
    """
    first = next(frames)  # the first frame shows an unbuildable scenario before a file exists
    n = 0
    with PcapWriter(path) as writer:
        for ts_ns, frame in itertools.chain((first,), frames):
            writer.write(ts_ns, frame)
            n += 1
    return n
