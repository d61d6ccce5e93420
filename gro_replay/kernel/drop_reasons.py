"""Stack drop reasons: the outcome ``Kernel.netif_receive_skb_core`` reports for an skb a GRO stage delivered and the
stack then dropped, before the tunnel device (IP and UDP input, the VXLAN and Geneve receive paths, decapsulation,
the gro_cells queue). Each value is ``function:condition`` after the kernel function and test that drops the skb,
modelled on ``SKB_DROP_REASON_*`` (include/net/dropreason-core.h), as the GRO reasons of kernel/reasons.py are;
``STACK_DROPS`` lists them in the receive path's order (reasons.check_rank ranks them after every GRO reason).
"""

from __future__ import annotations

# Stack drops between the two GRO stages (the outcome ``Kernel.netif_receive_skb_core`` reports for an skb the phys
# device delivered): IP input, UDP input, the VXLAN receive path and decapsulation. Kernel: net/ipv4/ip_input.c,
# net/ipv6/ip6_input.c, net/ipv4/udp.c, net/ipv6/udp.c, drivers/net/vxlan/vxlan_core.c, drivers/net/geneve.c,
# include/net/inet_ecn.h, net/core/gro_cells.c.
#: ``ip_rcv_core``: fewer than 20 bytes of IPv4 header (InHdrErrors)
IP_RCV_SHORT = "ip_rcv:short"
#: ``ip_rcv_core``: version not 4, IHL below 5 or beyond the data (InHdrErrors)
IP_RCV_BAD_HEADER = "ip_rcv:bad_header"
#: ``ip_rcv_core``: IPv4 header checksum wrong (InCsumErrors)
IP_RCV_CSUM_ERROR = "ip_rcv:csum_error"
#: ``ip_rcv_core``: total length beyond the frame or below the header (InTruncatedPkts)
IP_RCV_BAD_LENGTH = "ip_rcv:bad_length"
#: ``ip_local_deliver``: a fragment (reassembly is not modelled)
IP_FRAGMENT = "ip_local_deliver:fragment_not_reassembled"
#: an outer IP protocol other than UDP (no tunnel socket)
NOT_UDP = "ip_local_deliver:not_udp"
#: ``ipv6_rcv``: fewer than 40 bytes or version not 6 (Ip6InHdrErrors)
IPV6_RCV_BAD_HEADER = "ipv6_rcv:bad_header"
#: ``ipv6_rcv``: payload length beyond the frame (Ip6InTruncatedPkts)
IPV6_RCV_BAD_LENGTH = "ipv6_rcv:bad_length"
#: ``ip6_input_finish``: a fragment header (reassembly is not modelled)
IP6_FRAGMENT = "ip6_input:fragment_not_reassembled"
#: ``ip6_input_finish``: an extension header that cannot be walked
IP6_BAD_EXTHDR = "ip6_input:bad_exthdr"
#: ``__netif_receive_skb_core``: an outer ethertype other than IPv4/IPv6
NOT_IP = "netif_receive_skb:not_ip"
#: ``__netif_receive_skb_core`` (``check_vlan_id``): an outer VLAN tag of VID ≠ 0 that no VLAN device takes, as on a
#: kernel without CONFIG_VLAN_8021Q: PACKET_OTHERHOST, which ``ip_rcv_core`` / ``ip6_rcv_core`` drop
#: (SKB_DROP_REASON_OTHERHOST; the device's rx_otherhost_dropped)
VLAN_OTHERHOST = "netif_receive_skb:vlan_otherhost"
#: ``__udp4_lib_rcv``: fewer than 8 bytes of UDP header
UDP_SHORT = "udp_rcv:short"
#: ``__udp4_lib_rcv``: UDP length beyond the packet or below 8
UDP_SHORT_PACKET = "udp_rcv:short_packet"
#: ``udp4_csum_init`` / ``udp_queue_rcv_one_skb``: the UDP checksum does not verify (UdpInCsumErrors)
UDP_CSUM_ERROR = "udp_rcv:csum_error"
#: no socket on the destination port (UdpNoPorts)
UDP_NO_SOCKET = "udp_rcv:no_socket"
#: ``__udp6_lib_rcv``: checksum 0 on a socket without ``no_check6_rx`` (RFC 6936)
UDP6_CSUM_ZERO = "udp6_csum_zero_error"
#: ``vxlan_rcv``: UDP + VXLAN header + inner Ethernet header not all present
VXLAN_SHORT = "vxlan_rcv:short"
#: ``vxlan_rcv``: the I flag (VXLAN_HF_VNI) clear
VXLAN_NO_VNI_FLAG = "vxlan_rcv:no_vni_flag"
#: ``vxlan_rcv``: an unprocessed flag or reserved bit set
VXLAN_RESERVED_BITS = "vxlan_rcv:reserved_bits"
#: ``vxlan_ecn_decapsulate`` (``INET_ECN_decapsulate`` returned 2: CE outside a not-ECT inner packet): rx_frame_errors, rx_errors
VXLAN_ECN_DROP = "vxlan_ecn_decapsulate:ce_on_not_ect"
#: ``geneve_rx`` (``IP_ECN_decapsulate`` / ``IP6_ECN_decapsulate`` returned 2: CE outside a not-ECT inner packet): rx_frame_errors, rx_errors
GENEVE_ECN_DROP = "geneve_rx:ce_on_not_ect"
#: ``gro_cells_receive``: the cell's queue holds netdev_max_backlog skbs
GRO_CELLS_BACKLOG_FULL = "gro_cells_receive:backlog_full"

