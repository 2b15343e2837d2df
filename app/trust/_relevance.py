"""Does a study address the question? The relevance decision per study, before it may be cited or counted.

Sharing a question's words is not being about it: a Fournier's gangrene series is not evidence on a child's
leukaemia, nor a study of body weight on whether exercise helps knee pain. Before the verdict and the answer,
each retrieved study is judged against the question's **focus** (:func:`question_focus`): what it is about,
from the query plan's recognised concepts and their roles, with every alternative the plan searched for
them (its ladder's synonyms and MeSH headings), plus the technical words the vocabulary did not recognise
(an unlisted drug or disease). A study addresses the question when it names

* one of the question's conditions or populations (role ``population``; a demographic alone, "child",
  does not count), and
* one of its treatments, exposures or tests (``intervention``; its ``comparison`` only when it names no
  intervention: "immunotherapy or chemo?" is not answered by chemotherapy studies alone), and
* at least half of the unrecognised technical words,

each group only when the question has one; outcomes alone decide only a question that names nothing else
(an outcome is worded in too many ways to be required). "Names" means in the title or abstract, as a whole
phrase of stems, or as one of the record's MeSH headings (or a heading under it). A question with no
clinical concept at all cannot be judged here: its studies are kept, and the gate's other checks decide.

:func:`judge_relevance` judges studies with their records; :func:`relevance_of_texts` documents that have
only a text (an institutional collection's, a node's).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, Protocol

from core import QUESTION_FILLER, STOPWORDS, common_english, english_frequencies, light_stem, words
from retrieval.query import And, Node, Or, QuerySyntaxError, Term, parse_query
from retrieval.understand import Concept, QueryPlan, looks_like_injection

__all__ = [
    "Anchor",
    "Focus",
    "StudyRelevance",
    "judge_relevance",
    "question_focus",
    "relevance_of_texts",
    "study_text",
]

Group = Literal["condition", "treatment", "comparison", "outcome", "term"]
_GROUP_OF_ROLE: Final[dict[str, Group]] = {
    "population": "condition",
    "intervention": "treatment",
    "comparison": "comparison",
    "outcome": "outcome",
}
# Who a study was about, not what: naming "children" does not make a study about this child's disease.
_DEMOGRAPHIC: Final = frozenset(
    {
        "child",
        "children",
        "infant",
        "adolescent",
        "adult",
        "aged",
        "humans",
        "female",
        "male",
        "women",
        "men",
        "patients",
        "aged, 80 and over",
        "middle aged",
        "young adult",
        "child, preschool",
        "infant, newborn",
    }
)


# Classes of treatment or test that studies name by their members: "surgery" by the operation
# ("gastrectomy", "resection"), "a scan" by the modality. A study naming a member's word family names the
# class (stem prefixes; "ectomy" anywhere in a word). Keys are MeSH headings, lower case.
_CLASS_CUES: Final[dict[str, tuple[str, ...]]] = {
    "surgical procedures, operative": ("surg", "resect", "operat", "excis", "ectomy", "otomy", "dissect"),
    "drug therapy": ("chemotherap", "cytotox", "regimen", "chemoradi"),
    "radiotherapy": ("radiotherap", "radiation", "irradiat", "radiosurg", "brachytherap", "chemoradi"),
    "biopsy": ("biops", "aspirat", "cytolog", "histolog"),
    "diagnostic imaging": (
        "imag",
        "scan",
        "tomograph",
        "mri",
        "ultrasound",
        "ultrason",
        "sonograph",
        "radiograph",
        "mammogra",
        "pet",
    ),
    "magnetic resonance imaging": ("mri", "mr imag", "magnetic resonance"),
}
# The classes above: a question that names one AND a technical word (its own drug or procedure, "chemo like
# paclitaxel") is about that word; a study naming it names the class.
_CLASSES: Final = frozenset(_CLASS_CUES)
_SUFFIXES: Final = frozenset({"ectomy", "otomy"})


class _Doc(Protocol):
    """What the judge reads of a study: its id, title, text units and MeSH headings."""

    @property
    def pmid(self) -> str: ...

    @property
    def title(self) -> str: ...

    @property
    def mesh(self) -> tuple[str, ...]: ...

    @property
    def text_units(self) -> Sequence[object]: ...


@dataclass(frozen=True, slots=True)
class Anchor:
    """One thing the question is about: its label (the concept as the plan names it), its group, the
    phrases that name it (stem tuples), the MeSH headings that index it, and the stems of the question's own
    words for it (a study naming the concept uses them: "whipple" for "pancreaticoduodenectomy")."""

    label: str
    group: Group
    phrases: frozenset[tuple[str, ...]]
    headings: frozenset[str] = frozenset()
    surface: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Focus:
    """What a study must be about to address the question (:func:`question_focus`): its anchors, and the
    question's content words weighted by their rarity in everyday English (:func:`_weighted_words`)."""

    anchors: tuple[Anchor, ...]
    words: tuple[tuple[str, float], ...] = ()

    @property
    def groups(self) -> dict[Group, list[Anchor]]:
        out: dict[Group, list[Anchor]] = {}
        for a in self.anchors:
            out.setdefault(a.group, []).append(a)
        return out

    @property
    def judgeable(self) -> bool:
        return bool(self.anchors)


