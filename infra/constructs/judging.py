"""The JudgingPipeline: a Standard state machine that asks an environment's judge about a run's answers,
then has the score step score the run.

Plan -> JudgeShards (a Distributed Map over the items list Plan wrote to S3, each item a Standard child
execution running one JudgeShard task; as many at once as Plan's split of the judge connection's
``max_in_flight`` says) -> Assemble (the run's judgments, and the judge's calls on the run) -> Score (the
score function, handed the run: it scores it with the judgments). The same shape as the InferencePipeline
and for the same reasons: a big run is judged in bounded invocations, the state carrying counts and a key.
Any failure has Plan's function mark the run Failed with the step's sentence (one writer per record).
"""

from __future__ import annotations

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.constructs.states import (
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
        for state in (plan_step, shards, assemble_step, score_step):
            readers.catch(state)
        definition = (
            plan_step.next(shards).next(assemble_step).next(score_step).next(sfn.Succeed(self, "Judged"))
        )
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
            timeout=Duration.hours(24),
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
