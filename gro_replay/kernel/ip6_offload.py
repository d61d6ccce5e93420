"""IPv6 GRO. Kernel: net/ipv6/ip6_offload.c ``ipv6_gro_receive`` / ``ipv6_gro_complete``.

Versions: v5.10.13 text (gro-spec §3.2): version, flow label, addresses and the (nexthdr, hop_limit) pair split
flows, traffic class flushes; 6fc2f3832d36 (v5.18, switch ``ipv6_hop_limit_flushes``) turns a hop-limit
difference into a flush; v6.10 (``l3_flush_in_tcp``) evaluates traffic class and hop limit from TCP
(include/net/gro.h ``ipv6_gro_flush``).
IP in IP with IPv6: ``sit_ip6ip6_gro_receive`` (IPv6 in IPv4, ``sit_offload``, and IPv6 in IPv6,
``ip6ip6_offload``), ``ip4ip6_gro_receive`` (IPv4 in IPv6, ``ip4ip6_offload``) and their gro_complete functions,
registered by ``ipv6_offload_init``; the same text from v4.19 (d4546c2509b1) on: a second encapsulation flushes
(``NAPI_GRO_CB(skb)->encap_mark``), else the inner header is parsed by ``ipv6_gro_receive`` /
``inet_gro_receive`` called directly.
Left out: extension headers other than hop-by-hop, routing and destination options
(a fragment header ends the parse and the frame flushes, as in the kernel).
"""

from __future__ import annotations

import struct

from ..packet.csum import pseudo_at
from . import reasons as R
from . import skbuff as _skbuff
from .af_inet import inet_gro_complete, inet_gro_receive
from .gro import call_gro_receive, skb_gro_header_ok, skb_gro_pull
from .gro_csum import skb_gro_postpull_rcsum
from .handler_miss import missed_proto
from .skbuff import SKB_GSO_IPXIP4, SKB_GSO_IPXIP6, SkBuff

NEXTHDR_HOP = 0
NEXTHDR_ROUTING = 43
NEXTHDR_DEST = 60  # NEXTHDR_FRAGMENT: kernel/reassembly.py
_EXTHDRS = (NEXTHDR_ROUTING, NEXTHDR_DEST)  # registered with INET6_PROTO_GSO_EXTHDR (exthdrs_offload.c)
_WORD = struct.Struct("!I")  # the first header word: version, traffic class, flow label


def ipv6_gso_pull_exthdrs(skb: SkBuff, start: int, proto: int) -> tuple[int, int]:
    """Walk hop-by-hop, routing and destination-options headers from absolute offset ``start``.

    Kernel: net/ipv6/ip6_offload.c ``ipv6_gso_pull_exthdrs`` (``ipv6_gro_pull_exthdrs`` in v6.x).
    Returns (final next header, absolute offset after the walked headers); proto −1 when a header is cut short.
    """
    buf = skb.buf
    pos = start
    while proto == NEXTHDR_HOP or proto in _EXTHDRS:
        if pos + 8 > skb.tail:
            return -1, pos
        hlen = (buf[pos + 1] + 1) * 8
        if pos + hlen > skb.tail:
            return -1, pos
        proto = buf[pos]
        pos += hlen
    return proto, pos


