"""The committed passage-query fixture over the bundled corpus: 4 PMC full texts and PubMedQA abstracts."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from retrieval.ncbi import iter_pubmed_articles, parse_pmc_articles

from ._core import EvalDoc, GoldQuery, Unit, eval_doc

__all__ = ["DISTRACTOR_PMIDS", "FIXTURE", "load_eval_corpus", "load_queries"]

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "passage_queries.jsonl"
_CORPUS = Path(__file__).resolve().parent.parent.parent / "retrieval" / "corpus"

# Cancer-related PubMedQA abstracts under 1,800 characters, in file order: the abstract-side distractors.
DISTRACTOR_PMIDS: tuple[str, ...] = tuple(
    (
        "8165771 8738894 8847047 9191526 9278754 9427037 9569972 9582182 9616411 9745063 10781708 10927144 "
        "11034241 11296674 11759976 11799314 11888773 11955750 12090319 12095973 12607120 12630042 12769830 "
        "12913878 12947068 14599616 14692023 14713788 15065192 15466981 15483019 15528969 15530261 15597845 "
        "15708048 16776337 16909975 16968876 17008699 17054994"
    ).split()
)


def load_queries(path: Path = FIXTURE) -> list[GoldQuery]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        o = json.loads(line)
        unit: Unit = "abstract" if o["unit"] == "abstract" else int(o["unit"])
        out.append(
            GoldQuery(
                o["id"], o["question"], o["doc_id"], unit, o["heading"], o["start"], o["end"], o["gold"]
            )
        )
    return out


def load_eval_corpus(
    queries: Sequence[GoldQuery] = (), distractors: Sequence[str] = DISTRACTOR_PMIDS, corpus: Path = _CORPUS
) -> list[EvalDoc]:
    """The 4 PMC full texts, then the PubMedQA abstracts the queries or the distractor list name."""
    docs: list[EvalDoc] = []
    for path in sorted((corpus / "pmc").glob("*.xml")):
        docs += [eval_doc(art) for art in parse_pmc_articles(path.read_bytes())]
    wanted = {q.doc_id for q in queries if q.doc_id.startswith("PMID:")} | {f"PMID:{p}" for p in distractors}
    for rec in iter_pubmed_articles(corpus / "pubmed" / "pubmedqa_pqal.xml"):
        key = f"PMID:{rec.pmid}"
        if key in wanted and rec.abstract_text.strip():
            docs.append(EvalDoc(key, rec.abstract_text, ()))
            wanted.discard(key)
    return docs
