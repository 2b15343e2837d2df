"""Attribute-based access to institutional collections: JWT subjects, policies, decisions.

Callers present ``Authorization: Bearer <JWT>``. We verify tokens, we do not issue them. Each trusted
identity provider is configured with its own key (``COMETA_ACCESS__ISSUERS``: an HS256 shared secret, an
RS256/ES256 public key (PEM) or an OIDC JWKS *file*; the top-level key fields are one more), and a token
is verified with the key of the issuer it names, so one hospital's IdP cannot mint tokens in another's
name. ``exp``/``nbf`` (always when present; ``exp`` required by default), the lifetime
(``max_token_lifetime_s``), ``iss`` and ``aud`` (when configured; the audience is required with federation
on) are checked. The token's claims become the subject's attributes (``org``, ``role``, ``department``,
``affiliations``...) and its verified issuer the subject's ``issuer``, which a policy can require
(``Policy.issuers``): an attribute from issuer B never satisfies a policy bound to issuer A.

Policies (FEDRAG §4.2.3 / §5.1.1): each names the collections it covers and an action, ``search`` (the
collection gate: may this subject search the collection at all) or ``retrieve`` (the per-document
decision). Within a policy every listed attribute must match (AND) and any listed value will do (OR; a
list-valued claim matches when any of its items does). For one collection and one action:

* no policy covers it → the default: a private collection denies ``search``, a public one allows it;
  ``retrieve`` with no policy allows every document of a collection the subject may search;
* some policies cover it → allowed if ANY of them allows (there are no deny rules).

Decisions are made at the node that owns the data (``app.sources`` applies them before any content is
read). A remote caller arrives as an assertion signed by the calling node (``_exchange``), carrying the
attributes and issuer that node verified; their own token never leaves the node they gave it to.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import jwt
from pydantic import ValidationError

from app.settings import AccessSettings, JwtKeySettings, Policy
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
    "decode_jwt",
    "load_policies",
]

# The one answer for a collection or node the caller may not read, whether it exists or not (status
# "denied", this reason, no timing): a private collection and a missing one are indistinguishable. Which
# policy decided, or that nothing exists, goes to the node's audit log only.
NOT_AVAILABLE = "not available to you"

# Registered JWT claims describe the token, not the person: they are not subject attributes.
_REGISTERED = frozenset({"exp", "nbf", "iat", "iss", "aud", "jti", "act", "azp"})


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
    issuer: str | None = None  # the identity provider that vouched for the attributes (verified iss)

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


@dataclass(frozen=True)
class _Trusted:
    """One identity provider's verification material."""

    issuer: str | None  # None: the legacy single key without an issuer check
    jwks: jwt.PyJWKSet | None
    pem: str | None
    secret: str | None
    algorithms: tuple[str, ...]


def claimed_issuer(token: str, what: str) -> str | None:
    """The ``iss`` a token claims, read WITHOUT verification: only to pick the key that then verifies it
    (never trust it before that). A token that is not a JWT at all: :class:`InvalidToken` naming ``what``."""
    try:
        claimed = jwt.decode(token, options={"verify_signature": False}).get("iss")
    except jwt.PyJWTError as exc:
        raise InvalidToken(f"invalid {what} ({type(exc).__name__})") from exc
    return claimed if isinstance(claimed, str) else None


def _trusted(issuer: str | None, keys: JwtKeySettings) -> _Trusted:
    try:
        jwks = jwt.PyJWKSet.from_json(keys.jwks_file.read_text()) if keys.jwks_file is not None else None
        pem = keys.jwt_public_key
        if pem is None and keys.jwt_public_key_file is not None:
            pem = keys.jwt_public_key_file.read_text()
    except (OSError, jwt.PyJWTError, ValueError) as exc:
        raise PolicyError(f"cannot read the token verification key: {type(exc).__name__}: {exc}") from exc
    secret = None if keys.jwt_secret is None else keys.jwt_secret.get_secret_value()
    return _Trusted(issuer, jwks, pem, secret, tuple(keys.algorithms))


