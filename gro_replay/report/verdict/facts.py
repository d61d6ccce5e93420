"""The facts the verdict reasons from: per kernel and flow (``KernelFacts``), per flow (``FlowVerdict``), the
kernels' release order and models, and the inner flows carried under several outer keys.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

from ...kernel import drop_reasons as D
from ...kernel import reasons as R
from ...kernel.model import BYTES_ONLY_SWITCHES, PROFILES, KernelModel
from ...packet.decode import FlowKey

if TYPE_CHECKING:
    from ...sim.config import ReplayConfig
    from ...sim.ingest import InputStats
    from ..stats import KernelStats

FIX = "89e5c58fc1e2"
GATE_ZERO = R.UDP_GATE_ZERO_CSUM
GATE_SET = R.UDP_GATE
STAGE_NAMES = {"phys": "the phys device", "tunnel": "the tunnel device's gro_cells"}
#: flushes that end the last held packet of a poll: not a reason a flow does not merge when others exist
_POLL_FLUSHES = (R.POLL_END, R.BUDGET_EXHAUSTED)
#: what the verdict says where it would name end reasons and the backend cannot know them: the kernel backend reads
#: ``net:netif_receive_skb`` (device, length), which does not say why GRO ended an skb (oracle/, kernel-oracle.md)
REASONS_NOT_OBSERVED = (
    "the end reasons are not observable with the kernel backend (the netif_receive_skb trace gives each skb's "
    "device and length, not why GRO ended it)"
)
#: an empty reason counter where the backend records reasons
NO_REASON_RECORDED = "no end reason recorded"
#: ``InputStats.filtered`` key → the option that filtered
_FILTER_OPTIONS = {"bpf": "-f", "flow": "--flow"}


class ReplayResult(Protocol):
    """What the verdict reads of a replay's result (sim/replayer.py ``Result``, which imports this package): the
    input accounting, the config, one ``KernelStats`` per kernel in run order, and per flow id its key (None: retired
    during the replay) and class."""

    input: InputStats
    config: ReplayConfig
    kernels: list[KernelStats]
    flows: list[FlowKey | None]
    flow_classes: list[str]


def _release_key(release: str) -> tuple:
    out = []
    for part in release.replace("-", ".").split("."):
        out.append(int(part) if part.isascii() and part.isdigit() else 0)
    return tuple(out)


def release_order(m) -> tuple[int, ...]:
    """The order of kernel model ``m`` among releases (oldest first): by the version its string names, not by its
    name — a distribution kernel by the upstream release it is built from (``vendor_base``: Debian's
    ``5.10.0-21-amd64`` built from 5.10.162 after 5.10.20), a release candidate before its release and after
    the one before (``pre_release``: 5.12-rc2 between 5.11.x and 5.12). ``(major, minor, point, rc)`` with
    point -1 for a release candidate, else rc 0."""
    rc = re.fullmatch(r"(\d+)\.(\d+)-rc(\d+)", getattr(m, "pre_release", "") or "", re.ASCII)
    if rc is not None:
        return (int(rc[1]), int(rc[2]), -1, int(rc[3]))
    key = _release_key(getattr(m, "vendor_base", "") or m.release)
    return (*(key + (0, 0, 0))[:3], 0)


#: the name a counterfactual kernel takes: NAME + this (``fix_counterfactuals``)
COUNTERFACTUAL_SUFFIX = "+89e5c58fc1e2"


def fix_sides(models: list) -> tuple[list, list]:
    """``(without, with_fix)``: the kernel models of ``models`` (None entries skipped) lacking / carrying
    89e5c58fc1e2, each by release, oldest first. The verdict compares ``without[-1]`` with ``with_fix[0]``."""
    order = sorted((m for m in models if m is not None), key=release_order)
    return [m for m in order if not m.udp_tunnel_gate_checks_uh_check], [
        m for m in order if m.udp_tunnel_gate_checks_uh_check
    ]


def other_changes(pre: KernelModel, post: KernelModel, ignore: frozenset[str] = frozenset()) -> list[str]:
    """The behaviour switches (kernel/model.py) other than 89e5c58fc1e2's that differ between ``pre`` and ``post``,
    in ``switches()`` order, but those in ``ignore`` (the replay reads them not: kernel/nic.py ``unread_switches``)
    and those that change no count (``BYTES_ONLY_SWITCHES``)."""
    ignore = ignore | BYTES_ONLY_SWITCHES | {"udp_tunnel_gate_checks_uh_check"}
    return [s for s, v in pre.switches().items() if v != getattr(post, s) and s not in ignore]


def fix_counterfactuals(models: list, ignore: frozenset[str] = frozenset()) -> list[KernelModel]:
    """The kernels a replay runs beside ``models`` (hidden from every output but the verdict) so that what
    89e5c58fc1e2 alone changes is measured, not inferred: a kernel lacking it with the fix applied
    (``udp_tunnel_gate_checks_uh_check`` on; named NAME+89e5c58fc1e2).

    When none of ``models`` carries the fix: one for each kernel lacking it, in the order of ``models``. When
    kernels without and with it run (compare mode), and the two compared (``fix_sides``: the newest without, the
    oldest with) differ in other switches too (``other_changes``, e.g. 5.10 and 6.18): one for the kernel without
    the fix, so that the comparison does not count against or for the fix what another commit changed. Else [].
    ``ignore``: switches the replay does not read (``other_changes``)."""
    without, with_fix = fix_sides(models)
    if with_fix:
        if without and other_changes(without[-1], with_fix[0], ignore):
            return [_with_fix(without[-1])]
        return []
    lacking = {id(m) for m in without}
    return [_with_fix(m) for m in models if m is not None and id(m) in lacking]


def _with_fix(m: KernelModel) -> KernelModel:
    return replace(m, name=m.name + COUNTERFACTUAL_SUFFIX, udp_tunnel_gate_checks_uh_check=True)


def _model_of(config, name: str, release: str) -> KernelModel | None:
    for m in getattr(config, "kernels", ()):
        if getattr(m, "name", None) == name:
            return m
    base = ".".join(release.split("-")[0].split(".")[:2])
    return PROFILES.get(base)


@dataclass
class KernelFacts:
    """One kernel's facts for one flow (or summed over flows): what the verdict reasons from."""

    name: str
    release: str
    carries_fix: bool | None
    frames: int = 0
    skbs: dict = field(default_factory=lambda: {"phys": 0, "tunnel": 0})
    gate_zero: dict = field(default_factory=lambda: {"phys": 0, "tunnel": 0})
    gate_set: dict = field(default_factory=lambda: {"phys": 0, "tunnel": 0})
    #: frames that reached the gate with a UDP checksum of 0, and of them those unvalidated, GRO already flushing
    #: them (``FlowStats.gate_reached``, ``gate_unvalidated``; the kernel backend observes neither)
    gate_reached: dict = field(default_factory=lambda: {"phys": 0, "tunnel": 0})
    gate_unvalidated: dict = field(default_factory=lambda: {"phys": 0, "tunnel": 0})
    #: frames the gate refused, each once (a nested tunnel's at both stages): per flow its larger stage count
    refused: int = 0
    lost: Counter = field(default_factory=Counter)  # frames by drop reason
    lost_skbs: Counter = field(default_factory=Counter)  # the skbs they were in: what the drop counters count
    phys_reasons: Counter = field(default_factory=Counter)
    tunnel_reasons: Counter = field(default_factory=Counter)
    tunnel_segs: int = 0  # segments the tunnel stage handed up
    #: phys skbs delivered without TCP payload (``FlowStats.empty``)
    phys_empty: int = 0
    #: phys skbs ended by an IP ID condition, by (header, step, segments held)
    id_steps: Counter = field(default_factory=Counter)
    #: skbs started beside a held skb of the same flow, by (stage, reasons.SPLIT_*)
    splits: Counter = field(default_factory=Counter)

    @property
    def lost_frames(self) -> int:
        return sum(self.lost.values())

    @property
    def without_payload(self) -> bool:
        """Every phys skb of the flow (at least one) carried no TCP payload (``phys_empty``: ACKs, and SYN, FIN or
        RST without data), which tcp_gro_receive merges in no kernel (net/ipv4/tcp_offload.c), whatever stops GRO
        before it, GRO off on the phys device included (dev_gro_receive counts every frame): the flow's frames all
        carry none (breaker44: read at the tunnel device instead, a flow whose data was dropped at decapsulation
        read as one without payload). Read from each skb's frames by their IP headers' lengths
        (``packet.headers.tcp_payload_len``), by both backends: the driver step (sim/driver.py) and the kernel
        backend (validate.kernel_result)."""
        return bool(self.phys_empty) and self.phys_empty == self.skbs["phys"]

    def refused_at(self) -> str | None:
        """Of one flow's facts: the first stage whose zero-checksum gate refused its frames — ``"phys"`` (the outer
        header; a nested tunnel's frames may be refused again at the tunnel device), ``"tunnel"`` (only at the
        tunnel device's gro_cells: a tunnel inside the tunnel) — or None. Read from ``gate_zero`` (JSON
        ``gate_refusals_zero_csum``); where a refusal costs aggregation is ``FlowVerdict.costly_at``."""
        if self.gate_zero["phys"]:
            return "phys"
        return "tunnel" if self.gate_zero["tunnel"] else None

    def as_dict(self) -> dict:
        return {
            "kernel": self.name,
            "release": self.release,
            "carries_fix": self.carries_fix,
            "frames": self.frames,
            "phys_skbs": self.skbs["phys"],
            "tunnel_skbs": self.skbs["tunnel"],
            "gate_refusals_zero_csum": dict(self.gate_zero),
            "gate_refusals_csum_set": dict(self.gate_set),
            "gate_unvalidated_zero_csum": dict(self.gate_unvalidated),
            "gate_reached_zero_csum": dict(self.gate_reached),
            "lost_frames": self.lost_frames,
            "lost": dict(sorted(self.lost.items())),
        }


