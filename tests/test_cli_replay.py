"""The ``replay`` command's outputs: the JSON document (DESIGN.md "Output contract"), the SUMMARY line of every
text format, and the compare view's verdict, checked through click's CliRunner (exit code, stdout and stderr
apart).

Expected counts for the fix sample (17 frames, one flow, outer UDP checksum 0) with the ``budget`` poll model
(passed explicitly by ``_run``; the default is ``gap:3``, tests/test_fix_scenario.py): all 17 frames fit one poll (NAPI weight 64, gro-spec §1.1). Pre-fix the gate refuses each of them
(gro-spec §4.7 row 3: ``--rx-csum unnecessary`` = CHECKSUM_UNNECESSARY level 0, the default), so the phys device
delivers 17 skbs and the vxlan device's gro_cells merges them into one (16 full segments, then the 672-byte one
ends the aggregate, §5.5; 52 + 16·1398 + 672 = 23092 bytes < 64 KiB, §5.6). Post-fix the phys device merges the
same 17 into one aggregate, which the tunnel device passes through (GSO skb, §6.6).
"""

from __future__ import annotations

import json

import pytest
from blake3 import blake3
from conftest import FIX_SAMPLE, GENEVE_SAMPLE, VXLAN4_SAMPLE

from gro_replay.cli import main
from gro_replay.kernel import reasons as R

FIX_SUMMARY = (
    "SUMMARY kernels=pre-fix,post-fix frames=17 skipped=0 replayed=17 "
    "kernel[pre-fix].phys_skbs=17 kernel[pre-fix].phys_aggregates=0 kernel[pre-fix].tunnel_skbs=1 "
    "kernel[pre-fix].tunnel_aggregates=1 "
    "kernel[post-fix].phys_skbs=1 kernel[post-fix].phys_aggregates=1 kernel[post-fix].tunnel_skbs=1 "
    "kernel[post-fix].tunnel_aggregates=1 "
    "affected_flows=1"
)

STAGE_KEYS = {
    "frames_in",
    "skbs_delivered",
    "segments_delivered",
    "aggregates",
    "segs_per_skb_mean",
    "segs_per_skb_max",
    "segs_per_skb_hist",
    "bytes",
    "sw_csum_bytes",
    "end_reasons",
    "gro_complete_errors",
}


def _run(runner, *args):
    """The replay command with ``--poll budget`` (the truths above are budget-poll truths) unless ``--poll`` is given."""
    args = [*map(str, args)]
    if "--poll" not in args and args and args[0] not in ("explain", "diff", "synth", "batch"):
        args += ["--poll", "budget"]
    r = runner.invoke(main, [*args, "-q"])
    assert "Traceback" not in r.stderr
    return r


def _summary_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("SUMMARY ")]


