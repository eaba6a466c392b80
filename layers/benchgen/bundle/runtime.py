"""Which runtime a bundle's programs run in, and why: named by the bundle, mapped from its image, or fallback.

A runtime is a Python version and a pinned package set (``runtimes/<name>.txt`` beside this module, the one
source for the local environments, the Lambda images and the tests). Codabench starts each step in the
competition's ``docker_image`` (``codalab/codalab-legacy:py37`` when the bundle names none); BenchGen maps
that image to a runtime through :data:`IMAGE_TABLE`, says where the match is approximate, refuses GPU images
up front (Lambda has no GPU) and runs any other image's programs in the fallback runtime with a warning.
A bundle may instead name its runtime with ``runtime:`` in ``competition.yaml``.
"""

from __future__ import annotations

import re
from enum import StrEnum
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from benchgen.bundle.spec import CompetitionSpec
from benchgen.errors import BundleError

REQUIREMENTS = Path(__file__).with_name("runtimes")
# Lambda's Python: the sandbox images are built FROM its base image. Locally a runtime's environment is
# made with the machine's Python (3.11 or later), from the same pins.
LAMBDA_PYTHON = "3.13"
CODABENCH_DEFAULT_IMAGE = "codalab/codalab-legacy:py37"
# An image for NVIDIA GPUs (CUDA in its name, or Codabench's gpu tags) cannot run on Lambda.
GPU_IMAGE = re.compile(r"gpu|cuda|nvidia", re.IGNORECASE)
COMPETITION_FILE = "competition.yaml"


