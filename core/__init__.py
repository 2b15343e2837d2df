"""The leaf package: what every stage shares and nothing else.

The root of the one error tree (:class:`CometaError`), the protocols the stages type against
(:class:`Encoder`, :class:`Reranker`, :class:`TokenCounter`), the one byte-bounded LRU (:class:`SizedLRU`),
the one sliding-window counter (:class:`SlidingWindow`) and the one text normalisation (:func:`words`,
:data:`STOPWORDS`, :func:`light_stem`).
It imports no other CoMeta package; every other package may import it.
"""

from ._cache import SizedLRU, approx_size
from ._errors import CometaError
from ._protocols import Encoder, FloatArray, OnProgress, Reranker, RerankerKind, TokenCounter
from ._text import STOPWORDS, content_words, fold_accents, light_stem, words
from ._window import KeyedWindows, SlidingWindow

__all__ = [
    "STOPWORDS",
    "CometaError",
    "Encoder",
    "FloatArray",
    "KeyedWindows",
    "OnProgress",
    "Reranker",
    "RerankerKind",
    "SizedLRU",
    "SlidingWindow",
    "TokenCounter",
    "approx_size",
    "content_words",
    "fold_accents",
    "light_stem",
    "words",
]
