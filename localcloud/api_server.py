"""Serve the REST API on localhost: each HTTP request becomes an API Gateway REST proxy event.

The routes (resource templates such as ``/runs/{run_id}``) come from the synthesized template, and the
Cognito authorizer is played by ``auth.TokenVerifier``, so the API function sees what it would see
behind API Gateway: same event fields, same 401 and 403 answers before it is ever called. Like one
Lambda execution environment, the function is given one request at a time.
"""

from __future__ import annotations

import base64
import io
import json
import re
import socket
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from localcloud.auth import TokenVerifier, Unauthorized, authorizer_claims
from localcloud.callers import running_as
from localcloud.lambda_runtime import MAX_SYNC_RESPONSE_BYTES, Handler, LambdaContext, response_too_large
from localcloud.stack_template import ACCOUNT_ID, Route
from localcloud.threaded_server import ThreadedServer

MISSING_TOKEN_BODY = {"message": "Missing Authentication Token"}
UNAUTHORIZED_BODY = {"message": "Unauthorized"}
INTERNAL_ERROR_BODY = {"message": "Internal server error"}
TOO_LARGE_BODY = {"message": "Request Too Long"}
# API Gateway's own payload limit.
MAX_BODY_BYTES = 10 * 1024 * 1024
SOCKET_TIMEOUT_S = 30
# What is read of a refused body before its connection is closed, and how long a quiet client is waited for.
DISCARD_MAX_BYTES = 64 * 1024 * 1024
DISCARD_QUIET_S = 1.0
_TEXT_TYPES = ("text/", "application/json", "application/x-www-form-urlencoded", "application/xml")


class _CompiledRoute:
    def __init__(self, route: Route) -> None:
        self.route = route
        segments = [s for s in route.resource.split("/") if s]
        pattern = ""
        for segment in segments:
            greedy = re.fullmatch(r"\{(\w+)\+\}", segment)
            plain = re.fullmatch(r"\{(\w+)\}", segment)
            if greedy:
                pattern += f"/(?P<{greedy.group(1)}>.+)"
            elif plain:
                pattern += f"/(?P<{plain.group(1)}>[^/]+)"
            else:
                pattern += "/" + re.escape(segment)
        self.regex = re.compile((pattern or "/") + "$")
        # API Gateway prefers the most literal match: /runs/latest over /runs/{run_id}.
        self.specificity = (
            sum(not s.startswith("{") for s in segments),
            -sum(s.endswith("+}") for s in segments),
        )


