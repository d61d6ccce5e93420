"""net/core/gro_cells.c: ``gro_cell_poll`` budget, when cells run, checksum state on arrival
(gro-spec §6.3–§6.5).

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
from rule_frames import _sw, frames, specs
from test_kernel_harness import rig

from gro_replay.kernel.model import K_5_11, K_5_12
from gro_replay.packet.build import ACK, PSH


# -- checksums: the gate, software sums, bad checksums (§4, §6.1, §6.5) -----------------------------------------
@pytest.mark.parametrize(
    ("model", "nic", "tunnel_sw"),
    [
        (K_5_11, "none", 3 * 1420),  # gro-spec §6.5 row NONE: cell sees (0,0), FULL_SUM over inner TCP
        (K_5_11, "unnecessary", 3 * 1420),  # row UNN/L0: udp4_csum_init consumed the level
        (K_5_11, "complete", 0),  # row COMPLETE: csum reduced by the pulls, CHECK_WITH without a sum
        (K_5_12, "none", 0),  # post-fix: phys GRO promoted to UNNECESSARY/1, one level left at the cell
    ],
)
def test_gro_cells_checksum_state_on_arrival(model, nic, tunnel_sw):
    r = rig(model, nic=nic)
    sp = [replace(s, flags=ACK | PSH) for s in specs(3)]  # PSH: nothing is held anywhere
    r.poll(frames(sp))
    assert r.rec.lens("tunnel") == [1440] * 3
    assert _sw(r)[2] == tunnel_sw


# -- gro_cells (§6.3, §6.4) ---------------------------------------------------------------------------------------
def test_gro_cell_poll_takes_at_most_64_per_poll():
    r = rig(K_5_11)
    f = frames(specs(128, [500] * 128))
    napi = r.kernel.phys_napi
    for i in (0, 64):  # two phys polls before the cells run: 128 skbs queued on the cell
        napi.poll([r.skb(x) for x in f[i : i + 64]], 0)
    assert len(r.kernel.tunnel_cells[0].napi_skbs) == 128
    r.kernel.run_gro_cells(0)
    # gro_cell_poll(budget 64) twice, each exhausting its budget (HZ 250: flush all): 40 + 64·500 each
    assert r.rec.lens("tunnel") == [32040, 32040]


def test_gro_cells_run_after_each_phys_poll():
    r = rig(K_5_11)
    f = frames(specs(20))
    r.poll(f[:10], now_ns=0)
    r.poll(f[10:], now_ns=1_000)
    # net_rx_action: the cell scheduled by a phys poll runs before the next phys poll (gro-spec §6.4), and ends
    # below budget with a full flush: two aggregates of 10 segments, not one of 20
    assert r.rec.lens("tunnel") == [14040, 14040]