def carries_tunnel(key: FlowKey, config) -> bool:
    """Whether the flow of ``key`` carries a tunnel inside the tunnel: its inner packet is UDP to a port on which
    the run opened a tunnel socket (``config``'s ``vxlan_ports`` and ``geneve_ports``, those --vxlan-port auto
    detected included), so the decapsulated frame meets udp_gro_receive again with a tunnel socket."""
    if not key.tunnel or key.inner_proto != 17:
        return False
    ports = (*getattr(config, "vxlan_ports", ()), *getattr(config, "geneve_ports", ()))
    return key.inner_dport in ports


_GATE_SEEN = ("gate_reached", "gate_unvalidated")  # FlowStats' (validate.py's deliveries have neither)


def facts_of(name: str, release: str, model, f) -> KernelFacts:
    """One kernel's ``KernelFacts`` for one flow from its ``FlowStats`` ``f`` (None: the kernel saw none of it)."""
    kf = KernelFacts(name, release, model.udp_tunnel_gate_checks_uh_check if model else None)
    if f is None:
        return kf
    kf.frames = f.segs["phys"]
    for s in ("phys", "tunnel"):
        kf.skbs[s] = f.skbs[s]
        kf.gate_zero[s] = f.reasons[s][GATE_ZERO]
        kf.gate_set[s] = f.reasons[s][GATE_SET]
        kf.gate_reached[s], kf.gate_unvalidated[s] = (getattr(f, a, {}).get(s, 0) for a in _GATE_SEEN)
    kf.refused = max(kf.gate_zero.values())
    frames_by = getattr(f, "stack_frames", None) or f.stack
    for outcome, n in frames_by.items():
        # traffic that is no tunnel's goes to its own protocol or port, which the replay does not follow: not lost
        if outcome != "queued" and outcome not in D.NOT_TUNNEL_TRAFFIC and n:
            kf.lost[outcome] += n
            kf.lost_skbs[outcome] += f.stack[outcome]
    kf.phys_reasons, kf.tunnel_reasons = Counter(f.reasons["phys"]), Counter(f.reasons["tunnel"])
    kf.tunnel_segs = f.segs["tunnel"]
    kf.phys_empty = getattr(f, "empty", {}).get("phys", 0)
    steps = getattr(f, "id_steps", None)
    if steps:
        kf.id_steps = Counter(steps["phys"])
    splits = getattr(f, "splits", None)
    if splits:
        kf.splits = Counter({(s, why): n for s, c in splits.items() for why, n in c.items()})
    return kf