class ApiServer(ThreadedServer):
    """A bounded ThreadingHTTPServer on loopback; ``port=0`` picks a free port. Use as a context manager."""

    def __init__(
        self,
        routes: Sequence[Route],
        handler: Handler,
        verifier: TokenVerifier | None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        stage: str = "local",
        function_name: str,
        region: str = "us-east-1",
        access_log: bool = True,
    ) -> None:
        self.access_log = access_log
        self.routes = sorted((_CompiledRoute(r) for r in routes), key=lambda c: c.specificity, reverse=True)
        self.handler = handler
        self.verifier = verifier
        self.stage = stage
        self.function_name = function_name
        self.region = region
        # A Lambda execution environment serves one request at a time, and the API function relies on
        # it: its resolver keeps the current event in module state. Concurrent requests wait here, as
        # they would queue for (or scale out to) another environment, rather than share one.
        self._environment = threading.Lock()
        super().__init__(_request_handler_for(self), host=host, port=port, name="api-server")

    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        for compiled in self.routes:
            if compiled.route.method not in (method, "ANY"):
                continue
            found = compiled.regex.match(path)
            if found:
                return compiled.route, {name: unquote(value) for name, value in found.groupdict().items()}
        return None

    def respond(self, method: str, raw_path: str, headers: list[tuple[str, str]], body: bytes) -> _Answer:
        """Answer one request the way API Gateway plus the API function would."""
        split = urlsplit(raw_path)
        path = split.path or "/"
        matched = self.match(method, path)
        if matched is None:
            return _Answer.json(
                403, MISSING_TOKEN_BODY, {"x-amzn-ErrorType": "MissingAuthenticationTokenException"}
            )
        route, path_parameters = matched
        claims: dict[str, str] | None = None
        if route.authorized:
            try:
                if self.verifier is None:
                    raise Unauthorized("no token verifier: every token is refused")
                claims = authorizer_claims(self.verifier.verify(_header(headers, "authorization")))
            except Unauthorized:
                return _Answer.json(401, UNAUTHORIZED_BODY, {"x-amzn-ErrorType": "UnauthorizedException"})
        event = self.event(route, method, path, split.query, headers, body, path_parameters, claims)
        context = LambdaContext(self.function_name, region=self.region)
        try:
            with self._environment, running_as(self.function_name):
                result = self.handler(event, context)
            size = len(json.dumps(result, default=str).encode())
            if size > MAX_SYNC_RESPONSE_BYTES:
                # Lambda refuses to return it and API Gateway answers for the failed integration.
                sys.stderr.write(f"{self.function_name}: {json.dumps(response_too_large(size))}\n")
                return _Answer.json(
                    502, INTERNAL_ERROR_BODY, {"x-amzn-ErrorType": "InternalServerErrorException"}
                )
            return _Answer.from_proxy_result(result)
        except Exception:
            traceback.print_exc(file=sys.stderr)
            return _Answer.json(
                502, INTERNAL_ERROR_BODY, {"x-amzn-ErrorType": "InternalServerErrorException"}
            )

    def event(
        self,
        route: Route,
        method: str,
        path: str,
        query: str,
        headers: list[tuple[str, str]],
        body: bytes,
        path_parameters: dict[str, str],
        claims: dict[str, str] | None,
    ) -> dict[str, Any]:
        single_headers: dict[str, str] = {}
        multi_headers: dict[str, list[str]] = {}
        for name, value in headers:
            single_headers[name] = value
            multi_headers.setdefault(name, []).append(value)
        multi_query = parse_qs(query, keep_blank_values=True)
        content_type = _header(headers, "content-type") or ""
        text_body, is_base64 = _event_body(body, content_type)
        now = time.time()
        request_context: dict[str, Any] = {
            "accountId": ACCOUNT_ID,
            "apiId": "local",
            "domainName": single_headers.get("Host", "127.0.0.1"),
            "httpMethod": method,
            "identity": {"sourceIp": "127.0.0.1", "userAgent": _header(headers, "user-agent")},
            "path": f"/{self.stage}{path}",
            "protocol": "HTTP/1.1",
            "requestId": str(uuid.uuid4()),
            "requestTime": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "requestTimeEpoch": int(now * 1000),
            "resourceId": "local",
            "resourcePath": route.resource,
            "stage": self.stage,
        }
        if claims is not None:
            request_context["authorizer"] = {"claims": claims}
        return {
            "resource": route.resource,
            "path": path,
            "httpMethod": method,
            "headers": single_headers or None,
            "multiValueHeaders": multi_headers or None,
            "queryStringParameters": {k: v[-1] for k, v in multi_query.items()} or None,
            "multiValueQueryStringParameters": multi_query or None,
            "pathParameters": path_parameters or None,
            "stageVariables": None,
            "requestContext": request_context,
            "body": text_body,
            "isBase64Encoded": is_base64,
        }


