"""The human-labelled claim sets the cross-source judge is validated on (``../shared/data/claims/``)."""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass
from pathlib import Path

from eval import EvalInputError
from eval.gold import shared_data_candidates

__all__ = ["CLAIM_SETS", "ClaimItem", "find_claims_dir", "load_claims"]

CLAIM_SETS: tuple[str, ...] = ("citation_integrity", "healthver", "covidfact", "scifact_rte")
_CITATION_MARK = re.compile(r"<\|[a-z_]+\|>")


@dataclass(frozen=True)
class ClaimItem:
    """One claim, its evidence text and the human label in the canonical space SUPPORT / REFUTE / NEI
    (SciFact-RTE: SUPPORT / NOT_SUPPORT, its CONTRADICT and NEI collapsed upstream)."""

    key: str  # "<set>:<id>"
    dataset: str
    claim: str
    evidence: str
    gold: str
    question: str = ""  # HealthVer's search question; "" elsewhere


def find_claims_dir(explicit: Path | None = None) -> Path | None:
    """``explicit``, else ``$COMETA_SHARED_DIR/data/claims``, else ``../shared/data/claims``."""
    if explicit is not None:
        return explicit if explicit.is_dir() else None
    return next((p for p in shared_data_candidates("claims") if p.is_dir()), None)


def _citation_integrity(root: Path, split: str) -> list[ClaimItem]:
    corpus: dict[str, str] = {}
    for line in (root / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            doc = json.loads(line)
            corpus[str(doc["doc_id"])] = " ".join(doc.get("abstract") or [])
    out: list[ClaimItem] = []
    for line in (root / f"claims_{split}.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        obj = json.loads(line)
        cited = [str(d) for d in obj.get("cited_doc_ids") or []]
        evidence = obj.get("evidence") or {}
        labels = {e["label"] for sets in evidence.values() for e in sets}
        # No annotated rationale in the cited paper: the claim is neither supported nor refuted by it.
        gold = "SUPPORT" if labels == {"SUPPORT"} else "REFUTE" if labels == {"REFUTE"} else "NEI"
        if len(labels) > 1:
            continue  # mixed rationales: no single label to compare with
        doc_id = next(iter(evidence), cited[0] if cited else None)
        text = corpus.get(str(doc_id), "")
        if not text:
            continue
        claim = " ".join(_CITATION_MARK.sub(" ", obj["claim"]).split())
        out.append(ClaimItem(f"citation_integrity:{obj['id']}", "citation_integrity", claim, text, gold))
    return out


def _healthver(root: Path, split: str) -> list[ClaimItem]:
    mapping = {"Supports": "SUPPORT", "Refutes": "REFUTE", "Neutral": "NEI"}
    with (root / f"healthver_{split}.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return [
        ClaimItem(
            f"healthver:{r['id']}",
            "healthver",
            r["claim"].strip(),
            r["evidence"].strip(),
            mapping[r["label"]],
            r.get("question", "").strip(),
        )
        for r in rows
        if r.get("label") in mapping and r.get("claim") and r.get("evidence")
    ]


def _covidfact(root: Path, _split: str) -> list[ClaimItem]:
    mapping = {"SUPPORTED": "SUPPORT", "REFUTED": "REFUTE"}
    out: list[ClaimItem] = []
    for n, line in enumerate((root / "COVIDFACT_dataset.jsonl").read_text(encoding="utf-8").splitlines()):
        if not line.strip():
            continue
        obj = json.loads(line)
        if obj.get("label") in mapping and obj.get("evidence"):
            evidence = (
                " ".join(obj["evidence"]) if isinstance(obj["evidence"], list) else str(obj["evidence"])
            )
            out.append(
                ClaimItem(f"covidfact:{n}", "covidfact", obj["claim"], evidence, mapping[obj["label"]])
            )
    return out


def _scifact_rte(root: Path, split: str) -> list[ClaimItem]:
    # test.tsv carries no labels (GLUE style): the labelled dev split is the evaluation set.
    name = "dev" if split == "test" else split
    mapping = {"entailment": "SUPPORT", "not_entailment": "NOT_SUPPORT"}
    out: list[ClaimItem] = []
    lines = (root / f"{name}.tsv").read_text(encoding="utf-8").splitlines()
    for line in lines[1:]:
        parts = line.split("\t")
        if len(parts) == 4 and parts[3] in mapping:
            idx, evidence, claim, label = parts
            out.append(ClaimItem(f"scifact_rte:{idx}", "scifact_rte", claim, evidence, mapping[label]))
    return out


_LOADERS = {
    "citation_integrity": _citation_integrity,
    "healthver": _healthver,
    "covidfact": _covidfact,
    "scifact_rte": _scifact_rte,
}


def load_claims(dataset: str, root: Path, split: str = "test") -> list[ClaimItem]:
    """The labelled claims of one set (test split; COVID-Fact: its one file; SciFact-RTE: dev)."""
    if dataset not in _LOADERS:
        raise EvalInputError(f"unknown claim set {dataset!r} ({', '.join(CLAIM_SETS)})")
    folder = root / dataset
    if not folder.is_dir():
        raise EvalInputError(f"claim set {dataset!r} not found under {root}")
    try:
        return _LOADERS[dataset](folder, split)
    except (OSError, KeyError, ValueError) as exc:
        raise EvalInputError(f"claim set {dataset!r}: cannot read it ({type(exc).__name__}: {exc})") from exc
