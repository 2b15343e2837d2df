"""Cross-source judging (HERO-QA §4.2-4.3, Appendices D/E): does the evidence agree with itself?

1. :meth:`CrossSourceJudge.answer_per_source` answers the question from each source alone (prompt
   ``answer_per_source``), or the exact ``NOT ADDRESSED: ...`` sentence. :class:`SourceAnswerer` is that
   per-source answer for any source's evidence context: ``app.sources`` answers collections and PubMed
   with it too.
2. Absence pre-screen: the ``NOT ADDRESSED`` prefix, else a YES/NO LLM check (``judge_absence``). The
   verdict is cached per answer *content*: the source, the version of its evidence (a hash of the context
   the answer was written from) and the answer text, so a source is screened once across all the pairs it
   takes part in and a changed handbook or a different answer is screened afresh. Only answers this
   process wrote from evidence it retrieved carry an evidence version and are cached; answers a caller
   supplies (``POST /judge``) are screened every time and never touch the cache, so no caller can plant a
   verdict (HERO-QA caches per (handbook, question); keyed so, a caller who names a source could poison it,
   and a cache hit would tell them someone else asked the question).
3. :meth:`CrossSourceJudge.judge`: a pair with an absent side is ``ABSENT`` without an LLM call; every
   other pair gets ONE structured call (``judge_compare``): classification, reasoning, divergence topic,
   clinical significance (the paper's ablation shows a label-only judge loses Divergent vs Complementary).
   If the JSON fails, a label-only fallback scans the raw reply; the other fields stay ``None``.

Each unordered pair is judged once, in canonical order (A = the source listed first), and the matrix is
symmetrised: the five labels are symmetric relations, and judging both orders would double the cost.

Rates (HERO-QA §5, Table 3): ``r_abs`` is the paper's absence rate, per source: the share of the sources'
answers that do not address the question (absent answers / answers screened; a failed answer counts in
neither); ``r_abs_pairs`` = ABSENT / judged pairs, the share of pairs the absence screen decided (what
``r_abs`` meant before: a pair is ABSENT when either side is, so it overstates absence); ``r_div`` =
(DIVERGENT + CONTRADICTORY) / non-absent judged pairs; ``r_con`` = CONSISTENT / non-absent judged pairs;
``None`` when the denominator is 0. A pair whose LLM call failed has ``classification=None`` and counts in
no pair rate.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from cachetools import LRUCache
from pydantic import BaseModel, field_validator

from llm import LLMClient, LLMError, LLMOutputInvalid
from prompts import load_prompt
from retrieval.evidence import EvidenceDoc
from retrieval.passages import PassageContext

from .answer import (
    NOT_ADDRESSED,
    ContextBlock,
    EvidenceContext,
    build_evidence_context,
    strip_reasoning,
    verify_citations,
)

__all__ = [
    "LABELS",
    "NOT_ADDRESSED",
    "CompareOutput",
    "CrossSourceJudge",
    "JudgeReport",
    "Label",
    "PairJudgement",
    "Significance",
    "SourceAnswer",
    "SourceAnswerer",
    "has_absent_prefix",
    "parse_label_fallback",
    "parse_yes_no",
    "verify_source_citations",
]

# The judge's five relations between two sources' answers (HERO-QA), and how much a difference matters.
Label = Literal["ABSENT", "CONSISTENT", "COMPLEMENTARY", "DIVERGENT", "CONTRADICTORY"]
Significance = Literal["low", "medium", "high"]

LABELS: tuple[Label, ...] = get_args(Label)

# Longest labels first so that, at one position, a longer label wins over a shorter one it contains.
_LABEL_ALT = "|".join(sorted(LABELS, key=len, reverse=True))
_KEYED_LABEL_RE = re.compile(rf"classification\W{{0,6}}({_LABEL_ALT})\b", re.IGNORECASE)
_UPPER_LABEL_RE = re.compile(rf"\b({_LABEL_ALT})\b")
_ANY_LABEL_RE = re.compile(rf"\b({_LABEL_ALT})\b", re.IGNORECASE)
_YES_NO_RE = re.compile(r"\b(YES|NO)\b", re.IGNORECASE)
_PREFIX_RE = re.compile(r"^[\s\"'*_`>#-]*NOT\s+ADDRESSED\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class SourceAnswer:
    source_id: str  # the PMID
    label: str  # "PMID:123"
    text: str
    absent: bool
    absence_method: Literal["prefix", "llm"] | None  # None: not screened, or the screen failed
    error: str | None = None  # the per-source answer call failed: its pairs are not judged
    screen_error: str | None = None  # the YES/NO absence check failed: treated as present, recorded
    # sha256 of the evidence context the answer was written from (the source's document version); None for
    # answers this process did not write (POST /judge): those are never cached.
    evidence_version: str | None = None
    citations_removed: int = 0  # [PMID:…]/[DOC:…] citations to what was not in that source's context


@dataclass(frozen=True, slots=True)
class PairJudgement:
    a: str  # label of the source listed first
    b: str
    classification: Label | None  # None: the judge call failed (see JudgeReport.errors)
    reasoning: str | None
    divergence_topic: str | None
    clinical_significance: Significance | None
    parsed_by: Literal["json", "label-fallback", "prescreen"] | None


@dataclass(frozen=True, slots=True)
class JudgeReport:
    question_hash: str  # sha256 prefix: reports can be logged without the patient's words
    sources: tuple[str, ...]
    answers: tuple[SourceAnswer, ...]
    pairs: tuple[PairJudgement, ...]
    matrix: list[list[Label | None]]  # N x N over ``sources``, symmetric, diagonal None
    counts: dict[Label, int]
    r_abs: float | None  # absent answers / screened answers (the paper's per-source absence rate)
    r_abs_pairs: float | None  # ABSENT pairs / judged pairs
    r_div: float | None
    r_con: float | None
    any_div: bool
    note: str | None  # plain-language note for the patient when sources diverge
    pairs_judged_by_llm: int
    errors: tuple[str, ...]


class CompareOutput(BaseModel):
    """Appendix E output schema; lenient about case and "null" strings, strict about the label."""

    classification: Label
    reasoning: str = ""
    divergence_topic: str | None = None
    clinical_significance: Significance | None = None

    @field_validator("classification", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value

    @field_validator("divergence_topic", mode="before")
    @classmethod
    def _topic(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() in ("", "null", "none", "n/a"):
            return None
        return value

    @field_validator("clinical_significance", mode="before")
    @classmethod
    def _significance(cls, value: Any) -> Any:
        if isinstance(value, str):
            v = value.strip().lower()
            return v if v in ("low", "medium", "high") else None
        return value


def has_absent_prefix(text: str) -> bool:
    """The canonical ``NOT ADDRESSED`` opening (quotes, markdown emphasis and case tolerated)."""
    return bool(_PREFIX_RE.match(strip_reasoning(text)))


def parse_yes_no(text: str) -> bool | None:
    """``True`` for YES, ``False`` for NO (first of the two words in the reply), ``None`` for neither."""
    m = _YES_NO_RE.search(strip_reasoning(text))
    return None if m is None else m.group(1).upper() == "YES"


def parse_label_fallback(text: str) -> Label | None:
    """The label of a non-JSON judge reply: after "classification", else the first upper-case label,
    else the first label in any case; first match wins."""
    text = strip_reasoning(text)
    for regex in (_KEYED_LABEL_RE, _UPPER_LABEL_RE, _ANY_LABEL_RE):
        m = regex.search(text)
        if m:
            found = m.group(1).upper()
            return next(label for label in LABELS if label == found)
    return None


_DOC_CITE_RE = re.compile(r"\s?\[DOC:\s*([^\]\s§]+)\s*(?:§\s*([^\]]*?))?\s*\]")
_PAGES_RE = re.compile(r"\bpp?\.\s*(\d+)(?:\s*-\s*(\d+))?")


def _doc_cite_ok(key: str, rest: str | None, blocks: Mapping[str, ContextBlock]) -> bool:
    # [DOC:a/hb §Travel p.3]: the document was in the context, with that section and page.
    block = blocks.get(key)
    if block is None:
        return False
    if not rest:
        return True
    page = _PAGES_RE.search(rest)
    section = rest[: page.start()].strip() if page else rest.strip()
    if section and section.lower() not in block.label.lower():
        return False
    if page is None:
        return True
    asked = int(page.group(1))
    ranges = [(int(a), int(b or a)) for a, b in _PAGES_RE.findall(block.label)]
    return any(lo <= asked <= hi for lo, hi in ranges)


def verify_source_citations(text: str, evidence: EvidenceContext) -> tuple[str, int]:
    """Any source's answer with its citations checked against that source's context: ``[PMID:n]`` must be
    a PubMed document of the context, ``[DOC:collection/doc §Section p.N]`` a collection document of it
    (with that section and page when given). (checked text, number of citations removed)."""
    text, _order, removed = verify_citations(text, evidence.citations)
    blocks = {b.key: b for b in evidence.blocks}
    bad = 0

    def fix(match: re.Match[str]) -> str:
        nonlocal bad
        if _doc_cite_ok(match.group(1), match.group(2), blocks):
            return match.group(0)
        bad += 1
        return ""

    text = _DOC_CITE_RE.sub(fix, text)
    text = re.sub(r"[ \t]+([.,;:!?])", r"\1", text)
    return text.strip(), removed + bad


class SourceAnswerer:
    """One source's evidence -> that source's own answer (prompt ``answer_per_source``) or the exact
    ``NOT ADDRESSED`` sentence; for the judge's PubMed documents and ``app.sources``' collections alike.

    The answer comes back prefix-screened; :meth:`CrossSourceJudge.screen` adds the YES/NO check. A failed
    call is an answer with ``error`` set (``exception_messages``: with the error's message, as the judge's
    reports give it; else its type only), never an exception.
    """

    def __init__(
        self,
        llm: LLMClient,
        slots: asyncio.Semaphore,
        *,
        max_tokens: int | None = None,
        exception_messages: bool = False,
    ) -> None:
        self.llm = llm
        self._slots = slots  # shared with the caller's other LLM calls
        self._max_tokens = max_tokens
        self._exception_messages = exception_messages
        self._prompt = load_prompt("answer_per_source")

    async def answer(
        self,
        question: str,
        evidence: EvidenceContext,
        *,
        source_id: str,
        label: str,
        source_label: str | None = None,
    ) -> SourceAnswer:
        """``label`` names the answer in reports; ``source_label`` the source in the prompt (default:
        ``label``)."""
        prompt = self._prompt
        messages = prompt.render(question=question, source_label=source_label or label, context=evidence.text)
        try:
            async with self._slots:
                result = await self.llm.complete_text(
                    messages, prompt_version=prompt.id, max_tokens=self._max_tokens, temperature=0.0
                )
        except LLMError as exc:
            why = f": {exc}" if self._exception_messages else f" ({type(exc).__name__})"
            return SourceAnswer(source_id, label, "", False, None, f"{label}: answer failed{why}")
        # Checked like the /ask answer: a citation to anything outside this source's context is cut, counted.
        text, removed = verify_source_citations(strip_reasoning(result.value), evidence)
        absent = has_absent_prefix(text)
        version = hashlib.sha256(evidence.text.encode()).hexdigest()
        return SourceAnswer(
            source_id,
            label,
            text,
            absent,
            "prefix" if absent else None,
            evidence_version=version,
            citations_removed=removed,
        )


class CrossSourceJudge:
    def __init__(
        self, llm: LLMClient, *, max_sources: int = 4, concurrency: int = 4, cache_size: int = 1024
    ) -> None:
        if max_sources < 2:
            raise ValueError("max_sources must be at least 2: judging compares pairs")
        self.llm = llm
        self.max_sources = max_sources
        self._semaphore = asyncio.Semaphore(concurrency)
        self._cache: LRUCache[tuple[str, str, str, str], bool] = LRUCache(maxsize=cache_size)
        self._per_source = SourceAnswerer(llm, self._semaphore, exception_messages=True)
        self._absence_prompt = load_prompt("judge_absence")
        self._compare_prompt = load_prompt("judge_compare")

    # --- per-source answers ---------------------------------------------------------------------------

    async def answer_per_source(
        self, question: str, docs: Sequence[EvidenceDoc], context: PassageContext | None = None
    ) -> list[SourceAnswer]:
        """One answer per source (the first ``max_sources`` docs), each already absence-screened."""
        return list(
            await asyncio.gather(*(self._one_source(question, d, context) for d in docs[: self.max_sources]))
        )

    async def _one_source(
        self, question: str, doc: EvidenceDoc, context: PassageContext | None
    ) -> SourceAnswer:
        evidence = build_evidence_context([doc], context)
        answer = await self._per_source.answer(
            question, evidence, source_id=doc.pmid, label=f"PMID:{doc.pmid}"
        )
        return await self.screen(question, answer)

    async def screen(self, question: str, answer: SourceAnswer) -> SourceAnswer:
        """The answer with ``absent`` set: prefix heuristic, else the YES/NO LLM check, cached per answer
        content for answers that carry an evidence version (see the module docstring)."""
        if answer.error is not None:
            return answer
        if has_absent_prefix(answer.text):
            return dataclasses.replace(answer, absent=True, absence_method="prefix")
        prompt = self._absence_prompt
        key = None
        if answer.evidence_version is not None:
            text_hash = hashlib.sha256(answer.text.encode()).hexdigest()
            key = (prompt.id, answer.source_id, answer.evidence_version, text_hash)
            cached = self._cache.get(key)
            if cached is not None:
                return dataclasses.replace(answer, absent=cached, absence_method="llm")
        try:
            async with self._semaphore:
                result = await self.llm.complete_text(
                    prompt.render(answer=answer.text), prompt_version=prompt.id, max_tokens=8, temperature=0.0
                )
        except LLMError as exc:
            # A failed screen must not hide a real answer: treat it as present and say so.
            note = f"{answer.label}: absence check failed ({type(exc).__name__}); treated as present"
            return dataclasses.replace(answer, absent=False, absence_method=None, screen_error=note)
        verdict = parse_yes_no(result.value)
        if verdict is None:
            note = f"{answer.label}: absence check gave no YES/NO ({result.value[:40]!r}); treated as present"
            return dataclasses.replace(answer, absent=False, absence_method=None, screen_error=note)
        if key is not None:
            self._cache[key] = verdict
        return dataclasses.replace(answer, absent=verdict, absence_method="llm")

    # --- pairwise judging -----------------------------------------------------------------------------

    async def judge(self, question: str, answers: Sequence[SourceAnswer]) -> JudgeReport:
        sources = tuple(a.label for a in answers)
        errors = [e for a in answers for e in (a.error, a.screen_error) if e is not None]
        index_pairs = [(i, j) for i in range(len(answers)) for j in range(i + 1, len(answers))]
        llm_calls = 0

        async def one(i: int, j: int) -> PairJudgement:
            nonlocal llm_calls
            a, b = answers[i], answers[j]
            if a.absent or b.absent:
                return PairJudgement(a.label, b.label, "ABSENT", None, None, None, "prescreen")
            if a.error or b.error:
                return PairJudgement(a.label, b.label, None, None, None, None, None)
            llm_calls += 1
            return await self._compare(question, a, b, errors)

        pairs = tuple(await asyncio.gather(*(one(i, j) for i, j in index_pairs)))

        matrix: list[list[Label | None]] = [[None] * len(answers) for _ in answers]
        for (i, j), pair in zip(index_pairs, pairs, strict=True):
            matrix[i][j] = matrix[j][i] = pair.classification
        counts: dict[Label, int] = dict.fromkeys(LABELS, 0)
        for pair in pairs:
            if pair.classification is not None:
                counts[pair.classification] += 1
        judged = sum(counts.values())
        present = judged - counts["ABSENT"]
        divergent = counts["DIVERGENT"] + counts["CONTRADICTORY"]
        screened = [a for a in answers if a.error is None]
        return JudgeReport(
            question_hash=hashlib.sha256(question.encode()).hexdigest()[:16],
            sources=sources,
            answers=tuple(answers),
            pairs=pairs,
            matrix=matrix,
            counts=counts,
            r_abs=sum(a.absent for a in screened) / len(screened) if screened else None,
            r_abs_pairs=counts["ABSENT"] / judged if judged else None,
            r_div=divergent / present if present else None,
            r_con=counts["CONSISTENT"] / present if present else None,
            any_div=divergent > 0,
            note=_patient_note(pairs),
            pairs_judged_by_llm=llm_calls,
            errors=tuple(errors),
        )

    async def _compare(
        self, question: str, a: SourceAnswer, b: SourceAnswer, errors: list[str]
    ) -> PairJudgement:
        prompt = self._compare_prompt
        messages = prompt.render(
            question=question, label_a=a.label, answer_a=a.text, label_b=b.label, answer_b=b.text
        )
        try:
            async with self._semaphore:
                result = await self.llm.complete_json(
                    messages, CompareOutput, prompt_version=prompt.id, temperature=0.0
                )
        except LLMOutputInvalid as exc:
            label = parse_label_fallback(exc.raw_text)
            if label is None:
                errors.append(f"{a.label} vs {b.label}: judge reply had no JSON and no label")
                return PairJudgement(a.label, b.label, None, None, None, None, None)
            return PairJudgement(a.label, b.label, label, None, None, None, "label-fallback")
        except LLMError as exc:
            errors.append(f"{a.label} vs {b.label}: judge call failed ({type(exc).__name__}: {exc})")
            return PairJudgement(a.label, b.label, None, None, None, None, None)
        v = result.value
        return PairJudgement(
            a.label,
            b.label,
            v.classification,
            v.reasoning or None,
            v.divergence_topic,
            v.clinical_significance,
            "json",
        )

    async def run(
        self, question: str, docs: Sequence[EvidenceDoc], context: PassageContext | None = None
    ) -> JudgeReport:
        return await self.judge(question, await self.answer_per_source(question, docs, context))


def _patient_note(pairs: Sequence[PairJudgement]) -> str | None:
    parts: list[str] = []
    for p in pairs:
        if p.classification in ("DIVERGENT", "CONTRADICTORY"):
            how = "give opposite guidance" if p.classification == "CONTRADICTORY" else "differ"
            topic = f" on {p.divergence_topic}" if p.divergence_topic else ""
            parts.append(f"{p.a} and {p.b} {how}{topic}")
    if not parts:
        return None
    return (
        f"Guidance differs between sources: {'; '.join(parts)}. "
        "Please discuss these differences with your care team."
    )
