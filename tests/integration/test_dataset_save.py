"""Saving a run's dataset is one behaviour, whichever path saves it: the artifact state machine, or the
owner's POST /runs/{run_id}/dataset for a run whose automatic save failed.

Both save through one function (``benchgen.steps.artifact.save_dataset``), but they reach it differently
(the state machine's BuildArtifact task and its EmitDatasetSaved, the API's route and its own event), so
every test here runs against both, and both must give the user the same dataset, the same link on the
run and the same event, once.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from benchgen.aws.tables.datasets import DatasetsRepo
from benchgen.aws.tables.runs import RunsRepo
from benchgen.bucket_layout import execution_name
from benchgen.outputs import RunOutput
from benchgen.records.datasets import DatasetRecord, dataset_id_for
from benchgen.records.runs import ArtifactStatus, RunRecord
from cli.api_client import Api
from examplegen.writing import write_bundle_zip
from localcloud.cloud import LocalCloud

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXAMPLE = "gsm8k-tr"
MODEL = "Qwen2.5-7B-LoRA"
SAVE_FAILED = "SaveDataset: the table refused the write"

Save = Callable[[LocalCloud, Api, str], None]


@dataclass(frozen=True)
class Tables:
    """What the tests read back: the local cloud's runs and datasets tables."""

    cloud: LocalCloud

    def name(self, prefix: str) -> str:
        return next(
            name for logical_id, name in self.cloud.table_names.items() if logical_id.startswith(prefix)
        )

    def run(self, run_id: str) -> RunRecord:
        run = RunsRepo(self.name("Runs")).get(run_id)
        assert run is not None
        return run

    def dataset(self, run_id: str) -> DatasetRecord | None:
        return DatasetsRepo(self.name("Datasets")).get(dataset_id_for(run_id))

    def dataset_items(self) -> list[dict[str, Any]]:
        """Every item of the datasets table, as DynamoDB holds it."""
        scanned = self.cloud.client("dynamodb").scan(TableName=self.name("Datasets"))
        items: list[dict[str, Any]] = scanned["Items"]
        return items


def _completed_run_whose_save_failed(cloud: LocalCloud, tmp_path: Path, owner: Api) -> str:
    """A run the owner created, scored, with its finetune artifact in the bucket, left as the state machine
    leaves a run whose SaveDataset failed for good: no dataset, no link, the artifact status Failed."""
    bundle = write_bundle_zip(EXAMPLES / EXAMPLE / "bundle", tmp_path / "bundle.zip")
    s3 = cloud.client("s3")
    s3.put_object(Bucket=cloud.bucket, Key=f"environments/{EXAMPLE}/v1/bundle.zip", Body=bundle.read_bytes())
    cloud.settle()
    status, created = owner.call(
        "POST",
        "/runs",
        {
            "environment_id": EXAMPLE,
            "version": "v1",
            "model": MODEL,
            "filename": "predictions.json",
        },
    )
    assert status == 201, created
    submission = EXAMPLES / EXAMPLE / "submission" / "predictions.json"
    s3.put_object(Bucket=cloud.bucket, Key=created["upload_key"], Body=submission.read_bytes())
    cloud.settle()
    run_id: str = created["run"]["run_id"]
    cloud.wait_for_execution(execution_name(run_id))

    dynamodb = cloud.client("dynamodb")
    dynamodb.delete_item(
        TableName=Tables(cloud).name("Datasets"), Key={"dataset_id": {"S": dataset_id_for(run_id)}}
    )
    dynamodb.update_item(
        TableName=Tables(cloud).name("Runs"),
        Key={"run_id": {"S": run_id}},
        UpdateExpression=(
            "REMOVE dataset_id, dataset_name SET artifact_status = :failed, artifact_reason = :why"
        ),
        ExpressionAttributeValues={":failed": {"S": ArtifactStatus.FAILED}, ":why": {"S": SAVE_FAILED}},
    )
    return run_id


