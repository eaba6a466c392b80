"""The API Lambda on moto, driven with API Gateway REST proxy events as the Cognito authorizer sends them."""

from __future__ import annotations

import base64
import io
import json
import zipfile
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from benchgen.aws import clients
from benchgen.aws.tables.datasets import DatasetsRepo
from benchgen.aws.tables.environments import EnvironmentsRepo
from benchgen.aws.tables.runs import RunsRepo
from benchgen.bundle.spec import Column
from benchgen.outputs import RunOutput
from benchgen.records.environments import EnvironmentRecord, EnvironmentStatus
from benchgen.records.runs import ArtifactStatus, RunConfig, RunRecord, RunStatus
from benchgen.report.detailed import write_detailed_results
from benchgen.settings import Settings
from benchgen.verdicts import Verdict
from tests.integration.factories import OWNER, STRANGER, Answer, Call
from tests.records import dataset

# GET requests count no business event; powertools warns about the empty metric set each time.
pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


def register(settings: Settings, environment_id: str = "gsm8k", version: str = "1", **changes: Any) -> None:
    record = EnvironmentRecord(
        environment_id=environment_id,
        version=version,
        status=EnvironmentStatus.REGISTERED,
        title="GSM8K",
        template="math",
        has_finetune=True,
        bundle_key=f"environments/{environment_id}/{version}/bundle.zip",
        columns=[
            {"title": "Exact match", "key": "exact_match", "index": 1},
            {"title": "Accuracy", "key": "accuracy", "index": 0},
            {"title": "Answer rate", "key": "answer_rate", "index": 2},
        ],
    ).model_copy(update=changes)
    assert EnvironmentsRepo(settings.environments_table).put_if_absent(record)


def store_run(settings: Settings, run_id: str, **changes: Any) -> RunRecord:
    record = RunRecord(
        run_id=run_id,
        environment_id="gsm8k",
        environment_version="1",
        model="Qwen2.5-7B-LoRA",
        owner=OWNER,
        status=RunStatus.COMPLETED,
        run_config=RunConfig(sampling={"temperature": 0.2}, environment_variables={"API_KEY": "secret"}),
    ).model_copy(update=changes)
    assert RunsRepo(settings.runs_table).create(record)
    return record


def put_object(settings: Settings, key: str, data: bytes) -> None:
    clients.s3().put_object(Bucket=settings.data_bucket, Key=key, Body=data)


