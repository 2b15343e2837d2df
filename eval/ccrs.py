"""CCRS (Muhamed, LLM4Eval@SIGIR 2025): five zero-shot LLM-judge metrics and their validity statistics.

Metrics (prompts ``prompts/ccrs_{cc,qr,id,ac,ir}.v1.md``, Appendix B verbatim; the judge prints 0-100, we
divide by 100):

* **CC** Contextual Coherence (response r vs retrieved context C), **QR** Question Relevance (r vs q),
  **ID** Information Density (r, C, q), **IR** Information Recall (r vs ground truth g, given C);
* **AC** Answer Correctness = λ·EM(r, g) + (1 − λ)·judge/100 with λ = 0.7 (``params lambda``). EM is the
  paper's strict exact match of the response with the ground truth, after SQuAD-style normalisation
  (case, punctuation, articles, whitespace); with long reference answers it is almost always 0, so AC
  rarely exceeds 0.3 — the paper reports the same ("AC never reached 1.0").

A judge reply is parsed as its first number after the scale itself is removed ("on a scale of 0 to 100",
"85/100", "out of 100"); a number outside 0-100 is clamped and counted; a reply with no number is a **parse
failure** and a judge error (timeout, unavailable) a **judge error**. A system that fails to answer (the
reader's LLM error, a server's non-200) is a **reader error**: nothing is judged. All three are counted per
system and metric and reported, and the item is left out of that metric's means and tests (never scored 0
silently). An empty response scores 0 on every metric without a judge call, as the prompts prescribe.

Judge: a model other than the reader, ``--judge-llm`` / ``COMETA_JUDGE_LLM__*`` (:mod:`eval.judging`); the
suite refuses (exit 2) to let the reader grade itself unless ``--allow-self-judge``, and marks such reports.
The report names both models.

Data: ``--data FILE.jsonl`` (``params data``) replaces the built-in items: one JSON object per line with
``question``, a reference answer (``reference_answer``, ``reference``, ``ground_truth``, ``long_answer`` or
``ideal_answer``), optional ``id``, ``options``/``answer`` (kept for the record) and ``documents`` (strings or
``{"text", "title", "pmid", "year"}``): an item with documents is answered from them, without retrieval.

Items: the CMMQA PubMedQA questions (69), whose gold long answers (the abstract's conclusion,
``eval/data/ccrs_pubmedqa_gold.jsonl``, from PubMedQA PQA-L) serve as g — MIRAGE items carry only an option
letter. ``subsets``: ``standard`` (default) and/or ``narrative`` (the committed narrative fixture's
PubMedQA items). The CCRS paper used BioASQ ideal answers, which we may not ship.

Systems (``params systems``; default all that can run): ``extractive`` — the ``/ask`` pipeline with no
LLM (quoted evidence sentences); ``llm_rag`` — the ``/ask`` pipeline with the LLM (Answerer, free text);
``llm_no_retrieval`` — the LLM on the CCRS reader prompt (Figure 1) with an empty context; with
``--server`` a ``server`` system posts to ``/ask`` instead of the in-process RAG systems. ``--llm`` writes
the LLM answers; without a reader only ``extractive`` (or ``server``) runs.

Other params: ``judge_output`` — ``text`` (the paper: free text, first number) or ``json`` (``{"score": n}``
through the LLM layer's JSON mode, grammar-constrained on llama.cpp; the default for an embedded judge,
which otherwise prints no number); ``max_answer_tokens``, ``max_context_chars`` (the reader's evidence)
and ``judge_context_chars`` override ``COMETA_EVALUATION__CCRS_*`` (paper defaults: 2,048 tokens, ~24,000
characters = 20 chunks of 300 tokens; the embedded model's 2,048-token window needs ~4,000); ``lambda``;
``hypotheses`` (``["A>B@QR,IR", "C!=D"]``: one-sided or two-sided, Holm-corrected together).

Statistics (``eval.stats``): per-metric means, histograms, floor/ceiling shares and tie probabilities per
system; Pearson/Spearman/Kendall between metrics per system, averaged over systems with Fisher's z;
randomised Tukey HSD (``params B``, default 10,000 as in the paper) over the items every system has a score
for, discriminative power = share of system pairs significant at α (``params alpha``, 0.05), ASL curves and
box plots (:mod:`eval.compare`; ``cometa eval compare`` merges several runs into one such report).

    cometa eval ccrs --llm openai --judge-llm openai:JUDGE@URL [--data my.jsonl] [--limit 5]
                     [--subsets standard,narrative] [--param B=2000]
"""

