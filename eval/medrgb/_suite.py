"""The MedRGB suite: evidence and Standard-RAG, the scenario readers, cached generation, the run."""

from __future__ import annotations

import asyncio
import functools
import json
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from app import AnswerSettings
from eval import (
    EvalInputError,
    ItemLog,
    RunOptions,
    StageTimes,
    SuiteResult,
    build_offline_services,
    eval_settings,
    progress,
)
from eval.mirage import MCQItem
from llm import LLMClient, build_llm
from prompts import load_prompt

from ._data import (
    ARTIFACTS_FILE,
    RGBDoc,
    SubQA,
    _Artifacts,
    _clip,
    _Params,
    _render_docs,
    _render_options,
    _render_subqs,
    compose_noisy,
    compose_robustness,
    draw_sample,
    mix_counts,
    with_insufficient_option,
)
from ._llm import (
    CounterfactualOutput,
    IntegrationOutput,
    JudgeOutput,
    RobustnessOutput,
    SubQAOutput,
    SufficiencyOutput,
    _Call,
    _complete,
)
from ._scoring import _generation_stats, _plots, _tables, exact_match, normalise_answer, summarise

if TYPE_CHECKING:
    from app import Answerer, Pipeline
    from retrieval.evidence import EvidenceDoc

__all__ = ["run_medrgb"]


# --- the suite ----------------------------------------------------------------------------------------


def _record_key(scenario: str, key: str, rho: int | None = None) -> str:
    return f"{scenario}|{key}" if rho is None else f"{scenario}|{rho}|{key}"


def _rng(opts: RunOptions, scenario: str, rho: int, key: str) -> random.Random:
    return random.Random(f"{opts.seed}|{scenario}|{rho}|{key}")


def _timings_json(times: StageTimes) -> dict[str, Any]:
    return {"samples": times.samples, "tokens": times.tokens}


def _doc_text(doc: EvidenceDoc, limit: int) -> str:
    """An EvidenceDoc's abstract (else its first text unit, else its title), clipped."""
    units = [u for u in doc.text_units if u.kind == "abstract" and u.text.strip()]
    units = units or [u for u in doc.text_units if u.text.strip()]
    return _clip(units[0].text if units else doc.title, limit)


