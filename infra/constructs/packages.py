"""The package pipeline: a Standard state machine that builds one export package of a preparation.

The API records the package as Building and starts one execution named by the package id, so a repeated
request starts nothing new. A profile that refuses the preparation is an answer, not an error: the
package is recorded Refused with the profile's message, and the execution succeeds. BuildPackage records
every move of the package out of Building itself, a caught failure included (one writer per record); the
state machine branches on its answer and announces PackageReady.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.constructs.states import (
    EVENTBRIDGE_TRANSIENT_ERRORS,
    error_readers,
    guard,
    lambda_task,
    logged_state_machine,
    put_event,
    record_failure,
)

PACKAGE_READY = "PackageReady"
# Where the build's answer sits in the execution's JSON (see benchgen.steps.package).
_BUILD = "$.build"
_PACKAGE = f"{_BUILD}.package"


class PackagePipeline(Construct):
    """BuildPackage -> Built? -> EmitPackageReady -> Ready, or Refused; any failure -> MarkPackageFailed
    (the package shows the failure's message) -> PackageFailed."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        build_package: lambda_.IFunction,
        bus: events.IEventBus,
    ) -> None:
        super().__init__(scope, construct_id)

        failed = sfn.Fail(self, "PackageFailed", error="PackageFailed", cause="The package build failed")
        mark_failed = record_failure(
            self, "MarkPackageFailed", build_package, "package_id", unrecorded=failed
        )
        mark_failed.next(failed)
        readers = error_readers(self, "package_id", mark_failed)
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

        build = lambda_task(self, "BuildPackage", build_package, result_path=_BUILD)
        readers.catch(build)

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
        guard(emit, EVENTBRIDGE_TRANSIENT_ERRORS, readers.service_error)
        emit.next(sfn.Succeed(self, "Ready"))

        # A Choice has no Catch: an answer without the fields a branch reads must not fail the execution
        # unrecorded, so each branch is taken only when its fields are there.
        built = (
            sfn.Choice(self, "Built?")
            .when(
                sfn.Condition.and_(
                    sfn.Condition.is_present(f"{_BUILD}.refused"),
                    sfn.Condition.boolean_equals(f"{_BUILD}.refused", True),
                ),
                sfn.Succeed(self, "Refused"),
            )
            .when(sfn.Condition.is_present(f"{_PACKAGE}.sha256"), emit)
            .otherwise(no_answer)
        )

        self.state_machine = logged_state_machine(
            self,
            "PackagePipeline",
            build.next(built),
            timeout=Duration.hours(1),
        )
