"""The InferencePipeline: a Standard state machine that generates a live run's submission.

Deploy -> Plan -> InferShards (a Distributed Map over the items list Plan wrote to S3, each item a
Standard child execution running one InferShard task; as many at once as Plan's split of the run's
``max_in_flight`` says) -> Assemble. A run Plan sends to its provider's batch inference takes the other
branch: SubmitBatch -> Wait -> PollBatch, looping until the provider's jobs have ended; their output
landing in S3 assembles the submission (``benchgen.steps.batch_inference``). Any failure has Deploy's
function mark the run Failed with the step's sentence (one writer per record). The upload Assemble makes
starts the existing ingest and score, unchanged.

Why a Distributed Map reading S3, not an inline Map over Plan's result: a run-time list of shards in the
state grows with the run (a state holds 256 KiB), every inline iteration writes events to the one
execution's history (25,000 at most), and an inline Map runs 40 iterations at once at most. A child
execution has a history of its own, and the state only ever carries counts and a key.
"""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from benchgen.vocabulary import InferenceMode
from infra.constructs import set_logical_id
from infra.constructs.states import (
    batch_loop,
    error_readers,
    lambda_task,
    logged_state_machine,
    paced_shards,
    record_failure,
)
from infra.constructs.storage import (
    BATCH_OUTPUT_PREFIX,
    JUDGING_BATCH_OUTPUT,
    JUDGING_BATCH_RECORDS,
    RUNS_PREFIX,
)

# `cdk deploy -c benchgen:inferenceShardSize=50`: the most cases one shard asks (Plan cuts smaller shards
# for a run asking few requests at once, so that no shard asks more than 20 rounds of calls). How many
# requests are in flight at once is the run's own (`max_in_flight` of its model configuration), split by
# Plan.
INFERENCE_SHARD_SIZE = "benchgen:inferenceShardSize"
DEFAULT_SHARD_SIZE = 100
BEDROCK_SERVICE = "bedrock.amazonaws.com"
# The records of a live run's batch jobs (benchgen.bucket_layout.batch_input_key).
BATCH_RECORDS_PATTERN = f"{RUNS_PREFIX}*/batch/*"


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
        submit_batch: lambda_.Function,
        poll_batch: lambda_.IFunction,
        bucket: s3.IBucket,
    ) -> None:
        super().__init__(scope, construct_id)
        self.bedrock_batch_role = self._bedrock_batch_role(bucket)
        submit_batch.add_environment("BEDROCK_BATCH_ROLE_ARN", self.bedrock_batch_role.role_arn)
        # Handed to Bedrock only, and only this role: the one that reads the jobs' records and writes output.
        submit_batch.add_to_role_policy(
            iam.PolicyStatement(
                actions=["iam:PassRole"],
                resources=[self.bedrock_batch_role.role_arn],
                conditions={"StringEquals": {"iam:PassedToService": BEDROCK_SERVICE}},
            )
        )

        failed = sfn.Fail(self, "LiveRunFailed", error="LiveRunFailed", cause="A live run step failed")
        # Only a run that waits for its model or is being answered: a failure never overwrites a finished run.
        mark_failed = record_failure(self, "MarkRunFailed", deploy, "run_id", unrecorded=failed)
        mark_failed.next(failed)
        readers = error_readers(self, "run_id", mark_failed)

        run_id = {"run_id": sfn.JsonPath.string_at("$.run_id")}
        deploy_step = lambda_task(self, "Deploy", deploy, payload=run_id, result_path="$.deploy")
        plan_step = lambda_task(self, "Plan", plan, payload=run_id, result_path="$.plan")
        item = sfn.JsonPath.string_at
        shards = paced_shards(self, "InferShards", "InferShard", infer_shard, bucket)
        assemble_step = lambda_task(
            self,
            "Assemble",
            assemble,
            payload={
                "run_id": item("$.run_id"),
                "shard_count": sfn.JsonPath.number_at("$.plan.shard_count"),
            },
            result_path="$.assembled",
        )
        # The batch branch: submit the jobs, then look at them until they have all ended. Their output
        # landing in S3 assembles the run.
        batch = batch_loop(
            self, submit_batch, poll_batch, records_path="$.plan.cases", ended=sfn.Succeed(self, "BatchEnded")
        )
        caught: tuple[sfn.TaskStateBase | sfn.DistributedMap, ...] = (
            deploy_step,
            plan_step,
            shards,
            assemble_step,
            *batch.steps,
        )
        for state in caught:
            readers.catch(state)
        on_demand = shards.next(assemble_step).next(sfn.Succeed(self, "Generated"))
        mode = (
            sfn.Choice(self, "Batch?")
            .when(sfn.Condition.string_equals("$.plan.mode", InferenceMode.BATCH.value), batch.start)
            .otherwise(on_demand)
        )
        definition = deploy_step.next(plan_step).next(mode)

        self.state_machine = logged_state_machine(
            self,
            "InferencePipeline",
            definition,
            # Execution data would carry model answers into the logs; the steps keep those in S3 instead.
            include_execution_data=False,
            # A batch run waits for its provider's jobs: up to the poll step's looks (48 hours by default).
            timeout=Duration.hours(50),
        )

    def _bedrock_batch_role(self, bucket: s3.IBucket) -> iam.Role:
        """The role Bedrock assumes for this account's batch inference jobs: it reads the jobs' records
        and writes their output, nothing else of the bucket."""
        stack = Stack.of(self)
        role = iam.Role(
            self,
            "BedrockBatchRole",
            description="Assumed by Bedrock to read live runs' and judging passes' batch records and write "
            "their output",
            assumed_by=iam.ServicePrincipal(
                BEDROCK_SERVICE,
                conditions={
                    "StringEquals": {"aws:SourceAccount": stack.account},
                    "ArnLike": {
                        "aws:SourceArn": (
                            f"arn:{stack.partition}:bedrock:{stack.region}:{stack.account}:model-invocation-job/*"
                        )
                    },
                },
            ),
        )
        set_logical_id(role, "BedrockBatchRole")
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["s3:GetObject"],
                resources=[
                    bucket.arn_for_objects(key) for key in (BATCH_RECORDS_PATTERN, JUDGING_BATCH_RECORDS)
                ],
            )
        )
        outputs = (f"{BATCH_OUTPUT_PREFIX}*", JUDGING_BATCH_OUTPUT)
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["s3:PutObject"], resources=[bucket.arn_for_objects(key) for key in outputs]
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["s3:ListBucket"],
                resources=[bucket.bucket_arn],
                conditions={
                    "StringLike": {"s3:prefix": [BATCH_RECORDS_PATTERN, JUDGING_BATCH_RECORDS, *outputs]}
                },
            )
        )
        return role
