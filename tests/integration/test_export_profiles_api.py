"""``GET /export-profiles`` through the local cloud's API Gateway: the console's list of export profiles
comes from the API, signed in, the same profiles a package can be requested in."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from benchgen.training.export_profiles import PROFILES
from cli.api_client import Api
from localcloud.cloud import LocalCloud

PASSWORD = "Correct-Horse-9-Battery!"


@pytest.fixture
def served(api_cloud: LocalCloud) -> Iterator[str]:
    with api_cloud.serve_api(access_log=False) as server:
        yield server.url


def test_a_signed_in_user_reads_every_export_profile_in_the_order_packages_list_them(
    api_cloud: LocalCloud, served: str
) -> None:
    trainer = Api(served, api_cloud.create_user("trainer@example.com", PASSWORD))

    listed = trainer.expect("GET", "/export-profiles", 200)["items"]

    assert [item["profile_id"] for item in listed] == list(PROFILES)
    chat = listed[0]
    assert chat == {
        "profile_id": "openai-chat",
        "title": "OpenAI chat fine-tuning (supervised)",
        "methods": ["demonstration"],
        "row_shape": '{"messages": [system?, user, assistant]}',
        "usage": PROFILES["openai-chat"].use,
    }
    preference = {item["profile_id"] for item in listed if item["methods"] == ["preference"]}
    assert preference == {"openai-preference", "trl-dpo", "sagemaker-dpo", "together-dpo"}


def test_without_a_token_api_gateway_refuses_the_list(served: str) -> None:
    status, answer = Api(served, "").call("GET", "/export-profiles")

    assert (status, answer) == (401, {"message": "Unauthorized"})
