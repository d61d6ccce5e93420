"""Geneve: GRO of the Geneve header (with options) and the receive path into the geneve device.

Kernel: drivers/net/geneve.c ``geneve_gro_receive``, ``geneve_gro_complete``, ``geneve_udp_encap_recv``,
``geneve_rx``. gro-spec §5.2, §6.2.
Left out: inner protocols other than transparent Ethernet bridging (``inner_proto_inherit``), the 2026 GRO-hint
option.
"""

from __future__ import annotations

from . import reasons as R
from .dst_metadata import TUNNEL_CRIT_OPT, TUNNEL_GENEVE_OPT, TUNNEL_KEY, TUNNEL_OAM
from .gro import skb_gro_header_ok, skb_gro_postpull_rcsum, skb_gro_pull
from .ip_tunnel_core import udp_tunnel_decap
from .skbuff import ETH_HLEN, ETH_P_TEB, SkBuff
from .udp_tunnel import UdpTunnelSock

GENEVE_BASE_HLEN = 8
GENEVE_VER = 0


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
        cb.why = R.TRUNCATED
        cb.flush |= flush
        return None
    start = skb.data + off_gnv
    buf = skb.buf
    if buf[start] >> 6 != GENEVE_VER or buf[start + 1] & 0x80:
        cb.why = R.GENEVE_HDR
        cb.flush |= flush
        return None
    gh_len = geneve_hlen(buf, start)
    if not skb_gro_header_ok(skb, off_gnv + gh_len):
        cb.why = R.TRUNCATED
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
        cb.why = R.TUNNEL_INNER_PROTO
    else:
        skb_gro_pull(skb, gh_len)
        skb_gro_postpull_rcsum(skb, start, gh_len)
        pp = ptype.gro_receive(head, skb)
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

    Kernel: ``geneve_udp_encap_recv`` + ``geneve_rx``. Returns None when queued, or the drop reason.
    """
    buf = skb.buf
    u = skb.data
    if skb.headlen() < 8 + GENEVE_BASE_HLEN:
        return "geneve_rx:short"
    gs = u + 8
    if buf[gs] >> 6 != GENEVE_VER:
        return "geneve_rx:version"
    if ((buf[gs + 2] << 8) | buf[gs + 3]) != ETH_P_TEB:
        return "geneve_rx:inner_proto"
    gh_len = geneve_hlen(buf, gs)
    if skb.headlen() < 8 + gh_len + ETH_HLEN:
        return "geneve_rx:short"
    vni = int.from_bytes(buf[gs + 4 : gs + 7], "big")
    opts = bytes(buf[gs + 8 : gs + gh_len])
    return udp_tunnel_decap(sk, skb, 8 + gh_len, ETH_P_TEB, vni, opts, geneve_tun_flags(buf[gs + 1], opts))


def geneve_tun_flags(b1: int, opts: bytes = b"") -> int:
    """``geneve_rx``'s metadata flags from the header's second byte: TUNNEL_KEY, O → TUNNEL_OAM, C → TUNNEL_CRIT_OPT;
    TUNNEL_GENEVE_OPT when there are options (``ip_tunnel_info_opts_set`` ORs its flags in only for len > 0)."""
    return (
        TUNNEL_KEY
        | (TUNNEL_OAM if b1 & 0x80 else 0)
        | (TUNNEL_CRIT_OPT if b1 & 0x40 else 0)
        | (TUNNEL_GENEVE_OPT if opts else 0)
    )