def artifact_zip(example_count: int = 200) -> bytes:
    manifest = {
        "kind": "finetune",
        "dataset_name": "GSM8K · Qwen2.5-7B-LoRA · 72.5% · Jun 2026",
        "benchmark": "GSM8K",
        "run_id": "r1",
        "base_model": "Qwen2.5-7B-LoRA",
        "selection_criterion": "wrong_plus_augmented",
        "example_count": example_count,
        "splits": {"counts": {"train": 160, "validation": 20, "test": 20}, "rule": "hash of the case id"},
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("manifest.json", json.dumps(manifest))
        archive.writestr("data/messages.jsonl", '{"messages": []}\n')
    return buffer.getvalue()


def query_of(url: str) -> dict[str, list[str]]:
    return parse_qs(urlparse(url).query)


# ---- environments ------------------------------------------------------------------------------------------


def test_asking_to_upload_a_new_environment_version_gives_a_presigned_put(call: Call) -> None:
    answer = call("POST", "/environments", body={"environment_id": "gsm8k", "version": "2"})
    assert answer.status == 201
    assert answer.body["bundle_key"] == "environments/gsm8k/2/bundle.zip"
    assert urlparse(answer.body["upload_url"]).path.endswith("/environments/gsm8k/2/bundle.zip")
    assert query_of(answer.body["upload_url"])["X-Amz-Expires"] == ["300"]


def test_the_first_publisher_owns_the_environment_and_is_signed_into_the_upload_url(call: Call) -> None:
    answer = call("POST", "/environments", body={"environment_id": "gsm8k", "version": "1"})
    assert answer.status == 201
    assert (answer.body["owner"], answer.body["publisher_group"]) == (OWNER, None)
    # The client must send this header, and cannot change it: it is one of the URL's signed headers.
    assert answer.body["upload_headers"] == {"x-amz-meta-publisher": OWNER}
    assert query_of(answer.body["upload_url"])["X-Amz-SignedHeaders"] == ["host;x-amz-meta-publisher"]


def test_another_user_cannot_publish_a_version_of_an_owned_environment(call: Call) -> None:
    assert call("POST", "/environments", body={"environment_id": "gsm8k", "version": "1"}).status == 201
    answer = call("POST", "/environments", body={"environment_id": "gsm8k", "version": "2"}, sub=STRANGER)
    assert answer.status == 403
    assert answer.body["message"].startswith(
        f"user {STRANGER} may not publish versions of environment 'gsm8k'"
    )


def test_a_member_of_the_owners_publisher_group_publishes_and_is_signed_in_with_it(call: Call) -> None:
    body = {"environment_id": "gsm8k", "version": "1", "publisher_group": "gsm8k-team"}
    assert call("POST", "/environments", body=body).status == 201
    answer = call(
        "POST",
        "/environments",
        body={"environment_id": "gsm8k", "version": "2"},
        sub=STRANGER,
        groups="readers,gsm8k-team",
    )
    assert answer.status == 201
    assert (answer.body["owner"], answer.body["publisher_group"]) == (OWNER, "gsm8k-team")
    assert answer.body["upload_headers"] == {
        "x-amz-meta-publisher": STRANGER,
        "x-amz-meta-publisher-group": "gsm8k-team",
    }


def test_only_the_owner_changes_the_publisher_group(call: Call) -> None:
    body = {"environment_id": "gsm8k", "version": "1", "publisher_group": "gsm8k-team"}
    assert call("POST", "/environments", body=body).status == 201
    takeover = {"environment_id": "gsm8k", "version": "2", "publisher_group": "my-friends"}
    answer = call("POST", "/environments", body=takeover, sub=STRANGER, groups="gsm8k-team")
    assert answer.status == 403
    assert "only the owner of environment 'gsm8k' names its publisher group" in answer.body["message"]
    moved = call("POST", "/environments", body={**takeover, "version": "3"})
    assert (moved.status, moved.body["publisher_group"]) == (201, "my-friends")
    # the old group's members lost the right with it
    answer = call(
        "POST", "/environments", body={**takeover, "version": "4"}, sub=STRANGER, groups="gsm8k-team"
    )
    assert answer.status == 403


def test_an_environment_published_before_owners_existed_cannot_be_claimed(aws: Settings, call: Call) -> None:
    register(aws, version="1")
    answer = call("POST", "/environments", body={"environment_id": "gsm8k", "version": "2"})
    assert answer.status == 403
    assert "published before environments had owners" in answer.body["message"]
    assert EnvironmentsRepo(aws.environments_table).owner_of("gsm8k") is None


def test_a_version_published_before_owners_existed_is_listed_with_no_owner(aws: Settings, call: Call) -> None:
    register(aws, version="1")
    listed = call("GET", "/environments").body["items"]
    shown = [(e["environment_id"], e["owner"], e["publisher_group"]) for e in listed]
    assert shown == [("gsm8k", None, None)]


def test_an_existing_environment_version_cannot_be_uploaded_again(aws: Settings, call: Call) -> None:
    assert call("POST", "/environments", body={"environment_id": "gsm8k", "version": "1"}).status == 201
    register(aws, version="1")
    answer = call("POST", "/environments", body={"environment_id": "gsm8k", "version": "1"})
    assert answer.status == 409
    assert "already exists" in answer.body["message"]


def test_an_environment_id_with_capitals_is_refused_naming_the_field(call: Call) -> None:
    answer = call("POST", "/environments", body={"environment_id": "GSM 8K", "version": "1"})
    assert answer.status == 422
    assert answer.body["errors"][0]["field"] == "environment_id"
    assert "lowercase letters" in answer.body["errors"][0]["message"]


def test_environments_are_listed(aws: Settings, call: Call) -> None:
    register(aws, version="1")
    register(aws, environment_id="squad", version="1")
    answer = call("GET", "/environments")
    assert answer.status == 200
    assert [(e["environment_id"], e["version"]) for e in answer.body["items"]] == [
        ("gsm8k", "1"),
        ("squad", "1"),
    ]


# ---- creating runs -----------------------------------------------------------------------------------------


def test_creating_a_run_gives_a_pending_run_and_an_upload_url(aws: Settings, call: Call) -> None:
    # given a registered environment
    register(aws)
    # when a signed-in user creates a run
    answer = call(
        "POST",
        "/runs",
        body={
            "environment_id": "gsm8k",
            "version": "1",
            "model": "Qwen2.5-7B-LoRA",
            "filename": "predictions.zip",
        },
    )
    # then the run is Pending, theirs, and the URL uploads to its submission key for 300 seconds
    assert answer.status == 201
    run = answer.body["run"]
    assert (run["status"], run["owner"], run["model"]) == ("Pending", OWNER, "Qwen2.5-7B-LoRA")
    key = f"submissions/{run['run_id']}/predictions.zip"
    assert answer.body["upload_key"] == key
    assert urlparse(answer.body["upload_url"]).path.endswith(key)
    assert query_of(answer.body["upload_url"])["X-Amz-Expires"] == ["300"]
    stored = RunsRepo(aws.runs_table).get(run["run_id"])
    assert stored is not None and stored.submission_key == key


def test_a_retried_request_with_an_idempotency_key_gives_one_run(aws: Settings, call: Call) -> None:
    register(aws)
    body = {"environment_id": "gsm8k", "version": "1", "model": "m", "filename": "predictions.zip"}
    key = {"Idempotency-Key": "5f0c7d1e-retry-1"}
    first = call("POST", "/runs", body=body, headers=key)
    again = call("POST", "/runs", body=body, headers=key)
    assert (first.status, again.status) == (201, 201)
    assert again.body["run"] == first.body["run"]
    assert again.body["upload_key"] == first.body["upload_key"]
    assert len(RunsRepo(aws.runs_table).list(limit=10).items) == 1


def test_the_same_idempotency_key_from_another_user_is_another_run(aws: Settings, call: Call) -> None:
    register(aws)
    body = {"environment_id": "gsm8k", "version": "1", "model": "m"}
    key = {"Idempotency-Key": "shared-key"}
    mine = call("POST", "/runs", body=body, headers=key)
    theirs = call("POST", "/runs", body=body, headers=key, sub=STRANGER)
    assert (mine.status, theirs.status) == (201, 201)
    assert mine.body["run"]["run_id"] != theirs.body["run"]["run_id"]
    assert theirs.body["run"]["owner"] == STRANGER


def test_an_idempotency_key_reused_with_another_body_is_refused(aws: Settings, call: Call) -> None:
    register(aws)
    key = {"Idempotency-Key": "k-1"}
    body = {"environment_id": "gsm8k", "version": "1", "model": "m"}
    assert call("POST", "/runs", body=body, headers=key).status == 201
    answer = call("POST", "/runs", body={**body, "model": "other"}, headers=key)
    assert answer.status == 422
    assert "Idempotency-Key 'k-1' was already used with a different body" in answer.body["message"]
    assert len(RunsRepo(aws.runs_table).list(limit=10).items) == 1


def test_a_refused_request_does_not_use_up_its_idempotency_key(aws: Settings, call: Call) -> None:
    body = {"environment_id": "gsm8k", "version": "1", "model": "m"}
    key = {"Idempotency-Key": "k-2"}
    assert call("POST", "/runs", body=body, headers=key).status == 404
    register(aws)
    assert call("POST", "/runs", body=body, headers=key).status == 201


def test_without_an_idempotency_key_each_request_is_a_new_run(aws: Settings, call: Call) -> None:
    register(aws)
    body = {"environment_id": "gsm8k", "version": "1", "model": "m"}
    first, second = call("POST", "/runs", body=body), call("POST", "/runs", body=body)
    assert first.body["run"]["run_id"] != second.body["run"]["run_id"]


def test_a_run_without_a_filename_uploads_submission_zip(aws: Settings, call: Call) -> None:
    register(aws)
    answer = call("POST", "/runs", body={"environment_id": "gsm8k", "version": "1", "model": "m"})
    assert answer.status == 201
    assert answer.body["upload_key"].endswith("/submission.zip")


def test_a_run_of_an_unknown_environment_is_refused(call: Call) -> None:
    answer = call("POST", "/runs", body={"environment_id": "nope", "version": "1", "model": "m"})
    assert answer.status == 404
    assert "'nope' version '1' is not registered" in answer.body["message"]


def test_a_run_of_a_rejected_environment_is_refused(aws: Settings, call: Call) -> None:
    register(aws, status=EnvironmentStatus.REJECTED, problems=["competition.yaml: tasks: missing"])
    answer = call("POST", "/runs", body={"environment_id": "gsm8k", "version": "1", "model": "m"})
    assert answer.status == 409
    assert "rejected (competition.yaml: tasks: missing)" in answer.body["message"]


def test_a_submission_filename_with_a_path_is_refused_naming_the_field(aws: Settings, call: Call) -> None:
    register(aws)
    answer = call(
        "POST",
        "/runs",
        body={"environment_id": "gsm8k", "version": "1", "model": "m", "filename": "../x.zip"},
    )
    assert answer.status == 422
    assert [(e["location"], e["field"]) for e in answer.body["errors"]] == [("body", "filename")]
    assert ".json, .jsonl or .zip" in answer.body["message"]


def test_a_misspelt_field_is_refused_naming_it(aws: Settings, call: Call) -> None:
    register(aws)
    answer = call("POST", "/runs", body={"environment_id": "gsm8k", "version": "1", "modle": "m"})
    assert answer.status == 422
    assert {e["field"] for e in answer.body["errors"]} == {"model", "modle"}


def test_a_body_that_is_not_json_is_refused(call: Call) -> None:
    answer = call("POST", "/runs", body="{not json")
    assert answer.status == 422
    assert answer.body["errors"] == [
        {"location": "body", "field": "body", "message": "the body is not valid JSON"}
    ]


def test_a_body_that_is_not_utf8_is_refused_saying_so(call: Call) -> None:
    # API Gateway hands the function a body it cannot read as text base64-encoded.
    raw = '{"environment_id": "gsm8k", "version": "1", "model": "caf\xe9"}'.encode("latin-1")
    answer = call("POST", "/runs", body=base64.b64encode(raw).decode(), is_base64=True)
    assert answer.status == 422
    assert answer.body["errors"] == [
        {"location": "body", "field": "body", "message": "the body is not UTF-8 text"}
    ]
    assert "encoded as UTF-8" in answer.body["message"]


@pytest.mark.parametrize(
    "content_type", ["text/plain", "multipart/form-data", "application/x-www-form-urlencoded"]
)
def test_a_body_that_is_not_sent_as_json_is_refused_with_415(call: Call, content_type: str) -> None:
    answer = call(
        "POST",
        "/runs",
        body='{"environment_id": "gsm8k", "version": "1", "model": "m"}',
        headers={"Content-Type": content_type},
    )
    assert answer.status == 415
    assert answer.body["message"] == "send the body as JSON, with the header Content-Type: application/json"


@pytest.mark.parametrize("model", ["   ", " Qwen", "Qwen\n"])
def test_a_blank_or_padded_model_name_is_refused_naming_the_field(
    aws: Settings, call: Call, model: str
) -> None:
    register(aws)
    answer = call("POST", "/runs", body={"environment_id": "gsm8k", "version": "1", "model": model})
    assert answer.status == 422
    assert [(e["field"], e["message"]) for e in answer.body["errors"]] == [
        ("model", "must not be blank, start or end with a space, or hold control characters")
    ]


@pytest.mark.parametrize(
    ("run_config", "field"),
    [
        ({"environment_variables": {f"VAR_{i}": "x" for i in range(33)}}, "run_config.environment_variables"),
        ({"environment_variables": {"TOKEN": "x" * 1025}}, "run_config.environment_variables.TOKEN"),
        ({"sampling": {"stop": "x" * 100_000}}, "run_config.sampling.stop"),
        ({"sampling": {"temperature": True}}, "run_config.sampling.temperature"),
    ],
)
def test_an_oversized_or_mistyped_run_config_is_refused_naming_the_field(
    aws: Settings, call: Call, run_config: dict[str, Any], field: str
) -> None:
    register(aws)
    body = {"environment_id": "gsm8k", "version": "1", "model": "m", "run_config": run_config}
    answer = call("POST", "/runs", body=body)
    assert answer.status == 422
    assert field in {e["field"] for e in answer.body["errors"]}


def test_sampling_numbers_are_kept_to_twelve_decimals(aws: Settings, call: Call) -> None:
    # 1e-200 is valid JSON but no DynamoDB number: it used to fail the request with a 500.
    register(aws)
    sampling = {"temperature": 0.7, "min_p": 1e-200, "seed": 7}
    body = {"environment_id": "gsm8k", "version": "1", "model": "m", "run_config": {"sampling": sampling}}
    answer = call("POST", "/runs", body=body)
    assert answer.status == 201
    config = call(
        "GET",
        f"/runs/{answer.body['run']['run_id']}/config",
        resource="/runs/{run_id}/config",
        path_parameters={"run_id": answer.body["run"]["run_id"]},
    )
    assert config.body["sampling"] == {"temperature": 0.7, "min_p": 0.0, "seed": 7}


def test_a_request_without_cognito_claims_is_unauthenticated(aws: Settings, call: Call) -> None:
    register(aws)
    answer = call("POST", "/runs", body={"environment_id": "gsm8k", "version": "1", "model": "m"}, sub=None)
    assert answer.status == 401
    assert "sign in" in answer.body["message"]


# ---- listing runs ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "parameter"),
    [
        ("/runs", "environment_id"),
        ("/runs", "status"),
        ("/runs", "next_token"),
        ("/runs", "limit"),
        ("/datasets", "kind"),
        ("/datasets", "next_token"),
        ("/environments", "next_token"),
    ],
)
def test_an_empty_query_value_is_refused_naming_the_parameter(call: Call, path: str, parameter: str) -> None:
    answer = call("GET", path, query={parameter: ""})
    assert answer.status == 422
    assert [(e["location"], e["field"]) for e in answer.body["errors"]] == [("query", parameter)]


