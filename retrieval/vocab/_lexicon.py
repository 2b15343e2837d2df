"""Curated lay-language lexicon for the deterministic rewriter (and word lists for the PHI scrubber).

Data lives in ``corpus/lexicon/`` (see its README for curation rules):

* ``lay_terms.tsv`` - lay phrase -> clinical term -> MeSH descriptor -> kind;
* ``fillers.txt`` - narrative filler phrases dropped before concept extraction ("my mom", "the doctor said");
* ``stopwords.txt`` - words that never become concepts or query terms on their own;
* ``common_words.txt`` - everyday lay words that abstracts rarely use (never "corrected" by the speller);
* ``words.tsv`` - general word frequencies derived from the bundled PubMedQA corpus (spelling dictionary),
  regenerated with ``python -m retrieval.vocab._lexicon`` after the corpus changes.

Phrases are compared on :func:`normalize_tokens` output, so "Canc'r", "tumour's" and "TUMOUR" line up with
the curated keys without any per-entry spelling variants.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, cast, get_args

__all__ = [
    "KINDS",
    "LEXICON_DIR",
    "SKIP_TOKENS",
    "Kind",
    "LayLexicon",
    "LexEntry",
    "build_word_counts",
    "normalize_token",
    "normalize_tokens",
    "token_spans",
]

LEXICON_DIR = Path(__file__).resolve().parents[1] / "corpus" / "lexicon"

Kind = Literal[
    "disease",
    "site",
    "population",
    "intervention",
    "test",
    "screening",
    "outcome",
    "prognosis",
    "symptom",
    "communication",
    "coping",
    "prevention",
    "etiology",
    "other",
]
KINDS: frozenset[str] = frozenset(get_args(Kind))

# A word: letters/digits, optionally joined by apostrophes ("don't", "canc'r", "mom's").
_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z0-9]+)*")
# Determiners ignored inside phrase matching, so "the biopsy"/"my biopsy" match "biopsy". "her"/"him" stay:
# they are objects as often as possessives ("tell her").
SKIP_TOKENS: frozenset[str] = frozenset({"the", "a", "an", "my", "his", "their", "your", "our", "its"})
# Contractions kept whole (they carry negation that the lexicon relies on: "don't tell", "can't eat").
_CONTRACTIONS = frozenset(
    """don't doesn't didn't can't cannot won't wouldn't shouldn't couldn't isn't aren't wasn't weren't
    haven't hasn't hadn't i'm i've i'll i'd she's he's it's they're we're you're they've we've let's that's
    what's there's who's""".split()
)


def normalize_token(raw: str) -> str:
    """Lower-case; keep known contractions; drop a possessive ``'s``; drop other apostrophes (``canc'r``)."""
    tok = raw.lower().replace("’", "'")
    if "'" not in tok or tok in _CONTRACTIONS:
        return tok
    if tok.endswith("'s"):
        tok = tok[:-2]
    return tok.replace("'", "")


def token_spans(text: str) -> list[tuple[str, int, int]]:
    """``(normalised token, start, end)`` for every word in ``text``."""
    return [(normalize_token(m.group(0)), m.start(), m.end()) for m in _WORD.finditer(text)]


def normalize_tokens(text: str) -> list[str]:
    """Normalised word tokens of ``text`` (hyphens and punctuation split words: "CA 19-9" -> ca 19 9)."""
    return [normalize_token(m.group(0)) for m in _WORD.finditer(text)]


def _phrase_key(text: str) -> str:
    return " ".join(t for t in normalize_tokens(text) if t not in SKIP_TOKENS)


@dataclass(frozen=True, slots=True)
class LexEntry:
    phrase: str  # normalised lay phrase (the match key)
    lay: str  # the lay phrase as curated (lower case), used as a free-text synonym
    clinical: str  # clinical term used as free text in queries
    mesh: str | None  # MeSH descriptor name, when one fits
    kind: Kind


def _data_lines(path: Path) -> Iterable[str]:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            yield line


@functools.lru_cache(maxsize=4)
def _read_entries(path: str) -> tuple[LexEntry, ...]:
    out: list[LexEntry] = []
    for n, line in enumerate(_data_lines(Path(path)), 1):
        cols = [c.strip() for c in line.split("\t")]
        if len(cols) != 4 or not cols[0] or not cols[1] or cols[3] not in KINDS:
            raise ValueError(f"{path}: malformed lexicon row {n}: {line!r}")
        key = _phrase_key(cols[0])
        if not key:
            raise ValueError(f"{path}: row {n} has no matchable words")
        out.append(
            LexEntry(key, " ".join(cols[0].lower().split()), cols[1], cols[2] or None, cast(Kind, cols[3]))
        )
    return tuple(out)


