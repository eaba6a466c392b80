"""The InferencePipeline state machine: its states, its Distributed Map over S3, and failure handling."""

from __future__ import annotations

import json
from typing import Any

from benchgen.providers import bedrock_batch
from benchgen.settings import Settings
from infra.references import render as render_value

Definition = dict[str, Any]


def test_a_live_run_goes_deploy_plan_map_assemble(inference_definition: Definition) -> None:
    states = inference_definition["States"]
    assert inference_definition["StartAt"] == "Deploy"
    assert states["Deploy"]["Next"] == "Plan"
    assert states["Plan"]["Next"] == "Batch?"
    assert states["Batch?"]["Default"] == "InferShards"
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


def test_plan_sends_a_batch_run_to_submit_then_a_wait_and_poll_loop(inference_definition: Definition) -> None:
    states = inference_definition["States"]
    assert states["Plan"]["Next"] == "Batch?"
    (batch,) = states["Batch?"]["Choices"]
    assert (batch["Variable"], batch["StringEquals"], batch["Next"]) == (
        "$.plan.mode",
        "batch",
        "SubmitBatch",
    )
    assert states["Batch?"]["Default"] == "InferShards"
    assert states["SubmitBatch"]["Parameters"] == {
        "run_id.$": "$.run_id",
        "shard_count.$": "$.plan.shard_count",
        "cases.$": "$.plan.cases",
    }
    assert states["SubmitBatch"]["Next"] == "WaitForBatch"
    # the wait ends at the moment the steps recorded on the run as the next look, the loop bounded by the
    # poll step (it fails the run at last)
    assert states["WaitForBatch"] == {
        "Type": "Wait",
        "TimestampPath": "$.batch.next_poll_at",
        "Next": "PollBatch",
    }
    assert states["PollBatch"]["Parameters"] == {"run_id.$": "$.run_id", "polls.$": "$.batch.polls"}
    (ended,) = states["BatchEnded?"]["Choices"]
    assert (ended["Variable"], ended["BooleanEquals"], ended["Next"]) == ("$.batch.done", True, "BatchEnded")
    assert states["BatchEnded?"]["Default"] == "WaitForBatch"
    assert states["BatchEnded"]["Type"] == "Succeed"
    for name in ("SubmitBatch", "PollBatch"):
        targets = {error: c["Next"] for c in states[name]["Catch"] for error in c["ErrorEquals"]}
        assert targets == {"States.Timeout": "ReadServiceError", "States.ALL": "ReadFunctionError"}, name


def test_bedrock_assumes_its_batch_role_for_this_accounts_jobs_only_and_reads_and_writes_only_batch_keys(
    resources: dict[str, Any],
) -> None:
    role = resources["BedrockBatchRole"]["Properties"]
    (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "bedrock.amazonaws.com"}
    assert trust["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    assert "model-invocation-job/*" in json.dumps(trust["Condition"]["ArnLike"])
    assert role.get("ManagedPolicyArns") is None
    (policy,) = [
        p["Properties"]
        for p in resources.values()
        if p["Type"] == "AWS::IAM::Policy" and {"Ref": "BedrockBatchRole"} in p["Properties"]["Roles"]
    ]
    statements = {
        statement["Action"]: render_value(statement["Resource"])
        if isinstance(statement["Resource"], dict)
        else [render_value(resource) for resource in statement["Resource"]]
        for statement in policy["PolicyDocument"]["Statement"]
    }
    # a live run's batch records and output, and a judging pass's
    assert statements == {
        "s3:GetObject": [
            "${DataBucket.Arn}/runs/*/batch/*",
            "${DataBucket.Arn}/runs/*/judging/batch/*/records.jsonl",
        ],
        "s3:PutObject": [
            "${DataBucket.Arn}/batch-output/*",
            "${DataBucket.Arn}/runs/*/judging/batch-output/*/*",
        ],
        "s3:ListBucket": "${DataBucket.Arn}",
    }
    (listing,) = [s for s in policy["PolicyDocument"]["Statement"] if s["Action"] == "s3:ListBucket"]
    assert listing["Condition"] == {
        "StringLike": {
            "s3:prefix": [
                "runs/*/batch/*",
                "runs/*/judging/batch/*/records.jsonl",
                "batch-output/*",
                "runs/*/judging/batch-output/*/*",
            ]
        }
    }


def test_the_execution_outlasts_the_batch_polls_which_outlast_bedrocks_job_timeout(
    inference_definition: Definition,
) -> None:
    defaults = Settings.model_fields
    polling = defaults["batch_poll_seconds"].default * defaults["batch_max_polls"].default
    assert polling >= bedrock_batch.TIMEOUT_HOURS * 3600
    assert inference_definition["TimeoutSeconds"] > polling