from __future__ import annotations

import json
import random
import re
import string
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from eval.compare import METRICS, aggregate, ccrs_tables, json_safe
from llm import LLMClient, LLMError, LLMOutputInvalid
from prompts import load_prompt

from ._runner import (
    EvalInputError,
    ItemLog,
    RunOptions,
    StageTimes,
    SuiteResult,
    build_offline_services,
    eval_settings,
    progress,
)
from ._settings import EvalSettings

__all__ = [
    "GOLD_FILE",
    "METRICS",
    "CcrsItem",
    "JudgeScore",
    "SystemAnswer",
    "aggregate",
    "exact_match",
    "judge_answer",
    "load_ccrs_items",
    "load_data_items",
    "parse_score",
    "reader_answer",
    "run_ccrs",
    "score_items",
]

LAMBDA = 0.7
GOLD_FILE = Path(__file__).resolve().parent / "data" / "ccrs_pubmedqa_gold.jsonl"
DEFAULT_SYSTEMS = ("extractive", "llm_no_retrieval", "llm_rag")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
# The scale itself, never a score: "on a scale of 0 to 100", "(0-100)", "between 0 and 100", "from 1 to 10",
# and the denominator of "85/100" or "85 out of 100".
_SCALE = re.compile(
    r"(?:\b(?:from|between)\s+)?\b[01](?:\.0+)?\s*(?:-|–|—|to|and)\s*(?:10|100)(?:\.0+)?\b"
    r"|(?:/|\bout\s+of)\s*(?:10|100)(?:\.0+)?\b",
    re.IGNORECASE,
)
_ANSWER_TAG = re.compile(r"<answer>(.*?)(?:</answer>|$)", re.DOTALL | re.IGNORECASE)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


@dataclass(frozen=True)
class CcrsItem:
    key: str  # "<subset>:pubmedqa:<pmid>", or "data:<id>" for a --data file
    question: str
    ground_truth: str
    # A --data item's own evidence: the systems that read documents read these instead of retrieving.
    documents: tuple[Mapping[str, Any], ...] = ()
    options: Mapping[str, str] | None = None  # kept for the record; CCRS grades free-text answers
    answer: str | None = None


@dataclass(frozen=True)
class SystemAnswer:
    text: str
    context: str  # the retrieved context the response was written from ("" without retrieval)
    mode: str = "llm"
    tokens: int = 0


AnswerFn = Callable[[CcrsItem], Awaitable[SystemAnswer]]


class _ScoreOut(BaseModel):
    # An integer, as the prompts ask: a grammar for "number" lets a small model write "0.000000..." until
    # it runs out of tokens. Unbounded on purpose: out-of-range values are clamped and counted.
    score: int


@dataclass(frozen=True)
class JudgeScore:
    value: float | None  # in [0, 1]; None = no usable judgement
    raw: str  # the judge's reply (truncated), for audit
    status: str  # "ok" | "clamped" | "parse_failure" | "judge_error" | "empty_response"


# --- parsing and scoring ------------------------------------------------------------------------------


def parse_score(text: str, lo: float = 0.0, hi: float = 100.0) -> tuple[float | None, bool]:
    """(first number in the reply clamped to [lo, hi], whether it was clamped); (None, False) if none.

    The scale is not a score: "On a scale of 0 to 100, I rate it 85" is 85, "85/100" is 85, and "On a
    scale of 0 to 100 ..." with no other number is a parse failure, never 0.
    """
    match = _NUMBER.search(_SCALE.sub(" ", text))
    if match is None:
        return None, False
    value = float(match.group(0))
    clamped = min(max(value, lo), hi)
    return clamped, clamped != value


def _normalise(text: str) -> str:
    text = text.lower()
    text = "".join(ch for ch in text if ch not in string.punctuation)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(response: str, ground_truth: str) -> float:
    """CCRS EM(r, g): 1.0 when the normalised texts are equal, else 0.0."""
    return 1.0 if _normalise(response) and _normalise(response) == _normalise(ground_truth) else 0.0


