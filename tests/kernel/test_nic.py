"""gro_replay/kernel/nic.py (the NIC driver RX step): RSS hashing and the ``--nic`` driver presets.

From the former tests/test_kernel_rules.py:
Frames are VXLAN over IPv4 (outer UDP checksum 0 unless a test says otherwise), inner IPv4/TCP without options,
1400-byte payloads: one segment is 1490 bytes on the phys device (outer IPv4 20 + UDP 8 + VXLAN 8 + inner Ethernet
14 + inner IPv4 20 + TCP 20 = 90 header bytes) and 1440 on the tunnel device. Skbs are handed to the phys NAPI the
way a driver does (``Rig.skb``); expected values come from the kernel rule cited next to each (gro-spec section,
kernel function, commit), never from the code under test.

From the former tests/test_nic_presets.py:
--nic driver presets (issue 11 item 3): what each driver hands to GRO per frame.

Each row below is read from the driver's RX checksum function (paraphrased in gro_replay/kernel/nic.py and
gro-spec §7); "port" is the tunnel UDP port programmed into the NIC's parser (udp_tunnel_nic), "zero" an outer
UDP checksum of 0. U0/U1: CHECKSUM_UNNECESSARY with csum_level 0/1; NONE; COMPLETE.

* ice ``ice_rx_csum`` (ice_txrx_lib.c) and i40e ``i40e_rx_checksum`` (i40e_txrx.c): a tunnel packet type — only
  produced for a programmed port — bumps csum_level to 1; otherwise the frame is plain IP/UDP, level 0. The
  checksum value does not enter (EUDPE is an error bit).
* ixgbe ``ixgbe_rx_checksum`` (ixgbe_main.c): IXGBE_RXDADV_PKTTYPE_VXLAN with OUTERIPCS → level 1 (X550, port
  programmed); without it a zero-checksum UDP frame hits the 82599 errata branch (``__IXGBE_RX_CSUM_UDP_ZERO_ERR``):
  the driver returns with CHECKSUM_NONE; a computed checksum → level 0.
* mlx5 ``mlx5e_handle_csum`` (en_rx.c): IP frames get CHECKSUM_COMPLETE whatever the tunnel.
* bnxt ``bnxt_rx_pkt`` with ``RX_CMP_ENCAP`` (bnxt.h: the T_L4_CS_CALC bit) as csum_level: level 1 only when the
  outer UDP checksum of a recognised tunnel was calculated; [D] a zero checksum is not calculated.
* virtio-net ``receive_buf``: VIRTIO_NET_HDR_F_DATA_VALID → UNNECESSARY without a level.
* vmxnet3 ``vmxnet3_rx_csum``: CSUM_OK (v4) / TUC (v6) → UNNECESSARY, level 1 when HDR_INNER is set.
* ena ``ena_rx_checksum``: l4_csum_checked → UNNECESSARY (no tunnel parsing); [D] nothing to check for a zero UDP
  checksum → NONE.
* gve GQI receive (gve_rx.c): a non-zero desc->csum → CHECKSUM_COMPLETE.
* veth ``veth_xmit``: ip_summed is the sender's; a replayed frame's is CHECKSUM_NONE.
"""

from __future__ import annotations

import json

import pytest
from conftest import FIX_SAMPLE, GENEVE_SAMPLE, VXLAN4_SAMPLE
from test_fix_scenario import POST, PRE, Recorder

from gro_replay.capture.reader import open_capture
from gro_replay.cli import main
from gro_replay.kernel.model import K_5_11
from gro_replay.kernel.nic import DEFAULT_RSS_KEY, NIC_PRESETS, hw_checksums_ok, toeplitz_hash
from gro_replay.kernel.skbuff import CHECKSUM_COMPLETE, CHECKSUM_NONE, CHECKSUM_UNNECESSARY
from gro_replay.packet.decode import Decoder
from gro_replay.sim import PollModel, ReplayConfig, Replayer, replay_capture
from gro_replay.sim.engine_path import batch_eligible


