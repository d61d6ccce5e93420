"""drivers/net/vxlan/vxlan_core.c ``vxlan_gro_receive`` / ``vxlan_rcv`` (gro-spec §5.1, §6.2).

From the former tests/test_kernel_rules.py:
Frames are VXLAN over IPv4 (outer UDP checksum 0 unless a test says otherwise), inner IPv4/TCP without options,
1400-byte payloads: one segment is 1490 bytes on the phys device (outer IPv4 20 + UDP 8 + VXLAN 8 + inner Ethernet
14 + inner IPv4 20 + TCP 20 = 90 header bytes) and 1440 on the tunnel device. Skbs are handed to the phys NAPI the
way a driver does (``Rig.skb``); expected values come from the kernel rule cited next to each (gro-spec section,
kernel function, commit), never from the code under test.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from rule_frames import BASE, POST, frames, specs
from test_kernel_harness import rig

from gro_replay.kernel.model import K_6_18


# -- VXLAN, Geneve, outer UDP flow matching (§4.4, §5.1, §5.2) ---------------------------------------------------
@pytest.mark.parametrize("model", POST)
@pytest.mark.parametrize(
    ("change", "merged"),
    [({"vni": 100}, True), ({"vni": 101}, False), ({"vxlan_flags": 0x0C000000}, False)],
    ids=["same", "vni", "flags"],
)
def test_vxlan_gro_receive_compares_flags_and_vni_words(model, change, merged):
    r = rig(model)
    sp = specs(2)
    sp[1] = replace(sp[1], **change)
    r.poll(frames(sp))
    assert r.rec.lens("phys") == ([2890] if merged else [1490, 1490])


def test_vxlan_rcv_drops_reserved_flag_bits_that_gro_accepted():
    r = rig(K_6_18)
    r.poll(frames([replace(BASE, vxlan_flags=0x0C000000)]))
    # vxlan_gro_receive does not validate flags; vxlan_rcv drops an unknown flag (gro-spec §5.1, §6.2)
    assert r.rec.lens("phys") == [1490]
    assert r.rec.stack == ["vxlan_rcv:reserved_bits"]
