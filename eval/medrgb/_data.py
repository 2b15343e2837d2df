"""MedRGB's data: documents and context composition, the cached artefacts, the params, the questions."""

from __future__ import annotations

import json
import math
import os
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from eval import EvalInputError, RunOptions
from eval.mirage import MCQItem

SCENARIOS = ("standard", "no_retrieval", "sufficiency", "integration", "robustness")
DEFAULT_SUBSETS = ("bioasq", "pubmedqa", "medqa", "mmlu")
DEFAULT_RHOS = (0, 20, 40, 60, 80, 100)
INSUFFICIENT_OPTION = "Insufficient information"
ARTIFACTS_FILE = "medrgb_artifacts.json"
ARTIFACTS_VERSION = 1

Role = Literal["signal", "noise", "counterfactual"]

# --- documents and context composition ----------------------------------------------------------------


@dataclass(frozen=True)
class RGBDoc:
    """A document in a MedRGB context. ``doc_id`` is the PMID, or ``cf-<pmid>`` for a counterfactual."""

    doc_id: str
    text: str
    role: Role = "signal"
    pmid: str | None = None
    source_key: str = ""  # the item whose retrieval produced it (noise comes from other items)

    def to_json(self) -> dict[str, Any]:
        return {"doc_id": self.doc_id, "pmid": self.pmid, "text": self.text, "source_key": self.source_key}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RGBDoc:
        return cls(
            doc_id=str(data["doc_id"]),
            text=str(data["text"]),
            pmid=data.get("pmid"),
            source_key=str(data.get("source_key", "")),
        )


def mix_counts(k: int, rho: int) -> tuple[int, int]:
    """(signal, other) documents for ``k`` documents at signal share ``rho`` %, rounding half up."""
    if k < 1 or not 0 <= rho <= 100:
        raise ValueError("k must be >= 1 and rho within 0..100")
    signal = math.floor(k * rho / 100 + 0.5)
    return signal, k - signal


def compose_noisy(
    signal: Sequence[RGBDoc], noise_pool: Sequence[RGBDoc], *, k: int, rho: int, rng: random.Random
) -> list[RGBDoc]:
    """MedRGB context composition: ``rho`` % of ``k`` sampled from ``signal``, the rest from ``noise_pool``
    (documents sharing a PMID with the signal set are never noise), shuffled. Short pools give fewer
    documents rather than duplicates; the caller compares the roles with :func:`mix_counts`."""
    want_signal, want_noise = mix_counts(k, rho)
    own = {d.pmid or d.doc_id for d in signal}
    pool = [d for d in noise_pool if (d.pmid or d.doc_id) not in own]
    pool = list({d.doc_id: d for d in pool}.values())  # one copy of a document retrieved twice
    picked = [replace(d, role="signal") for d in rng.sample(list(signal), min(want_signal, len(signal)))]
    picked += [replace(d, role="noise") for d in rng.sample(pool, min(want_noise, len(pool)))]
    rng.shuffle(picked)
    return picked


def compose_robustness(
    signal: Sequence[RGBDoc],
    counterfactuals: Mapping[str, RGBDoc],
    *,
    k: int,
    rho: int,
    rng: random.Random,
) -> list[RGBDoc]:
    """``rho`` % of ``k`` factually correct signal documents, the rest replaced by their counterfactual
    (keyed by the original ``doc_id``); each source document appears once, original or altered."""
    want_true, want_cf = mix_counts(k, rho)
    can_alter = [d for d in signal if d.doc_id in counterfactuals]
    altered = rng.sample(can_alter, min(want_cf, len(can_alter)))
    altered_ids = {d.doc_id for d in altered}
    rest = [d for d in signal if d.doc_id not in altered_ids]
    kept = rng.sample(rest, min(want_true, len(rest)))
    picked = [replace(d, role="signal") for d in kept]
    picked += [replace(counterfactuals[d.doc_id], role="counterfactual") for d in altered]
    rng.shuffle(picked)
    return picked


def with_insufficient_option(options: Mapping[str, str]) -> tuple[dict[str, str], str]:
    """The options plus "Insufficient information" under the next free letter, and that letter."""
    letters = [k for k in options if len(k) == 1 and k.isalpha()]
    letter = chr(max(ord(k.upper()) for k in letters) + 1) if letters else "A"
    if letter > "Z":
        raise EvalInputError("no free option letter for 'Insufficient information'")
    return {**options, letter: INSUFFICIENT_OPTION}, letter


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut) + " ..."


def _render_docs(docs: Sequence[RGBDoc]) -> str:
    # Numbered, text only: the bundled corpus titles PubMedQA records with the question itself, so a title
    # would give the relevant documents away.
    return "\n\n".join(f"Document [{i}]\n{d.text}" for i, d in enumerate(docs, start=1))


