"""A Codabench-style environment with its own scoring program (``custom-program``).

There is no built-in template: ``scoring_program/metadata.yaml`` runs ``score.py``, which reads the reference
from ``input/ref`` and the prediction output from ``input/res`` and writes ``scores.txt`` as YAML, the way
many real Codabench programs do. The bundle has no ``finetune:`` key, so it emits no finetune artifact.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from examplegen.base import EnvironmentGenerator, Record, leaderboard, phase, task
from examplegen.writing import write_text

PROGRAM_DIR = "scoring_program"
LABELS = ["billing", "shipping", "returns", "account", "technical"]

_UTTERANCES = {
    "billing": [
        "I was charged twice for order {n}.",
        "Why is there a fee of {n} lira on my invoice?",
        "Can I get a receipt for my payment of {n} dollars?",
    ],
    "shipping": [
        "My parcel {n} has not arrived yet.",
        "How long does delivery to postcode {n} take?",
        "The tracking page for shipment {n} has not moved in days.",
    ],
    "returns": [
        "I want to send back item {n}, it does not fit.",
        "How do I return the {n} euro blender I bought?",
        "The refund for return {n} is still missing.",
    ],
    "account": [
        "I cannot log in since I changed my e-mail on day {n}.",
        "Please delete my account, customer number {n}.",
        "How do I change the password of account {n}?",
    ],
    "technical": [
        "The app crashes when I open page {n}.",
        "Error code {n} appears when I try to pay.",
        "The website shows a blank screen after step {n}.",
    ],
}
# Confusions a real intent classifier makes: neighbouring intents, not random ones.
_CONFUSED_WITH = {
    "billing": ["returns", "account"],
    "shipping": ["returns", "technical"],
    "returns": ["billing", "shipping"],
    "account": ["technical", "billing"],
    "technical": ["account", "shipping"],
}

SCORE_PY = '''"""Scoring program for the intent classification benchmark.

Usage: python score.py INPUT_DIR OUTPUT_DIR
INPUT_DIR/ref/cases.jsonl holds the gold labels; INPUT_DIR/res/predictions.json (or .jsonl) the predictions.
Writes OUTPUT_DIR/scores.txt (accuracy, macro_f1, coverage) and OUTPUT_DIR/detailed_results.html.
"""

import html
import json
import os
import sys


def read_predictions(res_dir):
    path = os.path.join(res_dir, "predictions.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            records = json.load(handle)["predictions"]
    else:
        with open(os.path.join(res_dir, "predictions.jsonl"), encoding="utf-8") as handle:
            records = [json.loads(line) for line in handle if line.strip()]
    return {str(r["id"]): str(r.get("prediction_text", "")).strip().lower() for r in records}


def main(input_dir, output_dir):
    predicted = read_predictions(os.path.join(input_dir, "res"))
    counts = {}
    total = correct = covered = 0
    rows = []
    with open(os.path.join(input_dir, "ref", "cases.jsonl"), encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            case = json.loads(line)
            gold = case["answer"]
            guess = predicted.get(case["id"], "")
            total += 1
            covered += case["id"] in predicted
            correct += guess == gold
            for label in (gold, guess):
                counts.setdefault(label, [0, 0, 0])
            if guess == gold:
                counts[gold][0] += 1
            else:
                counts[guess][1] += 1
                counts[gold][2] += 1
            if len(rows) < 200:
                rows.append((case["id"], gold, guess))
    f1s = []
    for label, (tp, fp, fn) in counts.items():
        if label:
            f1s.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    scores = {
        "accuracy": correct / total if total else 0.0,
        "macro_f1": sum(f1s) / len(f1s) if f1s else 0.0,
        "coverage": covered / total if total else 0.0,
    }
    os.makedirs(output_dir, exist_ok=True)
    with open(os.path.join(output_dir, "scores.txt"), "w", encoding="utf-8") as handle:
        for key, value in scores.items():
            handle.write(f"{key}: {value:.6f}\\n")
    body = "".join(
        f"<tr><td>{html.escape(i)}</td><td>{html.escape(g)}</td><td>{html.escape(p)}</td></tr>"
        for i, g, p in rows
    )
    with open(os.path.join(output_dir, "detailed_results.html"), "w", encoding="utf-8") as handle:
        handle.write(
            "<!doctype html><meta charset=utf-8><title>Intent classification</title>"
            f"<p>accuracy {scores['accuracy']:.4f}</p>"
            f"<table><tr><th>id</th><th>gold</th><th>predicted</th></tr>{body}</table>"
        )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
'''

METADATA_YAML = "command: python $program/score.py $input $output\ndescription: Intent classifier scoring.\n"


class CustomProgramEnvironment(EnvironmentGenerator):
    name = "custom-program"
    title = "Support Intent Classification"
    size = 36
    seed_offset = 5
    submission_format = "json"

    def competition(self) -> dict[str, Any]:
        description = (
            "Classify customer support messages into one of: " + ", ".join(LABELS) + ". Scored by the "
            "benchmark's own program."
        )
        return {
            "version": 2,
            "title": self.title,
            "description": description,
            "image": "codalab/codalab-legacy:py39",
            "terms": "terms.md",
            "tasks": [task("Intent classification", description, scoring_program=PROGRAM_DIR)],
            "phases": [phase("Label every message.", time_limit=300)],
            "leaderboards": [
                leaderboard(
                    ("Accuracy", "accuracy", "desc"),
                    ("Macro F1", "macro_f1", "desc"),
                )
            ],
        }

    def make_case(self, rng: random.Random, index: int, fail: bool) -> tuple[Record, Record]:
        label = rng.choice(LABELS)
        text = rng.choice(_UTTERANCES[label]).format(n=rng.randint(100, 99_999))
        case_id = f"intent-{index:06d}"
        case = {
            "id": case_id,
            "question": text,
            "answer": label,
            "difficulty": "hard" if "?" not in text else "easy",
            "domain": "customer-support",
        }
        guess = rng.choice(_CONFUSED_WITH[label]) if fail else label
        return case, {"id": case_id, "prediction_text": guess}

    def write_extras(self, bundle_dir: Path, rng: random.Random, cases: int) -> None:
        write_text(bundle_dir / PROGRAM_DIR / "score.py", SCORE_PY)
        write_text(bundle_dir / PROGRAM_DIR / "metadata.yaml", METADATA_YAML)
        write_text(bundle_dir / "terms.md", "Use the data for evaluation only.\n")
