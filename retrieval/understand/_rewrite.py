"""Deterministic (no-LLM) rewriter: patient narrative -> :class:`QueryPlan` with a Boolean fallback ladder.

Used offline, as the fallback when the LLM rewriter fails, and as an evaluation baseline. Steps:

1. PHI scrub (:mod:`._phi`): the plan is built from the scrubbed text only, and every ladder query passes the
   PHI gate again before it leaves.
2. Spelling correction against the shipped vocabulary (MeSH names, entry terms, ATM synonyms, the lay
   lexicon, corpus words): symmetric-delete candidates, edit distance <= 1 for words of 4-7 letters and <= 2
   from 8 letters, ties broken towards clinical words, then corpus frequency (:mod:`._spelling`).
3. Narrative fillers removed; longest-match concept extraction against the lay lexicon and the MeSH
   vocabulary; roles and centrality from the lexicon kind (or the descriptor's tree for MeSH-only matches).
4. Intent by keyword rules; publication-year limits from "recent/latest/in the last N years".
5. The ladder, in the paper's shape (Appendix A.3): strict AND -> clinical abstraction (MeSH + synonyms) ->
   pruned -> disease AND intent -> relaxed OR. Every term is a quoted vocabulary/lexicon string or a
   scrubbed, corrected, lower-cased word: user text never contributes operators, tags or quotes.
"""

from __future__ import annotations

import datetime
import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from retrieval.query import QuerySyntaxError, validate_query
from retrieval.vocab import (
    MESH_DIR,
    SKIP_TOKENS,
    Kind,
    LayLexicon,
    MeshVocabulary,
    normalize_tokens,
    token_spans,
)

from ._context import allowed_in_context
from ._phi import _PLACEHOLDER, ScrubResult, scrub, strip_phi_from_query
from ._plan import MAX_LADDER, MAX_PLAN_QUERY_CHARS, Concept, DateLimits, Intent, Pico, QueryPlan
from ._scope import Scope, assess_scope
from ._spelling import Speller, correct_spelling, drug_stem, shared_speller

__all__ = ["DEFAULT_RECENT_YEARS", "DeterministicRewriter", "spell_correct"]

DEFAULT_RECENT_YEARS = 5
_MAX_CORE = 4  # concepts in the strict query; more makes zero hits near certain
_MAX_PHRASE_WORDS = 6
_SENTENCE_BREAK = re.compile(r"[.!?;:\n]")
# Function words allowed inside a free-text synonym ("break the news", "quality of life").
_LINKING = frozenset({"the", "of", "to", "a", "an", "and", "in", "for", "with"})
_GENERIC_DISEASES = frozenset({"Neoplasms", "Neoplasm Metastasis"})

_Role = Literal["population", "intervention", "comparison", "outcome", "other"]
_KIND_ROLE: dict[str, _Role] = {
    "disease": "population",
    "site": "population",
    "population": "population",
    "intervention": "intervention",
    "test": "intervention",
    "screening": "intervention",
    "prevention": "intervention",
    "etiology": "intervention",
    "communication": "intervention",
    "outcome": "outcome",
    "prognosis": "outcome",
    "symptom": "outcome",
    "coping": "outcome",
    "other": "other",
}
_KIND_INTENT: dict[str, Intent] = {
    "intervention": "treatment",
    "test": "diagnosis",
    "screening": "screening",
    "prognosis": "prognosis",
    "symptom": "side_effects",
    "communication": "communication",
    "coping": "coping",
    "prevention": "prevention",
    "etiology": "etiology",
    "outcome": "prognosis",
}
_KIND_WEIGHT: dict[str, float] = {
    "intervention": 3,
    "test": 3,
    "screening": 3,
    "communication": 2.5,
    "prognosis": 2,
    "symptom": 2,
    "outcome": 2,
    "coping": 2,
    "prevention": 2,
    "etiology": 2,
    "other": 1,
    "population": 1,
}
# Keyword cues per intent (normalised token sequences). Earlier intents win ties.
_INTENT_ORDER: tuple[Intent, ...] = (
    "communication",
    "coping",
    "side_effects",
    "screening",
    "prevention",
    "etiology",
    "diagnosis",
    "prognosis",
    "treatment",
)
_INTENT_CUES: dict[Intent, tuple[str, ...]] = {
    "treatment": tuple(
        (
            "treat treated treating treatment treatments therapy therapies option options cure manage "
            "management medication medications medicine drug drugs works effective fight beat best "
            "better approach"
        ).split()
    ),
    "prognosis": (
        "prognosis",
        "survival",
        "survive",
        "surviving",
        "life expectancy",
        "how long",
        "chances",
        "chance",
        "odds",
        "outlook",
        "die",
        "dying",
        "terminal",
        "months left",
        "curable",
        "how much time",
        "time left",
        "come back",
        "comes back",
        "recur",
        "return",
    ),
    "side_effects": (
        "side effects",
        "side effect",
        "adverse",
        "toxicity",
        "toxic",
        "after effects",
        "complications",
        "complication",
        "long term effects",
        "late effects",
    ),
    "diagnosis": (
        "diagnose",
        "diagnosis",
        "test",
        "tests",
        "testing",
        "results",
        "what does it mean",
        "mean",
        "means",
        "symptoms",
        "signs",
        "detect",
        "benign",
        "is it cancer",
        "could it be",
    ),
    "screening": (
        "screening",
        "screen",
        "screened",
        "checkup",
        "check up",
        "early detection",
        "how often",
        "at what age",
        "should i get",
    ),
    "communication": (
        "tell",
        "telling",
        "truth",
        "disclose",
        "disclosure",
        "talk to",
        "explain to",
        "break the news",
        "honest with",
        "what to say",
        "should we say",
        "keep it from",
    ),
    "coping": (
        "cope",
        "coping",
        "deal with",
        "dealing with",
        "support",
        "emotional",
        "emotionally",
        "depressed",
        "depression",
        "anxious",
        "anxiety",
        "scared",
        "afraid",
        "fear",
        "grief",
        "stress",
        "mental health",
        "handle",
    ),
    "prevention": (
        "prevent",
        "prevention",
        "preventing",
        "avoid",
        "lower risk",
        "lower my risk",
        "reduce risk",
        "reduce my risk",
        "protect",
        "vaccine",
    ),
    "etiology": (
        "cause",
        "causes",
        "caused",
        "causing",
        "why did",
        "risk factor",
        "risk factors",
        "linked to",
        "because of",
        "runs in family",
        "genetic",
        "hereditary",
        "inherited",
    ),
}
# (MeSH descriptor, free-text terms) searched for the intent in the "disease AND intent" tier.
_INTENT_TERMS: dict[Intent, tuple[str, tuple[str, ...]]] = {
    "treatment": ("Therapeutics", ("treatment", "therapy")),
    "prognosis": ("Prognosis", ("prognosis", "survival")),
    "side_effects": ("Drug-Related Side Effects and Adverse Reactions", ("adverse effects", "side effects")),
    "diagnosis": ("Diagnosis", ("diagnosis",)),
    "screening": ("Early Detection of Cancer", ("screening", "early detection")),
    "communication": ("Truth Disclosure", ("communication", "disclosure")),
    "coping": ("Adaptation, Psychological", ("coping", "psychological distress")),
    "prevention": ("Primary Prevention", ("prevention", "risk reduction")),
    "etiology": ("Risk Factors", ("etiology", "risk factors")),
}
_COMPARISON_CUES = frozenset({"vs", "versus", "compared", "or", "instead", "than"})
_INTERVENTION_HINTS = (
    "therap",
    "surg",
    "ectomy",
    "agents",
    "drug",
    "transplant",
    "radio",
    "chemo",
    "inhibitor",
)
_OUTCOME_HINTS = (
    "survival",
    "mortality",
    "prognosis",
    "recurrence",
    "pain",
    "quality of life",
    "adverse",
    "fatigue",
)

_NUMBER_WORDS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "fifteen": 15,
    "twenty": 20,
    "few": 3,
    "couple": 2,
}
_LAST_N_YEARS = re.compile(
    r"\b(?:in|over|within|during|from)\s+(?:the\s+)?(?:last|past|previous)\s+"
    r"(?:(\d{1,2})|(one|two|three|four|five|six|seven|eight|nine|ten|fifteen|twenty|few|couple)(?:\s+of)?)"
    r"\s+years?\b"
)
_RECENT = re.compile(
    # "new"/"novel" count only before treatment or research words: "a target for new drugs" asks what
    # works, not what is recent.
    r"\b(?:recent|latest|newest|current|emerging|up[- ]to[- ]date|cutting[- ]edge|"
    r"state[- ]of[- ]the[- ]art|breakthrough)s?\s+(?:\w+\s+)?"
    r"(?:research|studies|study|advances?|treatments?|therapy|therapies|trials?|drugs?|options?|evidence|data|guidelines?|developments?|medicines?|medications?|breakthroughs?|findings|papers?|"
    r"approaches|immunotherapy|immunotherapies)\b"
    r"|\b(?:latest|newest)\b(?!\s+(?:scan|scans|test|tests|results?|blood|appointment|visit|pet|ct|mri))"
    r"|\b(?:new|novel)\s+(?:treatments?|therap(?:y|ies)|trials?|research|stud(?:y|ies)|options?|advances?|"
    r"immunotherap(?:y|ies))\b"
    r"|\bup[- ]to[- ]date\b|\bcutting[- ]edge\b|\bbreakthroughs?\b|\bthese days\b|\bnowadays\b"
)
_SINCE_YEAR = re.compile(r"\b(?:since|after|from)\s+((?:19|20)\d{2})\b")
_BETWEEN_YEARS = re.compile(r"\bbetween\s+((?:19|20)\d{2})\s+and\s+((?:19|20)\d{2})\b")
_RESEARCH_WORDS = re.compile(
    r"\b(?:research|stud(?:y|ies)|trials?|papers?|articles?|published|publications?|evidence|data|advances?|"
    r"treatments?|therap(?:y|ies)|guidelines?|literature)\b"
)


def _quote(text: str) -> str:
    """Query-safe phrase: no quotes, brackets, parentheses or wildcards survive; whitespace collapsed."""
    return " ".join(re.sub(r'["\[\]()*\\]', " ", text).split())


def _phrase(text: str, tag: str) -> str:
    return f'"{_quote(text)}"[{tag}]'


@dataclass(slots=True)
class _Found:
    """A concept candidate from the narrative."""

    start: int  # position in the match stream (for ordering and comparison cues)
    end: int
    surface: str  # the normalised words as the user wrote them (after spelling correction)
    text: str  # clinical free text
    mesh: str | None
    kind: Kind
    synonyms: list[str] = field(default_factory=list)
    weight: float = 0.0
    # A drug known by its INN stem only: searched like a concept, judged like any technical word the
    # vocabularies do not know (app.trust: half of such words must be named by a study).
    by_stem: bool = False


@dataclass(frozen=True, slots=True)
class _Token:
    norm: str
    start: int
    end: int
    sentence: int


def _read_atm_synonyms() -> list[tuple[str, str]]:
    path = MESH_DIR / "atm_synonyms.tsv"
    pairs: list[tuple[str, str]] = []
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip() and not line.startswith("#"):
                term, _, name = line.partition("\t")
                if term.strip() and name.strip():
                    pairs.append((term.strip(), name.strip()))
    return pairs


def _phrase_index(vocabulary: MeshVocabulary) -> dict[str, str]:
    """Normalised token key -> descriptor for names, 2019 names, entry terms and ATM synonyms."""
    index: dict[str, str] = {}

    def add(term: str, name: str) -> None:
        key = " ".join(t for t in normalize_tokens(term) if t not in SKIP_TOKENS)
        if key and len(key.split()) <= _MAX_PHRASE_WORDS:
            index.setdefault(key, name)

    names = vocabulary.names()
    for name in names:
        add(name, name)
    for term, name in _read_atm_synonyms():
        canonical = vocabulary.canonical(name)
        if canonical:
            add(term, canonical)
    for name in names:
        d = vocabulary.descriptor(name)
        if d is not None:
            if d.name_2019:
                add(d.name_2019, name)
            for t in d.entry_terms:
                add(t, name)
    return index


