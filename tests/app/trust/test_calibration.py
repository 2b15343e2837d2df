"""The gate's calibration follows the encoder (issue 29): an encoder of another score scale gets the dense
thresholds moved to its scale and the same decisions on the shipped calibration pairs; a threshold set
explicitly wins; /readyz and every /ask response name the calibration in force."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt
import pytest

from app import ApiSettings
from app.api import create_app
from app.container import build_pipeline
from app.factories import Models
from app.settings import Settings
from app.trust import (
    DENSE_THRESHOLDS,
    CalibrationError,
    EvidenceSignals,
    GateSettings,
    assess_evidence,
    calibration_pairs,
    compute_reference,
    load_reference,
    pair_similarities,
    resolve_calibration,
)
from core import Encoder, OnProgress
from tests._handbooks import BowEncoder
from tests.retrieval.embed.test_world_index import write_world


class Rescaled:
    """``base`` with every question-study score turned into ``a * score + b``: the same ranking on another
    scale (one extra dimension carries ``b``). Counts its document encodes."""

    def __init__(self, base: Encoder, a: float, b: float) -> None:
        self.base, self.a, self.b = base, a, b
        self.name = f"test:rescaled({base.name}, {a}, {b})"
        self.dim = base.dim + 1
        self.query_max_length = base.query_max_length
        self.doc_max_length = base.doc_max_length
        self.doc_calls = 0

    def _with(self, m: npt.NDArray[np.float32], scale: float) -> npt.NDArray[np.float32]:
        extra = np.full((m.shape[0], 1), math.sqrt(self.b), np.float32)
        return np.hstack([m * scale, extra]).astype(np.float32)

    def encode_queries(self, texts: Sequence[str], batch_size: int = 32) -> npt.NDArray[np.float32]:
        return self._with(self.base.encode_queries(texts, batch_size), self.a)

    def encode_documents(
        self, docs: Sequence[tuple[str, str]], batch_size: int = 32, on_progress: OnProgress | None = None
    ) -> npt.NDArray[np.float32]:
        self.doc_calls += 1
        return self._with(self.base.encode_documents(docs, batch_size, on_progress), 1.0)


@pytest.fixture(scope="module")
def bow_reference() -> dict[str, Any]:
    """A reference measured with the bag-of-words encoder: the test's stand-in for MiniLM (no model)."""
    return compute_reference(BowEncoder())


AUTO = GateSettings(calibration="auto")


def test_the_shipped_pairs_are_relevant_near_misses_and_unrelated() -> None:
    pairs = calibration_pairs()
    kinds = {k: sum(p.kind == k for p in pairs) for k in ("relevant", "near_miss", "unrelated")}
    assert kinds == {"relevant": 40, "near_miss": 110, "unrelated": 200}
    assert load_reference()["pairs"] == kinds
    own: dict[str, set[tuple[str, str]]] = {}
    for p in pairs:
        if p.kind != "unrelated":
            own.setdefault(p.question, set()).add(p.study)
    assert not [p for p in pairs if p.kind == "unrelated" and p.study in own.get(p.question, set())]
    # MiniLM tells them apart, which is what the thresholds were set between.
    median = load_reference()["median"]
    assert median["relevant"] > median["near_miss"] > median["unrelated"]


@pytest.mark.parametrize(("a", "b"), [(0.15, 0.85), (20.0, 50.0)])
def test_derived_thresholds_move_with_the_scale(
    bow_reference: dict[str, Any], tmp_path: Path, a: float, b: float
) -> None:
    encoder = Rescaled(BowEncoder(), a, b)
    found = resolve_calibration(AUTO, encoder, cache_dir=tmp_path, reference=bow_reference)
    assert found.source == "derived" and found.encoder == encoder.name and encoder.name in found.name
    for key in DENSE_THRESHOLDS:
        given, derived = getattr(AUTO, key), found.thresholds[key]
        if given >= 1:  # a switch ("always"), beyond any cosine: beyond any score on the new scale too
            assert derived == math.inf, key
        else:  # the same percentile (past the set's extremes, the same distance rescaled): a * t + b
            assert derived == pytest.approx(a * given + b, abs=1e-3 * a), key
    gate = found.apply(AUTO)
    assert gate.min_dense == found.thresholds["min_dense"] and gate.min_coverage == AUTO.min_coverage


