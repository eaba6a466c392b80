"""The JudgingPipeline: a Standard state machine that asks an environment's judge about a run's answers,
then has the score step score the run.

Plan -> JudgeShards (a Distributed Map over the items list Plan wrote to S3, each item a Standard child
execution running one JudgeShard task; as many at once as Plan's split of the judge connection's
``max_in_flight`` says) -> Assemble (the run's judgments, and the judge's calls on the run) -> Score (the
score function, handed the run: it scores it with the judgments). The same shape as the InferencePipeline
and for the same reasons: a big run is judged in bounded invocations, the state carrying counts and a key.
A run Plan sends to the judge provider's batch inference first takes the batch branch the live runs'
share (SubmitBatch -> Wait -> PollBatch until the jobs have ended) and ReadBatch, then the same Map, which
asks again on demand only about the answers that could not be read. Any failure has Plan's function
mark the run Failed with the step's sentence (one writer per record).
"""

from __future__ import annotations

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from benchgen.vocabulary import InferenceMode
from infra.constructs.states import (
    batch_loop,
    error_readers,
    lambda_task,
    logged_state_machine,
    paced_shards,
    record_failure,
)


class JudgingPipeline(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        plan: lambda_.IFunction,
        judge_shard: lambda_.IFunction,
        assemble: lambda_.IFunction,
        submit_batch: lambda_.IFunction,
        poll_batch: lambda_.IFunction,
        score: lambda_.IFunction,
        bucket: s3.IBucket,
    ) -> None:
        super().__init__(scope, construct_id)
        failed = sfn.Fail(self, "JudgingFailed", error="JudgingFailed", cause="A judging step failed")
        # Only a Running run: a failure never overwrites a finished one.
        mark_failed = record_failure(self, "MarkRunFailed", plan, "run_id", unrecorded=failed)
        mark_failed.next(failed)
        readers = error_readers(self, "run_id", mark_failed)

        item = sfn.JsonPath.string_at
        run_id = {"run_id": item("$.run_id")}
        plan_step = lambda_task(self, "Plan", plan, payload=run_id, result_path="$.plan")
        shards = paced_shards(self, "JudgeShards", "JudgeShard", judge_shard, bucket)
        assemble_step = lambda_task(
            self,
            "Assemble",
            assemble,
            payload={"run_id": item("$.run_id"), "shard_count": sfn.JsonPath.number_at("$.plan.shard_count")},
            result_path="$.assembled",
        )
        # The score step fails the run itself when scoring does; what reaches here is a step that died.
        score_step = lambda_task(self, "Score", score, payload=run_id, result_path=sfn.JsonPath.DISCARD)
        shards.next(assemble_step).next(score_step).next(sfn.Succeed(self, "Judged"))
        # The batch branch (the live runs' submit and poll functions, told it is a judging pass's): once the
        # jobs have ended, ReadBatch writes each shard's first judgments from their output, and the same
        # Map asks again on demand about the answers that could not be read.
        shard_count = sfn.JsonPath.number_at("$.plan.shard_count")
        read_batch = lambda_task(
            self,
            "ReadBatch",
            assemble,
            payload={"run_id": item("$.run_id"), "shard_count": shard_count, "from_batch": True},
            result_path=sfn.JsonPath.DISCARD,
        )
        read_batch.next(shards)
        batch = batch_loop(
            self,
            submit_batch,
            poll_batch,
            records_path="$.plan.asked",
            ended=read_batch,
            told={"judging": True},
        )
        caught: tuple[sfn.TaskStateBase | sfn.DistributedMap, ...] = (
            plan_step,
            shards,
            assemble_step,
            score_step,
            read_batch,
            *batch.steps,
        )
        for state in caught:
            readers.catch(state)
        mode = (
            sfn.Choice(self, "Batch?")
            .when(sfn.Condition.string_equals("$.plan.mode", InferenceMode.BATCH.value), batch.start)
            .otherwise(shards)
        )
        definition = plan_step.next(mode)
        # Named, so that the score function it invokes is told its ARN without a reference to it: the
        # two referring to each other would be a dependency cycle CloudFormation refuses.
        stack = Stack.of(self)
        name = f"{stack.stack_name}-JudgingPipeline"
        self.state_machine = logged_state_machine(
            self,
            "JudgingPipeline",
            definition,
            # Execution data would carry answers and judgments into the logs; the steps keep those in S3.
            include_execution_data=False,
            # A batch pass waits for its provider's jobs: up to the poll step's looks (48 hours by default).
            timeout=Duration.hours(50),
            state_machine_name=name,
        )
        self.state_machine_arn = stack.format_arn(
            service="states",
            resource="stateMachine",
            resource_name=name,
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )


class CalibrationPipeline(Construct):
    """A version's judge calibration, judged as a run's answers are: registration plans it (the labelled
    answers in shards, the items list, the plan in the execution's input as ``$.plan``) and starts it;
    JudgeShards (the JudgingPipeline's Map and JudgeShard function, each item a shard of the calibration)
    -> Assemble (the figures, recorded on the version). Any failure has Assemble's function record the
    calibration failed with the step's sentence."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        judge_shard: lambda_.IFunction,
        assemble: lambda_.IFunction,
        bucket: s3.IBucket,
    ) -> None:
        super().__init__(scope, construct_id)
        failed = sfn.Fail(
            self, "CalibrationFailed", error="CalibrationFailed", cause="A calibration step failed"
        )
        # Only a running calibration: a failure never overwrites measured figures.
        mark_failed = record_failure(
            self, "MarkCalibrationFailed", assemble, "calibration", unrecorded=failed
        )
        mark_failed.next(failed)
        readers = error_readers(self, "calibration", mark_failed)
        shards = paced_shards(self, "JudgeShards", "JudgeShard", judge_shard, bucket, subject="calibration")
        assemble_step = lambda_task(
            self,
            "Assemble",
            assemble,
            payload={
                "calibration": sfn.JsonPath.string_at("$.calibration"),
                "shard_count": sfn.JsonPath.number_at("$.plan.shard_count"),
            },
            result_path="$.assembled",
        )
        for state in (shards, assemble_step):
            readers.catch(state)
        self.state_machine = logged_state_machine(
            self,
            "CalibrationPipeline",
            shards.next(assemble_step).next(sfn.Succeed(self, "Calibrated")),
            # Execution data would carry the labelled answers' judgments into the logs; S3 keeps those.
            include_execution_data=False,
            timeout=Duration.hours(24),
        )
