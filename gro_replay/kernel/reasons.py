"""Names of the conditions that stop a frame from merging or complete a held packet, for the report.

Each value is ``function:condition`` after the kernel function and test where the decision is made; the
simulation sets ``NAPI_GRO_CB(skb)->why`` at that point (observation only: no decision reads it). Modelled on
``SKB_DROP_REASON_*`` (include/net/dropreason-core.h).

IP header conditions seen from ``tcp_gro_receive`` (the ``p->flush``/``flush_id`` verdicts up to v6.9, the
``gro_receive_network_flush`` verdict from v6.10) say which header broke the flow: ``outer_`` or ``inner_`` for
an encapsulated packet, no prefix for the only header (plain TCP, or the tunnel device after decapsulation), and
which field: ``ttl_tos_df`` (IPv4 TTL, TOS or DF), ``tclass_hop_limit`` (IPv6), ``ip_id`` (IPv4 ID step neither 0
nor the segments held); several are joined by ``+``. The header bits are recorded beside the
decision in ``NAPI_GRO_CB(p)->l3_why`` (``L3_*`` below, four bits per header: ``<< 0`` outer or only, ``<< 4``
inner), never read by a decision. When the TCP sequence does not continue the held packet as well, the sequence
gap is named instead of an ID step alone: segments missing in between (lost, reordered, or gone up alone) step the
sender's IDs by more than the segments held, so the gap explains the ID step (``tcp_gro_receive`` ORs both into
one ``flush``: the kernel does not tell them apart).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .drop_reasons import STACK_DROPS
from .handler_miss import split

if TYPE_CHECKING:
    from .skbuff import NapiGroCb

# dev_gro_receive / napi
NETIF_ELIDE_GRO = "dev_gro_receive:netif_elide_gro"
GRO_CELLS_NETIF_RX = "gro_cells_receive:netif_rx"
NO_PACKET_OFFLOAD = "dev_gro_receive:no_packet_offload"
GSO_SKB = "dev_gro_receive:skb_is_gso"
FRAG_LIST = "dev_gro_receive:skb_has_frag_list"
MAX_GRO_SKBS = "gro_flush_oldest:MAX_GRO_SKBS"
POLL_END = "napi_complete_done:flush"
BUDGET_EXHAUSTED = "napi_poll:budget_exhausted_flush"
SKB_GRO_RECEIVE_E2BIG = "skb_gro_receive:gro_max_size"
#: the held packet, completed by an arriving skb of its flow that was flushing on its own
#: (``NAPI_GRO_CB(skb)->flush`` set before tcp_gro_receive: a GSO skb before v6.1, bytes past its IP datagram):
#: up to v6.9 inet_gro_receive/ipv6_gro_receive fold that flush into the held packet's
#: (``NAPI_GRO_CB(p)->flush |= flush``), from v6.10 skb_gro_receive refuses the skb (-E2BIG); either way
#: tcp_gro_receive completes the held packet. The arriving skb's own reason names it, not the held packet
TCP_NEXT_FLUSHING = "tcp_gro_receive:next_flushing"
#: the reasons ``napi_gro_flush`` gives the held packets it completes at the end of a poll (no frame's arrival
#: completed them: ``NAPI_GRO_CB(skb)->ended_by`` stays None)
FLUSHES = frozenset({POLL_END, BUDGET_EXHAUSTED})
# L3
INET_NO_OFFLOAD = "inet_gro_receive:no_inet_offload"
INET_HDR = "inet_gro_receive:not_0x45"
INET_FRAGMENT = "inet_gro_receive:ip_is_fragment"
INET_CSUM = "inet_gro_receive:ip_fast_csum"
INET_TOT_LEN = "inet_gro_receive:tot_len_or_frag_bits"
IP_TTL_TOS_DF = "inet_gro_receive:ttl_tos_df_differ"
IP_ID = "tcp_gro_receive:ip_id"
IPV6_NO_OFFLOAD = "ipv6_gro_receive:no_inet6_offload"
IPV6_PAYLOAD_LEN = "ipv6_gro_receive:payload_len"
IPV6_TCLASS_HOPLIMIT = "ipv6_gro_receive:tclass_or_hop_limit_differ"
TRUNCATED = "skb_gro_header:short"
# outer UDP and tunnel
UDP_CSUM = "udp4_gro_receive:checksum_bad"
UDP_NO_TUNNEL_SOCKET = "udp_gro_receive:no_tunnel_socket"
UDP_ENCAP_MARK = "udp_gro_receive:encap_mark"
UDP_GATE = "udp_gro_receive:csum_cnt0_csum_valid0_not_partial"
UDP_GATE_ZERO_CSUM = "udp_gro_receive:csum_cnt0_csum_valid0_not_partial(uh.check=0)"
GENEVE_HDR = "geneve_gro_receive:version_or_oam"
TUNNEL_INNER_PROTO = "geneve_gro_receive:no_inner_offload"
#: IP in IP and GRE inside a tunnel: the tunnel protocol's gro_receive finds NAPI_GRO_CB(skb)->encap_mark set (a UDP
#: tunnel, or an IP-in-IP header, before it) and flushes (net/ipv4/af_inet.c, net/ipv6/ip6_offload.c,
#: net/ipv4/gre_offload.c)
IPIP_ENCAP_MARK = "ipip_gro_receive:encap_mark"
SIT_IP6IP6_ENCAP_MARK = "sit_ip6ip6_gro_receive:encap_mark"
IP4IP6_ENCAP_MARK = "ip4ip6_gro_receive:encap_mark"
GRE_ENCAP_MARK = "gre_gro_receive:encap_mark"
#: GRE with encap_mark clear (kernel/gre_offload.py): a version or flag other than K and C (S, routing), a protocol
#: type without a packet offload, a GRE checksum that does not verify
GRE_FLAGS = "gre_gro_receive:flags"
GRE_NO_OFFLOAD = "gre_gro_receive:no_inner_offload"
GRE_CSUM = "gre_gro_receive:checksum_bad"
#: the IP-in-IP and GRE flushes of a second encapsulation: the phys device stops there, the tunnel device (encap_mark
#: clear after decapsulation) goes on into the header inside
IP_TUNNEL_ENCAP_MARKS = (IPIP_ENCAP_MARK, SIT_IP6IP6_ENCAP_MARK, IP4IP6_ENCAP_MARK, GRE_ENCAP_MARK)
ETH_NO_OFFLOAD = "eth_gro_receive:no_packet_offload"
VLAN_NO_OFFLOAD = "vlan_gro_receive:no_packet_offload"
#: include/net/gro.h gro_recursion_inc_test in call_gro_receive(_sk): the 15th nested gro_receive call
GRO_RECURSION_LIMIT = "gro_recursion_inc_test:GRO_RECURSION_LIMIT"
# TCP
TCP_CSUM = "tcp4_gro_receive:checksum_bad"
TCP_HDR = "tcp_gro_receive:bad_doff"
TCP_FLAGS_PSH_FIN = "tcp_gro_receive:psh_or_fin"
TCP_FLAGS_URG_RST_SYN = "tcp_gro_receive:urg_rst_syn"
TCP_CWR = "tcp_gro_receive:cwr"
TCP_FLAGS_DIFFER = "tcp_gro_receive:flags_or_window_or_doff_differ"
TCP_ACK = "tcp_gro_receive:ack_seq_differs"
TCP_OPTIONS = "tcp_gro_receive:options_differ"
TCP_LEN_GT_MSS = "tcp_gro_receive:len_gt_mss"
#: the skb itself carries no payload: out_check_final's ``len < mss`` with len 0 (it goes up alone, never held)
TCP_PURE_ACK = "tcp_gro_receive:len_zero"
#: the held packet, completed by an arriving segment without payload: the compare's ``(len - 1) >= mss`` with
#: len 0 (read unsigned). The held packet may carry payload (a 1-byte keepalive or zero-window probe, a small
#: write without PSH): the reason names the segment that came next, not the skb it ended
TCP_NEXT_PURE_ACK = "tcp_gro_receive:next_len_zero"
TCP_SHORT = "tcp_gro_receive:len_lt_mss"
TCP_SEQ = "tcp_gro_receive:seq_gap"
TCP_GSO_SIZE = "tcp_gro_receive:gso_size_differs"
IP_FLUSH = "tcp_gro_receive:ip_flush"

# Flow splits: why a frame started a new skb beside a held packet of the same reported flow (outer and inner
# addresses, ports, VNI and outer checksum presence equal): the held packet's same_flow was cleared by a header
# field the report's flow key does not carry. Recorded on the new skb (NAPI_GRO_CB(skb)->split, observation only)
# at the comparison that cleared it.
SPLIT_HASH = "gro_list_prepare:rx_hash"
SPLIT_DEV = "gro_list_prepare:device"
SPLIT_VLAN = "gro_list_prepare:vlan_tci"
SPLIT_MAC = "gro_list_prepare:mac_header"
SPLIT_MD_DST = "gro_list_prepare:tunnel_metadata"
SPLIT_UDP = "udp_gro_receive:ports_or_csum_presence"
SPLIT_GRE = "gre_gro_receive:flags_protocol_or_key"
SPLIT_GRE_CSUM_WORD = "gre_gro_receive:csum_word"
SPLIT_VXLAN = "vxlan_gro_receive:flags_or_vni_word"
SPLIT_GENEVE = "geneve_gro_receive:header_or_options"
SPLIT_INNER_ETH = "eth_gro_receive:inner_mac_header"
SPLIT_DESCRIPTIONS = {
    SPLIT_HASH: "another RX hash (another GRO bucket key)",
    SPLIT_DEV: "another receiving device",
    SPLIT_VLAN: "another VLAN tag",
    SPLIT_MAC: "another Ethernet header (MAC addresses or ethertype)",
    SPLIT_MD_DST: "other tunnel metadata (outer TOS, TTL, DF, flow label or tunnel options)",
    SPLIT_UDP: "other outer UDP ports or outer checksum zero vs set",
    SPLIT_GRE: "other GRE flags, protocol or key",
    SPLIT_GRE_CSUM_WORD: "another GRE checksum word, which gre_gro_receive compares in place of the key when the "
    "checksum and key flags are both set",
    SPLIT_VXLAN: "other VXLAN flags or reserved bits",
    SPLIT_GENEVE: "other Geneve header or options",
    SPLIT_INNER_ETH: "another inner Ethernet header (MAC addresses or ethertype)",
}

# NAPI_GRO_CB(p)->l3_why bits (observation only), per header: << 0 outer (or only) header, << 4 inner header
L3_FIELDS = 1  # IPv4 TTL, TOS or DF differ
L3_ID = 2  # IPv4 ID step not accepted (fixed, or +1 per held segment)
L3_V6 = 4  # IPv6 traffic class or hop limit differ
L3_INNER_SHIFT = 4
L3_ID_BITS = L3_ID | (L3_ID << L3_INNER_SHIFT)
_L3_FIELD_NAMES = ((L3_FIELDS, "ttl_tos_df"), (L3_V6, "tclass_hop_limit"), (L3_ID, "ip_id"))


def l3_reason(bits: int, encap: int, default: str = IP_FLUSH, fn: str = "tcp_gro_receive") -> str:
    """The reason ``fn:…`` for the IP header conditions in ``bits`` (``L3_*`` per header).

    ``encap``: the packet is encapsulated (the headers are told apart as outer and inner). Returns ``default``
    when no bit is set (an IP verdict the bits do not name).
    """
    parts = []
    for shift, prefix in ((0, "outer_"), (L3_INNER_SHIFT, "inner_")):
        b = (bits >> shift) & 0xF
        for bit, name in _L3_FIELD_NAMES:
            if b & bit:
                parts.append((prefix if encap else "") + name)
    return f"{fn}:" + "+".join(parts) if parts else default


def skb_flush_reason(cb: NapiGroCb, why: str) -> None:
    """Record ``why`` as the reason the skb itself is flushed (``NAPI_GRO_CB(skb)->flush``), unless a flush set
    earlier in this GRO pass named one: dev_gro_receive's (skb_is_gso, skb_has_frag_list), then each header's
    gro_receive from the outside in. The first flush set is the skb's reason: the ones after it could not change
    that the skb goes up unmerged (a GSO skb before v6.1 ending in PSH is flushed for skb_is_gso, not the PSH).
    One exception: udp_gro_receive's checksum gate is named whenever it refuses (udp_offload.py), as the verdict
    counts the gate's refusals by their reason."""
    if not cb.flush:
        cb.why = why


