"""One run of the engine on this machine, no cloud involved: open the bundle, ingest the submission, score
it, build the finetune artifact, each output written into one folder under its file name.

``benchgen score`` and the score bench both run it; they differ only in how they name the run and what they
do as each step ends (a progress bar, a stopwatch), which they pass in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from benchgen.environment import Environment, open_environment
from benchgen.finetune.artifact import ArtifactReport, build_artifact
from benchgen.ingest import IngestReport, ingest
from benchgen.outputs import RunOutput
from benchgen.records.runs import RunInfo
from benchgen.scoring.engine import ScoreReport, score_predictions


class OfflineObserver(Protocol):
    """What a run tells as it goes, so that a caller can follow it."""

    def opened(self, env: Environment) -> None:
        """The bundle is open, for its phase."""

    def ingested(self, report: IngestReport) -> None:
        """The prediction output is written; scoring comes next, over ``report.total_questions`` cases."""

    def scoring(self, done: int) -> None:
        """``done`` cases are judged so far."""

    def scored(self, report: ScoreReport) -> None:
        """Every case is judged and the scores are written."""

    def built(self, report: ArtifactReport) -> None:
        """The finetune artifact is written, or ``report.reason`` says why not."""


class _Unwatched:
    def opened(self, env: Environment) -> None:
        pass

    def ingested(self, report: IngestReport) -> None:
        pass

    def scoring(self, done: int) -> None:
        pass

    def scored(self, report: ScoreReport) -> None:
        pass

    def built(self, report: ArtifactReport) -> None:
        pass


@dataclass(frozen=True)
class OfflineRun:
    env: Environment
    run: RunInfo
    ingested: IngestReport
    scored: ScoreReport
    artifact: ArtifactReport

    @property
    def files(self) -> dict[RunOutput, Path]:
        """Every output the run wrote, by id, in reading order."""
        written = {RunOutput.PREDICTION_OUTPUT: self.ingested.prediction_output, **self.scored.files}
        if self.artifact.path is not None:
            written[RunOutput.FINETUNE_ARTIFACT] = self.artifact.path
        return {output: written[output] for output in RunOutput if output in written}


def run_offline(
    bundle: Path,
    submission: Path,
    out: Path,
    *,
    workdir: Path,
    run_info: Callable[[Environment, float | None], RunInfo],
    phase: str | None = None,
    observer: OfflineObserver | None = None,
    judgments: Path | None = None,
) -> OfflineRun:
    """Run ``submission`` against ``bundle`` (its ``phase``, the first by default), writing into ``out``.
    ``judgments``: the judging pass's judgments of the answers, for a template that grades with them.

    ``run_info`` names the run the artifact is built from, given the environment and the overall score.
    Raises the step's BenchGenError (a bundle, submission or scoring error) with the message for the run.
    """
    watch = observer or _Unwatched()
    env = open_environment(bundle, workdir / "environment", phase=phase)
    watch.opened(env)
    ingested = ingest(env, submission, out, workdir=workdir / "ingest")
    watch.ingested(ingested)
    scored = score_predictions(
        env,
        ingested.prediction_output,
        out,
        workdir=workdir / "score",
        progress=watch.scoring,
        earlier=ingested.programs,
        judgments=judgments,
    )
    watch.scored(scored)
    run = run_info(env, scored.overall_score)
    artifact = build_artifact(env, scored.files[RunOutput.SCORING_OUTPUT], out, run=run)
    watch.built(artifact)
    return OfflineRun(env=env, run=run, ingested=ingested, scored=scored, artifact=artifact)
