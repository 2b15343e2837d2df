"""The ``cometa`` command line."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from dataclasses import asdict
from importlib.metadata import entry_points
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from app import __version__, progress_bar
from app.asker import Done, Stage, Token
from app.container import Container, build_pipeline
from app.factories import build_eutils_client, build_eutils_transport
from app.frontends import ask_response, event_json, search_out
from app.pipeline import SearchOutcome
from app.schemas import AskRequest, AskResponse
from app.settings import LocalCorpusSettings, Settings, get_settings, local_server_settings
from core import OnProgress
from retrieval import CometaError, EutilsError, PubmedRecord

from ._collections import collections_app
from ._corpus import corpus_app

__all__ = ["app", "main"]

app = typer.Typer(no_args_is_help=True, add_completion=False, help="CoMeta: live-literature clinical QA.")
eutils_app = typer.Typer(
    no_args_is_help=True, help="E-utilities: the local server and a client for it or NCBI."
)
app.add_typer(eutils_app, name="eutils")
index_app = typer.Typer(
    no_args_is_help=True, help="Dense vector index: build (or resume) from several sources."
)
app.add_typer(index_app, name="index")
app.add_typer(collections_app, name="collections")
app.add_typer(corpus_app, name="corpus")


def _add_plugin_commands() -> None:
    """Command groups that packages above the app contribute (``cometa eval`` comes from ``eval``).

    They register under the ``cometa.commands`` entry-point group (pyproject.toml), so the app layer never
    imports the layers built on it.
    """
    for entry in entry_points(group="cometa.commands"):
        app.add_typer(entry.load(), name=entry.name)


_add_plugin_commands()

console = Console()
err_console = Console(stderr=True)

OfflineOpt = Annotated[
    bool,
    typer.Option(
        "--offline/--live",
        help="--offline: bundled corpus through the in-process local server; "
        "--live: COMETA_EUTILS__BASE_URL (NCBI by default).",
    ),
]
QuestionArg = Annotated[str, typer.Argument(help="The patient's question or narrative, as typed.")]
DenseOpt = Annotated[
    bool, typer.Option("--dense/--no-dense", help="Fuse the dense (semantic) arm with the Boolean arm.")
]


def _settings(offline: bool) -> Settings:
    settings = get_settings()
    if not offline:
        return settings
    # Offline means offline: a Hugging Face hub lookup would hang for over a minute before failing.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return settings.offline()


def _fail(exc: Exception) -> typer.Exit:
    err_console.print(f"[bold red]error:[/] {type(exc).__name__}: {exc}")
    return typer.Exit(code=2)


@app.command()
def version() -> None:
    """Print the CoMeta version."""
    console.print(f"cometa {__version__}")


@eutils_app.command("serve")
def eutils_serve(
    host: Annotated[str | None, typer.Option(help="Bind address (default from settings: 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default from settings: 8088).")] = None,
    corpus: Annotated[
        Path | None, typer.Option(help="Corpus folder (pubmed/*.xml[.gz], pmc/*.xml); default: bundled.")
    ] = None,
    rate_limit: Annotated[
        bool | None,
        typer.Option("--rate-limit/--no-rate-limit", help="Answer 429 above 3 req/s (10 with key)."),
    ] = None,
) -> None:
    """Run the NCBI-compatible local E-utilities server (paths under /entrez/eutils/)."""
    import uvicorn

    from app.factories import Models, similar_articles
    from retrieval.localncbi import create_eutils_app
    from retrieval.understand import spell_correct

    settings = local_server_settings()
    update: dict[str, Any] = {}
    if host is not None:
        update["host"] = host
    if port is not None:
        update["port"] = port
    if corpus is not None:
        update["corpus_dir"] = corpus
    if rate_limit is not None:
        update["rate_limit"] = rate_limit
    settings = settings.model_copy(update=update)
    # Similar articles come from the dense index over the same corpus, loaded on the first such request.
    served = LocalCorpusSettings(corpus_dir=settings.corpus_dir)
    models = Models(get_settings().offline().model_copy(update={"local_server": served}))
    try:
        application = create_eutils_app(settings, speller=spell_correct, similar=similar_articles(models))
        # The search index is built here, before the port opens, not by the first ESearch (half a second on
        # the bundled corpus, several on a world): once the server answers at all, it answers at full speed.
        _ = application.state.corpus.pubmed_index
    except (OSError, ValueError) as exc:
        raise _fail(exc) from exc
    console.print(
        f"Local E-utilities at http://{settings.host}:{settings.port}/entrez/eutils/ "
        f"(rate limit {'on' if settings.rate_limit else 'off'})"
    )
    uvicorn.run(application, host=settings.host, port=settings.port, log_level="warning")


@eutils_app.command("search")
def eutils_search(
    term: Annotated[str, typer.Argument(help="PubMed query, e.g. 'neoplasms[mh] AND 2010:2015[dp]'.")],
    offline: OfflineOpt = False,
    retmax: Annotated[int, typer.Option(min=1, max=10_000)] = 10,
    sort: Annotated[str | None, typer.Option(help="relevance | pub_date | (none: PMID descending)")] = None,
    mindate: Annotated[str | None, typer.Option(help="YYYY, YYYY/MM or YYYY/MM/DD; needs --maxdate")] = None,
    maxdate: Annotated[str | None, typer.Option(help="YYYY, YYYY/MM or YYYY/MM/DD; needs --mindate")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """ESearch + EFetch: count, query translation, and the top records with titles."""
    settings = _settings(offline)
    try:
        result, records = asyncio.run(_search(settings, term, retmax, sort, mindate, maxdate))
    except EutilsError as exc:
        raise _fail(exc) from exc
    if as_json:
        payload = {
            "count": result.count,
            "pmids": list(result.ids),
            "query_translation": result.query_translation,
            "phrases_not_found": list(result.phrases_not_found),
            "records": [_record_json(r) for r in records],
        }
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        return
    console.print(f"[bold]{result.count}[/] records  ·  {escape(result.query_translation or term)}")
    for phrase in result.phrases_not_found + result.quoted_phrases_not_found:
        console.print(f"[yellow]phrase not found:[/] {escape(phrase)}")
    table = Table(show_lines=False)
    for col in ("PMID", "Year", "Type", "Title"):
        table.add_column(col)
    for r in records:
        types = ", ".join(p.name for p in r.publication_types[:2])
        table.add_row(r.pmid, str(r.year or ""), escape(types), escape(r.title[:100]))
    console.print(table)


async def _search(
    settings: Settings, term: str, retmax: int, sort: str | None, mindate: str | None, maxdate: str | None
) -> tuple[Any, list[PubmedRecord]]:
    async with build_eutils_client(settings, build_eutils_transport(settings)) as client:
        result = await client.esearch(term, retmax=retmax, sort=sort, mindate=mindate, maxdate=maxdate)
        records = await client.efetch_pubmed(result.ids) if result.ids else []
        return result, records


@app.command("search")
def search(
    question: QuestionArg,
    offline: OfflineOpt = False,
    use_llm: Annotated[
        bool, typer.Option("--llm/--no-llm", help="Use the configured LLM rewriter (falls back if it fails).")
    ] = True,
    use_dense: DenseOpt = True,
    mindate: Annotated[str | None, typer.Option(help="YYYY, YYYY/MM or YYYY/MM/DD; needs --maxdate")] = None,
    maxdate: Annotated[str | None, typer.Option(help="YYYY, YYYY/MM or YYYY/MM/DD; needs --mindate")] = None,
    show: Annotated[int, typer.Option(min=1, max=200, help="Evidence documents to show.")] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Understand the question, run Adapt-E and the dense arm, fuse, filter, and show the evidence."""
    if (mindate is None) != (maxdate is None):
        err_console.print("[bold red]error:[/] --mindate and --maxdate go together")
        raise typer.Exit(code=2)
    settings = _settings(offline)
    try:
        outcome = asyncio.run(_run_search(settings, question, use_llm, use_dense, mindate, maxdate))
    except CometaError as exc:
        raise _fail(exc) from exc
    if as_json:
        sys.stdout.write(json.dumps(search_out(outcome).model_dump(mode="json"), indent=2) + "\n")
        return
    u, a = outcome.understanding, outcome.adapte
    plan = u.plan
    console.print(
        f"[bold]Rewriter:[/] {u.path}" + (f" ({escape(u.fallback_reason)})" if u.fallback_reason else "")
    )
    console.print(f"[bold]Question:[/] {escape(plan.corrected_question)}")
    concepts = "; ".join(escape(c.text + (f" → {c.mesh}" if c.mesh else "")) for c in plan.concepts)
    console.print(f"[bold]Intent:[/] {plan.intent}   [bold]Concepts:[/] {concepts}")
    if plan.date_limits:
        console.print(f"[bold]Years:[/] {plan.date_limits.min_year}–{plan.date_limits.max_year}")
    tiers = Table(title="Adapt-E ladder (Boolean arm)")
    for col in ("#", "query", "count", "ms", "used"):
        tiers.add_column(col)
    for t in a.tiers:
        tiers.add_row(
            str(t.tier) if t.kind == "ladder" else t.kind,
            escape(t.query),  # queries carry [mh]/[tiab] tags, which rich would read as markup
            "error" if t.error else str(t.count),
            f"{t.latency_ms:.0f}",
            "yes" if t.used else "",
        )
    console.print(tiers)
    for warning in outcome.warnings:
        console.print(f"[yellow]{escape(warning)}[/]")
    docs = outcome.evidence.docs
    if not docs:
        console.print("[bold yellow]No evidence found.[/]")
        return
    dropped = outcome.evidence.dropped_by_reason
    note = ", ".join(f"{n} {reason}" for reason, n in dropped.items())
    ranked = Table(title=f"Evidence: {len(docs)} documents" + (f" (dropped: {note})" if note else ""))
    for col in ("rank", "PMID", "year", "class", "depth", "arms", "title"):
        ranked.add_column(col)
    for rank, d in enumerate(docs[:show], start=1):
        arms = " ".join(
            f"B{p.rank}" + (f"/t{p.tier}" if p.tier else "") if p.arm == "boolean" else f"D{p.rank}"
            for p in d.provenance
        )
        ranked.add_row(
            str(rank), d.pmid, str(d.year or ""), d.doc_class, d.depth_used, arms, escape(d.title[:90])
        )
    console.print(ranked)
    context = outcome.context
    if context is not None and context.passages:
        table = Table(
            title=f"Passages for the answer ({context.reranker_kind} rerank: {context.reranker_name})"
        )
        for col in ("rank", "PMID", "section", "rerank", "passage"):
            table.add_column(col)
        for p in context.selected[:5]:
            score = p.scores.get("rerank", p.scores.get("dense", 0.0))
            table.add_row(
                str(p.rank), p.pmid, escape(p.heading[:24]), f"{score:.3f}", escape(p.text[:160]) + "…"
            )
        console.print(table)


