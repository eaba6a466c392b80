"""Chat completions from the tiny model, asked through BenchGen's own openai-compatible client and
over plain HTTP: answers, batching of concurrent requests, sampling options, refusals and the API key."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchgen.aws.providers.openai_compatible import ChatCompletions
from benchgen.inference.model import ModelCallError
from benchgen.vocabulary import Sampling
from modelserver.server import ModelServer

PROMPTS = [
    "What is 2 + 3?",
    "Natalia sold clips to 48 of her friends in April.",
    "hi",
    "Reasoning: add the two numbers, then give the final answer as a number on its own line.",
]
KEY = "test-key-9f2c"


@pytest.fixture(scope="module", params=["ctranslate2", "transformers"])
def server(
    tiny_model: Path, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[ModelServer]:
    """The server, once with each engine: every answer below holds for both."""
    with ModelServer(str(tiny_model), work=tmp_path_factory.mktemp("work"), engine=request.param) as running:
        yield running


def _post(url: str, body: Any, headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _get(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=60) as response:
        answer: dict[str, Any] = json.loads(response.read())
        return answer


def _ask(server: ModelServer, prompt: str, **options: Any) -> dict[str, Any]:
    body = {"model": "tiny-chat", "messages": [{"role": "user", "content": prompt}], **options}
    status, answer = _post(server.base_url + "/chat/completions", body)
    assert status == 200, answer
    return answer


def test_models_lists_the_base_model_and_the_batch_size(server: ModelServer) -> None:
    listed = _get(server.base_url + "/models")

    assert [m["id"] for m in listed["data"]] == ["tiny-chat"]
    assert listed["data"][0]["object"] == "model"
    assert listed["max_batch"] == server.generator.max_batch


def test_benchgens_client_gets_the_models_greedy_answer(server: ModelServer) -> None:
    model = ChatCompletions(server.base_url, "tiny-chat", Sampling(temperature=0, max_tokens=8))

    first, second = model.complete(PROMPTS[0]), model.complete(PROMPTS[0])

    assert first.text, "the tiny model always writes something within 8 tokens"
    assert first.text == second.text
    assert json.loads(first.raw)["model"] == "tiny-chat"


def test_max_tokens_bounds_the_answer(server: ModelServer) -> None:
    answer = _ask(server, PROMPTS[1], max_tokens=3)

    assert answer["usage"]["completion_tokens"] <= 3
    if answer["choices"][0]["finish_reason"] == "length":
        assert answer["usage"]["completion_tokens"] == 3


def test_a_temperature_above_zero_samples(server: ModelServer) -> None:
    greedy = _ask(server, PROMPTS[2], max_tokens=16)["choices"][0]["message"]["content"]

    sampled = {
        _ask(server, PROMPTS[2], max_tokens=16, temperature=2.0)["choices"][0]["message"]["content"]
        for _ in range(3)
    }

    assert sampled != {greedy}


def test_a_stop_string_cuts_the_answer_before_it(server: ModelServer) -> None:
    full = _ask(server, PROMPTS[0], max_tokens=12)["choices"][0]["message"]["content"]
    stop = full[2:4]

    cut = _ask(server, PROMPTS[0], max_tokens=12, stop=[stop])["choices"][0]

    assert cut["message"]["content"] == full[: full.find(stop)]
    assert cut["finish_reason"] == "stop"


def test_concurrent_requests_share_one_batch_and_answer_as_they_would_alone(
    server: ModelServer, tiny_model: Path, tmp_path: Path
) -> None:
    alone = [_ask(server, p, max_tokens=10)["choices"][0]["message"]["content"] for p in PROMPTS]
    answers: dict[int, str] = {}

    # The first request of a batch waits for the batch to fill (or a minute), so the four requests that
    # are sent together are generated together, however the threads are scheduled.
    with ModelServer(
        str(tiny_model),
        work=tmp_path,
        max_batch=len(PROMPTS),
        batch_wait_s=60,
        engine=server.engine.name,
    ) as batching:

        def ask(index: int) -> None:
            answers[index] = _ask(batching, PROMPTS[index], max_tokens=10)["choices"][0]["message"]["content"]

        threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(PROMPTS))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        stats = _get(batching.base_url + "/stats")

    assert stats["largest_batch"] == len(PROMPTS)
    assert stats["batches"] == 1
    assert stats["requests"] == len(PROMPTS)
    assert [answers[i] for i in range(len(PROMPTS))] == alone


def test_an_unknown_model_is_a_404_naming_the_served_ones(server: ModelServer) -> None:
    status, answer = _post(
        server.base_url + "/chat/completions",
        {"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}]},
    )

    assert status == 404
    assert "tiny-chat" in answer["error"]["message"]


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"model": "tiny-chat"}, "messages must be a non-empty list"),
        ({"model": "tiny-chat", "messages": [{"role": "robot", "content": "x"}]}, "messages[0] needs a role"),
        (
            {"model": "tiny-chat", "messages": [{"role": "user", "content": "x"}], "max_tokens": 0},
            "max_tokens",
        ),
        (
            {"model": "tiny-chat", "messages": [{"role": "user", "content": "x"}], "temperature": 3},
            "temperature",
        ),
        ({"model": "tiny-chat", "messages": [{"role": "user", "content": "x"}], "stream": True}, "streaming"),
    ],
)
def test_a_bad_request_is_a_400_saying_what_to_fix(server: ModelServer, body: Any, words: str) -> None:
    status, answer = _post(server.base_url + "/chat/completions", body)

    assert status == 400
    assert words in answer["error"]["message"]


def test_with_an_api_key_only_requests_bearing_it_are_answered(tiny_model: Path, tmp_path: Path) -> None:
    with ModelServer(str(tiny_model), work=tmp_path, api_key=KEY) as guarded:
        keyless = ChatCompletions(guarded.base_url, "tiny-chat", Sampling(max_tokens=4))
        keyed = ChatCompletions(guarded.base_url, "tiny-chat", Sampling(max_tokens=4), api_key=KEY)

        with pytest.raises(ModelCallError, match="HTTP 401") as refused:
            keyless.complete("hi")
        answer = keyed.complete("hi")

    assert answer.text
    assert KEY not in str(refused.value)


def test_listening_beyond_loopback_needs_an_api_key(tiny_model: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="api-key-file"):
        ModelServer(str(tiny_model), work=tmp_path, host="0.0.0.0")
