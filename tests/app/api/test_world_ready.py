"""A world's first dense index build never blocks the API: /healthz answers, /readyz says why not ready."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import httpx
import numpy as np
import numpy.typing as npt
import pytest

from app import ApiSettings
from app.api import create_app
from app.container import build_pipeline
from app.factories import Models
from app.settings import Settings
from core import OnProgress
from retrieval.ncbi import clear_corpus_cache
from tests.retrieval.embed.test_world_index import BagEncoder, write_world

pytestmark = pytest.mark.asyncio


class GatedEncoder(BagEncoder):
    """Encodes its first document batch, then blocks until ``release`` is set: a slow build."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.blocked = threading.Event()

    def encode_documents(
        self, docs: Sequence[tuple[str, str]], batch_size: int = 32, on_progress: OnProgress | None = None
    ) -> npt.NDArray[np.float32]:
        if self.doc_calls >= 1:
            self.blocked.set()
            assert self.release.wait(30), "the test never released the build"
        return super().encode_documents(docs, batch_size, on_progress)


async def _until(check: Callable[[], bool]) -> None:
    async with asyncio.timeout(20):
        while not check():  # noqa: ASYNC110 - the condition is set from the build thread
            await asyncio.sleep(0.05)


async def test_healthz_answers_while_the_first_world_index_builds(tmp_path: Path) -> None:
    world = write_world(tmp_path / "world", 48)
    settings = Settings().offline()
    settings = settings.model_copy(
        update={
            "local_server": settings.local_server.model_copy(update={"corpus_dir": world}),
            "dense": settings.dense.model_copy(
                update={"index_dir": tmp_path / "idx", "encode_batch_size": 2}
            ),
        }
    )
    enc = GatedEncoder()
    pipeline = build_pipeline(
        settings, use_llm=False, use_passages=False, models=Models(settings, encoder=enc)
    )
    app = create_app(settings, api_settings=ApiSettings(rate_limit_per_minute=0), pipeline=pipeline)
    try:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
                # The lifespan started the build in the background; it is now stuck in its second block.
                await _until(enc.blocked.is_set)
                r = await asyncio.wait_for(client.get("/healthz"), timeout=5)
                assert r.status_code == 200 and r.json() == {"status": "ok"}
                r = await asyncio.wait_for(client.get("/readyz"), timeout=5)
                assert r.status_code == 503
                dense = r.json()["checks"]["dense"]
                assert dense["ok"] is False and dense["reason"] == "building the dense index: 16/48 documents"
                enc.release.set()
                await _until(lambda: bool(pipeline.models.dense_status()["ok"]))
                r = await client.get("/readyz")
                assert r.status_code == 200, r.text
                assert r.json()["checks"]["dense"] == {"ok": True, "vectors": 48}
    finally:
        enc.release.set()
        await pipeline.aclose()
        clear_corpus_cache()


class WordCounter:
    """Whitespace tokens: the passage stage's token counter for an encoder without a tokenizer."""

    max_length = 256

    def count(self, text: str) -> int:
        return len(text.split())


async def test_the_log_shows_build_progress_and_ready_waits_for_the_passage_stage(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("app.factories.counter_for", lambda encoder: WordCounter())
    world = write_world(tmp_path / "world", 48)
    settings = Settings().offline()
    settings = settings.model_copy(
        update={
            "local_server": settings.local_server.model_copy(update={"corpus_dir": world}),
            "dense": settings.dense.model_copy(
                update={"index_dir": tmp_path / "idx", "encode_batch_size": 2}
            ),
        }
    )
    models = Models(settings, encoder=BagEncoder())
    release = asyncio.Event()
    load_passages = models.passage_retriever

    async def gated() -> object:
        await release.wait()  # a slow passage stage (reranker, SEOS) after the index is in
        return await load_passages()

    models.passage_retriever = gated  # type: ignore[method-assign]
    pipeline = build_pipeline(settings, use_llm=False, models=models)
    app = create_app(settings, api_settings=ApiSettings(rate_limit_per_minute=0), pipeline=pipeline)
    caplog.set_level("INFO", logger="cometa.pipeline")
    try:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
                await _until(lambda: bool(models.dense_status()["ok"]))
                r = await client.get("/readyz")
                assert r.status_code == 503, r.text
                assert r.json()["checks"]["passages"] == {"ok": False, "reason": "loading the passage stage"}
                with monkeypatch.context() as m:  # a failed build is said, not left as "loading"
                    m.setattr("app.factories.counter_for", lambda encoder: 1 / 0)
                    with pytest.raises(ZeroDivisionError):
                        await load_passages()
                    r = await client.get("/readyz")
                    assert r.status_code == 503
                    reason = r.json()["checks"]["passages"]["reason"]
                    assert reason == "passage stage unavailable: ZeroDivisionError: division by zero"
                release.set()
                await _until(lambda: bool(models.passages_status()["ok"]))
                r = await client.get("/readyz")
                assert r.status_code == 200, r.text
                assert r.json()["checks"]["passages"] == {"ok": True}
    finally:
        release.set()
        await pipeline.aclose()
        clear_corpus_cache()
    lines = [r.getMessage() for r in caplog.records if r.name == "cometa.pipeline"]
    # Blocks of 16 records: the first and the last are logged (the ones between at most every 5 s).
    assert "dense index: encoding 16/48 documents" in lines
    assert "dense index: encoding 48/48 documents" in lines
    assert any(line.startswith("dense index: ready, 48 vectors") for line in lines), lines
