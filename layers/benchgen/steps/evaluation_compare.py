"""The Compare step of an evaluation: the paired comparison over both runs' verdicts on the held-out
cases, written as report.json and report.html, and the evaluation recorded Completed; or the pipeline's
caught failure recorded on it. Apart from Start and Check (`benchgen.steps.evaluation`), whose functions
need neither the comparison nor its report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec

from benchgen.bucket_layout import evaluation_key
from benchgen.cases import read_case_lines
from benchgen.compare.pairing import verdicts_for
from benchgen.compare.pairwise import PairToJudge, Pairwise, judge_pairs, summarize
from benchgen.compare.report import Conclusion, RunIdentity, compare_runs
from benchgen.compare.selection import PackageRef
from benchgen.evaluation.report import REPORT_HTML, REPORT_JSON, evaluation_report, render_report
from benchgen.inference.pacing import Pacer
from benchgen.inference.retry import Backoff
from benchgen.judging import JudgeSettings
from benchgen.lazy_model import LazyModel
from benchgen.outputs import RunOutput
from benchgen.ports.connections import ConnectionsReader
from benchgen.ports.environments import EnvironmentsCatalog
from benchgen.ports.evaluations import EvaluationsStore
from benchgen.ports.providers import ModelFactory
from benchgen.ports.runs import RunsStore
from benchgen.ports.storage import ObjectStorage
from benchgen.providers.judges import JudgeUnreachable
from benchgen.records.evaluations import EvaluationRecord
from benchgen.records.runs import (
    LiveModel,
    RunRecord,
    RunStatus,
)
from benchgen.records.timestamps import utc_now
from benchgen.scoring.registry import template
from benchgen.steps.context import open_run_environment, registered_version
from benchgen.steps.evaluation import EvaluationError, held_out_package, running_evaluation
from benchgen.steps.inference import last_call_start, shard_budget
from benchgen.steps.judging import reach_judge
from benchgen.verdicts import Verdict


class Compared(LazyModel):
    """What Compare found, as the evaluation records it (each a field of the record), and where its
    report is."""

    verdict: Conclusion
    verdict_reason: str
    accuracy_before: float
    accuracy_after: float
    paired_cases: int
    report_key: str
    report_html_key: str


def _scoring_output(run: RunRecord | None, side: str, *, store: ObjectStorage, workdir: Path) -> Path:
    key = run.files.get(RunOutput.SCORING_OUTPUT) if run else None
    if run is None or run.status is not RunStatus.COMPLETED or key is None:
        raise EvaluationError(f"the {side} model's run has no scoring output to compare")
    return store.download(key, RunOutput.SCORING_OUTPUT.path_in(workdir / side))


def _identity(run: RunRecord, package: PackageRef) -> RunIdentity:
    """The run as the report names it; the benchmark's title is the one the package's preparation recorded
    (the environment both runs judged: the runs themselves do not record it)."""
    return RunIdentity(
        run_id=run.run_id, model=run.model, benchmark=package.benchmark, environment_id=run.environment_id
    )


@dataclass(frozen=True)
class PairwiseJudging:
    """What Compare needs to ask the judge of an environment whose template asks one which of the two
    models' answers is better: the environment and its owner, the judge's connection, the port that makes
    a model of it as a live run's is made, how each call retries, and when the step must end."""

    environments: EnvironmentsCatalog
    connections: ConnectionsReader
    model_for: ModelFactory
    backoff: Backoff
    deadline: float | None = None


def _judge_model(judging: PairwiseJudging, environment_id: str, settings: JudgeSettings) -> LiveModel:
    """The judge as a live run's model: a connection of the environment owner's, within its bounds."""
    owner = judging.environments.owner_of(environment_id)
    try:
        return reach_judge(settings, owner.owner if owner is not None else None, judging.connections)
    except JudgeUnreachable as error:
        raise EvaluationError(f"the judge of environment {environment_id}: {error}") from None


def _answer(verdicts: Mapping[str, Verdict], case_id: str) -> str | None:
    """The answer the run gave to the case, as its scoring read it; None when it gave none."""
    verdict = verdicts.get(case_id)
    return verdict.prediction if verdict is not None else None