def p_flush_reason(pcb: NapiGroCb, encap: int) -> str:
    """Why a held packet's own ``flush`` (set up to v6.9 by ``inet_gro_receive``/``ipv6_gro_receive``) ends it.

    TTL/TOS/DF or traffic class/hop limit differences name the header (``l3_why``); other flushes keep the
    reason the L3 function recorded; anything else is IP_FLUSH.
    """
    why = pcb.why
    if why == TCP_NEXT_FLUSHING:  # the arriving skb's own flush, folded into p's (inet_gro_receive)
        return why
    if why == IP_TTL_TOS_DF or why == IPV6_TCLASS_HOPLIMIT:
        fn = why.partition(":")[0]
        return l3_reason(pcb.l3_why & ~L3_ID_BITS, encap, why, fn)
    return why if why and why.startswith(("inet", "ipv6")) else IP_FLUSH


def id_step_only(why: str | None) -> bool:
    """True for an ``l3_reason`` made only of IP ID conditions (which a sequence gap explains)."""
    if not why or not why.startswith("tcp_gro_receive:") or "ip_id" not in why:
        return False
    return all(part.endswith("ip_id") for part in why.partition(":")[2].split("+"))


#: the IPv4 ID rule of every modelled kernel (inet_gro_receive's flush_id and tcp_gro_receive up to v6.9,
#: inet_gro_flush from 4b0ebbca3e16; f095a358faf2 for a fixed ID without DF), which the ID reasons' words state
#: where no kernel is named (a description names a condition; report/verdict/words.py ``describe_for`` gives the
#: rule of the kernel a report names)
ID_RULE = (
    "(GRO takes a fixed ID, with DF set before v6.18, or one stepping +1 per held segment; before v6.10 only a "
    "fixed one after a held DF packet not yet seen incrementing (from v6.1 such as a GSO skb that arrived merged), "
    "or +1 from one of one segment; from v6.10 a fixed one only where a held packet of one segment met the same "
    "ID; before v6.18 the ID of an outer header with DF is not read; from v6.10 to v6.17 one ip_fixedid bit serves "
    "both headers: a fixed inner ID holds an outer ID without DF to the held packet's, once it has stepped +1 to "
    "the second segment; from v6.18 each header has its own)"
)
DESCRIPTIONS = {
    NETIF_ELIDE_GRO: "GRO elided on the device (GRO off or generic XDP attached)",
    GRO_CELLS_NETIF_RX: "GRO off on the tunnel device: gro_cells_receive passed it to netif_rx, no GRO",
    NO_PACKET_OFFLOAD: "no GRO handler for the ethertype",
    # an skb the phys device's GRO merged: dev_gro_receive sets NAPI_GRO_CB(skb)->flush (up to v6.0 for any GSO skb,
    # from 5eddb24901ee for one GRO does not take: not TCP, or SKB_GSO_DODGY from 7871f54e3dee; and for one chained
    # on a frag_list), so it is neither held nor merged into: GRO_NORMAL hands it up as it arrived, a normal pass
    # through, not a failure (net/core/gro.c dev_gro_receive, "goto normal")
    GSO_SKB: "arrived merged already (a GSO skb from the phys device's GRO); dev_gro_receive passes it up as it is",
    FRAG_LIST: "arrived merged already, chained on a frag_list by the phys device's GRO; dev_gro_receive passes it "
    "up as it is",
    MAX_GRO_SKBS: "bucket full: oldest held packet evicted (MAX_GRO_SKBS 8)",
    POLL_END: "poll ended below budget: napi_complete_done flushed GRO",
    BUDGET_EXHAUSTED: "poll used its whole budget: napi_poll flushed GRO",
    TCP_NEXT_FLUSHING: "the next skb of its flow was itself flushed (its own reason is listed for it)",
    SKB_GRO_RECEIVE_E2BIG: "merge would reach the size limit (64 KiB; from v5.17 the device's gro_max_size, for IPv4 "
    "from v6.3 gro_ipv4_max_size)",
    INET_NO_OFFLOAD: "IPv4 protocol without GRO handler",
    INET_HDR: "IPv4 header with options (version/IHL byte not 0x45)",
    INET_FRAGMENT: "IPv4 fragment",
    INET_CSUM: "IPv4 header checksum bad",
    INET_TOT_LEN: "IPv4 total length differs from the bytes present (padding) or reserved frag bit",
    IP_TTL_TOS_DF: "IPv4 TTL, TOS or DF differs from the held packet",
    IP_ID: "IPv4 ID step not accepted " + ID_RULE,
    IPV6_NO_OFFLOAD: "IPv6 next header without GRO handler",
    IPV6_PAYLOAD_LEN: "IPv6 payload length differs from the bytes present",
    IPV6_TCLASS_HOPLIMIT: "IPv6 traffic class or hop limit differs",
    TRUNCATED: "header shorter than the parser needs",
    UDP_CSUM: "UDP checksum bad",
    UDP_NO_TUNNEL_SOCKET: "UDP without tunnel socket (not VXLAN/Geneve)",
    UDP_ENCAP_MARK: "UDP tunnel inside a tunnel",
    # a non-zero checksum is validated (or converted: csum_valid 1) unless GRO already flushes the skb
    # (udp4/6_gro_receive), so only such a skb under CHECKSUM_NONE meets the gate this way
    UDP_GATE: "udp_gro_receive refused: not CHECKSUM_PARTIAL, csum_cnt 0, csum_valid 0 (with a non-zero outer UDP "
    "checksum only a frame GRO was already flushing, whose checksum udp4/6_gro_receive then skip, gets here: that "
    "flush sends it up unmerged in any case)",
    UDP_GATE_ZERO_CSUM: "udp_gro_receive refused: outer checksum 0, csum_cnt 0, csum_valid 0 (fixed by 89e5c58fc1e2)",
    GENEVE_HDR: "Geneve version non-zero or OAM",
    TUNNEL_INNER_PROTO: "tunnel inner protocol without GRO handler",
    IPIP_ENCAP_MARK: "IPv4 in IPv4 (IPIP) inside a tunnel: ipip_gro_receive flushes a second encapsulation",
    SIT_IP6IP6_ENCAP_MARK: "IPv6 in IP (SIT or IP6IP6) inside a tunnel: sit_ip6ip6_gro_receive flushes a second "
    "encapsulation",
    IP4IP6_ENCAP_MARK: "IPv4 in IPv6 inside a tunnel: ip4ip6_gro_receive flushes a second encapsulation",
    GRE_ENCAP_MARK: "GRE inside a tunnel: gre_gro_receive flushes a second encapsulation",
    GRE_FLAGS: "GRE version not 0 or a flag other than key and checksum (sequence, routing): gre_gro_receive "
    "merges none",
    GRE_CSUM: "GRE checksum bad",
    ETH_NO_OFFLOAD: "inner ethertype without GRO handler",
    VLAN_NO_OFFLOAD: "protocol inside an inner VLAN tag without GRO handler",
    GRO_RECURSION_LIMIT: "headers nested too deep: the 15th nested gro_receive call (GRO_RECURSION_LIMIT) flushed the skb instead",
    TCP_CSUM: "inner TCP checksum bad",
    TCP_HDR: "TCP data offset below 20 bytes",
    TCP_FLAGS_PSH_FIN: "PSH or FIN ends the aggregate",
    TCP_FLAGS_URG_RST_SYN: "URG, RST or SYN",
    TCP_CWR: "CWR set",
    TCP_FLAGS_DIFFER: "TCP flags, window or data offset differ",
    TCP_ACK: "ack number differs",
    TCP_OPTIONS: "TCP option bytes differ (e.g. timestamp)",
    TCP_LEN_GT_MSS: "segment longer than the aggregate's mss",
    TCP_PURE_ACK: "no payload (pure ACK)",
    TCP_NEXT_PURE_ACK: "a segment without payload (pure ACK) came next",
    TCP_SHORT: "segment shorter than mss ends the aggregate",
    TCP_SEQ: "TCP sequence does not continue the held packet (gap or overlap: a segment in between is missing here, "
    "lost, reordered or gone up alone)",
    TCP_GSO_SIZE: "GSO skb with a different gso_size",
    IP_FLUSH: "IP header fields differ (TTL/TOS/DF/ID, traffic class, hop limit)",
}

