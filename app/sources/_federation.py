"""Federation: other CoMeta nodes as sources, searched over HTTP with their own access decisions.

A node lists remote nodes in settings (``COMETA_FEDERATION__NODES``). A source ``node/collection`` (or
``node/*``: every collection that node lets the caller search) is asked with ONE ``POST
{url}/collections/search`` per node; nodes are asked concurrently, each under its own deadline. The
caller's bearer token is forwarded unchanged so that the node owning the data applies its own policies (a
node's ``service_token`` stands in only when the caller presented none). Every node and collection comes
back with a status (``ok`` / ``denied`` / ``failed`` / ``timeout`` and a reason): a failed, slow or denying
node is reported, never silently dropped.

Evidence from different nodes is merged by reciprocal rank fusion over each source's own ranking
(:func:`fuse_sources`): scores from different encoders and rerankers are not comparable, ranks are.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

import httpx

from app.schemas import CollectionEvidenceOut
from app.settings import FederationSettings, NodeSettings
from retrieval.search import ArmHit, rrf

from ._access import NOT_AVAILABLE

if TYPE_CHECKING:  # settings import this module: keep the collection stack out of that import
    from retrieval.collections import InstEvidence

__all__ = [
    "FederationClient",
    "FusedItem",
    "NodeAnswer",
    "SourceStatus",
    "Status",
    "evidence_from_json",
    "evidence_to_json",
    "fuse_sources",
]

log = logging.getLogger("cometa.sources")

Status = Literal["ok", "denied", "failed", "timeout"]
T = TypeVar("T")


@dataclass(frozen=True)
class SourceStatus:
    status: Status
    reason: str | None = None
    ms: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "reason": self.reason,
            "ms": None if self.ms is None else round(self.ms, 1),
        }


def evidence_to_json(ev: InstEvidence) -> dict[str, Any]:
    """One evidence item of a ``POST /collections/search`` reply."""
    return CollectionEvidenceOut.of(ev).model_dump(mode="json")


def evidence_from_json(data: Mapping[str, Any]) -> InstEvidence:
    """A remote node's evidence item; raises ValueError (pydantic's ValidationError) on a malformed one."""
    return CollectionEvidenceOut.model_validate(data).to_evidence()


@dataclass(frozen=True)
class FusedItem(Generic[T]):
    source: str
    source_rank: int  # 1-based rank within its own source
    rank: int  # 1-based fused rank
    rrf_score: float
    item: T


def fuse_sources(
    ranked: Mapping[str, Sequence[T]], key: Callable[[T], str], *, k: float = 60.0
) -> list[FusedItem[T]]:
    """RRF over each source's own ranking. Items are keyed per source: the same handbook held by two
    nodes stays two items (two institutions vouching for it), never one with a summed score."""
    arms = {src: [ArmHit(f"{src}\x1f{key(it)}") for it in items] for src, items in ranked.items()}
    by_key = {
        f"{src}\x1f{key(it)}": (src, pos, it)
        for src, items in ranked.items()
        for pos, it in enumerate(items, 1)
    }
    out: list[FusedItem[T]] = []
    for hit in rrf(arms, k=k):
        src, pos, item = by_key[hit.pmid]
        out.append(FusedItem(src, pos, hit.rank, hit.rrf_score, item))
    return out


@dataclass
class NodeAnswer:
    """One node's reply: per-collection status and evidence, keyed by ``node/collection``."""

    node: str
    status: SourceStatus  # the exchange as a whole
    results: dict[str, tuple[SourceStatus, list[InstEvidence]]]
    metas: dict[str, dict[str, Any]] = field(default_factory=dict)  # collection metadata, when allowed