@dataclass
class FlowVerdict:
    """The verdict for one flow: ``outcome`` is ``affected``, ``lost``, ``refused_no_gain``, ``not_affected`` or
    ``not_tunnel``; ``pre``/``post``: the facts of the kernel without / with the fix that were compared (None
    when that side did not run); ``kernels``: every kernel's facts; ``nested``: the flow carries a tunnel inside
    the tunnel (``carries_tunnel``)."""

    fid: int
    key: FlowKey
    cls: str
    outcome: str
    kernels: list[KernelFacts]
    pre: KernelFacts | None
    post: KernelFacts | None
    why: str = ""
    nested: bool = False
    #: the counterfactual kernels' facts by the name of the kernel each stands for (``fix_counterfactuals``: each
    #: kernel without the fix, with it applied, run beside it when no kernel with the fix ran)
    shadows: dict = field(default_factory=dict)

    @property
    def affected(self) -> bool:
        return self.outcome == "affected"

    @property
    def gate_zero(self) -> int:
        """Frames refused by the zero-checksum gate in the kernel without the fix: at the phys device, or at the
        tunnel device (a nested tunnel's frames can be refused at both: counted once)."""
        return self.pre.refused if self.pre else 0

    def costly(self, k: KernelFacts) -> dict[str, int]:
        """Of kernel ``k``'s zero-checksum refusals of this flow (``k.gate_zero``), per stage, those that cost
        aggregation a kernel with the fix gives back: what the single-kernel verdict infers of the fixed kernel,
        as compare mode measures it. Every refusal, except at the phys device for a flow that carries a tunnel
        inside the tunnel (``nested``): after the fix udp_gro_receive passes its outer header and stops at the
        nested one (NAPI_GRO_CB(skb)->encap_mark already set, gro-spec §4.4/§4.5), so its phys device merges it
        in no kernel; the nested header's refusal at the tunnel device's gro_cells does cost (§6.1, §4.7 row 3).
        Nor does a refusal cost anything where no kernel merges what was refused: at the phys device a flow whose
        inner packets are not TCP segments (``cls`` other than tunnel_tcp: an inner fragment or another protocol
        flushes in inet_gro_receive, an inner UDP datagram without a tunnel socket in udp_gro_receive, §3.1,
        §4.4), and at either stage a flow of one frame (nothing to merge it with).
        Where the replay ran ``k``'s counterfactual (``shadows``), what the fix gives back is measured instead, as
        compare mode measures it: a stage's refusals cost where the counterfactual delivers fewer skbs there (a
        refusal at one stage whose gain shows at the other counts where it was refused), none where it nowhere
        delivers fewer (a sequence gap, an IP header difference, a bad checksum keep the frames apart anyway)."""
        gains = self._gains(k)
        if gains is not None:
            if not any(gains.values()):
                return {"phys": 0, "tunnel": 0}
            cost = {s: k.gate_zero[s] if gains[s] else 0 for s in ("phys", "tunnel")}
            return cost if any(cost.values()) else dict(k.gate_zero)
        why = self.costless_why(k)
        if why == "one_frame":
            return {"phys": 0, "tunnel": 0}
        return {"phys": 0 if why else k.gate_zero["phys"], "tunnel": k.gate_zero["tunnel"]}

    def shadow_saved(self, k: KernelFacts) -> dict[str, int] | None:
        """Per stage, the skbs of this flow fewer that ``k``'s counterfactual (``shadows``: ``k`` with the fix
        applied) delivers than ``k``; None when the replay ran no counterfactual of ``k``."""
        s = self.shadows.get(k.name)
        if s is None:
            return None
        return {st: max(k.skbs[st] - s.skbs[st], 0) for st in ("phys", "tunnel")}

    def with_fix(self, k: KernelFacts) -> KernelFacts | None:
        """Kernel ``k`` (without the fix) with it: its counterfactual (``shadows``) where it ran, else the post-fix
        kernel compared (``post``); None where neither ran (the kernel backend)."""
        return self.shadows.get(k.name) or self.post

    def _gains(self, k: KernelFacts) -> dict[str, bool] | None:
        """Per stage, whether ``k``'s counterfactual delivers fewer skbs of this flow than ``k`` (``shadow_saved``);
        None when the replay ran no counterfactual of ``k``."""
        saved = self.shadow_saved(k)
        return None if saved is None else {st: n > 0 for st, n in saved.items()}

    def costless_why(self, k: KernelFacts) -> str | None:
        """Why kernel ``k``'s phys-device refusals of this flow cost nothing (``costly``): ``"one_frame"`` (a flow of
        one frame: nothing to merge it with, at either stage), ``"nested"`` (a tunnel inside the tunnel refused at
        the phys device only: stopped at the nested header after the fix), ``"not_tcp"`` (inner packets that are
        not TCP segments: flushed at the inner header after the fix), ``"no_payload"`` (TCP segments without payload
        only, as ``with_fix(k)`` delivers them: tcp_gro_receive merges none), ``"no_gain"`` (none of those, but
        ``k``'s counterfactual delivers no fewer skbs: measured), or None (they cost what the fix gives back)."""
        gains = self._gains(k)
        if gains is not None and any(gains.values()):
            return None
        fixed = self.with_fix(k)  # every phys skb of it carried no payload
        if fixed is not None and fixed.without_payload and (self.nested or self.cls == "tunnel_tcp"):
            # before one_frame: a lone ACK is counted among the flows without payload (audit44)
            return "no_payload"
        if k.frames < 2:
            return "one_frame"
        if self.nested:
            if not k.gate_zero["tunnel"]:  # refused at the phys device only: its outer header
                return "nested"
            # refused at the tunnel device too: the nested tunnel's packets there decide, measured (no_gain) or not
        elif self.cls != "tunnel_tcp":
            return "not_tcp"
        return None if gains is None else "no_gain"

    def costly_at(self, k: KernelFacts) -> str | None:
        """The first stage whose refusals in kernel ``k`` cost this flow aggregation (``costly``): ``"phys"``,
        ``"tunnel"`` or None (refused nowhere, or only where it costs nothing)."""
        cost = self.costly(k)
        return "phys" if cost["phys"] else "tunnel" if cost["tunnel"] else None

    def sides(self) -> tuple[KernelFacts, KernelFacts]:
        """``(pre, post)`` of a flow judged in a comparison. Raises: ValueError when a side did not run."""
        if self.pre is None or self.post is None:
            raise ValueError(
                f"flow {self.fid} was not compared: a kernel without or with the fix did not run"
            )
        return self.pre, self.post

    @property
    def fix_alone(self) -> KernelFacts | None:
        """In compare mode, ``pre`` run again with only 89e5c58fc1e2 applied (``shadows``, ``fix_counterfactuals``:
        where the compared kernels differ in other switches too); None when the replay ran none for ``pre``."""
        if self.pre is None or self.post is None:
            return None
        return self.shadows.get(self.pre.name)

    @property
    def fixed(self) -> KernelFacts | None:
        """What the fix's side is judged by: ``pre`` with the fix (``with_fix``: its counterfactual, the fix alone,
        where the replay ran one, else ``post``); ``post`` where no kernel without the fix ran; None where nothing
        with the fix was measured."""
        return self.with_fix(self.pre) if self.pre is not None else self.post

    def saved(self, stage: str) -> int:
        """skbs fewer that the fix alone delivers at ``stage`` (``"phys"``/``"tunnel"``) than ``pre`` (``fixed``:
        the counterfactual where the compared kernels differ in other switches too, or where no kernel with the
        fix ran); 0 for a flow that is not affected or where nothing with the fix was measured."""
        fixed = self.fixed
        if self.outcome != "affected" or not self.pre or fixed is None:
            return 0  # what the fix saves needs a kernel without it and one with it (or its counterfactual)
        return max(self.pre.skbs[stage] - fixed.skbs[stage], 0)

    def as_dict(self) -> dict:
        """explain's per-flow ``verdict`` (keys of the earlier format kept, facts added)."""
        # with the fix: the kernel with it, else the counterfactual of the one without (``fixed``); None: none ran
        pre, post = self.pre, self.post or self.fixed
        return {
            "affected": self.affected,
            "outcome": self.outcome,
            "gate_refusals_zero_csum": self.gate_zero,
            "gate_refusals_csum_set": max((sum(k.gate_set.values()) for k in self.kernels), default=0),
            "phys_skbs_pre_fix": pre.skbs["phys"] if pre else None,
            "phys_skbs_post_fix": post.skbs["phys"] if post else None,
            "stack_traversals_saved": self.saved("phys"),
            "tunnel_skbs_pre_fix": pre.skbs["tunnel"] if pre else None,
            "tunnel_skbs_post_fix": post.skbs["tunnel"] if post else None,
            "tunnel_skbs_saved": self.saved("tunnel"),
            **self._fix_alone_dict(),
            "lost_frames": max((k.lost_frames for k in self.kernels), default=0),
            "kernels": [k.as_dict() for k in self.kernels],
            "why": self.why,
        }

    def _fix_alone_dict(self) -> dict:
        """``phys_skbs_fix_alone``/``tunnel_skbs_fix_alone`` where ``fix_alone`` ran, else {}."""
        alone = self.fix_alone
        if alone is None:
            return {}
        return {"phys_skbs_fix_alone": alone.skbs["phys"], "tunnel_skbs_fix_alone": alone.skbs["tunnel"]}