_L3_DESCRIPTIONS = {
    "ttl_tos_df": "IPv4 TTL, TOS or DF differs",
    "tclass_hop_limit": "IPv6 traffic class or hop limit differs",
    "ip_id": "IPv4 ID step not accepted " + ID_RULE,
}


def describe(why: str) -> str:
    """A person's description of an end reason (``DESCRIPTIONS``, composed for ``handler_miss`` (``MISSED_WORDS``)
    and ``l3_reason`` names) or a flow split (``SPLIT_DESCRIPTIONS``)."""
    if why in DESCRIPTIONS:
        return DESCRIPTIONS[why]
    if why in SPLIT_DESCRIPTIONS:
        return SPLIT_DESCRIPTIONS[why]
    base, value = split(why)  # a handler look-up's miss, with the value it missed
    if value is not None and base in MISSED_WORDS:
        return MISSED_WORDS[base].format(value)
    fn, _, cond = why.partition(":")
    if cond:
        out = []
        for part in cond.split("+"):
            hdr, _, field = part.partition("_") if part.startswith(("outer_", "inner_")) else ("", "", part)
            d = _L3_DESCRIPTIONS.get(field)
            if d is None:
                return why
            out.append(f"{d} in the {hdr} header" if hdr else d)
        return "; ".join(out)
    return why


