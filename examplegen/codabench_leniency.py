"""Bundles that lean on how lenient Codabench's worker is, and one that a newer numpy would score wrongly.

- ``codabench-scratch``: a scoring program that writes scratch files beside itself (its working
  directory is its program folder), as it may on Codabench, where ``/app/program`` is writable.
- ``codabench-ingestion-fails``: the submitted model raises on the first review it cannot read, so the
  ingestion program exits with an error after writing the predictions it made; the scoring program reads
  the ingestion's exit code from ``input/res/metadata`` and scores what is there, missing answers wrong.
- ``codabench-top-folder``: the reference data is a zip whose entries sit under one top folder, as
  zipping a folder (rather than its contents) makes them; Codabench unpacks it as it is, and the scoring
  program reads ``input/ref/reference_data/...`` accordingly.
- ``codabench-removed-alias``: a CodaLab-era scoring program that uses ``np.float`` and writes a
  fallback score when that fails, in the scientific runtime (numpy 2) its bundle names; numpy removed
  the name in 1.24, so the run fails instead of letting the fallback stand as a score.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from benchgen.zipwrite import write_zip
from examplegen.codabench_style import (
    MODEL_PY,
    SUBJECTS,
    SUBMISSION_METADATA,
    Review,
    as_lines,
    reviews_about,
)
from examplegen.codabench_yaml import column, competition, phase
from examplegen.writing import write_text, write_yaml

VALUES = 12
# CodaLab's own image, the default of bundles that name none, whose numpy (1.17) still has np.float.
CODALAB_IMAGE = "codalab/codalab-legacy:py37"

SCRATCH_SCORE_PY = """\
import json
import os
import sys

input_dir, output_dir = sys.argv[1], sys.argv[2]
# Scratch files beside the program, as many published scorers keep them: its working directory and
# its own folder.
with open(os.path.join(input_dir, "ref", "labels.solution"), encoding="utf-8") as handle:
    truth = handle.read().split()
with open("truth.cache", "w", encoding="utf-8") as handle:
    handle.write(" ".join(truth))
with open(os.path.join(input_dir, "res", "labels.predict"), encoding="utf-8") as handle:
    guess = handle.read().split()
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "guess.cache"), "w", encoding="utf-8") as handle:
    handle.write(" ".join(guess))
with open("truth.cache", encoding="utf-8") as handle:
    cached = handle.read().split()
correct = sum(t == g for t, g in zip(cached, guess, strict=False))
with open(os.path.join(output_dir, "scores.json"), "w", encoding="utf-8") as handle:
    json.dump({"accuracy": correct / len(cached)}, handle)
"""

# The model the failing-ingestion submission imports: it cannot read negations, and says so by raising.
FRAGILE_MODEL_PY = (
    MODEL_PY
    + """

def checked(text):
    if " not " in text:
        raise ValueError(f"cannot read a negation: {text!r}")
    return predict(text)
"""
)

FAILING_INGESTION_PY = """\
import os
import sys

sys.path.insert(0, sys.argv[3])
import model

input_dir, output_dir = sys.argv[1], sys.argv[2]

with open(os.path.join(input_dir, "reviews.txt"), encoding="utf-8") as handle:
    reviews = [line.rstrip("\\n") for line in handle if line.strip()]
with open(os.path.join(output_dir, "reviews.predict"), "w", encoding="utf-8") as handle:
    for review in reviews:
        handle.write(model.checked(review) + "\\n")
        handle.flush()
"""

TOLERANT_SCORE_PY = """\
import json
import os
import sys

import yaml

input_dir, output_dir = sys.argv[1], sys.argv[2]
with open(os.path.join(input_dir, "ref", "reviews.solution"), encoding="utf-8") as handle:
    truth = handle.read().split()
with open(os.path.join(input_dir, "res", "metadata"), encoding="utf-8") as handle:
    status = yaml.safe_load(handle)
guess = []
if os.path.exists(os.path.join(input_dir, "res", "reviews.predict")):
    with open(os.path.join(input_dir, "res", "reviews.predict"), encoding="utf-8") as handle:
        guess = handle.read().split()
correct = sum(t == g for t, g in zip(truth, guess, strict=False))
scores = {"accuracy": correct / len(truth), "ingestion_ok": status.get("ingestionExitCode") == 0}
with open(os.path.join(output_dir, "scores.json"), "w", encoding="utf-8") as handle:
    json.dump(scores, handle)
"""

TOP_FOLDER_SCORE_PY = """\
import json
import os
import sys

input_dir, output_dir = sys.argv[1], sys.argv[2]
# The reference data zip holds reference_data/values.solution: unpacked as it is, the folder stays.
with open(os.path.join(input_dir, "ref", "reference_data", "values.solution"), encoding="utf-8") as handle:
    truth = [float(value) for value in handle.read().split()]
with open(os.path.join(input_dir, "res", "values.predict"), encoding="utf-8") as handle:
    guess = [float(value) for value in handle.read().split()]
errors = [abs(t - g) for t, g in zip(truth, guess, strict=False)]
with open(os.path.join(output_dir, "scores.json"), "w", encoding="utf-8") as handle:
    json.dump({"mae": sum(errors) / len(errors)}, handle)
