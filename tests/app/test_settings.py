"""The one Settings tree: every field of every section says what it is (``Field(description=...)``)."""

from __future__ import annotations

import typing
from collections.abc import Iterator

import pytest
from pydantic import BaseModel

from app.settings import Settings


def _models(annotation: object) -> Iterator[type[BaseModel]]:
    """The pydantic models an annotation holds: itself, or inside Optional/list/tuple/dict."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
        return
    for arg in typing.get_args(annotation):
        yield from _models(arg)


def _undescribed(model: type[BaseModel], where: str, seen: set[type[BaseModel]]) -> Iterator[str]:
    if model in seen:
        return
    seen.add(model)
    for name, field in model.model_fields.items():
        if not (field.description or "").strip():
            yield f"{where}.{name}"
        for inner in _models(field.annotation):
            yield from _undescribed(inner, f"{where}.{name}", seen)


def test_every_setting_has_a_description() -> None:
    assert list(_undescribed(Settings, "Settings", set())) == []


def test_the_walk_reaches_nested_sections() -> None:
    reached: set[type[BaseModel]] = set()
    list(_undescribed(Settings, "Settings", reached))
    names = {m.__name__ for m in reached}
    assert {
        "CacheSettings",
        "FaultSettings",
        "NodeSettings",
        "CollectionSearchSettings",
        "AnswerSettings",
    } <= names


def test_answer_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMETA_ANSWER__MAX_TOKENS", "300")
    assert Settings().answer.max_tokens == 300
