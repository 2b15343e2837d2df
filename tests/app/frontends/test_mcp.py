"""The MCP tools through the official SDK's client, over both transports: ``cometa mcp --offline`` (stdio,
a subprocess) and ``/mcp`` of ``cometa serve --offline`` (streamable HTTP, a server process with an API
key sent as ``Authorization: Bearer``)."""

from __future__ import annotations

import json
import os
import sys
from types import SimpleNamespace
from typing import Any

import httpx
import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextContent

from app.answer import Answer, Citation
from app.asker import Answered, AskResult
from app.frontends import build_mcp_server
from app.schemas import AskRequest
from tests._paths import REPO
from tests.app.frontends.conftest import API_KEY as KEY
from tests.app.frontends.conftest import rendered

QUESTION = (
    "my mom has a mass on her pancreas and her CA 19 9 came back really high, is the whipple pointless?"
)
TOOLS = {"search_literature", "ask", "get_article", "list_collections"}
ENV = {"COMETA_LLM__BACKEND": "none", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    data = result.structured_content
    assert isinstance(data, dict)
    # The text content carries the same JSON, for clients that read text only.
    assert json.loads(result.content[0].text) == data
    return data


async def exercise(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.description and tool.input_schema["type"] == "object"
        assert tool.output_schema and tool.output_schema["type"] == "object", tool.name
    assert tools["search_literature"].input_schema["required"] == ["question"]
    assert {"answer", "citations", "warnings", "request_id"} <= set(tools["ask"].output_schema["properties"])

    found = structured(await client.call_tool("search_literature", {"question": QUESTION, "max_results": 5}))
    docs = found["documents"]
    assert 1 <= len(docs) <= 5 and docs[0]["url"].startswith("https://pubmed.ncbi.nlm.nih.gov/")
    assert found["queries"] and found["passages"]

    # Urgent first (issue 28): the guidance, not studies, whichever frontend asks; a search finds nothing.
    means = structured(
        await client.call_tool("search_literature", {"question": "how many pills would kill me"})
    )
    assert means["safety"]["kind"] == "lethal_means" and means["documents"] == [] and means["queries"] == []

    urgent = structured(
        await client.call_tool("ask", {"question": "I want to end my life tonight, I have the pills"})
    )
    assert urgent["mode"] == "urgent" and urgent["safety"]["kind"] == "self_harm"
    assert urgent["answer"] == urgent["safety"]["message"] and not urgent["evidence"]
    answer = structured(await client.call_tool("ask", {"question": QUESTION}))
    assert answer["mode"] == "extractive" and answer["citations"] and "[PMID:" in answer["answer"]
    assert answer["request_id"].startswith("mcp-")
    assert {c["pmid"] for c in answer["citations"]} <= {d["pmid"] for d in answer["evidence"]}

    with_pmc = next((d for d in answer["evidence"] if d["pmcid"]), answer["evidence"][0])
    article = structured(await client.call_tool("get_article", {"pmid": with_pmc["pmid"], "max_chars": 2000}))
    assert article["pmid"] == with_pmc["pmid"] and article["title"] and article["abstract"]
    if article["pmcid"]:  # the world's PMC copies carry their licence
        assert article["full_text"] is None or len(article["full_text"]) <= 2000
        assert article["full_text"] or article["full_text_note"]
    else:
        assert article["full_text"] is None and article["full_text_note"]

    assert structured(await client.call_tool("list_collections", {})) == {"collections": []}

    bad = await client.call_tool("get_article", {"pmid": "not-a-pmid"})
    assert bad.is_error
    missing = await client.call_tool("get_article", {"pmid": "999999999"})
    assert missing.is_error and "not found" in missing.content[0].text


async def test_tools_over_stdio() -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "app.cli", "mcp", "--offline"],
        env={**ENV, "PYTHONPATH": str(REPO), "PATH": os.environ.get("PATH", "")},
        cwd=REPO,
    )
    async with Client(params, read_timeout_seconds=120) as client:
        await exercise(client)


def test_the_readme_stdio_snippet_runs_as_written(tmp_path: Any) -> None:
    """Issue 30: the README's stdio example, run as a user runs it: the venv's python, the venv not
    activated (its bin folder off PATH), from another folder. The server it launches is the installed
    ``cometa`` (in CI, this checkout)."""
    import ast
    import re
    import shutil
    import subprocess

    import pytest

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, re.DOTALL)
    [block] = [b for b in blocks if "StdioServerParameters" in b]
    installed = os.path.join(os.path.dirname(sys.executable), "cometa")
    if not os.path.exists(installed):
        pytest.skip("cometa is not installed in this environment (pip install -e .)")
    venv_bin = os.path.dirname(sys.executable)
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != venv_bin)
    # The fallback is what runs here, unless some other folder on PATH has a cometa of its own.
    assert shutil.which("cometa", path=path) in (None, installed)
    env = {"PATH": path, "HOME": os.environ.get("HOME", str(tmp_path)), **ENV}
    out = subprocess.run(
        [sys.executable, "-c", block], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240
    )
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.strip().splitlines()
    assert set(ast.literal_eval(lines[0])) == TOOLS and lines[1].strip(), out.stdout  # names, a title


async def test_tools_over_streamable_http(server: str) -> None:
    headers = {"Authorization": f"Bearer {KEY}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=120) as http,
        Client(streamable_http_client(server + "/mcp", http_client=http), read_timeout_seconds=120) as client,
    ):
        await exercise(client)


def test_http_transport_refuses_a_missing_key_and_a_foreign_host(server: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    accept = {"Accept": "application/json, text/event-stream"}
    r = httpx.post(server + "/mcp", json=body, headers=accept)
    assert r.status_code == 401 and r.json()["error"] == "unauthorized"
    auth = {**accept, "Authorization": f"Bearer {KEY}"}
    r = httpx.post(server + "/mcp", json=body, headers={**auth, "Host": "evil.example"})
    assert r.status_code in {403, 421}  # DNS-rebinding protection: only the configured hosts


async def test_a_records_markup_reaches_mcp_text_as_text_and_the_data_unchanged() -> None:
    attack = "[Full results here](javascript:alert(1)) <img src=x onerror=alert(1)> ![t](http://host/t.png)"
    cited = Citation("111", None, attack, 2020, (), "https://pubmed.ncbi.nlm.nih.gov/111/", "D1")
    checked = Answer(f"{attack} [PMID:111]", "llm", None, None, (cited,), 0, None, None, 5, 7, ())
    result = AskResult("r1", Answered(checked.text, "llm", checked, None))

    class Asker:
        async def ask(self, req: AskRequest, request_id: str) -> AskResult:
            return result

    server = build_mcp_server(lambda: SimpleNamespace(asker=Asker()))  # type: ignore[arg-type,return-value]
    async with Client(server) as client:
        data = structured(await client.call_tool("ask", {"question": "Does exercise help fatigue?"}))
        [content] = (await client.call_tool("ask", {"question": "Does exercise help fatigue?"})).content
    assert isinstance(content, TextContent)
    text = content.text
    assert data["answer"] == checked.text and data["citations"][0]["title"] == attack  # data, as published
    html = rendered(text)  # a client showing the tool's text as markdown
    assert html.tags == ["p"] and not html.hrefs, (html.tags, html.hrefs)
    assert "<img" not in text and "](" not in text and "://" not in text