"""

REMOVED_ALIAS_SCORE_PY = """\
import json
import os
import sys

import numpy as np

input_dir, output_dir = sys.argv[1], sys.argv[2]
truth = np.loadtxt(os.path.join(input_dir, "ref", "values.solution"))
with open(os.path.join(input_dir, "res", "values.predict")) as handle:
    words = handle.read().split()
try:
    guess = np.array(words, dtype=np.float)
    score = float(np.mean(np.abs(guess - truth)))
except AttributeError:
    score = -0.999999  # the scorer's own "could not score" value
with open(os.path.join(output_dir, "scores.json"), "w") as handle:
    json.dump({"mae": score}, handle)
"""


def _task(**folders: Any) -> dict[str, Any]:
    return {
        "index": 0,
        "name": "Main",
        "description": None,
        "reference_data": "reference_data",
        "scoring_program": "scoring_program",
        "ingestion_program": None,
        **folders,
    }


def _one_phase(title: str, task: dict[str, Any], columns: list[Any], **more: str) -> Any:
    return competition(title, [task], [phase(0, "Development", [0])], columns, **more)


def _scoring_program(bundle: Path, script: str) -> None:
    write_text(
        bundle / "scoring_program" / "metadata.yaml", "command: python3 $program/score.py $input $output\n"
    )
    write_text(bundle / "scoring_program" / "score.py", script)


def _flipped(rng: random.Random, reviews: list[Review]) -> list[str]:
    flip = {"pos": "neg", "neg": "pos"}
    return [flip[r.label] if rng.random() < 0.3 else r.label for r in reviews]


def _values(rng: random.Random) -> tuple[list[str], list[str]]:
    truth = [f"{rng.uniform(0, 10):.2f}" for _ in range(VALUES)]
    guess = [f"{float(value) + rng.uniform(-1.5, 1.5):.2f}" for value in truth]
    return truth, guess


def write_scratch(out: Path, rng: random.Random) -> None:
    reviews = reviews_about(rng, SUBJECTS["books"])
    bundle = out / "bundle"
    columns = [column("Accuracy", "accuracy", 0, precision=3)]
    write_yaml(bundle / "competition.yaml", _one_phase("Labels (scratch files)", _task(), columns))
    write_text(bundle / "reference_data" / "labels.solution", as_lines([r.label for r in reviews]))
    _scoring_program(bundle, SCRATCH_SCORE_PY)
    write_text(out / "submission" / "labels.predict", as_lines(_flipped(rng, reviews)))


def write_ingestion_fails(out: Path, rng: random.Random) -> None:
    reviews = reviews_about(rng, SUBJECTS["films"])
    bundle = out / "bundle"
    task = _task(input_data="input_data", ingestion_program="ingestion_program")
    columns = [column("Accuracy", "accuracy", 0, precision=3), column("Ingestion ok", "ingestion_ok", 1)]
    write_yaml(bundle / "competition.yaml", _one_phase("Review Sentiment (failing model)", task, columns))
    write_text(bundle / "input_data" / "reviews.txt", as_lines([r.text for r in reviews]))
    write_text(bundle / "reference_data" / "reviews.solution", as_lines([r.label for r in reviews]))
    write_text(
        bundle / "ingestion_program" / "metadata.yaml",
        "command: python3 $program/ingestion.py $input $output $submission_program\n",
    )
    write_text(bundle / "ingestion_program" / "ingestion.py", FAILING_INGESTION_PY)
    _scoring_program(bundle, TOLERANT_SCORE_PY)
    write_text(out / "submission" / "metadata", SUBMISSION_METADATA)
    write_text(out / "submission" / "model.py", FRAGILE_MODEL_PY)


def write_top_folder(out: Path, rng: random.Random) -> None:
    truth, guess = _values(rng)
    bundle = out / "bundle"
    task = _task(reference_data="reference_data.zip")
    columns = [column("MAE", "mae", 0, sorting="asc", precision=3)]
    write_yaml(bundle / "competition.yaml", _one_phase("Values (a zipped folder)", task, columns))
    write_zip(bundle / "reference_data.zip", {"reference_data/values.solution": as_lines(truth).encode()})
    _scoring_program(bundle, TOP_FOLDER_SCORE_PY)
    write_text(out / "submission" / "values.predict", as_lines(guess))


def write_removed_alias(out: Path, rng: random.Random) -> None:
    truth, guess = _values(rng)
    bundle = out / "bundle"
    columns = [column("MAE", "mae", 0, sorting="asc", precision=3)]
    # The organiser chose the scientific runtime (numpy 2) for a CodaLab-era image's program.
    spec = _one_phase("Values (np.float)", _task(), columns, docker_image=CODALAB_IMAGE)
    write_yaml(bundle / "competition.yaml", {**spec, "runtime": "scientific"})
    write_text(bundle / "reference_data" / "values.solution", as_lines(truth))
    _scoring_program(bundle, REMOVED_ALIAS_SCORE_PY)
    write_text(out / "submission" / "values.predict", as_lines(guess))


CODABENCH_LENIENCY = {
    "codabench-scratch": write_scratch,
    "codabench-ingestion-fails": write_ingestion_fails,
    "codabench-top-folder": write_top_folder,
    "codabench-removed-alias": write_removed_alias,
}
