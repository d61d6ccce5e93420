"""veth's skbs from AF_PACKET are paged from 4080 bytes on the wire (kernel/nic_skb.py ``packet_alloc_skb_frags``).

Rules the expected values come from:

* net/packet/af_packet.c ``packet_snd`` → ``packet_alloc_skb``: without a virtio-net header the linear part asked
  for is ``dev->hard_header_len`` (14); a frame with ``prepad + len < PAGE_SIZE`` is all linear, where ``prepad``
  is veth's ``LL_RESERVED_SPACE`` (16) + ``needed_tailroom`` (0). So 4079 bytes: linear; 4080: 14 linear bytes and
  4066 in page frags. Page frags from net/core/skbuff.c ``alloc_skb_with_frags``: order-0 pages before
  ae6db08f8b56/09c2c90705bb (v6.6), after them the largest order up to ``PAGE_ALLOC_COSTLY_ORDER`` (3) that the
  page-aligned rest reaches, never growing again.
* net/core/gro.c ``skb_gro_receive``: a segment whose ``skb_headlen`` is at most the GRO offset (a paged skb:
  its headers only ever pulled as far as GRO read them, ``gro_pull_from_frag0``) moves its frags into the last
  skb's frags while ``nr_frags`` stays within ``MAX_SKB_FRAGS`` (17), else it is chained on the frag_list; a
  linear (kmalloc'd) head is always chained. ``dev_gro_receive`` flushes an skb with a frag_list; from
  5eddb24901ee (v6.1) a GSO skb without one can be held and merged on the tunnel device.
* Measured on the running kernel (the kernel backend, tests needing it skip without root): one inner flow under
  two outer UDP source ports (so two phys aggregates), 3 big frames interleaved with 5 of 1514 bytes, in one poll.
  The vxlan device (collect metadata: the outer ports tell the two apart) flushes the linear aggregate at once
  (frag_list) and holds the paged one until the poll ends, so the 5-frame skb comes up first when the big frames
  are 4080 bytes, and the 3-frame one first (the phys order) when they are 4079.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import batch_and_reference, skip_without_kernel_backend
from test_nic_skb_layout import _tunnel

sys.path.insert(0, str(Path(__file__).resolve().parent / "kernel"))
from rule_frames import specs  # noqa: E402

from gro_replay.capture.writer import PcapWriter  # noqa: E402
from gro_replay.kernel.kernel import Kernel  # noqa: E402
from gro_replay.kernel.model import K_6_1, K_6_6, K_6_12, K_6_18  # noqa: E402
from gro_replay.kernel.nic_skb import AF_PACKET_PAGED_FROM, packet_alloc_skb_frags  # noqa: E402
from gro_replay.packet.build import ACK, FrameSpec, build_frame  # noqa: E402
from gro_replay.packet.decode import Decoder  # noqa: E402
from gro_replay.sim import PollModel, ReplayConfig  # noqa: E402
from gro_replay.sim.driver import DriverRx  # noqa: E402
from gro_replay.sim.ingest import Frame  # noqa: E402

HELD_TO_POLL_END = "napi_complete_done:flush"
FRAG_LIST = "dev_gro_receive:skb_has_frag_list"
#: rule_frames' headers without TCP timestamps: 14 + 20 + 8 + 8 + 14 + 20 + 20 bytes before the payload
HEADERS = 104


@pytest.mark.parametrize(
    ("wire", "model", "nr_frags"),
    [
        (4079, K_6_18, 0),  # 16 + 4079 < 4096: linear
        (4080, K_6_18, 1),  # 4066 bytes: one order-0 page
        (4116, K_6_18, 1),  # 4102 bytes, page-aligned 8192: one order-1 page
        (4116, K_6_1, 2),  # order-0 pages before v6.6: 4096 + 6
        (9014, K_6_18, 2),  # 9000: page-aligned 12288 → order 1 (8192), then 808 in an order-0 page
        (9014, K_6_1, 3),
        (18446, K_6_18, 2),  # 18432: page-aligned 20480 → order 2 (16384), then 2048 in an order-0 page
        (65549, K_6_18, 2),  # 65535: order 3 (32768) twice
        (65549, K_6_1, 16),  # 16 order-0 pages
    ],
)
def test_packet_alloc_skb_frags(wire, model, nr_frags):
    assert packet_alloc_skb_frags(wire, model) == nr_frags
    assert AF_PACKET_PAGED_FROM == 4080


@pytest.mark.parametrize(
    ("nic", "paged"), [(None, True), ("veth", True), ("ice", False), ("virtio-net", False)]
)
@pytest.mark.parametrize(("model", "frags"), [(K_6_18, 1), (K_6_1, 2)])
def test_driver_step_lays_out_big_frames_as_af_packet_does(nic, paged, model, frags):
    """A 4116-byte frame's skb on the driver step: paged on veth (data_len all but the 14-byte Ethernet header,
    which eth_type_trans pulled), one order-1 frag from v6.6, two order-0 before; a --nic preset's driver is not
    AF_PACKET (ice: build_skb around the RX page; virtio-net: built linear), and a 4079-byte frame is linear."""
    cfg = ReplayConfig(kernels=(model,), nic=nic, rx_csum="unnecessary")
    k = Kernel(model)
    drv = DriverRx(cfg, Decoder((4789,), ()))
    for payload, big in ((4116 - 116, True), (4079 - 116, False)):
        f = build_frame(FrameSpec(payload=payload))
        batch = [Frame(0, f, None, 0, 0, False, 0, 0)]
        (skb,) = drv.skbs(k, batch, drv.poll_shared(batch))
        want = paged and big
        assert (skb.data_len, skb.nr_frags) == ((len(f) - 14, frags) if want else (0, 0))
        assert skb.headlen() - skb.data_len == (0 if want else len(f) - 14)


@pytest.mark.parametrize(
    ("model", "reason"),
    [
        # 3 order-0 frags a frame: the 6th segment's 3 would make 18 > 17, so it and the 7th go on a frag_list
        (K_6_1, FRAG_LIST),
        # 2 frags a frame (order 1 + order 0): 14 frags, no frag_list: held on the tunnel device to the poll's end
        (K_6_6, HELD_TO_POLL_END),
        (K_6_18, HELD_TO_POLL_END),
    ],
)
def test_jumbo_aggregate_enters_gro_again_unless_its_frags_overflow(model, reason):
    """Seven 9014-byte frames (9000-byte MTU) of one flow: one phys aggregate (an 8th would pass 64 KiB)."""
    sp = specs(7, [9014 - HEADERS] * 7)
    assert _tunnel(sp, None, model) == ({"7": 1}, {reason: 1})


def test_before_6_10_the_second_paged_aggregate_is_refused_for_its_ip_id():
    """The same two aggregates on 6.1 and 6.6: the held one (DF set, 3 segments, arrived merged) is still atomic
    for inet_gro_receive's flush_id, which then accepts only a fixed ID (tcp_gro_receive: flush_id != 1 or count
    != 1), and the other's first inner ID is 3 higher: not merged, and the reason's words say why."""
    from gro_replay.kernel import reasons as R

    sp = specs(6, [4116 - HEADERS] * 6)
    sp[3:] = [replace(s, udp_sport=49153) for s in sp[3:]]
    for model in (K_6_1, K_6_6):
        want = ({"3": 2}, {"tcp_gro_receive:ip_id": 1, HELD_TO_POLL_END: 1})
        assert _tunnel(sp, None, model, rss="toeplitz-l3") == want
    assert (
        "before v6.10 only a fixed one after a held DF packet not yet seen incrementing (from v6.1 such as a GSO skb"
        in (R.describe("tcp_gro_receive:ip_id"))
    )


@pytest.mark.parametrize("model", [K_6_12, K_6_18])
def test_paged_aggregates_of_two_outer_flows_merge_again_on_the_tunnel_device(model):
    """One inner flow's 6 segments of 4116 bytes, the last 3 from another outer UDP port: two phys aggregates of 3
    (1 frag each) that the vxlan device without tunnel metadata merges (the RX hash leaves the outer ports out):
    3 + 3 frags, no frag_list. 4079-byte segments are linear: both aggregates carry a frag_list and are flushed."""
    for wire, want in ((4116, ({"6": 1}, {HELD_TO_POLL_END: 1})), (4079, ({"3": 2}, {FRAG_LIST: 2}))):
        sp = specs(6, [wire - HEADERS] * 6)
        sp[3:] = [replace(s, udp_sport=49153) for s in sp[3:]]
        assert _tunnel(sp, None, model, rss="toeplitz-l3") == want


def _samedst(path: Path, bigs: list[int], vlan: int | None = None) -> str:
    """A poll (1 ms apart) per length in ``bigs``, each one inner flow's segments under two outer UDP source ports:
    3 frames of that many bytes (port 50000) interleaved with 5 of 1514 (port 50001), sequence numbers contiguous
    in each."""
    a = FrameSpec(udp_sport=50000, seq=1_000_000, flags=ACK, outer_vlan=vlan)
    b = FrameSpec(udp_sport=50001, payload=1398, seq=1_000_000, flags=ACK, outer_vlan=vlan)
    t = 1_700_000_000_000_000_000
    with PcapWriter(str(path)) as w:
        for big in bigs:
            a = replace(a, payload=big - 116)
            for i in range(5):
                if i < 3:
                    w.write(t, build_frame(a))
                    a = replace(a, seq=a.seq + a.payload, ip_id=a.ip_id + 1)
                    t += 1000
                w.write(t, build_frame(b))
                b = replace(b, seq=b.seq + 1398, ip_id=b.ip_id + 1)
                t += 1000
            t += 1_000_000
    return str(path)


@pytest.mark.parametrize(
    ("big_wire", "vlan", "tunnel"),
    [
        (4079, None, [52 + 3 * 3963, 52 + 5 * 1398]),  # linear: both flushed (frag_list), in the phys order
        (4080, None, [52 + 5 * 1398, 52 + 3 * 3964]),  # paged: held until the poll ends, after the linear one
        (4116, None, [52 + 5 * 1398, 52 + 3 * 4000]),
        # an 802.1Q tag is not counted (the backend sends the frame untagged, the tag is the skb's vlan_tci): 4079
        # untagged bytes, 4083 tagged, linear; 4080 untagged paged (breaker's finding)
        (4079, 100, [52 + 3 * 3963, 52 + 5 * 1398]),
        (4080, 100, [52 + 5 * 1398, 52 + 3 * 3964]),
    ],
)
def test_kernel_backend_agrees_on_paged_aggregates(tmp_path, big_wire, vlan, tunnel):
    """Measured on the running kernel (module docstring): the vxlan device's skb lengths in kernel order, and the
    simulator's equal on both devices. ``big_wire``: the big frames' length without a VLAN tag."""
    skip_without_kernel_backend()
    from gro_replay.oracle import kernel_hz, kernel_release, run_kernel
    from gro_replay.validate import ORACLE_RX_CSUM, compare, load_capture, profile_for_release

    cfg = ReplayConfig(rx_csum="none", poll=PollModel("budget"), rss="none", resegment="off")
    loaded = load_capture(_samedst(tmp_path / "x.pcap", [big_wire], vlan), cfg)
    mode, level = ORACLE_RX_CSUM["none"]
    oracle = run_kernel([f[1] for f in loaded.frames], rx_csum=mode, csum_level=level)
    sim_cfg = replace(cfg, kernels=(profile_for_release(kernel_release()),), hz=kernel_hz())
    devices = compare(loaded, oracle, sim_cfg)
    for d in devices:
        assert d.agrees, (d.stage, d.first_divergence(), d.kernel, d.sim)
    assert devices[1].kernel == tunnel


def test_batch_engine_keys_tell_paged_runs_from_linear_ones(tmp_path):
    """Polls whose runs rank their lengths alike, the big frames 4116 bytes (paged) in one poll and 3116 (linear)
    in the next: the batch engine's run keys hold a paged frame's length, so it serves neither from the other's
    recording, and its document equals the reference path's."""
    path = _samedst(tmp_path / "mix.pcap", [4116, 3116] * 6)
    for cfg in (ReplayConfig(resegment="off"), ReplayConfig(resegment="off", kernels=(K_6_1, K_6_18))):
        batch, ref, counts = batch_and_reference(path, cfg)
        assert batch == ref
        assert counts["polls_served"] > 0