def _render_options(options: Mapping[str, str]) -> str:
    return "\n".join(f"{k}. {v}" for k, v in options.items())


def _render_subqs(subqs: Sequence[SubQA]) -> str:
    return "\n".join(f"{i}. {s.question}" for i, s in enumerate(subqs, start=1))


@dataclass(frozen=True)
class SubQA:
    doc_id: str
    question: str
    answer: str
    extractive: bool  # the answer occurs in the document (the paper asks for an extracted string)


# --- artefacts ----------------------------------------------------------------------------------------


class _Artifacts:
    """Evidence sets, sub-QA pairs and counterfactuals, persisted after every change (atomic rename)."""

    def __init__(self, path: Path, seed_from: Path | None = None) -> None:
        self.path = path
        self.evidence: dict[str, list[RGBDoc]] = {}
        self.subqa: dict[str, dict[str, dict[str, Any] | None]] = {}
        self.counterfactual: dict[str, dict[str, dict[str, Any] | None]] = {}
        self.generator: dict[str, str] = {}
        # item key -> doc id -> the judge's relevance verdict (None: the check failed; not signal)
        self.relevance: dict[str, dict[str, bool | None]] = {}
        source = path if path.exists() else seed_from
        if source is not None:
            self._read(source)

    def _read(self, source: Path) -> None:
        try:
            data = json.loads(source.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise EvalInputError(f"cannot read MedRGB artefacts {source}: {exc}") from exc
        if data.get("version") != ARTIFACTS_VERSION:
            raise EvalInputError(f"{source}: unsupported artefacts version {data.get('version')!r}")
        self.evidence = {k: [RGBDoc.from_json(d) for d in v] for k, v in data.get("evidence", {}).items()}
        self.subqa = data.get("subqa", {})
        self.counterfactual = data.get("counterfactual", {})
        self.generator = data.get("generator", {})
        self.relevance = data.get("relevance", {})

    def save(self) -> None:
        payload = {
            "version": ARTIFACTS_VERSION,
            "generator": self.generator,
            "evidence": {k: [d.to_json() for d in v] for k, v in self.evidence.items()},
            "subqa": self.subqa,
            "counterfactual": self.counterfactual,
            "relevance": self.relevance,
        }
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, self.path)

    def subqas(self, key: str) -> dict[str, SubQA]:
        out: dict[str, SubQA] = {}
        for doc_id, v in self.subqa.get(key, {}).items():
            if v is not None:
                out[doc_id] = SubQA(doc_id, v["sub_question"], v["sub_answer"], bool(v.get("extractive")))
        return out

    def counterfactuals(self, key: str) -> dict[str, RGBDoc]:
        out: dict[str, RGBDoc] = {}
        for doc_id, v in self.counterfactual.get(key, {}).items():
            if v is not None:
                out[doc_id] = RGBDoc(f"cf-{doc_id}", v["new_document"], "counterfactual", None, key)
        return out


# --- parameters ---------------------------------------------------------------------------------------


def _int_list(value: Any, name: str) -> tuple[int, ...]:
    raw = value if isinstance(value, list | tuple) else str(value).split(",")
    try:
        out = tuple(int(str(v).strip()) for v in raw if str(v).strip())
    except ValueError:
        raise EvalInputError(f"param {name}: integers expected, got {value!r}") from None
    if not out or any(not 0 <= v <= 100 for v in out):
        raise EvalInputError(f"param {name}: values within 0..100 expected, got {value!r}")
    return tuple(sorted(set(out)))


def _int(value: Any, name: str, lo: int, hi: int) -> int:
    try:
        out = int(value)
    except (TypeError, ValueError):
        raise EvalInputError(f"param {name}: an integer expected, got {value!r}") from None
    if not lo <= out <= hi:
        raise EvalInputError(f"param {name}: {lo}..{hi} expected, got {out}")
    return out


