"""``cometa collections``: ingest institutional handbooks and search them per document (HERO-QA)."""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from app._progress import progress_bar
from app.settings import Settings, get_settings
from retrieval import CometaError
from retrieval.collections import (
    CollectionMeta,
    CollectionRetriever,
    CollectionSettings,
    CollectionStore,
    IngestReport,
    InstEvidence,
)

__all__ = ["collections_app"]

collections_app = typer.Typer(
    no_args_is_help=True,
    help="Institutional collections: ingest handbooks (PDF, HTML, Markdown, JATS) and search them.",
)

console = Console()
err_console = Console(stderr=True)

RootOpt = Annotated[
    Path | None,
    typer.Option(
        "--root", help="Collections folder (default: COMETA_COLLECTIONS__ROOT, else ~/.local/share)."
    ),
]


def _collection_settings(settings: Settings) -> CollectionSettings:
    found = getattr(settings, "collections", None)
    return found if isinstance(found, CollectionSettings) else CollectionSettings()


def _store(root: Path | None) -> CollectionStore:
    cs = _collection_settings(get_settings())
    if root is not None:
        cs = cs.model_copy(update={"root": root})
    return CollectionStore.from_settings(cs)


def _fail(exc: Exception, code: int = 1) -> typer.Exit:
    err_console.print(f"[red]error:[/red] {escape(str(exc))}")
    return typer.Exit(code)


def _parse_attrs(pairs: list[str] | None) -> dict[str, str] | None:
    if not pairs:
        return None
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint="--attr")
        out[key.strip()] = value.strip()
    return out


def _report_json(name: str, report: IngestReport) -> dict[str, Any]:
    return {"collection": name, **asdict(report)}


@collections_app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="Collection name: [a-z0-9][a-z0-9_-]{0,63}.")],
    paths: Annotated[list[Path], typer.Argument(help="Files or folders (walked for .pdf .html .md .xml).")],
    institution: Annotated[str | None, typer.Option(help="Institution that publishes the documents.")] = None,
    topic: Annotated[str | None, typer.Option(help="Organ or topic, e.g. 'kidney transplant'.")] = None,
    care_phase: Annotated[str | None, typer.Option(help="Care phase, e.g. 'post-transplant'.")] = None,
    version_date: Annotated[str | None, typer.Option(help="Handbook version date, YYYY-MM-DD.")] = None,
    private: Annotated[
        bool | None, typer.Option("--private/--public", help="Private collections are default-deny.")
    ] = None,
    description: Annotated[str | None, typer.Option(help="Free-text description.")] = None,
    attr: Annotated[
        list[str] | None, typer.Option(help="KEY=VALUE attribute for every document added (repeatable).")
    ] = None,
    root: RootOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the ingest report as JSON.")] = False,
) -> None:
    """Ingest documents into a collection (created if needed). Re-adding unchanged files is a no-op."""
    store = _store(root)
    given = {
        "institution": institution,
        "topic": topic,
        "care_phase": care_phase,
        "version_date": version_date,
        "private": private,
        "description": description,
    }
    updates = {k: v for k, v in given.items() if v is not None}
    try:
        meta: CollectionMeta | None = None
        if updates:
            base = store.get(name).meta if store.exists(name) else CollectionMeta(name=name)
            meta = CollectionMeta.model_validate({**base.model_dump(), **updates})
        with progress_bar(f"ingesting into {name}", min_total=2) as on_progress:
            report = store.add(
                name, paths, meta, attributes=_parse_attrs(attr), on_progress=None if as_json else on_progress
            )
    except ValidationError as exc:
        raise _fail(ValueError(exc.errors()[0]["msg"]), 2) from exc
    except CometaError as exc:
        raise _fail(exc, 2 if isinstance(exc, ValueError) else 1) from exc
    if as_json:
        typer.echo(json.dumps(_report_json(name, report)))
    else:
        console.print(
            f"[bold]{escape(name)}[/bold]: {len(report.added)} added, {len(report.updated)} updated, "
            f"{len(report.unchanged)} unchanged, {len(report.failed)} failed"
        )
        for path, reason in report.failed.items():
            err_console.print(f"  [red]failed[/red] {escape(path)}: {escape(reason)}")
    if report.failed and not (report.added or report.updated or report.unchanged):
        raise typer.Exit(1)


