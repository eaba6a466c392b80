"""Which runtime a bundle's programs run in: named, mapped from its docker_image, refused, or a fallback."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from benchgen.admission import check_bundle
from benchgen.bundle.runtime import (
    CODABENCH_DEFAULT_IMAGE,
    LEGACY_IMAGES,
    RUNTIMES,
    SCIENTIFIC,
    LegacyImage,
    Reason,
    image_table_markdown,
    select_runtime,
)
from benchgen.bundle.spec import CompetitionSpec
from benchgen.environment import open_environment
from benchgen.errors import BundleError
from benchgen.sandbox.runtimes import RuntimeMissing, runtime_environment
from tests.codabench_bundles import DOCKER_IMAGE, write_bundle

ROOT = Path(__file__).resolve().parents[2]
GPU_IMAGES = [
    "codalab/codalab-legacy:gpu",
    "codalab/codalab-legacy:gpu310",
    "pytorch/pytorch:2.3.1-cuda12.1-cudnn8-runtime",
    "nvidia/cuda:12.4.1-cudnn-runtime-ubuntu20.04",
]


def spec(**keys: Any) -> CompetitionSpec:
    return CompetitionSpec.model_validate(
        {
            "title": "T",
            "tasks": [{"index": 0, "name": "t", "scoring_program": "scoring_program"}],
            "leaderboards": [{"columns": [{"title": "Accuracy", "key": "accuracy", "index": 0}]}],
            **keys,
        }
    )


# Each image's runtime, as the table in docs/bundles.md says.
MAPPED = {
    "codalab/codalab-legacy:py37": "legacy",
    "codalab/codalab-legacy:py39": "legacy",
    "codalab/codalab-legacy:py312": "scientific",
    "codalab/codalab-legacy:gpu": "legacy",
    "codalab/codalab-legacy:gpu310": "scientific",
}


@pytest.mark.parametrize("legacy", LEGACY_IMAGES, ids=lambda legacy: legacy.image)
def test_each_legacy_image_maps_to_its_runtime_and_says_how_it_differs(legacy: LegacyImage) -> None:
    choice = select_runtime(spec(docker_image=legacy.image))

    runtime = MAPPED[legacy.image]
    assert (choice.runtime, choice.reason, choice.image) == (runtime, Reason.IMAGE, legacy.image)
    assert choice.describe() == f"{runtime} (mapped from docker_image {legacy.image})"
    warning = choice.warnings[-1]
    assert warning.startswith(f"docker_image {legacy.image} runs in the {runtime} runtime, approximate: ")
    assert f"Python {legacy.python} -> {RUNTIMES[runtime].python}" in warning


def _major_minor(version: str) -> str:
    match = re.match(r"\d+\.\d+", version)
    assert match is not None, version
    return match.group(0)


@pytest.mark.parametrize("legacy", LEGACY_IMAGES, ids=lambda legacy: legacy.image)
def test_a_numeric_librarys_other_major_minor_is_named_on_the_run_and_in_the_docs(
    legacy: LegacyImage,
) -> None:
    # Given the image's versions and its runtime's pins, compared here on their own
    pins = legacy.runtime.pins()
    differing = [
        f"{name} {_major_minor(legacy.packages[name])} -> {_major_minor(pins[name])}"
        for name in ("numpy", "scipy", "scikit-learn", "pandas")
        if _major_minor(legacy.packages[name]) != _major_minor(pins[name])
    ]
    docs = (ROOT / "docs" / "bundles.md").read_text(encoding="utf-8")
    row = next(line for line in docs.splitlines() if line.startswith(f"| {legacy.image} |"))

    # When a bundle names the image
    warnings = " ".join(select_runtime(spec(docker_image=legacy.image)).warnings)

    # Then each difference that can change numbers is on the run and in the documented table
    assert [each for each in differing if each not in warnings] == []
    assert [each for each in differing if each not in row] == []
    if differing:
        assert f"numbers can differ: {', '.join(differing)}" in warnings


def test_the_py37_image_runs_with_a_numpy_that_has_np_float_and_says_what_can_change_numbers() -> None:
    [warning] = select_runtime(spec(docker_image="codalab/codalab-legacy:py37")).warnings

    assert select_runtime(spec(docker_image="codalab/codalab-legacy:py37")).runtime == "legacy"
    assert RUNTIMES["legacy"].pins()["numpy"].startswith("1.23.")
    assert (
        "numbers can differ: numpy 1.17 -> 1.23, scipy 1.3 -> 1.9, scikit-learn 0.21 -> 1.1, "
        "pandas 0.25 -> 1.5" in warning
    )
    assert warning.endswith("not provided: theano, imutils, tensorflow")


def test_a_bundle_naming_no_image_runs_as_on_codabenchs_default_image_and_says_how_it_differs() -> None:
    choice = select_runtime(spec())

    assert (choice.runtime, choice.reason) == ("legacy", Reason.DEFAULT)
    assert (
        choice.describe() == f"legacy (no docker_image named: Codabench's default, {CODABENCH_DEFAULT_IMAGE})"
    )
    assert choice.warnings == select_runtime(spec(docker_image=CODABENCH_DEFAULT_IMAGE)).warnings


def test_a_bundle_with_no_program_and_no_image_carries_no_runtime_warning() -> None:
    template = CompetitionSpec.model_validate(
        {
            "title": "T",
            "template": "math",
            "tasks": [{"index": 0, "name": "t"}],
            "leaderboards": [{"columns": [{"title": "Accuracy", "key": "accuracy", "index": 0}]}],
        }
    )

    choice = select_runtime(template)

    assert (choice.runtime, choice.reason, choice.warnings) == ("legacy", Reason.DEFAULT, ())


def test_a_named_runtime_wins_over_the_image_and_carries_no_warning() -> None:
    choice = select_runtime(spec(docker_image="codalab/codalab-legacy:gpu", runtime="minimal"))

    assert (choice.runtime, choice.reason, choice.warnings) == ("minimal", Reason.NAMED, ())
    assert choice.describe() == "minimal (named by competition.yaml's runtime)"


def test_an_unknown_runtime_name_is_refused_with_the_names_to_choose_from() -> None:
    with pytest.raises(BundleError) as raised:
        select_runtime(spec(runtime="tensorflow"))

    assert str(raised.value) == (
        "competition.yaml: runtime: 'tensorflow' is not a runtime; name one of minimal, scientific, legacy"
    )


@pytest.mark.parametrize("image", GPU_IMAGES)
def test_a_gpu_image_runs_on_the_cpu_with_a_warning_first(image: str) -> None:
    choice = select_runtime(spec(docker_image=image))

    assert choice.runtime == MAPPED.get(image, SCIENTIFIC.name)
    assert choice.warnings[0] == (
        f"docker_image {image} is a GPU image: its programs run on the CPU, as on a Codabench CPU worker "
        "(AWS Lambda has no GPU); a program that needs CUDA fails, and the run says that it needs a GPU"
    )


def test_an_unknown_image_runs_in_the_fallback_runtime_with_a_warning_naming_what_it_would_take() -> None:
    choice = select_runtime(spec(docker_image="example/organiser-image:1.0"))

    assert (choice.runtime, choice.reason) == ("scientific", Reason.FALLBACK)
    assert choice.describe() == "scientific (fallback for docker_image example/organiser-image:1.0)"
    [warning] = choice.warnings
    assert warning.startswith("docker_image example/organiser-image:1.0 is not one BenchGen knows")
    assert "built FROM it with the AWS Lambda runtime interface client (awslambdaric)" in warning


def test_the_documented_table_is_the_table_in_code() -> None:
    docs = (ROOT / "docs" / "bundles.md").read_text(encoding="utf-8")

    assert image_table_markdown() in docs


def _bundle_with_image(tmp_path: Path, image: str) -> Path:
    bundle = write_bundle(tmp_path / "bundle")
    competition = bundle / "competition.yaml"
    text = competition.read_text(encoding="utf-8")
    competition.write_text(text.replace(f"docker_image: {DOCKER_IMAGE}", f"docker_image: {image}"))
    return bundle


def test_bundle_check_finds_no_problem_in_a_gpu_bundle(tmp_path: Path) -> None:
    problems = check_bundle(_bundle_with_image(tmp_path, "codalab/codalab-legacy:gpu"))

    assert problems == []


def test_a_gpu_bundle_opens_with_its_cpu_warning_on_the_environment(tmp_path: Path) -> None:
    bundle = _bundle_with_image(tmp_path, "codalab/codalab-legacy:gpu310")

    environment = open_environment(bundle, tmp_path / "env")

    assert (
        environment.runtime.describe()
        == "scientific (mapped from docker_image codalab/codalab-legacy:gpu310)"
    )
    assert environment.runtime.warnings[0].startswith(
        "docker_image codalab/codalab-legacy:gpu310 is a GPU image"
    )


def test_a_runtime_without_an_environment_names_the_make_target(tmp_path: Path) -> None:
    with pytest.raises(RuntimeMissing) as raised:
        runtime_environment("scientific", tmp_path)

    assert str(raised.value) == (
        f"the scientific runtime has no environment at {tmp_path / 'scientific'}: create it with "
        "`make runtimes` (or point BENCHGEN_RUNTIMES at the folder that holds it)"
    )


@pytest.mark.parametrize("runtime", ["scientific", "legacy"])
def test_the_documented_package_versions_are_the_pins(runtime: str) -> None:
    docs = (ROOT / "docs" / "bundles.md").read_text(encoding="utf-8")
    row = next(line for line in docs.splitlines() if line.startswith(f"| `{runtime}` |"))
    documented = dict(re.findall(r"([a-z][a-z0-9-]*) (\d[\w.]*)", row.split("|")[3]))

    assert documented
    assert {name: RUNTIMES[runtime].pins().get(name) for name in documented} == documented
    assert row.split("|")[2].strip() == RUNTIMES[runtime].python
