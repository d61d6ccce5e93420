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
Formats: pcapng (the CLI's default): one file per kernel, ``DIR/<kernel>.pcapng``, with one interface block per
simulated device (``eth0``, ``vxlan0``, ``vxlan0-8472``, ``geneve0``: ``if_name``, as sim/config.py
``ReplayConfig.devices`` names them; the kernel model and the device's GRO stage in ``if_description``; a device
of a port found while replaying, ``--vxlan-port auto``, gets its block before its first packet) and, per packet,
an ``opt_comment`` saying what GRO did: ``segments=N gso_size=BYTES end=FUNCTION:CONDITION`` (the wire frames
the skb carries, ``skb_shinfo(skb)->gso_size`` and the reason it ended, ``kernel/reasons.py``), so Wireshark's
packet list shows it. Classic pcap: one file per kernel and device,
``DIR/<kernel>-<dev>.pcap``, frames only.

Left out: the TPID of a stripped tag (not kept by the model: 802.1Q is written, 802.1ad outside it for a QinQ
pair); the packet direction.
"""

from __future__ import annotations

import os
import struct
from collections import Counter
from typing import TYPE_CHECKING

from ..capture.writer import PCAP_TS_NS_MAX, PCAPNG_TS_NS_MAX, PcapngWriter, PcapWriter
from ..project import __version__

if TYPE_CHECKING:
    from pathlib import Path

ETH_P_8021Q = 0x8100
ETH_P_8021AD = 0x88A8
_TAG = struct.Struct("!HH")


def skb_frame(skb) -> bytes:
    """The bytes a capture tap on the delivering device records for ``skb``.

    Args: skb: a delivered ``SkBuff`` (``buf`` from ``mac_header`` to ``tail`` is its own frame, its linear part
    and its own page frags, ``data_len``, alike; ``frags`` are ``(buf, start, end)`` payload slices). Returns: the
    frame, ``skb_mac_header_len + skb->len`` bytes long (plus 4 per re-inserted VLAN tag). Kernel:
    net/packet/af_packet.c ``packet_rcv`` (``skb_push`` back to the MAC header;
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


class PcapTimeError(ValueError):
    """A delivery time the ``--write-pcap`` format cannot hold (one line naming the option, the directory and the
    time). The run stops: a file that silently lacks frames is not written as a success."""


#: format → (last nanosecond it holds, that time in words)
_TS_LIMITS = {
    "pcap": (
        PCAP_TS_NS_MAX,
        "classic pcap holds 0 .. 2^32 s (until 2106-02-07 06:28:16 UTC; pcapng holds more)",
    ),
    "pcapng": (PCAPNG_TS_NS_MAX, "pcapng holds 0 .. 2^64 ns (until 2554-07-21 23:34:33 UTC)"),
}


def _time_words(ts_ns: int) -> str:
    """``"4611686018.427387904 s (2116-02-20 23:53:38 UTC)"``: a time in ns since the epoch, as the error says it."""
    sec, ns = divmod(ts_ns, 1_000_000_000)
    try:
        import datetime

        when = datetime.datetime.fromtimestamp(sec, datetime.timezone.utc).strftime(
            " (%Y-%m-%d %H:%M:%S UTC)"
        )
    except (OverflowError, ValueError, OSError):
        when = ""
    return f"{sec}.{ns:09d} s{when}"


def pcap_name(kernel: str, dev: str) -> str:
    """File name for one kernel's device: ``<kernel>-<dev>.pcap``, path separators replaced by ``_``."""
    safe = [s.replace(os.sep, "_").replace("/", "_") for s in (kernel, dev)]
    return f"{safe[0]}-{safe[1]}.pcap"


STAGE_DESCRIPTIONS = {
    "phys": "physical device: NAPI GRO (dev_gro_receive)",
    "tunnel": "tunnel device: gro_cells GRO after decapsulation",
}


def skb_comment(skb) -> str:
    """The pcapng packet comment for a delivered skb: ``segments=N gso_size=BYTES end=FUNCTION:CONDITION``.

    ``segments``: wire frames the skb carries (``NAPI_GRO_CB(skb)->count`` of a GRO packet, 1 for a frame that was
    not merged); ``gso_size``: ``skb_shinfo(skb)->gso_size`` at delivery (0: not GSO); ``end``: why the skb
    ended (``NAPI_GRO_CB(skb)->why``, names of kernel/reasons.py).
    """
    return f"segments={len(skb.frames)} gso_size={skb.gso_size} end={skb.cb.why or 'unknown'}"


class DevicePcaps:
    """An ``on_deliver`` observer that writes what every device delivered, in pcapng (default of the CLI) or pcap.

    ``fmt`` "pcap": ``DIR/<kernel>-<dev>.pcap`` per device that delivers, frames only. ``fmt`` "pcapng":
    ``DIR/<kernel>.pcapng`` per kernel, one interface per device of ``devices`` (``(name, stage)`` pairs) described
    with ``kernels`` (name → release), a comment per packet (``skb_comment``). Files are created on the first skb
    they get; each record is written at delivery (the skb's bytes may be rewritten later, e.g. by the tunnel
    stage's gro_complete chain on a GSO skb in 6.1+ kernels), with the delivery time in ns as its timestamp.
    Call ``close()`` at the end.
    Args: directory: created (with parents) if missing; outputs: a ``gro_replay.outputs.RunOutputs`` that makes
    each file a temporary one renamed into place when the run succeeds (None: written in place).
    Raises: OSError when it cannot be created or written.
    """

    #: why the replay takes the frame-by-frame path with this observer (sim/engine_path.py ``observer_reasons``): it
    #: reads each delivered skb's bytes, which the batch path's cached delivery events do not hold
    frame_by_frame_reason = "--write-pcap reads each skb's bytes"

    def __init__(
        self,
        directory: str | os.PathLike[str],
        fmt: str = "pcap",
        devices: list[tuple[str, str]] | None = None,
        kernels: dict[str, str] | None = None,
        outputs=None,
    ) -> None:
        if fmt not in ("pcap", "pcapng"):
            raise ValueError(f"unknown pcap format {fmt!r}")
        from pathlib import Path  # only with --write-pcap: pathlib brings urllib.parse and ipaddress (~5 ms)

        self.name = os.fspath(directory)
        self.dir = Path(directory)
        self.outputs = outputs
        if outputs is not None:
            outputs.make_dir(self.dir, "--write-pcap")
        self.dir.mkdir(parents=True, exist_ok=True)
        if not os.access(self.dir, os.W_OK):
            raise PermissionError(13, "Permission denied", str(self.dir))
        self.fmt = fmt
        self.devices = list(devices or [("eth0", "phys"), ("vxlan0", "tunnel"), ("geneve0", "tunnel")])
        self.kernels = dict(kernels or {})
        self.writers: dict[tuple[str, str], PcapWriter | PcapngWriter] = {}
        self.frames: Counter = Counter()
        #: per kernel, each device's pcapng interface id
        self._ifaces: dict[str, dict[str, int]] = {}

    def path(self, kernel: str, dev: str) -> Path:
        """Where ``kernel``'s ``dev`` capture is written (pcapng: the kernel's file, shared by its devices)."""
        if self.fmt == "pcapng":
            return self.dir / pcapng_name(kernel)
        return self.dir / pcap_name(kernel, dev)

    def _dest(self, path: Path) -> str | Path:
        """Where the file for ``path`` is written: a temporary file beside it under ``outputs``, else ``path``."""
        if self.outputs is None:
            return path
        return self.outputs.temp_path(path, "--write-pcap")

    def _description(self, kernel: str, stage: str) -> str:
        """An interface block's ``if_description``: the device's GRO stage and ``kernel``'s model."""
        release = self.kernels.get(kernel)
        model = f"kernel {kernel}" + (f" (Linux v{release} model)" if release else "")
        return f"{STAGE_DESCRIPTIONS[stage]}; {model}; gro-replay"

    def _pcapng(self, kernel: str) -> PcapngWriter:
        w = PcapngWriter(self._dest(self.path(kernel, "")), [], application=f"gro-replay {__version__}")
        self._ifaces[kernel] = {
            name: w.add_interface(name, self._description(kernel, stage)) for name, stage in self.devices
        }
        return w

    def __call__(self, kernel: str, stage: str, dev: str, skb, now_ns: int) -> None:
        """Write the skb ``dev`` of ``kernel`` delivered at ``now_ns`` (ns since the epoch). Raises: PcapTimeError
        when the output format cannot hold ``now_ns``; OSError whose ``filename`` is the file's path in the
        directory (not its temporary name)."""
        try:
            self._write(kernel, stage, dev, skb, now_ns)
        except OSError as e:
            key = (kernel, "") if self.fmt == "pcapng" else (kernel, dev)
            raise OSError(e.errno, e.strerror, str(self.path(*key))) from None

    def _write(self, kernel: str, stage: str, dev: str, skb, now_ns: int) -> None:
        last, holds = _TS_LIMITS[self.fmt]
        if not 0 <= now_ns <= last:
            raise PcapTimeError(
                f"--write-pcap {self.name}: {kernel} {dev} delivered a frame at {_time_words(now_ns)}, which "
                f"--pcap-format {self.fmt} cannot hold: {holds}"
            )
        if self.fmt == "pcapng":
            w = self.writers.get((kernel, ""))
            if not isinstance(w, PcapngWriter):  # None: this kernel's first skb (one format per run)
                w = self.writers[(kernel, "")] = self._pcapng(kernel)
            ifaces = self._ifaces[kernel]
            iface = ifaces.get(dev)
            if iface is None:  # not declared up front (a port found by --vxlan-port auto): its block here
                iface = ifaces[dev] = w.add_interface(dev, self._description(kernel, stage))
            w.write(now_ns, skb_frame(skb), iface, skb_comment(skb))
            self.frames[(kernel, "")] += 1
            return
        key = (kernel, dev)
        w = self.writers.get(key)
        if w is None:
            w = self.writers[key] = PcapWriter(self._dest(self.path(kernel, dev)))
        w.write(now_ns, skb_frame(skb))
        self.frames[key] += 1

    def close(self) -> None:
        """Close every file. Idempotent. Raises OSError (``filename``: the file's path in the directory) after
        closing the others."""
        error = None
        for (kernel, dev), w in self.writers.items():
            try:
                w.close()
            except OSError as e:
                error = error or OSError(e.errno, e.strerror, str(self.path(kernel, dev)))
        if error is not None:
            raise error

    def written(self) -> list[tuple[Path, int]]:
        """``(path, frames)`` of each file written, in creation order."""
        return [(self.path(k, d), self.frames[(k, d)]) for k, d in self.writers]


def pcapng_name(kernel: str) -> str:
    """File name for one kernel's devices: ``<kernel>.pcapng``, path separators replaced by ``_``."""
    return f"{kernel.replace(os.sep, '_').replace('/', '_')}.pcapng"


def open_device_pcaps(
    directory: str | None, fmt: str = "pcap", config=None, outputs=None
) -> DevicePcaps | None:
    """``DevicePcaps`` for ``directory`` (None without one); ``config`` (a ``ReplayConfig``) names the devices
    and kernels; ``outputs``: see ``DevicePcaps``. Raises ValueError (one line) when the directory cannot be
    used."""
    if not directory:
        return None
    devices = kernels = None
    if config is not None:
        devices = list(dict.fromkeys((name, stage) for name, stage, _port in config.devices()))
        kernels = {m.name: m.release for m in config.kernels}
    try:
        return DevicePcaps(directory, fmt, devices, kernels, outputs)
    except OSError as e:
        raise ValueError(f"--write-pcap {directory}: {e.strerror or e}") from None


class Observers:
    """Several ``on_deliver`` observers behind one callable (the replay takes one); forwards ``bind``. Each skb
    goes to every observer before the next skb (observers may share a stream), so it takes deliveries one at a time
    (no ``deliver_batch``: report/deliveries.py)."""

    def __init__(self, *observers) -> None:
        self.observers = [o for o in observers if o is not None]

    @property
    def served_from_events(self) -> bool:
        return all(getattr(o, "served_from_events", False) for o in self.observers)

    @property
    def frame_by_frame_reason(self) -> str | None:
        """The first observer's that is not ``served_from_events`` (sim/engine_path.py ``observer_reasons``)."""
        for o in self.observers:
            if not getattr(o, "served_from_events", False):
                return getattr(o, "frame_by_frame_reason", None)
        return None

    def bind(self, input_stats) -> None:
        for o in self.observers:
            if hasattr(o, "bind"):
                o.bind(input_stats)

    def __call__(self, kernel: str, stage: str, dev: str, skb, now_ns: int) -> None:
        for o in self.observers:
            o(kernel, stage, dev, skb, now_ns)