def ipv6_gro_receive(head: list[SkBuff], skb: SkBuff) -> SkBuff | None:  # noqa: PLR0915 - net/ipv6/ip6_offload.c ipv6_gro_receive is one C function
    """Parse the IPv6 header (and extension headers) at the GRO offset, sweep held packets, call L4.

    Kernel: net/ipv6/ip6_offload.c ``ipv6_gro_receive``. Returns ``pp`` or None.
    """
    cb = skb.cb
    k = skb.dev.kernel
    model = k.model
    off = cb.data_offset
    flush = 1
    pp = None
    if not skb_gro_header_ok(skb, off + 40):
        R.skb_flush_reason(cb, R.TRUNCATED)
        cb.flush |= flush
        return None
    buf = skb.buf
    base = skb.data + off
    cb.network_offsets[cb.encap_mark] = off
    skb.network_header = base
    payload_len = (buf[base + 4] << 8) | buf[base + 5]
    own = 1 if payload_len != skb.len - off - 40 else 0
    flush += own
    proto = buf[base + 6]
    ops = k.inet6_offloads.get(proto)
    l4 = base + 40
    if ops is None:
        proto, l4 = ipv6_gso_pull_exthdrs(skb, base + 40, proto)
        ops = k.inet6_offloads.get(proto)
        if ops is None:
            R.skb_flush_reason(cb, missed_proto(R.at_header(R.IPV6_NO_OFFLOAD, cb.encap_mark), proto))
            cb.flush |= flush
            return None
    skb_gro_pull(skb, l4 - base)
    skb.transport_header = l4
    cb.proto = proto
    flush -= 1
    if own:
        R.skb_flush_reason(cb, R.at_header(R.IPV6_PAYLOAD_LEN, cb.encap_mark))
    nlen = l4 - base
    w1 = _WORD.unpack_from(buf, base)[0]
    addrs = buf[base + 8 : base + 40]
    hop_limit = buf[base + 7]
    nexthdr = buf[base + 6]
    for p in head:
        pcb = p.cb
        if not pcb.same_flow:
            continue
        b2 = p.data + off
        pbuf = p.buf
        first_word = w1 ^ _WORD.unpack_from(pbuf, b2)[0]
        if model.ipv6_hop_limit_flushes or model.l3_flush_in_tcp:
            nh_differs = pbuf[b2 + 6] != nexthdr
        else:
            nh_differs = pbuf[b2 + 6] != nexthdr or pbuf[b2 + 7] != hop_limit
        if (
            first_word & 0xF00FFFFF
            or pbuf[b2 + 8 : b2 + 40] != addrs
            or nh_differs
            or (nlen > 40 and pbuf[b2 + 40 : b2 + nlen] != buf[base + 40 : base + nlen])
        ):
            pcb.same_flow = 0
            continue
        if not model.l3_flush_in_tcp:
            tc_flush = first_word & 0x0FF00000
            if model.ipv6_hop_limit_flushes:
                tc_flush |= pbuf[b2 + 7] ^ hop_limit
            if tc_flush:
                pcb.flush |= 1
                pcb.why = R.IPV6_TCLASS_HOPLIMIT
                pcb.l3_why |= R.L3_V6 << (R.L3_INNER_SHIFT * cb.encap_mark)  # observation only
            if flush and not pcb.flush:
                pcb.why = R.TCP_NEXT_FLUSHING  # observation only: skb's own flush, folded into p's
            pcb.flush |= flush
            if cb.is_atomic:
                if _skbuff.id_tally is not None and cb.encap_mark:  # observation only (sim/runs.py)
                    _skbuff.untally_outer_id(skb, p)
                pcb.flush_id = 0
                pcb.l3_why &= ~R.L3_ID_BITS  # observation only, as flush_id
    cb.is_atomic = 1
    cb.flush |= flush
    skb_gro_postpull_rcsum(skb, base, nlen)
    pp = call_gro_receive(ops.gro_receive, head, skb)
    return pp


def ipv6_gro_flush(iph: int, iph2: int, skb_buf: bytes | bytearray, pbuf: bytes | bytearray) -> int:
    """Traffic class or hop limit differ (v6.10+, evaluated from TCP): ``reasons.L3_V6`` (flush) or 0.

    Kernel: include/net/gro.h ``ipv6_gro_flush``.
    """
    w = _WORD.unpack_from(skb_buf, iph)[0] ^ _WORD.unpack_from(pbuf, iph2)[0]
    return R.L3_V6 if (w & 0x0FF00000) | (skb_buf[iph + 7] ^ pbuf[iph2 + 7]) else 0


def ip6_gro_network_pseudo(skb: SkBuff, proto: int) -> int:
    """``ip6_gro_compute_pseudo``: IPv6 pseudo-header sum over the GRO network header and ``skb_gro_len``."""
    return pseudo_at(skb.buf, skb.network_header + 8, 32, skb.len - skb.cb.data_offset, proto)