# -- RX hash and buckets (§2.2; NIC RSS §7) -------------------------------------------------------------------------
def test_toeplitz_hash_matches_the_microsoft_rss_verification_suite():
    import ipaddress
    import struct

    def h(src, sport, dst, dport, ports=True):
        data = ipaddress.ip_address(src).packed + ipaddress.ip_address(dst).packed
        return toeplitz_hash(DEFAULT_RSS_KEY, data + (struct.pack("!HH", sport, dport) if ports else b""))

    # Microsoft "Verifying the RSS Hash Calculation": IPv4 and TCP/IPv4 rows under the default 40-byte key
    assert h("66.9.149.187", 2794, "161.142.100.80", 1766, ports=False) == 0x323E8FC2
    assert h("66.9.149.187", 2794, "161.142.100.80", 1766) == 0x51CCC178
    assert h("199.92.111.2", 14230, "65.69.140.83", 4739) == 0xC626B0EA
    assert h("24.19.198.95", 12898, "12.22.207.184", 38024) == 0x5C2B394A


# -- from the former tests/test_nic_presets.py ----------------------------------------
U0 = (CHECKSUM_UNNECESSARY, 0)
U1 = (CHECKSUM_UNNECESSARY, 1)
NONE = (CHECKSUM_NONE, 0)
COMPLETE = (CHECKSUM_COMPLETE, 0)

#: preset → {(outer zero checksum, port offloaded): state}; the same for outer IPv4 and IPv6 in every driver
CASES = {
    "ice": {(True, False): U0, (False, False): U0, (True, True): U1, (False, True): U1},
    "i40e": {(True, False): U0, (False, False): U0, (True, True): U1, (False, True): U1},
    "ixgbe": {(True, False): NONE, (False, False): U0, (True, True): U1, (False, True): U1},
    "mlx5": {
        (True, False): COMPLETE,
        (False, False): COMPLETE,
        (True, True): COMPLETE,
        (False, True): COMPLETE,
    },
    "bnxt": {(True, False): NONE, (False, False): U0, (True, True): U0, (False, True): U1},
    "virtio-net": {(True, False): U0, (False, False): U0, (True, True): U0, (False, True): U0},
    "vmxnet3": {(True, False): U0, (False, False): U0, (True, True): U1, (False, True): U1},
    "ena": {(True, False): NONE, (False, False): U0, (True, True): NONE, (False, True): U0},
    "gve": {
        (True, False): COMPLETE,
        (False, False): COMPLETE,
        (True, True): COMPLETE,
        (False, True): COMPLETE,
    },
    "veth": {(True, False): NONE, (False, False): NONE, (True, True): NONE, (False, True): NONE},
}

#: where each decision is made (the test names the driver code; the preset must cite the same function)
DRIVER_CODE = {
    "ice": "ice_rx_csum",
    "i40e": "i40e_rx_checksum",
    "ixgbe": "ixgbe_rx_checksum",
    "mlx5": "mlx5e_handle_csum",
    "bnxt": "RX_CMP_ENCAP",
    "virtio-net": "VIRTIO_NET_HDR_F_DATA_VALID",
    "vmxnet3": "vmxnet3_rx_csum",
    "ena": "ena_rx_checksum",
    "gve": "gve_rx.c",
    "veth": "veth_xmit",
}


def test_every_driver_of_the_issue_has_a_preset():
    assert set(NIC_PRESETS) == set(CASES) == set(DRIVER_CODE)


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("v6", [False, True], ids=["outer-ipv4", "outer-ipv6"])
def test_state_handed_to_gro_for_the_four_cases(name, v6):
    p = NIC_PRESETS[name]
    assert DRIVER_CODE[name] in p.source
    got = {(zero, port): p.rx_state(v6, zero, port) for zero in (True, False) for port in (True, False)}
    assert got == CASES[name]
    # a frame that is no VXLAN/Geneve frame is never tunnel level 1
    assert p.rx_state(v6, False, True, tunnelled=False)[1] == 0


