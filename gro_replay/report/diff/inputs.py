"""``gro-replay diff``: the two documents' inputs — whether they are known to be of one capture (the digests both
record, capture/digest.py; for documents without one, the same name, unless it names a stream) and how they are
said."""

from __future__ import annotations

import posixpath

from ...capture.digest import digest_words, recorded
from ...capture.reader import path_words
from ...project import plural


def input_words(inp: dict | None, short: bool = False, only: str | None = None) -> str:
    """A document's ``input`` in words: "replayed PATH (blake3 0123456789ab)" (its digests, capture/digest.py;
    ``only``: that algorithm's alone, the one two documents share), or what it lacks: "has no input recorded" (no
    ``input`` object, or neither path nor digest), "replayed PATH (no digest recorded)"; ``short``: the path alone
    ("(no input recorded)" without one)."""
    inp = inp or {}
    path, digests = inp.get("path"), recorded(inp)
    if only is not None:
        digests = {a: h for a, h in digests.items() if a == only}
    if short:
        return path_words(str(path)) if path else "(no input recorded)"
    if not path and not digests:
        return "has no input recorded"
    where = f"replayed {path_words(str(path))}" if path else "replayed an unnamed input"
    said = ", ".join(digest_words(a, h) for a, h in digests.items())
    return f"{where} ({said})" if said else f"{where} (no digest recorded)"


def same_input(bi: dict | None, ci: dict | None) -> tuple[bool, str | None]:
    """Whether two documents' ``input`` are known to be of the same bytes, and the digest that says so or tells
    them apart (None: no digest both record).

    By the digests both record (capture/digest.py ``DIGESTS``: BLAKE3, or SHA-256 with ``--digest sha256`` and in
    documents before BLAKE3): the same when they agree. Without one both record, two documents are of one input
    only when neither records a digest (older or hand-made ones), they name the same path (or none) and they read
    as many frames and bytes; a digest of another algorithm says nothing of the other document's bytes; nor does
    a stream's name (``_stream_name``: breaker39), which any capture piped in has."""
    bd, cd = recorded(bi), recorded(ci)
    shared = [a for a in bd if a in cd]
    if shared:
        return all(bd[a] == cd[a] for a in shared), shared[0]
    path = (bi or {}).get("path")
    # frames or bytes read differing: not one capture whatever the name (breaker41, breaker42)
    same_count = _counts(bi) == _counts(ci)
    named = path == (ci or {}).get("path") and not _stream_name(path)
    return not bd and not cd and named and same_count, None


def _counts(inp: dict | None) -> tuple:
    """``(frames_read, bytes)`` a document's ``input`` records (None for either it lacks)."""
    inp = inp or {}
    return inp.get("frames_read"), inp.get("bytes")


def unknown_why(bi: dict | None, ci: dict | None) -> str:
    """Why two documents that record no digest and name the same path are not known to be of one capture
    (``same_input``): " (PATH names a stream, which any capture piped in has)" or " (they read N and M frames)"
    (or bytes); "" otherwise (a digest, or two names, say it). breaker43: two identical names were refused with no
    reason."""
    bi, ci = bi or {}, ci or {}
    path = bi.get("path")
    if recorded(bi) or recorded(ci) or not path or path != ci.get("path"):
        return ""
    if _stream_name(path):
        return f" ({path_words(str(path))} names a stream, which any capture piped in has)"
    for b, c, unit in zip(_counts(bi), _counts(ci), ("frames", "bytes"), strict=True):
        if b != c:
            return f" (they read {b} and {c} {unit})"
    return ""


def digest_why(bi: dict | None, ci: dict | None) -> str:
    """Why two documents whose shared digest differs (``same_input``) may still be of the same packets: when both
    read as many frames and bytes, " (both read N frames and B bytes: each digest is of the capture's bytes as
    read, so a compressed or rewritten copy of one capture — gzip, tcpdump -w, editcap — has another)"; ""
    otherwise (newcomer34: a gzip copy piped in was refused as "different inputs" with no hint why)."""
    frames, size = _counts(bi)
    if _counts(ci) != (frames, size) or not (isinstance(frames, int) and isinstance(size, int)):
        return ""
    return (
        f" (both read {frames:,} {plural(frames, 'frame')} and {size:,} {plural(size, 'byte')}: each digest is of "
        "the capture's bytes as read, so a compressed or rewritten copy of one capture (gzip, tcpdump -w, editcap) "
        "has another)"
    )


