"""``cometa eval calibrate-gate``: the evidence gate's thresholds, calibrated on dev, reported on test.

Every question of the world's unanswerable set (off-topic and out-of-world) and of two answerable sets
(Evidence Inference, Cohen narratives) goes through the /ask path without an LLM (Understand with its scope
check, retrieval without passages, the extractive answer): one record per question with the gate's
signals, whether the scope check stopped it, and whether a gold study is among the answer's citations. Then a
grid search on the **dev** split picks the thresholds that abstain most on unanswerable questions while the
answerable questions keep their gold study among the citations at least ``keep`` (default 0.99) as often as
without the gate; the **test** split is reported with them. The printed thresholds go into
``COMETA_GATE__*``; recalibrate for MedCPT / your cross-encoder (``--encoder`` settings via the environment).

    COMETA_LOCAL_SERVER__CORPUS_DIR=/data/world cometa eval calibrate-gate [--out DIR] [--limit N]
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from app.answer import Answerer
from app.gate import EvidenceSignals, assess_evidence
from app.pipeline import Pipeline
from app.settings import GateSettings, Settings

from ..gold import load_gold

__all__ = [
    "GateRecord",
    "calibrate",
    "collect_records",
    "gate_report",
    "kept_and_abstained",
    "run_calibrate_gate",
]

ANSWERABLE_SETS = ("ei", "cohen-narrative")


@dataclass(frozen=True, slots=True)
class GateRecord:
    set: str
    id: str
    split: str
    category: str  # "answerable", "off_topic", "out_of_world"
    kind: str
    scope: str | None  # the scope check's reason when it stopped the question
    signals: dict[str, Any] | None  # EvidenceSignals.to_json(); None when out of scope
    gold_cited: bool  # a gold PMID among the answer's citations (before the gate)
    cited: list[str]
    answer: str

    def evidence_signals(self) -> EvidenceSignals | None:
        return EvidenceSignals(**self.signals) if self.signals is not None else None


def _items(limit: int | None) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for name in ("unanswerable", *ANSWERABLE_SETS):
        rows = load_gold(name)
        out.extend((name, r) for r in (rows[:limit] if limit else rows))
    return out


async def collect_records(
    settings: Settings, *, limit: int | None = None, on_item: Callable[[int, int], None] | None = None
) -> list[GateRecord]:
    """One :class:`GateRecord` per question, through the deterministic /ask path (no LLM, no passages)."""
    items = _items(limit)
    records: list[GateRecord] = []
    answerer = Answerer(None, settings.answer)
    async with Pipeline(settings, use_llm=False, use_passages=False) as pipeline:
        for n, (name, item) in enumerate(items, start=1):
            question = item["question"]
            category = item.get("category") or "answerable"
            understanding = await pipeline.understander.understand(question)
            scope = understanding.scope
            signals: dict[str, Any] | None = None
            cited: list[str] = []
            text = ""
            if scope.in_scope:
                outcome = await pipeline.retrieve(understanding)
                docs = list(outcome.evidence.docs)[:10]  # /ask's default max_documents
                signals = pipeline.gate_signals(outcome, docs).to_json()
                plan = understanding.plan
                concepts = [" ".join(filter(None, (c.text, c.mesh))) for c in plan.concepts if c.recognised]
                answer = await answerer.answer(question, docs, None, concepts=concepts)
                cited = [c.pmid for c in answer.citations]
                text = answer.text
            gold = set(item.get("pmids") or ())
            records.append(
                GateRecord(
                    set=name,
                    id=str(item["id"]),
                    split=str(item["split"]),
                    category=category,
                    kind=str(item.get("kind") or name),
                    scope=scope.reason,
                    signals=signals,
                    gold_cited=bool(gold & set(cited)),
                    cited=cited,
                    answer=text,
                )
            )
            if on_item is not None:
                on_item(n, len(items))
    return records


def _abstains(record: GateRecord, gate: GateSettings) -> bool:
    signals = record.evidence_signals()
    return signals is None or assess_evidence(signals, gate).abstain


def kept_and_abstained(records: Sequence[GateRecord], gate: GateSettings, split: str) -> dict[str, float]:
    """Shares on ``split``: off-topic / out-of-world abstentions, answerable kept (gold cited after the gate)
    relative to before it, and abstention precision / recall (unanswerable = the positive class)."""
    rows = [r for r in records if r.split == split]

    def share(xs: list[bool]) -> float:
        return sum(xs) / len(xs) if xs else 0.0

    off = [_abstains(r, gate) for r in rows if r.category == "off_topic"]
    world = [_abstains(r, gate) for r in rows if r.category == "out_of_world"]
    answerable = [r for r in rows if r.category == "answerable"]
    before = sum(r.gold_cited for r in answerable)
    after = sum(r.gold_cited and not _abstains(r, gate) for r in answerable)
    false_abstain = sum(_abstains(r, gate) for r in answerable)
    true_abstain = sum(off) + sum(world)
    return {
        "off_topic_abstain": share(off),
        "out_of_world_abstain": share(world),
        "unanswerable_abstain": share(off + world),
        "answerable_gold_cited_before": before / len(answerable) if answerable else 0.0,
        "answerable_gold_cited_after": after / len(answerable) if answerable else 0.0,
        "answerable_kept_ratio": after / before if before else 1.0,
        "answerable_abstain": false_abstain / len(answerable) if answerable else 0.0,
        "abstain_precision": true_abstain / (true_abstain + false_abstain)
        if true_abstain + false_abstain
        else 1.0,
        "abstain_recall": share(off + world),
        "n_off_topic": len(off),
        "n_out_of_world": len(world),
        "n_answerable": len(answerable),
    }


def _grid(base: GateSettings) -> Iterable[GateSettings]:
    dense = [round(0.20 + 0.02 * i, 2) for i in range(16)]  # 0.20 .. 0.50
    coverage = [round(0.05 * i, 2) for i in range(13)]  # 0 .. 0.60
    generic = [0.0, 0.4, 0.5, 0.6]
    absent = [-1.0, 0.5, 0.55, 0.6, 0.65, 0.7, 2.0]  # -1: the signal is off; 2: any absent word abstains
    strict = [0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 1.0]  # 1.0: min_dense applies to strict matches too
    for d, c, g, a, s in itertools.product(dense, coverage, generic, absent, strict):
        yield base.model_copy(
            update={
                "min_dense": d,
                "min_coverage": c,
                "min_dense_generic": max(d, g),
                "absent_max_dense": a,
                "min_dense_strict": min(s, d),
            }
        )


def calibrate(records: Sequence[GateRecord], base: GateSettings, *, keep: float = 0.99) -> GateSettings:
    """The thresholds that abstain most on the dev split's unanswerable questions while keeping the
    answerable ones' gold citations at ``keep`` of before; ties: more kept, then the lowest thresholds."""
    best: tuple[float, float, GateSettings] | None = None
    for gate in _grid(base):
        m = kept_and_abstained(records, gate, "dev")
        if m["answerable_kept_ratio"] < keep:
            continue
        key = (m["unanswerable_abstain"], m["answerable_kept_ratio"])
        if best is None or key > best[:2]:
            best = (key[0], key[1], gate)
    return best[2] if best is not None else base


