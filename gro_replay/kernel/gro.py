"""The generic GRO engine: hash buckets, dev_gro_receive, completion, flushing and GRO_NORMAL batching.

Kernel: net/core/dev.c (v5.10.13/v5.11: napi_gro_receive, dev_gro_receive, gro_list_prepare, napi_gro_complete,
napi_gro_flush, __napi_gro_flush_chain, gro_flush_oldest, gro_normal_one, gro_normal_list, skb_gro_receive from
net/core/skbuff.c), moved to net/core/gro.c and include/net/gro.h in v5.17 (587652bbdd06, 4721031c3559) with
the same logic; v6.1 GSO entry (5eddb24901ee). gro-spec §1, §2, §4.1, §5.6.

Left out: frag0 and the fast/slow header paths, truesize, the memory layout beyond what ``skb_has_frag_list``
needs (a merged skb keeps ``(buf, start, end)`` payload slices; page-fragment counts and the frag_list flag are
tracked), GRO_CONSUMED/-EINPROGRESS (async XFRM), GRO_DROP, remote checksum
offload, busy polling.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TypeVar

from . import reasons as R
from . import skbuff as _skbuff
from .handler_miss import missed_type
from .netdevice import GroResult, KernelView, NapiStats
from .skbuff import (
    CHECKSUM_COMPLETE,
    CHECKSUM_UNNECESSARY,
    ETH_P_IPV6,
    MAX_SKB_FRAGS,
    SKB_GSO_DODGY,
    SKB_GSO_TCPV4,
    SKB_GSO_TCPV6,
    SkBuff,
)

if TYPE_CHECKING:
    from .skbuff import NapiGroCb

_Sk = TypeVar("_Sk")
GRO_HASH_BUCKETS = 8  #: include/linux/netdevice.h (07d78363dcff, v4.19)
MAX_GRO_SKBS = 8  #: net/core/dev.c / net/core/gro.c
GRO_LEGACY_MAX_SIZE = 65536  #: include/linux/netdevice.h; the 64 KiB merge limit before gro_max_size existed
IPPROTO_TCP = 6


class GroNode(Protocol):
    """What GRO reads and writes of a NAPI context: its buckets (newest first) and their counts, the GRO_NORMAL
    batch and its segment count, the current jiffy, its kernel's tables and switches, its counters, and where a
    batch goes up. Kernel: ``struct gro_node`` (include/net/gro.h, 2025: the GRO part of ``struct napi_struct``).
    napi.Napi is the NAPI context; this protocol keeps gro.py from importing the module that calls it."""

    rx_list: list[SkBuff]
    rx_count: int

    @property
    def gro_hash(self) -> list[list[SkBuff]]: ...

    @property
    def gro_count(self) -> list[int]: ...

    @property
    def jiffies(self) -> int: ...

    @property
    def kernel(self) -> KernelView: ...

    @property
    def stats(self) -> NapiStats: ...

    @property
    def netif_receive_skb_list(self) -> Callable[[list[SkBuff]], None]: ...


# module-level names of the members (an Enum class attribute lookup costs several dict lookups per use)
GRO_MERGED = GroResult.GRO_MERGED
GRO_MERGED_FREE = GroResult.GRO_MERGED_FREE
GRO_HELD = GroResult.GRO_HELD
GRO_NORMAL = GroResult.GRO_NORMAL

NAPI_GRO_FREE = 1
NAPI_GRO_FREE_STOLEN_HEAD = 2


def NAPI_GRO_CB(skb: SkBuff) -> NapiGroCb:  # noqa: N802 - the kernel's macro name
    """``NAPI_GRO_CB(skb)``: the skb's GRO control block (``struct napi_gro_cb``)."""
    return skb.cb


# -- offsets -----------------------------------------------------------------------------------------------------
def skb_gro_offset(skb: SkBuff) -> int:
    """``skb_gro_offset``: bytes GRO has parsed past ``skb->data``."""
    return skb.cb.data_offset


def skb_gro_len(skb: SkBuff) -> int:
    """``skb_gro_len``: ``skb->len`` minus the GRO offset, in bytes."""
    return skb.len - skb.cb.data_offset


def skb_gro_pull(skb: SkBuff, length: int) -> None:
    """``skb_gro_pull``: advance the GRO offset by ``length`` bytes."""
    skb.cb.data_offset += length


def skb_gro_header_ok(skb: SkBuff, hlen: int) -> bool:
    """True when ``hlen`` bytes from ``skb->data`` are present (``skb_gro_header`` would not return NULL)."""
    return skb.data + hlen <= skb.tail


