"""The finetune artifact built from a run's verdicts, end to end on a real folder bundle."""

from __future__ import annotations

import hashlib
import json
import tempfile
import zipfile
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchgen.datasets import read_artifact_manifest
from benchgen.environment import Environment
from benchgen.errors import ScoringError
from benchgen.finetune.artifact import NO_FINETUNE, NO_VERDICTS, NOTHING_SELECTED, build_artifact
from tests.unit.finetune_inputs import (
    RUN,
    case,
    forty_wrong_of_fifty,
    jsonl,
    make_env,
    scoring_output,
    verdict,
    wrong_answer,
)

DATA_FILES = [
    "data/messages.jsonl",
    "data/preference.jsonl",
    "data/prompt_completion.jsonl",
    "data/rows.jsonl",
]


def read_zip(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


@pytest.fixture
def built(tmp_path: Path) -> tuple[Any, dict[str, bytes]]:
    env = make_env(tmp_path, finetune={})
    output = scoring_output(tmp_path / "scoring_output.zip", forty_wrong_of_fifty())
    report = build_artifact(env, output, tmp_path / "out", run=RUN)
    return report, read_zip(tmp_path / "out" / "finetune_artifact.zip")


def test_environment_without_finetune_emits_nothing(tmp_path: Path) -> None:
    # given an environment with no `finetune:` section
    env = make_env(tmp_path, finetune=None)
    output = scoring_output(tmp_path / "scoring_output.zip", forty_wrong_of_fifty())
    # when the artifact is built
    report = build_artifact(env, output, tmp_path / "out", run=RUN)
    # then nothing is emitted, with the exact reason, and no file is written
    assert report.emitted is False
    assert report.reason == "the benchmark's scoring program did not emit one"
    assert report.reason == NO_FINETUNE
    assert not (tmp_path / "out" / "finetune_artifact.zip").exists()


def test_forty_wrong_answers_with_factor_five_give_two_hundred_rows(
    built: tuple[Any, dict[str, bytes]],
) -> None:
    report, files = built
    assert report.emitted is True
    assert report.example_count == 200
    assert report.counts == {"seed": 40, "augmented": 160, "pool": 0, "near_miss": 0, "passed": 0}
    assert sum(report.splits.values()) == 200
    assert {name: len(jsonl(files[name])) for name in DATA_FILES} == {name: 200 for name in DATA_FILES}


def test_zip_holds_manifest_readme_and_four_data_files(built: tuple[Any, dict[str, bytes]]) -> None:
    _, files = built
    assert sorted(files) == ["README.md", *DATA_FILES, "manifest.json"]


def test_seed_targets_hold_the_gold_answer_and_never_the_wrong_prediction(
    built: tuple[Any, dict[str, bytes]],
) -> None:
    _, files = built
    seeds = [row for row in jsonl(files["data/rows.jsonl"]) if row["source"] == "seed"]
    assert len(seeds) == 40
    for row in seeds:
        i = int(row["case_id"].split("-")[1])
        assert row["answer"].endswith(f"Final answer: {case(i)['answer']}")
        assert wrong_answer(i) not in row["answer"]
        assert row["prompt"] == case(i)["question"]


def test_no_target_in_any_format_holds_a_wrong_prediction(built: tuple[Any, dict[str, bytes]]) -> None:
    _, files = built
    targets = [m["messages"][-1]["content"] for m in jsonl(files["data/messages.jsonl"])]
    targets += [r["completion"] for r in jsonl(files["data/prompt_completion.jsonl"])]
    targets += [r["chosen"] for r in jsonl(files["data/preference.jsonl"])]
    assert not [t for t in targets if "7777" in t]


def test_preference_rows_reject_the_model_answer(built: tuple[Any, dict[str, bytes]]) -> None:
    _, files = built
    rows = jsonl(files["data/rows.jsonl"])
    preference = jsonl(files["data/preference.jsonl"])
    for row, pair in zip(rows, preference, strict=True):
        i = int(row["case_id"].split("-")[1])
        assert pair["rejected"] == f"The answer is {wrong_answer(i)}."
        assert pair["chosen"] == row["answer"]


def test_variants_of_one_case_share_a_split(built: tuple[Any, dict[str, bytes]]) -> None:
    _, files = built
    splits: dict[str, set[str]] = defaultdict(set)
    for row in jsonl(files["data/rows.jsonl"]):
        splits[row["case_id"]].add(row["split"])
    assert len(splits) == 40
    assert all(len(s) == 1 for s in splits.values())


def test_rows_are_ordered_by_split_then_id(built: tuple[Any, dict[str, bytes]]) -> None:
    _, files = built
    rows = jsonl(files["data/rows.jsonl"])
    rank = {"train": 0, "validation": 1, "test": 2}
    keys = [(rank[r["split"]], r["id"]) for r in rows]
    assert keys == sorted(keys)


def test_rows_keep_their_source_context(built: tuple[Any, dict[str, bytes]]) -> None:
    _, files = built
    row = next(r for r in jsonl(files["data/rows.jsonl"]) if r["id"] == "gsm-007~02")
    assert (row["case_id"], row["run_id"], row["source"], row["variant"], row["criteria"]) == (
        "gsm-007",
        "run-1",
        "augmented",
        2,
        ["arithmetic"],
    )
    assert row["verdict"] == {"passed": False, "answered": True, "prediction": "77777"}


def test_manifest_describes_the_build(built: tuple[Any, dict[str, bytes]]) -> None:
    report, files = built
    manifest = json.loads(files["manifest.json"])
    assert manifest["kind"] == "finetune"
    assert manifest["dataset_name"] == "GSM8K · Qwen2.5-7B-LoRA · 20.0% · Jun 2026" == report.dataset_name
    assert (manifest["benchmark"], manifest["run_id"], manifest["base_model"]) == (
        "GSM8K",
        "run-1",
        RUN.model,
    )
    assert manifest["environment"] == {"id": "gsm8k", "version": "1"}
    assert manifest["selection_criterion"] == "wrong_plus_augmented"
    assert manifest["example_count"] == 200
    assert manifest["splits"]["counts"] == report.splits
    assert "sha256" in manifest["splits"]["rule"]
    assert manifest["augmentation"]["factor"] == 5
    assert manifest["suggested_hyperparams"]["learning_rate"] == 2e-4
    assert manifest["suggested_hyperparams"]["lora_rank"] == 16


def test_the_report_hands_on_the_manifest_the_zip_holds(
    tmp_path: Path, built: tuple[Any, dict[str, bytes]]
) -> None:
    # given an artifact just built, and its manifest.json read back as the API's manual save reads it
    report, files = built
    (tmp_path / "artifact.zip").write_bytes((tmp_path / "out" / "finetune_artifact.zip").read_bytes())

    # then the report carries that manifest already: whoever describes the dataset need not reopen the zip
    assert report.manifest == read_artifact_manifest(tmp_path / "artifact.zip")
    assert report.manifest.dataset_name == json.loads(files["manifest.json"])["dataset_name"]


def test_manifest_records_each_data_file_hash_and_size(built: tuple[Any, dict[str, bytes]]) -> None:
    _, files = built
    manifest = json.loads(files["manifest.json"])
    for name in DATA_FILES:
        entry = manifest["files"][name]
        assert entry["sha256"] == hashlib.sha256(files[name]).hexdigest()
        assert entry["bytes"] == len(files[name])
        assert entry["rows"] == len(jsonl(files[name]))


def test_manifest_carries_no_wall_clock_time(built: tuple[Any, dict[str, bytes]]) -> None:
    _, files = built
    text = files["manifest.json"].decode("utf-8") + files["README.md"].decode("utf-8")
    assert str(datetime.now(UTC).year) + "-" not in text
    assert "2026-06-14" not in text


def test_readme_explains_counts_and_formats(built: tuple[Any, dict[str, bytes]]) -> None:
    _, files = built
    readme = files["README.md"].decode("utf-8")
    assert readme.startswith("# GSM8K · Qwen2.5-7B-LoRA · 20.0% · Jun 2026")
    assert "| seed | 40 |" in readme and "| augmented | 160 |" in readme
    assert "| **total** | **200** |" in readme
    for name in DATA_FILES:
        assert f"`{name}` (200 rows)" in readme


def test_zip_entries_have_fixed_dates_and_modes(tmp_path: Path, built: tuple[Any, dict[str, bytes]]) -> None:
    report, _ = built
    with zipfile.ZipFile(report.path) as archive:
        infos = archive.infolist()
    assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}
    assert {i.external_attr for i in infos} == {0o644 << 16}
    assert report.sha256 == hashlib.sha256(report.path.read_bytes()).hexdigest()


