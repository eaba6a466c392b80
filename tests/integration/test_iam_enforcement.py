"""Each function and each state machine calls AWS under its own synthesized role, as on AWS: a grant taken
out of the template is a call refused, with AWS's error, on the local cloud.

The tests with a local cloud of their own come first: the module's shared one (``api_cloud``) lives from
its first test to the module's end, and one process runs one local cloud at a time."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from benchgen.aws.tables.runs import RunsRepo
from benchgen.bucket_layout import execution_name
from benchgen.outputs import RunOutput
from benchgen.records.runs import RunRecord, RunStatus
from examplegen.writing import write_bundle_zip
from functions.api import handler as api_handler
from localcloud.callers import running_as
from localcloud.cloud import LocalCloud
from localcloud.iam.actions import UnknownOperationError
from localcloud.stack_template import ACCOUNT_ID
from tests.integration.conftest import EVENT_DRIVEN, _idle
from tests.integration.factories import EXAMPLES, OWNER, api_context, example_submission, proxy_event


def without_grant(
    stacks: dict[str, dict[str, Any]], role: str, action: str, resource_part: str
) -> dict[str, dict[str, Any]]:
    """A copy of the application's ``stacks`` whose role ``role`` (a logical id) no longer has ``action``
    on the resources whose resolved form would contain ``resource_part`` (a table's or a prefix's name)."""
    changed = copy.deepcopy(stacks)
    removed = 0
    policies = (resource for template in changed.values() for resource in template["Resources"].values())
    for policy in policies:
        props = policy.get("Properties", {})
        if policy["Type"] != "AWS::IAM::Policy" or {"Ref": role} not in props.get("Roles", []):
            continue
        for statement in list(props["PolicyDocument"]["Statement"]):
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            resources = (
                statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            )
            kept = [item for item in resources if resource_part not in json.dumps(item)]
            if action in actions and len(kept) < len(resources):
                removed += 1
                statement["Action"] = [name for name in actions if name != action]
                props["PolicyDocument"]["Statement"].append(
                    {"Effect": "Allow", "Action": action, "Resource": kept} if kept else {}
                )
        props["PolicyDocument"]["Statement"] = [
            statement for statement in props["PolicyDocument"]["Statement"] if statement.get("Action")
        ]
    assert removed, f"{role} has no {action} on {resource_part}"
    return changed


@pytest.fixture
def quiet_functions_cloud(
    stack_templates: dict[str, dict[str, Any]], request: pytest.FixtureRequest
) -> Iterator[LocalCloud]:
    """A local cloud of the stacks the test asks for (``request.param``: role, action, resource part)."""
    role, action, resource_part = request.param
    stacks = without_grant(stack_templates, role, action, resource_part)
    with LocalCloud(stacks, handlers=dict.fromkeys(EVENT_DRIVEN, _idle)) as started:
        yield started


def _completed_run_with_detailed_results(cloud: LocalCloud, run_id: str) -> str:
    runs_table = next(name for lid, name in cloud.table_names.items() if lid.startswith("Runs"))
    key = f"runs/{run_id}/{RunOutput.DETAILED_JSON.file_name}"
    cloud.client("s3").put_object(Bucket=cloud.bucket, Key=key, Body=b'{"summary": {"total": 1}}')
    RunsRepo(runs_table).create(
        RunRecord(
            run_id=run_id,
            environment_id="gsm8k-en",
            environment_version="v1",
            model="m",
            owner=OWNER,
            status=RunStatus.COMPLETED,
            files={RunOutput.DETAILED_JSON: key},
        )
    )
    return key


def _detailed_results(run_id: str) -> dict[str, Any]:
    event = proxy_event(
        "GET",
        f"/runs/{run_id}/detailed-results",
        resource="/runs/{run_id}/detailed-results",
        path_parameters={"run_id": run_id},
    )
    with running_as("api"):
        answer: dict[str, Any] = api_handler.handler(event, api_context())
    return answer


@pytest.mark.parametrize(
    "quiet_functions_cloud", [("ApiFunctionRole", "s3:GetObject", "/runs/*")], indirect=True
)
def test_the_api_without_its_read_of_run_files_answers_500_refused_in_aws_words(
    quiet_functions_cloud: LocalCloud,
) -> None:
    # given an API function whose role lost s3:GetObject on runs/*, and a completed run with its results
    key = _completed_run_with_detailed_results(quiet_functions_cloud, "run-denied")

    # when its owner asks for the run's detailed results
    answer = _detailed_results("run-denied")

    # then the API fails as it would on AWS, refused in AWS's words
    assert answer["statusCode"] == 500
    assert quiet_functions_cloud.iam.refusals == [
        f"User: arn:aws:sts::{ACCOUNT_ID}:assumed-role/benchgen-local-ApiFunctionRole/"
        f"{quiet_functions_cloud.functions['ApiFunction']} is not authorized to perform: s3:GetObject on "
        f"resource: arn:aws:s3:::{quiet_functions_cloud.bucket}/{key} because no identity-based policy "
        "allows the s3:GetObject action"
    ]


@pytest.mark.parametrize(
    "quiet_functions_cloud", [("ApiFunctionRole", "s3:PutObject", "/environments/*")], indirect=True
)
def test_the_api_without_its_write_of_bundles_signs_no_upload_url_for_one(
    quiet_functions_cloud: LocalCloud,
) -> None:
    # given an API function whose role lost s3:PutObject on environments/*
    event = proxy_event("POST", "/environments", body={"environment_id": "gsm8k", "version": "1"})

    # when a publisher asks for a bundle's upload URL
    with running_as("api"):
        answer = api_handler.handler(event, api_context())

    # then no URL is handed out that S3 would refuse, and the refusal names the signing role
    assert answer["statusCode"] == 500
    (refusal,) = quiet_functions_cloud.iam.refusals
    assert refusal.startswith(f"User: arn:aws:sts::{ACCOUNT_ID}:assumed-role/benchgen-local-ApiFunctionRole/")
    bundle = f"arn:aws:s3:::{quiet_functions_cloud.bucket}/environments/gsm8k/1/bundle.zip"
    assert (
        f"perform: s3:PutObject on resource: {bundle} because no identity-based policy allows the "
        "s3:PutObject action"
    ) in refusal


def test_a_state_machine_without_its_grant_to_announce_the_dataset_fails_the_execution_with_access_denied(
    stack_templates: dict[str, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given an artifact pipeline whose role lost events:PutEvents on the event bus
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    stacks = without_grant(
        stack_templates, "PipelineStateMachineRole61BEBDFF", "events:PutEvents", "EventBus"
    )
    with LocalCloud(stacks) as cloud:
        archive = write_bundle_zip(EXAMPLES / "gsm8k-en" / "bundle", tmp_path / "bundle.zip")
        s3 = cloud.client("s3")
        s3.put_object(
            Bucket=cloud.bucket, Key="environments/gsm8k-en/v1/bundle.zip", Body=archive.read_bytes()
        )
        cloud.settle()

        # when a run of an environment that emits an artifact completes
        submission = example_submission("gsm8k-en")
        s3.put_object(
            Bucket=cloud.bucket,
            Key=f"submissions/run-sm/{submission.name}",
            Body=submission.read_bytes(),
            Metadata={"environment": "gsm8k-en", "version": "v1", "model": "m"},
        )
        execution = cloud.wait_for_execution(execution_name("run-sm"))

        # then its execution failed announcing the dataset, refused in AWS's words for the machine's role
        history = cloud.client("stepfunctions").get_execution_history(executionArn=execution["executionArn"])
        failures = [
            event["taskFailedEventDetails"] for event in history["events"] if event["type"] == "TaskFailed"
        ]
        assert execution["status"] == "FAILED"
        assert len(failures) == 1, history["events"]
        assert "is not authorized to perform: events:PutEvents on resource: " in failures[0]["cause"]
        assert "assumed-role/benchgen-local-PipelineStateMachineRole61BEBDFF/" in failures[0]["cause"]


def test_the_api_with_its_synthesized_role_reads_run_files(api_cloud: LocalCloud) -> None:
    # given the API function's role as synthesized, and a completed run with its detailed results
    _completed_run_with_detailed_results(api_cloud, "run-allowed")

    # when its owner asks for them
    answer = _detailed_results("run-allowed")

    # then they are read, and the reads were checked against the API's role
    assert answer["statusCode"] == 200, answer["body"]
    assert json.loads(answer["body"])["summary"] == {"total": 1}
    assert api_cloud.iam.checked > 0 and api_cloud.iam.refusals == []


def test_the_sandbox_functions_role_is_refused_every_call(api_cloud: LocalCloud) -> None:
    # given the sandbox function's role as synthesized (it grants nothing)
    s3, dynamodb = api_cloud.client("s3"), api_cloud.client("dynamodb")
    table = next(iter(api_cloud.table_names.values()))

    # when the sandbox reads an object, scans a table and, from a thread it started, lists the bucket
    with running_as("sandbox"):
        with pytest.raises(ClientError) as read:
            s3.get_object(Bucket=api_cloud.bucket, Key="environments/any/v1/bundle.zip")
        with pytest.raises(ClientError) as scan:
            dynamodb.scan(TableName=table)
        with ThreadPoolExecutor(max_workers=1) as pool:
            listed = pool.submit(s3.list_objects_v2, Bucket=api_cloud.bucket)
            with pytest.raises(ClientError) as listing:
                listed.result()

    # then each is refused as AWS refuses it, naming the sandbox's role
    assert read.value.response["Error"]["Code"] == "AccessDenied"
    assert "because no identity-based policy allows the s3:GetObject action" in str(read.value)
    assert scan.value.response["Error"]["Code"] == "AccessDeniedException"
    assert (
        f"perform: dynamodb:Scan on resource: arn:aws:dynamodb:us-east-1:{ACCOUNT_ID}:table/{table}"
        in str(scan.value)
    )
    assert "assumed-role/benchgen-local-SandboxFunctionRole/" in str(listing.value)
    assert "s3:ListBucket" in str(listing.value)


def test_the_operator_is_not_checked_and_an_operation_with_no_known_action_is_refused(
    api_cloud: LocalCloud,
) -> None:
    # given the local cloud's operator (tests, the command line) and the API function
    s3 = api_cloud.client("s3")
    checked = api_cloud.iam.checked

    # when the operator lists the bucket, and the API function calls an operation the table does not map
    s3.list_objects_v2(Bucket=api_cloud.bucket)
    with running_as("api"), pytest.raises(UnknownOperationError) as unknown:
        s3.get_bucket_policy(Bucket=api_cloud.bucket)

    # then the operator's call was not checked, and the unknown operation was refused, saying what to do
    assert api_cloud.iam.checked == checked
    assert str(unknown.value).startswith(
        "the local cloud knows no IAM action for s3:GetBucketPolicy: add it to"
    )
