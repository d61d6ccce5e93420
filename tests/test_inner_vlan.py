"""An 802.1Q/802.1ad tag in the inner frame of a VXLAN/Geneve packet: decoded, keyed, replayed, reported.

The kernel GROs through such a tag (net/8021q/vlan_core.c ``vlan_gro_receive``, reached from ``eth_gro_receive``'s
``gro_find_receive_by_type`` for ETH_P_8021Q/ETH_P_8021AD, registered by ``vlan_offload_init``), and keeps frames with
other tag bytes apart (include/linux/if_vlan.h ``compare_vlan_header``: TCI and encapsulated protocol). So a TCP flow
behind an inner tag is tunnelled TCP (class ``tunnel_tcp``), and flows that differ only in the inner VLAN are flows
of their own. The rules per header are tested in tests/kernel/test_vlan_core.py; here the capture's path through the
decoder, both engines, the report, ``diff`` and ``synth``.

The capture: three flows with one outer key and one inner 5-tuple, inner VID 10, VID 20 and untagged, 30 segments of
1400 bytes each, round-robin, 1 µs apart, outer UDP checksum set: budget polls take frames 0-63 (22 of VID 10, 21 of
VID 20, 21 untagged) then 64-89 (8, 9, 9).
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from click.testing import CliRunner

from gro_replay.capture.reader import open_capture
from gro_replay.capture.writer import PcapWriter
from gro_replay.cli import main
from gro_replay.kernel.release import resolve_kernel
from gro_replay.packet.build import FrameSpec, build_flow, build_frame
from gro_replay.packet.csum import ipv4_header_checksum
from gro_replay.packet.decode import CLS_TUNNEL_OTHER, CLS_TUNNEL_TCP, Decoder
from gro_replay.report.document import document
from gro_replay.report.schema import check
from gro_replay.sim import PollModel, ReplayConfig, replay_capture

BASE = FrameSpec(timestamps=False, payload=1400, outer_csum="computed")
VIDS = (10, 20, None)
#: the inner tag of a BASE frame with inner_vlan: outer Ethernet 14 + IPv4 20 + UDP 8 + VXLAN 8 + inner MACs 12
TAG = 14 + 20 + 8 + 8 + 12


def _capture(path) -> str:
    flows = [
        build_flow(replace(BASE, inner_vlan=v, seq=1000 + 7919 * i), [1400] * 30) for i, v in enumerate(VIDS)
    ]
    with PcapWriter(str(path)) as w:
        for i, f in enumerate(f for trio in zip(*flows, strict=True) for f in trio):
            w.write(1_614_373_368_000_000_000 + i * 1000, f)
    return str(path)


@pytest.fixture
def three(tmp_path) -> str:
    return _capture(tmp_path / "three.pcap")


def test_the_decoder_reads_inner_tags_as_gro_does():
    d = Decoder((4789,), (6081,))
    cases = {
        "vid10": (build_frame(replace(BASE, inner_vlan=10)), ((0x8100, 10),), 0x0800, CLS_TUNNEL_TCP),
        "vid20": (build_frame(replace(BASE, inner_vlan=20)), ((0x8100, 20),), 0x0800, CLS_TUNNEL_TCP),
        "untagged": (build_frame(BASE), (), 0x0800, CLS_TUNNEL_TCP),
        "qinq": (
            build_frame(replace(BASE, inner_vlan=(7, 10))),
            ((0x88A8, 7), (0x8100, 10)),
            0x0800,
            CLS_TUNNEL_TCP,
        ),
    }
    # 0x9100 is no TPID of vlan_packet_offloads: eth_gro_receive finds no handler, so the frame is no tunnelled TCP
    f = bytearray(build_frame(replace(BASE, inner_vlan=10)))
    f[TAG : TAG + 2] = b"\x91\x00"
    cases["0x9100"] = (bytes(f), (), 0x9100, CLS_TUNNEL_OTHER)
    # a tag with ARP behind it: the tag is read, the protocol is not IP
    f = bytearray(build_frame(replace(BASE, inner_vlan=10)))
    f[TAG + 4 : TAG + 6] = b"\x08\x06"
    cases["arp"] = (bytes(f), ((0x8100, 10),), 0x0806, CLS_TUNNEL_OTHER)
    fids = {}
    for name, (frame, tags, ethertype, cls) in cases.items():
        _frame, _vlan, fid, _rss, l4 = d.decode(frame)
        key = d.flows[fid]
        assert (key.inner_vlan, key.inner_ethertype, d.flow_class[fid]) == (tags, ethertype, cls), name
        fids[name] = fid
        if cls == CLS_TUNNEL_TCP:
            # the innermost TCP header: inner Ethernet 14 + 4 per tag + IPv4 20 after the VXLAN header
            assert l4 == TAG + 2 + 4 * len(tags) + 20, name
    assert len(set(fids.values())) == len(cases)  # each its own flow
    assert (
        d.flows[fids["qinq"]].label().endswith("| s-vlan 7 vlan 10: 192.168.1.1:40000→192.168.1.2:5201 tcp")
    )
    # a tag cut short (the datagram ends after its TCI) is a malformed inner header, as an inner Ethernet header cut
    # short is
    cut = bytearray(build_frame(replace(BASE, inner_vlan=10, outer_csum="zero"))[: TAG + 4])
    cut[16:18] = (len(cut) - 14).to_bytes(2, "big")  # outer IPv4 total length, then its header checksum
    cut[24:26] = b"\0\0"
    cut[24:26] = ipv4_header_checksum(bytes(cut[14:34])).to_bytes(2, "big")
    cut[38:40] = (len(cut) - 34).to_bytes(2, "big")  # outer UDP length (checksum 0)
    assert d.decode(bytes(cut)) == "malformed:inner_headers"


def _flows(doc: dict, kernel: int = 1) -> list[dict]:
    return doc["kernels"][kernel]["flows"]


def test_flows_apart_by_vlan_each_merge(three):
    """Each inner VLAN is a flow: 3 tunnel_tcp flows; each merges within each budget poll (compare_vlan_header keeps
    the others' held packets apart), 2 phys skbs per flow in both kernels (outer checksum set: 89e5c58fc1e2 changes
    nothing)."""
    doc = document(replay_capture(three, ReplayConfig(poll=PollModel("budget"))))
    check(json.loads(json.dumps(doc, default=str)), "replay")  # key.inner.vlan as the schema describes it
    for k in (0, 1):
        flows = _flows(doc, k)
        assert [f["class"] for f in flows] == [CLS_TUNNEL_TCP] * 3
        assert [f["key"]["inner"]["vlan"] for f in flows] == [
            [{"tpid": 0x8100, "vid": 10, "pcp": 0, "dei": False}],
            [{"tpid": 0x8100, "vid": 20, "pcp": 0, "dei": False}],
            [],
        ]
        assert [(f["phys"]["skbs"], f["phys"]["segments"]) for f in flows] == [(2, 30)] * 3
    assert doc["config"]["vlan_offload"] is True


def test_without_the_vlan_offloads_only_the_untagged_flow_merges(three):
    # CONFIG_VLAN_8021Q not set: eth_gro_receive finds no handler for 0x8100, each tagged frame goes up alone
    doc = document(replay_capture(three, ReplayConfig(poll=PollModel("budget"), vlan_offload=False)))
    assert [f["phys"]["skbs"] for f in _flows(doc)] == [30, 30, 2]
    assert doc["config"]["vlan_offload"] is False


def _vlan_beside_untagged(path) -> str:
    """fidelity45's capture (c03_vlan_vs_none): one flow behind inner VID 10 and one untagged, 10 segments each,
    alternating, 1 µs apart, outer UDP checksum 0, one poll."""
    flows = [
        build_flow(replace(BASE, outer_csum="zero", inner_vlan=v, seq=1000 + 7919 * i), [1386 - 10 * i] * 10)
        for i, v in enumerate((10, None))
    ]
    with PcapWriter(str(path)) as w:
        for i, f in enumerate(f for pair in zip(*flows, strict=True) for f in pair):
            w.write(1_614_373_368_000_000_000 + i * 1000, f)
    return str(path)


@pytest.mark.parametrize("command", ["replay", "explain"])
def test_no_vlan_offload_on_the_command_line_is_the_running_kernels_count(tmp_path, command):
    """``--no-vlan-offload``: a kernel built without CONFIG_VLAN_8021Q. Measured on this project's kernel-backend
    machine (Linux 6.18 without it; ``gro-replay kernel`` with --rx-csum unnecessary, fidelity hunt 45): 11 phys and
    11 tunnel skbs for this capture, the tagged flow's 10 frames one skb each (eth_gro_receive and, at gro_cells,
    dev_gro_receive find no handler for 0x8100), the untagged flow's one. The default models a kernel with the
    offloads (vlan_gro_receive): 2 and 2."""
    cap = _vlan_beside_untagged(tmp_path / "vlan.pcap")
    argv = ([] if command == "replay" else ["explain"]) + [cap, "--kernel", "6.18", "--format", "json", "-q"]
    for extra, phys, tunnel in (([], 2, 2), (["--vlan-offload"], 2, 2), (["--no-vlan-offload"], 11, 11)):
        r = CliRunner().invoke(main, argv + extra)
        assert r.exit_code == 0, r.output
        doc = json.loads(r.stdout)
        assert doc["config"]["vlan_offload"] is (extra != ["--no-vlan-offload"])
        if command == "replay":
            stages = doc["kernels"][0]["stages"]
            assert (stages["phys"]["skbs_delivered"], stages["tunnel"]["skbs_delivered"]) == (phys, tunnel)
        else:
            got = [
                (f["kernels"]["6.18"]["phys"]["skbs"], f["kernels"]["6.18"]["tunnel"]["skbs"])
                for f in doc["flows"]
            ]
            assert got == ([(10, 10), (1, 1)] if phys == 11 else [(1, 1), (1, 1)])


def test_the_report_names_no_split_between_vlans(three):
    """The three flows share the inner 5-tuple and the outer key; they are on other VLANs, not one inner flow under
    several outer keys: no "split" sentence."""
    r = CliRunner().invoke(main, [three, "--poll", "budget", "--no-hist"], env={"COLUMNS": "2000"})
    assert r.exit_code == 0, r.output
    assert "frames: tunnel_tcp 90" in r.stdout
    assert "another outer key" not in r.stdout
    e = CliRunner().invoke(main, ["explain", three], env={"COLUMNS": "2000"})
    assert e.exit_code == 0, e.output
    assert "inner vlan 20: 192.168.1.1:40000 → 192.168.1.2:5201 TCP; 30 frames" in e.stdout
    assert "split:" not in e.stdout
    j = CliRunner().invoke(main, ["explain", three, "--format", "json"])
    assert j.exit_code == 0, j.output
    check(json.loads(j.stdout), "explain")


@pytest.mark.parametrize("poll", ["budget", "gap:5"])
@pytest.mark.parametrize("resegment", ["off", "auto"])
def test_batch_path_equals_reference(three, poll, resegment):
    cfg = ReplayConfig(poll=PollModel.parse(poll), resegment=resegment)
    got, want = (document(replay_capture(three, c)) for c in (cfg, replace(cfg, fast_path=False)))
    for d in (got, want):
        d.pop("engine", None)
    assert json.dumps(got, default=str) == json.dumps(want, default=str)


def test_diff_takes_an_untagged_flow_of_an_older_document_for_the_same_flow(three, tmp_path):
    """Documents before ``inner.vlan`` was added have no such key: their untagged flows are the same flows."""
    r = CliRunner().invoke(main, [three, "--poll", "budget", "--format", "json", "-q"])
    assert r.exit_code == 0, r.output
    cur = json.loads(r.stdout)
    old = json.loads(r.stdout)
    for k in old["kernels"]:
        k["flows"] = [f for f in k["flows"] if not f["key"]["inner"]["vlan"]]
        for f in k["flows"]:
            del f["key"]["inner"]["vlan"]
    cur_path, old_path = tmp_path / "cur.json", tmp_path / "old.json"
    cur_path.write_text(json.dumps(cur))
    old_path.write_text(json.dumps(old))
    d = CliRunner().invoke(main, ["diff", str(old_path), str(cur_path), "--format", "json"])
    assert d.exit_code == 0, d.output
    for k in json.loads(d.stdout)["kernels"]:
        # the untagged flow is matched; the tagged ones are new
        assert [row["flow"] for row in k["flows"]] == [cur["kernels"][0]["flows"][2]["flow"]]
        assert k["flows_only_in_baseline"] == [] and len(k["flows_only_in_current"]) == 2
    # --flow reads the tags from the documents (none in the older one: its flows are untagged)
    d = CliRunner().invoke(
        main, ["diff", str(old_path), str(cur_path), "--flow", "vlan=none", "--format", "json"]
    )
    assert d.exit_code == 0, d.output
    for k in json.loads(d.stdout)["kernels"]:
        assert len(k["flows"]) == 1 and k["flows_only_in_current"] == []


def test_synth_writes_the_inner_tag(tmp_path):
    out = tmp_path / "s.pcap"
    r = CliRunner().invoke(main, ["synth", str(out), "--inner-vlan", "300", "--frames", "4"])
    assert r.exit_code == 0, r.output
    with open_capture(str(out)) as cap:
        frames = [rec[1] for rec in cap]
    assert len(frames) == 4
    for f in frames:
        # 802.1Q TPID, then TCI 300 (PCP 0, DEI 0), then IPv4 after the inner MAC addresses
        assert f[TAG : TAG + 6] == b"\x81\x00" + (300).to_bytes(2, "big") + b"\x08\x00"
    bad = CliRunner().invoke(main, ["synth", str(tmp_path / "b.pcap"), "--inner-vlan", "4096"])
    assert bad.exit_code == 2 and "Traceback" not in bad.output
    mix = CliRunner().invoke(
        main, ["synth", str(tmp_path / "m.pcap"), "--mix", "overlay-node", "--inner-vlan", "1"]
    )
    assert mix.exit_code == 2 and "--inner-vlan describes bulk flows" in mix.output


def test_flow_selector_vlan(three):
    # vlan=VID: a tag of the inner frame with that VID; vlan=none: a tunnelled flow without one
    for sel, want in (
        ("vlan=20", ["flow 1:"]),
        ("vlan=none", ["flow 2:"]),
        ("vlan=10,sport=40000", ["flow 0:"]),
    ):
        e = CliRunner().invoke(main, ["explain", three, "--flow", sel], env={"COLUMNS": "2000"})
        assert e.exit_code == 0, e.output
        assert [ln.split(" outer")[0] for ln in e.stdout.splitlines() if ln.startswith("flow ")] == want, sel
    bad = CliRunner().invoke(main, [three, "--flow", "vlan=4096"])
    assert bad.exit_code == 2 and "vlan 4096 is out of range (0…4095)" in bad.output


def _outer_tagged(path, tags) -> str:
    """One flow behind outer tags ``tags`` (a VID, or an (S-VID, C-VID) pair) beside an untagged one, 10 segments
    each, alternating, 1 µs apart, outer UDP checksum 0, one poll."""
    flows = [
        build_flow(replace(BASE, outer_csum="zero", outer_vlan=v, seq=1000 + 7919 * i), [1386 - 10 * i] * 10)
        for i, v in enumerate((tags, None))
    ]
    with PcapWriter(str(path)) as w:
        for i, f in enumerate(f for pair in zip(*flows, strict=True) for f in pair):
            w.write(1_614_373_368_000_000_000 + i * 1000, f)
    return str(path)


@pytest.mark.parametrize(
    ("tags", "dropped"), [(10, True), ((100, 10), True), ((0, 10), True), (0, False), ((0, 0), False)]
)
def test_no_vlan_offload_drops_an_outer_vlan_no_device_takes(tmp_path, tags, dropped):
    """With the VLAN offloads (the default) the replay assumes the VLAN device an outer tag names; a kernel built
    without CONFIG_VLAN_8021Q has none: ``vlan_do_receive`` is its stub, so ``__netif_receive_skb_core`` marks a tag
    of VID ≠ 0 PACKET_OTHERHOST (``check_vlan_id``; a priority tag, VID 0, is cleared and the one under it checked
    alike) and ``ip_rcv_core`` drops it (SKB_DROP_REASON_OTHERHOST) after the phys device's GRO, before the tunnel
    (net/core/dev.c, net/ipv4/ip_input.c). The tagged flow's 10 frames, one phys skb, are lost; the untagged flow's
    reach vxlan0 either way (breaker62: they reached it)."""
    from gro_replay.kernel import drop_reasons as D

    cap = _outer_tagged(tmp_path / "outer.pcap", tags)
    for offload in (True, False):
        cfg = ReplayConfig(kernels=(resolve_kernel("6.18"),), poll=PollModel("budget"), vlan_offload=offload)
        doc = document(replay_capture(cap, cfg))
        (k,) = doc["kernels"]
        lost = dropped and not offload
        assert k["stack"].get(D.VLAN_OTHERHOST, 0) == (1 if lost else 0)
        assert k["stages"]["tunnel"]["frames_in"] == (10 if lost else 20)
    r = CliRunner().invoke(main, [cap, "--kernel", "6.18", "--poll", "budget", "--no-vlan-offload", "-q"])
    assert r.exit_code == 0, r.output
    assert (
        "10 frames lost: __netif_receive_skb_core finds no VLAN device for its outer VLAN tag" in r.stdout
    ) is dropped


def test_no_vlan_offload_says_the_drop_after_the_tunnel_device(tmp_path):
    """The counts end where the tunnel device hands the decapsulated frames up; on a kernel without
    CONFIG_VLAN_8021Q no VLAN device sits on it, so ``__netif_receive_skb_core`` (``skb_vlan_untag``, then
    ``check_vlan_id``) marks an inner tag of VID ≠ 0 PACKET_OTHERHOST and ``ip_rcv`` drops it (net/core/dev.c,
    net/ipv4/ip_input.c): the verdict says so for the tagged flow that reached the tunnel device (breaker63), not a
    flow lost before it (behind an outer tag: breaker64), not with the offloads; JSON
    ``verdict.flows_vlan_dropped_after_tunnel``."""
    said = (
        "After the tunnel device, where these counts end, the frames of 1 flow whose inner frame carries a VLAN tag "
        "(VID ≠ 0) find no VLAN device (--no-vlan-offload: a kernel built without CONFIG_VLAN_8021Q): "
        "__netif_receive_skb_core marks them PACKET_OTHERHOST and ip_rcv drops them."
    )
    inner = _vlan_beside_untagged(tmp_path / "vlan.pcap")
    flows = [
        build_flow(replace(BASE, outer_csum="zero", outer_vlan=10, inner_vlan=20, seq=1000), [1386] * 10),
        build_flow(replace(BASE, outer_csum="zero", inner_vlan=20, udp_sport=50001, seq=9000), [1376] * 10),
    ]
    both = tmp_path / "both.pcap"
    with PcapWriter(str(both)) as w:
        for i, f in enumerate(f for pair in zip(*flows, strict=True) for f in pair):
            w.write(1_614_373_368_000_000_000 + i * 1000, f)
    for cap, extra, n in (
        (inner, [], 0),
        (inner, ["--no-vlan-offload"], 1),
        (str(both), ["--no-vlan-offload"], 1),
    ):
        for command in ([], ["explain"]):
            argv = [*command, cap, "--kernel", "6.18", "-q", "--format", "json", *extra]
            r = CliRunner().invoke(main, argv)
            assert r.exit_code == 0, r.output
            v = json.loads(r.stdout)["verdict"]
            assert v["flows_vlan_dropped_after_tunnel"] == n
            assert (said in v.get("sentence", v["text"])) is bool(n)


@pytest.mark.parametrize(("inner", "skbs"), [(10, "19 either way"), (None, "19 → 1")])
def test_what_the_fix_changes_for_frames_dropped_behind_an_outer_tag(tmp_path, inner, skbs):
    """19 segments behind outer VID 20, outer UDP checksum 0, --no-vlan-offload: both kernels drop them after the
    phys device (no VLAN device: PACKET_OTHERHOST). Before the fix udp_gro_receive refuses each (19 skbs to the
    drop); with it, GRO merges them into 1 — unless an inner tag stops it there too (no vlan_gro_receive): 19. The
    sentence says which (newcomer41: "changes how many skbs carry them" where nothing changed)."""
    frames = build_flow(replace(BASE, outer_csum="zero", outer_vlan=20, inner_vlan=inner), [1386] * 19)
    path = tmp_path / "tagged.pcap"
    with PcapWriter(str(path)) as w:
        for i, f in enumerate(frames):
            w.write(1_614_373_368_000_000_000 + i * 1000, f)
    for extra in ([], ["--no-fix"]):
        r = CliRunner().invoke(main, [str(path), "--no-vlan-offload", "-q", *extra], env={"COLUMNS": "4000"})
        assert r.exit_code == 0, r.output
        text = " ".join(r.stdout.split())
        if inner is None:
            assert (
                f"the fix changes how many skbs carry them to the drop ({skbs}), not what the host receives"
                in text
            )
        else:
            assert (
                "the fix changes neither what the host receives nor, here, how many skbs carry them to the drop "
                f"({skbs})"
            ) in text
