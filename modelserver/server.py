"""The model server over HTTP: the OpenAI-compatible routes BenchGen's openai-compatible connection calls.

``GET /v1/models`` lists the base model and every fine-tuned checkpoint; ``POST /v1/chat/completions``
answers through the batching generator; ``GET /v1/stats`` shows what the generator has done (batches,
the largest batch, tokens per second). ``POST /v1/files``, ``POST /v1/fine-tunes``, ``GET
/v1/fine-tunes[/{id}]`` and ``POST /v1/fine-tunes/{id}/cancel`` train (:mod:`modelserver.jobs`). With an
API key, every route wants ``Authorization: Bearer <key>``.
"""

from __future__ import annotations

import hmac
import json
import select
import socket
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from ipaddress import ip_address
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from localcloud.multipart import form_file
from localcloud.threaded_server import ThreadedServer
from modelserver import weights
from modelserver.catalog import Catalog
from modelserver.chat import BadRequest, completion_body, read_request
from modelserver.generation import (
    DEFAULT_BATCH_WAIT_S,
    DEFAULT_MAX_BATCH,
    CallerGone,
    Generator,
    LoadedModels,
)
from modelserver.jobs import FineTuneJobs

MAX_JSON_BYTES = 4 * 2**20
MAX_UPLOAD_BYTES = 512 * 2**20

Answer = tuple[int, dict[str, Any]]


@dataclass(frozen=True)
class Call:
    """One request as a route sees it: its body, its headers (lower-cased names), and whether its caller
    has closed the connection since."""

    body: bytes
    headers: dict[str, str]
    gone: Callable[[], bool]


Route = Callable[[Call], Answer]


