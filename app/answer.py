"""Answering: evidence -> a cited patient answer (free text) or an option letter (multiple choice).

Free text (prompt ``answer_patient``): plain language, a ``[PMID:n]`` after every claim, uncertainty and
evidence age stated. Citations are checked mechanically: ids the model cites that are not in the context
are cut from the text and counted (``citations_removed``); the citation list is the valid ids in order of
first appearance.

Choice (prompt ``answer_choice``, CoMeta A.6 "LLM with CoT + RAG"): JSON ``{step_by_step_thinking,
answer_choice}``; the letter is validated inside the schema, so the LLM layer's retry on invalid output
also covers a letter outside the options.

Degradation, never a silent guess:

* no documents -> ``insufficient_evidence`` and the LLM is never called (nothing to ground an answer in);
* no LLM, an LLM error, or empty/garbage free text -> ``extractive``: the evidence sentences that answer best
  (chosen by ``app.extractive``) quoted with their citations, and a warning.

Evidence of any source goes the same way: :func:`build_evidence_context` turns PubMed documents (passages
or abstracts, ``[PMID:n]``) or collection evidence (``[DOC:collection/doc §Section p.N]``) into one
labelled context, and :func:`extractive_answer` quotes it when no model answers (the judge's and
``app.sources``' per-source answers build on both).

Streaming (:meth:`Answerer.answer_stream`): the same answer, with the model's raw text deltas yielded while
it generates and the checked :class:`Answer` last. The deltas are provisional (the citation check and the
fallbacks apply to the final answer only); a model failure after some deltas ends in the extractive answer.
Modes without a streaming model (insufficient evidence, extractive, choice) yield their text as one delta.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import math
import re
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, field_validator

from app.settings import AnswerSettings
from llm import LLMClient, LLMError, LLMOutputInvalid, LLMResult, Message
from prompts import load_prompt
from retrieval.collections import InstEvidence
from retrieval.evidence import EvidenceDoc, Notice, StudyGrade, grade_study
from retrieval.passages import PassageContext
from retrieval.search import DENSE_ARM

from .extractive import NOT_ADDRESSED, content_terms, extractive_answer, has_words
from .trust import INSUFFICIENT_EVIDENCE_TEXT, EvidenceVerdict

__all__ = [
    "INSUFFICIENT_TEXT",
    "NOT_ADDRESSED",
    "WARN_UNPARSEABLE",
    "Answer",
    "AnswerMode",
    "Answerer",
    "ChoiceOutput",
    "Citation",
    "ContextBlock",
    "EvidenceContext",
    "build_evidence_context",
    "content_terms",
    "extractive_answer",
    "find_insufficient_option",
    "insufficient_text",
    "parse_citation_ids",
    "strip_reasoning",
    "study_relevance",
    "verify_citations",
]

# How an answer was made: by the model, by quoting the evidence (no model, or it failed), or not at all
# (no evidence; a source that does not address the question; a per-source call that failed).
# "out_of_scope": the question is not a health question the service answers (gibberish, small talk, an
# instruction to the system, not about health), or not in a language it reads without a language model.
AnswerMode = Literal[
    "llm", "extractive", "insufficient_evidence", "not_addressed", "error", "out_of_scope", "urgent"
]

INSUFFICIENT_TEXT = (
    "No published evidence was found for this question, so no answer can be given from the literature. "
    "Please discuss the question with your care team."
)
WARN_NO_LLM = "no language model is configured: the answer quotes the evidence"
WARN_LLM_UNAVAILABLE = "the language model was unavailable: the answer quotes the evidence instead"
WARN_LLM_INTERRUPTED = "the language model stopped mid-answer: the answer quotes the evidence instead"
WARN_EXTRACTIVE = (
    "no language model wrote this: it quotes, from each of the {n} studies that passed the relevance check, "
    "the "
    "sentences sharing most words with the question, its rarer words counting more (results, conclusions "
    "and reported effects preferred), the study that answers best first, then strongest design and most "
    "recent first; quotes can miss context, so read the studies and discuss them with your care team"
)
WARN_EXTRACTIVE_UNMATCHED = (
    "no language model wrote this, and no sentence of the evidence shares the question's words: these are "
    "the first sentences of the best-ranked studies, which may not answer the question"
)
WARN_GARBAGE = "the language model's answer was empty or unusable: quoting the evidence instead"
WARN_UNPARSEABLE = "unparseable answer: the model gave no valid option letter"
WARN_NO_CHOICE_LLM = "the language model was unavailable: no option could be chosen"

# [PMID:123], [PMID: 123, 456], [pmid 123; 456]
_CITATION_RE = re.compile(r"\s?\[\s*PMID\s*:?\s*(\d+(?:\s*[,;]\s*(?:PMID\s*:?\s*)?\d+)*)\s*\]", re.IGNORECASE)
_ID_RE = re.compile(r"\d+")
_THINK_RE = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL | re.IGNORECASE)
_INSUFFICIENT_RE = re.compile(
    r"insufficient|not enough|cannot be (?:determined|answered)|can't be determined|unknown|no answer",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Citation:
    pmid: str
    pmcid: str | None
    title: str
    year: int | None
    publication_types: tuple[str, ...]
    url: str
    doc_class: str | None
    design: str | None = None  # retrieval.evidence.grade_study: "randomised trial", "meta-analysis", ...
    patients: int | None = None  # the sample size the abstract states
    notices: tuple[Notice, ...] = ()  # PubMed's notices about the study (retrieval.evidence.Notice)

    def age(self, current_year: int | None) -> int | None:
        """Years since publication (None: the year or today's year unknown)."""
        return current_year - self.year if current_year is not None and self.year is not None else None

    def older_than(self, years: int | None, current_year: int | None) -> bool:
        """Published more than ``years`` ago: the answer warns that newer evidence may differ."""
        age = self.age(current_year)
        return age is not None and years is not None and age > years


@dataclass(frozen=True, slots=True)
class Answer:
    text: str
    mode: AnswerMode
    answer_choice: str | None
    reasoning: str | None
    citations: tuple[Citation, ...]
    citations_removed: int  # [PMID:n] ids the model cited that were not in the context
    model: str | None
    prompt_id: str | None
    prompt_tokens: int
    completion_tokens: int
    warnings: tuple[str, ...]
    verdict: EvidenceVerdict | None = None  # the evidence gate's verdict (None: not assessed)


# --- context ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ContextBlock:
    key: str  # what the block is cited by: a PMID, or a collection document ("collection/doc_id")
    label: str  # "[PMID:123] 2021 | Review | section: Results", "[DOC:a/hb §Travel p.3] Title | sections: …"
    text: str
    cite: str  # the citation after a sentence quoted from the block: "[PMID:123]", "[DOC:a/hb §Travel p.3]"


@dataclass(frozen=True, slots=True)
class EvidenceContext:
    blocks: tuple[ContextBlock, ...]  # highest-ranked first
    citations: Mapping[str, Citation]  # every PMID present in the blocks (none for collection evidence)
    studies: Mapping[str, StudyGrade] = field(default_factory=dict)  # design, year, size per PMID
    abstracts: Mapping[str, str] = field(default_factory=dict)  # each cited study's abstract (extractive)
    # Each study's dense similarity to the question (:func:`study_relevance`; the extractive answer).
    relevance: Mapping[str, float] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return "\n\n".join(f"{b.label}\n{b.text}" for b in self.blocks)


def _citation(doc: EvidenceDoc, grade: StudyGrade) -> Citation:
    return Citation(
        pmid=doc.pmid,
        pmcid=doc.pmcid,
        title=doc.title,
        year=doc.year,
        publication_types=doc.publication_types,
        url=doc.url,
        doc_class=doc.doc_class,
        design=grade.design,
        patients=grade.patients,
        notices=doc.notices,
    )


def _label(pmid: str, doc: EvidenceDoc | None, section: str) -> str:
    parts = [f"[PMID:{pmid}]"]
    if doc is not None:
        parts.append(str(doc.year) if doc.year is not None else "year unknown")
        parts.append(", ".join(doc.publication_types) or "publication type unknown")
    parts.append(f"section: {section}")
    return " | ".join(parts)


def _abstract(doc: EvidenceDoc) -> tuple[str, str]:
    """(section label, text): the abstract, else the first text unit, else the title."""
    units = [u for u in doc.text_units if u.kind == "abstract" and u.text.strip()]
    units = units or [u for u in doc.text_units if u.text.strip()]
    if units:
        return units[0].label or "Abstract", units[0].text.strip()
    return "Title", doc.title.strip()


def _pubmed_blocks(
    docs: Sequence[EvidenceDoc], context: PassageContext | None, max_passages: int
) -> list[ContextBlock]:
    """Passages when there are any for ``docs`` (the ``max_passages`` best, neighbours riding along),
    else the abstracts of the first ``max_passages`` documents; empty texts are left out."""
    by_pmid = {d.pmid: d for d in docs}
    raw: list[tuple[str, str, str]] = []  # (pmid, section, text)
    passages = [p for p in (context.passages if context else ()) if not by_pmid or p.pmid in by_pmid]
    if passages:
        ranks: list[int] = []
        for p in sorted(passages, key=lambda p: p.rank):  # stable: neighbours keep their text order
            if p.rank not in ranks:
                if len(ranks) >= max_passages:
                    break
                ranks.append(p.rank)
            raw.append((p.pmid, " > ".join(p.path) or p.heading or p.kind, p.text.strip()))
    else:
        for doc in docs[:max_passages]:
            section, text = _abstract(doc)
            raw.append((doc.pmid, section, text))
    return [
        ContextBlock(pmid, _label(pmid, by_pmid.get(pmid), section), text, f"[PMID:{pmid}]")
        for pmid, section, text in raw
        if text
    ]


def _pubmed_citations(
    blocks: Sequence[ContextBlock],
    by_pmid: Mapping[str, EvidenceDoc],
    studies: Mapping[str, StudyGrade],
    context: PassageContext | None,
) -> dict[str, Citation]:
    """A citation per block's PMID; ``studies`` holds the grade of every block whose document is known."""
    citations: dict[str, Citation] = {}
    for block in blocks:
        if block.key in citations:
            continue
        found = by_pmid.get(block.key)
        if found is not None:
            citations[block.key] = _citation(found, studies[block.key])
        else:  # a passage whose document was not handed in: cite what the passage knows
            p = next(p for p in (context.passages if context else ()) if p.pmid == block.key)
            url = f"https://pubmed.ncbi.nlm.nih.gov/{p.pmid}/"
            citations[block.key] = Citation(p.pmid, p.pmcid, "", None, (), url, p.doc_class)
    return citations


def _collection_block(ev: InstEvidence) -> ContextBlock:
    sections = "; ".join(f"{s.heading} {s.pages}".strip() for s in ev.sections if s.heading or s.pages)
    head = f"{ev.cite()} {ev.title}" + (f" | sections: {sections}" if sections else "")
    return ContextBlock(f"{ev.collection}/{ev.doc_id}", head, ev.text.strip(), ev.cite())


def _fit(blocks: Sequence[ContextBlock], max_chars: int | None, *, exact: bool) -> tuple[ContextBlock, ...]:
    """Blocks in rank order until ``max_chars`` (None: all); the first is cut rather than dropped so that
    some evidence always reaches the model.

    ``exact``: the joined context never exceeds ``max_chars`` (collection evidence). Otherwise each block
    counts its label and text plus 2, so the separators may add a few characters (PubMed evidence: kept
    so that its contexts, and the answers and evaluations built on them, stay as they were).
    """
    overhead = 1 if exact else 2  # counted with each block
    gap = 2 if exact else 0  # counted once the block is in
    fitted: list[ContextBlock] = []
    used = 0
    for block in blocks:
        size = len(block.label) + len(block.text) + overhead
        if max_chars is not None and used + size > max_chars:
            if not fitted:
                keep = max(0, max_chars - len(block.label) - overhead)
                # Exact: even a label longer than the budget is cut to it.
                label = block.label[: max(0, max_chars - overhead)] if exact else block.label
                fitted.append(dataclasses.replace(block, label=label, text=block.text[:keep]))
            break
        fitted.append(block)
        used += size + gap
    return tuple(fitted)


def build_evidence_context(
    evidence: Sequence[EvidenceDoc] | Sequence[InstEvidence],
    context: PassageContext | None = None,
    *,
    max_passages: int = 8,
    max_chars: int | None = 12_000,
) -> EvidenceContext:
    """Labelled evidence blocks of one source, highest-ranked first, within ``max_chars`` (None: no limit).

    PubMed documents give their passages in ``context`` when there are any for them, else their abstracts,
    under ``[PMID:n]`` labels, with a :class:`Citation` per PMID. Collection evidence gives each
    document's retrieved text under its ``[DOC:...]`` citation and section list (``context`` and
    ``max_passages`` do not apply).
    """
    docs = [e for e in evidence if isinstance(e, EvidenceDoc)]
    held = [e for e in evidence if not isinstance(e, EvidenceDoc)]
    if docs and held:
        raise TypeError("one source's evidence at a time: PubMed documents or collection evidence")
    if held:
        return EvidenceContext(_fit([_collection_block(ev) for ev in held], max_chars, exact=True), {})
    blocks = _fit(_pubmed_blocks(docs, context, max_passages), max_chars, exact=False)
    by_pmid = {d.pmid: d for d in docs}
    studies = {b.key: grade_study(by_pmid[b.key]) for b in blocks if b.key in by_pmid}
    abstracts = {k: text for k in studies for label, text in [_abstract(by_pmid[k])] if label != "Title"}
    citations = _pubmed_citations(blocks, by_pmid, studies, context)
    return EvidenceContext(blocks, citations, studies, abstracts, study_relevance(docs, context))


def study_relevance(docs: Sequence[EvidenceDoc], context: PassageContext | None) -> dict[str, float]:
    """Each document's similarity to the question, as retrieval measured it: its score in the dense arm,
    else the best dense score of its passages (the same bi-encoder); a document with neither (found only by
    the Boolean search, no passage scored) is left out: its relevance is unknown."""
    out: dict[str, float] = {}
    for doc in docs:
        dense = [p.score for p in doc.provenance if p.arm == DENSE_ARM and p.score is not None]
        if dense:
            out[doc.pmid] = float(max(dense))
    from_passages: dict[str, float] = {}
    for p in context.passages if context else ():
        if p.pmid not in out and "dense" in p.scores:
            from_passages[p.pmid] = max(from_passages.get(p.pmid, -math.inf), float(p.scores["dense"]))
    return out | from_passages


# --- citations ----------------------------------------------------------------------------------------


def parse_citation_ids(text: str) -> list[str]:
    """Every PMID cited as ``[PMID:n]`` / ``[PMID: n, m]``, in order of appearance (repeats kept)."""
    return [i for m in _CITATION_RE.finditer(text) for i in _ID_RE.findall(m.group(1))]


def verify_citations(text: str, valid: Mapping[str, Citation] | set[str]) -> tuple[str, list[str], int]:
    """(text with invalid ids removed, valid cited ids in first-appearance order, number removed)."""
    removed = 0
    order: list[str] = []

    def fix(match: re.Match[str]) -> str:
        nonlocal removed
        ids = _ID_RE.findall(match.group(1))
        good = [i for i in dict.fromkeys(ids) if i in valid]
        removed += len(set(ids)) - len(good)
        for i in good:
            if i not in order:
                order.append(i)
        if not good:
            return ""
        lead = " " if match.group(0).startswith((" ", "\t", "\n")) else ""
        return f"{lead}[PMID:{', '.join(good)}]"

    fixed = _CITATION_RE.sub(fix, text)
    fixed = re.sub(r"[ \t]+([.,;:!?])", r"\1", fixed)  # a removed citation leaves "claim ." behind
    return fixed.strip(), order, removed


def strip_reasoning(text: str) -> str:
    """The reply without ``<think>`` blocks (reasoning models), trimmed."""
    return _THINK_RE.sub("", text).strip()


def _is_garbage(text: str) -> bool:
    # Fewer than three real words, or a JSON/markup dump instead of prose.
    return not has_words(text) or text.lstrip().startswith(("{", "[", "<"))


# --- choice -------------------------------------------------------------------------------------------


def _enum_letters(schema: dict[str, Any], cls: type[Any]) -> None:
    # Put the option letters into the wire schema so grammar-constrained backends can only emit them.
    letters = getattr(cls, "allowed", ())
    prop = schema.get("properties", {}).get("answer_choice")
    if letters and isinstance(prop, dict):
        prop["enum"] = list(letters)


class ChoiceOutput(BaseModel):
    """The A.6 JSON. Subclassed per question with ``allowed`` / ``option_texts`` (see :meth:`for_options`)."""

    model_config = ConfigDict(json_schema_extra=_enum_letters)

    allowed: ClassVar[tuple[str, ...]] = ()
    option_texts: ClassVar[dict[str, str]] = {}  # lower-cased option text -> letter ("yes" -> "A")

    step_by_step_thinking: str = ""
    answer_choice: str

    @field_validator("answer_choice", mode="before")
    @classmethod
    def _letter(cls, value: Any) -> str:
        if not isinstance(value, str):
            raise ValueError("answer_choice must be a string")
        raw = value.strip()
        if not cls.allowed:
            return raw
        if raw.lower().rstrip(".") in cls.option_texts:
            return cls.option_texts[raw.lower().rstrip(".")]
        # "A", "(A)", "A.", "A) text", "Option A: text", "a"
        m = re.match(r"^(?:option|answer|choice)?\s*[(\[]?\s*([A-Za-z])\s*(?:[)\].:]|$|\s)", raw, re.I)
        if m and m.group(1).upper() in cls.allowed:
            return m.group(1).upper()
        raise ValueError(f"answer_choice {value!r} is not one of {', '.join(cls.allowed)}")

    @classmethod
    def for_options(cls, options: Mapping[str, str]) -> type[ChoiceOutput]:
        namespace = {
            "allowed": tuple(options),
            "option_texts": {text.strip().lower().rstrip("."): k for k, text in options.items()},
            "__module__": __name__,
        }
        return type("ChoiceOutput", (cls,), namespace)


def insufficient_text(searched: Sequence[str]) -> str:
    """The plain-words abstention of the evidence gate, naming what was searched."""
    what = "; ".join(f"“{q}”" for q in searched[:3]) if searched else "PubMed and the local index"
    return INSUFFICIENT_EVIDENCE_TEXT.format(searched=what)


def find_insufficient_option(options: Mapping[str, str]) -> str | None:
    """The letter of an "insufficient information" style option (MedRGB), if any."""
    return next((k for k, text in options.items() if _INSUFFICIENT_RE.search(text)), None)


# --- the answerer -------------------------------------------------------------------------------------


class Answerer:
    """Evidence -> :class:`Answer`. ``llm=None`` runs extractive only (no model configured)."""

    def __init__(
        self,
        llm: LLMClient | None,
        settings: AnswerSettings | None = None,
        *,
        today: Callable[[], datetime.date] = datetime.date.today,
    ) -> None:
        self.llm = llm
        self.settings = settings or AnswerSettings()
        self._today = today
        self._free_prompt = load_prompt("answer_patient")
        self._choice_prompt = load_prompt("answer_choice")

    def current_year(self) -> int:
        """The year answers are written in (evidence age is counted from it)."""
        return self._today().year

    async def answer(
        self,
        question: str,
        docs: Sequence[EvidenceDoc],
        context: PassageContext | None = None,
        *,
        options: Mapping[str, str] | None = None,
        answer_type: Literal["free", "choice"] = "free",
        allow_insufficient: bool = False,
        verdict: EvidenceVerdict | None = None,
        searched: Sequence[str] = (),
        language: str = "English",
        concepts: Sequence[str] = (),
    ) -> Answer:
        """The answer; ``verdict``: the evidence gate's (``app.trust``), ``none`` answers
        ``insufficient_evidence`` without the LLM, naming the ``searched`` queries."""
        evidence, done = await self._prepare(
            question, docs, context, options, answer_type, allow_insufficient, verdict, searched, concepts
        )
        if done is not None:
            return done
        assert self.llm is not None  # _prepare answered every case without one
        try:
            result = await self.llm.complete_text(
                self._free_messages(question, evidence, language),
                prompt_version=self._free_prompt.id,
                max_tokens=self.settings.max_tokens,
                temperature=0.0,
            )
        except LLMError as exc:
            warning = f"{WARN_LLM_UNAVAILABLE} ({type(exc).__name__})"
            return await self._extractive(
                evidence, warning, question=question, verdict=verdict, concepts=concepts
            )
        answer = await self._free_answer(evidence, result, question, concepts)
        return dataclasses.replace(answer, verdict=verdict)

    async def answer_stream(
        self,
        question: str,
        docs: Sequence[EvidenceDoc],
        context: PassageContext | None = None,
        *,
        options: Mapping[str, str] | None = None,
        answer_type: Literal["free", "choice"] = "free",
        allow_insufficient: bool = False,
        verdict: EvidenceVerdict | None = None,
        searched: Sequence[str] = (),
        language: str = "English",
        concepts: Sequence[str] = (),
    ) -> AsyncGenerator[str | Answer, None]:
        """:meth:`answer`, streamed: ``str`` deltas of the model's raw text, then the checked :class:`Answer`.

        Closing the generator early (client gone) closes the LLM stream, which stops the generation.
        """
        evidence, done = await self._prepare(
            question, docs, context, options, answer_type, allow_insufficient, verdict, searched, concepts
        )
        if done is not None:
            if done.text:
                yield done.text
            yield done
            return
        assert self.llm is not None
        messages = self._free_messages(question, evidence, language)
        kwargs: dict[str, Any] = {
            "prompt_version": self._free_prompt.id,
            "max_tokens": self.settings.max_tokens,
            "temperature": 0.0,
        }
        sent = 0
        final: Answer
        try:
            stream_text = getattr(self.llm, "stream_text", None)
            if stream_text is None:  # a client that cannot stream: its whole completion as one delta
                result: LLMResult[str] = await self.llm.complete_text(messages, **kwargs)
                if result.value:
                    sent += 1
                    yield result.value
            else:
                async with aclosing(stream_text(messages, **kwargs)) as stream:
                    async for delta in stream:
                        sent += 1
                        yield delta
                    result = stream.result
        except LLMError as exc:
            warning = WARN_LLM_INTERRUPTED if sent else WARN_LLM_UNAVAILABLE
            final = await self._extractive(
                evidence, f"{warning} ({type(exc).__name__})", question=question, concepts=concepts
            )
        else:
            final = await self._free_answer(evidence, result, question, concepts)
        final = dataclasses.replace(final, verdict=verdict)
        if not sent and final.text:
            yield final.text
        yield final

    async def _prepare(
        self,
        question: str,
        docs: Sequence[EvidenceDoc],
        context: PassageContext | None,
        options: Mapping[str, str] | None,
        answer_type: Literal["free", "choice"],
        allow_insufficient: bool,
        verdict: EvidenceVerdict | None = None,
        searched: Sequence[str] = (),
        concepts: Sequence[str] = (),
    ) -> tuple[EvidenceContext, Answer | None]:
        """The evidence, and the final answer for every case but a free-text answer from the LLM."""
        choice = answer_type == "choice" or bool(options)
        if choice and not options:
            raise ValueError("a choice question needs options")
        evidence = build_evidence_context(
            docs,
            context,
            max_passages=self.settings.max_passages,
            max_chars=self.settings.max_context_chars,
        )
        if not evidence.blocks or (verdict is not None and verdict.abstain):
            # Never ask the model without evidence (it would answer from its own memory, uncited), nor
            # with evidence the gate found unrelated: unrelated evidence is not evidence.
            letter = find_insufficient_option(options) if (options and allow_insufficient) else None
            text = INSUFFICIENT_TEXT
            if verdict is not None and verdict.abstain:
                text = insufficient_text(searched)
            insufficient = Answer(
                text, "insufficient_evidence", letter, None, (), 0, None, None, 0, 0, (), verdict
            )
            return evidence, insufficient
        if options:
            return evidence, dataclasses.replace(
                await self._choice(question, evidence, options, allow_insufficient, concepts), verdict=verdict
            )
        if self.llm is None:
            return evidence, await self._extractive(
                evidence, WARN_NO_LLM, question=question, verdict=verdict, concepts=concepts
            )
        return evidence, None

    def _free_messages(self, question: str, evidence: EvidenceContext, language: str) -> list[Message]:
        return self._free_prompt.render(
            question=question, context=evidence.text, current_year=self._today().year, language=language
        )

    async def _free_answer(
        self, evidence: EvidenceContext, result: LLMResult[str], question: str, concepts: Sequence[str] = ()
    ) -> Answer:
        """The model's free text, checked: invalid citations cut and counted, garbage -> extractive."""
        text, order, removed = verify_citations(strip_reasoning(result.value), evidence.citations)
        if _is_garbage(text):
            return await self._extractive(evidence, WARN_GARBAGE, question=question, concepts=concepts)
        warnings: list[str] = []
        if removed:
            warnings.append(f"removed {removed} citation(s) to sources that were not in the evidence")
        if not order:
            warnings.append("the answer cites no source")
        return Answer(
            text=text,
            mode="llm",
            answer_choice=None,
            reasoning=None,
            citations=tuple(evidence.citations[i] for i in order),
            citations_removed=removed,
            model=result.model,
            prompt_id=result.prompt_version,
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            warnings=tuple(warnings),
        )

    async def _extractive(
        self,
        evidence: EvidenceContext,
        warning: str,
        *,
        question: str,
        choice: bool = False,
        verdict: EvidenceVerdict | None = None,
        concepts: Sequence[str] = (),
    ) -> Answer:
        """One line per study that answers the question (what it was, then its best sentences), studies far
        less similar to the question than the best one left out (``extractive_min_relevance``), the study
        that answers best first, then strongest design and most recent first; the round-robin top sentences
        when no sentence matches the question."""
        year = self._today().year

        def select() -> tuple[str, tuple[str, ...], str]:
            text, cited = extractive_answer(
                evidence,
                self.settings.extractive_sentences,
                question=question,
                studies=self.settings.extractive_studies,
                current_year=year,
                # The question's recognised concepts find the sentences its lay words miss, and keep out
                # studies that share only everyday words with it.
                concepts=concepts,
                old_after=self.settings.old_evidence_years,
                min_relevance=self.settings.extractive_min_relevance,
            )
            if text != NOT_ADDRESSED:
                return text, cited, WARN_EXTRACTIVE.format(n=len(cited))
            # Nothing shares the question's words: the best-ranked sentences, said to be only that.
            text, cited = extractive_answer(evidence, self.settings.extractive_sentences)
            return text, cited, WARN_EXTRACTIVE_UNMATCHED

        # Splitting and scoring every study's sentences is CPU (tens to hundreds of ms for ten studies):
        # off the event loop, like the passage stage, so one answer never stalls the other requests.
        text, cited, how = await asyncio.to_thread(select)
        warnings = (WARN_NO_CHOICE_LLM, warning, how) if choice else (warning, how)
        return Answer(
            text=text,
            mode="extractive",
            answer_choice=None,
            reasoning=None,
            citations=tuple(evidence.citations[i] for i in cited if i in evidence.citations),
            citations_removed=0,
            model=None,
            prompt_id=None,
            prompt_tokens=0,
            completion_tokens=0,
            warnings=warnings,
            verdict=verdict,
        )

    async def _choice(
        self,
        question: str,
        evidence: EvidenceContext,
        options: Mapping[str, str],
        allow_insufficient: bool,
        concepts: Sequence[str] = (),
    ) -> Answer:
        # Every extractive fallback keeps the question's concepts: they keep unrelated studies out.
        if self.llm is None:
            return await self._extractive(
                evidence, WARN_LLM_UNAVAILABLE, question=question, choice=True, concepts=concepts
            )
        insufficient = find_insufficient_option(options) if allow_insufficient else None
        note = (
            f"\n4. If the EVIDENCE is not enough to choose an answer, choose {insufficient}."
            if insufficient
            else ""
        )
        prompt = self._choice_prompt
        messages = prompt.render(
            question=question,
            options="\n".join(f"{k}. {v}" for k, v in options.items()),
            context=evidence.text,
            insufficient_note=note,
        )
        schema = ChoiceOutput.for_options(options)
        try:
            result = await self.llm.complete_json(
                messages,
                schema,
                prompt_version=prompt.id,
                max_tokens=self.settings.max_tokens,
                temperature=0.0,
            )
        except LLMOutputInvalid as exc:
            # The LLM layer already retried; a still-invalid letter is reported, never guessed.
            return Answer(
                text="",
                mode="llm",
                answer_choice=None,
                reasoning=None,
                citations=(),
                citations_removed=0,
                model=exc.model,
                prompt_id=prompt.id,
                prompt_tokens=0,
                completion_tokens=0,
                warnings=(WARN_UNPARSEABLE,),
            )
        except LLMError as exc:
            warning = f"{WARN_LLM_UNAVAILABLE} ({type(exc).__name__})"
            return await self._extractive(
                evidence, warning, question=question, choice=True, concepts=concepts
            )
        letter = result.value.answer_choice
        reasoning, order, removed = verify_citations(
            strip_reasoning(result.value.step_by_step_thinking), evidence.citations
        )
        # Cited sources when the reasoning names any, else every source the model was shown.
        cited = order or list(evidence.citations)
        warnings = (
            ["the evidence was judged insufficient to choose an answer"] if letter == insufficient else []
        )
        if removed:
            warnings.append(f"removed {removed} citation(s) to sources that were not in the evidence")
        return Answer(
            text=f"{letter}. {options[letter]}",
            mode="llm",
            answer_choice=letter,
            reasoning=reasoning or None,
            citations=tuple(evidence.citations[i] for i in cited),
            citations_removed=removed,
            model=result.model,
            prompt_id=result.prompt_version,
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            warnings=tuple(warnings),
        )
