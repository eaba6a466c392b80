"""Score a prediction output: with the task's scoring program, or with the built-in template.

Writes into ``out_dir``: ``scores.json`` (every score, leaderboard columns first), ``scoring_output.zip``
(``scores.json``, ``verdicts.jsonl`` and the program's logs and output when a program ran) and
``detailed_results.html`` / ``.json``. Cases, predictions and verdicts are streamed, so memory stays flat
in the number of cases.
"""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from benchgen.errors import ScoringError
from benchgen.outputs import RunOutput
from benchgen.phases import (
    TASK_BREAKDOWN,
    combine_zips,
    merge_task_metrics,
    split_zip,
    task_folder,
    task_label,
)
from benchgen.program_inputs import ingestion_job, stage
from benchgen.program_outcomes import INGESTION, SCORING, outcome_of, removed_names_problem
from benchgen.programs import (
    SCORING_APP,
    Layout,
    ProgramResult,
    program_job,
    read_scores,
    run_side_by_side,
)
from benchgen.records.programs import ProgramOutcome, in_task
from benchgen.report.detailed import DetailedResults
from benchgen.sandbox.job import ProgramJob, Sandbox
from benchgen.sandbox.local import LocalSandbox
from benchgen.scoring import Aggregator
from benchgen.scoring.calibration import judge_agreement
from benchgen.scoring.results import (
    ScoreReport,
    match_columns,
    ordered_scores,
    write_scores,
)
from benchgen.scoring.score_parts import Progress, finish_scores, judgments_beside, score_part
from benchgen.verdicts import VERDICTS_NAME, Verdict
from benchgen.zipwrite import zip_folder

if TYPE_CHECKING:
    from benchgen.environment import Environment

# How the run names an ingestion program that ran during scoring (ingestion_only_during_scoring).
BESIDE = ", run beside the scoring program,"
# ScoreReport is what scoring answers with, so it is named where callers import score_predictions from.
__all__ = ["ScoreReport", "read_verdicts", "score_predictions", "scoring_job"]


def read_verdicts(path: Path) -> Iterator[Verdict]:
    """Verdicts of a ``verdicts.jsonl`` file, one at a time; a bad line raises ScoringError."""
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                yield Verdict.model_validate_json(line)
            except ValidationError as error:
                problem = error.errors()[0]
                where = ".".join(str(part) for part in problem["loc"]) or "the line"
                raise ScoringError(f"{path.name} line {number}: {where}: {problem['msg']}") from error


def _program_html(output: Path) -> Path | None:
    named = RunOutput.DETAILED_HTML.path_in(output)
    if named.is_file():
        return named
    return next(iter(sorted(output.glob("*.html"))), None)