def test_the_page_order_change_tells_6_5_from_6_6(runner, tmp_path):
    """15 frames of 4200 bytes of one inner flow with a fixed inner IP ID, the last 6 under another outer UDP port
    (breaker's capture): the 9-frame phys aggregate needs 2 order-0 frags a frame before ae6db08f8b56 (18 > 17: a
    frag_list, flushed on the tunnel device) and 1 from v6.6 (held, merged with the 6-frame one). The two kernels are
    two models (the switch packet_alloc_skb_costly_order), so comparing them is not refused as one model."""
    from gro_replay.cli import main
    from gro_replay.packet.build import flow_specs

    sp = flow_specs(FrameSpec(), [4200 - 116] * 15, id_step=0)
    sp[9:] = [replace(s, udp_sport=49153) for s in sp[9:]]
    path = tmp_path / "k65_66.pcap"
    with PcapWriter(str(path)) as w:
        for i, s in enumerate(sp):
            w.write(1_700_000_000_000_000_000 + i * 1000, build_frame(s))
    args = [str(path), "-q", "--resegment", "off", "--rss", "toeplitz-l3", "--no-tunnel-metadata"]
    r = runner.invoke(main, [*args, "--kernel", "6.5", "--kernel", "6.6", "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    got = {k["name"]: k["stages"]["tunnel"]["end_reasons"] for k in doc["kernels"]}
    assert got == {"6.5": {FRAG_LIST: 1, HELD_TO_POLL_END: 1}, "6.6": {HELD_TO_POLL_END: 1}}


def test_a_nic_driver_reads_no_af_packet_switch(runner):
    """With --nic ice the driver builds its own skbs (build_skb), so ae6db08f8b56, a change of veth's AF_PACKET
    sender, cannot change a count: 6.5 and 6.6 are one model there (refused, exit 2) and the verdict does not list
    the commit among those 5.11 → 6.6 also changes; without --nic both differ by it (breaker's finding)."""
    from conftest import FIX_SAMPLE

    from gro_replay.cli import main

    base = [str(FIX_SAMPLE), "-q", "--format", "json"]
    r = runner.invoke(main, [*base, "--nic", "ice", "--kernel", "6.5", "--kernel", "6.6"])
    assert r.exit_code == 2 and "run one kernel model" in r.output
    assert runner.invoke(main, [*base, "--kernel", "6.5", "--kernel", "6.6"]).exit_code == 0
    for nic, listed in ((["--nic", "ice"], False), ([], True)):
        r = runner.invoke(main, [*base, *nic, "--kernel", "5.11", "--kernel", "6.6"])
        assert r.exit_code == 0, r.output
        assert ("ae6db08f8b56" in json.loads(r.stdout)["verdict"]["text"]) is listed


def test_6_6_rc1_carries_the_page_order_change():
    """ae6db08f8b56 came with the 6.6 merge window's net-next pull, so 6.6-rc1 has it, as its note says (it said
    the commit was assumed in, its rc not known: breaker's finding)."""
    from gro_replay.kernel.release import resolve_kernel

    m = resolve_kernel("6.6-rc1")
    assert m.packet_alloc_skb_costly_order
    assert "ae6db08f8b56 (packet_alloc_skb_costly_order) landed in v6.6-rc1: on" in " ".join(m.notes)
