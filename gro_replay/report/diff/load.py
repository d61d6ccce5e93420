"""Loading a gro-replay JSON document for ``diff``: bounded size and depth, honest numbers, the replay schema's
``comparable`` part; every refusal a one-line ``DiffError``.
"""

from __future__ import annotations

import json
import math
import re
import sys

from ...project import plural
from .comparison import KNOWN_SCHEMA_VERSIONS, DiffError

#: the most bytes ``load_document`` reads of one document (``gro-replay diff --max-bytes``)
MAX_DOCUMENT_BYTES = 128 << 20
#: the deepest nesting of arrays and objects a document may have (gro-replay writes at most 6 levels)
MAX_DEPTH = 64
_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


class _Unusable:
    """A JSON number Python cannot compare honestly (NaN, ±Infinity, overflowing to infinity, thousands of digits);
    the schema check reports it with its JSON pointer instead of it passing as a value."""

    __slots__ = ("what",)

    def __init__(self, what: str) -> None:
        self.what = what

    def __repr__(self) -> str:
        return self.what


def _parse_constant(name: str) -> _Unusable:
    return _Unusable(f"{name} (not a finite number)")


def _parse_float(text: str):
    v = float(text)
    return v if math.isfinite(v) else _Unusable(f"{text[:24]} (overflows to infinity)")


def _parse_int(text: str):
    if len(text.lstrip("-")) > 20:
        return _Unusable(f"an integer of {len(text.lstrip('-'))} digits")
    return int(text)


def _too_deep(data: bytes) -> int | None:
    """Byte offset where ``data``'s arrays/objects nest deeper than ``MAX_DEPTH`` (strings skipped), or None."""
    depth = 0
    for m in _TOKENS.finditer(data):
        c = m.group()
        if c in (b"[", b"{"):
            depth += 1
            if depth > MAX_DEPTH:
                return m.start()
        elif c in (b"]", b"}"):
            depth -= 1
    return None


def _unusable_at(doc) -> str | None:
    """The JSON pointer of the first ``_Unusable`` value anywhere in ``doc`` (iterative walk), or None."""
    from ..schema import pointer

    stack: list[tuple[tuple[str | int, ...], object]] = [((), doc)]
    while stack:
        path, v = stack.pop()
        if isinstance(v, _Unusable):
            return pointer(path) + f": {v.what}"
        if isinstance(v, dict):
            stack.extend(((*path, k), x) for k, x in v.items())
        elif isinstance(v, list):
            stack.extend(((*path, i), x) for i, x in enumerate(v))
    return None


def _other_kind(doc: dict) -> str | None:
    """What another command's document is, by the fields that name it (explain's, validate's and diff's ``kind``,
    batch's ``command``): "an explain document (gro-replay explain --format json)", "a batch document (…)"; None
    for any other."""
    kinds = {
        "explain": "an explain document (gro-replay explain --format json)",
        "validate": "a validate document (gro-replay validate --format json)",
        "diff": "a diff document (gro-replay diff --format json)",
    }
    kind = doc.get("kind")
    if kind in kinds and (kind != "explain" or "kernels" not in doc):
        return kinds[kind]
    if doc.get("command") == "batch" and "captures" in doc:
        return (
            "a batch document (gro-replay batch --format json; each capture's own document is in --out DIR)"
        )
    return None


#: the path that names standard input, as the replay's CAPTURE ``-``
STDIN = "-"


def document_name(path: str) -> str:
    """How errors name the document at ``path``: "standard input" for ``-``, else the path."""
    return "standard input" if path == STDIN else path


def read_document(path: str, role: str, max_bytes: int = MAX_DOCUMENT_BYTES) -> bytes:
    """The bytes of the document at ``path`` (``-``: standard input, refused on a terminal), at most ``max_bytes``
    + 1 of them (more: larger than allowed). Raises: DiffError (one line)."""
    where = f"{role} {document_name(path)}"
    try:
        if path == STDIN:
            if sys.stdin is None or sys.stdin.isatty():
                raise DiffError(f"{where} is a terminal: pipe a document into it")
            return sys.stdin.buffer.read(max_bytes + 1)
        with open(path, "rb") as fh:
            return fh.read(max_bytes + 1)
    except OSError as e:
        raise DiffError(f"{where}: cannot read: {e.strerror or e}") from None


def load_document(
    path: str, role: str, max_bytes: int = MAX_DOCUMENT_BYTES, data: bytes | None = None
) -> dict:
    """Read a gro-replay JSON document (``data``: its bytes, already read by ``read_document``) and check it
    against the replay schema's ``comparable`` part.

    ``path``: a file, or ``-`` for standard input. ``role`` (BASELINE/CURRENT) prefixes errors. At most
    ``max_bytes`` bytes are read; NaN, ±Infinity, numbers that overflow, integers beyond 2**63-1, strings for
    numbers, missing keys and nesting deeper than ``MAX_DEPTH`` are refused. Raises: DiffError (one line naming
    the file and, where there is one, the JSON pointer of the offending field).
    """
    from ..schema import SchemaViolation, check

    where = f"{role} {document_name(path)}"
    if data is None:
        data = read_document(path, role, max_bytes)
    if not data:
        raise DiffError(f"{where}: empty {'input' if path == STDIN else 'file'}")
    if len(data) > max_bytes:
        raise DiffError(
            f"{where}: larger than {max_bytes:,} {plural(max_bytes, 'byte')} (--max-bytes): raise --max-bytes to "
            "read it"
        )
    at = _too_deep(data)
    if at is not None:
        raise DiffError(f"{where}: arrays/objects nested deeper than {MAX_DEPTH} levels (at byte {at})")
    try:
        doc = json.loads(
            data.decode("utf-8"),
            parse_constant=_parse_constant,
            parse_float=_parse_float,
            parse_int=_parse_int,
        )
    except UnicodeDecodeError as e:
        raise DiffError(f"{where}: not UTF-8 text (byte {e.start})") from None
    except (json.JSONDecodeError, RecursionError, ValueError) as e:
        raise DiffError(f"{where}: not JSON ({str(e)[:120]})") from None
    if not isinstance(doc, dict) or "schema_version" not in doc:
        raise DiffError(f"{where}: not a gro-replay JSON document (no schema_version)")
    ver = doc["schema_version"]
    if ver not in KNOWN_SCHEMA_VERSIONS or type(ver) is not int:
        known = ", ".join(str(v) for v in KNOWN_SCHEMA_VERSIONS)
        raise DiffError(f"{where}: unknown schema_version {repr(ver)[:40]} (this gro-replay reads {known})")
    other = _other_kind(doc)
    if other is not None:
        raise DiffError(
            f"{where}: {other}, not a replay document: diff compares documents of gro-replay CAPTURE --format json"
        )
    try:
        check(doc, "replay#/$defs/comparable")
    except SchemaViolation as e:
        raise DiffError(f"{where}: {e.pointer}: {e.reason}") from None
    bad = _unusable_at(doc)
    if bad is not None:
        raise DiffError(f"{where}: {bad}")
    return doc
