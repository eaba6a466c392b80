"""Live runs of a reasoning model on the local cloud: the example model server reasons before each answer
(weighing the opposite answer first), and the run is judged on its answers alone, the reasoning and its
tokens kept apart; a model cut off while reasoning leaves its cases unanswered."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchgen.outputs import RunOutput
from localcloud.cloud import LocalCloud
from localcloud.model_server import ExampleModelServer
from tests.integration.test_live_runs import _live_run, _object_lines, _register, _runs


@pytest.fixture
def reasoner(request: pytest.FixtureRequest) -> Iterator[ExampleModelServer]:
    with ExampleModelServer(thinking=request.param) as server:
        yield server


def _verdicts(cloud: LocalCloud, key: str, tmp_path: Path) -> list[dict[str, Any]]:
    archive_path = tmp_path / "scoring_output.zip"
    archive_path.write_bytes(cloud.client("s3").get_object(Bucket=cloud.bucket, Key=key)["Body"].read())
    with zipfile.ZipFile(archive_path) as archive:
        return [json.loads(line) for line in archive.read("verdicts.jsonl").splitlines()]


def _submitted(cloud: LocalCloud, key: str) -> list[dict[str, Any]]:
    body = cloud.client("s3").get_object(Bucket=cloud.bucket, Key=key)["Body"].read()
    predictions: list[dict[str, Any]] = json.loads(body)["predictions"]
    return predictions


@pytest.mark.parametrize("reasoner", ["inline", "field"], indirect=True)
def test_a_reasoning_model_s_live_run_is_judged_on_its_answers_with_its_reasoning_kept_apart(
    fast_retries: None, cloud: LocalCloud, reasoner: ExampleModelServer, tmp_path: Path
) -> None:
    # Given gsm8k-en, whose example answers get 12 of 40 cases wrong, and a model that reasons first,
    # weighing the right answer before each wrong one and a wrong answer before each right one
    _register(cloud, tmp_path, "gsm8k-en")

    # When a live run asks it every case
    run_id = f"live-think-{reasoner.thinking}"
    execution = _live_run(cloud, run_id, reasoner.base_url)

    # Then the run scores what the same answers score without reasoning
    assert execution["status"] == "SUCCEEDED"
    run = _runs(cloud).get(run_id)
    assert run is not None and run.inference is not None
    assert run.overall_score == pytest.approx(0.7), run.failure_reason
    # and every verdict keeps the reasoning apart from the answer it judged
    verdicts = _verdicts(cloud, run.files[RunOutput.SCORING_OUTPUT], tmp_path)
    assert len(verdicts) == 40
    assert all(verdict["reasoning"].startswith("A first attempt:") for verdict in verdicts)
    assert all("</think>" not in str(verdict["prediction"]) for verdict in verdicts)
    # and the reasoning tokens the model reported are recorded beside its output tokens
    log = _object_lines(cloud, run.files[RunOutput.INFERENCE_LOG])
    assert run.inference.reasoning_tokens == sum(entry["reasoning_tokens"] for entry in log) > 0
    assert run.inference.output_tokens > run.inference.reasoning_tokens
    # and a reasoning field is stored apart in the generated submission; a block stays in the text
    submitted = _submitted(cloud, run.submission_key or "")
    if reasoner.thinking == "field":
        assert all(p["reasoning"].startswith("A first attempt:") for p in submitted)
        assert all("A first attempt" not in p["prediction_text"] for p in submitted)
    else:
        assert all(p["prediction_text"].startswith("<think>") and "reasoning" not in p for p in submitted)


@pytest.mark.parametrize("reasoner", ["cut_off"], indirect=True)
def test_a_live_run_cut_off_while_reasoning_leaves_every_case_unanswered_not_wrong(
    fast_retries: None, cloud: LocalCloud, reasoner: ExampleModelServer, tmp_path: Path
) -> None:
    # Given a model whose every answer stops inside its reasoning block, the right answer weighed in it
    _register(cloud, tmp_path, "gsm8k-en")

    # When a live run asks it every case
    execution = _live_run(cloud, "live-cut-off", reasoner.base_url)

    # Then the run completes with no case answered: unanswered, not a wrong answer
    assert execution["status"] == "SUCCEEDED"
    run = _runs(cloud).get("live-cut-off")
    assert run is not None
    assert run.overall_score == 0.0, run.failure_reason
    assert {**run.metrics, **run.other_metrics}["answer_rate"] == 0.0
    verdicts = _verdicts(cloud, run.files[RunOutput.SCORING_OUTPUT], tmp_path)
    assert {(v["answered"], v["detail"]) for v in verdicts} == {
        (False, "cut off inside its reasoning block: no answer to judge")
    }
