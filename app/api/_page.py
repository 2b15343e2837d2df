"""The page router: the reference chat page, ``GET /``, and its two static files under ``/ui/`` (package
data of :mod:`app.frontends`, no build step, nothing fetched from elsewhere), served with a strict
Content-Security-Policy: the page may talk to this origin only.

Also the docs router: Swagger UI at ``/docs`` with its script, style sheet and icon served from
``/docs/assets/`` (the files of the ``fastapi-offline`` package, which ships a current Swagger UI 5), so the
page works offline and under a policy as strict as the chat page's; ReDoc is off (it needs inline styles
and blob workers)."""

from __future__ import annotations

import base64
import functools
import hashlib
import re
from importlib.resources import files
from importlib.resources.abc import Traversable

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, Response

from app.frontends import web_root

from ._deps import ApiError

__all__ = ["DOCS_ASSETS", "docs_router", "page_router"]

_TYPES = {
    "index.html": "text/html; charset=utf-8",
    "chat.js": "text/javascript; charset=utf-8",
    "chat.css": "text/css; charset=utf-8",
}
_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def _file(name: str) -> Response:
    if name not in _TYPES:  # a fixed list: nothing else of the package is reachable
        raise ApiError(404, "not found", None)
    return Response(web_root().joinpath(name).read_bytes(), media_type=_TYPES[name], headers=_HEADERS)


page_router = APIRouter(tags=["page"], include_in_schema=False)


@page_router.get("/")
async def page() -> Response:
    """The reference chat page."""
    return _file("index.html")


@page_router.get("/ui/{name}")
async def asset(name: str) -> Response:
    return _file(name)


# --- /docs ----------------------------------------------------------------------------------------------

DOCS_ASSETS = "/docs/assets"
_DOCS_TYPES = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon.png": "image/png",
}
_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.DOTALL)


def _docs_root() -> Traversable:
    return files("fastapi_offline").joinpath("static")


@functools.cache
def _docs_file(name: str) -> bytes:
    # Read once: 1.5 MB of script per page view from disk would be waste; the files never change.
    return _docs_root().joinpath(name).read_bytes()


def _docs_policy(html: str) -> str:
    """The chat page's policy, with Swagger UI's one inline script (its configuration, which FastAPI
    writes into the page) allowed by its hash: nothing else inline runs."""
    hashes = " ".join(
        f"'sha256-{base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()}'"
        for s in _INLINE_SCRIPT.findall(html)
    )
    return (
        f"default-src 'self'; script-src 'self' {hashes}; img-src 'self' data:; base-uri 'none'; "
        "form-action 'self'; frame-ancestors 'none'; object-src 'none'"
    )


docs_router = APIRouter(tags=["docs"], include_in_schema=False)


@docs_router.get("/docs")
async def docs(request: Request) -> HTMLResponse:
    """Swagger UI over ``/openapi.json``, every file from this origin."""
    page = get_swagger_ui_html(
        openapi_url=request.app.openapi_url,
        title=f"{request.app.title} - API docs",
        swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
        swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css",
        swagger_favicon_url=f"{DOCS_ASSETS}/favicon.png",
        oauth2_redirect_url=None,  # the API takes X-API-Key, no OAuth2 flow
        # Swagger UI would otherwise fetch a badge from validator.swagger.io.
        swagger_ui_parameters={"validatorUrl": None},
    )
    html = bytes(page.body).decode()
    headers = {**_HEADERS, "Content-Security-Policy": _docs_policy(html)}
    return HTMLResponse(html, headers=headers)


@docs_router.get(DOCS_ASSETS + "/{name}")
async def docs_asset(name: str) -> Response:
    if name not in _DOCS_TYPES:  # a fixed list, as for the chat page
        raise ApiError(404, "not found", None)
    headers = {**_HEADERS, "Cache-Control": "public, max-age=86400"}
    return Response(_docs_file(name), media_type=_DOCS_TYPES[name], headers=headers)
