"""The fix's own trace (issue 2, "What must be shown", first bullet), through the library and through the CLI.

``sample_pcaps/vxlan-zero-csum-fix-89e5c58fc1e2.pcap`` is the traffic of the 89e5c58fc1e2 mail (gro-spec §8): one
VXLAN/IPv4 flow, outer UDP checksum 0, inner IPv4/TCP with timestamps, 16 segments of 1398 payload bytes and one
of 672 (outer IP lengths 1500 and 774); frames 1–10 at 0..9 µs, frames 11–17 at 19..25 µs. With ``--poll gap:5``
the 10 µs gap splits them into two polls (DESIGN.md poll models: a new poll when the gap exceeds 5 µs).

Expected lengths (gro-spec §6.6, §8): the phys device counts ``skb->len`` from the outer IP header, the tunnel
device from the inner IP header, 50 bytes later (outer IPv4 20 + UDP 8 + VXLAN 8 + inner Ethernet 14).
Inner IP+TCP headers with timestamps are 52 bytes, so a 10-segment aggregate is 52 + 10·1398 = 14032 and the
7-segment one 52 + 6·1398 + 672 = 9112 — the tunnel-device numbers of the fix mail.

Trace lines follow perf script's layout (tools/perf/builtin-script.c ``perf_sample__fprintf_start``: the time
as ``"%12s: "`` with microsecond resolution) and the ``net:netif_receive_skb`` format
(include/trace/events/net.h ``net_dev_template``: ``dev=%s skbaddr=%p len=%u``).
"""

from __future__ import annotations

import re

import pytest
from conftest import FIX_SAMPLE

from gro_replay.capture.reader import open_capture
from gro_replay.cli import main
from gro_replay.kernel import reasons as R
from gro_replay.kernel.model import K_5_11, K_5_12
from gro_replay.sim import PollModel, ReplayConfig, replay_capture

MSS = 1398
LAST = 672
OUTER = 50  # outer IPv4 + UDP + VXLAN + inner Ethernet (gro-spec §6.6)
INNER_HDRS = 52  # inner IPv4 + TCP with the timestamp option (gro-spec §8)
WIRE_FULL = OUTER + INNER_HDRS + MSS  # 1500: outer IP total length of a full segment
WIRE_LAST = OUTER + INNER_HDRS + LAST  # 774
AGG1 = INNER_HDRS + 10 * MSS  # 14032 (fix mail, tunnel device)
AGG2 = INNER_HDRS + 6 * MSS + LAST  # 9112 (fix mail, tunnel device)
T1 = "0.000009"  # first poll: ends with frame 10 at 9 µs after frame 1
T2 = "0.000025"  # second poll: frames 11–17 at 19..25 µs

#: Single-kernel trace line: 12-character right-aligned time, then the tracepoint (perf script layout).
LINE = re.compile(
    r"^(?P<time>[ \d.]{12}): net:netif_receive_skb: dev=(?P<dev>\S+) skbaddr=0x(?P<addr>[0-9a-f]+) len=(?P<len>\d+)$"
)

#: (stage, device, len, time) per delivered skb, in delivery order, per kernel. Derivations:
#: pre-fix: the gate refuses every frame (gro-spec §4.7 row 3), each goes up as GRO_NORMAL with its wire length;
#:   after each phys poll the cell runs (§6.4) and merges the poll's frames: 10 segments, then 6 + the short one
#:   ("short segment ends the GRO packet", §5.5).
#: post-fix: the phys device merges each poll's frames; the first aggregate ends at the poll's end flush
#:   (§1.3), the second with its short last segment (§5.5); each passes the cell unchanged (GSO skb, §6.6).
PRE = (
    [("phys", "eth0", WIRE_FULL, T1)] * 10
    + [("tunnel", "vxlan0", AGG1, T1)]
    + [("phys", "eth0", WIRE_FULL, T2)] * 6
    + [("phys", "eth0", WIRE_LAST, T2), ("tunnel", "vxlan0", AGG2, T2)]
)
POST = [
    ("phys", "eth0", OUTER + AGG1, T1),
    ("tunnel", "vxlan0", AGG1, T1),
    ("phys", "eth0", OUTER + AGG2, T2),
    ("tunnel", "vxlan0", AGG2, T2),
]


def test_expected_lengths_are_the_fix_mail_numbers():
    # the 89e5c58fc1e2 mail's trace: phys 1500-byte skbs before the fix, tunnel aggregates 14032 and 9112
    assert (WIRE_FULL, WIRE_LAST, AGG1, AGG2) == (1500, 774, 14032, 9112)
    assert (OUTER + AGG1, OUTER + AGG2) == (14082, 9162)


def _first_ts_ns() -> int:
    with open_capture(FIX_SAMPLE) as cap:
        return next(iter(cap))[0]


class Recorder:
    """An ``on_deliver`` observer keeping what each ``netif_receive_skb`` saw; times relative to frame 1."""

    def __init__(self) -> None:
        self.events: dict[str, list[tuple]] = {}
        self.t0 = _first_ts_ns()

    def __call__(self, kernel, stage, dev, skb, now_ns):
        self.events.setdefault(kernel, []).append(
            (stage, dev, skb.len, f"{(now_ns - self.t0) / 1e9:.6f}", tuple(skb.frames), skb.addr)
        )


def _replay(kernels, **kw):
    rec = Recorder()
    cfg = ReplayConfig(kernels=kernels, rx_csum="unnecessary", poll=PollModel("gap", 5), **kw)
    res = replay_capture(str(FIX_SAMPLE), cfg, rec)
    return res, rec


