"""Small bundles written the way published Codabench bundles are, each with the submissions they take.

They use what those bundles use and BenchGen's own environments do not: programs that only know the fixed
``/app`` folders, an ingestion program that imports a code submission, a results submission of plain
files, a phase of two tasks with a computed column, an ingestion program that runs during scoring and
talks to the scoring program through ``shared/``, and scores files with keys that are no column (text, a
mapping) beside a boolean column. No ``cases.jsonl``: each program reads its own formats.

- ``codabench-app``: review sentiment; both programs name only ``/app`` paths. ``submission/code`` is a
  model the ingestion program imports, ``submission/results`` the labels themselves.
- ``codabench-multitask``: the same scoring program on two tasks (book and film reviews); the phase
  ``Development`` runs both, ``Final`` only the films.
- ``codabench-interactive``: ``ingestion_only_during_scoring``: the scoring program hands each review
  over ``shared/`` and waits for the ingested model's answer.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from examplegen.codabench_legacy import write_gpu, write_py37
from examplegen.codabench_scientific import write_plot, write_sklearn
from examplegen.codabench_worker import write_handshake, write_lock
from examplegen.codabench_yaml import column, competition, phase
from examplegen.codalab_v15 import write_v15
from examplegen.writing import write_text, write_yaml

REVIEWS = 12
POSITIVE = ["great", "lovely", "moving", "sharp", "delightful"]
NEGATIVE = ["dull", "clumsy", "tedious", "flat", "messy"]
SUBJECTS = {
    "books": ["plot", "prose", "ending", "dialogue"],
    "films": ["acting", "score", "pacing", "camera work"],
}


@dataclass(frozen=True)
class Review:
    text: str
    label: str  # "pos" or "neg"


def reviews_about(rng: random.Random, subjects: list[str]) -> list[Review]:
    """Reviews a keyword model reads right, except the negated ones ("not great" is negative)."""
    made = []
    for _ in range(REVIEWS):
        subject = rng.choice(subjects)
        positive = rng.random() < 0.5
        word = rng.choice(POSITIVE if positive else NEGATIVE)
        if rng.random() < 0.25:
            made.append(Review(f"The {subject} is not {word}.", "neg" if positive else "pos"))
        else:
            made.append(Review(f"The {subject} is {word}.", "pos" if positive else "neg"))
    return made


def as_lines(values: list[str]) -> str:
    return "\n".join(values) + "\n"


# A participant's model as code competitions take them: a module the ingestion program imports.
MODEL_PY = f'''"""A keyword model: positive when the review names a positive word. It misses negations."""

POSITIVE = {json.dumps(POSITIVE)}


def predict(text):
    return "pos" if any(word in text for word in POSITIVE) else "neg"
'''

SUBMISSION_METADATA = "description: keyword model\n"

APP_INGESTION_PY = """\
import sys

sys.path.insert(0, "/app/ingested_program")
import model

with open("/app/input_data/reviews.txt", encoding="utf-8") as handle:
    reviews = [line.rstrip("\\n") for line in handle if line.strip()]
with open("/app/output/reviews.predict", "w", encoding="utf-8") as handle:
    handle.write("".join(model.predict(review) + "\\n" for review in reviews))
"""

APP_SCORE_PY = """\
import json

with open("/app/input/ref/reviews.solution", encoding="utf-8") as handle:
    truth = handle.read().split()
with open("/app/input/res/reviews.predict", encoding="utf-8") as handle:
    guess = handle.read().split()
wrong = sum(t != g for t, g in zip(truth, guess, strict=False)) + abs(len(truth) - len(guess))
scores = {
    "accuracy": (len(truth) - wrong) / len(truth),
    "errors": wrong,
    "perfect": wrong == 0,
    "notes": "scored from /app/input",
    "per_label": {label: truth.count(label) for label in sorted(set(truth))},
}
with open("/app/output/scores.json", "w", encoding="utf-8") as handle:
    json.dump(scores, handle)
"""

TASK_SCORE_PY = """\
import os
import sys

input_dir, output_dir = sys.argv[1], sys.argv[2]
with open(os.path.join(input_dir, "ref", "task.txt"), encoding="utf-8") as handle:
    name = handle.read().strip()
