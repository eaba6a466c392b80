"""A CodaLab v1.5 competition.yaml is read as Codabench's importer reads it, or refused where it refuses.

The expected values restate what Codabench's v1.5 unpacker does with each key: one task per phase in
``phasenumber`` order, columns in ``rank`` order from ``leaderboard.columns`` (``label`` as title, ``sort``,
``numeric_format`` as precision), ``competition_docker_image`` defaulting to the py37 legacy image.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchgen.admission import check_bundle
from benchgen.bundle.load import load_spec, spec_problems
from benchgen.bundle.runtime import select_runtime
from tests.unit.bad_bundles import good_folder, write_files

V15_YAML = """\
title: Two Phases
description: A CodaLab-era bundle.
image: logo.png
html:
  overview: overview.html
  terms: terms.html
competition_docker_image: codalab/codalab-legacy:py39
phases:
  2:
    phasenumber: 2
    label: Final
    start_date: 2026-03-01
    scoring_program: scoring_program.zip
    reference_data: reference_final.zip
    ingestion_program: ingestion_program.zip
    input_data: input_final.zip
  1:
    phasenumber: 1
    label: Development
    description: Tune here.
    start_date: 2026-01-01 00:00:00+00:00
    execution_time_limit: 90
    scoring_program: scoring_program.zip
    reference_data: reference_dev.zip
    ingestion_program: ingestion_program.zip
    input_data: input_dev.zip
    ingestion_program_only_during_scoring: true
leaderboard:
  leaderboards:
    RESULTS: &RESULTS
      label: Results
      rank: 1
  columns:
    errors:
      leaderboard: *RESULTS
      label: Errors
      rank: 3
      sort: asc
      numeric_format: 0
    accuracy:
      leaderboard: *RESULTS
      label: Accuracy
      rank: 1
      numeric_format: 4
    f1:
      leaderboard: *RESULTS
      rank: 2
