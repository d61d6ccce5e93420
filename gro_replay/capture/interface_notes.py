"""The note on a capture's interfaces (``Selection.notes``): each interface, which is replayed and why, and what
the others' frames were. Kernel: none (capture/interfaces.py says why one device is replayed)."""

from __future__ import annotations

from ..project import plural
from .interface_stats import InterfaceStats, cut_words, shared_words
from .reader import DLT_LINUX_SLL


def interface_notes(
    by_key: dict[tuple, InterfaceStats],
    chosen: frozenset | None,
    reason: str,
    labels: tuple[int, int],
    unattributed_copies: int,
    ambiguous: frozenset[int],
) -> list[str]:
    """One note when the capture held several devices: each interface, which is replayed and why, and what the
    others' frames were (another device's tunnel traffic left out, repeats, decapsulated copies).

    Args: by_key: the interfaces' counts in order of first frame; chosen: the replayed keys (None: every
    interface); reason: why they were; labels: the file's (sections, interfaces) as ``InterfaceStats.label`` says
    them; unattributed_copies: decapsulated copies on the one device replayed; ambiguous: numbers that are both an
    ifindex and an interface number (``InterfaceStats.select``)."""
    if len({st.group() for st in by_key.values()}) < 2:
        if unattributed_copies:
            n = unattributed_copies
            v1 = all(st.linktype == DLT_LINUX_SLL for st in by_key.values())
            one = n == 1  # "1 frame carries the inner packet of a tunnel frame …; … it is …" (breaker50)
            they, are, them = ("it", "is", "it") if one else ("they", "are", "them")
            why = (
                f"Linux cooked v1 does not say the interface, so {they} {are} replayed as the physical device's "
                f"traffic and counted there; capture on the physical device, or as LINUX_SLL2 "
                f"(tcpdump -i any -y LINUX_SLL2), to leave {them} out"
                if v1
                else f"{they} {are} on the replayed interface itself, so {they} {are} replayed and counted there"
            )
            what = (
                "1 frame carries the inner packet of a tunnel frame (a decapsulated copy"
                if one
                else f"{n:,} frames carry the inner packets of tunnel frames (decapsulated copies"
            )
            return [
                f"the capture holds the same packets twice: {what}, as `tcpdump -i any` records {them} on the "
                f"tunnel device); {why}"
            ]
        return []
    lab = {k: st.label(*labels) for k, st in by_key.items()}
    parts = [
        f"{lab[k]}: {st.frames:,} {plural(st.frames, 'frame')}, {_tunnel_words(st)}"
        for k, st in by_key.items()
    ]
    head = f"the capture holds {len(by_key)} interfaces ({'; '.join(parts)})"
    if chosen is None:
        unread = sum(st.unread for st in by_key.values())
        # what is known of the frames: one whose headers end before its UDP port may be tunnel traffic
        none = "none carries" if not unread else "no frame whose headers could be read carries"
        return [
            f"{head}; {none} tunnel traffic: every interface was replayed as one device's traffic; "
            "--interface N chooses one"
        ]
    replayed = " and ".join(lab[k] for k in by_key if k in chosen)
    why = reason if reason == "--interface" else f"{reason}; --interface chooses"
    text = f"{head}; replaying {replayed} only ({why})"
    others = [(k, st) for k, st in by_key.items() if k not in chosen]
    kept = [st for k, st in by_key.items() if k in chosen]
    text += _left_out_words(others, lab, kept, ambiguous)
    text += _repeat_words(others, lab, replayed, ambiguous)
    text += _decapsulated_words(by_key, chosen, lab, ambiguous)
    dup = [f"{st.copies:,} on {lab[k]}" for k, st in others if st.copies]
    if dup:
        text += (
            f"; the same packets twice: {', '.join(dup)} carry the inner packets of {replayed}'s tunnel frames "
            "(decapsulated copies, which never reach the physical device's NAPI)"
        )
    return [text]


def _left_out_words(others: list, lab: dict, kept: list, ambiguous: frozenset[int]) -> str:
    """The note's clauses on the tunnel frames left out (``others``: (key, InterfaceStats) not replayed), one per
    interface, then what they share (``shared_words``: the same frames on several views, counted once)."""
    text = ""
    for k, st in others:
        if st.left_out:
            text += (
                f"; {st.left_out:,} tunnel {plural(st.left_out, 'frame')} on {lab[k]} left out ("
                + (_TWIN if st.may_be_replayed(kept) else "another device's traffic, merged by its own NAPI")
                + f": --interface {st.select(ambiguous)} replays it instead"
                f"{cut_words(st.left_out, st.tunnel_cut)})"
            )
    views = [(lab[k], st.left_out, {lab[o]: n for o, n in st.also.items()}) for k, st in others]
    shared, n = shared_words(views)
    if shared:
        text += (
            f"; the same tunnel frames on several interfaces among those left out: {shared} (views of the same "
            f"frames, a bond or bridge and its ports: {n:,} distinct tunnel {plural(n, 'frame')} left out)"
        )
    return text


