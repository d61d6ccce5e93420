"""A UDP tunnel socket: the port a vxlan or geneve device listens on, with its receive and GRO callbacks.

Kernel: include/net/udp_tunnel.h ``struct udp_tunnel_sock_cfg``; net/ipv4/udp_tunnel_core.c
``setup_udp_tunnel_sock`` (sets ``encap_rcv``, ``gro_receive``, ``gro_complete`` on the ``struct udp_sock``).
Left out: socket lookup by address (one socket per port), ``encap_destroy``, ``encap_err_lookup``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .gro_cells import GroCells
from .netdevice import NetDevice


@dataclass(slots=True)
class UdpTunnelSock:
    """A UDP tunnel socket (``struct udp_sock`` with ``encap_rcv``/``gro_receive``/``gro_complete`` set)."""

    kind: str
    port: int
    dev: NetDevice
    cells: GroCells
    gro_receive: Callable
    gro_complete: Callable
    encap_rcv: Callable
    #: accept a zero UDPv6 checksum (vxlan/geneve ``udp6zerocsumrx``; off by default, RFC 6936)
    no_check6_rx: bool = False
    #: VXLAN_F_GBP in ``vs->flags`` (``ip link add … type vxlan gbp``): vxlan_rcv parses the Group Based Policy bits
    gbp: bool = False
