"""A local OpenAI-compatible server of SIMULATED models, for the examples and the tests.

``POST /v1/chat/completions`` answers each example environment's question with the text the example
generator writes for it, so no real model is involved and nothing here measures one:

- ``example-base`` answers exactly as the example submissions do (wrong on about 30% of the cases);
- ``example-tuned`` gets right two thirds of the cases that ``example-base`` gets wrong (wrong on about
  10%), and answers the others as ``example-base`` does;
- ``example-judge`` grades a judging prompt about a judged example's case, or says which of a pairwise
  prompt's two answers is better, as that example's simulated judge does (the generator's
  ``judge_reply``: deliberately imperfect rules, no model).

The same model id and question always give the same answer. A question that belongs to no example gets
a fixed "I do not know" answer. It listens on the loopback interface only, and can inject faults for
tests: a 429 with Retry-After, a 500, a slow answer, or another text (a malformed judgment), for chosen
cases and a chosen number of times.
It can also stand for a model of a given speed and capacity (``latency_s``, ``slots``): every answer
takes ``latency_s``, at most ``slots`` requests are served at once, and one beyond them is refused with
a 429 and counted, as a serving stack at capacity does; it records the most requests it ever had in
flight (``capacity``).

It can also stand for a reasoning model (``thinking``): each answer comes after reasoning that first
weighs the opposite answer (the wrong one before a right answer, the right one before a wrong answer), as
a ``<think>`` block in the content (``inline``), in the message's ``reasoning_content`` with its tokens in
``usage.completion_tokens_details.reasoning_tokens`` (``field``), or as a block never closed, the answer
never reached (``cut_off``, finish reason ``length``).

It also SIMULATES Together-style fine-tuning (``/v1/files``, ``/v1/fine-tunes``; see
``providers/openai_compatible.py``): a job ends after a few reads naming ``example-tuned``, and nothing is
trained; and OpenAI's Batch API (``/v1/files`` of purpose batch, ``/v1/batches``; see
``providers/openai_batches.py``), whose requests the simulated models answer.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from ipaddress import ip_address
from typing import Any

from benchgen.inference.prompts import prompt_for
from examplegen.failures import failure_plan
from examplegen.generate import EXAMPLE_SIZES, EXAMPLES_SEED, generators, judge_reply
from localcloud.multipart import form_file
from localcloud.providers.openai_batches import Batches
from localcloud.providers.openai_compatible import FineTunes
from localcloud.threaded_server import ThreadedServer

BASE_MODEL = "example-base"
TUNED_MODEL = "example-tuned"
JUDGE_MODEL = "example-judge"
MODELS = (BASE_MODEL, TUNED_MODEL, JUDGE_MODEL)
SIMULATED_NOTICE = "simulated model: answers written by the BenchGen example generator, not by a model"
UNKNOWN_ANSWER = "I do not know the answer to this question."
THINKING = ("inline", "field", "cut_off")


@dataclass(frozen=True)
class ExampleAnswers:
    """One example case: its id, and the right and wrong answer the generator writes for it."""

    case_id: str
    base_fails: bool
    right: str
    wrong: str

    def answer(self, model: str) -> str:
        if not self.base_fails:
            return self.right
        if model == TUNED_MODEL and _stable_share(self.case_id) < 2 / 3:
            return self.right
        return self.wrong

    def reasoning(self, model: str) -> str:
        """Reasoning that weighs the opposite answer first."""
        other = self.wrong if self.answer(model) == self.right else self.right
        return f"A first attempt:\n{other}\nThat does not hold up; answering again."


def _stable_share(text: str) -> float:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2**64


def _example_answers() -> Iterator[tuple[str, ExampleAnswers]]:
    """Replays the example generator: each case's prompt with its right and wrong answer.

    Generation draws each case before its prediction, so replaying the other branch from the same
    random state gives the same case with the opposite answer."""
    known = generators()
    # Each example has the seed generate_examples gives it, so these are the committed examples' cases.
    for name, size in EXAMPLE_SIZES.items():
        generator = known[name]
        rng = random.Random(EXAMPLES_SEED + generator.seed_offset)  # noqa: S311
        for index, fail in enumerate(failure_plan(rng, size)):
            state = rng.getstate()
            case, prediction = generator.make_case(rng, index, fail)
            other_rng = random.Random()  # noqa: S311
            other_rng.setstate(state)
            other_case, other_prediction = generator.make_case(other_rng, index, not fail)
            if other_case != case or "question" not in case:
                continue
            texts = (str(prediction["prediction_text"]), str(other_prediction["prediction_text"]))
            wrong, right = texts if fail else reversed(texts)
            yield prompt_for(case), ExampleAnswers(str(case["id"]), fail, right, wrong)


@dataclass
class Fault:
    """Answer ``status`` (after ``delay_s``) to the next ``times`` requests about ``case_id``
    (every case when None); ``times`` None never stops.

    ``cut_short``: the answer's headers promise its whole body, and the connection closes halfway through
    it (a short read). ``trickle_s``: the headers at once, then the body one byte every that many seconds
    (a server that stalls mid-answer, yet never long enough for a socket's timeout). ``answer_chars``: a 200
    whose answer is that many characters long. ``text``: a 200 whose answer is this text instead (a judge's
    malformed answer).
    """

    status: int = 200
    case_id: str | None = None
    times: int | None = 1
    retry_after_s: float | None = None
    delay_s: float = 0.0
    cut_short: bool = False
    trickle_s: float | None = None
    answer_chars: int | None = None
    text: str | None = None


@dataclass
class Faults:
    """The faults waiting to be injected, and what was asked (for the tests to read)."""

    pending: list[Fault] = field(default_factory=list)
    requests: list[str | None] = field(default_factory=list)  # the case id of each request, in order
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, fault: Fault) -> None:
        with self._lock:
            self.pending.append(fault)

    def take(self, case_id: str | None) -> Fault | None:
        with self._lock:
            self.requests.append(case_id)
            for fault in self.pending:
                if fault.case_id is None or fault.case_id == case_id:
                    if fault.times is not None:
                        fault.times -= 1
                        if fault.times <= 0:
                            self.pending.remove(fault)
                    return fault
            return None


@dataclass
class Capacity:
    """How many chat completions are in flight, the most there ever were, and how many were refused
    because ``slots`` were taken."""

    slots: int | None = None
    in_flight: int = 0
    most_in_flight: int = 0
    served: int = 0
    refused: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def enter(self) -> bool:
        """Count one more request in flight; False (and counted refused) when every slot is taken."""
        with self._lock:
            if self.slots is not None and self.in_flight >= self.slots:
                self.refused += 1
                return False
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            return True

    def leave(self) -> None:
        with self._lock:
            self.in_flight -= 1
            self.served += 1


class ExampleModelServer(ThreadedServer):
    """The simulated models over HTTP on 127.0.0.1; ``base_url`` is what a connection records.

    ``api_key``, when given, must come as ``Authorization: Bearer <key>`` (a 401 otherwise), so a test
    can tell that the caller read the key it was meant to."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        api_key: str | None = None,
        latency_s: float = 0.0,
        slots: int | None = None,
        thinking: str | None = None,
    ) -> None:
        if thinking is not None and thinking not in THINKING:
            raise ValueError(f"thinking is one of {', '.join(THINKING)}, not {thinking!r}")
        self.thinking = thinking
        if not ip_address(host).is_loopback:
            raise ValueError(f"the example model server listens on loopback only, not {host}")
        if slots is not None and slots < 1:
            raise ValueError("a model server with slots needs at least one")
        self.faults = Faults()
        self.capacity = Capacity(slots=slots)
        self.latency_s = latency_s
        self.fine_tunes = FineTunes(tuned_model=TUNED_MODEL)
        self.batches = Batches(answer=self.completion)
        self._answers = dict(_example_answers())
        self._api_key = api_key
        super().__init__(self._handler_class(), host=host, port=port, name="example-models")

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def completion(self, body: Any) -> tuple[int, dict[str, Any], dict[str, str]]:
        """The status, JSON answer and extra headers for one chat completions request body, answered
        within the server's capacity."""
        status, answer, headers, _ = self._paced(body)
        return status, answer, headers

    def _paced(self, body: Any) -> tuple[int, dict[str, Any], dict[str, str], Fault | None]:
        """:meth:`completion`, and the fault that shapes how the answer is sent, if any."""
        if not self.capacity.enter():
            status, answer, _ = _error(429, f"all {self.capacity.slots} slots are busy: try again shortly")
            return status, answer, {"Retry-After": "0.05"}, None
        try:
            if self.latency_s:
                time.sleep(self.latency_s)
            return self._completion(body)
        finally:
            self.capacity.leave()

    def _completion(self, body: Any) -> tuple[int, dict[str, Any], dict[str, str], Fault | None]:
        """One answer as the example models give it, and the fault that shapes how it is sent, if any."""
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return (*_error(400, "the body must be a JSON object with a messages list"), None)
        model = body.get("model")
        if model not in MODELS:
            return (*_error(404, f"no model {model!r}: this server serves {', '.join(MODELS)}"), None)
        users = [m for m in body["messages"] if isinstance(m, dict) and m.get("role") == "user"]
        prompt = str(users[-1].get("content", "")) if users else ""
        example = self._answers.get(prompt)
        judged = judge_reply(prompt) if model == JUDGE_MODEL else None
        fault = self.faults.take(judged[0] if judged else example.case_id if example else None)
        if fault is not None:
            time.sleep(fault.delay_s)
            if fault.status != 200:
                headers = {"Retry-After": str(fault.retry_after_s)} if fault.retry_after_s is not None else {}
                status, answer, _ = _error(fault.status, f"injected fault {fault.status}")
                return status, answer, headers, None
        if model == JUDGE_MODEL:
            text = judged[1] if judged else UNKNOWN_ANSWER
        else:
            text = example.answer(str(model)) if example else UNKNOWN_ANSWER
        if fault is not None and fault.text is not None:
            text = fault.text
        if fault is not None and fault.answer_chars is not None:
            text = (text + " ") * (fault.answer_chars // (len(text) + 1) + 1)
            text = text[: fault.answer_chars]
        digest = hashlib.sha256(f"{model}\n{prompt}".encode()).hexdigest()[:24]
        reasoning = example.reasoning(str(model)) if example else "Nothing I know answers this."
        message, finish, usage = self._thought(text, reasoning)
        usage["prompt_tokens"] = len(prompt.split())
        return (
            200,
            {
                "id": f"chatcmpl-{digest}",
                "object": "chat.completion",
                "created": 0,
                "model": model,
                "system_fingerprint": "benchgen-simulated",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": usage,
            },
            {},
            fault,
        )

    def _thought(self, text: str, reasoning: str) -> tuple[dict[str, Any], str, dict[str, Any]]:
        """The message, finish reason and completion tokens of ``text``, after ``reasoning`` as the
        server's ``thinking`` gives it."""
        message: dict[str, Any] = {"role": "assistant", "content": text}
        thought = len(reasoning.split())
        if self.thinking is None:
            return message, "stop", {"completion_tokens": len(text.split())}
        if self.thinking == "cut_off":
            message["content"] = f"<think>\n{reasoning}"
            return message, "length", {"completion_tokens": thought}
        if self.thinking == "inline":
            message["content"] = f"<think>\n{reasoning}\n</think>\n{text}"
        else:
            message["reasoning_content"] = reasoning
        usage = {
            "completion_tokens": thought + len(text.split()),
            "completion_tokens_details": {"reasoning_tokens": thought},
        }
        return message, "stop", usage

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # http.server's naming
                path = self.path.split("?", 1)[0].rstrip("/")
                if path == "/v1/models":
                    models = [{"id": m, "object": "model", "owned_by": SIMULATED_NOTICE} for m in MODELS]
                    self._send(200, {"object": "list", "data": models}, {})
                elif not self._authorized() or self._injected("GET"):
                    return
                elif path == "/v1/fine-tunes":
                    self._send(200, server.fine_tunes.listing(), {})
                elif path.startswith("/v1/fine-tunes/"):
                    self._send(*server.fine_tunes.read(path.removeprefix("/v1/fine-tunes/")), {})
                elif path == "/v1/batches":
                    self._send(200, server.batches.listing(), {})
                elif path.startswith("/v1/batches/"):
                    self._send(*server.batches.read(path.removeprefix("/v1/batches/")), {})
                elif path.startswith("/v1/files/") and path.endswith("/content"):
                    self._content(path.removeprefix("/v1/files/").removesuffix("/content"))
                else:
                    self._send(*_error(404, f"no route GET {self.path}"))

            def do_POST(self) -> None:
                path = self.path.rstrip("/")
                if not self._authorized():
                    return
                length = int(self.headers.get("Content-Length") or 0)
                data = self.rfile.read(length)
                if path != "/v1/chat/completions" and self._injected("POST"):
                    return
                if path == "/v1/files":
                    filename, purpose, content = form_file(self.headers.get("Content-Type"), data)
                    if purpose == "batch":
                        self._send(*server.batches.upload(filename, content), {})
                    else:
                        self._send(*server.fine_tunes.upload(filename, purpose, content), {})
                    return
                if path.startswith("/v1/fine-tunes/") and path.endswith("/cancel"):
                    job_id = path.removeprefix("/v1/fine-tunes/").removesuffix("/cancel")
                    self._send(*server.fine_tunes.cancel(job_id), {})
                    return
                if path not in ("/v1/chat/completions", "/v1/fine-tunes", "/v1/batches"):
                    self._send(*_error(404, f"no route POST {self.path}"))
                    return
                try:
                    body = json.loads(data or b"null")
                except json.JSONDecodeError:
                    self._send(*_error(400, "the body is not JSON"))
                    return
                if path == "/v1/fine-tunes":
                    self._send(*server.fine_tunes.create(body), {})
                elif path == "/v1/batches":
                    self._send(*server.batches.create(body), {})
                else:
                    status, answer, headers, fault = server._paced(body)
                    self._send(status, answer, headers, fault=fault)

            def _content(self, file_id: str) -> None:
                data = server.batches.content(file_id)
                if data is None:
                    self._send(*_error(404, f"no file {file_id!r}"))
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/jsonl")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _injected(self, method: str) -> bool:
                """Whether an outage the fine-tuning simulation was told of answered this request."""
                answer = server.fine_tunes.take_outage(f"{method} {self.path}")
                if answer is not None:
                    self._send(*answer)
                return answer is not None

            def _authorized(self) -> bool:
                if (
                    server._api_key is None
                    or self.headers.get("Authorization") == f"Bearer {server._api_key}"
                ):
                    return True
                self._send(*_error(401, "missing or wrong API key"))
                return False

            def _send(
                self,
                status: int,
                answer: dict[str, Any],
                headers: dict[str, str],
                *,
                fault: Fault | None = None,
            ) -> None:
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("X-BenchGen-Simulated", "true")
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                if fault is not None and fault.cut_short:
                    # Half the promised body, then the connection closes: the client reads short.
                    self.wfile.write(data[: len(data) // 2])
                    self.close_connection = True
                    return
                if fault is not None and fault.trickle_s is not None:
                    self.wfile.flush()
                    for byte in data:
                        time.sleep(fault.trickle_s)
                        try:
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                        except OSError:
                            return  # the client gave up waiting
                    return
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: the tests and the demo report what matters."""

        return Handler


def _error(status: int, message: str) -> tuple[int, dict[str, Any], dict[str, str]]:
    kind = HTTPStatus(status).phrase.lower().replace(" ", "_")
    return status, {"error": {"message": message, "type": kind, "code": status}}, {}
