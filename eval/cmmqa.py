"""CMMQA: the cancer-related questions of MIRAGE (CoMeta §3.1), and their clinical-narrative variant.

Recipe (``docs/cmmqa.md`` has the counts): a question is CMMQA when its **question text** (not the
options) mentions, case-insensitively and on word boundaries, any term of the MeSH Neoplasms [C04] subtree —
every descriptor's 2025 name, 2019 name and 2019 preferred-concept entry terms, as bundled in
``retrieval/corpus/mesh`` and loaded by :class:`retrieval.vocab._mesh.MeshVocabulary` — or one of
:data:`COMMON_TERMS`, the everyday words MeSH lists only inside longer entry terms ("cancer", "tumour",
"malignancy" ...). The branches in :data:`EXCLUDED_BRANCHES` (Cysts, Paraneoplastic Syndromes) are left
out. Text and terms are compared as word sequences (any non-word character separates words, so "non-small-
cell" = "non small cell"); an inverted heading ("Carcinoma, Bronchogenic") also matches in natural order;
acronym words (two capitals in a row: "DCIS", "T-ALL", "MEN 2") keep their case, so "MEN 2" never matches
"men 2". The committed key list ``eval/data/cmmqa.json`` pins the result.

The **clinical-narrative variant** rewrites each question with the paper's prompt (A.6,
``prompts/narrative_variant``) through any configured LLM; options and answers are unchanged. The committed
fixture ``eval/data/cmmqa_narratives.jsonl`` holds narratives for a pinned subset (provenance in its first
line); ``build_cmmqa(..., narratives=True)`` regenerates them with a real LLM, resumably.

    python -m eval.cmmqa [--benchmark PATH] [--out DIR] [--narratives --llm openai|embedded] [--limit N]
"""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import json
import logging
import random
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any, Literal, TextIO

from core import words
from eval.mirage import DATASETS, MCQItem, find_benchmark, load_mirage, sha256_file, write_repo_copy
from llm import LLMClient, LLMError, LLMSettings, build_llm
from prompts import load_prompt
from retrieval.vocab import MeshVocabulary

from ._runner import EvalInputError, Table, progress

__all__ = [
    "CMMQA_FILE",
    "COMMON_TERMS",
    "EXCLUDED_BRANCHES",
    "NARRATIVES_FILE",
    "CancerMatcher",
    "build_cmmqa",
    "build_narratives",
    "clean_narrative",
    "cmmqa_counts_table",
    "load_cmmqa",
    "load_narratives",
    "main",
    "question_hash",
    "select_cmmqa",
]

log = logging.getLogger("cometa.eval")

DATA_DIR = Path(__file__).resolve().parent / "data"
CMMQA_FILE = DATA_DIR / "cmmqa.json"
NARRATIVES_FILE = DATA_DIR / "cmmqa_narratives.jsonl"
PAPER_COUNTS = {"pubmedqa": 60, "bioasq": 82, "mmlu": 23, "medmcqa": 93, "medqa": 86}  # CoMeta Figure 1

# Everyday disease words PubMed's ATM maps to C04 but the bundled MeSH extract has only inside longer
# entry terms (shared data README §3.5). Deliberately no bare "malignant": "malignant hyperthermia",
# "neuroleptic malignant syndrome" and "malignant hypertension" are not cancer.
COMMON_TERMS: tuple[str, ...] = (
    "cancer",
    "cancers",
    "cancerous",
    "tumor",
    "tumors",
    "tumour",
    "tumours",
    "malignancy",
    "malignancies",
    "carcinoma",
    "carcinomas",
    "metastasis",
    "metastases",
    "metastatic",
    "oncology",
    "oncologic",
    "neoplasm",
    "neoplasms",
    "neoplastic",
)
# C04 branches that are not cancer as a disease entity: fluid sacs (Cysts [C04.182]: ovarian cysts,
# polycystic ovary syndrome, ganglion cysts, pilonidal sinus) and a tumour's remote immune effects
# (Paraneoplastic Syndromes [C04.730]: myasthenia gravis, transverse myelitis). Every descriptor under them
# is dropped, whatever its other tree numbers.
EXCLUDED_BRANCHES: tuple[str, ...] = ("Cysts", "Paraneoplastic Syndromes")
_ACRONYM = re.compile(r"[A-Z]{2,}")


