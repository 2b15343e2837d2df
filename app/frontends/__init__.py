"""Where chat frontends already are: OpenAI-compatible chat completions, MCP tools, and the reference
chat page (static files in ``web/``), all over the one :class:`~app.asker.Asker`; and the presenter that
gives every frontend, the API and the CLI the wire form of the flow's results."""

from importlib.resources import files
from importlib.resources.abc import Traversable

from ._chat import (
    CONTEXT_TURNS,
    MODEL_ID,
    ChatMessage,
    ChatOptions,
    ChatRequest,
    ChatRequestError,
    chat_completion,
    chat_question,
    list_models,
    pmc_url,
    render_markdown,
    stream_chat,
)
from ._markup import inert_json, literature_url, markdown_text
from ._mcp import ArticleOut, CollectionsOut, LicenseOut, LiteratureOut, build_mcp_server, run_stdio
from ._present import (
    across_response,
    ask_response,
    citation_out,
    event_json,
    evidence_docs_out,
    fused_out,
    judge_report_out,
    passages_out,
    query_out,
    safety_out,
    search_out,
    source_evidence_out,
    verdict_out,
)

__all__ = [
    "CONTEXT_TURNS",
    "MODEL_ID",
    "ArticleOut",
    "ChatMessage",
    "ChatOptions",
    "ChatRequest",
    "ChatRequestError",
    "CollectionsOut",
    "LicenseOut",
    "LiteratureOut",
    "across_response",
    "ask_response",
    "build_mcp_server",
    "chat_completion",
    "chat_question",
    "citation_out",
    "event_json",
    "evidence_docs_out",
    "fused_out",
    "inert_json",
    "judge_report_out",
    "list_models",
    "literature_url",
    "markdown_text",
    "passages_out",
    "pmc_url",
    "query_out",
    "render_markdown",
    "run_stdio",
    "safety_out",
    "search_out",
    "source_evidence_out",
    "stream_chat",
    "verdict_out",
    "web_root",
]


def web_root() -> Traversable:
    """The reference chat page's files (package data: ``index.html``, ``chat.js``, ``chat.css``)."""
    return files(__package__).joinpath("web")
