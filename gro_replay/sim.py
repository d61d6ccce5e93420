"""Pipeline wiring: one read of the frames → NIC model → poll model → every kernel model's two GRO stages.

The one-shot API is ``replay_capture(path, config)`` / ``replay_frames(frames, config)`` returning a ``Result``
(DPDK's ``rte_gro_reassemble_burst`` tier); the stateful tier is ``kernel.Kernel`` itself. Each kernel model
gets its own skb per frame (GRO mutates skbs) built from the same decoded bytes.
"""

from __future__ import annotations

import hashlib
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from .capture.reader import DLT_EN10MB, l2_normalize, open_capture
from .kernel.kernel import Kernel
from .kernel.model import K_5_11, K_5_12, KernelModel
from .kernel.nic import DEFAULT_RSS_KEY, RX_CSUM_PROFILES, toeplitz_hash
from .kernel.skbuff import CHECKSUM_COMPLETE, CHECKSUM_NONE, CHECKSUM_PARTIAL, SkBuff
from .packet.csum import csum_partial
from .packet.decode import SKIP_LINKTYPE, SKIP_SNAPLEN, SKIP_TRUNCATED_RECORD, Decoder
from .report.stats import KernelStats


class ConfigError(ValueError):
    """A configuration value that cannot be used (one-line message)."""


@dataclass(frozen=True)
class PollModel:
    """Which frames share a driver poll.

    ``budget``: capture order, ``weight`` frames per poll. ``gap``: a new poll when the inter-arrival gap exceeds
    ``usecs`` µs (at most ``weight``). ``rx-usecs``: interrupt moderation — a poll starts ``usecs`` µs after the
    first pending frame and takes what has arrived (at most ``weight``), repeating at once after a full poll.
    """

    kind: str = "budget"
    usecs: float = 0.0

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
            if us >= 0:
                return cls(kind, us)
        raise ConfigError(f"invalid poll model {text!r}: use budget, gap:US or rx-usecs:US")

    def __str__(self) -> str:
        return self.kind if self.kind == "budget" else f"{self.kind}:{self.usecs:g}"


@dataclass
class ReplayConfig:
    """Everything a replay needs besides the frames. Units: ns for times, bytes for sizes."""

    kernels: tuple[KernelModel, ...] = (K_5_11, K_5_12)
    rx_csum: str = "unnecessary"
    poll: PollModel = field(default_factory=PollModel)
    weight: int = 64
    hz: int = 250
    rss: str = "toeplitz"
    rss_key: bytes = DEFAULT_RSS_KEY
    vxlan_ports: tuple[int, ...] = (4789, 8472)
    geneve_ports: tuple[int, ...] = (6081,)
    phys_dev: str = "eth0"
    vxlan_dev: str = "vxlan0"
    geneve_dev: str = "geneve0"
    tunnel_metadata: bool = True
    gro_normal_batch: int = 8
    gro_max_size: int = 65536
    gro_flush_timeout_ns: int = 0
    napi_defer_hard_irqs: int = 0

    def validate(self) -> None:
        """Raises ConfigError naming the bad value."""
        if self.rx_csum not in RX_CSUM_PROFILES:
            raise ConfigError(
                f"unknown --rx-csum {self.rx_csum!r}; choose from {', '.join(RX_CSUM_PROFILES)}"
            )
        if self.rss not in ("toeplitz", "none"):
            raise ConfigError(f"unknown --rss {self.rss!r}; choose toeplitz or none")
        if not 1 <= self.weight <= 64:
            raise ConfigError("NAPI weight must be 1..64")
        if self.hz <= 0:
            raise ConfigError("--hz must be positive")
        overlap = set(self.vxlan_ports) & set(self.geneve_ports)
        if overlap:
            raise ConfigError(f"port {min(overlap)} given as both VXLAN and Geneve")

    def as_dict(self) -> dict:
        return {
            "kernels": [{"name": m.name, "release": m.release} for m in self.kernels],
            "nic": {"rx_csum": self.rx_csum, "rss": self.rss, "rss_key": self.rss_key.hex()},
            "poll": str(self.poll),
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
            "devices": {"phys": self.phys_dev, "vxlan": self.vxlan_dev, "geneve": self.geneve_dev},
            "tunnel_metadata": self.tunnel_metadata,
        }