_PROMPTS = {m: f"ccrs_{m.lower()}" for m in METRICS}


async def judge_answer(
    llm: LLMClient,
    metric: str,
    *,
    question: str,
    response: str,
    context: str,
    ground_truth: str,
    max_context_chars: int = 4000,
    stages: StageTimes | None = None,
    structured: bool = False,
) -> JudgeScore:
    """One CCRS judgement in [0, 1] (the LLM part only, for AC).

    ``structured``: ask for ``{"score": n}`` through the LLM layer's JSON mode (a grammar on llama.cpp)
    instead of free text, for models that do not follow "only print the score"; the prompt is unchanged.
    """
    if not response.strip():
        return JudgeScore(0.0, "", "empty_response")
    prompt = load_prompt(_PROMPTS[metric])
    values = {
        "question": question,
        "response": response,
        # Small models have small windows: the context is cut, never the response or the reference.
        "context": context[:max_context_chars] if context else "(no context was retrieved)",
        "ground_truth": ground_truth,
    }
    messages = prompt.render(**{k: v for k, v in values.items() if k in prompt.variables})
    t0 = time.perf_counter()
    try:
        if structured:
            scored = await llm.complete_json(
                messages, _ScoreOut, prompt_version=prompt.id, max_tokens=24, temperature=0.0
            )
            text, tokens = str(scored.value.score), scored.prompt_tokens + scored.completion_tokens
        else:
            result = await llm.complete_text(
                messages, prompt_version=prompt.id, max_tokens=8, temperature=0.0
            )
            text, tokens = result.value, result.prompt_tokens + result.completion_tokens
    except LLMOutputInvalid as exc:
        return JudgeScore(None, (exc.raw_text or "")[:80], "parse_failure")
    except LLMError as exc:
        return JudgeScore(None, type(exc).__name__, "judge_error")
    if stages is not None:
        stages.add("judge", (time.perf_counter() - t0) * 1000, tokens)
    value, clamped = parse_score(text)
    raw = text.strip()[:80]
    if value is None:
        return JudgeScore(None, raw, "parse_failure")
    return JudgeScore(value / 100.0, raw, "clamped" if clamped else "ok")


async def _score_one(
    llm: LLMClient,
    item: CcrsItem,
    answer: SystemAnswer,
    *,
    lam: float,
    max_context_chars: int,
    stages: StageTimes | None,
    structured: bool = False,
) -> dict[str, Any]:
    scores: dict[str, float | None] = {}
    status: dict[str, str] = {}
    raw: dict[str, str] = {}
    for metric in METRICS:
        js = await judge_answer(
            llm,
            metric,
            question=item.question,
            response=answer.text,
            context=answer.context,
            ground_truth=item.ground_truth,
            max_context_chars=max_context_chars,
            stages=stages,
            structured=structured,
        )
        status[metric], raw[metric] = js.status, js.raw
        value = js.value
        if metric == "AC" and value is not None:
            value = lam * exact_match(answer.text, item.ground_truth) + (1 - lam) * value
        scores[metric] = value
    return {"scores": scores, "status": status, "raw": raw, "em": exact_match(answer.text, item.ground_truth)}


def _reader_error() -> dict[str, Any]:
    return {
        "scores": dict.fromkeys(METRICS),
        "status": dict.fromkeys(METRICS, "reader_error"),
        "raw": dict.fromkeys(METRICS, ""),
        "em": None,
    }