def _bool(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise EvalInputError(f"param {name}: true/false expected, got {value!r}")


@dataclass(frozen=True)
class _Params:
    scenarios: tuple[str, ...]
    k: int
    rhos: tuple[int, ...]
    doc_chars: int
    source: str
    mirage: Path | None
    product: bool
    judge: bool
    concurrency: int
    artifacts: Path | None
    rewriter: str = "pipeline"
    max_tokens: int | None = None  # the readers' output budget (Standard-RAG and the scenario prompts)
    relevance: bool = True  # the judge checks every retrieved document before it counts as signal

    @classmethod
    def parse(cls, params: Mapping[str, Any]) -> _Params:
        known = {
            "scenarios",
            "k",
            "rho",
            "doc_chars",
            "source",
            "mirage",
            "product",
            "judge",
            "concurrency",
            "artifacts",
            "rewriter",
            "max_tokens",
            "relevance",
        }
        unknown = sorted(set(params) - known)
        if unknown:
            raise EvalInputError(f"unknown medrgb param(s) {unknown}; known: {sorted(known)}")
        raw = params.get("scenarios", SCENARIOS)
        names = raw if isinstance(raw, list | tuple) else str(raw).split(",")
        scenarios = tuple(dict.fromkeys(str(s).strip() for s in names if str(s).strip()))
        bad = [s for s in scenarios if s not in SCENARIOS]
        if bad or not scenarios:
            raise EvalInputError(f"param scenarios: choose from {', '.join(SCENARIOS)}, got {raw!r}")
        source = str(params.get("source", "mirage"))
        if source not in ("mirage", "cmmqa", "cmmqa-narrative"):
            raise EvalInputError(f"param source: mirage, cmmqa or cmmqa-narrative, got {source!r}")
        rewriter = str(params.get("rewriter", "pipeline"))
        if rewriter not in ("pipeline", "deterministic"):
            raise EvalInputError(f"param rewriter: pipeline or deterministic, got {rewriter!r}")
        mirage = params.get("mirage")
        artifacts = params.get("artifacts")
        return cls(
            scenarios=scenarios,
            k=_int(params.get("k", 5), "k", 1, 50),
            rhos=_int_list(params.get("rho", DEFAULT_RHOS), "rho"),
            doc_chars=_int(params.get("doc_chars", 800), "doc_chars", 100, 20_000),
            source=source,
            mirage=Path(str(mirage)) if mirage else None,
            product=_bool(params.get("product", True), "product"),
            judge=_bool(params.get("judge", True), "judge"),
            concurrency=_int(params.get("concurrency", 1), "concurrency", 1, 64),
            artifacts=Path(str(artifacts)) if artifacts else None,
            rewriter=rewriter,
            relevance=_bool(params.get("relevance", True), "relevance"),
            max_tokens=_int(params["max_tokens"], "max_tokens", 16, 32_000)
            if "max_tokens" in params
            else None,
        )


def _frame_source(p: _Params) -> Path | None:
    """The benchmark file every dataset is drawn from: ``params mirage``, else MIRAGE's full
    ``benchmark.json`` when one is found; None = the repository copy (cancer subset + a pinned sample)."""
    if p.mirage is not None:
        return p.mirage
    from eval.mirage import find_benchmark

    return find_benchmark()


def draw_sample(opts: RunOptions, p: _Params) -> tuple[list[MCQItem], dict[str, Any]]:
    """The questions to run, drawn from one population read once, and the sampling frame that says per
    dataset what they were drawn from: file, population, sample size, seed, limit, how."""
    from eval.mirage import REPO_MIRAGE_DIR

    subsets = list(opts.subsets or DEFAULT_SUBSETS)
    if p.source == "mirage":
        from eval.mirage import load_mirage

        # One frame for every dataset: MIRAGE's full benchmark when it is found (BioASQ needs it anyway),
        # not three datasets from the cancer-enriched repository copy and BioASQ from the full file.
        bench = _frame_source(p)
        population = load_mirage(bench, datasets=subsets)
        if bench is not None:
            where = {ds: f"MIRAGE benchmark.json ({bench})" for ds in subsets}
        else:
            where = {
                ds: f"MIRAGE repository copy ({REPO_MIRAGE_DIR}): the whole CMMQA cancer subset plus a "
                "pinned sample of the rest, so cancer questions are over-represented"
                for ds in subsets
            }
    else:
        from eval.cmmqa import load_cmmqa

        variant: Literal["standard", "narrative"] = (
            "narrative" if p.source.endswith("narrative") else "standard"
        )
        population = load_cmmqa(variant, datasets=subsets, benchmark=p.mirage)
        where = {
            ds: f"CMMQA ({variant}): MIRAGE questions filtered by the MeSH neoplasm subtree" for ds in subsets
        }
    chosen: list[MCQItem] = []
    for subset in subsets:
        group = [it for it in population if it.dataset == subset]
        random.Random(f"{opts.seed}|{subset}").shuffle(group)
        chosen += group[: opts.limit] if opts.limit is not None else group
    if not chosen:
        raise EvalInputError(f"no questions for subsets {', '.join(subsets)} ({p.source})")
    frame = {
        ds: {
            "drawn_from": where[ds],
            "population": sum(1 for it in population if it.dataset == ds),
            "sampled": sum(1 for it in chosen if it.dataset == ds),
            "seed": opts.seed,
            "limit": opts.limit,
            "sampling": "uniform without replacement (seeded shuffle, first --limit)",
        }
        for ds in subsets
    }
    return chosen, frame
