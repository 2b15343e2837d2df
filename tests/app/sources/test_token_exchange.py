"""Federation security as an attacker tries it (issue 16, items 3-5): forwarded and replayed tokens, wrong
audiences, forged assertions and issuers, anonymous callers riding on a node's service token, and a
configuration with holes in it.

Node a (the caller's node) asks node b (the data's) in-process; both trust two identity providers,
hospital A's and hospital B's, each with its own RS256 key. b's policy lets hospital A's physicians search
its private Riverside handbook, bound to hospital A's issuer.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
import pytest_asyncio
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from pydantic import SecretStr, ValidationError

from app.answer import Answerer
from app.api import create_app
from app.container import build_pipeline
from app.pipeline import Pipeline
from app.settings import (
    AccessSettings,
    ApiSettings,
    FederationSettings,
    IssuerSettings,
    NodeSettings,
    PeerSettings,
    Policy,
    Settings,
)
from app.sources import (
    ASSERTION_TYP,
    AccessEngine,
    FederationClient,
    SourcesService,
    Subject,
    parse_sources,
)
from tests._handbooks import BowEncoder, build_store, federation, node_key, node_settings
from tests._paths import REPO

ASYNC = pytest.mark.asyncio(loop_scope="module")

QUESTION = "When can I travel abroad after my transplant?"
IDP_A, IDP_B = "https://idp.hospital-a.test", "https://idp.hospital-b.test"
PHYSICIAN_A = {"sub": "dr-a", "org": "A", "role": "physician"}


def rsa_pair() -> tuple[rsa.RSAPrivateKey, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return key, public.decode()


KEYS = {IDP_A: rsa_pair(), IDP_B: rsa_pair()}


def user_token(
    issuer: str, audience: str, claims: dict[str, Any], *, key_of: str | None = None, **extra: Any
) -> str:
    """A token from ``issuer`` (signed with ``key_of``'s key: a forgery when they differ)."""
    now = int(time.time())
    body = {"iss": issuer, "aud": audience, "iat": now, "exp": now + 300, **claims, **extra}
    return jwt.encode(body, KEYS[key_of or issuer][0], algorithm="RS256")


def access(audience: str, policies: Sequence[dict[str, Any]] = ()) -> AccessSettings:
    return AccessSettings(
        audience=audience,
        issuers=[IssuerSettings(issuer=i, jwt_public_key=KEYS[i][1]) for i in (IDP_A, IDP_B)],
        policies=[Policy.model_validate(p) for p in policies],
    )


B_POLICIES = [
    {
        "id": "a-physicians",
        "collections": ["riverside"],
        "action": "search",
        "subject": {"org": "A", "role": "physician"},
        "issuers": [IDP_A],  # hospital A's physicians, as hospital A's identity provider says
    }
]


class Recorder(httpx.AsyncBaseTransport):
    """Passes requests to node b and keeps them: what crossed the wire."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner
        self.requests: list[httpx.Request] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return await self.inner.handle_async_request(request)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("exchange") / "root"
    build_store(root, names=["riverside", "eastgate"], private=["riverside"])
    return root


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def pipeline(root: Path) -> AsyncIterator[Pipeline]:
    async with build_pipeline(node_settings(root), use_llm=False, use_dense=False, use_passages=False) as p:
        yield p


def node_b_settings(root: Path, audience: str = "node-b", peer_issuers: list[str] | None = None) -> Settings:
    peers = [PeerSettings(name="a", public_key=node_key("a")[1], issuers=peer_issuers or [IDP_A, IDP_B])]
    fed = FederationSettings(node_id=audience.removeprefix("node-"), peers=peers)
    return node_settings(root, access=access(audience, B_POLICIES), federation=fed)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def node_b(root: Path, pipeline: Pipeline) -> AsyncIterator[httpx.AsyncBaseTransport]:
    settings = node_b_settings(root, peer_issuers=[IDP_A])  # a vouches for hospital A's users only
    app = create_app(settings, api_settings=ApiSettings(rate_limit_per_minute=0), pipeline=pipeline)
    async with app.router.lifespan_context(app):
        app.state.sources = SourcesService(settings, pipeline, encoder=BowEncoder(), reranker=None)
        yield httpx.ASGITransport(app=app)


def node_a(
    root: Path, pipeline: Pipeline, transport: httpx.AsyncBaseTransport, **node: Any
) -> SourcesService:
    # a vouches to b for the attributes b's policies use (B_POLICIES: org and role), no others.
    node = {"attributes": ["org", "role"], **node}
    b = NodeSettings(name="b", url="https://b.test", audience="node-b", **node)
    settings = node_settings(root, access=access("node-a"), federation=federation(b))
    fed = FederationClient(settings.federation, transport=transport)
    return SourcesService(settings, pipeline, encoder=BowEncoder(), reranker=None, federation=fed)


async def ask_b(svc: SourcesService, token: str | None, question: str = QUESTION) -> Any:
    subject = svc.subject(None if token is None else f"Bearer {token}")
    refs = parse_sources(["b/riverside"], local=[], nodes=["b"])
    out = await svc.ask(
        question,
        refs,
        understanding=await svc.pipeline.understander.understand(question),
        subject=subject,
        answerer=Answerer(None),
        judge=None,
    )
    return out.sources[0]


async def search_at(transport: httpx.AsyncBaseTransport, bearer: str) -> httpx.Response:
    async with httpx.AsyncClient(transport=transport, base_url="https://b.test") as c:
        return await c.post(
            "/collections/search",
            json={"question": QUESTION, "collections": ["riverside"]},
            headers={"Authorization": f"Bearer {bearer}"},
        )


# --- 3. the caller's token never leaves their node; what does is short-lived and audience-bound ----------


@ASYNC
async def test_the_callers_token_never_leaves_their_node(
    root: Path, pipeline: Pipeline, node_b: httpx.AsyncBaseTransport
) -> None:
    wire = Recorder(node_b)
    svc = node_a(root, pipeline, wire)
    mine = user_token(IDP_A, "node-a", PHYSICIAN_A)
    riverside = await ask_b(svc, mine)
    assert riverside.status.status == "ok" and riverside.evidence  # b's policy let a's physician in
    [sent] = wire.requests
    assert mine not in str(sent.headers) and mine.encode() not in sent.content
    assertion = sent.headers["authorization"].removeprefix("Bearer ")
    assert jwt.get_unverified_header(assertion)["typ"] == ASSERTION_TYP
    claims = jwt.decode(assertion, node_key("a")[1], algorithms=["ES256"], audience="node-b")
    assert claims["iss"] == "a" and claims["sub"] == "dr-a" and claims["idp"] == IDP_A
    assert claims["attrs"] == {"org": "A", "role": "physician"}
    assert claims["exp"] - claims["iat"] <= 60 and claims["jti"]
    # b is told how much of a document a's answer can read: long handbooks come back as chunks.
    assert json.loads(sent.content)["max_chars"] == svc.document_budget()


@ASYNC
async def test_an_assertion_carries_only_the_attributes_the_policies_use(
    root: Path, pipeline: Pipeline, node_b: httpx.AsyncBaseTransport
) -> None:
    # Issue 27, finding 4: the assertion carried every claim of the caller's token to every node, also
    # for GET /collections?remote=true.
    personal = {
        "name": "Zofia Wojciechowska",
        "email": "zofia.w@example.test",
        "birthdate": "1961-03-14",
        "phone_number": "+48 600 100 200",
        "department": "cardiology",  # an attribute, but none b's policies use
    }
    wire = Recorder(node_b)
    svc = node_a(root, pipeline, wire)
    token = user_token(IDP_A, "node-a", {**PHYSICIAN_A, **personal})
    riverside = await ask_b(svc, token)
    assert riverside.status.status == "ok"  # b decides on what its policies use, as before
    status, listed = await svc.federation.list_collections("b", svc.subject(f"Bearer {token}"))
    assert status.status == "ok" and sorted(c["name"] for c in listed) == ["eastgate", "riverside"]
    assert [r.method for r in wire.requests] == ["POST", "GET"]
    for sent in wire.requests:
        assertion = sent.headers["authorization"].removeprefix("Bearer ")
        claims = jwt.decode(assertion, node_key("a")[1], algorithms=["ES256"], audience="node-b")
        assert claims["attrs"] == {"org": "A", "role": "physician"}
        assert claims["sub"] == "dr-a" and claims["idp"] == IDP_A
        leaked = [v for v in personal.values() if v in json.dumps(claims) or v.encode() in sent.content]
        assert not leaked, leaked
    # Without a list for the node, a vouches for what its own policies use.
    policies = [Policy.model_validate(p) for p in B_POLICIES]
    svc = SourcesService(
        node_settings(root, access=access("node-a", B_POLICIES)),
        pipeline,
        encoder=BowEncoder(),
        reranker=None,
    )
    assert AccessEngine(policies).subject_attributes == {"org", "role"}
    assert svc.federation.attributes == {"org", "role"}


@ASYNC
async def test_a_node_gets_the_question_scrubbed_in_any_casing(
    root: Path, pipeline: Pipeline, node_b: httpx.AsyncBaseTransport
) -> None:
    # Issue 27, finding 4: only capitalised names were scrubbed before the question left for a node.
    wire = Recorder(node_b)
    svc = node_a(root, pipeline, wire)
    question = (
        "my husband john kowalczyk had a transplant and we live in Springfield; when can he travel abroad?"
    )
    riverside = await ask_b(svc, user_token(IDP_A, "node-a", PHYSICIAN_A), question)
    assert riverside.status.status == "ok"
    [sent] = wire.requests
    received = json.loads(sent.content)["question"]
    assert "kowalczyk" not in received.lower() and "springfield" not in received.lower(), received
    assert (
        received
        == "my husband john [NAME] had a transplant and we live in [PLACE]; when can he travel abroad?"
    )


@ASYNC
async def test_a_users_token_replayed_at_another_node_is_refused(node_b: httpx.AsyncBaseTransport) -> None:
    # Node a (or anyone on its path) replays the physician's token at b: it was minted for a.
    stolen = user_token(IDP_A, "node-a", PHYSICIAN_A)
    r = await search_at(node_b, stolen)
    assert r.status_code == 401 and r.json()["reason"] == "token audience does not match"
    # A token without an audience is refused too (with federation on, an audience is required).
    r = await search_at(
        node_b, jwt.encode({"iss": IDP_A, "exp": int(time.time()) + 60}, KEYS[IDP_A][0], "RS256")
    )
    assert r.status_code == 401 and r.json()["reason"] == "token lacks the 'aud' claim"


@ASYNC
async def test_a_captured_assertion_is_worth_one_request_at_one_node(
    root: Path, pipeline: Pipeline, node_b: httpx.AsyncBaseTransport
) -> None:
    wire = Recorder(node_b)
    svc = node_a(root, pipeline, wire)
    await ask_b(svc, user_token(IDP_A, "node-a", PHYSICIAN_A))
    captured = wire.requests[0].headers["authorization"].removeprefix("Bearer ")
    # Replayed at b: refused (its jti was used).
    r = await search_at(node_b, captured)
    assert r.status_code == 401 and r.json()["reason"] == "assertion replayed"
    # Presented at node c, which trusts a too: refused (minted for b's audience).
    settings_c = node_b_settings(root, audience="node-c")
    app_c = create_app(settings_c, api_settings=ApiSettings(rate_limit_per_minute=0), pipeline=pipeline)
    async with app_c.router.lifespan_context(app_c):
        app_c.state.sources = SourcesService(settings_c, pipeline, encoder=BowEncoder(), reranker=None)
        r = await search_at(httpx.ASGITransport(app=app_c), captured)
    assert r.status_code == 401 and r.json()["reason"] == "token audience does not match"


def forge(key: Any, algorithm: str, **claims: Any) -> str:
    now = int(time.time())
    body = {
        "iss": "a",
        "aud": "node-b",
        "iat": now,
        "exp": now + 60,
        "jti": f"j{time.time_ns()}",
        "idp": IDP_A,
        "attrs": {"org": "A", "role": "physician"},
        **claims,
    }
    return jwt.encode(body, key, algorithm=algorithm, headers={"typ": ASSERTION_TYP})


@pytest.mark.parametrize(
    ("claims", "key", "reason"),
    [
        ({}, "attacker", "token signature does not verify"),  # a's name, another key
        ({"iss": "evil"}, "attacker", "assertion from a node this node does not trust"),
        ({"exp": int(time.time()) + 3600}, "a", "token lifetime exceeds 300 s"),
        ({"exp": int(time.time()) - 600, "iat": int(time.time()) - 660}, "a", "token expired"),
        ({"aud": "node-c"}, "a", "token audience does not match"),
        # a is trusted to vouch for hospital A's users only.
        ({"idp": IDP_B}, "a", f"node a may not vouch for users of issuer '{IDP_B}'"),
        ({"jti": None}, "a", "token lacks the 'jti' claim"),
    ],
)
@ASYNC
async def test_forged_and_stretched_assertions_are_refused(
    node_b: httpx.AsyncBaseTransport, claims: dict[str, Any], key: str, reason: str
) -> None:
    signing = ec.generate_private_key(ec.SECP256R1()) if key == "attacker" else node_key("a")[0]
    body = {k: v for k, v in claims.items() if v is not None}
    token = forge(signing, "ES256", **body)
    if claims.get("jti", "") is None:
        token = jwt.encode(
            {k: v for k, v in jwt.decode(token, options={"verify_signature": False}).items() if k != "jti"},
            node_key("a")[0],
            algorithm="ES256",
            headers={"typ": ASSERTION_TYP},
        )
    r = await search_at(node_b, token)
    assert r.status_code == 401 and r.json()["reason"] == reason


@ASYNC
async def test_a_token_valid_for_a_day_is_refused(root: Path, pipeline: Pipeline) -> None:
    svc = node_a(root, pipeline, httpx.MockTransport(lambda r: httpx.Response(500)))
    day = user_token(IDP_A, "node-a", PHYSICIAN_A, exp=int(time.time()) + 86_400)
    with pytest.raises(Exception, match="token lifetime exceeds 3600 s"):
        svc.subject(f"Bearer {day}")


# --- 4. an issuer cannot mint another hospital's attributes ----------------------------------------------


@ASYNC
async def test_an_issuer_cannot_mint_another_hospitals_attributes(node_b: httpx.AsyncBaseTransport) -> None:
    # Hospital B's identity provider mints "org A, physician": b's policy is bound to hospital A's issuer.
    minted = user_token(IDP_B, "node-b", PHYSICIAN_A)
    r = await search_at(node_b, minted)
    assert r.status_code == 200 and r.json()["results"][0]["status"] == "denied"
    genuine = user_token(IDP_A, "node-b", PHYSICIAN_A)
    r = await search_at(node_b, genuine)
    assert r.status_code == 200 and r.json()["results"][0]["status"] == "ok"
    # Hospital B's key, hospital A's name: the token is checked with A's key and fails.
    forged = user_token(IDP_A, "node-b", PHYSICIAN_A, key_of=IDP_B)
    r = await search_at(node_b, forged)
    assert r.status_code == 401 and r.json()["reason"] == "token signature does not verify"
    # An issuer nobody configured.
    r = await search_at(node_b, user_token(IDP_A, "node-b", PHYSICIAN_A, iss="https://idp.evil.test"))
    assert r.status_code == 401 and "trusted identity provider" in r.json()["reason"]


def test_policy_issuers_bind_attributes_to_their_identity_provider() -> None:
    engine = AccessEngine([Policy.model_validate(p) for p in B_POLICIES])

    class Col:
        name, private = "riverside", True

    attrs = {"org": "A", "role": "physician"}
    assert engine.can_search(Subject(True, attrs, issuer=IDP_A), Col()).allowed
    assert not engine.can_search(Subject(True, attrs, issuer=IDP_B), Col()).allowed
    assert not engine.can_search(Subject(True, attrs), Col()).allowed  # no verified issuer at all


# --- 5. anonymous callers do not inherit the node's service token -----------------------------------------


@ASYNC
async def test_anonymous_callers_do_not_inherit_the_service_token(
    root: Path, pipeline: Pipeline, node_b: httpx.AsyncBaseTransport
) -> None:
    wire = Recorder(node_b)
    svc = node_a(root, pipeline, wire, service_token=SecretStr("node-a-service-token"))
    riverside = await ask_b(svc, None)
    assert riverside.status.status == "denied"
    assert "authorization" not in wire.requests[-1].headers  # before: b saw a's service token
    # Only where a node is configured to allow it.
    wire = Recorder(node_b)
    svc = node_a(
        root, pipeline, wire, service_token=SecretStr("node-a-service-token"), anonymous_service_token=True
    )
    await ask_b(svc, None)
    assert wire.requests[-1].headers["authorization"] == "Bearer node-a-service-token"


# --- bad configuration stops the service at start ------------------------------------------------------


def test_bad_federation_configuration_is_refused() -> None:
    with pytest.raises(ValidationError, match="plain http: use https://"):
        NodeSettings(name="b", url="http://10.0.0.2:8000", audience="node-b")
    for loopback in ("http://127.0.0.1:8001", "http://localhost:8001", "http://[::1]:8001"):
        assert NodeSettings(name="b", url=loopback, audience="b").url == loopback
    b = NodeSettings(name="b", url="https://b.test", audience="node-b")
    with pytest.raises(ValidationError, match="COMETA_ACCESS__AUDIENCE is required with federation on"):
        Settings(federation=federation(b))
    with pytest.raises(ValidationError, match="NODE_ID and COMETA_FEDERATION__SIGNING_KEY"):
        Settings(access=AccessSettings(audience="a"), federation=FederationSettings(nodes=[b]))
    no_aud = NodeSettings(name="b", url="https://b.test")
    with pytest.raises(ValidationError, match=r"without an audience: \['b'\]"):
        Settings(access=AccessSettings(audience="a"), federation=federation(no_aud))
    with pytest.raises(ValidationError, match="COMETA_ACCESS__AUDIENCE"):  # answering peers needs it too
        Settings(federation=federation(node_id="b", peers=["a"]))


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {
                "COMETA_FEDERATION__NODES": json.dumps(
                    [{"name": "b", "url": "http://10.1.2.3:8000", "audience": "b"}]
                )
            },
            "plain http: use https://",
        ),
        (
            {
                "COMETA_FEDERATION__NODES": json.dumps(
                    [{"name": "b", "url": "https://b.example", "audience": "b"}]
                ),
                "COMETA_FEDERATION__NODE_ID": "a",
            },
            "COMETA_ACCESS__AUDIENCE is required with federation on",
        ),
    ],
)
def test_serve_refuses_to_start_with_a_clear_message(
    env: dict[str, str], message: str, tmp_path: Path
) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "app.cli", "serve", "--offline", "--port", "1"],
        cwd=REPO,
        env={
            "PATH": "/usr/bin:/bin",
            "HF_HUB_OFFLINE": "1",
            "PYTHONPATH": str(REPO),
            "HOME": str(tmp_path),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert "configuration error" in out and message in out and "Traceback" not in out
