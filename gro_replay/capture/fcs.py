"""Ethernet FCSs captured with the frames, removed by the record readers as a NIC with rx-fcs off removes them.

A capture taken at a tap, a mirror port or on a host with ``ethtool -K DEV rx-fcs on`` holds each Ethernet frame's
FCS: 4 bytes past the frame's own bytes (its IP datagram, or Ethernet padding: packet/headers.py ``data_end``), the
CRC-32 of the bytes before them. A NIC without ``NETIF_F_RXFCS`` (rx-fcs off, every driver's default:
include/linux/netdev_features.h, "append FCS to skb pkt data") removes it before the stack sees the frame; kept, it
is a trailer, and GRO merges none of those frames (the IP length differs from the bytes present: inet_gro_receive,
ipv6_gro_receive). So the record readers remove it, by one rule each:

- ``fcs_at_end``: a whole record of an Ethernet link type whose last 4 bytes, at least 4 past its data, are the
  CRC-32 of the bytes before them (``ends_with_fcs``) is read 4 bytes shorter (``Capture.fcs_stripped``);
- ``fcs_cut_end``: a record cut short (captured < original length) whose every byte before its FCS was captured —
  its wire length 4 bytes past where its data can end, the snaplen cutting some or all of those 4 (``tcpdump -s
  1514`` of a tap's 1518-byte frames) — is read as that whole frame without them (``Capture.fcs_cut``; its FCS
  cannot be checked, but a wire frame ends with one).

A record that holds more than its original length (a writer's fault: replayed as captured) is not touched.

Removed where each record's header is read, by the reader that reads it, as capture/snaplen.py counts: reader.py
``Capture._iter_pcap`` (per record), chunks.py ``PcapChunks`` and pcapng_chunks.py ``PcapngChunks`` (``strip_fcs``
over a block); every record of the capture, whichever interfaces, ``-f`` or ``--flow`` replay, counted once (JSON
``input.frames_fcs_stripped``, ``input.frames_fcs_cut``: sim/notes.py ``account_capture_end``). A Linux cooked
record holds no Ethernet header for an FCS to cover, and is not touched; neither is a frame whose last bytes do not
verify (a trailer: sim/skipped.py ``past_datagram`` counts it).
"""

from __future__ import annotations

import numpy as np

from ..kernel.skbuff import ETH_FCS_LEN, ETH_P_8021AD, ETH_P_8021Q, ETH_P_IP, ETH_P_IPV6, ETH_ZLEN
from ..packet.headers import Buffer, data_end, ends_with_fcs

#: the shortest frame that carries an FCS: ``ETH_ZLEN`` and the FCS (IEEE 802.3's minimum frame, 64 bytes)
MIN_FCS_FRAME = ETH_ZLEN + ETH_FCS_LEN


def fcs_at_end(frame: Buffer) -> bool:
    """Whether the whole Ethernet frame ``frame`` ends with its FCS: at least ``ETH_FCS_LEN`` bytes past its data
    (packet/headers.py ``data_end``, padding to 60 bytes whatever its tags; a frame that is not IP, or whose header
    declares no length, never does) and its last 4 bytes the CRC-32 of the bytes before them (``ends_with_fcs``).
    Never raises."""
    if len(frame) < MIN_FCS_FRAME:
        return False
    end = data_end(frame, tags_padded=False)
    return end is not None and len(frame) - end >= ETH_FCS_LEN and ends_with_fcs(frame)


def fcs_cut_end(captured: Buffer, orig_len: int) -> int | None:
    """The length (bytes) of the frame without its FCS when the record ``captured`` (cut short: fewer bytes than
    its ``orig_len``) holds every byte before the FCS and the FCS only is cut: its wire length ``ETH_FCS_LEN`` past
    where its data can end (``data_end``: its datagram, or padding to 60 bytes, or 60 and 4 per VLAN tag). None
    otherwise, and for a record that holds more than its ``orig_len`` (replayed as captured). Never raises."""
    if orig_len < MIN_FCS_FRAME or not 0 < orig_len - len(captured) <= ETH_FCS_LEN:
        return None
    least, most = data_end(captured, tags_padded=False), data_end(captured)
    n = orig_len - ETH_FCS_LEN
    return n if least is not None and most is not None and least <= n <= most and len(captured) >= n else None


