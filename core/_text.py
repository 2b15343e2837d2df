"""The word tokenizer every stage shares: letter/digit runs, accents stripped, lower-cased.

:func:`words` is the tokenizer; :func:`content_words` drops stopwords (:data:`~core._wordlists.STOPWORDS`
unless a stage passes another named list of :mod:`core._wordlists`) and short words.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

from ._wordlists import STOPWORDS

__all__ = ["content_words", "fold_accents", "words"]

_WORD: Final = re.compile(r"[^\W_]+")


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