def _decision(signals: EvidenceSignals, gate: GateSettings) -> tuple[str, tuple[str, ...]]:
    """The verdict and its reasons, less the similarity each reason quotes (on its own scale)."""
    v = assess_evidence(signals, gate)
    return v.verdict, tuple(r.split(" (")[0] for r in v.reasons)


def test_the_same_pairs_get_the_same_decisions_under_both_encoders(
    bow_reference: dict[str, Any], tmp_path: Path
) -> None:
    base, scaled = BowEncoder(), Rescaled(BowEncoder(), 0.15, 0.85)
    derived = resolve_calibration(AUTO, scaled, cache_dir=tmp_path, reference=bow_reference).apply(AUTO)
    pairs = calibration_pairs()
    old, new = pair_similarities(base, pairs), pair_similarities(scaled, pairs)
    assert float(new.min()) >= 0.85 - 1e-4 and float(new.max()) <= 1.0 + 1e-4
    finite = [getattr(AUTO, k) for k in DENSE_THRESHOLDS if abs(getattr(AUTO, k)) < 1]
    compared = 0
    for s_old, s_new in zip(old.tolist(), new.tolist(), strict=True):
        if min(abs(s_old - t) for t in finite) < 1e-3:
            continue  # on a threshold: float noise may tip it either way
        for tier in ("strict", "relaxed", "generic"):
            for absent in (0, 1):
                before = _decision(
                    EvidenceSignals(5, s_old, None, tier, 0.9, absent, 0.2, absent, absent), AUTO
                )
                after = _decision(
                    EvidenceSignals(5, s_new, None, tier, 0.9, absent, 0.2, absent, absent), derived
                )
                assert before == after, (s_old, tier, absent)
                compared += 1
    assert compared > 6 * 300  # nearly every pair


def test_explicit_thresholds_win_and_the_reference_encoder_keeps_them(
    bow_reference: dict[str, Any], tmp_path: Path
) -> None:
    pinned = GateSettings(calibration="auto", min_dense=42.0)
    found = resolve_calibration(
        pinned, Rescaled(BowEncoder(), 20.0, 50.0), cache_dir=tmp_path, reference=bow_reference
    )
    assert found.thresholds["min_dense"] == 42.0 and found.pinned == ("min_dense",)
    assert found.thresholds["strong_dense"] != pinned.strong_dense
    same = resolve_calibration(AUTO, BowEncoder(), cache_dir=tmp_path, reference=bow_reference)
    assert same.source == "profile" and dict(same.thresholds) == {
        k: getattr(AUTO, k) for k in DENSE_THRESHOLDS
    }
    as_set = resolve_calibration(
        GateSettings(calibration="profile"), Rescaled(BowEncoder(), 20.0, 50.0), profile="offline"
    )
    assert as_set.name == "as set (profile offline)" and as_set.thresholds["min_dense"] == 0.4


def test_scores_are_cached_by_encoder_and_a_file_pins_them(
    bow_reference: dict[str, Any], tmp_path: Path
) -> None:
    encoder = Rescaled(BowEncoder(), 0.15, 0.85)
    first = resolve_calibration(AUTO, encoder, cache_dir=tmp_path, reference=bow_reference)
    again = resolve_calibration(AUTO, encoder, cache_dir=tmp_path, reference=bow_reference)
    assert encoder.doc_calls == 1 and again.thresholds == first.thresholds and again.id == first.id
    other = Rescaled(BowEncoder(), 0.3, 0.5)  # another identity: scored again
    assert resolve_calibration(AUTO, other, cache_dir=tmp_path, reference=bow_reference).id != first.id
    # What /readyz shows can be written to a file and pinned (JSON has no infinity: written as a string).
    pinned = tmp_path / "medcpt-gate.json"
    pinned.write_text(json.dumps({"name": "pinned", **first.public()}))
    from_file = resolve_calibration(GateSettings(calibration=str(pinned)), encoder)
    assert from_file.source == "file" and from_file.thresholds == first.thresholds
    with pytest.raises(CalibrationError, match="made for"):
        resolve_calibration(GateSettings(calibration=str(pinned)), BowEncoder())
    with pytest.raises(ValueError, match="calibration"):
        GateSettings(calibration="sometimes")


