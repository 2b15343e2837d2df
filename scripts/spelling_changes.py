"""Every word the deterministic rewriter's speller changes in the gold questions (the counts:
docs/history/answers-notes.md).

Usage: ``python scripts/spelling_changes.py [--gold DIR] [--split dev|test|all] [--out FILE]``. Prints one
line per change (``set id split: word -> correction``) and a count per set; ``--out`` also writes them as
JSON lines, so that two runs (before and after a speller change) can be compared.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

from retrieval.understand import DeterministicRewriter, scrub

_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z0-9]+)*")
_SETS = ("ei", "cohen-narrative", "unanswerable")


def changes(rewriter: DeterministicRewriter, text: str) -> list[tuple[str, str]]:
    """(word, correction) for each word the speller changes in ``text`` as ``rewrite()`` reads it (the
    scrubbed question; the plan's ``corrected_question``)."""
    scrubbed = scrub(text).text
    corrected = rewriter.rewrite(text).corrected_question
    before, after = _WORD.findall(scrubbed), _WORD.findall(corrected)
    if len(before) != len(after):  # an apostrophe word merged: align by position from the start
        return [(scrubbed, corrected)]
    return [(a, b) for a, b in zip(before, after, strict=True) if a != b]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gold", type=Path, default=Path("var/eval/gold"))
    parser.add_argument("--split", default="dev", choices=("dev", "test", "all"))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    rewriter = DeterministicRewriter()
    rows: list[dict[str, str]] = []
    questions: Counter[str] = Counter()
    for name in _SETS:
        for line in (args.gold / f"{name}.jsonl").read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            if args.split != "all" and rec.get("split") != args.split:
                continue
            questions[name] += 1
            for word, fix in changes(rewriter, rec["question"]):
                split = rec.get("split", "")
                rows.append({"set": name, "id": rec["id"], "split": split, "word": word, "fix": fix})
                print(f"{name} {rec['id']} {split}: {word} -> {fix}")
    for name in _SETS:
        n = sum(1 for r in rows if r["set"] == name)
        print(f"# {name}: {n} changed words in {questions[name]} questions", file=sys.stderr)
    if args.out:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
