"""MIRAGE (Xiong et al., 2024): 7,663 medical multiple-choice questions in five datasets.

``load_mirage()`` reads the copy shipped in ``eval/data/mirage/`` (see its ``MANIFEST.json``): every
redistributable question the evaluation suites use — the whole CMMQA cancer subset of MedQA, MedMCQA,
PubMedQA and MMLU plus a pinned, seeded sample of the rest — not the full 4.3 MB benchmark.

**BioASQ is never shipped**: its questions are under NLM's BioASQ data-use terms (see the shared data
README §1.4). BioASQ items, and the full benchmark, load from ``benchmark.json`` found through
:func:`find_benchmark` (``COMETA_MIRAGE_PATH``, ``$COMETA_SHARED_DIR/data/mirage/``, ``../shared`` next to
the repository) or a path given by the caller; without one, asking for BioASQ raises a clear
:class:`~eval._runner.EvalInputError`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._runner import EvalInputError
from .gold import shared_data_candidates

__all__ = [
    "DATASETS",
    "REDISTRIBUTABLE",
    "REPO_MIRAGE_DIR",
    "MCQItem",
    "find_benchmark",
    "load_mirage",
    "read_benchmark",
    "sha256_file",
    "write_repo_copy",
]

log = logging.getLogger("cometa.eval")

DATASETS: tuple[str, ...] = ("medqa", "medmcqa", "pubmedqa", "bioasq", "mmlu")
# MedQA, MedMCQA, PubMedQA: MIT (MIRAGE rawdata_licenses); MMLU: MIT upstream (hendrycks/test).
REDISTRIBUTABLE: tuple[str, ...] = ("medqa", "medmcqa", "pubmedqa", "mmlu")
REPO_MIRAGE_DIR = Path(__file__).resolve().parent / "data" / "mirage"
REPO_SUBSET_FILE = "mirage_subset.json"
MANIFEST_FILE = "MANIFEST.json"
BIOASQ_MISSING = (
    "BioASQ questions are not distributed with CoMeta (NLM BioASQ data-use terms). Point to MIRAGE's "
    "benchmark.json with --mirage PATH / COMETA_MIRAGE_PATH, or set COMETA_SHARED_DIR to a folder holding "
    "data/mirage/benchmark.json (https://github.com/Teddy-XiongGZ/MIRAGE)."
)


@dataclass(frozen=True)
class MCQItem:
    key: str  # "<dataset>:<id>", unique across MIRAGE
    dataset: str  # medqa | medmcqa | pubmedqa | bioasq | mmlu
    question: str
    options: dict[str, str]  # letter -> text
    answer: str  # gold letter
    narrative: str | None = None  # the clinical-narrative variant, when present
    pmids: tuple[str, ...] = ()  # gold PMIDs (pubmedqa, bioasq only)

    @property
    def item_id(self) -> str:
        return self.key.partition(":")[2]


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def find_benchmark() -> Path | None:
    """MIRAGE's full ``benchmark.json``, if one is reachable: env override, shared folder, ``../shared``."""
    candidates: list[Path] = []
    if env := os.environ.get("COMETA_MIRAGE_PATH"):
        candidates.append(Path(env))
    candidates += shared_data_candidates("mirage", "benchmark.json")
    for path in candidates:
        if path.is_file():
            return path
    return None


