"""What stops the inner packets of a tunnelled flow that are not TCP segments (``FlowVerdict.costless_why`` is
``"not_tcp"``) after the fix: the end reasons of the phys skbs of those flows in the kernel with the fix, as GRO
recorded them at the inner header. eth_gro_receive (net/ethernet/eth.c) flushes an inner ethertype for which
gro_find_receive_by_type finds no handler (ARP …; the reason names the ethertype: kernel/handler_miss.py);
vlan_gro_receive (net/8021q/vlan_core.c) flushes the protocol behind an inner tag alike; inet_gro_receive
(net/ipv4/af_inet.c) flushes a fragment or a protocol without inet_offloads entry; udp_gro_receive
(net/ipv4/udp_offload.c) flushes a UDP datagram without a tunnel socket. So the sentence names the function that
stopped them, not a list of guesses.
"""

from __future__ import annotations

from collections import Counter

from ...kernel.reasons import IP_TUNNEL_ENCAP_MARKS
from .facts import FlowVerdict, KernelFacts, break_reasons
from .words import COSTLESS_WORDS

#: the reason where no kernel with the fix ran for those flows (the kernel backend runs no counterfactual): what
#: stops them is not measured, so no function is named
NOT_TCP_UNMEASURED = COSTLESS_WORDS["not_tcp"][1]


def not_tcp_reasons(fv: FlowVerdict, k: KernelFacts) -> Counter:
    """End reason → phys skbs of flow ``fv`` in kernel ``k`` with the fix (``FlowVerdict.with_fix``;
    ``break_reasons``: every skb's where none merged); empty where no kernel with the fix ran."""
    side = fv.with_fix(k)
    return break_reasons(side) if side is not None else Counter()


def not_tcp_text(reasons: str | None) -> str:
    """``COSTLESS_WORDS["not_tcp"]``'s reason: "after the fix GRO stops them before tcp_gro_receive: ``reasons``, so no
    kernel merges them", ``reasons`` a ``reason_list`` of ``not_tcp_reasons`` (e.g. "inner ethertype ARP (0x0806)
    without GRO handler [eth_gro_receive:no_packet_offload(type=0x0806)] ×5"); ``NOT_TCP_UNMEASURED`` where None or
    empty. Where an IP-in-IP or GRE header inside the tunnel stopped some of them (``IP_TUNNEL_ENCAP_MARKS``) only
    the phys device is said not to merge them, of every flow listed: after decapsulation the tunnel device's GRO
    parses such a header (its encap_mark is clear), and whether it merges them there (one IP-in-IP header: yes;
    two: no, the second flushes) is what the tunnel stage's own counts and end reasons show, not this sentence
    (breaker's finding: "may merge them" was said of IPIP-in-IPIP, which the tunnel device flushes, and of ICMP
    listed beside it)."""
    if not reasons:
        return NOT_TCP_UNMEASURED
    if any(f"[{r}]" in reasons for r in IP_TUNNEL_ENCAP_MARKS):
        return (
            f"after the fix GRO stops them before tcp_gro_receive: {reasons}, so the phys device merges them in no "
            "kernel (what the tunnel device does after decapsulation is in its own counts)"
        )
    return f"after the fix GRO stops them before tcp_gro_receive: {reasons}, so no kernel merges them"
