"""The kernel backend's verdict on a running kernel without 89e5c58fc1e2.

The backend's trace (net:netif_receive_skb) gives each delivered skb's device and length, not why GRO ended it
(kernel-oracle.md), so the zero-checksum gate's refusals, which decide whether a kernel without the fix is affected,
cannot be seen. Before, the verdict read the missing refusals as none and said such a kernel "is not affected here:
… udp_gro_receive never refuses a tunnelled frame for a zero checksum", with SUMMARY ``affected_flows=0`` — on a
capture that kernel refuses (helper's finding). No root: the running kernel's deliveries are given as an
``OracleResult`` whose lengths follow from the kernel's rules (tests/test_kernel_no_payload.py builds the capture).
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from test_kernel_no_payload import GRO_ON, PHYS_ELIDED, _config, fake_oracle, own_acks_capture

from gro_replay.report.document import document
from gro_replay.report.schema import check
from gro_replay.report.verdict.core import verdict_of
from gro_replay.validate import kernel_result, load_capture

UNSEEN = (
    "lacks 89e5c58fc1e2 (linux-5.10.y carries it since 5.10.24, as 09af4362ba47): whether its udp_gro_receive "
    "refuses tunnelled frames for a zero UDP checksum, and so whether it is affected, is not observable with the "
    "kernel backend"
)


def _run(tmp_path, outer_csum: str, release: str, lengths: dict[str, list[int]]):
    path = own_acks_capture(tmp_path / "c.pcap", outer_csum)
    cfg = _config()
    oracle = replace(fake_oracle(lengths, 9), kernel_release=release)
    return kernel_result(load_capture(str(path), cfg), oracle, cfg)


def test_a_kernel_without_the_fix_is_not_called_unaffected_when_its_refusals_cannot_be_seen(tmp_path):
    # upstream 5.10.0 (the fix reached linux-5.10.y in 5.10.24), the 9 frames with outer UDP checksum 0 and
    # CHECKSUM_NONE (the backend's default --rx-csum none): udp4_gro_receive skips validating a zero checksum, so
    # csum_cnt 0 and csum_valid 0, and the pre-fix udp_gro_receive refuses every frame (gro-spec §4.4): the phys
    # device hands each up alone, in capture order, as with GRO elided there, and the tunnel device's gro_cells
    # merge as then (PHYS_ELIDED)
    result = _run(tmp_path, "zero", "5.10.0", PHYS_ELIDED)
    v = verdict_of(result)
    assert v.outcome == "not_observed"
    assert v.text.startswith(f"5.10.0 (v5.10) {UNSEEN}")
    assert (
        "3 of 3 tunnelled flows carry outer UDP checksum 0, and at the phys device it delivered 9 skbs for the 9 "
        "frames of the tunnelled flows; gro-replay "
    ) in v.text
    # the replay of what the backend ran: its one vxlan device on 4789 (a replay's default has 8472 too)
    assert (
        " --kernel 5.10.0 --rx-csum none --poll budget --rss none --vxlan-port 4789 names the frames its rules "
        "refuse" in v.text
    )
    assert "not affected" not in v.text and "never refuses" not in v.text
    for f in v.flows:  # every flow carries checksum 0: none is said to be never refused
        assert (
            "whether udp_gro_receive refuses this flow's frames for their zero outer UDP checksum is not "
            in f.why
        )
    doc = document(result, backend="kernel")
    check(json.loads(json.dumps(doc["verdict"], default=str)), "replay#/$defs/verdict")  # the schema knows it
    assert (doc["verdict"]["outcome"], doc["verdict"]["affected"], doc["verdict"]["text"]) == (
        "not_observed",
        False,
        v.text,
    )
    assert doc["summary"].endswith(" affected_flows=0 gate_refusals=not_observed")


@pytest.mark.parametrize(
    ("outer_csum", "release", "lengths"),
    [
        # outer checksums computed: udp4_gro_receive validates each in software (csum_valid 1), so the pre-fix
        # gate passes them and the phys device merges as 6.18 does (GRO_ON): no zero checksum, judged by the rule
        ("computed", "5.10.0", GRO_ON),
        # 6.18 carries the fix: its gate does not refuse a zero checksum
        ("zero", "6.18.0", GRO_ON),
    ],
)
def test_a_kernel_is_judged_by_the_rule_where_no_refusal_is_unseen(tmp_path, outer_csum, release, lengths):
    result = _run(tmp_path, outer_csum, release, lengths)
    v = verdict_of(result)
    assert v.outcome == "not_affected"
    assert (
        "not observable with the kernel backend (the netif_receive_skb trace" in v.text
    )  # the end reasons only
    assert "whether its udp_gro_receive refuses" not in v.text
    assert document(result, backend="kernel")["summary"].endswith(" affected_flows=0")


def test_flows_the_backend_did_not_send_are_no_flows_of_its_verdict(tmp_path):
    # the 3 ACKs (frames 1, 3, 5) not replayable (e.g. to a second outer destination, oracle/replay.py plan_frames):
    # the running kernel received the bulk flow's 4 segments and the gapped flow's 2. 6.18 with GRO on: G1 goes up
    # when G2 arrives (sequence gap), the 4 bulk segments as one skb and G2 at the poll's end; the tunnel device the
    # same skbs, the aggregate first (dev_gro_receive flushes an skb with a frag_list). Before, the verdict said
    # "… 3 skbs for 6 frames of 3 tunnelled flows", counting the ACK flow the kernel never saw (helper's finding)
    path = own_acks_capture(tmp_path / "c.pcap", "zero")
    cfg = _config()
    sent = [0, 2, 4, 6, 7, 8]
    lengths = {
        "phys": [n for n in GRO_ON["phys"] if n != GRO_ON["phys"][0]],
        "tunnel": [n for n in GRO_ON["tunnel"] if n != GRO_ON["tunnel"][0]],
    }
    assert (len(lengths["phys"]), len(lengths["tunnel"])) == (
        3,
        3,
    )  # the ACKs' 3 skbs left out at each device
    oracle = replace(
        fake_oracle(lengths, 6),
        sent=sent,
        frames_sent=6,
        frames_not_replayable={"outer_destination_differs": 3},
        unsent=dict.fromkeys((1, 3, 5), "outer_destination_differs"),
    )
    result = kernel_result(load_capture(str(path), cfg), oracle, cfg)
    v = verdict_of(result)
    assert "at the phys device it delivers 3 skbs for 6 frames of 2 tunnelled flows." in v.text
    assert "no payload (ACKs" not in v.text  # the ACK flow is not judged either
    doc = document(result, backend="kernel")
    assert (doc["verdict"]["tunnel_flows"], doc["input"]["frames_replayed"]) == (2, 6)
    # the frame classes count the 6 frames replayed, as the simulator's do, so that classes plus skipped are the 9
    # frames read (breaker's finding: classes counted all 9 beside 3 skipped)
    assert doc["input"]["classes"] == {"tunnel_tcp": 6}
    assert doc["input"]["skipped"] == {"kernel_backend:outer_destination_differs": 3}
    assert doc["input"]["frames_read"] == 9


@pytest.mark.parametrize("off", [{"gro": {"phys": False, "tunnel": True}}, {"phys_xdp_generic": True}])
def test_no_refusal_is_unseen_where_gro_does_not_run_on_the_phys_device(tmp_path, off):
    # GRO elided on the phys veth (--gro phys=off, or a generic XDP program: --defer-to-tunnel; netif_elide_gro,
    # include/linux/netdevice.h): no frame reaches udp_gro_receive there, so a kernel without the fix refuses none
    # of these zero-checksum frames at the phys device, whatever the trace shows; the phys device hands each frame
    # up alone (PHYS_ELIDED). The refusals are known (none): outcome not_affected, as the simulator says with
    # --gro phys=off (breaker's finding: the outcome was not_observed, and with --defer-to-tunnel the text too)
    path = own_acks_capture(tmp_path / "c.pcap", "zero")
    cfg = _config(**off)
    oracle = replace(fake_oracle(PHYS_ELIDED, 9), kernel_release="5.10.0")
    result = kernel_result(load_capture(str(path), cfg), oracle, cfg)
    v = verdict_of(result)
    assert v.outcome == "not_affected"
    assert (
        "whether its udp_gro_receive refuses" not in v.text and "gate_refusals" not in v.summary_tokens()[-1]
    )
    # the cause named is the elided GRO, not the checksums; each flow's why agrees (one decision:
    # refusals_unseen)
    cause = (
        "with GRO off on eth0"
        if "gro" in off
        else "with GRO elided on eth0 by a generic XDP program (the kernel backend's --defer-to-tunnel or --gro "
        "phys=off)"
    )
    assert v.text.startswith(
        f"The fix changes nothing {cause}: dev_gro_receive passes every frame up unmerged"
    )
    assert not any("not observable with the kernel backend;" in f.why for f in v.flows)
    assert document(result, backend="kernel")["summary"].endswith(" affected_flows=0")
