"""VLAN GRO: an 802.1Q or 802.1ad tag inside a tunnel (inner Ethernet → VLAN → IPv4/IPv6), or in the inner frame
at the tunnel device after decapsulation (``skb->protocol`` 0x8100/0x88A8 from ``eth_type_trans``).

Kernel: net/8021q/vlan_core.c ``vlan_gro_receive`` / ``vlan_gro_complete`` and ``vlan_packet_offloads`` (one
entry per TPID, ETH_P_8021Q and ETH_P_8021AD, registered by ``vlan_offload_init`` at boot); include/linux/if_vlan.h
``compare_vlan_header`` (the 4 bytes after the TPID: the TCI, its PCP and DEI bits included, and the encapsulated
protocol). Read in the current text (``indirect_call_gro_receive_inet``, ``skb_gro_flush_final``, the
``network_offsets`` line of the v6.10 series). The functions came with "vlan: Add GRO support for non hardware
accelerated vlan" (v4.2) in net/8021q/vlan.c, registered by the 8021q module's init (``vlan_proto_init``); they
later moved to vlan_core.c, built in whenever CONFIG_VLAN_8021Q is y or m (net/8021q/Makefile), so the offloads
exist from boot. A kernel built without CONFIG_VLAN_8021Q has neither: ``Kernel(vlan_offload=False)``, and the
inner ethertype finds no handler in ``eth_gro_receive``. The receive and compare logic is the same in every text
read.
The call of the encapsulated protocol counts towards GRO_RECURSION_LIMIT (``call_gro_receive``, gro.py).
"""

from __future__ import annotations

from collections.abc import Iterable

from . import reasons as R
from .gro import call_gro_receive, skb_gro_header_ok, skb_gro_pull
from .gro_csum import skb_gro_postpull_rcsum
from .handler_miss import missed_type
from .skbuff import SkBuff

#: include/linux/if_vlan.h: the 4 bytes of ``struct vlan_hdr`` (TCI, encapsulated protocol)
VLAN_HLEN = 4
#: include/linux/if_vlan.h: the VLAN ID bits of a TCI
VLAN_VID_MASK = 0x0FFF


def vlan_tags_name_a_vid(tcis: Iterable[int]) -> bool:
    """Whether one of the TCIs of a frame's VLAN tags has a VLAN ID other than 0 (``VLAN_VID_MASK``): a priority
    tag (VID 0) names none. What ``__netif_receive_skb_core`` (net/core/dev.c ``check_vlan_id``) reads to mark a
    frame PACKET_OTHERHOST when no VLAN device takes its tag."""
    return any(t & VLAN_VID_MASK for t in tcis)


def vlan_gro_receive(head: list[SkBuff], skb: SkBuff) -> SkBuff | None:
    """Read the VLAN header at the GRO offset, find its encapsulated protocol's handler, clear ``same_flow`` of held
    packets with other header bytes, pull the 4 bytes and call the handler.

    Kernel: net/8021q/vlan_core.c ``vlan_gro_receive``. The handler is looked up before the held packets are swept:
    an encapsulated protocol without one flushes the skb (reason
    ``vlan_gro_receive:no_packet_offload(type=0x0806)``, the protocol looked up: kernel/handler_miss.py) and
    leaves the held packets alone. Returns ``pp`` (a held packet to complete) or None.
    """
    cb = skb.cb
    flush = 1
    pp = None
    off_vlan = cb.data_offset
    hlen = off_vlan + VLAN_HLEN
    if not skb_gro_header_ok(skb, hlen):
        R.skb_flush_reason(cb, R.TRUNCATED)
        cb.flush |= flush
        return None
    cb.network_offsets[cb.encap_mark] = hlen
    start = skb.data + off_vlan
    vhdr = skb.buf[start : start + VLAN_HLEN]
    ptype = skb.dev.kernel.offload_base.get((vhdr[2] << 8) | vhdr[3])
    if ptype is None:
        R.skb_flush_reason(cb, missed_type(R.VLAN_NO_OFFLOAD, (vhdr[2] << 8) | vhdr[3]))
        cb.flush |= flush
        return None
    flush = 0
    for p in head:
        if not p.cb.same_flow:
            continue
        s2 = p.data + off_vlan
        if p.buf[s2 : s2 + VLAN_HLEN] != vhdr:  # compare_vlan_header
            p.cb.same_flow = 0
    skb_gro_pull(skb, VLAN_HLEN)
    skb_gro_postpull_rcsum(skb, start, VLAN_HLEN)
    pp = call_gro_receive(ptype.gro_receive, head, skb)
    cb.flush |= flush  # skb_gro_flush_final
    return pp


def vlan_gro_complete(skb: SkBuff, nhoff: int) -> int:
    """Complete the encapsulated protocol after the VLAN header at ``nhoff`` (bytes from ``skb->data``).

    Kernel: net/8021q/vlan_core.c ``vlan_gro_complete``. Returns 0 or a negative errno (-ENOENT: no handler).
    """
    start = skb.data + nhoff
    ptype = skb.dev.kernel.offload_base.get((skb.buf[start + 2] << 8) | skb.buf[start + 3])
    if ptype is None:
        return -2
    return ptype.gro_complete(skb, nhoff + VLAN_HLEN)
