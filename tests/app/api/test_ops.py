"""The ops endpoints under attack (issue 27, findings 5 and 14): /readyz in a loop costs one upstream probe
per cache period, /metrics is for key holders when keys are set, and a configured LLM is ready only when its
server lists the model. And the Grafana dashboard (issue 30) charts only metrics /metrics exports."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from prometheus_client import REGISTRY
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from app import ApiSettings
from app.api import create_app
from app.api._ops import Readiness
from app.container import build_pipeline
from app.settings import Settings
from llm import LLMSettings, OpenAICompatibleLLM
from retrieval.eutils import LOCAL_BASE_URL, EutilsClient
from retrieval.localncbi import LocalServerSettings, create_eutils_app, eutils_transport
from tests._paths import REPO


class CountingEutils(httpx.AsyncBaseTransport):
    """The local E-utilities server, counting the EInfo requests that reach it."""

    def __init__(self) -> None:
        self.inner = eutils_transport(create_eutils_app(LocalServerSettings()))
        self.einfo = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/einfo.fcgi"):
            self.einfo += 1
            await asyncio.sleep(0.01)  # a probe takes a while: later callers arrive while it runs
        return await self.inner.handle_async_request(request)


class ModelServer:
    """An OpenAI-compatible server that lists ``models`` (and counts the listings)."""

    def __init__(self, *models: str) -> None:
        self.models = list(models)
        self.listings = 0

        async def listing(request: Request) -> JSONResponse:
            self.listings += 1
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "test"} for m in self.models]
            return JSONResponse({"object": "list", "data": data})

        self.app = Starlette(routes=[Route("/v1/models", listing)])

    def llm(self, model: str) -> OpenAICompatibleLLM:
        settings = LLMSettings(base_url="http://llm.test/v1", model=model)
        return OpenAICompatibleLLM(
            settings, http_client=httpx.AsyncClient(transport=httpx.ASGITransport(self.app))
        )


@asynccontextmanager
async def served(
    api: ApiSettings, *, llm: OpenAICompatibleLLM | None = None
) -> AsyncIterator[tuple[httpx.AsyncClient, CountingEutils, FastAPI]]:
    settings = Settings().offline()
    transport = CountingEutils()
    client = EutilsClient(
        settings.eutils.model_copy(update={"base_url": LOCAL_BASE_URL}), transport=transport
    )
    pipeline = build_pipeline(settings, client=client, llm=llm, use_dense=False, use_passages=False)
    app = create_app(settings, api_settings=api, pipeline=pipeline)
    try:
        async with app.router.lifespan_context(app):
            asgi = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=asgi, base_url="http://test") as http:
                yield http, transport, app
    finally:
        await pipeline.aclose()
        if llm is not None:
            await llm.aclose()


async def test_fifty_concurrent_readyz_cost_one_upstream_probe() -> None:
    server = ModelServer("served-model")
    async with served(ApiSettings(rate_limit_per_minute=0), llm=server.llm("served-model")) as (
        http,
        eutils,
        _,
    ):
        replies = await asyncio.gather(*(http.get("/readyz") for _ in range(50)))
        assert [r.status_code for r in replies] == [200] * 50
        assert eutils.einfo == 1 and server.listings == 1  # was 50 EInfo from the NCBI budget
        assert all(r.json()["checks"]["eutils"]["ok"] for r in replies)


async def test_readyz_probes_again_once_the_cached_checks_are_old() -> None:
    now = [0.0]
    async with served(ApiSettings(rate_limit_per_minute=0)) as (http, eutils, app):
        app.state.readiness = Readiness(5.0, clock=lambda: now[0])
        for at in (0.0, 1.0, 4.9):
            now[0] = at
            assert (await http.get("/readyz")).status_code == 200
        assert eutils.einfo == 1
        now[0] = 5.0
        assert (await http.get("/readyz")).status_code == 200
        assert eutils.einfo == 2


async def test_a_configured_llm_is_ready_only_when_its_server_lists_the_model() -> None:
    server = ModelServer("other-model")
    api = ApiSettings(rate_limit_per_minute=0)
    async with served(api, llm=server.llm("meta-llama/Llama-3.1-8B-Instruct")) as (http, _, _):
        r = await http.get("/readyz")
        assert r.status_code == 503, r.text
        assert r.json()["checks"]["llm"] == {
            "ok": False,
            "configured": True,
            "model": "meta-llama/Llama-3.1-8B-Instruct",
            "reason": "the LLM server does not list this model",
        }
    async with served(api, llm=server.llm("other-model")) as (http, _, _):
        r = await http.get("/readyz")
        assert r.status_code == 200, r.text
        assert r.json()["checks"]["llm"] == {"ok": True, "configured": True, "model": "other-model"}


async def test_an_unreachable_llm_server_is_reported_and_may_be_left_out_of_readiness() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    def unreachable() -> OpenAICompatibleLLM:
        settings = LLMSettings(base_url="http://llm.test/v1", model="m")
        return OpenAICompatibleLLM(
            settings, http_client=httpx.AsyncClient(transport=httpx.MockTransport(refuse))
        )

    async with served(ApiSettings(rate_limit_per_minute=0), llm=unreachable()) as (http, _, _):
        r = await http.get("/readyz")
        assert r.status_code == 503 and r.json()["checks"]["llm"]["reason"] == "LLMUnavailable"
    api = ApiSettings(rate_limit_per_minute=0, ready_requires_llm=False)
    async with served(api, llm=unreachable()) as (http, _, _):
        r = await http.get("/readyz")
        assert r.status_code == 200 and r.json()["checks"]["llm"]["ok"] is False


async def test_metrics_need_a_key_when_keys_are_configured() -> None:
    api = ApiSettings(api_keys=[SecretStr("k1")], rate_limit_per_minute=0)
    async with served(api) as (http, _, _):
        r = await http.get("/metrics")
        assert r.status_code == 401 and "cometa_" not in r.text
        assert (await http.get("/metrics", headers={"X-API-Key": "wrong"})).status_code == 401
        r = await http.get("/metrics", headers={"X-API-Key": "k1"})
        assert r.status_code == 200 and "cometa_api_requests_total" in r.text
        # Prometheus sends a bearer token (authorization: credentials) rather than a custom header.
        assert (await http.get("/metrics", headers={"Authorization": "Bearer k1"})).status_code == 200
        assert (await http.get("/healthz")).status_code == 200  # liveness stays open
    async with served(api.model_copy(update={"metrics_public": True})) as (http, _, _):
        assert (await http.get("/metrics")).status_code == 200


@pytest.mark.parametrize("keys", [[], [SecretStr("k1")]])
async def test_readyz_stays_open_for_probes(keys: list[SecretStr]) -> None:
    async with served(ApiSettings(api_keys=keys, rate_limit_per_minute=0)) as (http, _, _):
        assert (await http.get("/readyz")).status_code == 200


# --- the Grafana dashboard (issue 30): every panel's expression names a metric the service exports --------

DASHBOARD = REPO / "deploy" / "grafana" / "cometa.json"
# PromQL's functions, aggregations and modifiers: what an identifier in an expression is when not a metric.
_PROMQL = {
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "and",
    "or",
    "unless",
    "offset",
    "bool",
}


def _metric_names(expr: str) -> set[str]:
    """The metric names an expression selects: label values, matchers, ranges and label lists removed, what
    is left is functions (followed by a parenthesis), PromQL's keywords and the metrics."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)
    expr = re.sub(r"\{[^}]*\}|\[[^\]]*\]", "", expr)
    expr = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)
    return {n for n in re.findall(r"\b([A-Za-z_:][A-Za-z0-9_:]*)\b(?!\s*\()", expr) if n not in _PROMQL}


