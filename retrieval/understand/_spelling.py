"""Spelling correction for narratives, against the shipped vocabulary (MeSH names, entry terms, ATM
synonyms, the lay lexicon, corpus words).

Symmetric-delete candidates, edit distance <= 1 for words of 4-7 letters and <= 2 from 8 letters, ties
broken towards clinical words, then corpus frequency. Acronyms, words with a capital inside (eGFR, sRAGE),
capitalised words mid-sentence, PHI spans and scrub placeholders are never touched.

What is not a typo is never "corrected" (issue 15: "heal" -> "head", "fosinopril" -> "eosinophil"):

* a word of everyday English (:func:`core.english_frequencies`, pyspellchecker's English word counts), or an
  inflection of one - the clinical vocabulary alone lacks "heal", "lift", "beach";
* an unknown word with a drug-name stem (:data:`INN_STEMS`: "-pril", "-sartan", "-mab" ...) is only
  corrected to a word with the same stem ("lisinipril" -> "lisinopril", never "fosinopril" -> "eosinophil");
* a distance-2 correction keeps the first letter (writers rarely get it wrong; two edits including the
  first letter make another word, not a typo);
* a correction that only swaps, adds or drops a prefix ("hypobaric" -> "hyperbaric") changes the meaning,
  not the spelling.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from core import english_frequencies

from ._phi import _PLACEHOLDER

__all__ = ["INN_STEMS", "Speller", "correct_spelling", "shared_speller"]

_SPELLERS: dict[tuple[int, int], Speller] = {}
_MIN_TARGET_FREQ = 5  # a general (non-clinical) word must be this common in the corpus to be suggested
# "." after these does not end a sentence ("Dr. Patel" is mid-sentence, so "Patel" is left alone).
_ABBREVIATIONS = frozenset({"dr", "mr", "mrs", "ms", "st", "prof", "vs", "no", "approx", "etc", "e.g", "i.e"})


# The ~5,000 most common English words by pyspellchecker's counts ("heart", "treat", "tired", "virus",
# "cancer"), where an everyday sense competes with the clinical one; "biopsy", "lymphoma" are far rarer.
_EVERYDAY_FLOOR = 10_000

# Drug-name stems of the WHO's "The use of stems in the selection of International Nonproprietary Names"
# (INN stem book), the common suffix stems. An unknown word ending in one is a drug name the vocabulary
# lacks: it is corrected only towards a word with the same stem.
INN_STEMS: tuple[str, ...] = tuple(
    sorted(
        set(
            """
            pril prilat olol alol sartan entan statin fibrate formin gliptin gliflozin
            glutide glinide glitazone parin xaban gatran grel dipine tiazide thiazide
            semide afil azosin oxetine apine idone peridol ipramine triptyline azepam
            zolam azepine triptan setron pitant caine barbital profen fenac coxib
            dronate lukast tropium terol prazole tidine azole conazole fungin mycin
            micin cillin penem bactam cycline floxacin oxacin vir vudine quine mab cept
            kinra nib ciclib parib lisib rafenib degib platin taxel rubicin citabine
            trexate mustine tecan olimus grastim poetin plase relin relix lutamide
            trozole ifene curium curonium onide olone asone sonide tide stim
            """.split()
        ),
        key=lambda stem: (-len(stem), stem),
    )
)
_MIN_STEM_WORD = 3  # letters before the stem: "mab" alone or "tide" in "tide" is no drug name

# Prefixes whose swap, addition or removal makes another word, not a typo ("hypobaric" / "hyperbaric").
_PREFIXES = frozenset(
    """
    an anti auto bi brady co contra counter de dis dys endo epi exo extra hemi hetero homo hydro
    hyper hypo il im in infra inter intra ir macro mal micro mid mono multi neo non over para
    peri poly post pre pro pseudo re retro semi sub super supra tachy trans tri ultra un under
    uni
    """.split()
)
_MIN_PREFIX_REST = 5  # the shared remainder must be a word part, not a few letters

# Real-word errors: English words that, in a clinical question, are a classic misspelling of a clinical word
# ("prostrate cancer"). The English list protects them, so they are named here.
_REAL_WORD_ERRORS = {"prostrate": "prostate"}


def drug_stem(word: str) -> str | None:
    """The INN stem ``word`` ends with ("fosinopril" -> "pril"), or None."""
    for stem in INN_STEMS:
        if word.endswith(stem) and len(word) - len(stem) >= _MIN_STEM_WORD:
            return stem
    return None


def _prefix_swap(word: str, cand: str) -> bool:
    """``word`` and ``cand`` differ only in a leading prefix (one of them may have none)."""
    for i in range(len(word) - _MIN_PREFIX_REST + 1):
        head, rest = word[:i], word[i:]
        if i and head not in _PREFIXES:
            continue
        if cand.endswith(rest) and cand != word:
            other = cand[: len(cand) - len(rest)]
            if other != head and (not other or other in _PREFIXES):
                return True
    return False


class Speller:
    """Symmetric-delete spelling corrector over a word -> (frequency, clinical?) dictionary; words of
    ``english`` (default :func:`english_frequencies`) are real words, never corrected."""

    def __init__(
        self, words: dict[str, int], clinical: frozenset[str], english: Mapping[str, int] | None = None
    ) -> None:
        self.known = frozenset(words)
        self.freq = words
        self.clinical = clinical
        self._english = english
        self._index: dict[str, list[str]] | None = None
        self._longest_target = 0  # the longest word a correction can be (set with the index)
        self._longest_english: int | None = None

    def prepare(self) -> None:
        """Load the English list and build the delete index now (~0.8 s together) rather than on the first
        question with an unknown word: the service's start-up warm-up calls this."""
        self._english_counts()
        if self._index is None:
            self._index = self._build()

    def _english_counts(self) -> Mapping[str, int]:
        """Everyday English with its counts, loaded on first use (``english`` given at construction wins)."""
        if self._english is None:
            self._english = english_frequencies()
        return self._english

    @staticmethod
    def _max_distance(word: str) -> int:
        return 1 if len(word) < 8 else 2

    @staticmethod
    def _deletes(word: str, depth: int) -> set[str]:
        out: set[str] = set()
        frontier = {word}
        for _ in range(depth):
            nxt: set[str] = set()
            for w in frontier:
                if len(w) <= 2:
                    continue
                for i in range(len(w)):
                    nxt.add(w[:i] + w[i + 1 :])
            out |= nxt
            frontier = nxt
        return out

    def _build(self) -> dict[str, list[str]]:
        index: dict[str, list[str]] = {}
        for w in self.known:
            if len(w) < 4 or not w.isalpha():
                continue
            if w not in self.clinical and self.freq.get(w, 0) < _MIN_TARGET_FREQ:
                continue  # rare corpus words are known (never corrected) but not suggested
            for d in (w, *self._deletes(w, self._max_distance(w))):
                index.setdefault(d, []).append(w)
            self._longest_target = max(self._longest_target, len(w))
        return index

    def is_known(self, word: str) -> bool:
        """In the dictionary, or an inflection of a known word or of one of its known forms ("thinks",
        "scanned", "updates" when only "updated" is known)."""
        return _in_vocabulary(word, self.known)

    def is_english(self, word: str) -> bool:
        """A word of everyday English, or an inflection of one ("heal", "beaches"): never a typo, though the
        clinical dictionary (:meth:`is_known`) may lack it."""
        return _in_vocabulary(word, self._english_counts())

    def is_everyday(self, word: str) -> bool:
        """One of the most common English words (count above :data:`_EVERYDAY_FLOOR`)."""
        return self._english_counts().get(word, 0) > _EVERYDAY_FLOOR

    def is_technical(self, word: str) -> bool:
        """Neither everyday English nor one edit from an English word ("metalic", "engnie", "depossit" are
        typos, not terms): a drug or procedure name, or a coined word."""
        if self.is_english(word):
            return False
        if self._longest_english is None:
            self._longest_english = max(map(len, self._english_counts()), default=0)
        if len(word) > self._longest_english + 4:
            # One edit and an inflection ("-ies" -> "y") shorten a word by 4 at most: no neighbour of this
            # one can be English. Said before building them: a 2,000-letter "word" has ~100,000 neighbours.
            return True
        # The one-edit neighbours, as pyspellchecker's edit_distance_1 builds them; its method needs a live
        # SpellChecker (its whole 160k-word list) and english_frequencies keeps only the words it needs.
        letters = "abcdefghijklmnopqrstuvwxyz"
        splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
        edits = {a + b[1:] for a, b in splits if b}
        edits |= {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
        edits |= {a + c + b[1:] for a, b in splits if b for c in letters}
        edits |= {a + c + b for a, b in splits for c in letters}
        return not any(self.is_english(e) for e in edits if e != word and len(e) > 2)

    def correct(self, word: str) -> str | None:
        """Best dictionary word within the allowed distance, or None (known, English, too short or no
        candidate that could be a typo of it)."""
        if word in _REAL_WORD_ERRORS:
            return _REAL_WORD_ERRORS[word]
        if len(word) < 4 or not word.isalpha() or self.is_known(word) or self.is_english(word):
            return None
        if self._index is None:
            self._index = self._build()  # built on first use: ~0.5 s, never on the happy path of clean text
        max_d = self._max_distance(word)
        if len(word) > self._longest_target + max_d:
            # No dictionary word is within reach. Said before the deletes: a long "word" ("ab" * 1000) has
            # millions of distance-2 deletes (seconds of CPU and gigabytes of memory on the event loop).
            return None
        stem = drug_stem(word)
        seen: set[str] = set()
        best: tuple[int, int, int, int, str] | None = None
        for variant in (word, *self._deletes(word, max_d)):
            for cand in self._index.get(variant, ()):
                if cand in seen:
                    continue
                seen.add(cand)
                d = _osa_distance(word, cand, max_d)
                if d > max_d or (d == 2 and (cand[0] != word[0] or _sounds(cand) != _sounds(word))):
                    continue
                if (stem is not None and not cand.endswith(stem)) or _prefix_swap(word, cand):
                    continue
                # At one distance, two letters swapped is the likelier typo ("agian" is "again", not the
                # clinical "avian"), then a clinical word, then the commoner one.
                swap = 0 if _swapped(word, cand) else 1
                key = (d, swap, 0 if cand in self.clinical else 1, -self.freq.get(cand, 0), cand)
                if best is None or key < best:
                    best = key
        return None if best is None else best[4]


# (suffix, stem endings to try): "thinks" -> think, "biopsies" -> biopsy, "hoping" -> hope.
_INFLECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ies", ("y",)),
    ("es", ("", "e")),
    ("s", ("",)),
    ("ied", ("y",)),
    ("ed", ("", "e")),
    ("ing", ("", "e")),
    ("ly", ("",)),
)


