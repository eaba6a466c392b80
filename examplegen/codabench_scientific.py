"""Bundles whose programs import the scientific libraries of Codabench's legacy images, as most published
bundles do; they name ``docker_image: codalab/codalab-legacy:py312``, which selects the scientific runtime.

- ``codabench-sklearn``: a scikit-learn classifier competition with two phases (``Development`` and
  ``Final``, a task each). ``submission/code`` is a model the ingestion program fits and runs (numpy and
  scikit-learn); ``submission/results`` holds the predicted labels of both tasks. The scoring program
  scores with ``sklearn.metrics``.
- ``codabench-plot``: a scoring program that reads the predictions with pandas and draws the accuracy of
  each category with matplotlib into its detailed results page; a results submission.
"""

from __future__ import annotations

import random
from pathlib import Path

from examplegen.codabench_yaml import SCIENTIFIC_IMAGE, column, competition, phase
from examplegen.writing import write_text, write_yaml

TRAIN_ROWS = 40
TEST_ROWS = 15
FEATURES = 3
# Two classes: a 3-neighbour vote never ties.
CLASS_CENTRES = {0: (0.0, 0.0, 0.0), 1: (1.2, 1.0, 0.5)}
SPREAD = 0.8
NEIGHBOURS = 3
CATEGORIES = ["news", "sport", "science", "travel"]
PLOT_ROWS = 32

SKLEARN_INGESTION_PY = """\
import os
import sys

import numpy as np


def main(input_dir, output_dir, submission_dir):
    with open(os.path.join(input_dir, "task.txt"), encoding="utf-8") as handle:
        name = handle.read().strip()
    if not os.path.exists(os.path.join(submission_dir, "model.py")):
        print("a results submission: its files are the predictions")
        return
    sys.path.insert(0, submission_dir)
    from model import Model

    train = np.loadtxt(os.path.join(input_dir, "train.csv"), delimiter=",", ndmin=2)
    test = np.loadtxt(os.path.join(input_dir, "test.csv"), delimiter=",", ndmin=2)
    model = Model()
    model.fit(train[:, :-1], train[:, -1].astype(int))
    np.savetxt(os.path.join(output_dir, name + ".predict"), model.predict(test), fmt="%d")


main(sys.argv[1], sys.argv[2], sys.argv[3])
"""

SKLEARN_SCORE_PY = """\
import json
import os
import sys

import numpy as np
from sklearn.metrics import accuracy_score, balanced_accuracy_score

input_dir, output_dir = sys.argv[1], sys.argv[2]
with open(os.path.join(input_dir, "ref", "task.txt"), encoding="utf-8") as handle:
    name = handle.read().strip()
truth = np.loadtxt(os.path.join(input_dir, "ref", name + ".solution"), dtype=int, ndmin=1)
guess = np.loadtxt(os.path.join(input_dir, "res", name + ".predict"), dtype=int, ndmin=1)
scores = {
    "accuracy": float(accuracy_score(truth, guess)),
    "balanced_accuracy": float(balanced_accuracy_score(truth, guess)),
}
with open(os.path.join(output_dir, "scores.json"), "w", encoding="utf-8") as handle:
    json.dump(scores, handle)
"""

SKLEARN_MODEL_PY = f'''"""A {NEIGHBOURS}-nearest-neighbours classifier."""

from sklearn.neighbors import KNeighborsClassifier


class Model:
    def __init__(self):
        self.classifier = KNeighborsClassifier(n_neighbors={NEIGHBOURS})

    def fit(self, features, labels):
        self.classifier.fit(features, labels)

    def predict(self, features):
        return self.classifier.predict(features)
'''

PLOT_SCORE_PY = """\
import base64
import io
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

input_dir, output_dir = sys.argv[1], sys.argv[2]
truth = pd.read_csv(os.path.join(input_dir, "ref", "solution.csv"))
guess = pd.read_csv(os.path.join(input_dir, "res", "predictions.csv"))
joined = truth.merge(guess, on="id", how="left", suffixes=("", "_predicted"))
joined["right"] = joined["label"] == joined["label_predicted"]
by_category = joined.groupby("category")["right"].mean().sort_index()
figure, axes = plt.subplots(figsize=(5, 3))
axes.bar(by_category.index, by_category.values)
axes.set_ylim(0, 1)
axes.set_ylabel("accuracy")
figure.tight_layout()
picture = io.BytesIO()
figure.savefig(picture, format="png")
figure.savefig(os.path.join(output_dir, "accuracy_by_category.png"))
encoded = base64.b64encode(picture.getvalue()).decode("ascii")
rows = "".join(f"<tr><td>{name}</td><td>{value:.3f}</td></tr>" for name, value in by_category.items())
with open(os.path.join(output_dir, "detailed_results.html"), "w", encoding="utf-8") as handle:
    handle.write(
        "<html><body><h1>Accuracy by category</h1>"
        f'<img alt="accuracy by category" src="data:image/png;base64,{encoded}">'
        f"<table>{rows}</table></body></html>"
    )
scores = {"accuracy": float(joined["right"].mean()), "worst_category": float(by_category.min())}
with open(os.path.join(output_dir, "scores.json"), "w", encoding="utf-8") as handle:
    json.dump(scores, handle)
"""