def test_runs_of_an_environment_are_listed_newest_first_in_pages(aws: Settings, call: Call) -> None:
    # given three runs of gsm8k and one of squad
    for minute, run_id in ((1, "a"), (2, "b"), (3, "c")):
        store_run(aws, run_id, created_at=f"2026-06-01T10:0{minute}:00.000000Z")
    store_run(aws, "x", environment_id="squad", created_at="2026-06-01T10:09:00.000000Z")
    # when gsm8k's runs are listed two at a time
    first = call("GET", "/runs", query={"environment_id": "gsm8k", "limit": "2"})
    second = call(
        "GET",
        "/runs",
        query={"environment_id": "gsm8k", "limit": "2", "next_token": first.body["next_token"]},
    )
    # then the first page holds c and b, the second a, and no configuration is shown
    assert [r["run_id"] for r in first.body["items"]] == ["c", "b"]
    assert [r["run_id"] for r in second.body["items"]] == ["a"]
    assert second.body["next_token"] is None
    assert all("run_config" not in r for r in first.body["items"])


def test_runs_are_filtered_by_status(aws: Settings, call: Call) -> None:
    store_run(aws, "done", created_at="2026-06-01T10:01:00.000000Z")
    store_run(aws, "broken", status=RunStatus.FAILED, created_at="2026-06-01T10:02:00.000000Z")
    answer = call("GET", "/runs", query={"status": "Failed"})
    assert [r["run_id"] for r in answer.body["items"]] == ["broken"]


