"""Classify captured frames and read the fields the report and the NIC model need, in place.

The simulation parses headers itself (as the kernel does); this module only (1) normalises the link layer to an
untagged Ethernet frame (the NIC strips VLAN tags into ``vlan_tci``, as with RX VLAN offload), (2) decides
whether a frame can be replayed at all (a skip with a reason otherwise), (3) names its flow for the report, and
(4) gives the NIC model the RSS input and the checksum start of the innermost L4 header.
VLAN tags inside a tunnel stay in the frame (GRO reads them: kernel/vlan_core.py); the decoder reads 802.1Q and
802.1ad ones, any number, to reach the inner packet, and keys the flow by them (``FlowKey.inner_vlan``).
Headers are read with precompiled ``struct.Struct`` objects; no per-frame object trees.
"""

from __future__ import annotations

import struct

from ..kernel.geneve import GENEVE_VER, geneve_hlen
from ..kernel.reassembly import FRAG_HDR_LEN, NEXTHDR_FRAGMENT, ipv6_frag_atomic
from ..kernel.vxlan_core import VXLAN_HF_VNI, vxlan_parse_gbp_hdr
from .csum import l4_checksum_field, pseudo_at
from .flowkey import FlowKey, ip_text

ETH_P_IP = 0x0800
ETH_P_IPV6 = 0x86DD
ETH_P_8021Q = 0x8100
ETH_P_8021AD = 0x88A8
ETH_P_QINQ1 = 0x9100
ETH_P_TEB = 0x6558
_VLAN_TPIDS = (ETH_P_8021Q, ETH_P_8021AD, ETH_P_QINQ1)
#: the inner frame's tags the kernel's GRO reads: the TPIDs of net/8021q/vlan_core.c ``vlan_packet_offloads`` (a
#: 0x9100 tag has no GRO handler: ``eth_gro_receive`` flushes, and such a frame is ``tunnel_other``)
_GRO_VLAN_TPIDS = (ETH_P_8021Q, ETH_P_8021AD)

_H = struct.Struct("!H")
_HH = struct.Struct("!HH")
_UDP = struct.Struct("!HHHH")
_IP4 = struct.Struct("!BBHHHBBH4s4s")  # ver_ihl tos tot_len id frag_off ttl protocol check saddr daddr

# Skip reasons (every frame read is either replayed or counted under one of these).
SKIP_SNAPLEN = "snaplen_cut"
SKIP_TRUNCATED_RECORD = "truncated_record"
SKIP_LINKTYPE = "unsupported_link_layer"
#: a Linux cooked frame the capturing host sent (capture/linktypes.py ``sent_by_host``): no receive path's GRO saw it
SKIP_OUTGOING = "outgoing"
SKIP_ETH = "malformed:ethernet"
#: a record whole but shorter than its link header (a Linux cooked header, a raw IP record of no byte)
SKIP_LINK_HEADER = "malformed:link_header"
SKIP_OUTER_IP = "malformed:outer_ip"
SKIP_OUTER_UDP = "malformed:outer_udp"
SKIP_TUNNEL = "malformed:tunnel_header"
SKIP_INNER = "malformed:inner_headers"

# Frame classes (reported; all are replayed).
CLS_TUNNEL_TCP = "tunnel_tcp"
CLS_TUNNEL_OTHER = "tunnel_other"
CLS_NOT_TUNNEL = "not_tunnel"


ETH_P_ARP = 0x0806