with open(os.path.join(input_dir, "ref", name + ".solution"), encoding="utf-8") as handle:
    truth = handle.read().split()
with open(os.path.join(input_dir, "res", name + ".predict"), encoding="utf-8") as handle:
    guess = handle.read().split()
correct = sum(t == g for t, g in zip(truth, guess, strict=False))
with open(os.path.join(output_dir, "scores.txt"), "w", encoding="utf-8") as handle:
    handle.write(f"accuracy: {correct / len(truth)}\\n")
    handle.write(f"task: {name}\\n")
"""

INTERACTIVE_SCORE_PY = """\
import json
import os
import sys
import time

input_dir, output_dir, shared = sys.argv[1], sys.argv[2], sys.argv[3]


def wait_for(name):
    path = os.path.join(shared, name)
    while not os.path.exists(path):
        time.sleep(0.02)
    with open(path, encoding="utf-8") as handle:
        return handle.read().strip()


with open(os.path.join(input_dir, "ref", "reviews.tsv"), encoding="utf-8") as handle:
    rows = [line.rstrip("\\n").split("\\t") for line in handle if line.strip()]
correct = 0
for number, (text, label) in enumerate(rows):
    with open(os.path.join(shared, f"ask-{number}.tmp"), "w", encoding="utf-8") as handle:
        handle.write(text)
    os.rename(os.path.join(shared, f"ask-{number}.tmp"), os.path.join(shared, f"ask-{number}"))
    correct += wait_for(f"answer-{number}") == label
with open(os.path.join(shared, "done"), "w", encoding="utf-8") as handle:
    handle.write("done")
with open(os.path.join(output_dir, "scores.json"), "w", encoding="utf-8") as handle:
    json.dump({"accuracy": correct / len(rows), "asked": len(rows), "protocol": "shared/ask-N"}, handle)
"""

INTERACTIVE_INGESTION_PY = """\
import os
import sys
import time

sys.path.insert(0, sys.argv[1])
import model

shared = sys.argv[2]

number = 0
while not os.path.exists(os.path.join(shared, "done")):
    question = os.path.join(shared, f"ask-{number}")
    if not os.path.exists(question):
        time.sleep(0.02)
        continue
    with open(question, encoding="utf-8") as handle:
        answer = model.predict(handle.read())
    with open(os.path.join(shared, f"answer-{number}.tmp"), "w", encoding="utf-8") as handle:
        handle.write(answer)
    os.rename(os.path.join(shared, f"answer-{number}.tmp"), os.path.join(shared, f"answer-{number}"))
    number += 1
