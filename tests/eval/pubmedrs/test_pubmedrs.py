"""``cometa eval pubmedrs``: ROUGE-L by hand, the CSV loader, and a run over a fake ``/ask`` transport."""

from __future__ import annotations

import asyncio
import datetime
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from eval import RunOptions, write_result
from eval.pubmedrs import load_pubmedrs, rouge_l, run_pubmedrs, score_answer


def test_rouge_l_by_hand() -> None:
    # c = "the cat sat on the mat" (6), r = "the cat is on the mat" (6); LCS "the cat on the mat" = 5
    # P = R = 5/6 -> F = 5/6.
    assert rouge_l("The cat sat on the mat.", "the cat is on the mat") == pytest.approx(5 / 6)
    # c = "a b" (2), r = "a c b d" (4): LCS 2; P = 1, R = 0.5 -> F = 2/3.
    assert rouge_l("a b", "a c b d") == pytest.approx(2 / 3)
    assert rouge_l("", "x") == 0.0 and rouge_l("x y", "z") == 0.0
    assert rouge_l("same words", "Same, words!") == 1.0


CSV = (
    "specialty,SubTopic,Title,PMID,Ref_PMIDs,questions,PublishedDate,HumanQuestions,HumanAnswer\n"
    "oncology,t,T,111,\"['201', '202', '203', '203']\",Does X help?,11/1/2021,"
    "Does X help?,X helps patients.\n"
    "oncology,t,T,112,\"['301']\",Does Y harm?,2020-05-02,Does Y harm?,Y does not harm.\n"
    "oncology,t,T,113,[],No refs?,1/1/2020,No refs?,Dropped.\n"
)


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "pubmedrs200"
    folder.mkdir()
    (folder / "PubMedRS-200.csv").write_text(CSV, encoding="utf-8")
    (folder / "clinfo_reference_metrics_mean_std.csv").write_text(
        "Model,coherence,Average Length\nclinfo_pubmed,& 0.945 (0.064),& 214 (44.2)\n"
    )
    return folder


def test_loader_and_scoring(tmp_path: Path) -> None:
    items = load_pubmedrs(_folder(tmp_path))
    assert [it.review_pmid for it in items] == ["111", "112"]  # no references: dropped
    first = items[0]
    assert first.ref_pmids == ("201", "202", "203") and first.published == datetime.date(2021, 11, 1)
    reply = {
        "answer": "X helps most patients [PMID:201].",
        "mode": "llm",
        "evidence": [{"pmid": "201"}, {"pmid": "202"}, {"pmid": "999"}, {"pmid": "111"}],
        "citations": [{"pmid": "201"}],
    }
    rec = score_answer(first, reply)
    assert rec["recall_evidence"] == pytest.approx(2 / 3) and rec["recall_citations"] == pytest.approx(1 / 3)
    assert rec["review_retrieved"] is True
    # c = "x helps most patients pmid 201" (6), r = "x helps patients" (3): LCS 3 -> P 1/2, R 1 -> 2/3.
    assert rec["rouge_l"] == pytest.approx(2 / 3)


def test_run_over_a_fake_ask(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    sent: list[dict[str, Any]] = []

    async def fake_ask(body: Mapping[str, Any]) -> dict[str, Any]:
        sent.append(dict(body))
        if "Y harm" in body["question"]:
            return {
                "answer": "Y does not harm.",
                "mode": "llm",
                "evidence": [{"pmid": "301"}],
                "citations": [],
            }
        return {"answer": "", "mode": "insufficient_evidence", "evidence": [], "citations": []}

    opts = RunOptions(out_dir=tmp_path / "run", params={"data_dir": str(folder)})
    result = asyncio.run(run_pubmedrs(opts, ask=fake_ask))
    m = result.metrics
    assert (m["n_items"], m["answered"], m["errors"]) == (2, 2, 0)
    assert m["rouge_l"] == pytest.approx(0.5)  # 0 and 1
    assert m["recall_evidence"] == pytest.approx(0.5) and m["recall_citations"] == 0.0
    # The window closes the day before each review appeared.
    assert sent[0]["maxdate"] == "2021/10/31" and sent[1]["maxdate"] == "2020/05/01"
    assert m["live"] is False and result.notes[0].startswith("OFFLINE")
    paths = write_result(result, opts, {"config_hash": "x"})
    report = (opts.out_dir / "report.md").read_text()
    assert "Clinfo.AI's published reference metrics" in report and "0.945 (0.064)" in report
    assert any(p.name == "pubmedrs_rouge_l.png" for p in paths)
    records = [json.loads(line) for line in (opts.out_dir / "items.jsonl").read_text().splitlines()]
    assert [r["key"] for r in records] == ["pubmedrs:111", "pubmedrs:112"]


def test_the_shared_set_loads(shared_dir: Path) -> None:
    folder = shared_dir / "data" / "pubmedrs200"
    if not folder.is_dir():
        pytest.skip("no PubMedRS-200 in the shared data")
    items = load_pubmedrs(folder)
    assert len(items) >= 190 and all(it.ref_pmids for it in items)
