"""LocalCloud on a small synthesized stack: uploads reach handlers, the state machine really runs."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import pytest

from localcloud.auth import TokenVerifier
from localcloud.cloud import LocalCloud
from localcloud.deploy_checks import DeployRefusedError
from localcloud.stack_template import UnresolvedReferenceError


class StandIns:
    """Stand-in handlers: ingest starts the pipeline as score does; build_artifact returns a dataset."""

    def __init__(self) -> None:
        self.ingest_events: list[Any] = []
        self.settings_seen: list[str | None] = []
        self.build_delay_s = 0.0

    def ingest(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        self.ingest_events.append(event)
        self.settings_seen.append(os.environ.get("DATA_BUCKET"))
        key = event["Records"][0]["s3"]["object"]["key"]
        run_id = key.split("%2F")[1]
        boto3.client("stepfunctions").start_execution(
            stateMachineArn=os.environ["STATE_MACHINE_ARN"],
            name=f"run-{run_id}",
            input=json.dumps({"run_id": run_id}),
        )
        return {"started": run_id}

    def build_artifact(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        time.sleep(self.build_delay_s)
        return {"dataset_id": f"ds-{event['run_id']}", "example_count": "200"}

    def handlers(self) -> dict[str, Any]:
        return {"ingest": self.ingest, "build_artifact": self.build_artifact}


@pytest.fixture
def stand_ins() -> StandIns:
    return StandIns()


@pytest.fixture
def cloud(stand_ins: StandIns, small_stacks: dict[str, dict[str, Any]]) -> Iterator[LocalCloud]:
    with LocalCloud(small_stacks, handlers=stand_ins.handlers()) as started:
        yield started


def _datasets_table(cloud: LocalCloud) -> str:
    return next(name for lid, name in cloud.table_names.items() if lid.startswith("Datasets"))


def test_upload_under_the_trigger_prefix_runs_the_handler_with_the_s3_notification(
    cloud: LocalCloud, stand_ins: StandIns
) -> None:
    # when a submission is uploaded to the data bucket
    cloud.client("s3").put_object(Bucket=cloud.bucket, Key="submissions/r1/my preds.zip", Body=b"zip")
    cloud.settle()

    # then the ingest handler ran with the S3 record, the key URL-encoded as S3 sends it
    (event,) = stand_ins.ingest_events
    record = event["Records"][0]
    assert record["eventSource"] == "aws:s3"
    assert record["eventName"] == "ObjectCreated:Put"
    assert record["s3"]["bucket"]["name"] == cloud.bucket
    assert record["s3"]["object"]["key"] == "submissions%2Fr1%2Fmy+preds.zip"
    assert record["s3"]["object"]["size"] == 3
    # and it read its settings from the environment, as in Lambda
    assert stand_ins.settings_seen == [cloud.bucket]


def test_upload_outside_the_trigger_prefix_runs_nothing(cloud: LocalCloud, stand_ins: StandIns) -> None:
    cloud.client("s3").put_object(Bucket=cloud.bucket, Key="runs/r1/scores.json", Body=b"{}")
    cloud.settle()
    assert stand_ins.ingest_events == []


def test_pipeline_started_by_a_handler_runs_to_succeeded_and_saves_the_dataset(cloud: LocalCloud) -> None:
    # when an upload makes the handler start the state machine
    cloud.client("s3").put_object(Bucket=cloud.bucket, Key="submissions/r2/preds.zip", Body=b"zip")
    described = cloud.wait_for_execution("run-r2", timeout=20)

    # then it succeeded and its DynamoPutItem stored the dataset the Lambda task returned
    assert described["status"] == "SUCCEEDED"
    item = cloud.client("dynamodb").get_item(
        TableName=_datasets_table(cloud), Key={"dataset_id": {"S": "ds-r2"}}
    )
    assert item["Item"] == {"dataset_id": {"S": "ds-r2"}, "example_count": {"N": "200"}}


def test_second_execution_for_the_same_run_is_caught_as_already_saved(cloud: LocalCloud) -> None:
    # given a run whose dataset was saved
    sfn = cloud.client("stepfunctions")
    sfn.start_execution(stateMachineArn=cloud.state_machine_arn, name="first", input='{"run_id": "r3"}')
    assert cloud.wait_for_execution("first", timeout=20)["status"] == "SUCCEEDED"

    # when the pipeline runs again for it
    sfn.start_execution(stateMachineArn=cloud.state_machine_arn, name="second", input='{"run_id": "r3"}')
    described = cloud.wait_for_execution("second", timeout=20)

    # then the conditional write's failure is caught and there is still one dataset
    assert described["status"] == "SUCCEEDED"
    history = sfn.get_execution_history(executionArn=described["executionArn"])["events"]
    entered = [e["stateEnteredEventDetails"]["name"] for e in history if "stateEnteredEventDetails" in e]
    assert entered[-1] == "AlreadySaved"
    items = cloud.client("dynamodb").scan(TableName=_datasets_table(cloud))["Items"]
    assert [item["dataset_id"]["S"] for item in items] == ["ds-r3"]


def test_drain_waits_for_running_executions(cloud: LocalCloud, stand_ins: StandIns) -> None:
    # given an execution still busy in its Lambda task
    stand_ins.build_delay_s = 0.5
    cloud.client("stepfunctions").start_execution(
        stateMachineArn=cloud.state_machine_arn, name="slow", input='{"run_id": "r4"}'
    )

    # when the cloud is drained
    left = cloud.drain(timeout=20)

    # then nothing is left running and the execution finished
    assert left == []
    assert cloud.wait_for_execution("slow", timeout=1)["status"] == "SUCCEEDED"


def test_created_user_gets_an_id_token_for_the_pool_and_client(cloud: LocalCloud) -> None:
    token = cloud.create_user("alice", "Correct-Horse-42!")

    verifier = TokenVerifier(user_pool_id=cloud.user_pool_id, client_id=cloud.client_id, jwks=cloud.jwks())
    claims = verifier.verify(token)
    assert claims["cognito:username"] == "alice"
    assert claims["token_use"] == "id"


def test_stopping_restores_the_process_environment(
    stand_ins: StandIns, monkeypatch: pytest.MonkeyPatch, small_stacks: dict[str, dict[str, Any]]
) -> None:
    # given a process with its own DATA_BUCKET and no RUNS_TABLE
    monkeypatch.setenv("DATA_BUCKET", "my-own-bucket")
    monkeypatch.delenv("RUNS_TABLE", raising=False)

    # when a local cloud starts and stops
    with LocalCloud(small_stacks, handlers=stand_ins.handlers()) as started:
        inside = (os.environ["DATA_BUCKET"], os.environ["RUNS_TABLE"])

    # then the cloud's settings were visible only while it ran
    assert inside == (
        started.bucket,
        next(n for lid, n in started.table_names.items() if lid.startswith("Runs")),
    )
    assert os.environ["DATA_BUCKET"] == "my-own-bucket"
    assert "RUNS_TABLE" not in os.environ


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_server_mode_serves_other_clients_and_runs_the_pipeline(
    stand_ins: StandIns, small_stacks: dict[str, dict[str, Any]]
) -> None:
    # given the local cloud in server mode on a free port
    port = _free_port()
    with LocalCloud(small_stacks, mode="server", port=port, handlers=stand_ins.handlers()) as server:
        # when a separate client (as the AWS CLI would) uploads a submission through the endpoint
        outside = boto3.client(
            "s3",
            endpoint_url=f"http://127.0.0.1:{port}",
            region_name="us-east-1",
            aws_access_key_id="x",
            aws_secret_access_key="x",
        )
        outside.put_object(Bucket=server.bucket, Key="submissions/r5/p.zip", Body=b"z")
        described = server.wait_for_execution("run-r5", timeout=20)

    # then the handler ran inside the server and the state machine reached the other services on the port
    assert server.endpoint_url == f"http://127.0.0.1:{port}"
    assert len(stand_ins.ingest_events) == 1
    assert described["status"] == "SUCCEEDED"


def test_start_refuses_an_unresolvable_reference_and_leaves_the_process_as_it_was(
    stand_ins: StandIns, monkeypatch: pytest.MonkeyPatch, small_stacks: dict[str, dict[str, Any]]
) -> None:
    # given a template whose state machine refers to a table that is not in it
    monkeypatch.delenv("DATA_BUCKET", raising=False)
    stacks = copy.deepcopy(small_stacks)
    (template,) = stacks.values()
    machine = next(
        lid for lid, res in template["Resources"].items() if res["Type"] == "AWS::StepFunctions::StateMachine"
    )
    template["Resources"][machine]["Properties"]["DefinitionString"]["Fn::Join"][1].append(
        {"Ref": "GhostTable1234"}
    )

    # when the cloud starts, then it refuses, naming the reference
    with pytest.raises(UnresolvedReferenceError, match="'GhostTable1234'"):
        LocalCloud(stacks, handlers=stand_ins.handlers()).start()

    # and it left no settings behind, and another cloud can start after it
    assert "DATA_BUCKET" not in os.environ
    with LocalCloud(small_stacks, handlers=stand_ins.handlers()) as cloud:
        assert cloud.state_machine_arn.endswith(":stateMachine:benchgen-local-" + machine)


def test_start_refuses_a_template_aws_would_not_deploy_in_aws_words_before_creating_anything(
    stand_ins: StandIns, small_stacks: dict[str, dict[str, Any]]
) -> None:
    # given a template where the ingest function (60 s) consumes a queue that hides a message for 30 s
    stacks = copy.deepcopy(small_stacks)
    ((stack, template),) = stacks.items()
    resources = template["Resources"]
    ingest = next(
        lid
        for lid, res in resources.items()
        if lid.startswith("IngestFunction") and res["Type"] == "AWS::Lambda::Function"
    )
    resources[ingest]["Properties"]["Timeout"] = 60
    resources["Jobs"] = {"Type": "AWS::SQS::Queue", "Properties": {}}
    resources["IngestJobs"] = {
        "Type": "AWS::Lambda::EventSourceMapping",
        "Properties": {"EventSourceArn": {"Fn::GetAtt": ["Jobs", "Arn"]}, "FunctionName": {"Ref": ingest}},
    }
    cloud = LocalCloud(stacks, handlers=stand_ins.handlers())

    # when the cloud starts, then it refuses as Lambda would, naming the stack and the mapping
    with pytest.raises(DeployRefusedError) as refused:
        cloud.start()
    assert [str(refusal) for refusal in refused.value.refusals] == [
        f"{stack} IngestJobs: Queue visibility timeout: 30 seconds is less than Function timeout: 60 seconds"
    ]
    # and it created nothing
    assert (cloud.bucket, cloud.functions, cloud.table_names) == ("", {}, {})


def test_of_two_concurrent_conditional_writes_to_one_item_exactly_one_succeeds(
    cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given an item, and two writers that each read it before either writes (forced by a barrier in
    # moto's condition check, which gives up after a moment if only one writer can get there)
    import moto.dynamodb.models as dynamodb_models

    dynamodb = cloud.client("dynamodb")
    table = _datasets_table(cloud)
    dynamodb.put_item(TableName=table, Item={"dataset_id": {"S": "ds-1"}, "state": {"S": "Pending"}})
    meet = threading.Barrier(2, timeout=0.5)
    # Where moto defines it; the models module uses it under the same name, and is where it is replaced.
    from moto.dynamodb.comparisons import create_condition_expression_parser as parser

    def meeting_the_other_writer(*args: Any, **kwargs: Any) -> Any:
        with contextlib.suppress(threading.BrokenBarrierError):
            meet.wait()
        return parser(*args, **kwargs)

    monkeypatch.setattr(dynamodb_models, "create_condition_expression_parser", meeting_the_other_writer)

    def claim(writer: str) -> bool:
        try:
            dynamodb.update_item(
                TableName=table,
                Key={"dataset_id": {"S": "ds-1"}},
                UpdateExpression="SET #s = :taken, holder = :writer",
                ConditionExpression="#s = :pending",
                ExpressionAttributeNames={"#s": "state"},
                ExpressionAttributeValues={
                    ":pending": {"S": "Pending"},
                    ":taken": {"S": "Taken"},
                    ":writer": {"S": writer},
                },
            )
        except dynamodb.exceptions.ConditionalCheckFailedException:
            return False
        return True

    # when both try to move it from Pending at the same time
    with ThreadPoolExecutor(max_workers=2) as pool:
        won = list(pool.map(claim, ("a", "b")))

    # then one wins and the other's condition fails, as on DynamoDB
    assert sorted(won) == [False, True]


def test_concurrent_updates_adding_keys_to_one_items_map_all_land(cloud: LocalCloud) -> None:
    # given an item with a map, as a live run's record holds one count per shard
    dynamodb = cloud.client("dynamodb")
    table = _datasets_table(cloud)
    dynamodb.put_item(TableName=table, Item={"dataset_id": {"S": "ds-1"}, "counts": {"M": {}}})

    def add(writer: int) -> None:
        for number in range(40):
            dynamodb.update_item(
                TableName=table,
                Key={"dataset_id": {"S": "ds-1"}},
                UpdateExpression="SET #c.#k = :v",
                ExpressionAttributeNames={"#c": "counts", "#k": f"{writer}-{number}"},
                ExpressionAttributeValues={":v": {"N": str(number)}},
            )

    # when eight writers each add forty keys at the same time (as DynamoDB takes them, one after another)
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(add, range(8)))

    # then every write landed: none failed reading the item while another wrote it
    item = dynamodb.get_item(TableName=table, Key={"dataset_id": {"S": "ds-1"}})["Item"]
    assert len(item["counts"]["M"]) == 320