def _exported() -> set[str]:
    """Every series name the process's registry exports, labelled families included before their first
    sample: a counter as ``_total``, a histogram as ``_bucket``/``_count``/``_sum``."""
    suffixes = {
        "counter": ("_total",),
        "histogram": ("_bucket", "_count", "_sum"),
        "summary": ("_count", "_sum"),
    }
    names: set[str] = set()
    for family in REGISTRY.collect():
        names |= {family.name + s for s in suffixes.get(family.type, ("",))}
        names |= {s.name for s in family.samples}
    return names


def _panels(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [q for p in items for q in ([p] if p.get("type") != "row" else _panels(p.get("panels", [])))]


def test_the_promql_reader_finds_metrics_only() -> None:
    expr = (
        'histogram_quantile(0.95, sum by (le, stage) (rate(a_bucket{outcome="x{y}"}[$__rate_interval]))) '
        "/ ignoring(cause) group_left sum(rate(b_total[5m])) + on (le) c"
    )
    assert _metric_names(expr) == {"a_bucket", "b_total", "c"}


def test_every_dashboard_panel_charts_metrics_the_service_exports() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    panels = _panels(dashboard["panels"])
    exported = _exported()
    used: set[str] = set()
    for panel in panels:
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            names = _metric_names(target["expr"])
            assert names, (panel["title"], target["expr"])
            assert names <= exported, (panel["title"], names - exported)
            used |= names
    # What issue 30 asks the dashboard to show: zero hits by cause, answer modes, abstention and urgent
    # reasons, latency by stage, NCBI calls and 429s, admission refusals.
    assert {
        "cometa_zero_hit_total",
        "cometa_answers_total",
        "cometa_abstentions_total",
        "cometa_urgent_total",
        "cometa_stage_seconds_bucket",
        "cometa_eutils_requests_total",
        "cometa_api_rejected_total",
    } <= used
    assert len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"])
