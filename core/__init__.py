"""The leaf package: what every stage shares and nothing else.

The root of the one error tree (:class:`CometaError`), the protocols the stages type against
(:class:`Encoder`, :class:`Reranker`, :class:`TokenCounter`) and the one byte-bounded LRU (:class:`SizedLRU`).
It imports no other CoMeta package; every other package may import it.
"""

from ._cache import SizedLRU
from ._errors import CometaError
from ._protocols import Encoder, FloatArray, OnProgress, Reranker, RerankerKind, TokenCounter

__all__ = [
    "CometaError",
    "Encoder",
    "FloatArray",
    "OnProgress",
    "Reranker",
    "RerankerKind",
    "SizedLRU",
    "TokenCounter",
]
