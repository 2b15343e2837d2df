"""The Model Context Protocol server (official ``mcp`` SDK): CoMeta's tools for agent frontends.

Tools, each with JSON schemas for its input (from the signature) and its structured output (from the
return model): ``search_literature`` (ranked evidence and the passages an answer would be written from),
``ask`` (the ``/ask`` response, whatever fields it carries), ``get_article`` (metadata, abstract and,
where PMC has the body, the full text with its licence) and ``list_collections`` (the institutional
collections an anonymous caller may search).

Each result is the model as structured content (data, as published) and, for clients that read text, the
same JSON with markdown and HTML syntax escaped (:func:`~app.frontends.inert_json`).

Transports: ``cometa mcp`` serves stdio (:func:`run_stdio`); ``app.api`` mounts the same tools as
streamable HTTP at ``/mcp``. Both read the process's one :class:`~app.container.Container`.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field, ValidationError

from app import __version__
from app.container import Container
from app.schemas import AskRequest, AskResponse, EvidenceDocOut, PassageOut, SafetyOut
from app.settings import Settings
from app.sources import ANONYMOUS
from core import CometaError
from retrieval.collections import CollectionMeta
from retrieval.evidence import pubmed_url
from retrieval.ncbi import EutilsError
from retrieval.understand import hash_text

from ._chat import pmc_url
from ._markup import inert_json
from ._present import ask_response, evidence_docs_out, passages_out, safety_out

__all__ = [
    "ArticleOut",
    "CollectionsOut",
    "LicenseOut",
    "LiteratureOut",
    "build_mcp_server",
    "run_stdio",
]

INSTRUCTIONS = (
    "CoMeta answers patients' health questions from PubMed and PMC with checked citations. Use ask for a "
    "cited answer (it says so when the literature does not answer the question), search_literature for the "
    "ranked evidence alone, get_article to read one article, list_collections for institutional handbooks."
)
_MAX_FULL_TEXT = 200_000
log = logging.getLogger("cometa.mcp")

Question = Annotated[
    str, Field(min_length=1, max_length=4000, description="The question, as the patient asked it.")
]


class LiteratureOut(BaseModel):
    """``search_literature``: the evidence ranking and the best passages, as ``/search`` finds them."""

    documents: list[EvidenceDocOut]
    passages: list[PassageOut] = Field(description="the passages an answer would be written from, best first")
    queries: list[str] = Field(description="the PubMed Boolean queries run (the Adapt-E ladder)")
    warnings: list[str]
    safety: SafetyOut | None = Field(
        default=None, description="an urgent question: the safety guidance, and nothing was searched"
    )


class LicenseOut(BaseModel):
    url: str | None = None
    text: str | None = None
    license_type: str | None = None


class ArticleOut(BaseModel):
    """``get_article``: one article's metadata, abstract and (PMC, where the body is available) full text."""

    pmid: str
    pmcid: str | None
    title: str
    journal: str | None
    year: int | None
    authors: list[str]
    doi: str | None
    publication_types: list[str]
    mesh: list[str]
    retracted: bool
    abstract: str
    url: str
    pmc_url: str | None
    full_text: str | None = Field(description="the PMC body by section; None when not available")
    full_text_truncated: bool = False
    full_text_note: str | None = Field(default=None, description="why there is no full text")
    license: LicenseOut | None = Field(description="the licence of the PMC text (reuse terms)")
    open_access: bool | None = Field(description="PMC open-access subset; None without a PMC copy")


class CollectionsOut(BaseModel):
    collections: list[CollectionMeta]


def _invalid(exc: ValueError) -> ToolError:
    # Where and why, never the value: pydantic's own text quotes the input (the question), and the SDK
    # logs a tool's error message.
    if isinstance(exc, ValidationError):
        why = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()
        )
        return ToolError(f"invalid arguments: {why}")
    return ToolError(f"invalid arguments ({type(exc).__name__})")


def _result(out: BaseModel) -> CallToolResult:
    """A tool's result: the model as structured content (the data), and as text the same JSON with the
    characters of markdown and HTML syntax escaped, so a client that renders tool text shows a record's
    ``<img onerror=...>`` or ``[x](javascript:...)`` as text; it parses back to the same data."""
    data = out.model_dump(mode="json")
    return CallToolResult(content=[TextContent(type="text", text=inert_json(data))], structured_content=data)


def _tool_error(exc: Exception) -> ToolError:
    # Messages of our errors can quote the question: the type, and for NCBI a short summary.
    if isinstance(exc, EutilsError):
        return ToolError(f"NCBI unavailable ({type(exc).__name__}); try again later")
    return ToolError(f"the request failed ({type(exc).__name__})")


