"""The leaf package: what every stage shares and nothing else.

The root of the one error tree (:class:`CometaError`), the protocols the stages type against
(:class:`Encoder`, :class:`Reranker`, :class:`TokenCounter`), the one byte-bounded LRU (:class:`SizedLRU`),
the one sliding-window counter (:class:`SlidingWindow`), the one text normalisation (:func:`words`) and the
one module of word lists and stemmers, each used by name (:data:`STOPWORDS`, :func:`common_english`,
:func:`light_stem`, ...).
It imports no other CoMeta package; every other package may import it.
"""

from ._cache import SizedLRU, approx_size
from ._errors import CometaError
from ._paths import user_cache_dir
from ._protocols import Encoder, FloatArray, OnProgress, Reranker, RerankerKind, TokenCounter
from ._text import content_words, fold_accents, words
from ._window import KeyedWindows, SlidingWindow
from ._wordlists import (
    ENGLISH_FUNCTION_WORDS,
    QUERY_GENERIC_WORDS,
    QUESTION_FILLER,
    SPEECH_FILLERS,
    STOPWORDS,
    TEXTTILING_STOPWORDS,
    TOPIC_STOPWORDS,
    common_english,
    english_frequencies,
    light_stem,
    prefix_stem,
)

__all__ = [
    "ENGLISH_FUNCTION_WORDS",
    "QUERY_GENERIC_WORDS",
    "QUESTION_FILLER",
    "SPEECH_FILLERS",
    "STOPWORDS",
    "TEXTTILING_STOPWORDS",
    "TOPIC_STOPWORDS",
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
    "common_english",
    "content_words",
    "english_frequencies",
    "fold_accents",
    "light_stem",
    "prefix_stem",
    "user_cache_dir",
    "words",
]
