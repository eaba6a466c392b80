"""The real loop, CI-sized: the real SmolLM2-135M-Instruct served by `benchgen model serve`, a small
arithmetic benchmark and one short epoch of training. Slow (minutes on 2 cores), and it runs in CI.

It asserts that every step completed and that the report's numbers are those of the two runs' own
per-case verdicts, never that the model improved: a handful of held-out cases decides nothing.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from benchgen.verdicts import VERDICTS_NAME
from cli.api_client import Api
from cli.loop import run_loop
from cli.self_hosted_model import (
    CONCURRENCY,
    MODEL_TIMEOUT_S,
    PACKAGE_PROFILE,
    SERVED_MODEL,
    SelfHostedModel,
)
from examplegen import generate_environment
from localcloud.cloud import LocalCloud
from tests.integration.loop_checks import assert_consistent_reinforcement, kept_cloud, kept_cloud_loop

CASES = 20
# Few cases, base answers capped at 32 tokens (the base model rambles to any cap; the trained one stops
# after its answer) and one epoch in batches of 4 keep the loop to minutes. The cap makes the base side
# shorter than the evaluation's, which this test may allow: it checks the report's arithmetic against
# the runs' verdicts, never which model is better.
SAMPLING = {"temperature": 0, "max_tokens": 32}
HYPERPARAMETERS: dict[str, str | int | float] = {"n_epochs": 1, "batch_size": 4, "learning_rate": 0.0001}


def _verdicts(cloud: LocalCloud, api: Api, run_id: str) -> dict[str, dict[str, Any]]:
    """The run's per-case verdicts, read from its scoring output as a user downloads it."""
    files = api.expect("GET", f"/runs/{run_id}/files", 200)["files"]
    (key,) = [file["key"] for file in files if file["key"].endswith("scoring_output.zip")]
    body = cloud.client("s3").get_object(Bucket=cloud.bucket, Key=key)["Body"].read()
    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        lines = archive.read(VERDICTS_NAME).decode("utf-8").splitlines()
    return {verdict["case_id"]: verdict for verdict in map(json.loads, lines)}


