"""drivers/net/geneve.c ``geneve_gro_receive`` (gro-spec §5.1).

From the former tests/test_kernel_rules.py:
Frames are VXLAN over IPv4 (outer UDP checksum 0 unless a test says otherwise), inner IPv4/TCP without options,
1400-byte payloads: one segment is 1490 bytes on the phys device (outer IPv4 20 + UDP 8 + VXLAN 8 + inner Ethernet
14 + inner IPv4 20 + TCP 20 = 90 header bytes) and 1440 on the tunnel device. Skbs are handed to the phys NAPI the
way a driver does (``Rig.skb``); expected values come from the kernel rule cited next to each (gro-spec section,
kernel function, commit), never from the code under test.
"""

from __future__ import annotations

import json
import socket
from collections import Counter
from dataclasses import replace

import dpkt
import pytest
from conftest import without_engine
from rule_frames import BASE, POST, frames, specs
from test_kernel_harness import rig

from gro_replay.capture.writer import PcapWriter
from gro_replay.cli import main
from gro_replay.kernel.model import K_6_18, PROFILES
from gro_replay.packet.build import build_frame
from gro_replay.packet.geneve import geneve_opt
from gro_replay.report.document import document
from gro_replay.sim import PollModel, ReplayConfig, replay_capture

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


@pytest.mark.parametrize("model", POST)
def test_geneve_gro_receive_names_the_protocol_type_without_handler(model):
    # geneve_gro_receive: type = gh->proto_type; gro_find_receive_by_type(type) is NULL for 0x88b5 (IEEE 802 local
    # experimental: no packet offload registers it), so the skb is flushed, each frame alone, and the reason carries
    # the protocol type it looked up (bytes 2-3 of the Geneve header: outer IPv4 20 + UDP 8 after the 14-byte MACs)
    r = rig(model)
    f = [x[:44] + b"\x88\xb5" + x[46:] for x in frames(specs(2, spec=GENEVE))]
    r.poll(f)
    assert r.rec.lens("phys") == [1498, 1498]
    assert {d.why for d in r.rec.at("phys")} == {"geneve_gro_receive:no_inner_offload(type=0x88b5)"}


# -- geneve_udp_encap_recv / geneve_rx (gro-spec §6.2): the C bit without collect metadata ------------------------
# Kernel rule (drivers/net/geneve.c ``geneve_rx``, same test in every modelled release 4.19 … 6.18):
#     if (ip_tunnel_collect_metadata() || gs->collect_md) { …metadata dst with TUNNEL_CRIT_OPT… }
#     else if (gnvh->critical) { rx_frame_errors++; rx_errors++; goto drop; }   /* kfree_skb */
# ``geneve_gro_receive`` refuses only ver != 0 or the O bit: the C bit is part of the memcmp'd header, so C frames
# of one flow aggregate at the phys device (two 1400-byte segments with 8 bytes of options: 1498 + 1400 bytes).
EVERY_RELEASE = list(PROFILES.values())  # 4.19 … 6.18
CRIT = replace(GENEVE, geneve_critical=True)


@pytest.mark.parametrize("model", EVERY_RELEASE, ids=lambda m: m.name)
def test_geneve_rx_drops_the_c_bit_without_collect_metadata(model):
    r = rig(model, tunnel_metadata=False)
    r.poll(frames(specs(2, spec=CRIT)))
    if model.carries("89e5c58fc1e2"):
        # one aggregate: GRO does not look at the C bit by itself; one skb dropped (one rx_frame_errors increment)
        assert r.rec.lens("phys") == [1498 + 1400]
        assert r.rec.stack == ["geneve_rx:critical_options"]
    else:
        # before 89e5c58fc1e2 (v5.12) udp_gro_receive refuses the zero outer checksum (CHECKSUM_NONE): two skbs
        assert r.rec.lens("phys") == [1498, 1498]
        assert r.rec.stack == ["geneve_rx:critical_options"] * 2
    assert r.rec.lens("tunnel") == []


@pytest.mark.parametrize("model", POST)
def test_geneve_rx_keeps_the_c_bit_in_collect_metadata_mode(model):
    r = rig(model, tunnel_metadata=True)
    r.poll(frames(specs(2, spec=CRIT)))
    assert r.rec.stack == ["queued"]  # TUNNEL_CRIT_OPT goes into the metadata dst instead
    assert r.rec.lens("tunnel") == [1440 + 1400 + 0]  # inner IPv4 20 + TCP 20 + 2 × 1400