def test_presets_rss_and_moderation_defaults():
    # RSS fields: ixgbe and vmxnet3 hash UDP by addresses only by default; virtio-net (no HASH_REPORT) and veth
    # have no RX hash. Moderation: ICE_DFLT_RX_ITR / I40E_ITR_RX_DEF = ITR_20K = 50 µs, IXGBE_20K_ITR (200 >> 2),
    # MLX5E_PARAMS_DEFAULT_RX_CQ_MODERATION_USEC_FROM_CQE 3, bnxt_init_dflt_coal rx coal_ticks 10,
    # ENA_INTR_INITIAL_RX_INTERVAL_USECS 0; none in gve GQI, virtio-net, vmxnet3 (host), veth.
    rss = {n: p.rss for n, p in NIC_PRESETS.items()}
    assert rss == {"ice": "4-tuple", "i40e": "4-tuple", "ixgbe": "2-tuple", "mlx5": "4-tuple", "bnxt": "4-tuple",
                   "virtio-net": "none", "vmxnet3": "2-tuple", "ena": "4-tuple", "gve": "4-tuple",
                   "veth": "none"}  # fmt: skip
    usecs = {n: p.rx_usecs for n, p in NIC_PRESETS.items()}
    assert usecs == {"ice": 50, "i40e": 50, "ixgbe": 50, "mlx5": 3, "bnxt": 10, "virtio-net": 0, "vmxnet3": 0,
                     "ena": 0, "gve": 0, "veth": 0}  # fmt: skip
    # a bad checksum: CHECKSUM_COMPLETE drivers hand the sum (the stack finds it), veth keeps the sender's state
    assert {n for n, p in NIC_PRESETS.items() if not p.bad_csum_none} == {"mlx5", "gve", "veth"}


def _frames(path):
    with open_capture(path) as cap:
        return [r[1] for r in cap]


def test_hw_checksum_check_follows_the_level():
    dec = Decoder((4789, 8472), (6081,))
    # fix sample: outer UDP checksum 0 (not checked), inner TCP checksum correct
    f = _frames(FIX_SAMPLE)[0]
    l4 = dec.decode(f)[4]
    assert hw_checksums_ok(f, 0, "vxlan", l4) and hw_checksums_ok(f, 1, "vxlan", l4)
    bad = bytearray(f)
    bad[-1] ^= 0xFF  # last TCP payload byte: the inner TCP checksum no longer verifies
    # level 0: the NIC checked only the (absent) outer UDP checksum; level 1: it checked the inner TCP one
    assert hw_checksums_ok(bytes(bad), 0, "vxlan", l4) and not hw_checksums_ok(bytes(bad), 1, "vxlan", l4)
    # computed outer checksum: a corrupted payload breaks the outer UDP checksum too, seen at level 0
    g = _frames(VXLAN4_SAMPLE)[0]
    gl4 = dec.decode(g)[4]
    assert hw_checksums_ok(g, 0, "vxlan", gl4) and hw_checksums_ok(g, 1, "vxlan", gl4)
    gbad = bytearray(g)
    gbad[-1] ^= 0xFF
    assert not hw_checksums_ok(bytes(gbad), 0, "vxlan", gl4)
    # Geneve with an 8-byte option over IPv6: with the outer checksum field cleared (nothing to check there) the
    # inner TCP checksum is found past the option and the inner Ethernet header, checked at level 1 only
    h = bytearray(_frames(GENEVE_SAMPLE)[0])
    hl4 = dec.decode(bytes(h))[4]
    h[14 + 40 + 6 : 14 + 40 + 8] = b"\0\0"
    assert hw_checksums_ok(bytes(h), 1, "geneve", hl4)
    h[-1] ^= 0xFF
    assert hw_checksums_ok(bytes(h), 0, "geneve", hl4) and not hw_checksums_ok(bytes(h), 1, "geneve", hl4)


