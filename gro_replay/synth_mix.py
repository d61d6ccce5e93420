"""The overlay-node mix: what a capture on a busy overlay host's underlay device looks like.

Many bidirectional TCP connections between pods on two hosts, each carried over VXLAN: the data of a connection
flows one way in application writes of 1–16 segments (the last one short and with PSH, as ``tcp_push`` marks the
end of a write), the receiver's delayed ACKs flow the other way (one ACK per two full segments and one at the end
of each write, ``__tcp_ack_snd_check``), after a round-trip time. Connections take turns in random order with
short idle gaps; frames of one burst leave back to back at line rate. A quarter of the connections have an outer
UDP checksum (``udp_set_csum`` on a socket without ``UDP_CSUM_NOXMIT``), the rest send 0 (VXLAN's default on
IPv4). Everything is drawn from one seeded ``random.Random``: the same ``OverlayMix`` gives byte-identical frames.

Kernel: include/net/tcp.h ``tcp_push`` (PSH at the end of a write), net/ipv4/tcp_input.c ``__tcp_ack_snd_check``
(an ACK per two full-sized segments received), include/net/udp.h ``udp_flow_src_port`` (outer source port).

Left out: loss, retransmission, reordering, window updates, SACK, connection set-up and tear-down.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Iterator
from dataclasses import dataclass, replace

from .capture.writer import PCAP_TS_NS_MAX
from .packet.build import ACK, PSH, FrameSpec, build_frame
from .synth import DEFAULT_START_NS, ScenarioError, check_payload, inner_flow_hash, udp_flow_src_port

#: wire time of a 1514-byte frame at 10 Gbit/s (ns): frames of one burst leave this far apart
LINE_RATE_GAP_NS = 1_230
#: round-trip time between the two hosts, drawn per ACK from this range (ns)
RTT_NS = (20_000, 60_000)
#: connection i sends from TCP port 33000 + i (``_connection``), at most 65535
MAX_CONNECTIONS = 0x10000 - 33000


@dataclass(frozen=True)
class OverlayMix:
    """``frames`` frames (data and ACKs) of ``connections`` TCP connections over VXLAN between two hosts.

    ``mss``: payload of a full data segment (bytes); ``max_write``: segments of the largest application write;
    ``idle_ns``: mean idle gap between two bursts (exponential); ``csum_every``: every n-th connection computes
    its outer UDP checksum (0: none does); ``seed``: the random stream.
    """

    frames: int = 200_000
    connections: int = 48
    mss: int = 1398
    max_write: int = 16
    idle_ns: int = 4_000
    csum_every: int = 4
    seed: int = 1
    start_ns: int = DEFAULT_START_NS
    port: int = 4789

    def __post_init__(self) -> None:
        for name in ("frames", "connections", "mss", "max_write"):
            if getattr(self, name) < 1:
                raise ScenarioError(f"{{{name}}} must be at least 1")
        if self.connections > MAX_CONNECTIONS:
            raise ScenarioError(
                f"{{connections}} must be at most {MAX_CONNECTIONS} (one TCP source port each, from 33000)"
            )
        if self.idle_ns < 0 or self.csum_every < 0:
            raise ScenarioError("{idle_ns} and {csum_every} must not be negative")
        if not 0 < self.port <= 0xFFFF:
            raise ScenarioError(f"{{port}} {self.port} is not a UDP port")
        # the mix's span is drawn as it goes (idle gaps, round trips): the start is checked, the end is the
        # writer's (the CLI's --start-ns leaves a day; 10^9 frames, about 1.7 µs each on average, span under an hour)
        if not 0 <= self.start_ns <= PCAP_TS_NS_MAX:
            raise ScenarioError(
                f"{{start_ns}} {self.start_ns} is not in a pcap record's 0 .. {PCAP_TS_NS_MAX} ns"
            )
        # the data segments are the largest frames: the same headers for every connection
        check_payload("mss", self.mss, _connection(self, 0)[0])


def _connection(mix: OverlayMix, i: int) -> tuple[FrameSpec, FrameSpec]:
    """(data direction, ACK direction) specs of connection ``i``: pod addresses, ports, outer checksum."""
    csum = "computed" if mix.csum_every and i % mix.csum_every == mix.csum_every - 1 else "zero"
    data = FrameSpec(
        outer_src="10.0.0.1",
        outer_dst="10.0.0.2",
        outer_csum=csum,
        udp_dport=mix.port,
        inner_src=f"10.244.1.{2 + i % 250}",
        inner_dst=f"10.244.2.{2 + i % 250}",
        sport=33000 + i,
        dport=8080,
        seq=(0x10000000 * (i + 1)) & 0xFFFFFFFF,
        ack=(0x20000000 + i) & 0xFFFFFFFF,
        ip_id=(i * 0x1000) & 0xFFFF,
        tsval=100_000 + 7919 * i,
        tsecr=500_000 + 104_729 * i,
    )
    ack = replace(
        data,
        outer_src=data.outer_dst,
        outer_dst=data.outer_src,
        outer_src_mac=data.outer_dst_mac,
        outer_dst_mac=data.outer_src_mac,
        inner_src=data.inner_dst,
        inner_dst=data.inner_src,
        inner_src_mac=data.inner_dst_mac,
        inner_dst_mac=data.inner_src_mac,
        sport=data.dport,
        dport=data.sport,
        seq=data.ack,
        ack=data.seq,
        ip_id=(data.ip_id + 0x800) & 0xFFFF,
        tsval=data.tsecr,
        tsecr=data.tsval,
        payload=0,
    )
    data = replace(data, udp_sport=udp_flow_src_port(inner_flow_hash(data)))
    return data, replace(ack, udp_sport=udp_flow_src_port(inner_flow_hash(ack)))


def mix_frames(mix: OverlayMix) -> Iterator[tuple[int, bytes]]:
    """Yield ``(ts_ns, frame)`` of ``mix`` in time order, ``mix.frames`` of them.

    Every frame can be built: ``OverlayMix`` refuses an ``mss`` its length fields cannot hold (ScenarioError).
    """
    rng = random.Random(mix.seed)
    conns = [list(_connection(mix, i)) for i in range(mix.connections)]
    outer_id = {"10.0.0.1": 0, "10.0.0.2": 0}
    acks: list[tuple[int, int, int]] = []  # (due ns, order, connection): ACKs waiting for their RTT
    order = 0
    now = mix.start_ns
    emitted = 0

    def frame(spec: FrameSpec, ts: int) -> bytes:
        src = spec.outer_src or ""
        outer_id[src] = (outer_id[src] + 1) & 0xFFFF
        tick = (ts - mix.start_ns) // 1_000_000  # tcp_clock_ms
        return build_frame(replace(spec, outer_ip_id=outer_id[src], tsval=(spec.tsval + tick) & 0xFFFFFFFF))

    def due_acks(until: int) -> Iterator[tuple[int, bytes]]:
        while acks and acks[0][0] <= until:
            t, _o, c = heapq.heappop(acks)
            data, ack = conns[c]
            conns[c][1] = replace(ack, ack=data.seq, ip_id=(ack.ip_id + 1) & 0xFFFF)
            yield t, frame(conns[c][1], t)

    while emitted < mix.frames:
        c = rng.randrange(mix.connections)
        segs = rng.randint(1, mix.max_write)
        sizes = [mix.mss] * (segs - 1) + [rng.randint(1, mix.mss)]
        for k, size in enumerate(sizes):
            for item in due_acks(now):
                yield item
                emitted += 1
                if emitted >= mix.frames:
                    return
            data = conns[c][0]
            last = k == len(sizes) - 1
            spec = replace(data, payload=size, flags=ACK | (PSH if last else 0))
            yield now, frame(spec, now)
            emitted += 1
            conns[c][0] = replace(data, seq=(data.seq + size) & 0xFFFFFFFF, ip_id=(data.ip_id + 1) & 0xFFFF)
            if emitted >= mix.frames:
                return
            if last or k % 2 == 1:
                order += 1
                heapq.heappush(acks, (now + rng.randint(*RTT_NS), order, c))
            now += LINE_RATE_GAP_NS
        now += int(rng.expovariate(1 / mix.idle_ns)) if mix.idle_ns else 0
