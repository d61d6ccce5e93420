"""The kernel backend counts frames the running kernel dropped between its devices as lost.

Its trace (net:netif_receive_skb, kernel-oracle.md) shows deliveries, not drops. Frames to a tunnel port that the
phys device delivered and no tunnel device did were dropped on the way (IP or UDP input, the VXLAN receive path,
the gro_cells queue), and where is not known there. Before, they went unsaid: on a capture whose outer UDP
checksums do not verify (a capture taken before TX checksum offload, replayed as the backend does by default with
CHECKSUM_NONE), every frame was dropped by udp_rcv, the tunnel device delivered nothing, and the verdict called
the flow "not affected" with SUMMARY ``affected_flows=0`` and no loss (breaker's finding). The simulator says
"Every VXLAN/Geneve frame is lost before decapsulation" there. Now the backend says so too, under the reason
``kernel_backend:not_at_tunnel_device`` (kernel/drop_reasons.py), with what can cause it and the replay that
names it.
"""

from __future__ import annotations

import json
from dataclasses import replace

from click.testing import CliRunner
from conftest import needs_kernel_backend
from test_kernel_no_payload import PHYS_ELIDED, _config, fake_oracle, own_acks_capture

from gro_replay.cli import main
from gro_replay.report.verdict.core import verdict_of
from gro_replay.validate import kernel_result, load_capture

LOST = "kernel_backend:not_at_tunnel_device"


def test_frames_no_tunnel_device_delivered_are_lost(tmp_path):
    # the 9 frames of own_acks_capture, each delivered alone by the phys device (PHYS_ELIDED's lengths) and none by
    # the vxlan device: all 9, of 3 tunnelled flows, lost on the way
    path = own_acks_capture(tmp_path / "c.pcap", "computed")
    cfg = _config()
    oracle = fake_oracle({"phys": PHYS_ELIDED["phys"], "tunnel": []}, 9)
    v = verdict_of(kernel_result(load_capture(str(path), cfg), oracle, cfg))
    assert v.outcome == "lost"
    (k,) = v.kernels
    assert (k.lost_frames, dict(k.lost)) == (9, {LOST: 9})
    assert v.text.startswith(
        "Every VXLAN/Geneve frame is lost before decapsulation, in every kernel run (6.18.0): 9 frames lost: the "
        "running kernel's phys device delivered them and no tunnel device did: dropped on the way, where is not "
        "observable with the kernel backend"
    )
    assert "not affected" not in v.text


def test_a_phys_skb_whose_frames_reached_the_tunnel_device_is_not_lost(tmp_path):
    # GRO on both devices (9 frames: the phys device delivers 6 skbs, the vxlan device the same 6 decapsulated),
    # then the same run with the tunnel device's last delivery (G2, the gapped flow's second frame) missing: that
    # one phys skb of 1 frame is lost, the other flows' skbs are not
    from test_kernel_no_payload import GRO_ON

    path = own_acks_capture(tmp_path / "c.pcap", "computed")
    cfg = _config()
    whole = kernel_result(load_capture(str(path), cfg), fake_oracle(GRO_ON, 9), cfg)
    assert verdict_of(whole).outcome == "not_affected"
    assert sum(f.stack_frames[LOST] for f in whole.kernels[0].flows.values()) == 0
    cut = {"phys": GRO_ON["phys"], "tunnel": GRO_ON["tunnel"][:-1]}
    result = kernel_result(load_capture(str(path), cfg), fake_oracle(cut, 9), cfg)
    lost = {result.flows[fid].inner_sport: f.stack_frames[LOST] for fid, f in result.kernels[0].flows.items()}
    assert lost == {40000: 0, 40001: 0, 40002: 1}
    # one frame: "delivered it" (it said "delivered them" of 1 frame)
    assert (
        "Lost on the way (6.18.0): 1 frame lost: the running kernel's phys device delivered it and no "
        in (verdict_of(result).text)
    )


