"""The relevance and sufficiency gate: does the retrieved evidence answer the question? One verdict an answer.

Every answer path (the LLM, the extractive answer, each source's answer across sources) is decided here
before any answer is written: :func:`evidence_signals` measures the evidence, :func:`assess_evidence` turns
the signals into a verdict with the thresholds of :class:`~app.settings.GateSettings`:

* ``dense_top``: the best dense (bi-encoder) similarity between the question and a retrieved document;
* ``rerank_top``: the best cross-encoder score of a passage, only when a cross-encoder is configured and the
  settings give it a threshold;
* ``tier``: which Boolean query matched first: ``strict`` (a conjunction of the question's concepts),
  ``relaxed`` (one concept, or the OR of them), ``generic`` (the last-resort ``"Neoplasms"[mh]``), ``none``;
* ``coverage``: the share of the question's concepts and other content words found in the top documents'
  titles and abstracts;
* ``absent_terms``: rare words of the question (outside the rewriter's vocabulary) that not one document of
  the source contains (one ``"word"[tiab]`` count each, :func:`rare_words`): a drug that does not exist,
  a procedure the literature has never described; ``absent_share``: their share of the question's
  coverage units (a nonexistent drug asked about in four words weighs more than an odd word in a long story);
* ``absent_phrases``: two-word phrases of the question whose words the evidence contains, but never together
  in any document of the source (one ``"w1 w2*"[tiab]`` count each, :func:`phrase_candidates`): "face
  transplant", "tongue splitting", a procedure the literature has not described although its words are
  everywhere.

Verdicts: ``none`` (below the thresholds: the answer is ``insufficient_evidence``, no citations, no LLM call),
``weak``, ``moderate``, ``strong``. The thresholds are calibrated on the dev split of the world's gold sets
for the offline models (``cometa eval calibrate-gate``); recalibrate for MedCPT or your cross-encoder.
"""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from core import QUESTION_FILLER, STOPWORDS, common_english, light_stem, words
from retrieval.evidence import EvidenceDoc
from retrieval.passages import PassageContext
from retrieval.search import AdaptEResult
from retrieval.understand import capitalised_words, looks_like_injection

from .schemas import Verdict
from .settings import GateSettings

log = logging.getLogger("cometa.gate")

__all__ = [
    "DESIGN_RANK",
    "INSUFFICIENT_EVIDENCE_TEXT",
    "EvidenceSignals",
    "EvidenceVerdict",
    "StudyGrade",
    "Tier",
    "Verdict",
    "assess_evidence",
    "common_english",
    "coverage_units",
    "evidence_signals",
    "gate_checks",
    "gate_question_words",
    "grade_study",
    "phrase_candidates",
    "rare_words",
    "text_signals",
]

Tier = Literal["strict", "relaxed", "generic", "none", "unknown"]

INSUFFICIENT_EVIDENCE_TEXT = (
    "I could not find studies that answer this question, so I cannot give an answer from the literature. "
    "Here is what I searched: {searched}. Please discuss the question with your care team."
)

_GENERIC_QUERY = re.compile(r'^\(?\s*"(Neoplasms|Neoplasm Metastasis)"\[mh\]\s*\)?$', re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class EvidenceSignals:
    """What the gate measured about one source's evidence for one question."""

    documents: int
    dense_top: float | None  # None: no dense arm (or no hit among the documents)
    rerank_top: float | None  # None: no cross-encoder score
    tier: Tier
    coverage: float  # 0..1; 1.0 when the question has no content word to look for
    absent_terms: int = 0  # rare words of the question that no document of the whole source contains
    absent_share: float = 0.0  # absent_terms over the question's coverage units (0..1)
    absent_phrases: int = 0  # phrases whose words the evidence has, but no document of the source together
    absent_technical: int = 0  # of absent_terms, those that are not English words (a drug name, a procedure)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("dense_top", "rerank_top", "coverage", "absent_share"):
            if out[key] is not None:
                out[key] = round(float(out[key]), 4)
        return out


@dataclass(frozen=True, slots=True)
class EvidenceVerdict:
    verdict: Verdict
    signals: EvidenceSignals
    reasons: tuple[str, ...]  # why the verdict is what it is, in plain words

    @property
    def abstain(self) -> bool:
        return self.verdict == "none"

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "signals": self.signals.to_json(), "reasons": list(self.reasons)}


