"""Reinforcement (GRPO) jobs on the tiny model, driven through BenchGen's own openai-compatible client: a
job rewarded by its python grader, from upload to a served checkpoint that answers; one that starts from an
SFT job's checkpoint; a cancel; and the failures (a grader that raises or returns no number, a grader
without ``grade``, a row that is not a prompt)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from benchgen.aws.providers.openai_compatible import ChatCompletions, OpenAICompatibleJobs
from benchgen.providers.hyperparameters import typed
from benchgen.providers.jobs import JobSpec, ProviderFault
from benchgen.providers.openai_compatible import HYPERPARAMETERS, OpenAICompatible
from benchgen.records.training_runs import TrainingStatus
from benchgen.scoring.reward import grader_source
from benchgen.vocabulary import Method, Sampling
from cli.self_hosted_model import GRPO_HYPERPARAMETERS
from modelserver.catalog import Catalog
from modelserver.chat import BadRequest
from modelserver.grader import reward
from modelserver.jobs import FineTuneJobs
from modelserver.server import ModelServer
from tests.modelserver.job_polling import get_json, jsonl, until_ended, until_stepped

# Full reward when the answer holds the gold digits, a quarter otherwise: every reward the trainer logs
# comes from this grader, reading the row's grading fields.
GRADER = """
def grade(sample, item):
    return 1.0 if item["grading"]["answer"] in sample["output_text"] else 0.25
