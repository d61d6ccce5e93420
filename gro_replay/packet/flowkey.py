"""The name of a flow in the report: ``FlowKey`` (its label and JSON form) and the address:port form.

The decoder (packet/decode.py) makes one key per flow from the headers it reads; the simulation never matches flows
through it.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

#: the name of the kernel backend's flow of the delivered skbs no run of one flow's frames matches (validate.py
#: ``kernel_result``): its key's ``outer_src``, and its whole label
UNMATCHED = "(unmatched)"


@dataclass(frozen=True, slots=True)
class FlowKey:
    """Names a flow for the report: outer addresses/ports, tunnel kind and VNI, inner addresses/ports/protocol.

    Addresses are text; ports 0 where absent. The simulation never matches flows through this key.
    ``tunnel_sig``: the tunnel header bytes the decoder keys a flow by besides the fields above (VXLAN: the 8-byte
    header, flags word and VNI; Geneve: the VNI word with its reserved byte; b"" otherwise), so that two keys are
    equal exactly when their frames carry the same headers (a key that came back as a new flow). It is not printed:
    the flags word of a VXLAN-GBP flow is named where it tells two flows apart (report/verdict/facts.py).
    ``inner_ethertype``: the inner frame's network protocol, after its VLAN tags if any; ``inner_vlan``: the inner
    frame's 802.1Q/802.1ad tags as ``(TPID, TCI)`` pairs, outermost first (``()`` untagged): the kernel keeps
    frames with other tags apart (``compare_vlan_header``: TCI, PCP and DEI included), so the key does too.
    """

    outer_src: str
    outer_dst: str
    outer_sport: int
    outer_dport: int
    tunnel: str
    vni: int
    inner_src: str
    inner_dst: str
    inner_proto: int
    inner_sport: int
    inner_dport: int
    outer_csum_zero: bool
    inner_ethertype: int = 0
    tunnel_sig: bytes = b""
    inner_vlan: tuple[tuple[int, int], ...] = ()

    def label(self) -> str:
        """One-line description, e.g. ``10.0.0.1:49152→10.0.0.2:4789 vxlan vni 100 192.168.1.1:40000→… tcp``; the
        inner VLAN tags, if any, before the inner packet (``… | vlan 100: 192.168.1.1:40000→… tcp``).

        IPv6 endpoints are bracketed (``[fd00::1]:49152``), the form ``explain --flow`` accepts.
        """
        ep = endpoint
        if self.outer_src == UNMATCHED:
            return UNMATCHED
        if not self.tunnel:
            # not VXLAN/Geneve (IP in IP and GRE included): named by its ethertype when not IP (packet/decode.py),
            # else with its IP protocol, which tells flows between the same addresses apart (the decoder's key)
            if not self.outer_dst:
                return f"{self.outer_src} (not VXLAN/Geneve)"
            src, dst = self.outer_src, self.outer_dst
            if self.outer_sport or self.outer_dport:
                src, dst = ep(src, self.outer_sport), ep(dst, self.outer_dport)
            return f"{src}→{dst} {proto_text(self.inner_proto)} (not VXLAN/Geneve)"
        proto = proto_text(self.inner_proto)
        if self.inner_sport or self.inner_dport:
            inner = f"{ep(self.inner_src, self.inner_sport)}→{ep(self.inner_dst, self.inner_dport)} {proto}"
        elif self.inner_src:
            inner = f"{self.inner_src}→{self.inner_dst} {proto}"
        else:
            inner = f"ethertype 0x{self.inner_ethertype:04x}"
        if self.inner_vlan:
            inner = f"{vlan_text(self.inner_vlan)}: {inner}"
        csum = "csum 0" if self.outer_csum_zero else "csum set"
        return (
            f"{ep(self.outer_src, self.outer_sport)}→{ep(self.outer_dst, self.outer_dport)} "
            f"{self.tunnel} vni {self.vni} ({csum}) | {inner}"
        )

    def as_dict(self) -> dict:
        return {
            "outer": {
                "src": self.outer_src,
                "dst": self.outer_dst,
                "sport": self.outer_sport,
                "dport": self.outer_dport,
                "udp_csum_zero": self.outer_csum_zero,
                # the outer IP protocol: UDP for a tunnelled flow, the decoder's key for any other IP flow
                "proto": 17 if self.tunnel else self.inner_proto,
            },
            "tunnel": self.tunnel or None,
            "vni": self.vni if self.tunnel else None,
            "inner": {
                "src": self.inner_src,
                "dst": self.inner_dst,
                "proto": self.inner_proto,
                "sport": self.inner_sport,
                "dport": self.inner_dport,
                "ethertype": self.inner_ethertype,
                "vlan": [
                    {"tpid": tpid, "vid": tci & 0x0FFF, "pcp": tci >> 13, "dei": bool(tci & 0x1000)}
                    for tpid, tci in self.inner_vlan
                ],
            }
            if self.tunnel
            else None,
        }


#: IP protocol numbers → how a flow's label names them (``proto_text``) and ``--flow proto=`` takes them
PROTO_NAMES = {6: "tcp", 17: "udp", 1: "icmp", 58: "icmpv6", 4: "ipip", 41: "ipv6-in-ip", 47: "gre"}


def proto_text(proto: int) -> str:
    """IP protocol number ``proto`` as a flow's label names it: ``tcp``, ``gre``, or ``proto 132``."""
    return PROTO_NAMES.get(proto) or f"proto {proto}"


def proto_title(proto: int) -> str:
    """``proto_text`` as explain's flow line writes it: ``TCP``, ``GRE``, ``ICMPv6``, ``IPv6-in-IP``, ``proto 132``."""
    name = PROTO_NAMES.get(proto)
    if name is None:
        return f"proto {proto}"
    return {"icmpv6": "ICMPv6", "ipv6-in-ip": "IPv6-in-IP"}.get(name, name.upper())


def endpoint(addr: str, port: int) -> str:
    """``addr:port``, with IPv6 addresses in brackets (RFC 3986): ``[fd00::1]:37531``. The one address:port form of
    the reports (``FlowKey.label``, explain's flow line)."""
    return f"[{addr}]:{port}" if ":" in addr else f"{addr}:{port}"


def ip_text(b: bytes) -> str:
    """A 4-byte IPv4 or 16-byte IPv6 address as text (``192.168.1.1``, ``fd00::1``)."""
    if len(b) == 4:
        return ".".join(str(x) for x in b)
    return str(ipaddress.IPv6Address(b))


#: the TPIDs whose tags the kernel's GRO reads (net/8021q/vlan_core.c ``vlan_packet_offloads``) and their names here
VLAN_TPID_NAMES = {0x8100: "vlan", 0x88A8: "s-vlan"}


def vlan_text(tags: tuple[tuple[int, int], ...]) -> str:
    """``(TPID, TCI)`` tags, outermost first, as ``vlan 100`` (802.1Q) / ``s-vlan 10`` (802.1ad), the VID with its
    priority (``pcp 5``) and ``dei`` when set: ``s-vlan 10 vlan 100 pcp 5``."""
    parts = []
    for tpid, tci in tags:
        words = [VLAN_TPID_NAMES.get(tpid, f"0x{tpid:04x}"), str(tci & 0x0FFF)]
        if tci >> 13:
            words.append(f"pcp {tci >> 13}")
        if tci & 0x1000:
            words.append("dei")
        parts.append(" ".join(words))
    return " ".join(parts)
