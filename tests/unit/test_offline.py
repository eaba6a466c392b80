"""One offline run: open, ingest, score, build the artifact, as ``benchgen score`` and the score bench do."""

from __future__ import annotations

import importlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from benchgen import offline
from benchgen.environment import Environment
from benchgen.finetune.artifact import ArtifactReport
from benchgen.ingest import IngestReport
from benchgen.outputs import RunOutput
from benchgen.records.runs import RunInfo
from benchgen.scoring.engine import ScoreReport
from infra.cli.main import main
from infra.examplegen import generate_environment

BENCH = Path(__file__).resolve().parents[2] / "bench"


class Steps:
    """Notes each step the run tells of."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def opened(self, env: Environment) -> None:
        self.seen.append(f"opened {env.spec.title}")

    def ingested(self, report: IngestReport) -> None:
        self.seen.append(f"ingested {report.total_questions}")

    def scoring(self, done: int) -> None:
        if not self.seen[-1].startswith("scoring"):
            self.seen.append("scoring")

    def scored(self, report: ScoreReport) -> None:
        self.seen.append(f"scored {report.total}")

    def built(self, report: ArtifactReport) -> None:
        self.seen.append(f"built {report.emitted}")


def _run_info(env: Environment, overall_score: float | None) -> RunInfo:
    return RunInfo(
        run_id="offline",
        environment_id="gsm8k-tr",
        environment_version="local",
        model="m",
        benchmark=env.spec.title,
        overall_score=overall_score,
        finished_at=datetime(2026, 5, 6, tzinfo=UTC),
    )


def test_an_offline_run_writes_every_output_and_tells_each_step(tmp_path: Path) -> None:
    # given a generated math environment of 600 cases and its submission
    made = generate_environment("gsm8k-tr", tmp_path / "made", cases=600, seed=3)
    steps = Steps()

    # when it runs on this machine
    done = offline.run_offline(
        made.bundle_dir,
        made.submission_path,
        tmp_path / "out",
        workdir=tmp_path / "work",
        run_info=_run_info,
        observer=steps,
    )

    # then each step was told in order, and every output is in the folder under its file name
    title = done.env.spec.title
    assert steps.seen == [f"opened {title}", "ingested 600", "scoring", "scored 600", "built True"]
    assert list(done.files) == [
        RunOutput.PREDICTION_OUTPUT,
        RunOutput.SCORING_OUTPUT,
        RunOutput.DETAILED_HTML,
        RunOutput.DETAILED_JSON,
        RunOutput.FINETUNE_ARTIFACT,
        RunOutput.SCORES,
    ]
    assert all(path == tmp_path / "out" / output.file_name for output, path in done.files.items())
    assert all(path.is_file() for path in done.files.values())
    assert done.run.overall_score == done.scored.overall_score


def test_benchgen_score_and_the_score_bench_take_the_one_offline_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given every call of the offline run counted, and the bench's scripts importable as they run
    calls: list[Path] = []
    real = offline.run_offline

    def counted(bundle: Path, submission: Path, out: Path, **options: Any) -> offline.OfflineRun:
        calls.append(out)
        return real(bundle, submission, out, **options)

    monkeypatch.setattr(offline, "run_offline", counted)
    monkeypatch.syspath_prepend(str(BENCH))
    score_bench = importlib.import_module("score_bench")
    made = generate_environment("gsm8k-tr", tmp_path / "made", cases=100, seed=5)

    # when the command scores it, and the bench measures it
    arguments = ["--bundle", str(made.bundle_dir), "--submission", str(made.submission_path)]
    code = main(["score", *arguments, "--out", str(tmp_path / "cli")])
    measured = score_bench.measure_run(made.bundle_dir, made.submission_path, tmp_path / "bench")

    # then both went through it, and the bench timed each of its steps
    assert code == 0
    assert calls == [tmp_path / "cli", tmp_path / "bench"]
    assert list(measured["stages"]) == ["open", "ingest", "score", "artifact"]
    assert measured["cases"] == 100
    assert set(measured["output_files"]) == {
        "prediction_output.zip",
        "scores.json",
        "scoring_output.zip",
        "detailed_results.html",
        "detailed_results.json",
        "finetune_artifact.zip",
    }
