"""A live run's model configuration: secrets only by reference, the caller's own connection, checked
for inference."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from benchgen.providers import registry
from benchgen.providers.connections import ConnectionRecord
from benchgen.requests.errors import ApiError, NotFound
from benchgen.requests.live_runs import live_model_for
from benchgen.requests.schemas.runs import ModelConfigRequest
from benchgen.vocabulary import ProviderKind

SAGEMAKER = ProviderKind("sagemaker")
OPENAI_COMPATIBLE = ProviderKind("openai-compatible")

SECRET_ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:benchgen/together-AbCdEf"


def _connection(owner: str = "alice", **fields: Any) -> ConnectionRecord:
    values: dict[str, Any] = {
        "connection_id": "conn-1",
        "owner": owner,
        "name": "together",
        "provider": OPENAI_COMPATIBLE,
        "base_url": "https://api.together.xyz/v1",
        "secret_arn": SECRET_ARN,
        **fields,
    }
    values["profile"] = registry.provider(values["provider"]).capabilities
    return ConnectionRecord.model_validate(values)


def _config(**variables: str) -> ModelConfigRequest:
    return ModelConfigRequest.model_validate(
        {"connection_id": "conn-1", "model_id": "example-base", "environment_variables": variables}
    )


def test_a_secret_named_variable_with_a_plain_value_is_refused_without_echoing_it() -> None:
    with pytest.raises(ValidationError) as refused:
        _config(PROVIDER_API_KEY="hunter2-plain")

    # The API answers with each problem's message (never pydantic's echo of the input)
    (message,) = [problem["msg"] for problem in refused.value.errors()]
    assert "PROVIDER_API_KEY looks like a secret: store its value in AWS Secrets Manager" in message
    assert "hunter2-plain" not in message


def test_a_key_shaped_value_under_any_name_is_refused() -> None:
    with pytest.raises(ValidationError, match="EXTRA looks like a secret"):
        _config(EXTRA="sk-proj-0123456789abcdef")


def test_secrets_given_as_secrets_manager_arns_and_plain_settings_are_kept() -> None:
    config = _config(PROVIDER_API_KEY=SECRET_ARN, LOG_LEVEL="info")

    assert config.environment_variables == {"PROVIDER_API_KEY": SECRET_ARN, "LOG_LEVEL": "info"}


def test_sampling_with_an_unknown_parameter_is_refused() -> None:
    with pytest.raises(ValidationError, match="temprature"):
        ModelConfigRequest.model_validate(
            {"connection_id": "c", "model_id": "m", "sampling": {"temprature": 0.2}}
        )


def test_another_users_connection_is_answered_like_a_missing_one() -> None:
    with pytest.raises(NotFound, match="no connection 'conn-1' of yours") as other:
        live_model_for(_config(), owner="bob", connection=_connection())
    with pytest.raises(NotFound) as missing:
        live_model_for(_config(), owner="bob", connection=None)

    assert str(other.value) == str(missing.value)


def test_a_sagemaker_connection_without_an_endpoint_is_refused_with_what_would_serve() -> None:
    endpointless = _connection(
        provider=SAGEMAKER,
        region="us-east-1",
        base_url=None,
        secret_arn=None,
        role_arn="arn:aws:iam::123456789012:role/sagemaker-training",
    )

    with pytest.raises(ApiError, match="names no endpoint") as refused:
        live_model_for(_config(), owner="alice", connection=endpointless)

    assert refused.value.status == 400
    assert "use a bedrock or openai-compatible connection" in str(refused.value)


def test_the_run_keeps_where_the_model_is_and_the_secrets_arn_never_a_key() -> None:
    live = live_model_for(_config(), owner="alice", connection=_connection())

    assert live.model_dump(exclude={"sampling"}) == {
        "connection_id": "conn-1",
        "provider": "openai-compatible",
        "model_id": "example-base",
        "region": None,
        "endpoint_name": None,
        "messages_api": False,
        "base_url": "https://api.together.xyz/v1",
        "secret_arn": SECRET_ARN,
        "limits": {"max_in_flight": 4, "requests_per_minute": None, "tokens_per_minute": None},
        "prices": None,
        "inference_mode": "auto",
        "batch_above_cases": 10_000,
        "timeout_s": 60.0,
    }


def test_the_runs_limits_go_to_the_live_model_it_keeps() -> None:
    config = ModelConfigRequest.model_validate(
        {
            "connection_id": "conn-1",
            "model_id": "example-base",
            "limits": {"max_in_flight": 64, "requests_per_minute": 3000, "tokens_per_minute": 900_000},
        }
    )

    live = live_model_for(config, owner="alice", connection=_connection())

    assert (live.limits.max_in_flight, live.limits.requests_per_minute, live.limits.tokens_per_minute) == (
        64,
        3000,
        900_000,
    )


@pytest.mark.parametrize(
    ("limits", "field"),
    [
        ({"max_in_flight": 0}, "max_in_flight"),
        ({"max_in_flight": 1001}, "max_in_flight"),
        ({"max_in_flight": "many"}, "max_in_flight"),
        ({"requests_per_minute": -5}, "requests_per_minute"),
        ({"tokens_per_minute": 0}, "tokens_per_minute"),
        ({"max_in_flight": 8, "burst": 100}, "burst"),
    ],
)
def test_limits_out_of_bounds_or_unknown_are_refused_naming_the_field(
    limits: dict[str, Any], field: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        ModelConfigRequest.model_validate({"connection_id": "conn-1", "model_id": "m", "limits": limits})
    assert any(error["loc"][-1] == field for error in refused.value.errors())