async def _run_search(
    settings: Settings,
    question: str,
    use_llm: bool,
    use_dense: bool,
    mindate: str | None,
    maxdate: str | None,
) -> SearchOutcome:
    async with Container(settings, use_llm=use_llm, use_dense=use_dense) as container:
        return await container.pipeline.search(question, mindate=mindate, maxdate=maxdate)


@app.command("ask")
def ask(
    question: QuestionArg,
    offline: OfflineOpt = False,
    use_llm: Annotated[
        bool, typer.Option("--llm/--no-llm", help="Use the configured LLM (else: extractive answers).")
    ] = True,
    use_dense: DenseOpt = True,
    judge: Annotated[bool, typer.Option("--judge", help="Judge agreement across the sources (LLM).")] = False,
    max_documents: Annotated[
        int, typer.Option(min=1, max=50, help="Evidence documents to answer from.")
    ] = 10,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the /ask response JSON (with --stream: one event per line).")
    ] = False,
    stream: Annotated[
        bool,
        typer.Option(
            "--stream", help="Show the stages and the answer as the model writes it, then the checked one."
        ),
    ] = False,
) -> None:
    """Answer a question with citations, exactly as ``POST /ask`` (``--stream``: ``/ask/stream``) does."""
    settings = _settings(offline)
    try:
        req = AskRequest(question=question, judge=judge, max_documents=max_documents)
    except ValueError as exc:
        raise _fail(exc) from exc
    try:
        if stream:
            response = asyncio.run(_stream_ask(settings, req, use_llm, use_dense, as_json))
        else:
            response = asyncio.run(_run_ask(settings, req, use_llm, use_dense))
    except CometaError as exc:
        raise _fail(exc) from exc
    if as_json:
        if not stream:  # streamed JSON went out event by event
            sys.stdout.write(json.dumps(response.model_dump(mode="json"), indent=2) + "\n")
        return
    _print_answer(response)


