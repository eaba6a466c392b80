"""What the docker_image warning and the README promise a bundle's programs is what the functions provide."""

from __future__ import annotations

import tomllib

from benchgen.bundle.runtime import PROGRAM_LIBRARIES, PROGRAM_PYTHON
from infra.constructs.layer import REPO_ROOT, RUNTIME


def test_the_libraries_named_for_programs_are_the_layers_and_the_runtimes() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pinned = sorted(requirement.split("==", 1)[0].strip().lower() for requirement in project["dependencies"])

    assert list(PROGRAM_LIBRARIES) == pinned
    assert RUNTIME.name == f"python{PROGRAM_PYTHON}"


def test_the_readme_lists_what_programs_can_import() -> None:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")

    assert f"Python {PROGRAM_PYTHON}" in readme
    assert all(f"`{name}`" in readme for name in PROGRAM_LIBRARIES)
