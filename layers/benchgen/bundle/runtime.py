"""Which runtime a bundle's programs run in, and why: named by the bundle, mapped from its image, or fallback.

A runtime is a Python version and a pinned package set (``runtimes/<name>.txt`` beside this module, the one
source for the local environments, the Lambda images and the tests). Codabench starts each step in the
competition's ``docker_image`` (``codalab/codalab-legacy:py37`` when the bundle names none); BenchGen maps
that image to a runtime through :data:`LEGACY_IMAGES`, and says on the run where the match is approximate,
naming each library whose major.minor version differs from the image's where that can change numbers. A GPU
image runs on the CPU, as a Codabench CPU worker would run it, with a warning; any other image's programs run
in the fallback runtime with a warning.
A bundle may instead name its runtime with ``runtime:`` in ``competition.yaml``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache
from pathlib import Path

from pydantic import ConfigDict

from benchgen.bundle.spec import CompetitionSpec
from benchgen.errors import BundleError
from benchgen.lazy_model import LazyModel

REQUIREMENTS = Path(__file__).with_name("runtimes")
# The Python of BenchGen's functions, and of the runtimes whose pins have wheels for it: their sandbox images
# are built FROM its base image, and locally their environments are made with the machine's Python (3.11 or
# later) from the same pins.
LAMBDA_PYTHON = "3.13"
CODABENCH_DEFAULT_IMAGE = "codalab/codalab-legacy:py37"
# An image for NVIDIA GPUs (CUDA in its name, or Codabench's gpu tags): Lambda has no GPU, so its programs run
# on the CPU, as on a Codabench CPU worker, with a warning.
GPU_IMAGE = re.compile(r"gpu|cuda|nvidia", re.IGNORECASE)
COMPETITION_FILE = "competition.yaml"


@dataclass(frozen=True)
class Runtime:
    name: str
    python: str  # the sandbox image's Python (its base image's tag)
    description: str
    # Whether the local environment needs exactly that Python (pythonX.Y on the PATH): a runtime whose pins
    # have wheels for that Python alone. Otherwise it is made with the machine's Python (3.11 or later).
    exact_python: bool = False

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
LEGACY = Runtime(
    name="legacy",
    python="3.11",
    description="Codabench's codalab-legacy:py37 and :py39 images as binary wheels allow: numpy 1.23 "
    "(np.float and friends still there), scipy, scikit-learn, pandas, matplotlib and what their Anaconda "
    "base brings: jinja2, beautifulsoup4, nltk, seaborn, requests, statsmodels ...",
    exact_python=True,
)
RUNTIMES = {runtime.name: runtime for runtime in (MINIMAL, SCIENTIFIC, LEGACY)}
# An image the table does not know runs here, with a warning: organisers' images mostly add to these.
FALLBACK = SCIENTIFIC


# A library whose version can change a program's numbers: where a runtime's major.minor of one differs from
# the image's, the run's warning names it.
NUMERIC = ("numpy", "scipy", "scikit-learn", "pandas")
# The Anaconda releases the legacy images install first on PATH (their Dockerfiles' pip then installs into
# that same Python): the versions of what programs commonly import from them.
ANACONDA_2019_07 = {
    "numpy": "1.16.4",
    "scipy": "1.3.0",
    "pandas": "0.24.2",
    "scikit-learn": "0.21.2",
    "matplotlib": "3.1.0",
    "seaborn": "0.9.0",
    "statsmodels": "0.10.0",
    "jinja2": "2.10.1",
    "beautifulsoup4": "4.7.1",
    "nltk": "3.4.4",
    "requests": "2.22.0",
    "networkx": "2.3",
    "sympy": "1.4",
    "pillow": "6.1.0",
    "h5py": "2.9.0",
    "lxml": "4.3.4",
    "openpyxl": "2.6.2",
    "xlrd": "1.2.0",
    "numba": "0.44.1",
    "tqdm": "4.32.1",
    "joblib": "0.13.2",
    "psutil": "5.6.3",
}
ANACONDA_2022_05 = {
    "numpy": "1.21.5",
    "scipy": "1.7.3",
    "pandas": "1.4.2",
    "scikit-learn": "1.0.2",
    "matplotlib": "3.5.1",
    "seaborn": "0.11.2",
    "statsmodels": "0.13.2",
    "jinja2": "2.11.3",
    "beautifulsoup4": "4.11.1",
    "nltk": "3.7",
    "requests": "2.27.1",
    "networkx": "2.7.1",
    "sympy": "1.10.1",
    "pillow": "9.0.1",
    "h5py": "3.6.0",
    "lxml": "4.8.0",
    "openpyxl": "3.0.9",
    "xlrd": "2.0.1",
    "numba": "0.55.1",
    "tqdm": "4.64.0",
    "joblib": "1.1.0",
    "psutil": "5.8.0",
}
UNPINNED = ""  # a package the Dockerfile installs without a version


@dataclass(frozen=True, kw_only=True)
class LegacyImage:
    """One of Codabench's images, as its published Dockerfile builds it, and the runtime it runs in."""

    image: str
    python: str
    base: str  # what the Dockerfile starts from: the Anaconda release first on PATH, or a base image
    # What that base brings that programs commonly import.
    base_packages: dict[str, str] = field(default_factory=dict)
    pinned: dict[str, str]  # what its Dockerfile installs with pip (canonical names), over the base's
    runtime: Runtime

    @property
    def packages(self) -> dict[str, str]:
        """What a program there imports, at which version: the Dockerfile's pip over its base."""
        return self.base_packages | self.pinned


