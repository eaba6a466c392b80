"""Score a prediction output: with the task's scoring program, or with the built-in template.

Writes into ``out_dir``: ``scores.json`` (every score, leaderboard columns first), ``scoring_output.zip``
(``scores.json``, ``verdicts.jsonl`` and the program's logs and output when a program ran) and
``detailed_results.html`` / ``.json``. Cases, predictions and verdicts are streamed, so memory stays flat
in the number of cases.
"""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from benchgen.bundle.runtime import with_gpu_reason
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
from benchgen.programs import (
    SCORING_APP,
    Layout,
    ProgramResult,
    last_lines,
    program_job,
    read_scores,
    run_side_by_side,
)
from benchgen.report.detailed import DetailedResults
from benchgen.sandbox.job import ProgramJob, Sandbox
from benchgen.sandbox.local import LocalSandbox
from benchgen.scoring import Aggregator
from benchgen.scoring.results import (
    ScoreReport,
    match_columns,
    ordered_scores,
    write_scores,
)
from benchgen.scoring.score_parts import Progress, finish_scores, score_part
from benchgen.verdicts import VERDICTS_NAME, Verdict
from benchgen.zipwrite import zip_folder

if TYPE_CHECKING:
    from benchgen.environment import Environment

# ScoreReport is what scoring answers with, so it is named where callers import score_predictions from.
__all__ = ["ScoreReport", "read_verdicts", "score_predictions"]


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


def _score_with_program(
    env: Environment,
    prediction_output: Path,
    out_dir: Path,
    *,
    workdir: Path,
    progress: Progress | None = None,
    sandbox: Sandbox | None = None,
) -> ScoreReport:
    """Run the task's scoring program Codabench-style; its logs are kept in scoring_output.zip."""
    spec = env.spec
    program_dir = env.scoring_program_dir
    assert program_dir is not None
    # A retried run must not read what an earlier attempt left in output/.
    for leftover in (workdir / "scoring", workdir / "scoring-logs", workdir / "ingestion"):
        shutil.rmtree(leftover, ignore_errors=True)
    layout = stage(env, prediction_output, workdir / "scoring")
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
    ingestion_dir = env.ingestion_program_dir if env.task.ingestion_only_during_scoring else None
    ingestion = None
    if ingestion_dir is None:
        result = (sandbox or LocalSandbox()).run(job)
    else:
        ingestion, result = _beside_ingestion(env, ingestion_dir, layout, job, workdir, sandbox)
    logs = {"stdout": result.stdout, "stderr": result.stderr}
    if ingestion is not None:
        logs |= {"ingestion stdout": ingestion.stdout, "ingestion stderr": ingestion.stderr}
    out_dir.mkdir(parents=True, exist_ok=True)
    logs_dir = workdir / "scoring-logs"
    logs_dir.mkdir(parents=True, exist_ok=True)
    output_copy = logs_dir / "output"
    shutil.copytree(layout.output, output_copy, dirs_exist_ok=True)
    (output_copy / "logs").mkdir(exist_ok=True)
    (output_copy / "logs" / "stdout.txt").write_text(result.stdout, encoding="utf-8")
    (output_copy / "logs" / "stderr.txt").write_text(result.stderr, encoding="utf-8")
    if ingestion is not None:
        (output_copy / "logs" / "ingestion_stdout.txt").write_text(ingestion.stdout, encoding="utf-8")
        (output_copy / "logs" / "ingestion_stderr.txt").write_text(ingestion.stderr, encoding="utf-8")
    files = {
        RunOutput.SCORING_OUTPUT: RunOutput.SCORING_OUTPUT.path_in(out_dir),
        RunOutput.SCORING_LOG: RunOutput.SCORING_LOG.path_in(out_dir),
    }
    zip_folder(output_copy, files[RunOutput.SCORING_OUTPUT])
    _write_log(files[RunOutput.SCORING_LOG], result.command, logs)
    beside = _ingestion_problem(ingestion, env.time_limit)
    if ingestion is not None and ingestion.timed_out:
        raise ScoringError(str(beside))
    try:
        if result.timed_out:
            raise ScoringError(
                f"the scoring program passed the time limit of {env.time_limit} s and was stopped"
            )
        if result.returncode != 0:
            stderr = last_lines(result.stderr) or "(nothing on stderr)"
            failure = f"the scoring program exited with code {result.returncode}:\n{stderr}"
            raise ScoringError(with_gpu_reason("scoring program", result.stderr, failure))
        written = [column.key for column in spec.columns if column.computation is None]
        metrics, other = match_columns(spec, read_scores(layout.output, written))
    except ScoringError as error:
        # The ingestion program's failure is most often why the scoring program failed: say both.
        raise ScoringError(str(error) if beside is None else f"{error}\n{beside}") from None
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
        warnings=[] if beside is None else [f"{beside}\nthe scores are what the scoring program wrote"],
    )


