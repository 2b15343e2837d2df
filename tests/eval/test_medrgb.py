"""MedRGB suite: context mixing, detection metrics, sub-answer scoring, generation prompts, parse failures.

The end-to-end tests run ``run_medrgb`` on two hand-made questions with five hand-made evidence documents
each, a fake retrieval stage and the scripted LLM, so every expected number below is worked out by hand.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

import pytest

import eval.medrgb._suite as medrgb_suite
from app import UserDocument
from app.answer import Answerer
from app.asker import user_evidence
from app.settings import Settings
from eval import EvalInputError, RunOptions, SuiteResult
from eval.medrgb import (
    INSUFFICIENT_OPTION,
    DocOutcome,
    RGBDoc,
    SufficiencyOutput,
    compose_noisy,
    compose_robustness,
    detection_scores,
    exact_match,
    mix_counts,
    run_medrgb,
    with_insufficient_option,
)
from eval.mirage import MCQItem
from llm import LLMSettings
from retrieval.evidence import EvidenceDoc
from tests._fakes import Reply, ScriptedLLM

# --- pure helpers -------------------------------------------------------------------------------------


def _docs(prefix: str, n: int) -> list[RGBDoc]:
    return [RGBDoc(f"{prefix}{i}", f"text {prefix}{i}", pmid=f"{prefix}{i}") for i in range(1, n + 1)]


@pytest.mark.parametrize(
    ("rho", "signal", "noise"), [(0, 0, 5), (20, 1, 4), (40, 2, 3), (60, 3, 2), (80, 4, 1), (100, 5, 0)]
)
def test_noise_mixing_gives_the_right_counts_at_each_rho(rho: int, signal: int, noise: int) -> None:
    assert mix_counts(5, rho) == (signal, noise)
    own = _docs("1", 5)
    pool = [*_docs("2", 8), RGBDoc("13", "duplicate of a signal pmid", pmid="13")]
    docs = compose_noisy(own, pool, k=5, rho=rho, rng=random.Random(7))
    assert sum(d.role == "signal" for d in docs) == signal
    assert sum(d.role == "noise" for d in docs) == noise
    assert all(d.pmid and d.pmid.startswith("2") for d in docs if d.role == "noise")  # never own PMID
    assert all(d.pmid and d.pmid.startswith("1") for d in docs if d.role == "signal")
    assert len({d.doc_id for d in docs}) == len(docs)


def test_rounding_and_short_pools() -> None:
    assert mix_counts(10, 20) == (2, 8)
    assert mix_counts(2, 25) == (1, 1)  # half rounds up, not to even
    assert mix_counts(3, 50) == (2, 1)
    with pytest.raises(ValueError, match="rho"):
        mix_counts(5, 120)
    # Two signal documents cannot fill 80 % of 5: fewer documents, never repeats.
    docs = compose_noisy(_docs("1", 2), _docs("2", 3), k=5, rho=80, rng=random.Random(0))
    assert sorted(d.role for d in docs) == ["noise", "signal", "signal"]


def test_mixing_is_reproducible_with_the_same_seed() -> None:
    a = compose_noisy(_docs("1", 5), _docs("2", 5), k=5, rho=40, rng=random.Random("s"))
    b = compose_noisy(_docs("1", 5), _docs("2", 5), k=5, rho=40, rng=random.Random("s"))
    assert [d.doc_id for d in a] == [d.doc_id for d in b]


def test_robustness_mix_replaces_documents_by_their_counterfactual() -> None:
    signal = _docs("1", 5)
    cfs = {d.doc_id: RGBDoc(f"cf-{d.doc_id}", "altered", "counterfactual") for d in signal[:4]}
    for rho, true, cf in [(0, 1, 4), (40, 2, 3), (100, 5, 0)]:
        docs = compose_robustness(signal, cfs, k=5, rho=rho, rng=random.Random(rho))
        # Only four documents have a counterfactual: at rho=0 one context slot stays empty.
        assert sum(d.role == "counterfactual" for d in docs) == min(cf, 4)
        assert sum(d.role == "signal" for d in docs) == (0 if rho == 0 else true)
        sources = [d.doc_id.removeprefix("cf-") for d in docs]
        assert len(sources) == len(set(sources))  # a document appears original or altered, never both


def test_detection_scores_worked_example() -> None:
    # 2 noise documents (positives) and 3 signal documents; one output was unparseable for a signal doc.
    outcomes = [
        DocOutcome(positive=True, predicted=True),  # noise flagged as noise: TP
        DocOutcome(positive=True, predicted=False),  # noise called relevant: FN
        DocOutcome(positive=False, predicted=False),  # signal called relevant: TN
        DocOutcome(positive=False, predicted=True),  # signal flagged as noise: FP
        DocOutcome(positive=False, predicted=None),  # unparsed: wrong
    ]
    scores = detection_scores(outcomes)
    assert scores["accuracy"] == pytest.approx(2 / 5)
    assert scores["recall"] == pytest.approx(1 / 2)
    assert scores["specificity"] == pytest.approx(1 / 3)
    assert (scores["n_positive"], scores["n_negative"]) == (2, 3)
    only_signal = detection_scores([DocOutcome(False, False)])
    assert only_signal["recall"] is None and only_signal["specificity"] == 1.0


def test_exact_match_normalisation() -> None:
    assert exact_match("The value 102.", "value 102")
    assert exact_match("an  Aspirin", "aspirin")
    assert not exact_match("approximately 103", "value 103")
    assert not exact_match(None, "x")
    assert not exact_match("", "")


def test_insufficient_option_and_output_schema() -> None:
    options, letter = with_insufficient_option({"A": "yes", "B": "no", "C": "maybe"})
    assert letter == "D" and options["D"] == INSUFFICIENT_OPTION
    schema = SufficiencyOutput.for_question(options, 3)
    parsed = schema.model_validate({"relevant_documents": ["2", 1, 2], "answer_choice": "no"})
    assert parsed.relevant_documents == [2, 1] and parsed.answer_choice == "B"
    with pytest.raises(ValueError, match="document 4"):
        schema.model_validate({"relevant_documents": [4], "answer_choice": "A"})
    with pytest.raises(ValueError, match="not one of"):
        schema.model_validate({"relevant_documents": [], "answer_choice": "E"})
    wire = schema.model_json_schema()["properties"]
    assert wire["answer_choice"]["enum"] == ["A", "B", "C", "D"]
    assert wire["relevant_documents"]["items"]["enum"] == [1, 2, 3]


def test_unknown_params_are_input_errors(tmp_path: Path) -> None:
    for params in ({"nope": 1}, {"rho": "0,150"}, {"scenarios": "standard,bogus"}, {"k": "zero"}):
        with pytest.raises(EvalInputError):
            asyncio.run(run_medrgb(RunOptions(out_dir=tmp_path, params=params)))


# --- end to end with a scripted reader ----------------------------------------------------------------

ITEMS = [
    MCQItem("pubmedqa:1", "pubmedqa", "Does aspirin help?", {"A": "yes", "B": "no", "C": "maybe"}, "A"),
    MCQItem("pubmedqa:2", "pubmedqa", "Does bleeding rise?", {"A": "yes", "B": "no", "C": "maybe"}, "B"),
]
TOPIC = {"aspirin": "1", "bleeding": "2"}  # question word -> the PMID prefix of its own evidence


def _evidence(prefix: str) -> list[EvidenceDoc]:
    return user_evidence(
        [
            UserDocument(pmid=f"{prefix}0{i}", text=f"DOC{prefix}0{i} reports value {prefix}0{i}.")
            for i in range(1, 6)
        ]
    )


class _Outcome:
    def __init__(self, docs: Sequence[EvidenceDoc]) -> None:
        self.evidence = type("E", (), {"docs": tuple(docs)})()
        self.context = None


class _FakePipeline:
    """Retrieval stand-in: each question's five hand-made documents."""

    def __init__(self) -> None:
        self.searches: list[str] = []
        self.settings = Settings().offline()
        self.understander: object = "the pipeline's own (LLM) understander"

    async def search(self, question: str) -> _Outcome:
        self.searches.append(question)
        prefix = next(p for word, p in TOPIC.items() if word in question.lower())
        return _Outcome(_evidence(prefix))

    async def aclose(self) -> None:
        return None


