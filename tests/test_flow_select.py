"""One flow filter everywhere: ``--flow SELECTOR`` (packet/flowsel.py) on replay (table, JSON), ``--trace``,
``--write-pcap``, ``explain`` and ``diff``; and ``-f EXPR``, a BPF capture filter applied before the replay.

The 4-flow VXLAN sample (``make samples``: 4 flows, 100 frames each, in blocks of 8 round-robin, inner TCP sport
40000 + flow) under the default budget poll model: each poll takes 64 frames in capture order, so 16 frames of
every flow (two blocks); HZ 250 < 1000, so a poll that uses its whole budget flushes every held packet at its
end (``napi_poll`` → ``napi_gro_flush(napi, false)``, gro-spec §1.3). 400 frames are 6 full polls and one of 16
frames (the last blocks: flow 0's 8 and flow 1's last 4, 100 = 12 × 8 + 4). Flow 1 therefore ends as 6 phys
skbs of 16 segments (``napi_poll:budget_exhausted_flush``) and one of 4 (``napi_complete_done:flush``): 7 skbs,
100 segments, on eth0 and again on vxlan0 (each passes gro_cells as one GSO skb, §6.6). ``--flow`` replays every
frame (the flows share the polls, as in the capture) and reports the selected flows' skbs.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner
from conftest import FIX_SAMPLE, VXLAN4_SAMPLE

from gro_replay.cli import main
from gro_replay.packet.decode import FlowKey
from gro_replay.packet.flowsel import FlowSelector, SelectorError, select_flows

TSHARK = shutil.which("tshark")


def run(*args, env=None):
    r = CliRunner().invoke(main, [str(a) for a in args], env=env)
    assert "Traceback" not in r.output and "internal error" not in r.stderr, r.output
    return r


FLOW1 = "sport=40001"


def test_flow_line_says_one_frame_in_the_singular(tmp_path):
    # breaker50: "1 of 1 frames replayed" for a capture of one frame
    from gro_replay.capture.writer import PcapWriter
    from gro_replay.packet.build import FrameSpec, build_flow

    path = tmp_path / "one.pcap"
    with PcapWriter(path) as w:
        w.write(0, build_flow(FrameSpec(), [1000])[0])
    r = run(path, "--flow", "0", "-q")
    assert r.exit_code == 0, r.output
    assert "--flow 0: 1 of 1 flow, 1 of 1 frame replayed (" in r.stdout


def test_flow_selects_one_flow_in_the_table():
    r = run(VXLAN4_SAMPLE, "--flow", FLOW1, "-q", "--no-hist", env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert (
        "--flow sport=40001: 1 of 4 flows, 100 of 400 frames replayed; the other flows' frames went through the "
        "kernels too" in " ".join(r.stdout.split())
    )
    rows = {
        line.split("  ")[1].strip(): line.split() for line in r.stdout.splitlines() if line.startswith("  ")
    }
    assert rows["skbs delivered"][-6:] == ["7", "7", "0", "7", "7", "0"]
    assert rows["segments in (wire frames)"][-6:] == ["100", "100", "0", "100", "100", "0"]
    assert rows["skbs in"][-6:] == ["100", "100", "0", "7", "7", "0"]
    assert rows["segments / skb, max"][-6:] == ["16", "16", "0", "16", "16", "0"]
    assert "kernel[pre-fix].phys_skbs=7 " in r.stdout


def test_flow_json_holds_the_selected_flow_only_with_its_counts_in_context():
    full = json.loads(run(VXLAN4_SAMPLE, "--format", "json", "-q").stdout)
    doc = json.loads(run(VXLAN4_SAMPLE, "--flow", FLOW1, "--format", "json", "-q").stdout)
    assert doc["config"]["flow"] == FLOW1 and doc["input"]["selected_frames"] == 100
    assert doc["input"]["frames_replayed"] == 400  # every frame went through the kernels
    for k, kf in zip(doc["kernels"], full["kernels"], strict=True):
        (row,) = k["flows"]
        assert row["id"] == 1 and row["key"]["inner"]["sport"] == 40001
        # the selected flow's row is the same as in the full replay: the flows shared their polls as captured
        assert row == next(f for f in kf["flows"] if f["id"] == 1)
        for stage in ("phys", "tunnel"):
            st = k["stages"][stage]
            assert st["skbs_delivered"] == 7 and st["segments_delivered"] == 100 and st["frames_in"] == 100
            assert st["segs_per_skb_hist"] == {"4": 1, "16": 6}
            # NAPI-wide counters cannot be split by flow: n/a
            assert st["sw_csum_bytes"] is None and st["gro_results"] is None
        assert k["stages"]["phys"]["end_reasons"] == {
            "napi_poll:budget_exhausted_flush": 6,
            "napi_complete_done:flush": 1,
        }


def test_flow_selects_one_flow_in_the_trace():
    full = run(VXLAN4_SAMPLE, "--trace", "-", "-q", "--no-hist").stdout.splitlines()
    sel = run(VXLAN4_SAMPLE, "--flow", FLOW1, "--trace", "-", "-q", "--no-hist").stdout.splitlines()
    full_trace = [line for line in full if "netif_receive_skb" in line]
    sel_trace = [line for line in sel if "netif_receive_skb" in line]
    # 7 skbs per device and kernel: 2 kernels × (eth0 + vxlan0)
    assert len(sel_trace) == 28 and len(full_trace) == 112
    assert set(sel_trace) <= set(full_trace)  # the same deliveries, at the same times, as in the full run
    phys_lens = [
        line.split("len=")[1] for line in sel_trace if line.startswith("pre-fix") and "dev=eth0" in line
    ]
    # skb->len from the outer IP header: the headers once (IPv4 20 + UDP 8 + VXLAN 8 + inner Ethernet 14 + IPv4 20
    # + TCP 20, no timestamps: 90) and every segment's 1410 payload bytes (1514-byte frames): 16 and 4 segments
    assert phys_lens == [str(16 * 1410 + 90)] * 6 + [str(4 * 1410 + 90)]


@pytest.mark.skipif(TSHARK is None, reason="tshark is not installed (make deps)")
def test_flow_selects_one_flow_in_the_pcap_output(tmp_path):
    r = run(VXLAN4_SAMPLE, "--flow", FLOW1, "--write-pcap", tmp_path, "-q", "--format", "json")
    assert r.exit_code == 0, r.output
    for kernel in ("pre-fix", "post-fix"):
        out = subprocess.run(
            [TSHARK, "-r", str(tmp_path / f"{kernel}.pcapng"), "-T", "fields"]
            + ["-e", "frame.interface_name", "-e", "tcp.srcport"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split("\n")
        rows = [line.split("\t") for line in out if line]
        assert sorted(rows) == sorted([["eth0", "40001"]] * 7 + [["vxlan0", "40001"]] * 7)


def test_flow_selects_one_flow_in_diff(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(run(VXLAN4_SAMPLE, "--fix", "--format", "json", "-q").stdout)
    b.write_text(run(VXLAN4_SAMPLE, "--no-fix", "--format", "json", "-q").stdout)
    doc = json.loads(run("diff", a, b, "--flow", FLOW1, "--format", "json").stdout)
    (pair,) = doc["kernels"]
    (row,) = pair["flows"]
    assert row["key"]["inner"]["sport"] == 40001
    assert row["stages"]["phys"]["flow_skbs"]["baseline"] == 7
    assert not any(c["checked"] for st in pair["stages"].values() for c in st.values())
    assert any(n.startswith("--flow sport=40001: only the matching flows") for n in doc["notes"])
    full = json.loads(run("diff", a, b, "--format", "json").stdout)
    assert len(full["kernels"][0]["flows"]) == 4
    r = run("diff", a, b, "--flow", "sport=50000")
    assert r.exit_code == 2 and "no flow of the documents matches --flow 'sport=50000'" in r.stderr


NO_MATCH = "Error: no flow matches --flow 'vni=101' (1 flow in {}; {})\n"


@pytest.mark.parametrize(
    "extra",
    [
        [],
        ["--format", "json"],
        ["--format", "markdown"],
        ["--json", "-"],
        ["--markdown", "-"],
        ["--trace", "-"],
    ],
    ids=["table", "json", "markdown", "json-dash", "markdown-dash", "trace-dash"],
)
def test_flow_matching_nothing_prints_only_the_error(extra):
    """The fix sample holds one flow, VNI 100: ``vni=101`` matches none. The replay has to run before that is
    known; nothing is rendered (no zero report with a verdict), only the one-line error."""
    r = run(FIX_SAMPLE, "--flow", "vni=101", *extra)
    assert r.exit_code == 2
    assert r.stdout == ""
    assert r.stderr == NO_MATCH.format(
        FIX_SAMPLE, "gro-replay explain CAPTURE with the same options lists them"
    )


@pytest.mark.parametrize("command", [[], ["explain"]])
def test_flow_matching_nothing_says_what_the_filter_removed(command):
    """The fix sample's 17 frames are all UDP to 4789: ``-f tcp`` (outer TCP) removes every one, so no flow is
    left; the error says they were filtered (breaker's finding: "0 flows in …" read as an empty capture), on the
    replay and on explain alike."""
    pytest.importorskip("pcapy", reason="the bpf extra (pcapy-ng) is part of the test extra")
    r = run(*command, FIX_SAMPLE, "-f", "tcp", "--flow", "vni=101")
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr == (
        f"Error: no flow matches --flow 'vni=101' (0 flows in {FIX_SAMPLE}: none of the 17 frames read was replayed "
        "(17 frames filtered out by -f))\n"
    )


def test_summary_says_what_was_filtered_and_selected():
    """The fix sample: 17 frames of one VXLAN flow (VNI 100), all UDP. ``-f tcp`` filters all 17 out: the SUMMARY
    line says filtered=17 beside replayed=0 (newcomer's finding: frames − skipped ≠ replayed with no reason);
    ``--flow vni=100`` selects the flow's 17 frames, which the skb counts cover: selected=17. Neither key appears
    unless asked for."""
    pytest.importorskip("pcapy", reason="the bpf extra (pcapy-ng) is part of the test extra")

    def summary(*args):
        r = run(FIX_SAMPLE, "-q", *args)
        return r.stdout.splitlines()[-1]

    assert " frames=17 skipped=0 replayed=0 filtered=17 kernel[" in summary("-f", "tcp")
    assert " frames=17 skipped=0 replayed=17 selected=17 kernel[" in summary("--flow", "vni=100")
    plain = summary()
    assert " replayed=17 kernel[" in plain and "filtered=" not in plain and "selected=" not in plain


def test_flow_matching_nothing_writes_no_file_output(tmp_path):
    """--trace FILE, --write-pcap DIR, --json FILE, --markdown FILE: none is left behind (the trace
    file and pcap directory the run created empty are removed again)."""
    outs = {
        "--trace": tmp_path / "t.txt",
        "--write-pcap": tmp_path / "pcaps",
        "--json": tmp_path / "j.json",
        "--markdown": tmp_path / "m.md",
    }
    args = [a for o, p in outs.items() for a in (o, p)]
    r = run(FIX_SAMPLE, "--flow", "vni=101", "-q", *args)
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr == NO_MATCH.format(
        FIX_SAMPLE, "gro-replay explain CAPTURE with the same options lists them"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_flow_matching_nothing_explain_and_diff(tmp_path):
    r = run("explain", FIX_SAMPLE, "--flow", "vni=101")
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr == NO_MATCH.format(FIX_SAMPLE, "run without --flow to list them")
    doc = tmp_path / "d.json"
    doc.write_text(run(FIX_SAMPLE, "--format", "json", "-q").stdout)
    r = run("diff", doc, doc, "--flow", "vni=101")
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr == "Error: no flow of the documents matches --flow 'vni=101'\n"


def test_flow_matching_nothing_is_exit_2():
    r = run(VXLAN4_SAMPLE, "--flow", "vni=7", "-q")
    assert r.exit_code == 2 and r.stderr.startswith("Error: no flow matches --flow 'vni=7' (4 flows in ")
    assert r.stdout == ""


# -- bad selectors: one line, exit 2, before any frame is read, on every command that takes --flow -----------------
BAD = [
    ("²", "id needs a number"),  # str.isdigit() is True for '²', int() refuses it
    ("vni=²", "vni needs a number"),
    ("sport=٣", "sport needs a number"),  # Arabic-Indic digit three
    ("9" * 5000, "selector of 5000 characters"),
    ("9" * 25, "has 25 digits"),
    ("vni=" + "9" * 30, "has 30 digits"),
    ("#", "id needs a number"),
    ("id=-1", "id needs a number"),
    ("sport=65536", "sport 65536 is out of range (0…65535)"),
    ("outer-dport=70000", "outer-dport 70000 is out of range"),
    ("vni=16777216", "vni 16777216 is out of range (0…16777215)"),
    ("proto=256", "proto 256 is out of range"),
    ("proto=sctpx", "proto must be tcp, udp, icmp, icmpv6"),
    ("10.0.0.1:65536", "port 65536 is out of range"),
    ("10.0.0.1:x", "port needs a number"),
    ("[fd00::1", "use [IPV6]:PORT"),
    ("[fd00::1]x", "use [IPV6]:PORT"),
    ("10.0.0.999", "is not an IPv4 or IPv6 address"),
    ("src=bogus", "src: 'bogus' is not an IPv4 or IPv6 address"),
    ("tunnel=gre", "tunnel must be vxlan, geneve or none"),
    ("csum=maybe", "csum must be zero or set"),
    ("colour=red", "unknown key 'colour'"),
    ("", "empty term"),
    ("1,,2", "empty term"),
    (",".join(["1"] * 65), "65 terms"),
]


@pytest.mark.parametrize(("selector", "message"), BAD, ids=[repr(b[0])[:30] for b in BAD])
def test_bad_selector_is_one_line_exit_2_everywhere(tmp_path, selector, message):
    doc = tmp_path / "d.json"
    doc.write_text(run(FIX_SAMPLE, "--format", "json", "-q").stdout)
    for args in (
        [FIX_SAMPLE, "--flow", selector, "-q"],
        [FIX_SAMPLE, "--flow", selector, "--trace", tmp_path / "t.txt", "-q"],
        ["explain", FIX_SAMPLE, "--flow", selector, "-q"],
        ["diff", doc, doc, "--flow", selector],
    ):
        r = run(*args)
        assert r.exit_code == 2, (args, r.output)
        assert r.stderr.count("\n") == 1 and message in r.stderr, (args, r.stderr)
        assert len(r.stderr) < 300


def _key(**kw) -> FlowKey:
    base = dict(
        outer_src="10.0.0.1",
        outer_dst="10.0.0.2",
        outer_sport=49152,
        outer_dport=4789,
        tunnel="vxlan",
        vni=100,
        inner_src="fd00::1",
        inner_dst="fd00::2",
        inner_proto=6,
        inner_sport=40000,
        inner_dport=5201,
        outer_csum_zero=True,
    )
    base.update(kw)
    return FlowKey(**base)


def test_selector_terms_and_canonical_addresses():
    plain = _key(tunnel="", vni=0, outer_dport=53, inner_src="", inner_dst="", inner_sport=0, inner_dport=0)
    flows = [_key(), _key(vni=200, inner_sport=5001), plain]
    assert select_flows(flows, "[FD00:0::1]:40000") == [0]  # IPv6 compared in canonical form
    assert select_flows(flows, "src=fd00:0:0::1") == [0, 1]
    assert select_flows(flows, "vni=200") == [1]
    assert select_flows(flows, "tunnel=none") == [2]
    assert select_flows(flows, "csum=zero,proto=tcp") == [0, 1]  # csum= only matches tunnelled flows
    assert select_flows(flows, "#2") == [2] and select_flows(flows, "id=1") == [1]
    assert select_flows(flows, "10.0.0.2:53") == [2]
    assert select_flows(flows, None) == [0, 1, 2]
    with pytest.raises(SelectorError):
        FlowSelector.parse("vni=²")


# -- -f EXPR: BPF before the replay ----------------------------------------------------------------------------------
def test_bpf_filter_counts_what_it_leaves_out():
    pytest.importorskip("pcapy", reason="the bpf extra (pcapy-ng) is part of the test extra")
    # the fix sample: 16 frames of 1514 bytes and the last of 788 (16 × 1398 + 1 × 672 payload bytes)
    doc = json.loads(run(FIX_SAMPLE, "-f", "greater 1000", "--format", "json", "-q").stdout)
    inp = doc["input"]
    assert inp["frames_read"] == 17 and inp["frames_replayed"] == 16 and inp["filtered"] == {"bpf": 1}
    assert doc["config"]["filter"] == "greater 1000"
    doc = json.loads(run(FIX_SAMPLE, "-f", "tcp", "--format", "json", "-q").stdout)
    # the outer packet is UDP (VXLAN): libpcap's "tcp" does not look inside the tunnel
    assert doc["input"]["filtered"] == {"bpf": 17} and doc["input"]["frames_replayed"] == 0
    # the capture is all VXLAN: the note says the filter removed it, never that none parses as VXLAN or Geneve
    (note,) = [n for n in doc["input"]["notes"] if "VXLAN or Geneve traffic" in n]
    assert note.startswith(
        "no VXLAN or Geneve traffic replayed: 17 frames filtered out by -f, none left to replay"
    )
    doc = json.loads(run(FIX_SAMPLE, "-f", "udp dst port 4789", "--format", "json", "-q").stdout)
    assert doc["input"]["filtered"] == {} and doc["input"]["frames_replayed"] == 17
    r = run(FIX_SAMPLE, "-f", "greater 1000", "-q", "--no-hist")
    assert "; 1 frame filtered out by -f" in r.stdout


def test_bpf_bad_expression_is_exit_2():
    pytest.importorskip("pcapy", reason="the bpf extra (pcapy-ng) is part of the test extra")
    r = run(FIX_SAMPLE, "-f", "udp port bogus", "-q")
    assert (
        r.exit_code == 2 and r.stderr.startswith("Error: -f 'udp port bogus': ") and r.stderr.count("\n") == 1
    )


def test_bpf_without_the_binding_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pcapy", None)  # import pcapy raises ImportError
    r = run(FIX_SAMPLE, "-f", "udp", "-q")
    assert r.exit_code == 2
    assert (
        "install the bpf extra (pip install '.[bpf]' in the gro-replay source tree, i.e. pcapy-ng)"
        in r.stderr
    )


@pytest.mark.parametrize("command", ["replay", "explain", "diff"])
def test_the_help_of_flow_names_every_selector_term(command):
    """Every term the selector reads (packet/flowsel.py KEYS, but the bare flow id, written as N) is named in the
    --flow help of each command that takes it (breaker's finding: vlan= was missing after inner VLAN tags landed)."""
    from gro_replay.packet.flowsel import KEYS

    r = CliRunner().invoke(main, [command, "--help"], terminal_width=1000)
    assert r.exit_code == 0
    text = " ".join(r.output.split())
    for k in KEYS:
        if k != "id":
            assert f"{k}=" in text, k


def test_a_selection_is_not_told_of_the_captures_cut_tunnel_frames(tmp_path):
    """VXLAN frames cut short at 60 bytes (skipped, snaplen_cut), a UDP flow to port 9999 and whole VXLAN frames:
    --flow selecting the UDP flow was told "No tunnel frame was replayed … the 7 frames replayed are not VXLAN or
    Geneve traffic", a capture-wide claim (4 VXLAN frames were replayed) under the selection's prefix (breaker33).
    The selection's own sentence speaks of its 3 frames, with the hint to tunnels on other ports."""
    from gro_replay.capture.writer import PcapWriter
    from gro_replay.packet.build import FrameSpec, build_flow

    vx = build_flow(FrameSpec(outer_csum="zero"), [1000] * 4)
    udp = build_flow(FrameSpec(outer_csum="zero", udp_dport=9999, udp_sport=50001), [1000] * 3)
    path = tmp_path / "cut.pcap"
    with PcapWriter(str(path)) as w:
        t = 1_700_000_000_000_000_000
        for i, f in enumerate(vx):
            w.write(t + i, f[:60], orig_len=len(f))
        for i, f in enumerate(udp + vx):
            w.write(t + 1000 + i, f)
    doc = json.loads(run(path, "--flow", "outer-dport=9999", "--format", "json", "-q").stdout)
    assert doc["verdict"]["text"] == (
        "No flow selected by --flow outer-dport=9999 carries VXLAN or Geneve traffic: none of their 3 frames is to a "
        "tunnel port, so the fix has nothing to change for them (the capture's other flows are not selected; "
        "tunnels on other ports: --vxlan-port P / --geneve-port P)."
    )
