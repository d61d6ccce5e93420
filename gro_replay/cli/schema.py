"""``gro-replay schema NAME``: the published JSON Schema of each document."""

from __future__ import annotations

import click

from ..report.schema import NAMES
from .command import Command
from .params import Keyword


@click.command("schema", cls=Command)
@click.argument("name", type=Keyword(list(NAMES)))
def schema_cmd(name: str) -> None:
    """Print the JSON Schema (draft 2020-12) of a document: replay (CAPTURE --format json), explain, diff,
    batch (the combined batch.json), kernel-backend (kernel CAPTURE --format json) or validate (validate CAPTURE
    --format json). Standalone: the replay schema the others refer to is embedded in their $defs."""
    from ..report.schema import bundled

    click.echo(bundled(name), nl=False)