def test_building_twice_gives_identical_bytes(tmp_path: Path) -> None:
    env = make_env(tmp_path, finetune={})
    output = scoring_output(tmp_path / "scoring_output.zip", forty_wrong_of_fifty())
    first = build_artifact(env, output, tmp_path / "a", run=RUN)
    second = build_artifact(env, output, tmp_path / "b", run=RUN)
    assert (tmp_path / "a" / "finetune_artifact.zip").read_bytes() == (
        tmp_path / "b" / "finetune_artifact.zip"
    ).read_bytes()
    assert first.sha256 == second.sha256


# The sha256 this build gives since zips are deflated at level 1 (at level 6 it gave cd2b3833...117a, the
# bytes it had before preparations shared its machinery): the run artifact must keep its bytes.
PINNED_SHA256 = "385c0a1bdb6e32769ca455bcfa4a28364580d43aba8121d95e9bcb244667076a"


def test_artifact_bytes_are_pinned(tmp_path: Path) -> None:
    # given forty wrong answers, the default augmentation and a quarter share of a 100-row pool
    env = make_env(tmp_path, finetune={"pool": {"path": "pool.jsonl", "share": 0.25}}, pool_rows=100)
    output = scoring_output(tmp_path / "scoring_output.zip", forty_wrong_of_fifty())
    # when the artifact is built
    report = build_artifact(env, output, tmp_path / "out", run=RUN)
    # then its bytes are exactly those it always had
    assert report.sha256 == PINNED_SHA256
    assert (
        hashlib.sha256((tmp_path / "out" / "finetune_artifact.zip").read_bytes()).hexdigest() == PINNED_SHA256
    )


