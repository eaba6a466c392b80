"""A judged run shows its judge's agreement with people beside its scores: on the run, in its detailed
results (JSON and HTML) and in its dataset's manifest; an uncalibrated judge says so in each."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchgen.records.environments import EnvironmentRecord, EnvironmentStatus
from benchgen.records.judge_calibration import (
    CalibrationStatus,
    CriterionAgreement,
    JudgeAgreement,
    JudgeCalibration,
)
from benchgen.records.runs import RunRecord
from benchgen.report.detailed import DetailedResults
from benchgen.requests.runs import run_detail
from cli.main import main
from tests.api_services import memory_services
from tests.fakes import MemoryEnvironments, MemoryRuns
from tests.judged import judged_bundle, rubric_judged_template

MEASURED = JudgeCalibration(
    connection="conn-judge",
    model_id="judge-model",
    status=CalibrationStatus.MEASURED,
    answers=40,
    criteria=[
        CriterionAgreement(
            criterion="correct", n=40, accuracy=0.85, kappa=0.62, kappa_low=0.41, kappa_high=0.8
        )
    ],
)
LINE = "Judge agreement with people on correct: kappa 0.62 [0.41, 0.80] on 40 answers (accuracy 85%)"


@pytest.fixture
def judged() -> Iterator[None]:
    with rubric_judged_template(rubric_cases=False):
        yield


def _environment(calibration: JudgeCalibration | None) -> EnvironmentRecord:
    return EnvironmentRecord(
        environment_id="judged",
        version="v1",
        status=EnvironmentStatus.REGISTERED,
        bundle_key="environments/judged/v1/bundle.zip",
        judge_calibration=calibration,
    )


def test_a_run_shows_the_agreement_its_environment_version_recorded() -> None:
    # Given a run of an environment version whose judge was measured at registration
    run = RunRecord(run_id="run-1", environment_id="judged", environment_version="v1", model="m", owner="u")
    services = memory_services(runs=MemoryRuns(run), environments=MemoryEnvironments(_environment(MEASURED)))

    # When the run is read
    detail = run_detail("run-1", services=services)

    # Then its body carries the judge's figures and the line shown beside the scores
    assert detail.judge is not None
    assert (detail.judge.uncalibrated, detail.judge.summary) == (False, [LINE])
    assert detail.judge.criteria[0].kappa == 0.62


def test_a_run_warns_of_each_criterion_its_judge_agrees_poorly_on() -> None:
    # Given a judge measured to agree with people on "correct" and poorly on "polite" (kappa under 0.4)
    poorly = CriterionAgreement(
        criterion="polite", n=40, accuracy=0.6, kappa=0.2, kappa_low=0.0, kappa_high=0.4
    )
    calibration = MEASURED.model_copy(update={"criteria": [*MEASURED.criteria, poorly]})
    run = RunRecord(run_id="run-1", environment_id="judged", environment_version="v1", model="m", owner="u")
    services = memory_services(
        runs=MemoryRuns(run), environments=MemoryEnvironments(_environment(calibration))
    )

    # When the run is read
    judge = run_detail("run-1", services=services).judge

    # Then it warns of "polite" alone
    assert judge is not None
    assert judge.warnings == ["this judge agrees poorly with people on polite"]


def test_a_run_of_a_version_whose_calibration_is_still_running_says_so() -> None:
    # Given a run of an environment version whose judge's calibration has not ended
    running = JudgeCalibration(
        connection="conn-judge", model_id="judge-model", status=CalibrationStatus.RUNNING, answers=40
    )
    run = RunRecord(run_id="run-1", environment_id="judged", environment_version="v1", model="m", owner="u")
    services = memory_services(runs=MemoryRuns(run), environments=MemoryEnvironments(_environment(running)))

    # When the run is read, then it says the calibration is running, not that the judge is uncalibrated
    detail = run_detail("run-1", services=services)
    assert detail.judge is not None
    assert detail.judge.summary == [
        "judge calibration still running: its agreement with people on 40 human-labelled answers is being "
        "measured"
    ]


def test_a_run_no_judge_scored_shows_no_judge() -> None:
    run = RunRecord(run_id="run-1", environment_id="judged", environment_version="v1", model="m", owner="u")
    services = memory_services(runs=MemoryRuns(run), environments=MemoryEnvironments(_environment(None)))

    assert run_detail("run-1", services=services).judge is None


def test_the_detailed_results_show_the_judge_s_agreement_beside_the_scores(tmp_path: Path) -> None:
    with DetailedResults(tmp_path) as detailed:
        detailed.write(title="Judged", metrics={}, columns=[], judge=JudgeAgreement.of(MEASURED))

    head = json.loads((tmp_path / "detailed_results.json").read_text(encoding="utf-8"))
    assert head["judge"]["summary"] == [LINE]
    assert head["judge"]["uncalibrated"] is False
    assert f"<li>{LINE}</li>" in (tmp_path / "detailed_results.html").read_text(encoding="utf-8")


def test_a_judged_run_scored_where_its_judge_was_never_measured_says_it_is_uncalibrated(
    judged: None, tmp_path: Path
) -> None:
    # Given a judged bundle and its example's submission, scored on this machine (never registered)
    bundle = judged_bundle(tmp_path / "env", None)
    submission = tmp_path / "env" / "submission" / "predictions.json"

    # When the run is scored
    code = main(
        ["score", "--bundle", str(bundle), "--submission", str(submission), "--out", str(tmp_path / "run")]
    )

    # Then its detailed results and its dataset's manifest say the judge is uncalibrated
    assert code == 0
    head = json.loads((tmp_path / "run" / "detailed_results.json").read_text(encoding="utf-8"))
    assert head["judge"]["uncalibrated"] is True
    assert head["judge"]["summary"][0].startswith(
        "UNCALIBRATED judge: its agreement with people was not measured"
    )
    html = (tmp_path / "run" / "detailed_results.html").read_text(encoding="utf-8")
    assert "UNCALIBRATED judge" in html
    with zipfile.ZipFile(tmp_path / "run" / "finetune_artifact.zip") as artifact:
        manifest = json.loads(artifact.read("manifest.json"))
    assert (manifest["judge"]["uncalibrated"], manifest["judge"]["connection"]) == (True, "conn-judge")