def _stream_name(path) -> bool:
    """Whether ``path`` names a stream that any capture piped in has: ``-``, or a path, absolute or relative, that
    ends in ``dev/stdin`` or in ``fd/N`` (``/dev/fd/N``, ``/proc/PID/fd/N``, ``/proc/self/root/dev/stdin``,
    ``../dev/stdin``), spelled any way (``//``, ``.``, ``..``: breaker40–42); a FIFO's own name cannot be told
    from a file's in a document."""
    if path == "-":
        return True
    if not isinstance(path, str) or not path:
        return False
    parts = [p for p in posixpath.normpath(path).split("/") if p]
    return parts[-2:] == ["dev", "stdin"] or (len(parts) >= 2 and parts[-2] == "fd" and parts[-1].isdigit())


def inputs_words(bi: dict | None, ci: dict | None) -> str:
    """Two documents' different inputs: "BASE_PATH → CUR_PATH" (``input_words`` short), each with its digest where
    the names are the same (two captures piped in: "standard input (blake3 974e0b4b7986) → standard input (blake3
    c6e16f95f7e1)")."""
    b, c = input_words(bi, short=True), input_words(ci, short=True)
    if b == c:
        b, c = (input_words(x).removeprefix("replayed ") for x in (bi, ci))
    return f"{b} → {c}"


def _digest_advice(bi: dict | None, ci: dict | None) -> str:
    """When each document records a digest and none is the other's: how to make the current one comparable, if
    both are of one capture ("if both are of one capture, replay it with --digest sha256 for the current document,
    or "); else ""."""
    bd, cd = recorded(bi), recorded(ci)
    if not bd or not cd or set(bd) & set(cd):
        return ""
    return (
        f"if both are of one capture, replay it with --digest {next(iter(bd))} for the current document, or "
    )


def replayed_view(doc: dict) -> tuple[str, str] | None:
    """Which interfaces of its capture a document replayed and how they were chosen: ("interface 1 (bond0)",
    " (--interface bond0)"), ("interface 0 (eth0)", " (by default)"), or with "" where the document does not record
    the option (``input.interfaces[]``, the entries marked ``replayed``, each named by a string; ``config.interface``);
    None when it lists no interface replayed (a capture of one, an older or edited document)."""
    inp = doc.get("input")
    listed = inp.get("interfaces") if isinstance(inp, dict) else None
    rows = [
        e
        for e in (listed if isinstance(listed, list) else [])
        if isinstance(e, dict) and e.get("replayed") is True
    ]
    if not rows or not all(isinstance(e.get("interface"), str) for e in rows):
        return None
    cfg = doc.get("config")
    if not isinstance(cfg, dict) or "interface" not in cfg:
        how = ""
    else:
        how = " (by default)" if cfg["interface"] is None else f" (--interface {cfg['interface']})"
    return " and ".join(e["interface"] for e in rows), how


def interface_note(base: dict, cur: dict) -> tuple[str | None, bool]:
    """The note of two documents that replayed other interfaces of their capture (``replayed_view``): "interface
    replayed: interface 0 (eth0) (by default) → interface 1 (bond0) (--interface bond0): other records of the
    capture, so a change between the documents may be theirs, not the kernel's" (newcomer37: the note said
    ``config interface: null → "bond0"``, not naming the baseline's interface), and whether the interfaces each
    replayed are known (then ``config.interface`` says nothing more: the default and ``--interface`` naming it
    replay the same records). (None, False) when either lists none."""
    b, c = replayed_view(base), replayed_view(cur)
    if b is None or c is None:
        return None, False
    if b[0] == c[0]:
        return None, True
    return (
        f"interface replayed: {b[0]}{b[1]} → {c[0]}{c[1]}: other records of the capture, so a change between the "
        "documents may be theirs, not the kernel's"
    ), True
