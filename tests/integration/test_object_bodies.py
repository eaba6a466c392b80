"""Uploads to presigned URLs store exactly the bytes sent, whatever the Content-Type, as S3 does.

`curl --data-binary @file <upload_url>` and Python's urllib send `application/x-www-form-urlencoded`
unless told otherwise; moto's server used to read such a body as a form and store an empty object.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cli.api_client import Api
from cli.demo import EXAMPLES
from examplegen.writing import write_bundle_zip
from localcloud.cloud import LocalCloud

EXAMPLE = EXAMPLES / "gsm8k-tr"
# Every byte value, and a line that parses as a form: neither may be changed on the way in.
AWKWARD_BYTES = bytes(range(256)) + b"\nmodel=a&answer=42&=\n"
FORM_TYPE = "application/x-www-form-urlencoded"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def server(stack_templates: dict[str, dict[str, Any]]) -> Iterator[LocalCloud]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "PRESIGN_TTL_SECONDS"):
            monkeypatch.delenv(name, raising=False)
        with LocalCloud(stack_templates, mode="server", port=_free_port()) as started:
            yield started


@pytest.fixture(scope="module")
def api(server: LocalCloud) -> Iterator[Api]:
    token = server.create_user("uploader@example.com", "Correct-Horse-9-Battery!")
    with server.serve_api(access_log=False) as served:
        yield Api(served.url, token)


def _upload_url(server: LocalCloud, key: str) -> str:
    from benchgen.aws.storage import ObjectStore

    url: str = ObjectStore(server.bucket).presigned_put_url(key, expires_in=300)
    return url


def _stored(server: LocalCloud, key: str) -> bytes:
    body: bytes = server.client("s3").get_object(Bucket=server.bucket, Key=key)["Body"].read()
    return body


def _put(url: str, body: bytes, headers: dict[str, str] | None = None) -> int:
    """A PUT as Python's urllib makes it: with no Content-Type given, it sends the form type."""
    request = urllib.request.Request(url, data=body, method="PUT", headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as refused:
        return int(refused.code)


def test_a_urllib_put_with_its_default_form_type_stores_the_bytes_sent(server: LocalCloud) -> None:
    # given an upload URL, as the API hands one out
    url = _upload_url(server, "submissions/urllib-default/predictions.json")

    # when bytes that are no UTF-8 and look like a form are PUT with urllib's defaults
    status = _put(url, AWKWARD_BYTES)

    # then S3 stored them byte for byte, under the content type the client sent, as AWS does
    assert status == 200
    key = "submissions/urllib-default/predictions.json"
    assert _stored(server, key) == AWKWARD_BYTES
    head = server.client("s3").head_object(Bucket=server.bucket, Key=key)
    assert head["ContentType"] == FORM_TYPE


@pytest.mark.parametrize("content_type", [None, FORM_TYPE, "multipart/form-data; boundary=x"])
def test_curl_data_binary_stores_the_file_byte_for_byte(
    server: LocalCloud, tmp_path: Path, content_type: str | None
) -> None:
    curl = shutil.which("curl")
    if curl is None:
        pytest.skip("curl is not installed")
    # given a file and an upload URL
    upload = tmp_path / "predictions.json"
    upload.write_bytes(AWKWARD_BYTES)
    key = f"submissions/curl-{len(content_type or '')}/predictions.json"
    url = _upload_url(server, key)

    # when curl sends it as the README's newcomer did (its default type is the form type)
    command = [curl, "--silent", "--show-error", "--fail", "-X", "PUT", "--data-binary", f"@{upload}", url]
    if content_type:
        command[1:1] = ["-H", f"Content-Type: {content_type}"]
    subprocess.run(command, check=True, timeout=30)

    # then the object is the file
    assert _stored(server, key) == AWKWARD_BYTES


def test_a_form_encoded_post_to_another_service_is_still_read_as_a_form(server: LocalCloud) -> None:
    # given the query protocol (form-encoded POSTs), which STS and SQS speak
    sqs = server.client("sqs")

    # when a queue is created and listed through it
    sqs.create_queue(QueueName="form-still-parsed")

    # then the form was read: the queue exists by the name it carried
    assert any(url.endswith("/form-still-parsed") for url in sqs.list_queues()["QueueUrls"])


def _follow(api: Api, path: str, pending: tuple[str, ...], timeout: float = 120.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found: dict[str, Any] = api.expect("GET", path, 200)
        if found["status"] not in pending:
            return found
        time.sleep(0.1)
    raise TimeoutError(f"{path} still {pending} after {timeout:.0f} s")


def test_a_bundle_and_a_submission_put_with_urllib_defaults_register_and_score(
    server: LocalCloud, api: Api, tmp_path: Path
) -> None:
    # given an environment whose bundle zip is PUT to its upload URL with urllib's default content type
    upload = api.expect("POST", "/environments", 201, {"environment_id": "form-put", "version": "v1"})
    bundle = write_bundle_zip(EXAMPLE / "bundle", tmp_path / "bundle.zip").read_bytes()
    assert _put(upload["upload_url"], bundle, upload["upload_headers"]) == 200
    assert _stored(server, upload["bundle_key"]) == bundle
    environments = api.expect("GET", "/environments", 200)["items"]
    deadline = time.monotonic() + 60
    while not any(item["environment_id"] == "form-put" for item in environments):
        assert time.monotonic() < deadline, "the bundle was never registered"
        time.sleep(0.1)
        environments = api.expect("GET", "/environments", 200)["items"]
    registered = next(item for item in environments if item["environment_id"] == "form-put")
    assert registered["status"] == "Registered"

    # when a run is created and its submission PUT the same way
    submission = (EXAMPLE / "submission" / "predictions.json").read_bytes()
    created = api.expect(
        "POST",
        "/runs",
        201,
        {"environment_id": "form-put", "version": "v1", "model": "m", "filename": "predictions.json"},
    )
    assert _put(created["upload_url"], submission) == 200

    # then the run scores the bytes sent: the example's 70%, not "predictions.json is empty"
    run = _follow(api, f"/runs/{created['run']['run_id']}", ("Pending", "Deploying", "Running"))
    assert run["status"] == "Completed", run.get("failure_reason")
    assert run["overall_score"] == pytest.approx(0.7)
    assert json.loads(_stored(server, created["upload_key"])) == json.loads(submission)
