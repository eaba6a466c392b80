"""Fine-tuning jobs on the tiny model, driven through BenchGen's own openai-compatible client (the
adapter the training pipeline uses, unchanged): from upload to a served checkpoint that answers, a job
that fails on a bad row, a cancel that stops training, and the refusal of preference training."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from benchgen.aws.providers.openai_compatible import ChatCompletions, OpenAICompatibleJobs
from benchgen.providers.jobs import JobSpec, ProviderFault
from benchgen.records.training_runs import TrainingStatus
from benchgen.vocabulary import Method, Sampling
from modelserver.catalog import Catalog
from modelserver.jobs import FineTuneJobs
from modelserver.server import ModelServer
from tests.modelserver.job_polling import POLLS, get_json, jsonl, until_ended, until_stepped

QUESTION = "What is 2 + 3?"
TARGET = "Final answer: 5"


def _row(prompt: str, answer: str) -> dict[str, Any]:
    """An openai-chat / together-sft package row (``{"messages": [user, assistant]}``)."""
    return {"messages": [{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}]}


TRAIN = jsonl([_row(QUESTION, TARGET)] * 16)


def _spec(name: str, file_id: str, **hyperparameters: str) -> JobSpec:
    return JobSpec(
        training_run_id=f"train-{name}",
        job_name=f"benchgen-train-{name}",
        method=Method.DEMONSTRATION,
        base_model="tiny-chat",
        hyperparameters={"n_epochs": "4", "learning_rate": "0.01", "batch_size": "4"} | hyperparameters,
        train_uri=file_id,
        output_uri="s3://unused/training/out/",
    )


def test_a_job_trains_and_its_checkpoint_is_served_and_answers(
    server: ModelServer, jobs: OpenAICompatibleJobs
) -> None:
    base = ChatCompletions(server.base_url, "tiny-chat", Sampling(temperature=0, max_tokens=8))
    before = base.complete(QUESTION).text
    spec = _spec("ok", jobs.upload("train.jsonl", TRAIN) or "", warmup_ratio="0.1")

    states = until_ended(jobs, spec, jobs.start(spec))
    tuned = ChatCompletions(
        server.base_url, states[-1].result_model or "", Sampling(temperature=0, max_tokens=8)
    )
    answer = tuned.complete(QUESTION).text
    job = get_json(f"{server.base_url}/fine-tunes/{states[-1].job_id}")
    engine = get_json(server.base_url + "/stats")["engine"]

    assert states[-1].status is TrainingStatus.SUCCEEDED
    assert states[-1].result_model == "tiny-chat-benchgen-train-ok"
    assert "tiny-chat-benchgen-train-ok" in [m["id"] for m in get_json(server.base_url + "/models")["data"]]
    assert [e["status"] for e in job["events"]] == ["pending", "queued", "running", "completed"]
    assert job["progress"]["step"] == job["progress"]["total_steps"] == 16
    assert answer.startswith("Final answer:")
    assert not before.startswith("Final answer:")
    assert engine["name"] == "ctranslate2"
    assert "tiny-chat-benchgen-train-ok" in [c["model"] for c in engine["conversions"]], (
        "converted on first use"
    )


def test_a_job_with_a_validation_file_reports_the_validation_loss_beside_the_last_step(
    server: ModelServer, jobs: OpenAICompatibleJobs
) -> None:
    validation = jobs.upload("validation.jsonl", jsonl([_row("What is 3 + 4?", "Final answer: 7")] * 4))
    spec = _spec("validated", jobs.upload("train.jsonl", TRAIN) or "", n_epochs="1")
    spec = spec.model_copy(update={"validation_uri": validation})

    states = until_ended(jobs, spec, jobs.start(spec))
    job = get_json(f"{server.base_url}/fine-tunes/{states[-1].job_id}")

    assert states[-1].status is TrainingStatus.SUCCEEDED
    assert job["validation_file"] == validation
    assert job["progress"]["step"] == job["progress"]["total_steps"] == 4
    assert isinstance(job["progress"]["eval_loss"], float)
    assert job["progress"]["eval_loss"] > 0


def test_a_second_start_finds_the_job_of_the_same_name(
    server: ModelServer, jobs: OpenAICompatibleJobs
) -> None:
    spec = _spec("twice", jobs.upload("train.jsonl", TRAIN) or "", n_epochs="1")

    first = jobs.start(spec)
    second = jobs.start(spec)
    jobs.stop(spec, first.job_id)

    assert second.job_id == first.job_id
    assert (
        len([j for j in get_json(server.base_url + "/fine-tunes")["data"] if j["suffix"] == spec.job_name])
        == 1
    )


def test_a_bad_row_fails_the_job_naming_its_line(jobs: OpenAICompatibleJobs) -> None:
    rows = TRAIN + b'{"messages": [{"role": "user", "content": "no answer"}]}\n'
    spec = _spec("bad-row", jobs.upload("broken.jsonl", rows) or "")

    states = until_ended(jobs, spec, jobs.start(spec))

    assert states[-1].status is TrainingStatus.FAILED
    assert states[-1].failure_reason == (
        "line 17 of broken.jsonl ends with a user turn: end each row with the assistant's"
    )


def test_cancel_stops_training_and_serves_no_model(server: ModelServer, jobs: OpenAICompatibleJobs) -> None:
    spec = _spec("cancelled", jobs.upload("long.jsonl", TRAIN * 8) or "", n_epochs="50", batch_size="1")
    started = jobs.start(spec)
    url = f"{server.base_url}/fine-tunes/{started.job_id}"
    until_stepped(url)

    stopped = jobs.stop(spec, started.job_id)
    later = jobs.describe(spec, started.job_id)
    job = get_json(url)

    # The job is cancelled only once its training process has exited.
    assert stopped.status is TrainingStatus.CANCELLED
    assert 1 <= job["progress"]["step"] < job["progress"]["total_steps"]
    assert [e["status"] for e in job["events"]][-2:] == ["cancel_requested", "cancelled"]
    assert later.status is TrainingStatus.CANCELLED
    assert later.result_model is None
    assert "tiny-chat-benchgen-train-cancelled" not in [
        m["id"] for m in get_json(server.base_url + "/models")["data"]
    ]
    assert not (server.work / "models" / "tiny-chat-benchgen-train-cancelled").exists()
    assert not (server.work / "models" / ".tiny-chat-benchgen-train-cancelled.partial").exists()


def test_preference_training_is_refused_as_not_supported(jobs: OpenAICompatibleJobs) -> None:
    spec = _spec("dpo", jobs.upload("train.jsonl", TRAIN) or "").model_copy(
        update={"method": Method.PREFERENCE}
    )

    with pytest.raises(ProviderFault, match=r"preference \(dpo\) training is not supported by this server"):
        jobs.start(spec)


def test_a_job_for_a_model_the_server_does_not_serve_is_refused(jobs: OpenAICompatibleJobs) -> None:
    spec = _spec("elsewhere", jobs.upload("train.jsonl", TRAIN) or "").model_copy(
        update={"base_model": "gpt-4o"}
    )

    with pytest.raises(ProviderFault, match="no model 'gpt-4o' to fine-tune: this server serves tiny-chat"):
        jobs.start(spec)


def test_a_trainer_killed_for_want_of_memory_ends_its_job_with_what_to_do(
    tiny_model: Path, tmp_path: Path
) -> None:
    # Linux's out-of-memory killer ends a process with SIGKILL; this trainer does that to itself.
    killed = tmp_path / "killed-trainer"
    killed.write_text("#!/bin/sh\nkill -9 $$\n")
    killed.chmod(0o755)
    jobs = FineTuneJobs(tmp_path, Catalog("tiny-chat", tiny_model, tmp_path / "models"), python=str(killed))
    jobs.start()
    try:
        _, file = jobs.upload("train.jsonl", "fine-tune", TRAIN)
        _, job = jobs.create({"model": "tiny-chat", "training_file": file["id"], "suffix": "oom"})
        for _ in range(POLLS):
            _, job = jobs.read(job["id"])
            if job["status"] in ("completed", "error", "cancelled"):
                break
            time.sleep(0.5)
    finally:
        jobs.stop()

    assert job["status"] == "error"
    assert job["error"]["message"] == (
        "the training process was killed by SIGKILL, most likely by the system for want of memory: "
        "lower batch_size"
    )
    assert not (tmp_path / "models" / "tiny-chat-oom").exists()
