"""What the IPv4 IDs did where an ID condition ended skbs (``FlowStats.id_steps``: by header, ID step and segments
held), for the verdict's reason lists (sentences.py, flow_sentences.py)."""

from __future__ import annotations

from collections import Counter

from ...project import plural
from .words import by_count, the_rest


def id_step_text(steps: Counter, limit: int = 2, model=None) -> str:
    """What the IPv4 IDs did where an ID condition ended skbs, the ``limit`` most frequent steps, then "and N more
    skbs (M other ID steps)" so the counts add up to the skbs those conditions ended (fidelity32: the rest went
    unsaid), e.g. "the outer IPv4 ID stepped by +2 over a held packet of 1 segment (incrementing: +1; fixed: +0)
    ×2"; "" when nothing was observed. ``model`` (the kernel's ``KernelModel``; None: not known): without
    f095a358faf2 (before v6.18) a fixed ID merges only with DF set (include/net/gro.h ``inet_gro_flush``; v5.x
    ``inet_gro_receive``'s ``is_atomic``), said as "fixed: +0 with DF" (breaker35: the DF went unsaid)."""
    needs_df = model is not None and not getattr(model, "inet_gro_fixedid_without_df", False)
    fixed = "fixed: +0 with DF" if needs_df else "fixed: +0"
    items = by_count(steps)
    parts = []
    for (hdr, step, held), n in items[:limit]:
        signed = step - 0x10000 if step > 0x7FFF else step
        which = "IPv4 ID" if hdr == "ip" else f"{hdr} IPv4 ID"
        parts.append(
            f"the {which} stepped by {signed:+d} over a held packet of {held} {plural(held, 'segment')} "
            f"(incrementing: +{held}; {fixed}) ×{n:,}"
        )
    return "; ".join(parts) + the_rest(items, limit, "skb", "; and", "ID step")
