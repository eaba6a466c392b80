"""The whole event flow on the local cloud: S3 uploads -> ingest -> score -> state machine -> dataset.

Real handlers, the state machine definition synthesized from the CDK app and executed by moto, real S3
notifications; nothing between the upload and the saved dataset is called by the test itself.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import time
import zipfile
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

import pytest

from benchgen.aws.tables.datasets import DatasetsRepo
from benchgen.aws.tables.environments import EnvironmentsRepo
from benchgen.aws.tables.runs import RunsRepo
from benchgen.bucket_layout import execution_name
from benchgen.outputs import RunOutput
from benchgen.records.environments import EnvironmentStatus
from benchgen.records.runs import ArtifactStatus, RunRecord, RunStatus
from benchgen.scoring.engine import score_predictions
from benchgen.steps import register as register_module
from benchgen.steps import score as score_step
from benchgen.zipwrite import zip_folder
from cli.api_client import Api
from examplegen.writing import write_bundle_zip
from localcloud.cloud import LocalCloud
from localcloud.stack_template import lazy_handler
from tests.codabench_bundles import (
    DOCKER_IMAGE,
    LABELS,
    results_submission,
    write_bundle,
    write_two_task_bundle,
)
from tests.integration.factories import EXAMPLES, example_submission, received_events, watch_events

NO_ARTIFACT = "the benchmark's scoring program did not emit one"


# ---- helpers ---------------------------------------------------------------------------------------------


def table(cloud: LocalCloud, prefix: str) -> str:
    return next(name for logical_id, name in cloud.table_names.items() if logical_id.startswith(prefix))


def runs(cloud: LocalCloud) -> RunsRepo:
    return RunsRepo(table(cloud, "Runs"))


def get_run(cloud: LocalCloud, run_id: str) -> RunRecord:
    run = runs(cloud).get(run_id)
    assert run is not None
    return run


def all_datasets(cloud: LocalCloud) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = cloud.client("dynamodb").scan(TableName=table(cloud, "Datasets"))["Items"]
    return items


def upload_bundle(cloud: LocalCloud, bundle_dir: Path, tmp_path: Path, environment_id: str) -> str:
    key = f"environments/{environment_id}/v1/bundle.zip"
    archive = write_bundle_zip(bundle_dir, tmp_path / f"{environment_id}-{bundle_dir.parent.name}.zip")
    cloud.client("s3").put_object(Bucket=cloud.bucket, Key=key, Body=archive.read_bytes())
    cloud.settle()
    return key


def upload_submission(
    cloud: LocalCloud, run_id: str, submission: Path, environment_id: str, model: str = "Qwen2.5-7B-LoRA"
) -> str:
    """A direct upload that names its run in object metadata (the `aws s3 cp --metadata` path)."""
    key = f"submissions/{run_id}/{submission.name}"
    cloud.client("s3").put_object(
        Bucket=cloud.bucket,
        Key=key,
        Body=submission.read_bytes(),
        Metadata={"environment": environment_id, "version": "v1", "model": model},
    )
    cloud.settle()
    return key


def s3_notification(cloud: LocalCloud, key: str) -> dict[str, Any]:
    """The notification S3 sends for a stored object."""
    head = cloud.client("s3").head_object(Bucket=cloud.bucket, Key=key)
    return notification(
        cloud, key, size=head["ContentLength"], etag=head["ETag"], version_id=head.get("VersionId")
    )


def notification(
    cloud: LocalCloud, key: str, *, size: int, etag: str, version_id: str | None
) -> dict[str, Any]:
    """An S3 ObjectCreated notification as AWS writes it: key URL-encoded, every field present."""
    return {
        "Records": [
            {
                "eventVersion": "2.1",
                "eventSource": "aws:s3",
                "awsRegion": cloud.region,
                "eventTime": "2026-11-30T05:00:00.000Z",
                "eventName": "ObjectCreated:Put",
                "userIdentity": {"principalId": "AWS:AIDAEXAMPLE"},
                "requestParameters": {"sourceIPAddress": "127.0.0.1"},
                "responseElements": {"x-amz-request-id": "EXAMPLE", "x-amz-id-2": "EXAMPLE"},
                "s3": {
                    "s3SchemaVersion": "1.0",
                    "configurationId": "redelivery",
                    "bucket": {
                        "name": cloud.bucket,
                        "ownerIdentity": {"principalId": "EXAMPLE"},
                        "arn": f"arn:aws:s3:::{cloud.bucket}",
                    },
                    "object": {
                        "key": quote_plus(key, safe="/"),
                        "size": size,
                        "eTag": etag.strip('"'),
                        "versionId": version_id,
                        "sequencer": "0055AED6DCD90281E5",
                    },
                },
            }
        ]
    }


def deliver(cloud: LocalCloud, function: str, event: dict[str, Any]) -> None:
    """Invoke a function the way S3 does (asynchronously, through Lambda), with the given event."""
    name = next(name for logical_id, name in cloud.functions.items() if logical_id.startswith(function))
    cloud.client("lambda").invoke(FunctionName=name, InvocationType="Event", Payload=json.dumps(event))
    cloud.settle()


def executions(cloud: LocalCloud) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = cloud.client("stepfunctions").list_executions(
        stateMachineArn=cloud.state_machine_arn
    )["executions"]
    return listed


def object_versions(cloud: LocalCloud, key: str) -> int:
    listed = cloud.client("s3").list_object_versions(Bucket=cloud.bucket, Prefix=key)
    return len([version for version in listed.get("Versions", []) if version["Key"] == key])


def run_to_completion(cloud: LocalCloud, tmp_path: Path, example: str, run_id: str) -> RunRecord:
    upload_bundle(cloud, EXAMPLES / example / "bundle", tmp_path, example)
    upload_submission(cloud, run_id, example_submission(example), example)
    cloud.wait_for_execution(execution_name(run_id))
    return get_run(cloud, run_id)


# ---- the happy path --------------------------------------------------------------------------------------


def test_a_submission_upload_runs_through_scoring_to_a_saved_dataset(
    cloud: LocalCloud, tmp_path: Path
) -> None:
    # given a registered Turkish math environment and a bus watcher
    queue = watch_events(cloud)
    upload_bundle(cloud, EXAMPLES / "gsm8k-tr" / "bundle", tmp_path, "gsm8k-tr")
    environment = EnvironmentsRepo(table(cloud, "Environments")).get("gsm8k-tr", "v1")
    assert environment is not None and environment.status is EnvironmentStatus.REGISTERED

    # when a submission that gets 15 of 50 cases wrong is uploaded
    upload_submission(cloud, "run-happy", example_submission("gsm8k-tr"), "gsm8k-tr")
    execution = cloud.wait_for_execution(execution_name("run-happy"))

    # then the run completed with the template's metrics and the state machine saved its dataset
    run = get_run(cloud, "run-happy")
    assert run.status is RunStatus.COMPLETED
    assert run.overall_score == pytest.approx(0.7)
    assert run.metrics == {
        "accuracy": pytest.approx(0.7),
        "exact_match": pytest.approx(0.66),
        "answer_rate": pytest.approx(0.9),
    }
    assert run.counts["total"] == 50 and run.counts["passed"] == 35
    assert execution["status"] == "SUCCEEDED"
    assert set(run.files) == {
        RunOutput.SUBMISSION,
        RunOutput.PREDICTION_OUTPUT,
        RunOutput.SCORING_OUTPUT,
        RunOutput.SCORES,
        RunOutput.DETAILED_HTML,
        RunOutput.DETAILED_JSON,
        RunOutput.FINETUNE_ARTIFACT,
    }
    for key in run.files.values():
        assert cloud.client("s3").head_object(Bucket=cloud.bucket, Key=key)["ContentLength"] > 0
    dataset = DatasetsRepo(table(cloud, "Datasets")).get("ds-run-happy")
    assert dataset is not None
    assert re.fullmatch(r"GSM8K-TR · Qwen2\.5-7B-LoRA · 70\.0% · [A-Z][a-z]{2} \d{4}", dataset.name)
    assert dataset.example_count == dataset.train_count + dataset.validation_count + dataset.test_count > 15
    assert (run.dataset_id, run.dataset_name, run.artifact_status) == (
        dataset.dataset_id,
        dataset.name,
        ArtifactStatus.SAVED,
    )
    kinds = [kind for kind, _ in received_events(cloud, queue)]
    assert sorted(kinds) == ["DatasetSaved", "RunCompleted"]


# ---- idempotency -----------------------------------------------------------------------------------------


def test_duplicate_s3_events_leave_one_run_one_execution_one_dataset(
    cloud: LocalCloud, tmp_path: Path
) -> None:
    # given a run that went all the way through
    before = run_to_completion(cloud, tmp_path, "gsm8k-en", "run-dup")
    submission_key = before.files[RunOutput.SUBMISSION]
    prediction_key = before.files[RunOutput.PREDICTION_OUTPUT]

    # when S3 delivers the submission's and the prediction output's events a second time
    deliver(cloud, "Ingest", s3_notification(cloud, submission_key))
    deliver(cloud, "Score", s3_notification(cloud, prediction_key))

    # then nothing changed: same run, one prediction output version, one execution, one dataset
    after = get_run(cloud, "run-dup")
    assert after == before
    assert object_versions(cloud, prediction_key) == 1
    assert len(executions(cloud)) == 1
    assert len(all_datasets(cloud)) == 1


def test_a_score_event_before_ingest_is_ignored_and_the_run_still_completes_once(
    cloud: LocalCloud, tmp_path: Path
) -> None:
    # given a pending run whose prediction output does not exist yet
    upload_bundle(cloud, EXAMPLES / "gsm8k-en" / "bundle", tmp_path, "gsm8k-en")
    runs(cloud).create(
        RunRecord(
            run_id="run-early", environment_id="gsm8k-en", environment_version="v1", model="m", owner="u"
        )
    )
    early = notification(
        cloud, "predictions/run-early/prediction_output.zip", size=1373, etag="0" * 32, version_id="v-early"
    )

    # when the score event arrives first, then the submission
    deliver(cloud, "Score", early)
    assert get_run(cloud, "run-early").status is RunStatus.PENDING
    upload_submission(cloud, "run-early", example_submission("gsm8k-en"), "gsm8k-en")
    cloud.wait_for_execution(execution_name("run-early"))

    # then the run completed once
    assert get_run(cloud, "run-early").status is RunStatus.COMPLETED
    assert len(executions(cloud)) == 1


# ---- failures --------------------------------------------------------------------------------------------


def test_a_scoring_program_that_crashes_fails_the_run_with_its_reason_and_touches_nothing_else(
    cloud: LocalCloud, tmp_path: Path
) -> None:
    # given an environment whose scoring program crashes
    bundle = tmp_path / "broken" / "bundle"
    shutil.copytree(EXAMPLES / "custom-program" / "bundle", bundle)
    (bundle / "scoring_program" / "score.py").write_text(
        "import sys\nsys.stderr.write('labels file is corrupt: line 3\\n')\nsys.exit(3)\n", encoding="utf-8"
    )
    queue = watch_events(cloud)
    upload_bundle(cloud, bundle, tmp_path, "intents")
    submission = example_submission("custom-program")

    # when a submission is uploaded
    key = upload_submission(cloud, "run-crash", submission, "intents")

    # then the run failed with the program's own words, its log kept, and nothing else was made
    run = get_run(cloud, "run-crash")
    assert run.status is RunStatus.FAILED
    assert run.failure_reason is not None and "labels file is corrupt" in run.failure_reason
    log_key = run.files[RunOutput.SCORING_LOG]
    log = cloud.client("s3").get_object(Bucket=cloud.bucket, Key=log_key)["Body"].read().decode()
    assert "labels file is corrupt" in log
    assert executions(cloud) == []
    assert all_datasets(cloud) == []
    assert (
        cloud.client("s3").get_object(Bucket=cloud.bucket, Key=key)["Body"].read() == submission.read_bytes()
    )
    assert [kind for kind, _ in received_events(cloud, queue)] == ["RunFailed"]


def test_a_malformed_submission_fails_ingest_with_a_message_that_says_what_is_wrong(
    cloud: LocalCloud, tmp_path: Path
) -> None:
    # given a registered environment and a truncated predictions file
    upload_bundle(cloud, EXAMPLES / "gsm8k-en" / "bundle", tmp_path, "gsm8k-en")
    broken = tmp_path / "predictions.json"
    broken.write_text('{"predictions": [{"id": "a", "prediction_text": ', encoding="utf-8")

    # when it is uploaded
    upload_submission(cloud, "run-broken", broken, "gsm8k-en")

    # then the run failed saying where the JSON broke, and no prediction output was written
    run = get_run(cloud, "run-broken")
    assert run.status is RunStatus.FAILED
    assert run.failure_reason is not None and "predictions.json" in run.failure_reason
    assert RunOutput.PREDICTION_OUTPUT not in run.files
    assert object_versions(cloud, "predictions/run-broken/prediction_output.zip") == 0


def test_a_run_refused_at_ingest_counts_as_a_failed_run_in_the_metrics(
    cloud: LocalCloud, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given a registered environment and a truncated predictions file
    upload_bundle(cloud, EXAMPLES / "gsm8k-en" / "bundle", tmp_path, "gsm8k-en")
    broken = tmp_path / "predictions.json"
    broken.write_text('{"predictions": [', encoding="utf-8")
    capsys.readouterr()

    # when it is uploaded and refused
    upload_submission(cloud, "run-refused", broken, "gsm8k-en")

    # then the ingest function published RunFailed (what the failed-runs alarm watches), not an ingestion
    published = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    ingest_metrics = [
        metric["Name"]
        for document in published
        if document.get("service") == "ingest"
        for directive in document["_aws"]["CloudWatchMetrics"]
        for metric in directive["Metrics"]
    ]
    assert get_run(cloud, "run-refused").status is RunStatus.FAILED
    assert ingest_metrics == ["RunFailed"]


def test_an_upload_for_an_unknown_run_without_metadata_records_why(cloud: LocalCloud) -> None:
    # when a submission lands for a run nobody created, naming no environment
    cloud.client("s3").put_object(
        Bucket=cloud.bucket, Key="submissions/run-orphan/predictions.json", Body=b"{}"
    )
    cloud.settle()

    # then a failed run says how to upload properly
    run = get_run(cloud, "run-orphan")
    assert run.status is RunStatus.FAILED
    assert run.failure_reason is not None and "POST /runs" in run.failure_reason


def test_an_environment_without_finetune_completes_without_artifact_or_dataset(
    cloud: LocalCloud, tmp_path: Path
) -> None:
    # when a run of the custom-program environment (no `finetune:`) completes
    run = run_to_completion(cloud, tmp_path, "custom-program", "run-plain")
    execution = cloud.wait_for_execution(execution_name("run-plain"))

    # then the state machine succeeded, recorded why there is no artifact, and saved nothing
    run = get_run(cloud, "run-plain")
    assert run.status is RunStatus.COMPLETED
    assert execution["status"] == "SUCCEEDED"
    assert run.artifact_status is ArtifactStatus.NOT_EMITTED
    assert run.artifact_reason == NO_ARTIFACT
    assert RunOutput.FINETUNE_ARTIFACT not in run.files
    assert all_datasets(cloud) == []


# ---- environments ----------------------------------------------------------------------------------------


def test_a_second_upload_of_a_registered_version_does_not_replace_it(
    cloud: LocalCloud, tmp_path: Path
) -> None:
    # given gsm8k v1 registered from the Turkish bundle
    key = upload_bundle(cloud, EXAMPLES / "gsm8k-tr" / "bundle", tmp_path, "gsm8k")
    first = EnvironmentsRepo(table(cloud, "Environments")).get("gsm8k", "v1")
    assert first is not None

    # when another bundle is uploaded to the same key
    upload_bundle(cloud, EXAMPLES / "gsm8k-en" / "bundle", tmp_path, "gsm8k")

    # then the registration still points at the first object version, and both versions are kept
    again = EnvironmentsRepo(table(cloud, "Environments")).get("gsm8k", "v1")
    assert again == first
    assert again.title == "GSM8K-TR"
    assert object_versions(cloud, key) == 2


def test_a_bundle_with_broken_yaml_is_rejected_naming_the_file(cloud: LocalCloud, tmp_path: Path) -> None:
    # given a bundle whose competition.yaml does not parse
    bundle = tmp_path / "bad" / "bundle"
    shutil.copytree(EXAMPLES / "gsm8k-en" / "bundle", bundle)
    (bundle / "competition.yaml").write_text("title: [unclosed\n", encoding="utf-8")

    # when it is uploaded
    upload_bundle(cloud, bundle, tmp_path, "broken")

    # then the environment is recorded as rejected with the problem
    record = EnvironmentsRepo(table(cloud, "Environments")).get("broken", "v1")
    assert record is not None and record.status is EnvironmentStatus.REJECTED
    assert any("competition.yaml" in problem for problem in record.problems)


# ---- through the API -------------------------------------------------------------------------------------


@pytest.fixture
def api_users(cloud: LocalCloud) -> Any:
    with cloud.serve_api(access_log=False) as server:
        owner = Api(server.url, cloud.create_user("owner@example.com", "Owner-Passw0rd!x"))
        other = Api(server.url, cloud.create_user("other@example.com", "Other-Passw0rd!x"))
        yield owner, other


def create_run_through_api(cloud: LocalCloud, tmp_path: Path, api: Api) -> str:
    upload_bundle(cloud, EXAMPLES / "gsm8k-tr" / "bundle", tmp_path, "gsm8k-tr")
    status, created = api.call(
        "POST",
        "/runs",
        {
            "environment_id": "gsm8k-tr",
            "version": "v1",
            "model": "Qwen2.5-7B-LoRA",
            "filename": "predictions.json",
            "run_config": {
                "sampling": {"temperature": 0.2},
                "environment_variables": {"MODEL_URL": "http://m"},
            },
        },
    )
    assert status == 201, created
    submission = example_submission("gsm8k-tr").read_bytes()
    cloud.client("s3").put_object(Bucket=cloud.bucket, Key=created["upload_key"], Body=submission)
    cloud.settle()
    run_id: str = created["run"]["run_id"]
    cloud.wait_for_execution(execution_name(run_id))
    return run_id


def test_a_manual_save_is_refused_after_the_automatic_save(
    cloud: LocalCloud, tmp_path: Path, api_users: Any
) -> None:
    # given a run whose dataset the state machine saved
    owner, _ = api_users
    run_id = create_run_through_api(cloud, tmp_path, owner)
    assert get_run(cloud, run_id).artifact_status is ArtifactStatus.SAVED

    # when its owner asks to save it again
    status, body = owner.call("POST", f"/runs/{run_id}/dataset")

    # then the API refuses with 409 and says why; still one dataset
    assert status == 409
    assert "already saved" in body["message"]
    assert len(all_datasets(cloud)) == 1


def test_the_run_configuration_is_visible_to_its_owner_only(
    cloud: LocalCloud, tmp_path: Path, api_users: Any
) -> None:
    # given a run created by its owner with sampling settings
    owner, other = api_users
    run_id = create_run_through_api(cloud, tmp_path, owner)

    # when the owner and another user ask for its configuration
    owner_status, config = owner.call("GET", f"/runs/{run_id}/config")
    other_status, refusal = other.call("GET", f"/runs/{run_id}/config")

    # then the owner sees it and the other user is refused
    assert owner_status == 200 and config["sampling"] == {"temperature": 0.2}
    assert other_status == 403 and "owner" in refusal["message"]
    status, run = other.call("GET", f"/runs/{run_id}")
    assert status == 200 and "run_config" not in run and run["status"] == "Completed"


def test_ingest_warnings_about_ids_reach_the_run_page(
    cloud: LocalCloud, tmp_path: Path, api_users: Any
) -> None:
    # given a submission with one id twice, one id the benchmark does not have, and one case left out
    owner, _ = api_users
    upload_bundle(cloud, EXAMPLES / "gsm8k-en" / "bundle", tmp_path, "gsm8k-en")
    document = json.loads(example_submission("gsm8k-en").read_text(encoding="utf-8"))
    predictions = document["predictions"]
    predictions[-1] = {"id": predictions[0]["id"], "prediction_text": "#### 1"}
    predictions.append({"id": "not-a-case", "prediction_text": "#### 2"})
    submission = tmp_path / "predictions.json"
    submission.write_text(json.dumps(document), encoding="utf-8")

    # when it is uploaded for a run created through the API
    status, created = owner.call(
        "POST",
        "/runs",
        {"environment_id": "gsm8k-en", "version": "v1", "model": "m", "filename": "predictions.json"},
    )
    assert status == 201
    cloud.client("s3").put_object(
        Bucket=cloud.bucket, Key=created["upload_key"], Body=submission.read_bytes()
    )
    cloud.settle()

    # then the run completed, counting what was wrong with the ids, and says so on its page
    status, run = owner.call("GET", f"/runs/{created['run']['run_id']}")
    assert status == 200 and run["status"] == "Completed", run.get("failure_reason")
    assert (run["counts"]["duplicate_ids"], run["counts"]["unknown_ids"], run["counts"]["missing_ids"]) == (
        1,
        1,
        1,
    )
    assert run["counts"]["total_questions"] == 40 and run["counts"]["answered_questions"] == 39
    assert any("not-a-case" in warning for warning in run["warnings"])


def test_a_failing_artifact_task_marks_the_run_with_the_reason(cloud: LocalCloud, tmp_path: Path) -> None:
    # given a completed run whose scoring output is gone from the bucket
    upload_bundle(cloud, EXAMPLES / "gsm8k-en" / "bundle", tmp_path, "gsm8k-en")
    runs(cloud).create(
        RunRecord(
            run_id="run-gone",
            environment_id="gsm8k-en",
            environment_version="v1",
            model="m",
            owner="u",
            status=RunStatus.COMPLETED,
            overall_score=0.5,
        )
    )

    # when the artifact state machine runs for it
    cloud.client("stepfunctions").start_execution(
        stateMachineArn=cloud.state_machine_arn,
        name=execution_name("run-gone"),
        input='{"run_id": "run-gone"}',
    )
    execution = cloud.wait_for_execution(execution_name("run-gone"))

    # then the execution failed and the run records why; no dataset was saved
    assert execution["status"] == "FAILED"
    run = get_run(cloud, "run-gone")
    assert run.artifact_status is ArtifactStatus.FAILED
    assert run.artifact_reason is not None and "scoring_output.zip" in run.artifact_reason
    assert all_datasets(cloud) == []


# ---- a bundle published for Codabench ----------------------------------------------------------------------


def test_a_codabench_bundle_and_a_results_zip_run_as_on_codabench(cloud: LocalCloud, tmp_path: Path) -> None:
    # given a bundle as published for Codabench (nulls, docker_image, no cases.jsonl) and a results zip
    bundle = write_bundle(tmp_path / "iris" / "bundle")
    upload_bundle(cloud, bundle, tmp_path, "iris")
    submission = results_submission(tmp_path / "submission.zip", LABELS)

    # when the submission is uploaded
    upload_submission(cloud, "run-iris", submission, "iris")

    # then the version records the image and the runtime it maps to, and the run is scored by the bundle's
    # own program in that runtime
    environment = EnvironmentsRepo(table(cloud, "Environments")).get("iris", "v1")
    assert environment is not None and environment.status is EnvironmentStatus.REGISTERED
    assert environment.docker_image == DOCKER_IMAGE
    assert environment.runtime == f"legacy (mapped from docker_image {DOCKER_IMAGE})"
    assert environment.warnings[0].startswith(f"docker_image {DOCKER_IMAGE} runs in the legacy runtime")
    run = get_run(cloud, "run-iris")
    assert run.status is RunStatus.COMPLETED, run.failure_reason
    assert run.runtime == environment.runtime
    assert run.metrics == {"accuracy": 1.0, "duration": 0.0}
    assert run.warnings == environment.warnings


def test_a_failed_run_shows_every_programs_traceback_through_the_api(
    cloud: LocalCloud, tmp_path: Path, api_users: Any
) -> None:
    # given a code submission whose model cannot be imported, so the ingestion program fails, after which
    # the scoring program finds no predictions and fails too
    owner, _ = api_users
    bundle = write_bundle(tmp_path / "iris" / "bundle", ingestion=True)
    upload_bundle(cloud, bundle, tmp_path, "iris")
    status, created = owner.call(
        "POST", "/runs", {"environment_id": "iris", "version": "v1", "model": "m", "filename": "code.zip"}
    )
    assert status == 201, created
    submission = tmp_path / "code.zip"
    with zipfile.ZipFile(submission, "w") as archive:
        archive.writestr("metadata", "description: broken model\n")
        archive.writestr("model.py", "raise ImportError('weights.bin is missing')\n")

    # when it is uploaded
    cloud.client("s3").put_object(
        Bucket=cloud.bucket, Key=created["upload_key"], Body=submission.read_bytes()
    )
    cloud.settle()

    # then the scoring program decided the run, whose error names both programs in the order they ran,
    # and the run page keeps each program's ending with its traceback
    status, run = owner.call("GET", f"/runs/{created['run']['run_id']}")
    assert status == 200 and run["status"] == "Failed"
    assert run["failure_reason"].startswith("the ingestion program exited with code 1:\nTraceback")
    assert "\nthe scoring program exited with code 1:\nTraceback" in run["failure_reason"]
    ended = {outcome["program"]: outcome for outcome in run["programs"]}
    assert ended["ingestion program"]["exit_code"] == 1
    assert ended["ingestion program"]["stderr_tail"].endswith("ImportError: weights.bin is missing")
    assert ended["scoring program"]["exit_code"] == 1
    assert "FileNotFoundError" in ended["scoring program"]["stderr_tail"]


def test_a_column_the_scoring_program_leaves_empty_shows_no_score_on_the_run_page(
    cloud: LocalCloud, tmp_path: Path, api_users: Any
) -> None:
    # given a Codabench bundle whose scoring program writes a duration and a note, but no accuracy
    owner, _ = api_users
    program = (
        "import json, os, sys\n"
        "scores = {'duration': 2.5, 'notes': 'accuracy comes later'}\n"
        "json.dump(scores, open(os.path.join(sys.argv[2], 'scores.json'), 'w'))\n"
    )
    upload_bundle(cloud, write_bundle(tmp_path / "iris" / "bundle", score_py=program), tmp_path, "iris")

    # when a results zip is uploaded for a run created through the API
    status, created = owner.call(
        "POST", "/runs", {"environment_id": "iris", "version": "v1", "model": "m", "filename": "results.zip"}
    )
    assert status == 201, created
    submission = results_submission(tmp_path / "results.zip", LABELS)
    cloud.client("s3").put_object(
        Bucket=cloud.bucket, Key=created["upload_key"], Body=submission.read_bytes()
    )
    cloud.settle()

    # then the run completed; its page has no overall score and a tile for the duration only
    status, run = owner.call("GET", f"/runs/{created['run']['run_id']}")
    assert status == 200 and run["status"] == "Completed", run.get("failure_reason")
    assert run["overall_score"] is None
    assert [(tile["key"], tile["value"]) for tile in run["metrics"]] == [("duration", 2.5)]
    assert run["other_metrics"] == {}


def test_a_run_names_its_phase_and_a_phase_of_two_tasks_scores_both(
    cloud: LocalCloud, tmp_path: Path, api_users: Any
) -> None:
    # given a bundle whose first phase runs two tasks and whose second phase ("Final") runs task 1 only
    owner, _ = api_users
    upload_bundle(cloud, write_two_task_bundle(tmp_path / "iris" / "bundle"), tmp_path, "iris")
    submission = results_submission(tmp_path / "results.zip", LABELS)
    request = {"environment_id": "iris", "version": "v1", "model": "m", "filename": "results.zip"}

    # when one run names no phase, one names "Final" by its index, and one names a phase there is not
    scored = {}
    for named in (None, "1"):
        status, created = owner.call("POST", "/runs", request | ({"phase": named} if named else {}))
        assert status == 201, created
        key = created["upload_key"]
        cloud.client("s3").put_object(Bucket=cloud.bucket, Key=key, Body=submission.read_bytes())
        cloud.settle()
        status, scored[named] = owner.call("GET", f"/runs/{created['run']['run_id']}")
        assert status == 200 and scored[named]["status"] == "Completed", scored[named].get("failure_reason")
    status, refused = owner.call("POST", "/runs", request | {"phase": "Test"})

    # then each run records its phase by name: the first phase by default, scored on both tasks (5 of 5
    # right, then 2 of 5: the column sums them, as Codabench ranks), and "Final" on task 1 alone
    assert (scored[None]["phase"], scored[None]["overall_score"]) == ("Development", 1.4)
    assert (scored["1"]["phase"], scored["1"]["overall_score"]) == ("Final", 0.4)
    assert status == 422
    assert "this environment has no phase 'Test'; name one of its phases: 0 (Development), 1 (Final)" in str(
        refused
    )


def test_a_direct_upload_names_its_phase_in_its_metadata(cloud: LocalCloud, tmp_path: Path) -> None:
    # given the two-phase bundle, and a results zip uploaded straight to the bucket for phase "Final"
    upload_bundle(cloud, write_two_task_bundle(tmp_path / "iris" / "bundle"), tmp_path, "iris")
    submission = results_submission(tmp_path / "results.zip", LABELS)
    metadata = {"environment": "iris", "version": "v1", "model": "m", "phase": "Final"}
    key = "submissions/run-final/results.zip"
    cloud.client("s3").put_object(
        Bucket=cloud.bucket, Key=key, Body=submission.read_bytes(), Metadata=metadata
    )
    cloud.settle()

    # then the run is scored on that phase's task only
    run = get_run(cloud, "run-final")
    assert run.status is RunStatus.COMPLETED, run.failure_reason
    assert (run.phase, run.metrics) == ("Final", {"accuracy": 0.4, "duration": 0.0, "mean": 0.4})


@pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox gives /app as root here (on AWS: its image)")
def test_a_bundle_whose_programs_name_only_app_paths_runs_through_the_sandbox_function(
    cloud: LocalCloud, tmp_path: Path
) -> None:
    # given the /app example and its code submission, a keyword model, zipped as an upload page would
    example = EXAMPLES / "codabench-app"
    upload_bundle(cloud, example / "bundle", tmp_path, "reviews")
    submission = tmp_path / "code.zip"
    zip_folder(example / "submission" / "code", submission)

    # when it is uploaded
    upload_submission(cloud, "run-app", submission, "reviews")

    # then the ingestion and scoring programs found their /app folders in the sandbox function: the
    # accuracy is the model's on the reviews (it misses every negated one)
    truth = (example / "bundle/reference_data/reviews.solution").read_text().split()
    reviews = (example / "bundle/input_data/reviews.txt").read_text().splitlines()
    keywords = re.search(r"POSITIVE = (\[.*\])", (example / "submission/code/model.py").read_text())
    assert keywords is not None
    positive = json.loads(keywords[1])
    guesses = ["pos" if any(word in review for word in positive) else "neg" for review in reviews]
    right = sum(t == g for t, g in zip(truth, guesses, strict=True))
    run = get_run(cloud, "run-app")
    assert run.status is RunStatus.COMPLETED, run.failure_reason
    assert run.metrics == {"accuracy": right / len(truth), "errors": len(truth) - right, "perfect": 0.0}


# ---- attempts and claims ---------------------------------------------------------------------------------


def function_name(cloud: LocalCloud, prefix: str) -> str:
    return next(name for logical_id, name in cloud.functions.items() if logical_id.startswith(prefix))


class CountingScore:
    """Wraps the engine's score_predictions() as the score step calls it, counting calls from every thread."""

    def __init__(self, failure: BaseException | None = None) -> None:
        self.calls = 0
        self.failure = failure
        self._lock = threading.Lock()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            self.calls += 1
        if self.failure is not None:
            raise self.failure
        return score_predictions(*args, **kwargs)


