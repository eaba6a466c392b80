"""The model server over HTTP: the OpenAI-compatible routes BenchGen's openai-compatible connection calls.

``GET /v1/models`` lists the base model and every fine-tuned checkpoint; ``POST /v1/chat/completions``
answers through the batching generator; ``GET /v1/stats`` shows what the generator has done (batches,
the largest batch, tokens per second). ``POST /v1/files``, ``POST /v1/fine-tunes``, ``GET
/v1/fine-tunes[/{id}]`` and ``POST /v1/fine-tunes/{id}/cancel`` train (:mod:`modelserver.jobs`). With an
API key, every route wants ``Authorization: Bearer <key>``.
"""

from __future__ import annotations

import contextlib
import hmac
import io
import json
import select
import socket
import time
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
from modelserver import engines, weights
from modelserver.catalog import Catalog
from modelserver.chat import BadRequest, completion_body, read_request
from modelserver.chunked import Unframed, read_chunked
from modelserver.engines import Model
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
# How long a connection may send nothing (before its request, or in the middle of its body) before it is
# closed, with 408 when a body was under way: a stalled client must not hold a thread forever.
READ_TIMEOUT_S = 60.0
# A body must arrive at least this fast, beyond its read timeout: a client that sends a byte just before each
# read timeout runs out would otherwise hold a thread for as long as it likes.
MIN_BODY_BYTES_PER_S = 64 * 2**10
# After a refusal sent while a body may still be arriving, how long the rest is read and discarded: closing
# a socket with unread bytes resets the connection, and the client would see the reset, not the refusal.
DISCARD_S = 5.0
DISCARD_QUIET_S = 0.5

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
    connection of kind openai-compatible records. ``engine`` generates (one of
    :data:`modelserver.engines.ENGINES`). The base model's copies (a GGUF file dequantized, its conversion
    for the engine) are kept under ``cache`` (by default ``work/cache``), keyed by their source's bytes, so
    servers given one cache make them once.

    The base model is loaded here, before the server answers anything, so a bad ``--model`` or an engine
    that cannot serve it fails at once.
    """

    def __init__(
        self,
        model: str,
        *,
        work: Path,
        cache: Path | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        name: str | None = None,
        api_key: str | None = None,
        max_batch: int = DEFAULT_MAX_BATCH,
        batch_wait_s: float = DEFAULT_BATCH_WAIT_S,
        keep_loaded: int = 2,
        read_timeout_s: float = READ_TIMEOUT_S,
        engine: str = "auto",
    ) -> None:
        if not ip_address(host).is_loopback and not api_key:
            raise ValueError(
                f"listening on {host} lets other machines in: give an API key file (--api-key-file), or "
                "listen on 127.0.0.1"
            )
        self.work = work
        self.cache = cache or work / "cache"
        self.device = weights.device()
        self.engine = engines.choose(engine, self.device, work / "cache")
        source = weights.resolve(model, name=name)
        base_folder = weights.loadable_folder(source, self.cache)
        self.catalog = Catalog(source.model_id, base_folder, work / "models")
        self.models = LoadedModels(self._load, keep=keep_loaded)
        self.models.get(source.model_id)
        self.generator = Generator(
            self.models, max_batch=max_batch, batch_wait_s=batch_wait_s, workers=self.engine.parallel
        )
        self.fine_tunes = FineTuneJobs(work, self.catalog, engine=engine)
        self._api_key = api_key
        self.read_timeout_s = read_timeout_s
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

    def _load(self, model_id: str) -> Model:
        folder = self.catalog.folder(model_id)
        if folder is None:
            raise BadRequest(f"no model {model_id!r}", status=404)
        # The base model's copies go where other servers find them; a checkpoint's stay with its work folder.
        return self.engine.load(model_id, folder, self.cache if model_id == self.catalog.base_id else None)

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
            "engine": self.engine.view(),
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
            timeout = server.read_timeout_s

            def do_GET(self) -> None:  # http.server's naming
                self._serve("GET", body_required=False)

            def do_POST(self) -> None:
                self._serve("POST", body_required=True)

            def _serve(self, method: str, *, body_required: bool) -> None:
                try:
                    body = self._body(required=body_required)
                except Unframed as refused:
                    self.close_connection = True
                    self._send(*_error(refused.status, str(refused)))
                    if refused.discard != 0:
                        _discard(self.connection, self.rfile, refused.discard)
                    return
                headers = {name.lower(): value for name, value in self.headers.items()}
                call = Call(body, headers, lambda: _closed(self.connection))
                try:
                    answer = server._answer(method, self.path, call)
                except CallerGone:
                    self.close_connection = True
                    return
                self._send(*answer)

            def _body(self, *, required: bool) -> bytes:
                """The request's body as its Content-Length or its chunked transfer coding frames it."""
                limit = server.max_body_bytes(self.path)
                codings = self.headers.get_all("Transfer-Encoding")
                if codings is not None:
                    if "Content-Length" in self.headers:
                        # Two framings a proxy and this server could read differently: neither is taken.
                        raise Unframed(
                            "send Content-Length or Transfer-Encoding: chunked, not both", status=400
                        )
                    listed = [coding.strip().lower() for value in codings for coding in value.split(",")]
                    if listed != ["chunked"]:
                        raise Unframed(
                            f"Transfer-Encoding {', '.join(listed)} is not supported by this server: send "
                            "the body chunked, or whole with its length in Content-Length",
                            status=501,
                        )
                    return read_chunked(
                        self.rfile,
                        limit=limit,
                        timeout_s=server.read_timeout_s,
                        min_bytes_per_s=MIN_BODY_BYTES_PER_S,
                    )
                declared = {value.strip() for value in self.headers.get_all("Content-Length") or []}
                if not declared:
                    if required:
                        raise Unframed("send the body's length in Content-Length", status=411)
                    return b""
                text = declared.pop()
                if declared or not (text.isascii() and text.isdigit()):
                    raise Unframed("Content-Length must be one whole number of bytes", status=400)
                # More digits than the limit has is over it, and int() refuses strings of thousands of digits.
                length = int(text) if len(text) <= len(str(limit)) else limit + 1
                if length > limit:
                    raise Unframed(
                        f"the body is over {limit:,} bytes: send at most that", status=413, discard=length
                    )
                return _read_body(self.rfile, length, server.read_timeout_s)

            def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
                """http.server's own refusals (a bad request line, an unknown method, headers too long) in
                the JSON error body every other refusal has."""
                # A request line too garbled to name its version leaves http.server at HTTP/0.9, whose
                # answers have no status line: answer as HTTP/1.1, which every client reads.
                self.request_version = self.protocol_version
                self.close_connection = True
                self._send(*_error(code, message or HTTPStatus(code).phrase))

            def _send(self, status: int, answer: dict[str, Any]) -> None:
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if self.close_connection:
                    self.send_header("Connection", "close")
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