def test_json_document_keys_and_values(runner):
    r = _run(runner, FIX_SAMPLE, "--format", "json")
    assert r.exit_code == 0 and r.stderr == ""
    doc = json.loads(r.stdout)
    assert doc["schema_version"] == 1
    inp = doc["input"]
    assert inp["path"] == str(FIX_SAMPLE)
    assert inp["blake3"] == blake3(FIX_SAMPLE.read_bytes()).hexdigest()
    # 16 frames of 1514 bytes (outer IP 1500 + Ethernet 14) and one of 774 + 14
    assert (inp["frames_read"], inp["frames_replayed"], inp["bytes"]) == (17, 17, 16 * 1514 + 788)
    assert inp["skipped"] == {} and inp["classes"] == {"tunnel_tcp": 17}
    cfg = doc["config"]
    assert [(k["name"], k["release"], k["base"]) for k in cfg["kernels"]] == [
        ("pre-fix", "5.11", "5.11"),
        ("post-fix", "5.12", "5.12"),
    ]
    # 89e5c58fc1e2 is in v5.12-rc2: upstream in 5.12, absent from 5.11; neither has stable backports
    assert [k["fix_89e5c58fc1e2"]["carried"] for k in cfg["kernels"]] == [False, True]
    assert cfg["kernels"][1]["fix_89e5c58fc1e2"]["via"] == "upstream"
    assert all(k["backports"] == [] and k["notes"] == [] for k in cfg["kernels"])
    assert cfg["nic"]["rx_csum"] == "unnecessary" and cfg["poll"] == "budget"
    # gro-spec §1.1 constants
    consts = cfg["constants"]
    assert (consts["napi_weight"], consts["gro_normal_batch"], consts["gro_hash_buckets"]) == (64, 8, 8)
    assert (consts["max_gro_skbs"], consts["gro_max_size"]) == (8, 65536)
    pre, post = doc["kernels"]
    for k in doc["kernels"]:
        assert set(k["stages"]) == {"phys", "tunnel"}
        for st in k["stages"].values():
            assert STAGE_KEYS <= set(st)
            for key in STAGE_KEYS - {"segs_per_skb_mean", "segs_per_skb_hist", "end_reasons"}:
                assert type(st[key]) is int, key  # integers stay integers (DESIGN.md)
        (flow,) = k["flows"]
        assert flow["class"] == "tunnel_tcp"
        assert flow["key"]["tunnel"] == "vxlan" and flow["key"]["vni"] == 100
        assert flow["key"]["outer"]["udp_csum_zero"] is True
        assert flow["key"]["inner"] == {
            "src": "192.168.1.1",
            "dst": "192.168.1.2",
            "proto": 6,
            "sport": 40000,
            "dport": 5201,
            "ethertype": 0x0800,
            "vlan": [],  # untagged inner frame
        }
    ph, tu = pre["stages"]["phys"], pre["stages"]["tunnel"]
    assert (ph["frames_in"], ph["skbs_delivered"], ph["aggregates"]) == (17, 17, 0)
    assert ph["segs_per_skb_hist"] == {"1": 17}
    assert ph["bytes"] == 16 * 1500 + 774
    assert ph["end_reasons"] == {R.UDP_GATE_ZERO_CSUM: 17}
    assert (tu["frames_in"], tu["skbs_delivered"], tu["segs_per_skb_hist"]) == (17, 1, {"17": 1})
    assert tu["bytes"] == 52 + 16 * 1398 + 672
    # §6.5: each refused frame's inner TCP segment (32 header bytes + payload) is summed by the cell
    assert (ph["sw_csum_bytes"], tu["sw_csum_bytes"]) == (0, 16 * (32 + 1398) + 32 + 672)
    ph, tu = post["stages"]["phys"], post["stages"]["tunnel"]
    assert (ph["skbs_delivered"], ph["aggregates"], ph["segs_per_skb_max"]) == (1, 1, 17)
    assert ph["bytes"] == 50 + 52 + 16 * 1398 + 672
    assert ph["end_reasons"] == {R.TCP_SHORT: 1}
    # §4.7 row 3 post-fix: the inner TCP checksum is summed at the phys stage instead
    assert (ph["sw_csum_bytes"], tu["sw_csum_bytes"]) == (16 * (32 + 1398) + 32 + 672, 0)
    assert tu["end_reasons"] == {R.GSO_SKB: 1}
    assert pre["stack"] == {"queued": 17} and post["stack"] == {"queued": 1}
    (aff,) = doc["comparison"]["affected_flows"]
    assert (aff["phys_skbs_pre"], aff["phys_skbs_post"]) == (17, 1)
    assert (aff["gate_refusals"], aff["zero_csum"]) == (17, True)
    assert doc["summary"] == FIX_SUMMARY


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_summary_line_in_every_text_format(runner, fmt):
    r = _run(runner, FIX_SAMPLE, "--format", fmt)
    assert r.exit_code == 0 and r.stderr == ""
    assert _summary_lines(r.stdout) == [FIX_SUMMARY]


def test_summary_line_single_kernel(runner):
    r = _run(runner, FIX_SAMPLE, "--no-fix")
    assert r.exit_code == 0
    assert _summary_lines(r.stdout) == [
        "SUMMARY kernel=pre-fix frames=17 skipped=0 replayed=17 phys_skbs=17 phys_aggregates=0 tunnel_skbs=1 tunnel_aggregates=1 affected_flows=1"
    ]


def test_markdown_table(runner):
    r = _run(runner, FIX_SAMPLE, "--format", "markdown")
    lines = r.stdout.splitlines()
    head = (
        "| metric | pre-fix phys NAPI | post-fix phys NAPI | Δ phys | pre-fix tunnel gro_cells | "
        "post-fix tunnel gro_cells | Δ tunnel |"
    )
    assert head in lines
    # pre-fix 17 single phys skbs, decapsulated and merged into 1 by gro_cells; post-fix one 17-segment phys
    # aggregate, passed through the tunnel stage as one skb (gro-spec §4.7 row 3, §6.6)
    assert "| skbs in | 17 | 17 | 0 | 17 | 1 | -16 |" in lines
    assert "| segments in (wire frames) | 17 | 17 | 0 | 17 | 17 | 0 |" in lines
    assert "| skbs delivered | 17 | 1 | -16 | 1 | 1 | 0 |" in lines
    # the same content as the table: end reasons, the verdict and the affected flow
    text = r.stdout
    assert "- phys skbs ended by (pre-fix, 17 skbs): " in text and "×17" in text
    assert "- affected: 10.0.0.1:37531→10.0.0.2:4789 vxlan vni 100 (csum 0)" in text
    assert "phys skbs 17 → 1" in text


@pytest.mark.parametrize("fmt", ["table", "markdown", "json"])
def test_compare_verdict_names_the_zero_checksum_gate(runner, fmt):
    r = _run(runner, FIX_SAMPLE, "--format", fmt)
    assert r.exit_code == 0
    text = json.loads(r.stdout)["comparison"]["verdict"] if fmt == "json" else " ".join(r.stdout.split())
    # gro-spec §4.4/§4.7 row 3: the refusal is udp_gro_receive's csum_cnt == 0 && !csum_valid clause, reached
    # because the outer checksum is 0 and the NIC said CHECKSUM_UNNECESSARY level 0
    for phrase in (
        "Before the fix, 1 of 1 tunnelled TCP flow loses phys-device aggregation: udp_gro_receive refuses 17 frames, which go up one by one.",
        "outer UDP checksum is 0",
        "CHECKSUM_UNNECESSARY level 0",
        "udp_gro_receive finds csum_cnt 0 and csum_valid 0 and refuses tunnel GRO",
        "gro_cells",
    ):
        assert phrase in text, phrase


def test_compare_verdict_none_when_nic_is_checksum_none(runner):
    r = _run(runner, FIX_SAMPLE, "--format", "json", "--rx-csum", "none")
    verdict = json.loads(r.stdout)["comparison"]["verdict"]
    # gro-spec §4.7 row 1: CHECKSUM_NONE with a zero outer checksum fails the same gate
    assert "outer UDP checksum is 0 and the NIC marks them CHECKSUM_NONE" in verdict


@pytest.mark.parametrize("rx_csum", ["unnecessary-tunnel", "complete", "partial"])
def test_fix_sample_not_affected_when_nic_vouches(runner, rx_csum):
    # gro-spec §4.7 rows 5, 7, 9: level 1, COMPLETE and PARTIAL aggregate before the fix too
    r = _run(runner, FIX_SAMPLE, "--format", "json", "--rx-csum", rx_csum)
    doc = json.loads(r.stdout)
    assert doc["comparison"]["affected_flows"] == []
    assert [k["stages"]["phys"]["skbs_delivered"] for k in doc["kernels"]] == [1, 1]


@pytest.mark.parametrize("sample", [GENEVE_SAMPLE, VXLAN4_SAMPLE], ids=["geneve-ipv6", "vxlan-4flows"])
def test_computed_outer_checksum_sample_has_no_affected_flow(runner, sample):
    # gro-spec §4.7 row 4: a non-zero outer checksum with UNNECESSARY level 0 is converted (TRY_CONVERT) and
    # aggregates in both kernels
    r = _run(runner, sample, "--format", "json")
    assert r.exit_code == 0 and r.stderr == ""
    doc = json.loads(r.stdout)
    assert doc["comparison"]["affected_flows"] == []
    assert doc["comparison"]["verdict"].startswith("No flow loses phys-device aggregation before the fix")
    assert all(f["key"]["outer"]["udp_csum_zero"] is False for f in doc["kernels"][0]["flows"])
    pre, post = doc["kernels"]
    assert pre["stages"]["phys"]["segs_per_skb_hist"] == post["stages"]["phys"]["segs_per_skb_hist"]
    assert pre["stages"]["phys"]["aggregates"] > 0
    assert doc["summary"].endswith(" affected_flows=0")
    r = _run(runner, sample)
    assert "No flow loses phys-device aggregation before the fix" in " ".join(r.stdout.split())


