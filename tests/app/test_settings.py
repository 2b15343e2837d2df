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


def test_access_key_fields_keep_their_env_names_at_the_top_and_per_issuer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Both sections share JwtKeySettings: the env names and the HS-in-algorithms refusal stay per section.
    monkeypatch.setenv("COMETA_ACCESS__JWT_SECRET", "s3cret")
    monkeypatch.setenv("COMETA_ACCESS__ALGORITHMS", '["ES256"]')
    monkeypatch.setenv("COMETA_ACCESS__ISSUERS", '[{"issuer": "https://idp.a", "jwks_file": "/tmp/a.jwks"}]')
    access = Settings().access
    assert access.jwt_secret is not None and access.jwt_secret.get_secret_value() == "s3cret"
    assert access.algorithms == ["ES256"] and access.keys_given == 1 and access.verifies_tokens
    (issuer,) = access.issuers
    assert str(issuer.jwks_file) == "/tmp/a.jwks" and issuer.keys_given == 1
    monkeypatch.setenv(
        "COMETA_ACCESS__ISSUERS", '[{"issuer": "https://idp.a", "jwt_secret": "x", "algorithms": ["HS256"]}]'
    )
    with pytest.raises(ValueError, match="algorithms are for public keys"):
        Settings()
