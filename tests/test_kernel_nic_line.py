"""The kernel backend's NIC line says what its recipe did (oracle/replay.py), not the simulator's NIC model.

Before, ``gro-replay kernel`` printed the replay's line, "NIC: no --nic (checksum state and poll model set separately,
not one driver's preset): --rx-csum none (CHECKSUM_NONE: RX checksum offload off …), RSS none; poll model budget …,
weight 64, HZ 250": the command has no ``--nic``, no poll model and no weight, and the HZ was the simulator's
default, not the running kernel's (newcomer's finding). The backend sends the frames through a veth pair with one
queue, in chunks that make every poll take 64 frames; plain injection arrives CHECKSUM_NONE and a tcx egress BPF
program on the sender calls ``bpf_csum_level(BPF_CSUM_LEVEL_INC)`` level + 1 times (oracle/bpf.py
``csum_level_prog``). The JSON document's ``config`` says the same (cli/kernel.py ``_document``).
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from click.testing import CliRunner
from conftest import FIX_SAMPLE, needs_kernel_backend

from gro_replay.cli import main
from gro_replay.cli.app import mount_all
from gro_replay.oracle import kernel_hz, kernel_vlan_offload
from gro_replay.report.table import nic_line
from gro_replay.sim import ReplayConfig, replay_capture

mount_all()

RECIPE = {
    "none": "CHECKSUM_NONE: the veth's plain injection",
    "unnecessary": "CHECKSUM_UNNECESSARY level 0: bpf_csum_level(BPF_CSUM_LEVEL_INC) once, tcx egress of the sender",
    "unnecessary-tunnel": "CHECKSUM_UNNECESSARY level 1: bpf_csum_level(BPF_CSUM_LEVEL_INC) twice, tcx egress of the "
    "sender",
}


@pytest.mark.parametrize("rx_csum", sorted(RECIPE))
def test_the_backend_line_names_its_recipe_and_the_kernels_hz(rx_csum):
    cfg = ReplayConfig(rx_csum=rx_csum, hz=1000)
    result = replace(replay_capture(str(FIX_SAMPLE), cfg), backend="kernel")
    assert nic_line(result) == (
        f"NIC: the kernel backend's veth: --rx-csum {rx_csum} ({RECIPE[rx_csum]}), RSS none (veth); poll model "
        "budget (64-frame polls imposed by the injection recipe), HZ 1000; kernels: pre-fix (v5.11), post-fix (v5.12)"
    )
    # the simulator's own line is unchanged: its NIC model, poll model and weight
    assert nic_line(replace(result, backend="simulator")).startswith("NIC: no --nic (")


def test_a_kernel_without_the_vlan_offloads_is_named_on_the_line():
    """--no-vlan-offload (a kernel built without CONFIG_VLAN_8021Q) changes counts of inner- and outer-tagged
    traffic: the kernels part of the NIC line says it, for the replay and the kernel backend alike (breaker62: the
    text did not show it); the JSON config's ``vlan_offload`` is false."""
    result = replay_capture(str(FIX_SAMPLE), ReplayConfig(vlan_offload=False))
    kernels = "kernels: pre-fix (v5.11), post-fix (v5.12), without the VLAN GRO offloads"
    assert nic_line(result).endswith(f"{kernels} (--no-vlan-offload: built without CONFIG_VLAN_8021Q)")
    kernel = nic_line(replace(result, backend="kernel"))
    assert kernel.endswith(f"{kernels} (the running kernel is built without CONFIG_VLAN_8021Q)")
    assert nic_line(replay_capture(str(FIX_SAMPLE), ReplayConfig())).endswith(
        "kernels: pre-fix (v5.11), post-fix (v5.12)"
    )


@needs_kernel_backend
def test_the_kernel_command_prints_the_backend_line():
    runner = CliRunner()
    text = runner.invoke(main, ["kernel", str(FIX_SAMPLE), "-q"])
    assert text.exit_code == 0, text.output
    nic = [x for x in text.output.splitlines() if x.startswith("NIC:")]
    # a running kernel built without CONFIG_VLAN_8021Q (this project's 6.18) is said so, as its JSON config does
    vlan = (
        ""
        if kernel_vlan_offload()
        else ", without the VLAN GRO offloads (the running kernel is built without "
    )
    assert nic == [
        f"NIC: the kernel backend's veth: --rx-csum none ({RECIPE['none']}), RSS none (veth); poll model budget "
        f"(64-frame polls imposed by the injection recipe), HZ {kernel_hz()}; kernels: "
        + text.output.split("backend: kernel ", 1)[1].split(",", 1)[0]
        + (vlan and vlan + "CONFIG_VLAN_8021Q)")
    ]
    assert "--nic" not in text.output
    # Markdown: the same backend line first (it had none: the NIC line's HZ came from nowhere there)
    md = runner.invoke(main, ["kernel", str(FIX_SAMPLE), "-q", "--format", "markdown"]).output.splitlines()
    backend = next(x for x in text.output.splitlines() if x.startswith("backend: kernel "))
    assert md[0] == f"- {backend}"
    assert f"- {nic[0]}" in md
    doc = json.loads(runner.invoke(main, ["kernel", str(FIX_SAMPLE), "-q", "--format", "json"]).output)
    assert doc["config"]["nic"] == {"rx_csum": "none", "rss": "none (veth)"}
    assert doc["config"]["poll"] == "budget (64-frame polls imposed by the injection recipe)"
    assert doc["config"]["constants"] == {"hz": kernel_hz()}
