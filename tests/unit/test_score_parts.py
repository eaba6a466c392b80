"""A run scored in parts and merged writes the same bytes as the run scored whole.

The parts are what a sharded run scores: consecutive slices of the ``cases.jsonl`` lines, each with a
prediction output in the format ingest writes, holding that slice's predictions in case order.
"""

from __future__ import annotations

import itertools
import json
import zipfile
from pathlib import Path

import pytest

from benchgen.environment import Environment, open_environment
from benchgen.ingest import ingest
from benchgen.judging import JUDGMENTS_NAME
from benchgen.scoring import registry, score_parts, templates
from benchgen.scoring.engine import score_predictions
from benchgen.scoring.score_parts import finish_scores, judgments_beside, score_part
from examplegen import generate_environment
from tests.judged import SimulatedJudge, judge_submission

OUTPUTS = ("scores.json", "scoring_output.zip", "detailed_results.json", "detailed_results.html")
CASES = 500
CUTS = (0, 7, 180, 181, 420, CASES)  # five uneven parts, one of a single case


def _whole_run(tmp_path: Path, name: str) -> tuple[Environment, Path]:
    """The environment, ingested with a submission that leaves every 23rd case unanswered, and scored."""
    made = generate_environment(name, tmp_path / "generated", cases=CASES, seed=20261201)
    submission = made.submission_path
    if submission.suffix == ".jsonl":
        lines = submission.read_text(encoding="utf-8").splitlines(keepends=True)
        submission.write_text("".join(line for i, line in enumerate(lines) if i % 23 != 5), encoding="utf-8")
    else:
        document = json.loads(submission.read_text(encoding="utf-8"))
        document["predictions"] = [p for i, p in enumerate(document["predictions"]) if i % 23 != 5]
        submission.write_text(json.dumps(document), encoding="utf-8")
    env = open_environment(made.bundle_dir, tmp_path / "environment")
    whole = tmp_path / "whole"
    ingested = ingest(env, made.submission_path, whole, workdir=tmp_path / "ingest")
    if env.template is not None and registry.template(env.template).asks is not None:
        # A judged run's judgments beside its predictions, the judge of one question giving no answer.
        judge = SimulatedJudge(fails=["explain-000003"])
        judge_submission(env, made.submission_path, whole / JUDGMENTS_NAME, judge)
    score_predictions(env, ingested.prediction_output, whole, workdir=tmp_path / "score")
    return env, ingested.prediction_output


def _prediction_records(prediction_output: Path) -> tuple[dict[str, str], bytes]:
    """Each record's text by id, and the metadata object's text, as ingest wrote them."""
    with zipfile.ZipFile(prediction_output) as archive:
        text = archive.read("predictions.json").decode("utf-8")
    head, tail = text.split("\n],\n")
    records = head.removeprefix('{"predictions": [').strip("\n").split(",\n")
    by_id = {json.loads(record)["id"]: record for record in records}
    return by_id, tail.encode("utf-8")


def _write_prediction_output(path: Path, records: list[str], metadata: bytes) -> None:
    body = ("\n" + ",\n".join(records) if records else "").encode("utf-8")
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("predictions.json", b'{"predictions": [' + body + b"\n],\n" + metadata)


def _score_in_parts(env: Environment, prediction_output: Path, root: Path) -> Path:
    lines = [
        line for line in env.cases_path.read_text(encoding="utf-8").splitlines(keepends=True) if line.strip()
    ]
    records, metadata = _prediction_records(prediction_output)
    parts = []
    for number, (start, end) in enumerate(itertools.pairwise(CUTS)):
        shard = root / f"shard-{number}"
        shard.mkdir(parents=True)
        cases = shard / "cases.jsonl"
        cases.write_text("".join(lines[start:end]), encoding="utf-8")
        ids = [json.loads(line)["id"] for line in lines[start:end]]
        answered = [records[case_id] for case_id in ids if case_id in records]
        _write_prediction_output(shard / "prediction_output.zip", answered, metadata)
        part = root / f"part-{number}"
        judgments = judgments_beside(prediction_output)
        score_part(
            env, cases, shard / "prediction_output.zip", part, workdir=shard / "work", judgments=judgments
        )
        parts.append(part)
    out = root / "merged"
    finish_scores(env, parts, out)
    return out


@pytest.mark.parametrize("name", ["qa", "gsm8k-tr", "routing", "judge"])
def test_parts_merged_write_the_bytes_of_the_whole_run(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given: a table cap and a breakdown cap that fall inside the parts, not on their edges
    monkeypatch.setattr(score_parts, "TABLE_LIMIT", 150)
    monkeypatch.setattr(templates, "GROUP_LIMIT", 2)
    env, prediction_output = _whole_run(tmp_path, name)
    # when
    merged = _score_in_parts(env, prediction_output, tmp_path / "parts")
    # then
    whole = prediction_output.parent
    for output in OUTPUTS:
        assert (merged / output).read_bytes() == (whole / output).read_bytes(), output


def test_the_merged_verdicts_are_every_case_in_case_order(tmp_path: Path) -> None:
    env, prediction_output = _whole_run(tmp_path, "qa")
    merged = _score_in_parts(env, prediction_output, tmp_path / "parts")
    with zipfile.ZipFile(merged / "scoring_output.zip") as archive:
        verdicts = archive.read("verdicts.jsonl").decode("utf-8").splitlines()
    case_ids = [json.loads(line)["id"] for line in env.cases_path.read_text().splitlines() if line.strip()]
    assert [json.loads(line)["case_id"] for line in verdicts] == case_ids
    detailed = json.loads((merged / "detailed_results.json").read_text())
    assert [case["case_id"] for case in detailed["cases"]] == case_ids
    assert detailed["summary"]["total"] == CASES


def test_a_prediction_output_out_of_case_order_scores_as_one_in_order(tmp_path: Path) -> None:
    # given: the run's prediction output with its records reversed (as an ingestion program might write it)
    env, prediction_output = _whole_run(tmp_path, "qa")
    records, metadata = _prediction_records(prediction_output)
    shuffled = tmp_path / "reversed" / "prediction_output.zip"
    shuffled.parent.mkdir()
    _write_prediction_output(shuffled, list(reversed(records.values())), metadata)
    # when
    score_predictions(env, shuffled, shuffled.parent, workdir=tmp_path / "reversed-work")
    # then
    whole = prediction_output.parent
    for output in OUTPUTS:
        assert (shuffled.parent / output).read_bytes() == (whole / output).read_bytes(), output


def test_a_prediction_output_in_another_layout_scores_as_ingests(tmp_path: Path) -> None:
    # given: the same records and metadata, written as one indented JSON document
    env, prediction_output = _whole_run(tmp_path, "routing")
    with zipfile.ZipFile(prediction_output) as archive:
        document = json.loads(archive.read("predictions.json"))
    other = tmp_path / "indented" / "prediction_output.zip"
    other.parent.mkdir()
    with zipfile.ZipFile(other, "w") as archive:
        archive.writestr("predictions.json", json.dumps(document, indent=2))
    # when
    score_predictions(env, other, other.parent, workdir=tmp_path / "indented-work")
    # then
    whole = prediction_output.parent
    for output in OUTPUTS:
        assert (other.parent / output).read_bytes() == (whole / output).read_bytes(), output
