"""Bundles that rely on how Codabench's worker runs programs: as root in containers that share one
``/app/shared`` and mount ``/app/input`` read-write.

- ``codabench-handshake``: ``ingestion_only_during_scoring``, the scoring program hands each round's
  training data and test rows over ``shared/`` and the ingestion program, running the submitted model,
  deletes them and answers; the scoring program reads and deletes the answer. Each program deletes files
  the other made, as the official examples do.
- ``codabench-lock``: a scoring program that takes an ``fcntl`` lock on a file it creates in
  ``input/res`` before reading the predictions, as the official examples do; a results submission.
"""

from __future__ import annotations

import random
from pathlib import Path

from examplegen.codabench_yaml import column, competition, phase
from examplegen.writing import write_text, write_yaml

ROUNDS = 3
TRAIN_ROWS = 24
TEST_ROWS = 12
# Class centres far enough apart that a nearest-centre model is mostly right, close enough that it is not.
CENTRES = {"a": (0.0, 0.0), "b": (1.6, 1.0)}
SPREAD = 0.8
LOCK_VALUES = 15

HANDSHAKE_SCORE_PY = f"""\
import json
import os
import sys
import time

input_dir, output_dir, shared = sys.argv[1], sys.argv[2], sys.argv[3]
ROUNDS = {ROUNDS}
WAIT_S = 20


def rows(name):
    with open(os.path.join(input_dir, "ref", name), encoding="utf-8") as handle:
        return [line.strip().split(",") for line in handle if line.strip()]


def wait_for(name):
    path = os.path.join(shared, name)
    deadline = time.monotonic() + WAIT_S
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            return None
        time.sleep(0.02)
    return path


def write_scores(scores):
    with open(os.path.join(output_dir, "scores.json"), "w", encoding="utf-8") as handle:
        json.dump(scores, handle)


train, test = rows("train.csv"), rows("test.csv")
correct = 0
for round_number in range(ROUNDS):
    training = [row for number, row in enumerate(train) if number % ROUNDS != round_number]
    testing = test[round_number::ROUNDS]
    os.mkdir(os.path.join(shared, "test_data"))
    with open(os.path.join(shared, "test_data", "rows.csv"), "w", encoding="utf-8") as handle:
        handle.write("".join(f"{{x}},{{y}}\\n" for x, y, _ in testing))
    # The training data comes last, in one rename: its name says the round is ready.
    with open(os.path.join(shared, "training_data.tmp"), "w", encoding="utf-8") as handle:
        handle.write("".join(",".join(row) + "\\n" for row in training))
    os.rename(os.path.join(shared, "training_data.tmp"), os.path.join(shared, "training_data"))
    answer = wait_for("predictions")
    if answer is None:
        print(f"no predictions for round {{round_number}} after {{WAIT_S}} s", file=sys.stderr)
        write_scores({{"accuracy": -1, "rounds": round_number}})
        sys.exit(0)
    with open(answer, encoding="utf-8") as handle:
        guesses = handle.read().split()
    os.remove(answer)
    correct += sum(guess == row[2] for guess, row in zip(guesses, testing, strict=False))
with open(os.path.join(shared, "done"), "w", encoding="utf-8") as handle:
    handle.write("done")
write_scores({{"accuracy": correct / len(test), "rounds": ROUNDS}})
"""

HANDSHAKE_INGESTION_PY = """\
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, sys.argv[1])
from model import Model

shared = sys.argv[2]
while True:
    done = os.path.join(shared, "done")
    if os.path.exists(done):
        os.remove(done)
        break
    training = os.path.join(shared, "training_data")
    if not os.path.exists(training):
        time.sleep(0.02)
        continue
    with open(training, encoding="utf-8") as handle:
        rows = [line.strip().split(",") for line in handle if line.strip()]
    os.remove(training)
    folder = os.path.join(shared, "test_data")
    with open(os.path.join(folder, "rows.csv"), encoding="utf-8") as handle:
        points = [[float(value) for value in line.split(",")] for line in handle if line.strip()]
    shutil.rmtree(folder)
    model = Model()
    model.fit([[float(x), float(y)] for x, y, _ in rows], [label for _, _, label in rows])
    handle, temporary = tempfile.mkstemp(dir=shared)
    with os.fdopen(handle, "w", encoding="utf-8") as answer:
        answer.write("".join(label + "\\n" for label in model.predict(points)))
    os.replace(temporary, os.path.join(shared, "predictions"))
"""

