"""The rx tunnel metadata dst a collect-metadata tunnel device attaches to each decapsulated skb.

Kernel: include/net/dst_metadata.h ``ip_tun_rx_dst`` / ``ipv6_tun_rx_dst`` (``__ip_tun_set_dst``,
``__ipv6_tun_set_dst``, ``tun_rx_dst``), include/net/ip_tunnels.h ``ip_tunnel_key_init``, net/ipv4/udp_tunnel_core.c
``udp_tun_rx_dst``, drivers/net/vxlan/vxlan_core.c ``vxlan_rcv``, drivers/net/geneve.c ``geneve_rx``;
``skb_metadata_dst_cmp`` (the compare ``gro_list_prepare`` runs) memcmp's the whole ``struct ip_tunnel_info`` plus
``options_len`` bytes of options. gro-spec §6.6.

What the kernel stores (every field below, per release; the struct is zeroed by ``metadata_dst_alloc`` so padding,
``dst_cache``, ``nhid`` and ``flow_flags`` are always zero on receive):

* ``mode``: ``IP_TUNNEL_INFO_IPV6`` for an outer IPv6 header, else 0;
* outer source and destination addresses (IPv4 or IPv6);
* ``tos``: the outer IPv4 TOS byte / IPv6 traffic class (``ipv6_get_dsfield``), ECN bits included;
* ``ttl``: the outer IPv4 TTL / IPv6 hop limit;
* ``label``: the outer IPv6 flow label (``ip6_flowlabel``), 0 for IPv4;
* ``tp_src`` / ``tp_dst``: the outer UDP source and destination ports (``udp_tun_rx_dst``, every release since
  v4.3, c29a70d2cadc);
* ``tun_id``: the VNI (``key32_to_tunnel_id`` / ``vni_to_tunnel_id``);
* ``tun_flags``: ``TUNNEL_KEY`` (vxlan_rcv, geneve_rx); ``TUNNEL_CSUM`` when the outer UDP checksum field is not
  zero (``udp_tun_rx_dst``); Geneve ``TUNNEL_OAM`` and ``TUNNEL_CRIT_OPT`` from the header's O and C bits and
  ``TUNNEL_GENEVE_OPT`` with its options (``ip_tunnel_info_opts_set``, only when there are options);
  ``TUNNEL_VXLAN_OPT`` on a GBP device for a G-flagged frame (``vxlan_parse_gbp_hdr``; a non-GBP device drops
  G-flagged frames); and ``TUNNEL_DONT_FRAGMENT`` when the outer IPv4
  header has DF set — only since a9888628cb2c "net: dst_metadata: fix IP_DF bit not extracted from tunnel
  headers" (net tree 2025-09-14, after v6.17-rc6: v6.17; stable 6.16.y and others took it). IPv6 has no DF.
* options: the Geneve options (``opt_len`` × 4 bytes); for VXLAN ``struct vxlan_metadata`` (4 bytes: the GBP
  policy ID and the D and A bits) when ``vxlan_parse_gbp_hdr`` found the G flag, else ``options_len`` 0 (``tun_rx_dst``
  sets it to 0 although room for the 4 bytes is allocated).

Not a per-skb difference in practice: ``tp_dst`` is the port of the socket the frame reached, and every vxlan or
geneve device binds its own port (``vxlan_sock_add``), so one device's gro_cells only ever compare skbs of one
destination port; frames of one inner flow sent to two ports reach two devices (two gro_cells) and never merge.

The tuple built here is equal for two skbs exactly when the kernel's memcmp is: every stored field appears once,
fields the kernel does not store for the release are left out (the DF bit before a9888628cb2c).
Between the releases modelled, the 6.10 conversion of ``tun_flags`` to a bitmap (IP_TUNNEL_*_BIT) changed the
layout only, not which skbs compare equal.
"""

from __future__ import annotations

import struct

from .model import KernelModel

#: ``tun_flags`` bits (include/net/ip_tunnels.h; the pre-6.10 __be16 values, used here only as distinct bits)
TUNNEL_CSUM = 0x01
TUNNEL_KEY = 0x04
TUNNEL_DONT_FRAGMENT = 0x0100
TUNNEL_OAM = 0x0200
TUNNEL_CRIT_OPT = 0x0400
TUNNEL_GENEVE_OPT = 0x0800
TUNNEL_VXLAN_OPT = 0x1000

IP_DF = 0x4000
_UDPH = struct.Struct("!HHHH")  # struct udphdr: source dest len check


def udp_tun_rx_dst(
    model: KernelModel, buf: bytes | bytearray, nh: int, uh: int, tun_flags: int, vni: int, opts: bytes
) -> tuple:
    """The metadata dst of a decapsulated UDP tunnel skb, as a comparable tuple.

    Args: ``buf`` the frame, ``nh`` offset of the outer IP header, ``uh`` offset of the outer UDP header;
    ``tun_flags`` the tunnel driver's flags (``TUNNEL_KEY``, Geneve's O/C bits, the option type flag
    ``TUNNEL_GENEVE_OPT`` / ``TUNNEL_VXLAN_OPT`` when ``opts`` is not empty); ``vni`` the 24-bit VNI;
    ``opts`` the tunnel options (Geneve options, VXLAN GBP ``struct vxlan_metadata``, or b"").
    Returns (mode/family, addresses, tos, ttl, flow label, tp_src, tp_dst, tun_flags, tun_id, options).
    Kernel: net/ipv4/udp_tunnel_core.c ``udp_tun_rx_dst`` → include/net/dst_metadata.h ``ip_tun_rx_dst`` /
    ``ipv6_tun_rx_dst``; a9888628cb2c for the DF bit (``KernelModel.ip_tun_rx_dst_sets_df``).
    """
    sport, dport, _len, check = _UDPH.unpack_from(buf, uh)
    if check:
        tun_flags |= TUNNEL_CSUM
    if buf[nh] >> 4 == 4:
        if model.ip_tun_rx_dst_sets_df and buf[nh + 6] << 8 & IP_DF:
            tun_flags |= TUNNEL_DONT_FRAGMENT
        family, addrs, tos, ttl, label = 4, bytes(buf[nh + 12 : nh + 20]), buf[nh + 1], buf[nh + 8], 0
    else:
        w = int.from_bytes(buf[nh : nh + 4], "big")
        family, addrs, tos, ttl, label = (
            6,
            bytes(buf[nh + 8 : nh + 40]),
            (w >> 20) & 0xFF,
            buf[nh + 7],
            w & 0xFFFFF,
        )
    return (family, addrs, tos, ttl, label, sport, dport, tun_flags, vni, opts)
