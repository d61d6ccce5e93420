"""kernel/banner.py and ``resolve_kernel``: Debian's ``uname -v`` / ``uname -rv`` / ``/proc/version`` and Ubuntu's
``/proc/version_signature``, which name the upstream stable release a distribution kernel is built from.

The strings follow the formats banner.py's docstring cites (Debian's debian/rules.real KBUILD_BUILD_VERSION_TIMESTAMP
"$(DISTRIBUTOR) $(SOURCEVERSION) ($(SOURCE_DATE_UTC_ISO))", Ubuntu's CONFIG_VERSION_SIGNATURE "Ubuntu
$(release)-$(revision)-$* $(raw_kernelversion)", init/version.c's linux_proc_banner); the /proc/version compiler
parts are those of Debian 11's gcc-10 and Ubuntu 20.04's gcc 9.3.0. Whether a kernel carries 89e5c58fc1e2 follows
stable.py STABLE_BACKPORTS: linux-5.10.y took it in 5.10.24 (09af4362ba47), linux-5.4.y in 5.4.106 (f2d78bbbca42),
linux-4.19.y in 4.19.181 (e5008f2e9157).
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import FIX_SAMPLE

from gro_replay.cli import main
from gro_replay.kernel.banner import MAX_LEN, parse_banner
from gro_replay.kernel.model import FIX_COMMIT
from gro_replay.kernel.release import resolve_kernel

DEB11_V = "#1 SMP Debian 5.10.162-1 (2023-01-21)"
DEB11_RV = "5.10.0-21-amd64 " + DEB11_V
DEB11_PROC = (
    "Linux version 5.10.0-21-amd64 (debian-kernel@lists.debian.org) (gcc-10 (Debian 10.2.1-6) 10.2.1 20210110, "
    "GNU ld (GNU Binutils for Debian) 2.35.2) " + DEB11_V
)
#: Debian 11's first kernel, 5.10.0-8 (package 5.10.46-4): past 5.10.24
DEB11_EARLY_RV = "5.10.0-8-amd64 #1 SMP Debian 5.10.46-4 (2021-08-03)"
#: a Debian 11 install-media kernel of before the backport (5.10.13, testing in February 2021)
DEB11_BEFORE_RV = "5.10.0-3-amd64 #1 SMP Debian 5.10.13-1 (2021-02-06)"
UBU2004_SIG = "Ubuntu 5.4.0-42.46-generic 5.4.44"  # lacks: 5.4.44 < 5.4.106
UBU2004_GA_SIG = "Ubuntu 5.4.0-26.30-generic 5.4.30"  # Ubuntu 20.04's release kernel: lacks
UBU2004_LATE_SIG = "Ubuntu 5.4.0-150.167-generic 5.4.233"  # carries (5.4.233 ≥ 5.4.106)
UBU2004_PROC = (
    "Linux version 5.4.0-42-generic (buildd@lgw01-amd64-039) (gcc version 9.3.0 (Ubuntu 9.3.0-10ubuntu2)) "
    "#46-Ubuntu SMP Fri Jul 10 00:24:02 UTC 2020"
)

#: (string, name in the outputs, vendor, vendor_base, carries 89e5c58fc1e2, its stable point release)
CASES = [
    # Debian 11: the three ways in, all on package 5.10.162-1
    (DEB11_V, "5.10.162-1", "Debian", "5.10.162", True, "5.10.24"),
    (DEB11_RV, "5.10.0-21-amd64", "Debian", "5.10.162", True, "5.10.24"),
    (DEB11_PROC, "5.10.0-21-amd64", "Debian", "5.10.162", True, "5.10.24"),
    (DEB11_EARLY_RV, "5.10.0-8-amd64", "Debian", "5.10.46", True, "5.10.24"),
    (DEB11_BEFORE_RV, "5.10.0-3-amd64", "Debian", "5.10.13", False, None),
    # Debian 10 (4.19.304 ≥ 4.19.181) and a 5.10 backport to it, Debian 12, Debian 13 (+deb13: the same X.Y.Z)
    (
        "4.19.0-26-amd64 #1 SMP Debian 4.19.304-1 (2024-01-09)",
        "4.19.0-26-amd64",
        "Debian",
        "4.19.304",
        True,
        "4.19.181",
    ),
    (
        "5.10.0-0.deb10.16-amd64 #1 SMP Debian 5.10.127-2~bpo10+1 (2022-07-28)",
        "5.10.0-0.deb10.16-amd64",
        "Debian",
        "5.10.127",
        True,
        "5.10.24",
    ),
    (
        "6.1.0-17-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.69-1 (2023-12-30)",
        "6.1.0-17-amd64",
        "Debian",
        "6.1.69",
        True,
        None,
    ),
    (
        "6.12.38+deb13-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.12.38-1 (2025-07-16)",
        "6.12.38+deb13-amd64",
        "Debian",
        "6.12.38",
        True,
        None,
    ),
    # Ubuntu 20.04: the signature names the stable release; uname -r is release-ABI-flavour
    (UBU2004_SIG, "5.4.0-42-generic", "Ubuntu", "5.4.44", False, None),
    (UBU2004_GA_SIG, "5.4.0-26-generic", "Ubuntu", "5.4.30", False, None),
    (UBU2004_LATE_SIG, "5.4.0-150-generic", "Ubuntu", "5.4.233", True, "5.4.106"),
    # Ubuntu's backport kernels (~20.04.1) and a cloud flavour
    ("Ubuntu 5.15.0-67.74~20.04.1-generic 5.15.85", "5.15.0-67-generic", "Ubuntu", "5.15.85", True, None),
    ("Ubuntu 5.4.0-1034.35-aws 5.4.150", "5.4.0-1034-aws", "Ubuntu", "5.4.150", True, "5.4.106"),
]


@pytest.mark.parametrize(
    ("text", "name", "vendor", "vendor_base", "carries", "point"), CASES, ids=[c[0] for c in CASES]
)
def test_a_string_naming_the_stable_release_resolves_to_it(text, name, vendor, vendor_base, carries, point):
    m = resolve_kernel(text)
    assert (m.name, m.release, m.vendor, m.vendor_base) == (name, name, vendor, vendor_base)
    assert m.carries(FIX_COMMIT) is carries
    assert (m.stable_backport(FIX_COMMIT) or (None, None))[1] == point
    # the vendor's own patches stay unknown: a lack of the fix is an assumption, a carried fix (from the stable
    # base) is known
    assert m.knows(FIX_COMMIT) is carries
    assert m.notes[0].startswith(f"{vendor}"), m.notes
    assert f"{vendor}'s own patches are not known here" in m.notes[0]
    assert m.notes[0].endswith(
        f"assumed upstream {vendor_base.rsplit('.', 1)[0]} with the stable backports of {vendor_base}"
    )


def test_the_three_ways_in_name_one_kernel():
    # Debian 11: uname -rv and /proc/version give one model; uname -v alone the same switches under the package
    # version's name (it has no uname -r)
    rv, proc, v = resolve_kernel(DEB11_RV), resolve_kernel(DEB11_PROC), resolve_kernel(DEB11_V)
    assert rv == proc
    assert v.switches() == rv.switches() and v.backports == rv.backports
    assert rv.notes[0] == (
        "Debian 11 kernel 5.10.0-21-amd64 (uname -v: Debian package 5.10.162-1): built from upstream 5.10.162; "
        "Debian's own patches are not known here; assumed upstream 5.10 with the stable backports of 5.10.162"
    )
    assert v.notes[0].startswith("Debian 11 kernel 5.10.162-1 (uname -v: Debian package 5.10.162-1)")
    # a backport's package version names its release
    d10 = resolve_kernel("#1 SMP Debian 5.10.127-2~bpo10+1 (2022-07-28)")
    assert d10.notes[0].startswith("Debian 10 backports kernel 5.10.127-2~bpo10+1 ")
    assert resolve_kernel(UBU2004_SIG).notes[0] == (
        "Ubuntu kernel 5.4.0-42-generic (/proc/version_signature: Ubuntu 5.4.0-42.46-generic 5.4.44): built from "
        "upstream 5.4.44; Ubuntu's own patches are not known here; assumed upstream 5.4 with the stable backports "
        "of 5.4.44"
    )


@pytest.mark.parametrize(
    "text",
    [
        UBU2004_PROC,  # Ubuntu's uname -v (#46-Ubuntu: the upload number) names no version
        "5.4.0-42-generic #46-Ubuntu SMP Fri Jul 10 00:24:02 UTC 2020",
        "Linux version 6.5.6-300.fc39.x86_64 (mockbuild@bkernel01.iad2.fedoraproject.org) (gcc (GCC) 13.2.1 "
        "20230918 (Red Hat 13.2.1-3), GNU ld version 2.40-13.fc39) #1 SMP PREEMPT_DYNAMIC Fri Oct  6 19:57:21 UTC 2023",
        "Linux version 5.14.0-362.8.1.el9_3.x86_64 (mockbuild@x64-builder02.almalinux.org) (gcc (GCC) 11.4.1 "
        "20230605 (Red Hat 11.4.1-2), GNU ld version 2.35.2-42.el9) #1 SMP PREEMPT_DYNAMIC Tue Nov 7 14:54:22 EST 2023",
        "5.10.24 #1 SMP Tue Mar 16 10:00:00 UTC 2021",
    ],
)
def test_a_proc_version_is_its_release_when_it_names_no_more(text):
    # the compiler's versions (9.3.0, 13.2.1, "Red Hat 13.2.1-3") are never read as the kernel's
    release = text.split()[2] if text.startswith("Linux version ") else text.split()[0]
    assert resolve_kernel(text) == resolve_kernel(release)


def test_debian_compiler_versions_in_proc_version_are_not_the_kernels():
    # "(Debian 10.2.1-6)" is gcc's package, inside the compiler's parentheses: without a uname -v version the
    # model is the release alone (plus the note that the #… part named no package)
    text = DEB11_PROC.replace(DEB11_V, "#1 SMP")
    m = resolve_kernel(text)
    assert m.vendor_base == "5.10" and not m.knows(FIX_COMMIT)
    assert m.notes[-1] == (
        "kernel 5.10.0-21-amd64: its uname -v '#1 SMP' names no Debian package version ('Debian X.Y.Z-N'), so its "
        "stable release stays unknown"
    )


@pytest.mark.parametrize(
    "version",
    [
        "#",
        "#1",
        "#1 SMP Debian",
        "#1 SMP Debian 2024_01_01 - Rockchip (0123abc)",  # Rockchip's KBUILD_BUILD_VERSION_TIMESTAMP
        "#1 SMP PREEMPT_DYNAMIC Debian 6.1.6",  # cut at 64 bytes (UTS_LEN) inside the version: no revision
        "#1 SMP Debian 5.10.0162-1 (2023-01-21)",  # a leading zero: no version
        "#1 SMP Debiann 5.10.162-1",
        "#((((",
    ],
)
def test_an_empty_or_garbage_version_part_adds_nothing(version):
    alone = resolve_kernel("5.10.0-21-amd64")
    m = resolve_kernel(f"5.10.0-21-amd64 {version}")
    assert m.switches() == alone.switches() and m.vendor_base == "5.10" and m.notes[0] == alone.notes[0]
    assert m.name == "5.10.0-21-amd64"


def test_a_version_differing_in_point_release_from_the_release_is_used_and_said():
    m = resolve_kernel("6.12.38+deb13-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.12.41-1 (2025-08-01)")
    assert m.vendor_base == "6.12.41"
    assert m.notes[0].endswith("(its release names 6.12.38; the version the build names is used)")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "5.10.0-21-amd64 #1 SMP Debian 6.1.55-1",
            "kernel string '5.10.0-21-amd64 #1 SMP Debian 6.1.55-1': its release 5.10.0-21-amd64 is 5.10 but its "
            "uname -v names Debian package 6.1.55-1 (6.1.55): two different kernels",
        ),
        (
            "Ubuntu 5.4.0-42.46-generic 5.10.44",
            "its release 5.4.0-42-generic is 5.4 but its /proc/version_signature names Ubuntu 5.4.0-42.46-generic "
            "5.10.44 (5.10.44): two different kernels",
        ),
        ("5.10.0-21-amd64 5.4.0-42-generic", "not uname -v's '#…'"),
        # uname -a: kernel name, host name, release, …: said as such (it read "after the release 'Linux'")
        (
            "Linux host 5.10.0-21-amd64 #1 SMP Debian 5.10.162-1 (2023-01-21) x86_64 GNU/Linux",
            "that is uname -a (it starts with the kernel name, then the host name); give uname -rv or /proc/version",
        ),
        ("#46-Ubuntu SMP Fri Jul 10 00:24:02 UTC 2020", "this uname -v names no release"),
        ("#1 SMP Debian 5.10.162-1 Debian 5.10.178-3", "names 2 Debian package versions"),
        (
            "Linux version 5.10.0-21-amd64 (gcc (Debian 10.2.1-6) #1 SMP",
            "a parenthesis of /proc/version does not close",
        ),
        ("Ubuntu 5.4.0-42-generic", "is no Ubuntu /proc/version_signature"),
        ("4.9.0-13-amd64 #1 SMP Debian 4.9.228-1 (2020-07-05)", "older than 4.18"),
        ("#1 SMP Debian 7.2.3-1 (2027-01-01)", "newer than 6.18"),
        ("5.10.0-21-amd64\n#1 SMP Debian 5.10.162-1", "has several lines"),
        ("5.10.0-21-amd64, #1 SMP Debian 5.10.162-1", "has a character no release string has"),
        ("x" * (MAX_LEN + 1), f"kernel string of {MAX_LEN + 1:,} characters is longer than any"),
        ("5.10.0-21-amd64 #" + "1" * 5000, "characters is longer than any"),
    ],
)
def test_odd_strings_are_one_line_errors(text, message):
    with pytest.raises(ValueError, match=None) as e:
        resolve_kernel(text)
    assert message in str(e.value) and "\n" not in str(e.value) and len(str(e.value)) < 400


def test_the_cli_refuses_them_in_one_line_exit_2():
    for text in ("5.10.0-21-amd64 #1 SMP Debian 6.1.55-1", "y" * 20000):
        r = CliRunner().invoke(main, [str(FIX_SAMPLE), "--kernel", text, "-q"])
        assert r.exit_code == 2, r.output
        assert "Traceback" not in r.output and len(r.output.strip().splitlines()) <= 3
    r = CliRunner().invoke(
        main, [str(FIX_SAMPLE), "--kernel", "5.10.0-21-amd64 #1 SMP Debian 6.1.55-1", "-q"]
    )
    assert "5.10.0-21-amd64 is 5.10 but its uname -v names Debian package 6.1.55-1 (6.1.55)" in r.output


def test_two_strings_of_one_kernel_are_refused():
    r = CliRunner().invoke(main, [str(FIX_SAMPLE), "--kernel", "5.10.0-21-amd64", "--kernel", DEB11_RV, "-q"])
    assert r.exit_code == 2 and "both name kernel 5.10.0-21-amd64: give each kernel once" in r.output


@pytest.mark.parametrize(
    ("first", "second", "model"),
    [
        # Ubuntu 21.04's 5.11.0-16-generic names no stable release: upstream 5.11 (8dc1c444df19, v5.11), as 5.11 is
        (
            "5.11",
            "5.11.0-16-generic",
            "modelled commits on: 8dc1c444df19, b723748750ec, 2867e1eac610, 0780b4145634; the other 14 off",
        ),
        # 89e5c58fc1e2 landed in v5.12-rc2 (model.py SWITCH_COMMITS): 5.12-rc2 carries every modelled commit of 5.12
        (
            "5.12-rc2",
            "5.12",
            "modelled commits on: 89e5c58fc1e2, 8dc1c444df19, b723748750ec, 2867e1eac610, 0780b4145634; the other 13 off",
        ),
        # 5.12-rc1 lacks it: the model of 5.11
        (
            "5.11",
            "5.12-rc1",
            "modelled commits on: 8dc1c444df19, b723748750ec, 2867e1eac610, 0780b4145634; the other 14 off",
        ),
        # RHEL 8's 4.18 base runs as the 4.19 model; 4.19 to 5.10 have every modelled commit off
        ("4.18.0-305.el8", "5.4", "every modelled commit off"),
        # no stable backport of a modelled commit before 5.4.41 (b723748750ec, STABLE_BACKPORTS)
        ("5.4", "5.4.40", "every modelled commit off"),
        # 5.10.24 took 89e5c58fc1e2 (09af4362ba47) after 8dc1c444df19 (5.10.17), 5.11.7 took it (9b815b6efaf8) on 5.11,
        # whose 0780b4145634 (v5.11-rc1) changes no count: named as the one commit they differ in
        (
            "5.10.24",
            "5.11.7",
            "modelled commits on: 89e5c58fc1e2, 8dc1c444df19, b723748750ec, 2867e1eac610; the other 13 off; they "
            "differ in 0780b4145634, but it changes only how an ECN mark writes an IPv4 header checksum that sums "
            "to 0xFFFF",
        ),
        # Ubuntu 20.04's uname -r names no stable release: upstream 5.4 assumed, the model of 5.4...
        ("5.4.0-42-generic", "5.4", "every modelled commit off"),
        # ...while Debian 11's uname -rv names 5.10.162: the model of 5.10.24
        (
            DEB11_RV,
            "5.10.24",
            "modelled commits on: 89e5c58fc1e2, 8dc1c444df19, b723748750ec, 2867e1eac610; the other 14 off",
        ),
    ],
)
def test_two_strings_of_one_kernel_model_are_refused(first, second, model):
    """Two --kernel strings whose models have the same switches (KernelModel.switches: all the simulation reads of a
    kernel), but those that change no count (model.BYTES_ONLY_SWITCHES), would compare a model with itself: one line,
    exit 2, naming both strings, the switches they share and any they differ in that change no count; the same with
    a third kernel beside them."""
    for extra in ([], ["--kernel", "6.18"]):
        r = CliRunner().invoke(main, [str(FIX_SAMPLE), "--kernel", first, "--kernel", second, *extra, "-q"])
        assert r.exit_code == 2, r.output
        (line,) = r.output.strip().splitlines()
        assert line == (
            f"Error: --kernel {first[:47] + '…' if len(first) > 48 else first!r} and --kernel {second!r} run one "
            f"kernel model ({model}): compared with itself it shows no difference; give one of them, or kernels "
            "that differ in a modelled commit (gro-replay kernels --kernel … shows each one's switches)"
        )


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("5.11", "5.11.7"),  # 5.11.7 adds 89e5c58fc1e2 (9b815b6efaf8)
        ("5.10", "5.10.17"),  # 5.10.17 adds 8dc1c444df19 (9e6ce473e96b)
        (
            "5.4.0-42-generic",
            UBU2004_LATE_SIG,
        ),  # 5.4.233: 8dc1c444df19 and 89e5c58fc1e2 since 5.4.99 / 5.4.106
        ("6.1", "6.1.7"),  # 6.1.7 adds 7871f54e3dee (0b1605e45c36)
    ],
)
def test_strings_of_models_that_differ_in_a_switch_are_compared(first, second):
    r = CliRunner().invoke(
        main, [str(FIX_SAMPLE), "--kernel", first, "--kernel", second, "--format", "json", "-q"]
    )
    assert r.exit_code == 0, r.output
    a, b = (k["switches"] for k in json.loads(r.output)["config"]["kernels"])
    assert a != b


def _run(*kernels: str) -> dict:
    args = [str(FIX_SAMPLE)]
    for k in kernels:
        args += ["--kernel", k]
    r = CliRunner().invoke(main, [*args, "--format", "json", "-q"])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def _summary_fields(summary: str) -> dict[str, str]:
    # README: split on spaces, then on the first "="
    assert summary.startswith("SUMMARY ")
    return dict(tok.split("=", 1) for tok in summary.split()[1:])


@pytest.mark.parametrize("text", [DEB11_V, DEB11_RV, DEB11_PROC])
def test_cli_debian_11_carries_the_fix_through_5_10_24(text):
    # FIX_SAMPLE: 17 frames of one zero-csum VXLAN TCP flow; with the fix they merge into 2 phys skbs
    doc = _run(text)
    (k,) = doc["config"]["kernels"]
    name = "5.10.162-1" if text == DEB11_V else "5.10.0-21-amd64"
    assert (k["name"], k["vendor"], k["vendor_base"], k["base"]) == (name, "Debian", "5.10.162", "5.10")
    fix = k[f"fix_{FIX_COMMIT}"]
    assert (fix["carried"], fix["known"], fix["via"], fix["point_release"]) == (
        True,
        True,
        "stable",
        "5.10.24",
    )
    assert fix["stable_commit"].startswith("09af4362ba47")
    assert k["notes"][0].startswith(
        (
            "Debian 11 kernel 5.10.0-21-amd64 (uname -v: Debian package 5.10.162-1)",
            "Debian 11 kernel 5.10.162-1 (uname -v: Debian package 5.10.162-1)",
        )
    )
    assert doc["verdict"]["fix_assumed_lacking"] == []
    f = _summary_fields(doc["summary"])
    assert f["kernel"] == name and f["phys_skbs"] == "2" and f["affected_flows"] == "0"
    assert "fix_assumed_lacking" not in f


@pytest.mark.parametrize(
    ("text", "name", "lacks"),
    [
        (UBU2004_GA_SIG, "5.4.0-26-generic", True),
        (UBU2004_SIG, "5.4.0-42-generic", True),
        (UBU2004_LATE_SIG, "5.4.0-150-generic", False),
    ],
)
def test_cli_ubuntu_20_04_by_its_signature(text, name, lacks):
    doc = _run(text)
    (k,) = doc["config"]["kernels"]
    assert (k["name"], k["vendor"]) == (name, "Ubuntu")
    assert k[f"fix_{FIX_COMMIT}"]["carried"] is not lacks and k[f"fix_{FIX_COMMIT}"]["known"] is not lacks
    f = _summary_fields(doc["summary"])
    assert f["kernel"] == name
    assert f["phys_skbs"] == ("17" if lacks else "2")
    assert f.get("fix_assumed_lacking") == (name if lacks else None)
    assert doc["verdict"]["fix_assumed_lacking"] == ([name] if lacks else [])


def test_cli_text_report_and_summary_of_two_such_kernels_stay_parseable():
    r = CliRunner().invoke(
        main, [str(FIX_SAMPLE), "--poll", "gap:5", "--kernel", UBU2004_GA_SIG, "--kernel", DEB11_PROC]
    )
    assert r.exit_code == 0, r.output
    out = r.output
    assert (
        "kernel 5.10.0-21-amd64: assumed upstream 5.10 with the stable backports of 5.10.162: 89e5c58fc1e2 as "
        in out
    )
    assert (
        "kernel 5.4.0-26-generic: assumed upstream 5.4 with the stable backports of 5.4.30: no known backport of a"
        in out
    )
    assert "5.10.0-21-amd64 has the fix (stable backport 09af4362ba47, since 5.10.24)" in out
    (summary,) = [line for line in out.splitlines() if line.startswith("SUMMARY ")]
    f = _summary_fields(summary)
    assert f["kernels"] == "5.4.0-26-generic,5.10.0-21-amd64"  # by release, oldest first
    assert f["kernel[5.4.0-26-generic].phys_skbs"] == "17" and f["kernel[5.10.0-21-amd64].phys_skbs"] == "2"
    assert f["fix_assumed_lacking"] == "5.4.0-26-generic"


def test_parse_banner_parts():
    b = parse_banner(DEB11_PROC)
    assert (b.kind, b.release, b.name, b.version_part) == (
        "/proc/version",
        "5.10.0-21-amd64",
        "5.10.0-21-amd64",
        DEB11_V,
    )
    assert b.stated is not None and (b.stated.version, b.stated.who) == ("5.10.162", "Debian 11")
    s = parse_banner("#1 SMP PREEMPT Debian 1:6.1.63-1+rpt1 (2023-11-24)")  # an epoch (Raspberry Pi OS)
    assert s.name == "6.1.63-1+rpt1" and s.stated is not None and s.stated.version == "6.1.63"
    rc = resolve_kernel("Ubuntu 6.8.0-0.1-generic 6.8.0-rc4")  # a development kernel: its rc
    assert rc.pre_release == "6.8-rc4" and rc.vendor == "Ubuntu" and rc.name == "6.8.0-0-generic"


def test_whose_kernel_a_string_names():
    # a signature is Ubuntu's whatever its flavour; a Debian package version on a release string of another
    # grammar (Raspberry Pi OS rebuilds Debian's packaging) gives the stable base, the release's vendor stays
    odd = resolve_kernel("Ubuntu 5.15.0-1034.38-newflavour 5.15.94")
    assert (odd.name, odd.vendor, odd.vendor_base) == ("5.15.0-1034-newflavour", "Ubuntu", "5.15.94")
    assert odd.notes[0].startswith("Ubuntu kernel 5.15.0-1034-newflavour (/proc/version_signature: ")
    rpi = resolve_kernel("6.1.0-rpi7-rpi-v8 #1 SMP PREEMPT Debian 1:6.1.63-1+rpt1 (2023-11-24)")
    assert (rpi.name, rpi.vendor, rpi.vendor_base) == ("6.1.0-rpi7-rpi-v8", "the distribution", "6.1.63")
    assert rpi.notes[0].startswith(
        "kernel 6.1.0-rpi7-rpi-v8 (uname -v: Debian package 6.1.63-1+rpt1): built from "
    )
    # an upstream release string with Debian's uname -v: Debian built it
    assert resolve_kernel("5.10.162 #1 SMP Debian 5.10.162-1 (2023-01-21)").vendor == "Debian"


def test_kernels_are_ordered_by_the_release_their_string_names():
    """Every output orders kernels oldest first (report/verdict/facts.py ``release_order``) by the release the
    string names, not by its name: Debian's 5.10.0-21-amd64 built from 5.10.162 comes after 5.10.20 (the table's
    Δ then reads 5.10.20 → 5.10.162, not backwards), a Debian 5.12~rc2 package after 5.4 and between 5.11.22
    and 5.12 (a release candidate precedes its release)."""
    from gro_replay.report.verdict import release_order

    debian = resolve_kernel("5.10.0-21-amd64 #1 SMP Debian 5.10.162-1 (2023-01-21)")
    rc = resolve_kernel("#1 SMP Debian 5.12~rc2-1~exp1 (2021-03-10)")
    order = [resolve_kernel(t) for t in ("5.4", "5.10.20", "5.11.22", "5.12")] + [debian, rc]
    assert [m.name for m in sorted(order, key=release_order)] == [
        "5.4",
        "5.10.20",
        "5.10.0-21-amd64",
        "5.11.22",
        "5.12~rc2-1~exp1",
        "post-fix",
    ]
    for pair, names in (
        (["5.10.0-21-amd64 #1 SMP Debian 5.10.162-1 (2023-01-21)", "5.10.20"], "5.10.20,5.10.0-21-amd64"),
        (["#1 SMP Debian 5.12~rc2-1~exp1 (2021-03-10)", "5.4"], "5.4,5.12~rc2-1~exp1"),
    ):
        args = [str(FIX_SAMPLE), "-q", "--no-hist"] + [a for k in pair for a in ("--kernel", k)]
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 0, r.output
        assert f"SUMMARY kernels={names} " in r.stdout


def test_a_release_candidate_and_a_package_of_another_rc_are_two_kernels():
    """A uname -r of 5.12-rc1 with a uname -v naming Debian's 5.12~rc2 package names two kernels: refused as a
    release and a version of different X.Y are (exit 2, one line), not run as rc2 — which carries 89e5c58fc1e2
    (v5.12-rc2) where rc1 lacks it. The same rc in both is one kernel, with the fix."""
    bad = "5.12.0-rc1-amd64 #1 SMP Debian 5.12~rc2-1~exp1 (2021-03-10)"
    with pytest.raises(
        ValueError, match=r"is 5\.12-rc1 but its uname -v names .*\(5\.12-rc2\): two different kernels"
    ):
        resolve_kernel(bad)
    r = CliRunner().invoke(main, [str(FIX_SAMPLE), "--kernel", bad])
    assert r.exit_code == 2 and "Traceback" not in r.output and "two different kernels" in r.output
    good = resolve_kernel("5.12.0-rc2-amd64 #1 SMP Debian 5.12~rc2-1~exp1 (2021-03-10)")
    assert good.pre_release == "5.12-rc2" and good.udp_tunnel_gate_checks_uh_check


def test_a_distribution_build_of_a_release_candidate_is_named_as_that_rc():
    """Debian's experimental 5.12~rc1 package (uname -r 5.12.0-rc1-amd64) is built from upstream 5.12-rc1, which
    lacks 89e5c58fc1e2 (merged for v5.12-rc2). Its kernel line and the verdict named the base "upstream 5.12"
    (which carries the fix) beside a verdict that it lacks it; both now name 5.12-rc1."""
    text = "5.12.0-rc1-amd64 #1 SMP Debian 5.12~rc1-1~exp1 (2021-03-01)"
    m = resolve_kernel(text)
    assert (m.pre_release, m.vendor_base, m.udp_tunnel_gate_checks_uh_check) == ("5.12-rc1", "5.12", False)
    r = CliRunner().invoke(main, [str(FIX_SAMPLE), "--kernel", text])
    assert r.exit_code == 0, r.output
    assert (
        "kernel 5.12.0-rc1-amd64: assumed upstream 5.12-rc1 (a release candidate: the commits merged by rc1, not "
        "89e5c58fc1e2 of a later rc, which 5.12 carries)\n"
    ) in r.stdout
    assert (
        "5.12.0-rc1-amd64, assumed an upstream 5.12-rc1 base, lacks 89e5c58fc1e2 unless Debian backported"
        in (r.stdout)
    )
    assert "upstream 5.12 " not in r.stdout and "upstream 5.12 base" not in r.stdout


@pytest.mark.parametrize(
    ("text", "line"),
    [
        # 4.18 runs as the 4.19 model (one GRO list, not modelled): the banner was compared with the profile run,
        # "its release 4.18.5 is 4.19 but its uname -v names Debian package 4.18.5-1 (4.18.5): two different
        # kernels", and refused
        (
            "4.18.5 #1 SMP Debian 4.18.5-1",
            "kernel 4.18.5 (v4.18.5): assumed upstream 4.18 with the stable backports of 4.18.5: no backport of a modelled "
            "commit, run as the upstream 4.19 model",
        ),
        (
            "4.18.0-rc3-amd64 #1 SMP Debian 4.18~rc3-1~exp1 (2018-09-10)",
            "kernel 4.18.0-rc3-amd64: assumed upstream 4.18-rc3 (a release candidate: the commits merged by rc3; no "
            "modelled commit of 4.18 is known to have landed after rc3), run as the upstream 4.19 model",
        ),
        # Debian's last 4.18 package: its stable point release was said as "without stable backports"; 4.18.20
        # carries the 4.18.y backports, none of a commit modelled here (89e5c58fc1e2 came in 2021, after 4.18.y)
        (
            "4.18.0-3-amd64 #1 SMP Debian 4.18.20-2 (2018-11-23)",
            "kernel 4.18.0-3-amd64: assumed upstream 4.18 with the stable backports of 4.18.20: no backport of a modelled "
            "commit, run as the upstream 4.19 model",
        ),
    ],
)
def test_a_banner_of_a_release_run_as_another_profile_is_one_kernel(text, line):
    r = CliRunner().invoke(main, [str(FIX_SAMPLE), "--kernel", text])
    assert r.exit_code == 0, r.output
    assert line + "\n" in r.stdout
    # a real mismatch of X.Y is still two kernels
    bad = text.replace("Debian 4.18", "Debian 4.19")
    r = CliRunner().invoke(main, [str(FIX_SAMPLE), "--kernel", bad])
    assert r.exit_code == 2 and "is 4.18 but its uname -v names Debian package 4.19" in r.output


@pytest.mark.parametrize(
    "text",
    [
        "5.10.30 #1 SMP Debian 5.10.30~rc1-1",
        "5.10.0-30-amd64 #1 SMP Debian 5.10.30~rc1-1",
        "Ubuntu 5.10.0-30.31-generic 5.10.30-rc1",
    ],
)
def test_a_stable_release_candidate_in_a_banner_is_a_build_of_its_release(text):
    """A package of 5.10.30-rc1 (a stable rc: 5.10.29 and the queue of 5.10.30) was read as the mainline 5.10-rc1:
    "assumed upstream 5.10-rc1", without the 5.10.y backports, so a kernel carrying 89e5c58fc1e2 (linux-5.10.y
    since 5.10.24, as 09af4362ba47) was said to lack it (breaker's finding). It is a build of 5.10.30, as
    ``--kernel 5.10.30-rc1`` is."""
    m, plain = resolve_kernel(text), resolve_kernel("5.10.30-rc1")
    assert m.switches() == plain.switches() and m.backports == plain.backports and m.vendor_base == "5.10.30"
    assert m.pre_release == "" and m.udp_tunnel_gate_checks_uh_check
    assert m.stable_backport(FIX_COMMIT) == ("09af4362ba47c805347840c2bb9719c0458925ca", "5.10.24")
    assert "built from upstream 5.10.30-rc1;" in m.notes[0] and m.notes[0].endswith(
        "assumed upstream 5.10 with the stable backports of 5.10.30"
    )


def test_a_stable_release_candidate_past_an_ended_branch_and_of_another_release_are_refused():
    with pytest.raises(
        ValueError, match="linux-4.18.y ended with 4.18.20 in November 2018, so there is no 4.18.25"
    ):
        resolve_kernel("4.18.0-1-amd64 #1 SMP Debian 4.18.25~rc1-1")
    with pytest.raises(
        ValueError,
        match=r"is 5\.12-rc1 but its uname -v names Debian package 5\.12\.1~rc1-1 \(5\.12\.1-rc1\): two",
    ):
        resolve_kernel("5.12.0-rc1-amd64 #1 SMP Debian 5.12.1~rc1-1")


@pytest.mark.parametrize(
    ("text", "assumed"),
    [
        # a build past an rc's tag (setlocalversion's "+", a distribution's snapshot of rc1): its note says what it
        # adds is not known, and 89e5c58fc1e2 landed in the next rc: its lack is assumed (breaker's finding: the
        # verdict said flatly "lacks 89e5c58fc1e2 … and is affected")
        ("5.12-rc1+", True),
        ("5.12.0-rc1-amd64", True),
        ("5.12.0-0.rc1.161.fc35.x86_64", True),
        ("4.18.0-0.rc3.el8.x86_64", True),
        ("5.12-rc1", False),  # the tag itself: its commits are known
    ],
)
def test_a_build_past_a_release_candidate_lacks_the_fix_by_assumption(text, assumed):
    r = CliRunner().invoke(main, [str(FIX_SAMPLE), "--kernel", text, "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["verdict"]["fix_assumed_lacking"] == ([text] if assumed else [])
    words = f"{text}, assumed an upstream {text.split('.')[0]}.{text.split('.')[1][:2]}-rc"
    assert (words in doc["verdict"]["text"]) == assumed
