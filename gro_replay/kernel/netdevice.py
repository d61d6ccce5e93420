"""The device, the GRO result and the offload callbacks every layer shares, below the skb and the GRO code.

Kernel: include/linux/netdevice.h (struct net_device, ``enum gro_result``, ``struct packet_offload``,
``netif_elide_gro``); ``netif_set_gro_max_size`` (net/core/dev.h).
This module imports nothing of the layers above it, the way netdevice.h only forward-declares ``struct sk_buff``
users: what a device and its layers need of the objects above (the kernel instance that owns the offload tables,
the device's NAPI, a tunnel socket's GRO callbacks) is a ``typing.Protocol`` here, and ``kernel.Kernel``,
``napi.Napi`` and ``udp_tunnel.UdpTunnelSock`` satisfy it. So no module imports one that imports it back.
Left out: every field of struct net_device that GRO does not read (features other than GRO, queues, stats).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import Protocol

from .model import KernelModel


class GroResult(IntEnum):
    """``enum gro_result``. Kernel: include/linux/netdevice.h."""

    GRO_MERGED = 0
    GRO_MERGED_FREE = 1
    GRO_HELD = 2
    GRO_NORMAL = 3
    GRO_CONSUMED = 4


@dataclass(frozen=True, slots=True)
class PacketOffload:
    """``struct packet_offload`` / ``struct net_offload`` callbacks (``gro_receive``, ``gro_complete``)."""

    gro_receive: Callable
    gro_complete: Callable


class NapiStats:
    """Counters one NAPI instance keeps: GRO results, checksum bytes summed in software, completion errors (wire
    frames inside packets whose gro_complete chain failed and that were freed)."""

    __slots__ = ("counts", "sw_csum_bytes", "complete_errors", "polls", "full_polls")

    def __init__(self) -> None:
        #: napi_gro_receive results, indexed by GroResult
        self.counts = [0] * len(GroResult)
        self.sw_csum_bytes = 0
        self.complete_errors = 0
        self.polls = 0
        self.full_polls = 0

    @property
    def results(self) -> Counter:
        """GRO results counted so far, by GroResult (results that never occurred are absent)."""
        return Counter({GroResult(i): n for i, n in enumerate(self.counts) if n})

    def count_result(self, ret: GroResult) -> None:
        self.counts[ret] += 1


class TunnelSockGro(Protocol):
    """A UDP tunnel socket as ``udp_gro_receive``/``udp_gro_complete`` find it by port: its GRO callbacks
    (``udp_sk(sk)->gro_receive`` / ``gro_complete``, called with the socket first). udp_tunnel.UdpTunnelSock."""

    @property
    def gro_receive(self) -> Callable: ...

    @property
    def gro_complete(self) -> Callable: ...


class KernelView(Protocol):
    """What the layers below ``kernel.py`` read of the kernel instance their device belongs to
    (``dev.kernel``): the behaviour switches, CONFIG_HZ, ``net.core.gro_normal_batch``, whether tunnel devices
    collect metadata, and the tables the layers find each other through. kernel.Kernel."""

    @property
    def model(self) -> KernelModel: ...

    @property
    def hz(self) -> int: ...

    @property
    def gro_normal_batch(self) -> int: ...

    @property
    def tunnel_metadata(self) -> bool: ...

    @property
    def offload_base(self) -> Mapping[int, PacketOffload]: ...

    @property
    def inet_offloads(self) -> Mapping[int, PacketOffload]: ...

    @property
    def inet6_offloads(self) -> Mapping[int, PacketOffload]: ...

    @property
    def udp_tunnel_sockets(self) -> Mapping[int, TunnelSockGro]: ...


class NapiView(Protocol):
    """What is read of a device's NAPI through the device (``skb->dev``): its counters and its clock (ns).
    napi.Napi."""

    @property
    def stats(self) -> NapiStats: ...

    @property
    def now_ns(self) -> int: ...


class NetDevice:
    """A network device as GRO sees it.

    ``hard_header_len`` bytes (14: Ethernet) are compared by ``gro_list_prepare``; ``gro_max_size`` and
    ``gro_ipv4_max_size`` (bytes, default 65536) bound ``skb_gro_receive`` (IPv4 uses the latter from v6.3);
    ``xdp_generic`` or ``gro`` off make ``netif_elide_gro`` true. ``gro_flush_timeout`` (ns) and
    ``napi_defer_hard_irqs`` are the sysfs knobs read by ``napi_complete_done``.
    Kernel: struct net_device (include/linux/netdevice.h); ``netif_set_gro_max_size`` (net/core/dev.h): setting
    gro_max_size also sets gro_ipv4_max_size when the size is at most 65536.
    """

    def __init__(
        self,
        name: str,
        kernel: KernelView,
        *,
        hard_header_len: int = 14,
        gro_max_size: int = 65536,
        gro_ipv4_max_size: int | None = None,
    ) -> None:
        self.name = name
        self.kernel = kernel
        self.hard_header_len = hard_header_len
        self.gro_max_size = gro_max_size
        if gro_ipv4_max_size is None:
            gro_ipv4_max_size = gro_max_size if gro_max_size <= 65536 else 65536
        self.gro_ipv4_max_size = gro_ipv4_max_size
        self.gro = True
        self.xdp_generic = False
        self.gro_flush_timeout = 0
        self.napi_defer_hard_irqs = 0
        #: set by Napi.__init__ (netif_napi_add) right after the device is made; never read before
        self.napi: NapiView = None  # type: ignore[assignment]

    def netif_elide_gro(self) -> bool:
        """Kernel: include/linux/netdevice.h ``netif_elide_gro``: GRO feature off or a generic XDP program."""
        return not self.gro or self.xdp_generic
