"""``--kernel`` release strings: pre-releases ``X.Y-rcN`` and the digits a kernel version is written with.

89e5c58fc1e2 landed in v5.12-rc2 (gro-spec §9, README): 5.12-rc1 is the 5.12 tree without it, 5.12-rc2 and later
carry it. 7871f54e3dee landed in v6.2-rc4 (kernel/model.py module docstring). Kernel versions are ASCII digits
without leading zeros (the top-level Makefile's VERSION/PATCHLEVEL/SUBLEVEL).
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import FIX_SAMPLE

from gro_replay.cli import main
from gro_replay.kernel.model import resolve_kernel


@pytest.mark.parametrize("text", ["5.12-rc1", "5.12.0-rc1"])
def test_5_12_rc1_lacks_the_fix(text):
    m = resolve_kernel(text)
    assert m.release == text and m.base == "5.12"
    assert m.udp_tunnel_gate_checks_uh_check is False and not m.carries("89e5c58fc1e2")
    assert m.describe()["fix_89e5c58fc1e2"]["carried"] is False
    assert m.notes == (
        f"kernel {text}: a pre-release of upstream 5.12; 89e5c58fc1e2 (udp_tunnel_gate_checks_uh_check) landed in "
        "v5.12-rc2: off",
    )
    # every other switch as in 5.11 and 5.12 (no other modelled commit landed in 5.12)
    assert {k: v for k, v in m.switches().items() if k != "udp_tunnel_gate_checks_uh_check"} == {
        k: v for k, v in resolve_kernel("5.11").switches().items() if k != "udp_tunnel_gate_checks_uh_check"
    }


@pytest.mark.parametrize(
    "text",
    [
        "5.12.0-rc1+",  # setlocalversion: a tree past the v5.12-rc1 tag
        "5.12.0-rc1-amd64",  # Debian
        "5.12.0-0.rc1.20210301git280d542f6ffa.164.fc35.x86_64",  # Fedora rawhide snapshot
        "5.12.0-051200rc1-generic",  # Ubuntu mainline build
    ],
)
def test_builds_of_5_12_rc1_lack_the_fix_and_say_what_is_unknown(text):
    m = resolve_kernel(text)
    assert m.udp_tunnel_gate_checks_uh_check is False and m.base == "5.12"
    assert m.notes[0] == (
        f"kernel {text}: a build of or after 5.12-rc1 (a later snapshot, a distribution's patches): what it adds "
        "is not known here; assumed 5.12-rc1"
    )
    assert m.notes[1].endswith("89e5c58fc1e2 (udp_tunnel_gate_checks_uh_check) landed in v5.12-rc2: off")


@pytest.mark.parametrize("text", ["5.12-rc2", "5.12.0-rc2", "5.12-rc8", "5.12.0-051200rc2-generic"])
def test_5_12_rc2_and_later_carry_the_fix(text):
    m = resolve_kernel(text)
    assert m.udp_tunnel_gate_checks_uh_check is True and m.carries("89e5c58fc1e2")
    assert m.notes[-1].endswith("landed in v5.12-rc2: on")


def test_6_2_rc3_lacks_7871f54e3dee_rc4_has_it():
    assert resolve_kernel("6.2-rc3").gro_flushes_dodgy_gso is False
    assert resolve_kernel("6.2-rc4").gro_flushes_dodgy_gso is True
    assert resolve_kernel("6.2-rc3").gro_accepts_gso is True  # 5eddb24901ee, v6.1: in every 6.2 tree


def test_rc_of_a_release_without_a_modelled_commit_runs_as_that_release():
    m = resolve_kernel("5.10-rc1")
    assert m.switches() == resolve_kernel("5.10").switches()
    assert "no modelled commit landed in 5.10's merge window or release candidates: ran as 5.10" in m.notes[0]


def test_rc_of_a_release_with_unpinned_commits_says_they_are_assumed():
    m = resolve_kernel("6.18-rc1")
    assert m.inet_gro_checks_outer_id is True and m.inet_gro_fixedid_without_df is True
    assert (
        "assumed to carry 21f7484220ac, f095a358faf2 of 6.18 (the rc each landed in is not known)"
        in m.notes[0]
    )


def test_cli_5_12_rc1_is_pre_fix_rc2_post_fix():
    r = CliRunner().invoke(
        main, [str(FIX_SAMPLE), "--kernel", "5.12-rc1", "--kernel", "5.12-rc2", "--no-hist"]
    )
    assert r.exit_code == 0, r.output
    # FIX_SAMPLE: 17 frames of one zero-csum VXLAN TCP flow; before the fix none merge on the phys device
    assert "kernel[5.12-rc1].phys_skbs=17 " in r.stdout and "kernel[5.12-rc2].phys_skbs=2 " in r.stdout


@pytest.mark.parametrize("text", ["5.٤.١٠٦", "٥.4", "5.4.١٠٦-generic", "5.12-rc١", "５.４"])
def test_non_ascii_digits_are_refused(text):
    with pytest.raises(ValueError, match="is not ASCII"):
        resolve_kernel(text)
    r = CliRunner().invoke(main, [str(FIX_SAMPLE), "--kernel", text, "-q"])
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1 and "is not ASCII" in r.stderr


@pytest.mark.parametrize("text", ["5.4.0106", "05.04.106", "5.04", "05.4", "5.4.01-generic"])
def test_leading_zeros_are_refused(text):
    with pytest.raises(ValueError, match="version numbers have no leading zeros"):
        resolve_kernel(text)
    r = CliRunner().invoke(main, [str(FIX_SAMPLE), "--kernel", text, "-q"])
    assert r.exit_code == 2 and "no leading zeros" in r.stderr


@pytest.mark.parametrize("text", ["5.4.0", "5.4.0-42-generic", "4.18.0-305.el8", "5.10.0-rc1", "6.1.0"])
def test_a_zero_component_is_not_a_leading_zero(text):
    assert resolve_kernel(text).base in ("5.4", "4.19", "5.10", "6.1")


def test_kernels_lists_the_rc_a_commit_landed_in():
    r = CliRunner().invoke(main, ["kernels", "--format", "json"])
    rcs = {s["commit"]: (s["upstream"], s["upstream_rc"]) for s in json.loads(r.stdout)["switches"]}
    assert rcs["89e5c58fc1e2"] == ("5.12", 2) and rcs["7871f54e3dee"] == ("6.2", 4)
    assert rcs["8dc1c444df19"] == ("5.11", None)
    table = CliRunner().invoke(main, ["kernels"], env={"COLUMNS": "200"}).stdout
    assert any("89e5c58fc1e2" in line and "v5.12-rc2" in line for line in table.splitlines())
