"""``cometa eval backbones``: the QA suite per reader LLM, and Table 6's weighted averages and gains."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.answer import Answerer
from app.container import build_pipeline
from app.pipeline import Pipeline
from eval import EvalInputError, RunOptions, qa
from eval.compare import backbone_label, run_backbones
from llm import LLMSettings, LLMUnavailable
from tests._fakes import ScriptedLLM, boolean_only_settings


def _items() -> list[Any]:
    opts = RunOptions(out_dir=Path("."), limit=2, seed=0, subsets=("pubmedqa",), params={"source": "mirage"})
    try:
        return qa.load_qa_items(opts)
    except EvalInputError as exc:
        pytest.skip(f"MIRAGE items unavailable: {exc}")


async def test_two_backbones_one_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    items = _items()
    first = items[0]

    def reader(good_at: int) -> ScriptedLLM:
        """Right on the first ``good_at`` questions (in MIRAGE order), wrong elsewhere."""

        def script(prompt: str) -> Any:
            if "POTENTIAL CHOICES" not in prompt:
                return LLMUnavailable("no rewriter in this test")
            for i, it in enumerate(items):
                if it.question in prompt:
                    right = i < good_at
                    letter = it.answer if right else next(k for k in it.options if k != it.answer)
                    return {"step_by_step_thinking": ".", "answer_choice": letter}
            return {"step_by_step_thinking": ".", "answer_choice": first.answer}

        return ScriptedLLM(script)

    models = {"small-8b": reader(1), "big-70b": reader(2)}
    # Dense arm off (no index build) and the gate off: with the Boolean arm alone one of these MIRAGE
    # questions finds only loosely related studies (coverage 1/3) and abstains; this test is about the
    # answers' parsing and the report, the gate's own tests and calibration are elsewhere.
    settings = boolean_only_settings(gate=False)

    async def services(opts: RunOptions) -> tuple[Pipeline, Answerer, Any]:
        assert opts.llm is not None
        llm = models[opts.llm.model]
        pipeline = build_pipeline(settings, llm=llm, use_dense=False, use_passages=False)  # type: ignore[arg-type]
        return pipeline, Answerer(llm), llm  # type: ignore[arg-type]

    monkeypatch.setattr(qa, "build_offline_services", services)
    opts = RunOptions(out_dir=tmp_path, limit=2, subsets=("pubmedqa",), params={"source": "mirage"})
    backbones = [LLMSettings(backend="openai", model=m) for m in models]
    result = await run_backbones(opts, backbones)
    assert result.metrics["labels"] == ["small-8b", "big-70b"]
    rows = {(r[0], r[1]): r for r in result.tables[0].rows}
    # Naive RAG retrieves nothing with the dense arm off: 0 %; CoMeta: 1/2 and 2/2; gains +50 and +100.
    assert rows[("small-8b", "naive RAG (top-5 docs)")][3] == "0.00"
    assert rows[("small-8b", "CoMeta pipeline")][3:] == ["50.00", "50.00", "+50.00"]
    assert rows[("big-70b", "CoMeta pipeline")][3:] == ["100.00", "100.00", "+100.00"]
    # Each backbone has its own resumable run folder and report.
    for label in ("small-8b", "big-70b"):
        assert (tmp_path / label / "items.jsonl").is_file()
        assert json.loads((tmp_path / label / "result.json").read_text())["suite"] == "qa"
    assert backbone_label(LLMSettings(backend="openai", model="meta/Llama 3")) == "meta_Llama_3"
    with pytest.raises(EvalInputError, match="share a name"):
        await run_backbones(opts, [backbones[0], backbones[0]])


def test_the_cli_names_the_backbones_in_the_system_not_the_params(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    import eval.cli as cli

    seen: dict[str, RunOptions] = {}

    def capture(suite: str, load: Any, opts: RunOptions) -> list[Path]:
        seen[suite] = opts
        return []

    monkeypatch.setattr(cli, "run_suite", capture)
    args = [
        "backbones",
        "--backbone",
        "openai:a@http://127.0.0.1:9",
        "--backbone",
        "openai:b@http://127.0.0.1:9",
    ]
    result = CliRunner().invoke(cli.eval_app, [*args, "--param", "source=mirage", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    opts = seen["backbones"]
    assert dict(opts.system) == {"backbones": ["openai:a@http://127.0.0.1:9", "openai:b@http://127.0.0.1:9"]}
    assert dict(opts.params) == {"source": "mirage"}
