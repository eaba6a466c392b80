"""Pure parts of the storage adapters: item conversion, pagination tokens, settings."""

from __future__ import annotations

import base64

import pytest

from benchgen.aws.items import from_item, to_item
from benchgen.ports.pages import InvalidNextToken, decode_token, encode_token
from benchgen.records.runs import RunConfig, RunRecord
from benchgen.settings import Settings, SettingsError, load_settings

NAMES = {
    "DATA_BUCKET": "bucket",
    "ENVIRONMENTS_TABLE": "environments",
    "RUNS_TABLE": "runs",
    "CONNECTIONS_TABLE": "connections",
    "DATASETS_TABLE": "datasets",
    "IDEMPOTENCY_TABLE": "idempotency",
    "PACKAGES_TABLE": "packages",
    "EVENT_BUS_NAME": "bus",
    "PREPARATIONS_TABLE": "preparations",
    "TRAINING_RUNS_TABLE": "training-runs",
    "EVALUATIONS_TABLE": "evaluations",
}


def test_floats_are_stored_as_exact_decimals_and_read_back_as_floats() -> None:
    run = RunRecord(
        run_id="r1",
        environment_id="e",
        environment_version="1",
        model="m",
        owner="u",
        overall_score=0.1,
        metrics={"accuracy": 0.725},
        counts={"total": 40},
        run_config=RunConfig(sampling={"temperature": 0.7, "max_tokens": 512}),
    )
    item = to_item(run)
    assert item["overall_score"] == {"N": "0.1"}
    assert item["metrics"] == {"M": {"accuracy": {"N": "0.725"}}}
    assert "failure_reason" not in item
    assert from_item(RunRecord, item) == run


def test_a_token_gives_back_its_position() -> None:
    token = encode_token({"created_at": "2026-06-01T10:00:00.000000Z", "run_id": "r1"})
    assert "=" not in token
    assert decode_token(token, ("created_at", "run_id")) == {
        "created_at": "2026-06-01T10:00:00.000000Z",
        "run_id": "r1",
    }


@pytest.mark.parametrize(
    "token",
    [
        "%%%",
        base64.urlsafe_b64encode(b"not json").decode(),
        base64.urlsafe_b64encode(b"[1, 2]").decode(),
        encode_token({"created_at": "x"}),
        encode_token({"created_at": "x", "run_id": "r1", "extra": "y"}),
        base64.urlsafe_b64encode(b'{"created_at": 5, "run_id": "r1"}').decode(),
    ],
)
def test_a_token_that_this_listing_did_not_give_is_refused(token: str) -> None:
    with pytest.raises(InvalidNextToken, match="leave it out to start from the newest"):
        decode_token(token, ("created_at", "run_id"))


def test_settings_come_from_the_environment_with_a_300_second_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in NAMES.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("PRESIGN_TTL_SECONDS", raising=False)
    monkeypatch.delenv("STATE_MACHINE_ARN", raising=False)
    settings = load_settings()
    assert (settings.data_bucket, settings.runs_table, settings.presign_ttl_seconds) == (
        "bucket",
        "runs",
        300,
    )
    assert settings.state_machine_arn is None


def test_a_missing_variable_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in NAMES.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("RUNS_TABLE")
    with pytest.raises(SettingsError, match="RUNS_TABLE: Field required"):
        load_settings()


def test_presigned_urls_may_not_live_longer_than_an_hour(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in NAMES.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PRESIGN_TTL_SECONDS", "7200")
    with pytest.raises(
        SettingsError, match="PRESIGN_TTL_SECONDS: Input should be less than or equal to 3600"
    ):
        load_settings()


def test_the_sandbox_functions_variable_is_read_as_a_json_object(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the stack's JSON object of runtime -> sandbox function, under a lower-case name
    for name, value in NAMES.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("sandbox_functions", '{"minimal": "SandboxMinimal"}')

    # Then the settings hold it as a mapping
    assert load_settings().sandbox_functions == {"minimal": "SandboxMinimal"}


def test_a_sandbox_functions_variable_that_is_not_json_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in NAMES.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SANDBOX_FUNCTIONS", "minimal=SandboxMinimal")
    with pytest.raises(SettingsError, match="SANDBOX_FUNCTIONS: Value error, Expecting value"):
        load_settings()


def test_settings_can_be_built_by_field_name() -> None:
    settings = Settings(
        data_bucket="b",
        environments_table="e",
        runs_table="r",
        connections_table="c",
        datasets_table="d",
        idempotency_table="i",
        packages_table="p",
        event_bus_name="bus",
        preparations_table="p",
        training_runs_table="t",
        evaluations_table="v",
        presign_ttl_seconds=60,
    )
    assert settings.presign_ttl_seconds == 60
