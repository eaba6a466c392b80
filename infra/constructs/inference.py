"""The InferencePipeline: a Standard state machine that generates a live run's submission.

Deploy -> Plan -> InferShards (a Distributed Map over the items list Plan wrote to S3, each item a
Standard child execution running one InferShard task; as many at once as Plan's split of the run's
``max_in_flight`` says) -> Assemble. Any failure has Deploy's function mark the run Failed with the
step's sentence (one writer per record). The upload Assemble makes starts the existing ingest and score,
unchanged.

Why a Distributed Map reading S3, not an inline Map over Plan's result: a run-time list of shards in the
state grows with the run (a state holds 256 KiB), every inline iteration writes events to the one
execution's history (25,000 at most), and an inline Map runs 40 iterations at once at most. A child
execution has a history of its own, and the state only ever carries counts and a key.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from infra.constructs import error_readers, logged_state_machine, record_failure
from infra.constructs.pipeline import LAMBDA_SERVICE_ERRORS
from infra.constructs.sharded_scoring import StrictDistributedMap

# `cdk deploy -c benchgen:inferenceShardSize=50`: the most cases one shard asks (Plan cuts smaller shards
# for a run asking few requests at once, so that no shard asks more than 20 rounds of calls). How many
# requests are in flight at once is the run's own (`max_in_flight` of its model configuration), split by
# Plan.
INFERENCE_SHARD_SIZE = "benchgen:inferenceShardSize"
DEFAULT_SHARD_SIZE = 100
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
        bucket: s3.IBucket,
    ) -> None:
        super().__init__(scope, construct_id)

        failed = sfn.Fail(self, "LiveRunFailed", error="LiveRunFailed", cause="A live run step failed")
        # Only a run that waits for its model or is being answered: a failure never overwrites a finished run.
        mark_failed = record_failure(self, "MarkRunFailed", deploy, "run_id")
        mark_failed.add_retry(
            errors=LAMBDA_SERVICE_ERRORS,
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

        def guard(state: sfn.TaskStateBase | sfn.DistributedMap) -> None:
            state.add_catch(read_service_error, errors=[sfn.Errors.TIMEOUT], result_path="$.error")
            state.add_catch(read_function_error, errors=[sfn.Errors.ALL], result_path="$.error")

        run_id = {"run_id": sfn.JsonPath.string_at("$.run_id")}
        deploy_step = step("Deploy", deploy, run_id, "$.deploy")
        plan_step = step("Plan", plan, run_id, "$.plan")
        item = sfn.JsonPath.string_at
        shard_step = step(
            "InferShard",
            infer_shard,
            {
                "run_id": item("$.run_id"),
                "shard": sfn.JsonPath.number_at("$.shard"),
                "in_flight": sfn.JsonPath.number_at("$.in_flight"),
                "shards_at_once": sfn.JsonPath.number_at("$.shards_at_once"),
            },
            sfn.JsonPath.DISCARD,
        )
        shards = StrictDistributedMap(
            self,
            "InferShards",
            item_reader=sfn.S3JsonItemReader(bucket=bucket, key=item("$.plan.items_key")),
            map_execution_type=sfn.StateMachineType.STANDARD,
            max_concurrency_path=item("$.plan.shards_at_once"),
            result_path=sfn.JsonPath.DISCARD,
        )
        shards.item_processor(shard_step)
        assemble_step = step(
            "Assemble",
            assemble,
            {
                "run_id": item("$.run_id"),
                "shard_count": sfn.JsonPath.number_at("$.plan.shard_count"),
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
