"""What MedRGB asks the LLM: the readers' and generators' output schemas, and one call that never raises."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from app import ChoiceOutput
from eval import StageTimes
from llm import LLMClient, LLMError, LLMOutputInvalid
from prompts import PromptTemplate

M = TypeVar("M", bound=BaseModel)


# --- LLM output schemas -------------------------------------------------------------------------------


def _schema_extra(schema: dict[str, Any], cls: type[Any]) -> None:
    # Option letters and document numbers into the wire schema: grammar-constrained backends then can
    # only emit valid ones (the pydantic validators still check every backend).
    props = schema.get("properties", {})
    letters = tuple(getattr(cls, "allowed", ()))
    if letters and isinstance(props.get("answer_choice"), dict):
        props["answer_choice"]["enum"] = list(letters)
    n_docs = getattr(cls, "n_docs", 0)
    for name in ("relevant_documents", "incorrect_documents"):
        if n_docs and isinstance(props.get(name), dict):
            props[name]["items"] = {"type": "integer", "enum": list(range(1, n_docs + 1))}


class _ChoiceBase(BaseModel):
    """``answer_choice`` validated exactly as the product's :class:`ChoiceOutput` does ("A", "(a)", "yes")."""

    model_config = ConfigDict(json_schema_extra=_schema_extra)

    allowed: ClassVar[tuple[str, ...]] = ()
    choice: ClassVar[type[ChoiceOutput]] = ChoiceOutput
    n_docs: ClassVar[int] = 0

    @classmethod
    def for_question(cls: type[M], options: Mapping[str, str], n_docs: int = 0) -> type[M]:
        namespace = {
            "allowed": tuple(options),
            "choice": ChoiceOutput.for_options(options),
            "n_docs": n_docs,
            "__module__": __name__,
        }
        return cast("type[M]", type(cls.__name__, (cls,), namespace))

    @field_validator("answer_choice", mode="before", check_fields=False)
    @classmethod
    def _letter(cls, value: Any) -> str:
        try:
            return cls.choice.model_validate({"answer_choice": value}).answer_choice
        except ValidationError as exc:
            raise ValueError(exc.errors()[0]["msg"]) from None

    @classmethod
    def _doc_numbers(cls, value: Any) -> list[int]:
        if not isinstance(value, list):
            raise ValueError("a list of document numbers is required")
        out: list[int] = []
        for v in value:
            if isinstance(v, bool) or not isinstance(v, int | str) or not str(v).strip().isdigit():
                raise ValueError(f"{v!r} is not a document number")
            n = int(v)
            if cls.n_docs and not 1 <= n <= cls.n_docs:
                raise ValueError(f"document {n} is not one of 1..{cls.n_docs}")
            if n not in out:
                out.append(n)
        return out


class SufficiencyOutput(_ChoiceBase):
    relevant_documents: list[int] = Field(default_factory=list)
    step_by_step_thinking: str = ""
    answer_choice: str

    @field_validator("relevant_documents", mode="before")
    @classmethod
    def _docs(cls, value: Any) -> list[int]:
        return cls._doc_numbers(value)


class IntegrationOutput(_ChoiceBase):
    sub_answers: list[str] = Field(default_factory=list)
    step_by_step_thinking: str = ""
    answer_choice: str


class RobustnessOutput(_ChoiceBase):
    incorrect_documents: list[int] = Field(default_factory=list)
    sub_answers: list[str] = Field(default_factory=list)
    step_by_step_thinking: str = ""
    answer_choice: str

    @field_validator("incorrect_documents", mode="before")
    @classmethod
    def _docs(cls, value: Any) -> list[int]:
        return cls._doc_numbers(value)


_PLACEHOLDER = re.compile(r"^<[^<>]*>$")


def _generated_text(value: str) -> str:
    text = value.strip()
    if not text:
        raise ValueError("empty")
    if _PLACEHOLDER.match(text):  # "<a short string ...>": the format example copied, not an answer
        raise ValueError("the prompt's format placeholder, copied")
    return text


class SubQAOutput(BaseModel):
    sub_question: str = Field(min_length=1)
    sub_answer: str = Field(min_length=1)

    @field_validator("sub_question", "sub_answer")
    @classmethod
    def _text(cls, value: str) -> str:
        return _generated_text(value)


class CounterfactualOutput(BaseModel):
    new_answer: str = Field(min_length=1)
    new_document: str = Field(min_length=1)

    @field_validator("new_answer", "new_document")
    @classmethod
    def _text(cls, value: str) -> str:
        return _generated_text(value)


class JudgeOutput(BaseModel):
    score: float

    @field_validator("score")
    @classmethod
    def _grade(cls, value: float) -> float:
        if value not in (0.0, 0.5, 1.0):
            raise ValueError("score must be 0, 0.5 or 1")
        return value


# --- LLM calls ----------------------------------------------------------------------------------------


@dataclass
class _Call:
    """What one scenario call did: timings per stage (for the record) and failure counters."""

    timings: StageTimes = field(default_factory=StageTimes)
    parse_failures: dict[str, int] = field(default_factory=dict)
    llm_errors: dict[str, int] = field(default_factory=dict)

    def count(self, table: dict[str, int], stage: str) -> None:
        table[stage] = table.get(stage, 0) + 1


async def _complete(
    llm: LLMClient,
    prompt: PromptTemplate,
    schema: type[M],
    values: Mapping[str, object],
    call: _Call,
    stage: str,
    max_tokens: int,
) -> M | None:
    """The parsed output, or None (counted as a parse failure or an LLM error under ``stage``)."""
    messages = prompt.render(**values)
    started = time.perf_counter()
    tokens = 0
    try:
        result = await llm.complete_json(
            messages, schema, prompt_version=prompt.id, max_tokens=max_tokens, temperature=0.0
        )
        tokens = result.prompt_tokens + result.completion_tokens
        return result.value
    except LLMOutputInvalid:
        call.count(call.parse_failures, stage)
        return None
    except LLMError:
        call.count(call.llm_errors, stage)
        return None
    finally:
        call.timings.add(stage, (time.perf_counter() - started) * 1000, tokens)
