"""`benchgen demo --loop` on the local cloud: what a user sees, and that every id it names exists."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchgen.compare.report import Conclusion
from cli.main import main
from cli.simulated_models import BEDROCK_BASE_MODEL, PACKAGE_PROFILE, SIMULATED, STAND_IN
from localcloud.model_server import BASE_MODEL, TUNED_MODEL
from tests.integration.loop_checks import kept_cloud


def test_demo_loop_trains_evaluates_and_names_every_id_it_made_without_claiming_a_real_model_improved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the local cloud the demo starts (its own synthesis and settings), kept up after the demo so
    # that what it made can be read through the API, and the demo user's token kept
    with kept_cloud(monkeypatch) as kept:
        # When the user runs the whole loop
        code = main(["demo", "--loop", "--out", str(tmp_path)])

        # Then it finished, and every id its summary names exists through the API, as the demo user sees it
        printed = capsys.readouterr().out
        summary = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
        assert (code, summary["stopped"]) == (0, None), printed
        with kept.api() as (_, api):
            base = api.expect("GET", f"/runs/{summary['base_run_id']}", 200)
            tuned = api.expect("GET", f"/runs/{summary['tuned_run_id']}", 200)
            models = api.expect("GET", f"/connections/{summary['models_connection_id']}", 200)
            bedrock = api.expect("GET", f"/connections/{summary['bedrock_connection_id']}", 200)
            dataset = api.expect("GET", f"/datasets/{summary['dataset_id']}", 200)
            preparation = api.expect("GET", f"/preparations/{summary['preparation_id']}", 200)
            package = api.expect("GET", f"/packages/{summary['package_id']}", 200)
            training = api.expect("GET", f"/training-runs/{summary['training_run_id']}", 200)
            evaluation = api.expect("GET", f"/evaluations/{summary['evaluation_id']}", 200)
            report = api.expect("GET", f"/evaluations/{summary['evaluation_id']}/report", 200)

    # the base run is a live run of example-base through the openai-compatible connection to the example
    # server, and its dataset was prepared and packaged for Bedrock
    assert (base["status"], base["overall_score"]) == ("Completed", summary["base_score"])
    assert base["live_model"] == {
        "connection_id": models["connection_id"],
        "provider": "openai-compatible",
        "model_id": BASE_MODEL,
    }
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/v1", models["base_url"])
    assert dataset["run_id"] == base["run_id"]
    assert (preparation["status"], preparation["run_ids"]) == ("Ready", [base["run_id"]])
    assert (package["status"], package["profile"]) == ("Ready", PACKAGE_PROFILE)
    assert (package["preparation_id"], package["sha256"]) == (
        preparation["preparation_id"],
        summary["package_sha256"],
    )
    # the training ran on the package, on (moto's) Bedrock, to a model, through the provider's job
    assert training["status"] == "Succeeded"
    assert (training["package_id"], training["package_sha256"]) == (package["package_id"], package["sha256"])
    assert (training["provider"], training["connection_id"]) == ("bedrock", bedrock["connection_id"])
    assert training["base_model"] == BEDROCK_BASE_MODEL
    assert (training["job_id"], training["job_name"]) == (
        summary["provider_job_id"],
        summary["provider_job_name"],
    )
    assert training["result_model"] == summary["result_model"]
    assert summary["result_model"].startswith("arn:aws:bedrock:")
    # the evaluation reused the base run and asked the trained model's stand-in; the verdict is the report's
    assert evaluation["status"] == "Completed"
    assert (evaluation["base"]["run_id"], evaluation["tuned"]["run_id"]) == (base["run_id"], tuned["run_id"])
    assert tuned["live_model"]["model_id"] == TUNED_MODEL
    assert evaluation["authorized_through"] == "group evaluators"
    assert evaluation["verdict"] == report["report"]["comparison"]["verdict"] == summary["verdict"]
    assert summary["verdict"] in {conclusion.value for conclusion in Conclusion}
    written = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert written["comparison"]["verdict"] == summary["verdict"]
    assert (written["package_id"], written["package_sha256"]) == (package["package_id"], package["sha256"])
    assert "<html" in (tmp_path / "report.html").read_text(encoding="utf-8").lower()

    # and what the user read: the models are simulated, the stand-in is explained, the override is warned
    # about, the verdict is printed, and nothing says that a real model improved
    lines = printed.splitlines()
    assert lines[0] == SIMULATED
    assert STAND_IN.format(result_model=summary["result_model"]) in lines
    assert any(line.startswith("  warning: ") and BEDROCK_BASE_MODEL in line for line in lines)
    assert (
        f"Verdict on the held-out cases, {BASE_MODEL} -> {TUNED_MODEL}: {summary['verdict']} "
        "(simulated models: this says nothing about a real model)"
    ) in lines
    assert all(
        "simulated" in line for line in printed.lower().splitlines() if re.search(r"\bimproved\b", line)
    )
    # and each coverage gap of the small example says why it is expected there
    gaps = [index for index, line in enumerate(lines) if line.startswith("  gap: ")]
    assert gaps
    for index in gaps:
        assert lines[index + 1].startswith("       (expected for this 50-case example with 15 wrong cases: ")
