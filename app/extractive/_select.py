"""Which studies and sentences of the evidence answer a question without a model (the extractive answer)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from core import TOPIC_STOPWORDS, prefix_stem
from retrieval.evidence import StudyGrade
from segmentation import INTRO_SECTIONS, RESULT_SECTIONS, labelled_sentences

__all__ = [
    "NOT_ADDRESSED",
    "close_to_best",
    "content_terms",
    "extractive_answer",
    "has_words",
    "lead_study",
]

# What a source's own answer says when it does not address the question (prompt ``answer_per_source``).
NOT_ADDRESSED = "NOT ADDRESSED: This source does not contain information on this topic."

_WORD_RE = re.compile(r"[^\W\d_]{2,}")
_CONTENT_WORD_RE = re.compile(r"[a-z0-9]+")
# An upper-case acronym followed by numbers: "CA 19-9", "HER-2", "IL 6".
_ACRONYM_RE = re.compile(r"\b([A-Z]{1,5})[\s-]?(\d{1,3})(?:[\s-](\d{1,3}))?\b")


def content_terms(text: str) -> set[str]:
    """The words of ``text`` that say what it is about, cut to a 5-character prefix: a cheap stem
    ("travel"/"travelling", "transplant"/"transplantation"). Acronyms with numbers are one term, however
    written ("CA 19-9", "CA19-9", "CA 19 9" -> ``ca199``; "HER2", "HER-2" -> ``her2``)."""
    text = _ACRONYM_RE.sub(lambda m: "".join(g for g in m.groups() if g) + " ", text)
    return {
        prefix_stem(w, 5) if not any(c.isdigit() for c in w) else w
        for w in _CONTENT_WORD_RE.findall(text.lower())
        if w not in TOPIC_STOPWORDS and len(w) > 2
    }


def has_words(text: str, n: int = 3) -> bool:
    """At least ``n`` real words (two letters or more) in ``text``."""
    return len(_WORD_RE.findall(text)) >= n


# How a question is asked, not what it is about: "my doctor suggests X; compared to Y, will it affect Z?",
# "is X better or worse than Y?". Matching them picks sentences that restate the arms, not findings.
_FRAME = content_terms(
    "doctor suggests suggested offered instead make rather also dummy treatment someone worth"
)
_RESULT_CUES = re.compile(
    r"\b(significant(ly)?|reduc\w*|increas\w*|improv\w*|no (significant )?differen\w*|associated|higher|"
    r"lower|better|worse|conclu\w*|suggest\w*|effective|benefit\w*|p\s*[<=>]|hazard ratio|odds ratio|"
    r"relative risk|95\s*%)",
    re.IGNORECASE,
)
# A reported effect: a p-value, an interval, a ratio, or figures set against each other.
_EFFECT = re.compile(
    r"\bp\s*[<=>≤≥]\s*[0.]|\b(95|99)\s*%|(?-i:\bCI\b)|confidence interval|\b(hazard|odds|risk|rate) ratio|"
    r"(?-i:\b(HR|OR|RR|NNT)\b)|\d\s*%?\s*(vs\.?|versus)\s*\d|\d\s*(%|mg|mmol|kg|days?|weeks?|months?)\b.{0,60}"
    r"\bcompared\b",
    re.IGNORECASE,
)
# A sentence that sets the study up (arms, aims) rather than reporting what it found.
_SETUP = re.compile(
    r"\b(were|was) (randomi[sz]ed|randomly (assigned|allocated|divided)|allocated|assigned|enrolled|"
    r"recruited|included|administered|given|held)\b|\brandomi[sz]ed to\b|"
    r"\b(aims?|objectives?|purpose|goal) (of|was|is)\b|"
    r"^(aims?|objectives?|purpose|background|introduction|methods?|methodology)\b|"
    r"\breceived (either |a |an |the |bilateral |single |routine |usual |standard )?[a-z]|"
    r"\bwe (aim|sought|evaluated|investigated|assessed|compared|examined|conducted|designed|hypothesi)|"
    r"\b(this|the present|our) (study|trial) (was|is|aims?|aimed|evaluat|compar|investigat|examin|assess)|"
    r"^(to (compare|evaluate|assess|investigate|determine|examine))\b",
    re.IGNORECASE,
)

# Concepts that name a comparison arm, not what the question is about (their MeSH headings included).
_COMPARATOR_TERMS = content_terms(
    "placebo placebos sham control controls usual standard care routine dummy vehicle no treatment "
    "conventional"
)

# The knobs of the choice, calibrated on the dev split (docs/history/answers-notes.md).
PER_STUDY = 2  # sentences quoted per study
TOP_STUDY_EXTRA = 1  # and this many more from the study that matches best
RESULT_SECTION_BONUS = 2.5
INTRO_SECTION_PENALTY = 1.0
RESULT_CUE_BONUS = 0.5
CONCLUSION_BONUS = 1.5
_CONCLUSION_SECTIONS = ("conclusion", "interpretation")
_TRIAL_DESIGNS = ("randomised trial", "clinical trial")
_METHOD_SECTIONS = (
    "method",
    "design",
    "patients and",
    "participants",
    "setting",
    "intervention",
    "materials",
)
EFFECT_BONUS = 1.0
SETUP_PENALTY = 1.5
# The study that leads (first line, one sentence more) has a relevance within this share of the best's.
LEAD_NEAR = 0.9


class _Block(Protocol):
    @property
    def key(self) -> str: ...
    @property
    def label(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def cite(self) -> str: ...


class _Evidence(Protocol):
    @property
    def blocks(self) -> Sequence[_Block]: ...
    @property
    def studies(self) -> Mapping[str, StudyGrade]: ...
    @property
    def abstracts(self) -> Mapping[str, str]: ...
    @property
    def relevance(self) -> Mapping[str, float]: ...


@dataclass(frozen=True, slots=True)
class _Sentence:
    key: str  # the study
    order: int  # position among all sentences (text order within a study)
    section: str
    text: str
    terms: frozenset[str]


def _block_section(block: _Block) -> str:
    # "[PMID:1] 2020 | Review | section: Results > Survival" -> "results > survival"
    return block.label.rsplit("section:", 1)[-1].strip().lower() if "section:" in block.label else ""


def _is_result(section: str) -> bool:
    return section.startswith(RESULT_SECTIONS) or any(k in section for k in RESULT_SECTIONS)


def _is_trial(grade: StudyGrade | None) -> bool:
    return grade is not None and grade.design in _TRIAL_DESIGNS


def _sentences(evidence: _Evidence) -> list[_Sentence]:
    """Every sentence of the evidence blocks and the cited studies' abstracts, once per study."""
    sources = [(b.key, b.text, _block_section(b)) for b in evidence.blocks]
    sources += [(key, text, "abstract") for key, text in evidence.abstracts.items()]
    out: list[_Sentence] = []
    seen: set[tuple[str, str]] = set()
    order = 0
    for key, text, section in sources:
        for sec, sentence in labelled_sentences(text, section):
            order += 1
            if (key, sentence) in seen or len(sentence) < 20 or not has_words(sentence):
                continue
            seen.add((key, sentence))
            out.append(_Sentence(key, order, sec, sentence, frozenset(content_terms(sentence))))
    return out