class DeterministicRewriter:
    """Narrative -> :class:`QueryPlan` (``source="deterministic"``) with no model in the loop."""

    def __init__(self, vocabulary: MeshVocabulary | None = None, lexicon: LayLexicon | None = None) -> None:
        self.vocabulary = vocabulary if vocabulary is not None else MeshVocabulary.load()
        self.lexicon = lexicon if lexicon is not None else LayLexicon.load()
        self._phrases = _phrase_index(self.vocabulary)
        self._c04 = frozenset(n for n in self.vocabulary.names() if self.vocabulary.tree_numbers(n))
        self._max_words = min(
            _MAX_PHRASE_WORDS, max(self.lexicon.max_phrase_words, self.lexicon.max_filler_words, 1)
        )
        self._max_words = max(
            self._max_words, min(_MAX_PHRASE_WORDS, max(len(k.split()) for k in self._phrases))
        )
        self._speller = self._make_speller()
        self._lay_words = frozenset(
            w for e in self.lexicon for w in (*e.phrase.split(), *normalize_tokens(e.clinical))
        )

    def _make_speller(self) -> Speller:
        words: dict[str, int] = dict(self.lexicon.word_counts)
        clinical: set[str] = set()
        for key in self._phrases:
            clinical.update(key.split())
        for e in self.lexicon:
            clinical.update(e.phrase.split())
            clinical.update(normalize_tokens(e.clinical))
        for w in clinical | self.lexicon.words():
            words.setdefault(w, 1)
        return shared_speller(words, frozenset(w for w in clinical if w not in self.lexicon.stopwords))

    # --- public API -----------------------------------------------------------------------------------

    @property
    def lay_words(self) -> frozenset[str]:
        """Every word of the lay lexicon's phrases and their clinical terms, its stop words and its everyday
        words ("really", "basically"): what a question says in lay terms, never a term to look for alone."""
        return self._lay_words | self.lexicon.stopwords | self.lexicon.common_words

    def prepare(self) -> None:
        """Build what spelling correction loads on first use (see :meth:`Speller.prepare`)."""
        self._speller.prepare()

    def is_known_word(self, word: str) -> bool:
        """A (lower-case) word of the vocabulary, or an inflection of one: the scope check's test for
        gibberish."""
        return self._speller.is_known(word)

    def is_everyday_word(self, word: str) -> bool:
        """A (lower-case) word among the most common English words ("heart", "treat", "tired"): its everyday
        sense is as likely as a clinical one, so alone it does not make a question clinical."""
        return self._speller.is_everyday(word)

    def is_technical_word(self, word: str) -> bool:
        """A (lower-case) word that is neither everyday English nor a typo of it (one edit away): a drug or
        procedure name. The evidence gate's technical absent terms and the scope check's health test. The lay
        lexicon's everyday words ("afterwards", "bedbound") are never technical."""
        return word not in self.lexicon.common_words and self._speller.is_technical(word)

    def scope(self, text: str, plan: QueryPlan, today: datetime.date) -> Scope:
        """The scope check of an English question with every test this rewriter's vocabulary gives it
        (``plan``: this rewriter's plan of the question): what the question flow runs, and what
        ``cometa eval scope`` measures."""
        return assess_scope(
            text,
            plan,
            self.is_known_word,
            lambda rest: self.rewrite(rest, today=today),
            self.is_technical_word,
            self.is_everyday_word,
        )

    def spell_correct(self, text: str) -> str:
        """``text`` with misspelled words replaced by the closest vocabulary word; everything else kept.

        Words inside PHI (names, places, e-mails ...) are left alone: they are not typos, and "correcting"
        them would only disguise them."""
        protected = [(s.start, s.end) for s in scrub(text).spans]
        return correct_spelling(text, self._speller, self._lay_words, protected)

    def rewrite(self, question: str, *, today: datetime.date | None = None) -> QueryPlan:
        """Build the plan for one question. Never raises on odd input; the plan never contains PHI."""
        today = today or datetime.date.today()
        scrubbed = scrub(question)
        corrected = correct_spelling(scrubbed.text, self._speller, self._lay_words)
        tokens = self._tokens(corrected)
        stream = self._drop_fillers(tokens)
        found = self._extract(stream)
        if not found:
            found = self._fallback_words(stream)
        intent = self._intent(stream, found)
        core = self._rank(found, intent)
        concepts = [
            Concept(
                text=f.text[:120],
                mesh=f.mesh,
                role="other" if f.by_stem else self._role(f, found, stream),
                surface=f.surface[:120],
            )
            for f in found[:12]
        ]
        pico = Pico(
            population=[c.text for c in concepts if c.role == "population"][:8],
            intervention=[c.text for c in concepts if c.role == "intervention"][:8],
            comparison=[c.text for c in concepts if c.role == "comparison"][:8],
            outcome=[c.text for c in concepts if c.role == "outcome"][:8],
        )
        ladder = self._gate(self._ladder(core, intent), scrubbed)
        return QueryPlan(
            corrected_question=corrected[:4000],
            intent=intent,
            concepts=concepts,
            pico=pico,
            date_limits=self._date_limits(corrected, today),
            ladder=ladder,
            source="deterministic",
        )

    # --- text ---------------------------------------------------------------------------------------

    @staticmethod
    def _tokens(text: str) -> list[_Token]:
        clean = _PLACEHOLDER.sub(" ", text)
        out: list[_Token] = []
        sentence = 0
        last = 0
        for norm, s, e in token_spans(clean):
            if _SENTENCE_BREAK.search(clean, last, s):
                sentence += 1
            out.append(_Token(norm, s, e, sentence))
            last = e
        return out

    def _drop_fillers(self, tokens: list[_Token]) -> list[_Token]:
        """Tokens minus narrative fillers and determiners (longest filler phrase first)."""
        out: list[_Token] = []
        i = 0
        n = len(tokens)
        maxw = self.lexicon.max_filler_words
        while i < n:
            for length in range(min(maxw, n - i), 0, -1):
                span = tokens[i : i + length]
                if span[0].sentence != span[-1].sentence:
                    continue
                if " ".join(t.norm for t in span) in self.lexicon.fillers:
                    i += length
                    break
            else:
                if tokens[i].norm not in SKIP_TOKENS:
                    out.append(tokens[i])
                i += 1
        return out

    # --- concepts -----------------------------------------------------------------------------------

    def _lookup(self, key: str) -> tuple[str, str | None, Kind] | None:
        entry = self.lexicon.lookup_key(key)
        if entry is not None:
            return entry.clinical, entry.mesh, entry.kind
        words = key.split()
        desc = self._phrases.get(key)
        if desc is None and words[-1].endswith("s") and len(words[-1]) > 4:
            desc = self._phrases.get(" ".join([*words[:-1], words[-1][:-1]]))
        if desc is None:
            return None
        if len(words) == 1 and (key in self.lexicon.stopwords or len(key) < 4):
            return None  # "aged", "time", "men": real descriptors, useless as concepts
        return key, desc, self._descriptor_kind(desc)

    def _descriptor_kind(self, desc: str) -> Kind:
        if desc in self._c04:
            return "disease"
        low = desc.lower()
        if any(h in low for h in _INTERVENTION_HINTS):
            return "intervention"
        if any(h in low for h in _OUTCOME_HINTS):
            return "outcome"
        return "other"

    def _extract(self, stream: list[_Token]) -> list[_Found]:
        found: list[_Found] = []
        i, n = 0, len(stream)
        norms = [t.norm for t in stream]
        while i < n:
            hit: tuple[int, tuple[str, str | None, Kind]] | None = None
            for length in range(min(self._max_words, n - i), 0, -1):
                span = stream[i : i + length]
                if span[0].sentence != span[-1].sentence:
                    continue
                key = " ".join(t.norm for t in span)
                res = self._lookup(key)
                if res is not None and not allowed_in_context(key, norms, i, i + length):
                    continue  # an ambiguous lay phrase that means something else here ("came back high")
                if res is not None:
                    hit = (length, res)
                    break
            if hit is None:
                word = stream[i].norm
                # A drug no vocabulary names, known by its INN stem: PubMed maps the name itself.
                if word.isalpha() and drug_stem(word) and self.is_technical_word(word):
                    found.append(_Found(i, i + 1, word, word, None, "intervention", by_stem=True))
                i += 1
                continue
            length, (clinical, mesh, kind) = hit
            surface = " ".join(t.norm for t in stream[i : i + length])
            found.append(_Found(i, i + length, surface, clinical, mesh, kind))
            i += length
        return self._merge(found)

    def _merge(self, found: list[_Found]) -> list[_Found]:
        """Organ + generic cancer word -> organ neoplasm; duplicates folded; generic dropped if specific."""
        generic = [f for f in found if f.kind == "disease" and f.mesh == "Neoplasms"]
        sites = [f for f in found if f.kind == "site"]
        out: list[_Found] = []
        for f in found:
            if f.kind == "site":
                if generic:
                    word = generic[0].surface
                    adj = f.text.split()[0]
                    f = _Found(f.start, f.end, f.text, f.text, f.mesh, "disease", [f"{adj} {word}"])
                else:
                    f = _Found(f.start, f.end, f.surface, f.surface, None, "other")
            elif f in generic and sites:
                continue
            out.append(f)
        specific = any(f.kind == "disease" and f.mesh not in _GENERIC_DISEASES for f in out)
        merged: dict[str, _Found] = {}
        for f in out:
            if specific and f.kind == "disease" and f.mesh == "Neoplasms":
                continue
            key = (f.mesh or f.text).lower()
            if key in merged:
                prev = merged[key]
                for s in (f.surface, *f.synonyms):
                    if s not in prev.synonyms and s != prev.text:
                        prev.synonyms.append(s)
                continue
            if f.surface != f.text.lower():
                f.synonyms.insert(0, f.surface)
            merged[key] = f
        return list(merged.values())

    def _fallback_words(self, stream: list[_Token]) -> list[_Found]:
        """No concept found: the known content words (never unknown ones - they may be unscrubbed names)."""
        out: list[_Found] = []
        seen: set[str] = set()
        for i, t in enumerate(stream):
            w = t.norm
            if (
                len(w) >= 4
                and w.isalpha()
                and w not in self.lexicon.stopwords
                and w in self._speller.known
                and w not in seen
            ):
                seen.add(w)
                out.append(_Found(i, i + 1, w, w, None, "other"))
            if len(out) == _MAX_CORE:
                break
        return out

    def _role(self, f: _Found, found: Sequence[_Found], stream: Sequence[_Token]) -> _Role:
        role = _KIND_ROLE[f.kind]
        if role == "intervention" and f.kind == "intervention":
            # "surgery vs radiation": the later intervention after a comparison cue is the comparator.
            earlier = [g for g in found if g.kind == "intervention" and g.start < f.start]
            if earlier:
                between = {t.norm for t in stream[earlier[-1].start + 1 : f.start]}
                if between & _COMPARISON_CUES:
                    return "comparison"
        return role

    # --- intent, ranking, dates ---------------------------------------------------------------------

    def _intent(self, stream: Sequence[_Token], found: Sequence[_Found]) -> Intent:
        # Words inside a concept vote through the concept's kind only ("radiation therapy" is one
        # intervention, not also a "therapy" cue); "|" keeps cues from spanning a removed concept.
        inside = {i for f in found for i in range(f.start, f.end)}
        words = ["|" if i in inside else t.norm for i, t in enumerate(stream)]
        joined = " " + " ".join(words) + " "
        scores: dict[Intent, float] = {}
        for intent, cues in _INTENT_CUES.items():
            s = sum(1.0 for cue in cues if f" {cue} " in joined)
            if s:
                scores[intent] = s
        for f in found:
            vote = _KIND_INTENT.get(f.kind)
            if vote is not None:
                scores[vote] = scores.get(vote, 0.0) + 1.0
        if not scores:
            return "other"
        return max(_INTENT_ORDER, key=lambda k: (scores.get(k, 0.0), -_INTENT_ORDER.index(k)))

    def _rank(self, found: list[_Found], intent: Intent) -> list[_Found]:
        """Core concepts, most central first: the main disease, then intent-aligned ones, then the rest."""
        primary_done = False
        for f in found:
            if f.kind == "disease":
                if not primary_done and f.mesh not in _GENERIC_DISEASES:
                    f.weight, primary_done = 5.0, True
                else:
                    f.weight = 3.5
            else:
                f.weight = _KIND_WEIGHT.get(f.kind, 1.0)
                if _KIND_INTENT.get(f.kind) == intent:
                    f.weight += 1.5
        if not primary_done:  # only generic disease words: the first one is still the anchor
            for f in found:
                if f.kind == "disease":
                    f.weight = 5.0
                    break
        ranked = sorted(found, key=lambda f: (-f.weight, f.start))
        return ranked[:_MAX_CORE]

    @staticmethod
    def _date_limits(text: str, today: datetime.date) -> DateLimits | None:
        low = _PLACEHOLDER.sub(" ", text).lower()
        year = today.year
        m = _BETWEEN_YEARS.search(low)
        if m and _RESEARCH_WORDS.search(low):
            lo, hi = sorted((int(m.group(1)), int(m.group(2))))
            if 1800 <= lo <= hi <= year:
                return DateLimits(min_year=lo, max_year=hi)
        m = _SINCE_YEAR.search(low)
        if m and _RESEARCH_WORDS.search(low):
            y = int(m.group(1))
            if 1800 <= y <= year:
                return DateLimits(min_year=y, max_year=year)
        m = _LAST_N_YEARS.search(low)
        if m:
            n = int(m.group(1)) if m.group(1) else _NUMBER_WORDS[m.group(2)]
            n = max(1, min(n, 50))
            return DateLimits(min_year=year - n, max_year=year)
        if _RECENT.search(low):
            return DateLimits(min_year=year - DEFAULT_RECENT_YEARS, max_year=year)
        return None

    # --- ladder -------------------------------------------------------------------------------------

    def _synonyms(self, f: _Found, limit: int = 3) -> list[str]:
        """Free-text variants of a concept: what the user wrote, curated lay phrases, the MeSH name."""
        out: list[str] = []
        cands: list[str] = [*f.synonyms]
        cands.extend(e.lay for e in self.lexicon.entries_for(f.text) if e.kind != "site")
        if f.mesh and "," not in f.mesh:
            cands.append(f.mesh.lower())
        for c in cands:
            words = c.split()
            informative = [w for w in words if w not in self.lexicon.stopwords]
            if not words or len(informative) != len([w for w in words if w not in _LINKING]):
                continue  # "tell her", "don't tell": fine for matching, too vague for searching
            if len(words) == 1 and len(c) < 6:
                continue
            if c != f.text.lower() and c not in out:
                out.append(c)
            if len(out) == limit:
                break
        return out

    def _group(self, f: _Found, *, synonyms: bool = False, mesh: bool = True, tiab: bool = True) -> str:
        terms: list[str] = []
        if mesh and f.mesh:
            terms.append(_phrase(f.mesh, "mh"))
        if tiab or not terms:
            terms.append(_phrase(f.text, "tiab"))
        if synonyms:
            terms.extend(_phrase(s, "tiab") for s in self._synonyms(f))
        terms = list(dict.fromkeys(terms))
        return terms[0] if len(terms) == 1 else "(" + " OR ".join(terms) + ")"

    @staticmethod
    def _and(groups: Iterable[str]) -> str:
        return " AND ".join(dict.fromkeys(groups))

    def _intent_group(self, intent: Intent, core: Sequence[_Found]) -> str | None:
        spec = _INTENT_TERMS.get(intent)
        if spec is None:
            return None
        mesh, words = spec
        for f in core:  # the intent is already a concept: use its synonym group instead of a duplicate
            if f.mesh == mesh:
                return self._group(f, synonyms=True)
        terms = [_phrase(mesh, "mh"), *(_phrase(w, "tiab") for w in words)]
        return "(" + " OR ".join(terms) + ")"

    def _ladder(self, core: list[_Found], intent: Intent) -> list[str]:
        if not core:
            group = self._intent_group(intent, core)
            base = [group] if group else []
            return [*base, _phrase("Neoplasms", "mh")]
        intent_group = self._intent_group(intent, core)
        if len(core) == 1:
            return self._single_ladder(core[0], intent_group)

        strict = self._and(self._group(f) for f in core)
        mapped = [f for f in core if f.mesh]
        abstraction_src = mapped if len(mapped) >= 2 else core
        abstraction = self._and(self._group(f, synonyms=True) for f in abstraction_src)
        candidates: list[str] = [strict, abstraction]

        if len(core) >= 3:
            drop = min(
                (f for f in core if f.kind != "disease"), key=lambda f: (f.weight, -f.start), default=None
            )
            if drop is not None:
                candidates.append(self._and(self._group(f) for f in core if f is not drop))
        anchor = core[0]
        if intent_group is not None and intent_group not in (
            self._group(anchor),
            self._group(anchor, synonyms=True),
        ):
            candidates.append(self._and([self._group(anchor, synonyms=True), intent_group]))
        for other in core[1:]:
            candidates.append(self._and([self._group(anchor), self._group(other, synonyms=True)]))
        candidates.append(self._and(self._group(f, mesh=False) for f in core))

        relaxed_terms: list[str] = []
        for f in core[:3]:
            g = self._group(f)
            relaxed_terms.extend(g[1:-1].split(" OR ") if g.startswith("(") else [g])
        relaxed = " OR ".join(dict.fromkeys(relaxed_terms))
        return self._finish(candidates, relaxed)

    def _single_ladder(self, f: _Found, intent_group: str | None) -> list[str]:
        candidates: list[str] = []
        if intent_group is not None and intent_group != self._group(f, synonyms=True):
            candidates.append(self._and([self._group(f), intent_group]))
        candidates.append(self._group(f))
        if f.mesh:
            candidates.append(_phrase(f.mesh, "mh"))
        candidates.append(_phrase(f.text, "tiab"))
        candidates.append(_phrase(f.text, "tw"))
        relaxed = self._group(f, synonyms=True)
        if relaxed.startswith("("):
            relaxed = relaxed[1:-1]
        return self._finish(candidates, relaxed)

    @staticmethod
    def _finish(candidates: list[str], relaxed: str) -> list[str]:
        """Valid, distinct queries; strict first, the relaxed OR last, at most MAX_LADDER."""
        out: list[str] = []
        for q in candidates:
            if q and q not in out and q != relaxed:
                out.append(q)
        out = out[: MAX_LADDER - 1]
        out.append(relaxed)
        return out

    @staticmethod
    def _gate(ladder: list[str], found: ScrubResult) -> list[str]:
        """Last PHI gate and syntax check on every query (both should be no-ops by construction)."""
        out: list[str] = []
        for q in ladder:
            safe = strip_phi_from_query(q, found) if found.found else q
            if not safe or len(safe) > MAX_PLAN_QUERY_CHARS:  # an over-long synonym OR list is dropped
                continue
            try:
                validate_query(safe)
            except QuerySyntaxError:
                continue
            if safe not in out:
                out.append(safe)
        return out or [_phrase("Neoplasms", "mh")]


@functools.lru_cache(maxsize=1)
def _default_rewriter() -> DeterministicRewriter:
    return DeterministicRewriter()


def spell_correct(text: str) -> str:
    """Spelling correction with the bundled vocabulary and lexicon (see ``DeterministicRewriter``)."""
    return _default_rewriter().spell_correct(text)