async def score_items(
    items: Sequence[CcrsItem],
    systems: Mapping[str, AnswerFn],
    judge: LLMClient,
    log: ItemLog,
    *,
    lam: float = LAMBDA,
    max_context_chars: int = 4000,
    stages: StageTimes | None = None,
    structured: bool = False,
) -> list[dict[str, Any]]:
    """Answer every item with every system, judge each answer on the five metrics; one log line per item.

    Items already in ``log`` (an earlier, interrupted run) are reused, not re-judged.
    """
    done = log.done()
    records: list[dict[str, Any]] = []
    with progress(len(items), "ccrs") as advance:
        for item in items:
            if item.key in done:
                records.append(done[item.key])
                advance(1)
                continue
            record: dict[str, Any] = {"key": item.key, "systems": {}}
            for name, answer_fn in systems.items():
                t0 = time.perf_counter()
                try:
                    answer = await answer_fn(item)
                except LLMError as exc:
                    # The reader failed: no response to grade. Not an empty answer scored 0 — a reader
                    # error, counted on its own and left out of every mean (see the module docstring).
                    answer = SystemAnswer("", "", mode=f"error:{type(exc).__name__}")
                ms = (time.perf_counter() - t0) * 1000
                if stages is not None:
                    stages.add(f"answer:{name}", ms, answer.tokens)
                if answer.mode.startswith("error"):
                    judged = _reader_error()
                else:
                    judged = await _score_one(
                        judge,
                        item,
                        answer,
                        lam=lam,
                        max_context_chars=max_context_chars,
                        stages=stages,
                        structured=structured,
                    )
                record["systems"][name] = {
                    "response": answer.text,
                    "mode": answer.mode,
                    "context_chars": len(answer.context),
                    "answer_ms": round(ms, 1),
                    **judged,
                }
            log.append(record)
            records.append(record)
            advance(1)
    return records


# --- items and systems --------------------------------------------------------------------------------


def _gold() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for line in GOLD_FILE.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line) if line.strip() else {}
        if isinstance(rec.get("key"), str):
            out[rec["key"]] = rec
    return out


def load_ccrs_items(
    subsets: Sequence[str] = ("standard",), *, limit: int | None = None, seed: int = 0
) -> list[CcrsItem]:
    """CMMQA PubMedQA questions (standard and/or narrative) with their gold long answers."""
    from eval.cmmqa import load_cmmqa

    gold = _gold()
    items: list[CcrsItem] = []
    for subset in subsets:
        if subset not in ("standard", "narrative"):
            raise EvalInputError(f"unknown ccrs subset {subset!r} (standard, narrative)")
        variant: Literal["standard", "narrative"] = "narrative" if subset == "narrative" else "standard"
        chosen = [it for it in load_cmmqa(variant, datasets=["pubmedqa"]) if it.key in gold]
        if limit is not None:
            picked = set(
                random.Random(f"{seed}:{subset}").sample(range(len(chosen)), min(limit, len(chosen)))
            )
            chosen = [it for i, it in enumerate(chosen) if i in picked]
        items += [CcrsItem(f"{subset}:{it.key}", it.question, gold[it.key]["long_answer"]) for it in chosen]
    return items


def reader_answer(text: str) -> str:
    """The ``<answer>`` span of a reader reply; the whole reply when the tag is missing or empty."""
    match = _ANSWER_TAG.search(text)
    inner = match.group(1).strip() if match else ""
    return inner or _ANSWER_TAG.sub("", text).replace("</answer>", "").strip()


def load_data_items(path: Path, *, limit: int | None = None, seed: int = 0) -> list[CcrsItem]:
    """A user's CCRS set: JSONL, one object per line (see the module docstring for the fields)."""
    from pydantic import ValidationError

    from app import UserDocument
    from eval import select_items

    if not path.is_file():
        raise EvalInputError(f"--data: no such file: {path}")
    items: list[CcrsItem] = []
    seen: set[str] = set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise EvalInputError(f"{path.name} line {n}: not JSON ({exc.msg})") from exc
        if not isinstance(obj, dict):
            raise EvalInputError(f"{path.name} line {n}: expected a JSON object")
        question = obj.get("question")
        reference = next((obj[k] for k in _REFERENCE_KEYS if isinstance(obj.get(k), str)), None)
        if not isinstance(question, str) or not question.strip() or not reference or not reference.strip():
            raise EvalInputError(
                f"{path.name} line {n}: needs 'question' and a reference answer "
                f"({', '.join(_REFERENCE_KEYS)})"
            )
        key = f"data:{obj.get('id', n)}"
        if key in seen:
            raise EvalInputError(f"{path.name} line {n}: duplicate id {obj.get('id')!r}")
        seen.add(key)
        docs = obj.get("documents") or []
        if not isinstance(docs, list):
            raise EvalInputError(f"{path.name} line {n}: 'documents' must be a list")
        documents = tuple({"text": d} if isinstance(d, str) else d for d in docs if isinstance(d, str | dict))
        if any(not isinstance(d.get("text"), str) or not d["text"].strip() for d in documents):
            raise EvalInputError(f"{path.name} line {n}: every document needs a non-empty 'text'")
        for d in documents:
            try:  # the /ask document schema: text, optional title, pmid (digits), year
                UserDocument.model_validate(d)
            except ValidationError as exc:
                err = exc.errors()[0]
                where = ".".join(str(x) for x in err.get("loc", ()))
                raise EvalInputError(f"{path.name} line {n}: document {where}: {err.get('msg')}") from exc
        options = obj.get("options")
        if options is not None and not (
            isinstance(options, dict) and all(isinstance(v, str) for v in options.values())
        ):
            raise EvalInputError(f"{path.name} line {n}: 'options' must map letters to strings")
        answer = obj.get("answer")
        items.append(
            CcrsItem(
                key,
                question.strip(),
                reference.strip(),
                documents,
                options,
                answer if isinstance(answer, str) else None,
            )
        )
    if not items:
        raise EvalInputError(f"{path.name}: no items")
    return select_items(items, limit, seed)


