"""One ``cometa serve --offline`` process (no LLM, an API key, no rate limit) for the frontend tests: the
openai client, the MCP client over HTTP and the browser all talk to it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from html.parser import HTMLParser

import pytest
from markdown_it import MarkdownIt

from tests._procs import free_port, serve

API_KEY = "sk-cometa-frontends"


@pytest.fixture(scope="package")
def server() -> Iterator[str]:
    port = free_port()
    env = {
        "COMETA_LLM__BACKEND": "none",
        "COMETA_API__API_KEYS": json.dumps([API_KEY]),
        "COMETA_API__RATE_LIMIT_PER_MINUTE": "0",
    }
    # Startup loads MiniLM and the bundled index (built on first use, then cached).
    yield from serve(
        ["serve", "--offline", "--port", str(port)], "/healthz", port=port, env=env, deadline_s=180
    )


class Tags(HTMLParser):
    """The tags and link targets of rendered HTML."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.hrefs: list[str] = []
        self.text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.hrefs += [v or "" for k, v in attrs if k in ("href", "src")]

    def handle_data(self, data: str) -> None:
        self.text += data


def rendered(markdown: str) -> Tags:
    """``markdown`` as a chat frontend shows it (CommonMark with raw HTML allowed), parsed back."""
    tags = Tags()
    tags.feed(MarkdownIt("commonmark").render(markdown))
    return tags