def test_an_unknown_status_filter_is_refused_naming_it(call: Call) -> None:
    answer = call("GET", "/runs", query={"status": "Finished"})
    assert answer.status == 422
    assert answer.body["errors"][0]["location"] == "query"
    assert answer.body["errors"][0]["field"] == "status"


def test_a_page_size_over_100_is_refused_naming_it(call: Call) -> None:
    answer = call("GET", "/runs", query={"limit": "500"})
    assert answer.status == 422
    assert answer.body["errors"][0]["field"] == "limit"


def test_a_bad_next_token_is_a_400_that_says_what_to_do(call: Call) -> None:
    answer = call("GET", "/runs", query={"next_token": "garbage"})
    assert answer.status == 400
    assert "leave it out" in answer.body["message"]


# ---- one run -----------------------------------------------------------------------------------------------


def test_a_run_shows_tiles_in_column_order_and_hides_its_config(aws: Settings, call: Call) -> None:
    # given a completed run linked to a dataset, of an environment whose columns are out of list order
    register(aws)
    store_run(
        aws,
        "r1",
        overall_score=0.725,
        metrics={"exact_match": 0.7, "answer_rate": 0.95, "accuracy": 0.725},
        other_metrics={"duration": 12.5},
        counts={"total": 40, "passed": 29},
        files={
            RunOutput.SCORING_OUTPUT: "runs/r1/scoring_output.zip",
            RunOutput.PREDICTION_OUTPUT: "predictions/r1/p.zip",
        },
        dataset_id="ds-r1",
        dataset_name="GSM8K · Qwen2.5-7B-LoRA · 72.5% · Jun 2026",
    )
    # when it is read
    answer = call("GET", "/runs/r1", resource="/runs/{run_id}", path_parameters={"run_id": "r1"})
    # then tiles follow the column indexes, files are labelled in reading order, the dataset is linked
    assert answer.status == 200
    assert [(t["title"], t["value"]) for t in answer.body["metrics"]] == [
        ("Accuracy", 0.725),
        ("Exact match", 0.7),
        ("Answer rate", 0.95),
    ]
    assert answer.body["other_metrics"] == {"duration": 12.5}
    assert answer.body["files"] == ["Prediction Output", "Scoring Output"]
    assert answer.body["dataset"] == {
        "dataset_id": "ds-r1",
        "name": "GSM8K · Qwen2.5-7B-LoRA · 72.5% · Jun 2026",
        "href": "/datasets/ds-r1",
    }
    assert "run_config" not in answer.body
    assert "secret" not in json.dumps(answer.body)