def _ingestion_problem(ingestion: ProgramResult | None, time_limit: int) -> str | None:
    """What went wrong with the ingestion program run beside the scoring program; None when nothing did.

    Only the scoring program's exit code decides the run, as on Codabench, so this is the run's warning
    when the scoring program went on, and part of the run's error when it failed."""
    if ingestion is None or ingestion.ok:
        return None
    if ingestion.timed_out:
        return (
            "the ingestion program, run beside the scoring program, passed the time limit of "
            f"{time_limit} s and was stopped"
        )
    stderr = last_lines(ingestion.stderr) or "(nothing on stderr)"
    failure = (
        "the ingestion program, run beside the scoring program, exited with code "
        f"{ingestion.returncode}:\n{stderr}"
    )
    return with_gpu_reason("ingestion program", ingestion.stderr, failure)


def score_predictions(
    env: Environment,
    prediction_output: Path,
    out_dir: Path,
    *,
    workdir: Path,
    progress: Progress | None = None,
    sandbox: Sandbox | None = None,
) -> ScoreReport:
    """Score ``prediction_output`` for ``env``; raises ScoringError with a message for the run.

    In a phase of several tasks each task is scored on its own and the scores merged as Codabench merges
    them (see :mod:`benchgen.phases`). Programs (a scoring program, a code case's tests) run in
    ``sandbox``; ``None`` is the local runner.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    tasks = env.phase_tasks()
    if len(tasks) > 1:
        return _score_tasks(
            tasks, prediction_output, out_dir, workdir=workdir, progress=progress, sandbox=sandbox
        )
    return _score_task(env, prediction_output, out_dir, workdir=workdir, progress=progress, sandbox=sandbox)


def _score_tasks(
    tasks: list[Environment],
    prediction_output: Path,
    out_dir: Path,
    *,
    workdir: Path,
    progress: Progress | None,
    sandbox: Sandbox | None,
) -> ScoreReport:
    """Each task scored from its folder of the prediction output; the run's scores merged from theirs."""
    spec = tasks[0].spec
    folders = [task_folder(view.task) for view in tasks]
    predictions = split_zip(prediction_output, folders, workdir=workdir)
    reports: dict[str, ScoreReport] = {}
    outputs: dict[str, Path] = {}
    logs: list[str] = []
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
            )
        except ScoringError as error:
            raise ScoringError(f"task {task_label(view.task)}: {error}") from None
        finally:
            # A failed task wrote its log but answers no report: the log is read where the task writes it.
            task_log = RunOutput.SCORING_LOG.path_in(task_out)
            if task_log.is_file():
                logs.append(f"=== task {task_label(view.task)} ===\n{task_log.read_text()}")
        reports[task_label(view.task)] = report
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
        files |= detailed.write(title=spec.title, metrics=metrics, columns=spec.columns)
    return ScoreReport(
        files=files,
        scores=metrics,
        metrics=metrics,
        other_metrics={},
        overall_score=metrics.get(spec.primary_column.key),
        total=sum(report.total for report in reports.values()),
        passed=sum(report.passed for report in reports.values()),
        answered=sum(report.answered for report in reports.values()),
        # what each task's program wrote: computed columns are computed on the run only, as on Codabench
        breakdowns={
            TASK_BREAKDOWN: {
                label: {key: value for key, value in report.scores.items() if key not in computed}
                for label, report in reports.items()
            }
        },
        logs={label: report.logs.get("stderr", "") for label, report in reports.items()},
        has_verdicts=all(report.has_verdicts for report in reports.values()),
        warnings=[
            f"task {label}: {warning}" for label, report in reports.items() for warning in report.warnings
        ],
    )


def _score_task(
    env: Environment,
    prediction_output: Path,
    out_dir: Path,
    *,
    workdir: Path,
    progress: Progress | None,
    sandbox: Sandbox | None,
) -> ScoreReport:
    workdir.mkdir(parents=True, exist_ok=True)
    if env.scoring_program_dir is not None:
        return _score_with_program(
            env, prediction_output, out_dir, workdir=workdir, progress=progress, sandbox=sandbox
        )
    if env.template is None:
        raise ScoringError(
            "the task has no scoring_program and competition.yaml names no template; "
            "add `template: math|qa|routing|code` or a scoring program"
        )
    # The built-in template judges every case: the whole run as one part.
    part = workdir / "part"
    score_part(
        env, env.cases_path, prediction_output, part, workdir=workdir, sandbox=sandbox, progress=progress
    )
    return finish_scores(env, [part], out_dir)