def read_benchmark(path: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """The raw ``{dataset: {id: record}}`` mapping of a MIRAGE-format file."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise EvalInputError(f"cannot read MIRAGE file {path}: {exc}") from exc
    if not isinstance(raw, dict):
        raise EvalInputError(f"{path}: not a MIRAGE benchmark (expected an object of datasets)")
    return raw


def _items(raw: Mapping[str, Mapping[str, Mapping[str, Any]]], datasets: Iterable[str]) -> list[MCQItem]:
    out: list[MCQItem] = []
    for name in datasets:
        for qid, rec in raw.get(name, {}).items():
            options = {str(k): str(v) for k, v in rec["options"].items()}
            answer = str(rec["answer"])
            if answer not in options:
                raise EvalInputError(f"{name}:{qid}: gold answer {answer!r} is not an option")
            out.append(
                MCQItem(
                    key=f"{name}:{qid}",
                    dataset=name,
                    question=str(rec["question"]),
                    options=options,
                    answer=answer,
                    pmids=tuple(str(p) for p in rec.get("PMID") or ()),
                )
            )
    return out


def _check_datasets(datasets: Sequence[str] | None) -> tuple[str, ...]:
    if datasets is None:
        return DATASETS
    unknown = [d for d in datasets if d not in DATASETS]
    if unknown:
        raise EvalInputError(f"unknown MIRAGE dataset(s) {unknown}; choose from {', '.join(DATASETS)}")
    return tuple(dict.fromkeys(datasets))


def load_mirage(path: Path | None = None, *, datasets: Sequence[str] | None = None) -> list[MCQItem]:
    """MIRAGE questions, in file order per dataset.

    ``path`` given: that MIRAGE-format file (e.g. the full ``benchmark.json``). Otherwise the repository
    copy serves MedQA, MedMCQA, PubMedQA and MMLU, and BioASQ comes from :func:`find_benchmark`.
    ``datasets=None`` means all five; BioASQ is then skipped with a warning when no benchmark is found,
    while asking for it by name raises :class:`EvalInputError`.
    """
    wanted = _check_datasets(datasets)
    if path is not None:
        return _items(read_benchmark(path), wanted)
    repo = read_benchmark(REPO_MIRAGE_DIR / REPO_SUBSET_FILE)
    items = _items(repo, [d for d in wanted if d in REDISTRIBUTABLE])
    if "bioasq" in wanted:
        bench = find_benchmark()
        if bench is None:
            if datasets is not None:
                raise EvalInputError(BIOASQ_MISSING)
            log.warning("MIRAGE: skipping bioasq. %s", BIOASQ_MISSING)
        else:
            items += _items(read_benchmark(bench), ["bioasq"])
    order = {d: i for i, d in enumerate(wanted)}
    return sorted(items, key=lambda it: order[it.dataset])  # stable: file order inside a dataset


def write_repo_copy(
    benchmark: Path, keep: Iterable[str], *, extra_per_dataset: int = 50, seed: int = 0
) -> dict[str, Any]:
    """Write ``eval/data/mirage/`` from the full benchmark: the ``keep`` keys plus a seeded sample.

    ``keep`` is the CMMQA key list; ``extra_per_dataset`` non-CMMQA questions per redistributable dataset
    are sampled with ``random.Random(seed)`` so MIRAGE-subset runs have non-cancer questions too. BioASQ
    keys in ``keep`` are ignored: its text never enters the repository. Returns the manifest written.
    """
    raw = read_benchmark(benchmark)
    keep_set = set(keep)
    subset: dict[str, dict[str, Any]] = {}
    counts: dict[str, dict[str, int]] = {}
    for name in REDISTRIBUTABLE:
        records = raw.get(name, {})
        cancer = [qid for qid in records if f"{name}:{qid}" in keep_set]
        rest = sorted(qid for qid in records if f"{name}:{qid}" not in keep_set)
        sampled = set(random.Random(f"{seed}:{name}").sample(rest, min(extra_per_dataset, len(rest))))
        chosen = set(cancer) | sampled
        subset[name] = {qid: rec for qid, rec in records.items() if qid in chosen}  # upstream order
        counts[name] = {"cmmqa": len(cancer), "sample": len(sampled), "total_upstream": len(records)}
    REPO_MIRAGE_DIR.mkdir(parents=True, exist_ok=True)
    out = REPO_MIRAGE_DIR / REPO_SUBSET_FILE
    out.write_text(json.dumps(subset, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    manifest = {
        "source": {
            "file": "MIRAGE benchmark.json",
            "repository": "https://github.com/Teddy-XiongGZ/MIRAGE",
            "commit": "392943af99cd94cafd50a0de2e7fca24bbf65494",
            "sha256": sha256_file(benchmark),
        },
        "file": REPO_SUBSET_FILE,
        "sha256": sha256_file(out),
        "selection": (
            "every CMMQA (cancer-filter) question of the redistributable datasets, plus "
            f"{extra_per_dataset} other questions per dataset sampled with random.Random('{seed}:<dataset>')"
            " from the ids in sorted order; records verbatim, upstream order"
        ),
        "datasets": counts,
        "excluded": {"bioasq": "NLM BioASQ data-use terms: load from the full benchmark.json instead"},
        "licences": {
            "MIRAGE": "NCBI public-domain notice (cite Xiong et al., Findings of ACL 2024)",
            "medqa": "MIT (c) 2022 Di Jin",
            "medmcqa": "MIT (c) 2022 MedMCQA",
            "pubmedqa": "MIT (c) 2019 pubmedqa",
            "mmlu": "MIT (c) 2020 Dan Hendrycks (hendrycks/test)",
        },
    }
    (REPO_MIRAGE_DIR / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest
