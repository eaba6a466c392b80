"""Check ID tokens the way API Gateway's Cognito user pool authorizer does."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet


def moto_jwks() -> dict[str, Any]:
    """The public keys moto's Cognito signs every pool's tokens with (what a pool's jwks.json serves)."""
    from moto.utilities.utils import load_resource

    keys: dict[str, Any] = load_resource("cognitoidp/resources/jwks-public.json")
    return keys


class Unauthorized(Exception):
    """The request carries no token, or one the pool did not issue for this client; API Gateway says 401."""


class TokenVerifier:
    """Verifies a Cognito ID token: signature against the pool's JWKS, issuer, audience, use and expiry."""

    def __init__(
        self,
        *,
        user_pool_id: str,
        client_id: str,
        jwks: Mapping[str, Any],
        region: str = "us-east-1",
        leeway_s: int = 0,
    ) -> None:
        self.issuer = f"https://cognito-idp.{region}.amazonaws.com/{user_pool_id}"
        self.client_id = client_id
        self._keys = KeySet.import_key_set(dict(jwks))  # type: ignore[arg-type]
        self._claims = jwt.JWTClaimsRegistry(
            now=None,
            leeway=leeway_s,
            iss={"essential": True, "value": self.issuer},
            aud={"essential": True, "value": client_id},
            token_use={"essential": True, "value": "id"},
            exp={"essential": True},
            sub={"essential": True},
        )

    def verify(self, authorization: str | None) -> dict[str, Any]:
        """Return the token's claims, or raise Unauthorized.

        ``authorization`` is the Authorization header's value: the bare token, as the authorizer expects
        it, or with a ``Bearer`` prefix, which clients often add.
        """
        if not authorization or not authorization.strip():
            raise Unauthorized("no Authorization header")
        token = authorization.strip()
        if token.lower().startswith("bearer "):
            token = token[len("bearer ") :].strip()
        try:
            decoded = jwt.decode(token, self._keys, algorithms=["RS256"])
            self._claims.validate(decoded.claims)
        except (JoseError, ValueError) as exc:
            raise Unauthorized(f"token rejected: {exc}") from exc
        return dict(decoded.claims)


def authorizer_claims(claims: Mapping[str, Any]) -> dict[str, str]:
    """Claims as the authorizer hands them to the function: every value a string, times as dates."""
    shaped: dict[str, str] = {}
    for name, value in claims.items():
        if name in ("exp", "iat") and isinstance(value, int):
            shaped[name] = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime(value))
        elif isinstance(value, bool):
            shaped[name] = "true" if value else "false"
        elif isinstance(value, list):
            # A REST API's Cognito authorizer joins a list claim (cognito:groups) with commas.
            shaped[name] = ",".join(str(item) for item in value)
        else:
            shaped[name] = str(value)
    return shaped
