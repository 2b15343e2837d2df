"""Understand: narrative -> QueryPlan, by the LLM rewriter with the deterministic rewriter as its net.

The LLM's plan is never trusted as is: every ladder query is stripped of the narrative's PHI, parsed by our
PubMed parser, limited to content fields (no ``[au]``/``[pmid]``/...), and dropped when it fails; a ladder
left too short is padded from the deterministic ladder, and an empty one (or an LLM error) falls back to
the deterministic plan entirely. ``Understanding.path`` says which one produced the plan that runs.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal

from core import QUERY_GENERIC_WORDS, content_words, prefix_stem
from llm import LLMClient, LLMError
from prompts import load_prompt
from retrieval.query import And, Node, Not, Or, QuerySyntaxError, Range, Term, parse_query

from ._language import DetectedLanguage, detect_language
from ._metrics import FALLBACKS, LANGUAGES, QUESTIONS
from ._phi import ScrubResult, hash_text, scrub, strip_phi_from_query
from ._plan import MIN_LADDER, QueryPlan, RewriterOutput
from ._rewrite import DeterministicRewriter
from ._scope import Scope, assess_scope

__all__ = ["ALLOWED_FIELDS", "QueryUnderstander", "Understanding", "check_ladder_query"]

log = logging.getLogger("cometa.understand")

# Content fields only: a rewriter has no business searching authors, PMIDs or journals, and an LLM that
# does is either confused or following injected instructions.
ALLOWED_FIELDS = frozenset(
    {"tiab", "ti", "ab", "mh", "mh:noexp", "majr", "pt", "tw", "all", "la", "sb", "dp"}
)


@dataclass(frozen=True, slots=True)
class Understanding:
    plan: QueryPlan
    path: Literal["llm", "deterministic"]
    question_hash: str
    fallback_reason: str | None = None
    dropped: tuple[tuple[str, str], ...] = ()  # (query, why) rejected from the LLM ladder
    padded: int = 0  # deterministic queries appended to a short LLM ladder
    phi_counts: dict[str, int] = field(default_factory=dict)
    model: str | None = None
    prompt_id: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    # The scope check (before retrieval and before any LLM call): out of scope -> no rewriter LLM call.
    scope: Scope = field(default_factory=lambda: Scope(True))
    # What the scrubber found in the question: every query built later from the question (the gate's word
    # and phrase counts) passes the same PHI check as the ladder with it. Its repr shows no values.
    phi: ScrubResult = field(default_factory=lambda: ScrubResult(""), repr=False, compare=False)

    @property
    def language(self) -> str:
        """The question's language (ISO 639-1) as detected."""
        return self.scope.language


def _terms(node: Node) -> Iterator[Term | Range]:
    if isinstance(node, Term | Range):
        yield node
    elif isinstance(node, And | Or):
        for child in node.children:
            yield from _terms(child)
    elif isinstance(node, Not):
        yield from _terms(node.left)
        yield from _terms(node.right)


def _stems(text: str) -> set[str]:
    # Crude stemming is enough to tie "tumors" to "tumor" and "metastases" to "metastas..."; the point is
    # catching queries about something else entirely, not ranking.
    return {prefix_stem(w, 6) for w in content_words(text, stopwords=QUERY_GENERIC_WORDS, min_length=3)}


def check_ladder_query(
    query: str, found: ScrubResult | None = None, anchors: set[str] | None = None
) -> tuple[str | None, str | None]:
    """(clean query, None) if ``query`` may run, else (None, reason). PHI is stripped first.

    ``anchors`` (stems of the question and of its recognised concepts) rejects a query none of whose
    terms relates to the question: small models copy their few-shot examples verbatim.
    """
    cleaned = strip_phi_from_query(query, found)
    if not cleaned.strip():
        return None, "nothing left after PHI removal"
    try:
        ast = parse_query(cleaned)
    except QuerySyntaxError as exc:
        return None, f"invalid PubMed syntax: {exc}"
    terms = list(_terms(ast))
    for term in terms:
        fld = term.field
        if fld is not None and fld not in ALLOWED_FIELDS:
            return None, f"field [{fld}] not allowed in a rewritten query"
    if anchors is not None:
        words = [t for t in terms if isinstance(t, Term)]
        if words and not any(_stems(t.text) & anchors for t in words):
            return None, "no term relates to the question"
    return cleaned, None