def _plausible_ethernet(buf: bytes, off: int, end: int) -> bool:
    """True when ``buf[off:end]`` starts with an Ethernet frame whose L3 header makes sense: ethertype IPv4 (version
    4, IHL >= 5, total length within the datagram), IPv6 (version 6, payload length within), ARP (Ethernet/IPv4),
    optionally behind one 802.1Q/802.1ad tag."""
    if off + 14 > end:
        return False
    (etype,) = _H.unpack_from(buf, off + 12)
    l3 = off + 14
    if etype in _VLAN_TPIDS:
        if l3 + 4 > end:
            return False
        (etype,) = _H.unpack_from(buf, l3 + 2)
        l3 += 4
    if etype == ETH_P_IP:
        if l3 + 20 > end or buf[l3] >> 4 != 4 or buf[l3] & 0x0F < 5:
            return False
        (tot_len,) = _H.unpack_from(buf, l3 + 2)
        return (buf[l3] & 0x0F) * 4 <= tot_len <= end - l3
    if etype == ETH_P_IPV6:
        if l3 + 40 > end or buf[l3] >> 4 != 6:
            return False
        (plen,) = _H.unpack_from(buf, l3 + 4)
        return 40 + plen <= end - l3
    if etype == ETH_P_ARP:
        return l3 + 28 <= end and buf[l3 : l3 + 6] == b"\x00\x01\x08\x00\x06\x04"
    return False


def sniff_tunnel(buf: bytes, t: int, end: int) -> str | None:
    """Which tunnel the UDP payload ``buf[t:end]`` parses as, on a port without a tunnel socket: ``"vxlan"``,
    ``"geneve"`` or None.

    A header is taken when a tunnel socket with the extensions the tool models would accept it, then the inner
    frame must be plausible (``_plausible_ethernet``: a known ethertype with a sane L3 header), so that other UDP
    protocols are not taken for tunnels.

    VXLAN (RFC 7348; drivers/net/vxlan/vxlan_core.c ``vxlan_rcv``): the I flag (VXLAN_HF_VNI) set, the reserved
    byte after the VNI zero, and no other flag bit than those ``vxlan_parse_gbp_hdr`` consumes on a device with
    ``gbp`` (VXLAN_GBP_USED_BITS: the G flag, D, A and the policy ID; ``--vxlan-gbp``): what the most accepting
    modelled device takes (RCO and GPE are not modelled, so their flags are rejected). Geneve (RFC 8926;
    drivers/net/geneve.c ``geneve_udp_encap_recv``): version 0 and protocol type 0x6558 (Transparent Ethernet
    Bridging), the only header fields the kernel checks (reserved bits and the O/C flags are accepted), then the
    inner frame after the 4 × opt_len bytes of options.
    """
    if t + 8 > end:
        return None
    flags = int.from_bytes(buf[t : t + 4], "big")
    if flags & VXLAN_HF_VNI and buf[t + 7] == 0 and not vxlan_parse_gbp_hdr(flags & ~VXLAN_HF_VNI)[0]:
        if _plausible_ethernet(buf, t + 8, end):
            return "vxlan"
    if buf[t] >> 6 == GENEVE_VER and _H.unpack_from(buf, t + 2)[0] == ETH_P_TEB:
        if _plausible_ethernet(buf, t + geneve_hlen(buf, t), end):
            return "geneve"
    return None


def outer_udp_csum_bad(frame: bytes) -> bool:
    """True when the untagged Ethernet ``frame``'s outer UDP checksum is set and does not verify (RFC 768/1071 over
    the pseudo-header and the UDP length's bytes): the verdict ``__udp4_lib_rcv``/``udp4_csum_init`` reach in
    software (net/ipv4/udp.c), and packet/columns.py's ``V_UDP_BAD`` for the batch path's frames."""
    n = len(frame)
    if n < 14:
        return False
    et = (frame[12] << 8) | frame[13]
    if et == ETH_P_IP:
        if n < 34 or frame[23] != 17:
            return False
        u, addrs, alen = 14 + (frame[14] & 0x0F) * 4, 26, 8
    elif et == ETH_P_IPV6:
        if n < 54 or frame[20] != 17:
            return False
        u, addrs, alen = 54, 22, 32
    else:
        return False
    if u + 8 > n:
        return False
    sport, dport, ulen, check = _UDP.unpack_from(frame, u)
    if not check or ulen < 8 or u + ulen > n:
        return False
    return l4_checksum_field(pseudo_at(frame, addrs, alen, ulen, 17), frame, u, u + ulen) != 0


