"""The record → frame stage: capture records decoded into the frames the driver hands to NAPI, with the input's
accounting (``InputStats``; its notes: ``notes.py``), tunnel-port detection, the ``-f``/``--flow`` filters and
resegmenting.

``Ingest.decoded(records)`` turns records ``(ts_ns, buf, orig_len, linktype)`` into ``Frame``s: the outer Ethernet
frame as bytes, its VLAN tag, the decoder's flow id, the RX hash the NIC computes (RSS) and the capture index.
Every record is counted: replayed, skipped with a reason or filtered.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, fields
from functools import partial
from typing import NamedTuple

from ..capture.digest import DIGESTS
from ..capture.linktypes import sent_by_host
from ..capture.reader import DLT_EN10MB, STDIN_PATH, CaptureError, l2_normalize, open_capture
from ..capture.spool import is_regular_file
from ..kernel.nic import toeplitz_hash
from ..kernel.skbuff import ETH_FRAME_LEN
from ..packet.decode import CLS_NOT_TUNNEL, CLS_TUNNEL_TCP, Decoder, outer_udp_csum_bad, tag_depth
from ..packet.headers import outer_ip_len
from ..project import plural
from ..resegment import AboveMtu, Resegmenter
from .config import ConfigError, ReplayConfig
from .flow_mss import FlowMss
from .skipped import count_skip, past_datagram, received_frame, to_tunnel_ports, unread


class Frame(NamedTuple):
    """One decoded frame as the driver receives it: what every later stage (poll models, driver RX, kernels) reads.

    A NamedTuple: a tuple (built and unpacked at tuple speed on the per-frame path) whose fields have names.
    """

    #: capture timestamp (ns)
    ts_ns: int
    #: the Ethernet frame with VLAN tags removed (``packet.decode.Decoder.decode``)
    frame: bytes
    #: the outermost VLAN tag's TCI (a tuple for QinQ), None when untagged: the driver's ``__vlan_hwaccel_put_tag``
    vlan_tci: int | tuple[int, ...] | None
    #: the decoder's flow id (``Decoder.flows[flow_id]``)
    flow_id: int
    #: the RX hash the NIC reports (``skb->hash``, Toeplitz over ``Decoder.flow_rss[flow_id]``; 0 without RSS)
    hash: int
    #: the hash covers the L4 ports (``skb->l4_hash``)
    l4_hash: bool
    #: byte offset of the innermost TCP/UDP header in ``frame`` (CHECKSUM_PARTIAL's ``csum_start``), 0: none
    l4_start: int
    #: index of the capture record it came from (a resegmented super-frame's segments share it)
    index: int  # type: ignore[assignment]  # the field's name shadows tuple.index


@dataclass
class InputStats:
    """What was read: frames, bytes, skips by reason, frame classes; ``path`` and ``digests`` for capture files.

    ``frames_replayed`` and ``classes`` count the frames that entered the simulation: a resegmented super-frame
    counts once in ``resegmented_frames`` and as its segments (``segments_created``) there.
    ``oversize_not_split``: frames above the MTU replayed as captured, by reason (resegment.py ``KEEP_*``).
    """

    path: str | None = None
    #: the capture's digest by algorithm (capture/digest.py ``DIGESTS``: the one computed): JSON ``input.blake3``,
    #: ``input.sha256``, null for an algorithm not computed
    digests: dict[str, str] = field(default_factory=dict)
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
    #: super-frames split by ``--resegment`` whose outer UDP checksum was not final as captured (the sender's
    #: CHECKSUM_PARTIAL, filled in by TX offload): not bad checksums, each segment gets a computed one (resegment.py)
    resegmented_csum_partial: int = 0
    #: super-frames of outer IPv6 split at 1280, IPv6's smallest link MTU, above a smaller ``--mtu`` (resegment.py
    #: ``Resegmenter.mtu6``)
    split_at_ipv6_min_mtu: int = 0
    #: segments ``--resegment MSS`` made that are still larger than ``--mtu`` (resegment.py ``AboveMtu``)
    above_mtu: AboveMtu = field(default_factory=AboveMtu)
    #: records whose captured length exceeds the original (wire) length they state (pcap ``orig_len`` < ``incl_len``,
    #: pcapng EPB Original Packet Length < Captured Packet Length): a fault of the capture writer, replayed as
    #: captured and reported (``capture_notes``); counted once per record on both paths
    caplen_over_orig_len: int = 0
    #: frames replayed longer than ``ETH_FRAME_LEN`` without VLAN tags (sim/size_notes.py ``long_frames_text``)
    frames_over_eth_frame_len: int = 0
    #: records read without their FCS, or what of it a snaplen left (capture/fcs.py), and frames replayed with bytes
    #: past their data, by those bytes (sim/skipped.py ``past_datagram``); notes: sim/size_notes.py ``trailer_notes``
    frames_fcs_stripped: int = 0
    frames_fcs_cut: int = 0
    frames_past_datagram: Counter = field(default_factory=Counter)
    #: for sim/notes.py: pairs of outer hosts tunnel traffic runs both ways between (``both_ways``; none when Linux
    #: cooked records were read, ``cooked_frames``: their packet types say what the host received), the most VLAN
    #: tags an outer frame replayed carries (the -f advice), first fragments to a tunnel port (``fragments_text``)
    tunnel_both_ways: list = field(default_factory=list)
    cooked_frames: int = 0
    outer_tag_depth: int = 0
    fragments_to_tunnel: int = 0
    #: records longer than the snaplen their capture declares for them (pcap file header, pcapng interface
    #: description block), counted by the record readers (capture/snaplen.py) over every record of the capture:
    #: ``[{"snaplen", "records", "longest"}, …]`` (bytes; one entry per declared snaplen exceeded), [] when none;
    #: replayed as captured and reported (``capture_notes``)
    caplen_over_snaplen: list = field(default_factory=list)
    #: frames skipped (cut short, malformed, an unsupported link layer) by what their outer headers say: reason →
    #: tunnel kind, or ``packet.headers.UNREAD`` → frames (sim/skipped.py ``count_skip``; to no tunnel port: unlisted)
    skipped_seen: dict = field(default_factory=dict)

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
        if self.min_ts_ns is None or self.max_ts_ns is None:
            return 0
        return self.max_ts_ns - self.min_ts_ns

    def as_dict(self) -> dict:
        return {
            "path": self.path,
            **{a: self.digests.get(a) for a in DIGESTS},
            "frames_read": self.frames_read,
            "bytes": self.bytes_read,
            "frames_replayed": self.frames_replayed,
            "skipped": dict(sorted(self.skipped.items())),
            "classes": dict(sorted(self.classes.items())),
            "duration_ns": self.duration_ns,
            "resegmented_frames": self.resegmented_frames,
            "segments_created": self.segments_created,
            "segments_above_mtu": self.above_mtu.segments,
            "largest_segment_above_mtu": self.above_mtu.largest,
            "oversize_not_split": dict(sorted(self.oversize_not_split.items())),
            "filtered": dict(sorted(self.filtered.items())),
            **({"selected_frames": self.selected_frames} if self.selected_frames is not None else {}),
            "tunnel_ports_not_configured": _by_port(self.tunnel_ports_not_configured),
            "tunnel_ports_detected": _by_port(self.tunnel_ports_detected),
            "notes": list(self.notes),
            "interfaces": list(self.interfaces),
            "outer_udp_csum_bad": self.outer_csum_bad,
            "caplen_over_orig_len": self.caplen_over_orig_len,
            "frames_over_eth_frame_len": self.frames_over_eth_frame_len,
            "frames_fcs_stripped": self.frames_fcs_stripped,
            "frames_fcs_cut": self.frames_fcs_cut,
            "frames_past_datagram": {str(k): n for k, n in sorted(self.frames_past_datagram.items())},
            "tunnel_both_ways": list(self.tunnel_both_ways),
            "fragments_to_tunnel": self.fragments_to_tunnel,
            "caplen_over_snaplen": [dict(e) for e in self.caplen_over_snaplen],
            "skipped_to_tunnel_ports": to_tunnel_ports(self),
            "skipped_unread": unread(self),
        }


def _by_port(d: dict) -> dict:
    """kind → port → frames with the ports as JSON object keys (text), sorted."""
    return {kind: {str(p): n for p, n in sorted(ports.items())} for kind, ports in sorted(d.items())}


class TunnelScanError(CaptureError):
    """``detect_tunnel_ports`` on an input that cannot be read twice (a pipe; ``replay_capture`` reads a copy)."""


def detect_tunnel_ports(
    path: str, config: ReplayConfig, name: str | None = None
) -> dict[str, dict[int, int]]:
    """First read of ``path`` for ``config.detect_tunnels``: kind → UDP destination port → frames whose payload
    parses as that tunnel (``packet.decode.sniff_tunnel``) on ports without a socket of either kind. ``name``
    (default ``path``) names the capture in errors: sim/api.py ``replay_capture`` passes a stream's copy
    (capture/spool.py ``spooled``) named as the stream.

    Raises: TunnelScanError when ``path`` is not a regular file (a pipe is read once); CaptureError, also when a
    port carries frames of both kinds (which one the receiver's socket is, only the user knows).
    """
    if path == STDIN_PATH or (os.path.exists(path) and not is_regular_file(path)):
        raise TunnelScanError(
            f"{name or path}: --vxlan-port/--geneve-port auto reads the capture twice and a pipe can be read "
            "once: name the port (the report lists ports that carry tunnel traffic)"
        )
    dec = Decoder(config.vxlan_ports, config.geneve_ports)
    with open_capture(path, name=name) as cap:
        buf: bytes | None  # l2_normalize gives None for a frame it cannot convert
        for _ts, buf, orig_len, linktype in cap:
            if len(buf) < orig_len:
                continue
            if linktype != DLT_EN10MB:
                buf = None if sent_by_host(buf, linktype) else l2_normalize(buf, linktype)
                if buf is None:
                    continue
            dec.decode(buf)
    found = {k: dict(v) for k, v in dec.unconfigured.items() if k in config.detect_tunnels}
    both = sorted(set(found.get("vxlan", {})) & set(found.get("geneve", {})))
    if both:
        # a receiver binds a UDP port to one tunnel kind (one socket: vxlan_sock_add, geneve_sock_add): which
        # one is the user's to say, not the frames'
        raise CaptureError(
            f"{name or path}: --vxlan-port/--geneve-port auto: {_both_kinds(found, both)}{_defaults_go(config)}"
        )
    return found


def _defaults_go(config: ReplayConfig) -> str:
    """What the advice of a port carrying both tunnel kinds leaves out when a kind's ports are the defaults: a port
    given replaces them (the CLI's --vxlan-port/--geneve-port), so a default port the capture uses must be given
    too, or the next run detects it; "" when neither kind's ports are the defaults."""
    defaults = {f.name: f.default for f in fields(ReplayConfig) if f.name in ("vxlan_ports", "geneve_ports")}
    kept = [
        f"{kind} {', '.join(map(str, ports))}"
        for kind, key in (("VXLAN", "vxlan_ports"), ("Geneve", "geneve_ports"))
        if (ports := getattr(config, key)) == defaults[key]
    ]
    if not kept:
        return ""
    return (
        f" (a port given replaces the default ports, {' and '.join(kept)}: give those the capture uses too)"
    )


def _both_kinds(found: dict[str, dict[int, int]], both: list[int]) -> str:
    """The clause naming every port of ``both`` that ``found`` (kind → port → frames) has frames of both tunnel
    kinds on, with those frame counts, and what to give instead."""
    n = {k: {p: f"{found[k][p]:,} {plural(found[k][p], 'frame')}" for p in both} for k in ("vxlan", "geneve")}
    if len(both) == 1:
        p = both[0]
        return (
            f"UDP port {p} carries both VXLAN ({n['vxlan'][p]}) and Geneve ({n['geneve'][p]}), and a receiver takes "
            f"a port as one of them: give it as --vxlan-port {p} or --geneve-port {p}"
        )
    each = [f"{p} (VXLAN {n['vxlan'][p]}, Geneve {n['geneve'][p]})" for p in both]
    return (
        f"UDP ports {', '.join(each[:-1])} and {each[-1]} each carry both VXLAN and Geneve, and a receiver takes a "
        f"port as one of them: give each as --vxlan-port PORT or --geneve-port PORT"
    )


class Ingest(FlowMss):
    """The record → frame stage of one replay: owns the input accounting (``input``), the decoder, the resegmenter
    and the filters; ``decoded(records)`` yields the frames to replay. ``Replayer`` extends it with the kernels.
    """

    def __init__(self, config: ReplayConfig) -> None:
        self.config = config
        self.input = InputStats()
        self.decoder = Decoder(config.vxlan_ports, config.geneve_ports)
        self._hash_cache: dict[bytes, int] = {}
        self._rx_of_flow: list[tuple[int, bool]] = []
        #: ``--flow`` (None: every flow) and, per flow id, whether it matches (filled as flows appear, before any
        #: of their frames reaches a kernel): every frame is replayed, the stats count the matching flows' skbs
        self._select = None
        self._flow_ok: list[bool] = []
        if config.flow is not None:
            from ..packet.flowsel import FlowSelector

            self._select = FlowSelector.parse(config.flow)
            self.input.selected_frames = 0
        self.reseg: Resegmenter | None = None
        #: None, or (the kernel backend's ``validate.load_capture`` sets a dict) each split super-frame's record
        #: index → (its outer IP length in bytes, whether its outer UDP checksum was the sender's partial sum): so
        #: that the input counts can be said of the frames the backend sent (``validate.account_sent``)
        self.splits: dict[int, tuple[int, bool]] | None = None
        self._flow_mss: dict[int, int] | None = None
        self._syn_mss: dict[tuple, tuple[int, int]] = {}
        self._syn_mss_key: dict[int, tuple] = {}
        if config.resegment != "off":
            mss = None if config.resegment == "auto" else int(config.resegment)
            self.reseg = Resegmenter(config.mtu, mss, config.vxlan_ports, config.geneve_ports)
            self.reseg.not_split = self.input.oversize_not_split
            self.reseg.above = self.input.above_mtu
            if mss is None:
                self._flow_mss = {}
        #: ``-f`` (None: every record)
        self._bpf = None
        if config.capture_filter is not None:
            from ..capture.bpf import BpfFilter, FilterError

            try:
                self._bpf = BpfFilter(config.capture_filter)
            except FilterError as e:
                raise ConfigError(str(e)) from None

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

    def decoded(self, records: Iterable[tuple[int, bytes, int, int]]) -> Iterator[Frame]:
        """``_decoded``, with ``-f`` (BPF on the records) applied and ``--flow`` (on the decoded flows) counted.

        A record the BPF filter rejects is read and counted (``frames_read``, ``bytes``, timestamps) and then in
        ``input.filtered["bpf"]`` instead of ``frames_replayed`` / ``classes``: never silently gone. ``--flow``
        drops nothing: every frame is replayed (the selected flows share polls, buckets and MAX_GRO_SKBS with the
        others, as in the capture) and the matching flows' frames are counted in ``input.selected_frames``.
        """
        records = self._before_records(records)
        if self._bpf is None and self._select is None:
            return self._decoded(records)
        return self._filtered(records)

    def _before_records(
        self, records: Iterable[tuple[int, bytes, int, int]]
    ) -> Iterable[tuple[int, bytes, int, int]]:
        """``records``, for a subclass to act on before each is decoded (``Replayer``: flow retirement)."""
        return records

    def _fresh_hook(self) -> Callable[[int, int], int] | None:
        """None, or ``f(fid, ts_ns) -> fid`` applied to each frame's flow id as it is decoded (``Replayer``: a
        frame whose flow had ended starts a new flow, ``Replayer.fresh_flow``)."""
        return None

    def _filtered(self, records: Iterable[tuple[int, bytes, int, int]]) -> Iterator[Frame]:
        inp = self.input
        filtered = inp.filtered
        bpf = self._bpf
        if bpf is not None:
            match = bpf.match

            def passed(recs: Iterable[tuple[int, bytes, int, int]]) -> Iterator[tuple[int, bytes, int, int]]:
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
        selected = self._selected
        for t in self._decoded(records):
            if selected(t.flow_id):
                # every frame that enters the simulation, as frames_replayed counts them: a resegmented
                # super-frame's segments (same capture index) count one each
                inp.selected_frames += 1  # type: ignore[operator]  # an int whenever a selection is set
            yield t

    def _selected(self, fid: int) -> bool:
        """Whether ``--flow`` selects flow ``fid`` (a selector is set): its key and id match (``FlowSelector.matches``),
        decided once per flow id, in order of flow ids, before any of its frames reaches a kernel (``_flow_ok``).
        A flow that starts when its key's flow ended (``Replayer.fresh_flow``) is matched as any new flow is, by its
        own key and id, whether or not the ended flow was retired by then."""
        ok = self._flow_ok
        if fid >= len(ok):
            sel = self._select
            assert sel is not None  # called only with a selector
            flows = self.decoder.flows
            while len(ok) <= fid:
                ok.append(sel.matches(flows[len(ok)], len(ok)))
        return ok[fid]

    def _decoded(self, records: Iterable[tuple[int, bytes, int, int]]) -> Iterator[Frame]:
        """Decode capture records ``(ts_ns, buf, orig_len, linktype)``; count skips; yield replayable ``Frame``s.

        Every record is counted once (``frames_read``, bytes, timestamps), then skipped (snaplen cut, link type)
        or decoded. With resegmenting on (``reseg``), a super-frame yields its segments instead (same ``ts_ns``
        and capture ``index``; resegment.py), and in ``auto`` mode the loop keeps, per tunnelled TCP flow, the
        largest TCP payload of the frames at or below the MTU and its SYN's MSS option (``_learn_mss``): the
        flow's MSS for later splits.
        """
        inp = self.input
        dec = self.decoder.decode
        flow_class = self.decoder.flow_class
        classes = inp.classes
        pair_of, pair_frames = self.decoder.pair_of, self.decoder.pair_frames
        ports = self.decoder.tunnel_ports
        rxs = self._rx_of_flow
        fresh = self._fresh_hook()
        reseg = self.reseg
        # no resegmenting: no frame is over the limit
        limit = reseg.limit if reseg is not None else sys.maxsize
        learn = self._flow_mss is not None
        flow_mss = self._mss_of_flow if learn else None
        new = tuple.__new__  # Frame(...) without NamedTuple's Python-level __new__: half its cost per frame
        buf: bytes | None  # l2_normalize gives None for a frame it cannot convert
        for ts_ns, buf, orig_len, linktype in records:
            index = inp.frames_read
            inp.frames_read = index + 1
            inp.bytes_read += len(buf)
            buf = received_frame(inp, ts_ns, buf, orig_len, linktype, ports)
            if buf is None:
                continue
            segs = None
            if len(buf) > limit and reseg is not None and reseg.oversize(buf):
                segs = reseg.split(buf, None if flow_mss is None else partial(flow_mss, ts_ns=ts_ns))
                if segs is not None:
                    self._count_split(buf, len(segs), index)
                    inp.split_at_ipv6_min_mtu = reseg.ipv6_at_min_mtu
            for wire in (buf,) if segs is None else segs:
                r = dec(wire)
                if r.__class__ is str:
                    count_skip(inp, r, wire, DLT_EN10MB, ports)
                    continue
                frame, vlan, fid, _rss, l4 = r
                if fresh is not None:
                    fid = fresh(fid, ts_ns)
                inp.frames_replayed += 1
                inp.outer_tag_depth = max(inp.outer_tag_depth, tag_depth(vlan))
                past_datagram(inp, frame)
                # by its IP header's length: a captured trailer or FCS is no part of the frame the NIC buffers
                inp.frames_over_eth_frame_len += (
                    len(frame) > ETH_FRAME_LEN and 14 + outer_ip_len(frame) > ETH_FRAME_LEN
                )
                cls = flow_class[fid]
                classes[cls] += 1
                pair_frames[pair_of[fid]] += 1
                # a segment's checksums were computed by the split (resegment.py): nothing to check or learn
                if segs is None and cls != CLS_NOT_TUNNEL:
                    if outer_udp_csum_bad(frame):
                        inp.outer_csum_bad += 1
                    # a wire frame: within the MTU (an outer IPv6 one may be longer than ``limit``: ``mtu6``)
                    if (
                        learn
                        and l4
                        and cls == CLS_TUNNEL_TCP
                        and (len(frame) <= limit or (reseg is not None and not reseg.oversize(frame)))
                    ):
                        self._learn_mss(fid, frame, l4)
                h, l4_hash = rxs[fid] if fid < len(rxs) else self._flow_rx(fid)
                yield new(Frame, (ts_ns, frame, vlan, fid, h, l4_hash, l4, index))

    def _count_split(self, buf: bytes, segments: int, index: int) -> None:
        """Count super-frame ``buf`` (record ``index``) split into ``segments`` frames (``input``: resegmented
        frames, segments created, the largest outer IP packet split, bytes; ``splits`` when kept)."""
        inp = self.input
        size = outer_ip_len(buf)
        inp.largest_split = max(inp.largest_split, size)
        # a super-frame captured before segmentation holds the sender's partial sum (CHECKSUM_PARTIAL), not a
        # checksum that does not verify: each segment gets a computed one (resegment.py), so nothing replayed
        # carries it and nothing is dropped for it
        partial = outer_udp_csum_bad(buf)
        inp.resegmented_csum_partial += partial
        inp.resegmented_frames += 1
        inp.segments_created += segments
        if self.splits is not None:
            self.splits[index] = (size, partial)