def gate_question_words(question: str) -> set[str]:
    """The stems the coverage signal looks for: the question's content words, fillers left out."""
    return {
        light_stem(w)
        for w in words(question)
        if w.isalpha() and len(w) > 2 and w not in STOPWORDS and w not in QUESTION_FILLER
    }


# Punctuation ends a phrase: "placebo (dummy treatment)" holds no phrase "placebo dummy".
_PHRASE_BREAK = re.compile(r"[^\w\s'’-]+")


def rare_words(
    question: str, is_known: Callable[[str], bool], *, limit: int = 4, min_length: int = 5
) -> list[str]:
    """Words of ``question`` worth a document-frequency check: not in the vocabulary (``is_known``) nor
    everyday English (:func:`common_english`, which holds the common first names and surnames), not
    fillers, at least ``min_length`` letters, never written with a capital (an unknown capitalised word may
    be a name the PHI scrubber missed: it is not sent out); the longest first, at most ``limit``. The caller
    still passes each query through the PHI check (the pipeline's ``_absent``)."""
    capitalised = capitalised_words(question)
    found = {
        w
        for w in words(question)
        if w.isalpha()
        and w not in capitalised
        and len(w) >= min_length
        and w not in STOPWORDS
        and w not in QUESTION_FILLER
        and not is_known(w)
        and w not in common_english()
    }
    return sorted(found, key=lambda w: (-len(w), w))[:limit]


def phrase_candidates(
    question: str, is_known: Callable[[str], bool], everyday: frozenset[str] = frozenset(), *, limit: int = 4
) -> list[str]:
    """Two-word phrases of ``question`` worth a phrase-count check: adjacent words within one clause, each
    a vocabulary word (``is_known``: names, streets and towns are not; what leaves is the clinical
    vocabulary), of at least three letters, neither a stopword, a question filler, an everyday word
    (``everyday``: the lexicon's common words) nor written with a capital; in question order, at most
    ``limit``. Instructions injected into the question are left out. The caller still passes each query
    through the PHI check (a vocabulary word can be a name: "mary")."""
    capitalised = capitalised_words(question)

    def usable(w: str) -> bool:
        return (
            w.isalpha()
            and len(w) >= 3
            and w not in STOPWORDS
            and w not in QUESTION_FILLER
            and w not in everyday
            and w not in capitalised
            and is_known(w)
        )

    out: list[str] = []
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", question):
        if looks_like_injection(sentence):
            continue
        for clause in _PHRASE_BREAK.split(sentence):
            tokens = words(clause)
            for a, b in itertools.pairwise(tokens):
                phrase = f"{a} {b}"
                if usable(a) and usable(b) and phrase not in out:
                    out.append(phrase)
    return out[:limit]


def coverage_units(
    question: str, concepts: Iterable[tuple[str, str | None]] = (), lay_words: frozenset[str] = frozenset()
) -> list[frozenset[str]]:
    """What the evidence must mention, each unit a set of alternative stems: one unit per recognised concept
    (its words and its MeSH heading's words), then one per remaining content word of the question. Words
    of the lay lexicon (``lay_words``: "came back", "whipple") are covered through their concept only."""
    # Instructions injected into the question are text to answer around, not words the studies must contain.
    question = " ".join(s for s in re.split(r"(?<=[.!?])\s+|\n+", question) if not looks_like_injection(s))
    units: list[frozenset[str]] = []
    covered: set[str] = set()
    for text, mesh in concepts:
        stems = {light_stem(w) for w in words(f"{text} {mesh or ''}") if w.isalpha() and len(w) > 2}
        stems -= {light_stem(w) for w in STOPWORDS}
        if stems:
            units.append(frozenset(stems))
            covered |= stems
    lay = {light_stem(w) for w in lay_words}
    for stem in sorted(gate_question_words(question)):
        if stem not in covered and stem not in lay:
            units.append(frozenset({stem}))
    return units


def _doc_stems(doc: EvidenceDoc) -> set[str]:
    text = " ".join([doc.title, *(u.text for u in doc.text_units if u.kind == "abstract")])
    return {light_stem(w) for w in words(text) if w.isalpha()}


