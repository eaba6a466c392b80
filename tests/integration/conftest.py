"""The local cloud for integration tests: the synthesized stacks' resources on moto, and a small stack."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from benchgen.aws import wiring
from benchgen.settings import Settings, load_settings
from localcloud.callers import running_as
from localcloud.cloud import LocalCloud
from localcloud.model_server import ExampleModelServer
from tests.integration.factories import Answer, Call, api_context, proxy_event

EVENT_DRIVEN = ("register_environment", "ingest", "score", "build_artifact")


def _idle(event: Any, context: Any) -> None:
    return None


def _forget_outside_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    # A profile, an endpoint or a presign TTL from the developer's shell would change what the cloud does.
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "PRESIGN_TTL_SECONDS"):
        monkeypatch.delenv(name, raising=False)


def _empty(cloud: LocalCloud) -> None:
    """Leave the cloud as a fresh one holds its data: no item, no object version, no user.

    What a test leaves running finishes first, so that nothing it started writes after the emptying.
    """
    cloud.drain()
    dynamodb = cloud.client("dynamodb")
    for table in cloud.table_names.values():
        key_names = [
            key["AttributeName"] for key in dynamodb.describe_table(TableName=table)["Table"]["KeySchema"]
        ]
        for page in dynamodb.get_paginator("scan").paginate(
            TableName=table,
            ProjectionExpression=", ".join(f"#k{index}" for index in range(len(key_names))),
            ExpressionAttributeNames={f"#k{index}": name for index, name in enumerate(key_names)},
        ):
            for item in page["Items"]:
                dynamodb.delete_item(TableName=table, Key=item)
    s3 = cloud.client("s3")
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=cloud.bucket):
        for version in [*page.get("Versions", []), *page.get("DeleteMarkers", [])]:
            s3.delete_object(Bucket=cloud.bucket, Key=version["Key"], VersionId=version["VersionId"])
    cognito = cloud.client("cognito-idp")
    for page in cognito.get_paginator("list_users").paginate(UserPoolId=cloud.user_pool_id):
        for user in page["Users"]:
            cognito.admin_delete_user(UserPoolId=cloud.user_pool_id, Username=user["Username"])
    # The functions' cached settings and clients are made again, from what this test's environment says.
    wiring.reset()


@pytest.fixture(scope="module")
def _api_only_cloud(stack_templates: dict[str, dict[str, Any]]) -> Iterator[LocalCloud]:
    """One local cloud per test module whose event-driven functions do nothing (starting one takes
    seconds); each test that takes it gets it emptied, as a fresh one would be."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        _forget_outside_settings(monkeypatch)
        with LocalCloud(stack_templates, handlers=dict.fromkeys(EVENT_DRIVEN, _idle)) as started:
            yield started


@pytest.fixture
def api_cloud(_api_only_cloud: LocalCloud) -> Iterator[LocalCloud]:
    """An empty local cloud whose event-driven functions do nothing, for tests of the API through HTTP."""
    _empty(_api_only_cloud)
    yield _api_only_cloud
    _api_only_cloud.drain()


@pytest.fixture
def fresh_api_cloud(
    stack_templates: dict[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> Iterator[LocalCloud]:
    """A local cloud of the test's own, for what emptying does not reset: moto's training jobs and the
    provider clock's count of their reads."""
    _forget_outside_settings(monkeypatch)
    with LocalCloud(stack_templates, handlers=dict.fromkeys(EVENT_DRIVEN, _idle)) as started:
        yield started


@pytest.fixture
def aws(api_cloud: LocalCloud) -> Settings:
    """An empty local cloud whose event-driven functions do nothing, for tests of the API alone.

    Gives the settings every function reads (the same names the stack gives them).
    """
    return load_settings()


@pytest.fixture
def call(aws: Settings) -> Call:
    """The API function, called with a proxy event as API Gateway sends it (``factories.proxy_event``)."""
    from functions.api import handler as api_handler

    def invoke(method: str, path: str, **kwargs: Any) -> Answer:
        # As the API function: its calls are held to its role, as the API server's are.
        with running_as("api"):
            answer = api_handler.handler(proxy_event(method, path, **kwargs), api_context())
        return Answer(
            status=answer["statusCode"], body=json.loads(answer["body"]) if answer["body"] else None
        )

    return invoke


@pytest.fixture
def cloud(
    stack_templates: dict[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> Iterator[LocalCloud]:
    """A fresh local cloud running the real handlers: uploads flow through the whole pipeline."""
    _forget_outside_settings(monkeypatch)
    with LocalCloud(stack_templates) as started:
        yield started


SMALL_STACK = "LocalCloudTest"


@pytest.fixture(scope="session")
def small_stacks() -> dict[str, dict[str, Any]]:
    """One stack, by name as the local cloud takes an application's stacks, with the shapes the real ones
    use: data bucket with notifications, tables, an event bus, a secret, two functions, a from_chainable
    state machine (LambdaInvoke, DynamoPutItem, EventBridgePutEvents), a Cognito pool and a REST API.
    Synthesized once per session (it takes seconds), so tests share it: copy it before changing it."""
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
    stack = cdk.Stack(app, SMALL_STACK)
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
    # The local cloud holds each function to its role, as AWS does.
    machine.grant_start_execution(ingest)
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
    template: dict[str, Any] = app.synth().get_stack_by_name(SMALL_STACK).template
    return {SMALL_STACK: template}


@pytest.fixture
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    # Real backoff waits seconds; the local cloud really sleeps. Set before the first function starts.
    monkeypatch.setenv("MODEL_RETRY_BASE_SECONDS", "0.01")


@pytest.fixture
def models() -> Iterator[ExampleModelServer]:
    with ExampleModelServer() as server:
        yield server
