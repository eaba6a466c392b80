"""The pipelines stack: the library layer, every function but the API's, and the state machines.

The functions that S3 uploads trigger are subscribed here, on the data bucket imported from the data
stack: the notification configuration names these functions, so it belongs to the stack that has them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.constructs.catalog import (
    API,
    ASSEMBLE_CALIBRATION,
    ASSEMBLE_JUDGMENTS,
    ASSEMBLE_PREDICTIONS,
    BUILD_ARTIFACT,
    BUILD_PACKAGE,
    BUILD_SHARD_ARTIFACT,
    CHECK_EVALUATION,
    COMPARE_EVALUATION,
    DEPLOY_MODEL,
    INFER_SHARD,
    JUDGE_SHARD,
    PLAN_INFERENCE,
    PLAN_JUDGING,
    POLL_BATCH,
    PREPARE_CHECK,
    PREPARE_GENERATE,
    REDUCE_SCORES,
    REGISTER_ENVIRONMENT,
    SCORE,
    SCORE_SHARD,
    SPECS,
    START_EVALUATION,
    SUBMIT_BATCH,
    TRAINING_JOB,
    UPLOAD_TRAINING,
    VALIDATE_TRAINING,
    FunctionSpec,
)
from infra.constructs.evaluation import EvaluationPipeline
from infra.constructs.functions import Functions
from infra.constructs.inference import DEFAULT_SHARD_SIZE, INFERENCE_SHARD_SIZE, InferencePipeline
from infra.constructs.judging import CalibrationPipeline, JudgingPipeline
from infra.constructs.layer import Layer
from infra.constructs.packages import PackagePipeline
from infra.constructs.pipeline import Pipeline
from infra.constructs.preparations import PreparationPipeline
from infra.constructs.sharded_scoring import ShardedScoring
from infra.constructs.training import (
    DEFAULT_MAX_POLLS,
    DEFAULT_POLL_SECONDS,
    DEFAULT_RETRY_SECONDS,
    TRAINING_MAX_POLLS,
    TRAINING_POLL_SECONDS,
    TRAINING_RETRY_SECONDS,
    TrainingPipeline,
)
from infra.sizing import (
    DEFAULT_SHARD_CASES,
    DEFAULT_SHARD_CONCURRENCY,
    SHARD_CASES,
    SHARD_CONCURRENCY,
)
from infra.stacks import PIPELINES_STACK
from infra.stacks.data import DataStack

# `cdk deploy -c benchgen:scoreConcurrency=10` caps how many scoring programs (untrusted code, up to 15
# minutes each) run at once. Off by default: reserving concurrency fails in accounts whose Lambda limit is
# still the new-account minimum.
SCORE_CONCURRENCY = "benchgen:scoreConcurrency"


class PipelinesStack(Stack):
    """Environment-agnostic: no lookups, so it synthesizes offline with no account."""

    def __init__(
        self, scope: Construct, data: DataStack, construct_id: str = PIPELINES_STACK, **kwargs: Any
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.add_stack_dependency(data)
        self.data = data.imports(self)
        self.layer = Layer(self, "Layer")
        self.functions = Functions(
            self,
            "Functions",
            storage=self.data.stored,
            bus=self.data.bus,
            layer=self.layer.layer,
            specs=self._specs(),
        )
        bus = self.data.bus
        self.pipeline = Pipeline(
            self, "Pipeline", build_artifact=self.functions.by_name[BUILD_ARTIFACT.name], bus=bus
        )
        score = self.functions.by_name[SCORE.name]
        score.add_environment("STATE_MACHINE_ARN", self.pipeline.state_machine.state_machine_arn)
        self.pipeline.state_machine.grant_start_execution(score)
        self.sharded_scoring = self._sharded_scoring()
        self.preparations = PreparationPipeline(
            self,
            "Preparations",
            generate=self.functions.by_name[PREPARE_GENERATE.name],
            check=self.functions.by_name[PREPARE_CHECK.name],
            bus=bus,
        )
        self.packages = PackagePipeline(
            self, "Packages", build_package=self.functions.by_name[BUILD_PACKAGE.name], bus=bus
        )
        self.inference = self._inference_pipeline()
        self.judging = self._judging_pipeline()
        self.calibration = self._calibration_pipeline()
        self.training = self._training_pipeline()
        self.evaluation = self._evaluation_pipeline()

    @property
    def state_machines(self) -> list[sfn.StateMachine]:
        return [
            self.pipeline.state_machine,
            self.sharded_scoring.state_machine,
            self.preparations.state_machine,
            self.packages.state_machine,
            self.inference.state_machine,
            self.judging.state_machine,
            self.calibration.state_machine,
            self.training.state_machine,
            self.evaluation.state_machine,
        ]

    def _shard_cases(self) -> int:
        return int(self.node.try_get_context(SHARD_CASES) or DEFAULT_SHARD_CASES)

    def _sharded_scoring(self) -> ShardedScoring:
        by_name = self.functions.by_name
        by_name[REGISTER_ENVIRONMENT.name].add_environment("SHARD_CASES", str(self._shard_cases()))
        sharded = ShardedScoring(
            self,
            "ShardedScoring",
            score_shard=by_name[SCORE_SHARD.name],
            build_shard_artifact=by_name[BUILD_SHARD_ARTIFACT.name],
            reduce_scores=by_name[REDUCE_SCORES.name],
            bucket=self.data.stored.bucket,
            max_concurrency=int(self.node.try_get_context(SHARD_CONCURRENCY) or DEFAULT_SHARD_CONCURRENCY),
        )
        # The score function hands a sharded run to it; its last step starts the artifact pipeline.
        score = by_name[SCORE.name]
        score.add_environment("SHARDED_SCORING_STATE_MACHINE_ARN", sharded.state_machine.state_machine_arn)
        sharded.state_machine.grant_start_execution(score)
        reduce = by_name[REDUCE_SCORES.name]
        reduce.add_environment("STATE_MACHINE_ARN", self.pipeline.state_machine.state_machine_arn)
        self.pipeline.state_machine.grant_start_execution(reduce)
        return sharded

    def _inference_pipeline(self) -> InferencePipeline:
        by_name = self.functions.by_name
        shard_size = self.node.try_get_context(INFERENCE_SHARD_SIZE) or DEFAULT_SHARD_SIZE
        by_name[PLAN_INFERENCE.name].add_environment("INFERENCE_SHARD_SIZE", str(int(shard_size)))
        return InferencePipeline(
            self,
            "Inference",
            deploy=by_name[DEPLOY_MODEL.name],
            plan=by_name[PLAN_INFERENCE.name],
            infer_shard=by_name[INFER_SHARD.name],
            assemble=by_name[ASSEMBLE_PREDICTIONS.name],
            submit_batch=by_name[SUBMIT_BATCH.name],
            poll_batch=by_name[POLL_BATCH.name],
            bucket=self.data.stored.bucket,
        )

    def _judging_pipeline(self) -> JudgingPipeline:
        by_name = self.functions.by_name
        shard_size = self.node.try_get_context(INFERENCE_SHARD_SIZE) or DEFAULT_SHARD_SIZE
        by_name[PLAN_JUDGING.name].add_environment("INFERENCE_SHARD_SIZE", str(int(shard_size)))
        score = by_name[SCORE.name]
        judging = JudgingPipeline(
            self,
            "Judging",
            plan=by_name[PLAN_JUDGING.name],
            judge_shard=by_name[JUDGE_SHARD.name],
            assemble=by_name[ASSEMBLE_JUDGMENTS.name],
            submit_batch=by_name[SUBMIT_BATCH.name],
            poll_batch=by_name[POLL_BATCH.name],
            score=score,
            bucket=self.data.stored.bucket,
        )
        # The score function hands a run whose template asks a judge to it; its last step scores the run.
        score.add_environment("JUDGING_STATE_MACHINE_ARN", judging.state_machine_arn)
        score.add_to_role_policy(
            iam.PolicyStatement(actions=["states:StartExecution"], resources=[judging.state_machine_arn])
        )
        return judging

    def _calibration_pipeline(self) -> CalibrationPipeline:
        by_name = self.functions.by_name
        calibration = CalibrationPipeline(
            self,
            "Calibration",
            judge_shard=by_name[JUDGE_SHARD.name],
            assemble=by_name[ASSEMBLE_CALIBRATION.name],
            bucket=self.data.stored.bucket,
        )
        # Registration plans a judged version's calibration, in shards as a judging pass's, and starts it.
        register = by_name[REGISTER_ENVIRONMENT.name]
        shard_size = self.node.try_get_context(INFERENCE_SHARD_SIZE) or DEFAULT_SHARD_SIZE
        register.add_environment("INFERENCE_SHARD_SIZE", str(int(shard_size)))
        register.add_environment("CALIBRATION_STATE_MACHINE_ARN", calibration.state_machine.state_machine_arn)
        calibration.state_machine.grant_start_execution(register)
        return calibration

    def _training_pipeline(self) -> TrainingPipeline:
        by_name = self.functions.by_name

        def setting(key: str, default: int) -> int:
            return int(self.node.try_get_context(key) or default)

        return TrainingPipeline(
            self,
            "Training",
            validate=by_name[VALIDATE_TRAINING.name],
            upload=by_name[UPLOAD_TRAINING.name],
            job=by_name[TRAINING_JOB.name],
            bus=self.data.bus,
            poll_seconds=setting(TRAINING_POLL_SECONDS, DEFAULT_POLL_SECONDS),
            max_polls=setting(TRAINING_MAX_POLLS, DEFAULT_MAX_POLLS),
            retry_seconds=setting(TRAINING_RETRY_SECONDS, DEFAULT_RETRY_SECONDS),
        )

    def _evaluation_pipeline(self) -> EvaluationPipeline:
        by_name = self.functions.by_name
        evaluation = EvaluationPipeline(
            self,
            "Evaluation",
            start=by_name[START_EVALUATION.name],
            check=by_name[CHECK_EVALUATION.name],
            compare=by_name[COMPARE_EVALUATION.name],
            bus=self.data.bus,
        )
        # Start creates the evaluation's live runs and starts their InferencePipelines.
        start = by_name[START_EVALUATION.name]
        start.add_environment("INFERENCE_STATE_MACHINE_ARN", self.inference.state_machine.state_machine_arn)
        self.inference.state_machine.grant_start_execution(start)
        return evaluation

    def _specs(self) -> tuple[FunctionSpec, ...]:
        # Every run-step function sized for the deployed shard size (see infra/sizing.py); the API's
        # function is the API stack's.
        shard_cases = self._shard_cases()
        specs = tuple(spec.at_shard_size(shard_cases) for spec in SPECS if spec.name != API.name)
        cap = self.node.try_get_context(SCORE_CONCURRENCY)
        if cap is None:
            return specs
        return tuple(
            replace(spec, reserved_concurrency=int(cap)) if spec.name == SCORE.name else spec
            for spec in specs
        )
