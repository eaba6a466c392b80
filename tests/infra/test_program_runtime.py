"""The runtimes' package sets as the Lambda images and the local environments get them."""

from __future__ import annotations

from benchgen.bundle.runtime import MINIMAL, RUNTIMES, canonical_name
from infra.constructs.layer import LAMBDA_TARGET, REPO_ROOT, RUNTIME, _pinned_dependencies, resolve


def test_the_minimal_runtime_is_the_layers_package_set_and_the_runtimes_boto3() -> None:
    # The library's pins (the layer's and boto3, which the Lambda runtime brings) resolved for Lambda
    resolved = resolve(_pinned_dependencies(REPO_ROOT / "pyproject.toml"), LAMBDA_TARGET)

    assert dict(pin.split("==", 1) for pin in resolved) == MINIMAL.pins()


def test_every_runtime_is_on_lambdas_python_unless_it_needs_its_own_and_pins_canonical_names() -> None:
    # A runtime whose pins have wheels for one Python alone (legacy) is built on that Python's image.
    for runtime in RUNTIMES.values():
        assert runtime.exact_python or RUNTIME.name == f"python{runtime.python}"
        assert all(name == canonical_name(name) for name in runtime.pins())
    assert [runtime.name for runtime in RUNTIMES.values() if runtime.exact_python] == ["legacy"]


def test_the_readme_names_every_runtime() -> None:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")

    assert all(f"`{name}`" in readme for name in RUNTIMES)
