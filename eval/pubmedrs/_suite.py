"""``cometa eval pubmedrs``: Clinfo.AI's PubMedRS-200 questions, ROUGE-L against the human answers and recall
of the systematic reviews' reference PMIDs (Lozano et al., Clinfo.ai, PSB 2024).

Each row of ``PubMedRS-200.csv`` is a systematic review: its question, a short human answer written from
the review's conclusion, the PMIDs of the studies it cites, its own PMID and publication date. Every
question goes through ``POST /ask`` (in process, or ``--server``) with the date window closed the day
before the review appeared, so the review's own conclusion cannot be retrieved as evidence; a review found
anyway is counted (``review_retrieved``). Metrics per question, averaged:

* **ROUGE-L** (Lin 2004): the F-measure of the longest common subsequence of the answer's and the human
  answer's tokens (lower-cased runs of letters and digits, no stemming: ``rouge-score``'s defaults);
* **reference recall @ evidence**: the share of the review's reference PMIDs among the answer's evidence
  documents; **@ citations**: among the PMIDs the answer cites;
* answer length in words (Clinfo.AI's table reports its average length).

Live mode is the point (the references are real PubMed records): run against a CoMeta server configured for
live NCBI and an LLM (``--server URL``). In process the suite runs on the offline default (the world or the
bundled corpus, ``--llm``), which holds few of the references; the report says so. Clinfo.AI's published
reference metrics (UniEval, COMET, CTC, length; ``clinfo_reference_metrics_mean_std.csv``) are copied into
the report for comparison where comparable.
"""

from __future__ import annotations

import ast
import csv
import datetime
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core import words
from eval import (
    ITEMS_FILE,
    AskRunner,
    EvalInputError,
    EvalServerError,
    ItemLog,
    Plot,
    RunOptions,
    StageTimes,
    SuiteResult,
    Table,
    progress,
    select_items,
)
from eval.gold import shared_data_candidates

__all__ = ["PubmedRSItem", "find_pubmedrs", "load_pubmedrs", "rouge_l", "run_pubmedrs", "score_answer"]

CSV_NAME = "PubMedRS-200.csv"
REFERENCE_METRICS = "clinfo_reference_metrics_mean_std.csv"

