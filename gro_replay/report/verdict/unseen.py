"""What the verdict says where the zero-checksum gate's refusals cannot be seen: the kernel backend (validate.py)
on a running kernel without 89e5c58fc1e2. Its trace (net:netif_receive_skb) gives each delivered skb's device and
length, not why GRO ended it (kernel-oracle.md), so the refusals that decide whether such a kernel is affected are
not known; the verdict's outcome is then ``not_observed``.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from ...project import plural
from .facts import KernelFacts, ReplayResult

if TYPE_CHECKING:
    from ...sim.config import ReplayConfig


def refusals_unseen(
    reasons_observed: bool, zero: int, kernels: list[KernelFacts], config: ReplayConfig
) -> bool:
    """Whether the refusals that decide ``affected`` cannot be known: no end reasons recorded (``reasons_observed``
    False: the kernel backend), a kernel of ``kernels`` without the fix (or whose lack is assumed), GRO running on
    the phys device (``ReplayConfig.gro_runs``: else no frame reaches the gate), and ``zero`` > 0 tunnelled flows
    with outer UDP checksum 0, which its udp_gro_receive refuses when the NIC did not validate them (gro-spec §4.4).
    udp4_gro_receive validates a checksum that is set, so without zero checksums the rule judges."""
    return (
        not reasons_observed
        and bool(zero)
        and any(k.carries_fix is False for k in kernels)
        and config.gro_runs()["phys"]
    )


def unseen_text(lacks: str, k: KernelFacts, zero: int, tunnel: int, result: ReplayResult) -> str:
    """The sentence of kernel ``k`` (totals), without the fix (``lacks``), whose zero-checksum refusals the kernel
    backend cannot see (outcome ``not_observed``: ``refusals_unseen``): ``zero`` of ``tunnel``
    tunnelled flows carry outer UDP checksum 0; what was measured, and the replay that applies the kernel's rules."""
    cfg = result.config
    path = result.input.path
    path = shlex.quote(path) if path not in (None, "-") else "CAPTURE"
    return (
        f"{lacks}: whether its udp_gro_receive refuses tunnelled frames for a zero UDP checksum, and so whether "
        f"it is affected, is not observable with the kernel backend (the netif_receive_skb trace gives each "
        f"skb's device and length, not why GRO ended it): {zero:,} of {tunnel:,} tunnelled "
        f"{plural(tunnel, 'flow')} {'carries' if zero == 1 else 'carry'} outer UDP checksum 0, and at the "
        f"phys device it delivered {k.skbs['phys']:,} {plural(k.skbs['phys'], 'skb')} for "
        f"the {k.frames:,} {plural(k.frames, 'frame')} of the tunnelled flows; gro-replay {path} --kernel "
        f"{shlex.quote(k.release)} {backend_replay_options(cfg)} names the frames its rules refuse (gro-replay "
        "validate checks those rules against this kernel)."
    )


def backend_replay_options(cfg: ReplayConfig) -> str:
    """The replay options (``gro-replay CAPTURE …``) that give the simulator what a kernel backend run ``cfg``
    (cli/kernel.py ``_prepare``) had: its checksum state, 64-frame polls and one RX queue always; the running
    kernel's HZ, the vxlan devices' ports in order (their names follow it), gbp, udp6zerocsumrx, the VLAN GRO
    offloads where it lacks them (``--no-vlan-offload``), GRO per device (generic XDP on the phys veth is
    ``--gro phys=off`` there: the same netif_elide_gro) and device names where they differ from the replay's
    defaults. Geneve is on 6081 in both, and both resegment ("auto")."""
    from ...sim.config import ReplayConfig

    base = ReplayConfig()
    opts = [f"--rx-csum {cfg.rx_csum}", "--poll budget", "--rss none"]
    opts += [f"--hz {cfg.hz}"] if cfg.hz != base.hz else []
    opts += [f"--vxlan-port {p}" for p in cfg.vxlan_ports] if cfg.vxlan_ports != base.vxlan_ports else []
    opts += ["--vxlan-gbp"] if cfg.vxlan_gbp else []
    opts += ["--udp6zerocsumrx"] if cfg.udp6_zero_csum_rx else []
    opts += [] if cfg.vlan_offload else ["--no-vlan-offload"]
    opts += [f"--gro {role}=off" for role, on in cfg.gro_runs().items() if not on]
    opts += [f"--phys-dev {shlex.quote(cfg.phys_dev)}"] if cfg.phys_dev != base.phys_dev else []
    opts += [f"--tunnel-dev {shlex.quote(cfg.vxlan_dev)}"] if cfg.vxlan_dev != base.vxlan_dev else []
    return " ".join(opts)