@pytest.mark.parametrize(
    ("spec", "outcome"),
    [
        (GENEVE, "queued"),  # no C bit: nothing to drop
        (replace(GENEVE, geneve_oam=True), "queued"),  # the O bit only stops GRO; geneve_rx does not test it
        (replace(CRIT, geneve_oam=True), "geneve_rx:critical_options"),
    ],
    ids=["plain", "oam", "oam_and_critical"],
)
def test_geneve_rx_tests_only_the_c_bit(spec, outcome):
    r = rig(K_6_18, tunnel_metadata=False)
    r.poll(frames([spec]))
    assert r.rec.stack == [outcome]


def test_geneve_udp_encap_recv_tests_come_before_the_c_bit():
    """Kernel order: ``geneve_udp_encap_recv`` drops a version ≠ 0 or a protocol type other than ETH_P_TEB before
    ``geneve_rx`` looks at the C bit."""
    r = rig(K_6_18, tunnel_metadata=False)
    f = frames([CRIT, CRIT])
    version1 = f[0][:42] + bytes([f[0][42] | 0x40]) + f[0][43:]  # genevehdr ver 1 (outer UDP csum 0)
    not_teb = f[1][:44] + b"\x08\x00" + f[1][46:]  # proto_type ETH_P_IP
    r.poll([version1])
    r.poll([not_teb])
    assert r.rec.stack == ["geneve_udp_encap_recv:version", "geneve_udp_encap_recv:inner_proto"]


# -- through the CLI and both engine paths -------------------------------------------------------------------------
def _c_bits(path) -> Counter:
    """(outer source, C bit) of every Geneve frame of an untagged Ethernet/IPv4 capture, parsed with dpkt (not the
    decoder under test)."""
    out: Counter = Counter()
    with open(path, "rb") as fh:
        for _, buf in dpkt.pcap.Reader(fh):
            ip = dpkt.ethernet.Ethernet(buf).data
            udp = ip.data
            if isinstance(udp, dpkt.udp.UDP) and udp.dport == 6081:
                out[(socket.inet_ntoa(ip.src), bool(bytes(udp)[9] & 0x40))] += 1
    return out


def _json(runner, path, *extra) -> dict:
    r = runner.invoke(main, [str(path), "--format", "json", "-q", "--fix", *extra])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_cli_tcpdump_geneve_pcap_without_collect_metadata(shared_captures, runner):
    """tcpdump's geneve.pcap: the VNI 10 direction (from 20.0.0.1) carries the C bit and one critical option (class
    0, type 0x80), the VNI 11 direction neither. Without collect metadata geneve_rx drops the first direction's
    frames (19, one skb each: no segment merges in this capture), with it every frame is queued."""
    path = shared_captures / "tcpdump" / "geneve.pcap"
    c = _c_bits(path)
    assert c == {("20.0.0.1", True): 19, ("20.0.0.2", False): 20}
    doc = _json(runner, path, "--no-tunnel-metadata")
    k = doc["kernels"][0]
    assert k["stack"] == {"geneve_rx:critical_options": 19, "queued": 20}
    assert k["stack_frames"] == {"geneve_rx:critical_options": 19, "queued": 20}
    assert k["stages"]["tunnel"]["frames_in"] == 20
    assert "Geneve C bit (critical options)" in doc["verdict"]["text"]
    for f in k["flows"]:
        dropped = f["key"]["outer"]["src"] == "20.0.0.1"
        assert set(f["stack"]) == {"geneve_rx:critical_options" if dropped else "queued"}, f["flow"]
    assert _json(runner, path)["kernels"][0]["stack"] == {"queued": 39}  # --tunnel-metadata, the default


def _critical_capture(path, n_polls: int = 6) -> None:
    """Two inner flows on one Geneve port, one with the C bit (and a critical option), one without: ``n_polls``
    bursts 1 ms apart, each of 4 contiguous segments of each flow interleaved 1 µs apart (``--poll gap:5`` takes a
    burst as one poll; equal bursts let the batch path's cache answer the later ones). Each burst's 4 segments of a
    flow merge at the phys device (post-fix); the next burst restarts the inner IPv4 IDs, so bursts never merge."""
    crit = replace(
        GENEVE, geneve_critical=True, geneve_options=geneve_opt(0x0102, 1, b"\0\0\0\x01", critical=True)
    )
    plain = replace(GENEVE, sport=40001)
    with PcapWriter(path) as w:
        t = 1_000_000_000
        for k in range(n_polls):
            for a, b in zip(
                specs(4, spec=crit, seq0=k * 5600), specs(4, spec=plain, seq0=k * 5600), strict=True
            ):
                w.write(t, build_frame(a))
                w.write(t + 1000, build_frame(b))
                t += 2000
            t += 1_000_000


