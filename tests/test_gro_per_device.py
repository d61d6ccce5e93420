"""GRO switched per device (issue 11 item 4): ``--gro phys=off`` / ``--gro tunnel=off``.

Kernel rules: ``ethtool -K DEV gro off`` clears NETIF_F_GRO, so include/linux/netdevice.h ``netif_elide_gro`` is
true for DEV. On the phys device net/core/gro.c ``dev_gro_receive`` then returns GRO_NORMAL before any offload
callback runs (every frame goes up alone, in every kernel: the 89e5c58fc1e2 gate in ``udp_gro_receive`` is never
reached). On the tunnel device net/core/gro_cells.c ``gro_cells_receive`` hands the skb to ``netif_rx`` instead of
the cell (no GRO at all). Hardware GRO / LRO is refused.

The fix's sample (tests/test_fix_scenario.py derives the numbers): 16 × 1500 + 1 × 774 wire frames; with
``--poll gap:5`` two polls of 10 and 7 frames; the tunnel device's gro_cells merge each poll's frames into
14032 and 9112 bytes (52 header bytes + the payloads).
"""

from __future__ import annotations

import json

import pytest
from conftest import FIX_SAMPLE

from gro_replay.cli import main
from gro_replay.kernel import reasons as R
from gro_replay.kernel.model import K_5_11, K_5_12, K_6_18
from gro_replay.sim import ConfigError, PollModel, ReplayConfig, parse_gro, replay_capture

PHYS_SINGLE = [1500] * 16 + [774]
KERNELS = (K_5_11, K_5_12, K_6_18)


def _seq(gro: dict, fast: bool = True, rx: str = "unnecessary") -> dict:
    seq: dict = {}
    cfg = ReplayConfig(kernels=KERNELS, rx_csum=rx, poll=PollModel("gap", 5), gro=gro, fast_path=fast)
    res = replay_capture(
        str(FIX_SAMPLE), cfg, lambda k, st, dev, skb, now: seq.setdefault((k, st), []).append(skb.len)
    )
    return seq, res


@pytest.mark.parametrize("rx", ["unnecessary", "none"])
@pytest.mark.parametrize("fast", [True, False])
def test_phys_gro_off_every_kernel(fast, rx):
    seq, res = _seq({"phys": False, "tunnel": True}, fast, rx)
    for m in KERNELS:
        assert seq[(m.name, "phys")] == PHYS_SINGLE, m.name
        assert seq[(m.name, "tunnel")] == [14032, 9112], m.name
    for ks in res.kernels:
        assert ks.stages["phys"].reasons == {R.NETIF_ELIDE_GRO: 17}


@pytest.mark.parametrize("fast", [True, False])
def test_tunnel_gro_off(fast):
    seq, res = _seq({"phys": True, "tunnel": False}, fast)
    # pre-fix: the gate refuses at phys and nothing merges later; post-fix: phys aggregates pass up unchanged
    assert seq[("pre-fix", "phys")] == PHYS_SINGLE
    assert seq[("pre-fix", "tunnel")] == [1450] * 16 + [724]
    for name in ("post-fix", "6.18"):
        assert seq[(name, "phys")] == [14082, 9162]
        assert seq[(name, "tunnel")] == [14032, 9112]
    pre = res.kernels[0]
    assert pre.stages["tunnel"].reasons == {R.GRO_CELLS_NETIF_RX: 17}


def test_both_off():
    seq, _ = _seq({"phys": False, "tunnel": False})
    for m in KERNELS:
        assert seq[(m.name, "phys")] == PHYS_SINGLE
        assert seq[(m.name, "tunnel")] == [1450] * 16 + [724]


def test_parse_gro_and_refusals():
    assert parse_gro([]) == {"phys": True, "tunnel": True}
    assert parse_gro(["phys=off", "tunnel=on"]) == {"phys": False, "tunnel": True}
    assert parse_gro(["tunnel=OFF"]) == {"phys": True, "tunnel": False}
    for bad in ("eth0=off", "phys", "phys=maybe"):
        with pytest.raises(ConfigError, match="phys=on|off"):
            parse_gro([bad])
    for hw in ("lro=on", "hw=on", "phys=hw", "rx-gro-hw=on"):
        with pytest.raises(ConfigError, match="hardware GRO / LRO is not modelled"):
            parse_gro([hw])


def test_cli_verdict_and_json(runner):
    r = runner.invoke(main, [str(FIX_SAMPLE), "--poll", "gap:5", "--gro", "phys=off", "-q"])
    assert r.exit_code == 0, r.output
    assert "The fix changes nothing with GRO off on eth0" in r.stdout
    assert "affected_flows=0" in r.stdout
    r = runner.invoke(
        main, [str(FIX_SAMPLE), "--poll", "gap:5", "--gro", "phys=off", "--format", "json", "-q"]
    )
    doc = json.loads(r.stdout)
    assert doc["config"]["gro"] == {"phys": False, "tunnel": True}
    for k in doc["kernels"]:
        assert k["stages"]["phys"]["skbs_delivered"] == 17
        assert k["stages"]["tunnel"]["segs_per_skb_hist"] == {"10": 1, "7": 1}
    r = runner.invoke(main, [str(FIX_SAMPLE), "--gro", "lro=on"])
    assert r.exit_code == 2 and "hardware GRO / LRO is not modelled" in r.stderr
    assert "Traceback" not in r.output
    # the default stays on for both devices
    r = runner.invoke(main, [str(FIX_SAMPLE), "--format", "json", "-q"])
    assert json.loads(r.stdout)["config"]["gro"] == {"phys": True, "tunnel": True}


def test_cli_tunnel_off_verdict_says_nothing_merges_later(runner):
    r = runner.invoke(main, [str(FIX_SAMPLE), "--poll", "gap:5", "--gro", "tunnel=off", "-q"])
    assert r.exit_code == 0, r.output
    assert "With GRO off on the tunnel device they are not merged later either" in r.stdout
    assert "merged only later by the tunnel device's gro_cells" not in r.stdout


def test_explain_flow_verdict_names_gro_off(runner):
    r = runner.invoke(main, ["explain", str(FIX_SAMPLE), "--poll", "gap:5", "--gro", "phys=off"])
    assert r.exit_code == 0, r.output
    assert (
        "outer UDP checksum 0, but with GRO off on eth0 dev_gro_receive passes every frame up unmerged"
        in r.stdout
    )
    assert "gate refuses none of its frames before the fix either" not in r.stdout
    assert "The fix changes nothing with GRO off on eth0" in r.stdout