def _tier(adapte: AdaptEResult | None, health: bool = True) -> Tier:
    if adapte is None:
        return "unknown"
    tier = _matched_tier(adapte)
    # "Strict" vouches for a question whose clinical concepts all matched; a question that names nothing
    # clinical by a term (Scope.health: "how do I fix my bike's brakes", "treat a rusty pan") AND-s plain
    # or everyday words, which proves nothing.
    return "relaxed" if tier == "strict" and not health else tier


def _matched_tier(adapte: AdaptEResult) -> Tier:
    used = [t for t in adapte.tiers if t.used and t.count > 0 and t.error is None]
    if not used:
        return "none"
    first = used[0]
    if first.kind == "union":
        # One ESearch ran every tier but the loosest; the local check says which tier would have matched.
        if adapte.strictest_local is None:
            return "relaxed"
        return "strict" if " AND " in adapte.strictest_local else "relaxed"
    if _GENERIC_QUERY.match(first.query.strip()):
        return "generic"
    if first.kind == "ladder" and " AND " in first.query:
        return "strict"
    return "relaxed"


def evidence_signals(
    question: str,
    docs: Sequence[EvidenceDoc],
    *,
    adapte: AdaptEResult | None = None,
    dense: Iterable[tuple[str, float]] = (),
    context: PassageContext | None = None,
    top_docs: int = 5,
    concepts: Iterable[tuple[str, str | None]] = (),
    lay_words: frozenset[str] = frozenset(),
    absent_terms: int = 0,
    absent_phrases: int = 0,
    absent_technical: int = 0,
    health: bool = True,
) -> EvidenceSignals:
    """The signals of ``docs`` (ranked) for ``question``. ``dense``: (pmid, similarity) of the dense arm;
    ``adapte``: the Boolean arm's result; ``context``: passages carrying a ``rerank`` score; ``concepts``:
    the plan's recognised (text, MeSH) concepts and ``lay_words`` for :func:`coverage_units`;
    ``absent_terms`` / ``absent_phrases``: the source-wide counts (:func:`rare_words`,
    :func:`phrase_candidates`); ``health``: whether the scope check found a health concept or word in the
    question (``Scope.health``)."""
    pmids = {d.pmid for d in docs}
    scores = [s for pmid, s in dense if pmid in pmids]
    rerank = [p.scores["rerank"] for p in (context.passages if context else ()) if "rerank" in p.scores]
    units = coverage_units(question, concepts, lay_words)
    coverage = _coverage_share(units, [_doc_stems(d) for d in docs[:top_docs]])
    return EvidenceSignals(
        documents=len(docs),
        dense_top=max(scores) if scores else None,
        rerank_top=max(rerank) if rerank else None,
        tier=_tier(adapte, health),
        coverage=coverage,
        absent_terms=absent_terms,
        absent_share=min(1.0, absent_terms / len(units)) if units and absent_terms else 0.0,
        absent_phrases=absent_phrases,
        absent_technical=absent_technical,
    )


def _coverage_share(units: Sequence[frozenset[str]], docs: Sequence[set[str]]) -> float:
    """The share of ``units`` the documents' stems (``docs``) mention together; 1.0 with nothing to look
    for, 0.0 without documents."""
    if not units or not docs:
        return 1.0 if docs else 0.0
    seen: set[str] = set().union(*docs)
    return sum(1 for unit in units if unit & seen) / len(units)


def text_signals(
    question: str,
    texts: Sequence[str],
    *,
    top_docs: int = 5,
    concepts: Iterable[tuple[str, str | None]] = (),
    lay_words: frozenset[str] = frozenset(),
) -> EvidenceSignals:
    """The signals of a source that has only texts (an institutional collection, a federated node's
    evidence): coverage of the question by its top ``texts``; no dense similarity, no Boolean tier."""
    units = coverage_units(question, concepts, lay_words)
    stems = [{light_stem(w) for w in words(text) if w.isalpha()} for text in texts[:top_docs]]
    return EvidenceSignals(len(texts), None, None, "unknown", _coverage_share(units, stems))


_Check = Callable[[EvidenceSignals, GateSettings], str | None]


def _dense_floor(signals: EvidenceSignals, settings: GateSettings) -> str | None:
    dense = signals.dense_top
    floor = (
        min(settings.min_dense_strict, settings.min_dense) if signals.tier == "strict" else settings.min_dense
    )
    if dense is not None and dense < floor:
        return f"the closest study is only loosely related (similarity {dense:.2f})"
    return None


