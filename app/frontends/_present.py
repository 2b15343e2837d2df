"""The presenter: domain results and events of the question flow in their wire form, made once, at the edge.

The flow (:class:`~app.asker.Asker`) yields typed domain events and ends with an
:class:`~app.asker.AskResult`; the API routes, the chat and MCP frontends, the CLI and the evaluation suites
turn them into the models of :mod:`app.schemas` here and nowhere else: one constructor per shape, so OpenAPI
(``/docs``) documents every field and clients get the same JSON whichever frontend they use.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.answer import Citation
from app.asker import Answered, AskEvent, AskResult, Done, Evidence, Judged, Stage, Token, Urgent
from app.judge import JudgeReport
from app.pipeline import SearchOutcome
from app.safety import SafetyDecision
from app.schemas import (
    AskResponse,
    CitationOut,
    ContextPassageOut,
    DenseHitOut,
    DroppedOut,
    EvidenceDocOut,
    EvidenceVerdictOut,
    JudgeReportOut,
    NoticeOut,
    PassageContextOut,
    PassageOut,
    ProvenanceOut,
    QueryOut,
    RejectedQueryOut,
    RewriterOut,
    SafetyOut,
    SearchOut,
    SourceEvidenceOut,
    SourceResultOut,
    SourceStatusOut,
    TierOut,
    TokenCountsOut,
)
from app.sources import AcrossOutcome, FusedItem, section_out
from app.trust import EvidenceVerdict, StudyRelevance
from prompts import load_prompt
from retrieval.collections import InstEvidence
from retrieval.evidence import EvidenceDoc, Notice
from retrieval.passages import Passage, PassageContext
from retrieval.search import Provenance

__all__ = [
    "across_response",
    "ask_response",
    "citation_out",
    "event_json",
    "evidence_docs_out",
    "fused_out",
    "judge_report_out",
    "passages_out",
    "query_out",
    "safety_out",
    "search_out",
    "source_evidence_out",
    "verdict_out",
]


# --- PubMed evidence ---------------------------------------------------------------------------------------


def _notices_out(notices: Sequence[Notice]) -> list[NoticeOut]:
    return [NoticeOut(type=n.type, pmid=n.pmid, text=n.text) for n in notices]


def _provenance(p: Provenance) -> ProvenanceOut:
    return ProvenanceOut(arm=p.arm, rank=p.rank, score=p.score, tier=p.tier)


def evidence_doc_out(
    rank: int,
    d: EvidenceDoc,
    *,
    source_rank: int | None = None,
    rrf_score: float | None = None,
    relevance: StudyRelevance | None = None,
) -> EvidenceDocOut:
    """A PubMed study as evidence; with several sources, its fused rank and score across them; with the
    relevance decision on it, whether it addresses the question and why."""
    return EvidenceDocOut(
        rank=rank,
        source="pubmed",
        source_rank=rank if source_rank is None else source_rank,
        id=d.pmid,
        cite=f"[PMID:{d.pmid}]",
        pmid=d.pmid,
        pmcid=d.pmcid,
        title=d.title,
        year=d.year,
        journal=d.journal,
        publication_types=list(d.publication_types),
        doc_class=d.doc_class,
        depth=d.depth_used,
        depth_fallback_reason=d.depth_fallback_reason,
        url=d.url or None,
        rrf_score=round(d.rrf_score if rrf_score is None else rrf_score, 6),
        provenance=[_provenance(p) for p in d.provenance],
        text_units=len(d.text_units),
        addresses_question=None if relevance is None else relevance.addresses,
        relevance=None if relevance is None else relevance.reason(),
        notices=_notices_out(d.notices),
    )


def evidence_docs_out(
    docs: Sequence[EvidenceDoc], relevance: Sequence[StudyRelevance] = ()
) -> list[EvidenceDocOut]:
    """``docs`` in order, ranked from 1, each with its relevance decision when there is one."""
    decided = {r.id: r for r in relevance}
    return [evidence_doc_out(rank, d, relevance=decided.get(d.pmid)) for rank, d in enumerate(docs, start=1)]


def _scores(p: Passage) -> dict[str, float]:
    return {k: round(v, 4) for k, v in p.scores.items()}


def passage_out(p: Passage) -> PassageOut:
    return PassageOut(
        rank=p.rank,
        pmid=p.pmid,
        pmcid=p.pmcid,
        section=p.heading,
        scores=_scores(p),
        expanded_from=p.expanded_from,
        text=p.text,
    )


def passages_out(context: PassageContext | None) -> list[PassageOut]:
    return [] if context is None else [passage_out(p) for p in context.passages]


def _context_passage(p: Passage) -> ContextPassageOut:
    return ContextPassageOut(
        rank=p.rank,
        chunk_id=p.chunk_id,
        pmid=p.pmid,
        pmcid=p.pmcid,
        doc_class=p.doc_class,
        section=p.heading,
        start=p.start,
        end=p.end,
        scores=_scores(p),
        expanded_from=p.expanded_from,
        text=p.text,
    )


def passage_context_out(context: PassageContext) -> PassageContextOut:
    return PassageContextOut(
        reranker=context.reranker_name,
        reranker_kind=context.reranker_kind,
        rerank_note=context.rerank_note,
        budget_tokens=context.budget,
        budget_used=context.budget_used,
        passages=[_context_passage(p) for p in context.passages],
    )


# --- the query plan and the search -------------------------------------------------------------------------


def query_out(outcome: SearchOutcome) -> QueryOut:
    u, a = outcome.understanding, outcome.adapte
    return QueryOut(
        plan=u.plan,
        rewriter=RewriterOut(
            path=u.path,
            fallback_reason=u.fallback_reason,
            dropped=[RejectedQueryOut(query=q, reason=r) for q, r in u.dropped],
            padded=u.padded,
            model=u.model,
            prompt=u.prompt_id,
            tokens=TokenCountsOut(prompt=u.prompt_tokens, completion=u.completion_tokens),
            phi_removed=u.phi_counts,
        ),
        tiers=[
            TierOut(
                tier=t.tier,
                kind=t.kind,
                query=t.query,
                count=t.count,
                latency_ms=round(t.latency_ms, 2),
                used=t.used,
                new_pmids=t.new_pmids,
                error=t.error,
            )
            for t in a.tiers
        ],
        fallback_used=a.fallback_used,
        date_limits_relaxed=a.date_limits_relaxed,
        stopped_at=a.stopped_at,
        question_hash=u.question_hash,
        zero_hit_cause=outcome.zero_hit_cause,
    )


def search_out(outcome: SearchOutcome) -> SearchOut:
    """Everything retrieval found (``/search``, ``cometa search --json``)."""
    query = query_out(outcome)
    a = outcome.adapte
    return SearchOut(
        pmids=outcome.pmids,
        zero_hit=not outcome.evidence.docs,
        plan=query.plan,
        rewriter=query.rewriter,
        tiers=query.tiers,
        boolean_pmids=list(a.pmids),
        boolean_zero_hit=a.zero_hit,
        fallback_used=query.fallback_used,
        date_limits_relaxed=query.date_limits_relaxed,
        stopped_at=query.stopped_at,
        dense=[DenseHitOut(pmid=h.pmid, score=round(h.score, 4), rank=h.rank) for h in outcome.dense],
        evidence=evidence_docs_out(outcome.evidence.docs),
        dropped=[DroppedOut(pmid=p, reason=r, replaced_by=by) for p, r, by in outcome.evidence.dropped],
        context=None if outcome.context is None else passage_context_out(outcome.context),
        warnings=outcome.warnings,
        timings_ms={k: round(v, 2) for k, v in outcome.timings_ms.items()},
        question_hash=query.question_hash,
        zero_hit_cause=outcome.zero_hit_cause,
    )


# --- judge, trust, citations -------------------------------------------------------------------------------


def judge_report_out(report: JudgeReport) -> JudgeReportOut:
    return JudgeReportOut.model_validate(report, from_attributes=True)


def verdict_out(verdict: EvidenceVerdict | None) -> EvidenceVerdictOut | None:
    return None if verdict is None else EvidenceVerdictOut.model_validate(verdict.to_json())


def citation_out(
    c: Citation, *, current_year: int | None = None, old_after: int | None = None
) -> CitationOut:
    """The wire form of an answer's citation (``/ask`` with or without sources); with ``current_year``, its
    age, flagged when older than ``old_after`` years."""
    return CitationOut(
        pmid=c.pmid,
        pmcid=c.pmcid,
        title=c.title,
        year=c.year,
        publication_types=list(c.publication_types),
        url=c.url or None,
        doc_class=c.doc_class,
        design=c.design,
        patients=c.patients,
        age_years=c.age(current_year),
        older_than_years=old_after if c.older_than(old_after, current_year) else None,
        notices=_notices_out(c.notices),
    )


# --- collection evidence and sources -----------------------------------------------------------------------


def _pages(ev: InstEvidence) -> str | None:
    starts = [s.page_start for s in ev.sections if s.page_start is not None]
    ends = [
        s.page_end if s.page_end is not None else s.page_start
        for s in ev.sections
        if s.page_start is not None
    ]
    if not starts:
        return None
    lo, hi = min(starts), max(e for e in ends if e is not None)
    return str(lo) if lo == hi else f"{lo}-{hi}"


def source_evidence_out(rank: int, ev: InstEvidence, excerpt_chars: int) -> SourceEvidenceOut:
    """A collection document as ``/ask`` with ``sources`` shows it: cited, with an excerpt."""
    return SourceEvidenceOut(
        rank=rank,
        collection=ev.collection,
        doc_id=ev.doc_id,
        title=ev.title,
        route=ev.route,
        sections=[section_out(s) for s in ev.sections],
        pages=_pages(ev),
        score=round(ev.score, 4),
        cite=ev.cite(),
        excerpt=ev.text[:excerpt_chars],
    )


def fused_out(f: FusedItem[EvidenceDoc | InstEvidence]) -> EvidenceDocOut:
    """One item of every source's evidence fused by rank: the same shape as PubMed-only evidence."""
    if isinstance(f.item, EvidenceDoc):
        return evidence_doc_out(f.rank, f.item, source_rank=f.source_rank, rrf_score=f.rrf_score)
    return EvidenceDocOut(
        rank=f.rank,
        source=f.source,
        source_rank=f.source_rank,
        id=f.item.doc_id,
        cite=f.item.cite(),
        title=f.item.title,
        rrf_score=round(f.rrf_score, 6),
    )


