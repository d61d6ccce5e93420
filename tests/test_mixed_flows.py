"""Frames of two flows in one skb: the same inner TCP flow under two outer UDP source ports, merged by the tunnel
device's gro_cells where no tunnel metadata tells them apart (a vxlan device without ``external``: no ``md_dst`` for
``gro_list_prepare`` to compare, gro-spec §6.6) and one RX queue puts both on one CPU (``--rss none``).

Eight contiguous 1400-byte segments alternate outer ports in pairs (frames 0-1 port 49152, 2-3 port 49153, …). The
phys device merges each pair (``udp_gro_receive`` compares the outer ports, so 4-5 does not continue 0-1: a sequence
gap for ``tcp_gro_receive``): 4 skbs of 2 segments. v6.18 with head_frag buffers (mlx5: no frag_list, so
``dev_gro_receive`` does not flush them) holds TCP GSO skbs (5eddb24901ee) and merges the four, in sequence, into
one skb of 8 segments. That skb counts for flow 0 (its first frame's); each flow counts its own 4 frames as
segments, flow 0 the 4 of flow 1 its skb carried, flow 1 the 4 that went up in flow 0's skb.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from gro_replay.capture.writer import PcapWriter
from gro_replay.kernel.model import K_6_18
from gro_replay.packet.build import FrameSpec, build_frame, flow_specs
from gro_replay.report.document import document
from gro_replay.report.explain import FlowDeliveries, explain, render_text
from gro_replay.sim import ReplayConfig, replay_capture

GROUPS = 5  #: the eight frames' pattern, again and again: one poll each (100 µs apart), the cache answers the later


@pytest.fixture(scope="module")
def capture(tmp_path_factory) -> str:
    """The frames as a pcap: a capture file takes the batch path (in-memory frames are replayed one by one)."""
    sp = flow_specs(FrameSpec(timestamps=False, payload=1400), [1400] * 8 * GROUPS)
    sp = [replace(s, udp_sport=49152 + (i // 2) % 2) for i, s in enumerate(sp)]
    path = tmp_path_factory.mktemp("mixed") / "mixed.pcap"
    with PcapWriter(path) as w:
        for i, s in enumerate(sp):
            w.write(100_000 * (i // 8) + 1_000 * (i % 8), build_frame(s))
    return str(path)


def _config(**kw) -> ReplayConfig:
    # rx_csum given: the checksum state is one for every frame, so the batch path runs (--nic alone decides it per
    # frame); mlx5's head_frag buffers stay
    return ReplayConfig(kernels=(K_6_18,), nic="mlx5", rx_csum="unnecessary", rss="none", **kw)


def _stages(doc: dict) -> list[tuple]:
    return [
        (
            f["id"],
            f["tunnel"]["skbs"],
            f["tunnel"]["segments"],
            f["tunnel"]["segments_carried_for_other_flows"],
            f["tunnel"]["segments_carried_by_other_flows"],
        )
        for f in sorted(doc["kernels"][0]["flows"], key=lambda f: f["id"])
    ]


@pytest.mark.parametrize("fast_path", [True, False])
def test_an_skb_of_two_flows_counts_each_flows_frames(capture, fast_path):
    doc = document(replay_capture(capture, _config(tunnel_metadata=False, fast_path=fast_path)))
    tunnel = doc["kernels"][0]["stages"]["tunnel"]
    g = GROUPS
    assert (tunnel["skbs_delivered"], tunnel["segments_delivered"]) == (g, 8 * g)
    assert _stages(doc) == [(0, g, 4 * g, 4 * g, 0), (1, 0, 4 * g, 0, 4 * g)]
    phys = [(f["phys"]["skbs"], f["phys"]["segments"]) for f in doc["kernels"][0]["flows"]]
    assert phys == [(2 * g, 4 * g)] * 2
    if fast_path:
        assert (doc["engine"]["path"], doc["engine"]["polls_cached"]) == ("batch", g - 1), doc["engine"]


def test_the_batch_path_gives_the_reference_document(capture):
    docs = [
        document(replay_capture(capture, _config(tunnel_metadata=False, fast_path=fast)))
        for fast in (True, False)
    ]
    for d in docs:
        d.pop("engine", None)
    assert docs[0] == docs[1]


def test_with_tunnel_metadata_no_skb_mixes_flows(capture):
    # md_dst differs (the outer source ports are part of the tunnel key): each flow's two aggregates meet at the
    # tunnel device without continuing each other (the other flow's segments lie between): 2 skbs each
    doc = document(replay_capture(capture, _config()))
    g = GROUPS
    assert _stages(doc) == [(0, 2 * g, 4 * g, 0, 0), (1, 2 * g, 4 * g, 0, 0)]


def test_explain_says_where_each_flows_frames_went_up(capture):
    obs = FlowDeliveries()
    result = replay_capture(capture, _config(tunnel_metadata=False), obs)
    text = "\n".join(render_text(explain(result, obs, [k.name for k in result.kernels], [0, 1])))
    why = (
        "(GRO compares headers, not flows: the same inner flow under another outer key where no tunnel metadata "
        "tells them apart, or a key that came back as a new flow while GRO held its frames)"
    )
    assert (
        "tunnel gro_cells (vxlan0): 10 skbs in (20 frames) → 5 skbs out (5 with ≥2 segs); 5 merged here; they also "
        f"carry 20 frames of other flows {why}"
    ) in text, text
    assert (
        "tunnel gro_cells: 10 skbs in (20 frames) → 0 skbs out (0 with ≥2 segs); 10 merged here; its 20 frames "
        f"went up in other flows' skbs {why}"
    ) in text, text
    # each kernel's heading says where the merges crossed flows (breaker49: flow 1's "(10 skbs → 0)" alone read as
    # merged into nothing): the phys device merged each flow's pairs (20 frames → 10 skbs), gro_cells merged
    # flow 1's 10 skbs into flow 0's 5
    assert (
        "  6.18 (v6.18): aggregated at phys NAPI (20 skbs → 10) and tunnel gro_cells (10 skbs → 5: they carry 20 "
        "frames of other flows)\n"
    ) in text, text
    assert (
        "  6.18 (v6.18): aggregated at phys NAPI (20 skbs → 10) and tunnel gro_cells (10 skbs → 0: its 20 frames "
        "went up in other flows' skbs)\n"
    ) in text, text


@pytest.mark.parametrize(
    "polls, heads",
    [
        (
            5,
            (
                "aggregated at tunnel gro_cells (5 skbs → 5: they carry 5 frames of other flows)",
                "aggregated at tunnel gro_cells (5 skbs → 0: its 5 frames went up in other flows' skbs)",
            ),
        ),
        (
            1,
            (
                "aggregated at tunnel gro_cells (1 skb → 1: it carries 1 frame of another flow)",
                "aggregated at tunnel gro_cells (1 skb → 0: its frame went up in another flow's skb)",
            ),
        ),
    ],
    ids=["five-polls", "one-poll"],
)
def test_a_flow_whose_skbs_only_carry_other_flows_frames_is_aggregated_there(tmp_path, polls, heads):
    # breaker49's shape: contiguous segments whose outer source port alternates every frame, two frames a poll
    # (100 µs apart, more than gap:3's pause). The phys device merges neither pair (udp_gro_receive compares the
    # ports); gro_cells without tunnel metadata merges each poll's flow-1 frame into the flow-0 skb before it
    # (gro-spec §6.6) and flushes it at the poll's end: flow 0 delivers one skb of 2 segments a poll, each merged
    # at the tunnel device although no flow-0 frame merged with another (it read "not aggregated"), flow 1 none;
    # one poll says it in the singular (breaker50)
    sp = flow_specs(FrameSpec(timestamps=False, payload=1400), [1400] * 2 * polls)
    sp = [replace(s, udp_sport=49152 + i % 2) for i, s in enumerate(sp)]
    path = tmp_path / "alt.pcap"
    with PcapWriter(path) as w:
        for i, s in enumerate(sp):
            w.write(100_000 * (i // 2) + 1_000 * (i % 2), build_frame(s))
    obs = FlowDeliveries()
    result = replay_capture(str(path), _config(tunnel_metadata=False), obs)
    doc = explain(result, obs, [k.name for k in result.kernels], [0, 1])
    k0, k1 = (f["kernels"]["6.18"] for f in doc["flows"])
    assert (k0["aggregated_at"], k1["aggregated_at"]) == (["tunnel"], ["tunnel"])
    text = "\n".join(render_text(doc))
    for head in heads:
        assert f"  6.18 (v6.18): {head}\n" in text, text


MIXED = [
    "--kernel",
    "6.18",
    "--nic",
    "mlx5",
    "--rx-csum",
    "unnecessary",
    "--rss",
    "none",
    "-q",
    "--format",
    "json",
]


def _cli(*args) -> dict:
    import json

    from click.testing import CliRunner

    from gro_replay.cli import main

    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


@pytest.mark.parametrize("selected", [0, 1])
def test_flow_selection_keeps_a_selected_flows_frames_in_another_flows_skb(capture, selected):
    """--flow 1 selects the flow whose frames all went up in flow 0's skbs (breaker's finding: its tunnel frames
    were lost, the skb being flow 0's): it keeps them, carried by the other flow. Either selection counts at the
    stage the skbs its frames went up in with the selected flow's segments (4 of each skb's 8), so that segments in
    and delivered stay its frames."""
    doc = _cli(capture, *MIXED, "--no-tunnel-metadata", "--flow", selected)
    g = GROUPS
    tunnel = doc["kernels"][0]["stages"]["tunnel"]
    assert (tunnel["frames_in"], tunnel["skbs_delivered"], tunnel["segments_delivered"]) == (4 * g, g, 4 * g)
    want = {0: (0, g, 4 * g, 4 * g, 0), 1: (1, 0, 4 * g, 0, 4 * g)}[selected]
    assert _stages(doc) == [want]


def test_diff_measures_a_flows_own_skbs_and_not_a_flow_without_any(capture, tmp_path):
    """diff of the capture with and without tunnel metadata (breaker's finding: flow 1 read 2.00 → 0.00 segments per
    skb, a regression, while the stage went from 2 to 8): flow 0's skbs carried 2 then 8 segments (4 of its own and
    4 of flow 1's); flow 1 has no skb of its own without metadata: n/a, not checked."""
    from gro_replay.report.diff.comparison import compare

    base = _cli(capture, *MIXED)
    cur = _cli(capture, *MIXED, "--no-tunnel-metadata")
    cmp = compare(base, cur)
    rows = {
        r["key"]["outer"]["sport"]: r["stages"]["tunnel"]["flow_segs_per_skb"]
        for r in cmp["kernels"][0]["flows"]
    }
    assert (rows[49152]["baseline"], rows[49152]["current"]) == (2.0, 8.0)
    assert (rows[49153]["baseline"], rows[49153]["current"], rows[49153]["checked"]) == (2.0, None, False)
    assert cmp["regressions"] == []