@dataclass(frozen=True, slots=True)
class StudyRelevance:
    """The decision on one study: whether it addresses the question, what of it it names, what it lacks."""

    id: str
    addresses: bool
    named: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()  # the labels of the groups it fails (the question's own concepts)
    judge: str = "concepts"  # "concepts" (this module), "words" (its question words alone), "llm", "none"
    why: str = field(default="", compare=False)  # the judge's own reason when it gave one
    share: float | None = None  # the weighted share of the question's words the study uses (None: unread)

    def reason(self) -> str:
        """In plain words, for the response."""
        if self.why:
            return self.why
        if self.judge == "none":
            return "the question names no clinical concept to check the study against"
        if self.addresses:
            return "about " + ", ".join(self.named) if self.named else "about the question"
        if self.missing:
            return "does not mention " + " or ".join(self.missing)
        return "uses too few of the question's words"


def _raw_stems(text: str) -> tuple[str, ...]:
    return tuple(light_stem(w) for w in words(text) if w.isalnum())


# One name per thing for matching alone (the search is untouched): MeSH says "Stomach Neoplasms", a trial
# "gastric carcinoma", a British abstract "oesophageal tumour". Question and study are read the same way.
_SAME_STEM: Final = {
    light_stem(w): "cancer" for w in ("neoplasm", "neoplasia", "carcinoma", "tumor", "tumour", "malignancy")
}
_BRITISH: Final = (
    ("oesophag", "esophag"),
    ("haem", "hem"),
    ("anaem", "anem"),
    ("paed", "ped"),
    ("oedem", "edem"),
    ("diarrhoe", "diarrhe"),
    ("leukaem", "leukem"),
    ("ischaem", "ischem"),
    ("oestr", "estr"),
    ("foet", "fet"),
    ("caesar", "cesar"),
    ("gynaec", "gynec"),
)


def _canonical(stem: str) -> str:
    for british, american in _BRITISH:
        if british in stem:
            stem = stem.replace(british, american)
    return _SAME_STEM.get(stem, stem)


def _stems(text: str) -> tuple[str, ...]:
    """The stems matching reads: possessive "s" dropped ("Barrett's esophagus" is "Barrett esophagus"),
    British spelling and the names of a malignancy made one (:data:`_SAME_STEM`)."""
    return tuple(_canonical(s) for s in _raw_stems(text) if s != "s")


def _phrase(text: str) -> tuple[str, ...] | None:
    stems = tuple(s for s in _stems(text) if s not in _STOP_STEMS)
    return stems or None


_STOP_STEMS: Final = frozenset(light_stem(w) for w in STOPWORDS)