def _decapsulated_words(by_key: dict, chosen: frozenset, lab: dict, ambiguous: frozenset[int]) -> str:
    """The note's clause on frames of a replayed interface that carry the inner packets of tunnel frames left out
    (``InterfaceStats.decapsulated``: ``--interface`` chose the tunnel device of an ``-i any`` capture)."""
    text = ""
    for k in (k for k in by_key if k in chosen):
        for src, n in by_key[k].decapsulated.items():
            text += (
                f"; the same packets twice: {n:,} {plural(n, 'frame')} of {lab[k]}, replayed, "
                f"{'carries the inner packet of one' if n == 1 else 'carry the inner packets'} of {lab[src]}'s "
                "tunnel frames left out (most likely decapsulated copies, a tunnel device's, which never reach a physical device's "
                f"NAPI; replayed here as one's frames: --interface {by_key[src].select(ambiguous)} replays the tunnel "
                "frames)"
            )
    return text


def unselected_words(names: list[str], quiet: list[tuple[str, str, bool]], unknown: int) -> tuple[str, str]:
    """The words of an ``--interface`` that selected no frame (capture/interfaces.py ``Selection._no_such``):
    ``names``, the labels of the interfaces with frames; ``quiet``, the declared interfaces without any, as
    (label, what they hold instead: "no frames" or records cut before their ifindex, whether the option names it);
    ``unknown``, the records of no known interface. Returns (the refusal when the option names a quiet interface,
    else ""; what the capture holds, for "no such interface (…)")."""
    said = [f"{label}, {what}" for label, what, _m in quiet]
    n = unknown
    if names:
        holds = f"the capture holds: {'; '.join(names + said)}"
    elif n:
        holds = (
            f"the capture holds {n:,} {plural(n, 'record')} cut before {'its' if n == 1 else 'their'} ifindex"
        )
    else:
        declared = "; ".join(label for label, _w, _m in quiet)
        holds = "the capture holds no frames" + (f"; it declares {declared}" if declared else "")
    for label, what, matched in quiet:
        if matched:
            why = ", skipped as snaplen_cut whichever interface is replayed" if what != "no frames" else ""
            if names:
                on = f"the capture's frames are on: {'; '.join(names)}"
            else:  # no record at all: not "; it declares" the interface just named
                on = holds if n else "the capture holds no frames"
            return f"{label} holds {what}{why} ({on})", holds
    return "", holds


def _repeat_words(others: list, lab: dict, replayed: str, ambiguous: frozenset[int]) -> str:
    """The note's clause on the tunnel frames of the interfaces not replayed (``others``: (key, InterfaceStats))
    that repeat the replayed ones (``replayed``: their labels): two views of one device's frames, a bond or bridge
    and its port, replayed once. Which view is the port's the capture does not say for sure (a port's tap runs
    before its master's, but a file's order of records with equal times, or from several CPUs' buffers, need not
    follow it): no view is called the port, and each is named with the ``--interface`` that replays it. "" when
    none repeats."""
    rep = [(k, st) for k, st in others if st.repeats]
    if not rep:
        return ""
    views = ", ".join(f"{st.repeats:,} on {lab[k]} (--interface {st.select(ambiguous)})" for k, st in rep)
    return (
        f"; the same tunnel frames twice: {views} are also {replayed}'s (two views of one device's frames, a bond or "
        "bridge and its port: GRO ran once, on the port's NAPI; counted once; --interface replays another view "
        "instead)"
    )


#: what the frames of an unnamed interface of another section may be (``InterfaceStats.may_be_replayed``)
_TWIN = (
    "another device's traffic, merged by its own NAPI, or this device's in a second capture joined with cat: the "
    "interfaces are not named, and capture files rotated or split each start a section (mergecap -w joins them "
    "into one)"
)


def _tunnel_words(st: InterfaceStats) -> str:
    """What interface ``st``'s frames are, by their headers: "20 tunnel (all cut short: snaplen_cut, not
    replayed)", "no VXLAN or Geneve traffic", "no VXLAN or Geneve traffic in the 12 frames whose headers could be read";
    of the frames it received, those the capturing host sent (Linux cooked ``PACKET_OUTGOING``) not looked at: "all
    sent by the capturing host", "no VXLAN or Geneve traffic received, 400 sent by the capturing host" (newcomer38:
    "no VXLAN or Geneve traffic" was said of 400 frames the host sent to a VXLAN port)."""
    if st.sent and st.sent == st.frames:
        return "all sent by the capturing host"
    sent = f", {st.sent:,} sent by the capturing host" if st.sent else ""
    none = "no VXLAN or Geneve traffic" + (" received" if st.sent else "")
    n, cut = st.tunnel_frames, st.tunnel_cut
    if n:
        if not cut:
            return f"{n:,} tunnel{sent}"
        return (
            f"{n:,} tunnel ({'all' if cut == n else f'{cut:,}'} cut short: snaplen_cut, not replayed){sent}"
        )
    if st.unread:
        read = st.frames - st.sent - st.unread
        # breaker61: not "no VXLAN or Geneve traffic received in the 0 frames whose headers could be read"
        if not read:
            if not st.sent:
                return "none could be read to its UDP port"
            their = "its" if st.unread == 1 else "their"
            return f"the {st.unread:,} received could not be read to {their} UDP port{sent}"
        return (
            f"{none} in the {read:,} {plural(read, 'frame')} whose headers could be read "
            f"({st.unread:,} could not be read to their UDP port){sent}"
        )
    return f"{none}{sent}"