def test_100_concurrent_deliveries_of_one_prediction_output_score_it_once(
    cloud: LocalCloud, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a run whose prediction output is written but not scored yet (scoring switched off meanwhile)
    counting = CountingScore()
    monkeypatch.setattr(score_step, "score_predictions", counting)
    score_function = function_name(cloud, "Score")
    cloud.hook.register(score_function, lambda event, context: None)
    upload_bundle(cloud, EXAMPLES / "gsm8k-en" / "bundle", tmp_path, "gsm8k-en")
    upload_submission(cloud, "run-crowd", example_submission("gsm8k-en"), "gsm8k-en")
    assert get_run(cloud, "run-crowd").status is RunStatus.RUNNING
    cloud.hook.register(score_function, lazy_handler("score"))
    prediction = "predictions/run-crowd/prediction_output.zip"
    head = cloud.client("s3").head_object(Bucket=cloud.bucket, Key=prediction)

    # when 100 deliveries arrive at once, each naming its own object version so that the per-object
    # idempotency cannot merge them (as after a re-upload): only the run's claim stands between them
    lambda_client = cloud.client("lambda")
    for number in range(100):
        event = notification(
            cloud, prediction, size=head["ContentLength"], etag=head["ETag"], version_id=f"v{number}"
        )
        lambda_client.invoke(FunctionName=score_function, InvocationType="Event", Payload=json.dumps(event))
    cloud.settle()
    cloud.wait_for_execution(execution_name("run-crowd"))

    # then the predictions were scored once, and every file of the run has one version
    assert counting.calls == 1
    run = get_run(cloud, "run-crowd")
    assert run.status is RunStatus.COMPLETED and run.overall_score is not None
    listed = cloud.client("s3").list_object_versions(Bucket=cloud.bucket, Prefix="runs/run-crowd/")
    versions = [version["Key"] for version in listed.get("Versions", [])]
    assert sorted(versions) == sorted(set(versions))
    assert {key.rsplit("/", 1)[1] for key in versions} >= {"scores.json", "scoring_output.zip"}
    assert len(executions(cloud)) == 1


@pytest.mark.parametrize("failure", [RecursionError("maximum recursion depth exceeded"), MemoryError()])
def test_a_score_step_that_fails_unexpectedly_fails_the_run_on_its_last_attempt(
    cloud: LocalCloud, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: BaseException
) -> None:
    # given a scoring engine that fails with an error no user can act on
    counting = CountingScore(failure)
    monkeypatch.setattr(score_step, "score_predictions", counting)
    queue = watch_events(cloud)
    upload_bundle(cloud, EXAMPLES / "gsm8k-en" / "bundle", tmp_path, "gsm8k-en")

    attempts = invocations(cloud, "Score")
    letters = invocations(cloud, "DeadLetters")

    # when a submission is uploaded, and nothing but the local cloud delivers the failing score event
    upload_submission(cloud, "run-internal", example_submission("gsm8k-en"), "gsm8k-en")

    # then Lambda's two retries came, and the last attempt failed the run with a reason a user can read,
    # naming the request (one request id across the retries of one event, as on AWS)
    assert len(attempts) == 3 and len(set(attempts)) == 1
    run = get_run(cloud, "run-internal")
    assert run.status is RunStatus.FAILED and run.finished_at is not None
    assert run.failure_reason is not None
    assert re.fullmatch(
        rf"internal error while scoring the predictions \({type(failure).__name__}, attempt 3 of 3, "
        r"request id [0-9a-f-]{36}\); nothing you uploaded was changed: upload the submission again, "
        r"and quote the request id if this happens again",
        run.failure_reason,
    )
    assert counting.calls == 3
    assert [kind for kind, _ in received_events(cloud, queue)] == ["RunFailed"]
    assert executions(cloud) == []
    # and the last attempt, having failed the run itself, succeeded: nothing was dead-lettered
    assert letters == []


class Killed(BaseException):
    """What a run step sees of its process being killed (out of memory): no ``except Exception`` runs.

    Not an ``Exception``, so neither the step's last-attempt handling nor powertools' idempotency cleanup
    catches it: the object's idempotency record stays in progress until the invocation's deadline, as when
    Lambda kills the process. (Python still runs ``finally`` blocks, so the run's claim is let go.)
    """


def invocations(cloud: LocalCloud, function: str) -> list[str]:
    """The request id of every invocation of the function from now on (its handler wrapped)."""
    name = function_name(cloud, function)
    handler = cloud.hook.handlers[name]
    seen: list[str] = []

    def recording(event: Any, context: Any) -> Any:
        seen.append(context.aws_request_id)
        return handler(event, context)

    cloud.hook.register(name, recording)
    return seen


def test_a_score_step_killed_on_every_attempt_ends_the_run_failed_through_its_dead_letter_queue(
    cloud: LocalCloud, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a scoring step whose process is killed while it scores
    counting = CountingScore(Killed("out of memory"))
    monkeypatch.setattr(score_step, "score_predictions", counting)
    queue = watch_events(cloud)
    upload_bundle(cloud, EXAMPLES / "gsm8k-en" / "bundle", tmp_path, "gsm8k-en")
    attempts = invocations(cloud, "Score")
    letters = invocations(cloud, "DeadLetters")
    dead_letter_queue = cloud.hook.asynchronous.configs[function_name(cloud, "Score")].dead_letter_queue

    # when a submission is uploaded
    started = time.monotonic()
    upload_submission(cloud, "run-killed", example_submission("gsm8k-en"), "gsm8k-en")
    elapsed = time.monotonic() - started

    # then Lambda delivered the event three times: the first was killed scoring, the retries found the
    # dead attempt's upload still in progress; the event went to the dead-letter queue, whose consumer
    # failed the run with Lambda's error and the request id
    assert len(attempts) == 3 and counting.calls == 1
    assert len(letters) == 1
    run = get_run(cloud, "run-killed")
    assert run.status is RunStatus.FAILED and run.finished_at is not None
    assert run.failure_reason == (
        f"internal error: the score step failed on every attempt (request id {attempts[0]}), stopped before "
        "it could say why (out of memory, out of time or a crash); nothing you uploaded was changed: upload "
        "the submission again, and quote the request id if this happens again"
    )
    assert [kind for kind, _ in received_events(cloud, queue)] == ["RunFailed"]
    # and the consumer deleted the message it settled
    left = cloud.client("sqs").get_queue_attributes(
        QueueUrl=dead_letter_queue, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]["ApproximateNumberOfMessages"]
    assert left == "0"
    print(f"run-killed: Failed {elapsed:.2f} s after the upload, {len(attempts)} attempts")


@pytest.mark.parametrize("failure", [Killed("out of memory"), RuntimeError("disk full")])
def test_a_registration_that_fails_on_every_attempt_records_the_version_rejected(
    cloud: LocalCloud, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: BaseException
) -> None:
    # given a registration whose process is killed, or which fails unexpectedly, while it checks the bundle
    def killed(*args: Any, **kwargs: Any) -> None:
        raise failure

    monkeypatch.setattr(register_module, "check_bundle", killed)
    attempts = invocations(cloud, "RegisterEnvironment")

    # when a bundle is uploaded
    upload_bundle(cloud, EXAMPLES / "gsm8k-en" / "bundle", tmp_path, "gsm8k-en")

    # then after three attempts the version is recorded Rejected, saying what happened and what to do
    assert len(attempts) == 3
    record = EnvironmentsRepo(table(cloud, "Environments")).get("gsm8k-en", "v1")
    assert record is not None and record.status is EnvironmentStatus.REJECTED
    assert record.problems == [
        f"internal error: registering the bundle failed on every attempt (request id {attempts[0]}); the "
        "bundle is kept in the bucket: upload it again as a new version, and quote the request id if this "
        "happens again"
    ]


# ---- bounded records -------------------------------------------------------------------------------------


def read_object(cloud: LocalCloud, key: str) -> str:
    body: bytes = cloud.client("s3").get_object(Bucket=cloud.bucket, Key=key)["Body"].read()
    return body.decode("utf-8")


def test_warnings_too_large_for_a_record_are_cut_and_kept_whole_in_the_ingest_log(
    cloud: LocalCloud, tmp_path: Path
) -> None:
    # given a submission whose five unknown ids are 300 KB each (their warning alone passes 400 KB)
    upload_bundle(cloud, EXAMPLES / "gsm8k-en" / "bundle", tmp_path, "gsm8k-en")
    document = json.loads(example_submission("gsm8k-en").read_text(encoding="utf-8"))
    long_ids = [f"{letter}" * 300_000 for letter in "vwxyz"]
    document["predictions"] += [{"id": ident, "prediction_text": "#### 1"} for ident in long_ids]
    submission = tmp_path / "predictions.json"
    submission.write_text(json.dumps(document), encoding="utf-8")

    # when it is uploaded
    upload_submission(cloud, "run-long-ids", submission, "gsm8k-en")
    cloud.wait_for_execution(execution_name("run-long-ids"))

    # then the run completed; its warning is cut, and the ingest log it links to holds every id whole
    run = get_run(cloud, "run-long-ids")
    assert run.status is RunStatus.COMPLETED
    [warning] = run.warnings
    assert warning.startswith("5 prediction id(s) match no case and were ignored (ids: vvvv")
    assert len(warning) == 2000 and warning.endswith("more characters cut]")
    log = read_object(cloud, run.files[RunOutput.INGEST_LOG])
    assert all(ident in log for ident in long_ids)


def test_a_stderr_line_too_large_for_a_record_fails_the_run_with_the_whole_text_kept(
    cloud: LocalCloud, tmp_path: Path
) -> None:
    # given a scoring program that writes one 600 KB line to stderr and exits
    bundle = tmp_path / "loud" / "bundle"
    shutil.copytree(EXAMPLES / "custom-program" / "bundle", bundle)
    (bundle / "scoring_program" / "score.py").write_text(
        "import sys\nsys.stderr.write('corrupt: ' + 'x' * 600_000 + '\\n')\nsys.exit(3)\n", encoding="utf-8"
    )
    upload_bundle(cloud, bundle, tmp_path, "loud")

    # when a submission is uploaded
    upload_submission(cloud, "run-loud", example_submission("custom-program"), "loud")

    # then the run failed with the start of the program's words, and the whole reason is in a linked file
    run = get_run(cloud, "run-loud")
    assert run.status is RunStatus.FAILED
    assert run.failure_reason is not None
    assert run.failure_reason.startswith("the scoring program exited with code 3:\ncorrupt: xxx")
    assert len(run.failure_reason) == 2000 and run.failure_reason.endswith("more characters cut]")
    whole = read_object(cloud, run.files[RunOutput.FAILURE_LOG])
    assert "corrupt: " + "x" * 600_000 in whole
    assert "corrupt: " + "x" * 600_000 in read_object(cloud, run.files[RunOutput.SCORING_LOG])


# ---- keys laid out wrongly -------------------------------------------------------------------------------


def test_a_bundle_at_a_key_laid_out_wrongly_is_recorded_as_rejected_with_the_layout(
    cloud: LocalCloud, tmp_path: Path
) -> None:
    # when a bundle lands under an environment id with a space, and another under the wrong file name
    archive = write_bundle_zip(EXAMPLES / "gsm8k-en" / "bundle", tmp_path / "bundle.zip").read_bytes()
    for key in ("environments/bad env/v1/bundle.zip", "environments/gsm8k/v1/other.zip"):
        cloud.client("s3").put_object(Bucket=cloud.bucket, Key=key, Body=archive)
    cloud.settle()

    # then each is a rejected environment saying how to lay the key out, and the version it meant is free
    environments = EnvironmentsRepo(table(cloud, "Environments"))
    [bad_env] = environments.versions("bad env")
    assert bad_env.status is EnvironmentStatus.REJECTED
    assert bad_env.problems == [
        "environments/bad env/v1/bundle.zip: upload a bundle as environments/<environment_id>/<version>/"
        "bundle.zip (each name 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit)"
    ]
    [other] = environments.versions("gsm8k")
    assert other.status is EnvironmentStatus.REJECTED and other.version == "key:gsm8k/v1/other.zip"
    upload_bundle(cloud, EXAMPLES / "gsm8k-en" / "bundle", tmp_path, "gsm8k")
    registered = environments.get("gsm8k", "v1")
    assert registered is not None and registered.status is EnvironmentStatus.REGISTERED


def test_a_submission_in_a_folder_fails_its_pending_run_with_the_layout(
    cloud: LocalCloud, tmp_path: Path
) -> None:
    # given a run created and waiting for its submission
    upload_bundle(cloud, EXAMPLES / "gsm8k-en" / "bundle", tmp_path, "gsm8k-en")
    runs(cloud).create(
        RunRecord(run_id="run-dir", environment_id="gsm8k-en", environment_version="v1", model="m", owner="u")
    )

    # when the submission is uploaded inside a folder under the run
    key = "submissions/run-dir/dir/predictions.json"
    body = example_submission("gsm8k-en").read_bytes()
    cloud.client("s3").put_object(Bucket=cloud.bucket, Key=key, Body=body)
    cloud.settle()

    # then the run failed saying where the submission belongs, and the upload is untouched
    run = get_run(cloud, "run-dir")
    assert run.status is RunStatus.FAILED
    assert run.failure_reason == (
        "submissions/run-dir/dir/predictions.json: upload a submission as submissions/<run_id>/<file name>, "
        "with no folder in between (each name 1-128 letters, digits, '.', '_' or '-', starting with a "
        "letter or digit)"
    )
    assert cloud.client("s3").get_object(Bucket=cloud.bucket, Key=key)["Body"].read() == body


def test_a_submission_key_without_a_usable_run_id_is_answered_and_records_nothing(cloud: LocalCloud) -> None:
    # when a submission lands straight under submissions/, naming no run
    key = "submissions/predictions.json"
    cloud.client("s3").put_object(Bucket=cloud.bucket, Key=key, Body=b"{}")
    cloud.settle()
    answer = cloud.client("lambda").invoke(
        FunctionName=function_name(cloud, "Ingest"), Payload=json.dumps(s3_notification(cloud, key))
    )

    # then the function answers without an error, and no run was made up (there is none to answer on)
    assert "FunctionError" not in answer
    assert json.loads(answer["Payload"].read()) == {"runs": [{"key": key, "ignored": True}]}
    assert runs(cloud).list().items == []


def test_a_bundle_asking_for_more_time_than_a_step_has_is_rejected_at_registration(
    cloud: LocalCloud, tmp_path: Path
) -> None:
    # given a bundle whose programs may run for an hour
    bundle = tmp_path / "slow" / "bundle"
    shutil.copytree(EXAMPLES / "custom-program" / "bundle", bundle)
    yaml_path = bundle / "competition.yaml"
    text = yaml_path.read_text(encoding="utf-8")
    assert "execution_time_limit: 300" in text
    yaml_path.write_text(
        text.replace("execution_time_limit: 300", "execution_time_limit: 3600"), encoding="utf-8"
    )

    # when it is uploaded
    upload_bundle(cloud, bundle, tmp_path, "slow")

    # then it is rejected, naming the field, the value and the maximum
    record = EnvironmentsRepo(table(cloud, "Environments")).get("slow", "v1")
    assert record is not None and record.status is EnvironmentStatus.REJECTED
    assert record.problems == [
        "competition.yaml: phases.0.execution_time_limit: 3600 s is more than the 780 s a program may run "
        "here (the run steps' own time limit); lower it to 780 or less"
    ]


# ---- hostile inputs end to end ---------------------------------------------------------------------------

DEEP_JSON = "[" * 100_000 + "]" * 100_000


def _huge_prediction_zip(path: Path) -> Path:
    """About 200 KiB of zip that expands to one 200 MiB prediction."""
    with (
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive,
        archive.open("predictions.json", "w", force_zip64=True) as target,
    ):
        target.write(b'{"predictions": [{"id": "gsm8k-en-0001", "prediction_text": "')
        for _ in range(200):
            target.write(b"7" * (1 << 20))
        target.write(b'"}]}')
    return path


@pytest.mark.parametrize(
    ("name", "write", "reason"),
    [
        (
            "predictions.json",
            lambda path: path.write_text('{"predictions": [' + DEEP_JSON + "]}", encoding="utf-8"),
            "predictions.json: predictions[0] (line 1, column 18) is nested too deeply",
        ),
        (
            "predictions.jsonl",
            lambda path: path.write_text(DEEP_JSON + "\n", encoding="utf-8"),
            "predictions.jsonl: line 1 is nested too deeply",
        ),
        (
            "submission.zip",
            _huge_prediction_zip,
            'predictions.json: predictions[0] (line 1, column 18) (id "gsm8k-en-0001") is larger than the '
            "limit of 4 MiB for one prediction",
        ),
    ],
    ids=["json-100000-deep", "jsonl-100000-deep", "zip-200MiB-prediction"],
)
def test_a_hostile_submission_fails_its_run_with_a_clear_reason(
    cloud: LocalCloud, tmp_path: Path, name: str, write: Any, reason: str
) -> None:
    # given a registered environment and a submission built to break the reader
    upload_bundle(cloud, EXAMPLES / "gsm8k-en" / "bundle", tmp_path, "gsm8k-en")
    submission = tmp_path / name
    write(submission)

    # when it is uploaded
    upload_submission(cloud, "run-hostile", submission, "gsm8k-en")

    # then the run failed on the first attempt, saying what was wrong; nothing was scored
    run = get_run(cloud, "run-hostile")
    assert run.status is RunStatus.FAILED
    assert run.failure_reason is not None and run.failure_reason.startswith(reason)
    assert RunOutput.PREDICTION_OUTPUT not in run.files


def test_a_bundle_whose_competition_yaml_is_nested_100000_deep_is_rejected(
    cloud: LocalCloud, tmp_path: Path
) -> None:
    bundle = tmp_path / "deep" / "bundle"
    shutil.copytree(EXAMPLES / "gsm8k-en" / "bundle", bundle)
    (bundle / "competition.yaml").write_text(f"title: {DEEP_JSON}\n", encoding="utf-8")

    upload_bundle(cloud, bundle, tmp_path, "deep")

    record = EnvironmentsRepo(table(cloud, "Environments")).get("deep", "v1")
    assert record is not None and record.status is EnvironmentStatus.REJECTED
    assert record.problems == [
        "competition.yaml: is nested too deeply (lists or objects inside each other about a thousand levels "
        "or more); write it with less nesting"
    ]


def test_a_scoring_program_writing_scores_nested_100000_deep_fails_the_run(
    cloud: LocalCloud, tmp_path: Path
) -> None:
    bundle = tmp_path / "deep-scores" / "bundle"
    shutil.copytree(EXAMPLES / "custom-program" / "bundle", bundle)
    (bundle / "scoring_program" / "score.py").write_text(
        "import pathlib, sys\n"
        "pathlib.Path(sys.argv[2], 'scores.json').write_text('[' * 100_000 + ']' * 100_000)\n",
        encoding="utf-8",
    )
    upload_bundle(cloud, bundle, tmp_path, "deep-scores")

    upload_submission(cloud, "run-deep-scores", example_submission("custom-program"), "deep-scores")

    run = get_run(cloud, "run-deep-scores")
    assert run.status is RunStatus.FAILED
    assert run.failure_reason == (
        "scores.json is nested too deeply (lists or objects inside each other about a thousand levels or "
        "more); write it with less nesting"
    )