class QueryUnderstander:
    def __init__(
        self,
        *,
        llm: LLMClient | None,
        rewriter: DeterministicRewriter | None = None,
        scrub_for_llm: bool = False,
        prompt_name: str = "rewrite_query",
        today: Callable[[], datetime.date] = datetime.date.today,
    ) -> None:
        self.llm = llm
        self.rewriter = rewriter or DeterministicRewriter()
        self.scrub_for_llm = scrub_for_llm
        self.prompt = load_prompt(prompt_name)
        self.today = today

    async def understand(self, question: str) -> Understanding:
        today = self.today()
        # Scrubbing, spelling, the rewrite, language and scope are pure CPU over up to 4,000 characters
        # (a long question costs tens to hundreds of ms): off the event loop, so that one question never
        # stalls every other request this process serves.
        read = await asyncio.to_thread(self._read, question, today)
        if isinstance(read, Understanding):
            return read
        found, qhash, fallback, scope = read
        if self.llm is None:
            return self._deterministic(fallback, qhash, found, "no LLM configured", scope=scope)
        text = found.text if self.scrub_for_llm else question
        messages = self.prompt.render(question=text, current_year=str(today.year))
        started = time.perf_counter()
        try:
            result = await self.llm.complete_json(messages, RewriterOutput, prompt_version=self.prompt.id)
        except LLMError as exc:
            log.warning("rewriter LLM failed (%s) for question %s", type(exc).__name__, qhash)
            return self._deterministic(
                fallback, qhash, found, f"LLM error: {type(exc).__name__}", scope=scope
            )
        output = result.value
        ladder: list[str] = []
        dropped: list[tuple[str, str]] = []
        anchors = _stems(found.text)
        for concept in fallback.concepts:
            anchors |= _stems(f"{concept.text} {concept.mesh or ''}")
        for query in output.ladder:
            cleaned, why = check_ladder_query(query, found, anchors)
            if cleaned is None:
                dropped.append((query, why or "rejected"))
            elif cleaned not in ladder:
                ladder.append(cleaned)
        info = {
            "model": result.model,
            "prompt_id": self.prompt.id,
            "prompt_tokens": result.prompt_tokens,
            "completion_tokens": result.completion_tokens,
            "latency_s": time.perf_counter() - started,
        }
        if not ladder:
            reason = "no valid query in the LLM ladder"
            return self._deterministic(
                fallback, qhash, found, reason, dropped=tuple(dropped), scope=scope, **info
            )
        padded = 0
        for query in fallback.ladder:
            if len(ladder) >= MIN_LADDER:
                break
            if query not in ladder:
                ladder.append(query)
                padded += 1
        concepts = [c for c in output.concepts if not found.leaks(c.text) and not found.leaks(c.mesh or "")]
        date_limits = output.date_limits
        if date_limits is not None and date_limits.max_year > today.year + 1:
            date_limits = None  # a window in the future is the model's mistake, not a constraint
        plan = QueryPlan(
            corrected_question=found.redact(output.corrected_question),
            intent=output.intent,
            concepts=concepts or fallback.concepts,
            pico=output.pico,
            date_limits=date_limits,
            ladder=ladder[:6],
            source="llm",
        )
        QUESTIONS.labels("llm").inc()
        return Understanding(
            plan=plan,
            path="llm",
            question_hash=qhash,
            dropped=tuple(dropped),
            padded=padded,
            phi_counts=found.counts(),
            scope=scope,
            phi=found,
            **info,  # type: ignore[arg-type]
        )

    def _read(
        self, question: str, today: datetime.date
    ) -> Understanding | tuple[ScrubResult, str, QueryPlan, Scope]:
        """The question read without the LLM: its final :class:`Understanding` when out of scope, else what
        the rewrite needs (the scrub result, the question's hash, the deterministic plan, the scope)."""
        found = scrub(question)
        qhash = hash_text(question)
        fallback = self.rewriter.rewrite(question, today=today)
        language = detect_language(found.text)
        if not language.english and language.confidence < 0.7:
            # Keyboard mashing reads as some language at low confidence: gibberish, whatever the detector
            # says.
            scope = assess_scope(
                found.text, fallback, self.rewriter.is_known_word, None, self.rewriter.is_technical_word
            )
            if scope.reason == "gibberish":
                language = DetectedLanguage("en", language.confidence)
        if not language.english:
            LANGUAGES.labels(language.code).inc()
            if self.llm is None:
                # The deterministic rewriter reads English only: say so, in the patient's language.
                scope = Scope(False, "language", language.code)
                return self._deterministic(fallback, qhash, found, "out of scope: language", scope=scope)
            # The LLM rewriter writes English queries from any language; the English-only scope check
            # would call a Spanish question gibberish, so the evidence gate alone judges it.
            scope = Scope(True, None, language.code)
        else:
            LANGUAGES.labels("en").inc()
            scope = self.rewriter.scope(found.text, fallback, today)
        if not scope.in_scope:
            return self._deterministic(fallback, qhash, found, f"out of scope: {scope.reason}", scope=scope)
        return found, qhash, fallback, scope

    def _deterministic(
        self,
        plan: QueryPlan,
        qhash: str,
        found: ScrubResult,
        reason: str,
        dropped: tuple[tuple[str, str], ...] = (),
        scope: Scope | None = None,
        **info: object,
    ) -> Understanding:
        if scope is not None and scope.in_scope and scope.language != "en":
            # The deterministic rewriter reads English only: a question in another language that the LLM
            # could not rewrite is declined in its language, never answered from a misread plan.
            scope = Scope(False, "language", scope.language)
        QUESTIONS.labels("deterministic").inc()
        FALLBACKS.labels(reason.split(":")[0]).inc()
        return Understanding(
            plan=plan,
            path="deterministic",
            question_hash=qhash,
            fallback_reason=reason,
            dropped=dropped,
            phi_counts=found.counts(),
            scope=scope or Scope(True),
            phi=found,
            **info,  # type: ignore[arg-type]
        )
