"""The artifact pipeline: a Standard state machine that turns a scored run into a saved dataset."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct
from pydantic import BaseModel

from benchgen.records.datasets import DatasetRecord
from benchgen.records.runs import ArtifactStatus
from infra.constructs import error_readers, logged_state_machine
from infra.constructs.events import put_event

LAMBDA_SERVICE_ERRORS = [
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
]
DYNAMODB_TRANSIENT_ERRORS = [
    "DynamoDB.ProvisionedThroughputExceededException",
    "DynamoDB.ThrottlingException",
    "DynamoDB.InternalServerErrorException",
    "DynamoDB.RequestLimitExceeded",
]
EVENTBRIDGE_TRANSIENT_ERRORS = [
    "EventBridge.InternalException",
    "EventBridge.ThrottlingException",
    "EventBridge.FailedEntry",
]
CONDITIONAL_CHECK_FAILED = "DynamoDB.ConditionalCheckFailedException"

_DATASET = "$.artifact.dataset"
_FAILURE_MESSAGE = "$.failure.errorMessage"
# Short intervals: an execution is short, and the local cloud really sleeps between attempts.
_RETRY_INTERVAL = Duration.seconds(1)
_RETRY_ATTEMPTS = 3


def _guard(
    task: sfn.TaskStateBase, transient: list[str], on_error: sfn.IChainable, result_path: str = "$.error"
) -> None:
    """Retry the `transient` errors, then send any failure left to `on_error`, the error at `result_path`.

    A more specific Catch must be added before this one: Step Functions takes the first that matches."""
    task.add_retry(errors=transient, interval=_RETRY_INTERVAL, max_attempts=_RETRY_ATTEMPTS, backoff_rate=2)
    task.add_catch(on_error, errors=[sfn.Errors.ALL], result_path=result_path)


def _run_key() -> dict[str, tasks.DynamoAttributeValue]:
    return {"run_id": tasks.DynamoAttributeValue.from_string(sfn.JsonPath.string_at("$.run_id"))}


def record_item(record: type[BaseModel], path: str) -> dict[str, tasks.DynamoAttributeValue]:
    """The DynamoDB item of `record`'s fields, read from the execution's JSON at `path`.

    The task before sends every value as a string (DynamoDB takes a number as one); the field's type says
    which attribute each becomes, so a field added to the record is saved without a list to keep."""
    item: dict[str, tasks.DynamoAttributeValue] = {}
    for name, field in record.model_fields.items():
        value = sfn.JsonPath.string_at(f"{path}.{name}")
        if field.annotation is int:
            item[name] = tasks.DynamoAttributeValue.number_from_string(value)
        elif field.annotation is str:
            item[name] = tasks.DynamoAttributeValue.from_string(value)
        else:
            raise TypeError(
                f"{record.__name__}.{name} is {field.annotation}: the state machine writes only str and int "
                "fields; give the field one of those types or write the record from a function"
            )
    return item


class Pipeline(Construct):
    """BuildArtifact -> ArtifactEmitted? -> SaveDataset -> LinkDataset -> EmitDatasetSaved -> Saved."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        build_artifact: lambda_.IFunction,
        runs_table: dynamodb.ITable,
        datasets_table: dynamodb.ITable,
        bus: events.IEventBus,
    ) -> None:
        super().__init__(scope, construct_id)
        read_function_error, read_service_error = self._failure_chain(runs_table)

        build = tasks.LambdaInvoke(
            self,
            "BuildArtifact",
            lambda_function=build_artifact,
            payload_response_only=True,
            retry_on_service_exceptions=False,
            result_path="$.artifact",
        )
        build.add_catch(read_service_error, errors=[sfn.Errors.TIMEOUT], result_path="$.error")
        _guard(build, LAMBDA_SERVICE_ERRORS, read_function_error)

        record_no_artifact = self._record_artifact_status(
            "RecordNoArtifact", runs_table, ArtifactStatus.NOT_EMITTED, reason_at="$.artifact.reason"
        )
        _guard(record_no_artifact, DYNAMODB_TRANSIENT_ERRORS, read_service_error)
        record_no_artifact.next(sfn.Succeed(self, "NoArtifact"))

        emitted = (
            sfn.Choice(self, "ArtifactEmitted?")
            .when(
                # A Choice has no Catch: an answer without `emitted` must not fail the execution unmarked.
                sfn.Condition.and_(
                    sfn.Condition.is_present("$.artifact.emitted"),
                    sfn.Condition.boolean_equals("$.artifact.emitted", True),
                ),
                self._save_chain(runs_table, datasets_table, bus, read_service_error),
            )
            .otherwise(record_no_artifact)
        )

        self.state_machine = logged_state_machine(
            self,
            "ArtifactPipeline",
            build.next(emitted),
            timeout=Duration.hours(1),
        )

    def _failure_chain(self, runs_table: dynamodb.ITable) -> tuple[sfn.Chain, sfn.Chain]:
        """MarkArtifactFailed -> ArtifactFailed, entered through the reader of a Lambda task's error or
        of a service task's: the two states returned, in that order."""
        failed = sfn.Fail(
            self, "ArtifactFailed", error="ArtifactFailed", cause="The finetune artifact step failed"
        )
        mark_failed = self._record_artifact_status(
            "MarkArtifactFailed", runs_table, ArtifactStatus.FAILED, reason_at=_FAILURE_MESSAGE
        )
        _guard(mark_failed, DYNAMODB_TRANSIENT_ERRORS, failed, result_path="$.mark_failed_error")
        mark_failed.next(failed)
        return error_readers(self, "run_id", mark_failed)

    def _record_artifact_status(
        self, state_id: str, runs_table: dynamodb.ITable, status: ArtifactStatus, *, reason_at: str
    ) -> tasks.DynamoUpdateItem:
        """Set the run's artifact status to `status` and its reason to the value at `reason_at`."""
        placeholder = f":{status.name.lower()}"
        return tasks.DynamoUpdateItem(
            self,
            state_id,
            table=runs_table,
            key=_run_key(),
            update_expression=f"SET artifact_status = {placeholder}, artifact_reason = :reason",
            expression_attribute_values={
                placeholder: tasks.DynamoAttributeValue.from_string(status),
                ":reason": tasks.DynamoAttributeValue.from_string(sfn.JsonPath.string_at(reason_at)),
            },
            result_path=sfn.JsonPath.DISCARD,
        )

    def _save_chain(
        self,
        runs_table: dynamodb.ITable,
        datasets_table: dynamodb.ITable,
        bus: events.IEventBus,
        on_error: sfn.IChainable,
    ) -> sfn.Chain:
        """SaveDataset -> LinkDataset -> EmitDatasetSaved -> Saved; a dataset already saved for the run ends
        in AlreadySaved, any other failure goes to `on_error`."""
        save = tasks.DynamoPutItem(
            self,
            "SaveDataset",
            table=datasets_table,
            item=record_item(DatasetRecord, _DATASET),
            condition_expression="attribute_not_exists(dataset_id)",
            result_path=sfn.JsonPath.DISCARD,
        )
        # A dataset is saved once per run: a second execution for the same run lands here and succeeds.
        save.add_catch(sfn.Succeed(self, "AlreadySaved"), errors=[CONDITIONAL_CHECK_FAILED])
        _guard(save, DYNAMODB_TRANSIENT_ERRORS, on_error)

        link = tasks.DynamoUpdateItem(
            self,
            "LinkDataset",
            table=runs_table,
            key=_run_key(),
            update_expression=(
                "SET dataset_id = :dataset_id, dataset_name = :dataset_name, artifact_status = :saved"
            ),
            expression_attribute_values={
                ":dataset_id": tasks.DynamoAttributeValue.from_string(
                    sfn.JsonPath.string_at(f"{_DATASET}.dataset_id")
                ),
                ":dataset_name": tasks.DynamoAttributeValue.from_string(
                    sfn.JsonPath.string_at(f"{_DATASET}.name")
                ),
                ":saved": tasks.DynamoAttributeValue.from_string(ArtifactStatus.SAVED),
            },
            result_path=sfn.JsonPath.DISCARD,
        )
        _guard(link, DYNAMODB_TRANSIENT_ERRORS, on_error)

        emit = put_event(
            self,
            "EmitDatasetSaved",
            bus,
            "DatasetSaved",
            {
                "dataset_id": sfn.JsonPath.string_at(f"{_DATASET}.dataset_id"),
                "run_id": sfn.JsonPath.string_at("$.run_id"),
                "name": sfn.JsonPath.string_at(f"{_DATASET}.name"),
            },
        )
        _guard(emit, EVENTBRIDGE_TRANSIENT_ERRORS, on_error)
        emit.next(sfn.Succeed(self, "Saved"))
        return save.next(link).next(emit)
