"""What of the patient's question a language model may see: one decision for every LLM-bound text.

``COMETA_LLM__SCRUB_PHI_FOR_LLM=true`` replaces PHI (names, dates of birth, record numbers, addresses,
phone numbers, ...) with typed placeholders (``[NAME]``, ``[PHONE]``, ...) before the question reaches any
prompt: the rewrite, the answer, the per-source answers and the judge. Queries to NCBI are PHI-stripped by
the rewriter whatever this says; another institution's node always gets the scrubbed question.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm import LLMSettings
from retrieval.understand import scrub

__all__ = ["PhiPolicy"]


@dataclass(frozen=True)
class PhiPolicy:
    scrub_for_llm: bool = False

    @classmethod
    def from_settings(cls, llm: LLMSettings) -> PhiPolicy:
        return cls(scrub_for_llm=llm.scrub_phi_for_llm)

    def for_llm(self, text: str) -> str:
        """``text`` as a language model may see it."""
        return scrub(text).text if self.scrub_for_llm else text
