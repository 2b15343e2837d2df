"""Text normalisation every stage shares: one word tokenizer, one English stopword set, one light stemmer.

:func:`words` is the tokenizer (letter/digit runs, accents stripped, lower-cased); :func:`content_words`
drops stopwords and short words; :func:`light_stem` conflates inflections. Where a stage needs another word
list, it passes it explicitly (``stopwords=``) and says why at its definition: the local PubMed engine uses
PubMed's own list, the TextTiling baseline its original tokenisation, query understanding a list of words
too generic to tie a query to a question.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

__all__ = ["STOPWORDS", "content_words", "fold_accents", "light_stem", "words"]

_WORD: Final = re.compile(r"[^\W_]+")

# English function words, question words and patient-question fillers. (bm25s's "en" list is Lucene's 33
# words, which keeps "when", "can", "my"...: harmless to BM25 ranking, but they would dominate a term
# coverage check: "my" is absent from every handbook, which says "your".)
STOPWORDS: Final = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just let me more
    most my myself no nor not now of off on once only or other our ours ourselves out over own same she
    should so some such than that the their theirs them themselves then there these they this those
    through to too under until up very was we were what when where which while who whom why will with
    would you your yours yourself yourselves may might must shall ok okay please im ive id dont cant
    get got go going able also really still ever""".split()
)


def fold_accents(text: str) -> str:
    """``"Sjögren"`` -> ``"Sjogren"``: combining marks dropped after NFKD decomposition."""
    if text.isascii():  # the common case skips the (slow) decomposition
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def words(text: str, *, lower: bool = True) -> list[str]:
    """The word tokenizer: runs of letters and digits, accents stripped, lower-cased unless ``lower`` is
    False (for matching that must tell acronyms from words): ``"Sjögren's"`` -> ``['sjogren', 's']``."""
    text = fold_accents(text)
    return _WORD.findall(text.lower() if lower else text)


def content_words(text: str, *, stopwords: frozenset[str] = STOPWORDS, min_length: int = 1) -> list[str]:
    """:func:`words` without ``stopwords`` and without words shorter than ``min_length``, in text order."""
    return [w for w in words(text) if len(w) >= min_length and w not in stopwords]


_STEM_KEEP: Final = frozenset({"this", "his", "its", "was", "has", "does", "is", "us", "bus", "plus"})


def light_stem(word: str) -> str:
    """A small English suffix stemmer (plural, -ing, -ed; final doubled consonant and ``e`` dropped),
    applied alike to documents and queries: ``travelling``/``travels``/``traveled`` -> ``travel``."""
    w = word.lower()
    if len(w) <= 3 or w in _STEM_KEEP:
        return w
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    if w.endswith("ing") and len(w) > 5:
        w = w[:-3]
    elif w.endswith("ed") and len(w) > 4:
        w = w[:-2]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiou":
        w = w[:-1]
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    return w
