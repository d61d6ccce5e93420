"""``gro-replay explain --skbs``: each skb delivered, in order, with its frames, why it ended and what ended it.

Expected values come from how the captures are built, read back with dpkt (frame numbers, TCP sequence numbers,
the inner TCP checksum, frame lengths), and from the kernel's rules: ``skb_gro_receive`` refuses a merge that
brings ``p->len`` (from the outer IP header at the phys device) to 65536 (GRO_LEGACY_MAX_SIZE, ``gro_max_size``
of a default device), ``napi_poll`` flushes every held packet when a poll used its whole budget of 64 (HZ < 1000)
and ``napi_complete_done`` when it did not; ``tcp4_gro_receive`` sends a segment with a bad checksum up alone and
``tcp_gro_receive`` completes the held packet when the next segment's sequence number does not continue it.
"""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import dpkt
import pytest
from click.testing import CliRunner

from gro_replay.cli import main
from gro_replay.kernel import reasons as R
from gro_replay.report.explain_skbs import SKBS_REASON, frames_text
from gro_replay.report.schema import SchemaViolation, check

ROOT = Path(__file__).resolve().parents[1]
#: the triage captures beside the checkout (``<repo>/../shared/triage``), as every test reading ../shared finds them
TRIAGE = ROOT.parent / "shared" / "triage"
BAD_CSUM = TRIAGE / "bad-inner-csum-3frames.pcap"
TRIAGE_ARGS = ("--rx-csum", "none", "--kernel", "6.18")
GRO_LEGACY_MAX_SIZE = 65536
NAPI_WEIGHT = 64


def run(*args) -> str:
    r = CliRunner().invoke(main, ["explain", *map(str, args), "-q"])
    assert r.exit_code == 0, r.output
    return r.stdout


def run_json(*args) -> dict:
    doc = json.loads(run(*args, "--format", "json"))
    check(doc, "explain")
    return doc


# -- reading the captures back -------------------------------------------------------------------------------------
def inner_segments(path: Path) -> list[dict]:
    """Per capture frame (frame number = position + 1): outer IP length, the inner TCP sequence number, payload
    length and whether the inner TCP checksum is right (VXLAN over IPv4, inner IPv4)."""
    out = []
    with open(path, "rb") as f:
        for _ts, buf in dpkt.pcap.UniversalReader(f):
            outer = dpkt.ethernet.Ethernet(buf).data
            inner_eth = dpkt.ethernet.Ethernet(bytes(outer.data.data)[8:])  # the 8-byte VXLAN header
            ip = inner_eth.data
            tcp = ip.data
            raw = bytes(tcp)
            pseudo = struct.pack("!4s4sBBH", ip.src, ip.dst, 0, 6, len(raw))
            out.append(
                {
                    "outer_len": outer.len,
                    "seq": tcp.seq,
                    "payload": len(tcp.data),
                    "csum_ok": dpkt.in_cksum(pseudo + raw) == 0,
                }
            )
    return out


# -- the triage capture ----------------------------------------------------------------------------------------------
@pytest.fixture
def bad_csum() -> Path:
    if not BAD_CSUM.is_file():
        pytest.skip(f"triage capture not present ({BAD_CSUM})")
    return BAD_CSUM


def test_triage_bad_checksum_and_sequence_gap_are_named_per_frame(bad_csum):
    segs = inner_segments(bad_csum)
    assert len(segs) == 3
    bad = [n for n, s in enumerate(segs, 1) if not s["csum_ok"]]
    assert bad == [2]
    held_next = segs[0]["seq"] + segs[0]["payload"]  # frame 1's next sequence number
    seq3 = segs[2]["seq"]
    assert seq3 - held_next == segs[1]["payload"]  # frame 2's bytes lie between them
    doc = run_json(bad_csum, *TRIAGE_ARGS, "--skbs")
    (flow,) = doc["flows"]
    for stage in ("phys", "tunnel"):
        sl = flow["kernels"]["6.18"][stage]["skb_list"]
        assert sl["omitted"] == 0
        rows = [(r["frames"], r["reason"], r["held"], r["ended_by"]) for r in sl["skbs"]]
        # frame 2 goes up alone as it is received; frame 3's arrival completes frame 1; frame 3 waits for the flush
        assert rows == [
            ([2], R.TCP_CSUM, False, None),
            (
                [1],
                R.TCP_SEQ,
                True,
                {"frame": 3, "seq_gap": {"held_next_seq": held_next, "seq": seq3, "bytes": seq3 - held_next}},
            ),
            ([3], R.POLL_END, True, None),
        ], stage
    assert doc["skbs_max"] == 50
    assert doc["engine"]["path"] == "frame-by-frame" and doc["engine"]["reasons"] == [SKBS_REASON]