def test_an_unknown_run_is_not_found(call: Call) -> None:
    answer = call("GET", "/runs/nope", resource="/runs/{run_id}", path_parameters={"run_id": "nope"})
    assert answer.status == 404
    assert "no run 'nope'" in answer.body["message"]


def test_a_run_id_no_run_can_have_is_not_found_without_a_look_up(call: Call) -> None:
    # Such an id used to reach DynamoDB, which refuses keys over 2048 bytes: a 500.
    run_id = "r" * 3000
    answer = call("GET", f"/runs/{run_id}", resource="/runs/{run_id}", path_parameters={"run_id": run_id})
    assert answer.status == 404
    assert answer.body["message"].startswith("no run 'rrr")
    assert "no run can have this id" in answer.body["message"]


def test_the_owner_reads_the_run_config(aws: Settings, call: Call) -> None:
    store_run(aws, "r1")
    answer = call(
        "GET", "/runs/r1/config", resource="/runs/{run_id}/config", path_parameters={"run_id": "r1"}
    )
    assert answer.status == 200
    assert answer.body == {
        "sampling": {"temperature": 0.2},
        "environment_variables": {"API_KEY": "secret"},
        "inference_mode": None,
        "limits": None,
        "timeout_s": None,
        "prices": None,
    }


def test_another_user_cannot_read_the_run_config(aws: Settings, call: Call) -> None:
    store_run(aws, "r1")
    answer = call(
        "GET",
        "/runs/r1/config",
        resource="/runs/{run_id}/config",
        path_parameters={"run_id": "r1"},
        sub=STRANGER,
    )
    assert answer.status == 403
    assert answer.body == {"message": "only the run's owner can read its configuration", "errors": []}