def _own_prefix(prompt: str) -> str:
    question = re.search(r"(?:MAIN )?QUESTION: (.*)", prompt)
    assert question is not None
    return next(p for word, p in TOPIC.items() if word in question.group(1).lower())


def _documents(prompt: str) -> dict[int, str]:
    return {int(n): text for n, text in re.findall(r"Document \[(\d+)\]\n(.*)", prompt)}


def _letter_for(prompt: str) -> str:
    return "A" if _own_prefix(prompt) == "1" else "B"


# Sub-answers the reader gives, by document: exact, exact after normalisation, partly right, wrong.
SUB_ANSWERS = {
    "1": "value {p}01",
    "2": "The value {p}02.",
    "3": "approximately {p}03",
    "4": "wrong",
    "5": "wrong",
}


def reader(prompt: str, *, garbage: AbstractSet[str] = frozenset()) -> Reply:
    """A perfect noise/fact detector that answers from its own documents, else says insufficient."""
    if "checking retrieved evidence" in prompt:  # the judge's relevance check: every document is on topic
        return "YES" if "DOC9" not in prompt else "NO"
    if "think step by step, then choose" in prompt:  # no retrieval (the CoT prompt): always "maybe"
        return {"step_by_step_thinking": "no evidence", "answer_choice": "C"}
    if "Task: answer a multi-choice medical question" in prompt:  # the product's answer_choice prompt
        if "Insufficient information" in prompt and not re.search(rf"DOC{_own_prefix(prompt)}0", prompt):
            return {"step_by_step_thinking": "none relevant", "answer_choice": "D"}
        return {"step_by_step_thinking": "from the evidence", "answer_choice": _letter_for(prompt)}
    if "create a sub Q-A pair" in prompt:
        doc = re.search(r"DOCUMENT:\n(DOC(\d+)) reports (value \d+)\.", prompt)
        assert doc is not None
        return {"sub_question": f"What value does {doc.group(1)} report?", "sub_answer": doc.group(3)}
    if "deliberately incorrect" in prompt:
        doc = re.search(r"ORIGINAL DOCUMENT:\n(.*)", prompt)
        assert doc is not None
        return {"new_answer": "value 999", "new_document": re.sub(r"value \d+", "value 999", doc.group(1))}
    if "Ground Truth:" in prompt:
        return {"score": 0.5} if "approximately" in prompt else {"score": 0}
    docs = _documents(prompt)
    own = _own_prefix(prompt)
    if "Identify relevant documents" in prompt:  # sufficiency
        if "sufficiency" in garbage:
            return "I think the answer is A"
        relevant = [n for n, text in docs.items() if text.startswith(f"DOC{own}")]
        return {
            "relevant_documents": relevant,
            "step_by_step_thinking": "...",
            "answer_choice": _letter_for(prompt) if relevant else "D",
        }
    subqs = re.findall(r"^\d+\. What value does DOC(\d+) report\?$", prompt, re.MULTILINE)
    answers = [SUB_ANSWERS[d[-1]].format(p=d[:-2]) for d in subqs]
    if "Some documents may contain factual errors" in prompt:  # robustness
        wrong = [n for n, text in docs.items() if "value 999" in text]
        return {
            "incorrect_documents": wrong,
            "sub_answers": answers,
            "step_by_step_thinking": "...",
            "answer_choice": _letter_for(prompt),
        }
    if "integration" in garbage and own == "2":
        return {"sub_answers": "not a list"}
    return {"sub_answers": answers, "step_by_step_thinking": "...", "answer_choice": _letter_for(prompt)}


