"""What a bundle's own programs run on: the function's Python, never the bundle's ``docker_image``.

Codabench starts each step in the competition's Docker image; BenchGen runs programs on the Python of the
function that runs the step, so a program can import the standard library and the libraries below (the
Lambda layer's and the runtime's boto3). ``docker_image`` is kept on the environment version and reported
as not used, so an author learns it before a program fails on a missing import.
"""

from __future__ import annotations

from benchgen.bundle.spec import CompetitionSpec

PROGRAM_PYTHON = "3.13"
PROGRAM_LIBRARIES = (
    "aws-lambda-powertools",
    "aws-xray-sdk",
    "boto3",
    "msgspec",
    "pydantic",
    "pydantic-settings",
    "pyyaml",
)


def docker_image_warning(spec: CompetitionSpec) -> str | None:
    """The warning for a bundle that names a ``docker_image``; None when it names none."""
    if spec.docker_image is None:
        return None
    return (
        f"docker_image {spec.docker_image} is not used: programs run on the function's Python "
        f"{PROGRAM_PYTHON} image with these libraries: {', '.join(PROGRAM_LIBRARIES)} "
        "(and the standard library); a program importing anything else fails"
    )