"""


def _code_submission(folder: Path) -> None:
    write_text(folder / "metadata", SUBMISSION_METADATA)
    write_text(folder / "model.py", MODEL_PY)


def _wrong_here_and_there(rng: random.Random, reviews: list[Review]) -> list[str]:
    """A results submission: the right labels with about a quarter flipped."""
    flip = {"pos": "neg", "neg": "pos"}
    return [flip[r.label] if rng.random() < 0.25 else r.label for r in reviews]


def write_app(out: Path, rng: random.Random) -> None:
    reviews = reviews_about(rng, SUBJECTS["films"])
    bundle = out / "bundle"
    task = {
        "index": 0,
        "name": "Film reviews",
        "description": None,
        "input_data": "input_data",
        "reference_data": "reference_data",
        "scoring_program": "scoring_program",
        "ingestion_program": "ingestion_program",
    }
    columns = [
        column("Accuracy", "accuracy", 0, precision=3),
        column("Errors", "errors", 1, sorting="asc"),
        column("Perfect", "perfect", 2),
    ]
    write_yaml(
        bundle / "competition.yaml",
        competition("Review Sentiment (/app layout)", [task], [phase(0, "Development", [0])], columns),
    )
    write_text(bundle / "input_data" / "reviews.txt", as_lines([r.text for r in reviews]))
    write_text(bundle / "reference_data" / "reviews.solution", as_lines([r.label for r in reviews]))
    write_text(bundle / "ingestion_program" / "metadata.yaml", "command: python3 /app/program/ingestion.py\n")
    write_text(bundle / "ingestion_program" / "ingestion.py", APP_INGESTION_PY)
    write_text(bundle / "scoring_program" / "metadata.yaml", "command: python3 /app/program/score.py\n")
    write_text(bundle / "scoring_program" / "score.py", APP_SCORE_PY)
    _code_submission(out / "submission" / "code")
    write_text(
        out / "submission" / "results" / "reviews.predict", as_lines(_wrong_here_and_there(rng, reviews))
    )


def write_multitask(out: Path, rng: random.Random) -> None:
    bundle = out / "bundle"
    tasks = []
    guesses = {}
    for index, name in enumerate(("books", "films")):
        reviews = reviews_about(rng, SUBJECTS[name])
        folder = f"reference_{name}"
        write_text(bundle / folder / "task.txt", f"{name}\n")
        write_text(bundle / folder / f"{name}.solution", as_lines([r.label for r in reviews]))
        guesses[name] = _wrong_here_and_there(rng, reviews)
        tasks.append(
            {
                "index": index,
                "name": name.capitalize(),
                "description": None,
                "reference_data": folder,
                "scoring_program": "scoring_program",
                "ingestion_program": None,
            }
        )
    columns = [
        column("Accuracy", "accuracy", 0, precision=3),
        column("Mean accuracy", "mean_accuracy", 1, computation="avg", computation_indexes=[0]),
    ]
    phases = [phase(0, "Development", [0, 1]), phase(1, "Final", [1])]
    write_yaml(
        bundle / "competition.yaml", competition("Review Sentiment (two tasks)", tasks, phases, columns)
    )
    write_text(
        bundle / "scoring_program" / "metadata.yaml", "command: python3 $program/score.py $input $output\n"
    )
    write_text(bundle / "scoring_program" / "score.py", TASK_SCORE_PY)
    for name, labels in guesses.items():
        write_text(out / "submission" / f"{name}.predict", as_lines(labels))


def write_interactive(out: Path, rng: random.Random) -> None:
    reviews = reviews_about(rng, SUBJECTS["books"])
    bundle = out / "bundle"
    task = {
        "index": 0,
        "name": "Book reviews",
        "description": None,
        "reference_data": "reference_data",
        "scoring_program": "scoring_program",
        "ingestion_program": "ingestion_program",
        "ingestion_only_during_scoring": True,
    }
    write_yaml(
        bundle / "competition.yaml",
        competition(
            "Review Sentiment (asked during scoring)",
            [task],
            [phase(0, "Development", [0])],
            [column("Accuracy", "accuracy", 0, precision=3)],
        ),
    )
    write_text(bundle / "reference_data" / "reviews.tsv", as_lines([f"{r.text}\t{r.label}" for r in reviews]))
    write_text(
        bundle / "scoring_program" / "metadata.yaml",
        "command: python3 $program/score.py $input $output $shared\n",
    )
    write_text(bundle / "scoring_program" / "score.py", INTERACTIVE_SCORE_PY)
    write_text(
        bundle / "ingestion_program" / "metadata.yaml",
        "command: python3 $ingestion_program/ingestion.py $submission_program $shared\n",
    )
    write_text(bundle / "ingestion_program" / "ingestion.py", INTERACTIVE_INGESTION_PY)
    _code_submission(out / "submission")


CODABENCH_STYLE = {
    "codabench-app": write_app,
    "codabench-multitask": write_multitask,
    "codabench-interactive": write_interactive,
    "codabench-handshake": write_handshake,
    "codabench-lock": write_lock,
    "codabench-sklearn": write_sklearn,
    "codabench-plot": write_plot,
    "codalab-v15": write_v15,
    "codabench-py37": write_py37,
    "codabench-gpu": write_gpu,
}


def generate_codabench_style(
    out: Path, *, seed: int, writers: Mapping[str, Callable[[Path, random.Random], None]] = CODABENCH_STYLE
) -> None:
    """Write each example of ``writers`` under ``out``; the same seed gives the same bytes."""
    for offset, (name, write) in enumerate(writers.items()):
        target = out / name
        if target.exists():
            shutil.rmtree(target)
        # Generated data only needs reproducibility, not unpredictability.
        write(target, random.Random(seed + offset))  # noqa: S311
