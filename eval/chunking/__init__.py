"""Passage retrieval by segmentation strategy (CoMeta Table 3, with Figure 4's Hit@5/MRR@5), one command.

    cometa eval chunking [--out DIR] [--limit N] [--subsets seos,fixed-512-0,...]
                         [--param source=fixture|ei|ei@dev|ei@test] [--param depth=fulltext|abstract|both]
                         [--param scope=pool|article|both]
                         [--param reranker=bi-encoder|ncbi/MedCPT-Cross-Encoder|PATH] [--param max_length=512]
    python -m eval.chunking [--out DIR] [--limit N] [--segmenters seos fixed-512-0 ...] [--source ei@test]
                            [--depth both] [--scope both] [--reranker ...] [--max-length 512]

Both run :func:`run_chunking` and write ``result.json``, ``report.md`` and Hit@5/MRR@5 bar plots.

**Query sets** (``source``):

* ``fixture`` (default; ``eval/fixtures/passage_queries.jsonl``, 62 lines). Generated once from the shipped
  corpus and committed: the 4 PMC full texts (``retrieval/corpus/pmc/*.xml`` parsed with
  ``retrieval.ncbi.parse_pmc_articles``: 51 questions, over body sections and their abstracts) and 11
  PubMedQA abstracts (``retrieval/corpus/pubmed/pubmedqa_pqal.xml``). The questions were *written by the
  development session's assistant LLM, one question per selected evidence sentence, gold = verbatim
  span*: the model read each section sentence by sentence, picked an answer-bearing sentence (or clause),
  copied it verbatim as ``gold`` and wrote a natural, patient-style question it answers, paraphrasing
  rather than copying its words. Offsets were then computed mechanically: ``start`` is the position of
  the (unique) occurrence of ``gold`` in the parsed text of the unit (``unit``: the section index in
  ``PmcArticle.sections``, or ``"abstract"`` for the abstract text), ``end = start + len(gold)``;
  ``tests/eval/test_chunking.py`` re-checks every span against the parser's output. Each line:
  ``{"id", "question", "doc_id", "unit", "heading", "start", "end", "gold", "generator"}``. Pool: every
  passage of those documents plus the distractor abstracts in :data:`DISTRACTOR_PMIDS`.
* ``ei`` / ``ei@dev`` / ``ei@test``: the world's Evidence Inference gold set (:mod:`eval.gold`, built by
  ``cometa eval build-gold``): templated patient questions ("does I compared with C change O?") over
  randomised-trial full texts, gold = the annotators' evidence span located in the parsed article. The
  articles are read from the world (``COMETA_LOCAL_SERVER__CORPUS_DIR``, its ``pmc/`` JATS files, parsed
  by the one JATS parser, :func:`retrieval.ncbi.parse_pmc_articles`); every span is re-checked at its
  offsets. Pool: the sampled questions' articles.

**Scopes** (``scope``): ``pool`` ranks every passage of every document (the fixture's table); ``article``
ranks only the gold article's passages: the passage stage once document retrieval found the right article.
Evidence Inference runs default to both.

**Depth** (``depth``, the CoMeta Table 2 analogue): ``fulltext`` (default) puts abstracts whole and body
sections through the segmenter under test into the pool (as in production,
:mod:`retrieval.passages`); ``abstract`` puts the abstracts only (one row, :data:`ABSTRACTS_ONLY`);
``both`` adds that row before the segmenters. On Evidence Inference this asks whether full-text passages
raise the share of questions whose gold evidence span reaches the top-5 context.

**Hit rule**: a retrieved passage is a hit when it comes from the gold unit (same document, same
section or abstract) and contains at least half of the gold span's characters
(``overlap(passage, gold) >= 0.5 * len(gold)``, offsets in the unit text). Hit@5: share of queries with
a hit in the top 5; MRR@5: mean of 1/rank of the first hit in the top 5 (0 without one).

**Systems**: segmenters SEOS, fixed 512 tokens with overlap 0/32/128, sentence window (3 sentences),
TextTiling; retrievers BM25 (``bm25s``, English stopwords, statistics of the whole pool), dense (the
offline encoder: the bundled all-MiniLM-L6-v2, ``max_length`` 512 so "512-token" chunks are encoded whole)
and dense+rerank (dense top-30 reranked; offline this is the bi-encoder fallback — the same encoder, so it
can only reorder ties — unless ``reranker`` names a cross-encoder that can load). Token counts use the
encoder's own tokenizer.
"""

from ._core import (
    ABSTRACTS_ONLY,
    CANDIDATES,
    HIT_OVERLAP,
    SCOPES,
    SEGMENTERS,
    EvalDoc,
    GoldQuery,
    K,
    Passage,
    Row,
    bm25_scores,
    build_passages,
    build_segmenters,
    eval_doc,
    evaluate,
    evaluate_segmenter,
    hit_and_rr,
    is_hit,
    markdown_table,
    rank,
    rerank_rankings,
    results_table,
)
from ._fixture import DISTRACTOR_PMIDS, FIXTURE, load_eval_corpus, load_queries
from ._suite import DEPTHS, SOURCES, Models, main, run_chunking
from ._world import EI_SOURCES, load_ei_queries, load_world_docs

__all__ = [
    "ABSTRACTS_ONLY",
    "CANDIDATES",
    "DEPTHS",
    "DISTRACTOR_PMIDS",
    "EI_SOURCES",
    "FIXTURE",
    "HIT_OVERLAP",
    "SCOPES",
    "SEGMENTERS",
    "SOURCES",
    "EvalDoc",
    "GoldQuery",
    "K",
    "Models",
    "Passage",
    "Row",
    "bm25_scores",
    "build_passages",
    "build_segmenters",
    "eval_doc",
    "evaluate",
    "evaluate_segmenter",
    "hit_and_rr",
    "is_hit",
    "load_ei_queries",
    "load_eval_corpus",
    "load_queries",
    "load_world_docs",
    "main",
    "markdown_table",
    "rank",
    "rerank_rankings",
    "results_table",
    "run_chunking",
]
