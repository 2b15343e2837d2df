"""Token exchange between nodes: a caller's token never leaves the node it was given to.

A caller authenticates at their own node (node A) with their identity provider's token, audience-bound to
A. When A asks node B for a collection, it does not forward that token: it signs a short-lived assertion
of its own (RFC 8693's token-exchange idea, done locally) and sends that instead::

    header  {"alg": "ES256", "typ": "cometa-assertion+jwt", "kid": "<A's node_id>"}
    claims  {"iss": "<A's node_id>", "aud": "<B's audience>", "sub": "<caller's sub>",
             "iat": now, "nbf": now, "exp": now + assertion_lifetime_s (60 s),
             "jti": "<random>", "idp": "<the caller's verified issuer>",
             "attrs": {<the caller's verified attributes B's policies use>}, "act": {"sub": "<A's node_id>"}}

Only the attributes B's policies use go (``NodeSettings.attributes``, by default those A's own policies use):
the rest of the caller's token (name, e-mail, birth date, phone, ...) never leaves A.

B accepts it only from a configured peer (``FederationSettings.peers``: its name and public key), for its
own audience, within ``max_assertion_lifetime_s``, once (its ``jti`` is remembered until it expires), and
only for identity providers that peer may vouch for (``PeerSettings.issuers``). B then decides with its
own policies on the attributes and issuer A verified. What a captured assertion is worth: one request, at
one node, for a minute. Anonymous callers get no assertion (and no service token unless a node is
configured with ``anonymous_service_token``): B sees them as anonymous.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from app.settings import AccessSettings, FederationSettings

from ._access import (
    InvalidToken,
    PolicyError,
    Subject,
    TokenVerifier,
    _attributes,
    claimed_issuer,
    decode_jwt,
)

__all__ = ["ASSERTION_TYP", "AssertionSigner", "AssertionVerifier", "CallerVerifier"]

ASSERTION_TYP = "cometa-assertion+jwt"


def _algorithm(key: Any) -> str:
    if isinstance(key, ec.EllipticCurvePrivateKey | ec.EllipticCurvePublicKey):
        return {"secp256r1": "ES256", "secp384r1": "ES384", "secp521r1": "ES512"}[key.curve.name]
    if isinstance(key, rsa.RSAPrivateKey | rsa.RSAPublicKey):
        return "RS256"
    raise PolicyError(f"assertion keys are EC (P-256/384/521) or RSA, not {type(key).__name__}")


class AssertionSigner:
    """Signs this node's assertions (``FederationSettings.node_id`` + ``signing_key``)."""

    def __init__(self, node_id: str, pem: bytes, lifetime_s: int) -> None:
        try:
            key = serialization.load_pem_private_key(pem, password=None)
        except (ValueError, TypeError) as exc:
            raise PolicyError(f"cannot read the federation signing key: {type(exc).__name__}") from exc
        self.node_id = node_id
        self._key = key
        self._algorithm = _algorithm(key)
        self.lifetime_s = lifetime_s

    @classmethod
    def from_settings(cls, settings: FederationSettings) -> AssertionSigner | None:
        """None when this node has no signing key (it then vouches for nobody)."""
        if settings.node_id is None:
            return None
        if settings.signing_key is not None:
            pem = settings.signing_key.get_secret_value().encode()
        elif settings.signing_key_file is not None:
            try:
                pem = settings.signing_key_file.read_bytes()
            except OSError as exc:
                raise PolicyError(f"cannot read the federation signing key: {exc}") from exc
        else:
            return None
        return cls(settings.node_id, pem, settings.assertion_lifetime_s)

    def assertion(self, subject: Subject, audience: str, attributes: Collection[str]) -> str:
        """An assertion for ``subject`` (authenticated), valid at ``audience`` only, for ``lifetime_s``,
        carrying of the caller's attributes only ``attributes`` (those the policies there use)."""
        if not subject.authenticated:
            raise ValueError("anonymous callers are not vouched for")
        now = int(time.time())
        attrs = {
            k: v if isinstance(v, str) else list(v)
            for k, v in subject.attributes.items()
            if k in attributes and k != "sub"  # the caller's sub goes as the assertion's sub
        }
        claims = {
            "iss": self.node_id,
            "aud": audience,
            "iat": now,
            "nbf": now,
            "exp": now + self.lifetime_s,
            "jti": uuid.uuid4().hex,
            "idp": subject.issuer,
            "attrs": attrs,
            "act": {"sub": self.node_id},
        }
        if subject.id is not None:
            claims["sub"] = subject.id
        headers = {"typ": ASSERTION_TYP, "kid": self.node_id}
        return jwt.encode(claims, self._key, algorithm=self._algorithm, headers=headers)  # type: ignore[arg-type]


