"""The zero-checksum gate's words: why udp_gro_receive refuses a flow before 89e5c58fc1e2 (``_gate_words``), what
it finds for each RX checksum state (``ZERO_CSUM_STATE_WORDS``, ``zero_state_words``, ``zero_csum_states_text``)
and at the tunnel device (``TUNNEL_GATE_WORDS``). Source: net/ipv4/udp_offload.c ``udp4_gro_receive``,
``udp_gro_receive``; net/ipv6/udp_offload.c ``udp6_gro_receive``; gro-spec §4.3–4.7.
"""

from __future__ import annotations

from collections import Counter

from ...project import plural
from .words import by_count


def _gate_words(rx_csum: str, cfg=None) -> str:
    """Why udp_gro_receive refuses a flow before the fix. ``rx_csum``: the flow's RX checksum state; unless a
    --nic preset decides it (``cfg.rx_csum`` "nic") that state is the --rx-csum setting, given or by default: an
    assumption about the NIC the sentence says, and, beside a --nic preset, that it stands in for the driver's."""
    said = ""
    if getattr(cfg, "rx_csum", "nic") != "nic":
        nic = getattr(cfg, "nic", None)
        said = (
            f" (assumed: --rx-csum {cfg.rx_csum}, in place of what the {nic} driver hands up)"
            if nic
            else f" (assumed: --rx-csum {cfg.rx_csum}; --nic DRIVER models a driver)"
        )
    return (
        "their outer UDP checksum is 0 and the NIC marks them "
        + ("CHECKSUM_NONE" if rx_csum == "none" else "CHECKSUM_UNNECESSARY level 0")
        + said
        + ", so udp_gro_receive finds csum_cnt 0 and csum_valid 0 and refuses tunnel GRO"
    )


#: why frames in a state the zero-checksum gate refuses were not refused (``ZERO_CSUM_STATE_WORDS``)
_NOT_REACHED = (
    "a state the gate refuses, but GRO ended them before udp_gro_receive, at the header their phys skbs' end "
    "reasons name"
)

#: RX checksum state (RX_CSUM_PROFILES name) → how the verdict names it and what udp_gro_receive's pre-fix
#: condition finds in GRO's control block for a frame of that state whose outer UDP checksum is 0 (gro-spec §4.7:
#: dev_gro_receive sets csum_valid 1 for CHECKSUM_COMPLETE and csum_cnt csum_level + 1 for CHECKSUM_UNNECESSARY;
#: udp4_gro_receive's skb_gro_checksum_validate_zero_check consumes one level for the outer UDP header, its
#: checksum 0 or not); where that condition holds (rows 1 and 3: refused before the fix), why such frames were not
#: refused (``_NOT_REACHED``; the sentence is said only when no frame was)
ZERO_CSUM_STATE_WORDS = {
    "complete": ("CHECKSUM_COMPLETE", "GRO starts them with csum_valid 1, the NIC's sum of the packet"),
    "unnecessary-tunnel": (
        "CHECKSUM_UNNECESSARY level 1",
        "csum_cnt starts at 2 and the outer UDP header consumes 1, leaving csum_cnt 1",
    ),
    "partial": ("CHECKSUM_PARTIAL", ""),
    "unnecessary": ("CHECKSUM_UNNECESSARY level 0", _NOT_REACHED),
    "none": ("CHECKSUM_NONE", _NOT_REACHED),
}