# -- the recursion limit (include/net/gro.h, fcd91dd44946 "net: add recursion limit to GRO", v4.9) ---------------
GRO_RECURSION_LIMIT = 15  #: include/net/gro.h (include/linux/netdevice.h before v5.17)

#: a header's ``gro_receive``: ``(head, skb) -> pp`` (a held packet to complete, or None)
GroReceive = Callable[[list[SkBuff], SkBuff], "SkBuff | None"]


def gro_recursion_inc_test(skb: SkBuff) -> bool:
    """``gro_recursion_inc_test``: ``++NAPI_GRO_CB(skb)->recursion_counter == GRO_RECURSION_LIMIT``."""
    cb = skb.cb
    cb.recursion_counter += 1
    return cb.recursion_counter == GRO_RECURSION_LIMIT


def call_gro_receive(cb: GroReceive, head: list[SkBuff], skb: SkBuff) -> SkBuff | None:
    """Call the next header's ``gro_receive``, or flush ``skb`` and return None at the 15th nested call.

    Kernel: include/net/gro.h ``call_gro_receive`` (eth_gro_receive, vlan_gro_receive, vxlan_gro_receive,
    geneve_gro_receive) and its INDIRECT_CALL forms with the same test, ``indirect_call_gro_receive_inet``
    (eth, vlan) and the L4 call of inet_gro_receive/ipv6_gro_receive. Not counted: dev_gro_receive's call of
    the L3 handler, tcp4/udp4_gro_receive's direct calls of tcp_gro_receive/udp_gro_receive. The counter is
    zeroed by dev_gro_receive. Every kernel modelled (4.19 on) has it.
    """
    if gro_recursion_inc_test(skb):
        R.skb_flush_reason(skb.cb, R.GRO_RECURSION_LIMIT)
        skb.cb.flush |= 1
        return None
    return cb(head, skb)


def call_gro_receive_sk(
    cb: Callable[[_Sk, list[SkBuff], SkBuff], SkBuff | None], sk: _Sk, head: list[SkBuff], skb: SkBuff
) -> SkBuff | None:
    """``call_gro_receive_sk`` (include/net/gro.h): ``call_gro_receive`` for a socket's ``gro_receive``
    (udp_gro_receive → the tunnel socket's vxlan/geneve_gro_receive)."""
    if gro_recursion_inc_test(skb):
        R.skb_flush_reason(skb.cb, R.GRO_RECURSION_LIMIT)
        skb.cb.flush |= 1
        return None
    return cb(sk, head, skb)


# -- merge (skb_gro_receive) -------------------------------------------------------------------------------------
def skb_gro_receive(p: SkBuff, skb: SkBuff) -> int:
    """Append ``skb``'s payload (from its GRO offset) to the held packet ``p``; 0 on success, −E2BIG refused.

    Kernel: net/core/skbuff.c (5.10) / net/core/gro.c ``skb_gro_receive``: refuse when ``skb``'s flush is set or
    ``p->len + len`` reaches the limit. The limit is 65536 before eac1b93c14d6 (v5.17), ``dev->gro_max_size``
    after it, and ``dev->gro_ipv4_max_size`` for an IPv4 ``p`` from b1a78b9b9886 (v6.3). Beyond
    GRO_LEGACY_MAX_SIZE only BIG TCP may grow: a non-encapsulated IPv6/TCP ``p`` from 0fe79f28bfaf (v5.19); from
    b1a78b9b9886 any ``p`` whose new segment's innermost protocol (``NAPI_GRO_CB(skb)->proto``) is TCP and that
    is not ``encapsulation`` (the IPv6 headroom test is taken as met). ``p->len`` counts from ``p``'s own data
    start (outer IP header on the phys device, inner IP header on the tunnel device): gro-spec §5.6.
    """
    cb = skb.cb
    off = cb.data_offset
    length = skb.len - off
    if cb.flush:
        return -7
    model = p.dev.kernel.model
    if model.gro_ipv4_max_size and p.protocol != ETH_P_IPV6:
        limit = p.dev.gro_ipv4_max_size
    elif model.gro_max_size_from_dev:
        limit = p.dev.gro_max_size
    else:
        limit = GRO_LEGACY_MAX_SIZE
    if p.len + length >= limit:
        cb.why = R.SKB_GRO_RECEIVE_E2BIG
        return -7
    if p.len + length >= GRO_LEGACY_MAX_SIZE:
        if model.gro_ipv4_max_size:
            refuse = cb.proto != IPPROTO_TCP or p.encapsulation
        elif model.gro_big_tcp_ipv6:
            refuse = p.protocol != ETH_P_IPV6 or p.buf[p.network_header + 6] != IPPROTO_TCP or p.encapsulation
        else:
            refuse = True  # dev->gro_max_size could not exceed 65536 before 0fe79f28bfaf
        if refuse:
            cb.why = R.SKB_GRO_RECEIVE_E2BIG
            return -7
    # Where the payload goes decides only skb_has_frag_list(p), which makes dev_gro_receive flush p if it
    # enters GRO again (the tunnel device, ≥ 6.1): page fragments move into the last skb's frags while
    # MAX_SKB_FRAGS allows, a kmalloc'd linear head (veth from AF_PACKET, under 4080 bytes) is always chained on
    # the frag_list. The driver step sets head_frag from the --nic preset's layout, and data_len/nr_frags for
    # AF_PACKET's paged skbs (kernel/nic_skb.py): their linear part ends before the payload (skb_headlen, the
    # headers at most: gro_pull_from_frag0 pulled only the headers GRO read), so their frags move.
    lp: SkBuff | None
    lp = p.cb.last
    if skb.tail - skb.data - skb.data_len <= off:  # skb_headlen(skb) <= offset
        if lp.nr_frags + skb.nr_frags > MAX_SKB_FRAGS:
            lp = None
        else:
            lp.nr_frags += skb.nr_frags
            cb.free = NAPI_GRO_FREE
    elif skb.head_frag and lp.nr_frags + 1 + skb.nr_frags <= MAX_SKB_FRAGS:
        lp.nr_frags += 1 + skb.nr_frags
        cb.free = NAPI_GRO_FREE_STOLEN_HEAD
    else:
        lp = None
    if lp is None:  # merge: chain skb on p's frag_list
        p.frag_list = True
        p.cb.last = skb
    start = skb.data + off
    p.frags.append((skb.buf, start, skb.tail))
    p.frags.extend(skb.frags)
    p.frames.extend(skb.frames)
    if skb.flow != p.flow or skb.mixed is not None:
        _mix_flows(p, skb)
    p.cb.count += cb.count
    p.len += length
    cb.same_flow = 1
    return 0


