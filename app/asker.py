"""The question flow: understand -> retrieve -> passages -> answer -> judge, one place for every caller.

``POST /ask`` and ``/ask/stream``, ``cometa ask``, the chat and MCP frontends and the in-process evaluation
suites all run an :class:`Asker`. :meth:`Asker.events` yields typed events: :class:`Stage`
(understand/retrieve/answer/judge started|finished), :class:`Evidence`, :class:`Token` (provisional deltas,
when streaming), :class:`Answered` (the checked final answer), :class:`Judged` (when asked) and last
:class:`Done` with the :class:`AskResult`; :meth:`Asker.ask` returns that result. They are domain objects:
the wire form is made once, at the edge (``app.frontends.present``). A request naming sources beyond PubMed
runs the same flow up to its scope check, then :class:`~app.sources.SourcesService` answers per source.

Privacy: the Asker holds the one PHI decision (:class:`~app.privacy.PhiPolicy`). The answer and judge
prompts get the question as that policy allows; the same policy is built into the rewriter and the
sources service by :mod:`app.container`, and the Asker refuses a pipeline whose rewriter decides otherwise.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, Literal

from prometheus_client import Counter, Histogram

from app.schemas import AskRequest, JudgeAnswerIn, UserDocument
from app.sources import (
    AcrossOutcome,
    InvalidToken,
    SourceRef,
    SourcesService,
    Subject,
    bearer_token,
    parse_sources,
)
from core import CometaError
from retrieval.evidence import DROP_RETRACTED, DROP_SUPERSEDED, Dropped, EvidenceDoc, TextUnit, pubmed_url
from retrieval.ncbi import EutilsError
from retrieval.passages import PassageContext
from retrieval.search import Provenance, ZeroHitCause, count_zero_hit, error_cause
from retrieval.understand import LANGUAGE_NAMES, Scope, Understanding, detect_language, hash_text

from .answer import Answer, Answerer, AnswerMode
from .judge import CrossSourceJudge, JudgeReport, SourceAnswer
from .pipeline import Pipeline, SearchOutcome
from .privacy import PhiPolicy
from .safety import NOT_URGENT, SafetyDecision, SafetySettings, SafetyTriage, assess_safety, urgent_decision
from .trust import EvidenceVerdict, StudyRelevance

__all__ = [
    "ABSTENTIONS",
    "ANSWERS",
    "CITATIONS_REMOVED",
    "EVIDENCE_VERDICTS",
    "STAGE_LATENCY",
    "URGENT",
    "Answered",
    "AskEvent",
    "AskResult",
    "Asker",
    "Done",
    "Evidence",
    "Judged",
    "SourceDenied",
    "Stage",
    "Token",
    "TokenRequired",
    "Urgent",
    "caller_of",
    "user_evidence",
]

log = logging.getLogger("cometa.asker")

ANSWERS = Counter("cometa_answers_total", "Answers given, by mode", ["mode"])
CITATIONS_REMOVED = Counter(
    "cometa_citations_removed_total", "Cited PMIDs removed because they were not in the evidence context"
)
EVIDENCE_VERDICTS = Counter(
    "cometa_answers_by_verdict_total",
    "Answers by the evidence gate's verdict (strong/moderate/weak/none)",
    ["verdict"],
)
ABSTENTIONS = Counter(
    "cometa_abstentions_total",
    "Questions not answered from evidence, by reason (out of scope: gibberish, chit_chat, instruction, "
    "non_medical, language; insufficient_evidence)",
    ["reason"],
)
URGENT = Counter(
    "cometa_urgent_total",
    "Questions answered with safety guidance, not a search, by kind (emergency, self_harm, lethal_means)",
    ["kind"],
)
STAGE_LATENCY = Histogram(
    "cometa_stage_seconds",
    "Latency of each /ask stage (understand, esearch, dense, fuse, metadata, passages, answer, judge)",
    ["stage"],
    buckets=(0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
)


# --- the flow's events and result (domain objects; app.frontends.present writes their wire form) ---------


@dataclass(frozen=True, slots=True)
class Urgent:
    """The safety step found an emergency, self-harm or a request for means: always the first event, and
    then only the guidance follows (no search, no model)."""

    decision: SafetyDecision


@dataclass(frozen=True, slots=True)
class Stage:
    """A step of the flow started or finished."""

    stage: str  # understand, retrieve, answer, judge
    status: Literal["started", "finished"]


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the answer will be written from (PubMed only; empty when out of scope)."""

    docs: tuple[EvidenceDoc, ...]
    context: PassageContext | None  # the passages of the studies that address the question
    # The relevance decision on each of docs (same order; empty when not judged: the caller's documents).
    relevance: tuple[StudyRelevance, ...] = ()