def sentence_score(
    sentence: _Sentence, matched: set[str], weight: Mapping[str, float], *, trial: bool = False
) -> float:
    """How well ``sentence`` answers: its share of the question's words (rarer words count more), results
    and conclusions above background and aims, a reported effect (p-value, interval, figures compared)
    above a sentence that only describes the arms."""
    score = sum(weight.get(t, 1.0) for t in matched)
    if _is_result(sentence.section):
        score += RESULT_SECTION_BONUS
        if not trial and sentence.section.startswith(_CONCLUSION_SECTIONS):
            # Outside trials the authors' bottom line answers best; a trial's answer is its measured effect.
            score += CONCLUSION_BONUS
    elif sentence.section.startswith(INTRO_SECTIONS) or any(m in sentence.section for m in _METHOD_SECTIONS):
        score -= INTRO_SECTION_PENALTY
    if _RESULT_CUES.search(sentence.text):
        score += RESULT_CUE_BONUS
    if _EFFECT.search(sentence.text):
        score += EFFECT_BONUS
    if _SETUP.search(sentence.text):
        score -= SETUP_PENALTY
    return score


def _weights(sentences: Sequence[_Sentence], wanted: set[str]) -> dict[str, float]:
    """Per question word, how telling a match is: words most sentences share ("placebo" among placebo
    trials) count less than the one outcome or drug only the answering sentences name."""
    if not sentences:
        return {}
    found = Counter(t for s in sentences for t in s.terms & wanted)
    n = len(sentences)
    raw = {t: math.log(1 + n / f) for t, f in found.items()}
    mean = sum(raw.values()) / len(raw) if raw else 1.0
    return {t: w / mean for t, w in raw.items()}  # a typical word still counts about 1


