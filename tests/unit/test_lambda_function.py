"""The entry point every function shares: its event parsed, its lines correlated, its events counted."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, ValidationError

from benchgen.aws import handlers
from benchgen.aws.handlers import LambdaFunction
from benchgen.step_inputs import Failure
from localcloud import lambda_runtime


class ShardInput(BaseModel):
    run_id: str
    shard: int


WIRED = object()


@pytest.fixture(autouse=True)
def wired(monkeypatch: pytest.MonkeyPatch) -> None:
    # The adapters stand in as one object: these tests look at what the entry point does around a step.
    monkeypatch.setattr(handlers, "adapters", lambda: WIRED)
    monkeypatch.setenv("POWERTOOLS_LOG_LEVEL", "INFO")


def _context(function_name: str) -> LambdaContext:
    # The local cloud's context has every attribute a handler and powertools read.
    return cast(LambdaContext, lambda_runtime.LambdaContext(function_name))


def _printed(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]


def test_a_task_step_gets_the_parsed_event_and_logs_under_its_run(capsys: pytest.CaptureFixture[str]) -> None:
    # Given a task function whose step logs a line
    function = LambdaFunction("unit_shard_task")
    seen: list[tuple[Any, Any]] = []

    @function.task(ShardInput, correlation="run_id", keys=("shard",))
    def handler(task: ShardInput, wired: Any) -> dict[str, Any]:
        seen.append((task, wired))
        function.logger.info("shard done")
        return {"run_id": task.run_id}

    # When Lambda invokes it with the state machine's input
    answer = handler({"run_id": "run-7", "shard": "3"}, _context("benchgen-shard"))

    # Then the step got the typed task and the function's adapters, and its line names the run and shard
    assert answer == {"run_id": "run-7"}
    assert seen == [(ShardInput(run_id="run-7", shard=3), WIRED)]
    (line,) = [line for line in _printed(capsys) if line["message"] == "shard done"]
    assert (line["service"], line["function_name"]) == ("unit_shard_task", "benchgen-shard")
    assert (line["correlation_id"], line["run_id"], line["shard"]) == ("run-7", "run-7", 3)


def test_the_next_invocation_does_not_log_under_the_previous_ones_keys(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a function invoked once as a task for run-1
    function = LambdaFunction("unit_clean_state")

    @function.task(ShardInput, correlation="run_id", keys=("shard",))
    def task_handler(task: ShardInput, wired: Any) -> dict[str, Any]:
        return {}

    @function.entry
    def plain_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        function.logger.info("plain")
        return {}

    task_handler({"run_id": "run-1", "shard": 0}, _context("benchgen-clean"))

    # When the same warm function handles an event that names no run
    plain_handler({}, _context("benchgen-clean"))

    # Then its line carries no run of the previous invocation
    (line,) = [line for line in _printed(capsys) if line["message"] == "plain"]
    assert "run_id" not in line
    assert "shard" not in line


def test_a_failure_its_state_machine_caught_goes_to_the_functions_recorder_not_its_step(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a task function that also records its pipeline's failures
    function = LambdaFunction("unit_failure")
    recorded: list[tuple[Failure, Any]] = []

    @function.task(ShardInput, correlation="run_id")
    def handler(task: ShardInput, wired: Any) -> dict[str, Any]:
        raise AssertionError("the step must not run for a failure")

    @function.failure(correlation="run_id")
    def record(failure: Failure, wired: Any) -> None:
        recorded.append((failure, wired))

    # When the state machine's failure path invokes it
    answer = handler({"failed": {"id": "run-7", "reason": "shard 2 timed out"}}, _context("benchgen-f"))

    # Then the recorder got the failure and the adapters, under the record's id, and the answer says
    # what was recorded
    assert answer == {"id": "run-7", "reason": "shard 2 timed out"}
    assert recorded == [(Failure(id="run-7", reason="shard 2 timed out"), WIRED)]
    (line,) = [line for line in _printed(capsys) if line["message"] == "recording a failure"]
    assert (line["correlation_id"], line["run_id"], line["reason"]) == ("run-7", "run-7", "shard 2 timed out")


def test_an_event_that_is_not_the_task_is_refused_before_the_step_runs() -> None:
    # Given a task function
    function = LambdaFunction("unit_refused")
    ran: list[ShardInput] = []

    @function.task(ShardInput, correlation="run_id")
    def handler(task: ShardInput, wired: Any) -> dict[str, Any]:
        ran.append(task)
        return {}

    # When it is invoked with an input that has no shard
    with pytest.raises(ValidationError, match="shard"):
        handler({"run_id": "run-1"}, _context("benchgen-refused"))

    # Then the step never ran
    assert ran == []


def test_a_task_naming_a_field_its_model_lacks_fails_where_the_handler_is_defined() -> None:
    # Given a task model with run_id and shard
    function = LambdaFunction("unit_misspelt")

    # When a handler asks to log under a field the model does not have
    # Then defining it fails, naming the model and the field
    with pytest.raises(ValueError, match="ShardInput has no field runid to log under"):
        function.task(ShardInput, correlation="runid")


def test_a_counted_event_is_flushed_with_the_invocation_under_the_functions_service(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a function that counts two events of one name
    function = LambdaFunction("unit_counter", counts=True)

    @function.entry
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        function.count("ShardScored")
        function.count("ShardScored", 2)
        return {}

    # When it is invoked
    handler({}, _context("benchgen-counter"))

    # Then one metrics document leaves with the invocation: the count, its namespace and service
    (document,) = [line for line in _printed(capsys) if "_aws" in line]
    (directive,) = document["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == "BenchGen"
    assert document["service"] == "unit_counter"
    assert document["ShardScored"] == [1.0, 2.0]


def test_a_function_that_counts_nothing_says_so_when_asked_to_count() -> None:
    # Given a function made without metrics
    function = LambdaFunction("unit_no_metrics")

    # When a step asks it to count an event
    # Then it says how to make it count
    with pytest.raises(RuntimeError, match="unit_no_metrics counts nothing: give it counts=True"):
        function.count("ShardScored")
