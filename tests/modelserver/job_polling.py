"""Following a fine-tuning job on a model server through BenchGen's own openai-compatible client."""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

from benchgen.aws.providers.openai_compatible import OpenAICompatibleJobs
from benchgen.providers.jobs import JobSpec, JobState
from benchgen.records.training_runs import TrainingStatus

ENDED = (TrainingStatus.SUCCEEDED, TrainingStatus.FAILED, TrainingStatus.CANCELLED)
POLLS = 600  # at most five minutes of half-second polls: a bound, not an expectation


def jsonl(rows: list[Any]) -> bytes:
    return b"".join((json.dumps(row) + "\n").encode() for row in rows)


def until_ended(jobs: OpenAICompatibleJobs, spec: JobSpec, state: JobState) -> list[JobState]:
    """Every state the job is seen in, read each half second until it ends."""
    seen = [state]
    for _ in range(POLLS):
        if seen[-1].status in ENDED:
            return seen
        time.sleep(0.5)
        seen.append(jobs.describe(spec, state.job_id))
    raise AssertionError(f"the job did not end: last seen {seen[-1]}")


def get_json(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=60) as response:
        answer: dict[str, Any] = json.loads(response.read())
        return answer


def until_stepped(url: str) -> None:
    """Until the job at ``url`` has logged a step: training is under way."""
    for _ in range(POLLS):
        if get_json(url).get("progress", {}).get("step", 0) >= 1:
            return
        time.sleep(0.5)