class ModelServer(ThreadedServer):
    """Serves ``model`` (a folder, a .gguf file or a shortcut; see :mod:`modelserver.weights`) and the
    checkpoints under ``work`` on ``host:port`` (``port=0`` picks a free one); ``base_url`` is what a
    connection of kind openai-compatible records.

    The base model is loaded here, before the server answers anything, so a bad ``--model`` fails at once.
    """

    def __init__(
        self,
        model: str,
        *,
        work: Path,
        host: str = "127.0.0.1",
        port: int = 0,
        name: str | None = None,
        api_key: str | None = None,
        max_batch: int = DEFAULT_MAX_BATCH,
        batch_wait_s: float = DEFAULT_BATCH_WAIT_S,
        keep_loaded: int = 2,
    ) -> None:
        if not ip_address(host).is_loopback and not api_key:
            raise ValueError(
                f"listening on {host} lets other machines in: give an API key file (--api-key-file), or "
                "listen on 127.0.0.1"
            )
        self.work = work
        self.device = weights.device()
        source = weights.resolve(model, name=name)
        base_folder = weights.loadable_folder(source, work / "cache")
        self.catalog = Catalog(source.model_id, base_folder, work / "models")
        self.models = LoadedModels(self._load, keep=keep_loaded)
        self.models.get(source.model_id)
        self.generator = Generator(self.models, max_batch=max_batch, batch_wait_s=batch_wait_s)
        self.fine_tunes = FineTuneJobs(work, self.catalog)
        self._api_key = api_key
        jobs = self.fine_tunes
        self._routes: dict[tuple[str, str], Route] = {
            ("GET", "/v1/models"): lambda _call: self.list_models(),
            ("GET", "/v1/stats"): lambda _call: (200, self.stats()),
            ("POST", "/v1/chat/completions"): lambda call: self.chat(_json(call.body), call.gone),
            ("POST", "/v1/files"): lambda call: jobs.upload(
                *form_file(call.headers.get("content-type"), call.body)
            ),
            ("POST", "/v1/fine-tunes"): lambda call: jobs.create(_json(call.body)),
            ("GET", "/v1/fine-tunes"): lambda _call: jobs.listing(),
        }
        super().__init__(self._handler_class(), host=host, port=port, name="model-server")

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    @property
    def base_model(self) -> str:
        return self.catalog.base_id

    def start(self) -> None:
        self.generator.start()
        self.fine_tunes.start()
        super().start()

    def stop(self) -> None:
        super().stop()
        self.fine_tunes.stop()
        self.generator.stop()

    def _load(self, model_id: str) -> tuple[Any, Any]:
        folder = self.catalog.folder(model_id)
        if folder is None:
            raise BadRequest(f"no model {model_id!r}", status=404)
        return weights.load(folder, self.device)

    # the routes

    def list_models(self) -> Answer:
        return 200, {"object": "list", "data": self.catalog.view(), "max_batch": self.generator.max_batch}

    def stats(self) -> dict[str, Any]:
        return {
            **self.generator.counters.view(),
            "waiting": self.generator.waiting(),
            "max_batch": self.generator.max_batch,
            "batch_wait_ms": round(self.generator.batch_wait_s * 1000, 3),
            "device": self.device,
        }

    def chat(self, body: Any, gone: Callable[[], bool]) -> Answer:
        request = read_request(body, self.catalog.ids())
        request.gone = gone
        return 200, completion_body(request, self.generator.complete(request))

    # HTTP

    def _answer(self, method: str, path: str, call: Call) -> Answer:
        """The answer to ``call`` (raises :class:`CallerGone` when there is nobody left to answer)."""
        if self._api_key is not None:
            given = call.headers.get("authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {self._api_key}".encode()):
                return _error(401, "missing or wrong API key: send Authorization: Bearer <key>")
        route = self._routes.get((method, path.rstrip("/"))) or self._job_route(method, path.rstrip("/"))
        if route is None:
            return _error(404, f"no route {method} {path}")
        try:
            return route(call)
        except BadRequest as refused:
            return _error(refused.status, str(refused))
        except CallerGone:
            raise
        except Exception as error:  # the caller hears why, and the server goes on
            if isinstance(error, MemoryError) or "out of memory" in str(error).lower():
                return _error(
                    503, "out of memory while generating: send shorter prompts or a lower max_tokens"
                )
            return _error(500, f"generation failed: {type(error).__name__}: {error}")

    def _job_route(self, method: str, path: str) -> Route | None:
        """``GET /v1/fine-tunes/{id}`` and ``POST /v1/fine-tunes/{id}/cancel``."""
        rest = path.removeprefix("/v1/fine-tunes/")
        if rest == path or not rest:
            return None
        if method == "GET" and "/" not in rest:
            return lambda _call: self.fine_tunes.read(unquote(rest))
        job_id, _, action = rest.partition("/")
        if method == "POST" and action == "cancel":
            return lambda _call: self.fine_tunes.cancel(unquote(job_id))
        return None

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # http.server's naming
                self._serve("GET", b"")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length > server.max_body_bytes(self.path):
                    self._send(*_error(413, f"the body is over {server.max_body_bytes(self.path):,} bytes"))
                    self.close_connection = True
                    return
                self._serve("POST", self.rfile.read(length))

            def _serve(self, method: str, body: bytes) -> None:
                headers = {name.lower(): value for name, value in self.headers.items()}
                call = Call(body, headers, lambda: _closed(self.connection))
                try:
                    answer = server._answer(method, self.path, call)
                except CallerGone:
                    self.close_connection = True
                    return
                self._send(*answer)

            def _send(self, status: int, answer: dict[str, Any]) -> None:
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: the startup line says where the server listens, and /v1/stats what it did."""

        return Handler

    def max_body_bytes(self, path: str) -> int:
        return MAX_UPLOAD_BYTES if path.rstrip("/") == "/v1/files" else MAX_JSON_BYTES


def _closed(connection: socket.socket) -> bool:
    """Whether the peer has closed ``connection``: it reads as ready and a peek finds no byte."""
    try:
        ready, _, _ = select.select([connection], [], [], 0)
        return bool(ready) and connection.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


def _json(body: bytes) -> Any:
    try:
        return json.loads(body or b"null")
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise BadRequest("the body is not JSON") from None


def _error(status: int, message: str) -> Answer:
    kind = HTTPStatus(status).phrase.lower().replace(" ", "_")
    return status, {"error": {"message": message, "type": kind, "code": status}}
