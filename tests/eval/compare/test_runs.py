"""``load_run`` reads a CCRS run's items.jsonl with the runner's one item-log reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval import ITEMS_FILE, EvalInputError
from eval.compare import load_run


def _item(key: str) -> str:
    return json.dumps({"key": key, "systems": {"llm_rag": {"scores": {"QR": 1.0}}}})


def test_load_run_skips_a_torn_line_and_refuses_a_non_ccrs_item(tmp_path: Path) -> None:
    # A kill mid-write leaves a torn last line: that item is simply not in the run.
    (tmp_path / ITEMS_FILE).write_text(_item("q1") + "\n\n" + _item("q2") + "\n" + _item("q3")[:20])
    (tmp_path / "result.json").write_text(json.dumps({"suite": "ccrs", "metrics": {}}))
    records, meta = load_run(tmp_path)
    assert [r["key"] for r in records] == ["q1", "q2"] and meta["suite"] == "ccrs"

    (tmp_path / ITEMS_FILE).write_text(_item("q1") + "\n" + json.dumps({"key": "q2", "correct": True}) + "\n")
    with pytest.raises(EvalInputError, match="item q2: not a CCRS item"):
        load_run(tmp_path)
    with pytest.raises(EvalInputError, match="not a run folder"):
        load_run(tmp_path / "nothing")
