"""gro_replay/kernel/model.py: kernel release profiles, their behaviour switches and the commits they are
named after, ``--kernel`` release strings (pre-releases, digits), LTS point releases and stable backports.

From the former tests/test_profiles.py:
Kernel release profiles: which behaviour switches each release has, and that every switch is a live branch.

Expected values follow the commit → release pins of gro-spec §9 and model.py's docstring (each commit's release:
89e5c58fc1e2 v5.12-rc2, 8dc1c444df19 v5.11, eac1b93c14d6 v5.17, 6fc2f3832d36 v5.18, 0fe79f28bfaf v5.19,
5eddb24901ee v6.1, 7871f54e3dee v6.2/6.1.7, b1a78b9b9886 v6.3, 4b0ebbca3e16 v6.10, 4e4f7cefb130 v6.15, 21f7484220ac
and f095a358faf2 v6.18, ab4c8b6f7fcb after v6.18, a9888628cb2c v6.17: net tree 2025-09-14 after v6.17-rc6).

From the former tests/test_kernel_prerelease.py:
``--kernel`` release strings: pre-releases ``X.Y-rcN`` and the digits a kernel version is written with.

89e5c58fc1e2 landed in v5.12-rc2 (gro-spec §9, README): 5.12-rc1 is the 5.12 tree without it, 5.12-rc2 and later
carry it. 7871f54e3dee landed in v6.2-rc4 (kernel/model.py module docstring). Kernel versions are ASCII digits
without leading zeros (the top-level Makefile's VERSION/PATCHLEVEL/SUBLEVEL).

From the former tests/test_lts_profiles.py:
LTS kernels and their stable point releases (issue 11 item 2): which point release first carries 89e5c58fc1e2.

The stable commits and point releases are the ones read in the stable trees (stable.py ``STABLE_BACKPORTS``):

* linux-4.19.y: e5008f2e9157247e7758d8f19707033a2956e08c "net: Fix gro aggregation for udp encaps with zero csum"
  ("commit 89e5c58fc1e2… upstream"), between the "Linux 4.19.180" (030194a5b292) and "Linux 4.19.181"
  (ac3af4beac43) commits; review mail "[PATCH 4.19 004/120]" of 2021-03-15 (4.19.181-rc1).
* linux-5.4.y: f2d78bbbca42e55e96b415f6f232b22844beb7c7, in the range "Linux 5.4.105" (ce615a08404c) → "Linux
  5.4.106" (0437de26e28d).
* linux-5.10.y: 09af4362ba47c805347840c2bb9719c0458925ca, in the stable/linux push of linux-5.10.y ending at
  "Linux 5.10.24" (05d125f7524e).
* linux-5.11.y: 9b815b6efaf8072ea0cdf2ed22ac51c0b76574d9, in the linux-stable push of linux-rolling-stable of
  2021-03-17 (e6711451ef30 → 42c4659cc6f4: the 5.11.7 commits, then "Linux 5.11.7" dd5ae3523018 and "Merge
  v5.11.7"); the same commit precedes "Linux 5.11.7" in linux-stable-rc queue/5.11 of 2021-03-18.

5.15, 6.1, 6.6 and 6.12 branched after v5.12-rc2 and carry the fix from upstream. No modelled branch lacks it:
the kernels that stay pre-fix are the point releases before the backport, 5.11.0–5.11.6, and distribution kernels
whose backports cannot be known (Ubuntu 5.4.0-42-generic, RHEL 4.18.0-305.el8).

Expected traces: test_fix_scenario's PRE (17 phys skbs of the wire frames, gro-spec §4.7 row 3) and POST (phys
aggregates 14082 and 9162 = 50 + 14032 / 9112, the fix mail's numbers).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIX_SAMPLE
from test_fix_scenario import POST, PRE, _replay

import gro_replay.kernel as kernel_pkg
from gro_replay.cli import main
from gro_replay.kernel import model as model_mod
from gro_replay.kernel.model import (
    FIX_COMMIT,
    K_5_11,
    K_5_12,
    K_6_18,
    LTS,
    PROFILES,
    SWITCH_COMMITS,
    KernelModel,
    profile,
)
from gro_replay.kernel.release import resolve_kernel
from gro_replay.kernel.stable import STABLE_BACKPORTS, STABLE_ENDED
from gro_replay.report.kernel_lines import kernel_lines

# -- from the former tests/test_profiles.py ----------------------------------------
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
    "inet_ecn_decap_sets_ect1",
    "ip_ecn_set_ect1_right_csum",
    "ip_ecn_csum16_add",
    "packet_alloc_skb_costly_order",
]


def test_profile_lookup_by_release():
    assert profile("5.11") is K_5_11 and profile("5.12") is K_5_12 and profile("6.18") is K_6_18
    assert list(PROFILES) == ["4.19", "5.4", "5.10", "5.11", "5.12", "5.15", "6.1", "6.6", "6.12", "6.18"]
    with pytest.raises(KeyError, match="unknown kernel '4.14'; known: 4.19, 5.4, 5.10, 5.11, 5.12, 5.15"):
        profile("4.14")


@pytest.mark.parametrize(
    ("model", "on"),
    [
        # v5.11: the ECT(1) propagation (b723748750ec, v5.7) with its checksum fix (2867e1eac610, v5.10), the
        # ECN marks' csum16_add (0780b4145634, v5.11-rc1) and the segment-counting GRO_NORMAL batch (8dc1c444df19)
        (
            K_5_11,
            {
                "inet_ecn_decap_sets_ect1",
                "ip_ecn_set_ect1_right_csum",
                "ip_ecn_csum16_add",
                "gro_normal_counts_segs",
            },
        ),
        # v5.12: + 89e5c58fc1e2 (v5.12-rc2)
        (
            K_5_12,
            {
                "inet_ecn_decap_sets_ect1",
                "ip_ecn_set_ect1_right_csum",
                "ip_ecn_csum16_add",
                "gro_normal_counts_segs",
                "udp_tunnel_gate_checks_uh_check",
            },
        ),
        # v6.18: every switch whose commit is in v6.18; ab4c8b6f7fcb (2026) is not
        (K_6_18, set(ALL_SWITCHES) - {"tcp_gro_cwr_no_flush"}),
        # LTS bases, each switch by its commit's upstream release (module docstring above)
        (PROFILES["4.19"], set()),
        (PROFILES["5.4"], set()),
        (PROFILES["5.10"], {"inet_ecn_decap_sets_ect1", "ip_ecn_set_ect1_right_csum"}),  # v5.7, v5.10-rc7
        (
            PROFILES["5.15"],
            {
                "inet_ecn_decap_sets_ect1",
                "ip_ecn_set_ect1_right_csum",
                "ip_ecn_csum16_add",
                "gro_normal_counts_segs",
                "udp_tunnel_gate_checks_uh_check",
            },
        ),
        (
            PROFILES["6.1"],
            {
                "inet_ecn_decap_sets_ect1",
                "ip_ecn_set_ect1_right_csum",
                "ip_ecn_csum16_add",
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
                "inet_ecn_decap_sets_ect1",
                "ip_ecn_set_ect1_right_csum",
                "ip_ecn_csum16_add",
                "gro_normal_counts_segs",
                "udp_tunnel_gate_checks_uh_check",
                "gro_max_size_from_dev",
                "ipv6_hop_limit_flushes",
                "gro_big_tcp_ipv6",
                "gro_accepts_gso",
                "gro_flushes_dodgy_gso",  # v6.2
                "gro_ipv4_max_size",  # v6.3
                "packet_alloc_skb_costly_order",  # v6.6
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


# -- from the former tests/test_kernel_prerelease.py ----------------------------------------
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
    m = resolve_kernel("5.9-rc1")
    assert m.switches() == resolve_kernel("5.9").switches()
    assert "no modelled commit landed in 5.9's merge window or release candidates: ran as 5.9" in m.notes[0]


def test_5_10_rc6_lacks_2867e1eac610_rc7_has_it():
    """2867e1eac610 came in the "Networking for 5.10-rc7" pull of 2020-12-03: 5.10-rc6 still wrote IP_ECN_set_ect1's
    wrong checksum."""
    assert resolve_kernel("5.10-rc6").ip_ecn_set_ect1_right_csum is False
    assert resolve_kernel("5.10-rc7").ip_ecn_set_ect1_right_csum is True


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


# -- from the former tests/test_lts_profiles.py ----------------------------------------
#: (branch, last point release without the fix, first with it, stable commit) — read in the stable trees (above)
TOOK_FIX = [
    ("4.19", "4.19.180", "4.19.181", "e5008f2e9157247e7758d8f19707033a2956e08c"),
    ("5.4", "5.4.105", "5.4.106", "f2d78bbbca42e55e96b415f6f232b22844beb7c7"),
    ("5.10", "5.10.23", "5.10.24", "09af4362ba47c805347840c2bb9719c0458925ca"),
    ("5.11", "5.11.6", "5.11.7", "9b815b6efaf8072ea0cdf2ed22ac51c0b76574d9"),  # no LTS
]


def _trace(model: KernelModel) -> list[tuple]:
    _res, rec = _replay((model,))
    return [e[:4] for e in rec.events[model.name]]


@pytest.mark.parametrize(("branch", "before", "first", "stable"), TOOK_FIX, ids=[t[0] for t in TOOK_FIX])
def test_point_release_before_and_after_the_stable_backport(branch, before, first, stable):
    pre, post = resolve_kernel(before), resolve_kernel(first)
    assert (pre.base, post.base) == (branch, branch)
    assert not pre.carries(FIX_COMMIT) and post.carries(FIX_COMMIT)
    assert post.stable_backport(FIX_COMMIT) == (stable, first)
    assert _trace(pre) == PRE  # 17 phys skbs: the gate refuses every frame
    assert _trace(post) == POST  # phys 14082 and 9162
    # a later point release keeps it (the last of an ended branch: 5.11.22; 300 of a live one); the base release
    # (X.Y.0) does not have it
    later = STABLE_ENDED[branch][0] if branch in STABLE_ENDED else 300
    assert resolve_kernel(f"{branch}.{later}").carries(FIX_COMMIT)
    assert not resolve_kernel(branch).carries(FIX_COMMIT)


@pytest.mark.parametrize(("branch", "before", "first", "stable"), TOOK_FIX, ids=[t[0] for t in TOOK_FIX])
def test_report_names_the_stable_commit(runner, branch, before, first, stable):
    args = [str(FIX_SAMPLE), "--poll", "gap:5", "--kernel", before, "--kernel", first]
    r = runner.invoke(main, [*args, "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    entries = {k["name"]: k for k in doc["config"]["kernels"]}
    fix_pre, fix_post = entries[before]["fix_89e5c58fc1e2"], entries[first]["fix_89e5c58fc1e2"]
    # known / carried_basis: a stable release's commits are read in the stable trees, not assumed
    assert fix_pre == {"carried": False, "known": True, "carried_basis": "upstream", "via": None,
                       "stable_commit": None, "point_release": None}  # fmt: skip
    assert fix_post == {"carried": True, "known": True, "carried_basis": "stable", "via": "stable",
                        "stable_commit": stable, "point_release": first}  # fmt: skip
    assert entries[first]["base"] == branch
    assert {"upstream": "89e5c58fc1e2", "switch": "udp_tunnel_gate_checks_uh_check", "stable_commit": stable,
            "point_release": first} in entries[first]["backports"]  # fmt: skip
    by = {k["name"]: k for k in doc["kernels"]}
    assert by[before]["stages"]["phys"]["skbs_delivered"] == 17
    assert by[first]["stages"]["phys"]["skbs_delivered"] == 2
    text = runner.invoke(main, args)
    assert text.exit_code == 0, text.output
    # the verdict names where the post-fix kernel's fix comes from
    assert f"{first} has the fix (stable backport {stable[:12]}, since {first})." in text.output
    single = runner.invoke(main, [str(FIX_SAMPLE), "--poll", "gap:5", "--kernel", first])
    assert f"carries 89e5c58fc1e2 (stable backport {stable[:12]}, since {first})" in single.output
    assert (
        f"kernel {first}: upstream {branch} + stable backports 89e5c58fc1e2 as {stable[:12]} (since {first})"
        in (text.output)
    )


def test_lts_bases_after_the_fix_carry_it_upstream():
    # v5.15, v6.1, v6.6, v6.12 all follow v5.12-rc2
    for rel in ("5.15", "6.1", "6.6", "6.12"):
        m = PROFILES[rel]
        assert m.carries(FIX_COMMIT) and m.stable_backport(FIX_COMMIT) is None
        assert m.describe()["fix_89e5c58fc1e2"]["via"] == "upstream"
    assert set(LTS) == {"4.19", "5.4", "5.10", "5.15", "6.1", "6.6", "6.12"}
    # every LTS branch older than the fix took it (none is left pre-fix), and so did 5.11.y
    took = set(STABLE_BACKPORTS[FIX_COMMIT])
    assert {b for b in LTS if not PROFILES[b].carries(FIX_COMMIT)} == took - {"5.11"}
    assert {b for b in PROFILES if not PROFILES[b].carries(FIX_COMMIT)} == took


@pytest.mark.parametrize(
    ("release", "base", "note"),
    [
        ("5.4.0-42-generic", "5.4", "Ubuntu kernel 5.4.0-42-generic"),
        ("4.18.0-305.el8", "4.19", "RHEL 8 kernel 4.18.0-305.el8"),
    ],
)
def test_kernels_whose_backports_are_unknown_stay_pre_fix_and_say_so(runner, release, base, note):
    m = resolve_kernel(release)
    assert m.base == base and not m.carries(FIX_COMMIT) and m.backports == ()
    assert any(n.startswith(note) for n in m.notes), m.notes
    assert _trace(m) == PRE
    r = runner.invoke(main, [str(FIX_SAMPLE), "--poll", "gap:5", "--kernel", release])
    assert r.exit_code == 0, r.output
    assert "note: " + note in r.output
    assert "phys skbs ended by" in r.output


def test_other_backports_by_point_release():
    # 8dc1c444df19 (GRO_NORMAL batch counts segments): 5.4.y 2085d886630a in 5.4.99, 5.10.y 9e6ce473e96b in 5.10.17
    assert (
        not resolve_kernel("5.4.98").gro_normal_counts_segs
        and resolve_kernel("5.4.99").gro_normal_counts_segs
    )
    assert resolve_kernel("5.10.17").stable_backport("8dc1c444df19") == (
        "9e6ce473e96ba0ad63820325892373d24c1aa8aa",
        "5.10.17",
    )
    assert not resolve_kernel("5.10.16").gro_normal_counts_segs
    # 7871f54e3dee (DODGY GSO flushed): 6.1.y 0b1605e45c36 in 6.1.7
    assert not resolve_kernel("6.1.6").gro_flushes_dodgy_gso
    assert resolve_kernel("6.1.7").stable_backport("7871f54e3dee") == (
        "0b1605e45c36968a508703e08bf0947a68732841",
        "6.1.7",
    )
    # a feature commit no branch took stays off without a note (5.15 lacks eac1b93c14d6, v5.17)
    m = resolve_kernel("5.15.150")
    assert not m.gro_max_size_from_dev
    assert not any("eac1b93c14d6" in n for n in m.notes)
    # a9888628cb2c (v6.17, taken into 6.16.y) was not read in the LTS branches: off, and said so
    assert not m.ip_tun_rx_dst_sets_df
    assert any(n.startswith("backports unknown: whether linux-5.15.y took a9888628cb2c") for n in m.notes)


def test_a_branch_that_ended_before_a_commit_notes_no_unknown_backport():
    """a9888628cb2c landed in v6.17 (2025): 4.19.y ended with 4.19.325 (December 2024, before v6.13's release),
    5.11.y with 5.11.22 (May 2021), 5.12.y with 5.12.19 (July 2021), so none can carry it: off, with no "backports
    unknown" note (the old note was noise). b723748750ec (v5.7, 2020) was released while 4.19.y lived, and its
    4.19.y history was read (kernel/stable.py: not taken): off, no note; 5.4.y, maintained into December 2025, keeps
    the note for a9888628cb2c."""
    for release in ("4.19.200", "5.11.7", "5.12.5"):
        m = resolve_kernel(release)
        assert not m.ip_tun_rx_dst_sets_df
        assert not any("a9888628cb2c" in n for n in m.notes), (release, m.notes)
    m = resolve_kernel("4.19.200")
    assert not m.inet_ecn_decap_sets_ect1 and not any("b723748750ec" in n for n in m.notes)
    assert any(
        n.startswith("backports unknown: whether linux-5.4.y took a9888628cb2c")
        for n in resolve_kernel("5.4.200").notes
    )


def test_a_branch_read_up_to_a_point_release_notes_only_after_it():
    """a9888628cb2c: linux-6.12.y read up to 6.12.50 (not taken): no "backports unknown" note there, one naming
    what was read after it."""
    assert not any("a9888628cb2c" in n for n in resolve_kernel("6.12.50").notes)
    assert (
        "backports unknown: whether linux-6.12.y took a9888628cb2c (ip_tun_rx_dst_sets_df) was not read in the "
        "stable sources after 6.12.50; 6.12.51 has it off as upstream 6.12 does"
    ) in resolve_kernel("6.12.51").notes


def test_a_kernel_writing_the_wrong_ect1_checksum_says_so():
    """Kernels with b723748750ec and without 2867e1eac610 (5.4.41 to 5.4.81, upstream 5.7 to 5.10-rc6) note that
    ip_rcv drops the packets their ECT(1) mark breaks, after the tunnel device where the counts end; others not."""
    for release, noted in (
        ("5.4.60", True),
        ("5.9", True),
        ("5.4.40", False),
        ("5.4.82", False),
        ("6.18", False),
    ):
        notes = resolve_kernel(release).describe()["notes"]
        assert (
            any(n.startswith(f"{release} writes a wrong inner IPv4 header checksum") for n in notes) is noted
        )
    # linux-5.9.y's backports of 2867e1eac610 were not read: an assumption, said so (breaker's finding)
    notes = resolve_kernel("5.9.16").describe()["notes"]
    assert any(n.startswith("5.9.16 is assumed to write a wrong inner IPv4 header checksum") for n in notes)


def test_stable_backports_read_from_reviews_and_announcements():
    """kernel/stable.py, from the stable list and kernel.org's push mails: b723748750ec reached 5.4.y in 5.4.41
    ("[PATCH 5.4 30/90]", 2020-05-13; "Linux 5.4.41", 2020-05-14), its stable commit id not read (None), and no
    note for it there any more; a9888628cb2c reached 6.16.y in 6.16.9 as 8b1dc0217f96 ("[PATCH 6.16 023/149]",
    2025-09-22; "Linux 6.16.9", 2025-09-25), so 6.16.y is read for it: no "backports unknown" note."""
    assert not resolve_kernel("5.4.40").inet_ecn_decap_sets_ect1
    m = resolve_kernel("5.4.41")
    assert m.inet_ecn_decap_sets_ect1 and m.stable_backport("b723748750ec") == (None, "5.4.41")
    assert not any("b723748750ec" in n for n in m.notes)
    assert kernel_lines([m])[0] == (
        "kernel 5.4.41: upstream 5.4 + stable backports b723748750ec (since 5.4.41; its stable commit id not read)"
    )
    assert m.describe()["backports"] == [
        {
            "upstream": "b723748750ec",
            "switch": "inet_ecn_decap_sets_ect1",
            "stable_commit": None,
            "point_release": "5.4.41",
        }
    ]
    assert not resolve_kernel("6.16.8").ip_tun_rx_dst_sets_df
    m = resolve_kernel("6.16.9")
    assert m.ip_tun_rx_dst_sets_df
    assert m.stable_backport("a9888628cb2c") == ("8b1dc0217f96cb649571ac029a5c746d94f96612", "6.16.9")
    assert not any("a9888628cb2c" in n for n in resolve_kernel("6.16.3").notes)


@pytest.mark.parametrize(
    ("release", "noted"),
    [
        # a9888628cb2c was first released in v6.17, merged in the window v6.16's release opened (2025-07-27)
        ("5.2.21", False),  # 5.2.y's last, 2019-10-11
        ("5.13.19", False),  # 2021-09-18
        ("5.17.15", False),  # 2022-06-14
        ("6.5.13", False),  # 2023-11-28
        ("6.11.11", False),  # 2024-12-05
        ("6.14.11", False),  # 2025-06-10: before v6.17's merge window opened
        ("6.15.11", True),  # 2025-08-20: v6.17's merge window was open, a backport was possible: not read
        ("5.4.302", True),  # 2025-12-03, likewise
    ],
)
def test_every_ended_branch_says_backports_unknown_only_for_commits_it_outlived(release, noted):
    """The stable announcements' last releases (STABLE_ENDED): a branch that ended before a commit's merge window
    opened cannot carry it, so its "backports unknown" note for it was noise (the breaker's 5.13.19, 6.5.13, …);
    a branch that lived while the commit was in mainline keeps the note."""
    m = resolve_kernel(release)
    assert not m.ip_tun_rx_dst_sets_df
    assert any("a9888628cb2c" in n for n in m.notes) is noted, m.notes
    assert not any("ended on kernel.org" in n for n in m.notes), m.notes


def test_every_switch_has_its_commit_release_row():
    # a switch added later must come with its commit and upstream release (and its backports researched)
    assert {c.switch for c in SWITCH_COMMITS} == set(KernelModel(name="x", release="x").switches())


# a dot after X.Y starts the point release, which is digits: "5.10.-1", "5.10.0x1" and "5.10.1e3" are typos, not a
# distribution's uname -r (each was read as "assumed an upstream 5.10 base … unless the distribution backported
# it", so a typo became an affected verdict: breaker's finding), while 5.10.0-21-amd64 and 5.10-custom are builds
@pytest.mark.parametrize("bad", ["", "linux", "5", "five.four", "5.10.-1", "5.10.0x1", "5.10.1e3", "5.4.-1"])
def test_unparsable_release_is_a_usage_error(runner, bad):
    with pytest.raises(ValueError, match="cannot parse kernel release"):
        resolve_kernel(bad)
    r = runner.invoke(main, [str(FIX_SAMPLE), "--kernel", bad])
    assert r.exit_code == 2 and "cannot parse kernel release" in r.output


@pytest.mark.parametrize("build", ["5.10.0-21-amd64", "5.10-custom", "5.10.0.el8", "6.1.0+", "6.1+"])
def test_a_build_string_after_x_y_or_x_y_z_resolves_to_its_base(build):
    assert resolve_kernel(build).release == build and resolve_kernel(build).vendor


NEWER = (
    "Error: kernel {} is newer than 6.18, the newest modelled release (GRO changes after it are not modelled, so "
    "its verdict would be a guess): use --kernel 6.18\n"
)


@pytest.mark.parametrize("release", ["7.99", "6.19", "6.19.2", "6.19-rc1", "7.0.0-1-generic", "7.1.0-1.el10"])
def test_release_newer_than_every_profile_is_one_line_exit_2(runner, release):
    """6.18 is the newest profile: a later base (any form: X.Y, point release, -rc, distribution string) could
    carry GRO changes the model lacks, so it is refused (it was run with every switch on and called fixed)."""
    with pytest.raises(ValueError, match="newer than 6.18, the newest modelled release"):
        resolve_kernel(release)
    for cmd in ([str(FIX_SAMPLE)], ["explain", str(FIX_SAMPLE)], ["kernels"]):
        r = runner.invoke(main, [*cmd, "--kernel", release])
        assert r.exit_code == 2
        assert r.stdout == ""
        assert r.stderr == NEWER.format(release)


@pytest.mark.parametrize(
    ("release", "major", "last"),
    [
        ("5.20", 5, 19),
        ("5.99", 5, 19),
        ("5.20.3", 5, 19),
        ("5.25.0-1-generic", 5, 19),
        ("5.20-rc1", 5, 19),
        ("4.21", 4, 20),
        ("4.21.1-1.el8", 4, 20),
    ],
)
def test_a_minor_past_its_major_s_last_release_names_no_release(runner, release, major, last):
    """Mainline went from 4.20 to 5.0 (March 2019) and from 5.19 to 6.0 (October 2022, kernel.org): 5.20 … 5.99
    and 4.21 … name no release, in any form. They were run as 'upstream 5.99' with switches by commit release."""
    with pytest.raises(ValueError, match="names no release"):
        resolve_kernel(release)
    r = runner.invoke(main, [str(FIX_SAMPLE), "--kernel", release])
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr == (
        f"Error: kernel {release} names no release: the {major}.x releases ran from {major}.0 to {major}.{last}, "
        f"then {major + 1}.0 followed\n"
    )


@pytest.mark.parametrize(
    ("release", "base"),
    [
        ("4.20", "4.20"),
        ("4.20.17", "4.20"),
        ("5.19", "5.19"),
        ("5.19.17", "5.19"),
        ("5.19.0-76-generic", "5.19"),
    ],
)
def test_the_last_release_of_a_major_stays_accepted(release, base):
    assert resolve_kernel(release).base == base


@pytest.mark.parametrize("release", ["6.18", "6.18.5", "6.18.0-1-generic"])
def test_newest_profile_point_and_distribution_releases_stay_accepted(runner, release):
    m = resolve_kernel(release)
    assert m.base == "6.18" and m.carries(FIX_COMMIT)
    assert runner.invoke(main, [str(FIX_SAMPLE), "--kernel", release, "-q"]).exit_code == 0


@pytest.mark.parametrize("release", ["3.10", "4.14", "4.17.3", "3.10.0-1160.el7"])
def test_release_older_than_4_18_is_refused(runner, release):
    """Below 4.18 the GRO core differs from every profile (one GRO list before 07d78363dcff, v4.19, and an older
    UDP tunnel offload): a verdict would be a guess, so every form of such a release is a one-line exit 2."""
    with pytest.raises(ValueError, match="is older than 4.18"):
        resolve_kernel(release)
    r = runner.invoke(main, [str(FIX_SAMPLE), "--kernel", release, "-q"])
    assert r.exit_code == 2 and "older than 4.18" in r.stderr and r.stdout == ""


def test_4_18_runs_as_4_19_with_a_note(runner):
    """4.18 (RHEL 8's base) runs as 4.19 with every switch off and says so."""
    m = resolve_kernel("4.18")
    assert m.base == "4.19" and not m.carries(FIX_COMMIT)
    note = "upstream 4.18 predates 4.19: it had one GRO list, not 8 hash buckets (07d78363dcff), which is not"
    assert any(n.startswith(note) for n in m.notes), m.notes
    r = runner.invoke(main, [str(FIX_SAMPLE), "--kernel", "4.18", "-q"])
    assert r.exit_code == 0 and "note: " + note in r.stdout


def test_kernels_command_lists_profiles_switches_and_backports(runner):
    r = runner.invoke(main, ["kernels", "--kernel", "5.4.120"])
    assert r.exit_code == 0, r.output
    for rel in PROFILES:
        assert rel in r.output
    assert "udp_tunnel_gate_checks_uh_check" in r.output and "e5008f2e9157" in r.output
    assert "on (5.4.106)" in r.output  # the 5.4.120 column: the fix from its stable backport
    j = runner.invoke(main, ["kernels", "--format", "json"])
    doc = json.loads(j.output)
    assert [p["release"] for p in doc["profiles"]] == list(PROFILES)
    assert doc["stable_backports"]["89e5c58fc1e2"]["4.19"] == {
        "stable_commit": "e5008f2e9157247e7758d8f19707033a2956e08c",
        "point_release": "4.19.181",
    }
    sw = {p["release"]: p["switches"]["udp_tunnel_gate_checks_uh_check"] for p in doc["profiles"]}
    assert sw == {"4.19": False, "5.4": False, "5.10": False, "5.11": False, "5.12": True, "5.15": True,
                  "6.1": True, "6.6": True, "6.12": True, "6.18": True}  # fmt: skip


@pytest.mark.parametrize(
    ("text", "how"),
    [
        # 5.11 lacks the fix (89e5c58fc1e2 landed in v5.12): it runs as 5.11 with a counterfactual beside it; the
        # advice names where the fix is: linux-5.11.y took it in 5.11.7 (kernel/stable.py STABLE_BACKPORTS)
        (
            "5.11+89e5c58fc1e2",
            "use --kernel 5.11 (5.11 lacks it: the verdict replays 5.11 with it applied beside it; 5.11.7 and "
            "later 5.11.y releases carry it)",
        ),
        (
            "5.11+89E5C58",
            "use --kernel 5.11 (5.11 lacks it: the verdict replays 5.11 with it applied beside it; 5.11.7 and "
            "later 5.11.y releases carry it)",
        ),
        ("6.18+89e5c58fc1e2", "use --kernel 6.18 (6.18 carries it)"),
        # linux-5.4.y took it as f2d78bbbca42 in 5.4.106 (kernel/stable.py)
        ("5.4.106+89e5c58fc1e2", "use --kernel 5.4.106 (5.4.106 carries it)"),
        # 5eddb24901ee is in v6.1, not in 5.10, and no stable branch before 6.1 took it
        ("5.10+5eddb24901ee", "use --kernel 5.10 (5.10 lacks it; 6.1 and later carry it)"),
        # any release form before the "+" (breaker's finding: a pre-release and a distribution string still ran);
        # 5.11-rc1 is the 5.11 tree, whose stable branch took the fix in 5.11.7
        (
            "5.11-rc1+89e5c58fc1e2",
            "use --kernel 5.11-rc1 (5.11-rc1 lacks it: the verdict replays 5.11-rc1 with it "
            "applied beside it; 5.11.7 and later 5.11.y releases carry it)",
        ),
        ("5.12-rc2+89e5c58fc1e2", "use --kernel 5.12-rc2 (5.12-rc2 carries it)"),
        # the fix is in v5.12-rc2: the release candidate before it lacks it
        (
            "5.12-rc1+89e5c58fc1e2",
            "use --kernel 5.12-rc1 (5.12-rc1 lacks it: the verdict replays 5.12-rc1 with it applied beside it; "
            "5.12-rc2 and later carry it)",
        ),
        # a distribution's point releases are its vendor's: the advice names the upstream release
        (
            "4.18.0-305.el8+89e5c58fc1e2",
            "use --kernel 4.18.0-305.el8 (4.18.0-305.el8 is assumed to lack it, as its "
            "upstream base does: the verdict replays 4.18.0-305.el8 with it applied beside it; 5.12 and later "
            "carry it, from 5.12-rc2)",
        ),
        # ae6db08f8b56 is in v6.6-rc1 (the "Networking for 6.6" pull); 6.5 lacks it (breaker's finding: the
        # advice named only 6.5, which lacks it)
        ("6.5+ae6db08f8b56", "use --kernel 6.5 (6.5 lacks it; 6.6 and later carry it, from 6.6-rc1)"),
        # linux-6.1.y took 7871f54e3dee in 6.1.7; 8dc1c444df19 reached linux-5.4.y in 5.4.99
        (
            "6.1.3+7871f54e3dee",
            "use --kernel 6.1.3 (6.1.3 lacks it; 6.1.7 and later 6.1.y releases carry it)",
        ),
        ("5.4+8dc1c444df19", "use --kernel 5.4 (5.4 lacks it; 5.4.99 and later 5.4.y releases carry it)"),
        # ab4c8b6f7fcb came after v6.18: no profile has it
        ("6.18+ab4c8b6f7fcb", "use --kernel 6.18 (6.18 lacks it; no release gro-replay models carries it)"),
        # the rc 8dc1c444df19 landed in is not known: 5.11-rc1 carries it by assumption (breaker's finding: "carries
        # it" said as a fact)
        (
            "5.11-rc1+8dc1c44",
            "use --kernel 5.11-rc1 (5.11-rc1 is assumed to carry it: the rc it landed in is not known)",
        ),
        # linux-5.9.y's backports of 2867e1eac610 were not read: lacking it is an assumption (breaker's finding)
        (
            "5.9.16+2867e1e",
            "use --kernel 5.9.16 (5.9.16 is assumed to lack it, as linux-5.9.y's backports of it were not read; "
            "5.10 and later carry it, from 5.10-rc7)",
        ),
        # linux-6.12.y read for a9888628cb2c up to 6.12.50, not taken (kernel/stable.py)
        ("6.12.50+a988862", "use --kernel 6.12.50 (6.12.50 lacks it; 6.17 and later carry it)"),
        (
            "6.12.51+a988862",
            "use --kernel 6.12.51 (6.12.51 is assumed to lack it, as linux-6.12.y's backports of it were not read "
            "after 6.12.50; 6.17 and later carry it)",
        ),
        # 4.18.20 runs as the 4.19 model but is of linux-4.18.y, which ended without the fix: the advice names no
        # 4.19.y release (breaker's finding)
        (
            "4.18.20+89e5c58",
            "use --kernel 4.18.20 (4.18.20 lacks it: the verdict replays 4.18.20 with it applied beside it; 5.12 "
            "and later carry it, from 5.12-rc2)",
        ),
    ],
)
def test_a_release_with_a_modelled_commit_after_plus_is_refused(runner, text, how):
    """NAME+89e5c58fc1e2 is how the verdict names the kernel it replays with the fix applied (SUMMARY fix_alone=).
    Copied into --kernel it was read as a build's suffix: 5.11 ran without the fix, and the verdict said
    "5.11+89e5c58fc1e2 … lacks 89e5c58fc1e2" (breaker's finding). A modelled commit's id after "+" is refused, one
    line, exit 2; any other suffix stays a build's (``6.1+`` above, ``5.11+deadbeef1`` here)."""
    with pytest.raises(ValueError, match="a commit gro-replay models, not a build's suffix"):
        resolve_kernel(text)
    r = runner.invoke(main, [str(FIX_SAMPLE), "--kernel", text])
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and r.stderr.rstrip().endswith(how)
    assert resolve_kernel("5.11+deadbeef1").vendor


@pytest.mark.parametrize("text", ["5.12-rc0", "5.12.0-rc0", "5.12.0-rc0+", "6.2-rc0-amd64"])
def test_rc0_names_no_release(runner, text):
    """A merge window's first tag is X.Y-rc1 (Makefile EXTRAVERSION = -rc1; v5.12-rc1, v6.2-rc1): rc0 names no
    release. It ran as a pre-release lacking every commit of a later rc (breaker's finding)."""
    with pytest.raises(ValueError, match="names no release: release candidates start at -rc1"):
        resolve_kernel(text)
    r = runner.invoke(main, [str(FIX_SAMPLE), "--kernel", text])
    assert r.exit_code == 2 and r.stdout == "" and r.stderr.count("\n") == 1


@pytest.mark.parametrize("text", ["5.12-rc01", "5.12.0-rc02", "6.2-rc004+"])
def test_an_rc_number_with_a_leading_zero_is_refused(text):
    """Tags are v5.12-rc1, never -rc01 (breaker's finding: it ran and printed "(v5.12-rc01)"), as 5.4.0106 is refused."""
    with pytest.raises(ValueError, match="version numbers have no leading zeros"):
        resolve_kernel(text)


def test_a_switch_that_changes_no_count_leaves_two_kernels_one_model():
    """0780b4145634 (v5.11-rc1, ``ip_ecn_csum16_add``) changes only how an ECN mark writes an IPv4 header checksum
    summing to 0xFFFF (kernel/ip_tunnel_core.py ``ip_ecn_check_add``): 5.10.24 (5.10 + 89e5c58fc1e2 + 8dc1c444df19,
    kernel/stable.py) and 5.11.7 (5.11 + 89e5c58fc1e2) differ only in it, so they give the same counts and are one
    model to compare (refused, naming the commit they differ in and why it changes no count), and the verdict
    counts it among no "other modelled commits that can change counts"."""
    from gro_replay.kernel.model import same_model, same_model_words
    from gro_replay.report.verdict.facts import other_changes

    a, b = resolve_kernel("5.10.24"), resolve_kernel("5.11.7")
    differ = {s for s, v in a.switches().items() if v != b.switches()[s]}
    assert differ == {"ip_ecn_csum16_add"}
    assert same_model([a, b]) == (0, 1)
    assert other_changes(a, b) == []
    words = same_model_words("5.10.24", "5.11.7", a.switches(), b.switches())
    assert words.startswith(
        "5.10.24 and 5.11.7 run one kernel model (modelled commits on: 89e5c58fc1e2, 8dc1c444df19, b723748750ec, "
        "2867e1eac610; the other 13 off; they differ in 0780b4145634, but it changes only how an ECN mark writes an "
        "IPv4 header checksum that sums to 0xFFFF): "
    )