def test_triage_text_says_which_frame_and_the_sequence_numbers(bad_csum):
    segs = inner_segments(bad_csum)
    held_next, seq3 = segs[0]["seq"] + segs[0]["payload"], segs[2]["seq"]
    text = run(bad_csum, *TRIAGE_ARGS, "--skbs")
    lines = text.splitlines()
    start = lines.index("      skbs delivered, in order (frame numbers as Wireshark's):")
    assert lines[start + 1] == (
        f"           1. frame 2: went up alone: tcp4_gro_receive: checksum_bad  ({R.DESCRIPTIONS[R.TCP_CSUM]})"
    )
    assert lines[start + 2] == (
        "           2. frame 1: ended when frame 3 arrived and did not continue it (TCP sequence gap: frame 3 "
        f"starts at seq {seq3}, frame 1 ends before seq {held_next}; absolute sequence numbers, a gap of "
        f"{seq3 - held_next:,} bytes): tcp_gro_receive: seq_gap  ({R.DESCRIPTIONS[R.TCP_SEQ]})"
    )
    assert lines[start + 3] == (
        f"           3. frame 3: held until the poll's flush: napi_complete_done: flush  "
        f"({R.DESCRIPTIONS[R.POLL_END]})"
    )
    assert f"engine: frame-by-frame (1 poll run through the kernels): {SKBS_REASON}" in lines


# -- a synthetic bulk flow ------------------------------------------------------------------------------------------
BULK_FRAMES = 100


