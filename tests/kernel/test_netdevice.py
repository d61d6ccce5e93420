"""include/linux/netdevice.h / net/core/dev.h device fields GRO reads.

- ``netif_set_gro_max_size`` (net/core/dev.h, v6.3 9eefedd58ae1): setting gro_max_size also sets
  gro_ipv4_max_size when the size is at most GRO_LEGACY_MAX_SIZE (65536); above it the IPv4 limit stays 65536
  unless set on its own (``ip link set … gro_ipv4_max_size``).
- ``netif_elide_gro``: GRO is skipped when the device's NETIF_F_GRO is off (``ethtool -K DEV gro off``) or a
  generic XDP program is attached.
"""

from __future__ import annotations

import pytest

from gro_replay.kernel.netdevice import NetDevice


@pytest.mark.parametrize(
    ("gro_max_size", "gro_ipv4_max_size", "want_ipv4"),
    [(65536, None, 65536), (32768, None, 32768), (185000, None, 65536), (185000, 150000, 150000)],
)
def test_gro_ipv4_max_size_follows_gro_max_size_up_to_65536(gro_max_size, gro_ipv4_max_size, want_ipv4):
    dev = NetDevice("eth0", None, gro_max_size=gro_max_size, gro_ipv4_max_size=gro_ipv4_max_size)  # type: ignore[arg-type]
    assert (dev.gro_max_size, dev.gro_ipv4_max_size) == (gro_max_size, want_ipv4)


@pytest.mark.parametrize(
    ("gro", "xdp_generic", "elide"), [(True, False, False), (False, False, True), (True, True, True)]
)
def test_netif_elide_gro(gro, xdp_generic, elide):
    dev = NetDevice("eth0", None)  # type: ignore[arg-type]
    dev.gro, dev.xdp_generic = gro, xdp_generic
    assert dev.netif_elide_gro() is elide