def test_run_files_come_with_short_lived_download_urls(aws: Settings, call: Call) -> None:
    # given a run whose submission and scoring output are in the bucket, and whose log is missing
    store_run(
        aws,
        "r1",
        submission_key="submissions/r1/predictions.zip",
        files={
            RunOutput.SCORING_OUTPUT: "runs/r1/scoring_output.zip",
            RunOutput.SCORING_LOG: "runs/r1/missing.log",
        },
    )
    put_object(aws, "submissions/r1/predictions.zip", b"x" * 10)
    put_object(aws, "runs/r1/scoring_output.zip", b"y" * 25)
    # when its files are listed
    answer = call("GET", "/runs/r1/files", resource="/runs/{run_id}/files", path_parameters={"run_id": "r1"})
    # then each present file has its size and a URL for its key that expires in 300 seconds
    assert answer.status == 200
    files = answer.body["files"]
    assert [(f["label"], f["key"], f["size"]) for f in files] == [
        ("Submission File", "submissions/r1/predictions.zip", 10),
        ("Scoring Output", "runs/r1/scoring_output.zip", 25),
    ]
    for entry in files:
        assert urlparse(entry["url"]).path.endswith(entry["key"])
        assert query_of(entry["url"])["X-Amz-Expires"] == ["300"]


