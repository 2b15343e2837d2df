"""Sentence splitting for biomedical prose, with exact character offsets.

:func:`split_sentences` is the product splitter: syntok plus a few repairs for citation and abbreviation
patterns that syntok gets wrong in papers (``et al. [34].``, ``(n = 12). Next``). It won the measurement
in ``bench/sentences.py`` on ``tests/fixtures/sentence_splits.jsonl`` (hand-labelled passages from the
shipped JATS texts and PubMedQA abstracts); the alternatives stay here so the comparison can be rerun.

Every splitter returns :class:`Sentence` s whose ``text == source[start:end]``, stripped of surrounding
whitespace, in order and non-overlapping; together they cover every non-whitespace character.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import Any, Final

from ._types import Sentence

__all__ = [
    "SPLITTERS",
    "Splitter",
    "split_pysbd",
    "split_regex",
    "split_sentences",
    "split_syntok",
    "split_syntok_raw",
]

Splitter = Callable[[str], list[Sentence]]


def _from_starts(text: str, starts: list[int]) -> list[Sentence]:
    """Sentences spanning from each start to the next (whitespace trimmed): exact, gap-free offsets."""
    out: list[Sentence] = []
    bounds = sorted(set(starts))
    for i, s in enumerate(bounds):
        e = bounds[i + 1] if i + 1 < len(bounds) else len(text)
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e > s:
            out.append(Sentence(text[s:e], s, e))
    return out


def _syntok_starts(text: str) -> list[int]:
    from syntok import segmenter  # type: ignore[import-untyped]  # no stubs or py.typed

    starts: list[int] = []
    for paragraph in segmenter.analyze(text):
        for sentence in paragraph:
            for token in sentence:
                starts.append(int(token.offset))
                break
    return starts or [0]


def split_syntok_raw(text: str) -> list[Sentence]:
    """syntok's segmenter as is (offsets taken from its tokens)."""
    if not text.strip():
        return []
    return _from_starts(text, _syntok_starts(text))


# Abbreviations that end a syntok "sentence" although the text goes on: the next piece starts with a
# citation, a number or a lower-case word, which no real sentence after them does.
_ABBREV_END: Final = re.compile(
    r"(?:\bet al|\bFigs?|\bTab|\bRefs?|\bNo|\bNos|\bDr|\b[Cc]a|\bcf|\bvs|\bapprox|\bEqs?|\bi\.e|\be\.g)\.$"
)
_CONTINUES: Final = re.compile(r"^(?:[\[(]\s*\d|\d|[a-z])")
# A closed citation/parenthesis, a full stop, then a capitalised word: syntok sometimes keeps these
# together (``(n = 12). In females``). An upper-case letter followed by ``.`` is an initial
# (``M. tuberculosis``), which this pattern cannot match because it needs ``).`` or ``].``.
_MISSED_BREAK: Final = re.compile(r"[)\]]\.(?=\s+[A-Z][a-z])")


def split_syntok(text: str) -> list[Sentence]:
    """The product splitter: syntok, then merge false breaks after abbreviations and add missed breaks
    after ``).`` / ``].``."""
    if not text.strip():
        return []
    sentences = split_syntok_raw(text)
    merged: list[Sentence] = []
    for s in sentences:
        if merged and _ABBREV_END.search(merged[-1].text) and _CONTINUES.match(s.text):
            prev = merged.pop()
            merged.append(Sentence(text[prev.start : s.end], prev.start, s.end))
        else:
            merged.append(s)
    starts = [s.start for s in merged]
    for s in merged:
        for m in _MISSED_BREAK.finditer(s.text):
            starts.append(s.start + m.end())
    return _from_starts(text, starts)


@cache
def _pysbd_segmenter() -> Any:
    import pysbd  # type: ignore[import-untyped]  # optional comparison baseline, imported lazily

    return pysbd.Segmenter(language="en", clean=False, char_span=True)


def split_pysbd(text: str) -> list[Sentence]:
    """pysbd (rule-based, Golden-Rules tuned) with its character spans."""
    if not text.strip():
        return []
    spans = _pysbd_segmenter().segment(text)
    return _from_starts(text, [int(span.start) for span in spans] or [0])


# Naive baseline: terminal punctuation (plus closing quotes/brackets), whitespace, then a capital,
# digit or opening bracket.
_REGEX_BREAK: Final = re.compile(r"[.!?][\"”’)\]]*(?=\s+[A-Z0-9\[(])")


