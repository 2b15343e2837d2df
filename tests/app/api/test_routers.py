"""The API's routers: every resource's routes are mounted, JSON routes document their response model, the
OpenAPI schema builds, and ``app``'s public API resolves (without loading FastAPI on ``import app``)."""

from __future__ import annotations

import subprocess
import sys

import httpx

import app
from app import Settings, create_app

# Route -> the response model its 200 documents (None: not JSON, or OpenAI's own shape).
JSON_ROUTES = {
    ("post", "/ask"): "AskResponse",
    ("post", "/search"): "SearchResponse",
    ("post", "/judge"): "JudgeResponse",
    ("get", "/healthz"): "HealthResponse",
    ("get", "/readyz"): "ReadyResponse",
    ("get", "/collections"): "CollectionListResponse",
    ("post", "/collections/search"): "CollectionSearchResponse",
    ("get", "/v1/models"): "ModelListOut",
    ("get", "/v1/models/{model_id}"): "ModelOut",
}
OTHER_ROUTES = {("post", "/ask/stream"), ("get", "/metrics"), ("post", "/v1/chat/completions")}


def test_openapi_lists_every_route_with_its_response_model() -> None:
    schema = create_app(Settings().offline()).openapi()
    listed = {(method, path) for path, ops in schema["paths"].items() for method in ops}
    assert listed == set(JSON_ROUTES) | OTHER_ROUTES  # / and /ui/* and /mcp stay out of the schema
    for (method, path), model in JSON_ROUTES.items():
        content = schema["paths"][path][method]["responses"]["200"]["content"]["application/json"]
        if path == "/search":  # the search, or the safety guidance for an urgent question (issue 28)
            refs = [s["$ref"] for s in content["schema"]["anyOf"]]
            assert refs == [f"#/components/schemas/{m}" for m in (model, "UrgentResponse")]
            continue
        assert content["schema"] == {"$ref": f"#/components/schemas/{model}"}, path
    not_ready = schema["paths"]["/readyz"]["get"]["responses"]["503"]["content"]["application/json"]
    assert not_ready["schema"] == {"$ref": "#/components/schemas/ReadyResponse"}


async def test_docs_and_health_answer_before_the_lifespan() -> None:
    transport = httpx.ASGITransport(app=create_app(Settings().offline()))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        docs = await client.get("/docs")
        assert docs.status_code == 200 and "/openapi.json" in docs.text
        assert (await client.get("/healthz")).json() == {"status": "ok"}
        # Routes that need the container say so, in the API's error shape.
        r = await client.get("/readyz")
        assert r.status_code == 503 and r.json()["error"] == "service starting"


def test_public_api_resolves() -> None:
    from app.api import create_app as api_create_app
    from app.asker import Asker
    from app.container import Container

    assert create_app is api_create_app and app.Asker is Asker and app.Container is Container
    assert all(hasattr(app, name) for name in app.__all__)
    assert set(app.__all__) <= set(dir(app))


def test_import_app_does_not_load_the_web_layer() -> None:
    code = "import sys, app; assert 'fastapi' not in sys.modules and 'app.api' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
