"""``/connections`` through the API function on the local cloud: keys refused and never kept, secret ARNs
of this account and region only, profiles narrowed never widened, filters, and owner-only access."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from benchgen.aws import clients
from benchgen.settings import Settings
from tests.connection_bodies import BEDROCK, SAGEMAKER, SECRET_ARN, TOGETHER
from tests.integration.factories import OWNER, STRANGER, Call

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

# A key value that must never reach the table or the logs.
PLANTED_KEY = "sk-planted-7f3a9c1e5b"


class _EveryField(logging.Formatter):
    """A record with all its attributes (message, arguments, ``extra`` fields) and its traceback."""

    def format(self, record: logging.LogRecord) -> str:
        text = repr(vars(record))
        return text + (self.formatException(record.exc_info) if record.exc_info else "")


@pytest.fixture
def every_log_record() -> Iterator[io.StringIO]:
    """Everything any logger of the process records during the test, at every level, with all its fields."""
    sink = io.StringIO()
    handler = logging.StreamHandler(sink)
    handler.setFormatter(_EveryField())
    loggers = [logging.getLogger()] + [
        logger for logger in logging.root.manager.loggerDict.values() if isinstance(logger, logging.Logger)
    ]
    levels = {logger: logger.level for logger in loggers}
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
    yield sink
    for logger, level in levels.items():
        logger.removeHandler(handler)
        logger.setLevel(level)


def _create(call: Call, body: dict[str, Any], sub: str = OWNER) -> dict[str, Any]:
    answer = call("POST", "/connections", body=body, sub=sub)
    assert answer.status == 201, answer.body
    created: dict[str, Any] = answer.body
    return created


def _table_items(settings: Settings) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = clients.dynamodb().scan(TableName=settings.connections_table)["Items"]
    return items


def test_a_connection_is_created_with_its_providers_whole_profile(call: Call) -> None:
    created = _create(call, TOGETHER)
    assert created["connection_id"].startswith("conn-")
    assert created["owner"] == OWNER
    assert created["secret_arn"] == SECRET_ARN
    assert created["profile"]["methods"] == ["demonstration", "preference", "reinforcement"]
    assert created["profile"]["export_profiles"] == [
        "openai-chat",
        "openai-preference",
        "together-sft",
        "together-dpo",
        "openai-rft",
    ]
    assert call("GET", f"/connections/{created['connection_id']}").body == created


@pytest.mark.parametrize("body", [BEDROCK, SAGEMAKER], ids=["bedrock", "sagemaker"])
def test_a_bedrock_or_sagemaker_connection_keeps_its_calls_timeout(call: Call, body: dict[str, Any]) -> None:
    # given a Bedrock or SageMaker connection whose model calls may take 20 s at most
    # when it is created
    created = _create(call, {**body, "timeout_s": 20})

    # then it keeps the timeout, which its live runs copy and their calls give up after
    assert created["timeout_s"] == 20
    assert call("GET", f"/connections/{created['connection_id']}").body["timeout_s"] == 20


@pytest.mark.parametrize("field", ["api_key", "key", "secret", "password", "token", "apiKey", "access_token"])
def test_a_key_in_the_body_is_refused_pointing_to_secrets_manager_and_never_kept_or_logged(
    aws: Settings, call: Call, field: str, every_log_record: io.StringIO, capsys: pytest.CaptureFixture[str]
) -> None:
    answer = call("POST", "/connections", body={**TOGETHER, field: PLANTED_KEY})
    assert answer.status == 400
    assert answer.body["message"] == (
        f"{field}: a connection never takes a key itself. Put the key in AWS Secrets Manager (in this "
        "deployment's account and region) and pass the secret's ARN as secret_arn; the key sent was not kept"
    )
    assert _table_items(aws) == []
    captured = capsys.readouterr()
    assert PLANTED_KEY not in every_log_record.getvalue() + captured.out + captured.err


def test_a_stored_connection_holds_the_secrets_arn_and_nothing_of_the_key(
    aws: Settings, call: Call, every_log_record: io.StringIO, capsys: pytest.CaptureFixture[str]
) -> None:
    # given a key sent once by mistake, then the connection made the right way
    call("POST", "/connections", body={**TOGETHER, "api_key": PLANTED_KEY})
    _create(call, TOGETHER)
    # then the table holds the ARN only, and neither the table nor any log line holds the key
    (item,) = _table_items(aws)
    assert item["secret_arn"] == {"S": SECRET_ARN}
    assert PLANTED_KEY not in json.dumps(item)
    captured = capsys.readouterr()
    assert PLANTED_KEY not in every_log_record.getvalue() + captured.out + captured.err
    # and the check can see a value: the ARN, which is stored, is in the SDK's debug lines of the write
    assert SECRET_ARN in every_log_record.getvalue()


@pytest.mark.parametrize(
    ("secret_arn", "where"),
    [
        (
            "arn:aws:secretsmanager:us-east-1:210987654321:secret:key-AbCdEf",
            "account 210987654321 in us-east-1",
        ),
        (
            "arn:aws:secretsmanager:eu-west-1:123456789012:secret:key-AbCdEf",
            "account 123456789012 in eu-west-1",
        ),
    ],
)
def test_a_secret_of_another_account_or_region_is_refused(call: Call, secret_arn: str, where: str) -> None:
    answer = call("POST", "/connections", body={**TOGETHER, "secret_arn": secret_arn})
    assert answer.status == 400
    assert answer.body["message"] == (
        f"secret_arn names a secret of {where}: the secret must be in this deployment's account "
        "123456789012 and region us-east-1, where the platform reads it; create it there and pass that ARN"
    )


def test_a_key_given_as_the_secret_arn_is_refused_without_echoing_it(call: Call) -> None:
    answer = call("POST", "/connections", body={**TOGETHER, "secret_arn": PLANTED_KEY})
    assert answer.status == 422
    assert [e["field"] for e in answer.body["errors"]] == ["secret_arn"]
    assert PLANTED_KEY not in json.dumps(answer.body)


def test_widening_bedrock_to_preference_is_refused_saying_why_and_what_it_accepts(call: Call) -> None:
    profile = {
        "methods": ["demonstration", "preference"],
        "model_families": ["nova"],
        "export_profiles": ["bedrock-conversation"],
    }
    answer = call("POST", "/connections", body={**BEDROCK, "profile": profile})
    assert answer.status == 400
    assert answer.body["message"] == (
        "a bedrock connection's profile may only narrow what its provider can do, and this one asks for "
        "preference training (Bedrock model customization has no preference type). A bedrock connection "
        "accepts methods demonstration, model families nova, llama3.1, claude-3-haiku, export profiles "
        "bedrock-conversation, bedrock-prompt-completion: narrow the profile to those, or leave it out to "
        "take them all"
    )


def test_a_narrowed_profile_is_kept(call: Call) -> None:
    profile = {
        "methods": ["demonstration"],
        "model_families": ["nova"],
        "export_profiles": ["bedrock-conversation"],
        "limits": {"max_rows": 5000},
    }
    created = _create(call, {**BEDROCK, "profile": profile})
    assert created["profile"] == {**profile, "limits": {"max_rows": 5000, "max_row_tokens": None}}


def test_an_openai_compatible_connection_over_plain_http_elsewhere_than_loopback_is_refused(
    call: Call,
) -> None:
    answer = call("POST", "/connections", body={**TOGETHER, "base_url": "http://api.together.xyz/v1"})
    assert answer.status == 422
    assert answer.body["errors"][0]["message"] == (
        "base_url must use https (plain http is accepted only for a server on this machine's loopback: "
        "localhost, an address in 127.0.0.0/8, or [::1])"
    )


@pytest.mark.parametrize(
    "base_url",
    ["http://127.evil.example/v1", "http://127.0.0.1.nip.io/v1", "http://localhost.evil.example/v1"],
)
def test_plain_http_to_a_name_that_only_looks_like_loopback_is_refused(call: Call, base_url: str) -> None:
    # Given a host whose name starts like a loopback address (anyone's DNS can point it anywhere)
    answer = call("POST", "/connections", body={**TOGETHER, "base_url": base_url})

    # Then it is refused as plain http elsewhere than loopback, and nothing is recorded
    assert answer.status == 422
    assert answer.body["errors"][0]["message"].startswith("base_url must use https")
    assert call("GET", "/connections").body["items"] == []


@pytest.mark.parametrize(
    "base_url",
    ["http://127.0.0.1:8000/v1", "http://127.8.9.10/v1", "http://[::1]:8000/v1", "http://localhost/v1"],
)
def test_plain_http_to_a_loopback_address_or_localhost_is_accepted(call: Call, base_url: str) -> None:
    assert _create(call, {**TOGETHER, "base_url": base_url})["base_url"] == base_url


def test_the_filters_keep_the_connections_whose_profile_accepts_the_request(call: Call) -> None:
    together = _create(call, TOGETHER)["connection_id"]
    bedrock = _create(call, BEDROCK)["connection_id"]
    sagemaker = _create(call, SAGEMAKER)["connection_id"]

    def listed(**query: str) -> list[str]:
        answer = call("GET", "/connections", query=query or None)
        assert answer.status == 200, answer.body
        return [item["connection_id"] for item in answer.body["items"]]

    assert listed() == [sagemaker, bedrock, together]
    assert listed(method="preference") == [sagemaker, together]
    assert listed(export_profile="bedrock-conversation") == [bedrock]
    assert listed(base_model="meta.llama3-1-8b-instruct-v1:0", method="demonstration") == [
        sagemaker,
        bedrock,
        together,
    ]
    assert listed(base_model="mistral.mistral-large-2402-v1:0") == [sagemaker, together]
    # the sagemaker connection names no endpoint, so it cannot answer live runs
    assert listed(inference="true") == [bedrock, together]


def test_a_filtered_list_fills_its_pages_and_ends_on_the_last(call: Call) -> None:
    made = [_create(call, body)["connection_id"] for body in (TOGETHER, BEDROCK, TOGETHER, BEDROCK, TOGETHER)]
    first = call("GET", "/connections", query={"method": "preference", "limit": "2"}).body
    assert [item["connection_id"] for item in first["items"]] == [made[4], made[2]]
    rest = call(
        "GET", "/connections", query={"method": "preference", "limit": "2", "next_token": first["next_token"]}
    ).body
    assert [item["connection_id"] for item in rest["items"]] == [made[0]]
    assert rest.get("next_token") is None


def test_users_see_only_their_own_connections(call: Call) -> None:
    mine = _create(call, TOGETHER)["connection_id"]
    _create(call, BEDROCK, sub=STRANGER)
    assert [item["connection_id"] for item in call("GET", "/connections").body["items"]] == [mine]
    answer = call("GET", f"/connections/{mine}", sub=STRANGER)
    assert answer.status == 403
    assert answer.body["message"] == "only the connection's owner can read or delete it"


def test_only_the_owner_deletes_a_connection(call: Call) -> None:
    mine = _create(call, TOGETHER)["connection_id"]
    refused = call("DELETE", f"/connections/{mine}", sub=STRANGER)
    assert refused.status == 403
    assert call("GET", f"/connections/{mine}").status == 200
    deleted = call("DELETE", f"/connections/{mine}")
    assert (deleted.status, deleted.body) == (204, None)
    gone = call("GET", f"/connections/{mine}")
    assert gone.status == 404
    assert gone.body["message"] == f"no connection {mine!r}: check the id (GET /connections lists yours)"


def test_an_unknown_method_filter_is_refused_naming_it(call: Call) -> None:
    answer = call("GET", "/connections", query={"method": "rlhf"})
    assert answer.status == 422
    assert [e["field"] for e in answer.body["errors"]] == ["method"]