def test_a_run_stored_with_files_keyed_by_label_still_lists_them(aws: Settings, call: Call) -> None:
    # given a run stored when its files were keyed by their labels, as deployed runs were
    store_run(aws, "r1")
    clients.dynamodb().update_item(
        TableName=aws.runs_table,
        Key={"run_id": {"S": "r1"}},
        UpdateExpression="SET #files = :files",
        ExpressionAttributeNames={"#files": "files"},
        ExpressionAttributeValues={
            ":files": {"M": {"Finetune Artifact": {"S": "runs/r1/finetune_artifact.zip"}}},
        },
    )
    put_object(aws, "runs/r1/finetune_artifact.zip", b"z" * 7)
    # when its files are listed
    answer = call("GET", "/runs/r1/files", resource="/runs/{run_id}/files", path_parameters={"run_id": "r1"})
    # then the file is listed under its label, with its size
    assert answer.status == 200
    assert [(f["label"], f["key"], f["size"]) for f in answer.body["files"]] == [
        ("Finetune Artifact", "runs/r1/finetune_artifact.zip", 7)
    ]


def test_detailed_results_give_the_head_and_a_url_not_the_cases(
    aws: Settings, call: Call, tmp_path: Path
) -> None:
    # given a run whose detailed_results.json was written by the report module for 50 cases
    verdicts = [
        Verdict(
            case_id=f"c{i}",
            gold="4",
            prediction="4" if i % 2 else "5",
            passed=bool(i % 2),
            answered=True,
            difficulty="easy" if i < 25 else "hard",
        )
        for i in range(50)
    ]
    write_detailed_results(
        verdicts,
        title="GSM8K",
        metrics={"accuracy": 0.5},
        columns=[Column(title="Accuracy", key="accuracy")],
        out_dir=tmp_path,
    )
    put_object(aws, "runs/r1/detailed_results.json", (tmp_path / "detailed_results.json").read_bytes())
    store_run(aws, "r1", files={RunOutput.DETAILED_JSON: "runs/r1/detailed_results.json"})
    # when they are read through the API
    answer = call(
        "GET",
        "/runs/r1/detailed-results",
        resource="/runs/{run_id}/detailed-results",
        path_parameters={"run_id": "r1"},
    )
    # then the summary, tiles and breakdowns come back, the cases stay behind the URL
    assert answer.status == 200
    assert answer.body["title"] == "GSM8K"
    assert answer.body["summary"]["total"] == 50
    assert answer.body["summary"]["passed"] == 25
    assert [tile["key"] for tile in answer.body["metrics"]] == ["accuracy"]
    assert set(answer.body["breakdowns"]["difficulty"]) == {"easy", "hard"}
    assert "cases" not in answer.body
    assert urlparse(answer.body["url"]).path.endswith("runs/r1/detailed_results.json")


def test_detailed_results_of_an_unscored_run_are_not_found(aws: Settings, call: Call) -> None:
    store_run(aws, "r1", status=RunStatus.RUNNING)
    answer = call(
        "GET",
        "/runs/r1/detailed-results",
        resource="/runs/{run_id}/detailed-results",
        path_parameters={"run_id": "r1"},
    )
    assert answer.status == 404
    assert "no detailed results yet (status Running)" in answer.body["message"]


# ---- datasets ----------------------------------------------------------------------------------------------