class TokenVerifier:
    """Verifies bearer JWTs against the key of the identity provider they name; never fetches anything."""

    def __init__(self, settings: AccessSettings) -> None:
        self.settings = settings
        self._issuers: dict[str | None, _Trusted] = {}
        s = settings
        if s.keys_given:
            self._issuers[s.issuer] = _trusted(s.issuer, s)
        for i in s.issuers:
            if i.issuer in self._issuers:
                raise PolicyError(f"issuer {i.issuer} is configured twice")
            self._issuers[i.issuer] = _trusted(i.issuer, i)

    @property
    def issuers(self) -> frozenset[str]:
        """The iss values this node trusts (a legacy key without an issuer names none)."""
        return frozenset(i for i in self._issuers if i is not None)

    def _trusted_for(self, token: str) -> _Trusted:
        if not self._issuers:
            raise InvalidToken("bearer tokens are not accepted here: no verification key is configured")
        claimed = claimed_issuer(token, "token")
        trusted = self._issuers.get(claimed) if claimed is not None else None
        if trusted is None:
            # The legacy key answers for tokens of no configured issuer only when it checks none itself.
            trusted = self._issuers.get(None)
        if trusted is None:
            raise InvalidToken("token issuer does not match a trusted identity provider")
        return trusted

    @staticmethod
    def _key(trusted: _Trusted, token: str) -> tuple[Any, list[str]]:
        if trusted.jwks is not None:
            try:
                kid = jwt.get_unverified_header(token).get("kid")
            except jwt.PyJWTError as exc:
                raise InvalidToken(f"malformed token header ({type(exc).__name__})") from exc
            keys = trusted.jwks.keys
            if kid is not None:
                match = [k for k in keys if k.key_id == kid]
            else:
                match = keys if len(keys) == 1 else []
            if not match:
                raise InvalidToken("no key in the JWKS matches the token's key id")
            jwk = match[0]
            algorithm = jwk.algorithm_name
            if algorithm not in trusted.algorithms:
                raise InvalidToken(f"key algorithm {algorithm} is not accepted")
            return jwk, [algorithm]
        if trusted.pem is not None:
            return trusted.pem, list(trusted.algorithms)
        assert trusted.secret is not None
        return trusted.secret, ["HS256"]

    def verify(self, token: str) -> Subject:
        s = self.settings
        trusted = self._trusted_for(token)
        key, algorithms = self._key(trusted, token)
        claims = decode_jwt(
            token,
            key,
            algorithms=algorithms,
            audience=s.audience,
            issuer=trusted.issuer,
            leeway=s.leeway_s,
            require_exp=s.require_exp,
            max_lifetime_s=s.max_token_lifetime_s,
        )
        iss = claims.get("iss")
        return Subject(
            authenticated=True, attributes=_attributes(claims), issuer=iss if isinstance(iss, str) else None
        )


def decode_jwt(
    token: str,
    key: Any,
    *,
    algorithms: Sequence[str],
    audience: str | None,
    issuer: str | None,
    leeway: float,
    require_exp: bool = True,
    max_lifetime_s: float | None = None,
    require: Sequence[str] = (),
) -> dict[str, Any]:
    """``jwt.decode`` with the checks every token here gets, its failures as :class:`InvalidToken` with a
    reason; ``max_lifetime_s``: refuse a token valid for longer (``exp - iat``, or ``exp - now``)."""
    required = (["exp"] if require_exp else []) + list(require)
    if issuer is not None:
        required.append("iss")
    if audience is not None:
        required.append("aud")
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            key,
            algorithms=list(algorithms),
            audience=audience,
            issuer=issuer,
            leeway=leeway,
            options={"require": required, "verify_aud": audience is not None},
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
    for name in ("exp", "iat", "nbf"):
        # PyJWT reads "exp": "1999999999" as a number: a string here would also slip past the lifetime cap.
        value = claims.get(name)
        if name in claims and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise InvalidToken(f"token claim {name!r} is not a number")
    exp = claims.get("exp")
    if max_lifetime_s is not None and isinstance(exp, int | float):
        iat = claims.get("iat")
        start = iat if isinstance(iat, int | float) else time.time()
        if exp - start > max_lifetime_s + leeway:
            raise InvalidToken(f"token lifetime exceeds {max_lifetime_s:g} s")
    return claims


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

    @property
    def subject_attributes(self) -> frozenset[str]:
        """The subject attributes the policies read (``subject`` and ``same``): all a decision needs."""
        return frozenset(a for p in self.policies for a in (*p.subject, *p.same))

    def _subject_ok(self, policy: Policy, subject: Subject) -> bool:
        if policy.authenticated and not subject.authenticated:
            return False
        if policy.issuers and subject.issuer not in policy.issuers:
            return False  # attributes vouched for by another identity provider do not count here
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
