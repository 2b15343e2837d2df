"""``cometa eval calibrate-gate``: the evidence gate's thresholds, calibrated on dev, reported on test.

Every question of the world's unanswerable set (off-topic and out-of-world) and of two answerable sets
(Evidence Inference, Cohen narratives) goes through the /ask path without an LLM (Understand with its scope
check, retrieval without passages, the extractive answer): one record per question with the gate's
signals, whether the scope check stopped it, and whether a gold study is among the answer's citations. Then a
grid search on the **dev** split picks the thresholds that abstain most on unanswerable questions while the
answerable questions keep their gold study among the citations at least ``keep`` as often as without the gate
(default 0.98: with ~80 dev questions citing their gold study, 0.99 would allow no loss at all); the **test**
split is reported with them. The search evaluates each of the gate's checks (:func:`app.trust.gate_checks`)
once per distinct value of its own thresholds and combines the results as bit masks, so the grid takes
seconds and every decision is still the gate's own. The printed thresholds go into ``COMETA_GATE__*``;
recalibrate for MedCPT / your cross-encoder (``--encoder`` settings via the
environment).

    COMETA_LOCAL_SERVER__CORPUS_DIR=/data/world cometa eval calibrate-gate [--out DIR] [--limit N]
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import json
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from app import (
    Answerer,
    EvidenceSignals,
    GateSettings,
    Settings,
    assess_evidence,
    build_pipeline,
    gate_checks,
)

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
    batch: int = 1  # the unanswerable set's batch (eval/data/gold/README.md); answerable sets are batch 1

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
    # Phrase counts are recorded whatever the similarity: the grid searches the threshold above which /ask
    # skips them (a record must hold what every threshold would see).
    gate = settings.gate.model_copy(update={"absent_phrase_max_dense": 2.0})
    settings = settings.model_copy(update={"gate": gate})
    async with build_pipeline(settings, use_llm=False, use_passages=False) as pipeline:
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
                # /ask's weighing: the signals of the studies that address the question; none of them (no
                # documents left) abstains whatever the thresholds.
                weighed = await pipeline.weigh(outcome, docs)
                kept = list(weighed.kept)
                found = weighed.verdict.signals
                signals = (found if kept else dataclasses.replace(found, documents=0)).to_json()
                plan = understanding.plan
                concepts = [" ".join(filter(None, (c.text, c.mesh))) for c in plan.concepts if c.recognised]
                answer = await answerer.answer(question, kept, None, concepts=concepts)
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
                    batch=int(item.get("batch") or 1),
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

    abstains = {id(r): _abstains(r, gate) for r in rows}  # each record's signals built and judged once
    off = [abstains[id(r)] for r in rows if r.category == "off_topic"]
    world = [abstains[id(r)] for r in rows if r.category == "out_of_world"]
    answerable = [r for r in rows if r.category == "answerable"]
    before = sum(r.gold_cited for r in answerable)
    after = sum(r.gold_cited and not abstains[id(r)] for r in answerable)
    false_abstain = sum(abstains[id(r)] for r in answerable)
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


def abstain_by_batch(records: Sequence[GateRecord], gate: GateSettings) -> dict[str, dict[str, Any]]:
    """Per split and unanswerable batch: off-topic and out-of-world abstention shares and counts (a later
    batch was written blind to the earlier one's results, so its test rows are a fresh held-out estimate)."""
    keys = ("off_topic_abstain", "out_of_world_abstain", "n_off_topic", "n_out_of_world")
    unanswerable = [r for r in records if r.category in ("off_topic", "out_of_world")]
    out: dict[str, dict[str, Any]] = {}
    for split, batch in sorted({(r.split, r.batch) for r in unanswerable}):
        rows = [r for r in unanswerable if r.batch == batch]
        measured = kept_and_abstained(rows, gate, split)
        out.setdefault(split, {})[f"batch{batch}"] = {k: measured[k] for k in keys}
    return out


# The grid, one list of values per threshold, searched in this order, each from the most permissive value
# to the strictest; "generic" and "strict" couple to min_dense (see _point).
_GRID: dict[str, list[float]] = {
    "min_dense": [round(0.20 + 0.02 * i, 2) for i in range(16)],  # 0.20 .. 0.50
    "min_coverage": [round(0.05 * i, 2) for i in range(13)],  # 0 .. 0.60
    "generic": [0.0, 0.4, 0.5, 0.6],  # min_dense_generic = max(min_dense, generic)
    "absent_max_dense": [-1.0, 0.5, 0.55, 0.6, 0.65, 0.7, 2.0],  # -1: only the share rule; 2: always
    "strict": [0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 1.0],  # min_dense_strict = min(strict, min_dense)
    "absent_min_share": [2.0, 0.5, 0.4, 0.35, 0.3, 0.25, 0.2, 0.15],  # 2: off; lower is stricter
    "absent_phrase_max_dense": [-1.0, 0.4, 0.42, 0.44, 0.46, 0.48, 0.5, 0.55, 0.6],  # -1: off
    "absent_technical_max_dense": [-1.0, 0.6, 0.65, 0.7, 0.75, 0.8, 2.0],  # -1: off; 2: always
}


def _point(
    d: float, c: float, gen: float, a: float, st: float, share: float, ph: float, tech: float
) -> dict[str, float]:
    """One grid point as GateSettings fields."""
    return {
        "absent_technical_max_dense": tech,
        "min_dense": d,
        "min_coverage": c,
        "min_dense_generic": max(d, gen),
        "absent_max_dense": a,
        "min_dense_strict": min(st, d),
        "absent_min_share": share,
        "absent_phrase_max_dense": ph,
    }


class _DevMasks:
    """The dev split as bit masks (bit i: the i-th record) and, per gate check and per value of that
    check's own thresholds, the records it abstains on: computed once by the gate's own check."""

    def __init__(self, records: Sequence[GateRecord], base: GateSettings, split: str = "dev") -> None:
        rows = [r for r in records if r.split == split]
        self.base = base
        self.signals = [r.evidence_signals() for r in rows]  # built once, not per grid point
        self.always = 0  # stopped by the scope check, or no documents: abstains whatever the thresholds
        self.unanswerable = self.gold = self.answerable = 0
        for i, (r, s) in enumerate(zip(rows, self.signals, strict=True)):
            bit = 1 << i
            if s is None or not s.documents:
                self.always |= bit
            if r.category in ("off_topic", "out_of_world"):
                self.unanswerable |= bit
            elif r.category == "answerable":
                self.answerable |= bit
                if r.gold_cited:
                    self.gold |= bit
        self.n_unanswerable = self.unanswerable.bit_count()
        self.n_gold = self.gold.bit_count()
        self._cache: dict[tuple[str, tuple[Any, ...]], int] = {}

    def check_mask(self, name: str, fields: tuple[str, ...], check: Any, point: dict[str, float]) -> int:
        """The records ``check`` (one of :func:`app.trust.gate_checks`) abstains on with ``point``'s values of
        its ``fields`` (the base settings' for the others); computed once per distinct value."""
        values = tuple(point.get(f, getattr(self.base, f)) for f in fields)
        key = (name, values)
        mask = self._cache.get(key)
        if mask is None:
            gate = self.base.model_copy(update=dict(zip(fields, values, strict=True)))
            mask = 0
            for i, s in enumerate(self.signals):
                if s is not None and s.documents and check(s, gate) is not None:
                    mask |= 1 << i
            self._cache[key] = mask
        return mask

    def score(self, abstained: int) -> tuple[float, float]:
        """(unanswerable abstain share, answerable gold citations kept vs before) for the records in
        ``abstained``."""
        hit = (abstained & self.unanswerable).bit_count()
        abstain = hit / self.n_unanswerable if self.n_unanswerable else 0.0
        kept = (self.gold & ~abstained).bit_count() / self.n_gold if self.n_gold else 1.0
        return abstain, kept


def calibrate(records: Sequence[GateRecord], base: GateSettings, *, keep: float = 0.98) -> GateSettings:
    """The thresholds that abstain most on the dev split's unanswerable questions while keeping the
    answerable ones' gold citations at ``keep`` of before; ties: more kept, then the centre of the tied
    points (each threshold's median over them). Dev rarely tells thresholds apart near its optimum: the
    most permissive tie answered new off-topic questions and the strictest abstained on new answerable
    ones when dev was split in two (one unanswerable batch and half the answerable questions to calibrate,
    the rest to check; docs/history/answers-notes.md, "A blind second batch").

    Two stages: the similarity, coverage, tier and absent-word thresholds with the share, phrase and
    technical-term checks off, then those three on top of them. One joint search
    fitted the first 19 dev out-of-world questions with weaker base thresholds (coverage 0.05) that abstained
    less on new questions; each added check must earn its abstentions on top of the base gate instead."""
    base = base.model_copy(update={"enabled": True})
    masks = _DevMasks(records, base)
    off = {
        "absent_min_share": [2.0],
        "absent_phrase_max_dense": [-1.0],
        "absent_technical_max_dense": [-1.0],
    }
    first = _search(masks, {**_GRID, **off}, keep)
    if first is None:
        return base
    fixed = {
        "min_dense": [first["min_dense"]],
        "min_coverage": [first["min_coverage"]],
        "generic": [first["min_dense_generic"]],
        "absent_max_dense": [first["absent_max_dense"]],
        "strict": [first["min_dense_strict"]],
    }
    second = _search(masks, {**_GRID, **fixed}, keep) or first
    # A check added in the second stage stays on only if it earns something on dev: a tie with it off
    # means dev has no evidence for it, and on new questions it could only cost answerable ones.
    for name, value in off.items():
        trial = {**second, name: value[0]}
        if masks.score(_abstained(masks, trial)) >= masks.score(_abstained(masks, second)):
            second = trial
    return base.model_copy(update=second)


def _abstained(masks: _DevMasks, point: dict[str, float]) -> int:
    """The dev records the gate abstains on with ``point``'s thresholds (the base settings' elsewhere)."""
    out = masks.always
    for name, fields, check in gate_checks():
        out |= masks.check_mask(name, fields, check, point)
    return out


def _search(masks: _DevMasks, g: dict[str, list[float]], keep: float) -> dict[str, float] | None:
    """The best point of grid ``g`` on ``masks``' split (see :func:`calibrate`); None if none keeps enough."""
    checks = {name: (fields, check) for name, fields, check in gate_checks()}

    def mask(name: str, point: dict[str, float]) -> int:
        fields, check = checks[name]
        return masks.check_mask(name, fields, check, point)

    # Nested in _GRID's order; each check's mask is OR-ed in at the loop that fixes its last threshold, so
    # the innermost loop costs one OR and two popcounts.
    best: tuple[float, float] | None = None
    ties: list[tuple[float, ...]] = []
    rerank = masks.always | mask("rerank", {})
    for d in g["min_dense"]:
        for c in g["min_coverage"]:
            m_c = rerank | mask("coverage", {"min_coverage": c})
            for gen in g["generic"]:
                m_g = m_c | mask("generic", {"min_dense_generic": max(d, gen)})
                for a in g["absent_max_dense"]:
                    for st in g["strict"]:
                        m_s = m_g | mask("dense", {"min_dense": d, "min_dense_strict": min(st, d)})
                        for share, tech in itertools.product(
                            g["absent_min_share"], g["absent_technical_max_dense"]
                        ):
                            words = {"absent_max_dense": a, "absent_min_share": share}
                            m_a = m_s | mask("absent_words", words)
                            m_a |= mask("absent_technical", {"absent_technical_max_dense": tech})
                            for ph in g["absent_phrase_max_dense"]:
                                abstained = m_a | mask("absent_phrases", {"absent_phrase_max_dense": ph})
                                score = masks.score(abstained)
                                if score[1] < keep or (best is not None and score < best):
                                    continue
                                if score != best:
                                    best, ties = score, []
                                ties.append((d, c, gen, a, st, share, ph, tech))
    if not ties:
        return None
    # Grid points that make the same settings (generic or strict values beyond min_dense) count once.
    ties = list({tuple(_point(*t).values()): t for t in ties}.values())
    # The centre of the tied points: each threshold's median over them, then the tied point nearest to it
    # (grid steps differ per threshold, so distance counts positions in the sorted tied values).
    columns = [sorted(set(col)) for col in zip(*ties, strict=True)]
    centre = [statistics.median(col) for col in zip(*ties, strict=True)]

    def distance(point: tuple[float, ...]) -> float:
        return sum(
            abs(bisect.bisect_left(col, v) - bisect.bisect_left(col, m))
            for col, v, m in zip(columns, point, centre, strict=True)
        )

    return _point(*min(ties, key=distance))


def gate_report(records: Sequence[GateRecord], gate: GateSettings) -> dict[str, Any]:
    """Dev and test numbers with ``gate`` and with the gate off (before)."""
    off = gate.model_copy(update={"enabled": False})
    return {
        "thresholds": gate.model_dump(),
        "dev": kept_and_abstained(records, gate, "dev"),
        "test": kept_and_abstained(records, gate, "test"),
        "test_without_gate": kept_and_abstained(records, off, "test"),
        "unanswerable_by_batch": abstain_by_batch(records, gate),
        "scope_out_of_scope": sum(1 for r in records if r.scope is not None),
    }


async def run_calibrate_gate(
    settings: Settings,
    out_dir: Path,
    *,
    limit: int | None = None,
    keep: float = 0.98,
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
