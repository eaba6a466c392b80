"""The BenchGen stack: storage, events, the layer, the functions, the pipeline, the API, the console
and monitoring."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from infra.constructs.api import Api
from infra.constructs.console import CONSOLE_ASSETS, Console, allow_console_origin, console_assets
from infra.constructs.evaluation import EvaluationPipeline
from infra.constructs.events import Events
from infra.constructs.functions import SPECS, Functions, FunctionSpec, sized
from infra.constructs.inference import DEFAULT_SHARD_SIZE, INFERENCE_SHARD_SIZE, InferencePipeline
from infra.constructs.layer import Layer
from infra.constructs.monitoring import Monitoring
from infra.constructs.packages import PackagePipeline
from infra.constructs.pipeline import Pipeline
from infra.constructs.preparations import PreparationPipeline
from infra.constructs.sharded_scoring import ShardedScoring
from infra.constructs.storage import Storage
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
    run_step_sizes,
)

STACK_NAME = "BenchGenStack"
# `cdk deploy -c benchgen:scoreConcurrency=10` caps how many scoring programs (untrusted code, up to 15
# minutes each) run at once. Off by default: reserving concurrency fails in accounts whose Lambda limit is
# still the new-account minimum.
SCORE_CONCURRENCY = "benchgen:scoreConcurrency"
# `cdk deploy -c benchgen:evaluationWaitSeconds=30`: how long an evaluation waits between checks of its
# runs (the functions' default, 60 seconds, when not given).
EVALUATION_WAIT_SECONDS = "benchgen:evaluationWaitSeconds"


class BenchGenStack(Stack):
    """Environment-agnostic: no lookups, so it synthesizes offline with no account."""

    def __init__(self, scope: Construct, construct_id: str = STACK_NAME, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.storage = Storage(self, "Storage")
        self.events = Events(self, "Events")
        self.layer = Layer(self, "Layer")
        self.functions = Functions(
            self,
            "Functions",
            storage=self.storage,
            bus=self.events.bus,
            layer=self.layer.layer,
            specs=self._specs(),
        )
        self.pipeline = Pipeline(
            self,
            "Pipeline",
            build_artifact=self.functions.by_name["build_artifact"],
            bus=self.events.bus,
        )
        score = self.functions.by_name["score"]
        score.add_environment("STATE_MACHINE_ARN", self.pipeline.state_machine.state_machine_arn)
        self.pipeline.state_machine.grant_start_execution(score)
        self.sharded_scoring = self._sharded_scoring()
        self.preparations = PreparationPipeline(
            self,
            "Preparations",
            generate=self.functions.by_name["prepare_generate"],
            check=self.functions.by_name["prepare_check"],
            bus=self.events.bus,
        )
        api = self.functions.by_name["api"]
        api.add_environment(
            "PREPARATION_STATE_MACHINE_ARN", self.preparations.state_machine.state_machine_arn
        )
        self.preparations.state_machine.grant_start_execution(api)
        self.packages = PackagePipeline(
            self,
            "Packages",
            build_package=self.functions.by_name["build_package"],
            bus=self.events.bus,
        )
        api.add_environment("PACKAGE_STATE_MACHINE_ARN", self.packages.state_machine.state_machine_arn)
        self.packages.state_machine.grant_start_execution(api)
        self.inference = self._inference_pipeline()
        self.training = self._training_pipeline()
        self.evaluation = self._evaluation_pipeline()
        self.api = Api(self, "Api", handler=api)
        api.add_environment("EVALUATORS_GROUP", str(self.api.evaluators_group.group_name))
        self.console = Console(
            self,
            "Console",
            api=self.api,
            data_bucket=self.storage.bucket,
            logs_bucket=self.storage.logs_bucket,
            assets=console_assets(self.node.try_get_context(CONSOLE_ASSETS)),
        )
        allow_console_origin(self.api.rest_api, self.console.origin)
        api.add_environment("CONSOLE_ORIGIN", self.console.origin)
        self.monitoring = Monitoring(
            self,
            "Monitoring",
            functions=self.functions.by_name,
            state_machines=[
                self.pipeline.state_machine,
                self.sharded_scoring.state_machine,
                self.preparations.state_machine,
                self.packages.state_machine,
                self.inference.state_machine,
                self.training.state_machine,
                self.evaluation.state_machine,
            ],
        )
        # What an operator subscribes to and opens after `cdk deploy`, and where users sign in and upload.
        CfnOutput(self, "AlarmTopicArn", value=self.monitoring.topic.topic_arn, description="Alarm topic")
        CfnOutput(self, "DashboardName", value=self.monitoring.dashboard.dashboard_name)
        CfnOutput(self, "UserPoolId", value=self.api.user_pool.user_pool_id)
        CfnOutput(self, "UserPoolClientId", value=self.api.user_pool_client.user_pool_client_id)
        CfnOutput(self, "ApiUrl", value=self.api.rest_api.url)
        CfnOutput(self, "DataBucketName", value=self.storage.bucket.bucket_name)
        CfnOutput(self, "ConsoleUrl", value=self.console.origin, description="The web console")

    def _shard_cases(self) -> int:
        return int(self.node.try_get_context(SHARD_CASES) or DEFAULT_SHARD_CASES)

    def _sharded_scoring(self) -> ShardedScoring:
        by_name = self.functions.by_name
        by_name["register_environment"].add_environment("SHARD_CASES", str(self._shard_cases()))
        sharded = ShardedScoring(
            self,
            "ShardedScoring",
            score_shard=by_name["score_shard"],
            build_shard_artifact=by_name["build_shard_artifact"],
            reduce_scores=by_name["reduce_scores"],
            bucket=self.storage.bucket,
            max_concurrency=int(self.node.try_get_context(SHARD_CONCURRENCY) or DEFAULT_SHARD_CONCURRENCY),
        )
        # The score function hands a sharded run to it; its last step starts the artifact pipeline.
        score = by_name["score"]
        score.add_environment("SHARDED_SCORING_STATE_MACHINE_ARN", sharded.state_machine.state_machine_arn)
        sharded.state_machine.grant_start_execution(score)
        reduce = by_name["reduce_scores"]
        reduce.add_environment("STATE_MACHINE_ARN", self.pipeline.state_machine.state_machine_arn)
        self.pipeline.state_machine.grant_start_execution(reduce)
        return sharded

    def _inference_pipeline(self) -> InferencePipeline:
        by_name = self.functions.by_name
        shard_size = self.node.try_get_context(INFERENCE_SHARD_SIZE) or DEFAULT_SHARD_SIZE
        by_name["plan_inference"].add_environment("INFERENCE_SHARD_SIZE", str(int(shard_size)))
        inference = InferencePipeline(
            self,
            "Inference",
            deploy=by_name["deploy_model"],
            plan=by_name["plan_inference"],
            infer_shard=by_name["infer_shard"],
            assemble=by_name["assemble_predictions"],
            submit_batch=by_name["submit_batch"],
            poll_batch=by_name["poll_batch"],
            bucket=self.storage.bucket,
        )
        # POST /runs with a model configuration starts the live run's execution.
        api = by_name["api"]
        api.add_environment("INFERENCE_STATE_MACHINE_ARN", inference.state_machine.state_machine_arn)
        inference.state_machine.grant_start_execution(api)
        return inference

    def _training_pipeline(self) -> TrainingPipeline:
        by_name = self.functions.by_name

        def setting(key: str, default: int) -> int:
            return int(self.node.try_get_context(key) or default)

        training = TrainingPipeline(
            self,
            "Training",
            validate=by_name["validate_training"],
            upload=by_name["upload_training"],
            job=by_name["training_job"],
            bus=self.events.bus,
            poll_seconds=setting(TRAINING_POLL_SECONDS, DEFAULT_POLL_SECONDS),
            max_polls=setting(TRAINING_MAX_POLLS, DEFAULT_MAX_POLLS),
            retry_seconds=setting(TRAINING_RETRY_SECONDS, DEFAULT_RETRY_SECONDS),
        )
        # POST /training-runs starts the training run's execution.
        api = by_name["api"]
        api.add_environment("TRAINING_STATE_MACHINE_ARN", training.state_machine.state_machine_arn)
        training.state_machine.grant_start_execution(api)
        return training

    def _evaluation_pipeline(self) -> EvaluationPipeline:
        by_name = self.functions.by_name
        evaluation = EvaluationPipeline(
            self,
            "Evaluation",
            start=by_name["start_evaluation"],
            check=by_name["check_evaluation"],
            compare=by_name["compare_evaluation"],
            bus=self.events.bus,
        )
        # Start creates the evaluation's live runs and starts their InferencePipelines.
        start = by_name["start_evaluation"]
        start.add_environment("INFERENCE_STATE_MACHINE_ARN", self.inference.state_machine.state_machine_arn)
        self.inference.state_machine.grant_start_execution(start)
        # POST /training-runs/{id}/evaluations starts the evaluation's execution.
        api = by_name["api"]
        api.add_environment("EVALUATION_STATE_MACHINE_ARN", evaluation.state_machine.state_machine_arn)
        evaluation.state_machine.grant_start_execution(api)
        wait = self.node.try_get_context(EVALUATION_WAIT_SECONDS)
        if wait is not None:
            api.add_environment("EVALUATION_WAIT_SECONDS", str(int(wait)))
        return evaluation

    def _specs(self) -> tuple[FunctionSpec, ...]:
        # Every run-step function sized for the deployed shard size (see infra/sizing.py).
        sizes = run_step_sizes(self._shard_cases())
        specs = tuple(
            replace(spec, **sized(sizes[spec.name])) if spec.name in sizes else spec for spec in SPECS
        )
        cap = self.node.try_get_context(SCORE_CONCURRENCY)
        if cap is None:
            return specs
        return tuple(
            replace(spec, reserved_concurrency=int(cap)) if spec.name == "score" else spec for spec in specs
        )