def tag_depth(vlan: int | tuple | None) -> int:
    """The outer VLAN tags of a decoded frame (``Decoder.decode``'s ``vlan_tci``: None, one TCI, or a tuple)."""
    return 0 if vlan is None else len(vlan) if isinstance(vlan, tuple) else 1


def ipv6_upper(buf: bytes | bytearray | memoryview, l3: int, end: int) -> tuple[int, int] | None:
    """``(next header, offset)`` of the header after the IPv6 header at ``buf[l3]`` (its 40 bytes there) and its
    hop-by-hop (0), routing (43) and destination-options (60) headers, each (hdrlen + 1) × 8 bytes, as
    ``ipv6_gso_pull_exthdrs`` walks them (net/ipv6/ip6_offload.c), and a fragment header that fragments nothing
    (kernel/reassembly.py ``ipv6_frag_atomic``: the stack steps past it; GRO flushes the frame there) and any
    fragment header after it (the stack drops that frame: kernel/udp.py); the fragment header (44) of a fragment
    is a next header like any other. None when an extension header's first 8 bytes (every one's least size) pass
    ``end`` (the datagram's or the buffer's end). Never raises."""
    proto, off = buf[l3 + 6], l3 + 40
    stepped = False
    while proto in (0, 43, 60, NEXTHDR_FRAGMENT):
        if off + 8 > end:
            return None
        if proto == NEXTHDR_FRAGMENT:
            if not stepped and not ipv6_frag_atomic(buf, off):
                break
            stepped = True
            proto, off = buf[off], off + FRAG_HDR_LEN
            continue
        proto, off = buf[off], off + (buf[off + 1] + 1) * 8
    return proto, off


def _first_fragment_to(buf: bytes, proto: int, l4: int, end: int, tunnel_ports: dict[int, str]) -> bool:
    """Whether the first fragment whose next header ``proto`` starts at ``buf[l4]`` (after the IPv4 header or the
    IPv6 fragment header, and any routing or destination-options headers there, as ``ipv6_skip_exthdr`` walks
    them) holds a whole UDP header to a port of ``tunnel_ports``: one a kernel can reassemble
    (``ipv6frag_thdr_truncated`` drops a first fragment without it)."""
    while proto in (43, 60) and l4 + 2 <= end:
        proto, l4 = buf[l4], l4 + (buf[l4 + 1] + 1) * 8
    return proto == 17 and l4 + 8 <= end and _H.unpack_from(buf, l4 + 2)[0] in tunnel_ports


