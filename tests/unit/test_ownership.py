"""Who may publish an environment's versions: the owner, members of its publisher group, nobody else."""

from __future__ import annotations

import pytest

from benchgen.api import claimed_groups
from benchgen.ownership import OWNER_GRANT, publishing_grant, stamp_refusal, upload_stamp
from benchgen.records.environments import EnvironmentOwner
from infra.local.auth import authorizer_claims

OWNED = EnvironmentOwner(environment_id="gsm8k", owner="alice", publisher_group="gsm8k-team")


def test_the_owner_publishes_as_owner() -> None:
    assert publishing_grant(OWNED, "alice", frozenset()) == OWNER_GRANT


def test_a_member_of_the_publisher_group_publishes_through_it() -> None:
    assert publishing_grant(OWNED, "bob", {"readers", "gsm8k-team"}) == "gsm8k-team"


def test_anyone_else_may_not_publish() -> None:
    assert publishing_grant(OWNED, "bob", {"readers"}) is None
    assert publishing_grant(OWNED.model_copy(update={"publisher_group": None}), "bob", {"gsm8k-team"}) is None


def test_an_upload_stamp_names_the_group_only_when_the_right_comes_from_it() -> None:
    assert upload_stamp("alice", OWNER_GRANT) == {"publisher": "alice"}
    assert upload_stamp("bob", "gsm8k-team") == {"publisher": "bob", "publisher-group": "gsm8k-team"}


def test_a_stamp_is_checked_against_the_owner_as_it_stands() -> None:
    assert stamp_refusal(OWNED, {"publisher": "alice"}) is None
    assert stamp_refusal(OWNED, {"publisher": "bob", "publisher-group": "gsm8k-team"}) is None
    refused = stamp_refusal(OWNED, {"publisher": "bob", "publisher-group": "old-team"})
    assert refused is not None and refused.startswith(
        "user bob may not publish versions of environment 'gsm8k'"
    )
    assert stamp_refusal(OWNED, {"publisher": "bob"}) is not None


@pytest.mark.parametrize(
    ("claim", "groups"),
    [
        ("gsm8k-team", {"gsm8k-team"}),
        ("a,b", {"a", "b"}),  # REST API Cognito authorizer
        ("[a b]", {"a", "b"}),  # HTTP API JWT authorizer
        (["a", "b"], {"a", "b"}),
        ("", set()),
        (None, set()),
    ],
)
def test_the_groups_claim_is_read_as_api_gateway_hands_it_over(claim: object, groups: set[str]) -> None:
    assert claimed_groups(claim) == groups


def test_the_local_authorizer_hands_over_groups_as_api_gateway_does() -> None:
    assert authorizer_claims({"sub": "u", "cognito:groups": ["a", "b"]})["cognito:groups"] == "a,b"