#: reasons an IP header sets on the skb itself, in their ``inner_`` form for the inner header of an encapsulated
#: packet (NAPI_GRO_CB(skb)->encap_mark set when the header is parsed); the plain form is the outer or only header
_HEADER_REASONS = (
    INET_NO_OFFLOAD,
    INET_HDR,
    INET_FRAGMENT,
    INET_CSUM,
    INET_TOT_LEN,
    IPV6_NO_OFFLOAD,
    IPV6_PAYLOAD_LEN,
    # the inner UDP header of a tunnelled packet (inner DNS, say) finds no tunnel socket either, and its checksum
    # is validated as the outer one is (udp4_gro_receive)
    UDP_NO_TUNNEL_SOCKET,
    UDP_CSUM,
)
INNER = {r: r.replace(":", ":inner_", 1) for r in _HEADER_REASONS}
DESCRIPTIONS.update({INNER[r]: f"{DESCRIPTIONS[r]} (inner header)" for r in _HEADER_REASONS})
#: the inner IPv4 header checksum that ``IP_ECN_set_ect1`` wrote wrong at decapsulation (kernel/ip_tunnel_core.py:
#: an outer ECT(1) over an inner ECT(0) before 2867e1eac610), not the capture's
INET_CSUM_ECT1_MARK = INNER[INET_CSUM] + "(IP_ECN_set_ect1)"
DESCRIPTIONS[INET_CSUM_ECT1_MARK] = (
    "IPv4 header checksum bad (inner header): the kernel's own ECT(1) mark at decapsulation wrote it, as "
    "IP_ECN_set_ect1 did before 2867e1eac610 (v5.10-rc7); ip_rcv drops such a packet after the tunnel device"
)
#: a handler look-up's miss (kernel/handler_miss.py: the reason carries the value) → its words, ``{}`` the value named
MISSED_WORDS = {
    NO_PACKET_OFFLOAD: "no GRO handler for ethertype {}",
    ETH_NO_OFFLOAD: "inner ethertype {} without GRO handler",
    VLAN_NO_OFFLOAD: "protocol {} inside an inner VLAN tag without GRO handler",
    TUNNEL_INNER_PROTO: "tunnel inner protocol {} without GRO handler",
    GRE_NO_OFFLOAD: "GRE protocol type {} without GRO handler",
    INET_NO_OFFLOAD: "IPv4 protocol {} without GRO handler",
    IPV6_NO_OFFLOAD: "IPv6 next header {} without GRO handler",
}
MISSED_WORDS.update(
    {INNER[r]: f"{MISSED_WORDS[r]} (inner header)" for r in (INET_NO_OFFLOAD, IPV6_NO_OFFLOAD)}
)