def _anchors(concepts: Sequence[str]) -> set[str]:
    """The words of the concepts a study must name one of. A comparator concept ("placebo", "usual care",
    "sham") is named by every trial that has one, so it only counts when the question names nothing else:
    otherwise "placebo" alone would make a trial of another drug an answer about this one."""
    own = [content_terms(c) for c in concepts]
    specific = [terms for terms in own if terms and not terms <= _COMPARATOR_TERMS]
    return set().union(*specific) if specific else set().union(*own) if own else set()


def close_to_best(keys: Sequence[str], relevance: Mapping[str, float], ratio: float) -> list[str]:
    """``keys`` (in order) without the studies far less similar to the question than the most similar of
    them: below ``ratio`` times the best one's ``relevance``. A study of unknown relevance stays (nothing
    says it is off the point), and so does every study when the best relevance is not positive or ``ratio``
    is 0 (off)."""
    top = max((relevance[k] for k in keys if k in relevance), default=0.0)
    if top <= 0 or ratio <= 0:
        return list(keys)
    return [k for k in keys if k not in relevance or relevance[k] >= ratio * top]


def lead_study(ranked: Sequence[str], relevance: Mapping[str, float]) -> str:
    """The study that answers best: of ``ranked`` (best-matching sentences first), the first whose relevance
    is within :data:`LEAD_NEAR` of the most similar study's. A study that shares more of the question's
    words but is clearly less similar to the question (a pancreas retransplantation series asked about a
    Whipple) does not lead. ``ranked[0]`` when no relevance is known."""
    top = max((relevance[k] for k in ranked if k in relevance), default=0.0)
    if top <= 0:
        return ranked[0]
    return next(k for k in ranked if relevance.get(k, top) >= LEAD_NEAR * top)


def _study_answer(
    evidence: _Evidence,
    question: str,
    max_studies: int,
    current_year: int | None,
    concepts: Sequence[str] = (),
    old_after: int = 10,
    min_relevance: float = 0.0,
) -> tuple[str, tuple[str, ...]]:
    """One line per study that answers the question: what the study was, then its best sentences. With
    ``concepts`` (the question's recognised clinical concepts), the study must name one of them, a comparator
    such as "placebo" only when there is no other: "high" and "mass" alone never make a sleeve-gastrectomy
    study an answer about a pancreatic mass, nor "placebo" alone a trial of another drug an answer about
    this one. With ``min_relevance`` (0: off), a study whose similarity to the question
    (``evidence.relevance``) is below that share of the most similar one's is left out
    (:func:`close_to_best`). The study that answers best (:func:`lead_study`) comes first and quotes
    :data:`TOP_STUDY_EXTRA` sentences more than the others; the others follow strongest design first, then
    most recent."""
    anchors = _anchors(concepts)
    # Doses and counts ("400 mg", "3 weeks") name an arm, and match the methods sentence that restates it.
    wanted = {t for t in content_terms(" ".join([question, *concepts])) - _FRAME if not t.isdigit()}
    wanted = wanted or content_terms(question)
    need = min(2, len(wanted)) or 1
    sentences = _sentences(evidence)
    weight = _weights(sentences, wanted)
    first_seen: dict[str, int] = {}
    for b in evidence.blocks:
        first_seen.setdefault(b.key, len(first_seen))
    for key in evidence.abstracts:
        first_seen.setdefault(key, len(first_seen))
    named: dict[str, set[str]] = {}
    for s in sentences:
        named.setdefault(s.key, set()).update(s.terms)
    by_study: dict[str, list[_Sentence]] = {}
    for s in sentences:
        by_study.setdefault(s.key, []).append(s)
    # Within a study, the arms are named in most sentences; the outcome only where it is reported.
    own_weights = {key: _weights(found, wanted) for key, found in by_study.items()}
    picked: dict[str, list[tuple[float, int, str]]] = {}
    for s in sentences:
        # The study must name a concept somewhere (its result sentence may say "HCD", not "diet").
        if anchors and not anchors & named[s.key]:
            continue
        matched = set(wanted & s.terms)
        if len(matched) >= need or (_is_result(s.section) and matched):
            trial = _is_trial(evidence.studies.get(s.key))
            own = own_weights[s.key]
            w = {t: weight.get(t, 1.0) * own.get(t, 1.0) for t in matched}
            score = sentence_score(s, matched, w, trial=trial)
            picked.setdefault(s.key, []).append((score, s.order, s.text))
    if not picked:
        return NOT_ADDRESSED, ()
    best = {k: max(score for score, _o, _t in found) for k, found in picked.items()}
    # The most relevant studies (best sentence, then retrieval rank) ...
    ranked = sorted(picked, key=lambda k: (-best[k], first_seen[k]))
    # Sharing the question's words is not being about it: a study retrieval found far less similar to the
    # question than the best one is left out, however many of its words it repeats.
    ranked = close_to_best(ranked, evidence.relevance, min_relevance)
    relevant = ranked[:max_studies]
    lead = lead_study(relevant, evidence.relevance)

    # ... the one that answers best first, the others strongest design first, then most recent.
    def strength(key: str) -> tuple[bool, int, int, int]:
        grade = evidence.studies.get(key)
        if grade is None:
            return (key != lead, 99, 0, first_seen[key])
        return (key != lead, grade.rank, -(grade.year or 0), first_seen[key])

    cites = {b.key: b.cite for b in evidence.blocks}
    lines: list[str] = []
    for key in sorted(relevant, key=strength):
        many = PER_STUDY + (TOP_STUDY_EXTRA if key == lead else 0)
        chosen = sorted(picked[key], key=lambda t: (-t[0], t[1]))[:many]
        quoted = " ".join(text for _s, _o, text in sorted(chosen, key=lambda t: t[1]))
        grade = evidence.studies.get(key)
        intro = grade.describe() if grade is not None else "Source"
        if grade is not None and current_year is not None and (age := grade.age(current_year)) is not None:
            intro += f" (published {age} years ago)" if age > old_after else ""
        lines.append(f"{intro[0].upper()}{intro[1:]}: {quoted} {cites.get(key, f'[PMID:{key}]')}")
    return "\n".join(lines), tuple(relevant)


