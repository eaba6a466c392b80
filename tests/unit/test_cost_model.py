"""The cost model's counting: state transitions walked in the stack's definitions, S3 requests by size."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.bench_scripts import bench_script

cost = bench_script("cost")

MIB = 1024 * 1024


def test_an_emitted_artifact_takes_the_artifact_pipeline_through_six_states(
    stack_template: dict[str, Any],
) -> None:
    from infra.references import render

    # Given the artifact pipeline as the stack synthesizes it
    definition = json.loads(
        render(stack_template["Resources"]["ArtifactPipeline"]["Properties"]["DefinitionString"])
    )

    # When its success path is walked, the artifact emitted
    path = cost.success_path(definition, cost.SUCCESS_CHOICES)

    # Then an execution enters these states: four transitions
    assert path == ["BuildArtifact", "DatasetSaved?", "EmitDatasetSaved", "Saved"]


def test_a_choice_without_a_named_branch_stops_the_walk_with_its_name() -> None:
    definition = {
        "StartAt": "Work",
        "States": {
            "Work": {"Type": "Task", "Next": "Done?"},
            "Done?": {"Type": "Choice", "Choices": [{"Next": "Yes"}], "Default": "No"},
            "Yes": {"Type": "Succeed"},
            "No": {"Type": "Fail"},
        },
    }

    with pytest.raises(SystemExit, match=r"no success branch given for the Choice state 'Done\?'"):
        cost.success_path(definition, {})


def test_a_distributed_map_costs_one_transition_per_child_started_and_each_state_the_child_enters() -> None:
    # Given a machine that maps shards (two steps each) in Standard child executions, then reduces
    definition = {
        "StartAt": "Shards",
        "States": {
            "Shards": {
                "Type": "Map",
                "ItemProcessor": {
                    "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
                    "StartAt": "ScoreShard",
                    "States": {
                        "ScoreShard": {"Type": "Task", "Next": "BuildShardArtifact"},
                        "BuildShardArtifact": {"Type": "Task", "End": True},
                    },
                },
                "Next": "ReduceScores",
            },
            "ReduceScores": {"Type": "Task", "Next": "Scored"},
            "Scored": {"Type": "Succeed"},
        },
    }

    # When an execution maps 10 shards
    # Then it costs the parent's 3 states and 3 per shard (the child's start and its 2 states)
    assert cost.transitions(definition, {}, 10) == 3 + 10 * 3


def test_transfers_over_eight_mib_count_one_request_per_part() -> None:
    # Given a run that uploads and downloads a 2.5 MiB-per-1,000-cases file once, heads it, and deletes it
    calls = [
        {"operation": "PutObject", "key": "runs/r/scoring_output.zip", "count": 1},
        {"operation": "GetObject", "key": "runs/r/scoring_output.zip", "count": 1},
        {"operation": "HeadObject", "key": "runs/r/scoring_output.zip", "count": 1},
        {"operation": "DeleteObject", "key": "runs/r/scoring_output.zip", "count": 1},
    ]
    per_case = {"scoring_output.zip": 2.5 * MIB / 1000}

    # When they are counted for 1,000 cases (2.5 MiB) and for 10,000 (25 MiB: four 8 MiB parts)
    small = cost.s3_requests(calls, per_case, 1000)
    large = cost.s3_requests(calls, per_case, 10_000)

    # Then a small file is one PUT and one GET; a large one is four parts plus the upload's start and end,
    # and four ranged GETs; the head is a GET-class request and the delete is free
    assert small == {"put": 1, "get": 2}
    assert large == {"put": 6, "get": 5}


def test_a_function_below_one_vcpu_runs_proportionally_longer() -> None:
    from infra.sizing import LAMBDA_CPU_FACTOR

    # Given 10 CPU seconds of work on one core of the bench machine
    # Then 1,769 MB (one vCPU) or more take them times the sizing's factor, half of that twice as long
    assert cost.lambda_seconds(10.0, 1769) == pytest.approx(10.0 * LAMBDA_CPU_FACTOR)
    assert cost.lambda_seconds(10.0, 3538) == pytest.approx(10.0 * LAMBDA_CPU_FACTOR)
    assert cost.lambda_seconds(10.0, 1769 // 2) == pytest.approx(20.0 * LAMBDA_CPU_FACTOR, rel=1e-3)


def test_a_shards_requests_are_what_one_more_shard_adds() -> None:
    # Given one run counted in 2 shards and in 4: each shard's prediction output read once and its cases
    # once, the whole run's prediction output written once either way
    def counted(shards: int) -> dict[str, Any]:
        calls = [{"operation": "PutObject", "key": "predictions/r/prediction_output.zip", "count": 1}]
        for shard in range(shards):
            calls.append(
                {"operation": "GetObject", "key": f"predictions/r/shards/{shard:05d}.zip", "count": 1}
            )
            calls.append(
                {"operation": "GetObject", "key": f"case-shards/e/v1/0/{shard:05d}.jsonl", "count": 1}
            )
        return {"shards": shards, "run": calls}

    # When the calls are split into those per run and those per shard
    fixed, each = cost.per_shard(counted(2), counted(4))

    # Then the run writes its prediction output once, and each shard reads its two files once
    assert [call for call in fixed if call["count"]] == [
        {"operation": "PutObject", "key": "prediction_output.zip", "count": 1}
    ]
    assert sorted((call["key"], call["count"]) for call in each if call["count"]) == [
        ("cases.jsonl", 1),
        ("prediction_output.zip", 1),
    ]
