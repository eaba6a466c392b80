"""The ShardedScoring state machine: a Distributed Map over the run's shards, then the reduce step; and the
run-step functions sized from infra/sizing.py."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from infra.constructs.catalog import SPECS, FunctionSpec
from infra.constructs.sharded_scoring import REDUCE_FAILED_REASON, SHARD_FAILED_REASON
from infra.sizing import DEFAULT_SHARD_CASES, DEFAULT_SHARD_CONCURRENCY

Definition = dict[str, Any]
Resource = dict[str, Any]


@pytest.fixture(scope="module")
def sharded(resources: dict[str, Resource], render: Callable[[Any], str]) -> Definition:
    parsed: Definition = json.loads(render(resources["ShardedScoring"]["Properties"]["DefinitionString"]))
    return parsed


def test_shards_are_a_distributed_map_reading_its_items_from_s3(sharded: Definition) -> None:
    assert sharded["StartAt"] == "Shards"
    shards = sharded["States"]["Shards"]
    assert shards["Type"] == "Map"
    assert shards["ItemProcessor"]["ProcessorConfig"] == {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"}
    assert shards["ItemReader"] == {
        "Resource": "arn:${AWS::Partition}:states:::s3:getObject",
        "ReaderConfig": {"InputType": "JSON"},
        "Parameters": {"Bucket": "${DataBucket}", "Key.$": "$.items_key"},
    }


def test_the_map_is_bounded_tolerates_no_failure_and_discards_its_results(sharded: Definition) -> None:
    shards = sharded["States"]["Shards"]
    assert shards["MaxConcurrency"] == DEFAULT_SHARD_CONCURRENCY
    assert shards["ToleratedFailureCount"] == 0
    assert "ToleratedFailurePercentage" not in shards
    assert shards["ResultPath"] is None
    assert "ResultWriter" not in shards


def test_each_shard_is_scored_then_collected_and_the_reduce_step_follows(sharded: Definition) -> None:
    processor = sharded["States"]["Shards"]["ItemProcessor"]
    states = processor["States"]
    assert processor["StartAt"] == "ScoreShard"
    assert states["ScoreShard"]["Next"] == "BuildShardArtifact"
    assert states["BuildShardArtifact"]["End"] is True
    for name in ("ScoreShard", "BuildShardArtifact"):
        function = f"{name}Function"
        assert states[name]["Resource"] == f"${{{function}.Arn}}"
        assert states[name]["Parameters"] == {"run_id.$": "$.run_id", "shard.$": "$.shard"}
    assert sharded["States"]["Shards"]["Next"] == "ReduceScores"
    reduce = sharded["States"]["ReduceScores"]
    assert reduce["Resource"] == "${ReduceScoresFunction.Arn}"
    assert reduce["Parameters"] == {"run_id.$": "$.run_id"}
    assert reduce["Next"] == "Scored"


def test_a_failure_the_steps_could_not_record_fails_the_running_run_with_a_sentence(
    sharded: Definition,
) -> None:
    states = sharded["States"]
    for state, handler, reason in (
        ("Shards", "ShardFailed", SHARD_FAILED_REASON),
        ("ReduceScores", "ReduceFailed", REDUCE_FAILED_REASON),
    ):
        assert [(c["ErrorEquals"], c["Next"]) for c in states[state]["Catch"]] == [(["States.ALL"], handler)]
        assert states[handler]["Parameters"] == {"run_id.$": "$.run_id", "failure": {"errorMessage": reason}}
        assert states[handler]["Next"] == "MarkRunFailed"
    # ReduceScores' function fails the run, only while it is Running: a run the step already failed keeps
    # the step's own sentence (benchgen.steps.shards.record_sharded_failure)
    mark = states["MarkRunFailed"]
    assert mark["Resource"] == "${ReduceScoresFunction.Arn}"
    assert mark["Parameters"] == {"failed": {"id.$": "$.run_id", "reason.$": "$.failure.errorMessage"}}
    assert mark["Next"] == "ShardedScoringFailed"
    assert {states[c["Next"]]["Type"] for c in mark["Catch"]} == {"Fail"}


def test_an_execution_has_no_timeout_that_could_leave_its_run_running(resources: dict[str, Resource]) -> None:
    definition = resources["ShardedScoring"]["Properties"]["DefinitionString"]
    assert "TimeoutSeconds" not in json.dumps(definition)


@pytest.mark.parametrize("spec", [spec for spec in SPECS if spec.sizing], ids=lambda spec: spec.name)
def test_every_run_step_function_is_sized_from_infra_sizing(
    spec: FunctionSpec, functions: dict[str, Resource]
) -> None:
    assert spec.sizing is not None
    sizing = spec.sizing(DEFAULT_SHARD_CASES)
    props = functions[spec.name]["Properties"]
    assert props["MemorySize"] == sizing.memory_mb
    assert props["Timeout"] == sizing.timeout_s
    assert props["EphemeralStorage"] == {"Size": sizing.ephemeral_storage_mib}


def test_registration_is_told_the_shard_size_and_score_the_state_machine(
    functions: dict[str, Resource],
) -> None:
    register = functions["register_environment"]["Properties"]["Environment"]["Variables"]
    assert register["SHARD_CASES"] == str(DEFAULT_SHARD_CASES)
    score = functions["score"]["Properties"]["Environment"]["Variables"]
    assert score["SHARDED_SCORING_STATE_MACHINE_ARN"] == {"Ref": "ShardedScoring"}


def _object_grants(statements: list[dict[str, Any]], action: str) -> set[str]:
    prefix = "${DataBucket.Arn}/"
    return {
        resource.removeprefix(prefix)
        for statement in statements
        if action in statement["Action"]
        for resource in statement["Resource"]
        if resource.startswith(prefix)
    }


@pytest.mark.parametrize(
    ("name", "reads", "writes"),
    [
        (
            "score_shard",
            {
                "environments/*",
                "case-shards/*",
                "predictions/*/shards/*",
                "runs/*/judgments.jsonl",
            },
            {"runs/*/parts/score/*", "runs/*/logs/failure.log"},
        ),
        (
            "build_shard_artifact",
            {"environments/*", "case-shards/*", "runs/*/parts/score/*"},
            {"runs/*/parts/artifact/*", "runs/*/logs/failure.log"},
        ),
        ("reduce_scores", {"environments/*", "runs/*/parts/score/*"}, {"runs/*"}),
        ("register_environment", {"environments/*", "calibrations/*"}, {"case-shards/*", "calibrations/*"}),
    ],
)
def test_each_shard_function_reads_and_writes_only_its_own_keys(
    name: str, reads: set[str], writes: set[str], role_statements: dict[str, list[Any]]
) -> None:
    assert _object_grants(role_statements[name], "s3:GetObject") == reads
    assert _object_grants(role_statements[name], "s3:PutObject") == writes
