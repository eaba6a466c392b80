"""Submissions no run takes, on the local cloud: each is answered on the bus, in the log and by the API, and
changes no other run and no upload."""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterator
from urllib.parse import quote

import pytest

from benchgen.aws.tables.runs import RunsRepo
from benchgen.records.runs import RunRecord, RunStatus
from cli.api_client import Api
from localcloud.cloud import LocalCloud
from tests.integration.factories import received_events, watch_events

NEW_RUN = "create a new run with POST /runs and upload to the URL it returns"
LAYOUT = (
    "upload a submission as submissions/<run_id>/<file name>, with no folder in between (each name 1-128 "
    "letters, digits, '.', '_' or '-', starting with a letter or digit); no run can have such an id: "
    + NEW_RUN
)


def runs(cloud: LocalCloud) -> RunsRepo:
    names = cloud.table_names.items()
    return RunsRepo(next(name for logical_id, name in names if logical_id.startswith("Runs")))


def upload(cloud: LocalCloud, key: str, body: bytes = b"{}") -> None:
    cloud.client("s3").put_object(Bucket=cloud.bucket, Key=key, Body=body)
    cloud.settle()


def stored(cloud: LocalCloud, key: str) -> bytes:
    body: bytes = cloud.client("s3").get_object(Bucket=cloud.bucket, Key=key)["Body"].read()
    return body


def pending(run_id: str) -> RunRecord:
    return RunRecord(run_id=run_id, environment_id="gsm8k-en", environment_version="v1", model="m", owner="u")


@pytest.fixture
def ingest_lines() -> Iterator[list[logging.LogRecord]]:
    """The records the ingest function's logger (the library's lines among them) writes."""
    module = importlib.import_module("functions.ingest.handler")
    records: list[logging.LogRecord] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Collect()
    python_logger = logging.getLogger(module.function.logger.name)
    level = python_logger.level
    python_logger.setLevel(logging.INFO)
    python_logger.addHandler(handler)
    yield records
    python_logger.removeHandler(handler)
    python_logger.setLevel(level)


def test_a_submission_under_a_run_id_with_a_space_is_refused_on_the_bus_with_its_key_and_reason(
    cloud: LocalCloud,
) -> None:
    # given a watch on the bus
    queue = watch_events(cloud)

    # when a submission is uploaded under a run id with a space (S3 announces its key as bad+run)
    key = "submissions/bad run/predictions.json"
    upload(cloud, key)

    # then the bus says the upload was refused, naming the key and what to do; no run was made up
    refused = {"key": key, "reason": f"{key}: {LAYOUT}"}
    assert received_events(cloud, queue) == [("SubmissionRefused", refused)]
    assert runs(cloud).list().items == []
    assert stored(cloud, key) == b"{}"


def test_a_refused_submission_is_one_log_line_with_the_key_and_the_reason(
    cloud: LocalCloud, ingest_lines: list[logging.LogRecord]
) -> None:
    # when a submission is uploaded under a run id with a space
    key = "submissions/bad run/predictions.json"
    upload(cloud, key)

    # then the ingest function logged one refusal, with the key and the reason
    refusals = [record for record in ingest_lines if record.getMessage() == "submission refused"]
    assert [(line.levelname, vars(line)["key"], vars(line)["reason"]) for line in refusals] == [
        ("WARNING", key, f"{key}: {LAYOUT}")
    ]


def test_reading_a_run_id_no_run_can_have_says_why_its_upload_was_refused(cloud: LocalCloud) -> None:
    # given a user signed in to the API
    with cloud.serve_api(access_log=False) as server:
        api = Api(server.url, cloud.create_user("uploader@example.com", "Uploader-Passw0rd!x"))

        # when they read the run their upload under submissions/bad run/ named
        status, answer = api.call("GET", "/runs/" + quote("bad run", safe=""))

    # then the answer names the id, says why the upload was refused and what to do instead
    assert status == 404
    assert answer["message"] == (
        "no run 'bad run': no run can have this id (a run id is 1-128 letters, digits, '.', '_' or '-', "
        "starting with a letter or digit), so a submission uploaded under submissions/bad run/ is refused "
        "and never scored; create a run with POST /runs and upload to the URL it returns"
    )