@functools.lru_cache(maxsize=4)
def _read_list(path: str, split_words: bool) -> tuple[str, ...]:
    items: list[str] = []
    for line in _data_lines(Path(path)):
        if split_words:
            items.extend(normalize_token(w) for w in line.split())
        else:
            key = " ".join(normalize_tokens(line))
            if key:
                items.append(key)
    return tuple(items)


@functools.lru_cache(maxsize=4)
def _read_counts(path: str) -> tuple[tuple[str, int], ...]:
    p = Path(path)
    if not p.is_file():
        return ()
    pairs: list[tuple[str, int]] = []
    for line in _data_lines(p):
        word, _, count = line.partition("\t")
        if word and count.isdigit():
            pairs.append((word, int(count)))
    return tuple(pairs)


class LayLexicon:
    """Lay phrase -> clinical entry, filler phrases, stop words and a general word-frequency list."""

    def __init__(
        self,
        entries: Iterable[LexEntry],
        fillers: Iterable[str] = (),
        stopwords: Iterable[str] = (),
        word_counts: Mapping[str, int] | None = None,
        common_words: Iterable[str] = (),
    ) -> None:
        self._entries: dict[str, LexEntry] = {}
        for e in entries:
            self._entries.setdefault(e.phrase, e)  # first row wins, like the file reads
        self.fillers: frozenset[str] = frozenset(fillers)
        self.stopwords: frozenset[str] = frozenset(stopwords)
        self.word_counts: Mapping[str, int] = dict(word_counts or {})
        self.common_words: frozenset[str] = frozenset(common_words)
        self.max_phrase_words = max((len(k.split()) for k in self._entries), default=1)
        self.max_filler_words = max((len(k.split()) for k in self.fillers), default=1)
        by_clinical: dict[str, list[str]] = {}
        for e in self._entries.values():
            by_clinical.setdefault(e.clinical.lower(), []).append(e.phrase)
        self._by_clinical_entries: dict[str, tuple[LexEntry, ...]] = {}
        for e in self._entries.values():
            key = e.clinical.lower()
            self._by_clinical_entries[key] = (*self._by_clinical_entries.get(key, ()), e)
        self._by_clinical = {k: tuple(v) for k, v in by_clinical.items()}

    @classmethod
    def load(cls, directory: Path | None = None) -> LayLexicon:
        """The bundled lexicon (files parsed once per process)."""
        base = directory or LEXICON_DIR
        return cls(
            _read_entries(str(base / "lay_terms.tsv")),
            _read_list(str(base / "fillers.txt"), False),
            _read_list(str(base / "stopwords.txt"), True),
            dict(_read_counts(str(base / "words.tsv"))),
            _read_list(str(base / "common_words.txt"), True) if (base / "common_words.txt").is_file() else (),
        )

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[LexEntry]:
        return iter(self._entries.values())

    def entries(self) -> list[LexEntry]:
        return list(self._entries.values())

    def lookup(self, phrase: str) -> LexEntry | None:
        """Entry for a phrase (any casing/punctuation; determiners ignored)."""
        return self._entries.get(_phrase_key(phrase))

    def lookup_key(self, key: str) -> LexEntry | None:
        """Entry for an already-normalised, space-joined key (the hot path of the rewriter)."""
        return self._entries.get(key)

    def lay_phrases(self, clinical: str) -> tuple[str, ...]:
        """Every lay phrase key curated for a clinical term (its synonyms in the lexicon)."""
        return self._by_clinical.get(clinical.lower(), ())

    def entries_for(self, clinical: str) -> tuple[LexEntry, ...]:
        """Every entry curated for a clinical term, in file order."""
        return self._by_clinical_entries.get(clinical.lower(), ())

    def words(self) -> set[str]:
        """Every word the lexicon knows (phrases, clinical terms, fillers, stop words, common words)."""
        out: set[str] = set(self.stopwords) | self.common_words
        for e in self._entries.values():
            out.update(e.phrase.split())
            out.update(normalize_tokens(e.clinical))
        for f in self.fillers:
            out.update(f.split())
        return out


def build_word_counts(texts: Iterable[str], min_count: int = 2) -> list[tuple[str, int]]:
    """Alphabetic words (>= 3 letters) seen at least ``min_count`` times, most frequent first."""
    counts: dict[str, int] = {}
    for text in texts:
        for tok in normalize_tokens(text):
            if len(tok) >= 3 and tok.isalpha():
                counts[tok] = counts.get(tok, 0) + 1
    return sorted(((w, c) for w, c in counts.items() if c >= min_count), key=lambda p: (-p[1], p[0]))
