"""The skb layout a ``--nic`` preset's driver builds (kernel/nic_skb.py) and what it changes (a reviewer's finding:
every preset used to build veth's linear heads, so every multi-segment phys aggregate carried a frag_list).

Rules the expected values come from:

* ``build_skb``/``napi_build_skb`` with a fragment size set ``skb->head_frag`` (net/core/skbuff.c); ice
  (``ice_build_skb``), i40e, ixgbe, mlx5 (``mlx5e_build_linear_skb``) and bnxt from 720908e5f816 (v5.17) build a
  full-sized frame's skb so by default: the whole frame in the head, no page frags. veth carrying AF_PACKET's frames
  (the kernel backend) and bnxt before 720908e5f816 have a kmalloc'd linear head (the commit's message: "the GRO data
  is merged using the less efficient frag_list").
* ``skb_gro_receive`` (net/core/gro.c): a ``head_frag`` segment's head is stolen into the last skb's frags while
  ``nr_frags + 1 + skb's nr_frags <= MAX_SKB_FRAGS``, else (and always for a linear head) it is chained on the
  frag_list. ``MAX_SKB_FRAGS`` is 17: ``65536/PAGE_SIZE + 1`` with 4 KiB pages before 3948b05950fd (v6.4 [D]),
  ``CONFIG_MAX_SKB_FRAGS`` (default 17) after. So a phys aggregate is frags-only up to 1 + 17 = 18 segments; the
  19th goes on the frag_list.
* ``dev_gro_receive`` flushes an skb with a frag_list (``skb_has_frag_list``); from 5eddb24901ee (v6.1) a GSO skb
  is otherwise aggregatable on the tunnel device's gro_cells (``tcp_gro_receive``: same gso_size, contiguous). Two
  frags-only aggregates A and B of ``a`` and ``b`` segments merge into A's frags when ``(a - 1) + 1 + (b - 1) <=
  17``, else B goes on the frag_list; both are merges. The tunnel stage completes what it holds at the poll end
  (``napi_complete_done``). Before v6.1 a GSO skb is flushed (``skb_is_gso``) whatever its layout.
* The two aggregates share the inner flow and the RX hash only when the hash leaves out the outer UDP ports
  (ixgbe's UDP default, ``toeplitz-l3``) and the vxlan device is not in collect-metadata mode (the metadata dst
  holds the outer ports): ``gro_list_prepare``.
* On 6.1–6.9 the atomic IP ID test (``inet_gro_receive``'s ``flush_id``, DF set) refuses a GSO skb whose inner IDs
  increment after a held packet of more than one segment, so the merges are shown on 6.12 and 6.18
  (4b0ebbca3e16 moved the ID test into ``tcp_gro_receive``).
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import without_engine

sys.path.insert(0, str(Path(__file__).resolve().parent / "kernel"))
from rule_frames import frames, specs  # noqa: E402

from gro_replay.capture.writer import PcapWriter  # noqa: E402
from gro_replay.kernel.model import K_5_4, K_5_10, K_5_15, K_6_1, K_6_12, K_6_18  # noqa: E402
from gro_replay.kernel.nic import NIC_PRESETS  # noqa: E402
from gro_replay.packet.decode import Decoder  # noqa: E402
from gro_replay.report.document import document  # noqa: E402
from gro_replay.sim import PollModel, ReplayConfig, replay_capture  # noqa: E402
from gro_replay.sim.api import replay_frames  # noqa: E402
from gro_replay.sim.driver import DriverRx  # noqa: E402

HELD_TO_POLL_END = "napi_complete_done:flush"
FRAG_LIST = "dev_gro_receive:skb_has_frag_list"
GSO_SKB = "dev_gro_receive:skb_is_gso"


def _tunnel(sp, nic, model, rss="toeplitz"):
    """(segments per tunnel-stage skb, end reasons) of one budget poll of ``sp`` with ``--nic nic``."""
    cfg = ReplayConfig(
        kernels=(model,),
        nic=nic,
        rx_csum="nic" if nic else "unnecessary",
        rss=rss,
        poll=PollModel.parse("budget"),
        tunnel_metadata=False,
    )
    d = document(replay_frames([(i * 1000, f) for i, f in enumerate(frames(sp))], cfg))
    st = d["kernels"][0]["stages"]["tunnel"]
    return st["segs_per_skb_hist"], st["end_reasons"]


def _two_outer_flows(a: int, b: int):
    """One inner flow's ``a + b`` contiguous segments, the last ``b`` from another outer UDP source port: two phys
    aggregates of ``a`` and ``b`` segments (``udp_gro_receive`` compares the outer ports)."""
    sp = specs(a + b)
    sp[a:] = [replace(s, udp_sport=49153) for s in sp[a:]]
    return sp


@pytest.mark.parametrize(
    ("nic", "model", "head_frag"),
    [
        (None, K_6_18, False),  # veth from AF_PACKET: what the kernel backend measures
        ("veth", K_6_18, False),
        ("ice", K_5_4, False),  # ice_construct_skb before build_skb support (v5.5): not built, linear
        ("ice", K_5_10, True),
        ("i40e", K_5_4, True),
        ("ixgbe", K_6_1, True),
        ("mlx5", K_5_4, True),
        ("bnxt", K_5_15, False),  # kmalloc'd buffers before 720908e5f816 (v5.17)
        ("bnxt", K_6_1, True),
        ("virtio-net", K_6_18, False),  # header split: not built, linear (the preset's notes say so)
        ("gve", K_6_18, False),
    ],
)
def test_driver_step_sets_head_frag_from_the_preset_layout(nic, model, head_frag):
    cfg = ReplayConfig(kernels=(model,), nic=nic, rx_csum="nic" if nic else "unnecessary")
    assert DriverRx(cfg, Decoder((4789,), ())).head_frag(model) is head_frag


@pytest.mark.parametrize("model", [K_6_12, K_6_18])
@pytest.mark.parametrize(
    ("segs", "reason"),
    # p's head plus 17 stolen heads: frags-only; the 19th segment is chained → flushed on the tunnel device
    [(18, HELD_TO_POLL_END), (19, FRAG_LIST), (20, FRAG_LIST)],
)
def test_ice_phys_aggregate_is_frags_only_up_to_18_segments(model, segs, reason):
    assert _tunnel(specs(segs), "ice", model) == ({str(segs): 1}, {reason: 1})
    # the default (veth's linear heads): chained from the second segment, always flushed
    assert _tunnel(specs(segs), None, model) == ({str(segs): 1}, {FRAG_LIST: 1})


@pytest.mark.parametrize("model", [K_6_12, K_6_18])
@pytest.mark.parametrize(
    ("a", "b", "merged"),
    [
        (9, 9, 18),  # 8 + 1 + 8 = 17 frags: B's head and frags move into A's frags
        (10, 9, 19),  # 9 + 1 + 8 = 18 > 17: B is chained on A's frag_list, still merged
    ],
)
def test_page_frag_aggregates_merge_again_on_the_tunnel_device(model, a, b, merged):
    sp = _two_outer_flows(a, b)
    assert _tunnel(sp, "ixgbe", model, rss="toeplitz-l3") == ({str(merged): 1}, {HELD_TO_POLL_END: 1})
    # linear heads: both aggregates carry a frag_list and are flushed unmerged (the values before the layout)
    hist = {str(a): 1, str(b): 1} if a != b else {str(a): 2}
    assert _tunnel(sp, None, model, rss="toeplitz-l3") == (hist, {FRAG_LIST: 2})


def test_before_6_1_gso_skbs_are_flushed_whatever_the_layout():
    sp = _two_outer_flows(9, 9)
    for nic in ("ixgbe", None):
        assert _tunnel(sp, nic, K_5_15, rss="toeplitz-l3") == ({"9": 2}, {GSO_SKB: 2})


def test_preset_json_names_its_layout():
    assert NIC_PRESETS["bnxt"].as_dict()["rx_skb"]["head_frag_from"] == "5.17"
    assert NIC_PRESETS["virtio-net"].as_dict()["rx_skb"]["head_frag_from"] is None
    # every preset whose layout is not built says what the driver builds instead
    for p in NIC_PRESETS.values():
        if p.rx_skb.head_frag_from is None and p.name != "veth":
            assert any("built linear here" in n for n in p.rx_skb.notes), p.name


def test_batch_path_equals_reference_with_a_page_frag_layout(tmp_path):
    """--nic with --rx-csum (the checksum state one per layout) keeps the batch path: the layout is one per kernel
    for the whole replay, so a poll's or a run's cached outcome is the same skb layout's (pollcache.py)."""
    from gro_replay.synth_mix import OverlayMix, mix_frames

    path = tmp_path / "m.pcap"
    with PcapWriter(path) as w:
        for ts, f in mix_frames(OverlayMix(frames=3000, seed=5)):
            w.write(ts, f)
    base = ReplayConfig(kernels=(K_6_12, K_6_18), rx_csum="unnecessary", tunnel_metadata=False)
    docs = {}
    for nic in ("mlx5", None):
        cfg = replace(base, nic=nic)
        r = replay_capture(str(path), cfg)
        assert r.batch is not None
        got = json.dumps(without_engine(document(r)), default=str)
        assert got == json.dumps(
            without_engine(document(replay_capture(str(path), replace(cfg, fast_path=False)))), default=str
        )
        docs[nic] = json.loads(got)
    # the mix's multi-segment aggregates: flushed for their frag_list with linear heads, not with mlx5's
    ends = {
        nic: d["kernels"][1]["stages"]["tunnel"]["end_reasons"].get(FRAG_LIST, 0) for nic, d in docs.items()
    }
    assert ends["mlx5"] < ends[None]


def test_not_modelled_names_every_preset_built_with_veths_layout():
    """docs/model.md's "Not modelled" (README links it) says which presets build veth's linear heads (their drivers
    do not) and what that changes; the list is the presets whose layout is not built (``head_frag_from`` None), veth
    aside."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "model.md").read_text(encoding="utf-8")
    section = text.split("\n## Not modelled", 1)[1].split("\n# ", 1)[0]
    linear = {n for n, p in NIC_PRESETS.items() if p.rx_skb.head_frag_from is None and n != "veth"}
    named = {n for n in NIC_PRESETS if f"`{n}`" in section or f"`--nic {n}`" in section}
    assert named == linear
    assert "skb_has_frag_list" in section
