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
