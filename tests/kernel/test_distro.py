"""kernel/distro.py: which distribution a ``uname -r`` string belongs to, and the upstream release it names.

The strings are the release strings those distributions' kernels print (``uname -r``), one per grammar and
flavour family. Expected values follow each distribution's naming (kernel/distro.py docstring): Debian up to 12
and Ubuntu keep ``X.Y.0`` and number builds by ABI (their strings name no stable release), the others name the
upstream point release their source started from, and Ubuntu's mainline builds are upstream releases. What a
resolved kernel carries follows stable.py ``STABLE_BACKPORTS`` (89e5c58fc1e2: 5.4.106, 5.10.24, 5.11.7).
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from conftest import FIX_SAMPLE

from gro_replay.cli import main
from gro_replay.kernel.distro import parse_distro_release
from gro_replay.kernel.model import FIX_COMMIT
from gro_replay.kernel.release import resolve_kernel

#: (uname -r, vendor, note prefix, upstream base run, stable point applied or 0)
RELEASES = [
    # Debian 10/11/12: X.Y.0-ABI-<architecture flavour>; backports 0.debNN / 0.bpo; Debian 13: X.Y.Z+debNN
    ("4.19.0-25-amd64", "Debian", "Debian 10 kernel 4.19.0-25-amd64", "4.19", 0),
    ("5.10.0-21-amd64", "Debian", "Debian 11 kernel 5.10.0-21-amd64", "5.10", 0),
    ("5.10.0-28-arm64", "Debian", "Debian 11 kernel 5.10.0-28-arm64", "5.10", 0),
    ("5.10.0-9-686-pae", "Debian", "Debian 11 kernel 5.10.0-9-686-pae", "5.10", 0),
    ("6.1.0-13-amd64", "Debian", "Debian 12 kernel 6.1.0-13-amd64", "6.1", 0),
    ("6.1.0-18-cloud-amd64", "Debian", "Debian 12 kernel 6.1.0-18-cloud-amd64", "6.1", 0),
    ("6.1.0-21-rt-arm64", "Debian", "Debian 12 kernel 6.1.0-21-rt-arm64", "6.1", 0),
    ("6.1.0-0.deb11.13-amd64", "Debian", "Debian 11 backports kernel 6.1.0-0.deb11.13-amd64", "6.1", 0),
    ("5.10.0-0.bpo.15-amd64", "Debian", "Debian backports kernel 5.10.0-0.bpo.15-amd64", "5.10", 0),
    ("6.12.38+deb13-amd64", "Debian", "Debian 13 kernel 6.12.38+deb13-amd64", "6.12", 38),
    ("6.12.12+bpo-amd64", "Debian", "Debian backports kernel 6.12.12+bpo-amd64", "6.12", 12),
    # Ubuntu: X.Y.0-ABI-<Ubuntu flavour>
    ("5.4.0-42-generic", "Ubuntu", "Ubuntu kernel 5.4.0-42-generic", "5.4", 0),
    ("5.15.0-91-lowlatency", "Ubuntu", "Ubuntu kernel 5.15.0-91-lowlatency", "5.15", 0),
    ("5.15.0-1034-aws", "Ubuntu", "Ubuntu kernel 5.15.0-1034-aws", "5.15", 0),
    ("5.15.0-1052-azure", "Ubuntu", "Ubuntu kernel 5.15.0-1052-azure", "5.15", 0),
    ("6.8.0-1008-raspi", "Ubuntu", "Ubuntu kernel 6.8.0-1008-raspi", "6.8", 0),
    ("5.15.0-60-generic-64k", "Ubuntu", "Ubuntu kernel 5.15.0-60-generic-64k", "5.15", 0),
    # Proxmox VE (from Ubuntu's kernel, named by its upstream point release)
    ("6.8.12-4-pve", "Proxmox", "Proxmox VE kernel 6.8.12-4-pve", "6.8", 12),
    # Red Hat and its rebuilds: X.Y.Z-REL.elN[_M][.arch]; Oracle's UEK: .elNuek
    ("4.18.0-305.el8", "Red Hat", "RHEL 8 kernel 4.18.0-305.el8", "4.19", 0),
    ("5.14.0-362.8.1.el9_3.x86_64", "Red Hat", "RHEL 9 kernel 5.14.0-362.8.1.el9_3.x86_64", "5.14", 0),
    (
        "5.15.0-200.131.27.el9uek.x86_64",
        "Oracle",
        "Oracle UEK kernel 5.15.0-200.131.27.el9uek.x86_64",
        "5.15",
        0,
    ),
    (
        "5.4.17-2136.330.7.1.el8uek.x86_64",
        "Oracle",
        "Oracle UEK kernel 5.4.17-2136.330.7.1.el8uek",
        "5.4",
        17,
    ),
    # Fedora, Amazon Linux, Arch: the upstream point release, then the distribution's release
    ("6.5.6-300.fc39.x86_64", "Fedora", "Fedora 39 kernel 6.5.6-300.fc39.x86_64", "6.5", 6),
    ("5.10.205-195.807.amzn2.x86_64", "Amazon", "Amazon Linux 2 kernel 5.10.205-195.807.amzn2", "5.10", 205),
    ("6.1.66-91.160.amzn2023.x86_64", "Amazon", "Amazon Linux 2023 kernel 6.1.66-91.160.amzn2023", "6.1", 66),
    ("6.6.7-arch1-1", "Arch Linux", "Arch Linux kernel 6.6.7-arch1-1", "6.6", 7),
    # SUSE: X.Y.Z-REL-<SUSE flavour> (SLES/Leap 15: 150500.…; Tumbleweed: a plain build number)
    ("5.14.21-150500.55.39-default", "SUSE", "SUSE kernel 5.14.21-150500.55.39-default", "5.14", 21),
    ("6.4.0-150600.23.25-azure", "SUSE", "SUSE kernel 6.4.0-150600.23.25-azure", "6.4", 0),
    ("5.3.18-22-default", "SUSE", "SUSE kernel 5.3.18-22-default", "5.3", 18),
    ("6.6.1-1-default", "SUSE", "SUSE kernel 6.6.1-1-default", "6.6", 1),
    # suffixes no rule knows (Arch's linux-lts and Alpine share X.Y.Z-N-lts): nobody is named
    (
        "6.1.69-1-lts",
        "the distribution",
        "kernel 6.1.69-1-lts: the distribution's or build's own patches",
        "6.1",
        69,
    ),
    ("5.15.143-0-virt", "the distribution", "kernel 5.15.143-0-virt: the distribution's", "5.15", 143),
]


@pytest.mark.parametrize(("text", "vendor", "note", "base", "point"), RELEASES, ids=[r[0] for r in RELEASES])
def test_release_string_names_its_distribution(text, vendor, note, base, point):
    m = resolve_kernel(text)
    assert m.vendor == vendor
    assert m.notes[0].startswith(note), m.notes
    assert m.base == base
    # the base the vendor's version names: X.Y, or X.Y.Z where the string names a stable release
    stated = text.split("-")[0].split("+")[0]
    x_y = ".".join(stated.split(".")[:2])
    assert m.vendor_base == (f"{x_y}.{point}" if point else x_y)
    assert ("with the stable backports of " + f"{x_y}.{point}" in m.notes[0]) == bool(point)


def test_debian_release_strings_are_not_ubuntu():
    # the reported fault: 5.10.0-21-amd64 (Debian 11) was labelled Ubuntu; Ubuntu has no amd64 flavour and Debian
    # no generic one
    assert resolve_kernel("5.10.0-21-amd64").vendor == "Debian"
    assert resolve_kernel("5.10.0-21-generic").vendor == "Ubuntu"
    # an unknown flavour on the same shape names nobody
    assert resolve_kernel("5.10.0-21-foo").vendor == "the distribution"


@pytest.mark.parametrize(
    ("text", "carries", "point"),
    [
        ("5.11.7-051107-generic", True, "5.11.7"),  # 5.11.y took 89e5c58fc1e2 in 5.11.7 (9b815b6efaf8)
        ("5.11.6-051106-generic", False, None),
        ("5.4.224-0504224-generic", True, "5.4.106"),  # three digits of point release: 0504224
    ],
)
def test_ubuntu_mainline_builds_are_upstream_stable_releases(text, carries, point):
    m = resolve_kernel(text)
    assert m.vendor == "" and m.carries(FIX_COMMIT) is carries
    assert (m.stable_backport(FIX_COMMIT) or (None, None))[1] == point
    assert m.notes[0].startswith(f"kernel {text}: Ubuntu's mainline build of upstream {text.split('-')[0]}")


def test_ubuntu_mainline_shape_with_a_foreign_abi_is_plain_ubuntu():
    # an ABI that is not the version's own 0XXYYZZ digits is an ordinary Ubuntu build number
    d = parse_distro_release("5.15.0-105100-generic")
    assert d is not None and d.vendor == "Ubuntu" and d.point == 0


def test_non_distribution_strings_are_left_to_the_caller():
    for text in ("5.10", "5.10.24", "5.12.0-rc1", "5.15.84-v8+"):
        assert parse_distro_release(text) is None


def test_report_names_debian_and_its_assumption():
    r = CliRunner().invoke(main, [str(FIX_SAMPLE), "--poll", "gap:5", "--kernel", "5.10.0-21-amd64"])
    assert r.exit_code == 0, r.output
    assert "note: Debian 11 kernel 5.10.0-21-amd64: the ABI number 21" in r.output
    assert "Ubuntu" not in r.output
    assert "lacks 89e5c58fc1e2 unless Debian backported it" in r.output


def test_an_assumed_lack_of_the_fix_is_said_in_json_and_summary_too():
    # Debian 11's 5.10.0-21-amd64 names no stable release: the model runs its upstream base 5.10.0, which lacks
    # 89e5c58fc1e2 (linux-5.10.y took it in 5.10.24), so its 17 refusals hold only if Debian did not backport it;
    # the JSON verdict, explain and both SUMMARY lines say that the lack is assumed, not only the sentence.
    # An upstream point release after the backport (5.10.30) and a Debian base past it (6.1) assume nothing.
    import json

    for kernels, assumed in (
        (["--kernel", "5.10.0-21-amd64"], ["5.10.0-21-amd64"]),
        (["--kernel", "5.10.0-21-amd64", "--kernel", "5.12"], ["5.10.0-21-amd64"]),
        (["--kernel", "5.10.30"], []),
        (["--kernel", "6.1.0-13-amd64"], []),
    ):
        r = CliRunner().invoke(main, [str(FIX_SAMPLE), *kernels, "--format", "json", "-q"])
        assert r.exit_code == 0, r.output
        doc = json.loads(r.output)
        assert doc["verdict"]["fix_assumed_lacking"] == assumed
        assert [not k["fix_89e5c58fc1e2"]["known"] for k in doc["config"]["kernels"]].count(True) == len(
            assumed
        )
        token = f" fix_assumed_lacking={','.join(assumed)}"
        assert doc["summary"].endswith(token) if assumed else "fix_assumed_lacking" not in doc["summary"]
        r = CliRunner().invoke(main, ["explain", str(FIX_SAMPLE), *kernels, "--format", "json", "-q"])
        assert r.exit_code == 0, r.output
        ex = json.loads(r.output)
        assert ex["verdict"]["fix_assumed_lacking"] == assumed
        assert ex["summary"].endswith(token) if assumed else "fix_assumed_lacking" not in ex["summary"]


@pytest.mark.parametrize("text", ["5.4.0-42-generic,5.10.0-21-amd64", "5.10.0-21-amd64]", "5.10=x", "6.1[0]"])
def test_a_release_with_a_character_no_uname_has_is_refused(text):
    # uname -r holds letters, digits and . _ + ~ - (utsname.release, a build's LOCALVERSION); a comma or a bracket
    # would also make the SUMMARY line's kernels=A,B and kernel[NAME]. keys ambiguous
    with pytest.raises(ValueError, match="has a character no release string has"):
        resolve_kernel(text)
    r = CliRunner().invoke(main, [str(FIX_SAMPLE), "--kernel", text])
    assert r.exit_code == 2 and "has a character no release string has" in r.output
    for ok in ("5.15.84-v8+", "6.1.0-rc1~exp1", "5.10.0-21-cloud_amd64"):
        resolve_kernel(ok)


RHEL8_ASSUMED = (
    "4.18.0-305.el8, assumed an upstream 4.18 base, run as the upstream 4.19 model, lacks 89e5c58fc1e2 unless Red "
    "Hat backported it; what follows assumes Red Hat did not"
)


@pytest.mark.parametrize(
    ("kernels", "head", "assumed"),
    [
        # RHEL 8's 4.18.0-305.el8 names no stable release: upstream 4.18 (run as the 4.19 model) lacks the fix
        (["4.18.0-305.el8", "6.18"], "", RHEL8_ASSUMED),
        # Debian 11's uname -r: upstream 5.10, whose stable branch took the fix in 5.10.24 (stable.py STABLE_BACKPORTS)
        (
            ["5.10.0-21-amd64", "5.12"],
            "",
            "5.10.0-21-amd64, assumed an upstream 5.10 base, lacks 89e5c58fc1e2 unless Debian backported it "
            "(linux-5.10.y carries it since 5.10.24, as 09af4362ba47); what follows assumes Debian did not",
        ),
        # three kernels: the pair compared is the newest without the fix and the oldest with it
        (
            ["4.18.0-305.el8", "5.12", "6.18"],
            "Compared for the fix: 4.18.0-305.el8, assumed without it, and post-fix (v5.12), with it. ",
            RHEL8_ASSUMED,
        ),
        # the assumed kernel is not the one compared (5.11 is newer, its lack of the fix a fact): no assumption
        (
            ["4.18.0-305.el8", "5.11", "6.18"],
            "Compared for the fix: pre-fix (v5.11), without it, and 6.18 (v6.18), with it. ",
            "",
        ),
        # Debian's uname -rv names 5.10.162, which carries the fix (5.10.24): 5.10's lack of it is known
        (["5.10", "5.10.0-21-amd64 #1 SMP Debian 5.10.162-1 (2023-01-21)"], "", ""),
    ],
)
def test_compare_mode_says_the_lack_of_the_fix_is_assumed_where_the_json_does(kernels, head, assumed):
    # the verdict sentence reads the fact the JSON prints (verdict.fix_assumed_lacking, KernelModel.knows): the
    # kernel compared without the fix lacks it by assumption exactly when its sentence says so, and then every
    # claim after it (17 frames refused by the pre-fix gate, 15 skbs saved) holds only if the vendor did not
    # backport 89e5c58fc1e2; explain's per-flow verdict says it too
    import json

    args = [a for k in kernels for a in ("--kernel", k)]
    r = CliRunner().invoke(main, [str(FIX_SAMPLE), *args, "--format", "json", "-q"])
    assert r.exit_code == 0, r.output
    v = json.loads(r.output)["verdict"]
    lead = f"{assumed}. " if assumed else ""
    assert v["text"].startswith(f"{head}{lead}"), v["text"]
    rest = v["text"][len(head + lead) :]
    # where the compared kernels differ in other modelled commits too, what the fix saves is measured on the one
    # without it with the fix alone applied, and the sentence says so first (verdict.compared.fix_alone)
    alone = v["compared"]["fix_alone"]
    if alone:
        pre = v["compared"]["without_fix"]
        assert rest.startswith(
            f"What the fix saves is measured on {pre} with only 89e5c58fc1e2 applied ({alone}, run beside it)"
        ), rest
        rest = rest[rest.index("Before the fix") :]
    assert rest.startswith("Before the fix, 1 of 1 tunnelled TCP flow loses"), v["text"]
    assert (v["compared"]["without_fix"] in v["fix_assumed_lacking"]) is bool(assumed)
    assert v["text"].count("what follows assumes") == bool(assumed)
    assert v["stack_traversals_saved"] == 15 and v["affected_flows"] == 1
    r = CliRunner().invoke(main, ["explain", str(FIX_SAMPLE), *args, "--format", "json", "-q"])
    assert r.exit_code == 0, r.output
    (flow,) = json.loads(r.output)["flows"]
    lead = f"{assumed}: " if assumed else ""
    assert flow["verdict"]["why"].startswith(
        f"{lead}before the fix udp_gro_receive refused 17 of its 17 frames"
    )


# Ubuntu 24.04's kernel in every form it prints (Ubuntu's packaging, kernel/banner.py docstring): uname -r is
# release-ABI-flavour, uname -v '#UPLOAD-Ubuntu …' (KBUILD_BUILD_VERSION is the upload number: no version),
# /proc/version_signature 'Ubuntu release-ABI.UPLOAD-flavour upstream' (raw_kernelversion, `make kernelversion`),
# the package version release-ABI.UPLOAD (dpkg -l). Only the signature names the stable release (6.8.12 here); the
# others resolve to upstream 6.8 without stable backports, with a note that says so and where the release is named.
UBUNTU_2404_FORMS = [
    (
        "6.8.0-88-generic",
        "6.8.0-88-generic",
        "Ubuntu kernel 6.8.0-88-generic: the ABI number 88 does not say",
    ),
    (
        "6.8.0-88-generic #101-Ubuntu SMP PREEMPT_DYNAMIC Fri Nov  7 14:42:49 UTC 2025",
        "6.8.0-88-generic",
        "Ubuntu kernel 6.8.0-88-generic: the ABI number 88 does not say",
    ),
    (
        "6.8.0-88.89-generic",
        "6.8.0-88.89-generic",
        "Ubuntu kernel package version 6.8.0-88.89-generic (uname -r 6.8.0-88-generic): neither the ABI number 88 "
        "nor the upload 89 says",
    ),
    (
        "6.8.0-88.89",
        "6.8.0-88.89",
        "Ubuntu kernel package version 6.8.0-88.89 (uname -r 6.8.0-88-<flavour>): neither the ABI number 88 nor the "
        "upload 89 says",
    ),
    (
        "6.8.0-88.89~22.04.1",  # the 24.04 kernel built for 22.04 (HWE)
        "6.8.0-88.89~22.04.1",
        "Ubuntu kernel package version 6.8.0-88.89~22.04.1 (uname -r 6.8.0-88-<flavour>): neither the ABI number 88 "
        "nor the upload 89~22.04.1 says",
    ),
]


@pytest.mark.parametrize(
    ("text", "name", "note"), UBUNTU_2404_FORMS, ids=[f[0][:30] for f in UBUNTU_2404_FORMS]
)
def test_ubuntu_forms_without_the_stable_release_run_as_their_base(text, name, note):
    m = resolve_kernel(text)
    assert (m.name, m.vendor, m.base, m.vendor_base, m.backports) == (name, "Ubuntu", "6.8", "6.8", ())
    assert m.notes[0].startswith(note), m.notes
    assert m.notes[0].endswith(
        'which stable release it is based on (/proc/version_signature does: give --kernel "$(cat '
        '/proc/version_signature)" to use it) nor which fixes Ubuntu backported; assumed upstream 6.8 without stable '
        "backports"
    )


@pytest.mark.parametrize("flavour", ["generic", "lowlatency", "aws"])
def test_ubuntu_version_signature_names_the_stable_release(flavour):
    abi = "1015.16" if flavour == "aws" else "88.89"
    m = resolve_kernel(f"Ubuntu 6.8.0-{abi}-{flavour} 6.8.12")
    assert (m.name, m.vendor, m.base, m.vendor_base) == (
        f"6.8.0-{abi.split('.')[0]}-{flavour}",
        "Ubuntu",
        "6.8",
        "6.8.12",
    )
    assert m.notes[0].endswith(
        "built from upstream 6.8.12; Ubuntu's own patches are not known here; assumed upstream 6.8 with the stable "
        "backports of 6.8.12"
    )


def test_ubuntu_package_versions_of_other_shapes_are_not_ubuntu():
    # a non-zero point (Ubuntu keeps X.Y.0) and SUSE's three-part release are not Ubuntu package versions
    assert resolve_kernel("6.8.1-88.89").vendor == "the distribution"
    assert resolve_kernel("6.4.0-150600.23.25").vendor == "the distribution"
