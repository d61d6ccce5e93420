"""Frames and helpers shared by the kernel-rule tests in this folder (formerly the top of
tests/test_kernel_rules.py).

Frames are VXLAN over IPv4 (outer UDP checksum 0 unless a test says otherwise), inner IPv4/TCP without options,
1400-byte payloads: one segment is 1490 bytes on the phys device (outer IPv4 20 + UDP 8 + VXLAN 8 + inner Ethernet
14 + inner IPv4 20 + TCP 20 = 90 header bytes) and 1440 on the tunnel device. Skbs are handed to the phys NAPI the
way a driver does (``Rig.skb``); expected values come from the kernel rule cited next to each (gro-spec section,
kernel function, commit), never from the code under test.
"""

from __future__ import annotations

from dataclasses import replace

from gro_replay.kernel.model import K_5_12, K_6_18
from gro_replay.packet.build import FrameSpec, build_frame, flow_specs
from gro_replay.packet.csum import ipv4_header_checksum

BASE = FrameSpec(timestamps=False, payload=1400)
#: the 6.10–6.17 state of inet_gro_flush (4b0ebbca3e16), before the v6.18 IP ID series
K_6_10 = replace(
    K_6_18, name="6.10", release="6.10", inet_gro_checks_outer_id=False, inet_gro_fixedid_without_df=False
)
#: 6.18 plus ab4c8b6f7fcb (2026): an incoming CWR no longer flushes by itself
K_AB4C = replace(K_6_18, name="6.18+ab4c8b6f7fcb", tcp_gro_cwr_no_flush=True)
POST = [K_5_12, K_6_18]


def specs(n: int = 3, sizes: list[int] | None = None, spec: FrameSpec = BASE, **kw) -> list[FrameSpec]:
    """``n`` contiguous segments of one flow (inner and outer IPv4 IDs incrementing from 0)."""
    return flow_specs(spec, sizes or [1400] * n, **kw)


def frames(sp: list[FrameSpec]) -> list[bytes]:
    return [build_frame(s) for s in sp]


def fix_outer_ipv4_checksum(frame: bytearray) -> bytes:
    frame[24:26] = b"\0\0"
    frame[24:26] = ipv4_header_checksum(bytes(frame[14:34])).to_bytes(2, "big")
    return bytes(frame)


def _three(r, f):
    r.gro(f[0])
    r.gro(f[1])
    after1 = (r.queued(), r.held())
    r.gro(f[2])
    return after1, (r.queued(), r.held())


#: rules that make the held packet "same flow, must not merge": p completed, the new segment becomes the head
FLUSH_P = ([(0,)], [(1,)]), ([(0,)], [(1, 2)])


def _sw(r):
    return (
        r.kernel.phys_napi.stats.sw_csum_bytes,
        r.rec.stack_sw_bytes,
        sum(c.napi.stats.sw_csum_bytes for c in r.kernel.tunnel_cells),
    )