CENTROID_MODEL_PY = '''"""Nearest centre: a point gets the label whose training points' mean is closest."""


class Model:
    def fit(self, points, labels):
        self.centres = {}
        for label in sorted(set(labels)):
            mine = [point for point, given in zip(points, labels, strict=False) if given == label]
            self.centres[label] = [sum(values) / len(mine) for values in zip(*mine, strict=True)]

    def _distance(self, point, label):
        return sum((a - b) ** 2 for a, b in zip(point, self.centres[label], strict=True))

    def predict(self, points):
        return [min(self.centres, key=lambda label: self._distance(point, label)) for point in points]
'''

LOCK_SCORE_PY = """\
import fcntl
import json
import os
import sys

input_dir, output_dir = sys.argv[1], sys.argv[2]
res = os.path.join(input_dir, "res")
# One scorer at a time on these predictions: a lock file beside them.
with open(os.path.join(res, "start.txt.lock"), "w", encoding="utf-8") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    with open(os.path.join(input_dir, "ref", "values.solution"), encoding="utf-8") as handle:
        truth = [float(value) for value in handle.read().split()]
    with open(os.path.join(res, "values.predict"), encoding="utf-8") as handle:
        guess = [float(value) for value in handle.read().split()]
    fcntl.flock(lock, fcntl.LOCK_UN)
errors = [abs(t - g) for t, g in zip(truth, guess, strict=False)]
scores = {"mae": sum(errors) / len(errors), "within_one": sum(error <= 1 for error in errors)}
with open(os.path.join(output_dir, "scores.json"), "w", encoding="utf-8") as handle:
    json.dump(scores, handle)
"""


def _point(rng: random.Random, label: str) -> str:
    x, y = CENTRES[label]
    return f"{rng.gauss(x, SPREAD):.2f},{rng.gauss(y, SPREAD):.2f},{label}"


def _points(rng: random.Random, count: int) -> str:
    return "".join(_point(rng, "a" if number % 2 == 0 else "b") + "\n" for number in range(count))


def write_handshake(out: Path, rng: random.Random) -> None:
    bundle = out / "bundle"
    task = {
        "index": 0,
        "name": "Points",
        "description": None,
        "reference_data": "reference_data",
        "scoring_program": "scoring_program",
        "ingestion_program": "ingestion_program",
        "ingestion_only_during_scoring": True,
    }
    columns = [column("Accuracy", "accuracy", 0, precision=3), column("Rounds", "rounds", 1)]
    write_yaml(
        bundle / "competition.yaml",
        competition("Points (handed over shared/)", [task], [phase(0, "Development", [0])], columns),
    )
    write_text(bundle / "reference_data" / "train.csv", _points(rng, TRAIN_ROWS))
    write_text(bundle / "reference_data" / "test.csv", _points(rng, TEST_ROWS))
    write_text(
        bundle / "scoring_program" / "metadata.yaml",
        "command: python3 $program/score.py $input $output $shared\n",
    )
    write_text(bundle / "scoring_program" / "score.py", HANDSHAKE_SCORE_PY)
    write_text(
        bundle / "ingestion_program" / "metadata.yaml",
        "command: python3 $ingestion_program/ingestion.py $submission_program $shared\n",
    )
    write_text(bundle / "ingestion_program" / "ingestion.py", HANDSHAKE_INGESTION_PY)
    write_text(out / "submission" / "metadata", "description: nearest-centre model\n")
    write_text(out / "submission" / "model.py", CENTROID_MODEL_PY)


def write_lock(out: Path, rng: random.Random) -> None:
    bundle = out / "bundle"
    task = {
        "index": 0,
        "name": "Values",
        "description": None,
        "reference_data": "reference_data",
        "scoring_program": "scoring_program",
        "ingestion_program": None,
    }
    columns = [
        column("Mean absolute error", "mae", 0, sorting="asc", precision=3),
        column("Within one", "within_one", 1),
    ]
    write_yaml(
        bundle / "competition.yaml",
        competition("Values (a lock in input/res)", [task], [phase(0, "Development", [0])], columns),
    )
    truth = [round(rng.uniform(0, 20), 1) for _ in range(LOCK_VALUES)]
    guess = [round(value + rng.gauss(0, 1.2), 1) for value in truth]
    write_text(bundle / "reference_data" / "values.solution", "".join(f"{value}\n" for value in truth))
    write_text(
        bundle / "scoring_program" / "metadata.yaml", "command: python3 $program/score.py $input $output\n"
    )
    write_text(bundle / "scoring_program" / "score.py", LOCK_SCORE_PY)
    write_text(out / "submission" / "values.predict", "".join(f"{value}\n" for value in guess))