def at_header(why: str, encap_mark: int) -> str:
    """``why`` as recorded at an IP (or UDP) header: the ``inner_`` form when the packet is encapsulated
    (``encap_mark``)."""
    return INNER[why] if encap_mark else why


#: the end reasons in the order the receive path tests them for one frame (gro_cells_receive/dev_gro_receive,
#: then each header's gro_receive from the outside in: outer IP, outer UDP and the tunnel header, inner Ethernet and
#: IP, TCP — tcp_gro_receive's compares with the held packet in net/ipv4/tcp_offload.c's order, then skb_gro_receive,
#: then out_check_final's len < mss and its flags), then what ends held packets after the frame (gro_flush_oldest), then the poll's flushes
#: (napi_poll's at a used-up budget, napi_complete_done's below it). ``check_rank`` reads it.
CHECK_ORDER = (
    GRO_CELLS_NETIF_RX,
    NETIF_ELIDE_GRO,
    NO_PACKET_OFFLOAD,
    GSO_SKB,
    FRAG_LIST,
    TRUNCATED,
    INET_NO_OFFLOAD,
    INET_HDR,
    INET_FRAGMENT,
    INET_CSUM,
    INET_TOT_LEN,
    IP_TTL_TOS_DF,
    IPV6_NO_OFFLOAD,
    IPV6_PAYLOAD_LEN,
    IPV6_TCLASS_HOPLIMIT,
    UDP_CSUM,
    UDP_ENCAP_MARK,
    UDP_GATE,
    UDP_GATE_ZERO_CSUM,
    UDP_NO_TUNNEL_SOCKET,
    GENEVE_HDR,
    TUNNEL_INNER_PROTO,
    ETH_NO_OFFLOAD,
    VLAN_NO_OFFLOAD,
    GRO_RECURSION_LIMIT,
    *(INNER[r] for r in _HEADER_REASONS),
    INET_CSUM_ECT1_MARK,
    # the inner IP header's protocol handler (inet_gro_receive/ipv6_gro_receive call it after their own tests)
    IPIP_ENCAP_MARK,
    SIT_IP6IP6_ENCAP_MARK,
    IP4IP6_ENCAP_MARK,
    GRE_ENCAP_MARK,
    GRE_FLAGS,
    GRE_NO_OFFLOAD,
    GRE_CSUM,
    TCP_CSUM,
    TCP_HDR,
    TCP_CWR,
    TCP_FLAGS_DIFFER,
    TCP_ACK,
    TCP_OPTIONS,
    IP_FLUSH,
    IP_ID,
    TCP_GSO_SIZE,
    TCP_LEN_GT_MSS,
    TCP_NEXT_PURE_ACK,
    TCP_SEQ,
    SKB_GRO_RECEIVE_E2BIG,
    TCP_NEXT_FLUSHING,
    # out_check_final: len < mss, then the flags
    TCP_PURE_ACK,
    TCP_SHORT,
    TCP_FLAGS_URG_RST_SYN,
    TCP_FLAGS_PSH_FIN,
    MAX_GRO_SKBS,
    BUDGET_EXHAUSTED,
    POLL_END,
)
_CHECK_RANK = {why: i for i, why in enumerate(CHECK_ORDER)}
#: an IP header condition named by ``l3_reason`` (``tcp_gro_receive:outer_ip_id``, ``inet_gro_receive:inner_ttl_tos_df``)
#: ranks where its function compares the held packet's header
_L3_RANK = {
    fn: _CHECK_RANK[r]
    for fn, r in (
        ("tcp_gro_receive", IP_FLUSH),
        ("inet_gro_receive", IP_TTL_TOS_DF),
        ("ipv6_gro_receive", IPV6_TCLASS_HOPLIMIT),
    )
}
_STACK_RANK = {why: i for i, why in enumerate(STACK_DROPS)}
#: the flow splits in the order gro_list_prepare, then each header's gro_receive, compares them
SPLIT_ORDER = (
    SPLIT_HASH,
    SPLIT_DEV,
    SPLIT_VLAN,
    SPLIT_MAC,
    SPLIT_MD_DST,
    SPLIT_GRE,
    SPLIT_GRE_CSUM_WORD,
    SPLIT_UDP,
    SPLIT_VXLAN,
    SPLIT_GENEVE,
    SPLIT_INNER_ETH,
)
_SPLIT_RANK = {why: i for i, why in enumerate(SPLIT_ORDER)}


