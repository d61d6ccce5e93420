"""The value a GRO handler look-up missed, carried by the end reason, and its name.

Where a gro_receive function looks up the next header's handler and finds none, it flushes the skb (dev_gro_receive
passes it up without GRO). By ethertype: dev_gro_receive (net/core/dev.c, net/core/gro.c from v5.19: its walk of
``offload_base`` for ``type = skb->protocol``), eth_gro_receive (net/ethernet/eth.c, ``type = eh->h_proto``),
vlan_gro_receive (net/8021q/vlan_core.c, ``type = vhdr->h_vlan_encapsulated_proto``), geneve_gro_receive
(drivers/net/geneve.c, ``type = gh->proto_type``), each ``gro_find_receive_by_type(type)`` returning NULL; by IP
protocol number: inet_gro_receive (net/ipv4/af_inet.c, ``inet_offloads[iph->protocol]``) and ipv6_gro_receive
(net/ipv6/ip6_offload.c, ``inet6_offloads[proto]`` after the extension headers). The reason carries the value as
the kernel's variable, ``function:condition(type=0x0806)`` or ``(proto=1)`` (kernel/reasons.py ``MISSED_WORDS``
words it), so that what was not merged is named: ARP is neither an IPv4 fragment nor any inner ethertype. Names
come from dpkt's ``ETH_TYPE_*`` and ``IP_PROTO_*`` constants, read on the first look-up (``import dpkt`` loads every
protocol module, ~0.08 CPU s); the value alone where dpkt has no name.
"""

from __future__ import annotations

import importlib
import re
from functools import cache

_MISSED = re.compile(r"^(.+)\((type=0x[0-9a-f]{4}|proto=[0-9]{1,3})\)$")


_NO_NAMES = ("ETH_TYPE_UNKNOWN", "IP_PROTO_IP")


@cache
def _names(module: str, prefix: str) -> dict[int, str]:
    """Value → name of module ``module``'s ``prefix*`` int constants; the first defined wins (dpkt repeats values:
    IP_PROTO_HOPOPTS/IP_PROTO_IP); dpkt.ethernet's ETH_TYPE_UNKNOWN (0) and dpkt.ip's IP_PROTO_IP (0, "dummy for
    IP") are no names: 0 is HOPOPTS, IPv6 Hop-by-Hop Option, in IANA's protocol numbers."""
    names: dict[int, str] = {}
    for name, value in vars(importlib.import_module(module)).items():
        if name.startswith(prefix) and isinstance(value, int) and name not in _NO_NAMES:
            names.setdefault(value, name[len(prefix) :])
    return names


def ethertype_name(value: int) -> str:
    """Ethertype ``value`` (0..0xffff) as "ARP (0x0806)" (dpkt.ethernet's name), or "0x88b5" where it has none."""
    name = _names("dpkt.ethernet", "ETH_TYPE_").get(value)
    return f"{name} (0x{value:04x})" if name else f"0x{value:04x}"


def proto_name(value: int) -> str:
    """IP protocol number ``value`` (0..255) as "ICMP (1)" (dpkt.ip's name), or "143" where it has none."""
    name = _names("dpkt.ip", "IP_PROTO_").get(value)
    return f"{name} ({value})" if name else str(value)


def missed_type(why: str, value: int) -> str:
    """End reason ``why`` with the ethertype ``value`` its look-up missed: ``why(type=0x0806)``."""
    return f"{why}(type=0x{value:04x})"


def missed_proto(why: str, value: int) -> str:
    """End reason ``why`` with the IP protocol number ``value`` its look-up missed: ``why(proto=1)``."""
    return f"{why}(proto={value})"


def split(why: str) -> tuple[str, str | None]:
    """``(reason, "ARP (0x0806)")`` for a ``missed_type``/``missed_proto`` reason, the value named
    (``ethertype_name``/``proto_name``); ``(why, None)`` for any other."""
    m = _MISSED.match(why)
    if m is None:
        return why, None
    kind, _, value = m.group(2).partition("=")
    return m.group(1), ethertype_name(int(value, 16)) if kind == "type" else proto_name(int(value))