@dataclass(frozen=True, slots=True)
class Token:
    """A provisional delta of the model's text (streaming only); :class:`Answered` is authoritative."""

    delta: str
    index: int


@dataclass(frozen=True, slots=True)
class Answered:
    """The checked answer: citations verified, fallbacks applied. ``answer`` is None out of scope."""

    text: str
    mode: AnswerMode
    answer: Answer | None
    verdict: EvidenceVerdict | None
    current_year: int | None = None  # the citations' ages are counted from it
    old_after: int | None = None  # a citation older than this many years is flagged


@dataclass(frozen=True, slots=True)
class Judged:
    """The cross-source judge's report over the evidence (when asked)."""

    report: JudgeReport


@dataclass(frozen=True)
class AskResult:
    """Everything one question produced, in domain objects: the answer (or why there is none), the
    evidence and passages, the search that found them, the judge's report, timings and warnings. Asking
    across sources carries that outcome instead of ``docs``/``search``."""

    request_id: str
    answered: Answered
    docs: tuple[EvidenceDoc, ...] = ()
    context: PassageContext | None = None
    search: SearchOutcome | None = None
    judge: JudgeReport | None = None
    timings_ms: Mapping[str, float] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    scope: str | None = None  # why the question is out of scope (mode "out_of_scope")
    language: str | None = None
    retracted: tuple[str, ...] = ()
    across: AcrossOutcome | None = None
    excerpt_chars: int = 0  # the length of a collection document's excerpt on the wire (across sources)
    safety: SafetyDecision = NOT_URGENT  # the safety step's decision (urgent: mode "urgent")
    relevance: tuple[StudyRelevance, ...] = ()  # the decision on each of docs (see Evidence)
    calibration: str | None = None  # the gate's calibration in force (its name and id)
    # Why the question ended with no documents (None: it had some); counted once as cometa_zero_hit_total.
    zero_hit_cause: ZeroHitCause | None = None


@dataclass(frozen=True, slots=True)
class Done:
    """The last event: the result."""

    result: AskResult


AskEvent = Urgent | Stage | Evidence | Token | Answered | Judged | Done


class TokenRequired(InvalidToken):
    """Collection sources asked for without a bearer token where the access settings require one."""


class SourceDenied(CometaError):
    """The only source asked for was denied to the caller (HTTP 403); the message holds the reasons."""


def caller_of(service: SourcesService, authorization: str | None, *, needed: bool) -> Subject:
    """The caller an ``Authorization`` header names; raises :class:`InvalidToken` for a bad token and
    :class:`TokenRequired` when ``needed`` and the access settings require a token but none was given."""
    if needed and bearer_token(authorization) is None and service.settings.access.require_token:
        raise TokenRequired("collection sources need a bearer token")
    return service.subject(authorization)


def user_evidence(documents: Sequence[UserDocument], *, start_rank: int = 1) -> list[EvidenceDoc]:
    """Bring-your-own documents as abstract-depth :class:`EvidenceDoc` (class D1, provenance arm "user").

    Documents without a PMID get ``U<n>`` ids so that citations still point at one of them.
    """
    docs = []
    for i, d in enumerate(documents, start=start_rank):
        pmid = d.pmid or f"U{i}"
        unit = TextUnit("abstract", d.text, "Abstract", ("Abstract",), "pubmed", 0)
        docs.append(
            EvidenceDoc(
                pmid=pmid,
                pmcid=None,
                title=d.title,
                year=d.year,
                journal=None,
                publication_types=(),
                doc_class="D1",
                depth_used="abstract",
                depth_fallback_reason=None,
                license=None,
                url=pubmed_url(pmid) if d.pmid else "",
                fused_rank=i,
                rrf_score=0.0,
                provenance=(Provenance(arm="user", rank=i),),
                text_units=(unit,),
            )
        )
    return docs


