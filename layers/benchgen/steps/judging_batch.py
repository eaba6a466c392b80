"""The batch branch of a judging pass: a big run's judge prompts go to the judge provider's batch
inference, as a big live run's cases do (:mod:`benchgen.steps.batch_inference`, whose submit and poll
serve both).

Plan chose the branch (:func:`benchgen.steps.inference.inference_mode`, the judge's ``inference_mode`` and
``batch_above_cases`` as a live run's). SubmitBatch makes each judged case's first prompt a record, named
by the case's place among the cases asked about (a case without an answer, or one cut off inside its
reasoning block, is not asked, as on demand; an answer after a reasoning block is asked about alone),
-> Wait -> PollBatch until the jobs have ended -> ReadBatch (:func:`read_batch`): each shard's first
judgments from the jobs' output, a record the provider failed an unjudged case with its reason. The
JudgeShards Map then asks again, on demand and paced as ever, only about the answers that could not be
read (``judge_one``'s one retry), and Assemble writes the run's judgments as on demand.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from benchgen.bucket_layout import (
    judging_batch_input_key,
    judging_batch_output_prefix,
    judging_key,
    judging_shard_key,
)
from benchgen.judging import JUDGE_NAME, JudgeAttempt, JudgeRecord
from benchgen.judging import write_judgments as write_records
from benchgen.ports.runs import RunsStore
from benchgen.ports.storage import ObjectStorage, SharedStorage
from benchgen.scoring import registry
from benchgen.steps.batch_inference import BatchAnswers, BatchWork, waiting_jobs
from benchgen.steps.judging import Judge, JudgingError, asked_about, running_run

JUDGING_AGAIN = (
    "set inference_mode: on_demand in the judge: section (its cases are then asked one by one), register "
    "the environment again and upload the submission again"
)


def judging_work(
    runs: RunsStore, store: ObjectStorage, run_id: str, workdir: Path
) -> tuple[BatchWork, Judge]:
    """The Running run's judging pass as batch work, and its judge as Plan found it."""
    run = running_run(runs, run_id)
    judge = Judge.model_validate_json(
        store.download(judging_key(run_id, JUDGE_NAME), workdir / JUDGE_NAME).read_bytes()
    )
    work = BatchWork(
        run_id=run_id,
        model=judge.model,
        summary=run.judging_batch,
        record=functools.partial(runs.record_judging_batch, run_id),
        name_seed=f"{run_id}/judging",
        input_key=functools.partial(judging_batch_input_key, run_id),
        output_prefix=functools.partial(judging_batch_output_prefix, run_id),
        again=JUDGING_AGAIN,
        failure=JudgingError,
    )
    return work, judge


def judge_prompts(store: ObjectStorage, judge: Judge, run_id: str, shard_count: int) -> Iterator[str]:
    """The judge's first prompt about each answer of the run, in case order (a case without an answer has
    none), from the shards Plan wrote."""
    definition = registry.template(judge.template)
    if definition.asks is None:
        raise JudgingError(f"template {judge.template} no longer asks a judge: run {run_id} is not judged")
    for shard in range(shard_count):
        for line in store.lines(judging_shard_key(run_id, "cases", shard)):
            if line.strip():
                pair = json.loads(line)
                answer, _ = asked_about(pair["answer"])
                if answer is not None:
                    case = msgspec.convert(pair["case"], definition.case_type)
                    yield definition.asks.prompt(case, answer, judge.settings)


def read_batch(
    run_id: str, shard_count: int, *, runs: RunsStore, store: SharedStorage, workdir: Path
) -> dict[str, Any]:
    """Write each shard's first judgments from the judging pass's batch output: a readable or unreadable
    answer as the judge's first attempt, a record the provider failed (or never returned) an unjudged case
    with its reason."""
    work, judge = judging_work(runs, store, run_id, workdir)
    definition = registry.template(judge.template)
    asks = definition.asks
    assert asks is not None  # judge_prompts checked it when the jobs were submitted
    waiting = waiting_jobs(work, store)
    if waiting:
        raise JudgingError(f"the judging batch jobs {', '.join(waiting)} have left no output to read")
    answers = BatchAnswers(work, store)
    index = judged = failed = 0

    def records(shard: int) -> Iterator[JudgeRecord]:
        nonlocal index, judged, failed
        for line in store.lines(judging_shard_key(run_id, "cases", shard)):
            if not line.strip():
                continue
            pair = json.loads(line)
            case = msgspec.convert(pair["case"], definition.case_type)
            asked, not_asked = asked_about(pair["answer"])
            if asked is None:
                yield JudgeRecord(id=case.id, error=not_asked)
                continue
            _, answer, error = answers.answer(index)
            index += 1
            if answer is None:
                failed += 1
                yield JudgeRecord(id=case.id, error=error or "the judge's batch job gave no answer")
                continue
            judged += 1
            yield JudgeRecord(
                id=case.id,
                attempts=[
                    JudgeAttempt(
                        text=answer.text,
                        problem=asks.problem(case, answer.text),
                        input_tokens=answer.input_tokens,
                        output_tokens=answer.output_tokens,
                    )
                ],
            )

    for shard in range(shard_count):
        path = workdir / f"batch-{shard:05d}.jsonl"
        write_records(path, records(shard))
        store.upload(path, judging_shard_key(run_id, "batch", shard), content_type="application/jsonl")
    return {"run_id": run_id, "answered": judged, "failed": failed}