def ipv6_gro_complete(skb: SkBuff, nhoff: int) -> int:
    """Rewrite the IPv6 payload length for the aggregate and complete L4. Kernel: ``ipv6_gro_complete``."""
    k = skb.dev.kernel
    base = skb.data + nhoff
    if not isinstance(skb.buf, bytearray):
        skb.buf = bytearray(skb.buf)
    buf = skb.buf
    if skb.encapsulation:
        skb.inner_network_header = base
    payload_len = skb.len - nhoff - 40
    # beyond IPV6_MAXPLEN the kernel inserts a hop-by-hop jumbo header (81fbc812132c, v5.19) and sets
    # payload_len 0; the extra 8 header bytes are not modelled
    buf[base + 4 : base + 6] = (payload_len if payload_len <= 0xFFFF else 0).to_bytes(2, "big")
    proto, l4 = ipv6_gso_pull_exthdrs(skb, base + 40, buf[base + 6])
    ops = k.inet6_offloads.get(proto)
    if ops is None:
        return -2
    return ops.gro_complete(skb, l4 - skb.data)


def sit_ip6ip6_gro_receive(head: list[SkBuff], skb: SkBuff) -> SkBuff | None:
    """IPv6 in IPv4 (IP protocol 41, SIT) or in IPv6 (next header 41): flush a second encapsulation, else mark the skb
    encapsulated and parse the inner IPv6 header.

    Kernel: net/ipv6/ip6_offload.c ``sit_ip6ip6_gro_receive`` ("Common GRO receive for SIT and IP6IP6"):
    ``NAPI_GRO_CB(skb)->encap_mark`` set → ``flush = 1``, NULL; else ``encap_mark = 1`` and
    ``ipv6_gro_receive(head, skb)``, called directly. Returns ``pp`` or None.
    """
    cb = skb.cb
    if cb.encap_mark:
        R.skb_flush_reason(cb, R.SIT_IP6IP6_ENCAP_MARK)
        cb.flush = 1
        return None
    cb.encap_mark = 1
    return ipv6_gro_receive(head, skb)


def ip4ip6_gro_receive(head: list[SkBuff], skb: SkBuff) -> SkBuff | None:
    """IPv4 in IPv6 (next header 4): flush a second encapsulation, else mark the skb encapsulated and parse the inner
    IPv4 header.

    Kernel: net/ipv6/ip6_offload.c ``ip4ip6_gro_receive``: as ``sit_ip6ip6_gro_receive``, then
    ``inet_gro_receive(head, skb)``, called directly. Returns ``pp`` or None.
    """
    cb = skb.cb
    if cb.encap_mark:
        R.skb_flush_reason(cb, R.IP4IP6_ENCAP_MARK)
        cb.flush = 1
        return None
    cb.encap_mark = 1
    return inet_gro_receive(head, skb)


def sit_gro_complete(skb: SkBuff, nhoff: int) -> int:
    """Mark the aggregate encapsulated (``SKB_GSO_IPXIP4``), then complete the inner IPv6 header at ``nhoff``.

    Kernel: net/ipv6/ip6_offload.c ``sit_gro_complete``. Returns 0 or a negative errno.
    """
    skb.encapsulation = 1
    skb.gso_type |= SKB_GSO_IPXIP4
    return ipv6_gro_complete(skb, nhoff)


def ip6ip6_gro_complete(skb: SkBuff, nhoff: int) -> int:
    """Mark the aggregate encapsulated (``SKB_GSO_IPXIP6``), then complete the inner IPv6 header at ``nhoff``.

    Kernel: net/ipv6/ip6_offload.c ``ip6ip6_gro_complete``. Returns 0 or a negative errno.
    """
    skb.encapsulation = 1
    skb.gso_type |= SKB_GSO_IPXIP6
    return ipv6_gro_complete(skb, nhoff)


def ip4ip6_gro_complete(skb: SkBuff, nhoff: int) -> int:
    """Mark the aggregate encapsulated (``SKB_GSO_IPXIP6``), then complete the inner IPv4 header at ``nhoff``.

    Kernel: net/ipv6/ip6_offload.c ``ip4ip6_gro_complete``. Returns 0 or a negative errno.
    """
    skb.encapsulation = 1
    skb.gso_type |= SKB_GSO_IPXIP6
    return inet_gro_complete(skb, nhoff)