@collections_app.command("list")
def list_(
    root: RootOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List the collections and their metadata."""
    store = _store(root)
    metas = store.list()
    if as_json:
        typer.echo(json.dumps([m.model_dump() for m in metas]))
        return
    table = Table("name", "institution", "topic", "care phase", "version", "private", "documents")
    for m in metas:
        table.add_row(
            m.name,
            escape(m.institution),
            escape(m.topic),
            escape(m.care_phase),
            m.version_date or "",
            "yes" if m.private else "",
            str(len(store.get(m.name).documents)),
        )
    console.print(table)


@collections_app.command("show")
def show(
    name: Annotated[str, typer.Argument(help="Collection name.")],
    root: RootOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """A collection's metadata, documents and their sections (with pages)."""
    try:
        coll = _store(root).get(name)
    except CometaError as exc:
        raise _fail(exc) from exc
    if as_json:
        obj = {
            "meta": coll.meta.model_dump(),
            "documents": [
                {k: v for k, v in d.to_json().items() if k != "sections"}
                | {"sections": [{k: v for k, v in s.items() if k != "body"} for s in d.to_json()["sections"]]}
                for d in coll.documents
            ],
        }
        typer.echo(json.dumps(obj))
        return
    m = coll.meta
    console.print(
        f"[bold]{escape(m.name)}[/bold] {escape(m.institution)} | {escape(m.topic)} | "
        f"{escape(m.care_phase)} | version {m.version_date or '-'}{' | private' if m.private else ''}"
    )
    for d in coll.documents:
        attrs = ", ".join(f"{k}={v}" for k, v in d.attributes.items())
        console.print(
            f"\n[bold]{escape(d.doc_id)}[/bold] {escape(d.title)} ({d.format}, {len(d.text):,} chars, "
            f"{escape(d.source_name)}){' ' + escape(attrs) if attrs else ''}"
        )
        for s in d.sections:
            pages = f" {s.ref.pages}" if s.ref.pages else ""
            console.print(
                f"  {escape(s.section_id)}{pages}  {escape(s.heading)}  [dim]{len(s.body):,} chars[/dim]"
            )


@collections_app.command("remove")
def remove(
    name: Annotated[str, typer.Argument(help="Collection name.")],
    root: RootOpt = None,
) -> None:
    """Delete a collection and its cached index."""
    try:
        _store(root).remove(name)
    except CometaError as exc:
        raise _fail(exc) from exc
    console.print(f"removed {escape(name)}")


def _evidence_json(e: InstEvidence) -> dict[str, Any]:
    return {**asdict(e), "cite": e.cite()}


@collections_app.command("search")
def search(
    name: Annotated[str, typer.Argument(help="Collection name.")],
    question: Annotated[str, typer.Argument(help="The question.")],
    top_docs: Annotated[int, typer.Option(min=1, max=1000, help="Documents to return.")] = 3,
    whole_doc_max_chars: Annotated[
        int | None, typer.Option(min=0, help="Override the whole-document threshold (characters).")
    ] = None,
    chunker: Annotated[str | None, typer.Option(help="window | seos (override the setting).")] = None,
    offline: Annotated[
        bool,
        typer.Option(
            "--offline/--live",
            help="--offline: the MiniLM encoder and bi-encoder rerank unless COMETA_DENSE__ENCODER / "
            "COMETA_RERANK__MODEL are set; --live: the configured hub models.",
        ),
    ] = False,
    show_text: Annotated[
        int, typer.Option(min=0, help="Print up to N characters of each evidence text.")
    ] = 0,
    root: RootOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the evidence as JSON.")] = False,
) -> None:
    """Per-document evidence for a question, with the route (whole / chunks / whole_fallback) and sections."""
    from retrieval.embed import load_encoder, load_reranker

    settings = get_settings()
    if offline:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # offline means no hub lookups at all
        settings = settings.offline()
    search_settings = _collection_settings(settings).search
    overrides: dict[str, Any] = {}
    if whole_doc_max_chars is not None:
        overrides["whole_doc_max_chars"] = whole_doc_max_chars
    if chunker is not None:
        if chunker not in ("window", "seos"):
            raise typer.BadParameter("expected window or seos", param_hint="--chunker")
        overrides["chunker"] = chunker
    search_settings = search_settings.model_copy(update=overrides)
    try:
        coll = _store(root).get(name)
        encoder = load_encoder(settings.dense)
        reranker = load_reranker(settings.rerank, encoder=encoder)
        with progress_bar("encoding the chunks", min_total=65) as on_progress:
            retriever = CollectionRetriever(
                coll,
                encoder,
                reranker,
                search_settings,
                rrf_k=settings.evidence.rrf_k,
                on_progress=None if as_json else on_progress,
            )
            evidence = asyncio.run(retriever.search(question, top_docs=top_docs))
    except CometaError as exc:
        raise _fail(exc) from exc
    except ValueError as exc:
        raise _fail(exc, 2) from exc
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "collection": name,
                    "reranker": reranker.name,
                    "evidence": [_evidence_json(e) for e in evidence],
                }
            )
        )
        return
    if not evidence:
        console.print("no documents")
        return
    for rank, e in enumerate(evidence, start=1):
        console.print(
            f"[bold]{rank}. {escape(e.title)}[/bold] {escape(e.cite())}\n"
            f"   route [cyan]{e.route}[/cyan]  score {e.score:.3f}  coverage "
            f"{'-' if e.coverage is None else f'{e.coverage:.2f}'}  ({escape(e.reason)})"
        )
        for ref in e.sections:
            console.print(f"   \u00a7 {escape(ref.heading)} {ref.pages}  [dim]{escape(ref.section_id)}[/dim]")
        if show_text:
            text = e.text if len(e.text) <= show_text else e.text[:show_text] + " \u2026"
            console.print(f"[dim]{escape(text)}[/dim]")
