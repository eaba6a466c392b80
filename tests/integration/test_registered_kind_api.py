"""A provider kind registered the documented way (the throwaway kind of ``tests/throwaway``) through the
API function on the local cloud: its capabilities are a new connection's profile, the API refuses what it
does not offer with its own sentence, and the connection filters read its profile like any other."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from benchgen.providers.definition import ProviderDefinition
from tests.integration.factories import Call
from tests.throwaway import registered

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

THROWAWAY = {"name": "throwaway", "provider": "throwaway", "region": "us-east-1"}


@pytest.fixture
def throwaway() -> Iterator[ProviderDefinition]:
    with registered() as definition:
        yield definition


def _create(call: Call, body: dict[str, Any]) -> dict[str, Any]:
    answer = call("POST", "/connections", body=body)
    assert answer.status == 201, answer.body
    created: dict[str, Any] = answer.body
    return created


def test_a_connection_of_a_registered_kind_takes_its_whole_capabilities(
    call: Call, throwaway: ProviderDefinition
) -> None:
    created = _create(call, THROWAWAY)
    assert created["provider"] == "throwaway"
    assert created["profile"] == throwaway.capabilities.model_dump(mode="json")


def test_widening_a_registered_kind_is_refused_with_its_own_sentence(
    call: Call, throwaway: ProviderDefinition
) -> None:
    profile = {
        "methods": ["demonstration", "preference"],
        "model_families": ["qwen"],
        "export_profiles": ["openai-chat"],
    }
    answer = call("POST", "/connections", body={**THROWAWAY, "profile": profile})
    assert answer.status == 400
    assert answer.body["message"] == (
        "a throwaway connection's profile may only narrow what its provider can do, and this one asks for "
        "preference training (Throwaway training has no preference method). A throwaway connection accepts "
        "methods demonstration, model families qwen, export profiles openai-chat: narrow the profile to "
        "those, or leave it out to take them all"
    )


def test_a_registered_kinds_connection_fields_are_checked(call: Call, throwaway: ProviderDefinition) -> None:
    answer = call("POST", "/connections", body={"name": "t", "provider": "throwaway"})
    assert answer.status == 422
    assert answer.body["errors"][0]["message"] == "a throwaway connection needs its region, e.g. us-east-1"


def test_the_filters_read_a_registered_kinds_profile(call: Call, throwaway: ProviderDefinition) -> None:
    made = _create(call, THROWAWAY)["connection_id"]

    def listed(**query: str) -> list[str]:
        answer = call("GET", "/connections", query=query)
        assert answer.status == 200, answer.body
        return [item["connection_id"] for item in answer.body["items"]]

    assert listed(method="demonstration", base_model="qwen2.5-7b-instruct") == [made]
    assert listed(method="preference") == []
    assert listed(base_model="amazon.nova-micro-v1:0") == []
    assert listed(inference="true") == [made]


def test_a_name_no_kind_registers_is_refused_listing_the_registered_ones(
    call: Call, throwaway: ProviderDefinition
) -> None:
    answer = call("POST", "/connections", body={**THROWAWAY, "provider": "nope"})
    assert answer.status == 422
    assert answer.body["errors"][0]["message"] == (
        "Input should be 'bedrock', 'sagemaker', 'openai-compatible' or 'throwaway'"
    )
