"""Kernel behaviour switches, one per commit that changed a decision on this receive path.

Each switch is read by exactly one ``if`` at the branch point its commit changed (STYLE.md). A profile is a
``KernelModel`` value; ``Kernel`` instances built from two profiles run side by side over one read of a capture.
Sources: gro-spec §9 timeline; v6.x rules read in torvalds/linux net/core/gro.c, include/net/gro.h,
net/ipv4/tcp_offload.c (stored text carrying the 2025 AccECN and IP-ID series), net/core/dev.h
(``netif_set_gro_max_size``), and the netdev patch mails named below.

Version pins: a release marked [D] below was derived from merge dates (a net-next merge before the release's
merge window opened), not read in a tagged tree:

* 4e4f7cefb130 "gro: prevent ACE field corruption & better AccECN handling": merged into net-next with the
  'tcp-accecn' branch in March 2025 → v6.15 [D].
* 21f7484220ac "net: gro: only merge packets with incrementing or fixed outer ids" and f095a358faf2 "net: gro:
  remove unnecessary df checks" (Richard Gobert, series v7 of 2025-09-22, merge 12de5f0f6c2d
  'net-gso-restore-outer-ip-ids-correctly'): in net-next on 2025-09-25, before the v6.18 merge window → v6.18 [D].
  The v7 text is modelled (two ``ip_fixedid`` bits; fixed IDs without DF).
* ab4c8b6f7fcb "gro: flushing when CWR is set negatively affects AccECN" (AccECN series v12, 2026-01): after
  v6.18, in no profile; the switch exists because the newest selftest (tools/testing/selftests/net/lib/gro.c,
  ``flags_cwr``) expects its behaviour.
* 7871f54e3dee "gro: take care of DODGY packets": v6.2-rc4, backported to 6.1.7; 5eddb24901ee is v6.1.

Commits on this path that need no switch here: 18f25dc39990 (v5.13, tunnel sockets never take the fraglist/L4
UDP path) only matters with NETIF_F_GRO_FRAGLIST or NETIF_F_GRO_UDP_FWD, both off by default and not modelled;
1d11fa696733 (GRO_DROP removed) is unreachable from ``napi_gro_receive``; the v5.17 file moves and the 2025
``gro_node`` split are code moves; 3271f19bf7b9 only renames the gso_type bits set at completion.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace


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
    #: eac1b93c14d6 (v5.17): skb_gro_receive limits p->len + len by dev->gro_max_size instead of 65536.
    gro_max_size_from_dev: bool = False
    #: 6fc2f3832d36 (v5.18): an IPv6 hop_limit difference flushes instead of splitting the flow.
    ipv6_hop_limit_flushes: bool = False
    #: 0fe79f28bfaf (v5.19): beyond GRO_LEGACY_MAX_SIZE, a non-encapsulated IPv6/TCP p may still grow (BIG TCP).
    gro_big_tcp_ipv6: bool = False
    #: 5eddb24901ee (v6.1): GSO (TCP) skbs enter GRO with count = gso_segs instead of being flushed.
    gro_accepts_gso: bool = False
    #: 7871f54e3dee (v6.2, 6.1.7): a DODGY GSO skb (gso_type from an untrusted source) is still flushed.
    gro_flushes_dodgy_gso: bool = False
    #: b1a78b9b9886 (v6.3): an IPv4 p is limited by dev->gro_ipv4_max_size; beyond GRO_LEGACY_MAX_SIZE the test
    #: becomes "skb's innermost protocol is TCP and p is not encapsulation" for both families (IPv4 BIG TCP).
    gro_ipv4_max_size: bool = False
    #: 4b0ebbca3e16 (v6.10): IPv4/IPv6 flush checks (ttl, tos, DF, ID) evaluated from tcp_gro_receive via
    #: gro_receive_network_flush, flush_id removed; outer ID ignored when the outer DF is set.
    l3_flush_in_tcp: bool = False
    #: 4e4f7cefb130 (v6.15): CWR is part of the compared TCP flag word (a CWR head no longer absorbs non-CWR
    #: segments); completion marks SKB_GSO_TCP_ACCECN instead of SKB_GSO_TCP_ECN.
    tcp_gro_compares_cwr: bool = False
    #: 21f7484220ac (v6.18): outer IPv4 IDs must be fixed or incrementing like inner ones (even with DF set);
    #: ip_fixedid has one bit for the outer (or only) header and one for the inner header.
    inet_gro_checks_outer_id: bool = False
    #: f095a358faf2 (v6.18): a fixed IPv4 ID is accepted without DF (the DF bits must still be equal).
    inet_gro_fixedid_without_df: bool = False
    #: a9888628cb2c (v6.17; net tree 2025-09-14, after v6.17-rc6): ip_tun_rx_dst sets TUNNEL_DONT_FRAGMENT in the rx
    #: tunnel metadata from the outer IPv4 DF bit, so gro_cells GRO splits one inner flow whose outer DF differs.
    ip_tun_rx_dst_sets_df: bool = False
    #: ab4c8b6f7fcb (2026, after v6.18; no profile): an incoming CWR segment no longer flushes by itself.
    tcp_gro_cwr_no_flush: bool = False

    def with_name(self, name: str) -> KernelModel:
        return replace(self, name=name)

    def switches(self) -> dict[str, bool]:
        """The behaviour switches (every boolean field) and their values."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.type in (bool, "bool")}


K_5_11 = KernelModel(name="pre-fix", release="5.11")
K_5_12 = KernelModel(name="post-fix", release="5.12", udp_tunnel_gate_checks_uh_check=True)
K_6_18 = KernelModel(
    name="6.18",
    release="6.18",
    udp_tunnel_gate_checks_uh_check=True,
    gro_max_size_from_dev=True,
    ipv6_hop_limit_flushes=True,
    gro_big_tcp_ipv6=True,
    gro_accepts_gso=True,
    gro_flushes_dodgy_gso=True,
    gro_ipv4_max_size=True,
    l3_flush_in_tcp=True,
    tcp_gro_compares_cwr=True,
    inet_gro_checks_outer_id=True,
    inet_gro_fixedid_without_df=True,
    ip_tun_rx_dst_sets_df=True,
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
