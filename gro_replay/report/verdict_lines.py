"""The verdict's lines of the table and Markdown reports: the sentence, then the flows it names — the affected
flows and the flows the fix costs aggregation (``Verdict.worse_flows``), each with its phys skbs without and with the
fix — at most ``limit`` of each, then how many more."""

from __future__ import annotations

from ..project import plural
from .verdict.facts import STAGE_NAMES


def _refused_where(k) -> str:
    """ " at the phys device", " at the tunnel device's gro_cells" or " at the phys device and again at the tunnel
    device's gro_cells": where one flow's frames were refused in kernel facts ``k`` (``KernelFacts.refused_at``)."""
    stage = k.refused_at()
    if stage is None:
        return ""
    again = f" and again at {STAGE_NAMES['tunnel']}" if stage == "phys" and k.gate_zero["tunnel"] else ""
    return f" at {STAGE_NAMES[stage]}{again}"


def verdict_lines(result, limit: int = 10) -> list[str]:
    """The verdict sentence, the affected flows and the flows the fix costs aggregation (at most ``limit`` of each,
    then how many more)."""
    from .verdict import verdict_of

    v = verdict_of(result)
    if not v.text:
        return []
    lines = [v.text]
    aff = v.affected_flows()
    for f in aff[:limit]:
        pre, post, fixed = f.pre, f.post, f.fixed
        parts = []
        if pre and post and fixed:
            # measured with the fix alone (Verdict.fix_alone), as the verdict says first: the counterfactual named
            # before the counts it gives, the other kernel's own counts after them
            alone = f"with the fix alone ({fixed.name}): " if fixed is not post else ""
            parts.append(f"{alone}phys skbs {pre.skbs['phys']:,} → {fixed.skbs['phys']:,}")
            if pre.skbs["tunnel"] != fixed.skbs["tunnel"]:
                parts.append(f"tunnel skbs {pre.skbs['tunnel']:,} → {fixed.skbs['tunnel']:,}")
            if fixed is not post:
                parts[-1] += (
                    f"; {post.name}: phys skbs {post.skbs['phys']:,}, tunnel skbs {post.skbs['tunnel']:,}"
                )
        elif pre:
            parts.append(
                f"{f.gate_zero:,} {plural(f.gate_zero, 'frame')} refused by the zero-checksum gate{_refused_where(pre)}"
            )
        lines.append(f"  affected: {f.key.label()}: " + ", ".join(parts))
    more = v.affected_count - min(len(aff), limit)
    if more > 0:
        # the JSON's comparison.affected_flows[] keeps the flows the verdict kept (--flows-max): it lists the
        # others only when it kept every one
        json_too = "" if len(aff) < v.affected_count else " or --format json"
        lines.append(
            f"  … and {more:,} more affected {plural(more, 'flow')} (explain --limit 0{json_too} lists "
            f"{'it' if more == 1 else 'them'})"
        )
    return lines + _worse_lines(v, limit)


def _worse_lines(v, limit: int) -> list[str]:
    """ "  worse with the fix: <flow>: phys skbs 5 → 20" per flow the fix costs aggregation (``Verdict.worse_flows``:
    the lowest ids; at most ``limit``), then how many more (breaker63/newcomer41: the sentence counted them, no
    line named them)."""
    worse = v.worse_flows()
    lines = []
    for f in worse[:limit]:
        alone = f"with the fix alone ({f.fixed.name}): " if f.fixed is not f.post else ""
        lines.append(
            f"  worse with the fix: {f.key.label()}: {alone}phys skbs {f.pre.skbs['phys']:,} → "
            f"{f.fixed.skbs['phys']:,}"
        )
    more = (v.flows_worse_with_fix() or 0) - min(len(worse), limit)
    if more > 0:
        lines.append(
            f"  … and {more:,} more {plural(more, 'flow')} worse with the fix (explain --limit 0 lists "
            f"{'it' if more == 1 else 'them'}, each with its phys skbs without and with the fix)"
        )
    return lines
