"""Federation: other CoMeta nodes as sources, searched over HTTP with their own access decisions.

A node lists remote nodes in settings (``COMETA_FEDERATION__NODES``). A source ``node/collection`` (or
``node/*``: every collection that node lets the caller search) is asked with ONE ``POST
{url}/collections/search`` per node; nodes are asked concurrently, each under its own deadline. The
caller's token is never forwarded: an authenticated caller goes as a short-lived assertion this node
signs for that node's audience alone (``_exchange``), and the node owning the data applies its own
policies to the attributes in it; an anonymous caller goes anonymous (a node's ``service_token`` stands
in only where ``anonymous_service_token`` allows it). Every node and collection comes back with a status
(``ok`` / ``denied`` / ``failed`` / ``timeout`` and a reason): a failed, slow or denying node is reported,
never silently dropped, and a node that refuses the caller reads exactly like one that does not exist.

Replies are not trusted: read as a stream and abandoned past ``max_response_bytes``, validated against the
typed schema (:class:`~app.schemas.CollectionSearchResponse`: evidence filed under its own collection,
no content for a refused one, bounded lists and texts, ids that are slugs, scores that are numbers),
collections nobody asked for ignored, a node's reasons replaced by this node's own words, and an
institution name shown only when the node is configured to speak for it (``NodeSettings.institutions``).
A node that refuses the caller outright, or lets them search nothing of ``node/*``, is ``denied``.

Evidence from different nodes is merged by reciprocal rank fusion over each source's own ranking
(:func:`fuse_sources`): scores from different encoders and rerankers are not comparable, ranks are.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

import httpx
from pydantic import ValidationError

from app.schemas import CollectionEvidenceOut, CollectionListResponse, CollectionSearchResponse, SectionOut
from app.settings import FederationSettings, NodeSettings
from retrieval.search import ArmHit, rrf

from ._access import NOT_AVAILABLE, Subject
from ._exchange import AssertionSigner

if TYPE_CHECKING:  # settings import this module: keep the collection stack out of that import
    from retrieval.collections import InstEvidence, SectionRef

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
# Why a node's collection was not searched, as this node says it (a node's own reason is never relayed).
_REMOTE_REASONS = {
    "failed": "node {node} could not search it",
    "timeout": "node {node} did not finish searching it in time",
}


class _CannotVouch(Exception):
    """An authenticated caller, and no key to sign their assertion with."""


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


def section_out(s: SectionRef) -> SectionOut:
    """A section of a collection document on the wire (between nodes, and in ``/ask`` across sources)."""
    return SectionOut(
        section_id=s.section_id, heading=s.heading, page_start=s.page_start, page_end=s.page_end
    )


def evidence_out(ev: InstEvidence) -> CollectionEvidenceOut:
    """One evidence item of a ``POST /collections/search`` reply, as this node sends it."""
    return CollectionEvidenceOut(
        collection=ev.collection,
        doc_id=ev.doc_id,
        title=ev.title,
        route=ev.route,
        text=ev.text,
        sections=[section_out(s) for s in ev.sections],
        score=ev.score,
        cite=ev.cite(),
    )


def evidence_in(item: CollectionEvidenceOut) -> InstEvidence:
    """A node's evidence item as this node reads it (its ``cite`` is recomputed, never trusted)."""
    from retrieval.collections import InstEvidence, SectionRef  # settings import this module: kept lazy

    return InstEvidence(
        collection=item.collection,
        doc_id=item.doc_id,
        title=item.title,
        route=item.route,
        text=item.text,
        sections=tuple(SectionRef(s.section_id, s.heading, s.page_start, s.page_end) for s in item.sections),
        score=item.score,
    )


def evidence_to_json(ev: InstEvidence) -> dict[str, Any]:
    """One evidence item of a ``POST /collections/search`` reply."""
    return evidence_out(ev).model_dump(mode="json")