def reasons_apart(reasons: Counter) -> Counter:
    """The end reasons that explain why skbs were not merged (``reasons``: end reason → skbs, as a stage's
    ``reasons`` count them): the poll-end flushes (napi_complete_done's and the budget's, net/core/dev.c) and the
    zero-checksum gate's refusal (udp_gro_receive, net/ipv4/udp_offload.c) left out unless nothing else remains —
    they end an aggregate, or are the refusal the verdict names on its own, not what keeps a flow's frames apart.
    A new Counter; the caller's is left as it is."""
    other = Counter({k: v for k, v in reasons.items() if k not in _POLL_FLUSHES and k not in (GATE_ZERO,)})
    return other or Counter(reasons)


def break_reasons(k: KernelFacts) -> Counter:
    """Why one flow's phys skbs in kernel ``k`` (``KernelFacts`` of one flow) were not merged, end reason → skbs.
    A flow none of whose frames merged (``skbs["phys"] >= frames``): every skb's end reason, so that the counts add
    up to its skbs — each names why its one frame went up without the next (the next segment's condition in
    tcp_gro_receive, or the poll's flush of a held segment nothing else joined: napi_complete_done, net/core/dev.c),
    whether or not the skb carried payload. Otherwise ``reasons_apart``: an aggregate completed at a poll's end is
    not why frames were kept apart. What every verdict sentence and flow why that names a flow's unmerged skbs
    reads."""
    if k.skbs["phys"] >= k.frames:
        return Counter({r: n for r, n in k.phys_reasons.items() if n})
    return reasons_apart(k.phys_reasons)
