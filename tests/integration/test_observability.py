"""What the functions' logs say on the local cloud: which function wrote them, and about which run."""

from __future__ import annotations

import importlib
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from benchgen.aws import clients
from benchgen.settings import Settings
from localcloud.cloud import LocalCloud
from localcloud.lambda_runtime import LambdaContext
from localcloud.stack_template import StackTemplate, service_name


class Lines(logging.Handler):
    """Collects a powertools logger's lines as the JSON documents it writes."""

    def __init__(self, formatter: logging.Formatter) -> None:
        super().__init__()
        self.setFormatter(formatter)
        self.lines: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(self.format(record)))


@pytest.fixture
def ingest_lines() -> Iterator[tuple[Any, Lines]]:
    module = importlib.import_module("functions.ingest.handler")
    lines = Lines(module.function.logger.registered_formatter)
    python_logger = logging.getLogger(module.function.logger.name)
    # The level is read from POWERTOOLS_LOG_LEVEL when the module is first imported, by whichever test.
    level = python_logger.level
    python_logger.setLevel(logging.INFO)
    python_logger.addHandler(lines)
    yield module, lines
    python_logger.removeHandler(lines)
    python_logger.setLevel(level)


def test_every_function_logs_under_the_service_name_the_stack_gives_it(
    stack_template: dict[str, Any],
) -> None:
    # given the stack's functions and the service name each is deployed with
    functions = StackTemplate(stack_template).of_type("AWS::Lambda::Function").values()
    services = sorted(name for name in map(service_name, functions) if name is not None)
    assert services

    # when their handlers are loaded into one process, as the local cloud runs them
    modules = {name: importlib.import_module(f"functions.{name}.handler") for name in services}

    # then each logs, traces and counts under its own name, not under a shared default (the sandbox,
    # which runs only the untrusted program, has none of these)
    observed = {name: module.function for name, module in modules.items() if hasattr(module, "function")}
    for name, function in observed.items():
        tools = [tool for tool in (function.logger, function.tracer, function.metrics) if tool is not None]
        assert [tool.service for tool in tools] == [name] * len(tools)
    loggers = [function.logger.name for function in observed.values()]
    assert len(loggers) >= 5
    assert len(set(loggers)) == len(loggers)


def test_an_upload_is_logged_by_its_function_under_the_run_id_as_correlation_id(
    aws: Settings, ingest_lines: tuple[Any, Lines]
) -> None:
    # given a submission stored for run-42
    module, lines = ingest_lines
    key = "submissions/run-42/predictions.json"
    version = clients.s3().put_object(Bucket=aws.data_bucket, Key=key, Body=b"{}")["VersionId"]
    event = {
        "Records": [
            {
                "eventName": "ObjectCreated:Put",
                "s3": {
                    "bucket": {"name": aws.data_bucket},
                    "object": {"key": key, "versionId": version, "eTag": "e"},
                },
            }
        ]
    }

    # when the ingest function handles its notification
    module.handler(event, LambdaContext("benchgen-ingest"))

    # then its line names the function and the run, and says which object version it processed
    (line,) = [line for line in lines.lines if line["message"] == "upload processed"]
    assert line["service"] == "ingest"
    assert line["function_name"] == "benchgen-ingest"
    assert line["correlation_id"] == line["run_id"] == "run-42"
    assert (line["key"], line["version_id"]) == (key, version)


def test_the_librarys_lines_are_written_under_the_function_that_runs(
    api_cloud: LocalCloud, ingest_lines: tuple[Any, Lines]
) -> None:
    # given the ingest function deployed on the local cloud, and a submission stored for run-43 without
    # the metadata that would name its environment
    module, lines = ingest_lines
    api_cloud.hook.register("benchgen-ingest-under-test", module.handler, service="ingest")
    key = "submissions/run-43/predictions.json"
    s3 = api_cloud.client("s3")
    version = s3.put_object(Bucket=api_cloud.bucket, Key=key, Body=b"{}")["VersionId"]
    event = {
        "Records": [
            {
                "eventName": "ObjectCreated:Put",
                "s3": {"bucket": {"name": api_cloud.bucket}, "object": {"key": key, "versionId": version}},
            }
        ]
    }

    # when the function is invoked with its notification
    api_cloud.hook.invoke("benchgen-ingest-under-test", event, memory_mb=128, timeout_s=60)

    # then the run's transition, logged by the library, is a line of the ingest function about run-43
    (line,) = [line for line in lines.lines if line["message"] == "run transition"]
    assert (line["service"], line["correlation_id"]) == ("ingest", "run-43")
    assert (line["run_id"], line.get("from_status"), line["to_status"]) == ("run-43", None, "Failed")
    assert "does not exist" in line["reason"]
