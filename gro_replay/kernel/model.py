"""Kernel behaviour switches, one per commit that changed a decision on this receive path.

Each switch is read by exactly one ``if`` at the branch point its commit changed (STYLE.md). A profile is a
``KernelModel`` value; ``Kernel`` instances built from two profiles run side by side over one read of a capture.
Sources: gro-spec §9 timeline; v6.x rules read in torvalds/linux net/core/gro.c, include/net/gro.h,
net/ipv4/tcp_offload.c.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True, slots=True)
class KernelModel:
    """A kernel release as the set of GRO behaviours this tool models.

    Attributes are booleans named after what they switch on; each comment names the commit and release.
    """

    name: str
    release: str
    #: 89e5c58fc1e2 (v5.12-rc2): udp_gro_receive's checksum gate only refuses when uh->check != 0.
    udp_tunnel_gate_checks_uh_check: bool = False
    #: 8dc1c444df19 (v5.11): a completed GRO packet adds its segment count to napi->rx_count.
    gro_normal_counts_segs: bool = True
    #: 5eddb24901ee (v6.1): GSO (TCP, non-DODGY) skbs enter GRO with count = gso_segs instead of being flushed.
    gro_accepts_gso: bool = False
    #: 6fc2f3832d36 (v5.18): an IPv6 hop_limit difference flushes instead of splitting the flow.
    ipv6_hop_limit_flushes: bool = False
    #: 4b0ebbca3e16 (v6.10): IPv4/IPv6 flush checks (ttl, tos, DF, ID) evaluated from tcp_gro_receive via
    #: gro_receive_network_flush, flush_id removed; outer ID ignored when the outer DF is set.
    l3_flush_in_tcp: bool = False
    #: 18f25dc39990 (v5.13): a socket with a gro_receive hook always takes the tunnel path (no fraglist/L4 GRO).
    udp_tunnel_skips_l4_gro: bool = False

    def with_name(self, name: str) -> KernelModel:
        return replace(self, name=name)


K_5_11 = KernelModel(name="pre-fix", release="5.11")
K_5_12 = KernelModel(name="post-fix", release="5.12", udp_tunnel_gate_checks_uh_check=True)
K_6_18 = KernelModel(
    name="6.18",
    release="6.18",
    udp_tunnel_gate_checks_uh_check=True,
    gro_accepts_gso=True,
    ipv6_hop_limit_flushes=True,
    l3_flush_in_tcp=True,
    udp_tunnel_skips_l4_gro=True,
)

PROFILES: dict[str, KernelModel] = {"5.11": K_5_11, "5.12": K_5_12, "6.18": K_6_18}


def profile(release: str) -> KernelModel:
    """The model for a release string such as ``5.11``, ``5.12`` or ``6.18``.

    Raises: KeyError naming the known releases.
    """
    try:
        return PROFILES[release]
    except KeyError:
        raise KeyError(f"unknown kernel {release!r}; known: {', '.join(PROFILES)}") from None
