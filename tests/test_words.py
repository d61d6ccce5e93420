"""The truth of the sentences the report prints (README: the product's rule — the truth of every sentence the tool
prints is the product; verdict, explain, JSON and SUMMARY come from one computation).

Advice is tested by running the advised options from the user's own invocation; assumptions about distribution
kernels are tested to be said as assumptions, in the text and in the JSON.
"""

from __future__ import annotations

import json
import re

import pytest
from conftest import FIX_SAMPLE

from gro_replay.cli import main

SAMPLE = str(FIX_SAMPLE)


def _run(runner, *args: str):
    return runner.invoke(main, [SAMPLE, *args])


def _advice(text: str) -> str:
    """The options the single-kernel verdict advises (a sentence of its own: "Run without --no-fix …", "Add
    --kernel 5.12 …"), lower-cased."""
    m = re.search(r"(Run without --no-fix|Add --kernel [\w.-]+)", text)
    assert m, text
    return m.group(1)[0].lower() + m.group(1)[1:]


@pytest.mark.parametrize("invocation", [["--no-fix"], ["--kernel", "5.10"], ["--kernel", "5.4.0-42-generic"]])
def test_fix_advice_works_from_the_invocation(runner, invocation):
    """Every piece of advice is a command that works from the user's invocation: after --no-fix leaving it out
    compares 5.11 with 5.12; after --kernel X adding --kernel 5.12 compares X with 5.12 (--kernel and
    --fix/--no-fix are exclusive, cli/options.py _kernels)."""
    r = _run(runner, *invocation)
    assert r.exit_code == 0, r.output
    advice = _advice(r.stdout)
    if advice == "run without --no-fix":
        assert invocation == ["--no-fix"]
        advised = [a for a in invocation if a != "--no-fix"]
    else:
        assert invocation[0] == "--kernel" and advice == "add --kernel 5.12"
        advised = [*invocation, "--kernel", "5.12"]
    r2 = _run(runner, *advised)
    assert r2.exit_code == 0, r2.output
    # the advised run compares a kernel without the fix with one carrying it (the sample's flows are refused by
    # udp_gro_receive's zero-checksum gate before 89e5c58fc1e2 and merged after it)
    assert re.search(r"The fix( alone)? saves", r2.stdout) and "without --no-fix" not in r2.stdout


def test_distribution_kernel_verdict_states_its_assumption(runner):
    """4.18.0-305.el8: Red Hat's backports are not known, so "lacks the fix" is an assumption (upstream 4.18 base,
    run as the 4.19 model: kernel/release.py resolve_kernel) — the text and the JSON say so, and the header names the
    same base as the note; a distribution's uname -r is no v-tag."""
    r = _run(runner, "--kernel", "4.18.0-305.el8", "--json", "-")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    (k,) = doc["config"]["kernels"]
    fix = k["fix_89e5c58fc1e2"]
    assert (
        fix["carried"] is False and fix["known"] is False and fix["carried_basis"] == "assumed-upstream-base"
    )
    assert k["vendor"] == "Red Hat" and k["vendor_base"] == "4.18" and k["base"] == "4.19"
    text = doc["verdict"]["text"]
    assert "assumed an upstream 4.18 base, run as the upstream 4.19 model" in text
    assert "lacks 89e5c58fc1e2 unless Red Hat backported it" in text
    r = _run(runner, "--kernel", "4.18.0-305.el8")
    assert (
        "kernel 4.18.0-305.el8: assumed upstream 4.18 without stable backports, run as the upstream 4.19 model\n"
        in r.stdout
    )
    assert "upstream 4.19 +" not in r.stdout
    assert "(v4.18.0-305.el8)" not in r.stdout