@dataclass
class InputStats:
    """What was read: frames, bytes, skips by reason, frame classes; ``path``/``sha256`` for capture files."""

    path: str | None = None
    sha256: str | None = None
    frames_read: int = 0
    bytes_read: int = 0
    frames_replayed: int = 0
    skipped: Counter = field(default_factory=Counter)
    classes: Counter = field(default_factory=Counter)
    first_ts_ns: int | None = None
    last_ts_ns: int | None = None

    def as_dict(self) -> dict:
        return {
            "path": self.path,
            "sha256": self.sha256,
            "frames_read": self.frames_read,
            "bytes": self.bytes_read,
            "frames_replayed": self.frames_replayed,
            "skipped": dict(sorted(self.skipped.items())),
            "classes": dict(sorted(self.classes.items())),
            "duration_ns": (self.last_ts_ns - self.first_ts_ns) if self.first_ts_ns is not None else 0,
        }


@dataclass
class Result:
    """The outcome of one replay: input accounting, the config, and one ``KernelStats`` per kernel model."""

    input: InputStats
    config: ReplayConfig
    kernels: list[KernelStats]
    flows: list
    flow_classes: list[str]


# -- poll models -----------------------------------------------------------------------------------------------------
def iter_polls(frames: Iterable, poll: PollModel, weight: int) -> Iterator[tuple[int, list]]:
    """Group decoded frames (tuples whose element 0 is ``ts_ns``) into polls ``(poll_time_ns, frames)``.

    Streams: holds at most one poll's worth of frames (plus, for rx-usecs, the frames that arrived meanwhile).
    """
    if poll.kind == "budget":
        batch: list = []
        for f in frames:
            batch.append(f)
            if len(batch) == weight:
                yield f[0], batch
                batch = []
        if batch:
            yield batch[-1][0], batch
    elif poll.kind == "gap":
        limit = int(poll.usecs * 1000)
        batch = []
        prev = None
        for f in frames:
            if batch and (len(batch) == weight or f[0] - prev > limit):
                yield prev, batch
                batch = []
            batch.append(f)
            prev = f[0]
        if batch:
            yield prev, batch
    else:
        delay = int(poll.usecs * 1000)
        pending: deque = deque()
        poll_at = None
        for f in frames:
            while poll_at is not None and f[0] > poll_at:
                take = [pending.popleft() for _ in range(min(weight, len(pending)))]
                yield poll_at, take
                if not pending:
                    poll_at = None
                elif len(take) < weight:
                    poll_at = pending[0][0] + delay
            pending.append(f)
            if poll_at is None:
                poll_at = f[0] + delay
        while pending:
            take = [pending.popleft() for _ in range(min(weight, len(pending)))]
            yield poll_at, take
            if pending and len(take) < weight:
                poll_at = pending[0][0] + delay