_REFERENCE_KEYS = ("reference_answer", "reference", "ground_truth", "long_answer", "ideal_answer")


def _build_systems(
    names: Sequence[str],
    pipeline: Any,
    llm: LLMClient | None,
    *,
    max_tokens: int,
    max_context_chars: int = 12_000,
    http: Any | None = None,
) -> dict[str, AnswerFn]:
    from app import Answerer, AnswerSettings, UserDocument, build_evidence_context, user_evidence

    settings = AnswerSettings(max_tokens=max_tokens, max_context_chars=max_context_chars)
    extractive = Answerer(None, settings)
    rag = Answerer(llm, settings) if llm is not None else None
    reader = load_prompt("ccrs_reader")
    systems: dict[str, AnswerFn] = {}

    # extractive and llm_rag read the same evidence for a question: retrieve it once, so both systems are
    # judged on identical evidence and the slow stages are not paid twice. An item with its own
    # documents (--data) is read from those, without retrieval.
    last: dict[str, tuple[Any, Any, str]] = {}

    async def evidence(item: CcrsItem) -> tuple[Any, Any, str]:
        if item.key in last:
            return last[item.key]
        if item.documents:
            docs = user_evidence([UserDocument.model_validate(dict(d)) for d in item.documents])
            passages = None
        else:
            if pipeline is None or getattr(pipeline, "documents_only", False):
                raise EvalInputError(f"{item.key}: no documents and no retrieval pipeline")
            outcome = await pipeline.search(item.question)
            docs, passages = outcome.evidence.docs, outcome.context
        ctx = build_evidence_context(
            docs, passages, max_passages=settings.max_passages, max_chars=settings.max_context_chars
        )
        last.clear()
        last[item.key] = (docs, passages, ctx.text)
        return last[item.key]

    async def run_extractive(item: CcrsItem) -> SystemAnswer:
        docs, passages, ctx = await evidence(item)
        ans = await extractive.answer(item.question, docs, passages)
        return SystemAnswer(ans.text if ans.mode != "insufficient_evidence" else "", ctx, ans.mode)

    async def run_rag(item: CcrsItem) -> SystemAnswer:
        assert rag is not None
        docs, passages, ctx = await evidence(item)
        ans = await rag.answer(item.question, docs, passages)
        return SystemAnswer(ans.text, ctx, ans.mode, ans.prompt_tokens + ans.completion_tokens)

    async def run_no_retrieval(item: CcrsItem) -> SystemAnswer:
        assert llm is not None
        result = await llm.complete_text(
            reader.render(context="", question=item.question),
            prompt_version=reader.id,
            max_tokens=max_tokens,
            temperature=0.0,
        )
        return SystemAnswer(
            reader_answer(result.value), "", "llm", result.prompt_tokens + result.completion_tokens
        )

    async def run_server(item: CcrsItem) -> SystemAnswer:
        assert http is not None
        body_in: dict[str, Any] = {"question": item.question}
        if item.documents:
            body_in["documents"] = [dict(d) for d in item.documents]
        resp = await http.post("/ask", json=body_in)
        if resp.status_code != 200:
            return SystemAnswer("", "", f"error:http {resp.status_code}")
        body = resp.json()
        ctx = "\n\n".join(str(p.get("text", "")) for p in body.get("passages") or [])
        tokens = sum(v or 0 for v in (body.get("tokens") or {}).values())
        return SystemAnswer(body.get("answer", ""), ctx, str(body.get("mode", "")), int(tokens))

    can_read = pipeline is not None
    table: dict[str, tuple[AnswerFn, bool]] = {
        "extractive": (run_extractive, can_read),
        "llm_rag": (run_rag, can_read and rag is not None),
        "llm_no_retrieval": (run_no_retrieval, llm is not None),
        "server": (run_server, http is not None),
    }
    for name in names:
        if name not in table:
            raise EvalInputError(f"unknown ccrs system {name!r} ({', '.join(table)})")
        fn, available = table[name]
        if not available:
            raise EvalInputError(
                f"ccrs system {name!r} cannot run here (needs an LLM, a pipeline or --server)"
            )
        systems[name] = fn
    return systems