@needs_kernel_backend
def test_running_kernel_drops_unverified_outer_checksums(tmp_path):
    # measured on the running kernel: 20 frames whose outer UDP checksums do not verify, sent with CHECKSUM_NONE
    # (the backend's default): udp_rcv (net/ipv4/udp.c, __udp4_lib_rcv → csum_error) drops each, so the vxlan
    # device delivers none; sent CHECKSUM_UNNECESSARY (--rx-csum unnecessary) udp_rcv does not verify them and the
    # vxlan device delivers them, as the verdict's knob says
    path = tmp_path / "bad.pcap"
    r = CliRunner().invoke(main, ["synth", str(path), "--outer-csum", "bad", "--frames", "20"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["kernel", str(path), "--format", "json"])
    assert r.exit_code == 0, r.output
    v = json.loads(r.output)["verdict"]
    assert (v["outcome"], v["lost_flows"]) == ("lost", 1)
    assert (v["kernels"][0]["lost"], v["kernels"][0]["tunnel_skbs"]) == ({LOST: 20}, 0)
    assert "--rx-csum unnecessary" in v["text"]
    r = CliRunner().invoke(main, ["kernel", str(path), "--rx-csum", "unnecessary", "--format", "json"])
    assert r.exit_code == 0, r.output
    v = json.loads(r.output)["verdict"]
    assert v["outcome"] != "lost" and v["kernels"][0]["lost"] == {}


def test_backend_without_tunnel_ports_loses_nothing(tmp_path):
    # the backend's vxlan device on 9999, the frames on 4789: not tunnel traffic there, so frames no tunnel
    # device delivered are not counted lost (they were never bound for one)
    path = own_acks_capture(tmp_path / "c.pcap", "computed")
    cfg = replace(_config(), vxlan_ports=(9999,))
    oracle = replace(fake_oracle({"phys": PHYS_ELIDED["phys"], "tunnel": []}, 9), tunnel_ports={"g-vx": 9999})
    result = kernel_result(load_capture(str(path), cfg), oracle, cfg)
    assert verdict_of(result).outcome == "no_tunnel"
    assert all(not f.stack_frames for f in result.kernels[0].flows.values())


def test_losses_are_read_by_frame_index_when_some_frames_were_not_sent(tmp_path):
    # 3 frames to another outer destination first (not replayable: the backend sends one destination's frames,
    # oracle/replay.py plan_frames), then own_acks_capture's 9, all delivered alone by the phys device and none by
    # the vxlan device: the 9 sent are lost, read by their indices 3..11 (not by position in the frames sent)
    import dpkt

    from gro_replay.capture.writer import PcapWriter
    from gro_replay.packet.build import FrameSpec, build_frame

    acks = own_acks_capture(tmp_path / "acks.pcap", "computed")
    path = tmp_path / "c.pcap"
    with open(acks, "rb") as f, PcapWriter(str(path)) as w:
        other = build_frame(FrameSpec(outer_dst="10.9.9.9", sport=41000, udp_sport=49999))
        for k in range(3):
            w.write(1_614_373_367_000_000_000 + k * 1000, other)
        for ts, frame in dpkt.pcap.Reader(f):
            w.write(int(ts * 1_000_000_000), frame)
    cfg = _config()
    oracle = replace(fake_oracle({"phys": PHYS_ELIDED["phys"], "tunnel": []}, 9), sent=list(range(3, 12)))
    v = verdict_of(kernel_result(load_capture(str(path), cfg), oracle, cfg))
    (k,) = v.kernels
    assert (v.outcome, k.lost_frames, dict(k.lost)) == ("lost", 9, {LOST: 9})


def test_skbs_no_run_of_frames_fits_are_said(tmp_path):
    # a phys skb whose length no run of one flow's frames gives (one byte more than the bulk flow's 4 segments):
    # it is counted as 1 segment of the flow "(unmatched)", and a note says so and what it does to the counts
    # (newcomer's finding: reordered frames left 3 frames out of the segment counts without a word)
    from test_kernel_no_payload import GRO_ON

    path = own_acks_capture(tmp_path / "c.pcap", "computed")
    cfg = _config()
    phys = [n + (n == GRO_ON["phys"][4]) for n in GRO_ON["phys"]]
    result = kernel_result(load_capture(str(path), cfg), fake_oracle({**GRO_ON, "phys": phys}, 9), cfg)
    assert result.input.notes[-1] == (
        "1 of the 12 skbs the running kernel delivered (phys 1) matches no run of one flow's frames by its length, "
        "from the first frame its address names where the trace names one: it is counted as 1 segment of the flow "
        "(unmatched), so the segment counts lack "
        "the frames it carried; validate compares the lengths themselves"
    )
    assert result.flow_classes[-1] == "unmatched"
    # every skb matched: no such note
    result = kernel_result(load_capture(str(path), cfg), fake_oracle(GRO_ON, 9), cfg)
    assert not any("no run of one flow" in n for n in result.input.notes)
