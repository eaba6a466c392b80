"""Monitoring: alarms on failed runs, failed steps and dead letters notify an encrypted topic; a dashboard."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

Resource = dict[str, Any]
NAMES = [
    "register_environment",
    "ingest",
    "score",
    "build_artifact",
    "api",
    "prepare_generate",
    "prepare_check",
    "build_package",
]
THIS_ACCOUNT_ONLY = {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}
ABOVE_ZERO = {"Threshold": 0, "ComparisonOperator": "GreaterThanThreshold", "EvaluationPeriods": 1}


@pytest.fixture(scope="module")
def assertions(template: dict[str, Any]) -> Any:
    from aws_cdk.assertions import Template

    return Template.from_json(template)


@pytest.fixture(scope="module")
def topic_id(of_type: Callable[[str], dict[str, Resource]]) -> str:
    (logical_id,) = of_type("AWS::SNS::Topic")
    return logical_id


def _notifying(topic_id: str) -> dict[str, Any]:
    return {"AlarmActions": [{"Ref": topic_id}], "OKActions": [{"Ref": topic_id}]}


@pytest.mark.parametrize("service", ["ingest", "score"])
def test_a_failed_run_raises_the_failed_runs_alarm(service: str, assertions: Any, topic_id: str) -> None:
    # The ingest and score functions record RunFailed in the BenchGen namespace, with their service name
    # as dimension
    assertions.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "BenchGen",
            "MetricName": "RunFailed",
            "Dimensions": [{"Name": "service", "Value": service}],
            "Statistic": "Sum",
            "Period": 300,
            "TreatMissingData": "notBreaching",
            **ABOVE_ZERO,
            **_notifying(topic_id),
        },
    )


@pytest.mark.parametrize("name", NAMES)
def test_an_error_in_any_function_raises_its_alarm(
    name: str, assertions: Any, function_ids: dict[str, str], topic_id: str
) -> None:
    assertions.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "AWS/Lambda",
            "MetricName": "Errors",
            "Dimensions": [{"Name": "FunctionName", "Value": {"Ref": function_ids[name]}}],
            "Statistic": "Sum",
            **ABOVE_ZERO,
            **_notifying(topic_id),
        },
    )


@pytest.mark.parametrize("name", NAMES)
def test_one_message_in_a_functions_dead_letter_queue_raises_its_alarm(
    name: str, assertions: Any, functions: dict[str, Resource], topic_id: str
) -> None:
    # Given the queue the function's failed asynchronous events go to
    queue_id = functions[name]["Properties"]["DeadLetterConfig"]["TargetArn"]["Fn::GetAtt"][0]

    # Then one message sent to it in a minute alarms (counted on arrival: the dead-letter consumer deletes
    # the messages it settles before a depth sample would see them)
    assertions.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "AWS/SQS",
            "MetricName": "NumberOfMessagesSent",
            "Dimensions": [{"Name": "QueueName", "Value": {"Fn::GetAtt": [queue_id, "QueueName"]}}],
            "Statistic": "Sum",
            "Period": 60,
            **ABOVE_ZERO,
            **_notifying(topic_id),
        },
    )


@pytest.mark.parametrize(
    "machine_id", ["ArtifactPipeline", "PreparationPipeline", "PackagePipeline", "InferencePipeline"]
)
@pytest.mark.parametrize("metric", ["ExecutionsFailed", "ExecutionsTimedOut"])
def test_a_failed_or_timed_out_pipeline_execution_raises_an_alarm(
    metric: str, machine_id: str, assertions: Any, topic_id: str
) -> None:
    assertions.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "AWS/States",
            "MetricName": metric,
            "Dimensions": [{"Name": "StateMachineArn", "Value": {"Ref": machine_id}}],
            "Statistic": "Sum",
            **ABOVE_ZERO,
            **_notifying(topic_id),
        },
    )


def test_every_alarm_notifies_the_topic(of_type: Callable[[str], dict[str, Resource]], topic_id: str) -> None:
    alarms = of_type("AWS::CloudWatch::Alarm").values()
    assert alarms
    assert [a["Properties"]["AlarmActions"] for a in alarms] == [[{"Ref": topic_id}]] * len(alarms)


def test_the_alarm_topic_is_encrypted_with_a_key_cloudwatch_may_use_and_refuses_plain_http(
    assertions: Any, topic_id: str
) -> None:
    from aws_cdk.assertions import Capture, Match

    # Given the topic's customer-managed key
    key = Capture()
    assertions.has_resource_properties("AWS::SNS::Topic", {"KmsMasterKeyId": {"Fn::GetAtt": [key, "Arn"]}})

    # Then the key rotates and lets CloudWatch (of this account only) encrypt what its alarms publish
    assertions.has_resource(
        "AWS::KMS::Key",
        {
            "Properties": {
                "EnableKeyRotation": True,
                "KeyPolicy": {
                    "Statement": Match.array_with(
                        [
                            {
                                "Effect": "Allow",
                                "Principal": {"Service": "cloudwatch.amazonaws.com"},
                                "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
                                "Resource": "*",
                                "Condition": THIS_ACCOUNT_ONLY,
                            }
                        ]
                    )
                },
            }
        },
    )
    assert key.as_string().startswith("MonitoringAlarmTopicKey")
    # And publishing without TLS is denied
    assertions.has_resource_properties(
        "AWS::SNS::TopicPolicy",
        {
            "Topics": [{"Ref": topic_id}],
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Effect": "Deny",
                                "Action": "sns:Publish",
                                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                            }
                        )
                    ]
                )
            },
        },
    )


def test_the_dashboard_shows_runs_executions_alarms_function_health_and_dead_letters(
    of_type: Callable[[str], dict[str, Resource]],
    render: Callable[[Any], str],
    function_ids: dict[str, str],
) -> None:
    names = list(function_ids)
    # Given the dashboard body, references rendered as ${LogicalId}
    (dashboard,) = of_type("AWS::CloudWatch::Dashboard").values()
    body = json.loads(render(dashboard["Properties"]["DashboardBody"]))
    widgets = {widget["properties"]["title"]: widget["properties"] for widget in body["widgets"]}

    # Then it graphs finished runs, executions, each function's errors, throttles and duration, and the queues
    assert list(widgets) == [
        "Runs",
        "State machine executions",
        "Alarms",
        "Function errors",
        "Function throttles",
        "Function duration (p99)",
        "Dead-letter queue depth",
    ]
    assert [m[:4] for m in widgets["Runs"]["metrics"]] == [
        ["BenchGen", "RunCompleted", "service", "score"],
        ["BenchGen", "RunFailed", "service", "ingest"],
        ["BenchGen", "RunFailed", "service", "score"],
    ]
    every_function = [f"${{{function_ids[name]}}}" for name in names]
    for title, metric in [
        ("Function errors", "Errors"),
        ("Function throttles", "Throttles"),
        ("Function duration (p99)", "Duration"),
    ]:
        assert [m[:4] for m in widgets[title]["metrics"]] == [
            ["AWS/Lambda", metric, "FunctionName", function] for function in every_function
        ]
    # every function invoked asynchronously has a queue; the sandboxes and the dead-letter consumer are only
    # ever invoked synchronously
    queued = [name for name in names if not name.startswith("sandbox") and name != "dead_letters"]
    assert [m[4]["label"] for m in widgets["Dead-letter queue depth"]["metrics"]] == queued
    assert len(widgets["Alarms"]["alarms"]) == len(of_type("AWS::CloudWatch::Alarm"))


def test_the_stack_outputs_the_alarm_topic_and_the_dashboard(
    assertions: Any, topic_id: str, of_type: Callable[[str], dict[str, Resource]]
) -> None:
    (dashboard_id,) = of_type("AWS::CloudWatch::Dashboard")
    assertions.has_output("AlarmTopicArn", {"Value": {"Ref": topic_id}})
    assertions.has_output("DashboardName", {"Value": {"Ref": dashboard_id}})