@pytest.mark.parametrize(
    "key",
    [
        "submissions/rün-1/predictions.json",
        "submissions/../predictions.json",
        "submissions//predictions.json",
        "submissions/predictions.json",
        "submissions/" + "r" * 200 + "/predictions.json",
        "submissions/.hidden/predictions.json",
    ],
    ids=["unicode", "dot-dot", "empty-run-id", "no-run-id", "run-id-too-long", "leading-dot"],
)
def test_a_key_naming_no_usable_run_id_is_refused_and_changes_no_run(cloud: LocalCloud, key: str) -> None:
    # given a pending run and a watch on the bus
    runs(cloud).create(pending("run-1"))
    queue = watch_events(cloud)

    # when a submission is uploaded under a key that names no usable run id
    upload(cloud, key)

    # then it is refused on the bus, the pending run is as it was, and the upload is kept
    refused = {"key": key, "reason": f"{key}: {LAYOUT}"}
    assert received_events(cloud, queue) == [("SubmissionRefused", refused)]
    assert [run.run_id for run in runs(cloud).list().items] == ["run-1"]
    run = runs(cloud).get("run-1")
    assert run is not None and run.status is RunStatus.PENDING
    assert stored(cloud, key) == b"{}"


def test_a_dot_dot_after_a_run_id_fails_only_the_run_it_names_first(cloud: LocalCloud) -> None:
    # given two pending runs and a watch on the bus
    runs(cloud).create(pending("run-1"))
    runs(cloud).create(pending("run-2"))
    queue = watch_events(cloud)

    # when a submission is uploaded to run-1's folder with a path that reads as leading to run-2's
    key = "submissions/run-1/../run-2/predictions.json"
    upload(cloud, key)

    # then run-1, which the key names, failed with the layout; run-2 still waits for its submission
    reason = (
        f"{key}: upload a submission as submissions/<run_id>/<file name>, with no folder in between (each "
        "name 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit)"
    )
    failed, waiting = runs(cloud).get("run-1"), runs(cloud).get("run-2")
    assert failed is not None and (failed.status, failed.failure_reason) == (RunStatus.FAILED, reason)
    assert waiting is not None and waiting.status is RunStatus.PENDING
    assert received_events(cloud, queue) == [
        ("SubmissionRefused", {"key": key, "reason": reason, "run_id": "run-1"})
    ]


def test_a_second_upload_to_a_running_run_is_refused_and_leaves_the_run_on_its_first(
    cloud: LocalCloud,
) -> None:
    # given a run already running on its first submission, and a watch on the bus
    first = "submissions/run-1/predictions.json"
    running = pending("run-1").model_copy(update={"status": RunStatus.RUNNING, "submission_key": first})
    runs(cloud).create(running)
    queue = watch_events(cloud)

    # when another submission is uploaded for it
    second = "submissions/run-1/better.json"
    upload(cloud, second, b'{"second": true}')

    # then the bus says it was refused and why; the run keeps its first submission, both uploads are kept
    reason = (
        f"run run-1 already took the submission {first} (status Running): a run takes one submission; "
        + NEW_RUN
    )
    assert received_events(cloud, queue) == [
        ("SubmissionRefused", {"key": second, "reason": reason, "run_id": "run-1"})
    ]
    run = runs(cloud).get("run-1")
    assert run is not None and (run.status, run.submission_key) == (RunStatus.RUNNING, first)
    assert stored(cloud, second) == b'{"second": true}'


def test_an_upload_to_a_run_id_that_does_not_exist_records_it_failed_saying_how_to_upload(
    cloud: LocalCloud,
) -> None:
    # given a watch on the bus
    queue = watch_events(cloud)

    # when a submission lands for a run nobody created, with no metadata naming its environment
    key = "submissions/run-nobody/predictions.json"
    upload(cloud, key)

    # then a failed run under that id says how to upload, and the bus says the upload was refused
    run = runs(cloud).get("run-nobody")
    assert run is not None and run.status is RunStatus.FAILED
    assert run.failure_reason is not None and "POST /runs" in run.failure_reason
    ((detail_type, detail),) = received_events(cloud, queue)
    assert (detail_type, detail["key"], detail["run_id"]) == ("SubmissionRefused", key, "run-nobody")
    assert detail["reason"].startswith(
        "run run-nobody is Failed, not waiting for a submission (run run-nobody does not exist"
    )


def test_a_folder_under_a_pending_run_is_refused_and_the_run_still_waits_for_its_file(
    cloud: LocalCloud,
) -> None:
    # given a pending run and a watch on the bus
    runs(cloud).create(pending("run-1"))
    queue = watch_events(cloud)

    # when a folder is made under its id (a key ending in '/', as the S3 console's "Create folder" makes)
    key = "submissions/run-1/"
    upload(cloud, key, b"")

    # then the bus says a folder is no submission, and the run still takes the file uploaded next
    reason = (
        f"{key} is a folder, not a submission: upload the file itself as submissions/<run_id>/<file name>"
    )
    refused = {"key": key, "reason": reason, "run_id": "run-1"}
    assert received_events(cloud, queue) == [("SubmissionRefused", refused)]
    run = runs(cloud).get("run-1")
    assert run is not None and run.status is RunStatus.PENDING
