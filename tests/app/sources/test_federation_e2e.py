"""Three CoMeta nodes as separate processes on loopback, plus a node that is down and one that never answers.

Each node holds different handbooks (H8's synthetic ones, ingested into a per-node store before start) and
its own policies; users carry RS256 JWTs from their own hospital's identity provider (three of them, each
with its own key, every node trusting all three), minted for node A's audience. Node A never forwards
them: it vouches for each caller to B and C with an assertion it signs (its key is B's and C's only peer
key), and B and C decide on the attributes and issuer in it (issue 16). The FEDRAG-style access matrix
(seven subjects x collections -> ok / denied, including a token in which hospital B's identity provider
claims a hospital A physician) is asserted end to end over HTTP at node A, which searches its own
collections and fans out to B, C, the dead node and the silent one, and the per-document decisions made at
B are asserted on the documents that come back.

Nodes run the real MiniLM encoder (loaded on the first collection search; warmed before the matrix) and no
LLM: answers are extractive and the judge is skipped (tests/test_sources.py covers the judge).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from retrieval.collections import CollectionMeta, CollectionStore
from tests._procs import free_port, serve
from tests.fixtures.handbooks.make_pdf import build_handbooks

pytestmark = pytest.mark.slow

QUESTION = "When can I travel abroad after my transplant?"

STAFF_PROTOCOL = """# Riverside transplant surgery: staff protocol for travel clearance

## Scope
For transplant surgery staff only. Not for distribution to patients.

