"""State machine task: a version's judge calibration's figures, from its shards' judgments, recorded on the
version; or the CalibrationPipeline's caught failure recorded as the calibration's."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.wiring import Adapters
from benchgen.step_inputs import CalibrationCountInput, Failure
from benchgen.steps.calibration import assemble, record_calibration_failure

function = LambdaFunction("assemble_calibration")


@function.task(CalibrationCountInput, correlation="calibration")
def handler(task: CalibrationCountInput, wired: Adapters) -> dict[str, Any]:
    with scratch() as workdir:
        return assemble(
            task.calibration,
            task.shard_count,
            environments=wired.environments,
            store=wired.store,
            workdir=workdir,
        )


@function.failure(correlation="calibration")
def record_failure(failure: Failure, wired: Adapters) -> None:
    record_calibration_failure(failure.id, failure.reason, environments=wired.environments)
