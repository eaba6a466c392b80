"""The local cloud for integration tests: the synthesized stack's resources on moto, and a small stack."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from benchgen.settings import Settings, load_settings
from infra.local.cloud import LocalCloud

EVENT_DRIVEN = ("register_environment", "ingest", "score", "build_artifact")


def _idle(event: Any, context: Any) -> None:
    return None


def _forget_outside_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    # A profile, an endpoint or a presign TTL from the developer's shell would change what the cloud does.
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "PRESIGN_TTL_SECONDS"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def aws(stack_template: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    """A fresh local cloud whose event-driven functions do nothing, for tests of the API alone.

    Yields the settings every function reads (the same names the stack gives them).
    """
    _forget_outside_settings(monkeypatch)
    with LocalCloud(stack_template, handlers=dict.fromkeys(EVENT_DRIVEN, _idle)):
        yield load_settings()


@pytest.fixture
def api_cloud(stack_template: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalCloud]:
    """A fresh local cloud whose event-driven functions do nothing, for tests of the API through HTTP."""
    _forget_outside_settings(monkeypatch)
    with LocalCloud(stack_template, handlers=dict.fromkeys(EVENT_DRIVEN, _idle)) as started:
        yield started


@pytest.fixture
def cloud(stack_template: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalCloud]:
    """A fresh local cloud running the real handlers: uploads flow through the whole pipeline."""
    _forget_outside_settings(monkeypatch)
    with LocalCloud(stack_template) as started:
        yield started


@pytest.fixture(scope="session")
def small_stack_template() -> dict[str, Any]:
    """A stack with the shapes the real one uses: data bucket with notifications, tables, an event bus,
    a secret, two functions, a from_chainable state machine (LambdaInvoke, DynamoPutItem,
    EventBridgePutEvents), a Cognito pool and a REST API. Synthesized once per session (it takes
    seconds), so tests share it: copy it before changing it."""
    import aws_cdk as cdk
    from aws_cdk import aws_apigateway as apigw
    from aws_cdk import aws_cognito as cognito
    from aws_cdk import aws_dynamodb as dynamodb
    from aws_cdk import aws_events as events
    from aws_cdk import aws_lambda as lambda_
    from aws_cdk import aws_s3 as s3
    from aws_cdk import aws_s3_notifications as s3n
    from aws_cdk import aws_secretsmanager as secretsmanager
    from aws_cdk import aws_stepfunctions as sfn
    from aws_cdk import aws_stepfunctions_tasks as tasks

    app = cdk.App(context={"aws:cdk:bundling-stacks": []})
    stack = cdk.Stack(app, "LocalCloudTest")
    bucket = s3.Bucket(stack, "DataBucket", versioned=True)
    string = dynamodb.AttributeType.STRING
    runs = dynamodb.TableV2(
        stack,
        "Runs",
        partition_key=dynamodb.Attribute(name="run_id", type=string),
        global_secondary_indexes=[
            dynamodb.GlobalSecondaryIndexPropsV2(
                index_name="by_status",
                partition_key=dynamodb.Attribute(name="status", type=string),
                sort_key=dynamodb.Attribute(name="created_at", type=string),
            )
        ],
    )
    datasets = dynamodb.Table(
        stack,
        "Datasets",
        partition_key=dynamodb.Attribute(name="dataset_id", type=string),
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        time_to_live_attribute="expires",
    )
    bus = events.EventBus(stack, "Bus", event_bus_name="benchgen-test")
    provider_keys = secretsmanager.Secret(stack, "ProviderKeys")

    def function(logical_id: str, folder: str) -> lambda_.Function:
        return lambda_.Function(
            stack,
            logical_id,
            runtime=lambda_.Runtime.PYTHON_3_12,
            handler="handler.handler",
            code=lambda_.Code.from_inline("def handler(event, context):\n    return event\n"),
            environment={
                "POWERTOOLS_SERVICE_NAME": folder,
                "DATA_BUCKET": bucket.bucket_name,
                "RUNS_TABLE": runs.table_name,
                "DATASETS_TABLE": datasets.table_name,
                "EVENT_BUS_NAME": bus.event_bus_name,
                "PROVIDER_SECRET_ARN": provider_keys.secret_arn,
            },
        )

    ingest = function("IngestFunction", "ingest")
    build = function("BuildArtifactFunction", "build_artifact")
    bucket.add_event_notification(
        s3.EventType.OBJECT_CREATED,
        s3n.LambdaDestination(ingest),
        s3.NotificationKeyFilter(prefix="submissions/"),
    )
    save = tasks.DynamoPutItem(
        stack,
        "SaveDataset",
        table=datasets,
        item={
            "dataset_id": tasks.DynamoAttributeValue.from_string(
                sfn.JsonPath.string_at("$.artifact.dataset_id")
            ),
            "example_count": tasks.DynamoAttributeValue.number_from_string(
                sfn.JsonPath.string_at("$.artifact.example_count")
            ),
        },
        condition_expression="attribute_not_exists(dataset_id)",
        result_path=sfn.JsonPath.DISCARD,
    )
    save.add_catch(sfn.Succeed(stack, "AlreadySaved"), errors=["DynamoDB.ConditionalCheckFailedException"])
    emit = tasks.EventBridgePutEvents(
        stack,
        "EmitDatasetSaved",
        entries=[
            tasks.EventBridgePutEventsEntry(
                event_bus=bus,
                source="benchgen",
                detail_type="DatasetSaved",
                detail=sfn.TaskInput.from_object(
                    {"dataset_id": sfn.JsonPath.string_at("$.artifact.dataset_id")}
                ),
            )
        ],
        result_path=sfn.JsonPath.DISCARD,
    )
    build_task = tasks.LambdaInvoke(
        stack, "BuildArtifact", lambda_function=build, payload_response_only=True, result_path="$.artifact"
    )
    machine = sfn.StateMachine(
        stack,
        "Pipeline",
        definition_body=sfn.DefinitionBody.from_chainable(
            build_task.next(save).next(emit).next(sfn.Succeed(stack, "Saved"))
        ),
    )
    ingest.add_environment("STATE_MACHINE_ARN", machine.state_machine_arn)
    pool = cognito.UserPool(stack, "Users")
    pool.add_client("Web", auth_flows=cognito.AuthFlow(user_password=True))
    api = apigw.LambdaRestApi(
        stack,
        "Api",
        handler=build,
        proxy=False,
        default_method_options=apigw.MethodOptions(
            authorizer=apigw.CognitoUserPoolsAuthorizer(stack, "Authorizer", cognito_user_pools=[pool]),
            authorization_type=apigw.AuthorizationType.COGNITO,
        ),
    )
    runs_resource = api.root.add_resource("runs")
    runs_resource.add_method("GET")
    runs_resource.add_resource("{run_id}").add_method("GET")
    template: dict[str, Any] = app.synth().get_stack_by_name("LocalCloudTest").template
    return template
