"""Geneve: GRO of the Geneve header (with options) and the receive path into the geneve device.

Kernel: drivers/net/geneve.c ``geneve_gro_receive``, ``geneve_gro_complete``, ``geneve_udp_encap_recv``,
``geneve_rx``. gro-spec §5.2, §6.2.
GRO and the C bit: ``geneve_gro_receive`` refuses only a non-zero version or the O bit; the C bit and the options
matter only through the memcmp of the whole header with each held packet, so frames with C set aggregate with each
other at the phys device (a C and a non-C frame of one flow are two flows), and ``geneve_rx`` then drops the whole
aggregate on a device without collect metadata (one skb: rx_frame_errors and rx_errors count it once).
Left out: inner protocols other than transparent Ethernet bridging (``inner_proto_inherit``), the 2026 GRO-hint
option.
"""

from __future__ import annotations

from . import drop_reasons as D
from . import reasons as R
from .dst_metadata import TUNNEL_CRIT_OPT, TUNNEL_GENEVE_OPT, TUNNEL_KEY, TUNNEL_OAM
from .gro import call_gro_receive, skb_gro_header_ok, skb_gro_pull
from .gro_csum import skb_gro_postpull_rcsum
from .handler_miss import missed_type
from .ip_tunnel_core import udp_tunnel_decap
from .skbuff import ETH_HLEN, ETH_P_TEB, SkBuff
from .udp_tunnel import UdpTunnelSock

GENEVE_BASE_HLEN = 8
GENEVE_VER = 0
#: the second header byte's flags (include/net/geneve.h ``struct genevehdr``, big-endian bit order: ``oam`` is the
#: high bit, ``critical`` the next)
GENEVE_OAM = 0x80
GENEVE_CRIT = 0x40


def geneve_hlen(buf: bytes | bytearray, start: int) -> int:
    """Geneve header length in bytes: 8 + 4 × opt_len. Kernel: ``geneve_hlen``."""
    return GENEVE_BASE_HLEN + (buf[start] & 0x3F) * 4


def geneve_gro_receive(sk: UdpTunnelSock, head: list[SkBuff], skb: SkBuff) -> SkBuff | None:
    """Check version and OAM, compare the whole header (options included) with held packets, continue inner.

    Kernel: drivers/net/geneve.c ``geneve_gro_receive`` (gro-spec §5.2).
    """
    cb = skb.cb
    off_gnv = cb.data_offset
    flush = 1
    pp = None
    if not skb_gro_header_ok(skb, off_gnv + GENEVE_BASE_HLEN):
        R.skb_flush_reason(cb, R.TRUNCATED)
        cb.flush |= flush
        return None
    start = skb.data + off_gnv
    buf = skb.buf
    if buf[start] >> 6 != GENEVE_VER or buf[start + 1] & GENEVE_OAM:
        R.skb_flush_reason(cb, R.GENEVE_HDR)
        cb.flush |= flush
        return None
    gh_len = geneve_hlen(buf, start)
    if not skb_gro_header_ok(skb, off_gnv + gh_len):
        R.skb_flush_reason(cb, R.TRUNCATED)
        cb.flush |= flush
        return None
    gh = buf[start : start + gh_len]
    for p in head:
        if not p.cb.same_flow:
            continue
        s2 = p.data + off_gnv
        if (p.buf[s2] & 0x3F) != (gh[0] & 0x3F) or p.buf[s2 : s2 + gh_len] != gh:
            p.cb.same_flow = 0
            if p.flow == skb.flow:
                cb.split = R.SPLIT_GENEVE  # observation only
    ptype = skb.dev.kernel.offload_base.get((gh[2] << 8) | gh[3])
    if ptype is None:
        R.skb_flush_reason(cb, missed_type(R.TUNNEL_INNER_PROTO, (gh[2] << 8) | gh[3]))
    else:
        skb_gro_pull(skb, gh_len)
        skb_gro_postpull_rcsum(skb, start, gh_len)
        pp = call_gro_receive(ptype.gro_receive, head, skb)
        flush = 0
    cb.flush |= flush
    return pp


def geneve_gro_complete(sk: UdpTunnelSock, skb: SkBuff, nhoff: int) -> int:
    """Kernel: ``geneve_gro_complete``: complete the inner protocol after the header and options."""
    start = skb.data + nhoff
    gh_len = geneve_hlen(skb.buf, start)
    ptype = skb.dev.kernel.offload_base.get((skb.buf[start + 2] << 8) | skb.buf[start + 3])
    if ptype is None:
        return -2
    if skb.encapsulation:
        skb.inner_mac_header = start + gh_len
    return ptype.gro_complete(skb, nhoff + gh_len)


