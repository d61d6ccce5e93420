"""Wording of the human-readable report a newcomer found ambiguous or inconsistent: counts in sentences carry the
table's thousands separators (JSON and the SUMMARY line keep plain integers), and the "and N more" tail of an
end-reason list names what it counts.
"""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from gro_replay.cli import main
from gro_replay.kernel import reasons as R
from gro_replay.report.verdict import reason_list

FLOWS = 1200
FRAMES_PER_FLOW = 3


@pytest.fixture(scope="module")
def wide_capture(tmp_path_factory):
    """1,200 VXLAN flows with a zero outer UDP checksum, 3 frames each, sent round robin 1 µs apart (synth's
    defaults): 3,600 frames."""
    from click.testing import CliRunner

    path = tmp_path_factory.mktemp("wide") / "wide.pcap"
    r = CliRunner().invoke(
        main,
        ["synth", str(path), "--flows", str(FLOWS), "--frames", str(FRAMES_PER_FLOW), "--outer-csum", "zero"],
    )
    assert r.exit_code == 0, r.output
    return str(path)


@pytest.fixture(scope="module")
def wide_reports(wide_capture):
    from click.testing import CliRunner

    runner = CliRunner()
    out = {}
    for fmt in ("table", "markdown", "json"):
        r = runner.invoke(main, [wide_capture, "--format", fmt, "--no-hist"], env={"COLUMNS": "250"})
        assert r.exit_code == 0, r.output
        out[fmt] = r.stdout
    return out


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_counts_in_sentences_have_thousands_separators(wide_reports, fmt):
    """The pre-fix kernel refuses every frame at the phys device (outer UDP checksum 0, CHECKSUM_UNNECESSARY level
    0: udp_gro_receive's gate before 89e5c58fc1e2, gro-spec §udp_gro_receive): 3,600 phys skbs, each ended by the
    gate. The post-fix kernel merges none of the 1,200 flows at the phys device either: round robin over 1,200
    flows 1 µs apart, a gap:3 poll takes 64 frames (the NAPI weight), all of different flows, so no two frames of
    a flow meet in one poll (napi_complete_done flushes GRO at each poll's end, HZ 250)."""
    text = wide_reports[fmt]
    frames = FLOWS * FRAMES_PER_FLOW
    assert f"{frames:,} frames read, {frames:,} replayed" in text
    assert "frames: tunnel_tcp 3,600" in text
    assert "phys skbs ended by (pre-fix, 3,600 skbs): " in text
    assert "[udp_gro_receive:csum_cnt0_csum_valid0_not_partial(uh.check=0)] ×3,600" in text
    assert "udp_gro_receive refuses 3,600 frames for their zero outer UDP checksum" in text
    # the very flows said above to be merged no further by the post-fix kernel: referred to (newcomer35)
    assert "post-fix (v5.12) merges none of those 1,200 flows' frames at the phys device" in text
    # no count of four digits or more without its separator in any line of human text (the SUMMARY line is the
    # grep-able exception; ports, addresses and commit ids are not counts)
    for line in text.splitlines():
        if "SUMMARY" in line:
            assert "frames=3600" in line
            continue
        for m in re.finditer(r"(?:×|\b)(\d{4,})\b", line):
            assert m.group(1).startswith("89"), line  # 89e5c58fc1e2 starts with digits


def test_json_keeps_plain_integers(wide_reports):
    doc = json.loads(wide_reports["json"])
    assert doc["input"]["frames_read"] == FLOWS * FRAMES_PER_FLOW
    assert isinstance(doc["input"]["frames_read"], int)
    assert "refuses 3,600 frames" in doc["verdict"]["text"]  # the sentence is the table's


def test_and_n_more_names_skbs_and_reasons():
    """The tail after the top three reasons counts skbs (what every end-reason counter counts) and says how many
    other reasons they fall under, so the counts add up to the skbs."""
    c = Counter(
        {
            R.BUDGET_EXHAUSTED: 3098,
            R.MAX_GRO_SKBS: 486,
            R.POLL_END: 16,
            R.TCP_SEQ: 20,
            R.TCP_FLAGS_PSH_FIN: 1,
        }
    )
    text = reason_list(c)
    assert text.endswith("; and 17 more skbs (2 other reasons)"), text
    assert "×3,098" in text
    one = reason_list(
        Counter({R.BUDGET_EXHAUSTED: 5, R.MAX_GRO_SKBS: 4, R.POLL_END: 3, R.TCP_FLAGS_PSH_FIN: 1})
    )
    assert one.endswith("; and 1 more skb (1 other reason)"), one


