"""State machine task: write a preparation's coverage and check that no held-out case reached training."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.wiring import Adapters
from benchgen.steps.prepare import CheckTask, check_preparation

function = LambdaFunction("prepare_check")


@function.task(CheckTask, correlation="preparation_id")
def handler(task: CheckTask, wired: Adapters) -> dict[str, Any]:
    with scratch() as workdir:
        answer = check_preparation(task, store=wired.store, workdir=workdir)
    function.logger.info("preparation checked", extra=answer)
    return answer