def _read_body(rfile: io.BufferedIOBase, length: int, timeout_s: float) -> bytes:
    """The ``length`` bytes of a body from ``rfile``, whose socket times a read out after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s + length / MIN_BODY_BYTES_PER_S
    chunks: list[bytes] = []
    left = length
    try:
        while left and time.monotonic() < deadline:
            chunk = rfile.read1(min(left, 2**16))
            if not chunk:
                raise Unframed(
                    f"the body ended after {length - left:,} of its {length:,} bytes", status=400, discard=0
                )
            chunks.append(chunk)
            left -= len(chunk)
    except TimeoutError:
        pass
    if left:
        raise Unframed(
            f"the body stopped arriving before the {length:,} bytes its Content-Length promised: send all of "
            f"it within {timeout_s + length / MIN_BODY_BYTES_PER_S:g} s, with no pause of {timeout_s:g} s",
            status=408,
            discard=0,
        )
    return b"".join(chunks)


def _discard(connection: socket.socket, rfile: io.BufferedIOBase, length: int | None) -> None:
    """Reads and drops ``length`` bytes (all that comes, if None) from ``connection``, stopping early once it
    goes quiet for DISCARD_QUIET_S or DISCARD_S have passed, so that closing it sends no reset."""
    deadline = time.monotonic() + DISCARD_S
    left = length
    with contextlib.suppress(OSError, ValueError):  # a timeout is an OSError: the client went quiet
        while left is None or left > 0:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            connection.settimeout(min(remaining, DISCARD_QUIET_S))
            chunk = rfile.read(2**16 if left is None else min(left, 2**16))
            if not chunk:
                return
            if left is not None:
                left -= len(chunk)


def _json(body: bytes) -> Any:
    try:
        return json.loads(body or b"null")
    except json.JSONDecodeError as bad:
        raise BadRequest(f"the body is not JSON: {bad}") from None
    except UnicodeDecodeError:
        raise BadRequest("the body is not JSON: it is not UTF-8 text") from None
    except ValueError:  # Python refuses to read integers of thousands of digits
        raise BadRequest("the body holds a number of thousands of digits: no field takes one") from None
    except RecursionError:
        raise BadRequest("the body nests arrays or objects too deep: no field takes that") from None


def _error(status: int, message: str) -> Answer:
    kind = HTTPStatus(status).phrase.lower().replace(" ", "_")
    return status, {"error": {"message": message, "type": kind, "code": status}}