def _row(rng: random.Random, label: int) -> list[float]:
    return [round(rng.gauss(centre, SPREAD), 3) for centre in CLASS_CENTRES[label]]


def _table(rows: list[list[float]], labels: list[int] | None = None) -> str:
    lines = [",".join(f"{value:.3f}" for value in row) for row in rows]
    if labels is not None:
        lines = [f"{line},{label}" for line, label in zip(lines, labels, strict=True)]
    return "".join(line + "\n" for line in lines)


def _task(index: int, name: str) -> dict[str, object]:
    return {
        "index": index,
        "name": name.capitalize(),
        "description": None,
        "input_data": f"input_{name}",
        "reference_data": f"reference_{name}",
        "scoring_program": "scoring_program",
        "ingestion_program": "ingestion_program",
    }


def write_sklearn(out: Path, rng: random.Random) -> None:
    bundle = out / "bundle"
    names = ["dev", "final"]
    for name in names:
        train_labels = [number % 2 for number in range(TRAIN_ROWS)]
        test_labels = [rng.randrange(2) for _ in range(TEST_ROWS)]
        train = [_row(rng, label) for label in train_labels]
        test = [_row(rng, label) for label in test_labels]
        write_text(bundle / f"input_{name}" / "task.txt", f"{name}\n")
        write_text(bundle / f"input_{name}" / "train.csv", _table(train, train_labels))
        write_text(bundle / f"input_{name}" / "test.csv", _table(test))
        write_text(bundle / f"reference_{name}" / "task.txt", f"{name}\n")
        write_text(bundle / f"reference_{name}" / f"{name}.solution", "".join(f"{v}\n" for v in test_labels))
        # A results submission: the right labels with about a fifth flipped.
        guessed = [1 - label if rng.random() < 0.2 else label for label in test_labels]
        write_text(out / "submission" / "results" / f"{name}.predict", "".join(f"{v}\n" for v in guessed))
    columns = [
        column("Accuracy", "accuracy", 0, precision=3),
        column("Balanced accuracy", "balanced_accuracy", 1, precision=3),
    ]
    phases = [phase(0, "Development", [0]), phase(1, "Final", [1])]
    write_yaml(
        bundle / "competition.yaml",
        competition(
            "Points (scikit-learn)",
            [_task(0, "dev"), _task(1, "final")],
            phases,
            columns,
            docker_image=SCIENTIFIC_IMAGE,
        ),
    )
    write_text(
        bundle / "ingestion_program" / "metadata.yaml",
        "command: python3 $ingestion_program/ingestion.py $input $output $submission_program\n",
    )
    write_text(bundle / "ingestion_program" / "ingestion.py", SKLEARN_INGESTION_PY)
    write_text(
        bundle / "scoring_program" / "metadata.yaml", "command: python3 $program/score.py $input $output\n"
    )
    write_text(bundle / "scoring_program" / "score.py", SKLEARN_SCORE_PY)
    write_text(out / "submission" / "code" / "metadata", "description: 3 nearest neighbours\n")
    write_text(out / "submission" / "code" / "model.py", SKLEARN_MODEL_PY)


def write_plot(out: Path, rng: random.Random) -> None:
    bundle = out / "bundle"
    truth = [
        (f"r{number:02d}", CATEGORIES[number % len(CATEGORIES)], rng.choice("xyz"))
        for number in range(PLOT_ROWS)
    ]
    # Each category is guessed right a little less often than the one before it.
    guessed = [
        (row_id, label if rng.random() < 0.9 - 0.15 * CATEGORIES.index(category) else "wrong")
        for row_id, category, label in truth
    ]
    write_text(
        bundle / "reference_data" / "solution.csv",
        "id,category,label\n"
        + "".join(f"{row_id},{category},{label}\n" for row_id, category, label in truth),
    )
    write_text(
        out / "submission" / "predictions.csv",
        "id,label\n" + "".join(f"{row_id},{label}\n" for row_id, label in guessed),
    )
    task = {
        "index": 0,
        "name": "Labels",
        "description": None,
        "reference_data": "reference_data",
        "scoring_program": "scoring_program",
        "ingestion_program": None,
    }
    columns = [
        column("Accuracy", "accuracy", 0, precision=3),
        column("Worst category", "worst_category", 1, precision=3),
    ]
    write_yaml(
        bundle / "competition.yaml",
        competition(
            "Labels (pandas and matplotlib)",
            [task],
            [phase(0, "Development", [0])],
            columns,
            docker_image=SCIENTIFIC_IMAGE,
        ),
    )
    write_text(
        bundle / "scoring_program" / "metadata.yaml", "command: python3 $program/score.py $input $output\n"
    )
    write_text(bundle / "scoring_program" / "score.py", PLOT_SCORE_PY)
