"""Frames with an outer UDP checksum of 0 that the pre-fix gate passes because GRO was already flushing them.

Kernel rules (gro-spec §4.3, §4.4, §4.7): udp4_gro_receive and udp6_gro_receive skip checksum validation when
``NAPI_GRO_CB(skb)->flush`` is already set ("Don't bother verifying checksum if we're going to flush anyway",
net/ipv4/udp_offload.c, net/ipv6/udp_offload.c). Validating a zero checksum (``skb_gro_checksum_validate_zero_check``)
consumes one CHECKSUM_UNNECESSARY level (``skb_gro_incr_csum_unnecessary``), so a frame the NIC marked level 0
(csum_cnt 1) reaches udp_gro_receive with csum_cnt 0 and the pre-fix gate refuses it; when the validation is skipped,
csum_cnt stays 1 and the gate passes it. inet_gro_receive sets that flush for an IPv4 total length that differs
from the bytes present (a trailer), ipv6_gro_receive for a payload length that does (net/ipv4/af_inet.c,
net/ipv6/ip6_offload.c), and such an skb is never held nor merged (dev_gro_receive). CHECKSUM_NONE (csum_cnt 0)
and CHECKSUM_UNNECESSARY level 1 (csum_cnt 2) are refused and passed whether or not the checksum is validated.

The capture verdict used to say such frames were "ended before udp_gro_receive", and explain that "the NIC's
checksum state left csum_cnt > 0" (newcomer29): both name the wrong cause. A frame whose outer IPv4 header has
options is ended before udp_gro_receive (inet_gro_receive: ``iph->ihl != 5``), and says so.
"""

from __future__ import annotations

import json
import struct

import pytest
from click.testing import CliRunner
from conftest import batch_and_reference

from gro_replay.capture.writer import PcapWriter
from gro_replay.cli import main
from gro_replay.kernel.model import profile
from gro_replay.packet.build import ACK, FrameSpec, build_frame
from gro_replay.packet.csum import ip_fast_csum
from gro_replay.sim import ReplayConfig

N = 17
TRAILER = b"\x00\x00\x00\x01"  # 4 bytes that are no FCS of the frame
GATE = (
    "and before the fix udp_gro_receive refuses only frames not CHECKSUM_PARTIAL whose csum_cnt and csum_valid are "
    "both 0"
)
FLUSHING = (
    "GRO was already flushing {them} when it reached the outer UDP header, for the reason their phys skbs' end "
    "reasons name, so udp4/6_gro_receive skipped checksum validation, which leaves csum_cnt 1: the gate passes "
    "them, and the flush sends them up unmerged all the same"
)


def _options(buf: bytes) -> bytes:
    """``buf`` (outer IPv4, no VLAN) with 4 bytes of options in its outer IPv4 header (IHL 6), checksum valid."""
    ip = bytearray(buf[14:34]) + b"\x01\x01\x01\x00"  # three NOPs and an end of options
    ip[0] = 0x46
    struct.pack_into("!H", ip, 2, struct.unpack_from("!H", ip, 2)[0] + 4)
    struct.pack_into("!H", ip, 10, 0)
    struct.pack_into("!H", ip, 10, ip_fast_csum(bytes(ip), 0, 6))
    return buf[:14] + bytes(ip) + buf[34:]


def _capture(path, kinds: str, outer_ipv6: bool = False) -> str:
    """One VXLAN flow with outer UDP checksum 0, a frame per letter of ``kinds``: ``t`` with a 4-byte trailer,
    ``o`` with outer IPv4 options, ``p`` plain."""
    with PcapWriter(str(path)) as w:
        for i, kind in enumerate(kinds):
            spec = FrameSpec(
                seq=1000 + 1000 * i, payload=1000, flags=ACK, outer_csum="zero", outer_ipv6=outer_ipv6
            )
            buf = build_frame(spec)
            buf = buf + TRAILER if kind == "t" else _options(buf) if kind == "o" else buf
            w.write(1_000_000_000 + 1000 * i, buf)
    return str(path)