def _run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    llm: ScriptedLLM,
    *,
    params: dict[str, Any] | None = None,
    resume: bool = True,
    judge: ScriptedLLM | None = None,
) -> tuple[SuiteResult, _FakePipeline]:
    """Run the suite on the scripted reader; with ``judge`` a separate judge model, else self-judged."""
    import eval.judging._select as select

    pipeline = _FakePipeline()
    if judge is not None:
        monkeypatch.setattr(select, "build_llm", lambda _settings: judge)

    async def services(_opts: RunOptions) -> tuple[Any, Answerer, ScriptedLLM]:
        return pipeline, Answerer(llm), llm  # type: ignore[arg-type]

    monkeypatch.setattr(medrgb_suite, "build_offline_services", services)
    monkeypatch.setattr(medrgb_suite, "draw_sample", lambda _opts, _p: (list(ITEMS), {}))
    opts = RunOptions(
        out_dir=tmp_path,
        params=params or {},
        resume=resume,
        llm=LLMSettings(backend="openai", model="reader"),
        judge_llm=LLMSettings(backend="openai", model="judge") if judge is not None else None,
        allow_self_judge=judge is None,
    )
    return asyncio.run(run_medrgb(opts)), pipeline


def test_sufficiency_end_to_end_counts_insufficient_and_noise_detection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm = ScriptedLLM(reader)
    result, _ = _run(tmp_path, monkeypatch, llm, params={"scenarios": "standard,sufficiency"})
    m = result.metrics
    assert m["standard"]["accuracy"] == 1.0 and m["standard"]["n"] == 2
    by_rho = m["sufficiency"]["by_rho"]
    assert set(by_rho) == {"0", "20", "40", "60", "80", "100"}
    # No signal document: the reader says insufficient (wrong); any signal: right.
    assert by_rho["0"]["accuracy"] == 0.0 and by_rho["0"]["insufficient_share"] == 1.0
    for rho in ("20", "40", "60", "80", "100"):
        assert by_rho[rho]["accuracy"] == 1.0 and by_rho[rho]["insufficient_share"] == 0.0
    det0, det60, det100 = (by_rho[r]["noise_detection"] for r in ("0", "60", "100"))
    assert (det0["n_positive"], det0["n_negative"], det0["recall"], det0["specificity"]) == (10, 0, 1.0, None)
    assert (det60["n_positive"], det60["n_negative"], det60["accuracy"]) == (4, 6, 1.0)
    assert (det100["recall"], det100["specificity"]) == (None, 1.0)
    # The product Answerer saw the same contexts (bring-your-own evidence, no retrieval) and abstained at 0.
    assert by_rho["0"]["product"]["insufficient_share"] == 1.0 and by_rho["100"]["product"]["accuracy"] == 1.0
    records = [json.loads(line) for line in (tmp_path / "items.jsonl").read_text().splitlines()]
    r40 = next(r for r in records if r["key"] == "sufficiency|40|pubmedqa:1")
    assert (r40["n_signal"], r40["n_other"]) == (2, 3)
    assert all(d["doc_id"].startswith("2") for d in r40["docs"] if d["role"] == "noise")
    assert m["sufficiency"]["parse_failures"] == 0
    prompt = "\n".join(msg["content"] for msg in llm.seen[llm.versions.index("medrgb_sufficiency@1")])
    assert (
        "Some documents may be irrelevant" in prompt and "Return insufficient information if unsure" in prompt
    )
    assert "D. Insufficient information" in prompt and "choose D (Insufficient information)" in prompt
    assert len(re.findall(r"^Document \[\d\]$", prompt, re.MULTILINE)) == 5
    assert [p.filename for p in result.plots] == ["medrgb_accuracy.png", "medrgb_detection.png"]
    assert result.plots[0].labels == ["0", "20", "40", "60", "80", "100"]
    assert result.plots[0].series["sufficiency"] == [0.0, 100.0, 100.0, 100.0, 100.0, 100.0]


