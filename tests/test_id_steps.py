"""The verdict's list of IPv4 ID steps adds up to the skbs the ID conditions ended (fidelity32's finding: two
steps of 55 skbs were listed and the rest went unsaid). A one-flow sentence's "its": tests/test_verdict.py
``test_flows_mixing_acks_with_short_data_name_every_skb``."""

from __future__ import annotations

from collections import Counter

from gro_replay.report.verdict import id_step_text


def test_the_steps_beyond_the_limit_are_counted():
    steps = Counter({("outer", 198, 1): 5, ("outer", 798, 1): 3, ("outer", 12, 2): 2, ("ip", 7, 1): 1})
    text = id_step_text(steps, limit=2)
    assert text == (
        "the outer IPv4 ID stepped by +198 over a held packet of 1 segment (incrementing: +1; fixed: +0) ×5; the outer "
        "IPv4 ID stepped by +798 over a held packet of 1 segment (incrementing: +1; fixed: +0) ×3; and 3 more skbs "
        "(2 other ID steps)"
    )
    assert id_step_text(Counter({("ip", 2, 1): 2})).endswith("×2")