def evidence_from_json(data: Mapping[str, Any]) -> InstEvidence:
    """A remote node's evidence item; raises ValueError (pydantic's ValidationError) on a malformed one."""
    return evidence_in(CollectionEvidenceOut.model_validate(data))


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
        self,
        settings: FederationSettings,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        signer: AssertionSigner | None = None,
        attributes: Collection[str] = (),
    ) -> None:
        """``signer``: default from the settings (``node_id`` + ``signing_key``); without one, callers can
        only go anonymous. ``attributes``: the caller attributes an assertion carries to a node that names
        none of its own (``NodeSettings.attributes``); the sources service passes those this node's
        policies use."""
        self.settings = settings
        self.attributes = frozenset(attributes)
        self.nodes = {n.name: n for n in settings.nodes}
        self._transport = transport
        self._signer = signer if signer is not None else AssertionSigner.from_settings(settings)

    def _client(self, node: NodeSettings) -> httpx.AsyncClient:
        timeout = httpx.Timeout(node.timeout_s, connect=min(self.settings.connect_timeout_s, node.timeout_s))
        return httpx.AsyncClient(timeout=timeout, transport=self._transport, follow_redirects=False)

    def _headers(self, node: NodeSettings, subject: Subject) -> dict[str, str]:
        """The caller as ``node`` sees them: a fresh assertion for an authenticated caller, nothing (or the
        service token, where allowed) for an anonymous one. Never the caller's own token."""
        headers = {"accept": "application/json"}
        bearer = None
        if subject.authenticated:
            if self._signer is None:
                raise _CannotVouch(
                    f"this node has no signing key: it cannot vouch for callers at {node.name}"
                )
            vouched = self.attributes if node.attributes is None else node.attributes
            bearer = self._signer.assertion(subject, node.audience or node.url, vouched)
        elif node.anonymous_service_token and node.service_token is not None:
            bearer = node.service_token.get_secret_value()
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
        subject: Subject,
        request_id: str | None = None,
        max_chars: int | None = None,
    ) -> list[NodeAnswer]:
        """``wanted``: node name -> collection names (``"*"`` = all the caller may search there);
        ``max_chars``: the most text of one document this node's answer context holds."""
        return list(
            await asyncio.gather(
                *(
                    self._search_node(n, list(c), question, top_docs, subject, request_id, max_chars)
                    for n, c in wanted.items()
                )
            )
        )

    async def _exchange(
        self, node: NodeSettings, method: str, path: str, headers: dict[str, str], body: Any = None
    ) -> tuple[SourceStatus | None, bytes]:
        """One request to ``node`` under its deadline, the reply read as a stream and abandoned as soon as
        it passes ``max_response_bytes`` (declared or counted): (a status when it failed, else None; body)."""
        name = node.name
        cap = self.settings.max_response_bytes
        started = time.perf_counter()

        def ms() -> float:
            return (time.perf_counter() - started) * 1000

        try:
            # httpx's timeouts are per phase; the node's deadline covers the whole exchange.
            async with asyncio.timeout(node.timeout_s), self._client(node) as client:
                request = client.build_request(method, f"{node.url}{path}", json=body, headers=headers)
                response = await client.send(request, stream=True)
                try:
                    if response.status_code in (401, 403):
                        head = b""
                        async for chunk in response.aiter_bytes():  # why, for this node's log: 2 kB at most
                            head += chunk
                            if len(head) >= 2000:
                                break
                        _log_refusal(name, response.status_code, head[:2000].decode(errors="replace"))
                        return SourceStatus("denied", NOT_AVAILABLE, None), b""
                    if response.status_code != 200:
                        return SourceStatus(
                            "failed", f"node {name} answered HTTP {response.status_code}", ms()
                        ), b""
                    declared = response.headers.get("content-length")
                    if declared is not None and declared.isdigit() and int(declared) > cap:
                        return SourceStatus("failed", f"node {name} sent more than {cap} bytes", ms()), b""
                    chunks: list[bytes] = []
                    size = 0
                    async for chunk in response.aiter_bytes():
                        size += len(chunk)
                        if size > cap:  # stop reading now: the rest is never downloaded
                            return SourceStatus(
                                "failed", f"node {name} sent more than {cap} bytes", ms()
                            ), b""
                        chunks.append(chunk)
                finally:
                    await response.aclose()
        except (TimeoutError, httpx.TimeoutException):
            return SourceStatus(
                "timeout", f"node {name} did not answer within {node.timeout_s:g} s", ms()
            ), b""
        except httpx.HTTPError as exc:
            return SourceStatus("failed", f"node {name} unreachable ({type(exc).__name__})", ms()), b""
        return None, b"".join(chunks)

    def institution(self, node: str, claimed: str) -> str | None:
        """The institution a node's collection may show: only one that node is configured to speak for
        (``NodeSettings.institutions``); None for any other claim, which is logged."""
        if not claimed:
            return None
        settings = self.nodes.get(node)
        if settings is not None and claimed in settings.institutions:
            return claimed
        log.warning(json.dumps({"event": "institution_refused", "node": node, "claimed": claimed[:200]}))
        return None

    async def _search_node(
        self,
        name: str,
        collections: list[str],
        question: str,
        top_docs: int,
        subject: Subject,
        request_id: str | None,
        max_chars: int | None = None,
    ) -> NodeAnswer:
        node = self.nodes[name]
        started = time.perf_counter()

        def ms() -> float:
            return (time.perf_counter() - started) * 1000

        named = [c for c in collections if c != "*"]

        def whole(st: SourceStatus) -> NodeAnswer:
            return NodeAnswer(name, st, {f"{name}/{c}": (st, []) for c in (named or ["*"])})

        try:
            headers = self._headers(node, subject)
        except _CannotVouch as exc:
            return whole(SourceStatus("failed", str(exc), ms()))
        if request_id:
            headers["x-request-id"] = request_id
        body: dict[str, Any] = {"question": question, "collections": collections, "top_docs": top_docs}
        if max_chars is not None:
            body["max_chars"] = max_chars
        failed, raw = await self._exchange(node, "POST", "/collections/search", headers, body)
        if failed is not None:
            if failed.status == "denied":  # the whole request refused: each name asked, "*" too, reads as
                # on a node that does not exist (not available to you), never as silence
                return NodeAnswer(name, failed, {f"{name}/{c}": (failed, []) for c in collections})
            return whole(failed)
        try:
            reply = CollectionSearchResponse.model_validate_json(raw)
        except ValidationError as exc:
            where = ".".join(str(p) for p in exc.errors()[0]["loc"]) or "body"
            return whole(SourceStatus("failed", f"node {name} sent a malformed reply (at {where})", ms()))
        results: dict[str, tuple[SourceStatus, list[InstEvidence]]] = {}
        metas: dict[str, dict[str, Any]] = {}
        elapsed = ms()
        for item in reply.results:
            if "*" not in collections and item.collection not in named:
                continue  # not asked for: a node does not add sources to the answer
            key = f"{name}/{item.collection}"
            if item.status == "denied":  # whatever the node says why, the caller hears the one answer
                results[key] = (SourceStatus("denied", NOT_AVAILABLE, None), [])
                continue
            evidence = [evidence_in(e) for e in item.evidence] if item.status == "ok" else []
            # The node's own words on why (any text it likes) stay with it: the caller hears ours.
            reason = _REMOTE_REASONS.get(item.status, "").format(node=name) or None
            results[key] = (SourceStatus(item.status, reason, elapsed), evidence[:top_docs])
            if item.status == "ok" and item.meta is not None:
                meta = item.meta.model_dump(mode="json")
                meta["institution"] = self.institution(name, item.meta.institution) or ""
                metas[key] = meta
        for c in named:  # a named collection the node did not mention is reported, not dropped
            if f"{name}/{c}" not in results:
                results[f"{name}/{c}"] = (SourceStatus("failed", f"node {name} did not report {c}", ms()), [])
        if "*" in collections and set(results) <= {f"{name}/{c}" for c in named}:  # nothing else for them
            results[f"{name}/*"] = (SourceStatus("denied", NOT_AVAILABLE, None), [])
        return NodeAnswer(name, SourceStatus("ok", None, ms()), results, metas)

    async def list_collections(
        self, name: str, subject: Subject
    ) -> tuple[SourceStatus, list[dict[str, Any]]]:
        """``GET {url}/collections`` of one node: the metadata of collections the caller may search there
        (validated; an institution only when the node may speak for it)."""
        node = self.nodes[name]
        started = time.perf_counter()
        try:
            headers = self._headers(node, subject)
        except _CannotVouch as exc:
            return SourceStatus("failed", str(exc), None), []
        failed, raw = await self._exchange(node, "GET", "/collections", headers)
        elapsed = (time.perf_counter() - started) * 1000
        if failed is not None:
            return failed, []
        try:
            reply = CollectionListResponse.model_validate_json(raw)
        except ValidationError as exc:
            where = ".".join(str(p) for p in exc.errors()[0]["loc"]) or "body"
            return SourceStatus("failed", f"malformed reply (at {where})", elapsed), []
        items = []
        for meta in reply.collections:
            item = meta.model_dump(mode="json")
            item["institution"] = self.institution(name, meta.institution) or ""
            items.append(item)
        return SourceStatus("ok", None, elapsed), items


def _log_refusal(name: str, status: int, body: str) -> None:
    try:
        reason = json.loads(body).get("reason")
    except (ValueError, AttributeError):
        reason = None
    log.info(json.dumps({"event": "node_refused", "node": name, "http": status, "reason": str(reason)[:200]}))
