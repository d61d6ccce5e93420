"""kernel/kernel.py: one kernel's devices and tunnel sockets.

A tunnel device is made per UDP port (``ip link add vxlan0 type vxlan dstport 4789 …``: one socket, one device, one
gro_cells); the simulator names the first device of a kind after the kind's device and a further port's device
``NAME-PORT``. A port belongs to one socket (the kernel's bind of a second UDP socket to the port fails).
"""

from __future__ import annotations

import pytest

from gro_replay.kernel.kernel import Kernel, tunnel_devices
from gro_replay.kernel.model import K_6_18
from gro_replay.sim import ReplayConfig


def test_tunnel_devices_one_per_port_in_creation_order():
    assert tunnel_devices("vxlan0", (4789, 8472), "geneve0", (6081, 6082)) == [
        ("vxlan0", "vxlan", 4789),
        ("vxlan0-8472", "vxlan", 8472),
        ("geneve0", "geneve", 6081),
        ("geneve0-6082", "geneve", 6082),
    ]


def test_one_name_for_both_kinds_names_the_geneve_device_by_its_port():
    # --tunnel-dev flannel.1 names both kinds: the Geneve device takes NAME-PORT, one name per device
    assert tunnel_devices("flannel.1", (4789, 8472), "flannel.1", (6081,)) == [
        ("flannel.1", "vxlan", 4789),
        ("flannel.1-8472", "vxlan", 8472),
        ("flannel.1-6081", "geneve", 6081),
    ]


def test_a_further_port_s_name_stays_within_fifteen_bytes():
    # dev_valid_name (net/core/dev.c): at most IFNAMSIZ - 1 = 15 bytes; the base is cut to leave room for -PORT
    assert tunnel_devices("cilium_vxlan", (8472, 4789), "abcdefghijklmno", (6081, 6082)) == [
        ("cilium_vxlan", "vxlan", 8472),
        ("cilium_vxl-4789", "vxlan", 4789),
        ("abcdefghijklmno", "geneve", 6081),
        ("abcdefghij-6082", "geneve", 6082),
    ]
    assert all(len(n.encode()) <= 15 for n, _k, _p in tunnel_devices("é" * 7, (1, 4789), "g", ()))


def test_the_kernel_makes_the_devices_tunnel_devices_names():
    k = Kernel(K_6_18, vxlan_ports=(4789, 8472), geneve_ports=(6081,))
    assert {p: (sk.kind, sk.dev.name) for p, sk in k.udp_tunnel_sockets.items()} == {
        4789: ("vxlan", "vxlan0"),
        8472: ("vxlan", "vxlan0-8472"),
        6081: ("geneve", "geneve0"),
    }
    assert [c.napi.dev.name for c in k.tunnel_cells] == ["vxlan0", "vxlan0-8472", "geneve0"]


def test_the_configs_devices_are_the_kernels():
    cfg = ReplayConfig(vxlan_ports=(4789, 8472, 4790), geneve_ports=(6081,), phys_dev="ens1")
    assert cfg.devices() == [
        ("ens1", "phys", None),
        ("vxlan0", "tunnel", 4789),
        ("vxlan0-8472", "tunnel", 8472),
        ("vxlan0-4790", "tunnel", 4790),
        ("geneve0", "tunnel", 6081),
    ]


def test_a_port_given_to_two_tunnels_is_refused():
    with pytest.raises(ValueError, match="UDP port 4789 is configured for two tunnels"):
        Kernel(K_6_18, vxlan_ports=(4789,), geneve_ports=(4789,))
