"""The kernel backend describes each of its GRO recipes once, and its replay advice carries them.

``gro-replay kernel`` (and ``validate``) elide GRO on the receiving veth with a generic XDP program for both
``--defer-to-tunnel`` and ``--gro phys=off`` (a veth with GRO off would bypass NAPI; netif_elide_gro,
include/linux/netdevice.h, is true either way), and turn GRO off on every tunnel device it made for ``--gro
tunnel=off`` (``ethtool -K DEV gro off``: gro_cells_receive hands each skb to netif_rx). Before, the two spellings
of one recipe were described differently (breaker's finding): only ``--defer-to-tunnel`` got "GRO deferred to the
tunnel device" in the backend line and ``kernel.defer_to_tunnel`` true, only ``--gro phys=off`` got
``config.gro.phys`` false and "with GRO off on eth0" (a device feature the recipe never cleared), validate's first
line named neither ``--gro``, and the backend line said "deferred to the tunnel device" with GRO off there too.
Now one configuration (cli/kernel.py ``_prepare``) gives every output its words.

The verdict's replay advice for a running kernel without the fix (report/verdict/unseen.py) left out settings the
backend ran with (``--gro tunnel=off``, its vxlan ports, HZ): the replay it advised was of another setup.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import replace

import pytest
from click.testing import CliRunner
from conftest import FIX_SAMPLE, VXLAN4_SAMPLE, needs_kernel_backend
from test_kernel_no_payload import PHYS_ELIDED, _config, fake_oracle, own_acks_capture

from gro_replay.capture.linktypes import DLT_RAW
from gro_replay.capture.writer import PcapWriter
from gro_replay.cli import main
from gro_replay.report.verdict.core import verdict_of
from gro_replay.validate import kernel_result, load_capture

backend = needs_kernel_backend

#: the verdict's and each flow's words for GRO elided on the phys veth (report/verdict/words.py phys_gro_off_words)
XDP = "GRO elided on eth0 by a generic XDP program (the kernel backend's --defer-to-tunnel or --gro phys=off)"
#: the backend line's and validate's clause (cli/kernel.py _gro_clause) for each recipe
ELIDED = ", GRO elided on eth0 by a generic XDP program, left to the gro_cells of vxlan0"
BOTH_OFF = (
    ", GRO elided on eth0 by a generic XDP program and off on vxlan0 (ethtool -K DEV gro off): GRO nowhere"
)
TUNNEL_OFF = ", GRO off on vxlan0 (ethtool -K DEV gro off)"

#: the running kernel's trace names every delivered skb's first frame (oracle/replay.py ``_Run._heads``)
ADDRESSED = "counted from each skb's first frame, named by its address, and its length"


def _run(*args: str):
    r = CliRunner().invoke(main, [*args])
    assert r.exit_code == 0, r.output
    return r.output


def _stable(doc: dict) -> dict:
    """A kernel document without what differs between two runs of the same recipe (the backend's attempts)."""
    doc["kernel"].pop("attempts")
    return doc


@backend
@pytest.mark.parametrize(
    ("recipe", "spellings", "clause", "skbs"),
    [
        # generic XDP on eth0: every one of the fix sample's 17 frames goes up alone there (netif_elide_gro);
        # the vxlan device's gro_cells merge the 17 decapsulated frames of the one budget poll into one skb
        ("elided", [["--defer-to-tunnel"], ["--gro", "phys=off"]], ELIDED, (17, 1)),
        # and GRO off on vxlan0 too: gro_cells_receive hands each of the 17 skbs to netif_rx
        (
            "both off",
            [["--defer-to-tunnel", "--gro", "tunnel=off"], ["--gro", "phys=off", "--gro", "tunnel=off"]],
            BOTH_OFF,
            (17, 17),
        ),
    ],
)
def test_both_spellings_of_one_recipe_give_one_report(recipe, spellings, clause, skbs):
    docs, texts, marks, checks = [], [], [], []
    for opts in spellings:
        docs.append(_stable(json.loads(_run("kernel", str(FIX_SAMPLE), *opts, "--format", "json"))))
        texts.append(_run("kernel", str(FIX_SAMPLE), *opts, "--no-hist"))
        marks.append(_run("kernel", str(FIX_SAMPLE), *opts, "--format", "markdown"))
        checks.append(_run("validate", str(FIX_SAMPLE), *opts))
    assert docs[0] == docs[1] and texts[0] == texts[1] and marks[0] == marks[1] and checks[0] == checks[1]
    doc = docs[0]
    assert doc["config"]["gro"] == {"phys": False, "tunnel": recipe != "both off"}
    assert doc["kernel"]["defer_to_tunnel"] is True
    stages = doc["kernels"][0]["stages"]
    assert (stages["phys"]["skbs_delivered"], stages["tunnel"]["skbs_delivered"]) == skbs
    assert doc["verdict"]["text"].startswith(f"The fix changes nothing with {XDP}: dev_gro_receive passes")
    head = f", 17 frames sent{clause}; segments per skb {ADDRESSED}"
    # (the backend line wraps at the console's width)
    assert texts[0].startswith("backend: kernel ") and head in " ".join(texts[0].split())
    assert "deferred to the tunnel device" not in texts[0]
    assert marks[0].splitlines()[0].endswith(head)
    assert checks[0].splitlines()[0].endswith(f"; 17 frames, --rx-csum none{clause}")
    assert "SUMMARY validate agrees=yes" in checks[0]


@backend
def test_gro_off_on_the_tunnel_device_alone_is_named():
    # GRO on eth0: the running kernel (it carries the fix) merges the 17 frames of one budget poll into one skb,
    # which vxlan0 hands up as it is
    doc = _stable(json.loads(_run("kernel", str(FIX_SAMPLE), "--gro", "tunnel=off", "--format", "json")))
    assert (
        doc["config"]["gro"] == {"phys": True, "tunnel": False} and doc["kernel"]["defer_to_tunnel"] is False
    )
    stages = doc["kernels"][0]["stages"]
    assert (stages["phys"]["skbs_delivered"], stages["tunnel"]["skbs_delivered"]) == (1, 1)
    text = " ".join(_run("kernel", str(FIX_SAMPLE), "--gro", "tunnel=off", "--no-hist").split())
    assert f", 17 frames sent{TUNNEL_OFF}; segments per skb" in text
    check = _run("validate", str(FIX_SAMPLE), "--gro", "tunnel=off", "--format", "json")
    assert json.loads(check)["gro"] == {"phys": True, "tunnel": False}
    # with GRO on both devices the line names no recipe
    plain = _run("kernel", str(FIX_SAMPLE), "--no-hist").splitlines()[0]
    assert plain.endswith(f" 17 frames sent; segments per skb {ADDRESSED}")


def test_replay_advice_carries_the_backends_settings(tmp_path):
    # upstream 5.10.0 (the fix reached linux-5.10.y in 5.10.24) with the 9 zero-checksum frames of
    # own_acks_capture and CHECKSUM_NONE: its refusals cannot be seen (outcome not_observed), so the verdict
    # names a replay; the backend ran with HZ 1000, its one vxlan device on 4789 made with gbp, and GRO off on it.
    # The phys device hands each frame up alone (the pre-fix gate refuses every one: PHYS_ELIDED), vxlan0 each
    # decapsulated, 50 bytes shorter (GRO off there)
    path = own_acks_capture(tmp_path / "c.pcap", "zero")
    cfg = _config(hz=1000, vxlan_gbp=True, gro={"phys": True, "tunnel": False})
    lengths = {"phys": PHYS_ELIDED["phys"], "tunnel": [n - 50 for n in PHYS_ELIDED["phys"]]}
    oracle = replace(fake_oracle(lengths, 9), kernel_release="5.10.0", hz=1000)
    v = verdict_of(kernel_result(load_capture(str(path), cfg), oracle, cfg))
    assert v.outcome == "not_observed"
    opts = "--rx-csum none --poll budget --rss none --hz 1000 --vxlan-port 4789 --vxlan-gbp --gro tunnel=off"
    advice = f"gro-replay {shlex.quote(str(path))} --kernel 5.10.0 {opts} names the frames its rules refuse"
    assert advice in v.text
    # the advice is a replay the command line takes, with each setting in its document
    doc = json.loads(_run(str(path), "--kernel", "5.10.0", *opts.split(), "--format", "json", "-q"))
    conf = doc["config"]
    assert (conf["nic"]["rx_csum"], conf["nic"]["rss"], conf["poll"]) == ("none", "none", "budget")
    assert (conf["constants"]["hz"], conf["vxlan_ports"], conf["vxlan_gbp"]) == (1000, [4789], True)
    assert conf["gro"] == {"phys": True, "tunnel": False}


def test_replay_advice_names_a_running_kernel_without_the_vlan_offloads(tmp_path):
    # a running kernel built without CONFIG_VLAN_8021Q (this project's 6.18 is one): the replay the verdict
    # names runs without the VLAN GRO offloads too (--no-vlan-offload), and its document says so
    path = own_acks_capture(tmp_path / "c.pcap", "zero")
    cfg = _config()
    oracle = replace(fake_oracle(PHYS_ELIDED, 9), kernel_release="5.10.0", vlan_offload=False)
    v = verdict_of(kernel_result(load_capture(str(path), cfg), oracle, cfg))
    opts = "--rx-csum none --poll budget --rss none --vxlan-port 4789 --no-vlan-offload"
    assert f" --kernel 5.10.0 {opts} names the frames its rules refuse" in v.text
    doc = json.loads(_run(str(path), "--kernel", "5.10.0", *opts.split(), "--format", "json", "-q"))
    assert doc["config"]["vlan_offload"] is False


def test_replay_advice_leaves_out_the_replays_defaults(tmp_path):
    # HZ 250, the replay's default vxlan ports (4789 then 8472), no gbp, GRO on both devices: the options that
    # always differ from a replay's defaults and nothing else
    path = own_acks_capture(tmp_path / "c.pcap", "zero")
    cfg = replace(_config(), vxlan_ports=(4789, 8472))
    oracle = replace(fake_oracle(PHYS_ELIDED, 9), kernel_release="5.10.0")
    v = verdict_of(kernel_result(load_capture(str(path), cfg), oracle, cfg))
    assert (
        " --kernel 5.10.0 --rx-csum none --poll budget --rss none names the frames its rules refuse" in v.text
    )


def test_defer_to_tunnel_and_gro_phys_on_contradict_each_other():
    # --defer-to-tunnel elides GRO on the phys veth as --gro phys=off does: with --gro phys=on it is refused as
    # --gro phys=off --gro phys=on is, before the backend runs (breaker's finding: GRO was elided anyway, exit 0)
    for cmd in ("kernel", "validate"):
        r = CliRunner().invoke(main, [cmd, str(FIX_SAMPLE), "--defer-to-tunnel", "--gro", "phys=on"])
        assert r.exit_code == 2, r.output
        assert r.output == (
            "Error: --defer-to-tunnel and --gro phys=on contradict each other (--defer-to-tunnel elides GRO on the "
            "phys veth, as --gro phys=off): give one of them\n"
        )


def test_no_recipe_is_named_when_no_frame_was_sent():
    # run_kernel makes no namespace, device or XDP program when no frame can be sent (oracle/replay.py): the
    # backend line names no recipe and the document no tunnel device (breaker's finding: "GRO elided on eth0 by a
    # generic XDP program, done by the gro_cells of vxlan0" and tunnel_devices {"4789": "vxlan0"} for 0 frames)
    from gro_replay.cli.kernel import _backend_line, _backend_tunnel_devices

    cfg = _config(phys_xdp_generic=True, gro={"phys": False, "tunnel": False})
    oracle = replace(fake_oracle({"phys": [], "tunnel": []}, 0), frames_sent=0, tunnel_ports={}, attempts=0)
    # nor segments inferred from lengths: nothing was delivered
    assert (
        _backend_line(oracle, cfg) == "backend: kernel 6.18.0, HZ 250, 0 frames sent, so no device was made"
    )
    assert _backend_tunnel_devices(cfg, oracle) == {}
    # with frames sent, the devices run_kernel made
    sent = fake_oracle(PHYS_ELIDED, 9)
    assert _backend_line(sent, cfg) == (
        f"backend: kernel 6.18.0, HZ 250, 9 frames sent{BOTH_OFF}; segments per skb inferred from lengths"
    )
    assert _backend_tunnel_devices(cfg, sent) == {"4789": "vxlan0"}


def test_no_tunnel_verdict_of_the_kernel_backend_names_only_its_own_option(tmp_path):
    # the backend's vxlan device on 9999, the capture's frames on 4789: no frame is tunnel traffic, and the
    # running kernel hands each up alone at the phys device (no tunnel socket on 4789: udp4_gro_receive merges
    # nothing). The kernel command has --vxlan-port, not --geneve-port (its geneve device is on 6081)
    path = own_acks_capture(tmp_path / "c.pcap", "zero")
    cfg = replace(_config(), vxlan_ports=(9999,))
    oracle = replace(fake_oracle({"phys": PHYS_ELIDED["phys"], "tunnel": []}, 9), tunnel_ports={"g-vx": 9999})
    v = verdict_of(kernel_result(load_capture(str(path), cfg), oracle, cfg))
    assert v.outcome == "no_tunnel"
    assert v.text.endswith(
        "(VXLAN on other ports: --vxlan-port P; Geneve on a port other than 6081: the replay's --geneve-port P)."
    )
    # the simulator's has both options
    sim = json.loads(_run(str(path), "--vxlan-port", "9999", "--format", "json", "-q"))
    assert sim["verdict"]["text"].endswith("(tunnels on other ports: --vxlan-port P / --geneve-port P).")


@pytest.mark.parametrize(("hz", "phys_skbs"), [(200, 28), (500, 28), (1024, 12), (1200, 12)])
def test_replay_takes_every_hz_a_kernel_is_built_with(hz, phys_skbs):
    # the running kernel's HZ (the kernel backend's, and so its replay advice's) may be an architecture's own:
    # arm 200/500, mips and alpha 1024, alpha 1200 (breaker's finding: "--hz 200" in the advice was refused). On the
    # 4-flow sample (400 frames, polls of 64 that use their whole budget), napi_poll flushes only old packets
    # when HZ >= 1000 (napi_gro_flush(n, HZ >= 1000), net/core/dev.c), so the flows' packets stay across full
    # polls: 12 phys skbs (as with --hz 1000) instead of 28 (as with --hz 250, every full poll flushing all)
    doc = json.loads(_run(str(VXLAN4_SAMPLE), "--fix", "--hz", str(hz), "-q", "--format", "json"))
    assert doc["config"]["constants"]["hz"] == hz
    assert doc["kernels"][0]["stages"]["phys"]["skbs_delivered"] == phys_skbs


@backend
def test_captures_without_ethernet_addresses_replay_through_the_running_kernel(tmp_path):
    # a raw IP capture (LINKTYPE_RAW) of the fix sample: its frames reach the backend with destination MAC
    # 00:00:00:00:00:00, which no veth can carry (RTNETLINK "Cannot assign requested address", exit 1: newcomer's
    # finding); the backend now gives the veth and the frames sent a locally administered address. The running
    # kernel then does what it does with the Ethernet capture (test_validate: one budget poll of 17 frames): one
    # phys skb, one tunnel skb, and the simulator agrees
    import dpkt

    raw = tmp_path / "raw.pcap"
    with open(FIX_SAMPLE, "rb") as f, PcapWriter(str(raw), linktype=DLT_RAW) as w:
        for ts, frame in dpkt.pcap.Reader(f):
            w.write(int(ts * 1_000_000_000), frame[14:])
    out = _run("validate", str(raw))
    assert out.splitlines()[-1] == "SUMMARY validate agrees=yes phys=1/1 tunnel=1/1", out
    doc = json.loads(_run("kernel", str(raw), "--format", "json"))
    stages = doc["kernels"][0]["stages"]
    assert (
        doc["kernel"]["frames_sent"],
        stages["phys"]["skbs_delivered"],
        stages["tunnel"]["skbs_delivered"],
    ) == (
        17,
        1,
        1,
    )
