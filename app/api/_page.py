"""The page router: the reference chat page, ``GET /``, and its two static files under ``/ui/`` (package
data of :mod:`app.frontends`, no build step, nothing fetched from elsewhere), served with a strict
Content-Security-Policy: the page may talk to this origin only."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from app.frontends import web_root

from ._deps import ApiError

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