# -- the run ----------------------------------------------------------------------------------------------------------
class Replayer:
    """Owns the decoder, the kernels and their stats for one run; ``feed`` frames, then ``finish``."""

    def __init__(self, config: ReplayConfig, on_deliver: Callable | None = None) -> None:
        config.validate()
        self.config = config
        self.input = InputStats()
        self.decoder = Decoder(config.vxlan_ports, config.geneve_ports)
        self.profile = RX_CSUM_PROFILES[config.rx_csum]
        self._hash_cache: dict[bytes, int] = {}
        self.stats: list[KernelStats] = []
        self.kernels: list[Kernel] = []
        for m in config.kernels:
            st = KernelStats(m.name, m.release, on_deliver)
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
                gro_max_size=config.gro_max_size,
                sink=st,
            )
            k.phys.gro_flush_timeout = config.gro_flush_timeout_ns
            k.phys.napi_defer_hard_irqs = config.napi_defer_hard_irqs
            k.phys_napi.weight = config.weight
            self.stats.append(st)
            self.kernels.append(k)
        self._timers = [0] * len(self.kernels)
        if on_deliver is not None and hasattr(on_deliver, "bind"):
            on_deliver.bind(self.input)

    def _rss(self, data: bytes) -> int:
        if self.config.rss == "none" or not data:
            return 0
        h = self._hash_cache.get(data)
        if h is None:
            h = self._hash_cache[data] = toeplitz_hash(self.config.rss_key, data)
        return h

    def decoded(self, records: Iterable[tuple[int, bytes, int, int]]) -> Iterator[tuple]:
        """Decode capture records ``(ts_ns, buf, orig_len, linktype)``; count skips; yield replayable frames.

        Yields ``(ts_ns, frame, vlan_tci, flow_id, hash, l4_hash, l4_start, index)``.
        """
        inp = self.input
        dec = self.decoder.decode
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
            r = dec(buf)
            if isinstance(r, str):
                inp.skipped[r] += 1
                continue
            frame, vlan, fid, rss, l4 = r
            inp.frames_replayed += 1
            inp.classes[self.decoder.flow_class[fid]] += 1
            yield ts_ns, frame, vlan, fid, self._rss(rss), len(rss) in (12, 36), l4, index

    def _skb(self, k: Kernel, f: tuple, complete_sum: int | None) -> SkBuff:
        ts_ns, frame, vlan, fid, h, l4_hash, l4, index = f
        skb = SkBuff(frame, 0, ts_ns, index, fid)
        skb.data = 14
        skb.len = len(frame) - 14
        skb.protocol = (frame[12] << 8) | frame[13]
        skb.dev = k.phys
        skb.hash = h
        skb.l4_hash = l4_hash
        skb.vlan_tci = vlan
        skb.addr = 0xFFFF888100000000 + (index << 8)
        prof = self.profile
        if prof.ip_summed == CHECKSUM_PARTIAL:
            if l4:
                skb.ip_summed = CHECKSUM_PARTIAL
                skb.csum_start = l4
        elif prof.ip_summed == CHECKSUM_COMPLETE:
            skb.ip_summed = CHECKSUM_COMPLETE
            skb.csum = complete_sum
        else:
            skb.ip_summed = prof.ip_summed
            skb.csum_level = prof.csum_level
        if skb.ip_summed == CHECKSUM_NONE:
            skb.csum_level = 0
        return skb

    def run_polls(self, frames: Iterable[tuple]) -> None:
        """Run every poll of ``frames`` through every kernel (one read feeds all models)."""
        complete = self.profile.ip_summed == CHECKSUM_COMPLETE
        for poll_time, batch in iter_polls(frames, self.config.poll, self.config.weight):
            sums = [csum_partial(f[1], 14) for f in batch] if complete else None
            for i, k in enumerate(self.kernels):
                t = self._timers[i]
                if t and t < poll_time:
                    k.flush_timer(t)
                skbs = [self._skb(k, f, sums[j] if sums else None) for j, f in enumerate(batch)]
                phys = self.stats[i].stages["phys"]
                phys.frames_in += len(skbs)
                phys.skbs_in += len(skbs)
                timeout = k.net_rx_action(skbs, poll_time)
                self._timers[i] = poll_time + timeout if timeout else 0

    def finish(self) -> None:
        """Fire pending flush timers so that nothing stays held, and collect the tunnel stage's input counts."""
        for i, k in enumerate(self.kernels):
            if self._timers[i]:
                k.flush_timer(self._timers[i])
                self._timers[i] = 0
            st = self.stats[i]
            st.stages["phys"].sw_csum_bytes += k.phys_napi.stats.sw_csum_bytes
            st.stages["phys"].results.update(k.phys_napi.stats.results)
            tun = st.stages["tunnel"]
            for cells in k.tunnel_cells:
                tun.sw_csum_bytes += cells.napi.stats.sw_csum_bytes
                tun.results.update(cells.napi.stats.results)
            st.stack["gro_cells_receive:backlog_full"] += sum(c.dropped for c in k.tunnel_cells)
            if not st.stack["gro_cells_receive:backlog_full"]:
                del st.stack["gro_cells_receive:backlog_full"]

    def result(self) -> Result:
        return Result(self.input, self.config, self.stats, self.decoder.flows, self.decoder.flow_class)


def replay_capture(
    path: str, config: ReplayConfig, on_deliver: Callable | None = None, progress=None
) -> Result:
    """Replay a capture file through every kernel model in ``config``.

    Args: path: pcap/pcapng (optionally gzip); config: models and NIC/poll settings; on_deliver: observer of
    every ``netif_receive_skb`` (kernel name, stage, device, skb, ns); progress: called with the frame count.
    Raises: capture.reader.CaptureError (unreadable input), ConfigError.
    """
    rep = Replayer(config, on_deliver)
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    rep.input.path = str(path)
    rep.input.sha256 = digest.hexdigest()
    with open_capture(path) as cap:
        records = cap if progress is None else _counting(cap, progress)
        rep.run_polls(rep.decoded(records))
        if cap.truncated_records:
            rep.input.frames_read += cap.truncated_records
            rep.input.skipped[SKIP_TRUNCATED_RECORD] += cap.truncated_records
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