LEGACY_IMAGES = (
    LegacyImage(
        image="codalab/codalab-legacy:py37",
        python="3.7",
        base="Anaconda3-2019.07",
        base_packages=ANACONDA_2019_07,
        pinned={
            "theano": "1.0.0",
            "cython": "0.29.13",
            "numpy": "1.17.2",
            "scipy": "1.3.1",
            "scikit-learn": "0.21.3",
            "pandas": "0.25.0",
            "pyyaml": "5.1",
            "imutils": "0.5.3",
            "tensorflow": UNPINNED,
        },
        runtime=LEGACY,
    ),
    LegacyImage(
        image="codalab/codalab-legacy:py39",
        python="3.9",
        base="Anaconda3-2022.05",
        base_packages=ANACONDA_2022_05,
        pinned={
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
        runtime=LEGACY,
    ),
    LegacyImage(
        image="codalab/codalab-legacy:py312",
        python="3.12",
        base="debian",
        pinned={
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
    LegacyImage(
        image="codalab/codalab-legacy:gpu",
        python="3.6",
        base="tensorflow/tensorflow:latest-gpu-py3",
        pinned={
            "theano": "1.0.5",
            "cython": "0.29.21",
            "numpy": "1.18.1",
            "matplotlib": "3.3.1",
            "seaborn": "0.10.1",
            "scipy": "1.4.1",
            "scikit-learn": "0.23.2",
            "pandas": "1.1.0",
            "pyyaml": "5.3.1",
            "imutils": UNPINNED,
            "opencv-python": UNPINNED,
            "torch": "1.6.0",
            "tqdm": "4.48.2",
            "psutil": "5.7.2",
            "h5py": "2.10.0",
            "jupyter": UNPINNED,
            "tensorflow": UNPINNED,
        },
        runtime=LEGACY,
    ),
    LegacyImage(
        image="codalab/codalab-legacy:gpu310",
        python="3.10",
        base="nvidia/cuda:12.4.1-cudnn-runtime-ubuntu20.04",
        pinned={
            "cython": "3.0.10",
            "numpy": "1.26.4",
            "matplotlib": "3.9.0",
            "seaborn": "0.13.2",
            "scipy": "1.14.0",
            "scikit-learn": "1.5.0",
            "pandas": "2.2.2",
            "pyyaml": "6.0.1",
            "imutils": "0.5.4",
            "opencv-python": "4.10.0.84",
            "torch": "2.3.1",
            "tensorflow": "2.16.1",
            "tqdm": "4.66.4",
            "psutil": "6.0.0",
            "h5py": "3.11.0",
            "jupyter": "1.0.0",
        },
        runtime=SCIENTIFIC,
    ),
)
GPU_IMAGES = tuple(legacy.image for legacy in LEGACY_IMAGES if GPU_IMAGE.search(legacy.image))


@dataclass(frozen=True)
class ImageRow:
    """One row of the documented table: an image (or a kind of image), its runtime, what differs."""

    image: str
    runtime: str
    note: str


class Reason(StrEnum):
    NAMED = "named"  # competition.yaml's runtime:
    IMAGE = "image"  # mapped from docker_image through the table
    DEFAULT = "default"  # no image named: Codabench's default image, through the table
    FALLBACK = "fallback"  # an image the table does not know


class RuntimeChoice(LazyModel):
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


def major_minor(version: str) -> str:
    """``1.17.2`` -> ``1.17``."""
    return ".".join(version.split(".")[:2])


def numeric_differences(legacy: LegacyImage) -> list[str]:
    """Each library of :data:`NUMERIC` whose major.minor differs between the image and its runtime, e.g.
    ``numpy 1.17 -> 1.23``."""
    pins, packages = legacy.runtime.pins(), legacy.packages
    return [
        f"{name} {major_minor(packages[name])} -> {major_minor(pins[name])}"
        for name in NUMERIC
        if name in packages and name in pins and major_minor(packages[name]) != major_minor(pins[name])
    ]


def legacy_differences(legacy: LegacyImage) -> list[str]:
    """How the runtime differs from the image: the libraries that can change numbers first, then Python,
    each other package's version, and what it lacks."""
    pins, packages = legacy.runtime.pins(), legacy.packages
    changes = []
    numeric = numeric_differences(legacy)
    if numeric:
        changes.append(f"numbers can differ: {', '.join(numeric)}")
    where = "" if legacy.runtime.exact_python else " on Lambda (the machine's Python locally)"
    changes.append(f"Python {legacy.python} -> {legacy.runtime.python}{where}")
    changed = [
        f"{name} {version} -> {pins[name]}"
        for name, version in packages.items()
        if version != UNPINNED and name in pins and pins[name] != version
    ]
    if changed:
        changes.append(", ".join(changed))
    missing = [name for name in packages if name not in pins]
    if missing:
        changes.append(f"not provided: {', '.join(missing)}")
    return changes


def _legacy_note(legacy: LegacyImage) -> str:
    return "approximate: " + "; ".join(legacy_differences(legacy))


def _legacy_warning(legacy: LegacyImage) -> str:
    return f"docker_image {legacy.image} runs in the {legacy.runtime.name} runtime, {_legacy_note(legacy)}"


def _gpu_warning(image: str) -> str:
    return (
        f"docker_image {image} is a GPU image: its programs run on the CPU, as on a Codabench CPU worker "
        "(AWS Lambda has no GPU); a program that needs CUDA fails, and the run says that it needs a GPU"
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
        ImageRow(
            image=legacy.image,
            runtime=legacy.runtime.name,
            note=("a GPU image, run on the CPU with a warning; " if GPU_IMAGE.search(legacy.image) else "")
            + _legacy_note(legacy),
        )
        for legacy in LEGACY_IMAGES
    ]
    rows.append(
        ImageRow(
            image="(none named)",
            runtime=_legacy(CODABENCH_DEFAULT_IMAGE).runtime.name,
            note=f"as {CODABENCH_DEFAULT_IMAGE}, Codabench's default image, with its warning when the bundle "
            "has a program",
        )
    )
    rows.append(
        ImageRow(
            image="any other image with gpu, cuda or nvidia in its name",
            runtime=FALLBACK.name,
            note="on the CPU, with a warning, as any other image (below); the run fails with a clear reason "
            "only when a program needs CUDA",
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
        lines.append(f"| {row.image} | {row.runtime} | {row.note} |")
    return "\n".join(lines)


def image_numpy(image: str) -> str | None:
    """The numpy version of ``image`` where the table knows it (a legacy image's pin); None otherwise."""
    legacy = next((each for each in LEGACY_IMAGES if each.image == image), None)
    return legacy.packages.get("numpy") if legacy is not None else None


def _legacy(image: str) -> LegacyImage:
    return next(legacy for legacy in LEGACY_IMAGES if legacy.image == image)


def select_runtime(spec: CompetitionSpec) -> RuntimeChoice:
    """The runtime for ``spec``'s programs; raises BundleError for an unknown runtime name."""
    image = spec.docker_image or CODABENCH_DEFAULT_IMAGE
    if spec.runtime is not None:
        if spec.runtime not in RUNTIMES:
            raise BundleError(
                COMPETITION_FILE,
                f"{spec.runtime!r} is not a runtime; name one of {', '.join(RUNTIMES)}",
                field="runtime",
            )
        return RuntimeChoice(runtime=spec.runtime, reason=Reason.NAMED, image=image)
    gpu = (_gpu_warning(image),) if GPU_IMAGE.search(image) else ()
    legacy = next((each for each in LEGACY_IMAGES if each.image == image), None)
    if legacy is None:
        warnings = (*gpu, _fallback_warning(image))
        return RuntimeChoice(runtime=FALLBACK.name, reason=Reason.FALLBACK, image=image, warnings=warnings)
    if spec.docker_image is None and not any(
        task.scoring_program or task.ingestion_program for task in spec.tasks
    ):
        # No program runs (a template bundle): no version of any image can matter.
        return RuntimeChoice(runtime=legacy.runtime.name, reason=Reason.DEFAULT, image=image)
    # Even with no image named the runtime only approximates Codabench's default one: the run says so.
    reason = Reason.DEFAULT if spec.docker_image is None else Reason.IMAGE
    return RuntimeChoice(
        runtime=legacy.runtime.name, reason=reason, image=image, warnings=(*gpu, _legacy_warning(legacy))
    )
