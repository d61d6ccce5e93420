"""``gro-replay diff``'s metrics: what is compared per stage and per flow, how a loss is measured, and one compared
cell (baseline, current, delta, change, whether checked and regressed)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import AGGREGATES_LABEL, SW_CSUM_LABEL

_EPS = 1e-9


@dataclass(frozen=True)
class Metric:
    """A compared quantity: ``better`` is ``"higher"``, ``"lower"`` or ``""`` (shown, never checked)."""

    name: str
    label: str
    level: str  # "stage" or "flow"
    better: str


def ratio(segments: int, skbs: int) -> float:
    return segments / skbs if skbs else 0.0


METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric("skbs", "skbs delivered", "stage", "lower"),
        Metric("segs_per_skb", "segments / skb", "stage", "higher"),
        Metric("aggregates", AGGREGATES_LABEL, "stage", ""),
        Metric("sw_csum_bytes", SW_CSUM_LABEL, "stage", "lower"),
        Metric("flow_skbs", "skbs delivered (per flow)", "flow", "lower"),
        Metric("flow_segs_per_skb", "segments / skb (per flow)", "flow", "higher"),
    )
}
CHECKABLE = tuple(n for n, m in METRICS.items() if m.better)
DEFAULT_METRICS = ("segs_per_skb", "flow_segs_per_skb")


def stage_values(st: dict) -> dict:
    return {
        "skbs": st["skbs_delivered"],
        "segs_per_skb": ratio(st["segments_delivered"], st["skbs_delivered"]),
        "aggregates": st["aggregates"],
        "sw_csum_bytes": st["sw_csum_bytes"],
    }


def flow_values(st: dict) -> dict:
    """A flow's stage values. Segments per skb are those its own skbs carried: its frames less those that went up
    in other flows' skbs, plus the other flows' frames its skbs carried (the tunnel device without tunnel metadata
    merges one inner flow under two outer keys); None (n/a) for a flow whose frames all went up in other flows'."""
    carried_by = st.get("segments_carried_by_other_flows", 0)
    carried = st["segments"] - carried_by + st.get("segments_carried_for_other_flows", 0)
    per_skb = None if not st["skbs"] and carried_by else ratio(carried, st["skbs"])
    return {"flow_skbs": st["skbs"], "flow_segs_per_skb": per_skb}


# -- comparing ---------------------------------------------------------------------------------------------------------
def loss_pct(metric: Metric, base: float, cur: float) -> float:
    """How much worse ``cur`` is than ``base``, in percent of ``base`` (0 when not worse; inf from a zero base)."""
    if metric.better == "higher":
        worse = base - cur
    elif metric.better == "lower":
        worse = cur - base
    else:
        return 0.0
    if worse <= _EPS * max(1.0, abs(base)):
        return 0.0
    return math.inf if base == 0 else 100.0 * worse / abs(base)


def change_pct(base: float, cur: float) -> float | None:
    if base == cur:
        return 0.0
    return None if base == 0 else 100.0 * (cur - base) / abs(base)


def cell(metric: Metric, base, cur, checked: bool, limit: float) -> dict:
    if (
        base is None or cur is None
    ):  # not measured (kernel backend) or not attributable (--flow): shown as n/a
        return {
            "baseline": base,
            "current": cur,
            "delta": None,
            "change_pct": None,
            "checked": False,
            "regression": False,
        }
    loss = loss_pct(metric, base, cur)
    regression = checked and loss > limit + _EPS
    change = change_pct(base, cur)  # of the values compared, before they are rounded for the document
    shown = loss_shown(loss, limit, regression) if checked and math.isfinite(loss) else round(loss, 6)
    if isinstance(base, float) or isinstance(cur, float):
        base, cur = round(base, 4), round(cur, 4)
        delta = round(cur - base, 4)
    else:
        delta = cur - base
    return {
        "baseline": base,
        "current": cur,
        "delta": delta,
        "change_pct": None if change is None else round(change, 2),
        "checked": checked,
        "regression": regression,
        # the loss the check compared with the threshold (None from a zero baseline), to 6 decimals or, for a
        # checked value, as many more as put it on the check's side of the threshold (``loss_digits``): what the
        # text prints beside the threshold
        "loss_pct": shown if math.isfinite(loss) else None,
    }


#: decimals enough to show any loss the check found beyond the threshold (``loss > limit + _EPS``, ``_EPS`` 1e-9: 10)
#: and a loss that passed it at or below a threshold of up to 15 places
_MOST_DIGITS = 15


def loss_digits(loss: float, limit: float, exceeded: bool) -> int:
    """Decimal places (1 to ``_MOST_DIGITS``) for a loss of ``loss`` percent printed beside the threshold ``limit``:
    the fewest that put the printed value on the side of the threshold the check put it (``exceeded``: ``loss >
    limit`` up to ``_EPS``): a loss of 88.2004 % against 88.2 allowed prints as 88.2004%, not 88.2% under "lost
    more than 88.2%"; 11.1111111111 % against 11.1111111 prints as 11.11111111%, not 11.111111%."""
    for d in range(1, _MOST_DIGITS + 1):
        if (round(loss, d) > limit) == exceeded:
            return d
    return _MOST_DIGITS


def loss_shown(loss: float, limit: float, exceeded: bool) -> float:
    """A checked value's loss (percent) as the document keeps it and every text prints it (``loss_digits`` places
    beside ``limit``): rounded to at least 6 places and as many more as put it on the check's side of the
    threshold. A loss within ``_EPS`` above the threshold passed the check: where no rounding reads at or below it
    (66.6666…% against 66.66666666666), it is cut down to the places instead, and to the threshold itself if that
    is still above it, so that a passed check never prints a loss above its allowance."""
    d = loss_digits(loss, limit, exceeded)
    shown = round(loss, max(6, d))
    if not exceeded and shown > limit:
        shown = min(math.floor(loss * 10**d) / 10**d, limit)
    return shown
