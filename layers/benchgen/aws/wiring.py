"""The adapters a function needs, built once per cold start from its settings.

Each adapter's module is imported by the property that makes it, not with this module: a function pays
at its cold start for the adapters it uses, not for every adapter some function uses (the tables'
modules bring their records' pydantic models, the sandboxes the program runner).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from benchgen.aws import clients
from benchgen.bucket_layout import correlation_id, run_id_of
from benchgen.settings import Settings, load_settings

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from benchgen.aws.events import EventPublisher
    from benchgen.aws.executions import ExecutionStarter
    from benchgen.aws.storage import ObjectStore
    from benchgen.aws.tables.connections import ConnectionsRepo
    from benchgen.aws.tables.datasets import DatasetsRepo
    from benchgen.aws.tables.environments import EnvironmentsRepo
    from benchgen.aws.tables.evaluations import EvaluationsRepo
    from benchgen.aws.tables.packages import PackagesRepo
    from benchgen.aws.tables.preparations import PreparationsRepo
    from benchgen.aws.tables.runs import RunsRepo
    from benchgen.aws.tables.training_runs import TrainingRunsRepo
    from benchgen.inference.retry import Backoff
    from benchgen.ports.storage import UploadedObject
    from benchgen.sandbox.job import Sandbox


@dataclass
class Adapters:
    settings: Settings

    @cached_property
    def store(self) -> ObjectStore:
        from benchgen.aws.storage import ObjectStore

        return ObjectStore(self.settings.data_bucket)

    @cached_property
    def connections(self) -> ConnectionsRepo:
        from benchgen.aws.tables.connections import ConnectionsRepo

        return ConnectionsRepo(self.settings.connections_table)

    @cached_property
    def runs(self) -> RunsRepo:
        from benchgen.aws.tables.runs import RunsRepo

        return RunsRepo(self.settings.runs_table)

    @cached_property
    def environments(self) -> EnvironmentsRepo:
        from benchgen.aws.tables.environments import EnvironmentsRepo

        return EnvironmentsRepo(self.settings.environments_table)

    @cached_property
    def datasets(self) -> DatasetsRepo:
        from benchgen.aws.tables.datasets import DatasetsRepo

        return DatasetsRepo(self.settings.datasets_table)

    @cached_property
    def packages(self) -> PackagesRepo:
        from benchgen.aws.tables.packages import PackagesRepo

        return PackagesRepo(self.settings.packages_table)

    @cached_property
    def preparations(self) -> PreparationsRepo:
        from benchgen.aws.tables.preparations import PreparationsRepo

        return PreparationsRepo(self.settings.preparations_table)

    @cached_property
    def training_runs(self) -> TrainingRunsRepo:
        from benchgen.aws.tables.training_runs import TrainingRunsRepo

        return TrainingRunsRepo(self.settings.training_runs_table)

    @cached_property
    def evaluations(self) -> EvaluationsRepo:
        from benchgen.aws.tables.evaluations import EvaluationsRepo

        return EvaluationsRepo(self.settings.evaluations_table)

    @cached_property
    def publisher(self) -> EventPublisher:
        from benchgen.aws.events import EventPublisher

        return EventPublisher(self.settings.event_bus_name)

    @property
    def idempotency(self) -> DynamoDBPersistenceLayer:
        """A persistence layer for one idempotent call site, new on every use.

        Never shared: powertools keeps the configuration of the first caller in the layer (its key
        expression, expiry) and rewrites its record prefix on every call, so a layer shared by two
        functions (in-process, all of them share these adapters) or two call sites mixes up records.
        """
        # Imported here, not with the module: powertools' idempotency package imports boto3, which a
        # cold start need not pay before its first event (see benchgen.aws.clients).
        from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

        return DynamoDBPersistenceLayer(
            table_name=self.settings.idempotency_table, boto3_client=clients.dynamodb()
        )

    def once_per_object(
        self, step: Callable[..., dict[str, Any]], context: LambdaContext
    ) -> Callable[..., dict[str, Any]]:
        """``step(upload=...)`` run once per uploaded object version; a redelivery gets the stored answer.

        A first layer against duplicate events; the steps' conditional writes are the second, for the
        deliveries this cannot see (two events for one run, events out of order). A duplicate that finds
        another delivery at work on the version ends at once, answered as such; a retry of this
        delivery's own event, whose earlier attempt died at work, raises powertools' in-progress error
        for Lambda to deliver it again (see ``benchgen.aws.deliveries``).
        """
        from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent_function
        from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyAlreadyInProgressError

        from benchgen.aws.deliveries import DeliveryHolders, holder_id

        # S3 delivers at least once; the same object version and content is processed once a day at most.
        config = IdempotencyConfig(
            event_key_jmespath="[bucket, key, version_id, etag]", expires_after_seconds=24 * 3600
        )
        # An invocation that times out mid-step leaves its record in progress only until its deadline.
        config.register_lambda_context(context)
        # The prefix powertools derives from AWS_LAMBDA_FUNCTION_NAME, taken from the invocation instead:
        # in-process every function shares one environment, and each must keep its own records.
        prefix = f"{context.function_name}.{step.__module__}.{step.__qualname__}"
        holders = DeliveryHolders(self.settings.idempotency_table)
        request_id = context.aws_request_id

        def holding(*, upload: UploadedObject, **arguments: Any) -> dict[str, Any]:
            holders.hold(holder_id(prefix, upload), request_id)
            return step(upload=upload, **arguments)

        first: Callable[..., dict[str, Any]] = idempotent_function(
            holding,
            data_keyword_argument="upload",
            persistence_store=self.idempotency,
            config=config,
            key_prefix=prefix,
        )

        def once(*, upload: UploadedObject, **arguments: Any) -> dict[str, Any]:
            try:
                return first(upload=upload, **arguments)
            except IdempotencyAlreadyInProgressError:
                holder = holders.holder(holder_id(prefix, upload))
                if holder is None or holder == request_id:
                    raise
                return {"key": upload.key, "duplicate": f"delivery {holder} is at work on this upload"}

        return once

    @cached_property
    def sandbox(self) -> Sandbox:
        """The sandbox functions when the stack names them; else the local runner (the command line)."""
        functions = self.settings.sandbox_functions
        if not functions:
            from benchgen.sandbox.local import LocalSandbox

            return LocalSandbox()
        from benchgen.aws.sandbox import SandboxInvoker
        from benchgen.sandbox.remote import RemoteSandbox

        return RemoteSandbox(
            SandboxInvoker(self.store, functions, ttl_seconds=self.settings.presign_ttl_seconds)
        )

    @cached_property
    def starter(self) -> ExecutionStarter:
        found = _starter(self.settings.state_machine_arn)
        if found is None:
            raise RuntimeError("STATE_MACHINE_ARN is not set: only the score function starts executions")
        return found

    @cached_property
    def sharded_starter(self) -> ExecutionStarter | None:
        """The ShardedScoring starter, where the function is told its ARN (the score function)."""
        return _starter(self.settings.sharded_scoring_state_machine_arn)

    @cached_property
    def judging_starter(self) -> ExecutionStarter | None:
        """The JudgingPipeline starter, where the function is told its ARN (the score function)."""
        return _starter(self.settings.judging_state_machine_arn)

    @cached_property
    def calibration_starter(self) -> ExecutionStarter:
        """The CalibrationPipeline's starter (the register function's)."""
        found = _starter(self.settings.calibration_state_machine_arn)
        if found is None:
            raise RuntimeError("CALIBRATION_STATE_MACHINE_ARN is not set: a judge cannot be calibrated")
        return found

    @cached_property
    def preparation_starter(self) -> ExecutionStarter | None:
        """The preparation state machine's starter, where the function is told its ARN (the api function)."""
        return _starter(self.settings.preparation_state_machine_arn)

    @cached_property
    def package_starter(self) -> ExecutionStarter | None:
        """The package state machine's starter, where the function is told its ARN (the api function)."""
        return _starter(self.settings.package_state_machine_arn)

    @cached_property
    def evaluation_starter(self) -> ExecutionStarter | None:
        """The evaluation state machine's starter, where the function is told its ARN (the api function)."""
        return _starter(self.settings.evaluation_state_machine_arn)

    @cached_property
    def training_starter(self) -> ExecutionStarter | None:
        """The TrainingPipeline's starter, where the function is told its ARN (the api function)."""
        return _starter(self.settings.training_state_machine_arn)

    @cached_property
    def live_run_starter(self) -> ExecutionStarter | None:
        """The InferencePipeline's starter, where the function is told its ARN (the api function, and the
        evaluation's Start step)."""
        return _starter(self.settings.inference_state_machine_arn)

    @cached_property
    def inference_starter(self) -> ExecutionStarter:
        """The InferencePipeline's starter (the evaluation's Start step starts its live runs)."""
        found = self.live_run_starter
        if found is None:
            raise RuntimeError("INFERENCE_STATE_MACHINE_ARN is not set: this function starts no live runs")
        return found

    @property
    def model_backoff(self) -> Backoff:
        """How the steps that call a live model retry each call."""
        from benchgen.inference.retry import Backoff

        return Backoff(
            attempts=self.settings.model_call_attempts,
            base_s=self.settings.model_retry_base_seconds,
            cap_s=20 * self.settings.model_retry_base_seconds,
        )


