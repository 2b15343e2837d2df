"""Attribute-based access to institutional collections: JWT subjects, policies, decisions.

Callers present ``Authorization: Bearer <JWT>``. We verify tokens, we do not issue them: an HS256 shared
secret, an RS256/ES256 public key (PEM) or an OIDC JWKS *file* is configured, and ``exp``/``nbf`` (always
when present; ``exp`` required by default), ``iss`` and ``aud`` (when configured) are checked. The token's
claims become the subject's attributes (``org``, ``role``, ``department``, ``affiliations``...).

Policies (FEDRAG §4.2.3 / §5.1.1): each names the collections it covers and an action, ``search`` (the
collection gate: may this subject search the collection at all) or ``retrieve`` (the per-document
decision). Within a policy every listed attribute must match (AND) and any listed value will do (OR; a
list-valued claim matches when any of its items does). For one collection and one action:

* no policy covers it → the default: a private collection denies ``search``, a public one allows it;
  ``retrieve`` with no policy allows every document of a collection the subject may search;
* some policies cover it → allowed if ANY of them allows (there are no deny rules).

Decisions are made at the node that owns the data (``app.sources`` applies them before any content is
read), so a remote caller's token is forwarded and judged here, never trusted from the caller's node.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import jwt
from pydantic import ValidationError

from app.settings import AccessSettings, Policy
from core import CometaError

__all__ = [
    "ANONYMOUS",
    "NOT_AVAILABLE",
    "AccessEngine",
    "AccessError",
    "Decision",
    "InvalidToken",
    "PolicyError",
    "Subject",
    "TokenVerifier",
    "bearer_token",
    "load_policies",
]

# The one answer for a collection or node the caller may not read, whether it exists or not (status
# "denied", this reason, no timing): a private collection and a missing one are indistinguishable. Which
# policy decided, or that nothing exists, goes to the node's audit log only.
NOT_AVAILABLE = "not available to you"

# Registered JWT claims describe the token, not the person: they are not subject attributes.
_REGISTERED = frozenset({"exp", "nbf", "iat", "iss", "aud", "jti"})


class AccessError(CometaError):
    """Root of the access-control failures."""


class InvalidToken(AccessError):
    """A bearer token that does not verify (signature, expiry, issuer, audience, format): HTTP 401."""


class PolicyError(AccessError):
    """The policy file or inline policies cannot be read: a configuration error, raised at start-up."""


@dataclass(frozen=True)
class Subject:
    """Who is asking: verified claims as attributes (strings or tuples of strings)."""

    authenticated: bool
    attributes: Mapping[str, str | tuple[str, ...]] = field(default_factory=dict)

    @property
    def id(self) -> str | None:
        sub = self.attributes.get("sub")
        return sub if isinstance(sub, str) else None

    def values(self, name: str) -> tuple[str, ...]:
        value = self.attributes.get(name)
        if value is None:
            return ()
        return (value,) if isinstance(value, str) else value


ANONYMOUS = Subject(authenticated=False)


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str  # for the caller and the audit log: which policy, or which default
    policy_id: str | None = None


class _Collection(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def private(self) -> bool: ...


class _Document(Protocol):
    @property
    def attributes(self) -> Mapping[str, str]: ...


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer ...`` header; None when there is no bearer header."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip() or None


def _attributes(claims: Mapping[str, Any]) -> dict[str, str | tuple[str, ...]]:
    attrs: dict[str, str | tuple[str, ...]] = {}
    for name, value in claims.items():
        if name in _REGISTERED:
            continue
        if isinstance(value, str):
            attrs[name] = value
        elif isinstance(value, bool | int | float):
            attrs[name] = str(value).lower() if isinstance(value, bool) else str(value)
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            attrs[name] = tuple(value)
        # Nested objects are not attributes a policy can name: ignored.
    return attrs


class TokenVerifier:
    """Verifies bearer JWTs against the configured key material; never fetches anything."""

    def __init__(self, settings: AccessSettings) -> None:
        self.settings = settings
        self._jwks: jwt.PyJWKSet | None = None
        self._pem: str | None = settings.jwt_public_key
        try:
            if settings.jwks_file is not None:
                self._jwks = jwt.PyJWKSet.from_json(settings.jwks_file.read_text())
            if self._pem is None and settings.jwt_public_key_file is not None:
                self._pem = settings.jwt_public_key_file.read_text()
        except (OSError, jwt.PyJWTError, ValueError) as exc:
            raise PolicyError(f"cannot read the token verification key: {type(exc).__name__}: {exc}") from exc

    @property
    def configured(self) -> bool:
        return self.settings.verifies_tokens

    def _key(self, token: str) -> tuple[Any, list[str]]:
        s = self.settings
        if self._jwks is not None:
            try:
                kid = jwt.get_unverified_header(token).get("kid")
            except jwt.PyJWTError as exc:
                raise InvalidToken(f"malformed token header ({type(exc).__name__})") from exc
            keys = self._jwks.keys
            if kid is not None:
                match = [k for k in keys if k.key_id == kid]
            else:
                match = keys if len(keys) == 1 else []
            if not match:
                raise InvalidToken("no key in the JWKS matches the token's key id")
            jwk = match[0]
            algorithm = jwk.algorithm_name
            if algorithm not in s.algorithms:
                raise InvalidToken(f"key algorithm {algorithm} is not accepted")
            return jwk, [algorithm]
        if self._pem is not None:
            return self._pem, list(s.algorithms)
        if s.jwt_secret is not None:
            return s.jwt_secret.get_secret_value(), ["HS256"]
        raise InvalidToken("bearer tokens are not accepted here: no verification key is configured")

    def verify(self, token: str) -> Subject:
        s = self.settings
        key, algorithms = self._key(token)
        required = ["exp"] if s.require_exp else []
        if s.issuer is not None:
            required.append("iss")
        if s.audience is not None:
            required.append("aud")
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=algorithms,
                audience=s.audience,
                issuer=s.issuer,
                leeway=s.leeway_s,
                options={"require": required, "verify_aud": s.audience is not None},
            )
        except jwt.ExpiredSignatureError as exc:
            raise InvalidToken("token expired") from exc
        except jwt.ImmatureSignatureError as exc:
            raise InvalidToken("token not valid yet (nbf)") from exc
        except jwt.InvalidAudienceError as exc:
            raise InvalidToken("token audience does not match") from exc
        except jwt.InvalidIssuerError as exc:
            raise InvalidToken("token issuer does not match") from exc
        except jwt.MissingRequiredClaimError as exc:
            raise InvalidToken(f"token lacks the {exc.claim!r} claim") from exc
        except jwt.InvalidSignatureError as exc:
            raise InvalidToken("token signature does not verify") from exc
        except (jwt.PyJWTError, ValueError, TypeError) as exc:
            raise InvalidToken(f"invalid token ({type(exc).__name__})") from exc
        return Subject(authenticated=True, attributes=_attributes(claims))


def load_policies(settings: AccessSettings) -> list[Policy]:
    """Inline policies, then the policy file's (``{"policies": [...]}`` or a bare list); both may be set."""
    policies = list(settings.policies or [])
    path = settings.policies_file
    if path is not None:
        try:
            raw = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise PolicyError(f"cannot read policy file {path.name}: {type(exc).__name__}: {exc}") from exc
        items = raw.get("policies") if isinstance(raw, dict) else raw
        if not isinstance(items, list):
            raise PolicyError(f"policy file {path.name}: expected a list or {{'policies': [...]}}")
        try:
            policies.extend(Policy.model_validate(item) for item in items)
        except ValidationError as exc:
            raise PolicyError(f"policy file {path.name}: {exc.errors()[0]['msg']}") from exc
    ids = [p.id for p in policies]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise PolicyError(f"duplicate policy ids: {dupes}")
    return policies