class FederationClient:
    """Asks remote nodes. ``transport`` is for tests that mount nodes in-process."""

    def __init__(
        self, settings: FederationSettings, *, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self.settings = settings
        self.nodes = {n.name: n for n in settings.nodes}
        self._transport = transport

    def _client(self, node: NodeSettings) -> httpx.AsyncClient:
        timeout = httpx.Timeout(node.timeout_s, connect=min(self.settings.connect_timeout_s, node.timeout_s))
        return httpx.AsyncClient(timeout=timeout, transport=self._transport, follow_redirects=False)

    def _headers(self, node: NodeSettings, token: str | None) -> dict[str, str]:
        headers = {"accept": "application/json"}
        bearer = token or (node.service_token.get_secret_value() if node.service_token else None)
        if bearer:
            headers["authorization"] = f"Bearer {bearer}"
        if node.api_key is not None:
            headers["x-api-key"] = node.api_key.get_secret_value()
        return headers

    async def search(
        self,
        question: str,
        wanted: Mapping[str, Sequence[str]],
        *,
        top_docs: int,
        token: str | None,
        request_id: str | None = None,
        max_chars: int | None = None,
    ) -> list[NodeAnswer]:
        """``wanted``: node name -> collection names (``"*"`` = all the caller may search there);
        ``max_chars``: the most text of one document this node's answer context holds."""
        return list(
            await asyncio.gather(
                *(
                    self._search_node(n, list(c), question, top_docs, token, request_id, max_chars)
                    for n, c in wanted.items()
                )
            )
        )

    async def _search_node(
        self,
        name: str,
        collections: list[str],
        question: str,
        top_docs: int,
        token: str | None,
        request_id: str | None,
        max_chars: int | None = None,
    ) -> NodeAnswer:
        node = self.nodes[name]
        started = time.perf_counter()

        def ms() -> float:
            return (time.perf_counter() - started) * 1000

        def whole(status: Status, reason: str) -> NodeAnswer:
            st = SourceStatus(status, reason, ms())
            named = [c for c in collections if c != "*"] or ["*"]
            return NodeAnswer(name, st, {f"{name}/{c}": (st, []) for c in named})

        headers = self._headers(node, token)
        if request_id:
            headers["x-request-id"] = request_id
        body: dict[str, Any] = {"question": question, "collections": collections, "top_docs": top_docs}
        if max_chars is not None:
            body["max_chars"] = max_chars
        try:
            # httpx's timeouts are per phase; the node's deadline covers the whole exchange.
            async with asyncio.timeout(node.timeout_s), self._client(node) as client:
                resp = await client.post(f"{node.url}/collections/search", json=body, headers=headers)
        except (TimeoutError, httpx.TimeoutException):
            return whole("timeout", f"node {name} did not answer within {node.timeout_s:g} s")
        except httpx.HTTPError as exc:
            return whole("failed", f"node {name} unreachable ({type(exc).__name__})")
        if resp.status_code in (401, 403):
            # A node that refuses the caller answers like a collection it refuses, like a node that does
            # not exist: the caller learns nothing; why is in this node's log.
            _log_refusal(name, resp)
            return NodeAnswer(
                name,
                SourceStatus("denied", NOT_AVAILABLE, None),
                {
                    f"{name}/{c}": (SourceStatus("denied", NOT_AVAILABLE, None), [])
                    for c in collections
                    if c != "*"
                },
            )
        if resp.status_code != 200:
            return whole("failed", f"node {name} answered HTTP {resp.status_code} ({_reason(resp)})")
        if len(resp.content) > self.settings.max_response_bytes:
            return whole("failed", f"node {name} sent more than {self.settings.max_response_bytes} bytes")
        try:
            payload = resp.json()
            results: dict[str, tuple[SourceStatus, list[InstEvidence]]] = {}
            metas: dict[str, dict[str, Any]] = {}
            elapsed = ms()
            for item in payload["results"]:
                status = item["status"]
                if status not in ("ok", "denied", "failed", "timeout"):
                    raise ValueError(f"unknown status {status!r}")
                evidence = [evidence_from_json(e) for e in item.get("evidence", [])] if status == "ok" else []
                reason = item.get("reason")
                key = f"{name}/{item['collection']}"
                if status == "denied":  # whatever the node says why, the caller hears the one answer
                    results[key] = (SourceStatus("denied", NOT_AVAILABLE, None), [])
                    continue
                results[key] = (
                    SourceStatus(status, None if reason is None else str(reason)[:300], elapsed),
                    evidence[:top_docs],
                )
                if status == "ok" and isinstance(item.get("meta"), dict):
                    metas[key] = item["meta"]
        except (ValueError, KeyError, TypeError) as exc:
            return whole("failed", f"node {name} sent a malformed reply ({type(exc).__name__})")
        for c in collections:  # a named collection the node did not mention is reported, not dropped
            if c != "*" and f"{name}/{c}" not in results:
                results[f"{name}/{c}"] = (SourceStatus("failed", f"node {name} did not report {c}", ms()), [])
        return NodeAnswer(name, SourceStatus("ok", None, ms()), results, metas)

    async def list_collections(
        self, name: str, token: str | None
    ) -> tuple[SourceStatus, list[dict[str, Any]]]:
        """``GET {url}/collections`` of one node: the metadata of collections the caller may search there."""
        node = self.nodes[name]
        started = time.perf_counter()
        try:
            async with asyncio.timeout(node.timeout_s), self._client(node) as client:
                resp = await client.get(f"{node.url}/collections", headers=self._headers(node, token))
        except (TimeoutError, httpx.TimeoutException):
            return SourceStatus("timeout", f"node {name} did not answer within {node.timeout_s:g} s"), []
        except httpx.HTTPError as exc:
            return SourceStatus("failed", f"node {name} unreachable ({type(exc).__name__})"), []
        elapsed = (time.perf_counter() - started) * 1000
        if resp.status_code in (401, 403):
            _log_refusal(name, resp)
            return SourceStatus("denied", NOT_AVAILABLE, None), []
        if resp.status_code != 200:
            return SourceStatus("failed", f"HTTP {resp.status_code}", elapsed), []
        try:
            items = resp.json()["collections"]
            if not isinstance(items, list):
                raise TypeError("collections is not a list")
        except (ValueError, KeyError, TypeError) as exc:
            return SourceStatus("failed", f"malformed reply ({type(exc).__name__})", elapsed), []
        return SourceStatus("ok", None, elapsed), [i for i in items if isinstance(i, dict)]


def _log_refusal(name: str, resp: httpx.Response) -> None:
    log.info(
        json.dumps({"event": "node_refused", "node": name, "http": resp.status_code, "reason": _reason(resp)})
    )


def _reason(resp: httpx.Response) -> str:
    try:
        data = resp.json()
        return str(data.get("reason") or data.get("error") or "")[:200]
    except ValueError:
        return ""