def _watch_events(cloud: LocalCloud) -> Callable[[], list[tuple[str, dict[str, Any]]]]:
    """From now on, every BenchGen event on the bus, as (detail type, detail)."""
    sqs = cloud.client("sqs")
    queue_url = sqs.create_queue(QueueName="saved-datasets")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    events = cloud.client("events")
    events.put_rule(
        Name="all", EventBusName=cloud.bus_name, EventPattern=json.dumps({"source": ["benchgen"]})
    )
    events.put_targets(Rule="all", EventBusName=cloud.bus_name, Targets=[{"Id": "q", "Arn": queue_arn}])

    def received() -> list[tuple[str, dict[str, Any]]]:
        messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", [])
        bodies = [json.loads(message["Body"]) for message in messages]
        return [(body["detail-type"], body["detail"]) for body in bodies]

    return received


def _through_the_state_machine(cloud: LocalCloud, _owner: Api, run_id: str) -> None:
    """Another execution of the artifact pipeline for the run (a name of its own: names never repeat)."""
    sfn = cloud.client("stepfunctions")
    name = f"{run_id}-again-{len(sfn.list_executions(stateMachineArn=cloud.state_machine_arn)['executions'])}"
    sfn.start_execution(
        stateMachineArn=cloud.state_machine_arn, name=name, input=json.dumps({"run_id": run_id})
    )
    assert cloud.wait_for_execution(name)["status"] == "SUCCEEDED"


def _through_the_api(cloud: LocalCloud, owner: Api, run_id: str) -> None:
    owner.call("POST", f"/runs/{run_id}/dataset")


PATHS = {"state machine": _through_the_state_machine, "api": _through_the_api}


@pytest.fixture
def owner(cloud: LocalCloud) -> Iterator[Api]:
    with cloud.serve_api(access_log=False) as server:
        yield Api(server.url, cloud.create_user("owner@example.com", "Owner-Passw0rd!x"))


@pytest.mark.parametrize("save", PATHS.values(), ids=PATHS.keys())
def test_saving_creates_the_dataset_from_the_artifact_links_the_run_and_announces_it(
    cloud: LocalCloud, tmp_path: Path, owner: Api, save: Save
) -> None:
    # given a completed run whose automatic save failed, and a watcher on the bus
    run_id = _completed_run_whose_save_failed(cloud, tmp_path, owner)
    artifact_key = Tables(cloud).run(run_id).files[RunOutput.FINETUNE_ARTIFACT]
    artifact = cloud.client("s3").get_object(Bucket=cloud.bucket, Key=artifact_key)["Body"].read()
    received = _watch_events(cloud)

    # when the dataset is saved
    save(cloud, owner, run_id)

    # then the dataset describes the artifact, the run links it, and one DatasetSaved says so
    dataset = Tables(cloud).dataset(run_id)
    assert isinstance(dataset, DatasetRecord)
    assert (dataset.run_id, dataset.environment_id, dataset.environment_version) == (run_id, EXAMPLE, "v1")
    assert (dataset.kind, dataset.base_model) == ("finetune", MODEL)
    assert (dataset.artifact_key, dataset.artifact_sha256) == (
        artifact_key,
        hashlib.sha256(artifact).hexdigest(),
    )
    assert dataset.example_count == dataset.train_count + dataset.validation_count + dataset.test_count > 15
    run = Tables(cloud).run(run_id)
    assert (run.dataset_id, run.dataset_name, run.artifact_status) == (
        dataset.dataset_id,
        dataset.name,
        ArtifactStatus.SAVED,
    )
    assert received() == [
        ("DatasetSaved", {"dataset_id": dataset.dataset_id, "run_id": run_id, "name": dataset.name})
    ]


@pytest.mark.parametrize("first", PATHS.values(), ids=PATHS.keys())
def test_saving_again_by_either_path_changes_nothing(
    cloud: LocalCloud, tmp_path: Path, owner: Api, first: Save
) -> None:
    # given a run whose dataset was saved
    run_id = _completed_run_whose_save_failed(cloud, tmp_path, owner)
    first(cloud, owner, run_id)
    saved_items, saved_run = Tables(cloud).dataset_items(), Tables(cloud).run(run_id)
    received = _watch_events(cloud)

    # when it is saved again, by each path
    for again in PATHS.values():
        again(cloud, owner, run_id)

    # then nothing changed and nothing was announced
    assert len(saved_items) == 1
    assert Tables(cloud).dataset_items() == saved_items
    assert Tables(cloud).run(run_id) == saved_run
    assert received() == []
