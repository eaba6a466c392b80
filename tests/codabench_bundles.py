"""A bundle shaped like the ones published for Codabench, written into a test's tmp_path.

It is what a Codabench author uploads, untouched: ``competition.yaml`` version 2 with ``null`` for the
optional fields, a ``docker_image``, platform keys BenchGen ignores, reference data with a ``.solution``
file (no ``cases.jsonl``), and a scoring program that reads ``input/res/*.predict`` and
``input/res/metadata`` and writes ``scores.txt``. With ``ingestion=True`` the task also has input data and
an ingestion program that imports the submitted ``model.py``, as code-submission competitions do.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import yaml

DOCKER_IMAGE = "codalab/codalab-legacy:py39"
LABELS = ["setosa", "versicolor", "virginica", "setosa", "virginica"]
MEASUREMENTS = ["5.1 3.5", "6.4 3.2", "6.3 3.3", "4.9 3.0", "7.1 3.0"]

COMPETITION_YAML = f"""\
version: 2
title: Iris (Codabench layout)
description: Predict the species of each flower.
image: logo.png
registration_auto_approve: true
docker_image: {DOCKER_IMAGE}
enable_detailed_results: null
terms: terms.md
pages:
  - title: Overview
    file: overview.md
tasks:
  - index: 0
    name: Iris
    description: null
    input_data: {{input_data}}
    reference_data: reference_data
    scoring_program: scoring_program
    ingestion_program: {{ingestion_program}}
phases:
  - index: 0
    name: Development
    description: null
    start: 2024-01-01
    end: null
    max_submissions_per_day: null
    max_submissions: null
    execution_time_limit: 60
    tasks: [0]
leaderboards:
  - index: 0
    title: Results
    key: main
    submission_rule: Add_And_Delete
    columns:
      - title: Accuracy
        key: accuracy
        index: 0
        sorting: desc
        computation: null
        computation_indexes: null
        precision: 4
      - title: Duration
        key: duration
        index: 1
        sorting: asc
        computation: null
        computation_indexes: null
        hidden: null
"""

SCORE_PY = """\
import os, sys
import yaml

input_dir, output_dir = sys.argv[1], sys.argv[2]
with open(os.path.join(input_dir, "ref", "iris.solution")) as handle:
    truth = handle.read().split()
with open(os.path.join(input_dir, "res", "iris.predict")) as handle:
    guess = handle.read().split()
with open(os.path.join(input_dir, "res", "metadata")) as handle:
    metadata = yaml.safe_load(handle)
correct = sum(t == g for t, g in zip(truth, guess))
duration = metadata.get("elapsedTime") or 0
with open(os.path.join(output_dir, "scores.txt"), "w") as handle:
    handle.write(f"accuracy: {correct / len(truth)}\\nduration: {duration}\\n")
"""

INGESTION_PY = """\
import os, sys

input_dir, output_dir, submission_dir = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, submission_dir)
import model

with open(os.path.join(input_dir, "iris_test.data")) as handle:
    rows = [line for line in handle.read().splitlines() if line]
with open(os.path.join(output_dir, "iris.predict"), "w") as handle:
    handle.write("\\n".join(model.predict(row) for row in rows) + "\\n")
"""


def write_bundle(
    root: Path,
    *,
    ingestion: bool = False,
    ingestion_py: str = INGESTION_PY,
    score_py: str = SCORE_PY,
    runtime: str | None = None,
) -> Path:
    """The bundle folder ``root``; with ``ingestion``, input data and an ingestion program as well; with
    ``runtime``, the runtime it names rather than the one its docker_image maps to."""
    yaml_text = COMPETITION_YAML.format(
        input_data="input_data" if ingestion else "null",
        ingestion_program="ingestion_program" if ingestion else "null",
    ) + ("" if runtime is None else f"runtime: {runtime}\n")
    files = {
        "competition.yaml": yaml_text,
        "terms.md": "Evaluation only.\n",
        "overview.md": "Iris.\n",
        "reference_data/iris.solution": "\n".join(LABELS) + "\n",
        "scoring_program/metadata.yaml": "command: python3 $program/score.py $input $output\n",
        "scoring_program/score.py": score_py,
    }
    if ingestion:
        files |= {
            "input_data/iris_test.data": "\n".join(MEASUREMENTS) + "\n",
            "ingestion_program/metadata.yaml": (
                "command: python $ingestion_program/ingestion.py $input $output $submission_program\n"
            ),
            "ingestion_program/ingestion.py": ingestion_py,
        }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def results_submission(path: Path, labels: list[str]) -> Path:
    """A results submission as Codabench's upload page takes it: a zip of ``iris.predict``, no metadata."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("iris.predict", "\n".join(labels) + "\n")
    return path


def results_folder(path: Path, labels: list[str]) -> Path:
    """The same results submission as a folder, as `benchgen score --submission DIR` takes it."""
    path.mkdir(parents=True)
    (path / "iris.predict").write_text("\n".join(labels) + "\n", encoding="utf-8")
    return path