@pytest.fixture(scope="module")
def bulk(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("skbs") / "bulk.pcap"
    r = CliRunner().invoke(main, ["synth", str(path), "--frames", str(BULK_FRAMES)])
    assert r.exit_code == 0, r.output
    return path


def _merge_limit_segments(segs: list[dict]) -> int:
    """Frames the phys device merges before ``skb_gro_receive`` refuses the next: the held packet's length
    starts at the first frame's outer IP length and grows by each payload; a merge reaching 65536 is refused."""
    length, n = segs[0]["outer_len"], 1
    while n < len(segs) and length + segs[n]["payload"] < GRO_LEGACY_MAX_SIZE:
        length += segs[n]["payload"]
        n += 1
    return n


def test_bulk_flow_skbs_carry_consecutive_frames_and_name_the_limit_and_the_flushes(bulk):
    segs = inner_segments(bulk)
    assert len(segs) == BULK_FRAMES
    first = _merge_limit_segments(segs)
    assert 1 < first < NAPI_WEIGHT
    doc = run_json(bulk, "--fix", "--poll", "budget", "--skbs")
    (flow,) = doc["flows"]
    phys = flow["kernels"]["post-fix"]["phys"]["skb_list"]
    rows = [(r["frames"], r["reason"], r["ended_by"]) for r in phys["skbs"]]
    # poll 1 (frames 1-64, the whole budget): frame first+1 does not fit; the rest flushed as the budget ran out;
    # poll 2 (frames 65-100, below budget): one aggregate flushed by napi_complete_done
    assert rows == [
        (list(range(1, first + 1)), R.SKB_GRO_RECEIVE_E2BIG, {"frame": first + 1}),
        (list(range(first + 1, NAPI_WEIGHT + 1)), R.BUDGET_EXHAUSTED, None),
        (list(range(NAPI_WEIGHT + 1, BULK_FRAMES + 1)), R.POLL_END, None),
    ]
    assert all(r["held"] for r in phys["skbs"]) and phys["omitted"] == 0
    # the tunnel device gets those skbs in order: every frame once, each skb's frames consecutive
    tunnel = flow["kernels"]["post-fix"]["tunnel"]["skb_list"]["skbs"]
    frames = [n for r in tunnel for n in r["frames"]]
    assert frames == list(range(1, BULK_FRAMES + 1))
    for r in tunnel:
        assert r["frames"] == list(range(r["frames"][0], r["frames"][-1] + 1))


@pytest.mark.parametrize(
    ("kernel", "reason"), [("5.12", R.GSO_SKB), ("6.1", R.FRAG_LIST)], ids=["skb_is_gso", "skb_has_frag_list"]
)
def test_an_skb_merged_at_the_phys_device_goes_up_the_tunnel_device_as_it_arrived(bulk, kernel, reason):
    """At gro_cells the phys device's aggregates are not "alone": dev_gro_receive flushes one it cannot take further
    (net/core/gro.c: before 5eddb24901ee, v6.1, ``flush = skb_is_gso(skb) || skb_has_frag_list(skb)``; from it a GSO
    TCP skb enters with count = gso_segs, but one chained on a frag_list, as skb_gro_receive chains a merge whose
    head is a kmalloc'd linear one (no --nic: veth's skbs from AF_PACKET, linear below 4080 bytes:
    kernel/nic_skb.py), still flushes), and it goes up whole: the three skbs of the budget polls (64 + 36 frames), 46 + 18 + 36 segments, each one skb."""
    segs = inner_segments(bulk)
    first = _merge_limit_segments(segs)
    text = run(bulk, "--kernel", kernel, "--poll", "budget", "--skbs")
    tunnel = text[text.index("tunnel gro_cells") :]
    rows = [(frames, how, f"{fn}:{cond}") for _n, frames, how, fn, cond, _d in _text_rows(tunnel)]
    assert rows == [
        (f"frames 1–{first}", "went up as it arrived", reason),
        (f"frames {first + 1}–{NAPI_WEIGHT}", "went up as it arrived", reason),
        (f"frames {NAPI_WEIGHT + 1}–{BULK_FRAMES}", "went up as it arrived", reason),
    ]
    assert "went up alone" not in tunnel


def test_skbs_max_bounds_the_list_and_counts_the_rest(bulk):
    doc = run_json(bulk, "--fix", "--poll", "budget", "--skbs", "--skbs-max", "1")
    phys = doc["flows"][0]["kernels"]["post-fix"]["phys"]
    sl = phys["skb_list"]
    assert len(sl["skbs"]) == 1 and sl["omitted"] == phys["skbs"] - 1 == 2
    assert doc["skbs_max"] == 1
    text = run(bulk, "--fix", "--poll", "budget", "--skbs", "--skbs-max", "1")
    assert "      … 2 more skbs not listed (--skbs-max 1; 0 lists all)" in text.splitlines()
    every = run_json(bulk, "--fix", "--poll", "budget", "--skbs", "--skbs-max", "0")
    assert every["flows"][0]["kernels"]["post-fix"]["phys"]["skb_list"]["omitted"] == 0


def test_skbs_max_without_skbs_is_refused(bulk):
    r = CliRunner().invoke(main, ["explain", str(bulk), "--skbs-max", "3", "-q"])
    assert r.exit_code == 2 and "--skbs-max needs --skbs" in r.stderr


def test_without_skbs_no_listing_and_the_batch_path(bulk):
    """Without --skbs no skb is listed and the replay keeps the batch path, which the document says as the replay's
    does (``engine``: every poll of the budget model's 100 frames, 64 + 36, run once: nothing to answer twice)."""
    doc = run_json(bulk, "--fix", "--poll", "budget")
    assert "skbs_max" not in doc
    assert "skb_list" not in doc["flows"][0]["kernels"]["post-fix"]["phys"]
    assert (doc["engine"]["path"], doc["engine"]["reasons"], doc["engine"]["polls"]) == ("batch", [], 2)
    text = CliRunner().invoke(main, ["explain", str(bulk), "--fix", "--poll", "budget", "-q"]).stdout
    assert "engine: batch (0 of 2 polls answered from the cache)" in text.splitlines()


# -- text and JSON agree; the schema --------------------------------------------------------------------------------
_ROW = re.compile(r" +(\d[\d,]*)\. (frames? [\d–, ]+): (.+): (\S+): (\S+)  \((.*)\)")


def _text_rows(text: str) -> list[tuple]:
    return [m.groups() for m in map(_ROW.fullmatch, text.splitlines()) if m]


@pytest.mark.parametrize("which", ["bulk", "triage"])
def test_text_and_json_agree(which, bulk):
    if which == "triage":
        if not BAD_CSUM.is_file():
            pytest.skip(f"triage capture not present ({BAD_CSUM})")
        args: tuple = (BAD_CSUM, *TRIAGE_ARGS, "--skbs")
    else:
        args = (bulk, "--fix", "--poll", "budget", "--skbs")
    doc = run_json(*args)
    want = []
    for f in doc["flows"]:
        for k in f["kernels"].values():
            for stage in ("phys", "tunnel"):
                for i, r in enumerate(k[stage]["skb_list"]["skbs"], 1):
                    want.append(
                        (f"{i}", frames_text(r["frames"]), r, r["function"], r["condition"], r["description"])
                    )
    got = _text_rows(run(*args))
    assert len(got) == len(want) > 0
    for (n, frames, how, fn, cond, desc), (wn, wframes, row, wfn, wcond, wdesc) in zip(
        got, want, strict=True
    ):
        assert (n, frames, fn, cond, desc) == (wn, wframes, wfn, wcond, wdesc)
        by = row["ended_by"]
        unheld = "went up alone" if row["segments"] == 1 else "went up as it arrived"
        assert (how == unheld) == (not row["held"])
        if by is not None:
            assert f"frame {by['frame']}" in how
            if "seq_gap" in by:
                assert f"seq {by['seq_gap']['seq']}" in how and f"seq {by['seq_gap']['held_next_seq']}" in how


def test_the_schema_refuses_a_malformed_skb_row(bulk):
    doc = run_json(bulk, "--fix", "--poll", "budget", "--skbs")
    row = doc["flows"][0]["kernels"]["post-fix"]["phys"]["skb_list"]["skbs"][0]
    for bad in (
        {**row, "frames": [0]},
        {**row, "frames": []},
        {**row, "ended_by": {"frame": 0}},
        {**row, "why": 1},
    ):
        doc["flows"][0]["kernels"]["post-fix"]["phys"]["skb_list"]["skbs"][0] = bad
        with pytest.raises(SchemaViolation):
            check(doc, "explain")


# -- the other ways a held skb ends ---------------------------------------------------------------------------------
def _synth(path: Path, *args: str) -> Path:
    r = CliRunner().invoke(main, ["synth", str(path), *args])
    assert r.exit_code == 0, r.output
    return path


def test_a_short_last_segment_ends_the_skb_it_merged_into(tmp_path):
    # tcp_gro_receive merges the short segment, then completes p (out_check_final: len < mss)
    path = _synth(tmp_path / "short.pcap", "--frames", "10", "--last-payload", "100")
    segs = inner_segments(path)
    assert [s["payload"] for s in segs][-2:] == [segs[0]["payload"], 100]
    doc = run_json(path, "--fix", "--skbs")
    (row,) = doc["flows"][0]["kernels"]["post-fix"]["phys"]["skb_list"]["skbs"]
    assert (row["frames"], row["reason"], row["ended_by"]) == (list(range(1, 11)), R.TCP_SHORT, {"frame": 10})
    assert "1. frames 1–10: ended with its last frame 10: tcp_gro_receive: len_lt_mss" in run(
        path, "--fix", "--skbs"
    )


def test_a_full_bucket_names_the_frame_whose_flow_evicted_the_oldest(tmp_path):
    # 9 flows, one frame each in turn, all in GRO bucket 0 (--rss none: hash 0): the 9th flow's frame finds
    # MAX_GRO_SKBS (8) held and dev_gro_receive evicts the oldest, flow 0's frame 1 (gro_flush_oldest)
    path = _synth(tmp_path / "nine.pcap", "--frames", "2", "--flows", "9")
    doc = run_json(path, "--fix", "--rss", "none", "--skbs", "--flow", "0")
    rows = doc["flows"][0]["kernels"]["post-fix"]["phys"]["skb_list"]["skbs"]
    assert [(r["frames"], r["reason"], r["ended_by"]) for r in rows] == [
        ([1], R.MAX_GRO_SKBS, {"frame": 9}),
        ([10], R.MAX_GRO_SKBS, {"frame": 18}),
    ]


# -- --flow: only the selected flows' skbs are kept ----------------------------------------------------------------
def _kept_by_cli(monkeypatch, *args: str):
    """Run explain --skbs through the CLI and return its ``SkbEnds`` (its kept ``listed`` and ``delivered``)."""
    from gro_replay.report import explain_skbs

    made = []

    class Kept(explain_skbs.SkbEnds):
        def __init__(self, *a, **kw) -> None:
            super().__init__(*a, **kw)
            made.append(self)

    monkeypatch.setattr(explain_skbs, "SkbEnds", Kept)
    run(*args)
    (obs,) = made
    return obs


def fids(obs) -> set[int]:
    """The flow ids of which ``SkbEnds`` ``obs`` kept anything."""
    return {k[2] for k in (*obs.listed, *obs.delivered)}


def test_flow_keeps_only_the_selected_flows_skbs(tmp_path, monkeypatch):
    """``--skbs --flow SEL`` keeps nothing of an unselected flow (its memory was every flow's skb list): no key of
    ``listed`` nor ``delivered`` for it, whether selected by id or by key; with ``--limit 1`` every selected flow is
    still kept (the JSON lists them all)."""
    path = _synth(tmp_path / "three.pcap", "--frames", "20", "--flows", "3")
    every = _kept_by_cli(monkeypatch, path, "--no-fix", "--skbs", "--skbs-max", "0")
    assert fids(every) == {0, 1, 2}
    assert fids(_kept_by_cli(monkeypatch, path, "--no-fix", "--skbs", "--flow", "1")) == {1}
    doc = run_json(path, "--no-fix", "--skbs", "--flow", "1")
    sport = doc["flows"][0]["key"]["inner"]["sport"]
    by_key = _kept_by_cli(monkeypatch, path, "--no-fix", "--skbs", "--flow", f"sport={sport}", "--limit", "1")
    assert fids(by_key) == {1}
    assert by_key.listed == {k: v for k, v in every.listed.items() if k[2] == 1}
    # a selector of several flows, the text limited to one: both kept
    two = _kept_by_cli(monkeypatch, path, "--no-fix", "--skbs", "--flow", "proto=tcp", "--limit", "1")
    assert fids(two) == {0, 1, 2}


def test_skb_ends_unbound_keeps_every_flow():
    """Without the flow keys (a caller whose replayer binds none), nothing is left out."""
    from gro_replay.report.explain_skbs import SkbEnds

    obs = SkbEnds(lambda *a: None, 0, "1")
    assert obs.wanted(0) and obs.wanted(5)


# -- --resegment: a super-frame's segments share its frame number ------------------------------------------------
ROBUSTNESS_RESEG = ROOT.parent / "shared" / "robustness" / "reseg-mss1-one-tso64k.pcap"


def test_frames_text_says_segments_once_per_frame():
    assert frames_text([1, 2, 3, 5]) == "frames 1–3, 5"
    assert frames_text([2] * 47) == "frame 2 (47 segments of it)"
    assert frames_text([1, 2, 2, 3]) == "frames 1, 2 (2 segments of it), 3"
    assert frames_text([2], frozenset({2})) == "frame 2 (a segment of it)"
    assert frames_text([1, 2, 3], frozenset({3})) == "frames 1–2, 3 (a segment of it)"


def _assert_no_repeated_numbers(text: str) -> None:
    assert not re.search(r"frames? (\d+), \1\b", text), text
    assert not re.search(r"ended with its last frame", text), text


def test_resegmented_super_frames_in_text_and_json(tmp_path):
    """3 super-frames of 4 segments each (--mss 4000, --resegment 1000): the JSON repeats each frame number per
    segment and counts them (``segments``, ``capture_frames``); the text names each capture frame once."""
    path = _synth(tmp_path / "super.pcap", "--frames", "3", "--mss", "4000", "--mtu", "9000")
    args = (path, "--resegment", "1000", "--skbs")
    doc = run_json(*args)
    post = doc["flows"][0]["kernels"]["post-fix"]
    rows = post["phys"]["skb_list"]["skbs"]
    assert [(r["frames"], r["segments"], r["capture_frames"]) for r in rows] == [
        ([n] * 4, 4, 1) for n in (1, 2, 3)
    ]
    pre_rows = doc["flows"][0]["kernels"]["pre-fix"]["phys"]["skb_list"]["skbs"]
    assert [(r["frames"], r["segments"], r["capture_frames"]) for r in pre_rows] == [
        ([n], 1, 1) for n in (1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3)
    ]
    text = run(*args)
    _assert_no_repeated_numbers(text)
    assert "1. frame 1 (4 segments of it): ended when a segment of frame 2 arrived: " in text
    assert "5. frame 2 (a segment of it): went up alone: " in text


def test_resegmented_64k_super_frame_robustness_capture():
    """The robustness capture whose 64 KB super-frame --resegment auto cuts into 47 segments: "frames 2, 2, …"
    (47 times) and "ended with its last frame 2" were said of one capture frame."""
    if not ROBUSTNESS_RESEG.is_file():
        pytest.skip(f"robustness capture not present ({ROBUSTNESS_RESEG})")
    text = run(ROBUSTNESS_RESEG, "--skbs")
    _assert_no_repeated_numbers(text)
    assert text.count("frame 2 (47 segments of it)") == 3  # post-fix phys, both tunnel stages
    assert text.count("frame 2 (a segment of it): went up alone") == 47  # pre-fix phys, one skb per segment
    doc = run_json(ROBUSTNESS_RESEG, "--skbs")
    rows = [
        r
        for k in doc["flows"][0]["kernels"].values()
        for s in ("phys", "tunnel")
        for r in k[s]["skb_list"]["skbs"]
        if 2 in r["frames"]
    ]
    assert sorted({(r["segments"], r["capture_frames"]) for r in rows}) == [(1, 1), (47, 1)]
    assert all(r["frames"] == [2] * r["segments"] for r in rows)


def test_a_split_super_frame_s_psh_segment_ends_its_own_skb(runner, shared_captures):
    """tcpdump's bigtcp-ipv4-vxlan-ipv4.pcap: one BIG TCP super-frame split by --resegment auto into 58 segments;
    at the phys device of 5.12 the first 46 reach 64 KiB (gro_max_size) and the last 12 end with the PSH of the
    last segment, which tcp_gro_receive merges before out_check_final flushes (net/ipv4/tcp_offload.c): the skb
    ended with its own last segment, not when another one arrived (newcomer's finding)."""
    cap = shared_captures / "tcpdump" / "bigtcp-ipv4-vxlan-ipv4.pcap"
    r = runner.invoke(main, ["explain", str(cap), "--skbs", "--fix"])
    assert r.exit_code == 0, r.output
    lines = [ln.strip() for ln in r.stdout.splitlines()]
    assert (
        "2. frame 1 (12 segments of it): ended with its last segment, of frame 1: tcp_gro_receive: psh_or_fin  "
        "(PSH or FIN ends the aggregate)"
    ) in lines
    assert any(
        ln.startswith("1. frame 1 (46 segments of it): ended when a segment of frame 1 arrived")
        for ln in lines
    )