def test_replay_capture_pre_fix_trace():
    res, rec = _replay((K_5_11,))
    ev = rec.events["pre-fix"]
    assert [e[:4] for e in ev] == PRE
    # each phys skb is one wire frame, in capture order; the cell aggregates carry frames 0–9 and 10–16
    assert [e[4] for e in ev if e[0] == "phys"] == [(i,) for i in range(17)]
    assert [e[4] for e in ev if e[0] == "tunnel"] == [tuple(range(10)), tuple(range(10, 17))]
    # skb_gro_receive appends to the held head p (gro-spec §5.6): the cell aggregate is the first frame's skb
    phys_addr = {e[4][0]: e[5] for e in ev if e[0] == "phys"}
    assert [e[5] for e in ev if e[0] == "tunnel"] == [phys_addr[0], phys_addr[10]]
    ks = res.kernels[0]
    assert ks.stages["phys"].reasons == {R.UDP_GATE_ZERO_CSUM: 17}
    assert (ks.stages["phys"].skbs, ks.stages["phys"].aggregates) == (17, 0)
    assert (ks.stages["tunnel"].skbs, ks.stages["tunnel"].aggregates) == (2, 2)


def test_replay_capture_post_fix_trace():
    res, rec = _replay((K_5_12,))
    ev = rec.events["post-fix"]
    assert [e[:4] for e in ev] == POST
    assert [e[4] for e in ev] == [tuple(range(10))] * 2 + [tuple(range(10, 17))] * 2
    ks = res.kernels[0]
    # first aggregate: end-of-poll flush (§1.3); second: the 672-byte segment is shorter than mss (§5.5)
    assert ks.stages["phys"].reasons == {R.POLL_END: 1, R.TCP_SHORT: 1}
    # a phys aggregate is a GSO skb: dev_gro_receive flushes it on the tunnel device (§6.6, ≤ v6.0)
    assert ks.stages["tunnel"].reasons == {R.GSO_SKB: 2}


def test_replay_capture_both_kernels_in_one_pass_match_single_runs():
    res, rec = _replay((K_5_11, K_5_12))
    assert [e[:4] for e in rec.events["pre-fix"]] == PRE
    assert [e[:4] for e in rec.events["post-fix"]] == POST
    assert res.input.frames_read == 17  # one read of the capture feeds both kernels


def _trace_lines(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if "net:netif_receive_skb:" in line]


def _parse(line: str) -> tuple:
    m = LINE.match(line)
    assert m, repr(line)
    return m["dev"], int(m["len"]), m["time"], m["addr"]


def _expected_lines(rows, phys="eth0", tunnel="vxlan0"):
    names = {"eth0": phys, "vxlan0": tunnel}
    return [(names[dev], length, f"{t:>12}") for _stage, dev, length, t in rows]


@pytest.mark.parametrize(("flag", "rows"), [("--no-fix", PRE), ("--fix", POST)])
def test_cli_trace_single_kernel(runner, flag, rows):
    args = [str(FIX_SAMPLE), flag, "--rx-csum", "unnecessary", "--poll", "gap:5", "--trace", "-", "-q"]
    r = runner.invoke(main, args)
    assert r.exit_code == 0, r.output
    assert r.stderr == ""
    lines = _trace_lines(r.stdout)
    parsed = [_parse(line) for line in lines]
    assert [p[:3] for p in parsed] == _expected_lines(rows)
    # perf's "%12s: " time column: "    0.000009: net:netif_receive_skb: dev=eth0 skbaddr=0x… len=1500"
    assert lines[0].startswith(f"    {T1}: net:netif_receive_skb: dev=eth0 skbaddr=0x")
    assert lines[0].endswith(f" len={rows[0][2]}")
    # the report follows the trace on stdout, with its SUMMARY line
    assert sum(1 for line in r.stdout.splitlines() if line.startswith("SUMMARY ")) == 1


def test_cli_trace_device_names(runner):
    args = [str(FIX_SAMPLE), "--no-fix", "--poll", "gap:5", "--trace", "-", "-q"]
    args += ["--phys-dev", "ens1f0np0", "--tunnel-dev", "vxlan.calico"]
    r = runner.invoke(main, args)
    assert r.exit_code == 0, r.output
    parsed = [_parse(line) for line in _trace_lines(r.stdout)]
    assert [p[:3] for p in parsed] == _expected_lines(PRE, "ens1f0np0", "vxlan.calico")


def test_cli_trace_to_file(runner, tmp_path):
    out = tmp_path / "trace.txt"
    r = runner.invoke(main, [str(FIX_SAMPLE), "--fix", "--poll", "gap:5", "--trace", str(out), "-q"])
    assert r.exit_code == 0, r.output
    assert _trace_lines(r.stdout) == []
    lines = out.read_text().splitlines()
    assert [_parse(line)[:3] for line in lines] == _expected_lines(POST)


def test_cli_trace_compare_mode_tags_each_line_with_its_kernel(runner):
    r = runner.invoke(
        main, [str(FIX_SAMPLE), "--rx-csum", "unnecessary", "--poll", "gap:5", "--trace", "-", "-q"]
    )
    assert r.exit_code == 0, r.output
    lines = _trace_lines(r.stdout)
    assert len(lines) == len(PRE) + len(POST)
    per_kernel: dict[str, list[tuple]] = {"pre-fix": [], "post-fix": []}
    order = []
    for line in lines:
        tag = line[:8].strip()
        assert tag in per_kernel, repr(line)
        per_kernel[tag].append(_parse(line[8:])[:3])
        order.append(tag)
    assert per_kernel["pre-fix"] == _expected_lines(PRE)
    assert per_kernel["post-fix"] == _expected_lines(POST)
    # each poll runs through both kernels in turn: the pre-fix lines of poll 1, the post-fix lines of poll 1, …
    assert order == ["pre-fix"] * 11 + ["post-fix"] * 2 + ["pre-fix"] * 8 + ["post-fix"] * 2
