"""The evidence gate's count lookups: rare words and phrases of a question that no record of the source holds.

:class:`AbsenceCounter` picks the question's rare words (:func:`~app.trust._signals.rare_words`) and phrases
(:func:`~app.trust._signals.phrase_candidates`), reads the fetched evidence first, and sends one count-only
ESearch for each that the evidence lacks and that passes the ladder's PHI check: the ``absent_terms``,
``absent_technical`` and ``absent_phrases`` signals.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence

from core import common_english, light_stem, words
from retrieval.embed import DenseHit
from retrieval.eutils import EutilsClient
from retrieval.evidence import EvidenceDoc, EvidenceSet
from retrieval.ncbi import EutilsError
from retrieval.understand import (
    DeterministicRewriter,
    PhiLeakError,
    ScrubResult,
    Understanding,
    assert_no_phi,
    scrub_any_case,
)

from ._settings import GateSettings
from ._signals import phrase_candidates, rare_words

__all__ = ["AbsenceCounter"]


class AbsenceCounter:
    """The gate's source-wide counts of a question's rare words and phrases, with ``client``'s ESearch and
    ``settings``' limits. Holds the everyday words it builds once per rewriter (:meth:`everyday_words`)."""

    def __init__(self, settings: GateSettings, client: EutilsClient) -> None:
        self.settings = settings
        self.client = client
        self._everyday: tuple[object, frozenset[str], frozenset[str]] | None = None

    def everyday_words(self, rewriter: DeterministicRewriter) -> tuple[frozenset[str], frozenset[str]]:
        """(everyday English plus the rewriter's common words and stopwords, the latter two alone): large
        unions, built once per rewriter rather than per question on the event loop. The first is empty when
        :func:`~core.common_english` is."""
        cached = self._everyday
        if cached is None or cached[0] is not rewriter:
            everyday = frozenset(rewriter.lexicon.common_words | rewriter.lexicon.stopwords)
            english = common_english()
            cached = self._everyday = (rewriter, english | everyday if english else frozenset(), everyday)
        return cached[1], cached[2]

    def phi_found(
        self, question: str, understanding: Understanding, rewriter: DeterministicRewriter
    ) -> tuple[ScrubResult, ScrubResult]:
        """What a text built from ``question`` is checked against before it leaves this service: the PHI
        the scrubber found in the question (``understanding.phi``) and what its name cues find in any casing
        (:func:`~retrieval.understand.scrub_any_case`; without everyday English every cue match counts)."""
        plain, _ = self.everyday_words(rewriter)
        # A name starts with no everyday word: "my doctor suggests risedronate" names no doctor "Suggests".
        return understanding.phi, scrub_any_case(question, plain, rewriter.is_known_word)

    def forget(self) -> None:
        """Drop the everyday words built so far (the next count builds them again)."""
        self._everyday = None

    async def count(
        self,
        understanding: Understanding,
        evidence: EvidenceSet,
        dense: Sequence[DenseHit],
        rewriter: DeterministicRewriter,
        api_key: str | None,
        gate_documents: int | None = None,
    ) -> tuple[int, int, int]:
        """Rare words of the question that not one PubMed record contains, those of them that are not English
        (technical terms), and phrases of the question whose words the evidence contains but not one record
        together (the evidence gate's signals).

        A word or phrase the fetched evidence already contains needs no lookup; only the others cost one
        count-only ESearch each, so an answerable question usually adds no E-utilities call (issue 17's
        budget). Phrases are counted only when a dense hit is among the gate's own documents (the first
        ``gate_documents`` of the evidence, which every caller's cut keeps) and the best of them stays below
        the similarity that lets an absent phrase pass anyway: with no such hit (the dense arm found nothing,
        or nothing the gate reads) the gate has no similarity and never abstains on phrases, so the count
        could not change the verdict. Every count query passes the ladder's PHI check (:func:`_may_leave`);
        none is sent when the gate's everyday words are missing (:func:`~core.common_english`)."""
        gate = self.settings
        plain, everyday = self.everyday_words(rewriter)
        if not plain:
            return 0, 0, 0  # fail closed: without everyday English, common first names would count as rare
        question = understanding.plan.corrected_question
        checks = gate.absent_term_checks
        terms = rare_words(question, rewriter.is_known_word, limit=checks) if checks else []
        phrases: list[str] = []
        if gate.absent_phrase_checks and gate.absent_phrase_max_dense > -1.0 and dense:
            shown = {d.pmid for d in evidence.docs[:gate_documents]}
            best = max((h.score for h in dense if h.pmid in shown), default=None)
            if best is not None and best < gate.absent_phrase_max_dense:
                phrases = phrase_candidates(
                    question, rewriter.is_known_word, everyday, limit=gate.absent_phrase_checks
                )
        if not terms and not phrases:
            return 0, 0, 0  # most questions: every word is known, so the documents need not be read
        # Reading every full text is CPU work: off the event loop.
        terms, queries = await asyncio.to_thread(_unseen, evidence.docs, terms, phrases)
        checked = self.phi_found(question, understanding, rewriter)
        leaving = [t for t in terms if _may_leave(f'"{t}"[tiab]', checked)]
        term_queries = [f'"{t}"[tiab]' for t in leaving]
        queries = [q for q in queries if _may_leave(q, checked)]

        async def count(query: str) -> int:
            try:
                return (await self.client.esearch(query, retmax=0, api_key=api_key)).count
            except EutilsError:
                return 1  # unknown: never a reason to abstain

        counts = await asyncio.gather(*(count(q) for q in term_queries), *(count(q) for q in queries))
        n = len(term_queries)
        absent = [t for t, c in zip(leaving, counts[:n], strict=True) if c == 0]
        # Each test builds the word's one-edit neighbours: CPU work, off the event loop.
        technical = (
            await asyncio.to_thread(lambda: sum(1 for t in absent if rewriter.is_technical_word(t)))
            if absent
            else 0
        )
        return len(absent), technical, sum(1 for c in counts[n:] if c == 0)


def _unseen(docs: Sequence[EvidenceDoc], terms: list[str], phrases: list[str]) -> tuple[list[str], list[str]]:
    """The ``terms`` no document of ``docs`` contains, and the count queries of the ``phrases`` whose words
    the documents contain, but never side by side."""
    seen: set[str] = set()
    pairs: set[tuple[str, str]] = set()
    for d in docs:
        for text in (d.title, *(u.text for u in d.text_units)):
            tokens = words(text)
            seen.update(tokens)
            if phrases:
                stems = [light_stem(w) for w in tokens]
                pairs.update(itertools.pairwise(stems))
    stems_seen = {light_stem(w) for w in seen} if phrases else set()
    queries: list[str] = []
    for phrase in phrases:
        a, b = phrase.split()
        pair = (light_stem(a), light_stem(b))
        # Only the words found apart: a word the literature lacks is rare_words' signal, not this one.
        if pair[0] in stems_seen and pair[1] in stems_seen and pair not in pairs:
            queries.append(f'"{phrase}*"[tiab]' if len(b) >= 4 else f'"{phrase}"[tiab]')
    return [t for t in terms if t not in seen], queries


def _may_leave(query: str, found: Sequence[ScrubResult]) -> bool:
    """Whether a count query built from the question passes the ladder's PHI check against what the
    scrubber found in the question (and, :func:`~retrieval.understand.scrub_any_case`, what its name cues
    would find in any casing)."""
    try:
        for f in found:
            assert_no_phi(query, f)
    except PhiLeakError:
        return False
    return True
