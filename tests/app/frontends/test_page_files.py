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