def _param_list(value: Any, default: Sequence[str]) -> list[str]:
    if value is None:
        return list(default)
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [str(v) for v in value]


class _DocumentsOnly:
    """Stands in for the pipeline when every --data item brings its documents: nothing to retrieve."""

    documents_only = True

    async def aclose(self) -> None:
        return None


async def run_ccrs(opts: RunOptions) -> SuiteResult:
    """Answer the CCRS items with each configured system, judge them, and report the validity statistics."""
    from eval.judging import build_judge_llm, judge_notes, resolve_judge
    from llm import build_llm

    settings = eval_settings(opts)
    choice = resolve_judge(opts, "ccrs", reader_in_process=not opts.server_url)
    budgets = EvalSettings().evaluation
    params = dict(opts.params)
    B = int(params.get("B", budgets.ccrs_tukey_b))
    alpha = float(params.get("alpha", 0.05))
    lam = float(params.get("lambda", LAMBDA))
    max_tokens = int(params.get("max_answer_tokens", budgets.ccrs_max_answer_tokens))
    max_ctx = int(params.get("max_context_chars", budgets.ccrs_context_chars))
    judge_ctx = int(params.get("judge_context_chars", budgets.ccrs_judge_context_chars))
    # An embedded model's window is small (2,048 tokens by default): unless a budget was set explicitly,
    # fit the context in it (~3 characters per token, ~768 tokens left for the prompt and the answer).
    window: list[str] = []
    for role, llm_settings, key, field_name in (
        ("reader", settings.llm, "max_context_chars", "ccrs_context_chars"),
        ("judge", choice.settings, "judge_context_chars", "ccrs_judge_context_chars"),
    ):
        explicit = key in params or field_name in budgets.model_fields_set
        if llm_settings.backend == "embedded" and not explicit:
            fit = max(1000, (llm_settings.embedded_n_ctx - 768) * 3)
            if role == "reader" and fit < max_ctx:
                max_ctx = fit
                window.append(f"reader {fit}")
            elif role == "judge" and fit < judge_ctx:
                judge_ctx = fit
                window.append(f"judge {fit}")
    hypotheses = _param_list(params.get("hypotheses"), ())
    # The embedded base model never obeys "only print the score": constrain it to {"score": n} by default.
    judge_output = str(
        params.get("judge_output", "json" if choice.settings.backend == "embedded" else "text")
    )
    if judge_output not in ("text", "json"):
        raise EvalInputError(f"judge_output must be text or json, got {judge_output!r}")
    structured = judge_output == "json"
    data = params.get("data")
    if data is not None:
        items = load_data_items(Path(str(data)), limit=opts.limit, seed=opts.seed)
    else:
        items = load_ccrs_items(opts.subsets or ("standard",), limit=opts.limit, seed=opts.seed)
    has_reader = settings.llm.backend != "none"
    if opts.server_url:
        default_systems: tuple[str, ...] = ("server", "llm_no_retrieval") if has_reader else ("server",)
    else:
        default_systems = DEFAULT_SYSTEMS if has_reader else ("extractive",)
    names = _param_list(params.get("systems") or opts.system.get("systems"), default_systems)
    stages = StageTimes()
    needs_retrieval = not opts.server_url and any(not it.documents for it in items)
    llm: LLMClient | None
    pipeline: Any
    if needs_retrieval:
        pipeline, _answerer, llm = await build_offline_services(opts)
    else:
        pipeline, llm = _DocumentsOnly(), build_llm(settings.llm)
    http = None
    judge: LLMClient | None = None
    try:
        judge = build_judge_llm(choice, llm)
        if opts.server_url:
            import httpx

            http = httpx.AsyncClient(
                base_url=opts.server_url.rstrip("/"), timeout=httpx.Timeout(300.0, connect=10.0)
            )
        systems = _build_systems(
            names, pipeline, llm, max_tokens=max_tokens, max_context_chars=max_ctx, http=http
        )
        log = ItemLog(opts.out_dir / "items.jsonl", resume=opts.resume)
        records = await score_items(
            items,
            systems,
            judge,
            log,
            lam=lam,
            max_context_chars=judge_ctx,
            stages=stages,
            structured=structured,
        )
        reader_name = llm.model_name if llm is not None else None
        judge_name = judge.model_name
    finally:
        if http is not None:
            await http.aclose()
        if judge is not None and judge is not llm:
            await judge.aclose()
        await pipeline.aclose()
        if not needs_retrieval and llm is not None:
            await llm.aclose()
    try:
        agg = aggregate(records, list(systems), B=B, seed=opts.seed, alpha=alpha, hypotheses=hypotheses)
    except ValueError as exc:  # a malformed hypothesis
        raise EvalInputError(str(exc)) from exc
    tables, plots = ccrs_tables(agg, list(systems), alpha, records)
    failures = sum(
        c["parse_failures"] + c["judge_errors"] for s in agg["systems"].values() for c in s.values()
    )
    reader_errors = sum(c["reader_errors"] for s in agg["systems"].values() for c in s.values())
    source = (
        f"--data {Path(str(data)).name}: the file's reference answers"
        if data is not None
        else "PubMedQA long answers (the abstract's conclusion)"
    )
    notes = [
        *judge_notes(choice, reader_name, judge_name),
        f"{len(items)} items ({'data file' if data is not None else ', '.join(opts.subsets or ('standard',))}"
        f"), systems: {', '.join(systems)}. Gold answers: {source}.",
        f"{failures} judgements were unusable (parse failures + judge errors) and {reader_errors} answers "
        "were reader errors (the system failed to answer): both are counted in the failures table and "
        "excluded from that metric's means and tests, never scored 0. An empty answer scores 0.",
        f"AC = {lam}·EM + {1 - lam:.1f}·judge; EM (normalised exact match with the reference) was 1 for "
        f"{sum(1 for r in records for s in r['systems'].values() if s['em'] == 1.0)} responses.",
        "Judge output: "
        + (
            "JSON {score}, grammar-constrained where the backend supports it."
            if structured
            else "free text, first number parsed (the scale, e.g. '0 to 100', is never a score), as in "
            "the paper."
        ),
        f"Context: the reader gets up to {max_ctx} characters of evidence, the judge sees up to {judge_ctx} "
        f"(COMETA_EVALUATION__CCRS_*; paper: top-20 chunks of 300 tokens for both); answers up to "
        f"{max_tokens} tokens.",
        f"Tukey HSD is randomised with B={B} (paper: 10,000) over the items every system has a score for.",
    ]
    if window:
        notes.append(
            f"Context cut to the embedded model's window ({', '.join(window)} characters): not the paper's "
            "budget."
        )
    if data is None:
        notes.append(
            "The bundled corpus contains each PubMedQA abstract including its conclusion, i.e. the gold "
            "answer: the retrieval systems can find the reference text itself, unlike on live PubMed."
        )
    if "embedded" in (settings.llm.backend, choice.settings.backend):
        notes.append(
            "SMOKE TEST: the embedded Gemma-3-270M is a base model; it exercises the real path (prompts, "
            "parsing, statistics) but its answers and scores say little about answer quality."
        )
    metrics = json_safe(
        {
            "n_items": len(items),
            "system_names": list(systems),
            "lambda": lam,
            "alpha": alpha,
            "B": B,
            "context_chars": {"reader": max_ctx, "judge": judge_ctx},
            **choice.metrics(),
            "per_system": agg["systems"],
            "correlations": agg["correlations"],
            "tukey": agg["tukey"],
            "hypotheses": agg["hypotheses"],
            "modes": agg["modes"],
        }
    )
    return SuiteResult("ccrs", metrics, tables, plots, notes, stages)