class _Suite:
    def __init__(self, opts: RunOptions, p: _Params) -> None:
        self.opts = opts
        self.p = p
        self.log = ItemLog(opts.out_dir / "items.jsonl", resume=opts.resume)
        self.done = self.log.done()
        self.art = _Artifacts(opts.out_dir / ARTIFACTS_FILE, p.artifacts)
        self.times = StageTimes()
        for record in self.done.values():
            self.times.merge(record.get("timings") or {})
        self.keys: list[str] = []
        self.llm: LLMClient | None = None  # the reader
        self.judge_llm: LLMClient | None = None  # generation (sub-QA, counterfactuals) and grading
        self.pipeline: Pipeline | None = None
        self.answerer: Answerer | None = None
        self.http: Any = None  # httpx.AsyncClient in server mode
        self.prompts = {
            name: load_prompt(f"medrgb_{name}")
            for name in (
                "sufficiency",
                "subqa",
                "integration",
                "counterfactual",
                "robustness",
                "judge",
                "relevance",
            )
        }

    # -- plumbing --

    def append(self, record: dict[str, Any]) -> None:
        self.log.append(record)
        self.done[record["key"]] = record
        self.times.merge(record.get("timings") or {})

    async def gather(self, jobs: Sequence[Callable[[], Awaitable[None]]], description: str) -> None:
        if not jobs:
            return
        gate = asyncio.Semaphore(self.p.concurrency)
        with progress(len(jobs), description) as advance:

            async def one(job: Callable[[], Awaitable[None]]) -> None:
                async with gate:
                    await job()
                advance(1)

            await asyncio.gather(*(one(j) for j in jobs))

    async def post_ask(self, payload: dict[str, Any]) -> dict[str, Any]:
        import httpx

        try:
            response = await self.http.post("/ask", json=payload)
        except httpx.HTTPError as exc:
            raise EvalInputError(
                f"cannot reach the CoMeta server for /ask: {type(exc).__name__}: {exc}"
            ) from exc
        if response.status_code != 200:
            raise EvalInputError(f"server /ask answered {response.status_code}: {response.text[:300]}")
        data: dict[str, Any] = response.json()
        return data

    # -- standard RAG (also collects every item's evidence, the signal documents of the other scenarios) --

    async def standard(self, items: Sequence[MCQItem]) -> None:
        run_standard = "standard" in self.p.scenarios
        todo = [
            it
            for it in items
            if it.key not in self.art.evidence
            or (run_standard and _record_key("standard", it.key) not in self.done)
        ]

        async def job(item: MCQItem) -> None:
            call = _Call()
            started = time.perf_counter()
            choice: str | None
            warnings: list[str]
            if self.http is not None:
                data = await self.post_ask(
                    {"question": item.question, "options": item.options, "max_documents": self.p.k}
                )
                choice = data.get("answer_choice")
                warnings = list(data.get("warnings", []))
                mode = str(data.get("mode"))
                docs = self._docs_from_response(item.key, data)
                tokens = sum(int(v) for v in (data.get("tokens") or {}).values())
            else:
                assert self.pipeline is not None and self.answerer is not None
                outcome = await self.pipeline.search(item.question)
                call.timings.add("retrieve", (time.perf_counter() - started) * 1000)
                found = list(outcome.evidence.docs)
                texts = [(d, _doc_text(d, self.p.doc_chars)) for d in found]
                docs = [RGBDoc(d.pmid, t, "signal", d.pmid, item.key) for d, t in texts if t][: self.p.k]
                t1 = time.perf_counter()
                answer = await self.answerer.answer(
                    item.question, found, outcome.context, options=item.options, answer_type="choice"
                )
                tokens = answer.prompt_tokens + answer.completion_tokens
                call.timings.add("standard_answer", (time.perf_counter() - t1) * 1000, tokens)
                choice, warnings, mode = answer.answer_choice, list(answer.warnings), answer.mode
            if item.key not in self.art.evidence:
                self.art.evidence[item.key] = docs
                self.art.save()
            if run_standard and _record_key("standard", item.key) not in self.done:
                if self.http is not None:
                    call.timings.add("ask", (time.perf_counter() - started) * 1000, tokens)
                self.append(
                    {
                        "key": _record_key("standard", item.key),
                        "scenario": "standard",
                        "rho": None,
                        "item": item.key,
                        "dataset": item.dataset,
                        "gold": item.answer,
                        "predicted": choice,
                        "correct": choice == item.answer,
                        "parse_failed": choice is None and mode == "llm",
                        "no_choice": choice is None,
                        "mode": mode,
                        "n_docs": len(self.art.evidence[item.key]),
                        "warnings": warnings,
                        "timings": _timings_json(call.timings),
                    }
                )

        await self.gather([functools.partial(job, it) for it in todo], "medrgb: standard RAG + evidence")

    def _docs_from_response(self, key: str, data: Mapping[str, Any]) -> list[RGBDoc]:
        # The API's evidence carries no text; its passages do (abstracts are single passages).
        texts: dict[str, list[str]] = {}
        for p in data.get("passages") or []:
            texts.setdefault(str(p.get("pmid")), []).append(str(p.get("text", "")))
        docs = []
        for ev in data.get("evidence") or []:
            pmid = str(ev.get("pmid"))
            if texts.get(pmid):
                docs.append(RGBDoc(pmid, _clip(" ".join(texts[pmid]), self.p.doc_chars), "signal", pmid, key))
        return docs[: self.p.k]

    # -- signal: retrieved evidence the judge found relevant --

    def signal(self, key: str) -> list[RGBDoc]:
        """The item's signal documents: its retrieved evidence, minus what the judge found irrelevant (or
        could not check) when the relevance check ran."""
        docs = self.art.evidence.get(key, [])
        if not self.p.relevance or self.judge_llm is None:
            return list(docs)
        verdicts = self.art.relevance.get(key, {})
        return [d for d in docs if verdicts.get(d.doc_id) is True]

    async def check_relevance(self, items: Sequence[MCQItem]) -> None:
        """One YES/NO judge call per retrieved document (cached in the artefacts)."""
        assert self.judge_llm is not None
        judge = self.judge_llm
        jobs = [
            functools.partial(self._relevance_one, judge, item, doc)
            for item in items
            for doc in self.art.evidence.get(item.key, [])
            if doc.doc_id not in self.art.relevance.get(item.key, {})
        ]
        await self.gather(jobs, "medrgb: signal relevance (judge)")

    async def _relevance_one(self, judge: LLMClient, item: MCQItem, doc: RGBDoc) -> None:
        from app import parse_yes_no
        from llm import LLMError

        prompt = self.prompts["relevance"]
        started = time.perf_counter()
        verdict: bool | None
        try:
            result = await judge.complete_text(
                prompt.render(question=item.question, document=doc.text),
                prompt_version=prompt.id,
                max_tokens=4,
                temperature=0.0,
            )
            verdict = parse_yes_no(result.value)
            tokens = result.prompt_tokens + result.completion_tokens
        except LLMError:
            verdict, tokens = None, 0
        self.times.add("relevance_check", (time.perf_counter() - started) * 1000, tokens)
        self.art.relevance.setdefault(item.key, {})[doc.doc_id] = verdict
        self.art.save()

    # -- no retrieval: the reader alone --

    async def no_retrieval(self, items: Sequence[MCQItem]) -> None:
        from eval.qa import answer_cot

        assert self.llm is not None
        llm = self.llm

        async def job(item: MCQItem) -> None:
            out = await answer_cot(llm, item, max_tokens=self.p.max_tokens or 400)
            self.append(
                {
                    "key": _record_key("no_retrieval", item.key),
                    "scenario": "no_retrieval",
                    "rho": None,
                    "item": item.key,
                    "dataset": item.dataset,
                    "gold": item.answer,
                    "predicted": out["choice"],
                    "correct": bool(out["correct"]),
                    "parse_failed": out["status"] == "unparseable",
                    "no_choice": out["choice"] is None,
                    "mode": out["status"],
                    "n_docs": 0,
                    "timings": {"no_retrieval": {"ms": out["ms"], "tokens": out["tokens"]}},
                }
            )

        todo = [it for it in items if _record_key("no_retrieval", it.key) not in self.done]
        await self.gather([functools.partial(job, it) for it in todo], "medrgb: no retrieval")

    # -- sufficiency --

    def noise_pool(self, key: str) -> list[RGBDoc]:
        # Only this run's questions: an artefacts file from a larger run may hold more evidence sets.
        return [d for other in self.keys if other != key for d in self.art.evidence.get(other, [])]

    async def sufficiency(self, items: Sequence[MCQItem]) -> None:
        assert self.llm is not None
        llm = self.llm
        jobs = []
        for item in items:
            for rho in self.p.rhos:
                if _record_key("sufficiency", item.key, rho) not in self.done:
                    jobs.append(lambda item=item, rho=rho: self._sufficiency_one(llm, item, rho))
        await self.gather(jobs, "medrgb: sufficiency")

    async def _sufficiency_one(self, llm: LLMClient, item: MCQItem, rho: int) -> None:
        call = _Call()
        rng = _rng(self.opts, "sufficiency", rho, item.key)
        docs = compose_noisy(self.signal(item.key), self.noise_pool(item.key), k=self.p.k, rho=rho, rng=rng)
        options, insufficient = with_insufficient_option(item.options)
        schema = SufficiencyOutput.for_question(options, len(docs))
        out = await _complete(
            llm,
            self.prompts["sufficiency"],
            schema,
            {
                "question": item.question,
                "options": _render_options(options),
                "documents": _render_docs(docs),
                "insufficient_letter": insufficient,
            },
            call,
            "sufficiency",
            max_tokens=self.p.max_tokens or 400,
        )
        flagged = set(out.relevant_documents) if out else set()
        doc_rows = [
            {
                "doc_id": d.doc_id,
                "role": d.role,
                # positive = noise; "predicted noise" = not flagged relevant; None = unparsed
                "predicted_noise": None if out is None else (i not in flagged),
            }
            for i, d in enumerate(docs, start=1)
        ]
        record = self._base(item, "sufficiency", rho, call, out.answer_choice if out else None, docs)
        record["insufficient"] = out is not None and out.answer_choice == insufficient
        record["insufficient_letter"] = insufficient
        record["docs"] = doc_rows
        if self.p.product:
            record["product"] = await self._product(item, options, insufficient, docs, call)
            record["timings"] = _timings_json(call.timings)
        self.append(record)

    async def _product(
        self, item: MCQItem, options: dict[str, str], insufficient: str, docs: Sequence[RGBDoc], call: _Call
    ) -> dict[str, Any]:
        """The product's answer on the same context: bring-your-own evidence, no retrieval."""
        started = time.perf_counter()
        if self.http is not None:
            data = await self.post_ask(
                {
                    "question": item.question,
                    "options": options,
                    "allow_insufficient": True,
                    "documents": [
                        {"pmid": d.pmid, "text": d.text} if d.pmid else {"text": d.text} for d in docs
                    ],
                    "documents_mode": "replace",
                    "max_documents": max(1, len(docs)),
                }
            )
            choice, mode = data.get("answer_choice"), str(data.get("mode"))
            tokens = sum(int(v) for v in (data.get("tokens") or {}).values())
        else:
            from app import UserDocument, user_evidence

            assert self.answerer is not None
            evidence = user_evidence([UserDocument(pmid=d.pmid, text=d.text) for d in docs])
            answer = await self.answerer.answer(
                item.question, evidence, None, options=options, answer_type="choice", allow_insufficient=True
            )
            choice, mode = answer.answer_choice, answer.mode
            tokens = answer.prompt_tokens + answer.completion_tokens
        call.timings.add("product_answer", (time.perf_counter() - started) * 1000, tokens)
        return {
            "predicted": choice,
            "correct": choice == item.answer,
            "insufficient": choice == insufficient,
            "mode": mode,
            "parse_failed": choice is None and mode == "llm",
        }

    def _base(
        self, item: MCQItem, scenario: str, rho: int, call: _Call, choice: str | None, docs: Sequence[RGBDoc]
    ) -> dict[str, Any]:
        want_signal, want_other = mix_counts(self.p.k, rho)
        return {
            "key": _record_key(scenario, item.key, rho),
            "scenario": scenario,
            "rho": rho,
            "item": item.key,
            "dataset": item.dataset,
            "gold": item.answer,
            "predicted": choice,
            "correct": choice == item.answer,
            "parse_failed": bool(call.parse_failures.get(scenario)),
            "llm_error": bool(call.llm_errors.get(scenario)),
            "n_docs": len(docs),
            "n_signal": sum(1 for d in docs if d.role == "signal"),
            "n_other": sum(1 for d in docs if d.role != "signal"),
            "wanted_signal": want_signal,
            "wanted_other": want_other,
            "timings": _timings_json(call.timings),
            "parse_failures": dict(call.parse_failures),
            "llm_errors": dict(call.llm_errors),
        }

    # -- generation (cached) --

    async def generate_subqa(self, items: Sequence[MCQItem]) -> None:
        assert self.judge_llm is not None
        llm = self.judge_llm
        jobs = []
        for item in items:
            for doc in self.signal(item.key):
                if doc.doc_id not in self.art.subqa.get(item.key, {}):
                    jobs.append(lambda item=item, doc=doc: self._subqa_one(llm, item, doc))
        await self.gather(jobs, "medrgb: sub-questions")

    async def _subqa_one(self, llm: LLMClient, item: MCQItem, doc: RGBDoc) -> None:
        call = _Call()
        out = await _complete(
            llm,
            self.prompts["subqa"],
            SubQAOutput,
            {"question": item.question, "document": doc.text},
            call,
            "subqa_generation",
            max_tokens=160,
        )
        self.times.merge(_timings_json(call.timings))
        entry = None
        if out is not None:
            extractive = normalise_answer(out.sub_answer) in normalise_answer(doc.text)
            entry = {"sub_question": out.sub_question, "sub_answer": out.sub_answer, "extractive": extractive}
        self.art.subqa.setdefault(item.key, {})[doc.doc_id] = entry
        self.art.generator.setdefault("subqa", getattr(llm, "model_name", "unknown"))
        self.art.save()

    async def generate_counterfactuals(self, items: Sequence[MCQItem]) -> None:
        assert self.judge_llm is not None
        llm = self.judge_llm
        jobs = []
        for item in items:
            subqas = self.art.subqas(item.key)
            for doc in self.signal(item.key):
                if doc.doc_id in subqas and doc.doc_id not in self.art.counterfactual.get(item.key, {}):
                    sq = subqas[doc.doc_id]
                    jobs.append(lambda item=item, doc=doc, sq=sq: self._cf_one(llm, item, doc, sq))
        await self.gather(jobs, "medrgb: counterfactuals")

    async def _cf_one(self, llm: LLMClient, item: MCQItem, doc: RGBDoc, sq: SubQA) -> None:
        call = _Call()
        out = await _complete(
            llm,
            self.prompts["counterfactual"],
            CounterfactualOutput,
            {"question": sq.question, "answer": sq.answer, "document": doc.text},
            call,
            "counterfactual_generation",
            max_tokens=400,
        )
        self.times.merge(_timings_json(call.timings))
        entry = None
        # An "edit" that changes nothing, or keeps the answer, is no counterfactual: counted as a failure.
        if (
            out is not None
            and normalise_answer(out.new_document) != normalise_answer(doc.text)
            and normalise_answer(out.new_answer) != normalise_answer(sq.answer)
        ):
            entry = {"new_answer": out.new_answer, "new_document": _clip(out.new_document, self.p.doc_chars)}
        self.art.counterfactual.setdefault(item.key, {})[doc.doc_id] = entry
        self.art.generator.setdefault("counterfactual", getattr(llm, "model_name", "unknown"))
        self.art.save()

    # -- integration and robustness --

    async def with_subquestions(self, items: Sequence[MCQItem], scenario: str) -> None:
        assert self.llm is not None
        llm = self.llm
        rhos = [r for r in self.p.rhos if r > 0] if scenario == "integration" else list(self.p.rhos)
        jobs = []
        for item in items:
            for rho in rhos:
                if _record_key(scenario, item.key, rho) not in self.done:
                    jobs.append(lambda item=item, rho=rho: self._subq_one(llm, item, rho, scenario))
        await self.gather(jobs, f"medrgb: {scenario}")

    async def _subq_one(self, llm: LLMClient, item: MCQItem, rho: int, scenario: str) -> None:
        call = _Call()
        rng = _rng(self.opts, scenario, rho, item.key)
        subqas = self.art.subqas(item.key)
        signal = [d for d in self.signal(item.key) if d.doc_id in subqas]
        if scenario == "integration":
            docs = compose_noisy(signal, self.noise_pool(item.key), k=self.p.k, rho=rho, rng=rng)
            asked = [subqas[d.doc_id] for d in docs if d.role == "signal"]
            schema: type[IntegrationOutput | RobustnessOutput] = IntegrationOutput.for_question(item.options)
        else:
            cfs = self.art.counterfactuals(item.key)
            docs = compose_robustness(signal, cfs, k=self.p.k, rho=rho, rng=rng)
            # A counterfactual is asked the original sub-question, and graded against the original answer.
            asked = [subqas[d.doc_id.removeprefix("cf-")] for d in docs]
            schema = RobustnessOutput.for_question(item.options, len(docs))
        rng.shuffle(asked)  # the order of the sub-questions must not give away which document answers them
        values = {
            "question": item.question,
            "options": _render_options(item.options),
            "documents": _render_docs(docs),
            "sub_questions": _render_subqs(asked) or "(none)",
        }
        budget = self.p.max_tokens or 600
        out = None
        if docs:  # no document has a sub-QA pair (failed generation): nothing to test, counted as wrong
            out = await _complete(
                llm, self.prompts[scenario], schema, values, call, scenario, max_tokens=budget
            )
        predictions = list(out.sub_answers) if out is not None else []
        subs = []
        for i, sq in enumerate(asked):
            pred = predictions[i].strip() if i < len(predictions) else None
            em = exact_match(pred, sq.answer)
            assert self.judge_llm is not None
            judged, judge_failed = await self._judge(self.judge_llm, sq, pred, em, call)
            subs.append(
                {
                    "doc_id": sq.doc_id,
                    "gold": sq.answer,
                    "predicted": pred,
                    "em": em,
                    "judged": judged,
                    "judge_failed": judge_failed,
                }
            )
        record = self._base(item, scenario, rho, call, out.answer_choice if out else None, docs)
        record["subs"] = subs
        record["empty_context"] = not docs
        record["sub_missing"] = sum(1 for s in subs if s["predicted"] is None)
        if isinstance(out, RobustnessOutput) or (out is None and scenario == "robustness"):
            flagged = set(out.incorrect_documents) if isinstance(out, RobustnessOutput) else set()
            record["docs"] = [
                {"doc_id": d.doc_id, "role": d.role, "predicted_cf": None if out is None else (i in flagged)}
                for i, d in enumerate(docs, start=1)
            ]
        self.append(record)

    async def _judge(
        self, llm: LLMClient, sq: SubQA, prediction: str | None, em: bool, call: _Call
    ) -> tuple[float | None, bool]:
        """The paper's 0/0.5/1 score: 1 on an exact match and 0 for no answer without asking; a parse
        failure scores 0 and is flagged. None when judging is switched off."""
        if em:
            return 1.0, False
        if not prediction:
            return 0.0, False
        if not self.p.judge:
            return None, False
        out = await _complete(
            llm,
            self.prompts["judge"],
            JudgeOutput,
            {"question": sq.question, "prediction": prediction, "ground_truth": sq.answer},
            call,
            "judge",
            max_tokens=32,
        )
        return (0.0, True) if out is None else (out.score, False)


