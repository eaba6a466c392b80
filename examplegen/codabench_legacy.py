"""Bundles written for Codabench's older images, which BenchGen runs in the legacy runtime.

- ``codabench-py37``: ``docker_image: codalab/codalab-legacy:py37``. A scoring program of 2019: it reads
  labels with ``np.int``, casts with ``np.float`` (both removed in numpy 1.24) and scores with scikit-learn's
  ``f1_score`` at its defaults of then (a binary average of the positive label 1). When ``np.float`` is
  missing, its own fallback writes a missing-score value, as published scorers of the time did: a numpy
  without it would complete the run with a plausible wrong number. A results submission.
- ``codabench-gpu``: ``docker_image: codalab/codalab-legacy:gpu``, whose programs pick the GPU when
  ``nvidia-smi`` is there and the CPU otherwise, as most do; a regression scored with pandas and
  scikit-learn on whatever it finds. A results submission.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from examplegen.codabench_yaml import column, competition, phase
from examplegen.writing import write_text, write_yaml

PY37_IMAGE = "codalab/codalab-legacy:py37"
GPU_IMAGE = "codalab/codalab-legacy:gpu"
LABEL_ROWS = 30
TARGET_ROWS = 24
MISSING_SCORE = -0.999999

PY37_SCORE_PY = f"""\
import os
import sys

import numpy as np
from sklearn.metrics import f1_score

input_dir, output_dir = sys.argv[1], sys.argv[2]
try:
    truth = np.loadtxt(os.path.join(input_dir, "ref", "labels.solution"), dtype=np.int)
    guess = np.loadtxt(os.path.join(input_dir, "res", "labels.predict"), dtype=np.int)
    accuracy = np.float(np.mean(truth == guess))
    f1 = np.float(f1_score(truth, guess))
except Exception as error:
    print("scoring failed:", error)
    accuracy = f1 = {MISSING_SCORE}
with open(os.path.join(output_dir, "scores.txt"), "w") as handle:
    handle.write(f"accuracy: {{accuracy:.6f}}\\nf1: {{f1:.6f}}\\n")
"""

GPU_SCORE_PY = """\
import json
import os
import shutil
import sys

import numpy as np
import pandas as pd
from sklearn.metrics import mean_absolute_error, mean_squared_error

device = "cuda" if shutil.which("nvidia-smi") else "cpu"
print("scoring on", device)
input_dir, output_dir = sys.argv[1], sys.argv[2]
truth = pd.read_csv(os.path.join(input_dir, "ref", "targets.csv"))
guess = pd.read_csv(os.path.join(input_dir, "res", "predictions.csv"))
joined = truth.merge(guess, on="id", suffixes=("", "_predicted"))
scores = {
    "mae": float(mean_absolute_error(joined["target"], joined["target_predicted"])),
    "rmse": float(np.sqrt(mean_squared_error(joined["target"], joined["target_predicted"]))),
}
with open(os.path.join(output_dir, "scores.json"), "w", encoding="utf-8") as handle:
    json.dump(scores, handle)
"""


def _write_bundle(bundle: Path, title: str, columns: list[dict[str, Any]], image: str, score_py: str) -> None:
    """competition.yaml of one task scored by ``score_py`` in ``image``, and its scoring program."""
    task = {
        "index": 0,
        "name": "Scoring",
        "description": None,
        "reference_data": "reference_data",
        "scoring_program": "scoring_program",
        "ingestion_program": None,
    }
    write_yaml(
        bundle / "competition.yaml",
        competition(title, [task], [phase(0, "Development", [0])], columns, docker_image=image),
    )
    write_text(
        bundle / "scoring_program" / "metadata.yaml", "command: python $program/score.py $input $output\n"
    )
    write_text(bundle / "scoring_program" / "score.py", score_py)


def write_py37(out: Path, rng: random.Random) -> None:
    bundle = out / "bundle"
    truth = [rng.randrange(2) for _ in range(LABEL_ROWS)]
    # About a quarter of the labels flipped, so accuracy and F1 both fall short of 1.
    guess = [1 - label if rng.random() < 0.25 else label for label in truth]
    write_text(bundle / "reference_data" / "labels.solution", "".join(f"{label}\n" for label in truth))
    write_text(out / "submission" / "labels.predict", "".join(f"{label}\n" for label in guess))
    columns = [column("Accuracy", "accuracy", 0, precision=4), column("F1", "f1", 1, precision=4)]
    _write_bundle(bundle, "Labels (a 2019 scorer)", columns, PY37_IMAGE, PY37_SCORE_PY)


def write_gpu(out: Path, rng: random.Random) -> None:
    bundle = out / "bundle"
    targets = [(f"t{number:02d}", round(rng.uniform(0, 10), 2)) for number in range(TARGET_ROWS)]
    guesses = [(row_id, round(value + rng.gauss(0, 1), 2)) for row_id, value in targets]
    write_text(
        bundle / "reference_data" / "targets.csv",
        "id,target\n" + "".join(f"{row_id},{value}\n" for row_id, value in targets),
    )
    write_text(
        out / "submission" / "predictions.csv",
        "id,target\n" + "".join(f"{row_id},{value}\n" for row_id, value in guesses),
    )
    columns = [
        {**column("MAE", "mae", 0, precision=4), "sorting": "asc"},
        {**column("RMSE", "rmse", 1, precision=4), "sorting": "asc"},
    ]
    _write_bundle(bundle, "Targets (a GPU image, a CPU program)", columns, GPU_IMAGE, GPU_SCORE_PY)
