"""Kernel release profiles: which behaviour switches each release has, and that every switch is a live branch.

Expected values follow the commit → release pins of gro-spec §9 and model.py's docstring (each commit's release:
89e5c58fc1e2 v5.12-rc2, 8dc1c444df19 v5.11, eac1b93c14d6 v5.17, 6fc2f3832d36 v5.18, 0fe79f28bfaf v5.19,
5eddb24901ee v6.1, 7871f54e3dee v6.2/6.1.7, b1a78b9b9886 v6.3, 4b0ebbca3e16 v6.10, 4e4f7cefb130 v6.15, 21f7484220ac
and f095a358faf2 v6.18, ab4c8b6f7fcb after v6.18, a9888628cb2c v6.17: net tree 2025-09-14 after v6.17-rc6).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import gro_replay.kernel as kernel_pkg
from gro_replay.kernel import model as model_mod
from gro_replay.kernel.model import K_5_11, K_5_12, K_6_18, PROFILES, KernelModel, profile

ALL_SWITCHES = [
    "udp_tunnel_gate_checks_uh_check",
    "gro_normal_counts_segs",
    "gro_max_size_from_dev",
    "ipv6_hop_limit_flushes",
    "gro_big_tcp_ipv6",
    "gro_accepts_gso",
    "gro_flushes_dodgy_gso",
    "gro_ipv4_max_size",
    "l3_flush_in_tcp",
    "tcp_gro_compares_cwr",
    "inet_gro_checks_outer_id",
    "inet_gro_fixedid_without_df",
    "tcp_gro_cwr_no_flush",
    "ip_tun_rx_dst_sets_df",
]


def test_profile_lookup_by_release():
    assert profile("5.11") is K_5_11 and profile("5.12") is K_5_12 and profile("6.18") is K_6_18
    assert list(PROFILES) == ["4.19", "5.4", "5.10", "5.11", "5.12", "5.15", "6.1", "6.6", "6.12", "6.18"]
    with pytest.raises(KeyError, match="unknown kernel '4.14'; known: 4.19, 5.4, 5.10, 5.11, 5.12, 5.15"):
        profile("4.14")


@pytest.mark.parametrize(
    ("model", "on"),
    [
        # v5.11: only the segment-counting GRO_NORMAL batch (8dc1c444df19 is in v5.11)
        (K_5_11, {"gro_normal_counts_segs"}),
        # v5.12: + 89e5c58fc1e2 (v5.12-rc2)
        (K_5_12, {"gro_normal_counts_segs", "udp_tunnel_gate_checks_uh_check"}),
        # v6.18: every switch whose commit is in v6.18; ab4c8b6f7fcb (2026) is not
        (K_6_18, set(ALL_SWITCHES) - {"tcp_gro_cwr_no_flush"}),
        # LTS bases, each switch by its commit's upstream release (module docstring above)
        (PROFILES["4.19"], set()),
        (PROFILES["5.4"], set()),
        (PROFILES["5.10"], set()),
        (PROFILES["5.15"], {"gro_normal_counts_segs", "udp_tunnel_gate_checks_uh_check"}),
        (
            PROFILES["6.1"],
            {
                "gro_normal_counts_segs",
                "udp_tunnel_gate_checks_uh_check",
                "gro_max_size_from_dev",  # v5.17
                "ipv6_hop_limit_flushes",  # v5.18
                "gro_big_tcp_ipv6",  # v5.19
                "gro_accepts_gso",  # v6.1 (7871f54e3dee only from 6.1.7)
            },
        ),
        (
            PROFILES["6.6"],
            {
                "gro_normal_counts_segs",
                "udp_tunnel_gate_checks_uh_check",
                "gro_max_size_from_dev",
                "ipv6_hop_limit_flushes",
                "gro_big_tcp_ipv6",
                "gro_accepts_gso",
                "gro_flushes_dodgy_gso",  # v6.2
                "gro_ipv4_max_size",  # v6.3
            },
        ),
        (
            PROFILES["6.12"],
            set(ALL_SWITCHES)
            - {
                "tcp_gro_compares_cwr",  # v6.15
                "ip_tun_rx_dst_sets_df",  # v6.17
                "inet_gro_checks_outer_id",  # v6.18
                "inet_gro_fixedid_without_df",
                "tcp_gro_cwr_no_flush",
            },
        ),
    ],
    ids=["5.11", "5.12", "6.18", "4.19", "5.4", "5.10", "5.15", "6.1", "6.6", "6.12"],
)
def test_profile_switches(model, on):
    assert model.switches() == {name: name in on for name in ALL_SWITCHES}


def test_profile_names_are_reported():
    # --fix / --no-fix are the 5.12 / 5.11 profiles; the report names the profile by name and release
    assert (K_5_11.name, K_5_11.release) == ("pre-fix", "5.11")
    assert (K_5_12.name, K_5_12.release) == ("post-fix", "5.12")
    assert (K_6_18.name, K_6_18.release) == ("6.18", "6.18")
    renamed = K_6_18.with_name("mine")
    assert renamed.name == "mine" and renamed.switches() == K_6_18.switches()


def test_every_switch_names_its_commit_and_release():
    src = Path(model_mod.__file__).read_text()
    for name in ALL_SWITCHES:
        m = re.search(rf"#: ([0-9a-f]{{12}}) \(([^)]*)\):[^\n]*\n(?:    #:[^\n]*\n)*    {name}: bool", src)
        assert m, f"{name} has no '#: <commit> (<release>): …' comment"
        assert re.search(r"v\d|20\d\d", m.group(2)), m.group(2)


def test_every_switch_is_read_by_the_kernel_core():
    # STYLE.md: one switch per commit, read by an `if` at its branch point — no dead switches
    core = "".join(
        p.read_text() for p in Path(kernel_pkg.__file__).parent.glob("*.py") if p.name != "model.py"
    )
    for name in ALL_SWITCHES:
        assert re.search(rf"\.{name}\b", core), f"{name} is never read"
    assert set(KernelModel(name="x", release="x").switches()) == set(ALL_SWITCHES)