def _run(path: str, *args: str) -> tuple[str, dict, str]:
    """Text, JSON document and explain text of ``path`` replayed with ``args``."""
    r = CliRunner().invoke(main, [path, *args, "-q"])
    assert r.exit_code == 0, r.output
    j = CliRunner().invoke(main, [path, *args, "-q", "--format", "json"])
    assert j.exit_code == 0, j.output
    e = CliRunner().invoke(main, ["explain", path, *args, "-q"])
    assert e.exit_code == 0, e.output
    return r.stdout.replace("\n", " "), json.loads(j.stdout), e.stdout.replace("\n", " ")


def _gate(doc: dict, field: str) -> dict[str, dict]:
    return {k["kernel"]: k[field] for k in doc["verdict"]["kernels"]}


@pytest.mark.parametrize("outer_ipv6", [False, True], ids=["ipv4", "ipv6"])
def test_a_flushing_frame_passes_the_gate_unvalidated_and_the_verdict_says_why(tmp_path, outer_ipv6):
    """17 frames, each with a trailer: the pre-fix gate refuses none (csum_cnt left 1), each goes up alone at the
    phys device, and both the capture verdict and explain say that validation was skipped, not that GRO ended
    them before udp_gro_receive. IPv6 with --udp6zerocsumrx, so that the stack delivers them."""
    path = _capture(tmp_path / "t.pcap", "t" * N, outer_ipv6)
    args = ["--udp6zerocsumrx"] if outer_ipv6 else []
    text, doc, explain = _run(path, *args)
    assert _gate(doc, "gate_refusals_zero_csum") == {
        "pre-fix": {"phys": 0, "tunnel": 0},
        "post-fix": {"phys": 0, "tunnel": 0},
    }
    # both kernels' gates read the 17 unvalidated; only the pre-fix one would have refused them validated
    assert _gate(doc, "gate_unvalidated_zero_csum") == {
        "pre-fix": {"phys": N, "tunnel": 0},
        "post-fix": {"phys": N, "tunnel": 0},
    }
    assert [k["phys_skbs"] for k in doc["verdict"]["kernels"]] == [N, N]
    said = (
        f"marked CHECKSUM_UNNECESSARY level 0 (a state the gate refuses, but {FLUSHING.format(them='them')})"
    )
    assert f"the {N} tunnelled frames with a zero outer UDP checksum were {said}, {GATE}." in text, text
    assert (
        "outer UDP checksum 0, but udp_gro_receive's gate refuses none of its frames before the fix either: "
        f"{said}, and the gate refuses only frames not CHECKSUM_PARTIAL whose csum_cnt and csum_valid are both 0"
    ) in explain, explain
    for out in (text, explain):
        assert "ended them before udp_gro_receive" not in out and "left csum_cnt > 0" not in out
    batch, ref, _ = batch_and_reference(path, ReplayConfig(udp6_zero_csum_rx=outer_ipv6))
    assert batch == ref


def test_frames_flushing_and_frames_ended_before_the_gate_are_told_apart(tmp_path):
    """9 frames with a trailer reach udp_gro_receive already flushing; 8 with outer IPv4 options are ended by
    inet_gro_receive (not_0x45) before it. One flow, in a kernel without the fix."""
    path = _capture(tmp_path / "to.pcap", "to" * 8 + "t")
    text, doc, explain = _run(path, "--kernel", "5.10")
    assert _gate(doc, "gate_unvalidated_zero_csum") == {"5.10": {"phys": 9, "tunnel": 0}}
    assert _gate(doc, "gate_refusals_zero_csum") == {"5.10": {"phys": 0, "tunnel": 0}}
    said = (
        f"marked CHECKSUM_UNNECESSARY level 0 (a state the gate refuses, but {FLUSHING.format(them='9 of them')}; "
        "GRO ended the other 8 before udp_gro_receive, at the header their phys skbs' end reasons name)"
    )
    assert f"the {N} tunnelled frames with a zero outer UDP checksum were {said}, {GATE}." in text, text
    assert said in explain, explain
    assert (
        "[inet_gro_receive:not_0x45] ×8" in text and "[inet_gro_receive:tot_len_or_frag_bits] ×9" in text
    ), text
    batch, ref, _ = batch_and_reference(path, ReplayConfig(kernels=(profile("5.10"),)))
    assert batch == ref


