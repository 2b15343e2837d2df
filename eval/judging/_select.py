"""The judge of a judged suite: which model grades, whether it is the reader, and the refusal when it is."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eval import EvalInputError, RunOptions, describe_llm, eval_settings, judge_settings
from llm import LLMSettings, build_llm

if TYPE_CHECKING:
    from llm import LLMClient

__all__ = [
    "SELF_JUDGE_WARNING",
    "JudgeChoice",
    "build_judge_llm",
    "judge_notes",
    "llm_identity",
    "parse_llm_spec",
    "resolve_judge",
]

SELF_JUDGE_WARNING = (
    "SELF-JUDGED: the reader model also grades its own answers (--allow-self-judge). The papers use a "
    "separate, stronger judge; these scores are not comparable with theirs."
)


def parse_llm_spec(spec: str, base: LLMSettings | None = None) -> LLMSettings:
    """``none`` | ``embedded[:FILE.gguf]`` | ``openai[:MODEL[@BASE_URL]]`` over ``base`` (env defaults).

    ``openai:gpt-4o-mini@https://api.example/v1`` sets backend, model and URL; ``openai`` alone keeps the
    model and URL of ``base`` (``COMETA_LLM__*`` or ``COMETA_JUDGE_LLM__*``). Keys never go in a spec.
    """
    settings = base if base is not None else LLMSettings()
    backend, _, rest = spec.strip().partition(":")
    if backend not in ("none", "embedded", "openai"):
        raise EvalInputError(
            f"an LLM is none, embedded, embedded:FILE.gguf, openai or openai:MODEL@URL; got {spec!r}"
        )
    update: dict[str, Any] = {"backend": backend}
    if rest:
        if backend == "none":
            raise EvalInputError(f"'none' takes no model, got {spec!r}")
        if backend == "embedded":
            update["embedded_model_path"] = Path(rest)
        else:
            model, _, url = rest.partition("@")
            if model:
                update["model"] = model
            if url:
                if not url.startswith(("http://", "https://")):
                    raise EvalInputError(f"the URL of {spec!r} must be http(s)")
                update["base_url"] = url
    return settings.model_copy(update=update)


def llm_identity(settings: LLMSettings) -> tuple[str, ...]:
    """What makes two LLM settings the same model: backend and model file, or backend, model and URL.

    Sampling settings do not count: the same weights at another temperature still grade themselves.
    """
    if settings.backend == "none":
        return ("none",)
    if settings.backend == "embedded":
        return ("embedded", str(settings.embedded_model_path or "bundled-gemma3-270m"))
    return ("openai", settings.model, (settings.base_url or "").rstrip("/"))


@dataclass(frozen=True)
class JudgeChoice:
    """The resolved judge of one run."""

    settings: LLMSettings  # the judge's settings (the reader's when self-judged)
    self_judged: bool  # the judge is the reader model (allowed only with --allow-self-judge)
    reader: dict[str, Any]  # describe_llm of the reader, for reports
    judge: dict[str, Any]  # describe_llm of the judge

    def metrics(self) -> dict[str, Any]:
        """The JSON block every judged suite puts in result.json."""
        return {"reader": self.reader, "judge": self.judge, "self_judged": self.self_judged}


def resolve_judge(opts: RunOptions, suite: str, *, reader_in_process: bool = True) -> JudgeChoice:
    """The judge for ``suite``: ``--judge-llm`` / ``COMETA_JUDGE_LLM__*``, else the reader when allowed.

    Raises :class:`EvalInputError` (the CLI's exit 2) when the judge would be the reader and
    ``opts.allow_self_judge`` is off, or when there is no model to judge with at all.
    ``reader_in_process=False`` (answers from ``--server``): the reader is the server's model, unknown here,
    so only an explicit judge equal to the local ``--llm`` counts as self-judging.
    """
    settings = eval_settings(opts)
    reader = settings.llm
    judge = judge_settings(opts)
    hint = (
        f"{suite} grades answers with a judge model: pass --judge-llm openai:MODEL@URL (or set "
        "COMETA_JUDGE_LLM__BACKEND/MODEL/BASE_URL) to a model other than the reader"
    )
    if judge is None or judge.backend == "none":
        if reader.backend == "none":
            raise EvalInputError(f"{hint}; no LLM is configured at all (--llm, --judge-llm)")
        if not opts.allow_self_judge:
            raise EvalInputError(
                f"{hint}, or --allow-self-judge to let the reader grade itself (the report is marked)"
            )
        return JudgeChoice(reader, True, describe_llm(reader), describe_llm(reader))
    same = reader.backend != "none" and llm_identity(judge) == llm_identity(reader)
    if same and not opts.allow_self_judge:
        raise EvalInputError(
            f"the judge ({'/'.join(llm_identity(judge))}) is the reader model. {hint}, or pass "
            "--allow-self-judge (the report is marked)"
        )
    reader_desc = describe_llm(reader)
    if not reader_in_process:  # the answers come from a server; the local LLM answers only what runs here
        reader_desc = {"backend": "server", "url": opts.server_url, "local": reader_desc}
    return JudgeChoice(judge, same, reader_desc, describe_llm(judge))


def build_judge_llm(choice: JudgeChoice, reader: LLMClient | None) -> LLMClient:
    """The judge's client: the reader's own client when self-judged, else a new one (the caller closes it)."""
    if choice.self_judged and reader is not None:
        return reader
    client = build_llm(choice.settings)
    if client is None:  # pragma: no cover - resolve_judge never returns a "none" judge
        raise EvalInputError("the judge LLM could not be built")
    return client


def judge_notes(choice: JudgeChoice, reader_name: str | None, judge_name: str | None) -> list[str]:
    """The report lines naming both models, and the self-judging mark."""
    lines = [f"Reader: {reader_name or choice.reader}. Judge: {judge_name or choice.judge}."]
    if choice.self_judged:
        lines.insert(0, SELF_JUDGE_WARNING)
    return lines
