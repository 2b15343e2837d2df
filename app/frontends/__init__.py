"""Where chat frontends already are: OpenAI-compatible chat completions, MCP tools, and the reference
chat page (static files in ``web/``), all over the one :class:`~app.asker.Asker`."""

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
from ._mcp import ArticleOut, CollectionsOut, LicenseOut, LiteratureOut, build_mcp_server, run_stdio

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
    "build_mcp_server",
    "chat_completion",
    "chat_question",
    "list_models",
    "pmc_url",
    "render_markdown",
    "run_stdio",
    "stream_chat",
    "web_root",
]


def web_root() -> Traversable:
    """The reference chat page's files (package data: ``index.html``, ``chat.js``, ``chat.css``)."""
    return files(__package__).joinpath("web")