@pytest.mark.parametrize(
    ("name", "port", "pre_trace"),
    [
        ("ice", False, PRE),  # U0: the pre-fix gate refuses the zero-checksum frames (gro-spec §4.7 row 3)
        ("ice", True, POST),  # U1: csum_cnt covers the inner TCP, aggregated even before the fix
        ("ixgbe", False, PRE),  # NONE (82599 errata): refused too
        ("bnxt", True, PRE),  # U0: a zero outer checksum is not "calculated", level stays 0
        ("mlx5", False, POST),  # COMPLETE: aggregated before the fix (gro-spec §7.3)
        ("veth", False, PRE),  # NONE
    ],
)
def test_preset_state_flows_through_the_nic_step(name, port, pre_trace):
    rec = Recorder()
    cfg = ReplayConfig(
        kernels=(K_5_11,), rx_csum="nic", nic=name, nic_tunnel_port=port, poll=PollModel("gap", 5)
    )
    replay_capture(str(FIX_SAMPLE), cfg, rec)
    assert [e[:4] for e in rec.events["pre-fix"]] == pre_trace
    assert not batch_eligible(cfg, False)  # the per-frame path: the preset decides each frame


def _flow_rx(**kw) -> list[tuple[int, bool]]:
    cfg = ReplayConfig(**kw)
    rep = Replayer(cfg)
    frames = list(rep.decoded((ts, buf, len(buf), 1) for ts, buf in _records(VXLAN4_SAMPLE)))
    return [(f[4], f[5]) for f in frames], frames


def _records(path):
    with open_capture(path) as cap:
        return [(r[0], r[1]) for r in cap]


def test_rss_two_tuple_hashes_the_outer_addresses_only():
    rx, frames = _flow_rx(rx_csum="nic", nic="ixgbe", rss="toeplitz-l3")
    f = frames[0][1]
    addrs = f[26:34]  # outer IPv4 saddr + daddr
    assert rx[0] == (toeplitz_hash(DEFAULT_RSS_KEY, addrs), False)
    four, _ = _flow_rx(rss="toeplitz")
    assert four[0][1] is True and four[0][0] != rx[0][0]


def test_cli_preset_overrides_and_json(runner):
    r = runner.invoke(main, [str(FIX_SAMPLE), "--poll", "gap:5", "--nic", "ixgbe", "--format", "json"])
    assert r.exit_code == 0, r.output
    nic = json.loads(r.output)["config"]["nic"]
    assert nic["rx_csum"] == "nic" and nic["rss"] == "toeplitz-l3"
    assert nic["preset"]["name"] == "ixgbe" and nic["preset"]["rx_usecs"] == 50
    assert nic["preset"]["tunnel_port"] is False and "ixgbe_rx_checksum" in nic["preset"]["source"]
    # --rx-csum and --rss still override the preset
    r = runner.invoke(
        main,
        [
            str(FIX_SAMPLE),
            "--poll",
            "gap:5",
            "--nic",
            "ixgbe",
            "--rx-csum",
            "complete",
            "--rss",
            "none",
            "--format",
            "json",
        ],
    )
    nic = json.loads(r.output)["config"]["nic"]
    assert (nic["rx_csum"], nic["rss"]) == ("complete", "none")
    doc = json.loads(r.output)
    assert all(k["stages"]["phys"]["skbs_delivered"] == 2 for k in doc["kernels"])  # COMPLETE: merged pre-fix
    # the text names the preset and, for the pre-fix gate, the state the preset hands (NONE on ixgbe)
    t = runner.invoke(main, [str(FIX_SAMPLE), "--poll", "gap:5", "--nic", "ixgbe"])
    assert "NIC: --nic ixgbe (tunnel port off)" in t.output
    assert "the NIC marks them CHECKSUM_NONE" in t.output
    u = runner.invoke(main, [str(FIX_SAMPLE), "--nic-tunnel-port", "on"])
    assert u.exit_code == 2 and "--nic-tunnel-port needs --nic" in u.output