def test_cli_built_capture_keeps_c_frames_with_collect_metadata(tmp_path, runner):
    path = tmp_path / "geneve-critical.pcap"
    _critical_capture(path)
    on = _json(runner, path, "--poll", "gap:5")["kernels"][0]
    assert on["stack"] == {"queued": 12}  # post-fix: 4 segments of each flow per poll merge into one skb
    assert on["stack_frames"] == {"queued": 48}
    off = _json(runner, path, "--poll", "gap:5", "--no-tunnel-metadata")["kernels"][0]
    assert off["stack"] == {"geneve_rx:critical_options": 6, "queued": 6}
    assert off["stack_frames"] == {"geneve_rx:critical_options": 24, "queued": 24}


def _alternating_capture(path, n_polls: int = 8) -> None:
    """One inner flow whose bursts (as in ``_critical_capture``) alternate between the C bit set and clear, nothing
    else differing: a poll key without the C bit would answer a C burst with a non-C burst's counters."""
    with PcapWriter(path) as w:
        t = 1_000_000_000
        for k in range(n_polls):
            for s in specs(4, spec=replace(GENEVE, geneve_critical=bool(k % 2)), seq0=k * 5600):
                w.write(t, build_frame(s))
                t += 1000
            t += 1_000_000


@pytest.mark.parametrize("metadata", [False, True], ids=["no_metadata", "metadata"])
def test_batch_path_equals_reference_on_c_bit_captures(metadata, tmp_path, shared_captures):
    """The batch path keys a poll by its frames' header bytes (packet/columns.py ``kv`` keeps the Geneve header,
    flags and options included): its documents equal the reference path's (``fast_path=False``)."""
    built, alternating = tmp_path / "geneve-critical.pcap", tmp_path / "geneve-alternating.pcap"
    _critical_capture(built)
    _alternating_capture(alternating)
    for path in (built, alternating, shared_captures / "tcpdump" / "geneve.pcap"):
        cfg = ReplayConfig(tunnel_metadata=metadata, poll=PollModel.parse("gap:5"))
        r = replay_capture(str(path), cfg)
        ref = replay_capture(str(path), replace(cfg, fast_path=False))
        assert r.batch is not None and ref.batch is None
        assert json.dumps(without_engine(document(r)), default=str) == json.dumps(
            without_engine(document(ref)), default=str
        )
        if path != shared_captures / "tcpdump" / "geneve.pcap":
            assert r.batch["polls_cached"] >= 4, r.batch  # the cache answered the repeated bursts
        if path == alternating and not metadata:
            # 16 frames each way; post-fix merges each burst's 4 segments (one skb dropped or queued per burst),
            # pre-fix refuses the zero outer UDP checksum at the phys device (every frame its own skb)
            stack = {k.name: (dict(k.stack), dict(k.stack_frames)) for k in r.kernels}
            both = {"geneve_rx:critical_options": 16, "queued": 16}
            assert stack["post-fix"] == ({"geneve_rx:critical_options": 4, "queued": 4}, both)
            assert stack["pre-fix"] == (both, both)


def test_verdict_of_a_flow_partly_dropped_by_geneve_rx(tmp_path, runner):
    """One Geneve flow, two bursts of 10 segments 1 ms apart (two polls), the first burst with the C bit, no
    collect metadata. Pre-fix the gate refuses all 20 frames (outer checksum 0, CHECKSUM_UNNECESSARY level 0,
    gro-spec §4.4); geneve_rx drops the 10 C-bit frames (one skb each) and gro_cells merges the other 10. Post-fix
    the phys device merges each burst (the C bit is part of the compared header, and each burst is one poll): 2
    skbs, 18 traversals of IP/UDP/decapsulation saved. The verdict must not say every refused frame is merged
    later by gro_cells."""
    path = tmp_path / "partly-c.pcap"
    sp = specs(20, spec=GENEVE)
    with PcapWriter(path) as w:
        for i, s in enumerate(sp):
            burst = i // 10
            w.write(
                1_000_000_000 + burst * 1_000_000 + (i % 10) * 1000,
                build_frame(replace(s, geneve_critical=burst == 0)),
            )
    r = runner.invoke(main, [str(path), "--format", "json", "-q", "--no-tunnel-metadata", "--poll", "gap:5"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    pre, post = doc["kernels"]
    assert pre["stack_frames"] == {"geneve_rx:critical_options": 10, "queued": 10}
    assert pre["stages"]["tunnel"]["segs_per_skb_hist"] == {"10": 1}
    assert post["stages"]["phys"]["segs_per_skb_hist"] == {"10": 2}
    text = doc["verdict"]["text"]
    assert "they are merged only later by the tunnel device's gro_cells" not in text
    assert (
        "Those that reach the tunnel device are merged only later by its gro_cells; 10 frames never reach it "
        "(geneve_rx:critical_options ×10). The fix saves 18 skb traversals"
    ) in text
