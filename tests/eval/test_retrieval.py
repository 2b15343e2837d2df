"""The retrieval ablation suite: metrics by hand, the user JSONL format, and one real small run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.container import build_pipeline
from app.settings import Settings
from eval.retrieval import (
    load_items,
    markdown_table,
    raw_term,
    recall_at,
    run_retrieval_eval,
    score_ranking,
    scores_from_records,
)


def test_score_ranking_by_hand() -> None:
    assert score_ranking(["a", "b", "c"], ["c"]) == (1.0, pytest.approx(1 / 3), 1.0)
    assert score_ranking(["a", "b"], ["x"]) == (0.0, 0.0, 0.0)
    hit, rr, recall = score_ranking([str(i) for i in range(20)], ["3", "15", "99"])
    assert (hit, rr, recall) == (1.0, 0.25, pytest.approx(1 / 3))  # "15" is outside the top 10
    assert score_ranking([], ["1"]) == (0.0, 0.0, 0.0)


def test_recall_at_50_counts_the_whole_gold_set() -> None:
    ranked = [str(i) for i in range(60)]
    gold = ["3", "15", "49", "50", "99"]  # a review's included set: 3 of 5 inside the top 50
    assert recall_at(ranked, gold, 50) == pytest.approx(3 / 5)
    assert recall_at(ranked, gold, 10) == pytest.approx(1 / 5) == score_ranking(ranked, gold)[2]
    assert recall_at(ranked, [], 50) == 0.0


def test_recall50_aggregates_and_is_none_for_old_records() -> None:
    def record(set_name: str, rows: dict[str, dict[str, object]]) -> dict[str, object]:
        return {"set": set_name, "id": "q", "gold": True, "systems": rows}

    new = {"ranked": ["1"], "ms": 1.0, "hit10": 1.0, "rr10": 1.0, "recall10": 0.1, "recall50": 0.4}
    old = {k: v for k, v in new.items() if k != "recall50"}  # written before Recall@50 existed
    (score,) = scores_from_records(
        [record("cohen-topic", {"dense": new}), record("cohen-topic", {"dense": new})]
    )
    assert score.recall50 == pytest.approx(0.4) and score.recall10 == pytest.approx(0.1)
    (stale,) = scores_from_records([record("ei", {"dense": new}), record("ei", {"dense": old})])
    assert stale.recall50 is None and "| ei | dense | 2 |" in markdown_table([stale])


def test_raw_term_strips_phi_and_syntax() -> None:
    term = raw_term('I\'m Linda Parker (555-201-7788) "breast cancer" [pmid] AND chemo?')
    assert "Linda" not in term and "555" not in term
    assert not set('"[]()') & set(term) and " AND " not in term
    assert "breast cancer" in term and "chemo" in term


def test_user_jsonl_question_file(tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    lines = [{"question": "Is aspirin useful?", "pmids": [123, "456"]}, {"question": "q2", "pmids": []}]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    items = load_items(str(path))
    assert [i.gold for i in items] == [("123", "456"), ()]
    assert [i.text for i in items] == ["Is aspirin useful?", "q2"]


async def test_small_real_run_over_the_pipeline() -> None:
    settings = Settings().offline()
    async with build_pipeline(settings, use_llm=False) as pipeline:
        seen: list[tuple[int, int]] = []
        scores = await run_retrieval_eval(
            {"deterministic": pipeline}, ["narrative"], limit=4, on_progress=lambda d, t: seen.append((d, t))
        )
        assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]
    systems = [s.system for s in scores]
    assert systems == [
        "raw E-utilities",
        "Adapt-E (deterministic)",
        "dense (MiniLM-L6)",
        "hybrid (deterministic)",
    ]
    by = {s.system: s for s in scores}
    assert all(s.n == 4 for s in scores)
    assert by["raw E-utilities"].hit0 == 1.0  # narratives defeat raw E-utilities
    assert by["Adapt-E (deterministic)"].hit0 == 0.0 and by["hybrid (deterministic)"].hit0 == 0.0
    hybrid = by["hybrid (deterministic)"]
    assert hybrid.hit10 is not None and hybrid.hit10 >= 0.75
    # Each question has one gold PMID: Recall@50 is at least Recall@10 and at most 1.
    assert all(
        s.recall50 is not None and s.recall10 is not None for s in scores if s.system != "raw E-utilities"
    )
    assert (
        hybrid.recall50 is not None
        and hybrid.recall10 is not None
        and hybrid.recall10 <= hybrid.recall50 <= 1
    )
    table = markdown_table(scores)
    assert table.count("\n") == len(scores) + 1 and "| narrative | hybrid (deterministic) | 4 |" in table