def _tokens(text: str) -> tuple[str, ...]:
    # Any character but a letter or digit separates words, so "non-small-cell" == "non small cell" and a
    # term can only match whole words: the word-boundary rule falls out of the tokenisation. Case is kept
    # for the acronym rule (accents are not: "Dubé" == "Dube").
    return tuple(words(text, lower=False))


def _mixed(toks: tuple[str, ...]) -> tuple[str, ...]:
    # Acronym words keep their case ("ALL" is not "all"); the other words of the term fold.
    return tuple(t if _ACRONYM.search(t) else t.lower() for t in toks)


def _variants(term: str) -> set[str]:
    out = {term}
    head, sep, tail = term.partition(", ")
    if sep and "," not in tail:
        out.add(f"{tail} {head}")  # "Carcinoma, Bronchogenic" -> "Bronchogenic Carcinoma"
    return out


class CancerMatcher:
    """Whole-word matcher over the C04 names, entry terms and :data:`COMMON_TERMS`.

    Terms and text are tokenised the same way and compared as word n-grams (longest first), which is
    linear in the text and exact on word boundaries.
    """

    def __init__(self, terms: Iterable[str]) -> None:
        folded: dict[tuple[str, ...], str] = {}
        exact: dict[tuple[str, ...], str] = {}
        for term in terms:
            for v in _variants(term.strip()):
                toks = _tokens(v)
                if not toks:
                    continue
                if _ACRONYM.search(v):
                    key = _mixed(toks)
                    exact.setdefault(key, " ".join(key))
                else:
                    low = tuple(t.lower() for t in toks)
                    folded.setdefault(low, " ".join(low))
        self._folded = folded
        self._exact = exact
        # Longest term starting with each word: most words start no term and are skipped at once.
        self._longest: dict[str, int] = {}
        for key in (*folded, *exact):
            self._longest[key[0]] = max(self._longest.get(key[0], 0), len(key))

    @property
    def terms(self) -> list[str]:
        return sorted(self._folded.values())

    @property
    def acronyms(self) -> list[str]:
        return sorted(self._exact.values())

    @classmethod
    def from_mesh(
        cls, vocabulary: MeshVocabulary | None = None, *, exclude: Sequence[str] = EXCLUDED_BRANCHES
    ) -> CancerMatcher:
        """Terms of every C04 descriptor except those in (or under) the ``exclude`` descriptors."""
        vocab = vocabulary or MeshVocabulary.load()
        excluded: set[str] = set()
        for branch in exclude:
            canonical = vocab.canonical(branch)
            if canonical is None:
                raise ValueError(f"unknown MeSH descriptor {branch!r}")
            excluded |= {canonical, *vocab.descendants(canonical)}
        terms: list[str] = list(COMMON_TERMS)
        for name in vocab.names():
            d = vocab.descriptor(name)
            if d is None or d.name in excluded or not any(tn.startswith("C04") for tn in d.tree_numbers):
                continue
            terms += [d.name, *d.entry_terms]
            if d.name_2019:
                terms.append(d.name_2019)
        return cls(terms)

    def matches(self, text: str) -> list[str]:
        """The distinct terms found in ``text``, longest match first at each position, in text order."""
        toks = _tokens(text)
        low = tuple(t.lower() for t in toks)
        mixed = _mixed(toks)
        found: list[str] = []
        i = 0
        while i < len(toks):
            step = 1
            longest = max(self._longest.get(low[i], 0), self._longest.get(mixed[i], 0))
            for n in range(min(longest, len(toks) - i), 0, -1):
                hit = self._folded.get(low[i : i + n]) or self._exact.get(mixed[i : i + n])
                if hit is not None:
                    found.append(hit)
                    step = n
                    break
            i += step
        return list(dict.fromkeys(found))

    def __call__(self, text: str) -> bool:
        return bool(self.matches(text))