def _mix_flows(p: SkBuff, skb: SkBuff) -> None:
    """Observation only: count in ``p.mixed`` the frames of other flows than ``p.flow`` that ``skb`` brings (its
    own, and those it carries of others): GRO merges by headers, and at a tunnel device without tunnel metadata the
    same inner flow under two outer keys is one flow to it (gro-spec §6.6)."""
    mixed = p.mixed if p.mixed is not None else {}
    brought = dict(skb.mixed) if skb.mixed is not None else {}
    brought[skb.flow] = brought.get(skb.flow, 0) + len(skb.frames) - sum(brought.values())
    for flow, n in brought.items():
        if flow != p.flow:
            mixed[flow] = mixed.get(flow, 0) + n
    p.mixed = mixed or None


# -- the engine ---------------------------------------------------------------------------------------------------
def gro_list_prepare(head: list[SkBuff], skb: SkBuff) -> None:
    """Mark which held packets may be the same flow as ``skb`` (RX hash, device, VLAN, metadata dst, MAC header).

    Kernel: net/core/dev.c / net/core/gro.c ``gro_list_prepare``. The MAC header compare covers dst, src and
    ethertype (``compare_ether_header``) for devices with a 14-byte hard header.
    """
    if not head:
        return
    h = skb.hash
    mac = skb.mac_header
    eh = skb.buf[mac : mac + 14]
    dev = skb.dev
    vlan_tci = skb.vlan_tci
    slow_gro = skb.slow_gro
    for p in head:
        cb = p.cb
        cb.flush = 0
        # observation only: the header-field bits of l3_why explain flush (reset here), its ID bits flush_id
        cb.l3_why &= R.L3_ID_BITS
        if p.hash != h:
            cb.same_flow = 0
            if p.flow == skb.flow:
                skb.cb.split = R.SPLIT_HASH  # observation only
            continue
        diffs = p.dev is not dev or p.vlan_tci != vlan_tci
        if not diffs:
            pm = p.mac_header
            diffs = p.buf[pm : pm + 14] != eh
        if not diffs and (slow_gro or p.slow_gro):
            diffs = p.md_dst != skb.md_dst
        cb.same_flow = 0 if diffs else 1
        if diffs and p.flow == skb.flow:  # observation only: which compare kept them apart
            pm = p.mac_header
            skb.cb.split = (
                R.SPLIT_DEV
                if p.dev is not dev
                else R.SPLIT_VLAN
                if p.vlan_tci != vlan_tci
                else R.SPLIT_MAC
                if p.buf[pm : pm + 14] != eh
                else R.SPLIT_MD_DST
            )