def test_level_one_of_a_tunnel_inside_the_tunnel_is_the_inner_headers_udp():
    """VXLAN in VXLAN: the checksum a level-1 NIC checks is the inner header's own L4, the nested VXLAN's UDP. Its
    checksum 0 has nothing to check (it was summed as if it had one, and valid frames read as bad: CHECKSUM_NONE
    instead of UNNECESSARY level 1 under a --nic preset, breaker34); a corrupt innermost payload breaks a computed
    nested UDP checksum (level 1 only, the outer one being 0)."""
    from test_verdict import _nested_vxlan

    from gro_replay.packet.build import FrameSpec, build_flow

    dec = Decoder((4789, 8472), (6081,))
    for nested in ("computed", "zero"):
        (inner,) = build_flow(FrameSpec(outer_csum=nested), [1000])
        f = _nested_vxlan(inner, 100)  # outer UDP checksum 0
        l4 = dec.decode(f)[4]
        assert hw_checksums_ok(f, 0, "vxlan", l4) and hw_checksums_ok(f, 1, "vxlan", l4), nested
        bad = bytearray(f)
        bad[-1] ^= 0xFF
        assert hw_checksums_ok(bytes(bad), 0, "vxlan", l4)
        assert hw_checksums_ok(bytes(bad), 1, "vxlan", l4) == (nested == "zero"), nested


def test_a_plain_tcp_checksum_and_inner_ipv6_extension_headers_are_checked():
    """breaker42: a TCP segment that is not tunnelled had no checksum checked (a bad one handed UNNECESSARY by ice
    and merged), and an inner IPv6 header with a hop-by-hop or destination-options header was read with that
    header's type as the L4 protocol (a valid frame read as bad at level 1). Frames from packet/build.py: the inner
    Ethernet frame of a VXLAN/IPv4 one is a plain TCP frame (50 bytes of outer headers)."""
    from gro_replay.packet.build import FrameSpec, build_frame

    good, bad = (build_frame(FrameSpec(tcp_csum=c))[50:] for c in ("ok", "bad"))
    assert hw_checksums_ok(good, 0, "", 0) and not hw_checksums_ok(bad, 0, "", 0)
    dec = Decoder((4789, 8472), (6081,))
    for ext in ([(0, b"")], [(60, b"")], [(0, b""), (60, b"")]):
        for c in ("ok", "bad"):
            f = build_frame(FrameSpec(inner_ipv6=True, ipv6_ext=ext, outer_csum="zero", tcp_csum=c))
            l4 = dec.decode(f)[4]
            assert hw_checksums_ok(f, 1, "vxlan", l4) == (c == "ok"), (ext, c)


def test_tcp_in_ip_in_ip_sit_and_gre_is_checked():
    """breaker43: TCP that IP in IP (4), IPv6 in IP (SIT, 41) or GRE (47: key, Ethernet inside) carries was handed
    UNNECESSARY whatever its checksum (the Intel parsers' IP_IP and GRENAT packet types reach it, and an L4 error
    there is checksum_fail). Outer IPv4 built here; the inner packets from packet/build.py."""
    import struct

    from gro_replay.packet.build import FrameSpec, build_inner_frame
    from gro_replay.packet.csum import ip_fast_csum

    def outer(proto: int, payload: bytes) -> bytes:
        h = bytearray(
            struct.pack(
                "!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 0, 0x4000, 64, proto, 0, b"\n\0\0\1", b"\n\0\0\2"
            )
        )
        h[10:12] = ip_fast_csum(h, 0, 5).to_bytes(2, "big")
        return bytes.fromhex("020000000002020000000001") + b"\x08\x00" + bytes(h) + payload

    for c in ("ok", "bad"):
        v4 = build_inner_frame(FrameSpec(tcp_csum=c))  # Ethernet, IPv4, TCP
        v6 = build_inner_frame(FrameSpec(tcp_csum=c, inner_ipv6=True))
        frames = {
            "ipip": outer(4, v4[14:]),
            "sit": outer(41, v6[14:]),
            "gre key": outer(47, struct.pack("!HHI", 0x2000, 0x0800, 5) + v4[14:]),
            "gre eth": outer(47, struct.pack("!HH", 0, 0x6558) + v4),
        }
        for kind, f in frames.items():
            assert hw_checksums_ok(f, 0, "", 0) == (c == "ok"), (kind, c)
