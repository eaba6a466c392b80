"""Who may publish an environment's versions, enforced on both ways in: the API and the S3 upload."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from benchgen.aws.tables.environments import EnvironmentsRepo
from benchgen.ownership import OPERATOR
from benchgen.records.environments import EnvironmentOwner, EnvironmentRecord, EnvironmentStatus
from cli.api_client import Api
from cli.demo import ENVIRONMENT_VERSION, EXAMPLES, Progress, put_bundle, register_example
from examplegen.writing import write_bundle_zip
from localcloud.cloud import LocalCloud

EXAMPLE_BUNDLE = Path(__file__).resolve().parents[2] / "examples" / "gsm8k-tr" / "bundle"
PASSWORD = "Correct-Horse-9-Battery!"


def environments(cloud: LocalCloud) -> EnvironmentsRepo:
    name = next(
        name for logical_id, name in cloud.table_names.items() if logical_id.startswith("Environments")
    )
    return EnvironmentsRepo(name)


def recorded(cloud: LocalCloud, environment_id: str, version: str) -> EnvironmentRecord:
    record = environments(cloud).get(environment_id, version)
    assert record is not None
    return record


@pytest.fixture
def bundle(tmp_path: Path) -> bytes:
    return write_bundle_zip(EXAMPLE_BUNDLE, tmp_path / "bundle.zip").read_bytes()


@pytest.fixture
def user_api(cloud: LocalCloud) -> Any:
    """``as_user(name)``: sign a new user in, and get a client of the API served on loopback, and its id."""
    cognito = cloud.client("cognito-idp")
    with cloud.serve_api(access_log=False) as server:

        def as_user(name: str) -> tuple[Api, str]:
            token = cloud.create_user(name, PASSWORD)
            attributes = cognito.admin_get_user(UserPoolId=cloud.user_pool_id, Username=name)[
                "UserAttributes"
            ]
            return Api(server.url, token), next(a["Value"] for a in attributes if a["Name"] == "sub")

        yield as_user


def put_as_told(cloud: LocalCloud, upload: dict[str, Any], body: bytes) -> None:
    """Upload a bundle to the key the API named, with the x-amz-meta headers it said to send (signed into
    the URL, so S3 refuses a PUT that changes or drops them: test_presigned_urls.py), and let it register."""
    put_bundle(cloud, upload, body)
    cloud.settle()


def test_a_bundle_uploaded_as_the_api_said_is_registered_as_its_publishers(
    cloud: LocalCloud, user_api: Any, bundle: bytes
) -> None:
    api, author = user_api("author")
    upload = api.expect("POST", "/environments", 201, {"environment_id": "gsm8k-tr", "version": "1"})
    put_as_told(cloud, upload, bundle)
    record = recorded(cloud, "gsm8k-tr", "1")
    assert (record.status, record.published_by) == (EnvironmentStatus.REGISTERED, author)


def test_the_demo_publishes_its_example_as_the_signed_in_user(
    cloud: LocalCloud, user_api: Any, tmp_path: Path
) -> None:
    # Given a signed-in user
    api, author = user_api("author")

    # When the demo publishes an example environment through the API as that user
    register_example(cloud, api, EXAMPLES / "gsm8k-tr", tmp_path, Progress())

    # Then the version is registered as published by the user (whose connections its judge may use)
    record = recorded(cloud, "gsm8k-tr", ENVIRONMENT_VERSION)
    assert (record.status, record.published_by) == (EnvironmentStatus.REGISTERED, author)


def test_an_upload_whose_group_right_was_withdrawn_is_rejected_with_the_reason(
    cloud: LocalCloud, bundle: bytes
) -> None:
    # given an environment owned by "author" whose publisher group was "team" when a member got a URL
    repo = environments(cloud)
    repo.claim_owner(EnvironmentOwner(environment_id="gsm8k-tr", owner="author", publisher_group="team"))
    # when the owner names another group before the member's upload lands
    assert repo.set_publisher_group("gsm8k-tr", "core-team", owner="author")
    cloud.client("s3").put_object(
        Bucket=cloud.bucket,
        Key="environments/gsm8k-tr/2/bundle.zip",
        Body=bundle,
        Metadata={"publisher": "member", "publisher-group": "team"},
    )
    cloud.settle()
    # then the version is recorded as rejected, saying why, and the bundle was never opened
    record = recorded(cloud, "gsm8k-tr", "2")
    assert record.status == EnvironmentStatus.REJECTED
    assert record.published_by == "member"
    assert record.problems == [
        "user member may not publish versions of environment 'gsm8k-tr': it belongs to its owner, and "
        "besides them only members of the group 'core-team' may publish; ask the owner, or publish under "
        "a new environment id"
    ]
    assert record.title == ""


def test_a_direct_bucket_upload_is_an_operators_and_no_user_can_claim_that_environment(
    cloud: LocalCloud, user_api: Any, bundle: bytes
) -> None:
    cloud.client("s3").put_object(Bucket=cloud.bucket, Key="environments/gsm8k-tr/1/bundle.zip", Body=bundle)
    cloud.settle()
    record = recorded(cloud, "gsm8k-tr", "1")
    assert (record.status, record.published_by) == (EnvironmentStatus.REGISTERED, OPERATOR)
    owner = environments(cloud).owner_of("gsm8k-tr")
    assert owner is not None and owner.owner == OPERATOR
    api, _ = user_api("squatter")
    status, answer = api.call("POST", "/environments", {"environment_id": "gsm8k-tr", "version": "2"})
    assert status == 403
    assert "it belongs to an operator" in answer["message"]


def test_an_operator_upload_to_a_users_environment_is_trusted(cloud: LocalCloud, bundle: bytes) -> None:
    environments(cloud).claim_owner(EnvironmentOwner(environment_id="gsm8k-tr", owner="author"))
    cloud.client("s3").put_object(Bucket=cloud.bucket, Key="environments/gsm8k-tr/5/bundle.zip", Body=bundle)
    cloud.settle()
    record = recorded(cloud, "gsm8k-tr", "5")
    assert (record.status, record.published_by) == (EnvironmentStatus.REGISTERED, OPERATOR)
    owner = environments(cloud).owner_of("gsm8k-tr")
    assert owner is not None and owner.owner == "author"


def test_of_first_publishers_racing_for_one_environment_exactly_one_becomes_its_owner(
    cloud: LocalCloud,
) -> None:
    repo = environments(cloud)
    results: list[str] = []
    claimants = [f"user-{n}" for n in range(8)]
    threads = [
        threading.Thread(
            target=lambda who=who: results.append(
                repo.claim_owner(EnvironmentOwner(environment_id="contested", owner=who)).owner
            )
        )
        for who in claimants
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    owner = repo.owner_of("contested")
    assert owner is not None and owner.owner in claimants
    assert results == [owner.owner] * len(claimants)


def test_the_owner_item_is_not_listed_as_a_version(cloud: LocalCloud, bundle: bytes) -> None:
    cloud.client("s3").put_object(Bucket=cloud.bucket, Key="environments/gsm8k-tr/1/bundle.zip", Body=bundle)
    cloud.settle()
    repo = environments(cloud)
    assert [(r.environment_id, r.version) for r in repo.list().items] == [("gsm8k-tr", "1")]
    assert [r.version for r in repo.versions("gsm8k-tr")] == ["1"]
    assert json.dumps(repo.list().items[0].model_dump()).count("#owner") == 0


def test_the_list_of_versions_names_each_environments_owner_and_publisher_group(
    cloud: LocalCloud, user_api: Any, bundle: bytes
) -> None:
    # Given an environment its author published with a publisher group, and one put in the bucket directly
    api, author = user_api("author")
    body = {"environment_id": "gsm8k-tr", "version": "1", "publisher_group": "math-team"}
    put_as_told(cloud, api.expect("POST", "/environments", 201, body), bundle)
    direct = "environments/by-operator/1/bundle.zip"
    cloud.client("s3").put_object(Bucket=cloud.bucket, Key=direct, Body=bundle)
    cloud.settle()

    # When another signed-in user lists the versions
    reader, _ = user_api("reader")
    listed = reader.expect("GET", "/environments", 200)["items"]

    # Then each version names its environment's owner and publisher group, as the owner item holds them
    shown = {(item["environment_id"], item["owner"], item["publisher_group"]) for item in listed}
    assert shown == {("gsm8k-tr", author, "math-team"), ("by-operator", OPERATOR, None)}
    # and the owner item itself is no version of the list
    assert sorted(item["version"] for item in listed) == ["1", "1"]