def extractive_answer(
    evidence: _Evidence,
    sentences: int,
    *,
    question: str | None = None,
    studies: int | None = None,
    current_year: int | None = None,
    concepts: Sequence[str] = (),
    old_after: int = 10,
    min_relevance: float = 0.0,
) -> tuple[str, tuple[str, ...]]:
    """Evidence sentences quoted, each followed by its block's citation: (text, keys of the blocks quoted).
    Structured-abstract section labels ("METHODS:") are never quoted.

    With ``question`` and ``studies``: one line per study that answers the question (at most ``studies``):
    what the study was (year, design, number of patients, from ``evidence.studies``), then its
    :data:`PER_STUDY` best sentences (:func:`sentence_score`: the question's and its ``concepts``' words,
    rarer ones weighing more, results and reported effects preferred, a conclusion outside trials), from
    studies that name one of the ``concepts`` when they are given and, with ``min_relevance`` (0: off),
    whose similarity to the question is at least that share of the most similar one's; the study that answers
    best first, the others ordered by strength of design, then recency; :data:`NOT_ADDRESSED` when no
    sentence matches.

    Without ``question``: the top sentences of at least three words, round-robin over the blocks (best
    block first) so that several sources show; ``""`` when there are none. With ``question`` only: the
    sentences sharing most content words with it (at least two, or the only one of a one-word question;
    20 characters or more), in text order; :data:`NOT_ADDRESSED` when none does, so that a source that
    does not speak to the question says so.
    """
    if question is not None and studies is not None:
        return _study_answer(evidence, question, studies, current_year, concepts, old_after, min_relevance)
    picked: list[tuple[str, _Block]] = []
    if question is None:
        per_block = [
            [t for _sec, t in labelled_sentences(b.text, "") if has_words(t)] for b in evidence.blocks
        ]
        depth = 0
        while len(picked) < sentences and any(depth < len(s) for s in per_block):
            for block, found in zip(evidence.blocks, per_block, strict=True):
                if depth < len(found) and len(picked) < sentences:
                    picked.append((found[depth], block))
            depth += 1
    else:
        wanted = content_terms(question)
        need = min(2, len(wanted)) or 1
        scored: list[tuple[int, int, str, _Block]] = []
        order = 0
        for block in evidence.blocks:
            for _sec, text in labelled_sentences(block.text, ""):
                overlap = len(wanted & content_terms(text))
                if overlap >= need and len(text) >= 20:
                    scored.append((-overlap, order, text, block))
                order += 1
        best = sorted(scored, key=lambda t: (t[0], t[1]))[:sentences]
        picked = [(text, block) for _o, _i, text, block in sorted(best, key=lambda t: t[1])]
        if not picked:
            return NOT_ADDRESSED, ()
    text = " ".join(f"{sentence} {block.cite}" for sentence, block in picked)
    return text, tuple(dict.fromkeys(block.key for _s, block in picked))