@dataclass(frozen=True)
class _Peer:
    name: str
    key: Any
    algorithm: str
    issuers: frozenset[str]  # "*" = any


class AssertionVerifier:
    """Accepts the assertions of configured peers, each once, for this node's audience only."""

    def __init__(
        self, federation: FederationSettings, access: AccessSettings, own_issuers: frozenset[str]
    ) -> None:
        self.audience = access.audience
        self.leeway_s = access.leeway_s
        self.max_lifetime_s = federation.max_assertion_lifetime_s
        self._peers: dict[str, _Peer] = {}
        for p in federation.peers:
            try:
                pem = p.public_key.encode() if p.public_key is not None else p.public_key_file.read_bytes()  # type: ignore[union-attr]
                key = serialization.load_pem_public_key(pem)
            except (OSError, ValueError, TypeError) as exc:
                raise PolicyError(f"cannot read peer {p.name}'s public key: {type(exc).__name__}") from exc
            issuers = frozenset(p.issuers) if p.issuers else own_issuers
            self._peers[p.name] = _Peer(p.name, key, _algorithm(key), issuers)
        self._seen: dict[str, float] = {}  # jti -> exp: a replay inside the lifetime is refused
        self._lock = threading.Lock()

    def verify(self, token: str) -> Subject:
        claimed = claimed_issuer(token, "assertion")
        peer = self._peers.get(claimed) if claimed is not None else None
        if peer is None:
            raise InvalidToken("assertion from a node this node does not trust")
        if self.audience is None:  # settings refuse to start so; kept for direct construction
            raise InvalidToken("this node has no audience: it accepts no assertions")
        claims = decode_jwt(
            token,
            peer.key,
            algorithms=[peer.algorithm],
            audience=self.audience,
            issuer=peer.name,
            leeway=self.leeway_s,
            max_lifetime_s=self.max_lifetime_s,
            require=("iat", "jti"),
        )
        idp = claims.get("idp")
        if "*" not in peer.issuers and idp not in peer.issuers:
            raise InvalidToken(f"node {peer.name} may not vouch for users of issuer {idp!r}")
        attrs = claims.get("attrs")
        if not isinstance(attrs, Mapping):
            raise InvalidToken("assertion without attributes")
        self._remember(str(claims["jti"]), float(claims["exp"]))
        attributes = _attributes(attrs)
        sub = claims.get("sub")
        if isinstance(sub, str):
            attributes["sub"] = sub  # the caller, as their node names them (audit, a policy on "sub")
        issuer = idp if isinstance(idp, str) else None
        return Subject(authenticated=True, attributes=attributes, issuer=issuer)

    def _remember(self, jti: str, exp: float) -> None:
        now = time.time()
        with self._lock:
            if len(self._seen) > 10_000:  # forget what has expired anyway
                self._seen = {j: e for j, e in self._seen.items() if e + self.leeway_s > now}
            if jti in self._seen:
                raise InvalidToken("assertion replayed")
            self._seen[jti] = exp


class CallerVerifier:
    """Who is calling: an identity provider's token (:class:`TokenVerifier`) or a peer node's assertion
    (:class:`AssertionVerifier`), told apart by the JWT's ``typ`` header. A forged ``typ`` gains nothing:
    each path verifies with its own keys."""

    def __init__(self, access: AccessSettings, federation: FederationSettings) -> None:
        self.tokens = TokenVerifier(access)
        self.assertions = AssertionVerifier(federation, access, self.tokens.issuers)

    def verify(self, token: str) -> Subject:
        try:
            typ = jwt.get_unverified_header(token).get("typ")
        except jwt.PyJWTError as exc:
            raise InvalidToken(f"invalid token ({type(exc).__name__})") from exc
        if typ == ASSERTION_TYP:
            return self.assertions.verify(token)
        return self.tokens.verify(token)