@pytest.mark.slow
def test_the_real_loop_completes_every_step_and_its_report_agrees_with_the_runs_verdicts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a small arithmetic benchmark from the example generator, and the local cloud the loop starts
    # kept up after it, with the demo user's token, so that what it made can be read through the API
    generate_environment("arithmetic-en", tmp_path / "arithmetic-en", cases=CASES, seed=3)
    out = tmp_path / "out"
    source = SelfHostedModel(
        sampling=SAMPLING,
        hyperparameters=HYPERPARAMETERS,
        # two cases a shard, so that all of them are asked at once and the server batches them
        shard_size=2,
        run_timeout_s=1800,
        training_timeout_s=1800,
    )

    with kept_cloud(monkeypatch) as kept:
        # When the real loop runs
        code = run_loop(source, tmp_path / "arithmetic-en", out)

        # Then every step completed and named what it made
        printed = capsys.readouterr().out
        summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
        assert (code, summary["stopped"]) == (0, None), printed
        assert summary["simulated"] is False
        assert "Nothing in this loop is simulated" in printed
        with kept.api() as (cloud, api):
            base = api.expect("GET", f"/runs/{summary['base_run_id']}", 200)
            tuned = api.expect("GET", f"/runs/{summary['tuned_run_id']}", 200)
            connection = api.expect("GET", f"/connections/{summary['connection_id']}", 200)
            package = api.expect("GET", f"/packages/{summary['package_id']}", 200)
            training = api.expect("GET", f"/training-runs/{summary['training_run_id']}", 200)
            report = api.expect("GET", f"/evaluations/{summary['evaluation_id']}/report", 200)["report"]
            base_verdicts = _verdicts(cloud, api, base["run_id"])
            tuned_verdicts = _verdicts(cloud, api, tuned["run_id"])
            base_config = api.expect("GET", f"/runs/{base['run_id']}/config", 200)
            tuned_config = api.expect("GET", f"/runs/{tuned['run_id']}/config", 200)

    # the base run asked the served model every case, through the connection to the server
    assert connection["provider"] == "openai-compatible"
    assert connection["base_url"].startswith("http://127.0.0.1:")
    assert (base["status"], base["live_model"]["model_id"]) == ("Completed", SERVED_MODEL)
    assert len(base_verdicts) == CASES
    # the package was built and trained on by the server, whose trained model answered the evaluation
    assert (package["status"], package["profile"]) == ("Ready", PACKAGE_PROFILE)
    assert training["status"] == "Succeeded"
    assert training["result_model"] and training["result_model"] != SERVED_MODEL
    assert (tuned["status"], tuned["live_model"]["model_id"]) == ("Completed", training["result_model"])
    # the connection states how many requests the server takes at once, and both runs, the evaluation's
    # among them, asked that many at once
    assert connection["limits"]["max_in_flight"] == CONCURRENCY
    for config in (base_config, tuned_config):
        assert config["limits"]["max_in_flight"] == CONCURRENCY, config
    # and gives an answer the time a batch of that many takes (runs take their connection's timeout)
    assert connection["timeout_s"] == MODEL_TIMEOUT_S
    for config in (base_config, tuned_config):
        assert config["timeout_s"] == MODEL_TIMEOUT_S, config
    # each run's accuracy is its passes over its cases
    for run, verdicts in ((base, base_verdicts), (tuned, tuned_verdicts)):
        accuracy = {tile["key"]: tile["value"] for tile in run["metrics"]}["accuracy"]
        assert accuracy == pytest.approx(sum(v["passed"] for v in verdicts.values()) / len(verdicts))
    # the tuned run judged exactly the held-out cases, and the comparison pairs them with the base run's
    comparison = report["comparison"]
    held_out = set(tuned_verdicts)
    assert held_out and held_out < set(base_verdicts)
    assert summary["held_out_cases"] == len(held_out) == comparison["paired_cases"]
    fixed = {c for c in held_out if tuned_verdicts[c]["passed"] and not base_verdicts[c]["passed"]}
    broken = {c for c in held_out if base_verdicts[c]["passed"] and not tuned_verdicts[c]["passed"]}
    both_passed = {c for c in held_out if base_verdicts[c]["passed"] and tuned_verdicts[c]["passed"]}
    assert {flip["case_id"] for flip in comparison["fixed"]} == fixed
    assert {flip["case_id"] for flip in comparison["broken"]} == broken
    assert (comparison["fixed_count"], comparison["broken_count"]) == (len(fixed), len(broken))
    assert comparison["both_passed"] == len(both_passed)
    assert comparison["both_failed"] == len(held_out) - len(fixed) - len(broken) - len(both_passed)
    paired = comparison["paired_cases"]
    assert comparison["accuracy_before"] == pytest.approx((len(both_passed) + len(broken)) / paired)
    assert comparison["accuracy_after"] == pytest.approx((len(both_passed) + len(fixed)) / paired)
    # and the verdict the loop printed is the report's
    assert summary["verdict"] == comparison["verdict"]
    assert f"measured with the real model: {comparison['verdict']}" in printed


# The reinforcement package has one row a case, and openai-rft asks for at least 10 train rows.
RL_CASES = 30
# GRPO, CI-sized: four prompts a step, each answered twice in at most 16 tokens; a leg's steps are the
# reinforcement package's train rows over four (about 5 for 30 cases).
GRPO_CI: dict[str, str | int | float] = {
    "n_epochs": 1,
    "batch_size": 4,
    "num_generations": 2,
    "max_completion_length": 16,
    "learning_rate": 0.00001,
}


@pytest.mark.slow
def test_the_real_reinforcement_loop_completes_every_step_and_its_summary_is_consistent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the same small arithmetic benchmark, and the real model with the reinforcement method
    generate_environment("arithmetic-en", tmp_path / "arithmetic-en", cases=RL_CASES, seed=3)
    source = SelfHostedModel(
        sampling=SAMPLING,
        hyperparameters=HYPERPARAMETERS,
        grpo_hyperparameters=GRPO_CI,
        shard_size=2,
        run_timeout_s=1800,
        training_timeout_s=1800,
    )

    # When the loop runs
    code, summary, read = kept_cloud_loop(monkeypatch, source, tmp_path / "arithmetic-en", tmp_path / "out")

    # Then every step completed (GRPO from the base model and from the SFT checkpoint, each evaluated and
    # compared), and the summary agrees with itself and with the API, whatever the verdicts
    printed = capsys.readouterr().out
    assert (code, summary["stopped"]) == (0, None), printed
    assert summary["model"] == SERVED_MODEL
    assert_consistent_reinforcement(summary, read)
