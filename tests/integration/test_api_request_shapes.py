"""Request bodies the API must refuse with a 422 that names what to fix, before anything is stored: a body
that is not one JSON object, and numbers beyond what their schema documents (DynamoDB holds 38 digits)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchgen.aws.tables.environments import EnvironmentsRepo
from benchgen.aws.tables.runs import RunsRepo
from benchgen.outputs import RunOutput
from benchgen.records.environments import EnvironmentRecord, EnvironmentStatus
from benchgen.records.runs import RunRecord, RunStatus
from benchgen.settings import Settings
from tests.integration.factories import OWNER, Call

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

# One valid body per route that takes one (the ids need not exist: the shape is refused first).
VALID_BODIES: list[tuple[str, str, dict[str, str], dict[str, Any]]] = [
    ("/environments", "/environments", {}, {"environment_id": "gsm8k", "version": "2"}),
    ("/runs", "/runs", {}, {"environment_id": "gsm8k", "version": "1", "model": "m"}),
    (
        "/connections",
        "/connections",
        {},
        {"name": "bedrock", "provider": "bedrock", "region": "us-east-1"},
    ),
    (
        "/preparations",
        "/preparations",
        {},
        {"environment_id": "gsm8k", "environment_version": "1", "method": "demonstration", "run_ids": ["r1"]},
    ),
    (
        "/preparations/{preparation_id}/packages",
        "/preparations/prep-1/packages",
        {"preparation_id": "prep-1"},
        {"profile": "openai-chat"},
    ),
    ("/training-runs", "/training-runs", {}, {"package_id": "pkg-1", "connection_id": "conn-1"}),
    (
        "/training-runs/{training_run_id}/evaluations",
        "/training-runs/train-1/evaluations",
        {"training_run_id": "train-1"},
        {},
    ),
    (
        "/training-runs/{training_run_id}/evaluation-grants",
        "/training-runs/train-1/evaluation-grants",
        {"training_run_id": "train-1"},
        {"user": "someone"},
    ),
]


def _register(settings: Settings) -> None:
    record = EnvironmentRecord(
        environment_id="gsm8k",
        version="1",
        status=EnvironmentStatus.REGISTERED,
        title="GSM8K",
        template="math",
        has_finetune=True,
        bundle_key="environments/gsm8k/1/bundle.zip",
        columns=[{"title": "Accuracy", "key": "accuracy", "index": 0}],
    )
    assert EnvironmentsRepo(settings.environments_table).put_if_absent(record)


def _completed_run(settings: Settings, run_id: str) -> None:
    record = RunRecord(
        run_id=run_id,
        environment_id="gsm8k",
        environment_version="1",
        model="Qwen2.5-7B-LoRA",
        owner=OWNER,
        status=RunStatus.COMPLETED,
        files={RunOutput.SCORING_OUTPUT: f"runs/{run_id}/scoring_output.zip"},
    )
    assert RunsRepo(settings.runs_table).create(record)


def _items(settings: Settings, table: str) -> list[dict[str, Any]]:
    from benchgen.aws import clients

    items: list[dict[str, Any]] = clients.dynamodb().scan(TableName=table)["Items"]
    return items


@pytest.mark.parametrize(
    ("resource", "path", "parameters", "body"), VALID_BODIES, ids=[route[1] for route in VALID_BODIES]
)
def test_an_array_holding_a_valid_body_is_refused_as_not_an_object(
    call: Call, resource: str, path: str, parameters: dict[str, str], body: dict[str, Any]
) -> None:
    # Given a body every route would validate as it is, sent as the one element of an array
    answer = call(
        "POST", path, resource=resource, path_parameters=parameters or None, body=json.dumps([body])
    )

    # Then it is refused, saying that a body is one JSON object, and not taken as its first element
    assert answer.status == 422, answer.body
    assert answer.body["errors"] == [
        {
            "location": "body",
            "field": "body",
            "message": "the body must be one JSON object ({...}), and this one is an array",
        }
    ]


@pytest.mark.parametrize(
    ("raw", "kind"),
    [('"text"', "a string"), ("42", "a number"), ("true", "true or false"), ("[]", "an array")],
)
def test_a_body_that_is_another_json_value_is_refused_naming_what_it_is(
    call: Call, raw: str, kind: str
) -> None:
    answer = call("POST", "/runs", body=raw)
    assert answer.status == 422
    assert (
        answer.body["errors"][0]["message"]
        == f"the body must be one JSON object ({{...}}), and this one is {kind}"
    )


@pytest.mark.parametrize("seed", [10**40, 2**32, -1])
def test_a_preparation_seed_beyond_its_documented_range_is_refused_and_nothing_is_stored(
    aws: Settings, call: Call, seed: int
) -> None:
    # Given a completed run of the owner's, which a preparation may draw from
    _register(aws)
    _completed_run(aws, "run-1")
    body = {
        "environment_id": "gsm8k",
        "environment_version": "1",
        "method": "demonstration",
        "run_ids": ["run-1"],
        "settings": {"seed": seed},
    }

    # When a preparation asks for a seed outside 0 to 2**32 - 1
    answer = call("POST", "/preparations", body=body)

    # Then it is a 422 naming the field, and no preparation was recorded
    assert answer.status == 422, answer.body
    assert [problem["field"] for problem in answer.body["errors"]] == ["settings.seed"]
    assert _items(aws, aws.preparations_table) == []


def test_the_largest_documented_seed_is_accepted(aws: Settings, call: Call) -> None:
    _register(aws)
    _completed_run(aws, "run-1")
    body = {
        "environment_id": "gsm8k",
        "environment_version": "1",
        "method": "demonstration",
        "run_ids": ["run-1"],
        "settings": {"seed": 2**32 - 1},
    }
    answer = call("POST", "/preparations", body=body)
    assert answer.status == 201, answer.body
    assert answer.body["settings"]["seed"] == 2**32 - 1


@pytest.mark.parametrize(
    "value", ["10" + "0" * 40, "1e400", "-1e400", "NaN", "Infinity", "1000000000001", '"' + "x" * 65 + '"']
)
def test_a_hyperparameter_beyond_its_documented_range_is_refused_by_the_schema(
    call: Call, value: str
) -> None:
    # Given a hyperparameter too large (or not finite, or too long) for any provider's range
    raw = '{"package_id": "pkg-1", "connection_id": "conn-1", "hyperparameters": {"n_epochs": ' + value + "}}"

    # When a training run is launched with it
    answer = call("POST", "/training-runs", body=raw)

    # Then the schema refuses it, naming the field, before any package or connection is looked up
    assert answer.status == 422, answer.body
    assert [problem["field"] for problem in answer.body["errors"]] == ["hyperparameters.n_epochs"]
    assert answer.body["errors"][0]["message"] == (
        "must be a number between -1e+12 and 1e+12, or text of at most 64 characters"
    )


@pytest.mark.parametrize(
    "raw",
    ["[" * 100_000 + "]" * 100_000, '{"a":' * 50_000 + "1" + "}" * 50_000],
    ids=["arrays", "objects"],  # the test's id goes into the environment of every process it starts
)
def test_a_body_nested_past_what_python_decodes_is_refused_not_a_500(call: Call, raw: str) -> None:
    answer = call("POST", "/runs", body=raw)
    assert answer.status == 422, answer.body
    assert answer.body["errors"][0]["message"].startswith("the body is nested too deeply")


@pytest.mark.parametrize(
    ("path", "raw"),
    [
        ("/runs", '{"environment_id": "gsm8k", "version": "1", "model": "a\\ud800b"}'),
        ("/connections", '{"name": "\\udfff", "provider": "bedrock", "region": "us-east-1"}'),
    ],
)
def test_a_surrogate_escaped_alone_is_refused_before_it_reaches_a_table(
    aws: Settings, call: Call, path: str, raw: str
) -> None:
    # Given a registered environment, so that the run would otherwise be created
    _register(aws)

    # When a body escapes half of a character ("\ud800"), which no UTF-8 can hold
    answer = call("POST", path, body=raw)

    # Then it is a 422 saying so (it was a 500 where DynamoDB got it), and nothing was stored
    assert answer.status == 422, answer.body
    assert answer.body["errors"][0]["message"].startswith("the body holds a \\ud800-\\udfff escape")
    assert _items(aws, aws.runs_table) == [] and _items(aws, aws.connections_table) == []


def test_a_character_escaped_as_its_pair_of_surrogates_is_taken(aws: Settings, call: Call) -> None:
    _register(aws)
    answer = call(
        "POST", "/runs", body='{"environment_id": "gsm8k", "version": "1", "model": "m \\ud83d\\ude00"}'
    )
    assert answer.status == 201, answer.body
    assert answer.body["run"]["model"] == "m \U0001f600"


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"criteria": ["c"] * 201}, "criteria"),
        ({"criteria": ["c" * 201]}, "criteria.0"),
        ({"run_ids": ["r" * 201]}, "run_ids.0"),
        ({"environment_id": "e" * 201}, "environment_id"),
    ],
)
def test_a_preparation_with_more_or_longer_ids_than_a_record_keeps_is_refused(
    aws: Settings, call: Call, changes: dict[str, Any], field: str
) -> None:
    _register(aws)
    _completed_run(aws, "run-1")
    body = {
        "environment_id": "gsm8k",
        "environment_version": "1",
        "method": "demonstration",
        "run_ids": ["run-1"],
    }
    answer = call("POST", "/preparations", body=body | changes)
    assert answer.status == 422, answer.body
    assert [problem["field"] for problem in answer.body["errors"]] == [field]
    assert _items(aws, aws.preparations_table) == []


def test_a_refused_map_key_is_named_in_the_answer_not_echoed_whole(call: Call) -> None:
    # Given a hyperparameter whose name is a megabyte long
    body = {"package_id": "pkg-1", "connection_id": "conn-1", "hyperparameters": {"n" * 1_000_000: 1}}

    # When it is refused, then the answer names the field by its start only
    answer = call("POST", "/training-runs", body=body)
    assert answer.status == 422
    (problem,) = answer.body["errors"]
    assert problem["field"].startswith("hyperparameters.nnnn") and len(problem["field"]) == 200
    assert len(answer.body["message"]) < 2000