def across_response(outcome: AcrossOutcome, request_id: str, excerpt_chars: int) -> AskResponse:
    """``/ask`` with ``sources``: every source's status, answer and evidence, the fused list, the judge."""
    sources = [
        SourceResultOut(
            source=o.name,
            kind=o.kind,
            label=o.label,
            node=o.node,
            institution=(o.meta or {}).get("institution") or None,
            version_date=(o.meta or {}).get("version_date"),
            status=o.status.status,
            reason=o.status.reason,
            answer=None if o.answer is None else o.answer.text,
            answer_mode=o.answer_mode,
            absent=None if o.answer is None or o.answer.error else o.answer.absent,
            evidence=[source_evidence_out(i, e, excerpt_chars) for i, e in enumerate(o.evidence, 1)],
            citations=[citation_out(c) for c in o.citations],
            evidence_verdict=verdict_out(o.verdict),
        )
        for o in outcome.sources
    ]
    pubmed = next((o for o in outcome.sources if o.kind == "pubmed"), None)
    return AskResponse(
        request_id=request_id,
        answer=outcome.answer,
        mode=outcome.mode,
        citations=[] if pubmed is None else [citation_out(c) for c in pubmed.citations],
        evidence=[fused_out(f) for f in outcome.fused],
        passages=[],
        query=None,
        judge=None if outcome.judge is None else judge_report_out(outcome.judge),
        timings_ms=dict(outcome.timings_ms),
        warnings=list(outcome.warnings),
        model=outcome.model,
        prompt_id=load_prompt("answer_per_source").id if outcome.model else None,
        sources=sources,
        sources_status={
            o.name: SourceStatusOut(status=o.status.status, reason=o.status.reason, ms=o.status.ms)
            for o in outcome.sources
        },
        differences=outcome.differences,
    )