def dev_gro_receive(napi: GroNode, skb: SkBuff) -> GroResult:  # noqa: PLR0915 - net/core/gro.c dev_gro_receive is one C function, kept in its order
    """Run one skb through GRO on ``napi``: merge it, hold it, or hand it up as GRO_NORMAL.

    Kernel: net/core/dev.c (v5.10/5.11) / net/core/gro.c ``dev_gro_receive``; gro-spec §2.2. A completed held
    packet ``pp`` is completed and queued before this skb's own disposition (§2.3).
    Returns: the GroResult.
    """
    k = napi.kernel
    bucket = skb.hash & (GRO_HASH_BUCKETS - 1)
    head = napi.gro_hash[bucket]
    cb = skb.cb
    cb.ended_by = None  # observation only: set when a later skb's arrival completes this one once held
    # observation only: the driver step's reading of the frames (SkBuff.no_payload), whatever stops GRO before
    # tcp_gro_receive (an IPv4 header with options or a bad checksum, the pre-fix udp_gro_receive gate), GRO off
    # on the device included: every frame passes here, so the flows without payload are known in every mode
    cb.no_payload = skb.no_payload

    if skb.dev.netif_elide_gro():
        cb.why = R.NETIF_ELIDE_GRO
        return GRO_NORMAL

    cb.split = None  # observation only (set by the compares below)
    cb.gate_unvalidated = cb.gate_reached = False  # observation only (udp_offload.py)
    gro_list_prepare(head, skb)

    ptype = k.offload_base.get(skb.protocol)
    if ptype is None:
        cb.why = missed_type(R.NO_PACKET_OFFLOAD, skb.protocol)
        return GRO_NORMAL

    skb.network_header = skb.data + cb.data_offset
    cb.same_flow = 0
    cb.flush = 0
    if skb.frag_list:  # skb_has_frag_list
        cb.flush = 1
        cb.why = R.FRAG_LIST
    cb.free = 0
    cb.encap_mark = 0
    cb.is_atomic = 1
    cb.ip_fixedid = 0
    cb.l3_why = 0  # observation only (reasons.L3_*)
    cb.id_step = None  # observation only
    cb.is_flist = 0
    cb.recursion_counter = 0
    cb.csum_valid = 0
    cb.csum_cnt = 0
    cb.count = 1
    if skb.gso_size:
        gso_flush = 1
        if k.model.gro_accepts_gso:
            cb.count = skb.gso_segs
            # Only support TCP and non DODGY users.
            gso_flush = int(not skb.gso_type & (SKB_GSO_TCPV4 | SKB_GSO_TCPV6))
            if k.model.gro_flushes_dodgy_gso and skb.gso_type & SKB_GSO_DODGY:
                gso_flush = 1
        if gso_flush:
            # up to v6.0 one expression, skb_is_gso(skb) || skb_has_frag_list(skb), names the GSO skb first; from
            # 5eddb24901ee skb_has_frag_list is tested first and a GSO flush comes after it (observation only)
            cb.why = cb.why if k.model.gro_accepts_gso and cb.flush else R.GSO_SKB
            cb.flush = 1
    ip_summed = skb.ip_summed
    if ip_summed == CHECKSUM_COMPLETE:
        cb.csum = skb.csum
        cb.csum_valid = 1
    elif ip_summed == CHECKSUM_UNNECESSARY:
        cb.csum_cnt = skb.csum_level + 1

    pp = ptype.gro_receive(head, skb)

    same_flow = cb.same_flow
    ret = GRO_MERGED_FREE if cb.free else GRO_MERGED

    if pp is not None:
        # observation only: the frame whose arrival completes pp (tcp_gro_receive records a sequence gap itself)
        pp.cb.ended_by = pp.cb.ended_by or (skb.frames[0], None, None)
        head.remove(pp)
        napi_gro_complete(napi, pp)
        napi.gro_count[bucket] -= 1

    if same_flow:
        return ret

    if cb.flush:
        gro_pull_from_frag0(skb)
        return GRO_NORMAL

    if napi.gro_count[bucket] >= MAX_GRO_SKBS:
        head[-1].cb.ended_by = (skb.frames[0], None, None)  # observation only: the oldest, evicted for skb
        gro_flush_oldest(napi, head)
    else:
        napi.gro_count[bucket] += 1

    cb.age = napi.jiffies
    cb.last = skb
    if not skb.gso_size:
        skb.gso_size = skb.len - cb.data_offset
    head.insert(0, skb)
    gro_pull_from_frag0(skb)
    return GRO_HELD