"""
# Two prompts a step, each answered twice, at most 8 tokens: a few seconds a step on the tiny model.
SMALL = {"batch_size": "2", "num_generations": "2", "max_completion_length": "8", "learning_rate": "0.01"}


def _prompt(question: str, answer: str) -> dict[str, Any]:
    """An openai-rft package row: the prompt ending with the user's turn, and the grader's fields."""
    return {
        "messages": [
            {"role": "system", "content": "Answer with the final number."},
            {"role": "user", "content": question},
        ],
        "grading": {"answer": answer, "case_id": f"case-{answer}"},
    }


PROMPTS = jsonl([_prompt(f"What is 2 + {n}?", str(2 + n)) for n in range(4)])


def _spec(
    name: str, file_id: str, *, grader: str = GRADER, base: str = "tiny-chat", **numbers: str
) -> JobSpec:
    return JobSpec(
        training_run_id=f"train-{name}",
        job_name=f"benchgen-train-{name}",
        method=Method.REINFORCEMENT,
        base_model=base,
        hyperparameters=SMALL | numbers,
        train_uri=file_id,
        output_uri="s3://unused/training/out/",
        grader_source=grader,
    )


def _served(server: ModelServer) -> dict[str, dict[str, Any]]:
    return {model["id"]: model for model in get_json(server.base_url + "/models")["data"]}


def test_a_reinforcement_job_is_rewarded_by_its_grader_and_its_checkpoint_answers(
    server: ModelServer, jobs: OpenAICompatibleJobs
) -> None:
    spec = _spec("grpo", jobs.upload("rft.jsonl", PROMPTS) or "")

    states = until_ended(jobs, spec, jobs.start(spec))
    job = get_json(f"{server.base_url}/fine-tunes/{states[-1].job_id}")

    assert states[-1].status is TrainingStatus.SUCCEEDED, states[-1].failure_reason
    tuned = ChatCompletions(server.base_url, states[-1].result_model or "", Sampling(max_tokens=8))
    answer = tuned.complete("What is 2 + 3?")
    assert states[-1].result_model == "tiny-chat-benchgen-train-grpo"
    assert [e["status"] for e in job["events"]] == ["pending", "queued", "running", "completed"]
    assert job["method"]["type"] == "reinforcement"
    assert job["method"]["reinforcement"]["grader"] == {
        "type": "python",
        "name": "benchgen-environment-scoring",
    }
    assert job["method"]["reinforcement"]["hyperparameters"]["num_generations"] == 2
    progress = job["progress"]
    assert progress["step"] == progress["total_steps"] == 2  # 4 prompts, 2 a step
    assert len(progress["reward_curve"]) == 2
    assert all(0.25 <= reward <= 1.0 for reward in progress["reward_curve"])
    assert progress["rollouts_per_s"] > 0
    assert 1 <= progress["completion_mean_tokens"] <= 8
    # (the rate is of the step's seconds before they were rounded to the milliseconds shown)
    tokens = progress["completion_mean_tokens"] * 4
    seconds = progress["step_seconds"]
    assert tokens / (seconds + 0.0005) <= progress["completion_tokens_per_s"] <= tokens / (seconds - 0.0005)
    # (the server generates with CTranslate2, so the job's answers were sampled by it, from the policy)
    assert progress["rollouts"]["engine"] == "ctranslate2"
    assert 0 < progress["generation_seconds"] < seconds
    assert _served(server)["tiny-chat-benchgen-train-grpo"]["parent"] == "tiny-chat"
    assert json.loads(answer.raw)["model"] == "tiny-chat-benchgen-train-grpo"


def test_a_reinforcement_job_starts_from_an_sft_checkpoint(
    server: ModelServer, jobs: OpenAICompatibleJobs
) -> None:
    demonstration = jsonl(
        [{"messages": [{"role": "user", "content": "What is 2 + 3?"}, {"role": "assistant", "content": "5"}]}]
        * 4
    )
    sft = _spec("sft-first", jobs.upload("sft.jsonl", demonstration) or "").model_copy(
        update={"method": Method.DEMONSTRATION, "hyperparameters": {"batch_size": "4"}, "grader_source": None}
    )
    sft_states = until_ended(jobs, sft, jobs.start(sft))
    checkpoint = sft_states[-1].result_model or ""
    spec = _spec("after-sft", jobs.upload("rft.jsonl", PROMPTS) or "", base=checkpoint)

    states = until_ended(jobs, spec, jobs.start(spec))
    job = get_json(f"{server.base_url}/fine-tunes/{states[-1].job_id}")

    assert checkpoint == "tiny-chat-benchgen-train-sft-first"
    assert states[-1].status is TrainingStatus.SUCCEEDED, states[-1].failure_reason
    assert job["model"] == checkpoint
    assert states[-1].result_model == f"{checkpoint}-benchgen-train-after-sft"
    assert _served(server)[f"{checkpoint}-benchgen-train-after-sft"]["parent"] == checkpoint


@pytest.mark.parametrize(
    ("name", "source", "failure"),
    [
        (
            "raises",
            "def grade(sample, item):\n    return 1 / 0\n",
            "grader benchgen-environment-scoring raised ZeroDivisionError: division by zero on the answer ",
        ),
        (
            "not-a-number",
            "def grade(sample, item):\n    return 'yes'\n",
            "grader benchgen-environment-scoring returned 'yes' for the answer ",
        ),
    ],
)
def test_a_grader_that_fails_while_training_fails_the_job_saying_so(
    server: ModelServer, jobs: OpenAICompatibleJobs, name: str, source: str, failure: str
) -> None:
    spec = _spec(name, jobs.upload("rft.jsonl", PROMPTS) or "", grader=source)

    states = until_ended(jobs, spec, jobs.start(spec))

    assert states[-1].status is TrainingStatus.FAILED
    assert (states[-1].failure_reason or "").startswith(failure)
    assert f"tiny-chat-benchgen-train-{name}" not in _served(server)


def test_a_grader_without_grade_is_refused_before_a_job_is_made(
    server: ModelServer, jobs: OpenAICompatibleJobs
) -> None:
    spec = _spec("no-grade", jobs.upload("rft.jsonl", PROMPTS) or "", grader="def score(x):\n    return 1\n")

    with pytest.raises(ProviderFault, match="HTTP 400") as refused:
        jobs.start(spec)

    assert "grader benchgen-environment-scoring defines no grade function" in str(refused.value)
    assert not [j for j in get_json(server.base_url + "/fine-tunes")["data"] if j["suffix"] == spec.job_name]


def test_a_row_that_is_not_a_prompt_fails_the_job_naming_its_line(jobs: OpenAICompatibleJobs) -> None:
    answered = {
        "messages": [{"role": "user", "content": "What is 2 + 3?"}, {"role": "assistant", "content": "5"}],
        "grading": {"answer": "5"},
    }
    spec = _spec("bad-row", jobs.upload("rft.jsonl", PROMPTS + jsonl([answered])) or "")

    states = until_ended(jobs, spec, jobs.start(spec))

    assert states[-1].status is TrainingStatus.FAILED
    assert states[-1].failure_reason == (
        "line 5 of rft.jsonl ends with the assistant's turn: end each reinforcement row with the user's "
        "(the model writes the answer the grader scores)"
    )


def test_cancel_stops_a_reinforcement_job_and_serves_no_model(
    server: ModelServer, jobs: OpenAICompatibleJobs
) -> None:
    spec = _spec("cancelled", jobs.upload("long.jsonl", PROMPTS * 50) or "", n_epochs="20")
    started = jobs.start(spec)
    url = f"{server.base_url}/fine-tunes/{started.job_id}"
    until_stepped(url)

    stopped = jobs.stop(spec, started.job_id)
    job = get_json(url)

    assert stopped.status is TrainingStatus.CANCELLED
    assert 1 <= job["progress"]["step"] < job["progress"]["total_steps"]
    assert [e["status"] for e in job["events"]][-2:] == ["cancel_requested", "cancelled"]
    assert "tiny-chat-benchgen-train-cancelled" not in _served(server)
    assert not (server.work / "models" / ".tiny-chat-benchgen-train-cancelled.partial").exists()


def test_max_steps_ends_a_reinforcement_job_after_that_many_steps(
    server: ModelServer, jobs: OpenAICompatibleJobs
) -> None:
    # given 16 prompts, 2 a step (8 steps an epoch), and max_steps 3
    spec = _spec("three-steps", jobs.upload("rft.jsonl", PROMPTS * 4) or "", max_steps="3")

    # when the job runs
    states = until_ended(jobs, spec, jobs.start(spec))
    job = get_json(f"{server.base_url}/fine-tunes/{states[-1].job_id}")

    # then it trains 3 steps and serves its checkpoint
    assert states[-1].status is TrainingStatus.SUCCEEDED, states[-1].failure_reason
    assert job["method"]["reinforcement"]["hyperparameters"]["max_steps"] == 3
    assert job["progress"]["step"] == job["progress"]["total_steps"] == 3
    assert len(job["progress"]["reward_curve"]) == 3
    assert "tiny-chat-benchgen-train-three-steps" in _served(server)


# A grader that takes a quarter of a second an answer: a step of 2 prompts x 2 answers lasts over a second.
SLOW_GRADER = """
import time

