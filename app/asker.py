"""The question flow: understand -> retrieve -> passages -> answer -> judge, one place for every caller.

``POST /ask`` and ``/ask/stream``, ``cometa ask`` and the in-process evaluation suites all run an
:class:`Asker`. :meth:`Asker.events` streams ``stage`` (understand/retrieve/answer/judge started|finished),
``evidence``, ``token`` (provisional deltas, when streaming), ``answer`` (the checked final answer),
``judge`` (when asked) and last ``result`` (the :class:`~app.schemas.AskResponse` JSON);
:meth:`Asker.ask` returns that response. A request naming sources beyond PubMed is answered per source by
:class:`~app.sources.SourcesService` (not streamed).

Privacy: the Asker holds the one PHI decision (:class:`~app.privacy.PhiPolicy`). The answer and judge
prompts get the question as that policy allows; the same policy is built into the rewriter and the
sources service by :mod:`app.container`, and the Asker refuses a pipeline whose rewriter decides otherwise.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from typing import Any

from prometheus_client import Counter, Histogram

from app.schemas import (
    AskRequest,
    AskResponse,
    CitationOut,
    EvidenceDocOut,
    EvidenceVerdictOut,
    JudgeAnswerIn,
    JudgeReportOut,
    PassageOut,
    QueryOut,
    UserDocument,
)
from app.sources import InvalidToken, SourcesService, Subject, bearer_token, parse_sources, response_json
from core import CometaError
from retrieval.evidence import DROP_RETRACTED, EvidenceDoc, TextUnit, pubmed_url
from retrieval.passages import PassageContext
from retrieval.search import Provenance
from retrieval.understand import LANGUAGE_NAMES, Scope, hash_text

from .answer import Answer, Answerer
from .judge import CrossSourceJudge, JudgeReport, SourceAnswer
from .pipeline import Pipeline
from .privacy import PhiPolicy
from .trust import EvidenceVerdict, assess_evidence

__all__ = [
    "ABSTENTIONS",
    "ANSWERS",
    "CITATIONS_REMOVED",
    "EVIDENCE_VERDICTS",
    "STAGE_LATENCY",
    "AskEvent",
    "Asker",
    "SourceDenied",
    "TokenRequired",
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
STAGE_LATENCY = Histogram(
    "cometa_stage_seconds",
    "Latency of each /ask stage (understand, esearch, dense, fuse, metadata, passages, answer, judge)",
    ["stage"],
    buckets=(0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
)

AskEvent = tuple[str, dict[str, Any]]


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


def _restrict(context: PassageContext | None, pmids: set[str]) -> PassageContext | None:
    if context is None:
        return None
    return dataclasses.replace(context, passages=tuple(p for p in context.passages if p.pmid in pmids))


def _stage(name: str, status: str) -> AskEvent:
    return "stage", {"stage": name, "status": status}


class Asker:
    """One question, start to finish, over the process's pipeline, answerer and judge (None: no LLM)."""

    def __init__(
        self, pipeline: Pipeline, answerer: Answerer, judge: CrossSourceJudge | None, *, phi: PhiPolicy
    ) -> None:
        if pipeline.understander.scrub_for_llm != phi.scrub_for_llm:
            raise ValueError("the rewriter and the answer must follow one PHI decision (scrub_phi_for_llm)")
        self.pipeline = pipeline
        self.answerer = answerer
        self.judge = judge
        self.phi = phi

    async def ask(
        self,
        req: AskRequest,
        request_id: str,
        *,
        sources: SourcesService | None = None,
        authorization: str | None = None,
    ) -> AskResponse:
        """The final response. Sources beyond PubMed need ``sources`` (this node's collections, access and
        federation) and the caller's ``Authorization`` header; they raise
        :class:`~app.sources.UnknownSource`, :class:`InvalidToken` (or :class:`TokenRequired`) and
        :class:`SourceDenied` for what the API answers with 422, 401 and 403."""
        if req.across_sources:
            if sources is None:
                raise ValueError("asking beyond PubMed needs the sources service")
            return await self._ask_across(req, request_id, sources, authorization)
        result: dict[str, Any] = {}
        async for name, data in self.events(req, request_id):
            if name == "result":
                result = data
        return AskResponse.model_validate(result)

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
        self, req: AskRequest, request_id: str, *, stream_tokens: bool = False
    ) -> AsyncGenerator[AskEvent, None]:
        """The PubMed answer as events, ``result`` last. ``stream_tokens``: the model's deltas as ``token``
        events; closing this generator (client gone) closes the answer stream and the LLM generation."""
        if req.across_sources:
            raise ValueError("several sources are answered by Asker.ask, not streamed")
        pipeline = self.pipeline
        timings: dict[str, float] = {}
        warnings: list[str] = []
        api_key = req.ncbi_api_key.get_secret_value() if req.ncbi_api_key else None
        question = req.question
        query: QueryOut | None = None
        context: PassageContext | None
        verdict: EvidenceVerdict | None = None  # caller-supplied evidence only is not gated
        language = "en"
        searched: list[str] = []
        concepts: list[str] = []
        retracted: list[str] = []

        if req.documents is not None and req.documents_mode == "replace":
            # The caller's evidence only: no Understand, no retrieval (the evaluation suites' path).
            yield _stage("retrieve", "started")
            t0 = time.perf_counter()
            docs = user_evidence(req.documents)[: req.max_documents]
            context = await pipeline.passages_for(question, docs, warnings)
            timings["passages"] = (time.perf_counter() - t0) * 1000
            warnings.append("retrieval skipped: answering from the documents supplied with the request")
            yield _stage("retrieve", "finished")
        else:
            yield _stage("understand", "started")
            t0 = time.perf_counter()
            understanding = await pipeline.understander.understand(question)
            timings["understand"] = (time.perf_counter() - t0) * 1000
            yield _stage("understand", "finished")
            language = understanding.language
            if language != "en":
                name = LANGUAGE_NAMES.get(language, language)
                warnings.append(
                    f"question language detected: {language} ({name})"
                    + ("; the answer is asked for in that language" if understanding.scope.in_scope else "")
                )
            if not understanding.scope.in_scope:
                # Not a health question: no retrieval, no LLM call, a short helpful reply.
                scope_events = self._out_of_scope(
                    request_id, understanding.scope, timings, warnings, stream_tokens=stream_tokens
                )
                async for event in scope_events:
                    yield event
                return
            yield _stage("retrieve", "started")
            outcome = await pipeline.retrieve(
                understanding,
                mindate=req.mindate,
                maxdate=req.maxdate,
                api_key=api_key,
                gate_documents=req.max_documents,
            )
            timings.update(outcome.timings_ms)
            warnings.extend(outcome.warnings)
            failed = outcome.adapte.errors
            if failed:
                # Part of the Boolean ladder failed but something came back: answer, and say so.
                warnings.append(
                    f"degraded: {len(failed)} of {len(outcome.adapte.tiers)} PubMed searches failed "
                    f"(NCBI partly unavailable); evidence may be incomplete"
                )
            query = QueryOut.of(outcome)
            docs = list(outcome.evidence.docs)
            context = outcome.context
            if req.documents:
                seen = {d.pmid for d in docs}
                extra = [
                    d for d in user_evidence(req.documents, start_rank=len(docs) + 1) if d.pmid not in seen
                ]
                docs.extend(extra)
                if docs:
                    context = await pipeline.passages_for(question, docs, warnings)
            if len(docs) > req.max_documents:
                docs = docs[: req.max_documents]
                context = _restrict(context, {d.pmid for d in docs})
            gate = pipeline.settings.gate
            verdict = assess_evidence(pipeline.gate_signals(outcome, docs, context), gate)
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
            yield _stage("retrieve", "finished")

        yield (
            "evidence",
            {
                "documents": [d.model_dump(mode="json") for d in EvidenceDocOut.ranked(docs)],
                "passages": [p.model_dump(mode="json") for p in PassageOut.of_context(context)],
            },
        )
        asked = self.phi.for_llm(question)  # what the answer and judge prompts may see
        yield _stage("answer", "started")
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
            async with aclosing(self.answerer.answer_stream(asked, docs, context, **answer_args)) as parts:
                index = 0
                async for part in parts:
                    if isinstance(part, str):
                        yield "token", {"delta": part, "index": index}
                        index += 1
                    else:
                        answer = part
            if answer is None:  # answer_stream always ends with its Answer; guard a broken contract loudly
                raise RuntimeError("the answer stream ended without an answer")
        else:
            answer = await self.answerer.answer(asked, docs, context, **answer_args)
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
        citations = [CitationOut.of(c, current_year=year, old_after=old_after) for c in answer.citations]
        old = [c.pmid for c in citations if c.older_than_years is not None]
        if old:
            warnings.append(
                f"{len(old)} cited stud{'y is' if len(old) == 1 else 'ies are'} older than "
                f"{old_after} years (PMID {', '.join(p or '' for p in old)}): newer evidence may differ"
            )
        verdict_out = EvidenceVerdictOut.model_validate(verdict.to_json()) if verdict is not None else None
        answer_payload = {
            "answer": answer.text,
            "mode": answer.mode,
            "answer_choice": answer.answer_choice,
            "reasoning": answer.reasoning,
            "citations": [c.model_dump() for c in citations],
            "citations_removed": answer.citations_removed,  # the token events may still show the removed ids
            "evidence_verdict": verdict_out.model_dump(mode="json") if verdict_out is not None else None,
        }
        yield _stage("answer", "finished")
        yield "answer", answer_payload

        judge_out: JudgeReportOut | None = None
        if req.judge:
            if self.judge is None:
                warnings.append("judge requested but unavailable: no LLM is configured")
            elif not docs:
                warnings.append("judge skipped: no evidence to compare")
            elif verdict is not None and verdict.abstain:
                warnings.append("judge skipped: the evidence does not answer the question")
            else:
                yield _stage("judge", "started")
                t2 = time.perf_counter()
                judge_out = JudgeReportOut.of(await self.judge.run(asked, docs, context))
                timings["judge"] = (time.perf_counter() - t2) * 1000
                yield _stage("judge", "finished")
                yield "judge", judge_out.model_dump(mode="json")

        for stage_name, ms in timings.items():
            STAGE_LATENCY.labels(stage_name).observe(ms / 1000)
        response = AskResponse(
            request_id=request_id,
            answer=answer.text,
            mode=answer.mode,
            answer_choice=answer.answer_choice,
            reasoning=answer.reasoning,
            citations=citations,
            citations_removed=answer.citations_removed,
            evidence=EvidenceDocOut.ranked(docs),
            passages=PassageOut.of_context(context),
            query=query,
            judge=judge_out,
            timings_ms={k: round(v, 2) for k, v in timings.items()},
            warnings=list(dict.fromkeys(warnings)),
            model=answer.model,
            prompt_id=answer.prompt_id,
            tokens={"prompt": answer.prompt_tokens, "completion": answer.completion_tokens},
            evidence_verdict=verdict_out,
            retracted_excluded=retracted,
            language=language,
        )
        yield "result", response.model_dump(mode="json")

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
        warnings.append(f"out of scope ({scope.reason}): nothing was searched")
        yield "evidence", {"documents": [], "passages": []}
        yield _stage("answer", "started")
        if stream_tokens:  # like every answer without a streaming model: its text as one token
            yield "token", {"delta": scope.message, "index": 0}
        payload: dict[str, Any] = {
            "answer": scope.message,
            "mode": "out_of_scope",
            "answer_choice": None,
            "reasoning": None,
            "citations": [],
            "citations_removed": 0,
            "evidence_verdict": None,
        }
        yield _stage("answer", "finished")
        yield "answer", payload
        response = AskResponse(
            request_id=request_id,
            answer=scope.message,
            mode="out_of_scope",
            citations=[],
            evidence=[],
            passages=[],
            query=None,
            timings_ms={k: round(v, 2) for k, v in timings.items()},
            warnings=list(dict.fromkeys(warnings)),
            scope=scope.reason,
            language=scope.language,
        )
        yield "result", response.model_dump(mode="json")

    async def _ask_across(
        self, req: AskRequest, request_id: str, service: SourcesService, authorization: str | None
    ) -> AskResponse:
        refs = parse_sources(req.sources)  # names that exist or not are answered alike: nothing to look up
        subject = caller_of(service, authorization, needed=any(r.kind != "pubmed" for r in refs))
        outcome = await service.ask(
            req.question,
            refs,
            subject=subject,
            answerer=self.answerer,
            judge=self.judge,
            req=req,
            request_id=request_id,
        )
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
        body = response_json(outcome, request_id, service.settings.sources.excerpt_chars)
        return AskResponse.model_validate(body)
