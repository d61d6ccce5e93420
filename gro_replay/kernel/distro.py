"""Distribution kernel release strings (``uname -r``): who built the kernel and which upstream release it names.

A distribution's release string is ``X.Y.Z`` followed by its own build suffix. Each distribution's suffix has its
own grammar, and the same shape can belong to two of them (``5.10.0-21-amd64`` is Debian 11's, ``5.4.0-42-generic``
Ubuntu's: both ``X.Y.0-ABI-flavour``), so a string is told apart by its whole suffix: the flavour names each
distribution builds (Debian's are architectures, Ubuntu's are ``generic``, ``lowlatency`` and the cloud names,
SUSE's ``default``), and the distribution tag (``.elN`` Red Hat and its rebuilds, ``.elNuek`` Oracle UEK, ``.fcN``
Fedora, ``.amznN`` Amazon Linux, ``+debN`` Debian 13 on). A suffix no rule knows is "the distribution"'s: the
caller says the build's own patches are not known without naming anyone.

``X.Y.Z`` is kept as the string gives it: Debian (up to 12) and Ubuntu keep ``X.Y.0`` for a whole release and
number builds by ABI, so their ``Z`` is 0 and names no stable release; the others name the upstream point release
their source started from (Fedora, Amazon Linux, Arch, Debian 13, Proxmox, SUSE's 5.14.21), a lower bound of
the stable backports they carry. Debian and Ubuntu print the stable release elsewhere, and ``--kernel`` takes
those strings whole (kernel/banner.py): Debian's ``uname -v`` and ``/proc/version`` end in the source package
version (``#1 SMP Debian 5.10.162-1 (2023-01-21)``: debian/rules.real builds with
``KBUILD_BUILD_VERSION_TIMESTAMP="$(DISTRIBUTOR) $(SOURCEVERSION) ($(SOURCE_DATE_UTC_ISO))"``, which Debian's
mkcompile_h patch puts in the timestamp's place), Ubuntu's ``/proc/version_signature`` ends in the upstream version
of its tree (``Ubuntu 5.4.0-42.46-generic 5.4.44``: debian/rules.d/2-binary-arch.mk sets CONFIG_VERSION_SIGNATURE
to ``"Ubuntu $(release)-$(revision)-$* $(raw_kernelversion)"``, raw_kernelversion being ``make kernelversion``).
Sources: the distributions' kernel packaging (Debian linux ``debian/config`` flavours and ABI naming, Ubuntu kernel
flavours, its package versions ``X.Y.0-ABI.UPLOAD`` and its mainline builds' ``X.Y.Z-0XXYYZZ-generic`` names, Fedora/RHEL/Amazon Linux ``kernel.spec``
release tags, SUSE ``kernel-source`` flavours) and the release strings those kernels print.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_V = r"(\d+)\.(\d+)\.(\d+)"
#: Debian's kernel flavours: an architecture, optionally the cloud or realtime build of it (debian/config)
_DEBIAN_FLAVOUR = (
    r"(?:cloud-|rt-)?(?:amd64|arm64|armmp(?:-lpae)?|686(?:-pae)?|rpi|marvell|s390x|powerpc64le|[45]kc-malta|octeon"
    r"|loongson-3|mips(?:32|64)r[26]el|riscv64|loong64)"
)
#: Ubuntu's kernel flavours (generic, lowlatency and their 64k/lpae variants, the cloud and hardware kernels)
_UBUNTU_FLAVOUR = (
    r"(?:(?:generic|lowlatency)(?:-64k|-lpae|-hwe)?|aws(?:-fips)?|azure(?:-fde|-fips|-cvm)?|gcp(?:-fips)?|gke|gkeop"
    r"|kvm|oracle|raspi(?:2|-nolpae)?|oem|ibm|nvidia(?:-lowlatency|-64k)?|intel(?:-iotg)?|realtime|fips"
    r"|xilinx-zynqmp|bluefield|riscv|allwinner|starfive|snapdragon|euclid)"
)
#: SUSE's kernel flavours (SLES, openSUSE Leap and Tumbleweed)
_SUSE_FLAVOUR = r"(?:default|azure|rt|64kb|kvmsmall|preempt|vanilla|pae|lpae|zfcpdump)"
_ARCH = r"(?:\.[\w.]+)?"  # a trailing .x86_64 / .aarch64 / .noarch

#: Debian 9–12: X.Y.0-ABI-flavour, backports X.Y.0-0.debNN.ABI-flavour (older: X.Y.0-0.bpo.ABI-flavour)
_DEBIAN = re.compile(_V + r"-(?:0\.(?:deb(\d+)|bpo)\.)?(\d+)-" + _DEBIAN_FLAVOUR, re.ASCII)
#: Debian 13 on: the upstream version and +debNN (backports: +bpo)
_DEBIAN_PLUS = re.compile(_V + r"\+(?:deb(\d+)|bpo)-" + _DEBIAN_FLAVOUR, re.ASCII)
#: Ubuntu mainline builds of upstream releases: X.Y.Z-0XXYYZZ-flavour (kernel.ubuntu.com/mainline)
_UBUNTU_MAINLINE = re.compile(_V + r"-(\d{6,7})-(?:generic|lowlatency)(?:-64k|-lpae)?", re.ASCII)
_UBUNTU = re.compile(_V + r"-(\d+)-" + _UBUNTU_FLAVOUR, re.ASCII)
#: Ubuntu's package version X.Y.0-ABI.UPLOAD (dpkg -l linux-image-…; ~YY.MM.N for a backport to an older release),
#: alone or with the flavour as /proc/version_signature writes it (X.Y.0-ABI.UPLOAD-flavour)
_UBUNTU_PKG = re.compile(
    _V + r"-(\d+)\.(\d+)((?:~\d+\.\d+(?:\.\d+)?)?)(?:-(" + _UBUNTU_FLAVOUR + r"))?", re.ASCII
)
_PROXMOX = re.compile(_V + r"-(\d+)-pve", re.ASCII)
_SUSE = re.compile(_V + r"-(\d+(?:\.\d+)*)-" + _SUSE_FLAVOUR, re.ASCII)
_ORACLE_UEK = re.compile(_V + r"-[\d.]+\.el(\d+)uek" + _ARCH, re.ASCII)
_RHEL = re.compile(_V + r"-[\d.]+\.el(\d+)(?:_\d+)?" + _ARCH, re.ASCII)
_FEDORA = re.compile(_V + r"-[\d.]+\.fc(\d+)" + _ARCH, re.ASCII)
_AMAZON = re.compile(_V + r"-[\d.]+\.amzn(\d+)" + _ARCH, re.ASCII)
_ARCH_LINUX = re.compile(_V + r"-arch\d+-\d+", re.ASCII)
#: Debian's release of each kernel series it shipped (a backport names its own release: 0.debNN)
DEBIAN_RELEASE = {(4, 19): "10", (5, 10): "11", (6, 1): "12", (6, 12): "13"}


@dataclass(frozen=True, slots=True)
class DistroRelease:
    """A distribution's kernel release string, parsed.

    ``vendor``: who may have backported commits this tool cannot know of ("Debian", "Ubuntu", "Red Hat", ...; ""
    for an upstream release built by a distribution unchanged). ``point``: ``Z`` of ``X.Y.Z`` as the string gives
    it (0: it names no stable release). ``note``: what the resolution assumes, for the report.
    """

    vendor: str
    major: int
    minor: int
    point: int
    note: str
    #: who built it, as notes name it ("Debian 11", "Debian 11 backports", "Ubuntu"); "" where no note needs it
    who: str = ""


def base_words(major: int, minor: int, point: int) -> str:
    """ "upstream X.Y with the stable backports of X.Y.Z" or "… without stable backports"."""
    rel = f"{major}.{minor}"
    return f"upstream {rel}" + (
        f" with the stable backports of {rel}.{point}" if point else " without stable backports"
    )


def parse_distro_release(text: str) -> DistroRelease | None:  # noqa: C901, PLR0911 - one branch per distribution grammar
    """The distribution release ``text`` (ASCII, stripped) names, or None when no distribution grammar matches it.

    Kernel: none (distribution packaging; module docstring). The caller refuses or handles the rest.
    """
    if (m := _DEBIAN.fullmatch(text)) is not None and m.group(3) == "0":
        x, y = int(m.group(1)), int(m.group(2))
        backport = "-0." in text  # a backport to an older release: 0.debNN names it, 0.bpo does not
        rel = m.group(4) if backport else DEBIAN_RELEASE.get((x, y), "")
        who = (f"Debian {rel}" if rel else "Debian") + (" backports" if backport else "")
        note = (
            f"{who} kernel {text}: the ABI number {m.group(5)} does not say which stable release it is "
            f"based on (the package version does: uname -v prints it, e.g. 'Debian {x}.{y}.N-1'; give --kernel "
            f'"$(uname -rv)" to use it) nor which fixes Debian backported; assumed {base_words(x, y, 0)}'
        )
        return DistroRelease("Debian", x, y, 0, note, who)
    if (m := _DEBIAN_PLUS.fullmatch(text)) is not None:
        x, y, z = int(m.group(1)), int(m.group(2)), int(m.group(3))
        who = f"Debian {m.group(4)}" if m.group(4) else "Debian backports"
        note = f"{who} kernel {text}: Debian's own patches are not known here; assumed {base_words(x, y, z)}"
        return DistroRelease("Debian", x, y, z, note, who)
    if (m := _UBUNTU_MAINLINE.fullmatch(text)) is not None:
        x, y, z = int(m.group(1)), int(m.group(2)), int(m.group(3))
        if m.group(4) == f"{x:02d}{y:02d}{z:02d}":
            note = (
                f"kernel {text}: Ubuntu's mainline build of upstream {x}.{y}.{z} (kernel.ubuntu.com/mainline, "
                f"without Ubuntu's patches); run as that stable release"
            )
            return DistroRelease("", x, y, z, note)
    if (m := _UBUNTU.fullmatch(text)) is not None and m.group(3) == "0":
        x, y = int(m.group(1)), int(m.group(2))
        note = (
            f"Ubuntu kernel {text}: the ABI number {m.group(4)} does not say which stable release it is based on "
            f'(/proc/version_signature does: give --kernel "$(cat /proc/version_signature)" to use it) nor which '
            f"fixes Ubuntu backported; assumed {base_words(x, y, 0)}"
        )
        return DistroRelease("Ubuntu", x, y, 0, note, "Ubuntu")
    if (m := _UBUNTU_PKG.fullmatch(text)) is not None and m.group(3) == "0":
        x, y = int(m.group(1)), int(m.group(2))
        flavour = m.group(7) or "<flavour>"
        note = (
            f"Ubuntu kernel package version {text} (uname -r {x}.{y}.0-{m.group(4)}-{flavour}): neither the ABI "
            f"number {m.group(4)} nor the upload {m.group(5)}{m.group(6)} says which stable release it is based on "
            f'(/proc/version_signature does: give --kernel "$(cat /proc/version_signature)" to use it) nor which '
            f"fixes Ubuntu backported; assumed {base_words(x, y, 0)}"
        )
        return DistroRelease("Ubuntu", x, y, 0, note, "Ubuntu")
    if (m := _PROXMOX.fullmatch(text)) is not None:
        x, y, z = int(m.group(1)), int(m.group(2)), int(m.group(3))
        note = (
            f"Proxmox VE kernel {text} (built from Ubuntu's kernel): Proxmox's and Ubuntu's own patches are not "
            f"known here; assumed {base_words(x, y, z)}"
        )
        return DistroRelease("Proxmox", x, y, z, note)
    if (m := _SUSE.fullmatch(text)) is not None:
        x, y, z = int(m.group(1)), int(m.group(2)), int(m.group(3))
        note = f"SUSE kernel {text} (SLES or openSUSE): SUSE's backports are not known here; assumed {base_words(x, y, z)}"
        return DistroRelease("SUSE", x, y, z, note)
    if (m := _ORACLE_UEK.fullmatch(text)) is not None:
        x, y, z = int(m.group(1)), int(m.group(2)), int(m.group(3))
        note = (
            f"Oracle UEK kernel {text} (Oracle Linux {m.group(4)}): Oracle's backports are not known here; "
            f"assumed {base_words(x, y, z)}"
        )
        return DistroRelease("Oracle", x, y, z, note)
    if (m := _RHEL.fullmatch(text)) is not None:
        x, y, z = int(m.group(1)), int(m.group(2)), int(m.group(3))
        note = (
            f"RHEL {m.group(4)} kernel {text}: Red Hat backports are not known here (CentOS, Rocky and AlmaLinux "
            f"build the same source); assumed {base_words(x, y, z)}"
        )
        return DistroRelease("Red Hat", x, y, z, note)
    for rx, vendor, label in (
        (_FEDORA, "Fedora", "Fedora {} kernel"),
        (_AMAZON, "Amazon", "Amazon Linux {} kernel"),
        (_ARCH_LINUX, "Arch Linux", "Arch Linux kernel"),
    ):
        if (m := rx.fullmatch(text)) is not None:
            x, y, z = int(m.group(1)), int(m.group(2)), int(m.group(3))
            who = label.format(m.group(4)) if m.re.groups > 3 else label
            note = f"{who} {text}: {vendor}'s own patches are not known here; assumed {base_words(x, y, z)}"
            return DistroRelease(vendor, x, y, z, note)
    return None


__all__ = ["DistroRelease", "parse_distro_release"]
