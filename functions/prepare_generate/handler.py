"""State machine task: generate a preparation's examples and held-out cases from its judged runs."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.wiring import Adapters
from benchgen.steps.prepare import GenerateInput, generate_preparation

function = LambdaFunction("prepare_generate", counts=True)


@function.task(GenerateInput, correlation="preparation_id")
def handler(task: GenerateInput, wired: Adapters) -> dict[str, Any]:
    with scratch() as workdir:
        generation = generate_preparation(task, store=wired.store, workdir=workdir)
    refused = generation.report is None
    if refused:
        function.logger.info("preparation refused", extra={"reason": generation.refused})
    function.count("PreparationRefused" if refused else "PreparationGenerated")
    # Without the empty fields: the state machine branches on whether `refused` is there.
    return generation.model_dump(mode="json", exclude_none=True)