def check_rank(why: str) -> int:
    """Where the kernel tests end reason ``why`` for a frame (``CHECK_ORDER``: lower first): what a list of reasons
    that end as many skbs each is ordered by, so that a frame's own condition comes before the poll's flush of what
    nothing else ended. An ``l3_reason`` name ranks at its function's compare of the held packet's IP header; a
    stack drop (``STACK_DROPS``) after every GRO reason, in the receive path's order, then the flow splits
    (``SPLIT_ORDER``); any other name just before the poll's flushes. A ``handler_miss`` name (the value a look-up
    missed) ranks as its reason."""
    rank = _CHECK_RANK.get(split(why)[0])
    if rank is not None:
        return rank
    fn, _, cond = why.partition(":")
    if (
        cond
        and fn in _L3_RANK
        and all(
            p.removeprefix("outer_").removeprefix("inner_") in dict(_L3_FIELD_NAMES).values()
            for p in cond.split("+")
        )
    ):
        return _L3_RANK[fn]
    if why in _STACK_RANK:
        return len(CHECK_ORDER) + _STACK_RANK[why]
    if why in _SPLIT_RANK:
        return len(CHECK_ORDER) + len(STACK_DROPS) + _SPLIT_RANK[why]
    return _CHECK_RANK[MAX_GRO_SKBS]
