"""State machine task: are both of an evaluation's runs finished?"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from benchgen.aws.handlers import LambdaFunction
from benchgen.aws.wiring import Adapters
from benchgen.lazy_model import LazyModel
from benchgen.steps.evaluation import check

function = LambdaFunction("check_evaluation")


class CheckInput(LazyModel):
    evaluation_id: str
    polls: int = Field(ge=0)
    max_checks: int = Field(ge=1)


@function.task(CheckInput, correlation="evaluation_id")
def handler(task: CheckInput, wired: Adapters) -> dict[str, Any]:
    return check(
        task.evaluation_id, task.polls, task.max_checks, evaluations=wired.evaluations, runs=wired.runs
    )
