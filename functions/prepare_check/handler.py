"""State machine task: write a preparation's coverage, check that no held-out case reached training, and
record the preparation Ready; or record the pipeline's failure on it."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.wiring import Adapters
from benchgen.step_inputs import Failure
from benchgen.steps.prepare import CheckInput, check_preparation, record_preparation_failure

function = LambdaFunction("prepare_check")


@function.task(CheckInput, correlation="preparation_id")
def handler(task: CheckInput, wired: Adapters) -> dict[str, Any]:
    with scratch() as workdir:
        checked = check_preparation(task, store=wired.store, preparations=wired.preparations, workdir=workdir)
    answer = checked.model_dump(mode="json")
    function.logger.info("preparation checked", extra=answer)
    return answer


@function.failure(correlation="preparation_id")
def record_failure(failure: Failure, wired: Adapters) -> None:
    record_preparation_failure(failure.id, failure.reason, preparations=wired.preparations)