def _version_warnings(dropped: Sequence[Dropped], docs: Sequence[EvidenceDoc]) -> list[str]:
    """What the reader must know about newer versions of reviews: the older ones left out for a newer one
    among ``docs``, and those of ``docs`` a newer version of which exists outside them."""
    used = {d.pmid for d in docs}
    out = [
        f"PMID {d.pmid} left out of the evidence: a newer version of this review, PMID {d.replaced_by}, "
        "is used instead"
        for d in dropped
        if d.reason == DROP_SUPERSEDED and d.replaced_by in used
    ]
    for doc in docs:
        for n in doc.notices:
            if n.type == "update" and n.pmid not in used:
                newer = f": PMID {n.pmid}, not among the studies used" if n.pmid else ""
                out.append(f"PMID {doc.pmid}: a newer version of this review exists{newer}")
    return out


class Asker:
    """One question, start to finish, over the process's pipeline, answerer and judge (None: no LLM)."""

    def __init__(
        self,
        pipeline: Pipeline,
        answerer: Answerer,
        judge: CrossSourceJudge | None,
        *,
        phi: PhiPolicy,
        safety: SafetySettings | None = None,
        triage: SafetyTriage | None = None,
    ) -> None:
        if pipeline.understander.scrub_for_llm != phi.scrub_for_llm:
            raise ValueError("the rewriter and the answer must follow one PHI decision (scrub_phi_for_llm)")
        self.pipeline = pipeline
        self.answerer = answerer
        self.judge = judge
        self.phi = phi
        self.safety = safety or SafetySettings()
        self.triage = triage  # the LLM's second opinion on questions the red flags pass (llm_check)

    async def ask(
        self,
        req: AskRequest,
        request_id: str,
        *,
        sources: SourcesService | None = None,
        authorization: str | None = None,
    ) -> AskResult:
        """The result of :meth:`events`. Sources beyond PubMed need ``sources`` (this node's
        collections, access and federation) and the caller's ``Authorization`` header; they raise
        :class:`~app.sources.UnknownSource`, :class:`InvalidToken` (or :class:`TokenRequired`) and
        :class:`SourceDenied` for what the API answers with 422, 401 and 403."""
        async for event in self.events(req, request_id, sources=sources, authorization=authorization):
            if isinstance(event, Done):
                return event.result
        raise RuntimeError("the question flow ended without a result")  # a broken contract, loudly

    async def judge_answers(
        self, question: str, answers: Sequence[JudgeAnswerIn], judge: CrossSourceJudge
    ) -> JudgeReport:
        """Agreement of caller-given answers, absence-screened like per-source answers (blank text is absent
        outright); the question reaches the judge as the PHI policy allows."""
        asked = self.phi.for_llm(question)

        async def one(a: JudgeAnswerIn) -> SourceAnswer:
            label = a.label or a.source_id
            if not a.text.strip():
                return SourceAnswer(a.source_id, label, a.text, True, None)
            return await judge.screen(asked, SourceAnswer(a.source_id, label, a.text, False, None))

        return await judge.judge(asked, list(await asyncio.gather(*(one(a) for a in answers))))

    async def events(
        self,
        req: AskRequest,
        request_id: str,
        *,
        stream_tokens: bool = False,
        sources: SourcesService | None = None,
        authorization: str | None = None,
    ) -> AsyncGenerator[AskEvent, None]:
        """The question flow as events, ``result`` last, for every source combination: the caller is
        checked (sources beyond PubMed), the question understood once, its scope and language decided
        once; only then is any source searched. ``stream_tokens``: the model's deltas as ``token`` events
        (PubMed only); closing this generator (client gone) closes the answer stream and the LLM call.

        Urgent first: before the caller, the scope or any source, the safety step reads the question; an
        emergency, self-harm or a request for means gets the guidance (:class:`Urgent` first, then the
        answer) and nothing is searched or asked of a model."""
        decision = await self.safety_check(req.question, request_id)
        if decision.urgent:
            async for event in self._urgent(request_id, decision, stream_tokens=stream_tokens):
                yield event
            return
        refs: list[SourceRef] | None = None
        subject: Subject | None = None
        if req.across_sources:
            if sources is None:
                raise ValueError("asking beyond PubMed needs the sources service")
            refs = parse_sources(req.sources)  # names that exist or not are answered alike
            # Authentication before anything else: a bad token is refused whatever the question.
            subject = caller_of(sources, authorization, needed=any(r.kind != "pubmed" for r in refs))
        pipeline = self.pipeline
        timings: dict[str, float] = {}
        warnings: list[str] = []
        api_key = req.ncbi_api_key.get_secret_value() if req.ncbi_api_key else None
        question = req.question
        search: SearchOutcome | None = None
        context: PassageContext | None
        verdict: EvidenceVerdict | None = None  # caller-supplied evidence only is not gated
        relevance: tuple[StudyRelevance, ...] = ()
        language = "en"
        searched: list[str] = []
        concepts: list[str] = []
        retracted: list[str] = []
        zero_hit: ZeroHitCause | None = None

        if req.documents is not None and req.documents_mode == "replace":
            # The caller's evidence only: no Understand, no retrieval (the evaluation suites' path).
            yield Stage("retrieve", "started")
            t0 = time.perf_counter()
            docs = user_evidence(req.documents)[: req.max_documents]
            answer_docs = docs
            context = await pipeline.passages_for(question, docs, warnings)
            timings["passages"] = (time.perf_counter() - t0) * 1000
            warnings.append("retrieval skipped: answering from the documents supplied with the request")
            yield Stage("retrieve", "finished")
        else:
            yield Stage("understand", "started")
            t0 = time.perf_counter()
            understanding = await pipeline.understander.understand(question)
            timings["understand"] = (time.perf_counter() - t0) * 1000
            yield Stage("understand", "finished")
            language = understanding.language
            if language != "en":
                name = LANGUAGE_NAMES.get(language, language)
                warnings.append(
                    f"question language detected: {language} ({name})"
                    + ("; the answer is asked for in that language" if understanding.scope.in_scope else "")
                )
            if not understanding.scope.in_scope:
                # Not a health question: no source searched, no LLM call, a short helpful reply.
                scope_events = self._out_of_scope(
                    request_id, understanding.scope, timings, warnings, stream_tokens=stream_tokens
                )
                async for event in scope_events:
                    yield event
                return
            if refs is not None and subject is not None and sources is not None:
                across = self._across(
                    req, request_id, sources, refs, subject, understanding, timings, warnings
                )
                async for event in across:
                    yield event
                return
            yield Stage("retrieve", "started")
            try:
                outcome = await pipeline.retrieve(
                    understanding,
                    mindate=req.mindate,
                    maxdate=req.maxdate,
                    api_key=api_key,
                    gate_documents=req.max_documents,
                )
            except EutilsError as exc:
                count_zero_hit(error_cause(exc))  # the question ends here, with the API's 503
                raise
            timings.update(outcome.timings_ms)
            warnings.extend(outcome.warnings)
            failed = outcome.adapte.errors
            if failed:
                # Part of the Boolean ladder failed but something came back: answer, and say so.
                warnings.append(
                    f"degraded: {len(failed)} of {len(outcome.adapte.tiers)} PubMed searches failed "
                    f"(NCBI partly unavailable); evidence may be incomplete"
                )
            search = outcome
            docs = list(outcome.evidence.docs)
            context = outcome.context
            if req.documents:
                seen = {d.pmid for d in docs}
                extra = [
                    d for d in user_evidence(req.documents, start_rank=len(docs) + 1) if d.pmid not in seen
                ]
                # Only the first max_documents documents are answered from: the caller's documents past them
                # would be segmented and encoded (up to the 256 KiB body: seconds of CPU) for nothing.
                extra = extra[: max(0, req.max_documents - len(docs))]
                if extra:
                    docs.extend(extra)
                    context = await pipeline.passages_for(question, docs, warnings)
            if not docs:
                # The search's cause is the question's (the caller's own documents would have filled docs).
                zero_hit = outcome.zero_hit_cause or "none_found"
                count_zero_hit(zero_hit)
            if len(docs) > req.max_documents:
                docs = docs[: req.max_documents]
                context = None if context is None else context.kept({d.pmid for d in docs})
            # Only what addresses the question may be cited or counted: the verdict is on those studies.
            weighed = await pipeline.weigh(outcome, docs, context, question=self.phi.for_llm(question))
            verdict, relevance = weighed.verdict, weighed.relevance
            answer_docs = list(weighed.kept)
            if context is not None:
                context = context.kept({d.pmid for d in answer_docs})
            searched = list(understanding.plan.ladder)
            concepts = [
                " ".join(filter(None, (c.text, c.mesh))) for c in understanding.plan.concepts if c.recognised
            ]
            retracted = [d.pmid for d in outcome.evidence.dropped if d.reason == DROP_RETRACTED]
            if retracted:
                warnings.append(
                    f"{len(retracted)} retracted {'study was' if len(retracted) == 1 else 'studies were'} "
                    f"excluded from the evidence: PMID {', '.join(retracted)}"
                )
            warnings.extend(_version_warnings(outcome.evidence.dropped, docs))
            yield Stage("retrieve", "finished")

        yield Evidence(tuple(docs), context, relevance)
        asked = self.phi.for_llm(question)  # what the answer and judge prompts may see
        yield Stage("answer", "started")
        t1 = time.perf_counter()
        answer_args: dict[str, Any] = {
            "options": req.options,
            "answer_type": req.resolved_answer_type,
            "allow_insufficient": req.allow_insufficient,
            "verdict": verdict,
            "searched": searched,
            "concepts": concepts,
        }
        if language != "en":
            answer_args["language"] = LANGUAGE_NAMES.get(language, language)
        answer: Answer | None = None
        if stream_tokens:
            # Deltas are provisional; the "answer" event below carries the checked text.
            stream = self.answerer.answer_stream(asked, answer_docs, context, **answer_args)
            async with aclosing(stream) as parts:
                index = 0
                async for part in parts:
                    if isinstance(part, str):
                        yield Token(part, index)
                        index += 1
                    else:
                        answer = part
            if answer is None:  # answer_stream always ends with its Answer; guard a broken contract loudly
                raise RuntimeError("the answer stream ended without an answer")
        else:
            answer = await self.answerer.answer(asked, answer_docs, context, **answer_args)
        timings["answer"] = (time.perf_counter() - t1) * 1000
        ANSWERS.labels(answer.mode).inc()
        CITATIONS_REMOVED.inc(answer.citations_removed)
        if verdict is not None:
            EVIDENCE_VERDICTS.labels(verdict.verdict).inc()
            if verdict.abstain:
                ABSTENTIONS.labels("insufficient_evidence").inc()
                warnings.append("evidence gate: " + "; ".join(verdict.reasons))
        warnings.extend(answer.warnings)
        year = self.answerer.current_year()
        old_after = self.answerer.settings.old_evidence_years
        old = [c.pmid for c in answer.citations if c.older_than(old_after, year)]
        if old:
            warnings.append(
                f"{len(old)} cited stud{'y is' if len(old) == 1 else 'ies are'} older than "
                f"{old_after} years (PMID {', '.join(p or '' for p in old)}): newer evidence may differ"
            )
        answered = Answered(answer.text, answer.mode, answer, verdict, current_year=year, old_after=old_after)
        yield Stage("answer", "finished")
        yield answered

        report: JudgeReport | None = None
        if req.judge:
            if self.judge is None:
                warnings.append("judge requested but unavailable: no LLM is configured")
            elif not docs:
                warnings.append("judge skipped: no evidence to compare")
            elif verdict is not None and verdict.abstain:
                warnings.append("judge skipped: the evidence does not answer the question")
            else:
                yield Stage("judge", "started")
                t2 = time.perf_counter()
                report = await self.judge.run(asked, answer_docs, context)
                timings["judge"] = (time.perf_counter() - t2) * 1000
                yield Stage("judge", "finished")
                yield Judged(report)

        for stage_name, ms in timings.items():
            STAGE_LATENCY.labels(stage_name).observe(ms / 1000)
        yield Done(
            AskResult(
                calibration=self.pipeline.calibration_label,
                request_id=request_id,
                answered=answered,
                docs=tuple(docs),
                context=context,
                search=search,
                judge=report,
                timings_ms={k: round(v, 2) for k, v in timings.items()},
                warnings=tuple(dict.fromkeys(warnings)),
                language=language,
                retracted=tuple(retracted),
                relevance=relevance,
                zero_hit_cause=zero_hit,
            )
        )

    async def safety_check(self, question: str, request_id: str) -> SafetyDecision:
        """The safety step: the first step of :meth:`events`, and all that routes which search without
        answering (``/search``, MCP ``search_literature``) run before searching. Counted and logged by kind
        and red-flag names, never the question's words."""
        # Off the event loop: about 80 ms of pattern matching for a 4,000-character question.
        decision = await asyncio.to_thread(self._assess, question)
        if not decision.urgent and self.triage is not None:
            kind = await self.triage.kind(self.phi.for_llm(question))
            if kind is not None:
                decision = urgent_decision(kind, ("llm_triage",), decision.language, self.safety)
        if decision.urgent:
            URGENT.labels(decision.kind or "emergency").inc()
            log.info(
                json.dumps(
                    {
                        "event": "urgent",
                        "request_id": request_id,
                        "kind": decision.kind,
                        "conditions": list(decision.conditions),
                    }
                )
            )
        return decision

    def _assess(self, question: str) -> SafetyDecision:
        return assess_safety(question, detect_language(question).code, self.safety)

    async def _urgent(
        self, request_id: str, decision: SafetyDecision, *, stream_tokens: bool = False
    ) -> AsyncGenerator[AskEvent, None]:
        """The events of an urgent question: the decision, then the guidance as the answer; nothing else."""
        ANSWERS.labels("urgent").inc()
        count_zero_hit("refused")
        yield Urgent(decision)
        text = decision.message or ""
        if stream_tokens:  # like every answer without a streaming model: its text as one token
            yield Token(text, 0)
        answered = Answered(text, "urgent", None, None)
        yield answered
        yield Done(
            AskResult(
                calibration=self.pipeline.calibration_label,
                request_id=request_id,
                answered=answered,
                warnings=(
                    "urgent: safety guidance given instead of a literature answer; nothing was searched",
                ),
                language=decision.language,
                safety=decision,
                zero_hit_cause="refused",
            )
        )

    async def _out_of_scope(
        self,
        request_id: str,
        scope: Scope,
        timings: dict[str, float],
        warnings: list[str],
        *,
        stream_tokens: bool = False,
    ) -> AsyncGenerator[AskEvent, None]:
        """The events of a question the scope check stopped: no evidence, a short helpful message."""
        ABSTENTIONS.labels(scope.reason or "out_of_scope").inc()
        ANSWERS.labels("out_of_scope").inc()
        count_zero_hit("refused")
        warnings.append(f"out of scope ({scope.reason}): nothing was searched")
        yield Evidence((), None)
        yield Stage("answer", "started")
        if stream_tokens:  # like every answer without a streaming model: its text as one token
            yield Token(scope.message, 0)
        answered = Answered(scope.message, "out_of_scope", None, None)
        yield Stage("answer", "finished")
        yield answered
        yield Done(
            AskResult(
                calibration=self.pipeline.calibration_label,
                request_id=request_id,
                answered=answered,
                timings_ms={k: round(v, 2) for k, v in timings.items()},
                warnings=tuple(dict.fromkeys(warnings)),
                scope=scope.reason,
                language=scope.language,
                zero_hit_cause="refused",
            )
        )

    async def _across(
        self,
        req: AskRequest,
        request_id: str,
        service: SourcesService,
        refs: list[SourceRef],
        subject: Subject,
        understanding: Understanding,
        timings: dict[str, float],
        warnings: list[str],
    ) -> AsyncGenerator[AskEvent, None]:
        """The retrieve, answer and judge steps over several sources (after the flow's scope check)."""
        yield Stage("retrieve", "started")
        outcome = await service.ask(
            req.question,
            refs,
            subject=subject,
            answerer=self.answerer,
            judge=self.judge,
            understanding=understanding,
            req=req,
            request_id=request_id,
        )
        yield Stage("retrieve", "finished")
        log.info(
            json.dumps(
                {
                    "event": "ask_sources",
                    "request_id": request_id,
                    "question_hash": outcome.question_hash,
                    "subject": hash_text(subject.id) if subject.id else None,
                    "status": {o.name: o.status.status for o in outcome.sources},
                }
            )
        )
        if len(refs) == 1 and outcome.sources and all(o.status.status == "denied" for o in outcome.sources):
            raise SourceDenied("; ".join(f"{o.name}: {o.status.reason}" for o in outcome.sources))
        yield Done(
            AskResult(
                calibration=self.pipeline.calibration_label,
                request_id=request_id,
                answered=Answered(outcome.answer, outcome.mode, None, None),
                timings_ms={**{k: round(v, 2) for k, v in timings.items()}, **outcome.timings_ms},
                warnings=tuple(dict.fromkeys([*warnings, *outcome.warnings])),
                language=understanding.language,
                across=outcome,
                excerpt_chars=service.settings.sources.excerpt_chars,
            )
        )
