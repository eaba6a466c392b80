"""The InferencePipeline: a Standard state machine that generates a live run's submission.

Deploy -> Plan -> InferShards (an inline Map over the plan's shards, at most `max_concurrency` at once,
each an InferShard task) -> Assemble. Any failure marks the run Failed with the step's sentence. The
upload Assemble makes starts the existing ingest and score, unchanged.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from benchgen.records.runs import RunStatus
from infra.constructs import error_readers, logged_state_machine
from infra.constructs.pipeline import (
    CONDITIONAL_CHECK_FAILED,
    DYNAMODB_TRANSIENT_ERRORS,
    LAMBDA_SERVICE_ERRORS,
)

# `cdk deploy -c benchgen:inferenceConcurrency=8 -c benchgen:inferenceShardSize=50`: how many shards call
# the model at once (the provider's rate limit is the usual bound), and how many cases one shard asks.
INFERENCE_CONCURRENCY = "benchgen:inferenceConcurrency"
INFERENCE_SHARD_SIZE = "benchgen:inferenceShardSize"
DEFAULT_CONCURRENCY = 4
DEFAULT_SHARD_SIZE = 20
# While a run waits for its model or is being answered; a failure never overwrites a finished run.
_OPEN_STATUSES = (RunStatus.PENDING, RunStatus.DEPLOYING, RunStatus.RUNNING)
_RETRY_INTERVAL = Duration.seconds(1)
_RETRY_ATTEMPTS = 3


class InferencePipeline(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        deploy: lambda_.IFunction,
        plan: lambda_.IFunction,
        infer_shard: lambda_.IFunction,
        assemble: lambda_.IFunction,
        runs_table: dynamodb.ITable,
        max_concurrency: int = DEFAULT_CONCURRENCY,
    ) -> None:
        super().__init__(scope, construct_id)

        failed = sfn.Fail(self, "LiveRunFailed", error="LiveRunFailed", cause="A live run step failed")
        values = {
            ":failed": tasks.DynamoAttributeValue.from_string(RunStatus.FAILED.value),
            ":reason": tasks.DynamoAttributeValue.from_string(
                sfn.JsonPath.string_at("$.failure.errorMessage")
            ),
            ":at": tasks.DynamoAttributeValue.from_string(sfn.JsonPath.string_at("$$.State.EnteredTime")),
        }
        values.update(
            {
                f":open{i}": tasks.DynamoAttributeValue.from_string(s.value)
                for i, s in enumerate(_OPEN_STATUSES)
            }
        )
        mark_failed = tasks.DynamoUpdateItem(
            self,
            "MarkRunFailed",
            table=runs_table,
            key={"run_id": tasks.DynamoAttributeValue.from_string(sfn.JsonPath.string_at("$.run_id"))},
            update_expression="SET #status = :failed, failure_reason = :reason, finished_at = :at",
            condition_expression=f"#status IN ({', '.join(f':open{i}' for i in range(len(_OPEN_STATUSES)))})",
            expression_attribute_names={"#status": "status"},
            expression_attribute_values=values,
            result_path=sfn.JsonPath.DISCARD,
        )
        mark_failed.add_catch(failed, errors=[CONDITIONAL_CHECK_FAILED], result_path="$.mark_failed_error")
        mark_failed.add_retry(
            errors=DYNAMODB_TRANSIENT_ERRORS,
            interval=_RETRY_INTERVAL,
            max_attempts=_RETRY_ATTEMPTS,
            backoff_rate=2,
        )
        mark_failed.add_catch(failed, errors=[sfn.Errors.ALL], result_path="$.mark_failed_error")
        mark_failed.next(failed)
        read_function_error, read_service_error = error_readers(self, "run_id", mark_failed)

        def step(
            name: str, function: lambda_.IFunction, payload: dict[str, Any], result: str
        ) -> tasks.LambdaInvoke:
            task = tasks.LambdaInvoke(
                self,
                name,
                lambda_function=function,
                payload=sfn.TaskInput.from_object(payload),
                payload_response_only=True,
                retry_on_service_exceptions=False,
                result_path=result,
            )
            task.add_retry(
                errors=LAMBDA_SERVICE_ERRORS,
                interval=_RETRY_INTERVAL,
                max_attempts=_RETRY_ATTEMPTS,
                backoff_rate=2,
            )
            return task

        def guard(state: sfn.TaskStateBase | sfn.Map) -> None:
            state.add_catch(read_service_error, errors=[sfn.Errors.TIMEOUT], result_path="$.error")
            state.add_catch(read_function_error, errors=[sfn.Errors.ALL], result_path="$.error")

        run_id = {"run_id": sfn.JsonPath.string_at("$.run_id")}
        deploy_step = step("Deploy", deploy, run_id, "$.deploy")
        plan_step = step("Plan", plan, run_id, "$.plan")
        shard_step = step(
            "InferShard",
            infer_shard,
            {"run_id": sfn.JsonPath.string_at("$.run_id"), "shard": sfn.JsonPath.number_at("$.shard")},
            "$",
        )
        shards = sfn.Map(
            self,
            "InferShards",
            items_path="$.plan.shards",
            max_concurrency=max_concurrency,
            result_path="$.answered",
        )
        shards.item_processor(shard_step)
        assemble_step = step(
            "Assemble",
            assemble,
            {
                "run_id": sfn.JsonPath.string_at("$.run_id"),
                "shard_count": sfn.JsonPath.array_length(sfn.JsonPath.list_at("$.plan.shards")),
            },
            "$.assembled",
        )
        for state in (deploy_step, plan_step, shards, assemble_step):
            guard(state)
        definition = (
            deploy_step.next(plan_step).next(shards).next(assemble_step).next(sfn.Succeed(self, "Generated"))
        )

        self.state_machine = logged_state_machine(
            self,
            "InferencePipeline",
            definition,
            # Execution data would carry model answers into the logs; the steps keep those in S3 instead.
            include_execution_data=False,
            timeout=Duration.hours(12),
        )
