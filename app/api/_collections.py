"""The collections router: ``GET /collections`` and ``POST /collections/search``, what federated nodes call,
decided by this node's access policies. Behind the same ``X-API-Key`` + rate-limit dependency as every
other route, so node-to-node calls keep that protection too."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from app.asker import caller_of
from app.schemas import (
    CollectionListResponse,
    CollectionMetaOut,
    CollectionResultOut,
    CollectionSearchRequest,
    CollectionSearchResponse,
)
from app.sources import InvalidToken, SourcesService, Subject, evidence_out
from retrieval.understand import hash_text

from ._deps import (
    _UNAUTHORIZED,
    ApiError,
    _request_id,
    authorize,
    service_of,
)

log = logging.getLogger("cometa.api")

# --- collections: what federated nodes call --------------------------------------------------------------


def _subject(service: SourcesService, request: Request) -> Subject:
    try:
        return caller_of(service, request.headers.get("authorization"), needed=True)
    except InvalidToken as exc:
        raise ApiError(401, "unauthorized", str(exc), headers=_UNAUTHORIZED) from exc


collections_router = APIRouter(tags=["collections"], dependencies=[Depends(authorize)])


@collections_router.get("/collections", response_model=CollectionListResponse)
async def list_collections(request: Request, remote: bool = False) -> JSONResponse:
    """Metadata of the collections the caller (bearer token, or anonymous) may search on this node;
    with ``remote=true`` also on every federated node (as ``node/name``, each node's status in
    ``nodes``; a node that refuses the caller is left out, as a collection they may not search is),
    where this node vouches for the caller with a signed assertion (never their token)."""
    request_id = _request_id(request)
    service = service_of(request)
    subject = _subject(service, request)
    listed = [m.model_dump(mode="json") for m in service.searchable(subject)]
    body: dict[str, Any] = {"request_id": request_id, "collections": listed}
    if remote:
        fed = service.federation
        answers = await asyncio.gather(*(fed.list_collections(n, subject) for n in fed.nodes))
        body["nodes"] = {}
        for name, (status, items) in zip(fed.nodes, answers, strict=True):
            if status.status == "denied":
                continue  # a node that refuses the caller is not named, like one that does not exist
            body["nodes"][name] = status.to_json()
            listed.extend({**i, "name": f"{name}/{i.get('name', '')}", "node": name} for i in items)
    # The body as built, not the model: with ``remote`` it adds ``nodes`` and other nodes' entries
    # (``node/name``, ``node``) beyond what a node validates; without, it is exactly the model.
    return JSONResponse(body)


@collections_router.post("/collections/search", response_model=CollectionSearchResponse)
async def search_collections(req: CollectionSearchRequest, request: Request) -> CollectionSearchResponse:
    """Evidence per collection, decided here by this node's policies; per-collection status."""
    request_id = _request_id(request)
    service = service_of(request)
    subject = _subject(service, request)
    names: list[str] = []
    for name in req.collections:
        extra = [m.name for m in service.searchable(subject)] if name == "*" else [name]
        names.extend(n for n in extra if n not in names)
    results = await asyncio.gather(
        *(
            service.search_collection(n, req.question, subject, req.top_docs, max_chars=req.max_chars)
            for n in names
        )
    )
    log.info(
        json.dumps(
            {
                "event": "collections_search",
                "request_id": request_id,
                "question_hash": hash_text(req.question),
                "status": {n: r[0].status for n, r in zip(names, results, strict=True)},
            }
        )
    )
    items = [
        CollectionResultOut(
            collection=name,
            status=status.status,
            reason=status.reason,
            meta=None
            if meta is None or status.status != "ok"
            else CollectionMetaOut.model_validate(meta.model_dump(mode="json")),
            evidence=[evidence_out(e) for e in evidence],
        )
        for name, (status, evidence, meta) in zip(names, results, strict=True)
    ]
    return CollectionSearchResponse(request_id=request_id, results=items)  # what nodes validate
