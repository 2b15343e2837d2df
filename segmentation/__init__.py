"""Stage 5, first half: segmentation of texts into sentences and chunks (SEOS and baselines).

* :func:`split_sentences` — biomedical sentence splitting with exact offsets (syntok + repairs).
* :class:`SEOSSegmenter` — Semantic Enhanced Overlap Segmentation (CoMeta §3.2.2, Appendix A.4).
* :class:`FixedTokenSegmenter`, :class:`SentenceWindowSegmenter`, :class:`TextTilingSegmenter` —
  baselines behind the same :class:`Segmenter` interface.
* :func:`counter_for` / :class:`HFTokenCounter` — token counts with the encoder's own tokenizer.

It depends on nothing but :mod:`core`; passage retrieval over the chunks is :mod:`retrieval.passages`.
"""

from core import TokenCounter

from ._baselines import FixedTokenSegmenter, SentenceWindowSegmenter, TextTilingSegmenter
from ._sentences import (
    INTRO_SECTIONS,
    RESULT_SECTIONS,
    SPLITTERS,
    Splitter,
    labelled_sentences,
    split_sentences,
)
from ._seos import SEOSSegmenter, default_budget
from ._tokens import HFTokenCounter, WhitespaceTokenCounter, counter_for, split_long_sentence
from ._types import Chunk, Segmenter, Sentence, SourceSection, SourceText

__all__ = [
    "INTRO_SECTIONS",
    "RESULT_SECTIONS",
    "SPLITTERS",
    "Chunk",
    "FixedTokenSegmenter",
    "HFTokenCounter",
    "SEOSSegmenter",
    "Segmenter",
    "Sentence",
    "SentenceWindowSegmenter",
    "SourceSection",
    "SourceText",
    "Splitter",
    "TextTilingSegmenter",
    "TokenCounter",
    "WhitespaceTokenCounter",
    "counter_for",
    "default_budget",
    "labelled_sentences",
    "split_long_sentence",
    "split_sentences",
]