def code_submission(path: Path, answer: str) -> Path:
    """A code submission: ``model.py`` and a ``metadata`` file (without a command, as ingestion runs it)."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("metadata", "description: constant model\n")
        archive.writestr("model.py", f"def predict(row):\n    return {answer!r}\n")
    return path


# Task 1's answers: the submission (LABELS) gets positions 0 and 3 right, so 2 of 5.
OTHER_LABELS = ["setosa"] * 5


def write_two_task_bundle(root: Path) -> Path:
    """The Codabench iris bundle with a second task on other reference data, a computed column, and two
    phases: Development runs both tasks, Final only the second."""
    write_bundle(root)
    (root / "reference_data_b").mkdir()
    (root / "reference_data_b" / "iris.solution").write_text("\n".join(OTHER_LABELS) + "\n")
    spec = yaml.safe_load((root / "competition.yaml").read_text())
    spec["tasks"].append(
        {**spec["tasks"][0], "index": 1, "name": "Iris B", "reference_data": "reference_data_b"}
    )
    spec["phases"] = [
        {**spec["phases"][0], "index": 0, "name": "Development", "tasks": [0, 1]},
        {**spec["phases"][0], "index": 1, "name": "Final", "tasks": [1]},
    ]
    spec["leaderboards"][0]["columns"].append(
        {
            "title": "Mean accuracy",
            "key": "mean",
            "index": 2,
            "computation": "avg",
            "computation_indexes": [0],
        }
    )
    (root / "competition.yaml").write_text(yaml.safe_dump(spec))
    return root


INTERACTIVE_YAML = """\
version: 2
title: Iris (ingestion during scoring)
tasks:
  - index: 0
    name: Iris
    input_data: input_data
    reference_data: reference_data
    scoring_program: scoring_program
    ingestion_program: ingestion_program
    ingestion_only_during_scoring: true
phases:
  - index: 0
    name: Development
    execution_time_limit: 60
    tasks: [0]
leaderboards:
  - title: Results
    key: main
    columns:
      - title: Accuracy
        key: accuracy
        index: 0
"""

# The scoring program asks, then waits for the answer: it only completes while the ingestion program runs
# beside it, reaching the same shared folder.
INTERACTIVE_SCORE_PY = """\
import json, os, sys, time

input_dir, output_dir, shared = sys.argv[1], sys.argv[2], sys.argv[3]
open(os.path.join(shared, "go"), "w").close()
deadline = time.time() + 30
while not os.path.exists(os.path.join(shared, "done")) and time.time() < deadline:
    time.sleep(0.05)
with open(os.path.join(input_dir, "ref", "iris.solution")) as handle:
    truth = handle.read().split()
with open(os.path.join(shared, "iris.predict")) as handle:
    guess = handle.read().split()
correct = sum(t == g for t, g in zip(truth, guess))
scores = {"accuracy": correct / len(truth), "note": "asked and answered through shared/"}
with open(os.path.join(output_dir, "scores.json"), "w") as handle:
    json.dump(scores, handle)
"""

INTERACTIVE_INGESTION_PY = """\
import os, sys, time

input_dir, output_dir, submission_dir, shared = sys.argv[1:5]
deadline = time.time() + 30
while not os.path.exists(os.path.join(shared, "go")) and time.time() < deadline:
    time.sleep(0.05)
sys.path.insert(0, submission_dir)
import model

with open(os.path.join(input_dir, "iris_test.data")) as handle:
    rows = [line for line in handle.read().splitlines() if line]
with open(os.path.join(shared, "iris.predict"), "w") as handle:
    handle.write("\\n".join(model.predict(row) for row in rows) + "\\n")
open(os.path.join(shared, "done"), "w").close()
"""


def write_interactive_bundle(root: Path) -> Path:
    """A task with ``ingestion_only_during_scoring``: the scoring program and the ingestion program talk
    through ``$shared`` while both run."""
    files = {
        "competition.yaml": INTERACTIVE_YAML,
        "reference_data/iris.solution": "\n".join(LABELS) + "\n",
        "input_data/iris_test.data": "\n".join(MEASUREMENTS) + "\n",
        "scoring_program/metadata.yaml": "command: python3 $program/score.py $input $output $shared\n",
        "scoring_program/score.py": INTERACTIVE_SCORE_PY,
        "ingestion_program/metadata.yaml": (
            "command: python $ingestion_program/ingestion.py $input $output $submission_program $shared\n"
        ),
        "ingestion_program/ingestion.py": INTERACTIVE_INGESTION_PY,
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


# Participant code that looks for the answers wherever a program might find them, and answers with them
# when it does; without them it answers "setosa" to every flower.
CHEATING_MODEL_PY = """\
import os

PLACES = ["/app/input/ref", "/app", "/tmp/sandbox", "/tmp", os.getcwd(), os.path.dirname(os.getcwd())]
found = []
for place in PLACES:
    for folder, _, files in os.walk(place):
        if "iris.solution" in files:
            try:
                with open(os.path.join(folder, "iris.solution")) as handle:
                    found = handle.read().split()
            except OSError:
                continue
            break
    if found:
        break
asked = []


def predict(row):
    asked.append(row)
    return found[len(asked) - 1] if found else "setosa"
"""


def cheating_submission(path: Path) -> Path:
    """A code submission whose model reads the reference answers if it can reach them."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("metadata", "description: reads the answers if it can\n")
        archive.writestr("model.py", CHEATING_MODEL_PY)
    return path
