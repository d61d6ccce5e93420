"""``gro-replay diff``: compare two JSON documents (``gro-replay CAPTURE --format json``) for CI.

Per kernel and GRO stage the comparison shows skbs delivered, the aggregation ratio (segments per skb), the
aggregates, the bytes checksummed in software and, per flow, skbs and segments per skb; each with its delta.
A *checked* metric regresses when it moves the wrong way by more than ``max_regression_pct`` percent of the
baseline (segments per skb down, skbs or software-checksummed bytes up). The replay is deterministic, so with
the same input and configuration any change comes from the kernel model or the tool; the default threshold is
therefore 0 %: any loss of aggregation fails the check.

Documents are refused (``DiffError``, one line) when their ``schema_version`` is unknown, when they hold
different kernel sets (unless each holds exactly one kernel: then those two are compared, e.g. a ``--fix`` run
against a ``--no-fix`` run), and when their inputs differ (``input.blake3``, or ``input.sha256``: the digest both
record, capture/digest.py) unless explicitly allowed.

Modules: ``metrics.py`` (what is compared and how a loss is measured), ``comparison.py`` (``compare``),
``load.py`` (reading a document: bounded, honest numbers, schema-checked), ``render.py`` (sentences, Markdown, the
table); their public names are re-exported here.
"""

from .comparison import (
    DEFAULT_MAX_REGRESSION_PCT,
    KNOWN_SCHEMA_VERSIONS,
    STAGE_TITLES,
    DiffError,
    compare,
)
from .load import MAX_DEPTH, MAX_DOCUMENT_BYTES, load_document
from .metrics import CHECKABLE, DEFAULT_METRICS, METRICS, Metric
from .render import (
    fmt_change,
    fmt_delta,
    fmt_value,
    observed_sentence,
    regression_sentence,
    render_markdown,
    render_table,
)

__all__ = [
    "CHECKABLE",
    "DEFAULT_MAX_REGRESSION_PCT",
    "DEFAULT_METRICS",
    "KNOWN_SCHEMA_VERSIONS",
    "MAX_DEPTH",
    "MAX_DOCUMENT_BYTES",
    "METRICS",
    "STAGE_TITLES",
    "DiffError",
    "Metric",
    "compare",
    "fmt_change",
    "fmt_delta",
    "fmt_value",
    "load_document",
    "observed_sentence",
    "regression_sentence",
    "render_markdown",
    "render_table",
]
