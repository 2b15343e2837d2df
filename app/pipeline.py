"""Retrieval orchestration: the stages over injected parts; shared by the CLI, evaluation and the service.

``Pipeline.search``: Understand -> (Adapt-E Boolean arm ‖ dense arm) -> RRF -> one batched EFetch ->
metadata filters and depth policy -> an ordered evidence list, with the evidence gate's count lookups. Its
E-utilities client, LLM, understander and models are built by :mod:`app.factories` and injected
(:mod:`app.container`, or ``app.container.build_pipeline`` for a pipeline alone).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core import CometaError, OnProgress
from llm import LLMClient
from retrieval import AdaptE, AdaptEResult, EutilsClient, MeshVocabulary
from retrieval.embed import DenseHit, DenseRetriever, EncodeFailed
from retrieval.eutils import EutilsDegradation, track_degradation
from retrieval.evidence import EvidenceBuilder, EvidenceDoc, EvidenceSet, classify, depth_for
from retrieval.ncbi import BUNDLED_CORPUS_DIR, EutilsError, PubmedRecord, corpus_vocabulary, load_corpus
from retrieval.passages import PassageContext, PassageRetriever
from retrieval.search import FusedHit, ZeroHitCause, fuse, pubmed_warnings, zero_hit_cause
from retrieval.understand import QueryUnderstander, Understanding

from .factories import Models, passage_store_path
from .settings import Settings
from .trust import (
    AbsenceCounter,
    Calibration,
    CalibrationError,
    EvidenceSignals,
    Focus,
    LLMRelevance,
    StudyRelevance,
    Weighed,
    evidence_signals,
    judge_relevance,
    question_focus,
    resolve_calibration,
    study_text,
    weigh_evidence,
)

__all__ = ["Pipeline", "SearchOutcome", "build_passage_store"]

log = logging.getLogger("cometa.pipeline")


async def build_passage_store(
    pipeline: Pipeline, *, batch: int = 8, on_progress: OnProgress | None = None
) -> tuple[int, int, Path]:
    """Segment and encode, once, every full text of the offline corpus that the evidence stage deepens (its
    depth policy; D2 reviews with a PMC copy by default), exactly as a question would (same evidence
    documents, same cache keys), and write them beside the dense index, where the passage stage loads
    them. Returns (documents, passages, path)."""
    settings = pipeline.settings
    passages = await pipeline.passage_retriever()
    dense = await pipeline.dense_retriever()
    if settings.eutils.backend != "local" or passages is None or dense is None:
        raise CometaError("the passage store is built offline, with the dense index and passages on")
    path = passage_store_path(dense)
    if path is None:
        raise CometaError("the dense index has no folder to keep the passage store in")
    corpus = await asyncio.to_thread(load_corpus, settings.local_server.corpus_dir)
    wanted = [
        r.pmid
        for r in corpus.records.values()
        if r.pmcid and depth_for(classify(r), settings.evidence) == "fulltext"
    ]
    kept: dict[str, Any] = {}
    encoded = 0
    for start in range(0, len(wanted), batch):
        hits = [FusedHit(p, 0.0, n, ()) for n, p in enumerate(wanted[start : start + batch], start=1)]
        evidence = await pipeline.evidence.build(hits)
        docs = [d for d in evidence.docs if d.depth_used == "fulltext"]
        encoded += await asyncio.to_thread(passages.precompute, docs)
        kept.update(passages.cache.entries())
        if on_progress is not None:
            on_progress(min(start + batch, len(wanted)), len(wanted))
    full = {k: v for k, v in kept.items() if any(kind == "section" for _, kind, _ in v[0])}
    await asyncio.to_thread(passages.cache.save, path, full)
    return len(full), encoded, path


def _year(value: str | None) -> int | None:
    return int(value[:4]) if value and value[:4].isdigit() else None


@dataclass
class SearchOutcome:
    understanding: Understanding
    adapte: AdaptEResult
    dense: list[DenseHit]
    fused: list[FusedHit]
    evidence: EvidenceSet
    context: PassageContext | None = None  # passages for the answer (None when passages are off)
    warnings: list[str] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    # E-utilities failures, stale cache answers and missing records of this question (None: not tracked).
    eutils: EutilsDegradation | None = None
    absent_terms: int = 0  # rare question words no record contains (the evidence gate's signal)
    absent_phrases: int = 0  # question phrases whose words the evidence has, but no record together
    absent_technical: int = 0  # of absent_terms, those that are not English words (a drug name, a procedure)
    # Why the search ended with no documents (None: it found some); retrieval.search.zero_hit_cause.
    zero_hit_cause: ZeroHitCause | None = None

    @property
    def pmids(self) -> list[str]:
        """The final ranking: fused, fetched, filtered."""
        return list(self.evidence.pmids)

    def gate_signals(
        self,
        docs: Sequence[EvidenceDoc] | None = None,
        context: PassageContext | None = None,
        *,
        top_docs: int = 5,
        lay_words: frozenset[str] = frozenset(),
    ) -> EvidenceSignals:
        """The evidence gate's signals (:mod:`app.trust`) of ``docs`` (default: this outcome's evidence) for
        the corrected question: dense similarities, the Boolean tier that matched, coverage, rerank scores."""
        docs = list(self.evidence.docs) if docs is None else docs
        plan = self.understanding.plan
        return evidence_signals(
            plan.corrected_question,
            docs,
            adapte=self.adapte,
            dense=[(h.pmid, h.score) for h in self.dense],
            context=self.context if context is None else context,
            top_docs=top_docs,
            concepts=[(c.text, c.mesh) for c in plan.concepts if c.recognised],
            lay_words=lay_words,
            absent_terms=self.absent_terms,
            absent_phrases=self.absent_phrases,
            absent_technical=self.absent_technical,
            health=self.understanding.scope.health,
        )


class Pipeline:
    """One E-utilities client, one LLM client (None: no LLM stage) and the process's models, for the life of
    a process, all injected (:mod:`app.factories` builds them). ``models`` default to :class:`Models` of the
    settings (holding ``dense`` when given). ``aclose`` closes the client and the LLM.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        client: EutilsClient,
        llm: LLMClient | None,
        understander: QueryUnderstander,
        dense: DenseRetriever | None = None,
        use_dense: bool = True,
        use_passages: bool = True,
        models: Models | None = None,
    ) -> None:
        if dense is not None and models is not None:
            raise ValueError("give the dense retriever or the models holding it, not both")
        self.settings = settings
        self.client = client
        self.llm = llm
        self.understander = understander
        a = settings.adapte
        self.adapte = AdaptE(
            client,
            min_hits=a.min_hits,
            retmax=a.retmax,
            sort=a.sort,
            vocabulary=MeshVocabulary.load(),
            speculative=a.speculative,
            strategy=a.strategy,
            union_retmax=a.union_retmax,
            # Offline, tiers are checked with the very vocabulary the local server explodes MeSH with.
            check_vocabulary=(
                (lambda: corpus_vocabulary(settings.local_server.corpus_dir or BUNDLED_CORPUS_DIR))
                if settings.eutils.backend == "local"
                else None
            ),
        )
        self.use_dense = use_dense and settings.dense.enabled
        self.models = models or Models(settings, dense=dense)
        self.evidence = EvidenceBuilder(client, settings.evidence)
        self.use_passages = use_passages
        # The gate in force: the settings' until the calibration is resolved (:meth:`calibration`).
        self.gate = settings.gate
        self._calibration: Calibration | None = None
        self._calibration_lock = asyncio.Lock()
        self.absence = AbsenceCounter(settings.gate, client)  # the gate's count lookups
        if settings.gate.calibration == "profile" or not self.use_dense:
            # Nothing to score: resolved now, so /readyz never waits on it.
            self._calibration = resolve_calibration(settings.gate, None, profile=settings.profile)
        self._mesh: MeshVocabulary | None = None  # the relevance decision's tree (_relevance_vocabulary)
        gate = settings.gate
        # The stronger relevance judge where a model is configured (app.trust.LLMRelevance).
        self.relevance_llm = (
            LLMRelevance(llm, timeout_s=gate.relevance_timeout_s)
            if llm is not None and gate.relevance_llm
            else None
        )

    def cache_stats(self) -> dict[str, dict[str, int]]:
        """:meth:`Models.cache_stats` plus the E-utilities response cache when it lives in this process."""
        out = self.models.cache_stats()
        store = self.client.store
        if store is not None and (sizes := store.sizes()) is not None:
            out["eutils"] = sizes
        return out

    async def warm_vocabularies(self) -> None:
        """Load what a first question would otherwise pay for besides the models: the deterministic
        rewriter's vocabularies (spelling, MeSH, lexicon) and Adapt-E's tier-check vocabulary."""

        def load() -> None:
            self.understander.rewriter.rewrite("does chemotherapy help breast cancer patients")
            self.understander.rewriter.prepare()  # clean text never touches the speller's index
            self.absence.everyday_words(self.understander.rewriter)  # the gate's everyday words
            self.adapte.prepare()

        await asyncio.to_thread(load)

    async def __aenter__(self) -> Pipeline:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.client.aclose()
        if self.llm is not None:
            await self.llm.aclose()

    async def dense_retriever(self) -> DenseRetriever | None:
        """The dense arm, loaded once (model + index); None when off or, with a remembered reason, if it
        cannot load."""
        if not self.use_dense:
            return None
        return await self.models.dense_retriever()

    async def calibration(self) -> Calibration:
        """The gate's calibration for this pipeline's encoder (``gate.calibration``), resolved once (the
        container's warm-up does it at start-up): ``auto`` scores the shipped calibration set with the
        encoder, in a thread. Where the wanted one cannot be had (no encoder, a bad file) the thresholds as
        set stand, and the record's ``note`` says why (/readyz then is not ready)."""
        if self._calibration is not None:  # every question asks: no lock once it is resolved
            return self._calibration
        async with self._calibration_lock:
            if self._calibration is None:
                gate = self.settings.gate
                encoder = None
                note = None
                if self.use_dense and gate.calibration != "profile":
                    try:
                        encoder = await self.models.encoder()
                    except CometaError as exc:
                        note = f"encoder unavailable ({type(exc).__name__})"
                try:
                    found = await asyncio.to_thread(
                        resolve_calibration, gate, encoder, profile=self.settings.profile
                    )
                except CalibrationError as exc:
                    note = str(exc)
                    as_set = gate.model_copy(update={"calibration": "profile"})
                    found = resolve_calibration(as_set, None, profile=self.settings.profile)
                if note is not None:
                    log.error("gate calibration %s unavailable: %s", gate.calibration, note)
                    found = dataclasses.replace(found, note=note)
                log.info("gate calibration in force: %s", found.label)
                self.gate = found.apply(gate)
                self.absence.settings = self.gate
                self._calibration = found
        return self._calibration

    @property
    def calibration_label(self) -> str | None:
        """The name and id of the calibration in force (None until it is resolved)."""
        return None if self._calibration is None else self._calibration.label

    def calibration_status(self) -> dict[str, Any]:
        """/readyz: the calibration in force without waiting (``ok`` False while ``auto`` is still being
        derived, or when the wanted one could not be had)."""
        found = self._calibration
        if found is None:
            mode = self.settings.gate.calibration
            return {"ok": False, "reason": f"deriving the gate calibration ({mode})"}
        return {"ok": found.note is None or not self.use_dense, **found.public()}

    async def passage_retriever(self) -> PassageRetriever | None:
        """SEOS + passage retrieval + rerank on the dense encoder; None when the dense arm is unavailable."""
        if not self.use_passages or not self.use_dense:
            return None
        return await self.models.passage_retriever()

    async def passages_for(
        self, question: str, docs: Sequence[EvidenceDoc], warnings: list[str]
    ) -> PassageContext | None:
        """The passages of ``docs`` for ``question``; None without a passage retriever, without documents,
        or when the encoder fails (like an unavailable dense arm: the answer goes on, and ``warnings`` says
        so). Every answer path asks here, so an encoder failure never becomes a 500."""
        passages = await self.passage_retriever()
        if passages is None or not docs:
            return None
        try:
            return await passages.retrieve(question, docs)
        except EncodeFailed as exc:
            cause = type(exc.__cause__).__name__ if exc.__cause__ is not None else "EncodeFailed"
            log.warning("passage encoding failed (%s); no passages for this request", cause)
            warning = f"passage retrieval unavailable (encoder failed: {cause}); no passages"
            if warning not in warnings:  # user documents merged after retrieval: said once
                warnings.append(warning)
            return None

    def gate_signals(
        self,
        outcome: SearchOutcome,
        docs: Sequence[EvidenceDoc] | None = None,
        context: PassageContext | None = None,
    ) -> EvidenceSignals:
        """The evidence gate's signals of ``outcome`` (or of ``docs``/``context`` cut from it) with this
        pipeline's settings and lay lexicon: what /ask, the sources service and the calibration all use."""
        return outcome.gate_signals(
            docs,
            context,
            top_docs=self.settings.gate.coverage_documents,
            lay_words=self.understander.rewriter.lay_words,
        )

    async def _relevance_vocabulary(self) -> MeshVocabulary:
        """The MeSH tree the relevance decision expands headings with: offline, the corpus's own (a world's
        full MeSH: "Diffusion Magnetic Resonance Imaging" is an MRI); live, the rewriter's. Loaded once."""
        if self._mesh is None:
            if self.settings.eutils.backend == "local":
                where = self.settings.local_server.corpus_dir or BUNDLED_CORPUS_DIR
                self._mesh = await asyncio.to_thread(corpus_vocabulary, where)
            else:
                self._mesh = self.understander.rewriter.vocabulary
        return self._mesh

    def focus(self, understanding: Understanding) -> Focus:
        """What a study must be about to address the understood question (:func:`app.trust.question_focus`):
        the plan's concepts, and the words of the question the vocabulary calls technical."""
        rewriter = self.understander.rewriter
        return question_focus(understanding.plan, plain=lambda w: not rewriter.is_technical_word(w))

    async def weigh(
        self,
        outcome: SearchOutcome,
        docs: Sequence[EvidenceDoc] | None = None,
        context: PassageContext | None = None,
        *,
        question: str | None = None,
    ) -> Weighed[EvidenceDoc]:
        """The one step between retrieval and any answer (/ask, every source, the evaluation): each study
        judged against the question (a record indexed under a narrower MeSH heading names the broader
        one; with an LLM and ``question`` — as the PHI policy lets a model see it — the batched relevance
        call decides), the verdict from the studies that address it alone, capped by what they are."""
        docs = list(outcome.evidence.docs) if docs is None else list(docs)
        vocabulary = await self._relevance_vocabulary()

        def judge() -> tuple[StudyRelevance, ...]:
            expand = lambda h: vocabulary.descendants(h) | frozenset(vocabulary.parents(h))  # noqa: E731
            return judge_relevance(
                self.focus(outcome.understanding),
                docs,
                expand=expand,
                terms=vocabulary.entry_terms,
                min_share=self.gate.relevance_min_words,
            )

        # Off the event loop: the focus asks the speller about every word of the question (4,000 characters
        # of combining marks held the loop 200 ms: bench/worst_case.py).
        relevance = await asyncio.to_thread(judge)
        await self.calibration()
        gate = self.gate
        if self.relevance_llm is not None and question is not None and gate.enabled and gate.relevance:
            studies = [(d.pmid, d.title, study_text(d)) for d in docs]
            relevance = await self.relevance_llm.judge(question, studies, relevance)
        full = outcome.context if context is None else context
        # Coverage stays the retrieved studies' (what it was calibrated on: the share of the question's
        # words the search found at all); similarity, rerank and count are the kept studies'.
        coverage = self.gate_signals(outcome, docs, full).coverage

        def signals_of(kept: Sequence[EvidenceDoc]) -> EvidenceSignals:
            ctx = None if full is None else full.kept({d.pmid for d in kept})
            return dataclasses.replace(self.gate_signals(outcome, kept, ctx), coverage=coverage)

        return weigh_evidence(docs, relevance, signals_of, gate, studies=lambda kept: kept)

    async def search(
        self,
        question: str,
        *,
        mindate: str | None = None,
        maxdate: str | None = None,
        api_key: str | None = None,
        gate_documents: int | None = None,
    ) -> SearchOutcome:
        """Understand ``question``, then :meth:`retrieve`. ``gate_documents``: how many of the evidence's
        documents the evidence gate will weigh (/ask's ``max_documents``; None: all of them)."""
        t0 = time.perf_counter()
        understanding = await self.understander.understand(question)
        understand_ms = (time.perf_counter() - t0) * 1000
        outcome = await self.retrieve(
            understanding, mindate=mindate, maxdate=maxdate, api_key=api_key, gate_documents=gate_documents
        )
        outcome.timings_ms = {"understand": understand_ms, **outcome.timings_ms}
        return outcome

    async def retrieve(
        self,
        understanding: Understanding,
        *,
        mindate: str | None = None,
        maxdate: str | None = None,
        api_key: str | None = None,
        gate_documents: int | None = None,
    ) -> SearchOutcome:
        """Everything after Understand; the evaluation suites call this with precomputed plans.
        ``gate_documents``: how many of the evidence's documents the evidence gate will weigh (None: all).

        Degraded mode: with NCBI unavailable, expired cache entries answer (stale-if-error) and, if the
        Boolean arm fails outright, the local dense arm answers alone with cached records; both are marked
        in ``warnings`` ("NCBI unavailable: ..."). When nothing can be served, the E-utilities error
        propagates (the API's 503 with the reason).
        """
        with track_degradation() as degradation:
            outcome = await self._retrieve(
                understanding, degradation, mindate, maxdate, api_key, gate_documents
            )
        outcome.eutils = degradation
        if not outcome.evidence.docs:
            outcome.zero_hit_cause = zero_hit_cause(
                outcome.adapte,
                candidates=bool(outcome.fused),
                unavailable=degradation.unavailable,
                phi_emptied=understanding.phi.emptied,
            )
        if degradation.stale_served:
            minutes = max(1, round(degradation.max_stale_age_s / 60))
            outcome.warnings.append(
                f"NCBI unavailable: answered from cache ({degradation.stale_served} E-utilities results "
                f"up to {minutes} min old)"
            )
        if degradation.unserved:
            outcome.warnings.append(
                f"NCBI unavailable: {degradation.unserved} records could not be fetched; evidence may be "
                "incomplete"
            )
        return outcome

    async def _retrieve(
        self,
        understanding: Understanding,
        degradation: EutilsDegradation,
        mindate: str | None,
        maxdate: str | None,
        api_key: str | None,
        gate_documents: int | None = None,
    ) -> SearchOutcome:
        plan = understanding.plan
        timings: dict[str, float] = {}
        warnings: list[str] = []
        started = time.perf_counter()
        boolean_error: EutilsError | None = None
        # Only personal details in the question: no query may be built from it, so neither arm runs (the
        # rewriter's generic last-resort query would answer a question nobody asked).
        emptied = understanding.phi.emptied
        if emptied:
            warnings.append("nothing left to search once personal details were removed from the question")

        async def boolean_arm() -> AdaptEResult:
            nonlocal boolean_error
            if emptied:
                return AdaptEResult(pmids=(), tiers=(), zero_hit=True, fallback_used=False, stopped_at=None)
            try:
                result = await self.adapte.run(plan, mindate=mindate, maxdate=maxdate, api_key=api_key)
            except EutilsError as exc:
                # Only an outage (not a refused query) lets the local dense arm answer alone.
                if not (degradation.unavailable and self.use_dense):
                    raise
                boolean_error = exc
                result = AdaptEResult(
                    pmids=(), tiers=(), zero_hit=False, fallback_used=False, stopped_at=None
                )
            timings["esearch"] = (time.perf_counter() - started) * 1000
            return result

        async def dense_arm() -> list[DenseHit]:
            retriever = None if emptied else await self.dense_retriever()
            if retriever is None:
                return []
            hits = await retriever.asearch(plan.corrected_question, self.settings.dense.top_k)
            timings["dense"] = (time.perf_counter() - started) * 1000
            return hits

        boolean, dense = await asyncio.gather(boolean_arm(), dense_arm())
        prefetched: dict[str, PubmedRecord] | None = None
        if boolean.union_hits:
            # Strategy "union": one EFetch for both arms' candidates serves the local tier check and the
            # evidence stage alike (no second EFetch); if it fails, the evidence stage fails the usual way.
            wanted = list(dict.fromkeys([*boolean.pmids, *(h.pmid for h in dense)]))
            try:
                prefetched = {r.pmid: r for r in await self.client.efetch_pubmed(wanted, api_key=api_key)}
            except EutilsError:
                prefetched = None
            else:
                t_rank = time.perf_counter()
                # The dense candidates' records came in the same EFetch: those that satisfy a tier join it.
                others = [h.pmid for h in dense]
                boolean = await asyncio.to_thread(self.adapte.rank_locally, plan, boolean, prefetched, others)
                timings["tier_check"] = (time.perf_counter() - t_rank) * 1000
        if boolean_error is not None:
            if not dense:
                raise boolean_error
            warnings.append(
                "NCBI unavailable: PubMed search failed; answered from the local dense index and cached "
                "records only"
            )
        if self.use_dense and self.models.dense_error:
            warnings.append(f"dense retrieval unavailable ({self.models.dense_error}); Boolean arm only")
        if boolean.date_limits_relaxed:
            warnings.append("no evidence within the requested years; older evidence shown")
        # ESearch's ErrorList/WarningList of the queries that found nothing, in fixed words (never logged).
        named = [n for c in plan.concepts if c.recognised for n in (c.text, c.mesh) if n]
        warnings.extend(pubmed_warnings(boolean, named))
        t1 = time.perf_counter()
        recognised = sum(1 for c in plan.concepts if c.recognised)
        fused = fuse(self.settings.evidence, boolean=boolean, dense=dense, recognised=recognised)
        timings["fuse"] = (time.perf_counter() - t1) * 1000
        min_year, max_year = _year(mindate), _year(maxdate)
        if min_year is None and max_year is None and plan.date_limits is not None:
            min_year, max_year = plan.date_limits.min_year, plan.date_limits.max_year
        if boolean.date_limits_relaxed:
            min_year = max_year = None  # the window was already given up for this question, on purpose
        t2 = time.perf_counter()
        try:
            evidence = await self.evidence.build(
                fused, min_year=min_year, max_year=max_year, api_key=api_key, records=prefetched
            )
        except EutilsError as exc:
            if boolean_error is not None:
                raise boolean_error from exc  # the search failure is the reason to report, as before
            raise
        if boolean_error is not None and not evidence.docs:
            raise boolean_error
        timings["metadata"] = (time.perf_counter() - t2) * 1000
        t3 = time.perf_counter()
        context = await self.passages_for(plan.corrected_question, evidence.docs, warnings)
        if context is not None and context.rerank_note:
            warnings.append(context.rerank_note)
        if evidence.docs and await self.passage_retriever() is not None:
            timings["passages"] = (time.perf_counter() - t3) * 1000
        outcome = SearchOutcome(understanding, boolean, dense, fused, evidence, context, warnings, timings)
        rewriter = self.understander.rewriter
        await self.calibration()  # the count's phrase rule compares a similarity with a dense threshold
        absent = await self.absence.count(understanding, evidence, dense, rewriter, api_key, gate_documents)
        outcome.absent_terms, outcome.absent_technical, outcome.absent_phrases = absent
        return outcome