def gate_report(records: Sequence[GateRecord], gate: GateSettings) -> dict[str, Any]:
    """Dev and test numbers with ``gate`` and with the gate off (before)."""
    off = gate.model_copy(update={"enabled": False})
    return {
        "thresholds": gate.model_dump(),
        "dev": kept_and_abstained(records, gate, "dev"),
        "test": kept_and_abstained(records, gate, "test"),
        "test_without_gate": kept_and_abstained(records, off, "test"),
        "scope_out_of_scope": sum(1 for r in records if r.scope is not None),
    }


async def run_calibrate_gate(
    settings: Settings,
    out_dir: Path,
    *,
    limit: int | None = None,
    keep: float = 0.99,
    reuse: bool = True,
    on_item: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Collect (or reuse ``out_dir/records.jsonl``), calibrate on dev, write ``report.json``; the report."""
    out_dir.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 - once per run, before any question
    path = out_dir / "records.jsonl"
    if reuse and path.is_file():
        records = [GateRecord(**json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines()]
    else:
        records = await collect_records(settings, limit=limit, on_item=on_item)
        path.write_text("".join(json.dumps(asdict(r)) + "\n" for r in records), encoding="utf-8")
    gate = calibrate(records, settings.gate, keep=keep)
    report = gate_report(records, gate)
    report["default_thresholds"] = gate_report(records, settings.gate)
    (out_dir / "report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    return report
