"""Idempotency records on the local cloud: each function and each call site keeps its own."""

from __future__ import annotations

from typing import Any, cast

import pytest
from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent_function
from aws_lambda_powertools.utilities.typing import LambdaContext

from benchgen.aws import clients
from benchgen.aws.wiring import adapters, for_each_upload
from benchgen.ports.storage import UploadedObject
from benchgen.settings import Settings
from localcloud import lambda_runtime

# powertools warns when an idempotent call finds no key; such a call must fail these tests instead.
pytestmark = pytest.mark.filterwarnings("error:No idempotency key value found")

KEY = "submissions/run-1/predictions.zip"
LOGGER = Logger(service="idempotency-test")


def _context(function_name: str) -> LambdaContext:
    # The local cloud's context has every attribute the functions and powertools read.
    return cast(LambdaContext, lambda_runtime.LambdaContext(function_name))


def _notification(settings: Settings) -> dict[str, Any]:
    return {
        "Records": [
            {
                "eventName": "ObjectCreated:Put",
                "s3": {
                    "bucket": {"name": settings.data_bucket},
                    "object": {"key": KEY, "versionId": "v-1", "eTag": "e-1"},
                },
            }
        ]
    }


def _record_ids(settings: Settings) -> list[str]:
    items = clients.dynamodb().scan(TableName=settings.idempotency_table)["Items"]
    return sorted(item["id"]["S"] for item in items)


def test_two_functions_given_the_same_upload_each_process_it_once(aws: Settings) -> None:
    # given two functions whose step is the same code, notified about the same object version
    ran: list[str] = []

    def step(upload: UploadedObject) -> dict[str, Any]:
        ran.append(function_name)
        return {"key": upload.key}

    # when each receives the event, and the first receives it again
    for function_name in ("benchgen-score", "benchgen-audit", "benchgen-score"):
        answers = for_each_upload(_notification(aws), _context(function_name), step, LOGGER)
        assert answers == [{"key": KEY}]

    # then each function processed it once, under records of its own (beside each, the delivery that held it)
    assert ran == ["benchgen-score", "benchgen-audit"]
    prefixes = [record.split(".", 1)[0] for record in _record_ids(aws)]
    assert prefixes == ["benchgen-audit", "benchgen-score", "holder:benchgen-audit", "holder:benchgen-score"]


def test_an_idempotent_call_after_an_upload_step_is_keyed_by_its_own_expression(aws: Settings) -> None:
    # given a function that processed an upload once (keyed by bucket, key, version and ETag)
    for_each_upload(_notification(aws), _context("benchgen-ingest"), lambda upload: {"ok": True}, LOGGER)
    created: list[dict[str, str]] = []

    def create(attempt: dict[str, str]) -> dict[str, int]:
        created.append(attempt)
        return {"number": len(created)}

    # when another call site, keyed by caller and request, repeats a request
    config = IdempotencyConfig(event_key_jmespath="[caller, request]")
    config.register_lambda_context(_context("benchgen-api"))
    once = idempotent_function(
        create, data_keyword_argument="attempt", persistence_store=adapters().idempotency, config=config
    )
    first = once(attempt={"caller": "user-a", "request": "r-1"})
    again = once(attempt={"caller": "user-a", "request": "r-1"})

    # then the repeat gets the first answer and nothing is created twice
    assert first == again == {"number": 1}
    assert len(created) == 1