# --- the flow ----------------------------------------------------------------------------------------------


def _citations(a: Answered) -> list[CitationOut]:
    if a.answer is None:
        return []
    return [citation_out(c, current_year=a.current_year, old_after=a.old_after) for c in a.answer.citations]


def safety_out(decision: SafetyDecision) -> SafetyOut:
    return SafetyOut(
        urgent=decision.urgent,
        kind=decision.kind,
        message=decision.message,
        conditions=list(decision.conditions),
    )


def ask_response(r: AskResult) -> AskResponse:
    """The ``/ask`` response of one result (PubMed, urgent, out of scope, or across sources)."""
    response = _response(r)
    response.safety = safety_out(r.safety)
    response.calibration = r.calibration
    return response


def _response(r: AskResult) -> AskResponse:
    a = r.answered
    if r.across is not None:
        response = across_response(r.across, r.request_id, r.excerpt_chars)
        response.timings_ms = dict(r.timings_ms)
        response.warnings = list(r.warnings)
        response.language = r.language
        return response
    if a.answer is None:  # urgent or out of scope: nothing searched, no model
        return AskResponse(
            request_id=r.request_id,
            answer=a.text,
            mode=a.mode,
            citations=[],
            evidence=[],
            passages=[],
            query=None,
            timings_ms=dict(r.timings_ms),
            warnings=list(r.warnings),
            scope=r.scope,
            language=r.language,
            zero_hit_cause=r.zero_hit_cause,
        )
    answer = a.answer
    return AskResponse(
        request_id=r.request_id,
        answer=answer.text,
        mode=answer.mode,
        answer_choice=answer.answer_choice,
        reasoning=answer.reasoning,
        citations=_citations(a),
        citations_removed=answer.citations_removed,
        evidence=evidence_docs_out(r.docs, r.relevance),
        passages=passages_out(r.context),
        query=None if r.search is None else query_out(r.search),
        judge=None if r.judge is None else judge_report_out(r.judge),
        timings_ms=dict(r.timings_ms),
        warnings=list(r.warnings),
        model=answer.model,
        prompt_id=answer.prompt_id,
        tokens={"prompt": answer.prompt_tokens, "completion": answer.completion_tokens},
        evidence_verdict=verdict_out(a.verdict),
        retracted_excluded=list(r.retracted),
        language=r.language,
        zero_hit_cause=r.zero_hit_cause,
    )