_SIBLINGS = ("s", "es", "d", "ed", "ing")


def _swapped(a: str, b: str) -> bool:
    """``b`` is ``a`` with two neighbouring letters swapped."""
    if len(a) != len(b):
        return False
    diff = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
    return len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]


def _sounds(word: str) -> str:
    """A rough sound of ``word``: its first letter, then its consonants with "ph" read as "f", "h" dropped and
    doubled letters once. Two edits that keep it are a misspelling ("eosinofil", "acetominiphen", "diarea");
    two that change it make another word ("propofol" / "protocol", "melanotan" / "melanoma")."""
    rest = re.sub(r"(.)\1+", r"\1", re.sub(r"[aeiouyh]", "", word[1:].replace("ph", "f")))
    return word[0] + rest


def _in_vocabulary(word: str, vocabulary: frozenset[str] | Mapping[str, int]) -> bool:
    """``word`` is in ``vocabulary``, or an inflection of a word there or of one of its forms there."""
    if word in vocabulary:
        return True
    for suffix, repl in _INFLECTIONS:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            stem = word[: len(word) - len(suffix)]
            bases = {stem + r for r in repl}
            if suffix in ("ed", "ing") and len(stem) > 3 and stem[-1] == stem[-2]:
                bases.add(stem[:-1])  # doubled consonant: "scanned" -> scan
            for base in bases:
                if base in vocabulary or any(base + end in vocabulary for end in _SIBLINGS):
                    return True
    return False