def _print_answer(response: AskResponse) -> None:
    """The answer as the chat frontends see it: markdown with PubMed links and the numbered sources, then
    what the reader must know (mode, verdict, disagreement, warnings)."""
    from rich.markdown import Markdown
    from rich.panel import Panel

    from app.frontends import render_markdown

    modes = {
        "extractive": "no language model wrote this: the most relevant sentences are quoted from the studies",
        "insufficient_evidence": "the literature found does not answer this question",
    }
    if response.safety is not None and response.safety.urgent:  # the guidance alone, first and loud
        console.print(
            Panel(escape(response.answer), title="Get help now", title_align="left", style="bold red")
        )
        console.print(f"[dim]mode: urgent ({response.safety.kind})[/]")
        return
    # Terminals show links as links; elsewhere (a pipe, a file) the URLs are printed beside their text.
    answer = Markdown(render_markdown(response), hyperlinks=console.is_terminal)
    console.print(Panel(answer, title="Answer", title_align="left"))
    if response.evidence_verdict is not None:
        v = response.evidence_verdict
        console.print(f"[bold]Evidence:[/] {v.verdict} ({escape('; '.join(v.reasons))})")
    if response.mode in modes:
        console.print(f"[bold]Note:[/] {modes[response.mode]}")
    if response.judge and response.judge.note:
        console.print(f"[bold]Sources:[/] {escape(response.judge.note)}")
    for warning in response.warnings:
        console.print(f"[yellow]warning:[/] {escape(warning)}")
    console.print(f"[dim]mode: {response.mode}; model: {response.model or 'none'}[/]")