def event_json(event: AskEvent) -> tuple[str, dict[str, Any]]:
    """One event's name and JSON, as ``/ask/stream`` sends it (``result``: the whole ``/ask`` response)."""
    if isinstance(event, Urgent):
        return "safety", safety_out(event.decision).model_dump(mode="json")
    if isinstance(event, Stage):
        return "stage", {"stage": event.stage, "status": event.status}
    if isinstance(event, Evidence):
        return "evidence", {
            "documents": [d.model_dump(mode="json") for d in evidence_docs_out(event.docs, event.relevance)],
            "passages": [p.model_dump(mode="json") for p in passages_out(event.context)],
        }
    if isinstance(event, Token):
        return "token", {"delta": event.delta, "index": event.index}
    if isinstance(event, Answered):
        answer = event.answer
        verdict = verdict_out(event.verdict)
        return "answer", {
            "answer": event.text,
            "mode": event.mode,
            "answer_choice": None if answer is None else answer.answer_choice,
            "reasoning": None if answer is None else answer.reasoning,
            "citations": [c.model_dump() for c in _citations(event)],
            "citations_removed": 0 if answer is None else answer.citations_removed,
            "evidence_verdict": None if verdict is None else verdict.model_dump(mode="json"),
        }
    if isinstance(event, Judged):
        return "judge", judge_report_out(event.report).model_dump(mode="json")
    if isinstance(event, Done):
        return "result", ask_response(event.result).model_dump(mode="json")
    raise TypeError(f"not an event of the question flow: {type(event).__name__}")
