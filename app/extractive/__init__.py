"""The answer without a model: which studies and sentences of the evidence answer the question."""

from ._select import NOT_ADDRESSED, close_to_best, content_terms, extractive_answer, has_words, lead_study

__all__ = ["NOT_ADDRESSED", "close_to_best", "content_terms", "extractive_answer", "has_words", "lead_study"]
