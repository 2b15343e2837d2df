"""``cometa eval cited``: is what the patient reads about the question? Cited studies and verdicts, per item.

Each question goes through the real ``Asker`` (Understand with its safety and scope checks, retrieval with
passages, the evidence gate with its per-study relevance decision, the extractive answer; no LLM), as
``POST /ask`` answers it offline. What is counted depends on the item:

* **answerable** (``pmids``: the study that answers it): the gold study cited; *another study cited
  instead* (an answer with citations, none of them gold: the failure that misleads); abstained;
* **near_miss** (related studies exist, none answers): abstained, and answered with a ``moderate`` or
  ``strong`` verdict (must be none);
* **unanswerable** (``category`` out_of_world, off_topic, injection, gibberish) and **off_topic**: handled
  (no citation: out of scope, insufficient evidence or urgent).

Items come from a JSON Lines file (``id``, ``question``, and ``pmids`` or ``kind``/``category``) or from a
built gold set (``ei@dev``, ``cohen-narrative@dev``, ``unanswerable@dev``; :func:`eval.gold.load_gold`).
Run it on the corpus the items were written for: the world (``COMETA_LOCAL_SERVER__CORPUS_DIR``) or the
bundled default.

    cometa eval cited --data ITEMS.jsonl|SET@SPLIT [--data ...] --out FILE
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from app import Answerer, Asker, AskRequest, PhiPolicy, Settings, ask_response, build_pipeline

from .._runner import EvalInputError
from ..gold import load_gold

__all__ = ["item_kind", "load_items", "run_cited", "summarise"]

_UNANSWERABLE = frozenset({"out_of_world", "off_topic", "injection", "gibberish", "unanswerable"})
_ABSTAIN_MODES = frozenset({"insufficient_evidence", "out_of_scope", "urgent"})


def item_kind(item: dict[str, Any]) -> str:
    """``answerable``, ``near_miss`` or ``unanswerable``."""
    kind = str(item.get("kind") or item.get("category") or "")
    if kind == "near_miss":
        return "near_miss"
    if kind in _UNANSWERABLE or item.get("category"):
        return "unanswerable"
    if item.get("pmids"):
        return "answerable"
    raise EvalInputError(f"item {item.get('id')!r}: neither gold pmids nor a kind/category to score it by")


def load_items(spec: str) -> list[dict[str, Any]]:
    """A JSON Lines file, or ``SET@SPLIT`` / ``SET`` of the built gold sets."""
    path = Path(spec)
    if path.is_file():
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        return [{**r, "set": path.stem} for r in rows]
    name, _, split = spec.partition("@")
    return [{**r, "set": name} for r in load_gold(name, split or None)]


async def run_cited(
    settings: Settings,
    items: Sequence[dict[str, Any]],
    *,
    on_item: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """One row per item (mode, verdict, cited PMIDs, what counted) and the summary per set and kind."""
    rows: list[dict[str, Any]] = []
    async with build_pipeline(settings, use_llm=False) as pipeline:
        asker = Asker(
            pipeline, Answerer(None, settings.answer), None, phi=PhiPolicy.from_settings(settings.llm)
        )
        for n, item in enumerate(items, start=1):
            kind = item_kind(item)
            response = ask_response(
                await asker.ask(AskRequest(question=item["question"]), f"cited-{item['id']}")
            )
            cited = [c.pmid for c in response.citations if c.pmid]
            gold = set(item.get("pmids") or ())
            verdict = response.evidence_verdict.verdict if response.evidence_verdict else None
            judged = {d.pmid: d.addresses_question for d in response.evidence if d.pmid in gold}
            abstained = response.mode in _ABSTAIN_MODES or not cited
            rows.append(
                {
                    "set": item.get("set", ""),
                    "id": item["id"],
                    "kind": kind,
                    "mode": response.mode,
                    "verdict": verdict,
                    "cited": cited,
                    "gold_cited": bool(gold & set(cited)),
                    # Where the gold study was lost: not retrieved, or judged not to address the question.
                    "gold_retrieved": bool(judged),
                    "gold_addresses": any(v is not False for v in judged.values()) if judged else None,
                    "other_instead": kind == "answerable" and bool(cited) and not gold & set(cited),
                    "abstained": abstained,
                    "confident": not abstained and verdict in ("moderate", "strong"),
                }
            )
            if on_item is not None:
                on_item(n, len(items))
    return {"summary": summarise(rows), "rows": rows}


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per set and kind: n, and the shares that matter for that kind (see the module docstring)."""
    out: dict[str, dict[str, Any]] = {}
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["set"], r["kind"]), []).append(r)
    for (name, kind), found in sorted(groups.items()):
        n = len(found)

        def share(key: str, found: list[dict[str, Any]] = found, n: int = n) -> float:
            return round(sum(bool(r[key]) for r in found) / n, 4)

        entry: dict[str, Any] = {"n": n, "modes": dict(Counter(r["mode"] for r in found))}
        if kind == "answerable":
            entry |= {
                "gold_cited": share("gold_cited"),
                "other_instead": share("other_instead"),
                "abstained": share("abstained"),
            }
        elif kind == "near_miss":
            entry |= {"abstained": share("abstained"), "confident": sum(r["confident"] for r in found)}
        else:
            entry |= {"handled": share("abstained")}
        out[f"{name}:{kind}"] = entry
    return out