class Runtime(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    python: str
    description: str

    @property
    def requirements(self) -> Path:
        return REQUIREMENTS / f"{self.name}.txt"

    def pins(self) -> dict[str, str]:
        """Each pinned distribution (canonical name) and its version, from the runtime's requirements file."""
        return read_pins(self.requirements)


MINIMAL = Runtime(
    name="minimal",
    python=LAMBDA_PYTHON,
    description="the standard library and BenchGen's own libraries (boto3, pydantic, pyyaml ...)",
)
SCIENTIFIC = Runtime(
    name="scientific",
    python=LAMBDA_PYTHON,
    description="Codabench's legacy images' libraries: numpy, scipy, scikit-learn, pandas, matplotlib ...",
)
RUNTIMES = {runtime.name: runtime for runtime in (MINIMAL, SCIENTIFIC)}
# An image the table does not know runs here, with a warning: organisers' images mostly add to these.
FALLBACK = SCIENTIFIC


class LegacyImage(BaseModel):
    """One of Codabench's legacy images, as its published Dockerfile builds it."""

    model_config = ConfigDict(frozen=True)

    image: str
    python: str
    packages: dict[str, str]  # what its Dockerfile pins with pip (canonical names)
    runtime: Runtime


LEGACY_IMAGES = (
    LegacyImage(
        image="codalab/codalab-legacy:py37",
        python="3.7",
        packages={
            "theano": "1.0.0",
            "cython": "0.29.13",
            "numpy": "1.17.2",
            "scipy": "1.3.1",
            "scikit-learn": "0.21.3",
            "pandas": "0.25.0",
            "pyyaml": "5.1",
            "imutils": "0.5.3",
            "tensorflow": "conda",
        },
        runtime=SCIENTIFIC,
    ),
    LegacyImage(
        image="codalab/codalab-legacy:py39",
        python="3.9",
        packages={
            "theano": "1.0.5",
            "cython": "0.29.30",
            "numpy": "1.22.4",
            "scipy": "1.8.1",
            "scikit-learn": "1.1.1",
            "pandas": "1.4.2",
            "pyyaml": "6.0",
            "imutils": "0.5.4",
            "numba": "0.55.2",
            "tensorflow": "2.9.1",
        },
        runtime=SCIENTIFIC,
    ),
    LegacyImage(
        image="codalab/codalab-legacy:py312",
        python="3.12",
        packages={
            "cython": "3.0.12",
            "numpy": "1.26.4",
            "scipy": "1.11.4",
            "scikit-learn": "1.5.1",
            "pandas": "2.2.3",
            "pyyaml": "6.0.2",
            "imutils": "0.5.4",
            "numba": "0.61.2",
            "threadpoolctl": "3.6.0",
            "matplotlib": "3.8.4",
            "psutil": "7.0.0",
        },
        runtime=SCIENTIFIC,
    ),
)
GPU_IMAGES = ("codalab/codalab-legacy:gpu", "codalab/codalab-legacy:gpu310")


class ImageRow(BaseModel):
    """One row of the documented table: an image (or a kind of image), its runtime, what differs."""

    model_config = ConfigDict(frozen=True)

    image: str
    runtime: str | None  # None: refused
    note: str


class Reason(StrEnum):
    NAMED = "named"  # competition.yaml's runtime:
    IMAGE = "image"  # mapped from docker_image through the table
    DEFAULT = "default"  # no image named: Codabench's default image, through the table
    FALLBACK = "fallback"  # an image the table does not know


class RuntimeChoice(BaseModel):
    """The runtime a bundle's programs run in, why, and what an author should know about the match."""

    model_config = ConfigDict(frozen=True)

    runtime: str
    reason: Reason
    image: str
    warnings: tuple[str, ...] = ()

    def describe(self) -> str:
        """One line for a run record and the command line, e.g. ``scientific (mapped from docker_image
        codalab/codalab-legacy:py312)``."""
        why = {
            Reason.NAMED: f"named by {COMPETITION_FILE}'s runtime",
            Reason.IMAGE: f"mapped from docker_image {self.image}",
            Reason.DEFAULT: f"no docker_image named: Codabench's default, {self.image}",
            Reason.FALLBACK: f"fallback for docker_image {self.image}",
        }[self.reason]
        return f"{self.runtime} ({why})"


def canonical_name(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


@cache
def read_pins(path: Path) -> dict[str, str]:
    """``name==version`` lines of a requirements file (comments and blank lines skipped)."""
    pins: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        name, separator, version = text.partition("==")
        if not separator:
            raise ValueError(f"{path.name}: {text!r} is not pinned with ==")
        pins[canonical_name(name)] = version.strip()
    return pins


def legacy_differences(legacy: LegacyImage) -> list[str]:
    """How the runtime differs from the legacy image: Python, each package's version, what it lacks."""
    pins = legacy.runtime.pins()
    changes = [f"Python {legacy.python} -> {legacy.runtime.python} on Lambda (the machine's Python locally)"]
    changed = [
        f"{name} {version} -> {pins[name]}"
        for name, version in legacy.packages.items()
        if name in pins and pins[name] != version
    ]
    if changed:
        changes.append(", ".join(changed))
    missing = [name for name in legacy.packages if name not in pins]
    if missing:
        changes.append(f"not provided: {', '.join(missing)}")
    return changes


def _legacy_note(legacy: LegacyImage) -> str:
    return "approximate: " + "; ".join(legacy_differences(legacy))


def _gpu_refusal(image: str) -> str:
    return (
        f"docker_image {image} is a GPU image, and BenchGen has no GPU runtime (programs run on AWS Lambda, "
        f"which has no GPU); name a CPU image such as {LEGACY_IMAGES[-1].image}, or runtime: "
        f"{' or '.join(RUNTIMES)} in {COMPETITION_FILE}, if the programs can run without one"
    )


def _fallback_warning(image: str) -> str:
    return (
        f"docker_image {image} is not one BenchGen knows: programs run in the {FALLBACK.name} runtime "
        f"({FALLBACK.description}), Python {FALLBACK.python}; a program needing what only that image has "
        "fails. Running it as is would take an image built FROM it with the AWS Lambda runtime interface "
        "client (awslambdaric) added; or name a runtime with runtime: in competition.yaml"
    )


def image_table() -> list[ImageRow]:
    """The documented table (docs/bundles.md shows exactly these rows)."""
    rows = [
        ImageRow(image=legacy.image, runtime=legacy.runtime.name, note=_legacy_note(legacy))
        for legacy in LEGACY_IMAGES
    ]
    rows.append(
        ImageRow(
            image="(none named)",
            runtime=_legacy(CODABENCH_DEFAULT_IMAGE).runtime.name,
            note=f"as {CODABENCH_DEFAULT_IMAGE}, Codabench's default image, without a warning",
        )
    )
    rows.append(
        ImageRow(
            image=", ".join(GPU_IMAGES) + ", any image with gpu, cuda or nvidia in its name",
            runtime=None,
            note="refused when the bundle is checked or registered: no GPU runtime on Lambda",
        )
    )
    rows.append(
        ImageRow(
            image="any other image",
            runtime=FALLBACK.name,
            note="fallback, with a warning: running the image itself needs one built FROM it with the "
            "Lambda runtime interface client",
        )
    )
    return rows


def image_table_markdown() -> str:
    """:func:`image_table` as the Markdown table in docs/bundles.md."""
    lines = ["| docker_image | runtime | how it matches |", "|---|---|---|"]
    for row in image_table():
        lines.append(f"| {row.image} | {row.runtime or 'refused'} | {row.note} |")
    return "\n".join(lines)


def image_numpy(image: str) -> str | None:
    """The numpy version of ``image`` where the table knows it (a legacy image's pin); None otherwise."""
    legacy = next((each for each in LEGACY_IMAGES if each.image == image), None)
    return legacy.packages.get("numpy") if legacy is not None else None


def _legacy(image: str) -> LegacyImage:
    return next(legacy for legacy in LEGACY_IMAGES if legacy.image == image)


def select_runtime(spec: CompetitionSpec) -> RuntimeChoice:
    """The runtime for ``spec``'s programs; raises BundleError for an unknown runtime name or a GPU image."""
    image = spec.docker_image or CODABENCH_DEFAULT_IMAGE
    if spec.runtime is not None:
        if spec.runtime not in RUNTIMES:
            raise BundleError(
                COMPETITION_FILE,
                f"{spec.runtime!r} is not a runtime; name one of {', '.join(RUNTIMES)}",
                field="runtime",
            )
        return RuntimeChoice(runtime=spec.runtime, reason=Reason.NAMED, image=image)
    if GPU_IMAGE.search(image):
        raise BundleError(COMPETITION_FILE, _gpu_refusal(image), field="docker_image")
    if spec.docker_image is None:
        # The author chose no image, so no version of one matters to them: the table says what differs.
        return RuntimeChoice(runtime=_legacy(image).runtime.name, reason=Reason.DEFAULT, image=image)
    legacy = next((each for each in LEGACY_IMAGES if each.image == image), None)
    if legacy is None:
        return RuntimeChoice(
            runtime=FALLBACK.name, reason=Reason.FALLBACK, image=image, warnings=(_fallback_warning(image),)
        )
    warning = f"docker_image {image} runs in the {legacy.runtime.name} runtime, {_legacy_note(legacy)}"
    return RuntimeChoice(runtime=legacy.runtime.name, reason=Reason.IMAGE, image=image, warnings=(warning,))