def _starter(arn: str | None) -> ExecutionStarter | None:
    """A starter of the state machine ``arn``; None where the function is not told one."""
    if not arn:
        return None
    from benchgen.aws.executions import ExecutionStarter

    return ExecutionStarter(arn)


_cached: Adapters | None = None


def adapters() -> Adapters:
    """The function's adapters, made on first use (the cold start) and reused while the sandbox lives."""
    global _cached
    if _cached is None:
        _cached = Adapters(load_settings())
    return _cached


def for_each_upload(
    event: dict[str, Any],
    context: LambdaContext,
    step: Callable[..., dict[str, Any]],
    logger: Logger,
    **arguments: Any,
) -> list[dict[str, Any]]:
    """``step(upload=..., **arguments)`` for every object an S3 notification announces, once per object
    version (``arguments`` are not part of what makes a delivery a duplicate).

    While an object is processed, the function's log lines carry its correlation id (the run id for a
    run's objects, see ``keys.correlation_id``) and, for a run's objects, the ``run_id`` key; each object
    ends with one line saying what was done.
    Per thread: in-process, concurrent invocations of one function share its logger.
    """
    from benchgen.aws.s3_events import uploaded_objects

    once = adapters().once_per_object(step, context)
    answers = []
    for upload in uploaded_objects(event):
        keys = {"correlation_id": correlation_id(upload.key)}
        run_id = run_id_of(upload.key)
        if run_id is not None:
            keys["run_id"] = run_id
        logger.thread_safe_append_keys(**keys)
        try:
            answer = once(upload=upload, **arguments)
            logger.info(
                "upload processed",
                extra={"key": upload.key, "version_id": upload.version_id, "result": answer},
            )
            answers.append(answer)
        finally:
            logger.thread_safe_remove_keys(list(keys))
    return answers


def reset() -> None:
    """Forget the adapters and clients (the local cloud and tests call this when a cloud starts or stops)."""
    global _cached
    _cached = None
    clients.reset_clients()
