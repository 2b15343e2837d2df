"""``cometa corpus build``: the offline literature world built from the shared data folder."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from app._progress import progress_bar
from retrieval.world import WorldInputError, build_world

__all__ = ["corpus_app"]

corpus_app = typer.Typer(
    no_args_is_help=True,
    help="The offline literature world: build PubMed XML + PMC JATS from the shared data sets.",
)
_err = Console(stderr=True)


@corpus_app.command("build")
def build(
    source: Annotated[
        Path, typer.Option("--from", help="The shared data folder (holds cohen2006/, pubmedqa/, mesh/, ...).")
    ],
    out: Annotated[Path, typer.Option("--out", help="Where the world goes (empty or a previous world).")],
    limit: Annotated[
        int | None, typer.Option(min=1, help="Keep the first N records of every source (a small world).")
    ] = None,
) -> None:
    """Build the world; serve it with COMETA_LOCAL_SERVER__CORPUS_DIR=OUT."""
    started = time.perf_counter()
    try:
        with progress_bar("building the world") as on_progress:
            manifest = build_world(source, out, on_progress, limit=limit)
    except WorldInputError as exc:
        _err.print(f"[bold red]error:[/] {type(exc).__name__}: {exc}")
        raise typer.Exit(code=2) from exc
    counts = manifest["counts"]
    sys.stdout.write(json.dumps(counts, indent=2) + "\n")
    _err.print(
        f"{counts['pubmed_records']} PubMed records, {counts['pmc_articles']} PMC articles in {out} "
        f"({time.perf_counter() - started:.1f} s)"
    )
