"""The evaluation's steps over the in-memory ports: Start makes (or reuses) the two live runs on the
package's held-out cases and starts them once, Check waits for both within a bound, Compare writes the
paired report and answers what the evaluation records."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from benchgen.bucket_layout import live_execution_name, package_key
from benchgen.compare.report import Conclusion
from benchgen.outputs import RunOutput
from benchgen.records.evaluations import EvaluatedModel, EvaluationRecord, EvaluationStatus
from benchgen.records.runs import CaseScope, LiveModel, RunRecord, RunStatus
from benchgen.steps.evaluation import EvaluationError, check, evaluation_run_id, start
from benchgen.steps.evaluation_compare import Compared, compare, record_evaluation_failure
from tests.fakes import MemoryEvaluations, MemoryRuns, MemoryStarter, MemoryStore
from tests.unit.compare_inputs import outcomes

PACKAGE_ID = "pkg-1"
HELD_OUT = ("c1", "c2", "c3", "c4")
BENCHMARK = "GSM8K-TR"


def _package() -> bytes:
    manifest = {
        "package_id": PACKAGE_ID,
        "preparation": {"benchmark": BENCHMARK, "environment": {"id": "gsm8k-tr", "version": "v1"}},
        "held_out": {"cases": [{"case_id": case_id, "text_hash": "0" * 64} for case_id in HELD_OUT]},
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("manifest.json", json.dumps(manifest))
    return buffer.getvalue()


def _live(model: str) -> LiveModel:
    return LiveModel(
        connection_id="conn-1", provider="openai-compatible", model_id=model, base_url="http://127.0.0.1:1/v1"
    )


def _evaluation(
    *, sha256: str, base_run: str | None = None, tuned_run: str | None = None
) -> EvaluationRecord:
    return EvaluationRecord(
        evaluation_id="eval-1",
        owner="alice",
        training_run_id="train-1",
        training_owner="alice",
        package_id=PACKAGE_ID,
        package_sha256=sha256,
        environment_id="gsm8k-tr",
        environment_version="v1",
        trained_model="example-tuned",
        tuned=EvaluatedModel(live=_live("example-tuned"), run_id=tuned_run),
        base=EvaluatedModel(live=_live("example-base"), run_id=base_run, reused=base_run is not None),
        authorized_by="alice",
        authorized_through="group evaluators",
        authorized_at="2026-12-01T10:00:00Z",
    )


def _run(run_id: str, status: RunStatus, reason: str | None = None, **fields: Any) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        environment_id="gsm8k-tr",
        environment_version="v1",
        model="m",
        owner="alice",
        status=status,
        failure_reason=reason,
        **fields,
    )


class Evaluation:
    """An evaluation's world: its package in the bucket, the evaluations and runs tables, the
    InferencePipeline."""

    def __init__(self, root: Path, *, base_run: str | None = None, package: bytes | None = None) -> None:
        self.root = root
        body = _package()
        self.store = MemoryStore({package_key(PACKAGE_ID): package or body})
        self.evaluations = MemoryEvaluations(
            _evaluation(sha256=hashlib.sha256(body).hexdigest(), base_run=base_run)
        )
        self.runs = MemoryRuns()
        self.inference = MemoryStarter()
        self.deliveries = 0

    def start(self) -> dict[str, Any]:
        self.deliveries += 1
        return start(
            "eval-1",
            evaluations=self.evaluations,
            runs=self.runs,
            store=self.store,
            inference=self.inference,
            workdir=self.root / f"start-{self.deliveries}",
        )

    def evaluation(self) -> EvaluationRecord:
        record = self.evaluations.get("eval-1")
        assert record is not None
        return record


def _scoped(world: Evaluation, run: RunRecord) -> list[str]:
    assert run.case_scope is not None
    ids: list[str] = json.loads(world.store.objects[run.case_scope.key])["case_ids"]
    return ids


def test_start_makes_both_runs_on_the_held_out_cases_and_starts_them(tmp_path: Path) -> None:
    world = Evaluation(tmp_path)

    answer = world.start()

    # then each side has a live run of its model restricted to the package's held-out cases
    tuned, base = evaluation_run_id("eval-1", "tuned"), evaluation_run_id("eval-1", "base")
    assert answer == {"tuned_run_id": tuned, "base_run_id": base, "held_out_count": 4}
    for run_id, model in ((tuned, "example-tuned"), (base, "example-base")):
        run = world.runs.runs[run_id]
        assert (run.status, run.model, run.owner) == (RunStatus.PENDING, model, "alice")
        assert run.live_model is not None and run.live_model.model_id == model
        assert _scoped(world, run) == list(HELD_OUT)
    # the evaluation names them, and both InferencePipelines are started
    evaluation = world.evaluation()
    assert (evaluation.tuned.run_id, evaluation.base.run_id, evaluation.held_out_count) == (tuned, base, 4)
    assert world.inference.started == {
        live_execution_name(tuned): {"run_id": tuned},
        live_execution_name(base): {"run_id": base},
    }


def test_a_reused_base_run_is_neither_made_nor_started_again(tmp_path: Path) -> None:
    world = Evaluation(tmp_path, base_run="run-base-earlier")

    answer = world.start()

    tuned = evaluation_run_id("eval-1", "tuned")
    assert answer == {"tuned_run_id": tuned, "base_run_id": "run-base-earlier", "held_out_count": 4}
    assert list(world.runs.runs) == [tuned]
    assert list(world.inference.started) == [live_execution_name(tuned)]


def test_starting_again_finds_the_runs_and_executions_the_first_start_made(tmp_path: Path) -> None:
    # given a started evaluation
    world = Evaluation(tmp_path)
    first = world.start()
    runs, started, uploads = dict(world.runs.runs), dict(world.inference.started), list(world.store.uploads)

    # when Start runs again (a retried state)
    second = world.start()

    # then it answers the same runs, and nothing is made, written or started again
    assert second == first
    assert world.runs.runs == runs
    assert world.inference.started == started
    assert world.store.uploads == uploads


def test_a_package_whose_bytes_changed_fails_the_evaluation_and_makes_no_run(tmp_path: Path) -> None:
    world = Evaluation(tmp_path, package=_package() + b"tampered")

    with pytest.raises(EvaluationError, match="the held-out cases cannot be trusted"):
        world.start()
    assert world.runs.runs == {} and world.inference.started == {}


def test_an_evaluation_no_longer_running_is_not_started(tmp_path: Path) -> None:
    world = Evaluation(tmp_path)
    world.evaluations.records["eval-1"] = world.evaluation().model_copy(
        update={"status": EvaluationStatus.FAILED}
    )

    with pytest.raises(EvaluationError, match="evaluation eval-1 is Failed, not Running"):
        world.start()
    assert world.runs.runs == {}


def _check(polls: int, max_checks: int, *runs: RunRecord) -> dict[str, Any]:
    evaluation = _evaluation(sha256="ab" * 32, tuned_run="run-tuned", base_run="run-base")
    return check(
        "eval-1", polls, max_checks, evaluations=MemoryEvaluations(evaluation), runs=MemoryRuns(*runs)
    )


def test_both_runs_completed_is_finished() -> None:
    answer = _check(2, 10, _run("run-tuned", RunStatus.COMPLETED), _run("run-base", RunStatus.COMPLETED))
    assert answer == {"finished": True, "polls": 3}


def test_a_run_still_going_is_checked_again_until_the_last_check() -> None:
    runs = (_run("run-tuned", RunStatus.RUNNING), _run("run-base", RunStatus.COMPLETED))
    assert _check(0, 3, *runs) == {"finished": False, "polls": 1}
    with pytest.raises(EvaluationError) as timed_out:
        _check(2, 3, *runs)
    assert str(timed_out.value) == (
        "the runs did not finish within 3 checks: the trained model's run run-tuned is Running and the base "
        "model's run run-base is Completed; request the evaluation again (a completed base run is reused)"
    )


def test_a_failed_run_fails_the_evaluation_with_its_reason() -> None:
    runs = (
        _run("run-tuned", RunStatus.FAILED, "the model example-tuned did not answer"),
        _run("run-base", RunStatus.RUNNING),
    )
    with pytest.raises(EvaluationError) as failed:
        _check(0, 10, *runs)
    assert str(failed.value) == (
        "the trained model's run run-tuned failed: the model example-tuned did not answer"
    )


def _judged(world: Evaluation, run_id: str, passes: dict[str, bool]) -> RunRecord:
    key = f"runs/{run_id}/scoring_output.zip"
    world.store.objects[key] = outcomes(world.root / f"{run_id}.zip", passes).read_bytes()
    scope = CaseScope(key=f"runs/{run_id}/case_scope.json", count=len(HELD_OUT))
    return _run(run_id, RunStatus.COMPLETED, files={RunOutput.SCORING_OUTPUT: key}, case_scope=scope)


def _compared_world(root: Path) -> Evaluation:
    """Both sides judged on the held-out cases: the trained model fixes c1 and c2 and breaks none."""
    world = Evaluation(root)
    world.start()
    evaluation = world.evaluation()
    assert evaluation.tuned.run_id is not None and evaluation.base.run_id is not None
    before = {"c1": False, "c2": False, "c3": True, "c4": False}
    after = {"c1": True, "c2": True, "c3": True, "c4": False}
    world.runs.runs[evaluation.base.run_id] = _judged(world, evaluation.base.run_id, before)
    world.runs.runs[evaluation.tuned.run_id] = _judged(world, evaluation.tuned.run_id, after)
    return world


def _compare(world: Evaluation, workdir: Path) -> Compared:
    return compare(
        "eval-1", evaluations=world.evaluations, runs=world.runs, store=world.store, workdir=workdir
    )


def test_compare_writes_the_paired_report_and_answers_what_the_evaluation_records(tmp_path: Path) -> None:
    world = _compared_world(tmp_path)

    compared = _compare(world, tmp_path / "compare")

    # then the report is in the bucket in both forms, and the answer is its headline
    assert (compared.report_key, compared.report_html_key) == (
        "evaluations/eval-1/report.json",
        "evaluations/eval-1/report.html",
    )
    report = json.loads(world.store.objects[compared.report_key])
    assert b"<html" in world.store.objects[compared.report_html_key]
    assert (compared.paired_cases, compared.accuracy_before, compared.accuracy_after) == (4, 0.25, 0.75)
    assert compared.verdict is Conclusion(report["comparison"]["verdict"])
    assert compared.verdict_reason == report["comparison"]["verdict_reason"]


def test_the_report_names_the_benchmark_its_package_was_prepared_from(tmp_path: Path) -> None:
    world = _compared_world(tmp_path)

    compared = _compare(world, tmp_path / "compare")

    # then both sides carry the benchmark's title, and the page is titled by it
    report = json.loads(world.store.objects[compared.report_key])
    assert report["comparison"]["before"]["benchmark"] == BENCHMARK
    assert report["comparison"]["after"]["benchmark"] == BENCHMARK
    page = world.store.objects[compared.report_html_key].decode("utf-8")
    assert "<title>GSM8K-TR · m → m · comparison</title>" in page


def test_compare_records_the_evaluation_completed_with_what_it_found(tmp_path: Path) -> None:
    world = _compared_world(tmp_path)

    compared = _compare(world, tmp_path / "compare")

    evaluation = world.evaluation()
    assert evaluation.status is EvaluationStatus.COMPLETED and evaluation.finished_at is not None
    assert (evaluation.verdict, evaluation.verdict_reason) == (
        compared.verdict.value,
        compared.verdict_reason,
    )
    assert (evaluation.accuracy_before, evaluation.accuracy_after, evaluation.paired_cases) == (0.25, 0.75, 4)
    assert (evaluation.report_key, evaluation.report_html_key) == (
        compared.report_key,
        compared.report_html_key,
    )


def test_an_evaluation_that_left_running_is_not_recorded_again(tmp_path: Path) -> None:
    world = _compared_world(tmp_path)
    _compare(world, tmp_path / "first")
    completed = world.evaluation()

    with pytest.raises(EvaluationError, match="evaluation eval-1 is"):
        _compare(world, tmp_path / "second")
    with pytest.raises(EvaluationError, match="evaluation eval-1 is no longer Running"):
        record_evaluation_failure("eval-1", "late", evaluations=world.evaluations)

    assert world.evaluation() == completed


def test_a_caught_failure_is_recorded_on_the_evaluation(tmp_path: Path) -> None:
    world = _compared_world(tmp_path)

    record_evaluation_failure("eval-1", "the trained model's run failed", evaluations=world.evaluations)

    evaluation = world.evaluation()
    assert (evaluation.status, evaluation.failure_reason) == (
        EvaluationStatus.FAILED,
        "the trained model's run failed",
    )
    assert evaluation.finished_at is not None


def test_compare_refuses_a_side_without_verdicts_and_writes_no_report(tmp_path: Path) -> None:
    world = _compared_world(tmp_path)
    base_run = world.evaluation().base.run_id
    assert base_run is not None
    world.runs.runs[base_run] = world.runs.runs[base_run].model_copy(update={"files": {}})

    with pytest.raises(EvaluationError, match="the base model's run has no scoring output to compare"):
        compare(
            "eval-1",
            evaluations=world.evaluations,
            runs=world.runs,
            store=world.store,
            workdir=tmp_path / "c",
        )
    assert not any(key.startswith("evaluations/") for key in world.store.objects)