def zero_state_words(
    state: str, frames: int, unvalidated: int, reached: int | None = None
) -> tuple[str, str]:
    """How the verdict names RX checksum state ``state`` and why the zero-checksum gate did not refuse ``frames``
    frames of it with an outer UDP checksum of 0 (``ZERO_CSUM_STATE_WORDS``): ``reached`` of them reached the gate
    (``KernelFacts.gate_reached``; None: not counted, all taken to have), ``unvalidated`` of those unvalidated
    (``KernelFacts.gate_unvalidated``): GRO was already flushing them, so udp4_gro_receive and udp6_gro_receive
    skipped checksum validation, which consumes a CHECKSUM_UNNECESSARY level (net/ipv4/udp_offload.c,
    net/ipv6/udp_offload.c; gro-spec §4.3). Level 0 keeps csum_cnt 1 then, and the gate passes them; level 1 keeps
    2; the others, ended before udp_gro_receive, keep theirs untested. Returns (name, why; "" when nothing to say)."""
    name, why = ZERO_CSUM_STATE_WORDS.get(state, (state, ""))
    if state not in ("unnecessary", "unnecessary-tunnel"):
        return name, why  # CHECKSUM_NONE is refused (csum_cnt 0) unvalidated too; COMPLETE and PARTIAL pass
    reached = frames if reached is None else min(reached, frames)
    ended = frames - reached  # ended before udp_gro_receive: the gate never read their state
    if state == "unnecessary" and not unvalidated:
        return name, why  # _NOT_REACHED: no level-0 frame the gate read passed it validated
    parts = []
    them = "them" if unvalidated == frames else f"{unvalidated:,} of them"
    flushing = (
        f"GRO was already flushing {them} when it reached the outer UDP header, for the reason their phys skbs' "
        "end reasons name, so udp4/6_gro_receive skipped checksum validation"
    )
    if state == "unnecessary-tunnel":
        validated = reached - unvalidated
        if validated:
            parts.append(
                why
                if validated == frames
                else f"csum_cnt starts at 2, and for {validated:,} of them the outer UDP header consumes 1, "
                "leaving csum_cnt 1"
            )
        if unvalidated:
            parts.append(
                f"{'' if validated else 'csum_cnt starts at 2, and '}{flushing}, which leaves it at 2"
            )
    else:
        parts.append(
            f"a state the gate refuses, but {flushing}, which leaves csum_cnt 1: the gate passes them, and the flush "
            "sends them up unmerged all the same"
        )
    if ended:
        other = "them" if ended == frames else f"the other {ended:,}"
        parts.append(
            f"GRO ended {other} before udp_gro_receive, at the header their phys skbs' end reasons name"
        )
    return name, "; ".join(parts)


def zero_csum_states_text(
    states: Counter, unvalidated: Counter | None = None, reached: Counter | None = None
) -> str:
    """Why udp_gro_receive refused no tunnelled frame for a zero checksum, from the RX checksum states of the
    tunnelled frames whose outer UDP checksum is 0 (``states``: state → frames, ``_Tally.zero_states``; of them
    ``unvalidated``, ``_Tally.zero_unvalidated``, reached the gate unvalidated and ``reached``,
    ``_Tally.zero_reached``, reached it at all: ``zero_state_words``): "none of
    the tunnelled frames has a zero outer UDP checksum", or "the 17 tunnelled frames with a zero outer UDP checksum
    were marked CHECKSUM_COMPLETE (GRO starts them with csum_valid 1, …), and before the fix udp_gro_receive refuses
    only frames not CHECKSUM_PARTIAL whose csum_cnt and csum_valid are both 0" (net/ipv4/udp_offload.c
    udp_gro_receive before 89e5c58fc1e2; gro-spec §4.4, §4.7)."""
    n = sum(states.values())
    if not n:
        return "none of the tunnelled frames has a zero outer UDP checksum"
    parts = []
    for state, frames in by_count(states):
        got = None if reached is None else reached.get(state, 0)
        name, why = zero_state_words(state, frames, (unvalidated or {}).get(state, 0), got)
        count = "" if len(states) == 1 else f"{frames:,} {plural(frames, 'frame')}"
        inner = "; ".join(p for p in (count, why) if p)
        parts.append(f"{name} ({inner})" if inner else name)
    return (
        f"the {n:,} tunnelled {plural(n, 'frame')} with a zero outer UDP checksum were marked {' and '.join(parts)}, "
        "and before the fix udp_gro_receive refuses only frames not CHECKSUM_PARTIAL whose csum_cnt and csum_valid "
        "are both 0"
    )


#: why udp_gro_receive refuses a frame at the tunnel device's gro_cells before the fix (gro-spec §4.4 gate): the
#: decapsulated frame carries a UDP tunnel header again, and the checksum levels the NIC gave were consumed by the
#: headers before it (gro-spec §4.1 CONSUME_LEVEL, §6.1 udp4_csum_init)
TUNNEL_GATE_WORDS = "a tunnel inside the tunnel whose UDP checksum is 0, csum_cnt 0, csum_valid 0"