def _coverage(signals: EvidenceSignals, settings: GateSettings) -> str | None:
    if signals.coverage < settings.min_coverage:
        return f"the studies mention {signals.coverage:.0%} of the question's words"
    return None


def _generic_tier(signals: EvidenceSignals, settings: GateSettings) -> str | None:
    dense = signals.dense_top
    if signals.tier in ("generic", "none") and (dense is None or dense < settings.min_dense_generic):
        return "only the generic last-resort search matched"
    return None


def _absent_words(signals: EvidenceSignals, settings: GateSettings) -> str | None:
    # A word the literature has never used abstains unless the evidence is close anyway (an odd lay word in
    # a long story), but never when it is a large share of what the question asks (a nonexistent drug
    # compared with a real one: the real one makes the similarity high).
    dense = signals.dense_top
    close = dense is not None and dense >= settings.absent_max_dense
    if signals.absent_terms and (not close or signals.absent_share >= settings.absent_min_share):
        return f"{signals.absent_terms} word(s) of the question appear in no study at all"
    return None


def _absent_technical(signals: EvidenceSignals, settings: GateSettings) -> str | None:
    # A technical term (not an English word) that no study of the whole source uses is what the question is
    # about (an unknown drug compared with a known one): close evidence about the known one does not answer.
    dense, limit = signals.dense_top, settings.absent_technical_max_dense
    if signals.absent_technical and limit > -1 and (dense is None or dense < limit):
        return f"{signals.absent_technical} term(s) of the question appear in no study at all"
    return None


def _absent_phrases(signals: EvidenceSignals, settings: GateSettings) -> str | None:
    # Only weighed against a similarity: without one, a lay phrase the literature words differently
    # ("pancreas mass" for "pancreatic mass") is no reason to abstain.
    dense = signals.dense_top
    if signals.absent_phrases and dense is not None and dense < settings.absent_phrase_max_dense:
        return f"{signals.absent_phrases} phrase(s) of the question appear together in no study"
    return None


def _rerank(signals: EvidenceSignals, settings: GateSettings) -> str | None:
    rerank = signals.rerank_top
    if settings.min_rerank is not None and rerank is not None and rerank < settings.min_rerank:
        return f"the best passage scores {rerank:.2f} with the cross-encoder"
    return None


# Each abstention check and the GateSettings fields it reads: assess_evidence abstains when any check gives
# a reason; the calibration evaluates each check once per distinct value of its own fields.
_CHECKS: tuple[tuple[str, tuple[str, ...], _Check], ...] = (
    ("dense", ("min_dense", "min_dense_strict"), _dense_floor),
    ("coverage", ("min_coverage",), _coverage),
    ("generic", ("min_dense_generic",), _generic_tier),
    ("absent_words", ("absent_max_dense", "absent_min_share"), _absent_words),
    ("absent_technical", ("absent_technical_max_dense",), _absent_technical),
    ("absent_phrases", ("absent_phrase_max_dense",), _absent_phrases),
    ("rerank", ("min_rerank",), _rerank),
)


def gate_checks() -> tuple[tuple[str, tuple[str, ...], _Check], ...]:
    """The gate's abstention checks: (name, the GateSettings fields it reads, check). A check returns the
    reason to abstain in plain words, or None. :func:`assess_evidence` abstains when any gives a reason."""
    return _CHECKS


def assess_evidence(signals: EvidenceSignals, settings: GateSettings) -> EvidenceVerdict:
    """The verdict for ``signals`` under ``settings``' thresholds (the one gate every answer path uses)."""
    if not settings.enabled:
        return EvidenceVerdict("weak" if signals.documents else "none", signals, ("the gate is off",))
    if not signals.documents:
        return EvidenceVerdict("none", signals, ("no documents were found",))
    reasons = [reason for _, _, check in _CHECKS if (reason := check(signals, settings)) is not None]
    if reasons:
        return EvidenceVerdict("none", signals, tuple(reasons))
    dense = signals.dense_top
    strong_dense = dense is None or dense >= settings.strong_dense
    if signals.tier == "strict" and strong_dense and signals.coverage >= settings.strong_coverage:
        return EvidenceVerdict(
            "strong", signals, ("a strict search matched and the studies cover the question",)
        )
    if strong_dense or signals.coverage >= settings.strong_coverage:
        return EvidenceVerdict("moderate", signals, ("related studies were found",))
    return EvidenceVerdict("weak", signals, ("the studies are only partly related to the question",))


