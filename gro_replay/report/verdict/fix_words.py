"""What the verdict says of a kernel that lacks 89e5c58fc1e2 and what to do about it: whether its lack is an
assumption (a distribution kernel), where its stable branch has the fix or that the branch ended without it (then
the nearest branch carrying it), and the options that measure what the fix saves. Kernel: none (the stable trees'
history, kernel/stable.py).
"""

from __future__ import annotations

from ...kernel.model import FIX_COMMIT, SWITCH_COMMITS, release_tuple
from ...kernel.stable import STABLE_BACKPORTS, STABLE_ENDED, ended_before, own_branch, short_commit
from ...project import plural

#: 89e5c58fc1e2's upstream release, (5, 12)
_FIX_UPSTREAM: tuple[int, int] = next(
    c.upstream for c in SWITCH_COMMITS if c.commit == FIX_COMMIT and c.upstream
)


def ended_without_fix(model) -> tuple[str, int, str] | None:
    """``(branch, last point release, its month)`` when ``model`` is an upstream or stable kernel (no vendor: a
    vendor's continuation may have taken the fix) of a kernel.org stable branch that ended before it could take
    89e5c58fc1e2 (released in v5.12): older than 5.12, no stable backport of it (``STABLE_BACKPORTS``), and ended
    before v5.12's merge window (``stable.ended_before``, ``STABLE_ENDED``), so that no release of the branch has it:
    4.18, 4.20, 5.0-5.3, 5.5-5.9. None otherwise."""
    if (
        model is None
        or bool(getattr(model, "vendor", ""))
        or not hasattr(model, "carries")
        or model.carries(FIX_COMMIT)
    ):
        return None
    branch = own_branch(model)
    if not branch or branch in STABLE_BACKPORTS[FIX_COMMIT] or release_tuple(branch) >= _FIX_UPSTREAM:
        return None
    if not ended_before(branch, _FIX_UPSTREAM):
        return None
    last, when, _ = STABLE_ENDED[branch]
    return branch, last, when


def nearest_fix_branch(branch: str) -> tuple[str, str, str | None]:
    """The nearest branch newer than ``branch`` ("4.18") whose releases carry 89e5c58fc1e2, from the stable
    backports read in the stable trees (``STABLE_BACKPORTS``: 4.19.y from 4.19.181, 5.4.y from 5.4.106, 5.10.y from
    5.10.24, 5.11.y from 5.11.7) and its upstream release (5.12): ``(branch, first release carrying it, stable
    commit or None for the upstream release)``."""
    took = STABLE_BACKPORTS[FIX_COMMIT]
    carrying = sorted([*took, ".".join(map(str, _FIX_UPSTREAM))], key=release_tuple)
    nearest = next(b for b in carrying if release_tuple(b) > release_tuple(branch))
    if nearest in took:
        commit, point = took[nearest]
        return nearest, f"{nearest}.{point}", short_commit(commit)
    return nearest, nearest, None


def stable_fix_hint(model) -> str:
    """What a kernel lacking the fix could have of it in its own branch: " (linux-X.Y.y carries it since X.Y.N, as
    <stable commit>)" when the branch took it as a stable backport (kernel/stable.py STABLE_BACKPORTS); " (no X.Y.y
    release has it: linux-X.Y.y ended with X.Y.N in <month>)" when the branch ended without it
    (``ended_without_fix``; what to do then: ``ended_branch_advice``); else ""."""
    if model is None or not hasattr(model, "carries") or model.carries(FIX_COMMIT):
        return ""
    rc = _later_rc_hint(model)
    if rc:
        return rc
    ended = ended_without_fix(model)
    if ended is not None:
        branch, last, when = ended
        return f" (no {branch}.y release has it: linux-{branch}.y ended with {branch}.{last} in {when})"
    branch = ".".join((getattr(model, "base", "") or model.release).split(".")[:2])
    took = STABLE_BACKPORTS.get(FIX_COMMIT, {}).get(branch)
    if took is None or own_branch(model) != branch:
        return ""
    return f" (linux-{branch}.y carries it since {branch}.{took[1]}, as {short_commit(took[0])})"