def build_mcp_server(container_of: Callable[[], Container]) -> MCPServer:
    """The tools over the container ``container_of()`` returns when a tool runs."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    server = MCPServer(name="cometa", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    # The SDK configures the root logger (a rich handler) when it has none: the process's logging is the
    # entry point's decision (one JSON line per event in the API), so it is put back as it was.
    root.handlers[:] = handlers
    root.setLevel(level)

    @server.tool(title="Search the literature")
    async def search_literature(
        question: Question,
        max_results: Annotated[int, Field(ge=1, le=50, description="documents to return")] = 10,
        mindate: Annotated[str | None, Field(description="YYYY[/MM[/DD]], with maxdate")] = None,
        maxdate: Annotated[str | None, Field(description="YYYY[/MM[/DD]], with mindate")] = None,
    ) -> Annotated[CallToolResult, LiteratureOut]:
        """Find PubMed/PMC evidence for a health question: ranked articles (class, depth, PubMed link) and
        the best passages. No answer is written; use ask for that."""
        try:
            AskRequest(question=question, mindate=mindate, maxdate=maxdate)  # the /ask validation
        except ValueError as exc:
            raise _invalid(exc) from exc
        log.info(json.dumps({"event": "mcp_search", "question_hash": hash_text(question)}))
        container = container_of()
        decision = await container.asker.safety_check(question, "mcp-search")
        if decision.urgent:  # the guidance, and no search: a request for means gets no literature either
            return _result(
                LiteratureOut(documents=[], passages=[], queries=[], warnings=[], safety=safety_out(decision))
            )
        try:
            outcome = await container.pipeline.search(question, mindate=mindate, maxdate=maxdate)
        except CometaError as exc:
            raise _tool_error(exc) from exc
        found = LiteratureOut(
            documents=evidence_docs_out(outcome.evidence.docs)[:max_results],
            passages=passages_out(outcome.context)[:5],
            queries=[t.query for t in outcome.adapte.tiers if t.query],
            warnings=outcome.warnings,
        )
        return _result(found)

    @server.tool(title="Ask with citations")
    async def ask(
        question: Question,
        max_documents: Annotated[
            int, Field(ge=1, le=50, description="evidence documents to answer from")
        ] = 10,
        judge: Annotated[
            bool, Field(description="judge agreement across the evidence (needs an LLM)")
        ] = False,
    ) -> Annotated[CallToolResult, AskResponse]:
        """Answer a health question in plain language from PubMed/PMC evidence, every claim cited
        [PMID:n]; the honest refusal when the literature does not answer it. Exactly what POST /ask
        returns: answer, citations, evidence, warnings, request id."""
        try:
            req = AskRequest(question=question, max_documents=max_documents, judge=judge)
        except ValueError as exc:
            raise _invalid(exc) from exc
        request_id = "mcp-" + uuid.uuid4().hex
        # As the API logs questions: by hash only.
        log.info(
            json.dumps({"event": "mcp_ask", "request_id": request_id, "question_hash": hash_text(question)})
        )
        try:
            return _result(ask_response(await container_of().asker.ask(req, request_id)))
        except CometaError as exc:
            raise _tool_error(exc) from exc

    @server.tool(title="Read one article")
    async def get_article(
        pmid: Annotated[str, Field(pattern=r"^\d{1,9}$", description="PubMed id")],
        max_chars: Annotated[int, Field(ge=0, le=_MAX_FULL_TEXT, description="full-text budget")] = 20_000,
    ) -> Annotated[CallToolResult, ArticleOut]:
        """One article by PMID: metadata, abstract, and the PMC full text where the body is available,
        with its licence (check it before quoting at length)."""
        client = container_of().pipeline.client
        try:
            records = await client.efetch_pubmed([pmid])
        except CometaError as exc:
            raise _tool_error(exc) from exc
        if not records:
            raise ToolError(f"PMID {pmid} was not found")
        r = records[0]
        out: dict[str, Any] = {
            "pmid": r.pmid,
            "pmcid": r.pmcid,
            "title": r.title,
            "journal": r.journal,
            "year": r.year,
            "authors": list(r.authors),
            "doi": r.doi,
            "publication_types": [p.name for p in r.publication_types],
            "mesh": [m.descriptor for m in r.mesh],
            "retracted": r.retracted,
            "abstract": r.abstract_text,
            "url": pubmed_url(r.pmid),
            "pmc_url": pmc_url(r.pmcid) if r.pmcid else None,
            "full_text": None,
            "license": None,
            "open_access": None,
            "full_text_note": None if r.pmcid else "no PMC copy: the abstract only",
        }
        if r.pmcid:
            try:
                articles = await client.efetch_pmc([r.pmcid])
            except CometaError as exc:
                raise _tool_error(exc) from exc
            if not articles:
                out["full_text_note"] = "the PMC copy could not be fetched"
            else:
                a = articles[0]
                out["open_access"] = a.open_access
                lic = a.license
                if lic is not None or a.copyright:
                    out["license"] = LicenseOut(
                        url=lic.url if lic else None,
                        text=(lic.text if lic else None) or a.copyright,
                        license_type=lic.license_type if lic else None,
                    )
                if a.body_withheld or not a.sections:
                    out["full_text_note"] = "the publisher does not allow the full text to be downloaded"
                else:
                    text = "\n\n".join(
                        f"## {s.heading}\n{s.text}" if s.heading else s.text for s in a.sections
                    )
                    out["full_text"] = text[:max_chars]
                    out["full_text_truncated"] = len(text) > max_chars
        return _result(ArticleOut(**out))

    @server.tool(title="List institutional collections")
    async def list_collections() -> Annotated[CallToolResult, CollectionsOut]:
        """The institutional collections (hospital handbooks, leaflets) an anonymous caller may search."""
        return _result(CollectionsOut(collections=container_of().sources.searchable(ANONYMOUS)))

    return server


async def run_stdio(settings: Settings) -> None:
    """``cometa mcp``: the tools over stdin/stdout until the client closes them."""
    async with Container(settings) as container:
        await build_mcp_server(lambda: container).run_stdio_async()