def _groups(node: Node) -> list[list[Term]]:
    """The parts of a ladder query that may name one concept, each as the terms it ORs: the conjuncts of a
    conjunction, or the whole query when it is one OR of terms (a relaxed rung may OR several concepts:
    :func:`_alternatives` keeps a group only when it holds one concept's own words)."""
    if isinstance(node, Term):
        return [[node]]
    if isinstance(node, Or) and all(isinstance(t, Term) for t in node.children):
        return [[t for t in node.children if isinstance(t, Term)]]
    if not isinstance(node, And):
        return []
    out: list[list[Term]] = []
    for child in node.children:
        out.extend(_groups(child))
    return out


def _own(concept: Concept) -> set[str]:
    """What names ``concept`` itself: its text, the question's words for it and its heading."""
    return {t.lower() for t in (concept.text, concept.surface, concept.mesh) if t}


def _ladder_groups(ladder: Sequence[str]) -> list[list[Term]]:
    """The groups (:func:`_groups`) of every ladder query, each query parsed once per question."""
    out: list[list[Term]] = []
    for query in ladder:
        try:
            out.extend(_groups(parse_query(query)))
        except QuerySyntaxError:
            continue
    return out


def _alternatives(
    concept: Concept, groups: Sequence[list[Term]], others: Sequence[set[str]] = ()
) -> tuple[set[str], set[str]]:
    """Every phrase and MeSH heading the plan searched for ``concept``: its text, its heading, and the
    other terms of each ladder group (:func:`_ladder_groups`) that holds one of them and nothing of
    ``others`` (the other concepts' own words)."""
    phrases = {concept.text, *([concept.surface] if concept.surface else [])}
    headings = {concept.mesh.lower()} if concept.mesh else set()
    own = _own(concept)
    for terms in groups:
        texts = {t.text.lower() for t in terms}
        if not texts & own or any(texts & other for other in others):
            continue
        for t in terms:
            if t.field == "mh":
                headings.add(t.text.lower())
            elif not t.wildcard:
                phrases.add(t.text)
    return phrases, headings


def _related(a: str, b: str) -> bool:
    """One stem is the other or starts it, five letters at least: "pancrea" (pancreas) and "pancreatic"."""
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    return (len(short) >= 5 and long_.startswith(short)) or a == b


def _without_instructions(question: str) -> str:
    """``question`` without its sentences that instruct the system (:func:`looks_like_injection`)."""
    return " ".join(s for s in re.split(r"(?<=[.!?])\s+|\n+", question) if not looks_like_injection(s))


def _technical_words(question: str, covered: set[str], plain: Callable[[str], bool]) -> list[str]:
    """Words of ``question`` no concept covers that are no everyday word: an unlisted drug or disease."""
    question = _without_instructions(question)
    out: list[str] = []
    for w in words(question):
        stem = light_stem(w)
        if (
            w.isalpha()
            and len(w) >= 5
            and w not in STOPWORDS
            and w not in QUESTION_FILLER
            and not plain(w)
            and not any(_related(stem, c) for c in covered)
            and w not in out
        ):
            out.append(w)
    return out


