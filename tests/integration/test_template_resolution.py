"""Resources created from a synthesized CDK template carry its references resolved to local names."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from localcloud.cloud import LocalCloud
from localcloud.stack_template import UnresolvedReferenceError, function_folders


def stand_in_handlers() -> dict[str, Any]:
    return {folder: (lambda event, context: {"emitted": False}) for folder in function_folders()}


def _logical_id(template: dict[str, Any], resource_type: str, prefix: str) -> str:
    return next(
        str(lid)
        for lid, resource in template["Resources"].items()
        if resource["Type"] == resource_type and lid.startswith(prefix)
    )


@pytest.fixture(scope="class")
def small_cloud(small_stacks: dict[str, dict[str, Any]]) -> Iterator[LocalCloud]:
    with LocalCloud(small_stacks, handlers=stand_in_handlers()) as cloud:
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
def real_cloud(stack_templates: dict[str, dict[str, Any]]) -> Iterator[LocalCloud]:
    with LocalCloud(stack_templates, handlers=stand_in_handlers()) as cloud:
        yield cloud


class TestRealStack:
    """The application's own stacks (infra.synth), created once for the class."""

    def test_real_stack_gives_every_function_the_same_resolved_settings(self, real_cloud: LocalCloud) -> None:
        expected = {
            "DATA_BUCKET": real_cloud.bucket,
            "ENVIRONMENTS_TABLE": "benchgen-local-EnvironmentsTable",
            "RUNS_TABLE": "benchgen-local-RunsTable",
            "DATASETS_TABLE": "benchgen-local-DatasetsTable",
            "IDEMPOTENCY_TABLE": "benchgen-local-IdempotencyTable",
            "PACKAGES_TABLE": "benchgen-local-PackagesTable",
            "EVENT_BUS_NAME": real_cloud.bus_name,
        }
        assert sorted(real_cloud.functions) == sorted(
            [
                "RegisterEnvironmentFunction",
                "IngestFunction",
                "ScoreFunction",
                "BuildArtifactFunction",
                "ScoreShardFunction",
                "BuildShardArtifactFunction",
                "ReduceScoresFunction",
                "BuildPackageFunction",
                "DeadLettersFunction",
                "ApiFunction",
                "SandboxFunction",
                "SandboxScientificFunction",
                "SandboxLegacyFunction",
                "DeployModelFunction",
                "PlanInferenceFunction",
                "InferShardFunction",
                "AssemblePredictionsFunction",
                "PlanJudgingFunction",
                "JudgeShardFunction",
                "AssembleJudgmentsFunction",
                "AssembleCalibrationFunction",
                "SubmitBatchFunction",
                "PollBatchFunction",
                "AssembleBatchFunction",
                "PrepareGenerateFunction",
                "PrepareCheckFunction",
                "ValidateTrainingFunction",
                "UploadTrainingFunction",
                "TrainingJobFunction",
                "StartEvaluationFunction",
                "CheckEvaluationFunction",
                "CompareEvaluationFunction",
            ]
        )
        for logical_id in real_cloud.functions:
            variables = _function_environment(real_cloud, logical_id)
            if logical_id.startswith("Sandbox"):  # it runs untrusted code: no resource is named to it
                assert set(variables) == {"POWERTOOLS_SERVICE_NAME"}
                continue
            assert {name: variables[name] for name in expected} == expected
        assert (
            _function_environment(real_cloud, "ScoreFunction")["STATE_MACHINE_ARN"]
            == real_cloud.state_machine_arn
        )
        assert real_cloud.conflicting_variables == []
        # and Bedrock's batch role, which the submit step hands to Bedrock, resolves to its ARN
        assert re.fullmatch(
            r"arn:aws:iam::\d{12}:role/benchgen-local-BedrockBatchRole",
            _function_environment(real_cloud, "SubmitBatchFunction")["BEDROCK_BATCH_ROLE_ARN"],
        )

    def test_the_api_stacks_function_reaches_the_pipelines_and_the_data_of_the_stacks_before_it(
        self, real_cloud: LocalCloud
    ) -> None:
        # Given the application provisioned from its four stacks, the api function in the API stack
        variables = _function_environment(real_cloud, "ApiFunction")
        # Then the state machines it starts, in the pipelines stack, are the ones the cloud created
        machines = real_cloud.state_machine_arns
        assert {
            variable: variables[variable]
            for variable in (
                "PREPARATION_STATE_MACHINE_ARN",
                "PACKAGE_STATE_MACHINE_ARN",
                "INFERENCE_STATE_MACHINE_ARN",
                "TRAINING_STATE_MACHINE_ARN",
                "EVALUATION_STATE_MACHINE_ARN",
            )
        } == {
            "PREPARATION_STATE_MACHINE_ARN": machines["PreparationPipeline"],
            "PACKAGE_STATE_MACHINE_ARN": machines["PackagePipeline"],
            "INFERENCE_STATE_MACHINE_ARN": machines["InferencePipeline"],
            "TRAINING_STATE_MACHINE_ARN": machines["TrainingPipeline"],
            "EVALUATION_STATE_MACHINE_ARN": machines["EvaluationPipeline"],
        }
        # and the table and bucket it imports from the data stack are the ones the other functions use
        assert (variables["RUNS_TABLE"], variables["DATA_BUCKET"]) == (
            real_cloud.table_names["RunsTable"],
            real_cloud.bucket,
        )

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
            "batch-output/": real_cloud.functions["AssembleBatchFunction"],
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