#: the fix's switch commit (its release and the rc it was merged for)
_FIX_SWITCH = next(c for c in SWITCH_COMMITS if c.commit == FIX_COMMIT)


def _later_rc_hint(model) -> str:
    """For a release candidate of the fix's own release that lacks it (``KernelModel.pre_release``, 5.12-rc1): " (merged
    for v5.12-rc2: 5.12-rc2 and later, and 5.12, carry it)" (``SwitchCommit.upstream_rc``); else ""."""
    pre = getattr(model, "pre_release", None)
    fix = _FIX_SWITCH
    if not pre or fix.upstream is None or fix.upstream_rc is None:
        return ""
    xy = ".".join(map(str, fix.upstream))
    if pre.split("-")[0] != xy:
        return ""
    return f" (merged for v{xy}-rc{fix.upstream_rc}: {xy}-rc{fix.upstream_rc} and later, and {xy}, carry it)"


def ended_branch_advice(model) -> str:
    """For a kernel of a branch that ended without the fix (``ended_without_fix``), the sentence of what to do: move
    to the nearest newer branch carrying it (``nearest_fix_branch``), from its first release carrying it — "To get
    the fix, move to a branch that carries it: the nearest newer one is linux-4.19.y, from 4.19.181 (e5008f2e9157), itself
    ended with 4.19.325 in December 2024." —; "" for any other kernel (updating within its branch is
    ``stable_fix_hint``'s)."""
    ended = ended_without_fix(model)
    if ended is None:
        return ""
    branch, first, commit = nearest_fix_branch(ended[0])
    where = f"linux-{branch}.y, from {first} ({commit})" if commit else f"{branch}, from {first}"
    stop = STABLE_ENDED.get(branch)
    tail = f", itself ended with {branch}.{stop[0]} in {stop[1]}" if stop else ""
    return f"To get the fix, move to a branch that carries it: the nearest newer one is {where}{tail}."


def fix_way_sentence(model, label: str) -> str:
    """Compare mode: where a compared kernel without the fix can get it, in the words one kernel's verdict uses
    (``lacks_fix_words`` with ``stable_fix_hint``, then ``ended_branch_advice``): "4.19.100 (v4.19.100) lacks
    89e5c58fc1e2 (linux-4.19.y carries it since 4.19.181, as e5008f2e9157)."; for a branch that ended without it,
    that no release of the branch has it and the move to the nearest branch carrying it; "" when neither applies
    (no stable branch of the kernel's took it: upstream 4.19, which 4.19.181 is not, carries no hint either)."""
    if model is None or not hasattr(model, "carries") or model.carries(FIX_COMMIT):
        return ""
    move = ended_branch_advice(model)
    if not stable_fix_hint(model) and not move:
        return ""
    return f"{lacks_fix_words(model, label)}." + (f" {move}" if move else "")


