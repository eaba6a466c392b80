"""A presigned URL on the local cloud is refused where S3 refuses it: a changed signed header, another
key, another access key, an expired URL."""

from __future__ import annotations

import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config

from cli.api_client import Api
from localcloud.cloud import LocalCloud


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


def _signer(server: LocalCloud, key: str = "testing") -> Any:
    return boto3.client(
        "s3",
        endpoint_url=server.endpoint_url,
        region_name=server.region,
        aws_access_key_id=key,
        aws_secret_access_key=key,
        config=Config(signature_version="s3v4"),
    )


def _send(
    url: str, *, method: str = "PUT", body: bytes | None = b"{}", headers: dict[str, str] | None = None
) -> tuple[int, str]:
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return int(answer.status), answer.read().decode()
    except urllib.error.HTTPError as refused:
        return int(refused.code), refused.read().decode()


def _exists(server: LocalCloud, key: str) -> bool:
    found = server.client("s3").list_objects_v2(Bucket=server.bucket, Prefix=key)
    return bool(found.get("Contents"))


def _put_url(server: LocalCloud, key: str, **params: Any) -> str:
    url: str = _signer(server).generate_presigned_url(
        "put_object", Params={"Bucket": server.bucket, "Key": key, **params}, ExpiresIn=300, HttpMethod="PUT"
    )
    return url


def test_a_url_signed_for_one_content_type_is_refused_with_another(server: LocalCloud) -> None:
    # given a URL whose signature covers Content-Type: application/json
    url = _put_url(server, "signed/typed.json", ContentType="application/json")

    # when it is used with another content type, and then with the signed one
    refused = _send(url, headers={"Content-Type": "text/plain"})
    stored_after_refusal = _exists(server, "signed/typed.json")
    accepted = _send(url, headers={"Content-Type": "application/json"})

    # then S3's refusal, nothing stored by it, and the signed type accepted
    assert refused[0] == 403
    assert "<Code>SignatureDoesNotMatch</Code>" in refused[1]
    assert not stored_after_refusal
    assert accepted[0] == 200


def test_a_url_that_signs_no_content_type_takes_any_as_s3_does(server: LocalCloud) -> None:
    url = _put_url(server, "signed/untyped.json")
    assert _send(url, headers={"Content-Type": "text/plain"})[0] == 200
    assert _send(url)[0] == 200


def test_a_url_used_for_another_key_or_method_is_refused(server: LocalCloud) -> None:
    url = _put_url(server, "signed/mine.json")
    assert _send(url.replace("signed/mine.json", "signed/theirs.json"))[0] == 403
    assert _send(url, method="POST")[0] == 403
    assert not _exists(server, "signed/theirs.json")


def test_a_url_signed_with_an_access_key_the_cloud_does_not_have_is_refused(server: LocalCloud) -> None:
    url: str = _signer(server, "AKIASOMEONEELSE").generate_presigned_url(
        "put_object", Params={"Bucket": server.bucket, "Key": "signed/stranger.json"}, HttpMethod="PUT"
    )
    status, body = _send(url)
    assert status == 403
    assert "<Code>InvalidAccessKeyId</Code>" in body


def test_an_expired_url_is_refused(server: LocalCloud) -> None:
    url: str = _signer(server).generate_presigned_url(
        "get_object", Params={"Bucket": server.bucket, "Key": "signed/untyped.json"}, ExpiresIn=1
    )
    time.sleep(2.1)
    status, body = _send(url, method="GET", body=None)
    assert status == 403
    assert "Request has expired" in body


def test_a_bundle_upload_must_carry_the_publisher_header_signed_into_its_url(server: LocalCloud) -> None:
    # given an upload URL from the API, which signs the caller as the publisher into it
    token = server.create_user("publisher@example.com", "Correct-Horse-9-Battery!")
    with server.serve_api(access_log=False) as served:
        upload = Api(served.url, token).expect(
            "POST", "/environments", 201, {"environment_id": "signed-stamp", "version": "v1"}
        )
    ((header, publisher),) = upload["upload_headers"].items()

    # when the bundle is PUT without the header, or naming someone else
    without = _send(upload["upload_url"], body=b"zip")
    someone_else = _send(upload["upload_url"], body=b"zip", headers={header: "someone-else"})

    # then both are refused and nothing landed; as told, it is taken
    assert (without[0], someone_else[0]) == (403, 403)
    assert not _exists(server, upload["bundle_key"])
    assert _send(upload["upload_url"], body=b"zip", headers={header: publisher})[0] == 200


def test_a_cors_preflight_of_a_presigned_url_is_answered_by_the_bucket_rules(server: LocalCloud) -> None:
    # given an upload URL a browser is about to PUT to, from another origin
    url = _put_url(server, "signed/from-a-browser.json")

    # when the browser asks first, as it does for a cross-origin PUT
    status, _ = _send(
        url,
        method="OPTIONS",
        body=None,
        headers={"Origin": "http://127.0.0.1:8081", "Access-Control-Request-Method": "PUT"},
    )

    # then the answer is the bucket's CORS rule (it allows PUT from any origin), not a signature error
    assert status == 200


@pytest.mark.parametrize(
    "key", ["signed/my predictions.json", "signed/tahmin-ğüş.json", "signed/a+b=c&d.json"]
)
def test_a_url_for_a_key_that_needs_encoding_is_taken_as_signed(server: LocalCloud, key: str) -> None:
    assert _send(_put_url(server, key), body=b"{}")[0] == 200
    assert _exists(server, key)
