"""The evaluators group on the local cloud: created from the stack, its members' tokens carry it, and the
local API hands it to the API function the way API Gateway's Cognito authorizer does."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from benchgen.api import claimed_groups
from benchgen.settings import EVALUATORS_GROUP, load_settings
from cli.local import DEMO_USER, demo_password, sign_in_demo_user
from localcloud.api_server import ApiServer
from localcloud.auth import TokenVerifier
from localcloud.cloud import LocalCloud

PASSWORD = "Reader-Passw0rd!x"


class Recorder:
    """Stands in for the API function: keeps the claims each event carries."""

    def __init__(self) -> None:
        self.claims: list[dict[str, str]] = []

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        self.claims.append(event["requestContext"]["authorizer"]["claims"])
        return {"statusCode": 200, "body": "{}"}


def _claims_seen(cloud: LocalCloud, token: str) -> dict[str, str]:
    import requests

    recorder = Recorder()
    verifier = TokenVerifier(
        user_pool_id=cloud.user_pool_id, client_id=cloud.client_id, jwks=cloud.jwks(), region=cloud.region
    )
    with ApiServer(cloud.routes(), recorder, verifier, function_name="api") as server:
        answer = requests.get(f"{server.url}/runs", headers={"Authorization": token}, timeout=10)
    assert answer.status_code == 200
    (claims,) = recorder.claims
    return claims


def test_the_stacks_pool_has_the_evaluators_group_and_the_api_reads_its_name(api_cloud: LocalCloud) -> None:
    groups = api_cloud.client("cognito-idp").list_groups(UserPoolId=api_cloud.user_pool_id)["Groups"]

    assert [group["GroupName"] for group in groups] == [EVALUATORS_GROUP]
    assert load_settings().evaluators_group == EVALUATORS_GROUP


def test_the_demo_user_is_an_evaluator_and_the_api_function_sees_the_group(api_cloud: LocalCloud) -> None:
    token = sign_in_demo_user(api_cloud, demo_password()).id_token

    claims = _claims_seen(api_cloud, token)

    assert claims["cognito:username"] == DEMO_USER
    # the REST API's Cognito authorizer hands a list claim over as one comma-joined string
    assert claims["cognito:groups"] == EVALUATORS_GROUP
    assert claimed_groups(claims["cognito:groups"]) == {EVALUATORS_GROUP}


def test_a_user_outside_every_group_carries_no_groups_claim(api_cloud: LocalCloud) -> None:
    token = api_cloud.create_user("reader@example.com", PASSWORD)

    claims = _claims_seen(api_cloud, token)

    assert "cognito:groups" not in claims
    assert claimed_groups(claims.get("cognito:groups")) == frozenset()


def test_a_group_the_pool_lacks_is_refused_as_cognito_refuses_it(api_cloud: LocalCloud) -> None:
    with pytest.raises(ClientError) as refused:
        api_cloud.create_user("admin@example.com", PASSWORD, groups=["administrators"])

    assert refused.value.response["Error"]["Code"] == "ResourceNotFoundException"
