"""Resources created from a synthesized CDK template carry its references resolved to local names."""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Iterator
from typing import Any

import pytest

from infra.local.cloud import LocalCloud
from infra.local.template import UnresolvedReferenceError

FOLDERS = ("register_environment", "ingest", "score", "build_artifact", "api")


@functools.cache
def small_stack_template() -> dict[str, Any]:
    """A stack with the shapes the real one uses: data bucket with notifications, tables, an event bus,
    a secret, two functions, a from_chainable state machine (LambdaInvoke, DynamoPutItem,
    EventBridgePutEvents), a Cognito pool and a REST API. Synthesized once per session (it takes seconds)."""
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


def stand_in_handlers() -> dict[str, Any]:
    return {folder: (lambda event, context: {"emitted": False}) for folder in FOLDERS}


def _logical_id(template: dict[str, Any], resource_type: str, prefix: str) -> str:
    return next(
        str(lid)
        for lid, resource in template["Resources"].items()
        if resource["Type"] == resource_type and lid.startswith(prefix)
    )


@pytest.fixture(scope="class")
def small_cloud() -> Iterator[LocalCloud]:
    with LocalCloud(small_stack_template(), handlers=stand_in_handlers()) as cloud:
        yield cloud


def _function_environment(cloud: LocalCloud, logical_prefix: str) -> dict[str, str]:
    name = next(name for lid, name in cloud.functions.items() if lid.startswith(logical_prefix))
    configuration = cloud.client("lambda").get_function_configuration(FunctionName=name)
    variables: dict[str, str] = configuration["Environment"]["Variables"]
    return variables


class TestSmallStack:
    """The small test stack, created once for the class."""

    def test_function_environment_names_the_resources_the_cloud_created(
        self, small_cloud: LocalCloud
    ) -> None:
        variables = _function_environment(small_cloud, "IngestFunction")
        runs_table = small_cloud.table_names[
            _logical_id(small_cloud.template.body, "AWS::DynamoDB::GlobalTable", "Runs")
        ]
        assert variables == {
            "POWERTOOLS_SERVICE_NAME": "ingest",
            "DATA_BUCKET": small_cloud.bucket,
            "RUNS_TABLE": runs_table,
            "DATASETS_TABLE": small_cloud.table_names[
                _logical_id(small_cloud.template.body, "AWS::DynamoDB::Table", "Datasets")
            ],
            "EVENT_BUS_NAME": "benchgen-test",
            "PROVIDER_SECRET_ARN": small_cloud.client("secretsmanager").list_secrets()["SecretList"][0][
                "ARN"
            ],
            "STATE_MACHINE_ARN": small_cloud.state_machine_arn,
        }

    def test_state_machine_definition_names_the_created_function_table_and_bus(
        self, small_cloud: LocalCloud
    ) -> None:
        described = small_cloud.client("stepfunctions").describe_state_machine(
            stateMachineArn=small_cloud.state_machine_arn
        )
        states = json.loads(described["definition"])["States"]
        build_arn = small_cloud.template.physical[
            _logical_id(small_cloud.template.body, "AWS::Lambda::Function", "BuildArtifactFunction")
        ].attributes["Arn"]
        assert states["BuildArtifact"]["Resource"] == build_arn
        assert states["SaveDataset"]["Parameters"]["TableName"].startswith("benchgen-local-Datasets")
        assert states["EmitDatasetSaved"]["Parameters"]["Entries"][0]["EventBusName"].endswith(
            ":event-bus/benchgen-test"
        )
        assert "Fn::" not in described["definition"] and '"Ref"' not in described["definition"]

    def test_bucket_notification_targets_the_function_with_the_template_filter(
        self, small_cloud: LocalCloud
    ) -> None:
        configuration = small_cloud.client("s3").get_bucket_notification_configuration(
            Bucket=small_cloud.bucket
        )
        (target,) = configuration["LambdaFunctionConfigurations"]
        assert target["LambdaFunctionArn"].endswith(
            ":function:"
            + small_cloud.functions[
                _logical_id(small_cloud.template.body, "AWS::Lambda::Function", "IngestFunction")
            ]
        )
        assert target["Filter"]["Key"]["FilterRules"] == [{"Name": "prefix", "Value": "submissions/"}]

    def test_table_key_schema_and_indexes_are_the_templates(self, small_cloud: LocalCloud) -> None:
        runs_id = _logical_id(small_cloud.template.body, "AWS::DynamoDB::GlobalTable", "Runs")
        table = small_cloud.client("dynamodb").describe_table(TableName=small_cloud.table_names[runs_id])[
            "Table"
        ]
        assert table["KeySchema"] == [{"AttributeName": "run_id", "KeyType": "HASH"}]
        assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
        assert [index["IndexName"] for index in table["GlobalSecondaryIndexes"]] == ["by_status"]

    def test_reference_to_an_unknown_resource_is_refused_with_its_logical_id(
        self, small_cloud: LocalCloud
    ) -> None:
        # given the small stack's state machine definition, extended with a reference to a missing table
        machine = _logical_id(small_cloud.template.body, "AWS::StepFunctions::StateMachine", "Pipeline")
        definition = copy.deepcopy(small_cloud.template.properties(machine)["DefinitionString"])
        definition["Fn::Join"][1].append({"Ref": "GhostTable1234"})

        # when it is resolved, then it is refused, naming the reference
        with pytest.raises(UnresolvedReferenceError, match="'GhostTable1234'"):
            small_cloud.template.resolve(definition)