def test_parse_failures_count_as_wrong_and_are_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm = ScriptedLLM(lambda prompt: reader(prompt, garbage={"sufficiency"}))
    result, _ = _run(
        tmp_path, monkeypatch, llm, params={"scenarios": "sufficiency", "rho": "60", "product": "0"}
    )
    at60 = result.metrics["sufficiency"]["by_rho"]["60"]
    assert at60["parse_failures"] == 2 and at60["accuracy"] == 0.0 and at60["insufficient_share"] == 0.0
    # Unparsed: every document counts as wrongly classified.
    assert at60["noise_detection"]["accuracy"] == 0.0 and at60["noise_detection"]["n_docs"] == 10
    assert result.metrics["sufficiency"]["parse_failures"] == 2
    assert "standard" not in result.metrics  # not asked for, though its retrieval ran for the evidence


def test_integration_sub_answer_em_and_judged_score(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    llm = ScriptedLLM(reader)
    result, _ = _run(tmp_path, monkeypatch, llm, params={"scenarios": "integration", "rho": "0,100"})
    by_rho = result.metrics["integration"]["by_rho"]
    assert set(by_rho) == {"100"}  # integration starts at 20 %: a sub-question needs a signal document
    at100 = by_rho["100"]
    # Per question: 5 sub-answers, EM for documents 1 and 2; judged 1, 1, 0.5, 0, 0.
    assert at100["n_sub"] == 10
    assert at100["sub_em"] == pytest.approx(4 / 10)
    assert at100["sub_judged"] == pytest.approx(5 / 10)
    assert at100["accuracy"] == 1.0
    # The judge is asked only where EM fails and an answer exists: 3 per question.
    assert llm.versions.count("medrgb_judge@1") == 6
    assert llm.versions.count("medrgb_subqa@1") == 10
    assert result.metrics["generation"]["subqa"] == {"attempted": 10, "ok": 10, "failed": 0, "extractive": 10}


def test_a_separate_judge_generates_and_grades_the_reader_only_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader_llm, judge_llm = ScriptedLLM(reader), ScriptedLLM(reader)
    result, _ = _run(
        tmp_path, monkeypatch, reader_llm, params={"scenarios": "integration", "rho": "100"}, judge=judge_llm
    )
    assert result.metrics["self_judged"] is False
    assert result.metrics["judge"]["model"] == "judge" and result.metrics["reader"]["model"] == "reader"
    # Sub-QA generation and 0/0.5/1 grading went to the judge; the reader only answered.
    assert judge_llm.versions.count("medrgb_subqa@1") == 10
    assert judge_llm.versions.count("medrgb_judge@1") == 6
    assert not {"medrgb_subqa@1", "medrgb_judge@1"} & set(reader_llm.versions)
    assert "medrgb_integration@1" in reader_llm.versions
    assert not any(n.startswith("SELF-JUDGED") for n in result.notes)


def test_irrelevant_documents_are_not_signal_and_no_retrieval_is_an_arm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def judge_script(prompt: str) -> Reply:
        # The judge rejects each question's fifth document as off topic.
        if "checking retrieved evidence" in prompt:
            return "NO" if re.search(r"Document: DOC\d05", prompt) else "Yes."
        return reader(prompt)

    reader_llm, judge_llm = ScriptedLLM(reader), ScriptedLLM(judge_script)
    result, _ = _run(
        tmp_path,
        monkeypatch,
        reader_llm,
        params={"scenarios": "standard,no_retrieval,integration", "rho": "100"},
        judge=judge_llm,
    )
    m = result.metrics
    assert m["relevance"] == {"checked": 10, "relevant": 8, "irrelevant": 2, "check_failed": 0}
    assert judge_llm.versions.count("medrgb_relevance@1") == 10
    # Sub-QA pairs only for the 4 relevant documents of each question.
    assert judge_llm.versions.count("medrgb_subqa@1") == 8
    assert m["integration"]["by_rho"]["100"]["n_sub"] == 8
    # No retrieval: the reader alone answers "maybe" (C): 0 of 2, per dataset too.
    assert m["no_retrieval"]["accuracy"] == 0.0 and m["no_retrieval"]["by_dataset"]["pubmedqa"]["n"] == 2
    assert m["standard"]["accuracy"] == 1.0
    # Every metric per dataset, not only accuracy.
    per_ds = m["integration"]["by_rho"]["100"]["by_dataset"]["pubmedqa"]
    assert per_ds["n_sub"] == 8 and per_ds["sub_em"] == pytest.approx(4 / 8)
    titles = [t.title for t in result.tables]
    assert "Per dataset: integration" in titles
    assert any(t.startswith("Per dataset: Standard-RAG vs no retrieval") for t in titles)
    assert any("2 judged irrelevant" in n for n in result.notes)


def test_self_judging_is_refused_unless_allowed(tmp_path: Path) -> None:
    opts = RunOptions(
        out_dir=tmp_path, params={"scenarios": "integration"}, llm=LLMSettings(backend="openai", model="r")
    )
    with pytest.raises(EvalInputError, match="allow-self-judge"):
        asyncio.run(run_medrgb(opts))


def test_integration_parse_failure_leaves_sub_answers_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm = ScriptedLLM(lambda prompt: reader(prompt, garbage={"integration"}))
    result, _ = _run(tmp_path, monkeypatch, llm, params={"scenarios": "integration", "rho": "100"})
    at100 = result.metrics["integration"]["by_rho"]["100"]
    assert at100["parse_failures"] == 1 and at100["accuracy"] == 0.5
    assert at100["sub_missing"] == 5
    assert at100["sub_em"] == pytest.approx(2 / 10) and at100["sub_judged"] == pytest.approx(2.5 / 10)


def test_counterfactual_prompt_and_robustness_fact_detection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm = ScriptedLLM(reader)
    result, _ = _run(tmp_path, monkeypatch, llm, params={"scenarios": "robustness", "rho": "0,60"})
    cf_prompts = [
        "\n".join(m["content"] for m in msgs)
        for msgs, v in zip(llm.seen, llm.versions, strict=True)
        if v == "medrgb_counterfactual@1"
    ]
    assert len(cf_prompts) == 10
    first = next(p for p in cf_prompts if "DOC101 reports" in p)
    assert "deliberately incorrect answer-document pair" in first
    assert "Minimally edit the original document" in first
    assert "QUESTION: What value does DOC101 report?" in first
    assert "ORIGINAL ANSWER: value 101" in first
    assert "ORIGINAL DOCUMENT:\nDOC101 reports value 101." in first
    by_rho = result.metrics["robustness"]["by_rho"]
    assert by_rho["0"]["fact_detection"]["n_positive"] == 10
    assert by_rho["0"]["fact_detection"]["recall"] == 1.0
    assert by_rho["0"]["fact_detection"]["specificity"] is None
    assert (by_rho["60"]["fact_detection"]["n_positive"], by_rho["60"]["fact_detection"]["n_negative"]) == (
        4,
        6,
    )
    assert by_rho["60"]["fact_detection"]["accuracy"] == 1.0
    # Sub-answers are graded against the original facts, also for the altered documents.
    assert by_rho["0"]["sub_em"] == pytest.approx(4 / 10)
    art = json.loads((tmp_path / "medrgb_artifacts.json").read_text())
    assert art["counterfactual"]["pubmedqa:1"]["101"]["new_document"] == "DOC101 reports value 999."


def test_rerun_reuses_records_and_generated_artefacts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    params = {"scenarios": "integration,robustness", "rho": "100"}
    first = ScriptedLLM(reader)
    before, _ = _run(tmp_path, monkeypatch, first, params=params)
    again = ScriptedLLM(reader)
    after, pipeline = _run(tmp_path, monkeypatch, again, params=params)
    assert again.versions == [] and pipeline.searches == []  # everything came from the run dir
    assert after.metrics["integration"] == before.metrics["integration"]
    fresh = ScriptedLLM(reader)
    _run(tmp_path, monkeypatch, fresh, params=params, resume=False)
    # A fresh run answers again but on the cached evidence, sub-QA pairs and counterfactuals.
    assert "medrgb_subqa@1" not in fresh.versions and "medrgb_counterfactual@1" not in fresh.versions
    assert fresh.versions.count("medrgb_integration@1") == 2


# --- against a server (POST /ask), in-process over ASGI -----------------------------------------------

SERVER_ITEMS = [
    MCQItem(
        "pubmedqa:26163474",
        "pubmedqa",
        "Is there a connection between sublingual varices and hypertension?",
        {"A": "yes", "B": "no", "C": "maybe"},
        "A",
    ),
    MCQItem(
        "pubmedqa:18537964",
        "pubmedqa",
        "Does a physician's specialty influence the recording of medication history in patients' case notes?",
        {"A": "yes", "B": "no", "C": "maybe"},
        "A",
    ),
]


def server_reader(prompt: str) -> Reply:
    if "Task: answer a multi-choice medical question" in prompt:
        return {"step_by_step_thinking": "...", "answer_choice": "A"}
    return {"relevant_documents": [1], "step_by_step_thinking": "...", "answer_choice": "A"}


@pytest.mark.slow
def test_server_mode_answers_through_ask_with_the_context_as_documents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import httpx

    from app import ApiSettings
    from app.api import create_app
    from app.container import build_pipeline

    llm = ScriptedLLM(server_reader)
    sent: list[dict[str, Any]] = []

    async def record(request: httpx.Request) -> None:
        sent.append(json.loads(request.content))

    async def main() -> SuiteResult:
        settings = Settings().offline()
        # With the dense arm: the API's evidence carries no text, its passages (which need it) do.
        async with build_pipeline(settings, use_llm=False) as pipe:
            app = create_app(
                settings,
                api_settings=ApiSettings(rate_limit_per_minute=0),
                pipeline=pipe,
                answerer=Answerer(llm),
            )
            async with app.router.lifespan_context(app):
                transport = httpx.ASGITransport(app=app)
                monkeypatch.setattr(
                    medrgb_suite,
                    "_http_client",
                    lambda _url: httpx.AsyncClient(
                        transport=transport, base_url="http://test", event_hooks={"request": [record]}
                    ),
                )
                monkeypatch.setattr(medrgb_suite, "build_llm", lambda _settings: llm)
                monkeypatch.setattr(medrgb_suite, "draw_sample", lambda _opts, _p: (list(SERVER_ITEMS), {}))
                opts = RunOptions(
                    out_dir=tmp_path,
                    server_url="http://test",
                    params={"scenarios": "standard,sufficiency", "rho": "0,100", "k": 3},
                )
                return await run_medrgb(opts)

    result = asyncio.run(main())
    standard = [p for p in sent if "documents" not in p]
    product = [p for p in sent if "documents" in p]
    assert len(standard) == 2 and all(p["max_documents"] == 3 for p in standard)
    assert len(product) == 4 and all(
        p["documents_mode"] == "replace" and p["allow_insufficient"] for p in product
    )
    assert all(p["options"]["D"] == INSUFFICIENT_OPTION for p in product)
    records = {r["key"]: r for r in map(json.loads, (tmp_path / "items.jsonl").read_text().splitlines())}
    art = json.loads((tmp_path / "medrgb_artifacts.json").read_text())
    # rho=100: the product got exactly the question's own retrieved evidence, as documents.
    own = [d["pmid"] for d in art["evidence"]["pubmedqa:26163474"]]
    first_at_100 = next(
        p
        for p in product
        if p["question"].startswith("Is there") and {d["pmid"] for d in p["documents"]} <= set(own)
    )
    assert len(first_at_100["documents"]) == len(own) > 0
    assert records["standard|pubmedqa:26163474"]["predicted"] == "A"
    assert result.metrics["standard"]["accuracy"] == 1.0
    assert result.metrics["sufficiency"]["by_rho"]["100"]["product"]["accuracy"] == 1.0


def test_deterministic_rewriter_param_swaps_the_understand_stage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from retrieval.understand import QueryUnderstander

    result, pipeline = _run(
        tmp_path,
        monkeypatch,
        ScriptedLLM(reader),
        params={"scenarios": "standard", "rewriter": "deterministic"},
    )
    assert isinstance(pipeline.understander, QueryUnderstander) and pipeline.understander.llm is None
    assert result.metrics["standard"]["accuracy"] == 1.0
    assert any("deterministic rewriter" in note for note in result.notes)


def test_generation_rejects_copied_format_placeholders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eval.medrgb import CounterfactualOutput, SubQAOutput

    with pytest.raises(ValueError, match="placeholder"):
        SubQAOutput.model_validate(
            {"sub_question": "<a question answered by this document>", "sub_answer": "x"}
        )
    with pytest.raises(ValueError, match="placeholder"):
        CounterfactualOutput.model_validate({"new_answer": "<the incorrect answer>", "new_document": "d"})
    assert SubQAOutput.model_validate({"sub_question": " Q? ", "sub_answer": "<5 mm"}).sub_question == "Q?"

    def copying(prompt: str) -> Reply:
        if "create a sub Q-A pair" in prompt:
            return {
                "sub_question": "<a question answered by this document>",
                "sub_answer": "<a short string>",
            }
        return reader(prompt)

    result, _ = _run(
        tmp_path, monkeypatch, ScriptedLLM(copying), params={"scenarios": "integration", "rho": "100"}
    )
    assert result.metrics["generation"]["subqa"] == {"attempted": 10, "ok": 0, "failed": 10, "extractive": 0}
    at100 = result.metrics["integration"]["by_rho"]["100"]
    # No sub-QA pair, so no signal document qualifies: the contexts are short and there is nothing to grade.
    assert at100["short_contexts"] == 2 and at100["n_sub"] == 0 and at100["sub_em"] is None
    assert at100["empty_contexts"] == 2 and at100["accuracy"] == 0.0
    assert any("were empty" in note for note in result.notes)


def test_sampling_frame_names_one_file_for_every_dataset() -> None:
    from eval.medrgb import draw_sample
    from eval.medrgb._data import _Params
    from eval.mirage import find_benchmark

    bench = find_benchmark()
    if bench is None:
        pytest.skip("MIRAGE benchmark.json not found")
    opts = RunOptions(out_dir=Path("."), limit=2, subsets=("medqa", "bioasq"), seed=3)
    p = _Params.parse({})
    _items, frame = draw_sample(opts, p)
    assert set(frame) == {"medqa", "bioasq"}
    for v in frame.values():
        # The same full benchmark for both (no cancer-enriched copy for some and the full file for others).
        assert v["drawn_from"] == f"MIRAGE benchmark.json ({bench})"
        assert v["sampled"] == 2 and v["population"] > 100 and v["seed"] == 3
