"""The words about the input: what was not replayed and why (skip reasons, filters), and the tunnel traffic of a
capture's other devices that was left out. The verdict's sentences, the input notes and the CLI's errors use them.
"""

from __future__ import annotations

from ...capture.interface_stats import cut_words, shared_words
from ...project import and_list, plural
from .facts import _FILTER_OPTIONS


def filtered_text(filtered: dict) -> str:
    """``InputStats.filtered`` (option key → frames) in words: "17 frames filtered out by -f" ("" when none)."""
    return ", ".join(
        f"{v:,} {plural(v, 'frame')} filtered out by {_FILTER_OPTIONS.get(k, k)}"
        for k, v in sorted(filtered.items())
        if v
    )


def gone_words(inp) -> list[str]:
    """What kept frames of ``inp`` (``sim.InputStats``) from the replay, e.g. ["skipped other_interface 20",
    "8 frames filtered out by -f"] (skip reasons, then filters; [] when nothing was left out)."""
    skipped = ", ".join(f"{k} {v:,}" for k, v in sorted(inp.skipped.items()) if v)
    gone = [f"skipped {skipped}"] if skipped else []
    filtered = getattr(inp, "filtered", {})
    return gone + ([filtered_text(filtered)] if any(filtered.values()) else [])


def not_replayed_text(inp) -> str:
    """Why no frame of ``inp`` (``sim.InputStats``) was replayed, e.g. "none of the 20 frames read was replayed
    (skipped snaplen_cut 12, 8 frames filtered out by -f)", or "the capture holds no frames"."""
    if not inp.frames_read:
        return "the capture holds no frames"
    gone = gone_words(inp)
    n = inp.frames_read
    return (
        "the one frame read was not replayed" if n == 1 else f"none of the {n:,} frames read was replayed"
    ) + (f" ({', '.join(gone)})" if gone else "")


def left_out_text(inp) -> str:
    """The tunnel traffic of a capture's other devices that was not replayed (``sim.InputStats.interfaces``, rows of
    capture/interfaces.py ``Selection.as_list``), e.g. "Only interface 0 (eth0) was replayed: tunnel frames of
    another device, which its own NAPI merges, are in no count here: 10 on interface 1 (eth1) (--interface eth1
    replays them)."; "" when nothing was left out. Repeats of replayed frames (a bond) and decapsulated copies are
    not left-out traffic."""
    rows = getattr(inp, "interfaces", None) or []
    out = [r for r in rows if not r.get("replayed", True) and r.get("tunnel_frames_left_out", 0)]
    if not out:
        return ""
    replayed = " and ".join(r["interface"] for r in rows if r.get("replayed"))
    each = "; ".join(
        f"{r['tunnel_frames_left_out']:,} on {r['interface']} ({r['select']} replays "
        f"{'it' if r['tunnel_frames_left_out'] == 1 else 'them'}"
        f"{cut_words(r['tunnel_frames_left_out'], r.get('tunnel_frames_left_out_cut', 0))})"
        for r in out
    )
    shared, n = shared_words([(r["interface"], r["tunnel_frames_left_out"], _also(r)) for r in out])
    if shared:  # the same frames on several views: how many devices received them is not known (breaker61)
        each += (
            f". They are {n:,} distinct {plural(n, 'frame')}: {shared} (views of the same frames, a bond or bridge "
            "and its ports)"
        )
        who = "devices other than the one replayed, which their own NAPIs merge"
    else:
        who = (
            "another device, which its own NAPI merges"
            if len(out) == 1
            else "other devices, which their own NAPIs merge"
        )
    if all(r.get("may_be_replayed_device") for r in out):  # capture/interface_stats.py ``may_be_replayed``
        who += (
            ", or of this device in captures joined with cat (the interfaces are not named; mergecap -w joins "
            "captures)"
        )
    copies = [
        (n, r["interface"])
        for r in rows
        if r.get("replayed") and isinstance(r.get("copies_of_tunnel_payload_left_out"), dict)
        for n in [sum(v for v in r["copies_of_tunnel_payload_left_out"].values() if isinstance(v, int))]
        if n
    ]
    one = sum(n for n, _label in copies) == 1
    inner = (
        f" Of the frames replayed, {and_list([f'{n:,} on {label}' for n, label in copies])} "
        + (
            "carries the inner packet of one of those tunnel frames: most likely a decapsulated copy, a tunnel "
            "device's, which never reaches a physical device's NAPI, counted here as if one received it."
            if one
            else "carry the inner packets of those tunnel frames: most likely decapsulated copies, a tunnel "
            "device's, which never reach a physical device's NAPI, counted here as if one received them."
        )
        if copies
        else ""
    )
    return f"Only {replayed} was replayed: tunnel frames of {who}, are in no count here: {each}.{inner}"


def _also(row: dict) -> dict:
    """A row's ``tunnel_frames_left_out_also`` (label → frames), {} where the document has none."""
    also = row.get("tunnel_frames_left_out_also")
    return also if isinstance(also, dict) else {}


def fragments_sentence(n: int) -> str:
    """The verdict of a replay whose only tunnel traffic is ``n`` first fragments of outer datagrams to a tunnel
    port (``InputStats.fragments_to_tunnel``): reassembly is not modelled, so nothing is said of the fix there."""
    return (
        f"No flow carries VXLAN or Geneve traffic whole: {'the one frame' if n == 1 else f'the {n:,} frames'} to a tunnel port "
        f"{'is the first fragment' if n == 1 else 'are first fragments'} of outer datagrams, and the replay does not "
        "reassemble fragments (a kernel does when all of a datagram's arrive, and decapsulates it), so what the fix "
        "changes for them is not known here."
    )
