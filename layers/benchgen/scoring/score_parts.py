"""Score a run with its built-in template in parts, then merge the parts: a whole run is one part.

:func:`score_part` judges the cases of one ``cases.jsonl`` (the run's, or a shard of it) against a
prediction output and leaves in a part folder only flat files that do not depend on where it is:

- ``verdicts.jsonl``: one verdict a line, in case order: these cases' lines of scoring_output.zip;
- ``cases.part``: these cases' records of ``detailed_results.json``;
- ``tally.json``: the template's aggregator state (integer counts, exact float sums) and the first table
  rows of the HTML report.

:func:`finish_scores` merges parts in order into what scoring a whole run writes. Because the aggregators
merge exactly, N parts give the same bytes as one.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import astuple
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from benchgen.cases import Case, Prediction
from benchgen.errors import ScoringError, SubmissionError
from benchgen.judging import JUDGMENTS_NAME, JudgeRecord, read_judgments
from benchgen.outputs import RunOutput
from benchgen.report.detailed import TABLE_LIMIT, CaseLog, Summary, write_detailed
from benchgen.report.html import TableRow
from benchgen.sandbox.job import Sandbox
from benchgen.scoring import Aggregator, ScoringOptions, ScoringTemplate, build_template, registry
from benchgen.scoring.calibration import judge_agreement
from benchgen.scoring.ingested import IngestedPredictions, NotIngested, merge_join, read_ingested
from benchgen.scoring.join import Pairs, PredictionIndex, iter_cases
from benchgen.scoring.reasoned import judge_read, read_prediction
from benchgen.scoring.results import (
    ScoreReport,
    match_columns,
    ordered_scores,
    require_columns,
    write_scores,
)
from benchgen.submission import PredictionStream, open_predictions
from benchgen.verdicts import VERDICTS_NAME, append_verdict
from benchgen.zipwrite import building_zip, entry

if TYPE_CHECKING:
    from benchgen.bundle.spec import Criterion
    from benchgen.environment import Environment

Progress = Callable[[int], None]
PROGRESS_EVERY = 500
CASES_NAME = "cases.part"
TALLY_NAME = "tally.json"
_FLUSH = 1 << 18


def _indexed(cases: Iterator[Case], predictions: Iterator[Prediction], index: PredictionIndex) -> Pairs:
    """Each case with the first prediction of its id, whatever the order of the records."""
    index.add_predictions(predictions)
    for case in cases:
        yield case, index.get(case.id)


def _judge(
    template: ScoringTemplate,
    criteria: Sequence[Criterion],
    pairs: Pairs,
    part_dir: Path,
    progress: Progress | None,
) -> tuple[Aggregator, list[TableRow]]:
    """Judge every pair into ``part_dir``; the aggregator (without the run's metadata) and the table rows."""
    aggregator = template.new_aggregator()
    log = CaseLog(part_dir / CASES_NAME, table_limit=TABLE_LIMIT)
    encoder = msgspec.json.Encoder()
    judge, add = template.judge, aggregator.add
    lines = bytearray()
    try:
        with (part_dir / VERDICTS_NAME).open("wb") as verdicts:
            for case, prediction in pairs:
                # Every template judges the answer only, a reasoning model's reasoning kept apart.
                read = read_prediction(prediction)
                if read is None:
                    verdict = judge(case, prediction, criteria)
                else:
                    verdict = judge_read(judge, case, read, criteria)
                    prediction = read.prediction
                add(verdict, case, prediction)
                append_verdict(verdict, encoder, lines)
                log.add(verdict)
                if len(lines) >= _FLUSH:
                    verdicts.write(lines)
                    lines.clear()
                if progress is not None and aggregator.total % PROGRESS_EVERY == 0:
                    progress(aggregator.total)
            verdicts.write(lines)
    finally:
        log.close()
    return aggregator, log.rows


def score_part(
    env: Environment,
    cases: Path,
    prediction_output: Path,
    part_dir: Path,
    *,
    workdir: Path,
    sandbox: Sandbox | None = None,
    progress: Progress | None = None,
    judgments: Path | None = None,
) -> None:
    """Judge the cases of ``cases`` against ``prediction_output`` with the environment's template and
    write the part's files into ``part_dir``; raises ScoringError when the predictions cannot be read.

    A template that grades with a model's judgments reads them from ``judgments`` (a ``judgments.jsonl``),
    by default the one beside ``prediction_output`` when there is one."""
    assert env.template is not None
    part_dir.mkdir(parents=True, exist_ok=True)
    workdir.mkdir(parents=True, exist_ok=True)
    options = ScoringOptions(
        time_limit=env.time_limit,
        workdir=workdir,
        sandbox=sandbox,
        runtime=env.runtime.runtime,
        judge=env.spec.judge,
        judgments=_judgments(env, prediction_output, judgments),
    )
    template = build_template(env.template, options)
    criteria = env.spec.criteria
    stream: IngestedPredictions | PredictionStream
    try:
        try:
            with read_ingested(prediction_output) as stream:
                pairs = merge_join(iter_cases(cases, template.case_type), iter(stream))
                aggregator, rows = _judge(template, criteria, pairs, part_dir, progress)
        except NotIngested:
            with (
                PredictionIndex(workdir / "score-index.sqlite") as index,
                open_predictions(prediction_output) as stream,
            ):
                pairs = _indexed(iter_cases(cases, template.case_type), iter(stream), index)
                aggregator, rows = _judge(template, criteria, pairs, part_dir, progress)
    except SubmissionError as error:
        raise ScoringError(f"the prediction output cannot be read: {error}") from error
    aggregator.set_metadata(stream.metadata)
    tally = {"aggregator": aggregator.state(), "rows": [astuple(row) for row in rows]}
    (part_dir / TALLY_NAME).write_text(json.dumps(tally, ensure_ascii=False), encoding="utf-8")
    if progress is not None:
        progress(aggregator.total)


def judgments_beside(prediction_output: Path) -> Path | None:
    """The judging pass's ``judgments.jsonl`` beside the prediction output, when it left one there."""
    path = prediction_output.parent / JUDGMENTS_NAME
    return path if path.is_file() else None


def _judgments(
    env: Environment, prediction_output: Path, judgments: Path | None
) -> dict[str, JudgeRecord] | None:
    """For a template that grades with a model's judgments, those of ``judgments`` or of the file beside
    the predictions (None when neither exists, or the template asks no judge)."""
    assert env.template is not None
    path = judgments or judgments_beside(prediction_output)
    if registry.template(env.template).asks is None or path is None:
        return None
    try:
        return read_judgments(path)
    except (OSError, ValueError) as error:
        raise ScoringError(f"the judgments in {path.name} cannot be read: {error}") from None


def _read_tally(part: Path) -> dict[str, Any]:
    try:
        tally: dict[str, Any] = json.loads((part / TALLY_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ScoringError(f"the scored part {part.name} is incomplete ({error}); score it again") from None
    return tally


def _write_scoring_output(target: Path, scores: Path, parts: Sequence[Path]) -> None:
    """``scoring_output.zip``: scores.json, then every part's verdict lines in order, streamed into one
    member (members in name order, as every zip here is written)."""
    verdicts = [part / VERDICTS_NAME for part in parts]
    with building_zip(target) as archive:
        content = scores.read_bytes()
        with archive.open(entry(scores.name, len(content)), "w") as sink:
            sink.write(content)
        size = sum(path.stat().st_size for path in verdicts)
        with archive.open(entry(VERDICTS_NAME, size), "w") as sink:
            for path in verdicts:
                with path.open("rb") as source:
                    shutil.copyfileobj(source, sink, 1 << 20)


def finish_scores(env: Environment, parts: Sequence[Path], out_dir: Path) -> ScoreReport:
    """Merge the parts, in order, into ``scores.json``, ``scoring_output.zip`` and the detailed results
    in ``out_dir``; raises ScoringError when there is no case or a leaderboard column stays empty."""
    assert env.template is not None
    spec = env.spec
    aggregator = build_template(env.template).new_aggregator()
    rows: list[TableRow] = []
    for part in parts:
        tally = _read_tally(part)
        aggregator.merge(tally["aggregator"])
        rows.extend(TableRow(*row) for row in tally["rows"][: TABLE_LIMIT - len(rows)])
    if aggregator.total == 0:
        raise ScoringError("the reference data holds no cases; add cases to cases.jsonl")
    template_scores = aggregator.scores()
    metrics, other = match_columns(spec, template_scores)
    require_columns(spec, metrics, template_scores)
    unscored = [key for key, value in template_scores.items() if value is None]
    scores = ordered_scores(metrics, other, unscored=unscored)
    out_dir.mkdir(parents=True, exist_ok=True)
    scores_path = write_scores(out_dir, scores)
    scoring_output = RunOutput.SCORING_OUTPUT.path_in(out_dir)
    _write_scoring_output(scoring_output, scores_path, parts)
    summary = Summary.of(
        total=aggregator.total,
        passed=aggregator.passed,
        answered=aggregator.answered,
        groups=aggregator.groups,
        unjudged=aggregator.unjudged,
    )
    detailed = write_detailed(
        out_dir,
        title=spec.title,
        metrics=scores,
        columns=spec.columns,
        summary=summary,
        logs=[part / CASES_NAME for part in parts],
        rows=rows,
        judge=judge_agreement(env),
        no_score=aggregator.no_score(),
    )
    return ScoreReport.tallied(
        spec,
        files={RunOutput.SCORES: scores_path, RunOutput.SCORING_OUTPUT: scoring_output, **detailed},
        metrics=metrics,
        other=other,
        tally=aggregator,
        unscored=unscored,
        has_verdicts=True,
    )