@pytest.mark.parametrize("selected", ["0", "1", None])
def test_the_flow_line_says_when_counted_skbs_carried_frames_not_selected(capture, selected):
    """Under --flow the table counts each skb of both flows' frames with the selected flow's 4 segments of its 8
    (the test above): the --flow line says so, per stage, with the count (GROUPS skbs at the tunnel device, each
    with 4 frames of the flow not selected), so that 4.00 segments per skb and the whole skbs' bytes are not read
    as the flow's own aggregates. Without --flow there is no such line."""
    from click.testing import CliRunner

    from gro_replay.cli import main

    args = [
        capture,
        *MIXED[:8],
        "--no-tunnel-metadata",
        "--no-hist",
        *(("--flow", selected) if selected else ()),
    ]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    assert "not selected too" not in r.stdout if selected is None else r.stdout.count("not selected too") == 1
    if selected is None:
        return
    (line,) = [ln for ln in r.stdout.splitlines() if ln.startswith("--flow ")]
    said = (
        f"; at tunnel gro_cells {GROUPS} skbs carried {4 * GROUPS} frames of flows not selected too (GRO compares "
        "headers, not flows: the same inner flow under another outer key where no tunnel metadata tells them apart, "
        "or a key that came back as a new flow while GRO held its frames): counted with the selected flows' frames "
        "as segments, their bytes whole (explain --flow says where each flow's frames went)"
    )
    assert line.endswith(said), line  # the phys device merges no two flows: the tunnel device only
