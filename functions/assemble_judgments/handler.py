"""State machine task: write a run's judgments from its shards' and record the judge's calls on the run;
or, for a pass its judge answered through batch inference, write its shards' first judgments from the
jobs' output."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.wiring import Adapters
from benchgen.step_inputs import AssembleJudgmentsInput
from benchgen.steps.judging import assemble
from benchgen.steps.judging_batch import read_batch

function = LambdaFunction("assemble_judgments")


@function.task(AssembleJudgmentsInput, correlation="run_id")
def handler(task: AssembleJudgmentsInput, wired: Adapters) -> dict[str, Any]:
    step = read_batch if task.from_batch else assemble
    with scratch() as workdir:
        return step(task.run_id, task.shard_count, runs=wired.runs, store=wired.store, workdir=workdir)