@cache
def _default_matcher() -> CancerMatcher:
    return CancerMatcher.from_mesh()


def question_hash(question: str) -> str:
    """A question text's id: sha256, first 16 hex (narratives are tied to it; logs never carry text)."""
    return hashlib.sha256(question.encode("utf-8")).hexdigest()[:16]


def select_cmmqa(items: Iterable[MCQItem], matcher: CancerMatcher | None = None) -> dict[str, list[str]]:
    """CMMQA key -> matched terms, for the items whose question text matches."""
    m = matcher or _default_matcher()
    return {it.key: terms for it in items if (terms := m.matches(it.question))}


def cmmqa_counts_table(selected: Iterable[str], totals: dict[str, int]) -> Table:
    counts = Counter(key.partition(":")[0] for key in selected)
    rows: list[list[Any]] = []
    for name in DATASETS:
        if name in totals:
            n = counts.get(name, 0)
            rows.append([name, totals[name], n, f"{100 * n / totals[name]:.1f}%", PAPER_COUNTS[name]])
    rows.append(
        ["total", sum(totals.values()), sum(counts.values()), "", sum(PAPER_COUNTS[d] for d in totals)]
    )
    return Table(
        "CMMQA: cancer questions per MIRAGE dataset", ["dataset", "MIRAGE", "CMMQA", "share", "paper"], rows
    )


# --- loading ------------------------------------------------------------------------------------------