def fix_advice_parts(cfg, saved: dict | None = None, who: str = "they") -> list[str]:
    """Options that show what the fix saves, from the user's own invocation (``ReplayConfig.kernels_option``):
    after --no-fix, leaving it out runs 5.11 beside 5.12; after --kernel, another --kernel adds a kernel (--kernel
    and --fix/--no-fix are exclusive: cli/options.py ``_kernels``). ``saved``: what the fix measured on the same
    kernel model saves (``{"phys": skbs, "tunnel": skbs}``: its counterfactual, report/verdict/facts.py
    ``fix_counterfactuals``), said first; the options then compare with a released kernel carrying it. ``who``: what
    goes up in fewer skbs. Returns the clauses, each one claim: [what the fix saves, the option] or, without
    ``saved``, [the option]."""
    how = getattr(cfg, "kernels_option", "")
    if saved is None:
        if how == "no-fix":
            return [
                "run without --no-fix (5.11 beside 5.12, which carries the fix) to see what the fix saves"
            ]
        if how == "kernel":
            return ["add --kernel 5.12 (a kernel carrying the fix) to see what the fix saves"]
        return ["compare with a kernel carrying the fix (5.12) to see what the fix saves"]
    if how == "no-fix":
        advice = "run without --no-fix to compare with 5.12, a released kernel carrying it"
    elif how == "kernel":
        advice = "add --kernel 5.12 to compare with a released kernel carrying it"
    else:
        advice = "compare with 5.12, a released kernel carrying it"
    parts = []
    if saved["phys"]:
        parts.append(
            f"{saved['phys']:,} fewer phys {plural(saved['phys'], 'skb')} (each one IP/UDP/tunnel decapsulation)"
        )
    if saved["tunnel"]:
        parts.append(
            f"{saved['tunnel']:,} fewer {plural(saved['tunnel'], 'skb')} handed up by the tunnel device"
        )
    measured = " and ".join(parts) or "no fewer skbs"
    return [
        f"with {FIX_COMMIT} applied (measured: the same kernel model replayed beside it) {who} go up in {measured}",
        advice,
    ]


def fix_advice(cfg, saved: dict | None = None) -> str:
    """``fix_advice_parts`` as one clause ("with … they go up in …; add --kernel 5.12 …"), for a flow's why."""
    return "; ".join(fix_advice_parts(cfg, saved))


def fix_advice_sentences(cfg, saved: dict | None = None) -> str:
    """``fix_advice_parts`` as sentences, one claim each ("With … the affected flows go up in …. Add --kernel 5.12
    …."), for the verdict."""
    return " ".join(f"{p[0].upper()}{p[1:]}." for p in fix_advice_parts(cfg, saved, "the affected flows"))


def fix_lack_assumed(model) -> bool:
    """Whether ``model`` lacks 89e5c58fc1e2 by assumption (``KernelModel.knows`` false: a distribution kernel whose
    assumed upstream base lacks it, which its vendor may have backported): the one rule behind the JSON's
    ``verdict.fix_assumed_lacking`` and ``config.kernels[].fix_89e5c58fc1e2.known``, the SUMMARY's
    ``fix_assumed_lacking=`` and every sentence that says the lack is assumed."""
    knows = getattr(model, "knows", None)
    return knows is not None and not knows(FIX_COMMIT)


def lacks_fix_words(model, label: str) -> str:
    """ "<label> lacks 89e5c58fc1e2" — or, for a kernel whose lack of it is assumed (``fix_lack_assumed``: a
    distribution kernel whose backports are not known), the assumption it rests on: "<label>, assumed an upstream
    4.18 base, run as the upstream 4.19 model, lacks 89e5c58fc1e2 unless Red Hat backported it" — with the stable
    branch that carries it, if any."""
    hint = stable_fix_hint(model)
    if not fix_lack_assumed(model):
        return f"{label} lacks {FIX_COMMIT}{hint}"
    vb = model.vendor_base
    base = model.base or model.release
    ran = "" if vb.split(".")[:2] == base.split(".")[:2] else f", run as the upstream {base} model"
    named = getattr(model, "pre_release", "") or vb  # a distribution's build of 5.12-rc1 is based on 5.12-rc1
    return (
        f"{label}, assumed an upstream {named} base{ran}, lacks {FIX_COMMIT} unless {model.vendor} backported "
        f"it{hint}"
    )


def assumed_lack_lead(model, label: str) -> str:
    """The lead of a comparison whose kernel without the fix lacks it by assumption (``fix_lack_assumed``): "<label>,
    assumed an upstream 4.18 base, run as the upstream 4.19 model, lacks 89e5c58fc1e2 unless Red Hat backported
    it; what follows assumes Red Hat did not"."""
    return f"{lacks_fix_words(model, label)}; what follows assumes {model.vendor} did not"
