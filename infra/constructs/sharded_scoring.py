"""The ShardedScoring state machine: a run ingest cut into shards is scored shard by shard, then merged.

Shards (a Distributed Map over the items list ingest wrote, read from S3; each item a STANDARD child
execution; at most ``max_concurrency`` at once; no failed item tolerated; results discarded, since each
step leaves its part in S3 under a key derived from the run and shard): ScoreShard -> BuildShardArtifact.
Then ReduceScores merges the score parts, completes the run as the score step does and starts the
ArtifactPipeline, whose BuildArtifact merges the artifact parts.

A failing step fails the run itself with a sentence naming the shard; the state machine's MarkRunFailed
covers what never reached the step's code (a timeout, a crash), having ReduceScores' function record it
(one writer per record), and changes nothing on a run that is no longer Running.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.constructs.states import StrictDistributedMap, lambda_task, logged_state_machine, record_failure
from infra.sizing import DEFAULT_SHARD_CONCURRENCY

SHARD_FAILED_REASON = (
    "scoring in shards stopped: a shard step ended before it could record why (it ran out of time or "
    "memory); nothing you uploaded was changed: upload the submission again"
)
REDUCE_FAILED_REASON = (
    "merging the shards' scores stopped before it could record why (it ran out of time or memory); "
    "nothing you uploaded was changed: upload the submission again"
)


class ShardedScoring(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        score_shard: lambda_.IFunction,
        build_shard_artifact: lambda_.IFunction,
        reduce_scores: lambda_.IFunction,
        bucket: s3.IBucket,
        max_concurrency: int = DEFAULT_SHARD_CONCURRENCY,
    ) -> None:
        super().__init__(scope, construct_id)

        failed = sfn.Fail(
            self,
            "ShardedScoringFailed",
            error="ShardedScoringFailed",
            cause="A step of sharded scoring failed",
        )
        # A run no longer Running keeps its outcome: the step that failed it wrote its own sentence.
        mark_failed = record_failure(self, "MarkRunFailed", reduce_scores, "run_id", unrecorded=failed)
        mark_failed.next(failed)

        def failure(name: str, reason: str) -> sfn.Chain:
            return sfn.Pass(
                self, name, parameters={"run_id.$": "$.run_id", "failure": {"errorMessage": reason}}
            ).next(mark_failed)

        def step(name: str, function: lambda_.IFunction, payload: dict[str, Any]) -> sfn.TaskStateBase:
            # Each step leaves its part in S3: the answer is discarded.
            return lambda_task(self, name, function, payload=payload, result_path=sfn.JsonPath.DISCARD)

        item = {"run_id": sfn.JsonPath.string_at("$.run_id"), "shard": sfn.JsonPath.number_at("$.shard")}
        shards = StrictDistributedMap(
            self,
            "Shards",
            item_reader=sfn.S3JsonItemReader(bucket=bucket, key=sfn.JsonPath.string_at("$.items_key")),
            map_execution_type=sfn.StateMachineType.STANDARD,
            max_concurrency=max_concurrency,
            result_path=sfn.JsonPath.DISCARD,
        )
        shards.item_processor(
            step("ScoreShard", score_shard, item).next(step("BuildShardArtifact", build_shard_artifact, item))
        )
        shards.add_catch(
            failure("ShardFailed", SHARD_FAILED_REASON), errors=[sfn.Errors.ALL], result_path="$.error"
        )
        reduce = step("ReduceScores", reduce_scores, {"run_id": sfn.JsonPath.string_at("$.run_id")})
        reduce.add_catch(
            failure("ReduceFailed", REDUCE_FAILED_REASON), errors=[sfn.Errors.ALL], result_path="$.error"
        )

        # No execution timeout: every state is bounded (each task by its function's timeout, the Map by its
        # items), and an execution that timed out would leave its run Running, past any Catch.
        self.state_machine = logged_state_machine(
            self,
            "ShardedScoring",
            shards.next(reduce).next(sfn.Succeed(self, "Scored")),
            timeout=None,
        )
