"""LTS kernels and their stable point releases (issue 11 item 2): which point release first carries 89e5c58fc1e2.

The stable commits and point releases are the ones read in the stable trees (model.py ``STABLE_BACKPORTS``):

* linux-4.19.y: e5008f2e9157247e7758d8f19707033a2956e08c "net: Fix gro aggregation for udp encaps with zero csum"
  ("commit 89e5c58fc1e2… upstream"), between the "Linux 4.19.180" (030194a5b292) and "Linux 4.19.181"
  (ac3af4beac43) commits; review mail "[PATCH 4.19 004/120]" of 2021-03-15 (4.19.181-rc1).
* linux-5.4.y: f2d78bbbca42e55e96b415f6f232b22844beb7c7, in the range "Linux 5.4.105" (ce615a08404c) → "Linux
  5.4.106" (0437de26e28d).
* linux-5.10.y: 09af4362ba47c805347840c2bb9719c0458925ca, in the stable/linux push of linux-5.10.y ending at
  "Linux 5.10.24" (05d125f7524e).

5.15, 6.1, 6.6 and 6.12 branched after v5.12-rc2 and carry the fix from upstream. No modelled LTS branch lacks it:
the kernels that stay pre-fix are 5.11.y (whose backport was not read: "backports unknown") and distribution
kernels whose backports cannot be known (Ubuntu 5.4.0-42-generic, RHEL 4.18.0-305.el8).

Expected traces: test_fix_scenario's PRE (17 phys skbs of the wire frames, gro-spec §4.7 row 3) and POST (phys
aggregates 14082 and 9162 = 50 + 14032 / 9112, the fix mail's numbers).
"""

from __future__ import annotations

import json

import pytest
from conftest import FIX_SAMPLE
from test_fix_scenario import POST, PRE, _replay

from gro_replay.cli import main
from gro_replay.kernel.model import (
    FIX_COMMIT,
    LTS,
    PROFILES,
    STABLE_BACKPORTS,
    SWITCH_COMMITS,
    KernelModel,
    resolve_kernel,
)

#: (branch, last point release without the fix, first with it, stable commit) — read in the stable trees (above)
TOOK_FIX = [
    ("4.19", "4.19.180", "4.19.181", "e5008f2e9157247e7758d8f19707033a2956e08c"),
    ("5.4", "5.4.105", "5.4.106", "f2d78bbbca42e55e96b415f6f232b22844beb7c7"),
    ("5.10", "5.10.23", "5.10.24", "09af4362ba47c805347840c2bb9719c0458925ca"),
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
    # a later point release keeps it; the base release (X.Y.0) does not have it
    assert resolve_kernel(f"{branch}.300").carries(FIX_COMMIT)
    assert not resolve_kernel(branch).carries(FIX_COMMIT)


@pytest.mark.parametrize(("branch", "before", "first", "stable"), TOOK_FIX, ids=[t[0] for t in TOOK_FIX])
def test_report_names_the_stable_commit(runner, branch, before, first, stable):
    args = [str(FIX_SAMPLE), "--poll", "gap:5", "--kernel", before, "--kernel", first]
    r = runner.invoke(main, [*args, "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    entries = {k["name"]: k for k in doc["config"]["kernels"]}
    fix_pre, fix_post = entries[before]["fix_89e5c58fc1e2"], entries[first]["fix_89e5c58fc1e2"]
    assert fix_pre == {"carried": False, "via": None, "stable_commit": None, "point_release": None}
    assert fix_post == {"carried": True, "via": "stable", "stable_commit": stable, "point_release": first}
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
    # every LTS branch older than the fix took it (none is left pre-fix)
    assert {b for b in LTS if not PROFILES[b].carries(FIX_COMMIT)} == set(STABLE_BACKPORTS[FIX_COMMIT])


@pytest.mark.parametrize(
    ("release", "base", "note"),
    [
        # 5.11.y is no LTS; its stable sources were not read for the fix → base only, said so
        ("5.11.22", "5.11", "backports unknown: whether linux-5.11.y took 89e5c58fc1e2"),
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


def test_every_switch_has_its_commit_release_row():
    # a switch added later must come with its commit and upstream release (and its backports researched)
    assert {c.switch for c in SWITCH_COMMITS} == set(KernelModel(name="x", release="x").switches())


@pytest.mark.parametrize("bad", ["", "linux", "5", "five.four"])
def test_unparsable_release_is_a_usage_error(runner, bad):
    with pytest.raises(ValueError, match="cannot parse kernel release"):
        resolve_kernel(bad)
    r = runner.invoke(main, [str(FIX_SAMPLE), "--kernel", bad])
    assert r.exit_code == 2 and "cannot parse kernel release" in r.output


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
