"""The evidence gate's signals: how well one source's evidence matches a question, measured once each.

:func:`evidence_signals` measures a source's evidence (:func:`text_signals` a source of texts alone), and
:func:`~app.trust._verdict.assess_evidence` turns the signals into a verdict:

* ``dense_top``: the best dense (bi-encoder) similarity between the question and a retrieved document;
* ``rerank_top``: the best cross-encoder score of a passage, only when a cross-encoder is configured and the
  settings give it a threshold;
* ``tier``: which Boolean query matched first, as Adapt-E reports it
  (:attr:`~retrieval.search.AdaptEResult.matched_tier`): ``strict`` (a conjunction of the question's
  concepts), ``relaxed`` (one concept, or the OR of them), ``generic`` (a lone MeSH heading that is none of
  the question's concepts: the rewriter's last resort), ``none``;
* ``coverage``: the share of the question's concepts and other content words found in the top documents'
  titles and abstracts;
* ``absent_terms``: rare words of the question (outside the rewriter's vocabulary) that not one document of
  the source contains (one ``"word"[tiab]`` count each, :func:`rare_words`, looked up by
  :class:`~app.trust._counts.AbsenceCounter`): a drug that does not exist, a procedure the literature has
  never described; ``absent_share``: their share of the question's
  coverage units (a nonexistent drug asked about in four words weighs more than an odd word in a long story);
* ``named_concepts``: the most of the question's concepts that one study the relevance decision kept names
  (set when the evidence is weighed: :func:`~app.trust._weigh.weigh_evidence`);
* ``absent_phrases``: two-word phrases of the question whose words the evidence contains, but never together
  in any document of the source (one ``"w1 w2*"[tiab]`` count each, :func:`phrase_candidates`): "face
  transplant", "tongue splitting", a procedure the literature has not described although its words are
  everywhere.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from core import QUESTION_FILLER, STOPWORDS, common_english, light_stem, words
from retrieval.evidence import EvidenceDoc
from retrieval.passages import PassageContext
from retrieval.search import AdaptEResult
from retrieval.understand import capitalised_words, looks_like_injection

__all__ = [
    "EvidenceSignals",
    "Tier",
    "coverage_units",
    "evidence_signals",
    "gate_question_words",
    "phrase_candidates",
    "rare_words",
    "text_signals",
]

Tier = Literal["strict", "relaxed", "generic", "none", "unknown"]


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
    named_concepts: int = 0  # the most of the question's concepts one kept study names (relevance decision)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("dense_top", "rerank_top", "coverage", "absent_share"):
            if out[key] is not None:
                out[key] = round(float(out[key]), 4)
        return out


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
    still passes each query through the PHI check (:meth:`~app.trust._counts.AbsenceCounter.count`)."""
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
    tier = adapte.matched_tier
    # "Strict" vouches for a question whose clinical concepts all matched; a question that names nothing
    # clinical by a term (Scope.health: "how do I fix my bike's brakes", "treat a rusty pan") AND-s plain
    # or everyday words, which proves nothing.
    return "relaxed" if tier == "strict" and not health else tier


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
    # A document the dense arm did not return is no more similar than its last hit: that bound, not
    # "unmeasured" (which skipped the similarity check when only Boolean hits were kept).
    if not scores and docs and dense:
        scores = [min(s for _, s in dense)]
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
