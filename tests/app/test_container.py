"""The composition root: each component built once, shared where it is needed, closed by who built it."""

from __future__ import annotations

import httpx
import pytest

from app.container import Container, build_pipeline
from app.settings import Settings
from app.sources import SourcesService
from retrieval import EutilsSettings
from retrieval.eutils import LOCAL_BASE_URL, EutilsClient
from tests._fakes import ScriptedLLM


def offline(**dense: object) -> Settings:
    settings = Settings().offline()
    return settings.model_copy(update={"dense": settings.dense.model_copy(update=dense)})


def test_the_client_does_not_build_the_local_server() -> None:
    with pytest.raises(ValueError, match="transport into the local server"):
        EutilsClient(EutilsSettings(backend="local"))


async def test_one_of_each_component_wired_once() -> None:
    settings = offline(enabled=False)  # the encoder alone: no index to build
    async with Container(settings, use_llm=False) as c:
        assert isinstance(c.transport, httpx.ASGITransport)  # offline: the local server, in-process
        assert c.pipeline.client is c.client and c.client.base_url == LOCAL_BASE_URL
        assert c.llm is None and c.judge is None and c.answerer.llm is None
        assert c.asker.pipeline is c.pipeline and c.asker.answerer is c.answerer and c.asker.phi is c.phi
        assert c.pipeline.understander.scrub_for_llm is c.phi.scrub_for_llm
        assert c.sources is c.sources and c.sources.phi is c.phi  # built once, on first use
        encoder, reranker = await c.sources._components()
        # The collections use the process's models: one copy of the encoder and of the reranker.
        assert encoder is await c.models.encoder() and reranker is await c.models.reranker()
        # The cache store and the NCBI rate limiter are the container's, injected into the client.
        assert c.client.store is c.store and c.client.limiter is c.ncbi_limiter
        assert not c.client._owns_store and not c.client._owns_limiter
        client_http = c.client._http
    assert client_http.is_closed


async def test_injected_parts_stay_their_owners() -> None:
    llm = ScriptedLLM(lambda _p: "unused")
    settings = offline(enabled=False)
    async with build_pipeline(settings, llm=llm, use_dense=False, use_passages=False) as pipeline:  # type: ignore[arg-type]
        async with Container(settings, pipeline=pipeline) as c:
            assert c.pipeline is pipeline and c.models is pipeline.models and c.transport is None
            assert c.judge is not None and c.judge.llm is llm and c.answerer.llm is llm
        assert not pipeline.client._http.is_closed  # the container closes only what it built


async def test_the_sources_service_gets_its_models_injected() -> None:
    settings = offline(enabled=False)
    async with build_pipeline(settings, use_llm=False, use_dense=False, use_passages=False) as pipeline:
        with pytest.raises(ValueError, match="needs an encoder, or the models"):
            SourcesService(settings, pipeline)


async def test_answer_settings_reach_the_answerer() -> None:
    settings = offline(enabled=False)
    settings = settings.model_copy(update={"answer": settings.answer.model_copy(update={"max_tokens": 321})})
    async with Container(settings, use_llm=False) as c:
        assert c.answerer.settings.max_tokens == 321


async def test_without_an_llm_server_answers_are_extractive_and_start_up_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = offline(enabled=False)
    settings = settings.model_copy(update={"llm": settings.llm.model_copy(update={"backend": "openai"})})
    with caplog.at_level("INFO", logger="cometa.container"):
        async with Container(settings) as c:
            assert c.llm is None and c.answerer.llm is None and c.judge is None
    (line,) = [r.getMessage() for r in caplog.records if "no LLM configured" in r.getMessage()]
    assert "COMETA_LLM__BASE_URL unset" in line and "extractive" in line
