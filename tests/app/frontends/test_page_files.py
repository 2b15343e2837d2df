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