def _osa_distance(a: str, b: str, limit: int) -> int:
    """Optimal-string-alignment (Damerau) distance, returning ``limit + 1`` as soon as it is exceeded."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            v = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                v = min(v, prev2[j - 2] + 1)
            cur[j] = v
        if min(cur) > limit:
            return limit + 1
        prev2, prev = prev, cur
    return prev[-1]


def shared_speller(words: dict[str, int], clinical: frozenset[str]) -> Speller:
    """The speller for this word set; rewriters over the same words share one, as its delete index costs
    ~0.5 s to build."""
    cache_key = (hash(frozenset(words.items())), hash(clinical))
    speller = _SPELLERS.get(cache_key)
    if speller is None:
        if len(_SPELLERS) >= 4:
            _SPELLERS.pop(next(iter(_SPELLERS)))
        speller = _SPELLERS[cache_key] = Speller(words, clinical)
    return speller


# A pronoun with a contracted verb, with or without its apostrophe (chat spelling drops it).
_CONTRACTION = re.compile(r"(?:i|you|he|she|it|we|they|that|there|what|who)'?(?:ll|re|ve|d)")


def correct_spelling(
    text: str, speller: Speller, lay_words: frozenset[str], protected: Sequence[tuple[int, int]] = ()
) -> str:
    """``text`` with misspelled words replaced by ``speller``'s closest word; spans in ``protected`` kept.

    A capitalised word is only corrected towards ``lay_words`` (curated lay phrases), so names survive.
    """
    parts: list[str] = []
    pos = 0
    sentence_start = True
    previous = ""
    for m in re.finditer(r"[A-Za-z0-9]+(?:['’][A-Za-z0-9]+)*|[.!?\n]", text):
        raw = m.group(0)
        if raw in ".!?\n":
            if not (raw == "." and previous.lower() in _ABBREVIATIONS):
                sentence_start = True
            continue
        previous = raw
        start_of_sentence, sentence_start = sentence_start, False
        if any(s < m.end() and m.start() < e for s, e in protected):
            continue
        if text[max(0, m.start() - 1) : m.start()] == "[" and _PLACEHOLDER.match(text, m.start() - 1):
            continue  # "[NAME]" and friends stay as they are
        if any(c.isupper() for c in raw[1:]):
            continue  # acronyms (FOLFOX, ABVD) and words with a capital inside (eGFR, sRAGE) are not typos
        if raw[0].isupper() and not start_of_sentence:
            continue  # a capitalised word mid-sentence is more likely a name than a typo
        norm = raw.lower().replace("’", "'")
        if _CONTRACTION.fullmatch(norm):
            continue  # "it'll", "itll", "they've": a pronoun's contraction, never a typo of "ATLL"
        if "'" in norm:
            # "canc'r": an apostrophe inside an unknown word is a typo, not a contraction.
            if norm in speller.known or norm.endswith("'s"):
                continue
            norm = norm.replace("'", "")
            if norm in speller.known:
                parts.append(text[pos : m.start()])
                parts.append(norm)
                pos = m.end()
                continue
        fix = speller.correct(norm)
        if fix is not None and raw[0].isupper() and fix not in lay_words:
            fix = None  # a capitalised word is only fixed towards curated lay words: "Maria" !-> "Mania"
        if fix is not None:
            parts.append(text[pos : m.start()])
            parts.append(fix.capitalize() if raw[0].isupper() else fix)
            pos = m.end()
    parts.append(text[pos:])
    return "".join(parts)
