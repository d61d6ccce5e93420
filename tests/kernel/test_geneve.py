"""drivers/net/geneve.c ``geneve_gro_receive`` (gro-spec §5.1).

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

from gro_replay.packet.geneve import geneve_opt

# -- VXLAN, Geneve, outer UDP flow matching (§4.4, §5.1, §5.2) ---------------------------------------------------
GENEVE = replace(BASE, encap="geneve", geneve_options=geneve_opt(0x0102, 1, b"\0\0\0\x01"))


@pytest.mark.parametrize("model", POST)
@pytest.mark.parametrize(
    ("options", "merged"),
    [
        (geneve_opt(0x0102, 1, b"\0\0\0\x01"), True),
        (geneve_opt(0x0102, 1, b"\0\0\0\x02"), False),  # option data differs
        (geneve_opt(0x0102, 1, b"\0\0\0\x01\0\0\0\0"), False),  # opt_len differs
    ],
    ids=["same", "option_bytes", "opt_len"],
)
def test_geneve_gro_receive_compares_the_whole_header_with_options(model, options, merged):
    r = rig(model)
    sp = specs(2, spec=GENEVE)
    sp[1] = replace(sp[1], geneve_options=options)
    r.poll(frames(sp))
    # one segment: 90 + 8 bytes of options (+4 more for the longer option)
    second = 1498 + len(options) - 8
    assert r.rec.lens("phys") == ([1498 + 1400] if merged else [1498, second])


@pytest.mark.parametrize("model", POST)
@pytest.mark.parametrize("bad", ["oam", "version"])
def test_geneve_gro_receive_version_or_oam_flushes(model, bad):
    r = rig(model)
    sp = specs(2, spec=GENEVE)
    f = frames([replace(s, geneve_oam=bad == "oam") for s in sp])
    if bad == "version":
        f = [x[:42] + bytes([x[42] | 0x40]) + x[43:] for x in f]  # genevehdr ver 1 (outer csum 0: no fix-up)
    r.poll(f)
    assert r.rec.lens("phys") == [1498, 1498]