async def _run_ask(settings: Settings, req: AskRequest, use_llm: bool, use_dense: bool) -> AskResponse:
    async with Container(settings, use_llm=use_llm, use_dense=use_dense) as container:
        return ask_response(await container.asker.ask(req, "cli"))


async def _stream_ask(
    settings: Settings, req: AskRequest, use_llm: bool, use_dense: bool, as_json: bool
) -> AskResponse:
    """``/ask/stream`` in the terminal: stages on stderr, the model's text as it comes (provisional),
    then the checked answer; with ``as_json`` one ``{"event", "data"}`` line per event on stdout."""
    result: AskResponse | None = None
    wrote = False
    async with Container(settings, use_llm=use_llm, use_dense=use_dense) as container:
        async for event in container.asker.events(req, "cli", stream_tokens=True):
            if isinstance(event, Done):
                result = ask_response(event.result)
            if as_json:
                name, data = (
                    event_json(event) if result is None else ("result", result.model_dump(mode="json"))
                )
                sys.stdout.write(json.dumps({"event": name, "data": data}) + "\n")
                sys.stdout.flush()
            elif isinstance(event, Stage) and event.status == "started":
                err_console.print(f"[dim]{event.stage}…[/]")
            elif isinstance(event, Token):
                console.print(event.delta, end="", markup=False, highlight=False, style="dim")
                wrote = True
    if wrote:
        console.print()
        console.rule("[dim]checked answer[/]")
    if result is None:  # events() always ends with its result
        raise RuntimeError("the answer flow ended without a result")
    return result


