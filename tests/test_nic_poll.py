"""A --nic preset's interrupt moderation sets the default poll model (issue 11: "the interrupt moderation default
used by the time-aware poll model"); an explicit --poll still wins.

Values: ice ``ICE_DFLT_RX_ITR`` = ``ICE_ITR_20K`` = 50 µs (drivers/net/ethernet/intel/ice/ice_txrx.h), timed from
the first pending frame (ITR: ``rx-usecs:50``); mlx5 CQE-based moderation with period
``MLX5E_PARAMS_DEFAULT_RX_CQ_MODERATION_USEC_FROM_CQE`` = 3 µs (en.h), restarted at each completion (``gap:3``);
virtio-net has none (the default time-aware model, gap:3, stands).

On the fix's sample (17 frames over 26 µs: 10 frames 1 µs apart, a 10 µs pause, 7 more): with rx-usecs:50 one poll
takes all 17 frames, and the post-fix kernel merges them into one skb (16 × 1398 + 672 payload bytes, below 64 KiB;
the poll ends with GRO flushed, HZ 250); with gap:3 the 10 µs pause separates polls of 10 and 7 frames (the
commit's two aggregates).
"""

from __future__ import annotations

import json

import pytest
from conftest import FIX_SAMPLE

from gro_replay.cli import main


def _doc(runner, *args):
    r = runner.invoke(main, [str(FIX_SAMPLE), "--format", "json", "--quiet", *args])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    return d["config"]["poll"], {k["name"]: k["stages"]["phys"]["skbs_delivered"] for k in d["kernels"]}


@pytest.mark.parametrize(
    ("nic", "poll", "post_fix_phys"),
    [("ice", "rx-usecs:50", 1), ("i40e", "rx-usecs:50", 1), ("mlx5", "gap:3", 2), ("virtio-net", "gap:3", 2)],
)
def test_preset_moderation_is_the_default_poll_model(runner, nic, poll, post_fix_phys):
    got_poll, phys = _doc(runner, "--nic", nic, "--fix")
    assert got_poll == poll
    assert phys["post-fix"] == post_fix_phys


def test_explicit_poll_wins_over_the_preset(runner):
    got_poll, phys = _doc(runner, "--nic", "ice", "--fix", "--poll", "gap:5")
    assert got_poll == "gap:5"
    assert phys["post-fix"] == 2


# The NIC line says which driver each default is: without --nic the checksum state (--rx-csum unnecessary:
# CHECKSUM_UNNECESSARY level 0, what ice/i40e without the tunnel port programmed and virtio-net's DATA_VALID hand up,
# gro-spec §7) and the poll model (gap:3, mlx5's CQE-based moderation, MLX5E_PARAMS_DEFAULT_RX_CQ_MODERATION_USEC_FROM_CQE)
# are no one driver's; the line, the Markdown and JSON config.nic.description say so from one computation
# (ReplayConfig.nic_words, poll_words).
NO_NIC = (
    "no --nic (checksum state and poll model set separately, not one driver's preset): --rx-csum unnecessary "
    "(CHECKSUM_UNNECESSARY level 0: ice/i40e without the tunnel port programmed, virtio-net DATA_VALID); skbs laid "
    "out as veth's from AF_PACKET, the kernel backend's (a linear head under 4,080 bytes: a phys aggregate of such "
    "frames carries a frag_list, which the tunnel device flushes from v6.1; --nic DRIVER builds a driver's)"
)
MLX5_POLL = "gap:3 (a poll after each pause > 3 µs, the default time-aware model: mlx5's CQE-based moderation"


def test_the_default_nic_line_names_each_defaults_driver(runner):
    d = json.loads(runner.invoke(main, [str(FIX_SAMPLE), "--format", "json", "-q"]).stdout)["config"]
    assert (d["nic"]["description"], d["poll_model"]) == (NO_NIC, MLX5_POLL + ")")
    line = f"NIC: {NO_NIC}, RSS toeplitz; poll model {MLX5_POLL}), weight 64, HZ 250; "
    assert line in runner.invoke(main, [str(FIX_SAMPLE), "-q"]).stdout
    assert f"- {line}" in runner.invoke(main, [str(FIX_SAMPLE), "-q", "--format", "markdown"]).stdout
    # the layout the driver step builds (kernel/nic_skb.py): veth's from AF_PACKET without --nic, else the preset's
    assert (d["nic"]["rx_skb"]["af_packet"], d["nic"]["rx_skb"]["head_frag_from"]) == (True, None)
    ice = json.loads(runner.invoke(main, [str(FIX_SAMPLE), "--format", "json", "-q", "--nic", "ice"]).stdout)
    ice_skb = ice["config"]["nic"]["rx_skb"]
    assert (ice_skb["af_packet"], ice_skb["head_frag_from"]) == (False, "5.5")


def test_a_preset_without_moderation_says_the_default_poll_model_stands(runner):
    """virtio-net has no interrupt moderation (kernel/nic.py presets): the default gap:3, mlx5's, stands; the line
    says so instead of pairing --nic virtio-net with mlx5's moderation unexplained. mlx5's own preset needs no
    such words."""
    out = runner.invoke(main, [str(FIX_SAMPLE), "-q", "--nic", "virtio-net"]).stdout
    assert (
        "NIC: --nic virtio-net (no tunnel port offload); its skbs built with a linear head, as veth's under 4,080 bytes "
        "(the virtio-net driver's is not modelled: on 6.1+ the tunnel device's skb_has_frag_list flushes may be more than the driver's), "
        f"RSS none; poll model {MLX5_POLL}; virtio-net has no interrupt moderation of its own here, so that default "
        "stands), weight 64" in out
    )
    # a preset whose layout is built (kernel/nic_skb.py) says nothing of it
    assert "linear head" not in runner.invoke(main, [str(FIX_SAMPLE), "-q", "--nic", "ice"]).stdout
    out = runner.invoke(main, [str(FIX_SAMPLE), "-q", "--nic", "mlx5"]).stdout
    assert f"NIC: --nic mlx5 (tunnel port off), RSS toeplitz; poll model {MLX5_POLL}), weight 64" in out