def test_profiles_name_their_calibration_and_the_environment_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings(profile="offline").gate.calibration == "profile"
    medcpt = Settings(profile="medcpt").gate
    assert medcpt.calibration == "auto" and not medcpt.model_fields_set & set(DENSE_THRESHOLDS)
    # offline's MiniLM thresholds are no explicit choice for MedCPT's encoder, whichever way it is combined.
    for combined in (Settings(profile="offline,medcpt"), Settings(profile="medcpt").offline()):
        assert combined.gate.calibration == "auto"
        assert not combined.gate.model_fields_set & set(DENSE_THRESHOLDS)
    monkeypatch.setenv("COMETA_GATE__MIN_DENSE", "61.5")
    gate = Settings(profile="offline,medcpt").gate
    assert gate.min_dense == 61.5 and "min_dense" in gate.model_fields_set


async def test_readyz_and_ask_name_the_calibration_derived_at_start_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    world = write_world(tmp_path / "world", 48)
    settings = Settings().offline()
    settings = settings.model_copy(
        update={
            "local_server": settings.local_server.model_copy(update={"corpus_dir": world}),
            "dense": settings.dense.model_copy(update={"index_dir": tmp_path / "idx"}),
            "gate": GateSettings(calibration="auto"),
        }
    )
    encoder = Rescaled(BowEncoder(), 20.0, 50.0)
    pipeline = build_pipeline(
        settings, use_llm=False, use_passages=False, models=Models(settings, encoder=encoder)
    )
    assert pipeline.calibration_status()["ok"] is False  # not derived before the warm-up
    app = create_app(settings, api_settings=ApiSettings(rate_limit_per_minute=0), pipeline=pipeline)
    try:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
                found = await pipeline.calibration()  # what the lifespan's warm-up resolves
                ready = (await client.get("/readyz")).json()["checks"]["calibration"]
                assert (
                    ready["ok"] is True and ready["source"] == "derived" and ready["encoder"] == encoder.name
                )
                assert ready["id"] == found.id and ready["thresholds"]["absent_technical_max_dense"] == "+inf"
                assert ready["thresholds"]["min_dense"] > 50  # on the new scale, not MiniLM's 0.4
                assert pipeline.gate.min_dense == ready["thresholds"]["min_dense"]
                r = await client.post("/ask", json={"question": "does aspirin prevent heart attacks"})
                assert r.status_code == 200 and r.json()["calibration"] == found.label
                assert found.label.startswith(f"derived for {encoder.name} from bundled set v1")
    finally:
        await pipeline.aclose()


@pytest.mark.slow
def test_the_stored_reference_is_what_minilm_scores() -> None:
    """pyserini style: recomputing the committed reference with the offline MiniLM gives its values."""
    from retrieval.embed import DenseSettings, load_encoder

    encoder = load_encoder(DenseSettings(encoder="sentence-transformers", st_model=None))
    fresh, stored = compute_reference(encoder), load_reference()
    assert (fresh["encoder"], fresh["set"], fresh["pairs"]) == (
        stored["encoder"],
        stored["set"],
        stored["pairs"],
    )
    np.testing.assert_allclose(fresh["quantiles"], stored["quantiles"], atol=1e-3)
    # And MiniLM itself, rescaled, gets its own thresholds moved exactly: the shipped reference in use.
    scaled = resolve_calibration(AUTO, Rescaled(encoder, 0.15, 0.85), cache_dir=None)
    for key in DENSE_THRESHOLDS:
        given = getattr(AUTO, key)
        if given < 1:
            assert scaled.thresholds[key] == pytest.approx(0.15 * given + 0.85, abs=2e-4), key
