"""The reference chat page's files, browser-free (the browser test is ``test_page.py``, slow suite)."""

from __future__ import annotations

import pytest


def test_the_page_is_served_offline_with_a_strict_policy() -> None:
    # Fast and browser-free: the page references only its own files (no CDN), under a same-origin CSP.
    from fastapi.testclient import TestClient

    from app.api import create_app
    from app.settings import Settings

    client = TestClient(create_app(Settings().offline()))  # no lifespan: the page needs no models
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert "http://" not in page.text and "https://" not in page.text
    for name in ("chat.js", "chat.css"):
        asset = client.get(f"/ui/{name}")
        assert asset.status_code == 200 and len(asset.content) > 500
    assert client.get("/ui/__init__.py").status_code == 404
    assert client.get("/ui/..%2F_chat.py").status_code == 404


def test_the_api_docs_load_swagger_ui_from_this_origin_under_a_strict_policy() -> None:
    # Issue 30: FastAPI's /docs pulls Swagger UI from a CDN and is blank offline; ours serves the files.
    import base64
    import hashlib
    import re
    from html.parser import HTMLParser

    from fastapi.testclient import TestClient

    from app.api import create_app
    from app.settings import ApiSettings, Settings

    class Refs(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.urls: list[str] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            self.urls += [v or "" for k, v in attrs if k in ("href", "src")]

    # Without the chat page too: the docs do not depend on it.
    client = TestClient(create_app(Settings().offline(), api_settings=ApiSettings(chat_page=False)))
    docs = client.get("/docs")
    assert docs.status_code == 200 and docs.headers["content-type"].startswith("text/html")
    refs = Refs()
    refs.feed(docs.text)
    assert len(refs.urls) == 3 and all(u.startswith("/docs/assets/") for u in refs.urls), refs.urls
    assert "//" not in docs.text  # no other origin anywhere in the page
    assert 'validatorUrl": null' in docs.text  # no badge fetched from validator.swagger.io
    types = {".js": "text/javascript", ".css": "text/css", ".png": "image/png"}
    for url in refs.urls:
        asset = client.get(url)
        assert asset.status_code == 200 and len(asset.content) > 1000, url
        assert asset.headers["content-type"].startswith(types[url[url.rindex(".") :]])
        assert asset.headers["x-content-type-options"] == "nosniff"
    assert client.get("/docs/assets/LICENSE").status_code == 404  # a fixed list of files
    assert client.get("/docs/assets/..%2F__init__.py").status_code == 404
    # The policy: this origin only, and the one inline script (Swagger UI's configuration) by its hash.
    policy = docs.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "unsafe-inline" not in policy and "unsafe-eval" not in policy
    (inline,) = re.findall(r"<script>(.*?)</script>", docs.text, re.DOTALL)
    digest = base64.b64encode(hashlib.sha256(inline.encode()).digest()).decode()
    assert f"script-src 'self' 'sha256-{digest}'" in policy
    assert client.get("/redoc").status_code == 404  # off: ReDoc needs inline styles and blob workers
    spec = client.get("/openapi.json")
    assert spec.status_code == 200 and "/v1/chat/completions" in spec.json()["paths"]
    # The chat page keeps its own policy, with no script hash of the docs.
    page = TestClient(create_app(Settings().offline())).get("/")
    assert page.headers["content-security-policy"].startswith("default-src 'self'; img-src")
    assert "sha256" not in page.headers["content-security-policy"]


def test_the_pages_stream_ends_with_every_other_field_of_the_ask_response(server: str) -> None:
    """The page shows the verdict and the mode from ``done``: whatever the /ask response carries beyond
    what earlier events sent reaches it, new fields included."""
    import json

    import httpx

    from app.schemas import AskResponse
    from tests.app.frontends.conftest import API_KEY

    body = {"question": "is the whipple pointless with a very high CA 19-9?", "max_documents": 3}
    r = httpx.post(server + "/ask/stream", json=body, headers={"X-API-Key": API_KEY}, timeout=120)
    assert r.status_code == 200
    blocks = [dict(line.split(": ", 1) for line in b.splitlines()) for b in r.text.strip().split("\n\n")]
    done = json.loads(blocks[-1]["data"])
    # Answered or honestly declined (the evidence gate decides): either way the verdict reaches the page.
    assert blocks[-1]["event"] == "done" and done["mode"] in {"extractive", "insufficient_evidence"}
    assert done["evidence_verdict"]["verdict"] in {"strong", "moderate", "weak", "none"}
    sent_before = {"answer", "citations", "evidence", "passages", "judge", "query"}
    assert set(AskResponse.model_fields) - sent_before <= set(done)
    assert not sent_before & set(done)


def test_the_page_links_to_pubmed_and_pmc_only() -> None:
    # The page's one link check, run by node on the shipped chat.js (the page itself writes text only).
    import json
    import shutil
    import subprocess

    from app.frontends import web_root

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    urls = [
        "https://pubmed.ncbi.nlm.nih.gov/111/",
        "https://pmc.ncbi.nlm.nih.gov/articles/PMC9/",
        "https://www.ncbi.nlm.nih.gov/pmc/articles/PMC9/",
        "javascript:alert(document.cookie)",
        "https://host/track.png",
        "https://pubmed.ncbi.nlm.nih.gov.evil.example/111/",
        'https://pubmed.ncbi.nlm.nih.gov/1/" onmouseover="alert(1)',
    ]
    script = (
        "const vm = require('vm');"
        "const ctx = vm.createContext({document: {addEventListener() {}}, encodeURIComponent});"
        "vm.runInContext(require('fs').readFileSync(process.argv[1], 'utf8'), ctx);"
        "const urls = JSON.parse(process.argv[2]);"
        "console.log(JSON.stringify(urls.map((u) => vm.runInContext('safeUrl', ctx)(u, 'FALLBACK'))));"
    )
    chat_js = str(web_root().joinpath("chat.js"))
    args = [node, "-e", script, chat_js, json.dumps(urls)]
    out = subprocess.run(args, capture_output=True, text=True, check=True, timeout=60)
    assert json.loads(out.stdout) == [*urls[:3], *["FALLBACK"] * 4]