class Decoder:
    """Turns Ethernet frames into replayable frames or skip reasons, and keeps the flow table.

    Args: vxlan_ports / geneve_ports: UDP destination ports recognised as tunnels.
    The flow table grows with the number of distinct flows, never with the number of frames.
    """

    def __init__(self, vxlan_ports: tuple[int, ...], geneve_ports: tuple[int, ...]) -> None:
        self.tunnel_ports = {p: "vxlan" for p in vxlan_ports}
        self.tunnel_ports.update({p: "geneve" for p in geneve_ports})
        #: per flow id its key; None once the flow is retired (``retire``)
        self.flows: list[FlowKey | None] = []
        self.flow_class: list[str] = []
        #: the RSS input of each flow (outer addresses and ports: a function of the flow key)
        self.flow_rss: list[bytes] = []
        self._flow_ids: dict[tuple, int] = {}
        #: per flow id, the raw key it is found under (None once retired)
        self._flow_raw: list[tuple | None] = []
        #: frames on UDP ports without a tunnel socket whose payload parses as a tunnel (``sniff_tunnel``):
        #: kind → destination port → frames. They are replayed as the kernel sees them (``not_tunnel``).
        self.unconfigured: dict[str, dict[int, int]] = {}
        #: the pairs of outer (source, destination) addresses tunnel flows run between, by index from 1 (sim/notes.py
        #: ``both_ways``); per flow id its pair's index (0: not a tunnel flow), and per index the frames replayed
        #: (counted by the replay: ``pair_frames[pair_of[fid]] += n``; frames, not flows: a flow retired and seen
        #: again is a new flow id). Grows with the pairs of hosts and the flow ids, never with frames.
        self.outer_pairs: dict[tuple[str, str], int] = {}
        #: first fragments (IPv4 offset 0 with MF, an IPv6 fragment header of offset 0 with M) of outer datagrams to
        #: a tunnel port: tunnel traffic a kernel reassembles (ip_defrag, ipv6_frag_rcv) and the replay does not
        self.fragments_to_tunnel = 0
        self.pair_of: list[int] = []
        self.pair_frames: list[int] = [0]

    def _flow(self, raw: tuple, make) -> int:
        fid = self._flow_ids.get(raw)
        if fid is None:
            fid = self._new_flow(raw, *make())
        return fid

    def _new_flow(self, raw: tuple, key: FlowKey, cls: str, rss: bytes) -> int:
        fid = len(self.flows)
        self.flows.append(key)
        self.flow_class.append(cls)
        self.flow_rss.append(rss)
        self._flow_ids[raw] = fid
        self._flow_raw.append(raw)
        pair = (
            0
            if cls == CLS_NOT_TUNNEL
            else self.outer_pairs.setdefault((key.outer_src, key.outer_dst), len(self.pair_frames))
        )
        if pair == len(self.pair_frames):
            self.pair_frames.append(0)
        self.pair_of.append(pair)
        return fid

    def restart(self, fid: int) -> int:
        """A new flow id for flow ``fid``'s key (its connection ended: ``sim.flows``): later frames with the key
        get the new id, ``fid`` keeps its key and counters until it is retired. Returns the new id."""
        raw, key = self._flow_raw[fid], self.flows[fid]
        if raw is None or key is None:
            raise ValueError(f"flow {fid} was retired or restarted: it has no key to restart")
        self._flow_raw[fid] = None
        return self._new_flow(raw, key, self.flow_class[fid], self.flow_rss[fid])

    def retire(self, fid: int) -> None:
        """Forget flow ``fid`` (it ended: ``sim.flows``): its key, class and RSS input are dropped (``flows[fid]``
        becomes None), and a later frame with the same key starts a new flow id, as a new conntrack entry would.
        What stays is one list slot per flow id in ``flows``, ``flow_class``, ``flow_rss`` (8 bytes each)."""
        raw = self._flow_raw[fid]
        if raw is not None and self._flow_ids.get(raw) == fid:
            del self._flow_ids[raw]
        self._flow_raw[fid] = None
        self.flows[fid] = None
        self.flow_rss[fid] = b""

    def decode(self, buf: bytes):  # noqa: C901, PLR0915 - one pass over the headers, outer to inner, on the hot path
        """Decode one untagged-or-tagged Ethernet frame.

        Returns either a skip reason (str) or a tuple ``(frame, vlan_tci, flow_id, rss_input, l4_start)``:
        ``frame`` is the frame with VLAN tags removed; ``vlan_tci`` the outermost tag's TCI (None if untagged;
        QinQ keeps the pair); ``rss_input`` the bytes a NIC hashes (outer addresses + ports, b"" for non-IP;
        a function of the flow, also in ``flow_rss[flow_id]``); ``l4_start`` the byte offset of the innermost
        TCP/UDP header in ``frame`` (for CHECKSUM_PARTIAL), or 0.
        """
        n = len(buf)
        if n < 14:
            return SKIP_ETH
        (etype,) = _H.unpack_from(buf, 12)
        vlan = None
        if etype in _VLAN_TPIDS:
            off = 12
            tcis = []
            while etype in _VLAN_TPIDS:
                if off + 6 > n:
                    return SKIP_ETH
                tcis.append(_H.unpack_from(buf, off + 2)[0])
                off += 4
                (etype,) = _H.unpack_from(buf, off)
            vlan = tcis[0] if len(tcis) == 1 else tuple(tcis)
            buf = buf[:12] + buf[off:]
            n = len(buf)
        if etype == ETH_P_IP:
            if n < 34:
                return SKIP_OUTER_IP
            vihl, _tos, tot_len, _id, frag, _ttl, proto, _check, src, dst = _IP4.unpack_from(buf, 14)
            ihl = (vihl & 0x0F) * 4
            if vihl >> 4 != 4 or ihl < 20 or n < 14 + ihl:
                return SKIP_OUTER_IP
            if tot_len < ihl or 14 + tot_len > n:
                return SKIP_OUTER_IP
            frag &= 0x3FFF
            l4 = 14 + ihl
            end = 14 + tot_len
        elif etype == ETH_P_IPV6:
            if n < 54 or buf[14] >> 4 != 6:
                return SKIP_OUTER_IP
            (plen,) = _H.unpack_from(buf, 18)
            end = 54 + plen
            if end > n:
                return SKIP_OUTER_IP
            proto = buf[20]
            src = buf[22:38]
            dst = buf[38:54]
            upper = ipv6_upper(buf, 14, end)
            if upper is None:
                return SKIP_OUTER_IP
            proto, l4 = upper
            frag = 0
            # a fragment's header: its offset kept (0: the first), the walk goes on past it
            if proto == NEXTHDR_FRAGMENT:
                frag = 0x2000 | ((buf[l4 + 2] << 8 | buf[l4 + 3]) >> 3)
                proto, l4 = buf[l4], l4 + FRAG_HDR_LEN
        else:
            fid: int | None = self._flow(("l2", etype), lambda: (_not_ip_key(etype), CLS_NOT_TUNNEL, b""))
            return buf, vlan, fid, b"", 0
        if proto not in (6, 17) or frag or (proto == 6 and l4 + 8 > end):
            # a TCP header cut short is still non-tunnel traffic: GRO and IP input see it (and flush/drop it); the
            # first fragment of a datagram to a tunnel port is counted (reassembly is not modelled: sim/notes.py)
            if frag & 0x3FFF == 0x2000:  # MF (IPv4) or a fragment header's (IPv6) M, at offset 0
                self.fragments_to_tunnel += _first_fragment_to(buf, proto, l4, end, self.tunnel_ports)
            raw: tuple = ("ip", src, dst, proto)
            fid = self._flow(
                raw,
                lambda: (
                    FlowKey(ip_text(src), ip_text(dst), 0, 0, "", 0, "", "", proto, 0, 0, False),
                    CLS_NOT_TUNNEL,
                    src + dst,
                ),
            )
            return buf, vlan, fid, self.flow_rss[fid], l4 if not frag else 0
        if l4 + 8 > end:
            return SKIP_OUTER_UDP
        sport, dport, _ulen, ucheck = _UDP.unpack_from(buf, l4)
        kind = self.tunnel_ports.get(dport) if proto == 17 else None
        if kind is None:
            if proto == 17:
                seen = sniff_tunnel(buf, l4 + 8, end)
                if seen is not None:
                    per_port = self.unconfigured.setdefault(seen, {})
                    per_port[dport] = per_port.get(dport, 0) + 1
            raw = ("l4", src, dst, proto, sport, dport)
            fid = self._flow_ids.get(raw)
            if fid is None:
                key = FlowKey(ip_text(src), ip_text(dst), sport, dport, "", 0, "", "", proto, 0, 0, False)
                fid = self._new_flow(raw, key, CLS_NOT_TUNNEL, src + dst + buf[l4 : l4 + 4])
            return buf, vlan, fid, self.flow_rss[fid], l4
        # the UDP length is read by no GRO stage (udp_gro_receive, vxlan/geneve_gro_receive; udp_gro_complete
        # rewrites it for an aggregate): a frame whose length is wrong is replayed, merged like any other, and,
        # delivered alone, dropped by udp_rcv (kernel/udp.py: UDP_SHORT_PACKET), as the running kernel does
        t = l4 + 8
        if kind == "vxlan":
            if t + 8 > end:
                return SKIP_TUNNEL
            inner_eth = t + 8
            tun_sig = buf[t : t + 8]
        else:
            if t + 8 > end:
                return SKIP_TUNNEL
            glen = 8 + (buf[t] & 0x3F) * 4
            if t + glen > end:
                return SKIP_TUNNEL
            gproto = _H.unpack_from(buf, t + 2)[0]
            if gproto != ETH_P_TEB:
                vni = int.from_bytes(buf[t + 4 : t + 7], "big")
                raw = ("tun", src, dst, sport, dport, vni, gproto)
                fid = self._flow(
                    raw,
                    lambda: (
                        FlowKey(
                            ip_text(src),
                            ip_text(dst),
                            sport,
                            dport,
                            kind,
                            vni,
                            "",
                            "",
                            0,
                            0,
                            0,
                            ucheck == 0,
                            gproto,
                        ),
                        CLS_TUNNEL_OTHER,
                        src + dst + buf[l4 : l4 + 4],
                    ),
                )
                return buf, vlan, fid, self.flow_rss[fid], l4
            inner_eth = t + glen
            tun_sig = buf[t + 4 : t + 8]
        if inner_eth + 14 > end:
            return SKIP_INNER
        (itype,) = _H.unpack_from(buf, inner_eth + 12)
        il3 = inner_eth + 14
        tags: tuple[
            tuple[int, int], ...
        ] = ()  # the inner frame's (TPID, TCI) tags, read as vlan_gro_receive reads them
        while itype in _GRO_VLAN_TPIDS:
            if il3 + 4 > end:
                return SKIP_INNER
            tci, next_type = _HH.unpack_from(buf, il3)
            tags += ((itype, tci),)
            itype = next_type
            il3 += 4
        iproto = 0
        isrc = idst = b""
        il4 = 0
        if itype == ETH_P_IP:
            if il3 + 20 > end:
                return SKIP_INNER
            ivihl, _tos, _len, _id, ifrag, _ttl, iproto, _check, isrc, idst = _IP4.unpack_from(buf, il3)
            iihl = (ivihl & 0x0F) * 4
            if ivihl >> 4 != 4 or iihl < 20 or il3 + iihl > end:
                return SKIP_INNER
            il4 = il3 + iihl
            if ifrag & 0x3FFF:
                il4 = 0
        elif itype == ETH_P_IPV6:
            if il3 + 40 > end or buf[il3] >> 4 != 6:
                return SKIP_INNER
            iproto = buf[il3 + 6]
            isrc, idst = buf[il3 + 8 : il3 + 24], buf[il3 + 24 : il3 + 40]
            il4 = il3 + 40
            while iproto in (0, 43, 60, 44):
                if il4 + 8 > end:
                    return SKIP_INNER
                if iproto == 44:
                    iproto = buf[il4]
                    il4 = 0
                    break
                iproto, il4 = buf[il4], il4 + (buf[il4 + 1] + 1) * 8
        isport = idport = 0
        if il4 and iproto in (6, 17):
            if il4 + (20 if iproto == 6 else 8) > end:
                return SKIP_INNER
            isport, idport = _HH.unpack_from(buf, il4)
        raw = (
            "tun",
            src,
            dst,
            sport,
            dport,
            tun_sig,
            ucheck == 0,
            tags,
            itype,
            isrc,
            idst,
            iproto,
            isport,
            idport,
        )
        fid = self._flow_ids.get(raw)
        if fid is None:
            key = FlowKey(
                ip_text(src),
                ip_text(dst),
                sport,
                dport,
                kind,
                int.from_bytes(buf[t + 4 : t + 7], "big"),
                ip_text(isrc) if isrc else "",
                ip_text(idst) if idst else "",
                iproto,
                isport,
                idport,
                ucheck == 0,
                itype,
                bytes(tun_sig),
                tags,
            )
            cls = CLS_TUNNEL_TCP if iproto == 6 and il4 else CLS_TUNNEL_OTHER
            fid = self._new_flow(raw, key, cls, src + dst + buf[l4 : l4 + 4])
        return buf, vlan, fid, self.flow_rss[fid], il4 or l4


def _not_ip_key(etype: int) -> FlowKey:
    return FlowKey(f"ethertype 0x{etype:04x}", "", 0, 0, "", 0, "", "", 0, 0, 0, False)