def test_geneve_sample_flows(runner):
    # the Makefile's geneve sample: 4 flows × 64 frames, Geneve on 6081 over outer IPv6, 8 option bytes
    doc = json.loads(_run(runner, GENEVE_SAMPLE, "--format", "json").stdout)
    assert doc["input"]["frames_read"] == 256 and doc["input"]["classes"] == {"tunnel_tcp": 256}
    flows = doc["kernels"][0]["flows"]
    assert len(flows) == 4
    assert {f["key"]["tunnel"] for f in flows} == {"geneve"}
    assert {f["key"]["outer"]["dport"] for f in flows} == {6081}
    assert all(":" in f["key"]["outer"]["src"] for f in flows)
    for k in doc["kernels"]:
        assert k["stages"]["tunnel"]["devices"] == {"geneve0": k["stages"]["tunnel"]["skbs_delivered"]}


@pytest.mark.parametrize(
    ("flag", "release", "phys_skbs"),
    # the sample's 17 frames: refused by udp_gro_receive's zero-checksum gate before 89e5c58fc1e2 (5.11: 17 skbs
    # at phys), merged after it (5.12: 1 skb), gro-spec §4.6
    [("--fix", "5.12", 1), ("--no-fix", "5.11", 17)],
)
def test_fix_and_kernel_are_exclusive_and_the_refusal_names_the_spelling(runner, flag, release, phys_skbs):
    """--fix/--no-fix beside --kernel is a one-line usage error (exit 2) that names what to write instead; the
    spelling it names runs (the model of the flag beside the given release)."""
    r = _run(runner, FIX_SAMPLE, flag, "--kernel", "6.18")
    assert r.exit_code == 2 and r.stdout == ""
    which = "post-fix" if flag == "--fix" else "pre-fix"
    assert r.stderr.strip().splitlines() == [
        f"Error: --kernel and {flag} are exclusive: {flag} is --kernel {release} (the {which} model); write "
        f"--kernel {release} in place of {flag} to run it beside --kernel '6.18'"
    ]
    r = _run(runner, FIX_SAMPLE, "--kernel", release, "--kernel", "6.18", "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert [k["release"] for k in doc["kernels"]] == [release, "6.18"]
    assert [k["stages"]["phys"]["skbs_delivered"] for k in doc["kernels"]] == [phys_skbs, 1]
    # a --kernel of the flag's own model: the flag is left out, not added again (which would be refused)
    r = _run(runner, FIX_SAMPLE, flag, "--kernel", release)
    assert r.exit_code == 2 and r.stderr.strip().splitlines() == [
        f"Error: --kernel and {flag} are exclusive: {flag} is --kernel {release} (the {which} model), which "
        f"--kernel '{release}' already runs: leave out {flag}"
    ]


def test_fix_beside_a_kernel_of_its_counts_names_the_commit_they_differ_in(runner):
    """5.10.17 (5.10 + 8dc1c444df19, kernel/stable.py) runs the pre-fix model's counts: it lacks only 0780b4145634
    (v5.11-rc1), which changes no count (kernel/model.py ``BYTES_ONLY_SWITCHES``); the refusal of --no-fix says so
    rather than that 5.10.17 runs the 5.11 model itself (breaker's finding)."""
    r = _run(runner, FIX_SAMPLE, "--no-fix", "--kernel", "5.10.17")
    assert r.exit_code == 2 and r.stderr.strip().splitlines() == [
        "Error: --kernel and --no-fix are exclusive: --no-fix is --kernel 5.11 (the pre-fix model), which --kernel "
        "'5.10.17' already runs (modelled commits on: 8dc1c444df19, b723748750ec, 2867e1eac610; the other 14 off; "
        "they differ in 0780b4145634, but it changes only how an ECN mark writes an IPv4 header checksum that sums "
        "to 0xFFFF): leave out --no-fix"
    ]


def test_kernel_profiles_run_side_by_side(runner):
    r = _run(runner, FIX_SAMPLE, "--format", "json", "--kernel", "5.11", "--kernel", "6.18")
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    assert [k["release"] for k in doc["kernels"]] == ["5.11", "6.18"]
    # 6.18 has the fix (gate checks uh->check, gro-spec §4.6): the phys device aggregates
    assert [k["stages"]["phys"]["skbs_delivered"] for k in doc["kernels"]] == [17, 1]


def test_repeated_tunnel_port_is_one_socket(runner):
    # one UDP tunnel socket per port: naming 4789 twice changes nothing (the replay used to fail on it)
    r = _run(runner, FIX_SAMPLE, "--format", "json", "--vxlan-port", "4789", "--vxlan-port", "4789")
    assert r.exit_code == 0 and r.stderr == ""
    doc = json.loads(r.stdout)
    assert doc["config"]["vxlan_ports"] == [4789]
    assert doc["summary"] == FIX_SUMMARY


def test_trace_to_stdout_with_json_is_refused():
    # the JSON document and the trace would share stdout: a usage error (exit 2), one line
    from click.testing import CliRunner

    from gro_replay.cli import main

    r = CliRunner().invoke(
        main, ["sample_pcaps/vxlan-zero-csum-fix-89e5c58fc1e2.pcap", "--trace", "-", "--format", "json"]
    )
    assert r.exit_code == 2
    assert "both write to stdout" in r.output and "Traceback" not in r.output


def test_ipv6_endpoints_are_bracketed_in_flow_labels():
    # RFC 3986 authority form, the one `explain --flow [addr]:port` accepts
    from gro_replay.packet.build import FrameSpec, build_frame
    from gro_replay.sim import ReplayConfig, replay_frames

    res = replay_frames(
        [(0, build_frame(FrameSpec(outer_ipv6=True, inner_ipv6=True, udp_sport=49039)))], ReplayConfig()
    )
    label = res.flows[0].label()
    assert label.startswith("[fd00::1]:49039→[fd00::2]:4789 vxlan vni 100")
    assert "| [fd01::1]:40000→[fd01::2]:5201 tcp" in label


# -- one kernel order: by release, whatever the order of the --kernel options ----------------------------------
def test_kernel_order_is_by_release_in_every_output(runner):
    """``--kernel 6.18 --kernel 5.4`` and ``--kernel 5.4 --kernel 6.18`` are the same comparison: the table, the NIC
    line's kernels, SUMMARY, JSON kernels[] and config.kernels, markdown, explain and the trace's tags all list
    5.4 first (5.4 < 6.18), so every output of the two runs is byte for byte the same."""
    outs = {}
    for order in (("6.18", "5.4"), ("5.4", "6.18")):
        ks = [a for k in order for a in ("--kernel", k)]
        outs[order] = [
            _run(runner, FIX_SAMPLE, *ks, *extra).stdout
            for extra in (
                [],
                ["--format", "json"],
                ["--format", "markdown"],
                ["--trace", "-"],
            )
        ] + [runner.invoke(main, ["explain", str(FIX_SAMPLE), *ks, "-q"]).stdout]
    a, b = outs.values()
    assert a == b
    table, doc, md, trace, explain = a
    assert "SUMMARY kernels=5.4,6.18 " in table
    assert "; kernels: 5.4 (v5.4), 6.18 (v6.18)" in table
    d = json.loads(doc)
    assert [k["name"] for k in d["kernels"]] == ["5.4", "6.18"]
    assert [k["name"] for k in d["config"]["kernels"]] == ["5.4", "6.18"]
    assert "; kernels: 5.4 (v5.4), 6.18 (v6.18)" in md
    assert explain.index("5.4 (v5.4)") < explain.index("6.18 (v6.18)")
    events = [ln.split()[0] for ln in trace.splitlines() if ": net:" in ln]  # "TAG  0.000009: net:…"
    assert list(dict.fromkeys(events)) == ["5.4", "6.18"]


def test_kernels_of_one_release_are_one_model_and_refused(runner):
    """Ties in the release order (two distribution strings of one release, 5.4.0-42: upstream 5.4 assumed for both,
    kernel/distro.py) resolve to one kernel model, equal switches: refused in one line, exit 2, whatever the order
    (cli/options.py ``_kernels``), instead of two identical columns."""
    for order in (("5.4.0-42-lowlatency", "5.4.0-42-generic"), ("5.4.0-42-generic", "5.4.0-42-lowlatency")):
        r = _run(runner, FIX_SAMPLE, "--kernel", "6.1", "--kernel", order[0], "--kernel", order[1])
        assert r.exit_code == 2
        (line,) = r.output.strip().splitlines()
        assert line.startswith(
            f"Error: --kernel {order[0]!r} and --kernel {order[1]!r} run one kernel model (every modelled commit off)"
        )


#: 5.11 and Ubuntu 21.04's 5.11.0-16-generic (upstream 5.11 assumed: its uname -r names no stable release,
#: kernel/distro.py) are one model: of the modelled commits 8dc1c444df19 (v5.11, "net: gro: do not keep too many GRO
#: packets in napi->rx_list"), b723748750ec (v5.7), 2867e1eac610 (v5.10-rc7) and 0780b4145634 (v5.11-rc1) are in;
#: 89e5c58fc1e2 came in v5.12-rc2
SAME_511 = [
    ("5.11", "5.11"),
    ("5.11", "5.11.0-16-generic"),
    ("5.11.0-16-generic", "5.11"),
    ("5.11.0-16-generic", "5.11.0-16-generic"),
]


@pytest.mark.parametrize("pair", SAME_511, ids=["+".join(p) for p in SAME_511])
def test_one_kernel_model_given_twice_is_refused_in_either_order_and_when_identical(runner, pair):
    """A repeated string is refused like two strings of one model (it ran one column silently): one line, exit 2,
    naming the commits the two share."""
    r = _run(runner, FIX_SAMPLE, "--kernel", pair[0], "--kernel", pair[1])
    assert r.exit_code == 2
    (line,) = r.output.strip().splitlines()
    assert line.startswith(
        f"Error: --kernel {pair[0]!r} and --kernel {pair[1]!r} run one kernel model (modelled commits on: "
        "8dc1c444df19, b723748750ec, 2867e1eac610, 0780b4145634; the other "
    )


@pytest.mark.parametrize("pair", SAME_511, ids=["+".join(p) for p in SAME_511])
def test_the_library_refuses_one_kernel_model_twice(pair):
    """ReplayConfig.validate gives API users the CLI's answer (ConfigError, naming the shared commits)."""
    from gro_replay.kernel.release import resolve_kernel
    from gro_replay.sim import ConfigError, ReplayConfig, replay_capture

    cfg = ReplayConfig(kernels=tuple(resolve_kernel(k) for k in pair))
    with pytest.raises(
        ConfigError,
        match=r"run one kernel model \(modelled commits on: 8dc1c444df19, b723748750ec, 2867e1eac610, 0780b4145634; "
        r"the other ",
    ):
        cfg.validate()
    with pytest.raises(ConfigError):
        replay_capture(str(FIX_SAMPLE), cfg)
    ReplayConfig(kernels=(resolve_kernel(pair[0]), resolve_kernel("5.12"))).validate()  # 89e5c58fc1e2 differs


@pytest.mark.parametrize("nic", ["virtio-net", "ena", "gve", "veth"])
def test_a_tunnel_port_is_programmed_only_on_a_nic_that_offloads_them(runner, nic):
    # kernel/nic.py NicPreset.tunnel_port_offload: these drivers register no udp_tunnel_nic ports (newcomer's
    # finding: '--nic virtio-net --nic-tunnel-port on' was taken and reported as 'tunnel port on')
    r = runner.invoke(main, [str(FIX_SAMPLE), "-q", "--nic", nic, "--nic-tunnel-port", "on"])
    assert r.exit_code == 2
    assert r.stderr.strip() == (
        f"Error: --nic-tunnel-port on: the {nic} preset has no tunnel port offload (udp_tunnel_nic) to program; "
        "leave it off"
    )
    assert (
        runner.invoke(main, [str(FIX_SAMPLE), "-q", "--nic", "ice", "--nic-tunnel-port", "on"]).exit_code == 0
    )
