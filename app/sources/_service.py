"""Asking across sources: PubMed and institutional collections, local or on other nodes, side by side.

``/ask`` with ``sources`` (e.g. ``["pubmed", "stmarys", "nodeb/hospital-b"]``) runs here:

1. Each source is retrieved on its own: PubMed by the existing :class:`~app.pipeline.Pipeline`; a local
   collection by a :class:`~retrieval.collections.CollectionRetriever` on the process's dense encoder and
   reranker, behind this node's access policies (the gate, then the per-document filter); a remote one by
   the owning node (``_federation``), which applies its own policies to the attributes this node vouches
   for in a signed, short-lived assertion (``_exchange``): the caller's own token never leaves this node.
2. Each source is answered on its own with the ``NOT ADDRESSED`` rule by the judge's
   :class:`~app.judge.SourceAnswerer`, from the one evidence context of ``app.answer``; with no LLM the
   answers are extractive (:func:`~app.answer.extractive_answer`: the best-matching sentences, cited) and
   the judge is skipped.
3. The answers are judged pairwise by the existing :class:`~app.judge.CrossSourceJudge`, and the patient
   is told plainly where their hospital's guidance (the first collection source listed) differs from other
   institutions or from the literature, citing section and page.

Every source comes back with a status (``ok`` / ``denied`` / ``failed`` / ``timeout`` and a reason); a
denied source carries no content. Evidence from all sources is also merged into one list by reciprocal
rank fusion over each source's own ranks (scores from different sources are never compared).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from app.answer import (
    NOT_ADDRESSED,
    Answerer,
    Citation,
    build_evidence_context,
    content_terms,
    extractive_answer,
)
from app.factories import Models
from app.judge import CrossSourceJudge, JudgeReport, SourceAnswer, SourceAnswerer, has_absent_prefix
from app.pipeline import Pipeline
from app.privacy import PhiPolicy
from app.schemas import (
    AnswerMode,
    AskRequest,
)
from app.settings import Settings
from app.trust import (
    EvidenceSignals,
    EvidenceVerdict,
    Focus,
    StudyRelevance,
    relevance_of_texts,
    text_signals,
    weigh_evidence,
)
from core import CometaError, Encoder, Reranker
from llm import LLMClient
from retrieval.collections import (
    Collection,
    CollectionMeta,
    CollectionNotFound,
    CollectionRetriever,
    CollectionStore,
    InstDocument,
    InstEvidence,
    SectionRef,
)
from retrieval.evidence import EvidenceDoc
from retrieval.ncbi import EutilsError
from retrieval.passages import PassageContext
from retrieval.understand import Understanding, hash_text

from ._access import (
    ANONYMOUS,
    NOT_AVAILABLE,
    AccessEngine,
    Subject,
    bearer_token,
    load_policies,
)
from ._exchange import CallerVerifier
from ._federation import FederationClient, FusedItem, SourceStatus, fuse_sources

__all__ = [
    "PUBMED",
    "AcrossOutcome",
    "SourceOutcome",
    "SourceRef",
    "SourcesService",
    "UnknownSource",
    "best_section",
    "differences_note",
    "evidence_id",
    "parse_sources",
]

log = logging.getLogger("cometa.sources")

PUBMED = "pubmed"
SourceKind = Literal["pubmed", "collection", "remote"]


class UnknownSource(CometaError, ValueError):
    """A source that is neither PubMed, a local collection nor on a configured node, where the caller is
    the operator (``parse_sources(strict=True)``: the audit's configuration). A caller of the API is never
    told: to them a missing source is :data:`NOT_AVAILABLE`, like one they may not read."""


@dataclass(frozen=True)
class SourceRef:
    name: str  # as requested
    kind: SourceKind
    node: str | None = None
    collection: str | None = None


def parse_sources(
    names: Sequence[str], *, local: Sequence[str] = (), nodes: Sequence[str] = (), strict: bool = False
) -> list[SourceRef]:
    """Source names -> refs. A name that names nothing still becomes a ref (answered "not available to
    you" like a private one) unless ``strict``, where it raises :class:`UnknownSource`; the message never
    lists what does exist. ``local`` and ``nodes`` (what exists) are read only when ``strict``."""
    refs: list[SourceRef] = []
    for name in names:
        if name == PUBMED:
            refs.append(SourceRef(name, "pubmed"))
        elif "/" in name:
            node, collection = name.split("/", 1)
            if strict and node not in nodes:
                raise UnknownSource(f"unknown node {node!r} in source {name!r}")
            refs.append(SourceRef(name, "remote", node, collection))
        else:
            if strict and name not in local:
                raise UnknownSource(
                    f"unknown source {name!r}: use pubmed, a collection of this node (GET /collections) "
                    "or node/collection"
                )
            refs.append(SourceRef(name, "collection", None, name))
    return refs


@dataclass
class SourceOutcome:
    name: str  # "pubmed", "stmarys", "nodeb/hospital-b"
    kind: SourceKind
    status: SourceStatus
    node: str | None = None
    meta: Mapping[str, Any] | None = None  # collection metadata (only when the caller may search it)
    evidence: list[InstEvidence] = field(default_factory=list)
    docs: list[EvidenceDoc] = field(default_factory=list)  # PubMed
    context: PassageContext | None = None  # PubMed passages
    citations: list[Citation] = field(default_factory=list)  # PubMed
    answer: SourceAnswer | None = None
    answer_mode: AnswerMode | None = None
    warnings: list[str] = field(default_factory=list)
    # The evidence gate (app.trust): PubMed's signals from its search; a collection's from its texts.
    signals: EvidenceSignals | None = None
    verdict: EvidenceVerdict | None = None
    relevance: tuple[StudyRelevance, ...] = ()  # the decision on each document retrieved

    @property
    def label(self) -> str:
        if self.kind == "pubmed":
            return "PubMed (published research)"
        institution = (self.meta or {}).get("institution") or ""
        return f"{institution} ({self.name})" if institution else self.name

    def cite(self, question: str = "") -> str:
        """Where the answer came from, for the patient: the top document, at the section whose heading
        best matches the question and this source's answer (else the retriever's best section)."""
        if self.kind == "pubmed":
            pmids = [c.pmid for c in self.citations[:3]] or [d.pmid for d in self.docs[:3]]
            return ", ".join(f"PMID:{p}" for p in pmids) or "no citation"
        if not self.evidence:
            return "no citation"
        top = self.evidence[0]
        wanted = content_terms(question + " " + (self.answer.text if self.answer else ""))
        scored = []
        for i, sec in enumerate(top.sections):
            heading = content_terms(sec.heading)
            # Overlap per sqrt(heading length): "Travel" beats a long title that mentions "transplant".
            scored.append((len(wanted & heading) / max(len(heading), 1) ** 0.5, -i, sec))
        best = max(scored, key=lambda t: (t[0], t[1]), default=None)
        return top.cite(best[2] if best is not None and best[0] > 0 else None)


@dataclass
class AcrossOutcome:
    question_hash: str
    sources: list[SourceOutcome]
    judge: JudgeReport | None
    differences: str | None
    answer: str
    mode: AnswerMode
    fused: list[FusedItem[EvidenceDoc | InstEvidence]]  # every source's evidence in one ranking
    warnings: list[str]
    timings_ms: dict[str, float]
    model: str | None


# --- sections ------------------------------------------------------------------------------------------


def evidence_id(item: EvidenceDoc | InstEvidence) -> str:
    """A PubMed study's PMID, a collection document's id: what identifies an item within its source."""
    return item.pmid if isinstance(item, EvidenceDoc) else item.doc_id


def best_section(question: str, doc: InstDocument) -> SectionRef | None:
    """The section of ``doc`` sharing most content words with the question (heading words count
    double); None when none shares any. Whole-document evidence has no sections of its own: this one
    gives its citation a section and page."""
    wanted = content_terms(question)
    best: tuple[int, int] | None = None
    for i, sec in enumerate(doc.sections):
        score = 2 * len(wanted & content_terms(sec.heading)) + len(wanted & content_terms(sec.body))
        if score > 0 and (best is None or score > best[0]):
            best = (score, i)
    if best is None:
        return None
    sec = doc.sections[best[1]]
    return SectionRef(sec.section_id, sec.heading, sec.page_start, sec.page_end)


# --- the patient's note ---------------------------------------------------------------------------------


def differences_note(
    report: JudgeReport, outcomes: Mapping[str, SourceOutcome], home: str | None, question: str = ""
) -> str | None:
    """Plain language for the patient: first how their hospital (``home``) compares with each other
    source, with citations; then the differences among the others; then who does not address it."""

    def name(o: SourceOutcome) -> str:
        return "the published research" if o.kind == "pubmed" else o.label

    def cited(o: SourceOutcome) -> str:
        return f"{name(o)} ({o.cite(question)})"

    mine: list[str] = []
    others: list[str] = []
    agree: list[str] = []
    diverged = False
    for pair in report.pairs:
        a, b = outcomes[pair.a], outcomes[pair.b]
        if b.name == home:
            a, b = b, a
        topic = f" on {pair.divergence_topic}" if pair.divergence_topic else ""
        if pair.classification in ("DIVERGENT", "CONTRADICTORY"):
            diverged = True
            how = "gives the opposite advice to" if pair.classification == "CONTRADICTORY" else "differs from"
            if a.name == home:
                mine.append(
                    f"Your hospital's guidance ({a.label}, {a.cite(question)}) {how} {cited(b)}{topic}."
                )
            else:
                others.append(f"{cited(a)} {how} {cited(b)}{topic}.")
        elif pair.classification == "CONSISTENT":
            if a.name == home:
                agree.append(f"{cited(b)} gives the same advice as your hospital.")
            else:
                agree.append(f"{name(a)} and {name(b)} give the same advice.")
    parts = mine + agree + others
    absent = [name(o) for o in outcomes.values() if o.answer is not None and o.answer.absent]
    if absent:
        verb = "does" if len(absent) == 1 else "do"
        parts.append(f"{', '.join(absent)} {verb} not address this question.")
    if diverged:
        parts.append("Please discuss these differences with your care team before acting on them.")
    return " ".join(parts) or None


# --- the service ------------------------------------------------------------------------------------------


class SourcesService:
    """Collections, access decisions and federation for one process (built in the API lifespan)."""

    def __init__(
        self,
        settings: Settings,
        pipeline: Pipeline,
        *,
        store: CollectionStore | None = None,
        federation: FederationClient | None = None,
        encoder: Encoder | None = None,
        reranker: Reranker | None = None,
        models: Models | None = None,
        phi: PhiPolicy | None = None,
    ) -> None:
        if encoder is None and models is None:
            raise ValueError("SourcesService needs an encoder, or the models to load one from")
        self.settings = settings
        self.phi = phi or PhiPolicy.from_settings(settings.llm)
        self.pipeline = pipeline
        self.store = store or CollectionStore.from_settings(settings.collections)
        self.engine = AccessEngine(load_policies(settings.access))  # a bad policy file fails start-up
        self.verifier = CallerVerifier(settings.access, settings.federation)  # IdP tokens, peer assertions
        # Assertions carry the attributes policies use, no other claim of the caller's token.
        self.federation = federation or FederationClient(
            settings.federation, attributes=self.engine.subject_attributes
        )
        self._models = models
        self._encoder = encoder
        self._reranker = reranker
        # An injected encoder comes with its reranker (None = rank by the dense score alone).
        self._reranker_loaded = encoder is not None or reranker is not None
        self._lock = asyncio.Lock()
        self._retrievers: dict[str, tuple[tuple[str, ...], CollectionRetriever]] = {}
        self._llm_slots = asyncio.Semaphore(settings.api.judge_concurrency)

    # The room a document's label takes in the answer's context ([DOC:...] citation, title, section list):
    # a document routed within ``budget - _LABEL_ROOM`` characters is never cut by the context builder.
    _LABEL_ROOM = 800

    def context_budget(self) -> int:
        """Characters of evidence one per-source answer reads: ``sources.context_chars``, and with the
        embedded model what its window holds (2,048 tokens by default: ~768 left for the prompt and the
        answer, ~3 characters per token)."""
        budget = self.settings.sources.context_chars
        if self.settings.llm.backend == "embedded":
            budget = min(budget, max(1000, (self.settings.llm.embedded_n_ctx - 768) * 3))
        return budget

    def document_budget(self, requested: int | None = None) -> int:
        """The most text of one document a search returns: this node's answer budget less the label, or
        less when a calling node asks for less (its own model's budget)."""
        own = max(500, self.context_budget() - self._LABEL_ROOM)
        return own if requested is None else max(500, min(own, requested))

    # --- who is asking ---

    def subject(self, authorization: str | None) -> Subject:
        """Who an ``Authorization`` header names; anonymous without a bearer token; raises InvalidToken."""
        token = bearer_token(authorization)
        return ANONYMOUS if token is None else self.verifier.verify(token)

    # --- local collections ---

    async def _components(self) -> tuple[Encoder, Reranker | None]:
        async with self._lock:
            if self._encoder is None or not self._reranker_loaded:
                assert self._models is not None  # what was not given comes from the process's models
                if self._encoder is None:
                    self._encoder = await self._models.encoder()  # one copy of each model per process
                if not self._reranker_loaded:
                    self._reranker = await self._models.reranker()
                    self._reranker_loaded = True
            return self._encoder, self._reranker

    async def _retriever(self, collection: Collection) -> CollectionRetriever:
        encoder, reranker = await self._components()
        fingerprint = tuple(sorted(f"{d.doc_id}:{d.sha256}" for d in collection.documents))
        cached = self._retrievers.get(collection.name)
        if cached is not None and cached[0] == fingerprint:
            cached[1].collection = collection  # fresh metadata, same documents: keep the index
            return cached[1]
        search, rrf_k = self.settings.collections.search, self.settings.evidence.rrf_k
        retriever = CollectionRetriever(collection, encoder, reranker, search, rrf_k=rrf_k)
        self._retrievers[collection.name] = (fingerprint, retriever)
        return retriever

    def local_names(self) -> list[str]:
        return [m.name for m in self.store.list()]

    def searchable(self, subject: Subject) -> list[CollectionMeta]:
        """Metadata of the local collections ``subject`` may search (others are not even named)."""
        return [m for m in self.store.list() if self.engine.can_search(subject, m).allowed]

    async def search_collection(
        self, name: str, question: str, subject: Subject, top_docs: int, *, max_chars: int | None = None
    ) -> tuple[SourceStatus, list[InstEvidence], CollectionMeta | None]:
        """One local collection behind the gate and the per-document filter; of a denied collection only
        the metadata is read. A missing collection, one the gate refuses and one whose every document the
        filter withholds all answer the same ``denied`` / :data:`NOT_AVAILABLE` (no timing): the caller
        learns neither whether it exists nor why; the reason goes to the audit log."""
        started = time.perf_counter()

        def ms() -> float:
            return (time.perf_counter() - started) * 1000

        def unavailable(why: str) -> tuple[SourceStatus, list[InstEvidence], CollectionMeta | None]:
            log.info(
                json.dumps(
                    {
                        "event": "collection_not_available",
                        "collection": name,
                        "subject": hash_text(subject.id) if subject.id else None,
                        "why": why,
                    }
                )
            )
            return SourceStatus("denied", NOT_AVAILABLE, None), [], None

        metas = {m.name: m for m in await asyncio.to_thread(self.store.list)}
        meta = metas.get(name)
        if meta is None:
            return unavailable("no such collection")
        decision = self.engine.can_search(subject, meta)  # decided on metadata: no document is read
        if not decision.allowed:
            return unavailable(decision.reason)
        try:
            collection = await asyncio.to_thread(self.store.get, name)
        except CollectionNotFound:  # removed in between
            return unavailable("no such collection")
        doc_filter = self.engine.doc_filter(subject, name)
        if doc_filter is not None and collection.documents and not any(map(doc_filter, collection.documents)):
            # Every document withheld: "not available to you", never "does not address this question".
            return unavailable("every document withheld by the retrieve policies")
        try:
            retriever = await self._retriever(collection)
            evidence = await retriever.search(
                question, top_docs=top_docs, doc_filter=doc_filter, max_chars=self.document_budget(max_chars)
            )
        except CometaError as exc:
            log.warning(
                json.dumps(
                    {"event": "collection_search_failed", "collection": name, "error": type(exc).__name__}
                )
            )
            return SourceStatus("failed", f"search failed ({type(exc).__name__})", ms()), [], collection.meta
        evidence = [self._with_section(question, collection, e) for e in evidence]
        return SourceStatus("ok", None, ms()), evidence, collection.meta

    @staticmethod
    def _with_section(question: str, collection: Collection, ev: InstEvidence) -> InstEvidence:
        if ev.sections:
            return ev
        doc = collection.document(ev.doc_id)
        ref = None if doc is None else best_section(question, doc)
        return ev if ref is None else dataclasses.replace(ev, sections=(ref,))

    # --- asking ---

    async def _pubmed(
        self, understanding: Understanding, req: AskRequest | None, question: str | None = None
    ) -> SourceOutcome:
        """PubMed searched from the flow's plan and weighed (``question``: as a model may see it)."""
        started = time.perf_counter()
        api_key = req.ncbi_api_key.get_secret_value() if req and req.ncbi_api_key else None
        limit = req.max_documents if req else 10
        try:
            # The question flow's own understanding: one plan, one scope decision for every source.
            outcome = await self.pipeline.retrieve(
                understanding,
                mindate=req.mindate if req else None,
                maxdate=req.maxdate if req else None,
                api_key=api_key,
                gate_documents=limit,
            )
        except EutilsError as exc:
            status = SourceStatus("failed", f"PubMed unavailable ({type(exc).__name__})", _since(started))
            return SourceOutcome(PUBMED, "pubmed", status)
        docs = list(outcome.evidence.docs[:limit])
        context = None if outcome.context is None else outcome.context.kept({d.pmid for d in docs})
        # The one weighing of /ask: only the studies that address the question are cited and counted.
        weighed = await self.pipeline.weigh(outcome, docs, context, question=question)
        kept = list(weighed.kept)
        return SourceOutcome(
            PUBMED,
            "pubmed",
            SourceStatus("ok", None, _since(started)),
            docs=kept,
            context=None if context is None else context.kept({d.pmid for d in kept}),
            warnings=list(outcome.warnings),
            signals=weighed.verdict.signals,
            verdict=weighed.verdict,
            relevance=weighed.relevance,
        )

    async def _local(self, name: str, question: str, subject: Subject, top_docs: int) -> SourceOutcome:
        status, evidence, meta = await self.search_collection(name, question, subject, top_docs)
        return SourceOutcome(
            name, "collection", status, meta=None if meta is None else meta.model_dump(), evidence=evidence
        )

    async def _remote(
        self,
        refs: Sequence[SourceRef],
        question: str,
        subject: Subject,
        top_docs: int,
        request_id: str | None,
    ) -> list[SourceOutcome]:
        wanted: dict[str, list[str]] = {}
        out: list[SourceOutcome] = []
        for ref in refs:
            assert ref.node is not None and ref.collection is not None
            if ref.node not in self.federation.nodes:  # answered like a collection the node refuses
                status = SourceStatus("denied", NOT_AVAILABLE, None)
                out.append(SourceOutcome(ref.name, "remote", status, node=ref.node))
                continue
            wanted.setdefault(ref.node, []).append(ref.collection)
        answers = await self.federation.search(
            question,
            wanted,
            top_docs=top_docs,
            subject=subject,
            request_id=request_id,
            max_chars=self.document_budget(),
        )
        metas = {a.node: a.metas for a in answers}
        for node_answer in answers:
            for name, (status, evidence) in node_answer.results.items():
                meta = metas[node_answer.node].get(name)
                out.append(
                    SourceOutcome(name, "remote", status, node=node_answer.node, meta=meta, evidence=evidence)
                )
        return out

    async def _answer(
        self,
        question: str,
        focus: Focus,
        o: SourceOutcome,
        per_source: SourceAnswerer | None,
        judge: CrossSourceJudge | None,
        answerer: Answerer,
        sentences: int,
        context_chars: int,
    ) -> None:
        if o.status.status != "ok":
            return
        if o.verdict is None and not o.evidence and not o.docs:
            # Nothing this caller may read matched: the source does not address it (for them).
            o.answer = SourceAnswer(o.name, o.name, NOT_ADDRESSED, True, "prefix")
            o.answer_mode = "not_addressed"
            return
        # The one evidence gate of every answer path: unrelated evidence is not evidence (no LLM call).
        # PubMed was weighed with its search (_pubmed); a collection's texts are weighed here alike.
        gate = self.pipeline.gate  # the settings' thresholds as calibrated for this process's encoder
        if o.verdict is None:
            lay = self.pipeline.understander.rewriter.lay_words
            keyed = [(f"{e.collection}/{e.doc_id}", e.text) for e in o.evidence]
            relevance = await asyncio.to_thread(relevance_of_texts, focus, keyed, gate.relevance_min_words)

            def signals_of(kept: Sequence[InstEvidence]) -> EvidenceSignals:
                texts = [e.text for e in kept]
                return text_signals(question, texts, top_docs=gate.coverage_documents, lay_words=lay)

            weighed = weigh_evidence(o.evidence, relevance, signals_of, gate)
            o.evidence, o.relevance = list(weighed.kept), weighed.relevance
            o.signals, o.verdict = weighed.verdict.signals, weighed.verdict
        if o.verdict.abstain:
            o.answer = SourceAnswer(o.name, o.name, NOT_ADDRESSED, True, "prefix")
            # A handbook that does not cover the question "does not address" it; the literature "has no
            # evidence" (the /ask mode).
            o.answer_mode = "insufficient_evidence" if o.kind == "pubmed" else "not_addressed"
            o.warnings.append(f"{o.name}: evidence gate: " + "; ".join(o.verdict.reasons))
            return
        if per_source is None:
            if o.kind == "pubmed":  # the /ask answerer's own extractive answer, with its PMID citations
                extractive = await answerer.answer(question, o.docs, o.context, verdict=o.verdict)
                text = extractive.text or NOT_ADDRESSED
                o.citations = list(extractive.citations)
            else:  # the sentences that match the question, from every document retrieved
                evidence = build_evidence_context(o.evidence, max_chars=None)
                text, _ = extractive_answer(evidence, sentences, question=question)
            absent = has_absent_prefix(text)
            o.answer = SourceAnswer(o.name, o.name, text, absent, "prefix" if absent else None)
            o.answer_mode = "not_addressed" if absent else "extractive"
            return
        source: Sequence[EvidenceDoc] | Sequence[InstEvidence] = o.docs if o.kind == "pubmed" else o.evidence
        evidence = build_evidence_context(source, o.context, max_chars=context_chars)
        o.citations = list(evidence.citations.values())  # PubMed's PMIDs; a collection's context has none
        if o.kind != "pubmed":
            # Documents are routed to fit the budget (search_collection); what still did not fit is said.
            read = {b.key: len(b.text) for b in evidence.blocks}
            keys = [(f"{e.collection}/{e.doc_id}", len(e.text.strip())) for e in o.evidence]
            parts = []
            if left := sum(1 for k, _ in keys if k not in read):
                parts.append(f"{left} lower-ranked document(s) left out")
            if cut := sum(1 for k, n in keys if k in read and read[k] < n):
                parts.append(f"{cut} document(s) cut")
            if parts:
                o.warnings.append(f"{o.name}: context budget of {context_chars:,} chars: {', '.join(parts)}")
        answer = await per_source.answer(
            question, evidence, source_id=o.name, label=o.name, source_label=o.label
        )
        if judge is not None:
            answer = await judge.screen(question, answer)
        if answer.citations_removed:
            o.warnings.append(
                f"{o.name}: removed {answer.citations_removed} citation(s) to what was not in its evidence"
            )
        o.answer = answer
        o.answer_mode = "error" if answer.error else "not_addressed" if answer.absent else "llm"

    def for_nodes(self, question: str, understanding: Understanding) -> str:
        """``question`` as another institution's node may see it: the PHI policy toward NCBI, on text. What
        the scrubber found and what its name cues find in any casing ("my husband john kowalczyk") become
        placeholders wherever they occur (what the query gate checks against:
        :meth:`app.trust.AbsenceCounter.phi_found`)."""
        rewriter = self.pipeline.understander.rewriter
        text = question
        for found in self.pipeline.absence.phi_found(question, understanding, rewriter):
            text = found.redact(text)
        return text

    async def ask(
        self,
        question: str,
        refs: Sequence[SourceRef],
        *,
        subject: Subject,
        answerer: Answerer,
        judge: CrossSourceJudge | None,
        understanding: Understanding,
        req: AskRequest | None = None,
        request_id: str | None = None,
        reader: LLMClient | None = None,
    ) -> AcrossOutcome:
        """Retrieve, answer and judge every source: the across-sources steps of the question flow
        (:meth:`app.asker.Asker.events` has understood the question and passed its scope check).

        ``understanding`` is that flow's: PubMed is searched from its plan, never understood again.
        ``subject`` is the verified caller: other nodes get a signed assertion of it, never their token.
        ``reader`` writes the per-source answers when given (the evaluation audit keeps its judge apart from
        the reader); by default the judge's LLM does, as on ``/ask``."""
        if not understanding.scope.in_scope:  # the flow answers these itself: never search for them
            raise ValueError("an out-of-scope question reached the sources")
        cfg = self.settings.sources
        timings: dict[str, float] = {}
        warnings: list[str] = []
        t0 = time.perf_counter()
        tasks: list[Any] = []
        for ref in refs:
            if ref.kind == "pubmed":
                tasks.append(self._pubmed(understanding, req, self.phi.for_llm(question)))
            elif ref.kind == "collection":
                tasks.append(self._local(ref.name, question, subject, cfg.top_docs))
        remote = [r for r in refs if r.kind == "remote"]
        remote_question = self.for_nodes(question, understanding) if remote else ""
        gathered = await asyncio.gather(
            *tasks,
            self._remote(remote, remote_question, subject, cfg.top_docs, request_id) if remote else _none(),
        )
        timings["retrieve"] = _since(t0)
        found: dict[str, SourceOutcome] = {}
        for item in gathered[:-1]:
            found[item.name] = item
        remote_out: list[SourceOutcome] = gathered[-1] or []
        by_name = {o.name: o for o in remote_out}
        named = {r.name for r in refs if r.kind == "remote" and r.collection != "*"}
        outcomes: list[SourceOutcome] = []
        for ref in refs:  # request order; "node/*" expands in the node's order
            if ref.kind != "remote":
                outcomes.append(found[ref.name])
            elif ref.collection == "*":
                outcomes.extend(o for o in remote_out if o.node == ref.node and o.name not in named)
            elif ref.name in by_name:
                outcomes.append(by_name[ref.name])
        for o in outcomes:
            warnings.extend(o.warnings)

        llm = reader if reader is not None else judge.llm if judge is not None else self.pipeline.llm
        budget = self.context_budget()
        asked = self.phi.for_llm(question)  # what the per-source answers and the judge may see
        # What every source's documents must be about (off the loop: the speller reads every word).
        focus = await asyncio.to_thread(self.pipeline.focus, understanding)
        per_source = (
            None if llm is None else SourceAnswerer(llm, self._llm_slots, max_tokens=cfg.answer_max_tokens)
        )
        t1 = time.perf_counter()
        await asyncio.gather(
            *(
                self._answer(asked, focus, o, per_source, judge, answerer, cfg.extractive_sentences, budget)
                for o in outcomes
            )
        )
        timings["answer"] = _since(t1)
        for o in outcomes:  # what answering added: gate abstentions, citations removed
            warnings.extend(w for w in o.warnings if w not in warnings)
        answered = [o for o in outcomes if o.answer is not None]
        report: JudgeReport | None = None
        if len(answered) >= 2:
            if judge is None:
                warnings.append(
                    "judge skipped: comparing sources needs an LLM (COMETA_LLM__BACKEND, e.g. embedded); "
                    "the per-source answers are extractive"
                )
            else:
                t2 = time.perf_counter()
                report = await judge.judge(asked, [o.answer for o in answered if o.answer is not None])
                timings["judge"] = _since(t2)
        elif len(refs) > 1:
            warnings.append("judge skipped: fewer than two sources could be answered")
        for o in outcomes:
            if o.answer is not None and o.answer.error:
                warnings.append(o.answer.error)
            warnings.extend(w for w in o.warnings if w not in warnings)
        home = next((o.name for o in outcomes if o.kind != "pubmed"), None)
        outcome_map = {o.name: o for o in outcomes}
        differences = differences_note(report, outcome_map, home, question) if report is not None else None

        lines = []
        for o in outcomes:
            if o.answer is not None and not o.answer.error:
                lines.append(f"{o.label}: {o.answer.text}")
            elif o.answer is not None:
                lines.append(f"{o.label}: could not be answered this time (the language model failed).")
            elif o.status.status == "denied":  # never "does not address": that would be a false answer
                lines.append(f"{o.label}: not available to you.")
            elif o.status.status != "ok":
                lines.append(f"{o.label}: not searched ({o.status.status}).")
        if differences:
            lines.append(differences)
        modes = {o.answer_mode for o in outcomes}
        mode: AnswerMode = (
            "llm" if "llm" in modes else "extractive" if "extractive" in modes else "insufficient_evidence"
        )

        ranked: dict[str, list[EvidenceDoc | InstEvidence]] = {}
        for o in outcomes:
            ranked[o.name] = list(o.docs) if o.kind == "pubmed" else list(o.evidence)
        fused = fuse_sources(ranked, key=evidence_id, k=self.settings.evidence.rrf_k)
        return AcrossOutcome(
            question_hash=hash_text(question),
            sources=outcomes,
            judge=report,
            differences=differences,
            answer="\n\n".join(lines),
            mode=mode,
            fused=fused,
            warnings=list(dict.fromkeys(warnings)),
            timings_ms={k: round(v, 2) for k, v in timings.items()},
            model=getattr(llm, "model_name", None) if llm is not None else None,
        )


async def _none() -> None:
    return None


def _since(started: float) -> float:
    return (time.perf_counter() - started) * 1000
