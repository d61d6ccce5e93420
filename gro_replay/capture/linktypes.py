"""Link types: the DLT values a capture may carry and ``l2_normalize``, which turns a frame of any supported link
type into the Ethernet II frame the replay reads (tcpdump's LINKTYPE_ values, libpcap's pcap-linktype(7)).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping
from functools import cached_property

from .stream import CaptureError

DLT_EN10MB = 1
DLT_RAW = 101
DLT_RAW_ALT12 = 12  #: DLT_RAW on most BSDs/Linux libpcap before LINKTYPE_ values existed
DLT_RAW_ALT14 = 14  #: DLT_RAW on OpenBSD
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
DLT_LINUX_SLL = 113
DLT_LINUX_SLL2 = 276

#: Link types whose frames start at the IP header.
RAW_LINKTYPES = frozenset({DLT_RAW, DLT_RAW_ALT12, DLT_RAW_ALT14, LINKTYPE_IPV4, LINKTYPE_IPV6})
SUPPORTED_LINKTYPES = frozenset({DLT_EN10MB, DLT_LINUX_SLL, DLT_LINUX_SLL2}) | RAW_LINKTYPES


class _DltNames(Mapping[int, str]):
    """DLT value -> name (``EN10MB``), from dpkt.pcap's ``DLT_*`` constants, read on the first look-up: only a
    message about a link type needs a name, and ``import dpkt`` loads every protocol module of dpkt (~0.08 CPU s
    of start-up for every replay otherwise)."""

    @cached_property
    def _names(self) -> dict[int, str]:
        import dpkt.pcap

        # dpkt.pcap defines DLT_RAW as 12 (14 on OpenBSD) and reuses 253; the first name defined wins.
        names: dict[int, str] = {}
        for name, value in vars(dpkt.pcap).items():
            if name.startswith("DLT_") and isinstance(value, int):
                names.setdefault(value, name[4:])
        names.update({DLT_RAW: "RAW", LINKTYPE_IPV4: "IPV4", LINKTYPE_IPV6: "IPV6"})
        return names

    def __getitem__(self, linktype: int) -> str:
        return self._names[linktype]

    def __iter__(self) -> Iterator[int]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


#: DLT value -> name (``EN10MB``, ``LINUX_SLL``; ``RAW`` for 101): dpkt.pcap's names, read when first looked up
DLT_NAMES: Mapping[int, str] = _DltNames()


def linktype_error(path: str, linktype: int) -> CaptureError:
    """The one-line error for a capture (or pcapng interface) of an unsupported link type."""
    name = DLT_NAMES.get(linktype)
    named = f"{linktype} ({name})" if name else str(linktype)
    return CaptureError(
        f"{path}: unsupported link type {named}; supported: EN10MB, LINUX_SLL, LINUX_SLL2, RAW"
    )


_ETH_HDR = struct.Struct("!6s6sH")
_SLL_HDR = struct.Struct("!HHH8sH")  # pkttype, hatype, halen, addr, protocol
_SLL2_HDR = struct.Struct("!HHIHBB8s")  # protocol, reserved, ifindex, hatype, pkttype, halen, addr
_ZERO_MAC = bytes(6)
_ETH_P_IP = 0x0800
_ETH_P_IPV6 = 0x86DD
#: Below this the SLL protocol field is a Linux ETH_P_* meta value (802.3, AX25, ALL, 802.2, CAN…).
_ETH_P_802_3_MIN = 0x0600
#: ARPHRD types whose SLL payload is not an L3 packet named by the protocol field.
#: CAN 280, IEEE80211 801, IEEE80211_PRISM 802, IEEE80211_RADIOTAP 803, IEEE802154 804, NETLINK 824.
_ARPHRD_NOT_L3 = frozenset({280, 801, 802, 803, 804, 824})
_IP_ETHERTYPE = {4: _ETH_P_IP, 6: _ETH_P_IPV6}


def _sll_to_eth(hatype: int, halen: int, addr: bytes, protocol: int, payload: bytes) -> bytes | None:
    if protocol < _ETH_P_802_3_MIN or hatype in _ARPHRD_NOT_L3:
        return None
    return _ETH_HDR.pack(_ZERO_MAC, addr[:6] if halen == 6 else _ZERO_MAC, protocol) + payload


#: include/uapi/linux/if_packet.h: the SLL packet type of a frame the capturing host sent
PACKET_OUTGOING = 4


def sent_by_host(buf: bytes, linktype: int) -> bool:
    """Whether a Linux cooked frame (LINUX_SLL: packet type at byte 0, 16 bits; LINUX_SLL2: at byte 10, 8 bits) is
    one the capturing host sent (``PACKET_OUTGOING``, as ``tcpdump -i any`` captures both directions): transmitted,
    never received, so never through a receive path's GRO. False for other link types (whose frames say no
    direction) and for a header cut short. Never raises."""
    if linktype == DLT_LINUX_SLL:
        return len(buf) >= 2 and (buf[0] << 8 | buf[1]) == PACKET_OUTGOING
    if linktype == DLT_LINUX_SLL2:
        return len(buf) >= 11 and buf[10] == PACKET_OUTGOING
    return False


#: bytes of the link header a record of each link type starts with (raw IP: the version nibble's byte)
LINK_HEADER_LEN: Mapping[int, int] = {
    DLT_EN10MB: _ETH_HDR.size,
    DLT_LINUX_SLL: _SLL_HDR.size,
    DLT_LINUX_SLL2: _SLL2_HDR.size,
    **dict.fromkeys(RAW_LINKTYPES, 1),
}


def l2_normalize(buf: bytes, linktype: int) -> bytes | None:
    """Turn a captured frame into an Ethernet II frame (14-byte header, then the L3 packet).

    EN10MB frames are returned as is. LINUX_SLL (16-byte header) and LINUX_SLL2 (20-byte header) get
    dst 00:00:00:00:00:00, src = the link address when it is 6 bytes long (else zeros) and the SLL protocol
    as ethertype. RAW/IPV4/IPV6 frames get zero MACs and the ethertype of the IP version nibble.

    Args: buf: captured bytes; linktype: the frame's DLT.
    Returns: the Ethernet frame, or None when the link header is too short, the SLL protocol is not an
        ethertype (ETH_P_ALL, 802.2, CAN… or a non-L3 ARPHRD), the IP version is neither 4 nor 6, or the
        link type is not supported. Never raises.
    """
    if linktype == DLT_EN10MB:
        return buf if len(buf) >= _ETH_HDR.size else None
    if linktype == DLT_LINUX_SLL:
        if len(buf) < _SLL_HDR.size:
            return None
        _pkttype, hatype, halen, addr, protocol = _SLL_HDR.unpack_from(buf)
        return _sll_to_eth(hatype, halen, addr, protocol, buf[_SLL_HDR.size :])
    if linktype == DLT_LINUX_SLL2:
        if len(buf) < _SLL2_HDR.size:
            return None
        protocol, _res, _ifindex, hatype, _pkttype, halen, addr = _SLL2_HDR.unpack_from(buf)
        return _sll_to_eth(hatype, halen, addr, protocol, buf[_SLL2_HDR.size :])
    if linktype in RAW_LINKTYPES:
        if not buf:
            return None
        ethertype = _IP_ETHERTYPE.get(buf[0] >> 4)
        if ethertype is None:
            return None
        return _ETH_HDR.pack(_ZERO_MAC, _ZERO_MAC, ethertype) + buf
    return None
