"""The JudgingPipeline state machine: Plan, a Distributed Map of JudgeShard over Plan's items in S3,
Assemble, then the score function scoring the run; a big run's judge asked first through its provider's
batch inference; any failure recorded on the run by Plan's function."""

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
    assert states["Plan"]["Next"] == "Batch?"
    assert states["Batch?"]["Default"] == "JudgeShards"
    assert [states[name]["Next"] for name in ("JudgeShards", "Assemble", "Score")] == [
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
    for name in ("Plan", "JudgeShards", "Assemble", "Score", "SubmitBatch", "PollBatch", "ReadBatch"):
        assert [catch["Next"] for catch in states[name]["Catch"]] == ["ReadServiceError", "ReadFunctionError"]
    mark = states["MarkRunFailed"]
    assert mark["Resource"] == "${PlanJudgingFunction.Arn}"
    assert mark["Parameters"] == {"failed": {"id.$": "$.run_id", "reason.$": "$.failure.errorMessage"}}


def test_plan_sends_a_batch_pass_to_the_live_runs_submit_and_poll_then_reads_it_before_the_map(
    judging: Definition,
) -> None:
    states = judging["States"]
    (batch,) = states["Batch?"]["Choices"]
    assert (batch["Variable"], batch["StringEquals"], batch["Next"]) == (
        "$.plan.mode",
        "batch",
        "SubmitBatch",
    )
    # the live runs' functions, told the records are the judging pass's: the prompts of the asked cases
    assert states["SubmitBatch"]["Resource"] == "${SubmitBatchFunction.Arn}"
    assert states["SubmitBatch"]["Parameters"] == {
        "run_id.$": "$.run_id",
        "shard_count.$": "$.plan.shard_count",
        "cases.$": "$.plan.asked",
        "judging": True,
    }
    assert states["SubmitBatch"]["Next"] == "WaitForBatch"
    assert states["WaitForBatch"]["TimestampPath"] == "$.batch.next_poll_at"
    assert states["PollBatch"]["Resource"] == "${PollBatchFunction.Arn}"
    assert states["PollBatch"]["Parameters"] == {
        "run_id.$": "$.run_id",
        "judging": True,
        "polls.$": "$.batch.polls",
    }
    (ended,) = states["BatchEnded?"]["Choices"]
    assert (ended["Variable"], ended["BooleanEquals"], ended["Next"]) == ("$.batch.done", True, "ReadBatch")
    assert states["BatchEnded?"]["Default"] == "WaitForBatch"
    # the jobs' output read into each shard's first judgments, then the same Map asks again what it must
    assert states["ReadBatch"]["Resource"] == "${AssembleJudgmentsFunction.Arn}"
    assert states["ReadBatch"]["Parameters"] == {
        "run_id.$": "$.run_id",
        "shard_count.$": "$.plan.shard_count",
        "from_batch": True,
    }
    assert states["ReadBatch"]["Next"] == "JudgeShards"