def test_delta_column_names_its_pair_with_three_kernels():
    """Δ is newest − oldest (report/table.py grid); with three kernels the header says which pair. The fix's own
    capture: 5.10 (without 89e5c58fc1e2; the stable branch took it only in 5.10.24) refuses all 17 frames at the
    phys device, post-fix merges them into 2 skbs (10 + 7 frames, the fix's commit message): Δ −15."""
    from click.testing import CliRunner
    from conftest import FIX_SAMPLE

    runner = CliRunner()
    r = runner.invoke(
        main,
        [str(FIX_SAMPLE), "--kernel", "5.12", "--kernel", "5.10", "--kernel", "5.11", "--format", "markdown"],
    )
    assert r.exit_code == 0, r.output
    head = next(line for line in r.stdout.splitlines() if line.startswith("| metric"))
    assert "| Δ phys (post-fix − 5.10) |" in head and head.endswith("| Δ tunnel (post-fix − 5.10) |"), head
    row = next(line for line in r.stdout.splitlines() if line.startswith("| skbs delivered"))
    assert row.split(" | ")[1:5] == ["17", "17", "2", "-15"], row
    r = runner.invoke(
        main,
        [str(FIX_SAMPLE), "--kernel", "5.12", "--kernel", "5.10", "--kernel", "5.11"],
        env={"COLUMNS": "250"},
    )
    assert r.exit_code == 0, r.output
    assert r.stdout.count("Δ post-fix − 5.10") == 2, r.stdout
    # the verdict names its pair too: the newest kernel without the fix (5.11, not 5.10) and the oldest with it
    verdict = next(line for line in r.stdout.splitlines() if line.startswith("Compared for the fix: "))
    assert verdict.startswith(
        "Compared for the fix: pre-fix (v5.11), without it, and post-fix (v5.12), with it. Before the fix, 1 of 1 "
    ), verdict
    # two kernels: the only pair, the header stays short
    r = runner.invoke(main, [str(FIX_SAMPLE), "--format", "markdown"])
    head = next(line for line in r.stdout.splitlines() if line.startswith("| metric"))
    assert "| Δ phys |" in head and "−" not in head, head
    assert "Compared for the fix" not in r.stdout


@pytest.mark.parametrize(
    ("release", "head"),
    [
        (
            "5.10.30-custom",
            "kernel 5.10.30-custom: assumed upstream 5.10 with the stable backports of 5.10.30: 89e5c58fc1e2 as "
            "09af4362ba47 (since 5.10.24), 8dc1c444df19 as 9e6ce473e96b (since 5.10.17)",
        ),
        (
            "6.18.44-fc-v657",
            "kernel 6.18.44-fc-v657: assumed upstream 6.18 with the stable backports of 6.18.44: no backport of a modelled "
            "commit",
        ),
        ("5.4.0-42-generic", "kernel 5.4.0-42-generic: assumed upstream 5.4 without stable backports"),
    ],
)
def test_kernel_assumption_lines_say_one_thing(release, head):
    """A custom build's or distribution's uname -r (what the kernel backend reports for the running kernel: the
    same ``kernel_lines``): the head line and the resolution's note state the same assumption in the same words —
    before, the head said "assumed upstream 6.18.44 + no stable backports" beside a note "assumed upstream 6.18
    with the stable backports of 6.18.44". 89e5c58fc1e2 reached linux-5.10.y as 09af4362ba47 in 5.10.24 and
    8dc1c444df19 as 9e6ce473e96b in 5.10.17 (the stable tags' logs, kernel/stable.py STABLE_BACKPORTS)."""
    from click.testing import CliRunner
    from conftest import FIX_SAMPLE

    r = CliRunner().invoke(main, [str(FIX_SAMPLE), "--kernel", release, "-q", "--no-hist"])
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    i = lines.index(head)
    note = lines[i + 1]
    assumed = head.split(": assumed ", 1)[1].split(":")[
        0
    ]  # "upstream 5.10 with the stable backports of 5.10.30"
    assert note.startswith("  note: ") and assumed in note, (head, note)
    assert not re.search(r"assumed upstream \d+\.\d+\.\d+", r.stdout)


