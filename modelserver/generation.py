"""Chat completions from a queue: one worker thread takes up to ``max_batch`` waiting requests for the
same model and sampling, and generates for all of them in one call of the server's engine
(:mod:`modelserver.engines`); cutting each answer at its end of turn and stop strings, and counting its
tokens, is done here, the same for every engine.

The worker waits ``batch_wait_s`` after the first request of a batch for others to join it, so requests
that arrive together share a batch; requests arriving while a batch generates form the next one. An
engine that can generate several batches at once (``parallel``, see :mod:`modelserver.engines`) has that
many workers: a batch whose longest answer is still being written then holds up only its own callers,
while the requests that came in meanwhile generate beside it. A temperature of 0 (the default) decodes
greedily; otherwise the batch samples at its temperature and top_p.

A caller that goes away (a client whose timeout ran out closes its connection) abandons its request: a
waiting request leaves the queue, and a row of a batch stops at its next token once its request is
abandoned. A client retrying after its timeout would otherwise queue the same work again behind the copy
nobody waits for, and a busy server would never catch up.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from modelserver.engines import Decoding, Model, Sampling

DEFAULT_MAX_BATCH = 8
DEFAULT_BATCH_WAIT_S = 0.02
DEFAULT_MAX_TOKENS = 256
# How often a waiting caller's connection is looked at.
GONE_POLL_S = 0.2


def _present() -> bool:
    return False


@dataclass
class Completion:
    text: str
    finish_reason: str  # "stop" (end of turn or a stop string) or "length" (max_tokens reached)
    prompt_tokens: int
    completion_tokens: int


@dataclass
class Request:
    model: str
    messages: list[dict[str, str]]
    max_tokens: int = DEFAULT_MAX_TOKENS
    sampling: Sampling = field(default_factory=Sampling)
    stop: tuple[str, ...] = ()
    gone: Callable[[], bool] = _present  # whether the caller has gone away
    done: threading.Event = field(default_factory=threading.Event)
    result: Completion | None = None
    error: Exception | None = None
    abandoned: bool = False

    @property
    def key(self) -> tuple[str, Sampling]:
        return self.model, self.sampling


@dataclass
class Counters:
    """What the workers have done, for ``GET /v1/stats`` and the tests; ``generation_s`` is the time at
    least one batch was generating."""

    requests: int = 0
    batches: int = 0
    largest_batch: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    generation_s: float = 0.0
    abandoned: int = 0

    def view(self) -> dict[str, Any]:
        rate = self.completion_tokens / self.generation_s if self.generation_s else 0.0
        return {
            "requests": self.requests,
            "batches": self.batches,
            "largest_batch": self.largest_batch,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "generation_seconds": round(self.generation_s, 3),
            "completion_tokens_per_second": round(rate, 2),
            "abandoned": self.abandoned,
        }


class CallerGone(Exception):
    """The caller went away before its completion was ready; nobody is left to answer."""


class UnknownModel(LookupError):
    """A request for a model id this server does not serve."""


class LoadedModels:
    """The models in memory, at most ``keep`` of them (the least recently used leaves first), loaded
    on first use through ``load`` (model id -> the engine's model); workers asking for a model being
    loaded wait for that load rather than start another."""

    def __init__(self, load: Callable[[str], Model], keep: int = 2) -> None:
        self._load = load
        self._keep = keep
        self._models: OrderedDict[str, Model] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, model_id: str) -> Model:
        with self._lock:
            if model_id in self._models:
                self._models.move_to_end(model_id)
                return self._models[model_id]
            loaded = self._load(model_id)
            self._models[model_id] = loaded
            while len(self._models) > self._keep:
                self._models.popitem(last=False)
            return loaded

    def forget(self, model_id: str) -> None:
        with self._lock:
            self._models.pop(model_id, None)


class Generator:
    """The queue and its ``workers`` threads, each generating one batch at a time (started by
    :meth:`start`, stopped by :meth:`stop`)."""

    def __init__(
        self,
        models: LoadedModels,
        *,
        max_batch: int = DEFAULT_MAX_BATCH,
        batch_wait_s: float = DEFAULT_BATCH_WAIT_S,
        workers: int = 1,
    ) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, not {max_batch}")
        if workers < 1:
            raise ValueError(f"workers must be at least 1, not {workers}")
        self.max_batch = max_batch
        self.batch_wait_s = batch_wait_s
        self.workers = workers
        self.counters = Counters()
        self._models = models
        self._pending: list[Request] = []
        self._changed = threading.Condition()
        self._stopped = False
        self._threads: list[threading.Thread] = []
        self._generating = 0
        self._busy_since = 0.0

    def start(self) -> None:
        self._threads = [
            threading.Thread(target=self._work, name=f"generation-{n}", daemon=True)
            for n in range(self.workers)
        ]
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        with self._changed:
            self._stopped = True
            self._changed.notify_all()
        for thread in self._threads:
            thread.join(timeout=60)
        self._threads = []

    def complete(self, request: Request) -> Completion:
        """``request``'s completion, once the worker has generated it (raises what generation raised, and
        :class:`CallerGone` when ``request.gone`` says its caller left first)."""
        with self._changed:
            if self._stopped:
                raise RuntimeError("the server is stopping")
            self._pending.append(request)
            self._changed.notify_all()
        while not request.done.wait(GONE_POLL_S):
            if request.gone():
                self._abandon(request)
                raise CallerGone("the caller closed its connection before its answer was ready")
        if request.error is not None:
            raise request.error
        assert request.result is not None
        return request.result

    def _abandon(self, request: Request) -> None:
        with self._changed:
            request.abandoned = True
            if request in self._pending:
                self._pending.remove(request)
                self._changed.notify_all()
            self.counters.abandoned += 1

    def waiting(self) -> int:
        with self._changed:
            return len(self._pending)

    def _next_batch(self) -> list[Request]:
        """The oldest waiting request and those that can join it, once the batch is full or its wait is
        over; [] when the server stops. Requests abandoned while the batch waits leave it."""
        with self._changed:
            while not self._stopped:
                if not self._pending:
                    self._changed.wait()
                    continue
                key = self._pending[0].key
                deadline = time.monotonic() + self.batch_wait_s
                while not self._stopped:
                    batch = [r for r in self._pending if r.key == key][: self.max_batch]
                    if not batch:  # every request of this batch was abandoned: start again
                        break
                    if len(batch) >= self.max_batch or deadline - time.monotonic() <= 0:
                        for request in batch:
                            self._pending.remove(request)
                        return batch
                    self._changed.wait(timeout=deadline - time.monotonic())
            return []

    def _work(self) -> None:
        while batch := self._next_batch():
            try:
                results = self._generate(batch)
            except Exception as error:  # every caller waiting on the batch hears of it
                for request in batch:
                    request.error = error
            else:
                for request, result in zip(batch, results, strict=True):
                    request.result = result
            for request in batch:
                request.done.set()
        with self._changed:
            for request in self._pending:
                request.error = RuntimeError("the server stopped before it answered")
                request.done.set()
            self._pending.clear()

    def _generate(self, batch: list[Request]) -> list[Completion]:
        with self._changed:
            if self._generating == 0:
                self._busy_since = time.monotonic()
            self._generating += 1
        try:
            results = complete(self._models.get(batch[0].model), batch)
        finally:
            with self._changed:
                self._generating -= 1
                if self._generating == 0:
                    self.counters.generation_s += time.monotonic() - self._busy_since
        with self._changed:
            counters = self.counters
            counters.requests += len(batch)
            counters.batches += 1
            counters.largest_batch = max(counters.largest_batch, len(batch))
            counters.prompt_tokens += sum(r.prompt_tokens for r in results)
            counters.completion_tokens += sum(r.completion_tokens for r in results)
        return results


def complete(model: Model, batch: list[Request]) -> list[Completion]:
    """The completions of ``batch`` (requests for ``model`` with the same sampling), generated together:
    each answer cut at its end of turn, its max_tokens and its first stop string."""
    tokenizer = model.tokenizer
    prompts = [
        tokenizer.apply_chat_template(r.messages, add_generation_prompt=True, tokenize=False) for r in batch
    ]
    encoded = [tokenizer(text, add_special_tokens=False)["input_ids"] for text in prompts]
    decoding = Decoding(
        max_new_tokens=max(r.max_tokens for r in batch),
        sampling=batch[0].sampling,
        stopped=lambda row: batch[row].abandoned,
    )
    results = []
    for generated, prompt, request in zip(model.generate(encoded, decoding), encoded, batch, strict=True):
        tokens = generated[: request.max_tokens]
        ended = next((i for i, token in enumerate(tokens) if token in model.ends), None)
        if ended is not None:
            tokens = tokens[:ended]
        text = tokenizer.decode(tokens, skip_special_tokens=True)
        stopped_at = min((text.find(s) for s in request.stop if s and s in text), default=-1)
        if stopped_at >= 0:
            text = text[:stopped_at]
        finish = "stop" if ended is not None or stopped_at >= 0 else "length"
        results.append(Completion(text, finish, len(prompt), len(tokens)))
    return results
