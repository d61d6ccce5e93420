"""The published JSON Schemas (draft 2020-12) of gro-replay's documents, and the checks built on them.

Files (package data, printed by ``gro-replay schema NAME``): ``replay.json`` (``gro-replay CAPTURE --format
json``), ``explain.json``, ``diff.json``, ``batch.json`` (the combined ``batch.json``; each capture's own file is
a replay document), ``kernel-backend.json`` (``gro-replay kernel CAPTURE --format json``) and ``validate.json``
(``gro-replay validate CAPTURE --format json``). Every object allows additional properties: the document contract
is that keys are only ever added; the keys a schema lists are required and typed. ``replay.json#/$defs/comparable``
is the part of the replay schema that ``gro-replay diff`` reads and checks its inputs against.

With ``GRO_REPLAY_CHECK_SCHEMA=1`` in the environment (the test suite sets it), every document the commands print
or write through ``dumps`` is validated first, so a change that breaks the published shape fails loudly.
"""

from __future__ import annotations

import json
import os
from functools import cache

from ...project import shortened

NAMES = ("replay", "explain", "diff", "batch", "kernel-backend", "validate")
_URN = "urn:gro-replay:schema:"
_MESSAGE_MAX = 160


class SchemaViolation(ValueError):
    """A document does not match its schema. ``pointer``: JSON pointer of the offending value; ``reason``: why."""

    def __init__(self, pointer: str, reason: str) -> None:
        super().__init__(f"{pointer or '/'}: {reason}")
        self.pointer = pointer or "/"
        self.reason = reason


def text(name: str) -> str:
    """The schema file ``NAME.json`` as shipped. Raises KeyError for an unknown name."""
    if name not in NAMES:
        raise KeyError(name)
    # imported here: importlib.resources brings tempfile and zipfile (~0.03 CPU s), which a replay does without
    from importlib import resources

    return resources.files(__package__).joinpath(f"{name}.json").read_text(encoding="utf-8")


def bundled(name: str) -> str:
    """The schema ``NAME`` as one standalone document (JSON text): the schemas it refers to by URN are embedded in
    its ``$defs`` with their own ``$id`` (draft 2020-12 compound schema), so any 2020-12 validator resolves them
    without gro-replay's registry. Raises KeyError for an unknown name."""
    own = text(name)
    refs = sorted({n for n in NAMES if n != name and f'"{_URN}{n}#' in own})
    if not refs:
        return own
    doc = json.loads(own)
    defs = doc.setdefault("$defs", {})
    for n in refs:
        defs[f"gro-replay:{n}"] = load(n)
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


@cache
def load(name: str) -> dict:
    """The schema ``name`` (one of ``NAMES``) as a dict."""
    return json.loads(text(name))


@cache
def _registry():
    from referencing import Registry, Resource

    return Registry().with_resources((f"{_URN}{n}", Resource.from_contents(load(n))) for n in NAMES)


@cache
def validator(ref: str):
    """A ``jsonschema.Draft202012Validator`` for ``ref``: a schema name, or ``NAME#/$defs/PART``."""
    from jsonschema import Draft202012Validator

    name, _, frag = ref.partition("#")
    schema = load(name) if not frag else {"$ref": f"{_URN}{name}#{frag}"}
    return Draft202012Validator(schema, registry=_registry())


def kind_of(doc: dict) -> str:
    """Which schema a document follows: its ``kind`` (explain, diff, validate), ``command`` (batch) or ``backend``."""
    if doc.get("kind") in ("explain", "diff", "validate"):
        return doc["kind"]
    if doc.get("command") == "batch":
        return "batch"
    if doc.get("backend") == "kernel":
        return "kernel-backend"
    return "replay"


def pointer(path) -> str:
    """A JSON pointer (RFC 6901) for a sequence of keys and indexes."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def check(doc, ref: str | None = None) -> None:
    """Validate ``doc`` against ``ref`` (default: ``kind_of(doc)``).

    Raises: SchemaViolation naming the JSON pointer of the first (most relevant) error, message ≤ 160 chars.
    """
    from jsonschema.exceptions import best_match

    if ref is None:
        ref = kind_of(doc) if isinstance(doc, dict) else "replay"
    err = best_match(validator(ref).iter_errors(doc))
    if err is not None:
        inst = err.instance
        if err.validator in ("maximum", "minimum") and type(inst) is int and abs(inst) > 10**20:
            reason = f"an integer of {len(str(abs(inst)))} digits is out of range (at most 2**63-1)"
        else:
            reason = err.message
        raise SchemaViolation(pointer(err.absolute_path), shortened(reason, _MESSAGE_MAX))


def dumps(doc: dict) -> str:
    """``json.dumps(doc, indent=2)`` of a document about to be printed or written; never NaN or Infinity.

    With ``GRO_REPLAY_CHECK_SCHEMA`` set, the document is validated against its schema first.
    Raises: ValueError (a non-finite number), SchemaViolation (checking on, document off its schema).
    """
    if os.environ.get("GRO_REPLAY_CHECK_SCHEMA"):
        check(doc)
    return json.dumps(doc, indent=2, allow_nan=False)
