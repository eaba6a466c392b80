"""The JudgingPipeline state machine: Plan, a Distributed Map of JudgeShard over Plan's items in S3,
Assemble, then the score function scoring the run; any failure recorded on the run by Plan's function."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

Definition = dict[str, Any]
Resource = dict[str, Any]


@pytest.fixture(scope="module")
def judging(resources: dict[str, Resource], render: Callable[[Any], str]) -> Definition:
    parsed: Definition = json.loads(render(resources["JudgingPipeline"]["Properties"]["DefinitionString"]))
    return parsed


def test_the_run_is_planned_judged_in_shards_assembled_then_scored(judging: Definition) -> None:
    states = judging["States"]
    assert judging["StartAt"] == "Plan"
    assert [states[name]["Next"] for name in ("Plan", "JudgeShards", "Assemble", "Score")] == [
        "JudgeShards",
        "Assemble",
        "Score",
        "Judged",
    ]
    assert states["Plan"]["Resource"] == "${PlanJudgingFunction.Arn}"
    assert states["Assemble"]["Resource"] == "${AssembleJudgmentsFunction.Arn}"
    assert states["Assemble"]["Parameters"] == {"run_id.$": "$.run_id", "shard_count.$": "$.plan.shard_count"}
    # the score function, handed the run alone: it finds the judgments where Assemble wrote them
    assert states["Score"]["Resource"] == "${ScoreFunction.Arn}"
    assert states["Score"]["Parameters"] == {"run_id.$": "$.run_id"}


def test_shards_are_a_bounded_distributed_map_reading_plan_s_items_from_s3(judging: Definition) -> None:
    shards = judging["States"]["JudgeShards"]
    assert shards["ItemProcessor"]["ProcessorConfig"] == {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"}
    assert shards["ItemReader"]["Parameters"] == {"Bucket": "${DataBucket}", "Key.$": "$.plan.items_key"}
    assert shards["MaxConcurrencyPath"] == "$.plan.shards_at_once"
    assert shards["ToleratedFailureCount"] == 0
    shard = shards["ItemProcessor"]["States"]["JudgeShard"]
    assert shard["Resource"] == "${JudgeShardFunction.Arn}"
    assert shard["Parameters"] == {
        "run_id.$": "$.run_id",
        "shard.$": "$.shard",
        "in_flight.$": "$.in_flight",
        "shards_at_once.$": "$.shards_at_once",
    }


def test_any_step_s_failure_is_recorded_on_the_run_by_plan_s_function(judging: Definition) -> None:
    states = judging["States"]
    for name in ("Plan", "JudgeShards", "Assemble", "Score"):
        assert [catch["Next"] for catch in states[name]["Catch"]] == ["ReadServiceError", "ReadFunctionError"]
    mark = states["MarkRunFailed"]
    assert mark["Resource"] == "${PlanJudgingFunction.Arn}"
    assert mark["Parameters"] == {"failed": {"id.$": "$.run_id", "reason.$": "$.failure.errorMessage"}}
