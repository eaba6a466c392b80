"""Opening environments and checking bundles, including the corpus of bad bundles."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from benchgen.admission import check_bundle
from benchgen.bundle.archive import Limits
from benchgen.environment import Environment, case_problems, open_environment
from benchgen.errors import BundleError
from tests.unit.bad_bundles import (
    CORPUS,
    GOOD_YAML,
    SCORING_METADATA,
    SCORING_SCRIPT,
    BadBundle,
    cases_text,
    good_folder,
    good_zip,
    yaml_with,
    zip_bytes,
    zip_folder,
)

CUSTOM_YAML = yaml_with(
    "    reference_data: reference\n", "    scoring_program: scoring.zip\n    reference_data: reference\n"
)


@pytest.mark.parametrize("bad", CORPUS, ids=[b.name for b in CORPUS])
def test_check_bundle_reports_each_bad_bundle_with_its_message(bad: BadBundle, tmp_path: Path) -> None:
    # given a bad bundle
    source = bad.build(tmp_path)

    # when it is checked
    problems = check_bundle(source)

    # then its author sees what is wrong
    assert any(bad.message in p for p in problems), problems


@pytest.mark.parametrize("bad", [b for b in CORPUS if b.at_open], ids=[b.name for b in CORPUS if b.at_open])
def test_open_environment_refuses_each_bad_bundle_with_its_message(bad: BadBundle, tmp_path: Path) -> None:
    # given a bad bundle
    source = bad.build(tmp_path)

    # when it is opened, then the same message is raised
    with pytest.raises(BundleError) as raised:
        open_environment(source, tmp_path / "work")
    assert bad.message in str(raised.value)


def test_check_bundle_finds_nothing_wrong_with_a_good_bundle(tmp_path: Path) -> None:
    assert check_bundle(good_zip(tmp_path)) == []


def test_check_bundle_lists_every_problem_not_only_the_first(tmp_path: Path) -> None:
    # given a bundle with a duplicate column key, a missing pool and a broken case line
    yaml_text = yaml_with("key: answer_rate", "key: accuracy") + "finetune:\n  pool:\n    path: pool.jsonl\n"
    source = good_folder(tmp_path, yaml_text, **{"reference/cases.jsonl": '{"id": "a"}\n{oops\n'})

    # when it is checked
    problems = check_bundle(source)

    # then all three are reported
    assert len(problems) == 3
    assert "leaderboards.0.columns.1.key" in problems[0]
    assert "finetune.pool.path: 'pool.jsonl' does not exist" in problems[1]
    assert "reference/cases.jsonl: line 2: is not valid JSON" in problems[2]


def test_open_environment_reads_a_template_bundle_from_a_zip(tmp_path: Path) -> None:
    # given a zipped math bundle
    source = good_zip(tmp_path)

    # when it is opened
    env = open_environment(source, tmp_path / "work")

    # then its spec and folders are available, extracted under the workdir
    assert env.spec.title == "Tiny Math"
    assert env.template == "math"
    assert env.time_limit == 30
    assert env.cases_path.read_text().count("\n") == 3
    assert env.root.is_relative_to(tmp_path / "work")
    assert env.scoring_program_dir is None
    assert env.ingestion_program_dir is None
    assert env.pool_path is None


def test_open_environment_uses_a_folder_in_place(tmp_path: Path) -> None:
    folder = good_folder(tmp_path)

    env = open_environment(folder, tmp_path / "work")

    assert env.root == folder
    assert env.reference_dir == folder / "reference"


def test_open_environment_tolerates_an_enclosing_folder_and_macos_clutter(tmp_path: Path) -> None:
    # given a bundle zipped as its folder, as macOS Finder makes it
    folder = good_folder(tmp_path, GOOD_YAML, **{".DS_Store": b"\0\1", "reference/.DS_Store": b"\0"})
    source = zip_folder(folder, tmp_path / "bundle.zip", prefix="Tiny Math/")
    with zipfile.ZipFile(source, "a") as zf:
        zf.writestr("__MACOSX/Tiny Math/._competition.yaml", b"\0\1")
        zf.writestr("Tiny Math/reference/._cases.jsonl", b"\0\1")

    # when it is opened
    env = open_environment(source, tmp_path / "work")

    # then the enclosing folder is the root and the clutter is not extracted
    assert env.root.name == "Tiny Math"
    assert env.spec.title == "Tiny Math"
    assert not (env.root / ".DS_Store").exists()
    assert not (env.root / "reference" / "._cases.jsonl").exists()
    assert not (env.root.parent / "__MACOSX").exists()


def test_open_environment_extracts_a_zipped_scoring_program(tmp_path: Path) -> None:
    # given a bundle whose scoring program is a zip of its files
    program = zip_bytes({"metadata.yaml": SCORING_METADATA, "score.py": SCORING_SCRIPT}, tmp_path, "src.zip")
    source = good_zip(tmp_path, CUSTOM_YAML, **{"scoring.zip": program})

    # when it is opened
    env = open_environment(source, tmp_path / "work")

    # then the program folder holds its metadata and the template is not used
    assert env.scoring_program_dir is not None
    assert (env.scoring_program_dir / "metadata.yaml").read_text() == SCORING_METADATA
    assert env.template is None


def test_the_active_task_is_the_first_task_of_the_first_phase(tmp_path: Path) -> None:
    yaml_text = yaml_with(
        "  - index: 0\n    name: main\n    reference_data: reference\n",
        "  - index: 0\n    name: practice\n    reference_data: practice\n"
        "  - index: 1\n    name: main\n    reference_data: reference\n",
    ).replace("tasks: [0]", "tasks: [1]")
    folder = good_folder(tmp_path, yaml_text, **{"practice/cases.jsonl": cases_text([{"id": "p"}])})

    env = open_environment(folder, tmp_path / "work")

    assert env.task.name == "main"
    assert env.reference_dir == folder / "reference"


def test_pool_path_points_into_the_bundle(tmp_path: Path) -> None:
    yaml_text = GOOD_YAML + "finetune:\n  pool:\n    path: data/pool.jsonl\n    share: 0.3\n"
    folder = good_folder(tmp_path, yaml_text, **{"data/pool.jsonl": '{"id": "p1"}\n'})

    env = open_environment(folder, tmp_path / "work")

    assert env.pool_path == folder / "data" / "pool.jsonl"


def test_cases_path_names_the_reference_folder_when_cases_are_missing(tmp_path: Path) -> None:
    folder = good_folder(tmp_path)
    (folder / "reference" / "cases.jsonl").unlink()
    env = open_environment(folder, tmp_path / "work")

    with pytest.raises(BundleError) as raised:
        _ = env.cases_path

    assert str(raised.value) == (
        "competition.yaml: tasks.0.reference_data: 'reference' has no cases.jsonl; add one case per line"
    )
    assert env.cases_file is None
    assert list(env.case_references()) == []


def test_case_references_stream_the_text_of_every_case(tmp_path: Path) -> None:
    env = open_environment(good_folder(tmp_path), tmp_path / "work")

    assert env.cases_file == env.cases_path
    assert list(env.case_references()) == [
        ("q1", "1+1?", "2", None),
        ("q2", "2+2?", "4", None),
        ("q3", "3+3?", "6", None),
    ]


def test_open_environment_says_how_many_more_problems_there_are(tmp_path: Path) -> None:
    yaml_text = yaml_with("title: Tiny Math\n", "").replace("template: math\n", "template: algebra\n")

    with pytest.raises(BundleError) as raised:
        open_environment(good_folder(tmp_path, yaml_text), tmp_path / "work")

    assert str(raised.value) == (
        "competition.yaml: title: missing; add `title: <name of the benchmark>` "
        "(and 1 more problem; `benchgen bundle check` lists them all)"
    )


def test_an_environment_built_directly_extracts_zipped_parts_on_first_use(tmp_path: Path) -> None:
    # given an environment made from a folder and a spec, without a workdir
    reference = zip_bytes({"cases.jsonl": cases_text([{"id": "z"}])}, tmp_path, "src.zip")
    yaml_text = yaml_with("reference_data: reference", "reference_data: reference.zip")
    folder = good_folder(tmp_path, yaml_text, **{"reference.zip": reference})
    env = open_environment(folder, tmp_path / "work")
    direct = Environment(env.root, env.spec)

    # when its cases are asked for, then the zip is extracted
    assert direct.cases_path.read_text() == '{"id": "z"}\n'


def test_case_problems_are_capped_with_a_count_of_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text("[]\n" * 25)

    problems = case_problems(path, label="reference/cases.jsonl", limit=20)

    assert len(problems) == 21
    assert problems[-1] == "reference/cases.jsonl: 5 more problems not shown"


def test_case_problems_skip_blank_lines_and_accept_unique_ids(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text('{"id": "a"}\n\n{"id": "b"}\n')

    assert case_problems(path, label="cases.jsonl") == []


def test_check_bundle_applies_the_given_limits(tmp_path: Path) -> None:
    # given a bundle whose reference data expands to 2 MiB
    source = good_zip(tmp_path, GOOD_YAML, **{"reference/big.txt": "0" * (2 * 1024 * 1024)})

    # when it is checked with a 1 MiB limit
    problems = check_bundle(source, limits=Limits(max_bytes=1024 * 1024))

    # then it is refused for its size
    assert problems == [
        "bundle.zip: would expand to 2.0 MiB, more than the limit of 1.0 MiB; make the bundle smaller"
    ]


def test_part_refuses_a_name_that_is_not_a_task_path(tmp_path: Path) -> None:
    env = open_environment(good_folder(tmp_path), tmp_path / "work")

    with pytest.raises(ValueError, match="'title' is not a task path"):
        env.part("title")
