"""The InferencePipeline state machine: its states, its Distributed Map over S3, and failure handling."""

from __future__ import annotations

from typing import Any

Definition = dict[str, Any]


def test_a_live_run_goes_deploy_plan_map_assemble(inference_definition: Definition) -> None:
    states = inference_definition["States"]
    assert inference_definition["StartAt"] == "Deploy"
    assert states["Deploy"]["Next"] == "Plan"
    assert states["Plan"]["Next"] == "InferShards"
    assert states["InferShards"]["Next"] == "Assemble"
    assert states["Assemble"]["Next"] == "Generated"


def test_the_map_is_distributed_over_the_items_plan_wrote_to_s3_at_plans_concurrency(
    inference_definition: Definition,
) -> None:
    shards = inference_definition["States"]["InferShards"]
    assert shards["Type"] == "Map"
    # Items come from S3, never from the state: no run-time list grows the state's payload or the history
    assert "ItemsPath" not in shards
    assert shards["ItemReader"]["Resource"] == "arn:${AWS::Partition}:states:::s3:getObject"
    assert shards["ItemReader"]["ReaderConfig"] == {"InputType": "JSON"}
    assert shards["ItemReader"]["Parameters"]["Key.$"] == "$.plan.items_key"
    # as many shards at once as Plan's split of the run's max_in_flight says, and no failed shard tolerated
    assert shards["MaxConcurrencyPath"] == "$.plan.shards_at_once"
    assert "MaxConcurrency" not in shards
    assert shards["ToleratedFailureCount"] == 0
    assert shards["ResultPath"] is None
    processor = shards["ItemProcessor"]
    assert processor["ProcessorConfig"] == {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"}
    assert processor["States"]["InferShard"]["Parameters"] == {
        "run_id.$": "$.run_id",
        "shard.$": "$.shard",
        "in_flight.$": "$.in_flight",
        "shards_at_once.$": "$.shards_at_once",
    }
    assert inference_definition["States"]["Assemble"]["Parameters"] == {
        "run_id.$": "$.run_id",
        "shard_count.$": "$.plan.shard_count",
    }


def test_every_step_failure_marks_the_run_failed_with_its_message(inference_definition: Definition) -> None:
    states = inference_definition["States"]
    for name in ("Deploy", "Plan", "InferShards", "Assemble"):
        targets = {error: c["Next"] for c in states[name]["Catch"] for error in c["ErrorEquals"]}
        assert targets == {"States.Timeout": "ReadServiceError", "States.ALL": "ReadFunctionError"}, name
    # Deploy's function fails the run, only while it is Pending, Deploying or Running
    # (benchgen.steps.inference.record_live_run_failure)
    mark = states["MarkRunFailed"]
    assert mark["Resource"] == "${DeployModelFunction.Arn}"
    assert mark["Parameters"] == {"failed": {"id.$": "$.run_id", "reason.$": "$.failure.errorMessage"}}
    assert states[mark["Next"]]["Type"] == "Fail"


def test_executions_do_not_log_model_answers(resources: dict[str, Any]) -> None:
    logging = resources["InferencePipeline"]["Properties"]["LoggingConfiguration"]
    assert logging["IncludeExecutionData"] is False