def _pairwise(
    evaluation: EvaluationRecord,
    run: RunRecord,
    scoring: tuple[Path, Path],
    held_out: Sequence[str],
    *,
    judging: PairwiseJudging,
    store: ObjectStorage,
    workdir: Path,
) -> Pairwise | None:
    """The judge's pairwise section, when the environment's template asks a judge; None otherwise."""
    version = registered_version(run, judging.environments)
    if version.template is None or template(version.template).asks is None:
        return None
    environment = open_run_environment(run, version, store=store, workdir=workdir / "environment")
    settings = environment.spec.judge
    if settings is None or environment.template is None:
        return None
    case_type = template(environment.template).case_type
    wanted = set(held_out)
    try:
        cases = {
            case_id: msgspec.json.decode(line, type=case_type)
            for case_id, line in read_case_lines(environment.cases_path)
            if case_id in wanted
        }
    except (msgspec.DecodeError, ValueError) as error:
        raise EvaluationError(f"a held-out case cannot be read for the judge: {error}") from None
    base = verdicts_for(scoring[0], "before", wanted)
    tuned = verdicts_for(scoring[1], "after", wanted)
    pairs: list[PairToJudge] = []
    without: list[str] = []
    for case_id in held_out:
        case, base_answer, tuned_answer = cases.get(case_id), _answer(base, case_id), _answer(tuned, case_id)
        if case is not None and base_answer and tuned_answer:
            pairs.append(PairToJudge(case, base_answer, tuned_answer))
        else:
            without.append(case_id)
    live = _judge_model(judging, evaluation.environment_id, settings)
    judgments = judge_pairs(
        pairs,
        judging.model_for(live, settings.sampling),
        judging.backoff,
        pacer=Pacer(shard_budget(live, 1, 1)),
        deadline=last_call_start(live, judging.deadline),
    )
    return summarize(
        judgments,
        judge=settings,
        base_model=evaluation.base.live.model_id,
        tuned_model=evaluation.tuned.live.model_id,
        without_both_answers=without,
    )


def compare(
    evaluation_id: str,
    *,
    evaluations: EvaluationsStore,
    runs: RunsStore,
    store: ObjectStorage,
    workdir: Path,
    judging: PairwiseJudging | None = None,
) -> Compared:
    """Compare both runs on the held-out cases, write the report, and record the evaluation Completed.
    With ``judging``, an environment whose template asks a judge has it say which answer is better too."""
    evaluation = running_evaluation(evaluations, evaluation_id)
    package = held_out_package(evaluation, store=store, workdir=workdir)
    tuned_run = runs.get(evaluation.tuned.run_id or "")
    base_run = runs.get(evaluation.base.run_id or "")
    base_scoring = _scoring_output(base_run, "base", store=store, workdir=workdir)
    tuned_scoring = _scoring_output(tuned_run, "trained", store=store, workdir=workdir)
    assert tuned_run is not None and base_run is not None
    pairwise = (
        None
        if judging is None
        else _pairwise(
            evaluation,
            tuned_run,
            (base_scoring, tuned_scoring),
            package.held_out,
            judging=judging,
            store=store,
            workdir=workdir,
        )
    )
    comparison = compare_runs(
        _identity(base_run, package),
        base_scoring,
        _identity(tuned_run, package),
        tuned_scoring,
        cases=list(package.held_out),
        package=package,
        pairwise=pairwise,
    )
    report = evaluation_report(evaluation, comparison)
    out = workdir / "report"
    out.mkdir(parents=True, exist_ok=True)
    (out / REPORT_JSON).write_text(report.model_dump_json(indent=1) + "\n", encoding="utf-8")
    (out / REPORT_HTML).write_text(render_report(report), encoding="utf-8")
    json_key = evaluation_key(evaluation_id, REPORT_JSON)
    html_key = evaluation_key(evaluation_id, REPORT_HTML)
    store.upload(out / REPORT_JSON, json_key, content_type="application/json")
    store.upload(out / REPORT_HTML, html_key, content_type="text/html; charset=utf-8")
    compared = Compared(
        verdict=comparison.verdict,
        verdict_reason=comparison.verdict_reason,
        accuracy_before=comparison.accuracy_before,
        accuracy_after=comparison.accuracy_after,
        paired_cases=comparison.paired_cases,
        report_key=json_key,
        report_html_key=html_key,
    )
    if not evaluations.complete(evaluation_id, found=compared.model_dump(mode="json"), finished_at=utc_now()):
        raise _not_running(evaluation_id, "Completed")
    return compared


def record_evaluation_failure(evaluation_id: str, reason: str, *, evaluations: EvaluationsStore) -> None:
    """The pipeline's caught failure: Running -> Failed with ``reason``."""
    if not evaluations.fail(evaluation_id, reason=reason, finished_at=utc_now()):
        raise _not_running(evaluation_id, f"Failed ({reason})")


def _not_running(evaluation_id: str, outcome: str) -> EvaluationError:
    return EvaluationError(
        f"evaluation {evaluation_id} is no longer Running, so it is not recorded {outcome}: it keeps what "
        "it was recorded with first"
    )
