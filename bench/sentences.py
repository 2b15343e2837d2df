"""Benchmark: sentence splitters on the hand-labelled biomedical sample.

Run from the repository root::

    .venv/bin/python bench/sentences.py [--repeat N]

Scores every splitter in ``segmentation._sentences.SPLITTERS`` on ``tests/fixtures/sentence_splits.jsonl``
(passages from the shipped JATS texts and PubMedQA abstracts, plus a few constructed ones for tricky
abbreviations the corpus lacks). A boundary is the start offset of every sentence but the first;
precision/recall/F1 are micro-averaged over all passages. ``exact`` is the share of passages split
exactly right. Speed is characters per second over the whole sample (best of ``--repeat``). The last
lines list each splitter's errors, so a regression can be read, not just counted.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a plain script: make `segmentation` importable without installing

from segmentation import SPLITTERS, Splitter  # noqa: E402

FIXTURE = REPO / "tests" / "fixtures" / "sentence_splits.jsonl"


def gold_boundaries(row: dict[str, Any]) -> set[int]:
    text: str = row["text"]
    starts: list[int] = []
    pos = 0
    for sentence in row["sentences"]:
        pos = text.index(sentence, pos)
        starts.append(pos)
        pos += len(sentence)
    return set(starts[1:])


def score(splitter: Splitter, rows: list[dict[str, Any]]) -> dict[str, Any]:
    tp = fp = fn = exact = 0
    errors: list[str] = []
    for row in rows:
        gold = gold_boundaries(row)
        pred = {s.start for s in splitter(row["text"])[1:]}
        tp += len(gold & pred)
        fp += len(pred - gold)
        fn += len(gold - pred)
        exact += gold == pred
        text = row["text"]
        for b in sorted(pred - gold):
            errors.append(
                f"  {row['id']} false break: ...{text[max(0, b - 40) : b]!r} | {text[b : b + 25]!r}"
            )
        for b in sorted(gold - pred):
            errors.append(
                f"  {row['id']} missed break: ...{text[max(0, b - 40) : b]!r} | {text[b : b + 25]!r}"
            )
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {"p": p, "r": r, "f1": f1, "exact": exact / len(rows), "errors": errors}


def speed(splitter: Splitter, rows: list[dict[str, Any]], repeat: int) -> float:
    chars = sum(len(r["text"]) for r in rows)
    best = float("inf")
    splitter(rows[0]["text"])  # warm-up: imports and lazily built models are not the splitter's speed
    for _ in range(repeat):
        t0 = time.perf_counter()
        for row in rows:
            splitter(row["text"])
        best = min(best, time.perf_counter() - t0)
    return chars / best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    rows = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line.strip()]
    n_bounds = sum(len(r["sentences"]) - 1 for r in rows)
    print(f"{len(rows)} passages, {n_bounds} gold boundaries\n")
    print(f"| {'splitter':<15} | {'P':>6} | {'R':>6} | {'F1':>6} | {'exact':>6} | {'kchars/s':>9} |")
    print(f"|{'-' * 17}|{'-' * 8}|{'-' * 8}|{'-' * 8}|{'-' * 8}|{'-' * 11}|")
    results = {}
    for name, splitter in SPLITTERS.items():
        res = score(splitter, rows)
        cps = speed(splitter, rows, args.repeat)
        results[name] = res
        print(
            f"| {name:<15} | {res['p']:6.3f} | {res['r']:6.3f} | {res['f1']:6.3f} | {res['exact']:6.3f} "
            f"| {cps / 1000:9.1f} |"
        )
    for name, res in results.items():
        print(f"\n{name}: {len(res['errors'])} errors")
        for line in res["errors"]:
            print(line)


if __name__ == "__main__":
    main()