AskFn = Callable[[Mapping[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class PubmedRSItem:
    key: str  # "pubmedrs:<review PMID>"
    question: str
    human_answer: str
    ref_pmids: tuple[str, ...]
    review_pmid: str
    published: datetime.date | None
    specialty: str = ""


def rouge_l(candidate: str, reference: str) -> float:
    """ROUGE-L F1 over tokens: LCS(c, r) = L; P = L / |c|, R = L / |r|, F = 2PR / (P + R); 0 if either is
    empty or nothing is shared."""
    c, r = words(candidate), words(reference)
    if not c or not r:
        return 0.0
    # LCS by dynamic programming, one row at a time (O(|c|·|r|) time, O(|r|) memory).
    prev = [0] * (len(r) + 1)
    for tok in c:
        cur = [0]
        for j, ref_tok in enumerate(r, start=1):
            cur.append(prev[j - 1] + 1 if tok == ref_tok else max(prev[j], cur[j - 1]))
        prev = cur
    lcs = prev[-1]
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(c), lcs / len(r)
    return 2 * precision * recall / (precision + recall)


def find_pubmedrs(explicit: Path | None = None) -> Path | None:
    """``explicit``, else ``$COMETA_SHARED_DIR/data/pubmedrs200``, else ``../shared/data/pubmedrs200``."""
    if explicit is not None:
        return explicit if (explicit / CSV_NAME).is_file() else None
    return next((p for p in shared_data_candidates("pubmedrs200") if (p / CSV_NAME).is_file()), None)


def _date(text: str) -> datetime.date | None:
    for fmt in ("%m/%d/%Y", "%Y-%m-%d", "%Y/%m/%d"):
        try:
            return datetime.datetime.strptime(text.strip(), fmt).date()
        except ValueError:
            continue
    return None


def load_pubmedrs(folder: Path) -> list[PubmedRSItem]:
    """The rows with a question, a human answer and at least one reference PMID."""
    with (folder / CSV_NAME).open(encoding="utf-8", errors="replace", newline="") as fh:
        rows = list(csv.DictReader(fh))
    items: list[PubmedRSItem] = []
    seen: set[str] = set()
    for row in rows:
        question = (row.get("questions") or row.get("HumanQuestions") or "").strip()
        answer = (row.get("HumanAnswer") or "").strip()
        try:
            refs = ast.literal_eval(row.get("Ref_PMIDs") or "[]")
        except (ValueError, SyntaxError):
            refs = []
        ref_pmids = tuple(dict.fromkeys(str(p).strip() for p in refs if str(p).strip().isdigit()))
        pmid = (row.get("PMID") or "").strip()
        if not question or not answer or not ref_pmids or not pmid or pmid in seen:
            continue
        seen.add(pmid)
        items.append(
            PubmedRSItem(
                f"pubmedrs:{pmid}",
                question,
                answer,
                ref_pmids,
                pmid,
                _date(row.get("PublishedDate") or ""),
                (row.get("specialty") or "").strip(),
            )
        )
    if not items:
        raise EvalInputError(f"{folder / CSV_NAME}: no usable rows")
    return items


def score_answer(item: PubmedRSItem, reply: Mapping[str, Any]) -> dict[str, Any]:
    """One item's record from an ``/ask`` reply: ROUGE-L, reference recall at evidence and citations."""
    refs = set(item.ref_pmids)
    evidence = [str(e.get("pmid")) for e in reply.get("evidence") or [] if e.get("pmid")]
    cited = [str(c.get("pmid")) for c in reply.get("citations") or [] if c.get("pmid")]
    answer = str(reply.get("answer") or "")
    return {
        "key": item.key,
        "specialty": item.specialty,
        "mode": reply.get("mode"),
        "rouge_l": rouge_l(answer, item.human_answer),
        "answer_words": len(words(answer)),
        "n_refs": len(refs),
        "refs_in_evidence": len(refs & set(evidence)),
        "refs_cited": len(refs & set(cited)),
        "recall_evidence": len(refs & set(evidence)) / len(refs),
        "recall_citations": len(refs & set(cited)) / len(refs),
        "n_evidence": len(evidence),
        "review_retrieved": item.review_pmid in evidence,
        "error": None,
    }


def _window(item: PubmedRSItem) -> dict[str, str]:
    """Evidence up to the day before the review appeared (its own conclusion must not be the evidence)."""
    if item.published is None:
        return {}
    last = item.published - datetime.timedelta(days=1)
    return {"mindate": "1800", "maxdate": last.strftime("%Y/%m/%d")}


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _reference_table(folder: Path) -> Table | None:
    path = folder / REFERENCE_METRICS
    if not path.is_file():
        return None
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    if len(rows) < 2:
        return None
    clean = [[cell.replace("&", "").strip() for cell in row] for row in rows]
    return Table(
        "Clinfo.AI's published reference metrics on PubMedRS-200 (mean (std); UniEval, COMET, CTC, length)",
        clean[0],
        clean[1:],
    )


async def run_pubmedrs(opts: RunOptions, *, ask: AskFn | None = None) -> SuiteResult:
    """Ask every PubMedRS-200 question (module docstring); ``ask`` injects the ``/ask`` call (tests)."""
    folder = find_pubmedrs(Path(str(opts.params["data_dir"])) if "data_dir" in opts.params else None)
    if folder is None:
        raise EvalInputError(
            f"PubMedRS-200 not found: set COMETA_SHARED_DIR (data/pubmedrs200/{CSV_NAME}) or "
            "--param data_dir=PATH"
        )
    items = select_items(load_pubmedrs(folder), opts.limit, opts.seed)
    log = ItemLog(opts.out_dir / ITEMS_FILE, resume=opts.resume)
    done = log.done()
    todo = [it for it in items if it.key not in done]
    times = StageTimes()
    runner: AskRunner | None = None
    if ask is None and todo:
        runner = AskRunner(opts)
        await runner.__aenter__()
        ask = runner.ask
    try:
        with progress(len(todo), "pubmedrs") as advance:
            for item in todo:
                assert ask is not None
                started = time.perf_counter()
                try:
                    reply = await ask({"question": item.question, **_window(item)})
                    record = score_answer(item, reply)
                except (EvalInputError, EvalServerError) as exc:
                    # A refused question is an error, counted apart and kept out of the means.
                    record = {"key": item.key, "error": f"{type(exc).__name__}: {exc}"[:300]}
                ms = (time.perf_counter() - started) * 1000
                record["ms"] = round(ms, 1)
                times.add("ask", ms)
                log.append(record)
                advance(1)
    finally:
        if runner is not None:
            await runner.__aexit__(None, None, None)
    wanted = {it.key for it in items}
    records = [r for k, r in log.done().items() if k in wanted]
    ok = [r for r in records if not r.get("error")]
    metrics: dict[str, Any] = {
        "n_items": len(items),
        "answered": len(ok),
        "errors": len(records) - len(ok),
        "rouge_l": _mean([r["rouge_l"] for r in ok]),
        "recall_evidence": _mean([r["recall_evidence"] for r in ok]),
        "recall_citations": _mean([r["recall_citations"] for r in ok]),
        "answer_words": _mean([float(r["answer_words"]) for r in ok]),
        "review_retrieved": sum(1 for r in ok if r.get("review_retrieved")),
        "modes": {
            m: sum(1 for r in ok if r.get("mode") == m) for m in sorted({str(r.get("mode")) for r in ok})
        },
        "live": bool(opts.server_url),
    }

    def pct(v: float | None) -> str:
        return "n/a" if v is None else f"{100 * v:.1f}"

    tables = [
        Table(
            "PubMedRS-200: ROUGE-L vs the human answers and recall of the reviews' reference PMIDs",
            [
                "questions",
                "answered",
                "errors",
                "ROUGE-L",
                "ref recall @ evidence %",
                "ref recall @ citations %",
                "answer words",
                "review itself retrieved",
            ],
            [
                [
                    metrics["n_items"],
                    metrics["answered"],
                    metrics["errors"],
                    None if metrics["rouge_l"] is None else round(float(metrics["rouge_l"]), 4),
                    pct(metrics["recall_evidence"]),
                    pct(metrics["recall_citations"]),
                    None if metrics["answer_words"] is None else round(float(metrics["answer_words"]), 1),
                    metrics["review_retrieved"],
                ]
            ],
        )
    ]
    reference = _reference_table(folder)
    if reference is not None:
        tables.append(reference)
    notes = [
        f"{len(items)} PubMedRS-200 questions ({folder / CSV_NAME}), a seeded sample of "
        f"{opts.limit if opts.limit is not None else 'all'}; evidence limited to before each review's "
        "publication date; errors (refused or failed requests) are counted and left out of the means.",
        "ROUGE-L: LCS F-measure over lower-cased word tokens, no stemming. Reference recall: the share of "
        "the review's cited PMIDs among the answer's evidence documents / cited PMIDs, averaged per "
        "question.",
    ]
    if not metrics["live"]:
        notes.insert(
            0,
            "OFFLINE: answered from the local corpus, which holds few of the reviews' references; reference "
            "recall here is not comparable with Clinfo.AI. Run with --server URL (a CoMeta on live NCBI) for "
            "the real measure.",
        )
    plots = [
        Plot(
            "pubmedrs_rouge_l.png",
            "ROUGE-L per question",
            "hist",
            [],
            {"ROUGE-L": [float(r["rouge_l"]) for r in ok]},
            xlabel="ROUGE-L",
        )
    ]
    return SuiteResult("pubmedrs", metrics, tables, plots if ok else [], notes, times)