@pytest.fixture(scope="module")
def small_env(tmp_path_factory: pytest.TempPathFactory) -> Environment:
    return make_env(tmp_path_factory.mktemp("bundle"), finetune={"augmentation": {"factor": 3}}, cases=12)


@settings(max_examples=20, deadline=None)
@given(outcomes=st.lists(st.booleans(), min_size=12, max_size=12), order=st.permutations(list(range(12))))
def test_same_verdicts_in_any_order_give_identical_bytes(
    small_env: Environment, outcomes: list[bool], order: list[int]
) -> None:
    # given the same verdicts written in two different orders
    verdicts = [verdict(i, passed=outcomes[i]) for i in range(12)]
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        straight = scoring_output(root / "a.zip", verdicts)
        shuffled = scoring_output(root / "b.zip", [verdicts[i] for i in order])
        # when the artifact is built from each
        first = build_artifact(small_env, straight, root / "one", run=RUN)
        second = build_artifact(small_env, shuffled, root / "two", run=RUN)
        # then both builds agree byte for byte (or both emit nothing when nothing was wrong)
        assert first == second.model_copy(update={"path": first.path})
        if first.emitted:
            assert (root / "one" / "finetune_artifact.zip").read_bytes() == (
                root / "two" / "finetune_artifact.zip"
            ).read_bytes()


