"""Scoring templates are each defined in their own module, found by name: nothing else in the code names a
template, and a template registered the documented way (here a throwaway one) is accepted by a bundle,
scores a run, grades a case for a reward and has its example, like the others."""

from __future__ import annotations

import ast
import json
import random
from collections.abc import Iterator
from importlib import import_module
from pathlib import Path

import msgspec
import pytest

from benchgen.bundle.load import load_spec
from benchgen.bundle.spec import Criterion
from benchgen.errors import BundleError
from benchgen.scoring import build_template, registry
from benchgen.scoring.reward import grading_fields
from benchgen.scoring.templates import TemplateDefinition
from benchgen.vocabulary import TEMPLATES, TemplateName
from cli.main import main
from examplegen import GeneratedEnvironment, generate_environment
from examplegen.generate import generators
from tests.throwaway import TEMPLATE_MODULES, registered_template

ROOT = Path(__file__).resolve().parents[2]
# The code a template could be named in. The web console names none; the docs describe each.
CODE = ["layers", "functions", "infra", "localcloud", "examplegen", "cli", "modelserver"]
LIST = ROOT / "layers" / "benchgen" / "vocabulary.py"
# Files that write a template's name and are not the template's: only ever shorter.
NAMED_ELSEWHERE = {
    # The standalone grader is one standard-library file amalgamated from the rule modules it imports by
    # name, so it names the templates whose reward it computes (a template judged otherwise is refused).
    "layers/benchgen/scoring/grader.py": {"math", "qa", "routing", "code"},
    # The real loop's math example, built on the template's example generator and listed after the others.
    "examplegen/arithmetic_env.py": {"math"},
    # The word, not the template: a route, a domain, a folder, a JSON error's field.
    "examplegen/routing_env.py": {"math", "code"},
    "examplegen/codabench_style.py": {"code"},
    "examplegen/codabench_scientific.py": {"code"},
    "layers/benchgen/providers/openai_batch.py": {"code"},
    "localcloud/providers/openai_batches.py": {"code"},
    "localcloud/model_server.py": {"code"},
    "modelserver/server.py": {"code"},
    # The word, not the template: the key under which a judged run's report and dataset manifest show the
    # agreement with people of whatever judge scored it.
    "layers/benchgen/report/detailed.py": {"judge"},
    "layers/benchgen/finetune/artifact.py": {"judge"},
}


def _own_files(name: str) -> set[Path]:
    module = TemplateName(name).module
    return {
        ROOT / "layers" / "benchgen" / "scoring" / f"{module}.py",
        ROOT / "examplegen" / f"{module}_env.py",
        LIST,
    }


def _own_modules(name: str) -> set[str]:
    module = TemplateName(name).module
    return {f"benchgen.scoring.{module}", f"examplegen.{module}_env"}


