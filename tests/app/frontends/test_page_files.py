"""The reference chat page's files, browser-free (the browser test is ``test_page.py``, slow suite)."""

from __future__ import annotations


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