class _Answer:
    def __init__(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    @classmethod
    def json(cls, status: int, body: Any, headers: dict[str, str] | None = None) -> _Answer:
        pairs = [("Content-Type", "application/json"), *(headers or {}).items()]
        return cls(status, pairs, json.dumps(body).encode())

    @classmethod
    def from_proxy_result(cls, result: Any) -> _Answer:
        """Turn the function's proxy result into HTTP; a malformed one is a 502, as API Gateway does."""
        if not isinstance(result, dict) or not isinstance(result.get("statusCode"), int):
            raise ValueError(f"the API function returned a malformed proxy response: {result!r:.200}")
        pairs: list[tuple[str, str]] = [(str(k), str(v)) for k, v in (result.get("headers") or {}).items()]
        for name, values in (result.get("multiValueHeaders") or {}).items():
            pairs.extend((str(name), str(value)) for value in values)
        raw = result.get("body") or ""
        body = base64.b64decode(raw) if result.get("isBase64Encoded") else str(raw).encode()
        return cls(int(result["statusCode"]), pairs, body)


def _header(headers: list[tuple[str, str]], name: str) -> str | None:
    found = None
    for key, value in headers:
        if key.lower() == name:
            found = value
    return found


def _event_body(body: bytes, content_type: str) -> tuple[str | None, bool]:
    if not body:
        return None, False
    if content_type.startswith(_TEXT_TYPES) or not content_type:
        try:
            return body.decode("utf-8"), False
        except UnicodeDecodeError:
            pass
    return base64.b64encode(body).decode(), True


class _Refused(Exception):
    """A request body that cannot be read; ``answer`` says why, and ``unread`` is how many of its bytes are
    still on the connection (None when the request does not say)."""

    def __init__(self, status: int, message: str, unread: int | None = None) -> None:
        super().__init__(message)
        self.answer = _Answer.json(status, {"message": message})
        self.unread = unread


def _discard(connection: socket.socket, stream: io.BufferedIOBase, unread: int | None) -> None:
    """Read and drop what is left of a refused body, at most ``DISCARD_MAX_BYTES``.

    Closing a connection that still holds unread bytes makes the kernel reset it, and a client still
    sending its body then never reads the answer (a 413 arrives as a broken pipe). API Gateway answers a
    body too large with a 413 the client reads, so the rest is read first; a body of unknown length is
    read until the client has been quiet for ``DISCARD_QUIET_S``."""
    left = DISCARD_MAX_BYTES if unread is None else min(unread, DISCARD_MAX_BYTES)
    connection.settimeout(DISCARD_QUIET_S)
    try:
        while left > 0:
            chunk = stream.read1(min(left, 1 << 16))
            if not chunk:
                return
            left -= len(chunk)
    except TimeoutError:
        return


def _read_body(headers: Any, stream: io.BufferedIOBase) -> bytes:
    """The request body, whether sent with a Content-Length or in chunks (``Transfer-Encoding: chunked``)."""
    encoding = (headers.get("Transfer-Encoding") or "").strip().lower()
    if encoding == "chunked":
        return _read_chunks(stream)
    if encoding:
        raise _Refused(501, f"Transfer-Encoding {encoding!r} is not supported: send the body as is")
    declared = headers.get("Content-Length") or "0"
    if not declared.isdigit():
        raise _Refused(400, f"Content-Length must be a number of bytes, not {declared!r}")
    length = int(declared)
    if length > MAX_BODY_BYTES:
        raise _Refused(413, TOO_LARGE_BODY["message"], unread=length)
    return stream.read(length) if length else b""


def _read_chunks(stream: io.BufferedIOBase) -> bytes:
    body = bytearray()
    while True:
        size_line = stream.readline(1024).split(b";", 1)[0].strip()
        try:
            size = int(size_line, 16)
        except ValueError:
            raise _Refused(400, f"malformed chunk size {size_line[:20]!r} in a chunked body") from None
        if size == 0:
            break
        if len(body) + size > MAX_BODY_BYTES:
            raise _Refused(413, TOO_LARGE_BODY["message"])
        chunk = stream.read(size)
        if len(chunk) != size or stream.readline(3).strip():
            raise _Refused(400, "a chunk of the chunked body is shorter than its declared size")
        body += chunk
    # Trailer fields, up to the empty line that ends the message.
    while stream.readline(8192).strip():
        pass
    return bytes(body)


def _request_handler_for(server: ApiServer) -> type[BaseHTTPRequestHandler]:
    class _RequestHandler(BaseHTTPRequestHandler):
        timeout = SOCKET_TIMEOUT_S
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            try:
                body = _read_body(self.headers, self.rfile)
            except _Refused as refused:
                # The rest of the body is still on the connection: it cannot carry another request.
                self.close_connection = True
                self._send(refused.answer)
                self.wfile.flush()
                _discard(self.connection, self.rfile, refused.unread)
                return
            answer = server.respond(self.command, self.path, list(self.headers.items()), body)
            self._send(answer)

        def _send(self, answer: _Answer) -> None:
            self.send_response(answer.status)
            for name, value in answer.headers:
                if name.lower() not in ("content-length", "connection"):
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(answer.body)

        def __getattr__(self, name: str) -> Any:
            # The base class answers a method it has no do_<METHOD> for with its own 501 HTML page;
            # API Gateway answers any method a resource does not define with its JSON 403.
            if name.startswith("do_"):
                return self._serve
            raise AttributeError(name)

        def log_message(self, format: str, *args: Any) -> None:
            if server.access_log:
                sys.stderr.write(f"api {self.address_string()} {format % args}\n")

    return _RequestHandler
