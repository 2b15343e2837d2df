"""Evidence Inference passage queries over the offline world's PMC full texts (issue 14's gold spans)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from core import CometaError
from retrieval.ncbi import parse_pmc_articles

from .._runner import EvalInputError
from ..gold import load_gold
from ._core import EvalDoc, GoldQuery, Unit, eval_doc

__all__ = ["EI_SOURCES", "load_ei_queries", "load_world_docs"]

EI_SOURCES = ("ei", "ei@dev", "ei@test")


def load_ei_queries(source: str = "ei@test", gold_dir: Path | None = None) -> list[GoldQuery]:
    """The built ``ei`` gold set (``ei``, ``ei@dev`` or ``ei@test``) as passage queries: the patient-style
    question, the article (``PMC…``) and the evidence span in :func:`eval.gold.ei_units` coordinates."""
    if source not in EI_SOURCES:
        raise EvalInputError(f"unknown Evidence Inference source {source!r}: one of {', '.join(EI_SOURCES)}")
    _, _, split = source.partition("@")
    out = []
    for item in load_gold("ei", split or None, gold_dir):
        ev = item["evidence"]
        unit: Unit = "abstract" if ev["unit"] == "abstract" else int(ev["unit"])
        out.append(
            GoldQuery(
                item["id"],
                item["question"],
                item["pmcid"],
                unit,
                ev["heading"],
                ev["start"],
                ev["end"],
                ev["text"],
            )
        )
    return out


def _unit_text(doc: EvalDoc, unit: Unit) -> str | None:
    if unit == "abstract":
        return doc.abstract
    return doc.sections[unit].text if 0 <= unit < len(doc.sections) else None


def load_world_docs(world: Path, queries: Sequence[GoldQuery]) -> list[EvalDoc]:
    """The queries' articles from ``world/pmc`` (``PMC<digits>.nxml`` or ``.xml``, parsed by
    :func:`retrieval.ncbi.parse_pmc_articles`, as the gold build parsed them), in PMCID order.

    Every gold span is checked against the parsed text at its offsets: a world built from other Evidence
    Inference files than the gold sets (or a changed parser) is an :class:`EvalInputError`, never a silent
    zero."""
    folder = world / "pmc"
    docs: dict[str, EvalDoc] = {}
    for pmcid in sorted({q.doc_id for q in queries}, key=lambda p: int(p[3:]) if p[3:].isdigit() else 0):
        path = next((p for p in (folder / f"{pmcid}.nxml", folder / f"{pmcid}.xml") if p.is_file()), None)
        if path is None:
            raise EvalInputError(
                f"{pmcid} is not in {folder}: is {world} a world built by `cometa corpus build`?"
            )
        try:
            articles = parse_pmc_articles(path.read_bytes())
        except CometaError as exc:
            raise EvalInputError(f"{path}: unparsable JATS ({exc})") from exc
        docs[pmcid] = eval_doc(articles[0])
    for q in queries:
        text = _unit_text(docs[q.doc_id], q.unit)
        if text is None or text[q.start : q.end] != q.gold:
            raise EvalInputError(
                f"gold span of {q.id} is not at its offsets in {q.doc_id} ({q.unit}): rebuild the gold sets "
                "(`cometa eval build-gold`) from the data this world was built from"
            )
    return list(docs.values())