@pytest.fixture(scope="class")
def real_cloud(stack_template: dict[str, Any]) -> Iterator[LocalCloud]:
    with LocalCloud(copy.deepcopy(stack_template), handlers=stand_in_handlers()) as cloud:
        yield cloud


class TestRealStack:
    """The application's own stack (infra.synth), created once for the class."""

    def test_real_stack_gives_every_function_the_same_resolved_settings(self, real_cloud: LocalCloud) -> None:
        expected = {
            "DATA_BUCKET": real_cloud.bucket,
            "ENVIRONMENTS_TABLE": "benchgen-local-EnvironmentsTable",
            "RUNS_TABLE": "benchgen-local-RunsTable",
            "DATASETS_TABLE": "benchgen-local-DatasetsTable",
            "IDEMPOTENCY_TABLE": "benchgen-local-IdempotencyTable",
            "EVENT_BUS_NAME": real_cloud.bus_name,
        }
        assert sorted(real_cloud.functions) == sorted(
            [
                "RegisterEnvironmentFunction",
                "IngestFunction",
                "ScoreFunction",
                "BuildArtifactFunction",
                "ApiFunction",
            ]
        )
        for logical_id in real_cloud.functions:
            variables = _function_environment(real_cloud, logical_id)
            assert {name: variables[name] for name in expected} == expected
        assert (
            _function_environment(real_cloud, "ScoreFunction")["STATE_MACHINE_ARN"]
            == real_cloud.state_machine_arn
        )
        assert real_cloud.conflicting_variables == []

    def test_real_stack_routes_each_upload_prefix_to_its_function(self, real_cloud: LocalCloud) -> None:
        configuration = real_cloud.client("s3").get_bucket_notification_configuration(
            Bucket=real_cloud.bucket
        )
        routed = {
            next(
                rule["Value"] for rule in target["Filter"]["Key"]["FilterRules"] if rule["Name"] == "prefix"
            ): (target["LambdaFunctionArn"].rsplit(":", 1)[-1])
            for target in configuration["LambdaFunctionConfigurations"]
        }
        assert routed == {
            "environments/": real_cloud.functions["RegisterEnvironmentFunction"],
            "submissions/": real_cloud.functions["IngestFunction"],
            "predictions/": real_cloud.functions["ScoreFunction"],
        }

    def test_real_stack_api_routes_are_the_contracts(self, real_cloud: LocalCloud) -> None:
        routes = {(route.method, route.resource) for route in real_cloud.routes()}
        assert {
            ("POST", "/environments"),
            ("GET", "/environments"),
            ("POST", "/runs"),
            ("GET", "/runs"),
            ("GET", "/runs/{run_id}"),
            ("GET", "/runs/{run_id}/files"),
            ("GET", "/runs/{run_id}/detailed-results"),
            ("GET", "/runs/{run_id}/config"),
            ("GET", "/datasets"),
            ("GET", "/datasets/{dataset_id}"),
            ("POST", "/runs/{run_id}/dataset"),
        } <= routes
        assert all(route.authorized for route in real_cloud.routes())

    def test_real_stack_state_machine_is_created_from_the_resolved_definition(
        self, real_cloud: LocalCloud
    ) -> None:
        described = real_cloud.client("stepfunctions").describe_state_machine(
            stateMachineArn=real_cloud.state_machine_arn
        )
        definition = json.loads(described["definition"])
        build = definition["States"]["BuildArtifact"]
        assert json.dumps(build).count(real_cloud.functions["BuildArtifactFunction"]) == 1
        assert "Fn::" not in described["definition"] and '"Ref"' not in described["definition"]