def fcs_removed(capture, frame: Buffer, orig_len: int) -> tuple[int, int]:
    """``(captured length, original length)`` of the record ``frame`` (its captured bytes) of wire length
    ``orig_len`` after its FCS is removed (``fcs_at_end`` for a whole record, ``fcs_cut_end`` for one cut short;
    unchanged when neither applies, and for one that holds more than its ``orig_len``), counted in
    ``capture.fcs_stripped``/``fcs_cut``: one record, as the frame-by-frame readers read it."""
    if len(frame) == orig_len:
        if fcs_at_end(frame):
            capture.fcs_stripped += 1
            return orig_len - ETH_FCS_LEN, orig_len - ETH_FCS_LEN
    elif (n := fcs_cut_end(frame, orig_len)) is not None:
        capture.fcs_cut += 1
        return n, n
    return len(frame), orig_len


def strip_fcs(
    buf: bytearray,
    data: np.ndarray,
    caplen: np.ndarray,
    origlen: np.ndarray,
    ethernet: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Remove the FCS of the records (``data``: offset of each in ``buf``; ``caplen``/``origlen``: int64 bytes
    captured / on the wire, shortened in place; ``ethernet``: bool per record, its link type is Ethernet, None: all
    are) that end with one (``fcs_at_end``) or whose FCS only was cut (``fcs_cut_end``). Returns the indices of
    each kind (int64, ascending).

    Records of 64 bytes or more on the wire are looked at, whole or cut by 4 bytes or fewer. Of a whole untagged or
    single-tagged IPv4/IPv6 one, the data's end is read as columns (``data_end``'s reading, vectorised:
    tests/test_fcs.py checks the answers against the rules record by record), and only one with 4 bytes or more
    past it has its CRC-32 checked (``ends_with_fcs``): the common frame, which ends where its data does, costs a
    vectorised compare. Any other record looked at (more tags, not IP, cut) goes to the rules."""
    look = (origlen >= MIN_FCS_FRAME) & (origlen >= caplen) & (origlen - caplen <= ETH_FCS_LEN)
    idx = np.flatnonzero(look if ethernet is None else look & ethernet)
    whole = caplen[idx] == origlen[idx]
    a = np.frombuffer(buf, np.uint8)
    o = np.where(whole, data[idx], 0)  # a whole record holds 64 bytes: its headers' columns can be read
    et = (a[o + 12].astype(np.int64) << 8) | a[o + 13]
    tag = (et == ETH_P_8021Q) | (et == ETH_P_8021AD)
    l3 = o + 14 + 4 * tag
    et = np.where(tag, (a[o + 16].astype(np.int64) << 8) | a[o + 17], et)
    v4, v6 = whole & (et == ETH_P_IP), whole & (et == ETH_P_IPV6)
    # the version the EtherType names, and a length declared (0 declares none: no FCS is found past it)
    at = np.where(v6, l3 + 4, l3 + 2)
    declared = (a[at].astype(np.int64) << 8) | a[at + 1]
    known = (v4 | v6) & (a[l3] >> 4 == np.where(v6, 6, 4)) & (declared != 0)
    end = np.maximum(l3 - o + np.where(v6, declared + 40, declared), ETH_ZLEN)  # data_end(tags_padded=False)
    past = known & (end + ETH_FCS_LEN <= caplen[idx])  # the common frame ends where its data does: not here
    del a
    rest = ~(v4 | v6)  # another layout, or cut: the rules
    stripped, cut = [], []
    with memoryview(buf) as view:
        for i, check in zip(idx[past | rest].tolist(), past[past | rest].tolist(), strict=True):
            s = int(data[i])
            with view[s : s + int(caplen[i])] as frame:
                if caplen[i] < origlen[i]:
                    n = fcs_cut_end(frame, int(origlen[i]))
                    if n is not None:
                        caplen[i] = origlen[i] = n
                        cut.append(i)
                elif ends_with_fcs(frame) if check else fcs_at_end(frame):
                    stripped.append(i)
    out = np.array(stripped, np.int64)
    caplen[out] -= ETH_FCS_LEN
    origlen[out] -= ETH_FCS_LEN
    return out, np.array(cut, np.int64)
