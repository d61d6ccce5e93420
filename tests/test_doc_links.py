"""The README's and docs/'s links lead somewhere: every relative link names a file of the checkout, and every
``#anchor`` a heading of the file it points into (GitHub's heading ids: lower case, punctuation but ``-`` and ``_``
dropped, spaces to ``-``). The README sends readers to docs/model.md and docs/performance.md by section."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    out: set[str] = set()
    inside = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            inside = not inside
        elif not inside and (m := re.match(r"#{1,6} (.+)", line)):
            out.add(_slug(m.group(1)))
    return out


def _links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return [t for t in _LINK.findall(text) if not re.match(r"[a-z]+:", t)]


def test_slug_follows_githubs_heading_ids():
    assert _slug("explain --skbs: each skb and what ended it") == "explain---skbs-each-skb-and-what-ended-it"
    assert _slug("Performance and many captures") == "performance-and-many-captures"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_and_anchor_resolves(doc):
    links = _links(doc)
    bad = []
    for link in links:
        target, _, anchor = link.partition("#")
        path = (doc.parent / target).resolve() if target else doc
        if not path.exists():
            bad.append(f"{link}: no file {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            bad.append(f"{link}: no heading #{anchor} in {path.name}")
    assert not bad, bad


def test_the_readme_links_the_sections_moved_to_docs():
    links = set(_links(ROOT / "README.md"))
    assert {
        "docs/model.md",
        "docs/model.md#distribution-kernels",
        "docs/model.md#not-modelled",
        "docs/performance.md",
        "docs/performance.md#gro-replay-batch",
    } <= links


def _closed(node, path: str = "") -> list[str]:
    """JSON pointers of the schema objects that refuse keys they do not list (``additionalProperties: false``)."""
    out = []
    if isinstance(node, dict):
        if node.get("additionalProperties") is False:
            out.append(path)
        for k, v in node.items():
            out += _closed(v, f"{path}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _closed(v, f"{path}/{i}")
    return out


def test_the_readme_names_every_closed_schema_object():
    """README "Schemas": objects allow additional properties (keys are only ever added) but for the few it names;
    those are exactly the shipped schemas' objects with ``additionalProperties: false``."""
    import json

    schemas = ROOT / "gro_replay" / "report" / "schema"
    closed = {
        f"{p.stem}:{ptr}"
        for p in sorted(schemas.glob("*.json"))
        for ptr in _closed(json.loads(p.read_text()))
    }
    assert closed == {
        "explain:/$defs/skb_list",
        "explain:/$defs/skb",
        "explain:/$defs/skb/properties/ended_by/oneOf/1",
        "explain:/$defs/skb/properties/ended_by/oneOf/1/properties/seq_gap",
        "replay:/$defs/input/properties/tunnel_both_ways/items",
    }
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert (
        "but for a few whose keys are closed: explain's `skb_list`, its skb rows and their `ended_by` and "
        "`seq_gap`, and the replay's `input.tunnel_both_ways` items" in readme
    )
