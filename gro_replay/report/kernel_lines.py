"""The ``kernel …:`` lines of the replay's and explain's text: what each resolved kernel that is not an upstream
profile runs as (its base, its stable backports with their stable commits and first point releases, a release
candidate's commits, a distribution's assumed base) and the notes of its resolution (``KernelModel.describe``)."""

from __future__ import annotations

from .verdict.words import kernel_label


def rc_words(pre: dict, base: str) -> str:
    """What a release candidate (``describe``'s ``pre_release``) carries, for the kernel line: "a release
    candidate: the commits merged by rc1, not 89e5c58fc1e2 of a later rc, which 5.12 carries"."""
    rc = pre["release"].rsplit("-", 1)[1]
    lacks = pre["lacks"]
    if lacks:
        return (
            f"a release candidate: the commits merged by {rc}, not {', '.join(lacks)} of a later rc, "
            f"which {base} carries"
        )
    return (
        f"a release candidate: the commits merged by {rc}; no modelled commit of {base} is known to have landed "
        f"after {rc}"
    )


def kernels_words(cfg, backend: bool = False) -> str:
    """The NIC line's "kernels: pre-fix (v5.11), post-fix (v5.12)", with ", without the VLAN GRO offloads
    (--no-vlan-offload: built without CONFIG_VLAN_8021Q)" where ``cfg.vlan_offload`` is false (``backend``: the
    kernel backend's report, whose running kernel lacks them); breaker62: the text did not say it."""
    kernels = "kernels: " + ", ".join(kernel_label(k.name, k.release) for k in cfg.kernels)
    if getattr(cfg, "vlan_offload", True):
        return kernels
    how = "the running kernel is" if backend else "--no-vlan-offload:"
    return f"{kernels}, without the VLAN GRO offloads ({how} built without CONFIG_VLAN_8021Q)"


def kernel_lines(kernels, measured: bool = False) -> list[str]:
    """One line per resolved kernel that is not an upstream profile: its base, its stable backports (each with
    the stable commit and first point release) and the notes of its resolution (``KernelModel.describe``).
    ``kernels``: ``KernelModel``s, or their ``describe()`` dicts (a document's ``config.kernels``). ``measured``:
    the kernel backend's report, whose counts are the running kernel's: what is assumed of it is only which
    modelled commits it carries, which the verdict's words read (newcomer40: "assumed" read as if the counts were)."""
    out = []
    for k in kernels:
        d = k.describe() if hasattr(k, "describe") else k if isinstance(k, dict) else None
        if not d or (not d["backports"] and not d["notes"] and d["base"] == d["release"]):
            continue
        bps = ", ".join(
            f"{b['upstream']} as {b['stable_commit'][:12]} (since {b['point_release']})"
            if b["stable_commit"]
            else f"{b['upstream']} (since {b['point_release']}; its stable commit id not read)"
            for b in d["backports"]
        )
        known = "known " if d.get("backports_unread") else ""  # some were not read: a note says which
        vb = d.get("vendor_base")
        if vb:
            # a distribution kernel or a custom build: the upstream release its version names (4.18 of
            # 4.18.0-305.el8, 6.18 of 6.18.44-fc-v657), the profile run, and — when the version names a point
            # release — the stable backports of that release: the same assumption as the resolution's note
            # ("assumed upstream 6.18 with the stable backports of 6.18.44"), in the same words
            upstream = ".".join(vb.split(".")[:2])
            pre = d.get("pre_release")
            ran = (
                ""
                if vb.split(".")[:2] == d["base"].split(".")[:2]
                else f", run as the upstream {d['base']} model"
            )
            if len(vb.split(".")) > 2:
                # one wording for none, beside "no stable backport of a modelled commit" below (newcomer36: "none of
                # a modelled commit"), "known" where some were not read (breaker54)
                tail = f"with the stable backports of {vb}: " + (
                    bps or f"no {known}backport of a modelled commit"
                )
            elif pre:  # a distribution's build of a release candidate (Debian 5.12~rc1-1~exp1)
                upstream = pre["release"]
                tail = f"({rc_words(pre, vb)})"
            else:
                tail = "without stable backports"
            # named as in the kernels: line (the kernel backend's linux-6.18.44 is uname -r 6.18.44-fc-v657)
            label = kernel_label(d["name"], d["release"])
            if measured:
                out.append(
                    f"kernel {label}: the running kernel (counts measured); for the verdict's words on its "
                    f"commits, assumed upstream {upstream} {tail}{ran}"
                )
            else:
                out.append(f"kernel {label}: assumed upstream {upstream} {tail}{ran}")
            out += [f"  note: {n}" for n in d["notes"]]
            continue
        pre = d.get("pre_release")
        if pre:  # a release candidate has no stable backports, and not every commit its release carries
            rel = pre["release"].rsplit("-", 1)[0]  # its own X.Y: 4.18-rc8 runs as 4.19 (a note says so)
            out.append(f"kernel {d['name']}: upstream {pre['release']} ({rc_words(pre, rel)})")
        else:
            # a release older than every profile runs as the oldest (4.18 as 4.19: a note says what that leaves out)
            ran_as = d["release"].split(".")[:2] != d["base"].split(".")[:2]
            head = f"kernel {d['name']}: {'run as ' if ran_as else ''}upstream {d['base']}"
            # "upstream 5.12, no stable backport …", not "+ no" (breaker54)
            if bps:
                out.append(f"{head}{', ' if ran_as else ' + '}stable backports {bps}")
            else:
                out.append(f"{head}, no {known}stable backport of a modelled commit")
        out += [f"  note: {n}" for n in d["notes"]]
    return out
