"""The access layer: JWT verification (HS256, RS256 PEM, ES256 JWKS file) and the policy engine."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from pydantic import SecretStr, ValidationError

from app.settings import AccessSettings, IssuerSettings, Policy
from app.sources import (
    ANONYMOUS,
    AccessEngine,
    InvalidToken,
    PolicyError,
    Subject,
    TokenVerifier,
    bearer_token,
    load_policies,
)

SECRET = "test-secret-that-is-long-enough-for-hs256"


def hs(claims: dict[str, Any], secret: str = SECRET) -> str:
    return jwt.encode({"exp": int(time.time()) + 300, **claims}, secret, algorithm="HS256")


@pytest.fixture(scope="module")
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def ec_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def pem(key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey) -> str:
    return (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


# --- tokens -------------------------------------------------------------------------------------------


def test_hs256_claims_become_attributes() -> None:
    verifier = TokenVerifier(AccessSettings(jwt_secret=SecretStr(SECRET)))
    token = hs(
        {
            "sub": "u1",
            "org": "A",
            "role": "physician",
            "affiliations": ["C_neuro", "ethics"],
            "active": True,
            "level": 3,
            "address": {"city": "x"},
            "iat": int(time.time()),
        }
    )
    subject = verifier.verify(token)
    assert subject.authenticated and subject.id == "u1"
    assert subject.values("org") == ("A",)
    assert subject.values("affiliations") == ("C_neuro", "ethics")
    assert subject.values("active") == ("true",) and subject.values("level") == ("3",)
    # Registered claims describe the token; nested objects cannot be named by a policy.
    assert "exp" not in subject.attributes and "iat" not in subject.attributes
    assert "address" not in subject.attributes


@pytest.mark.parametrize(
    ("claims", "secret", "message"),
    [
        ({"exp": int(time.time()) - 3600}, SECRET, "expired"),
        ({"nbf": int(time.time()) + 3600}, SECRET, "not valid yet"),
        ({}, "another-secret-another-secret-another", "signature"),
    ],
)
def test_bad_hs256_tokens_are_refused_with_a_reason(
    claims: dict[str, Any], secret: str, message: str
) -> None:
    verifier = TokenVerifier(AccessSettings(jwt_secret=SecretStr(SECRET)))
    with pytest.raises(InvalidToken, match=message):
        verifier.verify(hs({"sub": "u", **claims}, secret))


@pytest.mark.parametrize(
    "claims",
    [
        {"exp": str(int(time.time()) + 10 * 365 * 86400)},  # ten years ahead, as a string
        {"iat": str(int(time.time()))},
        {"nbf": str(int(time.time()) - 10)},
        {"iat": True},
    ],
)
def test_time_claims_that_are_not_numbers_are_refused(claims: dict[str, Any]) -> None:
    """Issue 27, finding 10: PyJWT reads a numeric string as a time, and the lifetime cap skipped it."""
    verifier = TokenVerifier(AccessSettings(jwt_secret=SecretStr(SECRET)))
    with pytest.raises(InvalidToken, match="is not a number"):
        verifier.verify(hs({"sub": "u", **claims}))


def test_leeway_accepts_a_token_that_just_expired() -> None:
    verifier = TokenVerifier(AccessSettings(jwt_secret=SecretStr(SECRET), leeway_s=60))
    assert verifier.verify(hs({"exp": int(time.time()) - 10})).authenticated
    strict = TokenVerifier(AccessSettings(jwt_secret=SecretStr(SECRET), leeway_s=0))
    with pytest.raises(InvalidToken, match="expired"):
        strict.verify(hs({"exp": int(time.time()) - 10}))


def test_exp_issuer_and_audience_are_required_when_configured() -> None:
    settings = AccessSettings(jwt_secret=SecretStr(SECRET), issuer="https://idp.a", audience="cometa")
    verifier = TokenVerifier(settings)
    good = hs({"iss": "https://idp.a", "aud": "cometa", "role": "nurse"})
    assert verifier.verify(good).values("role") == ("nurse",)
    with pytest.raises(InvalidToken, match="issuer"):
        verifier.verify(hs({"iss": "https://evil", "aud": "cometa"}))
    with pytest.raises(InvalidToken, match="audience"):
        verifier.verify(hs({"iss": "https://idp.a", "aud": "other"}))
    with pytest.raises(InvalidToken, match="'aud'"):
        verifier.verify(hs({"iss": "https://idp.a"}))
    no_exp = jwt.encode({"iss": "https://idp.a", "aud": "cometa"}, SECRET, algorithm="HS256")
    with pytest.raises(InvalidToken, match="'exp'"):
        verifier.verify(no_exp)


def test_garbage_and_unconfigured_verification_are_refused() -> None:
    with pytest.raises(InvalidToken, match="invalid token"):
        TokenVerifier(AccessSettings(jwt_secret=SecretStr(SECRET))).verify("not.a.jwt")
    with pytest.raises(InvalidToken, match="no verification key"):
        TokenVerifier(AccessSettings()).verify(hs({}))


def test_rs256_public_key_pem_and_no_algorithm_confusion(rsa_key: rsa.RSAPrivateKey, tmp_path: Path) -> None:
    public = pem(rsa_key)
    key_file = tmp_path / "idp.pem"
    key_file.write_text(public)
    verifier = TokenVerifier(AccessSettings(jwt_public_key_file=key_file))
    token = jwt.encode({"exp": int(time.time()) + 60, "org": "B"}, rsa_key, algorithm="RS256")
    assert verifier.verify(token).values("org") == ("B",)

    # The classic attack: an HS256 token "signed" with the public key text as the HMAC secret (built by
    # hand: PyJWT itself refuses PEM text as an HMAC key).
    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    header = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = b64(json.dumps({"exp": int(time.time()) + 60, "org": "A"}).encode())
    sig = hmac.new(public.encode(), f"{header}.{payload}".encode(), hashlib.sha256).digest()
    with pytest.raises(InvalidToken):
        verifier.verify(f"{header}.{payload}.{b64(sig)}")


def test_hs256_cannot_be_listed_for_public_keys() -> None:
    with pytest.raises(ValidationError, match="jwt_secret"):
        AccessSettings(algorithms=["RS256", "HS256"])


def test_es256_jwks_file_picks_the_key_by_kid(ec_key: ec.EllipticCurvePrivateKey, tmp_path: Path) -> None:
    other = ec.generate_private_key(ec.SECP256R1())
    jwks = {
        "keys": [
            {
                **json.loads(jwt.algorithms.ECAlgorithm.to_jwk(other.public_key())),
                "kid": "old",
                "alg": "ES256",
            },
            {
                **json.loads(jwt.algorithms.ECAlgorithm.to_jwk(ec_key.public_key())),
                "kid": "k2",
                "alg": "ES256",
            },
        ]
    }
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(jwks))
    verifier = TokenVerifier(AccessSettings(jwks_file=path))
    claims = {"exp": int(time.time()) + 60, "department": "cardiology"}
    good = jwt.encode(claims, ec_key, algorithm="ES256", headers={"kid": "k2"})
    assert verifier.verify(good).values("department") == ("cardiology",)
    wrong_key = jwt.encode(claims, ec_key, algorithm="ES256", headers={"kid": "old"})
    with pytest.raises(InvalidToken, match="signature"):
        verifier.verify(wrong_key)
    unknown = jwt.encode(claims, ec_key, algorithm="ES256", headers={"kid": "nope"})
    with pytest.raises(InvalidToken, match="key id"):
        verifier.verify(unknown)


def test_unreadable_key_material_is_a_policy_error(tmp_path: Path) -> None:
    bad = tmp_path / "jwks.json"
    bad.write_text("{not json")
    with pytest.raises(PolicyError, match="verification key"):
        TokenVerifier(AccessSettings(jwks_file=bad))


@pytest.mark.parametrize(
    ("header", "token"),
    [("Bearer abc.def", "abc.def"), ("bearer  x ", "x"), ("Basic abc", None), ("Bearer", None), (None, None)],
)
def test_bearer_header_parsing(header: str | None, token: str | None) -> None:
    assert bearer_token(header) == token


# --- policies: a FEDRAG-style case study ----------------------------------------------------------------


@dataclass(frozen=True)
class Coll:
    name: str
    private: bool


@dataclass(frozen=True)
class Doc:
    doc_id: str
    attributes: dict[str, str] = field(default_factory=dict)


def user(**attrs: str | tuple[str, ...]) -> Subject:
    return Subject(authenticated=True, attributes=attrs)


POLICIES = [
    # Hospital A: physicians and nurses of A; physicians of B (the asymmetry of FEDRAG Fig. 5-2).
    {
        "id": "a-staff",
        "collections": ["a-*"],
        "action": "search",
        "subject": {"org": ["A"], "role": ["physician", "nurse"]},
    },
    {
        "id": "a-from-b",
        "collections": ["a-*"],
        "action": "search",
        "subject": {"org": "B", "role": "physician"},
    },
    # Hospital C's private neurology collection: its own staff, or the C_neuro research group.
    {"id": "c-own", "collections": ["c-neuro"], "action": "search", "subject": {"org": ["C"]}},
    {
        "id": "c-group",
        "collections": ["c-neuro"],
        "action": "search",
        "subject": {"affiliations": ["C_neuro"]},
    },
    # Document level in A's handbooks: same department, or documents written for patients, or physicians.
    {"id": "a-same-dept", "collections": ["a-*"], "action": "retrieve", "same": {"department": "department"}},
    {
        "id": "a-patient-docs",
        "collections": ["a-*"],
        "action": "retrieve",
        "document": {"audience": "patients"},
    },
    {"id": "a-physicians", "collections": ["a-*"], "action": "retrieve", "subject": {"role": "physician"}},
    # A public collection anyone may search, even without a token.
    {"id": "open", "collections": ["public-leaflets"], "action": "search", "authenticated": False},
]

COLLECTIONS = {
    "a-handbook": Coll("a-handbook", private=True),
    "c-neuro": Coll("c-neuro", private=True),
    "b-public": Coll("b-public", private=False),  # no policy: public default allow
    "d-private": Coll("d-private", private=True),  # no policy: private default deny
    "public-leaflets": Coll("public-leaflets", private=False),
}

USERS = {
    "A.phys.neur": user(org="A", role="physician", department="surgery", affiliations=("C_neuro",)),
    "A.nurse": user(org="A", role="nurse", department="psychiatry"),
    "A.admin": user(org="A", role="admin"),
    "B.phys": user(org="B", role="physician", department="cardiology"),
    "B.nurse": user(org="B", role="nurse", department="medicine"),
    "C.research": user(org="C", role="researcher", department="neurology"),
    "anonymous": ANONYMOUS,
}

# users x collections -> may search (the gate).
GATE = {
    "A.phys.neur": {"a-handbook": 1, "c-neuro": 1, "b-public": 1, "d-private": 0, "public-leaflets": 1},
    "A.nurse": {"a-handbook": 1, "c-neuro": 0, "b-public": 1, "d-private": 0, "public-leaflets": 1},
    "A.admin": {"a-handbook": 0, "c-neuro": 0, "b-public": 1, "d-private": 0, "public-leaflets": 1},
    "B.phys": {"a-handbook": 1, "c-neuro": 0, "b-public": 1, "d-private": 0, "public-leaflets": 1},
    "B.nurse": {"a-handbook": 0, "c-neuro": 0, "b-public": 1, "d-private": 0, "public-leaflets": 1},
    "C.research": {"a-handbook": 0, "c-neuro": 1, "b-public": 1, "d-private": 0, "public-leaflets": 1},
    "anonymous": {"a-handbook": 0, "c-neuro": 0, "b-public": 1, "d-private": 0, "public-leaflets": 1},
}


@pytest.fixture(scope="module")
def engine() -> AccessEngine:
    return AccessEngine([Policy.model_validate(p) for p in POLICIES])


def test_gate_matrix(engine: AccessEngine) -> None:
    got = {
        u: {c: int(engine.can_search(subject, coll).allowed) for c, coll in COLLECTIONS.items()}
        for u, subject in USERS.items()
    }
    assert got == GATE


def test_gate_reasons_name_the_policy_or_the_default(engine: AccessEngine) -> None:
    d = engine.can_search(USERS["A.phys.neur"], COLLECTIONS["c-neuro"])
    assert d.allowed and d.policy_id == "c-group"
    assert "private" in engine.can_search(USERS["A.nurse"], COLLECTIONS["d-private"]).reason
    assert "public" in engine.can_search(USERS["A.nurse"], COLLECTIONS["b-public"]).reason
    assert not engine.can_search(USERS["A.admin"], COLLECTIONS["a-handbook"]).allowed


DOCS = [
    Doc("travel", {"department": "transplant", "audience": "patients"}),
    Doc("psych-protocol", {"department": "psychiatry", "audience": "staff"}),
    Doc("surgery-protocol", {"department": "surgery", "audience": "staff"}),
    Doc("untagged"),
]

# users x documents of a-handbook -> may retrieve.
RETRIEVE = {
    "A.phys.neur": {"travel", "psych-protocol", "surgery-protocol", "untagged"},  # physician
    "A.nurse": {"travel", "psych-protocol"},  # patients' docs + own department
    "B.phys": {"travel", "psych-protocol", "surgery-protocol", "untagged"},
    "C.research": {"travel"},  # would pass no gate, but the document rule alone allows the patients' doc
}


def test_document_decisions(engine: AccessEngine) -> None:
    for name, expected in RETRIEVE.items():
        keep = engine.doc_filter(USERS[name], "a-handbook")
        assert keep is not None
        assert {d.doc_id for d in DOCS if keep(d)} == expected, name


def test_no_retrieve_policy_means_the_gate_decides(engine: AccessEngine) -> None:
    assert engine.doc_filter(USERS["A.nurse"], "b-public") is None
    assert engine.can_retrieve(USERS["A.nurse"], "b-public", DOCS[1]).allowed


def test_star_value_needs_the_attribute_present() -> None:
    engine = AccessEngine([Policy(id="any-org", collections=["x"], action="search", subject={"org": ["*"]})])
    coll = Coll("x", private=True)
    assert engine.can_search(user(org="Z"), coll).allowed
    assert not engine.can_search(user(role="nurse"), coll).allowed


def test_policies_from_a_file_and_inline(tmp_path: Path) -> None:
    path = tmp_path / "policies.json"
    path.write_text(json.dumps({"policies": POLICIES[:2]}))
    inline = [Policy.model_validate(POLICIES[2])]
    loaded = load_policies(AccessSettings(policies_file=path, policies=inline))
    assert [p.id for p in loaded] == ["c-own", "a-staff", "a-from-b"]
    path.write_text(json.dumps(POLICIES[:1]))  # a bare list works too
    assert [p.id for p in load_policies(AccessSettings(policies_file=path))] == ["a-staff"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{oops", "cannot read"),
        ('{"policies": {"id": "x"}}', "expected a list"),
        ('[{"id": "x", "action": "delete"}]', "policy file"),
        ('[{"id": "x", "action": "search", "colour": "red"}]', "policy file"),
        ('[{"id": "x", "action": "search"}, {"id": "x", "action": "retrieve"}]', "duplicate"),
    ],
)
def test_bad_policy_files_fail_loudly(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "p.json"
    path.write_text(content)
    with pytest.raises(PolicyError, match=message):
        load_policies(AccessSettings(policies_file=path))


def test_inline_policies_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.settings import Settings

    monkeypatch.setenv("COMETA_ACCESS__POLICIES", json.dumps(POLICIES[:1]))
    monkeypatch.setenv("COMETA_ACCESS__JWT_SECRET", SECRET)
    settings = Settings()
    assert [p.id for p in load_policies(settings.access)] == ["a-staff"]
    assert settings.access.verifies_tokens


def test_each_identity_provider_verifies_with_its_own_key(rsa_key: rsa.RSAPrivateKey) -> None:
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    settings = AccessSettings(
        issuers=[
            IssuerSettings(issuer="https://idp.a", jwt_public_key=pem(rsa_key)),
            IssuerSettings(issuer="https://idp.b", jwt_public_key=pem(other)),
        ]
    )
    verifier = TokenVerifier(settings)
    now = int(time.time())
    for iss, key in (("https://idp.a", rsa_key), ("https://idp.b", other)):
        subject = verifier.verify(
            jwt.encode({"iss": iss, "exp": now + 60, "org": "A"}, key, algorithm="RS256")
        )
        assert subject.issuer == iss and subject.values("org") == ("A",)
    # B's key under A's name, and a name nobody configured.
    with pytest.raises(InvalidToken, match="signature"):
        verifier.verify(jwt.encode({"iss": "https://idp.a", "exp": now + 60}, other, algorithm="RS256"))
    with pytest.raises(InvalidToken, match="trusted identity provider"):
        verifier.verify(jwt.encode({"iss": "https://idp.c", "exp": now + 60}, other, algorithm="RS256"))
    with pytest.raises(PolicyError, match="configured twice"):
        TokenVerifier(AccessSettings(issuers=[settings.issuers[0], settings.issuers[0]]))
    with pytest.raises(ValidationError, match="exactly one of"):
        IssuerSettings(issuer="https://idp.a")
    with pytest.raises(ValidationError, match="exactly one of"):
        IssuerSettings(issuer="https://idp.a", jwt_public_key=pem(rsa_key), jwt_secret=SecretStr(SECRET))