def split_regex(text: str) -> list[Sentence]:
    """A plain regular-expression splitter: the floor the others must beat."""
    if not text.strip():
        return []
    return _from_starts(text, [0, *(m.end() for m in _REGEX_BREAK.finditer(text))])


SPLITTERS: Final[dict[str, Splitter]] = {
    "syntok+repairs": split_syntok,
    "syntok": split_syntok_raw,
    "pysbd": split_pysbd,
    "regex": split_regex,
}


def split_sentences(text: str) -> list[Sentence]:
    """Split ``text`` into sentences with exact offsets (the benchmark's winner: syntok + repairs)."""
    return split_syntok(text)


# --- structured abstracts: "BACKGROUND: ... METHODS: ..." --------------------------------------------

_SECTION_LABEL = re.compile(r"^\s*([A-Z][A-Za-z &/,-]{1,40}?)\s*:\s+")
# Section names (lower-case prefixes) that report findings, and those that set a study up.
RESULT_SECTIONS = ("result", "conclusion", "finding", "interpretation", "outcome", "discussion")
INTRO_SECTIONS = (
    "background",
    "introduction",
    "purpose",
    "objective",
    "aim",
    "method",
    "design",
    "setting",
    "context",
    "hypothes",
    "rationale",
    "importance",
    "participants",
    "patients",
    "intervention",
)


# Other structured-abstract labels (lower-case prefixes), trusted inside a line as well.
_OTHER_SECTIONS = (
    "material",
    "summary",
    "evidence",
    "study",
    "data source",
    "data extraction",
    "main outcome",
    "measure",
    "trial registration",
    "limitation",
    "significance",
    "clinical relevance",
    "case",
    "comment",
    "level of evidence",
)


# Inside a line a label must be made of whole words of the section names above (prefix matching there
# would take "Cases: 40; controls: 80." or "Study drug: placebo." for labels and drop those words).
_SECTION_WORDS = frozenset(
    """result conclusion finding interpretation outcome discussion background introduction purpose objective
    aim method design setting context hypothesis hypotheses rationale importance participants patients
    intervention material summary evidence study data source extraction main measure trial registration
    limitation significance clinical relevance case comment level selection""".split()
)
_SINGULAR_ONLY = frozenset({"case", "study", "data", "level", "main", "trial", "clinical"})
_CONNECTIVES = frozenset({"and", "of", "&", "/"})


def _whole_section_name(name: str) -> bool:
    """Every word of ``name`` is a section-name word (or its plural), e.g. "Materials and methods"."""
    words = [w for w in re.split(r"[\s,/&-]+", name.lower()) if w and w not in _CONNECTIVES]
    if not words or not name.lower().startswith(RESULT_SECTIONS + INTRO_SECTIONS + _OTHER_SECTIONS):
        return False
    return all(
        w in _SECTION_WORDS or (w.endswith("s") and w[:-1] in _SECTION_WORDS and w[:-1] not in _SINGULAR_ONLY)
        for w in words
    )


def _label_of(line: str, *, known_only: bool = False) -> re.Match[str] | None:
    """The label opening ``line``: any upper-case word at the start of a line, but inside a line
    (``known_only``) only a known section name, word for word: "HR: 0.82 (95% CI ...)", "BMI: 31" and
    "Study drug: placebo." are findings."""
    m = _SECTION_LABEL.match(line)
    if m is None:
        return None
    name = m.group(1)
    if known_only:
        return m if _whole_section_name(name) else None
    if name.lower().startswith(RESULT_SECTIONS + INTRO_SECTIONS + _OTHER_SECTIONS):
        return m
    return m if name.isupper() and not known_only else None


def labelled_sentences(text: str, section: str = "") -> list[tuple[str, str]]:
    """(section, sentence) of ``text``, whitespace collapsed: each line's structured-abstract label (an
    upper-case word or a known section name, else ``section``) is the lower-cased section of its sentences
    and is left out of them. A known section name that opens a sentence inside a line ("... rate.
    CONCLUSIONS: X was ...", abstracts flattened onto one line) starts a section the same way; any other
    upper-case word there ("HR: 0.82 ...", "BMI: 31 ...") is part of the sentence."""
    out: list[tuple[str, str]] = []
    for line in text.splitlines():
        label = section
        m = _label_of(line)
        if m is not None:
            label, line = m.group(1), line[m.end() :]
        for sentence in split_sentences(line):
            clean = " ".join(sentence.text.split())
            inner = _label_of(clean, known_only=True)
            if inner is not None:
                label, clean = inner.group(1), clean[inner.end() :]
            if clean:
                out.append((label.lower(), clean))
    return out
