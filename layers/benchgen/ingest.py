"""Turn a submission into the prediction output that scoring reads (``prediction_output.zip``).

A results submission is matched against the reference case ids through an on-disk index, so memory stays
flat however many cases there are. Duplicate ids keep their first occurrence, ids that name no case are
dropped, and cases without a prediction count as unanswered: all three are reported, none is fatal.
An environment that brings its own programs gets Codabench's prediction step instead (see
:func:`ingest_like_codabench`), so that published bundles run unmodified.
"""

from __future__ import annotations

import shutil
import tempfile
import time
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field

from benchgen.errors import BundleError, SubmissionError
from benchgen.lazy_model import LazyModel
from benchgen.outputs import RunOutput
from benchgen.phases import combine_zips, task_folder, task_label
from benchgen.program_inputs import extract_safely, ingestion_job
from benchgen.program_outcomes import INGESTION, outcome_of, removed_names_problem
from benchgen.programs import ProgramResult
from benchgen.records.programs import ProgramOutcome, in_task
from benchgen.sandbox.job import Sandbox
from benchgen.sandbox.local import LocalSandbox
from benchgen.scoring.ingested import MEMBER as PREDICTIONS_MEMBER
from benchgen.scoring.ingested import write_predictions_json
from benchgen.scoring.join import PredictionIndex, iter_cases
from benchgen.submission import open_predictions
from benchgen.zipwrite import entry, zip_folder

if TYPE_CHECKING:
    from benchgen.environment import Environment

FIRST_IDS = 5
# Either file in a submission's top folder makes it a code submission on Codabench.
SUBMISSION_METADATA_FILES = ("metadata.yaml", "metadata")
OUTPUT_METADATA = "metadata"


class IngestReport(LazyModel):
    prediction_output: Path  # the file ingest wrote: RunOutput.PREDICTION_OUTPUT
    total_questions: int
    answered_questions: int
    missing_count: int = 0
    missing_ids: list[str] = Field(default_factory=list)
    duplicate_count: int = 0
    duplicate_ids: list[str] = Field(default_factory=list)
    unknown_count: int = 0
    unknown_ids: list[str] = Field(default_factory=list)
    execution_time: float = 0.0
    status: str = "success"
    warnings: list[str] = Field(default_factory=list)
    runtime: str | None = None  # the runtime the bundle's programs run in, and why
    programs: list[ProgramOutcome] = Field(default_factory=list)  # the ingestion program's, when it ran

    def counts(self) -> dict[str, int]:
        """What ingest counted, under the names a run records its counts by."""
        return {
            "total_questions": self.total_questions,
            "answered_questions": self.answered_questions,
            "missing_ids": self.missing_count,
            "duplicate_ids": self.duplicate_count,
            "unknown_ids": self.unknown_count,
        }


