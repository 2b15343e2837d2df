"""The answer without a model: which studies and sentences of the evidence answer the question."""

from ._select import NOT_ADDRESSED, content_terms, extractive_answer, has_words

__all__ = ["NOT_ADDRESSED", "content_terms", "extractive_answer", "has_words"]
