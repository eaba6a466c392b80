"""Reading competition.yaml into a CompetitionSpec, and the messages its author sees."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from benchgen.bundle.load import load_spec, parse_spec, spec_problems
from benchgen.bundle.spec import SelectionCriterion
from benchgen.bundle.yaml_file import read_yaml
from benchgen.errors import BundleError
from tests.unit.bad_bundles import GOOD_YAML, good_folder, yaml_with


def _messages(data: object) -> list[str]:
    _, problems = parse_spec(data)
    return [str(p) for p in problems]


def test_a_good_spec_is_read_and_codabench_only_keys_are_ignored(tmp_path: Path) -> None:
    spec = load_spec(good_folder(tmp_path))

    assert spec.title == "Tiny Math"
    assert spec.template == "math"
    assert [c.key for c in spec.columns] == ["accuracy", "answer_rate"]
    assert spec.primary_column.title == "Accuracy"
    assert not hasattr(spec, "image")


def test_finetune_settings_are_read(tmp_path: Path) -> None:
    yaml_text = GOOD_YAML + (
        "finetune:\n"
        "  selection_criterion: failed_and_near_miss\n"
        "  augmentation:\n    factor: 3\n    connectors:\n      - [ardından, sonra]\n"
        "  pool:\n    path: pool.jsonl\n    share: 0.1\n"
    )

    spec = load_spec(good_folder(tmp_path, yaml_text, **{"pool.jsonl": "{}\n"}))

    assert spec.finetune is not None
    assert spec.finetune.selection_criterion is SelectionCriterion.FAILED_AND_NEAR_MISS
    assert spec.finetune.augmentation.connectors == [("ardından", "sonra")]
    assert spec.finetune.pool is not None and spec.finetune.pool.share == 0.1


def test_malformed_yaml_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "competition.yaml"
    path.write_text('title: "unclosed\ntasks: []\n')

    with pytest.raises(BundleError) as raised:
        read_yaml(path)

    assert str(raised.value).startswith("competition.yaml: is not valid YAML at line 3, column 1:")


def test_yaml_built_from_many_aliases_is_refused(tmp_path: Path) -> None:
    # given a "billion laughs" document
    lines = ["a0: &a0 [x, x]"] + [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}]" for i in range(1, 40)]
    path = tmp_path / "competition.yaml"
    path.write_text("\n".join(lines) + "\n")

    with pytest.raises(BundleError) as raised:
        read_yaml(path)

    assert "more than 50 aliases" in str(raised.value)


def test_a_few_aliases_are_fine(tmp_path: Path) -> None:
    path = tmp_path / "competition.yaml"
    path.write_text("base: &b {x: 1}\nother: *b\n")

    assert read_yaml(path) == {"base": {"x": 1}, "other": {"x": 1}}


def test_pydantic_errors_become_field_messages() -> None:
    data = yaml.safe_load(GOOD_YAML)
    data["leaderboards"][0]["columns"][0]["sorting"] = "up"

    assert _messages(data) == [
        "competition.yaml: leaderboards.0.columns.0.sorting: 'up' is not allowed; use 'asc' or 'desc'"
    ]


def test_a_value_of_several_possible_types_gets_one_message() -> None:
    data = yaml.safe_load(GOOD_YAML)
    data["finetune"] = {"suggested_hyperparams": {"learning_rate": [1, 2]}}

    assert _messages(data) == [
        "competition.yaml: finetune.suggested_hyperparams.learning_rate: should be a valid number or "
        "a valid integer or a valid string (found [1, 2])"
    ]


def test_a_connector_with_three_words_is_not_a_pair() -> None:
    data = yaml.safe_load(GOOD_YAML)
    data["finetune"] = {"augmentation": {"connectors": [["a", "b"], ["a", "b", "c"]]}}

    assert _messages(data) == [
        "competition.yaml: finetune.augmentation.connectors.1: each connector is a pair [word, replacement]; "
        "found ['a', 'b', 'c']"
    ]


def test_every_shape_problem_is_reported_at_once() -> None:
    data = yaml.safe_load(GOOD_YAML)
    del data["title"]
    data["template"] = "algebra"
    data["tasks"][0]["index"] = "x"

    assert len(_messages(data)) == 3


def test_a_task_with_its_own_scoring_program_needs_no_template(tmp_path: Path) -> None:
    yaml_text = yaml_with("template: math\n", "").replace(
        "reference_data: reference", "scoring_program: scoring"
    )
    folder = good_folder(tmp_path, yaml_text, **{"scoring/metadata.yaml": "command: python x.py\n"})

    spec, problems = spec_problems(folder)

    assert problems == []
    assert spec is not None and spec.tasks[0].scoring_program == "scoring"


def test_a_non_positive_time_limit_is_refused() -> None:
    data = yaml.safe_load(GOOD_YAML)
    data["phases"][0]["execution_time_limit"] = 0

    assert _messages(data) == [
        "competition.yaml: phases.0.execution_time_limit: must be a positive number of seconds"
    ]


def test_a_path_through_a_link_out_of_the_bundle_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    folder = good_folder(tmp_path, yaml_with("reference_data: reference", "reference_data: linked"))
    (folder / "linked").symlink_to(outside)

    _, problems = spec_problems(folder)

    assert [str(p) for p in problems] == [
        "competition.yaml: tasks.0.reference_data: 'linked' is a link to somewhere outside the bundle; "
        "put the real files there"
    ]


def test_load_spec_raises_the_only_problem_as_is(tmp_path: Path) -> None:
    folder = good_folder(tmp_path, yaml_with("template: math", "template: algebra"))

    with pytest.raises(BundleError) as raised:
        load_spec(folder)

    assert raised.value.file == "competition.yaml"
    assert raised.value.field == "template"
    assert str(raised.value) == (
        "competition.yaml: template: unknown template 'algebra'; known templates: "
        "math, qa, routing, code, judge"
    )


def test_null_optional_fields_take_their_defaults() -> None:
    # given a spec written the way published Codabench bundles are, with null for what is not set
    data = yaml.safe_load(GOOD_YAML)
    data["leaderboards"][0]["columns"][0].update(computation=None, computation_indexes=None, precision=None)
    data["phases"][0].update(description=None, execution_time_limit=None)
    data["tasks"][0].update(description=None, ingestion_program=None)

    spec, problems = parse_spec(data)

    assert problems == []
    assert spec is not None
    column = spec.columns[0]
    assert (column.computation, column.computation_indexes, column.precision) == (None, [], 2)
    assert (spec.phases[0].description, spec.phases[0].execution_time_limit) == ("", 600)
    assert spec.tasks[0].ingestion_program is None


def test_a_null_required_field_reads_as_missing() -> None:
    data = yaml.safe_load(GOOD_YAML)
    data["title"] = None

    assert _messages(data) == ["competition.yaml: title: missing; add `title: <name of the benchmark>`"]
