"""Protocols every stage shares: how text becomes vectors, how passages are rescored, how tokens are counted.

They live in the leaf package so that segmentation, retrieval and the app can type against them without
importing one another; the implementations live in ``retrieval.embed`` and ``segmentation``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = ["Encoder", "FloatArray", "OnProgress", "Reranker", "RerankerKind", "TokenCounter"]


FloatArray = npt.NDArray[np.float32]

# How long-running library work reports progress: ``(done, total)`` after each step, ``total`` 0 when unknown.
# Library code never draws; the CLI turns these calls into a bar.
OnProgress = Callable[[int, int], None]


@runtime_checkable
class Encoder(Protocol):
    """Maps questions and (title, abstract) documents into one vector space compared by inner product.

    ``name`` identifies the vector space: an index records it and refuses queries from any other encoder.
    """

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    @property
    def query_max_length(self) -> int: ...

    @property
    def doc_max_length(self) -> int: ...

    def encode_queries(self, texts: Sequence[str], batch_size: int = 32) -> FloatArray: ...

    def encode_documents(
        self, docs: Sequence[tuple[str, str]], batch_size: int = 32, on_progress: OnProgress | None = None
    ) -> FloatArray: ...


RerankerKind = Literal["cross-encoder", "bi-encoder"]


@runtime_checkable
class Reranker(Protocol):
    """Scores passages against a query; higher is better. ``note`` explains a degraded choice (or None)."""

    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> RerankerKind: ...

    @property
    def note(self) -> str | None: ...

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]: ...


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens the way the target encoder does; ``max_length`` is its hard input limit."""

    @property
    def max_length(self) -> int: ...

    def count(self, text: str) -> int: ...