def grade(sample, item):
    time.sleep(0.25)
    return 1.0 if item["grading"]["answer"] in sample["output_text"] else 0.25
"""


def test_max_seconds_ends_a_reinforcement_job_before_a_step_that_would_pass_it(
    server: ModelServer, jobs: OpenAICompatibleJobs
) -> None:
    # given 8 steps of prompts whose steps last over a second each, and 2.5 seconds of training
    prompts = jobs.upload("rft.jsonl", PROMPTS * 4) or ""
    spec = _spec("budget", prompts, grader=SLOW_GRADER, max_seconds="2.5")

    # when the job runs
    states = until_ended(jobs, spec, jobs.start(spec))
    job = get_json(f"{server.base_url}/fine-tunes/{states[-1].job_id}")

    # then it stops after the steps that fit (a third would end past 2.5 s) and serves what it trained
    assert states[-1].status is TrainingStatus.SUCCEEDED, states[-1].failure_reason
    assert job["method"]["reinforcement"]["hyperparameters"]["max_seconds"] == 2.5
    assert 1 <= job["progress"]["step"] <= 2 < job["progress"]["total_steps"] == 8
    assert job["progress"]["step_seconds"] > 1
    assert "tiny-chat-benchgen-train-budget" in _served(server)


def test_a_time_budget_that_ends_training_also_skips_the_validation_it_would_have_overrun(
    server: ModelServer, jobs: OpenAICompatibleJobs
) -> None:
    # given 8 steps of prompts whose steps last over a second each, 2.5 seconds of training, and validation
    # prompts whose evaluation would answer and grade each of them again
    prompts = jobs.upload("rft.jsonl", PROMPTS * 4) or ""
    validation = jobs.upload("rft-validation.jsonl", PROMPTS * 4) or ""
    spec = _spec("budget-validation", prompts, grader=SLOW_GRADER, max_seconds="2.5").model_copy(
        update={"validation_uri": validation}
    )

    # when the job runs
    states = until_ended(jobs, spec, jobs.start(spec))
    job = get_json(f"{server.base_url}/fine-tunes/{states[-1].job_id}")

    # then it ends when the budget ends training, without evaluating, and says so
    assert states[-1].status is TrainingStatus.SUCCEEDED, states[-1].failure_reason
    assert job["progress"]["step"] < job["progress"]["total_steps"]
    assert "eval_loss" not in job["progress"]
    assert job["progress"]["validation"] == (
        "not evaluated: max_seconds ended training before the end of its epoch, and evaluating the "
        "validation prompts would answer and grade each of them again past it"
    )


@pytest.mark.parametrize(
    ("hyperparameters", "refusal"),
    [
        (
            {"num_generations": 1},
            "num_generations must be a whole number from 2 up to 64, not 1",
        ),
        ({"temperature": 0}, "temperature must be a number above 0 up to 2, not 0"),
        (
            {"warmup_ratio": 0.1},
            "method.reinforcement.hyperparameters has warmup_ratio, which this server does not take: it "
            "takes n_epochs, learning_rate, batch_size, num_generations, max_completion_length, "
            "temperature, beta, max_steps, max_seconds",
        ),
        ({"max_steps": 0}, "max_steps must be a whole number from 1 up to 1000000, not 0"),
        ({"max_steps": 2.5}, "max_steps must be a whole number from 1 up to 1000000, not 2.5"),
        ({"max_seconds": 0.5}, "max_seconds must be a number from 1 up to 604800, not 0.5"),
    ],
)
def test_reinforcement_numbers_outside_their_bounds_are_refused_before_a_job_is_made(
    tiny_model: Path, tmp_path: Path, hyperparameters: dict[str, Any], refusal: str
) -> None:
    jobs = FineTuneJobs(tmp_path, Catalog("tiny-chat", tiny_model, tmp_path / "models"))
    _, file = jobs.upload("rft.jsonl", "fine-tune", PROMPTS)
    grader = {"type": "python", "name": "g", "source": GRADER}
    method = {
        "type": "reinforcement",
        "reinforcement": {"grader": grader, "hyperparameters": hyperparameters},
    }

    with pytest.raises(BadRequest) as refused:
        jobs.create({"model": "tiny-chat", "training_file": file["id"], "method": method})

    assert str(refused.value) == refusal
    assert jobs.listing()[1]["data"] == []


def test_a_time_budget_out_of_bounds_is_a_400_that_says_what_to_fix(
    server: ModelServer, jobs: OpenAICompatibleJobs
) -> None:
    # given a reinforcement job asking for no seconds of training, sent as any OpenAI client sends it
    method = {
        "type": "reinforcement",
        "reinforcement": {
            "grader": {"type": "python", "name": "g", "source": GRADER},
            "hyperparameters": {"max_seconds": 0},
        },
    }
    body = {"model": "tiny-chat", "training_file": jobs.upload("rft.jsonl", PROMPTS), "method": method}
    request = urllib.request.Request(
        server.base_url + "/fine-tunes",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )

    made = len(get_json(server.base_url + "/fine-tunes")["data"])

    # when it is posted
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=60)

    # then it is a 400 naming the field and its bounds, and no job is made
    assert refused.value.code == 400
    assert json.loads(refused.value.read())["error"]["message"] == (
        "max_seconds must be a number from 1 up to 604800, not 0"
    )
    assert len(get_json(server.base_url + "/fine-tunes")["data"]) == made


def test_the_real_loops_grpo_settings_bound_each_leg_to_30_minutes_of_training(
    tiny_model: Path, tmp_path: Path
) -> None:
    # given the GRPO settings `benchgen demo --loop --real --method reinforcement` sends
    jobs = FineTuneJobs(tmp_path, Catalog("tiny-chat", tiny_model, tmp_path / "models"))
    _, file = jobs.upload("rft.jsonl", "fine-tune", PROMPTS)
    method = {
        "type": "reinforcement",
        "reinforcement": {
            "grader": {"type": "python", "name": "g", "source": GRADER},
            "hyperparameters": typed(
                HYPERPARAMETERS, OpenAICompatible().check_hyperparameters("tiny-chat", GRPO_HYPERPARAMETERS)
            ),
        },
    }

    # when the server takes them
    _, job = jobs.create({"model": "tiny-chat", "training_file": file["id"], "method": method})

    # then the job's training ends within 30 minutes
    assert 0 < job["method"]["reinforcement"]["hyperparameters"]["max_seconds"] <= 1800


MATH_PROMPTS = jsonl(
    [
        {
            "messages": [
                {"role": "user", "content": f"What is 2 + {n}? Give the final answer after '####'."}
            ],
            "grading": {"template": "math", "answer": str(2 + n), "criteria": ["final-answer"]},
        }
        for n in range(4)
    ]
)


def test_the_environments_own_grader_rewards_answers_as_the_trainer_loads_it() -> None:
    rewards = reward({"name": "benchgen-environment-scoring", "source": grader_source()})
    item = json.dumps({"grading": {"template": "math", "answer": "5", "criteria": ["final-answer"]}})
    answers = [[{"role": "assistant", "content": text}] for text in ("2 + 3 = 5\n#### 5", "#### 6")]

    assert rewards(completions=answers, item=[item, item]) == [1.0, 0.0]


def test_a_reinforcement_job_trains_with_the_environments_own_grader(
    server: ModelServer, jobs: OpenAICompatibleJobs
) -> None:
    spec = _spec("env-grader", jobs.upload("rft.jsonl", MATH_PROMPTS) or "", grader=grader_source())

    states = until_ended(jobs, spec, jobs.start(spec))
    progress = get_json(f"{server.base_url}/fine-tunes/{states[-1].job_id}")["progress"]

    assert states[-1].status is TrainingStatus.SUCCEEDED, states[-1].failure_reason
    assert progress["step"] == progress["total_steps"] == 2
    assert all(0.0 <= reward <= 1.0 for reward in progress["reward_curve"])
