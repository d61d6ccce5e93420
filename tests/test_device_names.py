"""Device names (``--phys-dev``, ``--tunnel-dev``) on every command that takes them: a name the kernel would refuse
(net/core/dev.c ``dev_valid_name``: 1 to IFNAMSIZ - 1 = 15 bytes, not ``.`` or ``..``, no ``/``, ``:`` or white
space) and a physical device named like a tunnel device (the reports key devices by name) are one-line usage
errors, exit 2, on every command, before the kernel backend's environment is checked. The commands are found from
their own parameters, so a new one is covered."""

from __future__ import annotations

import pytest
from conftest import required_cli_args

from gro_replay.cli import main
from gro_replay.cli.app import COMMANDS, mount_all
from gro_replay.sim import ConfigError, ReplayConfig

mount_all()

WITH_DEVICES = sorted(
    n for n in COMMANDS if any("--tunnel-dev" in getattr(p, "opts", ()) for p in main.commands[n].params)
)
BAD_NAMES = ["a" * 16, "a/b", "a:b", "a b", "tab\tname", ".", "..", ""]


def test_the_commands_with_device_names():
    assert WITH_DEVICES == ["batch", "explain", "kernel", "replay", "validate"]


@pytest.mark.parametrize("name", BAD_NAMES, ids=repr)
@pytest.mark.parametrize("option", ["--phys-dev", "--tunnel-dev"])
@pytest.mark.parametrize("command", WITH_DEVICES)
def test_a_name_the_kernel_refuses_is_a_usage_error(runner, tmp_path, command, option, name):
    r = runner.invoke(main, [command, *required_cli_args(command, tmp_path), option, name])
    assert r.exit_code == 2, r.output
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith(f"Error: {option} ") and "not a Linux device name (1 to 15 bytes" in line


@pytest.mark.parametrize("command", WITH_DEVICES)
def test_one_name_for_the_physical_and_a_tunnel_device_is_refused(runner, tmp_path, command):
    args = [command, *required_cli_args(command, tmp_path), "--phys-dev", "ens1", "--tunnel-dev", "ens1"]
    r = runner.invoke(main, args)
    assert r.exit_code == 2, r.output
    assert r.stderr.strip() == (
        "Error: --phys-dev 'ens1' is also the name of a tunnel device (--tunnel-dev, or a further port's NAME-PORT): "
        "one device each"
    )


@pytest.mark.parametrize("command", WITH_DEVICES)
def test_the_physical_device_named_like_a_further_port_s_device_is_refused(runner, tmp_path, command):
    # the default VXLAN ports 4789 and 8472 make vxlan0 and vxlan0-8472 (kernel/kernel.py tunnel_devices)
    r = runner.invoke(main, [command, *required_cli_args(command, tmp_path), "--phys-dev", "vxlan0-8472"])
    assert r.exit_code == 2, r.output
    assert r.stderr.startswith("Error: --phys-dev 'vxlan0-8472' is also the name of a tunnel device")


def test_fifteen_bytes_are_a_name():
    ReplayConfig(phys_dev="a" * 15, vxlan_dev="flannel.1", geneve_dev="flannel.1").validate()
    with pytest.raises(ConfigError, match="not a Linux device name"):
        ReplayConfig(vxlan_dev="é" * 8).validate()  # 16 bytes in UTF-8


@pytest.mark.parametrize("command", ["kernel", "validate"])
def test_the_kernel_backend_refuses_its_geneve_port_as_a_vxlan_port(runner, tmp_path, command):
    r = runner.invoke(main, [command, *required_cli_args(command, tmp_path), "--vxlan-port", "6081"])
    assert r.exit_code == 2
    assert r.stderr.strip() == (
        "Error: --vxlan-port 6081: the kernel backend keeps UDP port 6081 for its geneve device"
    )


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        (
            "vxl\u00e0",
            False,
        ),  # UTF-8 C3 A0: the kernel's isspace takes 0xA0 (lib/ctype.c), one byte at a time
        ("vx\x1f", True),  # a control byte that is no space: dev_valid_name takes it
        ("vx\u2028", True),  # a Unicode line separator is no space byte (E2 80 A8)
        ("vx\x0b", False),  # vertical tab, 11
    ],
    ids=["a0-byte", "unit-separator", "line-separator", "vertical-tab"],
)
def test_space_is_the_kernel_s_isspace_byte_by_byte(name, ok):
    cfg = ReplayConfig(vxlan_dev=name)
    if ok:
        cfg.validate()
    else:
        with pytest.raises(ConfigError, match="not a Linux device name"):
            cfg.validate()


def test_two_tunnel_devices_of_one_name_are_refused():
    # --tunnel-dev abcdefghij-4789 on ports 8472 and 4789: the 4789 device's NAME-PORT, cut to 15 bytes, is the
    # same name (kernel/kernel.py tunnel_devices)
    with pytest.raises(ConfigError, match="two tunnel devices would be named 'abcdefghij-4789'"):
        ReplayConfig(vxlan_dev="abcdefghij-4789", vxlan_ports=(8472, 4789)).validate()


def test_the_json_names_each_tunnel_port_s_device(runner):
    """config.tunnel_devices: one device per tunnel port, as the kernels make them (kernel/kernel.py
    tunnel_devices): the default ports 4789 and 8472 (VXLAN) and 6081 (Geneve)."""
    import json

    from conftest import FIX_SAMPLE

    doc = json.loads(runner.invoke(main, [str(FIX_SAMPLE), "-q", "--format", "json"]).stdout)
    assert doc["config"]["tunnel_devices"] == {"4789": "vxlan0", "8472": "vxlan0-8472", "6081": "geneve0"}
    args = [str(FIX_SAMPLE), "-q", "--format", "json", "--tunnel-dev", "flannel.1", "--vxlan-port", "8472"]
    doc = json.loads(runner.invoke(main, args).stdout)
    assert doc["config"]["tunnel_devices"] == {"8472": "flannel.1", "6081": "flannel.1-6081"}