"""
FILES = (
    "logo.png",
    "overview.html",
    "terms.html",
    "scoring_program.zip",
    "ingestion_program.zip",
    "reference_dev.zip",
    "reference_final.zip",
    "input_dev.zip",
    "input_final.zip",
)


def _with(old: str, new: str) -> str:
    assert old in V15_YAML, old
    return V15_YAML.replace(old, new, 1)


def _bundle(tmp_path: Path, yaml_text: str = V15_YAML, *, without: str = "") -> Path:
    files: dict[str, str | bytes] = {name: "x" for name in FILES if name != without}
    return write_files(tmp_path / "bundle", {"competition.yaml": yaml_text, **files})


def _problems(tmp_path: Path, yaml_text: str = V15_YAML, *, without: str = "") -> list[str]:
    _, problems = spec_problems(_bundle(tmp_path, yaml_text, without=without))
    return [str(problem) for problem in problems]


def test_each_phase_becomes_a_task_of_its_own_in_phasenumber_order(tmp_path: Path) -> None:
    spec = load_spec(_bundle(tmp_path))

    assert [(p.index, p.name, p.tasks) for p in spec.phases] == [(0, "Development", [0]), (1, "Final", [1])]
    development, final = spec.tasks
    assert (development.name, development.description) == ("Development Task", "Tune here.")
    assert (development.scoring_program, development.ingestion_program) == (
        "scoring_program.zip",
        "ingestion_program.zip",
    )
    assert (development.input_data, development.reference_data) == ("input_dev.zip", "reference_dev.zip")
    assert (final.input_data, final.reference_data) == ("input_final.zip", "reference_final.zip")
    assert (development.ingestion_only_during_scoring, final.ingestion_only_during_scoring) == (True, False)
    # the phase's own limit, else Codabench's default of 600 s
    assert [p.execution_time_limit for p in spec.phases] == [90, 600]


def test_columns_come_from_leaderboard_columns_in_rank_order(tmp_path: Path) -> None:
    spec = load_spec(_bundle(tmp_path))

    shown = [(c.key, c.title, c.sorting, c.precision) for c in spec.columns]
    # a column without label is titled by its key; without numeric_format, precision 2; without sort, desc
    assert shown == [
        ("accuracy", "Accuracy", "desc", 4),
        ("f1", "f1", "desc", 2),
        ("errors", "Errors", "asc", 0),
    ]
    assert spec.primary_column.key == "accuracy"


def test_the_image_is_competition_docker_image_and_py37_when_blank(tmp_path: Path) -> None:
    named = load_spec(_bundle(tmp_path / "named"))
    blank = load_spec(
        _bundle(
            tmp_path / "blank",
            _with("competition_docker_image: codalab/codalab-legacy:py39", "competition_docker_image: ''"),
        )
    )

    assert named.docker_image == "codalab/codalab-legacy:py39"
    assert blank.docker_image is None
    assert select_runtime(blank).image == "codalab/codalab-legacy:py37"


def test_the_spec_says_it_was_converted_and_how(tmp_path: Path) -> None:
    spec = load_spec(_bundle(tmp_path))

    assert spec.conversion is not None
    assert spec.conversion.describe() == (
        "converted from CodaLab competition.yaml v1.5 as Codabench imports it: 2 phases (Development, "
        "Final), each a task of its own; leaderboard columns from leaderboard.columns (accuracy, f1, "
        "errors); docker_image codalab/codalab-legacy:py39"
    )


def test_a_version_2_file_is_not_converted(tmp_path: Path) -> None:
    assert load_spec(good_folder(tmp_path)).conversion is None


@pytest.mark.parametrize("version", ["version: 1.5\n", "version: 1\n", "version: '1.5'\n"])
def test_a_declared_version_1_or_1_5_is_converted(tmp_path: Path, version: str) -> None:
    spec = load_spec(_bundle(tmp_path, version + V15_YAML))

    assert spec.conversion is not None and len(spec.tasks) == 2


def test_the_parent_phase_of_the_1_8_layout_is_dropped(tmp_path: Path) -> None:
    yaml_text = _with("    phasenumber: 1\n", "    phasenumber: 1\n    is_parallel_parent: true\n")

    spec = load_spec(_bundle(tmp_path, yaml_text))

    assert [p.name for p in spec.phases] == ["Final"]
    assert spec.conversion is not None
    assert "phase 1 is the parent of the 1.8 layout and was dropped" in spec.conversion.notes


def test_a_computed_column_is_a_plain_column_and_the_conversion_says_so(tmp_path: Path) -> None:
    yaml_text = _with("      rank: 2\n", "      rank: 2\n      computed:\n        operation: Avg\n")

    spec = load_spec(_bundle(tmp_path, yaml_text))

    f1 = next(c for c in spec.columns if c.key == "f1")
    assert f1.computation is None
    assert spec.conversion is not None
    assert any(note.startswith("column f1 is computed in CodaLab") for note in spec.conversion.notes)


@pytest.mark.parametrize(
    ("old", "new", "without", "expected"),
    [
        ("  terms: terms.html\n", "", "", "html: has no `terms` page"),
        ("html:\n  overview: overview.html\n  terms: terms.html\n", "", "", "html: missing"),
        ("", "", "terms.html", "html.terms: the page file 'terms.html' is not in the bundle"),
        ("image: logo.png\n", "", "", "image: missing; add `image: logo.png`"),
        ("", "", "logo.png", "image: the logo 'logo.png' is not in the bundle"),
        ("    start_date: 2026-03-01\n", "", "", "phases.2.start_date: missing or not a date"),
        ("    label: Final\n", "", "", "phases.2.label: missing"),
        ("    phasenumber: 2\n", "", "", "phases.2.phasenumber: missing"),
        ("      label: Results\n", "", "", "leaderboard.leaderboards.RESULTS.label: missing"),
        (
            "      leaderboard: *RESULTS\n      label: Errors\n",
            "      label: Errors\n",
            "",
            "leaderboard.columns.errors.leaderboard: missing",
        ),
        ("phases:\n", "stages:\n", "", "phases: missing; add `phases:`"),
        ("      rank: 3\n", "      rank: last\n", "", "leaderboard.columns.errors.rank: should be a number"),
    ],
)
def test_what_codabench_refuses_is_refused_naming_what_to_add(
    tmp_path: Path, old: str, new: str, without: str, expected: str
) -> None:
    yaml_text = _with(old, new) if old else V15_YAML

    problems = _problems(tmp_path, yaml_text, without=without)

    assert any(problem.startswith(f"competition.yaml: {expected}") for problem in problems), problems


def test_a_problem_in_a_column_names_the_v15_key_the_author_wrote(tmp_path: Path) -> None:
    problems = _problems(tmp_path, _with("      sort: asc\n", "      sort: ascending\n"))

    assert problems == [
        "competition.yaml: leaderboard.columns.errors.sort: 'ascending' is not allowed; use 'asc' or 'desc'"
    ]


def test_a_missing_zip_names_the_phase_that_names_it(tmp_path: Path) -> None:
    problems = _problems(tmp_path, without="reference_final.zip")

    assert problems == [
        "competition.yaml: phases.2.reference_data: 'reference_final.zip' does not exist in the bundle; "
        "add it next to competition.yaml or fix the path"
    ]


def test_the_checks_beyond_the_yaml_name_the_v15_fields_too(tmp_path: Path) -> None:
    yaml_text = _with("    execution_time_limit: 90\n", "    execution_time_limit: 9000\n")

    problems = check_bundle(_bundle(tmp_path, yaml_text), max_program_seconds=780)

    # Development is phases.1 in the author's file, though it is the first phase after conversion
    assert problems[0] == (
        "competition.yaml: phases.1.execution_time_limit: 9000 s is more than the 780 s a program may run "
        "here (the run steps' own time limit); lower it to 780 or less"
    )


def test_version_2_phases_under_version_1_5_are_refused_saying_which_version_writes_what(
    tmp_path: Path,
) -> None:
    yaml_text = "version: 1.5\n" + V15_YAML.split("phases:")[0] + "phases:\n  - index: 0\n    name: Main\n"

    problems = _problems(tmp_path, yaml_text)

    assert problems[-2].startswith(
        "competition.yaml: phases: is a list, as version 2 writes phases; version 1.5 keys each phase by its "
        "number (1:, 2:, ...), or write the file as version 2"
    )
    assert problems[-1].startswith("competition.yaml: leaderboard: missing")