def geneve_udp_encap_recv(sk: UdpTunnelSock, skb: SkBuff) -> str | None:
    """Validate the Geneve header (``skb->data`` at UDP) and decapsulate into the geneve device's gro_cells.

    Kernel: drivers/net/geneve.c ``geneve_udp_encap_recv`` then ``geneve_rx``, tests in kernel order:

    1. ``pskb_may_pull(skb, GENEVE_BASE_HLEN)`` (UDP + 8-byte header) → D.GENEVE_SHORT (no counter);
    2. ``geneveh->ver != GENEVE_VER`` → D.GENEVE_VERSION (no counter);
    3. ``proto_type`` not ETH_P_TEB → D.GENEVE_INNER_PROTO (up to v5.17: tested before the device lookup, no
       counter; v5.18+ with ``inner_proto_inherit``, 435fe1c0c1f7: IPv4/IPv6 pass the first test and the device
       without ``inner_proto_inherit`` drops them with rx_dropped; later trees test every type at the device — the
       outcome is the same drop);
    4. ``iptunnel_pull_header(skb, GENEVE_BASE_HLEN + opt_len * 4, …)`` → D.GENEVE_SHORT (rx_dropped);
    5. ``geneve_rx``: without collect metadata (``ip_tunnel_collect_metadata() || gs->collect_md`` false; here
       ``--no-tunnel-metadata``) a header with the C bit (``gnvh->critical``) is dropped, "since we don't support
       any" critical option: D.GENEVE_CRITICAL, rx_frame_errors and rx_errors. The same test in every modelled
       release (4.19 … 6.18): read in the v4.19-era text (list-based GRO and the four-argument
       ``ip_tunnel_info_opts_set``, both v4.19; counters with ``stats.rx_frame_errors++``), the v6.8 text
       (``DEV_STATS_INC``) and the 2026 net-next text (GRO hints); texts before v4.19 (pointer-chained GRO lists)
       drop it without counting. In collect-metadata mode the C
       and O bits only go into the metadata dst (``geneve_tun_flags``) and the frame is queued. The O bit
       (``gnvh->oam``) is never a reason to drop in ``geneve_rx``: only ``geneve_gro_receive`` refuses to
       aggregate it (gro-spec §5.2). ``rsvd1``/``rsvd2`` are never tested.
    6. ``eth_type_trans`` on the device, ECN (``IP_ECN_decapsulate``: CE on a not-ECT inner packet, err > 1,
       rx_frame_errors and rx_errors), ``gro_cells_receive``: ip_tunnel_core.py ``udp_tunnel_decap``.

    Returns None when queued, or the drop reason (``reasons.GENEVE_*``).
    Left out: the device lookup by VNI and outer source (every VNI reaches the one device of the port), the
    source-MAC loop check (the device MAC is not modelled) and ``pskb_inet_may_pull`` (1ca1ba465e55, v6.8 and
    stable: an inner IPv4/IPv6 header shorter than its fixed part is dropped with rx_length_errors).
    """
    buf = skb.buf
    u = skb.data
    if skb.headlen() < 8 + GENEVE_BASE_HLEN:
        return D.GENEVE_SHORT
    gs = u + 8
    if buf[gs] >> 6 != GENEVE_VER:
        return D.GENEVE_VERSION
    if ((buf[gs + 2] << 8) | buf[gs + 3]) != ETH_P_TEB:
        return D.GENEVE_INNER_PROTO
    gh_len = geneve_hlen(buf, gs)
    if skb.headlen() < 8 + gh_len:
        return D.GENEVE_SHORT
    # geneve_rx
    metadata = sk.dev.kernel.tunnel_metadata
    if not metadata and buf[gs + 1] & GENEVE_CRIT:
        return D.GENEVE_CRITICAL
    if skb.headlen() < 8 + gh_len + ETH_HLEN:
        return D.GENEVE_INNER_SHORT
    vni = int.from_bytes(buf[gs + 4 : gs + 7], "big")
    opts = bytes(buf[gs + 8 : gs + gh_len])
    return udp_tunnel_decap(sk, skb, 8 + gh_len, ETH_P_TEB, vni, opts, geneve_tun_flags(buf[gs + 1], opts))


def geneve_tun_flags(b1: int, opts: bytes = b"") -> int:
    """``geneve_rx``'s metadata flags from the header's second byte: TUNNEL_KEY, O → TUNNEL_OAM, C → TUNNEL_CRIT_OPT;
    TUNNEL_GENEVE_OPT when there are options (``ip_tunnel_info_opts_set`` ORs its flags in only for len > 0)."""
    return (
        TUNNEL_KEY
        | (TUNNEL_OAM if b1 & GENEVE_OAM else 0)
        | (TUNNEL_CRIT_OPT if b1 & GENEVE_CRIT else 0)
        | (TUNNEL_GENEVE_OPT if opts else 0)
    )
