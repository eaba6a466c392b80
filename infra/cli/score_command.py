"""``benchgen score``: one run of the engine on this machine, no cloud involved.

It takes the same steps as the deployed pipeline (ingest, score, build the finetune artifact) and writes
the files a run produces into one folder, plus ``run.json`` describing the run as the API would.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchgen.pipeline.keys import (
    DETAILED_HTML,
    DETAILED_JSON,
    FINETUNE_ARTIFACT,
    PREDICTION_OUTPUT,
    RUN_FILE_LABELS,
    SCORES,
    SCORING_LOG,
    SCORING_OUTPUT,
)
from infra.cli.progress import ProgressBar

if TYPE_CHECKING:
    from benchgen.ingest import IngestReport
    from benchgen.scoring.engine import ScoreReport

RUN_FILE = "run.json"
# File label (as the API lists a run's files) -> file name; the scoring log exists only when the bundle's
# own scoring program ran.
RUN_FILES = {
    RUN_FILE_LABELS[name]: name
    for name in (
        PREDICTION_OUTPUT,
        SCORES,
        SCORING_OUTPUT,
        DETAILED_HTML,
        DETAILED_JSON,
        FINETUNE_ARTIFACT,
        SCORING_LOG,
    )
}
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
    return {label: name for label, name in RUN_FILES.items() if (out / name).is_file()}


def _write_run(out: Path, record: dict[str, Any]) -> None:
    record["files"] = _files_present(out)
    text = json.dumps(record, indent=2, ensure_ascii=False) + "\n"
    (out / RUN_FILE).write_text(text, encoding="utf-8")


def _clear_previous(out: Path) -> None:
    """A reused run folder must not keep files (say, an artifact) that the new run does not make."""
    for name in [*RUN_FILES.values(), RUN_FILE]:
        (out / name).unlink(missing_ok=True)
    logs = out / Path(SCORING_LOG).parent
    if logs.is_dir() and not any(logs.iterdir()):
        logs.rmdir()


def _metric(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4g}"


def run_score(args: argparse.Namespace) -> int:
    from benchgen.environment import open_environment
    from benchgen.errors import BenchGenError
    from benchgen.finetune.artifact import build_artifact
    from benchgen.ingest import ingest
    from benchgen.records import RunInfo
    from benchgen.scoring.engine import score_predictions

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
    bar: ProgressBar | None = None
    try:
        with tempfile.TemporaryDirectory(prefix="benchgen-score-") as tmp:
            work = Path(tmp)
            env = open_environment(bundle, work / "environment", phase=args.phase)
            record["phase"] = env.phase.name
            record["environment_id"] = environment_id(env.spec.title)
            record["benchmark"] = env.spec.title
            uploaded = as_upload(submission, work / "submission")
            ingested = ingest(env, uploaded, out, workdir=work / "ingest")
            for warning in ingested.warnings:
                print(f"warning: {warning}", file=sys.stderr)
            bar = ProgressBar(ingested.total_questions)
            scored = score_predictions(
                env, out / PREDICTION_OUTPUT, out, workdir=work / "score", progress=bar
            )
            bar.close()
            finished = datetime.now(UTC)
            run = RunInfo(
                run_id=record["run_id"],
                environment_id=record["environment_id"],
                environment_version="local",
                model=model,
                benchmark=env.spec.title,
                overall_score=scored.overall_score,
                finished_at=finished,
            )
            artifact = build_artifact(env, out / SCORING_OUTPUT, out, run=run)
    except BenchGenError as error:
        if bar is not None:
            bar.close()
        record.update(status="Failed", failure_reason=str(error))
        record["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
        _write_run(out, record)
        print(f"error: {error}", file=sys.stderr)
        print(f"run {record['run_id']} failed; details in {out / RUN_FILE}", file=sys.stderr)
        return 2
    record.update(
        status="Completed",
        finished_at=finished.isoformat(timespec="seconds"),
        overall_score=scored.overall_score,
        primary_metric=env.spec.primary_column.key,
        metrics=scored.metrics,
        other_metrics=scored.other_metrics,
        breakdowns=scored.breakdowns,
        counts=_counts(ingested, scored),
        warnings=ingested.warnings,
        artifact_emitted=artifact.emitted,
        artifact_reason=artifact.reason,
        dataset_name=artifact.dataset_name if artifact.emitted else None,
        artifact_examples=artifact.example_count,
        artifact_counts=artifact.counts,
        artifact_splits=artifact.splits,
        artifact_sha256=artifact.sha256 if artifact.emitted else None,
    )
    _write_run(out, record)
    _print_summary(record, out)
    return 0


def _counts(ingested: IngestReport, scored: ScoreReport) -> dict[str, int]:
    counts = {
        "total_questions": ingested.total_questions,
        "answered_questions": ingested.answered_questions,
        "missing": ingested.missing_count,
        "duplicate": ingested.duplicate_count,
        "unknown": ingested.unknown_count,
    }
    # A scoring program that writes no per-case verdicts says nothing about passed cases: leave them out
    # rather than report zero.
    if scored.has_verdicts:
        counts.update(scored=scored.total, passed=scored.passed, answered=scored.answered)
    return counts


def _print_summary(record: dict[str, Any], out: Path) -> None:
    metrics = "  ".join(f"{key} {_metric(value)}" for key, value in record["metrics"].items())
    print(f"{record['benchmark']} · {record['model']} · run {record['run_id']}: Completed")
    print(f"  {metrics}")
    if record["dataset_name"]:
        print(f"  finetune artifact: {record['dataset_name']} ({record['artifact_examples']:,} examples)")
    else:
        print(f"  no finetune artifact: {record['artifact_reason']}")
    print(f"  files in {out}: {', '.join(record['files'].values())}, {RUN_FILE}")
