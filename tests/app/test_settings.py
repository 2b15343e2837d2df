"""The one Settings tree: every field of every section says what it is (``Field(description=...)``)."""

from __future__ import annotations

import json
import os
import typing
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from app.settings import (
    AnswerSettings,
    GateSettings,
    LocalCorpusSettings,
    LocalServerEnv,
    ProfileError,
    Settings,
    load_profile,
    local_server_settings,
    profile_names,
)
from app.trust import DENSE_THRESHOLDS
from eval import EvalSettings


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


# The service's tree, and the trees read apart: the local E-utilities server's and the evaluation suites'.
TREES: tuple[type[BaseModel], ...] = (Settings, LocalServerEnv, EvalSettings)


def test_every_setting_has_a_description() -> None:
    seen: set[type[BaseModel]] = set()
    assert [where for tree in TREES for where in _undescribed(tree, tree.__name__, seen)] == []


def test_the_walk_reaches_nested_sections() -> None:
    reached: set[type[BaseModel]] = set()
    for tree in TREES:
        list(_undescribed(tree, tree.__name__, reached))
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


# --- profiles (COMETA_PROFILE) and the trees read apart --------------------------------------------------


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in [n for n in os.environ if n.startswith("COMETA_")]:
        monkeypatch.delenv(name)
    return monkeypatch


def _unknown_keys(model: type[BaseModel], values: Mapping[str, Any], where: str) -> Iterator[str]:
    for key, value in values.items():
        field = model.model_fields.get(key)
        if field is None:
            yield f"{where}.{key}"
            continue
        if isinstance(value, Mapping):
            for inner in _models(field.annotation):
                yield from _unknown_keys(inner, value, f"{where}.{key}")


def test_the_shipped_profiles_name_real_settings_and_validate(clean_env: pytest.MonkeyPatch) -> None:
    assert profile_names() == ["live", "medcpt", "offline"]
    for name in profile_names():
        profile = load_profile(name)
        assert profile.description and list(_unknown_keys(Settings, profile.settings, name)) == []
        settings = Settings.from_name(name, _env_file=None)
        assert settings.profile == name


def test_the_offline_profile_carries_todays_calibration(clean_env: pytest.MonkeyPatch) -> None:
    offline = Settings.from_name("offline", _env_file=None)
    assert offline.gate == GateSettings(calibration="profile") and "gate" in load_profile("offline").settings
    assert offline.answer.extractive_min_relevance == AnswerSettings().extractive_min_relevance
    assert (offline.eutils.backend, offline.llm.backend) == ("local", "none")
    assert (offline.dense.encoder, offline.dense.st_model, offline.rerank.model) == (
        "sentence-transformers",
        None,
        "bi-encoder",
    )


def test_medcpt_names_its_models_and_derives_its_thresholds(
    clean_env: pytest.MonkeyPatch,
) -> None:
    medcpt = load_profile("medcpt")
    assert "derived at start-up" in medcpt.description
    # The dense thresholds are derived for MedCPT (app.trust calibration); the others are MiniLM's, explicit.
    offline_gate = load_profile("offline").settings["gate"]
    assert medcpt.settings["gate"] == {
        **{k: v for k, v in offline_gate.items() if k not in DENSE_THRESHOLDS},
        "calibration": "auto",
    }
    s = Settings.from_name("medcpt", _env_file=None)
    assert (s.dense.encoder, s.dense.query_model, s.dense.article_model, s.rerank.model) == (
        "medcpt",
        "ncbi/MedCPT-Query-Encoder",
        "ncbi/MedCPT-Article-Encoder",
        "ncbi/MedCPT-Cross-Encoder",
    )


def test_live_is_what_no_profile_gives(clean_env: pytest.MonkeyPatch) -> None:
    live = Settings.from_name("live", _env_file=None).model_dump(exclude={"profile"})
    assert live == Settings(_env_file=None).model_dump(exclude={"profile"})


def test_precedence_keywords_environment_profiles_defaults(
    clean_env: pytest.MonkeyPatch,
) -> None:
    clean_env.setenv("COMETA_PROFILE", "offline")
    clean_env.setenv("COMETA_GATE__MIN_DENSE", "0.3")
    clean_env.setenv("COMETA_RERANK__BATCH_SIZE", "3")
    s = Settings(_env_file=None)
    assert s.gate.min_dense == 0.3 and s.gate.min_coverage == 0.3  # env over profile, profile over default
    assert (s.rerank.model, s.rerank.batch_size, s.eutils.backend) == ("bi-encoder", 3, "local")
    assert Settings(_env_file=None, gate={"min_dense": 0.2}).gate.min_dense == 0.2  # keywords over env
    assert Settings(_env_file=None, profile="medcpt").dense.encoder == "medcpt"  # keyword profile over env's
    clean_env.setenv("COMETA_PROFILE", "offline,medcpt")  # later wins: MedCPT on the local corpus
    s = Settings(_env_file=None)
    assert (s.eutils.backend, s.llm.backend, s.dense.encoder, s.rerank.model) == (
        "local",
        "none",
        "medcpt",
        "ncbi/MedCPT-Cross-Encoder",
    )