# Stack drops in the Geneve receive path (drivers/net/geneve.c ``geneve_udp_encap_recv`` → ``geneve_rx``): the
# outcome ``Kernel.netif_receive_skb_core`` reports for the skb (``stack`` / ``stack_frames`` in the report; one skb,
# one kernel counter increment, whatever the number of segments GRO merged into it). The kernel frees each with a
# plain ``kfree_skb(skb)`` at the functions' ``drop:`` label in every modelled release (v4.19-era text, the v6.8
# text and the 2026 net-next text read in drivers/net/geneve.c): the kfree_skb tracepoint reports
# SKB_DROP_REASON_NOT_SPECIFIED from v5.17 (c504e5c2f964 made kfree_skb a wrapper of kfree_skb_reason) and no reason
# before; the names below say which test dropped it, and the device counters it bumped are named in
# report/verdict/words.py ``LOSSES``.
#: ``pskb_may_pull(skb, GENEVE_BASE_HLEN)`` (UDP + 8-byte Geneve header) fails, or ``iptunnel_pull_header`` cannot
#: pull UDP + Geneve header + options (that one: rx_dropped)
GENEVE_SHORT = "geneve_udp_encap_recv:short"
#: ``geneveh->ver != GENEVE_VER`` (no counter)
GENEVE_VERSION = "geneve_udp_encap_recv:version"
#: ``proto_type`` not ETH_P_TEB on a device without ``inner_proto_inherit`` (the only device modelled)
GENEVE_INNER_PROTO = "geneve_udp_encap_recv:inner_proto"
#: ``geneve_rx``: C bit (``gnvh->critical``) set and the device not in collect-metadata mode
#: (``ip_tunnel_collect_metadata() || gs->collect_md`` false): rx_frame_errors and rx_errors
GENEVE_CRITICAL = "geneve_rx:critical_options"
#: ``geneve_rx``: no inner Ethernet header after the options for ``eth_type_trans`` (the model's own bound: the
#: kernel has no test of its own here)
GENEVE_INNER_SHORT = "geneve_rx:short"

# The kernel backend's (validate.py ``kernel_result``): the running kernel's phys device delivered the skb of
# frames to a tunnel port and no tunnel device delivered any of them. Its trace (net:netif_receive_skb) shows
# deliveries, not drops, so which of the drops above it was is not known there.
#: delivered by the phys veth, never by a tunnel device: dropped on the way, where not observed
NOT_AT_TUNNEL_DEVICE = "kernel_backend:not_at_tunnel_device"

#: every stack drop reason above, in the order of the receive path
STACK_DROPS = (
    NOT_IP,
    VLAN_OTHERHOST,
    IP_RCV_SHORT,
    IP_RCV_BAD_HEADER,
    IP_RCV_CSUM_ERROR,
    IP_RCV_BAD_LENGTH,
    IP_FRAGMENT,
    IPV6_RCV_BAD_HEADER,
    IPV6_RCV_BAD_LENGTH,
    IP6_FRAGMENT,
    IP6_BAD_EXTHDR,
    NOT_UDP,
    UDP_SHORT,
    UDP_SHORT_PACKET,
    UDP_CSUM_ERROR,
    UDP_NO_SOCKET,
    UDP6_CSUM_ZERO,
    VXLAN_SHORT,
    VXLAN_NO_VNI_FLAG,
    VXLAN_RESERVED_BITS,
    VXLAN_ECN_DROP,
    GENEVE_SHORT,
    GENEVE_VERSION,
    GENEVE_INNER_PROTO,
    GENEVE_CRITICAL,
    GENEVE_INNER_SHORT,
    GENEVE_ECN_DROP,
    GRO_CELLS_BACKLOG_FULL,
    NOT_AT_TUNNEL_DEVICE,
)


#: the outcomes of traffic that is no UDP tunnel's: handed to its own protocol's handler (TCP, GRE, IP in IP, ICMP;
#: a protocol other than IP) or to a UDP port without a tunnel socket, where the host may have a socket of its own;
#: the replay follows none of it — no drop it could name (report/explain.py says them apart)
NOT_TUNNEL_TRAFFIC = frozenset({NOT_UDP, NOT_IP, UDP_NO_SOCKET})