def _names_template(tree: ast.AST, name: str) -> bool:
    """Whether the code writes the template's name or imports one of its modules."""
    own = _own_modules(name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value == name:
            return True
        if isinstance(node, ast.Import) and any(alias.name in own for alias in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (
            node.module in own or any(f"{node.module}.{alias.name}" in own for alias in node.names)
        ):
            return True
    return False


def _code_files() -> Iterator[Path]:
    for folder in CODE:
        yield from sorted((ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("name", TEMPLATES)
def test_a_template_is_named_only_by_its_module_its_example_and_the_list_of_templates(name: str) -> None:
    # Given every file of the code / When the ones that name the template or import its modules are found
    naming = {
        path for path in _code_files() if _names_template(ast.parse(path.read_text(encoding="utf-8")), name)
    }
    allowed = _own_files(name) | {ROOT / path for path, names in NAMED_ELSEWHERE.items() if name in names}
    # Then they are the template's own files (and the listed exceptions), and no other module branches on it
    assert naming <= allowed, sorted(str(path.relative_to(ROOT)) for path in naming - allowed)


def test_the_exceptions_still_name_what_they_are_excused_for() -> None:
    stale = {
        path: name
        for path, names in NAMED_ELSEWHERE.items()
        for name in names
        if not _names_template(ast.parse((ROOT / path).read_text(encoding="utf-8")), name)
    }
    assert not stale, f"take these out of NAMED_ELSEWHERE: {stale}"


@pytest.mark.parametrize("name", TEMPLATES)
def test_every_template_is_found_by_its_name_with_its_example(name: str) -> None:
    definition = registry.template(name)
    template = build_template(name)
    examples = [
        generator.competition()
        for generator in generators().values()
        if generator.competition().get("template") == name
    ]

    assert definition.name == template.name == name
    assert examples
    # Its examples' leaderboards show what its aggregator scores, and their criteria include ones it judges
    # (those the template judges on every case, or those its examples' cases name for it)
    metrics = template.new_aggregator().scores()
    judged = set(definition.judged)
    if definition.case_criteria is not None:
        for generator in generators().values():
            if generator.competition().get("template") == name:
                case = generator.make_case(random.Random(0), 0, False)[0]
                judged |= set(definition.case_criteria(msgspec.convert(case, definition.case_type)))
    for competition in examples:
        assert {column["key"] for column in competition["leaderboards"][0]["columns"]} <= set(metrics)
        assert {criterion["id"] for criterion in competition["criteria"]} & judged


def test_the_templates_are_listed_in_the_order_of_the_list_of_templates() -> None:
    assert [definition.name for definition in registry.templates()] == list(TEMPLATES)


def test_each_template_folds_its_verdicts_with_its_own_aggregator() -> None:
    aggregators = {type(build_template(name).new_aggregator()) for name in TEMPLATES}

    assert len(aggregators) == len(TEMPLATES)


def test_an_unknown_template_is_refused_naming_the_templates() -> None:
    with pytest.raises(ValueError, match="'tabular' is not a scoring template: the templates are math, qa"):
        build_template("tabular")


@pytest.fixture
def throwaway() -> Iterator[TemplateDefinition]:
    with registered_template() as definition:
        yield definition


def test_a_template_takes_its_module_its_example_and_its_place_in_the_list(
    throwaway: TemplateDefinition,
) -> None:
    # Where each module would be: beside the others of the package its registry imports it from.
    files = {
        Path(str(import_module(package).__file__)).parent / f"{leaf}.py"
        for package, leaf in (module.rsplit(".", 1) for module in TEMPLATE_MODULES)
    } | {LIST}

    assert files == _own_files("throwaway")
    assert len(files) == 3


def _score(made: GeneratedEnvironment, out: Path) -> int:
    """``benchgen score`` of the example's submission against its bundle, into ``out``."""
    bundle, submission = str(made.bundle_dir), str(made.submission_path)
    return main(["score", "--bundle", bundle, "--submission", submission, "--out", str(out)])


def test_a_registered_template_scores_its_example_through_the_command_line(
    throwaway: TemplateDefinition, tmp_path: Path
) -> None:
    # Given the throwaway template's example, generated the way every example is
    made = generate_environment("throwaway", tmp_path / "env", cases=12, seed=3)

    # When the command line checks the bundle and scores the submission against it
    checked = main(["bundle", "check", str(made.bundle_dir)])
    scored = _score(made, tmp_path / "run")

    # Then the run is scored by the throwaway judge: the cases written to fail are the ones that fail
    assert (checked, scored) == (0, 0)
    scores = json.loads((tmp_path / "run" / "scores.json").read_text(encoding="utf-8"))
    assert scores["all_words_rate"] == pytest.approx((made.cases - made.failing) / made.cases)
    assert scores["some_words_rate"] == 1.0
    assert (tmp_path / "run" / "finetune_artifact.zip").is_file()


def test_a_case_field_of_the_template_s_own_is_checked_when_its_run_is_scored(
    throwaway: TemplateDefinition, tmp_path: Path
) -> None:
    # Given the throwaway example with one case whose colours are a string, not a list
    made = generate_environment("throwaway", tmp_path / "env", cases=4, seed=3)
    cases = made.bundle_dir / "reference" / "cases.jsonl"
    lines = cases.read_text(encoding="utf-8").splitlines()
    broken = json.loads(lines[1]) | {"colours": "red"}
    cases.write_text("\n".join([lines[0], json.dumps(broken), *lines[2:]]) + "\n", encoding="utf-8")

    # When the submission is scored against it
    scored = _score(made, tmp_path / "run")

    # Then the run fails naming the line and the field the template's case record refuses
    run = json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))
    assert scored != 0
    assert run["failure_reason"].startswith("reference/cases.jsonl: line 2: colours"), run["failure_reason"]


def test_a_registered_template_gives_a_case_its_grading_fields(throwaway: TemplateDefinition) -> None:
    from tests.throwaway.template import ColourCase

    case = ColourCase(id="flag-1", question="which colours?", answer="ignored", colours=["red", "blue"])

    fields = grading_fields(case, TemplateName("throwaway"), [Criterion(id="all-words")])

    assert fields == {"template": "throwaway", "colours": ["red", "blue"], "criteria": ["all-words"]}


def test_a_bundle_names_a_registered_template_and_only_while_it_is(tmp_path: Path) -> None:
    yaml = tmp_path / "competition.yaml"
    yaml.write_text(
        "title: t\ntemplate: throwaway\ntasks: [{reference_data: ref}]\n"
        "leaderboards: [{columns: [{title: A, key: all_words_rate}]}]\n",
        encoding="utf-8",
    )
    (tmp_path / "ref").mkdir()
    (tmp_path / "ref" / "cases.jsonl").write_text('{"id": "c1", "colours": ["red"]}\n', encoding="utf-8")
    with registered_template():
        assert load_spec(tmp_path).template == "throwaway"
    with pytest.raises(
        BundleError, match="unknown template 'throwaway'; known templates: math, qa, routing, code"
    ):
        load_spec(tmp_path)
