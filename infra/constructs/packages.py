"""The package pipeline: a Standard state machine that builds one export package of a preparation.

The API records the package as Building and starts one execution named by the package id, so a repeated
request starts nothing new. A profile that refuses the preparation is an answer, not an error: the
package is recorded Refused with the profile's message, and the execution succeeds.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from benchgen.records import PackageStatus
from infra.constructs import error_readers, logged_state_machine
from infra.constructs.events import put_event
from infra.constructs.pipeline import (
    DYNAMODB_TRANSIENT_ERRORS,
    EVENTBRIDGE_TRANSIENT_ERRORS,
    LAMBDA_SERVICE_ERRORS,
    _guard,
)

PACKAGE_READY = "PackageReady"
# Where the build's answer sits in the execution's JSON (see benchgen.steps.package).
_BUILD = "$.build"
_PACKAGE = f"{_BUILD}.package"
_FAILURE_MESSAGE = "$.failure.errorMessage"
# Fields of benchgen.records.PackageRecord that the state machine writes, by their attribute names.
RECORD_NAMES = {
    "#status": "status",
    "#sha256": "sha256",
    "#size": "size",
    "#files": "files",
    "#reason": "reason",
}
_STILL_BUILDING = "#status = :building"


def _status(status: PackageStatus) -> tasks.DynamoAttributeValue:
    return tasks.DynamoAttributeValue.from_string(status.value)


class PackagePipeline(Construct):
    """BuildPackage -> Built? -> RecordReady -> EmitPackageReady, or RecordRefused; any failure ->
    MarkPackageFailed (the package shows the failure's message) -> PackageFailed."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        build_package: lambda_.IFunction,
        packages_table: dynamodb.ITable,
        bus: events.IEventBus,
    ) -> None:
        super().__init__(scope, construct_id)

        def update(
            state_id: str, expression: str, values: dict[str, tasks.DynamoAttributeValue]
        ) -> tasks.DynamoUpdateItem:
            # Only a package still Building is written: a package never leaves Ready, Refused or Failed.
            names = {name: field for name, field in RECORD_NAMES.items() if name in expression}
            return tasks.DynamoUpdateItem(
                self,
                state_id,
                table=packages_table,
                key={
                    "package_id": tasks.DynamoAttributeValue.from_string(
                        sfn.JsonPath.string_at("$.package_id")
                    )
                },
                update_expression=expression,
                condition_expression=_STILL_BUILDING,
                expression_attribute_names=names,
                expression_attribute_values={":building": _status(PackageStatus.BUILDING), **values},
                result_path=sfn.JsonPath.DISCARD,
            )

        failed = sfn.Fail(self, "PackageFailed", error="PackageFailed", cause="The package build failed")
        mark_failed = update(
            "MarkPackageFailed",
            "SET #status = :failed, #reason = :reason",
            {
                ":failed": _status(PackageStatus.FAILED),
                ":reason": tasks.DynamoAttributeValue.from_string(sfn.JsonPath.string_at(_FAILURE_MESSAGE)),
            },
        )
        _guard(mark_failed, DYNAMODB_TRANSIENT_ERRORS, failed, result_path="$.mark_failed_error")
        mark_failed.next(failed)
        read_function_error, read_service_error = error_readers(self, "package_id", mark_failed)
        no_answer = sfn.Pass(
            self,
            "NoBuildAnswer",
            parameters={
                "package_id.$": "$.package_id",
                "failure": {
                    "errorMessage": "the package build answered with neither a package nor a refusal; "
                    "request the package again, and report it if it fails again"
                },
            },
        ).next(mark_failed)

        build = tasks.LambdaInvoke(
            self,
            "BuildPackage",
            lambda_function=build_package,
            payload_response_only=True,
            retry_on_service_exceptions=False,
            result_path=_BUILD,
        )
        build.add_catch(read_service_error, errors=[sfn.Errors.TIMEOUT], result_path="$.error")
        _guard(build, LAMBDA_SERVICE_ERRORS, read_function_error)

        record_ready = update(
            "RecordReady",
            "SET #status = :ready, #sha256 = :sha256, #size = :size, #files = :files",
            {
                ":ready": _status(PackageStatus.READY),
                ":sha256": tasks.DynamoAttributeValue.from_string(
                    sfn.JsonPath.string_at(f"{_PACKAGE}.sha256")
                ),
                ":size": tasks.DynamoAttributeValue.number_from_string(
                    sfn.JsonPath.string_at(f"{_PACKAGE}.size")
                ),
                # The build answers the files map already in DynamoDB's attribute-value form.
                ":files": tasks.DynamoAttributeValue.map_from_json_path(f"{_PACKAGE}.files"),
            },
        )
        _guard(record_ready, DYNAMODB_TRANSIENT_ERRORS, read_service_error)
        record_refused = update(
            "RecordRefused",
            "SET #status = :refused, #reason = :reason",
            {
                ":refused": _status(PackageStatus.REFUSED),
                ":reason": tasks.DynamoAttributeValue.from_string(sfn.JsonPath.string_at(f"{_BUILD}.reason")),
            },
        )
        _guard(record_refused, DYNAMODB_TRANSIENT_ERRORS, read_service_error)
        record_refused.next(sfn.Succeed(self, "Refused"))

        emit = put_event(
            self,
            "EmitPackageReady",
            bus,
            PACKAGE_READY,
            {
                "package_id": sfn.JsonPath.string_at("$.package_id"),
                "preparation_id": sfn.JsonPath.string_at("$.preparation_id"),
                "profile": sfn.JsonPath.string_at("$.profile"),
                "sha256": sfn.JsonPath.string_at(f"{_PACKAGE}.sha256"),
            },
        )
        _guard(emit, EVENTBRIDGE_TRANSIENT_ERRORS, read_service_error)
        emit.next(sfn.Succeed(self, "Ready"))

        # A Choice has no Catch: an answer without the fields a branch reads must not fail the execution
        # unrecorded, so each branch is taken only when its fields are there.
        built = (
            sfn.Choice(self, "Built?")
            .when(
                sfn.Condition.and_(
                    sfn.Condition.is_present(f"{_BUILD}.refused"),
                    sfn.Condition.boolean_equals(f"{_BUILD}.refused", True),
                    sfn.Condition.is_present(f"{_BUILD}.reason"),
                ),
                record_refused,
            )
            .when(
                sfn.Condition.and_(
                    sfn.Condition.is_present(f"{_PACKAGE}.sha256"),
                    sfn.Condition.is_present(f"{_PACKAGE}.size"),
                    sfn.Condition.is_present(f"{_PACKAGE}.files"),
                ),
                record_ready.next(emit),
            )
            .otherwise(no_answer)
        )

        self.state_machine = logged_state_machine(
            self,
            "PackagePipeline",
            build.next(built),
            timeout=Duration.hours(1),
        )