@index_app.command("build")
def index_build(
    source: Annotated[
        str,
        typer.Option(
            help="bundled: the local corpus; baseline: PubMed XML files/folders (PATHS); "
            "medcpt: NCBI's MedCPT embeddings folder (PATHS[0], embeds_chunk_*.npy + pmids_chunk_*.json)"
        ),
    ] = "bundled",
    paths: Annotated[list[Path] | None, typer.Argument(help="Inputs for --source baseline / medcpt.")] = None,
    offline: OfflineOpt = False,
    index_dir: Annotated[Path | None, typer.Option(help="Where the index lives (default: settings).")] = None,
    batch_size: Annotated[int | None, typer.Option(min=1, help="Encoding batch size.")] = None,
) -> None:
    """Build (or resume building) the dense index; prints throughput. Re-running skips indexed PMIDs."""
    from retrieval.embed import (
        build_from_baseline,
        ensure_bundled_index,
        import_medcpt_embeddings,
        load_encoder,
        open_index,
    )

    if source not in {"bundled", "baseline", "medcpt"}:
        err_console.print(f"[bold red]error:[/] unknown --source {source!r}")
        raise typer.Exit(code=2)
    if source != "bundled" and not paths:
        err_console.print(f"[bold red]error:[/] --source {source} needs input PATHS")
        raise typer.Exit(code=2)
    settings = _settings(offline)
    dense = settings.dense
    if index_dir is not None:
        dense = dense.model_copy(update={"index_dir": index_dir})
    if batch_size is not None:
        dense = dense.model_copy(update={"encode_batch_size": batch_size})
    started = time.perf_counter()
    try:
        encoder = load_encoder(dense)
        if source == "bundled":
            corpus_dir = settings.local_server.corpus_dir
            what = f"the corpus in {corpus_dir}" if corpus_dir else "the bundled corpus"
            with progress_bar(f"indexing {what}") as on_progress:
                index = ensure_bundled_index(dense, encoder, corpus_dir=corpus_dir, on_progress=on_progress)
            console.print(f"index of {what} ready: {len(index)} vectors ({encoder.name})")
        else:
            index = open_index(dense, encoder, create=True)
            if source == "baseline":
                with progress_bar(f"indexing {len(paths or [])} PubMed path(s)") as on_progress:
                    stats = build_from_baseline(
                        paths or [],
                        encoder,
                        index,
                        batch_size=dense.encode_batch_size,
                        on_progress=on_progress,
                    )
            else:
                with progress_bar("importing MedCPT embeddings") as on_progress:
                    stats = import_medcpt_embeddings((paths or [])[0], index, on_progress=on_progress)
            index.save()
            console.print(
                f"added {stats.added}, skipped {stats.skipped} in {stats.seconds:.1f} s "
                f"({stats.docs_per_s:.1f} docs/s); index holds {len(index)} vectors"
            )
    except (CometaError, OSError) as exc:
        raise _fail(exc) from exc
    console.print(f"done in {time.perf_counter() - started:.1f} s")


@index_app.command("passages")
def index_passages(offline: OfflineOpt = False) -> None:
    """Segment (SEOS) and encode, once, the corpus's full texts that questions deepen (the depth policy; D2
    reviews with a PMC copy by default), beside the dense index; the service then loads them."""
    from app.pipeline import build_passage_store

    settings = _settings(offline)
    started = time.perf_counter()

    async def run(on_progress: OnProgress) -> tuple[int, int, Path]:
        async with build_pipeline(settings, use_llm=False) as pipeline:
            return await build_passage_store(pipeline, on_progress=on_progress)

    try:
        with progress_bar("segmenting and encoding full texts") as on_progress:
            docs, encoded, path = asyncio.run(run(on_progress))
    except (CometaError, OSError) as exc:
        raise _fail(exc) from exc
    console.print(f"{docs} full texts ({encoded} passages encoded) in {path}")
    console.print(f"done in {time.perf_counter() - started:.1f} s")