def gro_pull_from_frag0(skb: SkBuff) -> None:
    """Move the headers GRO read from the first page frag into the linear part: ``data_len`` less the bytes of
    ``skb_gro_offset`` beyond ``skb_headlen`` (0 for a linear skb).

    Kernel: net/core/gro.c ``dev_gro_receive``'s ``pull:`` (``gro_try_pull_from_frag0`` in later releases) →
    ``gro_pull_from_frag0``, for a held or a GRO_NORMAL skb; the frag shrinks by as much (never to nothing here:
    a paged frame's first frag is at least 4066 bytes, its headers far fewer).
    """
    if skb.data_len:  # a linear skb's headers are all in its head
        grow = skb.cb.data_offset - (skb.tail - skb.data - skb.data_len)
        if grow > 0:
            skb.data_len -= grow


def gro_flush_oldest(napi: GroNode, head: list[SkBuff]) -> None:
    """Complete the oldest held packet of a full bucket (the count is left to the caller's new packet).

    Kernel: net/core/dev.c / net/core/gro.c ``gro_flush_oldest``; gro-spec §1.5.
    """
    oldest = head.pop()
    oldest.cb.why = R.MAX_GRO_SKBS
    napi_gro_complete(napi, oldest)


def napi_gro_complete(napi: GroNode, skb: SkBuff) -> None:
    """Finish a held packet: single segments go up unchanged, aggregates through the gro_complete chain.

    Kernel: net/core/dev.c / net/core/gro.c ``napi_gro_complete``; gro-spec §1.6. The batch counter grows by the
    segment count from 8dc1c444df19 (v5.11), by one before.
    """
    cb = skb.cb
    if cb.count == 1:
        skb.gso_size = 0
    else:
        ptype = napi.kernel.offload_base.get(skb.protocol)
        if ptype is None or ptype.gro_complete(skb, 0):
            napi.stats.complete_errors += len(skb.frames)  # wire frames freed with the packet (kfree_skb)
            return
    gro_normal_one(napi, skb, cb.count if napi.kernel.model.gro_normal_counts_segs else 1)


def napi_gro_flush(napi: GroNode, flush_old: bool, why: str) -> None:
    """Complete held packets bucket by bucket (ascending), oldest first; with ``flush_old`` stop at this jiffy.

    Kernel: net/core/dev.c / net/core/gro.c ``napi_gro_flush`` and ``__napi_gro_flush_chain``; gro-spec §1.4.
    ``why`` names the caller's condition for the report (POLL_END, BUDGET_EXHAUSTED, …).
    """
    for index in range(GRO_HASH_BUCKETS):
        head = napi.gro_hash[index]
        while head:
            skb = head[-1]
            if flush_old and skb.cb.age == napi.jiffies:
                break
            head.pop()
            skb.cb.why = why
            napi_gro_complete(napi, skb)
            napi.gro_count[index] -= 1


def gro_normal_one(napi: GroNode, skb: SkBuff, segs: int) -> None:
    """Queue one skb for the stack; deliver the batch when ``segs`` reach ``gro_normal_batch``.

    Kernel: net/core/dev.c / include/net/gro.h ``gro_normal_one``; gro-spec §1.7.
    """
    if _skbuff.queue_tap is not None:  # observation only (sim/compose.py)
        _skbuff.queue_tap(napi, skb, False)
    napi.rx_list.append(skb)
    napi.rx_count += segs
    if napi.rx_count >= napi.kernel.gro_normal_batch:
        gro_normal_list(napi)


def gro_normal_list(napi: GroNode) -> None:
    """Pass the batched skbs up (``netif_receive_skb_list_internal``). Kernel: ``gro_normal_list``."""
    if not napi.rx_count:
        return
    batch = napi.rx_list
    napi.rx_list = []
    napi.rx_count = 0
    napi.netif_receive_skb_list(batch)


def napi_gro_receive(napi: GroNode, skb: SkBuff) -> GroResult:
    """Entry point a driver (or gro_cell_poll) calls per received skb.

    Kernel: net/core/dev.c / net/core/gro.c ``napi_gro_receive`` + ``napi_skb_finish``: GRO_NORMAL skbs are queued
    with one segment (``gro_normal_one(napi, skb, 1)``); merged skbs are gone; held ones wait.
    """
    skb.cb.data_offset = 0
    if _skbuff.queue_tap is not None:  # observation only (sim/compose.py)
        _skbuff.queue_tap(napi, skb, True)
    ret = dev_gro_receive(napi, skb)
    if ret == GRO_NORMAL:
        gro_normal_one(napi, skb, 1)
    napi.stats.counts[ret] += 1
    return ret
