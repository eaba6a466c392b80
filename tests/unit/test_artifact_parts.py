"""A run's artifact built from parts: whole, or collected in slices and finished, gives the same bytes."""

from __future__ import annotations

import itertools
import json
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from benchgen.environment import Environment, open_environment
from benchgen.errors import ScoringError
from benchgen.finetune.artifact import build_artifact, finish_artifact
from benchgen.finetune.artifact_parts import collect_part
from benchgen.ingest import ingest
from benchgen.outputs import RunOutput
from benchgen.records.runs import RunInfo
from benchgen.scoring.engine import score_predictions
from infra.examplegen import generate_environment
from tests.unit.bad_bundles import SCORING_METADATA, SCORING_SCRIPT

CASES = 1000
# Uneven slices of the cases, as shards of different sizes would hold (the last is the remainder).
SLICES = (0, 97, 430, 431, 1000)


class Scored:
    def __init__(
        self, env: Environment, output: Path, run: RunInfo, cases: list[bytes], verdicts: list[bytes]
    ):
        self.env, self.output, self.run, self.cases, self.verdicts = env, output, run, cases, verdicts


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> Scored:
    root = tmp_path_factory.mktemp("gsm8k-tr")
    generate_environment("gsm8k-tr", root / "gen", cases=CASES, seed=11)
    env = open_environment(root / "gen" / "bundle", root / "env")
    submission = next((root / "gen" / "submission").iterdir())
    ingested = ingest(env, submission, root / "out", workdir=root / "ingest")
    result = score_predictions(env, ingested.prediction_output, root / "out", workdir=root / "score")
    run = RunInfo(
        run_id="parts",
        environment_id="gsm8k-tr",
        environment_version="1",
        model="parts-model",
        benchmark=env.spec.title,
        overall_score=result.overall_score,
        finished_at=datetime(2026, 3, 4, tzinfo=UTC),
    )
    scoring_output = result.files[RunOutput.SCORING_OUTPUT]
    with zipfile.ZipFile(scoring_output) as archive:
        verdicts = archive.read("verdicts.jsonl").splitlines(keepends=True)
    cases = [line for line in env.cases_path.read_bytes().splitlines(keepends=True) if line.strip()]
    return Scored(env, scoring_output, run, cases, verdicts)


def write_lines(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(lines))
    return path


def collect_slices(scored: Scored, root: Path, slices: tuple[int, ...]) -> list[Path]:
    """One part per slice of the cases, from the verdicts of those cases (the verdicts follow the cases)."""
    parts = []
    for number, (start, end) in enumerate(itertools.pairwise(slices)):
        folder = root / f"slice-{number}"
        folder.mkdir(parents=True)
        cases = write_lines(folder / "cases.jsonl", scored.cases[start:end])
        verdicts = write_lines(folder / "verdicts.jsonl", scored.verdicts[start:end])
        collect_part(scored.env, verdicts, cases, folder / "part", run_id=scored.run.run_id)
        parts.append(folder / "part")
    return parts


def test_artifact_from_uneven_parts_is_byte_identical_to_the_whole(scored: Scored, tmp_path: Path) -> None:
    # given a scored run of 1,000 generated cases whose bundle adds a pool share
    whole = build_artifact(scored.env, scored.output, tmp_path / "whole", run=scored.run)
    assert whole.counts["pool"] > 0 and whole.counts["seed"] > 0
    # when its verdicts are collected in four uneven slices (one of a single case) and the parts finished
    parts = collect_slices(scored, tmp_path / "slices", SLICES)
    merged = finish_artifact(scored.env, parts, tmp_path / "merged", run=scored.run)
    # then the zip is the whole run's, byte for byte, and the report the same
    assert (tmp_path / "merged" / "finetune_artifact.zip").read_bytes() == (
        tmp_path / "whole" / "finetune_artifact.zip"
    ).read_bytes()
    assert merged.model_dump(exclude={"path"}) == whole.model_dump(exclude={"path"})


def test_pool_share_is_taken_of_every_part_s_seeds(scored: Scored, tmp_path: Path) -> None:
    # given parts that each hold a share of the wrong cases
    parts = collect_slices(scored, tmp_path / "slices", SLICES)
    # when they are finished
    report = finish_artifact(scored.env, parts, tmp_path / "out", run=scored.run)
    # then the pool adds the bundle's share of all their seed rows, rounded half up
    share = scored.env.spec.finetune.pool.share  # type: ignore[union-attr]
    assert report.counts["pool"] == int(share * report.counts["seed"] + 0.5)


def test_a_case_in_two_parts_is_refused(scored: Scored, tmp_path: Path) -> None:
    # given two parts that overlap by one case the model got wrong
    edge = next(i for i in range(CASES // 2, CASES) if not json.loads(scored.verdicts[i])["passed"])
    parts = collect_slices(scored, tmp_path / "a", (0, edge + 1))
    parts += collect_slices(scored, tmp_path / "b", (edge, CASES))
    # when they are finished
    with pytest.raises(ScoringError) as raised:
        finish_artifact(scored.env, parts, tmp_path / "out", run=scored.run)
    # then the error names the case and the parts, and no artifact is written
    case_id = json.loads(scored.verdicts[edge])["case_id"]
    assert f"artifact parts 0 and 1 both hold case '{case_id}'" in str(raised.value)
    assert not (tmp_path / "out" / "finetune_artifact.zip").exists()
    assert not (tmp_path / "out" / "finetune_artifact.zip").exists()


def test_within_a_part_the_first_selected_verdict_of_a_case_wins(scored: Scored, tmp_path: Path) -> None:
    # given the verdicts of a part, with a wrong case's verdict repeated later with another wrong answer
    first = next(line for line in scored.verdicts if not json.loads(line)["passed"])
    again = json.loads(first)
    again["raw_prediction"] = again["prediction"] = "a later answer"
    lines = [*scored.verdicts, (json.dumps(again) + "\n").encode()]
    folder = tmp_path / "part"
    folder.mkdir()
    verdicts = write_lines(folder / "verdicts.jsonl", lines)
    cases = write_lines(folder / "cases.jsonl", scored.cases)
    # when it is collected and finished
    collect_part(scored.env, verdicts, cases, folder / "part", run_id=scored.run.run_id)
    report = finish_artifact(scored.env, [folder / "part"], tmp_path / "out", run=scored.run)
    # then the artifact is the one without the repeat
    whole = build_artifact(scored.env, scored.output, tmp_path / "whole", run=scored.run)
    assert report.sha256 == whole.sha256


def test_a_custom_program_s_repeated_case_id_takes_its_first_record(tmp_path: Path) -> None:
    # given a bundle judged by its own scoring program (so its cases' ids are not checked for repeats),
    # whose cases.jsonl repeats case "a", and verdicts that judge "b" before "a"
    bundle = tmp_path / "bundle"
    (bundle / "reference").mkdir(parents=True)
    (bundle / "scoring").mkdir()
    (bundle / "scoring" / "metadata.yaml").write_text(SCORING_METADATA, encoding="utf-8")
    (bundle / "scoring" / "score.py").write_text(SCORING_SCRIPT, encoding="utf-8")
    spec = {
        "version": 2,
        "title": "Custom",
        "tasks": [
            {"index": 0, "name": "custom", "scoring_program": "scoring", "reference_data": "reference"}
        ],
        "leaderboards": [{"columns": [{"title": "Accuracy", "key": "accuracy"}]}],
        "finetune": {"augmentation": {"factor": 1}},
    }
    (bundle / "competition.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    cases = [("a", "The first a?"), ("b", "The b?"), ("a", "The second a?")]
    (bundle / "reference" / "cases.jsonl").write_text(
        "".join(json.dumps({"id": i, "question": q, "answer": "1"}) + "\n" for i, q in cases),
        encoding="utf-8",
    )
    env = open_environment(bundle, tmp_path / "work")
    verdicts = [
        {"case_id": case_id, "gold": "1", "prediction": "2", "passed": False, "answered": True}
        for case_id in ("b", "a")
    ]
    output = tmp_path / "scoring_output.zip"
    with zipfile.ZipFile(output, "w") as archive:
        archive.writestr("verdicts.jsonl", "".join(json.dumps(v) + "\n" for v in verdicts))
    run = RunInfo(
        run_id="custom",
        environment_id="custom",
        environment_version="1",
        model="m",
        benchmark="Custom",
        overall_score=0.0,
        finished_at=datetime(2026, 3, 4, tzinfo=UTC),
    )
    # when the artifact is built
    report = build_artifact(env, output, tmp_path / "out", run=run)
    # then case "a" is asked as its first record says
    assert report.path is not None
    with zipfile.ZipFile(report.path) as archive:
        rows = [json.loads(line) for line in archive.read("data/rows.jsonl").splitlines()]
    assert {row["case_id"]: row["prompt"] for row in rows} == {"a": "The first a?", "b": "The b?"}


def test_a_folder_that_is_not_a_collected_part_is_refused(scored: Scored, tmp_path: Path) -> None:
    # given a folder that no collect_part wrote (a part that failed to download, say)
    (tmp_path / "empty").mkdir()
    # when it is finished
    with pytest.raises(ScoringError) as raised:
        finish_artifact(scored.env, [tmp_path / "empty"], tmp_path / "out", run=scored.run)
    # then the error says what is missing and what to do
    assert "is not the tally of a collected artifact part" in str(raised.value)
    assert "collect the part again" in str(raised.value)
