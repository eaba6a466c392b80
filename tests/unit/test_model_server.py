"""The local server of simulated models: deterministic answers from the example generator, and the
faults it injects, seen through the OpenAI-compatible adapter and its retries."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchgen.aws.providers.openai_compatible import ChatCompletions
from benchgen.inference.model import ModelCallError
from benchgen.inference.prompts import prompt_for
from benchgen.inference.retry import Backoff, ask
from benchgen.vocabulary import Sampling
from localcloud.model_server import BASE_MODEL, TUNED_MODEL, ExampleModelServer, Fault

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NO_WAIT = Backoff(attempts=4, base_s=0.0, cap_s=0.0)


@pytest.fixture(scope="module")
def server() -> Iterator[ExampleModelServer]:
    with ExampleModelServer() as running:
        yield running


def _cases(name: str) -> list[dict[str, object]]:
    lines = (EXAMPLES / name / "bundle" / "reference" / "cases.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def _submitted(name: str) -> dict[str, str]:
    predictions = json.loads((EXAMPLES / name / "submission" / "predictions.json").read_text())["predictions"]
    return {p["id"]: p["prediction_text"] for p in predictions}


def test_example_base_answers_each_question_as_the_example_submission_does(
    server: ExampleModelServer,
) -> None:
    model = ChatCompletions(server.base_url, BASE_MODEL, Sampling(temperature=0))
    submitted = _submitted("gsm8k-en")

    answers = {case["id"]: model.complete(prompt_for(case)).text for case in _cases("gsm8k-en")}

    assert answers == submitted


def test_example_tuned_fixes_most_of_what_example_base_gets_wrong(server: ExampleModelServer) -> None:
    cases = _cases("gsm8k-tr")
    base = ChatCompletions(server.base_url, BASE_MODEL, Sampling())
    tuned = ChatCompletions(server.base_url, TUNED_MODEL, Sampling())

    changed = [
        case["id"]
        for case in cases
        if base.complete(prompt_for(case)).text != tuned.complete(prompt_for(case)).text
    ]

    # The example submission gets 15 of the 50 cases wrong; the tuned model keeps a third of them wrong.
    assert 8 <= len(changed) <= 12
    assert all(
        tuned.complete(prompt_for(case)).text == tuned.complete(prompt_for(case)).text for case in cases[:5]
    )


def test_qa_prompts_carry_their_context(server: ExampleModelServer) -> None:
    model = ChatCompletions(server.base_url, BASE_MODEL, Sampling())
    case = _cases("qa")[0]

    assert model.complete(prompt_for(case)).text == _submitted("qa")[str(case["id"])]
    assert model.complete(str(case["question"])).text == "I do not know the answer to this question."


def test_an_unknown_model_is_a_404_that_names_the_models_served(server: ExampleModelServer) -> None:
    with pytest.raises(ModelCallError, match=r"answered HTTP 404.*example-base, example-tuned") as raised:
        ChatCompletions(server.base_url, "gpt-9", Sampling()).complete("hi")
    assert raised.value.retryable is False


def test_a_429_with_retry_after_is_retried_after_the_wait_it_asked_for() -> None:
    case = _cases("gsm8k-en")[3]
    waits: list[float] = []
    with ExampleModelServer() as server:
        server.faults.add(Fault(status=429, case_id=str(case["id"]), times=2, retry_after_s=1.5))
        model = ChatCompletions(server.base_url, BASE_MODEL, Sampling())

        outcome = ask(
            lambda: model.complete(prompt_for(case)),
            Backoff(attempts=5, base_s=0, cap_s=10),
            sleep=waits.append,
        )

    assert outcome.answer is not None and outcome.answer.text == _submitted("gsm8k-en")[str(case["id"])]
    assert outcome.attempts == 3
    assert waits == [1.5, 1.5]


def test_a_case_answered_500_every_time_is_unanswered_with_its_reason() -> None:
    case = _cases("gsm8k-en")[0]
    with ExampleModelServer() as server:
        server.faults.add(Fault(status=500, case_id=str(case["id"]), times=None))
        model = ChatCompletions(server.base_url, BASE_MODEL, Sampling())

        outcome = ask(lambda: model.complete(prompt_for(case)), NO_WAIT, sleep=lambda _: None)
        other = ask(lambda: model.complete(prompt_for(_cases("gsm8k-en")[1])), NO_WAIT, sleep=lambda _: None)
        asked = list(server.faults.requests)

    assert outcome.answer is None
    assert outcome.attempts == 4
    assert (
        outcome.error is not None
        and "answered HTTP 500" in outcome.error
        and "(after 4 attempts)" in outcome.error
    )
    assert other.answer is not None and other.attempts == 1
    assert asked.count(str(case["id"])) == 4


def test_a_slow_answer_past_the_timeout_is_a_retryable_failure() -> None:
    with ExampleModelServer() as server:
        server.faults.add(Fault(delay_s=1.0))
        model = ChatCompletions(server.base_url, BASE_MODEL, Sampling(), timeout_s=0.2)

        with pytest.raises(ModelCallError, match=r"gave no whole answer within 0\.2 s") as raised:
            model.complete("hi")

    assert raised.value.retryable is True


def test_the_api_key_goes_in_the_authorization_header_and_never_in_an_error() -> None:
    key = "sk-planted-0123456789"
    with ExampleModelServer(api_key=key) as server:
        answered = ChatCompletions(server.base_url, BASE_MODEL, Sampling(), api_key=key).complete("hi")
        with pytest.raises(ModelCallError) as refused:
            ChatCompletions(server.base_url, BASE_MODEL, Sampling(), api_key="sk-wrong-key").complete("hi")

    assert answered.text == "I do not know the answer to this question."
    assert "401" in str(refused.value)
    assert "sk-wrong-key" not in str(refused.value)


def test_the_server_listens_on_loopback_only() -> None:
    with pytest.raises(ValueError, match="loopback only"):
        ExampleModelServer(host="0.0.0.0")


def test_answers_say_they_come_from_a_simulated_model(server: ExampleModelServer) -> None:
    answer = ChatCompletions(server.base_url, BASE_MODEL, Sampling()).complete("hi")

    assert json.loads(answer.raw)["system_fingerprint"] == "benchgen-simulated"


def test_a_refusal_that_retrying_cannot_fix_is_asked_once(server: ExampleModelServer) -> None:
    model = ChatCompletions(server.base_url, "gpt-9", Sampling())

    outcome = ask(lambda: model.complete("hi"), NO_WAIT, sleep=lambda _: None)

    assert outcome.answer is None and outcome.attempts == 1
    assert outcome.error is not None and outcome.error.endswith("(after 1 attempt)")


def test_backoff_honours_retry_after_up_to_its_cap_and_otherwise_jitters_under_the_doubled_base() -> None:
    backoff = Backoff(attempts=5, base_s=0.5, cap_s=4.0)

    assert backoff.delay(0, asked=2.5) == 2.5
    assert backoff.delay(0, asked=600) == 4.0
    assert all(0 <= backoff.delay(0, None) <= 0.5 for _ in range(200))
    assert all(0 <= backoff.delay(2, None) <= 2.0 for _ in range(200))
    assert all(0 <= backoff.delay(9, None) <= 4.0 for _ in range(200))
    assert max(backoff.delay(9, None) for _ in range(200)) > 2.0
