"""Which runtime a bundle's programs run in: named, mapped from its docker_image, refused, or a fallback."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from benchgen.bundle.runtime import (
    CODABENCH_DEFAULT_IMAGE,
    LEGACY_IMAGES,
    SCIENTIFIC,
    Reason,
    image_table_markdown,
    select_runtime,
)
from benchgen.bundle.spec import CompetitionSpec
from benchgen.environment import check_bundle, open_environment
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


@pytest.mark.parametrize("legacy", LEGACY_IMAGES, ids=lambda legacy: legacy.image)
def test_each_legacy_image_maps_to_the_scientific_runtime_and_says_how_it_differs(legacy: Any) -> None:
    choice = select_runtime(spec(docker_image=legacy.image))

    assert (choice.runtime, choice.reason, choice.image) == ("scientific", Reason.IMAGE, legacy.image)
    assert choice.describe() == f"scientific (mapped from docker_image {legacy.image})"
    [warning] = choice.warnings
    assert warning.startswith(
        f"docker_image {legacy.image} runs in the scientific runtime, approximate: Python {legacy.python} "
        "-> 3.13 on Lambda"
    )


def test_the_py312_image_names_numpys_change_and_what_is_not_provided() -> None:
    [warning] = select_runtime(spec(docker_image="codalab/codalab-legacy:py312")).warnings

    assert "numpy 1.26.4 -> 2.1.3" in warning
    assert "scikit-learn 1.5.1 -> 1.5.2" in warning
    assert warning.endswith("not provided: imutils")


def test_a_bundle_naming_no_image_runs_as_on_codabenchs_default_image() -> None:
    choice = select_runtime(spec())

    assert (choice.runtime, choice.reason, choice.warnings) == ("scientific", Reason.DEFAULT, ())
    assert choice.describe() == (
        f"scientific (no docker_image named: Codabench's default, {CODABENCH_DEFAULT_IMAGE})"
    )


def test_a_named_runtime_wins_over_the_image_and_carries_no_warning() -> None:
    choice = select_runtime(spec(docker_image="codalab/codalab-legacy:gpu", runtime="minimal"))

    assert (choice.runtime, choice.reason, choice.warnings) == ("minimal", Reason.NAMED, ())
    assert choice.describe() == "minimal (named by competition.yaml's runtime)"


def test_an_unknown_runtime_name_is_refused_with_the_names_to_choose_from() -> None:
    with pytest.raises(BundleError) as raised:
        select_runtime(spec(runtime="tensorflow"))

    assert str(raised.value) == (
        "competition.yaml: runtime: 'tensorflow' is not a runtime; name one of minimal, scientific"
    )


@pytest.mark.parametrize("image", GPU_IMAGES)
def test_a_gpu_image_is_refused_up_front(image: str) -> None:
    with pytest.raises(BundleError) as raised:
        select_runtime(spec(docker_image=image))

    assert str(raised.value).startswith(
        f"competition.yaml: docker_image: docker_image {image} is a GPU image"
    )
    assert "no GPU runtime" in str(raised.value)


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


def test_bundle_check_refuses_a_gpu_bundle(tmp_path: Path) -> None:
    problems = check_bundle(_bundle_with_image(tmp_path, "codalab/codalab-legacy:gpu"))

    assert [p for p in problems if "is a GPU image" in p] != []


def test_a_gpu_bundle_cannot_be_opened_so_registration_rejects_it(tmp_path: Path) -> None:
    bundle = _bundle_with_image(tmp_path, "codalab/codalab-legacy:gpu310")

    with pytest.raises(BundleError, match="is a GPU image"):
        open_environment(bundle, tmp_path / "env")


def test_a_runtime_without_an_environment_names_the_make_target(tmp_path: Path) -> None:
    with pytest.raises(RuntimeMissing) as raised:
        runtime_environment("scientific", tmp_path)

    assert str(raised.value) == (
        f"the scientific runtime has no environment at {tmp_path / 'scientific'}: create it with "
        "`make runtimes` (or point BENCHGEN_RUNTIMES at the folder that holds it)"
    )


def test_the_documented_package_versions_are_the_pins() -> None:
    docs = (ROOT / "docs" / "bundles.md").read_text(encoding="utf-8")
    row = next(line for line in docs.splitlines() if line.startswith("| `scientific` |"))
    documented = dict(re.findall(r"([a-z][a-z-]*) (\d[\w.]*)", row.split("|")[3]))

    assert documented and all(SCIENTIFIC.pins()[name] == version for name, version in documented.items())