def test_a_profile_file_and_an_unknown_profile(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    site = tmp_path / "site.json"
    site.write_text(json.dumps({"description": "ours", "settings": {"gate": {"min_dense": 0.61}}}))
    clean_env.setenv("COMETA_PROFILE", f"medcpt,{site}")
    s = Settings(_env_file=None)
    assert s.gate.min_dense == 0.61 and s.dense.encoder == "medcpt"
    clean_env.setenv("COMETA_PROFILE", "nope")
    with pytest.raises(ProfileError, match="unknown COMETA_PROFILE 'nope'"):
        Settings(_env_file=None)
    site.write_text(json.dumps({"settings": {"gates": {}}}))
    clean_env.setenv("COMETA_PROFILE", str(site))
    with pytest.raises(ProfileError, match="no such settings"):
        Settings(_env_file=None)


def test_offline_applies_the_offline_profile_under_what_was_set(clean_env: pytest.MonkeyPatch) -> None:
    plain = Settings(_env_file=None).offline()
    assert plain.model_dump(exclude={"profile"}) == Settings.from_name("offline", _env_file=None).model_dump(
        exclude={"profile"}
    )
    clean_env.setenv("COMETA_LLM__BACKEND", "embedded")
    clean_env.setenv("COMETA_DENSE__ENCODER", "medcpt")
    clean_env.setenv("COMETA_RERANK__CACHE_MAX_BYTES", "0")
    clean_env.setenv("COMETA_EUTILS__BACKEND", "http")
    s = Settings(_env_file=None).offline()
    assert (s.llm.backend, s.dense.encoder, s.rerank.model, s.rerank.cache_max_bytes) == (
        "embedded",
        "medcpt",
        "bi-encoder",
        0,
    )
    assert s.eutils.backend == "local"  # offline is the local server whatever was set
    for name in ("COMETA_LLM__BACKEND", "COMETA_DENSE__ENCODER"):
        clean_env.delenv(name)
    clean_env.setenv("COMETA_PROFILE", "medcpt")
    s = Settings(_env_file=None).offline()
    assert (s.dense.encoder, s.rerank.model, s.llm.backend) == ("medcpt", "ncbi/MedCPT-Cross-Encoder", "none")


def test_simulator_and_evaluation_settings_apart(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert not {"evaluation", "judge_llm"} & set(Settings.model_fields)
    assert set(LocalCorpusSettings.model_fields) == {"corpus_dir"}
    clean_env.setenv("COMETA_LOCAL_SERVER__CORPUS_DIR", str(tmp_path))
    clean_env.setenv("COMETA_LOCAL_SERVER__RATE_LIMIT", "true")
    clean_env.setenv("COMETA_LOCAL_SERVER__FAULTS__ERROR_500_RATE", "0.5")
    clean_env.setenv("COMETA_EVALUATION__CCRS_TUKEY_B", "500")
    clean_env.setenv("COMETA_JUDGE_LLM__MODEL", "judge-70b")
    assert Settings(_env_file=None).local_server.corpus_dir == tmp_path
    server = local_server_settings()
    assert server.corpus_dir == tmp_path and server.rate_limit and server.faults.error_500_rate == 0.5
    other = LocalCorpusSettings(corpus_dir=tmp_path / "world")
    assert local_server_settings(other).corpus_dir == tmp_path / "world"
    ev = EvalSettings(_env_file=None)
    assert (
        ev.evaluation.ccrs_tukey_b == 500 and ev.judge_llm is not None and ev.judge_llm.model == "judge-70b"
    )


def test_one_rrf_k() -> None:
    names = [
        where for tree in TREES for where in _field_paths(tree, tree.__name__) if where.endswith(".rrf_k")
    ]
    assert names == ["Settings.evidence.rrf_k"]


def _field_paths(model: type[BaseModel], where: str) -> Iterator[str]:
    for name, field in model.model_fields.items():
        yield f"{where}.{name}"
        for inner in _models(field.annotation):
            yield from _field_paths(inner, f"{where}.{name}")


def test_live_names_no_llm_server_so_the_api_never_calls_itself(clean_env: pytest.MonkeyPatch) -> None:
    # Issue 27 #14: the default was http://localhost:8000/v1, the API's own port: /ask posted to itself.
    from llm import build_llm

    live = Settings.from_name("live", _env_file=None)
    assert live.llm.base_url is None and not live.llm.configured and build_llm(live.llm) is None
    clean_env.setenv("COMETA_LLM__BASE_URL", "http://vllm:8000/v1")
    assert Settings(_env_file=None).llm.configured
    clean_env.setenv("COMETA_LLM__BASE_URL", "vllm:8000")
    with pytest.raises(ValueError, match="base_url must be an http"):
        Settings(_env_file=None)