V6_FRAMES = 20


@pytest.fixture(scope="module")
def v6_zero_capture(tmp_path_factory):
    """One VXLAN flow over outer IPv6 with outer UDP checksum 0, 20 frames 1 µs apart (synth's defaults)."""
    from click.testing import CliRunner

    path = tmp_path_factory.mktemp("v6z") / "v6z.pcap"
    r = CliRunner().invoke(
        main, ["synth", str(path), "--outer-ipv6", "--outer-csum", "zero", "--frames", str(V6_FRAMES)]
    )
    assert r.exit_code == 0, r.output
    return str(path)


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_drop_line_names_skbs_and_the_frames_the_verdict_counts(v6_zero_capture, fmt):
    """__udp6_lib_rcv drops a UDPv6 datagram whose checksum is 0 unless the tunnel socket allows it
    (net/ipv6/udp.c, udp6_csum_zero_error; RFC 6936): every phys skb is dropped. Pre-fix, udp_gro_receive refuses
    each frame (zero checksum, csum_cnt 0: gro-spec §udp_gro_receive), so 20 skbs of one frame each; post-fix,
    the 20 frames arrive 1 µs apart (< gap:3), in one poll under the weight of 64, and leave as one aggregate
    (napi_complete_done flush): 1 skb carrying 20 frames. The drop line names both units; the verdict counts the
    20 frames."""
    from click.testing import CliRunner

    r = CliRunner().invoke(main, [v6_zero_capture, "--format", fmt, "--no-hist"], env={"COLUMNS": "250"})
    assert r.exit_code == 0, r.output
    assert "not decapsulated as VXLAN/Geneve (pre-fix): udp6_csum_zero_error 20 skbs (20 frames)" in r.stdout
    assert "not decapsulated as VXLAN/Geneve (post-fix): udp6_csum_zero_error 1 skb (20 frames)" in r.stdout
    assert "20 frames lost: __udp6_lib_rcv" in r.stdout