## Travel clearance checklist
Before signing a travel letter for a liver recipient, confirm stable liver tests for 8 weeks, a
tacrolimus level in range and that the patient has attended the travel clinic.
"""

# node -> collection -> (handbook key or "staff", private, institution)
LAYOUT = {
    "a": {"northbridge": True, "eastgate": False},
    "b": {"riverside": True},
    "c": {"lakeshore": True, "hillcrest": False},
}

IDP = {org: f"https://idp.hospital-{org.lower()}.test" for org in "ABC"}

POLICIES = {
    "a": [
        {
            "id": "a-staff",
            "collections": ["northbridge"],
            "action": "search",
            "subject": {"org": "A"},
            "issuers": [IDP["A"]],
        },
    ],
    "b": [
        # B's own staff, and physicians of A (FEDRAG's asymmetry: A's nurses are not let in), each as
        # their own hospital's identity provider says: "org A" from B's IdP counts for nothing here.
        {
            "id": "b-staff",
            "collections": ["riverside"],
            "action": "search",
            "subject": {"org": "B"},
            "issuers": [IDP["B"]],
        },
        {
            "id": "a-physicians",
            "collections": ["riverside"],
            "action": "search",
            "subject": {"org": "A", "role": "physician"},
            "issuers": [IDP["A"]],
        },
        # Per document: patients' material for everyone let in; staff protocols for the same department.
        {
            "id": "patient-docs",
            "collections": ["riverside"],
            "action": "retrieve",
            "document": {"audience": "patients"},
        },
        {
            "id": "same-dept",
            "collections": ["riverside"],
            "action": "retrieve",
            "same": {"department": "department"},
        },
    ],
    "c": [
        {
            "id": "c-staff",
            "collections": ["lakeshore"],
            "action": "search",
            "subject": {"org": "C"},
            "issuers": [IDP["C"]],
        },
        {
            "id": "c-group",
            "collections": ["lakeshore"],
            "action": "search",
            "subject": {"affiliations": ["C_transplant"]},
        },
    ],
}

# Each user's token comes from their org's identity provider ("idp" overrides: a forgery attempt).
USERS: dict[str, dict[str, Any] | None] = {
    "A.phys": {"org": "A", "role": "physician", "department": "hepatology"},
    # Hospital B's identity provider minting a hospital A physician: every A-bound policy refuses it.
    "A.phys.by-B-idp": {"org": "A", "role": "physician", "department": "hepatology", "idp": "B"},
    "A.nurse": {"org": "A", "role": "nurse", "department": "hepatology"},
    "B.nurse": {"org": "B", "role": "nurse", "department": "transplant-surgery"},
    "C.research": {"org": "C", "role": "researcher"},
    "A.phys.group": {
        "org": "A",
        "role": "physician",
        "department": "surgery",
        "affiliations": ["C_transplant"],
    },
    "anonymous": None,
}

SOURCES = [
    "northbridge",
    "eastgate",
    "b/riverside",
    "c/lakeshore",
    "c/hillcrest",
    "down/handbook",
    "slow/handbook",
]
OK, NO = "ok", "denied"
MATRIX = {
    #               northbridge eastgate b/riverside c/lakeshore c/hillcrest
    "A.phys": [OK, OK, OK, NO, OK],
    "A.phys.by-B-idp": [NO, OK, NO, NO, OK],
    "A.nurse": [OK, OK, NO, NO, OK],
    "B.nurse": [NO, OK, OK, NO, OK],
    "C.research": [NO, OK, NO, OK, OK],
    "A.phys.group": [OK, OK, OK, OK, OK],
    "anonymous": [NO, OK, NO, NO, OK],
}
# Which of B's documents each user allowed into riverside gets back.
RIVERSIDE_DOCS = {
    "A.phys": {"riverside-liver"},  # hepatology != transplant-surgery: the staff protocol is withheld
    "B.nurse": {"riverside-liver", "staff-protocol"},
    "A.phys.group": {"riverside-liver"},
}


Keys = dict[str, Any]  # "idp:A" -> RSA private key, "node:a" -> EC private key, "*.pem" -> public PEM file


def pem_files(folder: Path, name: str, key: Any) -> tuple[Path, Path]:
    private = folder / f"{name}.key"
    public = folder / f"{name}.pem"
    private.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return private, public


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Keys:
    """Three hospitals' identity providers (RS256) and node A's assertion key (ES256), on disk."""
    folder = tmp_path_factory.mktemp("keys")
    out: Keys = {}
    for org in "ABC":
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        out[f"idp:{org}"] = key
        out[f"idp:{org}.pem"] = pem_files(folder, f"idp-{org}", key)[1]
    node = ec.generate_private_key(ec.SECP256R1())
    out["node:a.key"], out["node:a.pem"] = pem_files(folder, "node-a", node)
    return out


def token(keys: Keys, claims: dict[str, Any], audience: str = "node-a", **extra: Any) -> str:
    """A user's token from their org's identity provider (or ``claims["idp"]``'s), for ``audience``."""
    claims = dict(claims)
    org = str(claims.pop("idp", claims.get("org", "A")))
    body = {
        "sub": claims.get("role", "x"),
        "iss": IDP[org],
        "aud": audience,
        "exp": int(time.time()) + 600,
        **claims,
        **extra,
    }
    return jwt.encode(body, keys[f"idp:{org}"], algorithm="RS256")


@contextlib.contextmanager
def silent_server() -> Iterator[int]:
    """Accepts connections and never answers (a hung node)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    sock.settimeout(0.2)
    held: list[socket.socket] = []
    stop = threading.Event()

    def run() -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
                held.append(conn)
            except TimeoutError:
                continue
            except OSError:
                return

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield int(sock.getsockname()[1])
    finally:
        stop.set()
        thread.join(timeout=2)
        for conn in held:
            conn.close()
        sock.close()


def ingest(root: Path, node: str, handbooks: dict[str, Path], staff: Path) -> None:
    store = CollectionStore(root)
    for name, private in LAYOUT[node].items():
        meta = CollectionMeta(
            name=name, institution=f"{name.title()} Hospital", topic="transplant", private=private
        )
        report = store.add(name, [handbooks[name]], meta, attributes={"audience": "patients"})
        assert not report.failed
    if node == "b":
        report = store.add(
            "riverside", [staff], attributes={"audience": "staff", "department": "transplant-surgery"}
        )
        assert report.added == ["staff-protocol"]


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory, keys: Keys) -> Iterator[dict[str, str]]:
    base = tmp_path_factory.mktemp("federation")
    handbooks = build_handbooks(base / "src")
    eastgate = base / "src" / "eastgate.md"
    eastgate.write_text(
        "# Eastgate\n\n## Travel abroad\nDo not travel abroad for the first 3 months after your transplant.\n"
    )
    handbooks["eastgate"] = eastgate
    staff = base / "src" / "staff-protocol.md"
    staff.write_text(STAFF_PROTOCOL)
    ports = {n: free_port() for n in ("a", "b", "c")}
    down_port = free_port()  # nothing listens there
    with contextlib.ExitStack() as stack:
        slow_port = stack.enter_context(silent_server())
        urls: dict[str, str] = {}
        for node in ("b", "c", "a"):
            ingest(base / node, node, handbooks, staff)
            issuers = [{"issuer": IDP[o], "jwt_public_key_file": str(keys[f"idp:{o}.pem"])} for o in "ABC"]
            env = {
                "COMETA_COLLECTIONS__ROOT": str(base / node),
                "COMETA_DENSE__ENABLED": "false",  # no PubMed index needed: collections load MiniLM lazily
                "COMETA_ACCESS__ISSUERS": json.dumps(issuers),
                "COMETA_ACCESS__AUDIENCE": f"node-{node}",
                "COMETA_ACCESS__POLICIES": json.dumps(POLICIES[node]),
                "COMETA_API__RATE_LIMIT_PER_MINUTE": "0",
                "COMETA_FEDERATION__NODES": "[]",
                # B and C answer A: its public key is their one peer key, for users of all three IdPs.
                "COMETA_FEDERATION__PEERS": json.dumps(
                    [{"name": "a", "public_key_file": str(keys["node:a.pem"]), "issuers": ["*"]}]
                ),
            }
            if node == "a":
                env["COMETA_FEDERATION__PEERS"] = "[]"
                env["COMETA_FEDERATION__NODE_ID"] = "a"
                env["COMETA_FEDERATION__SIGNING_KEY_FILE"] = str(keys["node:a.key"])
                institutions = {
                    "b": ["Riverside Hospital"],
                    "c": ["Lakeshore Hospital", "Hillcrest Hospital"],
                }
                env["COMETA_FEDERATION__NODES"] = json.dumps(
                    [
                        {
                            "name": n,
                            "url": urls[n],
                            "audience": f"node-{n}",
                            "timeout_s": 60,
                            "institutions": institutions[n],
                            # a vouches to each node for the attributes that node's policies use, no more.
                            "attributes": sorted(
                                {a for p in POLICIES[n] for a in (*p.get("subject", {}), *p.get("same", {}))}
                            ),
                        }
                        for n in ("b", "c")
                    ]
                    + [
                        {
                            "name": "down",
                            "url": f"http://127.0.0.1:{down_port}",
                            "audience": "d",
                            "timeout_s": 5,
                        },
                        {
                            "name": "slow",
                            "url": f"http://127.0.0.1:{slow_port}",
                            "audience": "s",
                            "timeout_s": 2,
                        },
                    ]
                )
            args = ["serve", "--offline", "--port", str(ports[node])]
            urls[node] = stack.enter_context(
                contextlib.contextmanager(serve)(args, "/healthz", port=ports[node], env=env, deadline_s=120)
            )

        # Load each node's encoder once (first collection search), all three at the same time, as
        # each node's own staff (so that every node has something to search).
        def warm(node: str) -> None:
            bearer = token(keys, {"org": node.upper()}, audience=f"node-{node}")
            httpx.post(
                f"{urls[node]}/collections/search",
                json={"question": QUESTION, "collections": ["*"], "top_docs": 1},
                headers={"Authorization": f"Bearer {bearer}"},
                timeout=240,
            ).raise_for_status()

        with ThreadPoolExecutor(3) as pool:
            list(pool.map(warm, urls))
        yield urls


def ask(url: str, sources: list[str], bearer: str | None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
    return httpx.post(
        f"{url}/ask", json={"question": QUESTION, "sources": sources}, headers=headers, timeout=120
    )


def test_access_matrix_end_to_end(nodes: dict[str, str], keys: Keys) -> None:
    got: dict[str, list[str]] = {}
    bodies: dict[str, dict[str, Any]] = {}
    for user, claims in USERS.items():
        r = ask(nodes["a"], SOURCES, None if claims is None else token(keys, claims))
        assert r.status_code == 200, (user, r.text)
        body = r.json()
        bodies[user] = body
        status = body["sources_status"]
        got[user] = [status[s]["status"] for s in SOURCES[:5]]
        # The dead node and the silent one are reported for every user, never dropped.
        assert status["down/handbook"]["status"] == "failed", status["down/handbook"]
        assert "unreachable" in status["down/handbook"]["reason"]
        assert status["slow/handbook"] == {**status["slow/handbook"], "status": "timeout"}
        assert "did not answer within 2 s" in status["slow/handbook"]["reason"]
    assert got == MATRIX

    for user, body in bodies.items():
        by = {s["source"]: s for s in body["sources"]}
        for source in SOURCES[:5]:
            s = by[source]
            if s["status"] == "denied":  # nothing of a denied collection leaks, and it says so the same way
                assert s["evidence"] == [] and s["answer"] is None and s["institution"] is None
                assert s["reason"] == "not available to you" and s["absent"] is None
                assert not any(e["source"] == source for e in body["evidence"])
            else:
                assert s["evidence"] and s["answer_mode"] in ("extractive", "not_addressed")
        if user in RIVERSIDE_DOCS:
            assert {e["doc_id"] for e in by["b/riverside"]["evidence"]} == RIVERSIDE_DOCS[user], user
        assert any(w.startswith("judge skipped") for w in body["warnings"])
    # The answers are the handbooks' own: 3 months at Northbridge/Eastgate, 12 at Lakeshore, with citations.
    full = {s["source"]: s for s in bodies["A.phys.group"]["sources"]}
    assert "3 months" in full["eastgate"]["answer"] and "[DOC:eastgate/" in full["eastgate"]["answer"]
    assert "12 months" in full["c/lakeshore"]["answer"]
    lake = full["c/lakeshore"]["evidence"][0]
    assert lake["pages"] and lake["sections"][0]["page_start"] is not None  # the PDF's page numbers
    assert full["c/hillcrest"]["answer_mode"] == "not_addressed"
    # Institutions: shown for the nodes that may speak for them.
    assert full["b/riverside"]["institution"] == "Riverside Hospital"
    assert full["c/lakeshore"]["label"] == "Lakeshore Hospital (c/lakeshore)"
    # Evidence across sources is one rank-fused list: each source's best document shares rank 1's score.
    fused = bodies["A.phys.group"]["evidence"]
    firsts = [e for e in fused if e["source_rank"] == 1]
    assert {e["source"] for e in firsts} == {
        "northbridge",
        "eastgate",
        "b/riverside",
        "c/lakeshore",
        "c/hillcrest",
    }
    assert len({e["rrf_score"] for e in firsts}) == 1 and [e["rank"] for e in firsts] == [1, 2, 3, 4, 5]


def test_status_codes_end_to_end(nodes: dict[str, str], keys: Keys) -> None:
    # Only source, denied by the node that owns it: 403, worded like a source that does not exist.
    r = ask(nodes["a"], ["b/riverside"], token(keys, USERS["C.research"] or {}))
    assert r.status_code == 403 and r.json()["reason"] == "b/riverside: not available to you"
    for missing in ("b/atlantis", "nowhere/x", "atlantis"):
        r2 = ask(nodes["a"], [missing], token(keys, USERS["C.research"] or {}))
        assert r2.status_code == 403 and r2.json()["reason"] == f"{missing}: not available to you"
    # Expired, unknown issuer, wrong key, wrong audience: 401 at the node asked, before anything fans out.
    r = ask(nodes["a"], ["eastgate"], token(keys, {"org": "A"}, exp=int(time.time()) - 3600))
    assert r.status_code == 401 and r.json()["reason"] == "token expired"
    r = ask(nodes["a"], ["eastgate"], token(keys, {"org": "A"}, iss="https://evil.test"))
    assert r.status_code == 401 and "issuer" in r.json()["reason"]
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    forged = jwt.encode(
        {"iss": IDP["A"], "aud": "node-a", "org": "A", "exp": int(time.time()) + 60}, other, algorithm="RS256"
    )
    r = ask(nodes["a"], ["eastgate"], forged)
    assert r.status_code == 401 and "signature" in r.json()["reason"]
    # A's physician's token, replayed by anyone at B directly: minted for A, refused at B.
    stolen = token(keys, USERS["A.phys"] or {})
    r = httpx.post(
        f"{nodes['b']}/collections/search",
        json={"question": QUESTION, "collections": ["riverside"]},
        headers={"Authorization": f"Bearer {stolen}"},
        timeout=30,
    )
    assert r.status_code == 401 and r.json()["reason"] == "token audience does not match"
    # node/*: every collection C lets this user search, named by C.
    r = ask(nodes["a"], ["c/*"], token(keys, USERS["C.research"] or {}))
    assert [s["source"] for s in r.json()["sources"]] == ["c/hillcrest", "c/lakeshore"]
    r = ask(nodes["a"], ["c/*"], None)
    assert [s["source"] for s in r.json()["sources"]] == ["c/hillcrest"]


def test_collections_listing_is_filtered_per_user(nodes: dict[str, str], keys: Keys) -> None:
    def names(node: str, claims: dict[str, Any] | None) -> list[str]:
        headers = (
            {}
            if claims is None
            else {"Authorization": f"Bearer {token(keys, claims, audience=f'node-{node}')}"}
        )
        r = httpx.get(f"{nodes[node]}/collections", headers=headers, timeout=30)
        assert r.status_code == 200
        return sorted(c["name"] for c in r.json()["collections"])

    assert names("c", None) == ["hillcrest"]
    assert names("c", USERS["A.phys.group"]) == ["hillcrest", "lakeshore"]
    assert names("b", USERS["A.nurse"]) == []
    assert names("b", USERS["A.phys"]) == ["riverside"]
    assert names("b", USERS["A.phys.by-B-idp"]) == []  # B's IdP cannot make an A physician
