"""One ``cometa serve --offline`` process (no LLM, an API key, no rate limit) for the frontend tests: the
openai client, the MCP client over HTTP and the browser all talk to it."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

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
