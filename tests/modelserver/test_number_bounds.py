"""Every number the server takes has bounds, checked before any work: NaN, Infinity, numbers of tens of
digits, negatives, strings and booleans in a chat completion or a fine-tuning job are a 400 naming the
field, never a 500 from the generation library, garbage from a NaN sampler, or a queued job."""

from __future__ import annotations

import json
import math
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchgen.aws.providers.openai_compatible import OpenAICompatibleJobs
from modelserver.server import ModelServer

CHAT_NUMBERS = (
    "temperature",
    "top_p",
    "max_tokens",
    "max_completion_tokens",
    "n",
    "seed",
    "frequency_penalty",
    "presence_penalty",
)
HYPERPARAMETERS = ("n_epochs", "learning_rate", "batch_size", "warmup_ratio")
FORTY_ONE_DIGITS = 10**40
ROW = {"messages": [{"role": "user", "content": "2 + 3?"}, {"role": "assistant", "content": "5"}]}
# Values no numeric field takes: not finite, far too large, below every lower bound, not numbers at all.
EXTREMES = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -1e308, -1, -0.5, "1", "NaN", True, False]),
    st.integers(min_value=FORTY_ONE_DIGITS, max_value=10**200),
    st.integers(max_value=-1),
    st.text(max_size=8),
    st.lists(st.integers(), max_size=2),
)


@pytest.fixture(scope="module")
def server(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModelServer]:
    with ModelServer(str(tiny_model), work=tmp_path_factory.mktemp("work")) as running:
        yield running


@pytest.fixture(scope="module")
def training_file(server: ModelServer) -> str:
    jobs = OpenAICompatibleJobs(server.base_url, api_key=lambda: None)
    return jobs.upload("train.jsonl", (json.dumps(ROW) + "\n").encode() * 4) or ""


def _post(url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    # json.dumps writes NaN and Infinity as the bare words Python's, JavaScript's and many clients' JSON do.
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _chat(server: ModelServer, **numbers: Any) -> tuple[int, dict[str, Any]]:
    body = {"model": "tiny-chat", "messages": [{"role": "user", "content": "hi"}], **numbers}
    return _post(server.base_url + "/chat/completions", body)


def _fine_tune(server: ModelServer, training_file: str, **numbers: Any) -> tuple[int, dict[str, Any]]:
    body = {"model": "tiny-chat", "training_file": training_file, "suffix": "bounds", **numbers}
    return _post(server.base_url + "/fine-tunes", body)


def _names(answer: dict[str, Any], field: str) -> bool:
    return re.search(rf"\b{field}\b", answer["error"]["message"]) is not None


def _job_count(server: ModelServer) -> int:
    with urllib.request.urlopen(server.base_url + "/fine-tunes", timeout=60) as response:
        return len(json.loads(response.read())["data"])


@pytest.mark.parametrize(
    ("numbers", "field"),
    [
        ({"temperature": math.nan}, "temperature"),
        ({"temperature": 1, "top_p": math.nan}, "top_p"),
        ({"temperature": math.inf}, "temperature"),
        ({"max_tokens": FORTY_ONE_DIGITS}, "max_tokens"),
        ({"max_tokens": 8, "max_completion_tokens": math.nan}, "max_completion_tokens"),
        ({"max_completion_tokens": 8, "max_tokens": -1}, "max_tokens"),
        ({"n": True}, "n"),
        ({"seed": -1}, "seed"),
        ({"seed": FORTY_ONE_DIGITS}, "seed"),
        ({"frequency_penalty": 1.5}, "frequency_penalty"),
    ],
)
def test_a_chat_number_out_of_bounds_is_a_400_naming_it(
    server: ModelServer, numbers: dict[str, Any], field: str
) -> None:
    # given a chat completion with one number out of its bounds
    # when it is sent
    status, answer = _chat(server, **numbers)

    # then it is refused, naming the field
    assert status == 400, answer
    assert _names(answer, field)


def test_chat_numbers_at_their_bounds_are_answered(server: ModelServer) -> None:
    # given every chat number at the edge of its bounds
    numbers = {
        "temperature": 2,
        "top_p": 1.0,
        "max_tokens": 4096,
        "max_completion_tokens": 1,
        "n": 1,
        "seed": 2**63 - 1,
        "frequency_penalty": 0,
        "presence_penalty": 0.0,
    }

    # when they are sent
    status, answer = _chat(server, **numbers)

    # then the request is answered, within the tighter of the two token limits
    assert status == 200, answer
    assert answer["usage"]["completion_tokens"] <= 1


@pytest.mark.parametrize("temperature", [5e-324, 1e-320, 1e-40])
def test_a_temperature_too_small_to_divide_by_decodes_greedily(
    server: ModelServer, temperature: float
) -> None:
    # given the greedy answer to a prompt
    status, greedy = _chat(server, max_tokens=6)
    assert status == 200, greedy

    # when it is asked for at a temperature above 0 that logits cannot be divided by without overflowing
    status, answer = _chat(server, max_tokens=6, temperature=temperature, top_p=5e-324)

    # then it is answered, greedily, rather than failing in the sampler
    assert status == 200, answer
    assert answer["choices"][0]["message"] == greedy["choices"][0]["message"]


@pytest.mark.parametrize(
    ("numbers", "field"),
    [
        ({"n_epochs": FORTY_ONE_DIGITS}, "n_epochs"),
        ({"batch_size": FORTY_ONE_DIGITS}, "batch_size"),
        ({"learning_rate": math.nan}, "learning_rate"),
        ({"learning_rate": math.inf}, "learning_rate"),
        ({"learning_rate": 0}, "learning_rate"),
        ({"warmup_ratio": math.nan}, "warmup_ratio"),
        ({"batch_size": 4.0}, "batch_size"),
    ],
)
def test_a_hyperparameter_out_of_bounds_is_a_400_naming_it_and_queues_no_job(
    server: ModelServer, training_file: str, numbers: dict[str, Any], field: str
) -> None:
    # given the jobs the server knows
    jobs_before = _job_count(server)

    # when a job is asked for with one hyperparameter out of its bounds
    status, answer = _fine_tune(server, training_file, **numbers)

    # then it is refused, naming the field, and no job is created
    assert status == 400, answer
    assert _names(answer, field)
    assert _job_count(server) == jobs_before


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(CHAT_NUMBERS), value=EXTREMES)
def test_no_extreme_chat_number_is_answered_but_with_a_4xx(
    server: ModelServer, field: str, value: Any
) -> None:
    # given a chat completion with one number at an extreme
    # when it is sent
    status, answer = _chat(server, **{field: value})

    # then it is refused as the client's error, naming the field
    assert 400 <= status < 500, answer
    assert _names(answer, field)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(HYPERPARAMETERS), value=EXTREMES)
def test_no_extreme_hyperparameter_is_answered_but_with_a_4xx_or_queues_a_job(
    server: ModelServer, training_file: str, field: str, value: Any
) -> None:
    # given the jobs the server knows
    jobs_before = _job_count(server)

    # when a job is asked for with one hyperparameter at an extreme
    status, answer = _fine_tune(server, training_file, **{field: value})

    # then it is refused as the client's error, naming the field, and no job is created
    assert 400 <= status < 500, answer
    assert _names(answer, field)
    assert _job_count(server) == jobs_before
