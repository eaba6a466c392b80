"""What ``/environments`` does, on the in-memory fakes: the first publisher owns an environment, its
publishers get a signed upload URL for a version not seen before, and the list names who publishes."""

from __future__ import annotations

import pytest

from benchgen.ownership import Caller
from benchgen.records.environments import EnvironmentOwner, EnvironmentRecord, EnvironmentStatus
from benchgen.requests.environments import list_environments, request_bundle_upload
from benchgen.requests.errors import Conflict, Forbidden
from benchgen.requests.schemas.environments import CreateEnvironmentRequest
from tests.api_services import TTL, Events, memory_services
from tests.fakes import MemoryEnvironments, MemoryStore

ALICE = Caller(user="alice", groups=frozenset())


def _request(version: str = "1", **fields: str) -> CreateEnvironmentRequest:
    return CreateEnvironmentRequest.model_validate({"environment_id": "gsm8k", "version": version, **fields})


def _version(version: str, environment_id: str = "gsm8k") -> EnvironmentRecord:
    return EnvironmentRecord(
        environment_id=environment_id,
        version=version,
        status=EnvironmentStatus.REGISTERED,
        bundle_key=f"environments/{environment_id}/{version}/bundle.zip",
    )


def test_the_first_publisher_owns_the_environment_and_is_signed_into_the_upload_url() -> None:
    environments, events = MemoryEnvironments(), Events()

    upload = request_bundle_upload(
        _request(), caller=ALICE, services=memory_services(environments=environments, events=events)
    )

    assert (upload.owner, upload.publisher_group, upload.expires_in) == ("alice", None, TTL)
    assert upload.upload_headers == {"x-amz-meta-publisher": "alice"}
    assert upload.upload_url == (
        f"https://bucket.test/environments/gsm8k/1/bundle.zip?put&expires={TTL}&publisher=alice"
    )
    owner = environments.owner_of("gsm8k")
    assert owner is not None and owner.owner == "alice"
    assert events == ["EnvironmentUploadRequested"]


def test_another_user_cannot_publish_a_version_of_an_owned_environment() -> None:
    services = memory_services()
    request_bundle_upload(_request(), caller=ALICE, services=services)

    with pytest.raises(Forbidden, match=r"^user bob may not publish versions of environment 'gsm8k'"):
        request_bundle_upload(_request("2"), caller=Caller(user="bob", groups=frozenset()), services=services)


def test_a_member_of_the_publisher_group_publishes_signed_in_with_the_group() -> None:
    services = memory_services()
    request_bundle_upload(_request(publisher_group="gsm8k-team"), caller=ALICE, services=services)

    upload = request_bundle_upload(
        _request("2"), caller=Caller(user="bob", groups=frozenset({"gsm8k-team"})), services=services
    )

    assert upload.upload_headers == {
        "x-amz-meta-publisher": "bob",
        "x-amz-meta-publisher-group": "gsm8k-team",
    }


def test_only_the_owner_names_the_publisher_group() -> None:
    services = memory_services()
    request_bundle_upload(_request(publisher_group="gsm8k-team"), caller=ALICE, services=services)

    with pytest.raises(Forbidden) as refused:
        request_bundle_upload(
            _request("2", publisher_group="others"),
            caller=Caller(user="bob", groups=frozenset({"gsm8k-team"})),
            services=services,
        )

    assert str(refused.value) == (
        "only the owner of environment 'gsm8k' names its publisher group: leave publisher_group out"
    )


def test_an_environment_published_before_owners_existed_cannot_be_claimed() -> None:
    services = memory_services(environments=MemoryEnvironments(_version("1")))

    with pytest.raises(Forbidden, match="was published before environments had owners, so no user can claim"):
        request_bundle_upload(_request("2"), caller=ALICE, services=services)


def test_a_version_that_exists_is_not_uploaded_again() -> None:
    environments = MemoryEnvironments(_version("1"))
    environments.claim_owner(EnvironmentOwner(environment_id="gsm8k", owner="alice"))

    with pytest.raises(Conflict) as refused:
        request_bundle_upload(_request(), caller=ALICE, services=memory_services(environments=environments))

    assert str(refused.value) == (
        "environment 'gsm8k' version '1' already exists (Registered): upload the bundle as a new version"
    )


def test_a_version_whose_bundle_is_being_registered_is_not_uploaded_again() -> None:
    services = memory_services(store=MemoryStore({"environments/gsm8k/1/bundle.zip": b"zip"}))

    with pytest.raises(Conflict, match="was already uploaded and is being registered"):
        request_bundle_upload(_request(), caller=ALICE, services=services)


def test_the_list_of_versions_names_each_environments_owner_and_publisher_group() -> None:
    environments = MemoryEnvironments(_version("1"), _version("2"), _version("1", "math"))
    environments.claim_owner(EnvironmentOwner(environment_id="gsm8k", owner="alice", publisher_group="team"))

    listed = list_environments(services=memory_services(environments=environments), limit=20, next_token=None)

    assert [
        (item.environment_id, item.version, item.owner, item.publisher_group) for item in listed.items
    ] == [
        ("gsm8k", "1", "alice", "team"),
        ("gsm8k", "2", "alice", "team"),
        ("math", "1", None, None),
    ]
