"""S3 requests through presigned URLs are checked as S3 checks them: signature and expiry.

moto's server accepts a presigned URL whatever was done to it: another key, another method, a signed
header left out or changed (an upload URL's `x-amz-meta-publisher`, which names who may publish an
environment), a URL long expired. S3 answers 403 to each. This hook recomputes the SigV4 query signature
of every request to the moto server that carries one, with the local cloud's only credentials (any other
access key is one S3 does not know), and answers S3's error when it differs or the URL has expired.
Requests signed in an Authorization header (the SDKs, the AWS CLI) are left as they are: moto takes any
credentials for those, and the local cloud hands out no others.
"""

from __future__ import annotations

import hmac
import time
from calendar import timegm
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qs

from localcloud.server_dispatch import Dispatch, DispatchHook

_SIGNATURE = "X-Amz-Signature"
_TIMESTAMP = "%Y%m%dT%H%M%SZ"


def _error(start_response: Any, code: str, message: str) -> list[bytes]:
    body = f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>{message}</Message>'
    body += "</Error>"
    encoded = body.encode()
    headers = [("Content-Type", "application/xml"), ("Content-Length", str(len(encoded)))]
    start_response("403 Forbidden", headers)
    return [encoded]


def refusal(environ: dict[str, Any], secrets: dict[str, str], now: float) -> tuple[str, str] | None:
    """S3's error code and message for a presigned request it would refuse; None if it would take it."""
    from botocore.auth import S3SigV4QueryAuth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    if environ.get("REQUEST_METHOD") == "OPTIONS":
        # A browser's CORS preflight carries the URL but is not signed: S3 answers it from the CORS rules.
        return None
    query = str(environ.get("QUERY_STRING", ""))
    params = {name: values[0] for name, values in parse_qs(query, keep_blank_values=True).items()}
    if _SIGNATURE not in params:
        return None
    try:
        access_key, day, region, service, _ = params["X-Amz-Credential"].split("/")
        signed_at = time.strptime(params["X-Amz-Date"], _TIMESTAMP)
        expires = int(params["X-Amz-Expires"])
        signed_headers = params["X-Amz-SignedHeaders"].split(";")
    except (KeyError, ValueError):
        return "AuthorizationQueryParametersError", "The presigned URL lacks a SigV4 query parameter."
    if service != "s3":
        return None
    secret = secrets.get(access_key)
    if secret is None:
        return "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records."
    if now > timegm(signed_at) + expires:
        return "AccessDenied", "Request has expired"
    headers = {name: _header(environ, name) for name in signed_headers}
    if day != params["X-Amz-Date"][:8] or None in headers.values():
        # A scope of another day, or a signed header the request does not send.
        return _MISMATCH
    unsigned_query = "&".join(part for part in query.split("&") if not part.startswith(f"{_SIGNATURE}="))
    # The path as the client sent it, still percent-encoded: S3 signs it so.
    path = str(environ.get("RAW_URI") or environ.get("PATH_INFO", "/")).split("?", 1)[0]
    request = AWSRequest(
        method=str(environ.get("REQUEST_METHOD", "GET")),
        url=f"http://{headers.get('host') or ''}{path}?{unsigned_query}",
        headers=headers,
    )
    request.context["timestamp"] = params["X-Amz-Date"]
    signer = S3SigV4QueryAuth(
        Credentials(access_key, secret, params.get("X-Amz-Security-Token")), "s3", region, expires
    )
    expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
    if not hmac.compare_digest(expected, params[_SIGNATURE]):
        return _MISMATCH
    return None


_MISMATCH = (
    "SignatureDoesNotMatch",
    "The request signature we calculated does not match the signature you provided. "
    "Check your key and signing method.",
)


def _header(environ: dict[str, Any], name: str) -> str | None:
    key = name.upper().replace("-", "_")
    value = environ.get(key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{key}")
    return None if value is None else str(value)


class PresignedUrlChecks(DispatchHook):
    """Context manager: while active, the moto server refuses presigned requests S3 would refuse.

    ``secrets`` maps each access key the local cloud signs with to its secret."""

    def __init__(self, secrets: dict[str, str], clock: Callable[[], float] = time.time) -> None:
        super().__init__()
        self.secrets = dict(secrets)
        self._clock = clock

    def wrap(self, dispatch: Dispatch) -> Dispatch:
        def checked(dispatcher: Any, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
            refused = refusal(environ, self.secrets, self._clock())
            if refused is not None:
                return _error(start_response, *refused)
            return dispatch(dispatcher, environ, start_response)

        return checked