def question_focus(
    plan: QueryPlan,
    *,
    plain: Callable[[str], bool] | None = None,
    concepts: Iterable[Concept] | None = None,
) -> Focus:
    """The focus of the question ``plan`` was made for: its recognised concepts with the alternatives its
    ladder searched, grouped by role, and its unrecognised technical words. ``plain``: whether a word is
    everyday language (default :func:`core.common_english` membership)."""
    is_plain = plain or (lambda w: w in common_english())
    anchors: list[Anchor] = []
    covered: set[str] = set()
    every = list(plan.concepts if concepts is None else concepts)
    # Every concept's own words, the unrecognised ones' too (a drug searched by its INN stem): a ladder group
    # that holds another concept's word is not this concept's alternatives.
    owns = [_own(c) for c in every]
    groups = _ladder_groups(plan.ladder)
    for i, c in enumerate(every):
        if not c.recognised:
            continue
        group = _GROUP_OF_ROLE.get(c.role)
        label = c.text
        texts, headings = _alternatives(c, groups, owns[:i] + owns[i + 1 :])
        covered.update(s for t in texts for s in _raw_stems(t))
        covered.update(s for h in headings for s in _raw_stems(h))
        if group is None or c.text.lower() in _DEMOGRAPHIC or (c.mesh or "").lower() in _DEMOGRAPHIC:
            continue
        phrases = frozenset(p for t in texts if (p := _phrase(t)) is not None)
        surface = frozenset(_stems(" ".join(t for t in (c.text, c.surface) if t)))
        anchors.append(Anchor(label, group, phrases, frozenset(headings), surface))
    for w in _technical_words(plan.corrected_question, covered, is_plain):
        anchors.append(Anchor(w, "term", frozenset({(light_stem(w),)})))
    return Focus(tuple(anchors), _weighted_words(plan.corrected_question))


@functools.cache
def _english_weights() -> tuple[Mapping[str, int], float]:
    frequencies = english_frequencies()
    return frequencies, float(sum(frequencies.values()))


def _weighted_words(question: str) -> tuple[tuple[str, float], ...]:
    """The question's content words (four letters or more, no stopword or question filler; an instruction's
    sentence dropped), each as its matching stem with its weight: -log of its share of everyday English, so
    "gastric" and "masking" count for more than "grandfather" and "chances"."""
    frequencies, total = _english_weights()
    question = _without_instructions(question)
    out: dict[str, float] = {}
    for w in words(question):
        w = w.lower()
        if w.isalpha() and len(w) >= 4 and w not in STOPWORDS and w not in QUESTION_FILLER:
            stem = _canonical(light_stem(w))
            out[stem] = max(out.get(stem, 0.0), math.log(total / (1 + frequencies.get(w, 0))))
    return tuple(out.items())


def _share(focus: Focus, stems: frozenset[str]) -> float:
    """The weighted share of the question's words among ``stems`` (a study's)."""
    total = sum(weight for _, weight in focus.words)
    return sum(weight for stem, weight in focus.words if stem in stems) / total if total else 1.0


def study_text(doc: _Doc) -> str:
    """The title and abstract; a full-text document without an abstract unit: its first 4,000 characters
    (a review's body mentions everything; what it is about is said first)."""
    units = list(doc.text_units)
    abstract = [getattr(u, "text", "") for u in units if getattr(u, "kind", None) == "abstract"]
    body = " ".join(abstract) if abstract else " ".join(getattr(u, "text", "") for u in units)[:4000]
    return f"{doc.title} {body}"


def _cued(cue: str, padded: str) -> bool:
    """A word of ``padded`` starts with ``cue``; a suffix cue ("ectomy") anywhere in a word."""
    return cue in padded if cue in _SUFFIXES else f" {cue}" in padded


def _names(anchor: Anchor, padded: str, headings: frozenset[str]) -> bool:
    if anchor.headings & headings:
        return True
    if any(f" {' '.join(p)} " in padded for p in anchor.phrases):
        return True
    for heading in anchor.headings & _CLASSES:
        if any(_cued(cue, padded) for cue in _CLASS_CUES[heading]):
            return True
    # An unrecognised word is matched by its stem's family ("osteoarthritis", "osteoarthritic").
    return anchor.group == "term" and any(
        len(p) == 1 and len(p[0]) >= 5 and f" {p[0]}" in padded for p in anchor.phrases
    )