def _match_values(have: tuple[str, ...], allowed: Sequence[str]) -> bool:
    if not have:
        return False
    return "*" in allowed or any(v in allowed for v in have)


class AccessEngine:
    """Evaluates the policies; pure and synchronous (decisions are cheap and made per document)."""

    def __init__(self, policies: Sequence[Policy] = ()) -> None:
        self.policies = tuple(policies)

    def _subject_ok(self, policy: Policy, subject: Subject) -> bool:
        if policy.authenticated and not subject.authenticated:
            return False
        return all(_match_values(subject.values(a), allowed) for a, allowed in policy.subject.items())

    def can_search(self, subject: Subject, collection: _Collection) -> Decision:
        """The gate: may ``subject`` search ``collection`` at all?"""
        covering = [p for p in self.policies if p.covers(collection.name, "search")]
        if not covering:
            if collection.private:
                return Decision(False, "private collection: denied unless a policy allows")
            return Decision(True, "public collection: no search policy restricts it")
        for policy in covering:
            if self._subject_ok(policy, subject):
                return Decision(True, f"allowed by policy {policy.id}", policy.id)
        return Decision(False, f"no search policy for {collection.name} allows this subject")

    def can_retrieve(self, subject: Subject, collection: str, document: _Document) -> Decision:
        """The per-document decision, for a subject the gate already let in."""
        covering = [p for p in self.policies if p.covers(collection, "retrieve")]
        if not covering:
            return Decision(True, "no retrieve policy: the gate decides")
        attrs = document.attributes
        for policy in covering:
            if not self._subject_ok(policy, subject):
                continue
            if not all(
                attrs.get(a) is not None and _match_values((attrs[a],), allowed)
                for a, allowed in policy.document.items()
            ):
                continue
            if not all(
                attrs.get(d) is not None and attrs[d] in subject.values(s) for s, d in policy.same.items()
            ):
                continue
            return Decision(True, f"allowed by policy {policy.id}", policy.id)
        return Decision(False, f"no retrieve policy for {collection} allows this document")

    def doc_filter(self, subject: Subject, collection: str) -> Callable[[_Document], bool] | None:
        """A ``CollectionRetriever`` document filter; None when no retrieve policy covers the collection."""
        if not any(p.covers(collection, "retrieve") for p in self.policies):
            return None

        def allowed(document: _Document) -> bool:
            return self.can_retrieve(subject, collection, document).allowed

        return allowed