def _numeric(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def ingest_results(cases_path: Path, submission: Path, out_dir: Path, *, workdir: Path) -> IngestReport:
    """Match a results submission to the cases of ``cases_path`` and write ``prediction_output.zip``."""
    started = time.monotonic()
    workdir.mkdir(parents=True, exist_ok=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    with PredictionIndex(workdir / "ingest-index.sqlite") as index:
        with open_predictions(submission) as stream:
            read = index.add_predictions(stream)
            submitted_metadata = stream.metadata
        if read == 0:
            raise SubmissionError(f"{stream.name} holds no predictions")
        index.add_case_ids(case.id for case in iter_cases(cases_path))
        duplicate_count, duplicate_ids = index.duplicates(FIRST_IDS)
        unknown_count, unknown_ids = index.unknown(FIRST_IDS)
        distinct = read - duplicate_count
        if unknown_count == distinct:
            raise SubmissionError(
                f"none of the {distinct} prediction ids matches a case id of this benchmark "
                f"(first ids: {', '.join(unknown_ids)}); check that predictions use the ids of cases.jsonl"
            )
        given_time = _numeric(submitted_metadata.get("execution_time"))

        def metadata_for(total: int, answered: int) -> dict[str, Any]:
            # The model's own execution time, when the submission states it, is what a run reports.
            execution_time = given_time if given_time is not None else round(time.monotonic() - started, 3)
            return {
                "execution_time": execution_time,
                "total_questions": total,
                "answered_questions": answered,
                "status": "success" if answered == total else "partial",
                "missing_count": total - answered,
                "duplicate_count": duplicate_count,
                "unknown_count": unknown_count,
            }

        prediction_output = RunOutput.PREDICTION_OUTPUT.path_in(out_dir)
        with (
            zipfile.ZipFile(prediction_output, "w") as archive,
            archive.open(entry(PREDICTIONS_MEMBER), "w", force_zip64=True) as target,
        ):
            total, answered, missing_ids, meta = write_predictions_json(
                target, index.in_case_order(), metadata_for, first_ids=FIRST_IDS
            )
    warnings = []
    if duplicate_count:
        warnings.append(
            f"{duplicate_count} prediction(s) repeat an id already given; the first one was kept "
            f"(ids: {', '.join(duplicate_ids)})"
        )
    if unknown_count:
        warnings.append(
            f"{unknown_count} prediction id(s) match no case and were ignored (ids: {', '.join(unknown_ids)})"
        )
    if total - answered:
        warnings.append(
            f"{total - answered} case(s) have no prediction and count as unanswered "
            f"(ids: {', '.join(missing_ids)})"
        )
    return IngestReport(
        prediction_output=prediction_output,
        total_questions=total,
        answered_questions=answered,
        missing_count=total - answered,
        missing_ids=missing_ids,
        duplicate_count=duplicate_count,
        duplicate_ids=duplicate_ids,
        unknown_count=unknown_count,
        unknown_ids=unknown_ids,
        execution_time=float(meta["execution_time"]),
        status=str(meta["status"]),
        warnings=warnings,
    )


def is_results_submission(folder: Path) -> bool:
    """Codabench's rule: a submission without a metadata file holds results, not a program."""
    return not any((folder / name).exists() for name in SUBMISSION_METADATA_FILES)


def write_output_metadata(output: Path, ingestion: ProgramResult | None) -> None:
    """``output/metadata``: the exit codes and durations Codabench records, which scoring programs read from
    ``input/res/metadata``. No submitted program runs here, so ``exitCode`` is null, as on Codabench for a
    results submission; ``elapsedTime`` falls back to the ingestion's, as Codabench's does."""
    path = output / OUTPUT_METADATA
    if path.exists():
        raise SubmissionError(
            f"the prediction output already holds a file named {OUTPUT_METADATA}: that name is where the "
            "exit codes and durations of the step go; write predictions under another name"
        )
    elapsed = ingestion.duration_s if ingestion is not None else None
    status = {
        "exitCode": None,
        "elapsedTime": elapsed,
        "ingestionExitCode": ingestion.returncode if ingestion is not None else None,
        "ingestionElapsedTime": elapsed,
    }
    # PyYAML comes with an ingestion's output only, not with every start of the functions importing this.
    import yaml

    path.write_text(yaml.safe_dump(status, default_flow_style=False), encoding="utf-8")


def ingest_like_codabench(
    env: Environment, submission: Path, out_dir: Path, *, workdir: Path, sandbox: Sandbox | None = None
) -> IngestReport:
    """Codabench's prediction step: a results submission is copied into the prediction output, then the
    ingestion program (if any) runs with the submission as ``$submission_program``.

    A failing ingestion program is the run's warning, not its end: as on Codabench, the scoring program
    runs next, reads the exit code in ``input/res/metadata`` and decides (a results submission's files
    are its prediction output, a code submission's what the program wrote). A time limit passed, or a
    name numpy removed asked for where the bundle's image had it, fails the run here.
    """
    root = Path(tempfile.mkdtemp(prefix="prediction-", dir=workdir))
    submitted = root / "program"
    extract_safely(submission, submitted)
    output = root / "output"
    output.mkdir()
    results = is_results_submission(submitted)
    program_dir = env.ingestion_program_dir
    if program_dir is not None and env.task.ingestion_only_during_scoring:
        # The ingestion program runs during scoring, beside the scoring program, on the submitted files.
        shutil.copytree(submitted, output, dirs_exist_ok=True)
        program_dir = None
    elif results:
        shutil.copytree(submitted, output, dirs_exist_ok=True)
    elif program_dir is None:
        raise SubmissionError(
            f"{submission.name} holds a metadata file, which makes it a code submission, but this "
            "environment has no ingestion program to run it; submit the prediction files without metadata"
        )
    warnings: list[str] = []
    ingestion = None
    programs: list[ProgramOutcome] = []
    if program_dir is not None:
        job = ingestion_job(env, program_dir, submitted, root, shared=root / "shared")
        ingestion = (sandbox or LocalSandbox()).run(job)
        outcome = outcome_of(INGESTION, ingestion, time_limit=env.time_limit)
        programs.append(outcome)
        fatal = removed_names_problem(INGESTION, ingestion, env.runtime)
        if fatal is not None or ingestion.timed_out:
            error = SubmissionError(fatal or str(outcome.problem(stderr=ingestion.stderr)))
            error.programs = tuple(programs)
            raise error
        problem = outcome.problem(stderr=ingestion.stderr)
        if problem is not None:
            then = "the submitted files are" if results else "what it wrote is"
            warnings.append(
                f"{problem}\n{then} the prediction output, and the scoring program decides, as on Codabench"
            )
    if not env.task.ingestion_only_during_scoring:
        # Nothing ran for such a task yet; a code submission's own metadata file stays where it is.
        write_output_metadata(output, ingestion)
    out_dir.mkdir(parents=True, exist_ok=True)
    prediction_output = RunOutput.PREDICTION_OUTPUT.path_in(out_dir)
    zip_folder(output, prediction_output)
    total, answered, notes = _count_program_output(env, prediction_output, workdir)
    return IngestReport(
        prediction_output=prediction_output,
        total_questions=total,
        answered_questions=answered,
        missing_count=total - answered,
        execution_time=ingestion.duration_s if ingestion is not None else 0.0,
        status="success" if answered == total else "partial",
        warnings=warnings + notes,
        programs=programs,
    )


def _count_program_output(env: Environment, output_zip: Path, workdir: Path) -> tuple[int, int, list[str]]:
    """(cases, cases with a prediction, warnings) for what an ingestion program wrote."""
    try:
        cases_path = env.cases_path
    except BundleError:  # no reference cases to count against
        return 0, 0, []
    with PredictionIndex(workdir / "ingest-index.sqlite") as index:
        try:
            total = index.add_case_ids(case.id for case in iter_cases(cases_path))
        except BundleError as error:
            # Only the scoring program reads this reference data, in whatever format it likes, as on
            # Codabench: the check leaves it alone, so counting must not fail the run either.
            note = f"the cases are not counted: {error}; the scoring program reads the reference data as is"
            return 0, 0, [note]
        try:
            with open_predictions(output_zip) as stream:
                index.add_predictions(stream)
        except SubmissionError as error:
            note = f"the prediction output could not be counted case by case: {error}"
            return total, 0, [note]
        answered = sum(1 for _, record in index.in_case_order() if record is not None)
    return total, answered, []


def _ingest_task(
    env: Environment, submission: Path, out_dir: Path, *, workdir: Path, sandbox: Sandbox | None
) -> IngestReport:
    workdir.mkdir(parents=True, exist_ok=True)
    if env.ingestion_program_dir is None and env.scoring_program_dir is None:
        return ingest_results(env.cases_path, submission, out_dir, workdir=workdir)
    return ingest_like_codabench(env, submission, out_dir, workdir=workdir, sandbox=sandbox)


def _ingest_tasks(
    tasks: list[Environment], submission: Path, out_dir: Path, *, workdir: Path, sandbox: Sandbox | None
) -> IngestReport:
    """The submission ingested for each task of the phase, each prediction output in its task's folder."""
    parts: dict[str, Path] = {}
    reports: list[IngestReport] = []
    programs: list[ProgramOutcome] = []
    for view in tasks:
        folder = task_folder(view.task)
        try:
            report = _ingest_task(
                view, submission, workdir / folder / "out", workdir=workdir / folder, sandbox=sandbox
            )
        except SubmissionError as error:
            failed = SubmissionError(f"task {task_label(view.task)}: {error}")
            failed.programs = (*programs, *in_task(task_label(view.task), error.programs))
            raise failed from None
        reports.append(report)
        programs.extend(in_task(task_label(view.task), report.programs))
        parts[folder] = report.prediction_output
        report.warnings[:] = [f"task {task_label(view.task)}: {warning}" for warning in report.warnings]
    out_dir.mkdir(parents=True, exist_ok=True)
    prediction_output = RunOutput.PREDICTION_OUTPUT.path_in(out_dir)
    combine_zips(parts, prediction_output, workdir=workdir)
    total = sum(report.total_questions for report in reports)
    answered = sum(report.answered_questions for report in reports)
    return IngestReport(
        prediction_output=prediction_output,
        total_questions=total,
        answered_questions=answered,
        missing_count=sum(report.missing_count for report in reports),
        duplicate_count=sum(report.duplicate_count for report in reports),
        unknown_count=sum(report.unknown_count for report in reports),
        execution_time=sum(report.execution_time for report in reports),
        status="success" if answered == total else "partial",
        warnings=[warning for report in reports for warning in report.warnings],
        programs=programs,
    )


def ingest(
    env: Environment, submission: Path, out_dir: Path, *, workdir: Path, sandbox: Sandbox | None = None
) -> IngestReport:
    """Write ``out_dir/prediction_output.zip`` for ``submission``; raises SubmissionError when unusable.

    In a phase of several tasks the submission is ingested for each task (see :mod:`benchgen.phases`).
    An ingestion program runs in ``sandbox``; ``None`` is the local runner.
    """
    tasks = env.phase_tasks()
    if len(tasks) == 1:
        report = _ingest_task(env, submission, out_dir, workdir=workdir, sandbox=sandbox)
    else:
        report = _ingest_tasks(tasks, submission, out_dir, workdir=workdir, sandbox=sandbox)
    choice = env.runtime
    report.runtime = choice.describe()
    report.warnings[:0] = choice.warnings
    return report