def test_upstream_and_stable_fix_facts_are_known(runner):
    """5.10 lacks the fix upstream, 5.10.24 carries it as the stable backport 09af4362ba47 (STABLE_BACKPORTS, read
    in the stable trees): both known; the 5.10 verdict names the stable release that carries it."""
    doc = json.loads(_run(runner, "--kernel", "5.10", "--kernel", "5.10.24", "--json", "-").stdout)
    f510, f51024 = (k["fix_89e5c58fc1e2"] for k in doc["config"]["kernels"])
    assert (f510["carried"], f510["known"], f510["carried_basis"]) == (False, True, "upstream")
    assert (f51024["carried"], f51024["known"], f51024["carried_basis"]) == (True, True, "stable")
    r = _run(runner, "--kernel", "5.10")
    assert (
        "5.10 (v5.10) lacks 89e5c58fc1e2 (linux-5.10.y carries it since 5.10.24, as 09af4362ba47)" in r.stdout
    )
    # the single-kernel verdict is about the phys device: the tunnel device's gro_cells still merge them
    flat = " ".join(r.stdout.split())  # the console folds long lines
    assert "1 of 1 tunnelled flow loses phys-device aggregation" in flat  # the sample's one flow


def test_flow_selection_verdict_and_inner_udp_reason(runner, shared_captures):
    """nDPI vxlan.pcap (captures/README.md: VXLAN 4789, two TLS downloads and DNS): --flow proto=udp selects the 4
    DNS flows (2 queries, 2 responses). The verdict is about them only (the product's rule: verdict, table and JSON
    from one computation over the selection): 4 tunnelled flows, no TCP or split sentence of unselected flows. At
    the phys device udp_gro_receive meets the DNS datagram's UDP header inside the tunnel (encap_mark set by the
    outer udp_gro_receive, net/ipv4/udp_offload.c) and finds no tunnel socket: the inner header's reason, marked as
    the other inner reasons are; at the tunnel device, after decapsulation, it is the only header."""
    cap = str(shared_captures / "ndpi" / "vxlan.pcap")
    r = runner.invoke(main, [cap, "--flow", "proto=udp", "--format", "json", "-q"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    v = doc["verdict"]
    assert v["tunnel_flows"] == 4
    assert "an inner flow that also travels" not in v["text"] and "TCP flow" not in v["text"]
    for k in doc["kernels"]:
        assert set(k["stages"]["phys"]["end_reasons"]) >= {"udp_gro_receive:inner_no_tunnel_socket"}
        assert "udp_gro_receive:no_tunnel_socket" in k["stages"]["tunnel"]["end_reasons"]
    r = runner.invoke(main, [cap, "--flow", "proto=udp", "-q", "--no-hist"])
    assert (
        "UDP without tunnel socket (not VXLAN/Geneve) (inner header) [udp_gro_receive:inner_no_tunnel_socket]"
        in (r.stdout)
    )


def test_diff_names_a_missing_input_in_words(runner, tmp_path):
    """A document without ``input`` is said to have none, never "CURRENT None (sha256 None)" (the product's rule:
    every sentence true)."""
    r = runner.invoke(main, [SAMPLE, "--format", "json", "-q"])
    doc = json.loads(r.stdout)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(doc))
    del doc["input"]
    b.write_text(json.dumps(doc))
    r = runner.invoke(main, ["diff", str(a), str(b)])
    assert r.exit_code == 2
    assert "CURRENT has no input recorded; pass --allow-different-input" in r.stderr
    assert "None" not in r.stderr
    r = runner.invoke(main, ["diff", str(b), str(b)])
    assert r.exit_code == 0, r.output
    assert "input: neither document records its input" in r.stdout and "None (sha256" not in r.stdout


def test_counts_of_one_take_the_singular(runner, tmp_path):
    """One frame of one flow (synth: a zero-checksum VXLAN frame): every count+noun the report prints agrees in
    number (the product's rule: every sentence true, its grammar included) — "1 frame read", "1 skb", "1 seg"."""
    from gro_replay.synth import Scenario, write_scenario

    one = tmp_path / "one.pcap"
    write_scenario(one, Scenario(frames=1))
    out = runner.invoke(main, [str(one)]).stdout
    out += runner.invoke(main, ["explain", str(one)]).stdout
    assert "1 frame read" in out and "(pre-fix, 1 skb)" in out and "1 seg  │" in out
    assert "1 skb in (1 frame) → 1 skb out (0 with ≥2 segs)" in out
    assert not re.findall(r"(?<![\d.,])1 (frames|skbs|segs|super-frames|segments)\b", out)


def test_one_super_frame_in_the_input_line(runner, shared_captures):
    cap = shared_captures / "tcpdump" / "gso-ipv4-vxlan-ipv4.pcap"
    r = runner.invoke(main, [str(cap), "-q", "--no-hist"])
    assert "resegmented: 1 super-frame into 5 segments" in r.stdout


def test_tunnel_stage_rows_say_what_they_count(runner, tmp_path):
    """Post-fix the phys stage merges the sample's 17 frames into 2 skbs (gro-spec §4.7 row 3, K-fix), which reach
    vxlan0's gro_cells as 2 skbs of 10 and 7 segments and leave it unmerged (dev_gro_receive flushes a GSO skb
    before 5eddb24901ee, gro-spec §6.6). The row counting skbs of ≥2 segments says "delivered" in the table, the
    Markdown and the diff, and the JSON schemas describe the key as such, from one text (report AGGREGATES_*)."""
    from gro_replay.report import AGGREGATES_LABEL, AGGREGATES_MEANS

    assert AGGREGATES_LABEL == "skbs delivered with ≥2 segs"
    table = _run(runner, "--fix", "--poll", "gap:5").stdout
    rows = {m[1]: m[2] for m in re.finditer(r"(?m)^  (\S.*?\S)  +.*?([\d,.]+)\s*$", table)}
    assert rows["skbs in"] == "2" and rows["skbs delivered"] == "2" and rows[AGGREGATES_LABEL] == "2"
    assert "aggregates (" not in table
    md = _run(runner, "--fix", "--poll", "gap:5", "--format", "markdown").stdout
    assert f"| {AGGREGATES_LABEL} |" in md
    for name in ("replay", "explain"):
        doc = json.loads(runner.invoke(main, ["schema", name]).stdout)
        found = [
            d["aggregates"].get("description") for d in _dicts(doc) if isinstance(d.get("aggregates"), dict)
        ]
        assert found and all(d == AGGREGATES_MEANS for d in found), (name, found)
        assert AGGREGATES_MEANS.startswith(
            "skbs delivered carrying 2 segments or more, whether this stage merged"
        )
    post = tmp_path / "post.json"
    post.write_text(_run(runner, "--fix", "--format", "json").stdout)
    diff = runner.invoke(main, ["diff", str(post), str(post)]).stdout
    assert AGGREGATES_LABEL in diff and "aggregates (" not in diff


def _dicts(node):
    """Every JSON object in ``node`` (depth first)."""
    if isinstance(node, dict):
        yield node
        node = list(node.values())
    if isinstance(node, list):
        for v in node:
            yield from _dicts(v)


def test_sw_csum_row_says_where_the_cpu_summed(runner):
    """The fix sample (outer UDP checksum 0, CHECKSUM_UNNECESSARY level 0): pre-fix udp_gro_receive refuses the
    frames at phys and vxlan0's gro_cells verifies the inner TCP checksums; post-fix the phys stage does (the
    frames are merged there, gro-spec §4.7 row 3): the same 23,584 bytes, summed at another stage. The row names
    the stage's CPU work and a line says the total did not grow, in the table and the Markdown alike."""
    from gro_replay.report import SW_CSUM_LABEL

    line = (
        "bytes the CPU checksummed: pre-fix 23,584 at tunnel gro_cells, post-fix 23,584 at phys NAPI: the same total "
        "in each kernel, summed at another stage (not more work)"
    )
    table = _run(runner).stdout
    assert re.search(rf"(?m)^  {SW_CSUM_LABEL}\s+0\s+23,584\s+\+23,584\s+23,584\s+0\s+-23,584\s*$", table)
    assert line in table.splitlines()
    md = _run(runner, "--format", "markdown").stdout
    assert f"| {SW_CSUM_LABEL} | 0 | 23,584 | +23,584 | 23,584 | 0 | -23,584 |" in md
    assert line in md.splitlines()
    # one kernel: nothing moved between kernels, no such line
    assert "bytes the CPU checksummed:" not in _run(runner, "--fix").stdout


def test_sw_csum_above_the_skbs_bytes_says_why(runner, tmp_path):
    """newcomer35: post-fix the phys stage checksums 23,584 bytes and delivers 23,244. GRO sums each of the 17
    frames from its inner TCP header to its end before merging it (__skb_gro_checksum_complete, gro-spec §4.7 row
    3): 16 × (32 + 1,398) + (32 + 672) = 23,584 (TCP header with the timestamp option, payload); the 2 merged skbs
    keep one frame's headers each (skb->len from the outer IP header, 102 header bytes a frame up to the payload):
    24,774 − 15 × 102 = 23,244. pre-fix gro_cells sums the same frames and delivers 23,144 (its skbs start at the
    inner IP header: 50 bytes fewer each). A line says what the row counts wherever a stage summed more than its
    skbs hold."""
    why = (
        "the row counts every software sum, GRO's of each frame before it merges the frame (a merged skb keeps one "
        "frame's headers) and, at the phys device, udp_rcv's of each skb whose UDP checksum GRO did not settle (so "
        "a frame can count twice)"
    )
    both = _run(runner).stdout.splitlines()
    assert (
        f"bytes the CPU checksummed exceed bytes (skb->len) at pre-fix tunnel gro_cells, post-fix phys NAPI: {why}"
        in both
    )
    md = _run(runner, "--format", "markdown").stdout.splitlines()
    assert (
        f"bytes the CPU checksummed exceed bytes (skb->len) at pre-fix tunnel gro_cells, post-fix phys NAPI: {why}"
        in md
    )
    alone = _run(runner, "--fix").stdout.splitlines()
    assert f"bytes the CPU checksummed exceed bytes (skb->len) at post-fix phys NAPI: {why}" in alone
    # GRO off on both devices: nothing summed, nothing merged, no such line
    assert "exceed bytes" not in _run(runner, "--gro", "phys=off", "--gro", "tunnel=off").stdout
    # breaker51: 4 frames whose outer UDP checksum is wrong, CHECKSUM_NONE: udp_gro_receive sums each from its UDP
    # header (1,480 bytes), the check fails and the frame is not merged; udp_rcv sums it again
    # (__skb_checksum_validate with CHECKSUM_NONE): 2 × 4 × 1,480 = 11,840 over 6,000 bytes, no merge at all
    bad = tmp_path / "bad4.pcap"
    assert runner.invoke(main, ["synth", str(bad), "--outer-csum", "bad", "--frames", "4"]).exit_code == 0
    out = runner.invoke(main, [str(bad), "--rx-csum", "none", "-q"]).stdout
    assert re.search(r"(?m)^  bytes the CPU checksummed here\s+11,840\s+11,840\s+0\s+0\s+0\s+0\s*$", out), out
    assert re.search(r"(?m)^  skbs delivered with ≥2 segs\s+0\s+0\s", out), out
    assert (
        f"bytes the CPU checksummed exceed bytes (skb->len) at pre-fix phys NAPI, post-fix phys NAPI: {why}"
        in out
    )


def test_sw_csum_line_says_its_scope_when_the_totals_differ(runner):
    """The fix sample with GRO off on vxlan0: pre-fix the frames pass the phys stage unmerged (UNNECESSARY level 0,
    outer checksum 0: the udp_gro_receive gate) and udp4_csum_init consumes the level, so they reach the tunnel
    device as CHECKSUM_NONE, and gro_cells_receive hands them to netif_rx: no GRO stage sums them, TCP does
    (gro-spec §6.5; tcp_v4_rcv: skb_checksum_init, tcp_checksum_complete). Post-fix the phys stage sums the same
    23,584 bytes. The line must not read as if the fix added CPU work: it says the count is the GRO stages', and
    nothing about who sums the rest (an inner UDP frame, a dropped one or a bad checksum differ)."""
    line = (
        "bytes the CPU checksummed: pre-fix 0, post-fix 23,584 at phys NAPI: the totals differ; counted in the GRO "
        "stages and udp_rcv only (checksums verified later in the stack, by TCP, are not counted)"
    )
    assert line in _run(runner, "--gro", "tunnel=off").stdout.splitlines()


def test_diff_notes_checksum_bytes_moved_between_stages(runner, tmp_path):
    """diff of the fix sample's --fix document (baseline) against its --no-fix one: the 23,584 bytes leave the phys
    stage's row (-23,584) and appear at the tunnel stage's (+23,584, new); a note in the replay's words says it is
    the same total summed at another stage (JSON notes too)."""
    docs = {}
    for flag in ("--fix", "--no-fix"):
        docs[flag] = tmp_path / f"{flag.strip('-')}.json"
        docs[flag].write_text(_run(runner, flag, "--format", "json").stdout)
    note = (
        "post-fix → pre-fix: bytes the CPU checksummed: baseline post-fix 23,584 at phys NAPI, current pre-fix "
        "23,584 at tunnel gro_cells: the same total in each kernel, summed at another stage (not more work)"
    )
    r = runner.invoke(main, ["diff", str(docs["--fix"]), str(docs["--no-fix"])])
    assert r.exit_code == 1 and f"note: {note}" in r.stdout.splitlines()
    r = runner.invoke(main, ["diff", str(docs["--fix"]), str(docs["--no-fix"]), "--format", "json"])
    assert note in json.loads(r.stdout)["notes"]
    same = runner.invoke(main, ["diff", str(docs["--fix"]), str(docs["--fix"]), "--format", "json"])
    assert not any("CPU checksummed" in n for n in json.loads(same.stdout)["notes"])


def test_trace_and_write_pcap_times_are_what_the_help_says(runner, tmp_path):
    """--trace prints the delivery's poll time in seconds from the capture's first frame; --write-pcap stamps the
    same delivery on the capture's own clock (since the epoch). The fix sample's first poll (gap:3, at its 10th
    frame, gro-spec §1.3) is 9 µs after its first frame, whose timestamp is 1614373368.000000 s: 0.000009 in the
    trace, 1614373368.000009 in the pcapng. The help texts and README say so."""
    import dpkt

    with open(SAMPLE, "rb") as f:
        first = next(iter(dpkt.pcap.Reader(f)))[0]
    out = tmp_path / "out"
    r = _run(runner, "--fix", "--trace", "-", "--write-pcap", str(out), "-q")
    assert r.exit_code == 0, r.output
    assert (
        r.stdout.splitlines()[0]
        == "    0.000009: net:netif_receive_skb: dev=eth0 skbaddr=0xffff888100000000 len=14082"
    )
    with open(out / "post-fix.pcapng", "rb") as f:
        stamped = next(iter(dpkt.pcapng.Reader(f)))[0]
    assert round(float(first), 6) == 1614373368.0 and round((float(stamped) - float(first)) * 1e6) == 9
    help_text = " ".join(runner.invoke(main, ["replay", "--help"]).stdout.split())
    assert (
        "the time is the delivery's poll time in seconds from the capture's first frame (--write-pcap keeps the "
        "capture's clock)" in help_text
    )
    assert "timestamps: the delivery's poll time on the capture's clock" in help_text
    kernel_help = " ".join(runner.invoke(main, ["kernel", "--help"]).stdout.split())
    assert "the time is in seconds from the first skb the running kernel delivered" in kernel_help


@pytest.mark.parametrize(
    ("uname_r", "identity", "uname_rv"),
    [
        (
            "6.18.44-fc-v1098",
            "Linux version 6.18.44-fc-v1098 (builder@sandboxing) (gcc (GCC) 15.3.0, GNU ld (GNU Binutils) 2.46) #1 "
            "SMP PREEMPT_DYNAMIC @0",
            "6.18.44-fc-v1098 #1 SMP PREEMPT_DYNAMIC @0",
        ),
        (
            "5.10.0-21-amd64",
            "Linux version 5.10.0-21-amd64 (debian-kernel@lists.debian.org) (gcc-10 (Debian 10.2.1-6) 10.2.1 "
            "20210110, GNU ld (GNU Binutils for Debian) 2.35.2) #1 SMP Debian 5.10.162-1 (2023-01-21)",
            "5.10.0-21-amd64 #1 SMP Debian 5.10.162-1 (2023-01-21)",
        ),
    ],
)
def test_the_kernel_backend_names_the_running_kernel_as_kernel_option_does(
    runner, uname_r, identity, uname_rv
):
    """The kernel backend's result (validate.kernel_result, from what the running kernel reported: its uname -r
    and /proc/version, oracle/env.py kernel_identity) names the kernel as --kernel "$(uname -rv)" names it
    (kernel/release.py resolve_kernel), in the stats, the config and the JSON: one name, not linux-X.Y.Z beside
    it. The kernel's deliveries do not enter the name: none are given here, so no root is needed."""
    from gro_replay.oracle.replay import OracleResult
    from gro_replay.report.document import document
    from gro_replay.sim import PollModel, ReplayConfig
    from gro_replay.validate import kernel_result, load_capture

    cfg = ReplayConfig(poll=PollModel("budget"), rss="none", tunnel_metadata=True)
    oracle = OracleResult(
        deliveries=[],
        polls=[],
        kernel_release=uname_r,
        hz=250,
        frames_sent=0,
        frames_not_replayable={},
        attempts=1,
        kernel_identity=identity,
    )
    result = kernel_result(load_capture(SAMPLE, cfg, None), oracle, cfg)
    doc = document(result, backend="kernel")
    simulated = json.loads(_run(runner, "--kernel", uname_rv, "--format", "json").stdout)
    assert [k["name"] for k in simulated["kernels"]] == [uname_r]
    assert result.kernels[0].name == result.config.kernels[0].name == uname_r
    assert [k["name"] for k in doc["kernels"]] == [uname_r] and f"kernel={uname_r} " in doc["summary"]


def test_a_drop_list_adds_up_to_every_frame():
    """The verdict's drop lists name the two largest reasons and count the rest, so the frames add up (breaker's
    finding: a third reason was left out without a word)."""
    from collections import Counter

    from gro_replay.report.verdict.words import drop_list

    drops = Counter({"geneve_rx:ce_on_not_ect": 3, "geneve_rx:critical_options": 2, "ip_rcv:csum_error": 1})
    assert drop_list(drops) == (
        "geneve_rx:ce_on_not_ect ×3, geneve_rx:critical_options ×2 and 1 more frame (1 other reason)"
    )
    assert drop_list(Counter({"ip_rcv:csum_error": 4})) == "ip_rcv:csum_error ×4"


@pytest.mark.parametrize(
    ("release", "label"),
    [
        ("5.11", "5.11 (v5.11)"),
        ("5.10.24", "5.10.24 (v5.10.24)"),
        ("5.10.0", "5.10.0 (v5.10)"),  # upstream tags have no .0 patch level (v5.10)
        ("5.12.0-rc2", "5.12.0-rc2 (v5.12-rc2)"),
        ("5.12-rc1", "5.12-rc1 (v5.12-rc1)"),
        ("4.18.0-305.el8", "4.18.0-305.el8"),
    ],
)
def test_kernel_labels_name_tags_that_exist(release, label):
    from gro_replay.report.verdict.words import kernel_label

    assert kernel_label(release, release) == label


def test_other_changes_name_one_commit_as_it():
    # one other commit is "it" (newcomer's finding: "1 other modelled commit (8dc1c444df19; … names them)")
    from gro_replay.report.verdict.words import other_changes_words

    assert other_changes_words(["gro_normal_counts_segs"]) == (
        "1 other modelled commit that can change counts (8dc1c444df19; gro-replay kernels names it)"
    )


def test_the_segment_chart_counts_carry_thousands_separators():
    """The chart's counts read as the table's (README: counts in lines carry thousands separators; newcomer's
    finding: '1 seg │██… 16739' under a table saying 17,123)."""
    from gro_replay.report.stats import StageStats
    from gro_replay.report.table import _histogram

    st = StageStats()
    st.hist[1], st.hist[2] = 16_739, 7
    assert [line.split("│")[1].split()[-1] for line in _histogram(st)] == ["16,739", "7"]