def _read_cmmqa_file(path: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise EvalInputError(f"cannot read the CMMQA key list {path}: {exc}") from exc
    return data


def load_narratives(path: Path | None = None) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """(metadata line, key -> record) of a narratives JSONL file (default: the committed fixture)."""
    p = path or NARRATIVES_FILE
    meta: dict[str, Any] = {}
    records: dict[str, dict[str, Any]] = {}
    if not p.is_file():
        raise EvalInputError(f"no narratives file at {p}; build one with python -m eval.cmmqa --narratives")
    lines = p.read_text(encoding="utf-8").splitlines()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            if n == len(lines):
                continue  # a line torn by a kill mid-write: that item is simply rebuilt
            raise EvalInputError(f"{p}:{n}: not JSON ({exc})") from exc
        if "meta" in rec and "key" not in rec:
            meta = rec["meta"]
        elif isinstance(rec.get("key"), str) and isinstance(rec.get("narrative"), str):
            records[rec["key"]] = rec
    return meta, records


def load_cmmqa(
    variant: Literal["standard", "narrative"] = "standard",
    *,
    datasets: Sequence[str] | None = None,
    narratives: Path | None = None,
    benchmark: Path | None = None,
) -> list[MCQItem]:
    """The CMMQA questions (pinned key list), MIRAGE order.

    ``variant="narrative"``: only the questions with a narrative in ``narratives`` (default: the committed
    fixture, a pinned subset); ``question`` and ``narrative`` both hold the narrative text. A narrative
    written for a different question text (hash mismatch) is refused rather than silently paired.
    """
    keys = set(_read_cmmqa_file(CMMQA_FILE)["keys"])
    items = [it for it in load_mirage(benchmark, datasets=datasets) if it.key in keys]
    if variant == "standard":
        return items
    if variant != "narrative":
        raise EvalInputError(f"unknown CMMQA variant {variant!r} (standard, narrative)")
    _meta, records = load_narratives(narratives)
    out: list[MCQItem] = []
    for it in items:
        rec = records.get(it.key)
        if rec is None:
            continue
        if rec.get("question_sha256") and rec["question_sha256"] != question_hash(it.question):
            raise EvalInputError(f"narrative for {it.key} was written for a different question text")
        out.append(replace(it, question=rec["narrative"], narrative=rec["narrative"]))
    return out


# --- narratives ---------------------------------------------------------------------------------------

_QUOTES = "\"'“”‘’`"
_LEADS = re.compile(
    r"^(?:rewritten(?: query| question)?|query|narrative|output|answer)\s*:\s*", re.IGNORECASE
)


def clean_narrative(text: str) -> str | None:
    """The rewritten string from a model reply: first paragraph, label and quotes stripped; None if empty."""
    text = re.sub(r"<think>.*?(?:</think>|$)", "", text, flags=re.DOTALL | re.IGNORECASE).strip()
    first = next((p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()), "")
    first = _LEADS.sub("", " ".join(first.split())).strip().strip(_QUOTES).strip()
    return first if len(first.split()) >= 3 else None


@dataclass
class NarrativeStats:
    written: int = 0
    skipped_existing: int = 0
    failed: int = 0  # LLM errors or empty/garbage replies: counted, not written, retried on the next run


def _start_narratives_file(
    out_path: Path, meta: dict[str, Any], *, resume: bool
) -> tuple[TextIO, dict[str, dict[str, Any]]]:
    """Rewrite the file as the metadata line plus the records kept from an earlier run; open to append."""
    existing: dict[str, dict[str, Any]] = {}
    if resume and out_path.is_file():
        _old, existing = load_narratives(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    fh = out_path.open("w", encoding="utf-8")
    fh.write(json.dumps({"meta": meta}, ensure_ascii=False) + "\n")
    for rec in existing.values():
        fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    fh.flush()
    return fh, existing


async def build_narratives(
    items: Sequence[MCQItem],
    llm: LLMClient,
    out_path: Path,
    *,
    resume: bool = True,
    provenance: str | None = None,
) -> NarrativeStats:
    """Rewrite each item's question with ``narrative_variant`` into ``out_path`` (JSONL, one line per item).

    Resumable: keys already in the file are skipped; each line is flushed as it is written.
    """
    prompt = load_prompt("narrative_variant")
    stats = NarrativeStats()
    meta = {
        "prompt": prompt.id,
        "generator": provenance or f"LLM {llm.model_name} via prompts/{prompt.name}.v{prompt.version}.md",
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "note": "options and gold answers are unchanged; only the question text is rewritten",
    }
    fh, existing = _start_narratives_file(out_path, meta, resume=resume)
    with fh:
        todo = [it for it in items if it.key not in existing]
        stats.skipped_existing = len(items) - len(todo)
        with progress(len(todo), "narratives") as advance:
            for it in todo:
                narrative: str | None = None
                model = llm.model_name
                try:
                    result = await llm.complete_text(
                        prompt.render(question=it.question), prompt_version=prompt.id, temperature=0.0
                    )
                    narrative, model = clean_narrative(result.value), result.model
                except LLMError as exc:
                    log.warning("narrative for %s failed: %s", it.key, type(exc).__name__)
                if narrative is None:
                    stats.failed += 1
                else:
                    rec = {
                        "key": it.key,
                        "dataset": it.dataset,
                        "question_sha256": question_hash(it.question),
                        "narrative": narrative,
                        "model": model,
                        "prompt": prompt.id,
                    }
                    fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
                    fh.flush()
                    stats.written += 1
                advance(1)
    return stats


def _stratified(items: Sequence[MCQItem], limit: int | None, seed: int) -> list[MCQItem]:
    if limit is None:
        return list(items)
    by_ds: dict[str, list[MCQItem]] = {}
    for it in items:
        by_ds.setdefault(it.dataset, []).append(it)
    out: list[MCQItem] = []
    for name, group in by_ds.items():
        picked = random.Random(f"{seed}:{name}").sample(group, min(limit, len(group)))
        out += sorted(picked, key=group.index)
    return out


def build_cmmqa(
    *,
    benchmark: Path | None = None,
    out_dir: Path | None = None,
    narratives: bool = False,
    llm: LLMSettings | None = None,
    limit: int | None = None,
    seed: int = 0,
    resume: bool = True,
) -> dict[str, Any]:
    """Run the CMMQA filter over MIRAGE and (optionally) write narratives; returns a summary.

    ``benchmark``: MIRAGE's full ``benchmark.json`` (default: found by :func:`eval.mirage.find_benchmark`,
    else the repository copy, which lacks BioASQ). Writes ``out_dir/cmmqa.json`` (keys, matched terms,
    counts) and, with ``narratives``, ``out_dir/narratives.jsonl`` for up to ``limit`` items per dataset
    (seeded). ``out_dir=None`` only computes and returns the summary.
    """
    source = benchmark or find_benchmark()
    items = load_mirage(source, datasets=None)
    totals = Counter(it.dataset for it in items)
    matcher = _default_matcher()
    selected = select_cmmqa(items, matcher)
    table = cmmqa_counts_table(selected, dict(totals))
    summary: dict[str, Any] = {
        "source": source.name if source else "repository copy (eval/data/mirage)",
        "source_sha256": sha256_file(source) if source else None,
        "totals": dict(totals),
        "counts": dict(Counter(k.partition(":")[0] for k in selected)),
        "keys": sorted(selected, key=lambda k: (DATASETS.index(k.partition(":")[0]), k)),
        # BioASQ's matched terms would echo its question text: keys only.
        "matched_terms": {k: v for k, v in selected.items() if not k.startswith("bioasq:")},
        "table": table,
    }
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        payload = {k: v for k, v in summary.items() if k != "table"}
        (out_dir / "cmmqa.json").write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
        if narratives:
            settings = llm or LLMSettings()
            client = build_llm(settings)
            if client is None:
                raise EvalInputError("narratives need an LLM: --llm openai (COMETA_LLM__*) or embedded")
            chosen = _stratified([it for it in items if it.key in selected], limit, seed)
            try:
                stats = asyncio.run(
                    build_narratives(chosen, client, out_dir / "narratives.jsonl", resume=resume)
                )
            finally:
                asyncio.run(client.aclose())
            summary["narratives"] = {
                "written": stats.written,
                "skipped": stats.skipped_existing,
                "failed": stats.failed,
            }
    return summary


def main(argv: Sequence[str] | None = None) -> int:  # pragma: no cover - thin CLI wrapper
    import argparse

    from rich.console import Console

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--benchmark", type=Path, default=None, help="MIRAGE benchmark.json (default: found)")
    parser.add_argument("--out", type=Path, default=Path("var/eval/cmmqa"), help="output folder")
    parser.add_argument("--narratives", action="store_true", help="also write the clinical-narrative variant")
    parser.add_argument("--llm", choices=["openai", "embedded"], default="openai")
    parser.add_argument("--limit", type=int, default=None, help="narratives: at most N items per dataset")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-resume", action="store_true")
    parser.add_argument(
        "--update-repo-data",
        action="store_true",
        help="maintainers: rewrite eval/data/cmmqa.json and eval/data/mirage/ from the full benchmark",
    )
    args = parser.parse_args(argv)
    if args.update_repo_data:
        bench = args.benchmark or find_benchmark()
        if bench is None:
            Console(stderr=True).print("[red]error:[/red] --update-repo-data needs the full benchmark.json")
            return 2
        summary = build_cmmqa(benchmark=bench, out_dir=DATA_DIR)
        manifest = write_repo_copy(bench, summary["keys"])
        Console().print(summary["table"].markdown())
        Console().print(json.dumps(manifest["datasets"]))
        return 0
    from app import Settings

    llm = Settings().llm.model_copy(update={"backend": args.llm})
    try:
        summary = build_cmmqa(
            benchmark=args.benchmark,
            out_dir=args.out,
            narratives=args.narratives,
            llm=llm,
            limit=args.limit,
            seed=args.seed,
            resume=not args.no_resume,
        )
    except EvalInputError as exc:
        Console(stderr=True).print(f"[red]error:[/red] {exc}")
        return 2
    console = Console()
    console.print(summary["table"].markdown())
    if "narratives" in summary:
        console.print(f"narratives: {summary['narratives']}")
    console.print(f"wrote {args.out / 'cmmqa.json'}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
