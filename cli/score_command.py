"""``benchgen score``: one run of the engine on this machine, no cloud involved.

It takes the same steps as the deployed pipeline (ingest, score, build the finetune artifact: see
:mod:`benchgen.offline`) and writes the files a run produces into one folder, plus ``run.json`` describing
the run with the run record's names for its counts and files.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchgen.outputs import RunOutput
from cli.progress import ProgressBar

if TYPE_CHECKING:
    from benchgen.environment import Environment
    from benchgen.finetune.artifact import ArtifactReport
    from benchgen.ingest import IngestReport
    from benchgen.offline import OfflineRun
    from benchgen.records.programs import ProgramOutcome
    from benchgen.scoring.engine import ScoreReport

RUN_FILE = "run.json"
# What a run on this machine can write; the scoring log exists only when the bundle's own scoring program
# ran.
RUN_OUTPUTS = (
    RunOutput.PREDICTION_OUTPUT,
    RunOutput.SCORES,
    RunOutput.SCORING_OUTPUT,
    RunOutput.DETAILED_HTML,
    RunOutput.DETAILED_JSON,
    RunOutput.FINETUNE_ARTIFACT,
    RunOutput.SCORING_LOG,
)
LOCAL_VERSION = "local"  # the environment version runs on this machine have
DEFAULT_MODEL = "unnamed-model"
_HASH_CHUNK = 1 << 20


def register(subparsers: Any) -> None:
    command = subparsers.add_parser(
        "score",
        help="score a submission against a bundle on this machine and build the finetune artifact",
        description="Ingest a results submission, score it with the bundle's template or scoring program, "
        "and build the finetune artifact, writing every file of the run (and run.json) into --out.",
    )
    command.add_argument("--bundle", type=Path, required=True, help="the environment bundle (zip or folder)")
    command.add_argument(
        "--submission",
        type=Path,
        required=True,
        help="predictions.json / .jsonl, bare or zipped, or a folder (zipped as the upload page would)",
    )
    command.add_argument("--out", type=Path, required=True, help="folder for the run's files")
    command.add_argument(
        "--phase",
        help="the phase to run, by name or index (default: the bundle's first phase); every task of "
        "the phase is scored",
    )
    command.add_argument("--model", default=DEFAULT_MODEL, help=f"the model's name (default {DEFAULT_MODEL})")
    command.add_argument(
        "--judgments",
        type=Path,
        help="a judging pass's judgments.jsonl, for a template that grades answers with a judge model",
    )
    command.set_defaults(func=run_score)


def _hash_path(digest: Any, path: Path) -> None:
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for file in files:
        digest.update(file.relative_to(path).as_posix().encode() if path.is_dir() else file.name.encode())
        with file.open("rb") as stream:
            while chunk := stream.read(_HASH_CHUNK):
                digest.update(chunk)


def local_run_id(bundle: Path, submission: Path, model: str, phase: str | None = None) -> str:
    """``local-<hash>`` of the run's inputs: scoring the same files for the same model (and phase) gives
    the same id."""
    digest = hashlib.sha256()
    for path in (bundle, submission):
        if path.exists():
            _hash_path(digest, path)
    digest.update(model.encode())
    if phase is not None:
        digest.update(b"\0phase\0" + phase.encode())
    return f"local-{digest.hexdigest()[:12]}"


def upload_name(submission: Path) -> str:
    return f"{submission.absolute().name}.zip" if submission.is_dir() else submission.name


def as_upload(submission: Path, workdir: Path) -> Path:
    """What would be uploaded: a file as is, a folder zipped with its files at the root (the same folder
    gives the same bytes)."""
    if not submission.is_dir():
        return submission
    from benchgen.zipwrite import zip_folder

    workdir.mkdir(parents=True, exist_ok=True)
    archive = workdir / upload_name(submission)
    zip_folder(submission, archive)
    return archive


def environment_id(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "environment"


def _files_present(out: Path) -> dict[str, str]:
    """What a failed run left: no report names its files, so they are looked for by name."""
    return {output: output.file_name for output in RUN_OUTPUTS if output.path_in(out).is_file()}


def _write_run(out: Path, record: dict[str, Any]) -> None:
    text = json.dumps(record, indent=2, ensure_ascii=False) + "\n"
    (out / RUN_FILE).write_text(text, encoding="utf-8")


def _clear_previous(out: Path) -> None:
    """A reused run folder must not keep files (say, an artifact) that the new run does not make."""
    for path in [*(output.path_in(out) for output in RUN_OUTPUTS), out / RUN_FILE]:
        path.unlink(missing_ok=True)
    logs = RunOutput.SCORING_LOG.path_in(out).parent
    if logs.is_dir() and not any(logs.iterdir()):
        logs.rmdir()


def _metric(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4g}"


class _Console:
    """Fills in the run record as the run learns what it is, and shows warnings and a progress bar."""

    def __init__(self, record: dict[str, Any]) -> None:
        self.record = record
        self.bar: ProgressBar | None = None

    def opened(self, env: Environment) -> None:
        self.record.update(
            phase=env.phase.name, environment_id=environment_id(env.spec.title), benchmark=env.spec.title
        )

    def ingested(self, report: IngestReport) -> None:
        self.record.update(runtime=report.runtime)
        self.programs(report.programs)
        print(f"runtime: {report.runtime}", file=sys.stderr)
        for warning in report.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        self.bar = ProgressBar(report.total_questions)

    def programs(self, outcomes: Sequence[ProgramOutcome]) -> None:
        """How each program that ran ended, as the run record keeps it."""
        done = self.record.setdefault("programs", [])
        done.extend(outcome.model_dump(mode="json") for outcome in outcomes)

    def scoring(self, done: int) -> None:
        if self.bar is not None:
            self.bar(done)

    def scored(self, report: ScoreReport) -> None:
        self.close()
        for warning in report.warnings:
            print(f"warning: {warning}", file=sys.stderr)

    def built(self, report: ArtifactReport) -> None:
        pass

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def run_score(args: argparse.Namespace) -> int:
    from benchgen.errors import BenchGenError
    from benchgen.offline import run_offline
    from benchgen.records.runs import RunInfo

    bundle: Path = args.bundle
    submission: Path = args.submission
    out: Path = args.out
    model: str = args.model
    out.mkdir(parents=True, exist_ok=True)
    _clear_previous(out)
    record: dict[str, Any] = {
        "run_id": local_run_id(bundle, submission, model, args.phase),
        "status": "Running",
        "environment_id": None,
        "benchmark": None,
        "model": model,
        "phase": args.phase,
        "bundle": str(bundle),
        "submission_filename": upload_name(submission),
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }

    def run_info(env: Environment, overall_score: float | None) -> RunInfo:
        return RunInfo(
            run_id=record["run_id"],
            environment_id=environment_id(env.spec.title),
            environment_version=LOCAL_VERSION,
            model=model,
            benchmark=env.spec.title,
            overall_score=overall_score,
            finished_at=datetime.now(UTC),
        )

    console = _Console(record)
    try:
        with tempfile.TemporaryDirectory(prefix="benchgen-score-") as tmp:
            work = Path(tmp)
            uploaded = as_upload(submission, work / "submission")
            done = run_offline(
                bundle,
                uploaded,
                out,
                workdir=work,
                run_info=run_info,
                phase=args.phase,
                observer=console,
                judgments=args.judgments,
            )
    except BenchGenError as error:
        console.close()
        console.programs(error.programs)
        record.update(status="Failed", failure_reason=str(error))
        record["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
        record["files"] = _files_present(out)
        _write_run(out, record)
        print(f"error: {error}", file=sys.stderr)
        print(f"run {record['run_id']} failed; details in {out / RUN_FILE}", file=sys.stderr)
        return 2
    scored, artifact = done.scored, done.artifact
    console.programs(scored.programs)
    record.update(
        status="Completed",
        finished_at=done.run.finished_at.isoformat(timespec="seconds"),
        overall_score=scored.overall_score,
        no_score=scored.no_score,
        primary_metric=done.env.spec.primary_column.key,
        metrics=scored.metrics,
        other_metrics=scored.other_metrics,
        breakdowns=scored.breakdowns,
        counts=_counts(done),
        warnings=done.ingested.warnings + done.scored.warnings,
        artifact_emitted=artifact.emitted,
        artifact_reason=artifact.reason,
        dataset_name=artifact.dataset_name if artifact.emitted else None,
        artifact_examples=artifact.example_count,
        artifact_counts=artifact.counts,
        artifact_splits=artifact.splits,
        artifact_sha256=artifact.sha256 if artifact.emitted else None,
        files={output: path.relative_to(out).as_posix() for output, path in done.files.items()},
    )
    _write_run(out, record)
    _print_summary(record, out)
    return 0


def _counts(done: OfflineRun) -> dict[str, int]:
    """The counts under the names the run record gives them."""
    counts = done.ingested.counts()
    # A scoring program that writes no per-case verdicts says nothing about passed cases: leave them out
    # rather than report zero.
    if done.scored.has_verdicts:
        counts.update(done.scored.counts())
    return counts


def _print_summary(record: dict[str, Any], out: Path) -> None:
    metrics = "  ".join(f"{key} {_metric(value)}" for key, value in record["metrics"].items())
    print(f"{record['benchmark']} · {record['model']} · run {record['run_id']}: Completed")
    print(f"  {metrics}")
    if record["no_score"]:
        print(f"  {record['no_score']}")
    if record["dataset_name"]:
        print(f"  finetune artifact: {record['dataset_name']} ({record['artifact_examples']:,} examples)")
    else:
        print(f"  no finetune artifact: {record['artifact_reason']}")
    print(f"  files in {out}: {', '.join(record['files'].values())}, {RUN_FILE}")