def test_drop_counts_in_json_and_explain(v6_zero_capture):
    """The same drops (see above) in JSON: ``stack`` counts skbs, ``stack_frames`` the frames they carried, per
    kernel, per flow; explain's stack line names both."""
    from click.testing import CliRunner

    runner = CliRunner()
    r = runner.invoke(main, [v6_zero_capture, "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    got = {k["name"]: (k["stack"], k["stack_frames"], k["flows"][0]["stack_frames"]) for k in doc["kernels"]}
    drop = "udp6_csum_zero_error"
    assert got == {
        "pre-fix": ({drop: 20}, {drop: 20}, {drop: 20}),
        "post-fix": ({drop: 1}, {drop: 20}, {drop: 20}),
    }
    r = runner.invoke(main, ["explain", v6_zero_capture])
    assert r.exit_code == 0, r.output
    assert (
        "stack (IP → UDP → vxlan decap): 1 skb (20 frames); 0 skbs (0 frames) queued to gro_cells; "
        "dropped: udp6_csum_zero_error 1 skb (20 frames)"
    ) in r.stdout
    r = runner.invoke(main, ["explain", v6_zero_capture, "--format", "json"])
    assert r.exit_code == 0, r.output
    k = json.loads(r.stdout)["flows"][0]["kernels"]["post-fix"]
    assert (k["stack"], k["stack_frames"]) == ({drop: 1}, {drop: 20})


def test_a_count_of_one_takes_the_singular(tmp_path):
    """Two back-to-back segments of one VXLAN flow, outer checksum 0 (synth's defaults): before the fix
    udp_gro_receive refuses both (csum_cnt 0, csum_valid 0: gro-spec §4.4), after it they merge into one skb, so
    the fix saves one traversal: '1 skb traversal', not '1 skb traversals'."""
    from click.testing import CliRunner

    path = tmp_path / "two.pcap"
    r = CliRunner().invoke(main, ["synth", str(path), "--frames", "2"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, [str(path), "--format", "json", "-q"])
    v = json.loads(r.stdout)["verdict"]
    assert v["stack_traversals_saved"] == 1
    assert (
        "1 of 1 tunnelled TCP flow loses phys-device aggregation: udp_gro_receive refuses 2 frames, which go up one by one."
        in v["text"]
    )
    assert "The fix saves 1 skb traversal of IP/UDP/tunnel decapsulation." in v["text"]


def test_tunnel_ports_take_the_singular_for_one():
    """The no-tunnel sentence names each kind's ports: 'UDP port 6081' for one (was 'UDP ports 6081')."""
    from gro_replay.report.verdict.words import ports_text

    assert ports_text((6081,)) == "UDP port 6081"
    assert ports_text((4789, 8472)) == "UDP ports 4789, 8472"
    assert ports_text(()) == "no UDP port"


@pytest.mark.parametrize(
    ("release", "head"),
    [
        (
            "5.12-rc1",
            "kernel 5.12-rc1: upstream 5.12-rc1 (a release candidate: the commits merged by rc1, not 89e5c58fc1e2 "
            "of a later rc, which 5.12 carries)",
        ),
        (  # a build past the tag: what it adds is not known, so it is "assumed" (test_banner.py)
            "5.12.0-rc1+",
            "kernel 5.12.0-rc1+: assumed upstream 5.12-rc1 (a release candidate: the commits merged by rc1, not "
            "89e5c58fc1e2 of a later rc, which 5.12 carries)",
        ),
        (
            "5.12-rc2",
            "kernel 5.12-rc2: upstream 5.12-rc2 (a release candidate: the commits merged by rc2; no modelled "
            "commit of 5.12 is known to have landed after rc2)",
        ),
    ],
)
def test_a_release_candidate_is_not_called_its_release(release, head):
    """89e5c58fc1e2 landed in v5.12-rc2 (kernel/model.py SWITCH_COMMITS): the kernel line of 5.12-rc1 must not
    say "upstream 5.12 + no stable backports" (5.12 carries the fix, rc1 does not; an rc has no stable branch)."""
    from click.testing import CliRunner
    from conftest import FIX_SAMPLE

    r = CliRunner().invoke(main, [str(FIX_SAMPLE), "--kernel", release, "-q", "--no-hist"])
    assert r.exit_code == 0, r.output
    assert head in r.stdout.splitlines()
    assert "upstream 5.12 +" not in r.stdout
    r = CliRunner().invoke(main, [str(FIX_SAMPLE), "--kernel", release, "-q", "--format", "json"])
    (k,) = json.loads(r.stdout)["config"]["kernels"]
    rc = release.replace(".0-", "-").rstrip("+")
    assert k["pre_release"] == {"release": rc, "lacks": ["89e5c58fc1e2"] if rc.endswith("rc1") else []}


@pytest.mark.parametrize(
    ("release", "head"),
    [
        # a .0 release is its base: no stable backport at all, and no "+ no" (breaker54)
        ("5.12.0", "kernel 5.12.0: upstream 5.12, no stable backport of a modelled commit"),
        # linux-5.10.y's backport of a9888628cb2c was not read (kernel/stable.py): "no known", as its note says
        ("5.10.5", "kernel 5.10.5: upstream 5.10, no known stable backport of a modelled commit"),
        (
            "5.10.0-21-amd64 #1 SMP Debian 5.10.5-1 (2021-01-01)",
            "kernel 5.10.0-21-amd64: assumed upstream 5.10 with the stable backports of 5.10.5: no known backport of "
            "a modelled commit",
        ),
    ],
)
def test_a_kernel_line_says_no_backport_only_when_every_one_was_read(release, head):
    """The kernel line's "no … backport of a modelled commit" is "no known …" where the next line's note says a
    backport was not read (JSON ``config.kernels[].backports_unread``)."""
    from click.testing import CliRunner
    from conftest import FIX_SAMPLE

    r = CliRunner().invoke(main, [str(FIX_SAMPLE), "--kernel", release, "-q", "--no-hist"])
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    at = lines.index(head)
    notes = [x for x in lines[at + 1 :] if x.startswith("  note: ")]
    unread = "known" in head
    said = any(
        x.startswith("  note: backports unknown: whether linux-5.10.y took a9888628cb2c") for x in notes
    )
    assert said == unread, notes
    r = CliRunner().invoke(main, [str(FIX_SAMPLE), "--kernel", release, "-q", "--format", "json"])
    (k,) = json.loads(r.stdout)["config"]["kernels"]
    assert k["backports_unread"] == (["a9888628cb2c"] if unread else [])


def test_a_gso_skb_passed_up_at_the_tunnel_device_reads_as_a_pass_through_not_a_flush(runner):
    """A newcomer read "skb already GSO (flushed by dev_gro_receive)" as a failure. Up to v6.0 dev_gro_receive sets
    NAPI_GRO_CB(skb)->flush = skb_is_gso(skb) || skb_has_frag_list(skb) and sends a flushing skb to "normal"
    (GRO_NORMAL): it is neither held nor merged into and goes up as it arrived (net/core/gro.c, before 5eddb24901ee
    "gro: add support of (hw)gro packets to gro stack", v6.1). The tunnel device of a kernel before v6.1 receives
    every phys aggregate as such an skb (napi_gro_complete made it GSO): the sample's 28 aggregates (the JSON's
    phys ``aggregates``) end so, under the unchanged key, described once (reasons.DESCRIPTIONS) for the table,
    explain's JSON and the report."""
    from pathlib import Path

    from gro_replay.kernel.model import profile
    from gro_replay.report.verdict.words import _rule_note

    sample = "sample_pcaps/vxlan-4flows-computed-csum.pcap"
    path = str(Path(__file__).resolve().parents[1] / sample)
    doc = json.loads(runner.invoke(main, [path, "--format", "json", "-q"]).stdout)
    pre = doc["kernels"][0]["stages"]
    assert pre["tunnel"]["end_reasons"] == {R.GSO_SKB: pre["phys"]["aggregates"]} == {R.GSO_SKB: 28}
    desc = R.describe(R.GSO_SKB)
    assert desc == (
        "arrived merged already (a GSO skb from the phys device's GRO); dev_gro_receive passes it up as it is"
    )
    assert "flush" not in desc and "flush" not in R.describe(R.FRAG_LIST)
    line = (
        f"tunnel skbs ended by (pre-fix, 28 skbs): {desc} [dev_gro_receive:skb_is_gso] ×28 (every GSO skb before "
        "5eddb24901ee, v6.1; from it GRO can merge a TCP one further)"
    )
    assert line in runner.invoke(main, [path]).stdout.splitlines()
    # from v6.1 a TCP GSO skb enters GRO (count = gso_segs): the note is of the kernels before it only
    assert _rule_note(R.GSO_SKB, profile("6.18")) == ""
    ex = json.loads(runner.invoke(main, ["explain", path, "--format", "json"]).stdout)
    said = {
        (e["reason"], e["description"])
        for f in ex["flows"]
        for e in f["kernels"]["pre-fix"]["tunnel"]["reasons"]
    }
    assert said == {(R.GSO_SKB, desc)}


@pytest.mark.parametrize("flows", [1, 2, 11])
def test_flow_counts_agree_with_their_nouns_and_verbs(tmp_path, flows):
    """The verdict's counts of flows take the singular for one and the plural otherwise, verb included (they read
    "1 flow(s) lose" before). synth --flows N, 8 frames each, outer checksum 0 (synth's defaults): the pre-fix gate
    refuses every frame (csum_cnt 0, csum_valid 0: gro-spec §4.4) and the fix merges each flow's frames at the phys
    device (gro-spec §4.7 row 3), so all N flows are affected and their 8·N frames go up one by one. The table
    lists 10 affected flows: with 11 one more is left over, and the line counting it says "flow" and "it"."""
    from click.testing import CliRunner

    cap = tmp_path / f"flows{flows}.pcap"
    runner = CliRunner()
    r = runner.invoke(main, ["synth", str(cap), "--flows", str(flows), "--frames", "8"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(main, [str(cap), "--no-hist"], env={"COLUMNS": "250"})
    assert r.exit_code == 0, r.output
    lead = {
        1: "Before the fix, 1 of 1 tunnelled TCP flow loses phys-device aggregation: udp_gro_receive refuses 8 frames, which go up one by one.",
        2: "Before the fix, 2 of 2 tunnelled TCP flows lose phys-device aggregation: udp_gro_receive refuses 16 frames, which go up one by one.",
        11: "Before the fix, 11 of 11 tunnelled TCP flows lose phys-device aggregation: udp_gro_receive refuses 88 frames, which go up one by one.",
    }[flows]
    assert lead in r.stdout
    more = [line for line in r.stdout.splitlines() if "more affected" in line]
    assert more == (
        ["  … and 1 more affected flow (explain --limit 0 or --format json lists it)"] if flows == 11 else []
    )


@pytest.fixture(scope="module")
def fix_docs(tmp_path_factory):
    """The fix sample's JSON documents with the fix and without it (budget polls): its one flow, 17 frames, goes
    from 17 segments per phys skb to 1, and the tunnel stage keeps 17 either way (test_diff.py)."""
    from click.testing import CliRunner
    from conftest import FIX_SAMPLE

    d = tmp_path_factory.mktemp("fixdocs")
    out = []
    for name in ("--fix", "--no-fix"):
        r = CliRunner().invoke(main, [str(FIX_SAMPLE), "--poll", "budget", name, "--format", "json", "-q"])
        assert r.exit_code == 0, r.output
        path = d / f"{name.strip('-')}.json"
        path.write_text(r.stdout)
        out.append(str(path))
    return out


@pytest.mark.parametrize(
    ("metrics", "status"),
    [
        # the phys stage's segments per skb only: one value lost (the tunnel stage's is unchanged)
        (["--metric", "segs_per_skb"], "REGRESSION: 1 checked value lost more than 0%."),
        # the defaults add the one flow's phys segments per skb: two values lost
        ([], "REGRESSION: 2 checked values lost more than 0%."),
    ],
)
@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_diff_status_counts_its_values_in_agreement(fix_docs, metrics, status, fmt):
    from click.testing import CliRunner

    r = CliRunner().invoke(main, ["diff", *fix_docs, *metrics, "--format", fmt], env={"COLUMNS": None})
    assert r.exit_code == 1, r.output
    assert (f"**{status}**" if fmt == "markdown" else status) in r.stdout.splitlines()


def test_one_frame_or_flow_takes_the_singular_in_the_remaining_sentences(runner, tmp_path):
    """Sentences that spoke of one as of many (breaker's findings): the gate's "for its zero outer UDP checksum",
    explain's "1 frame" of a flow that is not tunnelled, the unconfigured-port note's "to decode it"."""
    from gro_replay.capture.writer import PcapWriter
    from gro_replay.packet.build import FrameSpec, build_frame
    from gro_replay.report.verdict.words import refused_where
    from gro_replay.sim.notes import unconfigured_text

    assert refused_where({"phys": 1, "tunnel": 0}) == "for its zero outer UDP checksum"
    assert refused_where({"phys": 2, "tunnel": 0}) == "for their zero outer UDP checksum"
    assert "to decode it (or --vxlan-port auto" in unconfigured_text("vxlan", 9999, 1)
    assert "to decode them (or --vxlan-port auto" in unconfigured_text("vxlan", 9999, 2)
    path = tmp_path / "one.pcap"
    with PcapWriter(
        str(path)
    ) as w:  # one VXLAN frame to UDP port 9999: no tunnel socket there, one plain flow
        w.write(1_700_000_000_000_000_000, build_frame(FrameSpec(udp_dport=9999)))
    r = runner.invoke(main, ["explain", str(path), "--limit", "0"])
    assert r.exit_code == 0, r.output
    assert re.search(r"^flow 0: .*; 1 frame$", r.stdout, re.M), r.stdout


def test_a_loss_of_several_frames_says_them():
    """The drop table speaks of one packet ("udp_rcv drops it"); several frames lost take "them" (breaker's
    finding: "2 frames lost: geneve_rx drops it")."""
    from gro_replay.kernel import drop_reasons as D
    from gro_replay.report.verdict.words import loss_text

    assert loss_text(D.UDP_SHORT_PACKET, 1).startswith("1 frame lost: udp_rcv drops it: ")
    assert loss_text(D.UDP_SHORT_PACKET, 2).startswith("2 frames lost: udp_rcv drops them: ")


def test_an_aggregate_ended_by_a_short_segment_is_merged_later(runner):
    """The fix sample: 17 frames the pre-fix gate refuses at the phys device; the tunnel device merges them into 2
    skbs, the first ended by its last segment shorter than the mss (tcp_gro_receive, out_check_final), the second
    by the poll's end: an aggregate's normal end, so the verdict says they are merged later (a frame kept apart by
    its own header, as an inner checksum, would not be)."""
    from conftest import FIX_SAMPLE

    r = runner.invoke(main, [str(FIX_SAMPLE)])
    assert r.exit_code == 0
    assert "They are merged only later by the tunnel device's gro_cells." in " ".join(r.stdout.split())


@pytest.fixture(scope="module")
def acked_mix(tmp_path_factory):
    """synth's overlay-node mix with 4 connections, 600 frames: each connection's data one way (writes of 1–16
    segments) and its delayed ACKs back, without payload; every 4th connection (the 4th) has an outer UDP
    checksum, the other 3 send 0 (gro_replay/synth_mix.py ``csum_every``)."""
    from click.testing import CliRunner

    path = tmp_path_factory.mktemp("acked") / "mix4.pcap"
    r = CliRunner().invoke(
        main, ["synth", str(path), "--mix", "overlay-node", "--connections", "4", "--frames", "600"]
    )
    assert r.exit_code == 0, r.output
    return str(path)


@pytest.mark.parametrize(
    ("args", "lead"),
    [
        (
            [],
            "Before the fix, 3 of the 4 tunnelled TCP flows that carry payload (8 with the 4 that carry none) lose ",
        ),
        (
            ["--kernel", "5.11"],
            "3 of the 4 tunnelled flows that carry payload (8 with the 4 that carry none) lose phys-device "
            "aggregation",
        ),
    ],
)
def test_affected_flows_are_counted_among_those_with_payload(acked_mix, args, lead):
    """newcomer33: "36 of 96 tunnelled TCP flows lose" counted the ACK directions, which no kernel merges
    (tcp_gro_receive flushes a segment without payload: net/ipv4/tcp_offload.c), as flows that could lose
    aggregation. The 4 connections are 8 tunnelled TCP flows, the 4 ACK directions without payload; the pre-fix
    gate refuses the frames of the 3 with outer checksum 0 (CHECKSUM_UNNECESSARY level 0: gro-spec §4.4), which
    the fix merges (writes of several segments): 3 of the 4 that carry payload. The JSON names the 4."""
    from click.testing import CliRunner

    runner = CliRunner()
    r = runner.invoke(main, [acked_mix, *args, "--no-hist"], env={"COLUMNS": "250"})
    assert r.exit_code == 0, r.output
    assert lead in " ".join(r.stdout.split())
    r = runner.invoke(main, [acked_mix, *args, "--format", "json"])
    v = json.loads(r.stdout)["verdict"]
    assert (v["affected_flows"], v["tunnel_flows"], v["tunnel_flows_without_payload"]) == (3, 8, 4)


def test_of_tunnelled_words():
    """The count's nouns and verbs follow its numbers: one flow with payload "carries", one without "carries"."""
    from gro_replay.report.verdict.words import of_tunnelled

    assert of_tunnelled(1, 1, 0, True) == "1 of 1 tunnelled TCP flow"
    assert (
        of_tunnelled(1, 2, 1, all_tcp=True)
        == "1 of the 1 tunnelled flow that carries payload (2 with the 1 that carries none)"
    )
    assert of_tunnelled(1, 3, 1) == (
        "1 of the 2 tunnelled flows other than the 1 whose TCP segments carry no payload (3 in all)"
    )
    assert of_tunnelled(2, 5, 3, True) == (
        "2 of the 2 tunnelled TCP flows that carry payload (5 with the 3 that carry none)"
    )


def test_the_kernel_backends_kernel_line_says_its_counts_are_measured():
    """The kernel backend's report (``result.backend`` "kernel") measures the running kernel: what is assumed of a
    custom build (6.18.44-fc-v657: upstream 6.18 with the stable backports of 6.18.44, as the replay's line says) is
    only which modelled commits it carries, for the verdict's words, not its counts (newcomer40: "assumed" read as if
    the counts were). The replay's line is unchanged."""
    from dataclasses import replace

    from conftest import FIX_SAMPLE

    from gro_replay.kernel.release import resolve_kernel
    from gro_replay.report.table import input_lines
    from gro_replay.sim import ReplayConfig, replay_capture

    cfg = ReplayConfig(kernels=(resolve_kernel("6.18.44-fc-v657"),))
    result = replay_capture(str(FIX_SAMPLE), cfg)
    assumed = "assumed upstream 6.18 with the stable backports of 6.18.44: no backport of a modelled commit"
    assert f"kernel 6.18.44-fc-v657: {assumed}" in input_lines(result)
    assert (
        f"kernel 6.18.44-fc-v657: the running kernel (counts measured); for the verdict's words on its commits, "
        f"{assumed}"
    ) in input_lines(replace(result, backend="kernel"))
