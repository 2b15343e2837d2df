"""PubMedRS-200 (Clinfo.AI): systematic-review questions, ROUGE-L vs human answers, reference-PMID recall."""

from ._suite import PubmedRSItem, find_pubmedrs, load_pubmedrs, rouge_l, run_pubmedrs, score_answer

__all__ = ["PubmedRSItem", "find_pubmedrs", "load_pubmedrs", "rouge_l", "run_pubmedrs", "score_answer"]
