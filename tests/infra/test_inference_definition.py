"""The InferencePipeline state machine: its states, the Map's concurrency cap, and failure handling."""

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


def test_the_map_runs_infer_shard_over_the_plans_shards_with_a_concurrency_cap(
    inference_definition: Definition,
) -> None:
    shards = inference_definition["States"]["InferShards"]
    assert shards["Type"] == "Map"
    assert shards["ItemsPath"] == "$.plan.shards"
    assert shards["MaxConcurrency"] == 4
    processor = shards["ItemProcessor"]
    assert processor["ProcessorConfig"]["Mode"] == "INLINE"
    assert processor["States"]["InferShard"]["Parameters"] == {
        "run_id.$": "$.run_id",
        "shard.$": "$.shard",
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