#: --rx-csum → (pre-fix zero-checksum refusals, how the verdict names the state, what it says of it) for the 17
#: trailer frames: CHECKSUM_NONE (csum_cnt 0) is refused unvalidated too; level 1 keeps csum_cnt 2 (it used to be
#: said to consume a level: breaker29); CHECKSUM_COMPLETE passes on csum_valid 1 either way
STATES = {
    "none": (N, None),
    "unnecessary-tunnel": (
        0,
        "CHECKSUM_UNNECESSARY level 1 (csum_cnt starts at 2, and GRO was already flushing them when it reached the "
        "outer UDP header, for the reason their phys skbs' end reasons name, so udp4/6_gro_receive skipped checksum "
        "validation, which leaves it at 2)",
    ),
    "complete": (0, "CHECKSUM_COMPLETE (GRO starts them with csum_valid 1, the NIC's sum of the packet)"),
}


@pytest.mark.parametrize("rx_csum", STATES)
def test_the_state_decides_what_a_skipped_validation_changes(tmp_path, rx_csum):
    """The same trailer frames in the other states: all 17 reach the gate unvalidated in both kernels; what the
    gate does with them, and what the verdict says of it, follow the state."""
    refused, said = STATES[rx_csum]
    path = _capture(tmp_path / "t.pcap", "t" * N)
    text, doc, explain = _run(path, "--rx-csum", rx_csum)
    assert _gate(doc, "gate_refusals_zero_csum")["pre-fix"] == {"phys": refused, "tunnel": 0}
    assert _gate(doc, "gate_unvalidated_zero_csum") == {
        "pre-fix": {"phys": N, "tunnel": 0},
        "post-fix": {"phys": N, "tunnel": 0},
    }
    if said:
        assert f"the {N} tunnelled frames with a zero outer UDP checksum were marked {said}, {GATE}." in text
        assert f"marked {said}, and the gate refuses only frames not CHECKSUM_PARTIAL" in explain, explain
        assert "consumes 1, leaving csum_cnt 1" not in text + explain


def test_a_frame_not_flushing_is_refused_as_before(tmp_path):
    """Without a trailer the same frames are validated, csum_cnt drops to 0 and the pre-fix gate refuses all 17."""
    path = _capture(tmp_path / "p.pcap", "p" * N)
    _text, doc, _explain = _run(path)
    assert _gate(doc, "gate_refusals_zero_csum")["pre-fix"] == {"phys": N, "tunnel": 0}
    assert _gate(doc, "gate_unvalidated_zero_csum")["pre-fix"] == {"phys": 0, "tunnel": 0}


def test_one_kernel_without_the_fix_says_why_its_gate_refused_none(tmp_path):
    """explain with one kernel without the fix said only "udp_gro_receive never refuses this flow's frames" where
    compare mode and the capture verdict said why (breaker29): it now names the state and the skipped validation."""
    path = _capture(tmp_path / "t.pcap", "t" * N)
    r = CliRunner().invoke(main, ["explain", path, "--no-fix", "-q"])
    assert r.exit_code == 0, r.output
    said = (
        f"marked CHECKSUM_UNNECESSARY level 0 (a state the gate refuses, but {FLUSHING.format(them='them')})"
    )
    assert (
        f"but udp_gro_receive never refuses this flow's frames for a zero checksum: {said}, and the gate refuses "
        "only frames" in (r.stdout.replace("\n", " "))
    ), r.stdout