def _save(call: Call, run_id: str, sub: str = OWNER) -> Answer:
    return call(
        "POST",
        f"/runs/{run_id}/dataset",
        resource="/runs/{run_id}/dataset",
        path_parameters={"run_id": run_id},
        sub=sub,
    )


def test_saving_a_runs_dataset_works_once(aws: Settings, call: Call) -> None:
    # given a run with a finetune artifact and no dataset yet
    store_run(aws, "r1", files={RunOutput.FINETUNE_ARTIFACT: "runs/r1/finetune_artifact.zip"})
    put_object(aws, "runs/r1/finetune_artifact.zip", artifact_zip())
    # when its owner saves it twice
    first = _save(call, "r1")
    second = _save(call, "r1")
    # then the first save creates the dataset from the manifest and links the run, the second is refused
    assert first.status == 201
    assert first.body["dataset_id"] == "ds-r1"
    assert first.body["name"] == "GSM8K · Qwen2.5-7B-LoRA · 72.5% · Jun 2026"
    assert (first.body["example_count"], first.body["train_count"], first.body["test_count"]) == (
        200,
        160,
        20,
    )
    assert len(first.body["artifact_sha256"]) == 64
    assert second.status == 409
    assert "dataset already saved for this run" in second.body["message"]
    run = RunsRepo(aws.runs_table).get("r1")
    assert run is not None
    assert (run.dataset_id, run.artifact_status) == ("ds-r1", ArtifactStatus.SAVED)


def test_saving_a_run_without_an_artifact_is_refused(aws: Settings, call: Call) -> None:
    store_run(aws, "r1", artifact_reason="the benchmark's scoring program did not emit one")
    answer = _save(call, "r1")
    assert answer.status == 409
    assert answer.body["message"] == (
        "the run has no finetune artifact (the benchmark's scoring program did not emit one)"
    )


def test_saving_an_unknown_runs_dataset_is_not_found(call: Call) -> None:
    assert _save(call, "nope").status == 404


def test_only_the_owner_saves_a_runsdataset(aws: Settings, call: Call) -> None:
    store_run(aws, "r1", files={RunOutput.FINETUNE_ARTIFACT: "runs/r1/finetune_artifact.zip"})
    put_object(aws, "runs/r1/finetune_artifact.zip", artifact_zip())
    answer = _save(call, "r1", sub=STRANGER)
    assert answer.status == 403
    assert DatasetsRepo(aws.datasets_table).get("ds-r1") is None


def test_datasets_are_listed_newest_first_with_a_kind_filter(aws: Settings, call: Call) -> None:
    datasets = DatasetsRepo(aws.datasets_table)
    datasets.put_if_absent(dataset("r1", "2026-06-01T10:01:00.000000Z"))
    datasets.put_if_absent(dataset("r2", "2026-06-01T10:03:00.000000Z"))
    datasets.put_if_absent(dataset("r3", "2026-06-01T10:02:00.000000Z", kind="preference"))
    finetune = call("GET", "/datasets", query={"kind": "finetune"})
    preference = call("GET", "/datasets", query={"kind": "preference"})
    assert [d["dataset_id"] for d in finetune.body["items"]] == ["ds-r2", "ds-r1"]
    assert [d["dataset_id"] for d in preference.body["items"]] == ["ds-r3"]


def test_a_dataset_is_read_by_id(aws: Settings, call: Call) -> None:
    DatasetsRepo(aws.datasets_table).put_if_absent(dataset("r1", "2026-06-01T10:01:00.000000Z"))
    found = call(
        "GET", "/datasets/ds-r1", resource="/datasets/{dataset_id}", path_parameters={"dataset_id": "ds-r1"}
    )
    missing = call(
        "GET", "/datasets/ds-x", resource="/datasets/{dataset_id}", path_parameters={"dataset_id": "ds-x"}
    )
    assert (found.status, found.body["run_id"]) == (200, "r1")
    assert missing.status == 404


def test_an_unknown_route_is_a_404_with_a_message(call: Call) -> None:
    answer = call("GET", "/nowhere")
    assert answer.status == 404
    assert answer.body["message"] == "Not found"
