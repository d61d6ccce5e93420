"""The kernel backend as a report, and the simulator-vs-kernel comparison (``gro-replay kernel`` / ``validate``).

The running kernel tells, per delivered skb, its device, ``skb->len`` and address (``net:netif_receive_skb``), and
per skb entering GRO its address (``net:napi_gro_receive_entry``). To show segments per skb in the same table as
the simulator, each delivery is matched to the frames it carries (oracle/match.py ``match_deliveries``): from the
first frame its address names (oracle/replay.py ``_Run._heads``), else by lengths alone. ``validate`` compares
lengths, not matched segments.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from .capture.reader import open_capture
from .kernel.model import PROFILES, KernelModel
from .kernel.release import resolve_kernel
from .oracle.match import match_deliveries
from .packet.decode import CLS_NOT_TUNNEL, Decoder, outer_udp_csum_bad
from .packet.headers import outer_udp, tcp_payload_len
from .project import plural
from .report.stats import KernelStats
from .sim import ReplayConfig, Replayer, Result
from .sim.notes import input_notes
from .sim.skipped import past_datagram

ORACLE_RX_CSUM = {
    "none": ("none", 0),
    "unnecessary": ("unnecessary", 0),
    "unnecessary-tunnel": ("unnecessary", 1),
}


def profile_for_release(release: str) -> KernelModel:
    """The newest modelled profile not newer than ``release`` (e.g. ``6.18.44-fc`` → 6.18).

    Raises: ValueError when the release cannot be parsed or predates every profile.
    """
    m = re.match(r"(\d+)\.(\d+)", release)
    if not m:
        raise ValueError(f"cannot parse kernel release {release!r}")
    have = (int(m.group(1)), int(m.group(2)))
    best = None
    for rel, model in PROFILES.items():
        v = tuple(int(x) for x in rel.split("."))
        if v <= have and (best is None or v > best[0]):
            best = (v, model)
    if best is None:
        raise ValueError(f"kernel {release} is older than every modelled profile ({', '.join(PROFILES)})")
    return best[1]


@dataclass
class LoadedCapture:
    """A capture decoded once for both backends: replayable frames ``(ts_ns, frame, …)`` and the replayer."""

    replayer: Replayer
    frames: list[tuple] = field(default_factory=list)


def load_capture(
    path: str, config: ReplayConfig, progress: Callable[[int], None] | None = None
) -> LoadedCapture:
    """Read and decode a whole capture (the kernel backend needs all frames before it starts). ``progress``: as
    ``sim.replay_capture``'s (called with the frames read every 1024 frames; bound to the open capture when it
    has ``bind_capture``).

    Raises: capture.reader.CaptureError.
    """
    from .sim.api import account_selection, counting, select_interfaces

    rep = Replayer(config)
    rep.input.path = str(path)
    rep.splits = {}  # the super-frames split, by record: the counts are said of the frames sent (account_sent)
    with open_capture(path, digest=config.digest) as cap:
        if progress is not None and hasattr(progress, "bind_capture"):
            progress.bind_capture(cap)
        # the interface the replay replays, by its rule, and its notes (-i any, pcapng of several interfaces)
        records = cap if progress is None else counting(cap, progress)
        sel, records = select_interfaces(str(path), cap, config, rep.input, records)
        frames = list(rep.decoded(records))
        rep.input.digests = {config.digest: cap.hexdigest()}  # of the bytes read: a pipe is never reopened
        account_selection(cap, sel, rep.input)
    return LoadedCapture(rep, frames)


def no_payload_frames(frames: list[tuple], tunnel_ports: dict[int, str]) -> set[int]:
    """The indices (``frames``' eighth field) of the decoded ``frames`` whose innermost TCP segment carries no TCP
    payload (ACKs, and SYN, FIN or RST without data): ``packet.headers.tcp_payload_len`` 0, the simulator's driver
    step's reading (sim/driver.py, ``SkBuff.no_payload``); ``tunnel_ports``: the decoder's (UDP port →
    ``"vxlan"``/``"geneve"``)."""
    return {f[7] for f in frames if tcp_payload_len(f[1], tunnel_ports) == 0}


class _Delivered:
    """What the backend knows of one delivered skb, shaped like an SkBuff for the report sinks."""

    __slots__ = ("len", "frames", "flow", "mixed", "addr", "cb")

    class _Cb:
        __slots__ = ("why", "no_payload")

        def __init__(self, why: str, no_payload: bool) -> None:
            self.why = why
            #: ``NapiGroCb.no_payload`` as the simulator sets it (kernel/gro.py dev_gro_receive, from the driver
            #: step's ``SkBuff.no_payload``): not read from the running kernel, whose control block the trace does
            #: not show, but known from the frames the skb carries (``kernel_result``)
            self.no_payload = no_payload

    def __init__(
        self, length: int, frames: list[int], flow: int, addr: int, why: str, no_payload: bool = False
    ) -> None:
        self.len = length
        self.frames = frames
        self.flow = flow
        #: deliveries are matched to the frames of one flow (``match_deliveries``): none carries another flow's
        self.mixed = None
        self.addr = addr
        self.cb = self._Cb(why, no_payload)


class _Dev:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


def _running_model(oracle) -> KernelModel:
    """The running kernel's model (base, backports, notes: KernelModel.describe) from its longest name
    (``OracleResult.kernel_identity``: Ubuntu's /proc/version_signature or /proc/version, whose stable release a
    Debian or Ubuntu ``uname -r`` does not say), else from ``uname -r``; a model without switches and a note when
    neither parses or the release is newer than every profile (the measured numbers stand on their own)."""
    error = None
    for text in dict.fromkeys(t for t in (oracle.kernel_identity, oracle.kernel_release) if t):
        try:
            return resolve_kernel(text)
        except ValueError as e:
            error = error or e
    return KernelModel(
        name=oracle.kernel_release,
        release=oracle.kernel_release,
        notes=(f"no model for this release: {error}",),
    )


def _forget_unobserved(ks: KernelStats) -> None:
    """Clear what the trace does not say: why each skb ended (per stage and per flow) and how many bytes software
    summed (None: not measured)."""
    for st in ks.stages.values():
        st.reasons.clear()
        st.sw_csum_bytes = None
    for f in ks.flows.values():
        for c in f.reasons.values():
            c.clear()


def account_sent(loaded: LoadedCapture, oracle, config: ReplayConfig) -> None:
    """The input's counts after the kernel backend's send (``oracle.sent``, ``oracle.unsent``), as the simulator
    counts them (sim/ingest.py), so that classes plus skipped add up to the frames read: the frames it could not
    replay skipped by reason (``kernel_backend:<reason>``) per capture record, as every skip is counted (a
    super-frame split into segments none of which was sent is one frame read skipped: ``Frame.index``); the frames
    replayed, their classes and the super-frames split (``_sent_splits``) those sent; then the notes the replay
    gives on tunnel ports and on how the capture was taken, said of the frames sent (``_sent_counts``), and the
    running kernel's missing VLAN GRO offloads where frames sent carry an inner tag (``_no_vlan_offload_note``)."""
    rep = loaded.replayer
    sent = [loaded.frames[i] for i in oracle.sent]
    decoded = rep.input.classes
    records: dict[str, set[int]] = {}
    for i, reason in oracle.unsent.items():
        records.setdefault(reason, set()).add(loaded.frames[i][7])
    for reason, indices in records.items():
        rep.input.skipped[f"kernel_backend:{reason}"] += len(indices)
    rep.input.frames_replayed = len(sent)
    rep.input.classes = Counter(rep.decoder.flow_class[f[3]] for f in sent)
    _sent_splits(rep, sent)
    unconfigured = _sent_counts(rep, sent)
    # the frames read that carry VXLAN or Geneve, on a configured port or not: sent or not
    tunnel_read = sum(n for c, n in decoded.items() if c != CLS_NOT_TUNNEL) + sum(
        n for ports in rep.decoder.unconfigured.values() for n in ports.values()
    )
    input_notes(rep.input, config, unconfigured, backend=True, tunnel_read=tunnel_read)
    if not oracle.vlan_offload:  # the kernel report and validate alike
        rep.input.notes.extend(_no_vlan_offload_note(sent, rep.decoder.flows))


def _sent_splits(rep: Replayer, sent: list[tuple]) -> None:
    """``--resegment``'s counts (``InputStats``: super-frames split, segments made, the largest outer IP packet
    split in bytes, those with the sender's partial outer checksum) of the super-frames whose segments the
    backend ``sent``, from the split records ``load_capture`` kept (``Ingest.splits``): a super-frame to a
    destination the backend does not send to is neither split nor replayed there. Left as decoded when the split
    records were not kept."""
    splits = rep.splits
    if splits is None:
        return
    segments = Counter(f[7] for f in sent if f[7] in splits)
    inp = rep.input
    inp.resegmented_frames = len(segments)
    inp.segments_created = sum(segments.values())
    inp.largest_split = max((splits[i][0] for i in segments), default=0)
    inp.resegmented_csum_partial = sum(splits[i][1] for i in segments)


def _sent_counts(rep: Replayer, sent: list[tuple]) -> dict[str, dict[int, int]]:
    """The input counts the notes read (sim/notes.py ``input_notes``), of the frames the kernel backend ``sent``
    only, not of every frame decoded (frames it could not replay were never sent: breaker's finding): the tunnel
    frames whose outer UDP checksum does not verify (``InputStats.outer_csum_bad``; a segment of a split
    super-frame has a computed one), those with bytes past their data (``InputStats.frames_past_datagram``) and the
    first fragments of datagrams to a tunnel port (``InputStats.fragments_to_tunnel``) into ``rep.input``, and,
    returned, the frames per tunnel kind and port that
    parse as that tunnel where no socket is (``Decoder.unconfigured``, by the decoder that read the capture's
    ports)."""
    flow_class = rep.decoder.flow_class
    rep.input.outer_csum_bad = sum(
        1 for f in sent if flow_class[f[3]] != CLS_NOT_TUNNEL and outer_udp_csum_bad(f[1])
    )
    rep.input.frames_past_datagram.clear()
    for f in sent:
        past_datagram(rep.input, f[1])
    ports = rep.decoder.tunnel_ports
    again = Decoder(
        tuple(p for p, k in ports.items() if k == "vxlan"),
        tuple(p for p, k in ports.items() if k == "geneve"),
    )
    for f in sent:
        if flow_class[f[3]] == CLS_NOT_TUNNEL:
            again.decode(f[1])
    rep.input.fragments_to_tunnel = again.fragments_to_tunnel
    return again.unconfigured


def kernel_result(loaded: LoadedCapture, oracle, config: ReplayConfig, on_deliver=None) -> Result:
    """Build a simulator-shaped ``Result`` from an ``OracleResult`` (backend ``kernel``): each delivery matched to
    the frames it carries (``match_deliveries``), without end reasons, and marked as carrying no TCP payload as
    the simulator marks it (``no_payload_frames``: none of its frames carries any, where
    ``ReplayConfig.gro_runs``)."""
    rep = loaded.replayer
    # one name for the running kernel: its model's, as --kernel "$(uname -rv)" names it (kernel/release.py
    # resolve_kernel: 6.18.44-fc-v1098), in the table, JSON, trace and verdict alike
    running = _running_model(oracle)
    name = running.name
    ks = KernelStats(name, running.release, on_deliver)
    sent = [loaded.frames[i] for i in oracle.sent]
    dev_ports = getattr(oracle, "tunnel_ports", {}) or {}

    def sim_name(d) -> str:
        """The simulator's name of the kernel's device (``ReplayConfig.devices``; the first VXLAN device for a
        tunnel device of no known port)."""
        if d.dev_role == "phys":
            return config.phys_dev
        port = dev_ports.get(d.dev)
        tunnels = (name for name, stage, p in config.devices() if stage == "tunnel" and p == port)
        return next(tunnels, config.vxlan_dev)

    by_dev: dict[str, list] = {}
    for d in oracle.deliveries:
        by_dev.setdefault(d.dev, []).append(d)
    tports = rep.decoder.tunnel_ports
    matched_dev = {dev: _matched(ds, sent, dev_ports.get(dev), tports) for dev, ds in by_dev.items()}
    matched: dict[str, list] = {"phys": [], "tunnel": []}
    for dev, m in matched_dev.items():
        matched[by_dev[dev][0].dev_role] += m
    cursor = dict.fromkeys(by_dev, 0)
    t0 = rep.input.first_ts_ns or 0
    first_ts = oracle.deliveries[0].ts if oracle.deliveries else 0.0
    # an skb carries no TCP payload when none of its frames does (a segment without payload is never merged:
    # tcp_gro_receive); counted as the simulator counts it (kernel/gro.py dev_gro_receive): at the phys device
    # whether GRO runs there or not, at the tunnel device where GRO runs
    empty = no_payload_frames(sent, tports)
    runs = config.gro_runs()
    phys_skbs: list[_Delivered] = []
    for n, d in enumerate(oracle.deliveries):
        i = cursor[d.dev]
        cursor[d.dev] += 1
        frames_idx, fid = matched_dev[d.dev][i]
        no_payload = (
            (d.dev_role == "phys" or runs[d.dev_role]) and bool(frames_idx) and empty.issuperset(frames_idx)
        )
        # the trace's address (hashed per boot: the same skb has the same one at both devices), else a made-up one
        addr = int(d.addr, 16) if d.addr else 0xFFFF888200000000 + (len(ks.flows) << 8) + n
        skb = _Delivered(d.len, frames_idx or [-1], fid, addr, "kernel", no_payload)
        if fid < 0:
            skb.flow = -1
        now = t0 + int((d.ts - first_ts) * 1e9)
        ks.netif_receive_skb(d.dev_role, _Dev(sim_name(d)), skb, now)
        if d.dev_role == "phys" and fid >= 0:
            phys_skbs.append(skb)
    _forget_unobserved(ks)
    at_tunnel = _stage_inputs(ks, matched, sent)
    _stack_outcomes(ks, phys_skbs, at_tunnel, sent, tports)
    account_sent(loaded, oracle, config)
    rep.input.notes.extend(_unmatched_note(matched))
    cfg = replace(config, kernels=(running,), vlan_offload=oracle.vlan_offload)
    # the flows none of whose frames the backend sent (not replayable: frames_not_replayable) are no flows of this
    # run: the running kernel never saw them, so the verdict neither counts nor judges them
    reached = {f[3] for f in sent}
    flows = [k if fid in reached else None for fid, k in enumerate(rep.decoder.flows)]
    classes = list(rep.decoder.flow_class)
    if -1 in ks.flows:
        from .packet.flowkey import UNMATCHED, FlowKey

        flows.append(FlowKey(UNMATCHED, "", 0, 0, "", 0, "", "", 0, 0, 0, False))
        classes.append("unmatched")
        ks.flows[len(flows) - 1] = ks.flows.pop(-1)
    result = Result(rep.input, cfg, [ks], flows, classes, backend="kernel")
    # the backend retires no flow: every flow it sent frames of is live at the end (JSON flows_summary.live_max)
    result.flows_live_max = len(reached)
    return result


def _matched(ds: list, sent: list, port: int | None, tports: dict) -> list[tuple[list[int], int]]:
    """One device's deliveries ``ds`` matched to the frames sent that can reach it (oracle/match.py
    ``match_deliveries``): all for the phys device, those to a tunnel device's port for it (one device per port)."""
    role = ds[0].dev_role
    at = [j for j, f in enumerate(sent) if role == "phys" or port is None or _udp_dport(f[1]) == port]
    in_cand = {j: i for i, j in enumerate(at)}  # position in sent → among the device's frames
    heads = [None if d.head is None else in_cand.get(d.head) for d in ds]
    return match_deliveries([d.len for d in ds], [sent[j] for j in at], role, tports, heads)


def _no_vlan_offload_note(sent: list, flows: list) -> list[str]:
    """The note, when the running kernel has no VLAN GRO offloads (built without CONFIG_VLAN_8021Q: no
    net/8021q/vlan_core.c ``vlan_gro_receive``) and frames it was sent carry an inner 802.1Q/802.1ad tag: GRO merges
    none of them (no handler for their protocol), where the replay models a kernel that has them; [] otherwise."""
    n = sum(1 for f in sent if flows[f[3]] is not None and flows[f[3]].inner_vlan)
    if not n:
        return []
    return [
        f"the running kernel has no VLAN GRO offloads (built without CONFIG_VLAN_8021Q: no vlan_gro_receive), so its "
        f"GRO merges none of the {n:,} {plural(n, 'frame')} whose inner frame carries a VLAN tag; a replay models "
        "a kernel that has them unless given --no-vlan-offload (validate runs the simulator without them)"
    ]


def _unmatched_note(matched: dict[str, list]) -> list[str]:
    """The note, when some skb the running kernel delivered matched no run of one flow's frames by its length
    (oracle/match.py ``match_deliveries``, per stage ``matched``): each is counted as 1 segment of the flow
    "(unmatched)", so its frames are missing from the segment counts; [] when every skb matched."""
    lost = {stage: sum(1 for _, fid in m if fid < 0) for stage, m in matched.items()}
    n, total = sum(lost.values()), sum(len(m) for m in matched.values())
    if not n:
        return []
    where = ", ".join(f"{stage} {k:,}" for stage, k in lost.items() if k)
    one = n == 1
    return [
        f"{n:,} of the {total:,} {plural(total, 'skb')} the running kernel delivered ({where}) "
        f"{'matches' if one else 'match'} no run of one flow's frames by {'its length' if one else 'their lengths'}, "
        f"from the first frame {'its' if one else 'their'} address names where the trace names one: "
        f"{'it is' if one else 'each is'} counted as 1 segment of the flow (unmatched), so the segment counts lack "
        f"the frames {'it' if one else 'they'} carried; validate compares the lengths themselves"
    ]


def _stage_inputs(ks: KernelStats, matched: dict[str, list], sent: list) -> set[int]:
    """The phys stage's inputs: every frame sent came in at the phys device as an skb of its own. Returns the
    indices of the frames a tunnel device delivered (``matched``: per role, each delivery's frame indices, the
    decoded frames' eighth field, and flow): the tunnel device's inputs are the phys skbs whose frames it
    delivered, each decapsulated phys skb queued to gro_cells as one skb however many segments it carries, counted
    where they are queued (``_stack_outcomes``, ``KernelStats.stack_outcome``), as the simulator counts them."""
    ks.stages["phys"].frames_in = len(sent)
    ks.stages["phys"].skbs_in = len(sent)
    return {i for f, _ in matched["tunnel"] if f for i in f}


def _stack_outcomes(ks: KernelStats, phys_skbs: list, at_tunnel: set[int], sent: list, tports) -> None:
    """What the running kernel's normal path did with each phys skb ``phys_skbs``, as the simulator counts it
    (per flow: ``FlowStats.stack``/``stack_frames``): ``queued`` to gro_cells where a tunnel device delivered its
    frames (``at_tunnel``: frame indices, the decoded frames' eighth field; the JSON's per-flow ``stack`` and
    explain's tunnel "skbs in" read it: they were empty and 0 for the backend); lost
    (``drop_reasons.NOT_AT_TUNNEL_DEVICE``) where its frames go to a tunnel port (``tports``, as the decoder reads
    them) and no tunnel device delivered one: the running kernel dropped it between the devices, so the verdict
    says the frames were lost, as the simulator's does for a drop it names. Other skbs (not tunnel traffic) are
    not counted: where they went is not observed."""
    from .kernel.drop_reasons import NOT_AT_TUNNEL_DEVICE

    wire = {f[7]: f[1] for f in sent}  # the frames sent by index (not by position: some may not be)
    for skb in phys_skbs:
        idx = skb.frames
        if at_tunnel.intersection(idx):
            ks.stack_outcome(skb, "queued", 0)
        elif all(_udp_dport(wire[i]) in tports for i in idx):
            ks.stack_outcome(skb, NOT_AT_TUNNEL_DEVICE, 0)


@dataclass
class DeviceAgreement:
    """Per device: delivered lengths from both backends, how many match position by position, first divergence.

    ``stage`` is ``"phys"`` or ``"tunnel"``; ``port`` the tunnel device's UDP port (None for phys): each tunnel
    port has a device of its own in both backends, so each is compared on its own (the order in which two
    devices' gro_cells deliver within one softirq round is not compared).
    """

    stage: str
    kernel: list[int]
    sim: list[int]
    sim_frames: list[list[int]]
    kernel_frames: list[list[int]]
    port: int | None = None

    @property
    def matching(self) -> int:
        n = 0
        for a, b in zip(self.kernel, self.sim, strict=False):
            if a != b:
                break
            n += 1
        return n

    @property
    def total(self) -> int:
        return max(len(self.kernel), len(self.sim))

    @property
    def agrees(self) -> bool:
        return self.kernel == self.sim

    def first_divergence(self) -> dict | None:
        if self.agrees:
            return None
        i = self.matching
        return {
            "index": i,
            "kernel_len": self.kernel[i] if i < len(self.kernel) else None,
            "sim_len": self.sim[i] if i < len(self.sim) else None,
            "sim_frames": [f + 1 for f in self.sim_frames[i]] if i < len(self.sim_frames) else [],
            "kernel_frames": [f + 1 for f in self.kernel_frames[i] if f >= 0]
            if i < len(self.kernel_frames)
            else [],
        }

    def as_dict(self) -> dict:
        return {
            "stage": self.stage,
            "port": self.port,
            "matching": self.matching,
            "total": self.total,
            "agrees": self.agrees,
            "first_divergence": self.first_divergence(),
        }


def _udp_dport(frame: bytes) -> int | None:
    """The outer UDP destination port of an untagged Ethernet frame (packet/headers.py ``outer_udp``), else None."""
    u = outer_udp(frame)
    return None if u is None else (frame[u + 2] << 8) | frame[u + 3]


def compare(loaded: LoadedCapture, oracle, sim_config: ReplayConfig) -> list[DeviceAgreement]:
    """Run the simulator on exactly the frames the kernel received and compare per device.

    Returns the phys device first, then one agreement per tunnel port: the simulator's first VXLAN port first
    (so ``[0]`` is phys and ``[1]`` the first tunnel device), then the other ports either backend has a tunnel
    device on, in the simulator's order, then the kernel's.
    """
    sent = [loaded.frames[i] for i in oracle.sent]
    seq: dict = {}

    def collect(_k, stage, dev, skb, _now):
        seq.setdefault((stage, dev), []).append((skb.len, list(skb.frames)))  # dev: the device name

    rep = Replayer(sim_config, collect)
    rep.run_polls(iter(sent))
    rep.finish()
    sim_ports = {sk.dev.name: port for port, sk in rep.kernels[0].udp_tunnel_sockets.items()}
    kernel_ports = dict(getattr(oracle, "tunnel_ports", {}) or {})
    ports = list(sim_config.vxlan_ports[:1])
    delivered_sim = {sim_ports[name] for (stage, name) in seq if stage == "tunnel"}
    for p in [*sim_config.vxlan_ports, *sim_config.geneve_ports, *kernel_ports.values()]:
        if p not in ports and (p in kernel_ports.values() or p in delivered_sim):
            ports.append(p)
    ports_tunnel = rep.decoder.tunnel_ports
    out = []
    klens = [d.len for d in oracle.deliveries if d.dev_role == "phys"]
    kframes = [f for f, _ in match_deliveries(klens, sent, "phys", ports_tunnel)]
    phys = [x for (stage, _name), got in seq.items() if stage == "phys" for x in got]  # one phys device
    out.append(DeviceAgreement("phys", klens, [x[0] for x in phys], [x[1] for x in phys], kframes))
    for port in ports:
        on_port = [f for f in sent if _udp_dport(f[1]) == port]
        klens = [
            d.len
            for d in oracle.deliveries
            if d.dev_role == "tunnel"
            and kernel_ports.get(d.dev, ports[0] if not kernel_ports else None) == port
        ]
        kframes = [f for f, _ in match_deliveries(klens, on_port, "tunnel", ports_tunnel)]
        sim = [x for name, p in sim_ports.items() if p == port for x in seq.get(("tunnel", name), [])]
        out.append(
            DeviceAgreement("tunnel", klens, [x[0] for x in sim], [x[1] for x in sim], kframes, port=port)
        )
    return out