def _decide(
    focus: Focus, key: str, text: str, headings: frozenset[str], min_share: float = 0.0
) -> StudyRelevance:
    stems = _stems(text)
    padded = f" {' '.join(stems)} "
    named = [a for a in focus.anchors if _names(a, padded, headings)]
    share = None
    if min_share > 0 and focus.words:
        # The question's words for a concept the study names count as used ("whipple" in a study of
        # pancreaticoduodenectomy): the share asks for the question's other words, not its lay names.
        share = _share(focus, frozenset(stems).union(*(a.surface for a in named)))
    too_few = share is not None and share < min_share
    if not focus.judgeable:
        if share is None:
            return StudyRelevance(key, True, judge="none")
        return StudyRelevance(key, not too_few, judge="words", share=share)
    named_labels = {a.label for a in named}
    groups = focus.groups
    missing: list[str] = []
    treatment = groups.get("treatment") or groups.get("comparison")
    terms = groups.get("term", [])
    # A class of treatment asked about with the question's own technical word ("chemo like paclitaxel"):
    # a study naming that word is about the treatment asked about.
    if treatment and all(a.headings & _CLASSES for a in treatment):
        if any(a.label in named_labels for a in terms):
            treatment = None
    for wanted in (groups.get("condition"), treatment):
        if wanted and not any(a.label in named_labels for a in wanted):
            missing.append(" or ".join(a.label for a in wanted))
    # A technical word the vocabulary does not know (a drug, a procedure) is what the question is about,
    # even when no candidate names it: studies of another drug do not answer (measured: dropping such words
    # when no study names them answered unanswerable questions again: eval/expected/relevance.yaml).
    if terms and 2 * sum(a.label in named_labels for a in terms) < len(terms):
        missing.extend(a.label for a in terms if a.label not in named_labels)
    outcomes = groups.get("outcome", [])
    if outcomes and not (groups.get("condition") or treatment or terms):
        if not any(a.label in named_labels for a in outcomes):
            missing.append(" or ".join(a.label for a in outcomes))
    named_all = tuple(a.label for a in named)
    return StudyRelevance(key, not missing and not too_few, named_all, tuple(missing), share=share)


def _entry_phrases(headings: Iterable[str], terms: Callable[[str], Iterable[str]]) -> set[tuple[str, ...]]:
    """The phrases of the headings' entry terms, as an abstract writes them: "Gastric Neoplasms" (and so
    "gastric cancer") for "Stomach Neoplasms"; not the inverted forms ("Neoplasms, Gastric")."""
    out: set[tuple[str, ...]] = set()
    for h in headings:
        for t in terms(h):
            if "," not in t and (p := _phrase(t)) is not None and (len(p) > 1 or len(p[0]) >= 4):
                out.add(p)
    return out


def judge_relevance(
    focus: Focus,
    docs: Sequence[_Doc],
    expand: Callable[[str], frozenset[str]] | None = None,
    terms: Callable[[str], Iterable[str]] | None = None,
    min_share: float = 0.0,
) -> tuple[StudyRelevance, ...]:
    """The decision on each of ``docs`` (in order). ``expand``: the MeSH headings under a heading (a record
    indexed with "Precursor Cell Lymphoblastic Leukemia-Lymphoma" is about "Leukemia"); ``terms``: a
    heading's entry terms (a text naming one names the heading); ``min_share``: the weighted share of the
    question's words a study must use as well (0: not read; ``COMETA_GATE__RELEVANCE_MIN_WORDS``)."""
    if (expand is not None or terms is not None) and focus.judgeable:
        focus = Focus(
            tuple(
                Anchor(
                    a.label,
                    a.group,
                    a.phrases | _entry_phrases(a.headings, terms) if terms else a.phrases,
                    a.headings | {d.lower() for h in a.headings for d in expand(h)} if expand else a.headings,
                    a.surface,
                )
                for a in focus.anchors
            ),
            focus.words,
        )
    return tuple(
        _decide(focus, d.pmid, study_text(d), frozenset(h.lower() for h in d.mesh), min_share) for d in docs
    )


def relevance_of_texts(
    focus: Focus, keyed: Sequence[tuple[str, str]], min_share: float = 0.0
) -> tuple[StudyRelevance, ...]:
    """The decision on documents that have only a text (a collection's, a node's): ``(key, text)`` each."""
    return tuple(_decide(focus, key, text, frozenset(), min_share) for key, text in keyed)