# --- evidence grading ---------------------------------------------------------------------------------

# Strength of design, strongest first (the order the extractive answer and tie-breaks use).
DESIGN_RANK: dict[str, int] = {
    "meta-analysis": 0,
    "systematic review": 1,
    "randomised trial": 2,
    "clinical trial": 3,
    "guideline": 3,
    "cohort study": 4,
    "case-control study": 5,
    "cross-sectional study": 6,
    "review": 6,
    "study": 7,
    "case report": 8,
}
_PT_DESIGN: tuple[tuple[str, str], ...] = (
    ("meta-analysis", "meta-analysis"),
    ("systematic review", "systematic review"),
    ("randomized controlled trial", "randomised trial"),
    ("practice guideline", "guideline"),
    ("guideline", "guideline"),
    ("clinical trial", "clinical trial"),
    ("observational study", "cohort study"),
    ("case reports", "case report"),
    ("review", "review"),
)
_TEXT_DESIGN: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bmeta-?analys[ie]s\b", re.I), "meta-analysis"),
    (re.compile(r"\bsystematic(ally)? review", re.I), "systematic review"),
    (
        re.compile(
            r"\brandomi[sz]ed\b.{0,60}\b(trial|study)\b|\b(trial|patients) were randomi[sz]ed\b|"
            r"\brandomly (assigned|allocated)\b",
            re.I,
        ),
        "randomised trial",
    ),
    (re.compile(r"\bcohort\b", re.I), "cohort study"),
    (re.compile(r"\bcase-control\b|\bcase control study\b", re.I), "case-control study"),
    (re.compile(r"\bcross-sectional\b", re.I), "cross-sectional study"),
    (
        re.compile(r"\bcase report\b|\bwe (report|describe|present) (a|an|the) (case|patient)\b", re.I),
        "case report",
    ),
)
_PATIENTS = re.compile(
    r"\b(\d{1,3}(?:,\d{3})+|\d{2,6})\s+(?:consecutive\s+|eligible\s+|adult\s+|pediatric\s+|paediatric\s+|"
    r"newly diagnosed\s+|healthy\s+|pregnant\s+)?(patients|participants|subjects|women|men|children|adults|"
    r"infants|individuals|people|persons|cases|volunteers|mothers|neonates|smokers)\b",
    re.I,
)
_N_EQUALS = re.compile(r"\b[nN]\s*=\s*(\d{2,6})\b")


@dataclass(frozen=True, slots=True)
class StudyGrade:
    """What a study was: its design (from publication types, else the abstract's wording), year and size."""

    design: str
    rank: int  # DESIGN_RANK: 0 = strongest
    year: int | None
    patients: int | None  # the first sample size the abstract states, when it states one

    def age(self, current_year: int) -> int | None:
        return current_year - self.year if self.year is not None else None

    def describe(self) -> str:
        """``"2019 randomised trial, 344 patients"`` / ``"study, year unknown"``."""
        head = f"{self.year} {self.design}" if self.year is not None else f"{self.design}, year unknown"
        return f"{head}, {self.patients:,} patients" if self.patients else head


def grade_study(doc: EvidenceDoc) -> StudyGrade:
    """The study's design (real publication types first, then cues in the title and abstract), its year and
    the number of patients when the abstract states it."""
    design = None
    types = " | ".join(doc.publication_types).lower()
    for needle, name in _PT_DESIGN:
        if needle in types:
            design = name
            break
    text = " ".join([doc.title, *(u.text for u in doc.text_units if u.kind == "abstract")])
    if design is None or design in ("review", "clinical trial"):
        for pattern, name in _TEXT_DESIGN:
            if pattern.search(text):
                if design is None or DESIGN_RANK[name] < DESIGN_RANK[design]:
                    design = name
                break
    design = design or "study"
    patients = None
    m = _PATIENTS.search(text) or _N_EQUALS.search(text)
    if m is not None:
        value = int(m.group(1).replace(",", ""))
        if not 1900 <= value <= 2100 or m.re is _N_EQUALS:  # "in 2012 patients ..." is a year, not a size
            patients = value
    return StudyGrade(design, DESIGN_RANK[design], doc.year, patients)
