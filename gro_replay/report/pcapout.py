"""``--write-pcap DIR``: one pcap per kernel and device holding the skbs that device delivered, as tcpdump on it
would capture them.

An AF_PACKET tap sees an skb in ``__netif_receive_skb_core``, from its MAC header on: on the physical device the
outer Ethernet header, on a tunnel device the inner Ethernet header that ``eth_type_trans`` left in front of the
data. For an aggregate the headers are those the gro_complete chain rewrote (IPv4 total length and header
checksum, IPv6 payload length, UDP length and the re-seeded non-zero UDP check, the TCP check seeded with the
pseudo-header sum, PSH/FIN carried over from merged segments), followed by every merged payload slice in order.
A VLAN tag the NIC stripped into ``skb->vlan_tci`` is put back after the MAC addresses, as libpcap does from
``PACKET_AUXDATA``.

Kernel: net/core/dev.c ``__netif_receive_skb_core`` (``deliver_skb`` to ``ptype_all`` taps); net/packet/af_packet.c
``packet_rcv`` (``skb_mac_header``, ``tp_vlan_tci``); the chain of gro-spec §5.7.
Left out: the TPID of a stripped tag (not kept by the model: 802.1Q is written, 802.1ad outside it for a QinQ
pair); pcapng per-interface blocks; the packet direction.
"""

from __future__ import annotations

import os
import struct
from collections import Counter
from pathlib import Path

from ..capture.writer import PcapWriter

ETH_P_8021Q = 0x8100
ETH_P_8021AD = 0x88A8
_TAG = struct.Struct("!HH")


def skb_frame(skb) -> bytes:
    """The bytes a capture tap on the delivering device records for ``skb``.

    Args: skb: a delivered ``SkBuff`` (``buf`` from ``mac_header`` to ``tail`` is the linear part, ``frags`` are
    ``(buf, start, end)`` payload slices). Returns: the frame, ``skb_mac_header_len + skb->len`` bytes long (plus 4
    per re-inserted VLAN tag). Kernel: net/packet/af_packet.c ``packet_rcv`` (``skb_push`` back to the MAC header;
    ``skb_copy_bits`` of linear data and frags).
    """
    buf = skb.buf
    mac = skb.mac_header
    parts = [bytes(buf[mac : skb.tail])]
    tci = skb.vlan_tci
    if tci is not None:
        tcis = tci if isinstance(tci, tuple) else (tci,)
        tpids = [ETH_P_8021AD] * (len(tcis) - 1) + [ETH_P_8021Q]
        tags = b"".join(_TAG.pack(tpid, t & 0xFFFF) for tpid, t in zip(tpids, tcis, strict=True))
        parts[0] = parts[0][:12] + tags + parts[0][12:]
    for fbuf, start, end in skb.frags:
        parts.append(bytes(fbuf[start:end]))
    return b"".join(parts)


def pcap_name(kernel: str, dev: str) -> str:
    """File name for one kernel's device: ``<kernel>-<dev>.pcap``, path separators replaced by ``_``."""
    safe = [s.replace(os.sep, "_").replace("/", "_") for s in (kernel, dev)]
    return f"{safe[0]}-{safe[1]}.pcap"


class DevicePcaps:
    """An ``on_deliver`` observer that writes ``DIR/<kernel>-<dev>.pcap`` for every device that delivers.

    Files are created on the first skb a device delivers; each record is written at delivery (the skb's bytes
    may be rewritten later, e.g. by the tunnel stage's gro_complete chain on a GSO skb in 6.1+ kernels), with the
    delivery time in ns as its timestamp. Call ``close()`` at the end.
    Args: directory: created (with parents) if missing. Raises: OSError when it cannot be created or written.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        if not os.access(self.dir, os.W_OK):
            raise PermissionError(13, "Permission denied", str(self.dir))
        self.writers: dict[tuple[str, str], PcapWriter] = {}
        self.frames: Counter = Counter()

    def path(self, kernel: str, dev: str) -> Path:
        """Where ``kernel``'s ``dev`` capture is written."""
        return self.dir / pcap_name(kernel, dev)

    def __call__(self, kernel: str, stage: str, dev: str, skb, now_ns: int) -> None:
        key = (kernel, dev)
        w = self.writers.get(key)
        if w is None:
            w = self.writers[key] = PcapWriter(self.path(kernel, dev))
        w.write(now_ns, skb_frame(skb))
        self.frames[key] += 1

    def close(self) -> None:
        """Close every file. Idempotent."""
        for w in self.writers.values():
            w.close()

    def written(self) -> list[tuple[Path, int]]:
        """``(path, frames)`` of each file written, in creation order."""
        return [(self.path(k, d), self.frames[(k, d)]) for k, d in self.writers]


def open_device_pcaps(directory: str | None) -> DevicePcaps | None:
    """``DevicePcaps(directory)``, or None without a directory. Raises ValueError (one line) when it cannot be used."""
    if not directory:
        return None
    try:
        return DevicePcaps(directory)
    except OSError as e:
        raise ValueError(f"--write-pcap {directory}: {e.strerror or e}") from None


class Observers:
    """Several ``on_deliver`` observers behind one callable (the replay takes one); forwards ``bind``."""

    def __init__(self, *observers) -> None:
        self.observers = [o for o in observers if o is not None]

    def bind(self, input_stats) -> None:
        for o in self.observers:
            if hasattr(o, "bind"):
                o.bind(input_stats)

    def __call__(self, kernel: str, stage: str, dev: str, skb, now_ns: int) -> None:
        for o in self.observers:
            o(kernel, stage, dev, skb, now_ns)