def test_pool_share_adds_rows_relative_to_seeds(tmp_path: Path) -> None:
    # given a pool of 100 rows and a share of 0.25
    env = make_env(tmp_path, finetune={"pool": {"path": "pool.jsonl", "share": 0.25}}, pool_rows=100)
    output = scoring_output(tmp_path / "scoring_output.zip", forty_wrong_of_fifty())
    # when the artifact is built from 40 wrong answers
    report = build_artifact(env, output, tmp_path / "out", run=RUN)
    # then 10 pool rows join the 200 seed and augmented rows
    assert report.counts["pool"] == 10
    assert report.example_count == 210
    rows = jsonl(read_zip(tmp_path / "out" / "finetune_artifact.zip")["data/rows.jsonl"])
    pool = [r for r in rows if r["source"] == "pool"]
    assert all(r["verdict"] is None and "rejected" not in r for r in pool)


def test_all_items_adds_passed_cases_with_gold_targets(tmp_path: Path) -> None:
    env = make_env(tmp_path, finetune={"selection_criterion": "all_items"})
    output = scoring_output(tmp_path / "scoring_output.zip", forty_wrong_of_fifty())
    report = build_artifact(env, output, tmp_path / "out", run=RUN)
    assert report.counts == {"seed": 40, "augmented": 160, "pool": 0, "near_miss": 0, "passed": 10}
    files = read_zip(tmp_path / "out" / "finetune_artifact.zip")
    passed = [r for r in jsonl(files["data/rows.jsonl"]) if r["source"] == "passed"]
    assert all(r["answer"].endswith(f"Final answer: {case(int(r['case_id'][4:]))['answer']}") for r in passed)
    assert len(jsonl(files["data/preference.jsonl"])) == 200


def test_failed_and_near_miss_adds_narrow_passes(tmp_path: Path) -> None:
    env = make_env(tmp_path, finetune={"selection_criterion": "failed_and_near_miss"})
    verdicts = [verdict(i, passed=i >= 40, near_miss=i in (41, 42)) for i in range(50)]
    report = build_artifact(env, scoring_output(tmp_path / "s.zip", verdicts), tmp_path / "out", run=RUN)
    assert report.counts == {"seed": 40, "augmented": 160, "pool": 0, "near_miss": 2, "passed": 0}


def test_run_with_nothing_wrong_emits_nothing(tmp_path: Path) -> None:
    env = make_env(tmp_path, finetune={})
    output = scoring_output(tmp_path / "s.zip", [verdict(i, passed=True) for i in range(50)])
    report = build_artifact(env, output, tmp_path / "out", run=RUN)
    assert (report.emitted, report.reason) == (False, NOTHING_SELECTED)
    assert not (tmp_path / "out" / "finetune_artifact.zip").exists()


def test_scoring_output_without_verdicts_emits_nothing(tmp_path: Path) -> None:
    env = make_env(tmp_path, finetune={})
    with zipfile.ZipFile(tmp_path / "s.zip", "w") as archive:
        archive.writestr("scores.json", "{}")
    report = build_artifact(env, tmp_path / "s.zip", tmp_path / "out", run=RUN)
    assert (report.emitted, report.reason) == (False, NO_VERDICTS)


def test_turkish_bundle_template_writes_the_targets(tmp_path: Path) -> None:
    finetune = {"language": "tr", "target_template": {"tr": "{reasoning}\nCevap: {answer}"}}
    env = make_env(tmp_path, finetune=finetune)
    build_artifact(env, scoring_output(tmp_path / "s.zip", forty_wrong_of_fifty()), tmp_path / "out", run=RUN)
    rows = jsonl(read_zip(tmp_path / "out" / "finetune_artifact.zip")["data/rows.jsonl"])
    assert all(r["answer"].endswith(f"\nCevap: {case(int(r['case_id'][4:]))['answer']}") for r in rows)


def test_scoring_output_that_is_not_a_zip_is_a_scoring_error(tmp_path: Path) -> None:
    env = make_env(tmp_path, finetune={})
    broken = tmp_path / "scoring_output.zip"
    broken.write_text("not a zip", encoding="utf-8")
    message = r"scoring_output\.zip is not a zip archive holding verdicts\.jsonl"
    with pytest.raises(ScoringError, match=message):
        build_artifact(env, broken, tmp_path / "out", run=RUN)
