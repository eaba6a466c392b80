"""Serve the web console on localhost: the built app, its /config.json, and the two services it calls.

On AWS the app comes from CloudFront and calls API Gateway and Cognito at their own addresses. Locally, one
loopback origin serves the app and forwards ``/api/...`` to the API server (its authorizer included) and
``/cognito`` to the local user pool, so the browser needs neither CORS from moto nor a route to an
in-process moto. The responses carry the security headers the console has on AWS.
"""

from __future__ import annotations

import json
import mimetypes
import sys
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from localcloud.api_server import MAX_BODY_BYTES, ApiServer
from localcloud.threaded_server import ThreadedServer

API_PREFIX = "/api"
COGNITO_PATH = "/cognito"
# The one Cognito operation the console's sign-in calls; anything else is refused as Cognito would.
COGNITO_OPERATIONS = {"AWSCognitoIdentityProviderService.InitiateAuth": "initiate_auth"}
SOCKET_TIMEOUT_S = 30

WEB_DIST = Path(__file__).resolve().parents[1] / "web" / "dist"

CognitoCall = Callable[[str, dict[str, Any]], tuple[int, dict[str, Any]]]


def missing_build_message(dist: Path) -> str:
    return f"the console is not built ({dist} has no index.html): run `make web` first"


class ConsoleServer(ThreadedServer):
    """A ThreadingHTTPServer on loopback; ``port=0`` picks a free port. Use as a context manager."""

    def __init__(
        self,
        dist: Path,
        api: ApiServer,
        cognito: CognitoCall,
        *,
        region: str,
        user_pool_id: str,
        client_id: str,
        frame_origin: str,
        host: str = "127.0.0.1",
        port: int = 0,
        access_log: bool = False,
    ) -> None:
        if not (dist / "index.html").is_file():
            raise FileNotFoundError(missing_build_message(dist))
        self.dist = dist.resolve()
        self.api = api
        self.cognito = cognito
        self.region = region
        self.user_pool_id = user_pool_id
        self.client_id = client_id
        self.access_log = access_log
        # The page may embed reports from the data bucket and upload bundles to it (presigned URLs), and
        # reach nothing else.
        self.security_headers = {
            "Content-Security-Policy": (
                f"default-src 'self'; connect-src 'self' {frame_origin}; img-src 'self' data:; "
                f"frame-src {frame_origin}; frame-ancestors 'none'; base-uri 'self'; form-action 'self'; "
                "object-src 'none'"
            ),
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "strict-origin-when-cross-origin",
            "X-Frame-Options": "DENY",
        }
        super().__init__(_request_handler_for(self), host=host, port=port, name="console")

    def config(self) -> dict[str, str]:
        """What /config.json says: the same fields the stack writes on AWS, plus where Cognito answers."""
        return {
            "apiUrl": self.url + API_PREFIX,
            "region": self.region,
            "userPoolId": self.user_pool_id,
            "userPoolClientId": self.client_id,
            "cognitoEndpoint": self.url + COGNITO_PATH,
        }

    def static_file(self, path: str) -> Path:
        """The built file at ``path``; any other path is the app's own route, answered by index.html."""
        candidate = (self.dist / path.lstrip("/")).resolve()
        if candidate.is_file() and candidate.is_relative_to(self.dist):
            return candidate
        return self.dist / "index.html"


def serve_console(cloud: Any, api: ApiServer, *, port: int = 0, dist: Path = WEB_DIST) -> ConsoleServer:
    """The console of ``cloud`` (a started LocalCloud) calling ``api``; FileNotFoundError if it is unbuilt."""
    return ConsoleServer(
        dist,
        api,
        cognito_forwarder(cloud.client("cognito-idp")),
        region=cloud.region,
        user_pool_id=cloud.user_pool_id,
        client_id=cloud.client_id,
        # Presigned URLs name the moto server when there is one; in-process they name S3 (unreachable here).
        frame_origin=cloud.endpoint_url or "https://*.amazonaws.com",
        port=port,
    )


def cognito_forwarder(client: Any) -> CognitoCall:
    """Answers the console's Cognito calls with ``client`` (a boto3 cognito-idp client of the local pool).

    The request goes to the pool as the browser sent it, so the pool's checks (password, the app client's
    allowed flows) decide, and its refusals come back in Cognito's JSON error shape."""
    from botocore.exceptions import ClientError, ParamValidationError

    def call(target: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        operation = COGNITO_OPERATIONS.get(target)
        if operation is None:
            return 400, {"__type": "UnknownOperationException", "message": f"{target!r} is not served here"}
        try:
            answer: dict[str, Any] = getattr(client, operation)(**body)
        except ClientError as error:
            found = error.response.get("Error", {})
            status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 400))
            return status, {"__type": found.get("Code"), "message": found.get("Message")}
        except ParamValidationError as error:
            return 400, {"__type": "InvalidParameterException", "message": str(error)}
        answer.pop("ResponseMetadata", None)
        return 200, answer

    return call


def _request_handler_for(server: ConsoleServer) -> type[BaseHTTPRequestHandler]:
    class _RequestHandler(BaseHTTPRequestHandler):
        timeout = SOCKET_TIMEOUT_S
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self._route()

        def do_HEAD(self) -> None:
            self._route()

        def do_POST(self) -> None:
            self._route()

        def do_DELETE(self) -> None:
            self._route()

        def _route(self) -> None:
            path = urlsplit(self.path).path
            if path == API_PREFIX or path.startswith(API_PREFIX + "/"):
                self._forward_api()
            elif path == COGNITO_PATH:
                self._forward_cognito()
            elif self.command not in ("GET", "HEAD"):
                self._send(405, "application/json", json.dumps({"message": "the app is read-only"}).encode())
            elif path == "/config.json":
                body = json.dumps(server.config()).encode()
                self._send(200, "application/json", body, {"Cache-Control": "no-store"})
            else:
                found = server.static_file(path)
                kind = mimetypes.guess_type(found.name)[0] or "application/octet-stream"
                self._send(200, kind, found.read_bytes())

        def _body(self) -> bytes | None:
            length = self.headers.get("Content-Length") or "0"
            if not length.isdigit() or int(length) > MAX_BODY_BYTES:
                self.close_connection = True
                self._send(413, "application/json", b'{"message": "Request Too Long"}')
                return None
            return self.rfile.read(int(length)) if int(length) else b""

        def _forward_api(self) -> None:
            body = self._body()
            if body is None:
                return
            answer = server.api.respond(
                self.command, self.path[len(API_PREFIX) :] or "/", list(self.headers.items()), body
            )
            headers = {n: v for n, v in answer.headers if n.lower() not in ("content-length", "content-type")}
            kind = next((v for n, v in answer.headers if n.lower() == "content-type"), "application/json")
            self._send(answer.status, kind, answer.body, headers)

        def _forward_cognito(self) -> None:
            raw = self._body()
            if raw is None:
                return
            try:
                request = json.loads(raw or b"{}")
            except ValueError:
                request = None
            if not isinstance(request, dict):
                status, answer = 400, {"__type": "SerializationException", "message": "the body is not JSON"}
            else:
                status, answer = server.cognito(self.headers.get("X-Amz-Target") or "", request)
            self._send(status, "application/x-amz-json-1.1", json.dumps(answer).encode())

        def _send(self, status: int, kind: str, body: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            for name, value in {**server.security_headers, **(headers or {})}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            if server.access_log:
                sys.stderr.write(f"console {self.address_string()} {format % args}\n")

    return _RequestHandler