def _http_client(server_url: str) -> Any:
    """The client for ``--server``; one /ask with an LLM can take minutes on a small machine."""
    import httpx

    return httpx.AsyncClient(base_url=server_url.rstrip("/"), timeout=httpx.Timeout(300.0, connect=10.0))


async def run_medrgb(opts: RunOptions) -> SuiteResult:
    """Run the configured MedRGB scenarios; see the module docstring for the params and metrics."""
    from eval.judging import build_judge_llm, judge_notes, resolve_judge

    p = _Params.parse(opts.params)
    # Relevance checks, sub-QA/counterfactual generation and grading need a judge apart from the reader.
    wants_judge = any(s in p.scenarios for s in ("integration", "robustness")) or (
        "sufficiency" in p.scenarios and p.relevance
    )
    has_reader = eval_settings(opts).llm.backend != "none"
    choice = resolve_judge(opts, "medrgb") if wants_judge and has_reader else None
    items, frame = draw_sample(opts, p)
    opts.out_dir.mkdir(parents=True, exist_ok=True)
    suite = _Suite(opts, p)
    suite.keys = [it.key for it in items]
    retrieval = eval_settings(opts)
    where = (
        f"the server at {opts.server_url}"
        if opts.server_url
        else f"the configured retrieval (E-utilities backend {retrieval.eutils.backend}, corpus "
        f"{retrieval.local_server.corpus_dir or 'bundled'})"
    )
    notes = [
        f"{len(items)} questions ({', '.join(sorted({it.dataset for it in items}))}; source {p.source}); "
        f"k={p.k} documents per context, each clipped to {p.doc_chars} characters; ρ = {list(p.rhos)}.",
        *(
            f"Sampling frame, {ds}: {v['sampled']} of {v['population']} drawn from {v['drawn_from']} "
            f"(seed {v['seed']}, {v['sampling']})."
            for ds, v in frame.items()
        ),
        f"Signal candidates are each question's top-k evidence from {where}; "
        + (
            "a document counts as signal only after the judge says it is relevant (prompt medrgb_relevance); "
            if p.relevance
            else "they are NOT relevance-checked (param relevance=false); "
        )
        + "noise documents are evidence retrieved for the other questions of the run (MedRGB samples "
        "them from other questions' signal sets). Documents are shown as text only.",
        "Every unparseable LLM output counts as wrong and is counted; a judged sub-answer score is 1 on "
        "exact match and 0 for a missing answer without calling the judge.",
    ]
    client: Any = None
    try:
        if opts.server_url:
            client = _http_client(opts.server_url)
            suite.http = client
            suite.llm = build_llm(eval_settings(opts).llm)
            notes.append(
                f"Standard-RAG and the product answers went through {opts.server_url} (/ask); the MedRGB "
                "scenario prompts ran in-process on the configured reader LLM."
            )
        else:
            pipeline, _answerer, llm = await build_offline_services(opts)
            from app import Answerer

            suite.pipeline, suite.llm = pipeline, llm
            if p.rewriter == "deterministic":
                # The LLM reads and judges, the Understand stage stays rule-based (a small local model
                # spends minutes per rewrite and its plans are mostly rejected anyway).
                from retrieval.understand import QueryUnderstander

                pipeline.understander = QueryUnderstander(
                    llm=None, scrub_for_llm=pipeline.settings.llm.scrub_phi_for_llm
                )
                notes.append("Understand stage: the deterministic rewriter (param rewriter=deterministic).")
            # k passages, as MedRGB's k signal documents, within the context the reader can hold.
            answer_settings = AnswerSettings(
                max_passages=p.k, max_context_chars=max(200, p.k * (p.doc_chars + 100))
            )
            if p.max_tokens is not None:
                answer_settings.max_tokens = p.max_tokens
            suite.answerer = Answerer(llm, answer_settings)
        if choice is not None:
            suite.judge_llm = build_judge_llm(choice, suite.llm)
            notes[:0] = judge_notes(
                choice,
                getattr(suite.llm, "model_name", None),
                getattr(suite.judge_llm, "model_name", None),
            )
        await suite.standard(items)
        wants_llm = [s for s in p.scenarios if s != "standard"]
        if wants_llm and suite.llm is None:
            notes.append(f"No LLM configured: {', '.join(wants_llm)} skipped (they need a reader model).")
        elif wants_llm:
            if "no_retrieval" in p.scenarios:
                await suite.no_retrieval(items)
            needs_signal = any(s in p.scenarios for s in ("sufficiency", "integration", "robustness"))
            if needs_signal and p.relevance and suite.judge_llm is not None:
                await suite.check_relevance(items)
            if len(suite.art.evidence) < 2:
                notes.append("Only one question: there is no other question's evidence to use as noise.")
            if "sufficiency" in p.scenarios:
                await suite.sufficiency(items)
            if "integration" in p.scenarios or "robustness" in p.scenarios:
                await suite.generate_subqa(items)
            if "robustness" in p.scenarios:
                await suite.generate_counterfactuals(items)
            for scenario in ("integration", "robustness"):
                if scenario in p.scenarios:
                    await suite.with_subquestions(items, scenario)
    finally:
        if client is not None:
            await client.aclose()
        if suite.judge_llm is not None and suite.judge_llm is not suite.llm:
            await suite.judge_llm.aclose()
        if suite.pipeline is not None:
            await suite.pipeline.aclose()
        elif suite.llm is not None:
            await suite.llm.aclose()

    keys = {it.key for it in items}
    records = [r for r in suite.done.values() if r.get("item") in keys and r.get("scenario") in p.scenarios]
    metrics = summarise(records)
    generated = _generation_stats(suite.art, keys)
    metrics["generation"] = generated
    if choice is not None:
        metrics.update(choice.metrics())
    metrics["sampling_frame"] = frame
    checked = [v for k in keys for v in suite.art.relevance.get(k, {}).values()]
    if checked:
        metrics["relevance"] = {
            "checked": len(checked),
            "relevant": sum(1 for v in checked if v is True),
            "irrelevant": sum(1 for v in checked if v is False),
            "check_failed": sum(1 for v in checked if v is None),
        }
        rel = metrics["relevance"]
        notes.append(
            f"Relevance check by the judge: {rel['relevant']} of {rel['checked']} retrieved documents kept "
            f"as signal, {rel['irrelevant']} judged irrelevant, {rel['check_failed']} unchecked (call or "
            "parse failed; not used as signal)."
        )
    metrics["params"] = {
        "scenarios": list(p.scenarios),
        "k": p.k,
        "rho": list(p.rhos),
        "doc_chars": p.doc_chars,
        "source": p.source,
        "n_items": len(items),
        "relevance_check": p.relevance,
    }
    if generated["subqa"]["attempted"]:
        notes.append(
            f"Sub-QA pairs: {generated['subqa']['ok']} of {generated['subqa']['attempted']} signal documents "
            f"({generated['subqa']['extractive']} with an answer found verbatim in the document); "
            f"counterfactuals: {generated['counterfactual']['ok']} of "
            f"{generated['counterfactual']['attempted']}. Generated by "
            f"{json.dumps(suite.art.generator) if suite.art.generator else 'n/a'}; "
            f"cached in {ARTIFACTS_FILE}."
        )
    unasked = sum(
        v.get("empty_contexts", 0)
        for s in ("integration", "robustness")
        for v in (metrics.get(s) or {}).get("by_rho", {}).values()
    )
    if unasked:
        notes.append(
            f"{unasked} integration/robustness contexts were empty (no signal document with a sub-QA pair): "
            "the reader was not asked and they count as wrong."
        )
    empty = [k for k in suite.keys if not suite.art.evidence.get(k)]
    if empty:
        notes.append(
            f"{len(empty)} of {len(items)} questions have no evidence document with text (a zero-hit, or "
            "a server whose /ask returns no passages): their signal sets are empty."
        )
    short = sum(
        v.get("short_contexts", 0)
        for s in ("sufficiency", "integration", "robustness")
        for v in (metrics.get(s) or {}).get("by_rho", {}).values()
    )
    if short:
        notes.append(
            f"{short} contexts had fewer signal/other documents than ρ asks for (short evidence sets, "
            "missing sub-QA pairs or counterfactuals); the records carry wanted vs actual counts."
        )
    return SuiteResult(
        suite="medrgb",
        metrics=metrics,
        tables=_tables(metrics),
        plots=_plots(metrics, p.rhos),
        notes=notes,
        stage_times=suite.times,
    )