def _write_log(path: Path, command: list[str], logs: dict[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    sections = [f"$ {shlex.join(command)}"] + [
        f"--- {name} ---\n{text.rstrip()}" for name, text in logs.items()
    ]
    path.write_text("\n".join(sections) + "\n", encoding="utf-8")


def _beside_ingestion(
    env: Environment,
    ingestion_dir: Path,
    layout: Layout,
    scoring: ProgramJob,
    workdir: Path,
    sandbox: Sandbox | None,
) -> tuple[ProgramResult, ProgramResult]:
    """``ingestion_only_during_scoring``: the ingestion program runs beside the scoring program, both
    reaching one ``shared/`` folder, as Codabench runs them. The submitted files (``input/res``) are its
    ``$submission_program``; the reference data stays the scoring program's alone. Only the scoring
    program's exit code decides the run, as on Codabench; its logs keep the ingestion's."""
    root = workdir / "ingestion"
    submitted = root / "submission"
    shutil.copytree(layout.res, submitted)
    job = ingestion_job(env, ingestion_dir, submitted, root, shared=layout.shared)
    ingestion, result = run_side_by_side([job, scoring], sandbox=sandbox)
    return ingestion, result


def scoring_job(env: Environment, prediction_output: Path, root: Path) -> tuple[Layout, ProgramJob]:
    """The task's scoring program's job on ``prediction_output``, its folders staged under ``root``."""
    program_dir = env.scoring_program_dir
    assert program_dir is not None
    layout = stage(env, prediction_output, root)
    job = program_job(
        program_dir,
        input_dir=layout.input,
        output_dir=layout.output,
        shared_dir=layout.shared,
        ref_dir=layout.ref,
        res_dir=layout.res,
        time_limit=env.time_limit,
        app=SCORING_APP,
        runtime=env.runtime.runtime,
    )
    return layout, job


def _score_with_program(
    env: Environment,
    prediction_output: Path,
    out_dir: Path,
    *,
    workdir: Path,
    progress: Progress | None = None,
    sandbox: Sandbox | None = None,
    earlier: Sequence[ProgramOutcome] = (),
) -> ScoreReport:
    """Run the task's scoring program Codabench-style; its logs are kept in scoring_output.zip.
    ``earlier`` is what the task's programs did before (its ingestion program in the prediction step)."""
    spec = env.spec
    # A retried run must not read what an earlier attempt left in output/.
    for leftover in (workdir / "scoring", workdir / "scoring-logs", workdir / "ingestion"):
        shutil.rmtree(leftover, ignore_errors=True)
    layout, job = scoring_job(env, prediction_output, workdir / "scoring")
    ingestion_dir = env.ingestion_program_dir if env.task.ingestion_only_during_scoring else None
    ingestion = None
    if ingestion_dir is None:
        result = (sandbox or LocalSandbox()).run(job)
    else:
        ingestion, result = _beside_ingestion(env, ingestion_dir, layout, job, workdir, sandbox)
    logs = {"stdout": result.stdout, "stderr": result.stderr}
    if ingestion is not None:
        logs |= {"ingestion stdout": ingestion.stdout, "ingestion stderr": ingestion.stderr}
    # An ingestion program of the prediction step: the end of its stderr is what the run kept of it.
    predicted = [outcome.stderr_tail for outcome in earlier if outcome.program == INGESTION]
    if predicted:
        logs["ingestion stderr"] = predicted[-1]
    out_dir.mkdir(parents=True, exist_ok=True)
    logs_dir = workdir / "scoring-logs"
    logs_dir.mkdir(parents=True, exist_ok=True)
    output_copy = logs_dir / "output"
    shutil.copytree(layout.output, output_copy, dirs_exist_ok=True)
    (output_copy / "logs").mkdir(exist_ok=True)
    for name, text in logs.items():
        (output_copy / "logs" / f"{name.replace(' ', '_')}.txt").write_text(text, encoding="utf-8")
    files = {
        RunOutput.SCORING_OUTPUT: RunOutput.SCORING_OUTPUT.path_in(out_dir),
        RunOutput.SCORING_LOG: RunOutput.SCORING_LOG.path_in(out_dir),
    }
    zip_folder(output_copy, files[RunOutput.SCORING_OUTPUT])
    _write_log(files[RunOutput.SCORING_LOG], result.command, logs)
    scoring = outcome_of(SCORING, result, time_limit=env.time_limit)
    beside = None if ingestion is None else outcome_of(INGESTION, ingestion, time_limit=env.time_limit)
    programs = [scoring] if beside is None else [beside, scoring]
    beside_problem = None
    if beside is not None and ingestion is not None:
        beside_problem = beside.problem(where=BESIDE, stderr=ingestion.stderr)
    # Only the scoring program's exit code decides the run, as on Codabench; an ingestion program's
    # failure is most often why the scoring program failed, so its error says both, in the order they ran.
    ingestion_problems = [outcome.problem() for outcome in earlier if not outcome.ok] + [beside_problem]
    fatal = removed_names_problem(SCORING, result, env.runtime)
    if ingestion is not None:
        fatal = fatal or removed_names_problem(INGESTION, ingestion, env.runtime)
    try:
        if fatal is not None:
            raise ScoringError(fatal)
        if beside is not None and beside.timed_out:
            raise ScoringError(str(beside_problem))
        if not scoring.ok:
            raise ScoringError(str(scoring.problem(stderr=result.stderr)))
        written = [column.key for column in spec.columns if column.computation is None]
        metrics, other = match_columns(spec, read_scores(layout.output, written))
    except ScoringError as error:
        told = [*(problem for problem in ingestion_problems if problem and problem != str(error)), str(error)]
        failed = ScoringError("\n".join(told) if fatal is None else str(error))
        failed.programs = tuple(programs)
        raise failed from None
    scores = ordered_scores(metrics, other)
    files[RunOutput.SCORES] = write_scores(out_dir, scores)
    verdicts_path = layout.output / VERDICTS_NAME
    has_verdicts = verdicts_path.is_file()
    counter = Aggregator()
    with DetailedResults(out_dir) as detailed:
        for verdict in read_verdicts(verdicts_path) if has_verdicts else ():
            counter.count(verdict)
            detailed.add(verdict)
        files |= detailed.write(title=spec.title, metrics=scores, columns=spec.columns)
    program_html = _program_html(layout.output)
    if program_html is not None:
        shutil.copyfile(program_html, files[RunOutput.DETAILED_HTML])
    if progress is not None:
        progress(counter.total)
    return ScoreReport.tallied(
        spec,
        files=files,
        metrics=metrics,
        other=other,
        tally=counter,
        logs=logs,
        has_verdicts=has_verdicts,
        warnings=[]
        if beside_problem is None
        else [f"{beside_problem}\nthe scores are what the scoring program wrote"],
        programs=programs,
    )


def score_predictions(
    env: Environment,
    prediction_output: Path,
    out_dir: Path,
    *,
    workdir: Path,
    progress: Progress | None = None,
    sandbox: Sandbox | None = None,
    earlier: Sequence[ProgramOutcome] = (),
    judgments: Path | None = None,
) -> ScoreReport:
    """Score ``prediction_output`` for ``env``; raises ScoringError with a message for the run.

    ``judgments``: a judging pass's ``judgments.jsonl``, for a template that grades with a model's
    judgments (by default the one beside ``prediction_output``).

    ``earlier`` is what the run's programs did in the prediction step (the run records it): a scoring
    program that fails after a failed ingestion program fails the run naming both.

    In a phase of several tasks each task is scored on its own and the scores merged as Codabench merges
    them (see :mod:`benchgen.phases`). Programs (a scoring program, a code case's tests) run in
    ``sandbox``; ``None`` is the local runner.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    tasks = env.phase_tasks()
    if len(tasks) > 1:
        return _score_tasks(
            tasks,
            prediction_output,
            out_dir,
            workdir=workdir,
            progress=progress,
            sandbox=sandbox,
            earlier=earlier,
            judgments=judgments or judgments_beside(prediction_output),
        )
    return _score_task(
        env,
        prediction_output,
        out_dir,
        workdir=workdir,
        progress=progress,
        sandbox=sandbox,
        earlier=earlier,
        judgments=judgments,
    )


def _score_tasks(
    tasks: list[Environment],
    prediction_output: Path,
    out_dir: Path,
    *,
    workdir: Path,
    progress: Progress | None,
    sandbox: Sandbox | None,
    earlier: Sequence[ProgramOutcome],
    judgments: Path | None,
) -> ScoreReport:
    """Each task scored from its folder of the prediction output; the run's scores merged from theirs."""
    spec = tasks[0].spec
    folders = [task_folder(view.task) for view in tasks]
    predictions = split_zip(prediction_output, folders, workdir=workdir)
    reports: dict[str, ScoreReport] = {}
    outputs: dict[str, Path] = {}
    logs: list[str] = []
    programs: list[ProgramOutcome] = []
    done = 0

    def advance(count: int) -> None:
        if progress is not None:
            progress(done + count)

    for view, folder in zip(tasks, folders, strict=True):
        task_out = workdir / folder / "out"
        try:
            report = _score_task(
                view,
                predictions[folder],
                task_out,
                workdir=workdir / folder,
                progress=advance,
                sandbox=sandbox,
                earlier=[outcome for outcome in earlier if outcome.task == task_label(view.task)],
                judgments=judgments,
            )
        except ScoringError as error:
            failed = ScoringError(f"task {task_label(view.task)}: {error}")
            failed.programs = (*programs, *in_task(task_label(view.task), error.programs))
            raise failed from None
        finally:
            # A failed task wrote its log but answers no report: the log is read where the task writes it.
            task_log = RunOutput.SCORING_LOG.path_in(task_out)
            if task_log.is_file():
                logs.append(f"=== task {task_label(view.task)} ===\n{task_log.read_text()}")
        reports[task_label(view.task)] = report
        programs.extend(in_task(task_label(view.task), report.programs))
        done += report.total
        outputs[folder] = report.files[RunOutput.SCORING_OUTPUT]
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {RunOutput.SCORING_OUTPUT: RunOutput.SCORING_OUTPUT.path_in(out_dir)}
    combine_zips(outputs, files[RunOutput.SCORING_OUTPUT], workdir=workdir)
    if logs:
        files[RunOutput.SCORING_LOG] = RunOutput.SCORING_LOG.path_in(out_dir)
        files[RunOutput.SCORING_LOG].parent.mkdir(parents=True, exist_ok=True)
        files[RunOutput.SCORING_LOG].write_text("\n".join(logs), encoding="utf-8")
    metrics = merge_task_metrics(spec, [report.metrics for report in reports.values()])
    computed = {column.key for column in spec.columns if column.computation is not None}
    files[RunOutput.SCORES] = write_scores(out_dir, metrics)
    with DetailedResults(out_dir) as detailed:
        files |= detailed.write(
            title=spec.title, metrics=metrics, columns=spec.columns, judge=judge_agreement(tasks[0])
        )
    return ScoreReport(
        files=files,
        scores=metrics,
        metrics=metrics,
        other_metrics={},
        overall_score=metrics.get(spec.primary_column.key),
        no_score=next((report.no_score for report in reports.values() if report.no_score), None),
        total=sum(report.total for report in reports.values()),
        passed=sum(report.passed for report in reports.values()),
        answered=sum(report.answered for report in reports.values()),
        unjudged=sum(report.unjudged for report in reports.values()),
        # what each task's program wrote: computed columns are computed on the run only, as on Codabench
        breakdowns={
            TASK_BREAKDOWN: {
                label: {
                    key: value
                    for key, value in report.scores.items()
                    if key not in computed and value is not None
                }
                for label, report in reports.items()
            }
        },
        logs={label: report.logs.get("stderr", "") for label, report in reports.items()},
        has_verdicts=all(report.has_verdicts for report in reports.values()),
        warnings=[
            f"task {label}: {warning}" for label, report in reports.items() for warning in report.warnings
        ],
        programs=programs,
    )


def _score_task(
    env: Environment,
    prediction_output: Path,
    out_dir: Path,
    *,
    workdir: Path,
    progress: Progress | None,
    sandbox: Sandbox | None,
    earlier: Sequence[ProgramOutcome] = (),
    judgments: Path | None = None,
) -> ScoreReport:
    workdir.mkdir(parents=True, exist_ok=True)
    if env.scoring_program_dir is not None:
        return _score_with_program(
            env,
            prediction_output,
            out_dir,
            workdir=workdir,
            progress=progress,
            sandbox=sandbox,
            earlier=earlier,
        )
    if env.template is None:
        raise ScoringError(
            "the task has no scoring_program and competition.yaml names no template; "
            "add `template: math|qa|routing|code` or a scoring program"
        )
    # The built-in template judges every case: the whole run as one part.
    part = workdir / "part"
    score_part(
        env,
        env.cases_path,
        prediction_output,
        part,
        workdir=workdir,
        sandbox=sandbox,
        progress=progress,
        judgments=judgments,
    )
    return finish_scores(env, [part], out_dir)
