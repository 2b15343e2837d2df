"""The judge apart from the reader: LLM specs, identity, and the refusal to let the reader grade itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval import EvalInputError, RunOptions
from eval.judging import SELF_JUDGE_WARNING, judge_notes, llm_identity, parse_llm_spec, resolve_judge
from llm import LLMSettings

READER = LLMSettings(backend="openai", model="reader-8b", base_url="http://gpu:8000/v1")


def test_parse_llm_spec() -> None:
    base = LLMSettings(backend="openai", model="env-model", base_url="http://env:1/v1")
    assert parse_llm_spec("openai", base).model == "env-model"  # the rest from the environment
    spec = parse_llm_spec("openai:llama-70b@http://judge:9000/v1", base)
    assert (spec.backend, spec.model, spec.base_url) == ("openai", "llama-70b", "http://judge:9000/v1")
    assert parse_llm_spec("openai:gpt-x", base).base_url == "http://env:1/v1"
    assert parse_llm_spec("embedded:/m/judge.gguf").embedded_model_path == Path("/m/judge.gguf")
    assert parse_llm_spec("none").backend == "none"
    for bad in ("gpt4", "openai:m@ftp://x", "none:x"):
        with pytest.raises(EvalInputError):
            parse_llm_spec(bad)


def test_identity_ignores_sampling_but_not_weights_or_endpoint() -> None:
    assert llm_identity(READER) == llm_identity(READER.model_copy(update={"temperature": 1.0}))
    assert llm_identity(READER) != llm_identity(READER.model_copy(update={"model": "judge-70b"}))
    assert llm_identity(READER) != llm_identity(READER.model_copy(update={"base_url": "http://other/v1"}))
    assert llm_identity(LLMSettings(backend="embedded")) == ("embedded", "bundled-gemma3-270m")


def test_resolve_judge_refuses_self_judging_unless_allowed(tmp_path: Path) -> None:
    with pytest.raises(EvalInputError, match="--allow-self-judge"):
        resolve_judge(RunOptions(out_dir=tmp_path, llm=READER), "ccrs")
    with pytest.raises(EvalInputError, match="is the reader model"):
        resolve_judge(RunOptions(out_dir=tmp_path, llm=READER, judge_llm=READER), "ccrs")
    with pytest.raises(EvalInputError, match="no LLM is configured"):
        resolve_judge(RunOptions(out_dir=tmp_path, llm=LLMSettings(backend="none")), "ccrs")
    allowed = resolve_judge(RunOptions(out_dir=tmp_path, llm=READER, allow_self_judge=True), "ccrs")
    assert allowed.self_judged and allowed.settings == READER
    assert judge_notes(allowed, "reader-8b", "reader-8b")[0] == SELF_JUDGE_WARNING


def test_resolve_judge_with_a_separate_judge(tmp_path: Path) -> None:
    judge = READER.model_copy(update={"model": "judge-70b"})
    choice = resolve_judge(RunOptions(out_dir=tmp_path, llm=READER, judge_llm=judge), "ccrs")
    assert not choice.self_judged and choice.settings.model == "judge-70b"
    assert choice.metrics() == {
        "reader": choice.reader,
        "judge": choice.judge,
        "self_judged": False,
    }
    assert (choice.reader["model"], choice.judge["model"]) == ("reader-8b", "judge-70b")
    notes = judge_notes(choice, "reader-8b", "judge-70b")
    assert notes == ["Reader: reader-8b. Judge: judge-70b."]
    # A judge with no reader at all (answers from a server, or extractive only) is fine.
    alone = resolve_judge(RunOptions(out_dir=tmp_path, llm=LLMSettings(backend="none"), judge_llm=judge), "x")
    assert not alone.self_judged


def test_the_judge_comes_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMETA_JUDGE_LLM__BACKEND", "openai")
    monkeypatch.setenv("COMETA_JUDGE_LLM__MODEL", "env-judge")
    choice = resolve_judge(RunOptions(out_dir=tmp_path, llm=READER), "ccrs")
    assert choice.settings.model == "env-judge" and not choice.self_judged