@app.command("serve")
def serve(
    offline: OfflineOpt = False,
    host: Annotated[str, typer.Option(help="Bind address.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port.")] = 8000,
) -> None:
    """Run the HTTP API (POST /ask, /ask/stream, /search, /judge; /healthz, /readyz, /metrics, /docs)."""
    import logging

    import uvicorn

    from app.api import create_app

    settings = _checked_settings(offline)
    if _is_own_address(settings.llm.base_url if settings.llm.configured else None, host, port):
        err_console.print(
            f"[bold red]configuration error:[/] COMETA_LLM__BASE_URL ({escape(str(settings.llm.base_url))}) "
            f"is this service's own address ({escape(host)}:{port}): /ask would call itself. Point it at "
            "the LLM server, or unset it for extractive answers.",
            soft_wrap=True,
        )
        raise typer.Exit(code=2)
    # The API logs one JSON object per line (request ids, question hashes): no extra formatting.
    logging.basicConfig(level=settings.log_level, format="%(message)s")
    console.print(f"CoMeta API at http://{host}:{port}/ (docs: /docs)")
    uvicorn.run(
        create_app(settings), host=host, port=port, log_level=settings.log_level.lower(), access_log=False
    )


def _is_own_address(url: str | None, host: str, port: int) -> bool:
    """Whether ``url`` reaches the address ``cometa serve`` binds: the same port, and the bind host itself,
    or a loopback (or this host's name) when binding loopback or every interface. No DNS lookup: a name
    that only resolves to one of our other addresses is not caught."""
    import ipaddress
    import socket
    from urllib.parse import urlsplit

    if url is None:
        return False
    try:
        parts = urlsplit(url)
        target_port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return False  # no valid port: the LLM client cannot reach anything there either
    target = (parts.hostname or "").lower().rstrip(".")
    bind = host.lower().strip("[]").rstrip(".")
    if target_port != port or not target:
        return False
    if target == bind:
        return True

    def local(name: str) -> bool:
        if name in ("localhost", socket.gethostname().lower()) or name.endswith(".localhost"):
            return True
        try:
            ip = ipaddress.ip_address(name)
        except ValueError:
            return False
        return ip.is_loopback or ip.is_unspecified

    return local(target) and (not bind or local(bind))  # 0.0.0.0 and :: are local (unspecified)


def _checked_settings(offline: bool) -> Settings:
    """The settings, and the access and federation material they name, or a clear message and exit 2:
    a service with holes in its configuration does not start (docs/security.md)."""
    from pydantic import ValidationError

    from app.sources import AssertionSigner, CallerVerifier, load_policies

    try:
        settings = _settings(offline)
        CallerVerifier(settings.access, settings.federation)  # keys readable, issuers unique
        AssertionSigner.from_settings(settings.federation)
        load_policies(settings.access)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'settings'}: {e['msg']}" for e in exc.errors()
        )
        err_console.print(f"[bold red]configuration error:[/] {escape(problems)}", soft_wrap=True)
        raise typer.Exit(code=2) from None
    except CometaError as exc:
        err_console.print(f"[bold red]configuration error:[/] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(code=2) from None
    return settings


@app.command("mcp")
def mcp(offline: OfflineOpt = False) -> None:
    """Serve the MCP tools (search_literature, ask, get_article, list_collections) over stdio.

    For agent frontends that launch a command (Claude Desktop, IDEs): stdout carries the protocol only;
    logs go to stderr. Over HTTP the same tools are at ``/mcp`` of ``cometa serve``."""
    import logging

    from app.frontends import run_stdio

    settings = _checked_settings(offline)
    logging.basicConfig(level=settings.log_level, format="%(message)s", stream=sys.stderr)
    asyncio.run(run_stdio(settings))


def _record_json(record: PubmedRecord) -> dict[str, Any]:
    data = asdict(record)
    data["abstract_text"] = record.abstract_text
    return data


def main() -> None:
    app()