def test_level_one_frames_ended_before_the_gate_keep_both_levels(tmp_path):
    """CHECKSUM_UNNECESSARY level 1 (csum_cnt 2): 9 plain frames reach udp_gro_receive validated, the outer UDP header
    consuming 1 (csum_cnt 1: the gate passes); 8 with outer IPv4 options are ended by inet_gro_receive (not_0x45)
    before it, so nothing is consumed. The sentence said all 17 had a level consumed (truth31); it says which did
    (JSON gate_reached_zero_csum: the frames that reached the gate)."""
    path = _capture(tmp_path / "po.pcap", "po" * 8 + "p")
    text, doc, explain = _run(path, "--rx-csum", "unnecessary-tunnel")
    assert _gate(doc, "gate_reached_zero_csum")["pre-fix"] == {"phys": 9, "tunnel": 0}
    said = (
        "marked CHECKSUM_UNNECESSARY level 1 (csum_cnt starts at 2, and for 9 of them the outer UDP header consumes "
        "1, leaving csum_cnt 1; GRO ended the other 8 before udp_gro_receive, at the header their phys skbs' end "
        "reasons name)"
    )
    assert said in text and said in explain, text
    path = _capture(tmp_path / "o.pcap", "o" * N)
    text, doc, _explain = _run(path, "--rx-csum", "unnecessary-tunnel")
    assert _gate(doc, "gate_reached_zero_csum")["pre-fix"] == {"phys": 0, "tunnel": 0}
    assert (
        "marked CHECKSUM_UNNECESSARY level 1 (GRO ended them before udp_gro_receive, at the header their phys skbs' "
        "end reasons name)"
    ) in text, text


@pytest.mark.parametrize("outer_ipv6", [False, True])
def test_a_nonzero_checksum_meets_the_gate_only_on_a_frame_already_flushing(tmp_path, outer_ipv6):
    """The gate's other refusal (not CHECKSUM_PARTIAL, csum_cnt 0, csum_valid 0) with a computed outer UDP
    checksum: validating a non-zero checksum under CHECKSUM_NONE sets csum_valid (``__skb_gro_checksum_complete``;
    a failure is ``udp_csum`` instead), so the gate refuses such a frame only when udp4/6_gro_receive skipped the
    validation because GRO was already flushing it (here: a 4-byte trailer past the IP datagram). Under CHECKSUM_NONE
    all 17 frames go up alone by the gate's reason; the description says the flush sends them up unmerged in any
    case (truth30: it named the checksum state as the cause), and under CHECKSUM_UNNECESSARY the same 17 go up alone
    by the trailer's flush (gro-spec §4.3, §4.4)."""
    path = tmp_path / "t.pcap"
    with PcapWriter(str(path)) as w:
        for i in range(N):
            spec = FrameSpec(
                seq=1000 + 1000 * i, payload=1000, flags=ACK, outer_csum="computed", outer_ipv6=outer_ipv6
            )
            w.write(1_000_000_000 + 1000 * i, build_frame(spec) + TRAILER)
    out = {}
    for rx in ("none", "unnecessary"):
        args = [str(path), "--kernel", "6.1", "--rx-csum", rx, "--format", "json", "-q"]
        doc = json.loads(CliRunner().invoke(main, args).stdout)
        phys = doc["kernels"][0]["stages"]["phys"]
        out[rx] = (
            phys["skbs_delivered"],
            phys["end_reasons"].get("udp_gro_receive:csum_cnt0_csum_valid0_not_partial"),
        )
    assert out == {"none": (N, N), "unnecessary": (N, None)}
    r = CliRunner().invoke(main, [str(path), "--kernel", "6.1", "--rx-csum", "none"])
    assert (
        "csum_valid 0 (with a non-zero outer UDP checksum only a frame GRO was already flushing, whose checksum "
        "udp4/6_gro_receive then skip, gets here: that flush sends it up unmerged in any case)" in r.stdout
    )
    # a kernel without the fix: the flow's sentence says its gate never refuses them for a zero checksum (it said
    # "never refuses this flow's frames" beside a table of 17 refusals: breaker40)
    e = CliRunner().invoke(main, ["explain", str(path), "--kernel", "4.19", "--rx-csum", "none"])
    flat = " ".join(e.stdout.split())
    assert "but udp_gro_receive never refuses this flow's frames for a zero checksum" in flat, flat
    assert f"{N} × udp_gro_receive: csum_cnt0_csum_valid0_not_partial" in flat, flat
