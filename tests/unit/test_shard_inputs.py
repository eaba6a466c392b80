"""A sharded run's inputs: the cases cut into shard files, and the prediction output cut to match, each
shard scored by the same code gives the whole run's verdicts."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from benchgen.ingest import ingest_results
from benchgen.records.environments import ShardPlan
from benchgen.steps.case_shards import case_lines
from benchgen.steps.shard_inputs import split_prediction_output


def _write_cases(path: Path, count: int) -> Path:
    lines = [json.dumps({"id": f"c{n}", "question": f"{n} + 1?", "answer": str(n + 1)}) for n in range(count)]
    # a blank line and a line with only spaces are no cases
    lines.insert(3, "")
    lines.insert(8, "   ")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _predictions(path: Path, ids: list[str]) -> Path:
    records = [{"id": case_id, "prediction_text": f"answer {case_id}"} for case_id in ids]
    path.write_text(json.dumps({"predictions": records, "metadata": {"model": "m"}}), encoding="utf-8")
    return path


def _read(zip_path: Path) -> dict[str, object]:
    with zipfile.ZipFile(zip_path) as archive:
        parsed: dict[str, object] = json.loads(archive.read("predictions.json"))
    return parsed


def test_case_lines_are_the_non_blank_lines_verbatim(tmp_path: Path) -> None:
    cases = _write_cases(tmp_path / "cases.jsonl", 10)
    lines = list(case_lines(cases))
    assert len(lines) == 10
    assert [json.loads(line)["id"] for line in lines] == [f"c{n}" for n in range(10)]


def test_each_shard_holds_its_cases_predictions_in_order_with_the_whole_runs_metadata(tmp_path: Path) -> None:
    # Given 17 cases, a submission missing some of them, ingested as a whole run
    cases = _write_cases(tmp_path / "cases.jsonl", 17)
    answered = [f"c{n}" for n in range(17) if n not in (2, 7, 8, 16)]
    submission = _predictions(tmp_path / "predictions.json", list(reversed(answered)))
    ingest_results(cases, submission, tmp_path / "out", workdir=tmp_path / "work")
    whole = _read(tmp_path / "out" / "prediction_output.zip")

    # When it is cut into shards of 7 cases
    plan = ShardPlan(task=0, cases=17, size=7, count=3)
    shards = []
    for shard, path in split_prediction_output(
        tmp_path / "out" / "prediction_output.zip", cases, plan, tmp_path / "shards"
    ):
        shards.append((shard, _read(path)))

    # Then shard n holds the predictions of cases [7n, 7n + 7), in case order, and the same metadata
    assert [shard for shard, _ in shards] == [0, 1, 2]
    ids = [[record["id"] for record in part["predictions"]] for _, part in shards]  # type: ignore[attr-defined]
    assert ids == [
        ["c0", "c1", "c3", "c4", "c5", "c6"],
        ["c9", "c10", "c11", "c12", "c13"],
        ["c14", "c15"],
    ]
    assert all(part["metadata"] == whole["metadata"] for _, part in shards)
    joined = [record for _, part in shards for record in part["predictions"]]  # type: ignore[attr-defined]
    assert joined == whole["predictions"]
